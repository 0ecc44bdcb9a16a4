//! The modern (agy 1.4.x) tool payloads: generic wrappers whose result
//! payload is an Any `type.googleapis.com/exa.cortex.core.tools.<Name>`
//! (GenerateImage has its own family in `generate_image.rs`), and the
//! payload-less canceled background command of tools144.
//!
//! | file | rules |
//! |---|---|
//! | `run_command.rs` | tools143 RunCommand; tools144 canceled background run_command |
//! | `read_file.rs` | tools143 ReadFile → VIEW_FILE; skill146 path rule |
//! | `file_edit.rs` | tools143 FileEdit CREATE/EDIT → CODE_ACTION |
//! | `invoke_subagent.rs` | tools143 InvokeSubagent; tools144 Workspace=inherit |
//! | `generic.rs` | tools143 ManageTask and Schedule; tools144 ManageSubagents list |
//! | `ide225.rs` | ide225 read permission records, ByteOffset=0 reads, artifact creates and edits (hooks `read_file.rs` and `file_edit.rs` look up) |
//! | `finish.rs` | finish147 Finish calls and missing-file read wrappers |
//! | `image_read.rs` | replay147 completed image reads |
//! | `replay_wait.rs` | replay147 command wait forms (the copied form presented; the omitted form an alternative the comparison may take for a whole trajectory) |
//! | `permission1.rs` | the permission1 refusal every modern mapping applies (its row) |
//! | `common.rs` | what they share (a leaf: decoding, shape checks, presented steps) |
//!
//! Shared bounds, from "These are bounded mappings: completed commands,
//! reads, creates and edits; completed single-task status/list/kill results;
//! a canceled timer; and a completed subagent invocation without task mode.
//! Other statuses, argument names, newly populated payload fields, paths
//! requiring URI normalization, and unsupported outcomes still return
//! unknown." Every rule also applies the permission1 refusal ("the modern
//! 1.4.3 tool mappings initially refused wrappers with permission grants or
//! completed interactions"); where the wording is silent the stricter
//! reading is taken: no permission record, interaction (pending or
//! completed) or outer error at all.
//!
//! Payload fields are read through the declarations the schema resolved
//! from the loaded pool (`schema::ModernNames`): a descriptor set that lacks
//! or renames one refuses with [`Reason::ModernDeclaration`] naming it.

pub(crate) mod common;
pub(crate) mod file_edit;
pub(crate) mod finish;
pub(crate) mod generic;
pub(crate) mod ide225;
pub(crate) mod image_read;
pub(crate) mod invoke_subagent;
pub(crate) mod permission1;
pub(crate) mod read_file;
pub(crate) mod replay_wait;
pub(crate) mod run_command;
