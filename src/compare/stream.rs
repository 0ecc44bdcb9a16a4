//! The fast path of the comparison: one pass over the response text that
//! checks it against the expected message while the JSON is read, building
//! no tree and no message.
//!
//! It answers one question: is the response exactly the expected message's
//! daemon JSON ([`crate::schema::daemon_json_options`]), up to key order,
//! whitespace and the spelling of numbers (compared by exact decimal value)?
//! It is deliberately at least as strict as the tree comparison
//! ([`super::json_diff`]) and the strict parse together: any key that is not
//! the JSON name of a field the expected message has set, a duplicate key, a
//! missing field, a different type or value, or trailing data answers "no".
//! A "no" is never reported as such: the caller then runs the slow path
//! (strict parse and tree diff), which decides and names the paths. So the
//! fast path can only make an equal response cheaper to confirm; it cannot
//! change a verdict.
//!
//! Well-known types (`google.protobuf.*`, whose JSON forms are special) and
//! messages carrying extensions are compared through their tree form, with
//! the same serializer as the slow path.

use super::json::{decimal, json_diff};
use crate::schema::to_daemon_json;
use base64::Engine;
use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, MapKey, ReflectMessage, Value};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::fmt;

/// Whether `text` is exactly the daemon JSON of `expected` (see the module
/// documentation). `false` means "take the slow path", not "different".
pub fn equals(expected: &DynamicMessage, text: &str) -> bool {
    check(expected, text).is_ok()
}

/// [`equals`], with where the one pass stopped (line and column of the text).
pub fn check(expected: &DynamicMessage, text: &str) -> Result<(), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    MessageSeed(expected).deserialize(&mut de)?;
    de.end()
}

fn differ<E: de::Error>() -> E {
    E::custom("not the expected value")
}

/// The JSON of one message.
struct MessageSeed<'a>(&'a DynamicMessage);

impl<'de> DeserializeSeed<'de> for MessageSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let msg = self.0;
        let desc = msg.descriptor();
        let well_known = desc.full_name().starts_with("google.protobuf.");
        // Only a message type that the pool extends can carry an extension
        // (one set on a message is checked against its type's extensions):
        // for every other one, the message's fields are not walked to look.
        let extended = desc.extensions().len() > 0 && msg.extensions().next().is_some();
        if well_known && !extended {
            if let Some(expected) = time_text(msg) {
                // Timestamps and durations (one in nearly every step's
                // metadata) are JSON strings: compare the text without
                // building a tree.
                let actual = std::borrow::Cow::<'de, str>::deserialize(d)?;
                return if actual == expected {
                    Ok(())
                } else {
                    Err(differ())
                };
            }
        }
        if well_known || extended {
            // The tree would keep only the last of a repeated member: the
            // raw text is checked for one first.
            let raw = <&RawValue>::deserialize(d)?;
            if super::value::unique_members(raw.get()).is_err() {
                return Err(differ());
            }
            let actual: serde_json::Value =
                serde_json::from_str(raw.get()).map_err(|_| differ::<D::Error>())?;
            return if json_diff(&to_daemon_json(msg), &actual, 1).is_empty() {
                Ok(())
            } else {
                Err(differ())
            };
        }
        d.deserialize_map(MessageVisitor(msg))
    }
}

/// Bounds prost-reflect's serializer enforces (outside them it refuses to
/// serialize, and the tree path reports that).
const MIN_TIMESTAMP_SECONDS: i64 = -62_135_596_800;
const MAX_TIMESTAMP_SECONDS: i64 = 253_402_300_799;
const MAX_DURATION_SECONDS: u64 = 315_576_000_000;
const MAX_DURATION_NANOS: u32 = 999_999_999;

/// The daemon JSON text of a `google.protobuf.Timestamp` or `Duration`,
/// exactly as the tree path's serializer writes it (it transcodes the
/// message to the prost-types value and formats that; here its two fields
/// are read directly). `None` for any other message, one with extensions,
/// or a value outside the serializer's range, which the tree path decides.
fn time_text(msg: &DynamicMessage) -> Option<String> {
    let desc = msg.descriptor();
    let name = desc.full_name();
    let is_timestamp = name == "google.protobuf.Timestamp";
    if !is_timestamp && name != "google.protobuf.Duration" {
        return None;
    }
    if msg.extensions().next().is_some() {
        return None;
    }
    let seconds = msg.get_field_by_number(1)?.as_i64()?;
    let nanos = msg.get_field_by_number(2)?.as_i32()?;
    if is_timestamp {
        if !(MIN_TIMESTAMP_SECONDS..=MAX_TIMESTAMP_SECONDS).contains(&seconds) {
            return None;
        }
        Some(prost_types::Timestamp { seconds, nanos }.to_string())
    } else {
        if seconds.unsigned_abs() > MAX_DURATION_SECONDS
            || nanos.unsigned_abs() > MAX_DURATION_NANOS
        {
            return None;
        }
        Some(prost_types::Duration { seconds, nanos }.to_string())
    }
}

struct MessageVisitor<'a>(&'a DynamicMessage);

impl<'de> Visitor<'de> for MessageVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let msg = self.0;
        // The fields the message has set (exactly those `has_field` says
        // are), each found once here: a key must be the JSON name of one of
        // them (no descriptor look-up by name, no field-set look-up per key),
        // and each may appear once.
        let set: Vec<(FieldDescriptor, &Value)> = msg.fields().collect();
        let mut seen = vec![false; set.len()];
        let mut found = 0;
        while let Some(i) = map.next_key_seed(SetFieldKey(&set))? {
            if std::mem::replace(&mut seen[i], true) {
                return Err(differ());
            }
            found += 1;
            let (field, value) = &set[i];
            map.next_value_seed(FieldValue { value, field })?;
        }
        if found == set.len() {
            Ok(())
        } else {
            Err(differ())
        }
    }
}

/// A key of a message object: the JSON name of one of the fields it has
/// set; the index of that field.
struct SetFieldKey<'a, 'v>(&'a [(FieldDescriptor, &'v Value)]);

impl<'de> DeserializeSeed<'de> for SetFieldKey<'_, '_> {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for SetFieldKey<'_, '_> {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<usize, E> {
        self.0
            .iter()
            .position(|(f, _)| f.json_name() == key)
            .ok_or_else(differ)
    }
}

/// The JSON of one set field: a list, a map or a single value.
struct FieldValue<'a> {
    value: &'a Value,
    field: &'a FieldDescriptor,
}

impl<'de> DeserializeSeed<'de> for FieldValue<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let kind = self.field.kind();
        match self.value {
            Value::List(items) => d.deserialize_seq(ListVisitor { items, kind: &kind }),
            Value::Map(entries) => {
                let Kind::Message(entry) = &kind else {
                    return Err(differ());
                };
                d.deserialize_map(MapVisitor {
                    entries,
                    key_kind: entry.map_entry_key_field().kind(),
                    value_kind: entry.map_entry_value_field().kind(),
                })
            }
            v => SingleSeed {
                value: v,
                kind: &kind,
            }
            .deserialize(d),
        }
    }
}

struct ListVisitor<'a> {
    items: &'a [Value],
    kind: &'a Kind,
}

impl<'de> Visitor<'de> for ListVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        for item in self.items {
            seq.next_element_seed(SingleSeed {
                value: item,
                kind: self.kind,
            })?
            .ok_or_else(differ)?;
        }
        match seq.next_element::<de::IgnoredAny>()? {
            None => Ok(()),
            Some(_) => Err(differ()),
        }
    }
}

struct MapVisitor<'a> {
    entries: &'a std::collections::HashMap<MapKey, Value>,
    key_kind: Kind,
    value_kind: Kind,
}

impl<'de> Visitor<'de> for MapVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key_seed(MapKeySeed(&self.key_kind))? {
            let value = self.entries.get(&key).ok_or_else(differ)?;
            map.next_value_seed(SingleSeed {
                value,
                kind: &self.value_kind,
            })?;
            if !seen.insert(key) {
                return Err(differ());
            }
        }
        if seen.len() == self.entries.len() {
            Ok(())
        } else {
            Err(differ())
        }
    }
}

/// A map key, which must be spelled exactly as the serializer spells it.
struct MapKeySeed<'a>(&'a Kind);

impl<'de> DeserializeSeed<'de> for MapKeySeed<'_> {
    type Value = MapKey;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<MapKey, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for MapKeySeed<'_> {
    type Value = MapKey;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map key")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<MapKey, E> {
        fn canonical<T: std::str::FromStr + ToString, E: de::Error>(s: &str) -> Result<T, E> {
            let v: T = s.parse().map_err(|_| differ())?;
            if v.to_string() == s {
                Ok(v)
            } else {
                Err(differ())
            }
        }
        Ok(match self.0 {
            Kind::String => MapKey::String(s.to_string()),
            Kind::Bool => match s {
                "true" => MapKey::Bool(true),
                "false" => MapKey::Bool(false),
                _ => return Err(differ()),
            },
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => MapKey::I32(canonical(s)?),
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => MapKey::I64(canonical(s)?),
            Kind::Uint32 | Kind::Fixed32 => MapKey::U32(canonical(s)?),
            Kind::Uint64 | Kind::Fixed64 => MapKey::U64(canonical(s)?),
            _ => return Err(differ()),
        })
    }
}

/// One value that is not a list or a map.
struct SingleSeed<'a> {
    value: &'a Value,
    kind: &'a Kind,
}

impl<'de> DeserializeSeed<'de> for SingleSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        match self.value {
            Value::Message(m) => MessageSeed(m).deserialize(d),
            Value::Bool(b) => d.deserialize_any(Expect::Bool(*b)),
            Value::String(s) => d.deserialize_any(Expect::Str(s)),
            Value::I64(v) => d.deserialize_any(Expect::Str(&v.to_string())),
            Value::U64(v) => d.deserialize_any(Expect::Str(&v.to_string())),
            Value::I32(v) => number(d, &v.to_string()),
            Value::U32(v) => number(d, &v.to_string()),
            Value::F32(v) => match serde_json::Number::from_f64(f64::from(*v)) {
                Some(_) => number(d, &serde_json::Value::from(*v).to_string()),
                None => d.deserialize_any(Expect::Str(non_finite(f64::from(*v)))),
            },
            Value::F64(v) => match serde_json::Number::from_f64(*v) {
                Some(n) => number(d, &n.to_string()),
                None => d.deserialize_any(Expect::Str(non_finite(*v))),
            },
            Value::Bytes(b) => {
                let text = base64::engine::general_purpose::STANDARD.encode(b);
                d.deserialize_any(Expect::Str(&text))
            }
            Value::EnumNumber(n) => {
                let Kind::Enum(e) = self.kind else {
                    return Err(differ());
                };
                if e.full_name() == "google.protobuf.NullValue" {
                    d.deserialize_any(Expect::Null)
                } else if let Some(v) = e.get_value(*n) {
                    d.deserialize_any(Expect::Str(v.name()))
                } else {
                    number(d, &n.to_string())
                }
            }
            Value::List(_) | Value::Map(_) => Err(differ()),
        }
    }
}

fn non_finite(v: f64) -> &'static str {
    if v.is_nan() {
        "NaN"
    } else if v > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    }
}

/// A JSON number (not a quoted one) with the exact decimal value of `want`.
fn number<'de, D: Deserializer<'de>>(d: D, want: &str) -> Result<(), D::Error> {
    let raw = <&RawValue>::deserialize(d)?;
    let got = raw.get();
    if !got.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        return Err(differ());
    }
    if got == want {
        return Ok(());
    }
    match (decimal(got), decimal(want)) {
        (Some(a), Some(b)) if a == b => Ok(()),
        _ => Err(differ()),
    }
}

/// A JSON scalar that must be exactly this.
enum Expect<'a> {
    Bool(bool),
    Str(&'a str),
    Null,
}

impl<'de> Visitor<'de> for Expect<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the expected scalar")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        match self {
            Expect::Bool(b) if b == v => Ok(()),
            _ => Err(differ()),
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        match self {
            Expect::Str(s) if s == v => Ok(()),
            _ => Err(differ()),
        }
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        match self {
            Expect::Null => Ok(()),
            _ => Err(differ()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost_reflect::MessageDescriptor;

    fn message(name: &str, seconds: i64, nanos: i32) -> DynamicMessage {
        let schema = crate::schema::Schema::modeled().expect("the modeled schema loads");
        let desc: MessageDescriptor = schema
            .pool
            .get_message_by_name(name)
            .expect("the modeled schema uses the type");
        let mut m = DynamicMessage::new(desc);
        m.set_field_by_number(1, Value::I64(seconds));
        m.set_field_by_number(2, Value::I32(nanos));
        m
    }

    #[test]
    fn time_text_is_the_serializers_text() {
        let cases: &[(i64, i32)] = &[
            (0, 0),
            (1_700_000_000, 0),
            (1_700_000_000, 5_000_000),
            (1_700_000_000, 123_456_000),
            (1_700_000_000, 1),
            (-1, 999_999_999),
            (-62_135_596_800, 0),
            (253_402_300_799, 999_999_999),
            (-5, -500_000_000),
            (315_576_000_000, 0),
        ];
        for name in ["google.protobuf.Timestamp", "google.protobuf.Duration"] {
            for &(s, n) in cases {
                let m = message(name, s, n);
                let tree = std::panic::catch_unwind(|| to_daemon_json(&m)).ok();
                match (time_text(&m), tree) {
                    (Some(text), Some(serde_json::Value::String(t))) => {
                        assert_eq!(text, t, "{name} {s} {n}")
                    }
                    // Outside the serializer's range: the tree path decides.
                    (None, _) => {}
                    (Some(text), other) => panic!("{name} {s} {n}: {text} vs {other:?}"),
                }
                if let Some(text) = time_text(&m) {
                    assert!(equals(&m, &serde_json::to_string(&text).unwrap()));
                    assert!(!equals(&m, "\"1970-01-01T00:00:00.5Z\"") || text.ends_with(".5Z"));
                    assert!(!equals(&m, &format!("{s}")));
                }
            }
        }
    }

    #[test]
    fn time_text_leaves_out_of_range_values_to_the_tree_path() {
        let ts = "google.protobuf.Timestamp";
        assert!(time_text(&message(ts, -62_135_596_801, 0)).is_none());
        assert!(time_text(&message(ts, 253_402_300_800, 0)).is_none());
        let d = "google.protobuf.Duration";
        assert!(time_text(&message(d, 315_576_000_001, 0)).is_none());
        assert!(time_text(&message(d, 0, 1_000_000_000)).is_none());
    }
}
