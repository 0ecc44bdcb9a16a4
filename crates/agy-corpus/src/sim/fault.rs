//! Fault specifications of the simulated daemon: `ID:KIND[:ARG]` for one
//! conversation, `rate=R:KIND[:ARG]` for a seeded fraction of them.

use crate::corpus::rng;
use crate::ids::{ReasonClass, VerdictKind};
use std::fmt;

/// What goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    /// An older trajectory with fewer steps (both views).
    StaleCache,
    /// One step's older content, same step count (both views).
    SameStepStale,
    /// A field dropped from the ordinary view.
    DroppedField,
    /// An RPC-only JSON field the schema does not know, in the full view.
    ExtraRpcField,
    /// Full and ordinary views from different versions (the ordinary is older).
    VersionSkew,
    /// HTTP 500 on GetCascadeTrajectory.
    Http500,
    /// HTTP 503 on GetCascadeTrajectory.
    Http503,
    /// The connection is closed without a response.
    Reset,
    /// A fixed delay of ARG milliseconds before answering.
    Latency(u64),
    /// A delay of 0..=ARG milliseconds, seeded per request.
    Jitter(u64),
    /// No answer until the server stops.
    Hang,
    /// The body stops half way (the connection is closed).
    TruncatedBody,
    /// A body of about ARG bytes (default 300 MB), streamed lazily.
    OversizedBody(u64),
    /// A body that is not JSON.
    InvalidJson,
    /// With each GetCascadeTrajectory answer (the first included), the source is rewritten.
    MutateSource,
    /// LoadTrajectory fails.
    NotLoaded,
}

/// Default size of an oversized body.
pub const OVERSIZED_DEFAULT: u64 = 300 << 20;

/// Why a fault specification could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad fault spec `{spec}`: {detail}")]
pub struct FaultParseError {
    /// The text given.
    pub spec: String,
    /// What is wrong with it.
    pub detail: String,
}

impl FaultKind {
    /// Every kind, with a representative argument, in a stable order.
    pub const ALL: &'static [FaultKind] = &[
        FaultKind::StaleCache,
        FaultKind::SameStepStale,
        FaultKind::DroppedField,
        FaultKind::ExtraRpcField,
        FaultKind::VersionSkew,
        FaultKind::Http500,
        FaultKind::Http503,
        FaultKind::Reset,
        FaultKind::Latency(40),
        FaultKind::Jitter(60),
        FaultKind::Hang,
        FaultKind::TruncatedBody,
        FaultKind::OversizedBody(OVERSIZED_DEFAULT),
        FaultKind::InvalidJson,
        FaultKind::MutateSource,
        FaultKind::NotLoaded,
    ];

    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::StaleCache => "stale-cache",
            FaultKind::SameStepStale => "same-step-stale",
            FaultKind::DroppedField => "dropped-field",
            FaultKind::ExtraRpcField => "extra-rpc-field",
            FaultKind::VersionSkew => "version-skew",
            FaultKind::Http500 => "http-500",
            FaultKind::Http503 => "http-503",
            FaultKind::Reset => "reset",
            FaultKind::Latency(_) => "latency",
            FaultKind::Jitter(_) => "jitter",
            FaultKind::Hang => "hang",
            FaultKind::TruncatedBody => "truncated-body",
            FaultKind::OversizedBody(_) => "oversized-body",
            FaultKind::InvalidJson => "invalid-json",
            FaultKind::MutateSource => "mutate-source",
            FaultKind::NotLoaded => "not-loaded",
        }
    }

    /// Parses `KIND[:ARG]`.
    pub fn parse(text: &str) -> Result<FaultKind, String> {
        let (name, arg) = match text.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (text, None),
        };
        let num = |what: &str| -> Result<u64, String> {
            let a = arg.ok_or_else(|| format!("{name} needs :{what}"))?;
            a.trim()
                .parse::<u64>()
                .map_err(|_| format!("{name} takes {what}, a whole number (0 or more), not `{a}`"))
        };
        let kind = match name {
            "stale-cache" => FaultKind::StaleCache,
            "same-step-stale" => FaultKind::SameStepStale,
            "dropped-field" => FaultKind::DroppedField,
            "extra-rpc-field" => FaultKind::ExtraRpcField,
            "version-skew" => FaultKind::VersionSkew,
            "http-500" => FaultKind::Http500,
            "http-503" => FaultKind::Http503,
            "reset" => FaultKind::Reset,
            "latency" => FaultKind::Latency(num("MS")?),
            "jitter" => FaultKind::Jitter(num("MS")?),
            "hang" => FaultKind::Hang,
            "truncated-body" | "truncated" => FaultKind::TruncatedBody,
            "oversized-body" | "oversized" => match arg {
                Some(_) => FaultKind::OversizedBody(num("BYTES")?),
                None => FaultKind::OversizedBody(OVERSIZED_DEFAULT),
            },
            "invalid-json" => FaultKind::InvalidJson,
            "mutate-source" => FaultKind::MutateSource,
            "not-loaded" => FaultKind::NotLoaded,
            other => return Err(format!("unknown fault kind `{other}`")),
        };
        let takes_arg = matches!(
            kind,
            FaultKind::Latency(_) | FaultKind::Jitter(_) | FaultKind::OversizedBody(_)
        );
        if arg.is_some() && !takes_arg {
            return Err(format!("{name} takes no argument"));
        }
        Ok(kind)
    }

    /// The verdict a reader should reach for a conversation served with this
    /// fault, or `None` when the fault must not change it. A daemon failure
    /// is `daemon-unavailable`, which mints no verdict: the session is
    /// recorded as `not-fetched` (`crate::ids::Outcome::NotFetched`).
    pub fn expected(self) -> Option<(VerdictKind, ReasonClass)> {
        use FaultKind::*;
        match self {
            StaleCache | SameStepStale | ExtraRpcField => {
                Some((VerdictKind::Incomplete, ReasonClass::FullMismatch))
            }
            DroppedField | VersionSkew => {
                Some((VerdictKind::Incomplete, ReasonClass::OrdinaryMismatch))
            }
            MutateSource => Some((VerdictKind::Incomplete, ReasonClass::SourceChanged)),
            Http500 | Http503 | Reset | Hang | TruncatedBody | OversizedBody(_) | InvalidJson
            | NotLoaded => Some((VerdictKind::Unknown, ReasonClass::DaemonUnavailable)),
            Latency(_) | Jitter(_) => None,
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultKind::Latency(ms) | FaultKind::Jitter(ms) => write!(f, "{}:{ms}", self.name()),
            FaultKind::OversizedBody(b) if *b != OVERSIZED_DEFAULT => {
                write!(f, "{}:{b}", self.name())
            }
            _ => f.write_str(self.name()),
        }
    }
}

/// Which conversations a fault applies to.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultTarget {
    /// One cascade id.
    Id(String),
    /// A seeded fraction of all ids.
    Rate(f64),
}

/// One `--fault` specification.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultSpec {
    /// Which conversations.
    pub target: FaultTarget,
    /// What happens to them.
    pub kind: FaultKind,
}

impl FaultSpec {
    /// A fault on one conversation.
    pub fn for_id(id: &str, kind: FaultKind) -> FaultSpec {
        FaultSpec {
            target: FaultTarget::Id(id.to_string()),
            kind,
        }
    }

    /// Parses `ID:KIND[:ARG]` or `rate=R:KIND[:ARG]`.
    pub fn parse(text: &str) -> Result<FaultSpec, FaultParseError> {
        let err = |detail: String| FaultParseError {
            spec: text.to_string(),
            detail,
        };
        let t = text.trim();
        let (head, rest) = t
            .split_once(':')
            .ok_or_else(|| err("expected ID:KIND[:ARG] or rate=R:KIND[:ARG]".into()))?;
        let target = if let Some(r) = head.strip_prefix("rate=") {
            let rate: f64 = r
                .parse()
                .map_err(|_| err(format!("rate takes a number between 0 and 1, not `{r}`")))?;
            if !(0.0..=1.0).contains(&rate) {
                return Err(err(format!(
                    "rate must be a finite number between 0 and 1, got {r}"
                )));
            }
            FaultTarget::Rate(rate)
        } else {
            if head.is_empty() {
                return Err(err("empty conversation id".into()));
            }
            FaultTarget::Id(head.to_string())
        };
        let kind = FaultKind::parse(rest).map_err(err)?;
        Ok(FaultSpec { target, kind })
    }

    /// Whether this fault applies to `id` under `seed`.
    pub fn applies(&self, id: &str, seed: u64) -> bool {
        match &self.target {
            FaultTarget::Id(x) => x == id,
            FaultTarget::Rate(r) => {
                let h = rng::derive(seed, &["fault-rate", self.kind.name(), id]);
                ((h >> 11) as f64 / (1u64 << 53) as f64) < *r
            }
        }
    }
}

impl fmt::Display for FaultSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            FaultTarget::Id(id) => write!(f, "{id}:{}", self.kind),
            FaultTarget::Rate(r) => write!(f, "rate={r}:{}", self.kind),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_round_trip() {
        for k in FaultKind::ALL {
            let s = FaultSpec::for_id("abc", *k);
            assert_eq!(FaultSpec::parse(&s.to_string()).unwrap(), s, "{s}");
        }
        let r = FaultSpec::parse("rate=0.25:latency:10").unwrap();
        assert_eq!(r.target, FaultTarget::Rate(0.25));
        assert_eq!(r.kind, FaultKind::Latency(10));
        assert!(FaultSpec::parse("abc:latency").is_err());
        assert!(FaultSpec::parse("abc:hang:3").is_err());
        assert!(FaultSpec::parse("abc:nope").is_err());
        assert!(FaultSpec::parse("rate=2:hang").is_err());
        assert_eq!(
            FaultSpec::parse("x:oversized-body:1000").unwrap().kind,
            FaultKind::OversizedBody(1000)
        );
    }

    #[test]
    fn rates_are_seeded() {
        let s = FaultSpec::parse("rate=0.5:http-500").unwrap();
        let ids: Vec<String> = (0..200).map(|i| format!("id-{i}")).collect();
        let a: Vec<bool> = ids.iter().map(|i| s.applies(i, 1)).collect();
        let b: Vec<bool> = ids.iter().map(|i| s.applies(i, 1)).collect();
        let c: Vec<bool> = ids.iter().map(|i| s.applies(i, 2)).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let n = a.iter().filter(|x| **x).count();
        assert!((60..140).contains(&n), "{n}");
    }
}
