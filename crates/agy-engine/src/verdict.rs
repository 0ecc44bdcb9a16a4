//! Outcomes as data: verdicts, refusal classes and process exit codes.
//!
//! An [`Outcome`] is either a verdict about a conversation (the reader could or
//! could not represent it) or an [`crate::Error`] (I/O, a corrupt file): the two
//! are never mixed, and each maps to its own exit code.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The four verdicts of the reference specification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum VerdictKind {
    #[serde(rename = "verified")]
    Verified,
    #[serde(rename = "verified-source-only")]
    VerifiedSourceOnly,
    #[serde(rename = "unknown")]
    Unknown,
    #[serde(rename = "incomplete")]
    Incomplete,
}

impl VerdictKind {
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictKind::Verified => "verified",
            VerdictKind::VerifiedSourceOnly => "verified-source-only",
            VerdictKind::Unknown => "unknown",
            VerdictKind::Incomplete => "incomplete",
        }
    }

    /// Parses a verdict id (the inverse of [`Self::as_str`]).
    pub fn from_id(id: &str) -> Option<VerdictKind> {
        [
            VerdictKind::Verified,
            VerdictKind::VerifiedSourceOnly,
            VerdictKind::Unknown,
            VerdictKind::Incomplete,
        ]
        .into_iter()
        .find(|v| v.as_str() == id)
    }
}

macro_rules! classes {
    ($( $variant:ident => $id:literal, $verdict:ident, $doc:literal; )*) => {
        /// The class of a refusal or failure, used by the reader and the
        /// pipeline. The synthetic corpus keeps its own list of the public
        /// ids (it shares no code with the reader); `tests/corpus_ids.rs`
        /// checks that every id it emits parses with [`ReasonClass::from_id`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
        pub enum ReasonClass { $( #[doc = $doc] #[serde(rename = $id)] $variant, )* }

        impl ReasonClass {
            pub const ALL: &'static [ReasonClass] = &[ $( ReasonClass::$variant, )* ];
            pub fn id(self) -> &'static str { match self { $( ReasonClass::$variant => $id, )* } }
            /// The verdict a refusal of this class yields.
            pub fn verdict(self) -> VerdictKind { match self { $( ReasonClass::$variant => VerdictKind::$verdict, )* } }
            pub fn from_id(id: &str) -> Option<ReasonClass> {
                match id { $( $id => Some(ReasonClass::$variant), )* _ => None }
            }
        }
    };
}

classes! {
    UnknownField => "unknown-field", Unknown, "A protobuf field the schema does not define, at any depth.";
    UnknownEnum => "unknown-enum", Unknown, "An enum number the schema does not define.";
    InvalidUtf8 => "invalid-utf8", Unknown, "A string field that is not UTF-8.";
    MalformedProtobuf => "malformed-protobuf", Unknown, "Truncated or ill-formed wire data, or trailing garbage.";
    RecursionLimit => "recursion-limit", Unknown, "Messages nested past the depth limit.";
    SizeLimit => "size-limit", Unknown, "A blob or plaintext larger than the reader accepts.";
    UnknownAnyType => "unknown-any-type", Unknown, "An Any whose type URL the schema does not define.";
    BadMapEntry => "bad-map-entry", Unknown, "A malformed, unknown, duplicate or wrongly encoded map entry member, or a duplicate key.";
    SchemaDrift => "schema-drift", Unknown, "Other tables, columns or indexes than agy's, or agy's with another structure as SQLite reports it (type, NOT NULL, default, key, a hidden or generated column, collation, constraint, foreign key, table option; an index's keys, order, uniqueness or predicate).";
    UserVersion => "user-version", Unknown, "A SQLite user_version other than 1.";
    StepFormat => "step-format", Unknown, "A step_format other than 0.";
    IndexGap => "index-gap", Unknown, "Row indices not contiguous from zero.";
    RowShape => "row-shape", Unknown, "A row count or column value outside the qualified shape.";
    RedundantColumn => "redundant-column", Unknown, "A redundant step column that disagrees with the payload.";
    Subtrajectory => "subtrajectory", Unknown, "A decomposed subtrajectory (unsupported).";
    SourceOnlyPlanner50 => "source-only-planner50", Unknown, "CascadePlannerConfig field 50 outside its declared paths or shapes.";
    SourceOnlyPrompt23 => "source-only-prompt23", Unknown, "ChatMessagePrompt field 23 outside its declared path, shape or derivation.";
    LegacyAuthentication => "legacy-authentication", Unknown, "A legacy .pb that does not authenticate under the key.";
    LegacyUnsupportedKey => "legacy-unsupported-key", Unknown, "A legacy .pb read with a key other than agy's fixed format key: unknown keys remain unsupported, so it is never verified.";
    UnqualifiedProjection => "unqualified-projection", Unknown, "A step whose presentation no qualified rule predicts.";
    DaemonUnavailable => "daemon-unavailable", Unknown, "The daemon could not be reached or did not answer usably: the session is not fetched and gets no verdict (see `Outcome::NotFetched`).";
    MissingEvidence => "missing-evidence", Unknown, "A response or attestation needed for a verdict is missing.";
    ProfileChanged => "profile-changed", Unknown, "The attestation was minted under another profile.";
    FullMismatch => "full-mismatch", Incomplete, "The full raw RPC differs from the persisted trajectory.";
    OrdinaryMismatch => "ordinary-mismatch", Incomplete, "The ordinary RPC differs from the projection.";
    SourceChanged => "source-changed", Incomplete, "The source changed during the fetch or since the attestation.";
    PayloadChanged => "payload-changed", Incomplete, "The saved payload changed since the attestation.";
}

impl ReasonClass {
    /// Whether a refusal of this class is found offline, by reading and
    /// projecting the source alone (no daemon answer, no attestation), so
    /// that `audit-qualify` can reproduce it. Every class is named (no
    /// wildcard), so a new class must be decided here.
    pub fn offline(self) -> bool {
        use ReasonClass::*;
        match self {
            UnknownField
            | UnknownEnum
            | InvalidUtf8
            | MalformedProtobuf
            | RecursionLimit
            | SizeLimit
            | UnknownAnyType
            | BadMapEntry
            | SchemaDrift
            | UserVersion
            | StepFormat
            | IndexGap
            | RowShape
            | RedundantColumn
            | Subtrajectory
            | SourceOnlyPlanner50
            | SourceOnlyPrompt23
            | LegacyAuthentication
            | LegacyUnsupportedKey
            | UnqualifiedProjection => true,
            DaemonUnavailable | MissingEvidence | ProfileChanged | FullMismatch
            | OrdinaryMismatch | SourceChanged | PayloadChanged => false,
        }
    }
}

impl fmt::Display for ReasonClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// The public id of what a session's record says (a session's whole outcome,
/// with its refusal or source-only fields, is `outcome::SessionOutcome`):
/// one of the four verdicts, or no verdict at all because the evidence is
/// missing. A not-fetched session (the daemon
/// failed) and an error (the source could not be read) never count as a
/// finished audit: the manifest stays `complete: false` and `--resume`
/// retries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    Verdict(VerdictKind),
    /// The daemon could not be used for this session (no verdict).
    NotFetched,
    /// The source could not be read (I/O, a damaged file).
    Error,
}

impl Outcome {
    /// `verified`, `verified-source-only`, `unknown`, `incomplete`,
    /// `not-fetched` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Verdict(v) => v.as_str(),
            Outcome::NotFetched => "not-fetched",
            Outcome::Error => "error",
        }
    }

    /// Parses an outcome id (the inverse of [`Self::as_str`]), e.g. the
    /// `verdict` member of the synthetic corpus's `.truth/expected.jsonl`.
    pub fn from_id(id: &str) -> Option<Outcome> {
        match id {
            "not-fetched" => Some(Outcome::NotFetched),
            "error" => Some(Outcome::Error),
            v => VerdictKind::from_id(v).map(Outcome::Verdict),
        }
    }
}

/// Why a source is not qualified: a class, the exact location and the rule's wording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    pub class: ReasonClass,
    /// Where: a JSON-style path into the trajectory, or a table/column.
    pub location: String,
    /// What rule was broken, in the specification's words.
    pub detail: String,
    /// Advice said after the location and rule; never part of what a
    /// recheck compares (class, location, rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<Hint>,
}

impl Refusal {
    pub fn new(class: ReasonClass, location: impl Into<String>, detail: impl Into<String>) -> Self {
        Refusal {
            class,
            location: location.into(),
            detail: detail.into(),
            hint: None,
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.location.is_empty() {
            write!(f, "{}", self.detail)?;
        } else {
            write!(f, "{}: {}", self.location, self.detail)?;
        }
        match &self.hint {
            Some(h) => write!(f, "; {h}"),
            None => Ok(()),
        }
    }
}

/// Advice a refusal carries, said after its location and rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Hint {
    /// An `unknown-field` refusal made with the embedded (modeled) schema:
    /// real agy steps carry members no public descriptor declares
    /// (proto/CONFORMANCE.md), which the installed agy's own descriptors do.
    ExtractInstalled,
}

impl fmt::Display for Hint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Hint::ExtractInstalled => write!(
                f,
                "the embedded schema models public descriptors only: `agy-audit schema extract --installed`"
            ),
        }
    }
}

/// Process exit codes, documented in README.md and `--help`.
pub mod exit {
    /// Success: the command did what it was asked; every source qualified.
    pub const OK: i32 = 0;
    /// An error: I/O, a corrupt file, a daemon that could not be used (a
    /// session not fetched), a manifest that is not complete.
    pub const ERROR: i32 = 1;
    /// A usage error (bad flags or arguments).
    pub const USAGE: i32 = 2;
    /// A source was refused as unknown (unsupported representation).
    pub const UNKNOWN: i32 = 3;
    /// A source or attestation is incomplete (mismatch, changed source or payload).
    pub const INCOMPLETE: i32 = 4;
    /// `audit-diff`: a session verified in the old manifest is not verified
    /// (or gone) in the new one, so a CI job can gate a release on it.
    pub const REGRESSED: i32 = 5;
    /// Interrupted (Ctrl-C): a sweep leaves a valid `complete: false`
    /// manifest to continue with `--resume`; a second Ctrl-C aborts at once.
    pub const INTERRUPTED: i32 = 130;
}

#[cfg(test)]
mod tests {
    use super::ReasonClass::{self, *};

    /// A refusal the source alone shows is offline (`audit-qualify`
    /// reproduces it); one that needs a daemon answer, an attestation or a
    /// comparison with a capture is not.
    #[test]
    fn only_what_the_source_alone_shows_is_offline() {
        for c in [
            UnknownField,
            SchemaDrift,
            UserVersion,
            LegacyAuthentication,
            UnqualifiedProjection,
        ] {
            assert!(c.offline(), "{c}");
        }
        let online: [ReasonClass; 7] = [
            DaemonUnavailable,
            MissingEvidence,
            ProfileChanged,
            FullMismatch,
            OrdinaryMismatch,
            SourceChanged,
            PayloadChanged,
        ];
        for c in online {
            assert!(!c.offline(), "{c}");
        }
    }
}
