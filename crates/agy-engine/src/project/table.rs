//! The rule table, generated from the registry (`registry::FAMILIES`): every
//! [`RuleId`] with its profile suffix, what it accepts and its refusal
//! reasons. `agy-audit rules` prints
//! it; `docs/rules.md` is `agy-audit rules --markdown` (a test keeps them
//! equal).

use super::doc::RuleDoc;
use crate::rules::RuleId;

/// Every family's rows, as declared, in registry order.
fn declared() -> Vec<RuleDoc> {
    super::registry::FAMILIES
        .iter()
        .flat_map(|f| f.docs.iter().copied())
        .collect()
}

/// The file (under `src/project/`) of the family that declares `rule`.
fn file_of(rule: RuleId) -> &'static str {
    super::registry::FAMILIES
        .iter()
        .find(|f| f.docs.iter().any(|d| d.rule == rule))
        .map(|f| f.file)
        .unwrap_or("")
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
        "{} rules, each declared by one family registered in `crates/agy-engine/src/project/registry.rs` (the family column names its file under `crates/agy-engine/src/project/`). Each rule's bounds are quoted from the specification in its doc comment under `crates/agy-engine/src/project/`; a step outside them refuses with one of the listed reasons.\n\n",
        docs.len()
    ));
    out.push_str("| rule | suffix | family | specification name | accepts | refusal reasons |\n");
    out.push_str("|---|---|---|---|---|---|\n");
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
            "| `{}` | {} | `{}` | {} | {} | {} |\n",
            d.rule.id(),
            suffix(d.rule),
            file_of(d.rule),
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
    use crate::project::Reason;

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
