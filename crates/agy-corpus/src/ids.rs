//! The public ids the truth file speaks: rule ids, reason classes and
//! verdicts, spelled as the reference specification spells them.
//!
//! This is the corpus's own list, not the reader's catalogue: agy-audit
//! parses these ids with its own parsers, and its test
//! `tests/corpus_ids.rs` checks that every id here parses there (with the
//! same verdict per class) and that every rule the reader qualifies appears
//! here, so the two lists cannot drift apart silently.

use serde::Serialize;

macro_rules! rules {
    ($( $variant:ident => $id:literal; )*) => {
        /// A qualified rule of the reference specification, by its public id.
        /// Declared in the specification's catalogue order: the truth file
        /// lists a conversation's rules in this order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        pub enum RuleId { $( #[serde(rename = $id)] $variant, )* }

        impl RuleId {
            /// Every rule the corpus knows, in catalogue order.
            pub const ALL: &'static [RuleId] = &[ $( RuleId::$variant, )* ];

            /// The public kebab-case id (`rules` in `.truth/expected.jsonl`).
            pub fn id(self) -> &'static str { match self { $( RuleId::$variant => $id, )* } }
        }
    };
}

rules! {
    Passthrough => "passthrough";
    EmbeddedNativeStep => "embedded-native-step";
    CanceledCommandStatus => "canceled-command-status";
    PermissionRunCommand => "permission-run-command";
    PermissionViewFile => "permission-view-file";
    ViewFileContentOffset => "view-file-content-offset";
    WriteToFileAppend => "write-to-file-append";
    OuterError => "outer-error";
    FailedGenerateImage => "failed-generate-image";
    EmbeddedImageSuccess => "embedded-image-success";
    FailedListResources => "failed-list-resources";
    CommandBridgeFormatFailure => "command-bridge-format-failure";
    ResultlessFailedBeforeRun => "resultless-failed-before-run";
    ResultlessHookDenied => "resultless-hook-denied";
    MissingToolSummary => "missing-tool-summary";
    ResultlessRejectedPermission => "resultless-rejected-permission";
    ResultlessCanceledPrompt => "resultless-canceled-prompt";
    ResultlessBuiltinViewFile => "resultless-builtin-view-file";
    History2SkillRegistry => "history2-skill-registry";
    PayloadFreeManageTask => "payload-free-manage-task";
    ManageTaskSendInput => "manage-task-send-input";
    PayloadFreeScheduleSubagents => "payload-free-schedule-subagents";
    PayloadFreeListPermissions => "payload-free-list-permissions";
    PayloadFreeAskPermission => "payload-free-ask-permission";
    GenerateImageAny => "generate-image-any";
    ModernRunCommand => "modern-run-command";
    ModernReadFile => "modern-read-file";
    ModernFileEdit => "modern-file-edit";
    ModernInvokeSubagent => "modern-invoke-subagent";
    ModernManageTask => "modern-manage-task";
    ModernSchedule => "modern-schedule";
    ModernPermission1 => "modern-permission1";
    ModernCanceledBackgroundCommand => "modern-canceled-background-command";
    ModernManageSubagentsList => "modern-manage-subagents-list";
    ModernSubagentInheritWorkspace => "modern-subagent-inherit-workspace";
    ModernSkillPath => "modern-skill-path";
    SourceOnlyPlanner50 => "source-only-planner50";
    SourceOnlyPrompt23 => "source-only-prompt23";
    PerToolOutputMap => "per-tool-output-map";
    CustomizationKindMap => "customization-kind-map";
    ModernIde225ReadPermissions => "modern-ide225-read-permissions";
    ModernIde225ByteOffset => "modern-ide225-byte-offset";
    ModernIde225Artifact => "modern-ide225-artifact";
    ModernFinish => "modern-finish";
    ModernMissingFileRead => "modern-missing-file-read";
    ModernReplayWaits => "modern-replay-waits";
    ModernImageRead => "modern-image-read";
}

macro_rules! classes {
    ($( $variant:ident => $id:literal, $verdict:ident; )*) => {
        /// A refusal or failure class the corpus plants, by its public id.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        pub enum ReasonClass { $( #[serde(rename = $id)] $variant, )* }

        impl ReasonClass {
            /// Every class the corpus can emit.
            pub const ALL: &'static [ReasonClass] = &[ $( ReasonClass::$variant, )* ];

            /// The public id (`reasonClass` in `.truth/expected.jsonl`).
            pub fn id(self) -> &'static str { match self { $( ReasonClass::$variant => $id, )* } }

            /// The verdict the specification gives a refusal of this class.
            pub fn verdict(self) -> VerdictKind { match self { $( ReasonClass::$variant => VerdictKind::$verdict, )* } }
        }
    };
}

classes! {
    UnknownField => "unknown-field", Unknown;
    UnknownEnum => "unknown-enum", Unknown;
    InvalidUtf8 => "invalid-utf8", Unknown;
    MalformedProtobuf => "malformed-protobuf", Unknown;
    BadMapEntry => "bad-map-entry", Unknown;
    SchemaDrift => "schema-drift", Unknown;
    UserVersion => "user-version", Unknown;
    StepFormat => "step-format", Unknown;
    IndexGap => "index-gap", Unknown;
    RedundantColumn => "redundant-column", Unknown;
    Subtrajectory => "subtrajectory", Unknown;
    SourceOnlyPlanner50 => "source-only-planner50", Unknown;
    SourceOnlyPrompt23 => "source-only-prompt23", Unknown;
    LegacyAuthentication => "legacy-authentication", Unknown;
    UnqualifiedProjection => "unqualified-projection", Unknown;
    DaemonUnavailable => "daemon-unavailable", Unknown;
    FullMismatch => "full-mismatch", Incomplete;
    OrdinaryMismatch => "ordinary-mismatch", Incomplete;
    SourceChanged => "source-changed", Incomplete;
}

/// The four verdicts of the reference specification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
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
    /// Every verdict.
    pub const ALL: &'static [VerdictKind] = &[
        VerdictKind::Verified,
        VerdictKind::VerifiedSourceOnly,
        VerdictKind::Unknown,
        VerdictKind::Incomplete,
    ];

    /// The public id.
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictKind::Verified => "verified",
            VerdictKind::VerifiedSourceOnly => "verified-source-only",
            VerdictKind::Unknown => "unknown",
            VerdictKind::Incomplete => "incomplete",
        }
    }
}

/// What the truth file expects for a session: a verdict, or `not-fetched`
/// when a planned daemon failure leaves it without one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// A verdict.
    Verdict(VerdictKind),
    /// The daemon could not be used for this session (no verdict).
    NotFetched,
}

impl Outcome {
    /// Every outcome the corpus can expect.
    pub const ALL: &'static [Outcome] = &[
        Outcome::Verdict(VerdictKind::Verified),
        Outcome::Verdict(VerdictKind::VerifiedSourceOnly),
        Outcome::Verdict(VerdictKind::Unknown),
        Outcome::Verdict(VerdictKind::Incomplete),
        Outcome::NotFetched,
    ];

    /// `verified`, `verified-source-only`, `unknown`, `incomplete` or
    /// `not-fetched` (`verdict` in `.truth/expected.jsonl`).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Verdict(v) => v.as_str(),
            Outcome::NotFetched => "not-fetched",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_distinct_kebab_case() {
        // Distinct within each kind (a rule and a class may share an id,
        // e.g. source-only-planner50).
        let rules: Vec<&str> = RuleId::ALL.iter().map(|r| r.id()).collect();
        let classes: Vec<&str> = ReasonClass::ALL.iter().map(|c| c.id()).collect();
        let outcomes: Vec<&str> = Outcome::ALL.iter().map(|o| o.as_str()).collect();
        for kind in [rules, classes, outcomes] {
            let mut seen = HashSet::new();
            for id in kind {
                assert!(seen.insert(id), "{id} twice");
                assert!(
                    id.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                    "{id}"
                );
            }
        }
    }
}
