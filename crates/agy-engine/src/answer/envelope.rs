//! The whole GetCascadeTrajectory answer, read strictly as the response
//! message `exa.language_server_pb.GetCascadeTrajectoryResponse` under the
//! proto3 JSON mapping: `trajectory` (1), `status` (2, enum
//! `exa.cortex_pb.CascadeRunStatus`), `num_total_steps` (3, uint32) and
//! `num_total_generator_metadata` (4, uint32), as the Antigravity IDE
//! descriptor set declares them.
//!
//! What it refuses, each with its own [`ResponseDefect`]:
//! - a body that is not UTF-8, not one JSON object, or nested deeper than
//!   [`MAX_JSON_DEPTH`] anywhere (inside the trajectory or not);
//! - any envelope member but those four (either spelling, JSON or proto
//!   name), or one of them twice. The specification keeps unknown RPC-only
//!   fields *of the trajectory* in the saved payload; the envelope is not
//!   part of that payload, so the allowance does not reach it (stricter
//!   reading, stated here);
//! - a missing or non-object `trajectory`, or one repeating `steps` or
//!   `generatorMetadata`;
//! - a `status` that is not a value of `CascadeRunStatus` ([`RUN_STATUSES`]);
//! - a count that is not a uint32 of any legal spelling, or that differs
//!   from what the trajectory holds: `numTotalSteps` must equal the number
//!   of `trajectory.steps` (a public client of this RPC checks exactly
//!   that; an absent count is its default, zero). `numTotalGeneratorMetadata`,
//!   which the wording does not mention and agy's CLI daemon does not send
//!   (its default, zero, whatever the trajectory holds), is accepted at zero
//!   in any spelling; any other value must equal the number of
//!   `trajectory.generatorMetadata` (stricter reading).
//!
//! When an answer has several defects, the one named is the one a reader
//! of the whole text in order finds first, ranked so: not UTF-8, too deep,
//! not JSON, then the envelope's own members in the order they appear
//! (the first unknown or repeated member, or a member value that is not
//! JSON text, ends the look at the rest), a missing or non-object
//! trajectory, the trajectory's two lists (in the order they appear), the
//! status, the counts. A `status` or count value longer than
//! [`CAPTURE_CAP`](super::lex::CAPTURE_CAP) bytes is not one of the short values either accepts,
//! and is refused by its first 80 characters without being read further
//! (stricter reading: its text is not checked past that point).
//!
//! Repeated members and unknown fields inside the trajectory are the
//! comparison's to judge (`compare`); this module only counts its two lists.
//! It does not decide a verdict: a defective answer is missing evidence, so
//! the session is not fetched and the defect is its recorded reason.

use super::lex::{Captured, Events, Key, Kind};
use serde_json::Value;
use std::ops::Range;

/// Deepest nesting of arrays and objects accepted anywhere in an answer: the
/// comparison's JSON parser (serde_json) stops at 128 levels, and the strict
/// source scan at 100 nested messages, which no legal trajectory exceeds.
pub const MAX_JSON_DEPTH: usize = 128;

/// The values of `exa.cortex_pb.CascadeRunStatus` (name, number), as the
/// modeled schema declares them (a test checks this table against it).
pub const RUN_STATUSES: [(&str, i32); 5] = [
    ("CASCADE_RUN_STATUS_UNSPECIFIED", 0),
    ("CASCADE_RUN_STATUS_IDLE", 1),
    ("CASCADE_RUN_STATUS_RUNNING", 2),
    ("CASCADE_RUN_STATUS_CANCELING", 3),
    ("CASCADE_RUN_STATUS_BUSY", 4),
];

/// Why an answer is not a valid GetCascadeTrajectoryResponse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResponseDefect {
    #[error("not UTF-8 (byte {offset})")]
    NotUtf8 { offset: usize },
    #[error("nested deeper than {MAX_JSON_DEPTH} levels (byte {offset})")]
    TooDeep { offset: usize },
    #[error("not a JSON object: {detail}")]
    NotJson { detail: String },
    #[error("the envelope member `{member}` is not a field of GetCascadeTrajectoryResponse")]
    UnknownMember { member: String },
    #[error("the member `{member}` appears twice")]
    RepeatedMember { member: String },
    #[error("no trajectory member")]
    MissingTrajectory,
    #[error("`trajectory` is not an object")]
    TrajectoryNotObject,
    #[error("`status` {value} is not a CascadeRunStatus value")]
    UnknownStatus { value: String },
    #[error("`{member}` {value} is not a uint32")]
    BadCount { member: &'static str, value: String },
    #[error("`{member}` says {declared} but the trajectory holds {actual}")]
    CountMismatch {
        member: &'static str,
        declared: u32,
        actual: u64,
    },
}

/// A checked answer: where its trajectory lies in the body, and its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// Byte range of the `trajectory` member's value in the body.
    pub trajectory: Range<usize>,
    /// The `CascadeRunStatus` name (a number spelling is named).
    pub status: &'static str,
    pub num_total_steps: u32,
}

/// Which envelope member a top-level value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Trajectory,
    Status,
    Steps,
    Metadata,
    /// Read after a defect: not looked at.
    Ignored,
}

/// Which of the trajectory's two counted lists a member is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    Steps,
    Metadata,
    Other,
}

/// A short member value (`status`, a count), read as JSON when it ended.
#[derive(Debug, Clone)]
enum Short {
    Value(Value),
    /// Longer than [`CAPTURE_CAP`](super::lex::CAPTURE_CAP): its first bytes.
    Long(String),
}

/// The envelope's reading of the events of one answer ([`Events`]).
#[derive(Debug)]
pub(crate) struct EnvelopeEvents {
    /// The depth of the trajectory's value: 1 in a whole answer, 0 in a
    /// bare trajectory.
    at: usize,
    /// The first defect among the envelope's members, in text order.
    top: Option<ResponseDefect>,
    member: Member,
    seen: [bool; 4],
    trajectory: Option<(u64, Kind)>,
    trajectory_end: u64,
    /// Inside the (first) trajectory object.
    inside: bool,
    status: Option<Short>,
    steps: Option<Short>,
    metadata: Option<Short>,
    /// The first defect of the trajectory's lists, in text order.
    lists_defect: Option<ResponseDefect>,
    list: List,
    counting: Option<List>,
    seen_lists: [bool; 2],
    counts: [u64; 2],
}

impl EnvelopeEvents {
    /// The reading of a whole answer (`bare`: false) or of a bare
    /// trajectory (a captured answer without its envelope, as a sidecar
    /// keeps it: no status or counts to check).
    pub(crate) fn new(bare: bool) -> EnvelopeEvents {
        EnvelopeEvents {
            at: if bare { 0 } else { 1 },
            top: None,
            member: Member::Ignored,
            seen: [false; 4],
            trajectory: None,
            trajectory_end: 0,
            inside: false,
            status: None,
            steps: None,
            metadata: None,
            lists_defect: None,
            list: List::Other,
            counting: None,
            seen_lists: [false; 2],
            counts: [0; 2],
        }
    }

    fn bare(&self) -> bool {
        self.at == 0
    }

    fn top_key(&mut self, key: &Key<'_>) {
        if self.top.is_some() {
            self.member = Member::Ignored;
            return;
        }
        let Some(text) = key.text else {
            self.top = Some(not_json(
                "a member name is not text (a lone surrogate escape)",
            ));
            return;
        };
        let (member, slot) = match (key.cut, text) {
            (false, "trajectory") => (Member::Trajectory, 0),
            (false, "status") => (Member::Status, 1),
            (false, "numTotalSteps" | "num_total_steps") => (Member::Steps, 2),
            (false, "numTotalGeneratorMetadata" | "num_total_generator_metadata") => {
                (Member::Metadata, 3)
            }
            _ => {
                self.top = Some(ResponseDefect::UnknownMember {
                    member: text.chars().take(80).collect(),
                });
                self.member = Member::Ignored;
                return;
            }
        };
        if std::mem::replace(&mut self.seen[slot], true) {
            self.top = Some(ResponseDefect::RepeatedMember {
                member: text.to_string(),
            });
            self.member = Member::Ignored;
            return;
        }
        self.member = member;
    }

    fn list_key(&mut self, key: &Key<'_>) {
        if self.lists_defect.is_some() {
            self.list = List::Other;
            return;
        }
        let Some(text) = key.text else {
            self.lists_defect = Some(not_json(
                "trajectory: a member name is not text (a lone surrogate escape)",
            ));
            return;
        };
        let (list, slot, name) = match (key.cut, text) {
            (false, "steps") => (List::Steps, 0, "trajectory.steps"),
            (false, "generatorMetadata" | "generator_metadata") => {
                (List::Metadata, 1, "trajectory.generatorMetadata")
            }
            _ => {
                self.list = List::Other;
                return;
            }
        };
        if std::mem::replace(&mut self.seen_lists[slot], true) {
            self.lists_defect = Some(ResponseDefect::RepeatedMember {
                member: name.to_string(),
            });
            self.list = List::Other;
            return;
        }
        self.list = list;
    }

    /// The checked envelope, or the first defect by the ranking of the
    /// module doc (the reader's own faults, UTF-8 and syntax, come first and
    /// are not this reading's).
    pub(crate) fn finish(self) -> Result<Envelope, ResponseDefect> {
        if let Some(d) = self.top {
            return Err(d);
        }
        let Some((start, kind)) = self.trajectory else {
            return Err(ResponseDefect::MissingTrajectory);
        };
        if kind != Kind::Object {
            return Err(ResponseDefect::TrajectoryNotObject);
        }
        if let Some(d) = self.lists_defect {
            return Err(d);
        }
        let range = offset(start)..offset(self.trajectory_end);
        let [steps_held, metadata_held] = self.counts;
        if self.bare() {
            return Ok(Envelope {
                trajectory: range,
                status: RUN_STATUSES[0].0,
                num_total_steps: u32::try_from(steps_held).unwrap_or(u32::MAX),
            });
        }
        let status = match &self.status {
            None | Some(Short::Value(Value::Null)) => RUN_STATUSES[0].0,
            Some(v) => run_status(v)?,
        };
        let steps = count("numTotalSteps", self.steps)?;
        let metadata = count("numTotalGeneratorMetadata", self.metadata)?;
        if u64::from(steps) != steps_held {
            return Err(ResponseDefect::CountMismatch {
                member: "numTotalSteps",
                declared: steps,
                actual: steps_held,
            });
        }
        // Zero is agy's default (the CLI daemon does not send the member).
        if metadata != 0 && u64::from(metadata) != metadata_held {
            return Err(ResponseDefect::CountMismatch {
                member: "numTotalGeneratorMetadata",
                declared: metadata,
                actual: metadata_held,
            });
        }
        Ok(Envelope {
            trajectory: range,
            status,
            num_total_steps: steps,
        })
    }
}

impl Events for EnvelopeEvents {
    fn value_start(&mut self, depth: usize, offset: u64, kind: Kind) -> bool {
        if depth == 0 && !self.bare() && kind != Kind::Object {
            self.top = Some(not_json("the answer is not a JSON object"));
            return false;
        }
        if depth == self.at && (self.bare() || self.member == Member::Trajectory) {
            self.trajectory = Some((offset, kind));
            self.inside = kind == Kind::Object;
            return false;
        }
        if self.inside && depth == self.at + 1 {
            if let List::Steps | List::Metadata = self.list {
                match kind {
                    Kind::Array => self.counting = Some(self.list),
                    Kind::Null => {}
                    _ if self.lists_defect.is_none() => {
                        self.lists_defect = Some(not_json(
                            "trajectory: a counted list (`steps` or `generatorMetadata`) is not a list",
                        ));
                    }
                    _ => {}
                }
            }
            return false;
        }
        if self.inside && depth == self.at + 2 {
            match self.counting {
                Some(List::Steps) => self.counts[0] += 1,
                Some(List::Metadata) => self.counts[1] += 1,
                _ => {}
            }
            return false;
        }
        depth == 1
            && !self.bare()
            && self.top.is_none()
            && matches!(
                self.member,
                Member::Status | Member::Steps | Member::Metadata
            )
    }

    fn value_end(&mut self, depth: usize, end: u64, captured: Option<Captured<'_>>) {
        if depth == self.at && (self.bare() || self.member == Member::Trajectory) {
            self.inside = false;
            self.trajectory_end = end;
            if !self.bare() {
                // Past the first trajectory: a repeated one is never read.
                self.member = Member::Ignored;
            }
        }
        if self.inside && depth == self.at + 1 {
            self.counting = None;
        }
        let Some(captured) = captured else { return };
        let value = if captured.cut {
            Short::Long(
                String::from_utf8_lossy(captured.bytes)
                    .chars()
                    .take(80)
                    .collect(),
            )
        } else {
            match serde_json::from_slice::<Value>(captured.bytes) {
                Ok(v) => Short::Value(v),
                Err(e) => {
                    self.top = Some(not_json(&e.to_string()));
                    return;
                }
            }
        };
        match self.member {
            Member::Status => self.status = Some(value),
            Member::Steps => self.steps = Some(value),
            Member::Metadata => self.metadata = Some(value),
            Member::Trajectory | Member::Ignored => {}
        }
    }

    fn wants_key(&self, depth: usize) -> bool {
        (depth == 1 && !self.bare()) || (self.inside && depth == self.at + 1)
    }

    fn key(&mut self, depth: usize, key: Key<'_>) {
        if self.inside && depth == self.at + 1 {
            self.list_key(&key);
        } else if depth == 1 && !self.bare() {
            self.top_key(&key);
        }
    }
}

fn offset(at: u64) -> usize {
    usize::try_from(at).unwrap_or(usize::MAX)
}

fn not_json(detail: &str) -> ResponseDefect {
    ResponseDefect::NotJson {
        detail: detail.to_string(),
    }
}

/// A `CascadeRunStatus` by name or number.
fn run_status(v: &Short) -> Result<&'static str, ResponseDefect> {
    let found = match v {
        Short::Value(Value::String(s)) => RUN_STATUSES.iter().find(|(n, _)| n == s),
        Short::Value(v @ Value::Number(_)) => crate::compare::value::int_of(v)
            .and_then(|n| RUN_STATUSES.iter().find(|(_, k)| i128::from(*k) == n)),
        _ => None,
    };
    found
        .map(|(n, _)| *n)
        .ok_or_else(|| ResponseDefect::UnknownStatus { value: short(v) })
}

/// A uint32 under the proto3 JSON mapping: a number or a numeric string of
/// an integral value (`227`, `"227"`, `2.27e2`); `null` or absent is zero.
fn count(member: &'static str, v: Option<Short>) -> Result<u32, ResponseDefect> {
    let v = match v {
        None | Some(Short::Value(Value::Null)) => return Ok(0),
        Some(v) => v,
    };
    let n = match &v {
        Short::Value(v @ (Value::Number(_) | Value::String(_))) => crate::compare::value::int_of(v),
        _ => None,
    };
    n.and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| ResponseDefect::BadCount {
            member,
            value: short(&v),
        })
}

/// A value as the error shows it, at most 80 characters.
fn short(v: &Short) -> String {
    let t = match v {
        Short::Value(v) => v.to_string(),
        Short::Long(start) => return format!("{start}..."),
    };
    if t.chars().count() > 80 {
        format!("{}...", t.chars().take(80).collect::<String>())
    } else {
        t
    }
}
