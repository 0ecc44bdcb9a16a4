//! Protobuf wire helpers of the generator: raw field writing (unknown and
//! source-only fields are appended as raw bytes), path edits inside a
//! serialized message, and the canonical map order that makes encodings
//! deterministic.
//!
//! These helpers are the generator's own, independent of the reader's wire
//! code, so a bug in one cannot hide in the other.

use prost_reflect::{Kind, MessageDescriptor};

/// Wire type numbers.
pub const VARINT: u8 = 0;
/// 64-bit fixed.
pub const FIXED64: u8 = 1;
/// Length-delimited.
pub const LEN: u8 = 2;
/// 32-bit fixed.
pub const FIXED32: u8 = 5;

/// Why bytes could not be walked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed wire data at byte {offset}: {detail}")]
pub struct WireError {
    /// Where the problem starts.
    pub offset: usize,
    /// What is wrong.
    pub detail: &'static str,
}

/// Appends a varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a varint field.
pub fn put_varint_field(out: &mut Vec<u8>, number: u32, v: u64) {
    put_key(out, number, 0);
    put_varint(out, v);
}

/// Appends a field key.
pub fn put_key(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire_type));
}

/// Appends a length-delimited field.
pub fn put_len(out: &mut Vec<u8>, number: u32, payload: &[u8]) {
    put_key(out, number, 2);
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// A length-delimited field as bytes.
pub fn len_field(number: u32, payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(payload.len() + 6);
    put_len(&mut b, number, payload);
    b
}

/// A varint field as bytes.
pub fn varint_field(number: u32, v: u64) -> Vec<u8> {
    let mut b = Vec::new();
    put_varint_field(&mut b, number, v);
    b
}

/// Reads a varint at `*pos`.
pub fn read_varint(bytes: &[u8], pos: &mut usize) -> Result<u64, WireError> {
    let start = *pos;
    let mut v: u64 = 0;
    for shift in (0..70).step_by(7) {
        let Some(b) = bytes.get(*pos) else {
            return Err(WireError {
                offset: start,
                detail: "truncated varint",
            });
        };
        *pos += 1;
        if shift == 63 && *b > 1 {
            return Err(WireError {
                offset: start,
                detail: "varint overflow",
            });
        }
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(WireError {
        offset: start,
        detail: "varint too long",
    })
}

/// One field of a serialized message.
#[derive(Debug, Clone, Copy)]
pub struct Field<'a> {
    /// Field number.
    pub number: u32,
    /// Wire type.
    pub wire_type: u8,
    /// The payload (the bytes of a length-delimited field; the raw bytes of a
    /// varint or fixed field).
    pub value: &'a [u8],
    /// The whole encoding, key included.
    pub encoding: &'a [u8],
}

/// All top-level fields of `bytes`.
pub fn fields(bytes: &[u8]) -> Result<Vec<Field<'_>>, WireError> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let start = pos;
        let key = read_varint(bytes, &mut pos)?;
        let number = u32::try_from(key >> 3).map_err(|_| WireError {
            offset: start,
            detail: "field number too large",
        })?;
        let wire_type = (key & 7) as u8;
        let vstart = pos;
        let (value, end) = match wire_type {
            VARINT => {
                read_varint(bytes, &mut pos)?;
                (&bytes[vstart..pos], pos)
            }
            FIXED64 | FIXED32 => {
                let n = if wire_type == FIXED64 { 8 } else { 4 };
                let end = pos + n;
                if end > bytes.len() {
                    return Err(WireError {
                        offset: start,
                        detail: "truncated fixed field",
                    });
                }
                (&bytes[pos..end], end)
            }
            LEN => {
                let n = read_varint(bytes, &mut pos)? as usize;
                let end = pos
                    .checked_add(n)
                    .filter(|e| *e <= bytes.len())
                    .ok_or(WireError {
                        offset: start,
                        detail: "length past the end",
                    })?;
                (&bytes[pos..end], end)
            }
            _ => {
                return Err(WireError {
                    offset: start,
                    detail: "unsupported wire type",
                })
            }
        };
        pos = end;
        if number == 0 {
            return Err(WireError {
                offset: start,
                detail: "field number 0",
            });
        }
        out.push(Field {
            number,
            wire_type,
            value,
            encoding: &bytes[start..end],
        });
    }
    Ok(out)
}

/// The payload of the first length-delimited field `number`, if any.
pub fn first_len(bytes: &[u8], number: u32) -> Result<Option<&[u8]>, WireError> {
    Ok(fields(bytes)?
        .into_iter()
        .find(|f| f.number == number && f.wire_type == LEN)
        .map(|f| f.value))
}

/// The value of the last varint field `number` (0 when absent).
pub fn last_varint(bytes: &[u8], number: u32) -> Result<u64, WireError> {
    let mut v = 0;
    for f in fields(bytes)? {
        if f.number == number && f.wire_type == VARINT {
            let mut p = 0;
            v = read_varint(f.value, &mut p)?;
        }
    }
    Ok(v)
}

/// Rewrites the message reached by `path` ((field number, occurrence) pairs
/// of length-delimited fields) with `edit`, fixing every enclosing length.
/// A missing last-level field (occurrence == count) is created empty first.
pub fn edit_at(
    bytes: &[u8],
    path: &[(u32, usize)],
    edit: &mut dyn FnMut(&[u8]) -> Vec<u8>,
) -> Result<Vec<u8>, WireError> {
    let Some(((number, nth), rest)) = path.split_first() else {
        return Ok(edit(bytes));
    };
    let mut out = Vec::with_capacity(bytes.len() + 16);
    let mut seen = 0;
    let mut done = false;
    for f in fields(bytes)? {
        if !done && f.number == *number && f.wire_type == LEN {
            if seen == *nth {
                put_len(&mut out, f.number, &edit_at(f.value, rest, edit)?);
                done = true;
                continue;
            }
            seen += 1;
        }
        out.extend_from_slice(f.encoding);
    }
    if !done {
        if seen != *nth {
            return Err(WireError {
                offset: bytes.len(),
                detail: "path names a missing occurrence",
            });
        }
        put_len(&mut out, *number, &edit_at(&[], rest, edit)?);
    }
    Ok(out)
}

/// Appends `extra` inside the message reached by `path`.
pub fn append_at(bytes: &[u8], path: &[(u32, usize)], extra: &[u8]) -> Result<Vec<u8>, WireError> {
    edit_at(bytes, path, &mut |inner: &[u8]| {
        let mut v = inner.to_vec();
        v.extend_from_slice(extra);
        v
    })
}

/// Replaces every varint field `number` of the message at `path` by one with `value`.
pub fn set_varint_at(
    bytes: &[u8],
    path: &[(u32, usize)],
    number: u32,
    value: u64,
) -> Result<Vec<u8>, WireError> {
    let mut err = None;
    let out = edit_at(bytes, path, &mut |inner: &[u8]| {
        let mut v = Vec::with_capacity(inner.len() + 4);
        let mut placed = false;
        match fields(inner) {
            Ok(fs) => {
                for f in fs {
                    if f.number == number && f.wire_type == VARINT {
                        if !placed {
                            put_varint_field(&mut v, number, value);
                            placed = true;
                        }
                        continue;
                    }
                    v.extend_from_slice(f.encoding);
                }
            }
            Err(e) => err = Some(e),
        }
        if !placed {
            put_varint_field(&mut v, number, value);
        }
        v
    })?;
    match err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Re-encodes `bytes` (a message of type `desc`) with every map field's
/// entries sorted by their encoded key and gathered where the first entry was,
/// descending into sub-messages and into `google.protobuf.Any` values whose
/// type the pool knows. prost-reflect keeps maps in a `HashMap`, so without
/// this pass two runs would write entries in different orders.
pub fn canonicalize(desc: &MessageDescriptor, bytes: &[u8]) -> Result<Vec<u8>, WireError> {
    if desc.full_name() == "google.protobuf.Any" {
        return canonical_any(desc, bytes);
    }
    let fs = fields(bytes)?;
    let mut out = Vec::with_capacity(bytes.len());
    let mut maps: Vec<(u32, Entries)> = Vec::new();
    let mut order: Vec<Slot> = Vec::new();
    for f in &fs {
        let fd = desc.get_field(f.number);
        match (fd, f.wire_type) {
            (Some(fd), LEN) if fd.is_map() => {
                let Kind::Message(entry) = fd.kind() else {
                    order.push(Slot::Raw(f.encoding.to_vec()));
                    continue;
                };
                let canon = canonicalize(&entry, f.value)?;
                let key = first_len_or_varint_key(&canon)?;
                match maps.iter_mut().find(|(n, _)| *n == f.number) {
                    Some((_, list)) => list.push((key, canon)),
                    None => {
                        maps.push((f.number, vec![(key, canon)]));
                        order.push(Slot::Map(f.number));
                    }
                }
            }
            (Some(fd), LEN) => match fd.kind() {
                Kind::Message(m) => {
                    let canon = canonicalize(&m, f.value)?;
                    let mut enc = Vec::with_capacity(canon.len() + 6);
                    put_len(&mut enc, f.number, &canon);
                    order.push(Slot::Raw(enc));
                }
                _ => order.push(Slot::Raw(f.encoding.to_vec())),
            },
            _ => order.push(Slot::Raw(f.encoding.to_vec())),
        }
    }
    for slot in order {
        match slot {
            Slot::Raw(b) => out.extend_from_slice(&b),
            Slot::Map(n) => {
                if let Some((_, list)) = maps.iter_mut().find(|(m, _)| *m == n) {
                    list.sort_by(|a, b| a.0.cmp(&b.0));
                    for (_, entry) in list.iter() {
                        put_len(&mut out, n, entry);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Map entries of one field: (encoded key, canonical entry).
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

enum Slot {
    Raw(Vec<u8>),
    Map(u32),
}

/// The raw bytes of a map entry's key (field 1), empty when absent.
fn first_len_or_varint_key(entry: &[u8]) -> Result<Vec<u8>, WireError> {
    Ok(fields(entry)?
        .into_iter()
        .find(|f| f.number == 1)
        .map(|f| f.value.to_vec())
        .unwrap_or_default())
}

fn canonical_any(desc: &MessageDescriptor, bytes: &[u8]) -> Result<Vec<u8>, WireError> {
    let fs = fields(bytes)?;
    let type_url = fs
        .iter()
        .find(|f| f.number == 1 && f.wire_type == LEN)
        .and_then(|f| std::str::from_utf8(f.value).ok())
        .unwrap_or("");
    let name = type_url.rsplit('/').next().unwrap_or("");
    let Some(inner) = desc.parent_pool().get_message_by_name(name) else {
        return Ok(bytes.to_vec());
    };
    let mut out = Vec::with_capacity(bytes.len());
    for f in &fs {
        if f.number == 2 && f.wire_type == LEN {
            put_len(&mut out, 2, &canonicalize(&inner, f.value)?);
        } else {
            out.extend_from_slice(f.encoding);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        for v in [0u64, 1, 127, 128, 300, u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            let mut p = 0;
            assert_eq!(read_varint(&b, &mut p), Ok(v));
            assert_eq!(p, b.len());
        }
    }

    #[test]
    fn edit_fixes_enclosing_lengths_and_creates_missing_fields() {
        // {1: {2: "ab"}}
        let inner = len_field(2, b"ab");
        let outer = len_field(1, &inner);
        let out = append_at(&outer, &[(1, 0)], &varint_field(9, 1)).unwrap();
        let f = fields(&out).unwrap();
        assert_eq!(f.len(), 1);
        let g = fields(f[0].value).unwrap();
        assert_eq!(g.len(), 2);
        assert_eq!(g[1].number, 9);
        let created = append_at(&outer, &[(3, 0), (4, 0)], b"").unwrap();
        assert_eq!(fields(&created).unwrap().len(), 2);
        assert!(append_at(&outer, &[(1, 2)], b"").is_err());
    }

    #[test]
    fn set_varint_replaces_in_place() {
        let mut b = varint_field(1, 5);
        b.extend(len_field(2, b"x"));
        let out = set_varint_at(&b, &[], 1, 9).unwrap();
        assert_eq!(last_varint(&out, 1).unwrap(), 9);
        assert_eq!(fields(&out).unwrap().len(), 2);
    }
}
