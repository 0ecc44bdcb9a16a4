//! The SQLite reader's fast path builds the canonical encoding while it
//! reads the rows (each step payload copied once, straight into the
//! encoding) and checks each row's redundant columns against the payload
//! inside that encoding. Over a generated corpus (near-misses and WAL
//! stores included) it must give exactly what the reference path gives:
//! `read_rows`, then every row checked, then `trajectory_encoding`: the
//! same refusals in the same order, the same encoding bytes, the same
//! source digest.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

use agy_audit::schema::Schema;
use agy_audit::source::columns::{check_step_row, StepColumns};
use agy_audit::source::legacy::LegacyKey;
use agy_audit::source::reconstruct::{read_rows_streamed, steps_streamable, trajectory_encoding};
use agy_audit::source::sqlite::{read_rows, snapshot};
use agy_audit::source::{digest_of, read_source, ReadOptions};
use agy_corpus::corpus::{generate, GenerateOptions, PlanOptions};

#[test]
fn the_streamed_encoding_and_checks_are_the_reference_ones() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    generate(&GenerateOptions {
        out: root.clone(),
        plan: PlanOptions {
            conversations: 60,
            seed: 5,
            ..PlanOptions::default()
        },
        force: false,
    })
    .unwrap();
    let s = Schema::modeled().unwrap();
    let names = &s.names;
    assert!(steps_streamable(names), "the modeled schema streams");
    let key = LegacyKey::default();
    let opts = ReadOptions {
        schema: &s,
        legacy_key: &key,
        collect_all: false,
        fingerprint: false,
    };
    let cols = StepColumns::new(names);
    let (mut compared, mut refused) = (0, 0);
    for e in std::fs::read_dir(root.join("conversations")).unwrap() {
        let path = e.unwrap().path();
        if path.extension().and_then(|x| x.to_str()) != Some("db") {
            continue;
        }
        let what = path.display().to_string();
        // Reference: rows with their payloads, each row checked, then the
        // encoding built from the rows.
        let snap = snapshot(&path).unwrap();
        let (rows, mut want) = read_rows(&path, &snap).unwrap();
        for row in &rows.steps {
            want.extend(check_step_row(names, row));
        }
        let want_encoding = trajectory_encoding(names, &rows);
        drop(snap);
        // The fast path.
        let snap = snapshot(&path).unwrap();
        let (srows, mut got, head) = read_rows_streamed(&path, &snap, names).unwrap();
        assert_eq!(srows.steps.len(), rows.steps.len(), "{what}");
        let got_encoding = match head {
            Some(h) => {
                assert_eq!(h.payloads.len(), srows.steps.len(), "{what}");
                for ((row, range), reference) in
                    srows.steps.iter().zip(&h.payloads).zip(&rows.steps)
                {
                    assert!(row.step_payload.is_empty(), "{what}: payload kept twice");
                    assert_eq!(h.bytes[range.clone()], reference.step_payload[..], "{what}");
                    got.extend(cols.check_payload(names, row, &h.bytes[range.clone()]));
                }
                h.finish(names, &srows)
            }
            None => {
                for row in &srows.steps {
                    got.extend(cols.check(names, row));
                }
                trajectory_encoding(names, &srows)
            }
        };
        let show = |r: &[agy_audit::verdict::Refusal]| {
            r.iter()
                .map(|r| format!("{:?} {} {}", r.class, r.location, r.detail))
                .collect::<Vec<_>>()
        };
        assert_eq!(show(&got), show(&want), "{what}");
        assert_eq!(
            got_encoding.as_ref().map_err(|r| r.to_string()),
            want_encoding.as_ref().map_err(|r| r.to_string()),
            "{what}"
        );
        // And the whole reader: the digest `digest_of` computes on the
        // reference path.
        let src = read_source(&path, &opts).unwrap();
        assert_eq!(
            src.source_digest,
            digest_of(&path, &opts).unwrap(),
            "{what}"
        );
        if let Ok(e) = &want_encoding {
            assert_eq!(src.encoding[..], e[..], "{what}");
        }
        compared += 1;
        refused += usize::from(!src.qualified());
    }
    assert!(compared >= 40, "{compared} SQLite sources");
    assert!(refused > 0, "the corpus's near-misses are compared too");
}
