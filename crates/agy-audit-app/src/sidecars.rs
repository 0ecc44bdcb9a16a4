//! The sidecar beside each source, as the commands use it: its state
//! against the source now ([`check`], for `doctor` and `list --check`) and
//! the one way a fresh attestation is published ([`publish`], for `sync`
//! and `watch`). The engine's `attest::cache` reads a sidecar strictly and
//! writes bytes atomically; this module assembles a publication once: the
//! check of what sits at the path now (never another file overwritten),
//! the parent stamp from a sibling parent's INVOKE_SUBAGENT results, the
//! other `agyReader` members kept, the source and its companions protected.

use crate::attest::cache::{
    classify, keep_reader_fields, sidecar_path, write_sidecar, Existing, NotASidecar, Saved,
    Written,
};
use crate::attest::recheck::{self, Drift};
use crate::pipeline::{prepare, AuditContext};
use crate::schema::Schema;
use crate::util::atomic::WriteError;
use std::path::{Path, PathBuf};

/// A fresh attestation's bytes and where they go.
pub struct Publication<'a> {
    /// The conversation's source (protected, with its companions).
    pub source: &'a Path,
    /// Where the sidecar is written (beside the source, or `sync --out`).
    pub sidecar: &'a Path,
    /// The sidecar bytes the audit produced.
    pub bytes: &'a [u8],
    pub schema: &'a Schema,
    /// The conversation's id, which a sidecar at the path must name.
    pub cascade: &'a str,
    /// The sidecar cap in force ([`crate::attest::cache::sidecar_cap`]).
    pub cap: u64,
    /// Other files the command reads, never written over.
    pub protected: &'a [PathBuf],
    /// Replace what is not this conversation's sidecar (`sync --force`;
    /// `watch` never does).
    pub replace_foreign: bool,
}

/// Why a sidecar was not published.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// What sits at the path is not this conversation's trajectory sidecar.
    #[error("{}: not this conversation's trajectory sidecar ({why})", path.display())]
    Foreign { path: PathBuf, why: NotASidecar },
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// Publishes a fresh attestation: reads what sits at the sidecar path now
/// (not what was there before the fetch) by the one rule every command
/// applies, refuses a file that is not this conversation's sidecar (unless
/// `replace_foreign`), stamps a subagent's parent from a sibling parent
/// when its metadata names none, keeps the other `agyReader` members of the
/// sidecar it replaces, and writes atomically (equal bytes a no-op) over
/// neither the source, its companions nor `protected`.
pub fn publish(p: &Publication<'_>) -> Result<Written, PublishError> {
    let now = classify(p.sidecar, p.schema, p.cascade, p.cap);
    if let Existing::Foreign(why) = &now {
        if !p.replace_foreign {
            return Err(PublishError::Foreign {
                path: p.sidecar.to_path_buf(),
                why: why.clone(),
            });
        }
    }
    let stamped = crate::tree::nest::root_of(p.source)
        .and_then(|root| crate::tree::stamp_from_siblings(p.bytes, &root));
    let bytes = stamped.as_deref().unwrap_or(p.bytes);
    let bytes = keep_reader_fields(bytes, now.doc());
    let mut protected = vec![p.source.to_path_buf()];
    protected.extend(crate::source::sqlite::companions(p.source));
    protected.extend(p.protected.iter().cloned());
    Ok(write_sidecar(p.sidecar, &bytes, protected)?)
}

/// One conversation's sidecar as `doctor` and `list --check` judge it.
pub struct Checked {
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
    /// What sits at the sidecar path is not this conversation's sidecar
    /// (another conversation's, not JSON, a FIFO, a file past the sidecar
    /// cap...): left alone, as watch and sync leave it, never counted as
    /// missing.
    pub not_a_sidecar: bool,
    /// The stored set the attestation's profile names, when it could not be
    /// used for the recheck ([`crate::installed::Rechecks`]): the
    /// attestation then reads as minted under another profile (stale).
    pub missing_set: Option<crate::installed::SetUnavailable>,
}

/// Reads the source and classifies what sits at its sidecar path by the one
/// rule every command applies ([`crate::attest::cache::classify`]: its strict
/// read, ownership by attestation), then rechecks an attestation against
/// the source. Fresh: the sidecar reads strictly, same profile, same source
/// digest, the sidecar's payload still the attested one, and a verified
/// source that still qualifies, by the shared recheck
/// ([`crate::attest::recheck`]) read with this command's rule. `id` names
/// the conversation when the source cannot be read. An attestation whose
/// profile names an agy build's stored set is rechecked with that set
/// (`rechecks`), the source read again under it.
pub fn check(
    ctx: &AuditContext,
    rechecks: &crate::installed::Rechecks,
    source: &Path,
    id: &str,
) -> Checked {
    let mut now = prepare(ctx, source).ok();
    let cascade = now
        .as_ref()
        .map_or_else(|| id.to_string(), |p| p.source.cascade_id());
    // doctor has no response cap of its own: the default one's sidecar cap
    let cap = crate::attest::cache::sidecar_cap(crate::rpc::DEFAULT_MAX_BODY);
    let existing = classify(&sidecar_path(source), ctx.schema, &cascade, cap);
    let not_a_sidecar = matches!(existing, Existing::Foreign(_));
    let saved = match existing {
        Existing::Attested(saved) => Some(saved),
        _ => None,
    };
    let mut c = Checked {
        fresh: false,
        same_profile: true,
        steps: now.as_ref().map(|p| p.source.steps),
        refused: now.as_ref().is_some_and(|p| p.refusal().is_some()),
        not_a_sidecar,
        saved: None,
        missing_set: None,
    };
    if let Some(saved) = &saved {
        match rechecks.for_profile(&saved.completeness.profile) {
            Ok(chosen) if chosen.is_stored() => {
                let under = AuditContext {
                    schema: &chosen,
                    ..*ctx
                };
                now = prepare(&under, source).ok();
                c.steps = now.as_ref().map(|p| p.source.steps);
            }
            Ok(_) => {}
            Err(missing) => c.missing_set = Some(missing),
        }
    }
    if let (Some(now), Some(saved)) = (&now, &saved) {
        let attested = &saved.completeness;
        c.fresh = match recheck::recheck(&now.source, saved) {
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

/// What `sync --recheck` found of a conversation's saved attestation.
pub enum Rechecked {
    /// A trajectory sidecar (or nothing readable as one) without an
    /// attestation: missing evidence.
    NoAttestation,
    /// Something else, read as nothing of this conversation's: missing
    /// evidence (`why` says what it is).
    NotAttested(NotASidecar),
    /// Not this conversation's sidecar at all (another conversation's, or
    /// a file that cannot be read as JSON): an error naming it, nothing to
    /// recheck.
    Foreign { why: NotASidecar, cascade: String },
    /// Attested under a stored agy set that is not here: unknown.
    MissingSet {
        profile: String,
        missing: crate::installed::SetUnavailable,
    },
    /// Rechecked against the source now (read again under the set the
    /// evidence was minted with, when it names one).
    Checked {
        saved: Box<Saved>,
        /// The profile the source yields now.
        now_profile: String,
        drift: Result<(), Drift>,
    },
}

/// `sync --recheck`: the saved attestation at `sidecar` rechecked offline
/// against the source at `path` now, by the one rule (and strict reader)
/// every command applies to a sidecar path ([`classify`]). Evidence minted
/// under a stored agy set is rechecked with that set; a missing one is
/// [`Rechecked::MissingSet`]. The caller has seen something at `sidecar`.
pub fn recheck_saved(
    ctx: &AuditContext<'_>,
    path: &Path,
    sidecar: &Path,
    cap: u64,
) -> crate::Result<Rechecked> {
    let now = prepare(ctx, path)?;
    let cascade = now.source.cascade_id();
    let saved = match classify(sidecar, ctx.schema, &cascade, cap) {
        Existing::Attested(saved) => saved,
        Existing::Absent | Existing::Unattested { .. } => return Ok(Rechecked::NoAttestation),
        Existing::Foreign(
            why @ (NotASidecar::OtherConversation { .. }
            | NotASidecar::NotJson(_)
            | NotASidecar::Unreadable(_)
            | NotASidecar::TooLarge { .. }
            | NotASidecar::Symlink
            | NotASidecar::NotAFile),
        ) => return Ok(Rechecked::Foreign { why, cascade }),
        Existing::Foreign(why) => return Ok(Rechecked::NotAttested(why)),
    };
    let rechecks = crate::installed::Rechecks::new(ctx.schema);
    let now = match rechecks.for_profile(&saved.completeness.profile) {
        Ok(chosen) if chosen.is_stored() => prepare(
            &AuditContext {
                schema: &chosen,
                ..*ctx
            },
            path,
        )?,
        Ok(_) => now,
        Err(missing) => {
            return Ok(Rechecked::MissingSet {
                profile: saved.completeness.profile.clone(),
                missing,
            })
        }
    };
    let drift = recheck::recheck(&now.source, &saved);
    Ok(Rechecked::Checked {
        saved,
        now_profile: now.source.profile.clone(),
        drift,
    })
}
