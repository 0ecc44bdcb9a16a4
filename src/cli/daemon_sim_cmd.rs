//! `agy-audit daemon-sim`: serve a generated store like agy's language server.

use agy_corpus::sim::{DaemonSim, FaultSpec, JsonStyle, SimOptions};
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// `agy-audit daemon-sim`.
#[derive(Debug, Args)]
pub struct DaemonSimArgs {
    /// The generated store root (with .truth/daemon/).
    #[arg(long, value_name = "DIR")]
    pub store: PathBuf,
    /// Port on 127.0.0.1 (0: an ephemeral port, announced in DIR/cli.log).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Require this x-codeium-csrf-token header, like the IDE's daemon.
    #[arg(long, value_name = "T")]
    pub csrf_token: Option<String>,
    /// A fault: ID:KIND[:ARG] or rate=R:KIND[:ARG] (repeatable). Kinds:
    /// stale-cache, same-step-stale, dropped-field, extra-rpc-field,
    /// version-skew, http-500, http-503, reset, latency:MS, jitter:MS, hang,
    /// truncated-body, oversized-body[:BYTES], invalid-json, mutate-source,
    /// not-loaded. DIR/.truth/faults.txt is loaded too.
    #[arg(long = "fault", value_name = "SPEC", value_parser = check_fault)]
    pub faults: Vec<String>,
    /// Seed of rate faults and jitter.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Ignore DIR/.truth/faults.txt.
    #[arg(long)]
    pub no_fault_file: bool,
    /// How to spell the trajectories: canonical (the stored views, as agy
    /// writes them), nine-digit-times (Timestamps and Durations with nine
    /// fraction digits), proto-names (field names as in the .proto),
    /// enum-numbers, int64-numbers (64-bit integers as JSON numbers), spaced
    /// (indented), or mixed (a seeded random mix per answer and value, with
    /// Timestamp offsets, URL-safe base64 and quoted numbers too). Every
    /// style is a legal proto3 JSON encoding of the same values, so verdicts
    /// must not change.
    #[arg(long, value_name = "STYLE", default_value_t = JsonStyle::Canonical)]
    pub json_style: JsonStyle,
    /// Stop after this many seconds (default: run until killed).
    #[arg(long, value_name = "SECS")]
    pub duration: Option<u64>,
}

/// A `--fault` that does not parse is a usage error naming the flag.
fn check_fault(s: &str) -> Result<String, String> {
    FaultSpec::parse(s)
        .map(|_| s.to_string())
        .map_err(|e| e.to_string())
}

/// Runs the simulated daemon in the foreground.
pub fn run(a: DaemonSimArgs) -> anyhow::Result<i32> {
    let faults = a
        .faults
        .iter()
        .map(|f| FaultSpec::parse(f))
        .collect::<Result<Vec<_>, _>>()
        .context("parsing --fault")?;
    let mut opts = SimOptions::new(&a.store);
    opts.port = a.port;
    opts.csrf_token = a.csrf_token.clone();
    opts.faults = faults;
    opts.seed = a.seed;
    opts.load_fault_file = !a.no_fault_file;
    opts.json_style = a.json_style;
    let sim = DaemonSim::start(opts).context("starting the simulated daemon")?;
    outln!(
        "daemon-sim: serving {} at {} ({}, JSON style {})",
        a.store.display(),
        sim.url(),
        crate::util::count(sim.faults().len() as u64, "fault"),
        a.json_style
    );
    match a.duration {
        Some(s) => std::thread::sleep(Duration::from_secs(s)),
        None => loop {
            std::thread::park();
        },
    }
    sim.stop();
    Ok(0)
}
