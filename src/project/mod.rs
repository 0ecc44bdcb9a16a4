//! Stage 3: project the persisted trajectory into the daemon's ordinary
//! (rehydrated) presentation, under bounded, named rules; everything else
//! fails closed with a named reason.
//!
//! The boundary: [`project`] takes the decoded persisted trajectory and
//! returns a [`Projection`] (a Trajectory message of the same type, the rule
//! each step was presented under, and the stored fields the presentation
//! omits) or a [`ProjectionRefusal`].

use crate::rules::RuleId;
use crate::schema::Schema;
use crate::verdict::{ReasonClass, Refusal};
use prost_reflect::{DynamicMessage, ReflectMessage};

/// The ordinary presentation predicted for one trajectory.
#[derive(Debug, Clone)]
pub struct Projection {
    /// The presented trajectory (same message type as the persisted one).
    pub ordinary: DynamicMessage,
    /// The rule each step was presented under, by step index.
    pub step_rules: Vec<RuleId>,
    /// JSON-style paths of stored content the ordinary presentation omits
    /// (wrapper results, arguments, outer errors, ...): full raw equality
    /// must still cover them.
    pub dropped: Vec<String>,
}

impl Projection {
    /// The distinct rules this projection used, sorted.
    pub fn rules(&self) -> Vec<RuleId> {
        let mut r = self.step_rules.clone();
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
    /// The specification's wording, e.g. `unsupported write_to_file append`.
    pub reason: String,
}

impl ProjectionRefusal {
    pub fn to_refusal(&self) -> Refusal {
        Refusal::new(
            ReasonClass::UnqualifiedProjection,
            format!("steps[{}]", self.step),
            match self.rule {
                Some(r) => format!("{} ({})", self.reason, r.id()),
                None => self.reason.clone(),
            },
        )
    }
}

/// Projects `trajectory` (decoded with `schema`) to its ordinary presentation.
pub fn project(
    schema: &Schema,
    trajectory: &DynamicMessage,
) -> Result<Projection, ProjectionRefusal> {
    let _ = schema;
    let steps = trajectory
        .descriptor()
        .get_field_by_name("steps")
        .and_then(|fd| trajectory.get_field(&fd).as_list().map(|l| l.len()))
        .unwrap_or(0);
    Ok(Projection {
        ordinary: trajectory.clone(),
        step_rules: vec![RuleId::Passthrough; steps],
        dropped: Vec::new(),
    })
}
