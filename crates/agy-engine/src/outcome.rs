//! A session's outcome as one type, from the audit to the manifest.
//!
//! The audit ends each conversation in exactly one [`SessionOutcome`]:
//! verified, verified with its declared source-only fields (kept typed until
//! written), refused (with its class, location and rule), not fetched, or an
//! error. The manifest's record holds it as is; its JSON spelling (the loose
//! `verdict`, `reason`, `reasonClass` and `sourceOnly` members of manifest
//! version 5) is made and checked in one place, `manifest`'s wire form, so
//! no reader re-derives an outcome from optional fields.

use crate::rules::RuleId;
use crate::source::source_only::SourceOnlyEntry;
use crate::verdict::{exit, Outcome, ReasonClass, Refusal, VerdictKind};

/// The reason every verified-with-source-only record and attestation carries.
pub const SOURCE_ONLY_REASON: &str = "verified except declared source-only fields absent from RPC";

/// How one conversation's audit ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionOutcome {
    /// The reader represents the conversation completely.
    Verified,
    /// Verified except the declared source-only fields, which the RPC does
    /// not carry: one entry per declared field present, as the attestation
    /// records them. The audit mints this only with at least one entry; a
    /// record read back without any is kept as such, and `audit-qualify`
    /// refuses it as missing evidence.
    VerifiedSourceOnly(Vec<SourceOnlyEntry>),
    /// Refused: `unknown` or `incomplete`, as the refusal's class says.
    Refused(Refused),
    /// The daemon could not be used for this session: no verdict (the
    /// manifest stays `complete: false` and `--resume` fetches it again).
    NotFetched { reason: String },
    /// The source could not be read (I/O, a damaged file): no verdict.
    Error { reason: String },
}

impl SessionOutcome {
    /// Verified, with the source-only entries the source yields (none:
    /// plainly verified).
    pub fn verified(source_only: Vec<SourceOnlyEntry>) -> SessionOutcome {
        if source_only.is_empty() {
            SessionOutcome::Verified
        } else {
            SessionOutcome::VerifiedSourceOnly(source_only)
        }
    }

    /// Refused for `refusal` (its class decides `unknown` or `incomplete`).
    pub fn refused(refusal: Refusal) -> SessionOutcome {
        SessionOutcome::Refused(Refused::new(refusal))
    }

    /// The outcome's public id: a verdict, not fetched, or an error.
    pub fn kind(&self) -> Outcome {
        match self.verdict() {
            Some(v) => Outcome::Verdict(v),
            None if matches!(self, SessionOutcome::NotFetched { .. }) => Outcome::NotFetched,
            None => Outcome::Error,
        }
    }

    /// The verdict, when one was reached.
    pub fn verdict(&self) -> Option<VerdictKind> {
        match self {
            SessionOutcome::Verified => Some(VerdictKind::Verified),
            SessionOutcome::VerifiedSourceOnly(_) => Some(VerdictKind::VerifiedSourceOnly),
            SessionOutcome::Refused(r) => Some(r.verdict()),
            SessionOutcome::NotFetched { .. } | SessionOutcome::Error { .. } => None,
        }
    }

    /// The class of a refusal, or `daemon-unavailable` for a session not
    /// fetched; none for a verified session or an error.
    pub fn class(&self) -> Option<ReasonClass> {
        match self {
            SessionOutcome::Refused(r) => Some(r.class()),
            SessionOutcome::NotFetched { .. } => Some(ReasonClass::DaemonUnavailable),
            _ => None,
        }
    }

    /// The reason as the manifest words it: the refusal with its location
    /// (`location: detail (rule-id)`), the source-only reason, the daemon's
    /// or the read error; none for a plainly verified session.
    pub fn reason_text(&self) -> Option<&str> {
        match self {
            SessionOutcome::Verified => None,
            SessionOutcome::VerifiedSourceOnly(_) => Some(SOURCE_ONLY_REASON),
            SessionOutcome::Refused(r) => Some(r.text()),
            SessionOutcome::NotFetched { reason } | SessionOutcome::Error { reason } => {
                Some(reason)
            }
        }
    }

    /// A verdict was reached (not `not-fetched`, not `error`).
    pub fn settled(&self) -> bool {
        self.verdict().is_some()
    }

    /// The declared source-only fields of a verified-source-only session.
    pub fn source_only(&self) -> &[SourceOnlyEntry] {
        match self {
            SessionOutcome::VerifiedSourceOnly(entries) => entries,
            _ => &[],
        }
    }

    /// The refusal, when the session was refused.
    pub fn refusal(&self) -> Option<&Refused> {
        match self {
            SessionOutcome::Refused(r) => Some(r),
            _ => None,
        }
    }

    /// The exit code of a command that audited this one session (`sync`,
    /// `verify-capture`).
    pub fn exit_code(&self) -> i32 {
        match self.verdict() {
            Some(VerdictKind::Verified | VerdictKind::VerifiedSourceOnly) => exit::OK,
            Some(VerdictKind::Incomplete) => exit::INCOMPLETE,
            Some(VerdictKind::Unknown) => exit::UNKNOWN,
            None => exit::ERROR,
        }
    }
}

/// A refusal as a session holds it: the [`Refusal`] (class, location, the
/// rule's wording, with the qualified rule's id last in parentheses when one
/// was in play) and its text as the manifest writes it.
///
/// The manifest keeps location and detail in one `reason` member, so a
/// record read back from a manifest ([`Refused::recorded`]) holds the whole
/// text as the detail with an empty location: the text, class and rule are
/// the same as the audit's, and nothing is guessed by splitting the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    refusal: Refusal,
    /// `refusal.to_string()`, kept so the record can lend it.
    text: String,
}

impl Refused {
    pub fn new(refusal: Refusal) -> Refused {
        Refused {
            text: refusal.to_string(),
            refusal,
        }
    }

    /// A refusal read back from a manifest: its class and its text.
    pub fn recorded(class: ReasonClass, text: String) -> Refused {
        Refused {
            refusal: Refusal::new(class, "", text.clone()),
            text,
        }
    }

    pub fn refusal(&self) -> &Refusal {
        &self.refusal
    }

    pub fn class(&self) -> ReasonClass {
        self.refusal.class
    }

    /// `unknown` or `incomplete`, by the class.
    pub fn verdict(&self) -> VerdictKind {
        self.refusal.class.verdict()
    }

    /// `location: detail`, as the manifest words it.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The qualified rule the refusal names (a projection bound it broke),
    /// if any: the id in parentheses that ends the detail. Most refusals, of
    /// the source itself, name none.
    pub fn rule(&self) -> Option<RuleId> {
        let (_, last) = self.text.rsplit_once('(')?;
        RuleId::from_id(last.strip_suffix(')')?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_outcome_reads_as_its_id_class_and_reason() {
        let rule = RuleId::ALL[0];
        let refused = SessionOutcome::refused(Refusal::new(
            ReasonClass::UnqualifiedProjection,
            "steps[3]",
            format!("out of bounds ({})", rule.id()),
        ));
        assert_eq!(refused.kind().as_str(), "unknown");
        assert_eq!(
            refused.reason_text(),
            Some(format!("steps[3]: out of bounds ({})", rule.id()).as_str())
        );
        assert_eq!(refused.refusal().and_then(Refused::rule), Some(rule));
        assert_eq!(refused.exit_code(), exit::UNKNOWN);
        let incomplete = SessionOutcome::refused(Refusal::new(ReasonClass::FullMismatch, "", "x"));
        assert_eq!(incomplete.kind().as_str(), "incomplete");
        assert_eq!(incomplete.refusal().and_then(Refused::rule), None);
        let not_fetched = SessionOutcome::NotFetched {
            reason: "refused".into(),
        };
        assert_eq!(not_fetched.kind(), Outcome::NotFetched);
        assert_eq!(not_fetched.class(), Some(ReasonClass::DaemonUnavailable));
        assert!(!not_fetched.settled());
        let error = SessionOutcome::Error {
            reason: "io".into(),
        };
        assert_eq!((error.kind(), error.class()), (Outcome::Error, None));
        assert_eq!(error.exit_code(), exit::ERROR);
        assert_eq!(
            SessionOutcome::verified(Vec::new()),
            SessionOutcome::Verified
        );
        assert_eq!(SessionOutcome::Verified.reason_text(), None);
        let recorded = Refused::recorded(ReasonClass::UnknownField, "a: b".into());
        assert_eq!(recorded.refusal().to_string(), "a: b");
    }
}
