//! Stage 3: project the persisted trajectory into the daemon's ordinary
//! (rehydrated) presentation, under bounded, named rules; everything else
//! fails closed with a named reason.
//!
//! The boundary: [`project`] takes the decoded persisted trajectory and
//! returns a [`Projection`] (a Trajectory message of the same type, the rule
//! each step was presented under, and the stored fields the presentation
//! omits) or a [`ProjectionRefusal`].
//!
//! One rule family per file; each rule's doc comment quotes the
//! specification's name for it and states its bounds:
//!
//! | file | rules |
//! |---|---|
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
//!
//! Ordinary (non-generic) steps pass through unchanged. A generic step that
//! no rule qualifies refuses the whole trajectory. The modern 1.4.x tool
//! payloads (`exa.cortex.core.tools.*` other than GenerateImage) are refused
//! here; their mappings are a separate family.

mod command_bridge;
mod embedded;
pub(crate) mod fields;
mod generate_image;
mod history2;
mod list_resources;
mod missing_tool_summary;
mod payload_free;
mod permissions;
pub mod reasons;
mod resultless;
pub mod table;
mod view_file;
mod write_to_file;

pub use reasons::Reason;

use crate::rules::RuleId;
use crate::schema::{to_daemon_json, Schema};
use crate::verdict::{ReasonClass, Refusal};
use fields::{has, message_refs, reject, step_type, sub, Reject, Wrapper, R};
use prost_reflect::{DynamicMessage, ReflectMessage, Value};

/// The ordinary presentation predicted for one trajectory.
#[derive(Debug, Clone)]
pub struct Projection {
    /// The presented trajectory (same message type as the persisted one).
    pub ordinary: DynamicMessage,
    /// The rule each step was presented under, by step index.
    pub step_rules: Vec<RuleId>,
    /// Further rules a step's presentation also relied on (step index, rule),
    /// e.g. the ContentOffset rule under an embedded view-file.
    pub extra_rules: Vec<(usize, RuleId)>,
    /// Each step presented under a rule other than pass-through: its index,
    /// its stored form and the stored paths (relative to the step) the
    /// presentation shows in another form. [`Projection::dropped`] derives
    /// from these.
    rewritten: Vec<(usize, DynamicMessage, Vec<&'static str>)>,
}

impl Projection {
    /// JSON-style paths of stored content the ordinary presentation omits
    /// (wrapper results, arguments, outer errors, ...): full raw equality
    /// must still cover them. Computed on demand: it renders both forms of
    /// every rewritten step as JSON, which the verify itself does not need.
    pub fn dropped(&self) -> Vec<String> {
        let presented = message_refs(&self.ordinary, "steps");
        let mut out = Vec::new();
        for (index, s, carried) in &self.rewritten {
            let Some(p) = presented.get(*index) else {
                continue;
            };
            let prefix = format!("steps[{index}]");
            let carried: Vec<String> = carried.iter().map(|c| format!("{prefix}.{c}")).collect();
            diff_paths(
                &to_daemon_json(s),
                &to_daemon_json(p),
                &prefix,
                &carried,
                &mut out,
            );
        }
        out
    }

    /// The distinct rules this projection used, sorted.
    pub fn rules(&self) -> Vec<RuleId> {
        let mut r = self.step_rules.clone();
        r.extend(self.extra_rules.iter().map(|(_, r)| *r));
        r.sort();
        r.dedup();
        r
    }
}

/// Why a step has no qualified presentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectionRefusal {
    pub step: usize,
    /// The rule whose bounds the step fell outside of, when one matched its shape.
    pub rule: Option<RuleId>,
    /// The specification's wording, e.g. `unsupported write_to_file append`
    /// (always `kind.text()`).
    pub reason: String,
    /// The named reason.
    pub kind: Reason,
    /// The specifics of this refusal (a field, a value); may be empty.
    pub detail: String,
}

impl ProjectionRefusal {
    pub fn to_refusal(&self) -> Refusal {
        let mut detail = self.reason.clone();
        if !self.detail.is_empty() {
            detail.push_str(": ");
            detail.push_str(&self.detail);
        }
        if let Some(r) = self.rule {
            detail.push_str(&format!(" ({})", r.id()));
        }
        Refusal::new(
            ReasonClass::UnqualifiedProjection,
            format!("steps[{}]", self.step),
            detail,
        )
    }
}

impl std::fmt::Display for ProjectionRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.to_refusal())
    }
}

/// What the engine needs while projecting one step.
pub(crate) struct Ctx<'a> {
    pub schema: &'a Schema,
    pub trajectory: &'a DynamicMessage,
    /// The step's index in the trajectory.
    pub index: usize,
}

/// One presented step.
pub(crate) struct Presented {
    pub step: DynamicMessage,
    pub rule: RuleId,
    pub extra: Vec<RuleId>,
    /// Stored paths (relative to the step, daemon JSON names) whose content
    /// the presentation shows in another form, so they are not "dropped".
    pub carried: Vec<&'static str>,
}

impl Presented {
    /// A generic step presented exactly as stored.
    pub fn unchanged(step: &DynamicMessage, rule: RuleId) -> Presented {
        Presented {
            step: step.clone(),
            rule,
            extra: Vec::new(),
            carried: Vec::new(),
        }
    }
}

/// Projects `trajectory` (decoded with `schema`) to its ordinary presentation.
pub fn project(
    schema: &Schema,
    trajectory: &DynamicMessage,
) -> Result<Projection, ProjectionRefusal> {
    let steps = message_refs(trajectory, "steps");
    let mut presented = Vec::with_capacity(steps.len());
    let mut step_rules = Vec::with_capacity(steps.len());
    let mut extra_rules = Vec::new();
    let mut rewritten = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        let ctx = Ctx {
            schema,
            trajectory,
            index,
        };
        let p = project_step(&ctx, step).map_err(|r| ProjectionRefusal {
            step: index,
            rule: r.rule,
            reason: r.kind.text().to_string(),
            kind: r.kind,
            detail: r.detail,
        })?;
        if p.rule != RuleId::Passthrough {
            rewritten.push((index, (*step).clone(), p.carried));
        }
        step_rules.push(p.rule);
        extra_rules.extend(p.extra.iter().map(|r| (index, *r)));
        presented.push(Value::Message(p.step));
    }
    // Every field but the steps as stored (copied one by one, so that the
    // stored steps are not cloned only to be replaced), then the presented steps.
    let desc = trajectory.descriptor();
    let steps_field = desc.get_field_by_name("steps");
    let mut ordinary = DynamicMessage::new(desc);
    for (fd, v) in trajectory.fields() {
        if Some(&fd) != steps_field.as_ref() {
            ordinary.set_field(&fd, v.clone());
        }
    }
    if let Some(fd) = &steps_field {
        ordinary.set_field(fd, Value::List(presented));
    }
    Ok(Projection {
        ordinary,
        step_rules,
        extra_rules,
        rewritten,
    })
}

/// The type URL of an embedded native Step.
pub(crate) const STEP_URL: &str = "type.googleapis.com/gemini_coder.Step";
/// The type URL prefix of the modern tool payloads.
pub(crate) const TOOLS_URL_PREFIX: &str = "type.googleapis.com/exa.cortex.core.tools.";

fn project_step(ctx: &Ctx<'_>, step: &DynamicMessage) -> R<Presented> {
    let is_generic_type = step_type(step) == "CORTEX_STEP_TYPE_GENERIC";
    let generic = sub(step, "generic");
    let generic = match (is_generic_type, generic) {
        (false, None) => return Ok(Presented::unchanged(step, RuleId::Passthrough)),
        (true, None) => return reject(None, Reason::GenericWithoutPayload, String::new()),
        (false, Some(_)) => {
            return reject(None, Reason::GenericUnderOtherType, step_type(step));
        }
        (true, Some(g)) => g,
    };
    let w = Wrapper::new(step, generic);
    match w.payload() {
        Some((url, bytes)) if url == STEP_URL => embedded::project(ctx, &w, &bytes),
        Some((url, bytes)) if url == generate_image::GENERATE_IMAGE_URL => {
            generate_image::project_any(ctx, &w, &bytes)
        }
        Some((url, _)) if url.starts_with(TOOLS_URL_PREFIX) => {
            reject(None, Reason::ModernToolPayload, url)
        }
        Some((url, _)) => reject(None, Reason::UnsupportedAnyType, url),
        None if w.result.is_none() => resultless::project(ctx, &w),
        None => payload_free::project(ctx, &w),
    }
}

/// The generic catch-all refusal for a tool no rule of a family covers.
pub(crate) fn unqualified<T>(w: &Wrapper) -> R<T> {
    let tool = if w.tool.is_empty() {
        "(no tool name)".to_string()
    } else {
        w.tool.clone()
    };
    Err(Reject {
        rule: None,
        kind: Reason::UnqualifiedGeneric,
        detail: tool,
    })
}

/// Keys under which a missing stored object is listed member by member
/// (the generic wrapper's arguments and result fields), not as a whole.
const DESCEND: &[&str] = &["generic", "args", "result"];

/// Appends to `out` the paths of `stored` content that `presented` does not
/// show: a member missing from the presentation or shown with another value.
/// Objects present on both sides are compared member by member; `carried`
/// paths are shown in another form and skipped.
fn diff_paths(
    stored: &serde_json::Value,
    presented: &serde_json::Value,
    path: &str,
    carried: &[String],
    out: &mut Vec<String>,
) {
    if carried.iter().any(|c| c == path) {
        return;
    }
    match (stored, presented) {
        (serde_json::Value::Object(s), serde_json::Value::Object(p)) => {
            for (k, v) in s {
                let sub_path = format!("{path}.{k}");
                match p.get(k) {
                    Some(pv) => diff_paths(v, pv, &sub_path, carried, out),
                    None if v.is_object() && DESCEND.contains(&k.as_str()) => {
                        let empty = serde_json::Value::Object(serde_json::Map::new());
                        diff_paths(v, &empty, &sub_path, carried, out);
                    }
                    None => {
                        if !carried.contains(&sub_path) {
                            out.push(sub_path);
                        }
                    }
                }
            }
        }
        (s, p) if s != p => out.push(path.to_string()),
        _ => {}
    }
}

/// Wrapper (Step) fields every generic rule may meet; rules narrow this.
pub(crate) fn has_records(step: &DynamicMessage) -> bool {
    has(step, "permissions")
        || has(step, "completed_interactions")
        || has(step, "requested_interaction")
}
