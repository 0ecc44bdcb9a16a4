//! The one offline recheck of a saved attestation against its native source
//! as just decoded ([`crate::source::read_source`], and the projection's
//! refusal if any), shared by `sync --recheck`, `doctor`, `list --check` and
//! `watch` (the application's `watch::stale`), over the
//! sidecar as the one strict reader read it ([`crate::attest::cache::Saved`]).
//! The checks run in one order — the sidecar's bytes reading strictly,
//! profile, source digest, payload digest (of exactly the bytes read), the
//! source still qualifying, then (verified attestations only) the
//! source-only record and the verdict kind — and the first that fails is
//! the answer. Each command maps the answer to its own wording and exit code.

use super::cache::{Saved, SidecarDefect};
use crate::source::source_only::record;
use crate::source::DecodedSource;
use crate::verdict::{Refusal, VerdictKind};

/// The first check a saved attestation fails against the source now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drift {
    /// The sidecar's bytes do not read as strictly as a daemon answer (a
    /// repeated member, say): what it attests cannot be read, so the saved
    /// payload is not the attested one.
    NotStrict(SidecarDefect),
    /// Attested under another profile than the one in force.
    OtherProfile,
    /// The source's digest differs from the attested one.
    SourceChanged,
    /// The sidecar's payload is no longer the attested one.
    PayloadChanged,
    /// This reader's rules now refuse the source.
    NoLongerQualifies(Refusal),
    /// A verified attestation whose source-only record differs from the
    /// source's now.
    SourceOnlyChanged,
    /// A verified attestation whose kind differs from what the source now
    /// yields (the kind it yields).
    KindChanged(VerdictKind),
}

/// Whether a verdict kind is a verified one (with or without source-only
/// fields).
pub fn is_verified(kind: VerdictKind) -> bool {
    matches!(
        kind,
        VerdictKind::Verified | VerdictKind::VerifiedSourceOnly
    )
}

/// The verified kind the source now yields (source-only fields or not).
pub fn current_kind(now: &DecodedSource) -> VerdictKind {
    if record(&now.source_only).is_empty() {
        VerdictKind::Verified
    } else {
        VerdictKind::VerifiedSourceOnly
    }
}

/// Rechecks the attestation of the sidecar `saved` against the source
/// `now`: `Ok` when every check holds, else the first that fails.
pub fn recheck(now: &DecodedSource, saved: &Saved) -> Result<(), Drift> {
    let digest = saved
        .payload
        .as_ref()
        .map_err(|d| Drift::NotStrict(d.clone()))?;
    let (source, saved) = (now, &saved.completeness);
    if source.profile != saved.profile {
        return Err(Drift::OtherProfile);
    }
    if source.source_digest != saved.source_digest {
        return Err(Drift::SourceChanged);
    }
    if saved.payload_digest.as_deref() != Some(digest.as_str()) {
        return Err(Drift::PayloadChanged);
    }
    if let Some(r) = now.reason() {
        return Err(Drift::NoLongerQualifies(r.clone()));
    }
    if is_verified(saved.verdict) {
        if saved.source_only != record(&source.source_only) {
            return Err(Drift::SourceOnlyChanged);
        }
        let kind = current_kind(now);
        if saved.verdict != kind {
            return Err(Drift::KindChanged(kind));
        }
    }
    Ok(())
}
