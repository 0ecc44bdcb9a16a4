//! The rules the projection engine itself applies (ordinary steps pass
//! through; the dispatch's own refusals) and the source reader's rules,
//! registered as a family so that the rule table and the profile hold them
//! like any other: rows only, no claims (the engine's dispatch is
//! `project::project_step`; the source reader's checks live under
//! `src/source/`).

use super::doc::RuleDoc;
use super::family::Family;
use super::reasons::Reason;
use crate::rules::RuleId;

/// Rows for the rules the projection engine itself, or the source reader, implements.
const ENGINE_DOCS: &[RuleDoc] = &[
    RuleDoc {
        rule: RuleId::Passthrough,
        accepts: "Every step that is not a generic wrapper (type not GENERIC and no generic payload), presented exactly as stored. A generic step no rule below qualifies refuses the trajectory; so do modern exa.cortex.core.tools payloads no modern rule names (e.g. Finish) and any other Any type.",
        reasons: &[
            Reason::GenericWithoutPayload,
            Reason::GenericUnderOtherType,
            Reason::UnsupportedAnyType,
            Reason::ModernToolPayload,
            Reason::UnqualifiedGeneric,
            Reason::StoredUndecodable,
            Reason::PayloadFreeTool,
            Reason::ResultlessTool,
        ],
    },
    RuleDoc {
        rule: RuleId::SourceOnlyPlanner50,
        accepts: "Source reader (crates/agy-engine/src/source/source_only.rs): CascadePlannerConfig field 50, wire type 2, at CortexStepGeneratorMetadata.planner_config and ExecutorMetadata.cascade_config.planner_config only, once, empty or varint fields 2 and/or 4 with value zero. Refusals are of class source-only-planner50.",
        reasons: &[],
    },
    RuleDoc {
        rule: RuleId::SourceOnlyPrompt23,
        accepts: "Source reader (crates/agy-engine/src/source/source_only.rs): ChatMessagePrompt field 23, wire type 2, on a tool-result message prompt of generator metadata, parsed as google.protobuf.Struct of the observed results shape and derived from the step step_idx names, which must itself be a GREP_SEARCH step (a generic wrapper embedding one is refused) whose own metadata.tool_call.id equals the prompt's tool_call_id. Refusals are of class source-only-prompt23.",
        reasons: &[],
    },
    RuleDoc {
        rule: RuleId::PerToolOutputMap,
        accepts: "Source reader (crates/agy-engine/src/source/scan.rs): ToolOutputConfig.per_tool map entries checked on the wire before decoding (no unknown, malformed, wrongly encoded or duplicate members, no duplicate keys). Refusals are of class bad-map-entry.",
        reasons: &[],
    },
    RuleDoc {
        rule: RuleId::CustomizationKindMap,
        accepts: "Source reader (crates/agy-engine/src/source/scan.rs): CustomizationDiscoveryConfig.kind_enablement map entries under the same wire checks as the per-tool map. Refusals are of class bad-map-entry.",
        reasons: &[],
    },
];

/// The family: rows only.
pub(crate) const FAMILY: Family = Family {
    file: "engine.rs",
    docs: ENGINE_DOCS,
    claims: &[],
    hooks: &[],
    args: &[],
};
