//! `audit-qualify`: recheck a captured version-5 manifest offline. For every
//! session, the source's current profile and digest are recomputed; a
//! recorded result holds only when both still match (and, for verified
//! results, the source still qualifies with the same source-only record;
//! for a refusal the source alone shows, [`ReasonClass::offline`], the
//! source still shows it: the same class, location and rule). A session
//! recorded under a stored agy set's profile is rechecked with that set
//! ([`crate::installed::Rechecks`]).

use crate::installed::Rechecks;
use crate::manifest::{Manifest, SessionRecord};
use crate::outcome::{Refused, SessionOutcome};
use crate::pipeline::audit::{prepare, AuditContext};
use crate::source::source_only::record;
use crate::verdict::{ReasonClass, Refusal, VerdictKind};
use std::path::Path;

/// One session's recheck.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recheck {
    pub file_id: String,
    /// `VERIFIED`, `VERIFIED WITH SOURCE-ONLY FIELDS`, `INCOMPLETE`, `UNKNOWN` or `ERROR`.
    pub status: &'static str,
    pub reason: Option<String>,
    /// Whether the recorded result still holds.
    pub holds: bool,
    /// The class of the change when it does not hold.
    pub change: Option<ReasonClass>,
}

impl Recheck {
    /// The session's terminal line; text from the manifest or the source
    /// (the id, the reason) shows control characters visibly.
    pub fn line(&self) -> String {
        use crate::report::escape::terminal;
        let mut s = format!("{} {}", self.status, terminal(&self.file_id));
        if let Some(r) = &self.reason {
            s.push_str(&format!(" ({})", terminal(r)));
        }
        if !self.holds {
            s.push_str(" [recorded result no longer holds]");
        }
        s
    }
}

fn status_of(v: Option<VerdictKind>) -> &'static str {
    match v {
        Some(VerdictKind::Verified) => "VERIFIED",
        Some(VerdictKind::VerifiedSourceOnly) => "VERIFIED WITH SOURCE-ONLY FIELDS",
        Some(VerdictKind::Unknown) => "UNKNOWN",
        Some(VerdictKind::Incomplete) => "INCOMPLETE",
        None => "ERROR",
    }
}

/// Whether the refusal found now is the recorded one: the same class, the
/// same location (the recorded text is `location: detail`) and the same
/// rule (the `(rule-id)` a projection refusal ends with). The detail's
/// wording is not compared.
fn reproduces(recorded: &Refused, now: &Refusal) -> bool {
    let located = now.location.is_empty()
        || recorded
            .text()
            .strip_prefix(now.location.as_str())
            .is_some_and(|rest| rest.starts_with(": "));
    recorded.class() == now.class && located && recorded.rule() == Refused::new(now.clone()).rule()
}

/// Rechecks one recorded session against the source under `root`, read
/// with the schema its recorded profile names (`rechecks`: a stored agy
/// set, else the command's own); a set that is missing makes the recorded
/// result a profile change, naming the command that restores the set.
pub fn recheck(
    ctx: &AuditContext<'_>,
    rechecks: &Rechecks<'_>,
    root: &Path,
    s: &SessionRecord,
) -> Recheck {
    match rechecks.for_profile(&s.profile) {
        Ok(chosen) => recheck_under(
            &AuditContext {
                schema: &chosen,
                ..*ctx
            },
            root,
            s,
        ),
        Err(missing) => Recheck {
            file_id: s.file_id.clone(),
            status: "UNKNOWN",
            reason: Some(format!(
                "profile {} cannot be rechecked: {missing}",
                s.profile
            )),
            holds: false,
            change: Some(ReasonClass::ProfileChanged),
        },
    }
}

/// [`recheck`] with the schema chosen.
fn recheck_under(ctx: &AuditContext<'_>, root: &Path, s: &SessionRecord) -> Recheck {
    let path = s.source_path(root);
    let changed = |class: ReasonClass, reason: String| Recheck {
        file_id: s.file_id.clone(),
        status: if class.verdict() == VerdictKind::Incomplete {
            "INCOMPLETE"
        } else {
            "UNKNOWN"
        },
        reason: Some(reason),
        holds: false,
        change: Some(class),
    };
    let prepared = match prepare(ctx, &path) {
        Ok(p) => p,
        Err(e) if !s.settled() => {
            return Recheck {
                file_id: s.file_id.clone(),
                status: "ERROR",
                reason: Some(e.to_string()),
                holds: true,
                change: None,
            }
        }
        Err(e) => {
            return changed(
                ReasonClass::MissingEvidence,
                format!("source unreadable: {e}"),
            )
        }
    };
    let src = &prepared.source;
    if src.profile != s.profile {
        return changed(
            ReasonClass::ProfileChanged,
            format!(
                "profile changed: recorded {}, now {}",
                s.profile, src.profile
            ),
        );
    }
    if src.source_digest != s.source_digest {
        return changed(
            ReasonClass::SourceChanged,
            "source changed since the manifest was captured".into(),
        );
    }
    let refusal = prepared.refusal();
    match &s.result {
        SessionOutcome::Verified | SessionOutcome::VerifiedSourceOnly(_) => {
            if let Some(r) = refusal {
                return changed(r.class, format!("no longer qualifies: {r}"));
            }
            let now = record(&src.source_only);
            let recorded_source_only = matches!(s.result, SessionOutcome::VerifiedSourceOnly(_));
            if now.is_empty() == recorded_source_only {
                return changed(
                    ReasonClass::SourceChanged,
                    format!(
                        "verdict kind changed: recorded {}, the source now yields {}",
                        s.verdict_str(),
                        if now.is_empty() {
                            "verified"
                        } else {
                            "verified-source-only"
                        }
                    ),
                );
            }
            // The recorded source-only fields must be exactly the ones the
            // source yields now (a verified-source-only record without them
            // is missing evidence).
            if let SessionOutcome::VerifiedSourceOnly(recorded) = &s.result {
                if recorded.is_empty() {
                    return changed(
                        ReasonClass::MissingEvidence,
                        "the manifest records no source-only fields for this verified-source-only session".into(),
                    );
                }
                if *recorded != now {
                    return changed(
                        ReasonClass::SourceChanged,
                        "source-only record changed since the manifest was captured".into(),
                    );
                }
            }
        }
        SessionOutcome::Refused(recorded) if recorded.class().offline() => {
            // A refusal the source alone shows must show again: the same
            // class, location and rule (the wording may differ).
            match &refusal {
                None => {
                    return changed(
                        ReasonClass::MissingEvidence,
                        format!(
                            "recorded {} refusal does not reproduce: the source passes every offline check",
                            recorded.class()
                        ),
                    )
                }
                Some(now) if !reproduces(recorded, now) => {
                    return changed(
                        now.class,
                        format!(
                            "refusal changed: recorded {} ({}), now {} ({now})",
                            recorded.class(),
                            recorded.text(),
                            now.class
                        ),
                    )
                }
                Some(_) => {}
            }
        }
        SessionOutcome::Refused(_)
        | SessionOutcome::NotFetched { .. }
        | SessionOutcome::Error { .. } => {
            // A refusal found with the daemon's answers cannot be redone
            // offline; an offline refusal the source now shows in its
            // place is a change.
            if let (Some(recorded), Some(now)) = (s.class(), refusal.as_ref()) {
                if recorded != now.class
                    && !matches!(
                        recorded,
                        ReasonClass::DaemonUnavailable | ReasonClass::MissingEvidence
                    )
                {
                    return changed(
                        now.class,
                        format!("refusal changed from {recorded} to {}", now.class),
                    );
                }
            }
        }
    }
    Recheck {
        file_id: s.file_id.clone(),
        status: status_of(s.result.verdict()),
        reason: s.reason_text().map(str::to_string),
        holds: true,
        change: None,
    }
}

/// Rechecks every session of `manifest`.
pub fn qualify(ctx: &AuditContext<'_>, manifest: &Manifest, root: &Path) -> Vec<Recheck> {
    use rayon::prelude::*;
    let rechecks = Rechecks::new(ctx.schema);
    manifest
        .sessions
        .par_iter()
        .map(|s| recheck(ctx, &rechecks, root, s))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::RuleId;

    /// A recorded refusal reproduces when the refusal found now has its
    /// class, its location (the recorded text's `location: ` prefix) and
    /// its rule; the detail's wording is not compared. Each near-miss does
    /// not reproduce.
    #[test]
    fn a_refusal_reproduces_by_class_location_and_rule() {
        let (a, b) = (RuleId::ALL[0].id(), RuleId::ALL[1].id());
        let was = Refused::recorded(
            ReasonClass::UnqualifiedProjection,
            format!("steps[3]: out of bounds ({a})"),
        );
        let now = |class, location: &str, detail: String| Refusal::new(class, location, detail);
        let projection = ReasonClass::UnqualifiedProjection;
        assert!(reproduces(
            &was,
            &now(projection, "steps[3]", format!("reworded ({a})"))
        ));
        for (class, location, detail) in [
            (
                ReasonClass::UnknownField,
                "steps[3]",
                format!("out of bounds ({a})"),
            ),
            (projection, "steps[4]", format!("out of bounds ({a})")),
            (projection, "steps[3", format!("out of bounds ({a})")),
            (projection, "steps[3]", format!("out of bounds ({b})")),
            (projection, "steps[3]", "out of bounds".to_string()),
        ] {
            assert!(
                !reproduces(&was, &now(class, location, detail.clone())),
                "{class} {location}: {detail}"
            );
        }
        // Found now without a location: the class and the rule decide.
        let bare = Refused::recorded(ReasonClass::SchemaDrift, "missing table".into());
        assert!(reproduces(
            &bare,
            &now(ReasonClass::SchemaDrift, "", "missing table".into())
        ));
        assert!(!reproduces(
            &bare,
            &now(ReasonClass::UserVersion, "", "missing table".into())
        ));
    }
}
