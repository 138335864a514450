//! The published site (reports/site): built from the published runs as `relaycheck site` builds
//! it, and read in headless Chromium as a visitor reads it. Chromium needs `/usr/bin/chromium`
//! and `npm ci` in tests/browser (`.ci/run` installs both); outside CI the browser tests say
//! what is missing and pass, in CI they fail.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

/// Every published run: `reports/<run>/results.jsonl`, as scripts/regenerate-reports.sh gives
/// them to `relaycheck site`.
fn published_runs() -> Vec<PathBuf> {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(root().join("reports"))
        .unwrap()
        .filter_map(|entry| Some(entry.ok()?.path().join("results.jsonl")))
        .filter(|path| path.exists())
        .collect();
    runs.sort();
    runs
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("relaycheck-site-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files(&path));
        } else {
            found.push(path);
        }
    }
    found.sort();
    found
}

#[test]
fn the_published_site_is_what_the_published_runs_make() {
    let committed = root().join("reports/site");
    let out = scratch("rebuilt");
    std::fs::copy(committed.join("history.jsonl"), out.join("history.jsonl")).unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_relaycheck"))
        .arg("site")
        .arg("--out")
        .arg(&out)
        .args(published_runs())
        .status()
        .unwrap();
    assert!(status.success());
    let rebuilt: Vec<PathBuf> = files(&out)
        .into_iter()
        .map(|p| p.strip_prefix(&out).unwrap().to_path_buf())
        .collect();
    let shipped: Vec<PathBuf> = files(&committed)
        .into_iter()
        .map(|p| p.strip_prefix(&committed).unwrap().to_path_buf())
        .collect();
    assert_eq!(
        rebuilt, shipped,
        "reports/site has other files than a build makes: run scripts/regenerate-reports.sh"
    );
    for path in &rebuilt {
        assert!(
            std::fs::read(out.join(path)).unwrap() == std::fs::read(committed.join(path)).unwrap(),
            "reports/site/{} differs from what the published runs make: run `relaycheck site \
             --out reports/site reports/*/results.jsonl`",
            path.display()
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

fn missing_tools() -> Option<String> {
    if !Path::new("/usr/bin/chromium").exists() && std::env::var_os("CHROMIUM").is_none() {
        return Some("chromium is not installed (apt-get install chromium)".into());
    }
    if !browser_dir().join("node_modules/playwright-core").exists() {
        return Some(format!(
            "playwright-core is not installed (npm ci --prefix {})",
            browser_dir().display()
        ));
    }
    None
}

#[allow(
    clippy::print_stderr,
    reason = "a skipped browser test says why on the test's output"
)]
fn skip(test: &str) -> bool {
    let Some(missing) = missing_tools() else {
        return false;
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "in CI the browser test must run: {missing}"
    );
    eprintln!("SKIPPED {test}: {missing}");
    true
}

fn check(site: &Path) -> (bool, String) {
    let out = Command::new("node")
        .arg(browser_dir().join("site-check.mjs"))
        .arg(site)
        .output()
        .expect("node runs");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn every_published_page_loads_in_chromium_and_every_link_resolves() {
    if skip("every_published_page_loads_in_chromium_and_every_link_resolves") {
        return;
    }
    let (ok, report) = check(&root().join("reports/site"));
    assert!(ok, "{report}");
    assert!(report.contains("\"problems\":[]"), "{report}");
}

#[test]
fn the_browser_check_finds_a_broken_link_and_a_script_error() {
    if skip("the_browser_check_finds_a_broken_link_and_a_script_error") {
        return;
    }
    let site = scratch("broken");
    for file in files(&root().join("reports/site")) {
        let relative = file.strip_prefix(root().join("reports/site")).unwrap();
        let to = site.join(relative);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&file, &to).unwrap();
    }
    let index = site.join("index.html");
    let mut text = std::fs::read_to_string(&index).unwrap();
    text = text.replace(
        "</body>",
        "<a href=\"targets/gone.html\">gone</a><a href=\"#nowhere\">x</a><script>undefinedCall()</script></body>",
    );
    std::fs::write(&index, text).unwrap();
    let (ok, report) = check(&site);
    assert!(!ok, "{report}");
    assert!(report.contains("broken link"), "{report}");
    assert!(report.contains("no element #nowhere"), "{report}");
    assert!(report.contains("page error"), "{report}");
    let _ = std::fs::remove_dir_all(&site);
}
