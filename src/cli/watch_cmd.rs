//! `agy-audit watch`: keep every root's sidecars verified (the loop is
//! [`crate::watch`]; this is its command line).

use super::common::{whole, DecodeArgs};
use super::daemon_args::DaemonArgs;
use crate::watch::metadata::DEFAULT_BOUND;
use crate::watch::{
    duration_text, parse_duration, watch, Ended, NoWatchSink, WatchOptions, WatchSink,
};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

const WATCH_EXIT: &str = "\
Log (standard error, one line each): `synced ID VERDICT (reason)` when a
stale sidecar was re-verified, `wrote PATH VERDICT (reason)` when its sidecar
was written (both carry the source-only reason), `checked ID unknown|incomplete
(reason)` when it was refused (no sidecar written), `refusing PATH` for a file
at a sidecar path that is not a trajectory sidecar (left alone), one line when
a root's daemon becomes unavailable (once per failure streak) and one when it
`recovered`, and a `pass N` summary after the first pass and after any pass
that found a stale sidecar.

A refused conversation is logged once per streak: while each native check
ends in the same refusal (at every poll with --metadata-bound 0s) it is not
logged again, and no pass line is printed for it.

State for `doctor`: $XDG_STATE_HOME/agy-audit/watch-<root hash>.json
(default ~/.local/state/agy-audit), one per root: pid, heartbeat, stop time.
Never under a store root: a state folder inside a watched root (or equal to
it, links followed) is a usage error, before anything is written.

Exit codes:
  0    the idle timeout passed, SIGINT/SIGTERM drained the loop (the fetch
       in flight is abandoned; a second signal aborts with 130/143), or
       --once found every sidecar fresh or re-verified it (or the source was
       refused: a verdict, not missing evidence)
  1    --once left a conversation without evidence: its daemon unavailable,
       not fetched, a source or sidecar unreadable or unwritable, or a file
       at its sidecar path that is not a trajectory sidecar
  2    usage error (an --interval under 1s among them; a state folder
       inside a watched root)";

/// Keep every root's sidecars verified: poll the roots, re-verify each
/// stale sidecar (missing, unreadable, written by another reader without an
/// attestation, minted under another profile, or no longer rechecking
/// against its native source) through the sweep's bracketed audit, and
/// write it atomically next to its source.
#[derive(Debug, Args)]
#[command(after_help = WATCH_EXIT)]
pub struct WatchArgs {
    /// A store root (repeatable). Without it: every default root that
    /// exists (the CLI's and the IDE's under HOME), or the one
    /// $ANTIGRAVITY_CLI_ROOT pins. Each root uses its own daemon (CLI:
    /// cli.log; IDE: the IDE's language_server.log and main.log), found
    /// again after every failure.
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Time between polls (e.g. 30s, 2m, 1.5s; a bare number is seconds):
    /// at least 1s; a shorter one is a usage error (0s would poll in a busy
    /// loop).
    #[arg(long, value_name = "D", default_value = "30s", value_parser = parse_duration)]
    pub interval: Duration,
    /// Exit 0 after this long without a stale sidecar (default: never).
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub idle_timeout: Option<Duration>,
    /// One pass that always checks native content, then exit (for cron and
    /// tests; see the exit codes).
    #[arg(long)]
    pub once: bool,
    /// Between native checks a source whose metadata (size, mtime, ctime,
    /// inode of the source, its -wal/-journal and its sidecar, a sibling .db
    /// beside a .pb, both format profiles) is unchanged is judged as last
    /// time, for at most this long (0s to 10m; 0s checks native content at
    /// every poll).
    #[arg(long, value_name = "D", default_value = "10m", value_parser = metadata_bound)]
    pub metadata_bound: Duration,
    /// Stop after this many polls, printing the resident memory (VmRSS and
    /// VmHWM) after poll 1, poll 10 and the last (`bench --watch-polls`).
    #[arg(long, hide = true, value_parser = whole::<u64>(1, u64::MAX))]
    pub max_polls: Option<u64>,
    #[command(flatten)]
    pub daemon: DaemonArgs,
    #[command(flatten)]
    pub decode: DecodeArgs,
}

/// Prints the process's resident memory after poll 1, poll 10 and `last`:
/// `watch: poll N: rss BYTES hwm BYTES` (what `bench --watch-polls` reads).
struct MemorySink {
    last: u64,
}

impl WatchSink for MemorySink {
    fn polled(&self, poll: u64, _pass: &crate::watch::Pass) {
        if poll == 1 || poll == 10 || poll == self.last {
            crate::note!(
                "watch: poll {poll}: rss {} hwm {}",
                crate::bench::current_rss_bytes().unwrap_or(0),
                crate::bench::peak_rss_bytes().unwrap_or(0)
            );
        }
    }
}

/// The shortest `--interval`: below it the loop would poll as fast as it
/// can (9,240 polls in 2 s at 0s).
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// `--interval` at least [`MIN_INTERVAL`]. Only `--max-polls` (hidden:
/// `bench --watch-polls`, whose run that count ends) may go below it.
fn check_interval(a: &WatchArgs) -> Result<(), super::errors::Usage> {
    if a.interval < MIN_INTERVAL && a.max_polls.is_none() {
        return Err(super::errors::Usage::Text(format!(
            "--interval {}: at least {} (a shorter interval polls in a busy loop)",
            duration_text(a.interval),
            duration_text(MIN_INTERVAL)
        )));
    }
    Ok(())
}

/// `--metadata-bound`: a duration of at most [`DEFAULT_BOUND`].
fn metadata_bound(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d > DEFAULT_BOUND {
        return Err(format!(
            "`{s}`: at most {} (the specification's bound)",
            duration_text(DEFAULT_BOUND)
        ));
    }
    Ok(d)
}

pub fn run(a: WatchArgs) -> anyhow::Result<i32> {
    check_interval(&a)?;
    let (schema, key) = a.decode.load()?;
    let sel = crate::roots::select(&a.roots)?;
    for m in &sel.missing {
        crate::note!("watch: {} not present (default root)", m.display());
    }
    let state_dir = crate::watch::state::state_dir();
    if let Some(dir) = &state_dir {
        let roots: Vec<PathBuf> = sel.roots.iter().map(|r| r.path.clone()).collect();
        crate::watch::state::check_outside(dir, &roots).map_err(|e| {
            super::errors::Usage::Text(crate::report::escape::terminal(&e.to_string()).into_owned())
        })?;
    }
    let stop = super::signals::interrupt_flag();
    let opts = WatchOptions {
        roots: sel.roots,
        interval: a.interval,
        idle_timeout: a.idle_timeout,
        once: a.once,
        metadata_bound: a.metadata_bound,
        daemon_url: a
            .daemon
            .daemon_url
            .clone()
            .or_else(|| std::env::var(crate::rpc::DAEMON_URL_ENV).ok())
            .filter(|u| !u.is_empty()),
        csrf_token: a.daemon.csrf_token.clone().filter(|t| !t.is_empty()),
        client: a.daemon.client_options(Some(stop.clone())),
        bracket_retries: a.daemon.bracket_retries,
        protected: a.decode.inputs(),
        max_polls: a.max_polls,
        state_dir,
    };
    let roots: Vec<String> = opts
        .roots
        .iter()
        .map(|r| format!("{} ({})", r.path.display(), r.surface.as_str()))
        .collect();
    crate::note!(
        "watch: watching {}{}",
        roots.join(", "),
        if a.once {
            "; one pass".to_string()
        } else {
            format!(
                " every {}; metadata reused for at most {}",
                duration_text(a.interval),
                duration_text(a.metadata_bound)
            )
        }
    );
    let summary = match a.max_polls {
        Some(last) => watch(&schema, &key, &opts, stop, &MemorySink { last }),
        None => watch(&schema, &key, &opts, stop, &NoWatchSink),
    };
    let polls = summary.polls;
    Ok(match summary.ended {
        Ended::Once => {
            let left = summary.last.pending + summary.last.foreign;
            if left > 0 {
                crate::note!("watch: {left} conversation(s) left without evidence");
                crate::verdict::exit::ERROR
            } else {
                0
            }
        }
        Ended::Idle => {
            crate::note!(
                "watch: idle for {}: exiting after {polls} polls",
                duration_text(a.idle_timeout.unwrap_or_default())
            );
            0
        }
        Ended::Stopped => {
            let by = if super::signals::interrupted_exit() == 143 {
                "SIGTERM"
            } else {
                "SIGINT"
            };
            crate::note!("watch: stopped by {by} after {polls} polls: drained");
            0
        }
        Ended::MaxPolls => {
            crate::note!("watch: stopped after {polls} polls (--max-polls)");
            0
        }
    })
}
