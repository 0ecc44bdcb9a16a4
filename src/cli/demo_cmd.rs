//! `agy-audit demo`: the main job on the embedded default. Generates the
//! default synthetic corpus, serves it with the simulated daemon on 127.0.0.1,
//! runs the attesting sweep against it, writes the qualification report, and
//! checks every verdict against the generator's ground truth.
//!
//! Without `--out` it works in a folder it creates under the temp dir and
//! removes that folder after a passing run (unless `--keep`); a run that
//! fails or is interrupted keeps it, as evidence, and says where. Ctrl-C and
//! SIGTERM are handled from the start: during generation the demo stops at
//! once and says what it generated, during the sweep the sweep drains.
//! Then release day: the store's next release is generated, swept, checked
//! against its own truth and compared with the first sweep (audit-diff's
//! report, shapes section included, as `release-diff.md`).

use super::common::MAX_CONCURRENCY;
use super::common::{fraction, seed, whole, MAX_LATENCY_MS};
use super::progress::sweep;
use crate::manifest::Manifest;
use crate::pipeline::{SweepOptions, SweepSummary};
use crate::report::{render_report, verdict_chart};
use crate::rpc::ClientOptions;
use crate::schema::Schema;
use crate::source::legacy::LegacyKey;
use crate::util::atomic::{write_file, WriteOptions};
use crate::util::count;
use crate::verdict::{exit, Outcome, ReasonClass, VerdictKind};
use agy_corpus::corpus::{generate_release, GenerateOptions, PlanOptions, Release, Summary};
use agy_corpus::sim::{DaemonSim, FaultSpec, JsonStyle, SimOptions};
use anyhow::{bail, Context};
use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const DEMO_EXIT: &str = "\
Exit codes:
  0    the sweep completed and every verdict agrees with the ground truth
       (the corpus's deliberate refusals included)
  1    an error, or the sweep did not complete: sessions not fetched (with
       --fault-rate the simulated daemon fails some on purpose, so the
       manifest is complete: false even when every verdict agrees; the
       summary says how many and how to fetch them)
  2    usage error
  4    a verdict disagrees with the ground truth (the first ones are listed)
  130  interrupted by Ctrl-C (SIGINT): during generation the demo stops at
       once and says what it generated; during the sweep in-flight fetches
       are abandoned and the manifest is complete: false; a second Ctrl-C
       aborts at once
  143  terminated by SIGTERM: handled exactly like Ctrl-C

Release day (unless --no-release-day): after a passing sweep the demo
generates the store's next release (corpus generate --next-release), serves
and sweeps it into sweep-next/, checks its verdicts against its own ground
truth (a disagreement exits 4), and prints and writes release-diff.md, the
audit-diff report of the two sweeps with the response shape entries the
next release added. Its regressions (conversations that gained a refused
step shape, one that disappeared) are the finding, not a failure.

Without --out, everything goes to a fresh folder under the system temp dir
($TMPDIR), removed after a passing run (exit 0) unless --keep; a run that
fails or is interrupted keeps it and says where. An --out folder is always
kept.";

/// Generate the default synthetic corpus, start the simulated daemon, run the
/// audit sweep against it, write the report, and compare every verdict with
/// the ground truth.
#[derive(Debug, Args)]
#[command(after_help = DEMO_EXIT)]
pub struct DemoArgs {
    /// Where to put the store, the sweep and the report; must not exist, and
    /// is kept. Default: a fresh folder under the system temp dir, removed
    /// after a passing run unless --keep.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Keep the temporary folder (the stores, sweeps and reports, about 1.9
    /// GB for the default corpus with release day) after a passing run, and say where. Without
    /// --out it is otherwise removed; a failing or interrupted run always
    /// keeps it.
    #[arg(long)]
    pub keep: bool,
    /// Conversations to generate (1 to 100000).
    #[arg(long, default_value_t = 405, allow_negative_numbers = true, value_parser = super::common::conversations_value)]
    pub conversations: usize,
    /// Seed of the corpus and of the simulated daemon (a whole number, 0 or more).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = seed())]
    pub seed: u64,
    /// Fraction of conversations with a planned daemon fault (0 to 1). A
    /// fault that fails the fetch (HTTP 5xx, reset, hang, ...) leaves its
    /// session not fetched, so the run exits 1.
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true, value_parser = fraction(1.0))]
    pub fault_rate: f64,
    /// Simulated daemon latency per request, in milliseconds (0 to 1000).
    #[arg(long, value_name = "MS", default_value_t = 0, allow_negative_numbers = true, value_parser = whole::<u64>(0, MAX_LATENCY_MS))]
    pub latency_ms: u64,
    /// Most conversations fetched at once (1 to 256). Each sends
    /// LoadTrajectory, then its full and ordinary GetCascadeTrajectory
    /// together, so up to twice this many requests are in flight.
    #[arg(long, default_value_t = 8, allow_negative_numbers = true, value_parser = whole::<usize>(1, MAX_CONCURRENCY as u64))]
    pub concurrency: usize,
    /// How the simulated daemon spells its answers (see `daemon-sim
    /// --json-style`): canonical, nine-digit-times, proto-names,
    /// enum-numbers, int64-numbers, spaced or mixed. Verdicts must not change.
    #[arg(long, value_name = "STYLE", default_value_t = JsonStyle::Canonical)]
    pub json_style: JsonStyle,
    /// Skip release day (by default, after a passing sweep, the demo
    /// generates the store's next release, sweeps it, checks it against its
    /// ground truth and writes the audit-diff report, release-diff.md).
    #[arg(long)]
    pub no_release_day: bool,
    /// Only the summary.
    #[arg(long)]
    pub quiet: bool,
}

/// A fresh folder under the system temp dir, created by this run (mode
/// 0700, a random name): the only folder the demo ever removes.
fn fresh_temp_dir() -> anyhow::Result<PathBuf> {
    let dir = tempfile::Builder::new()
        .prefix("agy-audit-demo-")
        .tempdir()
        .with_context(|| {
            format!(
                "creating a folder under the temp dir {}",
                std::env::temp_dir().display()
            )
        })?;
    Ok(dir.keep())
}

/// Verdicts that agree with `.truth/expected.jsonl` (verdict and reason class),
/// and how many sessions were verified although the truth says otherwise.
/// The truth's public ids are parsed with the reader's own parsers
/// (`Outcome::from_id`, `ReasonClass::from_id`); an id the reader does not
/// know is an error, never a silent disagreement.
pub fn agreement(m: &Manifest, store: &Path) -> anyhow::Result<(usize, usize, Vec<String>)> {
    let path = store.join(".truth").join("expected.jsonl");
    let bytes = crate::util::bounded::read_regular(&path, crate::util::bounded::InputKind::Record)?;
    let text =
        String::from_utf8(bytes).with_context(|| format!("{}: not UTF-8", path.display()))?;
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
        let got = (s.outcome(), s.class());
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

/// Where the demo works, and whether it created the folder this run.
struct Workspace {
    out: PathBuf,
    /// Created by this run under the temp dir (no --out): removed after a
    /// passing run unless --keep.
    temporary: bool,
}

pub fn run(a: DemoArgs) -> anyhow::Result<i32> {
    let ws = match &a.out {
        Some(out) => {
            if std::fs::symlink_metadata(out).is_ok() {
                bail!(crate::Error::SweepStart(
                    crate::error::SweepStartError::OutExists { out: out.clone() }
                ));
            }
            std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
            Workspace {
                out: out.clone(),
                temporary: false,
            }
        }
        None => Workspace {
            out: fresh_temp_dir()?,
            temporary: true,
        },
    };
    // Ctrl-C and SIGTERM are handled from here on, generation included.
    let stop = super::signals::interrupt_flag();
    match demo(&a, &ws, &stop) {
        Ok(code) => Ok(code),
        Err(e) => {
            crate::note!(
                "demo: the run failed; everything it wrote is kept in {}",
                ws.out.display()
            );
            Err(e)
        }
    }
}

/// `Ctrl-C` or `SIGTERM`, from the exit code of the interrupted run.
fn signal_name(code: i32) -> &'static str {
    if code == 143 {
        "SIGTERM"
    } else {
        "Ctrl-C"
    }
}

/// Generates the corpus on a worker thread while watching `stop`: `None`
/// when a signal came first (the worker is left to the process's exit).
fn generate_watched(
    store: &Path,
    plan: &PlanOptions,
    which: Release,
    stop: &AtomicBool,
) -> anyhow::Result<Option<Summary>> {
    let opts = GenerateOptions {
        out: store.to_path_buf(),
        plan: plan.clone(),
        force: false,
    };
    let worker = std::thread::Builder::new()
        .name("demo-generate".into())
        .spawn(move || generate_release(&opts, which))
        .context("starting the corpus generation")?;
    loop {
        if stop.load(Ordering::SeqCst) {
            return Ok(None);
        }
        if worker.is_finished() {
            return match worker.join() {
                Ok(r) => Ok(Some(r?)),
                Err(_) => bail!("the corpus generation stopped unexpectedly (its thread panicked)"),
            };
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Conversations with a source written under `store/conversations` so far.
fn conversations_written(store: &Path) -> usize {
    let Ok(dir) = std::fs::read_dir(store.join("conversations")) else {
        return 0;
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| {
            let p = e.path();
            let ext = p.extension()?.to_str()?;
            matches!(ext, "db" | "pb").then(|| p.file_stem().map(|s| s.to_os_string()))?
        })
        .collect::<std::collections::HashSet<_>>()
        .len()
}

fn demo(a: &DemoArgs, ws: &Workspace, stop: &std::sync::Arc<AtomicBool>) -> anyhow::Result<i32> {
    let out = &ws.out;
    let store = out.join("store");
    let plan = PlanOptions {
        conversations: a.conversations,
        seed: a.seed,
        fault_rate: a.fault_rate,
        ..PlanOptions::default()
    };
    let generated = match generate_store(a, out, &store, &plan, stop)? {
        Ok(generated) => generated,
        Err(interrupted) => return Ok(interrupted),
    };
    let mut faults = Vec::new();
    if a.latency_ms > 0 {
        faults.push(FaultSpec::parse(&format!(
            "rate=1:latency:{}",
            a.latency_ms
        ))?);
    }
    let sweep_dir = out.join("sweep");
    let summary = sweep_served(a, &store, &sweep_dir, faults, stop, |url| {
        crate::note!("demo: simulated daemon on {url}");
    })?;
    let m = &summary.manifest;
    let wo = WriteOptions::default();
    write_file(&out.join(CHART), verdict_chart(m).as_bytes(), &wo)?;
    write_file(
        &out.join(REPORT),
        render_report(m, Some(CHART)).as_bytes(),
        &wo,
    )?;
    let truth = agreement(m, &store)?;
    let mut code = if summary.interrupted {
        super::signals::interrupted_exit()
    } else {
        verdicts_code(m, &truth.2)
    };
    // Release day: the store's next release, swept and compared with this one.
    let mut day = None;
    if code == exit::OK && !a.no_release_day {
        let d = release_day(a, out, stop, &plan, &sweep_dir, m)?;
        code = d.code;
        day = Some(d);
    }
    // A passing run's temporary folder goes before anything is printed, so
    // a closed standard output cannot leave it behind.
    let size = human_bytes(folder_bytes(out));
    let removed = (ws.temporary && !a.keep && code == exit::OK).then(|| remove_workspace(out));
    let run = Run {
        store: &store,
        sweep_dir: &sweep_dir,
        summary: &summary,
        generated: generated.conversations as u64,
        truth: &truth,
        code,
    };
    print_outcome(a, &run, day.as_ref());
    match removed {
        Some(Ok(())) => {
            outln!(
                "demo: removed {} ({size}: the store, sweep and report of this passing run); pass --keep, or --out DIR, to keep them",
                out.display()
            );
            return Ok(code);
        }
        Some(Err(e)) => crate::note!(
            "demo: could not remove {} ({size}): {}",
            out.display(),
            super::errors::chain_text(&e)
        ),
        None => {}
    }
    print_workspace(a, ws, &run, &size, day.is_some());
    Ok(code)
}

/// The demo's report and its chart, under the demo's folder.
const REPORT: &str = "report.md";
const CHART: &str = "report.svg";

/// Generates the default corpus into `store`; when a signal came first,
/// says so (with what was written) and gives the run's exit code.
fn generate_store(
    a: &DemoArgs,
    out: &Path,
    store: &Path,
    plan: &PlanOptions,
    stop: &AtomicBool,
) -> anyhow::Result<Result<Summary, i32>> {
    let Some(generated) = generate_watched(store, plan, Release::Current, stop)? else {
        let code = super::signals::interrupted_exit();
        outln!(
            "demo: interrupted ({}) while generating the corpus: {} holds a partial corpus ({} of {} written, {}); everything is kept in {}",
            signal_name(code),
            store.display(),
            conversations_written(store),
            count(a.conversations as u64, "conversation"),
            human_bytes(folder_bytes(store)),
            out.display()
        );
        return Ok(Err(code));
    };
    crate::note!(
        "demo: generated {} ({} sqlite, {} legacy, {}) in {}",
        count(generated.conversations as u64, "conversation"),
        generated.sqlite,
        generated.protobuf,
        count(generated.steps as u64, "step"),
        store.display()
    );
    Ok(Ok(generated))
}

/// Serves `store` with the simulated daemon (with `faults`; `started`
/// told its URL) and sweeps it into `sweep_dir`; the daemon is stopped
/// before the sweep's result is looked at.
fn sweep_served(
    a: &DemoArgs,
    store: &Path,
    sweep_dir: &Path,
    faults: Vec<FaultSpec>,
    stop: &std::sync::Arc<AtomicBool>,
    started: impl FnOnce(&str),
) -> anyhow::Result<SweepSummary> {
    let sim = demo_sim(store, faults, a.seed, a.json_style)?;
    started(&sim.url());
    let schema = Schema::modeled()?;
    let key = LegacyKey::default();
    let opts = demo_sweep_options(a, store, sweep_dir, sim.url(), stop);
    let result = sweep(
        &schema,
        &key,
        &opts,
        stop.clone(),
        super::progress::progress_mode(a.quiet),
    );
    sim.stop();
    Ok(result?)
}

/// A finished sweep's exit code by its verdicts: 1 when the manifest is
/// not complete, 4 when a verdict disagrees with the truth, else 0.
fn verdicts_code(m: &Manifest, off: &[String]) -> i32 {
    if !m.complete {
        exit::ERROR
    } else if off.is_empty() {
        exit::OK
    } else {
        exit::INCOMPLETE
    }
}

/// The first sweep of a demo run, as its summary tells it.
struct Run<'a> {
    store: &'a Path,
    sweep_dir: &'a Path,
    summary: &'a SweepSummary,
    /// Conversations generated.
    generated: u64,
    /// [`agreement`]: agreeing, falsely verified, the disagreements.
    truth: &'a (usize, usize, Vec<String>),
    code: i32,
}

/// The summary: counts, agreement with the truth, release day's lines,
/// and what to do about an interrupted or incomplete sweep.
fn print_outcome(a: &DemoArgs, run: &Run, day: Option<&ReleaseDay>) {
    let (summary, m) = (run.summary, &run.summary.manifest);
    let c = &m.counts;
    let (agree, false_verified, off) = run.truth;
    let sessions = if summary.interrupted {
        format!(
            "{} of {} recorded",
            c.selected,
            count(run.generated, "session")
        )
    } else {
        count(c.selected, "session")
    };
    outln!(
        "demo: {sessions}: verified={} verifiedSourceOnly={} unknown={} incomplete={} notFetched={} error={} in {:.2}s (concurrency {})",
        c.verified, c.verified_source_only, c.unknown, c.incomplete, c.not_fetched, c.error, m.timing.wall_seconds, a.concurrency
    );
    outln!("demo: verdicts agreeing with the ground truth: {agree}/{} (false verified: {false_verified})", m.sessions.len());
    for o in off.iter().take(10) {
        outln!("demo:   disagreement {o}");
    }
    for l in day.iter().flat_map(|d| &d.lines) {
        outln!("{l}");
    }
    let resume = format!(
        "agy-audit audit-sweep --resume --out {} --root {} --daemon-url URL",
        run.sweep_dir.display(),
        run.store.display()
    );
    if summary.interrupted {
        outln!(
            "demo: interrupted ({}) during the sweep: {} not reached; the manifest is complete: false",
            signal_name(run.code),
            count(summary.pending, "session")
        );
        outln!(
            "demo: to finish it, serve the store (agy-audit daemon-sim --store {}) and run: {resume} (URL: the one daemon-sim prints); or rerun demo",
            run.store.display()
        );
    } else if !m.complete {
        print_incomplete(a, run, &resume);
    }
}

/// Why a sweep that was not interrupted is not complete, and how to
/// finish it.
fn print_incomplete(a: &DemoArgs, run: &Run, resume: &str) {
    let (summary, m) = (run.summary, &run.summary.manifest);
    let c = &m.counts;
    let (agree, _, off) = run.truth;
    if let Some(why) = &summary.daemon_down {
        outln!("demo: the simulated daemon stopped answering: {why}");
    }
    if c.not_fetched > 0 {
        let planned = if a.fault_rate > 0.0 {
            " (--fault-rate plans such failures)"
        } else {
            ""
        };
        outln!(
            "demo: {} not fetched: the simulated daemon failed {}{planned}, so the manifest is complete: false and the run exits 1{}",
            count(c.not_fetched, "session"),
            if c.not_fetched == 1 { "it" } else { "them" },
            if off.is_empty() {
                format!(", although all {agree} verdicts agree")
            } else {
                String::new()
            }
        );
        outln!(
            "demo: to fetch them, serve the store without its planned faults (agy-audit daemon-sim --store {} --no-fault-file) and run: {resume} (URL: the one daemon-sim prints); or rerun demo without --fault-rate",
            run.store.display()
        );
    }
    if c.error > 0 {
        outln!(
            "demo: {} could not be read (error; each is named in {} and sessions.csv), so the manifest is complete: false and the run exits 1",
            count(c.error, "session"),
            run.sweep_dir.join(crate::manifest::MANIFEST_FILE).display()
        );
    }
}

/// Where everything the run wrote is, and why it was kept.
fn print_workspace(a: &DemoArgs, ws: &Workspace, run: &Run, size: &str, release_day: bool) {
    let out = &ws.out;
    let why = match (ws.temporary, run.code) {
        (false, _) => String::new(),
        (true, exit::OK) if a.keep => " (kept: --keep)".to_string(),
        (true, exit::OK) => " (kept: it could not be removed)".to_string(),
        (true, _) if run.summary.interrupted => " (kept: interrupted)".to_string(),
        (true, _) => " (kept: the run did not pass)".to_string(),
    };
    outln!(
        "demo: wrote everything under {}{why} ({size}):",
        out.display()
    );
    outln!(
        "demo:   store    {} ({}, {})",
        run.store.display(),
        count(run.generated, "conversation"),
        human_bytes(folder_bytes(run.store))
    );
    outln!(
        "demo:   sweep    {} (manifest.json, sessions.csv, corpus/ with {} raw responses and sidecars; {})",
        run.sweep_dir.display(),
        std::fs::read_dir(run.sweep_dir.join("corpus"))
            .map(|d| d.count())
            .unwrap_or(0),
        human_bytes(folder_bytes(run.sweep_dir))
    );
    outln!(
        "demo:   report   {} and {}",
        out.join(REPORT).display(),
        out.join(CHART).display()
    );
    outln!(
        "demo:   manifest {}",
        run.sweep_dir.join(crate::manifest::MANIFEST_FILE).display()
    );
    if release_day {
        outln!(
            "demo:   release  {} (next release), {} (its sweep), {} (audit-diff)",
            out.join(NEXT_STORE).display(),
            out.join(NEXT_SWEEP).display(),
            out.join(RELEASE_DIFF).display()
        );
    }
}

/// Where release day writes, under the demo's folder.
const NEXT_STORE: &str = "store-next";
const NEXT_SWEEP: &str = "sweep-next";
const RELEASE_DIFF: &str = "release-diff.md";

/// What release day found: the lines to print and the run's exit code.
struct ReleaseDay {
    lines: Vec<String>,
    code: i32,
}

/// The sweep options the demo uses for `store` into `out`.
fn demo_sweep_options(
    a: &DemoArgs,
    store: &Path,
    out: &Path,
    endpoint: String,
    stop: &std::sync::Arc<AtomicBool>,
) -> SweepOptions {
    SweepOptions {
        root: store.to_path_buf(),
        out: out.to_path_buf(),
        endpoint,
        client: ClientOptions {
            timeout: Duration::from_secs(10),
            cancel: Some(stop.clone()),
            ..ClientOptions::default()
        },
        concurrency: a.concurrency,
        jobs: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .min(super::common::MAX_JOBS),
        resume: false,
        shard: None,
        bracket_retries: 0,
        allow_empty: false,
        installed_agy_version: None,
        redaction: crate::redact::Mode::Redact,
    }
}

/// Generates the store's next release (`corpus generate --next-release`),
/// serves and sweeps it, checks its verdicts against its ground truth, and
/// writes the audit-diff report of the two sweeps (shapes section included).
/// Regressions are what release day is for: they are reported, not a
/// failure; a verdict disagreeing with the next release's truth is.
fn release_day(
    a: &DemoArgs,
    out: &Path,
    stop: &std::sync::Arc<AtomicBool>,
    plan: &PlanOptions,
    old_sweep: &Path,
    old: &Manifest,
) -> anyhow::Result<ReleaseDay> {
    let store = out.join(NEXT_STORE);
    let sweep_dir = out.join(NEXT_SWEEP);
    let interrupted = |what: &str| {
        let code = super::signals::interrupted_exit();
        ReleaseDay {
            lines: vec![format!(
                "demo: interrupted ({}) during release day ({what}); everything is kept in {}",
                signal_name(code),
                out.display()
            )],
            code,
        }
    };
    let generated = generate_watched(&store, plan, Release::Next, stop)?;
    if generated.is_none() {
        return Ok(interrupted("generating the next release"));
    }
    let summary = sweep_served(a, &store, &sweep_dir, Vec::new(), stop, |_| {})?;
    if summary.interrupted {
        return Ok(interrupted("sweeping the next release"));
    }
    let new = summary.manifest;
    let truth = agreement(&new, &store)?;
    let d = write_release_diff(out, old_sweep, old, &sweep_dir, &new)?;
    let lines = release_day_lines(out, &new, &truth, &d);
    let code = verdicts_code(&new, &truth.2);
    Ok(ReleaseDay { lines, code })
}

/// The report audit-diff writes of the two sweeps (shapes section
/// included), redacted as it does, written as `release-diff.md`.
fn write_release_diff(
    out: &Path,
    old_sweep: &Path,
    old: &Manifest,
    new_sweep: &Path,
    new: &Manifest,
) -> anyhow::Result<crate::report::diff::AuditDiff> {
    let mut d = crate::report::diff::diff(old, new);
    let old_file = old_sweep.join(crate::manifest::MANIFEST_FILE);
    let new_file = new_sweep.join(crate::manifest::MANIFEST_FILE);
    d.shapes = Some(crate::report::diff::shapes_section(
        &old_file, old, &new_file, new,
    )?);
    let (old_name, new_name) = (
        old_file.display().to_string(),
        new_file.display().to_string(),
    );
    let report = crate::report::redacted::diff_markdown(
        &mut d,
        &crate::report::diff::Inputs {
            old_name: &old_name,
            new_name: &new_name,
            old,
            new,
            incomplete: &[],
        },
        crate::redact::Mode::from_no_redact(false),
    );
    write_file(
        &out.join(RELEASE_DIFF),
        report.as_bytes(),
        &WriteOptions::default(),
    )?;
    Ok(d)
}

/// What release day says: the next release's counts, its agreement with
/// its truth, the audit-diff counts and shape entries, the RPC-only
/// presentation members, the report written.
fn release_day_lines(
    out: &Path,
    new: &Manifest,
    truth: &(usize, usize, Vec<String>),
    d: &crate::report::diff::AuditDiff,
) -> Vec<String> {
    let (agree, false_verified, off) = truth;
    let c = &new.counts;
    let mut lines = vec![
        format!(
            "demo: release day: the next release of the store: {}: verified={} verifiedSourceOnly={} unknown={} incomplete={} notFetched={} error={}",
            count(c.selected, "session"),
            c.verified, c.verified_source_only, c.unknown, c.incomplete, c.not_fetched, c.error
        ),
        format!(
            "demo: release day: verdicts agreeing with the next release's ground truth: {agree}/{} (false verified: {false_verified})",
            new.sessions.len()
        ),
    ];
    for o in off.iter().take(10) {
        lines.push(format!("demo:   disagreement {o}"));
    }
    let counts: Vec<String> = d
        .counts
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(ch, n)| format!("{}={n}", ch.id()))
        .collect();
    lines.push(format!(
        "demo: release day: audit-diff: {}; regressed={} (verified before, not now)",
        counts.join(" "),
        d.regressed
    ));
    if let Some(crate::report::diff::ShapesSection::Compared { ordinary, full, .. }) = &d.shapes {
        for (label, sd) in [("ordinary", ordinary), ("full", full)] {
            let named: Vec<String> = sd
                .added
                .iter()
                .map(|l| format!("+{}", l.replace('\t', " ")))
                .chain(
                    sd.removed
                        .iter()
                        .map(|l| format!("-{}", l.replace('\t', " "))),
                )
                .take(5)
                .collect();
            // "gone", not "removed": the demo's own word for deleting its folder.
            lines.push(format!(
                "demo: release day: {label} response shapes: {} new entr{}, {} gone{}{}",
                sd.added.len(),
                if sd.added.len() == 1 { "y" } else { "ies" },
                sd.removed.len(),
                if named.is_empty() { "" } else { ": " },
                named.join(", ")
            ));
        }
    }
    let rpc_only = new
        .sessions
        .iter()
        .filter(|s| !s.rpc_only_fields.is_empty())
        .count();
    lines.push(format!(
        "demo: release day: {} verified with RPC-only presentation members kept in the payload (named in the manifest's rpcOnlyFields)",
        count(rpc_only as u64, "session")
    ));
    lines.push(format!(
        "demo: release day: wrote {}",
        out.join(RELEASE_DIFF).display()
    ));
    lines
}

/// Removes the folder this run created under the temp dir: only when it is
/// still a plain folder (never through a link put in its place).
fn remove_workspace(out: &Path) -> anyhow::Result<()> {
    let meta = std::fs::symlink_metadata(out).with_context(|| out.display().to_string())?;
    if !meta.is_dir() {
        bail!("{}: no longer the folder this run created", out.display());
    }
    std::fs::remove_dir_all(out).with_context(|| format!("removing {}", out.display()))
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

/// The simulated daemon the demo sweeps a store against: on a free port,
/// with `faults`, the store's own fault file and cli.log, 512 connections.
fn demo_sim(
    store: &std::path::Path,
    faults: Vec<FaultSpec>,
    seed: u64,
    json_style: JsonStyle,
) -> anyhow::Result<DaemonSim> {
    Ok(DaemonSim::start(SimOptions {
        store: store.to_path_buf(),
        port: 0,
        csrf_token: None,
        faults,
        seed,
        max_connections: 512,
        write_cli_log: true,
        load_fault_file: true,
        hang_limit: Duration::from_secs(60),
        json_style,
        ide_logs: None,
    })?)
}
