//! agy-audit: audits Google Antigravity (`agy`) conversation stores.
//!
//! The pipeline, one module per stage (see ARCHITECTURE.md):
//! [`discover`] → [`source`] (snapshot + strict decode) → `project` → `rpc` →
//! `compare` → `attest` → `manifest` / `report`; [`export`] writes offline exports.

// Unit tests read the files they wrote directly; the bounded-read rule
// (`clippy.toml`) is for the tool's inputs.
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod attest;
pub mod bench;
pub mod cli;
pub mod compare;
pub mod discover;
pub mod error;
pub mod export;
#[doc(hidden)]
pub mod fuzzing;
pub mod manifest;
pub mod outcome;
pub mod pipeline;
pub mod profile;
pub mod project;
pub mod redact;
pub mod report;
pub mod roots;
pub mod rpc;
pub mod rules;
pub mod schema;
pub mod shapes;
pub mod source;
pub mod store_folders;
pub mod tree;
pub mod troubles;
pub mod util;
pub mod verdict;
pub mod watch;
pub mod well_known;

pub use error::{Error, Result};
