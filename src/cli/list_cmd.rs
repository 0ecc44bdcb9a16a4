//! `agy-audit list`: the conversations of every root, newest first.

use crate::report::escape::terminal;
use crate::roots::{select, Root};
use crate::source::Format;
use clap::Args;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// List the conversations of every root (newest first): surface, format,
/// size, step count (SQLite: the steps table's rows, counted from its b-tree
/// pages without reading the trajectory; legacy: with --check, after
/// decryption), the state its sidecar records, and the title agy stored
/// (the root's conversation_summaries.db), if any. Beside the default roots,
/// also the conversations of the store folders other tools read
/// (~/.gemini/antigravity-backup, ~/.gemini/antigravity-ide,
/// $ANTIGRAVITY_APP_DATA_DIR, the desktop app's data folder, e.g.
/// ~/.config/Antigravity), each named with what it is (its surface, or
/// "unknown surface") and never written; a backup's conversation is shown
/// as a copy of the live root's. Audit one with `audit-sweep --root DIR`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// A store root (repeatable, used in order). Without it: every default
    /// root that exists (~/.gemini/antigravity-cli, the CLI's, and
    /// ~/.gemini/antigravity, the IDE's; a missing one is reported on
    /// stderr), or the one $ANTIGRAVITY_CLI_ROOT pins. A --root that names
    /// no folder is a usage error.
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Also list implicit/ trajectories (not conversations).
    #[arg(long)]
    pub include_implicit: bool,
    /// Recheck each attestation against its source (profile, source and
    /// payload digests, never mtime; reads every source whole) and show a
    /// stale one as `stale (<recorded state>)`; legacy step counts too
    /// (after decryption). Also name the store's troubles, read-only (no
    /// -shm or -journal is ever created), none changing a verdict: a
    /// conversation missing from the root's conversation_summaries.db ("not
    /// indexed") and index entries without a file; steps left RUNNING or
    /// WAITING in a conversation no process holds a lock on and unchanged
    /// for 10 minutes ("zombie steps"); a database SQLite reports
    /// malformed (never repair it in place; audit a copy made with
    /// sqlite3's .recover); a conversation over 100 MB, with the member
    /// kinds holding the most bytes.
    #[arg(long)]
    pub check: bool,
    /// One JSON object a line: id, root, surface, format, path, size,
    /// steps (null when not counted), modified (Unix seconds), sidecar,
    /// title (null when none is stored), implicit, and with --check fresh
    /// and troubles ({"notIndexed", "inFlight": {"running", "waiting",
    /// "activity": idle|locked|recent|unknown, "quietSeconds"}, "malformed",
    /// "oversized": {"bytes", "largest"}}); a conversation of a store
    /// folder besides the roots adds store (its kind) and copyOf (the live
    /// root holding the same id, or null). With --check, troubles also
    /// holds "index": {"state": absent|read|malformed|unreadable,
    /// "withoutFile": the count of the root's index entries without a file,
    /// which the text output and doctor --json list}.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub decode: super::common::DecodeArgs,
}

/// One listed source.
#[derive(Debug, serde::Serialize)]
struct Row {
    id: String,
    root: String,
    surface: &'static str,
    format: &'static str,
    path: String,
    size: u64,
    steps: Option<u64>,
    modified: u64,
    /// verified, verified-source-only, unknown, incomplete or none.
    sidecar: &'static str,
    /// The title agy stored for it (the root's conversation_summaries.db),
    /// null when none is stored.
    title: Option<String>,
    /// With --check: whether the attestation still matches its source
    /// (null without --check or without an attestation).
    #[serde(skip_serializing_if = "Option::is_none")]
    fresh: Option<bool>,
    implicit: bool,
    /// A store folder besides the roots ([`crate::store_folders`]): its
    /// kind (backup, ide-channel, app-data-env, app-data); absent for a
    /// root's conversation.
    #[serde(skip_serializing_if = "Option::is_none")]
    store: Option<&'static str>,
    /// In such a folder: the live root holding the same id (this one is
    /// its copy); null when no live root does.
    #[serde(rename = "copyOf", skip_serializing_if = "Option::is_none")]
    copy_of: Option<Option<String>>,
    /// With --check: the store's troubles for it ([`crate::troubles`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    troubles: Option<serde_json::Value>,
    /// The text lines naming those troubles.
    #[serde(skip)]
    trouble_lines: Vec<String>,
}

fn mtime(p: &Path) -> u64 {
    std::fs::metadata(p)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs())
}

/// The `steps` rows of a `.db`, from an in-memory snapshot (the source is
/// read whole as plain files, its `-wal` replayed; nothing is written beside
/// it): only with `--check`, for a source whose pages
/// [`crate::source::step_count::steps`] would not count.
fn sqlite_steps(db: &Path) -> Option<u64> {
    let snap = crate::source::sqlite::snapshot(db).ok()?;
    snap.conn()
        .query_row("SELECT count(*) FROM steps", [], |r| r.get::<_, i64>(0))
        .ok()
        .and_then(|n| u64::try_from(n).ok())
}

/// The most bytes list reads a sidecar at: list has no response cap of its
/// own, so the default one's sidecar cap.
fn sidecar_cap() -> u64 {
    crate::attest::cache::sidecar_cap(crate::rpc::DEFAULT_MAX_BODY)
}

/// The verdict a sidecar records; `not a sidecar` when what sits at the
/// sidecar path cannot be read as one at all (a FIFO, a link, a file past
/// the sidecar cap: left alone, as watch and sync leave it); or `none` (no
/// sidecar, or nothing there that is this reader family's own sidecar for
/// the conversation `id`: the ownership half of the one rule every command
/// applies, [`crate::attest::cache::attested_at`], which reads the bytes
/// strictly).
fn sidecar_state(source: &Path, id: &str) -> &'static str {
    let side = crate::attest::cache::sidecar_path(source);
    match crate::attest::cache::attested_at(&side, id, sidecar_cap()) {
        Some(s) => s.completeness.verdict.as_str(),
        None => unattested_state(&side),
    }
}

/// [`sidecar_state`] of a sidecar path holding no attestation of ours.
fn unattested_state(side: &Path) -> &'static str {
    if crate::attest::cache::unreadable_at(side, sidecar_cap()).is_some() {
        NOT_A_SIDECAR
    } else {
        "none"
    }
}

/// The state of a sidecar path whose file cannot be read as a sidecar.
const NOT_A_SIDECAR: &str = "not a sidecar";

/// The titles agy stored for a root's conversations: the `title` column of
/// `<root>/conversation_summaries.db`'s `conversation_summaries` table (the
/// summaries index agy keeps beside `conversations/`; it lags the folder, so
/// a conversation may have none). Read once per root from an in-memory
/// snapshot (nothing written beside it); a missing or unreadable index, or
/// an empty title, gives no title.
fn titles(root: &Path) -> BTreeMap<String, String> {
    let db = root.join(SUMMARIES_DB);
    let mut out = BTreeMap::new();
    if !db.is_file() {
        return out;
    }
    let Ok(snap) = crate::source::sqlite::snapshot(&db) else {
        return out;
    };
    let Ok(mut stmt) = snap
        .conn()
        .prepare("SELECT conversation_id, title FROM conversation_summaries")
    else {
        return out;
    };
    let Ok(rows) = stmt.query_map([], |r| {
        Ok((
            r.get::<_, Option<String>>(0)?,
            r.get::<_, Option<String>>(1)?,
        ))
    }) else {
        return out;
    };
    for (id, title) in rows.flatten() {
        if let (Some(id), Some(t)) = (id, title.filter(|t| !t.trim().is_empty())) {
            out.insert(id, t);
        }
    }
    out
}

/// agy's conversation summaries index, in a root.
const SUMMARIES_DB: &str = "conversation_summaries.db";

fn rows_of(
    root: &Root,
    include_implicit: bool,
    check: Option<&crate::pipeline::AuditContext>,
) -> anyhow::Result<Vec<Row>> {
    let d = crate::discover::discover(&root.path)?;
    let titles = titles(&root.path);
    // evidence under a stored agy set is rechecked with that set
    let rechecks = check.map(|ctx| crate::installed::Rechecks::new(ctx.schema));
    let mut rows = Vec::new();
    for s in d.sources {
        let wal = crate::source::sqlite::companions(&s.path)[0].clone();
        let modified = mtime(&s.path).max(mtime(&wal));
        let size = std::fs::metadata(&s.path).map_or(0, |m| m.len())
            + std::fs::metadata(&wal).map_or(0, |m| m.len());
        let mut steps = match s.format {
            // from the steps table's b-tree pages, never the trajectory
            Format::Sqlite => crate::source::step_count::steps(&s.path)
                .or_else(|| check.and_then(|_| sqlite_steps(&s.path))),
            // legacy: counted only after decryption (--check)
            Format::Protobuf => None,
        };
        let mut fresh = None;
        let mut sidecar = None;
        if let (Some(ctx), Some(rechecks)) = (check, &rechecks) {
            let side = crate::attest::cache::sidecar_path(&s.path);
            // a SQLite source without anything at its sidecar path is not
            // read whole (its step count came from the b-tree pages)
            if s.format == Format::Protobuf || std::fs::symlink_metadata(&side).is_ok() {
                let c = crate::sidecars::check(ctx, rechecks, &s.path, &s.id);
                if let Some(m) = &c.missing_set {
                    crate::note!("list: {}: {m}", s.path.display());
                }
                if let Some(saved) = &c.saved {
                    fresh = Some(c.fresh);
                    sidecar = Some(saved.completeness.verdict.as_str());
                } else {
                    sidecar = Some(unattested_state(&side));
                }
                steps = steps.or(c.steps.map(|n| n as u64));
            }
        }
        rows.push(Row {
            fresh,
            sidecar: sidecar.unwrap_or_else(|| sidecar_state(&s.path, &s.id)),
            title: titles.get(&s.id).cloned(),
            id: s.id,
            root: root.path.display().to_string(),
            surface: root.surface.as_str(),
            format: format_name(s.format),
            path: s.path.display().to_string(),
            size,
            steps,
            modified,
            implicit: false,
            store: None,
            copy_of: None,
            troubles: None,
            trouble_lines: Vec::new(),
        });
    }
    let implicit = root.path.join("implicit");
    if include_implicit && implicit.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&implicit)
            .map_err(|e| crate::Error::io(&implicit, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("pb"))
            .collect();
        entries.sort();
        for p in entries {
            let id = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            rows.push(Row {
                fresh: None,
                sidecar: "none",
                title: titles.get(&id).cloned(),
                id,
                root: root.path.display().to_string(),
                surface: root.surface.as_str(),
                format: "protobuf",
                size: std::fs::metadata(&p).map_or(0, |m| m.len()),
                modified: mtime(&p),
                path: p.display().to_string(),
                steps: None,
                implicit: true,
                store: None,
                copy_of: None,
                troubles: None,
                trouble_lines: Vec::new(),
            });
        }
    }
    Ok(rows)
}

/// A title on one line, at most 80 characters (the JSON keeps it whole).
fn one_line(t: &str) -> String {
    let flat: String = t
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut out: String = flat.chars().take(80).collect();
    if flat.chars().count() > 80 {
        out.push('…');
    }
    out
}

fn format_name(f: Format) -> &'static str {
    match f {
        Format::Sqlite => "sqlite",
        Format::Protobuf => "protobuf",
    }
}

/// The store's troubles ([`crate::troubles`]) for the rows of `root`,
/// attached to each: a JSON state (every row under --check) and text lines;
/// returns the root's summaries index state.
fn troubles_of(
    rows: &mut [Row],
    root: &Root,
    ctx: &crate::pipeline::AuditContext,
    locks: Option<&crate::troubles::LockTable>,
) -> anyhow::Result<(String, crate::troubles::IndexState)> {
    let t = crate::troubles::probe(root, ctx.schema, locks)?;
    // the root's index, on each of its rows (one kind of line in --json)
    let index = serde_json::to_value(&t.index)?;
    let index = serde_json::json!({
        "state": index["state"],
        "withoutFile": t.without_file().len(),
    });
    for row in rows.iter_mut().filter(|r| !r.implicit) {
        let mut v = match t.of(&row.id) {
            Some(c) => serde_json::to_value(c)?,
            None => serde_json::json!({"notIndexed": false}),
        };
        if let Some(o) = v.as_object_mut() {
            o.remove("id");
            o.remove("path");
            o.insert("index".into(), index.clone());
        }
        row.troubles = Some(v);
        let Some(c) = t.of(&row.id) else {
            continue;
        };
        row.trouble_lines = crate::troubles::conversation_lines(c);
    }
    Ok((root.path.display().to_string(), t.index))
}

/// Runs `agy-audit list`.
pub fn run(a: ListArgs) -> anyhow::Result<i32> {
    let sel = select(&a.roots)?;
    let decoded = if a.check {
        Some(a.decode.load()?)
    } else {
        None
    };
    let ctx = decoded
        .as_ref()
        .map(|(schema, key)| crate::pipeline::AuditContext::offline(schema, key));
    for m in &sel.missing {
        crate::note!(
            "list: default root {} does not exist (skipped)",
            m.display()
        );
    }
    let (mut rows, indexes) = collect(&a, &sel, ctx.as_ref())?;
    // newest first; ties in root order, then by id (deterministic)
    rows.sort_by(|x, y| y.modified.cmp(&x.modified).then(x.id.cmp(&y.id)));
    for r in &rows {
        if a.json {
            outln!("{}", serde_json::to_string(r)?);
        } else {
            print_row(r);
        }
    }
    // each root's summaries index (--check): its state, the conversations
    // it misses and its entries without a file
    for (root, index) in indexes.iter().filter(|_| !a.json) {
        for line in crate::troubles::index_lines(index) {
            outln!("{}  {}", terminal(root), terminal(&line));
        }
    }
    Ok(0)
}

/// A root (as shown) and its summaries index state (--check).
type RootIndex = (String, crate::troubles::IndexState);

/// The rows of every root, then of the store folders besides the default
/// roots, and (with `ctx`: --check) each root's summaries index state.
fn collect(
    a: &ListArgs,
    sel: &crate::roots::Selection,
    ctx: Option<&crate::pipeline::AuditContext>,
) -> anyhow::Result<(Vec<Row>, Vec<RootIndex>)> {
    let mut rows = Vec::new();
    let locks = ctx.and_then(|_| crate::troubles::LockTable::read());
    let mut indexes = Vec::new();
    for r in &sel.roots {
        let mut found = rows_of(r, a.include_implicit, ctx)?;
        if let Some(ctx) = ctx {
            indexes.push(troubles_of(&mut found, r, ctx, locks.as_ref())?);
        }
        rows.extend(found);
    }
    // store folders besides the roots: only beside the default roots (a
    // root the user names is all they asked for), read, never written
    let explicit = sel.roots.iter().any(|r| r.explicit);
    let extras = if explicit {
        Vec::new()
    } else {
        crate::store_folders::find(&sel.roots)
    };
    for f in extras {
        crate::note!(
            "list: also found {} ({}, {}): not a root, never written; audit it with `agy-audit audit-sweep --root {}`",
            terminal(&f.path.display().to_string()),
            f.kind.describe(),
            f.surface_label(),
            terminal(&f.path.display().to_string())
        );
        let root = f.as_root();
        let mut found = rows_of(&root, a.include_implicit, ctx)?;
        for row in &mut found {
            row.surface = f.surface_label();
            row.store = Some(f.kind.as_str());
            row.copy_of = Some(
                crate::store_folders::copy_of(&row.id, &sel.roots)
                    .map(|r| r.path.display().to_string()),
            );
        }
        if let Some(ctx) = ctx {
            indexes.push(troubles_of(&mut found, &root, ctx, locks.as_ref())?);
        }
        rows.extend(found);
    }
    Ok((rows, indexes))
}

/// One row's text lines.
fn print_row(r: &Row) {
    let steps = r.steps.map_or_else(|| "-".to_string(), |n| n.to_string());
    let state = match r.fresh {
        Some(false) => format!("stale ({})", r.sidecar),
        _ => r.sidecar.to_string(),
    };
    outln!(
        "{}  {}  {:<8}  {:>10}  {:>5}  {:<20}  {}{}{}",
        r.id,
        r.surface,
        r.format,
        r.size,
        steps,
        state,
        r.root,
        if r.implicit { "  (implicit)" } else { "" },
        r.title
            .as_deref()
            .map(|t| format!("  {}", one_line(t)))
            .unwrap_or_default()
    );
    if let Some(kind) = r.store {
        let copy = match &r.copy_of {
            Some(Some(live)) => format!(": a copy of {}'s", terminal(live)),
            _ => String::new(),
        };
        outln!("    in a store folder besides the roots ({kind}){copy}; never written");
    }
    for line in &r.trouble_lines {
        outln!("    {}", terminal(line));
    }
}
