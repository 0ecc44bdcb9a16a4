//! Stage 5b: verdicts, digests and attestations.
//!
//! * **Payload digest**: `sha256:` of the canonical JSON (object keys sorted,
//!   no whitespace, numbers exactly as received) of the ordinary RPC
//!   trajectory minus the reader-owned `agyReader` namespace. Unknown
//!   RPC-only fields stay in it.
//! * **Sidecar** `<uuid>.trajectory.json`: the ordinary trajectory plus
//!   `agyReader {completeness {profile, sourceDigest, payloadDigest, verdict,
//!   reason, sourceOnly, verifiedAt}, parentCascadeId}`, written atomically,
//!   mode 0600 (agentsview reads the trajectory and ignores `agyReader`).

pub mod cache;
mod canonical;
pub mod payload;
pub mod recheck;

pub use canonical::{canonical_json, canonical_json_without};

use crate::source::source_only::SourceOnlyEntry;
use crate::verdict::{ReasonClass, VerdictKind};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

pub use crate::outcome::SOURCE_ONLY_REASON;

/// The reader-owned top-level key.
pub const NAMESPACE: &str = "agyReader";

/// `sha256:` of the canonical JSON of `trajectory` without `agyReader`.
pub fn payload_digest(trajectory: &Value) -> String {
    let mut h = Sha256::new();
    h.update(canonical_json_without(trajectory, Some(NAMESPACE)));
    format!("sha256:{}", crate::util::hex(&h.finalize()))
}

/// The completeness record of one conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completeness {
    pub profile: String,
    pub source_digest: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload_digest: Option<String>,
    pub verdict: VerdictKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason_class: Option<ReasonClass>,
    /// The declared source-only fields, typed until written (an entry
    /// that does not read back makes the attestation unreadable, never
    /// silently shorter).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_only: Vec<SourceOnlyEntry>,
    /// The paths of the ordinary response's members the schema does not
    /// know (RPC-only presentation, kept in the payload and its digest).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rpc_only_fields: Vec<String>,
    /// How many more such members there were past the listed ones.
    #[serde(default, skip_serializing_if = "crate::util::is_zero")]
    pub rpc_only_fields_unlisted: usize,
    pub verified_at: String,
}

/// The sidecar document: the ordinary trajectory plus `agyReader`.
pub fn sidecar(ordinary: &Value, completeness: &Completeness) -> Value {
    let mut doc = match ordinary {
        Value::Object(o) => o.clone(),
        _ => Map::new(),
    };
    doc.insert(NAMESPACE.into(), reader_record(ordinary, completeness));
    Value::Object(doc)
}

/// The `agyReader` member: the completeness record and the parent cascade
/// (`tree::links::parent_cascade_id`: the metadata's parent when it is a
/// bare UUID; an invalid one is never stamped).
fn reader_record(ordinary: &Value, completeness: &Completeness) -> Value {
    reader_record_with(
        crate::tree::links::parent_cascade_id(ordinary),
        completeness,
    )
}

/// [`reader_record`] with the parent already read.
fn reader_record_with(parent: Option<String>, completeness: &Completeness) -> Value {
    let mut reader = Map::new();
    reader.insert(
        "completeness".into(),
        serde_json::to_value(completeness).unwrap_or(Value::Null),
    );
    if let Some(parent) = parent {
        reader.insert(
            crate::tree::links::PARENT_STAMP.into(),
            Value::String(parent),
        );
    }
    Value::Object(reader)
}

/// The bytes of [`sidecar`]'s document (then a newline), written straight
/// from `ordinary` without copying it: the same keys in the same order, an
/// `agyReader` already there replaced in place, else appended.
pub fn sidecar_bytes(ordinary: &Value, completeness: &Completeness) -> Vec<u8> {
    let empty = Map::new();
    let doc = Doc {
        ordinary: ordinary.as_object().unwrap_or(&empty),
        reader: reader_record(ordinary, completeness),
    };
    let mut out = serde_json::to_vec(&doc).unwrap_or_default();
    out.push(b'\n');
    out
}

/// The sidecar document as a map over a borrowed trajectory.
struct Doc<'a> {
    ordinary: &'a Map<String, Value>,
    reader: Value,
}

impl Serialize for Doc<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let replaces = self.ordinary.contains_key(NAMESPACE);
        let mut m = s.serialize_map(Some(self.ordinary.len() + usize::from(!replaces)))?;
        for (k, v) in self.ordinary {
            if k == NAMESPACE {
                m.serialize_entry(k, &self.reader)?;
            } else {
                m.serialize_entry(k, v)?;
            }
        }
        if !replaces {
            m.serialize_entry(NAMESPACE, &self.reader)?;
        }
        m.end()
    }
}

/// Reads the completeness record back from a sidecar document.
pub fn completeness_of(doc: &Value) -> Option<Completeness> {
    serde_json::from_value(doc.get(NAMESPACE)?.get("completeness")?.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn payload_digest_ignores_key_order_and_the_reader_namespace_but_keeps_exact_numbers() {
        let a: Value = serde_json::from_str(r#"{"b":1.0,"a":{"y":[1,2],"x":"s"}}"#).unwrap();
        let b: Value =
            serde_json::from_str(r#"{"a":{"x":"s","y":[1,2]},"b":1.0,"agyReader":{"z":1}}"#)
                .unwrap();
        let c: Value = serde_json::from_str(r#"{"a":{"x":"s","y":[1,2]},"b":1}"#).unwrap();
        assert_eq!(payload_digest(&a), payload_digest(&b));
        assert_ne!(
            payload_digest(&a),
            payload_digest(&c),
            "exact numbers: 1.0 is not 1"
        );
    }

    /// A verified session's completeness record (the attest tests' fixture).
    pub(super) fn completeness() -> Completeness {
        Completeness {
            profile: "p".into(),
            source_digest: "sha256:1".into(),
            payload_digest: Some("sha256:2".into()),
            verdict: VerdictKind::Verified,
            reason: None,
            reason_class: None,
            source_only: vec![],
            rpc_only_fields: vec![],
            rpc_only_fields_unlisted: 0,
            verified_at: "2026-12-02T00:00:00Z".into(),
        }
    }

    #[test]
    fn sidecar_carries_completeness_and_parent() {
        let ord = json!({"cascadeId": "c", "metadata": {"parentConversationId": "0B6B2F0E-1C1D-4A7E-9A5E-0D6F3F1F2A01"}});
        let c = completeness();
        let doc = sidecar(&ord, &c);
        for o in [
            ord.clone(),
            json!({"z": 1, "agyReader": {"old": true}, "a": [1.50, "é\n"]}),
            json!({"metadata": {"parentConversationId": "X"}, "b": null}),
            json!([1, 2]),
        ] {
            let mut want = serde_json::to_vec(&sidecar(&o, &c)).unwrap();
            want.push(b'\n');
            assert_eq!(sidecar_bytes(&o, &c), want, "{o}");
        }
        assert_eq!(
            doc["agyReader"]["parentCascadeId"],
            "0b6b2f0e-1c1d-4a7e-9a5e-0d6f3f1f2a01"
        );
        assert_eq!(completeness_of(&doc), Some(c));
        assert_eq!(doc["cascadeId"], "c");
    }
}
