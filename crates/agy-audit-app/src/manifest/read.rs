//! The one strict reader of version-5 manifests (issue 44 item 2): every
//! command that reads a manifest (`audit-qualify`, `audit-diff`, `report`,
//! `format-audit`, `export-check`, `manifest merge`, `audit-sweep --resume`,
//! `bench`) reads it here, and believes nothing it has not checked.
//!
//! A manifest is our own record, and still hostile input: it may have been
//! edited, truncated, concatenated or forged. What is refused, each error
//! naming the file and the member:
//!
//! * anything but a regular file, or one past [`InputKind::Manifest`]'s cap
//!   ([`crate::util::bounded`]); text that is not UTF-8 JSON, nested past
//!   [`MAX_DEPTH`], or with a member repeated in one object (a `Value` would
//!   keep the last copy silently);
//! * no `manifestVersion`, or one that is not the number 5 (the string `"5"`
//!   is named as a string);
//! * a member missing or of the wrong type, or one version 5 does not define
//!   (stricter than the documentation says: a manifest carrying a member no
//!   writer of version 5 writes was not written by one);
//! * a `fileId` that is not a bare conversation id: the UUID stem of
//!   `conversations/<id>.db`, never a path (it is joined into paths);
//! * two sessions with one `fileId`, or sessions out of `fileId` order (the
//!   writer sorts them);
//! * `counts`, `countsByProfile`, `countsByFormat`, `profiles`,
//!   `timing.steps` or `timing.sourceBytes` other than the recount of the
//!   sessions (every figure a report prints is then the
//!   sessions' own), naming both numbers;
//! * `complete: true` with a not-fetched session, without `finished`, or on
//!   a merge that records missing shards or problems (a read error is a
//!   verdict-less session that stays allowed in a complete manifest,
//!   `docs/manifest-v5.md`);
//! * shard members that disagree: `shard` not `i/n` in decimal digits with
//!   1 <= i <= n; `shardBy`, `emptyShard` or `readerProfiles` without
//!   `shard`; `shardBy` other than [`SHARD_ASSIGNMENT`]; `emptyShard` with
//!   sessions, or a shard without sessions not marked `emptyShard`; under
//!   [`SHARD_ASSIGNMENT`], a session whose id hashes to another shard;
//! * a shape listing named by anything but a bare file name beside the
//!   manifest;
//! * a `redaction` member of no shape a writer writes, or (unless
//!   `{"redacted": false}`) other than the recount of the redaction markers
//!   the reasons hold ([`super::redaction`]).

use super::{Counts, Manifest, Recount, MANIFEST_FILE, MANIFEST_VERSION};
use crate::outcome::SessionOutcome;
use crate::pipeline::shard::{in_shard, SHARD_ASSIGNMENT};
use crate::source::looks_like_uuid;
use crate::util::bounded::{read_regular, BoundedReadError, InputKind};
use crate::util::json_walk::{walk, Scalar, Visit, WalkError, MAX_DEPTH};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// Why a manifest cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error(transparent)]
    Read(#[from] BoundedReadError),
    #[error("{}: {problem}", path.display())]
    Invalid {
        path: PathBuf,
        problem: ManifestProblem,
    },
}

impl ManifestError {
    /// What is wrong with the manifest's content, when that is the error.
    pub fn problem(&self) -> Option<&ManifestProblem> {
        match self {
            ManifestError::Invalid { problem, .. } => Some(problem),
            ManifestError::Read(_) => None,
        }
    }
}

/// What is wrong with a manifest's content (the file is named by
/// [`ManifestError`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestProblem {
    #[error("not UTF-8 text (byte {offset})")]
    NotUtf8 { offset: usize },
    #[error("not JSON: byte {offset}: {rule}")]
    NotJson { offset: usize, rule: &'static str },
    #[error("member `{path}` appears twice in one object: a manifest member is written once")]
    RepeatedMember { path: String },
    #[error("no `manifestVersion`: a version-{MANIFEST_VERSION} manifest is required")]
    NoVersion,
    #[error("`manifestVersion` is {found}, not the number {MANIFEST_VERSION}: a version-{MANIFEST_VERSION} manifest is required")]
    Version { found: String },
    #[error("not a version-{MANIFEST_VERSION} manifest: {0}")]
    Shape(String),
    #[error("`sessions[{index}].fileId` {id:?} is not a bare conversation id (the UUID stem of conversations/<id>.db), never a path")]
    FileId { index: usize, id: String },
    #[error("`sessions[{index}].fileId` {id} appears twice (also `sessions[{first}]`): one session per conversation")]
    DuplicateId {
        index: usize,
        first: usize,
        id: String,
    },
    #[error("`sessions[{index}].fileId` {id} is out of order: sessions are sorted by fileId")]
    Unsorted { index: usize, id: String },
    #[error("`{member}` is {recorded}, but the sessions count {recount}")]
    Count {
        member: String,
        recorded: String,
        recount: String,
    },
    #[error("`complete` is true, but {count} session(s) were not fetched (`{first}`): a complete manifest holds none")]
    CompleteNotFetched { count: usize, first: String },
    #[error("`complete` is true, but `finished` is null: an unfinished sweep is not complete")]
    CompleteUnfinished,
    #[error("`complete` is true, but `merged` records {0}")]
    CompleteMergeProblems(String),
    #[error("`shard` {0:?} is not i/n in decimal digits with 1 <= i <= n")]
    Shard(String),
    #[error("`{0}` is set on a manifest without `shard`")]
    ShardMemberWithoutShard(&'static str),
    #[error("`shardBy` is {0:?}, not {SHARD_ASSIGNMENT}")]
    ShardBy(String),
    #[error("`emptyShard` is true, but the shard holds {0} session(s)")]
    EmptyShardWithSessions(usize),
    #[error("shard {0} holds no session, but `emptyShard` is not true")]
    EmptyShardUnmarked(String),
    #[error("`sessions[{index}].fileId` {id} is not of shard {shard} under the {SHARD_ASSIGNMENT} assignment")]
    Misplaced {
        index: usize,
        id: String,
        shard: String,
    },
    #[error("`shapes.{which}.file` {file:?} is not a bare file name beside the manifest")]
    ShapesFile { which: &'static str, file: String },
    #[error("`redaction` records {recorded}, but the sessions' reasons hold {recount}: a redacted manifest's `redaction` counts the markers its reasons hold")]
    Redaction { recorded: String, recount: String },
}

/// `given`, or `given/manifest.json` when `given` is a sweep folder: a
/// sweep folder is accepted wherever a manifest is.
pub fn manifest_file(given: &Path) -> PathBuf {
    if given.is_dir() {
        given.join(MANIFEST_FILE)
    } else {
        given.to_path_buf()
    }
}

/// Reads the manifest `given` names (a file, or a sweep folder holding
/// `manifest.json`) strictly: the file it read and the manifest.
pub fn read(given: &Path) -> Result<(PathBuf, Manifest), ManifestError> {
    let file = manifest_file(given);
    let bytes = read_regular(&file, InputKind::Manifest)?;
    let m = parse_strict(&bytes).map_err(|problem| ManifestError::Invalid {
        path: file.clone(),
        problem,
    })?;
    Ok((file, m))
}

/// A manifest's bytes read strictly (the module documentation lists what
/// is refused).
pub fn parse_strict(bytes: &[u8]) -> Result<Manifest, ManifestProblem> {
    let text = std::str::from_utf8(bytes).map_err(|e| ManifestProblem::NotUtf8 {
        offset: e.valid_up_to(),
    })?;
    let mut members = Members::default();
    if let Err(e) = walk(text, &mut members) {
        return Err(match members.repeated.take() {
            Some(path) => ManifestProblem::RepeatedMember { path },
            None => ManifestProblem::NotJson {
                offset: e.offset,
                rule: e.rule,
            },
        });
    }
    #[derive(serde::Deserialize)]
    struct Version {
        #[serde(rename = "manifestVersion")]
        version: Option<serde_json::Value>,
    }
    let v: Version =
        serde_json::from_str(text).map_err(|e| ManifestProblem::Shape(e.to_string()))?;
    match v.version {
        None => return Err(ManifestProblem::NoVersion),
        Some(n) if n.as_u64() == Some(u64::from(MANIFEST_VERSION)) && n.is_number() => {}
        Some(serde_json::Value::String(s)) => {
            return Err(ManifestProblem::Version {
                found: format!("the string {s:?}"),
            })
        }
        Some(other) => {
            return Err(ManifestProblem::Version {
                found: other.to_string(),
            })
        }
    }
    let m: Manifest =
        serde_json::from_str(text).map_err(|e| ManifestProblem::Shape(e.to_string()))?;
    check(&m)?;
    Ok(m)
}

/// The checks past the JSON's types (module documentation).
pub fn check(m: &Manifest) -> Result<(), ManifestProblem> {
    check_ids(m)?;
    check_counts(m)?;
    check_shard(m)?;
    check_complete(m)?;
    super::redaction::recount(m.redaction.as_ref(), m.sessions.iter().map(|s| &s.result)).map_err(
        |d| ManifestProblem::Redaction {
            recorded: d.recorded,
            recount: d.recount,
        },
    )?;
    if let Some(sh) = &m.shapes {
        for (which, rec) in [("ordinary", &sh.ordinary), ("full", &sh.full)] {
            if !bare_file_name(&rec.file) {
                return Err(ManifestProblem::ShapesFile {
                    which,
                    file: rec.file.clone(),
                });
            }
        }
    }
    Ok(())
}

/// A plain name of a file in the same folder: no separator of any
/// platform, not `.` or `..`, not empty, no NUL.
fn bare_file_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
        && !name.contains(':')
}

fn check_ids(m: &Manifest) -> Result<(), ManifestProblem> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut previous: Option<&str> = None;
    for (index, s) in m.sessions.iter().enumerate() {
        let id = s.file_id.as_str();
        if !looks_like_uuid(id) {
            return Err(ManifestProblem::FileId {
                index,
                id: id.to_string(),
            });
        }
        if let Some(&first) = seen.get(id) {
            return Err(ManifestProblem::DuplicateId {
                index,
                first,
                id: id.to_string(),
            });
        }
        seen.insert(id, index);
        if previous.is_some_and(|p| p > id) {
            return Err(ManifestProblem::Unsorted {
                index,
                id: id.to_string(),
            });
        }
        previous = Some(id);
    }
    Ok(())
}

/// The named counts and their recount, member by member.
fn counts_differ(member: &str, recorded: &Counts, recount: &Counts) -> Option<ManifestProblem> {
    let r = serde_json::to_value(recorded).ok()?;
    let n = serde_json::to_value(recount).ok()?;
    let (r, n) = (r.as_object()?, n.as_object()?);
    for (k, v) in n {
        let got = r.get(k).cloned().unwrap_or(serde_json::Value::Null);
        if &got != v {
            return Some(ManifestProblem::Count {
                member: format!("{member}.{k}"),
                recorded: got.to_string(),
                recount: v.to_string(),
            });
        }
    }
    None
}

fn check_counts(m: &Manifest) -> Result<(), ManifestProblem> {
    let again = Recount::of(&m.sessions);
    if let Some(p) = counts_differ("counts", &m.counts, &again.counts) {
        return Err(p);
    }
    for (what, recorded, recount) in [
        (
            "countsByProfile",
            &m.counts_by_profile,
            &again.counts_by_profile,
        ),
        (
            "countsByFormat",
            &m.counts_by_format,
            &again.counts_by_format,
        ),
    ] {
        for key in recorded.keys().chain(recount.keys()) {
            match (recorded.get(key), recount.get(key)) {
                (Some(a), Some(b)) => {
                    if let Some(p) = counts_differ(&format!("{what}[{key:?}]"), a, b) {
                        return Err(p);
                    }
                }
                (Some(a), None) => {
                    return Err(ManifestProblem::Count {
                        member: format!("{what}[{key:?}]"),
                        recorded: format!("{} selected", a.selected),
                        recount: "no session".into(),
                    })
                }
                (None, Some(b)) => {
                    return Err(ManifestProblem::Count {
                        member: format!("{what}[{key:?}]"),
                        recorded: "absent".into(),
                        recount: format!("{} selected", b.selected),
                    })
                }
                (None, None) => {}
            }
        }
    }
    // The report's throughput line prints these two: the sessions' own.
    for (member, recorded, recount) in [
        ("timing.steps", m.timing.steps, again.steps),
        (
            "timing.sourceBytes",
            m.timing.source_bytes,
            again.source_bytes,
        ),
    ] {
        if recorded != recount {
            return Err(ManifestProblem::Count {
                member: member.into(),
                recorded: recorded.to_string(),
                recount: recount.to_string(),
            });
        }
    }
    if m.profiles != again.profiles {
        return Err(ManifestProblem::Count {
            member: "profiles".into(),
            recorded: format!("{:?}", m.profiles),
            recount: format!("{:?}", again.profiles),
        });
    }
    Ok(())
}

/// `i/n` in plain decimal digits (no sign, no space, no leading zero),
/// 1 <= i <= n: the one reading of a shard's name.
pub fn parse_shard(s: &str) -> Option<(usize, usize)> {
    fn number(t: &str) -> Option<usize> {
        let plain = !t.is_empty()
            && t.bytes().all(|b| b.is_ascii_digit())
            && !(t.len() > 1 && t.starts_with('0'));
        plain.then(|| t.parse().ok()).flatten()
    }
    let (i, n) = s.split_once('/')?;
    let (i, n) = (number(i)?, number(n)?);
    (i >= 1 && i <= n).then_some((i, n))
}

fn check_shard(m: &Manifest) -> Result<(), ManifestProblem> {
    let Some(shard) = &m.shard else {
        if m.shard_by.is_some() {
            return Err(ManifestProblem::ShardMemberWithoutShard("shardBy"));
        }
        if m.empty_shard {
            return Err(ManifestProblem::ShardMemberWithoutShard("emptyShard"));
        }
        if !m.reader_profiles.is_empty() {
            return Err(ManifestProblem::ShardMemberWithoutShard("readerProfiles"));
        }
        return Ok(());
    };
    let (i, n) = parse_shard(shard).ok_or_else(|| ManifestProblem::Shard(shard.clone()))?;
    if m.empty_shard && !m.sessions.is_empty() {
        return Err(ManifestProblem::EmptyShardWithSessions(m.sessions.len()));
    }
    // A finished shard that selected nothing says so; one still running
    // may not have recorded its first session yet.
    if m.sessions.is_empty() && !m.empty_shard && m.finished.is_some() {
        return Err(ManifestProblem::EmptyShardUnmarked(shard.clone()));
    }
    match m.shard_by.as_deref() {
        None => {}
        Some(SHARD_ASSIGNMENT) => {
            for (index, s) in m.sessions.iter().enumerate() {
                if !in_shard(&s.file_id, (i, n)) {
                    return Err(ManifestProblem::Misplaced {
                        index,
                        id: s.file_id.clone(),
                        shard: shard.clone(),
                    });
                }
            }
        }
        Some(other) => return Err(ManifestProblem::ShardBy(other.to_string())),
    }
    Ok(())
}

fn check_complete(m: &Manifest) -> Result<(), ManifestProblem> {
    if !m.complete {
        return Ok(());
    }
    let not_fetched: Vec<&str> = m
        .sessions
        .iter()
        .filter(|s| matches!(s.result, SessionOutcome::NotFetched { .. }))
        .map(|s| s.file_id.as_str())
        .collect();
    if let Some(first) = not_fetched.first() {
        return Err(ManifestProblem::CompleteNotFetched {
            count: not_fetched.len(),
            first: first.to_string(),
        });
    }
    if m.finished.is_none() {
        return Err(ManifestProblem::CompleteUnfinished);
    }
    if let Some(merged) = &m.merged {
        if !merged.missing.is_empty() {
            return Err(ManifestProblem::CompleteMergeProblems(format!(
                "missing shards {:?}",
                merged.missing
            )));
        }
        if let Some(p) = merged.problems.first() {
            return Err(ManifestProblem::CompleteMergeProblems(format!(
                "the problem {p:?}"
            )));
        }
        if let Some(s) = merged.shards.iter().find(|s| !s.complete) {
            return Err(ManifestProblem::CompleteMergeProblems(format!(
                "shard {} as not complete",
                s.shard
            )));
        }
    }
    Ok(())
}

/// A visitor that refuses a member repeated in one object, remembering
/// where (`sessions[3].status`), for the error.
#[derive(Default)]
struct Members {
    frames: Vec<Frame>,
    repeated: Option<String>,
}

enum Frame {
    Object {
        keys: HashSet<String>,
        current: Option<String>,
    },
    Array {
        next: usize,
    },
}

impl Members {
    fn path(&self) -> String {
        let mut p = String::new();
        for f in &self.frames {
            match f {
                Frame::Object {
                    current: Some(k), ..
                } => {
                    if !p.is_empty() {
                        p.push('.');
                    }
                    p.push_str(k);
                }
                Frame::Object { current: None, .. } => {}
                Frame::Array { next } => {
                    p.push_str(&format!("[{}]", next.saturating_sub(1)));
                }
            }
        }
        p
    }

    /// A value starts: an array element takes the next index.
    fn value(&mut self) -> Result<(), WalkError> {
        if self.frames.len() > MAX_DEPTH {
            return Err(WalkError {
                offset: 0,
                rule: "nesting too deep",
            });
        }
        if let Some(Frame::Array { next }) = self.frames.last_mut() {
            *next += 1;
        }
        Ok(())
    }
}

impl Visit for Members {
    fn key(&mut self, key: &str, _json: &[u8]) -> Result<(), WalkError> {
        let repeated = match self.frames.last_mut() {
            Some(Frame::Object { keys, current }) => {
                *current = Some(key.to_string());
                !keys.insert(key.to_string())
            }
            _ => false,
        };
        if repeated {
            self.repeated = Some(self.path());
            return Err(WalkError {
                offset: 0,
                rule: "a member repeated in one object",
            });
        }
        Ok(())
    }
    fn begin_object(&mut self) -> Result<(), WalkError> {
        self.value()?;
        self.frames.push(Frame::Object {
            keys: HashSet::new(),
            current: None,
        });
        Ok(())
    }
    fn end_object(&mut self) -> Result<(), WalkError> {
        self.frames.pop();
        Ok(())
    }
    fn begin_array(&mut self) -> Result<(), WalkError> {
        self.value()?;
        self.frames.push(Frame::Array { next: 0 });
        Ok(())
    }
    fn end_array(&mut self) -> Result<(), WalkError> {
        self.frames.pop();
        Ok(())
    }
    fn scalar(&mut self, _value: Scalar<'_>) -> Result<(), WalkError> {
        self.value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn captured() -> Value {
        serde_json::from_slice(include_bytes!(
            "../../../../manifests/default-corpus.manifest.json"
        ))
        .expect("the captured manifest is JSON")
    }

    fn problem(v: &Value) -> ManifestProblem {
        parse_strict(&serde_json::to_vec(v).unwrap()).expect_err("refused")
    }

    #[test]
    fn the_captured_manifest_reads() {
        let m = parse_strict(include_bytes!(
            "../../../../manifests/default-corpus.manifest.json"
        ))
        .expect("the captured manifest reads strictly");
        assert_eq!(m.sessions.len(), 405);
    }

    #[test]
    fn a_repeated_member_is_named() {
        let text = r#"{"manifestVersion":5,"sessions":[{"fileId":"a","fileId":"b"}]}"#;
        let p = parse_strict(text.as_bytes()).unwrap_err();
        assert_eq!(
            p,
            ManifestProblem::RepeatedMember {
                path: "sessions[0].fileId".into()
            }
        );
        let text = r#"{"manifestVersion":5,"complete":true,"complete":false}"#;
        assert_eq!(
            parse_strict(text.as_bytes()).unwrap_err(),
            ManifestProblem::RepeatedMember {
                path: "complete".into()
            }
        );
    }

    /// A manifest is given as the file or as the sweep folder holding
    /// `manifest.json`; a refusal names the file and carries its problem, a
    /// read error has none.
    #[test]
    fn read_takes_a_file_or_a_sweep_folder_and_names_the_file() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join(MANIFEST_FILE);
        std::fs::write(
            &file,
            include_bytes!("../../../../manifests/default-corpus.manifest.json"),
        )
        .unwrap();
        let (at, m) = read(d.path()).expect("the folder's manifest reads");
        assert_eq!((at, m.sessions.len()), (file.clone(), 405));
        let (at, _) = read(&file).expect("the file reads");
        assert_eq!(at, file);
        let bad = d.path().join("bad.json");
        std::fs::write(&bad, br#"{"manifestVersion":"5"}"#).unwrap();
        let e = read(&bad).unwrap_err();
        assert!(
            matches!(e.problem(), Some(ManifestProblem::Version { .. })),
            "{e}"
        );
        assert!(e.to_string().starts_with(&bad.display().to_string()), "{e}");
        let e = read(&d.path().join("absent.json")).unwrap_err();
        assert_eq!(e.problem(), None, "{e}");
    }

    #[test]
    fn the_version_must_be_the_number_5() {
        let mut v = captured();
        v["manifestVersion"] = json!("5");
        assert_eq!(
            problem(&v),
            ManifestProblem::Version {
                found: "the string \"5\"".into()
            }
        );
        v["manifestVersion"] = json!(4);
        assert!(matches!(problem(&v), ManifestProblem::Version { .. }));
        v["manifestVersion"] = json!(5.0);
        assert!(matches!(problem(&v), ManifestProblem::Version { .. }));
        v.as_object_mut().unwrap().remove("manifestVersion");
        assert_eq!(problem(&v), ManifestProblem::NoVersion);
    }

    #[test]
    fn a_missing_or_mistyped_or_foreign_member_is_refused() {
        let mut v = captured();
        v.as_object_mut().unwrap().remove("counts");
        assert!(matches!(problem(&v), ManifestProblem::Shape(_)));
        let mut v = captured();
        v["complete"] = json!("true");
        assert!(matches!(problem(&v), ManifestProblem::Shape(_)));
        let mut v = captured();
        v["sessions"][0]["steps"] = json!(-1);
        assert!(matches!(problem(&v), ManifestProblem::Shape(_)));
        let mut v = captured();
        v["sessions"][0]["verdictOverride"] = json!("verified");
        assert!(matches!(problem(&v), ManifestProblem::Shape(_)));
        let mut v = captured();
        v["trustMe"] = json!(true);
        assert!(matches!(problem(&v), ManifestProblem::Shape(_)));
    }

    #[test]
    fn a_file_id_is_a_bare_conversation_id() {
        for bad in [
            "../../ws/conversations/5f0c7a1e-2b3d-4c5e-8f90-a1b2c3d4e5f6",
            "../../../../etc/passwd",
            "5f0c7a1e-2b3d-4c5e-8f90-a1b2c3d4e5f6/..",
            "",
            "5F0C7A1E-2B3D-4C5E-8F90-A1B2C3D4E5F6x",
        ] {
            let mut v = captured();
            v["sessions"][0]["fileId"] = json!(bad);
            assert!(
                matches!(problem(&v), ManifestProblem::FileId { index: 0, .. }),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_duplicate_or_unsorted_id_is_refused() {
        let mut v = captured();
        let copy = v["sessions"][3].clone();
        v["sessions"].as_array_mut().unwrap().insert(4, copy);
        assert!(matches!(
            problem(&v),
            ManifestProblem::DuplicateId {
                index: 4,
                first: 3,
                ..
            }
        ));
        let mut v = captured();
        v["sessions"].as_array_mut().unwrap().swap(1, 2);
        assert!(matches!(
            problem(&v),
            ManifestProblem::Unsorted { index: 2, .. }
        ));
    }

    #[test]
    fn counts_must_be_the_recount() {
        let mut v = captured();
        v["counts"]["verified"] = json!(999);
        let p = problem(&v);
        assert!(
            matches!(&p, ManifestProblem::Count { member, recorded, .. } if member == "counts.verified" && recorded == "999"),
            "{p}"
        );
        let mut v = captured();
        v["counts"]["selected"] = json!(7);
        assert!(matches!(problem(&v), ManifestProblem::Count { .. }));
        let mut v = captured();
        let key = v["countsByProfile"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        v["countsByProfile"][&key]["unknown"] = json!(0);
        assert!(matches!(problem(&v), ManifestProblem::Count { .. }));
        let mut v = captured();
        v["countsByFormat"]["sqlite"]["selected"] = json!(1);
        assert!(matches!(problem(&v), ManifestProblem::Count { .. }));
        let mut v = captured();
        v["countsByFormat"]["elsewhere"] = v["countsByFormat"]["sqlite"].clone();
        assert!(matches!(problem(&v), ManifestProblem::Count { .. }));
        let mut v = captured();
        v["profiles"].as_array_mut().unwrap().push(json!("extra"));
        assert!(matches!(problem(&v), ManifestProblem::Count { .. }));
        let mut v = captured();
        v["timing"]["steps"] = json!(1);
        assert!(
            matches!(problem(&v), ManifestProblem::Count { member, .. } if member == "timing.steps")
        );
        let mut v = captured();
        v["timing"]["sourceBytes"] = json!(1);
        assert!(
            matches!(problem(&v), ManifestProblem::Count { member, .. } if member == "timing.sourceBytes")
        );
    }

    #[test]
    fn complete_must_agree_with_the_sessions() {
        let mut v = captured();
        v["sessions"][0]["verdict"] = Value::Null;
        v["sessions"][0]["reasonClass"] = json!("daemon-unavailable");
        v["sessions"][0]["reason"] = json!("HTTP 500");
        v["sessions"][0]["payloadDigest"] = Value::Null;
        v["sessions"][0]
            .as_object_mut()
            .unwrap()
            .remove("sourceOnly");
        let mut m: Manifest = serde_json::from_value(v.clone()).unwrap();
        m.recount();
        let mut v = serde_json::to_value(&m).unwrap();
        assert!(matches!(
            problem(&v),
            ManifestProblem::CompleteNotFetched { count: 1, .. }
        ));
        v["complete"] = json!(false);
        assert!(parse_strict(&serde_json::to_vec(&v).unwrap()).is_ok());
        let mut v = captured();
        v["finished"] = Value::Null;
        assert_eq!(problem(&v), ManifestProblem::CompleteUnfinished);
    }

    /// A complete merged manifest records no missing shard, no problem and
    /// no shard that was not complete; each of those is refused.
    #[test]
    fn a_complete_merge_records_every_shard_complete() {
        let shard = |i: usize, complete: bool| json!({"shard": format!("{i}/2"), "file": format!("{i}.json"), "sessions": 1, "complete": complete});
        let mut v = captured();
        v["merged"] = json!({"shardCount": 2, "shards": [shard(1, true), shard(2, true)]});
        parse_strict(&serde_json::to_vec(&v).unwrap()).expect("a complete merge reads");
        let mut missing = v.clone();
        missing["merged"]["shards"] = json!([shard(1, true)]);
        missing["merged"]["missing"] = json!([2]);
        let mut problem_recorded = v.clone();
        problem_recorded["merged"]["problems"] = json!(["shard 2/2 records no readerProfiles"]);
        let mut incomplete = v.clone();
        incomplete["merged"]["shards"][1] = shard(2, false);
        for bad in [missing, problem_recorded, incomplete] {
            assert!(
                matches!(problem(&bad), ManifestProblem::CompleteMergeProblems(_)),
                "{}",
                bad["merged"]
            );
        }
    }

    /// The walk bounds nesting at [`MAX_DEPTH`] containers: that many is
    /// JSON (and then not a manifest's shape), one more is not JSON.
    #[test]
    fn nesting_is_bounded_where_the_walk_bounds_it() {
        let nested = |n: usize| {
            format!(
                r#"{{"manifestVersion":5,"x":{}1{}}}"#,
                "[".repeat(n - 1),
                "]".repeat(n - 1)
            )
        };
        assert!(matches!(
            parse_strict(nested(MAX_DEPTH).as_bytes()).unwrap_err(),
            ManifestProblem::Shape(_)
        ));
        assert!(matches!(
            parse_strict(nested(MAX_DEPTH + 1).as_bytes()).unwrap_err(),
            ManifestProblem::NotJson { .. }
        ));
    }

    #[test]
    fn shard_members_must_agree() {
        for bad in ["+2/2", "0/2", "3/2", "02/2", "1/ 2", "1/2/3", "a/b", "1"] {
            assert_eq!(parse_shard(bad), None, "{bad}");
        }
        assert_eq!(parse_shard("2/2"), Some((2, 2)));
        assert_eq!(parse_shard("10/12"), Some((10, 12)));
        let mut v = captured();
        v["shard"] = json!("+2/2");
        assert!(matches!(problem(&v), ManifestProblem::Shard(_)));
        let mut v = captured();
        v["shard"] = json!("1/1");
        v["emptyShard"] = json!(true);
        assert!(matches!(
            problem(&v),
            ManifestProblem::EmptyShardWithSessions(405)
        ));
        let mut v = captured();
        v["emptyShard"] = json!(true);
        assert_eq!(
            problem(&v),
            ManifestProblem::ShardMemberWithoutShard("emptyShard")
        );
        let mut v = captured();
        v["readerProfiles"] = json!(["p"]);
        assert_eq!(
            problem(&v),
            ManifestProblem::ShardMemberWithoutShard("readerProfiles")
        );
        let mut v = captured();
        v["shard"] = json!("1/2");
        v["shardBy"] = json!(SHARD_ASSIGNMENT);
        assert!(matches!(problem(&v), ManifestProblem::Misplaced { .. }));
        v["shardBy"] = json!("listing-position");
        assert!(matches!(problem(&v), ManifestProblem::ShardBy(_)));
        let mut v = captured();
        v["shard"] = json!("1/2");
        v["sessions"] = json!([]);
        let mut m: Manifest = serde_json::from_value(v).unwrap();
        m.recount();
        let v = serde_json::to_value(&m).unwrap();
        assert!(matches!(
            problem(&v),
            ManifestProblem::EmptyShardUnmarked(_)
        ));
    }

    /// A shape listing is a plain file name beside the manifest: each
    /// near-miss (empty, `.`, `..`, a separator of any platform, NUL, a
    /// drive or stream colon) is refused, naming which listing.
    #[test]
    fn a_listing_file_is_a_bare_name() {
        let listing = |file: &str| json!({"file": file, "fingerprint": "sha256:0", "entries": 0, "documents": 0});
        let mut v = captured();
        v["shapes"] = json!({
            "ordinary": listing("shapes-ordinary.tsv"),
            "full": listing("shapes-full.tsv"),
        });
        parse_strict(&serde_json::to_vec(&v).unwrap()).expect("bare names read");
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a\\b",
            "a\0b",
            "c:x",
            "../../etc/passwd",
        ] {
            for which in ["ordinary", "full"] {
                let mut v = v.clone();
                v["shapes"][which]["file"] = json!(bad);
                assert_eq!(
                    problem(&v),
                    ManifestProblem::ShapesFile {
                        which,
                        file: bad.into()
                    },
                    "{bad:?}"
                );
            }
        }
    }

    /// The path of a repeated member counts every element of an array,
    /// scalars too.
    #[test]
    fn a_repeated_member_is_placed_after_scalars() {
        let text = r#"{"manifestVersion":5,"profiles":["a",{"x":1,"x":2}]}"#;
        assert_eq!(
            parse_strict(text.as_bytes()).unwrap_err(),
            ManifestProblem::RepeatedMember {
                path: "profiles[1].x".into()
            }
        );
    }

    #[test]
    fn text_that_is_not_json_or_not_utf8_is_refused() {
        assert!(matches!(
            parse_strict(b"{\"a\":\xff}").unwrap_err(),
            ManifestProblem::NotUtf8 { .. }
        ));
        assert!(matches!(
            parse_strict(b"{\"manifestVersion\":5,").unwrap_err(),
            ManifestProblem::NotJson { .. }
        ));
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(matches!(
            parse_strict(deep.as_bytes()).unwrap_err(),
            ManifestProblem::NotJson { .. }
        ));
    }
}
