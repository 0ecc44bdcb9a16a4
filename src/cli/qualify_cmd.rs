//! `agy-audit audit-qualify`: the CI regression against a captured manifest.

use super::common::DecodeArgs;
use crate::manifest::Manifest;
use crate::pipeline::AuditContext;
use crate::redact::{Mode, Redactions};
use crate::report::qualify::qualify;
use crate::util::atomic::Named;
use crate::verdict::{exit, ReasonClass, VerdictKind};
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
    /// Accept a manifest that selected no conversation (an empty sweep or an
    /// empty shard); without it such a manifest is refused, exit 1: an empty
    /// or mistaken root is not a passing audit.
    #[arg(long)]
    pub allow_empty: bool,
    /// Also write the results as JUnit XML to FILE (atomically; never over
    /// the manifest, a decode input or a source): one testcase per session
    /// (classname its profile, name its file id), a <failure> with the
    /// reason for every recorded result that no longer holds.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Replace an existing --junit file.
    #[arg(long)]
    pub force: bool,
    /// Print one JSON object instead of the lines: {"manifest", "root",
    /// "sessions": [{"fileId", "status", "holds", "reason", "change"}],
    /// "counts": {"sessions", "verified", "verifiedSourceOnly",
    /// "incomplete", "unknown", "error", "holding", "changed"}, "absent":
    /// [fileId...]} ("reason" and "change", the class of what no longer
    /// holds, are null when there is none). The exit code is the same.
    #[arg(long)]
    pub json: bool,
    /// Do not redact credentials from the reasons printed, in --json and in
    /// --junit (a local look only: the lines then say so first, --json as
    /// "redaction": {"redacted": false}, --junit as the property
    /// agy-audit.redacted=false). By default each credential the ruleset
    /// finds becomes [REDACTED:<rule id>] and the output counts them.
    #[arg(long)]
    pub no_redact: bool,
    #[command(flatten)]
    pub decode: DecodeArgs,
}

/// Why a manifest is not a finished audit, if it is not: missing evidence
/// must never qualify. Older manifests recorded daemon failures as
/// `unknown` with class `daemon-unavailable`; those are refused too.
fn unfinished(m: &Manifest, allow_empty: bool) -> Option<String> {
    let missing = m
        .sessions
        .iter()
        .filter(|s| s.class() == Some(ReasonClass::DaemonUnavailable))
        .count();
    if !m.complete {
        return Some(format!(
            "the manifest is not complete (complete: false; {missing} session{} not fetched)",
            if missing == 1 { "" } else { "s" }
        ));
    }
    if m.sessions.is_empty() && !allow_empty {
        return Some(match &m.shard {
            Some(sh) => format!(
                "shard {sh} selected no conversation (an empty shard is judged when the shards are merged; pass --allow-empty to accept it alone)"
            ),
            None => "the sweep selected no conversation (an empty or mistaken root is not a passing audit; pass --allow-empty to accept it)".to_string(),
        });
    }
    (missing > 0).then(|| {
        format!(
            "{missing} session{} not fetched (the daemon could not be used)",
            if missing == 1 { " was" } else { "s were" }
        )
    })
}

pub fn run(mut a: QualifyArgs) -> anyhow::Result<i32> {
    // A sweep folder names its manifest.json: from here on, the file.
    let (manifest_file, manifest) = crate::manifest::read::read(&a.manifest)?;
    a.manifest = manifest_file;
    if let Some(why) = unfinished(&manifest, a.allow_empty) {
        crate::note!(
            "audit-qualify: {}: refused: {why}; finish it with `agy-audit audit-sweep --resume` before qualifying",
            a.manifest.display()
        );
        return Ok(exit::ERROR);
    }
    let root = a
        .root
        .clone()
        .unwrap_or_else(|| PathBuf::from(&manifest.root));
    // --junit against every file this command reads, before any line is
    // printed: a refused --junit never follows the rechecks on stdout.
    let inputs = qualify_inputs(&a, &manifest, &root);
    if let Some(junit) = &a.junit {
        super::common::refuse_collisions(&[Named::new("--junit", junit)], &inputs, a.force)?;
    }
    let (schema, key) = a.decode.load()?;
    let mut results = qualify(&AuditContext::offline(&schema, &key), &manifest, &root);
    let mode = Mode::from_no_redact(a.no_redact);
    let tally = redact_reasons(&mut results, mode, a.json);
    let counts = Counts::of(&results, !a.json);
    if let Some(junit) = &a.junit {
        let protected = inputs.into_iter().map(|n| n.path).collect();
        let props = crate::report::redacted::junit_properties(mode, &tally);
        write_junit(junit, &a, &manifest, protected, &results, &props)?;
    }
    let absent = absent_sources(&manifest, &root);
    if a.json {
        print_json(&a, &root, &results, &counts, &absent, mode, &tally)?;
    } else {
        print_summary(&results, &counts, &absent, mode, &tally);
    }
    Ok(counts.exit_code())
}

/// Rechecked as recorded; only the reasons shown are redacted (unless
/// `--no-redact`, which the lines then say first).
fn redact_reasons(
    results: &mut [crate::report::qualify::Recheck],
    mode: Mode,
    json: bool,
) -> Redactions {
    let mut tally = Redactions::default();
    if mode.on() {
        for r in results.iter_mut() {
            if let Some(t) = &mut r.reason {
                tally.apply_owned(t);
            }
        }
    } else if !json {
        outln!("{}", crate::redact::NOT_REDACTED);
    }
    tally
}

/// The rechecks counted by status, and those whose recorded result no
/// longer holds.
struct Counts {
    totals: std::collections::BTreeMap<&'static str, usize>,
    sessions: usize,
    broken: usize,
    /// One that no longer holds became incomplete.
    incomplete: bool,
}

impl Counts {
    /// Counts `results`, printing each one's line when `lines`.
    fn of(results: &[crate::report::qualify::Recheck], lines: bool) -> Counts {
        let mut c = Counts {
            totals: std::collections::BTreeMap::new(),
            sessions: results.len(),
            broken: 0,
            incomplete: false,
        };
        for r in results {
            if lines {
                outln!("{}", r.line());
            }
            *c.totals.entry(r.status).or_insert(0) += 1;
            if !r.holds {
                c.broken += 1;
                c.incomplete |= r
                    .change
                    .map(|c| c.verdict() == VerdictKind::Incomplete)
                    .unwrap_or(false);
            }
        }
        c
    }

    fn of_status(&self, status: &str) -> usize {
        self.totals.get(status).copied().unwrap_or(0)
    }

    fn exit_code(&self) -> i32 {
        if self.broken == 0 {
            exit::OK
        } else if self.incomplete {
            exit::INCOMPLETE
        } else {
            exit::UNKNOWN
        }
    }
}

/// `--json`: the one object.
fn print_json(
    a: &QualifyArgs,
    root: &std::path::Path,
    results: &[crate::report::qualify::Recheck],
    counts: &Counts,
    absent: &[String],
    mode: Mode,
    tally: &Redactions,
) -> anyhow::Result<()> {
    let t = |k| counts.of_status(k);
    let sessions: Vec<serde_json::Value> = results
        .iter()
        .map(|r| {
            serde_json::json!({
                "fileId": r.file_id,
                "status": r.status,
                "holds": r.holds,
                "reason": r.reason,
                "change": r.change.map(|c| c.id()),
            })
        })
        .collect();
    let doc = serde_json::json!({
        "manifest": a.manifest.display().to_string(),
        "root": root.display().to_string(),
        "sessions": sessions,
        "counts": {
            "sessions": counts.sessions,
            "verified": t("VERIFIED"),
            "verifiedSourceOnly": t("VERIFIED WITH SOURCE-ONLY FIELDS"),
            "incomplete": t("INCOMPLETE"),
            "unknown": t("UNKNOWN"),
            "error": t("ERROR"),
            "holding": counts.sessions - counts.broken,
            "changed": counts.broken,
        },
        "absent": absent,
        "redaction": crate::report::redacted::json_member(mode, tally),
    });
    outln!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}

/// The text's last lines: the sources absent from the manifest, the
/// counts, the redaction tally.
fn print_summary(
    results: &[crate::report::qualify::Recheck],
    counts: &Counts,
    absent: &[String],
    mode: Mode,
    tally: &Redactions,
) {
    let t = |k| counts.of_status(k);
    if !absent.is_empty() {
        const SHOWN: usize = 20;
        let more = absent.len().saturating_sub(SHOWN);
        outln!(
            "audit-qualify: {} in the store but absent from the manifest (not qualified by it): {}{}",
            crate::util::count(absent.len() as u64, "source"),
            absent
                .iter()
                .take(SHOWN)
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        );
    }
    outln!(
        "audit-qualify: sessions={} verified={} verifiedSourceOnly={} incomplete={} unknown={} error={} holding={} changed={} absent={}",
        results.len(),
        t("VERIFIED"),
        t("VERIFIED WITH SOURCE-ONLY FIELDS"),
        t("INCOMPLETE"),
        t("UNKNOWN"),
        t("ERROR"),
        results.len() - counts.broken,
        counts.broken,
        absent.len()
    );
    if mode.on() {
        outln!("audit-qualify: {tally}");
    }
}

/// The files audit-qualify reads (the manifest, the decode inputs, every
/// source the manifest records under `root`): never its --junit.
fn qualify_inputs(a: &QualifyArgs, m: &Manifest, root: &std::path::Path) -> Vec<Named> {
    let mut v = vec![Named::new("MANIFEST", &a.manifest)];
    v.extend(a.decode.named_inputs());
    v.extend(super::common::source_inputs(m, root));
    v
}

/// `--junit FILE`: one testcase per rechecked session (never over one of
/// `protected`, the command's inputs).
fn write_junit(
    out: &std::path::Path,
    a: &QualifyArgs,
    m: &Manifest,
    protected: Vec<PathBuf>,
    results: &[crate::report::qualify::Recheck],
    properties: &[(String, String)],
) -> anyhow::Result<()> {
    use crate::report::junit::{render_with, Case};
    let profiles: std::collections::HashMap<&str, &str> = m
        .sessions
        .iter()
        .map(|s| (s.file_id.as_str(), s.profile.as_str()))
        .collect();
    let cases: Vec<Case> = results
        .iter()
        .map(|r| Case {
            classname: profiles
                .get(r.file_id.as_str())
                .copied()
                .unwrap_or("")
                .to_string(),
            name: r.file_id.clone(),
            failure: (!r.holds).then(|| {
                (
                    r.change.map(|c| c.id()).unwrap_or(r.status).to_string(),
                    format!(
                        "recorded result no longer holds: {} ({})",
                        r.status,
                        r.reason.as_deref().unwrap_or("no reason given")
                    ),
                )
            }),
        })
        .collect();
    let xml = render_with(
        "agy-audit audit-qualify",
        "audit-qualify",
        properties,
        &cases,
    );
    crate::util::atomic::write_file(
        out,
        xml.as_bytes(),
        &crate::util::atomic::WriteOptions {
            force: a.force,
            protected,
            ..Default::default()
        },
    )?;
    Ok(())
}

/// The conversations of the store (those of the manifest's shard, for a
/// shard manifest) that the manifest does not record: present in the store,
/// qualified by nothing. Empty when the store cannot be listed (each
/// recorded source's own check reports that).
fn absent_sources(m: &Manifest, root: &std::path::Path) -> Vec<String> {
    let Ok(found) = crate::discover::discover(root) else {
        return Vec::new();
    };
    let shard = m
        .shard
        .as_deref()
        .and_then(|s| super::common::parse_shard(s).ok());
    let recorded: std::collections::HashSet<&str> =
        m.sessions.iter().map(|s| s.file_id.as_str()).collect();
    found
        .sources
        .iter()
        .map(|s| s.id.as_str())
        .filter(|id| shard.is_none_or(|sh| crate::pipeline::shard::in_shard(id, sh)))
        .filter(|id| !recorded.contains(id))
        .map(str::to_string)
        .collect()
}
