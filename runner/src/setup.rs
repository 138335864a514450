//! A profile's `[[setup]]` steps: what a deployment needs done after the gateway is ready and
//! before the first case (register the canary over a REST API, create a user, mint a token).
//! Their output sets variables (`{var:NAME}`) that headers and routes use.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::process::{GroupChild, Pipes};
use crate::profile::{SetupStep, Vars};

/// The most of a step's output kept: enough for any token or id, never a flood.
const MAX_OUTPUT_BYTES: u64 = 1024 * 1024;

/// Runs every step in order, each with the variables of the steps before it, and sets the
/// variables each step's `set` names (as `var:NAME` in `vars`). Secret ones are registered
/// for masking before anything can quote them. `Err` names the step and quotes its output.
pub async fn run(steps: &[SetupStep], vars: &mut Vars, workdir: &Path) -> Result<(), String> {
    for (index, step) in steps.iter().enumerate() {
        let label = match &step.name {
            Some(name) => format!("setup step {} (`{name}`)", index + 1),
            None => format!("setup step {}", index + 1),
        };
        let timeout = Duration::from_millis(step.timeout_ms);
        let output = match (&step.command, &step.http) {
            (Some(argv), _) => command(&vars.fill_argv(argv), workdir, timeout).await,
            (None, Some(http)) => request(http, vars, timeout).await,
            (None, None) => Err("neither a command nor an http request".to_string()),
        }
        .map_err(|err| format!("{label} failed: {err} (`setup[{index}]`)"))?;
        for (name, pointer) in &step.set {
            let value = pick(&output, pointer).ok_or_else(|| {
                format!(
                    "{label} printed no `{pointer}` for `{name}` (`setup[{index}].set.{name}`); it printed: {}",
                    crate::session::preview(output.as_bytes())
                )
            })?;
            if step.secret.contains(name) || crate::profile::looks_secret(name) {
                crate::profile::register_runtime_secret(&value);
            }
            vars.set(format!("var:{name}"), value);
        }
    }
    Ok(())
}

/// The value `pointer` names in a step's output: `""` the whole output trimmed, else a JSON
/// pointer into the output read as JSON (a string as it is, anything else as JSON text).
fn pick(output: &str, pointer: &str) -> Option<String> {
    if pointer.is_empty() {
        let trimmed = output.trim();
        return (!trimmed.is_empty()).then(|| trimmed.to_string());
    }
    let parsed: Value = serde_json::from_str(output.trim()).ok()?;
    match parsed.pointer(pointer)? {
        Value::String(text) => Some(text.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

async fn command(argv: &[String], workdir: &Path, timeout: Duration) -> Result<String, String> {
    let shown = argv.first().cloned().unwrap_or_default();
    let stderr_path = workdir.join("setup.stderr.log");
    let mut child = GroupChild::spawn(argv, &[], workdir, &stderr_path, Pipes::StdoutOnly)
        .map_err(|err| format!("cannot run `{shown}`: {err}"))?;
    let mut stdout = child.take_stdout();
    let collect = async {
        let mut out = Vec::new();
        if let Some(pipe) = stdout.as_mut() {
            let mut limited = tokio::io::AsyncReadExt::take(pipe, MAX_OUTPUT_BYTES);
            tokio::io::AsyncReadExt::read_to_end(&mut limited, &mut out)
                .await
                .map_err(|err| err.to_string())?;
        }
        let status = child.wait().await.map_err(|err| err.to_string())?;
        Ok::<_, String>((status, out))
    };
    let (status, out) = tokio::time::timeout(timeout, collect)
        .await
        .map_err(|_| format!("`{shown}` ran longer than {} ms", timeout.as_millis()))??;
    let text = String::from_utf8_lossy(&out).into_owned();
    if !status.success() {
        let stderr = std::fs::read(&stderr_path).unwrap_or_default();
        return Err(format!(
            "`{shown}` {status}; stdout: {}; stderr: {}",
            crate::session::preview(text.as_bytes()),
            crate::session::preview(&stderr)
        ));
    }
    Ok(text)
}

async fn request(
    http: &crate::profile::HttpStep,
    vars: &Vars,
    timeout: Duration,
) -> Result<String, String> {
    let client = crate::client::target_client()
        .timeout(timeout)
        .build()
        .map_err(|err| err.to_string())?;
    let url = vars.fill(&http.url);
    let method = reqwest::Method::from_bytes(http.method.as_bytes())
        .map_err(|_| format!("`{}` is not an HTTP method", http.method))?;
    let mut builder = client.request(method, &url);
    for (name, value) in &http.headers {
        builder = builder.header(name.as_str(), vars.fill(value));
    }
    if let Some(body) = &http.json {
        builder = builder
            .header("content-type", "application/json")
            .body(filled_json(body, vars).to_string());
    }
    if let Some(body) = &http.body {
        builder = builder.body(vars.fill(body));
    }
    let response = builder
        .send()
        .await
        .map_err(|err| format!("{} {url}: {err}", http.method))?;
    let status = response.status();
    let mut response = response;
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|err| format!("{} {url}: {err}", http.method))?
    {
        body.extend_from_slice(&chunk);
        if body.len() as u64 > MAX_OUTPUT_BYTES {
            body.truncate(MAX_OUTPUT_BYTES as usize);
            break;
        }
    }
    let text = String::from_utf8_lossy(&body).into_owned();
    if !status.is_success() {
        return Err(format!(
            "{} {url} answered {status}: {}",
            http.method,
            crate::session::preview(text.as_bytes())
        ));
    }
    Ok(text)
}

/// A JSON body template with placeholders filled in every string.
fn filled_json(value: &Value, vars: &Vars) -> Value {
    let mut body = value.clone();
    crate::profile::fill_strings(&mut body, &|text| vars.fill(text));
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_picked_whole_or_by_pointer() {
        assert_eq!(pick("  tok-1\n", ""), Some("tok-1".into()));
        assert_eq!(pick("\n", ""), None);
        let body = r#"{"id": "srv-1", "n": 3, "none": null}"#;
        assert_eq!(pick(body, "/id"), Some("srv-1".into()));
        assert_eq!(pick(body, "/n"), Some("3".into()));
        assert_eq!(pick(body, "/none"), None);
        assert_eq!(pick(body, "/missing"), None);
        assert_eq!(pick("not json", "/id"), None);
    }

    #[tokio::test]
    async fn a_command_step_sets_a_variable_and_a_failing_one_says_why() {
        let dir = std::env::temp_dir().join(format!("relaycheck-setup-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let step = |argv: &[&str], set: &[(&str, &str)]| SetupStep {
            name: Some("mint".into()),
            command: Some(argv.iter().map(|s| s.to_string()).collect()),
            http: None,
            set: set
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            secret: Vec::new(),
            timeout_ms: 5_000,
        };
        let mut vars = Vars::default();
        vars.set("workdir", dir.display().to_string());
        let steps = [
            step(&["sh", "-c", r#"echo '{"id": "u-7"}'"#], &[("user", "/id")]),
            step(&["sh", "-c", "echo token-for-{var:user}"], &[("token", "")]),
        ];
        run(&steps, &mut vars, &dir).await.unwrap();
        assert_eq!(vars.fill("{var:token}"), "token-for-u-7");
        assert!(
            crate::profile::runtime_secrets().contains(&"token-for-u-7".to_string()),
            "a variable named like a secret is masked"
        );
        assert!(!crate::profile::runtime_secrets().contains(&"u-7".to_string()));

        let failing = [step(&["sh", "-c", "echo nope; exit 3"], &[])];
        let err = run(&failing, &mut vars, &dir).await.unwrap_err();
        assert!(err.contains("setup step 1 (`mint`) failed"), "{err}");
        assert!(err.contains("nope") && err.contains("setup[0]"), "{err}");
        let missing = [step(&["echo", "{}"], &[("id", "/id")])];
        let err = run(&missing, &mut vars, &dir).await.unwrap_err();
        assert!(err.contains("printed no `/id` for `id`"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
