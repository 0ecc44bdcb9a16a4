//! A strict one-pass JSON reader over text that builds no tree: it tells a
//! [`Visit`]or each key, value and container as it reads them, strings
//! unescaped and numbers spelled as `serde_json` (with `arbitrary_precision`)
//! keeps them, so that a visitor can produce exactly the bytes a
//! `serde_json::Value` of the same text would serialize to.
//!
//! It is at least as strict as `serde_json::from_str` into a `Value`: it
//! refuses everything that parse refuses (bad syntax, a raw control character
//! or an invalid escape in a string, a lone surrogate, nesting past
//! [`MAX_DEPTH`], trailing data). What it accepts, that parse accepts too, and
//! reads the same. It does not itself refuse a repeated key (a `Value` keeps
//! the last one in the first one's place): a visitor whose output depends on
//! that wraps itself in [`NoRepeatedKeys`]. A [`WalkError`] is never a
//! verdict: callers fall back to the tree, which decides.

/// Deepest nesting accepted: `serde_json` refuses the 128th open container.
pub const MAX_DEPTH: usize = 127;

/// The rule a visitor stops on when one object repeats a key
/// ([`NoRepeatedKeys`], and the attestation's one pass).
pub const REPEATED_KEY: &str = "a key repeated in one object";

/// Why the one pass stopped (the caller then takes the tree path).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("byte {offset}: {rule}")]
pub struct WalkError {
    pub offset: usize,
    pub rule: &'static str,
}

/// One JSON escape of `b`, its backslash just before `at`, read as
/// `serde_json` reads it (a surrogate pair as one character, a lone
/// surrogate refused): the character and where the escape ends; else where
/// and which rule it breaks.
#[inline]
pub(crate) fn escape_at(b: &[u8], at: usize) -> Result<(char, usize), (usize, &'static str)> {
    let c = *b.get(at).ok_or((at, "unterminated escape"))?;
    let ch = match c {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let n = hex4(b, at + 1)?;
            let (n, end) = match n {
                0xD800..=0xDBFF => {
                    if b.get(at + 5..at + 7) != Some(b"\\u") {
                        return Err((at + 5, "lone leading surrogate"));
                    }
                    let n2 = hex4(b, at + 7)?;
                    if !(0xDC00..=0xDFFF).contains(&n2) {
                        return Err((at + 11, "lone leading surrogate"));
                    }
                    ((((n - 0xD800) << 10) | (n2 - 0xDC00)) + 0x1_0000, at + 11)
                }
                0xDC00..=0xDFFF => return Err((at + 5, "lone trailing surrogate")),
                _ => (n, at + 5),
            };
            let ch = char::from_u32(n).ok_or((end, "invalid code point"))?;
            return Ok((ch, end));
        }
        _ => return Err((at + 1, "invalid escape")),
    };
    Ok((ch, at + 1))
}

/// The four hex digits of a `\u` escape at `at` (either case).
#[inline]
fn hex4(b: &[u8], at: usize) -> Result<u32, (usize, &'static str)> {
    let digits = b.get(at..at + 4).ok_or((at, "short \\u escape"))?;
    let mut n = 0u32;
    for &d in digits {
        let x = match d {
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            b'A'..=b'F' => d - b'A' + 10,
            _ => return Err((at, "invalid \\u escape")),
        };
        n = n * 16 + u32::from(x);
    }
    Ok(n)
}

/// One scalar value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar<'a> {
    Null,
    Bool(bool),
    /// The number as `serde_json`'s arbitrary precision keeps it: as
    /// written, except an exponent, spelled `e` with an explicit sign.
    Number(&'a str),
    /// A string: its content as `serde_json` writes it ([`JsonStr`]).
    Str(JsonStr<'a>),
}

/// A string value as the walk reports it: its content as `serde_json`
/// writes it (escaped, without the quotes), taken straight from the text
/// whenever the text already spells it so (no escape, or only the escapes
/// `serde_json` itself writes), so that a large string is neither unescaped
/// nor copied; the unescaped string is made only on request
/// ([`JsonStr::unescaped`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonStr<'a> {
    json: &'a [u8],
    /// The string itself, when its content holds no escape at all.
    plain: Option<&'a str>,
}

impl<'a> JsonStr<'a> {
    /// A string without escapes: its content is itself.
    pub fn plain(s: &'a str) -> JsonStr<'a> {
        JsonStr {
            json: s.as_bytes(),
            plain: Some(s),
        }
    }

    /// The content as `serde_json` writes it, without the quotes.
    pub fn json(&self) -> &'a [u8] {
        self.json
    }

    /// The string, unescaped (a copy only when it holds escapes).
    pub fn unescaped(&self) -> std::borrow::Cow<'a, str> {
        match self.plain {
            Some(s) => std::borrow::Cow::Borrowed(s),
            None => std::borrow::Cow::Owned(unescape_serde(self.json)),
        }
    }
}

/// Undoes `serde_json`'s string escaping ([`write_string`]): `\"`, `\\`,
/// `\b \f \n \r \t` and `\u00xx`; the content is valid UTF-8 by
/// construction (a slice of the checked text, or written by
/// [`escape_char`]), so nothing else can occur.
fn unescape_serde(json: &[u8]) -> String {
    let mut out = Vec::with_capacity(json.len());
    let mut i = 0;
    while let Some(&b) = json.get(i) {
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        let (byte, used) = match json.get(i + 1) {
            Some(b'b') => (0x08, 2),
            Some(b'f') => (0x0c, 2),
            Some(b'n') => (b'\n', 2),
            Some(b'r') => (b'\r', 2),
            Some(b't') => (b'\t', 2),
            Some(b'u') => {
                let hex = json.get(i + 2..i + 6).unwrap_or_default();
                let n = std::str::from_utf8(hex)
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .unwrap_or(b'?');
                (n, 6)
            }
            Some(&c) => (c, 2),
            None => (b'\\', 1),
        };
        out.push(byte);
        i += used;
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

impl Scalar<'_> {
    /// The JSON type name (as the shape listings spell it).
    pub fn type_name(&self) -> &'static str {
        match self {
            Scalar::Null => "null",
            Scalar::Bool(_) => "boolean",
            Scalar::Number(_) => "number",
            Scalar::Str(..) => "string",
        }
    }

    /// How many bytes [`Self::write`] appends.
    pub fn written_len(&self) -> usize {
        match *self {
            Scalar::Null | Scalar::Bool(true) => 4,
            Scalar::Bool(false) => 5,
            Scalar::Number(n) => n.len(),
            Scalar::Str(text) => text.json.len() + 2,
        }
    }

    /// Appends the value's compact JSON, as `serde_json` writes it.
    pub fn write(&self, out: &mut Vec<u8>) {
        match *self {
            Scalar::Null => out.extend_from_slice(b"null"),
            Scalar::Bool(true) => out.extend_from_slice(b"true"),
            Scalar::Bool(false) => out.extend_from_slice(b"false"),
            Scalar::Number(n) => out.extend_from_slice(n.as_bytes()),
            Scalar::Str(text) => {
                out.push(b'"');
                out.extend_from_slice(text.json);
                out.push(b'"');
            }
        }
    }
}

/// What the reader reports, in document order. A member is a
/// [`Visit::key`] followed by its value; an array's elements are values.
pub trait Visit {
    /// `json`: the key's content as `serde_json` writes it (escaped,
    /// without the quotes).
    fn key(&mut self, key: &str, json: &[u8]) -> Result<(), WalkError>;
    fn begin_object(&mut self) -> Result<(), WalkError>;
    fn end_object(&mut self) -> Result<(), WalkError>;
    fn begin_array(&mut self) -> Result<(), WalkError>;
    fn end_array(&mut self) -> Result<(), WalkError>;
    fn scalar(&mut self, value: Scalar<'_>) -> Result<(), WalkError>;
}

/// Reads `text` as one JSON value (surrounding whitespace allowed),
/// reporting it to `v`.
pub fn walk<V: Visit>(text: &str, v: &mut V) -> Result<(), WalkError> {
    let mut r = Reader {
        text,
        b: text.as_bytes(),
        i: 0,
        scratch: String::new(),
        escaped: Vec::new(),
        number: String::new(),
    };
    r.ws();
    if let Err(mut e) = r.value(v, 0) {
        // A visitor's own stop carries no offset: it is where the reader was
        // (past the closing `}` of an object that repeats a key, say).
        if e.offset == 0 {
            e.offset = r.i;
        }
        return Err(e);
    }
    r.ws();
    if r.i != r.b.len() {
        return Err(r.err("trailing characters"));
    }
    Ok(())
}

/// Appends `s` as a JSON string escaped as `serde_json` escapes it: `"`,
/// `\`, and the control characters (`\b \f \n \r \t`, the others `\u00xx`
/// in lowercase hex); everything else, `/` and non-ASCII included, as is.
pub fn write_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    write_string_content(out, s);
    out.push(b'"');
}

/// [`write_string`] without the quotes.
fn write_string_content(out: &mut Vec<u8>, s: &str) {
    {
        let bytes = s.as_bytes();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let short: &[u8] = match b {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                0x08 => b"\\b",
                0x0c => b"\\f",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0..=0x1f => b"",
                _ => continue,
            };
            out.extend_from_slice(&bytes[start..i]);
            if short.is_empty() {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 15)]);
            } else {
                out.extend_from_slice(short);
            }
            start = i + 1;
        }
        out.extend_from_slice(&bytes[start..]);
    }
}

/// Appends one character as `serde_json` writes it inside a string.
fn escape_char(out: &mut Vec<u8>, ch: char) {
    match ch {
        '"' | '\\' | '\u{0}'..='\u{1f}' => {
            let mut buf = [0u8; 4];
            write_string_content(out, ch.encode_utf8(&mut buf));
        }
        _ => {
            let mut buf = [0u8; 4];
            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
        }
    }
}

struct Reader<'a> {
    text: &'a str,
    b: &'a [u8],
    i: usize,
    /// An escaped string's content, unescaped.
    scratch: String,
    /// The same as `serde_json` escapes it.
    escaped: Vec<u8>,
    /// A number respelled (an exponent).
    number: String,
}

/// Where a string's content is.
enum Content {
    /// `text[start..end]`, as written (no escape in it).
    Raw(usize, usize),
    /// `text[start..end]` holds escapes, each spelled as `serde_json`
    /// writes it: the content is its own serde form (a value's string,
    /// read without a copy).
    Canonical(usize, usize),
    /// In `escaped` (and, for a key, unescaped in `scratch`).
    Unescaped,
}

impl<'a> Reader<'a> {
    fn err(&self, rule: &'static str) -> WalkError {
        WalkError {
            offset: self.i,
            rule,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    fn value<V: Visit>(&mut self, v: &mut V, depth: usize) -> Result<(), WalkError> {
        match self.peek() {
            Some(b'{') => self.container(v, depth, true),
            Some(b'[') => self.container(v, depth, false),
            Some(b'"') => {
                self.i += 1;
                let content = self.string(false)?;
                match content {
                    Content::Raw(s, e) => {
                        let s = self.slice(s, e)?;
                        v.scalar(Scalar::Str(JsonStr::plain(s)))
                    }
                    Content::Canonical(s, e) => {
                        let json = self.slice(s, e)?.as_bytes();
                        v.scalar(Scalar::Str(JsonStr { json, plain: None }))
                    }
                    Content::Unescaped => {
                        let json = &self.escaped;
                        let r = v.scalar(Scalar::Str(JsonStr { json, plain: None }));
                        self.release_large();
                        r
                    }
                }
            }
            Some(b'-' | b'0'..=b'9') => {
                let n = self.number()?;
                v.scalar(Scalar::Number(n))
            }
            Some(b't') => self.literal(b"true", Scalar::Bool(true), v),
            Some(b'f') => self.literal(b"false", Scalar::Bool(false), v),
            Some(b'n') => self.literal(b"null", Scalar::Null, v),
            _ => Err(self.err("expected a value")),
        }
    }

    /// An object's members or an array's elements, its opening bracket
    /// next: the one loop both containers share.
    fn container<V: Visit>(
        &mut self,
        v: &mut V,
        depth: usize,
        object: bool,
    ) -> Result<(), WalkError> {
        if depth >= MAX_DEPTH {
            return Err(self.err("nested too deep"));
        }
        self.i += 1;
        let (close, expected) = if object {
            v.begin_object()?;
            (b'}', "expected `,` or `}`")
        } else {
            v.begin_array()?;
            (b']', "expected `,` or `]`")
        };
        let end = |v: &mut V| {
            if object {
                v.end_object()
            } else {
                v.end_array()
            }
        };
        self.ws();
        if self.peek() == Some(close) {
            self.i += 1;
            return end(v);
        }
        loop {
            if object {
                self.member_key(v)?;
            }
            self.value(v, depth + 1)?;
            self.ws();
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    self.ws();
                }
                Some(c) if c == close => {
                    self.i += 1;
                    return end(v);
                }
                _ => return Err(self.err(expected)),
            }
        }
    }

    /// A member's key and its colon, reported to `v`.
    fn member_key<V: Visit>(&mut self, v: &mut V) -> Result<(), WalkError> {
        if self.peek() != Some(b'"') {
            return Err(self.err("expected a key"));
        }
        self.i += 1;
        let content = self.string(true)?;
        self.report_key(content, v)?;
        self.ws();
        if self.peek() != Some(b':') {
            return Err(self.err("expected `:`"));
        }
        self.i += 1;
        self.ws();
        Ok(())
    }

    /// Gives back the string buffers after a large escaped string (a
    /// tool's whole output, say): they would otherwise stay that large for
    /// the rest of the walk, beside the outputs still growing.
    fn release_large(&mut self) {
        const KEEP: usize = 1 << 20;
        if self.scratch.capacity() > KEEP {
            self.scratch = String::new();
        }
        if self.escaped.capacity() > KEEP {
            self.escaped = Vec::new();
        }
    }

    fn slice(&self, s: usize, e: usize) -> Result<&'a str, WalkError> {
        self.text.get(s..e).ok_or(WalkError {
            offset: s,
            rule: "not on a character boundary",
        })
    }

    fn report_key<V: Visit>(&mut self, content: Content, v: &mut V) -> Result<(), WalkError> {
        match content {
            Content::Raw(s, e) => {
                let s = self.slice(s, e)?;
                v.key(s, s.as_bytes())
            }
            // A key is always unescaped into `scratch` (`string(true)`).
            Content::Canonical(..) | Content::Unescaped => v.key(&self.scratch, &self.escaped),
        }
    }

    fn literal<V: Visit>(
        &mut self,
        word: &[u8],
        value: Scalar<'_>,
        v: &mut V,
    ) -> Result<(), WalkError> {
        if self.b.get(self.i..self.i + word.len()) != Some(word) {
            return Err(self.err("expected a value"));
        }
        self.i += word.len();
        v.scalar(value)
    }

    /// A string's content, the opening quote consumed; leaves `i` past the
    /// closing quote. A key (`key`) is unescaped into `scratch` (with its
    /// serde form in `escaped`); a value's serde form is the text itself
    /// ([`Content::Canonical`]) until an escape `serde_json` would spell
    /// otherwise (`\/`, `\u00e9`, an uppercase hex digit), from which on
    /// it is written into `escaped`.
    fn string(&mut self, key: bool) -> Result<Content, WalkError> {
        let start = self.i;
        let stop = self.special(start);
        match self.b.get(stop) {
            Some(b'"') => {
                self.i = stop + 1;
                return Ok(Content::Raw(start, stop));
            }
            Some(b'\\') => {}
            Some(_) => {
                self.i = stop;
                return Err(self.err("control character in a string"));
            }
            None => {
                self.i = stop;
                return Err(self.err("unterminated string"));
            }
        }
        self.scratch.clear();
        self.escaped.clear();
        // Whether `escaped` is being written (else the text up to here is
        // the serde form itself).
        let mut copying = key;
        let mut from = start;
        let mut at = stop;
        loop {
            match self.b.get(at) {
                Some(b'"') => {
                    self.i = at + 1;
                    if !copying {
                        return Ok(Content::Canonical(start, at));
                    }
                    let seg = self.slice(from, at)?;
                    if key {
                        self.scratch.push_str(seg);
                    }
                    self.escaped.extend_from_slice(seg.as_bytes());
                    return Ok(Content::Unescaped);
                }
                Some(b'\\') => {
                    self.i = at + 1;
                    let (ch, canonical) = self.escape()?;
                    if !copying && !canonical {
                        // The serde form so far is the text so far.
                        let done = self.slice(start, at)?;
                        self.escaped.extend_from_slice(done.as_bytes());
                        copying = true;
                    } else if copying {
                        let seg = self.slice(from, at)?;
                        if key {
                            self.scratch.push_str(seg);
                        }
                        self.escaped.extend_from_slice(seg.as_bytes());
                    }
                    if copying {
                        if key {
                            self.scratch.push(ch);
                        }
                        escape_char(&mut self.escaped, ch);
                    }
                    from = self.i;
                    at = self.special(from);
                }
                Some(_) => {
                    self.i = at;
                    return Err(self.err("control character in a string"));
                }
                None => {
                    self.i = at;
                    return Err(self.err("unterminated string"));
                }
            }
        }
    }

    /// The first `"`, `\` or control character at or after `from` (or the
    /// end of the text).
    fn special(&self, from: usize) -> usize {
        // Eight bytes at a time (Mycroft's test for a zero byte, as
        // serde_json's own scan does): the lowest flagged byte is exact.
        const ONES: u64 = u64::MAX / 255;
        let rest = self.b.get(from..).unwrap_or_default();
        let mut chunks = rest.chunks_exact(8);
        let mut at = from;
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let chars = u64::from_le_bytes(word);
            let ctrl = chars.wrapping_sub(ONES * 0x20) & !chars;
            let q = chars ^ (ONES * u64::from(b'"'));
            let quote = q.wrapping_sub(ONES) & !q;
            let b = chars ^ (ONES * u64::from(b'\\'));
            let backslash = b.wrapping_sub(ONES) & !b;
            let found = (ctrl | quote | backslash) & (ONES << 7);
            if found != 0 {
                return at + found.trailing_zeros() as usize / 8;
            }
            at += 8;
        }
        for &b in chunks.remainder() {
            if b == b'"' || b == b'\\' || b < 0x20 {
                return at;
            }
            at += 1;
        }
        at
    }

    /// One escape, the backslash consumed: the character, and whether the
    /// escape is spelled as `serde_json` writes that character.
    fn escape(&mut self) -> Result<(char, bool), WalkError> {
        let at = self.i;
        let (ch, end) =
            escape_at(self.b, at).map_err(|(offset, rule)| WalkError { offset, rule })?;
        self.i = end;
        let canonical = match self.b.get(at) {
            Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => true,
            Some(b'u') => {
                let mut serde = Vec::with_capacity(6);
                escape_char(&mut serde, ch);
                // The escape's own spelling, backslash included.
                self.b.get(at - 1..self.i) == Some(serde.as_slice())
            }
            _ => false,
        };
        Ok((ch, canonical))
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - start
    }

    /// A number, as `serde_json`'s arbitrary precision spells it.
    fn number(&mut self) -> Result<&str, WalkError> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.i += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(self.err("leading zero"));
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.err("invalid number")),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(self.err("no digit after the decimal point"));
            }
        }
        let mantissa_end = self.i;
        if !matches!(self.peek(), Some(b'e' | b'E')) {
            return self.slice(start, mantissa_end);
        }
        self.i += 1;
        let sign = match self.peek() {
            Some(b'-') => {
                self.i += 1;
                "-"
            }
            Some(b'+') => {
                self.i += 1;
                "+"
            }
            _ => "+",
        };
        let exp_start = self.i;
        if self.digits() == 0 {
            return Err(self.err("no digit in the exponent"));
        }
        let mantissa = self.slice(start, mantissa_end)?;
        let exponent = self.slice(exp_start, self.i)?;
        self.number.clear();
        self.number.push_str(mantissa);
        self.number.push('e');
        self.number.push_str(sign);
        self.number.push_str(exponent);
        Ok(&self.number)
    }
}

/// A visitor wrapped so that a key repeated in one object stops the walk
/// (a `Value` would keep only the last one's value).
pub struct NoRepeatedKeys<V> {
    pub inner: V,
    keys: KeySet,
}

impl<V> NoRepeatedKeys<V> {
    pub fn new(inner: V) -> Self {
        NoRepeatedKeys {
            inner,
            keys: KeySet::default(),
        }
    }
}

/// The keys of the open objects, checked for repeats when an object closes
/// (keys that arrive in ascending order cannot repeat: no sort then).
#[derive(Default)]
pub struct KeySet {
    text: String,
    /// Per key of the open objects: its range in `text`.
    keys: Vec<(usize, usize)>,
    /// Per open container: `Some((first key, ascending so far))` for an object.
    frames: Vec<Option<(usize, bool)>>,
}

impl KeySet {
    pub fn begin(&mut self, object: bool) {
        self.frames.push(object.then_some((self.keys.len(), true)));
    }

    pub fn key(&mut self, k: &str) {
        if let Some(Some((first, ascending))) = self.frames.last_mut() {
            if *ascending && self.keys.len() > *first {
                if let Some(&(s, e)) = self.keys.last() {
                    if self.text.get(s..e).is_none_or(|prev| prev >= k) {
                        *ascending = false;
                    }
                }
            }
            let s = self.text.len();
            self.text.push_str(k);
            self.keys.push((s, self.text.len()));
        }
    }

    /// Closes the innermost container; an error when the object it closes
    /// repeats a key.
    pub fn end(&mut self) -> Result<(), WalkError> {
        let Some(Some((first, ascending))) = self.frames.pop() else {
            return Ok(());
        };
        let own = self.keys.get(first..).unwrap_or_default();
        let mut repeated = false;
        if !ascending {
            let mut ks: Vec<&str> = own
                .iter()
                .map(|&(s, e)| self.text.get(s..e).unwrap_or_default())
                .collect();
            ks.sort_unstable();
            repeated = ks.windows(2).any(|w| w[0] == w[1]);
        }
        if let Some(&(s, _)) = own.first() {
            self.text.truncate(s);
        }
        self.keys.truncate(first);
        if repeated {
            return Err(WalkError {
                offset: 0,
                rule: REPEATED_KEY,
            });
        }
        Ok(())
    }
}

impl<V: Visit> Visit for NoRepeatedKeys<V> {
    fn key(&mut self, key: &str, json: &[u8]) -> Result<(), WalkError> {
        self.keys.key(key);
        self.inner.key(key, json)
    }
    fn begin_object(&mut self) -> Result<(), WalkError> {
        self.keys.begin(true);
        self.inner.begin_object()
    }
    fn end_object(&mut self) -> Result<(), WalkError> {
        self.keys.end()?;
        self.inner.end_object()
    }
    fn begin_array(&mut self) -> Result<(), WalkError> {
        self.keys.begin(false);
        self.inner.begin_array()
    }
    fn end_array(&mut self) -> Result<(), WalkError> {
        self.keys.end()?;
        self.inner.end_array()
    }
    fn scalar(&mut self, value: Scalar<'_>) -> Result<(), WalkError> {
        self.inner.scalar(value)
    }
}

/// Re-writes the text compactly (the simplest visitor; a `Value`'s
/// `to_string` of the same text, for the tests).
#[cfg(test)]
pub(crate) struct Compact {
    pub out: Vec<u8>,
    first: Vec<bool>,
}

#[cfg(test)]
impl Compact {
    pub fn new() -> Self {
        Compact {
            out: Vec::new(),
            first: Vec::new(),
        }
    }
    fn value_start(&mut self, is_key: bool) {
        if let Some(f) = self.first.last_mut() {
            if is_key || !self.out.ends_with(b":") {
                if !*f {
                    self.out.push(b',');
                }
                *f = false;
            }
        }
    }
}

#[cfg(test)]
impl Visit for Compact {
    fn key(&mut self, key: &str, json: &[u8]) -> Result<(), WalkError> {
        self.value_start(true);
        let _ = key;
        Scalar::Str(JsonStr { json, plain: None }).write(&mut self.out);
        self.out.push(b':');
        Ok(())
    }
    fn begin_object(&mut self) -> Result<(), WalkError> {
        self.value_start(false);
        self.out.push(b'{');
        self.first.push(true);
        Ok(())
    }
    fn end_object(&mut self) -> Result<(), WalkError> {
        self.first.pop();
        self.out.push(b'}');
        Ok(())
    }
    fn begin_array(&mut self) -> Result<(), WalkError> {
        self.value_start(false);
        self.out.push(b'[');
        self.first.push(true);
        Ok(())
    }
    fn end_array(&mut self) -> Result<(), WalkError> {
        self.first.pop();
        self.out.push(b']');
        Ok(())
    }
    fn scalar(&mut self, value: Scalar<'_>) -> Result<(), WalkError> {
        self.value_start(false);
        value.write(&mut self.out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compact(text: &str) -> Result<String, WalkError> {
        let mut c = NoRepeatedKeys::new(Compact::new());
        walk(text, &mut c)?;
        Ok(String::from_utf8(c.inner.out).unwrap())
    }

    /// Texts whose every accepted reading must equal serde_json's.
    pub(crate) const NASTY: &[&str] = &[
        r#"{}"#,
        r#"[]"#,
        r#" { "a" : [ ] , "b" : { } } "#,
        r#"{"s":"tab\t quote\" slash\/ back\\ nul\u0000 \u001F \u007f é 😀 \ud83d\ude00 \uD83D\uDE00 \u00e9 \b\f\n\r"}"#,
        r#"{"n":[0,-0,-0.0,1.0,1.000000000000000000001,1e400,1E400,1e+5,1E-5,-1.5e300,12345678901234567890,-9223372036854775809,18446744073709551616,0.5e0]}"#,
        r#"{"k\"ey":1,"k\\ey":2,"\u00e9":3,"é2":4,"":5,"a/b":6,"\n":7}"#,
        r#"{"agyReader":{"x":1},"b":{"agyReader":2},"a":1}"#,
        r#"{"z":1,"y":2,"x":{"c":[{"b":1,"a":2}],"a":null}}"#,
        r#"[true,false,null,"",[[]],[{}]]"#,
        "\"\u{2028}\u{7f}\"",
        "123",
        r#"{"a":"\u0041\u00410"}"#,
    ];

    const BAD: &[&str] = &[
        "",
        " ",
        "{",
        "[1,]",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "01",
        "-",
        "1.",
        "1e",
        "1e+",
        ".5",
        "+1",
        "\"\\ud800\"",
        "\"\\ud800x\"",
        "\"\\ud800\\n\"",
        "\"\\udc00\"",
        "\"\\ud800\\ud800\"",
        "\"\\x\"",
        "\"\\u12\"",
        "\"\\u12g4\"",
        "\"a\u{1}b\"",
        "\"a\tb\"",
        "\"abc",
        "tru",
        "nulll",
        "[1] 2",
        "{\"a\":1}x",
        "{1:2}",
        "[1 2]",
        "NaN",
        "Infinity",
    ];

    #[test]
    fn reads_as_serde_json_writes() {
        for t in NASTY {
            let v: serde_json::Value = serde_json::from_str(t).unwrap();
            assert_eq!(compact(t).unwrap(), v.to_string(), "{t}");
        }
    }

    #[test]
    fn a_scalar_says_how_long_it_is_written() {
        let mut n = 0;
        let mut check = Scalars(|value: Scalar<'_>| {
            let mut out = Vec::new();
            value.write(&mut out);
            assert_eq!(value.written_len(), out.len(), "{out:?}");
            n += 1;
        });
        for t in NASTY {
            walk(t, &mut check).unwrap();
        }
        assert!(n > 30, "{n}");
    }

    /// A visitor that hands each scalar to its closure.
    struct Scalars<F>(F);

    impl<F: FnMut(Scalar<'_>)> Visit for Scalars<F> {
        fn key(&mut self, _: &str, _: &[u8]) -> Result<(), WalkError> {
            Ok(())
        }
        fn begin_object(&mut self) -> Result<(), WalkError> {
            Ok(())
        }
        fn end_object(&mut self) -> Result<(), WalkError> {
            Ok(())
        }
        fn begin_array(&mut self) -> Result<(), WalkError> {
            Ok(())
        }
        fn end_array(&mut self) -> Result<(), WalkError> {
            Ok(())
        }
        fn scalar(&mut self, value: Scalar<'_>) -> Result<(), WalkError> {
            (self.0)(value);
            Ok(())
        }
    }

    #[test]
    fn refuses_what_serde_json_refuses() {
        for t in BAD {
            assert!(
                serde_json::from_str::<serde_json::Value>(t).is_err(),
                "{t:?}"
            );
            assert!(compact(t).is_err(), "{t:?}");
        }
    }

    #[test]
    fn depth_bound_and_repeated_keys() {
        let deep = |n: usize| "[".repeat(n) + &"]".repeat(n);
        assert!(compact(&deep(MAX_DEPTH)).is_ok());
        assert!(compact(&deep(MAX_DEPTH + 1)).is_err());
        assert!(serde_json::from_str::<serde_json::Value>(&deep(MAX_DEPTH)).is_ok());
        for t in [
            r#"{"a":1,"a":2}"#,
            r#"{"b":1,"a":2,"b":3}"#,
            r#"{"a":1,"\u0061":2}"#,
            r#"[{"x":{"y":1,"y":1}}]"#,
        ] {
            assert!(compact(t).is_err(), "{t}");
        }
        assert!(compact(r#"{"b":{"a":1},"a":{"a":1},"c":[{"a":1},{"a":2}]}"#).is_ok());
    }

    #[test]
    fn finds_the_first_special_byte_at_every_offset() {
        for len in 0..40 {
            for at in 0..=len {
                for special in [b'"', b'\\', 0u8, 0x1f] {
                    let mut b = vec![b'a'; len];
                    b.extend_from_slice(&[0x80, 0xff, 0x20, 0x7f].repeat(3));
                    if at < len {
                        b[at] = special;
                        if at + 1 < len {
                            b[at + 1] = b'"';
                        }
                    }
                    let text = String::from_utf8_lossy(&b).into_owned();
                    let r = Reader {
                        text: &text,
                        b: text.as_bytes(),
                        i: 0,
                        scratch: String::new(),
                        escaped: Vec::new(),
                        number: String::new(),
                    };
                    let want =
                        r.b.iter()
                            .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
                            .unwrap_or(r.b.len());
                    assert_eq!(r.special(0), want, "{len} {at} {special}");
                }
            }
        }
    }

    #[test]
    fn escapes_as_serde_json() {
        let all: String = (0u32..0x300).filter_map(char::from_u32).collect();
        let mut out = Vec::new();
        write_string(&mut out, &all);
        assert_eq!(out, serde_json::to_vec(&all).unwrap());
        for ch in all.chars() {
            let mut out = Vec::new();
            escape_char(&mut out, ch);
            let want = serde_json::to_vec(&ch.to_string()).unwrap();
            assert_eq!(out, want[1..want.len() - 1], "{ch:?}");
        }
        // Every \u escape of the BMP (surrogates aside), read back as
        // serde_json writes it.
        for n in (0u32..0x10000).filter(|n| !(0xD800..0xE000).contains(n)) {
            for t in [format!("\"\\u{n:04x}\""), format!("\"x\\u{n:04X}\\n\"")] {
                let v: serde_json::Value = serde_json::from_str(&t).unwrap();
                assert_eq!(compact(&t).unwrap(), v.to_string(), "{t}");
            }
        }
    }

    /// Each string value: its serde form, its unescaped text, and whether
    /// the serde form was read in place (a slice of the text).
    fn strings(text: &str) -> Vec<(Vec<u8>, String, bool)> {
        let mut seen = Vec::new();
        let range = text.as_bytes().as_ptr_range();
        let mut v = Scalars(|value: Scalar<'_>| {
            if let Scalar::Str(s) = value {
                let in_place = range.contains(&s.json().as_ptr());
                seen.push((s.json().to_vec(), s.unescaped().into_owned(), in_place));
            }
        });
        walk(text, &mut v).unwrap();
        seen
    }

    #[test]
    fn a_value_escaped_as_serde_writes_it_is_read_in_place() {
        let text = r#"["plain","line\nbreak \"q\" \\ \t\r\b\f \u001f\u0000"]"#;
        let got = strings(text);
        let want: Vec<String> = serde_json::from_str(text).unwrap();
        assert_eq!(got.len(), 2);
        for ((json, unescaped, in_place), w) in got.iter().zip(&want) {
            assert_eq!(unescaped, w);
            let serde = serde_json::to_vec(w).unwrap();
            assert_eq!(json.as_slice(), &serde[1..serde.len() - 1]);
            assert!(in_place, "{w:?} was copied");
        }
    }

    #[test]
    fn a_value_serde_would_spell_otherwise_is_respelled() {
        // `\/`, an uppercase or a non-control `\u`, `\u0008` (serde: `\b`),
        // a surrogate pair: each respelled from where it occurs.
        for text in [
            r#""a\/b""#,
            r#""x\n\u001F""#,
            r#""caf\u00e9 \n""#,
            r#""\n\u0008""#,
            r#""\ud83d\ude00 ok\"""#,
            r#""\\ then \/ then \n""#,
        ] {
            let got = strings(text);
            let want: String = serde_json::from_str(text).unwrap();
            let serde = serde_json::to_vec(&want).unwrap();
            assert_eq!(got[0].0, &serde[1..serde.len() - 1], "{text}");
            assert_eq!(got[0].1, want, "{text}");
            assert!(!got[0].2, "{text}: not the text's own spelling");
        }
    }

    #[test]
    fn unescaping_a_serde_form_gives_the_string() {
        let all: String = (0u32..0x300).filter_map(char::from_u32).collect();
        let serde = serde_json::to_vec(&all).unwrap();
        assert_eq!(unescape_serde(&serde[1..serde.len() - 1]), all);
    }
}
