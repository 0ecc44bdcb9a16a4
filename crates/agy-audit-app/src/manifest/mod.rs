//! Stage 6a: the audit manifest, version 5 (documented in docs/manifest-v5.md),
//! and its CSV companion.

use crate::outcome::{Refused, SessionOutcome, SOURCE_ONLY_REASON};
use crate::source::source_only::SourceOnlyEntry;
use crate::source::Format;
use crate::verdict::{Outcome, ReasonClass, VerdictKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub mod merge;
pub mod read;
pub mod redaction;

pub use redaction::Redaction;

pub const MANIFEST_VERSION: u32 = 5;
pub use crate::well_known::MANIFEST_FILE;
pub const CSV_FILE: &str = "sessions.csv";

/// `v` as pretty JSON and a newline (only the newline when it does not
/// serialize), in a buffer of exactly that size: the text is measured
/// first, so a 170 MB manifest or diff is never a buffer grown by doubling
/// (up to twice its size, and a copy at each step).
pub fn pretty_json_line<T: Serialize + ?Sized>(v: &T) -> Vec<u8> {
    struct Measure(usize);
    impl std::io::Write for Measure {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut size = Measure(0);
    let mut out = match serde_json::to_writer_pretty(&mut size, v) {
        Ok(()) => Vec::with_capacity(size.0 + 1),
        Err(_) => Vec::with_capacity(1),
    };
    if serde_json::to_writer_pretty(&mut out, v).is_err() {
        out.clear();
    }
    out.push(b'\n');
    out
}

/// Verdict counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Counts {
    pub selected: u64,
    /// Plain verified results only.
    pub verified: u64,
    pub verified_source_only: u64,
    pub sqlite: u64,
    pub protobuf: u64,
    /// Failures across both formats (unknown + incomplete + not fetched + error).
    pub not_verified: u64,
    /// The legacy (protobuf) subset of `notVerified`.
    pub legacy_unverifiable: u64,
    pub unknown: u64,
    pub incomplete: u64,
    /// Sessions the daemon could not be used for (no verdict; retried by `--resume`).
    #[serde(default)]
    pub not_fetched: u64,
    /// Sources that could not be read (no verdict).
    pub error: u64,
}

impl Counts {
    /// `selected=N verified=N verifiedSourceOnly=N unknown=N incomplete=N
    /// notFetched=N error=N`: the counts as a command's summary line says them.
    pub fn summary(&self) -> String {
        format!(
            "selected={} verified={} verifiedSourceOnly={} unknown={} incomplete={} notFetched={} error={}",
            self.selected,
            self.verified,
            self.verified_source_only,
            self.unknown,
            self.incomplete,
            self.not_fetched,
            self.error
        )
    }

    pub fn add(&mut self, s: &SessionRecord) {
        self.selected += 1;
        match s.format {
            Format::Sqlite => self.sqlite += 1,
            Format::Protobuf => self.protobuf += 1,
        }
        let failed = match s.outcome() {
            Outcome::Verdict(VerdictKind::Verified) => {
                self.verified += 1;
                false
            }
            Outcome::Verdict(VerdictKind::VerifiedSourceOnly) => {
                self.verified_source_only += 1;
                false
            }
            Outcome::Verdict(VerdictKind::Unknown) => {
                self.unknown += 1;
                true
            }
            Outcome::Verdict(VerdictKind::Incomplete) => {
                self.incomplete += 1;
                true
            }
            Outcome::NotFetched => {
                self.not_fetched += 1;
                true
            }
            Outcome::Error => {
                self.error += 1;
                true
            }
        };
        if failed {
            self.not_verified += 1;
            if s.format == Format::Protobuf {
                self.legacy_unverifiable += 1;
            }
        }
    }
}

/// One session of the manifest: what the audit found ([`SessionOutcome`])
/// and the source it found it about. The audit builds it
/// (`pipeline::SessionResult::record`), the sweep's writer adds the
/// endpoint; its JSON form is [`SessionWire`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "SessionWire", into = "SessionWire")]
pub struct SessionRecord {
    pub file_id: String,
    pub cascade_id: String,
    pub format: Format,
    pub profile: String,
    pub source_digest: String,
    /// `sha256:` of the canonical ordinary response (verified only).
    pub payload_digest: Option<String>,
    /// How the audit ended: read it with [`Self::outcome`],
    /// [`Self::class`], [`Self::reason_text`] or match it.
    pub result: SessionOutcome,
    /// The qualified projection rules the session's presentation used, by id.
    pub rules: Vec<String>,
    pub steps: usize,
    pub bytes: u64,
    /// Steps by type name (CORTEX_STEP_TYPE_ prefix dropped).
    pub step_types: BTreeMap<String, u64>,
    /// The daemon this session was fetched from (a resumed sweep may talk
    /// to a restarted daemon on another port); set by the sweep's writer.
    pub endpoint: Option<String>,
    /// A verified session's ordinary-response members that the schema does
    /// not know (RPC-only presentation kept in the payload and its digest),
    /// by path, as its attestation records them.
    pub rpc_only_fields: Vec<String>,
    /// How many more such members there were past the listed ones.
    pub rpc_only_fields_unlisted: usize,
}

/// A session as manifest version 5 spells it (docs/manifest-v5.md): the
/// outcome in four loose members. Only [`SessionRecord`]'s conversions make
/// or read it, so the bytes on disk stay exactly these members in this
/// order, and a combination the audit never writes is refused on reading
/// (fail closed) rather than re-derived into some outcome.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SessionWire {
    file_id: String,
    cascade_id: String,
    format: Format,
    profile: String,
    source_digest: String,
    payload_digest: Option<String>,
    /// `null` when no verdict was reached: not fetched (reasonClass
    /// `daemon-unavailable`) or an error (the source could not be read).
    verdict: Option<VerdictKind>,
    reason: Option<String>,
    reason_class: Option<ReasonClass>,
    #[serde(default)]
    rules: Vec<String>,
    steps: usize,
    #[serde(default)]
    bytes: u64,
    #[serde(default)]
    step_types: BTreeMap<String, u64>,
    /// The declared source-only fields of a verified-source-only session,
    /// as its attestation records them (`audit-qualify` compares them with
    /// what the current source yields).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    source_only: Vec<SourceOnlyEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    rpc_only_fields: Vec<String>,
    #[serde(default, skip_serializing_if = "crate::util::is_zero")]
    rpc_only_fields_unlisted: usize,
}

impl From<SessionRecord> for SessionWire {
    fn from(r: SessionRecord) -> SessionWire {
        let (verdict, reason, reason_class) = (
            r.result.verdict(),
            r.result.reason_text().map(str::to_string),
            r.result.class(),
        );
        SessionWire {
            file_id: r.file_id,
            cascade_id: r.cascade_id,
            format: r.format,
            profile: r.profile,
            source_digest: r.source_digest,
            payload_digest: r.payload_digest,
            verdict,
            reason,
            reason_class,
            rules: r.rules,
            steps: r.steps,
            bytes: r.bytes,
            step_types: r.step_types,
            source_only: match r.result {
                SessionOutcome::VerifiedSourceOnly(entries) => entries,
                _ => Vec::new(),
            },
            endpoint: r.endpoint,
            rpc_only_fields: r.rpc_only_fields,
            rpc_only_fields_unlisted: r.rpc_only_fields_unlisted,
        }
    }
}

/// Why a session of a manifest does not read as an outcome.
#[derive(Debug, thiserror::Error)]
#[error("session {file_id}: {problem}")]
pub struct SessionWireError {
    pub file_id: String,
    pub problem: String,
}

impl TryFrom<SessionWire> for SessionRecord {
    type Error = SessionWireError;

    fn try_from(w: SessionWire) -> Result<SessionRecord, SessionWireError> {
        let result = wire_outcome(&w).map_err(|problem| SessionWireError {
            file_id: w.file_id.clone(),
            problem,
        })?;
        Ok(SessionRecord {
            file_id: w.file_id,
            cascade_id: w.cascade_id,
            format: w.format,
            profile: w.profile,
            source_digest: w.source_digest,
            payload_digest: w.payload_digest,
            result,
            rules: w.rules,
            steps: w.steps,
            bytes: w.bytes,
            step_types: w.step_types,
            endpoint: w.endpoint,
            rpc_only_fields: w.rpc_only_fields,
            rpc_only_fields_unlisted: w.rpc_only_fields_unlisted,
        })
    }
}

/// The outcome the loose members spell, when they spell one the audit
/// writes: a verdict with its class exactly when refused (and the class's
/// own verdict), a reason exactly when the audit gives one, source-only
/// entries only on a verified-source-only session. Manifests written before
/// not-fetched sessions lost their verdict (`unknown` with class
/// `daemon-unavailable`) read as such refusals, which `audit-qualify`
/// refuses as it always did.
fn wire_outcome(w: &SessionWire) -> Result<SessionOutcome, String> {
    let reason = || {
        w.reason
            .clone()
            .ok_or_else(|| "no reason for a session that was not verified".to_string())
    };
    if !w.source_only.is_empty() && w.verdict != Some(VerdictKind::VerifiedSourceOnly) {
        return Err(format!(
            "sourceOnly on a session that is not verified-source-only ({})",
            w.verdict.map_or("null", VerdictKind::as_str)
        ));
    }
    let outcome = match (w.verdict, w.reason_class) {
        (Some(VerdictKind::Verified), None) => match &w.reason {
            None => SessionOutcome::Verified,
            Some(r) => return Err(format!("a verified session with a reason ({r:?})")),
        },
        (Some(VerdictKind::VerifiedSourceOnly), None) => {
            if w.reason.as_deref() != Some(SOURCE_ONLY_REASON) {
                return Err(format!(
                    "a verified-source-only session's reason is {:?}, not {SOURCE_ONLY_REASON:?}",
                    w.reason
                ));
            }
            SessionOutcome::VerifiedSourceOnly(w.source_only.clone())
        }
        (Some(v), Some(class)) if class.verdict() == v => {
            SessionOutcome::Refused(Refused::recorded(class, reason()?))
        }
        (None, Some(ReasonClass::DaemonUnavailable)) => {
            SessionOutcome::NotFetched { reason: reason()? }
        }
        (None, None) => SessionOutcome::Error { reason: reason()? },
        (v, c) => {
            return Err(format!(
                "verdict {} with reasonClass {} is no outcome the audit records",
                v.map_or("null", VerdictKind::as_str),
                c.map_or("null", ReasonClass::id)
            ))
        }
    };
    Ok(outcome)
}

impl SessionRecord {
    /// A record with the given id (as a conversation id,
    /// [`Self::test_id`]), profile and outcome and nothing else (one step,
    /// one byte), for the report modules' tests.
    #[cfg(test)]
    pub(crate) fn for_test(id: usize, profile: &str, result: SessionOutcome) -> SessionRecord {
        SessionRecord {
            file_id: Self::test_id(id),
            cascade_id: Self::test_id(id),
            format: if profile.starts_with("legacy") {
                Format::Protobuf
            } else {
                Format::Sqlite
            },
            profile: profile.to_string(),
            source_digest: format!("sha256:{id}"),
            payload_digest: None,
            result,
            rules: Vec::new(),
            steps: 1,
            bytes: 1,
            step_types: Default::default(),
            endpoint: None,
            rpc_only_fields: Vec::new(),
            rpc_only_fields_unlisted: 0,
        }
    }

    /// The conversation id [`Self::for_test`] gives the number `id`.
    #[cfg(test)]
    pub(crate) fn test_id(id: usize) -> String {
        format!("{id:08}-0000-4000-8000-000000000000")
    }

    /// Where this session's source lies under the store `root`:
    /// `conversations/<fileId>.db` or `.pb` by its format.
    pub fn source_path(&self, root: &std::path::Path) -> std::path::PathBuf {
        root.join("conversations").join(self.source_file_name())
    }

    /// The source's file name in its `conversations/` folder:
    /// `<fileId>.db` or `<fileId>.pb`.
    pub fn source_file_name(&self) -> String {
        let ext = match self.format {
            Format::Sqlite => "db",
            Format::Protobuf => "pb",
        };
        format!("{}.{ext}", self.file_id)
    }

    /// The record's outcome: a verdict, not fetched, or an error.
    pub fn outcome(&self) -> Outcome {
        self.result.kind()
    }

    /// The refusal's (or failure's) class, when the session was not
    /// verified: `daemon-unavailable` when it was not fetched, none for an
    /// error.
    pub fn class(&self) -> Option<ReasonClass> {
        self.result.class()
    }

    /// Why the session was not verified, as the manifest words it
    /// (`location: detail (rule-id)`), or the source-only reason; none when
    /// plainly verified.
    pub fn reason_text(&self) -> Option<&str> {
        self.result.reason_text()
    }

    /// `verified`, `verified-source-only`, `unknown`, `incomplete`,
    /// `not-fetched` or `error`.
    pub fn verdict_str(&self) -> &'static str {
        self.outcome().as_str()
    }

    /// A verdict was reached (not `not-fetched`, not `error`): `--resume`
    /// keeps it; everything else is retried.
    pub fn settled(&self) -> bool {
        self.result.settled()
    }
}

/// Every figure of a manifest that its sessions determine: what
/// [`Manifest::recount`] writes and what the strict reader
/// ([`read::check`]) holds the recorded figures to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recount {
    pub counts: Counts,
    pub counts_by_profile: BTreeMap<String, Counts>,
    pub counts_by_format: BTreeMap<String, Counts>,
    /// The profiles that minted a result, sorted.
    pub profiles: Vec<String>,
    pub steps: u64,
    pub source_bytes: u64,
}

impl Recount {
    pub fn of(sessions: &[SessionRecord]) -> Recount {
        let mut r = Recount::default();
        for s in sessions {
            Figures {
                counts: &mut r.counts,
                by_profile: &mut r.counts_by_profile,
                by_format: &mut r.counts_by_format,
                steps: &mut r.steps,
                source_bytes: &mut r.source_bytes,
            }
            .add(s);
        }
        r.profiles = r.counts_by_profile.keys().cloned().collect();
        r
    }
}

/// The figures one session adds to, wherever they are kept (a
/// [`Recount`], or a manifest's own fields): the one definition of a
/// session's share.
struct Figures<'a> {
    counts: &'a mut Counts,
    by_profile: &'a mut BTreeMap<String, Counts>,
    by_format: &'a mut BTreeMap<String, Counts>,
    steps: &'a mut u64,
    source_bytes: &'a mut u64,
}

impl Figures<'_> {
    fn add(self, s: &SessionRecord) {
        self.counts.add(s);
        if !s.profile.is_empty() {
            self.by_profile.entry(s.profile.clone()).or_default().add(s);
        }
        self.by_format
            .entry(s.format.as_str().to_string())
            .or_default()
            .add(s);
        *self.steps += s.steps as u64;
        *self.source_bytes += s.bytes;
    }
}

/// Run timing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Timing {
    pub wall_seconds: f64,
    pub source_bytes: u64,
    pub steps: u64,
    pub concurrency: usize,
    pub jobs: usize,
}

/// The manifest document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    pub manifest_version: u32,
    pub complete: bool,
    pub root: String,
    pub endpoint: String,
    pub started: String,
    pub finished: Option<String>,
    /// Every profile that minted a result, sorted.
    pub profiles: Vec<String>,
    pub counts: Counts,
    pub counts_by_profile: BTreeMap<String, Counts>,
    pub counts_by_format: BTreeMap<String, Counts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// How a shard's sessions were chosen: `sha256-fileid`
    /// ([`crate::pipeline::shard::shard_of`]); set with `shard`. A shard
    /// manifest without it followed listing position (older sweeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_by: Option<String>,
    /// `true` when a shard selected no conversation (legitimate: it is
    /// judged when the shards are merged); omitted otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub empty_shard: bool,
    /// The profiles a shard's reader mints (SQLite and legacy), whether or
    /// not its sessions used them, so that `manifest merge` can check that
    /// every shard, an empty one too, ran the same reader; set with `shard`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reader_profiles: Vec<String>,
    /// What `manifest merge` merged, on a merged manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<Merged>,
    pub timing: Timing,
    /// The shape listings of the answers received (`shapes-ordinary.tsv`
    /// and `shapes-full.tsv` beside the manifest, [`crate::shapes`]), with
    /// their fingerprints and entry counts; absent in older manifests and
    /// in a sweep that has not finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shapes: Option<crate::shapes::Shapes>,
    /// `agy --version` as the sweeping machine's PATH answered it, when agy
    /// was on PATH. Not proof of which daemon answered (see
    /// `installedAgyVersionNote`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed_agy_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed_agy_version_note: Option<String>,
    /// Files under `conversations/` that are not conversations (not a
    /// `.db`/`.pb`, not a regular file, no UUID name), with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
    /// How the sessions' reasons were written (issue 46, [`redaction`]):
    /// redacted, counted when a reason holds a redaction marker, else
    /// absent (recomputed from the reasons at every write); or
    /// `{"redacted": false}` (`--no-redact`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redaction: Option<Redaction>,
    /// Sorted by fileId.
    pub sessions: Vec<SessionRecord>,
}

/// What a merge merged, recorded in the merged manifest as `merged`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Merged {
    /// The shard count n all shards share.
    pub shard_count: usize,
    /// The shards merged, by index.
    pub shards: Vec<MergedShard>,
    /// Shard indexes 1..n that were not given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<usize>,
    /// Why the merged manifest is not complete, one line each (empty when it is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// One merged shard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MergedShard {
    /// `i/n`.
    pub shard: String,
    /// The manifest file as given.
    pub file: String,
    pub sessions: usize,
    pub complete: bool,
}

/// A file discovery passed over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

impl Manifest {
    pub fn new(root: &str, endpoint: &str, started: String) -> Manifest {
        Manifest {
            manifest_version: MANIFEST_VERSION,
            complete: false,
            root: root.to_string(),
            endpoint: endpoint.to_string(),
            started,
            finished: None,
            profiles: Vec::new(),
            counts: Counts::default(),
            counts_by_profile: BTreeMap::new(),
            counts_by_format: BTreeMap::new(),
            shard: None,
            shard_by: None,
            empty_shard: false,
            reader_profiles: Vec::new(),
            merged: None,
            timing: Timing::default(),
            shapes: None,
            installed_agy_version: None,
            installed_agy_version_note: None,
            skipped: Vec::new(),
            redaction: None,
            sessions: Vec::new(),
        }
    }

    /// The mode this manifest is written in (its `redaction` member).
    pub fn redaction_mode(&self) -> crate::redact::Mode {
        redaction::mode_of(self.redaction.as_ref())
    }

    /// Sets the mode the next writes use: `--no-redact` records
    /// `{"redacted": false}` and leaves every reason as it is; otherwise
    /// every reason (an earlier run's or another shard's too) is redacted
    /// when written ([`redaction`]'s "later writers").
    pub fn set_redaction_mode(&mut self, mode: crate::redact::Mode) {
        self.redaction = match mode {
            crate::redact::Mode::Off => Some(Redaction::NotRedacted),
            crate::redact::Mode::Redact => self
                .redaction
                .take()
                .filter(|r| *r != Redaction::NotRedacted),
        };
    }

    /// `audit-sweep --json`'s `redaction` member: how this manifest's
    /// reasons are written.
    pub fn redaction_summary(&self) -> serde_json::Value {
        redaction::summary_member(self.as_written().redaction.as_ref())
    }

    /// This manifest as written: with `--no-redact` (`redaction:
    /// {"redacted": false}`) as it is; otherwise every session's reason
    /// passed through the redactor ([`crate::redact`]) after its location,
    /// which is kept as recorded (`audit-qualify`'s recheck compares the
    /// location, class and rule, never the wording), and `redaction`
    /// counting the markers the reasons hold. Borrowed as is when no reason
    /// holds a secret.
    fn as_written(&self) -> std::borrow::Cow<'_, Manifest> {
        if self.redaction_mode() == crate::redact::Mode::Off {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut tally = crate::redact::Redactions::default();
        let mut changed: Vec<(usize, SessionOutcome)> = Vec::new();
        for (i, s) in self.sessions.iter().enumerate() {
            let Some((head, detail)) = redaction::split_reason(&s.result) else {
                continue;
            };
            let mut fresh = crate::redact::Redactions::default();
            let shown = fresh.apply(detail);
            tally.count_markers(&shown);
            if let std::borrow::Cow::Owned(d) = shown {
                let text = format!("{head}{d}");
                changed.push((
                    i,
                    match &s.result {
                        SessionOutcome::Refused(r) => SessionOutcome::Refused(
                            crate::outcome::Refused::recorded(r.class(), text),
                        ),
                        SessionOutcome::NotFetched { .. } => {
                            SessionOutcome::NotFetched { reason: text }
                        }
                        SessionOutcome::Error { .. } => SessionOutcome::Error { reason: text },
                        other => other.clone(),
                    },
                ));
            }
        }
        let redaction = Redaction::of_tally(&tally);
        if changed.is_empty() && redaction == self.redaction {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut m = self.clone();
        for (i, o) in changed {
            m.sessions[i].result = o;
        }
        m.redaction = redaction;
        std::borrow::Cow::Owned(m)
    }

    /// Adds a session (replacing one with the same fileId), its figures
    /// kept equal to [`Recount::of`] the sessions.
    ///
    /// A new session adds its share to the figures (a sweep adds every
    /// session, and recounting them all each time cost the square of the
    /// store: issue 49 item 5), when the figures before are those of the
    /// sessions as far as one cheap look tells (as many selected as there
    /// are sessions); a replaced session, or a manifest whose sessions were
    /// added or removed without [`Self::recount`], is recounted whole. A
    /// session changed in place without a recount is not noticed: whoever
    /// changes one recounts (as every such place in the tool does).
    pub fn add(&mut self, s: SessionRecord) {
        match self
            .sessions
            .binary_search_by(|x| x.file_id.cmp(&s.file_id))
        {
            Ok(i) => {
                self.sessions[i] = s;
                self.recount();
            }
            Err(i) if self.counts.selected == self.sessions.len() as u64 => {
                Figures {
                    counts: &mut self.counts,
                    by_profile: &mut self.counts_by_profile,
                    by_format: &mut self.counts_by_format,
                    steps: &mut self.timing.steps,
                    source_bytes: &mut self.timing.source_bytes,
                }
                .add(&s);
                if !s.profile.is_empty() {
                    if let Err(at) = self.profiles.binary_search(&s.profile) {
                        self.profiles.insert(at, s.profile.clone());
                    }
                }
                self.sessions.insert(i, s);
            }
            Err(i) => {
                self.sessions.insert(i, s);
                self.recount();
            }
        }
    }

    /// Sets every figure derived from the sessions ([`Recount`]).
    pub fn recount(&mut self) {
        let r = Recount::of(&self.sessions);
        self.profiles = r.profiles;
        self.counts = r.counts;
        self.counts_by_profile = r.counts_by_profile;
        self.counts_by_format = r.counts_by_format;
        self.timing.steps = r.steps;
        self.timing.source_bytes = r.source_bytes;
    }

    pub fn to_json(&self) -> Vec<u8> {
        pretty_json_line(&*self.as_written())
    }

    /// The CSV companion: one row per session, its last column
    /// (`redaction`) saying how the row's reason was written.
    pub fn to_csv(&self) -> Vec<u8> {
        let written = self.as_written();
        let mut w = csv::Writer::from_writer(Vec::new());
        let _ = w.write_record([
            "fileId",
            "cascadeId",
            "format",
            "profile",
            "sourceDigest",
            "payloadDigest",
            "verdict",
            "reasonClass",
            "reason",
            "steps",
            "bytes",
            redaction::CSV_COLUMN,
        ]);
        for s in &written.sessions {
            let _ = w.write_record([
                s.file_id.as_str(),
                &s.cascade_id,
                s.format.as_str(),
                &s.profile,
                &s.source_digest,
                s.payload_digest.as_deref().unwrap_or(""),
                s.verdict_str(),
                s.class().map(ReasonClass::id).unwrap_or(""),
                s.reason_text().unwrap_or(""),
                &s.steps.to_string(),
                &s.bytes.to_string(),
                &redaction::csv_cell(written.redaction_mode(), &s.result),
            ]);
        }
        w.into_inner().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures a manifest holds, as one value to compare.
    fn figures(m: &Manifest) -> Recount {
        Recount {
            counts: m.counts.clone(),
            counts_by_profile: m.counts_by_profile.clone(),
            counts_by_format: m.counts_by_format.clone(),
            profiles: m.profiles.clone(),
            steps: m.timing.steps,
            source_bytes: m.timing.source_bytes,
        }
    }

    /// Issue 49 item 5: `add` keeps every figure equal to a recount of the
    /// sessions, a new session by its share alone: sessions in any order,
    /// new profiles and formats, outcomes of every kind, replacements, and
    /// sessions changed behind its back (then it recounts).
    #[test]
    fn adding_keeps_the_figures_of_a_recount() {
        use crate::verdict::Refusal;
        let outcomes = [
            SessionOutcome::Verified,
            SessionOutcome::refused(Refusal::new(ReasonClass::UnknownField, "p", "d")),
            SessionOutcome::NotFetched {
                reason: "down".into(),
            },
            SessionOutcome::Error {
                reason: "bad".into(),
            },
        ];
        let profiles = ["sqlite-a", "sqlite-b", "legacy-c", ""];
        let mut m = Manifest::new("/store", "e", "2026-01-01T00:00:00Z".into());
        let mut state = 7u64;
        for n in 0..300usize {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            let pick = (state >> 33) as usize;
            let id = pick % 120;
            let mut r = SessionRecord::for_test(
                id,
                profiles[pick % profiles.len()],
                outcomes[(pick / 7) % outcomes.len()].clone(),
            );
            r.steps = pick % 50;
            r.bytes = (pick % 1000) as u64;
            if n == 150 {
                // A session changed without a recount: the next add sees
                // figures that are not the sessions' and recounts them.
                m.sessions.push(SessionRecord::for_test(
                    999,
                    "sqlite-z",
                    SessionOutcome::Verified,
                ));
            }
            m.add(r);
            assert_eq!(figures(&m), Recount::of(&m.sessions), "after add {n}");
        }
        assert!(m.sessions.windows(2).all(|w| w[0].file_id < w[1].file_id));
    }

    /// Issue 46: a reason quoting a credential is written redacted after
    /// its location, in the manifest and the CSV, which name the count;
    /// class, location and rule read back the same; a clean manifest
    /// carries no `redaction` member.
    #[test]
    fn written_reasons_are_redacted_after_their_location() {
        use crate::verdict::Refusal;
        const KEY: &str = "AKIAQ3EGRSNDW5TKXM7P";
        let mut m = Manifest::new("/store", "e", "2026-01-01T00:00:00Z".into());
        m.add(SessionRecord::for_test(
            1,
            "sqlite-p",
            SessionOutcome::Verified,
        ));
        let clean = String::from_utf8(m.to_json()).unwrap();
        assert!(!clean.contains("redaction"), "{clean}");
        let refusal = Refusal::new(
            ReasonClass::UnknownField,
            "steps[4].runCommand",
            format!("value {KEY} (passthrough)"),
        );
        let original = SessionOutcome::refused(refusal);
        m.add(SessionRecord::for_test(2, "sqlite-p", original.clone()));
        let json = String::from_utf8(m.to_json()).unwrap();
        let csv = String::from_utf8(m.to_csv()).unwrap();
        for text in [&json, &csv] {
            assert!(!text.contains(KEY), "{text}");
            assert!(
                text.contains(
                    "steps[4].runCommand: value [REDACTED:aws-access-token] (passthrough)"
                ),
                "{text}"
            );
        }
        let back: Manifest = serde_json::from_str(&json).unwrap();
        assert!(
            matches!(back.redaction, Some(Redaction::Redacted { total: 1, .. })),
            "{:?}",
            back.redaction
        );
        let s = &back.sessions[1];
        assert_eq!(s.class(), original.class());
        assert_eq!(s.outcome(), original.kind());
        let (a, b) = (s.result.refusal().unwrap(), original.refusal().unwrap());
        assert_eq!(a.rule(), b.rule());
        assert!(a.text().starts_with("steps[4].runCommand: "));
        // Written again (a resumed sweep, a merge): the same bytes.
        assert_eq!(back.to_json(), m.to_json());
    }

    /// The captured default-corpus manifest (which CI re-qualifies) reads
    /// back and writes out byte for byte: the typed record changes nothing
    /// on disk.
    #[test]
    fn the_default_corpus_manifest_round_trips_byte_for_byte() {
        let bytes = include_bytes!("../../../../manifests/default-corpus.manifest.json");
        let m = read::parse_strict(bytes).expect("the captured manifest parses");
        assert!(m.sessions.len() > 100, "{}", m.sessions.len());
        let again = m.to_json();
        assert!(again == bytes, "the manifest changed on a round trip");
    }

    fn entry() -> SourceOnlyEntry {
        serde_json::from_value(serde_json::json!({
            "field": "exa.cortex_pb.CascadePlannerConfig.50",
            "declaredPaths": ["a"],
            "occurrences": 1,
            "sha256": "sha256:00",
            "locations": [{"location": "a", "payload": "00"}],
        }))
        .expect("an entry reads")
    }

    /// Every outcome writes as the loose members and reads back as itself.
    #[test]
    fn each_outcome_round_trips_through_its_wire_members() {
        let outcomes = [
            SessionOutcome::Verified,
            SessionOutcome::VerifiedSourceOnly(vec![entry()]),
            SessionOutcome::Refused(Refused::recorded(
                ReasonClass::FullMismatch,
                "steps[1]: differs".into(),
            )),
            SessionOutcome::NotFetched {
                reason: "HTTP 500".into(),
            },
            SessionOutcome::Error {
                reason: "unreadable".into(),
            },
        ];
        for o in outcomes {
            let r = SessionRecord::for_test(1, "p", o);
            let v = serde_json::to_value(&r).unwrap();
            assert_eq!(
                v["verdict"].as_str(),
                r.result.verdict().map(VerdictKind::as_str)
            );
            assert_eq!(v["reasonClass"].as_str(), r.class().map(ReasonClass::id));
            assert_eq!(v["reason"].as_str(), r.reason_text());
            let back: SessionRecord = serde_json::from_value(v).unwrap();
            assert_eq!(back, r);
        }
    }

    /// A combination the audit never writes is refused, never re-derived.
    #[test]
    fn members_that_spell_no_outcome_are_refused() {
        let good = serde_json::to_value(SessionRecord::for_test(
            1,
            "p",
            SessionOutcome::VerifiedSourceOnly(vec![entry()]),
        ))
        .unwrap();
        let edits: [(&str, serde_json::Value); 7] = [
            ("verdict", "verified".into()),
            ("reason", "other".into()),
            ("reasonClass", "full-mismatch".into()),
            ("verdict", "unknown".into()),
            ("verdict", serde_json::Value::Null),
            (
                "sourceOnly",
                serde_json::json!([{"field": "x", "extra": 1}]),
            ),
            ("reason", serde_json::Value::Null),
        ];
        for (key, value) in edits {
            let mut v = good.clone();
            v[key] = value;
            let got = serde_json::from_value::<SessionRecord>(v);
            assert!(got.is_err(), "{key} edited: {got:?}");
        }
        let mut refused = serde_json::to_value(SessionRecord::for_test(
            1,
            "p",
            SessionOutcome::refused(crate::verdict::Refusal::new(
                ReasonClass::FullMismatch,
                "",
                "x",
            )),
        ))
        .unwrap();
        refused["verdict"] = "unknown".into();
        assert!(serde_json::from_value::<SessionRecord>(refused).is_err());
    }
}
