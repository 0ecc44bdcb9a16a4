//! `agy-audit export-check`: offline exports against a sweep's saved daemon
//! answers (the specification's opt-in `TestExportOfflineCorpus`, as a
//! command).

use super::common::DecodeArgs;
use crate::export::{daemon_json, export_json, render_markdown};
use crate::rpc::TrajectoryResponse;
use crate::source::{read_source, ReadOptions};
use crate::verdict::exit;
use anyhow::Context;
use clap::Args;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Compare each verified session's offline export with the daemon answer the
/// sweep saved: the source's profile and digest must be the manifest's; the
/// exported JSON, without reader provenance (agyReader) and with an omitted
/// empty steps list made explicit, must denote the same trajectory as the
/// saved ordinary answer (values under the proto3 JSON mapping, so any legal
/// spelling of the answer compares equal); and the Markdown transcript
/// rendered from the saved answer must equal the offline one (both under
/// the same notice). Every difference is listed.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit codes: 0 every export equals its saved answer, 1 an error (a missing source or answer, a manifest that is not complete), 2 usage, 4 a difference."
)]
pub struct ExportCheckArgs {
    /// The sweep's manifest.json (its corpus/ folder beside it holds the
    /// saved answers).
    pub manifest: PathBuf,
    /// Store root holding the sources (default: the manifest's root).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    #[command(flatten)]
    pub decode: DecodeArgs,
}

/// The first differing line of two texts, one-based, with both lines.
fn first_line_difference(a: &str, b: &str) -> Option<String> {
    let (mut la, mut lb) = (a.lines(), b.lines());
    let mut n = 0;
    loop {
        n += 1;
        match (la.next(), lb.next()) {
            (None, None) => return None,
            (x, y) if x == y => continue,
            (x, y) => {
                let show = |l: Option<&str>| {
                    l.map_or_else(
                        || "(end)".to_string(),
                        |l| format!("{:?}", l.chars().take(100).collect::<String>()),
                    )
                };
                return Some(format!(
                    "markdown line {n}: offline {}, from the answer {}",
                    show(x),
                    show(y)
                ));
            }
        }
    }
}

/// `v` without `agyReader` and with `steps` explicit.
fn comparable(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove(crate::attest::NAMESPACE);
        o.entry("steps").or_insert_with(|| Value::Array(Vec::new()));
    }
    v
}

pub fn run(mut a: ExportCheckArgs) -> anyhow::Result<i32> {
    // A sweep folder names its manifest.json: from here on, the file.
    let (manifest_file, m) = crate::manifest::read::read(&a.manifest)?;
    a.manifest = manifest_file;
    if !m.complete {
        crate::note!(
            "export-check: {}: refused: the manifest is not complete; finish it with `agy-audit audit-sweep --resume` first",
            a.manifest.display()
        );
        return Ok(exit::ERROR);
    }
    let (schema, key) = a.decode.load()?;
    let root = a.root.clone().unwrap_or_else(|| PathBuf::from(&m.root));
    let corpus = a
        .manifest
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join("corpus");
    let opts = ReadOptions {
        schema: &schema,
        legacy_key: &key,
        collect_all: false,
        fingerprint: false,
    };
    let notice = super::export_cmd::OFFLINE_NOTICE;
    let (mut same, mut differ, mut errors, mut skipped) = (0usize, 0usize, 0usize, 0usize);
    for s in &m.sessions {
        if !matches!(s.verdict_str(), "verified" | "verified-source-only") {
            skipped += 1;
            continue;
        }
        let path = s.source_path(&root);
        let answer_path = corpus.join(format!("{}.ordinary.json", s.file_id));
        match check_one(&schema, &opts, &path, &answer_path, s, notice) {
            Ok((diffs, form)) if diffs.is_empty() => {
                same += 1;
                match form {
                    Some(alt) => outln!(
                        "SAME {} ({}; compared in that form)",
                        s.file_id,
                        alt.describe()
                    ),
                    None => outln!("SAME {}", s.file_id),
                }
            }
            Ok((diffs, _)) => {
                differ += 1;
                outln!("DIFFERS {}: {}", s.file_id, diffs.join("; "));
            }
            Err(e) => {
                errors += 1;
                outln!("ERROR {}: {}", s.file_id, super::errors::chain_text(&e));
            }
        }
    }
    outln!(
        "export-check: sessions={} same={same} differ={differ} error={errors} notVerified={skipped}",
        m.sessions.len()
    );
    Ok(if errors > 0 {
        exit::ERROR
    } else if differ > 0 {
        exit::INCOMPLETE
    } else {
        exit::OK
    })
}

/// The differences of one session's offline export from its saved answer.
fn check_one(
    schema: &crate::schema::Schema,
    opts: &ReadOptions<'_>,
    path: &Path,
    answer_path: &Path,
    s: &crate::manifest::SessionRecord,
    notice: &str,
) -> anyhow::Result<(Vec<String>, Option<crate::project::Alternative>)> {
    let mut diffs = Vec::new();
    let mut src = read_source(path, opts).with_context(|| format!("reading {}", path.display()))?;
    if src.profile != s.profile {
        diffs.push(format!("profile {} (manifest {})", src.profile, s.profile));
    }
    if src.source_digest != s.source_digest {
        diffs.push(format!(
            "source digest {} (manifest {})",
            src.source_digest, s.source_digest
        ));
    }
    let mut projection = match (src.qualified(), &src.wire) {
        (true, Some(w)) => crate::project::project(schema, w)
            .map_err(|r| anyhow::anyhow!("{}: {}", path.display(), r.to_refusal()))?,
        _ => anyhow::bail!("{}: no longer qualifies offline", path.display()),
    };
    src.materialize();
    let body = std::fs::read(answer_path)
        .with_context(|| format!("reading the saved answer {}", answer_path.display()))?;
    let answer = TrajectoryResponse::parse_captured(body)
        .map_err(|d| anyhow::anyhow!("{}: {d}", answer_path.display()))?;
    let answer_text = match crate::compare::parse_value(answer.trajectory()) {
        Ok(v) => comparable(v).to_string(),
        Err(e) => anyhow::bail!("{}: {e}", answer_path.display()),
    };
    // Values, not text: the export as a message, the answer compared with
    // it under the proto3 JSON mapping (any member the schema does not know
    // is a difference here: the offline export cannot hold it).
    let export_of = |src: &crate::source::DecodedSource,
                     projection: &crate::project::Projection|
     -> anyhow::Result<(Value, Vec<String>)> {
        let ordinary = src.trajectory.as_ref().map(|t| projection.ordinary(t));
        let exported = export_json(src, ordinary.as_ref())
            .ok_or_else(|| anyhow::anyhow!("{}: the source does not decode", path.display()))?;
        let exported = comparable(exported);
        let expected =
            crate::compare::parse_strict(schema, &exported.to_string()).map_err(|e| {
                anyhow::anyhow!("{}: the export does not parse back: {e}", path.display())
            })?;
        let d = crate::compare::value::diff_text(
            &expected,
            &answer_text,
            crate::compare::MAX_REPORTED_PATHS,
        );
        Ok((exported, d))
    };
    // The export keeps each stored WaitMsBeforeAsync (replay147's copied
    // form, "Offline export uses the form that preserves stored waits"); an
    // answer in the other complete form (waits omitted throughout) is
    // compared with the export in that form, and the line says so.
    let (mut exported, mut json_diffs) = export_of(&src, &projection)?;
    let mut form = None;
    if !json_diffs.is_empty() {
        for i in 0..projection.alternatives().len() {
            let Some(tried) = projection.with_alternative(i, |p| export_of(&src, p)) else {
                continue;
            };
            let (other, d) = tried?;
            if d.is_empty() {
                form = Some(projection.alternatives()[i].kind);
                exported = other;
                json_diffs = d;
                break;
            }
        }
    }
    diffs.extend(json_diffs.into_iter().map(|d| format!("json {d}")));
    // The transcript rendered from the answer (normalized to the daemon's
    // canonical spelling, maps in the export's order) against the offline one.
    let offline_md = render_markdown(&exported, notice);
    match crate::compare::parse_strict(schema, &answer_text) {
        Ok(msg) => {
            let from_answer = render_markdown(&comparable(daemon_json(&msg)), notice);
            diffs.extend(first_line_difference(&offline_md, &from_answer));
        }
        Err(e) => diffs.push(format!("markdown: the answer does not parse strictly: {e}")),
    }
    Ok((diffs, form))
}
