//! The specification's opt-in evidence checks as commands, through the real
//! binary on a generated store swept against `daemon-sim`:
//! `verify-capture` (the whole verification on captured files, no daemon)
//! and `export-check` (offline exports against the sweep's saved answers).

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
    let copy = tempfile::tempdir().unwrap();
    let csweep = copy.path().join("sweep");
    std::fs::create_dir_all(csweep.join("corpus")).unwrap();
    std::fs::copy(sweep.join("manifest.json"), csweep.join("manifest.json")).unwrap();
    for e in std::fs::read_dir(sweep.join("corpus")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, csweep.join("corpus").join(p.file_name().unwrap())).unwrap();
    }
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
