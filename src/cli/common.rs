//! Arguments shared by every decoding command.

use crate::schema::pin::{self, PinError, Use};
use crate::schema::Schema;
use crate::source::legacy::LegacyKey;
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Clone, Args)]
pub struct DecodeArgs {
    /// Decode with this FileDescriptorSet (raw or gzip), e.g. one extracted from
    /// your own agy build, instead of the embedded modeled schema.
    /// Commands that verify (audit-sweep, sync, audit-qualify) require it
    /// pinned: by --schema-sha256, or by the manifest `schema extract` or
    /// `schema bundle` wrote beside it (FILE.manifest.json). Inspection
    /// (export-offline, bench) loads an unpinned set, labelled `unpinned`.
    #[arg(long, env = "AGY_AUDIT_SCHEMA", value_name = "FILE")]
    pub schema: Option<PathBuf>,
    /// Pin --schema to this SHA-256 (64 hex digits, of the set after gunzip,
    /// as `schema info` prints it); a set with another digest is refused.
    #[arg(long, env = "AGY_AUDIT_SCHEMA_SHA256", value_name = "HEX")]
    pub schema_sha256: Option<String>,
    /// Key for legacy .pb sources: 32 raw bytes or 64 hex digits. Default: the
    /// fixed format key agy distributes. Another key only opens sources for
    /// offline inspection (e.g. export-offline --allow-unknown): unknown keys
    /// remain unsupported, so every source read under one is refused as
    /// unknown (legacy-unsupported-key) and never verified.
    #[arg(long, env = "AGY_AUDIT_LEGACY_KEY_FILE", value_name = "FILE")]
    pub legacy_key_file: Option<PathBuf>,
}

impl DecodeArgs {
    /// Loads for a command that verifies: a `--schema` must be pinned.
    pub fn load(&self) -> anyhow::Result<(Schema, LegacyKey)> {
        self.load_for(Use::Verify)
    }

    /// Loads for offline inspection: an unpinned `--schema` loads, labelled
    /// `unpinned` in the profile, with a note on standard error.
    pub fn load_inspect(&self) -> anyhow::Result<(Schema, LegacyKey)> {
        self.load_for(Use::Inspect)
    }

    fn load_for(&self, use_: Use) -> anyhow::Result<(Schema, LegacyKey)> {
        let schema = match pin::load(self.schema.as_deref(), self.schema_sha256.as_deref(), use_) {
            Ok(s) => s,
            Err(e @ (PinError::Unpinned { .. } | PinError::BadHex(_))) => {
                return Err(anyhow::Error::new(crate::Error::Usage(e.to_string())))
            }
            Err(e) => return Err(anyhow::Error::new(e).context("loading the descriptor set")),
        };
        if let crate::schema::SchemaOrigin::File(p) = &schema.origin {
            eprintln!(
                "agy-audit: note: {} is not pinned (--schema-sha256 or {}): output is unverified inspection, profile label `unpinned`",
                p.display(),
                pin::manifest_path(p).display()
            );
        }
        let key = match &self.legacy_key_file {
            Some(p) => LegacyKey::from_file(p).context("loading the legacy key")?,
            None => LegacyKey::default(),
        };
        Ok((schema, key))
    }
}

/// `--root`: the store root.
#[derive(Debug, Clone, Args)]
pub struct RootArg {
    /// Store root (default: $ANTIGRAVITY_CLI_ROOT, else ~/.gemini/antigravity-cli).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

impl RootArg {
    pub fn get(&self) -> PathBuf {
        self.root
            .clone()
            .unwrap_or_else(crate::discover::default_root)
    }
}

impl DecodeArgs {
    /// The files these flags make a command read (the descriptor set, its
    /// pin manifest, the legacy key): never an output of the command.
    pub fn inputs(&self) -> Vec<PathBuf> {
        let mut v = Vec::new();
        if let Some(s) = &self.schema {
            v.push(s.clone());
            v.push(pin::manifest_path(s));
        }
        v.extend(self.legacy_key_file.clone());
        v
    }
}
