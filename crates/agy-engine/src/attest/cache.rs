//! Sidecars as a shared cache (issue 35 item 3): the one rule `sync`,
//! `watch`, `doctor` and `list` apply to whatever already sits at
//! `<uuid>.trajectory.json`, and the one strict reader of its bytes.
//!
//! A *trajectory sidecar* is the daemon's trajectory (the bare `trajectory`
//! member of a GetCascadeTrajectory answer) with at most the reader-owned
//! `agyReader` namespace added: the shared sidecar contract of the reference
//! reader and its consumers (public-format-facts §5.1). This reader family
//! treats such a file as its cache.
//!
//! **The strict read** ([`read_saved`]). The saved bytes are read as strictly
//! as a daemon answer is read before its payload digest is taken: UTF-8, one
//! JSON object by [`crate::util::json_walk`] (syntax, numbers as that reader
//! and `serde_json` read them and kept exactly as written, a lone surrogate
//! escape refused, nesting bounded by [`crate::util::json_walk::MAX_DEPTH`]),
//! and no key repeated in any object, the `agyReader` namespace included.
//! The payload digest is taken in the same pass over exactly those bytes
//! ([`crate::attest::payload::read_saved`], the digest input the sweep
//! computes from an answer), never from a tree that keeps the last of a
//! repeated member. Bytes that do not read strictly carry their
//! [`SidecarDefect`], and no attestation in them ever rechecks.
//!
//! **Whose file it is** (ownership by attestation):
//!
//! * a file whose `agyReader.completeness` attestation reads back and whose
//!   `cascadeId` names this conversation is this reader family's own
//!   ([`Existing::Attested`]): it is rechecked, and when that fails (a
//!   defect of its bytes included) re-fetched, verified and replaced,
//!   whatever RPC-only top-level members it holds (the comparison keeps an
//!   ordinary member the schema does not know in the payload, so the
//!   reader writes such files itself). Ownership is read from the document
//!   as `serde_json` reads it, so that a file of ours with a repeated member
//!   is still ours to refresh; what it attests is judged only from the
//!   strict read;
//! * a file without a readable attestation (another reader's, or one whose
//!   `agyReader.completeness` does not read back) is refreshed only when it
//!   reads strictly and parses as a trajectory sidecar
//!   ([`Existing::Unattested`]), its other `agyReader` members kept
//!   ([`keep_reader_fields`]);
//! * anything else at that path ([`Existing::Foreign`]) is refused and
//!   reported, never overwritten.
//!
//! Stricter readings where the wording is silent: "parses as a trajectory
//! sidecar" (for files without a readable attestation) means a JSON object,
//! read strictly, whose every member other than `agyReader` is a field of
//! the descriptor set's Trajectory (JSON or proto name) with a JSON type that
//! can spell that field (the values inside are not decoded: what replaces
//! the file is a verified answer, and the question here is only whose file
//! it is), whose `agyReader` (if any) is an object, and whose `cascadeId` is
//! the conversation's own. A file that cannot be read, is not JSON, is a
//! symbolic link or not a regular file, is a `{"trajectory": …}` envelope
//! (its `cascadeId` is not at the top level), or belongs to another
//! conversation (attested or not) is not this conversation's sidecar and is
//! left alone (the reference reader replaces a corrupt sidecar; this one
//! refuses to, as the issue asks).

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
    /// Larger than the sidecar cap ([`sidecar_cap`]): not read at all.
    #[error("{size} bytes, larger than {cap}, the most a sidecar is read at (the response cap `--max-response-bytes` plus 16 MiB)")]
    TooLarge { size: u64, cap: u64 },
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("no attestation, and it does not read strictly: {0}")]
    NotStrict(SidecarDefect),
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

/// Why a saved sidecar's bytes do not read as strictly as a daemon answer
/// (see the module documentation): its attestation never rechecks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SidecarDefect {
    #[error("not UTF-8 (byte {offset})")]
    NotUtf8 { offset: usize },
    /// The strict reader's stop: bad syntax, a lone surrogate escape,
    /// nesting too deep, a key repeated in one object
    /// ([`crate::util::json_walk::REPEATED_KEY`]), a top level that is not
    /// an object; `offset` is where the reader was.
    #[error("byte {offset}: {rule}")]
    NotStrict { offset: usize, rule: &'static str },
}

/// This reader family's own sidecar: its attestation, and the payload digest
/// of exactly the bytes the strict read read (or why they do not read).
#[derive(Debug, Clone)]
pub struct Saved {
    /// The document as `serde_json` reads it (its `agyReader` members are
    /// kept by a refresh).
    pub doc: Value,
    pub completeness: Completeness,
    /// `sha256:` of the payload as read strictly, or the defect.
    pub payload: Result<String, SidecarDefect>,
}

/// What sits at a sidecar path.
#[derive(Debug, Clone)]
pub enum Existing {
    /// Nothing.
    Absent,
    /// This reader family's own sidecar (an attestation that reads back,
    /// naming this conversation): rechecked, refreshed when stale.
    Attested(Box<Saved>),
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
            Existing::Attested(saved) => Some(&saved.doc),
            Existing::Unattested { doc, .. } => Some(doc),
            _ => None,
        }
    }
}

/// The room a sidecar has beyond the response it was written from: the
/// `agyReader` record (a sidecar is the answer's trajectory member,
/// written compact, plus that record).
const SIDECAR_MARGIN: u64 = 16 << 20;

/// The most bytes a sidecar is read at, under the response cap `max_body`
/// (`--max-response-bytes`): at least the response cap, so the tool never
/// refuses (and refetches forever) a sidecar it wrote itself; a larger file
/// is not read at all (issue 45 item 1) and is left alone.
pub fn sidecar_cap(max_body: u64) -> u64 {
    max_body.saturating_add(SIDECAR_MARGIN)
}

/// The bytes of the regular file at `path`, at most `cap`: `None` when
/// nothing is there; a symbolic link, anything but a regular file, a file
/// larger than `cap` or a read error is not a sidecar.
fn regular_file(path: &Path, cap: u64) -> Result<Option<Vec<u8>>, NotASidecar> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(NotASidecar::Unreadable(crate::util::io_text(&e))),
    };
    if meta.file_type().is_symlink() {
        return Err(NotASidecar::Symlink);
    }
    if !meta.is_file() {
        return Err(NotASidecar::NotAFile);
    }
    if meta.len() > cap {
        return Err(NotASidecar::TooLarge {
            size: meta.len(),
            cap,
        });
    }
    use crate::util::bounded::{read_capped, BoundedReadError, InputKind};
    match read_capped(path, InputKind::Sidecar, cap) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(BoundedReadError::NotAFile { .. }) => Err(NotASidecar::NotAFile),
        Err(BoundedReadError::TooLarge { cap, .. }) => Err(NotASidecar::TooLarge {
            size: cap.saturating_add(1),
            cap,
        }),
        Err(BoundedReadError::Io { source, .. }) => {
            Err(NotASidecar::Unreadable(crate::util::io_text(&source)))
        }
    }
}

/// Classifies the file at `path` for the conversation `cascade` (see the
/// module documentation), read at most `cap` bytes ([`sidecar_cap`]).
pub fn classify(path: &Path, schema: &Schema, cascade: &str, cap: u64) -> Existing {
    match regular_file(path, cap) {
        Ok(Some(bytes)) => classify_bytes(&bytes, schema, cascade),
        Ok(None) => Existing::Absent,
        Err(why) => Existing::Foreign(why),
    }
}

/// This reader family's own sidecar at `path` for `cascade`, when that is
/// what sits there: the ownership half of [`classify`], which needs no
/// schema (`list`'s state column), read at most `cap` bytes
/// ([`sidecar_cap`]).
pub fn attested_at(path: &Path, cascade: &str, cap: u64) -> Option<Box<Saved>> {
    match read_saved(&regular_file(path, cap).ok()??, cascade) {
        Reading::Own(saved) => Some(saved),
        _ => None,
    }
}

/// Why what sits at `path` cannot even be read as a sidecar (a link, a
/// FIFO or anything but a regular file, a file past `cap`, a read error):
/// `None` when nothing is there or its bytes read (whatever they hold).
pub fn unreadable_at(path: &Path, cap: u64) -> Option<NotASidecar> {
    regular_file(path, cap).err()
}

/// [`classify`] of a file's bytes.
pub fn classify_bytes(bytes: &[u8], schema: &Schema, cascade: &str) -> Existing {
    match read_saved(bytes, cascade) {
        Reading::Own(saved) => Existing::Attested(saved),
        Reading::Foreign(why) => Existing::Foreign(why),
        Reading::Other {
            doc,
            strict,
            unreadable_attestation,
        } => {
            match trajectory_sidecar(&doc, schema, cascade)
                .and(strict.map_err(NotASidecar::NotStrict))
            {
                Ok(()) => Existing::Unattested {
                    doc,
                    unreadable_attestation,
                },
                Err(why) => Existing::Foreign(why),
            }
        }
    }
}

/// A sidecar's bytes read strictly, and whose they are by their attestation.
enum Reading {
    /// An attestation that reads back, in a file naming `cascade`.
    Own(Box<Saved>),
    /// No readable attestation: the member test decides.
    Other {
        doc: Value,
        strict: Result<(), SidecarDefect>,
        unreadable_attestation: bool,
    },
    /// Not JSON, or an attested file that does not name `cascade`.
    Foreign(NotASidecar),
}

/// The one strict read of a saved sidecar (see the module documentation).
fn read_saved(bytes: &[u8], cascade: &str) -> Reading {
    let strict = match std::str::from_utf8(bytes) {
        Ok(text) => crate::attest::payload::read_saved(text)
            .map(|read| read.digest().to_string())
            .map_err(|e| SidecarDefect::NotStrict {
                offset: e.offset,
                rule: e.rule,
            }),
        Err(e) => Err(SidecarDefect::NotUtf8 {
            offset: e.valid_up_to(),
        }),
    };
    // The tree, for whose file it is and what it attests; when the strict
    // read failed, as `serde_json` reads it (the last of a repeated member).
    let doc: Value = match serde_json::from_slice(bytes) {
        Ok(d) => d,
        Err(e) => return Reading::Foreign(NotASidecar::NotJson(e.to_string())),
    };
    let has_record = doc
        .get(NAMESPACE)
        .and_then(|r| r.get("completeness"))
        .is_some();
    let Some(completeness) = completeness_of(&doc) else {
        return Reading::Other {
            doc,
            strict: strict.map(|_| ()),
            unreadable_attestation: has_record,
        };
    };
    if let Err(why) = names_conversation(&doc, cascade) {
        return Reading::Foreign(why);
    }
    Reading::Own(Box::new(Saved {
        doc,
        completeness,
        payload: strict,
    }))
}

/// Whether the top-level `cascadeId` (JSON or proto name) of `doc` is
/// `cascade` (in any letter case).
fn names_conversation(doc: &Value, cascade: &str) -> Result<(), NotASidecar> {
    let found = doc
        .get("cascadeId")
        .or_else(|| doc.get("cascade_id"))
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

/// Whether `doc` (a file without a readable attestation) is `cascade`'s
/// trajectory sidecar.
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
    names_conversation(doc, cascade)
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
            // equal bytes have equal lengths: a file of another length is
            // never read to be compared
            let same = m.len() == bytes.len() as u64
                && crate::util::bounded::read_capped(
                    path,
                    crate::util::bounded::InputKind::Sidecar,
                    bytes.len() as u64,
                )
                .is_ok_and(|old| old == bytes);
            if same {
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

    fn completeness(payload_digest: String) -> Completeness {
        Completeness {
            profile: "p".into(),
            source_digest: "sha256:1".into(),
            payload_digest: Some(payload_digest),
            verdict: crate::verdict::VerdictKind::Verified,
            reason: None,
            reason_class: None,
            source_only: vec![],
            rpc_only_fields: vec!["displayDensity".into()],
            rpc_only_fields_unlisted: 0,
            verified_at: "2026-12-02T00:00:00Z".into(),
        }
    }

    /// A sidecar as the reader writes it from `ordinary`'s text, and its
    /// attested digest.
    fn minted(ordinary: &str) -> (String, String) {
        let read = crate::attest::payload::read(ordinary).unwrap();
        let digest = read.digest().to_string();
        let (bytes, _) = read.into_evidence(&completeness(digest.clone()));
        (String::from_utf8(bytes).unwrap(), digest)
    }

    fn saved_of(bytes: &[u8]) -> Saved {
        let s = Schema::modeled().unwrap();
        match classify_bytes(bytes, &s, ID) {
            Existing::Attested(saved) => *saved,
            e => panic!("{}: {e:?}", String::from_utf8_lossy(bytes)),
        }
    }

    /// An attestation that reads back, in a file naming this conversation,
    /// makes the file the reader's own whatever RPC-only top-level members
    /// it holds; the member test is for files without one.
    #[test]
    fn ownership_is_decided_by_the_attestation() {
        let ordinary = format!(
            r#"{{"cascadeId":"{ID}","steps":[{{"status":"CORTEX_STEP_STATUS_DONE","n":1.50}}],"displayDensity":"COMPACT"}}"#
        );
        let (side, digest) = minted(&ordinary);
        let saved = saved_of(side.as_bytes());
        assert_eq!(saved.payload, Ok(digest.clone()), "an honest sidecar");
        assert_eq!(saved.completeness.payload_digest, Some(digest));
        // the same file without the attestation: another reader's, judged by
        // its members
        let s = Schema::modeled().unwrap();
        let mut doc: Value = serde_json::from_str(&side).unwrap();
        doc.as_object_mut().unwrap().remove(NAMESPACE);
        match classify_bytes(&serde_json::to_vec(&doc).unwrap(), &s, ID) {
            Existing::Foreign(NotASidecar::UnknownMember(m)) => assert_eq!(m, "displayDensity"),
            e => panic!("{e:?}"),
        }
        // attested, but another conversation's, or an envelope (no
        // top-level cascadeId): left alone
        let other = side.replace(ID, "0b6b2f0e-1c1d-4a7e-9a5e-0d6f3f1f2a01");
        assert!(matches!(
            classify_bytes(other.as_bytes(), &s, ID),
            Existing::Foreign(NotASidecar::OtherConversation { .. })
        ));
        let mut envelope: Value = serde_json::from_str(&side).unwrap();
        let reader = envelope.as_object_mut().unwrap().remove(NAMESPACE).unwrap();
        let envelope = json!({"trajectory": envelope, NAMESPACE: reader});
        assert!(matches!(
            classify_bytes(&serde_json::to_vec(&envelope).unwrap(), &s, ID),
            Existing::Foreign(NotASidecar::NoCascadeId)
        ));
        // the cascade id in another letter case is this conversation's
        let upper = side.replace(ID, &ID.to_uppercase());
        assert!(saved_of(upper.as_bytes()).payload.is_ok());
    }

    /// The saved bytes are read as strictly as a daemon answer: a repeated
    /// member anywhere (a step, the top level, `agyReader`) leaves the file
    /// the reader's own (refreshable) with no payload digest, whatever the
    /// tree (last member wins) would say; exact numbers are digested as
    /// written; what `serde_json` cannot read either is not a sidecar.
    #[test]
    fn the_saved_payload_is_read_strictly() {
        let ordinary = format!(
            r#"{{"cascadeId":"{ID}","trajectoryId":"t","steps":[{{"status":"CORTEX_STEP_STATUS_DONE","n":1.50}}]}}"#
        );
        let (side, digest) = minted(&ordinary);
        assert_eq!(saved_of(side.as_bytes()).payload, Ok(digest.clone()));
        let insert = |before: &str, extra: &str| {
            let at = side.find(before).unwrap();
            format!("{}{extra}{}", &side[..at], &side[at..])
        };
        for tampered in [
            insert(
                r#""status":"CORTEX_STEP_STATUS_DONE""#,
                r#""status":"CORTEX_STEP_STATUS_ERROR","#,
            ),
            insert(r#""trajectoryId":"t""#, r#""trajectoryId":"u","#),
            insert(r#""verdict":"verified""#, r#""verdict":"incomplete","#),
            insert(r#""agyReader":"#, r#""agyReader":{},"#),
        ] {
            let saved = saved_of(tampered.as_bytes());
            match &saved.payload {
                Err(SidecarDefect::NotStrict { offset, rule }) => {
                    assert_eq!(*rule, crate::util::json_walk::REPEATED_KEY, "{tampered}");
                    assert!(*offset > 0, "{tampered}");
                }
                other => panic!("{tampered}: {other:?}"),
            }
        }
        // the tree keeps the last status: the same digest a lenient read gave
        let last_wins: Value = serde_json::from_str(&insert(
            r#""status":"CORTEX_STEP_STATUS_DONE""#,
            r#""status":"CORTEX_STEP_STATUS_ERROR","#,
        ))
        .unwrap();
        assert_eq!(crate::attest::payload_digest(&last_wins), digest);
        // a number respelled is another payload
        let respelled = side.replace("1.50", "1.5");
        let saved = saved_of(respelled.as_bytes());
        assert!(matches!(&saved.payload, Ok(d) if *d != digest));
        // not UTF-8, a lone surrogate, too deep, bad numbers: not JSON at all
        let s = Schema::modeled().unwrap();
        let deep = side.replace(
            r#""n":1.50"#,
            &format!(r#""n":{}1{}"#, "[".repeat(130), "]".repeat(130)),
        );
        for bad in [
            {
                let mut b = side.clone().into_bytes();
                let at = side.find("\"t\"").unwrap() + 1;
                b[at] = 0xff;
                b
            },
            side.replace("\"t\"", r#""\ud800""#).into_bytes(),
            deep.into_bytes(),
            side.replace("1.50", "01.50").into_bytes(),
            side.replace("1.50", "1.").into_bytes(),
            side.replace("1.50", "NaN").into_bytes(),
        ] {
            match classify_bytes(&bad, &s, ID) {
                Existing::Foreign(NotASidecar::NotJson(_)) => {}
                e => panic!("{}: {e:?}", String::from_utf8_lossy(&bad)),
            }
        }
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

    /// A replacement keeps `agyReader` members from the document it
    /// replaces: the reader's own (attested) sidecar or an unattested
    /// trajectory sidecar; nothing else has a document to keep from.
    #[test]
    fn a_replacement_keeps_members_only_of_an_own_or_trajectory_sidecar() {
        let (side, _) = minted(&format!(r#"{{"cascadeId":"{ID}","steps":[]}}"#));
        let doc: Value = serde_json::from_str(&side).unwrap();
        let s = Schema::modeled().unwrap();
        let own = classify_bytes(side.as_bytes(), &s, ID);
        assert!(matches!(own, Existing::Attested(_)), "{own:?}");
        assert_eq!(own.doc(), Some(&doc));
        let bare = json!({"cascadeId": ID, "agyReader": {"parentCascadeId": "p"}});
        let unattested = classify_value(&bare);
        assert!(
            matches!(unattested, Existing::Unattested { .. }),
            "{unattested:?}"
        );
        assert_eq!(unattested.doc(), Some(&bare));
        assert_eq!(Existing::Absent.doc(), None);
        assert_eq!(classify_value(&json!([1])).doc(), None);
    }

    /// What sits at the path decides first: nothing there is `Absent`, a
    /// regular file is judged by its bytes, and a link, a folder or a path
    /// that cannot be looked up is not a sidecar (and never the reader's own).
    #[cfg(unix)]
    #[test]
    fn only_a_regular_file_is_read() {
        use crate::util::bounded::InputKind;
        const CAP: u64 = 1 << 20;
        let s = Schema::modeled().unwrap();
        let d = tempfile::tempdir().unwrap();
        let (side, digest) = minted(&format!(r#"{{"cascadeId":"{ID}","steps":[]}}"#));
        let file = d.path().join("a.trajectory.json");
        std::fs::write(&file, &side).unwrap();
        assert!(matches!(
            classify(&file, &s, ID, CAP),
            Existing::Attested(_)
        ));
        assert_eq!(
            attested_at(&file, ID, CAP).map(|saved| saved.payload),
            Some(Ok(digest))
        );
        assert!(attested_at(&file, "0b6b2f0e-1c1d-4a7e-9a5e-0d6f3f1f2a01", CAP).is_none());
        let absent = d.path().join("b.trajectory.json");
        assert!(matches!(classify(&absent, &s, ID, CAP), Existing::Absent));
        assert!(attested_at(&absent, ID, CAP).is_none());
        let link = d.path().join("c.trajectory.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(matches!(
            classify(&link, &s, ID, CAP),
            Existing::Foreign(NotASidecar::Symlink)
        ));
        assert!(attested_at(&link, ID, CAP).is_none());
        assert!(matches!(
            classify(d.path(), &s, ID, CAP),
            Existing::Foreign(NotASidecar::NotAFile)
        ));
        // through a file: the lookup fails, and not with "not found"
        assert!(matches!(
            classify(&file.join("x"), &s, ID, CAP),
            Existing::Foreign(NotASidecar::Unreadable(_))
        ));
        // past the cap: not read (a sparse file costs nothing), named
        let huge = d.path().join("d.trajectory.json");
        std::fs::File::create(&huge)
            .unwrap()
            .set_len(CAP + 1)
            .unwrap();
        assert!(matches!(
            classify(&huge, &s, ID, CAP),
            Existing::Foreign(NotASidecar::TooLarge { size, cap: CAP }) if size == CAP + 1
        ));
        assert!(attested_at(&huge, ID, CAP).is_none());
        // the cap is the response cap plus the record's room: a sidecar
        // exactly at it reads
        let at_cap = d.path().join("e.trajectory.json");
        std::fs::write(&at_cap, &side).unwrap();
        let exact = side.len() as u64;
        assert!(matches!(
            classify(&at_cap, &s, ID, exact),
            Existing::Attested(_)
        ));
        assert!(matches!(
            classify(&at_cap, &s, ID, exact - 1),
            Existing::Foreign(NotASidecar::TooLarge { .. })
        ));
        assert_eq!(
            sidecar_cap(crate::well_known::DEFAULT_MAX_BODY),
            InputKind::Sidecar.cap()
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
