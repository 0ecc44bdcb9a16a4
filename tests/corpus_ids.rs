//! The ground truth (crates/agy-corpus) and the reader share no code: the
//! truth file speaks in public ids and the reader parses them with its own
//! parsers. These checks catch the two lists drifting apart: every id the
//! corpus can emit parses here (a class with the same verdict), and every
//! rule the reader qualifies is one the corpus knows.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

use agy_audit::rules::RuleId;
use agy_audit::verdict::{Outcome, ReasonClass, VerdictKind};
use agy_corpus::ids;

#[test]
fn every_rule_id_the_corpus_emits_parses_in_the_reader() {
    for r in ids::RuleId::ALL {
        let parsed = RuleId::from_id(r.id());
        assert!(parsed.is_some(), "the reader has no rule {}", r.id());
    }
}

#[test]
fn every_reader_rule_is_in_the_corpus_list_in_catalogue_order() {
    let corpus: Vec<&str> = ids::RuleId::ALL.iter().map(|r| r.id()).collect();
    let reader: Vec<&str> = RuleId::ALL.iter().map(|r| r.id()).collect();
    let missing: Vec<&&str> = reader.iter().filter(|r| !corpus.contains(r)).collect();
    assert!(
        missing.is_empty(),
        "rules the corpus does not know: {missing:?}"
    );
    // The truth file lists a conversation's rules in catalogue order.
    assert_eq!(corpus, reader);
}

#[test]
fn every_reason_class_the_corpus_emits_parses_with_the_same_verdict() {
    for c in ids::ReasonClass::ALL {
        let parsed = ReasonClass::from_id(c.id())
            .unwrap_or_else(|| panic!("the reader has no class {}", c.id()));
        assert_eq!(
            parsed.verdict().as_str(),
            c.verdict().as_str(),
            "{}",
            c.id()
        );
        assert_eq!(
            VerdictKind::from_id(c.verdict().as_str()),
            Some(parsed.verdict())
        );
    }
    // Every near-miss class is one of them.
    for c in agy_corpus::corpus::plan::NEAR_MISS_CLASSES {
        assert!(ids::ReasonClass::ALL.contains(c), "{}", c.id());
    }
}

#[test]
fn every_verdict_and_outcome_the_corpus_emits_parses_in_the_reader() {
    for v in ids::VerdictKind::ALL {
        let parsed = VerdictKind::from_id(v.as_str())
            .unwrap_or_else(|| panic!("the reader has no verdict {}", v.as_str()));
        assert_eq!(parsed.as_str(), v.as_str());
    }
    for o in ids::Outcome::ALL {
        let parsed = Outcome::from_id(o.as_str())
            .unwrap_or_else(|| panic!("the reader has no outcome {}", o.as_str()));
        assert_eq!(parsed.as_str(), o.as_str());
    }
    assert_eq!(
        Outcome::from_id(ids::Outcome::NotFetched.as_str()),
        Some(Outcome::NotFetched)
    );
}
