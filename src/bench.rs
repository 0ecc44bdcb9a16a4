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
    /// SHA-256 over the same bytes, one core (verify MB/s ÷ the ratio).
    pub sha256_mb_per_sec: f64,
    /// verify MB/s ÷ SHA-256 MB/s: the median of the per-pass ratios.
    pub ratio_to_sha256: f64,
    /// Sources that qualified (and were timed).
    pub qualified: usize,
    /// Sources refused in the untimed first pass (not timed).
    pub refused: usize,
    /// Timed passes; the figures above are the median pass's.
    pub passes: usize,
    /// Verify MB/s of the fastest and the slowest pass.
    pub fastest_mb_per_sec: f64,
    pub slowest_mb_per_sec: f64,
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

/// Verifies the qualified sources of `paths` on the calling thread, `repeat`
/// times in one timed pass; returns the figures and their canonical encodings
/// (for the hash and peer comparisons, which are thus measured over exactly
/// the bytes the verify accepted).
///
/// An untimed first pass sorts the sources: refused ones (deliberate
/// near-misses of a synthetic corpus) are counted, not timed, since a peer
/// decoder would reject their bytes too.
pub fn offline_verify(
    schema: &Schema,
    key: &LegacyKey,
    paths: &[PathBuf],
    repeat: usize,
) -> Result<(OfflineFigures, Vec<Vec<u8>>)> {
    offline_verify_passes(schema, key, paths, repeat, 1)
}

/// [`offline_verify`] measured `passes` times: each pass times the verify
/// and then SHA-256 over the same bytes, and the figures are those of the
/// median pass (by verify time; the hash ratio is the median of the
/// per-pass ratios, each taken from the same moment of the run). On a
/// shared, noisy machine one slow moment then moves neither figure.
pub fn offline_verify_passes(
    schema: &Schema,
    key: &LegacyKey,
    paths: &[PathBuf],
    repeat: usize,
    passes: usize,
) -> Result<(OfflineFigures, Vec<Vec<u8>>)> {
    let ctx = AuditContext {
        schema,
        key,
        client: None,
        bracket_retries: 0,
    };
    let mut qualified_paths = Vec::with_capacity(paths.len());
    let mut encodings = Vec::with_capacity(paths.len());
    for p in paths {
        let prepared = prepare(&ctx, p)?;
        if prepared.refusal().is_none() {
            qualified_paths.push(p.clone());
            encodings.push(prepared.source.encoding.to_vec());
        }
    }
    let repeat = repeat.max(1);
    let mut steps = 0u64;
    let mut bytes = 0u64;
    // (verify seconds, SHA-256 seconds) per pass.
    let mut timings: Vec<(f64, f64)> = Vec::with_capacity(passes.max(1));
    for _ in 0..passes.max(1) {
        steps = 0;
        bytes = 0;
        let start = Instant::now();
        for _ in 0..repeat {
            for p in &qualified_paths {
                let prepared = prepare(&ctx, p)?;
                steps += prepared.source.steps as u64;
                bytes += prepared.source.encoding.len() as u64;
                std::hint::black_box(&prepared);
            }
        }
        let verify = start.elapsed().as_secs_f64();
        timings.push((verify, sha256_seconds(&encodings, repeat)));
    }
    let mut by_verify: Vec<f64> = timings.iter().map(|t| t.0).collect();
    by_verify.sort_by(f64::total_cmp);
    let mut ratios: Vec<f64> = timings.iter().map(|(v, h)| h / v.max(1e-9)).collect();
    ratios.sort_by(f64::total_cmp);
    let seconds = median(&by_verify);
    let ratio = median(&ratios);
    let n = qualified_paths.len() * repeat;
    let mb = mbps(bytes, seconds);
    Ok((
        OfflineFigures {
            conversations: n,
            steps,
            bytes,
            seconds,
            conversations_per_sec: n as f64 / seconds.max(1e-9),
            steps_per_sec: steps as f64 / seconds.max(1e-9),
            mb_per_sec: mb,
            sha256_mb_per_sec: mb / ratio.max(1e-9),
            ratio_to_sha256: ratio,
            qualified: qualified_paths.len(),
            refused: paths.len() - qualified_paths.len(),
            passes: timings.len(),
            fastest_mb_per_sec: mbps(bytes, by_verify[0]),
            slowest_mb_per_sec: mbps(bytes, by_verify[by_verify.len() - 1]),
        },
        encodings,
    ))
}

/// The middle of sorted, nonempty `v` (the mean of the two middle values
/// when its length is even).
fn median(v: &[f64]) -> f64 {
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
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

/// Resident set size of this process now (VmRSS), in bytes, where the OS reports it.
pub fn current_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Memory of `watch` over an unchanged home (issue 35 item 6): resident and
/// peak memory after poll 10 and after the last poll.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchMemory {
    /// `reuse` (the default 10-minute metadata bound: polls judge unchanged
    /// metadata) or `native` (bound 0: every poll reads every source).
    pub mode: &'static str,
    pub conversations: u64,
    pub polls: u64,
    pub rss_at_10: u64,
    pub rss_at_last: u64,
    pub hwm_at_10: u64,
    pub hwm_at_last: u64,
    pub seconds: f64,
}

/// Runs `exe watch` over a generated two-root home (`conversations` per
/// root) served by two in-process simulated daemons (CLI and IDE): one
/// `--once` pass writes every sidecar, then `polls` polls with no interval,
/// once reusing metadata and once checking native content at every poll,
/// each reading its own memory after poll 10 and the last.
pub fn watch_memory(exe: &Path, conversations: usize, polls: u64) -> Result<Vec<WatchMemory>> {
    use agy_corpus::corpus::{generate_home, PlanOptions, HOME_CLI_ROOT, HOME_IDE_ROOT};
    use agy_corpus::sim::{DaemonSim, SimOptions};
    let scratch = tempfile::tempdir().map_err(|e| crate::Error::io(Path::new("<tempdir>"), e))?;
    let home = scratch.path().join("home");
    let plan = PlanOptions {
        conversations,
        seed: 35,
        near_miss_rate: 0.05,
        fault_rate: 0.0,
        scale: 0.05,
    };
    generate_home(&home, &plan, false)
        .map_err(|e| crate::Error::corrupt(&home, "generate", e.to_string()))?;
    let serve = |root: PathBuf, ide: bool| {
        let mut o = SimOptions::new(&root);
        o.load_fault_file = false;
        if ide {
            o.ide_logs = Some(home.join(".config").join("Antigravity").join("logs"));
        }
        DaemonSim::start(o).map_err(|source| crate::error::UsageError::BenchServe { root, source })
    };
    let cli = serve(home.join(HOME_CLI_ROOT), false)?;
    let ide = serve(home.join(HOME_IDE_ROOT), true)?;
    let run = |args: &[&str]| -> Result<String> {
        let out = std::process::Command::new(exe)
            .arg("watch")
            .args(args)
            .env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_STATE_HOME")
            .env_remove(crate::discover::ROOT_ENV)
            .env_remove(crate::rpc::DAEMON_URL_ENV)
            .env_remove(crate::rpc::CSRF_ENV)
            .output()
            .map_err(|e| crate::Error::io(exe, e))?;
        Ok(String::from_utf8_lossy(&out.stderr).into_owned())
    };
    run(&["--once"])?;
    let mut figures = Vec::new();
    for (mode, bound) in [("reuse", "10m"), ("native", "0s")] {
        let polls_text = polls.to_string();
        let start = Instant::now();
        let log = run(&[
            "--interval",
            "0s",
            "--metadata-bound",
            bound,
            "--max-polls",
            &polls_text,
        ])?;
        let seconds = start.elapsed().as_secs_f64();
        let at = |n: u64| -> Option<(u64, u64)> {
            let line = log
                .lines()
                .find(|l| l.starts_with(&format!("watch: poll {n}: ")))?;
            let mut w = line.split_whitespace();
            let rss = w.clone().skip_while(|x| *x != "rss").nth(1)?.parse().ok()?;
            let hwm = w
                .by_ref()
                .skip_while(|x| *x != "hwm")
                .nth(1)?
                .parse()
                .ok()?;
            Some((rss, hwm))
        };
        let (Some((rss_at_10, hwm_at_10)), Some((rss_at_last, hwm_at_last))) = (at(10), at(polls))
        else {
            return Err(crate::Error::corrupt(
                exe,
                "watch --max-polls",
                format!("no memory lines in its log:\n{log}"),
            ));
        };
        let conversations = log
            .lines()
            .find_map(|l| l.strip_prefix("watch: pass 1: "))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        figures.push(WatchMemory {
            mode,
            conversations,
            polls,
            rss_at_10,
            rss_at_last,
            hwm_at_10,
            hwm_at_last,
            seconds,
        });
    }
    cli.stop();
    ide.stop();
    Ok(figures)
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

/// What [`ensure_corpus`] found at the corpus root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CorpusCache {
    /// A finished generation of this very generator build: reused.
    Current,
    /// Nothing there yet: generated.
    Generated,
    /// A generation by another generator build (or an interrupted one):
    /// replaced through the generator's own `--force`, which removes only
    /// the files its marker lists and refuses a folder holding anything else.
    Regenerated,
}

/// Makes sure the default synthetic corpus (405 conversations, seed 1) of
/// this build's generator is at `root`: a current one is reused, a missing
/// one generated, and a stale one (another generator build wrote it, or a
/// generation was interrupted) replaced, so the figures are always measured
/// on the corpus this build describes. `before` is told which of the two
/// generations is about to run (it takes a while), and is not called when
/// the corpus is current.
pub fn ensure_corpus(root: &Path, before: impl FnOnce(CorpusCache)) -> Result<CorpusCache> {
    let plan = agy_corpus::corpus::PlanOptions::default();
    if agy_corpus::corpus::is_current(root, &plan) {
        return Ok(CorpusCache::Current);
    }
    let stale = root.exists();
    let outcome = if stale {
        CorpusCache::Regenerated
    } else {
        CorpusCache::Generated
    };
    before(outcome);
    let opts = agy_corpus::corpus::GenerateOptions {
        out: root.to_path_buf(),
        plan,
        force: stale,
    };
    agy_corpus::corpus::generate(&opts).map_err(|source| {
        crate::error::UsageError::BenchCorpus {
            root: root.to_path_buf(),
            source,
        }
    })?;
    Ok(outcome)
}

/// End-to-end sweep figures against the simulated daemon.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SweepFigures {
    pub conversations: u64,
    pub latency_ms: u64,
    pub concurrency: usize,
    pub jobs: usize,
    pub wall_seconds: f64,
    /// 2 × conversations × latency / concurrency: both RPCs of every
    /// conversation, fully overlapped, with nothing else costing time.
    pub ideal_seconds: f64,
    /// wall ÷ ideal (the target is ≤ 1.25).
    pub ratio_to_ideal: f64,
    pub verified: u64,
    pub unknown: u64,
    pub incomplete: u64,
    pub error: u64,
}

/// Sweeps the generated store at `root` against an in-process simulated
/// daemon that delays every answer by `latency_ms`, writing the audit into a
/// temporary directory; the store itself is only read (no `cli.log` line,
/// no fault file).
pub fn sweep_vs_sim(
    schema: &Schema,
    key: &LegacyKey,
    root: &Path,
    latency_ms: u64,
    concurrency: usize,
    jobs: usize,
) -> Result<SweepFigures> {
    use crate::pipeline::sweep::{sweep, ProgressMode, SweepOptions};
    use agy_corpus::sim::fault::{FaultKind, FaultSpec, FaultTarget};
    use agy_corpus::sim::{DaemonSim, SimOptions};
    let concurrency = concurrency.max(1);
    let mut sim_opts = SimOptions::new(root);
    sim_opts.write_cli_log = false;
    sim_opts.load_fault_file = false;
    sim_opts.faults = vec![FaultSpec {
        target: FaultTarget::Rate(1.0),
        kind: FaultKind::Latency(latency_ms),
    }];
    let sim =
        DaemonSim::start(sim_opts).map_err(|source| crate::error::UsageError::BenchServe {
            root: root.to_path_buf(),
            source,
        })?;
    // The sweep wants an output directory that does not exist yet: one
    // inside a fresh temporary directory, removed with it.
    let scratch = tempfile::tempdir().map_err(|e| crate::Error::io(Path::new("<tempdir>"), e))?;
    let out = scratch.path().join("sweep");
    let opts = SweepOptions {
        root: root.to_path_buf(),
        out,
        endpoint: sim.url(),
        client: crate::rpc::ClientOptions::default(),
        concurrency,
        jobs: jobs.max(1),
        resume: false,
        shard: None,
        bracket_retries: 2,
        progress: ProgressMode::Quiet,
        allow_empty: false,
        installed_agy_version: None,
    };
    let result = sweep(
        schema,
        key,
        &opts,
        std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
    );
    sim.stop();
    drop(scratch);
    let summary = result?;
    let c = &summary.manifest.counts;
    let n = c.selected;
    let wall = summary.manifest.timing.wall_seconds;
    let ideal = 2.0 * n as f64 * latency_ms as f64 / 1000.0 / concurrency as f64;
    Ok(SweepFigures {
        conversations: n,
        latency_ms,
        concurrency,
        jobs: jobs.max(1),
        wall_seconds: wall,
        ideal_seconds: ideal,
        ratio_to_ideal: wall / ideal.max(1e-9),
        verified: c.verified + c.verified_source_only,
        unknown: c.unknown,
        incomplete: c.incomplete,
        error: c.error,
    })
}
