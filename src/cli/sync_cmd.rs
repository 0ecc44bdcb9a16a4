//! `agy-audit sync`: verify one conversation against the daemon and write its
//! sidecar, or recheck a saved attestation offline.

use super::common::{DecodeArgs, RootArg};
use super::daemon_args::DaemonArgs;
use crate::attest::completeness_of;
use crate::pipeline::{audit_prepared, prepare, AuditContext};
use crate::rpc::DaemonClient;
use crate::util::atomic::{write_file, WriteOptions};
use crate::verdict::{exit, VerdictKind};
use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};

/// Verify one conversation (bracketed fetch of the full and ordinary RPC) and
/// write `<uuid>.trajectory.json` beside the source, or with --recheck
/// recheck its saved attestation offline.
#[derive(Debug, Args)]
pub struct SyncArgs {
    /// A .db/.pb path, or a conversation id under --root.
    pub source: String,
    #[command(flatten)]
    pub root: RootArg,
    /// Sidecar path (default: <source dir>/<uuid>.trajectory.json).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Recheck the saved attestation offline instead of fetching: a changed
    /// source is incomplete, a changed profile unknown.
    #[arg(long)]
    pub recheck: bool,
    #[command(flatten)]
    pub daemon: DaemonArgs,
    #[command(flatten)]
    pub decode: DecodeArgs,
}

fn sidecar_path(source: &Path) -> PathBuf {
    let stem = source
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    source.with_file_name(format!("{stem}.trajectory.json"))
}

pub fn run(a: SyncArgs) -> anyhow::Result<i32> {
    let (schema, key) = a.decode.load()?;
    let root = a.root.get();
    let path = crate::discover::resolve(&a.source, &root)?;
    let out = a.out.clone().unwrap_or_else(|| sidecar_path(&path));
    if a.recheck {
        let doc: serde_json::Value = serde_json::from_slice(
            &std::fs::read(&out).with_context(|| format!("reading {}", out.display()))?,
        )
        .with_context(|| format!("{}: not JSON", out.display()))?;
        let Some(saved) = completeness_of(&doc) else {
            outln!(
                "UNKNOWN {} (no attestation in {}: missing evidence)",
                path.display(),
                out.display()
            );
            return Ok(exit::UNKNOWN);
        };
        let ctx = AuditContext {
            schema: &schema,
            key: &key,
            client: None,
            bracket_retries: 0,
        };
        let now = prepare(&ctx, &path)?;
        let payload = crate::attest::payload_digest(&doc);
        let (status, code) = if now.source.profile != saved.profile {
            (
                format!(
                    "UNKNOWN (profile changed: attested {}, now {})",
                    saved.profile, now.source.profile
                ),
                exit::UNKNOWN,
            )
        } else if now.source.source_digest != saved.source_digest {
            (
                "INCOMPLETE (source changed since the attestation)".to_string(),
                exit::INCOMPLETE,
            )
        } else if saved.payload_digest.as_deref() != Some(payload.as_str()) {
            (
                "INCOMPLETE (payload changed since the attestation)".to_string(),
                exit::INCOMPLETE,
            )
        } else if saved.verdict == VerdictKind::VerifiedSourceOnly {
            (
                format!(
                    "VERIFIED WITH SOURCE-ONLY FIELDS ({})",
                    saved.reason.unwrap_or_default()
                ),
                exit::OK,
            )
        } else if saved.verdict == VerdictKind::Verified {
            ("VERIFIED".to_string(), exit::OK)
        } else {
            (
                format!(
                    "{} (attested {})",
                    saved.verdict.as_str().to_uppercase(),
                    saved.reason.unwrap_or_default()
                ),
                exit::UNKNOWN,
            )
        };
        outln!("{status} {}", path.display());
        return Ok(code);
    }
    let endpoint = a.daemon.endpoint(&root)?;
    let client = DaemonClient::new(&endpoint, a.daemon.client_options(None))?;
    let ctx = AuditContext {
        schema: &schema,
        key: &key,
        client: Some(&client),
        bracket_retries: a.daemon.bracket_retries,
    };
    let prepared = prepare(&ctx, &path)?;
    let r = audit_prepared(&ctx, prepared);
    let verdict = r.verdict.map(|v| v.as_str()).unwrap_or("error");
    match &r.sidecar {
        Some(bytes) => {
            let mut protected = vec![path.clone()];
            protected.extend(crate::source::sqlite::companions(&path));
            write_file(
                &out,
                bytes,
                &WriteOptions {
                    force: true,
                    mode: Some(0o600),
                    protected,
                },
            )?;
            outln!(
                "synced {} {verdict}{} wrote {}",
                r.file_id,
                r.reason
                    .as_deref()
                    .map(|x| format!(" ({x})"))
                    .unwrap_or_default(),
                out.display()
            );
        }
        None => outln!(
            "{} {} ({})",
            verdict.to_uppercase(),
            r.file_id,
            r.reason.clone().unwrap_or_default()
        ),
    }
    Ok(match r.verdict {
        Some(VerdictKind::Verified) | Some(VerdictKind::VerifiedSourceOnly) => exit::OK,
        Some(VerdictKind::Incomplete) => exit::INCOMPLETE,
        Some(VerdictKind::Unknown) => exit::UNKNOWN,
        None => exit::ERROR,
    })
}
