//! The specification's opt-in evidence checks as commands, through the real
//! binary on a generated store swept against `daemon-sim`:
//! `verify-capture` (the whole verification on captured files, no daemon)
//! and `export-check` (offline exports against the sweep's saved answers).

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{bin, output_text as text, read_manifest as manifest};
use std::path::{Path, PathBuf};
use std::process::Output;

/// A generated store swept against daemon-sim, once for this file's tests:
/// (tempdir, store, sweep dir).
fn swept() -> &'static (tempfile::TempDir, PathBuf, PathBuf) {
    static SWEPT: std::sync::OnceLock<(tempfile::TempDir, PathBuf, PathBuf)> =
        std::sync::OnceLock::new();
    SWEPT.get_or_init(|| common::swept_store(30, 11))
}

/// The first session with `verdict`, and its source path.
fn session(store: &Path, sweep: &Path, verdict: &str) -> (String, PathBuf) {
    let m = manifest(sweep);
    let s = m["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["verdict"] == verdict && s["format"] == "sqlite")
        .unwrap_or_else(|| panic!("a {verdict} sqlite session"))
        .clone();
    let id = s["fileId"].as_str().unwrap().to_string();
    let path = store.join("conversations").join(format!("{id}.db"));
    (id, path)
}

/// `agy-audit export-check <sweep>/manifest.json` with `extra`.
fn export_check(sweep: &Path, extra: &[&std::ffi::OsStr]) -> Output {
    bin()
        .arg("export-check")
        .arg(sweep.join("manifest.json"))
        .args(extra)
        .output()
        .unwrap()
}

/// The difference export-check reports on the Markdown side of one
/// session, as (line number, offline line, line from the answer).
fn markdown_difference(out: &str, id: &str) -> Option<(usize, String, String)> {
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("DIFFERS {id}: ")))?;
    let rest = &line[line.find("markdown line ")? + "markdown line ".len()..];
    let (n, rest) = rest.split_once(": offline ")?;
    let (offline, answer) = rest.split_once(", from the answer ")?;
    let unquote = |q: &str| serde_json::from_str::<String>(q).unwrap_or_else(|_| q.to_string());
    Some((n.parse().ok()?, unquote(offline), unquote(answer)))
}

/// `agy-audit export-offline --format md --no-tree <source>`'s output.
fn offline_markdown(source: &Path) -> String {
    let o = bin()
        .args(["export-offline", "--format", "md", "--no-tree"])
        .arg(source)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    String::from_utf8(o.stdout).unwrap()
}

fn verify(db: &Path, full: &Path, ordinary: &Path, extra: &[&str]) -> Output {
    bin()
        .arg("verify-capture")
        .arg("--db")
        .arg(db)
        .arg("--full")
        .arg(full)
        .arg("--ordinary")
        .arg(ordinary)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn verify_capture_reaches_the_sweeps_verdicts_from_files_alone() {
    let (_d, store, sweep) = swept();
    let (id, db) = session(store, sweep, "verified");
    let corpus = sweep.join("corpus");
    let full = corpus.join(format!("{id}.full.json"));
    let ordinary = corpus.join(format!("{id}.ordinary.json"));
    // Whole answers, as the sweep saved them.
    let o = verify(&db, &full, &ordinary, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = text(&o);
    assert!(out.starts_with(&format!("VERIFIED {id}")), "{out}");
    let m = manifest(sweep);
    let rec = m["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["fileId"] == id.as_str())
        .unwrap()
        .clone();
    assert!(
        out.contains(&format!(
            "payloadDigest {}",
            rec["payloadDigest"].as_str().unwrap()
        )),
        "the same attestation as the sweep's: {out}"
    );
    // Bare trajectories (as a sidecar keeps them) verify the same way.
    let truth = store.join(".truth").join("daemon");
    let o = verify(
        &db,
        &truth.join(format!("{id}.full.json")),
        &truth.join(format!("{id}.ordinary.json")),
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // Another conversation's answers are incomplete.
    let (other, _) = {
        let m = manifest(sweep);
        let s = m["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["verdict"] == "verified" && s["fileId"] != id.as_str())
            .unwrap()
            .clone();
        (s["fileId"].as_str().unwrap().to_string(), ())
    };
    let o = verify(
        &db,
        &corpus.join(format!("{other}.full.json")),
        &corpus.join(format!("{other}.ordinary.json")),
        &[],
    );
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert!(text(&o).starts_with("INCOMPLETE"), "{}", text(&o));

    // A malformed envelope is not a valid answer: not fetched, exit 1.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    let mut body = std::fs::read_to_string(&full).unwrap();
    body.truncate(body.trim_end().len() - 1);
    body.push_str(",\"extra\":1}");
    std::fs::write(&bad, body).unwrap();
    let o = verify(&db, &bad, &ordinary, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("extra"), "{}", text(&o));

    // A source the reader refuses is unknown.
    let (uid, udb) = session(store, sweep, "unknown");
    let o = verify(
        &udb,
        &truth.join(format!("{uid}.full.json")),
        &truth.join(format!("{uid}.ordinary.json")),
        &[],
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));

    // --out writes the attested sidecar, never over an input.
    let side = dir.path().join("s.trajectory.json");
    let o = verify(&db, &full, &ordinary, &["--out", side.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&side).unwrap()).unwrap();
    assert_eq!(doc["agyReader"]["completeness"]["verdict"], "verified");
    let before = std::fs::read(&full).unwrap();
    let o = verify(
        &db,
        &full,
        &ordinary,
        &["--out", full.to_str().unwrap(), "--force"],
    );
    assert_ne!(o.status.code(), Some(0));
    assert_eq!(
        std::fs::read(&full).unwrap(),
        before,
        "the input is untouched"
    );
}

#[test]
fn export_check_compares_offline_exports_with_the_saved_answers() {
    let (_d, store, sweep) = swept();
    let o = bin()
        .arg("export-check")
        .arg(sweep.join("manifest.json"))
        .output()
        .unwrap();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let m = manifest(sweep);
    let verified = m["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| {
            matches!(
                s["verdict"].as_str(),
                Some("verified" | "verified-source-only")
            )
        })
        .count();
    assert!(verified > 5);
    assert!(out.contains(&format!("same={verified} differ=0")), "{out}");

    // A saved answer that differs from the export is named with its path.
    let (_copy, csweep) = common::copied_sweep(sweep);
    let (id, _) = session(store, sweep, "verified");
    let answer = csweep.join("corpus").join(format!("{id}.ordinary.json"));
    let mut body: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&answer).unwrap()).unwrap();
    body["trajectory"]["cascadeId"] = serde_json::json!("another-cascade");
    std::fs::write(&answer, body.to_string()).unwrap();
    let o = bin()
        .arg("export-check")
        .arg(csweep.join("manifest.json"))
        .arg("--root")
        .arg(store)
        .output()
        .unwrap();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(4), "{out}");
    assert!(
        out.contains(&format!("DIFFERS {id}: json cascadeId")),
        "{out}"
    );
    assert!(out.contains("markdown line"), "{out}");
}

#[test]
fn export_check_names_every_session_it_did_not_check_and_why() {
    let (_d, store, sweep) = swept();
    let o = export_check(sweep, &[]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let m = manifest(sweep);
    let sessions = m["sessions"].as_array().unwrap();
    let mut unchecked = 0;
    for s in sessions {
        let id = s["fileId"].as_str().unwrap();
        let verdict = s["verdict"].as_str().unwrap();
        if matches!(verdict, "verified" | "verified-source-only") {
            assert!(
                out.lines()
                    .any(|l| l == format!("SAME {id}") || l.starts_with(&format!("SAME {id} ("))),
                "{id} compared: {out}"
            );
        } else {
            unchecked += 1;
            let line = out
                .lines()
                .find(|l| l.starts_with(&format!("NOT CHECKED {id}: ")))
                .unwrap_or_else(|| panic!("{id} ({verdict}) is named as not checked: {out}"));
            assert!(
                line.contains(&format!("not verified: the sweep's verdict is {verdict}")),
                "{line}"
            );
            if let Some(reason) = s["reason"].as_str() {
                assert!(line.contains(reason), "the sweep's reason is given: {line}");
            }
        }
    }
    assert!(unchecked > 0, "the swept store has refused sessions");
    assert!(
        out.lines().last().unwrap().ends_with(&format!(
            "sessions={} same={} differ=0 error=0 notChecked={unchecked}",
            sessions.len(),
            sessions.len() - unchecked
        )),
        "{out}"
    );
    // --sources: the folder of the sources themselves, as the
    // specification's AGY_READER_OFFLINE_SOURCES names it.
    let conversations = store.join("conversations");
    let o = export_check(sweep, &["--sources".as_ref(), conversations.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("same={}", sessions.len() - unchecked)),
        "{}",
        text(&o)
    );
    // A folder without them: each compared session is an error naming its file.
    let empty = tempfile::tempdir().unwrap();
    let o = export_check(sweep, &["--sources".as_ref(), empty.path().as_os_str()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains(&empty.path().display().to_string()),
        "{}",
        text(&o)
    );
    // --root and --sources name the same thing: one or the other.
    let o = export_check(
        sweep,
        &[
            "--sources".as_ref(),
            conversations.as_os_str(),
            "--root".as_ref(),
            store.as_os_str(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// The Markdown side compares the bytes `export-offline --format md
/// --no-tree` writes: a difference is reported at that output's line
/// number, with that output's line.
#[test]
fn export_check_compares_the_markdown_export_offline_writes() {
    let (_d, store, sweep) = swept();
    let (id, db) = session(store, sweep, "verified");
    let (_copy, csweep) = common::copied_sweep(sweep);
    let answer = csweep.join("corpus").join(format!("{id}.ordinary.json"));
    let mut body: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&answer).unwrap()).unwrap();
    // The workspace the transcript names after the notice.
    let uri = body["trajectory"]["metadata"]["workspaces"][0]["workspaceFolderAbsoluteUri"]
        .as_str()
        .unwrap()
        .to_string();
    body["trajectory"]["metadata"]["workspaces"][0]["workspaceFolderAbsoluteUri"] =
        serde_json::json!(format!("{uri}-elsewhere"));
    std::fs::write(&answer, body.to_string()).unwrap();
    let o = export_check(&csweep, &["--root".as_ref(), store.as_os_str()]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(4), "{out}");
    let (n, offline, from_answer) =
        markdown_difference(&out, &id).unwrap_or_else(|| panic!("a markdown difference: {out}"));
    let md = offline_markdown(&db);
    assert_eq!(
        md.lines().nth(n - 1),
        Some(offline.as_str()),
        "line {n} of export-offline's output is the offline line reported:\n{md}"
    );
    assert!(
        offline.contains(&uri) && !offline.contains("-elsewhere"),
        "{offline}"
    );
    assert!(from_answer.contains("-elsewhere"), "{from_answer}");
}

/// A subagent's transcript names its parent (`agyReader.parentCascadeId`,
/// from its own metadata): export-offline writes that line, so the check
/// compares it with the parent the answer names.
#[test]
fn export_check_compares_a_subagents_parent_line() {
    let (_d, store, sweep) = swept();
    let m = manifest(sweep);
    let (id, parent) = m["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["verdict"] == "verified" && s["format"] == "sqlite")
        .find_map(|s| {
            let id = s["fileId"].as_str().unwrap().to_string();
            let a: serde_json::Value = serde_json::from_slice(
                &std::fs::read(sweep.join("corpus").join(format!("{id}.ordinary.json"))).unwrap(),
            )
            .unwrap();
            let p = a["trajectory"]["metadata"]["parentConversationId"].as_str()?;
            Some((id, p.to_string()))
        })
        .expect("a verified subagent conversation in the swept store");
    let db = store.join("conversations").join(format!("{id}.db"));
    assert!(
        offline_markdown(&db).contains(&format!("Subagent conversation of `{parent}`.")),
        "export-offline names the parent"
    );
    let (_copy, csweep) = common::copied_sweep(sweep);
    let answer = csweep.join("corpus").join(format!("{id}.ordinary.json"));
    let mut body: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&answer).unwrap()).unwrap();
    let other = "0f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f0f";
    body["trajectory"]["metadata"]["parentConversationId"] = serde_json::json!(other);
    std::fs::write(&answer, body.to_string()).unwrap();
    let o = export_check(&csweep, &["--root".as_ref(), store.as_os_str()]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(4), "{out}");
    let (_, offline, from_answer) =
        markdown_difference(&out, &id).unwrap_or_else(|| panic!("a markdown difference: {out}"));
    assert!(offline.contains(&parent), "{offline}");
    assert!(from_answer.contains(other), "{from_answer}");
}
