//! agy-audit-app: the application library of agy-audit.
//!
//! The services a command calls, over the verdict engine (`agy_engine`,
//! whose modules are re-exported here under their own names): [`roots`]
//! and [`discover`] find the stores, [`rpc`] asks the daemon,
//! [`pipeline`] audits one conversation and sweeps a store into its
//! sinks, [`manifest`] records (with shards and merge), [`report`] and
//! [`export`] write what people read, [`tree`] indexes parents, [`watch`]
//! keeps sidecars fresh, [`redact`] keeps secrets out of shared outputs.
//!
//! **Architecture invariant:** no command-line parsing, no terminal
//! widgets, no generator (no clap, indicatif, anyhow or agy-corpus,
//! checked by `tests/crate_boundaries.rs`); it prints only through
//! [`util::term`], and every verdict comes from the engine.
//!
//! **API boundary:** the CLI (the `agy-audit` package) calls one function
//! of a module here per command and prints what it returns.

// Unit tests read the files they wrote directly; the bounded-read rule
// (`clippy.toml`) is for the tool's inputs.
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub use agy_engine::{
    attest, compare, fuzzing, outcome, profile, project, rules, schema, shapes, source, verdict,
    well_known,
};

pub mod discover;
pub mod error;
pub mod export;
pub mod installed;
pub mod manifest;
pub mod pipeline;
pub mod redact;
pub mod report;
pub mod roots;
pub mod rpc;
pub mod schema_advice;
pub mod sidecars;
pub mod store_folders;
pub mod sweep_dir;
pub mod tree;
pub mod troubles;
pub mod util;
pub mod watch;

pub use error::{Error, Result};
