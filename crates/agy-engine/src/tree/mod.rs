//! Subagent parent links: the evidence one trajectory holds of its parent
//! and its subagents ([`links`]), which the attestation stamps into a
//! sidecar. The index over a store's conversations lives in the
//! application crate (`agy_audit_app::tree`).

pub mod links;

pub use links::{Diagnostic, DiagnosticKind};
