//! Entry points for the fuzz targets under `fuzz/` (cargo-fuzz; see
//! docs/reliability.md): each takes bytes that would otherwise come from a
//! file on disk and runs the library's own code over them, so the targets
//! duplicate nothing. Not a stable interface: hidden from the docs, used by
//! `fuzz/` and the regression tests of what the fuzzers found
//! (`tests/fuzz_regressions.rs`).
//!
//! Inputs made of two parts are [`split2`]: a little-endian `u32` length of
//! the first part, the first part, then the second.

use crate::error::Result;
use crate::schema::Schema;
use crate::source::legacy::LegacyKey;
use crate::source::source_only::{self, Prompt23Pending};
use crate::source::sqlite::{self, Strategy};
use crate::source::{self, scan::Scanner, DecodedSource, Format, ReadOptions};
use bytes::Bytes;
use prost_reflect::MessageDescriptor;
use std::path::{Path, PathBuf};

/// The name in-memory SQLite sources are read under (messages cite it; a
/// UUID stem, so the cascade-id check applies as it does to agy's files).
pub const FUZZ_DB: &str = "fuzz-input/00000000-0000-4000-8000-000000000000.db";

/// The name in-memory legacy sources are read under.
pub const FUZZ_PB: &str = "fuzz-input/00000000-0000-4000-8000-000000000000.pb";

/// Splits a two-part input (see the module documentation). An input too
/// short for its declared length is all first part.
pub fn split2(data: &[u8]) -> (&[u8], &[u8]) {
    let Some((len, rest)) = data.split_first_chunk::<4>() else {
        return (data, &[]);
    };
    let len = u32::from_le_bytes(*len) as usize;
    if len > rest.len() {
        return (rest, &[]);
    }
    rest.split_at(len)
}

/// The input [`split2`] splits into `a` and `b` (seed tooling, tests).
pub fn join2(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + a.len() + b.len());
    out.extend_from_slice(&(a.len() as u32).to_le_bytes());
    out.extend_from_slice(a);
    out.extend_from_slice(b);
    out
}

fn options<'a>(schema: &'a Schema, key: &'a LegacyKey, collect_all: bool) -> ReadOptions<'a> {
    ReadOptions {
        schema,
        legacy_key: key,
        collect_all,
        fingerprint: false,
    }
}

/// A SQLite source from the bytes of its `.db` and, when given, its `-wal`:
/// the snapshot (`quick_check`, WAL replay in memory or on a private disk
/// copy by `strategy`), the rows and their checks, the canonical encoding,
/// the strict scan and the step index, as [`source::read_source`] does for
/// [`FUZZ_DB`].
pub fn sqlite_source(
    schema: &Schema,
    db: &[u8],
    wal: Option<&[u8]>,
    strategy: Strategy,
) -> Result<DecodedSource> {
    let path = Path::new(FUZZ_DB);
    let snap = sqlite::snapshot_from_bytes(path, strategy, db.to_vec(), wal.map(<[u8]>::to_vec))?;
    let key = LegacyKey::default();
    source::sqlite_from_snapshot(path, snap, None, &options(schema, &key, false))
}

/// A legacy `.pb` source from its file bytes (envelope, authentication,
/// strict scan of the plaintext), under agy's format key.
pub fn legacy_source(schema: &Schema, file: &[u8]) -> Result<DecodedSource> {
    let key = LegacyKey::default();
    source::legacy_from_bytes(
        Path::new(FUZZ_PB),
        file.to_vec(),
        &options(schema, &key, false),
    )
}

/// A trajectory encoding as a decoded source would hold it: the strict scan
/// (every refusal collected with `collect_all`, as `--allow-unknown` does),
/// the step index and the field-23 derivation checks.
pub fn decode_trajectory(schema: &Schema, encoding: &[u8], collect_all: bool) -> DecodedSource {
    let key = LegacyKey::default();
    let mut out = DecodedSource::undecoded(
        PathBuf::from(FUZZ_PB),
        Format::Protobuf,
        "fuzz".into(),
        String::new(),
        String::new(),
        Bytes::copy_from_slice(encoding),
    );
    source::decode_into(&mut out, &options(schema, &key, collect_all));
    out
}

/// The planner50 payload check (the observed shapes).
pub fn planner50(payload: &[u8]) -> std::result::Result<(), String> {
    source_only::check_planner50_payload(payload)
}

/// The field-23 check of a `ChatMessagePrompt` (its bytes, field 23
/// included) carrying `payload`: the prompt's own fields, the strict
/// `google.protobuf.Struct` scan of the payload (the scanner's, as the
/// source scan passes it) and the payload's shape.
pub fn prompt23(
    schema: &Schema,
    prompt: &[u8],
    payload: &[u8],
) -> std::result::Result<Prompt23Pending, String> {
    let desc = schema
        .pool
        .get_message_by_name(source_only::PROMPT_MESSAGE)
        .ok_or_else(|| format!("no {} in the schema", source_only::PROMPT_MESSAGE))?;
    let strict = |payload: &[u8], d: &MessageDescriptor| {
        let mut s = Scanner::new(&schema.struct_pool, None, false);
        s.scan_root(payload, d);
        s.refusals.first().map(|r| r.to_string())
    };
    source_only::check_prompt23(&strict, &schema.struct_pool, &desc, prompt, payload)
}

/// The schema loader over a `--schema FILE`'s bytes: the size cap, gunzip,
/// the syntax check of every file, the pool and the names the reader
/// resolves.
pub fn schema_from_file_bytes(
    bytes: &[u8],
) -> std::result::Result<Schema, crate::schema::SchemaError> {
    let path = Path::new("fuzz-input/schema.pb");
    let set = crate::schema::set_of_file_bytes(path, bytes.to_vec())?;
    Schema::from_bytes(&set, crate::schema::SchemaOrigin::File(path.to_path_buf()))
}

/// Bytes a [`crate::source::wire_trajectory::WireTrajectory`] can index.
pub fn bytes_of(b: &[u8]) -> Bytes {
    Bytes::copy_from_slice(b)
}
