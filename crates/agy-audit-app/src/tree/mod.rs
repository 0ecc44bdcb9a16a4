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
/// The parent links (a leaf of the engine: `agy_engine::tree::links`).
pub use agy_engine::tree::links;
pub mod nest;

pub use index::{ParentIndex, MAX_DEPTH};
pub use links::{Diagnostic, DiagnosticKind};
pub use nest::{nested_markdown, Nested};

use serde_json::Value;
use std::path::{Path, PathBuf};

/// A sidecar document's bytes with `agyReader.parentCascadeId` added from a
/// parent's INVOKE_SUBAGENT results, when the conversation's own metadata
/// names no parent: the links of `root`'s conversations that mention it
/// ([`ParentIndex::scan_mentioning`]; a sibling parent's sidecar lists it)
/// choose exactly one parent, not on a cycle. `None` (write the bytes as
/// they are) when the document already carries a stamp, names no valid
/// cascade id, or the links choose no parent. The payload digest excludes
/// `agyReader`, so the attestation is unchanged.
pub fn stamp_from_siblings(sidecar: &[u8], root: &Path) -> Option<Vec<u8>> {
    let mut doc: Value = serde_json::from_slice(sidecar).ok()?;
    if !matches!(links::stamped_parent(&doc), links::Named::Absent) {
        return None;
    }
    let id = links::cascade_id(&doc).id()?.to_string();
    let roots = [PathBuf::from(root)];
    let mut index = ParentIndex::scan_mentioning(&roots, &id);
    index.observe(&id, root, &doc);
    let parent = index.parent(&id)?.to_string();
    doc.get_mut(links::NAMESPACE)?
        .as_object_mut()?
        .insert(links::PARENT_STAMP.into(), Value::String(parent));
    let mut out = serde_json::to_vec(&doc).ok()?;
    out.push(b'\n');
    Some(out)
}
