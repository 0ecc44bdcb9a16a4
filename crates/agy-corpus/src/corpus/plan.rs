//! The scenario plan: what each conversation is made of, decided from the
//! seed alone and cheap to compute (no content is built here).
//!
//! The ground truth is derived from this plan and nothing else: a step's
//! recipe names the rule it exercises, a near-miss names its refusal class,
//! a planned daemon fault names its verdict.

use super::rng::Rng;
use crate::ids::RuleId;
use crate::ids::{ReasonClass, VerdictKind};
use crate::sim::fault::{FaultKind, FaultSpec};
use serde::Serialize;
use std::collections::BTreeSet;

/// How the generator is asked to run.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// Number of selected conversations.
    pub conversations: usize,
    /// The seed every choice derives from.
    pub seed: u64,
    /// Fraction of conversations carrying exactly one near-miss.
    pub near_miss_rate: f64,
    /// Fraction of conversations with a planned daemon fault.
    pub fault_rate: f64,
    /// Multiplier on content sizes (1.0 = the default corpus).
    pub scale: f64,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            conversations: 405,
            seed: 1,
            near_miss_rate: 0.1,
            fault_rate: 0.0,
            scale: 1.0,
        }
    }
}

/// A source's storage format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Format {
    /// `conversations/<id>.db`.
    #[serde(rename = "sqlite")]
    Sqlite,
    /// `conversations/<id>.pb` (legacy, encrypted).
    #[serde(rename = "protobuf")]
    Protobuf,
}

/// Which native error an outer-error wrapper embeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum OuterKind {
    /// run_command over a failed RUN_COMMAND.
    RunCommand,
    /// write_to_file over a failed CODE_ACTION.
    CodeAction,
    /// view_file over a failed VIEW_FILE.
    ViewFile,
    /// grep_search over a failed GREP_SEARCH.
    GrepSearch,
    /// An MCP tool over a failed MCP_TOOL.
    McpTool,
    /// read_url_content over a failed READ_URL_CONTENT.
    ReadUrl,
    /// search_web over a failed SEARCH_WEB.
    SearchWeb,
}

/// Tools of the failed-before-run rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum BeforeRunKind {
    /// write_to_file, status ERROR.
    WriteToFile,
    /// write_to_file, status INVALID.
    WriteToFileInvalid,
    /// view_file without a recorded tool source.
    ViewFile,
    /// find_by_name.
    FindByName,
    /// list_dir.
    ListDir,
    /// schedule.
    Schedule,
    /// generate_image with rejected arguments (status INVALID).
    GenerateImageInvalid,
}

/// Payload-free manage_task / send_message shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum TaskKind {
    /// Action=status.
    Status,
    /// Action=list.
    List,
    /// Action=kill.
    Kill,
    /// send_message.
    SendMessage,
    /// A failed manage_task with an outer error.
    Error,
}

/// Modern (agy 1.4.x) tool payload shapes (tools143, tools144, skill146).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ModernKind {
    /// A completed RunCommand payload.
    RunCommand {
        /// Moved to the background (task details, not blocking).
        background: bool,
    },
    /// A canceled background run_command with a render-only result (tools144).
    CanceledBackground,
    /// A completed ReadFile payload.
    ReadFile {
        /// A SKILL.md path (skill146 marks it).
        skill: bool,
        /// StartLine and EndLine given.
        range: bool,
    },
    /// A completed FileEdit CREATE.
    FileCreate {
        /// An empty file: empty diff.
        empty: bool,
    },
    /// A completed FileEdit EDIT.
    FileEdit,
    /// A completed InvokeSubagent payload.
    InvokeSubagent {
        /// Workspace=inherit repeating the tool call (tools144).
        inherit: bool,
    },
    /// A completed single-task ManageTask (0 status, 1 list, 2 kill).
    ManageTask(u8),
    /// A canceled Schedule timer.
    Schedule,
    /// A completed ManageSubagents list with two IDs (tools144).
    ManageSubagentsList,
    // ---- ide225 / finish147 / replay147 (Antigravity IDE 2.25, agy 1.4.7) ----
    /// An IDE 2.25.0 read (ide225).
    Ide225Read {
        /// Both a permission grant and a completed interaction, kept.
        permission: bool,
        /// ByteOffset=0, all arguments repeated in the retained tool call.
        offset: bool,
    },
    /// An IDE 2.25.0 artifact create with its ArtifactMetadata (ide225).
    ArtifactCreate,
    /// An IDE 2.25.0 artifact edit (ide225).
    ArtifactEdit,
    /// A completed Finish call with a result schema (finish147).
    Finish,
    /// A read of a file that was not found (finish147).
    MissingFileRead,
    /// A completed RunCommand whose daemon presentation copies the stored
    /// wait (replay147; the tools143 ones present the omitted form).
    ReplayCopiedWait,
    /// A completed image read (replay147): 0 JPEG, 1 PNG, 2 WebP.
    ImageRead(u8),
}

impl ModernKind {
    /// The rule the step is presented under.
    pub fn rule(self) -> RuleId {
        use ModernKind as M;
        match self {
            M::RunCommand { .. } => RuleId::ModernRunCommand,
            M::CanceledBackground => RuleId::ModernCanceledBackgroundCommand,
            M::ReadFile { .. } => RuleId::ModernReadFile,
            M::FileCreate { .. } | M::FileEdit => RuleId::ModernFileEdit,
            M::InvokeSubagent { .. } => RuleId::ModernInvokeSubagent,
            M::ManageTask(_) => RuleId::ModernManageTask,
            M::Schedule => RuleId::ModernSchedule,
            M::ManageSubagentsList => RuleId::ModernManageSubagentsList,
            M::Ide225Read { .. } => RuleId::ModernReadFile,
            M::ArtifactCreate | M::ArtifactEdit => RuleId::ModernFileEdit,
            M::Finish => RuleId::ModernFinish,
            M::MissingFileRead => RuleId::ModernMissingFileRead,
            M::ReplayCopiedWait => RuleId::ModernRunCommand,
            M::ImageRead(_) => RuleId::ModernImageRead,
        }
    }

    /// Further rules the step's presentation relies on: every modern step
    /// passes the permission1 refusal; reads take skill146's flag.
    pub fn extra_rules(self) -> Vec<RuleId> {
        let mut v = vec![RuleId::ModernPermission1];
        match self {
            ModernKind::ReadFile { .. } => v.push(RuleId::ModernSkillPath),
            ModernKind::InvokeSubagent { inherit: true } => {
                v.push(RuleId::ModernSubagentInheritWorkspace)
            }
            ModernKind::RunCommand { .. } | ModernKind::ReplayCopiedWait => {
                v.push(RuleId::ModernReplayWaits)
            }
            ModernKind::Ide225Read { permission, offset } => {
                v.push(RuleId::ModernSkillPath);
                if permission {
                    v.push(RuleId::ModernIde225ReadPermissions);
                }
                if offset {
                    v.push(RuleId::ModernIde225ByteOffset);
                }
            }
            ModernKind::ArtifactCreate | ModernKind::ArtifactEdit => {
                v.push(RuleId::ModernIde225Artifact)
            }
            ModernKind::ImageRead(_) => v.push(RuleId::ModernSkillPath),
            _ => {}
        }
        v
    }
}

/// The modern steps of the default corpus, one per chosen clean conversation:
/// 70 reads (6 of SKILL.md), 40 commands (5 canceled in the background), 20
/// file edits (8 creates, 2 of them empty), 10 subagent invocations (4 with
/// Workspace=inherit), 9 task calls, 4 canceled timers and 4 subagent lists.
fn modern_steps() -> Vec<ModernKind> {
    use ModernKind as M;
    let mut v = Vec::new();
    for i in 0..64 {
        v.push(M::ReadFile {
            skill: false,
            range: i % 3 != 0,
        });
    }
    for i in 0..6 {
        v.push(M::ReadFile {
            skill: true,
            range: i % 2 == 0,
        });
    }
    for i in 0..35 {
        v.push(M::RunCommand {
            background: i % 5 == 0,
        });
    }
    v.extend([M::CanceledBackground; 5]);
    for i in 0..8 {
        v.push(M::FileCreate { empty: i < 2 });
    }
    v.extend([M::FileEdit; 12]);
    for i in 0..10 {
        v.push(M::InvokeSubagent { inherit: i < 4 });
    }
    for i in 0..9 {
        v.push(M::ManageTask(i % 3));
    }
    v.extend([M::Schedule; 4]);
    v.extend([M::ManageSubagentsList; 4]);
    // ---- ide225 / finish147 / replay147 (Antigravity IDE 2.25, agy 1.4.7) ----
    // Appended, so the steps above keep their conversations: 4 reads keeping
    // both permission records and 10 ByteOffset=0 reads, 7 artifact creates
    // and 6 artifact edits (ide225); 4 Finish calls and 4 missing-file
    // reads (finish147); 6 commands presented with their waits copied (the
    // 35 above present them omitted) and 6 image reads, 2 of each MIME type
    // (replay147).
    for _ in 0..4 {
        v.push(M::Ide225Read {
            permission: true,
            offset: false,
        });
    }
    for _ in 0..10 {
        v.push(M::Ide225Read {
            permission: false,
            offset: true,
        });
    }
    v.extend([M::ArtifactCreate; 7]);
    v.extend([M::ArtifactEdit; 6]);
    v.extend([M::Finish; 4]);
    v.extend([M::MissingFileRead; 4]);
    v.extend([M::ReplayCopiedWait; 6]);
    for i in 0..6 {
        v.push(M::ImageRead(i % 3));
    }
    v
}

/// Wrapper shapes one bound outside a rule (the unqualified-projection near-miss).
///
/// The default corpus holds a conversation of every shape. Three modern
/// refusals have no shape here because no store the strict scan accepts can
/// reach them: an undecodable payload (the scan decodes every Any payload
/// first and refuses it as malformed or invalid UTF-8), and a declaration or
/// presented field missing from the loaded descriptors (a property of the
/// schema, not of the store); `tests/project_modern.rs` covers those three.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum UnqKind {
    /// A hook-denied command with an extra argument.
    HookDeniedExtraArg,
    /// A canceled permission prompt with BypassSandbox.
    CanceledPromptBypass,
    /// list_permissions with an argument.
    ListPermissionsArg,
    /// An approved command whose native step is still RUNNING.
    PermissionNativeRunning,
    /// manage_subagents with an extra result metadata key.
    ManageSubagentsExtraKey,
    /// An outer error over an invoke-subagent native step.
    OuterErrorInvokeSubagent,
    /// write_to_file Append neither true nor false.
    AppendBadValue,
    /// A payload-free step for an unqualified tool.
    UnknownTool,
    /// A schedule step with status INVALID.
    ScheduleInvalid,
    /// A modern read whose path would need URI normalization (`..`).
    ModernReadPath,
    /// A modern command whose payload outcome is FAILED.
    ModernCommandFailed,
    /// A modern file edit with a newly populated payload field (isArtifactFile).
    ModernEditArtifact,
    /// A modern subagent invocation in task mode.
    ModernSubagentTaskMode,
    /// A modern subagent invocation with another workspace selector.
    ModernSubagentWorkspace,
    /// A modern manage_task reporting two tasks.
    ModernTaskTwoTasks,
    /// A modern schedule whose timer was not canceled.
    ModernTimerNotCanceled,
    /// A modern manage_subagents list with three IDs.
    ModernSubagentsThreeIds,
    /// A canceled background command with a 500 ms wait.
    ModernBackgroundWait,
    /// A modern read carrying a permission grant (permission1).
    ModernPermissionGrant,
    /// A modern read payload under the view_file tool name.
    ModernToolName,
    /// A modern read whose one-based range starts at line 0.
    ModernReadRange,
    /// A modern file edit of kind EDIT under write_to_file.
    ModernEditKindMismatch,
    /// A modern manage_task with stored result metadata.
    ModernStoredMetadata,
    /// A modern read wrapper with task details.
    ModernWrapperTaskDetails,
    /// A modern read with an argument outside the qualified names.
    ModernExtraArgument,
    // ---- ide225 / finish147 / replay147 (Antigravity IDE 2.25, agy 1.4.7) ----
    /// An ide225 read with ByteOffset 512.
    Ide225OffsetNonzero,
    /// An ide225 ByteOffset=0 read whose retained tool call lacks an argument.
    Ide225OffsetNotRepeated,
    /// An artifact create with metadata but no isArtifactFile flag.
    Ide225ArtifactNoFlag,
    /// An artifact edit carrying artifact metadata.
    Ide225EditMetadata,
    /// An artifact create whose ArtifactMetadata argument has an extra member.
    Ide225MetadataField,
    /// An artifact create with RequestFeedback true.
    Ide225RequestFeedback,
    /// An artifact create whose argument's Summary differs from the payload's.
    Ide225MetadataMismatch,
    /// A modern read with a completed interaction but no grant.
    Ide225InteractionAlone,
    /// A Finish call without a result schema.
    FinishNoSchema,
    /// A Finish call whose result differs from its arguments.
    FinishResultMismatch,
    /// A missing-file read whose payload also has content.
    MissingFileContent,
    /// An image read with line-range arguments.
    ImageReadRange,
    /// An image read with two media items.
    ImageReadTwoMedia,
    /// An image read of a GIF.
    ImageReadGif,
    /// An image read whose media has an external URI.
    ImageReadExternalUri,
    /// An image read whose result text names another MIME type.
    ImageReadTextMime,
    /// An image read whose byte count differs from the media's length.
    ImageReadByteCount,
    /// An image read carrying both permission records.
    ImageReadPermission,
    /// A modern command whose WaitMsBeforeAsync is not a canonical decimal.
    ReplayWaitNoncanonical,
}

impl UnqKind {
    /// Every shape, in the order the unqualified-projection class cycles.
    pub const ALL: &'static [UnqKind] = &[
        UnqKind::HookDeniedExtraArg,
        UnqKind::CanceledPromptBypass,
        UnqKind::ListPermissionsArg,
        UnqKind::PermissionNativeRunning,
        UnqKind::ManageSubagentsExtraKey,
        UnqKind::OuterErrorInvokeSubagent,
        UnqKind::AppendBadValue,
        UnqKind::UnknownTool,
        UnqKind::ScheduleInvalid,
        UnqKind::ModernReadPath,
        UnqKind::ModernCommandFailed,
        UnqKind::ModernEditArtifact,
        UnqKind::ModernSubagentTaskMode,
        UnqKind::ModernSubagentWorkspace,
        UnqKind::ModernTaskTwoTasks,
        UnqKind::ModernTimerNotCanceled,
        UnqKind::ModernSubagentsThreeIds,
        UnqKind::ModernBackgroundWait,
        UnqKind::ModernPermissionGrant,
        UnqKind::ModernToolName,
        UnqKind::ModernReadRange,
        UnqKind::ModernEditKindMismatch,
        UnqKind::ModernStoredMetadata,
        UnqKind::ModernWrapperTaskDetails,
        UnqKind::ModernExtraArgument,
        // ---- ide225 / finish147 / replay147 (Antigravity IDE 2.25, agy 1.4.7) ----
        UnqKind::Ide225OffsetNonzero,
        UnqKind::Ide225OffsetNotRepeated,
        UnqKind::Ide225ArtifactNoFlag,
        UnqKind::Ide225EditMetadata,
        UnqKind::Ide225MetadataField,
        UnqKind::Ide225RequestFeedback,
        UnqKind::Ide225MetadataMismatch,
        UnqKind::Ide225InteractionAlone,
        UnqKind::FinishNoSchema,
        UnqKind::FinishResultMismatch,
        UnqKind::MissingFileContent,
        UnqKind::ImageReadRange,
        UnqKind::ImageReadTwoMedia,
        UnqKind::ImageReadGif,
        UnqKind::ImageReadExternalUri,
        UnqKind::ImageReadTextMime,
        UnqKind::ImageReadByteCount,
        UnqKind::ImageReadPermission,
        UnqKind::ReplayWaitNoncanonical,
    ];

    /// The rule whose bounds the shape falls outside of.
    pub fn rule(self) -> RuleId {
        match self {
            UnqKind::HookDeniedExtraArg => RuleId::ResultlessHookDenied,
            UnqKind::CanceledPromptBypass => RuleId::ResultlessCanceledPrompt,
            UnqKind::ListPermissionsArg => RuleId::PayloadFreeListPermissions,
            UnqKind::PermissionNativeRunning => RuleId::PermissionRunCommand,
            UnqKind::ManageSubagentsExtraKey => RuleId::PayloadFreeScheduleSubagents,
            UnqKind::OuterErrorInvokeSubagent => RuleId::OuterError,
            UnqKind::AppendBadValue => RuleId::WriteToFileAppend,
            UnqKind::UnknownTool => RuleId::PayloadFreeManageTask,
            UnqKind::ScheduleInvalid => RuleId::PayloadFreeScheduleSubagents,
            UnqKind::ModernReadPath => RuleId::ModernReadFile,
            UnqKind::ModernCommandFailed => RuleId::ModernRunCommand,
            UnqKind::ModernEditArtifact => RuleId::ModernFileEdit,
            UnqKind::ModernSubagentTaskMode => RuleId::ModernInvokeSubagent,
            UnqKind::ModernSubagentWorkspace => RuleId::ModernSubagentInheritWorkspace,
            UnqKind::ModernTaskTwoTasks => RuleId::ModernManageTask,
            UnqKind::ModernTimerNotCanceled => RuleId::ModernSchedule,
            UnqKind::ModernSubagentsThreeIds => RuleId::ModernManageSubagentsList,
            UnqKind::ModernBackgroundWait => RuleId::ModernCanceledBackgroundCommand,
            UnqKind::ModernPermissionGrant => RuleId::ModernPermission1,
            UnqKind::ModernToolName
            | UnqKind::ModernReadRange
            | UnqKind::ModernWrapperTaskDetails
            | UnqKind::ModernExtraArgument => RuleId::ModernReadFile,
            UnqKind::ModernEditKindMismatch => RuleId::ModernFileEdit,
            UnqKind::ModernStoredMetadata => RuleId::ModernManageTask,
            // ---- ide225 / finish147 / replay147 (Antigravity IDE 2.25, agy 1.4.7) ----
            UnqKind::Ide225OffsetNonzero => RuleId::ModernIde225ByteOffset,
            UnqKind::Ide225OffsetNotRepeated => RuleId::ModernIde225ByteOffset,
            UnqKind::Ide225ArtifactNoFlag => RuleId::ModernIde225Artifact,
            UnqKind::Ide225EditMetadata => RuleId::ModernIde225Artifact,
            UnqKind::Ide225MetadataField => RuleId::ModernIde225Artifact,
            UnqKind::Ide225RequestFeedback => RuleId::ModernIde225Artifact,
            UnqKind::Ide225MetadataMismatch => RuleId::ModernIde225Artifact,
            UnqKind::Ide225InteractionAlone => RuleId::ModernPermission1,
            UnqKind::FinishNoSchema => RuleId::ModernFinish,
            UnqKind::FinishResultMismatch => RuleId::ModernFinish,
            UnqKind::MissingFileContent => RuleId::ModernMissingFileRead,
            UnqKind::ImageReadRange => RuleId::ModernImageRead,
            UnqKind::ImageReadTwoMedia => RuleId::ModernImageRead,
            UnqKind::ImageReadGif => RuleId::ModernImageRead,
            UnqKind::ImageReadExternalUri => RuleId::ModernImageRead,
            UnqKind::ImageReadTextMime => RuleId::ModernImageRead,
            UnqKind::ImageReadByteCount => RuleId::ModernImageRead,
            UnqKind::ImageReadPermission => RuleId::ModernPermission1,
            UnqKind::ReplayWaitNoncanonical => RuleId::ModernRunCommand,
        }
    }
}

/// How one tool step is stored and presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Recipe {
    /// A top-level VIEW_FILE step (legacy native).
    NativeViewFile,
    /// A top-level RUN_COMMAND step.
    NativeRunCommand,
    /// A top-level CODE_ACTION step.
    NativeCodeAction,
    /// A top-level GREP_SEARCH step; `prompt23` marks the field-23 source.
    NativeGrep {
        /// match_per_line.
        per_line: bool,
        /// A tool-result prompt carries field 23 derived from this step.
        prompt23: bool,
    },
    /// A top-level LIST_DIRECTORY step.
    NativeListDir,
    /// A top-level MCP_TOOL step.
    NativeMcp,
    /// A top-level SEARCH_WEB step.
    NativeSearchWeb,
    /// A top-level READ_URL_CONTENT step.
    NativeReadUrl,
    /// A top-level FIND step (find_by_name).
    NativeFind,
    /// A top-level COMMAND_STATUS step (command_status).
    NativeCommandStatus,
    /// A completed run_command wrapper over its native step.
    RunCommand {
        /// Moved to the background: outer task details.
        background: bool,
        /// Carries the conversation's large output.
        big: bool,
    },
    /// A completed view_file wrapper.
    ViewFile,
    /// A completed write_to_file (create) or replace_file_content (edit) wrapper.
    CodeAction {
        /// CREATE rather than EDIT.
        create: bool,
    },
    /// A completed invoke_subagent wrapper listing the children.
    InvokeSubagent,
    /// A canceled run_command wrapper.
    CanceledCommand {
        /// Over a native ERROR with error details (else a native RUNNING).
        native_error: bool,
    },
    /// An approved run_command permission (both copies).
    PermissionCommand,
    /// An approved view_file permission (both copies).
    PermissionView,
    /// view_file with ContentOffset.
    ContentOffset,
    /// write_to_file with Append.
    WriteAppend {
        /// The Append value.
        value: bool,
    },
    /// An outer error over a failed native step.
    OuterError(OuterKind),
    /// A failed generate_image over a native image step.
    FailedImage,
    /// A successful generate_image over a native image step.
    ImageSuccess,
    /// A failed list_resources.
    FailedListResources,
    /// A run_command bridge formatting failure.
    BridgeFailure,
    /// A wrapper that failed before its tool ran.
    FailedBeforeRun(BeforeRunKind),
    /// A run_command denied by a PreToolUse hook.
    HookDenied,
    /// A call rejected for missing toolSummary.
    MissingToolSummary {
        /// view_file rather than run_command.
        read: bool,
    },
    /// A run_command whose permission request was rejected.
    RejectedPermission {
        /// The headless child shape (BypassSandbox "false").
        headless: bool,
    },
    /// A run_command canceled while its permission prompt was open.
    CanceledPrompt,
    /// A resultless BUILTIN view_file rejected before running.
    BuiltinViewFile {
        /// StartLine and EndLine given.
        lines: bool,
        /// A registered skill file (history2 marks it).
        skill: bool,
    },
    /// Payload-free manage_task / send_message.
    ManageTask(TaskKind),
    /// manage_task Action=send_input.
    SendInput,
    /// Payload-free schedule.
    Schedule {
        /// With outer task details.
        task_details: bool,
    },
    /// A failed schedule with an outer error.
    ScheduleError,
    /// Payload-free manage_subagents.
    ManageSubagents,
    /// Payload-free define_subagent.
    DefineSubagent {
        /// The `definition` argument alone.
        definition: bool,
    },
    /// Payload-free list_permissions.
    ListPermissions,
    /// Payload-free ask_permission.
    AskPermission,
    /// generate_image with a GenerateImage Any.
    GenerateImageAny,
    /// A modern (agy 1.4.x) tool payload step.
    Modern(ModernKind),
    /// A near-miss shape (refused).
    Unqualified(UnqKind),
}

impl Recipe {
    /// The rule this step is presented under (for a near-miss shape, the rule
    /// it falls outside of).
    pub fn rule(self) -> RuleId {
        use Recipe::*;
        match self {
            NativeViewFile
            | NativeRunCommand
            | NativeCodeAction
            | NativeGrep { .. }
            | NativeListDir
            | NativeMcp
            | NativeSearchWeb
            | NativeReadUrl
            | NativeFind
            | NativeCommandStatus => RuleId::Passthrough,
            RunCommand { .. } | ViewFile | CodeAction { .. } | InvokeSubagent => {
                RuleId::EmbeddedNativeStep
            }
            CanceledCommand { .. } => RuleId::CanceledCommandStatus,
            PermissionCommand => RuleId::PermissionRunCommand,
            PermissionView => RuleId::PermissionViewFile,
            ContentOffset => RuleId::ViewFileContentOffset,
            WriteAppend { .. } => RuleId::WriteToFileAppend,
            OuterError(_) => RuleId::OuterError,
            FailedImage => RuleId::FailedGenerateImage,
            ImageSuccess => RuleId::EmbeddedImageSuccess,
            FailedListResources => RuleId::FailedListResources,
            BridgeFailure => RuleId::CommandBridgeFormatFailure,
            FailedBeforeRun(_) => RuleId::ResultlessFailedBeforeRun,
            HookDenied => RuleId::ResultlessHookDenied,
            MissingToolSummary { .. } => RuleId::MissingToolSummary,
            RejectedPermission { .. } => RuleId::ResultlessRejectedPermission,
            CanceledPrompt => RuleId::ResultlessCanceledPrompt,
            BuiltinViewFile { skill: true, .. } => RuleId::History2SkillRegistry,
            BuiltinViewFile { .. } => RuleId::ResultlessBuiltinViewFile,
            ManageTask(_) => RuleId::PayloadFreeManageTask,
            SendInput => RuleId::ManageTaskSendInput,
            Schedule { .. } | ScheduleError | ManageSubagents | DefineSubagent { .. } => {
                RuleId::PayloadFreeScheduleSubagents
            }
            ListPermissions => RuleId::PayloadFreeListPermissions,
            AskPermission => RuleId::PayloadFreeAskPermission,
            GenerateImageAny => RuleId::GenerateImageAny,
            Modern(m) => m.rule(),
            Unqualified(k) => k.rule(),
        }
    }

    /// Whether the step carries a render card (steps.render_info).
    pub fn has_render_info(self) -> bool {
        use Recipe::*;
        matches!(
            self,
            ManageTask(_)
                | SendInput
                | Schedule { .. }
                | ScheduleError
                | ManageSubagents
                | DefineSubagent { .. }
                | ListPermissions
                | AskPermission
                | Modern(
                    ModernKind::CanceledBackground
                        | ModernKind::ManageTask(_)
                        | ModernKind::Schedule
                        | ModernKind::ManageSubagentsList
                )
        )
    }
}

/// One step of a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum StepKind {
    /// USER_INPUT: starts a turn (an execution).
    UserInput,
    /// PLANNER_RESPONSE, with one tool call when a tool step follows.
    Planner {
        /// A tool step follows.
        tool_call: bool,
    },
    /// SYSTEM_MESSAGE.
    SystemMessage,
    /// CHECKPOINT.
    Checkpoint,
    /// ERROR_MESSAGE.
    ErrorMessage,
    /// EPHEMERAL_MESSAGE: a reminder the executor shows the model.
    EphemeralMessage,
    /// CONVERSATION_HISTORY: the earlier conversation a resumed one carries.
    ConversationHistory,
    /// A tool step.
    Tool(Recipe),
}

impl StepKind {
    /// The rule the step is presented under.
    pub fn rule(self) -> RuleId {
        match self {
            StepKind::Tool(r) => r.rule(),
            _ => RuleId::Passthrough,
        }
    }
}

/// Where an unknown field is placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum UnknownFieldAt {
    /// A step's top level.
    StepTop,
    /// A step's metadata (and so its metadata column).
    StepMetadata,
    /// A wrapper's generic result.
    GenericResult,
    /// The native Step inside a wrapper's Any.
    EmbeddedStep,
    /// A chat prompt in generator metadata.
    GenPrompt,
    /// An executor's checkpoint configuration.
    ExecConfig,
    /// The trajectory metadata blob.
    TrajectoryMetadata,
}

/// Where an unknown enum number is placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum UnknownEnumAt {
    /// A step's status (column and payload agree).
    StepStatus,
    /// A status transition in a step's metadata.
    Transition,
    /// A metadata source.
    MetadataSource,
}

/// A malformed map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum MapFault {
    /// A per_tool key repeated within one ToolOutputConfig.
    DuplicateKey,
    /// A per_tool key repeated across two occurrences of the singular tool_output.
    SplitDuplicate,
    /// A per_tool entry with an unknown member.
    UnknownMember,
    /// A per_tool key encoded with the wrong wire type.
    WrongWireType,
    /// A kind_enablement key repeated.
    KindDuplicate,
}

/// A redundant column that disagrees with the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ColumnFault {
    /// status column ≠ payload status.
    Status,
    /// step_type column ≠ payload type.
    StepType,
    /// render_info NULL though the payload has one.
    RenderInfoMissing,
    /// render_info set though the payload has none.
    RenderInfoExtra,
    /// metadata column differs from the payload's metadata.
    Metadata,
    /// error_details NULL though the payload has an error.
    ErrorDetails,
}

/// A gap in row indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum GapKind {
    /// One idx skipped in the middle.
    Middle,
    /// Indices start at 1.
    StartAtOne,
}

/// Schema drift.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum DriftKind {
    /// An extra column on steps.
    ExtraColumn,
    /// An extra table.
    ExtraTable,
    /// An extra index.
    ExtraIndex,
}

/// Field 50 outside its declared paths or shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Planner50Fault {
    /// At ExecutorMetadata.request_override_config.planner_config.
    RequestOverride,
    /// A nonzero varint payload.
    NonzeroPayload,
    /// Fields 4 then 2.
    WrongOrder,
    /// Twice in one message.
    Twice,
    /// Wire type varint instead of length-delimited.
    WireTypeVarint,
    /// In an agent definition's planner inside a planner.
    NestedAgentDefinition,
}

/// Field 23 with a bad shape or derivation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Prompt23Fault {
    /// line_number not result line_number + 1.
    WrongLineNumber,
    /// One result missing from the list.
    WrongCount,
    /// On a prompt that is not a tool result.
    NotToolPrompt,
    /// num_elided_results missing although total_results exceeds the results.
    MissingElided,
    /// step_idx names a step that is not the GREP_SEARCH.
    WrongStep,
}

/// Ill-formed wire data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum MalformedAt {
    /// Trailing garbage on a step payload.
    StepPayload,
    /// Trailing garbage on a gen_metadata row.
    GenMetadata,
    /// A truncated trajectory metadata blob.
    TrajectoryMetadata,
}

/// A legacy file that does not authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum AuthFault {
    /// A flipped tag byte.
    TagByte,
    /// A flipped ciphertext byte.
    CiphertextByte,
}

/// Exactly one deliberate near-miss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum NearMiss {
    /// unknown-field.
    UnknownField(UnknownFieldAt),
    /// unknown-enum.
    UnknownEnum(UnknownEnumAt),
    /// bad-map-entry.
    BadMapEntry(MapFault),
    /// redundant-column.
    RedundantColumn(ColumnFault),
    /// index-gap.
    IndexGap(GapKind),
    /// step-format (one row with step_format 1).
    StepFormat,
    /// user-version.
    UserVersion(i64),
    /// schema-drift.
    SchemaDrift(DriftKind),
    /// subtrajectory.
    Subtrajectory,
    /// source-only-planner50.
    Planner50(Planner50Fault),
    /// source-only-prompt23.
    Prompt23(Prompt23Fault),
    /// invalid-utf8.
    InvalidUtf8,
    /// malformed-protobuf.
    Malformed(MalformedAt),
    /// unqualified-projection.
    Unqualified(UnqKind),
    /// legacy-authentication.
    LegacyAuth(AuthFault),
}

/// The refusal classes near-misses cycle through, in order.
pub const NEAR_MISS_CLASSES: &[ReasonClass] = &[
    ReasonClass::UnknownField,
    ReasonClass::UnknownEnum,
    ReasonClass::BadMapEntry,
    ReasonClass::RedundantColumn,
    ReasonClass::IndexGap,
    ReasonClass::StepFormat,
    ReasonClass::UserVersion,
    ReasonClass::SchemaDrift,
    ReasonClass::Subtrajectory,
    ReasonClass::SourceOnlyPlanner50,
    ReasonClass::SourceOnlyPrompt23,
    ReasonClass::InvalidUtf8,
    ReasonClass::MalformedProtobuf,
    ReasonClass::UnqualifiedProjection,
    ReasonClass::LegacyAuthentication,
];

impl NearMiss {
    /// The `variant`-th near-miss of `class` (cycling).
    pub fn of(class: ReasonClass, variant: usize) -> Option<NearMiss> {
        fn at<T: Copy>(v: &[T], i: usize) -> T {
            v[i % v.len()]
        }
        use NearMiss as N;
        Some(match class {
            ReasonClass::UnknownField => N::UnknownField(at(
                &[
                    UnknownFieldAt::StepMetadata,
                    UnknownFieldAt::GenericResult,
                    UnknownFieldAt::EmbeddedStep,
                    UnknownFieldAt::GenPrompt,
                    UnknownFieldAt::StepTop,
                    UnknownFieldAt::ExecConfig,
                    UnknownFieldAt::TrajectoryMetadata,
                ],
                variant,
            )),
            ReasonClass::UnknownEnum => N::UnknownEnum(at(
                &[
                    UnknownEnumAt::StepStatus,
                    UnknownEnumAt::Transition,
                    UnknownEnumAt::MetadataSource,
                ],
                variant,
            )),
            ReasonClass::BadMapEntry => N::BadMapEntry(at(
                &[
                    MapFault::DuplicateKey,
                    MapFault::SplitDuplicate,
                    MapFault::UnknownMember,
                    MapFault::KindDuplicate,
                    MapFault::WrongWireType,
                ],
                variant,
            )),
            ReasonClass::RedundantColumn => N::RedundantColumn(at(
                &[
                    ColumnFault::Status,
                    ColumnFault::RenderInfoMissing,
                    ColumnFault::Metadata,
                    ColumnFault::RenderInfoExtra,
                    ColumnFault::StepType,
                    ColumnFault::ErrorDetails,
                ],
                variant,
            )),
            ReasonClass::IndexGap => {
                N::IndexGap(at(&[GapKind::Middle, GapKind::StartAtOne], variant))
            }
            ReasonClass::StepFormat => N::StepFormat,
            ReasonClass::UserVersion => N::UserVersion(at(&[2, 0], variant)),
            ReasonClass::SchemaDrift => N::SchemaDrift(at(
                &[
                    DriftKind::ExtraColumn,
                    DriftKind::ExtraTable,
                    DriftKind::ExtraIndex,
                ],
                variant,
            )),
            ReasonClass::Subtrajectory => N::Subtrajectory,
            ReasonClass::SourceOnlyPlanner50 => N::Planner50(at(
                &[
                    Planner50Fault::RequestOverride,
                    Planner50Fault::NonzeroPayload,
                    Planner50Fault::WrongOrder,
                    Planner50Fault::Twice,
                    Planner50Fault::WireTypeVarint,
                    Planner50Fault::NestedAgentDefinition,
                ],
                variant,
            )),
            ReasonClass::SourceOnlyPrompt23 => N::Prompt23(at(
                &[
                    Prompt23Fault::WrongLineNumber,
                    Prompt23Fault::WrongCount,
                    Prompt23Fault::NotToolPrompt,
                    Prompt23Fault::MissingElided,
                    Prompt23Fault::WrongStep,
                ],
                variant,
            )),
            ReasonClass::InvalidUtf8 => N::InvalidUtf8,
            ReasonClass::MalformedProtobuf => N::Malformed(at(
                &[
                    MalformedAt::StepPayload,
                    MalformedAt::GenMetadata,
                    MalformedAt::TrajectoryMetadata,
                ],
                variant,
            )),
            ReasonClass::UnqualifiedProjection => N::Unqualified(at(UnqKind::ALL, variant)),
            ReasonClass::LegacyAuthentication => N::LegacyAuth(at(
                &[AuthFault::TagByte, AuthFault::CiphertextByte],
                variant,
            )),
            _ => return None,
        })
    }

    /// The refusal class a reader should report.
    pub fn class(self) -> ReasonClass {
        match self {
            NearMiss::UnknownField(_) => ReasonClass::UnknownField,
            NearMiss::UnknownEnum(_) => ReasonClass::UnknownEnum,
            NearMiss::BadMapEntry(_) => ReasonClass::BadMapEntry,
            NearMiss::RedundantColumn(_) => ReasonClass::RedundantColumn,
            NearMiss::IndexGap(_) => ReasonClass::IndexGap,
            NearMiss::StepFormat => ReasonClass::StepFormat,
            NearMiss::UserVersion(_) => ReasonClass::UserVersion,
            NearMiss::SchemaDrift(_) => ReasonClass::SchemaDrift,
            NearMiss::Subtrajectory => ReasonClass::Subtrajectory,
            NearMiss::Planner50(_) => ReasonClass::SourceOnlyPlanner50,
            NearMiss::Prompt23(_) => ReasonClass::SourceOnlyPrompt23,
            NearMiss::InvalidUtf8 => ReasonClass::InvalidUtf8,
            NearMiss::Malformed(_) => ReasonClass::MalformedProtobuf,
            NearMiss::Unqualified(_) => ReasonClass::UnqualifiedProjection,
            NearMiss::LegacyAuth(_) => ReasonClass::LegacyAuthentication,
        }
    }

    /// The format the near-miss needs.
    pub fn format(self) -> Format {
        match self {
            NearMiss::LegacyAuth(_) => Format::Protobuf,
            _ => Format::Sqlite,
        }
    }

    /// A short description for the truth file's `fault` member.
    pub fn describe(self) -> String {
        let detail = match self {
            NearMiss::UnknownField(a) => format!("{a:?}"),
            NearMiss::UnknownEnum(a) => format!("{a:?}"),
            NearMiss::BadMapEntry(a) => format!("{a:?}"),
            NearMiss::RedundantColumn(a) => format!("{a:?}"),
            NearMiss::IndexGap(a) => format!("{a:?}"),
            NearMiss::StepFormat => "StepFormat1".into(),
            NearMiss::UserVersion(v) => format!("UserVersion{v}"),
            NearMiss::SchemaDrift(a) => format!("{a:?}"),
            NearMiss::Subtrajectory => "Subtrajectory".into(),
            NearMiss::Planner50(a) => format!("{a:?}"),
            NearMiss::Prompt23(a) => format!("{a:?}"),
            NearMiss::InvalidUtf8 => "SystemMessage".into(),
            NearMiss::Malformed(a) => format!("{a:?}"),
            NearMiss::Unqualified(k) => format!("{}:{k:?}", k.rule().id()),
            NearMiss::LegacyAuth(a) => format!("{a:?}"),
        };
        format!("near-miss:{}:{detail}", self.class().id())
    }
}

/// An accepted field-50 occurrence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Planner50Site {
    /// generator_metadata[i].planner_config.
    Gen(usize),
    /// executor_metadatas[i].cascade_config.planner_config.
    Exec(usize),
}

/// One conversation of the corpus.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConvPlan {
    /// Position in the corpus.
    pub index: usize,
    /// Conversation id = file stem = cascade_id.
    pub id: String,
    /// trajectory_meta.trajectory_id (a different UUID).
    pub trajectory_id: String,
    /// Storage format.
    pub format: Format,
    /// A shadowed legacy `.pb` of the same id sits beside the `.db`.
    pub also_pb: bool,
    /// The steps, in idx order.
    pub steps: Vec<StepKind>,
    /// Accepted field-50 occurrences, with their payload shape (0..4).
    pub planner50: Vec<(Planner50Site, u8)>,
    /// Carries per_tool output limits.
    pub per_tool_map: bool,
    /// Carries the kind_enablement map.
    pub kind_map: bool,
    /// The near-miss, if any.
    pub near_miss: Option<NearMiss>,
    /// A planned daemon fault, if any.
    #[serde(serialize_with = "ser_fault")]
    pub fault: Option<FaultKind>,
    /// Steps written as uncheckpointed WAL transactions (0: none).
    pub wal_tail: usize,
    /// The parent conversation and nesting depth of a subagent child.
    pub parent: Option<(String, u32)>,
    /// The root of the conversation tree.
    pub root: String,
    /// Subagent children this conversation invokes.
    pub children: Vec<String>,
    /// Carries a FORK parent reference.
    pub fork_ref: bool,
    /// Size of the large command output (0: none).
    pub big_output: usize,
    /// Content size multiplier.
    pub scale: f64,
}

fn ser_fault<S: serde::Serializer>(f: &Option<FaultKind>, s: S) -> Result<S::Ok, S::Error> {
    match f {
        Some(k) => s.serialize_some(&k.to_string()),
        None => s.serialize_none(),
    }
}

impl ConvPlan {
    /// A clean, standalone SQLite conversation: no near-miss, no fault, not
    /// shadowed by a legacy `.pb`, outside any subagent tree, no fork, its
    /// own root. The conversations the next release and a home's subagent
    /// families may derive from (each adds its own conditions).
    pub fn clean_standalone_sqlite(&self) -> bool {
        self.near_miss.is_none()
            && self.fault.is_none()
            && self.format == Format::Sqlite
            && !self.also_pb
            && self.parent.is_none()
            && self.children.is_empty()
            && !self.fork_ref
            && self.root == self.id
    }

    /// `trajectory_meta.source` and the trajectory's field 7: 1 (IDE) for a
    /// conversation holding an Antigravity IDE 2.25 file tool step (the
    /// ide225 reads and artifact writes, or a near-miss of one), 17 (CLI)
    /// otherwise: the public format facts record that only this value
    /// differs between an IDE and a CLI store.
    pub fn trajectory_source(&self) -> u64 {
        let ide = self.steps.iter().any(|s| {
            matches!(
                s,
                StepKind::Tool(Recipe::Modern(
                    ModernKind::Ide225Read { .. }
                        | ModernKind::ArtifactCreate
                        | ModernKind::ArtifactEdit
                )) | StepKind::Tool(Recipe::Unqualified(
                    UnqKind::Ide225OffsetNonzero
                        | UnqKind::Ide225OffsetNotRepeated
                        | UnqKind::Ide225ArtifactNoFlag
                        | UnqKind::Ide225EditMetadata
                        | UnqKind::Ide225MetadataField
                        | UnqKind::Ide225RequestFeedback
                        | UnqKind::Ide225MetadataMismatch
                        | UnqKind::Ide225InteractionAlone
                ))
            )
        });
        if ide {
            1
        } else {
            17
        }
    }

    /// Whether the source carries an accepted declared source-only field.
    pub fn source_only(&self) -> bool {
        !self.planner50.is_empty() || self.prompt23_steps().next().is_some()
    }

    /// Indices of the GREP_SEARCH steps a field-23 prompt is derived from.
    pub fn prompt23_steps(&self) -> impl Iterator<Item = usize> + '_ {
        self.steps.iter().enumerate().filter_map(|(i, s)| match s {
            StepKind::Tool(Recipe::NativeGrep { prompt23: true, .. }) => Some(i),
            _ => None,
        })
    }

    /// Indices of the planner steps (one gen_metadata row each, in order).
    pub fn gen_steps(&self) -> Vec<usize> {
        self.steps
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, StepKind::Planner { .. }))
            .map(|(i, _)| i)
            .collect()
    }

    /// (first, last) step of every turn (one executor_metadata row each).
    pub fn turns(&self) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> = Vec::new();
        for (i, s) in self.steps.iter().enumerate() {
            if matches!(s, StepKind::UserInput) || out.is_empty() {
                out.push((i, i));
            } else if let Some(last) = out.last_mut() {
                last.1 = i;
            }
        }
        out
    }

    /// The rules exercised in accepted shape, sorted.
    pub fn rules(&self) -> Vec<RuleId> {
        let mut set = BTreeSet::new();
        for s in &self.steps {
            if !matches!(s, StepKind::Tool(Recipe::Unqualified(_))) {
                set.insert(s.rule());
            }
            if let StepKind::Tool(Recipe::Modern(m)) = s {
                set.extend(m.extra_rules());
            }
        }
        if !self.planner50.is_empty() {
            set.insert(RuleId::SourceOnlyPlanner50);
        }
        let prompt23_ok = !matches!(self.near_miss, Some(NearMiss::Prompt23(_)));
        if prompt23_ok && self.prompt23_steps().next().is_some() {
            set.insert(RuleId::SourceOnlyPrompt23);
        }
        let map_ok = !matches!(self.near_miss, Some(NearMiss::BadMapEntry(_)));
        if self.per_tool_map && map_ok {
            set.insert(RuleId::PerToolOutputMap);
        }
        if self.kind_map && map_ok {
            set.insert(RuleId::CustomizationKindMap);
        }
        set.into_iter().collect()
    }

    /// The expected record: a verdict, or `not-fetched` for a planned daemon
    /// failure (class `daemon-unavailable` mints no verdict).
    pub fn expected_outcome(&self) -> crate::ids::Outcome {
        match self.expected() {
            (_, Some(ReasonClass::DaemonUnavailable)) => crate::ids::Outcome::NotFetched,
            (v, _) => crate::ids::Outcome::Verdict(v),
        }
    }

    /// The expected verdict and reason class (see [`Self::expected_outcome`]
    /// for daemon failures, which mint no verdict).
    pub fn expected(&self) -> (VerdictKind, Option<ReasonClass>) {
        if let Some(n) = self.near_miss {
            return (n.class().verdict(), Some(n.class()));
        }
        if let Some((v, c)) = self.fault.and_then(FaultKind::expected) {
            return (v, Some(c));
        }
        if self.source_only() {
            (VerdictKind::VerifiedSourceOnly, None)
        } else {
            (VerdictKind::Verified, None)
        }
    }

    /// The truth file's `fault` member.
    pub fn fault_text(&self) -> Option<String> {
        match (self.near_miss, self.fault) {
            (Some(n), _) => Some(n.describe()),
            (None, Some(k)) => Some(FaultSpec::for_id(&self.id, k).to_string()),
            (None, None) => None,
        }
    }
}

/// An implicit trajectory (never selected).
#[derive(Debug, Clone, Serialize)]
pub struct ImplicitPlan {
    /// File stem.
    pub id: String,
    /// Number of steps.
    pub steps: usize,
}

/// The whole corpus plan.
#[derive(Debug, Clone, Serialize)]
pub struct CorpusPlan {
    /// The seed.
    pub seed: u64,
    /// Selected conversations, in index order.
    pub conversations: Vec<ConvPlan>,
    /// Files under `implicit/`.
    pub implicit: Vec<ImplicitPlan>,
}

/// Feature slots cycled over the clean conversations so that every rule
/// appears in accepted shape many times in the default corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Feature {
    Step(Recipe),
    Planner50,
    Prompt23,
    PerToolMap,
    KindMap,
}

fn features() -> Vec<Feature> {
    use Recipe as R;
    let mut v = vec![
        R::CanceledCommand { native_error: true },
        R::CanceledCommand {
            native_error: false,
        },
        R::PermissionCommand,
        R::PermissionView,
        R::ContentOffset,
        R::WriteAppend { value: true },
        R::WriteAppend { value: false },
        R::FailedImage,
        R::ImageSuccess,
        R::FailedListResources,
        R::BridgeFailure,
        R::HookDenied,
        R::MissingToolSummary { read: false },
        R::MissingToolSummary { read: true },
        R::RejectedPermission { headless: false },
        R::RejectedPermission { headless: true },
        R::CanceledPrompt,
        R::BuiltinViewFile {
            lines: true,
            skill: false,
        },
        R::BuiltinViewFile {
            lines: false,
            skill: false,
        },
        R::BuiltinViewFile {
            lines: true,
            skill: true,
        },
        R::SendInput,
        R::Schedule {
            task_details: false,
        },
        R::Schedule { task_details: true },
        R::ScheduleError,
        R::ManageSubagents,
        R::DefineSubagent { definition: true },
        R::DefineSubagent { definition: false },
        R::ListPermissions,
        R::AskPermission,
        R::GenerateImageAny,
        R::RunCommand {
            background: true,
            big: false,
        },
    ];
    for k in [
        OuterKind::RunCommand,
        OuterKind::CodeAction,
        OuterKind::ViewFile,
        OuterKind::GrepSearch,
        OuterKind::McpTool,
        OuterKind::ReadUrl,
        OuterKind::SearchWeb,
    ] {
        v.push(R::OuterError(k));
    }
    for k in [
        BeforeRunKind::WriteToFile,
        BeforeRunKind::WriteToFileInvalid,
        BeforeRunKind::ViewFile,
        BeforeRunKind::FindByName,
        BeforeRunKind::ListDir,
        BeforeRunKind::Schedule,
        BeforeRunKind::GenerateImageInvalid,
    ] {
        v.push(R::FailedBeforeRun(k));
    }
    for k in [
        TaskKind::Status,
        TaskKind::List,
        TaskKind::Kill,
        TaskKind::SendMessage,
        TaskKind::Error,
    ] {
        v.push(R::ManageTask(k));
    }
    let mut out: Vec<Feature> = Vec::new();
    for (i, r) in v.into_iter().enumerate() {
        out.push(Feature::Step(r));
        // interleave the conversation-level features
        match i % 12 {
            0 => out.push(Feature::Planner50),
            4 => out.push(Feature::Prompt23),
            7 => out.push(Feature::PerToolMap),
            10 => out.push(Feature::KindMap),
            _ => {}
        }
    }
    out
}

/// Random ordinary tool recipes and their weights.
const TOOL_MIX: &[(Recipe, u32)] = &[
    (
        Recipe::RunCommand {
            background: false,
            big: false,
        },
        22,
    ),
    (Recipe::ViewFile, 20),
    (Recipe::CodeAction { create: false }, 10),
    (Recipe::CodeAction { create: true }, 5),
    (Recipe::ManageTask(TaskKind::Status), 2),
    (Recipe::ManageTask(TaskKind::SendMessage), 2),
    (Recipe::NativeViewFile, 14),
    (Recipe::NativeRunCommand, 9),
    (Recipe::NativeCodeAction, 11),
    (
        Recipe::NativeGrep {
            per_line: true,
            prompt23: false,
        },
        5,
    ),
    (
        Recipe::NativeGrep {
            per_line: false,
            prompt23: false,
        },
        2,
    ),
    (Recipe::NativeListDir, 3),
    (Recipe::NativeMcp, 1),
    (Recipe::NativeSearchWeb, 1),
    (Recipe::NativeReadUrl, 1),
    (Recipe::NativeFind, 2),
    (Recipe::NativeCommandStatus, 1),
];

fn shuffled(n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
    v
}

/// Plans the corpus.
pub fn plan(opts: &PlanOptions) -> CorpusPlan {
    let n = opts.conversations;
    let seed = opts.seed;
    let mut ids: Vec<String> = Vec::with_capacity(n);
    let mut seen = BTreeSet::new();
    for i in 0..n {
        let mut k = 0u32;
        loop {
            let id = Rng::new(seed, &["id", &i.to_string(), &k.to_string()]).uuid();
            if seen.insert(id.clone()) {
                ids.push(id);
                break;
            }
            k += 1;
        }
    }

    // near-misses
    let mut nm_rng = Rng::new(seed, &["near-miss"]);
    let n_near = ((opts.near_miss_rate.clamp(0.0, 1.0) * n as f64).round() as usize).min(n);
    let nm_order = shuffled(n, &mut nm_rng);
    let mut near: Vec<Option<NearMiss>> = vec![None; n];
    for (m, &i) in nm_order.iter().take(n_near).enumerate() {
        let class = NEAR_MISS_CLASSES[m % NEAR_MISS_CLASSES.len()];
        near[i] = NearMiss::of(class, m / NEAR_MISS_CLASSES.len());
    }
    // One more near-miss for every rule-bound shape the class cycle left
    // out, so each projection refusal has its own conversation; only while
    // at least half of the corpus stays clean.
    if n_near > 0 {
        let chosen: BTreeSet<UnqKind> = near
            .iter()
            .filter_map(|x| match x {
                Some(NearMiss::Unqualified(k)) => Some(*k),
                _ => None,
            })
            .collect();
        let left: Vec<UnqKind> = UnqKind::ALL
            .iter()
            .copied()
            .filter(|k| !chosen.contains(k))
            .collect();
        if n_near + left.len() <= n / 2 {
            for (&i, k) in nm_order.iter().skip(n_near).zip(left) {
                near[i] = Some(NearMiss::Unqualified(k));
            }
        }
    }
    let clean: Vec<usize> = (0..n).filter(|i| near[*i].is_none()).collect();

    // formats
    let mut f_rng = Rng::new(seed, &["format"]);
    let mut format = vec![Format::Sqlite; n];
    let mut also_pb = vec![false; n];
    for i in 0..n {
        if let Some(nm) = near[i] {
            format[i] = nm.format();
        }
    }
    let order = {
        let s = shuffled(clean.len(), &mut f_rng);
        s.into_iter().map(|k| clean[k]).collect::<Vec<_>>()
    };
    let n_legacy = (n as f64 * 0.05).round() as usize;
    let n_both = ((n as f64 * 0.008).round() as usize).max(usize::from(n >= 20));
    for &i in order.iter().take(n_legacy) {
        format[i] = Format::Protobuf;
    }
    for &i in order.iter().skip(n_legacy).take(n_both) {
        also_pb[i] = true;
    }

    // planned daemon faults
    let mut fault: Vec<Option<FaultKind>> = vec![None; n];
    let n_fault = ((opts.fault_rate.clamp(0.0, 1.0) * n as f64).round() as usize).min(clean.len());
    let mut fr = Rng::new(seed, &["faults"]);
    let fault_order = shuffled(clean.len(), &mut fr);
    for (m, &k) in fault_order.iter().take(n_fault).enumerate() {
        fault[clean[k]] = Some(FaultKind::ALL[m % FaultKind::ALL.len()]);
    }

    // subagent trees
    let mut t_rng = Rng::new(seed, &["trees"]);
    let mut parent: Vec<Option<(String, u32)>> = vec![None; n];
    let mut root: Vec<String> = ids.clone();
    let mut children: Vec<Vec<String>> = vec![Vec::new(); n];
    let tree_order = shuffled(clean.len(), &mut t_rng);
    let n_parents = (n as f64 * 0.06).round() as usize;
    let mut cursor = n_parents;
    for &pk in tree_order.iter().take(n_parents) {
        let p = clean[pk];
        let k = t_rng.range(1, 2) as usize;
        for _ in 0..k {
            let Some(&ck) = tree_order.get(cursor) else {
                break;
            };
            cursor += 1;
            let c = clean[ck];
            parent[c] = Some((ids[p].clone(), 1));
            root[c] = ids[p].clone();
            children[p].push(ids[c].clone());
        }
    }

    // large outputs: a Zipf tail over a shuffled set of clean conversations
    let mut b_rng = Rng::new(seed, &["big"]);
    let big_order = shuffled(clean.len(), &mut b_rng);
    let n_big = (n / 12).max(1).min(clean.len());
    let mut big = vec![0usize; n];
    for (rank, &k) in big_order.iter().take(n_big).enumerate() {
        let bytes = 20.0 * 1024.0 * 1024.0 / ((rank + 1) as f64).powf(2.0);
        big[clean[k]] = ((bytes * opts.scale) as usize).max(16 << 10);
    }

    // feature cycling over clean conversations in index order
    let feats = features();
    let mut feat_of: Vec<Vec<Feature>> = vec![Vec::new(); n];
    let mut fi = 0usize;
    for (j, &i) in clean.iter().enumerate() {
        let count = 1 + (j % 2);
        for _ in 0..count {
            feat_of[i].push(feats[fi % feats.len()]);
            fi += 1;
        }
    }

    // modern steps: one each on a shuffled set of clean conversations, from
    // their own stream so the other choices stay as they were
    let mut m_rng = Rng::new(seed, &["modern"]);
    let modern_order = shuffled(clean.len(), &mut m_rng);
    let mut modern_of: Vec<Option<ModernKind>> = vec![None; n];
    for (k, m) in modern_order.iter().zip(modern_steps()) {
        modern_of[clean[*k]] = Some(m);
    }

    // The headless child's rejected request (BypassSandbox "false") is
    // qualified only in a subagent's conversation (its trajectory metadata
    // names a parent): move each one off a top-level conversation onto a
    // child (swapping a feature back), or drop the bypass when the corpus has
    // no child without one.
    let headless = Feature::Step(Recipe::RejectedPermission { headless: true });
    for i in 0..n {
        if parent[i].is_some() {
            continue;
        }
        while let Some(pos) = feat_of[i].iter().position(|f| *f == headless) {
            let child = (0..n).find(|&j| parent[j].is_some() && !feat_of[j].contains(&headless));
            match child {
                Some(j) if !feat_of[j].is_empty() => {
                    feat_of[i][pos] = feat_of[j][0];
                    feat_of[j][0] = headless;
                }
                Some(j) => {
                    feat_of[i].remove(pos);
                    feat_of[j].push(headless);
                }
                None => {
                    feat_of[i][pos] = Feature::Step(Recipe::RejectedPermission { headless: false })
                }
            }
        }
    }

    let mut convs = Vec::with_capacity(n);
    for i in 0..n {
        let mut r = Rng::new(seed, &["conv", &i.to_string()]);
        let tid = loop {
            let t = r.uuid();
            if t != ids[i] {
                break t;
            }
        };
        let mut cp = ConvPlan {
            index: i,
            id: ids[i].clone(),
            trajectory_id: tid,
            format: format[i],
            also_pb: also_pb[i],
            steps: Vec::new(),
            planner50: Vec::new(),
            per_tool_map: r.chance(0.08),
            kind_map: r.chance(0.08),
            near_miss: near[i],
            fault: fault[i],
            wal_tail: 0,
            parent: parent[i].clone(),
            root: root[i].clone(),
            children: children[i].clone(),
            fork_ref: r.chance(0.02),
            big_output: big[i],
            scale: opts.scale,
        };
        let mut must: Vec<Recipe> = Vec::new();
        let mut want_p50 = near[i].is_none() && r.chance(0.08);
        let mut want_p23 = near[i].is_none() && r.chance(0.03);
        for f in &feat_of[i] {
            match f {
                Feature::Step(rec) => must.push(*rec),
                Feature::Planner50 => want_p50 = true,
                Feature::Prompt23 => want_p23 = true,
                Feature::PerToolMap => cp.per_tool_map = true,
                Feature::KindMap => cp.kind_map = true,
            }
        }
        if !cp.children.is_empty() {
            must.push(Recipe::InvokeSubagent);
        }
        if let Some(m) = modern_of[i] {
            must.push(Recipe::Modern(m));
        }
        if cp.big_output > 0 {
            must.push(Recipe::RunCommand {
                background: false,
                big: true,
            });
        }
        if want_p23 {
            for _ in 0..r.range(1, 4) {
                must.push(Recipe::NativeGrep {
                    per_line: r.chance(0.7),
                    prompt23: true,
                });
            }
        }
        // near-miss prerequisites
        let mut need_system = false;
        match near[i] {
            Some(NearMiss::BadMapEntry(MapFault::KindDuplicate)) => cp.kind_map = true,
            Some(NearMiss::BadMapEntry(_)) => cp.per_tool_map = true,
            Some(NearMiss::RedundantColumn(ColumnFault::RenderInfoMissing)) => {
                must.push(Recipe::ManageTask(TaskKind::Status))
            }
            Some(NearMiss::RedundantColumn(ColumnFault::ErrorDetails)) => {
                must.push(Recipe::OuterError(OuterKind::RunCommand))
            }
            Some(NearMiss::UnknownField(UnknownFieldAt::GenericResult))
            | Some(NearMiss::UnknownField(UnknownFieldAt::EmbeddedStep)) => {
                must.push(Recipe::ViewFile)
            }
            Some(NearMiss::UnknownEnum(UnknownEnumAt::Transition)) => {
                must.push(Recipe::CanceledPrompt)
            }
            Some(NearMiss::Prompt23(_)) => must.push(Recipe::NativeGrep {
                per_line: true,
                prompt23: true,
            }),
            Some(NearMiss::Unqualified(k)) => must.push(Recipe::Unqualified(k)),
            Some(NearMiss::InvalidUtf8) => need_system = true,
            _ => {}
        }
        cp.steps = plan_steps(&mut r, &must, need_system, opts.scale);
        if want_p50 {
            let gens = cp.gen_steps().len();
            let execs = cp.turns().len();
            for g in 0..gens {
                if g == gens - 1 || r.chance(0.3) {
                    cp.planner50.push((Planner50Site::Gen(g), r.below(4) as u8));
                }
            }
            for e in 0..execs {
                if r.chance(0.5) {
                    cp.planner50
                        .push((Planner50Site::Exec(e), r.below(4) as u8));
                }
            }
        }
        if cp.format == Format::Sqlite && cp.steps.len() > 3 && r.chance(0.3) {
            cp.wal_tail = r.range(1, (cp.steps.len() as u64 - 2).min(6)) as usize;
        }
        convs.push(cp);
    }

    let mut i_rng = Rng::new(seed, &["implicit"]);
    let implicit = (0..3)
        .map(|_| ImplicitPlan {
            id: i_rng.uuid(),
            steps: i_rng.range(2, 6) as usize,
        })
        .collect();
    CorpusPlan {
        seed,
        conversations: convs,
        implicit,
    }
}

/// The step sequence: turns of USER_INPUT, planner/tool pairs and a final
/// planner response, with the `must` recipes placed at random tool slots.
fn plan_steps(r: &mut Rng, must: &[Recipe], need_system: bool, scale: f64) -> Vec<StepKind> {
    let target = {
        let x = r.normal(3.86, 0.85).exp();
        let s = (6.0 + x * scale.clamp(0.05, 1.0).sqrt()).min(650.0);
        s as usize
    };
    let weights: Vec<u32> = TOOL_MIX.iter().map(|(_, w)| *w).collect();
    let n_tools_est = (target / 2).max(must.len() + 1);
    let mut tools: Vec<Recipe> = (0..n_tools_est)
        .map(|_| TOOL_MIX[r.weighted(&weights)].0)
        .collect();
    for m in must {
        let pos = r.below(tools.len() as u64 + 1) as usize;
        tools.insert(pos, *m);
    }
    let mut steps = Vec::with_capacity(target + must.len() * 2 + 8);
    let mut t = 0;
    let resumed = r.chance(0.08);
    while t < tools.len() {
        steps.push(StepKind::UserInput);
        if resumed && t == 0 {
            steps.push(StepKind::ConversationHistory);
        }
        if r.chance(0.25) {
            steps.push(StepKind::SystemMessage);
        }
        let in_turn = r.range(2, 30) as usize;
        for _ in 0..in_turn {
            if t >= tools.len() {
                break;
            }
            if r.chance(0.12) {
                steps.push(StepKind::Planner { tool_call: false });
            }
            if r.chance(0.03) {
                steps.push(StepKind::EphemeralMessage);
            }
            steps.push(StepKind::Planner { tool_call: true });
            steps.push(StepKind::Tool(tools[t]));
            t += 1;
            if r.chance(0.02) {
                steps.push(StepKind::ErrorMessage);
            }
        }
        steps.push(StepKind::Planner { tool_call: false });
        if r.chance(0.08) {
            steps.push(StepKind::Checkpoint);
        }
    }
    if need_system && !steps.contains(&StepKind::SystemMessage) {
        steps.insert(1, StepKind::SystemMessage);
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_deterministic_and_seed_dependent() {
        let o = PlanOptions {
            conversations: 40,
            ..PlanOptions::default()
        };
        let a = serde_json::to_string(&plan(&o)).unwrap();
        let b = serde_json::to_string(&plan(&o)).unwrap();
        assert_eq!(a, b);
        let c = serde_json::to_string(&plan(&PlanOptions { seed: 2, ..o })).unwrap();
        assert_ne!(a, c);
    }

    #[test]
    fn every_near_miss_class_has_a_variant_and_turns_start_with_user_input() {
        for c in NEAR_MISS_CLASSES {
            assert_eq!(NearMiss::of(*c, 0).map(|n| n.class()), Some(*c));
        }
        let p = plan(&PlanOptions {
            conversations: 20,
            ..PlanOptions::default()
        });
        for c in &p.conversations {
            assert_eq!(c.steps.first(), Some(&StepKind::UserInput));
            assert_eq!(c.turns().first().map(|t| t.0), Some(0));
        }
    }
}
