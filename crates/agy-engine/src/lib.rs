//! agy-engine: the verdict engine of agy-audit.
//!
//! From a conversation's stored bytes and a descriptor set to a verdict:
//! [`schema`] (the modeled descriptor set and its maintenance) →
//! [`source`] (snapshot and strict decode of a `.db` or `.pb`) →
//! [`project`] (the rule registry [`rules`], one projection family per
//! file) → [`compare`] (values under the proto3 JSON mapping) → [`attest`]
//! (canonical bytes, payload digest, the sidecar's strict reading and its
//! recheck) → [`verdict`] / [`outcome`], with [`profile`], [`shapes`],
//! parent [`tree::links`] and [`util`].
//!
//! **Architecture invariant:** the engine reads bytes and answers; it does
//! no HTTP, holds no async runtime, draws nothing on a terminal, parses no
//! command line and never calls the generator (no reqwest, hyper, tokio,
//! clap, indicatif, anyhow or agy-corpus, checked by
//! `tests/crate_boundaries.rs`). Its errors are typed per operation.
//!
//! **API boundary:** the application (`agy-audit-app`) calls
//! `source::read_source`, `project::project`, `compare::*`, `attest::*`
//! and the verdict types; nothing here knows a daemon, a sweep or a
//! manifest.

// Unit tests read the files they wrote directly; the bounded-read rule
// (`clippy.toml`) is for the tool's inputs.
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod answer;
pub mod attest;
pub mod compare;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod outcome;
pub mod profile;
pub mod project;
pub mod rules;
pub mod schema;
pub mod shapes;
pub mod source;
pub mod tree;
pub mod util;
pub mod verdict;
pub mod well_known;

pub use error::{Error, Result};
