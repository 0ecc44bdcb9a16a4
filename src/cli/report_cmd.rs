//! `agy-audit report`: the qualification report of a manifest, as Markdown
//! with an SVG chart beside it, or as one self-contained HTML file.

use super::common::refuse_collisions;
use super::common::DecodeArgs;
use crate::manifest::Manifest;
use crate::redact::{Mode, Redactions};
use crate::report::html::{render_html, step_views};
use crate::report::redacted;
use crate::report::{render_report, verdict_chart};
use crate::source::ReadOptions;
use crate::util::atomic::{write_file, Named, WriteOptions};
use clap::{Args, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Markdown, the chart in FILE.svg beside --out.
    Md,
    /// One self-contained HTML file: summary, chart, a filterable table of
    /// every session, and a drill-down per refused session.
    Html,
}

const REPORT_HELP: &str = "\
--format html writes one self-contained file (styles, filter script and SVG
chart inline; no network reference of any kind) that opens from disk and
reads completely with JavaScript off: the verdict, per-profile and
per-format counts, the chart, a table of every session (filterable by
verdict, refusal class, rule and profile, searchable by id, when scripts
run), and for each refused session a drill-down with its rule, reason and
location and the offending step rendered as the Markdown transcript
(export-offline --format md) renders it, read from the source under the
manifest's root (or --root) while it exists, else said to be gone.
Same manifest and sources, same bytes.
Past 5,000 sessions (html::HTML_SESSION_ROWS) the page lists every session
that is not verified (each refused one with its drill-down, as below the
limit) and summarizes the verified ones per profile, saying so at its top
and naming sessions.csv (beside the sweep's manifest) for every session;
at or below 5,000 it lists every session.

Secrets stay home: every text from a conversation (reasons, the drill-down's
step) passes through the redactor first, which replaces each credential the
ruleset finds (gitleaks' rules by id, and a password in a URL) with
[REDACTED:<rule id>]; the report says how many values it redacted, by which
rules, and the ruleset's version. --no-redact turns that off for a local
look, and the report then says so on its first line.";

/// Write the qualification report of a manifest: Markdown with an SVG chart
/// of verdicts per profile beside it, or one self-contained HTML file.
#[derive(Debug, Args)]
#[command(after_help = REPORT_HELP)]
pub struct ReportArgs {
    /// The manifest.json (manifestVersion 5).
    pub manifest: PathBuf,
    /// Output file (default: standard output; for Markdown the chart is
    /// then not written). The Markdown report's chart goes beside it with
    /// the extension .svg; the HTML report holds its chart inline.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Report format.
    #[arg(long, value_enum, default_value = "md")]
    pub format: ReportFormat,
    /// (html) Read the refused sessions' sources under this store root
    /// instead of the manifest's `root`.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Replace existing output files.
    #[arg(long)]
    pub force: bool,
    /// Do not redact credentials from the conversations' text (a local
    /// look only: the report then says so on its first line).
    #[arg(long)]
    pub no_redact: bool,
    #[command(flatten)]
    pub decode: DecodeArgs,
}

/// How the Markdown report's chart is named in a refusal: it is not given
/// by a flag of its own.
const CHART_BESIDE_OUT: &str = "the chart written beside --out (its name with the extension .svg)";

pub fn run(mut a: ReportArgs) -> anyhow::Result<i32> {
    // A sweep folder names its manifest.json: from here on, the file.
    let (manifest_file, m) = crate::manifest::read::read(&a.manifest)?;
    a.manifest = manifest_file;
    if a.format == ReportFormat::Html {
        return run_html(&a, m);
    }
    let mode = Mode::from_no_redact(a.no_redact);
    let mut tally = Redactions::default();
    let shown = if mode.on() {
        redacted::manifest_owned(m, &mut tally)
    } else {
        m
    };
    let md =
        |chart: Option<&str>| redacted::into_markdown(render_report(&shown, chart), mode, &tally);
    match &a.out {
        None => crate::util::term::out(md(None).as_bytes()),
        Some(out) => {
            let svg = out.with_extension("svg");
            let name = svg.file_name().map(|n| n.to_string_lossy().into_owned());
            // The manifest this command reads is never an output, whatever
            // the flags, and the chart is never the report (`--out X.svg`):
            // both outputs are checked before either is written.
            refuse_collisions(
                &[Named::new("--out", out), Named::new(CHART_BESIDE_OUT, &svg)],
                &[Named::new("MANIFEST", &a.manifest)],
                a.force,
            )?;
            let opts = WriteOptions {
                force: a.force,
                protected: vec![a.manifest.clone()],
                ..Default::default()
            };
            write_file(&svg, verdict_chart(&shown).as_bytes(), &opts)?;
            write_file(out, md(name.as_deref()).as_bytes(), &opts)?;
            crate::util::term::note(format_args!(
                "wrote {} and {}",
                out.display(),
                svg.display()
            ));
        }
    }
    Ok(0)
}

fn run_html(a: &ReportArgs, m: Manifest) -> anyhow::Result<i32> {
    let root = a.root.clone().unwrap_or_else(|| PathBuf::from(&m.root));
    // Never over the manifest, the decode inputs or any source read:
    // checked before the sources are read.
    let mut inputs = vec![Named::new("MANIFEST", &a.manifest)];
    inputs.extend(a.decode.named_inputs());
    inputs.extend(super::common::source_inputs(&m, &root));
    if let Some(out) = &a.out {
        refuse_collisions(&[Named::new("--out", out)], &inputs, a.force)?;
    }
    let (schema, key) = a.decode.load_inspect()?;
    let opts = ReadOptions {
        schema: &schema,
        legacy_key: &key,
        collect_all: true,
        fingerprint: false,
    };
    // The steps are found from the reasons as recorded; only what is shown
    // is redacted, the whole step before the writer cuts or escapes it.
    let mut views = step_views(&m, &root, &opts);
    let mode = Mode::from_no_redact(a.no_redact);
    let mut tally = Redactions::default();
    let shown = if mode.on() {
        redacted::step_views(&mut views, &mut tally);
        redacted::manifest_owned(m, &mut tally)
    } else {
        m
    };
    let note = format!(
        "offending steps read from the sources under {} (offline export, unverified)",
        root.display()
    );
    let html = redacted::into_html(render_html(&shown, &views, &note), mode, &tally);
    match &a.out {
        None => crate::util::term::out(html.as_bytes()),
        Some(out) => {
            let protected = inputs.into_iter().map(|n| n.path).collect();
            write_file(
                out,
                html.as_bytes(),
                &WriteOptions {
                    force: a.force,
                    protected,
                    ..Default::default()
                },
            )?;
            crate::note!("wrote {} ({} bytes)", out.display(), html.len());
        }
    }
    Ok(0)
}
