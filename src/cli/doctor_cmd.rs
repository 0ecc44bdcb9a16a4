//! `agy-audit doctor`: per root, what is actionable.
//!
//! Exit status (the reference's rules): 0 when nothing is actionable; 1 for
//! stale or missing sidecars, version skew, or an unreachable pinned
//! `$ANTIGRAVITY_DAEMON_URL`. A daemon that is simply not running is
//! informational. A conversation without an attestation whose source this
//! reader's rules refuse offline counts as unknown and `refused`, not as a
//! missing sidecar: no sync can verify it, so there is nothing to act on (a
//! source that does not decode, or that qualifies, is missing). Stricter than the reference's list, which does not name
//! the case: a reachable daemon that refuses the tool (401/403, or the wrong
//! listener: one read-only request, [`crate::rpc::DaemonClient::check_access`])
//! is actionable too, since nothing can be verified through it. Sidecars are judged by rechecking every attestation
//! against its native source (profile, source digest and payload digest,
//! never mtime): doctor always reads native content. What sits at a sidecar
//! path is read and classified by the one rule `sync`, `watch` and `list`
//! apply too ([`crate::attest::cache::classify`]: bytes read as strictly as
//! an answer, ownership by attestation); a file that is not this
//! conversation's sidecar counts as a missing one.

use super::common::DecodeArgs;
use crate::attest::cache::{classify, sidecar_path, Existing, Saved};
use crate::attest::recheck::{self, Drift};
use crate::pipeline::{prepare, AuditContext};
use crate::roots::{select, Root, Surface};
use crate::rpc::ide::{dial, endpoint_for};
use clap::Args;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Check every root: its surface, daemon, CSRF token (IDE), the installed
/// agy version, and whether every conversation's sidecar is fresh.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// A store root (repeatable). Without it: every default root that
    /// exists (the CLI's and the IDE's under HOME), or the one
    /// $ANTIGRAVITY_CLI_ROOT pins.
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Print {"healthy", "roots": [{"path", "surface", "daemon": {"url",
    /// "reachable"}, "csrf", "sidecars": {"fresh", "stale", "total"},
    /// "counts": {...}}], ...} instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub decode: DecodeArgs,
}

/// The agy release the profile names (its format key's origin).
fn profile_release() -> &'static str {
    let o = crate::profile::FORMAT_KEY_ORIGIN;
    let v = o.strip_prefix("agy-").unwrap_or(o);
    v.split('-').next().unwrap_or(v)
}

/// `agy --version` when agy is on PATH (bounded to 5 s), its first
/// version-looking word.
fn installed_agy() -> Option<String> {
    super::common::installed_agy_version()?
        .split_whitespace()
        .map(|w| w.trim_start_matches('v'))
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
        .map(str::to_string)
}

/// One conversation's sidecar as `doctor` and `list --check` judge it.
pub(super) struct Checked {
    /// The attestation, when what sits at the sidecar path is this reader
    /// family's own sidecar for this conversation.
    pub saved: Option<Box<Saved>>,
    /// Its attestation still holds (false without one).
    pub fresh: bool,
    /// Attested under the current profile (true without an attestation).
    pub same_profile: bool,
    /// The source's step count, when it was read.
    pub steps: Option<usize>,
    /// This reader's rules refuse the source offline.
    pub refused: bool,
}

/// Reads the source and classifies what sits at its sidecar path by the one
/// rule every command applies ([`crate::attest::cache::classify`]: its strict
/// read, ownership by attestation), then rechecks an attestation against
/// the source. Fresh: the sidecar reads strictly, same profile, same source
/// digest, the sidecar's payload still the attested one, and a verified
/// source that still qualifies, by the shared recheck
/// ([`crate::attest::recheck`]) read with this command's rule. `id` names
/// the conversation when the source cannot be read.
pub(super) fn check(ctx: &AuditContext, source: &std::path::Path, id: &str) -> Checked {
    let now = prepare(ctx, source).ok();
    let cascade = now
        .as_ref()
        .map_or_else(|| id.to_string(), |p| p.source.cascade_id());
    // doctor has no response cap of its own: the default one's sidecar cap
    let cap = crate::attest::cache::sidecar_cap(crate::rpc::DEFAULT_MAX_BODY);
    let saved = match classify(&sidecar_path(source), ctx.schema, &cascade, cap) {
        Existing::Attested(saved) => Some(saved),
        _ => None,
    };
    let mut c = Checked {
        fresh: false,
        same_profile: true,
        steps: now.as_ref().map(|p| p.source.steps),
        refused: now.as_ref().is_some_and(|p| p.refusal().is_some()),
        saved: None,
    };
    if let (Some(now), Some(saved)) = (&now, &saved) {
        let attested = &saved.completeness;
        c.fresh = match recheck::recheck(now, saved) {
            Ok(()) => true,
            // An attestation that is not a verified one needs no
            // qualifying source (a refused source stays refused).
            Err(Drift::NoLongerQualifies(_)) => !recheck::is_verified(attested.verdict),
            // A changed source-only record is incomplete, like a changed
            // payload (the specification's recheck), and a changed verdict
            // kind is no longer what was attested: both stale, as `watch`
            // and `sync --recheck` judge them; so are bytes that do not
            // read strictly (a repeated member).
            Err(
                Drift::NotStrict(_)
                | Drift::SourceOnlyChanged
                | Drift::KindChanged(_)
                | Drift::OtherProfile
                | Drift::SourceChanged
                | Drift::PayloadChanged,
            ) => false,
        };
        c.same_profile = now.source.profile == attested.profile;
    }
    c.saved = saved;
    c
}

/// One request that shows whether the daemon accepts this tool at all
/// ([`crate::rpc::DaemonClient::check_access`]): a missing or refused token
/// and the wrong listener are errors naming the root.
fn access_check(root: &Root, ep: &crate::rpc::ide::Endpoint) -> Result<(), crate::rpc::RpcError> {
    let options = crate::rpc::ClientOptions {
        timeout: Duration::from_secs(5),
        retries: 0,
        csrf_token: ep.csrf_token.clone(),
        daemon_of: Some(crate::rpc::ide::daemon_of(&root.path, root.surface)),
        ..crate::rpc::ClientOptions::default()
    };
    crate::rpc::DaemonClient::new(&ep.url, options)?.check_access()
}

/// `running (pid N, heartbeat T)` when a watcher's state file says so
/// ([`crate::watch::state`]), else `unknown`.
fn watch_status(root: &std::path::Path) -> String {
    match crate::watch::state::status(root) {
        crate::watch::state::Status::Running { pid, heartbeat } => {
            format!("running (pid {pid}, heartbeat {heartbeat})")
        }
        crate::watch::state::Status::Unknown => "unknown".into(),
    }
}

/// Whether finding the daemon failed only because agy left no log or no
/// port line (it is not running), not because a log could not be read.
fn log_absent(e: &crate::Error) -> bool {
    use crate::error::UsageError;
    match e {
        crate::Error::Usage(
            UsageError::NoCliLog { .. }
            | UsageError::NoPortLine { .. }
            | UsageError::IdeLogsUnknown { .. }
            | UsageError::IdePortLine { .. },
        ) => true,
        crate::Error::Usage(UsageError::IdeServerLog { source, .. }) => {
            source.kind() == std::io::ErrorKind::NotFound
        }
        _ => false,
    }
}

fn root_report(root: &Root, ctx: &AuditContext) -> anyhow::Result<(Value, bool)> {
    let mut actionable = false;
    let pinned = std::env::var(crate::rpc::DAEMON_URL_ENV)
        .ok()
        .filter(|u| !u.is_empty());
    let token = std::env::var(crate::rpc::CSRF_ENV).ok();
    let mut access: Option<String> = None;
    let (url, reachable, state, csrf) = match endpoint_for(
        &root.path,
        root.surface,
        pinned.as_deref(),
        token.as_deref(),
    ) {
        Ok(ep) => {
            let up = dial(&ep.url, Duration::from_secs(1));
            let state = match (up, pinned.is_some()) {
                (true, _) => match access_check(root, &ep) {
                    Ok(()) => "reachable",
                    Err(e) => {
                        // a refused token or the wrong listener: the
                        // daemon cannot be used as found (stricter than
                        // the reference's list, which does not name it)
                        actionable = true;
                        access = Some(e.to_string());
                        if matches!(e, crate::rpc::RpcError::Unauthorized { .. }) {
                            "unauthorized"
                        } else {
                            "wrong listener"
                        }
                    }
                },
                (false, true) => {
                    actionable = true;
                    "unreachable pin"
                }
                (false, false) => "not running",
            };
            (Some(ep.url), up, state, ep.csrf_token.is_some())
        }
        // No log or no port line: agy is simply not running. A log that
        // cannot be read (a FIFO, a device, an I/O error) is named: it is
        // not the same as no daemon, and the user must act on it.
        Err(e) if log_absent(&e) => (None, false, "not running", false),
        Err(e) => {
            actionable = true;
            access = Some(e.to_string());
            (None, false, "log unreadable", false)
        }
    };
    let d = crate::discover::discover(&root.path)?;
    let (mut fresh, mut stale, mut older, mut refused) = (0u64, 0u64, 0u64, 0u64);
    let mut counts: BTreeMap<&'static str, u64> = BTreeMap::new();
    for s in &d.sources {
        let c = check(ctx, &s.path, &s.id);
        let Some(saved) = &c.saved else {
            // No attestation: a source this reader's rules refuse offline
            // is unknown whatever the daemon says (no sync can verify it,
            // so nothing to act on); any other is a missing sidecar.
            if c.refused {
                refused += 1;
                *counts.entry("unknown").or_default() += 1;
            } else {
                *counts.entry("none").or_default() += 1;
            }
            continue;
        };
        *counts
            .entry(saved.completeness.verdict.as_str())
            .or_default() += 1;
        if !c.same_profile {
            older += 1;
        }
        if c.fresh {
            fresh += 1;
        } else {
            stale += 1;
        }
    }
    let total = d.sources.len() as u64;
    let missing = total - fresh - stale - refused;
    if stale > 0 || missing > 0 {
        actionable = true;
    }
    let v = json!({
        "path": root.path.display().to_string(),
        "surface": root.surface.as_str(),
        "daemon": {"url": url, "reachable": reachable, "state": state, "error": access},
        "csrf": if root.surface == Surface::Ide { Value::Bool(csrf) } else { Value::Null },
        "sidecars": {"fresh": fresh, "stale": stale, "missing": missing, "refused": refused, "total": total},
        "counts": {
            "verified": counts.get("verified").copied().unwrap_or(0),
            "verifiedSourceOnly": counts.get("verified-source-only").copied().unwrap_or(0),
            "unknown": counts.get("unknown").copied().unwrap_or(0),
            "incomplete": counts.get("incomplete").copied().unwrap_or(0),
            "olderProfile": older,
        },
        "watch": watch_status(&root.path),
    });
    Ok((v, actionable))
}

/// Runs `agy-audit doctor`.
pub fn run(a: DoctorArgs) -> anyhow::Result<i32> {
    let (schema, key) = a.decode.load()?;
    let ctx = AuditContext {
        schema: &schema,
        key: &key,
        client: None,
        bracket_retries: 0,
    };
    let sel = select(&a.roots)?;
    let installed = installed_agy();
    let release = profile_release();
    let skew = installed.as_deref().is_some_and(|v| v != release);
    let mut healthy = !skew;
    let mut roots = Vec::new();
    for r in &sel.roots {
        let (v, actionable) = root_report(r, &ctx)?;
        healthy &= !actionable;
        roots.push(v);
    }
    if a.json {
        let v = json!({
            "healthy": healthy,
            "agyVersion": {"installed": installed, "profile": release, "skew": skew},
            "roots": roots,
            "missingRoots": sel.missing.iter().map(|m| m.display().to_string()).collect::<Vec<_>>(),
        });
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        for m in &sel.missing {
            outln!("{}: not present (default root)", m.display());
        }
        let version = match &installed {
            Some(v) if skew => format!("{v} (skew vs agy {release}, the profile's release)"),
            Some(v) => format!("{v} (compatible)"),
            None => format!("not found on PATH (the profile names agy {release})"),
        };
        for r in &roots {
            outln!("{}", r["path"].as_str().unwrap_or(""));
            outln!("  surface: {}", r["surface"].as_str().unwrap_or(""));
            let d = &r["daemon"];
            match d["state"].as_str() {
                Some("reachable") => {
                    outln!("  daemon: reachable ({})", d["url"].as_str().unwrap_or(""))
                }
                Some(s @ ("unauthorized" | "wrong listener" | "log unreadable")) => {
                    outln!("  daemon: {s} ({})", d["error"].as_str().unwrap_or(""))
                }
                Some(s) => outln!("  daemon: {s}"),
                None => {}
            }
            if let Some(c) = r["csrf"].as_bool() {
                outln!("  csrf: {}", if c { "found" } else { "not found" });
            }
            outln!("  agy version: {version}");
            let s = &r["sidecars"];
            outln!(
                "  sidecars: {}/{} fresh ({} stale, {} missing, {} refused offline by this reader's rules: unknown, nothing to sync)",
                s["fresh"],
                s["total"],
                s["stale"],
                s["missing"],
                s["refused"]
            );
            let c = &r["counts"];
            outln!(
                "  counts: {} verified, {} verified with source-only fields, {} unknown, {} incomplete; {} under an older profile (unknown until re-verified)",
                c["verified"], c["verifiedSourceOnly"], c["unknown"], c["incomplete"], c["olderProfile"]
            );
            outln!("  watch: {}", r["watch"].as_str().unwrap_or("unknown"));
        }
        outln!("{}", if healthy { "healthy" } else { "action needed" });
    }
    Ok(if healthy { 0 } else { 1 })
}
