//! Payload-free generic steps (a result without a payload), presented
//! unchanged: manage_task and send_message, manage_task send_input,
//! schedule, manage_subagents, define_subagent, list_permissions and
//! ask_permission.

use super::args::ArgBound;
use super::doc::RuleDoc;
use super::family::{has_records, unqualified, Args, Claim, Ctx, Family, Presented};
use super::fields::{
    ensure, has, only_short_full, reject, single_allow_hook, tool_source, Wrapper, BUILTIN, DONE,
    ERROR, R,
};
use super::reasons::Reason;
use crate::rules::RuleId;

const RESULT_TEXT_URI_RENDER: &[&str] = &["result", "full_output_uri", "step_render_info"];
const RESULT_WITH_METADATA: &[&str] =
    &["result", "metadata", "full_output_uri", "step_render_info"];
const RESULT_TEXT_RENDER: &[&str] = &["result", "step_render_info"];
const TASK_METADATA_KEYS: &[&str] = &["task_description", "task_id", "tool_name"];
const SEND_INPUT_METADATA_KEYS: &[&str] = &["input", "task_description", "task_id", "tool_name"];
/// define_subagent's arguments: `definition` alone, or the fields after it.
const DEFINE_SUBAGENT_ARGS: &[&str] = &[
    "definition",
    "description",
    "enable_mcp_tools",
    "enable_subagent_tools",
    "enable_write_tools",
    "name",
    "system_prompt",
];
/// define_subagent's fields (its arguments without `definition`).
const DEFINE_SUBAGENT_FIELDS: &[&str] = match DEFINE_SUBAGENT_ARGS.split_first() {
    Some((_, fields)) => fields,
    None => &[],
};

const COMMON_REASONS: &[Reason] = &[
    Reason::PayloadFreeArguments,
    Reason::PayloadFreeResult,
    Reason::PayloadFreeOuterError,
    Reason::PayloadFreeStatus,
    Reason::PayloadFreeRecords,
];

/// The reasons of the two rules whose results may hold metadata and whose
/// wrappers may fail with an outer error (manage_task and send_message;
/// schedule, manage_subagents and define_subagent).
const METADATA_REASONS: &[Reason] = &[
    Reason::PayloadFreeArguments,
    Reason::PayloadFreeResult,
    Reason::PayloadFreeMetadataKeys,
    Reason::PayloadFreeOuterError,
    Reason::PayloadFreeStatus,
    Reason::PayloadFreeRecords,
    Reason::OuterErrorText,
];

pub(crate) const DOCS: &[RuleDoc] = &[
    RuleDoc {
        rule: RuleId::PayloadFreeManageTask,
        accepts: "A generic manage_task (Action a JSON string other than send_input; optionally TaskId) or send_message (a nonempty subset of ConversationId, Message) step whose result holds only result text, metadata (keys within task_description, task_id, tool_name), render information and an output URI, with no task details, permission or interaction records; status DONE, or for manage_task ERROR with an optional outer error of only short and full text. Presented unchanged.",
        reasons: METADATA_REASONS,
    },
    RuleDoc {
        rule: RuleId::ManageTaskSendInput,
        accepts: "A DONE generic manage_task step with exactly the arguments Action \"send_input\", TaskId and Input (nonempty JSON strings) equal to the metadata tool call, tool source BUILTIN and exactly one {decision: allow} hook, whose result holds only result text, render information, an output URI and metadata of exactly input (= Input), task_id (= TaskId), task_description and tool_name \"run_command\"; no outer error, task details, permission or interaction records. Presented unchanged.",
        reasons: &[
            Reason::SendInputArguments,
            Reason::SendInputMetadata,
            Reason::SendInputTarget,
            Reason::SendInputExecution,
            Reason::PayloadFreeResult,
            Reason::PayloadFreeOuterError,
            Reason::PayloadFreeStatus,
            Reason::PayloadFreeRecords,
        ],
    },
    RuleDoc {
        rule: RuleId::PayloadFreeScheduleSubagents,
        accepts: "A DONE generic schedule (a nonempty subset of DurationSeconds, Prompt, TimerCondition), manage_subagents (exactly Action) or define_subagent (exactly definition, or name with any of description, enable_mcp_tools, enable_subagent_tools, enable_write_tools, system_prompt) step whose result holds only result text, an output URI and render information (manage_subagents also metadata with only killed_conversation_ids), without permission or interaction records; only schedule may carry task details, and a schedule may instead be ERROR with an outer error of only short and full text. Presented unchanged.",
        reasons: METADATA_REASONS,
    },
    RuleDoc {
        rule: RuleId::PayloadFreeListPermissions,
        accepts: "A DONE generic list_permissions step with no arguments, a result of only result text and render information, and no task details, outer error, permission or interaction records. Presented unchanged.",
        reasons: COMMON_REASONS,
    },
    RuleDoc {
        rule: RuleId::PayloadFreeAskPermission,
        accepts: "A DONE generic ask_permission step with exactly the arguments Action, Reason and Target, a result of only result text and render information, and no task details, outer error, permission or interaction records. Presented unchanged.",
        reasons: COMMON_REASONS,
    },
];

/// Dispatches a payload-free wrapper by tool.
fn project(_ctx: &Ctx<'_>, w: &Wrapper) -> R<Presented> {
    match w.tool.as_str() {
        "manage_task" if w.args.string("Action").as_deref() == Some("send_input") => send_input(w),
        "manage_task" | "send_message" => manage_task(w),
        "schedule" | "manage_subagents" | "define_subagent" => schedule_subagents(w),
        "list_permissions" => text_and_render(RuleId::PayloadFreeListPermissions, w),
        "ask_permission" => text_and_render(RuleId::PayloadFreeAskPermission, w),
        "" => unqualified(w),
        t => reject(None, Reason::PayloadFreeTool, t.to_string()),
    }
}

/// No permission or interaction records; task details only when `task_details`.
fn records(rule: RuleId, w: &Wrapper, task_details: bool) -> R<()> {
    ensure(
        !has_records(w.step) && (task_details || !has(w.step, "task_details")),
        rule,
        Reason::PayloadFreeRecords,
        String::new,
    )?;
    let allowed = [
        "type",
        "status",
        "metadata",
        "generic",
        "error",
        "task_details",
    ];
    if let Some(f) = w.extra_step_field(&allowed) {
        return reject(Some(rule), Reason::PayloadFreeRecords, f);
    }
    if let Some(f) = w.extra_generic_field(&["args", "result"]) {
        return reject(
            Some(rule),
            Reason::PayloadFreeResult,
            format!("generic.{f}"),
        );
    }
    Ok(())
}

fn result_fields(rule: RuleId, w: &Wrapper, allowed: &[&str]) -> R<()> {
    match w.extra_result_field(allowed) {
        Some(f) => reject(Some(rule), Reason::PayloadFreeResult, f),
        None => Ok(()),
    }
}

fn metadata_keys(rule: RuleId, w: &Wrapper, allowed: &[&str]) -> R<()> {
    match w
        .result_metadata()
        .keys()
        .find(|k| !allowed.contains(&k.as_str()))
    {
        Some(k) => reject(Some(rule), Reason::PayloadFreeMetadataKeys, k.clone()),
        None => Ok(()),
    }
}

/// DONE without an error, or (when `error_ok`) ERROR with an optional
/// (`optional_error`) or required outer error of only short and full text.
fn status_and_error(rule: RuleId, w: &Wrapper, error_ok: bool, optional_error: bool) -> R<()> {
    if w.status == DONE {
        return ensure(
            w.error.is_none(),
            rule,
            Reason::PayloadFreeOuterError,
            || "outer error on a DONE step".into(),
        );
    }
    ensure(
        error_ok && w.status == ERROR,
        rule,
        Reason::PayloadFreeStatus,
        || format!("{} {}", w.tool, w.status),
    )?;
    match &w.error {
        None if optional_error => Ok(()),
        None => reject(
            Some(rule),
            Reason::PayloadFreeOuterError,
            "ERROR without an outer error",
        ),
        Some(e) => ensure(only_short_full(e), rule, Reason::OuterErrorText, || {
            "outer error with more than short and full text".into()
        }),
    }
}

/// "Payload-free manage_task and send_message steps remain generic, with
/// bounded arguments and result fields. Task metadata keys are limited to
/// the observed task_description, task_id, and tool_name, except for the
/// qualified send_input shape below. A failed manage_task step with status
/// ERROR may also carry an outer error, which the ordinary response presents
/// unchanged. An outer error on any other payload-free wrapper fails except
/// for the schedule case below."
///
/// Bounds (the specification names no argument list; these are this
/// reader's): manage_task takes Action (a JSON string, not send_input) and
/// optionally TaskId; send_message a nonempty subset of ConversationId and
/// Message; the result holds only text, metadata, render information and an
/// output URI; no task details or records; send_message is DONE only; the
/// manage_task outer error holds only short and full text.
fn manage_task(w: &Wrapper) -> R<Presented> {
    let rule = RuleId::PayloadFreeManageTask;
    records(rule, w, false)?;
    let args_ok = if w.tool == "manage_task" {
        w.args.string("Action").is_some() && w.args.extra_key(&["Action", "TaskId"]).is_none()
    } else {
        !w.args.0.is_empty() && w.args.extra_key(&["ConversationId", "Message"]).is_none()
    };
    // The names repeat the declared bound ([`ARGS`]), which the dispatcher
    // also enforces: checked here too so that a send_input-like call under
    // another Action (Input is not named) is refused for its arguments
    // before its send_input metadata keys are.
    ensure(args_ok, rule, Reason::PayloadFreeArguments, || {
        format!("{} arguments {:?}", w.tool, w.args.keys())
    })?;
    result_fields(rule, w, RESULT_WITH_METADATA)?;
    metadata_keys(rule, w, TASK_METADATA_KEYS)?;
    status_and_error(rule, w, w.tool == "manage_task", true)?;
    Ok(Presented::unchanged(rule))
}

/// "A payload-free manage_task with Action=send_input remains generic when
/// it is DONE and has nonempty TaskId and Input arguments matching the
/// retained metadata tool call. Its result metadata must contain exactly
/// input, task_id, task_description and tool_name: input and task ID must
/// repeat the arguments, and the target tool must be run_command.
/// Qualification requires the built-in tool source and exactly one allow
/// hook. Result text, output URI and render information are retained."
///
/// Bounds: "Empty or mismatched input, other actions or target tools, extra
/// metadata, outer errors, task details, permission or interaction records
/// remain unknown." The arguments are exactly Action, TaskId and Input.
fn send_input(w: &Wrapper) -> R<Presented> {
    let rule = RuleId::ManageTaskSendInput;
    records(rule, w, false)?;
    ensure(w.status == DONE, rule, Reason::PayloadFreeStatus, || {
        w.status.clone()
    })?;
    ensure(
        w.error.is_none(),
        rule,
        Reason::PayloadFreeOuterError,
        String::new,
    )?;
    let task = w.args.string("TaskId").filter(|s| !s.is_empty());
    let input = w.args.string("Input").filter(|s| !s.is_empty());
    // Exactly Action, TaskId and Input, the last two the result metadata's,
    // repeating the tool call: the declared bound ([`ARGS`]), which the
    // dispatcher enforces; here that both are nonempty strings.
    ensure(
        task.is_some() && input.is_some(),
        rule,
        Reason::SendInputArguments,
        || format!("arguments {:?}", w.args.keys()),
    )?;
    result_fields(rule, w, RESULT_WITH_METADATA)?;
    let md = w.result_metadata();
    ensure(
        md.len() == SEND_INPUT_METADATA_KEYS.len()
            && SEND_INPUT_METADATA_KEYS.iter().all(|k| md.contains_key(*k)),
        rule,
        Reason::SendInputMetadata,
        || format!("{:?}", md.keys().collect::<Vec<_>>()),
    )?;
    ensure(
        md.get("tool_name").map(String::as_str) == Some("run_command"),
        rule,
        Reason::SendInputTarget,
        || md.get("tool_name").cloned().unwrap_or_default(),
    )?;
    ensure(
        tool_source(w.step).as_deref() == Some(BUILTIN) && single_allow_hook(w.step),
        rule,
        Reason::SendInputExecution,
        String::new,
    )?;
    Ok(Presented::unchanged(rule))
}

/// "Payload-free schedule, manage_subagents, and define_subagent steps also
/// remain generic and are presented unchanged. Each is bounded to its
/// observed arguments (DurationSeconds, Prompt, TimerCondition; Action;
/// either definition alone or description, enable_mcp_tools,
/// enable_subagent_tools, enable_write_tools, name, system_prompt), to the
/// result text, output URI, and render information, and to status DONE.
/// Only schedule may carry outer task details. As the one exception to the
/// outer-error rule above, a schedule step may also fail with status ERROR
/// and an outer error that holds only short and full text. A
/// manage_subagents result may carry only the killed_conversation_ids
/// metadata key. A payload-free step for any other tool still fails."
///
/// Bounds: schedule takes a nonempty subset of its three arguments; the
/// second define_subagent form requires name and allows the other five.
fn schedule_subagents(w: &Wrapper) -> R<Presented> {
    let rule = RuleId::PayloadFreeScheduleSubagents;
    let schedule = w.tool == "schedule";
    records(rule, w, schedule)?;
    let args_ok = match w.tool.as_str() {
        // Their names are the declared bounds ([`ARGS`]), which the
        // dispatcher enforces; schedule carries at least one.
        "schedule" => !w.args.0.is_empty(),
        "manage_subagents" => true,
        _ => {
            w.args.keys_are(&["definition"])
                || (w.args.has("name") && w.args.extra_key(DEFINE_SUBAGENT_FIELDS).is_none())
        }
    };
    ensure(args_ok, rule, Reason::PayloadFreeArguments, || {
        format!("{} arguments {:?}", w.tool, w.args.keys())
    })?;
    if w.tool == "manage_subagents" {
        result_fields(rule, w, RESULT_WITH_METADATA)?;
        metadata_keys(rule, w, &["killed_conversation_ids"])?;
    } else {
        result_fields(rule, w, RESULT_TEXT_URI_RENDER)?;
    }
    status_and_error(rule, w, schedule, false)?;
    Ok(Presented::unchanged(rule))
}

/// "A payload-free list_permissions step also remains generic and is
/// presented unchanged. It is bounded to no arguments, a result of only text
/// and render information (no output URI, metadata, media, or payload), no
/// outer task details or error, and status DONE."
///
/// "A payload-free ask_permission step also remains generic and is
/// presented unchanged. It is bounded to exactly the Action, Reason and
/// Target arguments, a result of only text and render information (no
/// output URI, metadata, media, or payload), no outer task details, error or
/// permission records, and status DONE."
///
/// The two rules share every bound but their arguments, which are their
/// declared bounds ([`ARGS`]: none; exactly Action, Reason and Target) the
/// dispatcher enforces.
fn text_and_render(rule: RuleId, w: &Wrapper) -> R<Presented> {
    records(rule, w, false)?;
    result_fields(rule, w, RESULT_TEXT_RENDER)?;
    status_and_error(rule, w, false, false)?;
    Ok(Presented::unchanged(rule))
}

/// The family's argument bounds (each tool's observed arguments; send_input's TaskId and Input repeat the tool call and the result metadata).
const ARGS: &[Args] = &[
    Args::of(
        RuleId::PayloadFreeManageTask,
        "manage_task",
        ArgBound::NONE.required(&["Action"]).optional(&["TaskId"]),
        Reason::PayloadFreeArguments,
    ),
    Args::of(
        RuleId::PayloadFreeManageTask,
        "send_message",
        ArgBound::NONE.optional(&["ConversationId", "Message"]),
        Reason::PayloadFreeArguments,
    ),
    Args::of(
        RuleId::ManageTaskSendInput,
        "manage_task",
        ArgBound::NONE
            .equal(&[
                ("TaskId", "result.metadata.task_id"),
                ("Input", "result.metadata.input"),
            ])
            .required(&["Action"])
            .repeating(),
        Reason::SendInputArguments,
    ),
    Args::of(
        RuleId::PayloadFreeScheduleSubagents,
        "schedule",
        ArgBound::NONE.optional(&["DurationSeconds", "Prompt", "TimerCondition"]),
        Reason::PayloadFreeArguments,
    ),
    Args::of(
        RuleId::PayloadFreeScheduleSubagents,
        "manage_subagents",
        ArgBound::NONE.required(&["Action"]),
        Reason::PayloadFreeArguments,
    ),
    Args::of(
        RuleId::PayloadFreeScheduleSubagents,
        "define_subagent",
        ArgBound::NONE.optional(DEFINE_SUBAGENT_ARGS),
        Reason::PayloadFreeArguments,
    ),
    Args::of(
        RuleId::PayloadFreeListPermissions,
        "list_permissions",
        ArgBound::NONE,
        Reason::PayloadFreeArguments,
    ),
    Args::of(
        RuleId::PayloadFreeAskPermission,
        "ask_permission",
        ArgBound::NONE.required(&["Action", "Reason", "Target"]),
        Reason::PayloadFreeArguments,
    ),
];

/// The family: payload-free wrappers with a result.
pub(crate) const FAMILY: Family = Family {
    file: "payload_free.rs",
    docs: DOCS,
    claims: &[Claim::Payloadless(project)],
    hooks: &[],
    args: ARGS,
};
