//! Decode-throughput measurement for `agy-audit bench`: offline verify
//! (snapshot + strict decode + projection + digest) against SHA-256 over the
//! same bytes, measured in the same run on one core, plus peak RSS.

use crate::discover::discover;
use crate::pipeline::{prepare, AuditContext};
use crate::schema::Schema;
use crate::source::legacy::LegacyKey;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Instant;

pub mod records;

/// What can stop a bench: the application's errors, and the generator's
/// and the simulated daemon's (the bench's own corpus and daemon; a usage
/// error, exit 2, as the folder is the user's to fix).
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    App(#[from] crate::Error),
    /// The bench corpus could not be generated in its folder.
    #[error("generating the bench corpus in {}: {source}", root.display())]
    Corpus {
        root: PathBuf,
        #[source]
        source: agy_corpus::corpus::CorpusError,
    },
    /// The simulated daemon could not serve the bench corpus.
    #[error("{}: cannot serve it: {source}", root.display())]
    Serve {
        root: PathBuf,
        #[source]
        source: agy_corpus::sim::SimError,
    },
    /// The store the serve bench generates could not be written.
    #[error("{}: corrupt: generate: {error}", home.display())]
    ServeStore {
        home: PathBuf,
        error: agy_corpus::corpus::CorpusError,
    },
    /// `watch --max-polls` logged no memory lines to measure.
    #[error("{}: corrupt: watch --max-polls: no memory lines in its log:\n{log}", exe.display())]
    WatchLog { exe: PathBuf, log: String },
    /// `bench --records`: a synthesized record could not be written, or a
    /// command measured on them did not run or exited otherwise than it
    /// should.
    #[error("bench --records: {what}: {detail}")]
    Records { what: String, detail: String },
    /// The bench sweep's manifest could not be read back.
    #[error("{}: corrupt: manifest: {error}", path.display())]
    Manifest {
        path: PathBuf,
        error: crate::manifest::read::ManifestError,
    },
}

impl BenchError {
    /// Whether the user must correct an input (exit 2).
    pub fn is_usage(&self) -> bool {
        match self {
            BenchError::App(e) => e.is_usage(),
            BenchError::Corpus { .. } | BenchError::Serve { .. } => true,
            BenchError::ServeStore { .. }
            | BenchError::WatchLog { .. }
            | BenchError::Records { .. }
            | BenchError::Manifest { .. } => false,
        }
    }
}

impl From<agy_engine::Error> for BenchError {
    fn from(e: agy_engine::Error) -> BenchError {
        BenchError::App(e.into())
    }
}

type Result<T, E = BenchError> = std::result::Result<T, E>;

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
    /// The verify's CPU time (this thread's), median of the passes: what a
    /// shared, loaded machine does not inflate the way it inflates wall time.
    pub cpu_seconds: f64,
    /// SHA-256 CPU time ÷ verify CPU time, median of the passes.
    pub ratio_to_sha256_cpu: f64,
}

/// CPU time of the calling thread, in seconds; `None` where the OS cannot say.
pub fn thread_cpu_seconds() -> Option<f64> {
    #[cfg(unix)]
    {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: plain FFI call with a valid out-pointer.
        let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        (r == 0).then(|| t.tv_sec as f64 + t.tv_nsec as f64 / 1e9)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Wall and thread CPU seconds of `f` (CPU = wall where the OS cannot say).
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let (c0, t0) = (thread_cpu_seconds(), Instant::now());
    let out = f();
    let wall = t0.elapsed().as_secs_f64();
    let cpu = match (c0, thread_cpu_seconds()) {
        (Some(a), Some(b)) => b - a,
        _ => wall,
    };
    (out, wall, cpu)
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
    let ctx = AuditContext::offline(schema, key);
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
    // (verify seconds, SHA-256 seconds) per pass, wall and CPU.
    let mut timings: Vec<(f64, f64)> = Vec::with_capacity(passes.max(1));
    let mut cpu: Vec<(f64, f64)> = Vec::with_capacity(passes.max(1));
    for _ in 0..passes.max(1) {
        steps = 0;
        bytes = 0;
        let (verified, verify, verify_cpu) = timed(|| -> Result<()> {
            for _ in 0..repeat {
                for p in &qualified_paths {
                    let prepared = prepare(&ctx, p)?;
                    steps += prepared.source.steps as u64;
                    bytes += prepared.source.encoding.len() as u64;
                    std::hint::black_box(&prepared);
                }
            }
            Ok(())
        });
        verified?;
        let (sha, _, sha_cpu) = timed(|| sha256_seconds(&encodings, repeat));
        timings.push((verify, sha));
        cpu.push((verify_cpu, sha_cpu));
    }
    let mut cpu_verify: Vec<f64> = cpu.iter().map(|c| c.0).collect();
    cpu_verify.sort_by(f64::total_cmp);
    let mut cpu_ratios: Vec<f64> = cpu.iter().map(|(v, h)| h / v.max(1e-9)).collect();
    cpu_ratios.sort_by(f64::total_cmp);
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
            cpu_seconds: median(&cpu_verify),
            ratio_to_sha256_cpu: median(&cpu_ratios),
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
    // this process's own procfs record (its size reads 0: not for the
    // bounded reader, which trusts a regular file's size as a hint only)
    #[allow(clippy::disallowed_methods)]
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Resident set size of this process now (VmRSS), in bytes, where the OS reports it.
pub fn current_rss_bytes() -> Option<u64> {
    // this process's own procfs record (its size reads 0: not for the
    // bounded reader, which trusts a regular file's size as a hint only)
    #[allow(clippy::disallowed_methods)]
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
    generate_home(&home, &plan, false).map_err(|error| BenchError::ServeStore {
        home: home.clone(),
        error,
    })?;
    let serve = |root: PathBuf, ide: bool| {
        let mut o = SimOptions::new(&root);
        o.load_fault_file = false;
        if ide {
            o.ide_logs = Some(home.join(".config").join("Antigravity").join("logs"));
        }
        DaemonSim::start(o).map_err(|source| BenchError::Serve { root, source })
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
            return Err(BenchError::WatchLog {
                exe: exe.to_path_buf(),
                log,
            });
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
    std::fs::write(path, out).map_err(|e| crate::Error::io(path, e).into())
}

/// What [`ensure_corpus_of`] found at the corpus root.
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

/// How many times the default corpus's conversations the larger store of
/// the store-scaling measurement holds ([`store_scaling`]).
pub const STORE_SCALING_FACTOR: usize = 4;

/// Makes sure the default synthetic corpus (seed 1) × `times` of this
/// build's generator is at `root` (`times` 1: the default corpus, 405
/// conversations): a current one is reused, a missing one generated, and a
/// stale one (another generator build wrote it, or a generation was
/// interrupted) replaced, so the figures are always measured on the corpus
/// this build describes. `before` is told which of the two generations is
/// about to run (it takes a while), and is not called when the corpus is
/// current. Whatever the count, the generator's largest conversation is the
/// same one (its large outputs are a Zipf tail whose first rank is fixed at
/// 20 MiB), so a store `times` × larger does `times` × the work with the
/// same largest answer.
pub fn ensure_corpus_of(
    root: &Path,
    times: usize,
    before: impl FnOnce(CorpusCache),
) -> Result<CorpusCache> {
    let mut plan = agy_corpus::corpus::PlanOptions::default();
    plan.conversations *= times.max(1);
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
    agy_corpus::corpus::generate(&opts).map_err(|source| BenchError::Corpus {
        root: root.to_path_buf(),
        source,
    })?;
    Ok(outcome)
}

/// The JSON comparison's speed: the one-pass check (over the source's
/// wire encoding, as the sweep runs it) of every qualified
/// source's full view (`.truth/daemon/<id>.full.json`, the bare trajectory
/// the simulated daemon serves) against its persisted trajectory, on one
/// core, next to serde_json merely parsing the same text (skipping every
/// value: the parse speed class the comparison should reach).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ComparisonFigures {
    /// Views compared: each equal, and confirmed so by the one pass (a
    /// view the one pass cannot confirm costs the value comparison too, so
    /// timing its early "no" would flatter the one pass: it is left out and
    /// counted in `unconfirmed`).
    pub responses: usize,
    /// Equal views (by the value comparison) the one pass did not confirm.
    pub unconfirmed: usize,
    /// Response JSON bytes compared per pass.
    pub bytes: u64,
    /// CPU seconds (this thread's) for one pass: per view, the fastest of
    /// the passes, summed.
    pub seconds: f64,
    pub mb_per_sec: f64,
    /// serde_json parsing the same text into `IgnoredAny`, same method.
    pub parse_mb_per_sec: f64,
    pub passes: usize,
}

/// Measures [`ComparisonFigures`] over the qualified sources of `paths`.
pub fn comparison_throughput(
    schema: &Schema,
    key: &LegacyKey,
    root: &Path,
    paths: &[PathBuf],
    passes: usize,
) -> Result<ComparisonFigures> {
    let ctx = AuditContext::offline(schema, key);
    let views = root.join(".truth").join("daemon");
    let passes = passes.max(1);
    let (mut responses, mut bytes, mut compare, mut parse) = (0usize, 0u64, 0f64, 0f64);
    let mut unconfirmed = 0usize;
    for p in paths {
        let mut prepared = prepare(&ctx, p)?;
        if prepared.refusal().is_some() {
            continue;
        }
        let view = views.join(format!("{}.full.json", prepared.source.file_id));
        let Ok(Ok(text)) =
            crate::util::bounded::read_regular(&view, crate::util::bounded::InputKind::Answer)
                .map(String::from_utf8)
        else {
            continue;
        };
        let Some(persisted) = prepared.source.materialize() else {
            continue;
        };
        if crate::compare::compare_full(schema, persisted, &text).is_err() {
            continue;
        }
        // The one pass as the sweep runs it: over the source's encoding,
        // no tree.
        let Some(wire) = prepared.source.wire.as_ref() else {
            continue;
        };
        if !crate::compare::full_confirmed(wire, &text) {
            unconfirmed += 1;
            continue;
        }
        let (mut best_compare, mut best_parse) = (f64::MAX, f64::MAX);
        for _ in 0..passes {
            let (eq, _, c) = timed(|| crate::compare::full_confirmed(wire, &text));
            std::hint::black_box(eq);
            best_compare = best_compare.min(c);
            let (ok, _, c) = timed(|| serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok());
            std::hint::black_box(ok);
            best_parse = best_parse.min(c);
        }
        responses += 1;
        bytes += text.len() as u64;
        compare += best_compare;
        parse += best_parse;
    }
    Ok(ComparisonFigures {
        responses,
        unconfirmed,
        bytes,
        seconds: compare,
        mb_per_sec: mbps(bytes, compare),
        parse_mb_per_sec: mbps(bytes, parse),
        passes,
    })
}

/// CPU time and peak memory of a finished child process.
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildUsage {
    pub user_seconds: f64,
    pub sys_seconds: f64,
    /// Peak resident set size, bytes.
    pub peak_rss: u64,
    pub success: bool,
    /// The exit code, when the child exited (not killed by a signal).
    #[serde(skip)]
    pub exit_code: Option<i32>,
}

/// Waits for `child` and returns its resource usage (`wait4`: the child's
/// own user and system CPU and peak RSS, nothing of this process's).
#[cfg(unix)]
pub fn wait_usage(child: std::process::Child) -> std::io::Result<ChildUsage> {
    let pid = child.id() as libc::pid_t;
    // The child is reaped here, by pid; `Child` is not waited on again.
    std::mem::forget(child);
    let mut status: libc::c_int = 0;
    // SAFETY: plain FFI call with valid out-pointers; rusage is plain data.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: as above.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok(ChildUsage {
        user_seconds: secs(ru.ru_utime),
        sys_seconds: secs(ru.ru_stime),
        // Linux reports ru_maxrss in KiB (macOS in bytes).
        peak_rss: if cfg!(target_os = "macos") {
            ru.ru_maxrss as u64
        } else {
            ru.ru_maxrss as u64 * 1024
        },
        success: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        exit_code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
    })
}

/// Where the OS cannot say: success only.
#[cfg(not(unix))]
pub fn wait_usage(mut child: std::process::Child) -> std::io::Result<ChildUsage> {
    let status = child.wait()?;
    Ok(ChildUsage {
        success: status.success(),
        exit_code: status.code(),
        ..ChildUsage::default()
    })
}

/// Serves the generated store at `root` like `daemon-sim`, every answer
/// delayed by `latency_ms`, without touching the store (no `cli.log` line,
/// no fault file); `ready` is told the URL, and the server stops once
/// `until` returns (the bench's child reads its stdin to the end).
pub fn serve_sim(
    root: &Path,
    latency_ms: u64,
    ready: impl FnOnce(&str),
    until: impl FnOnce(),
) -> Result<()> {
    use agy_corpus::sim::fault::{FaultKind, FaultSpec, FaultTarget};
    use agy_corpus::sim::{DaemonSim, SimOptions};
    let mut sim_opts = SimOptions::new(root);
    sim_opts.write_cli_log = false;
    sim_opts.load_fault_file = false;
    sim_opts.faults = vec![FaultSpec {
        target: FaultTarget::Rate(1.0),
        kind: FaultKind::Latency(latency_ms),
    }];
    let sim = DaemonSim::start(sim_opts).map_err(|source| BenchError::Serve {
        root: root.to_path_buf(),
        source,
    })?;
    ready(&sim.url());
    until();
    sim.stop();
    Ok(())
}

/// One row of the scaling table: an `audit-sweep` process (the client)
/// against a simulated daemon in another process, both measured apart.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScalingRow {
    pub concurrency: usize,
    pub latency_ms: u64,
    pub conversations: u64,
    /// Conversations whose two answers were fetched (saved under corpus/).
    pub fetched: u64,
    /// The client process's wall time, start to exit.
    pub wall_seconds: f64,
    /// 2 × fetched × latency / concurrency: every round trip overlapped,
    /// nothing else costing time.
    pub ideal_seconds: f64,
    pub client_user_seconds: f64,
    pub client_sys_seconds: f64,
    /// (client user + sys + daemon CPU) / cores: the wall time the two
    /// processes' CPU needs of the cores they share.
    pub cpu_floor_seconds: f64,
    pub cores: usize,
    pub client_peak_rss: u64,
    /// (peak RSS − peak RSS at concurrency 1) / (concurrency − 1); none at 1.
    pub memory_per_conversation: Option<f64>,
    /// wall ÷ max(ideal, CPU floor) (the target is ≤ 1.25).
    pub ratio: f64,
    /// The simulated daemon's own CPU (user + sys), not the client's.
    pub sim_cpu_seconds: f64,
    pub verified: u64,
    pub unknown: u64,
    pub incomplete: u64,
    pub not_fetched: u64,
    pub error: u64,
}

/// How to start the two processes of a scaling row.
pub struct ScalingSetup<'a> {
    /// This program (the bench re-runs itself: `bench --serve-sim` for the
    /// daemon, `audit-sweep` for the client).
    pub exe: &'a Path,
    pub root: &'a Path,
    pub latency_ms: u64,
    pub cores: usize,
    /// Extra arguments for both (`--schema`, `--schema-sha256`).
    pub schema_args: Vec<std::ffi::OsString>,
}

fn bench_io(what: &str, e: std::io::Error) -> crate::Error {
    crate::Error::io(Path::new(what), e)
}

/// Sweeps the store once per concurrency (each run its own client process,
/// so each peak RSS is its own) against a fresh simulated daemon process.
pub fn sweep_scaling(setup: &ScalingSetup<'_>, concurrencies: &[usize]) -> Result<Vec<ScalingRow>> {
    let mut rows: Vec<ScalingRow> = Vec::with_capacity(concurrencies.len());
    for &c in concurrencies {
        rows.push(scaling_row(setup, c.max(1))?);
    }
    let base = rows
        .iter()
        .find(|r| r.concurrency == 1)
        .map(|r| r.client_peak_rss);
    for r in &mut rows {
        r.memory_per_conversation = match base {
            Some(b) if r.concurrency > 1 => {
                Some(r.client_peak_rss.saturating_sub(b) as f64 / (r.concurrency - 1) as f64)
            }
            _ => None,
        };
    }
    Ok(rows)
}

fn scaling_row(setup: &ScalingSetup<'_>, concurrency: usize) -> Result<ScalingRow> {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let mut sim = Command::new(setup.exe);
    sim.args(["bench", "--serve-sim", "--corpus"])
        .arg(setup.root)
        .args(["--latency-ms", &setup.latency_ms.to_string()])
        .args(&setup.schema_args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut sim = sim.spawn().map_err(|e| bench_io("bench --serve-sim", e))?;
    let url = {
        let out = sim.stdout.take();
        let mut line = String::new();
        if let Some(out) = out {
            let _ = std::io::BufReader::new(out).read_line(&mut line);
        }
        line.trim().to_string()
    };
    let stdin = sim.stdin.take();
    let scratch = tempfile::tempdir().map_err(|e| bench_io("<tempdir>", e))?;
    let out = scratch.path().join("sweep");
    let client = if url.starts_with("http://") {
        let mut cmd = Command::new(setup.exe);
        cmd.args(["audit-sweep", "--quiet", "--root"])
            .arg(setup.root)
            .arg("--out")
            .arg(&out)
            .args(["--daemon-url", &url])
            .args(["--concurrency", &concurrency.to_string()])
            .args(["--jobs", &setup.cores.to_string()])
            .args(&setup.schema_args)
            .env_remove("ANTIGRAVITY_CSRF_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let start = Instant::now();
        let r = cmd
            .spawn()
            .and_then(wait_usage)
            .map(|u| (u, start.elapsed().as_secs_f64()));
        Some(r)
    } else {
        None
    };
    drop(stdin);
    let sim_usage = wait_usage(sim).map_err(|e| bench_io("bench --serve-sim", e))?;
    let (usage, wall) = match client {
        Some(r) => r.map_err(|e| bench_io("audit-sweep", e))?,
        None => {
            return Err(BenchError::App(crate::Error::io(
                Path::new("bench --serve-sim"),
                std::io::Error::other("the simulated daemon did not start"),
            )))
        }
    };
    let manifest_path = out.join(crate::manifest::MANIFEST_FILE);
    let (_, m) =
        crate::manifest::read::read(&manifest_path).map_err(|error| BenchError::Manifest {
            path: manifest_path.clone(),
            error,
        })?;
    let corpus = out.join("corpus");
    let fetched = std::fs::read_dir(&corpus)
        .map_err(|e| crate::Error::io(&corpus, e))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".full.json"))
        .count() as u64;
    let c = &m.counts;
    let ideal = 2.0 * fetched as f64 * setup.latency_ms as f64 / 1000.0 / concurrency as f64;
    // Both processes share the machine's cores: the floor is what their
    // CPU together needs of them.
    let sim_cpu = sim_usage.user_seconds + sim_usage.sys_seconds;
    let floor = (usage.user_seconds + usage.sys_seconds + sim_cpu) / setup.cores.max(1) as f64;
    Ok(ScalingRow {
        concurrency,
        latency_ms: setup.latency_ms,
        conversations: c.selected,
        fetched,
        wall_seconds: wall,
        ideal_seconds: ideal,
        client_user_seconds: usage.user_seconds,
        client_sys_seconds: usage.sys_seconds,
        cpu_floor_seconds: floor,
        cores: setup.cores,
        client_peak_rss: usage.peak_rss,
        memory_per_conversation: None,
        ratio: wall / ideal.max(floor).max(1e-9),
        sim_cpu_seconds: sim_cpu,
        verified: c.verified + c.verified_source_only,
        unknown: c.unknown,
        incomplete: c.incomplete,
        not_fetched: c.not_fetched,
        error: c.error,
    })
}

/// The sweep on a store and on one [`STORE_SCALING_FACTOR`] × its size
/// holding the same largest conversation, at one concurrency: what the
/// client's cost does as the store grows (issue 49: CPU at most 4.2 × for
/// 4 × the work, peak RSS within 10 %: memory is set by the concurrency and
/// the largest conversation, never by the number of conversations).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoreScaling {
    pub factor: usize,
    pub small: ScalingRow,
    pub large: ScalingRow,
    /// The largest expected message of each store, bytes (the same
    /// conversation, so the same size, or the comparison says nothing).
    pub largest_small: u64,
    pub largest_large: u64,
    /// The large store's client CPU (user + sys) ÷ the small one's.
    pub cpu_ratio: f64,
    /// The large store's client peak RSS ÷ the small one's.
    pub rss_ratio: f64,
}

/// Measures [`StoreScaling`]: `small` is the row already measured on
/// `setup.root` at `concurrency` (or `None`: measured here), `large_root`
/// the larger store.
pub fn store_scaling(
    setup: &ScalingSetup<'_>,
    small: Option<ScalingRow>,
    large_root: &Path,
    concurrency: usize,
) -> Result<StoreScaling> {
    let small = match small {
        Some(r) => r,
        None => scaling_row(setup, concurrency)?,
    };
    let large_setup = ScalingSetup {
        exe: setup.exe,
        root: large_root,
        latency_ms: setup.latency_ms,
        cores: setup.cores,
        schema_args: setup.schema_args.clone(),
    };
    let large = scaling_row(&large_setup, concurrency)?;
    let cpu = |r: &ScalingRow| r.client_user_seconds + r.client_sys_seconds;
    Ok(StoreScaling {
        factor: (large.conversations as f64 / small.conversations.max(1) as f64).round() as usize,
        cpu_ratio: cpu(&large) / cpu(&small).max(1e-9),
        rss_ratio: large.client_peak_rss as f64 / small.client_peak_rss.max(1) as f64,
        largest_small: largest_expected_message(setup.root),
        largest_large: largest_expected_message(large_root),
        small,
        large,
    })
}

/// The size of the largest expected message: the largest full view of the
/// store (`.truth/daemon/*.full.json`), in bytes.
pub fn largest_expected_message(root: &Path) -> u64 {
    std::fs::read_dir(root.join(".truth").join("daemon"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().ends_with(".full.json"))
                .filter_map(|e| e.metadata().ok().map(|m| m.len()))
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
}

/// One target of issue 36, judged from the figures.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    pub name: String,
    /// What was measured, in words.
    pub measured: String,
    pub limit: String,
    /// `None` when the figure was not measured in this run.
    pub met: Option<bool>,
}

/// The figures the targets are judged from.
pub struct Measured<'a> {
    pub offline: &'a OfflineFigures,
    pub comparison: Option<&'a ComparisonFigures>,
    pub rows: &'a [ScalingRow],
    pub largest_message: u64,
    /// The offline verify's CPU seconds as issue 49's base commit measured
    /// them on this machine (`--base-verify-cpu`, recorded in BENCHMARKS.md):
    /// the sweep's CPU target is held to that figure, so that a faster
    /// verify does not make it harder. `None`: this run's verify, said so.
    pub base_verify_cpu: Option<f64>,
    pub store: Option<&'a StoreScaling>,
}

/// The client's CPU (user + sys) of a row.
fn client_cpu(r: &ScalingRow) -> f64 {
    r.client_user_seconds + r.client_sys_seconds
}

fn target(name: impl Into<String>, limit: &str, judged: Option<(String, bool)>) -> Target {
    let (measured, met) = match judged {
        Some((m, ok)) => (m, Some(ok)),
        None => ("not measured".to_string(), None),
    };
    Target {
        name: name.into(),
        measured,
        limit: limit.into(),
        met,
    }
}

/// Judges BENCHMARKS.md's targets (issue 49's, and issue 36's that still
/// stand) from the figures at hand; a figure this run did not measure is
/// "not measured", never met.
pub fn targets(m: &Measured<'_>) -> Vec<Target> {
    let offline = m.offline;
    let mut t = vec![target(
        "offline verify / SHA-256",
        "≥ 0.25",
        Some((
            format!(
                "{:.3} by CPU time ({:.3} by wall time)",
                offline.ratio_to_sha256_cpu, offline.ratio_to_sha256
            ),
            offline.ratio_to_sha256_cpu >= 0.25,
        )),
    )];
    t.push(target(
        "JSON comparison, one core",
        "≥ 400 MB/s",
        m.comparison.map(|c| {
            (
                format!(
                    "{:.0} MB/s (serde_json parse of the same text: {:.0} MB/s)",
                    c.mb_per_sec, c.parse_mb_per_sec
                ),
                c.mb_per_sec >= 400.0,
            )
        }),
    ));
    let (verify_cpu, which) = match m.base_verify_cpu {
        Some(b) => (b, "the base commit's verify"),
        None => (
            offline.cpu_seconds,
            "this run's verify; no --base-verify-cpu",
        ),
    };
    for r in m.rows.iter().filter(|r| r.concurrency >= 16) {
        let c = client_cpu(r);
        t.push(target(
            format!(
                "sweep client CPU / offline verify CPU at concurrency {}",
                r.concurrency
            ),
            "≤ 3",
            Some((
                format!(
                    "{:.2} (client {c:.2} s / {verify_cpu:.2} s, {which})",
                    c / verify_cpu.max(1e-9)
                ),
                c <= 3.0 * verify_cpu,
            )),
        ));
    }
    for (c, limit, bytes) in [(64, "≤ 300 MB", 300e6), (256, "≤ 400 MB", 400e6)] {
        t.push(target(
            format!("client peak RSS at concurrency {c}"),
            limit,
            m.rows.iter().find(|r| r.concurrency == c).map(|r| {
                (
                    format!("{:.0} MB", r.client_peak_rss as f64 / 1e6),
                    r.client_peak_rss as f64 <= bytes,
                )
            }),
        ));
    }
    let per_conv = m
        .rows
        .iter()
        .filter_map(|r| r.memory_per_conversation)
        .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))));
    t.push(target(
        "memory per conversation in flight",
        "≤ 2 × the largest expected message",
        per_conv.map(|pc| {
            (
                format!(
                    "{:.1} MB (largest expected message {:.1} MB)",
                    pc / 1e6,
                    m.largest_message as f64 / 1e6
                ),
                pc <= 2.0 * m.largest_message as f64,
            )
        }),
    ));
    for r in m.rows.iter().filter(|r| r.concurrency >= 16) {
        t.push(target(
            format!(
                "wall / max(latency ideal, CPU floor) at concurrency {}, {} ms",
                r.concurrency, r.latency_ms
            ),
            "≤ 1.25",
            Some((format!("{:.2}", r.ratio), r.ratio <= 1.25)),
        ));
    }
    t.extend(store_targets(m.store));
    t
}

/// How far apart (a fraction of the larger) the two stores' largest
/// expected messages may be for the store-scaling figures to count: the
/// generator's largest conversation carries the same 20 MiB output at any
/// size, but the rest of its steps are drawn anew with the store's plan.
pub const LARGEST_MESSAGE_TOLERANCE: f64 = 0.05;

/// Whether the two stores' largest expected messages are within
/// [`LARGEST_MESSAGE_TOLERANCE`] of each other.
fn same_largest(s: &StoreScaling) -> bool {
    let (a, b) = (s.largest_small as f64, s.largest_large as f64);
    a > 0.0 && b > 0.0 && (a - b).abs() <= LARGEST_MESSAGE_TOLERANCE * a.max(b)
}

/// Item 5's two targets, from the store-scaling measurement: a store 4 ×
/// larger whose largest conversation differs (beyond
/// [`LARGEST_MESSAGE_TOLERANCE`]) measures nothing, and says so.
fn store_targets(store: Option<&StoreScaling>) -> [Target; 2] {
    let comparable = store.filter(|s| same_largest(s));
    let cpu_name = format!("sweep client CPU, {STORE_SCALING_FACTOR} × the store");
    let rss_name = format!("sweep client peak RSS, {STORE_SCALING_FACTOR} × the store");
    match (store, comparable) {
        (Some(s), None) => {
            let why = format!(
                "not comparable: the largest expected messages differ by more than 5 % ({} and {} bytes)",
                s.largest_small, s.largest_large
            );
            [cpu_name, rss_name].map(|name| Target {
                name,
                measured: why.clone(),
                limit: "the same largest conversation (within 5 %)".into(),
                met: None,
            })
        }
        (_, s) => [
            target(
                cpu_name,
                "≤ 4.2 ×",
                s.map(|s| {
                    (
                        format!(
                            "{:.2} × ({:.2} s → {:.2} s at concurrency {})",
                            s.cpu_ratio,
                            client_cpu(&s.small),
                            client_cpu(&s.large),
                            s.small.concurrency
                        ),
                        s.cpu_ratio <= 4.2,
                    )
                }),
            ),
            target(
                rss_name,
                "≤ 1.10 ×",
                s.map(|s| {
                    (
                        format!(
                            "{:.2} × ({:.0} MB → {:.0} MB)",
                            s.rss_ratio,
                            s.small.client_peak_rss as f64 / 1e6,
                            s.large.client_peak_rss as f64 / 1e6
                        ),
                        s.rss_ratio <= 1.10,
                    )
                }),
            ),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(concurrency: usize, cpu: f64, rss: u64) -> ScalingRow {
        ScalingRow {
            concurrency,
            latency_ms: 100,
            conversations: 405,
            fetched: 405,
            wall_seconds: 2.0,
            ideal_seconds: 1.0,
            client_user_seconds: cpu,
            client_sys_seconds: 0.0,
            cpu_floor_seconds: 1.0,
            cores: 2,
            client_peak_rss: rss,
            memory_per_conversation: None,
            ratio: 1.2,
            sim_cpu_seconds: 0.5,
            verified: 1,
            unknown: 0,
            incomplete: 0,
            not_fetched: 0,
            error: 0,
        }
    }

    fn scaling(cpu: (f64, f64), rss: (u64, u64), largest: (u64, u64)) -> StoreScaling {
        let (small, large) = (row(64, cpu.0, rss.0), row(64, cpu.1, rss.1));
        StoreScaling {
            factor: 4,
            cpu_ratio: cpu.1 / cpu.0,
            rss_ratio: rss.1 as f64 / rss.0 as f64,
            largest_small: largest.0,
            largest_large: largest.1,
            small,
            large,
        }
    }

    #[test]
    fn store_growth_is_judged_against_its_limits() {
        let ok = store_targets(Some(&scaling((5.0, 20.0), (400, 430), (100, 98))));
        assert_eq!(ok.each_ref().map(|t| t.met), [Some(true), Some(true)]);
        let cpu = store_targets(Some(&scaling((5.0, 21.5), (400, 430), (100, 100))));
        assert_eq!(cpu.each_ref().map(|t| t.met), [Some(false), Some(true)]);
        let rss = store_targets(Some(&scaling((5.0, 20.0), (400, 441), (100, 100))));
        assert_eq!(rss.each_ref().map(|t| t.met), [Some(true), Some(false)]);
    }

    #[test]
    fn stores_with_another_largest_conversation_measure_nothing() {
        let t = store_targets(Some(&scaling((5.0, 20.0), (400, 400), (100, 94))));
        assert_eq!(t.each_ref().map(|t| t.met), [None, None]);
        assert!(
            t[0].measured.contains("not comparable"),
            "{}",
            t[0].measured
        );
        let none = store_targets(None);
        assert_eq!(none.each_ref().map(|t| t.met), [None, None]);
    }

    #[test]
    fn the_sweep_cpu_target_holds_to_the_base_verify() {
        let offline = OfflineFigures {
            conversations: 1,
            steps: 1,
            bytes: 1,
            seconds: 1.0,
            conversations_per_sec: 1.0,
            steps_per_sec: 1.0,
            mb_per_sec: 1.0,
            sha256_mb_per_sec: 1.0,
            ratio_to_sha256: 0.3,
            qualified: 1,
            refused: 0,
            passes: 1,
            fastest_mb_per_sec: 1.0,
            slowest_mb_per_sec: 1.0,
            // A faster verify than the base commit's.
            cpu_seconds: 0.2,
            ratio_to_sha256_cpu: 0.3,
        };
        let rows = [row(64, 1.5, 250_000_000), row(256, 1.5, 450_000_000)];
        let judge = |base| {
            targets(&Measured {
                offline: &offline,
                comparison: None,
                rows: &rows,
                largest_message: 1,
                base_verify_cpu: base,
                store: None,
            })
        };
        let met = |t: &[Target], name: &str| t.iter().find(|t| t.name == name).and_then(|t| t.met);
        let with_base = judge(Some(0.6));
        assert_eq!(
            met(
                &with_base,
                "sweep client CPU / offline verify CPU at concurrency 64"
            ),
            Some(true)
        );
        let without = judge(None);
        assert_eq!(
            met(
                &without,
                "sweep client CPU / offline verify CPU at concurrency 64"
            ),
            Some(false)
        );
        assert_eq!(
            met(&with_base, "client peak RSS at concurrency 64"),
            Some(true)
        );
        assert_eq!(
            met(&with_base, "client peak RSS at concurrency 256"),
            Some(false)
        );
        assert_eq!(met(&with_base, "offline verify / SHA-256"), Some(true));
    }
}
