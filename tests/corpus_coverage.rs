//! Coverage of the default 405-conversation corpus, checked on its plan (the
//! ground truth is derived from the plan alone, so this is exactly what the
//! generated `expected.jsonl` says, without writing ~300 MB in a debug test).
//! `default_corpus_truth_covers_everything` (ignored; run with `--ignored`,
//! preferably `--release`) generates the real corpus and checks its truth file.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

use agy_audit::rules::RuleId;
use agy_audit::verdict::ReasonClass;
use agy_corpus::corpus::plan::{
    plan, Format, NearMiss, PlanOptions, Recipe, StepKind, NEAR_MISS_CLASSES,
};
use agy_corpus::ids::VerdictKind;
use std::collections::{BTreeMap, BTreeSet};

/// The reader's rule for a rule id the truth names (parsed, never shared).
fn reader_rule(r: agy_corpus::ids::RuleId) -> RuleId {
    RuleId::from_id(r.id()).unwrap_or_else(|| panic!("the reader has no rule {}", r.id()))
}

/// The reader's class for a class id the truth names.
fn reader_class(c: agy_corpus::ids::ReasonClass) -> ReasonClass {
    ReasonClass::from_id(c.id()).unwrap_or_else(|| panic!("the reader has no class {}", c.id()))
}

fn accepted(v: VerdictKind) -> bool {
    matches!(v, VerdictKind::Verified | VerdictKind::VerifiedSourceOnly)
}

#[test]
fn every_rule_appears_in_accepted_shape_in_the_default_corpus() {
    let p = plan(&PlanOptions::default());
    assert_eq!(p.conversations.len(), 405);
    let mut count: BTreeMap<RuleId, usize> = BTreeMap::new();
    for c in &p.conversations {
        if accepted(c.expected().0) {
            for r in c.rules() {
                *count.entry(reader_rule(r)).or_default() += 1;
            }
        }
    }
    let missing: Vec<&str> = RuleId::ALL
        .iter()
        .filter(|r| !count.contains_key(r))
        .map(|r| r.id())
        .collect();
    assert!(
        missing.is_empty(),
        "rules never exercised in accepted shape: {missing:?}"
    );
    // and not just once
    let rare: Vec<_> = count.iter().filter(|(_, n)| **n < 3).collect();
    assert!(
        rare.is_empty(),
        "rules in fewer than 3 verified conversations: {rare:?}"
    );
}

#[test]
fn every_refusal_class_appears_and_each_near_miss_is_alone() {
    let p = plan(&PlanOptions::default());
    let mut seen: BTreeSet<ReasonClass> = BTreeSet::new();
    let mut near = 0;
    for c in &p.conversations {
        if let Some(n) = c.near_miss {
            near += 1;
            assert_eq!(c.expected(), (VerdictKind::Unknown, Some(n.class())));
            assert!(
                c.fault.is_none(),
                "a near-miss conversation has no daemon fault"
            );
            assert_eq!(c.format, n.format());
            seen.insert(reader_class(n.class()));
        }
    }
    let shapes = agy_corpus::corpus::plan::UnqKind::ALL.len();
    assert_eq!(
        near,
        41 + shapes - 2,
        "10% of 405, rounded, and every rule-bound shape the class cycle left out"
    );
    let missing: Vec<&str> = NEAR_MISS_CLASSES
        .iter()
        .filter(|c| !seen.contains(&reader_class(**c)))
        .map(|c| c.id())
        .collect();
    assert!(
        missing.is_empty(),
        "refusal classes without a near-miss: {missing:?}"
    );
    for required in [
        "unknown-field",
        "unknown-enum",
        "bad-map-entry",
        "redundant-column",
        "index-gap",
        "step-format",
        "user-version",
        "schema-drift",
        "subtrajectory",
        "source-only-planner50",
        "source-only-prompt23",
        "invalid-utf8",
        "malformed-protobuf",
        "unqualified-projection",
        "legacy-authentication",
    ] {
        let c = ReasonClass::from_id(required).unwrap_or_else(|| panic!("no class {required}"));
        assert!(seen.contains(&c), "{required}");
    }
}

#[test]
fn every_rule_bound_near_miss_shape_has_its_own_conversation() {
    use agy_corpus::corpus::plan::UnqKind;
    let p = plan(&PlanOptions::default());
    let mut seen: BTreeMap<UnqKind, usize> = BTreeMap::new();
    for c in &p.conversations {
        if let Some(NearMiss::Unqualified(k)) = c.near_miss {
            *seen.entry(k).or_default() += 1;
        }
    }
    let missing: Vec<_> = UnqKind::ALL
        .iter()
        .filter(|k| !seen.contains_key(k))
        .collect();
    assert!(
        missing.is_empty(),
        "shapes without a conversation: {missing:?}"
    );
    // A small corpus keeps half of its conversations clean instead.
    let small = plan(&PlanOptions {
        conversations: 30,
        ..PlanOptions::default()
    });
    let near = small
        .conversations
        .iter()
        .filter(|c| c.near_miss.is_some())
        .count();
    assert!(near <= 15, "{near} near-misses in 30 conversations");
}

#[test]
fn source_only_formats_and_step_mix_are_as_specified() {
    let p = plan(&PlanOptions::default());
    let so: Vec<_> = p
        .conversations
        .iter()
        .filter(|c| c.expected().0 == VerdictKind::VerifiedSourceOnly)
        .collect();
    assert!(so
        .iter()
        .any(|c| !c.planner50.is_empty() && c.prompt23_steps().next().is_none()));
    assert!(so.iter().any(|c| c.prompt23_steps().next().is_some()));
    for c in &p.conversations {
        assert_eq!(
            c.expected().0 == VerdictKind::VerifiedSourceOnly,
            c.source_only() && c.near_miss.is_none() && c.fault.is_none(),
            "{}",
            c.id
        );
    }
    let legacy = p
        .conversations
        .iter()
        .filter(|c| c.format == Format::Protobuf)
        .count();
    assert!((15..=30).contains(&legacy), "legacy {legacy}");
    assert!(p.conversations.iter().any(|c| c.also_pb));
    assert!(p.conversations.iter().any(|c| c.wal_tail > 0));
    assert!(p.conversations.iter().any(|c| c.parent.is_some()));
    let (mut planner, mut wrappers, mut native, mut user) = (0, 0, 0, 0);
    for c in &p.conversations {
        for s in &c.steps {
            match s {
                StepKind::Planner { .. } => planner += 1,
                StepKind::UserInput => user += 1,
                StepKind::Tool(
                    Recipe::NativeViewFile
                    | Recipe::NativeRunCommand
                    | Recipe::NativeCodeAction
                    | Recipe::NativeGrep { .. }
                    | Recipe::NativeListDir
                    | Recipe::NativeMcp
                    | Recipe::NativeSearchWeb
                    | Recipe::NativeReadUrl
                    | Recipe::NativeFind
                    | Recipe::NativeCommandStatus,
                ) => native += 1,
                StepKind::Tool(_) => wrappers += 1,
                _ => {}
            }
        }
    }
    assert!(
        planner > wrappers && wrappers > native && native > user,
        "{planner} {wrappers} {native} {user}"
    );
}

#[test]
fn planned_daemon_faults_cover_the_daemon_classes() {
    let p = plan(&PlanOptions {
        fault_rate: 0.1,
        ..PlanOptions::default()
    });
    let classes: BTreeSet<ReasonClass> = p
        .conversations
        .iter()
        .filter(|c| c.near_miss.is_none())
        .filter_map(|c| c.expected().1)
        .map(reader_class)
        .collect();
    for c in [
        ReasonClass::FullMismatch,
        ReasonClass::OrdinaryMismatch,
        ReasonClass::SourceChanged,
        ReasonClass::DaemonUnavailable,
    ] {
        assert!(classes.contains(&c), "{c}");
    }
    // a planned fault never lands on a near-miss
    assert!(p
        .conversations
        .iter()
        .all(|c| !(c.fault.is_some() && c.near_miss.is_some())));
    let _ = NearMiss::of(agy_corpus::ids::ReasonClass::UnknownField, 0);
}

#[test]
#[ignore = "writes the ~300 MB default corpus; run with --release -- --ignored"]
fn default_corpus_truth_covers_everything() {
    let d = tempfile::tempdir().unwrap();
    let s = agy_corpus::corpus::generate(&agy_corpus::corpus::GenerateOptions {
        out: d.path().to_path_buf(),
        plan: PlanOptions::default(),
        force: false,
    })
    .unwrap();
    let text = std::fs::read_to_string(d.path().join(".truth/expected.jsonl")).unwrap();
    let mut rules = BTreeSet::new();
    let mut classes = BTreeSet::new();
    for l in text.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        if v["verdict"].as_str().unwrap().starts_with("verified") {
            for r in v["rules"].as_array().unwrap() {
                rules.insert(r.as_str().unwrap().to_string());
            }
        }
        if let Some(c) = v["reasonClass"].as_str() {
            classes.insert(c.to_string());
        }
    }
    for r in RuleId::ALL {
        assert!(rules.contains(r.id()), "{}", r.id());
    }
    for c in NEAR_MISS_CLASSES {
        assert!(classes.contains(c.id()), "{}", c.id());
    }
    assert!(s.total_bytes < 330_000_000, "{}", s.total_bytes);
}
