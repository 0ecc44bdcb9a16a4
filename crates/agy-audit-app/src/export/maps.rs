//! A defined order for protobuf map entries in the exports' JSON.
//!
//! prost-reflect keeps a `DynamicMessage`'s map fields in a `HashMap` (with a
//! fresh random hasher per map), so its proto3 JSON writes map entries in an
//! order that changes from run to run. Every output this reader writes from
//! a decoded message therefore passes through [`sort_map_entries`]:
//!
//! **Order:** the entries of every JSON object that renders a protobuf map
//! field (and of every `google.protobuf.Struct`) are sorted by their proto3
//! JSON key text, compared as UTF-8 bytes, the same order canonical JSON
//! (`attest::canonical_json`) sorts object keys in and the order the corpus
//! generator writes its daemon views in. For `string` keys, the only map keys
//! the modeled schema declares, that is also the map key value order agy's
//! daemon (Go `protojson`) writes. A message's own fields keep the
//! serializer's declaration order; list order is never touched.

use prost_reflect::{DynamicMessage, Kind, MessageDescriptor, ReflectMessage};
use serde_json::Value;

/// `msg` in the daemon's proto3 JSON ([`crate::schema::to_daemon_json`])
/// with every map's entries in the order [`sort_map_entries`] defines.
pub fn daemon_json(msg: &DynamicMessage) -> Value {
    let mut v = crate::schema::to_daemon_json(msg);
    sort_map_entries(&mut v, &msg.descriptor());
    v
}

/// Sorts, in place, the entries of every object in `v` (the proto3 JSON of
/// a message of type `desc`) that renders a map field or a
/// `google.protobuf.Struct`, by their JSON key text (UTF-8 byte order),
/// descending into map values, message fields, lists and `Any` payloads
/// (resolved by type URL in `desc`'s pool, as the serializer resolved them).
/// Anything that is not the shape `desc` serializes to is left as it is.
pub fn sort_map_entries(v: &mut Value, desc: &MessageDescriptor) {
    match desc.full_name() {
        "google.protobuf.Any" => sort_any(v, desc),
        "google.protobuf.Struct" => sort_struct(v),
        "google.protobuf.Value" => sort_struct_value(v),
        "google.protobuf.ListValue" => sort_list_value(v),
        _ => sort_fields(v, desc),
    }
}

/// A message's fields (keyed by their JSON names, as the daemon spells them).
fn sort_fields(v: &mut Value, desc: &MessageDescriptor) {
    let Value::Object(obj) = v else {
        return;
    };
    for (key, child) in obj.iter_mut() {
        let Some(field) = desc.get_field_by_json_name(key) else {
            continue;
        };
        if field.is_map() {
            let Value::Object(entries) = child else {
                continue;
            };
            entries.sort_keys();
            if let Kind::Message(entry) = field.kind() {
                if let Kind::Message(value) = entry.map_entry_value_field().kind() {
                    for (_, x) in entries.iter_mut() {
                        sort_map_entries(x, &value);
                    }
                }
            }
        } else if let Kind::Message(m) = field.kind() {
            match child {
                Value::Array(items) => {
                    for x in items {
                        sort_map_entries(x, &m);
                    }
                }
                other => sort_map_entries(other, &m),
            }
        }
    }
}

/// `{"@type": URL, ...fields}`, or `{"@type": URL, "value": ...}` for a
/// well-known type with its own JSON form.
fn sort_any(v: &mut Value, desc: &MessageDescriptor) {
    let Value::Object(obj) = v else {
        return;
    };
    let inner = obj
        .get("@type")
        .and_then(Value::as_str)
        .and_then(|url| url.rsplit_once('/'))
        .and_then(|(_, name)| desc.parent_pool().get_message_by_name(name));
    let Some(inner) = inner else {
        return;
    };
    if inner.full_name().starts_with("google.protobuf.") {
        if let Some(value) = obj.get_mut("value") {
            sort_map_entries(value, &inner);
        }
    } else {
        sort_fields(v, &inner);
    }
}

/// A `google.protobuf.Struct`: a JSON object whose members are `Value`s.
fn sort_struct(v: &mut Value) {
    if let Value::Object(members) = v {
        members.sort_keys();
        for (_, x) in members.iter_mut() {
            sort_struct_value(x);
        }
    }
}

/// A `google.protobuf.Value`: any JSON value.
fn sort_struct_value(v: &mut Value) {
    match v {
        Value::Object(_) => sort_struct(v),
        Value::Array(_) => sort_list_value(v),
        _ => {}
    }
}

/// A `google.protobuf.ListValue`: a JSON array of `Value`s.
fn sort_list_value(v: &mut Value) {
    if let Value::Array(items) = v {
        for x in items {
            sort_struct_value(x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Schema;
    use prost_reflect::{MapKey, Value as PV};
    use std::collections::HashMap;

    const GENERIC: &str = "exa.cortex_pb.CortexStepGeneric";

    /// Keys in insertion orders that differ: forward, backward, interleaved.
    fn orders(n: usize) -> Vec<Vec<usize>> {
        let forward: Vec<usize> = (0..n).collect();
        let backward: Vec<usize> = (0..n).rev().collect();
        let interleaved: Vec<usize> = (0..n).step_by(2).chain((1..n).step_by(2).rev()).collect();
        vec![forward, backward, interleaved]
    }

    /// A CortexStepGeneric whose `args` map gets `n` entries in `order`.
    fn generic(schema: &Schema, order: &[usize]) -> DynamicMessage {
        let desc = schema.pool.get_message_by_name(GENERIC).unwrap();
        let mut m = DynamicMessage::new(desc.clone());
        let field = desc.get_field_by_name("args").unwrap();
        let mut map = HashMap::new();
        for &i in order {
            // Keys whose byte order differs from their numeric order.
            map.insert(
                MapKey::String(format!("k{}", i * 7919 % 1000)),
                PV::String(format!("v{i}")),
            );
        }
        m.set_field(&field, PV::Map(map));
        m
    }

    #[test]
    fn many_map_entries_serialize_identically_whatever_the_insertion_order() {
        let schema = Schema::modeled().unwrap();
        let bytes: Vec<Vec<u8>> = orders(200)
            .iter()
            .map(|o| serde_json::to_vec(&daemon_json(&generic(&schema, o))).unwrap())
            .collect();
        assert!(bytes.windows(2).all(|w| w[0] == w[1]));
        let v: Value = serde_json::from_slice(&bytes[0]).unwrap();
        let keys: Vec<&String> = v["args"].as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 200);
        assert!(keys.windows(2).all(|w| w[0].as_bytes() < w[1].as_bytes()));
    }

    #[test]
    fn maps_inside_map_values_lists_and_any_payloads_are_sorted_too() {
        let schema = Schema::modeled().unwrap();
        let nested = |order: &[usize]| -> Value {
            // genai.Struct: map<string, Value>, a Value holding another Struct.
            let inner = order
                .iter()
                .map(|i| (format!("i{i}"), serde_json::json!({"stringValue": "x"})))
                .collect::<serde_json::Map<_, _>>();
            let outer = order
                .iter()
                .map(|i| {
                    (
                        format!("o{i}"),
                        serde_json::json!({"structValue": {"fields": inner.clone()}}),
                    )
                })
                .collect::<serde_json::Map<_, _>>();
            serde_json::json!({"fields": outer})
        };
        let desc = schema.pool.get_message_by_name("genai.Struct").unwrap();
        let mut seen = Vec::new();
        for o in orders(30) {
            let m = DynamicMessage::deserialize(desc.clone(), nested(&o)).unwrap();
            // The same message packed in an Any and listed twice.
            let any = prost_types::Any {
                type_url: "type.googleapis.com/genai.Struct".into(),
                value: prost::Message::encode_to_vec(&m),
            };
            let any_desc = schema
                .pool
                .get_message_by_name("google.protobuf.Any")
                .unwrap();
            let any =
                DynamicMessage::decode(any_desc, prost::Message::encode_to_vec(&any).as_slice())
                    .unwrap();
            let plain = serde_json::to_vec(&daemon_json(&m)).unwrap();
            let packed = serde_json::to_vec(&daemon_json(&any)).unwrap();
            seen.push((plain, packed));
        }
        assert!(seen.windows(2).all(|w| w[0] == w[1]));
        let v: Value = serde_json::from_slice(&seen[0].0).unwrap();
        let outer: Vec<&String> = v["fields"].as_object().unwrap().keys().collect();
        assert!(outer.windows(2).all(|w| w[0] < w[1]));
        let inner: Vec<&String> = v["fields"]["o0"]["structValue"]["fields"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(inner.len(), 30);
        assert!(inner.windows(2).all(|w| w[0] < w[1]));
        let a: Value = serde_json::from_slice(&seen[0].1).unwrap();
        assert_eq!(a["@type"], "type.googleapis.com/genai.Struct");
        assert_eq!(a["fields"], v["fields"]);
    }

    #[test]
    fn well_known_struct_members_are_sorted() {
        let mut v = serde_json::json!({"b": {"z": 1, "a": [{"y": 2, "x": 3}]}, "a": null});
        sort_struct(&mut v);
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"a":null,"b":{"a":[{"x":3,"y":2}],"z":1}}"#
        );
    }
}
