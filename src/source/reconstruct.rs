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

use super::sqlite::SqliteRows;
use super::wire::{put_len_field, put_varint_field};
use crate::schema::Names;
use crate::verdict::{ReasonClass, Refusal};

/// Builds the canonical Trajectory encoding from `rows`.
pub fn trajectory_encoding(names: &Names, rows: &SqliteRows) -> Result<Vec<u8>, Refusal> {
    let t = names.traj;
    enum Piece<'a> {
        Str(&'a str),
        Int(i64),
        Msgs(&'a [Vec<u8>]),
        Steps,
        Msg(&'a [u8]),
    }
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
    for (n, piece) in pieces {
        match piece {
            Piece::Str(s) if !s.is_empty() => put_len_field(&mut out, n, s.as_bytes()),
            Piece::Int(v) if v != 0 => put_varint_field(&mut out, n, v as u64),
            Piece::Msgs(list) => {
                for m in list {
                    put_len_field(&mut out, n, m);
                }
            }
            Piece::Steps => {
                for s in &rows.steps {
                    put_len_field(&mut out, n, &s.step_payload);
                }
            }
            Piece::Msg(m) => put_len_field(&mut out, n, m),
            Piece::Str(_) | Piece::Int(_) => {}
        }
    }
    debug_assert!(out.len() <= size, "the size bound is an upper bound");
    Ok(out)
}
