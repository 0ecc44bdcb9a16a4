//! `manifest merge`: the shard manifests of one sweep as one version-5
//! manifest.
//!
//! Merge proves completeness instead of trusting it (issue 44 item 3): every
//! flag and count of the result is recomputed from the sessions, and each
//! shard is first held to the strict reader's checks
//! ([`super::read::check`]) whoever built it.
//!
//! Refused (nothing written): a manifest that does not pass those checks
//! (counts that are not the recount, `complete` with a not-fetched session,
//! `emptyShard` with sessions, a shard name that is not `i/n` in digits...),
//! a manifest that is not a shard, shards of different counts, the same
//! shard twice, a session in two shards, or a session outside the shard that
//! holds it. Merged with `complete: false` (and the reasons in
//! `merged.problems`): a shard missing, a shard not complete (its own flag,
//! a not-fetched session, or no `finished`), a shard without
//! `readerProfiles` (which reader ran it is unproven), shards of different
//! store roots or reader profiles, or a shard assigned by listing position
//! (no `shardBy`). Totals, per-profile and per-format counts are recounted
//! from the sessions.

use super::read::{check, parse_shard, ManifestProblem};
use super::{Manifest, Merged, MergedShard, MANIFEST_VERSION};
use crate::outcome::SessionOutcome;
use crate::pipeline::shard::{in_shard, SHARD_ASSIGNMENT};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why shards cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("no shard manifest given")]
    Nothing,
    #[error("{}: {problem}", file.display())]
    Invalid {
        file: PathBuf,
        problem: ManifestProblem,
    },
    #[error("{file}: not a shard manifest (no `shard`); merge takes the manifests of `audit-sweep --shard i/n`")]
    NotAShard { file: PathBuf },
    #[error("{file}: shard `{shard}` is not i/n with 1 <= i <= n")]
    BadShard { file: PathBuf, shard: String },
    #[error(
        "conflicting shard sets: {a} is shard {sa}, {b} is shard {sb}: shards of one sweep share n"
    )]
    Counts {
        a: PathBuf,
        sa: String,
        b: PathBuf,
        sb: String,
    },
    #[error("conflicting shard sets: {a} and {b} are both shard {shard}")]
    Duplicate {
        a: PathBuf,
        b: PathBuf,
        shard: String,
    },
    #[error("overlapping sessions: {a} and {b} both hold session {file_id}")]
    Overlap {
        a: PathBuf,
        b: PathBuf,
        file_id: String,
    },
    #[error(
        "{file}: session {file_id} is not of shard {shard} under the {SHARD_ASSIGNMENT} assignment"
    )]
    Misplaced {
        file: PathBuf,
        file_id: String,
        shard: String,
    },
}

/// Whether a shard proves itself complete: its own flag, a finished run,
/// and no session without a verdict for want of the daemon.
fn shard_complete(m: &Manifest) -> bool {
    m.complete
        && m.finished.is_some()
        && !m
            .sessions
            .iter()
            .any(|s| matches!(s.result, SessionOutcome::NotFetched { .. }))
}

/// The shards by index, each with the file it was read from.
type ByIndex<'a> = BTreeMap<usize, (&'a Path, &'a Manifest)>;

/// Merges `shards` (each a manifest with the file it was read from),
/// leaving them as they are ([`merge_moving`] of a copy).
pub fn merge(shards: &[(PathBuf, Manifest)]) -> Result<Manifest, MergeError> {
    merge_moving(&mut shards.to_vec())
}

/// Merges `shards`, moving their sessions into the merged manifest once
/// every check has passed (each shard keeps everything else, its sessions
/// emptied), so that 100,000 sessions are held once, not twice. On an
/// error nothing is moved.
pub fn merge_moving(shards: &mut [(PathBuf, Manifest)]) -> Result<Manifest, MergeError> {
    let mut problems = Vec::new();
    let (mut out, n, missing, merged_shards) = {
        let (by_index, n) = index_shards(shards)?;
        check_sessions(&by_index, n, &mut problems)?;
        let missing = missing_shards(&by_index, n, &mut problems);
        let first = compare_to_first(&by_index, &mut problems)?;
        let out = assemble(&by_index, first);
        (out, n, missing, merged_shards(&by_index, n))
    };
    let mut sessions = Vec::with_capacity(shards.iter().map(|(_, m)| m.sessions.len()).sum());
    for (_, m) in shards.iter_mut() {
        sessions.append(&mut m.sessions);
    }
    sessions.sort_by(|a, b| a.file_id.cmp(&b.file_id));
    out.sessions = sessions;
    out.recount();
    unfinished_problems(&out, &mut problems);
    out.complete = problems.is_empty();
    out.merged = Some(Merged {
        shard_count: n,
        shards: merged_shards,
        missing,
        problems,
    });
    Ok(out)
}

/// Every input checked strictly and a shard; all share n; no index twice:
/// the shards by index, and n.
fn index_shards(shards: &[(PathBuf, Manifest)]) -> Result<(ByIndex<'_>, usize), MergeError> {
    let mut by_index: ByIndex<'_> = BTreeMap::new();
    let mut count: Option<(usize, &Path, &str)> = None;
    for (file, m) in shards {
        check(m).map_err(|problem| MergeError::Invalid {
            file: file.clone(),
            problem,
        })?;
        let shard = m
            .shard
            .as_deref()
            .ok_or_else(|| MergeError::NotAShard { file: file.clone() })?;
        let (i, n) = parse_shard(shard).ok_or_else(|| MergeError::BadShard {
            file: file.clone(),
            shard: shard.to_string(),
        })?;
        match count {
            Some((n0, f0, s0)) if n0 != n => {
                return Err(MergeError::Counts {
                    a: f0.to_path_buf(),
                    sa: s0.to_string(),
                    b: file.clone(),
                    sb: shard.to_string(),
                })
            }
            Some(_) => {}
            None => count = Some((n, file, shard)),
        }
        if let Some((f0, _)) = by_index.insert(i, (file, m)) {
            return Err(MergeError::Duplicate {
                a: f0.to_path_buf(),
                b: file.clone(),
                shard: shard.to_string(),
            });
        }
    }
    let Some((n, _, _)) = count else {
        return Err(MergeError::Nothing);
    };
    Ok((by_index, n))
}

/// No session in two shards and each in its own shard, with each shard's
/// own problems (listing position, not complete, no reader profiles)
/// added to `problems`.
fn check_sessions(
    by_index: &ByIndex<'_>,
    n: usize,
    problems: &mut Vec<String>,
) -> Result<(), MergeError> {
    let mut owner: BTreeMap<&str, &Path> = BTreeMap::new();
    for (&i, (file, m)) in by_index {
        let assigned = m.shard_by.as_deref() == Some(SHARD_ASSIGNMENT);
        for s in &m.sessions {
            if let Some(other) = owner.insert(&s.file_id, file) {
                return Err(MergeError::Overlap {
                    a: other.to_path_buf(),
                    b: file.to_path_buf(),
                    file_id: s.file_id.clone(),
                });
            }
            if assigned && !in_shard(&s.file_id, (i, n)) {
                return Err(MergeError::Misplaced {
                    file: file.to_path_buf(),
                    file_id: s.file_id.clone(),
                    shard: format!("{i}/{n}"),
                });
            }
        }
        shard_problems(file, m, i, n, assigned, problems);
    }
    Ok(())
}

/// One shard's own problems: assigned by listing position, not complete,
/// or no reader profiles.
fn shard_problems(
    file: &Path,
    m: &Manifest,
    i: usize,
    n: usize,
    assigned: bool,
    problems: &mut Vec<String>,
) {
    if !assigned {
        problems.push(format!(
            "{}: shard {i}/{n} was assigned by listing position (no shardBy {SHARD_ASSIGNMENT}): its sessions may overlap or miss another shard's",
            file.display()
        ));
    }
    if !shard_complete(m) {
        problems.push(format!(
            "{}: shard {i}/{n} is not complete (complete: false, unfinished, or a session not fetched)",
            file.display()
        ));
    }
    if m.reader_profiles.is_empty() {
        problems.push(format!(
            "{}: shard {i}/{n} records no readerProfiles: which reader ran it is unproven",
            file.display()
        ));
    }
}

/// The indexes of 1..=n no shard holds, named in `problems` when any.
fn missing_shards(by_index: &ByIndex<'_>, n: usize, problems: &mut Vec<String>) -> Vec<usize> {
    let missing: Vec<usize> = (1..=n).filter(|i| !by_index.contains_key(i)).collect();
    if !missing.is_empty() {
        problems.push(format!(
            "shard{} {} of {n} missing",
            if missing.len() == 1 { "" } else { "s" },
            missing
                .iter()
                .map(|i| format!("{i}/{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    missing
}

/// The first shard, every other compared with it: the same store root and
/// the same reader profiles, else a problem each.
fn compare_to_first<'a>(
    by_index: &ByIndex<'a>,
    problems: &mut Vec<String>,
) -> Result<&'a Manifest, MergeError> {
    let (first_file, first) = by_index
        .values()
        .next()
        .copied()
        .ok_or(MergeError::Nothing)?;
    let profile_set = |m: &Manifest| m.reader_profiles.clone();
    for (file, m) in by_index.values().skip(1) {
        if m.root != first.root {
            problems.push(format!(
                "{} swept root {}, {} swept root {}",
                first_file.display(),
                first.root,
                file.display(),
                m.root
            ));
        }
        if profile_set(m) != profile_set(first) {
            problems.push(format!(
                "{} and {} ran different reader profiles ({} and {})",
                first_file.display(),
                file.display(),
                profile_set(first).join(", "),
                profile_set(m).join(", ")
            ));
        }
    }
    Ok(first)
}

/// Every shard's skipped entries, sorted by path and reason, each once.
fn merged_skipped(by_index: &ByIndex<'_>) -> Vec<super::Skipped> {
    let mut skipped: Vec<super::Skipped> = by_index
        .values()
        .flat_map(|(_, m)| m.skipped.iter().cloned())
        .collect();
    skipped.sort_by(|a, b| (&a.path, &a.reason).cmp(&(&b.path, &b.reason)));
    skipped.dedup();
    skipped
}

/// The merged manifest before its sessions and verdict: the first shard's
/// root and endpoint, the earliest start, the latest finish (none while a
/// shard is unfinished), the longest timing.
fn assemble(by_index: &ByIndex<'_>, first: &Manifest) -> Manifest {
    let skipped = merged_skipped(by_index);
    let all_finished = by_index.values().all(|(_, m)| m.finished.is_some());
    let mut out = Manifest::new(
        &first.root,
        &first.endpoint,
        by_index
            .values()
            .map(|(_, m)| m.started.clone())
            .min()
            .unwrap_or_default(),
    );
    out.manifest_version = MANIFEST_VERSION;
    out.finished = if all_finished {
        by_index
            .values()
            .filter_map(|(_, m)| m.finished.clone())
            .max()
    } else {
        None
    };
    out.skipped = skipped;
    merge_timing(by_index, &mut out);
    out
}

/// The merged timing: the longest wall time, the highest concurrency and
/// jobs of any shard.
fn merge_timing(by_index: &ByIndex<'_>, out: &mut Manifest) {
    out.timing.wall_seconds = by_index
        .values()
        .map(|(_, m)| m.timing.wall_seconds)
        .fold(0.0, f64::max);
    out.timing.concurrency = by_index
        .values()
        .map(|(_, m)| m.timing.concurrency)
        .max()
        .unwrap_or(0);
    out.timing.jobs = by_index
        .values()
        .map(|(_, m)| m.timing.jobs)
        .max()
        .unwrap_or(0);
}

/// The merged manifest's own problems: sessions not fetched, a shard not
/// finished.
fn unfinished_problems(out: &Manifest, problems: &mut Vec<String>) {
    if let Some(s) = out
        .sessions
        .iter()
        .find(|s| matches!(s.result, SessionOutcome::NotFetched { .. }))
    {
        problems.push(format!(
            "{} session(s) not fetched (first {})",
            out.counts.not_fetched, s.file_id
        ));
    }
    if out.finished.is_none() {
        problems.push("a shard has not finished".to_string());
    }
}

/// The `merged` record's shards: each shard given, by index.
fn merged_shards(by_index: &ByIndex<'_>, n: usize) -> Vec<MergedShard> {
    by_index
        .iter()
        .map(|(i, (file, m))| MergedShard {
            shard: format!("{i}/{n}"),
            file: file.display().to_string(),
            sessions: m.sessions.len(),
            complete: shard_complete(m),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::SessionRecord;
    use crate::pipeline::shard::shard_of;

    fn shard(i: usize, n: usize, ids: &[usize]) -> Manifest {
        let mut m = Manifest::new("/store", "e", format!("2026-01-0{i}T00:00:00Z"));
        m.shard = Some(format!("{i}/{n}"));
        m.shard_by = Some(SHARD_ASSIGNMENT.into());
        m.reader_profiles = vec!["sqlite-p".into()];
        m.finished = Some(format!("2026-02-0{i}T00:00:00Z"));
        for id in ids {
            m.add(SessionRecord::for_test(
                *id,
                "sqlite-p",
                crate::outcome::SessionOutcome::Verified,
            ));
        }
        m.complete = true;
        m
    }

    /// Ids 1..=k split into their shards of n.
    fn split(k: usize, n: usize) -> Vec<(PathBuf, Manifest)> {
        (1..=n)
            .map(|i| {
                let ids: Vec<usize> = (1..=k)
                    .filter(|id| shard_of(&SessionRecord::test_id(*id), n) == i)
                    .collect();
                (PathBuf::from(format!("s{i}.json")), shard(i, n, &ids))
            })
            .collect()
    }

    #[test]
    fn all_shards_merge_complete_with_recounted_totals() {
        let m = merge(&split(40, 4)).unwrap();
        assert!(m.complete, "{:?}", m.merged);
        assert_eq!(m.counts.selected, 40);
        assert_eq!(m.counts.verified, 40);
        assert_eq!(m.counts_by_profile["sqlite-p"].selected, 40);
        assert_eq!(m.shard, None);
        assert_eq!(m.started, "2026-01-01T00:00:00Z");
        assert_eq!(m.finished.as_deref(), Some("2026-02-04T00:00:00Z"));
        let ids: Vec<&str> = m.sessions.iter().map(|s| s.file_id.as_str()).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
    }

    #[test]
    fn a_missing_or_unfinished_shard_leaves_the_merge_incomplete() {
        let mut shards = split(40, 4);
        shards.remove(2);
        let m = merge(&shards).unwrap();
        assert!(!m.complete);
        assert_eq!(m.merged.as_ref().unwrap().missing, vec![3]);
        let mut shards = split(40, 4);
        shards[1].1.complete = false;
        assert!(!merge(&shards).unwrap().complete);
        let mut shards = split(40, 4);
        shards[1].1.root = "/elsewhere".into();
        assert!(!merge(&shards).unwrap().complete);
        let mut shards = split(40, 4);
        shards[3].1.reader_profiles = vec!["sqlite-q".into()];
        assert!(!merge(&shards).unwrap().complete);
    }

    /// A shard that claims more than its sessions show is refused or leaves
    /// the merge incomplete: nothing it says of itself is taken on trust.
    #[test]
    fn a_lying_shard_never_merges_complete() {
        use crate::outcome::SessionOutcome;
        // complete: true while holding a not-fetched session.
        let mut shards = split(40, 2);
        let m = &mut shards[0].1;
        let id = m.sessions[0].file_id.clone();
        m.sessions[0].result = SessionOutcome::NotFetched {
            reason: "HTTP 500".into(),
        };
        m.recount();
        let e = merge(&shards).unwrap_err();
        assert!(
            matches!(
                &e,
                MergeError::Invalid {
                    problem: ManifestProblem::CompleteNotFetched { .. },
                    ..
                }
            ),
            "{e}"
        );
        // Whoever built it: with the flag honest, the merge still says
        // not complete, counting the session.
        shards[0].1.complete = false;
        let merged = merge(&shards).unwrap();
        assert!(!merged.complete);
        assert_eq!(merged.counts.not_fetched, 1);
        assert!(merged
            .merged
            .as_ref()
            .unwrap()
            .problems
            .iter()
            .any(|p| p.contains(&id)));
        // No readerProfiles: which reader ran it is unproven.
        let mut shards = split(40, 2);
        shards[1].1.reader_profiles.clear();
        let merged = merge(&shards).unwrap();
        assert!(!merged.complete, "{:?}", merged.merged);
        // emptyShard with sessions, and a shard named with a sign.
        let mut shards = split(40, 2);
        shards[0].1.empty_shard = true;
        assert!(matches!(
            merge(&shards).unwrap_err(),
            MergeError::Invalid {
                problem: ManifestProblem::EmptyShardWithSessions(_),
                ..
            }
        ));
        let mut shards = split(40, 2);
        shards[1].1.shard = Some("+2/2".into());
        assert!(matches!(
            merge(&shards).unwrap_err(),
            MergeError::Invalid {
                problem: ManifestProblem::Shard(_),
                ..
            }
        ));
        // Lying counts.
        let mut shards = split(40, 2);
        shards[0].1.counts.verified += 1;
        assert!(matches!(
            merge(&shards).unwrap_err(),
            MergeError::Invalid {
                problem: ManifestProblem::Count { .. },
                ..
            }
        ));
        // An unfinished shard.
        let mut shards = split(40, 2);
        shards[0].1.finished = None;
        shards[0].1.complete = false;
        assert!(!merge(&shards).unwrap().complete);
    }

    #[test]
    fn overlap_and_conflicting_sets_are_refused_naming_both_files() {
        // Shards assigned by listing position can overlap; a merge names
        // both files.
        let mut shards = split(40, 4);
        for (_, m) in &mut shards {
            m.shard_by = None;
        }
        let stray = shards[0].1.sessions[0].clone();
        shards[1].1.add(stray);
        let e = merge(&shards).unwrap_err().to_string();
        assert!(e.contains("s1.json") && e.contains("s2.json"), "{e}");
        // Under the hash assignment the stray is in the wrong shard, which
        // the strict checks name.
        let mut shards = split(40, 4);
        let stray = shards[0].1.sessions[0].clone();
        shards[1].1.add(stray);
        let e = merge(&shards).unwrap_err();
        assert!(
            matches!(
                e,
                MergeError::Invalid {
                    problem: ManifestProblem::Misplaced { .. },
                    ..
                }
            ),
            "{e}"
        );
        // Conflicting shard sets (listing-position shards, so that no
        // session is misplaced first).
        let unassigned = || {
            let mut shards = split(40, 4);
            for (_, m) in &mut shards {
                m.shard_by = None;
            }
            shards
        };
        let mut shards = unassigned();
        shards[1].1.shard = Some("2/5".into());
        let e = merge(&shards).unwrap_err().to_string();
        assert!(e.contains("s1.json") && e.contains("s2.json"), "{e}");
        let mut shards = unassigned();
        shards[1].1.shard = Some("1/4".into());
        let e = merge(&shards).unwrap_err().to_string();
        assert!(e.contains("s1.json") && e.contains("s2.json"), "{e}");
        let mut shards = split(40, 4);
        shards[1].1.shard = None;
        shards[1].1.shard_by = None;
        shards[1].1.reader_profiles.clear();
        assert!(matches!(
            merge(&shards).unwrap_err(),
            MergeError::NotAShard { .. }
        ));
    }

    /// Issue 46: a merge of a shard swept with `--no-redact` and a redacted
    /// one writes every reason redacted, counted; merged with `--no-redact`
    /// it keeps them and says `redacted: false`: never a claim of redaction
    /// over raw text.
    #[test]
    fn a_merge_of_a_raw_and_a_redacted_shard_writes_in_its_own_mode() {
        use crate::manifest::Redaction;
        use crate::redact::Mode;
        const KEY: &str = "AKIAQ3EGRSNDW5TKXM7P";
        let mut shards = split(8, 2);
        for (k, (_, m)) in shards.iter_mut().enumerate() {
            let s = m.sessions.first_mut().expect("a session in each shard");
            s.result = SessionOutcome::refused(crate::verdict::Refusal::new(
                crate::verdict::ReasonClass::FullMismatch,
                "steps[1]",
                format!("value {KEY} differs"),
            ));
            m.recount();
            if k == 0 {
                m.set_redaction_mode(Mode::Off);
            }
            let json = String::from_utf8(m.to_json()).unwrap();
            assert_eq!(json.contains(KEY), k == 0, "{json}");
            *m = crate::manifest::read::parse_strict(json.as_bytes()).unwrap();
        }
        assert_eq!(shards[0].1.redaction, Some(Redaction::NotRedacted));
        let mut merged = merge(&shards).unwrap();
        let json = String::from_utf8(merged.to_json()).unwrap();
        assert!(!json.contains(KEY), "{json}");
        let back = crate::manifest::read::parse_strict(json.as_bytes()).unwrap();
        assert!(
            matches!(back.redaction, Some(Redaction::Redacted { total: 2, .. })),
            "{:?}",
            back.redaction
        );
        merged.set_redaction_mode(Mode::Off);
        let json = String::from_utf8(merged.to_json()).unwrap();
        assert!(json.contains(KEY), "{json}");
        let back = crate::manifest::read::parse_strict(json.as_bytes()).unwrap();
        assert_eq!(back.redaction, Some(Redaction::NotRedacted));
    }
}
