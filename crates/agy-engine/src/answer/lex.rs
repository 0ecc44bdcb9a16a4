//! A strict JSON reader that takes its text in chunks of any size, as they
//! arrive, and tells a [`Events`] sink where each value starts and ends.
//!
//! What it accepts is RFC 8259 JSON exactly as `serde_json` accepts it (the
//! reference the answer's envelope was checked with before, and the parser
//! every later reading uses): one value, whitespace around it (space, tab,
//! line feed, carriage return); strings without raw control characters and
//! with only the escapes `\" \\ \/ \b \f \n \r \t \uXXXX` (a `\u` escape
//! may name a lone surrogate, as `serde_json` lets a string it skips do;
//! a key the sink asks for ([`Events::wants_key`]) must pair them, as a
//! key read as text must); numbers in the grammar's spelling (no leading
//! zero, no `+`, no bare `.`); `true`, `false`, `null`. It does not check
//! UTF-8 (the caller runs one validator over every byte, since an invalid
//! byte is named before any syntax error) and holds nothing of the text but
//! what a sink asks to capture, bounded by [`CAPTURE_CAP`] and [`KEY_CAP`].
//!
//! Nesting deeper than the caller's limit stops it with
//! [`LexError::TooDeep`]; any other fault with [`LexError::Syntax`]. After a
//! syntax error it goes on counting nesting the tolerant way (a string runs
//! to its next unescaped quote, an escape takes the byte after it), so that
//! a too-deep nesting later in the text is still found: the answer's
//! envelope names that before a syntax error, wherever each lies.

/// The most bytes of one value a sink can capture ([`Events::value_start`]).
pub const CAPTURE_CAP: usize = 4096;

use crate::util::nesting::Nesting;

/// The most bytes of one decoded key handed to a sink; a longer key is
/// handed on cut there, marked as cut.
pub const KEY_CAP: usize = 1024;

/// What a value is, from its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Object,
    Array,
    String,
    Number,
    Bool,
    Null,
}

/// A decoded member name, as much of it as [`KEY_CAP`] allows.
#[derive(Debug, Clone, Copy)]
pub struct Key<'a> {
    /// The key's text (escapes decoded), or `None` when its escapes name a
    /// lone surrogate (no text: a reader of keys as text refuses it).
    pub text: Option<&'a str>,
    /// The key was longer than [`KEY_CAP`] bytes and `text` is its start.
    pub cut: bool,
}

/// A captured value's bytes.
#[derive(Debug)]
pub struct Captured<'a> {
    pub bytes: &'a [u8],
    /// The value was longer than [`CAPTURE_CAP`] and `bytes` is its start.
    pub cut: bool,
}

/// What the reader tells its sink, in the order of the text. `depth` is the
/// number of containers around the value (the top value is at 0, a member
/// of the top object at 1).
pub trait Events {
    /// A value starts at byte `offset`; `true` asks for its bytes at its end.
    fn value_start(&mut self, depth: usize, offset: u64, kind: Kind) -> bool;
    /// The value that started last at `depth` ends before byte `end`.
    fn value_end(&mut self, depth: usize, end: u64, captured: Option<Captured<'_>>);
    /// Whether the names of the members at `depth` are wanted (decoded and
    /// checked as text, as `serde_json` checks a key it reads).
    fn wants_key(&self, depth: usize) -> bool;
    /// A wanted member name at `depth`.
    fn key(&mut self, depth: usize, key: Key<'_>);
}

/// Why the text is not one JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LexError {
    /// A container opens deeper than the limit, at this byte.
    TooDeep { offset: u64 },
    /// The text breaks the grammar at this byte.
    Syntax { offset: u64, what: &'static str },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    E,
    ESign,
    Exp,
}

impl Num {
    fn complete(self) -> bool {
        matches!(self, Num::Zero | Num::Int | Num::Frac | Num::Exp)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// A value is expected; `close`: `]` may end an empty array here.
    Value {
        close: bool,
    },
    /// A `,` or the enclosing container's end is expected.
    After,
    /// A member name is expected; `close`: `}` may end an empty object.
    Key {
        close: bool,
    },
    Colon,
    /// Inside a string (a key or a value).
    Str {
        key: bool,
    },
    /// Just after a backslash.
    Escape {
        key: bool,
    },
    /// Inside `\u`, `n` hex digits read so far, their value `acc`.
    Hex {
        key: bool,
        n: u8,
        acc: u16,
    },
    Number(Num),
    /// A literal, this many of its bytes read.
    Literal {
        word: &'static [u8],
        at: u8,
    },
    /// The top value is complete: only whitespace may follow.
    Done,
    /// A syntax error: only nesting is counted now (see the module doc).
    Tolerant {
        in_string: bool,
        escape: bool,
    },
    /// Too deep: nothing more is read.
    Stopped,
}

/// Bytes that end the fast run inside a string: the quote, the backslash
/// and the control characters.
const fn string_stops() -> [bool; 256] {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
}
static STRING_STOPS: [bool; 256] = string_stops();

/// Where the plain bytes of a string from `i` end: the first quote,
/// backslash or control character, or the end of `b`. Eight bytes are
/// looked at a time (whether any of them is one of those), then the one is
/// found byte by byte.
fn plain_run(b: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte of `x` is zero / below 0x20: exact as to whether any is.
    let any_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    while let Some(word) = b.get(i..i + 8) {
        let Ok(word) = <[u8; 8]>::try_from(word) else {
            break;
        };
        let x = u64::from_le_bytes(word);
        let stops = any_zero(x ^ (ONES * u64::from(b'"')))
            | any_zero(x ^ (ONES * u64::from(b'\\')))
            | (x.wrapping_sub(ONES * 0x20) & !x & HIGH);
        if stops != 0 {
            break;
        }
        i += 8;
    }
    while i < b.len() && !STRING_STOPS[b[i] as usize] {
        i += 1;
    }
    i
}

/// Where the reader is in the chunk being pushed.
struct At<'c> {
    chunk: &'c [u8],
    i: usize,
    /// Where the captured value's bytes in this chunk begin.
    cap_from: Option<usize>,
}

/// The reader's state between chunks.
pub struct Lexer {
    max_depth: usize,
    /// Bytes consumed before the current chunk.
    base: u64,
    /// The open containers, `true` for an object.
    stack: Vec<bool>,
    state: State,
    error: Option<LexError>,
    /// The wanted key being read: its decoded bytes, whether it was cut,
    /// whether its escapes were valid text, and a high surrogate waiting for
    /// its pair.
    key: Vec<u8>,
    key_wanted: bool,
    key_cut: bool,
    key_bad: bool,
    high: Option<u16>,
    /// The value being captured: the depth it started at, its bytes so far
    /// (at most [`CAPTURE_CAP`]), whether it was cut.
    capture: Option<usize>,
    captured: Vec<u8>,
    capture_cut: bool,
    /// A `\u` escape of a surrogate was read somewhere.
    surrogates: bool,
}

impl Lexer {
    /// A reader that refuses containers nested deeper than `max_depth`.
    pub fn new(max_depth: usize) -> Lexer {
        Lexer {
            max_depth,
            base: 0,
            stack: Vec::new(),
            state: State::Value { close: false },
            error: None,
            key: Vec::new(),
            key_wanted: false,
            key_cut: false,
            key_bad: false,
            high: None,
            capture: None,
            captured: Vec::new(),
            capture_cut: false,
            surrogates: false,
        }
    }

    /// Whether a `\u` escape of a surrogate (paired or not) was read in any
    /// string: a reader of strings as text may refuse what this one took.
    pub fn saw_surrogate_escape(&self) -> bool {
        self.surrogates
    }

    /// Reads the next bytes of the text.
    pub fn push<E: Events>(&mut self, chunk: &[u8], sink: &mut E) {
        let mut at = At {
            chunk,
            i: 0,
            // Where the captured value's bytes in this chunk begin.
            cap_from: self.capture.map(|_| 0),
        };
        while at.i < chunk.len() {
            let c = chunk[at.i];
            match self.state {
                State::Str { key } => self.string_run(&mut at, sink, key),
                State::Escape { key } => self.escape(&mut at, key),
                State::Hex { key, n, acc } => self.hex(&mut at, key, n, acc),
                State::Number(n) => self.number(&mut at, sink, n),
                State::Literal { word, at: k } => {
                    if word.get(usize::from(k)) != Some(&c) {
                        self.fail(at.i, "an invalid literal");
                        continue;
                    }
                    at.i += 1;
                    if usize::from(k) + 1 == word.len() {
                        let end = at.i;
                        self.end_value(sink, &mut at, end);
                    } else {
                        self.state = State::Literal { word, at: k + 1 };
                    }
                }
                State::Tolerant { in_string, escape } => {
                    at.i = self.tolerant(chunk, at.i, in_string, escape);
                }
                State::Stopped => return,
                _ if matches!(c, b' ' | b'\t' | b'\n' | b'\r') => at.i += 1,
                State::Value { close } => self.value(&mut at, sink, close),
                State::After => self.after(&mut at, sink),
                State::Key { close } => match c {
                    b'"' => {
                        let depth = self.stack.len();
                        self.key_wanted = sink.wants_key(depth);
                        self.key.clear();
                        self.key_cut = false;
                        self.key_bad = false;
                        self.high = None;
                        self.state = State::Str { key: true };
                        at.i += 1;
                    }
                    b'}' if close => self.close(sink, &mut at),
                    _ => self.fail(at.i, "expected a member name"),
                },
                State::Colon if c == b':' => {
                    self.state = State::Value { close: false };
                    at.i += 1;
                }
                State::Colon => self.fail(at.i, "expected `:`"),
                State::Done => self.fail(at.i, "trailing characters after the value"),
            }
        }
        if let (Some(from), Some(_)) = (at.cap_from, self.capture) {
            self.capture_bytes(&chunk[from.min(chunk.len())..]);
        }
        self.base += chunk.len() as u64;
    }

    /// Inside a string: the fast run of plain bytes up to a quote, a
    /// backslash or a control character, then that byte.
    fn string_run<E: Events>(&mut self, at: &mut At<'_>, sink: &mut E, key: bool) {
        let chunk = at.chunk;
        let start = at.i;
        let wanted = key && self.key_wanted;
        let mut i = plain_run(chunk, at.i);
        // A string nobody reads: a one-letter escape is stepped over here,
        // without a turn of the state machine.
        while !wanted && chunk.get(i) == Some(&b'\\') {
            match chunk.get(i + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                    i = plain_run(chunk, i + 2);
                }
                _ => break,
            }
        }
        if wanted {
            if self.high.is_some() && i > start {
                self.key_bad = true;
                self.high = None;
            }
            self.key_bytes(&chunk[start..i]);
        }
        at.i = i;
        let Some(&c) = chunk.get(i) else { return };
        match c {
            b'"' if key => {
                self.end_key(sink);
                self.state = State::Colon;
                at.i += 1;
            }
            b'"' => self.end_value(sink, at, i + 1),
            b'\\' => {
                self.state = State::Escape { key };
                at.i += 1;
            }
            _ => self.fail(i, "a control character in a string"),
        }
    }

    /// The byte after a backslash.
    fn escape(&mut self, at: &mut At<'_>, key: bool) {
        let decoded = match at.chunk[at.i] {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                self.state = State::Hex { key, n: 0, acc: 0 };
                at.i += 1;
                return;
            }
            _ => {
                // The tolerant count takes this byte with the backslash, as
                // it would have.
                self.fail(at.i, "an invalid escape");
                at.i += 1;
                return;
            }
        };
        if key && self.key_wanted {
            if self.high.take().is_some() {
                self.key_bad = true;
            }
            self.key_bytes(&[decoded]);
        }
        self.state = State::Str { key };
        at.i += 1;
    }

    /// A hex digit of a `\u` escape, `n` read before it.
    fn hex(&mut self, at: &mut At<'_>, key: bool, n: u8, acc: u16) {
        let Some(d) = (at.chunk[at.i] as char).to_digit(16) else {
            // The tolerant count reads this byte again, inside the string.
            self.fail(at.i, "an invalid \\u escape");
            return;
        };
        let acc = (acc << 4) | d as u16;
        self.state = if n == 3 {
            if (0xD800..=0xDFFF).contains(&acc) {
                self.surrogates = true;
            }
            if key && self.key_wanted {
                self.key_unit(acc);
            }
            State::Str { key }
        } else {
            State::Hex { key, n: n + 1, acc }
        };
        at.i += 1;
    }

    /// A byte inside a number: its next state, or its end (the byte is then
    /// read again as what follows a value).
    fn number<E: Events>(&mut self, at: &mut At<'_>, sink: &mut E, n: Num) {
        let c = at.chunk[at.i];
        let next = match (n, c) {
            (Num::Minus, b'0') => Some(Num::Zero),
            (Num::Minus, b'1'..=b'9') => Some(Num::Int),
            (Num::Int, b'0'..=b'9') => Some(Num::Int),
            (Num::Zero | Num::Int, b'.') => Some(Num::Dot),
            (Num::Dot | Num::Frac, b'0'..=b'9') => Some(Num::Frac),
            (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Some(Num::E),
            (Num::E, b'+' | b'-') => Some(Num::ESign),
            (Num::E | Num::ESign | Num::Exp, b'0'..=b'9') => Some(Num::Exp),
            _ => None,
        };
        match next {
            Some(n) => {
                self.state = State::Number(n);
                at.i += 1;
            }
            None if n.complete() && !c.is_ascii_digit() => {
                let end = at.i;
                self.end_value(sink, at, end);
            }
            None => self.fail(at.i, "an invalid number"),
        }
    }

    /// Where a value is expected: its first byte (or the `]` of an empty
    /// array).
    fn value<E: Events>(&mut self, at: &mut At<'_>, sink: &mut E, close: bool) {
        let c = at.chunk[at.i];
        if close && c == b']' {
            self.close(sink, at);
            return;
        }
        let kind = match c {
            b'{' => Kind::Object,
            b'[' => Kind::Array,
            b'"' => Kind::String,
            b'-' | b'0'..=b'9' => Kind::Number,
            b't' | b'f' => Kind::Bool,
            b'n' => Kind::Null,
            _ => {
                self.fail(at.i, "expected a value");
                return;
            }
        };
        if matches!(kind, Kind::Object | Kind::Array) && self.stack.len() >= self.max_depth {
            self.error = Some(LexError::TooDeep {
                offset: self.base + at.i as u64,
            });
            self.state = State::Stopped;
            at.i = at.chunk.len();
            return;
        }
        let depth = self.stack.len();
        if sink.value_start(depth, self.base + at.i as u64, kind) && self.capture.is_none() {
            self.capture = Some(depth);
            self.captured.clear();
            self.capture_cut = false;
            at.cap_from = Some(at.i);
        }
        self.state = match c {
            b'{' => {
                self.stack.push(true);
                State::Key { close: true }
            }
            b'[' => {
                self.stack.push(false);
                State::Value { close: true }
            }
            b'"' => State::Str { key: false },
            b't' => State::Literal {
                word: b"true",
                at: 1,
            },
            b'f' => State::Literal {
                word: b"false",
                at: 1,
            },
            b'n' => State::Literal {
                word: b"null",
                at: 1,
            },
            b'-' => State::Number(Num::Minus),
            b'0' => State::Number(Num::Zero),
            _ => State::Number(Num::Int),
        };
        at.i += 1;
    }

    /// After a value: a `,` or the end of its container.
    fn after<E: Events>(&mut self, at: &mut At<'_>, sink: &mut E) {
        let object = self.stack.last().copied().unwrap_or(false);
        match at.chunk[at.i] {
            b',' => {
                self.state = if object {
                    State::Key { close: false }
                } else {
                    State::Value { close: false }
                };
                at.i += 1;
            }
            b'}' if object => self.close(sink, at),
            b']' if !object => self.close(sink, at),
            _ => self.fail(at.i, "expected `,` or the end of the container"),
        }
    }

    /// The end of the text: the first fault, if any.
    pub fn finish<E: Events>(&mut self, sink: &mut E) -> Result<(), LexError> {
        if let State::Number(n) = self.state {
            if n.complete() {
                let mut at = At {
                    chunk: &[],
                    i: 0,
                    cap_from: self.capture.map(|_| 0),
                };
                self.end_value(sink, &mut at, 0);
            }
        }
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        match self.state {
            State::Done => Ok(()),
            _ => Err(LexError::Syntax {
                offset: self.base,
                what: "the text ends inside a value",
            }),
        }
    }

    /// The tolerant count of nesting after a syntax error, from `i`
    /// ([`Nesting`]); returns where the chunk ends.
    fn tolerant(&mut self, chunk: &[u8], i: usize, in_string: bool, escape: bool) -> usize {
        let mut count = Nesting {
            depth: self.stack.len(),
            max: 0,
            in_string,
            escape,
        };
        if let Err(at) = count.feed(&chunk[i..], self.max_depth) {
            // Too deep outranks the syntax error before it.
            self.error = Some(LexError::TooDeep {
                offset: self.base + (i + at) as u64,
            });
            self.state = State::Stopped;
            return chunk.len();
        }
        // The count lives in the stack's length between chunks.
        self.stack.resize(count.depth, false);
        self.state = State::Tolerant {
            in_string: count.in_string,
            escape: count.escape,
        };
        chunk.len()
    }

    /// A syntax error at `i`: recorded (the first one), then the tolerant
    /// count takes over at the same byte, outside a string unless the
    /// error lies inside one.
    fn fail(&mut self, i: usize, what: &'static str) {
        if self.error.is_none() {
            self.error = Some(LexError::Syntax {
                offset: self.base + i as u64,
                what,
            });
        }
        let in_string = matches!(
            self.state,
            State::Str { .. } | State::Hex { .. } | State::Escape { .. }
        );
        self.capture = None;
        self.state = State::Tolerant {
            in_string,
            escape: false,
        };
    }

    /// A container ends at the current byte (its closing bracket).
    fn close<E: Events>(&mut self, sink: &mut E, at: &mut At<'_>) {
        self.stack.pop();
        let end = at.i + 1;
        self.end_value(sink, at, end);
    }

    /// The value at the current depth ends before chunk byte `end`, where
    /// reading goes on.
    fn end_value<E: Events>(&mut self, sink: &mut E, at: &mut At<'_>, end: usize) {
        let depth = self.stack.len();
        let captured = match (self.capture, at.cap_from) {
            (Some(d), Some(from)) if d == depth => {
                self.capture_bytes(&at.chunk[from.min(end)..end]);
                self.capture = None;
                at.cap_from = None;
                true
            }
            _ => false,
        };
        let captured = captured.then_some(Captured {
            bytes: &self.captured,
            cut: self.capture_cut,
        });
        sink.value_end(depth, self.base + end as u64, captured);
        self.state = if depth == 0 {
            State::Done
        } else {
            State::After
        };
        at.i = end;
    }

    fn capture_bytes(&mut self, bytes: &[u8]) {
        let room = CAPTURE_CAP - self.captured.len();
        if bytes.len() > room {
            self.capture_cut = true;
        }
        self.captured
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn key_bytes(&mut self, bytes: &[u8]) {
        let room = KEY_CAP - self.key.len();
        if bytes.len() > room {
            self.key_cut = true;
        }
        self.key.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// One `\uXXXX` of a wanted key, checked as `serde_json` checks a key
    /// read as text: a trailing surrogate must follow a leading one at once.
    fn key_unit(&mut self, unit: u16) {
        let high = self.high.take();
        let c = match (high, unit) {
            (None, 0xD800..=0xDBFF) => {
                self.high = Some(unit);
                return;
            }
            (Some(h), 0xDC00..=0xDFFF) => char::from_u32(
                0x10000 + ((u32::from(h) - 0xD800) << 10) + (u32::from(unit) - 0xDC00),
            ),
            (None, _) => char::from_u32(u32::from(unit)),
            (Some(_), _) => None,
        };
        match c {
            Some(c) => {
                let mut buf = [0; 4];
                self.key_bytes(c.encode_utf8(&mut buf).as_bytes());
            }
            None => self.key_bad = true,
        }
    }

    fn end_key<E: Events>(&mut self, sink: &mut E) {
        if !self.key_wanted {
            return;
        }
        if self.high.take().is_some() {
            self.key_bad = true;
        }
        // A cut may split a character: the text is its valid start.
        let valid = match std::str::from_utf8(&self.key) {
            Ok(s) => s,
            Err(e) => std::str::from_utf8(&self.key[..e.valid_up_to()]).unwrap_or_default(),
        };
        let text = (!self.key_bad).then_some(valid);
        sink.key(
            self.stack.len(),
            Key {
                text,
                cut: self.key_cut,
            },
        );
    }
}
