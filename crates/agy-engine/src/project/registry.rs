//! The one list of rule families. Everything about the rule set is derived
//! from it: the rule catalogue and `docs/rules.md` ([`super::table`]), the
//! profile's qualified rules and their digest ([`qualified_rules`]), the
//! dispatch of generic steps ([`super::project`] walks the families'
//! claims in this order) and the hooks families lend each other.
//!
//! Adding a family: write its file with a `FAMILY` constant (its rule rows,
//! claims, hooks and argument bounds) and add one line here. The order
//! matters only where two hooks answer the same point (the first wins) and
//! for the order embedded-only arguments are checked in (Append before
//! ContentOffset).

use super::family::{Args, Family};
use super::modern;
use super::{
    command_bridge, embedded, engine, generate_image, history2, list_resources,
    missing_tool_summary, payload_free, permissions, resultless, view_file, write_to_file,
};
use crate::rules::RuleId;

/// Every registered family.
pub(crate) const FAMILIES: &[Family] = &[
    engine::FAMILY,
    embedded::FAMILY,
    permissions::FAMILY,
    write_to_file::FAMILY,
    view_file::FAMILY,
    resultless::FAMILY,
    missing_tool_summary::FAMILY,
    list_resources::FAMILY,
    command_bridge::FAMILY,
    payload_free::FAMILY,
    generate_image::FAMILY,
    history2::FAMILY,
    modern::run_command::FAMILY,
    modern::read_file::FAMILY,
    modern::file_edit::FAMILY,
    modern::invoke_subagent::FAMILY,
    modern::generic::FAMILY,
    modern::permission1::FAMILY,
    modern::ide225::FAMILY,
    modern::finish::FAMILY,
    modern::image_read::FAMILY,
    modern::replay_wait::FAMILY,
];

/// Every registered family's argument bounds, in registry order: one per
/// rule and tool whose arguments a family reads.
pub fn argument_bounds() -> Vec<Args> {
    FAMILIES
        .iter()
        .flat_map(|f| f.args.iter().copied())
        .collect()
}

/// The rules the registered families declare, in catalogue
/// ([`RuleId::ALL`]) order: the profile qualifies exactly these.
pub fn qualified_rules() -> Vec<RuleId> {
    RuleId::ALL
        .iter()
        .copied()
        .filter(|r| FAMILIES.iter().any(|f| f.docs.iter().any(|d| d.rule == *r)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_belongs_to_exactly_one_family() {
        for r in RuleId::ALL {
            let owners: Vec<&str> = FAMILIES
                .iter()
                .filter(|f| f.docs.iter().any(|d| d.rule == *r))
                .map(|f| f.file)
                .collect();
            assert_eq!(owners.len(), 1, "{r:?} is declared by {owners:?}");
        }
        assert_eq!(qualified_rules(), RuleId::ALL.to_vec());
    }

    #[test]
    fn family_files_are_unique_and_exist() {
        let mut files: Vec<&str> = FAMILIES.iter().map(|f| f.file).collect();
        files.sort();
        let n = files.len();
        files.dedup();
        assert_eq!(files.len(), n, "a family registered twice");
        for f in files {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("src/project")
                .join(f);
            assert!(path.is_file(), "{}", path.display());
        }
    }
}
