//! `relaycheck schema case-file|profile|results`: the JSON Schemas of case files, target
//! profiles and a line of results.jsonl, generated from the types themselves (their doc
//! comments are the descriptions), so the published schemas and what relaycheck reads and
//! writes cannot drift apart. The committed copies live at [`CASE_FILE_SCHEMA_PATH`],
//! [`PROFILE_SCHEMA_PATH`] and [`RESULTS_SCHEMA_PATH`]; a test fails when one is stale and
//! names the command that regenerates it.

use relaycheck_checks::{CHECKS, ParamKind};
use relaycheck_model::case::CaseFile;
use relaycheck_model::route::RouteName;
use relaycheck_model::script::NAMED_CANARIES;
use serde_json::{Map, Value, json};

use crate::profile::Profile;

/// Where the published schema of a case file lives.
pub const CASE_FILE_SCHEMA_PATH: &str = "specs/schema/case-file.schema.json";

/// The command that regenerates the committed case-file schema.
pub const REGENERATE_CASE_FILE: &str =
    "cargo run -q -p relaycheck -- schema case-file --out specs/schema/case-file.schema.json";

/// Where the published profile schema lives, relative to the repository root.
pub const PROFILE_SCHEMA_PATH: &str = "specs/schema/profile.schema.json";

/// The command that regenerates the committed schema from the repository root.
pub const REGENERATE: &str =
    "cargo run -q -p relaycheck -- schema profile --out specs/schema/profile.schema.json";

/// Where the published schema of a results.jsonl line lives.
pub const RESULTS_SCHEMA_PATH: &str = "specs/schema/results.schema.json";

/// The command that regenerates the committed results schema.
pub const REGENERATE_RESULTS: &str =
    "cargo run -q -p relaycheck -- schema results --out specs/schema/results.schema.json";

/// The schemas `relaycheck schema` can print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Which {
    /// Case files (`specs/cases/<surface>.yaml`), for an editor that checks them as they are
    /// written.
    CaseFile,
    /// Target profiles (`harness/targets/*.toml`).
    Profile,
    /// One line of a run's results.jsonl (a header, a case, a result or a footer event), for
    /// tools that read runs.
    Results,
}

/// The schema of one line of results.jsonl, as pretty JSON with a final newline.
pub fn results_schema() -> String {
    let mut schema = schemars::schema_for!(relaycheck_report::jsonl::Event);
    schema.insert(
        "title".into(),
        format!(
            "relaycheck results.jsonl event (one line; format {})",
            relaycheck_report::RESULTS_FORMAT
        )
        .into(),
    );
    let mut text = serde_json::to_string_pretty(&schema).expect("a schema is always JSON");
    text.push('\n');
    text
}

/// The case-file schema as pretty JSON with a final newline, exactly as committed. Beside what
/// the types say, it knows what lint knows without reading other files: the routes, the named
/// canaries, and each check with its parameters, so a case with an unknown check or a wrong
/// parameter is refused where it is written.
pub fn case_file_schema() -> String {
    let mut schema = schemars::schema_for!(CaseFile);
    schema.insert(
        "title".into(),
        "relaycheck case file (specs/cases/<surface>.yaml)".into(),
    );
    let mut value = schema.to_value();
    if let Some(defs) = value.get_mut("$defs").and_then(Value::as_object_mut) {
        if let Some(routes) = defs
            .get_mut("CaseSpec")
            .and_then(|c| c.pointer_mut("/properties/routes"))
        {
            routes["items"] = json!({"enum": RouteName::ALL.map(RouteName::name)});
        }
        if let Some(canary) = defs
            .get_mut("ToolRef")
            .and_then(|t| t.pointer_mut("/properties/canary"))
        {
            canary["enum"] = json!(NAMED_CANARIES);
        }
        if let Some(expectation) = defs.get_mut("Expectation") {
            expectation["oneOf"] = Value::Array(CHECKS.iter().map(check_schema).collect());
            if let Some(fields) = expectation.as_object_mut() {
                fields.remove("additionalProperties");
            }
        }
    }
    let mut text = serde_json::to_string_pretty(&value).expect("a schema is always JSON");
    text.push('\n');
    text
}

/// One check as a case writes it: its name and its parameters, the required ones required.
fn check_schema(def: &relaycheck_checks::CheckDef) -> Value {
    let mut properties = Map::new();
    properties.insert("check".into(), json!({"const": def.name}));
    let mut required = vec![json!("check")];
    for (name, kind, needed) in def.params {
        properties.insert(name.to_string(), param_schema(*kind));
        if *needed {
            required.push(json!(name));
        }
    }
    json!({
        "type": "object",
        "description": def.asserts,
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// What a parameter of `kind` accepts, as `ParamKind::accepts` reads it.
fn param_schema(kind: ParamKind) -> Value {
    let pointer = json!({"type": "string", "pattern": "^(/.*)?$"});
    match kind {
        ParamKind::Bool => json!({"type": "boolean"}),
        ParamKind::Integer => json!({"type": "integer"}),
        ParamKind::Pointer => pointer,
        ParamKind::Pointers => {
            json!({"type": "array", "items": {"type": "string", "pattern": "^/"}})
        }
        ParamKind::Strings => json!({"type": "array", "items": {"type": "string"}}),
        ParamKind::Text => json!({"type": "string"}),
        ParamKind::AnyJson => json!({}),
        ParamKind::Word(words) => json!({"enum": words}),
        ParamKind::Words(words) => json!({"anyOf": [
            {"enum": words},
            {"type": "array", "minItems": 1, "items": {"enum": words}},
        ]}),
    }
}

/// The profile schema as pretty JSON with a final newline, exactly as committed.
pub fn profile_schema() -> String {
    let mut schema = schemars::schema_for!(Profile);
    schema.insert(
        "title".into(),
        "relaycheck target profile (TOML, shown as JSON)".into(),
    );
    let mut text = serde_json::to_string_pretty(&schema).expect("a schema is always JSON");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn repo() -> &'static Path {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
    }

    #[test]
    fn the_committed_case_file_schema_is_current() {
        let path = repo().join(CASE_FILE_SCHEMA_PATH);
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == case_file_schema(),
            "{CASE_FILE_SCHEMA_PATH} is stale (or missing): the case types or the checks \
             changed. Regenerate it from the repository root with:\n    {REGENERATE_CASE_FILE}"
        );
    }

    /// A parameter schema accepts what lint accepts and refuses what it refuses.
    #[test]
    fn parameter_schemas_agree_with_lint() {
        let samples = [
            json!(true),
            json!(3),
            json!(""),
            json!("/a"),
            json!("a"),
            json!(["/a"]),
            json!(["a"]),
            json!({"x": 1}),
            json!("pass"),
            json!(["pass", "fail"]),
            json!([]),
        ];
        let kinds = [
            ParamKind::Bool,
            ParamKind::Integer,
            ParamKind::Pointer,
            ParamKind::Pointers,
            ParamKind::Strings,
            ParamKind::Text,
            ParamKind::AnyJson,
            ParamKind::Word(&["pass", "fail"]),
            ParamKind::Words(&["pass", "fail"]),
        ];
        for kind in kinds {
            let validator = jsonschema::validator_for(&param_schema(kind)).unwrap();
            for sample in &samples {
                assert_eq!(
                    validator.is_valid(sample),
                    kind.accepts(sample),
                    "{kind:?} on {sample}"
                );
            }
        }
    }

    #[test]
    fn the_committed_profile_schema_is_current() {
        let path = repo().join(PROFILE_SCHEMA_PATH);
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == profile_schema(),
            "{PROFILE_SCHEMA_PATH} is stale (or missing): the profile types changed. \
             Regenerate it from the repository root with:\n    {REGENERATE}"
        );
    }

    #[test]
    fn the_committed_results_schema_is_current() {
        let path = repo().join(RESULTS_SCHEMA_PATH);
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == results_schema(),
            "{RESULTS_SCHEMA_PATH} is stale (or missing): the report types changed. \
             Regenerate it from the repository root with:\n    {REGENERATE_RESULTS}"
        );
    }

    /// Every line of every published run, relaycheck's and the official suite's, is an
    /// instance of the schema: a tool written against it reads them all.
    #[test]
    fn every_line_of_every_published_run_fits_the_results_schema() {
        let schema: serde_json::Value = serde_json::from_str(&results_schema()).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let mut runs = Vec::new();
        for dir in ["reports", "reports/official"] {
            for entry in std::fs::read_dir(repo().join(dir)).unwrap() {
                let path = entry.unwrap().path().join("results.jsonl");
                if path.exists() {
                    runs.push(path);
                }
            }
        }
        assert!(runs.len() >= 8, "found only {} published runs", runs.len());
        for path in &runs {
            let text = std::fs::read_to_string(path).unwrap();
            for (index, line) in text.lines().enumerate() {
                let value: serde_json::Value = serde_json::from_str(line).unwrap();
                let errors: Vec<String> = validator
                    .iter_errors(&value)
                    .take(3)
                    .map(|e| format!("{e} at {}", e.instance_path()))
                    .collect();
                assert!(
                    errors.is_empty(),
                    "{}:{}: {errors:?}",
                    path.display(),
                    index + 1
                );
            }
        }
        // And it is no schema that takes anything: an event of no known kind is refused.
        assert!(!validator.is_valid(&serde_json::json!({"event": "verdict"})));
        assert!(!validator.is_valid(&serde_json::json!({"event": "result", "case": 3})));
    }

    /// The schema accepts every profile relaycheck accepts (all of harness/targets) and
    /// refuses the mistakes a vendor makes first.
    #[test]
    fn the_schema_accepts_every_shipped_profile_and_refuses_broken_ones() {
        let schema: serde_json::Value = serde_json::from_str(&profile_schema()).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let mut checked = 0;
        for entry in std::fs::read_dir(repo().join("harness/targets")).unwrap() {
            let path = entry.unwrap().path();
            let is_profile = path.extension().is_some_and(|e| e == "toml")
                && !path.to_string_lossy().ends_with(".config.toml");
            if !is_profile {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let value: serde_json::Value = toml::from_str(&text).unwrap();
            let errors: Vec<String> = validator
                .iter_errors(&value)
                .map(|e| format!("{e} at {}", e.instance_path()))
                .collect();
            assert!(errors.is_empty(), "{}: {errors:?}", path.display());
            checked += 1;
        }
        assert!(checked >= 4, "found only {checked} profiles");
        let base = serde_json::json!({
            "name": "x", "description": "d",
            "north": {"transport": "stdio"}, "canary": {"transport": "stdio"},
            "start": {"command": ["gw"], "ready": "first-response"},
            "routes": {"flat": {"tool": "{tool}"}},
        });
        assert!(validator.is_valid(&base), "the minimal profile must pass");
        let mut unknown = base.clone();
        unknown["start"]["colour"] = "red".into();
        assert!(!validator.is_valid(&unknown), "an unknown key must fail");
        let mut wrong_type = base.clone();
        wrong_type["start"]["timeout_ms"] = "soon".into();
        assert!(!validator.is_valid(&wrong_type), "a wrong type must fail");
        let mut missing = base.clone();
        missing.as_object_mut().unwrap().remove("north");
        assert!(!validator.is_valid(&missing), "a missing field must fail");
        let mut bad_shape = base;
        bad_shape["claims"] = serde_json::json!({"shapes": ["2024-01-01"]});
        assert!(
            !validator.is_valid(&bad_shape),
            "an unknown shape must fail"
        );
    }

    #[test]
    fn field_docs_become_descriptions() {
        let schema = profile_schema();
        assert!(schema.contains("How the runner knows the target is ready"));
        assert!(schema.contains("JSON pointer into the north result"));
    }
}
