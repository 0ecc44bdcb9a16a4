//! `agy-audit bench`: decode throughput against the hash limit and a peer.

use super::common::{whole, DecodeArgs, MAX_LATENCY_MS};
use super::sweep_cmd::MAX_CONCURRENCY;
use crate::bench::{
    ensure_corpus, offline_verify, offline_verify_passes, peak_rss_bytes, sources, sweep_vs_sim,
    write_payloads, CorpusCache,
};
use crate::util::count;
use anyhow::{bail, Context};
use clap::Args;
use serde_json::json;
use std::path::PathBuf;
use std::process::Command;

/// Measure offline verify throughput (snapshot + strict decode + projection +
/// digest) in conversations/s, steps/s and MB/s on one core, next to SHA-256
/// over the same bytes in the same run, the Python protobuf (upb) peer when
/// available, peak RSS at 1× and 10× the corpus, and an end-to-end sweep
/// against the simulated daemon at a fixed latency (wall time next to the
/// ideal 2 × N × latency / concurrency).
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
    #[arg(long, value_name = "MS", default_value_t = 20, allow_negative_numbers = true, value_parser = whole::<u64>(0, MAX_LATENCY_MS))]
    pub latency_ms: u64,
    /// Conversations fetched at once in the sweep (1 to 256; each with its
    /// full and ordinary requests in flight together).
    #[arg(long, default_value_t = 16, allow_negative_numbers = true, value_parser = whole::<usize>(1, MAX_CONCURRENCY as u64))]
    pub concurrency: usize,
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
    /// Internal: verify the corpus this many times and print peak RSS (child process mode).
    #[arg(long, hide = true, value_parser = whole::<usize>(1, 100))]
    pub rss_probe: Option<usize>,
    #[command(flatten)]
    pub decode: DecodeArgs,
}

fn default_corpus() -> anyhow::Result<PathBuf> {
    let dir = PathBuf::from("target").join("bench-corpus");
    ensure_corpus(&dir, |outcome| {
        let what = match outcome {
            CorpusCache::Regenerated => "replacing a corpus another generator build wrote in",
            CorpusCache::Current | CorpusCache::Generated => "generating the default corpus into",
        };
        crate::note!(
            "agy-audit bench: {what} {} (reused until the generator changes)",
            dir.display()
        );
    })?;
    Ok(dir)
}

pub fn run(a: BenchArgs) -> anyhow::Result<i32> {
    if let Some(polls) = a.watch_polls {
        let exe = std::env::current_exe()?;
        let figures = crate::bench::watch_memory(&exe, 50, polls)?;
        if a.json {
            outln!("{}", serde_json::to_string_pretty(&figures)?);
        } else {
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
        }
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
    if let Some(repeat) = a.rss_probe {
        let _ = offline_verify(&schema, &key, &paths, repeat)?;
        outln!("{}", peak_rss_bytes().unwrap_or(0));
        return Ok(0);
    }
    let (fig, encodings) = offline_verify_passes(&schema, &key, &paths, 1, a.passes as usize)?;
    let mut peer = serde_json::Value::Null;
    if !a.no_peer {
        peer = run_peer(&encodings).unwrap_or_else(|e| json!({"skipped": e.to_string()}));
    }
    let mut rss = serde_json::Value::Null;
    if !a.no_rss {
        let probe = |n: usize| -> anyhow::Result<u64> {
            let exe = std::env::current_exe()?;
            let mut c = Command::new(exe);
            c.args(["bench", "--corpus"])
                .arg(&root)
                .args(["--rss-probe", &n.to_string()]);
            if let Some(s) = &a.decode.schema {
                c.arg("--schema").arg(s);
            }
            if let Some(h) = &a.decode.schema_sha256 {
                c.arg("--schema-sha256").arg(h);
            }
            let o = c.output()?;
            Ok(String::from_utf8_lossy(&o.stdout).trim().parse()?)
        };
        let one = probe(1)?;
        let ten = probe(10)?;
        rss = json!({"peakRss1x": one, "peakRss10x": ten, "ratio": ten as f64 / one.max(1) as f64});
    }
    let mut sweep = serde_json::Value::Null;
    if !a.no_sweep {
        sweep = if root.join(".truth").join("daemon").is_dir() {
            let jobs = std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2);
            serde_json::to_value(sweep_vs_sim(
                &schema,
                &key,
                &root,
                a.latency_ms,
                a.concurrency,
                jobs,
            )?)?
        } else {
            json!({"skipped": format!("{}: not a generated store (no .truth/daemon views to serve)", root.display())})
        };
    }
    let peer_ratio = peer
        .get("mbPerSec")
        .and_then(|v| v.as_f64())
        .map(|p| fig.mb_per_sec / p);
    if a.json {
        let out = json!({"corpus": root, "offline": fig, "peer": peer, "verifyOverPeer": peer_ratio, "rss": rss, "sweep": sweep});
        outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
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
            "sha-256 over the same bytes: {:.1} MB/s; verify / sha-256 = {:.3}",
            fig.sha256_mb_per_sec,
            fig.ratio_to_sha256
        );
        match (peer.get("mbPerSec").and_then(|v| v.as_f64()), peer_ratio) {
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
        if let (Some(one), Some(ten)) = (rss["peakRss1x"].as_u64(), rss["peakRss10x"].as_u64()) {
            outln!(
                "peak RSS: 1× {:.1} MB, 10× {:.1} MB (ratio {:.2})",
                one as f64 / 1e6,
                ten as f64 / 1e6,
                ten as f64 / one.max(1) as f64
            );
        }
        if let Some(w) = sweep.get("wallSeconds").and_then(|v| v.as_f64()) {
            outln!(
                "sweep vs daemon-sim ({}, {} ms latency, concurrency {}, {}): wall {w:.2} s, ideal {:.2} s, wall / ideal = {:.2} ({} verified, {} unknown, {} incomplete, {} error)",
                count(sweep["conversations"].as_u64().unwrap_or(0), "conversation"),
                sweep["latencyMs"], sweep["concurrency"],
                count(sweep["jobs"].as_u64().unwrap_or(0), "job"),
                sweep["idealSeconds"].as_f64().unwrap_or(0.0),
                sweep["ratioToIdeal"].as_f64().unwrap_or(0.0),
                sweep["verified"], sweep["unknown"], sweep["incomplete"], sweep["error"]
            );
        } else if let Some(s) = sweep.get("skipped").and_then(|v| v.as_str()) {
            outln!("sweep: skipped: {s}");
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
