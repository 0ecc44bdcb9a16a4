//! What the projection stage hands on: the [`Projection`] (the rule each
//! step was presented under and the presented form of every step a rule
//! rewrote), its typed [`Alternative`] presentations, and the
//! [`ProjectionRefusal`]. A leaf: it imports no rule family.

use super::fields::message_refs;
use super::reasons::Reason;
use crate::rules::RuleId;
use crate::schema::to_daemon_json;
use crate::verdict::{ReasonClass, Refusal};
use prost_reflect::{DynamicMessage, Value};

/// Which alternative complete presentation a form is, for the line that
/// says a comparison took it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alternative {
    /// replay147: every modern RunCommand step without its wait
    /// (`modern::replay_wait`).
    WaitsOmitted,
}

impl Alternative {
    /// What a presentation in this form looks like.
    pub fn describe(self) -> &'static str {
        match self {
            Alternative::WaitsOmitted => "the answer omits replay147 waits throughout",
        }
    }
}

/// A member an answer in an alternative form may not spell at all (an
/// explicit default value included): each path is one spelling (daemon JSON
/// or proto names) of the member, relative to the step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unspelled {
    /// The step index.
    pub step: usize,
    /// The member's spellings, each a path of object members.
    pub spellings: &'static [&'static [&'static str]],
    /// Why, in the rule's words (the mismatch path's note).
    pub why: &'static str,
}

/// An alternative complete presentation of a whole trajectory that a rule
/// qualifies beside the one [`Projection::present`] shows, as typed data the
/// comparison tries without knowing the rule (`compare` imports no rule
/// module): the steps it presents otherwise, and the members an answer in
/// this form may not spell.
#[derive(Debug, Clone)]
pub struct AlternativeForm {
    pub kind: Alternative,
    /// (step index, the step as this form presents it).
    steps: Vec<(usize, Value)>,
    pub unspelled: Vec<Unspelled>,
}

impl AlternativeForm {
    /// A form presenting each of `steps` (index, presented step) otherwise.
    pub(crate) fn new(
        kind: Alternative,
        steps: Vec<(usize, DynamicMessage)>,
        unspelled: Vec<Unspelled>,
    ) -> AlternativeForm {
        AlternativeForm {
            kind,
            steps: steps
                .into_iter()
                .map(|(i, m)| (i, Value::Message(m)))
                .collect(),
            unspelled,
        }
    }

    /// The paths of `answer` (an ordinary response's JSON) that spell a
    /// member this form may not spell.
    pub fn violations(&self, answer: &serde_json::Value) -> Vec<String> {
        let steps = answer.get("steps").and_then(|s| s.as_array());
        let mut out = Vec::new();
        for u in &self.unspelled {
            let Some(step) = steps.and_then(|s| s.get(u.step)) else {
                continue;
            };
            for path in u.spellings {
                let mut at = Some(step);
                for member in path.iter() {
                    at = at.and_then(|v| v.get(member));
                }
                if at.is_some() {
                    out.push(format!("steps[{}].{}: {}", u.step, path.join("."), u.why));
                }
            }
        }
        out
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
    /// The alternative complete presentations the rules qualify beside the
    /// presented one.
    alternatives: Vec<AlternativeForm>,
}

/// One step presented in another form than stored.
#[derive(Debug, Clone)]
pub(crate) struct Rewrite {
    pub index: usize,
    /// The presented step (a `Value::Message`); while a [`Present`] guard
    /// lives, the stored one, swapped out of the trajectory.
    pub step: Value,
    /// Stored paths (relative to the step, daemon JSON names) whose content
    /// the presentation shows in another form, so they are not "dropped".
    pub carried: Vec<&'static str>,
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
    /// A projection presenting step `i` under `step_rules[i]` (and the
    /// `extra_rules` beside), rewriting the steps in `rewritten`.
    pub(crate) fn new(
        step_rules: Vec<RuleId>,
        extra_rules: Vec<(usize, RuleId)>,
        rewritten: Vec<Rewrite>,
    ) -> Projection {
        Projection {
            step_rules,
            extra_rules,
            rewritten,
            alternatives: Vec::new(),
        }
    }

    /// Each step a rule rewrote: (index, rule, presented step).
    pub(crate) fn rewritten_steps(&self) -> impl Iterator<Item = (usize, RuleId, &DynamicMessage)> {
        self.rewritten.iter().filter_map(|r| {
            let rule = self.step_rules.get(r.index).copied()?;
            Some((r.index, rule, r.step.as_message()?))
        })
    }

    /// The presented form of every step a rule rewrote, by ascending index:
    /// what [`Self::present`] swaps into the stored trajectory (with
    /// `alternative`, what it swaps in while [`Self::with_alternative`]
    /// presents that form: the form's steps in place of the rewritten ones
    /// at the same index), for a comparison that reads the other steps from
    /// the stored encoding (`compare::ordinary_on_wire`). `None` when a
    /// step is not a message (never built so; then only the swap shows it)
    /// or there is no such alternative.
    pub fn presented_steps(
        &self,
        alternative: Option<usize>,
    ) -> Option<Vec<(usize, &DynamicMessage)>> {
        let form = match alternative {
            Some(i) => Some(self.alternatives.get(i)?),
            None => None,
        };
        let mut steps = self
            .rewritten
            .iter()
            .map(|r| {
                let shown = form
                    .and_then(|f| f.steps.iter().find(|(i, _)| *i == r.index))
                    .map_or(&r.step, |(_, step)| step);
                Some((r.index, shown.as_message()?))
            })
            .collect::<Option<Vec<_>>>()?;
        steps.sort_by_key(|(i, _)| *i);
        Some(steps)
    }

    /// Adds an alternative complete presentation.
    pub(crate) fn add_alternative(&mut self, form: AlternativeForm) {
        self.alternatives.push(form);
    }

    /// The alternative complete presentations the rules qualify beside the
    /// presented one (replay147's omitted waits, when some wait is nonzero).
    pub fn alternatives(&self) -> &[AlternativeForm] {
        &self.alternatives
    }

    /// Runs `f` with the alternative `index` (of [`Self::alternatives`])
    /// presented, then restores the presented form. `None` when there is no
    /// such alternative.
    pub fn with_alternative<T>(
        &mut self,
        index: usize,
        f: impl FnOnce(&mut Projection) -> T,
    ) -> Option<T> {
        let mut form = self.alternatives.get(index)?.clone();
        self.swap_form(&mut form);
        let out = f(self);
        self.swap_form(&mut form);
        Some(out)
    }

    /// Swaps the form's steps with the presented ones (its own inverse).
    fn swap_form(&mut self, form: &mut AlternativeForm) {
        for (index, step) in form.steps.iter_mut() {
            if let Some(r) = self.rewritten.iter_mut().find(|r| r.index == *index) {
                std::mem::swap(&mut r.step, step);
            }
        }
    }

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
