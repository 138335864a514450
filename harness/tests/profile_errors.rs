//! A wrong profile is refused with the file, the field and, where TOML shows it, the line: the
//! errors a vendor writing their first profile meets, each pinned here.

use std::path::{Path, PathBuf};

use relaycheck::profile::Profile;

/// A minimal stdio profile that loads; each test breaks one thing in it.
const GOOD: &str = r#"name = "mine"
description = "a gateway"

[start]
command = ["my-gateway", "--upstream", "{canary_cmd}"]
ready = "first-response"

[north]
transport = "stdio"

[canary]
transport = "stdio"

[routes.flat]
tool = "{tool}"
"#;

/// The error message for `text` written to a file `vendor.toml` in a fresh directory (so
/// config templates are looked up beside it), with any extra files given.
fn error_of(text: &str, extra: &[(&str, &str)]) -> String {
    let dir = scratch();
    for (name, content) in extra {
        std::fs::write(dir.join(name), content).unwrap();
    }
    let path = dir.join("vendor.toml");
    std::fs::write(&path, text).unwrap();
    let result = Profile::load(path.to_str().unwrap());
    let _ = std::fs::remove_dir_all(&dir);
    match result {
        Ok(_) => panic!("the profile loaded:\n{text}"),
        Err(err) => {
            let message = err.to_string();
            assert!(message.contains("vendor.toml"), "no file named: {message}");
            message
        }
    }
}

fn scratch() -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "relaycheck-profile-errors-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn assert_has(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(
            message.contains(part),
            "missing {part:?} in the error:\n{message}"
        );
    }
}

#[test]
fn the_good_profile_loads() {
    let dir = scratch();
    let path = dir.join("vendor.toml");
    std::fs::write(&path, GOOD).unwrap();
    let profile = Profile::load(path.to_str().unwrap());
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(profile.unwrap().name, "mine");
}

#[test]
fn an_unknown_key_is_named_with_its_table_and_line() {
    let text = GOOD.replace(
        "ready = \"first-response\"",
        "ready = \"first-response\"\nreadiness_timeout = 5",
    );
    let message = error_of(&text, &[]);
    assert_has(
        &message,
        &[
            "vendor.toml:7:",
            "field `start.readiness_timeout`",
            "unknown field `readiness_timeout`",
            "expected one of `command`",
        ],
    );
}

#[test]
fn a_wrong_type_names_the_field_and_line() {
    let text = GOOD.replace(
        "ready = \"first-response\"",
        "ready = \"first-response\"\ntimeout_ms = \"soon\"",
    );
    let message = error_of(&text, &[]);
    assert_has(
        &message,
        &["vendor.toml:7:", "field `start.timeout_ms`", "invalid type"],
    );
}

#[test]
fn a_wrong_enum_value_names_the_choices() {
    let text = GOOD.replace("first-response", "when-ready");
    let message = error_of(&text, &[]);
    assert_has(
        &message,
        &[
            "vendor.toml:6:",
            "field `start.ready`",
            "first-response",
            "listening-line",
        ],
    );
}

#[test]
fn a_missing_field_is_named() {
    let text = GOOD.replace("[canary]\ntransport = \"stdio\"\n", "");
    let message = error_of(&text, &[]);
    assert_has(&message, &["missing field `canary`"]);
}

#[test]
fn a_syntax_error_gives_the_line() {
    let text = GOOD.replace("[north]", "[north");
    let message = error_of(&text, &[]);
    assert_has(&message, &["vendor.toml:8:", "not valid TOML"]);
}

#[test]
fn an_unknown_placeholder_is_named_with_the_known_ones() {
    let text = GOOD.replace("\"{canary_cmd}\"", "\"{canary_command}\"");
    let message = error_of(&text, &[]);
    assert_has(
        &message,
        &[
            "vendor.toml:5:",
            "field `start.command`",
            "unknown placeholder `{canary_command}`",
            "{canary_cmd}",
            "{workdir}",
        ],
    );
}

#[test]
fn a_placeholder_that_is_never_set_says_why() {
    let text = GOOD.replace("\"{canary_cmd}\"", "\"{canary_url}\"");
    let message = error_of(&text, &[]);
    assert_has(
        &message,
        &["field `start.command`", "canary.transport = \"http\""],
    );

    let http = r#"name = "mine"
description = "a gateway"

[start]
command = ["my-gateway", "--port", "{port}"]
ready = "first-response"

[north]
transport = "http"
url = "{url}/mcp"

[canary]
transport = "stdio"

[routes.flat]
tool = "{tool}"
"#;
    let message = error_of(http, &[]);
    assert_has(
        &message,
        &["vendor.toml:10:", "field `north.url`", "listening-line"],
    );
}

#[test]
fn a_route_placeholder_outside_a_route_is_refused() {
    let text = GOOD.replace(
        "tool = \"{tool}\"",
        "tool = \"{tool}\"\narguments = { x = \"{workdir}\" }",
    );
    let message = error_of(&text, &[]);
    assert_has(
        &message,
        &[
            "field `routes.flat.arguments`",
            "unknown placeholder `{workdir}`",
            "{arguments}",
        ],
    );
}

#[test]
fn a_config_template_that_is_not_there_is_named() {
    let text = GOOD.replace(
        "ready = \"first-response\"",
        "ready = \"first-response\"\nconfig_template = \"mine.yaml\"\nconfig_path = \"{workdir}/mine.yaml\"",
    );
    let message = error_of(&text, &[]);
    assert_has(
        &message,
        &[
            "vendor.toml:7:",
            "field `start.config_template`",
            "cannot read the config template",
            "mine.yaml",
        ],
    );
}

#[test]
fn a_bad_placeholder_in_the_config_template_names_its_line() {
    let text = GOOD.replace(
        "ready = \"first-response\"",
        "ready = \"first-response\"\nconfig_template = \"mine.yaml\"\nconfig_path = \"{workdir}/mine.yaml\"",
    );
    let template = "servers:\n  canary:\n    command: {canary_cmd}\n";
    let message = error_of(&text, &[("mine.yaml", template)]);
    assert_has(
        &message,
        &[
            "field `start.config_template`",
            "mine.yaml:3:",
            "{canary_cmd_json}",
        ],
    );
    // The same template with the JSON form loads.
    let dir = scratch();
    std::fs::write(
        dir.join("mine.yaml"),
        "servers:\n  canary:\n    command: {canary_cmd_json}\n",
    )
    .unwrap();
    std::fs::write(dir.join("vendor.toml"), &text).unwrap();
    let loaded = Profile::load(dir.join("vendor.toml").to_str().unwrap());
    let _ = std::fs::remove_dir_all(&dir);
    loaded.unwrap();
}

#[test]
fn a_profile_without_a_calling_route_is_refused() {
    let text = GOOD.replace("[routes.flat]\ntool = \"{tool}\"\n", "");
    let message = error_of(&text, &[]);
    assert_has(&message, &["field `routes`", "routes.flat"]);
}

#[test]
fn provisioning_knows_only_the_cache() {
    let text = format!(
        "{GOOD}\n[provision]\ncreates = \"{{workdir}}/bin/gw\"\ncommands = [[\"npm\", \"install\"]]\n"
    );
    let message = error_of(&text, &[]);
    assert_has(
        &message,
        &[
            "field `provision.creates`",
            "unknown placeholder `{workdir}`",
            "{cache}",
        ],
    );
}

#[test]
fn a_version_command_knows_only_cache_and_relaycheck() {
    let text = GOOD.replace(
        "description = \"a gateway\"",
        "description = \"a gateway\"\nversion_command = [\"{workdir}/gw\", \"--version\"]",
    );
    let message = error_of(&text, &[]);
    assert_has(
        &message,
        &[
            "vendor.toml:3:",
            "field `version_command`",
            "unknown placeholder `{workdir}`",
            "{relaycheck}",
        ],
    );
    let empty = GOOD.replace(
        "description = \"a gateway\"",
        "description = \"a gateway\"\nversion_command = []",
    );
    assert_has(
        &error_of(&empty, &[]),
        &["field `version_command`", "is empty"],
    );
}

/// Every profile shipped in harness/targets, including ones added for real gateways, loads.
#[test]
fn every_shipped_profile_loads() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("targets");
    let mut loaded = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.ends_with(".toml") || name.ends_with(".config.toml") {
            continue;
        }
        if let Err(err) = Profile::load(path.to_str().unwrap()) {
            panic!("{err}");
        }
        loaded += 1;
    }
    assert!(loaded >= 6, "only {loaded} profiles");
}
