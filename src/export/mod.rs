//! Offline exports: a source's trajectory as daemon-style JSON or as a Markdown
//! transcript, produced from the stored source alone. An offline export proves
//! this reader decodes the source; it is not a fresh match with agy's daemon
//! and carries no completeness attestation.

mod maps;
mod markdown;

pub use maps::{daemon_json, sort_map_entries};
pub use markdown::render_markdown;

use crate::source::{source_only, DecodedSource};
use serde_json::{json, Map, Value};

/// Offline export format version.
pub const OFFLINE_VERSION: u32 = 1;

/// The export's `agyReader.offline` record.
pub fn offline_record(src: &DecodedSource) -> Value {
    let mut rec = json!({
        "version": OFFLINE_VERSION,
        "profile": src.profile,
        "sourceDigest": src.source_digest,
        "sourceOnlyFields": source_only::record(&src.source_only),
    });
    if !src.qualified() {
        if let Some(obj) = rec.as_object_mut() {
            obj.insert("complete".into(), Value::Bool(false));
            obj.insert(
                "refusals".into(),
                Value::Array(
                    src.refusals
                        .iter()
                        .map(|r| json!({"class": r.class.id(), "location": r.location, "detail": r.detail}))
                        .collect(),
                ),
            );
        }
    }
    rec
}

/// The JSON export: the presented trajectory (the projection when given, else
/// the persisted one, decoded here when it was not yet) in the daemon's
/// proto3 JSON plus `agyReader`. `None` when the source did not decode at all.
/// Map entries come out in the order [`sort_map_entries`] defines, so the
/// same source always exports the same bytes (the Markdown transcript is
/// rendered from this value).
pub fn export_json(
    src: &DecodedSource,
    presented: Option<&prost_reflect::DynamicMessage>,
) -> Option<Value> {
    let decoded;
    let t = match presented.or(src.trajectory.as_ref()) {
        Some(t) => t,
        None => {
            decoded = src.wire.as_ref()?.decode().ok()?;
            &decoded
        }
    };
    let mut v = daemon_json(t);
    let obj = v.as_object_mut()?;
    let mut reader = Map::new();
    reader.insert("offline".into(), offline_record(src));
    if !src.qualified() {
        reader.insert(
            "unknownFields".into(),
            serde_json::to_value(&src.unknown_fields).unwrap_or(Value::Null),
        );
    }
    obj.insert("agyReader".into(), Value::Object(reader));
    Some(v)
}
