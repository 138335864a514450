//! `relaycheck normalize`: one tool result through the reference normalizer.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use relaycheck_model::Shape;

#[derive(clap::Args)]
pub(super) struct Args {
    /// Byte budget of the payload.
    #[arg(long, default_value_t = relaycheck_reference::DEFAULT_BUDGET_BYTES)]
    budget: usize,
    /// Read stdin as a legacy-form result and render it into this shape first.
    #[arg(long)]
    shape: Option<Shape>,
    /// The tool's outputSchema (a JSON file), for schema-aware cuts.
    #[arg(long)]
    schema: Option<PathBuf>,
    #[arg(long, default_value = "upstream")]
    server: String,
    #[arg(long, default_value = "tool")]
    tool: String,
    #[arg(long, default_value = "local-user")]
    identity: String,
}

pub(super) fn exec(args: Args) -> anyhow::Result<ExitCode> {
    use std::io::Read;
    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .context("cannot read stdin")?;
    if let Some(shape) = args.shape {
        let legacy: serde_json::Value =
            serde_json::from_slice(&input).context("--shape needs stdin to be a JSON result")?;
        let legacy = legacy.get("result").cloned().unwrap_or(legacy);
        let rendered = relaycheck_model::render::render_result(&legacy, shape, None);
        input = serde_json::to_vec(&rendered)?;
    }
    let mut context = relaycheck_reference::Context::new(
        args.server,
        args.tool,
        "cli",
        relaycheck_reference::Identity::new(args.identity),
    )
    .with_budget(args.budget);
    if let Some(path) = &args.schema {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let schema =
            serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
        context = context.with_schema(schema);
    }
    let envelope = relaycheck_reference::normalize_bytes(&input, &context);
    println!("{}", serde_json::to_string_pretty(&envelope)?);
    Ok(ExitCode::SUCCESS)
}
