//! Installing the official suite on first use: a Node.js newer than the machine's (the npm
//! package `node`, which brings the platform's binary as a package) and the suite itself,
//! both pinned exactly, into one npm folder per suite version under relaycheck's cache.
//! Nothing is fetched but those packages from the npm registry, through the machine's own
//! `npm`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::process::{GroupChild, Pipes};

/// The official conformance suite's npm package.
pub const SUITE_PACKAGE: &str = "@modelcontextprotocol/conformance";
/// A suite version relaycheck pins, and the revisions whose requirement set, frozen at the
/// revision's release, it can run (`conformance server --requirements <revision>`).
#[derive(Debug, PartialEq, Eq)]
pub struct Suite {
    pub version: &'static str,
    pub requirement_sets: &'static [&'static str],
}

/// The pinned suite versions: the stable line (npm `latest`, the default) first, then the
/// newest pre-release, which adds the 2026-07-28 scenarios, wire-schema validation of every
/// message and a requirement set per revision.
pub const SUITES: [Suite; 2] = [
    Suite {
        version: "0.1.16",
        requirement_sets: &[],
    },
    Suite {
        version: "0.2.0-alpha.12",
        requirement_sets: &["2025-11-25", "2026-07-28"],
    },
];

/// The default suite version.
pub const SUITE_VERSION: &str = SUITES[0].version;

impl Suite {
    /// The pinned suite of `version`; the error lists the pinned ones.
    pub fn pinned(version: &str) -> Result<&'static Suite, String> {
        SUITES.iter().find(|s| s.version == version).ok_or_else(|| {
            let pinned: Vec<&str> = SUITES.iter().map(|s| s.version).collect();
            format!(
                "--suite-version `{version}` is not one relaycheck pins (pinned: {})",
                pinned.join(", ")
            )
        })
    }

    /// Checks that this suite has the requirement set of `revision`.
    pub fn requirement_set(&self, revision: &str) -> Result<(), String> {
        if self.requirement_sets.contains(&revision) {
            return Ok(());
        }
        if self.requirement_sets.is_empty() {
            let with: Vec<&str> = SUITES
                .iter()
                .filter(|s| !s.requirement_sets.is_empty())
                .map(|s| s.version)
                .collect();
            return Err(format!(
                "--spec-version needs a suite with requirement sets ({}); {} has none",
                with.join(", "),
                self.version
            ));
        }
        Err(format!(
            "--spec-version `{revision}` is not a requirement set of {SUITE_PACKAGE} {} (it has {})",
            self.version,
            self.requirement_sets.join(", ")
        ))
    }
}
/// The pinned Node.js (npm package `node`); the suite's dependencies want Node 22 or later.
pub const NODE_VERSION: &str = "22.23.3";

/// How long one install may take.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);

/// Where the suite and its Node.js live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Install {
    pub dir: PathBuf,
    pub suite: &'static Suite,
}

impl Install {
    /// The folder under `cache` for `suite` and the pinned Node.js.
    pub fn under(cache: &Path, suite: &'static Suite) -> Install {
        Install {
            dir: cache.join(format!(
                "official-conformance-{}-node-{NODE_VERSION}",
                suite.version
            )),
            suite,
        }
    }

    /// `@modelcontextprotocol/conformance@<version>`.
    pub fn package(&self) -> String {
        format!("{SUITE_PACKAGE}@{}", self.suite.version)
    }

    pub fn node(&self) -> PathBuf {
        self.dir.join("node_modules/node/bin/node")
    }

    /// The suite's entry script, run with [`Install::node`].
    pub fn suite(&self) -> PathBuf {
        self.dir
            .join("node_modules/@modelcontextprotocol/conformance/dist/index.js")
    }

    /// The argv that runs the suite with `args`.
    pub fn argv(&self, args: &[&str]) -> Vec<String> {
        [
            self.node().display().to_string(),
            self.suite().display().to_string(),
        ]
        .into_iter()
        .chain(args.iter().map(|a| a.to_string()))
        .collect()
    }

    /// Installed, and the pinned versions are the ones there.
    pub fn present(&self) -> bool {
        self.installed_versions()
            .is_some_and(|(node, suite)| node == NODE_VERSION && suite == self.suite.version)
    }

    /// The versions of `node` and the suite found in the folder, from their package.json.
    pub fn installed_versions(&self) -> Option<(String, String)> {
        let version = |package: &str| -> Option<String> {
            let path = self
                .dir
                .join("node_modules")
                .join(package)
                .join("package.json");
            let text = std::fs::read_to_string(path).ok()?;
            let json: serde_json::Value = serde_json::from_str(&text).ok()?;
            json.get("version")?.as_str().map(str::to_string)
        };
        if !self.node().exists() || !self.suite().exists() {
            return None;
        }
        Some((version("node")?, version(SUITE_PACKAGE)?))
    }

    /// Installs the pinned Node.js and suite unless they are there. The error names the
    /// command and ends with its output.
    pub async fn ensure(&self) -> Result<bool, String> {
        if self.present() {
            return Ok(false);
        }
        std::fs::create_dir_all(&self.dir)
            .map_err(|err| format!("cannot create {}: {err}", self.dir.display()))?;
        // A package.json of its own, so npm installs here and not into a parent folder.
        let manifest = serde_json::json!({
            "name": "relaycheck-official-conformance",
            "private": true,
            "description": "The official MCP conformance suite and the Node.js it runs on, installed by relaycheck",
        });
        std::fs::write(self.dir.join("package.json"), manifest.to_string())
            .map_err(|err| format!("cannot write {}/package.json: {err}", self.dir.display()))?;
        let argv: Vec<String> = [
            "npm",
            "install",
            "--no-audit",
            "--no-fund",
            "--save-exact",
            "--prefix",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([
            self.dir.display().to_string(),
            format!("node@{NODE_VERSION}"),
            self.package(),
        ])
        .collect();
        let log = self.dir.join("install.log");
        let mut child = GroupChild::spawn(&argv, &[], &self.dir, &log, Pipes::StdoutOnly)
            .map_err(|err| format!("`{}`: {err}", argv.join(" ")))?;
        let mut stdout = child.take_stdout();
        let drain = async {
            if let Some(out) = stdout.as_mut() {
                let _ = tokio::io::copy(out, &mut tokio::io::sink()).await;
            }
            child.wait().await
        };
        let status = tokio::time::timeout(INSTALL_TIMEOUT, drain)
            .await
            .map_err(|_| {
                format!(
                    "`{}` took longer than {} s",
                    argv.join(" "),
                    INSTALL_TIMEOUT.as_secs()
                )
            })?
            .map_err(|err| format!("`{}`: {err}", argv.join(" ")))?;
        let tail = || {
            std::fs::read_to_string(&log)
                .map(|text| {
                    let lines: Vec<&str> = text.lines().rev().take(15).collect();
                    lines.into_iter().rev().collect::<Vec<_>>().join("\n")
                })
                .unwrap_or_default()
        };
        if !status.success() {
            return Err(format!(
                "`{}` failed ({status}); its output ends:\n{}",
                argv.join(" "),
                tail()
            ));
        }
        match self.installed_versions() {
            Some((node, suite)) if node == NODE_VERSION && suite == self.suite.version => Ok(true),
            found => Err(format!(
                "`{}` ran, but {} holds {found:?} instead of node {NODE_VERSION} and {SUITE_PACKAGE} {} (did npm skip the `node` package's install script?); its output ends:\n{}",
                argv.join(" "),
                self.dir.display(),
                self.suite.version,
                tail()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_names_both_pins_and_absence_is_seen() {
        let dir = std::env::temp_dir().join(format!("relaycheck-official-{}", std::process::id()));
        let install = Install::under(&dir, &SUITES[0]);
        assert!(install.dir.ends_with(format!(
            "official-conformance-{SUITE_VERSION}-node-{NODE_VERSION}"
        )));
        let alpha = Install::under(&dir, &SUITES[1]);
        assert_ne!(
            alpha.dir, install.dir,
            "each suite version has its own folder"
        );
        assert_eq!(
            alpha.package(),
            format!("{SUITE_PACKAGE}@{}", SUITES[1].version)
        );
        assert!(!install.present());
        let argv = install.argv(&["list", "--server"]);
        assert!(argv[0].ends_with("node_modules/node/bin/node"));
        assert!(argv[1].ends_with("conformance/dist/index.js"));
        assert_eq!(&argv[2..], ["list", "--server"]);
    }

    #[test]
    fn a_wrong_version_is_not_present() {
        let dir =
            std::env::temp_dir().join(format!("relaycheck-official-wrong-{}", std::process::id()));
        let install = Install::under(&dir, &SUITES[0]);
        let write = |path: PathBuf, text: &str| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(install.node(), "");
        write(install.suite(), "");
        write(
            install.dir.join("node_modules/node/package.json"),
            r#"{"version": "20.0.0"}"#,
        );
        write(
            install
                .dir
                .join("node_modules/@modelcontextprotocol/conformance/package.json"),
            &format!(r#"{{"version": "{SUITE_VERSION}"}}"#),
        );
        assert_eq!(
            install.installed_versions(),
            Some(("20.0.0".into(), SUITE_VERSION.into()))
        );
        assert!(!install.present());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_pinned_versions_and_their_requirement_sets_are_taken() {
        assert_eq!(Suite::pinned(SUITE_VERSION).unwrap().version, SUITE_VERSION);
        let err = Suite::pinned("0.1.15").unwrap_err();
        assert!(
            err.contains("--suite-version") && err.contains(SUITES[1].version),
            "{err}"
        );
        let stable = Suite::pinned(SUITE_VERSION).unwrap();
        let err = stable.requirement_set("2026-07-28").unwrap_err();
        assert!(
            err.contains("--spec-version") && err.contains("has none"),
            "{err}"
        );
        let alpha = &SUITES[1];
        assert!(alpha.requirement_set("2026-07-28").is_ok());
        let err = alpha.requirement_set("2025-06-18").unwrap_err();
        assert!(err.contains("2025-11-25, 2026-07-28"), "{err}");
    }
}
