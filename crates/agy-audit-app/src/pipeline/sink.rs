//! The sweep's output boundary: what a running sweep hands to whoever
//! records or shows it. A leaf: the sweep calls its sinks, a sink (the
//! manifest, `sessions.csv`, the shape listings in [`super::outputs`], the
//! CLI's terminal display, a test's recorder) implements [`SweepSink`], and
//! neither imports the other. So a new output is a new sink; the pipeline
//! is not touched.

use super::audit::SessionResult;
use crate::manifest::Manifest;
use crate::shapes::Shapes;
use crate::sweep_dir::Committed;

/// What a sink asks of the sweep after an event (ripgrep's `Sink` returns
/// `Ok(true)` / `Ok(false)` alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Go on.
    Continue,
    /// Take no new source: what is in flight is still judged, recorded and
    /// told to every sink, the sweep finishes with `complete: false`, and
    /// its summary says it was stopped ([`super::SweepSummary::stopped`]).
    Stop,
}

/// Why a sink failed: typed, so the sweep ends with the error itself.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// An output the sink writes (or reads back) could not be: the I/O
    /// error of the file it names.
    #[error(transparent)]
    Output(#[from] crate::error::Error),
}

impl From<crate::util::atomic::WriteError> for SinkError {
    fn from(e: crate::util::atomic::WriteError) -> SinkError {
        SinkError::Output(e.into())
    }
}

impl From<crate::shapes::ShapeError> for SinkError {
    fn from(e: crate::shapes::ShapeError) -> SinkError {
        SinkError::Output(e.into())
    }
}

impl From<SinkError> for crate::error::Error {
    fn from(e: SinkError) -> crate::error::Error {
        match e {
            SinkError::Output(e) => e,
        }
    }
}

/// What a sink returns after an event it may fail.
pub type SinkResult = Result<Flow, SinkError>;

/// The end of a sweep as its sinks see it: the final manifest (its
/// `complete`, `finished` and timing already set), and the one member a
/// sink may add to it, the shape listings it wrote. A sink cannot change a
/// session or a count.
pub struct Finish<'a> {
    manifest: &'a mut Manifest,
}

impl<'a> Finish<'a> {
    /// The end of a sweep that recorded `manifest`.
    pub fn new(manifest: &'a mut Manifest) -> Finish<'a> {
        Finish { manifest }
    }

    /// The final manifest.
    pub fn manifest(&self) -> &Manifest {
        self.manifest
    }

    /// Records the shape listings written beside the manifest (`shapes`).
    pub fn record_shapes(&mut self, shapes: Shapes) {
        self.manifest.shapes = Some(shapes);
    }

    /// A sink failed at the end: the manifest the later sinks write says
    /// `complete: false`.
    pub fn mark_incomplete(&mut self) {
        self.manifest.complete = false;
    }
}

/// What a running sweep hands to its sinks (ripgrep's `Sink` is the model).
/// The sweep takes a list of sinks and tells each, in the list's order,
/// every event; the manifest, `sessions.csv` and the shape listings are
/// sinks ([`super::outputs::Records`]), and so is the CLI's terminal
/// display. The contract:
///
/// - `skipped` first, once per file under `conversations/` that is not a
///   conversation; it only observes.
/// - `started` once, with the number of sources the run will take and the
///   manifest as it stands before any session of this run (the manifest
///   sink writes it: a folder with a manifest is a sweep `--resume` can
///   continue). A sink failing here ends the sweep at once with its error,
///   before any source is read.
/// - `decoded` and `fetched` from the worker threads, once per source that
///   passed that stage (so `&self`, and a sink is `Sync`); they only
///   observe.
/// - `committed` from the worker thread that judged the session, once its
///   files are renamed into `corpus/` ([`crate::sweep_dir::SessionWriter`]),
///   with the result still holding its answers' bodies and sidecar (they
///   are dropped before the session travels on). A committed session may
///   never be recorded (its fetch abandoned by Ctrl-C).
/// - `recorded` from the one writer, once per session, after the session
///   is in `manifest` (the bodies already dropped; the manifest's running
///   counts include it); a session is committed before it is recorded.
/// - `finished` once, after the last `recorded`, in the list's order, with
///   the final manifest ([`Finish`]): a sink that records what it wrote in
///   the manifest comes before the manifest's own sink.
///
/// A sink fails the sweep by returning an error from `started`,
/// `committed`, `recorded` or `finished`, or stops it with [`Flow::Stop`]:
/// then the sweep takes no new source; what is in flight is still judged,
/// recorded and told to every sink (a sink that failed is told too, and
/// only the first error is kept); every sink is finished with the manifest
/// saying `complete: false`; and the sweep returns the first error (exit 1,
/// as for any output that cannot be written). A sink that fails at
/// `finished` marks the manifest incomplete for the sinks after it. A sink
/// never changes a verdict: it receives results, it does not make them.
pub trait SweepSink: Sync {
    /// A file under `conversations/` that is not a conversation.
    fn skipped(&self, _path: &str, _reason: &str) {}
    fn started(&self, _total: u64, _manifest: &Manifest) -> SinkResult {
        Ok(Flow::Continue)
    }
    fn decoded(&self) {}
    fn fetched(&self) {}
    fn committed(&self, _files: &Committed, _r: &SessionResult) -> SinkResult {
        Ok(Flow::Continue)
    }
    fn recorded(&self, _r: &SessionResult, _manifest: &Manifest) -> SinkResult {
        Ok(Flow::Continue)
    }
    fn finished(&self, _end: &mut Finish<'_>) -> Result<(), SinkError> {
        Ok(())
    }
}

/// A sink that observes nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSink;

impl SweepSink for NoSink {}
