//! Deterministic output, through the binary on a generated store: the same
//! unchanged input gives byte-identical offline exports (JSON and Markdown),
//! reports and charts, manifests, session CSVs and sidecars, apart from the
//! documented fields that record when a file was made (the manifest's
//! `started`, `finished` and `timing.wallSeconds`, a sidecar's
//! `agyReader.completeness.verifiedAt`).
//!
//! Protobuf map entries are the trap: prost-reflect keeps them in a
//! `HashMap`, so each run would write them in another order. The corpus
//! carries map fields (the options145 per-tool map, the compaction146
//! customization kind map, generic step arguments) and the test asserts that
//! the exports show maps with several entries, each sorted by key text.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{bin, generate_store, scratch_dir, start_sim};
use prost_reflect::{Kind, MessageDescriptor};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How often each map-bearing source is exported per format.
const RUNS: usize = 6;

/// A store of 40 conversations (seed 7): several carry per_tool and
/// kind_enablement maps, most carry generic step arguments.
fn store(dir: &Path) -> PathBuf {
    let store = dir.join("store");
    generate_store(&store, &["--conversations", "40", "--seed", "7"]);
    store
}

/// Every conversation source of `store`, in name order.
fn sources(store: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(store.join("conversations"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("db") | Some("pb")
            )
        })
        .collect();
    out.sort();
    out
}

fn export(store: &Path, source: &Path, format: &str) -> Vec<u8> {
    let o = bin()
        .args(["export-offline", "--allow-unknown", "--format", format])
        .args(["--root", store.to_str().unwrap()])
        .arg(source)
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0) | Some(3)),
        "{}: {}",
        source.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// What [`maps`] saw: map objects with 2+ entries, and the paths of maps
/// whose keys are not sorted by their UTF-8 bytes.
#[derive(Default)]
struct Maps {
    several: usize,
    unsorted: Vec<String>,
}

/// Walks `v`, a message of type `desc` in proto3 JSON, noting its maps.
fn maps(v: &Value, desc: &MessageDescriptor, path: &str, found: &mut Maps) {
    let Value::Object(obj) = v else {
        return;
    };
    if desc.full_name() == "google.protobuf.Any" {
        let inner = obj
            .get("@type")
            .and_then(Value::as_str)
            .and_then(|u| u.rsplit_once('/'))
            .and_then(|(_, n)| desc.parent_pool().get_message_by_name(n));
        if let Some(inner) = inner {
            maps(v, &inner, path, found);
        }
        return;
    }
    for (key, child) in obj {
        let Some(field) = desc.get_field_by_json_name(key) else {
            continue;
        };
        let here = format!("{path}.{key}");
        let Kind::Message(m) = field.kind() else {
            continue;
        };
        if field.is_map() {
            let entries = child.as_object().expect("a map renders as an object");
            let keys: Vec<&String> = entries.keys().collect();
            if !keys.windows(2).all(|w| w[0].as_bytes() < w[1].as_bytes()) {
                found.unsorted.push(format!("{here}: {keys:?}"));
            }
            if entries.len() >= 2 {
                found.several += 1;
            }
            if let Kind::Message(value) = m.map_entry_value_field().kind() {
                for (k, x) in entries {
                    maps(x, &value, &format!("{here}[{k}]"), found);
                }
            }
        } else if let Value::Array(items) = child {
            for (i, x) in items.iter().enumerate() {
                maps(x, &m, &format!("{here}[{i}]"), found);
            }
        } else {
            maps(child, &m, &here, found);
        }
    }
}

fn short(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn offline_exports_are_byte_identical_run_after_run() {
    let dir = scratch_dir("determinism-export");
    let store = store(&dir);
    let schema = agy_audit::schema::Schema::modeled().unwrap();
    let trajectory = schema.names.trajectory.clone();
    let mut map_sources = 0;
    let mut differing = Vec::new();
    let mut unsorted = Vec::new();
    for source in sources(&store) {
        let first = export(&store, &source, "json");
        if first.is_empty() {
            continue;
        }
        let v: Value = serde_json::from_slice(&first).unwrap();
        let mut found = Maps::default();
        maps(&v, &trajectory, "", &mut found);
        if let Some(first) = found.unsorted.first() {
            unsorted.push(format!(
                "{}: {} maps, e.g. {first}",
                source.display(),
                found.unsorted.len()
            ));
        }
        let found = found.several;
        let runs = if found > 0 {
            map_sources += 1;
            RUNS
        } else {
            2
        };
        for format in ["json", "md"] {
            let outputs: Vec<Vec<u8>> = (0..runs)
                .map(|i| {
                    if i == 0 && format == "json" {
                        first.clone()
                    } else {
                        export(&store, &source, format)
                    }
                })
                .collect();
            assert!(!outputs[0].is_empty(), "{}: no {format}", source.display());
            if outputs.windows(2).any(|w| w[0] != w[1]) {
                let hashes: Vec<String> = outputs.iter().map(|o| short(o)).collect();
                differing.push(format!(
                    "{} {format} ({found} maps with 2+ entries): {}",
                    source.display(),
                    hashes.join(" ")
                ));
            }
        }
    }
    assert!(
        map_sources >= 3,
        "only {map_sources} exports show a map with 2+ entries; the test would prove nothing"
    );
    assert!(
        differing.is_empty(),
        "exports differ between runs:\n{}",
        differing.join("\n")
    );
    assert!(
        unsorted.is_empty(),
        "map entries not in key text order:\n{}",
        unsorted.join("\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every file under `dir`, relative path → bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                out.insert(p.strip_prefix(dir).unwrap().to_path_buf(), bytes);
            }
        }
    }
    out
}

/// `bytes` (JSON) without the members at `pointers`, written back as
/// pretty JSON in the order read; every pointer must exist.
fn without(bytes: &[u8], pointers: &[&str], name: &Path) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(bytes).unwrap();
    for p in pointers {
        let (parent, key) = p.rsplit_once('/').unwrap();
        let removed = v
            .pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .and_then(|o| o.shift_remove(key));
        assert!(removed.is_some(), "{}: no {p}", name.display());
    }
    serde_json::to_vec_pretty(&v).unwrap()
}

fn sweep(store: &Path, url: &str, out: &Path) {
    let o = bin()
        .args(["audit-sweep", "--quiet", "--root", store.to_str().unwrap()])
        .args(["--daemon-url", url, "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.join("manifest.json").exists(),
        "no manifest: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn report(manifest: &Path, dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    std::fs::create_dir_all(dir).unwrap();
    let o = bin()
        .arg("report")
        .arg(manifest)
        .arg("--out")
        .arg(dir.join("report.md"))
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "report: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    files(dir)
}

#[test]
fn sweeps_and_reports_are_byte_identical_apart_from_their_times() {
    let dir = scratch_dir("determinism-sweep");
    let store = store(&dir);
    let sim = start_sim(&store, &["--port", "0"]);
    let (a, b) = (dir.join("sweep-a"), dir.join("sweep-b"));
    sweep(&store, &sim.url, &a);
    sweep(&store, &sim.url, &b);
    drop(sim);
    let (fa, fb) = (files(&a), files(&b));
    assert_eq!(
        fa.keys().collect::<Vec<_>>(),
        fb.keys().collect::<Vec<_>>(),
        "the same files"
    );
    let manifest: Value = serde_json::from_slice(&fa[Path::new("manifest.json")]).unwrap();
    let verified = manifest["counts"]["verified"].as_u64().unwrap_or(0)
        + manifest["counts"]["verifiedSourceOnly"]
            .as_u64()
            .unwrap_or(0);
    let mut sidecars = 0;
    let mut differing = Vec::new();
    for (name, x) in &fa {
        let y = &fb[name];
        let text = name.to_string_lossy();
        let (x, y) = if text == "manifest.json" {
            let times = ["/started", "/finished", "/timing/wallSeconds"];
            (without(x, &times, name), without(y, &times, name))
        } else if text.ends_with(".trajectory.json") {
            sidecars += 1;
            let times = ["/agyReader/completeness/verifiedAt"];
            (without(x, &times, name), without(y, &times, name))
        } else {
            (x.clone(), y.clone())
        };
        if x != y {
            differing.push(format!("{text}: {} vs {}", short(&x), short(&y)));
        }
    }
    assert!(
        differing.is_empty(),
        "sweep outputs differ:\n{}",
        differing.join("\n")
    );
    assert!(fa.contains_key(Path::new("sessions.csv")));
    let first_reason = manifest["sessions"]
        .as_array()
        .and_then(|s| s.iter().find_map(|x| x["reason"].as_str()))
        .unwrap_or("");
    assert!(
        verified > 0,
        "no session verified, so no sidecar to compare; counts {}, e.g. {first_reason}",
        manifest["counts"]
    );
    assert_eq!(sidecars as u64, verified, "a sidecar per verified session");
    // The report and its chart, twice from the same manifest.
    let manifest = a.join("manifest.json");
    let (ra, rb) = (
        report(&manifest, &dir.join("report-a")),
        report(&manifest, &dir.join("report-b")),
    );
    assert!(ra.contains_key(Path::new("report.svg")), "{:?}", ra.keys());
    assert_eq!(ra, rb, "the report and its chart differ between runs");
    let _ = std::fs::remove_dir_all(&dir);
}
