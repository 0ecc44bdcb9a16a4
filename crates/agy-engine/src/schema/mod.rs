//! The descriptor set agy-audit decodes with: the modeled schema compiled from
//! `proto/` at build time, or a FileDescriptorSet (raw or gzip) a user extracted
//! from their own agy build and passed with `--schema`.
//!
//! Everything downstream resolves messages and fields by *name* from the loaded
//! pool ([`Names`]), never by hard-coded numbers, so a real descriptor set can
//! replace the modeled one.

pub mod bundle;
pub mod diff;
pub mod error;
pub mod extract;
mod names;
pub mod pin;

pub use error::{PoolError, SchemaError, UnsupportedSyntax};
pub use names::{ModernNames, Names, TrajectoryFields, FILE_EDIT_FIELDS, MODERN_DECLARATIONS};

use prost_reflect::{DescriptorPool, MessageDescriptor};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The modeled schema's serialized FileDescriptorSet (see `build.rs`).
pub const MODELED_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/modeled_schema.pb"));

/// google/protobuf/struct.proto alone, used to parse declared field-23 payloads
/// whatever set the user loads.
pub const STRUCT_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/struct_schema.pb"));

/// Largest descriptor set accepted (after gunzip).
pub const MAX_SET_BYTES: u64 = 64 << 20;

/// Where a loaded set came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaOrigin {
    /// The modeled schema embedded in this binary.
    Modeled,
    /// A FileDescriptorSet file given with `--schema`, not pinned (loaded
    /// for inspection only, see [`pin`]).
    File(PathBuf),
    /// A `--schema` file pinned by `--schema-sha256` or its manifest; `agy`
    /// names the release and binary it was extracted from, when known.
    Pinned {
        path: PathBuf,
        agy: Option<AgyBuild>,
    },
}

/// The agy build a pinned set came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgyBuild {
    /// The release, e.g. `1.4.7`.
    pub release: String,
    /// The first 12 hex digits of the binary's SHA-256.
    pub binary_sha12: String,
}

/// The guard every pool build runs first: a file's `syntax` must be absent,
/// `proto2` or `proto3`.
///
/// prost-reflect 0.16 (0.16.5 checked) panics on any other value (exit 101,
/// index out of bounds in `Label::new`): `NameVisitor::visit_file` builds the
/// label of its `UnknownSyntax` error from the file's entry in the pool
/// before that entry is pushed, whatever the pool already holds. So no
/// `DescriptorPool::decode` or `add_file_descriptor_proto(s)` may see such a
/// file; [`decode_pool`] and [`add_file`] run this check first, and
/// extraction lists such records as skipped. The guard can go once the
/// library reports an unknown syntax as an error.
pub fn check_syntax(file: &str, syntax: Option<&str>) -> Result<(), UnsupportedSyntax> {
    match syntax {
        None | Some("proto2") | Some("proto3") => Ok(()),
        Some(other) => Err(UnsupportedSyntax {
            file: file.to_string(),
            syntax: other.to_string(),
        }),
    }
}

/// [`check_syntax`] on a decoded FileDescriptorProto.
pub fn check_file_syntax(f: &prost_types::FileDescriptorProto) -> Result<(), UnsupportedSyntax> {
    check_syntax(f.name(), f.syntax.as_deref())
}

/// What the guard reads of a serialized FileDescriptorProto: its name and
/// syntax; every other field is skipped unread.
#[derive(Clone, PartialEq, prost::Message)]
struct FileHead {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "12")]
    syntax: Option<String>,
}

/// A FileDescriptorSet read as [`FileHead`]s.
#[derive(Clone, PartialEq, prost::Message)]
struct SetHeads {
    #[prost(message, repeated, tag = "1")]
    file: Vec<FileHead>,
}

/// [`check_syntax`] on every file of a serialized FileDescriptorSet.
pub fn check_set_syntax(set: &[u8]) -> Result<(), PoolError> {
    use prost::Message as _;
    for f in SetHeads::decode(set)?.file {
        check_syntax(f.name.as_deref().unwrap_or(""), f.syntax.as_deref())?;
    }
    Ok(())
}

/// `DescriptorPool::decode`, behind [`check_set_syntax`]. Every pool built
/// from a serialized set goes through here.
pub fn decode_pool(set: &[u8]) -> Result<DescriptorPool, PoolError> {
    check_set_syntax(set)?;
    Ok(DescriptorPool::decode(set)?)
}

/// `DescriptorPool::add_file_descriptor_proto`, behind [`check_file_syntax`].
pub fn add_file(
    pool: &mut DescriptorPool,
    f: prost_types::FileDescriptorProto,
) -> Result<(), PoolError> {
    check_file_syntax(&f)?;
    pool.add_file_descriptor_proto(f)?;
    Ok(())
}

/// A loaded descriptor pool with its identity.
#[derive(Debug, Clone)]
pub struct Schema {
    pub pool: DescriptorPool,
    /// SHA-256 of the serialized set as loaded (after gunzip).
    pub sha256: [u8; 32],
    pub origin: SchemaOrigin,
    /// Resolved names the reader and projection use.
    pub names: Names,
    /// The pool holding google.protobuf.Struct for field-23 payloads.
    pub struct_pool: DescriptorPool,
}

impl Schema {
    /// The modeled schema compiled from `proto/`.
    pub fn modeled() -> Result<Schema, SchemaError> {
        Self::from_bytes(MODELED_SET, SchemaOrigin::Modeled)
    }

    /// Loads `--schema FILE` if given, else the modeled schema.
    pub fn load(path: Option<&Path>) -> Result<Schema, SchemaError> {
        match path {
            None => Self::modeled(),
            Some(p) => Self::from_file(p),
        }
    }

    /// Loads a FileDescriptorSet file, raw or gzip-compressed.
    pub fn from_file(path: &Path) -> Result<Schema, SchemaError> {
        let bytes = read_set_file(path)?;
        Self::from_bytes(&bytes, SchemaOrigin::File(path.to_path_buf()))
    }

    pub fn from_bytes(bytes: &[u8], origin: SchemaOrigin) -> Result<Schema, SchemaError> {
        let label = origin.label();
        let pool = decode_pool(bytes).map_err(|e| e.at(&label))?;
        let struct_pool = decode_pool(STRUCT_SET).map_err(|e| e.at("<embedded struct.proto>"))?;
        let names = Names::resolve(&pool, &label)?;
        let sha256 = Sha256::digest(bytes).into();
        Ok(Schema {
            pool,
            sha256,
            origin,
            names,
            struct_pool,
        })
    }

    /// Lowercase hex of the set's SHA-256.
    pub fn sha256_hex(&self) -> String {
        crate::util::hex(&self.sha256)
    }

    /// A message by full name, or a `Missing` error naming it.
    pub fn message(&self, full_name: &str) -> Result<MessageDescriptor, SchemaError> {
        self.pool
            .get_message_by_name(full_name)
            .ok_or_else(|| SchemaError::Missing {
                origin: self.origin.label(),
                kind: "message",
                name: full_name.to_string(),
            })
    }
}

/// Reads a FileDescriptorSet file's bytes, gunzipped when gzip-compressed,
/// capped at [`MAX_SET_BYTES`]. No pool is built.
pub fn read_set_file(path: &Path) -> Result<Vec<u8>, SchemaError> {
    let io = |source| SchemaError::Io {
        path: path.to_path_buf(),
        source,
    };
    // a regular file only (a FIFO is refused without blocking); the cap is
    // checked below, after a gunzip too
    let file =
        crate::util::bounded::open_regular(path, crate::util::bounded::InputKind::DescriptorSet)
            .map_err(|e| io(e.into_io()))?;
    let mut raw = Vec::new();
    file.take(MAX_SET_BYTES + 1)
        .read_to_end(&mut raw)
        .map_err(io)?;
    set_of_file_bytes(path, raw)
}

/// [`read_set_file`] once the file's bytes are read: the size cap, and the
/// gunzip when gzip-compressed (also the fuzz targets' way in: `crate::fuzzing`).
pub(crate) fn set_of_file_bytes(path: &Path, raw: Vec<u8>) -> Result<Vec<u8>, SchemaError> {
    if raw.len() as u64 > MAX_SET_BYTES {
        return Err(SchemaError::TooLarge {
            limit: MAX_SET_BYTES,
            path: path.to_path_buf(),
        });
    }
    if !raw.starts_with(&[0x1f, 0x8b]) {
        return Ok(raw);
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&raw[..])
        .take(MAX_SET_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(|e| SchemaError::Invalid {
            path: path.to_path_buf(),
            detail: format!("gzip: {e}"),
        })?;
    if out.len() as u64 > MAX_SET_BYTES {
        return Err(SchemaError::TooLarge {
            limit: MAX_SET_BYTES,
            path: path.to_path_buf(),
        });
    }
    Ok(out)
}

impl SchemaOrigin {
    /// A short label for messages and profile identifiers.
    pub fn label(&self) -> String {
        match self {
            SchemaOrigin::Modeled => "<modeled schema>".to_string(),
            SchemaOrigin::File(p) | SchemaOrigin::Pinned { path: p, .. } => p.display().to_string(),
        }
    }

    /// The schema part of the profile identifier: `modeled`, `agy-<release>-<sha12>`
    /// for a pinned extraction or bundle, `pinned` for another pinned set,
    /// `unpinned` for an inspection-only set.
    pub fn profile_label(&self) -> String {
        match self {
            SchemaOrigin::Modeled => "modeled".into(),
            SchemaOrigin::Pinned { agy: Some(a), .. } => {
                format!("agy-{}-{}", a.release, a.binary_sha12)
            }
            SchemaOrigin::Pinned { agy: None, .. } => "pinned".into(),
            SchemaOrigin::File(_) => "unpinned".into(),
        }
    }
}

/// The elements of a repeated message field, borrowed (no copies: the
/// trajectory's steps are walked this way). Empty when `m` has no such field.
pub fn message_refs<'a>(
    m: &'a prost_reflect::DynamicMessage,
    name: &str,
) -> Vec<&'a prost_reflect::DynamicMessage> {
    use prost_reflect::ReflectMessage;
    let Some(fd) = m.descriptor().get_field_by_name(name) else {
        return Vec::new();
    };
    if !m.has_field(&fd) {
        return Vec::new();
    }
    match m.get_field(&fd) {
        std::borrow::Cow::Borrowed(prost_reflect::Value::List(items)) => {
            items.iter().filter_map(|v| v.as_message()).collect()
        }
        _ => Vec::new(),
    }
}

/// The proto3 JSON conventions of agy's daemon (public-format-facts §4.3):
/// lowerCamelCase names, enum names, 64-bit integers as strings, RFC 3339
/// timestamps, default-valued fields omitted. Everything that writes or
/// compares daemon-style JSON uses these options.
pub fn daemon_json_options() -> prost_reflect::SerializeOptions {
    prost_reflect::SerializeOptions::new()
        .stringify_64_bit_integers(true)
        .use_enum_numbers(false)
        .use_proto_field_name(false)
        .skip_default_fields(true)
}

/// Serializes a message to a `serde_json::Value` with [`daemon_json_options`].
pub fn to_daemon_json(msg: &prost_reflect::DynamicMessage) -> serde_json::Value {
    msg.serialize_with_options(serde_json::value::Serializer, &daemon_json_options())
        .unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fuzzer's record (`a.proto`, message `M`, `syntax = "editions"`)
    /// wrapped as a set.
    const EDITIONS_SET: &[u8] = b"\x0a\x18\x0a\x07a.proto\x22\x03\x0a\x01M\x62\x08editions";

    #[test]
    fn the_guard_refuses_an_unknown_syntax_before_the_library_sees_it() {
        let e = decode_pool(EDITIONS_SET).unwrap_err();
        assert!(
            matches!(&e, PoolError::Syntax(s) if s.file == "a.proto" && s.syntax == "editions"),
            "{e:?}"
        );
        let e = e.at("x.set").to_string();
        assert!(
            e.starts_with("x.set: descriptor file \"a.proto\" declares syntax \"editions\""),
            "{e}"
        );
        let mut pool = DescriptorPool::new();
        let f = <prost_types::FileDescriptorSet as prost::Message>::decode(EDITIONS_SET)
            .unwrap()
            .file
            .remove(0);
        assert!(matches!(add_file(&mut pool, f), Err(PoolError::Syntax(_))));
        assert!(decode_pool(MODELED_SET).is_ok());
        assert!(decode_pool(b"\x0a\x02\x0a").is_err(), "a cut-short set");
    }

    /// When this fails, prost-reflect reports an unknown syntax as an error
    /// instead of panicking, and [`check_syntax`] can go.
    #[test]
    fn prost_reflect_still_panics_on_an_unknown_syntax() {
        let r = std::panic::catch_unwind(|| DescriptorPool::decode(EDITIONS_SET).is_err());
        assert!(
            r.is_err(),
            "prost-reflect no longer panics on syntax \"editions\": the guard in schema::check_syntax can go"
        );
    }
}
