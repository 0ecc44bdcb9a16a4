//! The catalogue of qualified representation rules: one identifier per rule of
//! the reference specification, with the profile suffix that qualifies it.
//!
//! The projection engine and the `rules` table name rules through [`RuleId`].
//! The synthetic corpus (crates/agy-corpus, the ground truth) keeps its own
//! list of the public ids and shares no code with this one; the reader parses
//! the truth's ids with [`RuleId::from_id`], and `tests/corpus_ids.rs` fails
//! when the two lists drift apart.

use serde::{Deserialize, Serialize};

macro_rules! rules {
    ($( $variant:ident => $id:literal, $suffix:literal, $title:literal; )*) => {
        /// A qualified rule of the reference specification.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum RuleId { $( #[serde(rename = $id)] $variant, )* }

        impl RuleId {
            /// Every rule, in catalogue order.
            pub const ALL: &'static [RuleId] = &[ $( RuleId::$variant, )* ];

            /// The stable kebab-case identifier (ground truth, reports).
            pub fn id(self) -> &'static str { match self { $( RuleId::$variant => $id, )* } }

            /// The profile suffix that qualifies this rule ("" for the base profile).
            pub fn suffix(self) -> &'static str { match self { $( RuleId::$variant => $suffix, )* } }

            /// The rule's name as the specification words it.
            pub fn title(self) -> &'static str { match self { $( RuleId::$variant => $title, )* } }

            /// Looks a rule up by its identifier.
            pub fn from_id(id: &str) -> Option<RuleId> {
                match id { $( $id => Some(RuleId::$variant), )* _ => None }
            }
        }
    };
}

rules! {
    Passthrough => "passthrough", "", "Ordinary steps pass through unchanged";
    EmbeddedNativeStep => "embedded-native-step", "", "Generic wrappers containing recognized run-command, code-action, view-file, or invoke-subagent native Steps";
    CanceledCommandStatus => "canceled-command-status", "", "A run-command wrapper CANCELED over a native ERROR with error details, or a native RUNNING without an error";
    PermissionRunCommand => "permission-run-command", "permission2", "Approved run-command permission record on wrapper and native Step";
    PermissionViewFile => "permission-view-file", "permission2", "Approved view-file permission record on wrapper and native Step";
    ViewFileContentOffset => "view-file-content-offset", "", "A view-file ContentOffset argument";
    WriteToFileAppend => "write-to-file-append", "", "A write_to_file Append argument";
    OuterError => "outer-error", "", "A failed wrapper with status ERROR carrying an outer error over an embedded native Step";
    FailedGenerateImage => "failed-generate-image", "", "A failed generate_image call embedding a native image Step";
    EmbeddedImageSuccess => "embedded-image-success", "", "Successful embedded image Steps";
    FailedListResources => "failed-list-resources", "history2", "A failed list_resources call";
    CommandBridgeFormatFailure => "command-bridge-format-failure", "history2", "A run_command bridge formatting failure";
    ResultlessFailedBeforeRun => "resultless-failed-before-run", "", "A wrapper that failed before its tool ran";
    ResultlessHookDenied => "resultless-hook-denied", "", "A run_command call that a PreToolUse hook denied";
    MissingToolSummary => "missing-tool-summary", "history2", "A resultless run_command or view_file rejected for missing toolSummary";
    ResultlessRejectedPermission => "resultless-rejected-permission", "", "A run_command call whose permission request was rejected";
    ResultlessCanceledPrompt => "resultless-canceled-prompt", "", "A run_command call canceled while its permission prompt was still open";
    ResultlessBuiltinViewFile => "resultless-builtin-view-file", "", "A resultless view_file with status ERROR that records the BUILTIN tool source";
    History2SkillRegistry => "history2-skill-registry", "history2", "The history2 rule derives is_skill_file from an exact-path enabled skill registration";
    PayloadFreeManageTask => "payload-free-manage-task", "", "Payload-free manage_task and send_message steps remain generic";
    ManageTaskSendInput => "manage-task-send-input", "history2", "A payload-free manage_task with Action=send_input";
    PayloadFreeScheduleSubagents => "payload-free-schedule-subagents", "", "Payload-free schedule, manage_subagents, and define_subagent steps";
    PayloadFreeListPermissions => "payload-free-list-permissions", "", "A payload-free list_permissions step";
    PayloadFreeAskPermission => "payload-free-ask-permission", "", "A payload-free ask_permission step";
    GenerateImageAny => "generate-image-any", "", "The generate_image tool's exa.cortex.core.tools.GenerateImage Any becomes a native image step";
    ModernRunCommand => "modern-run-command", "tools143", "RunCommand retains outer metadata and task details and presents the stored result text as command output";
    ModernReadFile => "modern-read-file", "tools143", "ReadFile converts one-based ranges to zero-based VIEW_FILE ranges and keeps the stored result text";
    ModernFileEdit => "modern-file-edit", "tools143", "FileEdit maps CREATE and EDIT results into CODE_ACTION, including empty-file diffs";
    ModernInvokeSubagent => "modern-invoke-subagent", "tools143", "InvokeSubagent preserves the child specifications and results";
    ModernManageTask => "modern-manage-task", "tools143", "ManageTask remains generic, with metadata derived from its payload";
    ModernSchedule => "modern-schedule", "tools143", "Schedule remains generic, with metadata derived from its payload";
    ModernPermission1 => "modern-permission1", "permission1", "The modern 1.4.3 tool mappings refuse wrappers with permission grants or completed interactions";
    ModernCanceledBackgroundCommand => "modern-canceled-background-command", "tools144", "Canceled background run_command steps with render-only results become native command steps";
    ModernManageSubagentsList => "modern-manage-subagents-list", "tools144", "Completed modern ManageSubagents list calls with two conversation IDs remain generic";
    ModernSubagentInheritWorkspace => "modern-subagent-inherit-workspace", "tools144", "Modern subagent invocations also accept Workspace=inherit when the stored arguments match the metadata tool call";
    ModernSkillPath => "modern-skill-path", "skill146", "The skill146 suffix sets a modern read's isSkillFile flag from its stored path alone";
    SourceOnlyPlanner50 => "source-only-planner50", "planner50", "Declared source-only field: CascadePlannerConfig field 50";
    SourceOnlyPrompt23 => "source-only-prompt23", "prompt23", "Declared source-only field: ChatMessagePrompt field 23";
    PerToolOutputMap => "per-tool-output-map", "options145", "The per-tool map is checked before protobuf decoding";
    CustomizationKindMap => "customization-kind-map", "compaction146", "The customization map receives the same strict wire checks as the per-tool map";
    // ---- ide225 / finish147 / replay147 (Antigravity IDE 2.25, agy 1.4.7) ----
    ModernIde225ReadPermissions => "modern-ide225-read-permissions", "ide225", "Completed read_file wrappers retain their permission grants and completed interactions unchanged";
    ModernIde225ByteOffset => "modern-ide225-byte-offset", "ide225", "Reads accept ByteOffset=0, with all arguments repeated in the retained tool call";
    ModernIde225Artifact => "modern-ide225-artifact", "ide225", "Artifact creates and edits retain isArtifactFile; creates also retain the payload's summary, update timestamp and user-facing flag";
    ModernFinish => "modern-finish", "finish147", "Completed Finish calls with a result schema";
    ModernMissingFileRead => "modern-missing-file-read", "finish147", "The same capture qualifies missing-file read wrappers";
    ModernReplayWaits => "modern-replay-waits", "replay147", "Modern RunCommand payloads either omit waits throughout, or copy each stored WaitMsBeforeAsync argument as an unsigned 64-bit integer";
    ModernImageRead => "modern-image-read", "replay147", "Completed image reads with one persisted inline JPEG, PNG or WebP media item";
}

/// The profile suffixes in the order the profile identifier lists them.
pub const SUFFIX_ORDER: &[&str] = &[
    "planner50",
    "permission2",
    "prompt23",
    "tools143",
    "permission1",
    "tools144",
    "skill1",
    "history2",
    "ide225",
    "options145",
    "compaction146",
    "skill146",
    "finish147",
    "replay147",
];

/// Suffixes that stay in the identifier without a rule of their own: the
/// specification keeps `skill1` ("The skill1 suffix derived modern reads'
/// isSkillFile flag from the exact enabled-skill entry ... The skill146
/// suffix replaces that rule"), so it is listed whenever `skill146` is.
pub const RETAINED_SUFFIXES: &[(&str, &str)] = &[("skill1", "skill146")];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_suffixes_are_ordered() {
        for r in RuleId::ALL {
            assert_eq!(RuleId::from_id(r.id()), Some(*r));
            assert!(
                r.suffix().is_empty() || SUFFIX_ORDER.contains(&r.suffix()),
                "{r:?}"
            );
        }
    }
}
