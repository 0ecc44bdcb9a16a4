//! When a sidecar is stale (issue 35 item 1): missing, unreadable, written
//! without an attestation (another reader's cache), its bytes not reading
//! strictly (a repeated member, say: the reader's own file failing its
//! attestation), minted under another profile, or its attestation no longer
//! rechecks against the native source (source digest, payload digest,
//! source-only record, verdict kind, the source still qualifying). Never by mtime: the judgement reads the native
//! source ([`crate::pipeline::prepare`]) and the sidecar's bytes, by the
//! one recheck every command shares ([`crate::attest::recheck`]).

use crate::attest::cache::{Existing, SidecarDefect};
use crate::attest::recheck::{is_verified, recheck, Drift};
use crate::pipeline::Prepared;
use crate::verdict::VerdictKind;

/// Why a sidecar must be re-verified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Stale {
    #[error("no sidecar")]
    Missing,
    #[error("a sidecar without an attestation (another reader's)")]
    NotAttested,
    #[error("the attestation does not read back")]
    Unreadable,
    #[error("the sidecar does not read strictly ({0})")]
    NotStrict(SidecarDefect),
    #[error("attested under another profile ({attested})")]
    OtherProfile { attested: String },
    #[error("the source changed since the attestation")]
    SourceChanged,
    #[error("the sidecar's payload changed since the attestation")]
    PayloadChanged,
    #[error("the source no longer qualifies")]
    NoLongerQualifies,
    #[error("the source-only record changed since the attestation")]
    SourceOnlyChanged,
    #[error("the verdict kind changed (attested {attested})")]
    KindChanged { attested: &'static str },
    #[error("the attestation is not a verified one ({attested})")]
    NotVerified { attested: &'static str },
}

/// A sidecar that still holds: its verdict and reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fresh {
    pub verdict: VerdictKind,
    pub reason: Option<String>,
}

/// Judges what sits at the sidecar path (a trajectory sidecar or nothing:
/// a foreign file is the caller's to report) against the source as it was
/// just read. `Err` says why it is stale.
pub fn judge(now: &Prepared, existing: &Existing) -> Result<Fresh, Stale> {
    let saved = match existing {
        Existing::Absent | Existing::Foreign(_) => return Err(Stale::Missing),
        Existing::Unattested {
            unreadable_attestation: true,
            ..
        } => return Err(Stale::Unreadable),
        Existing::Unattested { .. } => return Err(Stale::NotAttested),
        Existing::Attested(saved) => saved,
    };
    let checked = recheck(&now.source, saved);
    let saved = &saved.completeness;
    let why = match checked {
        Err(Drift::NotStrict(d)) => Stale::NotStrict(d),
        Err(Drift::OtherProfile) => Stale::OtherProfile {
            attested: saved.profile.clone(),
        },
        Err(Drift::SourceChanged) => Stale::SourceChanged,
        Err(Drift::PayloadChanged) => Stale::PayloadChanged,
        // any attestation but a verified one is re-verified, refused or not
        _ if !is_verified(saved.verdict) => Stale::NotVerified {
            attested: saved.verdict.as_str(),
        },
        Err(Drift::NoLongerQualifies(_)) => Stale::NoLongerQualifies,
        Err(Drift::SourceOnlyChanged) => Stale::SourceOnlyChanged,
        Err(Drift::KindChanged(_)) => Stale::KindChanged {
            attested: saved.verdict.as_str(),
        },
        Ok(()) => {
            return Ok(Fresh {
                verdict: saved.verdict,
                reason: saved.reason.clone(),
            })
        }
    };
    Err(why)
}
