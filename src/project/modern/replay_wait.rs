//! replay147: the two complete command presentations.
//!
//! The specification: "It accepts two complete command presentations
//! justified by same-source 1.4.6 and 1.4.7 captures: modern RunCommand
//! payloads either omit waits throughout, or copy each stored
//! WaitMsBeforeAsync argument as an unsigned 64-bit integer. Mixed forms and
//! altered values fail comparison. Explicit zero still selects the latter
//! form, so it cannot hide a nonzero source value as a historical omission.
//! Embedded native command steps and other command mappings are unchanged.
//! Offline export uses the form that preserves stored waits."
//!
//! The choice is a property of the whole trajectory, so it lives on the
//! [`Projection`], not on one step: `run_command.rs` presents the copied
//! form (each tools143 RunCommand step's run_command.wait_ms_before_async is
//! its canonical WaitMsBeforeAsync argument; the offline export shows this
//! form). The ordinary comparison (`compare::compare_ordinary_projection`)
//! tries the copied form, then, when some copied wait is nonzero, the
//! omitted form (every such wait cleared at once). A response that matches
//! only the omitted form must spell no wait member on any of these steps:
//! an explicit wait, zero included, selects the copied form. A response
//! mixing the forms matches neither and fails. Only steps presented under
//! tools143 RunCommand take part (the tools144 canceled background command,
//! embedded native commands and the other command mappings are unchanged).

use crate::project::table::RuleDoc;
use crate::project::{Projection, Reason};
use crate::rules::RuleId;
use prost_reflect::Value;

/// The presented native field the copied form sets.
pub(crate) const WAIT_FIELD: &str = "wait_ms_before_async";

pub(crate) const DOCS: &[RuleDoc] = &[RuleDoc {
    rule: RuleId::ModernReplayWaits,
    accepts: "Every modern RunCommand step (tools143) of a trajectory is presented in one of two forms, chosen for the whole trajectory: copied (run_command.wait_ms_before_async is the stored WaitMsBeforeAsync argument, a canonical decimal, as an unsigned 64-bit integer; the offline export's form) or omitted (no wait on any of them). The ordinary response must equal one form completely; mixed forms or altered values are an ordinary mismatch, and a response matching only the omitted form may not spell a wait member explicitly (an explicit zero selects the copied form). Embedded native command steps and the other command mappings are unchanged.",
    reasons: &[Reason::ModernArguments, Reason::ModernPresentedField],
}];

/// The two complete command presentations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitForm {
    /// Each stored WaitMsBeforeAsync argument copied (export's form).
    Copied,
    /// Waits omitted throughout.
    Omitted,
}

impl Projection {
    /// Every step presented under tools143 RunCommand, with the wait its
    /// copied form shows (0 when it has none): (step index, wait).
    pub fn replay_waits(&self) -> Vec<(usize, u64)> {
        self.rewritten
            .iter()
            .filter(|r| self.step_rules.get(r.index) == Some(&RuleId::ModernRunCommand))
            .filter_map(|r| {
                let step = r.step.as_message()?;
                let rc = step.get_field_by_name("run_command")?;
                let wait = rc
                    .as_message()?
                    .get_field_by_name(WAIT_FIELD)
                    .and_then(|v| v.as_u64())
                    .unwrap_or(0);
                Some((r.index, wait))
            })
            .collect()
    }

    /// Shows `form` for every step of `waits` (as [`Projection::replay_waits`]
    /// returned them, in the copied form).
    pub fn set_wait_form(&mut self, form: WaitForm, waits: &[(usize, u64)]) {
        for r in self.rewritten.iter_mut() {
            let Some(&(_, wait)) = waits.iter().find(|(i, _)| *i == r.index) else {
                continue;
            };
            let Value::Message(step) = &mut r.step else {
                continue;
            };
            let Some(Value::Message(rc)) = step.get_field_by_name_mut("run_command") else {
                continue;
            };
            match form {
                WaitForm::Copied if wait != 0 => {
                    let _ = rc.try_set_field_by_name(WAIT_FIELD, Value::U64(wait));
                }
                _ => rc.clear_field_by_name(WAIT_FIELD),
            }
        }
    }
}

impl Projection {
    /// The alternative complete presentations this projection qualifies
    /// beside the one [`Projection::present`] shows: replay147's omitted
    /// form when some copied wait is nonzero (an all-zero trajectory reads
    /// the same either way).
    pub fn alternatives(&self) -> Vec<crate::project::Alternative> {
        if self.replay_waits().iter().any(|(_, w)| *w != 0) {
            vec![crate::project::Alternative::WaitsOmitted]
        } else {
            Vec::new()
        }
    }

    /// Runs `f` with `alt` presented, then restores the presented form.
    pub fn with_alternative<R>(
        &mut self,
        alt: crate::project::Alternative,
        f: impl FnOnce(&mut Projection) -> R,
    ) -> R {
        match alt {
            crate::project::Alternative::WaitsOmitted => {
                let waits = self.replay_waits();
                self.set_wait_form(WaitForm::Omitted, &waits);
                let r = f(self);
                self.set_wait_form(WaitForm::Copied, &waits);
                r
            }
        }
    }

    /// What an ordinary response matching `alt` may still not do, as
    /// difference paths: under the omitted form, spell a wait member on any
    /// of its steps (an explicit wait, zero included, selects the copied
    /// form; a response mixing the forms matches neither).
    pub fn alternative_violations(
        &self,
        alt: crate::project::Alternative,
        ordinary: &serde_json::Value,
    ) -> Vec<String> {
        match alt {
            crate::project::Alternative::WaitsOmitted => {
                let indices: Vec<usize> = self.replay_waits().iter().map(|(i, _)| *i).collect();
                explicit_waits(ordinary, &indices)
                    .iter()
                    .map(|i| {
                        format!(
                            "steps[{i}].runCommand.waitMsBeforeAsync: spelled in a presentation that omits the other waits (replay147: mixed forms)"
                        )
                    })
                    .collect()
            }
        }
    }
}

/// The steps among `indices` whose presented command, in the ordinary
/// response `ordinary` (a trajectory's JSON), spells a wait member (JSON or
/// proto name), whatever its value.
pub fn explicit_waits(ordinary: &serde_json::Value, indices: &[usize]) -> Vec<usize> {
    let Some(steps) = ordinary.get("steps").and_then(|s| s.as_array()) else {
        return Vec::new();
    };
    indices
        .iter()
        .copied()
        .filter(|i| {
            steps.get(*i).is_some_and(|s| {
                ["runCommand", "run_command"].iter().any(|rc| {
                    s.get(rc).is_some_and(|c| {
                        c.get("waitMsBeforeAsync").is_some() || c.get(WAIT_FIELD).is_some()
                    })
                })
            })
        })
        .collect()
}
