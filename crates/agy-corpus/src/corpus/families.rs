//! Subagent families for a generated home (`corpus generate --home`): the
//! parent/child shapes a subagent tree reader must handle, added to a
//! root's plan as new conversations so that every planned conversation
//! keeps its content, its truth and its verdict.
//!
//! agy stores a subagent as its own conversation: the child's trajectory
//! metadata names its parent (`parentConversationId`, with its nesting
//! depth), and the parent's INVOKE_SUBAGENT step lists the child in its
//! results (`invokeSubagent.results[].conversationId`). The families:
//!
//! * **tree** ([`FamilyRole::TreeRoot`], [`FamilyRole::TreeChild`],
//!   [`FamilyRole::TreeGrandchild`]): a parent invoking one child that
//!   invokes one grandchild (depths 1 and 2), all in the same root;
//! * **orphan** ([`FamilyRole::Orphan`]): a child whose parent is in no
//!   root (its `parentConversationId` names an id no conversation has);
//! * **cycle** ([`FamilyRole::CycleA`], [`FamilyRole::CycleB`]): two
//!   conversations each naming the other as parent and each invoking the
//!   other, a damaged store a reader must report and never follow forever.
//!
//! Each family member is a clean conversation's plan cloned under a new id
//! (from the plan's own stream, so the same seed writes the same bytes)
//! with the parent, root and children it plays, and an invoke_subagent
//! tool turn added when it invokes. The members stay clean: their truth is
//! the truth of the steps they carry, as for any other conversation.

use super::plan::{ConvPlan, CorpusPlan, Recipe, StepKind};
use super::rng::Rng;
use std::collections::BTreeSet;

/// The part a family member plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FamilyRole {
    /// The top of the tree family: invokes [`FamilyRole::TreeChild`].
    TreeRoot,
    /// Depth 1: invoked by the root, invokes the grandchild.
    TreeChild,
    /// Depth 2: invoked by the child.
    TreeGrandchild,
    /// A child whose parent is in no root.
    Orphan,
    /// One half of a parent cycle.
    CycleA,
    /// The other half.
    CycleB,
}

/// Every role, in the order the members are added.
pub const ROLES: [FamilyRole; 6] = [
    FamilyRole::TreeRoot,
    FamilyRole::TreeChild,
    FamilyRole::TreeGrandchild,
    FamilyRole::Orphan,
    FamilyRole::CycleA,
    FamilyRole::CycleB,
];

/// One member a plan gained.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    /// Its part.
    pub role: FamilyRole,
    /// Its conversation id.
    pub id: String,
    /// The parent its metadata names, if any.
    pub parent: Option<String>,
    /// The children its INVOKE_SUBAGENT step lists.
    pub children: Vec<String>,
}

/// What [`add_families`] added: the members, and the id the orphan's
/// parent names (no conversation has it).
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Families {
    /// The members, in [`ROLES`] order.
    pub members: Vec<Member>,
    /// The orphan's absent parent.
    pub missing_parent: String,
}

impl Families {
    /// The id of the member playing `role`.
    pub fn id(&self, role: FamilyRole) -> Option<&str> {
        self.members
            .iter()
            .find(|m| m.role == role)
            .map(|m| m.id.as_str())
    }
}

/// A clean conversation whose plan can be cloned into a family: SQLite,
/// not shadowed, outside any tree, no fork, no resumed history, no fault,
/// no accepted field 50 (its sites count generator steps), and no
/// invoke_subagent wrapper of its own (its results would name the family's
/// children too; a modern invocation names its own made-up children).
/// A clone is written without a `-wal` tail (every step checkpointed).
fn candidate(cp: &ConvPlan) -> bool {
    cp.clean_standalone_sqlite()
        && cp.planner50.is_empty()
        && !cp.steps.iter().any(|s| {
            matches!(
                s,
                StepKind::ConversationHistory
                    | StepKind::Tool(Recipe::InvokeSubagent)
                    | StepKind::Tool(Recipe::RejectedPermission { headless: true })
            )
        })
}

/// Adds a tool turn calling invoke_subagent before the conversation's last
/// answer (a planner response with the call, then the tool step).
fn add_invoke(cp: &mut ConvPlan) {
    let at = cp
        .steps
        .iter()
        .rposition(|s| *s == StepKind::Planner { tool_call: false })
        .unwrap_or(cp.steps.len());
    cp.steps.splice(
        at..at,
        [
            StepKind::Planner { tool_call: true },
            StepKind::Tool(Recipe::InvokeSubagent),
        ],
    );
}

/// Adds the families to `plan` (see the module documentation). `None`, and
/// the plan unchanged, when it has no clean candidate to clone.
pub fn add_families(plan: &mut CorpusPlan) -> Option<Families> {
    let seed = plan.seed;
    let mut r = Rng::new(seed, &["families"]);
    let pool: Vec<usize> = (0..plan.conversations.len())
        .filter(|&i| candidate(&plan.conversations[i]))
        .collect();
    if pool.is_empty() {
        return None;
    }
    let mut taken: BTreeSet<String> = plan.conversations.iter().map(|c| c.id.clone()).collect();
    let mut fresh_id = |label: &str| -> String {
        let mut k = 0u32;
        loop {
            let id = Rng::new(seed, &["families", label, &k.to_string()]).uuid();
            if taken.insert(id.clone()) {
                return id;
            }
            k += 1;
        }
    };
    let ids: Vec<String> = ROLES
        .iter()
        .map(|role| fresh_id(&format!("{role:?}")))
        .collect();
    let missing_parent = fresh_id("missing-parent");
    let id = |role: FamilyRole| ids[ROLES.iter().position(|r| *r == role).unwrap_or(0)].clone();
    let members: Vec<Member> = ROLES
        .iter()
        .map(|&role| {
            let (parent, children) = match role {
                FamilyRole::TreeRoot => (None, vec![id(FamilyRole::TreeChild)]),
                FamilyRole::TreeChild => (
                    Some(id(FamilyRole::TreeRoot)),
                    vec![id(FamilyRole::TreeGrandchild)],
                ),
                FamilyRole::TreeGrandchild => (Some(id(FamilyRole::TreeChild)), vec![]),
                FamilyRole::Orphan => (Some(missing_parent.clone()), vec![]),
                FamilyRole::CycleA => (Some(id(FamilyRole::CycleB)), vec![id(FamilyRole::CycleB)]),
                FamilyRole::CycleB => (Some(id(FamilyRole::CycleA)), vec![id(FamilyRole::CycleA)]),
            };
            Member {
                role,
                id: id(role),
                parent,
                children,
            }
        })
        .collect();
    let start = r.below(pool.len() as u64) as usize;
    for (k, m) in members.iter().enumerate() {
        // Distinct sources while there are enough; a small plan reuses one
        // (the clone's content still differs: it is drawn from its own id).
        let src = pool[(start + k) % pool.len()];
        let mut cp = plan.conversations[src].clone();
        cp.wal_tail = 0;
        cp.index = plan.conversations.len();
        cp.id = m.id.clone();
        cp.trajectory_id = Rng::new(seed, &["families", "trajectory", &m.id]).uuid();
        let depth = match m.role {
            FamilyRole::TreeGrandchild => 2,
            _ => 1,
        };
        cp.parent = m.parent.clone().map(|p| (p, depth));
        cp.root = match m.role {
            FamilyRole::TreeRoot | FamilyRole::TreeChild | FamilyRole::TreeGrandchild => {
                id(FamilyRole::TreeRoot)
            }
            _ => m.parent.clone().unwrap_or_else(|| m.id.clone()),
        };
        cp.children = m.children.clone();
        if !cp.children.is_empty() {
            add_invoke(&mut cp);
        }
        plan.conversations.push(cp);
    }
    Some(Families {
        members,
        missing_parent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::plan::{plan, PlanOptions};

    #[test]
    fn families_are_added_deterministically_and_leave_the_plan_alone() {
        let o = PlanOptions {
            conversations: 20,
            seed: 9,
            near_miss_rate: 0.0,
            fault_rate: 0.0,
            scale: 0.05,
        };
        let before = plan(&o);
        let mut a = before.clone();
        let fa = add_families(&mut a).expect("enough candidates");
        let mut b = before.clone();
        add_families(&mut b).unwrap();
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
        assert_eq!(a.conversations.len(), before.conversations.len() + 6);
        for (x, y) in before.conversations.iter().zip(&a.conversations) {
            assert_eq!(
                serde_json::to_string(x).unwrap(),
                serde_json::to_string(y).unwrap()
            );
        }
        let all: BTreeSet<&str> = a.conversations.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(all.len(), a.conversations.len());
        assert!(!all.contains(fa.missing_parent.as_str()));
        let child = a
            .conversations
            .iter()
            .find(|c| Some(c.id.as_str()) == fa.id(FamilyRole::TreeChild))
            .unwrap();
        assert_eq!(
            child.parent.as_ref().map(|p| p.0.as_str()),
            fa.id(FamilyRole::TreeRoot)
        );
        assert!(child
            .steps
            .contains(&StepKind::Tool(Recipe::InvokeSubagent)));
        for c in &a.conversations[before.conversations.len()..] {
            assert!(c.near_miss.is_none());
        }
    }
}
