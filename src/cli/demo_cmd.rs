//! `agy-audit demo`: the main job on the embedded default. Generates the
//! default synthetic corpus, serves it with the simulated daemon on 127.0.0.1,
//! runs the attesting sweep against it, writes the qualification report, and
//! checks every verdict against the generator's ground truth.

use crate::corpus::{generate, GenerateOptions, PlanOptions};
use crate::manifest::Manifest;
use crate::pipeline::{sweep, ProgressMode, SweepOptions};
use crate::report::{render_report, verdict_chart};
use crate::rpc::ClientOptions;
use crate::schema::Schema;
use crate::sim::{DaemonSim, FaultSpec, JsonStyle, SimOptions};
use crate::source::legacy::LegacyKey;
use crate::util::atomic::{write_file, WriteOptions};
use crate::verdict::exit;
use anyhow::{bail, Context};
use clap::Args;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Generate the default synthetic corpus, start the simulated daemon, run the
/// audit sweep against it, write the report, and compare every verdict with
/// the ground truth.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to put the store, the sweep and the report (default: a fresh
    /// folder under the system temp dir). Must not exist.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Conversations to generate.
    #[arg(long, default_value_t = 405)]
    pub conversations: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Fraction of conversations with a planned daemon fault.
    #[arg(long, default_value_t = 0.0)]
    pub fault_rate: f64,
    /// Simulated daemon latency per request, in milliseconds.
    #[arg(long, default_value_t = 0)]
    pub latency_ms: u64,
    /// Most conversations fetched at once. Each sends LoadTrajectory, then its
    /// full and ordinary GetCascadeTrajectory together, so up to twice this
    /// many requests are in flight.
    #[arg(long, default_value_t = 8)]
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
pub fn agreement(m: &Manifest, store: &Path) -> anyhow::Result<(usize, usize, Vec<String>)> {
    let path = store.join(".truth").join("expected.jsonl");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let mut truth = std::collections::HashMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line)?;
        let id = v["fileId"].as_str().unwrap_or_default().to_string();
        truth.insert(
            id,
            (
                v["verdict"].as_str().unwrap_or_default().to_string(),
                v["reasonClass"].as_str().map(str::to_string),
            ),
        );
    }
    let (mut agree, mut false_verified, mut off) = (0, 0, Vec::new());
    for s in &m.sessions {
        let got = (
            s.verdict_str().to_string(),
            s.reason_class.map(|c| c.id().to_string()),
        );
        match truth.get(&s.file_id) {
            Some(want) if *want == got => agree += 1,
            want => {
                if got.0.starts_with("verified")
                    && want.is_some_and(|w| !w.0.starts_with("verified"))
                {
                    false_verified += 1;
                }
                off.push(format!("{}: got {got:?}, truth {want:?}", s.file_id));
            }
        }
    }
    Ok((agree, false_verified, off))
}

pub fn run(a: DemoArgs) -> anyhow::Result<i32> {
    let out = a.out.clone().unwrap_or_else(default_out);
    if std::fs::symlink_metadata(&out).is_ok() {
        bail!("{}: must not exist", out.display());
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
        "demo: generated {} conversations ({} sqlite, {} legacy, {} steps) in {}",
        summary.conversations,
        summary.sqlite,
        summary.protobuf,
        summary.steps,
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
    let progress = if a.quiet {
        ProgressMode::Quiet
    } else if std::io::stderr().is_terminal() {
        ProgressMode::Bars
    } else {
        ProgressMode::Quiet
    };
    let sweep_dir = out.join("sweep");
    let opts = SweepOptions {
        root: store.clone(),
        out: sweep_dir.clone(),
        endpoint: sim.url(),
        client: ClientOptions {
            timeout: Duration::from_secs(10),
            ..ClientOptions::default()
        },
        concurrency: a.concurrency.max(1),
        jobs: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2),
        resume: false,
        shard: None,
        bracket_retries: 0,
        progress,
    };
    let result = sweep(&schema, &key, &opts, Arc::new(AtomicBool::new(false)));
    sim.stop();
    let m = result?.manifest;
    let report = out.join("report.md");
    let wo = WriteOptions::default();
    write_file(&out.join("report.svg"), verdict_chart(&m).as_bytes(), &wo)?;
    write_file(
        &report,
        render_report(&m, Some("report.svg")).as_bytes(),
        &wo,
    )?;
    let (agree, false_verified, off) = agreement(&m, &store)?;
    let c = &m.counts;
    println!(
        "demo: {} sessions: verified={} verifiedSourceOnly={} unknown={} incomplete={} error={} in {:.2}s (concurrency {})",
        c.selected, c.verified, c.verified_source_only, c.unknown, c.incomplete, c.error, m.timing.wall_seconds, a.concurrency
    );
    println!("demo: verdicts agreeing with the ground truth: {agree}/{} (false verified: {false_verified})", m.sessions.len());
    for o in off.iter().take(10) {
        println!("demo:   disagreement {o}");
    }
    println!(
        "demo: manifest {}",
        sweep_dir.join(crate::manifest::MANIFEST_FILE).display()
    );
    println!("demo: report {}", report.display());
    Ok(if off.is_empty() && m.complete {
        exit::OK
    } else {
        exit::INCOMPLETE
    })
}
