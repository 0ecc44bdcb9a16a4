//! `audit-sweep`: requalify a whole store in parallel.

use super::audit::{
    audit_prepared, bracket_fetched, error_result, fetchable, judge_fetched, prepare, AuditContext,
    Fetched, Prepared, SessionResult,
};
use super::error::SweepStartError;
use crate::discover::{discover, SourceRef};
use crate::error::{CorruptInput, Error, Result};
use crate::manifest::{Manifest, CSV_FILE, MANIFEST_FILE};
use crate::outcome::SessionOutcome;
use crate::rpc::{ClientOptions, DaemonClient, TrajectoryResponse};
use crate::schema::Schema;
use crate::shapes::Listing;
use crate::source::legacy::LegacyKey;
use crate::util::atomic::{sync_dir, write_file, write_file_unsynced_dir, WriteOptions};
use crossbeam_channel::bounded;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use super::sink::{NoSink, SweepSink};

/// The response shape listings of one session's two saved answers, taken
/// from the bodies while they are in memory (on the judge thread that
/// compared them) instead of read back from `corpus/` at the end.
struct SessionShapes {
    ordinary: Listing,
    full: Listing,
}

impl SessionShapes {
    /// Both answers' listings; `None` unless the session has both bodies and
    /// both parse (then the end of the sweep reads its saved files, exactly
    /// as for a session of an earlier run).
    fn of(r: &mut SessionResult) -> Option<SessionShapes> {
        // One pass over the text, no tree ([`Listing::add_bytes`] parses a
        // tree only when [`Listing::add_text`] stops).
        let listing = |b: &Option<Vec<u8>>| {
            let mut l = Listing::new();
            l.add_bytes(Path::new(""), b.as_deref()?).ok()?;
            Some(l)
        };
        // A verified session's ordinary answer was listed when it was read
        // for its digest (the same text, the same pass).
        let ordinary = match (r.ordinary_shapes.take(), &r.ordinary_body) {
            (Some(l), Some(_)) => l,
            (_, body) => listing(body)?,
        };
        Some(SessionShapes {
            ordinary,
            full: listing(&r.full_body)?,
        })
    }
}

/// The union of the listings of the sessions recorded in this run, and
/// which sessions it covers.
#[derive(Default)]
struct ShapesSoFar {
    ordinary: Listing,
    full: Listing,
    covered: HashSet<String>,
}

/// The one writer's record: the manifest, rewritten atomically at most every
/// 250 ms while sessions arrive, and the first write error.
struct ManifestWriter<'a> {
    out: &'a Path,
    endpoint: &'a str,
    manifest: Manifest,
    last_write: Instant,
    error: Option<Error>,
    shapes: ShapesSoFar,
}

impl ManifestWriter<'_> {
    /// Records a finished session (its files already written, or not: then
    /// the first such error is kept and the session is not recorded).
    fn record(
        &mut self,
        r: &SessionResult,
        files: Result<()>,
        shapes: Option<SessionShapes>,
        sink: &dyn SweepSink,
    ) {
        if let Err(e) = files {
            self.error.get_or_insert(e);
            return;
        }
        if r.abandoned {
            return;
        }
        let mut record = r.record.clone();
        record.endpoint = Some(self.endpoint.to_string());
        if let Some(s) = shapes {
            self.shapes.ordinary.union(&s.ordinary);
            self.shapes.full.union(&s.full);
            self.shapes.covered.insert(record.file_id.clone());
        } else {
            // Read back from corpus/ at the end, as before.
            self.shapes.covered.remove(&record.file_id);
        }
        self.manifest.add(record);
        sink.recorded(r, &self.manifest.counts);
        if self.last_write.elapsed() > Duration::from_millis(250) {
            if let Err(e) = write_manifest(self.out, &self.manifest) {
                self.error.get_or_insert(e);
            }
            self.last_write = Instant::now();
        }
    }
}

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
}

fn mkdir_private(p: &Path) -> Result<()> {
    let mut b = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(p).map_err(|e| Error::io(p, e))
}

fn private(force: bool) -> WriteOptions {
    WriteOptions {
        force,
        mode: Some(0o600),
        protected: Vec::new(),
    }
}

/// Writes the manifest, the sweep's commit point: first the renames of the
/// session files written so far are made durable (one sync of `corpus/`;
/// each file's bytes were synced before its rename), so every session the
/// manifest on disk records has its files on disk. A crash loses at most
/// sessions the manifest does not record yet, which `--resume` fetches again
/// (over whatever a lost rename left behind).
fn write_manifest(out: &Path, m: &Manifest) -> Result<()> {
    let corpus = out.join("corpus");
    if corpus.is_dir() {
        sync_dir(&corpus);
    }
    write_file(&out.join(MANIFEST_FILE), &m.to_json(), &private(true))?;
    Ok(())
}

/// Runs the sweep, telling `sink` what happens ([`SweepSink`]).
pub fn sweep_to(
    schema: &Schema,
    key: &LegacyKey,
    opts: &SweepOptions,
    stop: Arc<AtomicBool>,
    sink: &dyn SweepSink,
) -> Result<SweepSummary> {
    let started_at = Instant::now();
    let corpus = opts.out.join("corpus");
    // Everything that can refuse the run is checked before --out is touched,
    // so a failed start leaves nothing behind to block a rerun or --resume.
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
            ..opts.client.clone()
        },
    )?;
    let root_text = root.display().to_string();
    let mut manifest = if opts.resume {
        resumed_manifest(opts, &root_text)?
    } else {
        match std::fs::symlink_metadata(&opts.out) {
            Ok(m) if m.is_dir() && opts.out.join(MANIFEST_FILE).is_file() => {
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
        Manifest::new(&root_text, &opts.endpoint, crate::util::time::now_rfc3339())
    };
    client.probe()?;
    if !opts.resume {
        mkdir_private(&opts.out)?;
        mkdir_private(&corpus)?;
    }
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
    for s in &manifest.skipped {
        sink.skipped(&s.path, &s.reason);
    }
    manifest.timing.concurrency = opts.concurrency;
    manifest.timing.jobs = opts.jobs;
    if opts.resume && !corpus.is_dir() {
        mkdir_private(&corpus)?;
    }
    if opts.resume {
        // A run killed mid-write (kill -9) leaves its temp files behind.
        remove_own_temp_files(&opts.out)?;
        remove_own_temp_files(&corpus)?;
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
    let total = todo.len() as u64;
    manifest.complete = false;
    manifest.finished = None;
    write_manifest(&opts.out, &manifest)?;

    let ctx = AuditContext {
        schema,
        key,
        client: Some(&client),
        bracket_retries: opts.bracket_retries,
    };
    // Set when the daemon stops accepting connections mid-run: the sweep
    // then stops as on Ctrl-C, reports it once, and --resume continues.
    let down: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
    let halted = || stop.load(Ordering::SeqCst) || down.lock().map(|d| d.is_some()).unwrap_or(true);
    let jobs = opts.jobs.max(1);
    let concurrency = opts.concurrency.max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(|source| SweepStartError::DecodeThreads { jobs, source })?;

    sink.started(total);
    let (tx_src, rx_src) = bounded::<SourceRef>(jobs * 2);
    // Prepared sources wait here for a free slot among those in flight.
    // Decoding runs ahead of the fetches by at most this many (each holds
    // its source's encoding and projection): a longer queue only holds
    // memory, since a dispatcher that finds it empty waits on the decoders,
    // not on the daemon.
    let (tx_prep, rx_prep) = bounded((jobs * 2).min(concurrency * 2));
    // Results travel to the writer with their files already written (by the
    // stage that made them, so that the fsyncs of many sessions overlap),
    // their shape listings taken and their bodies dropped: the writer only
    // records.
    let (tx_res, rx_res) = bounded::<Written>(concurrency * 2);
    // Fetched answers wait here for a judge thread; unbounded, since each
    // holds one of the `concurrency` slots until it is judged: when the
    // daemon is ahead of the CPU, no more is fetched.
    let (tx_judge, rx_judge) = crossbeam_channel::unbounded::<Job>();
    let free = bounded::<()>(concurrency);
    for _ in 0..concurrency {
        let _ = free.0.send(());
    }
    let corpus = &corpus;
    let mut writer = ManifestWriter {
        out: &opts.out,
        endpoint: &opts.endpoint,
        manifest,
        last_write: Instant::now(),
        error: None,
        shapes: ShapesSoFar::default(),
    };
    let mut interrupted = false;

    std::thread::scope(|scope| {
        // Stage 1: feed the discovered sources, stopping on Ctrl-C.
        let halted = &halted;
        scope.spawn(move || {
            for s in todo {
                if halted() || tx_src.send(s).is_err() {
                    break;
                }
            }
        });
        // Stage 2: snapshot + decode + project on the rayon pool.
        {
            let tx_res = tx_res.clone();
            let ctx = &ctx;
            let pool = &pool;
            scope.spawn(move || {
                pool.scope(|ps| {
                    for _ in 0..jobs {
                        let rx_src = rx_src.clone();
                        let tx_prep = tx_prep.clone();
                        let tx_res = tx_res.clone();
                        ps.spawn(move |_| {
                            for s in rx_src.iter() {
                                let sent = match prepare(ctx, &s.path) {
                                    Ok(p) if p.refusal().is_none() => tx_prep.send(p).is_ok(),
                                    Ok(p) => {
                                        tx_res.send(written(corpus, audit_prepared(ctx, p))).is_ok()
                                    }
                                    Err(e) => tx_res
                                        .send(written(corpus, error_result(&s.path, s.format, &e)))
                                        .is_ok(),
                                };
                                sink.decoded();
                                if !sent {
                                    break;
                                }
                            }
                        });
                    }
                });
            });
        }
        // Stage 3: `concurrency` conversations in flight, each a task on
        // the client's runtime (LoadTrajectory, then the pair): no thread
        // waits on a conversation, so the bodies are allocated by the
        // runtime's one or two workers and the comparisons by stage 4's
        // `jobs` threads, never by `concurrency` threads' allocator heaps
        // (at 64, a heap per waiting thread held several times the live
        // data). A conversation keeps its slot until it is judged, so what
        // waits to be judged counts as in flight too.
        {
            let (rx_prep, tx_judge) = (rx_prep.clone(), tx_judge.clone());
            let (client, free, ctx) = (&client, &free, &ctx);
            scope.spawn(move || {
                for p in rx_prep.iter() {
                    if halted() {
                        // Not fetched, not recorded: --resume takes it.
                        continue;
                    }
                    let Ok(()) = free.1.recv() else { break };
                    let slot = Slot(free.0.clone());
                    if halted() {
                        continue;
                    }
                    if let Err(ended) = fetchable(ctx, &p) {
                        let _ = tx_judge.send(Job::Ready(Fetched::Ended(ended), slot));
                        continue;
                    }
                    let tx = tx_judge.clone();
                    client.fetch_detached(p.source.cascade_id(), move |answers| {
                        let _ = tx.send(Job::Answered(Box::new(p), answers, slot));
                    });
                }
            });
        }
        drop(tx_judge);
        // Stage 4: the bracket's second snapshot, compare + attest + the
        // session's files, on `jobs` threads.
        for _ in 0..jobs {
            let rx_judge = rx_judge.clone();
            let tx_res = tx_res.clone();
            let ctx = &ctx;
            let (client, down) = (&client, &down);
            scope.spawn(move || {
                for job in rx_judge.iter() {
                    let (fetched, _slot) = match job {
                        Job::Ready(f, slot) => (f, slot),
                        Job::Answered(p, answers, slot) => {
                            (bracket_fetched(ctx, *p, answers), slot)
                        }
                    };
                    if let Some(r) = fetched.ended() {
                        if let Some(e) = &r.setup {
                            // a refused token or the wrong listener: the
                            // same for every conversation, said once; not
                            // recorded
                            if let Ok(mut d) = down.lock() {
                                d.get_or_insert_with(|| e.to_string());
                            }
                            continue;
                        }
                        if matches!(r.record.result, SessionOutcome::NotFetched { .. }) {
                            if let Err(e) = client.probe() {
                                if let Ok(mut d) = down.lock() {
                                    d.get_or_insert_with(|| e.to_string());
                                }
                                // The daemon went away: this answer says
                                // nothing about the conversation.
                                continue;
                            }
                        }
                    }
                    let r = written(corpus, judge_fetched(ctx, fetched));
                    sink.fetched();
                    if tx_res.send(r).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx_res);
        drop(rx_prep);
        drop(rx_judge);
        // Stage 5: the one writer.
        for (r, files, shapes) in rx_res.iter() {
            writer.record(&r, files, shapes, sink);
        }
    });
    if stop.load(Ordering::SeqCst) {
        interrupted = true;
    }
    let daemon_down = down.into_inner().ok().flatten();
    sink.finished();
    let ManifestWriter {
        mut manifest,
        error: write_error,
        shapes,
        ..
    } = writer;
    manifest.timing.wall_seconds = started_at.elapsed().as_secs_f64();
    let recorded = manifest.sessions.iter().filter(|s| s.settled()).count() as u64;
    let expected = done.len() as u64 + total;
    manifest.complete = !interrupted
        && daemon_down.is_none()
        && write_error.is_none()
        && recorded >= expected
        && manifest.counts.not_fetched == 0;
    manifest.finished = Some(crate::util::time::now_rfc3339());
    // Recomputed from the saved answers of every recorded session, so that a
    // resumed sweep lists all of them and the same answers give the same bytes.
    manifest.shapes = Some(write_shapes(&opts.out, corpus, &manifest, shapes)?);
    write_manifest(&opts.out, &manifest)?;
    write_file(&opts.out.join(CSV_FILE), &manifest.to_csv(), &private(true))?;
    if let Some(e) = write_error {
        return Err(e);
    }
    let pending = expected.saturating_sub(recorded);
    Ok(SweepSummary {
        manifest,
        out: opts.out.clone(),
        interrupted,
        daemon_down,
        pending,
    })
}

/// Writes `shapes-ordinary.tsv` and `shapes-full.tsv` beside the manifest
/// from the answers saved under `corpus/` for the manifest's sessions: those
/// this run recorded with both answers were listed as they arrived
/// (`so_far`); the others (an earlier run's, or without both answers) are
/// read back from their files. The union does not depend on the order, so
/// the same answers give the same bytes.
fn write_shapes(
    out: &Path,
    corpus: &Path,
    m: &Manifest,
    so_far: ShapesSoFar,
) -> Result<crate::shapes::Shapes> {
    use crate::shapes::{from_corpus, ListingRecord, Shapes, FULL_FILE, ORDINARY_FILE};
    let ids = || m.sessions.iter().map(|s| s.file_id.as_str());
    let (mut ordinary, n_ord, mut full, n_full) =
        from_corpus(corpus, ids().filter(|id| !so_far.covered.contains(*id)))?;
    ordinary.union(&so_far.ordinary);
    full.union(&so_far.full);
    let covered = ids().filter(|id| so_far.covered.contains(*id)).count();
    let (n_ord, n_full) = (n_ord + covered, n_full + covered);
    let record = |name: &str, l: &crate::shapes::Listing, documents| -> Result<ListingRecord> {
        write_file(&out.join(name), l.text().as_bytes(), &private(true))?;
        Ok(ListingRecord {
            file: name.to_string(),
            fingerprint: l.fingerprint(),
            entries: l.len(),
            documents,
        })
    };
    Ok(Shapes {
        ordinary: record(ORDINARY_FILE, &ordinary, n_ord)?,
        full: record(FULL_FILE, &full, n_full)?,
    })
}

/// The manifest a `--resume` continues: it must be an audit-sweep folder
/// whose manifest names the same store root and shard.
fn resumed_manifest(opts: &SweepOptions, root: &str) -> Result<Manifest> {
    let path = opts.out.join(MANIFEST_FILE);
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

/// Removes, directly in `dir`, the temp files this tool's atomic writer
/// names (`.agy-audit-<random>.tmp`, regular files, not links) that a killed
/// run left behind: they are the sweep's own, in its own folder, and never
/// a finished output. Nothing else is touched.
fn remove_own_temp_files(dir: &Path) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !crate::util::atomic::is_own_temp_name(name) {
            continue;
        }
        let is_file = entry
            .file_type()
            .map(|t| t.is_file() && !t.is_symlink())
            .unwrap_or(false);
        if is_file {
            let path = entry.path();
            std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
        }
    }
    Ok(())
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
/// with its first answers (the bracket's second snapshot still to take).
enum Job {
    Ready(Fetched, Slot),
    Answered(
        Box<Prepared>,
        Result<(TrajectoryResponse, TrajectoryResponse), crate::rpc::RpcError>,
        Slot,
    ),
}

/// A session on its way to the writer: its result, whether its files were
/// written, and its answers' shape listings.
type Written = (SessionResult, Result<()>, Option<SessionShapes>);

/// Writes a session's files, takes its answers' shape listings, then drops
/// its bodies and sidecar.
fn written(corpus: &Path, mut r: SessionResult) -> Written {
    let files = write_session(corpus, &r);
    let shapes = if files.is_ok() {
        SessionShapes::of(&mut r)
    } else {
        None
    };
    r.full_body = None;
    r.ordinary_body = None;
    r.sidecar = None;
    r.ordinary_shapes = None;
    (r, files, shapes)
}

/// The session's files, each synced before its rename; the folder is synced
/// once for many sessions, by [`write_manifest`] before it records them.
fn write_session(corpus: &Path, r: &SessionResult) -> Result<()> {
    let opts = private(true);
    if let Some(b) = &r.full_body {
        write_file_unsynced_dir(
            &corpus.join(format!("{}.full.json", r.record.file_id)),
            b,
            &opts,
        )?;
    }
    if let Some(b) = &r.ordinary_body {
        write_file_unsynced_dir(
            &corpus.join(format!("{}.ordinary.json", r.record.file_id)),
            b,
            &opts,
        )?;
    }
    if let Some(bytes) = &r.sidecar {
        write_file_unsynced_dir(
            &corpus.join(format!("{}.trajectory.json", r.record.file_id)),
            bytes,
            &opts,
        )?;
    }
    Ok(())
}
