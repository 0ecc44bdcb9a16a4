//! permission1: "the modern 1.4.3 tool mappings initially refused wrappers
//! with permission grants or completed interactions". Every modern family
//! applies it (`common::no_permission_records`); this file holds its row.

use crate::project::doc::RuleDoc;
use crate::project::family::Family;
use crate::project::reasons::Reason;
use crate::rules::RuleId;

const DOCS: &[RuleDoc] = &[RuleDoc {
    rule: RuleId::ModernPermission1,
    accepts: "Accepts nothing by itself: every modern tool mapping (tools143, tools144, finish147, replay147) refuses a wrapper carrying a permission grant, a completed interaction or a requested interaction (the combined tools143-permission1 suffix); the one exception is ide225's completed read_file wrapper carrying both a grant and a completed interaction. Older native-Step permission mappings remain separate.",
    reasons: &[Reason::ModernPermissionRecord],
}];

/// The family: the refusal's row (it claims no step).
pub(crate) const FAMILY: Family = Family {
    file: "modern/permission1.rs",
    docs: DOCS,
    claims: &[],
    hooks: &[],
    args: &[],
};
