//! Subagent trees: which conversation is whose subagent, from the native
//! evidence agy writes (a child's `metadata.parentConversationId`, a
//! parent's INVOKE_SUBAGENT `invokeSubagent.results`), the reader's
//! `agyReader.parentCascadeId`, and the parent-link diagnostics
//! (`unreadable-sidecar`, `invalid-cascade-id`, `invalid-parent-stamp`,
//! `parent-cycle`, and `missing-parent`, `conflicting-evidence`).
//!
//! * `links` (a leaf): ids, the evidence one trajectory holds, the typed
//!   diagnostics; the sidecar (`attest`) and the offline export ask it for
//!   `parentCascadeId`.
//! * `index`: the links among the known roots' conversations, resolved,
//!   cycles found with a visited set, walks bounded.
//! * `nest`: `export-offline --format md` with each child's transcript
//!   nested under the INVOKE_SUBAGENT step that invoked it.

pub mod index;
pub mod links;
pub mod nest;

pub use index::{ParentIndex, MAX_DEPTH};
pub use links::{Diagnostic, DiagnosticKind};
pub use nest::{nested_markdown, Nested};
