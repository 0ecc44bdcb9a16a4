//! `watch`: keeps every root's sidecars verified as agy writes (issue 35).
//!
//! Each poll lists every root's conversations ([`crate::discover`]) and, per
//! source, either reuses the last judgement while the source's and sidecar's
//! metadata are unchanged and the bound has not passed ([`metadata`]), or
//! checks native content: the source is read ([`crate::pipeline::prepare`])
//! and what sits at `<uuid>.trajectory.json` is classified by the one rule
//! and strict reader every command applies
//! ([`crate::attest::cache::classify`]) and judged ([`stale::judge`]). A
//! stale sidecar is re-verified through the same bracketed per-session audit
//! the sweep's fetch stage runs ([`crate::pipeline::audit_prepared`]) and
//! written atomically next to the source
//! ([`crate::attest::cache::write_sidecar`], 0600, equal bytes a no-op, the
//! other `agyReader` members kept). `--once` is one pass that always checks
//! native content.
//!
//! The daemon of each root is found as `sync` finds it
//! ([`crate::rpc::ide::endpoint_for`]), only when a sidecar is stale; after
//! a failure the endpoint and token are found again at the next attempt. A
//! failure is logged once per failure streak, then `recovered`. Nothing is
//! fetched while every sidecar holds. The `stop` flag (SIGINT/SIGTERM)
//! abandons calls in flight (the client's cancel flag) and ends the loop
//! between sessions; the idle timeout ends it after that long without a
//! stale sidecar. Log lines go to standard error ([`crate::note!`]). A
//! refused conversation is logged once per refusal streak: while its native
//! checks keep ending in the same refusal (at every poll under
//! `--metadata-bound 0s`) it is counted, not logged again, and, like a
//! refusal judged from unchanged metadata, it is not news (no pass line,
//! not busy for the idle timeout).

pub mod metadata;
pub mod stale;
pub mod state;

use crate::attest::cache::{classify, sidecar_path, Existing};
use crate::discover::SourceRef;
use crate::manifest::SessionRecord;
use crate::outcome::SessionOutcome;
use crate::pipeline::{audit_prepared, prepare, AuditContext, Prepared, SessionResult};
use crate::roots::Root;
use crate::rpc::{ClientOptions, DaemonClient};
use crate::schema::Schema;
use crate::source::legacy::LegacyKey;
use metadata::{Observed, Reuse};
use stale::Stale;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How a watch runs.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    pub roots: Vec<Root>,
    /// Time between the start of one poll and the next.
    pub interval: Duration,
    /// Exit 0 after this long without a stale sidecar.
    pub idle_timeout: Option<Duration>,
    /// One pass that always checks native content, then stop.
    pub once: bool,
    /// The metadata reuse bound ([`metadata::DEFAULT_BOUND`] at most).
    pub metadata_bound: Duration,
    /// `--daemon-url` / `$ANTIGRAVITY_DAEMON_URL` (else each root's logs).
    pub daemon_url: Option<String>,
    /// `--csrf-token` / `$ANTIGRAVITY_CSRF_TOKEN` (else the IDE's main.log).
    pub csrf_token: Option<String>,
    /// The client's options (its `cancel` should be the stop flag).
    pub client: ClientOptions,
    pub bracket_retries: u32,
    /// Files the command reads besides the sources (descriptor set, key):
    /// never written.
    pub protected: Vec<PathBuf>,
    /// Stop after this many polls (the memory bench).
    pub max_polls: Option<u64>,
    /// Where the state file for `doctor` goes ([`state`]); `None`: none.
    pub state_dir: Option<PathBuf>,
}

/// What one pass over every root did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pass {
    /// Conversations seen.
    pub sources: u64,
    /// Judged from unchanged metadata within the bound.
    pub reused: u64,
    /// Checked against native content.
    pub checked: u64,
    /// Sidecars that hold.
    pub fresh: u64,
    /// Re-verified and verified.
    pub synced: u64,
    /// Sidecar files written (not counting equal bytes).
    pub written: u64,
    /// Re-verified and refused (unknown or incomplete): no sidecar.
    pub refused: u64,
    /// Of `refused`, those refused again with the refusal their previous
    /// native check logged (a streak, as `--metadata-bound 0s` gives at
    /// every poll): not logged again, and not news (they keep no pass line
    /// coming and do not hold off the idle timeout, as a refusal judged
    /// from unchanged metadata does not).
    pub repeated: u64,
    /// Files at a sidecar path that are not sidecars, left alone.
    pub foreign: u64,
    /// Left without evidence: the daemon unavailable, not fetched, a
    /// source or sidecar that could not be read or written.
    pub pending: u64,
}

impl Pass {
    /// Something was stale (or could not be judged), so the watch is not idle.
    fn busy(&self) -> bool {
        self.synced + self.news_refused() + self.pending > 0
    }

    /// Refusals that start a streak (logged in this pass).
    fn news_refused(&self) -> u64 {
        self.refused.saturating_sub(self.repeated)
    }
}

/// Why the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Once,
    Idle,
    Stopped,
    MaxPolls,
}

/// The end of a watch.
#[derive(Debug, Clone)]
pub struct WatchSummary {
    pub polls: u64,
    pub ended: Ended,
    /// The last pass.
    pub last: Pass,
}

/// What a running watch tells an observer (the memory bench): after each
/// poll, its number and what the pass did.
pub trait WatchSink {
    fn polled(&self, _poll: u64, _pass: &Pass) {}
}

/// Observes nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoWatchSink;

impl WatchSink for NoWatchSink {}

/// A judgement that may be reused while the metadata holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Judged {
    Fresh,
    /// Stale, and the root's daemon could not be used: judged again as
    /// soon as the daemon is back (the loop probes it once a pass).
    AwaitingDaemon,
    Refused,
    Foreign,
    NotFetched,
    Unreadable,
}

/// One root's daemon: the client found last, and the failure streak.
#[derive(Debug, Default)]
struct Daemon {
    client: Option<DaemonClient>,
    /// Set while failing (what failed first); the streak's one log line.
    failing: Option<String>,
    /// Probed in this pass already.
    probed: bool,
    /// Failed in this pass: not tried again before the next.
    down: bool,
}

impl Daemon {
    fn fail(&mut self, root: &Root, why: String) {
        if self.failing.is_none() {
            crate::note!(
                "watch: daemon of the {} root {} unavailable: {why} (retried every poll; logged once until it recovers)",
                root.surface.as_str(),
                root.path.display()
            );
            self.failing = Some(why);
        }
        self.client = None;
        self.probed = false;
        self.down = true;
    }

    /// A new pass: the daemon may be probed (once) again.
    fn new_pass(&mut self) {
        self.probed = false;
        self.down = false;
    }

    /// The root's client, found again after a failure and probed once per
    /// pass; `None` (logged once per streak) when it cannot be used.
    fn client(&mut self, root: &Root, opts: &WatchOptions) -> Option<&DaemonClient> {
        if self.down {
            return None;
        }
        if self.client.is_none() {
            let found = crate::rpc::ide::endpoint_for(
                &root.path,
                root.surface,
                opts.daemon_url.as_deref(),
                opts.csrf_token.as_deref(),
            );
            let made = found.map_err(|e| e.to_string()).and_then(|ep| {
                let mut o = opts.client.clone();
                // the token is sent only when known: never to a CLI daemon by default
                o.csrf_token = ep.csrf_token;
                // a refused token or the wrong listener names this root
                o.daemon_of = Some(crate::rpc::ide::daemon_of(&root.path, root.surface));
                DaemonClient::new(&ep.url, o).map_err(|e| e.to_string())
            });
            match made {
                Ok(c) => self.client = Some(c),
                Err(why) => {
                    self.fail(root, why);
                    return None;
                }
            }
        }
        if !self.probed {
            let probe = self.client.as_ref().map(DaemonClient::probe);
            match probe {
                Some(Ok(())) => {
                    self.probed = true;
                    if self.failing.take().is_some() {
                        crate::note!(
                            "watch: daemon of the {} root {} recovered ({})",
                            root.surface.as_str(),
                            root.path.display(),
                            self.client.as_ref().map_or("", |c| c.endpoint())
                        );
                    }
                }
                Some(Err(e)) => {
                    self.fail(root, e.to_string());
                    return None;
                }
                None => return None,
            }
        }
        self.client.as_ref()
    }
}

/// Whether to go on with a root's pass.
enum Flow {
    Next,
    StopRoot,
}

/// The loop's state across polls.
struct Watcher<'a> {
    schema: &'a Schema,
    /// The sets evidence under a stored agy set is rechecked with.
    rechecks: crate::installed::Rechecks<'a>,
    /// The missing sets already noted (each named once).
    missing_sets: std::collections::HashSet<String>,
    key: &'a LegacyKey,
    opts: &'a WatchOptions,
    stop: &'a AtomicBool,
    profiles: u64,
    reuse: HashMap<PathBuf, Reuse<Judged>>,
    /// The refusal each source in a refusal streak was logged with: its
    /// native checks kept ending in this same refusal (file id, verdict,
    /// reason). The streak ends, and the entry goes, at the first native
    /// check that ends otherwise, or when the source is gone; a different
    /// refusal starts a new streak and is logged.
    refused: HashMap<PathBuf, String>,
    daemons: Vec<Daemon>,
}

impl Watcher<'_> {
    /// Whether what sits at the sidecar path still holds. Evidence minted
    /// under a stored agy set is judged with that set (the source read
    /// again under it); stale under it, or its set missing, it is judged
    /// as the source was read with this watch's schema (then re-verified).
    fn judge(
        &mut self,
        source: &std::path::Path,
        prepared: &crate::pipeline::Prepared,
        existing: &Existing,
    ) -> Result<(), stale::Stale> {
        if let Existing::Attested(saved) = existing {
            if self.judge_under_its_set(source, saved, existing) {
                return Ok(());
            }
        }
        stale::judge(prepared, existing).map(|_| ())
    }

    /// Whether an attestation whose profile names a stored agy set other
    /// than this watch's schema still holds under that set. A set that is
    /// missing is noted once, naming the command that restores it.
    fn judge_under_its_set(
        &mut self,
        source: &std::path::Path,
        saved: &crate::attest::cache::Saved,
        existing: &Existing,
    ) -> bool {
        match self.rechecks.for_profile(&saved.completeness.profile) {
            Ok(chosen) if chosen.is_stored() => {
                let under = AuditContext::offline(&chosen, self.key);
                prepare(&under, source).is_ok_and(|p| stale::judge(&p, existing).is_ok())
            }
            Ok(_) => false,
            Err(missing) => {
                let m = missing.to_string();
                if self.missing_sets.insert(m.clone()) {
                    crate::note!("watch: {}: {m}", source.display());
                }
                false
            }
        }
    }

    /// The most bytes a sidecar is read at: the response cap's
    /// ([`crate::attest::cache::sidecar_cap`]).
    fn sidecar_cap(&self) -> u64 {
        crate::attest::cache::sidecar_cap(self.opts.client.max_body)
    }
}

/// Runs the watch until `--once`'s pass ends, the idle timeout or
/// `max_polls` is reached, or `stop` is set.
pub fn watch(
    schema: &Schema,
    key: &LegacyKey,
    opts: &WatchOptions,
    stop: Arc<AtomicBool>,
    sink: &dyn WatchSink,
) -> WatchSummary {
    let profiles = metadata::profiles_key(
        &crate::profile::sqlite_profile(schema),
        &crate::profile::legacy_profile(schema, key),
    );
    let mut w = Watcher {
        schema,
        rechecks: crate::installed::Rechecks::new(schema),
        missing_sets: std::collections::HashSet::new(),
        key,
        opts,
        stop: &stop,
        profiles,
        reuse: HashMap::new(),
        refused: HashMap::new(),
        daemons: opts.roots.iter().map(|_| Daemon::default()).collect(),
    };
    let started = crate::util::time::now_rfc3339();
    let mut heartbeat = Heartbeat::new(opts, started);
    let mut last_busy = Instant::now();
    let mut polls = 0u64;
    let mut last = Pass::default();
    let ended = loop {
        if stop.load(Ordering::SeqCst) {
            break Ended::Stopped;
        }
        let began = Instant::now();
        polls += 1;
        let pass = w.pass();
        if polls == 1 || pass.synced + pass.news_refused() > 0 || pass.pending != last.pending {
            crate::note!(
                "watch: pass {polls}: {} conversations: {} fresh, {} synced ({} written), {} refused, {} left alone (not sidecars), {} pending{}",
                pass.sources,
                pass.fresh,
                pass.synced,
                pass.written,
                pass.refused,
                pass.foreign,
                pass.pending,
                if pass.reused > 0 {
                    format!("; {} judged from unchanged metadata", pass.reused)
                } else {
                    String::new()
                }
            );
        }
        if pass.busy() {
            last_busy = Instant::now();
        }
        sink.polled(polls, &pass);
        last = pass;
        heartbeat.beat(polls, false);
        if opts.once {
            break Ended::Once;
        }
        if stop.load(Ordering::SeqCst) {
            break Ended::Stopped;
        }
        if opts.max_polls.is_some_and(|m| polls >= m) {
            break Ended::MaxPolls;
        }
        if let Some(idle) = opts.idle_timeout {
            if last_busy.elapsed() >= idle {
                break Ended::Idle;
            }
        }
        // Sleep until the next poll, the idle deadline or a stop.
        let next = began + opts.interval;
        let idle_at = opts.idle_timeout.map(|d| last_busy + d);
        loop {
            let now = Instant::now();
            if stop.load(Ordering::SeqCst) || now >= next || idle_at.is_some_and(|t| now >= t) {
                break;
            }
            let wake = idle_at.map_or(next, |t| t.min(next));
            std::thread::sleep(
                wake.saturating_duration_since(now)
                    .min(Duration::from_millis(50)),
            );
        }
        if let Some(idle) = opts.idle_timeout {
            if last_busy.elapsed() >= idle {
                break Ended::Idle;
            }
        }
    };
    heartbeat.beat(polls, true);
    WatchSummary { polls, ended, last }
}

impl Watcher<'_> {
    /// One pass over every root.
    fn pass(&mut self) -> Pass {
        let mut pass = Pass::default();
        let mut seen: Vec<PathBuf> = Vec::new();
        for ri in 0..self.opts.roots.len() {
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            let root = &self.opts.roots[ri];
            self.daemons[ri].new_pass();
            if self.daemons[ri].failing.is_some()
                && self.daemons[ri].client(root, self.opts).is_some()
            {
                // Back: what waited for it is judged again now.
                self.reuse.retain(|p, e| {
                    e.judgement != Judged::AwaitingDaemon || !p.starts_with(&root.path)
                });
            }
            let found = match crate::discover::discover(&root.path) {
                Ok(d) => d,
                Err(e) => {
                    crate::note!("watch: cannot list {}: {e}", root.path.display());
                    pass.pending += 1;
                    continue;
                }
            };
            pass.sources += found.sources.len() as u64;
            let mut stopped = false;
            for s in &found.sources {
                seen.push(s.path.clone());
                if stopped || self.stop.load(Ordering::SeqCst) {
                    continue;
                }
                if let Flow::StopRoot = self.source(ri, s, &mut pass) {
                    stopped = true;
                }
            }
        }
        // Forget the conversations that are gone: memory follows the store.
        if !self.stop.load(Ordering::SeqCst) {
            let seen: std::collections::HashSet<&PathBuf> = seen.iter().collect();
            self.reuse.retain(|p, _| seen.contains(p));
            self.refused.retain(|p, _| seen.contains(p));
        }
        pass
    }

    fn remember(&mut self, path: &Path, observed: Observed, at: Instant, judgement: Judged) {
        self.reuse.insert(
            path.to_path_buf(),
            Reuse {
                observed,
                checked_at: at,
                judgement,
            },
        );
    }

    /// [`Watcher::remember`] of what `met` observed.
    fn remember_met(&mut self, met: Met<'_>, judgement: Judged) {
        self.remember(met.path, met.observed, met.at, judgement);
    }

    /// One conversation: reuse, or a native check and, when stale, a
    /// re-verification.
    fn source(&mut self, ri: usize, s: &SourceRef, pass: &mut Pass) -> Flow {
        let side = sidecar_path(&s.path);
        let observed = Observed::of(&s.path, &side, self.profiles);
        let met = Met {
            path: &s.path,
            side,
            observed,
            at: Instant::now(),
        };
        if self.reused(&met, pass) {
            return Flow::Next;
        }
        pass.checked += 1;
        // A native check continues a refusal streak only by ending in the
        // same refusal (below); any other end closes it.
        let streak = self.refused.remove(&s.path);
        let (mut prepared, why) = match self.native_check(&met, pass) {
            Ok(stale) => stale,
            Err(judged) => {
                self.remember_met(met, judged);
                return Flow::Next;
            }
        };
        let client = match self.client_for(ri, &mut prepared, pass) {
            Ok(client) => client,
            Err(judged) => {
                self.remember_met(met, judged);
                return Flow::Next;
            }
        };
        let ctx = AuditContext {
            schema: self.schema,
            key: self.key,
            client: client.as_ref().map(|c| c as &dyn crate::pipeline::Answers),
            bracket_retries: self.opts.bracket_retries,
        };
        let r = audit_prepared(&ctx, prepared);
        if r.abandoned || self.stop.load(Ordering::SeqCst) {
            // Stopped mid-fetch: nothing is known about this session.
            pass.pending += 1;
            return Flow::StopRoot;
        }
        let recheck = Recheck {
            why: &why,
            client: client.as_ref(),
            streak,
        };
        self.settle(ri, met, &r, recheck, pass);
        Flow::Next
    }

    /// The judgement kept from the last native check, when not `--once`
    /// and the metadata and the bound still hold: counted in `pass`.
    fn reused(&self, met: &Met<'_>, pass: &mut Pass) -> bool {
        let opts = self.opts;
        if opts.once {
            return false;
        }
        let Some(j) = self
            .reuse
            .get(met.path)
            .and_then(|e| e.get(&met.observed, met.at, opts.metadata_bound))
        else {
            return false;
        };
        pass.reused += 1;
        match j {
            Judged::Fresh => pass.fresh += 1,
            Judged::AwaitingDaemon => pass.pending += 1,
            _ => {}
        }
        true
    }

    /// The source read offline and its sidecar classified and judged:
    /// `Ok` the source and why its sidecar is stale, `Err` the judgement
    /// the check settled on (unreadable, foreign, fresh), counted in `pass`.
    fn native_check(
        &mut self,
        met: &Met<'_>,
        pass: &mut Pass,
    ) -> Result<(Prepared, Stale), Judged> {
        let offline = AuditContext::offline(self.schema, self.key);
        let prepared = match prepare(&offline, met.path) {
            Ok(p) => p,
            Err(e) => {
                crate::note!("watch: cannot read {}: {e}", met.path.display());
                pass.pending += 1;
                return Err(Judged::Unreadable);
            }
        };
        let cascade = prepared.source.cascade_id();
        let existing = classify(&met.side, self.schema, &cascade, self.sidecar_cap());
        if let Existing::Foreign(why) = &existing {
            crate::note!(
                "watch: refusing {}: not a trajectory sidecar ({why}); left alone, never overwritten",
                met.side.display()
            );
            pass.foreign += 1;
            return Err(Judged::Foreign);
        }
        match self.judge(met.path, &prepared, &existing) {
            Ok(()) => {
                pass.fresh += 1;
                Err(Judged::Fresh)
            }
            Err(why) => Ok((prepared, why)),
        }
    }

    /// The root's daemon client for a stale source the daemon can verify
    /// (`Ok(None)`: refused before any fetch, re-verified offline), its
    /// source materialized; `Err` when the daemon cannot be used (counted
    /// pending).
    fn client_for(
        &mut self,
        ri: usize,
        prepared: &mut Prepared,
        pass: &mut Pass,
    ) -> Result<Option<DaemonClient>, Judged> {
        if prepared.refusal().is_some() {
            return Ok(None);
        }
        let opts = self.opts;
        let Some(c) = self.daemons[ri].client(&opts.roots[ri], opts) else {
            pass.pending += 1;
            return Err(Judged::AwaitingDaemon);
        };
        Ok(Some(c.clone()))
    }

    /// What a re-verification ended in, logged, counted and remembered.
    fn settle(
        &mut self,
        ri: usize,
        met: Met<'_>,
        r: &SessionResult,
        recheck: Recheck<'_>,
        pass: &mut Pass,
    ) {
        let rec = &r.record;
        let reason = rec
            .reason_text()
            .map(|x| format!(" ({x})"))
            .unwrap_or_default();
        match &rec.result {
            SessionOutcome::NotFetched { .. } => {
                self.not_fetched(ri, met, rec, recheck.client, &reason, pass)
            }
            SessionOutcome::Error { .. } => {
                crate::note!("watch: error {}{reason}", rec.file_id);
                pass.pending += 1;
                self.remember_met(met, Judged::Unreadable);
            }
            SessionOutcome::Refused(_) => {
                let refusal = format!("{} {}{reason}", rec.file_id, rec.verdict_str());
                if recheck.streak.as_ref() == Some(&refusal) {
                    pass.repeated += 1;
                } else {
                    crate::note!(
                        "watch: checked {refusal}: no sidecar written (was stale: {})",
                        recheck.why
                    );
                }
                self.refused.insert(met.path.to_path_buf(), refusal);
                pass.refused += 1;
                self.remember_met(met, Judged::Refused);
            }
            SessionOutcome::Verified | SessionOutcome::VerifiedSourceOnly(_) => {
                self.synced(met, r, recheck.why, &reason, pass)
            }
        }
    }

    /// Not fetched: the daemon's failure (a failed probe or a setup status,
    /// a streak of the root's) or this conversation's (logged).
    fn not_fetched(
        &mut self,
        ri: usize,
        met: Met<'_>,
        rec: &SessionRecord,
        client: Option<&DaemonClient>,
        reason: &str,
        pass: &mut Pass,
    ) {
        pass.pending += 1;
        let Some(c) = client else {
            return;
        };
        // The daemon, or this conversation? A failed probe or a
        // setup status (token, listener) is the daemon's: a streak.
        let setup = match c.probe() {
            Err(e) => Some(e.to_string()),
            Ok(()) => match c.load_trajectory(&rec.cascade_id) {
                Err(e) if e.setup_problem() => Some(e.to_string()),
                Err(_) => None,
                Ok(()) => None,
            },
        };
        if let Some(why) = setup {
            self.daemons[ri].fail(&self.opts.roots[ri], why);
            self.remember_met(met, Judged::AwaitingDaemon);
            return;
        }
        crate::note!("watch: not fetched {}{reason}", rec.file_id);
        self.remember_met(met, Judged::NotFetched);
    }

    /// Verified: the sidecar published beside the source (equal bytes
    /// kept), unless what sits there now is foreign or cannot be written.
    fn synced(
        &mut self,
        met: Met<'_>,
        r: &SessionResult,
        why: &Stale,
        reason: &str,
        pass: &mut Pass,
    ) {
        let rec = &r.record;
        let verdict = rec.verdict_str();
        crate::note!(
            "watch: synced {} {verdict}{reason} (was stale: {why})",
            rec.file_id
        );
        let Some(bytes) = &r.sidecar else {
            pass.pending += 1;
            return;
        };
        let side = &met.side;
        let published = crate::sidecars::publish(&crate::sidecars::Publication {
            source: met.path,
            sidecar: side,
            bytes,
            schema: self.schema,
            cascade: &rec.cascade_id,
            cap: self.sidecar_cap(),
            protected: &self.opts.protected,
            replace_foreign: false,
        });
        match published {
            Err(crate::sidecars::PublishError::Foreign { why, .. }) => {
                crate::note!(
                    "watch: refusing {}: not a trajectory sidecar ({why}); left alone, never overwritten",
                    side.display()
                );
                pass.foreign += 1;
            }
            Ok(written) => {
                pass.synced += 1;
                let what = match written {
                    crate::attest::cache::Written::Unchanged => "kept (equal bytes)",
                    _ => {
                        pass.written += 1;
                        "wrote"
                    }
                };
                crate::note!("watch: {what} {} {verdict}{reason}", side.display());
                let observed = met.observed.with_sidecar(side);
                self.remember(met.path, observed, met.at, Judged::Fresh);
            }
            Err(crate::sidecars::PublishError::Write(e)) => {
                crate::note!("watch: cannot write {}: {e}", side.display());
                pass.pending += 1;
            }
        }
    }
}

/// One conversation as a pass met it: its source, its sidecar's path, what
/// was observed of both and when (the key a judgement is kept under).
struct Met<'s> {
    path: &'s Path,
    side: PathBuf,
    observed: Observed,
    at: Instant,
}

/// What settling a re-verification needs besides its result: why the
/// sidecar was stale, the client that fetched (none offline), and the
/// refusal the source's streak was logged with, if in one.
struct Recheck<'c> {
    why: &'c Stale,
    client: Option<&'c DaemonClient>,
    streak: Option<String>,
}

/// The state files `doctor` reads ([`state`]), one per root.
struct Heartbeat {
    dir: Option<PathBuf>,
    states: Vec<state::WatchState>,
    last: Option<Instant>,
}

impl Heartbeat {
    fn new(opts: &WatchOptions, started: String) -> Heartbeat {
        let dir = opts.state_dir.clone().filter(|_| !opts.once);
        let states = opts
            .roots
            .iter()
            .map(|r| state::WatchState {
                pid: std::process::id(),
                root: r.path.display().to_string(),
                started: started.clone(),
                heartbeat: started.clone(),
                heartbeat_unix: state::unix_now(),
                interval_ms: opts.interval.as_millis().try_into().unwrap_or(u64::MAX),
                polls: 0,
                stopped: None,
            })
            .collect();
        Heartbeat {
            dir,
            states,
            last: None,
        }
    }

    /// Writes the heartbeat at most every [`state::HEARTBEAT_EVERY`] (and
    /// always the first and the last); a write error is reported once and
    /// never stops the watch.
    fn beat(&mut self, polls: u64, stopped: bool) {
        let Some(dir) = &self.dir else { return };
        if !stopped
            && self
                .last
                .is_some_and(|t| t.elapsed() < state::HEARTBEAT_EVERY)
        {
            return;
        }
        self.last = Some(Instant::now());
        let now = crate::util::time::now_rfc3339();
        for s in &mut self.states {
            s.heartbeat = now.clone();
            s.heartbeat_unix = state::unix_now();
            s.polls = polls;
            if stopped {
                s.stopped = Some(now.clone());
            }
            if let Err(e) = state::write(dir, s) {
                crate::note!("watch: cannot write the state file for doctor: {e}");
                self.dir = None;
                return;
            }
        }
    }
}

/// `30s`, `10m`, `1h`, `500ms`, `0s` (a bare number is seconds).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{s}`: takes a duration such as 30s, 10m, 1h or 500ms"))?;
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 0.001,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        other => return Err(format!("`{s}`: unknown unit `{other}` (ms, s, m, h, d)")),
    };
    let secs = n * scale;
    if !secs.is_finite() || !(0.0..=365.0 * 86_400.0).contains(&secs) {
        return Err(format!("`{s}`: out of range (0 to 365d)"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A duration as `parse_duration` reads it back (`30s`, `10m`, `250ms`).
pub fn duration_text(d: Duration) -> String {
    let ms = d.as_millis();
    if ms % 3_600_000 == 0 && ms > 0 {
        format!("{}h", ms / 3_600_000)
    } else if ms % 60_000 == 0 && ms > 0 {
        format!("{}m", ms / 60_000)
    } else if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_and_print_back() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("5y").is_err());
        assert!(parse_duration("").is_err());
        for d in ["30s", "10m", "1h", "250ms", "0s"] {
            assert_eq!(duration_text(parse_duration(d).unwrap()), d);
        }
    }
}
