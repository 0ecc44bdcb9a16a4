//! Shared helpers for the rule families: fields read by *name* from the loaded
//! descriptors (never by number), enum values compared by name, the generic
//! wrapper's argument map, statuses, errors, hook results and histories.

use super::reasons::Reason;
use crate::rules::RuleId;
pub(crate) use crate::schema::message_refs;
use crate::schema::to_daemon_json;
use bytes::Bytes;
use prost_reflect::{DynamicMessage, MapKey, ReflectMessage, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Why a rule refused a step (the step index is added by the engine).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reject {
    pub rule: Option<RuleId>,
    pub kind: Reason,
    pub detail: String,
}

/// A rule's result.
pub(crate) type R<T> = Result<T, Reject>;

/// A refusal under `rule` for `kind`, with the specifics in `detail`.
pub(crate) fn reject<T>(rule: Option<RuleId>, kind: Reason, detail: impl Into<String>) -> R<T> {
    Err(Reject {
        rule,
        kind,
        detail: detail.into(),
    })
}

/// Fails with `kind` under `rule` unless `cond` holds.
pub(crate) fn ensure(
    cond: bool,
    rule: RuleId,
    kind: Reason,
    detail: impl FnOnce() -> String,
) -> R<()> {
    if cond {
        Ok(())
    } else {
        reject(Some(rule), kind, detail())
    }
}

/// Whether `m` sets the field `name` (proto3 presence semantics; false for
/// a field the descriptor does not define).
pub(crate) fn has(m: &DynamicMessage, name: &str) -> bool {
    m.has_field_by_name(name)
}

/// Whether `m` sets any of `names`.
pub(crate) fn has_any(m: &DynamicMessage, names: &[&str]) -> bool {
    names.iter().any(|n| has(m, n))
}

/// A set message-typed field, borrowed.
pub(crate) fn sub<'m>(m: &'m DynamicMessage, name: &str) -> Option<&'m DynamicMessage> {
    if !has(m, name) {
        return None;
    }
    match m.get_field_by_name(name)? {
        Cow::Borrowed(Value::Message(x)) => Some(x),
        _ => None,
    }
}

/// A string field ("" when unset or not a string).
pub(crate) fn text(m: &DynamicMessage, name: &str) -> String {
    m.get_field_by_name(name)
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// A bool field (false when unset).
pub(crate) fn flag(m: &DynamicMessage, name: &str) -> bool {
    m.get_field_by_name(name)
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
}

/// An integer field of any width, when set.
pub(crate) fn int(m: &DynamicMessage, name: &str) -> Option<i128> {
    if !has(m, name) {
        return None;
    }
    match m.get_field_by_name(name)?.as_ref() {
        Value::I32(v) => Some(i128::from(*v)),
        Value::I64(v) => Some(i128::from(*v)),
        Value::U32(v) => Some(i128::from(*v)),
        Value::U64(v) => Some(i128::from(*v)),
        _ => None,
    }
}

/// The elements of a repeated message field, copied (see [`message_refs`]).
pub(crate) fn messages(m: &DynamicMessage, name: &str) -> Vec<DynamicMessage> {
    message_refs(m, name).into_iter().cloned().collect()
}

/// A `map<string, string>` field, ordered by key.
pub(crate) fn string_map(m: &DynamicMessage, name: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Some(Value::Map(map)) = m.get_field_by_name(name).as_deref() {
        for (k, v) in map {
            if let (MapKey::String(k), Some(v)) = (k, v.as_str()) {
                out.insert(k.clone(), v.to_string());
            }
        }
    }
    out
}

/// The names of the fields `m` sets, in field-number order.
pub(crate) fn set_fields(m: &DynamicMessage) -> Vec<String> {
    let mut v: Vec<(u32, String)> = m
        .fields()
        .map(|(fd, _)| (fd.number(), fd.name().to_string()))
        .collect();
    v.sort();
    v.into_iter().map(|(_, n)| n).collect()
}

/// The first field `m` sets outside `allowed`, if any.
pub(crate) fn extra_field(m: &DynamicMessage, allowed: &[&str]) -> Option<String> {
    set_fields(m)
        .into_iter()
        .find(|n| !allowed.contains(&n.as_str()))
}

/// The name of an enum field's value (the default value's name when unset).
/// A permission request's trigger (`trigger_source`, an object `{type,
/// detail}`): `None` when unset, the type's name when only the type is set,
/// else the type's name with the other fields set (which no rule accepts).
pub(crate) fn trigger_name(perm: &DynamicMessage) -> Option<String> {
    let t = sub(perm, "trigger_source")?;
    let name = enum_name(t, "type");
    let fields = set_fields(t);
    if fields == ["type"] {
        Some(name)
    } else {
        Some(format!("{name} with fields {fields:?}"))
    }
}

pub(crate) fn enum_name(m: &DynamicMessage, name: &str) -> String {
    let Some(fd) = m.descriptor().get_field_by_name(name) else {
        return String::new();
    };
    let Some(ed) = fd.kind().as_enum().cloned() else {
        return String::new();
    };
    let n = m.get_field(&fd).as_enum_number().unwrap_or(0);
    ed.get_value(n)
        .map(|v| v.name().to_string())
        .unwrap_or_else(|| n.to_string())
}

/// Sets an enum field by value name; false when the pool lacks the name.
pub(crate) fn set_enum(m: &mut DynamicMessage, name: &str, value: &str) -> bool {
    let Some(fd) = m.descriptor().get_field_by_name(name) else {
        return false;
    };
    let Some(ev) = fd.kind().as_enum().and_then(|e| e.get_value_by_name(value)) else {
        return false;
    };
    m.set_field(&fd, Value::EnumNumber(ev.number()));
    true
}

/// Sets a field by name when the descriptor defines it.
pub(crate) fn set(m: &mut DynamicMessage, name: &str, value: Value) -> bool {
    m.try_set_field_by_name(name, value).is_ok()
}

/// A new, empty message of the type of field `name` of `parent`.
pub(crate) fn new_sub(parent: &DynamicMessage, name: &str) -> Option<DynamicMessage> {
    let fd = parent.descriptor().get_field_by_name(name)?;
    let md = fd.kind().as_message()?.clone();
    Some(DynamicMessage::new(md))
}

/// Semantic equality: equal daemon JSON (map order and stored defaults do not count).
pub(crate) fn same(a: &DynamicMessage, b: &DynamicMessage) -> bool {
    to_daemon_json(a) == to_daemon_json(b)
}

/// Semantic equality of two optional messages (both absent counts as equal).
pub(crate) fn same_opt(a: Option<&DynamicMessage>, b: Option<&DynamicMessage>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => same(a, b),
        _ => false,
    }
}

/// Semantic equality of two repeated message fields.
pub(crate) fn same_list(a: &[DynamicMessage], b: &[DynamicMessage]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
}

/// Step status names.
pub(crate) const DONE: &str = "CORTEX_STEP_STATUS_DONE";
pub(crate) const ERROR: &str = "CORTEX_STEP_STATUS_ERROR";
pub(crate) const INVALID: &str = "CORTEX_STEP_STATUS_INVALID";
pub(crate) const CANCELED: &str = "CORTEX_STEP_STATUS_CANCELED";
pub(crate) const RUNNING: &str = "CORTEX_STEP_STATUS_RUNNING";
pub(crate) const PENDING: &str = "CORTEX_STEP_STATUS_PENDING";
pub(crate) const WAITING: &str = "CORTEX_STEP_STATUS_WAITING";

/// A step's status name.
pub(crate) fn status(step: &DynamicMessage) -> String {
    enum_name(step, "status")
}

/// A step's type name.
pub(crate) fn step_type(step: &DynamicMessage) -> String {
    enum_name(step, "type")
}

/// The status names of a step's metadata.internal_metadata.status_transitions.
pub(crate) fn history(step: &DynamicMessage) -> Vec<String> {
    sub(step, "metadata")
        .and_then(|m| sub(m, "internal_metadata"))
        .map(|im| {
            messages(im, "status_transitions")
                .iter()
                .map(|t| enum_name(t, "updated_status"))
                .collect()
        })
        .unwrap_or_default()
}

/// The tool source name recorded in a step's metadata, when set.
pub(crate) fn tool_source(step: &DynamicMessage) -> Option<String> {
    let m = sub(step, "metadata")?;
    has(m, "tool_source").then(|| enum_name(m, "tool_source"))
}

/// The BUILTIN tool source's value name.
pub(crate) const BUILTIN: &str = "TOOL_SOURCE_BUILTIN";

/// A step's metadata.pre_tool_hook_results.
pub(crate) fn hooks(step: &DynamicMessage) -> Vec<DynamicMessage> {
    sub(step, "metadata")
        .map(|m| messages(m, "pre_tool_hook_results"))
        .unwrap_or_default()
}

/// Exactly one pre-tool hook result, `{decision: allow}` and nothing else.
pub(crate) fn single_allow_hook(step: &DynamicMessage) -> bool {
    let h = hooks(step);
    h.len() == 1
        && set_fields(&h[0]) == ["decision"]
        && enum_name(&h[0], "decision") == "DECISION_ALLOW"
}

/// The error's set fields are only short and full error text.
pub(crate) fn only_short_full(err: &DynamicMessage) -> bool {
    extra_field(err, &["short_error", "full_error"]).is_none()
}

/// The tool-call name and parsed arguments of a step's metadata.
pub(crate) fn tool_call(step: &DynamicMessage) -> Option<&DynamicMessage> {
    sub(step, "metadata").and_then(|m| sub(m, "tool_call"))
}

/// The tool call's arguments_json parsed as a JSON object.
pub(crate) fn tool_call_args(
    step: &DynamicMessage,
) -> Option<serde_json::Map<String, serde_json::Value>> {
    let tc = tool_call(step)?;
    match serde_json::from_str::<serde_json::Value>(&text(tc, "arguments_json")) {
        Ok(serde_json::Value::Object(o)) => Some(o),
        _ => None,
    }
}

/// A generic wrapper's arguments: key → JSON-rendered value.
#[derive(Debug, Clone, Default)]
pub(crate) struct Args(pub BTreeMap<String, String>);

impl Args {
    pub fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }

    pub fn has(&self, k: &str) -> bool {
        self.0.contains_key(k)
    }

    pub fn raw(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }

    /// The value parsed as JSON.
    pub fn json(&self, k: &str) -> Option<serde_json::Value> {
        serde_json::from_str(self.raw(k)?).ok()
    }

    /// The value when it is a JSON string.
    pub fn string(&self, k: &str) -> Option<String> {
        match self.json(k)? {
            serde_json::Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The value when it is a canonical decimal (`0` or `[1-9][0-9]*`) within u64.
    pub fn canonical_uint(&self, k: &str) -> Option<u64> {
        canonical_uint(self.raw(k)?)
    }

    /// Exactly these keys.
    pub fn keys_are(&self, keys: &[&str]) -> bool {
        self.0.len() == keys.len() && keys.iter().all(|k| self.has(k))
    }

    /// Every key within `allowed`; the first that is not, if any.
    pub fn extra_key(&self, allowed: &[&str]) -> Option<&str> {
        self.keys().into_iter().find(|k| !allowed.contains(k))
    }

    /// Whether the arguments equal `step`'s metadata tool call (the same keys,
    /// each value the same JSON).
    pub fn repeat_tool_call(&self, step: &DynamicMessage) -> bool {
        let Some(tc) = tool_call_args(step) else {
            return false;
        };
        tc.len() == self.0.len()
            && self
                .0
                .keys()
                .all(|k| matches!((tc.get(k), self.json(k)), (Some(a), Some(b)) if *a == b))
    }
}

/// `s` as a canonical decimal: no sign, no leading zeros, no spaces, fits u64.
pub(crate) fn canonical_uint(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) || (b.len() > 1 && b[0] == b'0') {
        return None;
    }
    s.parse().ok()
}

/// A generic wrapper step, its arguments and its result.
#[derive(Debug, Clone)]
pub(crate) struct Wrapper<'a> {
    pub step: &'a DynamicMessage,
    pub generic: &'a DynamicMessage,
    pub result: Option<&'a DynamicMessage>,
    pub args: Args,
    /// metadata.tool_call.name ("" when unset).
    pub tool: String,
    pub status: String,
    pub error: Option<&'a DynamicMessage>,
}

impl<'a> Wrapper<'a> {
    pub fn new(step: &'a DynamicMessage, generic: &'a DynamicMessage) -> Wrapper<'a> {
        let tool = tool_call(step)
            .map(|tc| text(tc, "name"))
            .unwrap_or_default();
        Wrapper {
            result: sub(generic, "result"),
            args: Args(string_map(generic, "args")),
            status: status(step),
            error: sub(step, "error"),
            step,
            generic,
            tool,
        }
    }

    /// The result's payload Any (type URL, value bytes), when set. The bytes
    /// share the decoded source's buffer.
    pub fn payload(&self) -> Option<(String, Bytes)> {
        let any = sub(self.result?, "payload")?;
        let url = text(any, "type_url");
        let bytes = any
            .get_field_by_name("value")
            .and_then(|v| v.as_bytes().cloned())
            .unwrap_or_default();
        Some((url, bytes))
    }

    /// The first result field outside `allowed` (none without a result).
    pub fn extra_result_field(&self, allowed: &[&str]) -> Option<String> {
        self.result.as_ref().and_then(|r| extra_field(r, allowed))
    }

    /// The first wrapper (Step) field outside `allowed`.
    pub fn extra_step_field(&self, allowed: &[&str]) -> Option<String> {
        extra_field(self.step, allowed)
    }

    /// The first generic field outside `allowed` (`args`, `result`).
    pub fn extra_generic_field(&self, allowed: &[&str]) -> Option<String> {
        extra_field(self.generic, allowed)
    }

    /// Whether the result sets exactly `fields`.
    pub fn wrapper_result_is(&self, fields: &[&str]) -> bool {
        self.result.as_ref().is_some_and(|r| {
            set_fields(r).len() == fields.len() && extra_field(r, fields).is_none()
        })
    }

    /// The result's metadata map.
    pub fn result_metadata(&self) -> BTreeMap<String, String> {
        self.result
            .as_ref()
            .map(|r| string_map(r, "metadata"))
            .unwrap_or_default()
    }

    pub fn metadata(&self) -> Option<&'a DynamicMessage> {
        sub(self.step, "metadata")
    }
}

/// Whether `path` (a Go-style `%q` target) needs no escaping: printable ASCII
/// without `"` or `\`.
pub(crate) fn plain_for_go_quote(s: &str) -> bool {
    s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_decimals() {
        assert_eq!(canonical_uint("0"), Some(0));
        assert_eq!(canonical_uint("120"), Some(120));
        for bad in ["", "00", "012", "+1", "-1", " 1", "1.0", "1e3", "\"1\""] {
            assert_eq!(canonical_uint(bad), None, "{bad}");
        }
    }
}
