//! What the fuzz targets (`fuzz/`, docs/reliability.md) found, kept: every
//! input under `tests/fixtures/fuzz/<target>/` is replayed through the same
//! library entry points as its target (`agy_audit::fuzzing`) with the same
//! checks, on the stable toolchain. Each must end as a typed error or a
//! refusal, never a panic.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

use agy_audit::fuzzing;
use agy_audit::schema::Schema;
use agy_audit::source::sqlite::Strategy;
use std::path::{Path, PathBuf};

fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fuzz")
        .join(target);
    let mut out: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .map(|d| {
            d.map(|e| e.expect("entry").path())
                .filter(|p| p.is_file())
                .map(|p| {
                    let b = std::fs::read(&p).expect("fixture");
                    (p, b)
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn schema() -> Schema {
    Schema::modeled().expect("modeled schema")
}

#[test]
fn scan_inputs() {
    let schema = schema();
    for (path, data) in inputs("scan") {
        let mut src = fuzzing::decode_trajectory(&schema, &data, false);
        if src.qualified() {
            src.materialize();
            assert!(
                src.qualified(),
                "{}: qualified but undecodable",
                path.display()
            );
        }
        let _ = fuzzing::decode_trajectory(&schema, &data, true);
    }
}

#[test]
fn sqlite_snapshot_inputs() {
    let schema = schema();
    for (_, data) in inputs("sqlite_snapshot") {
        let _ = fuzzing::sqlite_source(&schema, &data, None, Strategy::Auto);
    }
}

#[test]
fn wal_replay_inputs() {
    let schema = schema();
    for (path, data) in inputs("wal_replay") {
        let (db, log) = fuzzing::split2(&data);
        let memory = fuzzing::sqlite_source(&schema, db, Some(log), Strategy::Auto);
        let disk = fuzzing::sqlite_source(&schema, db, Some(log), Strategy::Disk);
        if let (Ok(m), Ok(d)) = (&memory, &disk) {
            assert_eq!(m.encoding, d.encoding, "{}", path.display());
        }
    }
}

#[test]
fn legacy_envelope_inputs() {
    let schema = schema();
    for (_, data) in inputs("legacy_envelope") {
        let _ = fuzzing::legacy_source(&schema, &data);
    }
}

#[test]
fn compare_json_inputs() {
    use agy_audit::compare::{stream, value, MAX_REPORTED_PATHS};
    use agy_audit::pipeline::{prepare, AuditContext};
    use agy_audit::source::legacy::LegacyKey;
    let schema = schema();
    let key = LegacyKey::default();
    let ctx = AuditContext {
        schema: &schema,
        key: &key,
        client: None,
        bracket_retries: 0,
    };
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/fixtures/compare/f7cb245c-5845-485a-b742-99cb2d064317.pb");
    let mut p = prepare(&ctx, &fixture).expect("the fixture reads");
    let full = p.source.materialize().expect("decodes").clone();
    let ordinary = p.projection.as_ref().expect("projected").ordinary(&full);
    for (path, data) in inputs("compare_json") {
        let Ok(text) = std::str::from_utf8(&data) else {
            continue;
        };
        for expected in [&full, &ordinary] {
            let fast = stream::equals(expected, text);
            let diffs = value::diff_text(expected, text, MAX_REPORTED_PATHS);
            assert!(!fast || diffs.is_empty(), "{}: {diffs:?}", path.display());
        }
    }
}

#[test]
fn manifest_inputs() {
    use agy_audit::manifest::read::parse_strict;
    for (path, data) in inputs("manifest") {
        if let Ok(m) = parse_strict(&data) {
            let again = m.to_json();
            let back = parse_strict(&again)
                .unwrap_or_else(|e| panic!("{}: written back: {e}", path.display()));
            assert_eq!(back.to_json(), again, "{}", path.display());
        }
    }
}

#[test]
fn source_only_inputs() {
    let schema = schema();
    for (_, data) in inputs("source_only") {
        let (prompt, rest) = fuzzing::split2(&data);
        let (payload, _) = fuzzing::split2(rest);
        let _ = fuzzing::planner50(payload);
        let _ = fuzzing::prompt23(&schema, prompt, payload);
    }
}

#[test]
fn descriptor_extract_inputs() {
    use agy_audit::schema::extract;
    for (path, data) in inputs("descriptor_extract") {
        if let Ok(x) = extract::extract(&data) {
            let m = extract::verify(&x.manifest(None), &data);
            assert!(m.is_empty(), "{}: {m:?}", path.display());
        }
    }
}

#[test]
fn schema_load_inputs() {
    for (_, data) in inputs("schema_load") {
        if let Ok(schema) = fuzzing::schema_from_file_bytes(&data) {
            let _ = fuzzing::decode_trajectory(&schema, &[], false);
        }
    }
}
