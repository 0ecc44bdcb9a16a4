//! Stage 2: snapshot and strictly decode one source.
//!
//! [`read_source`] turns a `.db` or `.pb` path into a [`DecodedSource`]: the
//! canonical trajectory encoding, its digest under the profile, the decoded
//! message, the declared source-only occurrences, and every refusal. A
//! refusal means the source is *unknown* (not qualified); an [`Error`] means it
//! could not be read at all.

pub mod columns;
pub mod legacy;
pub mod reconstruct;
pub mod scan;
pub mod scan_plan;
pub mod source_only;
pub mod sql_ddl;
pub mod sqlite;
pub mod sqlite_schema;
pub mod step_count;
pub mod wal;
pub mod wire;
pub mod wire_trajectory;

use crate::error::{Error, Result};
use crate::schema::Schema;
use crate::verdict::{ReasonClass, Refusal};
use bytes::Bytes;
use legacy::LegacyKey;
use prost_reflect::{DynamicMessage, ReflectMessage};
use scan::{Scanner, UnknownFieldRecord};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use source_only::SourceOnlyOccurrence;
use std::path::{Path, PathBuf};
use wire_trajectory::WireTrajectory;

/// A source's store format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum Format {
    #[serde(rename = "sqlite")]
    Sqlite,
    #[serde(rename = "protobuf")]
    Protobuf,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Sqlite => "sqlite",
            Format::Protobuf => "protobuf",
        }
    }

    /// The format a path's extension names.
    pub fn of(path: &Path) -> Option<Format> {
        match path.extension()?.to_str()? {
            "db" => Some(Format::Sqlite),
            "pb" => Some(Format::Protobuf),
            _ => None,
        }
    }
}

/// How to read sources.
#[derive(Debug, Clone)]
pub struct ReadOptions<'a> {
    pub schema: &'a Schema,
    pub legacy_key: &'a LegacyKey,
    /// Keep scanning past refusals to list every unknown field (`--allow-unknown`).
    pub collect_all: bool,
    /// Also fingerprint the SQLite files read ([`DecodedSource::file_fingerprint`]),
    /// for a bracketed fetch's [`unchanged`].
    pub fingerprint: bool,
}

/// One source, snapshotted and strictly decoded.
#[derive(Debug, Clone)]
pub struct DecodedSource {
    pub path: PathBuf,
    pub format: Format,
    /// The file stem (the conversation id for agy's own files).
    pub file_id: String,
    pub profile: String,
    /// `sha256:<hex>` over the profile and the canonical encoding (SQLite) or
    /// the exact file bytes (legacy).
    pub source_digest: String,
    /// The canonical Trajectory encoding (see [`reconstruct`]) or the legacy
    /// plaintext. Shared, so the decoded message's `bytes` fields are slices
    /// of it rather than copies.
    pub encoding: Bytes,
    /// The encoding indexed by step, when the strict scan passed (or, when
    /// every refusal is collected, whenever it decodes): what projection reads.
    pub wire: Option<WireTrajectory>,
    /// The whole decoded tree, built only on demand ([`Self::materialize`]),
    /// or at once when every refusal is collected (an export of an unknown
    /// source shows what decodes).
    pub trajectory: Option<DynamicMessage>,
    pub source_only: Vec<SourceOnlyOccurrence>,
    /// Empty exactly when the source is qualified.
    pub refusals: Vec<Refusal>,
    pub unknown_fields: Vec<UnknownFieldRecord>,
    pub steps: usize,
    /// Whether uncheckpointed WAL frames were part of the snapshot.
    pub had_wal: bool,
    /// [`sqlite::fingerprint`] of the files the snapshot was built from, when
    /// [`ReadOptions::fingerprint`] asked for it: the bracket's fast path.
    pub file_fingerprint: Option<[u8; 32]>,
}

impl DecodedSource {
    /// A source as read, before [`decode_into`]: nothing decoded, no
    /// refusal, no step counted yet.
    pub(crate) fn undecoded(
        path: PathBuf,
        format: Format,
        file_id: String,
        profile: String,
        source_digest: String,
        encoding: Bytes,
    ) -> Self {
        DecodedSource {
            path,
            format,
            file_id,
            profile,
            source_digest,
            encoding,
            wire: None,
            trajectory: None,
            source_only: Vec::new(),
            refusals: Vec::new(),
            unknown_fields: Vec::new(),
            steps: 0,
            had_wal: false,
            file_fingerprint: None,
        }
    }

    /// Whether the reader represents this source completely.
    pub fn qualified(&self) -> bool {
        self.refusals.is_empty()
    }

    /// The first refusal, the one reported as the reason.
    pub fn reason(&self) -> Option<&Refusal> {
        self.refusals.first()
    }

    /// The cascade id: the trajectory's own, else the file stem.
    pub fn cascade_id(&self) -> String {
        let own = match (&self.wire, &self.trajectory) {
            (Some(w), _) => Some(w.cascade_id().to_string()),
            (None, Some(t)) => t
                .descriptor()
                .get_field_by_name("cascade_id")
                .and_then(|fd| t.get_field(&fd).as_str().map(str::to_string)),
            (None, None) => None,
        };
        own.filter(|s| !s.is_empty())
            .unwrap_or_else(|| self.file_id.clone())
    }

    /// The whole decoded trajectory, decoding it on first use (the full
    /// comparison and exports need the tree; offline verify does not). A
    /// decode that fails makes the source unknown (a passing strict scan
    /// rules that out; this keeps it fail-closed all the same).
    pub fn materialize(&mut self) -> Option<&mut DynamicMessage> {
        if self.trajectory.is_none() {
            if let Some(w) = &self.wire {
                match w.decode() {
                    Ok(t) => self.trajectory = Some(t),
                    Err(e) => {
                        self.wire = None;
                        self.refusals.push(undecodable(&e));
                    }
                }
            }
        }
        self.trajectory.as_mut()
    }

    /// Steps by type name (`CORTEX_STEP_TYPE_` dropped), when indexed.
    pub fn step_types(&self) -> std::collections::BTreeMap<String, u64> {
        self.wire
            .as_ref()
            .map(WireTrajectory::step_types)
            .unwrap_or_default()
    }
}

/// The refusal of a trajectory that does not decode (`e`: why).
pub fn undecodable(e: &dyn std::fmt::Display) -> Refusal {
    Refusal::new(
        ReasonClass::MalformedProtobuf,
        "",
        format!("the trajectory does not decode: {e}"),
    )
}

/// The source digest: SHA-256 of a domain tag, the profile and the bytes.
pub fn source_digest(profile: &str, bytes: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(b"agy-audit/source/v1\0");
    h.update(profile.as_bytes());
    h.update([0u8]);
    h.update(bytes);
    format!("sha256:{}", crate::util::hex(&h.finalize()))
}

fn file_id(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Reads one `.db` or `.pb` source.
pub fn read_source(path: &Path, opts: &ReadOptions<'_>) -> Result<DecodedSource> {
    match Format::of(path) {
        Some(Format::Sqlite) => read_sqlite(path, opts),
        Some(Format::Protobuf) => read_legacy(path, opts),
        None => Err(Error::NotASource {
            path: path.to_path_buf(),
        }),
    }
}

fn read_sqlite(path: &Path, opts: &ReadOptions<'_>) -> Result<DecodedSource> {
    let (snap, file_fingerprint) = if opts.fingerprint {
        let (snap, fp) = sqlite::snapshot_fingerprinted(path)?;
        (snap, Some(fp))
    } else {
        (sqlite::snapshot(path)?, None)
    };
    sqlite_from_snapshot(path, snap, file_fingerprint, opts)
}

/// The rest of [`read_sqlite`] once the snapshot is taken (also the fuzz
/// targets' way in, from bytes: `crate::fuzzing`).
pub(crate) fn sqlite_from_snapshot(
    path: &Path,
    snap: sqlite::Snapshot,
    file_fingerprint: Option<[u8; 32]>,
    opts: &ReadOptions<'_>,
) -> Result<DecodedSource> {
    let names = &opts.schema.names;
    // The encoding's head (up to the steps) is built as the rows are read
    // when the schema allows it: each payload is copied once, into the
    // encoding, instead of into its row and then into the encoding.
    let (rows, mut refusals, head) = reconstruct::read_rows_streamed(path, &snap, names)?;
    let had_wal = snap.had_wal;
    drop(snap);
    let profile = crate::profile::sqlite_profile(opts.schema);
    let id = file_id(path);
    if !rows.cascade_id.is_empty() && looks_like_uuid(&id) && rows.cascade_id != id {
        refusals.push(Refusal::new(
            ReasonClass::RowShape,
            "trajectory_meta.cascade_id",
            format!(
                "cascade_id {} does not name this file ({id})",
                rows.cascade_id
            ),
        ));
    }
    let step_columns = columns::StepColumns::new(names);
    match &head {
        Some(h) => {
            for (row, payload) in rows.steps.iter().zip(&h.payloads) {
                let payload = h.bytes.get(payload.clone()).unwrap_or_default();
                refusals.extend(step_columns.check_payload(names, row, payload));
            }
        }
        None => {
            for row in &rows.steps {
                refusals.extend(step_columns.check(names, row));
            }
        }
    }
    let structural = !refusals.is_empty();
    let encoding = match head {
        Some(h) => h.finish(names, &rows),
        None => reconstruct::trajectory_encoding(names, &rows),
    };
    let encoding = match encoding {
        Ok(e) => e,
        Err(r) => {
            refusals.push(r);
            Vec::new()
        }
    };
    let digest = source_digest(&profile, &encoding);
    let mut out = DecodedSource {
        refusals,
        steps: rows.steps.len(),
        had_wal,
        file_fingerprint,
        ..DecodedSource::undecoded(
            path.to_path_buf(),
            Format::Sqlite,
            id,
            profile,
            digest,
            Bytes::from(encoding),
        )
    };
    if !structural || opts.collect_all {
        decode_into(&mut out, opts);
    }
    Ok(out)
}

fn read_legacy(path: &Path, opts: &ReadOptions<'_>) -> Result<DecodedSource> {
    legacy_from_bytes(path, legacy::read_file(path)?, opts)
}

/// [`read_legacy`] over a file's bytes already read (also the fuzz targets'
/// way in: `crate::fuzzing`).
pub(crate) fn legacy_from_bytes(
    path: &Path,
    file: Vec<u8>,
    opts: &ReadOptions<'_>,
) -> Result<DecodedSource> {
    let profile = crate::profile::legacy_profile(opts.schema, opts.legacy_key);
    let digest = source_digest(&profile, &file);
    let mut out = DecodedSource::undecoded(
        path.to_path_buf(),
        Format::Protobuf,
        file_id(path),
        profile,
        digest,
        Bytes::new(),
    );
    // First, so it is the reason reported: another key never verifies.
    out.refusals
        .extend(legacy::unsupported_key_refusal(opts.legacy_key));
    match legacy::decrypt(path, &file, opts.legacy_key)? {
        Ok(plain) => {
            out.encoding = Bytes::from(plain);
            decode_into(&mut out, opts);
        }
        Err(r) => out.refusals.push(r),
    }
    Ok(out)
}

/// Strict scan, then the step index, then the step-derived field-23 check.
///
/// The whole tree is not decoded here ([`DecodedSource::materialize`] does
/// that for whoever needs it), except when every refusal is collected: then
/// whatever decodes is kept, to be exported marked incomplete.
pub(crate) fn decode_into(out: &mut DecodedSource, opts: &ReadOptions<'_>) {
    let schema = opts.schema;
    let traj_desc = &schema.names.trajectory;
    let mut scanner = Scanner::new(&schema.pool, Some(&schema.struct_pool), opts.collect_all);
    scanner.scan_root(&out.encoding, traj_desc);
    let scan_ok = !scanner.refused();
    take_scan(out, &mut scanner);
    if schema.origin == crate::schema::SchemaOrigin::Modeled {
        hint_extract_installed(&mut out.refusals);
    }
    if !scan_ok && !opts.collect_all {
        return;
    }
    if opts.collect_all {
        match DynamicMessage::decode(traj_desc.clone(), out.encoding.clone()) {
            Ok(t) => out.trajectory = Some(t),
            Err(e) if scan_ok => {
                out.refusals.push(undecodable(&e));
                return;
            }
            Err(_) => return,
        }
    }
    match WireTrajectory::index(&schema.names, out.encoding.clone()) {
        Ok(w) => {
            if out.format == Format::Protobuf {
                out.steps = w.len();
            }
            out.refusals.extend(source_only::check_prompt23_derivations(
                &w,
                &scanner.prompt23_pending,
            ));
            out.wire = Some(w);
        }
        Err(e) => out.refusals.push(undecodable(&e)),
    }
}

/// Under the embedded schema, each `unknown-field` refusal says that it
/// models public descriptors only and names the command that pins the
/// installed agy's own ([`crate::verdict::Hint::ExtractInstalled`]).
fn hint_extract_installed(refusals: &mut [Refusal]) {
    for r in refusals
        .iter_mut()
        .filter(|r| r.class == ReasonClass::UnknownField)
    {
        r.hint = Some(crate::verdict::Hint::ExtractInstalled);
    }
}

/// Moves a finished scan's refusals and records into `out`.
fn take_scan(out: &mut DecodedSource, scanner: &mut Scanner<'_>) {
    out.refusals.append(&mut scanner.refusals);
    out.unknown_fields = std::mem::take(&mut scanner.unknown_fields);
    out.source_only = std::mem::take(&mut scanner.source_only);
}

/// Whether `s` is a canonical lowercase-or-uppercase hyphenated UUID.
pub fn looks_like_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// The bracket's second snapshot: whether the source at `path` still holds
/// what was decoded with `digest` (and `fingerprint`, the decoded source's
/// [`DecodedSource::file_fingerprint`]). Byte-identical SQLite files (the
/// same [`sqlite::fingerprint`]) answer at once; otherwise the source digest
/// of a fresh snapshot decides, so a rewrite that keeps the content (a
/// checkpoint) is no change.
pub fn unchanged(
    path: &Path,
    fingerprint: Option<[u8; 32]>,
    digest: &str,
    opts: &ReadOptions<'_>,
) -> Result<bool> {
    if let (Some(Format::Sqlite), Some(fp)) = (Format::of(path), fingerprint) {
        if sqlite::file_fingerprint(path)? == fp {
            return Ok(true);
        }
    }
    Ok(digest_of(path, opts)? == digest)
}

/// The source digest alone (the bracket's second snapshot when the files'
/// bytes moved): the same bytes [`read_source`] digests, without the strict
/// scan.
pub fn digest_of(path: &Path, opts: &ReadOptions<'_>) -> Result<String> {
    match Format::of(path) {
        Some(Format::Sqlite) => {
            let snap = sqlite::snapshot(path)?;
            let (rows, _) = sqlite::read_rows(path, &snap)?;
            let profile = crate::profile::sqlite_profile(opts.schema);
            let encoding =
                reconstruct::trajectory_encoding(&opts.schema.names, &rows).unwrap_or_default();
            Ok(source_digest(&profile, &encoding))
        }
        Some(Format::Protobuf) => {
            let file = legacy::read_file(path)?;
            Ok(source_digest(
                &crate::profile::legacy_profile(opts.schema, opts.legacy_key),
                &file,
            ))
        }
        None => Err(Error::NotASource {
            path: path.to_path_buf(),
        }),
    }
}
