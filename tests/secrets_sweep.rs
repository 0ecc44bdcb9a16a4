//! Issue 46, "secrets stay home", for the sweep's own outputs: a store with
//! planted fake credentials is swept with and without `audit-sweep
//! --no-redact`. Redacted (the default), `manifest.json`, `sessions.csv`
//! and the `--json` summary hold no planted value and say how they
//! redacted (the manifest's `redaction` counts, the CSV's `redaction`
//! column, the summary's `redaction` member); with `--no-redact` the
//! manifest and the CSV hold planted values and each says so (`"redaction":
//! {"redacted": false}`, every CSV row NOT REDACTED, the summary's
//! `redacted: false`). One conversation's full answer is changed after a
//! planted value, so its refusal quotes one (`common::planted_mismatch`).
//! Verdicts, classes, locations, digests and the
//! `corpus/` evidence are the same either way, and a `--resume` writes the
//! whole manifest in its own mode.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{leaks, output_text, planted_store, planted_values, start_sim, sweep_command};
use serde_json::Value;
use std::path::Path;

/// Sweeps `store` into `out` against `url` with `--json` and `extra`: the
/// summary object it printed.
fn sweep(store: &Path, out: &Path, url: &str, extra: &[&str]) -> Value {
    let o = sweep_command(store, out, url)
        .arg("--json")
        .args(extra)
        .output()
        .unwrap();
    assert!(out.join("manifest.json").is_file(), "{}", output_text(&o));
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("--json prints one object: {e}\n{}", output_text(&o)))
}

/// What must not change with redaction, per session: id, verdict, class,
/// the reason's location (before its first `: `), digests, rules, steps.
fn decided(manifest: &Value) -> Vec<Value> {
    manifest["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let location = s["reason"]
                .as_str()
                .and_then(|r| r.split_once(": ").map(|(l, _)| l.to_string()));
            serde_json::json!([
                s["fileId"],
                s["verdict"],
                s["reasonClass"],
                location,
                s["sourceDigest"],
                s["payloadDigest"],
                s["rules"],
                s["steps"],
            ])
        })
        .collect()
}

/// The `redaction` cells of a `sessions.csv`, after checking that it is
/// the header's last column and every row has as many fields.
fn csv_redaction_cells(csv: &str) -> Vec<String> {
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    let header = r.headers().unwrap().clone();
    assert_eq!(header.iter().next_back(), Some("redaction"), "{header:?}");
    r.records()
        .map(|rec| {
            let rec = rec.expect("a CSV record");
            assert_eq!(rec.len(), header.len());
            rec.get(header.len() - 1).unwrap().to_string()
        })
        .collect()
}

/// A saved answer or sidecar without the attestation's time
/// (`agyReader.completeness.verifiedAt`, the one member two sweeps of the
/// same answers write differently); other files as they are.
fn without_verified_at(bytes: &[u8]) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<Value>(bytes) else {
        return bytes.to_vec();
    };
    match v
        .pointer_mut("/agyReader/completeness")
        .and_then(Value::as_object_mut)
    {
        Some(c) => {
            c.remove("verifiedAt");
            serde_json::to_vec(&v).unwrap()
        }
        None => bytes.to_vec(),
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn the_sweep_redacts_its_reasons_unless_no_redact_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    planted_store(&store);
    let values = planted_values(&store);
    // One conversation refused with a reason that quotes a planted value.
    let (quoted, value) = common::planted_mismatch(&store);
    let sim = start_sim(&store, &["--no-fault-file"]);
    let (red, raw) = (dir.path().join("red"), dir.path().join("raw"));
    let red_json = sweep(&store, &red, &sim.url, &[]);
    let raw_json = sweep(&store, &raw, &sim.url, &["--no-redact"]);

    // Redacted: no planted value anywhere, and each output says how many
    // values it redacted and by which rules.
    let (m_text, csv) = (
        read(&red.join("manifest.json")),
        read(&red.join("sessions.csv")),
    );
    for (name, text) in [
        ("manifest.json", &m_text),
        ("sessions.csv", &csv),
        ("--json", &red_json.to_string()),
    ] {
        assert_eq!(leaks(text, &values), Vec::<&str>::new(), "{name} leaks");
    }
    let m: Value = serde_json::from_str(&m_text).unwrap();
    let total = m["redaction"]["total"]
        .as_u64()
        .expect("a counted redaction");
    assert!(
        total > 0,
        "the reasons quoted planted values: {}",
        m["redaction"]
    );
    assert!(m["redaction"]["ruleset"]
        .as_str()
        .unwrap()
        .starts_with("gitleaks-v8.30.1"));
    let reason = |m: &Value| {
        let s = m["sessions"].as_array().unwrap().iter();
        let s = s.clone().find(|s| s["fileId"] == quoted.as_str()).unwrap();
        assert_eq!(s["reasonClass"], "full-mismatch", "{s}");
        s["reason"].as_str().unwrap().to_string()
    };
    let shown = reason(&m);
    assert!(
        !shown.contains(&value) && shown.contains("[REDACTED:"),
        "{shown}"
    );
    let cells = csv_redaction_cells(&csv);
    assert_eq!(cells.len(), m["sessions"].as_array().unwrap().len());
    let mut csv_total = 0;
    for c in &cells {
        let n = c
            .strip_prefix("redacted ")
            .and_then(|r| r.split_once(' '))
            .and_then(|(n, _)| n.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("a redacted row's cell: {c}"));
        assert!(c.contains("(gitleaks-v8.30.1"), "{c}");
        csv_total += n;
    }
    assert_eq!(csv_total, total, "the CSV's cells add up to the manifest's");
    assert_eq!(red_json["redaction"]["redacted"], true);
    assert_eq!(red_json["redaction"]["total"], total);
    assert_eq!(red_json["redaction"]["byRule"], m["redaction"]["byRule"]);

    // --no-redact: the planted values are there, and each output says so.
    let (m_text, csv) = (
        read(&raw.join("manifest.json")),
        read(&raw.join("sessions.csv")),
    );
    for (name, text) in [("manifest.json", &m_text), ("sessions.csv", &csv)] {
        assert!(!leaks(text, &values).is_empty(), "{name} shows them");
    }
    assert_eq!(leaks(&raw_json.to_string(), &values), Vec::<&str>::new());
    let raw_m: Value = serde_json::from_str(&m_text).unwrap();
    assert!(reason(&raw_m).contains(&value), "{}", reason(&raw_m));
    assert_eq!(raw_m["redaction"], serde_json::json!({"redacted": false}));
    let cells = csv_redaction_cells(&csv);
    assert!(!cells.is_empty());
    for c in &cells {
        assert!(c.starts_with("NOT REDACTED (--no-redact)"), "{c}");
    }
    assert_eq!(raw_json["redaction"]["redacted"], false);
    assert!(raw_json["redaction"]["note"]
        .as_str()
        .unwrap()
        .starts_with("NOT REDACTED"));

    // Verdicts, classes, locations and digests: the same either way; so is
    // the evidence under corpus/ (answers and sidecars), byte for byte.
    assert_eq!(decided(&m), decided(&raw_m));
    assert_eq!(m["counts"], raw_m["counts"]);
    let corpus = |s: &Path| {
        common::tree(&s.join("corpus"))
            .into_iter()
            .map(|(p, b)| {
                let name = p.strip_prefix(s).unwrap().display().to_string();
                (name, without_verified_at(&b))
            })
            .collect::<Vec<_>>()
    };
    let (a, b) = (corpus(&red), corpus(&raw));
    assert_eq!(
        a.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        b.iter().map(|(n, _)| n).collect::<Vec<_>>()
    );
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        assert!(x == y, "{name} differs between the two sweeps");
    }
    // Both read strictly and recheck as recorded.
    for s in [&red, &raw] {
        let o = common::bin()
            .arg("audit-qualify")
            .arg(s.join("manifest.json"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    }

    // A later writer writes in its own mode: the unredacted sweep resumed
    // without --no-redact redacts the earlier run's reasons and counts
    // them; the redacted one resumed with it says redacted: false.
    let json = sweep(&store, &raw, &sim.url, &["--resume"]);
    let text = read(&raw.join("manifest.json"));
    assert_eq!(leaks(&text, &values), Vec::<&str>::new(), "resumed leaks");
    assert_eq!(
        leaks(&read(&raw.join("sessions.csv")), &values),
        Vec::<&str>::new()
    );
    let resumed: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(resumed["redaction"]["total"], total);
    assert_eq!(json["redaction"]["redacted"], true);
    assert_eq!(decided(&resumed), decided(&m));
    let json = sweep(&store, &red, &sim.url, &["--resume", "--no-redact"]);
    let resumed: Value = serde_json::from_str(&read(&red.join("manifest.json"))).unwrap();
    assert_eq!(resumed["redaction"], serde_json::json!({"redacted": false}));
    assert_eq!(json["redaction"]["redacted"], false);
    drop(sim);
}
