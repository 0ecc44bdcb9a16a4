//! `agy-audit demo`: the main job on the embedded default. Generates the
//! default synthetic corpus, serves it with the simulated daemon on 127.0.0.1,
//! runs the attesting sweep against it, writes the qualification report, and
//! checks every verdict against the generator's ground truth.

use crate::manifest::Manifest;
use crate::pipeline::{sweep, SweepOptions};
use crate::report::{render_report, verdict_chart};
use crate::rpc::ClientOptions;
use crate::schema::Schema;
use crate::source::legacy::LegacyKey;
use crate::util::atomic::{write_file, WriteOptions};
use crate::verdict::{exit, Outcome, ReasonClass, VerdictKind};
use agy_corpus::corpus::{generate, GenerateOptions, PlanOptions};
use agy_corpus::sim::{DaemonSim, FaultSpec, JsonStyle, SimOptions};
use anyhow::{bail, Context};
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Duration;

const DEMO_EXIT: &str = "\
Exit codes:
  0    the sweep completed and every verdict agrees with the ground truth
       (the corpus's deliberate refusals included)
  1    an error, or the sweep did not complete (sessions not fetched)
  2    usage error
  4    a verdict disagrees with the ground truth (the first ones are listed)
  130  interrupted by Ctrl-C";

/// Generate the default synthetic corpus, start the simulated daemon, run the
/// audit sweep against it, write the report, and compare every verdict with
/// the ground truth.
#[derive(Debug, Args)]
#[command(after_help = DEMO_EXIT)]
pub struct DemoArgs {
    /// Where to put the store, the sweep and the report (default: a fresh
    /// folder under the system temp dir). Must not exist.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Conversations to generate (1 to 100000).
    #[arg(long, default_value_t = 405, value_parser = super::corpus_cmd::conversations_value)]
    pub conversations: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Fraction of conversations with a planned daemon fault.
    #[arg(long, default_value_t = 0.0)]
    pub fault_rate: f64,
    /// Simulated daemon latency per request, in milliseconds.
    #[arg(long, default_value_t = 0)]
    pub latency_ms: u64,
    /// Most conversations fetched at once (1 to 256). Each sends
    /// LoadTrajectory, then its full and ordinary GetCascadeTrajectory
    /// together, so up to twice this many requests are in flight.
    #[arg(long, default_value_t = 8, value_parser = super::sweep_cmd::concurrency_value)]
    pub concurrency: usize,
    /// How the simulated daemon spells its answers (see `daemon-sim
    /// --json-style`): canonical, nine-digit-times, proto-names,
    /// enum-numbers, int64-numbers, spaced or mixed. Verdicts must not change.
    #[arg(long, value_name = "STYLE", default_value_t = JsonStyle::Canonical)]
    pub json_style: JsonStyle,
    /// Only the summary.
    #[arg(long)]
    pub quiet: bool,
}

fn default_out() -> PathBuf {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    std::env::temp_dir().join(format!("agy-audit-demo-{}-{stamp}", std::process::id()))
}

/// Verdicts that agree with `.truth/expected.jsonl` (verdict and reason class),
/// and how many sessions were verified although the truth says otherwise.
/// The truth's public ids are parsed with the reader's own parsers
/// (`Outcome::from_id`, `ReasonClass::from_id`); an id the reader does not
/// know is an error, never a silent disagreement.
pub fn agreement(m: &Manifest, store: &Path) -> anyhow::Result<(usize, usize, Vec<String>)> {
    let path = store.join(".truth").join("expected.jsonl");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let mut truth = std::collections::HashMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line)?;
        let id = v["fileId"].as_str().unwrap_or_default().to_string();
        let verdict = v["verdict"].as_str().unwrap_or_default();
        let outcome = Outcome::from_id(verdict)
            .with_context(|| format!("{}: {id}: unknown verdict {verdict:?}", path.display()))?;
        let class = match v["reasonClass"].as_str() {
            None => None,
            Some(c) => Some(ReasonClass::from_id(c).with_context(|| {
                format!("{}: {id}: unknown reason class {c:?}", path.display())
            })?),
        };
        truth.insert(id, (outcome, class));
    }
    let verified = |o: Outcome| {
        matches!(
            o,
            Outcome::Verdict(VerdictKind::Verified | VerdictKind::VerifiedSourceOnly)
        )
    };
    let (mut agree, mut false_verified, mut off) = (0, 0, Vec::new());
    for s in &m.sessions {
        let got = (s.outcome(), s.reason_class);
        match truth.get(&s.file_id) {
            Some(want) if *want == got => agree += 1,
            want => {
                if verified(got.0) && want.is_some_and(|w| !verified(w.0)) {
                    false_verified += 1;
                }
                let show = |(o, c): &(Outcome, Option<ReasonClass>)| {
                    format!("{} {}", o.as_str(), c.map_or("-", |c| c.id()))
                };
                let want = want.map_or_else(|| "(none)".to_string(), show);
                off.push(format!("{}: got {}, truth {want}", s.file_id, show(&got)));
            }
        }
    }
    Ok((agree, false_verified, off))
}

pub fn run(a: DemoArgs) -> anyhow::Result<i32> {
    let out = a.out.clone().unwrap_or_else(default_out);
    if std::fs::symlink_metadata(&out).is_ok() {
        bail!(crate::Error::Usage(format!(
            "{}: already exists; --out must name a new folder",
            out.display()
        )));
    }
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let store = out.join("store");
    let plan = PlanOptions {
        conversations: a.conversations,
        seed: a.seed,
        fault_rate: a.fault_rate,
        ..PlanOptions::default()
    };
    let summary = generate(&GenerateOptions {
        out: store.clone(),
        plan,
        force: false,
    })?;
    eprintln!(
        "demo: generated {} ({} sqlite, {} legacy, {}) in {}",
        crate::util::count(summary.conversations as u64, "conversation"),
        summary.sqlite,
        summary.protobuf,
        crate::util::count(summary.steps as u64, "step"),
        store.display()
    );
    let mut faults = Vec::new();
    if a.latency_ms > 0 {
        faults.push(FaultSpec::parse(&format!(
            "rate=1:latency:{}",
            a.latency_ms
        ))?);
    }
    let sim = DaemonSim::start(SimOptions {
        store: store.clone(),
        port: 0,
        csrf_token: None,
        faults,
        seed: a.seed,
        max_connections: 512,
        write_cli_log: true,
        load_fault_file: true,
        hang_limit: Duration::from_secs(60),
        json_style: a.json_style,
    })?;
    eprintln!("demo: simulated daemon on {}", sim.url());
    let schema = Schema::modeled()?;
    let key = LegacyKey::default();
    let progress = super::sweep_cmd::progress_mode(a.quiet);
    let stop = super::sweep_cmd::interrupt_flag();
    let sweep_dir = out.join("sweep");
    let opts = SweepOptions {
        root: store.clone(),
        out: sweep_dir.clone(),
        endpoint: sim.url(),
        client: ClientOptions {
            timeout: Duration::from_secs(10),
            cancel: Some(stop.clone()),
            ..ClientOptions::default()
        },
        concurrency: a.concurrency,
        jobs: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .min(super::sweep_cmd::MAX_JOBS),
        resume: false,
        shard: None,
        bracket_retries: 0,
        progress,
    };
    let result = sweep(&schema, &key, &opts, stop);
    sim.stop();
    let summary = result?;
    let m = summary.manifest;
    let report = out.join("report.md");
    let chart = out.join("report.svg");
    let wo = WriteOptions::default();
    write_file(&chart, verdict_chart(&m).as_bytes(), &wo)?;
    write_file(
        &report,
        render_report(&m, Some("report.svg")).as_bytes(),
        &wo,
    )?;
    let (agree, false_verified, off) = agreement(&m, &store)?;
    let c = &m.counts;
    outln!(
        "demo: {} sessions: verified={} verifiedSourceOnly={} unknown={} incomplete={} notFetched={} error={} in {:.2}s (concurrency {})",
        c.selected, c.verified, c.verified_source_only, c.unknown, c.incomplete, c.not_fetched, c.error, m.timing.wall_seconds, a.concurrency
    );
    outln!("demo: verdicts agreeing with the ground truth: {agree}/{} (false verified: {false_verified})", m.sessions.len());
    for o in off.iter().take(10) {
        outln!("demo:   disagreement {o}");
    }
    let size = |p: &Path| folder_bytes(p);
    outln!("demo: wrote everything under {}:", out.display());
    outln!(
        "demo:   store    {} ({}, {})",
        store.display(),
        crate::util::count(summary_conversations(&m), "conversation"),
        human_bytes(size(&store))
    );
    outln!(
        "demo:   sweep    {} (manifest.json, sessions.csv, corpus/ with {} raw responses and sidecars; {})",
        sweep_dir.display(),
        std::fs::read_dir(sweep_dir.join("corpus"))
            .map(|d| d.count())
            .unwrap_or(0),
        human_bytes(size(&sweep_dir))
    );
    outln!(
        "demo:   report   {} and {}",
        report.display(),
        chart.display()
    );
    outln!(
        "demo:   manifest {}",
        sweep_dir.join(crate::manifest::MANIFEST_FILE).display()
    );
    Ok(if summary.interrupted {
        exit::INTERRUPTED
    } else if !m.complete {
        exit::ERROR
    } else if off.is_empty() {
        exit::OK
    } else {
        exit::INCOMPLETE
    })
}

fn summary_conversations(m: &Manifest) -> u64 {
    m.counts.selected
}

/// Bytes of every regular file under `dir`.
fn folder_bytes(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// `12.3 MB`, `456 kB`, `789 B`.
fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1_000_000_000 => format!("{:.1} GB", n as f64 / 1e9),
        n if n >= 1_000_000 => format!("{:.1} MB", n as f64 / 1e6),
        n if n >= 1_000 => format!("{} kB", n / 1_000),
        n => format!("{n} B"),
    }
}
