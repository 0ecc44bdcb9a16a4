//! The one-pass comparison (`compare::stream::equals`) may only ever make an
//! equal response cheaper to confirm: whenever it says "equal", the strict
//! parse and the tree comparison must say so too. Checked on every daemon view
//! of a generated corpus, and on systematic near-misses of each view.
//!
//! The same pass over the expected message's wire encoding
//! (`compare::stream::wire`, what the sweep runs, no tree decoded) must
//! answer exactly what the pass over the decoded message answers, on every
//! text here.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::compare::{compare_slow, stream};
use agy_audit::schema::Schema;
use agy_audit::verdict::ReasonClass;
use common::generated_daemon_views;
use prost_reflect::DynamicMessage;
use serde_json::Value;

/// Every node path of a JSON tree (as index/key steps).
fn nodes(v: &Value, path: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    out.push(path.clone());
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                path.push(Step::Key(k.clone()));
                nodes(c, path, out);
                path.pop();
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                path.push(Step::Index(i));
                nodes(c, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

fn at<'a>(v: &'a mut Value, path: &[Step]) -> &'a mut Value {
    path.iter().fold(v, |v, s| match s {
        Step::Key(k) => &mut v[k.as_str()],
        Step::Index(i) => &mut v[*i],
    })
}

/// Near-misses of `v` at `path`, each with whether it should still be equal.
fn mutations(v: &Value, path: &[Step]) -> Vec<(String, Value, bool)> {
    let mut out = Vec::new();
    let mut push = |what: &str, f: &dyn Fn(&mut Value) -> bool, equal: bool| {
        let mut m = v.clone();
        if f(at(&mut m, path)) {
            out.push((format!("{what} at {path:?}"), m, equal));
        }
    };
    push(
        "string changed",
        &|n| match n {
            Value::String(s) => {
                s.push('x');
                true
            }
            _ => false,
        },
        false,
    );
    push(
        "number changed",
        &|n| match n {
            Value::Number(x) => {
                let t = x.to_string();
                let t = match t.strip_prefix('-') {
                    Some(rest) => format!("-1{rest}"),
                    None => format!("1{t}"),
                };
                *n = serde_json::from_str(&t).unwrap();
                true
            }
            _ => false,
        },
        false,
    );
    push(
        "number quoted",
        &|n| match n {
            Value::Number(x) => {
                *n = Value::String(x.to_string());
                true
            }
            _ => false,
        },
        false,
    );
    push(
        "number respelled",
        &|n| match n {
            Value::Number(x) => {
                let t = x.to_string();
                if t.contains(['e', 'E']) {
                    return false;
                }
                let re = if t.contains('.') {
                    format!("{t}0")
                } else {
                    format!("{t}.0")
                };
                *n = serde_json::from_str(&re).unwrap();
                true
            }
            _ => false,
        },
        true,
    );
    push(
        "key added",
        &|n| match n {
            Value::Object(m) => {
                m.insert("zzUnknown".into(), Value::Bool(true));
                true
            }
            _ => false,
        },
        false,
    );
    push(
        "key removed",
        &|n| match n {
            Value::Object(m) if !m.is_empty() => {
                let k = m.keys().next().unwrap().clone();
                m.shift_remove(&k);
                true
            }
            _ => false,
        },
        false,
    );
    push(
        "keys reversed",
        &|n| match n {
            Value::Object(m) if m.len() > 1 => {
                let mut items: Vec<_> = std::mem::take(m).into_iter().collect();
                items.reverse();
                m.extend(items);
                true
            }
            _ => false,
        },
        true,
    );
    push(
        "element dropped",
        &|n| match n {
            Value::Array(a) if !a.is_empty() => {
                a.pop();
                true
            }
            _ => false,
        },
        false,
    );
    push(
        "element doubled",
        &|n| match n {
            Value::Array(a) if !a.is_empty() => {
                let last = a[a.len() - 1].clone();
                a.push(last);
                true
            }
            _ => false,
        },
        false,
    );
    push(
        "nulled",
        &|n| {
            if n.is_null() {
                false
            } else {
                *n = Value::Null;
                true
            }
        },
        false,
    );
    push(
        "bool flipped",
        &|n| match n {
            Value::Bool(b) => {
                *b = !*b;
                true
            }
            _ => false,
        },
        false,
    );
    out
}

fn check(schema: &Schema, expected: &DynamicMessage, text: &str, class: ReasonClass, what: &str) {
    let fast = stream::equals(expected, text);
    same_over_the_wire(expected, text, fast, what);
    let slow = compare_slow(schema, expected, text, class);
    if fast {
        assert!(
            slow.is_ok(),
            "{what}: the fast path said equal, the slow path {slow:?}"
        );
    }
}

/// The tree pass's answer, the wire pass's checked to be the same.
fn both(expected: &DynamicMessage, text: &str) -> bool {
    let fast = stream::equals(expected, text);
    same_over_the_wire(expected, text, fast, text.get(..80).unwrap_or(text));
    fast
}

/// The wire pass over `expected`'s encoding answers `fast`, the tree
/// pass's answer.
fn same_over_the_wire(expected: &DynamicMessage, text: &str, fast: bool, what: &str) {
    use prost::Message;
    use prost_reflect::ReflectMessage;
    let encoding = expected.encode_to_vec();
    let wire = stream::wire::check(&expected.descriptor(), &encoding, None, text);
    assert_eq!(
        wire.is_ok(),
        fast,
        "{what}: the wire pass says {wire:?}, the tree pass {fast}"
    );
}

#[test]
fn fast_path_never_confirms_what_the_slow_path_refuses() {
    let (schema, views) = generated_daemon_views("fastpath", 8, 7);
    let mut confirmed = 0;
    let mut mutated = 0;
    let mut refused = 0;
    for dv in &views {
        let (id, view, class) = (&dv.file_id, dv.view, dv.class);
        let (expected, text) = (&dv.expected, dv.text.as_str());
        if compare_slow(&schema, expected, text, class).is_err() {
            // A planned disagreement of the daemon's view (the truth
            // says incomplete): the fast path must not confirm it either.
            assert!(!both(expected, text), "{id} {view}");
            refused += 1;
            continue;
        }
        if let Err(e) = stream::check(expected, text) {
            let col = e.column();
            let around = &text[col.saturating_sub(200)..(col + 100).min(text.len())];
            panic!("{id} {view}: the daemon's own view is not confirmed by the fast path: {e}: …{around}…");
        }
        confirmed += 1;
        let v: Value = serde_json::from_str(text).unwrap();
        let mut all = Vec::new();
        nodes(&v, &mut Vec::new(), &mut all);
        // A spread of 16 nodes, from the root down.
        let stride = (all.len() / 16).max(1);
        for path in all.iter().step_by(stride) {
            for (what, m, equal) in mutations(&v, path) {
                let t = serde_json::to_string(&m).unwrap();
                check(
                    &schema,
                    expected,
                    &t,
                    class,
                    &format!("{id} {view}: {what}"),
                );
                if equal {
                    assert!(
                        both(expected, &t),
                        "{id} {view}: {what}: still equal, confirmed by the fast path"
                    );
                }
                mutated += 1;
            }
        }
        // Textual near-misses the tree cannot express.
        let dup = text.replacen('{', "{\"trajectoryId\":\"x\",", 1);
        check(
            &schema,
            expected,
            &dup,
            class,
            &format!("{id} {view}: duplicate key"),
        );
        assert!(!both(expected, &format!("{text} {{}}")));
        assert!(!both(expected, &text[..text.len() / 2]));
    }
    assert!(
        confirmed > 8,
        "{confirmed} views confirmed ({refused} refused)"
    );
    assert!(mutated > 500, "{mutated} near-misses checked");
}

// ---------------------------------------------------------------------------
// Every field kind of the modeled schema, at its edges, in many spellings.

use prost_reflect::{
    DescriptorPool, FieldDescriptor, Kind, MapKey, MessageDescriptor, Value as PV,
};

/// Values of one field (single, list or map) at the edges of its kind.
fn edge_values(pool: &DescriptorPool, field: &FieldDescriptor) -> Vec<PV> {
    let kind = field.kind();
    if field.is_map() {
        let Kind::Message(entry) = &kind else {
            return vec![];
        };
        let keys: Vec<MapKey> = match entry.map_entry_key_field().kind() {
            Kind::String => vec![
                MapKey::String("a".into()),
                MapKey::String("b\u{e9}\"\\\n\u{1f600}".into()),
                MapKey::String(String::new()),
            ],
            Kind::Bool => vec![MapKey::Bool(true), MapKey::Bool(false)],
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => vec![MapKey::I32(-5), MapKey::I32(7)],
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
                vec![MapKey::I64(i64::MIN), MapKey::I64(1)]
            }
            Kind::Uint32 | Kind::Fixed32 => vec![MapKey::U32(u32::MAX), MapKey::U32(0)],
            Kind::Uint64 | Kind::Fixed64 => vec![MapKey::U64(u64::MAX), MapKey::U64(10)],
            _ => return vec![],
        };
        let values = single_edges(pool, &entry.map_entry_value_field().kind());
        let map: std::collections::HashMap<MapKey, PV> =
            keys.into_iter().zip(values.into_iter().cycle()).collect();
        return vec![PV::Map(map)];
    }
    let singles = single_edges(pool, &kind);
    if field.is_list() {
        let mut out: Vec<PV> = singles.iter().map(|v| PV::List(vec![v.clone()])).collect();
        out.push(PV::List(singles.into_iter().take(3).collect()));
        return out;
    }
    singles
}

fn single_edges(pool: &DescriptorPool, kind: &Kind) -> Vec<PV> {
    match kind {
        Kind::Bool => vec![PV::Bool(true)],
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            [1, -1, 7, i32::MAX, i32::MIN].map(PV::I32).to_vec()
        }
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
            [1, -1, i64::MAX, i64::MIN, 9_007_199_254_740_993]
                .map(PV::I64)
                .to_vec()
        }
        Kind::Uint32 | Kind::Fixed32 => [1, 10, u32::MAX].map(PV::U32).to_vec(),
        Kind::Uint64 | Kind::Fixed64 => [1, 100, u64::MAX].map(PV::U64).to_vec(),
        Kind::Float => [
            0.1f32,
            1.5,
            -2.0,
            f32::MAX,
            f32::MIN_POSITIVE,
            1e-45,
            f32::NAN,
            f32::INFINITY,
        ]
        .map(PV::F32)
        .to_vec(),
        Kind::Double => [
            0.1,
            1.0,
            -0.5,
            1e300,
            5e-324,
            123_456_789.125,
            f64::NAN,
            f64::NEG_INFINITY,
        ]
        .map(PV::F64)
        .to_vec(),
        Kind::String => [
            "x",
            "\u{e9} \u{fc}",
            "\u{1f600} emoji",
            "tab\tnew\nline",
            "quote\" back\\ slash /",
            "\u{1}\u{1f}\u{7f}\u{2028}",
        ]
        .map(|s| PV::String(s.into()))
        .to_vec(),
        Kind::Bytes => vec![
            PV::Bytes(Vec::new().into()),
            PV::Bytes(vec![0].into()),
            PV::Bytes(vec![1, 2].into()),
            PV::Bytes((0..=255u8).collect::<Vec<_>>().into()),
            PV::Bytes(
                (0..1537u32)
                    .map(|i| (i * 7) as u8)
                    .collect::<Vec<_>>()
                    .into(),
            ),
        ],
        Kind::Enum(e) => {
            let mut out: Vec<PV> = e
                .values()
                .take(3)
                .map(|v| PV::EnumNumber(v.number()))
                .collect();
            out.push(PV::EnumNumber(12_345));
            out
        }
        Kind::Message(m) => message_edges(pool, m),
    }
}

fn message_edges(pool: &DescriptorPool, m: &MessageDescriptor) -> Vec<PV> {
    let mut out = vec![PV::Message(DynamicMessage::new(m.clone()))];
    match m.full_name() {
        "google.protobuf.Timestamp" | "google.protobuf.Duration" => {
            for (s, n) in [
                (1_700_000_000i64, 5_000_000i32),
                (0, 1),
                (-1, 999_999_999),
                (-5, -5),
            ] {
                let mut t = DynamicMessage::new(m.clone());
                t.set_field_by_number(1, PV::I64(s));
                t.set_field_by_number(2, PV::I32(n));
                out.push(PV::Message(t));
            }
        }
        "google.protobuf.Any" => {
            let inner = pool
                .get_message_by_name("gemini_coder.TaskDetails")
                .expect("the modeled schema has TaskDetails");
            let mut payload = DynamicMessage::new(inner);
            payload.set_field_by_number(1, PV::String("id \u{e9}".into()));
            let mut ts = DynamicMessage::new(
                pool.get_message_by_name("google.protobuf.Timestamp")
                    .unwrap(),
            );
            ts.set_field_by_number(1, PV::I64(1_700_000_000));
            payload.set_field_by_number(8, PV::Message(ts.clone()));
            for (url, bytes) in [
                (
                    "type.googleapis.com/gemini_coder.TaskDetails",
                    prost::Message::encode_to_vec(&payload),
                ),
                (
                    "type.googleapis.com/google.protobuf.Timestamp",
                    prost::Message::encode_to_vec(&ts),
                ),
            ] {
                let mut a = DynamicMessage::new(m.clone());
                a.set_field_by_number(1, PV::String(url.into()));
                a.set_field_by_number(2, PV::Bytes(bytes.into()));
                out.push(PV::Message(a));
            }
        }
        _ => {}
    }
    out
}

/// The JSON text of `v` with every character of every string (keys too)
/// written as a `\u` escape (a surrogate pair past the BMP).
fn escaped_text(v: &Value, out: &mut String) {
    fn string(s: &str, out: &mut String) {
        out.push('"');
        for c in s.chars() {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
        out.push('"');
    }
    match v {
        Value::String(s) => string(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                escaped_text(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                string(k, out);
                out.push(':');
                escaped_text(x, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Spellings of a number with the same exact decimal value.
fn respellings(t: &str) -> Vec<String> {
    let mut out = vec![format!("{t}e0"), format!("{t}E+0")];
    if !t.contains(['e', 'E']) {
        let (int, frac) = t.split_once('.').unwrap_or((t, ""));
        out.push(format!("{int}{frac}0e-{}", frac.len() + 1));
        out.push(format!(
            "{t}{}",
            if frac.is_empty() { ".000" } else { "00" }
        ));
        if t == "0" {
            out.push("-0".into());
            out.push("0.0e5".into());
        }
    }
    out
}

/// Near-misses a tree mutation cannot express, each with whether the value
/// comparison may still find it equal (`None`: either way).
fn more_variants(v: &Value, path: &[Step]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut m = v.clone();
    let node = at(&mut m, path);
    match node.clone() {
        Value::Number(n) => {
            for r in respellings(&n.to_string()) {
                if let Ok(x) = serde_json::from_str::<Value>(&r) {
                    *at(&mut m, path) = x;
                    out.push((format!("respelled {r}"), m.clone()));
                }
            }
        }
        Value::String(s) => {
            for r in [
                serde_json::from_str::<Value>(&s).ok(),
                Some(Value::from(1)),
                Some(Value::from(0)),
                Some(Value::String(s.to_uppercase())),
                Some(Value::String(format!("{s}="))),
                Some(Value::String(s.trim_end_matches('=').to_string())),
                Some(Value::String(s.replace('+', "-").replace('/', "_"))),
            ]
            .into_iter()
            .flatten()
            {
                *at(&mut m, path) = r.clone();
                out.push((format!("string respelled as {r}"), m.clone()));
            }
        }
        Value::Object(o) if !o.is_empty() => {
            // The first member's key in proto (snake case) spelling.
            let k = o.keys().next().unwrap().clone();
            let snake: String = k
                .chars()
                .flat_map(|c| {
                    if c.is_ascii_uppercase() {
                        vec!['_', c.to_ascii_lowercase()]
                    } else {
                        vec![c]
                    }
                })
                .collect();
            if snake != k {
                if let Value::Object(mm) = at(&mut m, path) {
                    let val = mm.shift_remove(&k).unwrap();
                    mm.insert(snake.clone(), val);
                    out.push((format!("key {k} as {snake}"), m.clone()));
                }
            }
        }
        _ => {}
    }
    out
}

/// Every message of the schema's pool (map entries left out, and with
/// `skip_well_known` the `google.protobuf.` types) with one field set to
/// one of its edge values, and the serializer's tree of each that
/// serializes; first, how many such messages were built.
type Edge = (MessageDescriptor, FieldDescriptor, DynamicMessage, Value);
fn edge_messages(pool: &DescriptorPool, skip_well_known: bool) -> (usize, Vec<Edge>) {
    let (mut built, mut out) = (0, Vec::new());
    for desc in pool.all_messages() {
        if desc.is_map_entry()
            || (skip_well_known && desc.full_name().starts_with("google.protobuf."))
        {
            continue;
        }
        for field in desc.fields() {
            for value in edge_values(pool, &field) {
                let mut m = DynamicMessage::new(desc.clone());
                if m.try_set_field(&field, value).is_err() {
                    continue;
                }
                built += 1;
                if let Ok(tree) = m.serialize_with_options(
                    serde_json::value::Serializer,
                    &agy_audit::schema::daemon_json_options(),
                ) {
                    out.push((desc.clone(), field.clone(), m, tree));
                }
            }
        }
    }
    (built, out)
}

#[test]
fn fast_path_agrees_on_every_field_kind_at_its_edges() {
    let schema = Schema::modeled().unwrap();
    let pool = schema.pool.clone();
    let class = ReasonClass::FullMismatch;
    let (mut texts, mut confirmed) = (0, 0);
    let (messages, edges) = edge_messages(&pool, true);
    for (desc, field, m, tree) in edges {
        let canonical = serde_json::to_string(&tree).unwrap();
        let what = format!("{}.{}", desc.full_name(), field.name());
        check(&schema, &m, &canonical, class, &what);
        if compare_slow(&schema, &m, &canonical, class).is_ok() {
            assert!(both(&m, &canonical), "{what}: canonical {canonical}");
            confirmed += 1;
        }
        // Every character escaped, pretty-printed: the same value.
        let mut esc = String::new();
        escaped_text(&tree, &mut esc);
        let pretty = serde_json::to_string_pretty(&tree).unwrap();
        for t in [&esc, &pretty] {
            check(&schema, &m, t, class, &format!("{what}: {t}"));
            if both(&m, &canonical) {
                assert!(both(&m, t), "{what}: {t}");
            }
        }
        let mut all = Vec::new();
        nodes(&tree, &mut Vec::new(), &mut all);
        for path in &all {
            let mut vs: Vec<(String, Value)> = mutations(&tree, path)
                .into_iter()
                .map(|(w, v, _)| (w, v))
                .collect();
            vs.extend(more_variants(&tree, path));
            for (w, v) in vs {
                let t = serde_json::to_string(&v).unwrap();
                check(&schema, &m, &t, class, &format!("{what}: {w}: {t}"));
                texts += 1;
            }
        }
        // Textual near-misses: a duplicate member in the innermost
        // object, data after the value, a cut value.
        if let Some(i) = canonical.rfind('{') {
            if let Some(end) = canonical[i..].find(['}', ',']).map(|e| e + i) {
                let member = &canonical[i + 1..end];
                if !member.is_empty() {
                    let dup = format!("{}{member},{}", &canonical[..=i], &canonical[i + 1..]);
                    check(
                        &schema,
                        &m,
                        &dup,
                        class,
                        &format!("{what}: duplicate {dup}"),
                    );
                    assert!(!both(&m, &dup), "{what}: {dup}");
                }
            }
        }
        assert!(!both(&m, &format!("{canonical} 1")), "{what}");
        assert!(!both(&m, &canonical[..canonical.len() - 1]), "{what}");
    }
    assert!(messages > 500, "{messages} messages");
    assert!(confirmed > 500, "{confirmed} confirmed");
    assert!(texts > 5000, "{texts} near-misses");
}

// ---------------------------------------------------------------------------
// The wire pass reads an encoding exactly as the decoder does.

/// A field key on the wire (the corpus generator's encoder: the truth the
/// reader is held to, none of the reader's code).
fn key(number: u32, wire: u8) -> Vec<u8> {
    let mut out = Vec::new();
    agy_corpus::corpus::wire::put_key(&mut out, number, wire);
    out
}

/// Encodings the decoder reads otherwise than a serializer writes them, from
/// one message's encoding: its fields reversed, each field twice (a scalar's
/// last wins, a message merges, a list doubles, two oneof members), every
/// field of the type spelled with a zero value first and last (an explicit
/// default, or a wire type the field cannot have), unknown fields between,
/// a string made invalid UTF-8, the encoding cut.
fn wire_variants(desc: &MessageDescriptor, encoding: &[u8]) -> Vec<(String, Vec<u8>)> {
    let occ = agy_corpus::corpus::wire::fields(encoding).expect("a serializer's encoding");
    let join = |parts: &[&[u8]]| parts.concat();
    let mut out = vec![("as written".to_string(), encoding.to_vec())];
    let reversed: Vec<u8> = occ.iter().rev().flat_map(|f| f.encoding.to_vec()).collect();
    out.push(("fields reversed".into(), reversed));
    out.push(("every field twice".into(), join(&[encoding, encoding])));
    for (i, f) in occ.iter().enumerate() {
        let mut twice = encoding.to_vec();
        twice.extend_from_slice(f.encoding);
        out.push((format!("field {} (#{i}) again at the end", f.number), twice));
    }
    for field in desc.fields() {
        let n = field.number();
        for (wire, zero) in [
            (0u8, vec![0u8]),
            (1, vec![0; 8]),
            (5, vec![0; 4]),
            (2, vec![0u8]),
            (2, vec![1u8, 1]),
            (0, vec![1u8]),
        ] {
            let spelled = join(&[&key(n, wire), &zero]);
            out.push((
                format!("field {n} as wire {wire} {zero:?} first"),
                join(&[&spelled, encoding]),
            ));
            out.push((
                format!("field {n} as wire {wire} {zero:?} last"),
                join(&[encoding, &spelled]),
            ));
        }
    }
    let unknown = join(&[&key(536_870_911, 0), &[5], &key(536_870_910, 2), &[1, b'x']]);
    out.push((
        "unknown fields between".into(),
        join(&[&unknown, encoding, &unknown]),
    ));
    if let Some(at) = encoding.windows(1).position(|w| w[0].is_ascii_alphabetic()) {
        let mut bad = encoding.to_vec();
        bad[at] = 0xff;
        out.push(("a byte made 0xff".into(), bad));
    }
    if encoding.len() > 1 {
        out.push(("cut".into(), encoding[..encoding.len() - 1].to_vec()));
    }
    out
}

/// On every variant: when the decoder refuses it, the wire pass confirms
/// nothing; when it decodes, the wire pass answers what the tree pass
/// answers of the decoded message, on its canonical text and on `texts`.
fn wire_agrees(desc: &MessageDescriptor, encoding: &[u8], texts: &[&str], what: &str) -> usize {
    let mut confirmed = 0;
    for (how, bytes) in wire_variants(desc, encoding) {
        let what = format!("{what}: {how}");
        let Ok(decoded) = DynamicMessage::decode(desc.clone(), bytes.as_slice()) else {
            for t in texts {
                assert!(
                    !stream::wire::equals(desc, &bytes, None, t),
                    "{what}: undecodable, confirmed"
                );
            }
            continue;
        };
        let canonical = decoded
            .serialize_with_options(
                serde_json::value::Serializer,
                &agy_audit::schema::daemon_json_options(),
            )
            .ok()
            .map(|v| serde_json::to_string(&v).unwrap());
        for t in texts.iter().copied().chain(canonical.as_deref()) {
            let tree = stream::equals(&decoded, t);
            let wire = stream::wire::check(desc, &bytes, None, t);
            assert_eq!(wire.is_ok(), tree, "{what}: {t}: wire {wire:?}");
            confirmed += usize::from(tree);
        }
    }
    confirmed
}

#[test]
fn the_wire_pass_reads_an_encoding_as_the_decoder_does() {
    use prost::Message;
    let schema = Schema::modeled().unwrap();
    let pool = schema.pool.clone();
    let mut confirmed = 0;
    let (_, edges) = edge_messages(&pool, false);
    let messages = edges.len();
    for (desc, field, m, tree) in edges {
        let text = serde_json::to_string(&tree).unwrap();
        let what = format!("{}.{}", desc.full_name(), field.name());
        confirmed += wire_agrees(&desc, &m.encode_to_vec(), &[&text, "{}"], &what);
    }
    // Whole trajectories of a generated corpus, and their projections.
    let (_, views) = generated_daemon_views("wirepass", 4, 11);
    for dv in &views {
        use prost_reflect::ReflectMessage;
        let what = format!("{} {}", dv.file_id, dv.view);
        let desc = dv.expected.descriptor();
        confirmed += wire_agrees(&desc, &dv.expected.encode_to_vec(), &[&dv.text], &what);
    }
    assert!(messages > 500, "{messages} messages");
    assert!(confirmed > 5000, "{confirmed} confirmed");
}

/// An `Any` is read off the wire too (its payload compared beside its
/// `@type` with no copy decoded): on the `Any`'s own wire variants (its URL
/// or value twice, reversed, in a wire type they cannot have, a URL made
/// invalid UTF-8) and on its payload's, the wire pass answers what the tree
/// pass answers of the decoded message, inside a message that holds it as
/// well as alone; a URL naming no type, a payload of a well-known type and
/// a payload missing its `@type` are held to the tree pass's answers too.
#[test]
fn the_wire_pass_reads_an_any_as_the_decoder_does() {
    use agy_corpus::corpus::wire::len_field;
    let schema = Schema::modeled().unwrap();
    let pool = schema.pool.clone();
    let any = pool.get_message_by_name("google.protobuf.Any").unwrap();
    let task = pool
        .get_message_by_name("gemini_coder.TaskDetails")
        .unwrap();
    // A message with an Any field, to hold each Any as a field too.
    let (holder, field) = pool
        .all_messages()
        .find_map(|m| {
            m.fields()
                .find(|f| {
                    !f.is_list()
                        && matches!(f.kind(), Kind::Message(k) if k.full_name() == "google.protobuf.Any")
                })
                .map(|f| (m.clone(), f.number()))
        })
        .expect("the modeled schema has a message with an Any field");
    let mut confirmed = 0;
    let mut payloads: Vec<(String, Vec<u8>)> = Vec::new();
    for m in message_edges(&pool, &any) {
        let PV::Message(a) = m else { continue };
        let url = a
            .get_field_by_number(1)
            .and_then(|v| v.as_str().map(str::to_string));
        let value = a.get_field_by_number(2).and_then(|v| v.as_bytes().cloned());
        if let (Some(url), Some(value)) = (url, value) {
            if url.ends_with("TaskDetails") {
                for (how, bytes) in wire_variants(&task, &value) {
                    payloads.push((format!("payload {how}"), bytes));
                }
            }
            payloads.push((format!("{url} as written"), value.to_vec()));
        }
    }
    let url = "type.googleapis.com/gemini_coder.TaskDetails";
    let mut encodings: Vec<(String, Vec<u8>)> = payloads
        .iter()
        .map(|(how, value)| {
            (
                how.clone(),
                [len_field(1, url.as_bytes()), len_field(2, value)].concat(),
            )
        })
        .collect();
    for (how, u) in [
        ("no type", "type.googleapis.com/gemini_coder.NoSuchType"),
        ("no slash", "gemini_coder.TaskDetails"),
        (
            "a well-known payload",
            "type.googleapis.com/google.protobuf.Timestamp",
        ),
    ] {
        let value = payloads.first().map(|p| p.1.clone()).unwrap_or_default();
        encodings.push((
            how.into(),
            [len_field(1, u.as_bytes()), len_field(2, &value)].concat(),
        ));
    }
    let mut bad_url = [len_field(1, url.as_bytes()), len_field(2, &[])].concat();
    bad_url[3] = 0xff;
    encodings.push(("a URL made invalid UTF-8".into(), bad_url));
    for (how, encoding) in &encodings {
        let texts: Vec<String> = match DynamicMessage::decode(any.clone(), encoding.as_slice()) {
            Ok(decoded) => {
                let mut texts = vec!["{}".to_string(), format!(r#"{{"@type":"{url}"}}"#)];
                if let Ok(v) = decoded.serialize_with_options(
                    serde_json::value::Serializer,
                    &agy_audit::schema::daemon_json_options(),
                ) {
                    let mut without = v.clone();
                    if let Some(o) = without.as_object_mut() {
                        o.remove("@type");
                    }
                    let mut twice = serde_json::to_string(&v).unwrap();
                    twice.insert_str(1, &format!(r#""@type":"{url}","#));
                    texts.extend([
                        serde_json::to_string(&v).unwrap(),
                        without.to_string(),
                        twice,
                    ]);
                }
                texts
            }
            Err(_) => vec![format!(r#"{{"@type":"{url}"}}"#)],
        };
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        confirmed += wire_agrees(&any, encoding, &texts, &format!("Any: {how}"));
        // The same Any as a field of a message.
        let held = len_field(field, encoding);
        if let Ok(decoded) = DynamicMessage::decode(holder.clone(), held.as_slice()) {
            if let Ok(v) = decoded.serialize_with_options(
                serde_json::value::Serializer,
                &agy_audit::schema::daemon_json_options(),
            ) {
                let text = serde_json::to_string(&v).unwrap();
                let tree = stream::equals(&decoded, &text);
                let wire = stream::wire::check(&holder, &held, None, &text);
                assert_eq!(wire.is_ok(), tree, "held Any: {how}: {text}: wire {wire:?}");
                confirmed += usize::from(tree);
            }
        } else {
            assert!(
                !stream::wire::equals(&holder, &held, None, "{}"),
                "held Any: {how}: undecodable, confirmed"
            );
        }
    }
    assert!(encodings.len() > 40, "{} encodings", encodings.len());
    assert!(confirmed > 40, "{confirmed} confirmed");
}

/// A string-keyed map of values that are not messages is read off the wire
/// (a generic step's `args` no longer sends its step to the tree walk): on
/// entries the decoder reads otherwise than a serializer writes them (a key
/// or value twice, one absent, an unknown field, a value in a wire type it
/// cannot have, a key made invalid UTF-8, a key's entries repeated with
/// other values, entries reversed), the wire pass answers what the tree
/// pass answers of the decoded message, for every such map of the schema.
#[test]
fn the_wire_pass_reads_a_map_as_the_decoder_does() {
    use agy_corpus::corpus::wire::{len_field, put_key};
    let schema = Schema::modeled().unwrap();
    let pool = schema.pool.clone();
    let mut maps = 0;
    let mut confirmed = 0;
    for desc in pool.all_messages() {
        for field in desc.fields().filter(|f| f.is_map()) {
            let Kind::Message(entry) = field.kind() else {
                continue;
            };
            if entry.map_entry_key_field().kind() != Kind::String
                || matches!(entry.map_entry_value_field().kind(), Kind::Message(_))
            {
                continue;
            }
            maps += 1;
            let n = field.number();
            // Values of the value's kind, as the serializer encodes them.
            let values: Vec<Vec<u8>> = single_edges(&pool, &entry.map_entry_value_field().kind())
                .into_iter()
                .filter_map(|v| {
                    let mut e = DynamicMessage::new(entry.clone());
                    e.try_set_field_by_number(2, v).ok()?;
                    Some(prost::Message::encode_to_vec(&e))
                })
                .collect();
            let (v0, v1) = (&values[0], values.last().unwrap());
            // The value in a wire type it cannot have, readable as a field
            // (a string as a varint, anything else as length-delimited).
            let wrong_wire = {
                let mut out = Vec::new();
                let string = entry.map_entry_value_field().kind() == Kind::String;
                put_key(&mut out, 2, if string { 0 } else { 2 });
                out.push(0);
                out
            };
            let unknown = {
                let mut out = Vec::new();
                put_key(&mut out, 9, 0);
                out.push(7);
                out
            };
            let key = |k: &[u8]| len_field(1, k);
            let entries: Vec<(&str, Vec<Vec<u8>>)> = vec![
                ("one", vec![[key(b"k"), v1.clone()].concat()]),
                (
                    "key twice",
                    vec![[key(b"x"), v1.clone(), key(b"k")].concat()],
                ),
                (
                    "value twice",
                    vec![[key(b"k"), v1.clone(), v0.clone()].concat()],
                ),
                ("value first", vec![[v1.clone(), key(b"k")].concat()]),
                ("no value", vec![key(b"k")]),
                ("no key", vec![v1.clone()]),
                ("empty", vec![Vec::new()]),
                (
                    "unknown field",
                    vec![[key(b"k"), unknown.clone(), v1.clone()].concat()],
                ),
                (
                    "wrong wire type",
                    vec![[key(b"k"), wrong_wire.clone()].concat()],
                ),
                ("key not UTF-8", vec![[key(&[0xff]), v1.clone()].concat()]),
                (
                    "a key again, other value",
                    vec![
                        [key(b"k"), v1.clone()].concat(),
                        [key(b"j"), v1.clone()].concat(),
                        [key(b"k"), v0.clone()].concat(),
                    ],
                ),
                (
                    "many keys, reversed",
                    (0..40)
                        .rev()
                        .map(|i| [key(format!("k{i:02}").as_bytes()), v1.clone()].concat())
                        .collect(),
                ),
            ];
            for (how, list) in entries {
                let encoding: Vec<u8> = list.iter().flat_map(|e| len_field(n, e)).collect();
                let what = format!("{}.{}: {how}", desc.full_name(), field.name());
                match DynamicMessage::decode(desc.clone(), encoding.as_slice()) {
                    Err(_) => {
                        // Whatever a lenient reading of the entry would
                        // give, the wire pass confirms none of it.
                        let json = field.json_name();
                        let lenient = ["", "\"\"", "\"\\u0000\"", "false", "true"].map(|v| {
                            if v.is_empty() {
                                format!(r#"{{"{json}":{{}}}}"#)
                            } else {
                                format!(r#"{{"{json}":{{"k":{v}}}}}"#)
                            }
                        });
                        for t in ["{}"].into_iter().chain(lenient.iter().map(String::as_str)) {
                            assert!(
                                !stream::wire::equals(&desc, &encoding, None, t),
                                "{what}: undecodable, confirmed {t}"
                            );
                        }
                    }
                    Ok(decoded) => {
                        let v = decoded
                            .serialize_with_options(
                                serde_json::value::Serializer,
                                &agy_audit::schema::daemon_json_options(),
                            )
                            .unwrap();
                        let text = serde_json::to_string(&v).unwrap();
                        let mut texts = vec![text.clone(), "{}".to_string()];
                        // A near-miss: one entry's key altered.
                        texts.push(text.replacen("\"k", "\"q", 1));
                        for t in &texts {
                            let tree = stream::equals(&decoded, t);
                            let wire = stream::wire::check(&desc, &encoding, None, t);
                            assert_eq!(wire.is_ok(), tree, "{what}: {t}: wire {wire:?}");
                            confirmed += usize::from(tree);
                        }
                    }
                }
            }
        }
    }
    assert!(maps >= 3, "{maps} maps");
    assert!(
        confirmed >= maps * 8,
        "{confirmed} confirmed of {maps} maps"
    );
}

/// The sweep's ordinary comparison over the wire (the stored encoding with
/// the projection's rewritten steps spliced in, or an alternative's) gives
/// what the comparison over the tree gives (`compare_ordinary_projection`)
/// whenever it gives an answer, and confirms exactly what the tree pass
/// confirms of the presented trajectory (`Projection::present`), on every
/// ordinary view of a generated corpus and on near-misses of it.
#[test]
fn the_wire_pass_with_rewritten_steps_answers_as_the_presented_tree() {
    use agy_audit::compare::{compare_ordinary_projection, ordinary_on_wire};
    use agy_audit::project::project_message;
    use agy_audit::source::wire_trajectory::WireTrajectory;
    use prost::Message;
    let (schema, views) = generated_daemon_views("wiresplice", 24, 13);
    let (mut compared, mut confirmed, mut spliced, mut alternative) = (0, 0, 0, 0);
    for dv in views.iter().filter(|v| v.view == "ordinary") {
        let Some(full) = views
            .iter()
            .find(|v| v.view == "full" && v.file_id == dv.file_id)
        else {
            continue;
        };
        let mut tree = full.expected.clone();
        let encoding = bytes::Bytes::from(tree.encode_to_vec());
        let wire = WireTrajectory::index(&schema.names, encoding).unwrap();
        let Ok(mut projection) = project_message(&schema, &tree) else {
            continue;
        };
        let rewritten = projection.presented_steps(None).map_or(0, |s| s.len());
        // The daemon's view, and the alternative form's canonical text
        // (replay147's waits omitted), each with near-misses.
        let mut forms = vec![serde_json::from_str::<Value>(&dv.text).unwrap()];
        if !projection.alternatives().is_empty() {
            let alt = projection.with_alternative(0, |p| {
                agy_audit::schema::to_daemon_json(&p.present(&mut tree))
            });
            forms.extend(alt);
        }
        let mut texts = Vec::new();
        for v in &forms {
            texts.push(serde_json::to_string(v).unwrap());
            let mut all = Vec::new();
            nodes(v, &mut Vec::new(), &mut all);
            for path in all.iter().step_by((all.len() / 24).max(1)) {
                for (_, m, _) in mutations(v, path) {
                    texts.push(serde_json::to_string(&m).unwrap());
                }
            }
        }
        for t in &texts {
            let head: String = t.chars().take(200).collect();
            let on_wire = ordinary_on_wire(&projection, &wire, t);
            let presented = stream::equals(&projection.present(&mut tree), t);
            if presented {
                assert!(
                    matches!(on_wire, Some(Ok(_))),
                    "{}: the tree pass confirms, the wire pass does not: {head}",
                    dv.file_id
                );
                confirmed += 1;
                spliced += usize::from(rewritten > 0);
            }
            if let Some(answer) = on_wire {
                let by_tree = compare_ordinary_projection(&schema, &mut projection, &mut tree, t);
                assert_eq!(answer, by_tree, "{}: {head}", dv.file_id);
                alternative += usize::from(!presented);
            }
            compared += 1;
        }
    }
    assert!(compared > 200, "{compared} texts compared");
    assert!(
        spliced > 4,
        "{spliced} confirmed with rewritten steps ({confirmed} confirmed)"
    );
    // Replay147's alternative form, answered on the wire, is checked
    // against the tree beside its own cases (tests/project_modern_ide.rs).
    let _ = alternative;
}
