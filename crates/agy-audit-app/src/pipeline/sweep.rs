//! `audit-sweep`: requalify a whole store in parallel, in three steps:
//! [`start`] (every check that can refuse the run, before `--out` is
//! touched; then the folder and the manifest to continue), the stages
//! ([`Stages::run`]: feeder → snapshot + decode + project → dispatch and
//! fetch → judge → the one writer, joined by bounded channels) and
//! [`finish`] (the final manifest handed to every sink). What the sweep
//! writes or shows is its sinks' ([`super::sink`]); the folder's layout is
//! [`SweepDir`]'s.

use super::audit::{
    audit_prepared, bracket_fetched, error_result, fetchable, judge_fetched, prepare, AuditContext,
    Fetched, Prepared, SessionResult,
};
use super::error::SweepStartError;
use super::sink::{Finish, Flow, SinkResult};
use crate::discover::{discover, SourceRef};
use crate::error::{CorruptInput, Error, Result};
use crate::manifest::Manifest;
use crate::outcome::SessionOutcome;
use crate::rpc::{ClientOptions, DaemonClient, HeldResponse, RpcError};
use crate::schema::Schema;
use crate::source::legacy::LegacyKey;
use crate::sweep_dir::{SessionFiles, SessionWriter, SweepDir};
use crossbeam_channel::{bounded, Receiver, Sender};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub use super::sink::{NoSink, SweepSink};

/// What to sweep and how.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    pub root: PathBuf,
    pub out: PathBuf,
    pub endpoint: String,
    pub client: ClientOptions,
    pub concurrency: usize,
    pub jobs: usize,
    pub resume: bool,
    /// `(i, n)`, 1-based: keep the sources whose file id is in shard i of n
    /// ([`super::shard::shard_of`]).
    pub shard: Option<(usize, usize)>,
    pub bracket_retries: u32,
    /// A whole-store sweep that selects no conversation records an empty
    /// manifest instead of failing ([`Error::EmptySelection`]).
    pub allow_empty: bool,
    /// What `agy --version` answered on this machine, when agy is on PATH
    /// (recorded as `installedAgyVersion`, with a note that it is not proof
    /// of which daemon answered); each run records its own observation.
    pub installed_agy_version: Option<String>,
    /// How the manifest and `sessions.csv` write the sessions' reasons
    /// (`--no-redact`: as they are, saying so); a `--resume` writes the
    /// whole manifest in its own run's mode ([`crate::manifest::redaction`]).
    pub redaction: crate::redact::Mode,
}

/// The note recorded beside `installedAgyVersion`.
pub const INSTALLED_AGY_NOTE: &str = "agy --version on the sweeping machine's PATH; not proof of which daemon answered (the daemon reports no version)";

/// The outcome of a sweep.
#[derive(Debug, Clone)]
pub struct SweepSummary {
    pub manifest: Manifest,
    pub out: PathBuf,
    pub interrupted: bool,
    /// Set when the daemon became unreachable during the run, or refused
    /// how it is reached (a token, the listener) (why).
    pub daemon_down: Option<String>,
    /// Selected sessions without a verdict yet (not fetched, not reached).
    pub pending: u64,
    /// A sink asked the sweep to stop ([`super::sink::Flow::Stop`]): no new
    /// source was taken after it, and the manifest is `complete: false`.
    pub stopped: bool,
}

/// Runs the sweep into `sinks`, each told every event in the list's order
/// ([`SweepSink`]; the manifest, `sessions.csv` and the shape listings are
/// [`super::outputs::Records`]).
pub fn sweep_to(
    schema: &Schema,
    key: &LegacyKey,
    opts: &SweepOptions,
    stop: Arc<AtomicBool>,
    sinks: &[&dyn SweepSink],
) -> Result<SweepSummary> {
    let started_at = Instant::now();
    let dir = SweepDir::new(&opts.out);
    let Started {
        client,
        mut manifest,
        todo,
        done,
    } = start(schema, key, opts, &dir, sinks)?;
    let jobs = opts.jobs.max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(|source| SweepStartError::DecodeThreads { jobs, source })?;
    let stages = Stages {
        ctx: AuditContext {
            schema,
            key,
            client: Some(&client),
            bracket_retries: opts.bracket_retries,
        },
        client: &client,
        dir: &dir,
        sinks,
        halt: Halt::new(&stop),
        jobs,
        concurrency: opts.concurrency.max(1),
        endpoint: &opts.endpoint,
    };
    let expected = done + todo.len() as u64;
    stages.started(todo.len() as u64, &manifest)?;
    stages.run(&pool, todo, &mut manifest);
    let Stages { halt, .. } = stages;
    finish(
        halt,
        sinks,
        manifest,
        started_at,
        expected,
        opts.out.clone(),
    )
}

/// What [`start`] settled: the daemon's client, the manifest this run
/// continues, the sources to take and how many sessions an earlier run
/// already settled.
struct Started {
    client: DaemonClient,
    manifest: Manifest,
    todo: Vec<SourceRef>,
    done: u64,
}

/// Every check that can refuse the run (root, selection, URL, `--out` or
/// the manifest `--resume` continues, the daemon's probe) runs before
/// `--out` is touched, so a failed start leaves nothing behind to block a
/// rerun or `--resume`; then the folder is made ready and the manifest
/// set for this run (not written: its sink writes it when told
/// `started`).
fn start(
    schema: &Schema,
    key: &LegacyKey,
    opts: &SweepOptions,
    dir: &SweepDir,
    sinks: &[&dyn SweepSink],
) -> Result<Started> {
    let root = crate::discover::store_root(&opts.root)?;
    let discovery = discover(&root)?;
    let skipped: Vec<crate::manifest::Skipped> = discovery
        .ignored
        .iter()
        .map(|(p, why)| crate::manifest::Skipped {
            path: p.display().to_string(),
            reason: (*why).to_string(),
        })
        .collect();
    let mut sources: Vec<SourceRef> = discovery.sources;
    // An empty or mistaken root selects nothing: not a passing audit. A
    // shard may be empty (it is judged when the shards are merged).
    if sources.is_empty() && opts.shard.is_none() && !opts.allow_empty {
        return Err(Error::EmptySelection {
            root: root.clone(),
            hint: "; pass --allow-empty to record an empty sweep",
        });
    }
    // One pool for the whole sweep, sized to the conversations in flight.
    let client = DaemonClient::new(
        &opts.endpoint,
        ClientOptions {
            concurrency: opts.concurrency.max(1),
            // Large answers arrive on disk, in the sweep's own folder.
            spool: Some(dir.corpus()),
            ..opts.client.clone()
        },
    )?;
    let root_text = root.display().to_string();
    let mut manifest = if opts.resume {
        resumed_manifest(opts, dir, &root_text)?
    } else {
        check_new_out(opts, dir)?;
        Manifest::new(&root_text, &opts.endpoint, crate::util::time::now_rfc3339())
    };
    client.probe()?;
    if !opts.resume {
        dir.create()?;
    }
    set_run(&mut manifest, schema, key, opts, skipped);
    for s in &manifest.skipped {
        for sink in sinks {
            sink.skipped(&s.path, &s.reason);
        }
    }
    if opts.resume {
        dir.reopen()?;
    }
    // Sessions with a verdict are kept; not-fetched and unreadable ones are
    // tried again.
    let done: HashSet<String> = manifest
        .sessions
        .iter()
        .filter(|s| s.settled())
        .map(|s| s.file_id.clone())
        .collect();
    if let Some(shard) = opts.shard {
        // By file id, never by listing position: a conversation added or
        // removed moves no other one.
        sources.retain(|s| super::shard::in_shard(&s.id, shard));
        manifest.empty_shard = sources.is_empty();
    }
    let todo: Vec<SourceRef> = sources
        .into_iter()
        .filter(|s| !done.contains(&s.id))
        .collect();
    manifest.complete = false;
    manifest.finished = None;
    Ok(Started {
        client,
        manifest,
        todo,
        done: done.len() as u64,
    })
}

/// A new sweep's `--out`: nothing there yet, in a folder that exists.
fn check_new_out(opts: &SweepOptions, dir: &SweepDir) -> Result<()> {
    match std::fs::symlink_metadata(&opts.out) {
        Ok(m) if m.is_dir() && dir.manifest().is_file() => {
            return Err(SweepStartError::OutHoldsSweep {
                out: opts.out.clone(),
            }
            .into())
        }
        Ok(m) if m.is_dir() => {
            return Err(SweepStartError::OutExists {
                out: opts.out.clone(),
            }
            .into())
        }
        Ok(_) => {
            return Err(SweepStartError::OutIsFile {
                out: opts.out.clone(),
            }
            .into())
        }
        Err(_) => {}
    }
    if let Some(parent) = opts.out.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.is_dir() {
            return Err(SweepStartError::OutParentMissing {
                out: opts.out.clone(),
                parent: parent.to_path_buf(),
            }
            .into());
        }
    }
    Ok(())
}

/// What this run records of itself in the manifest it writes: its shard,
/// the skipped files, the redaction mode, the installed agy, its threads.
fn set_run(
    manifest: &mut Manifest,
    schema: &Schema,
    key: &LegacyKey,
    opts: &SweepOptions,
    skipped: Vec<crate::manifest::Skipped>,
) {
    manifest.shard = opts.shard.map(|(i, n)| format!("{i}/{n}"));
    if opts.shard.is_some() {
        manifest.shard_by = Some(super::shard::SHARD_ASSIGNMENT.to_string());
        let mut profiles = vec![
            crate::profile::sqlite_profile(schema),
            crate::profile::legacy_profile(schema, key),
        ];
        profiles.sort();
        manifest.reader_profiles = profiles;
    }
    manifest.skipped = skipped;
    manifest.set_redaction_mode(opts.redaction);
    manifest.installed_agy_version = opts.installed_agy_version.clone();
    manifest.installed_agy_version_note = opts
        .installed_agy_version
        .as_ref()
        .map(|_| INSTALLED_AGY_NOTE.to_string());
    manifest.timing.concurrency = opts.concurrency;
    manifest.timing.jobs = opts.jobs;
}

/// Why the stages stop taking new sources, and the run's first error.
struct Halt<'a> {
    /// Ctrl-C or SIGTERM.
    stop: &'a AtomicBool,
    /// Set when the daemon stops accepting connections mid-run, or refuses
    /// how it is reached: the sweep then stops as on Ctrl-C, reports it
    /// once, and --resume continues.
    down: Mutex<Option<String>>,
    /// A sink asked to stop, or failed.
    stopped: AtomicBool,
    /// The first error: a session's files not written (the session is not
    /// recorded; the sweep goes on, as it always has) or a sink's.
    error: Mutex<Option<Error>>,
}

impl<'a> Halt<'a> {
    fn new(stop: &'a AtomicBool) -> Halt<'a> {
        Halt {
            stop,
            down: Mutex::new(None),
            stopped: AtomicBool::new(false),
            error: Mutex::new(None),
        }
    }

    /// Whether no new source is to be taken.
    fn halted(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
            || self.stopped.load(Ordering::SeqCst)
            || self.down.lock().map(|d| d.is_some()).unwrap_or(true)
    }

    fn daemon_down(&self, why: impl FnOnce() -> String) {
        if let Ok(mut d) = self.down.lock() {
            d.get_or_insert_with(why);
        }
    }

    fn fail(&self, e: Error) {
        let mut first = self.error.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert(e);
    }

    /// What a sink answered.
    fn sink(&self, r: SinkResult) {
        match r {
            Ok(Flow::Continue) => {}
            Ok(Flow::Stop) => self.stopped.store(true, Ordering::SeqCst),
            Err(e) => {
                self.stopped.store(true, Ordering::SeqCst);
                self.fail(e.into());
            }
        }
    }
}

/// The running sweep's stages, each a method run on its own thread(s).
struct Stages<'a> {
    ctx: AuditContext<'a>,
    client: &'a DaemonClient,
    dir: &'a SweepDir,
    sinks: &'a [&'a dyn SweepSink],
    halt: Halt<'a>,
    jobs: usize,
    concurrency: usize,
    endpoint: &'a str,
}

/// A session on its way to the writer: its result (bodies dropped) and
/// whether its files were committed.
type Written = (SessionResult, Result<()>);

impl Stages<'_> {
    /// Tells every sink the run starts; a sink that fails ends the sweep
    /// at once (no source read yet), with its error.
    fn started(&self, total: u64, manifest: &Manifest) -> Result<()> {
        for s in self.sinks {
            if s.started(total, manifest)? == Flow::Stop {
                self.halt.stopped.store(true, Ordering::SeqCst);
            }
        }
        Ok(())
    }

    /// The stages, joined by bounded channels so that memory is bounded by
    /// in-flight work, not by the store's size; returns when the writer has
    /// recorded the last session into `manifest`.
    fn run(&self, pool: &rayon::ThreadPool, todo: Vec<SourceRef>, manifest: &mut Manifest) {
        let (jobs, concurrency) = (self.jobs, self.concurrency);
        let (tx_src, rx_src) = bounded::<SourceRef>(jobs * 2);
        // Prepared sources wait here for a free slot among those in flight.
        // Decoding runs ahead of the fetches by at most this many (each holds
        // its source's encoding and projection): a longer queue only holds
        // memory, since a dispatcher that finds it empty waits on the
        // decoders, not on the daemon.
        let (tx_prep, rx_prep) = bounded((jobs * 2).min(concurrency * 2));
        // Results travel to the writer with their files already committed
        // (by the stage that made them, so that the fsyncs of many sessions
        // overlap) and their bodies dropped: the writer only records.
        let (tx_res, rx_res) = bounded::<Written>(concurrency * 2);
        // Fetched answers wait here for a judge thread; unbounded, since each
        // holds one of the `concurrency` slots until it is judged: when the
        // daemon is ahead of the CPU, no more is fetched.
        let (tx_judge, rx_judge) = crossbeam_channel::unbounded::<Job>();
        let free = bounded::<()>(concurrency);
        for _ in 0..concurrency {
            let _ = free.0.send(());
        }
        std::thread::scope(|scope| {
            scope.spawn(move || self.feed(todo, tx_src));
            {
                let tx_res = tx_res.clone();
                scope.spawn(move || self.decode(pool, rx_src, tx_prep, tx_res));
            }
            {
                let (rx_prep, tx_judge, free) = (rx_prep.clone(), tx_judge.clone(), &free);
                scope.spawn(move || self.dispatch(rx_prep, tx_judge, free));
            }
            drop(tx_judge);
            for _ in 0..jobs {
                let (rx_judge, tx_res) = (rx_judge.clone(), tx_res.clone());
                scope.spawn(move || self.judge(rx_judge, tx_res));
            }
            drop(tx_res);
            drop(rx_prep);
            drop(rx_judge);
            self.write(rx_res, manifest);
        });
    }

    /// Stage 1: feed the discovered sources, stopping on Ctrl-C.
    fn feed(&self, todo: Vec<SourceRef>, tx_src: Sender<SourceRef>) {
        for s in todo {
            if self.halt.halted() || tx_src.send(s).is_err() {
                break;
            }
        }
    }

    /// Stage 2: snapshot + decode + project on the rayon pool; a source
    /// refused before any fetch is judged (and committed) here.
    fn decode(
        &self,
        pool: &rayon::ThreadPool,
        rx_src: Receiver<SourceRef>,
        tx_prep: Sender<Prepared>,
        tx_res: Sender<Written>,
    ) {
        let ctx = &self.ctx;
        pool.scope(|ps| {
            for _ in 0..self.jobs {
                let (rx_src, tx_prep, tx_res) = (rx_src.clone(), tx_prep.clone(), tx_res.clone());
                ps.spawn(move |_| {
                    for s in rx_src.iter() {
                        let sent = match prepare(ctx, &s.path) {
                            Ok(p) if p.refusal().is_none() => tx_prep.send(p).is_ok(),
                            Ok(p) => tx_res
                                .send(self.commit(None, audit_prepared(ctx, p)))
                                .is_ok(),
                            Err(e) => tx_res
                                .send(self.commit(None, error_result(&s.path, s.format, &e)))
                                .is_ok(),
                        };
                        for sink in self.sinks {
                            sink.decoded();
                        }
                        if !sent {
                            break;
                        }
                    }
                });
            }
        });
    }

    /// Stage 3: `concurrency` conversations in flight, each a task on the
    /// client's runtime (LoadTrajectory, then the pair): no thread waits on
    /// a conversation, so the bodies are allocated by the runtime's one or
    /// two workers and the comparisons by stage 4's `jobs` threads, never by
    /// `concurrency` threads' allocator heaps (at 64, a heap per waiting
    /// thread held several times the live data). A conversation keeps its
    /// slot until it is judged, so what waits to be judged counts as in
    /// flight too. Its session's writer is opened here, before the fetch.
    fn dispatch(
        &self,
        rx_prep: Receiver<Prepared>,
        tx_judge: Sender<Job>,
        free: &(Sender<()>, Receiver<()>),
    ) {
        for p in rx_prep.iter() {
            if self.halt.halted() {
                // Not fetched, not recorded: --resume takes it.
                continue;
            }
            let Ok(()) = free.1.recv() else { break };
            let slot = Slot(free.0.clone());
            if self.halt.halted() {
                continue;
            }
            let files = self.dir.open_session(&p.source.file_id);
            if let Err(ended) = fetchable(&self.ctx, &p) {
                let _ = tx_judge.send(Job::Ready(Fetched::Ended(ended), slot, files));
                continue;
            }
            let tx = tx_judge.clone();
            // A large answer arrives on disk ([`ClientOptions::spool`]) and
            // waits for its judge there, not in memory.
            self.client
                .fetch_detached(p.source.cascade_id(), move |held| {
                    let _ = tx.send(Job::Answered(Box::new((p, held)), slot, files));
                });
        }
    }

    /// Stage 4: the bracket's second snapshot, compare + attest + the
    /// session's files, on `jobs` threads.
    fn judge(&self, rx_judge: Receiver<Job>, tx_res: Sender<Written>) {
        for job in rx_judge.iter() {
            let (fetched, _slot, files) = match job {
                Job::Ready(f, slot, files) => (f, slot, files),
                Job::Answered(answered, slot, files) => {
                    let (p, held) = *answered;
                    (bracket_fetched(&self.ctx, p, held), slot, files)
                }
            };
            if let Some(r) = fetched.ended() {
                if let Some(e) = &r.setup {
                    // a refused token or the wrong listener: the same for
                    // every conversation, said once; not recorded (its
                    // writer dropped uncommitted: nothing written)
                    self.halt.daemon_down(|| e.to_string());
                    continue;
                }
                if matches!(r.record.result, SessionOutcome::NotFetched { .. }) {
                    if let Err(e) = self.client.probe() {
                        self.halt.daemon_down(|| e.to_string());
                        // The daemon went away: this answer says nothing
                        // about the conversation.
                        continue;
                    }
                }
            }
            let r = self.commit(Some(files), judge_fetched(&self.ctx, fetched));
            for sink in self.sinks {
                sink.fetched();
            }
            if tx_res.send(r).is_err() {
                break;
            }
        }
    }

    /// Commits a judged session's files through its writer (opened before
    /// the fetch; for a session judged without one, now), tells the sinks,
    /// then drops its bodies and sidecar.
    fn commit(&self, files: Option<SessionWriter>, mut r: SessionResult) -> Written {
        let writer = files.unwrap_or_else(|| self.dir.open_session(&r.record.file_id));
        // An answer that waits in a staged file of `corpus/` becomes its
        // session file by a rename, not a copy.
        let committed = writer.commit(SessionFiles {
            full: r.full_body.as_mut().map(HeldResponse::body),
            ordinary: r.ordinary_body.as_mut().map(HeldResponse::body),
            sidecar: r.sidecar.as_deref(),
        });
        let files = committed.map(|c| {
            for sink in self.sinks {
                self.halt.sink(sink.committed(&c, &r));
            }
        });
        r.full_body = None;
        r.ordinary_body = None;
        r.sidecar = None;
        r.full_shapes = None;
        r.ordinary_shapes = None;
        (r, files)
    }

    /// Stage 5: the one writer records each session (its files committed)
    /// in the manifest and tells the sinks.
    fn write(&self, rx_res: Receiver<Written>, manifest: &mut Manifest) {
        for (r, files) in rx_res.iter() {
            if let Err(e) = files {
                self.halt.fail(e);
                continue;
            }
            if r.abandoned {
                continue;
            }
            let mut record = r.record.clone();
            record.endpoint = Some(self.endpoint.to_string());
            manifest.add(record);
            for sink in self.sinks {
                self.halt.sink(sink.recorded(&r, manifest));
            }
        }
    }
}

/// The end of the run: the manifest says whether it is complete, every
/// sink is finished with it (the manifest's own sink writes it), and the
/// run's first error, if any, is the sweep's.
fn finish(
    halt: Halt<'_>,
    sinks: &[&dyn SweepSink],
    mut manifest: Manifest,
    started_at: Instant,
    expected: u64,
    out: PathBuf,
) -> Result<SweepSummary> {
    let interrupted = halt.stop.load(Ordering::SeqCst);
    let daemon_down = halt.down.into_inner().ok().flatten();
    let stopped = halt.stopped.into_inner();
    let mut error = halt.error.into_inner().unwrap_or_else(|p| p.into_inner());
    manifest.timing.wall_seconds = started_at.elapsed().as_secs_f64();
    let recorded = manifest.sessions.iter().filter(|s| s.settled()).count() as u64;
    manifest.complete = !interrupted
        && daemon_down.is_none()
        && error.is_none()
        && !stopped
        && recorded >= expected
        && manifest.counts.not_fetched == 0;
    manifest.finished = Some(crate::util::time::now_rfc3339());
    let mut end = Finish::new(&mut manifest);
    for s in sinks {
        if let Err(e) = s.finished(&mut end) {
            end.mark_incomplete();
            error.get_or_insert(e.into());
        }
    }
    if let Some(e) = error {
        return Err(e);
    }
    Ok(SweepSummary {
        manifest,
        out,
        interrupted,
        daemon_down,
        pending: expected.saturating_sub(recorded),
        stopped,
    })
}

/// The manifest a `--resume` continues: it must be an audit-sweep folder
/// whose manifest names the same store root and shard.
fn resumed_manifest(opts: &SweepOptions, dir: &SweepDir, root: &str) -> Result<Manifest> {
    let path = dir.manifest();
    use crate::util::bounded::{read_if_present, InputKind};
    let bytes = match read_if_present(&path, InputKind::Manifest)? {
        Some(b) => b,
        None => {
            return Err(SweepStartError::ResumeNotASweep {
                out: opts.out.clone(),
            }
            .into())
        }
    };
    let m = crate::manifest::read::parse_strict(&bytes).map_err(|problem| Error::Corrupt {
        path: path.clone(),
        input: CorruptInput::ResumedManifest(Box::new(problem)),
    })?;
    if m.root != root {
        return Err(SweepStartError::ResumeOtherRoot {
            manifest: path,
            recorded: m.root,
            given: root.to_string(),
        }
        .into());
    }
    let shard = opts.shard.map(|(i, n)| format!("{i}/{n}"));
    if m.shard != shard {
        return Err(SweepStartError::ResumeOtherShard {
            manifest: path,
            recorded: m.shard,
            given: shard,
        }
        .into());
    }
    if m.shard.is_some() && m.shard_by.as_deref() != Some(super::shard::SHARD_ASSIGNMENT) {
        return Err(SweepStartError::ResumeListingShard {
            manifest: path.to_path_buf(),
        }
        .into());
    }
    Ok(m)
}

/// A conversation's place among the `concurrency` in flight; dropping it
/// frees the place.
struct Slot(crossbeam_channel::Sender<()>);

impl Drop for Slot {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// What stage 4 judges: a source that ended without a fetch, or a source
/// with its first answers (the bracket's second snapshot still to take),
/// each answer held where it waits ([`HeldResponse`]). Each carries its
/// session's writer, opened before the fetch.
enum Job {
    Ready(Fetched, Slot, SessionWriter),
    /// Boxed: a prepared source and two held answers are large beside
    /// the other variant.
    Answered(Box<(Prepared, HeldPair)>, Slot, SessionWriter),
}

type HeldPair = Result<(HeldResponse, HeldResponse), RpcError>;
