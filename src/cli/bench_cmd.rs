//! `agy-audit bench`: decode throughput against the hash limit and a peer.

use super::common::MAX_CONCURRENCY;
use super::common::{real, whole, DecodeArgs, MAX_LATENCY_MS};
use crate::bench::{
    comparison_throughput, ensure_corpus_of, largest_expected_message, offline_verify,
    offline_verify_passes, peak_rss_bytes, serve_sim, sources, store_scaling, sweep_scaling,
    targets, write_payloads, ComparisonFigures, CorpusCache, Measured, OfflineFigures, ScalingRow,
    ScalingSetup, StoreScaling, Target, STORE_SCALING_FACTOR,
};
use crate::schema::Schema;
use crate::source::legacy::LegacyKey;
use crate::util::count;
use anyhow::{bail, Context};
use clap::Args;
use serde_json::json;
use std::path::PathBuf;
use std::process::Command;

/// Measure offline verify throughput (snapshot + strict decode + projection +
/// digest) in conversations/s, steps/s and MB/s on one core, next to SHA-256
/// over the same bytes in the same run, the Python protobuf (upb) peer when
/// available, peak RSS at 1× and 10× the corpus, the JSON comparison's speed
/// on one core, and the sweep's scaling: per `--concurrency`, an
/// `audit-sweep` process (the client) against a simulated daemon in its own
/// process at a fixed latency, each measured apart (wall, the latency ideal
/// 2 × fetched × latency / concurrency, the client's user and sys CPU, the
/// CPU floor = (client CPU + daemon CPU) / cores, peak client RSS, memory
/// per conversation in flight, wall / max(ideal, CPU floor)); with
/// `--store-scaling`, the same sweep on a store 4 times larger; then the
/// targets of BENCHMARKS.md, each met, missed or not measured.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// A store root to measure (default: the default synthetic corpus,
    /// generated into target/bench-corpus and reused until the generator
    /// changes, when it is generated again). The sweep needs a generated
    /// store (with `.truth/daemon` views for the simulated daemon).
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Skip the Python protobuf (upb) peer measurement.
    #[arg(long)]
    pub no_peer: bool,
    /// Skip the peak-RSS measurements (which re-run the verify in child processes).
    #[arg(long)]
    pub no_rss: bool,
    /// Skip the end-to-end sweep against the simulated daemon.
    #[arg(long)]
    pub no_sweep: bool,
    /// Latency the simulated daemon adds to every answer in the sweep, in ms
    /// (0 to 1000).
    #[arg(long, value_name = "MS", default_value_t = 100, allow_negative_numbers = true, value_parser = whole::<u64>(0, MAX_LATENCY_MS))]
    pub latency_ms: u64,
    /// Conversations fetched at once in the sweep, a comma-separated list
    /// (each 1 to 256; each conversation with its full and ordinary requests
    /// in flight together): one sweep, one row of the table, per value.
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_values_t = [1, 16, 64, 256], allow_negative_numbers = true, value_parser = whole::<usize>(1, MAX_CONCURRENCY as u64))]
    pub concurrency: Vec<usize>,
    /// Also sweep a store 4 times the corpus's size holding the same
    /// largest conversation (for the default corpus: 1,620 conversations,
    /// generated into target/bench-corpus-x4 and reused like the default),
    /// at the highest `--concurrency`, and judge how the client's CPU and
    /// peak RSS grow with the store (not with the work in flight).
    #[arg(long)]
    pub store_scaling: bool,
    /// The larger store for `--store-scaling` (default: generated as above);
    /// it must hold the same largest conversation as `--corpus`.
    #[arg(long, value_name = "DIR", requires = "store_scaling")]
    pub large_corpus: Option<PathBuf>,
    /// The offline verify's CPU seconds as issue 49's base commit measured
    /// them on this machine (BENCHMARKS.md records the figure): the sweep's
    /// CPU target is held to it, so a faster verify does not make the target
    /// harder. Without it, this run's verify is used, and the target says so
    /// (a number of seconds above 0, at most 86400).
    #[arg(long, value_name = "SECONDS", allow_hyphen_values = true, value_parser = real(0.0, true, 86_400.0))]
    pub base_verify_cpu: Option<f64>,
    /// Skip the JSON comparison's throughput measurement.
    #[arg(long)]
    pub no_comparison: bool,
    /// Internal: serve the corpus as the simulated daemon, print its URL,
    /// stop when stdin closes (the scaling table's daemon process).
    #[arg(long, hide = true)]
    pub serve_sim: bool,
    /// Timed offline-verify passes (each followed by SHA-256 over the same
    /// bytes); the figures printed are the median pass's, so a noisy
    /// machine's slow moments do not move them (1 to 1000).
    #[arg(long, default_value_t = 5, allow_negative_numbers = true, value_parser = whole::<u32>(1, 1000))]
    pub passes: u32,
    /// Only measure watch's memory over this many polls (10 to 100000) of an
    /// unchanged generated two-root home served by simulated daemons: VmRSS
    /// and VmHWM after poll 10 and the last, reusing metadata (the default
    /// bound) and checking native content at every poll (bound 0s).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole::<u64>(10, 100_000))]
    pub watch_polls: Option<u64>,
    /// Only measure the fleet-scale records (BENCHMARKS.md, issue 49):
    /// synthesize manifests of N sessions (1000 to 1000000: from 1,000 on,
    /// the later sweep holds every kind of change the synthesizer plants, a
    /// regression among them, so audit-diff's exit 5 is what is checked)
    /// and time audit-diff, manifest merge and report --format html on them.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole::<u64>(1000, 1_000_000))]
    pub records: Option<u64>,
    /// Where --records writes its manifests and the commands' outputs (kept;
    /// a new or an empty folder; default: a temporary folder, removed after).
    #[arg(long, value_name = "DIR", requires = "records")]
    pub records_dir: Option<PathBuf>,
    /// Internal: verify the corpus this many times and print peak RSS (child process mode).
    #[arg(long, hide = true, value_parser = whole::<usize>(1, 100))]
    pub rss_probe: Option<usize>,
    #[command(flatten)]
    pub decode: DecodeArgs,
}

fn default_corpus() -> anyhow::Result<PathBuf> {
    generated_corpus("bench-corpus", 1)
}

/// The default corpus × `times`, generated into target/`name` and reused.
fn generated_corpus(name: &str, times: usize) -> anyhow::Result<PathBuf> {
    let dir = PathBuf::from("target").join(name);
    ensure_corpus_of(&dir, times, |outcome| {
        let what = match outcome {
            CorpusCache::Regenerated => "replacing a corpus another generator build wrote in",
            CorpusCache::Current | CorpusCache::Generated if times == 1 => {
                "generating the default corpus into"
            }
            CorpusCache::Current | CorpusCache::Generated => {
                "generating the default corpus × 4 into"
            }
        };
        crate::note!(
            "agy-audit bench: {what} {} (reused until the generator changes)",
            dir.display()
        );
    })?;
    Ok(dir)
}

pub fn run(a: BenchArgs) -> anyhow::Result<i32> {
    if let Some(n) = a.records {
        return run_records(n, a.records_dir.as_deref(), a.json);
    }
    if let Some(polls) = a.watch_polls {
        watch_bench(&a, polls)?;
        return Ok(0);
    }
    let (schema, key) = a.decode.load_inspect()?;
    let root = match &a.corpus {
        Some(c) => c.clone(),
        None => default_corpus()?,
    };
    let paths = sources(&root)?;
    if paths.is_empty() {
        bail!("{}: no conversations to measure", root.display());
    }
    if a.serve_sim {
        serve(&root, a.latency_ms)?;
        return Ok(0);
    }
    if let Some(repeat) = a.rss_probe {
        let _ = offline_verify(&schema, &key, &paths, repeat)?;
        outln!("{}", peak_rss_bytes().unwrap_or(0));
        return Ok(0);
    }
    let m = measure(&a, &schema, &key, &root, &paths)?;
    if a.json {
        let out = json!({"corpus": root, "offline": m.fig, "peer": m.peer, "verifyOverPeer": m.peer_ratio, "rss": m.rss, "comparison": m.comparison, "sweep": m.sweep, "targets": m.judged});
        outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_text(&a, &root, &m);
    }
    Ok(0)
}

/// `--watch-polls N`: watch's memory over N polls.
fn watch_bench(a: &BenchArgs, polls: u64) -> anyhow::Result<()> {
    let exe = std::env::current_exe()?;
    let figures = crate::bench::watch_memory(&exe, 50, polls)?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&figures)?);
        return Ok(());
    }
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    for f in &figures {
        outln!(
            "watch ({}, {} conversations, {} polls in {:.1}s): rss {:.1} MiB at poll 10, {:.1} MiB at poll {}; peak {:.1} MiB at poll 10, {:.1} MiB at poll {}",
            f.mode,
            f.conversations,
            f.polls,
            f.seconds,
            mib(f.rss_at_10),
            mib(f.rss_at_last),
            f.polls,
            mib(f.hwm_at_10),
            mib(f.hwm_at_last),
            f.polls
        );
    }
    Ok(())
}

/// `--serve-sim`: the scaling table's daemon process.
fn serve(root: &std::path::Path, latency_ms: u64) -> anyhow::Result<()> {
    serve_sim(
        root,
        latency_ms,
        |url| {
            // The parent waits for this line; a closed pipe only means
            // nobody is waiting.
            crate::util::term::out_line(format_args!("{url}"));
        },
        || {
            let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        },
    )?;
    Ok(())
}

/// Everything a bench measured, and the targets judged on it.
struct Figures {
    fig: OfflineFigures,
    peer: serde_json::Value,
    peer_ratio: Option<f64>,
    rss: serde_json::Value,
    comparison: Option<ComparisonFigures>,
    sweep: serde_json::Value,
    rows: Vec<ScalingRow>,
    /// `--store-scaling`: the sweep on a store 4 × larger.
    store: Option<StoreScaling>,
    judged: Vec<Target>,
}

/// Runs every measurement the flags leave on.
fn measure(
    a: &BenchArgs,
    schema: &Schema,
    key: &LegacyKey,
    root: &std::path::Path,
    paths: &[PathBuf],
) -> anyhow::Result<Figures> {
    let (fig, encodings) = offline_verify_passes(schema, key, paths, 1, a.passes as usize)?;
    let mut peer = serde_json::Value::Null;
    if !a.no_peer {
        peer = run_peer(&encodings).unwrap_or_else(|e| json!({"skipped": e.to_string()}));
    }
    let mut rss = serde_json::Value::Null;
    if !a.no_rss {
        rss = rss_figures(a, root)?;
    }
    let comparison = if a.no_comparison {
        None
    } else {
        Some(comparison_throughput(
            schema,
            key,
            root,
            paths,
            // The fastest of up to 3 passes per response.
            (a.passes as usize).min(3),
        )?)
    };
    let mut sweep = serde_json::Value::Null;
    let mut rows = Vec::new();
    let mut store = None;
    let largest = largest_expected_message(root);
    if !a.no_sweep {
        (sweep, rows, store) = sweep_figures(a, root, largest)?;
    }
    let judged = targets(&Measured {
        offline: &fig,
        comparison: comparison.as_ref(),
        rows: &rows,
        largest_message: largest,
        base_verify_cpu: a.base_verify_cpu,
        store: store.as_ref(),
    });
    let peer_ratio = peer
        .get("mbPerSec")
        .and_then(|v| v.as_f64())
        .map(|p| fig.mb_per_sec / p);
    Ok(Figures {
        fig,
        peer,
        peer_ratio,
        rss,
        comparison,
        sweep,
        rows,
        store,
        judged,
    })
}

/// This binary's schema flags, for the child processes it runs.
fn schema_args(a: &BenchArgs) -> Vec<std::ffi::OsString> {
    let mut v: Vec<std::ffi::OsString> = Vec::new();
    if let Some(s) = &a.decode.schema {
        v.push("--schema".into());
        v.push(s.into());
    }
    if let Some(h) = &a.decode.schema_sha256 {
        v.push("--schema-sha256".into());
        v.push(h.into());
    }
    v
}

/// Peak RSS of the verify at 1× and 10× the corpus, each in a child process.
fn rss_figures(a: &BenchArgs, root: &std::path::Path) -> anyhow::Result<serde_json::Value> {
    let probe = |n: usize| -> anyhow::Result<u64> {
        let exe = std::env::current_exe()?;
        let mut c = Command::new(exe);
        c.args(["bench", "--corpus"])
            .arg(root)
            .args(["--rss-probe", &n.to_string()])
            .args(schema_args(a));
        let o = c.output()?;
        Ok(String::from_utf8_lossy(&o.stdout).trim().parse()?)
    };
    let one = probe(1)?;
    let ten = probe(10)?;
    Ok(json!({"peakRss1x": one, "peakRss10x": ten, "ratio": ten as f64 / one.max(1) as f64}))
}

/// The sweep's scaling against the simulated daemon, one row per
/// `--concurrency` (a generated store only).
/// With `--store-scaling`, also the sweep on a store 4 × larger at the
/// highest `--concurrency`.
fn sweep_figures(
    a: &BenchArgs,
    root: &std::path::Path,
    largest: u64,
) -> anyhow::Result<(serde_json::Value, Vec<ScalingRow>, Option<StoreScaling>)> {
    if !root.join(".truth").join("daemon").is_dir() {
        let skipped = json!({"skipped": format!("{}: not a generated store (no .truth/daemon views to serve)", root.display())});
        return Ok((skipped, Vec::new(), None));
    }
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let exe = std::env::current_exe()?;
    let setup = ScalingSetup {
        exe: &exe,
        root,
        latency_ms: a.latency_ms,
        cores,
        schema_args: schema_args(a),
    };
    let rows = sweep_scaling(&setup, &a.concurrency)?;
    let mut store = None;
    if a.store_scaling {
        let large = match &a.large_corpus {
            Some(d) => d.clone(),
            None => generated_corpus("bench-corpus-x4", STORE_SCALING_FACTOR)?,
        };
        let c = a.concurrency.iter().copied().max().unwrap_or(64);
        let small = rows.iter().find(|r| r.concurrency == c).cloned();
        store = Some(store_scaling(&setup, small, &large, c)?);
    }
    let sweep = json!({"latencyMs": a.latency_ms, "cores": cores, "largestExpectedMessage": largest, "rows": rows, "storeScaling": store});
    Ok((sweep, rows, store))
}

/// The text: offline figures, the peer, RSS, the comparison, the scaling
/// table and the targets.
fn print_text(a: &BenchArgs, root: &std::path::Path, m: &Figures) {
    let fig = &m.fig;
    outln!(
        "corpus: {} ({}: {} qualified and timed, {} refused in an untimed pass)",
        root.display(),
        count((fig.qualified + fig.refused) as u64, "source"),
        fig.qualified,
        fig.refused
    );
    outln!(
        "offline verify (1 core): {:.1} conversations/s, {:.0} steps/s, {:.1} MB/s ({:.1} MB in {:.2} s; {})",
        fig.conversations_per_sec, fig.steps_per_sec, fig.mb_per_sec, fig.bytes as f64 / 1e6, fig.seconds,
        if fig.passes == 1 {
            "one pass".to_string()
        } else {
            format!(
                "median of {} passes, fastest {:.1}, slowest {:.1} MB/s",
                fig.passes, fig.fastest_mb_per_sec, fig.slowest_mb_per_sec
            )
        }
    );
    outln!(
        "sha-256 over the same bytes: {:.1} MB/s; verify / sha-256 = {:.3} (by CPU time: {:.3}; verify CPU {:.2} s)",
        fig.sha256_mb_per_sec,
        fig.ratio_to_sha256,
        fig.ratio_to_sha256_cpu,
        fig.cpu_seconds
    );
    let peer = &m.peer;
    match (peer.get("mbPerSec").and_then(|v| v.as_f64()), m.peer_ratio) {
        (Some(p), Some(r)) => outln!(
            "peer python-protobuf ({}): {p:.1} MB/s; verify / peer = {r:.3}",
            peer["backend"].as_str().unwrap_or("?")
        ),
        _ => outln!(
            "peer: {}",
            peer.get("skipped")
                .and_then(|v| v.as_str())
                .unwrap_or("skipped")
        ),
    }
    if let (Some(one), Some(ten)) = (m.rss["peakRss1x"].as_u64(), m.rss["peakRss10x"].as_u64()) {
        outln!(
            "peak RSS: 1× {:.1} MB, 10× {:.1} MB (ratio {:.2})",
            one as f64 / 1e6,
            ten as f64 / 1e6,
            ten as f64 / one.max(1) as f64
        );
    }
    if let Some(c) = &m.comparison {
        outln!(
            "JSON comparison (1 core, CPU time, {} full responses confirmed equal by the one pass, {:.1} MB; {} equal only by the value comparison, left out): {:.1} MB/s; serde_json parsing the same text: {:.1} MB/s",
            c.responses,
            c.bytes as f64 / 1e6,
            c.unconfirmed,
            c.mb_per_sec,
            c.parse_mb_per_sec
        );
    }
    print_scaling(a, &m.rows, &m.sweep);
    if let Some(s) = &m.store {
        print_store_scaling(s);
    }
    outln!("targets (BENCHMARKS.md):");
    for t in &m.judged {
        outln!(
            "  {}: {} (target {}): {}",
            t.name,
            t.measured,
            t.limit,
            match t.met {
                Some(true) => "met",
                Some(false) => "missed",
                None => "not measured",
            }
        );
    }
}

/// The scaling table, or why the sweep was skipped.
fn print_scaling(a: &BenchArgs, rows: &[ScalingRow], sweep: &serde_json::Value) {
    if rows.is_empty() {
        if let Some(s) = sweep.get("skipped").and_then(|v| v.as_str()) {
            outln!("sweep: skipped: {s}");
        }
        return;
    }
    outln!(
        "sweep scaling: audit-sweep (client) vs the simulated daemon in its own process, {} ms latency, {} cores, {}:",
        a.latency_ms,
        rows[0].cores,
        count(rows[0].conversations, "conversation"),
    );
    outln!("| concurrency | wall | latency ideal | client user | client sys | CPU floor | peak client RSS | memory / conversation in flight | wall / max(ideal, floor) | daemon CPU | verdicts |");
    outln!("|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        outln!(
            "| {} | {:.2} s | {:.2} s | {:.2} s | {:.2} s | {:.2} s | {:.0} MB | {} | {:.2} | {:.2} s | {} verified, {} unknown, {} incomplete, {} not fetched, {} error |",
            r.concurrency,
            r.wall_seconds,
            r.ideal_seconds,
            r.client_user_seconds,
            r.client_sys_seconds,
            r.cpu_floor_seconds,
            r.client_peak_rss as f64 / 1e6,
            r.memory_per_conversation
                .map_or("—".to_string(), |m| format!("{:.1} MB", m / 1e6)),
            r.ratio,
            r.sim_cpu_seconds,
            r.verified,
            r.unknown,
            r.incomplete,
            r.not_fetched,
            r.error
        );
    }
}

/// The store-scaling line: the two sweeps' CPU, RSS and wall.
fn print_store_scaling(s: &StoreScaling) {
    outln!(
        "store scaling at concurrency {}: {} → {} conversations (largest expected message {} and {} bytes): client CPU {:.2} → {:.2} s ({:.2} ×), peak RSS {:.0} → {:.0} MB ({:.2} ×), wall {:.2} → {:.2} s",
        s.small.concurrency,
        s.small.conversations,
        s.large.conversations,
        s.largest_small,
        s.largest_large,
        s.small.client_user_seconds + s.small.client_sys_seconds,
        s.large.client_user_seconds + s.large.client_sys_seconds,
        s.cpu_ratio,
        s.small.client_peak_rss as f64 / 1e6,
        s.large.client_peak_rss as f64 / 1e6,
        s.rss_ratio,
        s.small.wall_seconds,
        s.large.wall_seconds
    );
}

/// `--records-dir`: a new folder (created), or an empty one. The bench
/// writes its manifests, the commands' outputs and their standard error
/// there, and removes its own outputs before each command, so a folder
/// holding anything (or a link) is refused: a user's file is never
/// overwritten or removed.
fn records_dir(d: &std::path::Path) -> anyhow::Result<()> {
    let refuse = |what: &str| {
        anyhow::Error::new(super::errors::Usage::Text(format!(
            "--records-dir {}: {what}; name a new or an empty folder",
            d.display()
        )))
    };
    match std::fs::symlink_metadata(d) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(d)?;
            Ok(())
        }
        Err(e) => Err(e.into()),
        Ok(m) if !m.is_dir() => Err(refuse("not a folder")),
        Ok(_) if std::fs::read_dir(d)?.next().is_some() => Err(refuse("not empty")),
        Ok(_) => Ok(()),
    }
}

/// `bench --records N`: the records synthesized and measured, printed.
fn run_records(n: u64, dir: Option<&std::path::Path>, json: bool) -> anyhow::Result<i32> {
    let exe = std::env::current_exe()?;
    let temp = tempfile::tempdir()?;
    let dir = match dir {
        Some(d) => {
            records_dir(d)?;
            d.to_path_buf()
        }
        None => temp.path().to_path_buf(),
    };
    let figures = crate::bench::records::records(&exe, &dir, n)?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&figures)?);
    } else {
        for line in figures.lines() {
            outln!("{line}");
        }
    }
    Ok(0)
}

fn run_peer(encodings: &[Vec<u8>]) -> anyhow::Result<serde_json::Value> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/peer_upb.py");
    if !script.exists() {
        bail!("benches/peer_upb.py not found");
    }
    let dir = tempfile::tempdir()?;
    let set = dir.path().join("schema.pb");
    std::fs::write(&set, crate::schema::MODELED_SET)?;
    let payloads = dir.path().join("payloads.bin");
    write_payloads(&payloads, encodings)?;
    let o = Command::new("python3")
        .arg(&script)
        .arg(&set)
        .arg(&payloads)
        .arg("--json")
        .output()
        .context("running python3")?;
    if !o.status.success() {
        bail!(
            "peer failed: {}",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
    }
    Ok(serde_json::from_slice(&o.stdout)?)
}
