//! Modern payloads that remain generic with result metadata derived from the
//! payload: tools143 ManageTask and Schedule, tools144 ManageSubagents list.

use super::common::{
    argument_values_hold, arguments, call_payload, declared, decode, no_permission_records,
    payload_claim, payload_fields, status_is, tool_is, wrapper_shape, CANCELED_OUTCOME, COMPLETED,
};
use crate::project::args::ArgBound;
use crate::project::doc::RuleDoc;
use crate::project::family::{Args, Ctx, Family, Presented};
use crate::project::fields::{flag, int, message_refs, reject, text, Wrapper, CANCELED, DONE, R};
use crate::project::reasons::Reason;
use crate::rules::RuleId;
use bytes::Bytes;
use prost_reflect::{DynamicMessage, MapKey, Value};

/// Result fields a generic modern step may hold.
const RESULT_FIELDS: &[&str] = &["result", "payload", "step_render_info"];
const STEP_FIELDS: &[&str] = &["type", "status", "metadata", "generic"];

pub(crate) const DOCS: &[RuleDoc] = &[
    RuleDoc {
        rule: RuleId::ModernManageTask,
        accepts: "A DONE manage_task wrapper whose result holds result text, render information and an Any exa.cortex.core.tools.ManageTask with outcome COMPLETED, action status, list or kill, exactly one task (setting only task_id, description, status) and nothing else; arguments Action (= action) and, for status and kill, TaskId (= the task's id), nothing else; no stored result metadata, outer error, task details, permission or interaction records. Presented unchanged (generic) with result metadata {action, task_id, task_description, task_status} derived from the payload.",
        reasons: &[
            Reason::ModernTool,
            Reason::ModernStatus,
            Reason::ModernWrapperField,
            Reason::ModernPayloadField,
            Reason::ModernArguments,
            Reason::ModernResultMetadata,
            Reason::ModernTaskAction,
            Reason::ModernDeclaration,
            Reason::ModernPayloadUndecodable,
            Reason::ModernPresentedField,
        ],
    },
    RuleDoc {
        rule: RuleId::ModernSchedule,
        accepts: "A CANCELED schedule wrapper whose result holds result text, render information and an Any exa.cortex.core.tools.Schedule with outcome CANCELED, canceled true, a nonzero duration_seconds and optionally prompt; arguments DurationSeconds (canonical decimal = duration_seconds) and, when the payload has a prompt, Prompt (= prompt), nothing else; no stored result metadata, outer error, task details, permission or interaction records. Presented unchanged (generic) with result metadata {duration_seconds, canceled: \"true\"} derived from the payload.",
        reasons: &[
            Reason::ModernTool,
            Reason::ModernStatus,
            Reason::ModernTimer,
            Reason::ModernWrapperField,
            Reason::ModernPayloadField,
            Reason::ModernArguments,
            Reason::ModernResultMetadata,
            Reason::ModernDeclaration,
            Reason::ModernPayloadUndecodable,
            Reason::ModernPresentedField,
        ],
    },
    RuleDoc {
        rule: RuleId::ModernManageSubagentsList,
        accepts: "A DONE manage_subagents wrapper whose result holds result text, render information and an Any exa.cortex.core.tools.ManageSubagents with outcome COMPLETED, action list and exactly two nonempty conversation_ids; the argument exactly Action \"list\"; no stored result metadata, outer error, task details, permission or interaction records. Presented unchanged (generic) with result metadata {action: \"list\", conversation_ids: the two IDs joined by a comma}.",
        reasons: &[
            Reason::ModernTool,
            Reason::ModernStatus,
            Reason::ModernWrapperField,
            Reason::ModernPayloadField,
            Reason::ModernArguments,
            Reason::ModernResultMetadata,
            Reason::ModernSubagentsList,
            Reason::ModernDeclaration,
            Reason::ModernPayloadUndecodable,
            Reason::ModernPresentedField,
        ],
    },
];

/// The shared shape: the wrapper's fields, the payload's fields, no stored
/// result metadata (the presentation derives it; stricter where silent).
fn shape(w: &Wrapper, rule: RuleId, payload: &DynamicMessage, fields: &[&str]) -> R<()> {
    no_permission_records(w)?;
    if !w.result_metadata().is_empty() {
        return reject(
            Some(rule),
            Reason::ModernResultMetadata,
            format!("{:?}", w.result_metadata().keys()),
        );
    }
    wrapper_shape(w, rule, STEP_FIELDS, RESULT_FIELDS)?;
    payload_fields(payload, rule, fields)
}

/// The stored step with result metadata `derived` added.
fn with_metadata(w: &Wrapper, rule: RuleId, derived: &[(&str, String)]) -> R<Presented> {
    let mut step = w.step.clone();
    let missing = || crate::project::fields::Reject {
        rule: Some(rule),
        kind: Reason::ModernPresentedField,
        detail: "generic.result.metadata".into(),
    };
    let Some(Value::Message(g)) = step.get_field_by_name_mut("generic") else {
        return Err(missing());
    };
    let Some(Value::Message(r)) = g.get_field_by_name_mut("result") else {
        return Err(missing());
    };
    let Some(Value::Map(map)) = r.get_field_by_name_mut("metadata") else {
        return Err(missing());
    };
    for (k, v) in derived {
        map.insert(MapKey::String((*k).to_string()), Value::String(v.clone()));
    }
    Ok(Presented {
        step: Some(step),
        rule,
        extra: Vec::new(),
        carried: vec![],
    })
}

/// "ManageTask and Schedule remain generic, with metadata derived from
/// their payloads" (tools143), bounded to "completed single-task
/// status/list/kill results".
///
/// Bounds (stricter where silent): DONE and COMPLETED; action status, list
/// or kill with exactly one task; Action repeats the action and TaskId (for
/// status and kill only) the task id; the result holds only text, payload
/// and render information, without stored metadata; no outer error or task
/// details; permission1. The derived metadata keys are modeled: action,
/// task_id, task_description, task_status.
fn project_manage_task(ctx: &Ctx<'_>, w: &Wrapper, bytes: &Bytes) -> R<Presented> {
    let rule = RuleId::ModernManageTask;
    let payload = decode(ctx, rule, "ManageTask", bytes)?;
    declared(ctx, rule, "TaskInfo")?;
    tool_is(w, rule, &["manage_task"])?;
    shape(w, rule, &payload, &["action", "tasks", "outcome"])?;
    status_is(w, &payload, rule, DONE, COMPLETED)?;
    let action = text(&payload, "action");
    let tasks = message_refs(&payload, "tasks");
    if !matches!(action.as_str(), "status" | "list" | "kill") || tasks.len() != 1 {
        return reject(
            Some(rule),
            Reason::ModernTaskAction,
            format!("{action} with {} tasks", tasks.len()),
        );
    }
    let task = tasks[0];
    payload_fields(task, rule, &["task_id", "description", "status"])?;
    let id = text(task, "task_id");
    // Action (= the payload's action) and the names are the declared bound
    // ([`ARGS`]), which the dispatcher enforces. TaskId present exactly for
    // status and kill, equal to the one task's id, is checked here: the
    // ArgBound vocabulary says neither a presence that depends on the action
    // nor a field of an element of a repeated message.
    let task_arg = match action.as_str() {
        "list" => !w.args.has("TaskId"),
        _ => w.args.string("TaskId").as_deref() == Some(id.as_str()),
    };
    argument_values_hold(w, rule, task_arg && !id.is_empty())?;
    with_metadata(
        w,
        rule,
        &[
            ("action", action),
            ("task_id", id),
            ("task_description", text(task, "description")),
            ("task_status", text(task, "status")),
        ],
    )
}

/// ManageTask's sibling: "Schedule remain[s] generic, with metadata derived
/// from [its] payload", bounded to "a canceled timer".
///
/// Bounds (stricter where silent): the wrapper CANCELED, the outcome
/// CANCELED and the payload's canceled flag set; a nonzero duration; the
/// arguments DurationSeconds (canonical decimal, equal) and Prompt exactly
/// when the payload has one (equal); the result holds only text, payload
/// and render information, without stored metadata; no outer error or task
/// details; permission1. The derived metadata keys are modeled:
/// duration_seconds and canceled.
fn project_schedule(ctx: &Ctx<'_>, w: &Wrapper, bytes: &Bytes) -> R<Presented> {
    let rule = RuleId::ModernSchedule;
    let payload = call_payload(ctx, w, rule, "Schedule", &["schedule"], bytes)?;
    shape(
        w,
        rule,
        &payload,
        &["duration_seconds", "prompt", "canceled", "outcome"],
    )?;
    status_is(w, &payload, rule, CANCELED, CANCELED_OUTCOME)?;
    let secs = int(&payload, "duration_seconds").unwrap_or(0);
    if !flag(&payload, "canceled") || secs == 0 {
        return reject(
            Some(rule),
            Reason::ModernTimer,
            format!("canceled {}, {secs} s", flag(&payload, "canceled")),
        );
    }
    // The names and Prompt (= prompt, when present) are the declared bound
    // ([`ARGS`]), which the dispatcher enforces. Checked here, as the
    // ArgBound vocabulary cannot say them: DurationSeconds a canonical
    // decimal equal to the duration (JSON equality would take ` 300`), and
    // Prompt present exactly when the payload has one.
    let secs_arg = w.args.canonical_uint("DurationSeconds").map(i128::from) == Some(secs);
    let prompt_arg = w.args.has("Prompt") != text(&payload, "prompt").is_empty();
    argument_values_hold(w, rule, secs_arg && prompt_arg)?;
    with_metadata(
        w,
        rule,
        &[
            ("duration_seconds", secs.to_string()),
            ("canceled", "true".into()),
        ],
    )
}

/// "Completed modern ManageSubagents list calls with two conversation IDs
/// remain generic; their result metadata gains the action and comma-joined
/// IDs from the payload." (tools144) "Other ... actions, ID counts,
/// argument names ... remain unknown."
///
/// Bounds (stricter where silent): DONE and COMPLETED; action list; exactly
/// two nonempty IDs, neither containing a comma (the join must stay
/// readable back); the argument exactly Action "list"; the result holds only
/// text, payload and render information, without stored metadata; no outer
/// error or task details; permission1. The metadata keys are modeled:
/// action and conversation_ids.
fn project_manage_subagents(ctx: &Ctx<'_>, w: &Wrapper, bytes: &Bytes) -> R<Presented> {
    let rule = RuleId::ModernManageSubagentsList;
    let payload = call_payload(
        ctx,
        w,
        rule,
        "ManageSubagents",
        &["manage_subagents"],
        bytes,
    )?;
    shape(
        w,
        rule,
        &payload,
        &["action", "conversation_ids", "outcome"],
    )?;
    status_is(w, &payload, rule, DONE, COMPLETED)?;
    let action = text(&payload, "action");
    let ids: Vec<String> = payload
        .get_field_by_name("conversation_ids")
        .and_then(|v| {
            v.as_list().map(|l| {
                l.iter()
                    .map(|x| x.as_str().unwrap_or_default().to_string())
                    .collect()
            })
        })
        .unwrap_or_default();
    if action != "list" || ids.len() != 2 || ids.iter().any(|i| i.is_empty() || i.contains(',')) {
        return reject(
            Some(rule),
            Reason::ModernSubagentsList,
            format!("{action} with {} IDs", ids.len()),
        );
    }
    // The argument, exactly Action equal to the payload's action ("list",
    // checked above): the declared bound ([`ARGS`]), which the dispatcher
    // enforces.
    with_metadata(
        w,
        rule,
        &[("action", action), ("conversation_ids", ids.join(","))],
    )
}

/// The family's argument bounds (each payload's own arguments).
const ARGS: &[Args] = &[
    arguments(
        RuleId::ModernManageTask,
        "manage_task",
        ArgBound::NONE
            .equal(&[("Action", "action")])
            .optional(&["TaskId"]),
    ),
    arguments(
        RuleId::ModernSchedule,
        "schedule",
        ArgBound::NONE
            .required(&["DurationSeconds"])
            .equal_if_present(&[("Prompt", "prompt")]),
    ),
    arguments(
        RuleId::ModernManageSubagentsList,
        "manage_subagents",
        ArgBound::NONE.equal(&[("Action", "action")]),
    ),
];

/// The family: ManageTask, Schedule and ManageSubagents payloads that stay
/// generic.
pub(crate) const FAMILY: Family = Family {
    file: "modern/generic.rs",
    docs: DOCS,
    claims: &[
        payload_claim(
            "type.googleapis.com/exa.cortex.core.tools.ManageTask",
            project_manage_task,
        ),
        payload_claim(
            "type.googleapis.com/exa.cortex.core.tools.Schedule",
            project_schedule,
        ),
        payload_claim(
            "type.googleapis.com/exa.cortex.core.tools.ManageSubagents",
            project_manage_subagents,
        ),
    ],
    hooks: &[],
    args: ARGS,
};
