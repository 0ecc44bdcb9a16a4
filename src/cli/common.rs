//! Arguments shared by every decoding command.

use crate::schema::Schema;
use crate::source::legacy::LegacyKey;
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Clone, Args)]
pub struct DecodeArgs {
    /// Decode with this FileDescriptorSet (raw or gzip), e.g. one extracted from
    /// your own agy build, instead of the embedded modeled schema.
    #[arg(long, env = "AGY_AUDIT_SCHEMA", value_name = "FILE")]
    pub schema: Option<PathBuf>,
    /// Key for legacy .pb sources: 32 raw bytes or 64 hex digits. Default: the
    /// fixed format key agy distributes. Another key only opens sources for
    /// offline inspection (e.g. export-offline --allow-unknown): unknown keys
    /// remain unsupported, so every source read under one is refused as
    /// unknown (legacy-unsupported-key) and never verified.
    #[arg(long, env = "AGY_AUDIT_LEGACY_KEY_FILE", value_name = "FILE")]
    pub legacy_key_file: Option<PathBuf>,
}

impl DecodeArgs {
    pub fn load(&self) -> anyhow::Result<(Schema, LegacyKey)> {
        let schema = Schema::load(self.schema.as_deref()).context("loading the descriptor set")?;
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
