//! Building messages by name: proto3 JSON in, canonical wire bytes out, and
//! the daemon's JSON back out with map keys in a stable order.

use super::wire::{self, WireError};
use super::CorpusError;
use crate::schema::Schema;
use prost::Message;
use prost_reflect::{DynamicMessage, Kind, MessageDescriptor, ReflectMessage};
use serde_json::Value;

/// The schema plus the lookups the generator needs.
#[derive(Debug, Clone)]
pub struct Builder {
    /// The modeled (or a user-supplied) schema.
    pub schema: Schema,
}

impl Builder {
    /// Wraps a loaded schema.
    pub fn new(schema: Schema) -> Builder {
        Builder { schema }
    }

    /// A message descriptor by full name.
    pub fn desc(&self, name: &str) -> Result<MessageDescriptor, CorpusError> {
        self.schema
            .pool
            .get_message_by_name(name)
            .ok_or_else(|| CorpusError::Schema(format!("no message {name}")))
    }

    /// A field number by message and field name.
    pub fn num(&self, message: &str, field: &str) -> Result<u32, CorpusError> {
        self.desc(message)?
            .get_field_by_name(field)
            .map(|f| f.number())
            .ok_or_else(|| CorpusError::Schema(format!("no field {message}.{field}")))
    }

    /// A path of (field number, occurrence 0) pairs from field names,
    /// starting at message `root`.
    pub fn path(&self, root: &str, names: &[&str]) -> Result<Vec<(u32, usize)>, CorpusError> {
        self.path_n(root, &names.iter().map(|n| (*n, 0)).collect::<Vec<_>>())
    }

    /// Like [`Builder::path`] with explicit occurrences.
    pub fn path_n(
        &self,
        root: &str,
        names: &[(&str, usize)],
    ) -> Result<Vec<(u32, usize)>, CorpusError> {
        let mut desc = self.desc(root)?;
        let mut out = Vec::with_capacity(names.len());
        for (name, nth) in names {
            let f = desc.get_field_by_name(name).ok_or_else(|| {
                CorpusError::Schema(format!("no field {}.{name}", desc.full_name()))
            })?;
            out.push((f.number(), *nth));
            if let Kind::Message(m) = f.kind() {
                desc = m;
            }
        }
        Ok(out)
    }

    /// A message of type `name` from its proto3 JSON.
    pub fn message(&self, name: &str, json: Value) -> Result<DynamicMessage, CorpusError> {
        let desc = self.desc(name)?;
        DynamicMessage::deserialize(desc, json)
            .map_err(|e| CorpusError::Build(format!("{name}: {e}")))
    }

    /// The canonical encoding of a message of type `name` given as proto3 JSON.
    pub fn encode(&self, name: &str, json: Value) -> Result<Vec<u8>, CorpusError> {
        let m = self.message(name, json)?;
        self.encode_msg(&m)
    }

    /// The canonical encoding of `m` (map entries sorted by key).
    pub fn encode_msg(&self, m: &DynamicMessage) -> Result<Vec<u8>, CorpusError> {
        let raw = m.encode_to_vec();
        Ok(wire::canonicalize(&m.descriptor(), &raw)?)
    }

    /// Decodes `bytes` as `name` and renders the daemon's JSON with stable map order.
    pub fn daemon_json(&self, name: &str, bytes: &[u8]) -> Result<Value, CorpusError> {
        let desc = self.desc(name)?;
        let m = DynamicMessage::decode(desc.clone(), bytes)
            .map_err(|e| CorpusError::Build(format!("decode {name}: {e}")))?;
        let mut v = crate::schema::to_daemon_json(&m);
        sort_maps(&mut v, &desc);
        Ok(v)
    }
}

impl From<WireError> for CorpusError {
    fn from(e: WireError) -> Self {
        CorpusError::Build(e.to_string())
    }
}

/// Sorts the keys of every JSON object that renders a protobuf map (map order
/// is a `HashMap`'s in prost-reflect), leaving message field order alone.
pub fn sort_maps(v: &mut Value, desc: &MessageDescriptor) {
    let Value::Object(obj) = v else {
        return;
    };
    if desc.full_name() == "google.protobuf.Any" {
        let inner = obj
            .get("@type")
            .and_then(Value::as_str)
            .and_then(|t| t.rsplit('/').next())
            .and_then(|n| desc.parent_pool().get_message_by_name(n));
        if let Some(inner) = inner {
            if !inner.full_name().starts_with("google.protobuf.") {
                sort_maps(v, &inner);
            }
        }
        return;
    }
    for field in desc.fields() {
        let Some(child) = obj.get_mut(field.json_name()) else {
            continue;
        };
        if field.is_map() {
            let value_kind = match field.kind() {
                Kind::Message(entry) => entry.map_entry_value_field().kind(),
                other => other,
            };
            if let Value::Object(m) = child {
                m.sort_keys();
                if let Kind::Message(vm) = value_kind {
                    for (_, x) in m.iter_mut() {
                        sort_maps(x, &vm);
                    }
                }
            }
        } else if let Kind::Message(m) = field.kind() {
            match child {
                Value::Array(items) => {
                    for x in items {
                        sort_maps(x, &m);
                    }
                }
                other => sort_maps(other, &m),
            }
        }
    }
}
