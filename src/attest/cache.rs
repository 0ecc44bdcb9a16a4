//! Sidecars as a shared cache (issue 35 item 3): the one rule `sync` and
//! `watch` apply to whatever already sits at `<uuid>.trajectory.json`.
//!
//! A *trajectory sidecar* is the daemon's trajectory (the bare `trajectory`
//! member of a GetCascadeTrajectory answer) with at most the reader-owned
//! `agyReader` namespace added: the shared sidecar contract of the reference
//! reader and its consumers (public-format-facts §5.1). This reader family
//! treats such a file as its cache:
//!
//! * with a readable attestation (`agyReader.completeness`) it is rechecked
//!   ([`Existing::Attested`]);
//! * without one (another reader wrote it), or with one that does not read
//!   back, it is re-fetched, verified and replaced atomically, its other
//!   `agyReader` members kept ([`Existing::Unattested`],
//!   [`keep_reader_fields`]);
//! * anything else at that path ([`Existing::Foreign`]) is refused and
//!   reported, never overwritten.
//!
//! Stricter readings where the wording is silent: "parses as a trajectory
//! sidecar" means a JSON object whose every member other than `agyReader`
//! is a field of the descriptor set's Trajectory (JSON or proto name) with a
//! JSON type that can spell that field (the values inside are not decoded:
//! what replaces the file is a verified answer, and the question here is
//! only whose file it is), whose `agyReader` (if any) is an object, and
//! whose `cascadeId` is the conversation's own. A file that
//! cannot be read, is not JSON, is a symbolic link or not a regular file, is
//! a `{"trajectory": …}` envelope, or belongs to another conversation is not
//! this conversation's sidecar and is left alone (the reference reader
//! replaces a corrupt sidecar; this one refuses to, as the issue asks).

use crate::attest::{completeness_of, Completeness, NAMESPACE};
use crate::schema::Schema;
use crate::util::atomic::{write_file, WriteError, WriteOptions};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The sidecar path of a source: `<dir>/<stem>.trajectory.json`.
pub fn sidecar_path(source: &Path) -> PathBuf {
    let stem = source
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    source.with_file_name(format!("{stem}.trajectory.json"))
}

/// Why a file at a sidecar path is not this conversation's trajectory
/// sidecar (so it is never overwritten).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotASidecar {
    #[error("a symbolic link")]
    Symlink,
    #[error("not a regular file")]
    NotAFile,
    #[error("cannot be read: {0}")]
    Unreadable(String),
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("not a JSON object")]
    NotAnObject,
    #[error("member `{0}` is neither a Trajectory field nor `agyReader`")]
    UnknownMember(String),
    #[error("`agyReader` is not an object")]
    ReaderNotAnObject,
    #[error("not a Trajectory: {0}")]
    NotATrajectory(String),
    #[error("no `cascadeId` naming its conversation")]
    NoCascadeId,
    #[error("belongs to another conversation ({found}, not {expected})")]
    OtherConversation { found: String, expected: String },
}

/// What sits at a sidecar path.
#[derive(Debug, Clone)]
pub enum Existing {
    /// Nothing.
    Absent,
    /// A trajectory sidecar with this reader family's attestation.
    Attested {
        doc: Value,
        completeness: Box<Completeness>,
    },
    /// A trajectory sidecar without a readable attestation: re-fetched,
    /// verified and replaced, its other `agyReader` members kept.
    Unattested {
        doc: Value,
        /// It had an `agyReader.completeness` that does not read back.
        unreadable_attestation: bool,
    },
    /// Anything else: refused and reported, never overwritten.
    Foreign(NotASidecar),
}

impl Existing {
    /// The document a replacement keeps `agyReader` members from.
    pub fn doc(&self) -> Option<&Value> {
        match self {
            Existing::Attested { doc, .. } | Existing::Unattested { doc, .. } => Some(doc),
            _ => None,
        }
    }
}

/// Classifies the file at `path` for the conversation `cascade` (see the
/// module documentation).
pub fn classify(path: &Path, schema: &Schema, cascade: &str) -> Existing {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Existing::Absent,
        Err(e) => {
            return Existing::Foreign(NotASidecar::Unreadable(crate::util::io_text(&e)));
        }
    };
    if meta.file_type().is_symlink() {
        return Existing::Foreign(NotASidecar::Symlink);
    }
    if !meta.is_file() {
        return Existing::Foreign(NotASidecar::NotAFile);
    }
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => return Existing::Foreign(NotASidecar::Unreadable(crate::util::io_text(&e))),
    };
    classify_bytes(&bytes, schema, cascade)
}

/// [`classify`] of a file's bytes.
pub fn classify_bytes(bytes: &[u8], schema: &Schema, cascade: &str) -> Existing {
    let doc: Value = match serde_json::from_slice(bytes) {
        Ok(d) => d,
        Err(e) => return Existing::Foreign(NotASidecar::NotJson(e.to_string())),
    };
    if let Err(why) = trajectory_sidecar(&doc, schema, cascade) {
        return Existing::Foreign(why);
    }
    let has_record = doc
        .get(NAMESPACE)
        .and_then(|r| r.get("completeness"))
        .is_some();
    match completeness_of(&doc) {
        Some(c) => Existing::Attested {
            doc,
            completeness: Box::new(c),
        },
        None => Existing::Unattested {
            doc,
            unreadable_attestation: has_record,
        },
    }
}

/// Whether `doc` is `cascade`'s trajectory sidecar.
fn trajectory_sidecar(doc: &Value, schema: &Schema, cascade: &str) -> Result<(), NotASidecar> {
    let Value::Object(members) = doc else {
        return Err(NotASidecar::NotAnObject);
    };
    let desc = &schema.names.trajectory;
    for (k, v) in members {
        if k == NAMESPACE {
            if !v.is_object() {
                return Err(NotASidecar::ReaderNotAnObject);
            }
            continue;
        }
        let field = desc
            .get_field_by_json_name(k)
            .or_else(|| desc.get_field_by_name(k))
            .ok_or_else(|| NotASidecar::UnknownMember(k.clone()))?;
        if !json_fits(&field, v) {
            return Err(NotASidecar::NotATrajectory(format!(
                "member `{k}` is not a {}",
                kind_text(&field)
            )));
        }
    }
    let found = members
        .get("cascadeId")
        .or_else(|| members.get("cascade_id"))
        .and_then(Value::as_str)
        .ok_or(NotASidecar::NoCascadeId)?;
    if !found.eq_ignore_ascii_case(cascade) {
        return Err(NotASidecar::OtherConversation {
            found: found.to_string(),
            expected: cascade.to_string(),
        });
    }
    Ok(())
}

/// Whether a top-level member's JSON type can spell its field under the
/// proto3 JSON mapping (`null` as the default; 64-bit integers and
/// non-finite floats as strings; enums by name or number). The values
/// inside are not decoded here: what replaces the file is a verified
/// answer, and the question is only whose file this is.
fn json_fits(field: &prost_reflect::FieldDescriptor, v: &Value) -> bool {
    use prost_reflect::Kind;
    if v.is_null() {
        return true;
    }
    if field.is_list() {
        return v.is_array();
    }
    if field.is_map() {
        return v.is_object();
    }
    match field.kind() {
        Kind::Message(m) => match m.full_name() {
            "google.protobuf.Timestamp"
            | "google.protobuf.Duration"
            | "google.protobuf.FieldMask" => v.is_string(),
            "google.protobuf.Value" => true,
            "google.protobuf.ListValue" => v.is_array(),
            n if n.starts_with("google.protobuf.") && n.ends_with("Value") => !v.is_object(),
            _ => v.is_object(),
        },
        Kind::String | Kind::Bytes => v.is_string(),
        Kind::Bool => v.is_boolean(),
        Kind::Enum(_) => v.is_string() || v.is_number(),
        _ => v.is_number() || v.is_string(),
    }
}

/// The JSON shape a field takes, for messages.
fn kind_text(field: &prost_reflect::FieldDescriptor) -> String {
    if field.is_list() {
        return "list".into();
    }
    match field.kind() {
        prost_reflect::Kind::Message(m) => format!("{} value", m.full_name()),
        k => format!("{k:?} value"),
    }
}

/// `fresh` (a sidecar's bytes as [`crate::attest::sidecar_bytes`] wrote
/// them) with the `agyReader` members of `existing` that `fresh` does not
/// set kept after its own: another reader's (or a later version's) members
/// survive a refresh. `fresh` unchanged when there is nothing to keep.
pub fn keep_reader_fields(fresh: &[u8], existing: Option<&Value>) -> Vec<u8> {
    let Some(old) = existing
        .and_then(|d| d.get(NAMESPACE))
        .and_then(Value::as_object)
        .filter(|o| o.keys().any(|k| k != "completeness"))
    else {
        return fresh.to_vec();
    };
    let Ok(mut doc) = serde_json::from_slice::<Value>(fresh) else {
        return fresh.to_vec();
    };
    let Some(reader) = doc.get_mut(NAMESPACE).and_then(Value::as_object_mut) else {
        return fresh.to_vec();
    };
    let mut added = false;
    for (k, v) in old {
        if k != "completeness" && !reader.contains_key(k) {
            reader.insert(k.clone(), v.clone());
            added = true;
        }
    }
    if !added {
        return fresh.to_vec();
    }
    let mut out = serde_json::to_vec(&doc).unwrap_or_else(|_| fresh.to_vec());
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    out
}

/// What [`write_sidecar`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// A new file.
    Created,
    /// The previous sidecar replaced.
    Replaced,
    /// Equal bytes: nothing written (the mode tightened to 0600).
    Unchanged,
}

/// Writes a sidecar atomically (temp, fsync, rename; mode 0600), never onto
/// one of `protected` (the source, its companions, the command's inputs);
/// equal bytes are a no-op apart from tightening the mode to 0600.
pub fn write_sidecar(
    path: &Path,
    bytes: &[u8],
    protected: Vec<PathBuf>,
) -> Result<Written, WriteError> {
    let existed = match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => {
            if std::fs::read(path).is_ok_and(|old| old == bytes) {
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    if m.permissions().mode() & 0o777 != 0o600 {
                        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                            .map_err(|source| WriteError::Io {
                                path: path.to_path_buf(),
                                source,
                            })?;
                    }
                }
                return Ok(Written::Unchanged);
            }
            true
        }
        _ => false,
    };
    write_file(
        path,
        bytes,
        &WriteOptions {
            force: true,
            mode: Some(0o600),
            protected,
        },
    )?;
    Ok(if existed {
        Written::Replaced
    } else {
        Written::Created
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ID: &str = "5f0c7a1e-2b3d-4c5e-8f90-a1b2c3d4e5f6";

    fn classify_value(v: &Value) -> Existing {
        let s = Schema::modeled().unwrap();
        classify_bytes(&serde_json::to_vec(v).unwrap(), &s, ID)
    }

    #[test]
    fn trajectory_sidecars_are_the_cache_and_anything_else_is_foreign() {
        let bare = json!({"cascadeId": ID, "trajectoryId": "t", "steps": []});
        assert!(matches!(
            classify_value(&bare),
            Existing::Unattested {
                unreadable_attestation: false,
                ..
            }
        ));
        let other = json!({"cascadeId": ID, "agyReader": {"parentCascadeId": "x"}});
        assert!(matches!(
            classify_value(&other),
            Existing::Unattested { .. }
        ));
        let bad_record = json!({"cascadeId": ID, "agyReader": {"completeness": {"x": 1}}});
        assert!(matches!(
            classify_value(&bad_record),
            Existing::Unattested {
                unreadable_attestation: true,
                ..
            }
        ));
        let s = Schema::modeled().unwrap();
        for (v, want) in [
            (json!([1]), "not a JSON object"),
            (
                json!({"trajectory": {"cascadeId": ID}}),
                "member `trajectory`",
            ),
            (json!({"cascadeId": ID, "agyReader": 1}), "not an object"),
            (
                json!({"cascadeId": ID, "steps": "x"}),
                "`steps` is not a list",
            ),
            (
                json!({"cascadeId": ID, "metadata": 1}),
                "`metadata` is not a",
            ),
            (json!({"steps": []}), "no `cascadeId`"),
            (json!({"cascadeId": "other"}), "another conversation"),
            (json!({"cascadeId": ID, "notes": "mine"}), "member `notes`"),
        ] {
            match classify_bytes(&serde_json::to_vec(&v).unwrap(), &s, ID) {
                Existing::Foreign(why) => assert!(why.to_string().contains(want), "{v}: {why}"),
                e => panic!("{v}: {e:?}"),
            }
        }
        assert!(matches!(
            classify_bytes(b"my notes", &s, ID),
            Existing::Foreign(NotASidecar::NotJson(_))
        ));
    }

    #[test]
    fn a_refresh_keeps_the_other_reader_members() {
        let fresh =
            b"{\"cascadeId\":\"c\",\"agyReader\":{\"completeness\":{\"verdict\":\"verified\"}}}\n";
        let old: Value = serde_json::from_str(
            r#"{"agyReader": {"completeness": {"old": 1}, "parentCascadeId": "p", "x": [1.50]}}"#,
        )
        .unwrap();
        let out = keep_reader_fields(fresh, Some(&old));
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["agyReader"]["completeness"]["verdict"], "verified");
        assert_eq!(v["agyReader"]["parentCascadeId"], "p");
        assert!(String::from_utf8_lossy(&out).contains("[1.50]"));
        assert!(out.ends_with(b"\n"));
        assert_eq!(keep_reader_fields(fresh, None), fresh.to_vec());
        let only_record = json!({"agyReader": {"completeness": {}}});
        assert_eq!(
            keep_reader_fields(fresh, Some(&only_record)),
            fresh.to_vec()
        );
    }

    #[test]
    fn equal_bytes_are_a_no_op() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.trajectory.json");
        assert_eq!(write_sidecar(&p, b"x\n", vec![]).unwrap(), Written::Created);
        assert_eq!(
            write_sidecar(&p, b"x\n", vec![]).unwrap(),
            Written::Unchanged
        );
        assert_eq!(
            write_sidecar(&p, b"y\n", vec![]).unwrap(),
            Written::Replaced
        );
    }
}
