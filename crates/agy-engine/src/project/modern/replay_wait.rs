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
//! The choice is a property of the whole trajectory, so it is a typed
//! [`AlternativeForm`] on the [`Projection`], not a step's: `run_command.rs` presents the copied
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

use super::common::WAIT_FIELD;
use crate::project::doc::RuleDoc;
use crate::project::family::{Family, Hook};
use crate::project::projection::{Alternative, AlternativeForm, Projection, Unspelled};
use crate::project::reasons::Reason;
use crate::rules::RuleId;
use prost_reflect::Value;

pub(crate) const DOCS: &[RuleDoc] = &[RuleDoc {
    rule: RuleId::ModernReplayWaits,
    accepts: "Every modern RunCommand step (tools143) of a trajectory is presented in one of two forms, chosen for the whole trajectory: copied (run_command.wait_ms_before_async is the stored WaitMsBeforeAsync argument, a canonical decimal, as an unsigned 64-bit integer; the offline export's form) or omitted (no wait on any of them). The ordinary response must equal one form completely; mixed forms or altered values are an ordinary mismatch, and a response matching only the omitted form may not spell a wait member explicitly (an explicit zero selects the copied form). Embedded native command steps and the other command mappings are unchanged.",
    reasons: &[Reason::ModernArguments, Reason::ModernPresentedField],
}];

/// The omitted form an answer may spell no wait member in: each spelling
/// (daemon JSON and proto names) of `run_command.wait_ms_before_async`.
const WAIT_SPELLINGS: &[&[&str]] = &[
    &["runCommand", "waitMsBeforeAsync"],
    &["runCommand", WAIT_FIELD],
    &["run_command", "waitMsBeforeAsync"],
    &["run_command", WAIT_FIELD],
];

/// Every step presented under tools143 RunCommand, with the wait its
/// copied form shows (0 when it has none): (step index, wait).
pub(crate) fn replay_waits(p: &Projection) -> Vec<(usize, u64)> {
    p.rewritten_steps()
        .filter(|(_, rule, _)| *rule == RuleId::ModernRunCommand)
        .map(|(i, _, step)| {
            let wait = step
                .get_field_by_name("run_command")
                .and_then(|rc| {
                    rc.as_message()?
                        .get_field_by_name(WAIT_FIELD)
                        .and_then(|v| v.as_u64())
                })
                .unwrap_or(0);
            (i, wait)
        })
        .collect()
}

/// The omitted form, as data the comparison tries for the whole trajectory:
/// every RunCommand step without its wait, and no wait member spelled on
/// any of them. `None` when no copied wait is nonzero (an all-zero
/// trajectory reads the same either way).
pub(crate) fn alternative(p: &Projection) -> Option<AlternativeForm> {
    let waits = replay_waits(p);
    if waits.iter().all(|(_, w)| *w == 0) {
        return None;
    }
    let mut steps = Vec::new();
    for (index, rule, step) in p.rewritten_steps() {
        if rule != RuleId::ModernRunCommand {
            continue;
        }
        let mut omitted = step.clone();
        if let Some(Value::Message(rc)) = omitted.get_field_by_name_mut("run_command") {
            rc.clear_field_by_name(WAIT_FIELD);
        }
        steps.push((index, omitted));
    }
    let unspelled = waits
        .iter()
        .map(|(step, _)| Unspelled {
            step: *step,
            spellings: WAIT_SPELLINGS,
            why: "spelled in a presentation that omits the other waits (replay147: mixed forms)",
        })
        .collect();
    Some(AlternativeForm::new(
        Alternative::WaitsOmitted,
        steps,
        unspelled,
    ))
}

/// The family: replay147's omitted wait form, an alternative presentation
/// of the whole trajectory (the copied form is run_command's).
pub(crate) const FAMILY: Family = Family {
    file: "modern/replay_wait.rs",
    docs: DOCS,
    claims: &[],
    hooks: &[Hook::Alternative(alternative)],
    args: &[],
};
