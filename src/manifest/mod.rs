//! Stage 6a: the audit manifest, version 5 (documented in docs/manifest-v5.md),
//! and its CSV companion.

use crate::pipeline::audit::SessionResult;
use crate::source::Format;
use crate::verdict::{Outcome, ReasonClass, VerdictKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub mod merge;

pub const MANIFEST_VERSION: u32 = 5;
pub const MANIFEST_FILE: &str = "manifest.json";
pub const CSV_FILE: &str = "sessions.csv";

/// Verdict counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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

/// One session of the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    pub file_id: String,
    pub cascade_id: String,
    pub format: Format,
    pub profile: String,
    pub source_digest: String,
    pub payload_digest: Option<String>,
    /// `null` when no verdict was reached: not fetched (reasonClass
    /// `daemon-unavailable`) or an error (the source could not be read).
    pub verdict: Option<VerdictKind>,
    pub reason: Option<String>,
    pub reason_class: Option<ReasonClass>,
    #[serde(default)]
    pub rules: Vec<String>,
    pub steps: usize,
    #[serde(default)]
    pub bytes: u64,
    #[serde(default)]
    pub step_types: BTreeMap<String, u64>,
    /// The declared source-only fields of a verified session, as its
    /// attestation records them (`audit-qualify` compares them with what
    /// the current source yields).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_only: Vec<serde_json::Value>,
    /// The daemon this session was fetched from (a resumed sweep may talk
    /// to a restarted daemon on another port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// A verified session's ordinary-response members that the schema does
    /// not know (RPC-only presentation kept in the payload and its digest),
    /// by path, as its attestation records them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rpc_only_fields: Vec<String>,
    /// How many more such members there were past the listed ones.
    #[serde(default, skip_serializing_if = "crate::util::is_zero")]
    pub rpc_only_fields_unlisted: usize,
}

impl SessionRecord {
    pub fn from_result(r: &SessionResult) -> SessionRecord {
        SessionRecord {
            file_id: r.file_id.clone(),
            cascade_id: r.cascade_id.clone(),
            format: r.format,
            profile: r.profile.clone(),
            source_digest: r.source_digest.clone(),
            payload_digest: r.payload_digest.clone(),
            verdict: r.verdict,
            reason: r.reason.clone(),
            reason_class: r.reason_class,
            rules: r.rules.iter().map(|x| x.id().to_string()).collect(),
            steps: r.steps,
            bytes: r.bytes,
            step_types: r.step_types.clone(),
            source_only: if r.verdict == Some(VerdictKind::VerifiedSourceOnly) {
                crate::attest::Completeness::source_only_entries(&r.source_only)
            } else {
                Vec::new()
            },
            endpoint: None,
            rpc_only_fields: r.rpc_only.paths.clone(),
            rpc_only_fields_unlisted: r.rpc_only.more,
        }
    }

    /// A record with the given id, profile and verdict and nothing else
    /// (one step, one byte), for the report modules' tests.
    #[cfg(test)]
    pub(crate) fn for_test(
        id: usize,
        profile: &str,
        verdict: Option<VerdictKind>,
        class: Option<ReasonClass>,
        reason: Option<&str>,
    ) -> SessionRecord {
        SessionRecord {
            file_id: format!("{id:08}"),
            cascade_id: format!("{id:08}"),
            format: if profile.starts_with("legacy") {
                Format::Protobuf
            } else {
                Format::Sqlite
            },
            profile: profile.to_string(),
            source_digest: format!("sha256:{id}"),
            payload_digest: None,
            verdict,
            reason: reason.map(str::to_string),
            reason_class: class,
            rules: Vec::new(),
            steps: 1,
            bytes: 1,
            step_types: Default::default(),
            source_only: Vec::new(),
            endpoint: None,
            rpc_only_fields: Vec::new(),
            rpc_only_fields_unlisted: 0,
        }
    }

    /// Where this session's source lies under the store `root`:
    /// `conversations/<fileId>.db` or `.pb` by its format.
    pub fn source_path(&self, root: &std::path::Path) -> std::path::PathBuf {
        let ext = match self.format {
            Format::Sqlite => "db",
            Format::Protobuf => "pb",
        };
        root.join("conversations")
            .join(format!("{}.{ext}", self.file_id))
    }

    /// The record's outcome: a verdict, not fetched, or an error.
    pub fn outcome(&self) -> Outcome {
        Outcome::of(self.verdict, self.reason_class)
    }

    /// The refusal's (or failure's) class, when the session was not verified.
    pub fn class(&self) -> Option<ReasonClass> {
        self.reason_class
    }

    /// Why the session was not verified, as the manifest words it
    /// (`location: detail (rule-id)`), when it was not.
    pub fn reason_text(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// `verified`, `verified-source-only`, `unknown`, `incomplete`,
    /// `not-fetched` or `error`.
    pub fn verdict_str(&self) -> &'static str {
        self.outcome().as_str()
    }

    /// A verdict was reached (not `not-fetched`, not `error`): `--resume`
    /// keeps it; everything else is retried.
    pub fn settled(&self) -> bool {
        matches!(self.outcome(), Outcome::Verdict(_))
    }
}

/// Run timing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timing {
    pub wall_seconds: f64,
    pub source_bytes: u64,
    pub steps: u64,
    pub concurrency: usize,
    pub jobs: usize,
}

/// The manifest document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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
    pub merged: Option<merge::Merged>,
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
    /// Sorted by fileId.
    pub sessions: Vec<SessionRecord>,
}

/// A file discovery passed over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
            sessions: Vec::new(),
        }
    }

    /// Adds a session (replacing one with the same fileId) and recounts.
    pub fn add(&mut self, s: SessionRecord) {
        match self
            .sessions
            .binary_search_by(|x| x.file_id.cmp(&s.file_id))
        {
            Ok(i) => self.sessions[i] = s,
            Err(i) => self.sessions.insert(i, s),
        }
        self.recount();
    }

    pub fn recount(&mut self) {
        let mut counts = Counts::default();
        let mut by_profile: BTreeMap<String, Counts> = BTreeMap::new();
        let mut by_format: BTreeMap<String, Counts> = BTreeMap::new();
        for s in &self.sessions {
            counts.add(s);
            if !s.profile.is_empty() {
                by_profile.entry(s.profile.clone()).or_default().add(s);
            }
            by_format
                .entry(s.format.as_str().to_string())
                .or_default()
                .add(s);
        }
        self.profiles = by_profile.keys().cloned().collect();
        self.counts = counts;
        self.counts_by_profile = by_profile;
        self.counts_by_format = by_format;
        self.timing.steps = self.sessions.iter().map(|s| s.steps as u64).sum();
        self.timing.source_bytes = self.sessions.iter().map(|s| s.bytes).sum();
    }

    pub fn to_json(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(self).unwrap_or_default();
        v.push(b'\n');
        v
    }

    /// Parses a manifest, requiring version 5.
    pub fn parse(bytes: &[u8]) -> Result<Manifest, String> {
        let v: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
        match v.get("manifestVersion").and_then(serde_json::Value::as_u64) {
            Some(5) => {}
            Some(n) => {
                return Err(format!(
                    "manifestVersion {n}; audit-qualify requires version 5"
                ))
            }
            None => return Err("no manifestVersion; audit-qualify requires version 5".into()),
        }
        serde_json::from_value(v).map_err(|e| format!("not a version-5 manifest: {e}"))
    }

    /// The CSV companion: one row per session.
    pub fn to_csv(&self) -> Vec<u8> {
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
        ]);
        for s in &self.sessions {
            let _ = w.write_record([
                s.file_id.as_str(),
                &s.cascade_id,
                s.format.as_str(),
                &s.profile,
                &s.source_digest,
                s.payload_digest.as_deref().unwrap_or(""),
                s.verdict_str(),
                s.reason_class.map(ReasonClass::id).unwrap_or(""),
                s.reason.as_deref().unwrap_or(""),
                &s.steps.to_string(),
                &s.bytes.to_string(),
            ]);
        }
        w.into_inner().unwrap_or_default()
    }
}
