//! The canonical encoding of a reconstructed `gemini_coder.Trajectory`.
//!
//! The SQLite rows are reassembled into one Trajectory encoding that is the
//! input of the strict scan, the decoder and the source digest:
//!
//! * fields in ascending field number (numbers resolved by name from the schema);
//! * `trajectory_id` (trajectory_meta), `cascade_id`, `trajectory_type`, `source`
//!   as proto3 scalars, omitted when empty or zero;
//! * one `steps` element per `steps` row in `idx` order, the element being the
//!   stored `step_payload` bytes verbatim; likewise `generator_metadata`
//!   (gen_metadata.data), `parent_references`, `executor_metadatas`
//!   (executor_metadata.data) and `battle_mode_infos`;
//! * `metadata` = trajectory_metadata_blob.data, always present (an empty blob
//!   is an empty message, which the daemon presents as `{}`).
//!
//! Stored bytes are never re-encoded, so unknown or source-only bytes survive
//! into the digest exactly as stored.

use super::sqlite::{PayloadSink, Snapshot, SqliteRows};
use super::wire::{put_len_field, put_varint, put_varint_field};
use crate::schema::{Names, TrajectoryFields};
use crate::verdict::{ReasonClass, Refusal};

/// One piece of the encoding, in field-number order.
enum Piece<'a> {
    Str(&'a str),
    Int(i64),
    Msgs(&'a [Vec<u8>]),
    Steps,
    Msg(&'a [u8]),
}

/// The pieces of `rows`' encoding, sorted by field number (the battle-mode
/// refusal when the schema has no field for rows that exist).
fn pieces(t: TrajectoryFields, rows: &SqliteRows) -> Result<Vec<(u32, Piece<'_>)>, Refusal> {
    let mut pieces: Vec<(u32, Piece<'_>)> = vec![
        (t.trajectory_id, Piece::Str(&rows.trajectory_id)),
        (t.steps, Piece::Steps),
        (t.generator_metadata, Piece::Msgs(&rows.gen_metadata)),
        (t.trajectory_type, Piece::Int(rows.trajectory_type)),
        (t.parent_references, Piece::Msgs(&rows.parent_references)),
        (t.cascade_id, Piece::Str(&rows.cascade_id)),
        (t.source, Piece::Int(rows.source)),
        (t.executor_metadatas, Piece::Msgs(&rows.executor_metadata)),
    ];
    if let Some(m) = &rows.metadata {
        pieces.push((t.metadata, Piece::Msg(m)));
    }
    match t.battle_mode_infos {
        Some(n) => pieces.push((n, Piece::Msgs(&rows.battle_mode_infos))),
        None if !rows.battle_mode_infos.is_empty() => {
            return Err(Refusal::new(
                ReasonClass::SchemaDrift,
                "battle_mode_infos",
                "rows present but the schema's Trajectory has no battle_mode_infos field",
            ))
        }
        None => {}
    }
    pieces.sort_by_key(|(n, _)| *n);
    Ok(pieces)
}

/// Appends one piece (the steps from `rows.steps`).
fn put_piece(out: &mut Vec<u8>, n: u32, piece: &Piece<'_>, rows: &SqliteRows) {
    match piece {
        Piece::Str(s) if !s.is_empty() => put_len_field(out, n, s.as_bytes()),
        Piece::Int(v) if *v != 0 => put_varint_field(out, n, *v as u64),
        Piece::Msgs(list) => {
            for m in *list {
                put_len_field(out, n, m);
            }
        }
        Piece::Steps => {
            for s in &rows.steps {
                put_len_field(out, n, &s.step_payload);
            }
        }
        Piece::Msg(m) => put_len_field(out, n, m),
        Piece::Str(_) | Piece::Int(_) => {}
    }
}

/// Whether the schema's field numbers let the steps be written straight
/// into the encoding as they are read ([`EncodingHead`]): every field
/// numbered below `steps` comes from `trajectory_meta`, which is read
/// before the steps (`gemini_coder.Trajectory`: only `trajectory_id`, 1,
/// is below `steps`, 2).
pub fn steps_streamable(names: &Names) -> bool {
    let t = names.traj;
    let from_rows_read_later = [
        Some(t.generator_metadata),
        Some(t.parent_references),
        Some(t.executor_metadatas),
        Some(t.metadata),
        t.battle_mode_infos,
    ];
    let from_meta = [t.trajectory_id, t.cascade_id, t.trajectory_type, t.source];
    from_rows_read_later
        .into_iter()
        .flatten()
        .all(|n| n > t.steps)
        && from_meta.iter().all(|n| *n != t.steps)
}

/// The encoding up to and including the steps, built while the rows are
/// read: the pieces numbered below `steps` (from `trajectory_meta` alone,
/// see [`steps_streamable`]), then each step's payload as it is read, so a
/// payload is copied once, from SQLite into the encoding. [`Self::finish`]
/// appends the rest; the bytes are exactly [`trajectory_encoding`]'s.
pub struct EncodingHead {
    pub bytes: Vec<u8>,
    steps: u32,
    /// Each step payload's extent in `bytes`, in row order.
    pub payloads: Vec<std::ops::Range<usize>>,
    /// The Trajectory's field numbers, for [`PayloadSink::start`].
    fields: TrajectoryFields,
}

impl PayloadSink for EncodingHead {
    /// Writes the pieces below `steps` once `trajectory_meta` is read into
    /// `rows` (whose steps and later tables are still empty); they do not
    /// depend on the tables read later. A refusal of `pieces`
    /// (battle_mode_infos) cannot arise before those rows are read, and is
    /// given by [`EncodingHead::finish`].
    fn start(&mut self, rows: &SqliteRows, capacity: usize) {
        self.bytes = Vec::with_capacity(capacity);
        self.payloads.clear();
        if let Ok(pieces) = pieces(self.fields, rows) {
            for (n, piece) in pieces.iter().filter(|(n, _)| *n < self.steps) {
                put_piece(&mut self.bytes, *n, piece, rows);
            }
        }
    }

    /// Appends one step's payload (`put_len_field`, with its extent noted).
    fn push(&mut self, payload: &[u8]) {
        put_varint(&mut self.bytes, (u64::from(self.steps) << 3) | 2);
        put_varint(&mut self.bytes, payload.len() as u64);
        let start = self.bytes.len();
        self.bytes.extend_from_slice(payload);
        self.payloads.push(start..self.bytes.len());
    }
}

/// [`super::sqlite::read_rows`] with the canonical encoding's head built as
/// the steps are read ([`EncodingHead`]: each payload copied once, from
/// SQLite into the encoding) when the schema's field order allows it
/// ([`steps_streamable`]) and the steps were read at all. The refusals are
/// exactly `read_rows`'.
pub fn read_rows_streamed(
    db: &std::path::Path,
    snap: &Snapshot,
    names: &Names,
) -> crate::error::Result<(SqliteRows, Vec<Refusal>, Option<EncodingHead>)> {
    if !steps_streamable(names) {
        let (rows, refusals) = super::sqlite::read_rows(db, snap)?;
        return Ok((rows, refusals, None));
    }
    let mut head = EncodingHead::new(names);
    let (rows, refusals, started) = super::sqlite::read_rows_into(db, snap, &mut head)?;
    Ok((rows, refusals, started.then_some(head)))
}

impl EncodingHead {
    /// An encoding not started yet ([`PayloadSink::start`] writes its
    /// first pieces).
    pub fn new(names: &Names) -> EncodingHead {
        EncodingHead {
            bytes: Vec::new(),
            steps: names.traj.steps,
            payloads: Vec::new(),
            fields: names.traj,
        }
    }

    /// Appends the pieces after the steps, once every table is read.
    pub fn finish(mut self, names: &Names, rows: &SqliteRows) -> Result<Vec<u8>, Refusal> {
        let pieces = pieces(names.traj, rows)?;
        for (n, piece) in pieces.iter().filter(|(n, _)| *n > self.steps) {
            put_piece(&mut self.bytes, *n, piece, rows);
        }
        // The buffer was sized to the database image (an upper bound); the
        // encoding stays in memory while its conversation is in flight, so
        // slack is given back (the allocator keeps the block in place when
        // the slack is small).
        self.bytes.shrink_to_fit();
        Ok(self.bytes)
    }
}

/// Builds the canonical Trajectory encoding from `rows`.
pub fn trajectory_encoding(names: &Names, rows: &SqliteRows) -> Result<Vec<u8>, Refusal> {
    let pieces = pieces(names.traj, rows)?;
    // An upper bound of the whole encoding (every piece, each with at most
    // 15 bytes of key and length), so the buffer never grows: growing it
    // copies everything written so far into fresh pages.
    const FRAMING: usize = 15;
    let lists = |l: &[Vec<u8>]| l.iter().map(|m| m.len() + FRAMING).sum::<usize>();
    let size: usize = rows
        .steps
        .iter()
        .map(|s| s.step_payload.len() + FRAMING)
        .sum::<usize>()
        + lists(&rows.gen_metadata)
        + lists(&rows.executor_metadata)
        + lists(&rows.parent_references)
        + lists(&rows.battle_mode_infos)
        + rows.metadata.as_ref().map_or(0, |m| m.len() + FRAMING)
        + rows.trajectory_id.len()
        + rows.cascade_id.len()
        + 4 * FRAMING
        + 2 * 20;
    let mut out = Vec::with_capacity(size);
    for (n, piece) in &pieces {
        put_piece(&mut out, *n, piece, rows);
    }
    debug_assert!(out.len() <= size, "the size bound is an upper bound");
    Ok(out)
}
