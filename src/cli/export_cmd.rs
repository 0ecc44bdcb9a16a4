//! `agy-audit export-offline`: export one source without a daemon.

use super::common::{DecodeArgs, RootsArg};
use crate::export::offline_export;
use crate::source::{sqlite::companions, ReadOptions};
use crate::util::atomic::{write_file, WriteOptions};
use crate::verdict::exit;
use anyhow::Context;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    Json,
    Md,
}

/// Export one conversation from its stored source alone (no daemon, no attestation).
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// A .db/.pb path (an X.pb whose X.db exists means the .db: SQLite
    /// wins), or a conversation id, looked up in the --root roots in order,
    /// else in the default roots (the CLI's, then the IDE's).
    pub source: String,
    #[command(flatten)]
    pub root: RootsArg,
    /// Output format: daemon-style proto3 JSON, or a Markdown transcript.
    #[arg(long, value_enum, default_value = "json")]
    pub format: ExportFormat,
    /// Output file (default: standard output). Written atomically; never the
    /// source or its -wal/-shm; never through a symlink.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace an existing output file.
    #[arg(long)]
    pub force: bool,
    /// Export a source refused as unknown anyway, marked incomplete, listing
    /// every unknown field's path and raw bytes under agyReader.unknownFields.
    #[arg(long)]
    pub allow_unknown: bool,
    /// Print one JSON object on standard output instead of the export: the
    /// source's verdict and the notes (also said on standard error), with
    /// the export written to --out, or embedded as "export" without --out:
    /// {"source", "fileId", "sourceFormat", "profile", "sourceDigest",
    /// "steps", "verdict" ("qualified" or "unknown"; offline, never
    /// "verified"), "reason" ({"class", "location", "detail"} or null),
    /// "exported", "exportFormat", "out", "bytes", "export", "notes",
    /// "exitCode"} (see README, "Machine-readable summaries").
    #[arg(long)]
    pub json: bool,
    /// Redact credentials in the export (opt-in: an export is made for
    /// fidelity, so by default its bytes are the conversation's): each
    /// match of the ruleset (gitleaks rule ids, plus url-password) becomes
    /// `[REDACTED:<rule id>]` inside the JSON strings or the Markdown text;
    /// how many and by which rules is said on standard error (and as
    /// "redaction" with --json). A redacted export no longer matches the
    /// daemon's answer (export-check compares unredacted exports).
    #[arg(long)]
    pub redact: bool,
    /// Do not follow subagent links. By default the export reads the parent
    /// links of the known roots (the source's root and the CLI and IDE roots
    /// under HOME that exist): agyReader.parentCascadeId comes from the
    /// conversation's own parentConversationId or from a parent's
    /// INVOKE_SUBAGENT results, parent-link diagnostics (unreadable-sidecar,
    /// invalid-cascade-id, invalid-parent-stamp, parent-cycle, missing-parent,
    /// conflicting-evidence) are reported on stderr, and --format md nests each
    /// child's transcript under the INVOKE_SUBAGENT step that invoked it when
    /// a known root holds the child (cycles are reported, never followed).
    #[arg(long)]
    pub no_tree: bool,
    #[command(flatten)]
    pub decode: DecodeArgs,
}

/// Says how many frames of the source's `-wal` SQLite ignores (past the
/// last commit: an unfinished transaction, a torn write, stale frames), so a
/// log cut short is never a silent gap. A log the checksums prove damaged
/// was already refused by the reader. Returns the note it said.
fn report_wal_tail(db: &std::path::Path) -> Option<String> {
    let [wal, _, _] = companions(db);
    if crate::source::Format::of(db) != Some(crate::source::Format::Sqlite) {
        return None;
    }
    // the database's header (its page size) and the log read frame by
    // frame: neither is held whole
    use crate::util::bounded::{open_plain, InputKind};
    let (main, _) = open_plain(db, InputKind::Conversation).ok()?;
    let (log, _) = open_plain(&wal, InputKind::Wal).ok()?;
    let mut header = [0u8; 100];
    crate::source::wal::LogBytes::read_at(&main, 0, &mut header).ok()?;
    let t = crate::source::wal::tail_of(crate::source::wal::page_size(&header), &log).ok()??;
    if t.ignored() == 0 && t.torn_bytes == 0 {
        return None;
    }
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let mut parts = Vec::new();
    if t.uncommitted > 0 {
        parts.push(format!(
            "{} uncommitted frame{}",
            t.uncommitted,
            plural(t.uncommitted)
        ));
    }
    if t.invalid > 0 {
        parts.push(format!(
            "{} frame{} past the first invalid one",
            t.invalid,
            plural(t.invalid)
        ));
    }
    if t.torn_bytes > 0 {
        parts.push(format!("a torn last frame ({} bytes)", t.torn_bytes));
    }
    let note = format!(
        "agy-audit export-offline: note: {}: {} frame{} ignored, as SQLite ignores them ({}); the export holds the last committed state",
        wal.display(),
        t.ignored(),
        plural(t.ignored()),
        parts.join(", ")
    );
    crate::note!("{note}");
    Some(note)
}

pub fn run(a: ExportArgs) -> anyhow::Result<i32> {
    let (schema, key) = a.decode.load_inspect()?;
    let located = a.root.locate(&a.source, "export-offline")?;
    let path = located.path;
    let mut known: Vec<PathBuf> = located.root.iter().map(|r| r.path.clone()).collect();
    known.extend(a.root.roots.iter().cloned());
    let opts = ReadOptions {
        schema: &schema,
        legacy_key: &key,
        collect_all: a.allow_unknown,
        fingerprint: false,
    };
    let crate::export::OfflineExport {
        source: src, json, ..
    } = offline_export(&path, &opts).with_context(|| format!("reading {}", path.display()))?;
    // every note said on standard error, kept for --json
    let mut notes = Notes(report_wal_tail(&path).into_iter().collect());
    let code = if src.qualified() {
        exit::OK
    } else {
        exit::UNKNOWN
    };
    let Some(mut json) = exportable(&a, &path, &src, json, &mut notes) else {
        if a.json {
            print_json(&a, &src, None, notes.0, code, None)?;
        }
        return Ok(code);
    };
    let tree = (!a.no_tree).then(|| Tree::scan(&path, &known, &mut json));
    let mut tally = crate::redact::Redactions::default();
    let bytes = render(&a, &src, json, tree.as_ref(), &opts, &mut tally)?;
    if a.redact {
        notes.say(redaction_note(&tally));
    }
    match &a.out {
        Some(out) => write_out(&a, &path, out, &bytes, &mut notes)?,
        None if a.json => {}
        None => crate::util::term::out(&bytes),
    }
    if a.json {
        let redaction = a.redact.then_some(&tally);
        print_json(&a, &src, Some(&bytes), notes.0, code, redaction)?;
    }
    Ok(code)
}

/// `--out FILE`: the export written atomically (mode 0600), never over
/// the source, its companions or a decode input.
fn write_out(
    a: &ExportArgs,
    path: &std::path::Path,
    out: &std::path::Path,
    bytes: &[u8],
    notes: &mut Notes,
) -> anyhow::Result<()> {
    let mut protected = vec![path.to_path_buf()];
    protected.extend(companions(path));
    protected.extend(a.decode.inputs());
    let wo = WriteOptions {
        force: a.force,
        mode: Some(0o600),
        protected,
    };
    write_file(out, bytes, &wo)?;
    notes.say(format!("wrote {} ({} bytes)", out.display(), bytes.len()));
    Ok(())
}

/// The notes said on standard error, kept for `--json`.
struct Notes(Vec<String>);

impl Notes {
    fn say(&mut self, n: String) {
        crate::note!("{n}");
        self.0.push(n);
    }
}

/// What there is to export: the source's JSON, unless it is refused as
/// unknown (without `--allow-unknown`) or does not decode, each said.
fn exportable(
    a: &ExportArgs,
    path: &std::path::Path,
    src: &crate::source::DecodedSource,
    json: Option<serde_json::Value>,
    notes: &mut Notes,
) -> Option<serde_json::Value> {
    if let Some(r) = src.reason() {
        notes.say(format!(
            "agy-audit: unknown: {}: {r} [{}]",
            path.display(),
            r.class
        ));
        if !a.allow_unknown {
            notes.say(
                "agy-audit: nothing exported (use --allow-unknown to export it marked incomplete)"
                    .to_string(),
            );
            return None;
        }
    } else if json.is_none() {
        notes.say(format!(
            "agy-audit: {}: the source does not decode; nothing to export",
            path.display()
        ));
    }
    json
}

/// The export's bytes in `--format`, with the parent links of `tree`
/// reported (and, in Markdown, its children nested), redacted with
/// `--redact` (counted in `tally`).
fn render(
    a: &ExportArgs,
    src: &crate::source::DecodedSource,
    mut json: serde_json::Value,
    tree: Option<&Tree>,
    opts: &ReadOptions,
    tally: &mut crate::redact::Redactions,
) -> anyhow::Result<Vec<u8>> {
    Ok(match a.format {
        ExportFormat::Json => {
            if let Some(t) = tree {
                report_links(&t.index, &[]);
            }
            if a.redact {
                redact_strings(&mut json, tally);
            }
            let mut b = serde_json::to_vec_pretty(&json)?;
            b.push(b'\n');
            b
        }
        ExportFormat::Md => {
            let notice = crate::export::offline_notice(src);
            let mut text = match tree {
                Some(t) => nested(a, &json, &notice, t, opts),
                None => crate::export::offline_markdown(src, &json),
            };
            // the Markdown text whole, before anything is written
            if a.redact {
                tally.apply_owned(&mut text);
            }
            text.into_bytes()
        }
    })
}

/// `--format md` with the children the known roots hold nested under the
/// steps that invoked them, the parent-link diagnostics reported.
fn nested(
    a: &ExportArgs,
    json: &serde_json::Value,
    notice: &str,
    t: &Tree,
    opts: &ReadOptions,
) -> String {
    let mut index = t.index.clone();
    let (md, nested) = crate::tree::nested_markdown(
        json,
        notice,
        &t.id,
        &t.roots,
        opts,
        a.allow_unknown,
        &mut index,
    );
    report_links(&index, &nested.diagnostics);
    if !nested.shown.is_empty() {
        crate::note!(
            "agy-audit export-offline: nested {} subagent conversation{}",
            nested.shown.len(),
            if nested.shown.len() == 1 { "" } else { "s" }
        );
    }
    md
}

/// What `--redact` says it redacted.
fn redaction_note(tally: &crate::redact::Redactions) -> String {
    format!(
        "redacted {} value{} ({}; ruleset {})",
        tally.total(),
        if tally.total() == 1 { "" } else { "s" },
        if tally.total() == 0 {
            "none found".to_string()
        } else {
            tally.rules_text()
        },
        crate::redact::RULESET_VERSION
    )
}

/// Every string of `v` through the redactor (keys are field names, not
/// conversation text), counted in `tally`: the JSON stays JSON.
fn redact_strings(v: &mut serde_json::Value, tally: &mut crate::redact::Redactions) {
    match v {
        serde_json::Value::String(s) => tally.apply_owned(s),
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| redact_strings(x, tally)),
        serde_json::Value::Object(o) => o.values_mut().for_each(|x| redact_strings(x, tally)),
        _ => {}
    }
}

/// `export-offline --json`: the source's verdict, what was exported and the
/// notes, as one object on standard output. `verdict` is `qualified` (this
/// reader decodes and projects the source) or `unknown`: an offline export
/// is never compared with the daemon, so never `verified`. `export` embeds
/// the export (the JSON document, or the Markdown text) when there is no
/// `--out`; it is null otherwise and when nothing was exported.
fn print_json(
    a: &ExportArgs,
    src: &crate::source::DecodedSource,
    exported: Option<&[u8]>,
    notes: Vec<String>,
    code: i32,
    redaction: Option<&crate::redact::Redactions>,
) -> anyhow::Result<()> {
    let export = match (exported, &a.out) {
        (Some(b), None) => match a.format {
            ExportFormat::Json => serde_json::from_slice(b)?,
            ExportFormat::Md => serde_json::Value::String(String::from_utf8_lossy(b).into_owned()),
        },
        _ => serde_json::Value::Null,
    };
    let doc = serde_json::json!({
        "source": src.path.display().to_string(),
        "fileId": src.file_id,
        "sourceFormat": src.format.as_str(),
        "profile": src.profile,
        "sourceDigest": src.source_digest,
        "steps": src.steps,
        "verdict": if src.qualified() { "qualified" } else { "unknown" },
        "reason": src.reason().map(|r| serde_json::json!({
            "class": r.class.to_string(),
            "location": r.location,
            "detail": r.detail,
        })),
        "exported": exported.is_some(),
        "exportFormat": match a.format { ExportFormat::Json => "json", ExportFormat::Md => "md" },
        "out": exported.and(a.out.as_ref()).map(|p| p.display().to_string()),
        "bytes": exported.map(<[u8]>::len),
        "export": export,
        "notes": notes,
        "redaction": redaction.map(crate::redact::Redactions::to_json),
        "exitCode": code,
    });
    outln!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}

/// The parent links an export follows: the known roots, the index over
/// them (this conversation's source observed) and the conversation's id.
struct Tree {
    roots: Vec<PathBuf>,
    index: crate::tree::ParentIndex,
    id: String,
}

impl Tree {
    /// Scans the known roots (the source's root, `root`, then the default
    /// CLI and IDE roots that exist) and sets `agyReader.parentCascadeId`
    /// of `json` to the parent the links choose: the conversation's own
    /// metadata or a parent's INVOKE_SUBAGENT results; none on a cycle or
    /// conflicting evidence (the stricter reading: a link the evidence does
    /// not settle is never stamped).
    fn scan(path: &std::path::Path, given: &[PathBuf], json: &mut serde_json::Value) -> Tree {
        use crate::tree::links::{self, NAMESPACE, PARENT_STAMP};
        let mut roots: Vec<PathBuf> = Vec::new();
        let defaults = crate::roots::select(&[])
            .map(|s| s.roots.into_iter().map(|r| r.path).collect::<Vec<_>>())
            .unwrap_or_default();
        let own = crate::tree::nest::root_of(path);
        for r in own.into_iter().chain(given.iter().cloned()).chain(defaults) {
            let same = |x: &PathBuf| {
                x == &r
                    || matches!((std::fs::canonicalize(x), std::fs::canonicalize(&r)), (Ok(a), Ok(b)) if a == b)
            };
            if !roots.iter().any(same) {
                roots.push(r);
            }
        }
        let mut index = crate::tree::ParentIndex::scan(&roots);
        let id = match links::cascade_id(json) {
            links::Named::Id(id) => id,
            _ => path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_ascii_lowercase(),
        };
        let own_root = crate::tree::nest::root_of(path)
            .or_else(|| given.first().cloned())
            .unwrap_or_default();
        index.observe(&id, &own_root, json);
        if let Some(reader) = json.get_mut(NAMESPACE).and_then(|r| r.as_object_mut()) {
            match index.parent(&id) {
                Some(p) => {
                    reader.insert(
                        PARENT_STAMP.into(),
                        serde_json::Value::String(p.to_string()),
                    );
                }
                None => {
                    reader.remove(PARENT_STAMP);
                }
            }
        }
        Tree { roots, index, id }
    }
}

/// Reports the parent-link diagnostics of the known roots, then those the
/// nesting found, one line each on stderr.
fn report_links(index: &crate::tree::ParentIndex, more: &[crate::tree::Diagnostic]) {
    let mut seen = std::collections::BTreeSet::new();
    for d in index.diagnostics().into_iter().chain(more) {
        let line = d.to_string();
        if seen.insert(line.clone()) {
            crate::note!("agy-audit export-offline: parent-link: {line}");
        }
    }
}
