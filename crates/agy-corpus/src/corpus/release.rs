//! The "next release" of a generated store: what a new agy release does to
//! a store a team audited under the previous one, for `demo`'s release day
//! and `corpus generate --next-release`.
//!
//! From the plan of the same options (the previous release), deterministically
//! (seeded by the plan's seed):
//! - [`REFUSED`] clean conversations gain a step shape the reader refuses (an
//!   unknown field at a step's top level: `unknown-field`);
//! - [`CHANGED`] clean conversations continue (one more user turn and answer),
//!   so their sources change and they stay verified;
//! - one clean conversation disappears and a new one appears (a clean
//!   conversation's plan under a new id, so new content);
//! - the daemon serves one new presentation-only member, [`NEW_MEMBER`], in
//!   every step of every ordinary response (the schema does not know it; a
//!   reader keeps it as RPC-only presentation).
//!
//! Only SQLite conversations outside any subagent tree, fork or resumed
//! history, without a planned fault and not shadowed by a legacy `.pb`, are
//! candidates; a small corpus with fewer candidates gets fewer changes
//! (in the order above).

use super::plan::{ConvPlan, CorpusPlan, NearMiss, StepKind, UnknownFieldAt};
use super::rng::Rng;

/// Conversations that gain a refused step shape.
pub const REFUSED: usize = 3;
/// Conversations whose source changes.
pub const CHANGED: usize = 3;
/// The member the next release's daemon adds to every ordinary step.
pub const NEW_MEMBER: &str = "displayDensity";
/// Its value.
pub const NEW_MEMBER_VALUE: &str = "DISPLAY_DENSITY_COMFORTABLE";

fn candidate(cp: &ConvPlan) -> bool {
    cp.clean_standalone_sqlite() && !cp.steps.contains(&StepKind::ConversationHistory)
}

/// Turns the previous release's plan into the next release's.
pub fn next_release(plan: &mut CorpusPlan) {
    let seed = plan.seed;
    let mut r = Rng::new(seed, &["next-release"]);
    let mut pool: Vec<usize> = (0..plan.conversations.len())
        .filter(|&i| candidate(&plan.conversations[i]))
        .collect();
    let mut take = |r: &mut Rng| -> Option<usize> {
        (!pool.is_empty()).then(|| pool.remove(r.below(pool.len() as u64) as usize))
    };
    for _ in 0..REFUSED {
        let Some(i) = take(&mut r) else { break };
        plan.conversations[i].near_miss = Some(NearMiss::UnknownField(UnknownFieldAt::StepTop));
    }
    for _ in 0..CHANGED {
        let Some(i) = take(&mut r) else { break };
        let steps = &mut plan.conversations[i].steps;
        steps.push(StepKind::UserInput);
        steps.push(StepKind::Planner { tool_call: false });
    }
    let gone = take(&mut r);
    if let Some(src) = take(&mut r) {
        let mut fresh = plan.conversations[src].clone();
        let taken: std::collections::BTreeSet<&str> =
            plan.conversations.iter().map(|c| c.id.as_str()).collect();
        let mut k = 0u32;
        let id = loop {
            let id = Rng::new(seed, &["next-release", "appeared", &k.to_string()]).uuid();
            if !taken.contains(id.as_str()) {
                break id;
            }
            k += 1;
        };
        fresh.trajectory_id = Rng::new(seed, &["next-release", "trajectory", &id]).uuid();
        fresh.root = id.clone();
        fresh.id = id;
        fresh.index = plan.conversations.len();
        plan.conversations.push(fresh);
    }
    if let Some(i) = gone {
        plan.conversations.remove(i);
    }
}

/// Adds [`NEW_MEMBER`] to every step of an ordinary view.
pub fn present(ordinary: &[u8]) -> Result<Vec<u8>, serde_json::Error> {
    let mut v: serde_json::Value = serde_json::from_slice(ordinary)?;
    if let Some(steps) = v.get_mut("steps").and_then(serde_json::Value::as_array_mut) {
        for s in steps {
            if let Some(o) = s.as_object_mut() {
                o.insert(NEW_MEMBER.into(), NEW_MEMBER_VALUE.into());
            }
        }
    }
    serde_json::to_vec(&v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::plan::{plan, PlanOptions};

    #[test]
    fn the_next_release_refuses_changes_adds_and_removes() {
        let before = plan(&PlanOptions::default());
        let mut after = before.clone();
        next_release(&mut after);
        assert_eq!(after.conversations.len(), before.conversations.len());
        let refused = after
            .conversations
            .iter()
            .filter(|c| {
                matches!(
                    c.near_miss,
                    Some(NearMiss::UnknownField(UnknownFieldAt::StepTop))
                ) && before
                    .conversations
                    .iter()
                    .any(|b| b.id == c.id && b.near_miss.is_none())
            })
            .count();
        assert_eq!(refused, REFUSED);
        let ids = |p: &CorpusPlan| -> std::collections::BTreeSet<String> {
            p.conversations.iter().map(|c| c.id.clone()).collect()
        };
        assert_eq!(ids(&before).difference(&ids(&after)).count(), 1);
        assert_eq!(ids(&after).difference(&ids(&before)).count(), 1);
        let mut again = before.clone();
        next_release(&mut again);
        assert_eq!(
            serde_json::to_string(&again).unwrap(),
            serde_json::to_string(&after).unwrap()
        );
    }

    #[test]
    fn present_adds_the_member_to_every_step() {
        let v = present(br#"{"steps":[{"type":"A"},{"type":"B","x":1}],"cascadeId":"c"}"#).unwrap();
        assert_eq!(
            String::from_utf8(v).unwrap(),
            r#"{"steps":[{"type":"A","displayDensity":"DISPLAY_DENSITY_COMFORTABLE"},{"type":"B","x":1,"displayDensity":"DISPLAY_DENSITY_COMFORTABLE"}],"cascadeId":"c"}"#
        );
    }
}
