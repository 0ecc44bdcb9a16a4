//! The rule table: `agy-audit rules`, and docs/rules.md generated from it.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

use agy_audit::project::table;
use agy_audit::rules::RuleId;
use std::process::Command;

#[test]
fn docs_rules_md_is_the_generated_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/rules.md");
    let on_disk = std::fs::read_to_string(path).expect("docs/rules.md");
    assert!(
        on_disk == table::markdown(),
        "docs/rules.md is stale: regenerate it with `agy-audit rules --markdown > docs/rules.md`"
    );
}

#[test]
fn the_table_lists_every_rule_once() {
    let md = table::markdown();
    for r in RuleId::ALL {
        let row = format!("| `{}` |", r.id());
        assert_eq!(md.matches(&row).count(), 1, "{row}");
    }
    assert_eq!(table::docs().len(), RuleId::ALL.len());
}

#[test]
fn rules_command_prints_text_and_markdown() {
    let bin = env!("CARGO_BIN_EXE_agy-audit");
    let out = Command::new(bin)
        .arg("rules")
        .output()
        .expect("run agy-audit rules");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), table::text());
    let out = Command::new(bin)
        .args(["rules", "--markdown"])
        .output()
        .expect("run agy-audit rules --markdown");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), table::markdown());
}
