//! Conformance of the modeled schema with the public IDE descriptor set:
//! wherever both define the same message field number or enum value, they
//! agree (name, type, label, JSON name); every difference is listed in
//! `proto/CONFORMANCE.md` with its public source, and an unlisted difference,
//! or a listed one that no longer exists, fails.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

use agy_audit::schema::Schema;
use prost_reflect::{Cardinality, FieldDescriptor, Kind};
use std::collections::BTreeSet;
use std::path::PathBuf;

fn ide_set() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/schema/antigravity-ide-descriptors.protoset");
    p.exists().then_some(p)
}

fn kind_name(k: &Kind) -> String {
    match k {
        Kind::Message(m) => format!("message {}", m.full_name()),
        Kind::Enum(e) => format!("enum {}", e.full_name()),
        other => format!("{other:?}").to_lowercase(),
    }
}

fn label(f: &FieldDescriptor) -> &'static str {
    if f.is_map() {
        "map"
    } else {
        match f.cardinality() {
            Cardinality::Repeated => "repeated",
            Cardinality::Required => "required",
            Cardinality::Optional
                if f.supports_presence()
                    && f.containing_oneof().is_some_and(|o| o.is_synthetic()) =>
            {
                "optional"
            }
            Cardinality::Optional => "singular",
        }
    }
}

/// The differences, one line each, in the form CONFORMANCE.md lists them.
fn differences(modeled: &Schema, ide: &Schema) -> (BTreeSet<String>, Vec<String>) {
    let mut listed_kind = BTreeSet::new();
    let mut conflicts = Vec::new();
    for m in modeled.pool.all_messages() {
        if m.full_name().starts_with("google.protobuf.") || m.is_map_entry() {
            continue;
        }
        let Some(im) = ide.pool.get_message_by_name(m.full_name()) else {
            listed_kind.insert(format!("message {}", m.full_name()));
            continue;
        };
        for f in m.fields() {
            match im.get_field(f.number()) {
                None => {
                    listed_kind.insert(format!(
                        "field {}.{} = {}",
                        m.full_name(),
                        f.name(),
                        f.number()
                    ));
                }
                Some(g) => {
                    let a = (f.name(), kind_name(&f.kind()), label(&f), f.json_name());
                    let b = (g.name(), kind_name(&g.kind()), label(&g), g.json_name());
                    if a != b {
                        conflicts.push(format!(
                            "{}.{} = {}: modeled {a:?}, IDE {b:?}",
                            m.full_name(),
                            f.name(),
                            f.number()
                        ));
                    }
                }
            }
        }
    }
    for e in modeled.pool.all_enums() {
        if e.full_name().starts_with("google.protobuf.") {
            continue;
        }
        let Some(ie) = ide.pool.get_enum_by_name(e.full_name()) else {
            listed_kind.insert(format!("enum {}", e.full_name()));
            continue;
        };
        for v in e.values() {
            match ie.get_value(v.number()) {
                None => {
                    listed_kind.insert(format!(
                        "value {}.{} = {}",
                        e.full_name(),
                        v.name(),
                        v.number()
                    ));
                }
                Some(w) if w.name() != v.name() => conflicts.push(format!(
                    "{} = {}: modeled {}, IDE {}",
                    e.full_name(),
                    v.number(),
                    v.name(),
                    w.name()
                )),
                Some(_) => {}
            }
        }
    }
    (listed_kind, conflicts)
}

/// The entries of CONFORMANCE.md: table rows `| \`entry\` | source |`.
fn listed() -> BTreeSet<String> {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("proto/CONFORMANCE.md"),
    )
    .expect("proto/CONFORMANCE.md");
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("| `") else {
            continue;
        };
        let Some((entry, tail)) = rest.split_once('`') else {
            continue;
        };
        let source = tail
            .trim_start_matches([' ', '|'])
            .trim_end_matches([' ', '|']);
        assert!(
            !source.trim().is_empty(),
            "CONFORMANCE.md entry `{entry}` names no public source"
        );
        out.insert(entry.to_string());
    }
    out
}

#[test]
fn modeled_schema_agrees_with_the_public_ide_set() {
    let Some(path) = ide_set() else {
        println!(
            "SKIP conformance: ../shared/schema/antigravity-ide-descriptors.protoset not found"
        );
        return;
    };
    let modeled = Schema::modeled().unwrap();
    let ide = Schema::from_file(&path).unwrap();
    let (diffs, conflicts) = differences(&modeled, &ide);
    assert!(
        conflicts.is_empty(),
        "fields or values that disagree with the IDE set:\n{}",
        conflicts.join("\n")
    );
    let listed = listed();
    let unlisted: Vec<_> = diffs.difference(&listed).collect();
    let stale: Vec<_> = listed.difference(&diffs).collect();
    assert!(
        unlisted.is_empty(),
        "differences from the IDE set not listed in proto/CONFORMANCE.md:\n{}",
        unlisted
            .iter()
            .map(|d| format!("| `{d}` | SOURCE |"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        stale.is_empty(),
        "CONFORMANCE.md lists differences that no longer exist: {stale:?}"
    );
    println!(
        "conformance: {} listed differences, 0 conflicts",
        diffs.len()
    );
}
