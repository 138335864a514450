//! Loading the case catalogue the runner wrote for this canary.

use std::path::Path;

use relaycheck_model::script::CanaryScript;

use crate::CanaryError;

/// Reads a [`CanaryScript`] from a JSON file, naming the file and serde's position on error
/// so that a broken catalogue is a harness error the author can fix, not a mystery.
pub fn load(path: &Path) -> Result<CanaryScript, CanaryError> {
    let text = std::fs::read_to_string(path).map_err(|source| CanaryError::ScriptRead {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text).map_err(|err| CanaryError::ScriptParse {
        path: path.to_path_buf(),
        line: err.line(),
        column: err.column(),
        message: err.to_string(),
    })
}

/// Parses script text; split from [`load`] so it can be tested without files.
pub fn parse(text: &str) -> Result<CanaryScript, serde_json::Error> {
    serde_json::from_str(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_script_names_file_and_position() {
        let dir = std::env::temp_dir().join(format!("canary-script-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.json");
        std::fs::write(&path, "{\"tools\": [\n  {\"name\": 3}\n]}").unwrap();
        let err = load(&path).unwrap_err().to_string();
        assert!(err.contains("bad.json"), "{err}");
        assert!(err.contains("line 2"), "{err}");
    }
}
