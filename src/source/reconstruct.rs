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
    // The exact size, so the buffer is allocated once and holds no slack:
    // it becomes the source's shared encoding and stays in memory while the
    // conversation is in flight (an estimate short by a few bytes used to
    // double a 21 MB buffer).
    let field = |len: usize| len_field_size(len);
    let size: usize = pieces
        .iter()
        .map(|(n, piece)| {
            let tag = varint_size(u64::from(*n) << 3);
            match piece {
                Piece::Str(s) if !s.is_empty() => tag + field(s.len()),
                Piece::Int(v) if *v != 0 => tag + varint_size(*v as u64),
                Piece::Msgs(list) => list.iter().map(|m| tag + field(m.len())).sum(),
                Piece::Steps => rows
                    .steps
                    .iter()
                    .map(|s| tag + field(s.step_payload.len()))
                    .sum(),
                Piece::Msg(m) => tag + field(m.len()),
                Piece::Str(_) | Piece::Int(_) => 0,
            }
        })
        .sum();
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
    debug_assert_eq!(out.len(), size);
    Ok(out)
}

/// The bytes of a varint holding `v`.
fn varint_size(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// The bytes of a length-delimited payload of `len` bytes after its tag.
fn len_field_size(len: usize) -> usize {
    varint_size(len as u64) + len
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::wire::put_varint;

    #[test]
    fn varint_size_is_what_put_varint_writes() {
        let mut edges = vec![0u64, 1, u64::MAX, i64::MIN as u64, (-1i64) as u64];
        for bits in 1..64 {
            let p = 1u64 << bits;
            edges.extend([p - 1, p, p + 1]);
        }
        for v in edges {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(varint_size(v), out.len(), "{v}");
        }
        assert_eq!(len_field_size(300), 2 + 300);
    }
}
