//! The rule table, generated from the code: every [`RuleId`] with its profile
//! suffix, what it accepts and its refusal reasons. `agy-audit rules` prints
//! it; `docs/rules.md` is `agy-audit rules --markdown` (a test keeps them
//! equal).

use super::Reason;
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
        accepts: "Source reader (src/source/source_only.rs): CascadePlannerConfig field 50, wire type 2, at CortexStepGeneratorMetadata.planner_config and ExecutorMetadata.cascade_config.planner_config only, once, empty or varint fields 2 and/or 4 with value zero. Refusals are of class source-only-planner50.",
        reasons: &[],
    },
    RuleDoc {
        rule: RuleId::SourceOnlyPrompt23,
        accepts: "Source reader (src/source/source_only.rs): ChatMessagePrompt field 23, wire type 2, on a tool-result message prompt of generator metadata, parsed as google.protobuf.Struct of the observed results shape and derived from the step step_idx names, which must itself be a GREP_SEARCH step (a generic wrapper embedding one is refused) whose own metadata.tool_call.id equals the prompt's tool_call_id. Refusals are of class source-only-prompt23.",
        reasons: &[],
    },
    RuleDoc {
        rule: RuleId::PerToolOutputMap,
        accepts: "Source reader (src/source/scan.rs): ToolOutputConfig.per_tool map entries checked on the wire before decoding (no unknown, malformed, wrongly encoded or duplicate members, no duplicate keys). Refusals are of class bad-map-entry.",
        reasons: &[],
    },
    RuleDoc {
        rule: RuleId::CustomizationKindMap,
        accepts: "Source reader (src/source/scan.rs): CustomizationDiscoveryConfig.kind_enablement map entries under the same wire checks as the per-tool map. Refusals are of class bad-map-entry.",
        reasons: &[],
    },
];

/// Every family's rows, as declared.
fn declared() -> Vec<RuleDoc> {
    let modern = super::modern::docs();
    let families: &[&[RuleDoc]] = &[
        ENGINE_DOCS,
        super::embedded::DOCS,
        super::permissions::DOCS,
        super::view_file::DOCS,
        super::write_to_file::DOCS,
        super::resultless::DOCS,
        super::missing_tool_summary::DOCS,
        super::list_resources::DOCS,
        super::command_bridge::DOCS,
        super::payload_free::DOCS,
        super::generate_image::DOCS,
        super::history2::DOCS,
    ];
    families
        .iter()
        .flat_map(|f| f.iter().copied())
        .chain(modern)
        .collect()
}

/// Every rule's row, in catalogue ([`RuleId::ALL`]) order.
pub fn docs() -> Vec<RuleDoc> {
    let all = declared();
    RuleId::ALL
        .iter()
        .filter_map(|r| all.iter().find(|d| d.rule == *r).copied())
        .collect()
}

fn suffix(r: RuleId) -> &'static str {
    if r.suffix().is_empty() {
        "(base)"
    } else {
        r.suffix()
    }
}

/// The table as plain text (one block per rule).
pub fn text() -> String {
    let docs = docs();
    let mut out = format!("{} rules\n", docs.len());
    for d in &docs {
        out.push('\n');
        out.push_str(&format!(
            "{}  [{}]  {}\n",
            d.rule.id(),
            suffix(d.rule),
            d.rule.title()
        ));
        out.push_str(&format!("  accepts: {}\n", d.accepts));
        if d.reasons.is_empty() {
            out.push_str("  refuses: (see accepts)\n");
        } else {
            out.push_str("  refuses:\n");
            for r in d.reasons {
                out.push_str(&format!("    - {}\n", r.text()));
            }
        }
    }
    out
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The table as Markdown (the content of `docs/rules.md`).
pub fn markdown() -> String {
    let docs = docs();
    let mut out = String::new();
    out.push_str("# Qualified rules\n\n");
    out.push_str("Generated from the code by `agy-audit rules --markdown > docs/rules.md`; a test keeps this file equal to the output. ");
    out.push_str(&format!(
        "{} rules. Each rule's bounds are quoted from the specification in its doc comment under `src/project/`; a step outside them refuses with one of the listed reasons.\n\n",
        docs.len()
    ));
    out.push_str("| rule | suffix | specification name | accepts | refusal reasons |\n");
    out.push_str("|---|---|---|---|---|\n");
    for d in &docs {
        let reasons = if d.reasons.is_empty() {
            "(see accepts)".to_string()
        } else {
            d.reasons
                .iter()
                .map(|r| format!("`{}`", r.text()))
                .collect::<Vec<_>>()
                .join("<br>")
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            d.rule.id(),
            suffix(d.rule),
            md_cell(d.rule.title()),
            md_cell(d.accepts),
            md_cell(&reasons)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_has_one_row_and_every_reason_is_listed() {
        let d = docs();
        assert_eq!(d.len(), RuleId::ALL.len());
        for r in RuleId::ALL {
            let n = declared().iter().filter(|x| x.rule == *r).count();
            assert_eq!(n, 1, "{r:?}");
        }
        for reason in Reason::ALL {
            assert!(
                d.iter().any(|x| x.reasons.contains(reason)),
                "{reason:?} is in no row"
            );
        }
    }
}
