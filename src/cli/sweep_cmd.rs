//! `agy-audit audit-sweep`: requalify a whole store.

use super::common::{DecodeArgs, RootArg};
use super::daemon_args::DaemonArgs;
use crate::pipeline::{sweep, ProgressMode, SweepOptions};
use crate::verdict::exit;
use anyhow::{bail, Context};
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Requalify a whole store against the daemon: every conversation verified,
/// verified with source-only fields, unknown or incomplete, in a version-5
/// manifest with per-session raw responses and sidecars.
#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub root: RootArg,
    /// Output directory; must not exist (unless --resume). Created mode 0700.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Most conversations fetched at once. Each sends LoadTrajectory, then its
    /// full and ordinary GetCascadeTrajectory together, so up to twice this
    /// many requests are in flight.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// Decode threads (default: the number of CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Continue an interrupted sweep in --out.
    #[arg(long)]
    pub resume: bool,
    /// Only the i-th of n shards (1-based), e.g. 2/4.
    #[arg(long, value_name = "i/n")]
    pub shard: Option<String>,
    /// Only the summary (no progress bars or per-session lines).
    #[arg(long)]
    pub quiet: bool,
    #[command(flatten)]
    pub daemon: DaemonArgs,
    #[command(flatten)]
    pub decode: DecodeArgs,
}

pub fn parse_shard(s: &str) -> anyhow::Result<(usize, usize)> {
    let (i, n) = s.split_once('/').context("--shard takes i/n, e.g. 1/4")?;
    let (i, n): (usize, usize) = (i.trim().parse()?, n.trim().parse()?);
    if n == 0 || i == 0 || i > n {
        bail!("--shard {s}: need 1 <= i <= n");
    }
    Ok((i, n))
}

pub fn run(a: SweepArgs) -> anyhow::Result<i32> {
    let (schema, key) = a.decode.load()?;
    let root = a.root.get();
    let endpoint = a.daemon.endpoint(&root)?;
    let progress = if a.quiet {
        ProgressMode::Quiet
    } else if std::io::stderr().is_terminal() {
        ProgressMode::Bars
    } else {
        ProgressMode::Lines
    };
    let opts = SweepOptions {
        root: root.clone(),
        out: a.out.clone(),
        endpoint,
        client: a.daemon.client_options(),
        concurrency: a.concurrency.max(1),
        jobs: a.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
        }),
        resume: a.resume,
        shard: a.shard.as_deref().map(parse_shard).transpose()?,
        bracket_retries: a.daemon.bracket_retries,
        progress,
    };
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        let _ = ctrlc::set_handler(move || {
            if stop.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
            eprintln!("agy-audit: interrupted: draining in-flight work (Ctrl-C again to abort)");
        });
    }
    let summary = sweep(&schema, &key, &opts, stop)?;
    let c = &summary.manifest.counts;
    eprintln!(
        "audit-sweep: selected={} verified={} verifiedSourceOnly={} unknown={} incomplete={} error={} complete={} wall={:.2}s manifest={}",
        c.selected,
        c.verified,
        c.verified_source_only,
        c.unknown,
        c.incomplete,
        c.error,
        summary.manifest.complete,
        summary.manifest.timing.wall_seconds,
        summary.out.join(crate::manifest::MANIFEST_FILE).display()
    );
    Ok(if summary.interrupted || c.error > 0 {
        exit::ERROR
    } else if c.incomplete > 0 {
        exit::INCOMPLETE
    } else if c.unknown > 0 {
        exit::UNKNOWN
    } else {
        exit::OK
    })
}
