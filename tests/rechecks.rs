//! Rechecks compare what they were given with what the current source
//! yields: the verdict kind and the source-only record of a saved
//! attestation (sidecar) or manifest session; a missing sidecar is unknown.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

use agy_corpus::corpus::{generate, GenerateOptions, PlanOptions};
use agy_corpus::sim::{DaemonSim, SimOptions};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agy-audit"));
    c.env_remove("ANTIGRAVITY_DAEMON_URL")
        .env_remove("ANTIGRAVITY_CLI_ROOT")
        .env_remove("AGY_AUDIT_SCHEMA");
    c
}

fn store(dir: &Path) -> PathBuf {
    let store = dir.join("store");
    generate(&GenerateOptions {
        out: store.clone(),
        plan: PlanOptions {
            conversations: 16,
            seed: 4,
            near_miss_rate: 0.0,
            fault_rate: 0.0,
            scale: 0.1,
        },
        force: false,
    })
    .unwrap();
    store
}

fn sim(store: &Path) -> DaemonSim {
    let mut o = SimOptions::new(store);
    o.write_cli_log = false;
    o.load_fault_file = false;
    DaemonSim::start(o).unwrap()
}

fn run(c: &mut Command) -> (Option<i32>, String) {
    let o = c.output().unwrap();
    (
        o.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

#[test]
fn a_tampered_attestation_or_manifest_record_does_not_hold() {
    let d = tempfile::tempdir().unwrap();
    let store = store(d.path());
    let daemon = sim(&store);
    let out = d.path().join("sweep");
    let (code, text) = run(bin()
        .args(["audit-sweep", "--quiet", "--root"])
        .arg(&store)
        .arg("--out")
        .arg(&out)
        .args(["--daemon-url", &daemon.url()]));
    assert_eq!(code, Some(0), "{text}");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    let sessions = manifest["sessions"].as_array().unwrap();
    let so = sessions
        .iter()
        .find(|s| s["verdict"] == "verified-source-only")
        .expect("a verified-source-only session");
    assert!(!so["sourceOnly"].as_array().unwrap().is_empty(), "{so}");
    let id = so["fileId"].as_str().unwrap();
    let source = ["db", "pb"]
        .iter()
        .map(|e| store.join("conversations").join(format!("{id}.{e}")))
        .find(|p| p.exists())
        .unwrap();

    // sync writes the sidecar; a clean recheck holds
    let sidecar = d.path().join("side.json");
    let (code, text) = run(bin()
        .args(["sync", "--daemon-url", &daemon.url(), "--out"])
        .arg(&sidecar)
        .arg(&source));
    assert_eq!(code, Some(0), "{text}");
    daemon.stop();
    let recheck = |sidecar: &Path| {
        run(bin()
            .args(["sync", "--recheck", "--out"])
            .arg(sidecar)
            .arg(&source))
    };
    let (code, text) = recheck(&sidecar);
    assert_eq!(code, Some(0), "{text}");

    let doc: Value = serde_json::from_slice(&std::fs::read(&sidecar).unwrap()).unwrap();
    // the saved source-only record edited: incomplete
    let mut edited = doc.clone();
    edited["agyReader"]["completeness"]["sourceOnly"] = serde_json::json!([]);
    let tampered = d.path().join("tampered.json");
    std::fs::write(&tampered, serde_json::to_vec(&edited).unwrap()).unwrap();
    let (code, text) = recheck(&tampered);
    assert_eq!(code, Some(4), "{text}");
    assert!(text.contains("source-only record changed"), "{text}");
    // the verdict kind edited: incomplete
    let mut edited = doc.clone();
    edited["agyReader"]["completeness"]["verdict"] = serde_json::json!("verified");
    std::fs::write(&tampered, serde_json::to_vec(&edited).unwrap()).unwrap();
    let (code, text) = recheck(&tampered);
    assert_eq!(code, Some(4), "{text}");
    // a missing sidecar is unknown (missing evidence), not an I/O error
    let (code, text) = recheck(&d.path().join("absent.json"));
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("missing evidence"), "{text}");
    // another conversation's sidecar is refused
    let other_id = sessions
        .iter()
        .map(|s| s["fileId"].as_str().unwrap())
        .find(|x| *x != id)
        .unwrap();
    let mut other = doc.clone();
    other["cascadeId"] = serde_json::json!(other_id);
    std::fs::write(&tampered, serde_json::to_vec(&other).unwrap()).unwrap();
    let (code, text) = recheck(&tampered);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("belongs to another conversation"), "{text}");

    // audit-qualify: the manifest's source-only record edited
    let mut m = manifest.clone();
    for s in m["sessions"].as_array_mut().unwrap() {
        if s["fileId"] == id {
            s["sourceOnly"][0]["field"] = serde_json::json!("exa.cortex_pb.Other.1");
        }
    }
    let edited_manifest = d.path().join("edited.json");
    std::fs::write(&edited_manifest, serde_json::to_vec(&m).unwrap()).unwrap();
    let (code, text) = run(bin().arg("audit-qualify").arg(&edited_manifest));
    assert_ne!(code, Some(0), "{text}");
    assert!(text.contains("holding=15 changed=1"), "{text}");
    let (code, text) = run(bin().arg("audit-qualify").arg(out.join("manifest.json")));
    assert_eq!(code, Some(0), "{text}");
}

/// sync does not replace a file it did not write unless --force.
#[test]
fn sync_refuses_to_replace_a_file_it_did_not_write() {
    let d = tempfile::tempdir().unwrap();
    let store = store(d.path());
    let daemon = sim(&store);
    let truth = std::fs::read_to_string(store.join(".truth/expected.jsonl")).unwrap();
    let id = truth
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|t| t["verdict"] == "verified")
        .unwrap()["fileId"]
        .as_str()
        .unwrap()
        .to_string();
    let notes = d.path().join("notes.json");
    std::fs::write(&notes, b"my notes").unwrap();
    let sync = |force: bool| {
        let mut c = bin();
        c.args(["sync", "--root"])
            .arg(&store)
            .args(["--daemon-url", &daemon.url(), "--out"])
            .arg(&notes)
            .arg(&id);
        if force {
            c.arg("--force");
        }
        run(&mut c)
    };
    let (code, text) = sync(false);
    assert_eq!(code, Some(2), "{text}");
    assert_eq!(std::fs::read(&notes).unwrap(), b"my notes");
    let (code, text) = sync(true);
    assert_eq!(code, Some(0), "{text}");
    // a sidecar it wrote is refreshed without --force
    let (code, text) = sync(false);
    assert_eq!(code, Some(0), "{text}");
    daemon.stop();
}
