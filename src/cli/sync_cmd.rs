//! `agy-audit sync`: verify one conversation against the daemon and write its
//! sidecar, or recheck a saved attestation offline.

use super::common::{DecodeArgs, RootsArg};
use super::daemon_args::DaemonArgs;
use crate::attest::cache::{classify, sidecar_path, Existing, NotASidecar};
use crate::attest::recheck::Drift;
use crate::pipeline::{audit_prepared, prepare, AuditContext};
use crate::rpc::DaemonClient;
use crate::sidecars::{recheck_saved, Publication, PublishError, Rechecked};
use crate::verdict::{exit, VerdictKind};
use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};

/// Verify one conversation (bracketed fetch of the full and ordinary RPC) and
/// write `<uuid>.trajectory.json` beside the source, or with --recheck
/// recheck its saved attestation offline.
#[derive(Debug, Args)]
pub struct SyncArgs {
    /// A .db/.pb path (an X.pb whose X.db exists means the .db: SQLite
    /// wins), or a conversation id, looked up in the --root roots in order,
    /// else in the default roots (~/.gemini/antigravity-cli, then the IDE's
    /// ~/.gemini/antigravity). The conversation's own root decides the
    /// daemon: a CLI root's from its cli.log, an IDE root's, and its CSRF
    /// token, from the IDE's logs (language_server.log, main.log).
    pub source: String,
    #[command(flatten)]
    pub root: RootsArg,
    /// Sidecar path (default: <source dir>/<uuid>.trajectory.json).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Recheck the saved attestation offline instead of fetching: a changed
    /// source is incomplete, a changed profile unknown, a missing sidecar
    /// unknown (missing evidence).
    #[arg(long)]
    pub recheck: bool,
    /// Replace an existing file at the sidecar path that is not this
    /// conversation's sidecar. This reader's own (an attestation that reads
    /// back, naming this conversation) and another reader's trajectory
    /// sidecar (the daemon's trajectory with at most `agyReader` added) are
    /// always refreshed, their other `agyReader` members kept; `watch` never
    /// replaces anything else.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub daemon: DaemonArgs,
    #[command(flatten)]
    pub decode: DecodeArgs,
}

/// What sits at the sidecar path, by the one rule `sync`, `watch`, `doctor`
/// and `list` share ([`crate::attest::cache`]): this reader's own sidecar or
/// another reader's trajectory sidecar is refreshed, its other `agyReader`
/// members kept; anything else is refused unless `--force` (sync only:
/// `watch` never replaces it).
fn check_existing(out: &Path, existing: &Existing, force: bool) -> anyhow::Result<()> {
    match existing {
        Existing::Foreign(why) if !force => Err(not_replaced(out, why)),
        _ => Ok(()),
    }
}

/// The usage error of a sidecar path holding something else (exit 2).
fn not_replaced(out: &Path, why: &NotASidecar) -> anyhow::Error {
    anyhow::Error::new(super::errors::Usage::Text(format!(
        "{}: refusing to replace a file that is not this conversation's trajectory sidecar ({why}); pass --force to replace it",
        out.display()
    )))
}

pub fn run(a: SyncArgs) -> anyhow::Result<i32> {
    let (schema, key) = a.decode.load()?;
    let found = a.root.locate(&a.source, "sync")?;
    let path = found.path;
    let out = a.out.clone().unwrap_or_else(|| sidecar_path(&path));
    // a sidecar is read at most the response cap in force (plus its record)
    let cap = crate::attest::cache::sidecar_cap(a.daemon.max_response_bytes);
    if a.recheck {
        return recheck_cmd(&AuditContext::offline(&schema, &key), &path, &out, cap);
    }
    let Some(root) = found.root else {
        return Err(crate::Error::Root(crate::error::RootError::NoRoot).into());
    };
    let (endpoint, options) = a.daemon.for_root(&root.path, root.surface, None)?;
    let client = DaemonClient::new(&endpoint.url, options)?;
    let ctx = AuditContext {
        schema: &schema,
        key: &key,
        client: Some(&client),
        bracket_retries: a.daemon.bracket_retries,
    };
    let prepared = prepare(&ctx, &path)?;
    check_existing(
        &out,
        &classify(&out, &schema, &prepared.source.cascade_id(), cap),
        a.force,
    )?;
    let r = audit_prepared(&ctx, prepared);
    if let Some(e) = r.setup {
        // a refused token or the wrong listener: the command's error, said
        // as such (never the daemon's body)
        return Err(crate::Error::Daemon(e).into());
    }
    let s = &r.record;
    match &r.sidecar {
        Some(bytes) => {
            publish(&a, &path, &out, &schema, cap, s, bytes)?;
        }
        None => outln!(
            "{} {} ({})",
            s.verdict_str().to_uppercase(),
            s.file_id,
            s.reason_text().unwrap_or_default()
        ),
    }
    Ok(s.result.exit_code())
}

/// Publishes the fresh sidecar `bytes` of the session `s` at `out`
/// ([`crate::sidecars::publish`]) and says so.
fn publish(
    a: &SyncArgs,
    path: &Path,
    out: &Path,
    schema: &crate::schema::Schema,
    cap: u64,
    s: &crate::manifest::SessionRecord,
    bytes: &[u8],
) -> anyhow::Result<()> {
    let inputs = a.decode.inputs();
    let published = crate::sidecars::publish(&Publication {
        source: path,
        sidecar: out,
        bytes,
        schema,
        cascade: &s.cascade_id,
        cap,
        protected: &inputs,
        replace_foreign: a.force,
    });
    match published {
        Ok(_) => {}
        Err(PublishError::Foreign { path, why }) => return Err(not_replaced(&path, &why)),
        Err(PublishError::Write(e)) => return Err(e.into()),
    }
    outln!(
        "synced {} {}{} wrote {}",
        s.file_id,
        s.verdict_str(),
        s.reason_text()
            .map(|x| format!(" ({x})"))
            .unwrap_or_default(),
        out.display()
    );
    Ok(())
}

/// `sync --recheck`: the saved attestation at `out` rechecked offline
/// ([`crate::sidecars::recheck_saved`]), its status line printed.
fn recheck_cmd(ctx: &AuditContext, path: &Path, out: &Path, cap: u64) -> anyhow::Result<i32> {
    if let Err(e) = std::fs::symlink_metadata(out) {
        if e.kind() == std::io::ErrorKind::NotFound {
            outln!(
                "UNKNOWN {} (no sidecar at {}: missing evidence; run `agy-audit sync` first)",
                path.display(),
                out.display()
            );
            return Ok(exit::UNKNOWN);
        }
        return Err(e).with_context(|| format!("reading {}", out.display()));
    }
    let (status, code) = match recheck_saved(ctx, path, out, cap)? {
        Rechecked::NoAttestation => {
            outln!(
                "UNKNOWN {} (no attestation in {}: missing evidence)",
                path.display(),
                out.display()
            );
            return Ok(exit::UNKNOWN);
        }
        Rechecked::Foreign { why, cascade } => anyhow::bail!(
            "{}: not this conversation's trajectory sidecar ({why}; {} is {cascade})",
            out.display(),
            path.display()
        ),
        Rechecked::NotAttested(why) => {
            outln!(
                "UNKNOWN {} (no attestation of this conversation in {}: {why}; missing evidence)",
                path.display(),
                out.display()
            );
            return Ok(exit::UNKNOWN);
        }
        Rechecked::MissingSet { profile, missing } => {
            outln!(
                "UNKNOWN {} (attested under {}: {missing})",
                path.display(),
                crate::report::escape::terminal(&profile)
            );
            return Ok(exit::UNKNOWN);
        }
        Rechecked::Checked {
            saved,
            now_profile,
            drift,
        } => recheck_status(drift, &saved.completeness, &now_profile),
    };
    outln!("{status} {}", path.display());
    Ok(code)
}

/// The status a recheck says and its exit code.
fn recheck_status(
    checked: Result<(), Drift>,
    saved: &crate::attest::Completeness,
    now_profile: &str,
) -> (String, i32) {
    match checked {
        Err(Drift::NotStrict(d)) => (
            format!(
                "INCOMPLETE (the sidecar does not read strictly: {d}; its payload is not the attested one)"
            ),
            exit::INCOMPLETE,
        ),
        Err(Drift::OtherProfile) => (
            format!(
                "UNKNOWN (profile changed: attested {}, now {now_profile})",
                saved.profile
            ),
            exit::UNKNOWN,
        ),
        Err(Drift::SourceChanged) => (
            "INCOMPLETE (source changed since the attestation)".to_string(),
            exit::INCOMPLETE,
        ),
        Err(Drift::PayloadChanged) => (
            "INCOMPLETE (payload changed since the attestation)".to_string(),
            exit::INCOMPLETE,
        ),
        Err(Drift::NoLongerQualifies(r)) => {
            (format!("UNKNOWN (no longer qualifies: {r})"), exit::UNKNOWN)
        }
        Err(Drift::SourceOnlyChanged) => (
            "INCOMPLETE (source-only record changed since the attestation)".to_string(),
            exit::INCOMPLETE,
        ),
        Err(Drift::KindChanged(kind)) => (
            format!(
                "INCOMPLETE (verdict kind changed: attested {}, the source now yields {})",
                saved.verdict.as_str(),
                kind.as_str()
            ),
            exit::INCOMPLETE,
        ),
        Ok(()) if saved.verdict == VerdictKind::VerifiedSourceOnly => (
            format!(
                "VERIFIED WITH SOURCE-ONLY FIELDS ({})",
                saved.reason.clone().unwrap_or_default()
            ),
            exit::OK,
        ),
        Ok(()) if saved.verdict == VerdictKind::Verified => ("VERIFIED".to_string(), exit::OK),
        Ok(()) => (
            format!(
                "{} (attested {})",
                saved.verdict.as_str().to_uppercase(),
                saved.reason.clone().unwrap_or_default()
            ),
            exit::UNKNOWN,
        ),
    }
}
