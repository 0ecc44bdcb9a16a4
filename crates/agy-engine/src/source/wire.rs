//! Protobuf wire-format primitives for the strict scanner: varints, keys and
//! value extents, with failure reasons precise enough to report.

/// Protobuf wire types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireType {
    Varint,
    Fixed64,
    Len,
    StartGroup,
    EndGroup,
    Fixed32,
}

impl WireType {
    pub fn from_bits(bits: u64) -> Option<WireType> {
        Some(match bits {
            0 => WireType::Varint,
            1 => WireType::Fixed64,
            2 => WireType::Len,
            3 => WireType::StartGroup,
            4 => WireType::EndGroup,
            5 => WireType::Fixed32,
            _ => return None,
        })
    }

    pub fn bits(self) -> u8 {
        match self {
            WireType::Varint => 0,
            WireType::Fixed64 => 1,
            WireType::Len => 2,
            WireType::StartGroup => 3,
            WireType::EndGroup => 4,
            WireType::Fixed32 => 5,
        }
    }

    /// The name used in refusal messages, e.g. `unknown field 41 (varint)`.
    pub fn name(self) -> &'static str {
        match self {
            WireType::Varint => "varint",
            WireType::Fixed64 => "fixed64",
            WireType::Len => "length-delimited",
            WireType::StartGroup => "start-group",
            WireType::EndGroup => "end-group",
            WireType::Fixed32 => "fixed32",
        }
    }
}

/// Largest field number protobuf allows.
pub const MAX_FIELD_NUMBER: u64 = (1 << 29) - 1;

/// Ill-formed wire data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    Truncated,
    VarintTooLong,
    InvalidWireType(u64),
    InvalidFieldNumber(u64),
    LengthPastEnd { length: u64, remaining: usize },
    UnexpectedEndGroup,
    UnterminatedGroup,
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Truncated => write!(f, "truncated wire data"),
            WireError::VarintTooLong => write!(f, "varint longer than 10 bytes"),
            WireError::InvalidWireType(t) => write!(f, "invalid wire type {t}"),
            WireError::InvalidFieldNumber(n) => write!(f, "invalid field number {n}"),
            WireError::LengthPastEnd { length, remaining } => {
                write!(f, "length {length} exceeds the {remaining} remaining bytes")
            }
            WireError::UnexpectedEndGroup => write!(f, "unexpected end-group tag"),
            WireError::UnterminatedGroup => write!(f, "group without end tag"),
        }
    }
}

/// Reads a varint at `*pos`, advancing it.
#[inline]
pub fn read_varint(buf: &[u8], pos: &mut usize) -> Result<u64, WireError> {
    // Most keys and lengths are one byte: take it without the loop. The
    // result, and `pos`, are exactly what the loop below gives.
    if let Some(&b) = buf.get(*pos) {
        if b < 0x80 {
            *pos += 1;
            return Ok(u64::from(b));
        }
    }
    read_varint_long(buf, pos)
}

/// [`read_varint`]'s general case: up to ten bytes, the tenth at most 1.
fn read_varint_long(buf: &[u8], pos: &mut usize) -> Result<u64, WireError> {
    let mut value: u64 = 0;
    for i in 0..10 {
        let b = *buf.get(*pos).ok_or(WireError::Truncated)?;
        *pos += 1;
        if i == 9 && b > 1 {
            return Err(WireError::VarintTooLong);
        }
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(WireError::VarintTooLong)
}

/// One field occurrence on the wire.
#[derive(Debug, Clone, Copy)]
pub struct RawField<'a> {
    pub number: u32,
    pub wire_type: WireType,
    /// The value's bytes: the payload for `Len`, the varint or fixed bytes
    /// otherwise, the group body for groups.
    pub value: &'a [u8],
    /// The whole encoding, key included.
    pub encoding: &'a [u8],
}

/// Iterates the top-level fields of one message encoding.
pub struct FieldIter<'a> {
    buf: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> FieldIter<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        FieldIter {
            buf,
            pos: 0,
            failed: false,
        }
    }

    /// Byte offset of the next field.
    pub fn offset(&self) -> usize {
        self.pos
    }

    fn next_field(&mut self) -> Result<RawField<'a>, WireError> {
        let start = self.pos;
        let key = read_varint(self.buf, &mut self.pos)?;
        let number = key >> 3;
        let wire_type = WireType::from_bits(key & 7).ok_or(WireError::InvalidWireType(key & 7))?;
        if number == 0 || number > MAX_FIELD_NUMBER {
            return Err(WireError::InvalidFieldNumber(number));
        }
        let value_start = self.pos;
        let value = match wire_type {
            WireType::Varint => {
                read_varint(self.buf, &mut self.pos)?;
                &self.buf[value_start..self.pos]
            }
            WireType::Fixed64 => self.take(8)?,
            WireType::Fixed32 => self.take(4)?,
            WireType::Len => {
                let len = read_varint(self.buf, &mut self.pos)?;
                let remaining = self.buf.len() - self.pos;
                if len > remaining as u64 {
                    return Err(WireError::LengthPastEnd {
                        length: len,
                        remaining,
                    });
                }
                self.take(len as usize)?
            }
            WireType::StartGroup => {
                let body_start = self.pos;
                let body_end = skip_group(self.buf, &mut self.pos, number, 0)?;
                &self.buf[body_start..body_end]
            }
            WireType::EndGroup => return Err(WireError::UnexpectedEndGroup),
        };
        Ok(RawField {
            number: number as u32,
            wire_type,
            value,
            encoding: &self.buf[start..self.pos],
        })
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(n).ok_or(WireError::Truncated)?;
        let s = self.buf.get(self.pos..end).ok_or(WireError::Truncated)?;
        self.pos = end;
        Ok(s)
    }
}

/// Skips a group body after its start tag; returns the offset where the body ends.
fn skip_group(buf: &[u8], pos: &mut usize, number: u64, depth: usize) -> Result<usize, WireError> {
    if depth > 100 {
        return Err(WireError::UnterminatedGroup);
    }
    loop {
        if *pos >= buf.len() {
            return Err(WireError::UnterminatedGroup);
        }
        let body_end = *pos;
        let key = read_varint(buf, pos)?;
        let n = key >> 3;
        match WireType::from_bits(key & 7).ok_or(WireError::InvalidWireType(key & 7))? {
            WireType::Varint => {
                read_varint(buf, pos)?;
            }
            WireType::Fixed64 => advance(buf, pos, 8)?,
            WireType::Fixed32 => advance(buf, pos, 4)?,
            WireType::Len => {
                let len = read_varint(buf, pos)?;
                if len > (buf.len() - *pos) as u64 {
                    return Err(WireError::Truncated);
                }
                *pos += len as usize;
            }
            WireType::StartGroup => {
                skip_group(buf, pos, n, depth + 1)?;
            }
            WireType::EndGroup => {
                return if n == number {
                    Ok(body_end)
                } else {
                    Err(WireError::UnexpectedEndGroup)
                };
            }
        }
    }
}

fn advance(buf: &[u8], pos: &mut usize, n: usize) -> Result<(), WireError> {
    if buf.len() - *pos < n {
        return Err(WireError::Truncated);
    }
    *pos += n;
    Ok(())
}

impl<'a> Iterator for FieldIter<'a> {
    type Item = Result<RawField<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let r = self.next_field();
        if r.is_err() {
            self.failed = true;
        }
        Some(r)
    }
}

/// Appends a varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a length-delimited field.
pub fn put_len_field(out: &mut Vec<u8>, number: u32, payload: &[u8]) {
    put_varint(out, (u64::from(number) << 3) | 2);
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// Appends a varint field.
pub fn put_varint_field(out: &mut Vec<u8>, number: u32, v: u64) {
    put_varint(out, u64::from(number) << 3);
    put_varint(out, v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iterates_fields_and_reports_extents() {
        let mut b = Vec::new();
        put_varint_field(&mut b, 1, 300);
        put_len_field(&mut b, 2, b"hi");
        let fields: Vec<_> = FieldIter::new(&b).collect::<Result<_, _>>().unwrap();
        assert_eq!(fields.len(), 2);
        assert_eq!(fields[0].number, 1);
        assert_eq!(fields[1].value, b"hi");
        assert_eq!(fields[1].encoding, &[0x12, 2, b'h', b'i']);
    }

    #[test]
    fn rejects_ill_formed_input() {
        let bad: &[(&[u8], WireError)] = &[
            (&[0x08], WireError::Truncated),
            (
                &[0x0a, 0x05, 1],
                WireError::LengthPastEnd {
                    length: 5,
                    remaining: 1,
                },
            ),
            (&[0x00, 0x01], WireError::InvalidFieldNumber(0)),
            (&[0x0e], WireError::InvalidWireType(6)),
            (&[0x0c], WireError::UnexpectedEndGroup),
            (&[0x0b, 0x08, 0x01], WireError::UnterminatedGroup),
            (
                &[
                    0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
                ],
                WireError::VarintTooLong,
            ),
        ];
        for (bytes, want) in bad {
            let got = FieldIter::new(bytes).find_map(|r| r.err());
            assert_eq!(got.as_ref(), Some(want), "{bytes:?}");
        }
    }

    #[test]
    fn skips_nested_groups() {
        // field 1 start group, inner field 2 varint, end group 1, then field 3
        let b = [0x0b, 0x10, 0x05, 0x0c, 0x18, 0x01];
        let fields: Vec<_> = FieldIter::new(&b).collect::<Result<_, _>>().unwrap();
        assert_eq!(fields[0].wire_type, WireType::StartGroup);
        assert_eq!(fields[0].value, &[0x10, 0x05]);
        assert_eq!(fields[1].number, 3);
    }
}
