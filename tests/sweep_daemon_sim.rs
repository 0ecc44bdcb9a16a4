//! End to end against the simulated daemon, with nothing faked in between:
//! the binary generates a corpus, `agy-audit daemon-sim` serves it on
//! 127.0.0.1 in a child process, `agy-audit audit-sweep` finds it through
//! `<root>/cli.log` and sweeps the store, and every verdict must equal the
//! generator's ground truth (`.truth/expected.jsonl`), with no false verified.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{bin, generate_store, scratch_dir, start_sim, truth_verdicts};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

fn generate(store: &Path, conversations: usize, fault_rate: f64) {
    let (conversations, fault_rate) = (conversations.to_string(), fault_rate.to_string());
    generate_store(
        store,
        &[
            "--conversations",
            &conversations,
            "--fault-rate",
            &fault_rate,
        ],
    );
}

/// The planned daemon faults of `.truth/faults.txt`: `ID:KIND[:ARG]` lines.
fn planned_faults(store: &Path) -> HashMap<String, String> {
    let text = std::fs::read_to_string(store.join(".truth/faults.txt")).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let mut parts = l.trim().split(':');
            Some((parts.next()?.to_string(), parts.next()?.to_string()))
        })
        .collect()
}

/// `fileId` → (verdict, reasonClass, daemon fault kind).
fn truth(store: &Path) -> HashMap<String, (String, Option<String>, Option<String>)> {
    let faults = planned_faults(store);
    truth_verdicts(store)
        .into_iter()
        .map(|(id, (verdict, class))| {
            let fault = faults.get(&id).cloned();
            (id, (verdict, class, fault))
        })
        .collect()
}

/// Every file under `conversations/`, with its bytes.
fn sources(store: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(store.join("conversations")).unwrap() {
        let p = e.unwrap().path();
        out.insert(p.clone(), std::fs::read(&p).unwrap());
    }
    out
}

fn sweep(store: &Path, out: &Path, extra: &[&str]) -> (Option<i32>, serde_json::Value) {
    let o = bin()
        .args([
            "audit-sweep",
            "--quiet",
            "--root",
            store.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args(extra)
        .output()
        .unwrap();
    let m = std::fs::read(out.join("manifest.json")).unwrap_or_else(|e| {
        panic!(
            "no manifest ({e}); stderr: {}",
            String::from_utf8_lossy(&o.stderr)
        )
    });
    (o.status.code(), serde_json::from_slice(&m).unwrap())
}

/// A session's outcome as the manifest tells it: a verdict, `not-fetched`
/// (no verdict, the daemon failed) or `error`.
fn outcome(s: &serde_json::Value) -> &str {
    match (s["verdict"].as_str(), s["reasonClass"].as_str()) {
        (Some(v), _) => v,
        (None, Some("daemon-unavailable")) => "not-fetched",
        (None, _) => "error",
    }
}

/// Checks each session against the truth; returns the fault kinds seen.
fn check_against_truth(store: &Path, m: &serde_json::Value) -> BTreeSet<String> {
    let truth = truth(store);
    assert_eq!(m["manifestVersion"], 5);
    let sessions = m["sessions"].as_array().unwrap();
    // A finished sweep is complete unless the daemon failed a session
    // (missing evidence is never a finished audit).
    let not_fetched = sessions.iter().any(|s| outcome(s) == "not-fetched");
    assert_eq!(
        m["complete"], !not_fetched,
        "complete unless something was not fetched"
    );
    assert_eq!(
        sessions.len(),
        truth.len(),
        "every conversation is in the manifest"
    );
    let mut faults = BTreeSet::new();
    let mut off = Vec::new();
    for s in sessions {
        let id = s["fileId"].as_str().unwrap();
        let (verdict, class, fault) = truth.get(id).unwrap_or_else(|| panic!("{id}: no truth"));
        let got_verdict = outcome(s);
        let got_class = s["reasonClass"].as_str().map(str::to_string);
        if got_verdict.starts_with("verified") {
            assert!(
                verdict.starts_with("verified"),
                "{id}: FALSE VERIFIED ({got_verdict}) where the truth is {verdict} {class:?} (fault {fault:?})"
            );
            assert!(s["payloadDigest"]
                .as_str()
                .is_some_and(|d| d.starts_with("sha256:")));
        }
        if (got_verdict, &got_class) != (verdict.as_str(), class) {
            off.push(format!(
                "{id}: got {got_verdict} {got_class:?} ({}), truth {verdict} {class:?} (fault {fault:?})",
                s["reason"]
            ));
        }
        if let Some(f) = fault {
            faults.insert(f.clone());
        }
    }
    assert!(
        off.is_empty(),
        "verdicts off the truth:\n{}",
        off.join("\n")
    );
    faults
}

#[test]
fn every_daemon_fault_meets_its_expected_verdict_through_daemon_sim() {
    let dir = scratch_dir("e2e-faults");
    let store = dir.join("store");
    // 80 conversations, half of the clean ones faulted: every fault kind at
    // least twice (the plan deals them round-robin).
    generate(&store, 80, 0.5);
    let before = sources(&store);
    let sim = start_sim(&store, &[]);
    let out = dir.join("sweep");
    let (code, m) = sweep(
        &store,
        &out,
        &[
            "--concurrency",
            "8",
            "--timeout",
            "4",
            "--max-response-bytes",
            "33554432",
        ],
    );
    let url = sim.url.clone();
    drop(sim);
    // The sweep found the daemon through the listening line of cli.log.
    assert_eq!(sim_url_of(&store), url);
    assert_eq!(m["endpoint"].as_str(), Some(url.as_str()));
    let faults = check_against_truth(&store, &m);
    let all: BTreeSet<String> = [
        "stale-cache",
        "same-step-stale",
        "dropped-field",
        "extra-rpc-field",
        "version-skew",
        "http-500",
        "http-503",
        "reset",
        "latency",
        "jitter",
        "hang",
        "truncated-body",
        "oversized-body",
        "invalid-json",
        "mutate-source",
        "not-loaded",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(faults, all, "the corpus exercises every fault kind");
    // Independently of the generator's truth file: what each fault must give.
    let expected = |kind: &str| -> Option<(&str, &str)> {
        Some(match kind {
            "stale-cache" | "same-step-stale" | "extra-rpc-field" => {
                ("incomplete", "full-mismatch")
            }
            "dropped-field" | "version-skew" => ("incomplete", "ordinary-mismatch"),
            "mutate-source" => ("incomplete", "source-changed"),
            "latency" | "jitter" => return None,
            _ => ("not-fetched", "daemon-unavailable"),
        })
    };
    let planned = planned_faults(&store);
    for s in m["sessions"].as_array().unwrap() {
        let id = s["fileId"].as_str().unwrap();
        let Some(kind) = planned.get(id) else {
            continue;
        };
        let got = (outcome(s), s["reasonClass"].as_str());
        match expected(kind) {
            Some((v, c)) => assert_eq!(got, (v, Some(c)), "{id}: {kind}: {}", s["reason"]),
            None => assert!(
                got.0.starts_with("verified"),
                "{id}: {kind} only delays: {got:?}"
            ),
        }
    }
    // Sessions not fetched (the daemon failed them) make the sweep exit 1.
    assert_eq!(code, Some(1), "sessions not fetched make the sweep exit 1");
    // Sources are untouched by the audit; only the daemon's mutate-source
    // fault rewrites its own targets.
    let mutated: BTreeSet<String> = truth(&store)
        .into_iter()
        .filter(|(_, t)| t.2.as_deref() == Some("mutate-source"))
        .map(|(id, _)| id)
        .collect();
    for (path, bytes) in before {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if mutated.iter().any(|id| name.starts_with(id.as_str())) {
            continue;
        }
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name} unchanged");
    }
    // audit-qualify refuses the manifest: it is not complete.
    let o = bin()
        .args(["audit-qualify"])
        .arg(out.join("manifest.json"))
        .args(["--root", store.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not complete"));
    // The CI regression on the fetched sessions, the store as it is now:
    // every recorded result holds but those of the sources the daemon rewrote.
    let mut fetched = m.clone();
    fetched["complete"] = serde_json::json!(true);
    fetched["sessions"]
        .as_array_mut()
        .unwrap()
        .retain(|s| outcome(s) != "not-fetched");
    let fetched = common::recounted(fetched);
    let kept = fetched["sessions"].as_array().unwrap().len();
    let fetched_path = dir.join("fetched.json");
    std::fs::write(&fetched_path, serde_json::to_vec(&fetched).unwrap()).unwrap();
    let o = bin()
        .args(["audit-qualify"])
        .arg(&fetched_path)
        .args(["--root", store.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let summary = format!("holding={} changed={}", kept - mutated.len(), mutated.len());
    assert!(stdout.contains(&summary), "want {summary}:\n{stdout}");
    assert_eq!(o.status.code(), Some(4), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn default_corpus_through_daemon_sim_equals_the_truth() {
    let dir = scratch_dir("e2e-default");
    let store = dir.join("store");
    generate_store(&store, &[]);
    let before = sources(&store);
    let sim = start_sim(&store, &[]);
    let out = dir.join("sweep");
    let (code, m) = sweep(&store, &out, &["--concurrency", "16"]);
    drop(sim);
    check_against_truth(&store, &m);
    let c = &m["counts"];
    assert_eq!(c["selected"], 405);
    assert_eq!(c["incomplete"], 0);
    assert_eq!(c["error"], 0);
    // Unknown sessions (deliberate near-misses) make the sweep exit 3.
    assert_eq!(code, Some(3));
    assert_eq!(sources(&store), before, "sources unchanged");
    // The captured manifest committed for CI says the same.
    let o = bin()
        .args(["audit-qualify", "manifests/default-corpus.manifest.json"])
        .args(["--root", store.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The URL the simulated daemon announced in `<store>/cli.log`.
fn sim_url_of(store: &Path) -> String {
    let log = std::fs::read_to_string(store.join("cli.log")).unwrap();
    let port = log
        .lines()
        .rev()
        .find_map(|l| {
            l.split("listening on random port at ")
                .nth(1)?
                .split_whitespace()
                .next()
                .map(str::to_string)
        })
        .expect("a listening line");
    format!("http://127.0.0.1:{port}")
}
