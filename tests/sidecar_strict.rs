//! Issue 44 items 5 and 6, on a generated store served by the simulated
//! daemon:
//!
//! - a saved sidecar is read as strictly as a daemon answer: a member
//!   repeated in a step (`"status":"CORTEX_STEP_STATUS_ERROR",` before the
//!   step's real status), at the top level or inside `agyReader` is refused
//!   by `sync --recheck` (not VERIFIED, the named reason), stale in
//!   `list --check` and `doctor`, and refreshed by `watch --once` (the
//!   reader's own file failing its attestation);
//! - a sidecar this reader wrote from an answer with a top-level RPC-only
//!   member is the reader's own: `watch --once` keeps it fresh and refreshes
//!   it when stale (exit 0), `sync` replaces it, `list` and `doctor` call it
//!   the reader's.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_corpus::sim::{DaemonSim, SimOptions};
use common::{bin, output_text, small_store};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn sim(store: &Path) -> DaemonSim {
    let mut o = SimOptions::new(store);
    o.load_fault_file = false;
    DaemonSim::start(o).unwrap()
}

fn run(args: &[&str], paths: &[&Path]) -> (i32, String) {
    let mut c = bin();
    c.args(args);
    for p in paths {
        c.arg(p);
    }
    let o = c.output().unwrap();
    (o.status.code().unwrap_or(-1), output_text(&o))
}

/// `watch --once` over `store` against `url`.
fn watch_once(store: &Path, url: &str) -> (i32, String) {
    let mut c = bin();
    c.args(["watch", "--once", "--daemon-url", url, "--root"])
        .arg(store);
    let o = c.output().unwrap();
    (o.status.code().unwrap_or(-1), output_text(&o))
}

/// The store's `.db` sources, sorted.
fn sources(store: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(store.join("conversations"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "db"))
        .collect();
    v.sort();
    v
}

fn id_of(source: &Path) -> String {
    source.file_stem().unwrap().to_string_lossy().into_owned()
}

fn sidecar(source: &Path) -> PathBuf {
    source.with_file_name(format!("{}.trajectory.json", id_of(source)))
}

/// `list --check --json`'s `fresh` per id.
fn listed_fresh(store: &Path) -> Vec<(String, Option<bool>, String)> {
    let (code, text) = run(&["list", "--check", "--json", "--root"], &[store]);
    assert_eq!(code, 0, "{text}");
    text.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["id"].as_str().unwrap().to_string(),
                v["fresh"].as_bool(),
                v["sidecar"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `doctor --json`'s sidecar counts of the one root.
fn doctor_sidecars(store: &Path) -> Value {
    let (_, text) = run(&["doctor", "--json", "--root"], &[store]);
    let start = text.find('{').unwrap_or_else(|| panic!("{text}"));
    let v: Value = serde_json::from_str(&text[start..]).unwrap_or_else(|e| panic!("{e}: {text}"));
    v["roots"][0]["sidecars"].clone()
}

/// Inserts `extra` before the first `before` at or after `from` in the file.
fn insert_before(path: &Path, from: &str, before: &str, extra: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    let base = text.find(from).unwrap_or_else(|| panic!("no {from}"));
    let at = base
        + text[base..]
            .find(before)
            .unwrap_or_else(|| panic!("no {before} in {}", path.display()));
    let out = format!("{}{extra}{}", &text[..at], &text[at..]);
    std::fs::write(path, out).unwrap();
}

#[test]
fn a_repeated_member_in_a_saved_sidecar_never_rechecks_and_is_refreshed() {
    let d = tempfile::tempdir().unwrap();
    let store = small_store(d.path(), 4, 44, 0.0, 0.1);
    let daemon = sim(&store);
    let url = daemon.url();
    let (code, text) = watch_once(&store, &url);
    assert_eq!(code, 0, "{text}");
    let all = sources(&store);
    assert_eq!(all.len(), 4);
    for s in &all {
        let (code, text) = run(&["sync", "--recheck"], &[s]);
        assert_eq!(code, 0, "an honest sidecar rechecks: {text}");
    }

    // (1) a step's status given twice, the first one ERROR; (2) the
    // top-level cascadeId twice; (3) the attested verdict twice, inside
    // agyReader. The tree (last member wins) reads each as the original.
    let tampered = [&all[0], &all[1], &all[2]];
    insert_before(
        &sidecar(tampered[0]),
        "\"steps\":",
        "\"status\":\"CORTEX_STEP_STATUS_",
        "\"status\":\"CORTEX_STEP_STATUS_ERROR\",",
    );
    let id1 = id_of(tampered[1]);
    insert_before(
        &sidecar(tampered[1]),
        "{",
        "\"",
        &format!("\"cascadeId\":\"{id1}\","),
    );
    insert_before(
        &sidecar(tampered[2]),
        "\"agyReader\":",
        "\"verdict\":\"verified",
        "\"verdict\":\"incomplete\",",
    );
    for s in tampered {
        let (code, text) = run(&["sync", "--recheck"], &[s]);
        assert_eq!(code, 4, "not verified: {text}");
        assert!(!text.contains("VERIFIED"), "{text}");
        assert!(text.contains("INCOMPLETE"), "{text}");
        assert!(
            text.contains("does not read strictly")
                && text.contains("a key repeated in one object"),
            "the named reason: {text}"
        );
    }
    let untouched = &all[3];
    let (code, text) = run(&["sync", "--recheck"], &[untouched]);
    assert_eq!(code, 0, "{text}");

    // list --check: stale, the recorded state still shown
    let listed = listed_fresh(&store);
    for (id, fresh, state) in &listed {
        let is_tampered = tampered.iter().any(|s| id_of(s) == *id);
        assert_eq!(*fresh, Some(!is_tampered), "{id}: {listed:?}");
        assert!(state.starts_with("verified"), "{id}: {state}");
    }
    // doctor: three stale, one fresh
    let sidecars = doctor_sidecars(&store);
    assert_eq!(sidecars["stale"], 3, "{sidecars}");
    assert_eq!(sidecars["fresh"], 1, "{sidecars}");
    assert_eq!(sidecars["missing"], 0, "{sidecars}");

    // watch refreshes the reader's own files
    let (code, text) = watch_once(&store, &url);
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("refusing"), "{text}");
    assert_eq!(
        text.matches("was stale: the sidecar does not read strictly")
            .count(),
        3,
        "{text}"
    );
    for s in tampered {
        let bytes = std::fs::read_to_string(sidecar(s)).unwrap();
        assert!(
            !bytes.contains("CORTEX_STEP_STATUS_ERROR\",\"status\""),
            "{bytes}"
        );
        assert!(!bytes.contains("\"verdict\":\"incomplete\""), "{bytes}");
        let (code, text) = run(&["sync", "--recheck"], &[s]);
        assert_eq!(code, 0, "refreshed: {text}");
    }
    let sidecars = doctor_sidecars(&store);
    assert_eq!(sidecars["fresh"], 4, "{sidecars}");
    daemon.stop();
}

#[test]
fn a_sidecar_with_a_top_level_rpc_only_member_is_the_readers_own() {
    let d = tempfile::tempdir().unwrap();
    let store = small_store(d.path(), 3, 45, 0.0, 0.1);
    let all = sources(&store);
    let source = &all[0];
    let id = id_of(source);
    // the daemon's ordinary answer carries a member the schema does not
    // know at the top level of its trajectory (RPC-only, kept)
    let view = store
        .join(".truth/daemon")
        .join(format!("{id}.ordinary.json"));
    let mut v: Value = serde_json::from_slice(&std::fs::read(&view).unwrap()).unwrap();
    v.as_object_mut()
        .unwrap()
        .insert("displayDensity".into(), "DISPLAY_DENSITY_COMPACT".into());
    std::fs::write(&view, serde_json::to_vec(&v).unwrap()).unwrap();
    let daemon = sim(&store);
    let url = daemon.url();

    let (code, text) = run(&["sync", "--daemon-url", &url], &[source]);
    assert_eq!(code, 0, "{text}");
    let doc: Value = serde_json::from_slice(&std::fs::read(sidecar(source)).unwrap()).unwrap();
    assert_eq!(doc["displayDensity"], "DISPLAY_DENSITY_COMPACT");
    assert!(
        doc["agyReader"]["completeness"]["rpcOnlyFields"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "displayDensity"),
        "{}",
        doc["agyReader"]
    );
    let (code, text) = run(&["sync", "--recheck"], &[source]);
    assert_eq!(code, 0, "{text}");

    // watch: the reader's own, fresh; the others synced
    let (code, text) = watch_once(&store, &url);
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("refusing"), "{text}");
    // list and doctor: the reader's, fresh
    let listed = listed_fresh(&store);
    let row = listed.iter().find(|(i, _, _)| *i == id).unwrap();
    assert_eq!(row.1, Some(true), "{listed:?}");
    assert!(row.2.starts_with("verified"), "{listed:?}");
    let (code, text) = run(&["list", "--json", "--root"], &[&store]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains(&id) && l.contains("\"sidecar\":\"verified")),
        "{text}"
    );
    let sidecars = doctor_sidecars(&store);
    assert_eq!(sidecars["fresh"], 3, "{sidecars}");

    // stale (attested under an older profile): watch refreshes it
    let mut doc = doc;
    doc["agyReader"]["completeness"]["profile"] = "sqlite-v1-format0-agy-1.3.0-19be6af38f7b".into();
    std::fs::write(sidecar(source), serde_json::to_vec(&doc).unwrap()).unwrap();
    let (code, text) = watch_once(&store, &url);
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("refusing"), "{text}");
    assert!(
        text.contains("was stale: attested under another profile"),
        "{text}"
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(sidecar(source)).unwrap()).unwrap();
    assert_ne!(
        doc["agyReader"]["completeness"]["profile"],
        "sqlite-v1-format0-agy-1.3.0-19be6af38f7b"
    );
    assert_eq!(doc["displayDensity"], "DISPLAY_DENSITY_COMPACT");

    // sync replaces it
    let (code, text) = run(&["sync", "--daemon-url", &url], &[source]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("synced"), "{text}");
    daemon.stop();
}
