//! The fast path over the expected message's wire encoding: the same one
//! pass over the response text as [`super::check`], with the expected
//! values read from the source's encoding as the walk reaches them instead
//! of from a `DynamicMessage` decoded for the comparison (issue 49, item 2:
//! the sweep compares without materializing the trajectory).
//!
//! It confirms exactly what [`super::check`] confirms of the message the
//! encoding decodes to, and answers "no" (take the slow path) wherever that
//! decode would fail. Each message is read as `DynamicMessage::decode` reads
//! it: fields by number (a number the type does not declare is an unknown
//! field, which the decoder keeps aside and the serializer never writes:
//! skipped), a singular scalar's last occurrence wins, a repeated scalar
//! packed or not, a proto3 field without presence holding its default not
//! set, a string's UTF-8 checked, a wire type the field cannot have refused.
//! A string-keyed map of strings or bools is read off the wire too (a key's
//! last entry kept, as the decoder keeps it), and so is an `Any`: its URL
//! and value as the decoder takes them, its payload's fields compared
//! beside its `@type` as the tree path's `any` compares the decoded
//! payload. Where the decode would merge or choose (a singular message
//! field on the wire twice, two members of one oneof, any other map, a map
//! entry in another wire type than length-delimited, a group) and for the
//! types the tree path treats specially (the well-known types other than
//! `Any`, Timestamp and Duration, a type the pool extends, an `Any` of
//! either), that one message is decoded and handed to the tree walk
//! ([`super::MessageSeed`]), so the rules that decide it are the tree
//! path's own. Timestamps and Durations are read off the wire (their two
//! varints) and compared as the tree path compares them.
//!
//! A [`Splice`] presents elements of the top-level list otherwise: the
//! projection's rewritten steps, each a message of its own, compared by the
//! tree walk in the place of the stored step, as
//! [`crate::project::Projection::present`] swaps them into the tree.

use super::{
    differ, is_well_known_type, scalar, tables_for, time_value, FieldEntry, KeyIs, MapInfo,
    MapKeyKind, MessageSeed, Scalar, SetFieldKey, Special, StrKey, StrSeed, Tables, TypeTable,
    ValueInfo, Walk, WireKind,
};
use crate::source::wire::{read_varint, FieldIter, WireType};
use prost_reflect::{DynamicMessage, MessageDescriptor};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// Elements of the expected message's top-level list `field` shown
/// otherwise: `(index, element)`, by strictly ascending index (see
/// [`Splice::new`]).
#[derive(Clone, Copy)]
pub struct Splice<'v> {
    field: u32,
    items: &'v [(usize, &'v DynamicMessage)],
}

impl<'v> Splice<'v> {
    /// `None` unless the indices ascend strictly (each element is shown in
    /// one place).
    pub fn new(field: u32, items: &'v [(usize, &'v DynamicMessage)]) -> Option<Splice<'v>> {
        items
            .windows(2)
            .all(|p| p[0].0 < p[1].0)
            .then_some(Splice { field, items })
    }
}

/// Whether `text` is exactly the daemon JSON of the message of type `desc`
/// that `encoding` decodes to (with `splice`'s elements in place), as
/// [`super::equals`] would say of the decoded message. `false` means "take
/// the slow path".
pub fn equals(
    desc: &MessageDescriptor,
    encoding: &[u8],
    splice: Option<Splice<'_>>,
    text: &str,
) -> bool {
    check(desc, encoding, splice, text).is_ok()
}

/// [`equals`], with where the one pass stopped.
pub fn check(
    desc: &MessageDescriptor,
    encoding: &[u8],
    splice: Option<Splice<'_>>,
    text: &str,
) -> Result<(), serde_json::Error> {
    let tables = tables_for(desc.parent_pool());
    let Some(table) = tables.type_of(desc, None) else {
        return Err(differ());
    };
    let mut walk = WireWalk {
        tables: &tables,
        occs: Vec::new(),
        set: Vec::new(),
        tree: Vec::new(),
        depth: 0,
    };
    let mut de = serde_json::Deserializer::from_str(text);
    WireMessageSeed {
        w: &mut walk,
        table,
        bytes: encoding,
        splice,
    }
    .deserialize(&mut de)?;
    de.end()
}

/// One field occurrence of a message being compared.
#[derive(Clone, Copy)]
struct Occ<'v> {
    /// The field's position in its type's table.
    pos: u32,
    wire: WireType,
    value: &'v [u8],
}

/// A field a message being compared has set: its occurrences are
/// `occs[start..end]` of the walk.
struct SetField<'t> {
    entry: &'t FieldEntry,
    start: usize,
    end: usize,
    seen: bool,
}

/// The state of one comparison: the occurrences and set fields of the
/// messages being compared (one stack each for all levels), the tree walk's
/// stack lent to spliced elements, the nesting depth.
struct WireWalk<'t, 'v> {
    tables: &'t Tables,
    occs: Vec<Occ<'v>>,
    set: Vec<SetField<'t>>,
    tree: Vec<(&'t FieldEntry, &'v prost_reflect::Value, bool)>,
    depth: usize,
}

/// The JSON of the message `bytes` encode.
struct WireMessageSeed<'a, 't, 'v> {
    w: &'a mut WireWalk<'t, 'v>,
    table: &'t TypeTable,
    bytes: &'v [u8],
    splice: Option<Splice<'v>>,
}

impl<'de> DeserializeSeed<'de> for WireMessageSeed<'_, '_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let (w, t) = (self.w, self.table);
        if t.extended {
            return as_tree(w, t, self.bytes, d);
        }
        match t.special {
            Special::Plain => {}
            Special::Timestamp | Special::Duration => {
                return time_value(d, t.special, time_of(self.bytes));
            }
            Special::Any => return any(w, t, self.bytes, d),
            Special::OtherWellKnown => return as_tree(w, t, self.bytes, d),
        }
        fields(w, t, self.bytes, self.splice, None, t, self.bytes, d)
    }
}

/// The object of the message of type `t` that `bytes` encode, its own
/// fields read off the wire (`at_type`: the URL of the `Any` it is the
/// payload of, whose `@type` member it then holds); when it is the tree
/// walk's to compare, the message `whole` of type `outer` (itself, or its
/// `Any`) goes to it.
#[allow(clippy::too_many_arguments)]
fn fields<'de, 't, 'v, D: Deserializer<'de>>(
    w: &mut WireWalk<'t, 'v>,
    t: &'t TypeTable,
    bytes: &'v [u8],
    splice: Option<Splice<'v>>,
    at_type: Option<&'v str>,
    outer: &TypeTable,
    whole: &'v [u8],
    d: D,
) -> Result<(), D::Error> {
    let (occs, set) = (w.occs.len(), w.set.len());
    let out = match gather(w, t, bytes) {
        Gathered::Fields => d.deserialize_map(WireMessageVisitor {
            w: &mut *w,
            base: set,
            splice,
            at_type,
        }),
        Gathered::Tree => as_tree(w, outer, whole, d),
        Gathered::Undecodable => Err(differ()),
    };
    w.occs.truncate(occs);
    w.set.truncate(set);
    out
}

/// An `Any` read off the wire as the tree walk reads the decoded one
/// (`super::any`): its type URL and value (the decoder's: the last
/// occurrence of each, every URL occurrence valid UTF-8, a wire type
/// either field cannot have refused), the payload's type named by the
/// URL's last segment, and the payload's fields compared with the object's
/// members beside its `@type`, with no copy of the payload decoded. A
/// payload of a well-known type or of a type the pool extends goes to the
/// tree walk with its `Any`, as does an `Any` whose payload the decoder
/// would merge or choose in (see the module documentation).
fn any<'de, 't, 'v, D: Deserializer<'de>>(
    w: &mut WireWalk<'t, 'v>,
    t: &TypeTable,
    bytes: &'v [u8],
    d: D,
) -> Result<(), D::Error> {
    let (mut url, mut value): (&'v str, &'v [u8]) = ("", &[]);
    for f in FieldIter::new(bytes) {
        let Ok(f) = f else {
            return Err(differ());
        };
        match (f.number, f.wire_type) {
            (1, WireType::Len) => {
                url = simdutf8::basic::from_utf8(f.value).map_err(|_| differ())?;
            }
            (2, WireType::Len) => value = f.value,
            (1 | 2, _) => return Err(differ()),
            _ => {}
        }
    }
    let tables = w.tables;
    let Some((_, name)) = url.rsplit_once('/') else {
        return Err(differ());
    };
    let Some(desc) = tables.pool.get_message_by_name(name) else {
        return Err(differ());
    };
    let Some(payload) = tables.type_of(&desc, None) else {
        return Err(differ());
    };
    if is_well_known_type(name) || payload.extended {
        return as_tree(w, t, bytes, d);
    }
    if name.starts_with("google.protobuf.") || payload.has_at_type {
        return Err(differ());
    }
    fields(w, payload, value, None, Some(url), t, bytes, d)
}

/// One message decoded and compared by the tree walk (the decode's own
/// rules decide what the wire walk leaves to it).
fn as_tree<'de, D: Deserializer<'de>>(
    w: &WireWalk<'_, '_>,
    t: &TypeTable,
    bytes: &[u8],
    d: D,
) -> Result<(), D::Error> {
    let Ok(msg) = DynamicMessage::decode(t.desc.clone(), bytes) else {
        return Err(differ());
    };
    let mut walk = Walk {
        tables: w.tables,
        stack: Vec::new(),
        depth: w.depth,
    };
    MessageSeed {
        w: &mut walk,
        msg: &msg,
        hint: None,
    }
    .deserialize(d)
}

/// A Timestamp's or Duration's two fields as the decoder reads them
/// (absent: 0; the last occurrence wins); `None` when it would not decode.
fn time_of(bytes: &[u8]) -> Option<(i64, i32)> {
    let (mut seconds, mut nanos) = (0i64, 0i32);
    for f in FieldIter::new(bytes) {
        let f = f.ok()?;
        match (f.number, f.wire_type) {
            (1, WireType::Varint) => seconds = varint(f.value)? as i64,
            (2, WireType::Varint) => nanos = varint(f.value)? as i32,
            (1 | 2, _) => return None,
            _ => {}
        }
    }
    Some((seconds, nanos))
}

fn varint(bytes: &[u8]) -> Option<u64> {
    read_varint(bytes, &mut 0).ok()
}

enum Gathered {
    /// The set fields are on the walk's stacks.
    Fields,
    /// The message is the tree walk's to compare (see the module
    /// documentation).
    Tree,
    /// It would not decode.
    Undecodable,
}

/// Reads one message's fields onto the walk's stacks: its occurrences by
/// field, then the fields it has set.
fn gather<'t, 'v>(w: &mut WireWalk<'t, 'v>, t: &'t TypeTable, bytes: &'v [u8]) -> Gathered {
    let base = w.occs.len();
    let mut from = 0;
    let mut ordered = true;
    for f in FieldIter::new(bytes) {
        let Ok(f) = f else {
            return Gathered::Undecodable;
        };
        // A number the type does not declare: an unknown field.
        let Some(pos) = t.position(f.number, from) else {
            continue;
        };
        let e = &t.fields[pos];
        // The decoder reads a map entry as length-delimited whatever wire
        // type its key says (prost-reflect 0.16): such an entry is the tree
        // walk's, as is a map of another kind than [`map_on_wire`] reads.
        if e.group
            || e.map
                .is_some_and(|m| !map_on_wire(&m) || f.wire_type != WireType::Len)
        {
            return Gathered::Tree;
        }
        if !fits(e, f.wire_type) {
            return Gathered::Undecodable;
        }
        ordered &= pos + 1 >= from;
        from = pos + 1;
        w.occs.push(Occ {
            pos: pos as u32,
            wire: f.wire_type,
            value: f.value,
        });
    }
    if !ordered {
        // Stable: a field's occurrences keep their order.
        w.occs[base..].sort_by_key(|o| o.pos);
    }
    let mut oneofs = 0u64;
    let mut i = base;
    while i < w.occs.len() {
        let pos = w.occs[i].pos;
        let end = (i..w.occs.len())
            .find(|&j| w.occs[j].pos != pos)
            .unwrap_or(w.occs.len());
        let e = &t.fields[pos as usize];
        let set = if e.map.is_some() {
            // Every entry is one, an empty one too (its key and value the
            // defaults).
            true
        } else if e.list {
            // Empty only when every occurrence is an empty packed run (an
            // empty string or message is an element).
            w.occs[i..end]
                .iter()
                .any(|o| !packable(e) || o.wire != WireType::Len || !o.value.is_empty())
        } else if e.wire == WireKind::Message {
            if end - i > 1 {
                // The decoder merges the occurrences.
                return Gathered::Tree;
            }
            true
        } else {
            // Every occurrence must decode; the last one is the value. A
            // string's text is checked where it is compared (every set
            // field is): only an earlier occurrence is checked here.
            let (earlier, last) = (&w.occs[i..end - 1], w.occs[end - 1]);
            if earlier.iter().any(|o| decode(e.wire, o.value).is_none()) {
                return Gathered::Undecodable;
            }
            if e.wire == WireKind::String {
                e.presence || !last.value.is_empty()
            } else {
                match decode(e.wire, last.value) {
                    Some(s) => e.presence || !is_default(e, s),
                    None => return Gathered::Undecodable,
                }
            }
        };
        if set {
            if let Some(o) = e.oneof {
                // Two members of one oneof: the decoder keeps the last.
                let bit = 1u64.checked_shl(o).unwrap_or(0);
                if bit == 0 || oneofs & bit != 0 {
                    return Gathered::Tree;
                }
                oneofs |= bit;
            }
            w.set.push(SetField {
                entry: e,
                start: i,
                end,
                seen: false,
            });
        }
        i = end;
    }
    Gathered::Fields
}

/// Whether a field of this kind can be on the wire in this type (a
/// repeated number also packed).
fn fits(e: &FieldEntry, wire: WireType) -> bool {
    wire == e.wire_type || (e.list && wire == WireType::Len)
}

/// Whether a repeated field of this entry's kind may be packed on the wire
/// (its values are not themselves length-delimited).
fn packable(e: &FieldEntry) -> bool {
    e.wire_type != WireType::Len
}

/// Whether a scalar is its field's default (a proto3 field without
/// presence holding it is not set).
fn is_default(e: &FieldEntry, s: Scalar<'_>) -> bool {
    match s {
        Scalar::Bool(b) => !b,
        Scalar::Str(s) => s.is_empty(),
        Scalar::Bytes(b) => b.is_empty(),
        Scalar::I64(v) => v == 0,
        Scalar::U64(v) => v == 0,
        Scalar::I32(v) => v == 0,
        Scalar::U32(v) => v == 0,
        Scalar::F32(v) => v == 0.0,
        Scalar::F64(v) => v == 0.0,
        Scalar::Enum(n) => n == e.enum_default,
    }
}

/// One unpacked value of a field of kind `kind`, as the decoder reads it;
/// `None` when it would not decode.
fn decode(kind: WireKind, bytes: &[u8]) -> Option<Scalar<'_>> {
    let fixed64 = || Some(u64::from_le_bytes(bytes.try_into().ok()?));
    let fixed32 = || Some(u32::from_le_bytes(bytes.try_into().ok()?));
    Some(match kind {
        // The same definition as `std::str::from_utf8`, with SIMD where the
        // CPU has it, as the strict scan checks its strings.
        WireKind::String => Scalar::Str(simdutf8::basic::from_utf8(bytes).ok()?),
        WireKind::Bytes => Scalar::Bytes(bytes),
        WireKind::Double => Scalar::F64(f64::from_bits(fixed64()?)),
        WireKind::Fixed64 => Scalar::U64(fixed64()?),
        WireKind::Sfixed64 => Scalar::I64(fixed64()? as i64),
        WireKind::Float => Scalar::F32(f32::from_bits(fixed32()?)),
        WireKind::Fixed32 => Scalar::U32(fixed32()?),
        WireKind::Sfixed32 => Scalar::I32(fixed32()? as i32),
        WireKind::Int64 => Scalar::I64(varint(bytes)? as i64),
        WireKind::Uint64 => Scalar::U64(varint(bytes)?),
        WireKind::Int32 => Scalar::I32(varint(bytes)? as i32),
        WireKind::Uint32 => Scalar::U32(varint(bytes)? as u32),
        WireKind::Bool => Scalar::Bool(varint(bytes)? != 0),
        WireKind::Enum => Scalar::Enum(varint(bytes)? as i32),
        WireKind::Sint32 => {
            let v = varint(bytes)? as u32;
            Scalar::I32(((v >> 1) as i32) ^ -((v & 1) as i32))
        }
        WireKind::Sint64 => {
            let v = varint(bytes)?;
            Scalar::I64(((v >> 1) as i64) ^ -((v & 1) as i64))
        }
        WireKind::Message => return None,
    })
}

/// The values of one packed run; `None` past the first that would not
/// decode (a cut varint, a partial fixed-width value).
struct Packed<'t, 'v> {
    entry: &'t FieldEntry,
    bytes: &'v [u8],
    at: usize,
}

impl<'v> Iterator for Packed<'_, 'v> {
    type Item = Option<Scalar<'v>>;

    fn next(&mut self) -> Option<Option<Scalar<'v>>> {
        if self.at >= self.bytes.len() {
            return None;
        }
        let start = self.at;
        let width = match self.entry.wire_type {
            WireType::Fixed64 => 8,
            WireType::Fixed32 => 4,
            WireType::Varint => match read_varint(self.bytes, &mut self.at) {
                Ok(_) => self.at - start,
                Err(_) => {
                    self.at = self.bytes.len();
                    return Some(None);
                }
            },
            // Not packable (never handed a packed run).
            _ => {
                self.at = self.bytes.len();
                return Some(None);
            }
        };
        let Some(value) = self.bytes.get(start..start + width) else {
            self.at = self.bytes.len();
            return Some(None);
        };
        self.at = start + width;
        Some(decode(self.entry.wire, value))
    }
}

/// The object of a message: its set fields, each once (and, for an
/// `Any`'s payload, its `@type`, once).
struct WireMessageVisitor<'a, 't, 'v> {
    w: &'a mut WireWalk<'t, 'v>,
    /// Where its set fields start on the walk's stack.
    base: usize,
    splice: Option<Splice<'v>>,
    at_type: Option<&'v str>,
}

impl<'de> Visitor<'de> for WireMessageVisitor<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (w, base) = (self.w, self.base);
        let set = w.set.len() - base;
        w.depth += 1;
        let (mut found, mut next, mut at_type) = (0, 0, false);
        while let Some(key) = map.next_key_seed(SetFieldKey {
            set: &w.set[base..],
            next,
            at_type: self.at_type.is_some(),
        })? {
            let i = match key {
                KeyIs::Field(i) => i,
                KeyIs::AtType => {
                    if std::mem::replace(&mut at_type, true) {
                        return Err(differ());
                    }
                    map.next_value_seed(StrSeed(self.at_type.unwrap_or_default()))?;
                    continue;
                }
            };
            let field = &mut w.set[base + i];
            if std::mem::replace(&mut field.seen, true) {
                return Err(differ());
            }
            let (entry, start, end) = (field.entry, field.start, field.end);
            found += 1;
            next = i + 1;
            let splice = self.splice.filter(|s| s.field == entry.number);
            map.next_value_seed(WireFieldValue {
                w: &mut *w,
                entry,
                start,
                end,
                splice,
            })?;
        }
        w.depth -= 1;
        if found == set && at_type == self.at_type.is_some() {
            Ok(())
        } else {
            Err(differ())
        }
    }
}

impl super::SetEntry for SetField<'_> {
    fn json_name(&self) -> &str {
        &self.entry.json_name
    }
}

/// The JSON of one set field: a list or a single value.
struct WireFieldValue<'a, 't, 'v> {
    w: &'a mut WireWalk<'t, 'v>,
    entry: &'t FieldEntry,
    start: usize,
    end: usize,
    splice: Option<Splice<'v>>,
}

impl<'de> DeserializeSeed<'de> for WireFieldValue<'_, '_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let (w, e) = (self.w, self.entry);
        if let Some(info) = e.map {
            return d.deserialize_map(WireMapVisitor {
                w,
                info,
                start: self.start,
                end: self.end,
            });
        }
        if e.list {
            return d.deserialize_seq(WireListVisitor {
                w,
                entry: e,
                start: self.start,
                end: self.end,
                splice: self.splice,
            });
        }
        // The last occurrence is the value (a message occurs once here).
        let occ = w.occs[self.end - 1];
        one_value(w, e, occ.value, d)
    }
}

/// One value of field `e` (a message or a scalar) from its bytes.
fn one_value<'de, 'v, D: Deserializer<'de>>(
    w: &mut WireWalk<'_, 'v>,
    e: &FieldEntry,
    bytes: &'v [u8],
    d: D,
) -> Result<(), D::Error> {
    if e.wire == WireKind::Message {
        let Some(table) = message_table(w.tables, e.info) else {
            return Err(differ());
        };
        return WireMessageSeed {
            w,
            table,
            bytes,
            splice: None,
        }
        .deserialize(d);
    }
    match decode(e.wire, bytes) {
        Some(s) => scalar(d, w.tables, s, e.info),
        None => Err(differ()),
    }
}

/// The table of a message field's declared type.
fn message_table(tables: &Tables, info: ValueInfo) -> Option<&TypeTable> {
    match info {
        ValueInfo::Message(Some(i)) => tables.types.get(i as usize),
        _ => None,
    }
}

/// The elements of a repeated field, occurrence by occurrence (a packed
/// run is several).
struct WireListVisitor<'a, 't, 'v> {
    w: &'a mut WireWalk<'t, 'v>,
    entry: &'t FieldEntry,
    start: usize,
    end: usize,
    splice: Option<Splice<'v>>,
}

impl<'de> Visitor<'de> for WireListVisitor<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let (w, e) = (self.w, self.entry);
        let mut spliced = self.splice.map_or(&[][..], |s| s.items).iter().peekable();
        w.depth += 1;
        let mut index = 0;
        for k in self.start..self.end {
            let occ = w.occs[k];
            if occ.wire == WireType::Len && packable(e) {
                for value in (Packed {
                    entry: e,
                    bytes: occ.value,
                    at: 0,
                }) {
                    let Some(value) = value else {
                        return Err(differ());
                    };
                    seq.next_element_seed(ScalarSeed {
                        tables: w.tables,
                        value,
                        info: e.info,
                    })?
                    .ok_or_else(differ)?;
                }
                continue;
            }
            let shown = spliced.next_if(|(i, _)| *i == index).map(|(_, m)| *m);
            index += 1;
            match shown {
                Some(msg) => {
                    let mut walk = Walk {
                        tables: w.tables,
                        stack: std::mem::take(&mut w.tree),
                        depth: w.depth,
                    };
                    let out = seq.next_element_seed(MessageSeed {
                        w: &mut walk,
                        msg,
                        hint: e.info.hint(),
                    });
                    w.tree = walk.stack;
                    out?.ok_or_else(differ)?;
                }
                None => seq
                    .next_element_seed(OneValue {
                        w: &mut *w,
                        entry: e,
                        bytes: occ.value,
                    })?
                    .ok_or_else(differ)?,
            }
        }
        w.depth -= 1;
        match seq.next_element::<de::IgnoredAny>()? {
            None => Ok(()),
            Some(_) => Err(differ()),
        }
    }
}

/// Whether a map is read off the wire: string keys, and string or bool
/// values (the kinds agy's maps hold, and those the differential tests
/// reach: `map<string, string>`, `map<string, bool>`). Any other map goes
/// to the tree walk with its message (a message value occurring twice in
/// one entry is merged by the decoder).
fn map_on_wire(m: &MapInfo) -> bool {
    m.key == MapKeyKind::String && matches!(m.value_wire, WireKind::String | WireKind::Bool)
}

/// One map entry as the decoder reads it: its key and value (the last
/// occurrence of each, every occurrence decoded: a key's UTF-8, a value's
/// wire type; unknown fields skipped; an absent one the default); `None`
/// when it would not decode.
fn entry_of<'v>(m: &MapInfo, bytes: &'v [u8]) -> Option<(&'v str, Scalar<'v>)> {
    let mut key = "";
    let mut value = None;
    for f in FieldIter::new(bytes) {
        let f = f.ok()?;
        match f.number {
            1 if f.wire_type == WireType::Len => key = simdutf8::basic::from_utf8(f.value).ok()?,
            2 if f.wire_type == m.value_wire_type => value = Some(decode(m.value_wire, f.value)?),
            1 | 2 => return None,
            _ => {}
        }
    }
    // An absent value is the default ([`map_on_wire`]'s kinds).
    let value = value.unwrap_or(match m.value_wire {
        WireKind::String => Scalar::Str(""),
        _ => Scalar::Bool(false),
    });
    Some((key, value))
}

/// The object of a map [`map_on_wire`] reads: its
/// entries read off the wire, a key's last entry kept (as the decoder keeps
/// it), each key found once in the text with its value.
struct WireMapVisitor<'a, 't, 'v> {
    w: &'a mut WireWalk<'t, 'v>,
    info: MapInfo,
    start: usize,
    end: usize,
}

impl<'de> Visitor<'de> for WireMapVisitor<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let w = self.w;
        let mut entries = Vec::with_capacity(self.end - self.start);
        for occ in &w.occs[self.start..self.end] {
            let (key, value) = entry_of(&self.info, occ.value).ok_or_else(differ)?;
            entries.push((key, value, false));
        }
        // Stable: of a key's entries, the last is the one kept.
        entries.sort_by(|a, b| a.0.cmp(b.0));
        let mut kept: Vec<(&str, Scalar<'_>, bool)> = Vec::with_capacity(entries.len());
        for e in entries {
            match kept.last_mut() {
                Some(last) if last.0 == e.0 => *last = e,
                _ => kept.push(e),
            }
        }
        w.depth += 1;
        let mut found = 0;
        while let Some(i) = map.next_key_seed(StrKey {
            keys: &kept,
            sorted: true,
        })? {
            let (_, value, seen) = &mut kept[i];
            if std::mem::replace(seen, true) {
                return Err(differ());
            }
            found += 1;
            let value = *value;
            map.next_value_seed(ScalarSeed {
                tables: w.tables,
                value,
                info: self.info.value,
            })?;
        }
        w.depth -= 1;
        if found == kept.len() {
            Ok(())
        } else {
            Err(differ())
        }
    }
}

/// [`one_value`] as a seed.
struct OneValue<'a, 't, 'v> {
    w: &'a mut WireWalk<'t, 'v>,
    entry: &'t FieldEntry,
    bytes: &'v [u8],
}

impl<'de> DeserializeSeed<'de> for OneValue<'_, '_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        one_value(self.w, self.entry, self.bytes, d)
    }
}

/// [`scalar`] as a seed.
struct ScalarSeed<'t, 'v> {
    tables: &'t Tables,
    value: Scalar<'v>,
    info: ValueInfo,
}

impl<'de> DeserializeSeed<'de> for ScalarSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        scalar(d, self.tables, self.value, self.info)
    }
}
