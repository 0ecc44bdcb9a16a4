//! The staged audit pipeline: discover → snapshot + decode + project (rayon)
//! → bracketed fetch (at most `concurrency` in flight, on threads that only
//! wait) → compare + attest (`jobs` threads) → one writer, joined by bounded crossbeam channels so memory is bounded by
//! in-flight work, not corpus size. What a sweep writes or shows is its
//! sinks' (`sink`: the boundary; `outputs`: the manifest, `sessions.csv`
//! and the shape listings).

pub mod audit;
pub mod error;
pub mod outputs;
pub mod shard;
pub mod sink;
pub mod sweep;

pub use audit::{
    audit_prepared, bracket_fetched, fetch_prepared, fetchable, judge_fetched, prepare, Answered,
    Answers, AuditContext, Captured, Fetched, Prepared, SessionResult,
};
pub use outputs::Records;
pub use sink::{Finish, Flow, SinkError, SinkResult};
pub use sweep::{sweep_to, NoSink, SweepOptions, SweepSink, SweepSummary};
