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
//! How it stays cheap: per message type of the expected message's pool, a
//! table is computed once per pool and shared by all threads (each field's
//! JSON name, its enum's value names by number, its map's key kind), so the
//! walk clones no field descriptor and looks no name up in the pool; scalars are compared
//! without allocating (64-bit integers formatted on the stack, numbers
//! compared digit by digit by exact decimal value, bytes base64-encoded in
//! chunks, Timestamps and Durations formatted on the stack); strings are
//! compared as serde_json hands them over (borrowed from the text when they
//! have no escapes).
//!
//! `google.protobuf.Any` is compared in the same pass: its payload is
//! decoded exactly as the serializer decodes it (type URL after its last
//! `/`, looked up in the pool, the bytes merged into a new message), and
//! the object must hold `@type` once, with exactly the type URL, and the
//! payload's set fields (or, for a well-known payload, `value`) and nothing
//! else. A payload whose type is not in the pool or does not decode, a type
//! URL without `/`, a payload of another `google.protobuf.` type than the
//! serializer's well-known ones (which the value comparison would read
//! differently), or one carrying extensions answers "no".
//!
//! Other well-known types (`google.protobuf.*`, whose JSON forms are
//! special) and messages carrying extensions are compared through their
//! tree form, with the same serializer as the slow path; a message the
//! serializer refuses to serialize answers "no", and so does a tree whose
//! nesting, added to the depth where it stands, reaches serde_json's
//! recursion limit (the value comparison parses the whole text with it).

pub mod wire;

use super::json::json_diff;
use crate::schema::daemon_json_options;
use crate::source::scan_plan::scalar_wire_type;
use crate::source::wire::WireType;
use base64::Engine;
use prost_reflect::{
    DescriptorPool, DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor,
    ReflectMessage, Value,
};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

/// Whether `text` is exactly the daemon JSON of `expected` (see the module
/// documentation). `false` means "take the slow path", not "different".
pub fn equals(expected: &DynamicMessage, text: &str) -> bool {
    check(expected, text).is_ok()
}

/// [`equals`], with where the one pass stopped (line and column of the text).
pub fn check(expected: &DynamicMessage, text: &str) -> Result<(), serde_json::Error> {
    let desc = expected.descriptor();
    let tables = tables_for(desc.parent_pool());
    let mut walk = Walk {
        tables: &tables,
        stack: Vec::new(),
        depth: 0,
    };
    let mut de = serde_json::Deserializer::from_str(text);
    MessageSeed {
        w: &mut walk,
        msg: expected,
        hint: None,
    }
    .deserialize(&mut de)?;
    de.end()
}

fn differ<E: de::Error>() -> E {
    E::custom("not the expected value")
}

// ---------------------------------------------------------------------------
// Per-type tables, computed once per pool.

/// The tables of the last few pools compared, shared by every thread (a
/// sweep compares on many), each holding its pool, so the addresses that
/// key its types stay valid and unique.
static TABLES: Mutex<Vec<Arc<Tables>>> = Mutex::new(Vec::new());

/// How many pools' tables are kept (the tool uses one schema per run).
const KEPT_POOLS: usize = 4;

fn tables_for(pool: &DescriptorPool) -> Arc<Tables> {
    let find = |kept: &Vec<Arc<Tables>>| kept.iter().find(|t| t.pool == *pool).cloned();
    if let Some(t) = find(&TABLES.lock().unwrap_or_else(|e| e.into_inner())) {
        return t;
    }
    // Built outside the lock; a thread that built the same pool's tables
    // meanwhile wins, this one's are dropped.
    let built = Arc::new(Tables::build(pool));
    let mut kept = TABLES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(t) = find(&kept) {
        return t;
    }
    if kept.len() >= KEPT_POOLS {
        kept.remove(0);
    }
    kept.push(built.clone());
    built
}

/// The key of a message type in [`Tables`]: the address of its full name,
/// which the pool stores once per type (and the tables keep the pool alive).
fn type_key(desc: &MessageDescriptor) -> usize {
    desc.full_name().as_ptr() as usize
}

struct Tables {
    pool: DescriptorPool,
    index: HashMap<usize, u32>,
    types: Vec<TypeTable>,
    enums: Vec<EnumTable>,
}

/// How a message type's JSON is compared.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Special {
    /// An object of its set fields.
    Plain,
    Timestamp,
    Duration,
    Any,
    /// Another `google.protobuf.` type: through its tree form.
    OtherWellKnown,
}

struct TypeTable {
    key: usize,
    /// The type itself (the wire walk decodes what it leaves to the tree
    /// path with it).
    desc: MessageDescriptor,
    special: Special,
    /// Whether the pool extends the type at all (only then can a message of
    /// it carry an extension).
    extended: bool,
    /// Whether a field's JSON name is `@type` (an Any holding it would
    /// repeat the member; such payloads are left to the slow path).
    has_at_type: bool,
    /// Its fields, by ascending number.
    fields: Vec<FieldEntry>,
    /// A Timestamp's or Duration's `seconds` and `nanos` fields (read with
    /// these descriptors: no look-up or clone per message).
    time: Option<(FieldDescriptor, FieldDescriptor)>,
}

struct FieldEntry {
    number: u32,
    json_name: Box<str>,
    info: ValueInfo,
    map: Option<MapInfo>,
    /// How one value of the field is spelled on the wire…
    wire: WireKind,
    /// …in which wire type, unpacked (`scan_plan::scalar_wire_type`).
    wire_type: WireType,
    /// A repeated field that is not a map.
    list: bool,
    /// Whether a default value is "set" (`has_field`'s rule: explicit
    /// presence, a message, a oneof member).
    presence: bool,
    /// The field's oneof (its position among the type's oneofs).
    oneof: Option<u32>,
    /// A proto2 group (on the wire in start and end tags).
    group: bool,
    /// An enum field's default number (what a field without presence
    /// holds when not set).
    enum_default: i32,
}

/// A field's kind as the wire spells one of its values.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum WireKind {
    Double,
    Float,
    Int64,
    Uint64,
    Int32,
    Fixed64,
    Fixed32,
    Bool,
    String,
    Bytes,
    Uint32,
    Enum,
    Sfixed32,
    Sfixed64,
    Sint32,
    Sint64,
    Message,
}

impl WireKind {
    fn of(kind: &Kind) -> WireKind {
        match kind {
            Kind::Double => WireKind::Double,
            Kind::Float => WireKind::Float,
            Kind::Int64 => WireKind::Int64,
            Kind::Uint64 => WireKind::Uint64,
            Kind::Int32 => WireKind::Int32,
            Kind::Fixed64 => WireKind::Fixed64,
            Kind::Fixed32 => WireKind::Fixed32,
            Kind::Bool => WireKind::Bool,
            Kind::String => WireKind::String,
            Kind::Bytes => WireKind::Bytes,
            Kind::Uint32 => WireKind::Uint32,
            Kind::Enum(_) => WireKind::Enum,
            Kind::Sfixed32 => WireKind::Sfixed32,
            Kind::Sfixed64 => WireKind::Sfixed64,
            Kind::Sint32 => WireKind::Sint32,
            Kind::Sint64 => WireKind::Sint64,
            Kind::Message(_) => WireKind::Message,
        }
    }
}

/// What a single value of a field needs beyond its own variant.
#[derive(Clone, Copy)]
enum ValueInfo {
    Plain,
    /// An enum type (index into [`Tables::enums`]).
    Enum(u32),
    /// `google.protobuf.NullValue`, whose JSON is `null`.
    NullValue,
    /// A message type, the likely table of its values.
    Message(Option<u32>),
}

impl ValueInfo {
    /// A message field's likely table (its declared type's).
    fn hint(self) -> Option<u32> {
        match self {
            ValueInfo::Message(hint) => hint,
            _ => None,
        }
    }
}

#[derive(Clone, Copy)]
struct MapInfo {
    key: MapKeyKind,
    value: ValueInfo,
    /// How the value is spelled on the wire, in which wire type.
    value_wire: WireKind,
    value_wire_type: WireType,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum MapKeyKind {
    String,
    Bool,
    I32,
    I64,
    U32,
    U64,
    Other,
}

/// An enum's value names by number, as `EnumDescriptor::get_value` finds
/// them.
struct EnumTable {
    by_number: Vec<(i32, Box<str>)>,
}

impl EnumTable {
    fn name(&self, n: i32) -> Option<&str> {
        self.by_number
            .binary_search_by(|(k, _)| k.cmp(&n))
            .ok()
            .map(|i| &*self.by_number[i].1)
    }
}

/// The JSON forms `prost-reflect`'s serializer gives special treatment.
fn is_well_known_type(full_name: &str) -> bool {
    matches!(
        full_name,
        "google.protobuf.Any"
            | "google.protobuf.Timestamp"
            | "google.protobuf.Duration"
            | "google.protobuf.Struct"
            | "google.protobuf.FloatValue"
            | "google.protobuf.DoubleValue"
            | "google.protobuf.Int32Value"
            | "google.protobuf.Int64Value"
            | "google.protobuf.UInt32Value"
            | "google.protobuf.UInt64Value"
            | "google.protobuf.BoolValue"
            | "google.protobuf.StringValue"
            | "google.protobuf.BytesValue"
            | "google.protobuf.FieldMask"
            | "google.protobuf.ListValue"
            | "google.protobuf.Value"
            | "google.protobuf.Empty"
    )
}

impl Tables {
    fn build(pool: &DescriptorPool) -> Tables {
        let mut index = HashMap::new();
        for (i, m) in pool.all_messages().enumerate() {
            index.insert(type_key(&m), i as u32);
        }
        let mut enum_index: HashMap<usize, u32> = HashMap::new();
        let mut enums = Vec::new();
        let mut enum_of = |e: &prost_reflect::EnumDescriptor| -> u32 {
            let key = e.full_name().as_ptr() as usize;
            *enum_index.entry(key).or_insert_with(|| {
                let mut numbers: Vec<i32> = e.values().map(|v| v.number()).collect();
                numbers.sort_unstable();
                numbers.dedup();
                let by_number = numbers
                    .into_iter()
                    .filter_map(|n| e.get_value(n).map(|v| (n, v.name().into())))
                    .collect();
                enums.push(EnumTable { by_number });
                (enums.len() - 1) as u32
            })
        };
        let mut value_info = |kind: &Kind| -> ValueInfo {
            match kind {
                Kind::Enum(e) if e.full_name() == "google.protobuf.NullValue" => {
                    ValueInfo::NullValue
                }
                Kind::Enum(e) => ValueInfo::Enum(enum_of(e)),
                Kind::Message(m) => ValueInfo::Message(index.get(&type_key(m)).copied()),
                _ => ValueInfo::Plain,
            }
        };
        let mut types = Vec::with_capacity(index.len());
        for m in pool.all_messages() {
            let name = m.full_name();
            let special = match name {
                "google.protobuf.Timestamp" => Special::Timestamp,
                "google.protobuf.Duration" => Special::Duration,
                "google.protobuf.Any" => Special::Any,
                n if n.starts_with("google.protobuf.") => Special::OtherWellKnown,
                _ => Special::Plain,
            };
            let mut fields: Vec<FieldEntry> = m
                .fields()
                .map(|f| {
                    let kind = f.kind();
                    let map = match &kind {
                        Kind::Message(entry) if f.is_map() => {
                            let key = match entry.map_entry_key_field().kind() {
                                Kind::String => MapKeyKind::String,
                                Kind::Bool => MapKeyKind::Bool,
                                Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => MapKeyKind::I32,
                                Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => MapKeyKind::I64,
                                Kind::Uint32 | Kind::Fixed32 => MapKeyKind::U32,
                                Kind::Uint64 | Kind::Fixed64 => MapKeyKind::U64,
                                _ => MapKeyKind::Other,
                            };
                            let value_kind = entry.map_entry_value_field().kind();
                            Some(MapInfo {
                                key,
                                value: value_info(&value_kind),
                                value_wire: WireKind::of(&value_kind),
                                value_wire_type: scalar_wire_type(&value_kind),
                            })
                        }
                        _ => None,
                    };
                    FieldEntry {
                        number: f.number(),
                        json_name: f.json_name().into(),
                        info: value_info(&kind),
                        map,
                        wire: WireKind::of(&kind),
                        wire_type: scalar_wire_type(&kind),
                        list: f.is_list(),
                        presence: f.supports_presence(),
                        oneof: f.containing_oneof().and_then(|o| {
                            m.oneofs()
                                .position(|x| x.name() == o.name())
                                .map(|i| i as u32)
                        }),
                        group: f.is_group(),
                        enum_default: match &kind {
                            Kind::Enum(e) => e.default_value().number(),
                            _ => 0,
                        },
                    }
                })
                .collect();
            fields.sort_unstable_by_key(|f| f.number);
            let time = match special {
                Special::Timestamp | Special::Duration => m.get_field(1).zip(m.get_field(2)),
                _ => None,
            };
            types.push(TypeTable {
                desc: m.clone(),
                time,
                key: type_key(&m),
                special,
                extended: m.extensions().len() > 0,
                has_at_type: fields.iter().any(|f| &*f.json_name == "@type"),
                fields,
            });
        }
        Tables {
            pool: pool.clone(),
            index,
            types,
            enums,
        }
    }

    /// The table of `desc`'s type (`hint` first: the field's declared type).
    fn type_of(&self, desc: &MessageDescriptor, hint: Option<u32>) -> Option<&TypeTable> {
        let key = type_key(desc);
        if let Some(t) = hint.and_then(|h| self.types.get(h as usize)) {
            if t.key == key {
                return Some(t);
            }
        }
        if *desc.parent_pool() != self.pool {
            return None;
        }
        self.index
            .get(&key)
            .and_then(|&i| self.types.get(i as usize))
    }
}

impl TypeTable {
    /// The position of the field numbered `number`, looked for from `from`
    /// on (set fields come by ascending number).
    fn position(&self, number: u32, from: usize) -> Option<usize> {
        match self.fields.get(from) {
            Some(f) if f.number == number => Some(from),
            _ => self.fields.binary_search_by_key(&number, |f| f.number).ok(),
        }
    }
}

// ---------------------------------------------------------------------------
// The walk.

/// The state of one comparison: the tables, the set fields of the messages
/// being compared (one stack for all levels), the nesting depth.
struct Walk<'t, 'v> {
    tables: &'t Tables,
    /// (field entry, its value, whether its key was seen).
    stack: Vec<(&'t FieldEntry, &'v Value, bool)>,
    depth: usize,
}

/// serde_json's recursion limit: a text nested this deep is refused by the
/// value comparison's parse.
const MAX_DEPTH: usize = 127;

/// The JSON of one message.
struct MessageSeed<'a, 't, 'v> {
    w: &'a mut Walk<'t, 'v>,
    msg: &'v DynamicMessage,
    hint: Option<u32>,
}

impl<'de> DeserializeSeed<'de> for MessageSeed<'_, '_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let msg = self.msg;
        let desc = msg.descriptor();
        let Some(t) = self.w.tables.type_of(&desc, self.hint) else {
            return Err(differ());
        };
        // Only a message type that the pool extends can carry an extension
        // (one set on a message is checked against its type's extensions):
        // for every other one, the message's fields are not walked to look.
        let extended = t.extended && msg.extensions().next().is_some();
        if extended {
            return tree(msg, self.w.depth, d);
        }
        match t.special {
            Special::Plain => d.deserialize_map(MessageVisitor {
                w: self.w,
                table: t,
                msg,
                at_type: None,
            }),
            Special::Timestamp | Special::Duration => {
                // Timestamps and durations (one in nearly every step's
                // metadata) are JSON strings: compare the text without
                // building a tree.
                // Only values the value comparison reads back as the same
                // instant or span: within the serializer's range, nanos
                // normalized (a Timestamp's in 0..1e9, a Duration's of its
                // seconds' sign); any other answers "no" (the serializer
                // would normalize it, the value comparison refuses it).
                let fields = t.time.as_ref().and_then(|(seconds, nanos)| {
                    Some((
                        msg.get_field(seconds).as_i64()?,
                        msg.get_field(nanos).as_i32()?,
                    ))
                });
                time_value(d, t.special, fields)
            }
            Special::Any => any(self.w, msg, d),
            Special::OtherWellKnown => tree(msg, self.w.depth, d),
        }
    }
}

/// A Timestamp's or Duration's JSON string (`special` says which) against
/// its two fields (`None`: they hold other kinds of values, or would not
/// decode): the text the serializer writes, compared without building a
/// tree.
fn time_value<'de, D: Deserializer<'de>>(
    d: D,
    special: Special,
    fields: Option<(i64, i32)>,
) -> Result<(), D::Error> {
    let mut buf = [0u8; 32];
    let text = fields.and_then(|(seconds, nanos)| {
        time_text_into(special == Special::Timestamp, seconds, nanos, &mut buf)
    });
    match text {
        Some(expected) => d.deserialize_str(Expect::Str(expected)),
        None => Err(differ()),
    }
}

/// A message through its tree form: the serializer's tree of `msg` against
/// the tree of the text (whose members are checked to be unique first: the
/// tree keeps only the last of a repeated member).
fn tree<'de, D: Deserializer<'de>>(
    msg: &DynamicMessage,
    depth: usize,
    d: D,
) -> Result<(), D::Error> {
    let raw = <&RawValue>::deserialize(d)?;
    let text = raw.get();
    if depth + nesting(text) > MAX_DEPTH || super::value::unique_members(text).is_err() {
        return Err(differ());
    }
    let actual: serde_json::Value = serde_json::from_str(text).map_err(|_| differ::<D::Error>())?;
    let Ok(expected) =
        msg.serialize_with_options(serde_json::value::Serializer, &daemon_json_options())
    else {
        return Err(differ());
    };
    if json_diff(&expected, &actual, 1).is_empty() {
        Ok(())
    } else {
        Err(differ())
    }
}

/// The deepest nesting of objects and arrays in a JSON text.
fn nesting(text: &str) -> usize {
    crate::util::nesting::Nesting::deepest(text.as_bytes())
}

/// A `google.protobuf.Any` (without extensions), as the serializer writes
/// it (see the module documentation).
fn any<'de, D: Deserializer<'de>>(
    w: &mut Walk<'_, '_>,
    msg: &DynamicMessage,
    d: D,
) -> Result<(), D::Error> {
    let url = msg.get_field_by_number(1);
    let bytes = msg.get_field_by_number(2);
    let (Some(url), Some(bytes)) = (
        url.as_deref().and_then(Value::as_str),
        bytes.as_deref().and_then(Value::as_bytes),
    ) else {
        return Err(differ());
    };
    let Some((_, name)) = url.rsplit_once('/') else {
        return Err(differ());
    };
    let tables = w.tables;
    let Some(desc) = tables.pool.get_message_by_name(name) else {
        return Err(differ());
    };
    let mut payload = DynamicMessage::new(desc.clone());
    if prost::Message::merge(&mut payload, bytes.as_ref()).is_err() {
        return Err(differ());
    }
    let Some(t) = tables.type_of(&desc, None) else {
        return Err(differ());
    };
    if t.extended && payload.extensions().next().is_some() {
        return Err(differ());
    }
    let mut inner = Walk {
        tables,
        stack: Vec::new(),
        depth: w.depth,
    };
    if is_well_known_type(name) {
        d.deserialize_map(AnyWellKnownVisitor {
            w: &mut inner,
            url,
            payload: &payload,
        })
    } else if name.starts_with("google.protobuf.") || t.has_at_type {
        Err(differ())
    } else {
        d.deserialize_map(MessageVisitor {
            w: &mut inner,
            table: t,
            msg: &payload,
            at_type: Some(url),
        })
    }
}

/// `{"@type": url, "value": <the well-known payload>}`.
struct AnyWellKnownVisitor<'a, 't, 'v> {
    w: &'a mut Walk<'t, 'v>,
    url: &'a str,
    payload: &'v DynamicMessage,
}

impl<'de> Visitor<'de> for AnyWellKnownVisitor<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an Any object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let w = self.w;
        w.depth += 1;
        let (mut at_type, mut value) = (false, false);
        while let Some(key) = map.next_key_seed(AnyKey)? {
            match key {
                AnyKeyIs::AtType if !at_type => {
                    at_type = true;
                    map.next_value_seed(StrSeed(self.url))?;
                }
                AnyKeyIs::Value if !value => {
                    value = true;
                    map.next_value_seed(MessageSeed {
                        w: &mut *w,
                        msg: self.payload,
                        hint: None,
                    })?;
                }
                _ => return Err(differ()),
            }
        }
        w.depth -= 1;
        if at_type && value {
            Ok(())
        } else {
            Err(differ())
        }
    }
}

enum AnyKeyIs {
    AtType,
    Value,
}

struct AnyKey;

impl<'de> DeserializeSeed<'de> for AnyKey {
    type Value = AnyKeyIs;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<AnyKeyIs, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for AnyKey {
    type Value = AnyKeyIs;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("@type or value")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<AnyKeyIs, E> {
        match key {
            "@type" => Ok(AnyKeyIs::AtType),
            "value" => Ok(AnyKeyIs::Value),
            _ => Err(differ()),
        }
    }
}

/// A JSON string that must be exactly this.
struct StrSeed<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for StrSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(Expect::Str(self.0))
    }
}

/// The object of a message: the set fields (and, for an Any's payload, its
/// `@type`).
struct MessageVisitor<'a, 't, 'v> {
    w: &'a mut Walk<'t, 'v>,
    table: &'t TypeTable,
    msg: &'v DynamicMessage,
    at_type: Option<&'a str>,
}

impl<'de> Visitor<'de> for MessageVisitor<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (w, t) = (self.w, self.table);
        // The fields the message has set (exactly those `has_field` says
        // are), each found once here with its table entry: a key must be
        // the JSON name of one of them, and each may appear once.
        let base = w.stack.len();
        let mut from = 0;
        for (field, value) in self.msg.fields() {
            let Some(i) = t.position(field.number(), from) else {
                return Err(differ());
            };
            from = i + 1;
            w.stack.push((&t.fields[i], value, false));
        }
        let set = w.stack.len() - base;
        w.depth += 1;
        let (mut found, mut next, mut at_type) = (0, 0, false);
        loop {
            let key = map.next_key_seed(SetFieldKey {
                set: &w.stack[base..],
                next,
                at_type: self.at_type.is_some(),
            })?;
            match key {
                None => break,
                Some(KeyIs::AtType) => {
                    if std::mem::replace(&mut at_type, true) {
                        return Err(differ());
                    }
                    map.next_value_seed(StrSeed(self.at_type.unwrap_or_default()))?;
                }
                Some(KeyIs::Field(i)) => {
                    let (entry, value, seen) = &mut w.stack[base + i];
                    if std::mem::replace(seen, true) {
                        return Err(differ());
                    }
                    let (entry, value) = (*entry, *value);
                    found += 1;
                    next = i + 1;
                    map.next_value_seed(FieldValue {
                        w: &mut *w,
                        value,
                        entry,
                    })?;
                }
            }
        }
        w.depth -= 1;
        w.stack.truncate(base);
        if found == set && at_type == self.at_type.is_some() {
            Ok(())
        } else {
            Err(differ())
        }
    }
}

enum KeyIs {
    Field(usize),
    AtType,
}

/// A field a message being compared has set, as a key finds it.
trait SetEntry {
    fn json_name(&self) -> &str;
}

impl SetEntry for (&FieldEntry, &Value, bool) {
    fn json_name(&self) -> &str {
        &self.0.json_name
    }
}

/// A key of a message object: the JSON name of one of the fields it has
/// set (the one after the last key first: keys usually come in field
/// order); the index of that field. An Any's payload also takes `@type`.
struct SetFieldKey<'a, S> {
    set: &'a [S],
    next: usize,
    at_type: bool,
}

impl<'de, S: SetEntry> DeserializeSeed<'de> for SetFieldKey<'_, S> {
    type Value = KeyIs;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<KeyIs, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, S: SetEntry> Visitor<'de> for SetFieldKey<'_, S> {
    type Value = KeyIs;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<KeyIs, E> {
        if let Some(f) = self.set.get(self.next) {
            if f.json_name() == key {
                return Ok(KeyIs::Field(self.next));
            }
        }
        if let Some(i) = self.set.iter().position(|f| f.json_name() == key) {
            return Ok(KeyIs::Field(i));
        }
        if self.at_type && key == "@type" {
            return Ok(KeyIs::AtType);
        }
        Err(differ())
    }
}

/// The JSON of one set field: a list, a map or a single value.
struct FieldValue<'a, 't, 'v> {
    w: &'a mut Walk<'t, 'v>,
    value: &'v Value,
    entry: &'t FieldEntry,
}

impl<'de> DeserializeSeed<'de> for FieldValue<'_, '_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        match self.value {
            Value::List(items) => d.deserialize_seq(ListVisitor {
                w: self.w,
                items,
                info: self.entry.info,
            }),
            Value::Map(entries) => {
                let Some(info) = self.entry.map else {
                    return Err(differ());
                };
                d.deserialize_map(MapVisitor {
                    w: self.w,
                    entries,
                    info,
                })
            }
            v => SingleSeed {
                w: self.w,
                value: v,
                info: self.entry.info,
            }
            .deserialize(d),
        }
    }
}

struct ListVisitor<'a, 't, 'v> {
    w: &'a mut Walk<'t, 'v>,
    items: &'v [Value],
    info: ValueInfo,
}

impl<'de> Visitor<'de> for ListVisitor<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let w = self.w;
        w.depth += 1;
        for item in self.items {
            seq.next_element_seed(SingleSeed {
                w: &mut *w,
                value: item,
                info: self.info,
            })?
            .ok_or_else(differ)?;
        }
        w.depth -= 1;
        match seq.next_element::<de::IgnoredAny>()? {
            None => Ok(()),
            Some(_) => Err(differ()),
        }
    }
}

struct MapVisitor<'a, 't, 'v> {
    w: &'a mut Walk<'t, 'v>,
    entries: &'v HashMap<MapKey, Value>,
    info: MapInfo,
}

/// Past this many entries, a string-keyed map's keys are sorted and
/// searched by halves instead of one by one.
const MAP_LINEAR: usize = 16;

impl<'de> Visitor<'de> for MapVisitor<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let w = self.w;
        w.depth += 1;
        let value_info = self.info.value;
        if self.info.key == MapKeyKind::String {
            // String keys: found by the text's key, without building a
            // `MapKey` (and its `String`) per member.
            let mut keys: Vec<(&str, &Value, bool)> = self
                .entries
                .iter()
                .filter_map(|(k, v)| match k {
                    MapKey::String(s) => Some((s.as_str(), v, false)),
                    _ => None,
                })
                .collect();
            if keys.len() != self.entries.len() {
                return Err(differ());
            }
            let sorted = keys.len() > MAP_LINEAR;
            if sorted {
                keys.sort_unstable_by(|a, b| a.0.cmp(b.0));
            }
            let mut found = 0;
            while let Some(i) = map.next_key_seed(StrKey {
                keys: &keys,
                sorted,
            })? {
                let (_, value, seen) = &mut keys[i];
                if std::mem::replace(seen, true) {
                    return Err(differ());
                }
                found += 1;
                let value = *value;
                map.next_value_seed(SingleSeed {
                    w: &mut *w,
                    value,
                    info: value_info,
                })?;
            }
            w.depth -= 1;
            return if found == keys.len() {
                Ok(())
            } else {
                Err(differ())
            };
        }
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key_seed(MapKeySeed(self.info.key))? {
            let value = self.entries.get(&key).ok_or_else(differ)?;
            map.next_value_seed(SingleSeed {
                w: &mut *w,
                value,
                info: value_info,
            })?;
            if !seen.insert(key) {
                return Err(differ());
            }
        }
        w.depth -= 1;
        if seen.len() == self.entries.len() {
            Ok(())
        } else {
            Err(differ())
        }
    }
}

/// A string map key: the index of the entry with exactly this key (the
/// entries' values are the tree's or, read off the wire, scalars).
struct StrKey<'a, 'v, V> {
    keys: &'a [(&'v str, V, bool)],
    sorted: bool,
}

impl<'de, V> DeserializeSeed<'de> for StrKey<'_, '_, V> {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, V> Visitor<'de> for StrKey<'_, '_, V> {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map key")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<usize, E> {
        let found = if self.sorted {
            self.keys.binary_search_by(|(k, _, _)| (*k).cmp(s)).ok()
        } else {
            self.keys.iter().position(|(k, _, _)| *k == s)
        };
        found.ok_or_else(differ)
    }
}

/// A map key of another kind than string, which must be spelled exactly as
/// the serializer spells it.
struct MapKeySeed(MapKeyKind);

impl<'de> DeserializeSeed<'de> for MapKeySeed {
    type Value = MapKey;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<MapKey, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for MapKeySeed {
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
            MapKeyKind::String => MapKey::String(s.to_string()),
            MapKeyKind::Bool => match s {
                "true" => MapKey::Bool(true),
                "false" => MapKey::Bool(false),
                _ => return Err(differ()),
            },
            MapKeyKind::I32 => MapKey::I32(canonical(s)?),
            MapKeyKind::I64 => MapKey::I64(canonical(s)?),
            MapKeyKind::U32 => MapKey::U32(canonical(s)?),
            MapKeyKind::U64 => MapKey::U64(canonical(s)?),
            MapKeyKind::Other => return Err(differ()),
        })
    }
}

/// One value that is not a list or a map.
struct SingleSeed<'a, 't, 'v> {
    w: &'a mut Walk<'t, 'v>,
    value: &'v Value,
    info: ValueInfo,
}

impl<'de> DeserializeSeed<'de> for SingleSeed<'_, '_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        match self.value {
            Value::Message(m) => MessageSeed {
                w: self.w,
                msg: m,
                hint: self.info.hint(),
            }
            .deserialize(d),
            v => match Scalar::of(v) {
                Some(s) => scalar(d, self.w.tables, s, self.info),
                None => Err(differ()),
            },
        }
    }
}

/// One value that is neither a message, a list nor a map, borrowed from a
/// tree's [`Value`] or read off the wire ([`wire`]): what [`scalar`]
/// compares.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scalar<'v> {
    Bool(bool),
    Str(&'v str),
    I64(i64),
    U64(u64),
    I32(i32),
    U32(u32),
    F32(f32),
    F64(f64),
    Bytes(&'v [u8]),
    Enum(i32),
}

impl<'v> Scalar<'v> {
    fn of(v: &'v Value) -> Option<Scalar<'v>> {
        Some(match v {
            Value::Bool(b) => Scalar::Bool(*b),
            Value::String(s) => Scalar::Str(s),
            Value::I64(v) => Scalar::I64(*v),
            Value::U64(v) => Scalar::U64(*v),
            Value::I32(v) => Scalar::I32(*v),
            Value::U32(v) => Scalar::U32(*v),
            Value::F32(v) => Scalar::F32(*v),
            Value::F64(v) => Scalar::F64(*v),
            Value::Bytes(b) => Scalar::Bytes(b),
            Value::EnumNumber(n) => Scalar::Enum(*n),
            Value::Message(_) | Value::List(_) | Value::Map(_) => return None,
        })
    }
}

/// The JSON of one scalar, as the serializer writes it (or any spelling
/// of the same number).
fn scalar<'de, D: Deserializer<'de>>(
    d: D,
    tables: &Tables,
    value: Scalar<'_>,
    info: ValueInfo,
) -> Result<(), D::Error> {
    let mut buf = [0u8; 24];
    match value {
        Scalar::Bool(b) => d.deserialize_any(Expect::Bool(b)),
        Scalar::Str(s) => json_string(d, s),
        Scalar::I64(v) => d.deserialize_any(Expect::Str(int_text(i128::from(v), &mut buf))),
        Scalar::U64(v) => d.deserialize_any(Expect::Str(int_text(i128::from(v), &mut buf))),
        Scalar::I32(v) => number(d, int_text(i128::from(v), &mut buf)),
        Scalar::U32(v) => number(d, int_text(i128::from(v), &mut buf)),
        Scalar::F32(v) => match serde_json::Number::from_f64(f64::from(v)) {
            Some(_) => number(d, &serde_json::Value::from(v).to_string()),
            None => d.deserialize_any(Expect::Str(non_finite(f64::from(v)))),
        },
        Scalar::F64(v) => match serde_json::Number::from_f64(v) {
            Some(n) => number(d, &n.to_string()),
            None => d.deserialize_any(Expect::Str(non_finite(v))),
        },
        Scalar::Bytes(b) => d.deserialize_any(Expect::Base64(b)),
        Scalar::Enum(n) => match info {
            ValueInfo::NullValue => d.deserialize_any(Expect::Null),
            ValueInfo::Enum(e) => {
                let name = tables.enums.get(e as usize).and_then(|t| t.name(n));
                // A number the enum does not define: the serializer
                // writes it as a JSON number, but the value comparison
                // refuses an unknown enum number however it is spelled,
                // so the fast path cannot confirm it.
                match name {
                    Some(name) => d.deserialize_any(Expect::Str(name)),
                    None => Err(differ()),
                }
            }
            _ => Err(differ()),
        },
    }
}

/// The decimal text of `v`, written into `buf` (no allocation).
fn int_text(v: i128, buf: &mut [u8; 24]) -> &str {
    let mut i = buf.len();
    let mut n = v.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    // Only ASCII digits and '-' were written.
    std::str::from_utf8(&buf[i..]).unwrap_or_default()
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

/// A JSON string whose value is `want`, compared in its spelling as the
/// escapes are read: the text is not unescaped into a buffer first
/// (`serde_json` unescapes a string with escapes into its scratch buffer,
/// which held 27 MB for a 20 MiB command output in one step).
fn json_string<'de, D: Deserializer<'de>>(d: D, want: &str) -> Result<(), D::Error> {
    let raw = <&RawValue>::deserialize(d)?;
    if spells(raw.get(), want) {
        Ok(())
    } else {
        Err(differ())
    }
}

/// Whether `raw`, one JSON value as `serde_json` accepted it (a string's
/// escapes well formed, no control character unescaped), is a string whose
/// value is exactly `want`. A `\u` escape of a lone surrogate is not
/// (`serde_json` refuses to read it).
fn spells(raw: &str, want: &str) -> bool {
    let Some(inner) = raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) else {
        return false;
    };
    let (text, want) = (inner.as_bytes(), want.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < text.len() {
        let Some(at) = memchr::memchr(b'\\', &text[i..]) else {
            return text[i..] == want[j.min(want.len())..];
        };
        let run = &text[i..i + at];
        if want.get(j..j + run.len()) != Some(run) {
            return false;
        }
        (i, j) = (i + at, j + run.len());
        let Ok((c, end)) = crate::util::json_walk::escape_at(text, i + 1) else {
            return false;
        };
        let mut utf8 = [0u8; 4];
        let unit = c.encode_utf8(&mut utf8).as_bytes();
        if want.get(j..j + unit.len()) != Some(unit) {
            return false;
        }
        (i, j) = (end, j + unit.len());
    }
    j == want.len()
}

/// A JSON number (not a quoted one) with the exact decimal value of `want`.
fn number<'de, D: Deserializer<'de>>(d: D, want: &str) -> Result<(), D::Error> {
    let raw = <&RawValue>::deserialize(d)?;
    let got = raw.get();
    if !got.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        return Err(differ());
    }
    if got == want || same_decimal(got, want) {
        Ok(())
    } else {
        Err(differ())
    }
}

/// A number's exact decimal value, read in place: sign, the digits of the
/// mantissa without their leading and trailing zeros, and the exponent of
/// the last of them. The same value as [`super::json::decimal`] computes,
/// without allocating.
#[derive(Debug)]
struct Decimal<'a> {
    neg: bool,
    int: &'a [u8],
    frac: &'a [u8],
    /// Significant digits: skip this many from the start of `int ++ frac`…
    lead: usize,
    /// …and take this many.
    len: usize,
    exp: i64,
}

impl<'a> Decimal<'a> {
    fn parse(text: &'a str) -> Option<Decimal<'a>> {
        let (neg, int, frac, exp) = super::json::number_parts(text)?;
        let (int, frac) = (int.as_bytes(), frac.as_bytes());
        let total = int.len() + frac.len();
        let digit = |i: usize| {
            if i < int.len() {
                int[i]
            } else {
                frac[i - int.len()]
            }
        };
        let lead = (0..total).take_while(|&i| digit(i) == b'0').count();
        if lead == total {
            return Some(Decimal {
                neg: false,
                int,
                frac,
                lead: 0,
                len: 0,
                exp: 0,
            });
        }
        let trail = (lead..total)
            .rev()
            .take_while(|&i| digit(i) == b'0')
            .count();
        let exp = exp
            .checked_sub(i64::try_from(frac.len()).ok()?)?
            .checked_add(i64::try_from(trail).ok()?)?;
        Some(Decimal {
            neg,
            int,
            frac,
            lead,
            len: total - lead - trail,
            exp,
        })
    }

    fn digits(&self) -> impl Iterator<Item = u8> + '_ {
        self.int
            .iter()
            .chain(self.frac)
            .skip(self.lead)
            .take(self.len)
            .copied()
    }
}

/// Whether two JSON numbers have the same exact decimal value.
fn same_decimal(a: &str, b: &str) -> bool {
    match (Decimal::parse(a), Decimal::parse(b)) {
        (Some(x), Some(y)) => {
            x.neg == y.neg && x.exp == y.exp && x.len == y.len && x.digits().eq(y.digits())
        }
        _ => false,
    }
}

/// A JSON scalar that must be exactly this.
enum Expect<'a> {
    Bool(bool),
    Str(&'a str),
    /// A string: the standard base64 (with padding) of these bytes.
    Base64(&'a [u8]),
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
            Expect::Base64(b) if is_base64_of(v.as_bytes(), b) => Ok(()),
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

/// Whether `text` is exactly the standard base64 (with padding) of `bytes`,
/// encoded a chunk at a time on the stack.
fn is_base64_of(text: &[u8], bytes: &[u8]) -> bool {
    const CHUNK: usize = 3 * 256;
    if text.len() != bytes.len().div_ceil(3) * 4 {
        return false;
    }
    let mut buf = [0u8; CHUNK / 3 * 4];
    let mut at = 0;
    for chunk in bytes.chunks(CHUNK) {
        let Ok(n) = base64::engine::general_purpose::STANDARD.encode_slice(chunk, &mut buf) else {
            return false;
        };
        if text.get(at..at + n) != Some(&buf[..n]) {
            return false;
        }
        at += n;
    }
    at == text.len()
}

// ---------------------------------------------------------------------------
// Timestamps and durations.

/// Bounds prost-reflect's serializer enforces (outside them it refuses to
/// serialize, and the tree path reports that).
const MIN_TIMESTAMP_SECONDS: i64 = -62_135_596_800;
const MAX_TIMESTAMP_SECONDS: i64 = 253_402_300_799;
const MAX_DURATION_SECONDS: u64 = 315_576_000_000;
const MAX_DURATION_NANOS: u32 = 999_999_999;

/// The two fields of a Timestamp or Duration, `None` when either holds
/// another kind of value.
#[cfg(test)]
fn time_fields(msg: &DynamicMessage) -> Option<(i64, i32)> {
    let seconds = msg.get_field_by_number(1)?.as_i64()?;
    let nanos = msg.get_field_by_number(2)?.as_i32()?;
    Some((seconds, nanos))
}

/// The daemon JSON text of a `google.protobuf.Timestamp` or `Duration`,
/// exactly as the tree path's serializer writes it (it transcodes the
/// message to the prost-types value and formats that; here its two fields
/// are read directly). `None` for any other message, one with extensions,
/// or a value outside the serializer's range, which the tree path decides.
#[cfg(test)]
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
    let (seconds, nanos) = time_fields(msg)?;
    time_text_of(is_timestamp, seconds, nanos)
}

#[cfg(test)]
fn time_text_of(is_timestamp: bool, seconds: i64, nanos: i32) -> Option<String> {
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

/// [`time_text`] of a Timestamp (`is_timestamp`) or Duration without
/// extensions, from its two fields, formatted on the stack (the longest
/// text, a Timestamp with nanoseconds, is 30 bytes); `None` for a value
/// outside the serializer's range or with nanos out of their normalized
/// range.
fn time_text_into(
    is_timestamp: bool,
    seconds: i64,
    nanos: i32,
    buf: &mut [u8; 32],
) -> Option<&str> {
    let n = if is_timestamp {
        format_timestamp(seconds, nanos, buf)
    } else {
        format_duration(seconds, nanos, buf)
    }?;
    std::str::from_utf8(&buf[..n]).ok()
}

/// A little writer of ASCII into a fixed buffer.
struct Out<'a> {
    buf: &'a mut [u8; 32],
    at: usize,
}

impl Out<'_> {
    fn byte(&mut self, b: u8) {
        self.buf[self.at] = b;
        self.at += 1;
    }

    /// `v` in exactly `width` digits (`v` < 10^width).
    fn digits(&mut self, mut v: u64, width: usize) {
        for i in (0..width).rev() {
            self.buf[self.at + i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
        self.at += width;
    }

    /// `v` in as many digits as it takes.
    fn number(&mut self, v: u64) {
        let width = v.checked_ilog10().unwrap_or(0) as usize + 1;
        self.digits(v, width);
    }

    /// The fraction of a second as prost-types writes it: nothing, or 3, 6
    /// or 9 digits.
    fn fraction(&mut self, nanos: u32) {
        let (v, width) = if nanos == 0 {
            return;
        } else if nanos % 1_000_000 == 0 {
            (nanos / 1_000_000, 3)
        } else if nanos % 1_000 == 0 {
            (nanos / 1_000, 6)
        } else {
            (nanos, 9)
        };
        self.byte(b'.');
        self.digits(u64::from(v), width);
    }
}

/// A Timestamp's RFC 3339 text as prost-types writes it, for seconds in the
/// serializer's range and nanos in `0..1e9` (`None` otherwise).
fn format_timestamp(seconds: i64, nanos: i32, buf: &mut [u8; 32]) -> Option<usize> {
    let nanos = u32::try_from(nanos).ok().filter(|&n| n < 1_000_000_000)?;
    if !(MIN_TIMESTAMP_SECONDS..=MAX_TIMESTAMP_SECONDS).contains(&seconds) {
        return None;
    }
    let days = seconds.div_euclid(86_400);
    let secs = seconds.rem_euclid(86_400) as u64;
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let year = u64::try_from(year)
        .ok()
        .filter(|y| (1..=9999).contains(y))?;
    let mut out = Out { buf, at: 0 };
    out.digits(year, 4);
    out.byte(b'-');
    out.digits(month as u64, 2);
    out.byte(b'-');
    out.digits(day as u64, 2);
    out.byte(b'T');
    out.digits(secs / 3_600, 2);
    out.byte(b':');
    out.digits(secs / 60 % 60, 2);
    out.byte(b':');
    out.digits(secs % 60, 2);
    out.fraction(nanos);
    out.byte(b'Z');
    Some(out.at)
}

/// A Duration's text as prost-types writes it, for seconds and nanos of one
/// sign within the serializer's range (`None` otherwise).
fn format_duration(seconds: i64, nanos: i32, buf: &mut [u8; 32]) -> Option<usize> {
    let consistent = (seconds >= 0 && nanos >= 0) || (seconds <= 0 && nanos <= 0);
    if !consistent
        || seconds.unsigned_abs() > MAX_DURATION_SECONDS
        || nanos.unsigned_abs() > MAX_DURATION_NANOS
    {
        return None;
    }
    let mut out = Out { buf, at: 0 };
    if seconds < 0 || nanos < 0 {
        out.byte(b'-');
    }
    out.number(seconds.unsigned_abs());
    out.fraction(nanos.unsigned_abs());
    out.byte(b's');
    Some(out.at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::to_daemon_json;

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
                    // Confirmed exactly when the nanos are normalized (the
                    // value comparison refuses the others).
                    let normalized = if name.ends_with("Timestamp") {
                        (0..1_000_000_000).contains(&n)
                    } else {
                        (s >= 0 && n >= 0) || (s <= 0 && n <= 0)
                    };
                    assert_eq!(
                        equals(&m, &serde_json::to_string(&text).unwrap()),
                        normalized,
                        "{name} {s} {n}"
                    );
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

    #[test]
    fn the_stack_formatters_write_what_prost_types_writes() {
        let mut buf = [0u8; 32];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut cases: Vec<(i64, i32)> = vec![
            (0, 0),
            (-1, 0),
            (-62_135_596_800, 0),
            (253_402_300_799, 999_999_999),
            (951_782_400, 0),
            (951_868_800, 1_000),
            (4_107_542_400, 120_000_000),
            (-5, -500_000_000),
            (0, -1),
            (315_576_000_000, 999_999_999),
            (-315_576_000_000, -999_999_999),
        ];
        for _ in 0..200_000 {
            let s = (next() % 316_000_000_000) as i64 - 63_000_000_000;
            let n = match next() % 4 {
                0 => 0,
                1 => (next() % 1000) as i32 * 1_000_000,
                2 => (next() % 1_000_000) as i32 * 1_000,
                _ => (next() % 1_000_000_000) as i32,
            };
            cases.push((s, n));
            cases.push((-s.abs(), -n));
        }
        for (s, n) in cases {
            if let Some(len) = format_timestamp(s, n, &mut buf) {
                let want = prost_types::Timestamp {
                    seconds: s,
                    nanos: n,
                }
                .to_string();
                assert_eq!(std::str::from_utf8(&buf[..len]).unwrap(), want, "{s} {n}");
            }
            if let Some(len) = format_duration(s, n, &mut buf) {
                let want = prost_types::Duration {
                    seconds: s,
                    nanos: n,
                }
                .to_string();
                assert_eq!(std::str::from_utf8(&buf[..len]).unwrap(), want, "{s} {n}");
            }
        }
    }

    #[test]
    fn numbers_compare_in_place_as_the_decimal_helper_does() {
        let spellings = [
            "0",
            "-0",
            "0.0",
            "0e5",
            "0.000e-3",
            "1",
            "1.0",
            "1e0",
            "1E+0",
            "10e-1",
            "0.1e1",
            "100",
            "1e2",
            "1.00e2",
            "-1",
            "-1.0",
            "-10e-1",
            "0.1",
            "0.10",
            "1e-1",
            "0.1000000000000000055",
            "9007199254740993",
            "9007199254740992",
            "9.007199254740993e15",
            "123456789.125",
            "1.5",
            "15e-1",
            "-2.5E-3",
            "-0.0025",
            "1e400",
            "1e-400",
            "1e9223372036854775807",
            "1.5e-9223372036854775808",
            "2147483647",
            "-2147483648",
            "4294967295",
        ];
        for a in spellings {
            for b in spellings {
                let old = a == b
                    || matches!(
                        (super::super::json::decimal(a), super::super::json::decimal(b)),
                        (Some(x), Some(y)) if x == y
                    );
                assert_eq!(same_decimal(a, b) || a == b, old, "{a} {b}");
            }
        }
    }

    #[test]
    fn integers_and_bytes_are_written_on_the_stack_as_the_serializer_writes_them() {
        let mut buf = [0u8; 24];
        for v in [
            0i128,
            1,
            -1,
            9,
            10,
            i128::from(i32::MIN),
            i128::from(i64::MIN),
            i128::from(i64::MAX),
            i128::from(u64::MAX),
        ] {
            assert_eq!(int_text(v, &mut buf), v.to_string());
        }
        for n in (0..800).chain([1535, 1536, 1537, 2304, 5000]) {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 31 + 7) as u8).collect();
            let text = base64::engine::general_purpose::STANDARD.encode(&bytes);
            assert!(is_base64_of(text.as_bytes(), &bytes), "{n}");
            if !text.is_empty() {
                let mut other = text.clone().into_bytes();
                let last = other.len() - 1;
                other[last] = if other[last] == b'A' { b'B' } else { b'A' };
                assert!(!is_base64_of(&other, &bytes), "{n}");
                assert!(!is_base64_of(&text.as_bytes()[..last], &bytes), "{n}");
            }
        }
    }

    #[test]
    fn nesting_counts_containers_outside_strings() {
        assert_eq!(nesting("1"), 0);
        assert_eq!(nesting("{}"), 1);
        assert_eq!(nesting(r#"{"a":[{"b":"[[[{"}]]}"#), 3);
        assert_eq!(nesting(r#"["\"[", [[]]]"#), 3);
    }

    #[test]
    fn a_string_is_compared_in_its_spelling_as_serde_json_reads_it() {
        let values = [
            "",
            "plain",
            "tab\t nl\n cr\r bs\u{8} ff\u{c} quote\" back\\ slash/ nul\u{0} \u{1f} del\u{7f}",
            "\u{e9}\u{fc} \u{2028}\u{ffff} \u{1f600}\u{10ffff}",
            "\\u0041 not an escape",
        ];
        for want in values {
            // Every spelling serde_json reads back to `want`, and the
            // verdicts it gives on near-misses of them.
            let serde = serde_json::to_string(want).unwrap();
            let mut all_u = String::from('"');
            let mut upper = String::from('"');
            for c in want.chars() {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    all_u.push_str(&format!("\\u{u:04x}"));
                    upper.push_str(&format!("\\u{u:04X}"));
                }
            }
            all_u.push('"');
            upper.push('"');
            let slashed = serde.replace('/', "\\/");
            for spelled in [&serde, &all_u, &upper, &slashed] {
                assert_eq!(serde_json::from_str::<String>(spelled).unwrap(), want);
                assert!(spells(spelled, want), "{spelled} is {want:?}");
                let longer = format!("{}x\"", &spelled[..spelled.len() - 1]);
                assert!(!spells(&longer, want), "{longer}");
                if spelled.len() > 2 {
                    let mut body = spelled[1..spelled.len() - 1].chars();
                    body.next_back();
                    let shorter = format!("\"{}\"", body.as_str());
                    let same = serde_json::from_str::<String>(&shorter).is_ok_and(|s| s == want);
                    assert_eq!(spells(&shorter, want), same, "{shorter}");
                }
                let other = format!("{want}!");
                assert!(!spells(spelled, &other), "{spelled} is not {other:?}");
            }
        }
        // What serde_json refuses to read is no string's spelling.
        for raw in [
            r#""\ud800""#,
            r#""\udc00""#,
            r#""\ud800\u0041""#,
            r#""\ud800x""#,
            r#""\ud83d\ude0""#,
            r#""\x""#,
            r#""\u12""#,
            "\"a",
            "a\"",
            "1",
            "null",
        ] {
            assert!(serde_json::from_str::<String>(raw).is_err(), "{raw}");
            for want in ["", "a", "A", "\u{fffd}"] {
                assert!(!spells(raw, want), "{raw} is {want:?}");
            }
        }
        // A surrogate pair spelled in either case.
        assert!(spells(r#""\uD83D\uDE00""#, "\u{1f600}"));
        assert!(spells(r#""\ud83d\ude00x""#, "\u{1f600}x"));
    }
}
