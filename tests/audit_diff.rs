//! `agy-audit audit-diff OLD NEW` through the real binary (issue 33 item 1):
//! every classification, the precedence and `also`, the exit codes (0, 5 on
//! a regression, 1 for an incomplete input unless --allow-incomplete), the
//! Markdown report with its inline chart, and atomic output that never
//! replaces an input.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::outcome::SOURCE_ONLY_REASON;
use common::{bin, output_text};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const P: &str = "sqlite-v1-format0-modeled-000000000000-r000000";
const Q: &str = "sqlite-v1-format0-modeled-111111111111-r000000";

/// The conversation id a test names `name` by (a manifest's `fileId` is a
/// bare conversation id: a UUID).
fn uid(name: &str) -> String {
    use sha2::{Digest, Sha256};
    let h = Sha256::digest(name.as_bytes());
    let x: String = h.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &x[0..8],
        &x[8..12],
        &x[12..16],
        &x[16..20],
        &x[20..32]
    )
}

/// A session record as the manifest spells it, for the conversation named
/// `name`.
fn session(name: &str, verdict: &str, class: Option<&str>, reason: Option<&str>) -> Value {
    let id = uid(name);
    let verdict_value = match verdict {
        "not-fetched" | "error" => Value::Null,
        v => json!(v),
    };
    json!({
        "fileId": id,
        "cascadeId": id,
        "format": "sqlite",
        "profile": P,
        "sourceDigest": format!("sha256:{name}"),
        "payloadDigest": null,
        "verdict": verdict_value,
        "reason": reason,
        "reasonClass": class,
        "rules": [],
        "steps": 1,
        "bytes": 1,
        "stepTypes": {},
    })
}

fn verified(id: &str) -> Value {
    session(id, "verified", None, None)
}

fn refused(id: &str, class: &str, reason: &str) -> Value {
    let verdict = match class {
        "full-mismatch" | "ordinary-mismatch" | "source-changed" | "payload-changed" => {
            "incomplete"
        }
        _ => "unknown",
    };
    session(id, verdict, Some(class), Some(reason))
}

/// A version-5 manifest of `sessions` (counts recounted: a manifest is read
/// strictly), written to `dir/name`.
fn manifest(dir: &Path, name: &str, complete: bool, mut sessions: Vec<Value>) -> PathBuf {
    sessions.sort_by(|a, b| a["fileId"].as_str().cmp(&b["fileId"].as_str()));
    let zero = json!({"selected": 0, "verified": 0, "verifiedSourceOnly": 0, "sqlite": 0,
        "protobuf": 0, "notVerified": 0, "legacyUnverifiable": 0, "unknown": 0,
        "incomplete": 0, "notFetched": 0, "error": 0});
    let m = json!({
        "manifestVersion": 5,
        "complete": complete,
        "root": "/store",
        "endpoint": "http://127.0.0.1:1",
        "started": "2026-01-01T00:00:00Z",
        "finished": "2026-01-01T00:01:00Z",
        "profiles": [P],
        "counts": zero,
        "countsByProfile": {},
        "countsByFormat": {},
        "timing": {"wallSeconds": 1.0, "sourceBytes": 0, "steps": 0, "concurrency": 1, "jobs": 1},
        "sessions": sessions,
    });
    let mut m = common::recounted(m);
    // A manifest holding a not-fetched session is never complete (the
    // strict reader refuses one that says so).
    let fetched = m["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["reasonClass"] != "daemon-unavailable");
    m["complete"] = json!(complete && fetched);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    path
}

fn diff(args: &[&std::ffi::OsStr]) -> (Option<i32>, String, String) {
    let o = bin().arg("audit-diff").args(args).output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn json_diff(old: &Path, new: &Path) -> (Option<i32>, Value) {
    // --allow-incomplete: a manifest with a not-fetched session is
    // incomplete, and the classification of such a session is under test.
    let (code, stdout, stderr) = diff(&[
        old.as_os_str(),
        new.as_os_str(),
        "--json".as_ref(),
        "--allow-incomplete".as_ref(),
    ]);
    let v = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    (code, v)
}

fn change_of(v: &Value, id: &str) -> (String, Vec<String>) {
    let s = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["fileId"] == uid(id))
        .unwrap_or_else(|| panic!("no session {id}: {v:#}"));
    (
        s["change"].as_str().unwrap().to_string(),
        s["also"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect(),
    )
}

#[test]
fn every_classification_with_precedence_also_and_exit_5() {
    let dir = tempfile::tempdir().unwrap();
    let uf = |id| {
        refused(
            id,
            "unknown-field",
            "steps[3].metadata: unknown field 900 (varint)",
        )
    };
    let mut source_moved = verified("source");
    source_moved["sourceDigest"] = json!("sha256:changed");
    let mut reprofiled = verified("profile");
    reprofiled["profile"] = json!(Q);
    let mut refused_moved = uf("refused-moved");
    refused_moved["sourceDigest"] = json!("sha256:changed");
    refused_moved["profile"] = json!(Q);
    let old = manifest(
        dir.path(),
        "old.json",
        true,
        vec![
            verified("still"),
            uf("same"),
            verified("gone"),
            verified("refused"),
            uf("fixed"),
            verified("source-only"),
            uf("class"),
            uf("place"),
            refused(
                "rule",
                "unqualified-projection",
                "steps[2]: outside its bound (modern-run-command)",
            ),
            uf("wording"),
            verified("source"),
            verified("profile"),
            verified("refused-moved"),
            session(
                "nf",
                "not-fetched",
                Some("daemon-unavailable"),
                Some("http://127.0.0.1:1: refused"),
            ),
        ],
    );
    let new = manifest(
        dir.path(),
        "new.json",
        true,
        vec![
            verified("still"),
            uf("same"),
            verified("new"),
            refused("refused", "ordinary-mismatch", "steps[1].x: differs"),
            verified("fixed"),
            session(
                "source-only",
                "verified-source-only",
                None,
                Some(SOURCE_ONLY_REASON),
            ),
            refused(
                "class",
                "unknown-enum",
                "steps[3].metadata: unknown enum value 10",
            ),
            refused(
                "place",
                "unknown-field",
                "steps[4].metadata: unknown field 900 (varint)",
            ),
            refused(
                "rule",
                "unqualified-projection",
                "steps[2]: outside its bound (modern-read-file)",
            ),
            refused(
                "wording",
                "unknown-field",
                "steps[3].metadata: unknown field 901 (varint)",
            ),
            source_moved,
            reprofiled,
            refused_moved,
            session(
                "nf",
                "not-fetched",
                Some("daemon-unavailable"),
                Some("http://127.0.0.1:2: refused"),
            ),
        ],
    );
    let (code, v) = json_diff(&old, &new);
    let expected: &[(&str, &str, &[&str])] = &[
        ("still", "still-verified", &[]),
        ("same", "unchanged", &[]),
        ("new", "appeared", &[]),
        ("gone", "disappeared", &[]),
        ("refused", "newly-refused", &[]),
        ("fixed", "newly-verified", &[]),
        ("source-only", "reason-changed", &[]),
        ("class", "reason-changed", &[]),
        ("place", "reason-changed", &[]),
        ("rule", "reason-changed", &[]),
        ("wording", "unchanged", &[]),
        ("source", "source-changed", &[]),
        ("profile", "profile-changed", &[]),
        (
            "refused-moved",
            "newly-refused",
            &["source-changed", "profile-changed"],
        ),
        ("nf", "unchanged", &[]),
    ];
    for (id, change, also) in expected {
        assert_eq!(
            change_of(&v, id),
            (
                change.to_string(),
                also.iter().map(|s| s.to_string()).collect()
            ),
            "{id}"
        );
    }
    // Regressions: newly refused (2) and a verified session gone (1).
    assert_eq!(v["regressed"], 3, "{v:#}");
    assert_eq!(code, Some(5));
    let counts = &v["counts"];
    for (change, n) in [
        ("still-verified", 1),
        ("newly-verified", 1),
        ("newly-refused", 2),
        ("reason-changed", 4),
        ("profile-changed", 1),
        ("source-changed", 1),
        ("appeared", 1),
        ("disappeared", 1),
        ("unchanged", 3),
    ] {
        assert_eq!(counts[change], n, "{change}: {counts}");
    }
    assert_eq!(counts.as_object().unwrap().len(), 9);
    // The sessions' sides, as the shape has them.
    let refused = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["fileId"] == uid("rule"))
        .unwrap();
    assert_eq!(refused["old"]["rules"], json!(["modern-run-command"]));
    assert_eq!(refused["new"]["rules"], json!(["modern-read-file"]));
    assert_eq!(refused["new"]["location"], "steps[2]");
    let gone = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["fileId"] == uid("gone"))
        .unwrap();
    assert_eq!(gone["new"], Value::Null);

    // The Markdown report: tables of classes and rules, the inline chart.
    let (code, md, _) = diff(&[
        old.as_os_str(),
        new.as_os_str(),
        "--allow-incomplete".as_ref(),
    ]);
    assert_eq!(code, Some(5));
    assert!(md.contains("# agy-audit release diff"), "{md}");
    assert!(md.contains("**3 sessions regressed**"), "{md}");
    assert!(md.contains("<svg") && md.contains("</svg>"), "{md}");
    assert!(md.contains("| ordinary-mismatch | 0 | 1 | +1 |"), "{md}");
    assert!(md.contains("| modern-read-file |"), "{md}");
}

#[test]
fn nothing_regressed_exits_0_and_source_only_is_not_a_regression() {
    let dir = tempfile::tempdir().unwrap();
    let old = manifest(
        dir.path(),
        "old.json",
        true,
        vec![verified("a"), verified("b")],
    );
    let new = manifest(
        dir.path(),
        "new.json",
        true,
        vec![
            verified("a"),
            session("b", "verified-source-only", None, Some(SOURCE_ONLY_REASON)),
            verified("c"),
        ],
    );
    let (code, v) = json_diff(&old, &new);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["regressed"], 0);
    assert_eq!(change_of(&v, "b").0, "reason-changed");
    // A not-fetched or erroring session that was verified is a regression.
    for gone_bad in [
        session("b", "not-fetched", Some("daemon-unavailable"), Some("x: y")),
        session("b", "error", None, Some("/x.db: damaged")),
        refused("b", "source-changed", "source: changed during the fetch"),
    ] {
        // A manifest holding a not-fetched session is not complete (the
        // strict reader refuses one that says so), so it is compared with
        // --allow-incomplete.
        let fetched = gone_bad["reasonClass"] != "daemon-unavailable";
        let new = manifest(
            dir.path(),
            "bad.json",
            fetched,
            vec![verified("a"), gone_bad],
        );
        let (code, stdout, stderr) = diff(&[
            old.as_os_str(),
            new.as_os_str(),
            "--json".as_ref(),
            "--allow-incomplete".as_ref(),
        ]);
        let v: Value =
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
        assert_eq!(code, Some(5), "{v:#}");
        assert_eq!(change_of(&v, "b").0, "newly-refused");
    }
}

#[test]
fn an_incomplete_input_is_refused_unless_allowed_and_then_said_first() {
    let dir = tempfile::tempdir().unwrap();
    let old = manifest(dir.path(), "old.json", true, vec![verified("a")]);
    let new = manifest(dir.path(), "new.json", false, vec![verified("a")]);
    let (code, stdout, stderr) = diff(&[old.as_os_str(), new.as_os_str()]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("not complete") && stderr.contains("new.json"),
        "{stderr}"
    );
    let (code, md, _) = diff(&[
        old.as_os_str(),
        new.as_os_str(),
        "--allow-incomplete".as_ref(),
    ]);
    assert_eq!(code, Some(0));
    let first = md.lines().next().unwrap();
    assert!(
        first.contains("Incomplete input") && first.contains("new.json"),
        "{first}"
    );
    let (code, stdout, _) = diff(&[
        old.as_os_str(),
        new.as_os_str(),
        "--allow-incomplete".as_ref(),
        "--json".as_ref(),
    ]);
    assert_eq!(code, Some(0));
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert!(v["incompleteInputs"][0]
        .as_str()
        .unwrap()
        .contains("new.json"));
}

#[test]
fn out_is_written_atomically_and_never_over_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let old = manifest(dir.path(), "old.json", true, vec![verified("a")]);
    let new = manifest(dir.path(), "new.json", true, vec![verified("a")]);
    let out = dir.path().join("diff.md");
    let (code, stdout, stderr) = diff(&[
        old.as_os_str(),
        new.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.is_empty());
    let first = std::fs::read_to_string(&out).unwrap();
    assert!(first.starts_with("# agy-audit release diff"));
    // Same input, same bytes; an existing output needs --force.
    let again = bin()
        .args(["audit-diff"])
        .args([&old, &new])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_ne!(again.status.code(), Some(0), "{}", output_text(&again));
    let forced = bin()
        .args(["audit-diff"])
        .args([&old, &new])
        .arg("--out")
        .arg(&out)
        .arg("--force")
        .output()
        .unwrap();
    assert_eq!(forced.status.code(), Some(0), "{}", output_text(&forced));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), first);
    // Never over an input, even with --force.
    let before = std::fs::read(&new).unwrap();
    let o = bin()
        .args(["audit-diff"])
        .args([&old, &new])
        .arg("--out")
        .arg(&new)
        .arg("--force")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    assert!(output_text(&o).contains("an input"), "{}", output_text(&o));
    assert_eq!(std::fs::read(&new).unwrap(), before);
}
