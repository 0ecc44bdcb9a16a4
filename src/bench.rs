//! Decode-throughput measurement for `agy-audit bench`: offline verify
//! (snapshot + strict decode + projection + digest) against SHA-256 over the
//! same bytes, measured in the same run on one core, plus peak RSS.

use crate::discover::discover;
use crate::error::Result;
use crate::pipeline::{prepare, AuditContext};
use crate::schema::Schema;
use crate::source::legacy::LegacyKey;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Offline verify figures.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OfflineFigures {
    pub conversations: usize,
    pub steps: u64,
    /// Canonical source bytes verified.
    pub bytes: u64,
    pub seconds: f64,
    pub conversations_per_sec: f64,
    pub steps_per_sec: f64,
    pub mb_per_sec: f64,
    /// SHA-256 over the same bytes, one core.
    pub sha256_mb_per_sec: f64,
    /// verify MB/s ÷ SHA-256 MB/s.
    pub ratio_to_sha256: f64,
    pub qualified: usize,
}

fn mbps(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / 1e6 / secs.max(1e-9)
}

/// The sources of a store, in discovery order.
pub fn sources(root: &Path) -> Result<Vec<PathBuf>> {
    Ok(discover(root)?
        .sources
        .into_iter()
        .map(|s| s.path)
        .collect())
}

/// Verifies every source once on the calling thread; returns the figures and
/// the canonical encodings (for the hash and peer comparisons).
pub fn offline_verify(
    schema: &Schema,
    key: &LegacyKey,
    paths: &[PathBuf],
    repeat: usize,
) -> Result<(OfflineFigures, Vec<Vec<u8>>)> {
    let ctx = AuditContext {
        schema,
        key,
        client: None,
        bracket_retries: 0,
    };
    let mut encodings = Vec::with_capacity(paths.len());
    let mut steps = 0u64;
    let mut bytes = 0u64;
    let mut qualified = 0;
    let start = Instant::now();
    for round in 0..repeat.max(1) {
        for p in paths {
            let prepared = prepare(&ctx, p)?;
            steps += prepared.source.steps as u64;
            bytes += prepared.source.encoding.len() as u64;
            if round == 0 {
                qualified += usize::from(prepared.refusal().is_none());
                encodings.push(prepared.source.encoding);
            }
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let hash_secs = sha256_seconds(&encodings, repeat);
    let n = paths.len() * repeat.max(1);
    let mb = mbps(bytes, seconds);
    let sha = mbps(bytes, hash_secs);
    Ok((
        OfflineFigures {
            conversations: n,
            steps,
            bytes,
            seconds,
            conversations_per_sec: n as f64 / seconds.max(1e-9),
            steps_per_sec: steps as f64 / seconds.max(1e-9),
            mb_per_sec: mb,
            sha256_mb_per_sec: sha,
            ratio_to_sha256: mb / sha.max(1e-9),
            qualified,
        },
        encodings,
    ))
}

/// Seconds SHA-256 takes over `encodings`, `repeat` times, on one core.
pub fn sha256_seconds(encodings: &[Vec<u8>], repeat: usize) -> f64 {
    let start = Instant::now();
    let mut acc = 0u8;
    for _ in 0..repeat.max(1) {
        for e in encodings {
            acc ^= Sha256::digest(e)[0];
        }
    }
    std::hint::black_box(acc);
    start.elapsed().as_secs_f64()
}

/// Peak resident set size of this process (VmHWM), in bytes, where the OS reports it.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Writes length-prefixed (u32 little-endian) encodings for the peer decoder.
pub fn write_payloads(path: &Path, encodings: &[Vec<u8>]) -> Result<()> {
    let mut out = Vec::new();
    for e in encodings {
        out.extend_from_slice(&(e.len() as u32).to_le_bytes());
        out.extend_from_slice(e);
    }
    std::fs::write(path, out).map_err(|e| crate::Error::io(path, e))
}

/// Makes sure a synthetic corpus exists at `root` (the default corpus, generated once).
pub fn ensure_corpus(root: &Path) -> Result<()> {
    if root.join("conversations").is_dir() {
        return Ok(());
    }
    Err(crate::Error::Usage(format!(
        "no corpus at {}: run `agy-audit corpus generate --out {}`",
        root.display(),
        root.display()
    )))
}
