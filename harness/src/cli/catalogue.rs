//! `relaycheck catalogue`: the catalogue as a page for people.

use std::path::PathBuf;
use std::process::ExitCode;

use relaycheck::report;

#[derive(clap::Args)]
pub(super) struct Args {
    #[arg(long, default_value = "reports/catalogue.md")]
    out: PathBuf,
    #[arg(long)]
    specs: Option<PathBuf>,
    /// Also write the conformance levels page (docs/conformance.md) here.
    #[arg(long)]
    conformance_out: Option<PathBuf>,
}

pub(super) fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let Some(catalogue) = super::require_catalogue(args.specs)? else {
        return Ok(ExitCode::from(2));
    };
    let text = report::catalogue::render(&catalogue, "relaycheck catalogue");
    super::write_file(&args.out, &text)?;
    println!(
        "wrote {} ({} cases)",
        args.out.display(),
        catalogue.cases.len()
    );
    if let Some(path) = &args.conformance_out {
        let text = report::levels::render(
            &catalogue,
            "relaycheck catalogue --conformance-out docs/conformance.md",
        );
        super::write_file(path, &text)?;
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
