//! `agy-audit audit-qualify`: the CI regression against a captured manifest.

use super::common::DecodeArgs;
use crate::manifest::Manifest;
use crate::pipeline::AuditContext;
use crate::report::qualify::qualify;
use crate::verdict::{exit, ReasonClass, VerdictKind};
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;

/// Recheck every session of a version-5 manifest offline (current profile and
/// digest of each source); exit non-zero when a recorded result no longer holds.
/// A manifest that is not complete (an interrupted sweep, sessions not
/// fetched) is refused with exit 1: missing evidence never qualifies.
#[derive(Debug, Args)]
pub struct QualifyArgs {
    /// The captured manifest.json (manifestVersion 5).
    pub manifest: PathBuf,
    /// Store root holding the sources (default: the manifest's root).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    #[command(flatten)]
    pub decode: DecodeArgs,
}

/// Why a manifest is not a finished audit, if it is not: missing evidence
/// must never qualify. Older manifests recorded daemon failures as
/// `unknown` with class `daemon-unavailable`; those are refused too.
fn unfinished(m: &Manifest) -> Option<String> {
    let missing = m
        .sessions
        .iter()
        .filter(|s| s.reason_class == Some(ReasonClass::DaemonUnavailable))
        .count();
    if !m.complete {
        return Some(format!(
            "the manifest is not complete (complete: false; {missing} session{} not fetched)",
            if missing == 1 { "" } else { "s" }
        ));
    }
    (missing > 0).then(|| {
        format!(
            "{missing} session{} not fetched (the daemon could not be used)",
            if missing == 1 { " was" } else { "s were" }
        )
    })
}

pub fn run(a: QualifyArgs) -> anyhow::Result<i32> {
    let bytes =
        std::fs::read(&a.manifest).with_context(|| format!("reading {}", a.manifest.display()))?;
    let manifest =
        Manifest::parse(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", a.manifest.display()))?;
    if let Some(why) = unfinished(&manifest) {
        crate::note!(
            "audit-qualify: {}: refused: {why}; finish it with `agy-audit audit-sweep --resume` before qualifying",
            a.manifest.display()
        );
        return Ok(exit::ERROR);
    }
    let (schema, key) = a.decode.load()?;
    let root = a
        .root
        .clone()
        .unwrap_or_else(|| PathBuf::from(&manifest.root));
    let ctx = AuditContext {
        schema: &schema,
        key: &key,
        client: None,
        bracket_retries: 0,
    };
    let results = qualify(&ctx, &manifest, &root);
    let mut totals = std::collections::BTreeMap::<&str, usize>::new();
    let mut broken = 0;
    let mut incomplete = false;
    for r in &results {
        outln!("{}", r.line());
        *totals.entry(r.status).or_insert(0) += 1;
        if !r.holds {
            broken += 1;
            incomplete |= r
                .change
                .map(|c| c.verdict() == VerdictKind::Incomplete)
                .unwrap_or(false);
        }
    }
    let t = |k| totals.get(k).copied().unwrap_or(0);
    outln!(
        "audit-qualify: sessions={} verified={} verifiedSourceOnly={} incomplete={} unknown={} error={} holding={} changed={}",
        results.len(),
        t("VERIFIED"),
        t("VERIFIED WITH SOURCE-ONLY FIELDS"),
        t("INCOMPLETE"),
        t("UNKNOWN"),
        t("ERROR"),
        results.len() - broken,
        broken
    );
    Ok(if broken == 0 {
        exit::OK
    } else if incomplete {
        exit::INCOMPLETE
    } else {
        exit::UNKNOWN
    })
}
