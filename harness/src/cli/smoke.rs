//! `relaycheck smoke`: a few trivial steps that tell a wrong profile from a failing gateway.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use relaycheck::profile::Profile;
use relaycheck::smoke::{self, Smoke};
use relaycheck_model::Shape;

#[derive(clap::Args)]
pub(super) struct Args {
    /// A built-in target name or a profile file.
    #[arg(long)]
    target: String,
    /// The shape to speak. Default: 2025-11-25, or the first the target claims.
    #[arg(long)]
    shape: Option<Shape>,
    /// How long each call may take, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
    /// Start the target with this deliberate defect (a target with `[mutants]`).
    #[arg(long)]
    mutant: Option<String>,
    /// The specs directory, for the shapes' comparison rules (default: `specs/` here or above).
    #[arg(long)]
    specs: Option<PathBuf>,
}

/// Loads the profile (its errors name the field), smokes it and prints the account.
pub(super) fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let dir = super::specs_dir(args.specs.clone())?.join("shapes");
    let mut errors = Vec::new();
    let shapes = relaycheck::shapes::load_shapes(&dir, &mut errors);
    if !errors.is_empty() {
        eprintln!("{}", relaycheck::catalogue::SpecErrors(errors));
        return Ok(ExitCode::from(2));
    }
    let profile = match Profile::load(&args.target) {
        Ok(profile) => profile,
        Err(err) => {
            eprintln!("relaycheck: {err}");
            println!(
                "the profile is wrong: look at {}",
                err.field().unwrap_or("the file")
            );
            return Ok(ExitCode::from(2));
        }
    };
    let shape = args.shape.unwrap_or_else(|| {
        let claimed = profile.shapes();
        if claimed.contains(&Shape::V2025_11_25) {
            Shape::V2025_11_25
        } else {
            claimed[0]
        }
    });
    let workdir = std::env::temp_dir().join(format!(
        "relaycheck-smoke-{}-{}",
        profile.name,
        std::process::id()
    ));
    let runtime = super::runtime()?;
    let steps = runtime.block_on(smoke::smoke(&Smoke {
        profile: &profile,
        shape,
        canary_cmd: super::canary_command()?,
        relaycheck: std::env::current_exe()?,
        workdir: workdir.clone(),
        call_timeout: Duration::from_millis(args.timeout_ms),
        mutant: args.mutant,
        rules: shapes
            .iter()
            .find(|spec| spec.id == shape)
            .map(relaycheck::checks::Equivalence::from)
            .unwrap_or_default(),
    }));
    runtime.shutdown_timeout(Duration::from_secs(2));
    print!("{}", smoke::render(&profile, &steps));
    let code = smoke::exit_code(&steps);
    if code == 0 {
        let _ = std::fs::remove_dir_all(&workdir);
    } else {
        println!(
            "work files (target stderr, canary log): {}",
            workdir.display()
        );
    }
    Ok(ExitCode::from(code))
}
