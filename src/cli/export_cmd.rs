//! `agy-audit export-offline`: export one source without a daemon.

use super::common::{DecodeArgs, RootsArg};
use crate::export::{offline_export, render_markdown};
use crate::source::{sqlite::companions, ReadOptions};
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
    /// A .db/.pb path (an X.pb whose X.db exists means the .db: SQLite
    /// wins), or a conversation id, looked up in the --root roots in order,
    /// else in the default roots (the CLI's, then the IDE's).
    pub source: String,
    #[command(flatten)]
    pub root: RootsArg,
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

/// Says how many frames of the source's `-wal` SQLite ignores (past the
/// last commit: an unfinished transaction, a torn write, stale frames), so a
/// log cut short is never a silent gap. A log the checksums prove damaged
/// was already refused by the reader.
fn report_wal_tail(db: &std::path::Path) {
    let [wal, _, _] = companions(db);
    if crate::source::Format::of(db) != Some(crate::source::Format::Sqlite) {
        return;
    }
    let (Ok(main), Ok(log)) = (std::fs::read(db), std::fs::read(&wal)) else {
        return;
    };
    let Some(t) = crate::source::wal::tail(&main, &log) else {
        return;
    };
    if t.ignored() == 0 && t.torn_bytes == 0 {
        return;
    }
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let mut parts = Vec::new();
    if t.uncommitted > 0 {
        parts.push(format!(
            "{} uncommitted frame{}",
            t.uncommitted,
            plural(t.uncommitted)
        ));
    }
    if t.invalid > 0 {
        parts.push(format!(
            "{} frame{} past the first invalid one",
            t.invalid,
            plural(t.invalid)
        ));
    }
    if t.torn_bytes > 0 {
        parts.push(format!("a torn last frame ({} bytes)", t.torn_bytes));
    }
    crate::note!(
        "agy-audit export-offline: note: {}: {} frame{} ignored, as SQLite ignores them ({}); the export holds the last committed state",
        wal.display(),
        t.ignored(),
        plural(t.ignored()),
        parts.join(", ")
    );
}

pub fn run(a: ExportArgs) -> anyhow::Result<i32> {
    let (schema, key) = a.decode.load_inspect()?;
    let path = a.root.locate(&a.source, "export-offline")?.path;
    let opts = ReadOptions {
        schema: &schema,
        legacy_key: &key,
        collect_all: a.allow_unknown,
        fingerprint: false,
    };
    let crate::export::OfflineExport { source: src, json } =
        offline_export(&path, &opts).with_context(|| format!("reading {}", path.display()))?;
    report_wal_tail(&path);
    let code = if src.qualified() {
        exit::OK
    } else {
        exit::UNKNOWN
    };
    if let Some(r) = src.reason() {
        crate::note!("agy-audit: unknown: {}: {r} [{}]", path.display(), r.class);
        if !a.allow_unknown {
            crate::note!(
                "agy-audit: nothing exported (use --allow-unknown to export it marked incomplete)"
            );
            return Ok(code);
        }
    }
    let Some(json) = json else {
        crate::note!(
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
            protected.extend(a.decode.inputs());
            let wo = WriteOptions {
                force: a.force,
                mode: Some(0o600),
                protected,
            };
            write_file(out, &bytes, &wo)?;
            crate::note!("wrote {} ({} bytes)", out.display(), bytes.len());
        }
        None => {
            use std::io::Write;
            std::io::stdout().write_all(&bytes)?;
        }
    }
    Ok(code)
}
