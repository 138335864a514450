//! Installing a target before its first start: a virtual environment from the Python registry,
//! an npm folder. Done once per machine; the marker path says whether it is done.

use std::path::PathBuf;
use std::time::Duration;

use crate::process::{GroupChild, Pipes};
use crate::profile::{Profile, Vars, cache_dir};

/// What provisioning did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Provisioned {
    /// The profile installs nothing.
    Nothing,
    /// Already installed: the marker path exists.
    Present(PathBuf),
    /// Installed now.
    Installed(PathBuf),
}

/// Whether the target needs installing, and where it goes.
pub fn pending(profile: &Profile) -> Option<PathBuf> {
    let provision = profile.provision.as_ref()?;
    let marker = PathBuf::from(vars().fill(&provision.creates));
    (!marker.exists()).then_some(marker)
}

fn vars() -> Vars {
    let mut vars = Vars::default();
    vars.set("cache", cache_dir().display().to_string());
    vars
}

/// Runs the profile's install commands unless their marker exists. The error names the command
/// and ends with its output.
pub async fn provision(profile: &Profile) -> Result<Provisioned, String> {
    let Some(provision) = &profile.provision else {
        return Ok(Provisioned::Nothing);
    };
    let vars = vars();
    let marker = PathBuf::from(vars.fill(&provision.creates));
    if marker.exists() {
        return Ok(Provisioned::Present(marker));
    }
    let cache = cache_dir();
    std::fs::create_dir_all(&cache)
        .map_err(|err| format!("cannot create the cache {}: {err}", cache.display()))?;
    let log = cache.join(format!("provision-{}.log", profile.name));
    let deadline = Duration::from_millis(provision.timeout_ms);
    for command in &provision.commands {
        let argv = vars.fill_argv(command);
        let mut child = GroupChild::spawn(&argv, &[], &cache, &log, Pipes::StdoutOnly)
            .map_err(|err| format!("provisioning `{}`: {err}", argv.join(" ")))?;
        let mut stdout = child.take_stdout();
        let drain = async {
            if let Some(out) = stdout.as_mut() {
                let _ = tokio::io::copy(out, &mut tokio::io::sink()).await;
            }
            child.wait().await
        };
        let status = tokio::time::timeout(deadline, drain)
            .await
            .map_err(|_| {
                format!(
                    "provisioning `{}` took longer than {} s",
                    argv.join(" "),
                    deadline.as_secs()
                )
            })?
            .map_err(|err| format!("provisioning `{}`: {err}", argv.join(" ")))?;
        if !status.success() {
            let tail = std::fs::read_to_string(&log)
                .map(|text| {
                    text.lines()
                        .rev()
                        .take(15)
                        .collect::<Vec<_>>()
                        .into_iter()
                        .rev()
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default();
            return Err(format!(
                "provisioning `{}` failed ({status}); its output ends:\n{tail}",
                argv.join(" ")
            ));
        }
    }
    if !marker.exists() {
        return Err(format!(
            "provisioning ran but {} does not exist: the profile's `creates` is wrong",
            marker.display()
        ));
    }
    Ok(Provisioned::Installed(marker))
}
