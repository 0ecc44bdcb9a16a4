//! Hostile manifests (issue 44 item 2): a manifest is untrusted input, our
//! own records included. Each forged manifest below is handed to every
//! command that reads one (audit-qualify, audit-diff, report in Markdown and
//! HTML, format-audit, export-check, manifest merge): each refuses it with
//! exit 1, naming the file and the member, and writes nothing.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]
#![cfg(unix)]

mod common;

use common::{bin, output_text};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A swept store: (tempdir, store, sweep folder).
fn fixture() -> (tempfile::TempDir, PathBuf, PathBuf) {
    common::swept_store(24, 4401)
}

fn manifest(sweep: &Path) -> Value {
    common::read_manifest(sweep)
}

/// The index of the first plainly verified SQLite session.
fn first_verified(m: &Value) -> usize {
    m["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .position(|s| s["verdict"] == "verified" && s["format"] == "sqlite")
        .expect("a verified SQLite session")
}

/// Session `i` of `m` turned into an unknown-field refusal.
fn refused_at(m: &mut Value, i: usize) {
    let s = &mut m["sessions"][i];
    s["verdict"] = json!("unknown");
    s["reasonClass"] = json!("unknown-field");
    s["reason"] = json!("steps[1].metadata: unknown field 900");
    s["payloadDigest"] = Value::Null;
    for k in ["rpcOnlyFields", "rpcOnlyFieldsUnlisted"] {
        s.as_object_mut().unwrap().remove(k);
    }
}

/// `audit-qualify MANIFEST --root STORE`: its exit code and its output.
fn qualify(manifest: &Path, store: &Path) -> (Option<i32>, String) {
    let o = bin()
        .arg("audit-qualify")
        .arg(manifest)
        .arg("--root")
        .arg(store)
        .output()
        .unwrap();
    (o.status.code(), output_text(&o))
}

fn write(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec_pretty(v).unwrap()).unwrap();
    p
}

/// The forged manifests, each with the words its refusal must hold.
fn forgeries(good: &Value) -> Vec<(&'static str, Value, &'static str)> {
    let mut out = Vec::new();
    let sessions = good["sessions"].as_array().unwrap();
    let verified: Vec<usize> = (0..sessions.len())
        .filter(|&i| sessions[i]["verdict"] == "verified")
        .collect();
    // Duplicate ids: a verified copy of a session appended after it.
    let mut v = good.clone();
    let copy = v["sessions"][verified[0]].clone();
    v["sessions"]
        .as_array_mut()
        .unwrap()
        .insert(verified[0] + 1, copy);
    out.push(("duplicate-id", v, "appears twice"));
    // Lying headline counts.
    let mut v = good.clone();
    v["counts"]["verified"] = json!(999);
    out.push(("lying-counts", v, "counts.verified"));
    let mut v = good.clone();
    v["counts"]["selected"] = json!(7);
    out.push(("lying-selected", v, "counts.selected"));
    // A path for a file id.
    let mut v = good.clone();
    let id = v["sessions"][0]["fileId"].as_str().unwrap().to_string();
    v["sessions"][0]["fileId"] = json!(format!("../../ws/conversations/{id}"));
    out.push(("traversal-id", v, "fileId"));
    let mut v = good.clone();
    v["sessions"][0]["fileId"] = json!("../../../../etc/passwd");
    out.push(("traversal-passwd", v, "fileId"));
    // The version as a string.
    let mut v = good.clone();
    v["manifestVersion"] = json!("5");
    out.push(("version-string", v, "the string \"5\""));
    // complete while a session was not fetched (counts honest).
    let mut v = good.clone();
    let s = &mut v["sessions"][verified[1]];
    s["verdict"] = Value::Null;
    s["reasonClass"] = json!("daemon-unavailable");
    s["reason"] = json!("HTTP 500");
    s["payloadDigest"] = Value::Null;
    for k in ["rpcOnlyFields", "rpcOnlyFieldsUnlisted", "sourceOnly"] {
        s.as_object_mut().unwrap().remove(k);
    }
    out.push(("complete-not-fetched", common::recounted(v), "not fetched"));
    // Lying shard members.
    let mut v = good.clone();
    v["shard"] = json!("+2/2");
    out.push(("shard-sign", v, "shard"));
    let mut v = good.clone();
    v["shard"] = json!("1/1");
    v["emptyShard"] = json!(true);
    out.push(("empty-shard-with-sessions", v, "emptyShard"));
    out
}

#[test]
fn every_reader_refuses_every_forged_manifest_and_writes_nothing() {
    let (dir, store, sweep) = fixture();
    let good = manifest(&sweep);
    let st = store.to_str().unwrap();
    for (name, forged, words) in forgeries(&good) {
        let work = dir.path().join(name);
        std::fs::create_dir_all(&work).unwrap();
        let m = write(&work, "manifest.json", &forged);
        let ms = m.to_str().unwrap();
        let sw = sweep.to_str().unwrap();
        let runs: Vec<Vec<&str>> = vec![
            vec!["audit-qualify", ms, "--root", st, "--junit", "out.xml"],
            vec![
                "audit-diff",
                sw,
                ms,
                "--junit",
                "out.xml",
                "--out",
                "out.md",
            ],
            vec!["audit-diff", ms, sw, "--json"],
            vec!["report", ms, "--out", "out.md"],
            vec![
                "report", ms, "--format", "html", "--root", st, "--out", "out.html",
            ],
            vec!["format-audit", ms, "--out", "out.md"],
            vec!["export-check", ms, "--root", st],
            vec!["manifest", "merge", ms, "--out", "out.json"],
        ];
        for args in runs {
            let o = bin().args(&args).current_dir(&work).output().unwrap();
            let text = output_text(&o);
            assert_eq!(o.status.code(), Some(1), "{name}: {args:?}\n{text}");
            assert!(
                text.contains("manifest.json"),
                "{name}: {args:?} names no file\n{text}"
            );
            assert!(
                text.contains(words),
                "{name}: {args:?} does not say `{words}`\n{text}"
            );
            for f in ["out.xml", "out.md", "out.html", "out.json", "out.svg"] {
                assert!(!work.join(f).exists(), "{name}: {args:?} wrote {f}");
            }
        }
    }
}

/// The issue's own attack: a regressing release with verified copies of
/// its regressed sessions appended exits 0 no more.
#[test]
fn appended_verified_copies_cannot_hide_a_regression() {
    let (dir, _store, sweep) = fixture();
    let old = manifest(&sweep);
    let i = first_verified(&old);
    let original = old["sessions"][i].clone();
    let mut new = old.clone();
    refused_at(&mut new, i);
    let mut new = common::recounted(new);
    let honest = write(dir.path(), "honest.json", &new);
    let o = bin()
        .args([
            "audit-diff",
            sweep.to_str().unwrap(),
            honest.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(5), "{}", output_text(&o));
    // Now the forger appends the verified copy: refused, never exit 0.
    new["sessions"]
        .as_array_mut()
        .unwrap()
        .insert(i + 1, original);
    let forged = write(dir.path(), "forged.json", &new);
    let o = bin()
        .args([
            "audit-diff",
            sweep.to_str().unwrap(),
            forged.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    assert!(
        output_text(&o).contains("appears twice"),
        "{}",
        output_text(&o)
    );
}

/// A recorded offline-checkable refusal that the source does not show is a
/// change, not "holds".
#[test]
fn a_recorded_refusal_that_does_not_reproduce_is_a_change() {
    let (dir, store, sweep) = fixture();
    let mut m = manifest(&sweep);
    let i = first_verified(&m);
    refused_at(&mut m, i);
    let m = common::recounted(m);
    let p = write(dir.path(), "forged.json", &m);
    let (code, text) = qualify(&p, &store);
    assert_ne!(code, Some(0), "{text}");
    assert!(text.contains("does not reproduce"), "{text}");
    assert!(text.contains("changed=1"), "{text}");
}

/// A recorded refusal only a daemon answer shows (an ordinary mismatch) is
/// not rechecked offline: the source passing every offline check does not
/// change it.
#[test]
fn a_recorded_online_refusal_is_not_reproduced_offline() {
    let (dir, store, sweep) = fixture();
    let mut m = manifest(&sweep);
    let i = first_verified(&m);
    refused_at(&mut m, i);
    let s = &mut m["sessions"][i];
    s["verdict"] = json!("incomplete");
    s["reasonClass"] = json!("ordinary-mismatch");
    s["reason"] = json!("steps[1]: the ordinary answer differs from the projection");
    let m = common::recounted(m);
    let p = write(dir.path(), "online.json", &m);
    let (_, text) = qualify(&p, &store);
    assert!(!text.contains("does not reproduce"), "{text}");
    assert!(text.contains("changed=0"), "{text}");
}

/// A recorded offline refusal whose location the source no longer shows is
/// a change, though the source still refuses with that class.
#[test]
fn a_recorded_refusal_at_another_location_is_a_change() {
    let (dir, store, sweep) = fixture();
    let mut m = manifest(&sweep);
    let i = m["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .position(|s| {
            s["reasonClass"].as_str().is_some_and(|c| {
                ![
                    "daemon-unavailable",
                    "missing-evidence",
                    "profile-changed",
                    "full-mismatch",
                    "ordinary-mismatch",
                    "source-changed",
                    "payload-changed",
                ]
                .contains(&c)
            }) && s["reason"].as_str().is_some_and(|r| r.contains(": "))
        })
        .expect("an offline refusal with a location in the swept store");
    let reason = m["sessions"][i]["reason"].as_str().unwrap().to_string();
    let detail = &reason[reason.find(": ").unwrap()..];
    m["sessions"][i]["reason"] = json!(format!("nowhere{detail}"));
    let p = write(dir.path(), "moved.json", &m);
    let (code, text) = qualify(&p, &store);
    assert_ne!(code, Some(0), "{text}");
    assert!(text.contains("refusal changed"), "{text}");
    assert!(text.contains("changed=1"), "{text}");
}
