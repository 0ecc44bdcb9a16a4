//! `agy-audit daemon-sim`: serve a generated store like agy's language server.

use super::common::{seed, whole};
use crate::util::count;
use agy_corpus::sim::{DaemonSim, FaultSpec, FaultTarget, JsonStyle, SimOptions};
use anyhow::Context;
use clap::Args;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `agy-audit daemon-sim`.
#[derive(Debug, Args)]
pub struct DaemonSimArgs {
    /// The generated store root (with .truth/daemon/).
    #[arg(long, value_name = "DIR")]
    pub store: PathBuf,
    /// Port on 127.0.0.1 (0 to 65535; 0: an ephemeral port, announced in DIR/cli.log).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = whole::<u16>(0, u16::MAX as u64))]
    pub port: u16,
    /// Require this x-codeium-csrf-token header, like the IDE's daemon: 1 to
    /// 256 printable ASCII characters, no whitespace or control character
    /// (agy-audit sends no other token, and an empty one not at all).
    #[arg(long, value_name = "T", value_parser = plain_token)]
    pub csrf_token: Option<String>,
    /// A fault: ID:KIND[:ARG] or rate=R:KIND[:ARG] (repeatable). Kinds:
    /// stale-cache, same-step-stale, dropped-field, extra-rpc-field,
    /// version-skew, http-500, http-503, reset, latency:MS, jitter:MS, hang,
    /// truncated-body, oversized-body[:BYTES], invalid-json, mutate-source,
    /// not-loaded. ID must name a conversation of the store (R: 0 to 1;
    /// MS and BYTES: whole numbers). DIR/.truth/faults.txt is loaded too.
    #[arg(long = "fault", value_name = "SPEC", value_parser = check_fault)]
    pub faults: Vec<String>,
    /// Seed of rate faults and jitter (a whole number, 0 or more).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = seed())]
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
    /// IDE mode: behave like the Antigravity IDE's language server. Every
    /// request must carry x-codeium-csrf-token (401 without it, 403 for a
    /// wrong one, each with a JSON {"code", "message"} error body): --csrf-token, or a UUID-shaped token derived from --seed
    /// and the port. The port lines go to LOGS/language_server.log and the
    /// spawn line with `--csrf_token <token>` to LOGS/main.log (appended, in
    /// the IDE's formats) instead of DIR/cli.log.
    #[arg(long)]
    pub ide: bool,
    /// The IDE's log folder for --ide (default: where the IDE keeps it:
    /// $XDG_CONFIG_HOME or ~/.config + /Antigravity/logs on Linux,
    /// ~/Library/Application Support/Antigravity/logs on macOS,
    /// %APPDATA%\Antigravity\logs on Windows).
    #[arg(long, value_name = "LOGS", requires = "ide")]
    pub ide_logs: Option<PathBuf>,
    /// Stop after this many seconds (a whole number, 0 or more; default: run
    /// until killed).
    #[arg(long, value_name = "SECS", allow_negative_numbers = true, value_parser = seed())]
    pub duration: Option<u64>,
}

/// `--csrf-token`: a token the client can send, by the rule every reader of
/// a token applies ([`crate::rpc::ide::check_token`]); a token with a space
/// or a newline would be written into main.log's spawn line and read back
/// as another token.
fn plain_token(s: &str) -> Result<String, String> {
    crate::rpc::ide::check_token(s)
        .map(|()| s.to_string())
        .map_err(|e| format!("not a plain printable CSRF token: {e}"))
}

/// `--store` must name a generated store: a missing folder, or one without
/// the daemon's views, is a usage error naming the flag (exit 2, as for a
/// store root elsewhere).
fn check_store(store: &Path) -> anyhow::Result<()> {
    match crate::discover::check_root(store) {
        Ok(()) => {}
        Err(crate::Error::Root(source)) => {
            return Err(super::errors::Usage::Flag {
                flag: "--store",
                source,
            }
            .into())
        }
        Err(e) => return Err(e.into()),
    }
    if !store.join(".truth").join("daemon").is_dir() {
        return Err(super::errors::Usage::Text(format!(
            "--store {}: not a generated store (no .truth/daemon/); write one with `agy-audit corpus generate --out DIR`",
            store.display()
        ))
        .into());
    }
    Ok(())
}

/// A `--fault` that does not parse is a usage error naming the flag.
fn check_fault(s: &str) -> Result<String, String> {
    FaultSpec::parse(s)
        .map(|_| s.to_string())
        .map_err(|e| e.to_string())
}

/// Every `--fault ID:KIND` must name a conversation the store serves (a
/// `.truth/daemon/<ID>.full.json` view): a fault on nothing would be
/// silently ignored.
fn check_fault_ids(store: &Path, texts: &[String], faults: &[FaultSpec]) -> anyhow::Result<()> {
    let views = store.join(".truth").join("daemon");
    let by_id: Vec<(&str, &str)> = texts
        .iter()
        .zip(faults)
        .filter_map(|(text, f)| match &f.target {
            FaultTarget::Id(id) => Some((text.as_str(), id.as_str())),
            FaultTarget::Rate(_) => None,
        })
        .collect();
    if by_id.is_empty() || !views.is_dir() {
        return Ok(());
    }
    let served: HashSet<String> = std::fs::read_dir(&views)
        .map_err(|e| crate::Error::io(&views, e))?
        .filter_map(Result::ok)
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".full.json")
                .map(str::to_string)
        })
        .collect();
    let unknown: Vec<(&str, &str)> = by_id
        .into_iter()
        .filter(|(_, id)| !served.contains(*id))
        .collect();
    if let Some((text, id)) = unknown.first() {
        let more = match unknown.len() - 1 {
            0 => String::new(),
            n => format!(
                " (and {} naming none)",
                count(n as u64, "more --fault value")
            ),
        };
        return Err(super::errors::Usage::Text(format!(
            "--fault {text}: {} serves no conversation {id}{more}",
            store.display()
        ))
        .into());
    }
    Ok(())
}

/// Runs the simulated daemon in the foreground.
pub fn run(a: DaemonSimArgs) -> anyhow::Result<i32> {
    let faults = a
        .faults
        .iter()
        .map(|f| FaultSpec::parse(f))
        .collect::<Result<Vec<_>, _>>()
        .context("parsing --fault")?;
    check_store(&a.store)?;
    check_fault_ids(&a.store, &a.faults, &faults)?;
    let mut opts = SimOptions::new(&a.store);
    opts.port = a.port;
    opts.csrf_token = a.csrf_token.clone();
    opts.faults = faults;
    opts.seed = a.seed;
    opts.load_fault_file = !a.no_fault_file;
    opts.json_style = a.json_style;
    if a.ide {
        let logs =
            match a
                .ide_logs
                .clone()
                .or_else(agy_corpus::sim::default_ide_logs_dir)
            {
                Some(l) => l,
                None => return Err(super::errors::Usage::Text(
                    "--ide: no IDE log folder (HOME/APPDATA unset); name one with --ide-logs LOGS"
                        .into(),
                )
                .into()),
            };
        opts.ide_logs = Some(logs);
    }
    let ide_logs = opts.ide_logs.clone();
    let sim = DaemonSim::start(opts).context("starting the simulated daemon")?;
    if let Some(logs) = &ide_logs {
        outln!(
            "daemon-sim: IDE mode, port and token announced in {}",
            logs.display()
        );
    }
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
