//! agy-audit: audits Google Antigravity (`agy`) conversation stores.
//!
//! The pipeline, one module per stage (see ARCHITECTURE.md):
//! [`discover`] → [`source`] (snapshot + strict decode) → `project` → `rpc` →
//! `compare` → `attest` → `manifest` / `report`; [`export`] writes offline exports.

pub mod cli;
pub mod rules;
pub mod schema;
pub mod util;
pub mod verdict;
