//! `agy-audit doctor`: per root, what is actionable.
//!
//! Exit status (the reference's rules): 0 when nothing is actionable; 1 for
//! stale or missing sidecars, version skew, or an unreachable pinned
//! `$ANTIGRAVITY_DAEMON_URL`; 2 for a malformed pinned URL (a usage error,
//! as in `sync`). A daemon that is simply not running is informational. A
//! conversation without an attestation whose source this reader's rules
//! refuse offline counts as unknown and `refused`, not as a missing
//! sidecar: no sync can verify it, so there is nothing to act on (a source
//! that does not decode, or that qualifies, is missing).
//!
//! The daemon is reachable only when it answers like agy's
//! ([`crate::rpc::ide::check_listener`]): one token-less read-only request
//! first, whose answer must be one agy's daemon could give (a JSON object,
//! or an error status with agy's JSON error body or a Connect error); only
//! then is the CSRF token sent, in a second request whose answer must be
//! agy's too. Anything else at the port is named (an HTML page, an HTTP
//! status without agy's body, no HTTP at all, an `https://` URL at a
//! plain-HTTP port) and never gets the token. Stricter than the reference's
//! list, which does not name these cases: a daemon that refuses the tool
//! (401/403), agy's wrong listener (415, or 400 without a Connect code),
//! anything else at the port, and a token read and refused (not a plain
//! printable token, [`crate::rpc::ide::check_token`]) are actionable, since
//! nothing can be verified through them. Sidecars are judged by rechecking every attestation
//! against its native source (profile, source digest and payload digest,
//! never mtime): doctor always reads native content. What sits at a sidecar
//! path is read and classified by the one rule `sync`, `watch` and `list`
//! apply too ([`crate::attest::cache::classify`]: bytes read as strictly as
//! an answer, ownership by attestation); a file that is not this
//! conversation's sidecar counts as a missing one.

use super::common::DecodeArgs;
use crate::pipeline::AuditContext;
use crate::report::escape::terminal;
use crate::roots::{select, Root, Surface};
use crate::rpc::ide::{
    check_listener, check_token, dial, endpoint_for, ide_logs_dir, ide_url, main_log_token,
    MainLogToken, Other, Reached, RefusedToken, TokenSource,
};
use crate::sidecars::check;
use clap::Args;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Check every root: its surface, daemon, CSRF token (IDE), the installed
/// agy version, and whether every conversation's sidecar is fresh; the
/// store's own troubles (not indexed, zombie steps, malformed, oversized;
/// read-only, no verdict changed) and the store folders other tools read
/// besides the default roots (backup, -ide, the desktop app's data), never
/// written.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// A store root (repeatable). Without it: every default root that
    /// exists (the CLI's and the IDE's under HOME), or the one
    /// $ANTIGRAVITY_CLI_ROOT pins.
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Print {"healthy", "roots": [{"path", "surface", "daemon": {"url",
    /// "reachable", "state", "error"}, "csrf", "csrfToken": {"from",
    /// "state", "sent", "error"}, "sidecars": {"fresh", "stale", "missing", "notSidecars",
    /// "refused", "total"},
    /// "counts": {...}, "missingSchemas": [...], "schema": {"sweep",
    /// "modeled", "conversations", "unknownField", "passUnderInstalled",
    /// "installed": {"agy", "set", "error"}, "extract", "use"},
    /// "troubles": {...}}], "storeFolders": [...], ...}
    /// instead of text (troubles and store folders: see `list --help`;
    /// informational, never actionable). The daemon is reachable only
    /// when it answers like agy's (token-less first; the token goes only to
    /// a listener that does); "state" names anything else (something else,
    /// tls mismatch, wrong listener, unauthorized, not running, unreachable
    /// pin, log unreadable).
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
    matches!(e, crate::Error::Endpoint(e) if e.log_absent())
}

/// The CSRF token doctor would send a root's daemon, and where it was read.
enum Token {
    Found {
        token: String,
        from: TokenSource,
    },
    /// Read and refused ([`crate::rpc::ide::check_token`]): never sent.
    Refused(RefusedToken),
    /// None known (an IDE root whose main.log names none, a CLI root).
    None,
}

/// `$ANTIGRAVITY_CSRF_TOKEN`, judged where it is read: unset or empty is
/// none; anything but a plain printable token is refused (never sent).
fn env_token() -> Token {
    match std::env::var_os(crate::rpc::CSRF_ENV).filter(|t| !t.is_empty()) {
        None => Token::None,
        Some(t) => {
            let t = t.to_string_lossy().into_owned();
            match check_token(&t) {
                Ok(()) => Token::Found {
                    token: t,
                    from: TokenSource::Env,
                },
                Err(defect) => Token::Refused(RefusedToken {
                    from: TokenSource::Env,
                    defect,
                }),
            }
        }
    }
}

/// The token for `root`: `$ANTIGRAVITY_CSRF_TOKEN` when set (for any
/// root, as `sync` sends it); else, for an IDE root whose daemon is not
/// pinned, the IDE's main.log, read whether or not language_server.log
/// names a port.
fn root_token(root: &Root, pinned: bool, env: &Token) -> Token {
    match env {
        Token::Found { token, from } => Token::Found {
            token: token.clone(),
            from: from.clone(),
        },
        Token::Refused(r) => Token::Refused(r.clone()),
        Token::None if root.surface == Surface::Ide && !pinned => {
            match ide_logs_dir().map(|logs| main_log_token(&logs)) {
                Some(MainLogToken::Found { token, log }) => Token::Found {
                    token,
                    from: TokenSource::MainLog(log),
                },
                Some(MainLogToken::Refused(r)) => Token::Refused(r),
                Some(MainLogToken::Absent { .. }) | None => Token::None,
            }
        }
        Token::None => Token::None,
    }
}

/// The daemon's URL for `root`: the pin, else the root's own log (cli.log;
/// for an IDE root, language_server.log, independently of main.log).
fn root_url(root: &Root, pinned: Option<&str>) -> crate::Result<String> {
    if root.surface == Surface::Ide && pinned.is_none() {
        return ide_url(&root.path).map(|(url, _)| url);
    }
    endpoint_for(&root.path, root.surface, pinned, None).map(|e| e.url)
}

/// What doctor says of a root's daemon.
struct DaemonState {
    url: Option<String>,
    /// agy's daemon answered (its answer, or its refusal of the token).
    reachable: bool,
    state: &'static str,
    error: Option<String>,
    actionable: bool,
    token_sent: bool,
}

/// Finds the daemon of `root` and asks it, token-less first
/// ([`check_listener`]): reachable only when the answer is one agy's daemon
/// could give; anything else at the port is named, and the token is never
/// sent to it.
fn daemon_state(root: &Root, pinned: Option<&str>, token: Option<&str>) -> DaemonState {
    let mut d = DaemonState {
        url: None,
        reachable: false,
        state: "not running",
        error: None,
        actionable: false,
        token_sent: false,
    };
    let url = match root_url(root, pinned) {
        Ok(url) => url,
        // No log or no port line: agy is simply not running.
        Err(e) if log_absent(&e) => return d,
        // A log that cannot be read (a FIFO, a device, an I/O error) is
        // named: not the same as no daemon, and the user must act on it.
        Err(e) => {
            d.state = "log unreadable";
            d.error = Some(e.to_string());
            d.actionable = true;
            return d;
        }
    };
    d.url = Some(url.clone());
    let not_running = |mut d: DaemonState| {
        if pinned.is_some() {
            d.state = "unreachable pin";
            d.actionable = true;
        }
        d
    };
    if !dial(&url, Duration::from_secs(1)) {
        return not_running(d);
    }
    let options = crate::rpc::ClientOptions {
        timeout: Duration::from_secs(5),
        retries: 0,
        daemon_of: Some(crate::rpc::ide::daemon_of(&root.path, root.surface)),
        ..crate::rpc::ClientOptions::default()
    };
    // Stricter than the reference's list, which does not name these: a
    // daemon that refuses the tool, agy's wrong listener, and anything else
    // at the port are actionable, since nothing can be verified there.
    match check_listener(&url, token, &options) {
        Ok(Reached::Agy { token_sent }) => {
            d.reachable = true;
            d.state = "reachable";
            d.token_sent = token_sent;
        }
        Ok(Reached::Unauthorized(e)) => {
            d.reachable = true;
            d.state = "unauthorized";
            d.token_sent = matches!(
                e,
                crate::rpc::RpcError::Unauthorized {
                    token_sent: true,
                    ..
                }
            );
            d.error = Some(e.to_string());
            d.actionable = true;
        }
        Ok(Reached::WrongListener(e)) => {
            d.state = "wrong listener";
            d.error = Some(e.to_string());
            d.actionable = true;
        }
        Ok(Reached::Other { other, token_sent }) => {
            d.state = match other {
                Other::TlsToPlainHttp | Other::TlsUnsupported => "tls mismatch",
                _ => "something else",
            };
            d.error = Some(other.to_string());
            d.token_sent = token_sent;
            d.actionable = true;
        }
        Ok(Reached::Unreachable(_)) => return not_running(d),
        Err(e) => {
            d.state = "client error";
            d.error = Some(e.to_string());
            d.actionable = true;
        }
    }
    d
}

fn root_report(
    root: &Root,
    ctx: &AuditContext,
    pinned: Option<&str>,
    env: &Token,
    locks: Option<&crate::troubles::LockTable>,
    installed: &std::cell::OnceCell<crate::schema_advice::Installed>,
) -> anyhow::Result<(Value, bool)> {
    let token = root_token(root, pinned.is_some(), env);
    let send = match &token {
        Token::Found { token, .. } => Some(token.as_str()),
        Token::Refused(_) | Token::None => None,
    };
    let daemon = daemon_state(root, pinned, send);
    let mut actionable = daemon.actionable;
    let csrf_token = match &token {
        Token::Found { from, .. } => json!({
            "from": from.to_string(), "state": "found", "sent": daemon.token_sent, "error": null,
        }),
        Token::Refused(r) => {
            // a token read and refused: named, and nothing can use it
            actionable = true;
            json!({"from": r.from.to_string(), "state": "refused", "sent": false, "error": r.to_string()})
        }
        Token::None => json!({"from": null, "state": "none", "sent": false, "error": null}),
    };
    let found = matches!(token, Token::Found { .. });
    let d = crate::discover::discover(&root.path)?;
    let (mut fresh, mut stale, mut older, mut refused) = (0u64, 0u64, 0u64, 0u64);
    let mut not_sidecars = 0u64;
    let mut counts: BTreeMap<&'static str, u64> = BTreeMap::new();
    // evidence under a stored agy set is rechecked with that set; the sets
    // that are missing, each named once with the command restoring it
    let rechecks = crate::installed::Rechecks::new(ctx.schema);
    let mut missing_sets: Vec<String> = Vec::new();
    for s in &d.sources {
        let c = check(ctx, &rechecks, &s.path, &s.id);
        if let Some(m) = &c.missing_set {
            let m = m.to_string();
            if !missing_sets.contains(&m) {
                missing_sets.push(m);
            }
        }
        let Some(saved) = &c.saved else {
            // No attestation: a source this reader's rules refuse offline
            // is unknown whatever the daemon says (no sync can verify it,
            // so nothing to act on); any other is a missing sidecar.
            if c.refused {
                refused += 1;
                *counts.entry("unknown").or_default() += 1;
            } else if c.not_a_sidecar {
                // something else at the path: named apart, never replaced
                not_sidecars += 1;
                *counts.entry("none").or_default() += 1;
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
    let missing = total - fresh - stale - refused - not_sidecars;
    if stale > 0 || missing > 0 || not_sidecars > 0 {
        actionable = true;
    }
    let v = json!({
        "path": root.path.display().to_string(),
        "surface": root.surface.as_str(),
        "daemon": {"url": daemon.url, "reachable": daemon.reachable, "state": daemon.state, "error": daemon.error},
        "csrf": if root.surface == Surface::Ide { Value::Bool(found) } else { Value::Null },
        "csrfToken": csrf_token,
        "sidecars": {"fresh": fresh, "stale": stale, "missing": missing, "notSidecars": not_sidecars, "refused": refused, "total": total},
        "counts": {
            "verified": counts.get("verified").copied().unwrap_or(0),
            "verifiedSourceOnly": counts.get("verified-source-only").copied().unwrap_or(0),
            "unknown": counts.get("unknown").copied().unwrap_or(0),
            "incomplete": counts.get("incomplete").copied().unwrap_or(0),
            "olderProfile": older,
        },
        "missingSchemas": missing_sets,
        // which schema a sweep would use, and what the installed set would change
        "schema": crate::schema_advice::advise(ctx, d.sources.iter().map(|s| s.path.as_path()), installed),
        "watch": watch_status(&root.path),
        // the store's own troubles: informational, no verdict changes
        "troubles": crate::troubles::probe(root, ctx.schema, locks)?,
    });
    Ok((v, actionable))
}

/// The `csrf:` line of a root: for an IDE root always, for a CLI root only
/// when `$ANTIGRAVITY_CSRF_TOKEN` is set (a CLI daemon is launched without
/// a token, so sending one is worth saying).
fn csrf_line(r: &Value) -> Option<String> {
    let t = &r["csrfToken"];
    let ide = r["surface"].as_str() == Some("ide");
    let from = terminal(t["from"].as_str().unwrap_or("")).into_owned();
    match t["state"].as_str() {
        Some("found") => {
            let cli = if ide {
                ""
            } else {
                " (agy's CLI daemon is launched without a token)"
            };
            let sent = if t["sent"] == true {
                "sent".to_string()
            } else {
                let why = match r["daemon"]["state"].as_str() {
                    Some("something else" | "tls mismatch" | "wrong listener") => {
                        "the listener's token-less answer was not agy's"
                    }
                    Some("reachable" | "unauthorized") => "the daemon asked for none",
                    _ => "no daemon answered",
                };
                format!("not sent: {why}")
            };
            Some(format!("found ({from}), {sent}{cli}"))
        }
        Some("refused") => Some(format!(
            "refused: {}",
            terminal(t["error"].as_str().unwrap_or(""))
        )),
        _ if ide => Some("not found".into()),
        _ => None,
    }
}

/// Runs `agy-audit doctor`.
pub fn run(a: DoctorArgs) -> anyhow::Result<i32> {
    // A malformed pinned $ANTIGRAVITY_DAEMON_URL is a usage error (exit 2),
    // by the rule and in the words `sync` uses, not a daemon "not running".
    let pinned = crate::rpc::ide::pinned_url(None)?;
    let env = env_token();
    let (schema, key) = a.decode.load()?;
    let ctx = AuditContext::offline(&schema, &key);
    let sel = select(&a.roots)?;
    let f = examine(&sel, &ctx, pinned.as_deref(), &env)?;
    if a.json {
        let v = json!({
            "healthy": f.healthy,
            "agyVersion": {"installed": f.installed, "profile": f.release, "skew": f.skew},
            "roots": f.roots,
            "missingRoots": sel.missing.iter().map(|m| m.display().to_string()).collect::<Vec<_>>(),
            "storeFolders": f.extras,
        });
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print_text(&sel, &f);
    }
    Ok(if f.healthy { 0 } else { 1 })
}

/// What doctor found: the agy versions, each root's report and the store
/// folders besides the roots.
struct Findings {
    healthy: bool,
    installed: Option<String>,
    release: &'static str,
    skew: bool,
    roots: Vec<Value>,
    extras: Vec<Value>,
}

/// Examines every selected root (and the store folders besides them).
fn examine(
    sel: &crate::roots::Selection,
    ctx: &AuditContext,
    pinned: Option<&str>,
    env: &Token,
) -> anyhow::Result<Findings> {
    let installed = installed_agy();
    let release = profile_release();
    let skew = installed.as_deref().is_some_and(|v| v != release);
    let mut healthy = !skew;
    let mut roots = Vec::new();
    let locks = crate::troubles::LockTable::read();
    let installed_set = std::cell::OnceCell::new();
    for r in &sel.roots {
        let (v, actionable) = root_report(r, ctx, pinned, env, locks.as_ref(), &installed_set)?;
        healthy &= !actionable;
        roots.push(v);
    }
    let extras = super::doctor_folders::reports(sel, ctx, locks.as_ref())?;
    Ok(Findings {
        healthy,
        installed,
        release,
        skew,
        roots,
        extras,
    })
}

/// doctor's text: the missing default roots, each root's block, the store
/// folders, the verdict.
fn print_text(sel: &crate::roots::Selection, f: &Findings) {
    for m in &sel.missing {
        outln!("{}: not present (default root)", m.display());
    }
    let release = f.release;
    let version = match &f.installed {
        Some(v) if f.skew => format!("{v} (skew vs agy {release}, the profile's release)"),
        Some(v) => format!("{v} (compatible)"),
        None => format!("not found on PATH (the profile names agy {release})"),
    };
    for r in &f.roots {
        print_root(r, &version);
    }
    super::doctor_folders::print(&f.extras);
    outln!(
        "{}",
        if f.healthy {
            "healthy"
        } else {
            "action needed"
        }
    );
}

/// One root's text block (from its `--json` object `r`), with the agy
/// version line `version`.
fn print_root(r: &Value, version: &str) {
    outln!("{}", r["path"].as_str().unwrap_or(""));
    outln!("  surface: {}", r["surface"].as_str().unwrap_or(""));
    let d = &r["daemon"];
    let text = |v: &Value| terminal(v.as_str().unwrap_or("")).into_owned();
    match d["state"].as_str() {
        Some("reachable") => outln!("  daemon: reachable ({})", text(&d["url"])),
        Some("something else" | "tls mismatch") => outln!(
            "  daemon: not agy's ({}): {}",
            text(&d["url"]),
            text(&d["error"])
        ),
        Some(s @ ("unauthorized" | "wrong listener" | "log unreadable" | "client error")) => {
            outln!("  daemon: {s} ({})", text(&d["error"]))
        }
        Some(s) => outln!("  daemon: {s}"),
        None => {}
    }
    if let Some(line) = csrf_line(r) {
        outln!("  csrf: {line}");
    }
    outln!("  agy version: {version}");
    let s = &r["sidecars"];
    outln!(
        "  sidecars: {}/{} fresh ({} stale, {} missing, {} left alone (not sidecars), {} refused offline by this reader's rules: unknown, nothing to sync)",
        s["fresh"],
        s["total"],
        s["stale"],
        s["missing"],
        s["notSidecars"],
        s["refused"]
    );
    let c = &r["counts"];
    outln!(
        "  counts: {} verified, {} verified with source-only fields, {} unknown, {} incomplete; {} under an older profile (unknown until re-verified)",
        c["verified"], c["verifiedSourceOnly"], c["unknown"], c["incomplete"], c["olderProfile"]
    );
    for m in r["missingSchemas"].as_array().into_iter().flatten() {
        outln!(
            "  attested under a missing schema: {}",
            terminal(m.as_str().unwrap_or(""))
        );
    }
    if let Ok(advice) = serde_json::from_value::<crate::schema_advice::Advice>(r["schema"].clone())
    {
        let esc = |t: &str| terminal(t).into_owned();
        for (i, line) in crate::schema_advice::lines(&advice, &esc)
            .iter()
            .enumerate()
        {
            outln!("  {}{line}", if i == 0 { "schema: " } else { "    " });
        }
    }
    outln!("  watch: {}", r["watch"].as_str().unwrap_or("unknown"));
    super::doctor_folders::trouble_lines(&r["troubles"]);
}
