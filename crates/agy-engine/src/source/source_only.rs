//! The two declared source-only fields: CascadePlannerConfig field 50
//! (`planner50`) and ChatMessagePrompt field 23 (`prompt23`).
//!
//! Both are identified by number and wire type and accepted only at their
//! exact paths and observed shapes; the source digest keeps their bytes, the
//! RPC comparisons use a copy without them, and a verified attestation
//! records them (see [`SourceOnlyEntry`]).

use super::wire_trajectory::WireTrajectory;
use crate::schema::message_refs;
use crate::util::hex;
use crate::verdict::{ReasonClass, Refusal};
use prost::Message;
use prost_reflect::{
    DescriptorPool, DynamicMessage, MapKey, MessageDescriptor, ReflectMessage, Value,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub const PLANNER_MESSAGE: &str = "exa.cortex_pb.CascadePlannerConfig";
pub const PROMPT_MESSAGE: &str = "exa.chat_pb.ChatMessagePrompt";

/// The declared planner50 paths, as field names from the trajectory root.
pub const PLANNER50_PATHS: &[&[&str]] = &[
    &["generator_metadata", "planner_config"],
    &["executor_metadatas", "cascade_config", "planner_config"],
];

/// The declared prompt23 path.
pub const PROMPT23_PATH: &[&str] = &["generator_metadata", "chat_model", "message_prompts"];

/// Most results a field-23 payload may list.
pub const PROMPT23_MAX_RESULTS: usize = 50;

/// A declared source-only field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum DeclaredField {
    Planner50,
    Prompt23,
}

impl DeclaredField {
    pub const ALL: [DeclaredField; 2] = [DeclaredField::Planner50, DeclaredField::Prompt23];

    pub fn number(self) -> u32 {
        match self {
            DeclaredField::Planner50 => 50,
            DeclaredField::Prompt23 => 23,
        }
    }

    pub fn message(self) -> &'static str {
        match self {
            DeclaredField::Planner50 => PLANNER_MESSAGE,
            DeclaredField::Prompt23 => PROMPT_MESSAGE,
        }
    }

    pub fn class(self) -> ReasonClass {
        match self {
            DeclaredField::Planner50 => ReasonClass::SourceOnlyPlanner50,
            DeclaredField::Prompt23 => ReasonClass::SourceOnlyPrompt23,
        }
    }

    fn paths(self) -> &'static [&'static [&'static str]] {
        match self {
            DeclaredField::Planner50 => PLANNER50_PATHS,
            DeclaredField::Prompt23 => std::slice::from_ref(&PROMPT23_PATH),
        }
    }

    /// Whether a message reached by `chain` (field names from the root) is a declared location.
    pub fn accepts_path(self, chain: &[&str]) -> bool {
        self.paths().contains(&chain)
    }

    /// The declared paths in JSON style, e.g. `generatorMetadata[].plannerConfig`.
    pub fn declared_paths(self) -> Vec<String> {
        self.paths()
            .iter()
            .map(|p| {
                p.iter()
                    .enumerate()
                    .map(|(i, seg)| {
                        let camel = camel(seg);
                        let repeated = (i == 0) || *seg == "message_prompts";
                        if repeated {
                            format!("{camel}[]")
                        } else {
                            camel
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(".")
            })
            .collect()
    }

    pub(super) fn paths_text(self) -> String {
        let p = self.declared_paths();
        if p.len() == 1 {
            format!("path {}", p[0])
        } else {
            format!("paths {}", p.join(" and "))
        }
    }
}

fn camel(s: &str) -> String {
    let mut out = String::new();
    let mut up = false;
    for c in s.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The declared field a message type may carry, if any.
pub(super) fn declared_field_for(
    message: &str,
    _unknown: &[super::wire::RawField<'_>],
) -> Option<DeclaredField> {
    DeclaredField::ALL
        .into_iter()
        .find(|d| d.message() == message)
}

/// The refusal class for an unknown field `number` on `message`.
pub(super) fn class_for(message: &str, number: u32) -> Option<ReasonClass> {
    DeclaredField::ALL
        .into_iter()
        .find(|d| d.message() == message && d.number() == number)
        .map(DeclaredField::class)
}

/// The observed field-50 payloads: empty, or varint fields 2 and/or 4, each
/// once, in that order, with value zero.
pub const PLANNER50_SHAPES: &[&[u8]] =
    &[&[], &[0x10, 0x00], &[0x20, 0x00], &[0x10, 0x00, 0x20, 0x00]];

pub(crate) fn check_planner50_payload(payload: &[u8]) -> Result<(), String> {
    if PLANNER50_SHAPES.contains(&payload) {
        Ok(())
    } else {
        Err(format!(
            "field 50 payload {} is not one of the observed shapes (empty, or varint fields 2 and/or 4 with value zero)",
            hex(payload)
        ))
    }
}

/// One accepted occurrence of a declared field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceOnlyOccurrence {
    pub field: DeclaredField,
    /// JSON-style location of the message that carries it.
    pub location: String,
    /// The stored encoding, key included.
    pub encoding: Vec<u8>,
    /// The payload bytes.
    pub payload: Vec<u8>,
}

/// One entry of an entry of a field-23 payload.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt23Entry {
    Path(String),
    Line {
        path: String,
        line_content: String,
        line_number: f64,
    },
}

/// A parsed field-23 payload whose values are checked against its step after
/// the whole source is read.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt23Pending {
    pub location: String,
    pub step_idx: i32,
    pub tool_call_id: String,
    pub entries: Vec<Prompt23Entry>,
    pub num_elided: Option<f64>,
}

impl Prompt23Pending {
    pub(super) fn at(mut self, location: String) -> Self {
        self.location = location;
        self
    }
}

fn enum_name(msg: &DynamicMessage, field: &str) -> Option<String> {
    let fd = msg.descriptor().get_field_by_name(field)?;
    let n = msg.get_field(&fd).as_enum_number()?;
    let e = fd.kind().as_enum()?.clone();
    e.get_value(n).map(|v| v.name().to_string())
}

fn str_field(msg: &DynamicMessage, field: &str) -> Option<String> {
    let fd = msg.descriptor().get_field_by_name(field)?;
    msg.get_field(&fd).as_str().map(str::to_string)
}

fn i64_field(msg: &DynamicMessage, field: &str) -> Option<i64> {
    let fd = msg.descriptor().get_field_by_name(field)?;
    let v = msg.get_field(&fd);
    v.as_i32()
        .map(i64::from)
        .or_else(|| v.as_i64())
        .or_else(|| v.as_u32().map(i64::from))
        .or_else(|| v.as_u64().map(|x| x as i64))
}

fn has(msg: &DynamicMessage, field: &str) -> bool {
    msg.descriptor()
        .get_field_by_name(field)
        .is_some_and(|fd| msg.has_field(&fd))
}

fn sub<'a>(msg: &'a DynamicMessage, field: &str) -> Option<std::borrow::Cow<'a, DynamicMessage>> {
    let fd = msg.descriptor().get_field_by_name(field)?;
    if !msg.has_field(&fd) {
        return None;
    }
    match msg.get_field(&fd) {
        std::borrow::Cow::Borrowed(Value::Message(m)) => Some(std::borrow::Cow::Borrowed(m)),
        std::borrow::Cow::Owned(Value::Message(m)) => Some(std::borrow::Cow::Owned(m)),
        _ => None,
    }
}

/// Checks a prompt carrying field 23 and parses the payload's shape.
///
/// `strict_struct` is the strict wire scan of a `google.protobuf.Struct`
/// payload (the first refusal it finds, if any): the scanner passes its own,
/// so this module imports no scanner (no import circle with `scan`).
pub(crate) fn check_prompt23(
    strict_struct: &dyn Fn(&[u8], &MessageDescriptor) -> Option<String>,
    struct_pool: &DescriptorPool,
    prompt_desc: &MessageDescriptor,
    prompt_bytes: &[u8],
    payload: &[u8],
) -> Result<Prompt23Pending, String> {
    let prompt = DynamicMessage::decode(prompt_desc.clone(), prompt_bytes)
        .map_err(|e| format!("the prompt does not decode: {e}"))?;
    if enum_name(&prompt, "source").as_deref() != Some("CHAT_MESSAGE_SOURCE_TOOL") {
        return Err("field 23 on a prompt whose source is not CHAT_MESSAGE_SOURCE_TOOL".into());
    }
    let tool_call_id = str_field(&prompt, "tool_call_id").unwrap_or_default();
    if tool_call_id.is_empty() {
        return Err("field 23 on a prompt without tool_call_id".into());
    }
    let step_idx = i64_field(&prompt, "step_idx").unwrap_or(0);
    if step_idx == 0 {
        return Err("field 23 on a prompt without step_idx".into());
    }
    if has(&prompt, "prompt_struct") {
        return Err("field 23 on a prompt that also sets prompt_struct".into());
    }
    let struct_desc = struct_pool
        .get_message_by_name("google.protobuf.Struct")
        .ok_or("no google.protobuf.Struct descriptor")?;
    if let Some(r) = strict_struct(payload, &struct_desc) {
        return Err(format!(
            "field 23 payload is not a strict google.protobuf.Struct: {r}"
        ));
    }
    let parsed = DynamicMessage::decode(struct_desc, payload)
        .map_err(|e| format!("field 23 payload: {e}"))?;
    if parsed.encoded_len() != payload.len() {
        return Err(format!(
            "field 23 payload re-encodes to {} bytes, not its own {} (a merged or dropped member)",
            parsed.encoded_len(),
            payload.len()
        ));
    }
    let (entries, num_elided) = prompt23_shape(&parsed)?;
    Ok(Prompt23Pending {
        location: String::new(),
        step_idx: step_idx as i32,
        tool_call_id,
        entries,
        num_elided,
    })
}

/// A Struct's fields as (name, Value message) pairs.
fn struct_fields(s: &DynamicMessage) -> Vec<(String, DynamicMessage)> {
    let mut out = Vec::new();
    if let Some(fd) = s.descriptor().get_field_by_name("fields") {
        if let Some(map) = s.get_field(&fd).as_map() {
            for (k, v) in map {
                if let (MapKey::String(k), Some(v)) = (k, v.as_message()) {
                    out.push((k.clone(), v.clone()));
                }
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The one member a google.protobuf.Value sets.
fn value_kind(v: &DynamicMessage) -> Option<(String, Value)> {
    let mut set = v.fields();
    let (fd, val) = set.next()?;
    if set.next().is_some() {
        return None;
    }
    Some((fd.name().to_string(), val.clone()))
}

fn whole(n: f64) -> bool {
    n.is_finite() && n.fract() == 0.0
}

fn prompt23_shape(s: &DynamicMessage) -> Result<(Vec<Prompt23Entry>, Option<f64>), String> {
    let fields = struct_fields(s);
    let mut results = None;
    let mut elided = None;
    for (name, v) in &fields {
        match name.as_str() {
            "results" => results = Some(v.clone()),
            "num_elided_results" => match value_kind(v) {
                Some((k, Value::F64(n))) if k == "number_value" && whole(n) && n >= 1.0 => {
                    elided = Some(n)
                }
                _ => return Err("num_elided_results is not a whole positive number".into()),
            },
            other => return Err(format!("field 23 payload has unexpected member `{other}`")),
        }
    }
    let results = results.ok_or("field 23 payload has no results list")?;
    let list = match value_kind(&results) {
        Some((k, Value::Message(l))) if k == "list_value" => l,
        _ => return Err("results is not a list".into()),
    };
    let values = message_refs(&list, "values");
    if values.is_empty() || values.len() > PROMPT23_MAX_RESULTS {
        return Err(format!(
            "results lists {} objects, not 1 to {PROMPT23_MAX_RESULTS}",
            values.len()
        ));
    }
    let mut entries = Vec::with_capacity(values.len());
    for (i, v) in values.iter().enumerate() {
        let obj = match value_kind(v) {
            Some((k, Value::Message(o))) if k == "struct_value" => o,
            _ => return Err(format!("results[{i}] is not an object")),
        };
        let members = struct_fields(&obj);
        let names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
        let string_of = |name: &str| -> Result<String, String> {
            let (_, v) = members
                .iter()
                .find(|(n, _)| n == name)
                .ok_or_else(|| format!("results[{i}] lacks {name}"))?;
            match value_kind(v) {
                Some((k, Value::String(s))) if k == "string_value" => Ok(s),
                _ => Err(format!("results[{i}].{name} is not a string")),
            }
        };
        let entry = match names.as_slice() {
            ["path"] => Prompt23Entry::Path(string_of("path")?),
            ["line_content", "line_number", "path"] => {
                let (_, n) = members.iter().find(|(n, _)| n == "line_number").ok_or("line_number")?;
                let line_number = match value_kind(n) {
                    Some((k, Value::F64(x))) if k == "number_value" && whole(x) && x >= 1.0 => x,
                    _ => return Err(format!("results[{i}].line_number is not a whole number of at least 1")),
                };
                Prompt23Entry::Line {
                    path: string_of("path")?,
                    line_content: string_of("line_content")?,
                    line_number,
                }
            }
            other => return Err(format!("results[{i}] has members {other:?}, not {{path}} or {{path, line_content, line_number}}")),
        };
        entries.push(entry);
    }
    let path_only = matches!(entries[0], Prompt23Entry::Path(_));
    if entries
        .iter()
        .any(|e| matches!(e, Prompt23Entry::Path(_)) != path_only)
    {
        return Err("results mix path-only and line entries".into());
    }
    Ok((entries, elided))
}

/// The grep-search step a field-23 payload must derive from: "the step that
/// step_idx names, which must be a GREP_SEARCH step whose tool call ID equals
/// the prompt's tool_call_id". To the letter: the named step itself is a
/// GREP_SEARCH step with its grep_search body, and the ID is that step's own
/// `metadata.tool_call.id`. A generic wrapper embedding a GREP_SEARCH Step is
/// not a GREP_SEARCH step (its type is GENERIC), so it is refused, whatever
/// its Any holds (stricter reading: the specification says nothing of
/// wrappers here).
fn grep_step(step: &DynamicMessage) -> Option<(DynamicMessage, String)> {
    if enum_name(step, "type").as_deref() != Some("CORTEX_STEP_TYPE_GREP_SEARCH") {
        return None;
    }
    let tool_call_id = sub(step, "metadata")
        .and_then(|m| sub(&m, "tool_call").map(|t| str_field(&t, "id").unwrap_or_default()))
        .unwrap_or_default();
    sub(step, "grep_search").map(|g| (g.into_owned(), tool_call_id))
}

/// Checks each field-23 payload against the step its prompt names: the
/// step-derived rule, run once the whole source has been read.
pub fn check_prompt23_derivations(
    trajectory: &WireTrajectory,
    pending: &[Prompt23Pending],
) -> Vec<Refusal> {
    let mut out = Vec::new();
    for p in pending {
        if let Err(detail) = derive_one(trajectory, p) {
            out.push(Refusal::new(
                ReasonClass::SourceOnlyPrompt23,
                p.location.clone(),
                detail,
            ));
        }
    }
    out
}

fn derive_one(trajectory: &WireTrajectory, p: &Prompt23Pending) -> Result<(), String> {
    let missing = || format!("field 23 names step {} which does not exist", p.step_idx);
    let index = usize::try_from(p.step_idx)
        .ok()
        .filter(|&i| i < trajectory.len())
        .ok_or_else(missing)?;
    let step = trajectory
        .decode_step(index)
        .map_err(|e| format!("field 23 names step {index}, which does not decode: {e}"))?;
    let step = &step;
    let (grep, call_id) = grep_step(step).ok_or_else(|| {
        format!(
            "field 23 names step {} which is not a GREP_SEARCH step",
            p.step_idx
        )
    })?;
    if call_id != p.tool_call_id {
        return Err(format!(
            "field 23 tool_call_id {:?} differs from step {}'s tool call ID {:?}",
            p.tool_call_id, p.step_idx, call_id
        ));
    }
    let results = message_refs(&grep, "results");
    if results.len() != p.entries.len() {
        return Err(format!(
            "field 23 lists {} results, step {} has {}",
            p.entries.len(),
            p.step_idx,
            results.len()
        ));
    }
    let match_per_line = grep
        .descriptor()
        .get_field_by_name("match_per_line")
        .and_then(|fd| grep.get_field(&fd).as_bool())
        .unwrap_or(false);
    for (i, (e, r)) in p.entries.iter().zip(&results).enumerate() {
        let rel = str_field(r, "relative_path").unwrap_or_default();
        let abs = str_field(r, "absolute_path").unwrap_or_default();
        let path_ok =
            |path: &str| (!rel.is_empty() && path == rel) || (!abs.is_empty() && path == abs);
        match e {
            Prompt23Entry::Path(path) => {
                if match_per_line {
                    return Err(
                        "path-only field 23 entries for a search with match_per_line true".into(),
                    );
                }
                if !path_ok(path) {
                    return Err(format!(
                        "results[{i}].path differs from the step's result {i}"
                    ));
                }
            }
            Prompt23Entry::Line {
                path,
                line_content,
                line_number,
            } => {
                if !match_per_line {
                    return Err(
                        "line field 23 entries for a search with match_per_line false".into(),
                    );
                }
                if !path_ok(path) {
                    return Err(format!(
                        "results[{i}].path differs from the step's result {i}"
                    ));
                }
                if str_field(r, "content").unwrap_or_default() != *line_content {
                    return Err(format!(
                        "results[{i}].line_content differs from the step's result {i}"
                    ));
                }
                let want = i64_field(r, "line_number").unwrap_or(0) as f64 + 1.0;
                if *line_number != want {
                    return Err(format!(
                        "results[{i}].line_number {line_number} is not the step's line_number + 1 ({want})"
                    ));
                }
            }
        }
    }
    let total = i64_field(&grep, "total_results").unwrap_or(0);
    let extra = total - results.len() as i64;
    match (p.num_elided, extra > 0) {
        (None, false) => Ok(()),
        (Some(n), true) if n == extra as f64 => Ok(()),
        (Some(n), true) => Err(format!(
            "num_elided_results {n} is not total_results - results ({extra})"
        )),
        (Some(_), false) => Err("num_elided_results present although nothing was elided".into()),
        (None, true) => Err(format!(
            "num_elided_results missing although {extra} results were elided"
        )),
    }
}

/// One declared field's record in an export, attestation or manifest. Read
/// back exactly (an unknown member is refused, not dropped), so a record
/// compares with what a source yields now as the typed value it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SourceOnlyEntry {
    /// `exa.cortex_pb.CascadePlannerConfig.50` or `exa.chat_pb.ChatMessagePrompt.23`.
    pub field: String,
    pub declared_paths: Vec<String>,
    pub occurrences: usize,
    /// SHA-256 of the stored encodings concatenated in traversal order.
    pub sha256: String,
    pub locations: Vec<SourceOnlyLocation>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceOnlyLocation {
    pub location: String,
    /// The payload bytes, lowercase hex.
    pub payload: String,
}

/// The record: one entry per declared field present, field 50 first.
pub fn record(occurrences: &[SourceOnlyOccurrence]) -> Vec<SourceOnlyEntry> {
    DeclaredField::ALL
        .into_iter()
        .filter_map(|field| {
            let mine: Vec<&SourceOnlyOccurrence> =
                occurrences.iter().filter(|o| o.field == field).collect();
            if mine.is_empty() {
                return None;
            }
            let mut h = Sha256::new();
            for o in &mine {
                h.update(&o.encoding);
            }
            Some(SourceOnlyEntry {
                field: format!("{}.{}", field.message(), field.number()),
                declared_paths: field.declared_paths(),
                occurrences: mine.len(),
                sha256: format!("sha256:{}", hex(&h.finalize())),
                locations: mine
                    .iter()
                    .map(|o| SourceOnlyLocation {
                        location: o.location.clone(),
                        payload: hex(&o.payload),
                    })
                    .collect(),
            })
        })
        .collect()
}
