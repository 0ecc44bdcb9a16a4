//! One conversation, end to end: decode, project, bracketed fetch, compare,
//! attest. The sweep runs this per source across its stages; `sync` runs it once.

use crate::attest::{payload_digest, sidecar_bytes, Completeness, SOURCE_ONLY_REASON};
use crate::compare::{compare_full, compare_ordinary_projection, parse_value};
use crate::project::{project, Projection};
use crate::rpc::{DaemonClient, RpcError, TrajectoryResponse};
use crate::rules::RuleId;
use crate::schema::Schema;
use crate::source::legacy::LegacyKey;
use crate::source::source_only::{record, SourceOnlyEntry};
use crate::source::{read_source, unchanged, DecodedSource, Format, ReadOptions};
use crate::verdict::{ReasonClass, Refusal, VerdictKind};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The outcome of one conversation.
#[derive(Debug, Clone)]
pub struct SessionResult {
    pub file_id: String,
    pub cascade_id: String,
    pub path: PathBuf,
    pub format: Format,
    pub profile: String,
    pub source_digest: String,
    pub payload_digest: Option<String>,
    /// `None` when reading the source failed with an error.
    pub verdict: Option<VerdictKind>,
    pub reason: Option<String>,
    pub reason_class: Option<ReasonClass>,
    pub rules: Vec<RuleId>,
    pub steps: usize,
    pub source_only: Vec<SourceOnlyEntry>,
    /// The raw bodies received (full, ordinary), kept for the corpus.
    pub full_body: Option<Vec<u8>>,
    pub ordinary_body: Option<Vec<u8>>,
    /// The sidecar document's bytes ([`sidecar_bytes`]), when verified.
    pub sidecar: Option<Vec<u8>>,
    pub bytes: u64,
    /// Steps by type name (CORTEX_STEP_TYPE_ prefix dropped).
    pub step_types: BTreeMap<String, u64>,
    /// The ordinary response's members the schema does not know (verified
    /// sessions only; see `compare::compare_ordinary`).
    pub rpc_only: crate::compare::value::RpcOnly,
    /// The fetch was abandoned (Ctrl-C) or the daemon went away: nothing
    /// about this session is known, so the sweep does not record it and
    /// `--resume` fetches it again.
    pub abandoned: bool,
}

/// Where a conversation's two answers come from: the daemon
/// ([`DaemonClient`]: LoadTrajectory, then the full and the ordinary
/// GetCascadeTrajectory in flight together) or captured files
/// ([`Captured`]). The audit brackets whichever it is with two source
/// snapshots and judges the answers the same way.
pub trait Answers: Sync {
    /// The full (unrehydrated) and the ordinary answer for `cascade`.
    fn fetch(&self, cascade: &str) -> Result<(TrajectoryResponse, TrajectoryResponse), RpcError>;
}

impl Answers for DaemonClient {
    fn fetch(&self, cascade: &str) -> Result<(TrajectoryResponse, TrajectoryResponse), RpcError> {
        self.load_trajectory(cascade)
            .and_then(|()| fetch_pair(self, cascade))
    }
}

/// Answers captured beforehand (`verify-capture`): the full and the
/// ordinary response bodies, each either a whole GetCascadeTrajectory
/// answer or the bare trajectory (as a sidecar keeps it), checked as strictly
/// as a live answer.
#[derive(Debug, Clone)]
pub struct Captured {
    pub full: (String, Vec<u8>),
    pub ordinary: (String, Vec<u8>),
}

impl Answers for Captured {
    fn fetch(&self, _cascade: &str) -> Result<(TrajectoryResponse, TrajectoryResponse), RpcError> {
        let parse = |(name, body): &(String, Vec<u8>)| {
            TrajectoryResponse::parse_captured(body.clone()).map_err(|defect| {
                RpcError::InvalidResponse {
                    endpoint: name.clone(),
                    method: "GetCascadeTrajectory",
                    defect,
                }
            })
        };
        Ok((parse(&self.full)?, parse(&self.ordinary)?))
    }
}

/// Everything `audit_prepared` needs besides the source.
pub struct AuditContext<'a> {
    pub schema: &'a Schema,
    pub key: &'a LegacyKey,
    /// Where the answers come from; `None` offline (no verdict beyond the
    /// source's own refusals).
    pub client: Option<&'a dyn Answers>,
    pub bracket_retries: u32,
}

impl AuditContext<'_> {
    pub fn read_options(&self) -> ReadOptions<'_> {
        ReadOptions {
            schema: self.schema,
            legacy_key: self.key,
            collect_all: false,
            // Only a bracketed fetch compares against the files again.
            fingerprint: self.client.is_some(),
        }
    }
}

/// A decoded, projected source ready for the fetch stage.
pub struct Prepared {
    pub source: DecodedSource,
    pub projection: Option<Projection>,
}

impl Prepared {
    /// The refusal that makes the source unknown before any fetch, if any.
    pub fn refusal(&self) -> Option<Refusal> {
        self.source.reason().cloned()
    }
}

/// Reads and projects a source (the CPU stage).
pub fn prepare(ctx: &AuditContext<'_>, path: &Path) -> crate::Result<Prepared> {
    let mut source = read_source(path, &ctx.read_options())?;
    let mut projection = None;
    if source.qualified() {
        if let Some(w) = &source.wire {
            match project(ctx.schema, w) {
                Ok(p) => projection = Some(p),
                Err(r) => source.refusals.push(r.to_refusal()),
            }
        }
    }
    // The full comparison needs the whole tree; offline, nothing does.
    if ctx.client.is_some() && source.qualified() {
        source.materialize();
    }
    Ok(Prepared { source, projection })
}

/// A result for a source that could not be read at all.
pub fn error_result(path: &Path, format: Format, err: &crate::Error) -> SessionResult {
    let file_id = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    SessionResult {
        cascade_id: file_id.clone(),
        file_id,
        path: path.to_path_buf(),
        format,
        profile: String::new(),
        source_digest: String::new(),
        payload_digest: None,
        verdict: None,
        reason: Some(err.to_string()),
        reason_class: None,
        rules: Vec::new(),
        steps: 0,
        source_only: Vec::new(),
        full_body: None,
        ordinary_body: None,
        sidecar: None,
        bytes: 0,
        step_types: BTreeMap::new(),
        rpc_only: Default::default(),
        abandoned: false,
    }
}

fn base_result(p: &Prepared) -> SessionResult {
    let s = &p.source;
    SessionResult {
        file_id: s.file_id.clone(),
        cascade_id: s.cascade_id(),
        path: s.path.clone(),
        format: s.format,
        profile: s.profile.clone(),
        source_digest: s.source_digest.clone(),
        payload_digest: None,
        verdict: None,
        reason: None,
        reason_class: None,
        rules: p
            .projection
            .as_ref()
            .map(Projection::rules)
            .unwrap_or_default(),
        steps: s.steps,
        source_only: record(&s.source_only),
        full_body: None,
        ordinary_body: None,
        sidecar: None,
        bytes: s.encoding.len() as u64,
        step_types: s.step_types(),
        rpc_only: Default::default(),
        abandoned: false,
    }
}

fn refuse(mut r: SessionResult, refusal: &Refusal) -> SessionResult {
    mark_refused(&mut r, refusal);
    r
}

fn mark_refused(r: &mut SessionResult, refusal: &Refusal) {
    r.verdict = Some(refusal.class.verdict());
    r.reason_class = Some(refusal.class);
    r.reason = Some(refusal.to_string());
}

/// The daemon could not be used for this session: missing evidence, not a
/// refused representation. No verdict is minted (the record reads
/// `not-fetched`, the manifest stays incomplete and `--resume` retries it);
/// a cancelled call is not recorded at all.
fn daemon_unavailable(mut r: SessionResult, e: &RpcError) -> SessionResult {
    r.verdict = None;
    r.reason_class = Some(ReasonClass::DaemonUnavailable);
    r.reason = Some(e.to_string());
    r.abandoned = matches!(e, RpcError::Cancelled { .. });
    r
}

/// The full and the ordinary GetCascadeTrajectory of a loaded conversation,
/// in flight together: a conversation costs two round trips (LoadTrajectory,
/// then this pair), not three. When both fail, the full RPC's error is the
/// one reported, as when they were fetched in turn.
fn fetch_pair(
    client: &DaemonClient,
    cascade: &str,
) -> Result<(TrajectoryResponse, TrajectoryResponse), RpcError> {
    std::thread::scope(|s| {
        let full = s.spawn(|| client.get_trajectory(cascade, true));
        let ordinary = client.get_trajectory(cascade, false);
        // A panic in the other thread is a bug, not a daemon answer: re-raise it.
        let full = full
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        Ok((full?, ordinary?))
    })
}

/// The bracketed fetch, comparison and attestation of a prepared source.
pub fn audit_prepared(ctx: &AuditContext<'_>, mut prepared: Prepared) -> SessionResult {
    let mut attempt = 0;
    // A source that changed during an earlier bracket: a mismatch on the
    // re-fetch is reported as the change it most likely is (the daemon has
    // not caught up with the new source), with the mismatch as detail.
    let refuse_after_change = |r: SessionResult, m: &crate::compare::Mismatch, attempt: u32| {
        if attempt == 0 {
            refuse(r, &m.to_refusal())
        } else {
            let detail = format!(
                "source changed during fetch; on re-fetch: {}",
                m.to_refusal().detail
            );
            refuse(r, &Refusal::new(ReasonClass::SourceChanged, "", detail))
        }
    };
    loop {
        let mut result = base_result(&prepared);
        if let Some(r) = prepared.refusal() {
            return refuse(result, &r);
        }
        let (Some(client), Some(projection), Some(persisted)) = (
            ctx.client,
            prepared.projection.as_mut(),
            prepared.source.trajectory.as_mut(),
        ) else {
            return refuse(
                result,
                &Refusal::new(ReasonClass::MissingEvidence, "", "no daemon to fetch from"),
            );
        };
        let cascade = result.cascade_id.clone();
        let fetched = client.fetch(&cascade);
        // The bracket: snapshot the source again after both answers.
        let after = unchanged(
            &prepared.source.path,
            prepared.source.file_fingerprint,
            &prepared.source.source_digest,
            &ctx.read_options(),
        );
        let (full, ordinary) = match fetched {
            Ok(x) => x,
            Err(e) => return daemon_unavailable(result, &e),
        };
        let changed = !matches!(after, Ok(true));
        if changed {
            if attempt < ctx.bracket_retries {
                attempt += 1;
                match prepare(ctx, &prepared.source.path) {
                    Ok(p) => {
                        prepared = p;
                        continue;
                    }
                    Err(e) => {
                        return error_result(&prepared.source.path, prepared.source.format, &e)
                    }
                }
            }
            result = refuse(
                result,
                &Refusal::new(
                    ReasonClass::SourceChanged,
                    "",
                    "source changed during fetch",
                ),
            );
        } else {
            if let Err(m) = judge(ctx, &mut result, projection, persisted, &full, &ordinary) {
                result = refuse_after_change(result, &m, attempt);
            }
        }
        // The bodies are kept as received (valid answers only: an invalid
        // one never got here), whatever the verdict.
        result.full_body = Some(full.into_body());
        result.ordinary_body = Some(ordinary.into_body());
        return result;
    }
}

/// Compares both answers with the source and its projection and, when they
/// agree, attests into `result`; a mismatch is returned for the caller to
/// refuse.
fn judge(
    ctx: &AuditContext<'_>,
    result: &mut SessionResult,
    projection: &mut Projection,
    persisted: &mut prost_reflect::DynamicMessage,
    full: &TrajectoryResponse,
    ordinary: &TrajectoryResponse,
) -> Result<(), crate::compare::Mismatch> {
    compare_full(ctx.schema, persisted, full.trajectory())?;
    let compared =
        compare_ordinary_projection(ctx.schema, projection, persisted, ordinary.trajectory());
    let rpc_only = compared?;
    let ordinary_value = match parse_value(ordinary.trajectory()) {
        Ok(v) => v,
        Err(e) => {
            mark_refused(result, &Refusal::new(ReasonClass::OrdinaryMismatch, "", e));
            return Ok(());
        }
    };
    let digest = payload_digest(&ordinary_value);
    let source_only = !result.source_only.is_empty();
    result.verdict = Some(if source_only {
        VerdictKind::VerifiedSourceOnly
    } else {
        VerdictKind::Verified
    });
    result.reason = source_only.then(|| SOURCE_ONLY_REASON.to_string());
    result.payload_digest = Some(digest.clone());
    let completeness = Completeness {
        profile: result.profile.clone(),
        source_digest: result.source_digest.clone(),
        payload_digest: Some(digest),
        verdict: result.verdict.unwrap_or(VerdictKind::Verified),
        reason: result.reason.clone(),
        reason_class: None,
        source_only: Completeness::source_only_entries(&result.source_only),
        rpc_only_fields: rpc_only.paths.clone(),
        rpc_only_fields_unlisted: rpc_only.more,
        verified_at: crate::util::time::now_rfc3339(),
    };
    result.rpc_only = rpc_only;
    result.sidecar = Some(sidecar_bytes(&ordinary_value, &completeness));
    Ok(())
}
