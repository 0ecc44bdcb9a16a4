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
//! | `modern/` | the modern 1.4.x tool payloads: tools143, permission1, tools144, skill146, ide225, finish147, replay147 (one family per file) |
//!
//! Ordinary (non-generic) steps pass through unchanged. A generic step that
//! no rule qualifies refuses the whole trajectory. Modern 1.4.x tool
//! payloads (`exa.cortex.core.tools.*`) go to `modern/` (GenerateImage to
//! `generate_image.rs`); any other modern payload is still refused.

pub(crate) mod args;
mod command_bridge;
mod embedded;
pub(crate) mod fields;
mod generate_image;
mod history2;
mod list_resources;
mod missing_tool_summary;
pub(crate) mod modern;
mod payload_free;
mod permissions;
pub mod reasons;
mod resultless;
pub mod table;
pub(crate) mod view_file;
mod write_to_file;

pub use reasons::Reason;
pub use resultless::REJECTED_ADVICE;

use crate::rules::RuleId;
use crate::schema::{to_daemon_json, Schema};
use crate::source::wire_trajectory::WireTrajectory;
use crate::verdict::{ReasonClass, Refusal};
use fields::{has, message_refs, reject, step_type, sub, Reject, Wrapper, R};
use prost_reflect::{DynamicMessage, Value};
use std::cell::OnceCell;

/// An alternative complete presentation of a whole trajectory that a rule
/// qualifies beside the one [`Projection::present`] shows, as typed data the
/// comparison can try without knowing the rule (`compare` imports no rule
/// module).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alternative {
    /// replay147: every modern RunCommand step without its wait
    /// (`modern::replay_wait`).
    WaitsOmitted,
}

impl Alternative {
    /// What a presentation in this form looks like, for the line that says a
    /// comparison took it.
    pub fn describe(self) -> &'static str {
        match self {
            Alternative::WaitsOmitted => "the answer omits replay147 waits throughout",
        }
    }
}

/// The ordinary presentation predicted for one trajectory.
#[derive(Debug, Clone)]
pub struct Projection {
    /// The rule each step was presented under, by step index.
    pub step_rules: Vec<RuleId>,
    /// Further rules a step's presentation also relied on (step index, rule),
    /// e.g. the ContentOffset rule under an embedded view-file.
    pub extra_rules: Vec<(usize, RuleId)>,
    /// Each step a rule presents in another form than stored, by index.
    rewritten: Vec<Rewrite>,
}

/// One step presented in another form than stored.
#[derive(Debug, Clone)]
struct Rewrite {
    index: usize,
    /// The presented step (a `Value::Message`); while a [`Present`] guard
    /// lives, the stored one, swapped out of the trajectory.
    step: Value,
    /// Stored paths (relative to the step, daemon JSON names) whose content
    /// the presentation shows in another form, so they are not "dropped".
    carried: Vec<&'static str>,
}

/// The ordinary trajectory shown in place: the projection's rewritten steps
/// are swapped into the stored trajectory while this guard lives and swapped
/// back when it drops. Derefs to the presented trajectory.
pub struct Present<'a> {
    trajectory: &'a mut DynamicMessage,
    rewritten: &'a mut [Rewrite],
}

impl<'a> Present<'a> {
    fn swap(&mut self) {
        let Some(Value::List(steps)) = self.trajectory.get_field_by_name_mut("steps") else {
            return;
        };
        for r in self.rewritten.iter_mut() {
            if let Some(slot) = steps.get_mut(r.index) {
                std::mem::swap(slot, &mut r.step);
            }
        }
    }
}

impl std::ops::Deref for Present<'_> {
    type Target = DynamicMessage;
    fn deref(&self) -> &DynamicMessage {
        self.trajectory
    }
}

impl Drop for Present<'_> {
    fn drop(&mut self) {
        // a swap is its own inverse
        self.swap();
    }
}

impl Projection {
    /// JSON-style paths of stored content the ordinary presentation omits
    /// (wrapper results, arguments, outer errors, ...): full raw equality
    /// must still cover them. Computed on demand: it renders both forms of
    /// every rewritten step as JSON, which the verify itself does not need.
    /// `trajectory` is the one projected.
    pub fn dropped(&self, trajectory: &DynamicMessage) -> Vec<String> {
        let stored = message_refs(trajectory, "steps");
        let mut out = Vec::new();
        for r in &self.rewritten {
            let (Some(s), Some(p)) = (stored.get(r.index), r.step.as_message()) else {
                continue;
            };
            let prefix = format!("steps[{}]", r.index);
            let carried: Vec<String> = r.carried.iter().map(|c| format!("{prefix}.{c}")).collect();
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

    /// Shows the ordinary trajectory in place of `trajectory` (the one
    /// projected) for the guard's lifetime, without copying any step.
    pub fn present<'a>(&'a mut self, trajectory: &'a mut DynamicMessage) -> Present<'a> {
        let mut p = Present {
            trajectory,
            rewritten: &mut self.rewritten,
        };
        p.swap();
        p
    }

    /// The ordinary trajectory as a new message (`trajectory`: the one
    /// projected). Copies every step; the verify uses [`Projection::present`].
    pub fn ordinary(&self, trajectory: &DynamicMessage) -> DynamicMessage {
        let mut out = trajectory.clone();
        if let Some(Value::List(steps)) = out.get_field_by_name_mut("steps") {
            for r in &self.rewritten {
                if let Some(slot) = steps.get_mut(r.index) {
                    *slot = r.step.clone();
                }
            }
        }
        out
    }

    /// The presented form of step `index` (`trajectory`: the one projected).
    pub fn presented_step<'a>(
        &'a self,
        trajectory: &'a DynamicMessage,
        index: usize,
    ) -> Option<&'a DynamicMessage> {
        if let Some(r) = self.rewritten.iter().find(|r| r.index == index) {
            return r.step.as_message();
        }
        message_refs(trajectory, "steps").get(index).copied()
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
    /// The step's index in the trajectory.
    pub index: usize,
    around: &'a Around<'a>,
}

/// The trajectory around the steps: decoded (all but its steps) on first use.
struct Around<'a> {
    wire: &'a WireTrajectory,
    decoded: OnceCell<Result<DynamicMessage, String>>,
}

impl Ctx<'_> {
    /// The trajectory's own fields (ids, executor metadata; not its steps),
    /// for a rule that reads around the step.
    pub fn trajectory(&self, rule: Option<RuleId>) -> R<&DynamicMessage> {
        let decoded = self.around.decoded.get_or_init(|| {
            self.around
                .wire
                .decode_without_steps()
                .map_err(|e| e.to_string())
        });
        match decoded {
            Ok(t) => Ok(t),
            Err(e) => reject(rule, Reason::StoredUndecodable, format!("trajectory: {e}")),
        }
    }
}

/// One presented step.
pub(crate) struct Presented {
    /// The presented form; `None`: exactly as stored.
    pub step: Option<DynamicMessage>,
    pub rule: RuleId,
    pub extra: Vec<RuleId>,
    /// Stored paths (relative to the step, daemon JSON names) whose content
    /// the presentation shows in another form, so they are not "dropped".
    pub carried: Vec<&'static str>,
}

impl Presented {
    /// A generic step presented exactly as stored.
    pub fn unchanged(rule: RuleId) -> Presented {
        Presented {
            step: None,
            rule,
            extra: Vec::new(),
            carried: Vec::new(),
        }
    }
}

/// Projects the stored trajectory (indexed from its encoding, decoded with
/// `schema`) to its ordinary presentation. A step whose wire shows it is not
/// a generic wrapper passes through without being decoded; every other step
/// is decoded alone and goes to the rules.
pub fn project(
    schema: &Schema,
    trajectory: &WireTrajectory,
) -> Result<Projection, ProjectionRefusal> {
    let around = Around {
        wire: trajectory,
        decoded: OnceCell::new(),
    };
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
        let ctx = Ctx {
            schema,
            index,
            around: &around,
        };
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
    Ok(Projection {
        step_rules,
        extra_rules,
        rewritten,
    })
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

/// The type URL of an embedded native Step.
pub(crate) const STEP_URL: &str = "type.googleapis.com/gemini_coder.Step";
/// The type URL prefix of the modern tool payloads.
pub(crate) const TOOLS_URL_PREFIX: &str = "type.googleapis.com/exa.cortex.core.tools.";

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
    match w.payload() {
        Some((url, bytes)) if url == STEP_URL => embedded::project(ctx, &w, &bytes),
        Some((url, bytes)) if url == generate_image::GENERATE_IMAGE_URL => {
            generate_image::project_any(ctx, &w, &bytes)
        }
        Some((url, bytes)) if url.starts_with(TOOLS_URL_PREFIX) => {
            modern::project(ctx, &w, &url, &bytes)
        }
        Some((url, _)) => reject(None, Reason::UnsupportedAnyType, url),
        None if w.result.is_none() => resultless::project(ctx, &w),
        None if modern::is_canceled_background(&w) => {
            modern::project_canceled_background(&w).map(modern::with_permission1)
        }
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
