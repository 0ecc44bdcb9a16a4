//! `agy-audit audit-sweep`: requalify a whole store.

use super::common::{parse_shard, MAX_CONCURRENCY, MAX_JOBS};
use super::common::{DecodeArgs, RootArg};
use super::daemon_args::DaemonArgs;
use super::progress::{progress_mode, sweep};
use super::signals::{interrupt_flag, interrupted_exit};
use crate::pipeline::SweepOptions;
use crate::verdict::exit;
use clap::Args;
use std::path::PathBuf;

const SWEEP_EXIT: &str = "\
Exit codes:
  0    every selected source verified (with or without source-only fields)
  1    an error: a source could not be read, the daemon could not be used
       (sessions recorded as not-fetched; the manifest is complete: false;
       --resume fetches them again), or an output could not be written
  2    usage error
  3    a source was refused as unknown (unsupported representation)
  4    a source is incomplete (mismatch, changed source)
  130  interrupted by Ctrl-C: in-flight fetches are abandoned, the manifest
       records every finished session and is complete: false, --resume
       continues; a second Ctrl-C aborts at once
  143  terminated by SIGTERM: handled exactly like Ctrl-C";

/// Requalify a whole store against the daemon: every conversation verified,
/// verified with source-only fields, unknown or incomplete, in a version-5
/// manifest with per-session raw responses and sidecars.
#[derive(Debug, Args)]
#[command(after_help = SWEEP_EXIT)]
pub struct SweepArgs {
    #[command(flatten)]
    pub root: RootArg,
    /// Output directory; must not exist (unless --resume). Created mode 0700.
    /// Receives manifest.json, sessions.csv, corpus/ (the answers), and at
    /// the end shapes-ordinary.tsv and shapes-full.tsv (the response shape
    /// listings, fingerprints under `shapes` in the manifest; see `agy-audit
    /// shapes`). When an `agy` is on PATH, its `--version` is recorded as
    /// installedAgyVersion (not proof of which daemon answered).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Most conversations in flight at once (1 to 256): fetched, or
    /// fetched and waiting to be compared. Each sends LoadTrajectory, then
    /// its full and ordinary GetCascadeTrajectory together, so up to twice
    /// this many requests are in flight, over one connection pool; no
    /// thread waits on a conversation.
    #[arg(long, default_value_t = 8, allow_negative_numbers = true, value_parser = concurrency_value)]
    pub concurrency: usize,
    /// Decode threads, and as many threads that compare and attest the
    /// answers (1 to 256; default: the number of CPUs).
    #[arg(long, allow_negative_numbers = true, value_parser = jobs_value)]
    pub jobs: Option<usize>,
    /// Continue an interrupted sweep in --out (same --root and --shard; the
    /// daemon may have restarted on another port: each session records the
    /// endpoint it was fetched from). Sessions not fetched are tried again.
    #[arg(long)]
    pub resume: bool,
    /// Only the i-th of n shards (1-based), e.g. 2/4: the conversations
    /// whose file id hashes to it (first 8 bytes of SHA-256(fileId) as a
    /// big-endian integer, mod n, plus 1), so adding or removing a
    /// conversation moves no other one. `auto` reads the shard from the job
    /// runner: a Kubernetes Indexed Job's JOB_COMPLETION_INDEX (0-based; n
    /// from --shard-count) or GitLab's CI_NODE_INDEX (1-based) and
    /// CI_NODE_TOTAL; missing or contradictory variables are a usage error.
    /// Merge the shards' manifests with `agy-audit manifest merge`.
    #[arg(long, value_name = "i/n|auto", value_parser = parse_shard_arg)]
    pub shard: Option<ShardArg>,
    /// The number of shards, with --shard auto (a Kubernetes Indexed Job's
    /// completions; with GitLab, CI_NODE_TOTAL, which it must equal).
    #[arg(long, value_name = "N", requires = "shard", value_parser = shard_count_value)]
    pub shard_count: Option<usize>,
    /// Only the summary (no progress bars or per-session lines).
    #[arg(long)]
    pub quiet: bool,
    /// Record an empty sweep when the root holds no conversation (without
    /// it, an empty or mistaken root is an error, exit 1: it is not a passing
    /// audit). A --shard may be empty without it.
    #[arg(long)]
    pub allow_empty: bool,
    /// At the end, print the final summary as one JSON object on standard
    /// output (the summary lines still go to standard error): {"manifest",
    /// "out", "root", "endpoint", "complete", "interrupted", "daemonDown",
    /// "pending", "shard", "sessions", "skipped", "profiles", "counts":
    /// {"selected", "verified", "verifiedSourceOnly", "sqlite", "protobuf",
    /// "notVerified", "legacyUnverifiable", "unknown", "incomplete",
    /// "notFetched", "error"} (the manifest's counts), "countsByProfile",
    /// "countsByFormat", "redaction", "resume", "error", "exitCode"} (see
    /// README,
    /// "Machine-readable summaries"). The exit code is the same. Printed
    /// also when the sweep cannot start (the daemon unreachable, the root
    /// empty, a usage error): then "error" is {"kind", "message"} (kind
    /// daemon-unreachable, daemon-unusable, empty-root, usage or error),
    /// "daemonDown" the daemon's error when it is one, and what no manifest
    /// recorded (manifest, sessions, skipped, profiles, pending, counts) is
    /// null; otherwise "error" is null.
    #[arg(long)]
    pub json: bool,
    /// Write the sessions' reasons in manifest.json and sessions.csv as the
    /// audit worded them, for a local look: by default each credential the
    /// ruleset finds in a reason (after its location) is replaced by
    /// [REDACTED:<rule id>] and counted (manifest `redaction`, the CSV's
    /// `redaction` column). With it the manifest records `"redaction":
    /// {"redacted": false}`, every CSV row's `redaction` cell says NOT
    /// REDACTED, and --json's "redaction" is {"redacted": false, "note"}.
    /// A --resume writes the whole manifest in its own mode: without this
    /// flag an earlier run's raw reasons are redacted too. Answers,
    /// sidecars and digests are evidence and never redacted.
    #[arg(long)]
    pub no_redact: bool,
    #[command(flatten)]
    pub daemon: DaemonArgs,
    #[command(flatten)]
    pub decode: DecodeArgs,
}

fn bounded(s: &str, max: usize) -> Result<usize, String> {
    super::common::whole::<usize>(1, max as u64)(s)
}

/// `--concurrency`: 1 to [`MAX_CONCURRENCY`].
pub fn concurrency_value(s: &str) -> Result<usize, String> {
    bounded(s, MAX_CONCURRENCY)
}

/// `--jobs`: 1 to [`MAX_JOBS`].
pub fn jobs_value(s: &str) -> Result<usize, String> {
    bounded(s, MAX_JOBS)
}

/// `--shard`: a fixed `i/n`, or `auto` (from the job runner's environment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardArg {
    Fixed(usize, usize),
    Auto,
}

/// `--shard i/n` or `--shard auto`.
pub fn parse_shard_arg(s: &str) -> Result<ShardArg, String> {
    if s == "auto" {
        return Ok(ShardArg::Auto);
    }
    parse_shard(s)
        .map(|(i, n)| ShardArg::Fixed(i, n))
        .map_err(|e| format!("{e}, or auto"))
}

/// `--shard-count`: 1 or more.
pub fn shard_count_value(s: &str) -> Result<usize, String> {
    super::common::whole::<usize>(1, u32::MAX as u64)(s)
}

/// The shard a sweep runs: `--shard i/n` as given, `--shard auto` from the
/// environment ([`crate::pipeline::shard::auto_shard`]); `--shard-count`
/// only goes with `auto`.
pub fn resolve_shard(
    shard: Option<ShardArg>,
    count: Option<usize>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<(usize, usize)>, crate::Error> {
    match (shard, count) {
        (None, _) => Ok(None),
        (Some(ShardArg::Fixed(i, n)), None) => Ok(Some((i, n))),
        (Some(ShardArg::Fixed(i, n)), Some(c)) => Err(crate::Error::SweepStart(
            crate::error::SweepStartError::ShardCountWithFixed {
                count: c,
                index: i,
                of: n,
            },
        )),
        (Some(ShardArg::Auto), c) => crate::pipeline::shard::auto_shard(env, c)
            .map(Some)
            .map_err(|e| crate::Error::SweepStart(e.into())),
    }
}

/// The one root a sweep covers (its manifest names one root): `--root`, or
/// the root `$ANTIGRAVITY_CLI_ROOT` pins. Without either, a usage error that
/// names the default roots that exist and asks for one (issue 34: "without
/// `--root`, says which roots exist and asks for one"), even when only one
/// exists: a sweep is a record of one root, chosen by the user, never a
/// guess; no default root existing (or HOME unset) is the roots' own usage
/// error.
fn one_root(arg: &super::common::RootArg) -> anyhow::Result<std::path::PathBuf> {
    let pinned = std::env::var_os(crate::discover::ROOT_ENV).is_some_and(|r| !r.is_empty());
    if arg.root.is_some() || pinned {
        return arg.try_get();
    }
    let sel = crate::roots::select(&[])?;
    let list: Vec<String> = sel
        .roots
        .iter()
        .map(|r| format!("{} ({})", r.path.display(), r.surface.as_str()))
        .collect();
    Err(super::errors::Usage::Text(format!(
        "audit-sweep sweeps one root per run (its manifest names it) and takes it from --root; {} {}: pass --root DIR",
        if list.len() == 1 { "this root exists:" } else { "these exist:" },
        list.join(", ")
    ))
    .into())
}

/// What a sweep had settled when it stopped before its summary: the
/// members of `--json`'s object it can still fill.
#[derive(Debug, Default)]
struct Settled {
    /// `--no-redact` (the `redaction` member says the mode asked for).
    no_redact: bool,
    shard: Option<(usize, usize)>,
    root: Option<PathBuf>,
    endpoint: Option<String>,
}

pub fn run(a: SweepArgs) -> anyhow::Result<i32> {
    let (json, out) = (a.json, a.out.clone());
    let mut settled = Settled {
        no_redact: a.no_redact,
        ..Settled::default()
    };
    let result = run_sweep(a, &mut settled);
    // `--json` prints its object however the run ends: a sweep that could
    // not start (an unreachable daemon, an empty root, a usage error) says
    // so in it, with the exit code the command ends with.
    if let (true, Err(e)) = (json, &result) {
        let doc = failed_summary_json(&out, &settled, e);
        outln!("{}", serde_json::to_string_pretty(&doc)?);
    }
    result
}

fn run_sweep(a: SweepArgs, settled: &mut Settled) -> anyhow::Result<i32> {
    let shard = resolve_shard(a.shard, a.shard_count, |k| std::env::var(k).ok())?;
    settled.shard = shard;
    let (schema, key) = a.decode.load()?;
    let root = one_root(&a.root)?;
    // As the manifest names it (`discover::store_root`), when it can.
    settled.root = Some(crate::discover::store_root(&root).unwrap_or_else(|_| root.clone()));
    let surface = crate::roots::detect_surface(&root);
    let stop = interrupt_flag();
    let (found, client) = a.daemon.for_root(&root, surface, Some(stop.clone()))?;
    let endpoint = found.url;
    settled.endpoint = Some(endpoint.clone());
    let opts = SweepOptions {
        root: root.clone(),
        out: a.out.clone(),
        endpoint,
        client,
        concurrency: a.concurrency,
        jobs: a.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
                .min(MAX_JOBS)
        }),
        resume: a.resume,
        shard,
        bracket_retries: a.daemon.bracket_retries,
        allow_empty: a.allow_empty,
        installed_agy_version: super::common::installed_agy_version(),
        redaction: crate::redact::Mode::from_no_redact(a.no_redact),
    };
    let summary = sweep(&schema, &key, &opts, stop, progress_mode(a.quiet))?;
    let code = summary_exit(&summary);
    if a.json {
        let doc = summary_json(&summary, shard, code);
        outln!("{}", serde_json::to_string_pretty(&doc)?);
    }
    let m = &summary.manifest;
    let c = &m.counts;
    crate::note!(
        "audit-sweep: {} skipped={} complete={} wall={:.2}s manifest={}",
        c.summary(),
        m.skipped.len(),
        m.complete,
        m.timing.wall_seconds,
        summary.out.join(crate::manifest::MANIFEST_FILE).display()
    );
    if c.selected == 0 {
        if let Some((i, n)) = shard {
            crate::note!("audit-sweep: shard {i}/{n} selected no conversation; its manifest records that, and it is judged when the shards are merged");
        } else {
            crate::note!("audit-sweep: the root selected no conversation (--allow-empty): the manifest records an empty sweep");
        }
    }
    if let Some(why) = &summary.daemon_down {
        crate::note!("audit-sweep: the daemon could not be used: {why}");
    }
    if a.no_redact {
        crate::note!(
            "audit-sweep: {} (manifest.json, sessions.csv)",
            crate::redact::NOT_REDACTED
        );
    }
    if let Some(cmd) = resume_command(&summary, shard) {
        crate::note!(
            "audit-sweep: {} session{} still without a verdict; continue with: {cmd}",
            summary.pending,
            if summary.pending == 1 { "" } else { "s" },
        );
    }
    Ok(code)
}

/// The command that continues an unfinished sweep; None when the manifest
/// is complete.
fn resume_command(
    summary: &crate::pipeline::SweepSummary,
    shard: Option<(usize, usize)>,
) -> Option<String> {
    if summary.manifest.complete {
        return None;
    }
    let shard = shard
        .map(|(i, n)| format!(" --shard {i}/{n}"))
        .unwrap_or_default();
    Some(format!(
        "agy-audit audit-sweep --root {} --out {}{shard} --resume",
        summary.manifest.root,
        summary.out.display()
    ))
}

/// The exit code a finished (or interrupted) sweep ends with.
fn summary_exit(summary: &crate::pipeline::SweepSummary) -> i32 {
    let c = &summary.manifest.counts;
    if summary.interrupted {
        interrupted_exit()
    } else if summary.daemon_down.is_some() || summary.stopped || c.error > 0 || c.not_fetched > 0 {
        exit::ERROR
    } else if c.incomplete > 0 {
        exit::INCOMPLETE
    } else if c.unknown > 0 {
        exit::UNKNOWN
    } else {
        exit::OK
    }
}

/// `audit-sweep --json`: the final summary as one object (its shape is
/// documented on `--json` and in README). Only what the run decided: the
/// timings stay in the manifest, so that the same sweep prints the same
/// object. `complete` is the manifest's own flag, never inferred.
pub fn summary_json(
    summary: &crate::pipeline::SweepSummary,
    shard: Option<(usize, usize)>,
    code: i32,
) -> serde_json::Value {
    let m = &summary.manifest;
    serde_json::json!({
        "manifest": summary.out.join(crate::manifest::MANIFEST_FILE).display().to_string(),
        "out": summary.out.display().to_string(),
        "root": m.root,
        "endpoint": m.endpoint,
        "complete": m.complete,
        "interrupted": summary.interrupted,
        "daemonDown": summary.daemon_down,
        "pending": summary.pending,
        "shard": shard.map(|(i, n)| format!("{i}/{n}")),
        "sessions": m.sessions.len(),
        "skipped": m.skipped.len(),
        "profiles": m.profiles,
        "counts": m.counts,
        "countsByProfile": m.counts_by_profile,
        "countsByFormat": m.counts_by_format,
        "redaction": m.redaction_summary(),
        "resume": resume_command(summary, shard),
        "error": null,
        "exitCode": code,
    })
}

/// Why a sweep stopped before its summary, as `audit-sweep --json` names
/// it (`error.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartFailure {
    /// Nothing accepts connections at the daemon's URL (checked once,
    /// before any work): `daemon-unreachable`.
    DaemonUnreachable,
    /// The daemon could not be used otherwise: `daemon-unusable`.
    DaemonUnusable,
    /// The root selected no conversation (without --allow-empty):
    /// `empty-root`.
    EmptyRoot,
    /// A usage error (exit 2): `usage`.
    Usage,
    /// Anything else (an unreadable input, an output not written): `error`.
    Error,
}

impl StartFailure {
    /// The public id (`error.kind`).
    pub fn id(self) -> &'static str {
        match self {
            StartFailure::DaemonUnreachable => "daemon-unreachable",
            StartFailure::DaemonUnusable => "daemon-unusable",
            StartFailure::EmptyRoot => "empty-root",
            StartFailure::Usage => "usage",
            StartFailure::Error => "error",
        }
    }

    /// The failure an error of the run is, from its typed causes.
    pub fn of(e: &anyhow::Error) -> StartFailure {
        use crate::rpc::error::RpcError;
        let daemon = |r: &RpcError| match r {
            RpcError::Unreachable { .. } => StartFailure::DaemonUnreachable,
            _ => StartFailure::DaemonUnusable,
        };
        for c in e.chain() {
            match c.downcast_ref::<crate::Error>() {
                Some(crate::Error::Daemon(r)) => return daemon(r),
                Some(crate::Error::EmptySelection { .. }) => return StartFailure::EmptyRoot,
                _ => {}
            }
            if let Some(r) = c.downcast_ref::<RpcError>() {
                return daemon(r);
            }
        }
        if super::errors::usage(e) {
            StartFailure::Usage
        } else {
            StartFailure::Error
        }
    }

    /// The exit code the command ends with (`cli::main`'s mapping).
    pub fn exit_code(self) -> i32 {
        match self {
            StartFailure::Usage => exit::USAGE,
            _ => exit::ERROR,
        }
    }

    fn daemon(self) -> bool {
        matches!(
            self,
            StartFailure::DaemonUnreachable | StartFailure::DaemonUnusable
        )
    }
}

/// `audit-sweep --json` of a sweep that stopped before its summary (the
/// daemon unreachable, the root empty, a usage error): the members of
/// [`summary_json`], each one the run did not decide `null` (no manifest
/// was written, so `manifest`, `sessions`, `skipped`, `profiles`,
/// `pending` and the counts are `null`; `complete` and `interrupted` are
/// `false`), `daemonDown` the daemon's error when it is one, `error`
/// `{"kind", "message"}` ([`StartFailure`]), and `exitCode` the code the
/// command ends with.
fn failed_summary_json(out: &std::path::Path, s: &Settled, e: &anyhow::Error) -> serde_json::Value {
    let failure = StartFailure::of(e);
    let message = super::errors::chain_text(e);
    serde_json::json!({
        "manifest": null,
        "out": out.display().to_string(),
        "root": s.root.as_ref().map(|r| r.display().to_string()),
        "endpoint": s.endpoint,
        "complete": false,
        "interrupted": false,
        "daemonDown": failure.daemon().then_some(&message),
        "pending": null,
        "shard": s.shard.map(|(i, n)| format!("{i}/{n}")),
        "sessions": null,
        "skipped": null,
        "profiles": null,
        "counts": null,
        "countsByProfile": null,
        "countsByFormat": null,
        "redaction": crate::report::redacted::json_member(
            crate::redact::Mode::from_no_redact(s.no_redact),
            &crate::redact::Redactions::default(),
        ),
        "resume": null,
        "error": {"kind": failure.id(), "message": message},
        "exitCode": failure.exit_code(),
    })
}
