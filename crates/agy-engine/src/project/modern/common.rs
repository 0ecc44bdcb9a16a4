//! What the modern (agy 1.4.x) tool families share: decoding a payload
//! through the declarations resolved from the loaded pool, the permission1
//! refusal, the wrapper and payload shape checks, building presented native
//! steps, and the path-only read bounds. A leaf: it imports the field
//! helpers and the engine's leaf modules, never a family.

use crate::project::args::ArgBound;
use crate::project::checks::qualified_path;
use crate::project::family::{Args, Claim, Ctx, PayloadFn, Presented};
use crate::project::fields::{
    self, enum_name, extra_field, has, new_sub, reject, set, set_enum, Reject, Wrapper, R,
};
use crate::project::reasons::Reason;
use crate::rules::RuleId;
use bytes::Bytes;
use prost_reflect::{DynamicMessage, ReflectMessage, Value};

/// The presented native field replay147's copied form sets on a modern
/// RunCommand step.
pub(crate) const WAIT_FIELD: &str = "wait_ms_before_async";

/// skill146: "the flag is set when the path, with backslashes read as
/// slashes, ends in /SKILL.md or is exactly SKILL.md. Case matters, so
/// skill.md and SKILL.MD stay unmarked. The executor's skill registry, the
/// filesystem and the file content play no part."
pub(crate) fn is_skill_path(path: &str) -> bool {
    let p = path.replace('\\', "/");
    p == "SKILL.md" || p.ends_with("/SKILL.md")
}

/// The completed outcome (modeled `exa.cortex.core.tools.Outcome`).
pub(crate) const COMPLETED: &str = "OUTCOME_COMPLETED";
/// The canceled outcome.
pub(crate) const CANCELED_OUTCOME: &str = "OUTCOME_CANCELED";

/// Decodes the payload as `exa.cortex.core.tools.<short>` through the
/// declarations resolved from the loaded pool.
pub(crate) fn decode(ctx: &Ctx<'_>, rule: RuleId, short: &str, bytes: &Bytes) -> R<DynamicMessage> {
    let full = format!("exa.cortex.core.tools.{short}");
    let md = match ctx.schema.names.modern.message(&full) {
        Ok(m) => m.clone(),
        Err(missing) => return reject(Some(rule), Reason::ModernDeclaration, missing),
    };
    DynamicMessage::decode(md, bytes.clone())
        .or_else(|e| reject(Some(rule), Reason::ModernPayloadUndecodable, e.to_string()))
}

/// The payload of a call of one of `tools`: decoded as
/// `exa.cortex.core.tools.<short>` ([`decode`]), then the tool checked
/// ([`tool_is`]).
pub(crate) fn call_payload(
    ctx: &Ctx<'_>,
    w: &Wrapper,
    rule: RuleId,
    short: &str,
    tools: &[&str],
    bytes: &Bytes,
) -> R<DynamicMessage> {
    let payload = decode(ctx, rule, short, bytes)?;
    tool_is(w, rule, tools)?;
    Ok(payload)
}

/// The claim of a modern payload Any of type `url`, projected by
/// `project`: every such presentation also relies on the permission1
/// refusal.
pub(crate) const fn payload_claim(url: &'static str, project: PayloadFn) -> Claim {
    Claim::Payload {
        url,
        project,
        extra: &[RuleId::ModernPermission1],
    }
}

/// A modern rule's argument bound over calls of `tool`, refused with
/// [`Reason::ModernArguments`].
pub(crate) const fn arguments(rule: RuleId, tool: &'static str, bound: ArgBound) -> Args {
    Args::of(rule, tool, bound, Reason::ModernArguments)
}

/// A declared payload message's descriptor (for nested messages such as
/// `TaskInfo`), or the missing declaration.
pub(crate) fn declared(ctx: &Ctx<'_>, rule: RuleId, short: &str) -> R<()> {
    let full = format!("exa.cortex.core.tools.{short}");
    match ctx.schema.names.modern.message(&full) {
        Ok(_) => Ok(()),
        Err(missing) => reject(Some(rule), Reason::ModernDeclaration, missing),
    }
}

/// permission1: no permission grant, completed or requested interaction.
pub(crate) fn no_permission_records(w: &Wrapper) -> R<()> {
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
pub(crate) fn wrapper_shape(
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
pub(crate) fn wrapper_fields(
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
pub(crate) fn payload_fields(payload: &DynamicMessage, rule: RuleId, allowed: &[&str]) -> R<()> {
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
pub(crate) fn tool_is(w: &Wrapper, rule: RuleId, tools: &[&str]) -> R<()> {
    if tools.contains(&w.tool.as_str()) {
        Ok(())
    } else {
        reject(Some(rule), Reason::ModernTool, w.tool.clone())
    }
}

/// Refuses the wrapper's arguments with [`Reason::ModernArguments`] unless
/// `ok`: for the argument checks a family keeps beside its declared bound
/// because the ArgBound vocabulary cannot say them (canonical decimals, an
/// argument present exactly when a payload field is, a JSON string); each
/// caller says which. The refusal names the arguments, never their values:
/// a CodeContent or a Prompt can be a whole file, and a reason is shared.
pub(crate) fn arguments_hold(w: &Wrapper, rule: RuleId, ok: bool) -> R<()> {
    refuse_arguments_unless(ok, rule, || format!("{:?}", w.args.keys()))
}

/// [`arguments_hold`] for a family whose arguments are short values
/// (identifiers, an action, a number of seconds): the refusal shows them, so
/// that the value that missed is named.
pub(crate) fn argument_values_hold(w: &Wrapper, rule: RuleId, ok: bool) -> R<()> {
    refuse_arguments_unless(ok, rule, || format!("{:?}", w.args.0))
}

/// [`Reason::ModernArguments`] with `detail`, unless `ok`.
fn refuse_arguments_unless(ok: bool, rule: RuleId, detail: impl FnOnce() -> String) -> R<()> {
    if ok {
        Ok(())
    } else {
        reject(Some(rule), Reason::ModernArguments, detail())
    }
}

/// The wrapper's status is `status` and the payload's outcome `outcome`.
pub(crate) fn status_is(
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
pub(crate) fn put(m: &mut DynamicMessage, rule: RuleId, field: &str, v: Value) -> R<()> {
    if set(m, field, v) {
        Ok(())
    } else {
        Err(presented_missing(rule, m, field))
    }
}

/// Sets a presented enum field by value name, refusing when it is missing.
pub(crate) fn put_enum(m: &mut DynamicMessage, rule: RuleId, field: &str, value: &str) -> R<()> {
    if set_enum(m, field, value) {
        Ok(())
    } else {
        Err(presented_missing(rule, m, &format!("{field}={value}")))
    }
}

/// A new message of field `field`'s type, refusing when it is missing.
pub(crate) fn child(parent: &DynamicMessage, rule: RuleId, field: &str) -> R<DynamicMessage> {
    new_sub(parent, field).ok_or_else(|| presented_missing(rule, parent, field))
}

/// A presented native step of `step_type` with the wrapper's status and
/// metadata (and its task details when `task_details`).
pub(crate) fn native_step(
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
        if let Some(td) = fields::sub(w.step, "task_details") {
            put(&mut step, rule, "task_details", Value::Message(td.clone()))?;
        }
    }
    Ok(step)
}

/// The bounds every path-only modern read shares (missing-file and image
/// reads): DONE and COMPLETED and a path that needs no URI normalization.
/// Returns the path. Their arguments, exactly AbsolutePath equal to it, are
/// each rule's declared bound, which the dispatcher enforces.
pub(crate) fn completed_path_read(
    w: &Wrapper,
    payload: &DynamicMessage,
    rule: RuleId,
) -> R<String> {
    status_is(w, payload, rule, fields::DONE, COMPLETED)?;
    let path = fields::text(payload, "path");
    if !qualified_path(&path) {
        return reject(Some(rule), Reason::ModernPath, path);
    }
    Ok(path)
}

/// A presented VIEW_FILE step for a modern read of `path`: the wrapper's
/// status and metadata, and its `view_file` with the path's URI set.
pub(crate) fn view_file_step(
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

/// The presented VIEW_FILE step of a modern read of `path` (`step` and `vf`
/// from [`view_file_step`], with the rule's own fields set): `vf` gains the
/// shown `content` and the skill146 flag, and the step is presented under
/// `rule` and skill146, carrying the result text and payload it shows.
pub(crate) fn view_file_presented(
    step: DynamicMessage,
    mut vf: DynamicMessage,
    rule: RuleId,
    path: &str,
    content: String,
) -> R<Presented> {
    put(&mut vf, rule, "content", Value::String(content))?;
    put(
        &mut vf,
        rule,
        "is_skill_file",
        Value::Bool(is_skill_path(path)),
    )?;
    let extra = vec![RuleId::ModernSkillPath];
    presented_native(step, rule, ("view_file", vf), extra, SHOWS_RESULT)
}

/// What a presentation that shows the result text carries in another form.
pub(crate) const SHOWS_RESULT: &[&str] = &["generic.result.result", "generic.result.payload"];
/// What one that shows only the payload carries.
pub(crate) const SHOWS_PAYLOAD: &[&str] = &["generic.result.payload"];

/// The presented native `step` with its body (field name, message) set,
/// under `rule` and `extra`, carrying the stored paths `carried` shows.
pub(crate) fn presented_native(
    mut step: DynamicMessage,
    rule: RuleId,
    (field, body): (&str, DynamicMessage),
    extra: Vec<RuleId>,
    carried: &[&'static str],
) -> R<Presented> {
    put(&mut step, rule, field, Value::Message(body))?;
    Ok(Presented {
        step: Some(step),
        rule,
        extra,
        carried: carried.to_vec(),
    })
}
