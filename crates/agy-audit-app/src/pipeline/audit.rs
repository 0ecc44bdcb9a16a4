//! One conversation, end to end: decode, project, bracketed fetch, compare,
//! attest. The sweep runs this per source across its stages; `sync` runs it once.

use crate::attest::payload::Payload;
use crate::attest::Completeness;
use crate::compare::{
    compare_full, compare_ordinary_projection, full_confirmed, ordinary_on_wire, parse_value,
};
use crate::manifest::SessionRecord;
use crate::outcome::SessionOutcome;
use crate::project::{project, Projection};
use crate::rpc::{DaemonClient, HeldResponse, RpcError, TrajectoryResponse};
use crate::schema::Schema;
use crate::source::legacy::LegacyKey;
use crate::source::source_only::{record, SourceOnlyEntry};
use crate::source::{read_source, unchanged, undecodable, DecodedSource, Format, ReadOptions};
use crate::verdict::{ReasonClass, Refusal, VerdictKind};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One audited conversation: its manifest record (the outcome and the
/// source it is about) and what the sweep writes beside it.
#[derive(Debug)]
pub struct SessionResult {
    /// What the manifest records (the sweep's writer adds the endpoint).
    pub record: SessionRecord,
    pub path: PathBuf,
    /// The raw answers received (full, ordinary), kept for the corpus
    /// where they wait (a large one on disk: [`HeldResponse`]).
    pub full_body: Option<HeldResponse>,
    pub ordinary_body: Option<HeldResponse>,
    /// The sidecar document's bytes ([`crate::attest::sidecar_bytes`]), when verified.
    pub sidecar: Option<Vec<u8>>,
    /// The response shape listings of the two answers, taken while the
    /// judge had each answer's text (the ordinary one from the attestation's
    /// pass when verified); `None` when there is no such answer or its text
    /// does not list (the sweep then lists the saved file at its end).
    pub full_shapes: Option<crate::shapes::Listing>,
    pub ordinary_shapes: Option<crate::shapes::Listing>,
    /// The fetch was abandoned (Ctrl-C) or the daemon went away: nothing
    /// about this session is known, so the sweep does not record it and
    /// `--resume` fetches it again.
    pub abandoned: bool,
    /// The daemon refused how it is reached (401/403, the wrong listener;
    /// [`RpcError::setup_problem`]): nothing is known about this session,
    /// and every other would get the same answer, so a sweep stops and says
    /// so once, and `sync` reports it as the command's error.
    pub setup: Option<RpcError>,
}

impl SessionResult {
    /// The result of a session whose audit kept no answer (an unreadable
    /// source, a refusal or a failure before the fetch): its record alone.
    fn without_answers(record: SessionRecord, path: PathBuf) -> SessionResult {
        SessionResult {
            record,
            path,
            full_body: None,
            ordinary_body: None,
            sidecar: None,
            full_shapes: None,
            ordinary_shapes: None,
            abandoned: false,
            setup: None,
        }
    }
}

/// Where a conversation's two answers come from: the daemon
/// ([`DaemonClient`]: LoadTrajectory, then the full and the ordinary
/// GetCascadeTrajectory in flight together) or captured files
/// ([`Captured`]). The audit brackets whichever it is with two source
/// snapshots and judges the answers the same way.
pub trait Answers: Sync {
    /// The full (unrehydrated) and the ordinary answer for `cascade`, each
    /// held where it arrived.
    fn fetch(&self, cascade: &str) -> Result<(HeldResponse, HeldResponse), RpcError>;
    /// Where the answers come from, for messages.
    fn origin(&self) -> &str;
    /// A folder for what the judge sets aside on disk (the attestation's
    /// canonical bytes past [`crate::attest::payload::SPILL_AT`]); `None`
    /// keeps everything in memory.
    fn spool(&self) -> Option<&Path> {
        None
    }
}

impl Answers for DaemonClient {
    fn fetch(&self, cascade: &str) -> Result<(HeldResponse, HeldResponse), RpcError> {
        self.load_trajectory(cascade)
            .and_then(|()| fetch_pair(self, cascade))
    }

    fn origin(&self) -> &str {
        self.endpoint()
    }

    fn spool(&self) -> Option<&Path> {
        self.spool_dir()
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
    fn fetch(&self, _cascade: &str) -> Result<(HeldResponse, HeldResponse), RpcError> {
        let parse = |(name, body): &(String, Vec<u8>)| {
            TrajectoryResponse::parse_captured(body.clone())
                .map(HeldResponse::memory)
                .map_err(|defect| RpcError::InvalidResponse {
                    endpoint: name.clone(),
                    method: "GetCascadeTrajectory",
                    defect,
                })
        };
        Ok((parse(&self.full)?, parse(&self.ordinary)?))
    }

    fn origin(&self) -> &str {
        &self.full.0
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

impl<'a> AuditContext<'a> {
    /// The context of an offline read (no answers, no bracket retries):
    /// what every command that judges a source without its daemon uses.
    pub fn offline(schema: &'a Schema, key: &'a LegacyKey) -> AuditContext<'a> {
        AuditContext {
            schema,
            key,
            client: None,
            bracket_retries: 0,
        }
    }

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
    // The full comparison needs the whole tree, which `audit_prepared`
    // decodes once both answers are in (it is the largest thing a
    // conversation holds, so it is not kept through queues and round trips);
    // offline, nothing needs it.
    Ok(Prepared { source, projection })
}

/// A result for a source that could not be read at all.
pub fn error_result(path: &Path, format: Format, err: &crate::Error) -> SessionResult {
    let file_id = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    SessionResult::without_answers(
        SessionRecord {
            cascade_id: file_id.clone(),
            file_id,
            format,
            profile: String::new(),
            source_digest: String::new(),
            payload_digest: None,
            result: SessionOutcome::Error {
                reason: err.to_string(),
            },
            rules: Vec::new(),
            steps: 0,
            bytes: 0,
            step_types: BTreeMap::new(),
            endpoint: None,
            rpc_only_fields: Vec::new(),
            rpc_only_fields_unlisted: 0,
        },
        path.to_path_buf(),
    )
}

/// The result of a prepared source that ended in `outcome`.
fn session(p: &Prepared, outcome: SessionOutcome) -> SessionResult {
    Recorded::of(p).with(outcome)
}

/// What a session's record says of its prepared source (rules, steps,
/// bytes, step types, ids), taken once, so the judge can let the source's
/// encoding and projection go after the comparisons, before the
/// attestation's buffers, while the record still says what they held.
struct Recorded {
    record: SessionRecord,
    path: std::path::PathBuf,
}

impl Recorded {
    fn of(p: &Prepared) -> Recorded {
        let s = &p.source;
        Recorded {
            record: SessionRecord {
                file_id: s.file_id.clone(),
                cascade_id: s.cascade_id(),
                format: s.format,
                profile: s.profile.clone(),
                source_digest: s.source_digest.clone(),
                payload_digest: None,
                // Set by `with`.
                result: SessionOutcome::NotFetched {
                    reason: String::new(),
                },
                rules: p
                    .projection
                    .as_ref()
                    .map(Projection::rules)
                    .unwrap_or_default()
                    .iter()
                    .map(|r| r.id().to_string())
                    .collect(),
                steps: s.steps,
                bytes: s.encoding.len() as u64,
                step_types: s.step_types(),
                endpoint: None,
                rpc_only_fields: Vec::new(),
                rpc_only_fields_unlisted: 0,
            },
            path: s.path.clone(),
        }
    }

    /// The session's result, ended in `outcome`.
    fn with(self, outcome: SessionOutcome) -> SessionResult {
        SessionResult::without_answers(
            SessionRecord {
                result: outcome,
                ..self.record
            },
            self.path,
        )
    }
}

/// The daemon could not be used for this session: missing evidence, not a
/// refused representation. No verdict is minted (the record reads
/// `not-fetched`, the manifest stays incomplete and `--resume` retries it);
/// a cancelled call is not recorded at all.
fn daemon_unavailable(p: Recorded, e: &RpcError) -> SessionResult {
    let mut r = p.with(SessionOutcome::NotFetched {
        reason: e.to_string(),
    });
    r.abandoned = matches!(e, RpcError::Cancelled { .. });
    r.setup = e.setup_problem().then(|| e.clone());
    r
}

/// The full and the ordinary GetCascadeTrajectory of a loaded conversation,
/// in flight together: a conversation costs two round trips (LoadTrajectory,
/// then this pair), not three, and no thread
/// ([`DaemonClient::get_trajectory_pair`]: one wait for both). When both
/// fail, the full RPC's error is the one reported, as when they were
/// fetched in turn.
fn fetch_pair(
    client: &DaemonClient,
    cascade: &str,
) -> Result<(HeldResponse, HeldResponse), RpcError> {
    client.get_held_pair(cascade)
}

/// A prepared source with no daemon answer to compare against: refused,
/// missing evidence.
fn no_daemon(prepared: Recorded) -> SessionResult {
    prepared.with(SessionOutcome::refused(Refusal::new(
        ReasonClass::MissingEvidence,
        "",
        "no daemon to fetch from",
    )))
}

/// The bracketed fetch, comparison and attestation of a prepared source:
/// [`fetch_prepared`] then [`judge_fetched`], on the caller's thread.
pub fn audit_prepared(ctx: &AuditContext<'_>, prepared: Prepared) -> SessionResult {
    judge_fetched(ctx, fetch_prepared(ctx, prepared))
}

/// A prepared source after its bracketed fetch: what the CPU half of the
/// audit ([`judge_fetched`]) takes from the I/O half ([`fetch_prepared`]).
pub enum Fetched {
    /// The session ended before any answer was compared (refused before
    /// the fetch, no daemon, not fetched, or the source unreadable on a
    /// retry).
    Ended(Box<SessionResult>),
    /// Both answers, and whether the source changed while they were
    /// fetched (the bracket's second snapshot, taken after both answers).
    Answered(Box<Answered>),
}

/// Both answers of a prepared source and its bracket.
pub struct Answered {
    prepared: Prepared,
    full: HeldResponse,
    ordinary: HeldResponse,
    /// The source's second snapshot differed from the first.
    changed: bool,
    /// How many times the source was read again after a change.
    attempt: u32,
}

impl Fetched {
    /// The session's result, when it ended in the fetch.
    pub fn ended(&self) -> Option<&SessionResult> {
        match self {
            Fetched::Ended(r) => Some(&**r),
            Fetched::Answered(_) => None,
        }
    }
}

/// The I/O half of the audit: the bracketed fetch (snapshot, both answers,
/// snapshot again; on a change, the source read again and fetched again, up
/// to `bracket_retries` times). It compares nothing, so a sweep can keep
/// many of these in flight on waiting threads and judge the answers on a
/// few CPU threads.
pub fn fetch_prepared(ctx: &AuditContext<'_>, prepared: Prepared) -> Fetched {
    bracket(ctx, prepared, None)
}

/// [`fetch_prepared`] for a source whose first answers were fetched
/// elsewhere (the sweep's detached fetches, started after `prepared` was
/// read): the bracket's second snapshot is taken now, after both answers,
/// and a changed source is read and fetched again (waiting, on this
/// thread) as [`fetch_prepared`] does.
pub fn bracket_fetched(
    ctx: &AuditContext<'_>,
    prepared: Prepared,
    answers: Result<(HeldResponse, HeldResponse), RpcError>,
) -> Fetched {
    bracket(ctx, prepared, Some(answers))
}

/// Where a prepared source's answers come from, or how its session ends
/// without a fetch: refused before it, or nothing to fetch from (no
/// daemon, no projection).
pub fn fetchable<'c>(
    ctx: &AuditContext<'c>,
    prepared: &Prepared,
) -> Result<&'c dyn Answers, Box<SessionResult>> {
    if let Some(r) = prepared.refusal() {
        return Err(Box::new(session(prepared, SessionOutcome::refused(r))));
    }
    match (ctx.client, prepared.projection.is_some()) {
        (Some(client), true) => Ok(client),
        _ => Err(Box::new(no_daemon(Recorded::of(prepared)))),
    }
}

/// The bracketed fetch; `first`: the first attempt's answers, when they
/// are already in.
fn bracket(
    ctx: &AuditContext<'_>,
    mut prepared: Prepared,
    mut first: Option<Result<(HeldResponse, HeldResponse), RpcError>>,
) -> Fetched {
    let mut attempt = 0;
    loop {
        let client = match fetchable(ctx, &prepared) {
            Ok(client) => client,
            Err(ended) => return Fetched::Ended(ended),
        };
        let cascade = prepared.source.cascade_id();
        let fetched = match first.take() {
            Some(answers) => answers,
            None => client.fetch(&cascade),
        };
        // The bracket: snapshot the source again after both answers.
        let after = unchanged(
            &prepared.source.path,
            prepared.source.file_fingerprint,
            &prepared.source.source_digest,
            &ctx.read_options(),
        );
        let (full, ordinary) = match fetched {
            Ok(x) => x,
            Err(e) => {
                return Fetched::Ended(Box::new(daemon_unavailable(Recorded::of(&prepared), &e)))
            }
        };
        let changed = !matches!(after, Ok(true));
        if changed && attempt < ctx.bracket_retries {
            attempt += 1;
            match prepare(ctx, &prepared.source.path) {
                Ok(p) => {
                    prepared = p;
                    continue;
                }
                Err(e) => {
                    return Fetched::Ended(Box::new(error_result(
                        &prepared.source.path,
                        prepared.source.format,
                        &e,
                    )))
                }
            }
        }
        return Fetched::Answered(Box::new(Answered {
            prepared,
            full,
            ordinary,
            changed,
            attempt,
        }));
    }
}

/// The CPU half of the audit: both answers compared with the source and
/// its projection and, when they agree, the attestation. Each comparison
/// first runs the one pass over the source's wire encoding
/// (`compare::full_confirmed`, `compare::ordinary_on_wire`); the whole
/// tree is decoded only when that pass cannot confirm an answer, for the
/// value comparison that decides and names the paths ([`Persisted`]). The
/// answers are read one at a time, each dropped once read (a large one
/// waits on disk, [`HeldResponse`]): the full one for its comparison and
/// shape listing, then the ordinary one for its comparison, attestation and
/// listing; the session's files are copied from where they wait.
pub fn judge_fetched(ctx: &AuditContext<'_>, fetched: Fetched) -> SessionResult {
    let Answered {
        mut prepared,
        full,
        ordinary,
        changed,
        attempt,
    } = match fetched {
        Fetched::Ended(r) => return *r,
        Fetched::Answered(a) => *a,
    };
    // A fetched source passed the strict scan, so it is indexed (and
    // decodes: the scan refuses whatever the decoder would). Should it not
    // be, it is refused as it was before the fetch, and the answers are
    // not kept.
    let recorded = Recorded::of(&prepared);
    let Some(wire) = prepared.source.wire.take() else {
        let refusal = prepared.refusal().unwrap_or_else(|| {
            Refusal::new(
                ReasonClass::MalformedProtobuf,
                "",
                "the trajectory does not decode",
            )
        });
        return recorded.with(SessionOutcome::refused(refusal));
    };
    let Some(projection) = prepared.projection.take() else {
        return no_daemon(recorded);
    };
    // The wire holds the encoding (the same bytes): both, the projection
    // and any tree go once the comparisons are done (`judge`).
    prepared.source.encoding = bytes::Bytes::new();
    let mut persisted = Persisted {
        wire,
        tree: prepared.source.trajectory.take(),
    };
    let origin = ctx.client.map_or("", |c| c.origin());
    let source = (
        prepared.source.profile.as_str(),
        prepared.source.source_digest.as_str(),
    );
    let judged = (|| {
        let first = if changed {
            Err(Refusal::new(
                ReasonClass::SourceChanged,
                "",
                "source changed during fetch",
            ))
        } else {
            Ok(())
        };
        let (full_shapes, first) = {
            let text = full.read_answer(origin)?;
            let shapes = full.shapes().cloned().or_else(|| listing_of(text.body()));
            let compared = first.and_then(|()| {
                if full_confirmed(&persisted.wire, text.trajectory()) {
                    return Ok(());
                }
                compare_full(ctx.schema, persisted.tree()?, text.trajectory())
                    .map_err(|m| mismatch(m, attempt))
            });
            (shapes, compared)
        };
        let text = ordinary.read_answer(origin)?;
        let verified = first.and_then(|()| {
            let source_only = record(&prepared.source.source_only);
            judge(
                ctx,
                source,
                source_only,
                projection,
                persisted,
                &text,
                attempt,
            )
        });
        let ordinary_shapes = match &verified {
            Ok(j) => Some(j.ordinary_shapes.clone()),
            Err(_) => ordinary
                .shapes()
                .cloned()
                .or_else(|| listing_of(text.body())),
        };
        Ok::<_, RpcError>((verified, full_shapes, ordinary_shapes))
    })();
    let (judged, full_shapes, ordinary_shapes) = match judged {
        Ok(j) => j,
        // An answer set aside that cannot be read back never reached its
        // judge: not fetched, as after a transport failure.
        Err(e) => return daemon_unavailable(recorded, &e),
    };
    let mut result = match judged {
        Ok(j) => {
            let mut r = recorded.with(j.outcome);
            r.record.payload_digest = Some(j.payload_digest);
            r.record.rpc_only_fields = j.rpc_only.paths;
            r.record.rpc_only_fields_unlisted = j.rpc_only.more;
            r.sidecar = Some(j.sidecar);
            r
        }
        Err(refusal) => recorded.with(SessionOutcome::refused(refusal)),
    };
    // The answers are kept as received (valid answers only: an invalid
    // one never got here), whatever the verdict.
    result.full_body = Some(full);
    result.ordinary_body = Some(ordinary);
    result.full_shapes = full_shapes;
    result.ordinary_shapes = ordinary_shapes;
    result
}

/// The persisted trajectory as the judge needs it: its indexed encoding,
/// which the wire pass compares against, and the whole tree, decoded the
/// first time a comparison the wire pass could not confirm needs it (both
/// dropped once the comparisons are done: nothing after them reads them).
struct Persisted {
    wire: crate::source::wire_trajectory::WireTrajectory,
    tree: Option<prost_reflect::DynamicMessage>,
}

impl Persisted {
    /// The tree, decoded on first use; a decode that fails (a passing
    /// strict scan rules it out) refuses the session.
    fn tree(&mut self) -> Result<&mut prost_reflect::DynamicMessage, Refusal> {
        match &mut self.tree {
            Some(tree) => Ok(tree),
            slot @ None => {
                let decoded = self.wire.decode().map_err(|e| undecodable(&e))?;
                Ok(slot.insert(decoded))
            }
        }
    }
}

/// An answer's response shape listing, in one pass over its text (a tree
/// only when that pass stops); `None` when it does not list.
fn listing_of(body: &[u8]) -> Option<crate::shapes::Listing> {
    let mut l = crate::shapes::Listing::new();
    l.add_bytes(Path::new(""), body).ok()?;
    Some(l)
}

/// A comparison's mismatch as the session's refusal. A mismatch after the
/// source changed during an earlier bracket (`attempt` > 0) is reported as
/// the change it most likely is (the daemon has not caught up with the new
/// source), with the mismatch as detail.
fn mismatch(m: crate::compare::Mismatch, attempt: u32) -> Refusal {
    if attempt == 0 {
        m.to_refusal()
    } else {
        let detail = format!(
            "source changed during fetch; on re-fetch: {}",
            m.to_refusal().detail
        );
        Refusal::new(ReasonClass::SourceChanged, "", detail)
    }
}

/// A verified session's evidence.
struct Judged {
    /// Verified, or verified with source-only fields.
    outcome: SessionOutcome,
    payload_digest: String,
    rpc_only: crate::compare::value::RpcOnly,
    sidecar: Vec<u8>,
    /// The shape listing of the ordinary trajectory, from the same pass.
    ordinary_shapes: crate::shapes::Listing,
}

/// Compares the ordinary answer with the projection (the full one agreed
/// with the source) and, when they agree, attests; otherwise the refusal.
fn judge(
    ctx: &AuditContext<'_>,
    (profile, source_digest): (&str, &str),
    source_only: Vec<SourceOnlyEntry>,
    mut projection: Projection,
    mut persisted: Persisted,
    ordinary: &TrajectoryResponse,
    attempt: u32,
) -> Result<Judged, Refusal> {
    let compared = match ordinary_on_wire(&projection, &persisted.wire, ordinary.trajectory()) {
        Some(compared) => compared,
        None => compare_ordinary_projection(
            ctx.schema,
            &mut projection,
            persisted.tree()?,
            ordinary.trajectory(),
        ),
    };
    let rpc_only = compared.map_err(|m| mismatch(m, attempt))?;
    // Compared: the source's encoding, its projection (the rewritten steps
    // hold copies of their strings) and the tree, if one was needed, are
    // not read again, and the attestation's buffers below are this
    // conversation's largest; they go first (the record took what it says
    // of them: `Recorded`).
    drop(projection);
    drop(persisted);
    // One pass over the text gives the digest, the sidecar and the listing
    // without a tree; the tree is parsed only when that pass stops (it is
    // the reference, and names the error when the text is not JSON).
    let text = ordinary.trajectory();
    let read = match ctx.client.and_then(|c| c.spool()) {
        Some(dir) => crate::attest::payload::read_spilling(text, dir),
        None => crate::attest::payload::read(text),
    };
    let payload = match read {
        Ok(read) => Payload::Text(read),
        Err(_) => Payload::Tree(
            parse_value(text).map_err(|e| Refusal::new(ReasonClass::OrdinaryMismatch, "", e))?,
        ),
    };
    let digest = payload.digest();
    let outcome = SessionOutcome::verified(source_only);
    let completeness = Completeness {
        profile: profile.to_string(),
        source_digest: source_digest.to_string(),
        payload_digest: Some(digest.clone()),
        verdict: outcome.verdict().unwrap_or(VerdictKind::Verified),
        reason: outcome.reason_text().map(str::to_string),
        reason_class: None,
        source_only: outcome.source_only().to_vec(),
        rpc_only_fields: rpc_only.paths.clone(),
        rpc_only_fields_unlisted: rpc_only.more,
        verified_at: crate::util::time::now_rfc3339(),
    };
    let (sidecar, ordinary_shapes) = payload.into_evidence(&completeness);
    Ok(Judged {
        ordinary_shapes,
        sidecar,
        outcome,
        payload_digest: digest,
        rpc_only,
    })
}
