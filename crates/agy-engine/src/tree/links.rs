//! Parent links read from a trajectory's JSON (daemon style, a sidecar or
//! an offline export) and the parent-link diagnostics. A leaf: it imports
//! none of the reader's stages, so the sidecar and the offline export can
//! both ask it for `agyReader.parentCascadeId`.
//!
//! agy records a subagent's parent twice, natively: the child's trajectory
//! metadata names it (`metadata.parentConversationId`), and the parent's
//! INVOKE_SUBAGENT step lists the child (`invokeSubagent.results[]
//! .conversationId`). The reader-owned stamp is
//! `agyReader.parentCascadeId`, a lowercase bare UUID, omitted for roots
//! (public-format-facts §5.1).

use serde_json::Value;

/// The reader-owned namespace (the sidecar's and the export's).
pub const NAMESPACE: &str = "agyReader";
/// The stamp's member in [`NAMESPACE`].
pub const PARENT_STAMP: &str = "parentCascadeId";
/// The INVOKE_SUBAGENT step type, as the daemon spells it.
pub const INVOKE_SUBAGENT: &str = "CORTEX_STEP_TYPE_INVOKE_SUBAGENT";

/// `id` as a cascade id: a bare UUID (8-4-4-4-12 hex digits, no braces,
/// prefix or spaces), lowercased; `None` for anything else. The stricter
/// reading: a value that is not exactly a UUID names no conversation.
pub fn canonical_id(id: &str) -> Option<String> {
    let b = id.as_bytes();
    if b.len() != 36 {
        return None;
    }
    for (i, c) in b.iter().enumerate() {
        let ok = match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        };
        if !ok {
            return None;
        }
    }
    Some(id.to_ascii_lowercase())
}

/// What a member naming a conversation holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// Absent, `null` or the empty string: names nobody.
    Absent,
    /// A bare UUID (lowercased).
    Id(String),
    /// Anything else, as text (a non-string shown as its JSON).
    Invalid(String),
}

impl Named {
    /// Reads the member `v` (absent when `None`).
    pub fn of(v: Option<&Value>) -> Named {
        match v {
            None | Some(Value::Null) => Named::Absent,
            Some(Value::String(s)) if s.is_empty() => Named::Absent,
            Some(Value::String(s)) => match canonical_id(s) {
                Some(id) => Named::Id(id),
                None => Named::Invalid(s.clone()),
            },
            Some(other) => Named::Invalid(other.to_string()),
        }
    }

    /// The id, when valid.
    pub fn id(&self) -> Option<&str> {
        match self {
            Named::Id(id) => Some(id),
            _ => None,
        }
    }
}

/// The trajectory's own cascade id (`cascadeId`).
pub fn cascade_id(trajectory: &Value) -> Named {
    Named::of(trajectory.get("cascadeId"))
}

/// The parent the trajectory's metadata names (`metadata.parentConversationId`).
pub fn native_parent(trajectory: &Value) -> Named {
    Named::of(
        trajectory
            .get("metadata")
            .and_then(|m| m.get("parentConversationId")),
    )
}

/// The reader's stamp (`agyReader.parentCascadeId`).
pub fn stamped_parent(doc: &Value) -> Named {
    Named::of(doc.get(NAMESPACE).and_then(|r| r.get(PARENT_STAMP)))
}

/// `agyReader.parentCascadeId` of a trajectory from its own native
/// evidence: its metadata's parent, when that is a bare UUID other than
/// its own id. `None` for a root, and for a parent the reader cannot name
/// exactly (an invalid value is never stamped, and never stamped changed).
pub fn parent_cascade_id(trajectory: &Value) -> Option<String> {
    let parent = native_parent(trajectory).id()?.to_string();
    match cascade_id(trajectory) {
        Named::Id(own) if own == parent => None,
        _ => Some(parent),
    }
}

/// [`parent_cascade_id`] from the two members it reads, each given when it
/// is a string (only a string names a conversation): `cascadeId` and
/// `metadata.parentConversationId`.
pub fn parent_cascade_id_of(cascade: Option<&str>, parent: Option<&str>) -> Option<String> {
    let parent = canonical_id(parent?)?;
    match cascade.and_then(canonical_id) {
        Some(own) if own == parent => None,
        _ => Some(parent),
    }
}

/// One INVOKE_SUBAGENT step and the children its results list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The step's index in `steps`.
    pub step: usize,
    /// The children (bare UUIDs, lowercased, in the results' order, each once).
    pub children: Vec<String>,
    /// Result ids that are not bare UUIDs, as written.
    pub invalid: Vec<String>,
}

/// The children one INVOKE_SUBAGENT step lists (`invokeSubagent.results[]
/// .conversationId`); `None` when `step` is no INVOKE_SUBAGENT step.
pub fn invocation(step: &Value, index: usize) -> Option<Invocation> {
    if step.get("type").and_then(Value::as_str) != Some(INVOKE_SUBAGENT) {
        return None;
    }
    let mut inv = Invocation {
        step: index,
        children: Vec::new(),
        invalid: Vec::new(),
    };
    let results = step
        .get("invokeSubagent")
        .and_then(|i| i.get("results"))
        .and_then(Value::as_array);
    for r in results.into_iter().flatten() {
        match Named::of(r.get("conversationId")) {
            Named::Id(id) if !inv.children.contains(&id) => inv.children.push(id),
            Named::Invalid(raw) => inv.invalid.push(raw),
            _ => {}
        }
    }
    Some(inv)
}

/// Every INVOKE_SUBAGENT step of a trajectory, in step order.
pub fn invocations(trajectory: &Value) -> Vec<Invocation> {
    trajectory
        .get("steps")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, s)| invocation(s, i))
        .collect()
}

/// A cycle's members in parent order, starting at its smallest id (so the
/// same cycle is always spelled the same way, whichever member found it).
pub fn cycle_from(mut members: Vec<String>) -> Vec<String> {
    if let Some(min) = (0..members.len()).min_by_key(|&k| &members[k]) {
        members.rotate_left(min);
    }
    members
}

/// The kind of a parent-link diagnostic, with its public id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DiagnosticKind {
    /// A sidecar that cannot be read or parsed as JSON; skipped.
    UnreadableSidecar,
    /// A trajectory that does not identify itself with a bare cascade UUID
    /// (or not with the id its file is named after).
    InvalidCascadeId,
    /// `agyReader.parentCascadeId` present but not a bare cascade UUID.
    InvalidParentStamp,
    /// A parent edge on a cycle: never followed, never stamped.
    ParentCycle,
    /// A parent that no known root holds.
    MissingParent,
    /// Evidence naming different parents: no parent is chosen.
    ConflictingEvidence,
}

impl DiagnosticKind {
    /// The public id (`unreadable-sidecar`, `invalid-cascade-id`,
    /// `invalid-parent-stamp`, `parent-cycle`, `missing-parent`,
    /// `conflicting-evidence`).
    pub fn id(self) -> &'static str {
        match self {
            DiagnosticKind::UnreadableSidecar => "unreadable-sidecar",
            DiagnosticKind::InvalidCascadeId => "invalid-cascade-id",
            DiagnosticKind::InvalidParentStamp => "invalid-parent-stamp",
            DiagnosticKind::ParentCycle => "parent-cycle",
            DiagnosticKind::MissingParent => "missing-parent",
            DiagnosticKind::ConflictingEvidence => "conflicting-evidence",
        }
    }
}

impl std::fmt::Display for DiagnosticKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// One parent-link finding: never fatal, always reported.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Diagnostic {
    /// The sidecar at `path` could not be read or parsed (`why`).
    UnreadableSidecar {
        /// The conversation its file name gives.
        id: String,
        /// The sidecar.
        path: std::path::PathBuf,
        /// The cause.
        why: String,
    },
    /// The trajectory at `path` names itself `value`, not the bare UUID
    /// `id` its file is named after.
    InvalidCascadeId {
        /// The conversation its file name gives.
        id: String,
        /// The file.
        path: std::path::PathBuf,
        /// Its `cascadeId`, as written.
        value: String,
    },
    /// Conversation `id`'s sidecar stamps `value` as its parent.
    InvalidParentStamp {
        /// The conversation.
        id: String,
        /// The stamp, as written.
        value: String,
    },
    /// Conversation `id`'s parent edge lies on the cycle `cycle` (in
    /// parent order, starting at the cycle's smallest id).
    ParentCycle {
        /// The conversation.
        id: String,
        /// The cycle's members.
        cycle: Vec<String>,
    },
    /// Conversation `id` names `parent`, which no known root holds.
    MissingParent {
        /// The child.
        id: String,
        /// The absent parent.
        parent: String,
    },
    /// Conversation `id` has evidence for several parents (`parents`).
    ConflictingEvidence {
        /// The child.
        id: String,
        /// The candidates, sorted.
        parents: Vec<String>,
    },
}

impl Diagnostic {
    /// Its kind.
    pub fn kind(&self) -> DiagnosticKind {
        match self {
            Diagnostic::UnreadableSidecar { .. } => DiagnosticKind::UnreadableSidecar,
            Diagnostic::InvalidCascadeId { .. } => DiagnosticKind::InvalidCascadeId,
            Diagnostic::InvalidParentStamp { .. } => DiagnosticKind::InvalidParentStamp,
            Diagnostic::ParentCycle { .. } => DiagnosticKind::ParentCycle,
            Diagnostic::MissingParent { .. } => DiagnosticKind::MissingParent,
            Diagnostic::ConflictingEvidence { .. } => DiagnosticKind::ConflictingEvidence,
        }
    }

    /// The conversation it is about.
    pub fn id(&self) -> &str {
        match self {
            Diagnostic::UnreadableSidecar { id, .. }
            | Diagnostic::InvalidCascadeId { id, .. }
            | Diagnostic::InvalidParentStamp { id, .. }
            | Diagnostic::ParentCycle { id, .. }
            | Diagnostic::MissingParent { id, .. }
            | Diagnostic::ConflictingEvidence { id, .. } => id,
        }
    }
}

impl std::fmt::Display for Diagnostic {
    /// `<kind> <id>: <what>`, one line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: ", self.kind(), self.id())?;
        match self {
            Diagnostic::UnreadableSidecar { path, why, .. } => {
                write!(f, "{}: {why}; skipped", path.display())
            }
            Diagnostic::InvalidCascadeId { path, value, .. } => write!(
                f,
                "{}: cascadeId {value:?} is not the bare UUID its file is named after; skipped",
                path.display()
            ),
            Diagnostic::InvalidParentStamp { value, .. } => write!(
                f,
                "agyReader.parentCascadeId {value:?} is not a bare UUID; ignored"
            ),
            Diagnostic::ParentCycle { cycle, .. } => write!(
                f,
                "its parent edge forms a cycle ({} -> {}); not followed",
                cycle.join(" -> "),
                cycle.first().map(String::as_str).unwrap_or("?")
            ),
            Diagnostic::MissingParent { parent, .. } => {
                write!(f, "parent {parent} is in no known root")
            }
            Diagnostic::ConflictingEvidence { parents, .. } => write!(
                f,
                "the evidence names several parents ({}); none chosen",
                parents.join(", ")
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const A: &str = "0b6b2f0e-1c1d-4a7e-9a5e-0d6f3f1f2a01";

    #[test]
    fn ids_are_bare_uuids_lowercased() {
        assert_eq!(canonical_id(A).as_deref(), Some(A));
        assert_eq!(
            canonical_id(&A.to_uppercase()).as_deref(),
            Some(A),
            "uppercase is the same id"
        );
        for bad in [
            "",
            "x",
            &format!("{{{A}}}"),
            &format!(" {A}"),
            &A.replace('-', ""),
            &A.replacen('0', "g", 1),
        ] {
            assert_eq!(canonical_id(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn parent_from_metadata_and_children_from_results() {
        let child =
            json!({"cascadeId": "c", "metadata": {"parentConversationId": A.to_uppercase()}});
        assert_eq!(parent_cascade_id(&child).as_deref(), Some(A));
        assert_eq!(parent_cascade_id(&json!({"metadata": {}})), None);
        assert_eq!(
            parent_cascade_id(&json!({"metadata": {"parentConversationId": "not-a-uuid"}})),
            None
        );
        assert_eq!(
            parent_cascade_id(&json!({"cascadeId": A, "metadata": {"parentConversationId": A}})),
            None,
            "its own parent names no parent"
        );
        let t = json!({"steps": [
            {"type": "CORTEX_STEP_TYPE_PLANNER_RESPONSE"},
            {"type": INVOKE_SUBAGENT, "invokeSubagent": {"results": [
                {"conversationId": A}, {"conversationId": "zz"}, {"conversationId": A}]}},
            {"type": INVOKE_SUBAGENT},
        ]});
        let inv = invocations(&t);
        assert_eq!(inv.len(), 2);
        assert_eq!(inv[0].step, 1);
        assert_eq!(inv[0].children, vec![A.to_string()]);
        assert_eq!(inv[0].invalid, vec!["zz".to_string()]);
        assert!(inv[1].children.is_empty());
    }

    #[test]
    fn diagnostics_say_their_public_ids() {
        let d = Diagnostic::InvalidParentStamp {
            id: A.into(),
            value: "x".into(),
        };
        assert!(d
            .to_string()
            .starts_with(&format!("invalid-parent-stamp {A}: ")));
        for (k, id) in [
            (DiagnosticKind::UnreadableSidecar, "unreadable-sidecar"),
            (DiagnosticKind::InvalidCascadeId, "invalid-cascade-id"),
            (DiagnosticKind::InvalidParentStamp, "invalid-parent-stamp"),
            (DiagnosticKind::ParentCycle, "parent-cycle"),
        ] {
            assert_eq!(k.id(), id);
        }
    }
}
