//! One latency run: `direct` and a target started side by side, every size measured through
//! both, both stopped. The command line and the release comparison both run it.

use std::path::Path;
use std::time::Duration;

use relaycheck_model::Shape;

use super::{Row, Size, measure};
use crate::profile::Profile;

/// How long one bench call may take before it counts as failed.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How a bench starts a target, the same in every mode that starts one.
#[derive(Clone, Copy)]
pub struct Starting<'a> {
    pub shape: Shape,
    pub canary_cmd: &'a [String],
    pub relaycheck: &'a Path,
    pub script: &'a Path,
    /// Each start gets its own directory below this one.
    pub workdir: &'a Path,
    /// Hears how far a long measurement has got, one line at a time.
    pub progress: fn(&str),
}

impl<'a> Starting<'a> {
    /// The launch of `profile` (started with `mutant`) in a fresh directory named after `label`.
    pub fn launch(
        &self,
        profile: &'a Profile,
        mutant: Option<&'a str>,
        label: &str,
    ) -> crate::target::Launch<'a> {
        crate::target::Launch {
            profile,
            shape: self.shape,
            forced: false,
            north: None,
            canary_cmd: self.canary_cmd,
            relaycheck: self.relaycheck,
            script_path: self.script,
            workdir: crate::run::start_dir(self.workdir, label, self.shape),
            mutant,
            serves: &[],
        }
    }
}

/// What one run needs: which target, how it starts, what to measure.
pub struct Latency<'a> {
    pub direct: &'a Profile,
    pub profile: &'a Profile,
    pub mutant: Option<&'a str>,
    pub sizes: &'a [Size],
    pub calls: usize,
    pub starting: Starting<'a>,
}

/// One run's figures under the name the report gives the target (`reference --mutant m`).
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    pub name: String,
    pub rows: Vec<Row>,
    pub peak_memory: Option<u64>,
}

/// The route a bench call takes through `profile`: its flat route, else its batch route (a
/// gateway that reaches upstream tools only through a meta tool, as Hangar's egress).
pub fn route_of(profile: &Profile) -> Result<&'static str, String> {
    if profile.routes.contains_key("flat") {
        Ok("flat")
    } else if profile.routes.contains_key("batch") {
        Ok("batch")
    } else {
        Err(format!(
            "target `{}` has neither a flat nor a batch route to bench",
            profile.name
        ))
    }
}

/// The name a run is reported under.
pub fn name_of(profile: &Profile, mutant: Option<&str>) -> String {
    match mutant {
        Some(mutant) => format!("{} --mutant {mutant}", profile.name),
        None => profile.name.clone(),
    }
}

pub async fn run(latency: &Latency<'_>) -> Result<Measured, String> {
    let route = route_of(latency.profile)?;
    let launch = |profile, mutant| latency.starting.launch(profile, mutant, "bench");
    let direct = crate::target::start(launch(latency.direct, None)).await?;
    let target = match crate::target::start(launch(latency.profile, latency.mutant)).await {
        Ok(target) => target,
        Err(err) => {
            direct.stop().await;
            return Err(err);
        }
    };
    let name = name_of(latency.profile, latency.mutant);
    // An aggregating gateway names tools per upstream (`{upstream}` in its routes): the bench's
    // calls go to the first, as a case's do when it names none.
    let routed = latency.profile.for_upstream(None);
    let mut rows = Vec::new();
    for size in latency.sizes {
        (latency.starting.progress)(&format!(
            "bench: {} x {} calls, `{}` and `{name}` alternating",
            size.label(),
            latency.direct.name,
            latency.calls,
        ));
        rows.push(
            measure(
                (latency.direct, &direct),
                (&routed, &target, route),
                *size,
                latency.calls,
                CALL_TIMEOUT,
            )
            .await,
        );
    }
    let peak_memory = target.peak_memory();
    direct.stop().await;
    target.stop().await;
    Ok(Measured {
        name,
        rows,
        peak_memory,
    })
}
