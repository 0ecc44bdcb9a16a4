//! `agy-audit export-offline`: export one source without a daemon.

use super::common::{DecodeArgs, RootArg};
use crate::export::{export_json, render_markdown};
use crate::source::{read_source, sqlite::companions, ReadOptions};
use crate::util::atomic::{write_file, WriteOptions};
use crate::verdict::exit;
use anyhow::Context;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    Json,
    Md,
}

/// Export one conversation from its stored source alone (no daemon, no attestation).
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// A .db/.pb path, or a conversation id under --root.
    pub source: String,
    #[command(flatten)]
    pub root: RootArg,
    /// Output format: daemon-style proto3 JSON, or a Markdown transcript.
    #[arg(long, value_enum, default_value = "json")]
    pub format: ExportFormat,
    /// Output file (default: standard output). Written atomically; never the
    /// source or its -wal/-shm; never through a symlink.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace an existing output file.
    #[arg(long)]
    pub force: bool,
    /// Export a source refused as unknown anyway, marked incomplete, listing
    /// every unknown field's path and raw bytes under agyReader.unknownFields.
    #[arg(long)]
    pub allow_unknown: bool,
    #[command(flatten)]
    pub decode: DecodeArgs,
}

/// The notice every Markdown export carries.
pub const OFFLINE_NOTICE: &str =
    "**Offline export, unverified.** Produced by agy-audit from the stored \
source alone: it has not been compared with agy's daemon and carries no completeness attestation.";

pub fn run(a: ExportArgs) -> anyhow::Result<i32> {
    let (schema, key) = a.decode.load()?;
    let root = a.root.get();
    let path = crate::discover::resolve(&a.source, &root)?;
    let opts = ReadOptions {
        schema: &schema,
        legacy_key: &key,
        collect_all: a.allow_unknown,
        fingerprint: false,
    };
    let mut src =
        read_source(&path, &opts).with_context(|| format!("reading {}", path.display()))?;
    // The qualified presentation, as the daemon's ordinary RPC would show it.
    let mut projection = None;
    if src.qualified() {
        if let Some(w) = &src.wire {
            match crate::project::project(&schema, w) {
                Ok(p) => projection = Some(p),
                Err(r) => src.refusals.push(r.to_refusal()),
            }
        }
    }
    // The export shows the tree (already decoded when every refusal is collected).
    src.materialize();
    let code = if src.qualified() {
        exit::OK
    } else {
        exit::UNKNOWN
    };
    if let Some(r) = src.reason() {
        eprintln!("agy-audit: unknown: {}: {r} [{}]", path.display(), r.class);
        if !a.allow_unknown {
            eprintln!(
                "agy-audit: nothing exported (use --allow-unknown to export it marked incomplete)"
            );
            return Ok(code);
        }
    }
    let ordinary = match (&projection, &src.trajectory) {
        (Some(p), Some(t)) => Some(p.ordinary(t)),
        _ => None,
    };
    let Some(json) = export_json(&src, ordinary.as_ref()) else {
        eprintln!(
            "agy-audit: {}: the source does not decode; nothing to export",
            path.display()
        );
        return Ok(code);
    };
    let bytes = match a.format {
        ExportFormat::Json => {
            let mut b = serde_json::to_vec_pretty(&json)?;
            b.push(b'\n');
            b
        }
        ExportFormat::Md => {
            let mut notice = OFFLINE_NOTICE.to_string();
            notice.push_str(&format!(
                "\n> Profile `{}`, source digest `{}`.",
                src.profile, src.source_digest
            ));
            if !src.qualified() {
                notice.push_str("\n> **Incomplete:** this source was refused as unknown; unknown fields are not shown.");
            }
            render_markdown(&json, &notice).into_bytes()
        }
    };
    match &a.out {
        Some(out) => {
            let mut protected = vec![path.clone()];
            protected.extend(companions(&path));
            let wo = WriteOptions {
                force: a.force,
                mode: Some(0o600),
                protected,
            };
            write_file(out, &bytes, &wo)?;
            eprintln!("wrote {} ({} bytes)", out.display(), bytes.len());
        }
        None => {
            use std::io::Write;
            std::io::stdout().write_all(&bytes)?;
        }
    }
    Ok(code)
}
