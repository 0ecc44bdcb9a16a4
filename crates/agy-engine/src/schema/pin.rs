//! Pinning a `--schema FILE`: every field a loaded descriptor set declares
//! becomes "known", so a set may mint verified results only when the user
//! named its exact bytes.
//!
//! A set is pinned by `--schema-sha256 HEX`, or by the manifest `schema
//! extract` / `schema bundle` wrote beside it (`FILE.manifest.json`, its
//! `schemaSha256`). The digest is SHA-256 of the set as loaded (after gunzip;
//! what `schema info` prints). A pin that does not match is always refused.
//! An unpinned set is refused by the commands that verify (audit-sweep, sync,
//! audit-qualify: [`Use::Verify`]); inspection commands (export-offline,
//! bench, schema info: [`Use::Inspect`]) load it, and its profile label reads
//! `unpinned`. A pinned set whose manifest names the agy release and binary
//! gets the label `agy-<release>-<binary sha256 12 hex>`, else `pinned`.

use super::{AgyBuild, Schema, SchemaError, SchemaOrigin};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// What the loaded schema is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Minting or rechecking verified results: the set must be pinned.
    Verify,
    /// Offline inspection: an unpinned set loads, labelled `unpinned`.
    Inspect,
}

/// Why a set was not loaded.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error("{path}: the schema is not pinned, so it cannot verify anything (every field it declares would count as known); pin it with --schema-sha256 {actual} after checking that digest, or keep the manifest `schema extract`/`schema bundle` wrote beside it ({manifest})")]
    Unpinned {
        path: PathBuf,
        actual: String,
        manifest: PathBuf,
    },
    #[error("{path}: SHA-256 is {actual}, but {by} pins {expected}; refusing the schema")]
    Mismatch {
        path: PathBuf,
        by: String,
        expected: String,
        actual: String,
    },
    #[error("--schema-sha256: expected 64 hex digits, got {0:?}")]
    BadHex(String),
    #[error("{path}: unreadable pin manifest: {detail}")]
    Manifest { path: PathBuf, detail: String },
}

/// The fields of an extract or bundle manifest that pin a set.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PinManifest {
    pub schema_sha256: String,
    #[serde(default)]
    pub release: Option<String>,
    #[serde(default)]
    pub binary_sha256: Option<String>,
}

/// The manifest path beside a set: `FILE.manifest.json`.
pub fn manifest_path(set: &Path) -> PathBuf {
    let mut s = set.as_os_str().to_os_string();
    s.push(".manifest.json");
    PathBuf::from(s)
}

/// A release string fit for a profile identifier (`1.4.7`, `1.5.0-rc1`).
pub fn valid_release(r: &str) -> bool {
    !r.is_empty()
        && r.len() <= 32
        && r.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'.' || c == b'-')
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|c| c.is_ascii_hexdigit())
}

/// Reads the pin manifest beside `set`, if there is one.
pub fn read_pin_manifest(set: &Path) -> Result<Option<(PathBuf, PinManifest)>, PinError> {
    let path = manifest_path(set);
    use crate::util::bounded::{read_if_present, InputKind};
    let text = match read_if_present(&path, InputKind::Record) {
        Ok(Some(t)) => t,
        Ok(None) => return Ok(None),
        Err(e) => {
            return Err(PinError::Manifest {
                path,
                detail: crate::util::io_text(&e.into_io()),
            })
        }
    };
    let m: PinManifest = serde_json::from_slice(&text).map_err(|e| PinError::Manifest {
        path: path.clone(),
        detail: e.to_string(),
    })?;
    if !is_hex64(&m.schema_sha256) {
        return Err(PinError::Manifest {
            path,
            detail: "schemaSha256 is not 64 hex digits".into(),
        });
    }
    Ok(Some((path, m)))
}

/// Loads `--schema` (or the modeled schema) under its pin.
pub fn load(path: Option<&Path>, pin: Option<&str>, use_: Use) -> Result<Schema, PinError> {
    let pin = match pin {
        Some(h) if is_hex64(h.trim()) => Some(h.trim().to_ascii_lowercase()),
        Some(h) => return Err(PinError::BadHex(h.to_string())),
        None => None,
    };
    let Some(path) = path else {
        let schema = Schema::modeled()?;
        if let Some(p) = pin {
            if p != schema.sha256_hex() {
                return Err(PinError::Mismatch {
                    path: PathBuf::from("<modeled schema>"),
                    by: "--schema-sha256".into(),
                    expected: p,
                    actual: schema.sha256_hex(),
                });
            }
        }
        return Ok(schema);
    };
    let mut schema = Schema::from_file(path)?;
    let actual = schema.sha256_hex();
    let mut pinned = false;
    if let Some(p) = pin {
        if p != actual {
            return Err(PinError::Mismatch {
                path: path.to_path_buf(),
                by: "--schema-sha256".into(),
                expected: p,
                actual,
            });
        }
        pinned = true;
    }
    let mut agy = None;
    if let Some((mpath, m)) = read_pin_manifest(path)? {
        let expected = m.schema_sha256.to_ascii_lowercase();
        if expected != actual {
            return Err(PinError::Mismatch {
                path: path.to_path_buf(),
                by: mpath.display().to_string(),
                expected,
                actual,
            });
        }
        pinned = true;
        if let (Some(r), Some(b)) = (&m.release, &m.binary_sha256) {
            if valid_release(r) && is_hex64(b) {
                agy = Some(AgyBuild {
                    release: r.clone(),
                    binary_sha12: b[..12].to_ascii_lowercase(),
                });
            }
        }
    }
    if pinned {
        schema.origin = SchemaOrigin::Pinned {
            path: path.to_path_buf(),
            agy,
        };
        return Ok(schema);
    }
    match use_ {
        Use::Inspect => Ok(schema),
        Use::Verify => Err(PinError::Unpinned {
            path: path.to_path_buf(),
            actual,
            manifest: manifest_path(path),
        }),
    }
}
