//! agy-audit: audits Google Antigravity (`agy`) conversation stores.
//!
//! This package is the command line: clap types and one thin module per
//! command ([`cli`]), the progress bars, [`bench`], `demo` and the
//! generator glue. The work is done by the application library
//! (`agy_audit_app`) over the verdict engine (`agy_engine`); both are
//! re-exported here under their module names, so `agy_audit::source`,
//! `agy_audit::pipeline` and the rest name what they always named (see
//! ARCHITECTURE.md).

// Unit tests read the files they wrote directly; the bounded-read rule
// (`clippy.toml`) is for the tool's inputs.
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub use agy_audit_app::*;

pub mod bench;
pub mod cli;
