//! The history2 registry rule: is_skill_file of a failed legacy read (a
//! resultless BUILTIN view_file presented as VIEW_FILE) from the executors'
//! persisted customization registrations.

use super::doc::RuleDoc;
use super::family::{Ctx, Family, Hook};
use super::fields::{enum_name, flag, int, messages, reject, sub, text, Wrapper, R};
use super::reasons::Reason;
use crate::rules::RuleId;
use prost_reflect::DynamicMessage;
use std::collections::BTreeSet;

pub(crate) const DOCS: &[RuleDoc] = &[RuleDoc {
    rule: RuleId::History2SkillRegistry,
    accepts: "The is_skill_file flag of a failed legacy read (a resultless BUILTIN view_file presented as VIEW_FILE): set when an enabled KIND_SKILL registration whose path equals the AbsolutePath argument exactly is saved by the current executor (the one whose execution_id equals the step's metadata.execution_id), or by an earlier executor whose registration's source_step names this trajectory_id, cascade_id and step index while every earlier executor's last_step_idx is below the step and the current one's at or above it. Unset without a binding, without a matching registration, or with only disabled or non-skill ones; executors after the current one are ignored. When a registration could mark the read, the binding must be unique and it the only exact-path registration in the current and earlier executors; an earlier one also needs unique nonempty execution IDs and strictly increasing last_step_idx through the current executor.",
    reasons: &[
        Reason::SkillBinding,
        Reason::SkillNotOnlyMatch,
        Reason::SkillExecutorOrder,
    ],
}];

fn registrations(executor: &DynamicMessage) -> Vec<DynamicMessage> {
    sub(executor, "customization_registry")
        .map(|r| messages(r, "registrations"))
        .unwrap_or_default()
}

fn enabled_skill(r: &DynamicMessage) -> bool {
    enum_name(r, "kind") == "KIND_SKILL" && flag(r, "enabled")
}

fn end(executor: &DynamicMessage) -> i128 {
    int(executor, "last_step_idx").unwrap_or(0)
}

/// "The history2 rule derives is_skill_file from an exact-path enabled skill
/// registration saved by the current executor or a qualified earlier
/// executor. To mark a read, the step's execution ID must select a current
/// executor. A prior registration is usable only when the saved trajectory
/// and cascade IDs and step index identify this exact source step, executor
/// end indices strictly increase, every earlier executor ends before this
/// step, and the current executor ends at or after it. Missing executor
/// binding, no matching registration, or only disabled or non-skill
/// registrations leaves the flag unset, including repeated registrations;
/// registrations after the current executor cannot mark a read. When any
/// enabled skill registration could mark the read, the current execution
/// binding must be unique and the registration must be the only exact-path
/// match in current or earlier executors. An earlier enabled skill
/// registration also requires unique nonempty executor IDs and valid
/// ordering through the current executor. Duplicate IDs do not prevent an
/// unmarked read; unrelated duplicates do not prevent a marker from the
/// current executor. Filenames and the current filesystem do not determine
/// the flag."
///
/// Reading: usability of an earlier registration is its source-step
/// identity and the end-index position of the executors around the step; a
/// usable one then *requires* unique nonempty IDs and strictly increasing end
/// indices through the current executor, and refuses otherwise. With a
/// non-unique binding, the read refuses when any enabled skill exact-path
/// registration exists up to the last executor bearing that ID, and is
/// unmarked otherwise.
fn skill_flag(ctx: &Ctx<'_>, w: &Wrapper, path: &str) -> R<bool> {
    let rule = Some(RuleId::History2SkillRegistry);
    let exec_id = w
        .metadata()
        .map(|m| text(m, "execution_id"))
        .unwrap_or_default();
    if exec_id.is_empty() {
        return Ok(false);
    }
    let trajectory = ctx.trajectory(rule)?;
    let executors = messages(trajectory, "executor_metadatas");
    let bound: Vec<usize> = executors
        .iter()
        .enumerate()
        .filter(|(_, e)| text(e, "execution_id") == exec_id)
        .map(|(i, _)| i)
        .collect();
    let exact_skill = |e: &DynamicMessage| {
        registrations(e)
            .iter()
            .any(|r| text(r, "path") == path && enabled_skill(r))
    };
    let Some(&last) = bound.last() else {
        return Ok(false);
    };
    if bound.len() > 1 {
        if executors[..=last].iter().any(exact_skill) {
            return reject(
                rule,
                Reason::SkillBinding,
                format!("execution_id {exec_id:?} bound {} times", bound.len()),
            );
        }
        return Ok(false);
    }
    let c = last;
    let i = ctx.index as i128;
    let trajectory_id = text(trajectory, "trajectory_id");
    let cascade_id = text(trajectory, "cascade_id");
    let identifies = |r: &DynamicMessage| {
        sub(r, "source_step").is_some_and(|s| {
            text(s, "trajectory_id") == trajectory_id
                && text(s, "cascade_id") == cascade_id
                && int(s, "step_index").unwrap_or(0) == i
        })
    };
    let positioned = executors[..c].iter().all(|e| end(e) < i) && end(&executors[c]) >= i;
    let current = exact_skill(&executors[c]);
    let earlier = positioned
        && executors[..c].iter().any(|e| {
            registrations(e)
                .iter()
                .any(|r| text(r, "path") == path && enabled_skill(r) && identifies(r))
        });
    if !current && !earlier {
        return Ok(false);
    }
    let matches: usize = executors[..=c]
        .iter()
        .map(|e| {
            registrations(e)
                .iter()
                .filter(|r| text(r, "path") == path)
                .count()
        })
        .sum();
    if matches != 1 {
        return reject(
            rule,
            Reason::SkillNotOnlyMatch,
            format!("{matches} registrations of {path}"),
        );
    }
    if !current {
        let ids: Vec<String> = executors[..=c]
            .iter()
            .map(|e| text(e, "execution_id"))
            .collect();
        let unique = ids.iter().collect::<BTreeSet<_>>().len() == ids.len();
        let nonempty = ids.iter().all(|s| !s.is_empty());
        let increasing = executors[..=c].windows(2).all(|p| end(&p[0]) < end(&p[1]));
        if !(unique && nonempty && increasing) {
            return reject(
                rule,
                Reason::SkillExecutorOrder,
                format!("ids unique {unique}, nonempty {nonempty}, ends increasing {increasing}"),
            );
        }
    }
    Ok(true)
}

/// The family: the registry rule, reached from the resultless BUILTIN
/// view_file.
pub(crate) const FAMILY: Family = Family {
    file: "history2.rs",
    docs: DOCS,
    claims: &[],
    hooks: &[Hook::SkillFlag(skill_flag)],
    args: &[],
};
