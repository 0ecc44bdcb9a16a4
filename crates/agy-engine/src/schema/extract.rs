//! `schema extract` / `schema verify`: recover the serialized
//! FileDescriptorProto records a Go protobuf program embeds raw in its binary.
//!
//! Search: every occurrence of `.proto` (memchr's memmem) whose preceding
//! bytes read `0x0a <varint length> <name>` — field 1 of a
//! FileDescriptorProto, a name of path characters ending in `.proto` — is a
//! candidate record start. The record's extent is found by parsing top-level
//! fields from there (numbers 1-15 in non-decreasing order, as protoc and
//! prost serialize them) until the message cannot continue; each field
//! boundary is a candidate end, tried from the longest. A candidate is
//! accepted only when it decodes strictly and re-encodes to exactly its bytes:
//! as a prost-types `FileDescriptorProto` (which keeps no unknown field), or
//! as a dynamic `google.protobuf.FileDescriptorProto` whose only unknown
//! fields are custom-option extension numbers (>= 1000) inside an `*Options`
//! message. The dynamic description is the binary's own
//! `google/protobuf/descriptor.proto` when it embeds one that checks itself
//! strictly (newer runtimes add descriptor fields, e.g. editions), else
//! prost-reflect's. A record must carry a field besides its name (a name
//! alone is a string that happens to follow `0x0a <length>`, not a record).
//! The set must load as a pool, which catches a record cut short.
//!
//! Every accepted record is either extracted or listed as skipped with its
//! offset and reason ([`SkipReason`]), never dropped silently. Extracted: a
//! record that declares something (a message, enum, service or extension),
//! or that only imports others (golang/protobuf's `ptypes/*` files declare
//! nothing and public-import the well-known types). Skipped: a record that
//! declares nothing and imports no `.proto` file; a record whose `syntax` is
//! neither absent, `proto2` nor `proto3` (edition-2023 files say
//! `editions`), which the descriptor library cannot load (see
//! [`super::check_syntax`]); a kept file importing such a record stops
//! extraction.
//!
//! Two accepted records with one name: identical bytes are one record (the
//! repeat skipped); a record that is a byte prefix of another is a truncated
//! copy and skipped; anything else stops extraction. The annotation-only
//! files of [`ANNOTATION_ONLY`] are dropped whether or not they were found,
//! together with the imports of them and the extensions that refer to their
//! types; any other missing import stops extraction. The set is written in dependency
//! order (ties by name), every file as its original record bytes unless an
//! import or extension had to be removed, and must load as a pool.

use super::{add_file, check_file_syntax, decode_pool, PoolError, UnsupportedSyntax};
use memchr::memmem;
use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, ReflectMessage, Value};
use prost_types::{FileDescriptorProto, FileDescriptorSet};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Files that only declare custom options (HTTP and client annotations, field
/// behaviour, resource names, launch stages). Their values live in option
/// fields the reader never decodes, so they are dropped from an extraction
/// with every import of them and every extension referring to their types.
pub const ANNOTATION_ONLY: &[&str] = &[
    "google/api/annotations.proto",
    "google/api/client.proto",
    "google/api/field_behavior.proto",
    "google/api/http.proto",
    "google/api/launch_stage.proto",
    "google/api/resource.proto",
];

/// The manifest format written by `schema extract`.
pub const EXTRACT_FORMAT: &str = "agy-audit-extract/v1";

/// Longest file name considered (bytes).
const MAX_NAME: usize = 1024;
/// Longest single field considered inside a record.
const MAX_FIELD: u64 = 64 << 20;

/// Why extraction or verification failed.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no FileDescriptorProto records found")]
    NoRecords,
    #[error("no usable FileDescriptorProto record: {} found, all skipped: {}", .0.len(), skipped_text(.0))]
    NothingUsable(Vec<Skipped>),
    #[error("{file} imports {import}, whose record (offset {offset}) declares syntax {syntax:?}, which this reader cannot load (only proto2 and proto3)")]
    UnsupportedImport {
        file: String,
        import: String,
        offset: u64,
        syntax: String,
    },
    #[error(transparent)]
    Syntax(#[from] UnsupportedSyntax),
    #[error("two different records are both named {name} (offsets {first} and {second}); refusing to choose")]
    Conflict {
        name: String,
        first: u64,
        second: u64,
    },
    #[error("{file} imports {import}, which the binary does not hold (only the annotation-only files {} are dropped)", ANNOTATION_ONLY.join(", "))]
    MissingImport { file: String, import: String },
    #[error("import cycle among {0}")]
    Cycle(String),
    #[error("the extracted set does not load as a descriptor pool: {0}")]
    Pool(String),
    #[error("{path}: not an extraction manifest: {detail}")]
    Manifest { path: PathBuf, detail: String },
}

/// One record found in the binary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordEntry {
    pub name: String,
    pub offset: u64,
    pub length: u64,
    pub sha256: String,
}

/// Why a well-formed record is not in the extracted set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// Its `syntax` is neither absent, `proto2` nor `proto3`.
    UnsupportedSyntax { syntax: String },
    /// It declares nothing and imports no `.proto` file.
    DeclaresNothing,
    /// The same bytes as the record at offset `of`.
    Duplicate { of: u64 },
    /// A byte prefix of the record at offset `of`, which has its name.
    Truncated { of: u64 },
}

impl SkipReason {
    /// A stable identifier for the manifest: `unsupported-syntax`,
    /// `declares-nothing`, `duplicate`, `truncated`.
    pub fn kind(&self) -> &'static str {
        match self {
            SkipReason::UnsupportedSyntax { .. } => "unsupported-syntax",
            SkipReason::DeclaresNothing => "declares-nothing",
            SkipReason::Duplicate { .. } => "duplicate",
            SkipReason::Truncated { .. } => "truncated",
        }
    }
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkipReason::UnsupportedSyntax { syntax } => write!(
                f,
                "syntax {syntax:?} is not supported (only proto2 and proto3 load; protoc writes \"editions\" for edition-2023 files)"
            ),
            SkipReason::DeclaresNothing => write!(
                f,
                "declares no message, enum, service or extension and imports no .proto file"
            ),
            SkipReason::Duplicate { of } => write!(f, "identical to the record at offset {of}"),
            SkipReason::Truncated { of } => {
                write!(f, "a truncated copy of the record at offset {of}")
            }
        }
    }
}

/// A well-formed record found in the binary and not extracted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The file name it declares, when it has one.
    pub name: Option<String>,
    pub offset: u64,
    pub length: u64,
    /// SHA-256 of its bytes (hex).
    pub sha256: String,
    pub reason: SkipReason,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} at offset {} ({} bytes): {}",
            self.name.as_deref().unwrap_or("a record"),
            self.offset,
            self.length,
            self.reason
        )
    }
}

fn skipped_text(v: &[Skipped]) -> String {
    v.iter()
        .map(Skipped::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// A skipped record as the manifest lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedEntry {
    pub offset: u64,
    pub length: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub sha256: String,
    /// [`SkipReason::kind`].
    pub kind: String,
    /// [`SkipReason`]'s text.
    pub reason: String,
}

impl From<&Skipped> for SkippedEntry {
    fn from(s: &Skipped) -> Self {
        SkippedEntry {
            offset: s.offset,
            length: s.length,
            name: s.name.clone(),
            sha256: s.sha256.clone(),
            kind: s.reason.kind().to_string(),
            reason: s.reason.to_string(),
        }
    }
}

/// The manifest `schema extract` writes (JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtractManifest {
    pub format: String,
    /// SHA-256 of the binary the records came from.
    pub binary_sha256: String,
    pub binary_bytes: u64,
    /// The agy release the binary is (`--release`), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,
    /// SHA-256 of the FileDescriptorSet written (the pin).
    pub schema_sha256: String,
    /// Files in the set, in its order.
    pub files: Vec<String>,
    /// Annotation-only files dropped (found or imported).
    pub dropped: Vec<String>,
    /// Every extracted record, by offset.
    pub records: Vec<RecordEntry>,
    /// Every well-formed record not extracted, by offset, with its reason
    /// (absent from manifests written before it was listed).
    #[serde(default)]
    pub skipped: Vec<SkippedEntry>,
}

/// What `extract` found.
#[derive(Debug, Clone)]
pub struct Extraction {
    pub binary_sha256: [u8; 32],
    pub binary_bytes: u64,
    /// Extracted records (unique by name), by offset.
    pub records: Vec<RecordEntry>,
    /// Every well-formed record not extracted, by offset, with its reason
    /// (the truncated copies and identical repeats below included).
    pub skipped: Vec<Skipped>,
    /// Truncated copies skipped, as (name, offset).
    pub truncated: Vec<(String, u64)>,
    /// Identical repeated records skipped, as (name, offset).
    pub duplicates: Vec<(String, u64)>,
    /// The deterministic FileDescriptorSet.
    pub set: Vec<u8>,
    /// File names in set order.
    pub files: Vec<String>,
    pub dropped: Vec<String>,
}

impl Extraction {
    /// The manifest for this extraction.
    pub fn manifest(&self, release: Option<&str>) -> ExtractManifest {
        ExtractManifest {
            format: EXTRACT_FORMAT.to_string(),
            binary_sha256: crate::util::hex(&self.binary_sha256),
            binary_bytes: self.binary_bytes,
            release: release.map(str::to_string),
            schema_sha256: crate::util::hex(&Sha256::digest(&self.set)),
            files: self.files.clone(),
            dropped: self.dropped.clone(),
            records: self.records.clone(),
            skipped: self.skipped.iter().map(SkippedEntry::from).collect(),
        }
    }
}

fn read_varint(b: &[u8], i: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    for k in 0..10 {
        let byte = *b.get(*i)?;
        *i += 1;
        v |= u64::from(byte & 0x7f) << (7 * k);
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn varint_bytes(mut v: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(3);
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
    }
}

fn path_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'/')
}

/// Record starts whose name ends at `end` (the index just past `.proto`).
fn starts_for(b: &[u8], end: usize, out: &mut Vec<usize>) {
    let stem_end = end - ".proto".len();
    let mut run = stem_end;
    while run > 0 && end - run < MAX_NAME && path_char(b[run - 1]) {
        run -= 1;
    }
    // The name starts somewhere in the run of path characters (its length
    // prefix may itself be a printable byte).
    for s in run..stem_end {
        let len = (end - s) as u64;
        let v = varint_bytes(len);
        if s < v.len() + 1 {
            continue;
        }
        let tag_at = s - v.len() - 1;
        if b[tag_at] == 0x0a && b[tag_at + 1..s] == v[..] {
            out.push(tag_at);
        }
    }
}

/// The field boundaries of a message starting at `start`: numbers 1-15 in
/// non-decreasing order, stopping where the bytes cannot continue it.
fn candidate_ends(b: &[u8], start: usize) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut i = start;
    let mut last = 0u64;
    while i < b.len() {
        let mut j = i;
        let Some(tag) = read_varint(b, &mut j) else {
            break;
        };
        let (field, wire) = (tag >> 3, tag & 7);
        // Singular fields (name, package, options, source info, syntax,
        // edition) appear once; repeated ones may repeat.
        let singular = matches!(field, 1 | 2 | 8 | 9 | 12 | 14);
        if field == 0 || field > 15 || field < last || (singular && field == last) {
            break;
        }
        let ok = match wire {
            0 => read_varint(b, &mut j).is_some(),
            1 => {
                j += 8;
                j <= b.len()
            }
            2 => match read_varint(b, &mut j) {
                Some(len) if len <= MAX_FIELD && (len as usize) <= b.len() - j => {
                    j += len as usize;
                    true
                }
                _ => false,
            },
            5 => {
                j += 4;
                j <= b.len()
            }
            _ => false,
        };
        if !ok {
            break;
        }
        last = field;
        i = j;
        ends.push(j);
    }
    ends
}

fn declares_something(f: &FileDescriptorProto) -> bool {
    !(f.message_type.is_empty()
        && f.enum_type.is_empty()
        && f.service.is_empty()
        && f.extension.is_empty())
}

/// Imports at least one file, every import a `.proto` path and every public
/// or weak import index in range: a file that only imports others, like
/// golang/protobuf's `ptypes/*` (public imports of the well-known types).
fn imports_files(f: &FileDescriptorProto) -> bool {
    let n = f.dependency.len();
    n > 0
        && f.dependency
            .iter()
            .all(|d| d.len() > ".proto".len() && d.ends_with(".proto") && d.bytes().all(path_char))
        && f.public_dependency
            .iter()
            .chain(&f.weak_dependency)
            .all(|&i| usize::try_from(i).is_ok_and(|i| i < n))
}

/// A record the set can use (declares something or imports files).
fn useful(f: &FileDescriptorProto) -> bool {
    declares_something(f) || imports_files(f)
}

/// Every unknown field of `m`, at any depth, is an extension number inside an
/// `*Options` message.
fn only_option_extensions(m: &DynamicMessage) -> bool {
    let options = m.descriptor().name().ends_with("Options");
    if m.unknown_fields().any(|u| !(options && u.number() >= 1000)) {
        return false;
    }
    m.fields().all(|(_, v)| match v {
        Value::Message(c) => only_option_extensions(c),
        Value::List(items) => items.iter().all(|i| match i {
            Value::Message(c) => only_option_extensions(c),
            _ => true,
        }),
        _ => true,
    })
}

/// Strictly decodes `bytes` as one FileDescriptorProto that re-encodes to
/// exactly `bytes`: as a dynamic message of `fdp` (the newest
/// `google.protobuf.FileDescriptorProto` at hand) whose only unknown fields
/// are option extensions, and as a prost-types message for the set.
fn strict(bytes: &[u8], fdp: &prost_reflect::MessageDescriptor) -> Option<FileDescriptorProto> {
    let f = FileDescriptorProto::decode(bytes).ok()?;
    let name_only = FileDescriptorProto {
        name: f.name.clone(),
        ..Default::default()
    };
    if f == name_only {
        return None;
    }
    if f.encoded_len() == bytes.len() && f.encode_to_vec() == bytes {
        return Some(f);
    }
    let d = DynamicMessage::decode(fdp.clone(), bytes).ok()?;
    (d.encode_to_vec() == bytes && only_option_extensions(&d)).then_some(f)
}

/// The file name a record starting at `s` declares.
fn name_at(b: &[u8], s: usize) -> Option<&[u8]> {
    let mut i = s + 1;
    let len = usize::try_from(read_varint(b, &mut i)?).ok()?;
    b.get(i..i.checked_add(len)?)
}

const DESCRIPTOR_PROTO: &[u8] = b"google/protobuf/descriptor.proto";

/// The binary's own descriptor.proto, when it embeds one that describes
/// itself strictly: newer protobuf runtimes add descriptor fields (editions,
/// feature support) that older descriptions would call unknown.
fn own_fdp(b: &[u8], starts: &[usize]) -> Option<prost_reflect::MessageDescriptor> {
    for &s in starts {
        if name_at(b, s) != Some(DESCRIPTOR_PROTO) {
            continue;
        }
        for &e in candidate_ends(b, s).iter().rev() {
            let Ok(f) = FileDescriptorProto::decode(&b[s..e]) else {
                continue;
            };
            let mut pool = DescriptorPool::new();
            if add_file(&mut pool, f).is_err() {
                continue;
            }
            let Some(fdp) = pool.get_message_by_name("google.protobuf.FileDescriptorProto") else {
                continue;
            };
            if strict(&b[s..e], &fdp).is_some() {
                return Some(fdp);
            }
        }
    }
    None
}

/// Reads `path` into memory once (read-only) and extracts.
pub fn extract_file(path: &Path) -> Result<Extraction, ExtractError> {
    use crate::util::bounded::{read_regular, InputKind};
    let bytes = read_regular(path, InputKind::Binary).map_err(|e| ExtractError::Io {
        path: path.to_path_buf(),
        source: e.into_io(),
    })?;
    extract(&bytes)
}

struct Found {
    name: String,
    offset: usize,
    end: usize,
    file: FileDescriptorProto,
}

/// Extracts the descriptor set embedded in `b`.
pub fn extract(b: &[u8]) -> Result<Extraction, ExtractError> {
    let binary_sha256: [u8; 32] = Sha256::digest(b).into();
    let starts = record_starts(b);
    let fdp = match own_fdp(b, &starts) {
        Some(d) => d,
        None => DescriptorPool::global()
            .get_message_by_name("google.protobuf.FileDescriptorProto")
            .ok_or_else(|| ExtractError::Pool("no google.protobuf.FileDescriptorProto".into()))?,
    };
    let found = strict_records(b, starts, &fdp);
    // Records that neither declare nor import anything are listed apart:
    // they take no part in the one-record-per-name rule below.
    let (found, empty): (Vec<Found>, Vec<Found>) = found.into_iter().partition(|f| useful(&f.file));
    let mut aside = SetAside::default();
    let found = one_per_name(b, found, &mut aside)?;
    let (found, unsupported) = loadable(b, found, &mut aside);
    skip_empty(b, &empty, &found, &mut aside);
    let SetAside {
        mut skipped,
        mut truncated,
        duplicates,
    } = aside;
    skipped.sort_by_key(|s| s.offset);
    truncated.sort_by_key(|t| t.1);
    check_imports(&found, &unsupported)?;
    if found.is_empty() {
        return Err(if skipped.is_empty() {
            ExtractError::NoRecords
        } else {
            ExtractError::NothingUsable(skipped)
        });
    }
    let records = found
        .iter()
        .map(|f| RecordEntry {
            name: f.name.clone(),
            offset: f.offset as u64,
            length: (f.end - f.offset) as u64,
            sha256: crate::util::hex(&Sha256::digest(&b[f.offset..f.end])),
        })
        .collect();
    let files: Vec<(FileDescriptorProto, Option<&[u8]>)> = found
        .iter()
        .map(|f| (f.file.clone(), Some(&b[f.offset..f.end])))
        .collect();
    let (set, names, dropped) = assemble(files)?;
    Ok(Extraction {
        binary_sha256,
        binary_bytes: b.len() as u64,
        records,
        skipped,
        truncated,
        duplicates,
        set,
        files: names,
        dropped,
    })
}

/// Where a record may start: before each `.proto` file name, sorted, once.
fn record_starts(b: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    for hit in memmem::find_iter(b, b".proto") {
        starts_for(b, hit + ".proto".len(), &mut starts);
    }
    starts.sort_unstable();
    starts.dedup();
    starts
}

/// The records that decode strictly, in offset order: at each start not
/// inside a record already found, the longest candidate that does.
fn strict_records(
    b: &[u8],
    starts: Vec<usize>,
    fdp: &prost_reflect::MessageDescriptor,
) -> Vec<Found> {
    let mut found: Vec<Found> = Vec::new();
    let mut covered = 0usize;
    for s in starts {
        if s < covered {
            continue;
        }
        for &e in candidate_ends(b, s).iter().rev() {
            if let Some(file) = strict(&b[s..e], fdp) {
                found.push(Found {
                    name: file.name.clone().unwrap_or_default(),
                    offset: s,
                    end: e,
                    file,
                });
                covered = e;
                break;
            }
        }
    }
    found
}

/// The records not extracted, in the order they were set aside.
#[derive(Default)]
struct SetAside {
    /// Every record not extracted, with its reason.
    skipped: Vec<Skipped>,
    /// Truncated copies, as (name, offset).
    truncated: Vec<(String, u64)>,
    /// Identical repeats, as (name, offset).
    duplicates: Vec<(String, u64)>,
}

/// The skipped entry for record `f` of `b`.
fn skip(b: &[u8], f: &Found, reason: SkipReason) -> Skipped {
    Skipped {
        name: Some(f.name.clone()).filter(|n| !n.is_empty()),
        offset: f.offset as u64,
        length: (f.end - f.offset) as u64,
        sha256: crate::util::hex(&Sha256::digest(&b[f.offset..f.end])),
        reason,
    }
}

/// One record per name: an identical repeat or a cut-short copy is set
/// aside; two different records of one name refuse the extraction.
fn one_per_name(
    b: &[u8],
    found: Vec<Found>,
    aside: &mut SetAside,
) -> Result<Vec<Found>, ExtractError> {
    let mut by_name: BTreeMap<String, usize> = BTreeMap::new();
    let mut keep = vec![true; found.len()];
    for i in 0..found.len() {
        let Some(&j) = by_name.get(&found[i].name) else {
            by_name.insert(found[i].name.clone(), i);
            continue;
        };
        let (a, c) = (
            &b[found[j].offset..found[j].end],
            &b[found[i].offset..found[i].end],
        );
        let of = |k: usize| found[k].offset as u64;
        if a == c {
            keep[i] = false;
            aside.duplicates.push((found[i].name.clone(), of(i)));
            aside
                .skipped
                .push(skip(b, &found[i], SkipReason::Duplicate { of: of(j) }));
        } else if a.starts_with(c) {
            keep[i] = false;
            aside.truncated.push((found[i].name.clone(), of(i)));
            aside
                .skipped
                .push(skip(b, &found[i], SkipReason::Truncated { of: of(j) }));
        } else if c.starts_with(a) {
            keep[j] = false;
            aside.truncated.push((found[j].name.clone(), of(j)));
            aside
                .skipped
                .push(skip(b, &found[j], SkipReason::Truncated { of: of(i) }));
            by_name.insert(found[i].name.clone(), i);
        } else {
            return Err(ExtractError::Conflict {
                name: found[i].name.clone(),
                first: found[j].offset as u64,
                second: found[i].offset as u64,
            });
        }
    }
    Ok(found
        .into_iter()
        .zip(keep)
        .filter_map(|(f, k)| k.then_some(f))
        .collect())
}

/// The unsupported records of each name, as (offset, syntax).
type Unsupported = BTreeMap<String, (u64, String)>;

/// A record the pool cannot load (its syntax) is set aside; returns the
/// rest and the names set aside, which a kept file may not import.
fn loadable(b: &[u8], found: Vec<Found>, aside: &mut SetAside) -> (Vec<Found>, Unsupported) {
    let mut unsupported: Unsupported = BTreeMap::new();
    let mut kept = Vec::with_capacity(found.len());
    for f in found {
        match check_file_syntax(&f.file) {
            Ok(()) => kept.push(f),
            Err(e) => {
                unsupported.insert(f.name.clone(), (f.offset as u64, e.syntax.clone()));
                aside.skipped.push(skip(
                    b,
                    &f,
                    SkipReason::UnsupportedSyntax { syntax: e.syntax },
                ));
            }
        }
    }
    (kept, unsupported)
}

/// Sets aside the records that declare nothing: a cut-short copy of a
/// record found whole says so.
fn skip_empty(b: &[u8], empty: &[Found], found: &[Found], aside: &mut SetAside) {
    for f in empty {
        let whole = found
            .iter()
            .find(|g| g.name == f.name && b[g.offset..g.end].starts_with(&b[f.offset..f.end]));
        let reason = match whole {
            Some(g) => {
                aside.truncated.push((f.name.clone(), f.offset as u64));
                SkipReason::Truncated {
                    of: g.offset as u64,
                }
            }
            None => SkipReason::DeclaresNothing,
        };
        aside.skipped.push(skip(b, f, reason));
    }
}

/// Refuses a kept file importing a record skipped for its syntax (an
/// annotation-only import aside, which is dropped anyway).
fn check_imports(found: &[Found], unsupported: &Unsupported) -> Result<(), ExtractError> {
    for f in found {
        for d in &f.file.dependency {
            if ANNOTATION_ONLY.contains(&d.as_str()) {
                continue;
            }
            if let Some((offset, syntax)) = unsupported.get(d) {
                return Err(ExtractError::UnsupportedImport {
                    file: f.name.clone(),
                    import: d.clone(),
                    offset: *offset,
                    syntax: syntax.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Full names (with a leading dot) of the types a file declares.
fn declared_types(f: &FileDescriptorProto) -> BTreeSet<String> {
    fn walk(prefix: &str, m: &prost_types::DescriptorProto, out: &mut BTreeSet<String>) {
        let name = format!("{prefix}.{}", m.name());
        for e in &m.enum_type {
            out.insert(format!("{name}.{}", e.name()));
        }
        for n in &m.nested_type {
            walk(&name, n, out);
        }
        out.insert(name);
    }
    let prefix = match f.package() {
        "" => String::new(),
        p => format!(".{p}"),
    };
    let mut out = BTreeSet::new();
    for m in &f.message_type {
        walk(&prefix, m, &mut out);
    }
    for e in &f.enum_type {
        out.insert(format!("{prefix}.{}", e.name()));
    }
    out
}

/// Drops the annotation-only files (their imports and the extensions using
/// their types), checks every other import, orders by dependency and encodes.
/// Each file is written as its original bytes when given and unchanged.
type Assembled = (Vec<u8>, Vec<String>, Vec<String>);

fn assemble(files: Vec<(FileDescriptorProto, Option<&[u8]>)>) -> Result<Assembled, ExtractError> {
    for (f, _) in &files {
        check_file_syntax(f)?;
    }
    let drop: BTreeSet<&str> = ANNOTATION_ONLY.iter().copied().collect();
    let mut dropped_types = BTreeSet::new();
    let mut dropped: BTreeSet<String> = BTreeSet::new();
    let mut kept = Vec::new();
    for (f, raw) in files {
        if drop.contains(f.name()) {
            dropped_types.extend(declared_types(&f));
            dropped.insert(f.name().to_string());
        } else {
            kept.push((f, raw));
        }
    }
    let mut out: BTreeMap<String, (FileDescriptorProto, Option<&[u8]>)> = BTreeMap::new();
    for (mut f, mut raw) in kept {
        let deps = std::mem::take(&mut f.dependency);
        let mut remap = Vec::with_capacity(deps.len());
        for d in deps {
            if drop.contains(d.as_str()) {
                dropped.insert(d);
                remap.push(None);
            } else {
                remap.push(Some(f.dependency.len() as i32));
                f.dependency.push(d);
            }
        }
        let fix = |v: &mut Vec<i32>| {
            *v = v
                .iter()
                .filter_map(|&i| remap.get(i as usize).copied().flatten())
                .collect();
        };
        fix(&mut f.public_dependency);
        fix(&mut f.weak_dependency);
        let refers = |x: &prost_types::FieldDescriptorProto| {
            dropped_types.contains(x.extendee()) || dropped_types.contains(x.type_name())
        };
        f.extension.retain(|x| !refers(x));
        fn strip(
            m: &mut prost_types::DescriptorProto,
            refers: &dyn Fn(&prost_types::FieldDescriptorProto) -> bool,
        ) {
            m.extension.retain(|x| !refers(x));
            for n in &mut m.nested_type {
                strip(n, refers);
            }
        }
        for m in &mut f.message_type {
            strip(m, &refers);
        }
        if raw.is_some_and(|r| f.encode_to_vec() != r) {
            raw = None;
        }
        out.insert(f.name().to_string(), (f, raw));
    }
    for (name, (f, _)) in &out {
        for d in &f.dependency {
            if !out.contains_key(d) {
                return Err(ExtractError::MissingImport {
                    file: name.clone(),
                    import: d.clone(),
                });
            }
        }
    }
    // Dependency order, ties by name (Kahn).
    let mut pending: BTreeMap<&str, BTreeSet<&str>> = out
        .iter()
        .map(|(n, (f, _))| {
            (
                n.as_str(),
                f.dependency.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    let mut order: Vec<String> = Vec::new();
    while !pending.is_empty() {
        let Some(next) = pending
            .iter()
            .find(|(_, deps)| deps.is_empty())
            .map(|(n, _)| n.to_string())
        else {
            return Err(ExtractError::Cycle(
                pending.keys().copied().collect::<Vec<_>>().join(", "),
            ));
        };
        pending.remove(next.as_str());
        for deps in pending.values_mut() {
            deps.remove(next.as_str());
        }
        order.push(next);
    }
    let mut set = Vec::new();
    for n in &order {
        let Some((f, raw)) = out.get(n) else { continue };
        let body = match raw {
            Some(r) => r.to_vec(),
            None => f.encode_to_vec(),
        };
        // FileDescriptorSet.file = 1, length-delimited.
        set.push(0x0a);
        set.extend(varint_bytes(body.len() as u64));
        set.extend(body);
    }
    let decoded =
        FileDescriptorSet::decode(&set[..]).map_err(|e| ExtractError::Pool(e.to_string()))?;
    if let Err(e) = decode_pool(&set[..]) {
        // Name the first file that does not load.
        let mut pool = DescriptorPool::new();
        for f in decoded.file {
            let name = f.name().to_string();
            match add_file(&mut pool, f) {
                Ok(()) => {}
                Err(PoolError::Syntax(s)) => return Err(ExtractError::Syntax(s)),
                Err(e) => return Err(ExtractError::Pool(format!("{name}: {e}"))),
            }
        }
        return Err(match e {
            PoolError::Syntax(s) => ExtractError::Syntax(s),
            e => ExtractError::Pool(e.to_string()),
        });
    }
    Ok((set, order, dropped.into_iter().collect()))
}

/// Reorders and checks a FileDescriptorSet as `extract` writes one (used by
/// `bundle` and tests).
pub fn assemble_set(files: Vec<FileDescriptorProto>) -> Result<Vec<u8>, ExtractError> {
    assemble(files.into_iter().map(|f| (f, None)).collect()).map(|(s, _, _)| s)
}

/// A mismatch found by [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub name: String,
    pub offset: u64,
    pub detail: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} at offset {}: {}",
            self.name, self.offset, self.detail
        )
    }
}

/// Reads an extraction manifest.
pub fn read_manifest(path: &Path) -> Result<ExtractManifest, ExtractError> {
    use crate::util::bounded::{read_regular, InputKind};
    let text = read_regular(path, InputKind::Record).map_err(|e| ExtractError::Io {
        path: path.to_path_buf(),
        source: e.into_io(),
    })?;
    let m: ExtractManifest = serde_json::from_slice(&text).map_err(|e| ExtractError::Manifest {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    if m.format != EXTRACT_FORMAT {
        return Err(ExtractError::Manifest {
            path: path.to_path_buf(),
            detail: format!("format {:?}, expected {EXTRACT_FORMAT:?}", m.format),
        });
    }
    Ok(m)
}

/// Rechecks one listed record at its offset: in range, the same SHA-256, the
/// same name (when the listing names it).
fn check_record(
    b: &[u8],
    name: Option<&str>,
    offset: u64,
    length: u64,
    sha256: &str,
) -> Option<Mismatch> {
    let label = name.unwrap_or("<unnamed record>").to_string();
    let range = usize::try_from(offset)
        .ok()
        .zip(usize::try_from(length).ok())
        .and_then(|(o, l)| Some(o..o.checked_add(l)?))
        .filter(|range| range.end <= b.len());
    let Some(range) = range else {
        return Some(Mismatch {
            name: label,
            offset,
            detail: format!(
                "length {length} runs past the end of the binary ({} bytes)",
                b.len()
            ),
        });
    };
    let got = crate::util::hex(&Sha256::digest(&b[range.clone()]));
    if !got.eq_ignore_ascii_case(sha256) {
        return Some(Mismatch {
            name: label,
            offset,
            detail: format!("SHA-256 of {length} bytes is {got}, manifest says {sha256}"),
        });
    }
    let expected = name?;
    let found = FileDescriptorProto::decode(&b[range])
        .ok()
        .and_then(|f| f.name);
    (found.as_deref() != Some(expected)).then(|| Mismatch {
        name: label,
        offset,
        detail: format!("the record there is named {found:?}"),
    })
}

/// Rechecks every record of `m` against `b`: the binary's SHA-256, then each
/// extracted and each skipped record's bytes at its offset (in range, the
/// same SHA-256, the same name).
pub fn verify(m: &ExtractManifest, b: &[u8]) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let sha = crate::util::hex(&Sha256::digest(b));
    if sha != m.binary_sha256 {
        out.push(Mismatch {
            name: "<binary>".into(),
            offset: 0,
            detail: format!("SHA-256 {sha}, manifest says {}", m.binary_sha256),
        });
    }
    for r in &m.records {
        out.extend(check_record(
            b,
            Some(&r.name),
            r.offset,
            r.length,
            &r.sha256,
        ));
    }
    for r in &m.skipped {
        out.extend(check_record(
            b,
            r.name.as_deref(),
            r.offset,
            r.length,
            &r.sha256,
        ));
    }
    out
}
