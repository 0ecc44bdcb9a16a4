//! The strict, descriptor-driven wire scanner.
//!
//! It walks an encoding against the loaded descriptors *before* anything is
//! decoded, so nothing the schema does not define can be silently dropped:
//! every unknown field at any depth, unknown enum number, invalid UTF-8, wire
//! type mismatch, malformed or trailing bytes, Any with an unknown type URL,
//! bad map entry (unknown, malformed, wrongly encoded or duplicate member,
//! duplicate key, also across repeated occurrences of a singular enclosing
//! message) and nesting past [`MAX_DEPTH`] is refused with the exact JSON-style
//! path, e.g. `steps[12].metadata.toolCall: unknown field 41 (varint) in
//! exa.codeium_common_pb.ChatToolCall: …` (an unknown field's refusal names
//! the message and suggests the user's own build's descriptors, `--schema`).
//!
//! The two declared source-only fields are the only unknown fields it lets
//! through, and only at their exact paths and shapes (see [`super::source_only`]).
//!
//! Map checks apply to every map field, not only the two the specification
//! names (`ToolOutputConfig.per_tool`, `CustomizationDiscoveryConfig.kind_enablement`):
//! strictness elsewhere can only refuse, never admit.

use super::scan_plan::{FieldKind, FieldPlan, MapValue, MsgId, ScanPlan};
use super::source_only::{self, DeclaredField, Prompt23Pending, SourceOnlyOccurrence};
use super::wire::{FieldIter, RawField, WireType};
use crate::util::hex;
use crate::verdict::{ReasonClass, Refusal};
use prost_reflect::{DescriptorPool, MessageDescriptor};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// Deepest message nesting accepted (prost's own limit).
pub const MAX_DEPTH: usize = 100;

/// An unknown or refused field kept for `--allow-unknown` exports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnknownFieldRecord {
    pub path: String,
    pub field: u32,
    #[serde(rename = "wireType")]
    pub wire_type: &'static str,
    /// The whole encoding (key included), lowercase hex.
    pub bytes: String,
}

/// The scanner stopped: the refusal is in [`Scanner::refusals`].
#[derive(Debug)]
pub struct Stop;

type Step = Result<(), Stop>;

/// The hasher of the scanner's path-keyed tables: they hash strings it
/// builds itself (paths, up to a few hundred bytes), so a DoS-resistant
/// hasher buys nothing there, and hashing a byte at a time (FNV-1a, before)
/// was an eighth of the scan. Eight bytes a step (FxHash's mixing step), a
/// length-tagged tail, and a final avalanche so every bit of the result
/// depends on every byte (hashbrown reads both the low and the top bits).
#[derive(Default)]
struct Fnv(u64);

const PATH_HASH_K: u64 = 0x517c_c1b7_2722_0a95;

impl Fnv {
    #[inline]
    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(PATH_HASH_K);
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.mix(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        // The tail's length in the top byte (a tail fills at most 7 bytes).
        self.mix(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 56));
    }
}

type FnvMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

/// One strict pass over one encoding.
pub struct Scanner<'p> {
    plan: Arc<ScanPlan>,
    struct_pool: Option<&'p DescriptorPool>,
    collect_all: bool,
    display: String,
    /// The field (message id, index in its plan) entered at each level;
    /// `None` for an Any's payload.
    chain: Vec<Option<(MsgId, u32)>>,
    /// Scratch for building path keys without allocating.
    key: String,
    rep_counts: FnvMap<String, usize>,
    map_keys: FnvMap<String, HashSet<Vec<u8>>>,
    seen_source_only: HashSet<(DeclaredField, String)>,
    pub refusals: Vec<Refusal>,
    pub unknown_fields: Vec<UnknownFieldRecord>,
    pub source_only: Vec<SourceOnlyOccurrence>,
    pub prompt23_pending: Vec<Prompt23Pending>,
}

impl<'p> Scanner<'p> {
    /// A scanner over `pool`. With `struct_pool`, declared field-23 payloads are
    /// parsed as google.protobuf.Struct from it; without, field 23 is refused.
    /// With `collect_all`, it records every refusal it can and keeps going
    /// (malformed data still stops it).
    pub fn new(
        pool: &'p DescriptorPool,
        struct_pool: Option<&'p DescriptorPool>,
        collect_all: bool,
    ) -> Self {
        Scanner {
            plan: ScanPlan::for_pool(pool),
            struct_pool,
            collect_all,
            display: String::new(),
            chain: Vec::new(),
            key: String::new(),
            rep_counts: FnvMap::default(),
            map_keys: FnvMap::default(),
            seen_source_only: HashSet::new(),
            refusals: Vec::new(),
            unknown_fields: Vec::new(),
            source_only: Vec::new(),
            prompt23_pending: Vec::new(),
        }
    }

    /// Scans `bytes` as a `desc` message at the root.
    pub fn scan_root(&mut self, bytes: &[u8], desc: &MessageDescriptor) {
        match self.plan.message_id(desc.full_name()) {
            Some(id) => {
                let plan = Arc::clone(&self.plan);
                let _ = self.scan_message(&plan, bytes, id, 0);
            }
            None => {
                let _ = self.fatal(
                    ReasonClass::MalformedProtobuf,
                    String::new(),
                    format!(
                        "{} is not a message of the scanner's pool",
                        desc.full_name()
                    ),
                );
            }
        }
    }

    /// Whether any refusal was recorded.
    pub fn refused(&self) -> bool {
        !self.refusals.is_empty()
    }

    fn location(&self, leaf: &str) -> String {
        if self.display.is_empty() {
            leaf.to_string()
        } else if leaf.is_empty() {
            self.display.clone()
        } else {
            format!("{}.{leaf}", self.display)
        }
    }

    /// [`Self::location`] into the scratch key.
    fn key_of(&mut self, leaf: &str) {
        self.key.clear();
        self.key.push_str(&self.display);
        if !self.display.is_empty() && !leaf.is_empty() {
            self.key.push('.');
        }
        self.key.push_str(leaf);
    }

    fn refuse(&mut self, class: ReasonClass, location: String, detail: String) -> Step {
        self.refusals.push(Refusal::new(class, location, detail));
        if self.collect_all {
            Ok(())
        } else {
            Err(Stop)
        }
    }

    fn fatal(&mut self, class: ReasonClass, location: String, detail: String) -> Step {
        self.refusals.push(Refusal::new(class, location, detail));
        Err(Stop)
    }

    fn record_unknown(&mut self, location: String, f: &RawField<'_>) {
        self.unknown_fields.push(UnknownFieldRecord {
            path: location,
            field: f.number,
            wire_type: f.wire_type.name(),
            bytes: hex(f.encoding),
        });
    }

    fn scan_message(&mut self, plan: &ScanPlan, bytes: &[u8], id: MsgId, depth: usize) -> Step {
        let msg = plan.message(id);
        if depth > MAX_DEPTH {
            let loc = self.location("");
            return self.fatal(
                ReasonClass::RecursionLimit,
                loc,
                format!("messages nested deeper than {MAX_DEPTH}"),
            );
        }
        let mut unknown: Vec<RawField<'_>> = Vec::new();
        let mut iter = FieldIter::new(bytes);
        loop {
            let offset = iter.offset();
            let f = match iter.next() {
                None => break,
                Some(Ok(f)) => f,
                Some(Err(e)) => {
                    let loc = self.location("");
                    return self.fatal(
                        ReasonClass::MalformedProtobuf,
                        loc,
                        format!("{e} at byte {offset} of a {}", msg.desc.full_name()),
                    );
                }
            };
            match msg.field_at(f.number) {
                Some((i, fp)) => self.scan_known(plan, Some((id, i)), fp, &f, depth)?,
                None => unknown.push(f),
            }
        }
        if !unknown.is_empty() {
            self.scan_unknown(&msg.desc, bytes, &unknown)?;
        }
        Ok(())
    }

    fn next_index(&mut self, name: &str) -> usize {
        self.key_of(name);
        if let Some(c) = self.rep_counts.get_mut(self.key.as_str()) {
            let i = *c;
            *c += 1;
            return i;
        }
        self.rep_counts.insert(self.key.clone(), 1);
        0
    }

    /// Appends one path segment to the display: a field (`name`, `name[i]`,
    /// after a `.`) or, for `None`, an Any's payload type (`(Type)`, no `.`).
    fn enter(&mut self, field: Option<(MsgId, u32)>, push: impl FnOnce(&mut String)) -> usize {
        let saved = self.display.len();
        if field.is_some() && !self.display.is_empty() {
            self.display.push('.');
        }
        push(&mut self.display);
        self.chain.push(field);
        saved
    }

    fn leave(&mut self, saved: usize) {
        self.display.truncate(saved);
        self.chain.pop();
    }

    fn mismatch(&mut self, fp: &FieldPlan, f: &RawField<'_>) -> Step {
        let fd = &fp.fd;
        let loc = self.location(fd.json_name());
        self.record_unknown(loc.clone(), f);
        self.refuse(
            ReasonClass::MalformedProtobuf,
            loc,
            format!(
                "field {} ({}) encoded as {}, not as its declared {:?}",
                f.number,
                fd.name(),
                f.wire_type.name(),
                fd.kind()
            ),
        )
    }

    fn scan_known(
        &mut self,
        plan: &ScanPlan,
        at: Option<(MsgId, u32)>,
        fp: &FieldPlan,
        f: &RawField<'_>,
        depth: usize,
    ) -> Step {
        match fp.kind {
            FieldKind::Map(map) => {
                if f.wire_type != WireType::Len {
                    return self.mismatch(fp, f);
                }
                self.scan_map_entry(plan, at, fp, map, f, depth)
            }
            FieldKind::Message(child) | FieldKind::Any(child) => {
                if f.wire_type != WireType::Len {
                    return self.mismatch(fp, f);
                }
                let name = &*fp.json_name;
                let saved = if fp.list {
                    let i = self.next_index(name);
                    self.enter(at, |d| {
                        d.push_str(name);
                        d.push('[');
                        push_decimal(d, i);
                        d.push(']');
                    })
                } else {
                    self.enter(at, |d| d.push_str(name))
                };
                let r = if matches!(fp.kind, FieldKind::Any(_)) {
                    self.scan_any(plan, child, f.value, depth + 1)
                } else {
                    self.scan_message(plan, f.value, child, depth + 1)
                };
                self.leave(saved);
                r
            }
            FieldKind::String => {
                if f.wire_type != WireType::Len {
                    return self.mismatch(fp, f);
                }
                if !valid_utf8(f.value) {
                    let loc = self.location(fp.fd.json_name());
                    self.record_unknown(loc.clone(), f);
                    return self.refuse(
                        ReasonClass::InvalidUtf8,
                        loc,
                        format!("field {} is not valid UTF-8", fp.fd.name()),
                    );
                }
                Ok(())
            }
            FieldKind::Bytes => {
                if f.wire_type != WireType::Len {
                    return self.mismatch(fp, f);
                }
                Ok(())
            }
            FieldKind::Enum(e) => match f.wire_type {
                WireType::Varint => self.check_enum(plan, &fp.json_name, e, f.value),
                WireType::Len if fp.list => {
                    let mut pos = 0;
                    while pos < f.value.len() {
                        let start = pos;
                        if super::wire::read_varint(f.value, &mut pos).is_err() {
                            return self.mismatch(fp, f);
                        }
                        self.check_enum(plan, &fp.json_name, e, &f.value[start..pos])?;
                    }
                    Ok(())
                }
                _ => self.mismatch(fp, f),
            },
            FieldKind::Scalar(want) => {
                if f.wire_type == want {
                    return Ok(());
                }
                if f.wire_type == WireType::Len && fp.list && packed_ok(want, f.value) {
                    return Ok(());
                }
                self.mismatch(fp, f)
            }
        }
    }

    fn check_enum(&mut self, plan: &ScanPlan, json_name: &str, e: u32, varint: &[u8]) -> Step {
        let mut pos = 0;
        let raw = super::wire::read_varint(varint, &mut pos).unwrap_or(0);
        let n = raw as i64 as i32;
        let ep = &plan.enums[e as usize];
        if ep.defines(n) {
            return Ok(());
        }
        let loc = self.location(json_name);
        self.refuse(
            ReasonClass::UnknownEnum,
            loc,
            format!("unknown enum value {n} for {}", ep.desc.full_name()),
        )
    }

    fn scan_any(&mut self, plan: &ScanPlan, any: MsgId, bytes: &[u8], depth: usize) -> Step {
        self.scan_message(plan, bytes, any, depth)?;
        let mut type_url: Option<&[u8]> = None;
        let mut value: Option<&[u8]> = None;
        for f in FieldIter::new(bytes).flatten() {
            let slot = match f.number {
                1 => &mut type_url,
                2 => &mut value,
                _ => continue,
            };
            if slot.replace(f.value).is_some() {
                let loc = self.location("");
                return self.refuse(
                    ReasonClass::MalformedProtobuf,
                    loc,
                    "google.protobuf.Any repeats a member".to_string(),
                );
            }
        }
        let url = type_url
            .map(|u| String::from_utf8_lossy(u).into_owned())
            .unwrap_or_default();
        let value = value.unwrap_or(&[]);
        if url.is_empty() && value.is_empty() {
            return Ok(());
        }
        let name = url.strip_prefix("type.googleapis.com/").unwrap_or("");
        let Some(target) = (!name.is_empty()).then(|| plan.message_id(name)).flatten() else {
            let loc = self.location("");
            return self.refuse(
                ReasonClass::UnknownAnyType,
                loc,
                format!("unknown Any type URL `{url}`"),
            );
        };
        let full_name = plan.message(target).desc.full_name();
        let saved = self.enter(None, |d| {
            let _ = write!(d, "({full_name})");
        });
        let r = self.scan_message(plan, value, target, depth + 1);
        self.leave(saved);
        r
    }

    fn bad_entry(&mut self, fp: &FieldPlan, f: &RawField<'_>, detail: String) -> Step {
        let loc = self.location(fp.fd.json_name());
        self.record_unknown(loc.clone(), f);
        self.refuse(ReasonClass::BadMapEntry, loc, detail)
    }

    fn scan_map_entry(
        &mut self,
        plan: &ScanPlan,
        at: Option<(MsgId, u32)>,
        fp: &FieldPlan,
        map: u32,
        f: &RawField<'_>,
        depth: usize,
    ) -> Step {
        let mp = &plan.maps[map as usize];
        let mut key: Option<RawField<'_>> = None;
        let mut val: Option<RawField<'_>> = None;
        for m in FieldIter::new(f.value) {
            let m = match m {
                Ok(m) => m,
                Err(e) => return self.bad_entry(fp, f, format!("malformed map entry: {e}")),
            };
            let (slot, wire, what) = match m.number {
                1 => (&mut key, mp.key_wire, "key"),
                2 => (&mut val, mp.val_wire, "value"),
                n => {
                    return self.bad_entry(
                        fp,
                        f,
                        format!("unknown map entry member {n} ({})", m.wire_type.name()),
                    )
                }
            };
            if slot.is_some() {
                return self.bad_entry(fp, f, format!("duplicate map entry {what} member"));
            }
            if m.wire_type != wire {
                return self.bad_entry(
                    fp,
                    f,
                    format!("map entry {what} encoded as {}", m.wire_type.name()),
                );
            }
            *slot = Some(m);
        }
        // The key's canonical form: string bytes, or the integer's varint/fixed bytes.
        let key_bytes: &[u8] = key.map(|k| k.value).unwrap_or_default();
        let key_text = if mp.key_is_string {
            match simdutf8::basic::from_utf8(key_bytes) {
                Ok(s) => format!("{s:?}"),
                Err(_) => return self.bad_entry(fp, f, "map key is not valid UTF-8".to_string()),
            }
        } else {
            format!("0x{}", hex(key_bytes))
        };
        let name = &*fp.json_name;
        self.key_of(name);
        let fresh = match self.map_keys.get_mut(self.key.as_str()) {
            Some(keys) => keys.insert(key_bytes.to_vec()),
            None => {
                let keys = HashSet::from([key_bytes.to_vec()]);
                self.map_keys.insert(self.key.clone(), keys);
                true
            }
        };
        if !fresh {
            return self.bad_entry(fp, f, format!("duplicate map key {key_text}"));
        }
        let value_bytes = val.map(|v| v.value).unwrap_or(&[]);
        match mp.value {
            MapValue::Message(m) => {
                let saved = self.enter(at, |d| {
                    let _ = write!(d, "{name}[{key_text}]");
                });
                let r = self.scan_message(plan, value_bytes, m, depth + 2);
                self.leave(saved);
                r
            }
            MapValue::Enum(e) if val.is_some() => {
                self.check_enum(plan, mp.val_fd.json_name(), e, value_bytes)
            }
            MapValue::String if !valid_utf8(value_bytes) => self.bad_entry(
                fp,
                f,
                format!("map value for key {key_text} is not valid UTF-8"),
            ),
            _ => Ok(()),
        }
    }

    /// The schematic path (field names from the record root) of the current message.
    fn chain_names(&self) -> Option<Vec<&str>> {
        self.chain
            .iter()
            .map(|f| f.map(|(m, i)| self.plan.message(m).fields[i as usize].fd.name()))
            .collect()
    }

    fn scan_unknown(
        &mut self,
        desc: &MessageDescriptor,
        msg: &[u8],
        unknown: &[RawField<'_>],
    ) -> Step {
        let declared = source_only::declared_field_for(desc.full_name(), unknown);
        for f in unknown {
            match declared {
                Some(field) if f.number == field.number() => {
                    self.scan_declared(field, desc, msg, f, unknown)?;
                }
                _ => {
                    let loc = self.location("");
                    self.record_unknown(loc.clone(), f);
                    let detail = match source_only::class_for(desc.full_name(), f.number) {
                        Some(class) => (
                            class,
                            format!("unknown field {} ({})", f.number, f.wire_type.name()),
                        ),
                        None => (ReasonClass::UnknownField, unknown_field_detail(desc, f)),
                    };
                    self.refuse(detail.0, loc, detail.1)?;
                }
            }
        }
        Ok(())
    }

    fn scan_declared(
        &mut self,
        field: DeclaredField,
        desc: &MessageDescriptor,
        msg: &[u8],
        f: &RawField<'_>,
        unknown: &[RawField<'_>],
    ) -> Step {
        let unknown_count = unknown.len();
        let same_number = unknown.iter().filter(|u| u.number == f.number).count();
        let loc = self.location("");
        let class = field.class();
        let chain = self.chain_names();
        let problem = if !chain.as_deref().is_some_and(|c| field.accepts_path(c)) {
            Some(format!(
                "field {} outside its declared {}",
                field.number(),
                field.paths_text()
            ))
        } else if f.wire_type != WireType::Len {
            Some(format!(
                "field {} with wire type {}",
                field.number(),
                f.wire_type.name()
            ))
        } else if same_number > 1 || !self.seen_source_only.insert((field, loc.clone())) {
            Some(format!(
                "field {} occurs more than once in one message",
                field.number()
            ))
        } else if unknown_count > 1 {
            Some(format!(
                "field {} beside another unknown field",
                field.number()
            ))
        } else {
            match field {
                DeclaredField::Planner50 => source_only::check_planner50_payload(f.value).err(),
                DeclaredField::Prompt23 => match self.struct_pool {
                    None => {
                        Some("no google.protobuf.Struct descriptor to read field 23".to_string())
                    }
                    Some(sp) => {
                        let strict = |payload: &[u8], d: &MessageDescriptor| {
                            let mut s = Scanner::new(sp, None, false);
                            s.scan_root(payload, d);
                            s.refusals.first().map(|r| r.to_string())
                        };
                        match source_only::check_prompt23(&strict, sp, desc, msg, f.value) {
                            Ok(pending) => {
                                self.prompt23_pending.push(pending.at(loc.clone()));
                                None
                            }
                            Err(e) => Some(e),
                        }
                    }
                },
            }
        };
        if let Some(detail) = problem {
            self.record_unknown(loc.clone(), f);
            return self.refuse(class, loc, detail);
        }
        self.source_only.push(SourceOnlyOccurrence {
            field,
            location: loc,
            encoding: f.encoding.to_vec(),
            payload: f.value.to_vec(),
        });
        Ok(())
    }
}

/// Appends `n` in decimal (what `write!(d, "{n}")` writes, without the
/// formatting machinery: one path segment per repeated message occurrence).
fn push_decimal(d: &mut String, mut n: usize) {
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &b in &buf[at..] {
        d.push(char::from(b));
    }
}

/// Whether `bytes` are valid UTF-8: exactly `std::str::from_utf8(bytes).is_ok()`
/// (simdutf8 validates the same definition, with SIMD where the CPU has it;
/// the scan's strings are most of an encoding's bytes).
#[inline]
fn valid_utf8(bytes: &[u8]) -> bool {
    simdutf8::basic::from_utf8(bytes).is_ok()
}

fn packed_ok(want: WireType, body: &[u8]) -> bool {
    match want {
        WireType::Fixed64 => body.len() % 8 == 0,
        WireType::Fixed32 => body.len() % 4 == 0,
        WireType::Varint => {
            let mut pos = 0;
            while pos < body.len() {
                if super::wire::read_varint(body, &mut pos).is_err() {
                    return false;
                }
            }
            true
        }
        _ => false,
    }
}

/// The detail of an unknown-field refusal: the field number and wire type,
/// the message that lacks it (the refusal's location is its path), and what
/// to do: a build of agy newer or other than the schema in use may define the
/// field, and its own descriptors (`--schema FILE`) can be loaded instead.
fn unknown_field_detail(desc: &MessageDescriptor, f: &RawField<'_>) -> String {
    format!(
        "unknown field {} ({}) in {}: the schema in use does not define it; \
         if your agy build does, audit with its descriptors (--schema FILE)",
        f.number,
        f.wire_type.name(),
        desc.full_name()
    )
}

#[cfg(test)]
mod tests {
    use super::{push_decimal, valid_utf8};

    #[test]
    fn push_decimal_writes_what_format_writes() {
        for n in [0usize, 1, 9, 10, 11, 99, 100, 12345, usize::MAX] {
            let mut d = String::from("x[");
            push_decimal(&mut d, n);
            assert_eq!(d, format!("x[{n}"));
        }
    }

    /// The scan's UTF-8 check accepts exactly what `std::str::from_utf8`
    /// accepts: every one- and two-byte string, and the edges of the
    /// multi-byte forms (overlong, surrogate, past U+10FFFF, truncated),
    /// alone and after ASCII runs long enough for the SIMD path.
    #[test]
    fn valid_utf8_agrees_with_std() {
        let mut cases: Vec<Vec<u8>> = Vec::new();
        for a in 0..=255u8 {
            cases.push(vec![a]);
            for b in 0..=255u8 {
                cases.push(vec![a, b]);
            }
        }
        let edges: &[&[u8]] = &[
            b"\xe0\x80\x80",
            b"\xe0\xa0\x80",
            b"\xed\x9f\xbf",
            b"\xed\xa0\x80",
            b"\xef\xbf\xbf",
            b"\xf0\x8f\xbf\xbf",
            b"\xf0\x90\x80\x80",
            b"\xf4\x8f\xbf\xbf",
            b"\xf4\x90\x80\x80",
            b"\xf5\x80\x80\x80",
            b"\xc0\xaf",
            b"\xe2\x82",
            b"\xf0\x9f\x98",
            "é—日本😀".as_bytes(),
        ];
        for e in edges {
            for pad in [0usize, 1, 15, 31, 63, 64, 65, 200] {
                for at_end in [false, true] {
                    let mut v = vec![b'a'; pad];
                    if at_end {
                        v.extend_from_slice(e);
                    } else {
                        let mut w = e.to_vec();
                        w.extend_from_slice(&v);
                        v = w;
                    }
                    cases.push(v);
                }
            }
        }
        for c in &cases {
            assert_eq!(valid_utf8(c), std::str::from_utf8(c).is_ok(), "{c:?}");
        }
    }
}
