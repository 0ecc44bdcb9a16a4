//! The sweep's observer boundary: what a running sweep tells whoever
//! watches it. A leaf: the sweep calls a sink, a sink (the terminal display,
//! a watcher) implements it, and neither imports the other.

use super::audit::SessionResult;

/// What a running sweep tells its observers (ripgrep's `Sink` is the model):
/// the CLI's terminal display (`agy_audit::cli::progress::Progress`) is one, and a sweep
/// runs the same without any ([`NoSink`]). The contract:
///
/// - `started` once, with the number of sources the run will take, before any
///   other call but `skipped`;
/// - `decoded` and `fetched` from the worker threads, once per source that
///   passed that stage (so `&self`, and the sink is `Sync`);
/// - `recorded` from the one writer, once per session, after the session is
///   in the manifest, with the manifest's running counts;
/// - `finished` once, after the last `recorded`, before the final manifest is
///   written.
///
/// A sink only observes: it cannot change a verdict or the manifest, and it
/// must not fail the run (its own output errors are its to drop).
pub trait SweepSink: Sync {
    fn started(&self, _total: u64) {}
    /// A file under `conversations/` that is not a conversation.
    fn skipped(&self, _path: &str, _reason: &str) {}
    fn decoded(&self) {}
    fn fetched(&self) {}
    fn recorded(&self, _r: &SessionResult, _counts: &crate::manifest::Counts) {}
    fn finished(&self) {}
}

/// A sink that observes nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSink;

impl SweepSink for NoSink {}
