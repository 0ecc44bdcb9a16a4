//! What a rule declares about itself for the rule table: what it accepts
//! and the named reasons it refuses with. A leaf: every family imports it,
//! it imports no family.

use super::reasons::Reason;
use crate::rules::RuleId;

/// One rule's row.
#[derive(Debug, Clone, Copy)]
pub struct RuleDoc {
    pub rule: RuleId,
    /// What the rule accepts, with its bounds.
    pub accepts: &'static str,
    /// The named reasons it refuses with.
    pub reasons: &'static [Reason],
}
