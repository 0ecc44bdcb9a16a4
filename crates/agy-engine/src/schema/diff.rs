//! `schema diff OLD NEW`: messages, fields and enums with their values added,
//! removed or changed between two descriptor sets.
//!
//! A field is identified by its message and number and described by its name,
//! type (scalar kind, or the full name of its message or enum), label
//! (`singular`, `optional` for explicit presence, `repeated`, `map`,
//! `required`) and real oneof; an enum value by its enum and number, described
//! by its name. A removed or added message or enum is one entry (its fields or
//! values are not listed again). Map entry messages appear through their map
//! fields; services are not compared (the reader decodes no RPC through them).

use prost_reflect::{Cardinality, DescriptorPool, FieldDescriptor, Kind};
use serde::Serialize;
use std::collections::BTreeMap;

/// One difference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// `message`, `field`, `enum` or `enum-value`.
    pub kind: &'static str,
    /// Full name: `pkg.Msg`, `pkg.Msg.field`, `pkg.Enum`, `pkg.Enum.VALUE`.
    pub name: String,
    /// The field or value number, when the item has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number: Option<i32>,
    /// The old description (removed, changed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    /// The new description (added, changed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
}

/// All differences, each list sorted by name.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SchemaDiff {
    pub added: Vec<Change>,
    pub removed: Vec<Change>,
    pub changed: Vec<Change>,
}

impl SchemaDiff {
    /// True when the new set keeps every old declaration as it was.
    pub fn additive(&self) -> bool {
        self.removed.is_empty() && self.changed.is_empty()
    }

    /// `added N, removed N, changed N` with per-kind counts.
    pub fn summary(&self) -> String {
        let count = |v: &[Change]| {
            let mut by: BTreeMap<&str, usize> = BTreeMap::new();
            for c in v {
                *by.entry(c.kind).or_default() += 1;
            }
            let parts: Vec<String> = by.iter().map(|(k, n)| format!("{n} {k}")).collect();
            if parts.is_empty() {
                "0".to_string()
            } else {
                format!("{} ({})", v.len(), parts.join(", "))
            }
        };
        format!(
            "added {}; removed {}; changed {}",
            count(&self.added),
            count(&self.removed),
            count(&self.changed)
        )
    }

    /// One line per difference (`+`, `-`, `~`), then the summary.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let num = |c: &Change| c.number.map(|n| format!(" = {n}")).unwrap_or_default();
        for c in &self.added {
            s += &format!(
                "+ {} {}{}: {}\n",
                c.kind,
                c.name,
                num(c),
                c.new.as_deref().unwrap_or("")
            );
        }
        for c in &self.removed {
            s += &format!(
                "- {} {}{}: {}\n",
                c.kind,
                c.name,
                num(c),
                c.old.as_deref().unwrap_or("")
            );
        }
        for c in &self.changed {
            s += &format!(
                "~ {} {}{}: {} -> {}\n",
                c.kind,
                c.name,
                num(c),
                c.old.as_deref().unwrap_or(""),
                c.new.as_deref().unwrap_or("")
            );
        }
        s += &self.summary();
        s.push('\n');
        s
    }
}

fn kind_name(k: &Kind) -> String {
    match k {
        Kind::Message(m) => m.full_name().to_string(),
        Kind::Enum(e) => e.full_name().to_string(),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// `label type name [oneof o]` of a field.
pub fn describe_field(f: &FieldDescriptor) -> String {
    let label = if f.is_map() {
        "map"
    } else {
        match f.cardinality() {
            Cardinality::Repeated => "repeated",
            Cardinality::Required => "required",
            Cardinality::Optional
                if f.supports_presence() && !matches!(f.kind(), Kind::Message(_)) =>
            {
                "optional"
            }
            Cardinality::Optional => "singular",
        }
    };
    let ty = if f.is_map() {
        match f.kind() {
            Kind::Message(entry) => {
                let part = |n: u32| {
                    entry
                        .get_field(n)
                        .map(|x| kind_name(&x.kind()))
                        .unwrap_or_default()
                };
                format!("<{}, {}>", part(1), part(2))
            }
            k => kind_name(&k),
        }
    } else {
        kind_name(&f.kind())
    };
    let mut s = format!("{label} {ty} {}", f.name());
    if let Some(o) = f.containing_oneof().filter(|o| !o.is_synthetic()) {
        s += &format!(" (oneof {})", o.name());
    }
    s
}

/// The differences from `old` to `new`.
pub fn diff(old: &DescriptorPool, new: &DescriptorPool) -> SchemaDiff {
    let mut d = SchemaDiff::default();
    let msgs = |p: &DescriptorPool| {
        p.all_messages()
            .filter(|m| !m.is_map_entry())
            .map(|m| (m.full_name().to_string(), m))
            .collect::<BTreeMap<_, _>>()
    };
    let (om, nm) = (msgs(old), msgs(new));
    for (name, m) in &om {
        let Some(n) = nm.get(name) else {
            d.removed.push(Change {
                kind: "message",
                name: name.clone(),
                number: None,
                old: Some(format!("{} fields", m.fields().len())),
                new: None,
            });
            continue;
        };
        for f in m.fields() {
            let full = format!("{name}.{}", f.name());
            match n.get_field(f.number()) {
                None => d.removed.push(Change {
                    kind: "field",
                    name: full,
                    number: Some(f.number() as i32),
                    old: Some(describe_field(&f)),
                    new: None,
                }),
                Some(g) => {
                    let (a, b) = (describe_field(&f), describe_field(&g));
                    if a != b {
                        d.changed.push(Change {
                            kind: "field",
                            name: full,
                            number: Some(f.number() as i32),
                            old: Some(a),
                            new: Some(b),
                        });
                    }
                }
            }
        }
        for g in n.fields() {
            if m.get_field(g.number()).is_none() {
                d.added.push(Change {
                    kind: "field",
                    name: format!("{name}.{}", g.name()),
                    number: Some(g.number() as i32),
                    old: None,
                    new: Some(describe_field(&g)),
                });
            }
        }
    }
    for (name, n) in &nm {
        if !om.contains_key(name) {
            d.added.push(Change {
                kind: "message",
                name: name.clone(),
                number: None,
                old: None,
                new: Some(format!("{} fields", n.fields().len())),
            });
        }
    }
    let enums = |p: &DescriptorPool| {
        p.all_enums()
            .map(|e| (e.full_name().to_string(), e))
            .collect::<BTreeMap<_, _>>()
    };
    let (oe, ne) = (enums(old), enums(new));
    for (name, e) in &oe {
        let Some(n) = ne.get(name) else {
            d.removed.push(Change {
                kind: "enum",
                name: name.clone(),
                number: None,
                old: Some(format!("{} values", e.values().len())),
                new: None,
            });
            continue;
        };
        for v in e.values() {
            let full = format!("{name}.{}", v.name());
            match n.get_value(v.number()) {
                None => d.removed.push(Change {
                    kind: "enum-value",
                    name: full,
                    number: Some(v.number()),
                    old: Some(v.name().to_string()),
                    new: None,
                }),
                Some(w) if w.name() != v.name() => d.changed.push(Change {
                    kind: "enum-value",
                    name: full,
                    number: Some(v.number()),
                    old: Some(v.name().to_string()),
                    new: Some(w.name().to_string()),
                }),
                Some(_) => {}
            }
        }
        for w in n.values() {
            if e.get_value(w.number()).is_none() {
                d.added.push(Change {
                    kind: "enum-value",
                    name: format!("{name}.{}", w.name()),
                    number: Some(w.number()),
                    old: None,
                    new: Some(w.name().to_string()),
                });
            }
        }
    }
    for (name, n) in &ne {
        if !oe.contains_key(name) {
            d.added.push(Change {
                kind: "enum",
                name: name.clone(),
                number: None,
                old: None,
                new: Some(format!("{} values", n.values().len())),
            });
        }
    }
    for v in [&mut d.added, &mut d.removed, &mut d.changed] {
        v.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
    }
    d
}
