//! The strict scanner's compiled view of a descriptor pool.
//!
//! [`ScanPlan`] flattens every message of a pool into tables the scanner
//! indexes directly: a field number finds its [`FieldPlan`] (what the wire
//! must look like, the child message by index, the enum's numbers) without
//! the per-field descriptor look-ups, `Kind` constructions and reference
//! counting that walking the descriptors costs. It is built once per pool
//! ([`ScanPlan::for_pool`] caches it) and only read afterwards.
//!
//! The plan adds no rule of its own: every decision the scanner makes is the
//! one the descriptors give, and `tests` below check the tables against them.

use super::wire::WireType;
use prost_reflect::{DescriptorPool, EnumDescriptor, FieldDescriptor, Kind, MessageDescriptor};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Field numbers below this are found by direct index; larger ones by search.
const DENSE_LIMIT: u32 = 512;

/// Pools whose plans are kept (a process loads one or two).
const CACHED_POOLS: usize = 8;

/// A message's index in [`ScanPlan::messages`].
pub type MsgId = u32;

/// What a declared field's occurrences must look like on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// A message: length-delimited, scanned as `MsgId`.
    Message(MsgId),
    /// A `google.protobuf.Any` (`MsgId` is Any itself).
    Any(MsgId),
    /// A map field; the entry's key and value are described by `MapPlan`.
    Map(u32),
    String,
    Bytes,
    /// An enum: varint (or packed when repeated); the index into [`ScanPlan::enums`].
    Enum(u32),
    /// Any other scalar, with the wire type it must use.
    Scalar(WireType),
}

/// One declared field.
#[derive(Debug, Clone)]
pub struct FieldPlan {
    pub fd: FieldDescriptor,
    pub kind: FieldKind,
    pub list: bool,
    /// `fd.json_name()`, kept here: the scan names a path segment with it
    /// for every message it enters.
    pub json_name: Box<str>,
}

/// A map field's entry.
#[derive(Debug, Clone)]
pub struct MapPlan {
    pub key_fd: FieldDescriptor,
    pub val_fd: FieldDescriptor,
    /// The wire types of the key and value members.
    pub key_wire: WireType,
    pub val_wire: WireType,
    pub key_is_string: bool,
    pub value: MapValue,
}

/// What a map entry's value is checked as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapValue {
    Message(MsgId),
    Enum(u32),
    String,
    Other,
}

/// One message's fields.
#[derive(Debug, Clone)]
pub struct MessagePlan {
    pub desc: MessageDescriptor,
    /// `dense[n]` is the index + 1 of field `n` in `fields` (0: not declared).
    dense: Vec<u32>,
    /// Fields numbered [`DENSE_LIMIT`] or above, sorted by number.
    sparse: Vec<(u32, u32)>,
    pub fields: Vec<FieldPlan>,
}

impl MessagePlan {
    /// The declared field numbered `number`.
    #[inline]
    pub fn field(&self, number: u32) -> Option<&FieldPlan> {
        self.field_at(number).map(|(_, f)| f)
    }

    /// The declared field numbered `number`, with its index in [`Self::fields`].
    #[inline]
    pub fn field_at(&self, number: u32) -> Option<(u32, &FieldPlan)> {
        let slot = if number < DENSE_LIMIT {
            *self.dense.get(number as usize)?
        } else {
            let i = self
                .sparse
                .binary_search_by_key(&number, |(n, _)| *n)
                .ok()?;
            self.sparse[i].1
        };
        let i = slot.checked_sub(1)?;
        Some((i, self.fields.get(i as usize)?))
    }
}

/// An enum's defined numbers.
#[derive(Debug, Clone)]
pub struct EnumPlan {
    pub desc: EnumDescriptor,
    sorted: Vec<i32>,
}

impl EnumPlan {
    /// Whether `n` is a defined number.
    #[inline]
    pub fn defines(&self, n: i32) -> bool {
        self.sorted.binary_search(&n).is_ok()
    }
}

/// The plans built so far, by pool.
type PlanCache = Mutex<Vec<(DescriptorPool, Arc<ScanPlan>)>>;

/// Every message, map entry and enum of one pool, as tables.
#[derive(Debug)]
pub struct ScanPlan {
    pub messages: Vec<MessagePlan>,
    pub maps: Vec<MapPlan>,
    pub enums: Vec<EnumPlan>,
    by_name: HashMap<String, MsgId>,
}

impl ScanPlan {
    /// The plan of `pool`, built on first use and shared after.
    pub fn for_pool(pool: &DescriptorPool) -> Arc<ScanPlan> {
        static CACHE: OnceLock<PlanCache> = OnceLock::new();
        let cache = CACHE.get_or_init(|| Mutex::new(Vec::new()));
        // A poisoned lock only means another thread panicked while building;
        // the list itself is always consistent.
        let mut cached = cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, plan)) = cached.iter().find(|(p, _)| p == pool) {
            return Arc::clone(plan);
        }
        let plan = Arc::new(ScanPlan::build(pool));
        if cached.len() >= CACHED_POOLS {
            cached.remove(0);
        }
        cached.push((pool.clone(), Arc::clone(&plan)));
        plan
    }

    /// Compiles `pool`.
    pub fn build(pool: &DescriptorPool) -> ScanPlan {
        let messages: Vec<MessageDescriptor> = pool.all_messages().collect();
        let by_name = ids_by_name(messages.iter().map(MessageDescriptor::full_name));
        let enums_desc: Vec<EnumDescriptor> = pool.all_enums().collect();
        let enum_ids = ids_by_name(enums_desc.iter().map(EnumDescriptor::full_name));
        let enums = enums_desc
            .into_iter()
            .map(|desc| {
                let mut sorted: Vec<i32> = desc.values().map(|v| v.number()).collect();
                sorted.sort_unstable();
                sorted.dedup();
                EnumPlan { desc, sorted }
            })
            .collect();
        let msg_id = |m: &MessageDescriptor| by_name.get(m.full_name()).copied().unwrap_or(0);
        let enum_id = |e: &EnumDescriptor| enum_ids.get(e.full_name()).copied().unwrap_or(0);
        let mut maps = Vec::new();
        let mut plans = Vec::with_capacity(messages.len());
        for desc in &messages {
            let mut fields = Vec::new();
            let mut dense = Vec::new();
            let mut sparse = Vec::new();
            for fd in desc.fields() {
                let kind = if fd.is_map() {
                    match fd.kind() {
                        Kind::Message(entry) => {
                            maps.push(map_plan(&entry, &msg_id, &enum_id));
                            FieldKind::Map(maps.len() as u32 - 1)
                        }
                        other => FieldKind::Scalar(scalar_wire_type(&other)),
                    }
                } else {
                    match fd.kind() {
                        Kind::Message(m) if m.full_name() == "google.protobuf.Any" => {
                            FieldKind::Any(msg_id(&m))
                        }
                        Kind::Message(m) => FieldKind::Message(msg_id(&m)),
                        Kind::String => FieldKind::String,
                        Kind::Bytes => FieldKind::Bytes,
                        Kind::Enum(e) => FieldKind::Enum(enum_id(&e)),
                        other => FieldKind::Scalar(scalar_wire_type(&other)),
                    }
                };
                let number = fd.number();
                let slot = fields.len() as u32 + 1;
                if number < DENSE_LIMIT {
                    let n = number as usize;
                    if dense.len() <= n {
                        dense.resize(n + 1, 0);
                    }
                    dense[n] = slot;
                } else {
                    sparse.push((number, slot));
                }
                let list = fd.is_list();
                let json_name = fd.json_name().into();
                fields.push(FieldPlan {
                    fd,
                    kind,
                    list,
                    json_name,
                });
            }
            sparse.sort_unstable();
            plans.push(MessagePlan {
                desc: desc.clone(),
                dense,
                sparse,
                fields,
            });
        }
        ScanPlan {
            messages: plans,
            maps,
            enums,
            by_name,
        }
    }

    /// The message named `full_name`.
    pub fn message_id(&self, full_name: &str) -> Option<MsgId> {
        self.by_name.get(full_name).copied()
    }

    #[inline]
    pub fn message(&self, id: MsgId) -> &MessagePlan {
        &self.messages[id as usize]
    }
}

/// Each name's position in `names`.
fn ids_by_name<'a>(names: impl Iterator<Item = &'a str>) -> HashMap<String, u32> {
    names
        .enumerate()
        .map(|(i, n)| (n.to_string(), i as u32))
        .collect()
}

fn map_plan(
    entry: &MessageDescriptor,
    msg_id: &impl Fn(&MessageDescriptor) -> MsgId,
    enum_id: &impl Fn(&EnumDescriptor) -> u32,
) -> MapPlan {
    let key_fd = entry.map_entry_key_field();
    let val_fd = entry.map_entry_value_field();
    let key_kind = key_fd.kind();
    let val_kind = val_fd.kind();
    let value = match &val_kind {
        Kind::Message(m) => MapValue::Message(msg_id(m)),
        Kind::Enum(e) => MapValue::Enum(enum_id(e)),
        Kind::String => MapValue::String,
        _ => MapValue::Other,
    };
    MapPlan {
        key_wire: entry_wire_type(&key_kind),
        val_wire: entry_wire_type(&val_kind),
        key_is_string: matches!(key_kind, Kind::String),
        value,
        key_fd,
        val_fd,
    }
}

/// The wire type a singular (unpacked) value of `kind` uses.
pub fn scalar_wire_type(kind: &Kind) -> WireType {
    match kind {
        Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => WireType::Fixed64,
        Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => WireType::Fixed32,
        Kind::String | Kind::Bytes | Kind::Message(_) => WireType::Len,
        _ => WireType::Varint,
    }
}

/// The wire type of a map entry member of `kind`.
fn entry_wire_type(kind: &Kind) -> WireType {
    match kind {
        Kind::Enum(_) => WireType::Varint,
        k => scalar_wire_type(k),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modeled() -> crate::schema::Schema {
        crate::schema::Schema::modeled().expect("the modeled schema loads")
    }

    #[test]
    fn tables_agree_with_the_descriptors() {
        let s = modeled();
        let plan = ScanPlan::build(&s.pool);
        assert_eq!(plan.messages.len(), s.pool.all_messages().count());
        for m in s.pool.all_messages() {
            let id = plan
                .message_id(m.full_name())
                .expect("every message has an id");
            let mp = plan.message(id);
            assert_eq!(mp.desc.full_name(), m.full_name());
            for fd in m.fields() {
                let f = mp.field(fd.number()).expect("declared field found");
                assert_eq!(f.fd.full_name(), fd.full_name());
                assert_eq!(f.list, fd.is_list());
                match (f.kind, fd.kind()) {
                    (FieldKind::Map(i), _) => {
                        assert!(fd.is_map());
                        let Kind::Message(entry) = fd.kind() else {
                            panic!("a map is a message")
                        };
                        let mp = &plan.maps[i as usize];
                        assert_eq!(
                            mp.key_fd.full_name(),
                            entry.map_entry_key_field().full_name()
                        );
                    }
                    (FieldKind::Message(c), Kind::Message(d))
                    | (FieldKind::Any(c), Kind::Message(d)) => {
                        assert_eq!(plan.message(c).desc.full_name(), d.full_name());
                    }
                    (FieldKind::Enum(e), Kind::Enum(d)) => {
                        let ep = &plan.enums[e as usize];
                        assert_eq!(ep.desc.full_name(), d.full_name());
                        for v in d.values() {
                            assert!(ep.defines(v.number()));
                        }
                    }
                    (FieldKind::String, Kind::String) | (FieldKind::Bytes, Kind::Bytes) => {}
                    (FieldKind::Scalar(w), k) => assert_eq!(w, scalar_wire_type(&k)),
                    (got, want) => panic!("{}: {got:?} for {want:?}", fd.full_name()),
                }
            }
            // Numbers the message does not declare are not found.
            for n in [1u32, 2, 3, 100, 511, 512, 1000, 536_870_911] {
                if m.get_field(n).is_none() {
                    assert!(mp.field(n).is_none(), "{} {n}", m.full_name());
                }
            }
        }
    }

    #[test]
    fn undefined_enum_numbers_are_not_defined() {
        let s = modeled();
        let plan = ScanPlan::build(&s.pool);
        for ep in &plan.enums {
            for n in [-1, 9999, i32::MIN, i32::MAX] {
                assert_eq!(ep.defines(n), ep.desc.get_value(n).is_some());
            }
        }
    }

    #[test]
    fn the_plan_is_built_once_per_pool() {
        let s = modeled();
        let a = ScanPlan::for_pool(&s.pool);
        let b = ScanPlan::for_pool(&s.pool.clone());
        assert!(Arc::ptr_eq(&a, &b));
    }
}
