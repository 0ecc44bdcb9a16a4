//! `audit-sweep --json` prints its summary object however the run ends
//! (issue 45 item 4): also when the daemon is unreachable (a pinned URL on a
//! closed port) or the root holds no conversation, with the same members
//! as a finished sweep's summary, an `error` member naming why and the
//! `exitCode` the command ends with.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use common::output_text as text;
use serde_json::Value;
use std::path::Path;

/// A URL on 127.0.0.1 where nothing listens: a port bound, then closed.
fn closed_port_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("http://127.0.0.1:{port}")
}

/// `audit-sweep --json --quiet --root root --out out --daemon-url url`:
/// its output and the one JSON object on its standard output.
fn sweep_json(root: &Path, out: &Path, url: &str) -> (std::process::Output, Value) {
    let o = common::sweep_command(root, out, url)
        .arg("--json")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("one JSON object on stdout ({e}): {}", text(&o)));
    (o, v)
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object().expect("an object").keys().cloned().collect()
}

/// The members no manifest decided are null, the others what the run
/// settled before it stopped.
fn assert_unstarted(v: &Value, out: &Path, root: &Path, url: &str) {
    for key in [
        "manifest",
        "pending",
        "sessions",
        "skipped",
        "profiles",
        "counts",
        "countsByProfile",
        "countsByFormat",
        "resume",
        "shard",
    ] {
        assert_eq!(v[key], Value::Null, "{key}: {v:#}");
    }
    assert_eq!(v["complete"], false);
    assert_eq!(v["interrupted"], false);
    assert_eq!(v["out"], out.display().to_string());
    assert_eq!(
        v["root"],
        std::fs::canonicalize(root).unwrap().display().to_string()
    );
    assert_eq!(v["endpoint"], url);
}

#[test]
fn an_unreachable_daemon_still_gets_the_summary_object() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::small_store(dir.path(), 3, 7, 0.0, 0.1);
    let out = dir.path().join("sweep");
    let url = closed_port_url();
    let (o, v) = sweep_json(&store, &out, &url);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(v["exitCode"], 1, "{v:#}");
    assert_eq!(v["error"]["kind"], "daemon-unreachable", "{v:#}");
    let message = v["error"]["message"].as_str().expect("a message");
    assert!(
        message.contains("unreachable") && message.contains(&url),
        "{message}"
    );
    assert_eq!(v["daemonDown"], message, "{v:#}");
    assert_unstarted(&v, &out, &store, &url);
    assert!(
        !out.exists(),
        "a sweep that did not start leaves nothing behind"
    );
    // The error still goes to standard error too.
    assert!(String::from_utf8_lossy(&o.stderr).contains("unreachable"));
}

#[test]
fn an_empty_root_still_gets_the_summary_object() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("empty");
    std::fs::create_dir_all(root.join("conversations")).unwrap();
    let out = dir.path().join("sweep");
    let url = closed_port_url();
    let (o, v) = sweep_json(&root, &out, &url);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(v["exitCode"], 1, "{v:#}");
    assert_eq!(v["error"]["kind"], "empty-root", "{v:#}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no conversation to audit"),
        "{v:#}"
    );
    assert_eq!(v["daemonDown"], Value::Null, "{v:#}");
    assert_unstarted(&v, &out, &root, &url);
    assert!(!out.exists());
}

/// A usage error found past argument parsing (a --root that is no store)
/// gets the object too, with exit code 2 in it and on the process.
#[test]
fn a_usage_error_gets_the_summary_object_with_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let missing = dir.path().join("missing");
    let (o, v) = sweep_json(&missing, &out, &closed_port_url());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(v["exitCode"], 2, "{v:#}");
    assert_eq!(v["error"]["kind"], "usage", "{v:#}");
    assert_eq!(v["root"], Value::Null, "not settled: {v:#}");
    assert_eq!(v["endpoint"], Value::Null, "not settled: {v:#}");
}

/// `--resume` of a folder whose manifest the strict reader refuses is an
/// error (exit 1), not a usage error: the corrupt manifest is named with its
/// problem, word for word as before the errors were split by operation
/// (issue 47 item 5).
#[test]
fn a_corrupt_resumed_manifest_is_an_error_not_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::small_store(dir.path(), 2, 7, 0.0, 0.1);
    let out = dir.path().join("sweep");
    std::fs::create_dir_all(&out).unwrap();
    let manifest = out.join("manifest.json");
    std::fs::write(&manifest, b"not json").unwrap();
    let url = closed_port_url();
    let o = common::sweep_command(&store, &out, &url)
        .args(["--resume", "--json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"]["kind"], "error", "{v:#}");
    let message = v["error"]["message"].as_str().expect("a message");
    let head = format!(
        "{}: corrupt: manifest: not JSON: byte 0: ",
        manifest.display()
    );
    assert!(message.starts_with(&head), "{v:#}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&head),
        "{}",
        text(&o)
    );
}

/// The object of a sweep that could not start has exactly the members of a
/// finished sweep's summary, in the same order; a finished sweep's `error`
/// is null.
#[test]
fn the_failed_summary_has_the_finished_summarys_members() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::small_store(dir.path(), 3, 7, 0.0, 0.1);
    let sim = common::start_sim(&store, &["--no-fault-file"]);
    let (o, finished) = sweep_json(&store, &dir.path().join("ok"), &sim.url);
    drop(sim);
    assert!(matches!(o.status.code(), Some(0 | 3)), "{}", text(&o));
    assert_eq!(finished["error"], Value::Null, "{finished:#}");
    assert_eq!(finished["exitCode"], o.status.code().unwrap());
    let (_, failed) = sweep_json(&store, &dir.path().join("down"), &closed_port_url());
    assert_eq!(keys(&failed), keys(&finished));
}
