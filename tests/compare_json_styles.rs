//! Values, not text: the simulated daemon re-encodes its answers in every
//! legal `--json-style` (nine-digit times, proto field names, enum numbers,
//! 64-bit integers as numbers, indentation, a seeded mix of all of them and
//! more), and the sweep's verdicts must equal the generator's ground truth
//! (`.truth/expected.jsonl`) under each, with no false verified, and be the
//! same verdicts as under the canonical spelling.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

mod common;

use common::{bin, generate_store, scratch_dir, start_sim, truth_verdicts};
use std::collections::BTreeMap;
use std::path::Path;

const STYLES: [&str; 7] = [
    "canonical",
    "nine-digit-times",
    "proto-names",
    "enum-numbers",
    "int64-numbers",
    "spaced",
    "mixed",
];

/// Content faults added on the command line, by id, with the verdict each
/// must give instead of the truth's (the generator's truth knows only the
/// faults it planned).
type Overrides = Vec<(String, &'static str, &'static str)>;

/// Sweeps `store` through a daemon-sim in `style`; checks every verdict
/// against the truth (or `overrides`) and returns the verdict counts and
/// payload digests.
fn sweep_in_style(
    dir: &Path,
    store: &Path,
    style: &str,
    overrides: &Overrides,
) -> (BTreeMap<String, usize>, BTreeMap<String, String>) {
    let faults: Vec<String> = overrides
        .iter()
        .map(|(id, kind, _)| format!("{id}:{kind}"))
        .collect();
    let mut options = vec!["--json-style", style];
    for f in &faults {
        options.extend(["--fault", f.as_str()]);
    }
    let sim = start_sim(store, &options);
    assert!(
        sim.announcement.contains(&format!("JSON style {style}")),
        "{}",
        sim.announcement
    );
    let out = dir.join(format!("sweep-{style}"));
    let o = bin()
        .args(["audit-sweep", "--quiet", "--root", store.to_str().unwrap()])
        .args(["--out", out.to_str().unwrap()])
        .args(["--daemon-url", &sim.url, "--concurrency", "8"])
        .output()
        .unwrap();
    drop(sim);
    let m: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out.join("manifest.json")).unwrap_or_else(|e| {
            panic!(
                "{style}: no manifest ({e}); stderr: {}",
                String::from_utf8_lossy(&o.stderr)
            )
        }),
    )
    .unwrap();
    assert_eq!(m["complete"], true, "{style}: a finished sweep");
    let mut truth = truth_verdicts(store);
    for (id, _, class) in overrides {
        truth.insert(id.clone(), ("incomplete".into(), Some(class.to_string())));
    }
    let sessions = m["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), truth.len(), "{style}: every conversation");
    let mut counts = BTreeMap::new();
    let mut digests = BTreeMap::new();
    let mut off = Vec::new();
    for s in sessions {
        let id = s["fileId"].as_str().unwrap();
        let (verdict, class) = truth.get(id).unwrap_or_else(|| panic!("{id}: no truth"));
        let got = s["verdict"].as_str().unwrap_or("error");
        let got_class = s["reasonClass"].as_str().map(str::to_string);
        assert!(
            !got.starts_with("verified") || verdict.starts_with("verified"),
            "{style}: {id}: FALSE VERIFIED ({got}) where the truth is {verdict} {class:?}"
        );
        if (got, &got_class) != (verdict.as_str(), class) {
            off.push(format!(
                "{id}: got {got} {got_class:?} ({}), truth {verdict} {class:?}",
                s["reason"]
            ));
        }
        *counts.entry(got.to_string()).or_insert(0) += 1;
        if let Some(d) = s["payloadDigest"].as_str() {
            digests.insert(id.to_string(), d.to_string());
        }
    }
    assert!(
        off.is_empty(),
        "{style}: verdicts off the truth:\n{}",
        off.join("\n")
    );
    println!("{style}: {counts:?}");
    (counts, digests)
}

#[test]
fn every_json_style_gives_the_truths_verdicts() {
    let dir = scratch_dir("styles-small");
    let store = dir.join("store");
    // Near-misses at a high rate, so each style meets refusals as well as
    // verified conversations.
    generate_store(
        &store,
        &[
            "--conversations",
            "60",
            "--seed",
            "3",
            "--near-miss-rate",
            "0.3",
        ],
    );
    // A mismatch must still be one in every spelling: three verified
    // conversations get a content fault each.
    let mut verified: Vec<String> = truth_verdicts(&store)
        .into_iter()
        .filter(|(_, (v, _))| v == "verified")
        .map(|(id, _)| id)
        .collect();
    verified.sort();
    assert!(verified.len() > 25, "{}", verified.len());
    let overrides: Overrides = vec![
        (verified[0].clone(), "stale-cache", "full-mismatch"),
        (verified[1].clone(), "dropped-field", "ordinary-mismatch"),
        (verified[2].clone(), "extra-rpc-field", "full-mismatch"),
    ];
    let (canonical, canonical_digests) = sweep_in_style(&dir, &store, "canonical", &overrides);
    assert!(
        canonical.get("verified").copied().unwrap_or(0) > 20,
        "{canonical:?}"
    );
    assert_eq!(canonical.get("incomplete"), Some(&3), "{canonical:?}");
    for style in &STYLES[1..] {
        let (counts, digests) = sweep_in_style(&dir, &store, style, &overrides);
        assert_eq!(counts, canonical, "{style}: the same verdicts");
        assert_eq!(
            digests.keys().collect::<Vec<_>>(),
            canonical_digests.keys().collect::<Vec<_>>(),
            "{style}: the same conversations verified"
        );
        if *style == "spaced" {
            // Whitespace is no part of the canonical JSON the digest covers.
            assert_eq!(digests, canonical_digests, "spaced: the same digests");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_default_corpus_in_the_mixed_style_gives_the_truths_verdicts() {
    let dir = scratch_dir("styles-default");
    let store = dir.join("store");
    generate_store(&store, &[]);
    let (counts, _) = sweep_in_style(&dir, &store, "mixed", &Vec::new());
    assert_eq!(counts.values().sum::<usize>(), 405);
    assert_eq!(counts.get("incomplete"), None, "{counts:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
