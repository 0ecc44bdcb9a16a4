//! Stage 5a': one daemon answer read once, as it arrives.
//!
//! [`AnswerReader`] is a synchronous push reader: the caller hands it the
//! body's bytes in chunks of any size, in order, as they come off the
//! connection (or out of a file), and asks for the verdict on the envelope
//! at the end. In that one pass it checks UTF-8, the JSON grammar and its
//! nesting ([`lex`]), and the GetCascadeTrajectoryResponse envelope
//! ([`envelope`]: members, repeats, `status`, `numTotalSteps`, the
//! trajectory's two counted lists) and finds where the trajectory lies; it
//! keeps nothing of the body but a few short member values, so the caller
//! may write each chunk to disk and let it go.
//!
//! **Invariant:** it needs no runtime and does no I/O: bytes in, an
//! [`Envelope`] or a [`ResponseDefect`] out. Its acceptance is that of the
//! earlier whole-text check (`serde_json` over the body), which the
//! application keeps as the reference of a differential test.
//!
//! On request it takes the answer's response shape listing in the same pass
//! ([`AnswerReader::listing`]). Not yet in this pass (BENCHMARKS.md, issue
//! 49): the comparison with the expected message and the attestation's
//! digest, which read the trajectory's text again once it is whole.

pub mod envelope;
pub mod lex;
mod listing;

pub use envelope::{Envelope, ResponseDefect, MAX_JSON_DEPTH, RUN_STATUSES};

use crate::shapes::Listing;
use envelope::EnvelopeEvents;
use lex::{Captured, Events, Key, Kind, LexError, Lexer};
use listing::ListingEvents;

/// The strict reader of one answer; see the module doc.
pub struct AnswerReader {
    lexer: Lexer,
    events: Both,
    utf8: Utf8,
    len: u64,
}

/// The envelope's events and, when asked for, the listing's, from the
/// same pass.
struct Both {
    envelope: EnvelopeEvents,
    listing: Option<ListingEvents>,
}

impl Events for Both {
    fn value_start(&mut self, depth: usize, offset: u64, kind: Kind) -> bool {
        if let Some(l) = &mut self.listing {
            l.value_start(depth, offset, kind);
        }
        self.envelope.value_start(depth, offset, kind)
    }

    fn value_end(&mut self, depth: usize, end: u64, captured: Option<Captured<'_>>) {
        if let Some(l) = &mut self.listing {
            l.value_end(depth, end, None);
        }
        self.envelope.value_end(depth, end, captured);
    }

    fn wants_key(&self, depth: usize) -> bool {
        self.envelope.wants_key(depth) || self.listing.as_ref().is_some_and(|l| l.wants_key(depth))
    }

    fn key(&mut self, depth: usize, key: Key<'_>) {
        if let Some(l) = &mut self.listing {
            if l.wants_key(depth) {
                l.key(depth, key);
            }
        }
        if self.envelope.wants_key(depth) {
            self.envelope.key(depth, key);
        }
    }
}

impl AnswerReader {
    /// A reader of a whole GetCascadeTrajectory answer.
    pub fn response() -> AnswerReader {
        AnswerReader::new(false)
    }

    /// A reader of a bare trajectory (a captured answer without its
    /// envelope, as a sidecar keeps it): one JSON object whose `steps` and
    /// `generatorMetadata` appear at most once; the status reads as
    /// unspecified and the step count is the trajectory's own.
    pub fn bare() -> AnswerReader {
        AnswerReader::new(true)
    }

    fn new(bare: bool) -> AnswerReader {
        AnswerReader {
            lexer: Lexer::new(MAX_JSON_DEPTH),
            events: Both {
                envelope: EnvelopeEvents::new(bare),
                listing: None,
            },
            utf8: Utf8::default(),
            len: 0,
        }
    }

    /// The reader that also takes the answer's response shape listing in
    /// its pass ([`Self::finish_listed`]): the same as
    /// [`Listing::add_text`] of the whole body, or none when the pass
    /// cannot be sure of that (a repeated key, a surrogate escape, a very
    /// long member name), and the caller lists the text itself.
    pub fn listing(mut self) -> AnswerReader {
        self.events.listing = Some(ListingEvents::default());
        self
    }

    /// The next bytes of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        self.utf8.push(chunk, self.len);
        self.len += chunk.len() as u64;
        if self.utf8.bad.is_none() {
            self.lexer.push(chunk, &mut self.events);
        }
    }

    /// How many bytes were pushed.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The end of the body: the checked envelope, or its first defect.
    pub fn finish(self) -> Result<Envelope, ResponseDefect> {
        self.finish_listed().map(|(envelope, _)| envelope)
    }

    /// [`Self::finish`], with the listing taken in the pass when one was
    /// asked for ([`Self::listing`]) and sure.
    pub fn finish_listed(mut self) -> Result<(Envelope, Option<Listing>), ResponseDefect> {
        if let Some(offset) = self.utf8.finish() {
            return Err(ResponseDefect::NotUtf8 {
                offset: usize::try_from(offset).unwrap_or(usize::MAX),
            });
        }
        match self.lexer.finish(&mut self.events) {
            Ok(()) => {}
            Err(LexError::TooDeep { offset }) => {
                return Err(ResponseDefect::TooDeep {
                    offset: usize::try_from(offset).unwrap_or(usize::MAX),
                })
            }
            Err(LexError::Syntax { offset, what }) => {
                return Err(ResponseDefect::NotJson {
                    detail: format!("{what} at byte {offset}"),
                })
            }
        }
        let surrogates = self.lexer.saw_surrogate_escape();
        let listing = self.events.listing.and_then(|l| l.finish(surrogates));
        Ok((self.events.envelope.finish()?, listing))
    }

    /// Reads a whole body at once.
    pub fn read(mut self, body: &[u8]) -> Result<Envelope, ResponseDefect> {
        self.push(body);
        self.finish()
    }
}

/// UTF-8 checked across chunk boundaries: the offset of the first byte of
/// the first invalid sequence, as `std::str::from_utf8` over the whole body
/// names it.
#[derive(Debug, Default)]
struct Utf8 {
    /// The start of a character cut by the chunk's end, and its offset.
    carry: Vec<u8>,
    carry_at: u64,
    bad: Option<u64>,
}

impl Utf8 {
    fn push(&mut self, mut chunk: &[u8], mut base: u64) {
        if self.bad.is_some() {
            return;
        }
        if !self.carry.is_empty() {
            let need = match self.carry[0] {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            let take = (need - self.carry.len()).min(chunk.len());
            self.carry.extend_from_slice(&chunk[..take]);
            match std::str::from_utf8(&self.carry) {
                Ok(_) => self.carry.clear(),
                Err(e) if e.error_len().is_none() && take == chunk.len() => return,
                Err(_) => {
                    self.bad = Some(self.carry_at);
                    return;
                }
            }
            chunk = &chunk[take..];
            base += take as u64;
        }
        // simdutf8's `compat` validator: std's definition and its error
        // (where the valid prefix ends, whether the rest is cut or bad),
        // with SIMD where the CPU has it, over every byte of every answer.
        if let Err(e) = simdutf8::compat::from_utf8(chunk) {
            let at = e.valid_up_to();
            if e.error_len().is_some() {
                self.bad = Some(base + at as u64);
            } else {
                self.carry = chunk[at..].to_vec();
                self.carry_at = base + at as u64;
            }
        }
    }

    /// The first invalid byte's offset, a character cut by the end included.
    fn finish(&mut self) -> Option<u64> {
        if self.bad.is_none() && !self.carry.is_empty() {
            self.bad = Some(self.carry_at);
        }
        self.bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every split of `body` into two chunks, and byte by byte, reads as the
    /// whole body at once.
    fn same_in_chunks(body: &[u8]) -> Result<Envelope, ResponseDefect> {
        let whole = AnswerReader::response().read(body);
        for cut in 0..=body.len() {
            let mut r = AnswerReader::response();
            r.push(&body[..cut]);
            r.push(&body[cut..]);
            assert_eq!(r.finish(), whole, "cut at {cut}");
        }
        let mut r = AnswerReader::response();
        for b in body {
            r.push(std::slice::from_ref(b));
        }
        assert_eq!(r.finish(), whole, "byte by byte");
        whole
    }

    #[test]
    fn an_answer_reads_the_same_in_any_chunks() {
        let body = r#" {"trajectory" : {"steps":[{"a":"x\"y\u00e9\ud83d\ude00"},[1,2.5e-3,-0],null,true,false],"k\u0065y":{}}, "status":"CASCADE_RUN_STATUS_IDLE","numTotalSteps":"5"} "#;
        let e = same_in_chunks(body.as_bytes()).unwrap();
        assert_eq!(e.num_total_steps, 5);
        assert_eq!(e.status, "CASCADE_RUN_STATUS_IDLE");
        assert!(body[e.trajectory.clone()].starts_with("{\"steps\""));
        assert!(body[e.trajectory.clone()].ends_with("{}}"));
        for bad in [
            &b"{\"trajectory\":{},\"x\":1}"[..],
            b"{\"trajectory\":{}",
            b"{\"trajectory\":{},\"status\":\"\xe9\"}",
            b"{\"trajectory\":{\"steps\":[01]}}",
            b"{\"trajectory\":{\"steps\":5}}",
            b"{\"trajectory\":{\"st\\ud800eps\":[]}}",
            b"{\"tr\\ud800ajectory\":{}}",
            b"{\"trajectory\":{},\"numTotalSteps\":1}",
        ] {
            assert!(
                same_in_chunks(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn the_listing_of_the_pass_is_the_walks_or_none() {
        let listed = |body: &str| {
            let mut r = AnswerReader::response().listing();
            for chunk in body.as_bytes().chunks(7) {
                r.push(chunk);
            }
            r.finish_listed().map(|(_, l)| l.map(|l| l.text()))
        };
        let walked = |body: &str| {
            let mut l = Listing::new();
            l.add_bytes(std::path::Path::new(""), body.as_bytes())
                .unwrap();
            l.text()
        };
        for body in [
            r#"{"trajectory":{"steps":[{"a":1,"b":[true,null,"s",{"c":-1.5}]},{"a":"x"}],"agyReader":{"z":1},"k\u00e9y":{"0b6b2f0e-1c1d-4a7e-9a5e-0d6f3f1f2a01":{"q":[]}}},"status":1,"numTotalSteps":2}"#,
            r#"{"status":"CASCADE_RUN_STATUS_IDLE","trajectory":{"steps":[]}}"#,
            r#"{"trajectory":{"metadata":{"x":{"y":[[1],[{"z":null}]]}}}}"#,
        ] {
            assert_eq!(listed(body).unwrap(), Some(walked(body)), "{body}");
        }
        // Where the walk of the text could read otherwise, no listing.
        for body in [
            r#"{"trajectory":{"steps":[{"a":1,"a":2}]},"numTotalSteps":1}"#,
            r#"{"trajectory":{"steps":[{"a":"\ud83d\ude00"}]},"numTotalSteps":1}"#,
            r#"{"trajectory":{"a":1,"\u0061":2}}"#,
        ] {
            assert_eq!(listed(body).unwrap(), None, "{body}");
        }
        let long = format!(r#"{{"trajectory":{{"{}":1}}}}"#, "k".repeat(2000));
        assert_eq!(listed(&long).unwrap(), None);
    }

    /// The validator, fed `bytes` in chunks of `size`, names the offset std
    /// names over the whole: where the valid prefix ends, a cut character
    /// at the end included.
    #[test]
    fn the_validator_in_chunks_names_what_std_names_over_the_whole() {
        let pieces: [&[u8]; 14] = [
            b"plain ascii ",
            "\u{e9}".as_bytes(),
            "\u{20ac}".as_bytes(),
            "\u{1F600}".as_bytes(),
            b"\xc3",
            b"\xe2\x82",
            b"\xf0\x9f\x98",
            b"\xff",
            b"\xc0\x80",
            b"\xed\xa0\x80",
            b"\xf4\x90\x80\x80",
            b"\x80",
            &[b'x'; 70],
            b"\xe0\x9f\x80",
        ];
        let mut state = 0x9e37_79b9_u64;
        for _ in 0..400 {
            let mut bytes = Vec::new();
            for _ in 0..(state % 7) {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                bytes.extend_from_slice(pieces[(state >> 33) as usize % pieces.len()]);
            }
            let want = std::str::from_utf8(&bytes)
                .err()
                .map(|e| e.valid_up_to() as u64);
            for size in [1, 2, 3, 5, 16, 64, bytes.len().max(1)] {
                let mut v = Utf8::default();
                let mut at = 0u64;
                for chunk in bytes.chunks(size) {
                    v.push(chunk, at);
                    at += chunk.len() as u64;
                }
                assert_eq!(v.finish(), want, "{bytes:x?} in chunks of {size}");
            }
        }
    }

    #[test]
    fn a_character_cut_across_chunks_is_utf8() {
        let body = "{\"trajectory\":{\"a\":\"\u{1F600}\u{e9}\"}}".as_bytes();
        assert!(same_in_chunks(body).is_ok());
        let mut cut = body.to_vec();
        cut.truncate(cut.len() - 5);
        cut.extend_from_slice(b"\xf0\x9f\"}}");
        assert!(matches!(
            same_in_chunks(&cut),
            Err(ResponseDefect::NotUtf8 { .. })
        ));
    }
}
