//! Criterion bench: `schema extract` over a 200 MB synthetic binary (random
//! bytes with the modeled set's records embedded at odd offsets).

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

use agy_audit::schema::extract::extract;
use agy_audit::schema::MODELED_SET;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use prost::Message;

fn synthetic(size: usize) -> Vec<u8> {
    let set = prost_types::FileDescriptorSet::decode(MODELED_SET).expect("modeled set");
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut b: Vec<u8> = (0..size)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let step = size / (set.file.len() + 1);
    for (i, f) in set.file.iter().enumerate() {
        let r = f.encode_to_vec();
        let at = step * (i + 1) + 1 + 2 * i;
        b[at..at + r.len()].copy_from_slice(&r);
    }
    b
}

fn bench(c: &mut Criterion) {
    let b = synthetic(200 << 20);
    let mut g = c.benchmark_group("schema-extract");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(b.len() as u64));
    g.bench_function("extract-200MB", |bench| {
        bench.iter(|| extract(&b).expect("extract"))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
