//! `agy-audit audit-diff OLD NEW`: what changed between two sweeps.

use crate::manifest::Manifest;
use crate::redact::{Mode, Redactions};
use crate::report::diff::{diff, render_markdown, AuditDiff, Inputs};
use crate::util::atomic::{write_file, Named, WriteOptions};
use crate::verdict::exit;
use clap::Args;
use std::path::{Path, PathBuf};

const DIFF_HELP: &str = "\
Each session (matched by file id) is one of: still-verified, newly-verified,
newly-refused, reason-changed (refusal class, rule or location; or verified
with and without source-only fields), profile-changed, source-changed
(source digest), appeared, disappeared, unchanged (refused the same way in
both). Where several apply, `change` is the first of appeared, disappeared,
newly-refused, newly-verified, reason-changed, source-changed,
profile-changed, and the others are listed in `also`.
A regression is a session verified (with or without source-only fields) in
OLD and anything else in NEW: unknown, incomplete, not fetched, an error,
or gone.

--format html writes one self-contained HTML file in the style of
`report --format html` (no network reference of any kind).
--json (or --format json) prints {\"sessions\": [{\"fileId\", \"change\", \"also\", \"old\", \"new\"}],
\"counts\": {change: n}, \"regressed\": n, \"shapes\": {...}} (and
\"incompleteInputs\" when --allow-incomplete let one in); otherwise a Markdown
report with an inline SVG chart of the verdict transitions.
Response shapes: when both sweeps recorded shape listings (shapes-ordinary.tsv
and shapes-full.tsv beside the manifest, fingerprints checked), the entries the
new answers added and removed, per listing (`shapes` in --json; a section of
the report); otherwise the section says which manifest has none. Shape changes
alone never change the exit code.
Secrets stay home: the reasons and locations shown (report, --json, --junit)
pass through the redactor after the sessions are classified, each credential
the ruleset finds becoming [REDACTED:<rule id>], and the output says how many
it redacted, by which rules, and the ruleset's version; --no-redact turns
that off (the report says so on its first line).

Exit codes:
  0    no session regressed
  1    an error, or an input manifest that is not complete (without
       --allow-incomplete)
  2    usage error
  5    at least one session regressed (verified in OLD, not in NEW): gate a
       release on it";

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    Md,
    Html,
    Json,
}

/// Compare two version-5 manifests (an old and a new sweep): per session,
/// what changed, which rules and refusal classes gained or lost sessions,
/// and whether anything regressed.
#[derive(Debug, Args)]
#[command(after_help = DIFF_HELP)]
pub struct AuditDiffArgs {
    /// The old manifest.json (or its sweep folder).
    pub old: PathBuf,
    /// The new manifest.json (or its sweep folder).
    pub new: PathBuf,
    /// Print the comparison as JSON instead of the Markdown report (the
    /// same as --format json).
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Report format: md (default), html (one self-contained file: the
    /// transitions chart, classes and rules that gained or lost sessions,
    /// every changed session with both sides; no network reference), or
    /// json.
    #[arg(long, value_enum)]
    pub format: Option<DiffFormat>,
    /// Write the report (or JSON) to FILE, atomically, instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Also write JUnit XML to FILE (atomically; never over an input): one
    /// testcase per session (classname its profile, name its file id), a
    /// <failure> with the reason for every regression.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Replace an existing --out or --junit file.
    #[arg(long)]
    pub force: bool,
    /// Compare a manifest that is not complete (an interrupted sweep,
    /// sessions not fetched, a partial merge); the report says so on its
    /// first line.
    #[arg(long)]
    pub allow_incomplete: bool,
    /// Do not redact credentials from the reasons the report, --json and
    /// --junit show (a local look only: the report then says so on its
    /// first line, --json as "redaction": {"redacted": false}, --junit as
    /// the property agy-audit.redacted=false).
    #[arg(long)]
    pub no_redact: bool,
}

fn read(given: &Path) -> anyhow::Result<(PathBuf, Manifest)> {
    Ok(crate::manifest::read::read(given)?)
}

pub fn run(a: AuditDiffArgs) -> anyhow::Result<i32> {
    let (old_file, old) = read(&a.old)?;
    let (new_file, new) = read(&a.new)?;
    let wo = checked_outputs(&a, [(&old_file, &old), (&new_file, &new)])?;
    let incomplete = incomplete_inputs(&[(&old_file, &old), (&new_file, &new)]);
    if !incomplete.is_empty() && !a.allow_incomplete {
        crate::note!(
            "audit-diff: refused: {}; finish the sweep (`agy-audit audit-sweep --resume`) or pass --allow-incomplete",
            incomplete.join("; ")
        );
        return Ok(exit::ERROR);
    }
    let mut d = diff(&old, &new);
    d.shapes = Some(crate::report::diff::shapes_section(
        &old_file, &old, &new_file, &new,
    )?);
    // Classified as recorded; only the reasons and locations shown are
    // redacted, after every change and regression was decided.
    let mode = Mode::from_no_redact(a.no_redact);
    let mut tally = Redactions::default();
    if mode.on() {
        crate::report::redacted::diff(&mut d, &mut tally);
    }
    let (old_name, new_name) = (
        old_file.display().to_string(),
        new_file.display().to_string(),
    );
    let inputs = Inputs {
        old_name: &old_name,
        new_name: &new_name,
        old: &old,
        new: &new,
        incomplete: &incomplete,
    };
    let bytes = render(&a, &d, &inputs, mode, &tally)?;
    match &a.out {
        None => crate::util::term::out(&bytes),
        Some(out) => write_file(out, &bytes, &wo)?,
    }
    if let Some(junit) = &a.junit {
        let xml = junit_xml(&d, mode, &tally);
        write_file(junit, xml.as_bytes(), &wo)?;
    }
    summary(&a, &d);
    Ok(if d.regressed > 0 {
        exit::REGRESSED
    } else {
        exit::OK
    })
}

/// Both outputs checked against each other and every file read (the two
/// manifests and their listings), before anything is written or printed:
/// a --junit onto an input never follows a report already on standard
/// output. The options every output is written with, the inputs protected.
fn checked_outputs(
    a: &AuditDiffArgs,
    [(old_file, old), (new_file, new)]: [(&PathBuf, &Manifest); 2],
) -> anyhow::Result<WriteOptions> {
    let outputs: Vec<Named> = [("--out", &a.out), ("--junit", &a.junit)]
        .into_iter()
        .filter_map(|(what, p)| p.as_ref().map(|p| Named::new(what, p)))
        .collect();
    let mut inputs = vec![Named::new("OLD", old_file), Named::new("NEW", new_file)];
    inputs.extend(super::common::listing_inputs("OLD", old_file, old));
    inputs.extend(super::common::listing_inputs("NEW", new_file, new));
    super::common::refuse_collisions(&outputs, &inputs, a.force)?;
    Ok(WriteOptions {
        force: a.force,
        protected: inputs.into_iter().map(|n| n.path).collect(),
        ..Default::default()
    })
}

/// Why each of the manifests that is not complete is refused.
fn incomplete_inputs(manifests: &[(&PathBuf, &Manifest)]) -> Vec<String> {
    manifests
        .iter()
        .filter(|(_, m)| !m.complete)
        .map(|(file, _)| format!("{} is not complete (complete: false)", file.display()))
        .collect()
}

/// The diff in the chosen format (`--json` wins over `--format`).
fn render(
    a: &AuditDiffArgs,
    d: &AuditDiff,
    inputs: &Inputs,
    mode: Mode,
    tally: &Redactions,
) -> anyhow::Result<Vec<u8>> {
    let format = match (a.json, a.format) {
        (true, _) => DiffFormat::Json,
        (false, f) => f.unwrap_or(DiffFormat::Md),
    };
    Ok(match format {
        DiffFormat::Json => d.json_bytes(
            inputs.incomplete,
            crate::report::redacted::json_member(mode, tally),
        ),
        DiffFormat::Md => {
            crate::report::redacted::into_markdown(render_markdown(d, inputs), mode, tally)
                .into_bytes()
        }
        DiffFormat::Html => crate::report::redacted::into_html(
            crate::report::html::render_diff_html(d, inputs),
            mode,
            tally,
        )
        .into_bytes(),
    })
}

/// `--junit`: one testcase per session, a failure for each regression.
fn junit_xml(d: &AuditDiff, mode: Mode, tally: &Redactions) -> String {
    let cases: Vec<crate::report::junit::Case> = d
        .sessions
        .iter()
        .map(|x| {
            let side = x.new.as_ref().or(x.old.as_ref());
            crate::report::junit::Case {
                classname: side.map(|s| s.profile.clone()).unwrap_or_default(),
                name: x.file_id.clone(),
                failure: x.regressed().then(|| match &x.new {
                    None => (
                        "disappeared".to_string(),
                        "regressed: verified in OLD, gone from NEW".to_string(),
                    ),
                    Some(n) => (
                        n.outcome.as_str().to_string(),
                        format!(
                            "regressed: verified in OLD, {} in NEW ({})",
                            n.outcome.as_str(),
                            n.reason.as_deref().unwrap_or("no reason given")
                        ),
                    ),
                }),
            }
        })
        .collect();
    crate::report::junit::render_with(
        "agy-audit audit-diff",
        "audit-diff",
        &crate::report::redacted::junit_properties(mode, tally),
        &cases,
    )
}

/// The one line on standard error: the counts and what was written.
fn summary(a: &AuditDiffArgs, d: &AuditDiff) {
    let counts: Vec<String> = d
        .counts
        .iter()
        .map(|(c, n)| format!("{}={n}", c.id()))
        .collect();
    crate::note!(
        "audit-diff: {} sessions: {}; regressed={}{}",
        d.sessions.len(),
        counts.join(" "),
        d.regressed,
        a.out
            .as_ref()
            .map(|o| format!("; wrote {}", o.display()))
            .unwrap_or_default()
    );
}
