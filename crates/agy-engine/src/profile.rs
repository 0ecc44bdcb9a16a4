//! The profile identifier, built in one place.
//!
//! `sqlite-v1-format0-<schema label>-<schema sha256 12 hex>-r<rule-set 6 hex>-<suffixes>`,
//! where the label is `modeled` (the embedded schema), `agy-<release>-<binary
//! sha256 12 hex>` (a pinned extraction or bundle, as the specification names
//! its profiles), `pinned` or `unpinned` (`crate::schema::pin`); e.g. `sqlite-v1-format0-modeled-19f5ca8aba2b-r3c0d1e-planner50-prompt23-options145-compaction146`,
//! in the specification's style: the store format, where the descriptors came
//! from and their digest, then the suffixes of the qualified rules. The
//! `r<hex>` part is a digest of every qualified rule identifier, so changing
//! the rule set changes the profile even when no suffix does; a schema change
//! changes the digest part. Legacy sources prefix
//! `legacy-aes256gcm-v1-agy-1.4.4-337dcde66844/` under agy's format key (as
//! the specification writes it), `legacy-aes256gcm-v1-<key sha256 12 hex>/`
//! under any other.

use crate::rules::{RuleId, RETAINED_SUFFIXES, SUFFIX_ORDER};
use crate::schema::Schema;
use crate::source::legacy::LegacyKey;
use crate::util::hex;
use sha2::{Digest, Sha256};

/// The rules this build qualifies: every rule a family registered in
/// `project::registry` declares (the source-level rules through the engine's
/// family), derived rather than copied, so a rule is in the profile exactly
/// when a registered family implements it.
pub static QUALIFIED_RULES: std::sync::LazyLock<Vec<RuleId>> =
    std::sync::LazyLock::new(crate::project::qualified_rules);

fn rules_digest(rules: &[RuleId]) -> String {
    let mut ids: Vec<&str> = rules.iter().map(|r| r.id()).collect();
    ids.sort_unstable();
    hex(&Sha256::digest(ids.join("\n").as_bytes()))[..6].to_string()
}

/// The SQLite (and base) profile for `schema` under `rules`.
pub fn sqlite_profile_with(schema: &Schema, rules: &[RuleId]) -> String {
    let label = schema.origin.profile_label();
    let mut s = format!(
        "sqlite-v1-format0-{label}-{}-r{}",
        &schema.sha256_hex()[..12],
        rules_digest(rules)
    );
    let qualifies = |suffix: &str| rules.iter().any(|r| r.suffix() == suffix);
    for suffix in SUFFIX_ORDER {
        let retained = RETAINED_SUFFIXES
            .iter()
            .any(|(kept, by)| kept == suffix && qualifies(by));
        if qualifies(suffix) || retained {
            s.push('-');
            s.push_str(suffix);
        }
    }
    s
}

/// The SQLite profile of this build.
pub fn sqlite_profile(schema: &Schema) -> String {
    sqlite_profile_with(schema, &QUALIFIED_RULES)
}

/// The release and binary the specification took agy's fixed format key
/// from (agy 1.4.4, SHA-256 337dcde66844...), as its legacy profile names
/// them.
pub const FORMAT_KEY_ORIGIN: &str = "agy-1.4.4-337dcde66844";

/// The legacy profile: the SQLite profile prefixed with the envelope and key.
/// "LegacyProfile prefixes the unchanged SQLite schema/projection profile
/// with legacy-aes256gcm-v1-agy-1.4.4-337dcde66844/": the format key is
/// named as the specification writes it; any other key (inspection only) by
/// the first 12 hex digits of its SHA-256.
pub fn legacy_profile(schema: &Schema, key: &LegacyKey) -> String {
    let key_name = if key.is_format_key() {
        FORMAT_KEY_ORIGIN.to_string()
    } else {
        key.fingerprint()
    };
    format!("legacy-aes256gcm-v1-{key_name}/{}", sqlite_profile(schema))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rule left out of the profile would silently drop out of it: the
    /// profile's rule set is the registry's, which holds every catalogue
    /// rule once.
    #[test]
    fn every_rule_is_in_the_profiles_rule_set() {
        for r in RuleId::ALL {
            assert_eq!(
                QUALIFIED_RULES.iter().filter(|q| *q == r).count(),
                1,
                "{r:?}"
            );
        }
        let s = Schema::modeled().unwrap();
        for (i, r) in RuleId::ALL.iter().enumerate() {
            let without: Vec<RuleId> = RuleId::ALL
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, r)| *r)
                .collect();
            assert_ne!(
                sqlite_profile_with(&s, &without),
                sqlite_profile(&s),
                "dropping {r:?} changes the profile"
            );
        }
    }

    #[test]
    fn profile_names_suffixes_and_changes_with_rules() {
        let s = Schema::modeled().unwrap();
        let p = sqlite_profile(&s);
        assert!(p.starts_with("sqlite-v1-format0-modeled-"), "{p}");
        assert!(
            p.ends_with("-planner50-permission2-prompt23-tools143-permission1-tools144-skill1-history2-ide225-options145-compaction146-skill146-finish147-replay147"),
            "{p}"
        );
        let fewer = sqlite_profile_with(&s, &QUALIFIED_RULES[..3]);
        assert_ne!(p, fewer);
        let l = legacy_profile(&s, &LegacyKey::default());
        assert_eq!(l, format!("legacy-aes256gcm-v1-agy-1.4.4-337dcde66844/{p}"));
        let other = LegacyKey::from_bytes([7u8; 32]);
        let o = legacy_profile(&s, &other);
        assert_eq!(
            o,
            format!("legacy-aes256gcm-v1-{}/{p}", other.fingerprint()),
            "another key keeps the key-digest form"
        );
    }
}
