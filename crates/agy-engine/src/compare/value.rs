//! The value comparison: a response is equal to the expected message when it
//! denotes the same protobuf value under the proto3 JSON mapping, however it
//! is spelled.
//!
//! Accepted, because the mapping allows them (and Go's `protojson`, which
//! the daemon uses, reads them):
//!
//! * field names in JSON (`trajectoryId`) or proto (`trajectory_id`) form;
//!   both naming one field in one object is a duplicate and refused;
//! * Timestamps with 0 to 9 fraction digits and a `Z` or `±hh:mm` offset,
//!   Durations with 0 to 9 fraction digits, compared as instants and spans;
//! * enums by name or number (an unknown name or number is refused);
//! * integers (64-bit or not) as JSON numbers or decimal strings, in any
//!   spelling of the same integral value (`1`, `1.0`, `"1e0"`);
//! * floating point values as numbers or strings whose exact decimal value
//!   is the expected value's shortest form or its exact binary value, and
//!   `"NaN"`, `"Infinity"`, `"-Infinity"`;
//! * bytes in standard or URL-safe base64, with or without padding;
//! * `null` for a field: its default (absent).
//!
//! Refused: anything else the mapping does not allow, including an object
//! that repeats a member (the same key twice, anywhere: checked by a pass
//! over the text that sees every key, since `serde_json::Value` keeps only
//! the last), an unknown field, a value of the wrong JSON type, two members
//! of one oneof. Each difference names its path and shows both values.

use super::json::{decimal, json_diff, kind, short};
use crate::schema::to_daemon_json;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;
use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, MapKey, ReflectMessage, Value as PV};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value as J;
use std::collections::HashSet;
use std::fmt;

/// The differences between `expected` and the response `text` (at most
/// `limit`); empty when they denote the same value.
pub fn diff_text(expected: &DynamicMessage, text: &str, limit: usize) -> Vec<String> {
    if let Err(e) = unique_members(text) {
        return vec![e];
    }
    match serde_json::from_str::<J>(text) {
        Ok(actual) => diff_value(expected, &actual, limit),
        Err(e) => vec![format!("not JSON: {e}")],
    }
}

/// [`diff_text`] of an already parsed response (whose members were checked
/// to be unique).
pub fn diff_value(expected: &DynamicMessage, actual: &J, limit: usize) -> Vec<String> {
    let mut d = Differ {
        out: Vec::new(),
        limit: limit.max(1),
        rpc_only: None,
    };
    d.message(expected, actual, "");
    d.out
}

/// The most RPC-only member paths one comparison names; past it the
/// comparison still tolerates them but stops listing (see
/// [`RpcOnly::more`]).
pub const MAX_RPC_ONLY_PATHS: usize = 1000;

/// The members of an ordinary response that the schema does not know (no
/// field of the message at their place, in either spelling): presentation
/// the daemon computes, kept in the saved payload and its digest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RpcOnly {
    /// Their paths (`steps[3].rpcRenderHints`), in response order.
    pub paths: Vec<String>,
    /// How many more there were past [`MAX_RPC_ONLY_PATHS`].
    pub more: usize,
}

/// [`diff_text`] that tolerates members the schema does not know, returning
/// their paths beside the differences: every known field must still denote
/// the expected value, every expected field be present, no member repeat.
pub fn diff_text_rpc_only(
    expected: &DynamicMessage,
    text: &str,
    limit: usize,
) -> (Vec<String>, RpcOnly) {
    if let Err(e) = unique_members(text) {
        return (vec![e], RpcOnly::default());
    }
    let actual = match serde_json::from_str::<J>(text) {
        Ok(a) => a,
        Err(e) => return (vec![format!("not JSON: {e}")], RpcOnly::default()),
    };
    let mut d = Differ {
        out: Vec::new(),
        limit: limit.max(1),
        rpc_only: Some(RpcOnly::default()),
    };
    d.message(expected, &actual, "");
    (d.out, d.rpc_only.unwrap_or_default())
}

/// Checks that no object in `text` repeats a member; the error names the
/// path of the second one.
pub fn unique_members(text: &str) -> Result<(), String> {
    let mut de = serde_json::Deserializer::from_str(text);
    let mut path = String::new();
    Unique(&mut path)
        .deserialize(&mut de)
        .and_then(|()| de.end())
        .map_err(|e| e.to_string())
}

struct Unique<'p>(&'p mut String);

impl<'de> DeserializeSeed<'de> for Unique<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Unique<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        loop {
            let saved = self.0.len();
            self.0.push_str(&format!("[{i}]"));
            let more = seq.next_element_seed(Unique(self.0))?;
            self.0.truncate(saved);
            if more.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }
    // With arbitrary precision, a number arrives as a one-member map too;
    // it cannot repeat a member.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys: HashSet<String> = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let saved = self.0.len();
            if !self.0.is_empty() {
                self.0.push('.');
            }
            self.0.push_str(&key);
            if !keys.insert(key) {
                return Err(de::Error::custom(format!(
                    "{}: member repeated in one object",
                    self.0
                )));
            }
            map.next_value_seed(Unique(self.0))?;
            self.0.truncate(saved);
        }
        Ok(())
    }
}

struct Differ {
    out: Vec<String>,
    limit: usize,
    /// When set, a member the schema does not know is recorded here
    /// instead of being a difference.
    rpc_only: Option<RpcOnly>,
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn at(path: &str) -> &str {
    if path.is_empty() {
        "(root)"
    } else {
        path
    }
}

impl Differ {
    fn full(&self) -> bool {
        self.out.len() >= self.limit
    }

    fn push(&mut self, path: &str, what: String) {
        if !self.full() {
            self.out.push(format!("{}: {what}", at(path)));
        }
    }

    fn differs(&mut self, path: &str, actual: &J, expected: &J) {
        let what = if actual.is_null() {
            format!("null, expected {} {}", kind(expected), short(expected))
        } else if kind(actual) == kind(expected) {
            format!("{}, expected {}", short(actual), short(expected))
        } else {
            format!(
                "{} {}, expected {} {}",
                kind(actual),
                short(actual),
                kind(expected),
                short(expected)
            )
        };
        self.push(path, what);
    }

    /// Falls back to the tree comparison of the canonical form (for the
    /// well-known types without a rule here and messages with extensions).
    fn tree(&mut self, expected: &DynamicMessage, actual: &J, path: &str) {
        let room = self.limit - self.out.len().min(self.limit);
        for d in json_diff(&to_daemon_json(expected), actual, room) {
            let d = match d.strip_prefix("(root)") {
                Some(rest) => format!("{}{rest}", at(path)),
                None if path.is_empty() => d,
                None => format!("{path}.{d}"),
            };
            if !self.full() {
                self.out.push(d);
            }
        }
    }

    fn message(&mut self, exp: &DynamicMessage, act: &J, path: &str) {
        if self.full() {
            return;
        }
        let desc = exp.descriptor();
        match desc.full_name() {
            "google.protobuf.Timestamp" => return self.time(exp, act, path, true),
            "google.protobuf.Duration" => return self.time(exp, act, path, false),
            "google.protobuf.Any" if exp.extensions().next().is_none() => {
                return self.any(exp, act, path)
            }
            n if n.starts_with("google.protobuf.") => return self.tree(exp, act, path),
            _ if exp.extensions().next().is_some() => return self.tree(exp, act, path),
            _ => {}
        }
        let J::Object(members) = act else {
            let expected = to_daemon_json(exp);
            return self.differs(path, act, &expected);
        };
        self.members(exp, members.iter().map(|(k, v)| (k.as_str(), v)), path);
    }

    /// The members of a message object (an Any's without its `@type`).
    fn members<'a>(
        &mut self,
        exp: &DynamicMessage,
        members: impl Iterator<Item = (&'a str, &'a J)>,
        path: &str,
    ) {
        let desc = exp.descriptor();
        let mut seen: Vec<u32> = Vec::new();
        let mut oneofs: Vec<String> = Vec::new();
        for (key, val) in members {
            if self.full() {
                return;
            }
            let here = join(path, key);
            let Some(field) = desc
                .get_field_by_json_name(key)
                .or_else(|| desc.get_field_by_name(key))
            else {
                if let Some(r) = self.rpc_only.as_mut() {
                    if r.paths.len() < MAX_RPC_ONLY_PATHS {
                        r.paths.push(here);
                    } else {
                        r.more += 1;
                    }
                    continue;
                }
                self.push(
                    &here,
                    format!(
                        "not a field of {} (response has {})",
                        desc.full_name(),
                        short(val)
                    ),
                );
                continue;
            };
            if seen.contains(&field.number()) {
                self.push(
                    &here,
                    format!(
                        "names field {} again (a repeated member)",
                        field.json_name()
                    ),
                );
                continue;
            }
            seen.push(field.number());
            let null_value = is_null_value(&field);
            if let Some(o) = field.containing_oneof() {
                if !val.is_null() || null_value {
                    if oneofs.iter().any(|n| n == o.name()) {
                        self.push(&here, format!("a second member of oneof {}", o.name()));
                        continue;
                    }
                    oneofs.push(o.name().to_string());
                }
            }
            if val.is_null() && !null_value {
                // null is the default: the field is absent.
                if exp.has_field(&field) {
                    let expected = field_json(&field, &exp.get_field(&field));
                    self.differs(&here, val, &expected);
                }
                continue;
            }
            if exp.has_field(&field) {
                self.field(&field, &exp.get_field(&field), val, &here);
            } else if field.supports_presence() {
                self.push(
                    &here,
                    format!("not predicted (response has {})", short(val)),
                );
            } else {
                self.field(&field, &exp.get_field(&field), val, &here);
            }
        }
        for (field, value) in exp.fields() {
            if self.full() {
                return;
            }
            if !seen.contains(&field.number()) {
                let here = join(path, field.json_name());
                self.push(
                    &here,
                    format!(
                        "missing from the response (expected {})",
                        short(&field_json(&field, value))
                    ),
                );
            }
        }
    }

    fn field(&mut self, field: &FieldDescriptor, exp: &PV, act: &J, path: &str) {
        let kind = field.kind();
        if field.is_map() {
            let (J::Object(members), PV::Map(entries), Kind::Message(entry)) = (act, exp, &kind)
            else {
                return self.differs(path, act, &field_json(field, exp));
            };
            let key_kind = entry.map_entry_key_field().kind();
            let value_kind = entry.map_entry_value_field().kind();
            let mut seen: HashSet<MapKey> = HashSet::new();
            for (k, v) in members {
                if self.full() {
                    return;
                }
                let here = join(path, k);
                let Some(key) = map_key(&key_kind, k) else {
                    self.push(&here, format!("not a map key of type {key_kind:?}"));
                    continue;
                };
                if !seen.insert(key.clone()) {
                    self.push(&here, "names a map key again (a repeated member)".into());
                    continue;
                }
                match entries.get(&key) {
                    Some(ev) if !v.is_null() => self.single(&value_kind, ev, v, &here),
                    Some(ev) => self.differs(&here, v, &single_json(&value_kind, ev)),
                    None => self.push(&here, format!("not predicted (response has {})", short(v))),
                }
            }
            for (k, v) in entries {
                if !seen.contains(k) {
                    let here = join(path, &map_key_text(k));
                    self.push(
                        &here,
                        format!(
                            "missing from the response (expected {})",
                            short(&single_json(&value_kind, v))
                        ),
                    );
                }
            }
            return;
        }
        if field.is_list() {
            let (J::Array(items), PV::List(expected)) = (act, exp) else {
                return self.differs(path, act, &field_json(field, exp));
            };
            if items.len() != expected.len() {
                self.push(
                    path,
                    format!("{} elements, expected {}", items.len(), expected.len()),
                );
            }
            for (i, (e, a)) in expected.iter().zip(items).enumerate() {
                if self.full() {
                    return;
                }
                let here = format!("{path}[{i}]");
                if a.is_null() && !is_null_value(field) {
                    self.differs(&here, a, &single_json(&kind, e));
                } else {
                    self.single(&kind, e, a, &here);
                }
            }
            return;
        }
        self.single(&kind, exp, act, path)
    }

    fn single(&mut self, kind: &Kind, exp: &PV, act: &J, path: &str) {
        let equal = match exp {
            PV::Message(m) => return self.message(m, act, path),
            PV::Bool(b) => act.as_bool() == Some(*b),
            PV::String(s) => act.as_str() == Some(s.as_str()),
            PV::I32(v) => int_of(act) == Some(i128::from(*v)),
            PV::I64(v) => int_of(act) == Some(i128::from(*v)),
            PV::U32(v) => int_of(act) == Some(i128::from(*v)),
            PV::U64(v) => int_of(act) == Some(i128::from(*v)),
            PV::F32(v) => float_equal(act, f64::from(*v), Some(*v)),
            PV::F64(v) => float_equal(act, *v, None),
            PV::Bytes(b) => bytes_of(act).as_deref() == Some(b.as_ref()),
            PV::EnumNumber(n) => match kind {
                Kind::Enum(e) => e.get_value(*n).is_some() && enum_of(e, act) == Some(*n),
                _ => false,
            },
            PV::List(_) | PV::Map(_) => false,
        };
        if !equal {
            self.differs(path, act, &single_json(kind, exp));
        }
    }

    fn time(&mut self, exp: &DynamicMessage, act: &J, path: &str, timestamp: bool) {
        let seconds = exp
            .get_field_by_number(1)
            .and_then(|v| v.as_i64())
            .unwrap_or(0);
        let nanos = exp
            .get_field_by_number(2)
            .and_then(|v| v.as_i32())
            .unwrap_or(0);
        let got = act.as_str().and_then(|s| {
            if timestamp {
                parse_timestamp(s)
            } else {
                parse_duration(s)
            }
        });
        if got != Some((seconds, nanos)) {
            let expected = to_daemon_json(exp);
            self.differs(path, act, &expected);
        }
    }

    fn any(&mut self, exp: &DynamicMessage, act: &J, path: &str) {
        let url = exp
            .get_field_by_number(1)
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let bytes = exp
            .get_field_by_number(2)
            .and_then(|v| v.as_bytes().cloned())
            .unwrap_or_default();
        let pool = exp.descriptor().parent_pool().clone();
        let inner = url
            .rsplit('/')
            .next()
            .and_then(|name| pool.get_message_by_name(name))
            .and_then(|desc| DynamicMessage::decode(desc, bytes).ok());
        let (Some(inner), J::Object(members)) = (inner, act) else {
            return self.tree(exp, act, path);
        };
        match members.get("@type") {
            Some(J::String(t)) if *t == url => {}
            Some(t) => {
                let here = join(path, "@type");
                return self.differs(&here, t, &J::String(url));
            }
            None => {
                let here = join(path, "@type");
                return self.push(
                    &here,
                    format!("missing from the response (expected {url:?})"),
                );
            }
        }
        let special = inner
            .descriptor()
            .full_name()
            .starts_with("google.protobuf.");
        if special {
            for k in members.keys().filter(|k| *k != "@type" && *k != "value") {
                let here = join(path, k);
                self.push(&here, format!("not a member of an Any holding {url}"));
            }
            match members.get("value") {
                Some(v) => {
                    let here = join(path, "value");
                    self.message(&inner, v, &here);
                }
                None => {
                    let here = join(path, "value");
                    self.push(&here, "missing from the response".into());
                }
            }
        } else {
            self.members(
                &inner,
                members
                    .iter()
                    .filter(|(k, _)| *k != "@type")
                    .map(|(k, v)| (k.as_str(), v)),
                path,
            );
        }
    }
}

fn is_null_value(field: &FieldDescriptor) -> bool {
    matches!(field.kind(), Kind::Enum(e) if e.full_name() == "google.protobuf.NullValue")
}

/// The canonical JSON of one field's value (for messages).
fn field_json(field: &FieldDescriptor, v: &PV) -> J {
    let kind = field.kind();
    match v {
        PV::List(items) => J::Array(items.iter().map(|i| single_json(&kind, i)).collect()),
        PV::Map(entries) => {
            let value_kind = match &kind {
                Kind::Message(m) => m.map_entry_value_field().kind(),
                _ => kind.clone(),
            };
            J::Object(
                entries
                    .iter()
                    .map(|(k, v)| (map_key_text(k), single_json(&value_kind, v)))
                    .collect(),
            )
        }
        v => single_json(&kind, v),
    }
}

fn single_json(kind: &Kind, v: &PV) -> J {
    match v {
        PV::Message(m) => to_daemon_json(m),
        PV::Bool(b) => J::Bool(*b),
        PV::String(s) => J::String(s.clone()),
        PV::I32(x) => J::from(*x),
        PV::U32(x) => J::from(*x),
        PV::I64(x) => J::String(x.to_string()),
        PV::U64(x) => J::String(x.to_string()),
        PV::F32(x) => float_json(f64::from(*x)),
        PV::F64(x) => float_json(*x),
        PV::Bytes(b) => J::String(base64::engine::general_purpose::STANDARD.encode(b)),
        PV::EnumNumber(n) => match kind {
            Kind::Enum(e) if e.full_name() == "google.protobuf.NullValue" => J::Null,
            Kind::Enum(e) => match e.get_value(*n) {
                Some(v) => J::String(v.name().to_string()),
                None => J::from(*n),
            },
            _ => J::from(*n),
        },
        PV::List(items) => J::Array(items.iter().map(|i| single_json(kind, i)).collect()),
        PV::Map(_) => J::String("(map)".into()),
    }
}

fn float_json(v: f64) -> J {
    match serde_json::Number::from_f64(v) {
        Some(n) => J::Number(n),
        None if v.is_nan() => J::String("NaN".into()),
        None if v > 0.0 => J::String("Infinity".into()),
        None => J::String("-Infinity".into()),
    }
}

fn map_key_text(k: &MapKey) -> String {
    match k {
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(x) => x.to_string(),
        MapKey::I64(x) => x.to_string(),
        MapKey::U32(x) => x.to_string(),
        MapKey::U64(x) => x.to_string(),
        MapKey::String(s) => s.clone(),
    }
}

fn map_key(kind: &Kind, s: &str) -> Option<MapKey> {
    Some(match kind {
        Kind::String => MapKey::String(s.to_string()),
        Kind::Bool => match s {
            "true" => MapKey::Bool(true),
            "false" => MapKey::Bool(false),
            _ => return None,
        },
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => MapKey::I32(s.parse().ok()?),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => MapKey::I64(s.parse().ok()?),
        Kind::Uint32 | Kind::Fixed32 => MapKey::U32(s.parse().ok()?),
        Kind::Uint64 | Kind::Fixed64 => MapKey::U64(s.parse().ok()?),
        _ => return None,
    })
}

/// The text of a JSON number, or of a string holding exactly one.
fn number_text(v: &J) -> Option<String> {
    match v {
        J::Number(n) => Some(n.to_string()),
        J::String(s) => {
            let ok = s.trim() == s
                && s.starts_with(|c: char| c == '-' || c.is_ascii_digit())
                && serde_json::from_str::<serde_json::Number>(s).is_ok();
            ok.then(|| s.clone())
        }
        _ => None,
    }
}

/// The integral value of a JSON number or numeric string (`1`, `1.0`,
/// `"1e0"`); `None` for anything else or a fraction.
pub fn int_of(v: &J) -> Option<i128> {
    let (neg, digits, exp) = decimal(&number_text(v)?)?;
    if digits.is_empty() {
        return Some(0);
    }
    if exp < 0 || digits.len() as i64 + exp > 38 {
        return None;
    }
    let mut n: i128 = digits.parse().ok()?;
    for _ in 0..exp {
        n = n.checked_mul(10)?;
    }
    Some(if neg { -n } else { n })
}

fn float_equal(act: &J, want: f64, as_f32: Option<f32>) -> bool {
    if let J::String(s) = act {
        match s.as_str() {
            "NaN" => return want.is_nan(),
            "Infinity" => return want == f64::INFINITY,
            "-Infinity" => return want == f64::NEG_INFINITY,
            _ => {}
        }
    }
    if !want.is_finite() {
        return false;
    }
    let Some(got) = number_text(act).and_then(|t| decimal(&t)) else {
        return false;
    };
    let same = |text: String| decimal(&text).is_some_and(|d| d == got);
    same(format!("{want:e}"))
        || as_f32.is_some_and(|f| same(format!("{f:e}")))
        || same(format!("{want:.800e}"))
}

fn bytes_of(v: &J) -> Option<Vec<u8>> {
    let s = v.as_str()?;
    let config = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    let alphabet = if s.contains(['-', '_']) {
        &base64::alphabet::URL_SAFE
    } else {
        &base64::alphabet::STANDARD
    };
    GeneralPurpose::new(alphabet, config).decode(s).ok()
}

fn enum_of(e: &prost_reflect::EnumDescriptor, v: &J) -> Option<i32> {
    match v {
        J::String(name) => e.get_value_by_name(name).map(|v| v.number()),
        J::Number(_) => {
            let n = i32::try_from(int_of(v)?).ok()?;
            e.get_value(n).map(|v| v.number())
        }
        J::Null if e.full_name() == "google.protobuf.NullValue" => Some(0),
        _ => None,
    }
}

/// Days from 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn digits(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Up to nine fraction digits as nanoseconds (`""` is 0).
fn fraction(s: &str) -> Option<i32> {
    if s.len() > 9 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let padded = format!("{s:0<9}");
    padded.parse().ok()
}

/// An RFC 3339 timestamp as (seconds, nanos) since the epoch, within the
/// mapping's range (years 1 to 9999).
pub(crate) fn parse_timestamp(s: &str) -> Option<(i64, i32)> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (digits(&s[0..4])?, digits(&s[5..7])?, digits(&s[8..10])?);
    let (h, mi, se) = (
        digits(&s[11..13])?,
        digits(&s[14..16])?,
        digits(&s[17..19])?,
    );
    let rest = &s[19..];
    let (frac, zone) = match rest.strip_prefix('.') {
        Some(r) => {
            let end = r.find(|c: char| !c.is_ascii_digit())?;
            if end == 0 {
                return None;
            }
            (&r[..end], &r[end..])
        }
        None => ("", rest),
    };
    let nanos = fraction(frac)?;
    let offset = match zone {
        "Z" => 0,
        z if z.len() == 6 && (z.starts_with('+') || z.starts_with('-')) && &z[3..4] == ":" => {
            let (oh, om) = (digits(&z[1..3])?, digits(&z[4..6])?);
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if z.starts_with('-') {
                -o
            } else {
                o
            }
        }
        _ => return None,
    };
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&mo) || d < 1 || h > 23 || mi > 59 || se > 59 {
        return None;
    }
    if d > month_days[(mo - 1) as usize] {
        return None;
    }
    let seconds = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se - offset;
    if !(-62_135_596_800..=253_402_300_799).contains(&seconds) {
        return None;
    }
    Some((seconds, nanos))
}

/// A Duration (`-1.5s`) as (seconds, nanos), both carrying the sign.
pub(crate) fn parse_duration(s: &str) -> Option<(i64, i32)> {
    let body = s.strip_suffix('s')?;
    let (neg, body) = match body.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, body),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    if body.contains('.') && frac.is_empty() {
        return None;
    }
    let seconds = digits(int)?;
    let nanos = fraction(frac)?;
    if seconds > 315_576_000_000 {
        return None;
    }
    Some(if neg {
        (-seconds, -nanos)
    } else {
        (seconds, nanos)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_denote_instants() {
        let t = parse_timestamp("2026-12-05T10:37:33.824913Z");
        assert_eq!(t, Some((1_796_467_053, 824_913_000)));
        assert_eq!(parse_timestamp("2026-12-05T10:37:33.824913000Z"), t);
        assert_eq!(parse_timestamp("2026-12-05T11:37:33.824913+01:00"), t);
        assert_eq!(parse_timestamp("2026-12-05T05:07:33.824913-05:30"), t);
        assert_eq!(parse_timestamp("1970-01-01T00:00:00Z"), Some((0, 0)));
        assert_eq!(
            parse_timestamp("1969-12-31T23:59:59.5Z"),
            Some((-1, 500_000_000))
        );
        for bad in [
            "2026-12-05T10:37:33.Z",
            "2026-12-05T10:37:33.8249130001Z",
            "2026-12-05 10:37:33Z",
            "2026-12-05T10:37:33",
            "2026-02-30T10:37:33Z",
            "2026-12-05T10:37:60Z",
            "2026-12-05T10:37:33+0100",
            "2026-12-05t10:37:33z",
            "10000-01-01T00:00:00Z",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
    }

    #[test]
    fn durations_denote_spans() {
        assert_eq!(parse_duration("2.769s"), Some((2, 769_000_000)));
        assert_eq!(parse_duration("2.769000000s"), Some((2, 769_000_000)));
        assert_eq!(parse_duration("-0.5s"), Some((0, -500_000_000)));
        assert_eq!(parse_duration("3s"), Some((3, 0)));
        for bad in ["2.s", "s", ".5s", "2.7690000001s", "2", "+2s", "2 s"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn integers_floats_and_bytes_by_value() {
        let j = |s: &str| serde_json::from_str::<J>(s).unwrap();
        assert_eq!(int_of(&j("12")), Some(12));
        assert_eq!(int_of(&j("\"12\"")), Some(12));
        assert_eq!(int_of(&j("1.2e1")), Some(12));
        assert_eq!(
            int_of(&j("\"-9007199254740993\"")),
            Some(-9_007_199_254_740_993)
        );
        assert_eq!(int_of(&j("1.5")), None);
        assert_eq!(int_of(&j("\" 12\"")), None);
        assert_eq!(int_of(&j("true")), None);
        assert!(float_equal(&j("0.1"), 0.1, None));
        assert!(float_equal(&j("\"1e-1\""), 0.1, None));
        assert!(float_equal(
            &j("0.1000000000000000055511151231257827021181583404541015625"),
            0.1,
            None
        ));
        assert!(!float_equal(&j("0.1000000000000000055"), 0.1, None));
        assert!(float_equal(&j("0.1"), f64::from(0.1f32), Some(0.1)));
        assert!(float_equal(&j("\"NaN\""), f64::NAN, None));
        assert!(!float_equal(&j("\"NaN\""), 0.0, None));
        assert_eq!(bytes_of(&j("\"+/8=\"")), Some(vec![0xfb, 0xff]));
        assert_eq!(bytes_of(&j("\"-_8\"")), Some(vec![0xfb, 0xff]));
        assert_eq!(bytes_of(&j("\"-/8\"")), None);
        assert_eq!(bytes_of(&j("\"!!\"")), None);
    }

    #[test]
    fn repeated_members_are_found_anywhere() {
        assert!(unique_members(r#"{"a": [{"b": 1, "c": 2}], "d": 1.5}"#).is_ok());
        let e = unique_members(r#"{"a": [{"b": 1, "b": 2}]}"#).unwrap_err();
        assert!(e.contains("a[0].b: member repeated"), "{e}");
        let e = unique_members(r#"{"response": "old draft", "response": "final"}"#).unwrap_err();
        assert!(e.contains("response"), "{e}");
    }
}

/// Property tests over generated messages: every message type of the
/// modeled schema, one field at a time set to a seeded value, written in
/// each spelling the mapping allows (equal), then with the value changed
/// (not equal, the path named, both values shown).
#[cfg(test)]
mod properties {
    use super::*;
    use crate::schema::Schema;

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
    }

    /// A non-default value of a scalar kind, and its other spellings.
    fn value_and_spellings(kind: &Kind, rng: &mut Rng) -> Option<(PV, J, Vec<J>)> {
        let n = rng.next();
        let j = |s: &str| serde_json::from_str::<J>(s).expect("test JSON");
        Some(match kind {
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
                let v = -((n >> 1) as i64) - 1;
                (
                    PV::I64(v),
                    J::String(v.to_string()),
                    vec![j(&v.to_string()), j(&format!("\"{v}.0\""))],
                )
            }
            Kind::Uint64 | Kind::Fixed64 => {
                let v = n | 1 << 63;
                (
                    PV::U64(v),
                    J::String(v.to_string()),
                    vec![j(&v.to_string()), j(&format!("{v}e0"))],
                )
            }
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
                let v = (n as i32).saturating_abs().max(1) / 10 * 10 + 10;
                let e = format!("{}e1", v / 10);
                (
                    PV::I32(v),
                    J::from(v),
                    vec![J::String(v.to_string()), j(&e), j(&format!("{v}.00"))],
                )
            }
            Kind::Uint32 | Kind::Fixed32 => {
                let v = (n as u32).max(1);
                (PV::U32(v), J::from(v), vec![J::String(v.to_string())])
            }
            Kind::Double => {
                let v = (n % 1_000_000) as f64 / 1000.0 + 0.001;
                let canonical = float_json(v);
                (
                    PV::F64(v),
                    canonical,
                    vec![
                        J::String(format!("{v:e}")),
                        j(&format!("{v:.800e}")),
                        j(&format!("{v:e}")),
                    ],
                )
            }
            Kind::Float => {
                let v = (n % 10_000) as f32 / 8.0 + 0.125;
                (
                    PV::F32(v),
                    float_json(f64::from(v)),
                    vec![j(&format!("{v:e}")), J::String(format!("{v}"))],
                )
            }
            Kind::Bytes => {
                let b: Vec<u8> = n.to_le_bytes()[..(n % 7 + 1) as usize].to_vec();
                let std = base64::engine::general_purpose::STANDARD.encode(&b);
                let url = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&b);
                let std_nopad = std.trim_end_matches('=').to_string();
                (
                    PV::Bytes(b.into()),
                    J::String(std),
                    vec![J::String(url), J::String(std_nopad)],
                )
            }
            Kind::Enum(e) => {
                let values: Vec<_> = e.values().filter(|v| v.number() != 0).collect();
                let v = values.get((n % values.len().max(1) as u64) as usize)?;
                (
                    PV::EnumNumber(v.number()),
                    J::String(v.name().to_string()),
                    vec![J::from(v.number())],
                )
            }
            Kind::Message(m) if m.full_name() == "google.protobuf.Timestamp" => {
                let seconds = (n % 4_000_000_000) as i64;
                let nanos = (n % 1000) as i32 * 1_000_000;
                let mut t = DynamicMessage::new(m.clone());
                t.set_field_by_number(1, PV::I64(seconds));
                t.set_field_by_number(2, PV::I32(nanos));
                let canonical = to_daemon_json(&t);
                let text = canonical.as_str()?.to_string();
                let (civil, _) = text.split_once('.').unwrap_or((&text[..19], ""));
                let nine = format!("{civil}.{nanos:09}Z");
                // The same instant one hour east, written by hand.
                let east = {
                    let hour: i64 = civil[11..13].parse().ok()?;
                    if hour == 23 {
                        nine.clone()
                    } else {
                        format!(
                            "{}{:02}{}.{nanos:09}+01:00",
                            &civil[..11],
                            hour + 1,
                            &civil[13..]
                        )
                    }
                };
                (
                    PV::Message(t),
                    canonical,
                    vec![J::String(nine), J::String(east)],
                )
            }
            Kind::Message(m) if m.full_name() == "google.protobuf.Duration" => {
                let seconds = (n % 100_000) as i64;
                let nanos = (n % 1000) as i32 * 1_000_000;
                let mut d = DynamicMessage::new(m.clone());
                d.set_field_by_number(1, PV::I64(seconds));
                d.set_field_by_number(2, PV::I32(nanos));
                let canonical = to_daemon_json(&d);
                (
                    PV::Message(d),
                    canonical,
                    vec![J::String(format!("{seconds}.{nanos:09}s"))],
                )
            }
            Kind::Bool => (PV::Bool(true), J::Bool(true), vec![]),
            Kind::String => (
                PV::String(format!("s{n}")),
                J::String(format!("s{n}")),
                vec![],
            ),
            Kind::Message(_) => return None,
        })
    }

    /// A different value of the same kind, as the canonical JSON.
    fn changed(kind: &Kind, canonical: &J) -> Option<J> {
        Some(match (kind, canonical) {
            (Kind::Enum(e), J::String(name)) => {
                let other = e.values().find(|v| v.name() != name)?;
                J::String(other.name().to_string())
            }
            (_, J::String(s)) if s.ends_with('Z') && s.len() > 19 => J::String(
                format!("{}{}", &s[..18], if &s[18..19] == "1" { "2" } else { "1" }) + &s[19..],
            ),
            (_, J::String(s))
                if s.ends_with('s') && s.starts_with(|c: char| c.is_ascii_digit()) =>
            {
                J::String(format!("1{s}"))
            }
            (Kind::Bytes, J::String(s)) => {
                let mut b = base64::engine::general_purpose::STANDARD.decode(s).ok()?;
                b.push(0);
                J::String(base64::engine::general_purpose::STANDARD.encode(b))
            }
            (_, J::String(s)) if s.parse::<i128>().is_ok() => J::String(format!("{s}1")),
            (_, J::String(s)) => J::String(format!("{s}x")),
            (_, J::Number(n)) => serde_json::from_str(&format!("{n}1")).ok()?,
            (_, J::Bool(b)) => J::Bool(!b),
            _ => return None,
        })
    }

    fn one(key: &str, v: J) -> J {
        let mut m = serde_json::Map::new();
        m.insert(key.to_string(), v);
        J::Object(m)
    }

    #[test]
    fn every_spelling_is_equal_and_every_change_is_named() {
        let schema = Schema::modeled().expect("the modeled schema");
        let mut rng = Rng(23);
        let (mut equal, mut different) = (0, 0);
        let mut kinds = std::collections::BTreeSet::new();
        for desc in schema.pool.all_messages() {
            if desc.is_map_entry() || desc.full_name().starts_with("google.protobuf.") {
                continue;
            }
            for field in desc.fields() {
                if field.is_list() || field.is_map() {
                    continue;
                }
                let kind = field.kind();
                let Some((value, canonical, spellings)) = value_and_spellings(&kind, &mut rng)
                else {
                    continue;
                };
                kinds.insert(match &kind {
                    Kind::Message(m) => m.name().to_string(),
                    Kind::Enum(_) => "enum".to_string(),
                    k => format!("{k:?}"),
                });
                let mut msg = DynamicMessage::new(desc.clone());
                msg.set_field(&field, value);
                assert_eq!(
                    to_daemon_json(&msg),
                    one(field.json_name(), canonical.clone()),
                    "{}",
                    field.full_name()
                );
                let mut all = vec![canonical.clone()];
                all.extend(spellings);
                for v in &all {
                    for key in [field.json_name(), field.name()] {
                        let text = one(key, v.clone()).to_string();
                        let d = diff_text(&msg, &text, 5);
                        assert!(d.is_empty(), "{}: {text}: {d:?}", field.full_name());
                        equal += 1;
                    }
                }
                // The field given twice, by both names: refused.
                if field.json_name() != field.name() {
                    let text = format!(
                        "{{\"{}\":{canonical},\"{}\":{canonical}}}",
                        field.json_name(),
                        field.name()
                    );
                    assert!(!diff_text(&msg, &text, 5).is_empty(), "{text}");
                }
                // The same key twice: refused.
                let key = field.json_name();
                let text = format!("{{\"{key}\":{canonical},\"{key}\":{canonical}}}");
                assert!(!diff_text(&msg, &text, 5).is_empty(), "{text}");
                let Some(other) = changed(&kind, &canonical) else {
                    continue;
                };
                for key in [field.json_name(), field.name()] {
                    let text = one(key, other.clone()).to_string();
                    let d = diff_text(&msg, &text, 5);
                    assert_eq!(d.len(), 1, "{}: {text}: {d:?}", field.full_name());
                    assert!(d[0].starts_with(&format!("{key}: ")), "{d:?}");
                    assert!(
                        d[0].contains(&short(&other)) && d[0].contains(&short(&canonical)),
                        "both values: {d:?}"
                    );
                    different += 1;
                }
                // Absent and null: the default, which this value is not.
                assert!(!diff_text(&msg, "{}", 5).is_empty());
                let null = one(key, J::Null).to_string();
                assert!(!diff_text(&msg, &null, 5).is_empty());
                assert!(diff_text(&DynamicMessage::new(desc.clone()), &null, 5).is_empty());
            }
        }
        assert!(
            equal > 500 && different > 200,
            "{equal} spellings equal, {different} changes named; kinds {kinds:?}"
        );
        for k in [
            "Duration",
            "Timestamp",
            "bytes",
            "double",
            "enum",
            "int32",
            "int64",
            "uint64",
        ] {
            assert!(kinds.contains(k), "no {k} field generated: {kinds:?}");
        }
    }
}
