//! Response shapes per release: the reference project's shape fingerprint
//! (agy-reader `internal/shapefp`, public-format-facts §5.2), exactly:
//!
//! 1. each document is parsed; a `{"trajectory": …}` envelope is unwrapped;
//! 2. every node is walked, emitting `path → JSON type`; path segments join
//!    with `.`, array elements are `[]`, the root is the empty path;
//! 3. an object key that starts with `file:`, contains `/`, or is a UUID, a
//!    pure integer or lowercase hex of 16 or more characters is `*`;
//! 4. the opaque paths ([`OPAQUE`]) are listed but not descended; the
//!    `agyReader` member is excluded with everything under it;
//! 5. type sets are unioned across documents; lines `path\ttype1|type2`
//!    are sorted bytewise and joined with `\n` without a trailing newline; the
//!    fingerprint is `sha256:` + the hex digest of those bytes.
//!
//! Where §5.2 is silent this module takes the stricter reading:
//! - "envelope" means a top-level object with a `trajectory` member that is
//!   an object: only that member is walked (a response's `status` and
//!   `numTotalSteps` are not part of the trajectory's shape);
//! - a UUID is the 8-4-4-4-12 hex form in either case; a pure integer is one
//!   or more ASCII digits (no sign);
//! - the `agyReader` excluded is the member the reader adds: the one at the
//!   top level of the walked trajectory (public-format-facts §5.1: the
//!   sidecar is the bare trajectory plus that namespace); a member of that
//!   name deeper in a daemon answer is the daemon's and is listed;
//! - the types of one line are sorted bytewise (§5.2 names no order; every
//!   published line has one type);
//! - a listing read from a file must be canonical: every line `path\ttypes`
//!   with known, distinct types in their bytewise order (`null|string`,
//!   never `string|null`: one set, one line, one fingerprint), lines
//!   strictly ascending bytewise (so no line and no path twice), at most
//!   one final newline, no carriage return, no byte-order mark. Its
//!   fingerprint is computed over its lines as written, which, canonical,
//!   are the lines [`Listing::lines`] gives back.

use crate::util::json_walk::{self, NoRepeatedKeys, Scalar, Visit, WalkError};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The paths listed without their interior (§5.2 step 4).
pub const OPAQUE: [&str; 8] = [
    "generatorMetadata",
    "executorMetadatas",
    "metadata.mendelExperimentIds",
    "steps.[].generic",
    "steps.[].metadata.internalMetadata",
    "steps.[].metadata.sourceTrajectoryStepInfo",
    "steps.[].userInput.activeUserState",
    "steps.[].userInput.userConfig",
];

/// The member excluded with its whole subtree.
pub const EXCLUDED: &str = "agyReader";

/// The file names a sweep writes beside its manifest.
pub const ORDINARY_FILE: &str = "shapes-ordinary.tsv";
pub const FULL_FILE: &str = "shapes-full.tsv";

/// The JSON types a line may name.
pub const TYPES: [&str; 6] = ["array", "boolean", "null", "number", "object", "string"];

/// Why a document or listing could not be read as shapes.
#[derive(Debug, thiserror::Error)]
pub enum ShapeError {
    #[error("{file}: not JSON: {detail}")]
    Json { file: PathBuf, detail: String },
    #[error("{file}: line {line}: {rule}")]
    Listing {
        file: PathBuf,
        line: usize,
        rule: String,
    },
    #[error("{file}: {detail}")]
    Io { file: PathBuf, detail: String },
    #[error("{file}: not a shape listing nor a published listing: {detail}")]
    NotAListing { file: PathBuf, detail: String },
}

/// A shape listing: path → the set of JSON types seen there (one bit per
/// [`TYPES`] entry: a 2 M-entry listing costs its paths, not a set each).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    entries: BTreeMap<String, u8>,
}

/// The bit of a type in a [`Listing`]'s set.
fn type_bit(ty: &str) -> u8 {
    TYPES.iter().position(|t| *t == ty).map_or(0, |i| 1 << i)
}

/// The types of a set, in [`TYPES`] (bytewise) order.
fn type_names(bits: u8) -> impl Iterator<Item = &'static str> {
    TYPES
        .iter()
        .enumerate()
        .filter(move |(i, _)| bits & (1 << i) != 0)
        .map(|(_, t)| *t)
}

fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

fn is_hex(s: &str, lower_only: bool) -> bool {
    s.bytes().all(|b| {
        b.is_ascii_digit()
            || (b'a'..=b'f').contains(&b)
            || (!lower_only && (b'A'..=b'F').contains(&b))
    })
}

fn is_uuid(k: &str) -> bool {
    let parts: Vec<&str> = k.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && is_hex(p, false))
}

/// Whether an object key is data, not a field name (§5.2 step 3).
pub fn is_volatile_key(k: &str) -> bool {
    k.starts_with("file:")
        || k.contains('/')
        || is_uuid(k)
        || (!k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
        || (k.len() >= 16 && is_hex(k, true))
}

/// Appends `seg` to `path` as a child (`path.seg`, or `seg` at the root);
/// returns the length to truncate back to.
fn push_segment(path: &mut String, seg: &str) -> usize {
    let len = path.len();
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(seg);
    len
}

impl Listing {
    pub fn new() -> Listing {
        Listing::default()
    }

    /// Adds one document (a trajectory, or a response envelope holding one).
    pub fn add_document(&mut self, doc: &serde_json::Value) {
        let root = match doc {
            serde_json::Value::Object(m) => match m.get("trajectory") {
                Some(t @ serde_json::Value::Object(_)) => t,
                _ => doc,
            },
            _ => doc,
        };
        self.walk(&mut String::new(), root);
    }

    /// Adds one trajectory, already parsed (the `trajectory` member of a
    /// response; [`Self::add_document`] of that response lists the same).
    pub fn add_trajectory(&mut self, trajectory: &serde_json::Value) {
        self.walk(&mut String::new(), trajectory);
    }

    /// Parses and adds one document's bytes; `file` names it in errors.
    /// Read in one pass over the text ([`Self::add_text`]); the tree is
    /// built only when that pass stops (then it decides, and names the error).
    pub fn add_bytes(&mut self, file: &Path, bytes: &[u8]) -> Result<(), ShapeError> {
        if let Ok(text) = std::str::from_utf8(bytes) {
            if self.add_text(text).is_ok() {
                return Ok(());
            }
        }
        let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| ShapeError::Json {
            file: file.to_path_buf(),
            detail: e.to_string(),
        })?;
        self.add_document(&v);
        Ok(())
    }

    /// [`Self::add_document`] of `text`'s JSON, read in one pass without a
    /// tree. An error (the text is not JSON, repeats a key in an object,
    /// or is anything the one pass does not read exactly as `serde_json`
    /// does) leaves `self` unchanged: the tree decides then.
    pub fn add_text(&mut self, text: &str) -> Result<(), WalkError> {
        if !self.is_empty() {
            let mut fresh = Listing::new();
            fresh.add_text(text)?;
            self.union(&fresh);
            return Ok(());
        }
        let mut root = Listing::new();
        let mut v = NoRepeatedKeys::new(Envelope {
            root: ListingWalk::new(),
            trajectory: ListingWalk::new(),
            depth: 0,
            at_trajectory: false,
            inside: false,
            found: false,
        });
        json_walk::walk(text, &mut v)?;
        let found = v.inner.found;
        v.inner.root.finish(&mut root);
        v.inner.trajectory.finish(self);
        if !found {
            *self = root;
        }
        Ok(())
    }

    /// Records the types `bits` at `path`.
    fn record(&mut self, path: &str, bits: u8) {
        match self.entries.get_mut(path) {
            Some(types) => *types |= bits,
            None => {
                self.entries.insert(path.to_string(), bits);
            }
        }
    }

    /// Records `v` at `path` and walks its children, `path` growing and
    /// shrinking in place (one buffer for the whole document; an entry
    /// already present is found without building its key).
    fn walk(&mut self, path: &mut String, v: &serde_json::Value) {
        self.record(path, type_bit(json_type(v)));
        if OPAQUE.contains(&path.as_str()) {
            return;
        }
        match v {
            serde_json::Value::Object(m) => {
                for (k, child) in m {
                    if k == EXCLUDED && path.is_empty() {
                        continue;
                    }
                    let seg = if is_volatile_key(k) { "*" } else { k.as_str() };
                    let len = push_segment(path, seg);
                    self.walk(path, child);
                    path.truncate(len);
                }
            }
            serde_json::Value::Array(a) => {
                let len = push_segment(path, "[]");
                for child in a {
                    self.walk(path, child);
                }
                path.truncate(len);
            }
            _ => {}
        }
    }

    /// Unions another listing into this one.
    pub fn union(&mut self, other: &Listing) {
        for (p, t) in &other.entries {
            *self.entries.entry(p.clone()).or_default() |= t;
        }
    }

    /// The number of entries (lines).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The types seen at `path`, in bytewise order.
    pub fn types(&self, path: &str) -> Option<Vec<&'static str>> {
        self.entries.get(path).map(|t| type_names(*t).collect())
    }

    /// Every `(path, types)`, sorted bytewise by path, the types in
    /// bytewise order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Vec<&'static str>)> {
        self.entries
            .iter()
            .map(|(p, t)| (p.as_str(), type_names(*t).collect()))
    }

    /// The lines, `path\ttype1|type2`, sorted bytewise.
    pub fn lines(&self) -> Vec<String> {
        // Sorted as lines, not as paths: a key holding a byte below TAB
        // would order differently.
        let mut lines: Vec<String> = self
            .entries
            .iter()
            .map(|(p, t)| format!("{p}\t{}", type_names(*t).collect::<Vec<_>>().join("|")))
            .collect();
        lines.sort_unstable();
        lines
    }

    /// The canonical text: lines joined with `\n`, no trailing newline.
    pub fn text(&self) -> String {
        self.lines().join("\n")
    }

    /// `sha256:` + hex of [`Listing::text`].
    pub fn fingerprint(&self) -> String {
        fingerprint_of(&self.lines())
    }

    /// Parses a canonical listing (see the module doc); returns it and the
    /// fingerprint of its lines as written.
    pub fn parse(file: &Path, text: &str) -> Result<(Listing, String), ShapeError> {
        let bad = |line: usize, rule: String| ShapeError::Listing {
            file: file.to_path_buf(),
            line,
            rule,
        };
        if text.starts_with('\u{feff}') {
            return Err(bad(
                1,
                "a byte-order mark at the start: a listing is UTF-8 without one".into(),
            ));
        }
        if text.contains('\r') {
            let line = text[..text.find('\r').unwrap_or(0)].matches('\n').count() + 1;
            return Err(bad(line, "carriage return: lines end with \\n only".into()));
        }
        let body = text.strip_suffix('\n').unwrap_or(text);
        let mut listing = Listing::new();
        // the fingerprint of the lines as written, taken as they are read
        // (no copy of them is kept)
        let mut h = Sha256::new();
        if body.is_empty() {
            if text.is_empty() {
                return Ok((listing, fingerprint_of(&[])));
            }
            return Err(bad(1, "empty line".into()));
        }
        let mut previous: Option<(&str, &str)> = None;
        for (i, line) in body.split('\n').enumerate() {
            let n = i + 1;
            let Some((path, types)) = line.split_once('\t') else {
                return Err(bad(n, "no TAB between path and types".into()));
            };
            if types.contains('\t') {
                return Err(bad(n, "more than one TAB".into()));
            }
            if let Some((before, before_path)) = previous {
                // Lines of one path share the prefix `path\t`, so sorted
                // lines hold a path's lines together: a path twice is two
                // neighbouring lines.
                if before == line {
                    return Err(bad(
                        n,
                        format!("line repeated (line {} is the same)", n - 1),
                    ));
                }
                if before_path == path {
                    return Err(bad(
                        n,
                        format!("path `{path}` twice (lines {} and {n})", n - 1),
                    ));
                }
                if before.as_bytes() > line.as_bytes() {
                    return Err(bad(n, "lines are not sorted bytewise".into()));
                }
            }
            let mut set = 0u8;
            let mut in_order = true;
            for t in types.split('|') {
                let Some(k) = TYPES.iter().position(|k| *k == t) else {
                    return Err(bad(
                        n,
                        format!("type `{t}` is not one of {}", TYPES.join(", ")),
                    ));
                };
                if set & (1 << k) != 0 {
                    return Err(bad(n, format!("type `{t}` twice")));
                }
                // a later type's bit above every earlier one's
                in_order &= u32::from(set) < (1u32 << k);
                set |= 1 << k;
            }
            if !in_order {
                return Err(bad(
                    n,
                    format!(
                        "types `{types}` out of their bytewise order (`{}`): a set has one line",
                        type_names(set).collect::<Vec<_>>().join("|")
                    ),
                ));
            }
            listing.entries.insert(path.to_string(), set);
            if n > 1 {
                h.update(b"\n");
            }
            h.update(line.as_bytes());
            previous = Some((line, path));
        }
        Ok((
            listing,
            format!("sha256:{}", crate::util::hex(&h.finalize())),
        ))
    }

    /// Reads a listing file ([`Listing::parse`]): a regular file, read
    /// once and boundedly (`util::bounded`; `-` is standard input).
    pub fn read(file: &Path) -> Result<(Listing, String), ShapeError> {
        let bytes = read_listing_file(file)?;
        Listing::parse_bytes(file, &bytes)
    }

    /// [`Listing::parse`] of a file's bytes, which must be UTF-8.
    pub fn parse_bytes(file: &Path, bytes: &[u8]) -> Result<(Listing, String), ShapeError> {
        let text = std::str::from_utf8(bytes).map_err(|_| ShapeError::NotAListing {
            file: file.to_path_buf(),
            detail: "not UTF-8".into(),
        })?;
        Listing::parse(file, text)
    }

    /// What `new` adds to and removes from `self`, by line.
    pub fn diff(&self, new: &Listing) -> ShapeDiff {
        let a: BTreeSet<String> = self.lines().into_iter().collect();
        let b: BTreeSet<String> = new.lines().into_iter().collect();
        ShapeDiff {
            added: b.difference(&a).cloned().collect(),
            removed: a.difference(&b).cloned().collect(),
        }
    }
}

/// [`Listing::walk`] as a [`Visit`]or of the text: the same paths and
/// types, opaque paths not descended, the excluded member skipped, without a
/// tree. The paths are nodes of a trie built as the walk meets them (a
/// member's node found among its parent's by key, never a whole path looked
/// up), written into the listing by [`ListingWalk::finish`]. The caller sees
/// to repeated keys ([`NoRepeatedKeys`]).
pub struct ListingWalk {
    /// The trie; node 0 is the root (the empty path).
    nodes: Vec<PathNode>,
    /// Per open container walked: its node and whether it is an array.
    stack: Vec<(u32, bool)>,
    /// The node of the member whose key was just read.
    member: u32,
    /// Open containers inside an opaque or excluded value (not walked).
    muted: usize,
    /// The next value is the excluded member's.
    skip_next: bool,
}

/// One path of the trie.
struct PathNode {
    path: String,
    /// The types seen here, one bit per [`TYPES`] entry.
    types: u8,
    opaque: bool,
    /// Children by member key (volatile keys are not kept: they share `star`).
    members: Vec<(Box<str>, u32)>,
    star: Option<u32>,
    elements: Option<u32>,
}

impl Default for ListingWalk {
    fn default() -> Self {
        ListingWalk::new()
    }
}

impl ListingWalk {
    pub fn new() -> Self {
        ListingWalk {
            nodes: vec![PathNode::new(String::new())],
            stack: Vec::new(),
            member: 0,
            muted: 0,
            skip_next: false,
        }
    }

    /// Writes the paths and types met into `listing`.
    pub fn finish(self, listing: &mut Listing) {
        for n in &self.nodes {
            if n.types != 0 {
                listing.record(&n.path, n.types);
            }
        }
    }

    /// An object begins (a walk that knows a value's type, not its text).
    pub fn begin_object_kind(&mut self) {
        self.value(OBJECT, Some(false));
    }

    /// An array begins.
    pub fn begin_array_kind(&mut self) {
        self.value(ARRAY, Some(true));
    }

    /// The open object or array ends.
    pub fn end_kind(&mut self) {
        self.end();
    }

    /// A member name of the open object.
    pub fn key_text(&mut self, key: &str) {
        if self.muted > 0 {
            return;
        }
        // only the reader's own namespace: a member of the walked
        // trajectory's top level (node 0 is the root)
        if key == EXCLUDED && matches!(self.stack.last(), Some(&(0, false))) {
            self.skip_next = true;
        } else if let Some(&(parent, false)) = self.stack.last() {
            self.member = self.member_node(parent, key);
        }
    }

    /// A scalar of `kind` (a walk that knows a value's type, not its text).
    pub fn scalar_kind(&mut self, kind: ScalarKind) {
        let ty = match kind {
            ScalarKind::Bool => 1,
            ScalarKind::Null => 2,
            ScalarKind::Number => 3,
            ScalarKind::String => 5,
        };
        self.value(ty, None);
    }

    /// The child of `parent` at segment `seg`, made when new.
    fn child(&mut self, parent: u32, seg: &str) -> u32 {
        let id = self.nodes.len() as u32;
        let mut path = self.nodes[parent as usize].path.clone();
        push_segment(&mut path, seg);
        self.nodes.push(PathNode::new(path));
        id
    }

    /// The node of member `key` of the object at `parent`.
    fn member_node(&mut self, parent: u32, key: &str) -> u32 {
        let p = &self.nodes[parent as usize];
        if let Some(&(_, id)) = p.members.iter().find(|(k, _)| &**k == key) {
            return id;
        }
        if is_volatile_key(key) {
            if let Some(id) = p.star {
                return id;
            }
            let id = self.child(parent, "*");
            self.nodes[parent as usize].star = Some(id);
            return id;
        }
        let id = self.child(parent, key);
        self.nodes[parent as usize].members.push((key.into(), id));
        id
    }

    /// A value of type `ty` (its index in [`TYPES`]) starts; `container`
    /// when it is an object or an array (then its interior follows, walked
    /// or not).
    fn value(&mut self, ty: usize, container: Option<bool>) {
        if self.muted > 0 {
            self.muted += usize::from(container.is_some());
            return;
        }
        if self.skip_next {
            self.skip_next = false;
            self.muted = usize::from(container.is_some());
            return;
        }
        let node = match self.stack.last() {
            None => 0,
            Some(&(_, false)) => self.member,
            Some(&(parent, true)) => match self.nodes[parent as usize].elements {
                Some(id) => id,
                None => {
                    let id = self.child(parent, "[]");
                    self.nodes[parent as usize].elements = Some(id);
                    id
                }
            },
        };
        let n = &mut self.nodes[node as usize];
        n.types |= 1 << ty;
        if let Some(array) = container {
            if n.opaque {
                self.muted = 1;
                return;
            }
            self.stack.push((node, array));
        }
    }

    fn end(&mut self) {
        if self.muted > 0 {
            self.muted -= 1;
        } else {
            self.stack.pop();
        }
    }
}

impl PathNode {
    fn new(path: String) -> PathNode {
        PathNode {
            opaque: OPAQUE.contains(&path.as_str()),
            path,
            types: 0,
            members: Vec::new(),
            star: None,
            elements: None,
        }
    }
}

/// Indices in [`TYPES`].
const ARRAY: usize = 0;
const OBJECT: usize = 4;

/// The JSON type of a scalar ([`ListingWalk::scalar_kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarKind {
    Null,
    Bool,
    Number,
    String,
}

impl Visit for ListingWalk {
    fn key(&mut self, key: &str, _json: &[u8]) -> Result<(), WalkError> {
        self.key_text(key);
        Ok(())
    }
    fn begin_object(&mut self) -> Result<(), WalkError> {
        self.begin_object_kind();
        Ok(())
    }
    fn end_object(&mut self) -> Result<(), WalkError> {
        self.end();
        Ok(())
    }
    fn begin_array(&mut self) -> Result<(), WalkError> {
        self.begin_array_kind();
        Ok(())
    }
    fn end_array(&mut self) -> Result<(), WalkError> {
        self.end();
        Ok(())
    }
    fn scalar(&mut self, value: Scalar<'_>) -> Result<(), WalkError> {
        self.scalar_kind(match value {
            Scalar::Null => ScalarKind::Null,
            Scalar::Bool(_) => ScalarKind::Bool,
            Scalar::Number(_) => ScalarKind::Number,
            Scalar::Str(..) => ScalarKind::String,
        });
        Ok(())
    }
}

/// [`Listing::add_document`]'s envelope rule over the text: the document
/// is walked into `root`, except the interior of a top-level `trajectory`
/// member that is an object, which is walked into `trajectory` as the
/// root; the listing is `trajectory`'s when there was one (`found`), else
/// `root`'s.
struct Envelope {
    root: ListingWalk,
    trajectory: ListingWalk,
    /// Open containers.
    depth: usize,
    /// The last top-level key was `trajectory`.
    at_trajectory: bool,
    /// Inside the `trajectory` object.
    inside: bool,
    found: bool,
}

impl Visit for Envelope {
    fn key(&mut self, key: &str, json: &[u8]) -> Result<(), WalkError> {
        if self.inside {
            return self.trajectory.key(key, json);
        }
        if self.depth == 1 {
            self.at_trajectory = key == "trajectory";
        }
        self.root.key(key, json)
    }
    fn begin_object(&mut self) -> Result<(), WalkError> {
        self.depth += 1;
        if self.inside {
            return self.trajectory.begin_object();
        }
        if self.depth == 2 && self.at_trajectory {
            self.inside = true;
            self.found = true;
            // `root` is discarded when this member is found: it notes the
            // member's type and no more.
            self.root.value(OBJECT, None);
            return self.trajectory.begin_object();
        }
        self.root.begin_object()
    }
    fn end_object(&mut self) -> Result<(), WalkError> {
        self.depth -= 1;
        if self.inside {
            if self.depth == 1 {
                self.inside = false;
            }
            return self.trajectory.end_object();
        }
        self.root.end_object()
    }
    fn begin_array(&mut self) -> Result<(), WalkError> {
        self.depth += 1;
        if self.inside {
            return self.trajectory.begin_array();
        }
        self.root.begin_array()
    }
    fn end_array(&mut self) -> Result<(), WalkError> {
        self.depth -= 1;
        if self.inside {
            return self.trajectory.end_array();
        }
        self.root.end_array()
    }
    fn scalar(&mut self, value: Scalar<'_>) -> Result<(), WalkError> {
        if self.inside {
            return self.trajectory.scalar(value);
        }
        self.root.scalar(value)
    }
}

/// `sha256:` + hex of `lines` joined with `\n`.
pub fn fingerprint_of(lines: &[String]) -> String {
    let mut h = Sha256::new();
    for (i, l) in lines.iter().enumerate() {
        if i > 0 {
            h.update(b"\n");
        }
        h.update(l.as_bytes());
    }
    format!("sha256:{}", crate::util::hex(&h.finalize()))
}

/// Entries added and removed between two listings (whole lines: a path
/// whose type set changed is one line removed and one added).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ShapeDiff {
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

impl ShapeDiff {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }
}

/// A listing as the manifest records it: the file beside the manifest,
/// its fingerprint and its entry count.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListingRecord {
    pub file: String,
    pub fingerprint: String,
    pub entries: usize,
    /// How many answers were walked.
    pub documents: usize,
}

/// The two listings of a sweep (`shapes` in the manifest).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Shapes {
    pub ordinary: ListingRecord,
    pub full: ListingRecord,
}

/// The two listings of a sweep's saved answers, built from each pair of
/// files `(ordinary, full)` in `answers` (in order; a file that is not
/// there adds nothing). The sweep folder's layout names the files
/// (`agy_audit_app::sweep_dir`); this reads what it is given.
pub fn from_answers(
    answers: impl IntoIterator<Item = (PathBuf, PathBuf)>,
) -> Result<(Listing, usize, Listing, usize), ShapeError> {
    let (mut ordinary, mut full) = (Listing::new(), Listing::new());
    let (mut n_ord, mut n_full) = (0, 0);
    for (ordinary_file, full_file) in answers {
        for (file, listing, n) in [
            (ordinary_file, &mut ordinary, &mut n_ord),
            (full_file, &mut full, &mut n_full),
        ] {
            use crate::util::bounded::{read_if_present, InputKind};
            match read_if_present(&file, InputKind::Answer) {
                Ok(Some(bytes)) => {
                    listing.add_bytes(&file, &bytes)?;
                    *n += 1;
                }
                Ok(None) => {}
                Err(e) => {
                    return Err(ShapeError::Io {
                        file,
                        detail: crate::util::io_text(&e.into_io()),
                    })
                }
            }
        }
    }
    Ok((ordinary, n_ord, full, n_full))
}

/// Reads the two listings a manifest (read from `manifest_file`) records
/// beside it, checking each file's fingerprint against the manifest's;
/// `None` when the manifest records none.
pub fn of_manifest(
    manifest_file: &Path,
    shapes: Option<&Shapes>,
) -> Result<Option<(Listing, Listing)>, ShapeError> {
    let Some(shapes) = shapes else {
        return Ok(None);
    };
    let dir = manifest_file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let read = |r: &ListingRecord| -> Result<Listing, ShapeError> {
        if r.file.contains('/') || r.file.contains('\\') || r.file.starts_with('.') {
            return Err(ShapeError::NotAListing {
                file: manifest_file.to_path_buf(),
                detail: format!(
                    "shapes file `{}` is not a plain name beside the manifest",
                    r.file
                ),
            });
        }
        let file = dir.join(&r.file);
        let (l, fp) = Listing::read(&file)?;
        if fp != r.fingerprint {
            return Err(ShapeError::NotAListing {
                file,
                detail: format!(
                    "fingerprint {fp}, but the manifest records {}",
                    r.fingerprint
                ),
            });
        }
        Ok(l)
    };
    Ok(Some((read(&shapes.ordinary)?, read(&shapes.full)?)))
}

/// Reads what `shapes diff` and `format-audit --against` take: a listing
/// file (`.tsv`), or a JSON document: a format-audit record (its listing
/// texts), or a trajectory / response whose listing is computed.
pub fn read_any(file: &Path) -> Result<Listing, ShapeError> {
    let bytes = read_listing_file(file)?;
    any_of_bytes(file, bytes)
}

/// A listing file's bytes: a regular file (a FIFO or device refused, never
/// waited on), at most [`InputKind::Listing`]'s cap; `-` is standard input.
/// Read once, so a pipe given as `/dev/stdin` is never read twice.
///
/// [`InputKind::Listing`]: crate::util::bounded::InputKind::Listing
pub fn read_listing_file(file: &Path) -> Result<Vec<u8>, ShapeError> {
    use crate::util::bounded::{read_input, InputKind};
    read_input(file, InputKind::Listing).map_err(|e| ShapeError::Io {
        file: file.to_path_buf(),
        detail: crate::util::io_text(&e.into_io()),
    })
}

/// [`read_any`] of bytes already read from `file`.
pub fn any_of_bytes(file: &Path, bytes: Vec<u8>) -> Result<Listing, ShapeError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{') {
        let v: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| ShapeError::Json {
                file: file.to_path_buf(),
                detail: e.to_string(),
            })?;
        if v.get("manifestVersion").is_some() {
            return Err(ShapeError::NotAListing {
                file: file.to_path_buf(),
                detail: format!(
                    "a manifest; name the listing beside it ({ORDINARY_FILE} or {FULL_FILE})"
                ),
            });
        }
        if v.get("formatAudit").is_some() {
            let text = v
                .pointer("/shapes/ordinary/listing")
                .and_then(serde_json::Value::as_str)
                .ok_or_else(|| ShapeError::NotAListing {
                    file: file.to_path_buf(),
                    detail: "a format-audit record without shapes.ordinary.listing".into(),
                })?;
            return Ok(Listing::parse(file, text)?.0);
        }
        let mut l = Listing::new();
        l.add_document(&v);
        return Ok(l);
    }
    let text = String::from_utf8(bytes).map_err(|_| ShapeError::NotAListing {
        file: file.to_path_buf(),
        detail: "not UTF-8".into(),
    })?;
    Ok(Listing::parse(file, &text)?.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn listing(v: serde_json::Value) -> Listing {
        let mut l = Listing::new();
        l.add_document(&v);
        l
    }

    #[test]
    fn walks_paths_types_and_arrays() {
        let l = listing(json!({"a": 1, "b": [{"c": "x"}, {"c": null}]}));
        assert_eq!(
            l.text(),
            "\tobject\na\tnumber\nb\tarray\nb.[]\tobject\nb.[].c\tnull|string"
        );
    }

    #[test]
    fn volatile_keys_collapse() {
        for k in [
            "file:///x",
            "a/b",
            "11111111-2222-3333-4444-555555555555",
            "42",
            "0123456789abcdef",
        ] {
            assert!(is_volatile_key(k), "{k}");
        }
        for k in ["cascadeId", "0123456789abcde", "0123456789ABCDEF", "-1", ""] {
            assert!(!is_volatile_key(k), "{k}");
        }
        let a = listing(json!({"m": {"file:///a": "x", "12": "y"}}));
        let b = listing(json!({"m": {"file:///b": "z"}}));
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert_eq!(a.text(), "\tobject\nm\tobject\nm.*\tstring");
    }

    #[test]
    fn opaque_and_excluded() {
        let l = listing(json!({"trajectory": {"generatorMetadata": [{"x": 1}],
            "steps": [{"generic": {"y": 1}}], "agyReader": {"z": 1}}, "status": "S"}));
        assert_eq!(
            l.text(),
            "\tobject\ngeneratorMetadata\tarray\nsteps\tarray\nsteps.[]\tobject\nsteps.[].generic\tobject"
        );
    }

    #[test]
    fn parse_round_trips_and_refuses() {
        let l = listing(json!({"a": [1, "x"], "b": true}));
        let (p, fp) = Listing::parse(Path::new("t"), &(l.text() + "\n")).unwrap();
        assert_eq!(p, l);
        assert_eq!(fp, l.fingerprint());
        for bad in [
            "b\tstring\na\tstring",
            "a\tstring\na\tnumber",
            "a\tstr",
            "a string",
            "a\tstring|string",
            "a\tstring\r\n",
        ] {
            assert!(Listing::parse(Path::new("t"), bad).is_err(), "{bad:?}");
        }
    }

    /// Each near-miss of a canonical listing is refused with its own rule
    /// (issue 45 item 4): not "not sorted" for a repeated line or a BOM, and
    /// a type set out of its bytewise order is refused, not fingerprinted
    /// apart from the same set in order.
    #[test]
    fn each_non_canonical_listing_is_named() {
        let rule = |text: &str| match Listing::parse(Path::new("t"), text) {
            Err(ShapeError::Listing { line, rule, .. }) => (line, rule),
            other => panic!("{text:?}: {other:?}"),
        };
        let (line, r) = rule("a\tstring|number|null|boolean\n");
        assert_eq!(line, 1);
        assert!(
            r.contains("out of their bytewise order") && r.contains("boolean|null|number|string"),
            "{r}"
        );
        let (line, r) = rule("a\tstring\na\tstring\n");
        assert_eq!(
            (line, r.as_str()),
            (2, "line repeated (line 1 is the same)")
        );
        let (line, r) = rule("\u{feff}a\tstring\n");
        assert_eq!(line, 1);
        assert!(r.contains("byte-order mark"), "{r}");
        let (line, r) = rule("a\tnumber\na\tstring\n");
        assert_eq!(line, 2);
        assert!(r.contains("path `a` twice"), "{r}");
        let (_, r) = rule("b\tstring\na\tstring\n");
        assert!(r.contains("not sorted"), "{r}");
        // the canonical order reads, and is the fingerprint the listing gives
        let (l, fp) = Listing::parse(Path::new("t"), "a\tboolean|null|number|string\n").unwrap();
        assert_eq!(fp, l.fingerprint());
        assert_eq!(
            l.types("a").unwrap(),
            ["boolean", "null", "number", "string"]
        );
    }

    /// The `agyReader` excluded is the reader's own, at the trajectory's top
    /// level (public-format-facts §5.1/§5.2); the same name deeper is the
    /// daemon's and is listed, by both walks.
    #[test]
    fn only_the_top_level_agy_reader_is_excluded() {
        for text in [
            r#"{"agyReader":{"z":1},"steps":[{"agyReader":{"x":1}}],"m":{"agyReader":2}}"#,
            r#"{"trajectory":{"agyReader":{"z":1},"steps":[{"agyReader":{"x":1}}],"m":{"agyReader":2}}}"#,
        ] {
            let mut l = Listing::new();
            l.add_text(text).unwrap();
            assert_eq!(
                l.text(),
                "\tobject\nm\tobject\nm.agyReader\tnumber\nsteps\tarray\nsteps.[]\tobject\nsteps.[].agyReader\tobject\nsteps.[].agyReader.x\tnumber",
                "{text}"
            );
            assert_same_listing(text);
        }
    }

    /// `add_text` against the tree's `add_document`, line for line.
    fn assert_same_listing(text: &str) {
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let mut l = Listing::new();
        l.add_text(text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(l.text(), listing(v.clone()).text(), "{text}");
        // Into a listing that already holds entries: the union.
        let mut seeded = listing(json!({"a": "x", "zz": [null]}));
        seeded.add_text(text).unwrap();
        let mut want = listing(json!({"a": "x", "zz": [null]}));
        want.add_document(&v);
        assert_eq!(seeded, want, "{text}");
        let mut bytes = Listing::new();
        bytes.add_bytes(Path::new("t"), text.as_bytes()).unwrap();
        assert_eq!(bytes, l);
    }

    #[test]
    fn text_walk_equals_the_tree() {
        for t in [
            r#"{}"#,
            r#"[]"#,
            r#"1"#,
            r#""s""#,
            r#"[1,"a",null,true,{"x":[]}]"#,
            r#"{"trajectory":{"a":1,"b":[{"c":"x"},{"c":null}]},"status":"S","numTotalSteps":2}"#,
            r#"{"status":"S","trajectory":{"generatorMetadata":[{"x":1}],"steps":[{"generic":{"y":1}}],"agyReader":{"z":1}}}"#,
            r#"{"trajectory":[{"a":1}],"status":"S"}"#,
            r#"{"trajectory":"t","x":{"trajectory":{"q":1}}}"#,
            r#"{"trajectory":null}"#,
            r#"{"trajectory":{}}"#,
            r#"[{"trajectory":{"a":1}}]"#,
            r#"{"a":{"agyReader":{"b":1},"c":[{"agyReader":2,"d":3}]},"agyReader":[1]}"#,
            r#"{"m":{"file:///a":"x","12":"y","a/b":[1],"0123456789abcdef":{"k":1},"11111111-2222-3333-4444-555555555555":1,"0123456789ABCDEF":2}}"#,
            r#"{"metadata":{"mendelExperimentIds":[1,2],"x":{"y":1}},"executorMetadatas":{"a":{"b":1}}}"#,
            r#"{"steps":[{"metadata":{"internalMetadata":{"a":1},"sourceTrajectoryStepInfo":[1]},"userInput":{"activeUserState":{"x":1},"userConfig":[{"y":1}],"other":{"z":1}}}]}"#,
            r#"{"k\"ey":1,"k\\ey":{"\n":2},"\u00e9":3,"":{"":[{"":1}]},"a.b":1}"#,
            r#"{"n":[0,-0,1e400,1.000000000000000000001],"s":"\ud83d\ude00"}"#,
        ] {
            assert_same_listing(t);
        }
    }

    #[test]
    fn text_walk_stops_on_repeats_and_bad_text() {
        for t in [
            r#"{"a":1,"a":"x"}"#,
            r#"{"trajectory":{"a":1},"trajectory":{"b":1}}"#,
            r#"{"x":[{"b":1,"a":2,"b":[3]}]}"#,
            r#"{"a":1"#,
            r#"{"a":"\udc00"}"#,
        ] {
            let mut l = listing(json!({"a": 1}));
            let before = l.clone();
            assert!(l.add_text(t).is_err(), "{t}");
            assert_eq!(l, before, "unchanged: {t}");
            let mut fresh = Listing::new();
            assert!(fresh.add_text(t).is_err(), "{t}");
            assert!(fresh.is_empty(), "{t}");
        }
        // add_bytes then decides by the tree: the last repeated value.
        let mut l = Listing::new();
        l.add_bytes(Path::new("t"), br#"{"a":1,"a":"x"}"#).unwrap();
        assert_eq!(l.text(), "\tobject\na\tstring");
        assert!(Listing::new().add_bytes(Path::new("t"), b"{").is_err());
    }

    #[test]
    fn diff_names_added_and_removed() {
        let a = listing(json!({"a": 1}));
        let b = listing(json!({"a": "x", "n": 1}));
        let d = a.diff(&b);
        assert_eq!(d.added, vec!["a\tstring", "n\tnumber"]);
        assert_eq!(d.removed, vec!["a\tnumber"]);
    }
}
