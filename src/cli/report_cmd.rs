//! `agy-audit report`: the qualification report of a manifest.

use crate::manifest::Manifest;
use crate::report::{render_report, verdict_chart};
use crate::util::atomic::{check_outputs, write_file, WriteOptions};
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;

/// Write the qualification report (Markdown) of a manifest, with an SVG chart
/// of verdicts per profile beside it.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The manifest.json (manifestVersion 5).
    pub manifest: PathBuf,
    /// Output Markdown file (default: standard output; the chart is then not written).
    /// The chart goes beside it with the extension .svg.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace existing output files.
    #[arg(long)]
    pub force: bool,
}

pub fn run(a: ReportArgs) -> anyhow::Result<i32> {
    let bytes =
        std::fs::read(&a.manifest).with_context(|| format!("reading {}", a.manifest.display()))?;
    let m =
        Manifest::parse(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", a.manifest.display()))?;
    match &a.out {
        None => {
            use std::io::Write as _;
            std::io::stdout()
                .lock()
                .write_all(render_report(&m, None).as_bytes())?
        }
        Some(out) => {
            let svg = out.with_extension("svg");
            let name = svg.file_name().map(|n| n.to_string_lossy().into_owned());
            // The manifest this command reads is never an output, whatever
            // the flags; both outputs are checked before either is written.
            let inputs = vec![a.manifest.clone()];
            check_outputs(&[out.as_path(), svg.as_path()], &inputs)?;
            let opts = WriteOptions {
                force: a.force,
                protected: inputs,
                ..Default::default()
            };
            write_file(&svg, verdict_chart(&m).as_bytes(), &opts)?;
            write_file(out, render_report(&m, name.as_deref()).as_bytes(), &opts)?;
            crate::util::term::note(format_args!(
                "wrote {} and {}",
                out.display(),
                svg.display()
            ));
        }
    }
    Ok(0)
}
