//! Stage 3: project the persisted trajectory into the daemon's ordinary
//! (rehydrated) presentation, under bounded, named rules; everything else
//! fails closed with a named reason.
//!
//! The boundary: [`project`] takes the persisted trajectory, indexed from its
//! encoding (only the steps it may rewrite are decoded), and
//! returns a [`Projection`] (the rule each step was presented under and the
//! presented form of every step a rule rewrote; every other step is shown as
//! stored, so it is not copied) or a [`ProjectionRefusal`].
//! [`Projection::present`] shows the ordinary trajectory in place (the
//! rewritten steps swapped into the stored trajectory, swapped back after);
//! [`Projection::ordinary`] builds it as a new message.
//!
//! One rule family per file; each rule's doc comment quotes the
//! specification's name for it and states its bounds:
//!
//! The families are registered once, in `registry.rs`; each family's file
//! declares a `FAMILY` (its rule rows, the steps it claims, the hooks it
//! lends others, its argument bounds) and imports only the leaf modules
//! (`family.rs`: the step context and the family's shape; `fields.rs`,
//! `args.rs`, `checks.rs`, `native.rs`, `doc.rs`, `reasons.rs`,
//! `projection.rs`, `modern/common.rs`), never another family. A family's
//! argument bounds are data the dispatcher executes (`bounds.rs`): a step is
//! accepted only when its arguments are within the bounds declared for the
//! rules it is presented under, whatever the family's own code reads.
//!
//! | file | rules |
//! |---|---|
//! | `engine.rs` | ordinary steps pass through; the source reader's rules (rows only) |
//! | `embedded.rs` | generic wrappers over embedded native Steps, canceled command status, the outer-error rule |
//! | `permissions.rs` | approved permission records on run-command and view-file |
//! | `view_file.rs` | view-file ContentOffset; resultless BUILTIN view_file |
//! | `write_to_file.rs` | write_to_file Append |
//! | `resultless.rs` | failed before the tool ran, hook-denied, rejected permission, canceled prompt |
//! | `missing_tool_summary.rs` | calls rejected for missing toolSummary |
//! | `list_resources.rs` | failed list_resources |
//! | `command_bridge.rs` | the run_command bridge formatting failure |
//! | `payload_free.rs` | payload-free manage_task, send_message, send_input, schedule, subagents, permissions |
//! | `generate_image.rs` | failed generate_image, successful embedded image Steps, the GenerateImage Any |
//! | `history2.rs` | the is_skill_file registry rule for failed legacy reads |
//! | `modern/` | the modern 1.4.x tool payloads: tools143, permission1, tools144, skill146, ide225, finish147, replay147 (one family per file) |
//!
//! Ordinary (non-generic) steps pass through unchanged. A generic step that
//! no rule qualifies refuses the whole trajectory: a payload Any whose type
//! no family claims (a modern `exa.cortex.core.tools.*` payload no modern
//! family names, or any other type), or a payload-less wrapper no family
//! takes.

pub(crate) mod args;
mod bounds;
pub(crate) mod checks;
mod command_bridge;
pub(crate) mod doc;
mod embedded;
mod engine;
pub(crate) mod family;
pub(crate) mod fields;
mod generate_image;
mod history2;
mod list_resources;
mod missing_tool_summary;
pub(crate) mod modern;
pub(crate) mod native;
mod payload_free;
mod permissions;
pub(crate) mod projection;
pub mod reasons;
pub(crate) mod registry;
mod resultless;
pub mod table;
mod view_file;
mod write_to_file;

pub use args::ArgBound;
pub use family::Args;
pub use projection::{
    Alternative, AlternativeForm, Present, Projection, ProjectionRefusal, Unspelled,
};
pub use reasons::Reason;
pub use registry::{argument_bounds, qualified_rules};
pub use resultless::REJECTED_ADVICE;

use crate::rules::RuleId;
use crate::schema::Schema;
use crate::source::wire_trajectory::WireTrajectory;
use family::{Around, Claim, Ctx, Hook, Presented, TOOLS_URL_PREFIX};
use fields::{reject, step_type, sub, Reject, Wrapper, R};
use projection::Rewrite;
use prost_reflect::{DynamicMessage, Value};

/// Projects the stored trajectory (indexed from its encoding, decoded with
/// `schema`) to its ordinary presentation. A step whose wire shows it is not
/// a generic wrapper passes through without being decoded; every other step
/// is decoded alone and goes to the family that claims it. Last, the
/// alternative complete presentations the families qualify for the whole
/// trajectory are added.
pub fn project(
    schema: &Schema,
    trajectory: &WireTrajectory,
) -> Result<Projection, ProjectionRefusal> {
    let around = Around::new(trajectory);
    let mut step_rules = Vec::with_capacity(trajectory.len());
    let mut extra_rules = Vec::new();
    let mut rewritten = Vec::new();
    for index in 0..trajectory.len() {
        if trajectory.passes_through(index) {
            step_rules.push(RuleId::Passthrough);
            continue;
        }
        let refusal = |r: Reject| ProjectionRefusal {
            step: index,
            rule: r.rule,
            reason: r.kind.text().to_string(),
            kind: r.kind,
            detail: r.detail,
        };
        let step = trajectory.decode_step(index).map_err(|e| {
            refusal(Reject {
                rule: None,
                kind: Reason::StoredUndecodable,
                detail: format!("step: {e}"),
            })
        })?;
        let ctx = Ctx::new(schema, index, &around, registry::FAMILIES);
        let p = project_step(&ctx, &step).map_err(refusal)?;
        if let Some(presented) = p.step {
            rewritten.push(Rewrite {
                index,
                step: Value::Message(presented),
                carried: p.carried,
            });
        }
        step_rules.push(p.rule);
        extra_rules.extend(p.extra.iter().map(|r| (index, *r)));
    }
    let mut projection = Projection::new(step_rules, extra_rules, rewritten);
    let forms: Vec<AlternativeForm> = registry::FAMILIES
        .iter()
        .flat_map(|f| f.hooks.iter())
        .filter_map(|h| match h {
            Hook::Alternative(form) => form(&projection),
            _ => None,
        })
        .collect();
    for form in forms {
        projection.add_alternative(form);
    }
    Ok(projection)
}

/// [`project`] for a trajectory held as a message (tests, tools): it is
/// encoded and indexed first.
pub fn project_message(
    schema: &Schema,
    trajectory: &DynamicMessage,
) -> Result<Projection, ProjectionRefusal> {
    use prost::Message;
    let encoding = bytes::Bytes::from(trajectory.encode_to_vec());
    let wire = WireTrajectory::index(&schema.names, encoding).map_err(|e| ProjectionRefusal {
        step: 0,
        rule: None,
        reason: Reason::StoredUndecodable.text().to_string(),
        kind: Reason::StoredUndecodable,
        detail: e.to_string(),
    })?;
    project(schema, &wire)
}

/// The rules a claim's presentation also relied on, added to it.
fn with_extra(mut p: Presented, extra: &[RuleId]) -> Presented {
    p.extra.extend_from_slice(extra);
    p
}

/// Hands a generic step to the family that claims it ([`claim_step`]), then
/// holds the presentation to the argument bounds the families declare for
/// the rules it is presented under ([`bounds::enforce`]): no family accepts
/// an argument its declaration does not name.
fn project_step(ctx: &Ctx<'_>, step: &DynamicMessage) -> R<Presented> {
    let is_generic_type = step_type(step) == "CORTEX_STEP_TYPE_GENERIC";
    let generic = sub(step, "generic");
    let generic = match (is_generic_type, generic) {
        (false, None) => return Ok(Presented::unchanged(RuleId::Passthrough)),
        (true, None) => return reject(None, Reason::GenericWithoutPayload, String::new()),
        (false, Some(_)) => {
            return reject(None, Reason::GenericUnderOtherType, step_type(step));
        }
        (true, Some(g)) => g,
    };
    let w = Wrapper::new(step, generic);
    let payload = w.payload();
    let p = claim_step(ctx, &w, payload.as_ref())?;
    bounds::enforce(ctx, &w, payload.as_ref(), &p)?;
    Ok(p)
}

/// The family that claims a generic wrapper projects it: a payload Any by
/// its exact type URL; a wrapper without a result to the resultless family;
/// a payload-less one with a result to the first `PayloadlessWhen` that
/// recognizes it, else the payload-free family.
fn claim_step(ctx: &Ctx<'_>, w: &Wrapper, payload: bounds::Payload) -> R<Presented> {
    match payload {
        Some((url, bytes)) => {
            for claim in ctx.claims() {
                if let Claim::Payload {
                    url: claimed,
                    project,
                    extra,
                } = claim
                {
                    if claimed == url {
                        return project(ctx, w, bytes).map(|p| with_extra(p, extra));
                    }
                }
            }
            if url.starts_with(TOOLS_URL_PREFIX) {
                reject(None, Reason::ModernToolPayload, url.clone())
            } else {
                reject(None, Reason::UnsupportedAnyType, url.clone())
            }
        }
        None if w.result.is_none() => match ctx.claims().find_map(|c| match c {
            Claim::Resultless(project) => Some(*project),
            _ => None,
        }) {
            Some(project) => project(ctx, w),
            None => reject(None, Reason::ResultlessTool, w.tool.clone()),
        },
        None => {
            for claim in ctx.claims() {
                if let Claim::PayloadlessWhen {
                    when,
                    project,
                    extra,
                } = claim
                {
                    if when(w) {
                        return project(ctx, w).map(|p| with_extra(p, extra));
                    }
                }
            }
            match ctx.claims().find_map(|c| match c {
                Claim::Payloadless(project) => Some(*project),
                _ => None,
            }) {
                Some(project) => project(ctx, w),
                None => family::unqualified(w),
            }
        }
    }
}
