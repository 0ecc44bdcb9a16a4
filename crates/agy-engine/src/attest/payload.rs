//! The ordinary trajectory's attestation evidence read from its text in one
//! pass, without a tree: the payload digest ([`super::payload_digest`]: the
//! canonical JSON without the top-level `agyReader`, fed to SHA-256 as it is
//! produced, each object's members sorted from a reusable buffer), the
//! sidecar's bytes ([`super::sidecar_bytes`]: received key order, compact,
//! the top-level `agyReader` replaced in place or appended), the response
//! shape listing ([`Listing::add_trajectory`]) and the parent cascade
//! ([`crate::tree::links::parent_cascade_id`]), each byte for byte what the
//! tree gives.
//!
//! The tree stays the reference: text the pass does not read exactly as
//! `serde_json` would ([`crate::util::json_walk`]), a key repeated in one
//! object, or a top level that is not an object stops the pass with an
//! error, and the caller then parses the tree ([`Payload::Tree`]).

use super::{payload_digest, reader_record_with, sidecar_bytes, Completeness, NAMESPACE};
use crate::shapes::{Listing, ListingWalk};
use crate::util::json_walk::{self, NoRepeatedKeys, Scalar, Visit, WalkError};
use sha2::{Digest, Sha256};

/// The ordinary trajectory, read for its attestation: from the text in one
/// pass, or (when that pass stops) as a tree.
pub enum Payload {
    Text(Read),
    Tree(serde_json::Value),
}

impl Payload {
    /// `sha256:` of the canonical JSON without `agyReader`.
    pub fn digest(&self) -> String {
        match self {
            Payload::Text(r) => r.digest.clone(),
            Payload::Tree(v) => payload_digest(v),
        }
    }

    /// The sidecar's bytes for `completeness` and the response shape listing.
    pub fn into_evidence(self, completeness: &Completeness) -> (Vec<u8>, Listing) {
        match self {
            Payload::Text(r) => r.into_evidence(completeness),
            Payload::Tree(v) => {
                let mut listing = Listing::new();
                listing.add_trajectory(&v);
                (sidecar_bytes(&v, completeness), listing)
            }
        }
    }
}

/// What one pass over the text gives.
pub struct Read {
    digest: String,
    /// The sidecar document without the `agyReader` value, which goes at
    /// `splice`, then the final newline.
    sidecar: Vec<u8>,
    splice: usize,
    listing: Listing,
    parent: Option<String>,
    /// How many canonical bytes went to the spill file ([`read_spilling`]).
    spilled: usize,
}

impl Read {
    /// The digest the text's payload has.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// How many canonical bytes were set aside on disk ([`read_spilling`]).
    pub fn spilled(&self) -> usize {
        self.spilled
    }

    /// The parent cascade the sidecar stamps.
    pub fn parent(&self) -> Option<&str> {
        self.parent.as_deref()
    }

    /// The sidecar's bytes for `completeness` and the response shape listing.
    pub fn into_evidence(self, completeness: &Completeness) -> (Vec<u8>, Listing) {
        let reader = reader_record_with(self.parent, completeness);
        let reader = serde_json::to_vec(&reader).unwrap_or_default();
        let mut out = self.sidecar;
        let at = self.splice.min(out.len());
        out.splice(at..at, reader);
        out.push(b'\n');
        (out, self.listing)
    }
}

/// Reads `text` (the ordinary trajectory) in one pass.
pub fn read(text: &str) -> Result<Read, WalkError> {
    read_with(text, false, None)
}

/// [`read`], the canonical bytes of the top level's finished parts kept in
/// an unnamed temporary file in `dir` once they pass [`SPILL_AT`] bytes,
/// instead of in memory until the top level closes (its members are hashed
/// in sorted order only then, so its largest member, a conversation's
/// `steps`, was held whole): the same digest, the memory of one step.
pub fn read_spilling(text: &str, dir: &std::path::Path) -> Result<Read, WalkError> {
    read_with(text, false, Some(dir))
}

/// How many canonical bytes [`read_spilling`] keeps in memory before it
/// writes them to its file.
pub const SPILL_AT: usize = 1 << 20;

/// [`read`] of a saved sidecar's text, as strictly as a daemon answer is
/// read before its digest is taken: besides everything [`read`] refuses, a
/// key repeated in any object, the top-level `agyReader` value's included
/// ([`NoRepeatedKeys`]). The digest is the one [`read`] gives the answer
/// the sidecar was written from (the top-level `agyReader` left out), so an
/// honest sidecar rechecks to its attested digest; an error is never
/// followed by the tree (which keeps the last of a repeated member).
pub fn read_saved(text: &str) -> Result<Read, WalkError> {
    read_with(text, true, None)
}

fn read_with(
    text: &str,
    every_object: bool,
    spill: Option<&std::path::Path>,
) -> Result<Read, WalkError> {
    let mut listing = Listing::new();
    let pass = OnePass {
        listing: ListingWalk::new(),
        canon: Vec::with_capacity(if spill.is_some() {
            SPILL_AT + (64 << 10)
        } else {
            text.len()
        }),
        spill: spill.map(|dir| Spill {
            dir: dir.to_path_buf(),
            file: None,
        }),
        spilled: 0,
        // Room for the `agyReader` record spliced in at the end, so the
        // splice never copies the whole sidecar into a larger buffer.
        side: Vec::with_capacity(text.len() + (64 << 10)),
        frames: Vec::new(),
        members: Vec::new(),
        keys: String::new(),
        scratch: Vec::new(),
        hasher: Sha256::new(),
        muted: 0,
        skip_next: false,
        reader_seen: false,
        splice: None,
        top_key: TopKey::Other,
        in_metadata: false,
        at_parent: false,
        cascade: None,
        parent: None,
        done: false,
    };
    let pass = if every_object {
        let mut strict = NoRepeatedKeys::new(pass);
        json_walk::walk(text, &mut strict)?;
        strict.inner
    } else {
        let mut pass = pass;
        json_walk::walk(text, &mut pass)?;
        pass
    };
    pass.listing.finish(&mut listing);
    let (Some(splice), true) = (pass.splice, pass.done) else {
        return Err(refused("the top level is not an object"));
    };
    let digest = format!("sha256:{}", crate::util::hex(&pass.hasher.finalize()));
    let parent =
        crate::tree::links::parent_cascade_id_of(pass.cascade.as_deref(), pass.parent.as_deref());
    let sidecar = pass.side;
    Ok(Read {
        spilled: pass.spilled,
        digest,
        sidecar,
        splice,
        listing,
        parent,
    })
}

/// Feeds the canonical bytes at `range` (offsets counted from the first
/// canonical byte) to `hasher`: those before `spilled` from the spill file,
/// the rest from `canon`.
fn hash_range(
    hasher: &mut Sha256,
    (canon, spilled): (&[u8], usize),
    file: Option<&std::fs::File>,
    range: std::ops::Range<usize>,
) -> Result<(), WalkError> {
    let failed = |_| refused("the canonical bytes set aside could not be read back");
    if range.start < spilled {
        let Some(file) = file else {
            return Err(refused("the canonical bytes set aside are gone"));
        };
        let mut buf = vec![0; 64 << 10];
        let mut at = range.start;
        let end = range.end.min(spilled);
        while at < end {
            let n = (end - at).min(buf.len());
            read_exact_at(file, &mut buf[..n], at as u64).map_err(failed)?;
            hasher.update(&buf[..n]);
            at += n;
        }
    }
    let from = range.start.max(spilled) - spilled;
    let to = range.end.max(spilled) - spilled;
    hasher.update(canon.get(from..to).unwrap_or_default());
    Ok(())
}

/// Reads `buf.len()` bytes of `file` at `offset` (the handle's own position
/// left as it was where the platform allows).
fn read_exact_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(not(unix))]
    {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = file;
        f.seek(SeekFrom::Start(offset))?;
        f.read_exact(buf)
    }
}

/// Rewrites an object's interior, `canon[body..]` (its first byte at
/// canonical offset `first`), with its members in the order of `sorted`
/// (their extents, one comma between each two as they arrived).
///
/// Only the members other than the largest are copied out, to `scratch`;
/// the largest is moved once, within `canon`, to where it goes. An object
/// holding one huge value (a step with a 20 MiB command output, and each
/// object around it) is thus reordered in the memory of its other
/// members, not in a second copy of itself.
fn reorder(
    canon: &mut [u8],
    body: usize,
    first: usize,
    sorted: &[Member],
    scratch: &mut Vec<u8>,
) -> Result<(), WalkError> {
    let unbalanced = || refused("a member's extent is outside its object");
    let len = |m: &Member| m.end - m.start;
    let Some(big) = (0..sorted.len()).max_by_key(|&i| len(&sorted[i])) else {
        return Ok(());
    };
    let interior = canon.get_mut(body..).ok_or_else(unbalanced)?;
    // The members and their commas fill the interior exactly (so every
    // index below is within it).
    let filled = sorted.iter().map(len).sum::<usize>() + sorted.len() - 1;
    if filled != interior.len()
        || sorted
            .iter()
            .any(|m| m.start < first || m.end < m.start || m.end - first > interior.len())
    {
        return Err(unbalanced());
    }
    let extent = |m: &Member| m.start - first..m.end - first;
    // The others' bytes, in sorted order, each found again by its length.
    scratch.clear();
    for (i, m) in sorted.iter().enumerate() {
        if i != big {
            scratch.extend_from_slice(interior.get(extent(m)).ok_or_else(unbalanced)?);
        }
    }
    // Where the largest goes: after the members sorted before it, each
    // with its comma.
    let at = sorted[..big].iter().map(|m| len(m) + 1).sum::<usize>();
    interior.copy_within(extent(&sorted[big]), at);
    let mut taken = 0;
    let mut put = |out: &mut [u8], m: &Member| {
        let part = &scratch[taken..taken + len(m)];
        out[..part.len()].copy_from_slice(part);
        taken += part.len();
        part.len()
    };
    let mut w = 0;
    for (i, m) in sorted.iter().enumerate() {
        if i > 0 {
            interior[w] = b',';
            w += 1;
        }
        if i == big {
            w += len(m);
        } else {
            w += put(&mut interior[w..], m);
        }
    }
    Ok(())
}

fn refused(rule: &'static str) -> WalkError {
    WalkError { offset: 0, rule }
}

/// The top-level member being read, for the parent cascade.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TopKey {
    CascadeId,
    Metadata,
    Other,
}

/// An open container of the output.
struct Frame {
    object: bool,
    /// No member or element written to the sidecar yet.
    first: bool,
    /// Its members' first index in `members`.
    members: usize,
    /// Where its interior starts in `canon`.
    body: usize,
    /// Its members' keys arrived strictly ascending so far.
    ascending: bool,
}

/// Where [`read_spilling`] keeps the canonical bytes it let go.
struct Spill {
    dir: std::path::PathBuf,
    file: Option<std::fs::File>,
}

/// One member of an open object in `canon`: its key (in `keys`) and the
/// extent of its canonical `"key":value` bytes (offsets counted from the
/// first canonical byte, spilled ones included).
struct Member {
    key: (usize, usize),
    start: usize,
    end: usize,
}

struct OnePass {
    listing: ListingWalk,
    /// The canonical bytes of the open containers' interiors, from offset
    /// `spilled` on (those before it are in the spill file).
    canon: Vec<u8>,
    spill: Option<Spill>,
    spilled: usize,
    /// The sidecar, as written so far.
    side: Vec<u8>,
    frames: Vec<Frame>,
    members: Vec<Member>,
    keys: String,
    /// An object's interior while its members are reordered.
    scratch: Vec<u8>,
    hasher: Sha256,
    /// Open containers inside the top-level `agyReader` value (not written).
    muted: usize,
    /// The next value is the top-level `agyReader`'s.
    skip_next: bool,
    reader_seen: bool,
    /// Where the `agyReader` value goes in the sidecar.
    splice: Option<usize>,
    top_key: TopKey,
    in_metadata: bool,
    at_parent: bool,
    cascade: Option<String>,
    parent: Option<String>,
    /// The top-level object was closed.
    done: bool,
}

impl OnePass {
    /// The offset of the next canonical byte.
    fn at(&self) -> usize {
        self.spilled + self.canon.len()
    }

    /// Lets the canonical bytes so far go to the spill file when they are
    /// many and final: only the top-level object and, inside it, arrays are
    /// open (an object's members are reordered from `canon` when it
    /// closes, so nothing spills while one below the top level is open).
    fn maybe_spill(&mut self) -> Result<(), WalkError> {
        use std::io::Write;
        let Some(spill) = &mut self.spill else {
            return Ok(());
        };
        if self.canon.len() < SPILL_AT || self.frames.iter().skip(1).any(|f| f.object) {
            return Ok(());
        }
        let failed = |_| refused("the canonical bytes could not be set aside");
        let file = match &mut spill.file {
            Some(f) => f,
            None => spill
                .file
                .insert(tempfile::tempfile_in(&spill.dir).map_err(failed)?),
        };
        file.write_all(&self.canon).map_err(failed)?;
        self.spilled += self.canon.len();
        self.canon.clear();
        Ok(())
    }

    /// Whether a value starting now is written (not inside, nor being, the
    /// top-level `agyReader` value); writes an array element's separator.
    fn value_start(&mut self, container: bool) -> Result<bool, WalkError> {
        if self.muted > 0 {
            self.muted += usize::from(container);
            return Ok(false);
        }
        if self.skip_next {
            self.skip_next = false;
            self.muted = usize::from(container);
            return Ok(false);
        }
        match self.frames.last_mut() {
            Some(f) if !f.object => {
                if !f.first {
                    self.canon.push(b',');
                    self.side.push(b',');
                }
                f.first = false;
            }
            Some(_) => {}
            None if container => {}
            None => return Err(refused("the top level is not an object")),
        }
        Ok(true)
    }

    fn begin(&mut self, object: bool) -> Result<(), WalkError> {
        if !self.value_start(true)? {
            return Ok(());
        }
        if self.frames.is_empty() && !object {
            return Err(refused("the top level is not an object"));
        }
        if object && self.frames.len() == 1 && self.top_key == TopKey::Metadata {
            self.in_metadata = true;
        }
        let open = if object { b'{' } else { b'[' };
        self.canon.push(open);
        self.side.push(open);
        self.frames.push(Frame {
            object,
            first: true,
            members: self.members.len(),
            body: self.at(),
            ascending: true,
        });
        Ok(())
    }

    fn key_text<'k>(keys: &'k str, m: &Member) -> &'k str {
        keys.get(m.key.0..m.key.1).unwrap_or_default()
    }

    /// Closes an object's members: sorted by key (an error when one
    /// repeats), with the last one's extent set.
    fn close_members(&mut self, f: &Frame) -> Result<(), WalkError> {
        let end = self.at();
        let own = self.members.get_mut(f.members..).unwrap_or_default();
        if let Some(last) = own.last_mut() {
            last.end = end;
        }
        if !f.ascending {
            let keys = &self.keys;
            own.sort_unstable_by(|a, b| Self::key_text(keys, a).cmp(Self::key_text(keys, b)));
            if own
                .windows(2)
                .any(|w| Self::key_text(keys, &w[0]) == Self::key_text(keys, &w[1]))
            {
                return Err(refused(json_walk::REPEATED_KEY));
            }
        }
        Ok(())
    }

    fn end_object_inner(&mut self) -> Result<(), WalkError> {
        let Some(f) = self.frames.pop() else {
            return Err(refused("unbalanced"));
        };
        self.close_members(&f)?;
        let own = self.members.get(f.members..).unwrap_or_default();
        if self.frames.is_empty() {
            // The top level: hashed in sorted order straight from `canon`
            // (and the spill file).
            self.hasher.update(b"{");
            for (i, m) in own.iter().enumerate() {
                if i > 0 {
                    self.hasher.update(b",");
                }
                hash_range(
                    &mut self.hasher,
                    (&self.canon, self.spilled),
                    self.spill.as_ref().and_then(|s| s.file.as_ref()),
                    m.start..m.end,
                )?;
            }
            self.hasher.update(b"}");
            if !self.reader_seen {
                if !f.first {
                    self.side.push(b',');
                }
                self.side.extend_from_slice(b"\"agyReader\":");
                self.splice = Some(self.side.len());
            }
            self.side.push(b'}');
            self.done = true;
            self.canon = Vec::new();
        } else {
            if !f.ascending {
                // Nothing spills while an object below the top level is
                // open, so its body is in `canon`.
                let body = f.body - self.spilled;
                reorder(&mut self.canon, body, f.body, own, &mut self.scratch)?;
                // Not kept that large for the rest of the answer when an
                // object with many large members was reordered.
                if self.scratch.capacity() > 1 << 20 {
                    self.scratch = Vec::new();
                }
            }
            self.canon.push(b'}');
            self.side.push(b'}');
            if self.frames.len() == 1 {
                self.in_metadata = false;
            }
        }
        if let Some(first) = own.first() {
            let k = first.key.0.min(self.keys.len());
            self.keys.truncate(k);
        }
        self.members.truncate(f.members);
        if !self.frames.is_empty() {
            self.maybe_spill()?;
        }
        Ok(())
    }
}

impl Visit for OnePass {
    fn key(&mut self, key: &str, json: &[u8]) -> Result<(), WalkError> {
        self.listing.key(key, json)?;
        if self.muted > 0 {
            return Ok(());
        }
        let depth = self.frames.len();
        let Some(f) = self.frames.last_mut() else {
            return Err(refused("a key outside an object"));
        };
        if !f.first {
            self.side.push(b',');
        }
        f.first = false;
        if depth == 1 {
            self.top_key = match key {
                "cascadeId" => TopKey::CascadeId,
                "metadata" => TopKey::Metadata,
                _ => TopKey::Other,
            };
            if key == NAMESPACE {
                if self.reader_seen {
                    return Err(refused(json_walk::REPEATED_KEY));
                }
                self.reader_seen = true;
                self.side.extend_from_slice(b"\"agyReader\":");
                self.splice = Some(self.side.len());
                self.skip_next = true;
                return Ok(());
            }
        } else if depth == 2 && self.in_metadata {
            self.at_parent = key == "parentConversationId";
        }
        let own = self.members.len() - f.members;
        if own > 0 {
            // `Self::at`, spelled by field: `f` holds `self.frames`.
            let end = self.spilled + self.canon.len();
            if let Some(last) = self.members.last_mut() {
                last.end = end;
                if f.ascending && Self::key_text(&self.keys, last) >= key {
                    f.ascending = false;
                }
            }
            self.canon.push(b',');
        }
        let start = self.at();
        for out in [&mut self.side, &mut self.canon] {
            out.push(b'"');
            out.extend_from_slice(json);
            out.extend_from_slice(b"\":");
        }
        let k = self.keys.len();
        self.keys.push_str(key);
        self.members.push(Member {
            key: (k, self.keys.len()),
            start,
            end: start,
        });
        Ok(())
    }

    fn begin_object(&mut self) -> Result<(), WalkError> {
        self.listing.begin_object()?;
        self.begin(true)
    }

    fn end_object(&mut self) -> Result<(), WalkError> {
        self.listing.end_object()?;
        if self.muted > 0 {
            self.muted -= 1;
            return Ok(());
        }
        self.end_object_inner()
    }

    fn begin_array(&mut self) -> Result<(), WalkError> {
        self.listing.begin_array()?;
        self.begin(false)
    }

    fn end_array(&mut self) -> Result<(), WalkError> {
        self.listing.end_array()?;
        if self.muted > 0 {
            self.muted -= 1;
            return Ok(());
        }
        self.frames.pop();
        self.canon.push(b']');
        self.side.push(b']');
        self.maybe_spill()
    }

    fn scalar(&mut self, value: Scalar<'_>) -> Result<(), WalkError> {
        self.listing.scalar(value)?;
        if !self.value_start(false)? {
            return Ok(());
        }
        value.write(&mut self.side);
        // A value larger than the room left (a step's 20 MiB output) gets
        // room for itself and the rest of its step at once: left to
        // doubling, the buffer would be copied into one twice its size
        // (with mimalloc, the old block lingers until it is purged).
        let len = value.written_len();
        if self.canon.capacity() - self.canon.len() < len {
            self.canon.reserve_exact(len + SPILL_AT);
        }
        value.write(&mut self.canon);
        self.maybe_spill()?;
        if let Scalar::Str(s) = value {
            match self.frames.len() {
                1 if self.top_key == TopKey::CascadeId => {
                    self.cascade = Some(s.unescaped().into_owned())
                }
                2 if self.in_metadata && self.at_parent => {
                    self.parent = Some(s.unescaped().into_owned())
                }
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The attest tests' fixture, with one RPC-only field.
    fn completeness() -> Completeness {
        Completeness {
            rpc_only_fields: vec!["x.y".into()],
            ..crate::attest::tests::completeness()
        }
    }

    /// The one pass against the tree, byte for byte.
    pub(crate) fn assert_same(text: &str) {
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let read = read(text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(read.digest(), payload_digest(&v), "digest of {text}");
        assert_eq!(
            read.parent().map(str::to_string),
            crate::tree::links::parent_cascade_id(&v),
            "parent of {text}"
        );
        let c = completeness();
        let (sidecar, listing) = read.into_evidence(&c);
        assert_eq!(
            String::from_utf8(sidecar).unwrap(),
            String::from_utf8(sidecar_bytes(&v, &c)).unwrap(),
            "sidecar of {text}"
        );
        let mut want = Listing::new();
        want.add_trajectory(&v);
        assert_eq!(listing.text(), want.text(), "listing of {text}");
    }

    const P: &str = "0B6B2F0E-1C1D-4A7E-9A5E-0D6F3F1F2A01";

    #[test]
    fn equals_the_tree_on_nasty_text() {
        let texts = [
            r#"{}"#.to_string(),
            r#" { } "#.into(),
            r#"{"agyReader":{"old":true}}"#.into(),
            r#"{"z":1,"agyReader":{"old":[1,{"b":2,"a":1}]},"a":[1.50,"é\n"]}"#.into(),
            r#"{"b":{"agyReader":2,"z":{"agyReader":{"q":1}}},"a":1}"#.into(),
            r#"{"s":"tab\t quote\" slash\/ back\\ nul\u0000 \u001F \u007f é 😀 \ud83d\ude00 \uD83D\uDE00 \b\f\n\r","\n":1,"a":2,"\u0000":3,"é":4,"e":5,"😀":6,"\uffff":7}"#.into(),
            r#"{"n":[0,-0,-0.0,1.0,1.000000000000000000001,1e400,1E400,1e+5,1E-5,-1.5e300,12345678901234567890,-9223372036854775809,18446744073709551616,0.5e0],"m":{"y":1e400,"x":-0}}"#.into(),
            r#"{"k\"ey":1,"k\\ey":2,"\u00e9":3,"é2":4,"":5,"a/b":6,"file:///x":{"b":1,"a":2},"0123456789abcdef":[],"11111111-2222-3333-4444-555555555555":null,"42":true}"#.into(),
            r#"{"z":1,"y":2,"x":{"c":[{"b":1,"a":2},{"a":{"d":{},"c":[]},"b":[[{"z":0,"y":0}]]}],"a":null}}"#.into(),
            r#"{"generatorMetadata":[{"b":1,"a":{"c":1}}],"steps":[{"generic":{"z":1,"y":2},"metadata":{"internalMetadata":{"q":[1]},"b":1,"a":2}},{"userInput":{"userConfig":{"b":1,"a":2},"activeUserState":3}}]}"#.into(),
            format!(r#"{{"cascadeId":"c","metadata":{{"parentConversationId":"{P}"}}}}"#),
            format!(r#"{{"metadata":{{"parentConversationId":"{P}","z":1}},"cascadeId":"{}"}}"#, P.to_lowercase()),
            format!(r#"{{"metadata":{{"parentConversationId":"{P}"}},"cascadeId":7}}"#),
            format!(r#"{{"metadata":{{"x":{{"parentConversationId":"{P}"}}}},"y":{{"metadata":{{"parentConversationId":"{P}"}}}}}}"#),
            r#"{"metadata":{"parentConversationId":"X"},"b":null}"#.into(),
            r#"{"metadata":{"parentConversationId":null},"cascadeId":null}"#.into(),
            format!(r#"{{"metadata":[{{"parentConversationId":"{P}"}}],"cascadeId":"{P}"}}"#),
            r#"{"metadata":{"parentConversationId":"\u0030b6b2f0e-1c1d-4a7e-9a5e-0d6f3f1f2a01"}}"#.into(),
            "{\n  \"b\" : [ 1 , 2 ] ,\r\n\t\"a\" : { \"d\" : \"\u{2028}\" , \"c\" : [ ] }\n}\n".into(),
            r#"{"a":"\u0041\u00410","b":"x\/y"}"#.into(),
        ];
        for t in &texts {
            assert_same(t);
        }
        // Deep: reordering at every level.
        let mut deep = String::from("1");
        for i in 0..100 {
            deep = format!(r#"{{"z{i}":{deep},"a":[{i}]}}"#);
        }
        assert_same(&deep);
    }

    #[test]
    fn spilling_the_canonical_bytes_gives_the_same_evidence() {
        // Steps of reordered members, the large ones past the spill size,
        // and top-level members after `steps` that sort before it.
        let step = |i: usize| {
            format!(
                r#"{{"z":{i},"metadata":{{"b":[{{"y":1,"x":"{}"}}],"a":"é\n"}},"a":[{i},{{"q":1,"p":2}}]}}"#,
                "w".repeat(i % 7 * 40_000)
            )
        };
        let steps: Vec<String> = (0..120).map(step).collect();
        let text = format!(
            r#"{{"trajectoryId":"t","steps":[{}],"generatorMetadata":[{{"b":1,"a":2}}],"cascadeId":"c","metadata":{{"parentConversationId":"{P}"}},"agyReader":{{"x":1}},"executorMetadatas":[]}}"#,
            steps.join(",")
        );
        assert!(text.len() > 4 * SPILL_AT);
        let dir = tempfile::tempdir().unwrap();
        let spilled = read_spilling(&text, dir.path()).unwrap();
        assert!(spilled.spilled > 3 * SPILL_AT, "{}", spilled.spilled);
        // Unnamed: nothing left in the folder.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let whole = read(&text).unwrap();
        assert_eq!(whole.spilled, 0);
        assert_eq!(spilled.digest(), whole.digest());
        let c = completeness();
        assert_eq!(spilled.into_evidence(&c).0, whole.into_evidence(&c).0);
        assert_same(&text);
        // A folder that cannot take the bytes: the pass stops, and the
        // caller's tree decides.
        assert!(read_spilling(&text, &dir.path().join("gone")).is_err());
    }

    #[test]
    fn a_huge_member_is_reordered_in_the_memory_of_the_others() {
        let big = format!("out\\n{}", "x".repeat(3 << 20));
        for text in [
            format!(r#"{{"z":1,"m":{{"y":"{big}","b":2,"a":[{{"d":1,"c":2}}]}},"a":3}}"#),
            format!(
                r#"{{"s":[{{"result":{{"stdout":"{big}","exitCode":0}},"b":{{"q":1,"p":2}}}}],"a":"{big}"}}"#
            ),
            format!(r#"{{"y":"{big}","x":"{big}2","w":"","v":{{}},"u":[]}}"#),
            format!(r#"{{"b":1,"a":"{big}"}}"#),
            format!(r#"{{"b":"{big}","a":1}}"#),
        ] {
            assert_same(&text);
            let dir = tempfile::tempdir().unwrap();
            let spilled = read_spilling(&text, dir.path()).unwrap();
            assert_eq!(spilled.digest(), read(&text).unwrap().digest());
        }
        // The scratch holds the members other than the largest.
        let text = br#"ccc,a,bbbbbbbbbb"#;
        let members = |spans: &[(usize, usize)], keys: &[usize]| -> Vec<Member> {
            keys.iter()
                .map(|&k| Member {
                    key: (k, k + 1),
                    start: 100 + spans[k].0,
                    end: 100 + spans[k].1,
                })
                .collect()
        };
        // Sorted: a (5..6), bbbbbbbbbb (7..17), ccc (0..3).
        let sorted = members(&[(0, 3), (4, 5), (6, 16)], &[1, 2, 0]);
        let mut canon = b"{".to_vec();
        canon.extend_from_slice(text);
        let mut scratch = Vec::new();
        reorder(&mut canon, 1, 100, &sorted, &mut scratch).unwrap();
        assert_eq!(&canon, b"{a,bbbbbbbbbb,ccc");
        assert_eq!(scratch.len(), 4);
        // Extents that do not fill the interior are refused, not indexed.
        let bad = members(&[(0, 3), (4, 5), (6, 17)], &[1, 2, 0]);
        assert!(reorder(&mut canon, 1, 100, &bad, &mut scratch).is_err());
        let bad = members(&[(0, 3), (4, 5), (6, 16)], &[1, 2]);
        assert!(reorder(&mut canon, 1, 100, &bad, &mut scratch).is_err());
    }

    #[test]
    fn stops_where_the_tree_must_decide() {
        for t in [
            r#"{"a":1,"a":2}"#,
            r#"{"agyReader":1,"b":2,"agyReader":3}"#,
            r#"{"x":{"b":1,"a":2,"b":3}}"#,
            r#"{"a":1,"\u0061":2}"#,
            r#"[1]"#,
            r#""s""#,
            r#"1"#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":1}x"#,
            r#"{"a":01}"#,
            "",
        ] {
            assert!(read(t).is_err(), "{t}");
        }
    }

    #[test]
    fn payload_falls_back_to_the_tree() {
        let text = r#"{"b":1,"b":2,"agyReader":{}}"#;
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let p = Payload::Tree(v.clone());
        assert_eq!(p.digest(), payload_digest(&v));
        let (sidecar, _) = p.into_evidence(&completeness());
        assert_eq!(sidecar, sidecar_bytes(&v, &completeness()));
    }
}
