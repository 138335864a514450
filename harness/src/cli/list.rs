//! `relaycheck list`: the cases with their surface, level and conformance class.

use std::path::PathBuf;
use std::process::ExitCode;

use relaycheck::report::jsonl::CaseEvent;

#[derive(clap::Args)]
pub(super) struct Args {
    #[arg(long)]
    json: bool,
    #[arg(long)]
    specs: Option<PathBuf>,
}

pub(super) fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let Some(catalogue) = super::require_catalogue(args.specs)? else {
        return Ok(ExitCode::from(2));
    };
    if args.json {
        let cases: Vec<CaseEvent> = catalogue.cases.iter().map(CaseEvent::of).collect();
        let mut by_surface = std::collections::BTreeMap::<&str, usize>::new();
        let mut by_level = std::collections::BTreeMap::<&str, usize>::new();
        for case in &catalogue.cases {
            *by_surface.entry(&case.surface).or_default() += 1;
            *by_level.entry(case.spec.level.as_str()).or_default() += 1;
        }
        let out = serde_json::json!({
            "counts": {
                "cases": catalogue.cases.len(),
                "surfaces": by_surface.len(),
                "by_surface": by_surface,
                "by_level": by_level,
            },
            "extended_surfaces": catalogue
                .surfaces
                .iter()
                .filter(|s| s.conformance == relaycheck::catalogue::Conformance::Extended)
                .map(|s| s.id.as_str())
                .collect::<Vec<_>>(),
            "cases": cases,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for case in &catalogue.cases {
            println!(
                "{:<60} {:<28} {:<7} {}",
                case.spec.id,
                case.surface,
                case.spec.level,
                if case.extended { "extended" } else { "core" }
            );
        }
        println!("{} cases", catalogue.cases.len());
    }
    Ok(ExitCode::SUCCESS)
}
