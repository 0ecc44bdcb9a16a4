//! `format-audit`: a release's format-audit record (public-format-facts
//! §5.3, the reference's `docs/compatibility/agy-<version>.md`), from a
//! sweep's manifest, the answers it saved under `corpus/`, its shape
//! listings, and the store's SQLite sources.
//!
//! Stricter readings where the specification is silent:
//! - the SQLite facts (`PRAGMA quick_check`, `user_version`, tables, the
//!   DDL's fingerprint) are read from every selected `.db` source of the
//!   manifest's root, through the reader's private snapshot; a store that
//!   cannot be read is an error, never a record with the facts left out;
//! - the DDL fingerprint is `sha256:` + hex of the `sql` of every
//!   `sqlite_master` entry not named `sqlite_%`, sorted bytewise, joined
//!   with `\n`; the record lists each distinct fingerprint with its count;
//! - step facts (populated / empty trajectories, steps, distinct step types,
//!   done / canceled / error) come from the full answers the daemon served
//!   (what the reference counts from its sidecars); a status written as a
//!   number is named through the schema's `CortexStepStatus`;
//! - a manifest without shape listings (an older sweep) is refused.

use crate::manifest::{Manifest, SessionRecord};
use crate::report::escape::{md_code, md_text};
use crate::shapes::{Listing, ShapeDiff};
use crate::source::Format;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why a record could not be made.
#[derive(Debug, thiserror::Error)]
pub enum FormatAuditError {
    #[error("{file}: {detail}")]
    Input { file: PathBuf, detail: String },
    #[error(transparent)]
    Shapes(#[from] crate::shapes::ShapeError),
}

fn input(file: &Path, detail: impl Into<String>) -> FormatAuditError {
    FormatAuditError::Input {
        file: file.to_path_buf(),
        detail: detail.into(),
    }
}

/// What a record is built from.
pub struct Inputs<'a> {
    pub manifest_file: &'a Path,
    pub manifest: &'a Manifest,
    /// The listing or record `--against` named, with its file.
    pub against: Option<(&'a Path, &'a Listing)>,
    /// Names numeric step statuses.
    pub schema: &'a crate::schema::Schema,
}

#[derive(Default)]
struct SqliteFacts {
    ok: u64,
    failed: Vec<(String, String)>,
    user_versions: BTreeMap<i64, u64>,
    ddl: BTreeMap<String, (Vec<String>, u64)>,
}

fn sqlite_facts(m: &Manifest) -> Result<SqliteFacts, FormatAuditError> {
    let root = PathBuf::from(&m.root);
    let mut f = SqliteFacts::default();
    for s in m.sessions.iter().filter(|s| s.format == Format::Sqlite) {
        let db = s.source_path(&root);
        if !db.is_file() {
            return Err(input(
                &db,
                "the manifest's SQLite source is not there: format-audit reads the store the sweep read",
            ));
        }
        let snap = match crate::source::sqlite::snapshot(&db) {
            Ok(snap) => snap,
            Err(e) => {
                f.failed.push((s.file_id.clone(), e.to_string()));
                continue;
            }
        };
        f.ok += 1;
        let conn = snap.conn();
        let uv: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| input(&db, format!("PRAGMA user_version: {e}")))?;
        *f.user_versions.entry(uv).or_default() += 1;
        let rows = (|| -> rusqlite::Result<Vec<(String, String, Option<String>)>> {
            let mut st = conn.prepare(
                "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'",
            )?;
            let r = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            r.collect()
        })()
        .map_err(|e| input(&db, format!("sqlite_master: {e}")))?;
        let mut tables: Vec<String> = rows
            .iter()
            .filter(|(t, _, _)| t == "table")
            .map(|(_, n, _)| n.clone())
            .collect();
        tables.sort();
        let mut ddl: Vec<String> = rows.into_iter().filter_map(|(_, _, sql)| sql).collect();
        ddl.sort();
        let fp = crate::util::sha256_tagged(ddl.join("\n").as_bytes());
        f.ddl.entry(fp).or_insert((tables, 0)).1 += 1;
    }
    Ok(f)
}

#[derive(Default)]
struct StepFacts {
    fetched: u64,
    populated: u64,
    empty: u64,
    steps: u64,
    types: BTreeMap<String, u64>,
    statuses: BTreeMap<String, u64>,
}

fn enum_name(schema: &crate::schema::Schema, full: &str, v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .and_then(|n| {
                schema
                    .pool
                    .get_enum_by_name(full)
                    .and_then(|e| e.get_value(n))
                    .map(|v| v.name().to_string())
            })
            .unwrap_or_else(|| n.to_string()),
        Value::Null => "(unset)".into(),
        other => other.to_string(),
    }
}

fn step_facts(
    dir: &crate::sweep_dir::SweepDir,
    sessions: &[SessionRecord],
    schema: &crate::schema::Schema,
) -> Result<StepFacts, FormatAuditError> {
    let mut f = StepFacts::default();
    for s in sessions {
        let file = dir.answer(&s.file_id, crate::sweep_dir::Answer::Full);
        use crate::util::bounded::{read_if_present, InputKind};
        let bytes = match read_if_present(&file, InputKind::Answer) {
            Ok(Some(b)) => b,
            Ok(None) => continue,
            Err(e) => return Err(input(&file, crate::util::io_text(&e.into_io()))),
        };
        let v: Value =
            serde_json::from_slice(&bytes).map_err(|e| input(&file, format!("not JSON: {e}")))?;
        f.fetched += 1;
        let t = v.get("trajectory").unwrap_or(&v);
        let steps = match t.get("steps") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(a)) => a.as_slice(),
            Some(_) => return Err(input(&file, "trajectory.steps is not an array")),
        };
        if steps.is_empty() {
            f.empty += 1;
        } else {
            f.populated += 1;
        }
        for step in steps {
            f.steps += 1;
            let ty = enum_name(
                schema,
                "exa.cortex_pb.CortexStepType",
                step.get("type").unwrap_or(&Value::Null),
            );
            *f.types.entry(ty).or_default() += 1;
            let st = enum_name(
                schema,
                "exa.cortex_pb.CortexStepStatus",
                step.get("status").unwrap_or(&Value::Null),
            );
            *f.statuses.entry(st).or_default() += 1;
        }
    }
    Ok(f)
}

/// The record, as JSON (`formatAudit: 1`); its Markdown is [`render_markdown`].
pub fn record(i: &Inputs<'_>) -> Result<Value, FormatAuditError> {
    let m = i.manifest;
    let dir = crate::sweep_dir::SweepDir::of_manifest(i.manifest_file);
    let shapes = m.shapes.as_ref().ok_or_else(|| {
        input(
            i.manifest_file,
            "no shape listings (`shapes`): a sweep by an older agy-audit; sweep again",
        )
    })?;
    // The files beside the manifest, their fingerprints checked against it.
    let (ordinary, full) = crate::shapes::of_manifest(i.manifest_file, Some(shapes))?
        .ok_or_else(|| input(i.manifest_file, "no shape listings"))?;
    let (ord_fp, full_fp) = (&shapes.ordinary.fingerprint, &shapes.full.fingerprint);
    let sq = sqlite_facts(m)?;
    let st = step_facts(&dir, &m.sessions, i.schema)?;
    let status = |n: &str| {
        st.statuses
            .get(&format!("CORTEX_STEP_STATUS_{n}"))
            .copied()
            .unwrap_or(0)
    };
    let against = i.against.map(|(file, l)| {
        let d: ShapeDiff = l.diff(&ordinary);
        json!({
            "file": file.display().to_string(),
            "fingerprint": l.fingerprint(),
            "entries": l.len(),
            "added": d.added,
            "removed": d.removed,
        })
    });
    Ok(json!({
        "formatAudit": 1,
        "manifest": i.manifest_file.display().to_string(),
        "complete": m.complete,
        "root": m.root,
        "started": m.started,
        "finished": m.finished,
        "selected": m.counts.selected,
        "fetched": st.fetched,
        "sqlite": m.counts.sqlite,
        "legacy": m.counts.protobuf,
        "quickCheck": {
            "ok": sq.ok,
            "failed": sq.failed.iter().map(|(id, e)| json!({"fileId": id, "detail": e})).collect::<Vec<_>>(),
        },
        "userVersions": sq.user_versions.iter().map(|(v, n)| json!({"userVersion": v, "sources": n})).collect::<Vec<_>>(),
        "schemas": sq.ddl.iter().map(|(fp, (t, n))| json!({"fingerprint": fp, "tables": t, "tableCount": t.len(), "sources": n})).collect::<Vec<_>>(),
        "trajectories": {"populated": st.populated, "empty": st.empty},
        "steps": st.steps,
        "stepTypes": st.types,
        "distinctStepTypes": st.types.len(),
        "stepStatuses": {"done": status("DONE"), "canceled": status("CANCELED"), "error": status("ERROR"), "all": st.statuses},
        "verdicts": {
            "verified": m.counts.verified,
            "verifiedSourceOnly": m.counts.verified_source_only,
            "unknown": m.counts.unknown,
            "incomplete": m.counts.incomplete,
            "notFetched": m.counts.not_fetched,
            "error": m.counts.error,
        },
        "shapes": {
            "ordinary": {"fingerprint": ord_fp, "entries": ordinary.len(), "documents": shapes.ordinary.documents, "listing": ordinary.text()},
            "full": {"fingerprint": full_fp, "entries": full.len(), "documents": shapes.full.documents, "listing": full.text()},
        },
        "against": against,
        "readerVersion": env!("CARGO_PKG_VERSION"),
        "readerProfiles": m.profiles,
        "installedAgyVersion": m.installed_agy_version,
        "installedAgyVersionNote": m.installed_agy_version_note.clone().unwrap_or_else(|| "agy was not on the sweeping machine's PATH: no installed version recorded".into()),
    }))
}

fn n(v: &Value, p: &str) -> String {
    match v.pointer(p) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "—".into(),
        Some(x) => x.to_string(),
    }
}

/// The record as Markdown.
pub fn render_markdown(r: &Value) -> String {
    let mut o = String::new();
    md_heading(r, &mut o);
    md_facts(r, &mut o);
    md_sqlite(r, &mut o);
    md_step_types(r, &mut o);
    md_against(r, &mut o);
    o
}

/// The partial-sweep warning, the title and the manifest's provenance line.
fn md_heading(r: &Value, o: &mut String) {
    let complete = r.get("complete").and_then(Value::as_bool) == Some(true);
    if !complete {
        o.push_str(
            "**The sweep is not complete (complete: false): these figures are partial.**\n\n",
        );
    }
    o.push_str("# Format audit\n\n");
    o.push_str(&format!(
        "Manifest: {}; store root {}; swept {} to {}.\n\n",
        md_code(&n(r, "/manifest"), false),
        md_code(&n(r, "/root"), false),
        md_text(&n(r, "/started")),
        md_text(&n(r, "/finished"))
    ));
}

/// The table of the sweep's figures and the installed-version note.
fn md_facts(r: &Value, o: &mut String) {
    o.push_str("| fact | value |\n|---|---|\n");
    let rows = [
        ("selected", n(r, "/selected")),
        ("fetched (full answers saved)", n(r, "/fetched")),
        (
            "SQLite / legacy (.pb)",
            format!("{} / {}", n(r, "/sqlite"), n(r, "/legacy")),
        ),
        (
            "PRAGMA quick_check ok / failed",
            format!(
                "{} / {}",
                n(r, "/quickCheck/ok"),
                r.pointer("/quickCheck/failed")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len)
            ),
        ),
        (
            "populated / empty trajectories",
            format!(
                "{} / {}",
                n(r, "/trajectories/populated"),
                n(r, "/trajectories/empty")
            ),
        ),
        (
            "steps / distinct step types",
            format!("{} / {}", n(r, "/steps"), n(r, "/distinctStepTypes")),
        ),
        (
            "done / canceled / error steps",
            format!(
                "{} / {} / {}",
                n(r, "/stepStatuses/done"),
                n(r, "/stepStatuses/canceled"),
                n(r, "/stepStatuses/error")
            ),
        ),
        (
            "verified / verified with source-only fields",
            format!(
                "{} / {}",
                n(r, "/verdicts/verified"),
                n(r, "/verdicts/verifiedSourceOnly")
            ),
        ),
        (
            "ordinary shape fingerprint (entries)",
            format!(
                "{} ({})",
                md_code(&n(r, "/shapes/ordinary/fingerprint"), true),
                n(r, "/shapes/ordinary/entries")
            ),
        ),
        (
            "full shape fingerprint (entries)",
            format!(
                "{} ({})",
                md_code(&n(r, "/shapes/full/fingerprint"), true),
                n(r, "/shapes/full/entries")
            ),
        ),
        ("reader version", md_text(&n(r, "/readerVersion"))),
        (
            "installed agy version",
            md_text(&n(r, "/installedAgyVersion")),
        ),
    ];
    for (k, v) in rows {
        o.push_str(&format!("| {k} | {v} |\n"));
    }
    o.push_str(&format!(
        "\nInstalled agy version: {}.\n",
        md_text(&n(r, "/installedAgyVersionNote"))
    ));
}

/// The SQLite section: user versions, DDL fingerprints and failed checks.
fn md_sqlite(r: &Value, o: &mut String) {
    o.push_str("\n## SQLite schema\n\n| user_version | sources |\n|---|---|\n");
    for u in r
        .get("userVersions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        o.push_str(&format!(
            "| {} | {} |\n",
            n(u, "/userVersion"),
            n(u, "/sources")
        ));
    }
    o.push_str("\n| DDL fingerprint | tables | sources |\n|---|---|---|\n");
    for s in r
        .get("schemas")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let tables: Vec<String> = s
            .get("tables")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(md_text)
            .collect();
        o.push_str(&format!(
            "| {} | {} ({}) | {} |\n",
            md_code(&n(s, "/fingerprint"), true),
            tables.len(),
            tables.join(", "),
            n(s, "/sources")
        ));
    }
    for f in r
        .pointer("/quickCheck/failed")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        o.push_str(&format!(
            "\n- quick_check or snapshot failed: {}: {}",
            md_text(&n(f, "/fileId")),
            md_text(&n(f, "/detail"))
        ));
    }
}

/// The step types with their step counts.
fn md_step_types(r: &Value, o: &mut String) {
    o.push_str("\n## Step types\n\n| type | steps |\n|---|---|\n");
    for (t, c) in r
        .get("stepTypes")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        o.push_str(&format!("| {} | {c} |\n", md_text(t)));
    }
}

/// The shapes compared against a reference list, when one was given.
fn md_against(r: &Value, o: &mut String) {
    if let Some(a) = r.get("against").filter(|a| !a.is_null()) {
        let added = a
            .get("added")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let removed = a
            .get("removed")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        o.push_str(&format!(
            "\n## Shapes against {}\n\n{} entries ({}) → {} ordinary entries: {} added, {} removed.\n\n",
            md_code(&n(a, "/file"), false), n(a, "/entries"), md_code(&n(a, "/fingerprint"), false), n(r, "/shapes/ordinary/entries"), added.len(), removed.len()
        ));
        for l in &added {
            o.push_str(&format!(
                "- added {}\n",
                md_code(&l.as_str().unwrap_or_default().replace('\t', " : "), false)
            ));
        }
        for l in &removed {
            o.push_str(&format!(
                "- removed {}\n",
                md_code(&l.as_str().unwrap_or_default().replace('\t', " : "), false)
            ));
        }
    }
}
