//! The strict, descriptor-driven wire scanner.
//!
//! It walks an encoding against the loaded descriptors *before* anything is
//! decoded, so nothing the schema does not define can be silently dropped:
//! every unknown field at any depth, unknown enum number, invalid UTF-8, wire
//! type mismatch, malformed or trailing bytes, Any with an unknown type URL,
//! bad map entry (unknown, malformed, wrongly encoded or duplicate member,
//! duplicate key, also across repeated occurrences of a singular enclosing
//! message) and nesting past [`MAX_DEPTH`] is refused with the exact JSON-style
//! path, e.g. `steps[12].metadata.toolCall: unknown field 41 (varint)`.
//!
//! The two declared source-only fields are the only unknown fields it lets
//! through, and only at their exact paths and shapes (see [`super::source_only`]).
//!
//! Map checks apply to every map field, not only the two the specification
//! names (`ToolOutputConfig.per_tool`, `CustomizationDiscoveryConfig.kind_enablement`):
//! strictness elsewhere can only refuse, never admit.

use super::source_only::{self, DeclaredField, Prompt23Pending, SourceOnlyOccurrence};
use super::wire::{FieldIter, RawField, WireType};
use crate::util::hex;
use crate::verdict::{ReasonClass, Refusal};
use prost_reflect::{DescriptorPool, FieldDescriptor, Kind, MessageDescriptor};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

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

/// One strict pass over one encoding.
pub struct Scanner<'p> {
    pool: &'p DescriptorPool,
    struct_pool: Option<&'p DescriptorPool>,
    collect_all: bool,
    display: String,
    chain: Vec<Option<FieldDescriptor>>,
    rep_counts: HashMap<String, usize>,
    map_keys: HashMap<String, HashSet<Vec<u8>>>,
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
            pool,
            struct_pool,
            collect_all,
            display: String::new(),
            chain: Vec::new(),
            rep_counts: HashMap::new(),
            map_keys: HashMap::new(),
            seen_source_only: HashSet::new(),
            refusals: Vec::new(),
            unknown_fields: Vec::new(),
            source_only: Vec::new(),
            prompt23_pending: Vec::new(),
        }
    }

    /// Scans `bytes` as a `desc` message at the root.
    pub fn scan_root(&mut self, bytes: &[u8], desc: &MessageDescriptor) {
        let _ = self.scan_message(bytes, desc, 0);
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

    pub(super) fn scan_message(
        &mut self,
        bytes: &[u8],
        desc: &MessageDescriptor,
        depth: usize,
    ) -> Step {
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
                        format!("{e} at byte {offset} of a {}", desc.full_name()),
                    );
                }
            };
            match desc.get_field(f.number) {
                Some(fd) => self.scan_known(&fd, &f, depth)?,
                None => unknown.push(f),
            }
        }
        if !unknown.is_empty() {
            self.scan_unknown(desc, bytes, &unknown)?;
        }
        Ok(())
    }

    fn next_index(&mut self, name: &str) -> usize {
        let key = self.location(name);
        let c = self.rep_counts.entry(key).or_insert(0);
        let i = *c;
        *c += 1;
        i
    }

    fn enter(&mut self, fd: Option<&FieldDescriptor>, segment: &str) -> usize {
        let saved = self.display.len();
        if !self.display.is_empty() && !segment.starts_with('[') && !segment.starts_with('(') {
            self.display.push('.');
        }
        self.display.push_str(segment);
        self.chain.push(fd.cloned());
        saved
    }

    fn leave(&mut self, saved: usize) {
        self.display.truncate(saved);
        self.chain.pop();
    }

    fn mismatch(&mut self, fd: &FieldDescriptor, f: &RawField<'_>) -> Step {
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

    fn scan_known(&mut self, fd: &FieldDescriptor, f: &RawField<'_>, depth: usize) -> Step {
        if fd.is_map() {
            if f.wire_type != WireType::Len {
                return self.mismatch(fd, f);
            }
            return self.scan_map_entry(fd, f, depth);
        }
        let kind = fd.kind();
        match &kind {
            Kind::Message(m) => {
                if f.wire_type != WireType::Len {
                    return self.mismatch(fd, f);
                }
                let segment = if fd.is_list() {
                    let i = self.next_index(fd.json_name());
                    format!("{}[{i}]", fd.json_name())
                } else {
                    fd.json_name().to_string()
                };
                let saved = self.enter(Some(fd), &segment);
                let r = if m.full_name() == "google.protobuf.Any" {
                    self.scan_any(m, f.value, depth + 1)
                } else {
                    self.scan_message(f.value, m, depth + 1)
                };
                self.leave(saved);
                r
            }
            Kind::String => {
                if f.wire_type != WireType::Len {
                    return self.mismatch(fd, f);
                }
                if std::str::from_utf8(f.value).is_err() {
                    let loc = self.location(fd.json_name());
                    self.record_unknown(loc.clone(), f);
                    return self.refuse(
                        ReasonClass::InvalidUtf8,
                        loc,
                        format!("field {} is not valid UTF-8", fd.name()),
                    );
                }
                Ok(())
            }
            Kind::Bytes => {
                if f.wire_type != WireType::Len {
                    return self.mismatch(fd, f);
                }
                Ok(())
            }
            Kind::Enum(e) => match f.wire_type {
                WireType::Varint => self.check_enum(fd, e, f.value),
                WireType::Len if fd.is_list() => {
                    let mut pos = 0;
                    while pos < f.value.len() {
                        let start = pos;
                        if super::wire::read_varint(f.value, &mut pos).is_err() {
                            return self.mismatch(fd, f);
                        }
                        self.check_enum(fd, e, &f.value[start..pos])?;
                    }
                    Ok(())
                }
                _ => self.mismatch(fd, f),
            },
            scalar => {
                let want = scalar_wire_type(scalar);
                if f.wire_type == want {
                    return Ok(());
                }
                if f.wire_type == WireType::Len && fd.is_list() && packed_ok(want, f.value) {
                    return Ok(());
                }
                self.mismatch(fd, f)
            }
        }
    }

    fn check_enum(
        &mut self,
        fd: &FieldDescriptor,
        e: &prost_reflect::EnumDescriptor,
        varint: &[u8],
    ) -> Step {
        let mut pos = 0;
        let raw = super::wire::read_varint(varint, &mut pos).unwrap_or(0);
        let n = raw as i64 as i32;
        if e.get_value(n).is_some() {
            return Ok(());
        }
        let loc = self.location(fd.json_name());
        self.refuse(
            ReasonClass::UnknownEnum,
            loc,
            format!("unknown enum value {n} for {}", e.full_name()),
        )
    }

    fn scan_any(&mut self, any: &MessageDescriptor, bytes: &[u8], depth: usize) -> Step {
        self.scan_message(bytes, any, depth)?;
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
        let Some(target) = (!name.is_empty())
            .then(|| self.pool.get_message_by_name(name))
            .flatten()
        else {
            let loc = self.location("");
            return self.refuse(
                ReasonClass::UnknownAnyType,
                loc,
                format!("unknown Any type URL `{url}`"),
            );
        };
        let saved = self.enter(None, &format!("({})", target.full_name()));
        let r = self.scan_message(value, &target, depth + 1);
        self.leave(saved);
        r
    }

    fn bad_entry(&mut self, fd: &FieldDescriptor, f: &RawField<'_>, detail: String) -> Step {
        let loc = self.location(fd.json_name());
        self.record_unknown(loc.clone(), f);
        self.refuse(ReasonClass::BadMapEntry, loc, detail)
    }

    fn scan_map_entry(&mut self, fd: &FieldDescriptor, f: &RawField<'_>, depth: usize) -> Step {
        let Kind::Message(entry) = fd.kind() else {
            return self.mismatch(fd, f);
        };
        let key_fd = entry.map_entry_key_field();
        let val_fd = entry.map_entry_value_field();
        let mut key: Option<RawField<'_>> = None;
        let mut val: Option<RawField<'_>> = None;
        for m in FieldIter::new(f.value) {
            let m = match m {
                Ok(m) => m,
                Err(e) => return self.bad_entry(fd, f, format!("malformed map entry: {e}")),
            };
            let (slot, member_fd, what) = match m.number {
                1 => (&mut key, &key_fd, "key"),
                2 => (&mut val, &val_fd, "value"),
                n => {
                    return self.bad_entry(
                        fd,
                        f,
                        format!("unknown map entry member {n} ({})", m.wire_type.name()),
                    )
                }
            };
            if slot.is_some() {
                return self.bad_entry(fd, f, format!("duplicate map entry {what} member"));
            }
            if m.wire_type != entry_wire_type(&member_fd.kind()) {
                return self.bad_entry(
                    fd,
                    f,
                    format!("map entry {what} encoded as {}", m.wire_type.name()),
                );
            }
            *slot = Some(m);
        }
        // The key's canonical form: string bytes, or the integer's varint/fixed bytes.
        let key_bytes: Vec<u8> = key.map(|k| k.value.to_vec()).unwrap_or_default();
        let key_text = match key_fd.kind() {
            Kind::String => match std::str::from_utf8(&key_bytes) {
                Ok(s) => format!("{s:?}"),
                Err(_) => return self.bad_entry(fd, f, "map key is not valid UTF-8".to_string()),
            },
            _ => format!("0x{}", hex(&key_bytes)),
        };
        let map_path = self.location(fd.json_name());
        if !self.map_keys.entry(map_path).or_default().insert(key_bytes) {
            return self.bad_entry(fd, f, format!("duplicate map key {key_text}"));
        }
        let value_bytes = val.map(|v| v.value).unwrap_or(&[]);
        match val_fd.kind() {
            Kind::Message(m) => {
                let saved = self.enter(Some(fd), &format!("{}[{key_text}]", fd.json_name()));
                let r = self.scan_message(value_bytes, &m, depth + 2);
                self.leave(saved);
                r
            }
            Kind::Enum(e) if val.is_some() => self.check_enum(&val_fd, &e, value_bytes),
            Kind::String if std::str::from_utf8(value_bytes).is_err() => self.bad_entry(
                fd,
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
            .map(|f| f.as_ref().map(|f| f.name()))
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
                    let class = source_only::class_for(desc.full_name(), f.number)
                        .unwrap_or(ReasonClass::UnknownField);
                    self.refuse(
                        class,
                        loc,
                        format!("unknown field {} ({})", f.number, f.wire_type.name()),
                    )?;
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
                        match source_only::check_prompt23(self.pool, sp, desc, msg, f.value) {
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

fn scalar_wire_type(kind: &Kind) -> WireType {
    match kind {
        Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => WireType::Fixed64,
        Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => WireType::Fixed32,
        Kind::String | Kind::Bytes | Kind::Message(_) => WireType::Len,
        _ => WireType::Varint,
    }
}

fn entry_wire_type(kind: &Kind) -> WireType {
    match kind {
        Kind::Enum(_) => WireType::Varint,
        k => scalar_wire_type(k),
    }
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
