//! Criterion benches over the default synthetic corpus: strict scan, step
//! index, decode, projection, source digest, SQLite snapshot, legacy decrypt
//! and JSON comparison, each reporting bytes/s (and elements = conversations).
//!
//! The corpus is `$AGY_AUDIT_BENCH_CORPUS`, else `target/bench-corpus`,
//! generated there once (`agy-audit corpus generate --out target/bench-corpus`).
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

use agy_audit::compare::compare_full;
use agy_audit::schema::{to_daemon_json, Schema};
use agy_audit::source::legacy::{decrypt, read_file, LegacyKey};
use agy_audit::source::scan::Scanner;
use agy_audit::source::wire_trajectory::WireTrajectory;
use agy_audit::source::{read_source, source_digest, sqlite, DecodedSource, Format, ReadOptions};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use prost_reflect::DynamicMessage;
use std::path::PathBuf;

fn corpus_root() -> PathBuf {
    let root = std::env::var_os("AGY_AUDIT_BENCH_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-corpus"));
    agy_audit::bench::ensure_corpus_of(&root, 1, |_| {})
        .unwrap_or_else(|e| panic!("bench corpus at {}: {e}", root.display()));
    root
}

struct Corpus {
    schema: Schema,
    key: LegacyKey,
    sources: Vec<DecodedSource>,
    bytes: u64,
}

fn load() -> Corpus {
    let schema = Schema::modeled().expect("schema");
    let key = LegacyKey::default();
    let paths = agy_audit::bench::sources(&corpus_root()).expect("sources");
    let sources: Vec<DecodedSource> = paths
        .iter()
        .filter_map(|p| {
            read_source(
                p,
                &ReadOptions {
                    schema: &schema,
                    legacy_key: &key,
                    collect_all: false,
                    fingerprint: false,
                },
            )
            .ok()
            .map(|mut s| {
                // the comparison bench compares against the whole tree
                s.materialize();
                s
            })
        })
        .collect();
    let bytes = sources.iter().map(|s| s.encoding.len() as u64).sum();
    Corpus {
        schema,
        key,
        sources,
        bytes,
    }
}

fn benches(c: &mut Criterion) {
    let k = load();
    let n = k.sources.len() as u64;
    let mut g = c.benchmark_group("corpus");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(k.bytes));
    g.bench_function("strict_scan", |b| {
        b.iter(|| {
            for s in &k.sources {
                let mut sc = Scanner::new(&k.schema.pool, Some(&k.schema.struct_pool), false);
                sc.scan_root(&s.encoding, &k.schema.names.trajectory);
                std::hint::black_box(sc.refused());
            }
        })
    });
    g.bench_function("step_index", |b| {
        b.iter(|| {
            for s in &k.sources {
                std::hint::black_box(
                    WireTrajectory::index(&k.schema.names, s.encoding.clone()).is_ok(),
                );
            }
        })
    });
    g.bench_function("decode_dynamic_message", |b| {
        b.iter(|| {
            for s in &k.sources {
                std::hint::black_box(
                    DynamicMessage::decode(k.schema.names.trajectory.clone(), s.encoding.clone())
                        .ok(),
                );
            }
        })
    });
    g.bench_function("projection", |b| {
        b.iter(|| {
            for s in k.sources.iter().filter_map(|s| s.wire.as_ref()) {
                std::hint::black_box(agy_audit::project::project(&k.schema, s).is_ok());
            }
        })
    });
    g.bench_function("source_digest", |b| {
        b.iter(|| {
            for s in &k.sources {
                std::hint::black_box(source_digest(&s.profile, &s.encoding));
            }
        })
    });
    g.bench_function("json_comparison", |b| {
        let fulls: Vec<(String, &DynamicMessage)> = k
            .sources
            .iter()
            .filter_map(|s| {
                s.trajectory.as_ref().map(|t| {
                    (
                        serde_json::to_string(&to_daemon_json(t)).unwrap_or_default(),
                        t,
                    )
                })
            })
            .collect();
        b.iter(|| {
            for (json, t) in &fulls {
                std::hint::black_box(compare_full(&k.schema, t, json).is_ok());
            }
        })
    });
    g.finish();

    let sqlite_paths: Vec<PathBuf> = k
        .sources
        .iter()
        .filter(|s| s.format == Format::Sqlite)
        .map(|s| s.path.clone())
        .collect();
    let mut g = c.benchmark_group("io");
    g.sample_size(10);
    g.throughput(Throughput::Elements(sqlite_paths.len() as u64));
    g.bench_function("sqlite_snapshot", |b| {
        b.iter(|| {
            for p in &sqlite_paths {
                let snap = sqlite::snapshot(p).expect("snapshot");
                std::hint::black_box(sqlite::read_rows(p, &snap).is_ok());
            }
        })
    });
    let legacy: Vec<(PathBuf, Vec<u8>)> = k
        .sources
        .iter()
        .filter(|s| s.format == Format::Protobuf)
        .filter_map(|s| read_file(&s.path).ok().map(|b| (s.path.clone(), b)))
        .collect();
    let legacy_bytes: u64 = legacy.iter().map(|(_, b)| b.len() as u64).sum();
    g.throughput(Throughput::Bytes(legacy_bytes.max(1)));
    g.bench_function("legacy_decrypt", |b| {
        b.iter(|| {
            for (p, bytes) in &legacy {
                std::hint::black_box(decrypt(p, bytes, &k.key).ok());
            }
        })
    });
    g.finish();
    eprintln!(
        "corpus: {n} conversations, {:.1} MB canonical",
        k.bytes as f64 / 1e6
    );
}

criterion_group!(corpus, benches);
criterion_main!(corpus);
