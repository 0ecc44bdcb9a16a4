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
//! | `ide225.rs` | ide225 read permission records, ByteOffset=0 reads, artifact creates and edits (called from `read_file.rs` and `file_edit.rs`) |
//! | `finish.rs` | finish147 Finish calls and missing-file read wrappers |
//! | `image_read.rs` | replay147 completed image reads |
//! | `replay_wait.rs` | replay147 command wait forms (the copied form presented; the omitted form an alternative the comparison may take for a whole trajectory) |
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

mod file_edit;
mod finish;
mod generic;
mod ide225;
mod image_read;
mod invoke_subagent;
mod read_file;
pub mod replay_wait;
mod run_command;

pub(crate) use run_command::is_canceled_background;
pub(crate) use run_command::project_canceled_background;

use super::fields::{
    enum_name, extra_field, has, new_sub, reject, set, set_enum, Reject, Wrapper, R,
};
use super::table::RuleDoc;
use super::{Ctx, Presented, Reason, TOOLS_URL_PREFIX};
use crate::rules::RuleId;
use bytes::Bytes;
use prost_reflect::{DynamicMessage, ReflectMessage, Value};

/// Every modern rule's row.
pub(crate) fn docs() -> Vec<RuleDoc> {
    let families: &[&[RuleDoc]] = &[
        run_command::DOCS,
        read_file::DOCS,
        file_edit::DOCS,
        invoke_subagent::DOCS,
        generic::DOCS,
        PERMISSION_DOCS,
        ide225::DOCS,
        finish::DOCS,
        image_read::DOCS,
        replay_wait::DOCS,
    ];
    families.iter().flat_map(|f| f.iter().copied()).collect()
}

const PERMISSION_DOCS: &[RuleDoc] = &[RuleDoc {
    rule: RuleId::ModernPermission1,
    accepts: "Accepts nothing by itself: every modern tool mapping (tools143, tools144, finish147, replay147) refuses a wrapper carrying a permission grant, a completed interaction or a requested interaction (the combined tools143-permission1 suffix); the one exception is ide225's completed read_file wrapper carrying both a grant and a completed interaction. Older native-Step permission mappings remain separate.",
    reasons: &[Reason::ModernPermissionRecord],
}];

/// The completed outcome (modeled `exa.cortex.core.tools.Outcome`).
pub(super) const COMPLETED: &str = "OUTCOME_COMPLETED";
/// The canceled outcome.
pub(super) const CANCELED_OUTCOME: &str = "OUTCOME_CANCELED";

/// Projects a wrapper whose result payload is a modern tool Any.
pub(crate) fn project(ctx: &Ctx<'_>, w: &Wrapper, url: &str, bytes: &Bytes) -> R<Presented> {
    let name = url.strip_prefix(TOOLS_URL_PREFIX).unwrap_or(url);
    let presented = match name {
        "RunCommand" => run_command::project(ctx, w, bytes),
        "ReadFile" => read_file::project(ctx, w, bytes),
        "FileEdit" => file_edit::project(ctx, w, bytes),
        "InvokeSubagent" => invoke_subagent::project(ctx, w, bytes),
        "ManageTask" => generic::project_manage_task(ctx, w, bytes),
        "Schedule" => generic::project_schedule(ctx, w, bytes),
        "ManageSubagents" => generic::project_manage_subagents(ctx, w, bytes),
        "Finish" => finish::project_finish(ctx, w, bytes),
        _ => reject(None, Reason::ModernToolPayload, url),
    };
    presented.map(with_permission1)
}

/// Records that the presentation passed the permission1 refusal.
pub(crate) fn with_permission1(mut p: Presented) -> Presented {
    p.extra.push(RuleId::ModernPermission1);
    p
}

/// Decodes the payload as `exa.cortex.core.tools.<short>` through the
/// declarations resolved from the loaded pool.
pub(super) fn decode(ctx: &Ctx<'_>, rule: RuleId, short: &str, bytes: &Bytes) -> R<DynamicMessage> {
    let full = format!("exa.cortex.core.tools.{short}");
    let md = match ctx.schema.names.modern.message(&full) {
        Ok(m) => m.clone(),
        Err(missing) => return reject(Some(rule), Reason::ModernDeclaration, missing),
    };
    DynamicMessage::decode(md, bytes.clone())
        .or_else(|e| reject(Some(rule), Reason::ModernPayloadUndecodable, e.to_string()))
}

/// A declared payload message's descriptor (for nested messages such as
/// `TaskInfo`), or the missing declaration.
pub(super) fn declared(ctx: &Ctx<'_>, rule: RuleId, short: &str) -> R<()> {
    let full = format!("exa.cortex.core.tools.{short}");
    match ctx.schema.names.modern.message(&full) {
        Ok(_) => Ok(()),
        Err(missing) => reject(Some(rule), Reason::ModernDeclaration, missing),
    }
}

/// permission1: no permission grant, completed or requested interaction.
pub(super) fn no_permission_records(w: &Wrapper) -> R<()> {
    for f in [
        "permissions",
        "completed_interactions",
        "requested_interaction",
    ] {
        if has(w.step, f) {
            return reject(
                Some(RuleId::ModernPermission1),
                Reason::ModernPermissionRecord,
                f,
            );
        }
    }
    Ok(())
}

/// The wrapper's shape: the permission1 refusal, then only `step_fields` on
/// the Step, only args and result under generic, only `result_fields` in
/// the result.
pub(super) fn wrapper_shape(
    w: &Wrapper,
    rule: RuleId,
    step_fields: &[&str],
    result_fields: &[&str],
) -> R<()> {
    no_permission_records(w)?;
    wrapper_fields(w, rule, step_fields, result_fields)
}

/// [`wrapper_shape`] without the permission1 refusal (for ide225's reads,
/// whose permission records the caller has qualified).
pub(super) fn wrapper_fields(
    w: &Wrapper,
    rule: RuleId,
    step_fields: &[&str],
    result_fields: &[&str],
) -> R<()> {
    let extra = w
        .extra_step_field(step_fields)
        .map(|f| format!("step {f}"))
        .or_else(|| {
            w.extra_generic_field(&["args", "result"])
                .map(|f| format!("generic {f}"))
        })
        .or_else(|| {
            w.extra_result_field(result_fields)
                .map(|f| format!("result {f}"))
        });
    match extra {
        Some(f) => reject(Some(rule), Reason::ModernWrapperField, f),
        None => Ok(()),
    }
}

/// The payload sets nothing outside `allowed`.
pub(super) fn payload_fields(payload: &DynamicMessage, rule: RuleId, allowed: &[&str]) -> R<()> {
    match extra_field(payload, allowed) {
        Some(f) => reject(
            Some(rule),
            Reason::ModernPayloadField,
            format!("{}.{f}", payload.descriptor().name()),
        ),
        None => Ok(()),
    }
}

/// The wrapper's tool call names `tool`.
pub(super) fn tool_is(w: &Wrapper, rule: RuleId, tools: &[&str]) -> R<()> {
    if tools.contains(&w.tool.as_str()) {
        Ok(())
    } else {
        reject(Some(rule), Reason::ModernTool, w.tool.clone())
    }
}

/// The wrapper's status is `status` and the payload's outcome `outcome`.
pub(super) fn status_is(
    w: &Wrapper,
    payload: &DynamicMessage,
    rule: RuleId,
    status: &str,
    outcome: &str,
) -> R<()> {
    let o = enum_name(payload, "outcome");
    if w.status == status && o == outcome {
        Ok(())
    } else {
        reject(
            Some(rule),
            Reason::ModernStatus,
            format!("{} with {o}", w.status),
        )
    }
}

fn presented_missing(rule: RuleId, m: &DynamicMessage, field: &str) -> Reject {
    Reject {
        rule: Some(rule),
        kind: Reason::ModernPresentedField,
        detail: format!("{}.{field}", m.descriptor().full_name()),
    }
}

/// Sets a presented field, refusing when the loaded descriptors lack it.
pub(super) fn put(m: &mut DynamicMessage, rule: RuleId, field: &str, v: Value) -> R<()> {
    if set(m, field, v) {
        Ok(())
    } else {
        Err(presented_missing(rule, m, field))
    }
}

/// Sets a presented enum field by value name, refusing when it is missing.
pub(super) fn put_enum(m: &mut DynamicMessage, rule: RuleId, field: &str, value: &str) -> R<()> {
    if set_enum(m, field, value) {
        Ok(())
    } else {
        Err(presented_missing(rule, m, &format!("{field}={value}")))
    }
}

/// A new message of field `field`'s type, refusing when it is missing.
pub(super) fn child(parent: &DynamicMessage, rule: RuleId, field: &str) -> R<DynamicMessage> {
    new_sub(parent, field).ok_or_else(|| presented_missing(rule, parent, field))
}

/// A presented native step of `step_type` with the wrapper's status and
/// metadata (and its task details when `task_details`).
pub(super) fn native_step(
    w: &Wrapper,
    rule: RuleId,
    step_type: &str,
    task_details: bool,
) -> R<DynamicMessage> {
    let mut step = DynamicMessage::new(w.step.descriptor());
    put_enum(&mut step, rule, "type", step_type)?;
    put_enum(&mut step, rule, "status", &w.status)?;
    if let Some(m) = w.metadata() {
        put(&mut step, rule, "metadata", Value::Message(m.clone()))?;
    }
    if task_details {
        if let Some(td) = super::fields::sub(w.step, "task_details") {
            put(&mut step, rule, "task_details", Value::Message(td.clone()))?;
        }
    }
    Ok(step)
}

/// The bounds every path-only modern read shares (missing-file and image
/// reads): DONE and COMPLETED, a path that needs no URI normalization, and
/// the arguments exactly AbsolutePath equal to it. Returns the path.
pub(super) fn completed_path_read(
    w: &Wrapper,
    payload: &DynamicMessage,
    rule: RuleId,
) -> R<String> {
    status_is(w, payload, rule, super::fields::DONE, COMPLETED)?;
    let path = super::fields::text(payload, "path");
    if !super::view_file::qualified_path(&path) {
        return reject(Some(rule), Reason::ModernPath, path);
    }
    if !w.args.keys_are(&["AbsolutePath"])
        || w.args.string("AbsolutePath").as_deref() != Some(path.as_str())
    {
        return reject(
            Some(rule),
            Reason::ModernArguments,
            format!("{:?}", w.args.0),
        );
    }
    Ok(path)
}

/// A presented VIEW_FILE step for a modern read of `path`: the wrapper's
/// status and metadata, and its `view_file` with the path's URI set.
pub(super) fn view_file_step(
    w: &Wrapper,
    rule: RuleId,
    path: &str,
) -> R<(DynamicMessage, DynamicMessage)> {
    let step = native_step(w, rule, "CORTEX_STEP_TYPE_VIEW_FILE", false)?;
    let mut vf = child(&step, rule, "view_file")?;
    put(
        &mut vf,
        rule,
        "absolute_path_uri",
        Value::String(format!("file://{path}")),
    )?;
    Ok((step, vf))
}
