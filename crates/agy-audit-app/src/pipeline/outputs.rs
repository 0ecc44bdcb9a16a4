//! The sweep's records, each a [`SweepSink`]: the manifest (the sweep's
//! commit point), `sessions.csv` and the two response shape listings. The
//! pipeline hands them results; they decide nothing about a session.

use super::audit::SessionResult;
use super::sink::{Finish, Flow, SinkError, SinkResult, SweepSink};
use crate::manifest::Manifest;
use crate::shapes::{Listing, ListingRecord, Shapes, FULL_FILE, ORDINARY_FILE};
use crate::sweep_dir::{Answer, Committed, SweepDir};
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A lock that a panicking holder did not spoil: the state is the sink's
/// own and every update leaves it whole.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The sweep's three records, in the order their sinks must be told: the
/// listings first (the manifest records their fingerprints), then the CSV,
/// and the manifest last, so that a manifest saying `complete: true` is
/// written only once every other output is (a sink failing at the end
/// marks it incomplete: [`Finish::mark_incomplete`]).
pub struct Records {
    pub shapes: ShapesSink,
    pub csv: CsvSink,
    pub manifest: ManifestSink,
}

impl Records {
    /// The records of the sweep written into `dir`.
    pub fn new(dir: &SweepDir) -> Records {
        Records {
            shapes: ShapesSink::new(dir),
            csv: CsvSink::new(dir),
            manifest: ManifestSink::new(dir),
        }
    }

    /// The three sinks, in their order.
    pub fn sinks(&self) -> [&dyn SweepSink; 3] {
        [&self.shapes, &self.csv, &self.manifest]
    }
}

/// The manifest's writer: rewritten atomically when the sweep starts, at
/// most every 250 ms while sessions are recorded, and at the end. Each
/// write first makes durable the renames of the session files committed so
/// far (one sync of `corpus/`; each file's bytes were synced before its
/// rename), so every session the manifest on disk records has its files on
/// disk. A crash loses at most sessions the manifest does not record yet,
/// which `--resume` fetches again (over whatever a lost rename left
/// behind).
pub struct ManifestSink {
    dir: SweepDir,
    last_write: Mutex<Instant>,
}

impl ManifestSink {
    pub fn new(dir: &SweepDir) -> ManifestSink {
        ManifestSink {
            dir: dir.clone(),
            last_write: Mutex::new(Instant::now()),
        }
    }

    fn write(&self, m: &Manifest) -> Result<(), SinkError> {
        self.dir.sync_corpus();
        self.dir.write(&self.dir.manifest(), &m.to_json())?;
        Ok(())
    }
}

impl SweepSink for ManifestSink {
    fn started(&self, _total: u64, manifest: &Manifest) -> SinkResult {
        self.write(manifest)?;
        *lock(&self.last_write) = Instant::now();
        Ok(Flow::Continue)
    }

    fn recorded(&self, _r: &SessionResult, manifest: &Manifest) -> SinkResult {
        let mut last = lock(&self.last_write);
        if last.elapsed() > Duration::from_millis(250) {
            *last = Instant::now();
            self.write(manifest)?;
        }
        Ok(Flow::Continue)
    }

    fn finished(&self, end: &mut Finish<'_>) -> Result<(), SinkError> {
        self.write(end.manifest())
    }
}

/// `sessions.csv`, written once at the end from the final manifest.
pub struct CsvSink {
    dir: SweepDir,
}

impl CsvSink {
    pub fn new(dir: &SweepDir) -> CsvSink {
        CsvSink { dir: dir.clone() }
    }
}

impl SweepSink for CsvSink {
    fn finished(&self, end: &mut Finish<'_>) -> Result<(), SinkError> {
        self.dir.write(&self.dir.csv(), &end.manifest().to_csv())?;
        Ok(())
    }
}

/// The response shape listings of one session's two saved answers, taken
/// from the bodies while they are in memory (on the worker thread that
/// judged them) instead of read back from `corpus/` at the end.
struct SessionShapes {
    ordinary: Listing,
    full: Listing,
}

impl SessionShapes {
    /// Both answers' listings, taken by the judge while it read each answer
    /// ([`SessionResult::full_shapes`]); `None` unless the session has both
    /// answers and both listed (then the end of the sweep reads its saved
    /// files, exactly as for a session of an earlier run).
    fn of(r: &SessionResult) -> Option<SessionShapes> {
        r.full_body.as_ref()?;
        r.ordinary_body.as_ref()?;
        Some(SessionShapes {
            ordinary: r.ordinary_shapes.clone()?,
            full: r.full_shapes.clone()?,
        })
    }
}

/// The listings of the sessions committed and recorded in this run.
#[derive(Default)]
struct ShapesSoFar {
    /// Listed when committed, not recorded yet.
    pending: HashMap<String, SessionShapes>,
    /// The union of the recorded sessions' listings, and which sessions it
    /// covers.
    ordinary: Listing,
    full: Listing,
    covered: HashSet<String>,
}

/// `shapes-ordinary.tsv` and `shapes-full.tsv` beside the manifest, from
/// the answers saved under `corpus/` for the manifest's sessions: those
/// this run recorded with both answers are listed as they arrive; the
/// others (an earlier run's, or without both answers) are read back from
/// their files at the end. The union does not depend on the order, so the
/// same answers give the same bytes. Their records go into the manifest's
/// `shapes`.
pub struct ShapesSink {
    dir: SweepDir,
    so_far: Mutex<ShapesSoFar>,
}

impl ShapesSink {
    pub fn new(dir: &SweepDir) -> ShapesSink {
        ShapesSink {
            dir: dir.clone(),
            so_far: Mutex::new(ShapesSoFar::default()),
        }
    }

    fn write(&self, name: &str, l: &Listing, documents: usize) -> Result<ListingRecord, SinkError> {
        self.dir
            .write(&self.dir.listing(name), l.text().as_bytes())?;
        Ok(ListingRecord {
            file: name.to_string(),
            fingerprint: l.fingerprint(),
            entries: l.len(),
            documents,
        })
    }
}

impl SweepSink for ShapesSink {
    fn committed(&self, files: &Committed, r: &SessionResult) -> SinkResult {
        if let Some(s) = SessionShapes::of(r) {
            lock(&self.so_far).pending.insert(files.file_id.clone(), s);
        }
        Ok(Flow::Continue)
    }

    fn recorded(&self, r: &SessionResult, _manifest: &Manifest) -> SinkResult {
        let mut so_far = lock(&self.so_far);
        let id = &r.record.file_id;
        match so_far.pending.remove(id) {
            Some(s) => {
                so_far.ordinary.union(&s.ordinary);
                so_far.full.union(&s.full);
                so_far.covered.insert(id.clone());
            }
            // Read back from corpus/ at the end, as for an earlier run's.
            None => {
                so_far.covered.remove(id);
            }
        }
        Ok(Flow::Continue)
    }

    fn finished(&self, end: &mut Finish<'_>) -> Result<(), SinkError> {
        let so_far = std::mem::take(&mut *lock(&self.so_far));
        let m = end.manifest();
        let ids = || m.sessions.iter().map(|s| s.file_id.as_str());
        let saved = ids().filter(|id| !so_far.covered.contains(*id)).map(|id| {
            (
                self.dir.answer(id, Answer::Ordinary),
                self.dir.answer(id, Answer::Full),
            )
        });
        let (mut ordinary, n_ord, mut full, n_full) = crate::shapes::from_answers(saved)?;
        ordinary.union(&so_far.ordinary);
        full.union(&so_far.full);
        let covered = ids().filter(|id| so_far.covered.contains(*id)).count();
        let shapes = Shapes {
            ordinary: self.write(ORDINARY_FILE, &ordinary, n_ord + covered)?,
            full: self.write(FULL_FILE, &full, n_full + covered)?,
        };
        end.record_shapes(shapes);
        Ok(())
    }
}
