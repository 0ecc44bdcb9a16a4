//! Values, not text, over generated messages: every daemon view of a
//! generated corpus, re-encoded by the simulated daemon's own re-encoder
//! (`sim::style`, written independently of `compare`) in every style and
//! several seeds, compares equal; a change of one value, in any style, is
//! refused with its path named and both values shown; and what the proto3
//! JSON mapping does not allow (a repeated member, a field named twice, an
//! unknown enum name or number) is refused.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

mod common;

use agy_audit::compare::{compare_slow, stream};
use agy_audit::schema::Schema;
use agy_audit::verdict::ReasonClass;
use agy_corpus::sim::style::{restyle, JsonStyle, ALL_STYLES};
use common::generated_daemon_views;
use prost_reflect::DynamicMessage;
use serde_json::Value;

/// (id, view, expected message, canonical text) of every view the daemon
/// would confirm.
fn views(conversations: usize, seed: u64) -> (Schema, Vec<(String, DynamicMessage, String)>) {
    let (schema, all) = generated_daemon_views("values", conversations, seed);
    let out = all
        .into_iter()
        .filter(|v| compare_slow(&schema, &v.expected, &v.text, ReasonClass::FullMismatch).is_ok())
        .map(|v| (format!("{}.{}", v.file_id, v.view), v.expected, v.text))
        .collect();
    (schema, out)
}

fn styled(schema: &Schema, text: &str, style: JsonStyle, seed: u64, id: &str) -> String {
    let b = restyle(
        text.as_bytes(),
        &schema.names.trajectory,
        style,
        seed,
        &[id, "test"],
    )
    .unwrap();
    String::from_utf8(b).unwrap()
}

/// Leaves of a JSON tree, with their paths in the comparison's notation.
fn leaves(v: &Value, path: String, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                leaves(c, p, out);
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                leaves(c, format!("{path}[{i}]"), out);
            }
        }
        _ => out.push((path, v.clone())),
    }
}

fn set(v: &mut Value, path: &str, new: Value) {
    let mut cur = v;
    for part in path.split('.') {
        let (key, idx) = match part.find('[') {
            Some(i) => (&part[..i], Some(&part[i..])),
            None => (part, None),
        };
        cur = &mut cur[key];
        if let Some(idx) = idx {
            for n in idx.split(['[', ']']).filter(|s| !s.is_empty()) {
                cur = &mut cur[n.parse::<usize>().unwrap()];
            }
        }
    }
    *cur = new;
}

/// Another value of the same JSON type (a changed leaf).
fn changed(v: &Value) -> Option<Value> {
    Some(match v {
        Value::Bool(b) => Value::Bool(!b),
        Value::Number(n) => {
            let t = n.to_string();
            let t = match t.strip_prefix('-') {
                Some(rest) => format!("-1{rest}"),
                None => format!("1{t}"),
            };
            Value::Number(t.parse().ok()?)
        }
        // Timestamps: one second later; 64-bit integers: another number;
        // enum names: not a name; other strings: another string.
        Value::String(s) if s.len() >= 20 && s.ends_with('Z') && s.as_bytes()[10] == b'T' => {
            let sec: u32 = s[17..19].parse().ok()?;
            Value::String(format!("{}{:02}{}", &s[..17], (sec + 1) % 60, &s[19..]))
        }
        Value::String(s) if !s.is_empty() && s.parse::<i64>().is_ok() => {
            Value::String(format!("1{s}"))
        }
        Value::String(s) => Value::String(format!("{s}x")),
        Value::Null => return None,
        _ => return None,
    })
}

#[test]
fn every_encoding_of_a_value_is_equal_and_every_change_is_named() {
    let (schema, views) = views(10, 11);
    assert!(views.len() > 10, "{} views", views.len());
    let mut encodings = 0;
    let mut changes = 0;
    let mut fast = 0;
    // How many encodings each style changed (it must change some: the sweep
    // would otherwise prove nothing).
    let mut rewritten = std::collections::BTreeMap::<String, usize>::new();
    for (id, expected, text) in &views {
        assert!(stream::equals(expected, text), "{id}: canonical, fast");
        fast += 1;
        for style in ALL_STYLES {
            for seed in 1..=3 {
                let t = styled(&schema, text, style, seed, id);
                let slow = compare_slow(&schema, expected, &t, ReasonClass::FullMismatch);
                assert!(slow.is_ok(), "{id} {style} {seed}: {slow:?}");
                if t != *text {
                    *rewritten.entry(style.to_string()).or_insert(0) += 1;
                    // The canonical text is what the fast path confirms;
                    // another spelling falls back to the value comparison.
                    assert!(!stream::equals(expected, &t) || style == JsonStyle::Spaced);
                }
                encodings += 1;
            }
        }
        let v: Value = serde_json::from_str(text).unwrap();
        let mut all = Vec::new();
        leaves(&v, String::new(), &mut all);
        let stride = (all.len() / 12).max(1);
        for (path, leaf) in all.iter().step_by(stride) {
            let Some(new) = changed(leaf) else { continue };
            let mut m = v.clone();
            set(&mut m, path, new.clone());
            let mutated = serde_json::to_string(&m).unwrap();
            for style in [
                JsonStyle::Canonical,
                JsonStyle::NineDigitTimes,
                JsonStyle::EnumNumbers,
                JsonStyle::Int64Numbers,
                JsonStyle::Spaced,
                JsonStyle::ProtoNames,
                JsonStyle::Mixed,
            ] {
                let t = styled(&schema, &mutated, style, 5, id);
                assert!(
                    !stream::equals(expected, &t),
                    "{id} {style}: {path} changed, fast path"
                );
                let slow = compare_slow(&schema, expected, &t, ReasonClass::FullMismatch);
                let Err(mm) = slow else {
                    panic!("{id} {style}: {path} changed to {new}, still equal");
                };
                // Styles that keep the JSON names name the path exactly.
                if !matches!(style, JsonStyle::ProtoNames | JsonStyle::Mixed) {
                    let first = &mm.paths[0];
                    assert!(
                        first.starts_with(&format!("{path}:")),
                        "{id} {style}: {path} changed, reported {:?}",
                        mm.paths
                    );
                    assert!(first.contains("expected"), "{first}");
                }
                changes += 1;
            }
        }
    }
    println!("rewritten per style: {rewritten:?}");
    for style in &ALL_STYLES[1..] {
        assert!(
            rewritten.get(style.name()).copied().unwrap_or(0) > 0,
            "{style} rewrote nothing"
        );
    }
    println!("{encodings} encodings equal, {changes} changes named, {fast} canonical views confirmed by the fast path");
    assert!(changes > 300, "{changes}");
}

#[test]
fn what_the_mapping_does_not_allow_is_refused() {
    let (schema, views) = views(4, 5);
    let (id, expected, text) = views
        .iter()
        .find(|(_, _, t)| t.contains("\"trajectoryId\""))
        .expect("a view with a trajectory id");
    let refused = |t: &str, what: &str| {
        assert!(!stream::equals(expected, t), "{id}: {what}: fast path");
        let r = compare_slow(&schema, expected, t, ReasonClass::FullMismatch);
        assert!(r.is_err(), "{id}: {what}: accepted");
        r.unwrap_err().paths.join("; ")
    };
    let accepted = |t: &str, what: &str| {
        let r = compare_slow(&schema, expected, t, ReasonClass::FullMismatch);
        assert!(r.is_ok(), "{id}: {what}: {r:?}");
    };
    let v: Value = serde_json::from_str(text).unwrap();
    let tid = v["trajectoryId"].clone();
    // The same key twice, first or last value "right".
    let dup_first = text.replacen('{', "{\"trajectoryId\":\"x\",", 1);
    let why = refused(&dup_first, "repeated member");
    assert!(why.contains("repeated"), "{why}");
    let dup_last = text.replacen('{', &format!("{{\"trajectoryId\":{tid},"), 1);
    let _ = refused(&dup_last, "repeated member, same value");
    // A repeated member deep inside.
    let deep = text.replacen("\"createdAt\":", "\"createdAt\":\"x\",\"createdAt\":", 1);
    if deep != *text {
        let why = refused(&deep, "deep repeated member");
        assert!(why.contains("createdAt"), "{why}");
    }
    // JSON and proto names of one field in one object.
    let mut both = v.clone();
    both.as_object_mut()
        .unwrap()
        .insert("trajectory_id".into(), tid.clone());
    let why = refused(&serde_json::to_string(&both).unwrap(), "both names");
    assert!(why.contains("trajectory_id"), "{why}");
    // The proto name alone is the same value.
    let mut proto = serde_json::Map::new();
    for (k, x) in v.as_object().unwrap() {
        let k = if k == "trajectoryId" {
            "trajectory_id"
        } else {
            k
        };
        proto.insert(k.into(), x.clone());
    }
    accepted(&serde_json::to_string(&proto).unwrap(), "proto name");
    // null is the default: an unset field given as null.
    let unset = schema
        .names
        .trajectory
        .fields()
        .find(|f| !expected.has_field(f))
        .expect("an unset field");
    let mut with_null = v.clone();
    with_null
        .as_object_mut()
        .unwrap()
        .insert(unset.json_name().into(), Value::Null);
    accepted(&serde_json::to_string(&with_null).unwrap(), "null default");
    // A set field given as null is missing.
    let mut nulled = v.clone();
    nulled["trajectoryId"] = Value::Null;
    let why = refused(&serde_json::to_string(&nulled).unwrap(), "nulled");
    assert!(why.contains("trajectoryId: null, expected"), "{why}");
    // Enums: an unknown name or number.
    let mut all = Vec::new();
    leaves(&v, String::new(), &mut all);
    let (path, _) = all
        .iter()
        .find(|(p, x)| p.ends_with("status") && x.is_string())
        .expect("an enum status");
    for bad in [Value::from("NOT_A_STATUS"), Value::from(9999)] {
        let mut m = v.clone();
        set(&mut m, path, bad.clone());
        let why = refused(&serde_json::to_string(&m).unwrap(), "unknown enum");
        assert!(why.contains(path.as_str()), "{why}");
        assert!(why.contains(&bad.to_string()), "{why}");
    }
    // An unknown field, and trailing data.
    let mut extra = v.clone();
    extra
        .as_object_mut()
        .unwrap()
        .insert("zzUnknown".into(), Value::Bool(true));
    let why = refused(&serde_json::to_string(&extra).unwrap(), "unknown field");
    assert!(why.contains("zzUnknown"), "{why}");
    let _ = refused(&format!("{text} {{}}"), "trailing data");
}
