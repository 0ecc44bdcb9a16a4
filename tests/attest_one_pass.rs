//! The one-pass reading of an answer's text against the tree it replaces,
//! byte for byte, over every daemon view of a generated store in every
//! `--json-style`: the payload digest, the sidecar bytes and the parent
//! stamp (`attest::payload`), and the response shape listings of the bare
//! trajectory and of the whole answer (`Listing::add_text`).
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

mod common;

use agy_audit::attest::{payload, payload_digest, sidecar_bytes, Completeness};
use agy_audit::shapes::Listing;
use agy_audit::verdict::VerdictKind;
use agy_corpus::sim::style::{restyle, ALL_STYLES};

fn completeness() -> Completeness {
    Completeness {
        profile: "agy-test".into(),
        source_digest: "sha256:00".into(),
        payload_digest: Some("sha256:11".into()),
        verdict: VerdictKind::Verified,
        reason: None,
        reason_class: None,
        source_only: vec![],
        rpc_only_fields: vec![],
        rpc_only_fields_unlisted: 0,
        verified_at: "2026-12-06T00:00:00Z".into(),
    }
}

fn tree_listing(v: &serde_json::Value) -> Listing {
    let mut l = Listing::new();
    l.add_document(v);
    l
}

#[test]
fn one_pass_equals_the_tree_on_every_view_in_every_style() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::small_store(dir.path(), 16, 36, 0.3, 0.1);
    let desc = agy_corpus::schema::Schema::modeled()
        .unwrap()
        .message("gemini_coder.Trajectory")
        .unwrap();
    let mut views: Vec<_> = std::fs::read_dir(store.join(".truth").join("daemon"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    views.sort();
    let c = completeness();
    let (mut ordinary, mut full) = (0, 0);
    for path in &views {
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let Some((id, which)) = name.strip_suffix(".json").and_then(|n| n.rsplit_once('.')) else {
            continue;
        };
        let view = std::fs::read(path).unwrap();
        for style in ALL_STYLES {
            let text =
                String::from_utf8(restyle(&view, &desc, style, 36, &[id, which]).unwrap()).unwrap();
            let at = format!("{name} in {style}");
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();

            // The response shape listing, bare and inside a whole answer.
            let mut bare = Listing::new();
            bare.add_text(&text).unwrap_or_else(|e| panic!("{at}: {e}"));
            assert_eq!(bare.text(), tree_listing(&v).text(), "{at}: listing");
            let answer = format!(
                "{{\"trajectory\":{text},\"status\":\"CASCADE_RUN_STATUS_IDLE\",\"numTotalSteps\":1}}"
            );
            let mut whole = Listing::new();
            whole.add_text(&answer).unwrap();
            let answer_value: serde_json::Value = serde_json::from_str(&answer).unwrap();
            assert_eq!(whole, tree_listing(&answer_value), "{at}: answer listing");

            match which {
                "ordinary" => ordinary += 1,
                "full" => full += 1,
                _ => panic!("unexpected view {name}"),
            }
            // The payload evidence (a full view is read the same way: the
            // reader does not care which answer it is).
            let read = payload::read(&text).unwrap_or_else(|e| panic!("{at}: {e}"));
            assert_eq!(read.digest(), payload_digest(&v), "{at}: digest");
            assert_eq!(
                read.parent().map(str::to_string),
                agy_audit::tree::links::parent_cascade_id(&v),
                "{at}: parent"
            );
            let (sidecar, listing) = read.into_evidence(&c);
            assert!(
                sidecar == sidecar_bytes(&v, &c),
                "{at}: sidecar bytes differ"
            );
            assert_eq!(listing, bare, "{at}: the pass's listing");
        }
    }
    assert!(
        ordinary >= 16 * ALL_STYLES.len(),
        "{ordinary} ordinary views"
    );
    assert!(full >= 16 * ALL_STYLES.len(), "{full} full views");
}

/// Not a test: the one pass's speed beside the tree's over the default
/// corpus's views (`target/bench-corpus`, made by `agy-audit bench`), fastest
/// of 3 passes each. `cargo test --release --test attest_one_pass -- --ignored
/// --nocapture`.
#[test]
#[ignore]
fn speed_of_the_one_pass_beside_the_tree() {
    let store = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-corpus");
    let Ok(dir) = std::fs::read_dir(store.join(".truth").join("daemon")) else {
        eprintln!("no {}: run `agy-audit bench` first", store.display());
        return;
    };
    let mut texts: Vec<(bool, String)> = dir
        .map(|e| e.unwrap().path())
        .map(|p| {
            let ordinary = p.to_string_lossy().ends_with(".ordinary.json");
            (ordinary, std::fs::read_to_string(p).unwrap())
        })
        .collect();
    texts.sort();
    let c = completeness();
    let mb = |ordinary: bool| {
        texts
            .iter()
            .filter(|t| t.0 == ordinary)
            .map(|t| t.1.len())
            .sum::<usize>() as f64
            / 1e6
    };
    let best = |f: &dyn Fn()| {
        (0..3)
            .map(|_| {
                let t = std::time::Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let tree = best(&|| {
        for (_, t) in texts.iter().filter(|t| t.0) {
            let v: serde_json::Value = serde_json::from_str(t).unwrap();
            let _ = payload_digest(&v);
            let _ = sidecar_bytes(&v, &c);
            tree_listing(&v);
        }
    });
    let pass = best(&|| {
        for (_, t) in texts.iter().filter(|t| t.0) {
            let _ = payload::read(t).unwrap().into_evidence(&c);
        }
    });
    let full_tree = best(&|| {
        for (_, t) in texts.iter().filter(|t| !t.0) {
            let v: serde_json::Value = serde_json::from_str(t).unwrap();
            tree_listing(&v);
        }
    });
    let full_pass = best(&|| {
        for (_, t) in texts.iter().filter(|t| !t.0) {
            Listing::new().add_text(t).unwrap();
        }
    });
    eprintln!(
        "ordinary ({:.1} MB): digest + sidecar + listing: tree {tree:.3} s, one pass {pass:.3} s ({:.2}x)",
        mb(true),
        tree / pass
    );
    eprintln!(
        "full ({:.1} MB): listing: tree {full_tree:.3} s, one pass {full_pass:.3} s ({:.2}x)",
        mb(false),
        full_tree / full_pass
    );
}
