//! `relaycheck mutants`: the catalogue against every mutant of a target, and the table of
//! which cases catch which.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use relaycheck::profile::Profile;
use relaycheck::report::console;
use relaycheck::result::CaseResult;
use relaycheck::run::{RunPlan, run};
use relaycheck_model::Shape;

use super::{canary_command, default_case_timeout, invocation, parse_shapes, write_file};

#[derive(clap::Args)]
pub(super) struct Args {
    #[arg(long)]
    target: String,
    /// Shapes to run each mutant in (repeatable; `all`). Default: the target's claimed shapes.
    #[arg(long = "shape")]
    shapes: Vec<String>,
    /// Only these mutants (repeatable). Default: all the target lists.
    #[arg(long = "mutant")]
    mutants: Vec<String>,
    /// Join the JSON tables of earlier runs over parts of the mutants instead of running
    /// (repeatable; every mutant must be in one part).
    #[arg(long = "merge")]
    merge: Vec<PathBuf>,
    /// Run each mutant in the bridged pairs too (2026-07-28 in front of sep-3279, and the
    /// reverse; `relaycheck run --north`), so the mutants of a target's bridge are caught.
    #[arg(long)]
    bridges: bool,
    /// Where to write the table. Default: reports/<target>/mutants.md.
    #[arg(long)]
    out: Option<PathBuf>,
    #[arg(long, default_value_t = 8)]
    jobs: usize,
    #[arg(long)]
    specs: Option<PathBuf>,
}

/// Runs a plan to the end and returns its results, printing a mark per result.
fn collect(
    runtime: &tokio::runtime::Runtime,
    plan: &RunPlan<'_>,
) -> anyhow::Result<Vec<CaseResult>> {
    let mut results = Vec::new();
    runtime
        .block_on(run(plan, &mut |result: CaseResult| {
            eprint!("{}", console::mark(result.outcome));
            results.push(result);
        }))
        .map_err(anyhow::Error::msg)?;
    eprintln!();
    Ok(results)
}

pub(super) fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let Some(catalogue) = super::require_catalogue(args.specs.clone())? else {
        return Ok(ExitCode::from(2));
    };
    let profile = Profile::load(&args.target)?;
    if let Err(problem) = profile.check_claims(&catalogue) {
        eprintln!("relaycheck: {problem}");
        return Ok(ExitCode::from(2));
    }
    let Some(listing) = &profile.mutants else {
        bail!(
            "target `{}` declares no mutants ([mutants] list in its profile)",
            profile.name
        );
    };
    let mut vars = relaycheck::profile::Vars::default();
    vars.set("relaycheck", std::env::current_exe()?.display().to_string());
    let argv = vars.fill_argv(&listing.list);
    let output = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .output()
        .with_context(|| format!("cannot run `{}` to list the mutants", argv.join(" ")))?;
    if !output.status.success() {
        bail!(
            "`{}` failed: {}",
            argv.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let mut listed = relaycheck::mutation::parse_listing(&String::from_utf8_lossy(&output.stdout))
        .map_err(anyhow::Error::msg)?;
    if !args.mutants.is_empty() {
        for wanted in &args.mutants {
            if !listed.iter().any(|m| &m.name == wanted) {
                bail!("target `{}` has no mutant `{wanted}`", profile.name);
            }
        }
        listed.retain(|m| args.mutants.contains(&m.name));
    }
    if !args.merge.is_empty() {
        let parts: Vec<serde_json::Value> = args
            .merge
            .iter()
            .map(|path| {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))
            })
            .collect::<anyhow::Result<_>>()?;
        let (table, shapes) = relaycheck::mutation::MutationTable::merge(&parts, &listed)
            .map_err(anyhow::Error::msg)?;
        let command = invocation();
        let out = args
            .out
            .unwrap_or_else(|| PathBuf::from(format!("reports/{}/mutants.md", profile.name)));
        write_file(&out, &table.render(&catalogue, &profile.name, &command))?;
        let json = table.to_json(&profile.name, &shapes, &command);
        write_file(
            &out.with_extension("json"),
            &serde_json::to_string_pretty(&json)?,
        )?;
        println!("wrote {}", out.display());
        return Ok(if table.holds(&catalogue) {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let shapes = parse_shapes(&args.shapes, &profile)?;
    let workdir = std::env::temp_dir().join(format!("relaycheck-mutants-{}", std::process::id()));
    relaycheck::reaper::remove_at_exit(&workdir);
    let runtime = super::runtime()?;
    let bridges: Vec<(Shape, Shape)> = if args.bridges {
        relaycheck::suite::BRIDGES.to_vec()
    } else {
        Vec::new()
    };
    // The negotiated shapes, then each bridged pair on a plan of its own.
    let runs: Vec<(Vec<Shape>, Option<Shape>)> = std::iter::once((shapes.clone(), None))
        .chain(
            bridges
                .iter()
                .map(|(north, south)| (vec![*south], Some(*north))),
        )
        .collect();
    let plan_for =
        |mutant: Option<String>, (shapes, north): &(Vec<Shape>, Option<Shape>)| RunPlan {
            catalogue: &catalogue,
            profile: &profile,
            shapes: shapes.clone(),
            forced: false,
            north: *north,
            cases: Vec::new(),
            jobs: args.jobs,
            starts: args.jobs,
            canary_cmd: canary_command().unwrap_or_default(),
            relaycheck: std::env::current_exe().unwrap_or_default(),
            workdir: workdir.clone(),
            case_timeout: default_case_timeout(None, &profile),
            mutant,
            notices: &super::print_notice,
        };
    let collect_all = |mutant: Option<String>| -> anyhow::Result<Vec<CaseResult>> {
        let mut results = Vec::new();
        for run in &runs {
            results.extend(collect(&runtime, &plan_for(mutant.clone(), run))?);
        }
        Ok(results)
    };
    eprintln!("baseline: `{}` unmutated", profile.name);
    let baseline = collect_all(None)?;
    let mut table = relaycheck::mutation::MutationTable::new(listed.clone(), &baseline);
    table.bridges = bridges;
    for mutant in &listed {
        eprintln!("mutant `{}`: {}", mutant.name, mutant.defect);
        let results = collect_all(Some(mutant.name.clone()))?;
        table.record(&mutant.name, &results);
    }
    runtime.shutdown_timeout(Duration::from_secs(2));
    let _ = std::fs::remove_dir_all(&workdir);
    let command = invocation();
    let text = table.render(&catalogue, &profile.name, &command);
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from(format!("reports/{}/mutants.md", profile.name)));
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    write_file(&out, &text)?;
    let json = table.to_json(&profile.name, &shapes, &command);
    write_file(
        &out.with_extension("json"),
        &serde_json::to_string_pretty(&json)?,
    )?;
    println!("{text}");
    // Passed: mutants caught. Failed: mutants that survived, cases that catch nothing and do
    // not say why, and cases that fail on the unmutated target.
    let survivors = table.survivors().len();
    let idle = table
        .idle_cases(&catalogue)
        .iter()
        .filter(|(_, why)| why.is_none())
        .count();
    println!(
        "Total: {} passed, {} failed",
        listed.len() - survivors,
        survivors + idle + table.baseline_failures.len()
    );
    Ok(if table.holds(&catalogue) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
