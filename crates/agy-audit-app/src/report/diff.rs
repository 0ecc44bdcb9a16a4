//! `audit-diff`: what changed between two sweeps (two version-5 manifests),
//! session by session, matched by file id.
//!
//! Each session gets one `change`, the first that applies in the order
//! [`PRECEDENCE`] (appeared, disappeared, newly-refused, newly-verified,
//! reason-changed, source-changed, profile-changed), the others that apply in
//! `also`; when none applies it is `still-verified` (verified the same way in
//! both) or `unchanged` (refused the same way in both). "Verified" is either
//! verified verdict (with or without source-only fields); a *regression* is a
//! session verified in OLD and anything else in NEW (unknown, incomplete, not
//! fetched, error, or gone).
//!
//! A reason changed when, between two verified verdicts, one has source-only
//! fields and the other not, or the qualifying rules that presented them
//! differ (still no regression); or, between two that are not verified, the
//! outcome (unknown, incomplete, not fetched, error), the refusal class, the
//! rules named (the record's `rules` and the rule id a projection refusal
//! ends with, `(rule-id)`) or the location differ. The location is the reason
//! text before its first `: ` (the manifest words a refusal `location:
//! detail (rule-id)`); it is compared only for a verdict (unknown or
//! incomplete): a not-fetched or error reason names the daemon's or the
//! system's failure (a port, an errno), not a place in the conversation, and
//! differs from run to run. The detail wording alone is not a change.

use crate::manifest::{Manifest, SessionRecord};
use crate::rules::RuleId;
use crate::verdict::{Outcome, VerdictKind};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// One session's change between the two manifests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Change {
    StillVerified,
    NewlyVerified,
    NewlyRefused,
    ReasonChanged,
    ProfileChanged,
    SourceChanged,
    Appeared,
    Disappeared,
    Unchanged,
}

/// Which change a session is listed under when several apply.
pub const PRECEDENCE: [Change; 7] = [
    Change::Appeared,
    Change::Disappeared,
    Change::NewlyRefused,
    Change::NewlyVerified,
    Change::ReasonChanged,
    Change::SourceChanged,
    Change::ProfileChanged,
];

impl Change {
    /// Every change, in the order `counts` lists them.
    pub const ALL: [Change; 9] = [
        Change::StillVerified,
        Change::NewlyVerified,
        Change::NewlyRefused,
        Change::ReasonChanged,
        Change::ProfileChanged,
        Change::SourceChanged,
        Change::Appeared,
        Change::Disappeared,
        Change::Unchanged,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Change::StillVerified => "still-verified",
            Change::NewlyVerified => "newly-verified",
            Change::NewlyRefused => "newly-refused",
            Change::ReasonChanged => "reason-changed",
            Change::ProfileChanged => "profile-changed",
            Change::SourceChanged => "source-changed",
            Change::Appeared => "appeared",
            Change::Disappeared => "disappeared",
            Change::Unchanged => "unchanged",
        }
    }

    fn heading(self) -> &'static str {
        match self {
            Change::StillVerified => "Still verified",
            Change::NewlyVerified => "Newly verified",
            Change::NewlyRefused => "Newly refused (regressions)",
            Change::ReasonChanged => "Reason changed",
            Change::ProfileChanged => "Profile changed",
            Change::SourceChanged => "Source changed",
            Change::Appeared => "Appeared",
            Change::Disappeared => "Disappeared",
            Change::Unchanged => "Unchanged (refused the same way)",
        }
    }
}

/// A session as one manifest records it, as far as the diff looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    pub outcome: Outcome,
    /// The refusal's class id; `error` for an unreadable source.
    pub class: Option<String>,
    /// Rules: for a verified session those that presented it, otherwise
    /// those its refusal names.
    pub rules: BTreeSet<String>,
    pub location: Option<String>,
    pub reason: Option<String>,
    pub profile: String,
    pub source_digest: String,
}

fn is_verified(o: Outcome) -> bool {
    matches!(
        o,
        Outcome::Verdict(VerdictKind::Verified | VerdictKind::VerifiedSourceOnly)
    )
}

/// The rule id a reason text ends with, `... (rule-id)`, if it is one.
fn reason_rule(reason: &str) -> Option<String> {
    let inner = reason.trim_end().strip_suffix(')')?;
    let (_, id) = inner.rsplit_once('(')?;
    RuleId::from_id(id).map(|r| r.id().to_string())
}

impl State {
    pub fn of(s: &SessionRecord) -> State {
        let outcome = s.outcome();
        let verified = is_verified(outcome);
        let mut rules: BTreeSet<String> = s.rules.iter().cloned().collect();
        let reason = s.reason_text().map(str::to_string);
        if !verified {
            rules.extend(reason.as_deref().and_then(reason_rule));
        }
        let location = match outcome {
            Outcome::Verdict(VerdictKind::Unknown | VerdictKind::Incomplete) => reason
                .as_deref()
                .and_then(|r| r.split_once(": "))
                .map(|(l, _)| l.to_string()),
            _ => None,
        };
        let class = match (outcome, s.class()) {
            (_, Some(c)) => Some(c.id().to_string()),
            (Outcome::Error, None) => Some("error".to_string()),
            _ => None,
        };
        State {
            outcome,
            class,
            rules,
            location,
            reason,
            profile: s.profile.clone(),
            source_digest: s.source_digest.clone(),
        }
    }

    pub fn verified(&self) -> bool {
        is_verified(self.outcome)
    }

    /// `verified`, or `unknown (class) at location (rule)`.
    fn short(&self) -> String {
        let mut s = self.outcome.as_str().to_string();
        if !self.verified() {
            if let Some(c) = &self.class {
                let _ = write!(s, " ({c})");
            }
            if let Some(l) = &self.location {
                let _ = write!(s, " at {}", md_code(l, true));
            }
            if !self.rules.is_empty() {
                let rules: Vec<String> = self.rules.iter().map(|r| md_text(r)).collect();
                let _ = write!(s, " [{}]", rules.join(", "));
            }
        }
        s
    }
}

/// One session of the diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionDiff {
    pub file_id: String,
    pub change: Change,
    /// The other changes that apply, in [`PRECEDENCE`] order.
    pub also: Vec<Change>,
    pub old: Option<State>,
    pub new: Option<State>,
}

impl SessionDiff {
    /// Verified in OLD, anything else (or gone) in NEW.
    pub fn regressed(&self) -> bool {
        self.old.as_ref().is_some_and(State::verified)
            && !self.new.as_ref().is_some_and(State::verified)
    }
}

/// The changes that apply to a session present in both, unordered.
fn changes(old: &State, new: &State) -> BTreeSet<Change> {
    let mut c = BTreeSet::new();
    match (old.verified(), new.verified()) {
        (true, false) => {
            c.insert(Change::NewlyRefused);
        }
        (false, true) => {
            c.insert(Change::NewlyVerified);
        }
        (true, true) => {
            // Verified both times, but not the same way: with or without
            // source-only fields, or by other qualifying rules (the rules
            // are part of what "class, rule or location" names).
            if old.outcome != new.outcome || old.rules != new.rules {
                c.insert(Change::ReasonChanged);
            }
        }
        (false, false) => {
            if old.outcome != new.outcome
                || old.class != new.class
                || old.rules != new.rules
                || old.location != new.location
            {
                c.insert(Change::ReasonChanged);
            }
        }
    }
    if old.source_digest != new.source_digest {
        c.insert(Change::SourceChanged);
    }
    if old.profile != new.profile {
        c.insert(Change::ProfileChanged);
    }
    c
}

/// Classifies one session from its two records (either may be absent).
pub fn classify(
    file_id: &str,
    old: Option<&SessionRecord>,
    new: Option<&SessionRecord>,
) -> SessionDiff {
    let old = old.map(State::of);
    let new = new.map(State::of);
    let applying: BTreeSet<Change> = match (&old, &new) {
        (None, _) => [Change::Appeared].into(),
        (_, None) => [Change::Disappeared].into(),
        (Some(o), Some(n)) => changes(o, n),
    };
    let mut ordered = PRECEDENCE.iter().copied().filter(|c| applying.contains(c));
    let change = ordered.next().unwrap_or_else(|| {
        if old.as_ref().is_some_and(State::verified) {
            Change::StillVerified
        } else {
            Change::Unchanged
        }
    });
    SessionDiff {
        file_id: file_id.to_string(),
        change,
        also: ordered.collect(),
        old,
        new,
    }
}

/// A row of the rule or class table: sessions in OLD and in NEW.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub name: String,
    pub old: u64,
    pub new: u64,
}

/// A projection rule's sessions: presented (verified) and refused under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleRow {
    pub rule: String,
    pub applied: (u64, u64),
    pub refused: (u64, u64),
}

impl RuleRow {
    /// (old, new) sessions presented through the rule, then refused under it.
    pub fn sides(&self) -> [(u64, u64); 2] {
        [self.applied, self.refused]
    }
}

/// The whole comparison.
#[derive(Debug, Clone)]
pub struct AuditDiff {
    /// Sorted by file id.
    pub sessions: Vec<SessionDiff>,
    pub counts: BTreeMap<Change, u64>,
    pub regressed: u64,
    /// (old outcome or `absent`, new outcome or `absent`) → sessions.
    pub transitions: BTreeMap<(&'static str, &'static str), u64>,
    /// Refusal classes whose session count changed.
    pub classes: Vec<Row>,
    /// Projection rules whose session counts changed.
    pub rules: Vec<RuleRow>,
    /// The response shapes section ([`ShapesSection`]); `None` until the
    /// caller, who can read the listings beside the manifests, sets it.
    pub shapes: Option<ShapesSection>,
}

/// What the new sweep's answers added to and removed from the old one's
/// response shapes, per listing; or why they were not compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShapesSection {
    Compared {
        ordinary: crate::shapes::ShapeDiff,
        full: crate::shapes::ShapeDiff,
        /// (old, new) fingerprints of the ordinary and full listings.
        fingerprints: [(String, String); 2],
    },
    /// One manifest or both record no listings (an older sweep).
    NotRecorded(String),
}

impl ShapesSection {
    pub fn to_json(&self) -> Value {
        match self {
            ShapesSection::Compared {
                ordinary,
                full,
                fingerprints,
            } => json!({
                "ordinary": {"old": fingerprints[0].0, "new": fingerprints[0].1, "added": ordinary.added, "removed": ordinary.removed},
                "full": {"old": fingerprints[1].0, "new": fingerprints[1].1, "added": full.added, "removed": full.removed},
            }),
            ShapesSection::NotRecorded(why) => json!({"notCompared": why}),
        }
    }
}

fn outcome_or_absent(s: Option<&State>) -> &'static str {
    s.map(|s| s.outcome.as_str()).unwrap_or("absent")
}

/// Compares two manifests.
pub fn diff(old: &Manifest, new: &Manifest) -> AuditDiff {
    let olds: BTreeMap<&str, &SessionRecord> = old
        .sessions
        .iter()
        .map(|s| (s.file_id.as_str(), s))
        .collect();
    let news: BTreeMap<&str, &SessionRecord> = new
        .sessions
        .iter()
        .map(|s| (s.file_id.as_str(), s))
        .collect();
    let ids: BTreeSet<&str> = olds.keys().chain(news.keys()).copied().collect();
    let sessions: Vec<SessionDiff> = ids
        .iter()
        .map(|id| classify(id, olds.get(id).copied(), news.get(id).copied()))
        .collect();
    let mut counts: BTreeMap<Change, u64> = Change::ALL.iter().map(|c| (*c, 0)).collect();
    let mut transitions = BTreeMap::new();
    let mut regressed = 0;
    let mut classes: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    // (applied old, new), (refused under old, new).
    type Sides = ((u64, u64), (u64, u64));
    let mut rules: BTreeMap<String, Sides> = BTreeMap::new();
    for s in &sessions {
        *counts.entry(s.change).or_insert(0) += 1;
        if s.regressed() {
            regressed += 1;
        }
        *transitions
            .entry((
                outcome_or_absent(s.old.as_ref()),
                outcome_or_absent(s.new.as_ref()),
            ))
            .or_insert(0) += 1;
        for (state, side) in [(&s.old, 0), (&s.new, 1)] {
            let Some(st) = state else { continue };
            if let Some(c) = st.class.as_ref().filter(|_| !st.verified()) {
                let e = classes.entry(c.clone()).or_default();
                if side == 0 {
                    e.0 += 1
                } else {
                    e.1 += 1
                }
            }
            for r in &st.rules {
                let e = rules.entry(r.clone()).or_default();
                let slot = if st.verified() { &mut e.0 } else { &mut e.1 };
                if side == 0 {
                    slot.0 += 1
                } else {
                    slot.1 += 1
                }
            }
        }
    }
    AuditDiff {
        sessions,
        counts,
        regressed,
        transitions,
        classes: classes
            .into_iter()
            .filter(|(_, (o, n))| o != n)
            .map(|(name, (old, new))| Row { name, old, new })
            .collect(),
        rules: rules
            .into_iter()
            .filter(|(_, (a, r))| a.0 != a.1 || r.0 != r.1)
            .map(|(rule, (applied, refused))| RuleRow {
                rule,
                applied,
                refused,
            })
            .collect(),
        shapes: None,
    }
}

/// A side of a session in the `--json` document, borrowed from its
/// [`State`] (written member by member in this order).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StateJson<'a> {
    verdict: &'static str,
    reason_class: &'a Option<String>,
    rules: &'a BTreeSet<String>,
    location: &'a Option<String>,
    reason: &'a Option<String>,
    profile: &'a str,
    source_digest: &'a str,
}

impl<'a> StateJson<'a> {
    fn of(s: &'a State) -> StateJson<'a> {
        StateJson {
            verdict: s.outcome.as_str(),
            reason_class: &s.class,
            rules: &s.rules,
            location: &s.location,
            reason: &s.reason,
            profile: &s.profile,
            source_digest: &s.source_digest,
        }
    }
}

/// A session of the `--json` document.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SessionJson<'a> {
    file_id: &'a str,
    change: &'static str,
    also: Vec<&'static str>,
    old: Option<StateJson<'a>>,
    new: Option<StateJson<'a>>,
}

/// The sessions, serialized one at a time (never a tree of them all).
struct SessionsJson<'a>(&'a [SessionDiff]);

impl Serialize for SessionsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.collect_seq(self.0.iter().map(|s| SessionJson {
            file_id: &s.file_id,
            change: s.change.id(),
            also: s.also.iter().map(|c| c.id()).collect(),
            old: s.old.as_ref().map(StateJson::of),
            new: s.new.as_ref().map(StateJson::of),
        }))
    }
}

/// `counts`: every change, in [`Change::ALL`] order.
struct CountsJson<'a>(&'a BTreeMap<Change, u64>);

impl Serialize for CountsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.collect_map(
            Change::ALL
                .iter()
                .map(|c| (c.id(), self.0.get(c).copied().unwrap_or(0))),
        )
    }
}

/// The `--json` document, borrowed from the diff.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DiffJson<'a> {
    sessions: SessionsJson<'a>,
    counts: CountsJson<'a>,
    regressed: u64,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    incomplete_inputs: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    shapes: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    redaction: Option<Value>,
}

impl AuditDiff {
    fn json_doc<'a>(&'a self, incomplete: &'a [String], redaction: Option<Value>) -> DiffJson<'a> {
        DiffJson {
            sessions: SessionsJson(&self.sessions),
            counts: CountsJson(&self.counts),
            regressed: self.regressed,
            incomplete_inputs: incomplete,
            shapes: self.shapes.as_ref().map(ShapesSection::to_json),
            redaction,
        }
    }

    /// The `--json` document: `{"sessions": [{"fileId", "change", "also",
    /// "old", "new"}], "counts": {change: n}, "regressed": n}`, plus
    /// `incompleteInputs` (the manifests that are not complete) when
    /// `--allow-incomplete` let one in.
    pub fn to_json(&self, incomplete: &[String]) -> Value {
        serde_json::to_value(self.json_doc(incomplete, None)).unwrap_or_default()
    }

    /// [`Self::to_json`] with its `redaction` member last, as the pretty
    /// text `audit-diff --json` writes (and a newline), serialized straight
    /// from the diff: 100,000 sessions are never a `Value` tree.
    pub fn json_bytes(&self, incomplete: &[String], redaction: Value) -> Vec<u8> {
        crate::manifest::pretty_json_line(&self.json_doc(incomplete, Some(redaction)))
    }
}

/// What the report says about its two inputs.
#[derive(Debug, Clone)]
pub struct Inputs<'a> {
    pub old_name: &'a str,
    pub new_name: &'a str,
    pub old: &'a Manifest,
    pub new: &'a Manifest,
    /// One line per input that is not complete (let in by `--allow-incomplete`).
    pub incomplete: &'a [String],
}

use crate::report::escape::{md_code, md_text};
use crate::report::svg::{outcome_color, DARK};

/// The Markdown report, the transition chart inline.
pub fn render_markdown(d: &AuditDiff, inputs: &Inputs<'_>) -> String {
    let mut s = String::new();
    md_heading(&mut s, d, inputs);
    md_changes(&mut s, d);
    md_classes(&mut s, d);
    md_rules(&mut s, d);
    md_shapes(&mut s, d);
    md_sessions(&mut s, d);
    s
}

/// The incomplete-input warning, the title, the two inputs and the verdict
/// on regressions.
fn md_heading(s: &mut String, d: &AuditDiff, inputs: &Inputs<'_>) {
    if !inputs.incomplete.is_empty() {
        let _ = writeln!(
            s,
            "**Incomplete input (--allow-incomplete): {}; sessions without a verdict are compared as they are, and this comparison is not a finished audit.**\n",
            md_text(&inputs.incomplete.join("; "))
        );
    }
    let _ = writeln!(s, "# agy-audit release diff\n");
    for (label, name, m) in [
        ("old", inputs.old_name, inputs.old),
        ("new", inputs.new_name, inputs.new),
    ] {
        let _ = writeln!(
            s,
            "- {label}: {} (root {}, started {}, {} sessions, {})",
            md_code(name, false),
            md_code(&m.root, false),
            md_text(&m.started),
            m.sessions.len(),
            if m.complete {
                "complete"
            } else {
                "**not complete**"
            }
        );
    }
    let _ = writeln!(s);
    if d.regressed == 0 {
        let _ = writeln!(
            s,
            "**No session regressed** (none went from verified to not verified).\n"
        );
    } else {
        let _ = writeln!(
            s,
            "**{} regressed**: verified in old, not verified (or gone) in new.\n",
            crate::util::count(d.regressed, "session")
        );
    }
}

/// The counts per change and the verdict transitions, chart and table.
fn md_changes(s: &mut String, d: &AuditDiff) {
    let _ = writeln!(s, "## Changes\n\n| change | sessions |\n|---|---|");
    for c in Change::ALL {
        let _ = writeln!(
            s,
            "| {} | {} |",
            c.id(),
            d.counts.get(&c).copied().unwrap_or(0)
        );
    }
    let _ = writeln!(s, "\n## Verdict transitions\n");
    s.push_str(&transition_chart(d));
    let _ = writeln!(s, "\n| old | new | sessions |\n|---|---|---|");
    for ((o, n), k) in &d.transitions {
        let _ = writeln!(s, "| {o} | {n} | {k} |");
    }
}

/// The refusal classes that gained or lost sessions.
fn md_classes(s: &mut String, d: &AuditDiff) {
    let _ = writeln!(s, "\n## Refusal classes that gained or lost sessions\n");
    if d.classes.is_empty() {
        let _ = writeln!(s, "None.");
    } else {
        let _ = writeln!(s, "| class | old | new | change |\n|---|---|---|---|");
        for r in &d.classes {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:+} |",
                r.name,
                r.old,
                r.new,
                r.new as i64 - r.old as i64
            );
        }
    }
}

/// The projection rules that gained or lost sessions, verified or refused.
fn md_rules(s: &mut String, d: &AuditDiff) {
    let _ = writeln!(s, "\n## Projection rules that gained or lost sessions\n");
    if d.rules.is_empty() {
        let _ = writeln!(s, "None.");
    } else {
        let _ = writeln!(
            s,
            "| rule | verified through it, old | new | change | refused under it, old | new | change |\n|---|---|---|---|---|---|---|"
        );
        for r in &d.rules {
            s.push_str("| ");
            s.push_str(&md_text(&r.rule));
            for (old, new) in r.sides() {
                let _ = write!(s, " | {old} | {new} | {:+}", new as i64 - old as i64);
            }
            s.push_str(" |\n");
        }
    }
}

/// The response shapes compared, when either manifest records them.
fn md_shapes(s: &mut String, d: &AuditDiff) {
    match &d.shapes {
        None => {}
        Some(ShapesSection::NotRecorded(why)) => {
            let _ = writeln!(s, "\n## Response shapes\n\nNot compared: {}.", md_text(why));
        }
        Some(ShapesSection::Compared {
            ordinary,
            full,
            fingerprints,
        }) => {
            let _ = writeln!(s, "\n## Response shapes\n");
            for ((label, sd), (old_fp, new_fp)) in [("ordinary", ordinary), ("full", full)]
                .iter()
                .zip(fingerprints)
            {
                let _ = writeln!(
                    s,
                    "- {label} responses: `{old_fp}` → `{new_fp}`: {} entr{} added, {} removed",
                    sd.added.len(),
                    if sd.added.len() == 1 { "y" } else { "ies" },
                    sd.removed.len()
                );
                for l in &sd.added {
                    let _ = writeln!(s, "  - added {}", md_code(&l.replace('\t', " : "), false));
                }
                for l in &sd.removed {
                    let _ = writeln!(s, "  - removed {}", md_code(&l.replace('\t', " : "), false));
                }
            }
        }
    }
}

/// The changed sessions, one table per change in order of precedence.
fn md_sessions(s: &mut String, d: &AuditDiff) {
    for c in PRECEDENCE {
        let listed: Vec<&SessionDiff> = d.sessions.iter().filter(|x| x.change == c).collect();
        if listed.is_empty() {
            continue;
        }
        let _ = writeln!(
            s,
            "\n## {} ({})\n\n| fileId | old | new | also |\n|---|---|---|---|",
            c.heading(),
            listed.len()
        );
        for x in listed {
            let also: Vec<&str> = x.also.iter().map(|c| c.id()).collect();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                md_code(&x.file_id, true),
                x.old
                    .as_ref()
                    .map(State::short)
                    .unwrap_or_else(|| "absent".into()),
                x.new
                    .as_ref()
                    .map(State::short)
                    .unwrap_or_else(|| "absent".into()),
                also.join(", ")
            );
        }
    }
}

/// The outcomes in the chart's order, `absent` for a session only one
/// manifest holds; each coloured as the qualification report's chart
/// colours it ([`crate::report::svg::outcome_color`]).
const OUTCOMES: [&str; 7] = [
    "verified",
    "verified-source-only",
    "unknown",
    "incomplete",
    "not-fetched",
    "error",
    "absent",
];

/// The verdict transitions as an SVG flow chart: the old outcomes stacked on
/// the left, the new on the right, a band from each old outcome to each new
/// one as thick as its sessions, coloured by where it ends; sessions that kept
/// their outcome run straight across in a lighter shade.
pub fn transition_chart(d: &AuditDiff) -> String {
    const LEFT: f64 = 200.0;
    const RIGHT: f64 = 560.0;
    const BAR: f64 = 18.0;
    const TOP: f64 = 46.0;
    const SPAN: f64 = 360.0;
    const GAP: f64 = 14.0;
    const MIN: f64 = 2.0;
    let total: u64 = d.transitions.values().sum();
    let scale = if total == 0 { 0.0 } else { SPAN / total as f64 };
    let thick = |n: u64| (n as f64 * scale).max(MIN);
    let index = |name: &str| OUTCOMES.iter().position(|o| *o == name).unwrap_or(6);
    // Each side's stack: the height of each outcome, as the sum of its bands.
    let mut left_h = [0.0f64; 7];
    let mut right_h = [0.0f64; 7];
    let mut left_n = [0u64; 7];
    let mut right_n = [0u64; 7];
    for ((o, n), k) in &d.transitions {
        left_h[index(o)] += thick(*k);
        right_h[index(n)] += thick(*k);
        left_n[index(o)] += k;
        right_n[index(n)] += k;
    }
    let tops = |h: &[f64; 7]| {
        let mut y = TOP;
        let mut out = [0.0f64; 7];
        for i in 0..7 {
            out[i] = y;
            if h[i] > 0.0 {
                y += h[i] + GAP;
            }
        }
        (out, y)
    };
    let (left_top, left_end) = tops(&left_h);
    let (right_top, right_end) = tops(&right_h);
    let height = (left_end.max(right_end) + 20.0).max(120.0).ceil();
    let width = 800.0;
    let mut s = crate::report::svg::open(
        width,
        height,
        format_args!(
            "Verdict transitions, old → new ({total} sessions, {} regressed)",
            d.regressed
        ),
    );
    // Bands in the chart's outcome order (old, then new), stacked within
    // each end, so that bands cross only where verdicts changed.
    let mut bands: Vec<(&str, &str, u64)> = d
        .transitions
        .iter()
        .map(|((o, n), k)| (*o, *n, *k))
        .collect();
    bands.sort_by_key(|(o, n, _)| (index(o), index(n)));
    let mut left_y = left_top;
    let mut right_y = right_top;
    for (o, n, k) in &bands {
        let (i, j) = (index(o), index(n));
        let t = thick(*k);
        let (y0, y1) = (left_y[i], right_y[j]);
        left_y[i] += t;
        right_y[j] += t;
        let (x0, x1) = (LEFT + BAR, RIGHT);
        let mid = (x0 + x1) / 2.0;
        let fill = outcome_color(OUTCOMES[j]);
        let opacity = if i == j { 0.25 } else { 0.6 };
        let _ = writeln!(
            s,
            r#"<path d="M{x0:.1},{y0:.1} C{mid:.1},{y0:.1} {mid:.1},{y1:.1} {x1:.1},{y1:.1} L{x1:.1},{:.1} C{mid:.1},{:.1} {mid:.1},{:.1} {x0:.1},{:.1} Z" fill="{fill}" fill-opacity="{opacity}"><title>{o} → {n}: {k}</title></path>"#,
            y1 + t,
            y1 + t,
            y0 + t,
            y0 + t
        );
    }
    // The two stacks and their labels.
    for (side, h, top, counts) in [
        (0, &left_h, &left_top, &left_n),
        (1, &right_h, &right_top, &right_n),
    ] {
        for i in 0..7 {
            if h[i] <= 0.0 {
                continue;
            }
            let (name, fill) = (OUTCOMES[i], outcome_color(OUTCOMES[i]));
            let x = if side == 0 { LEFT } else { RIGHT };
            let _ = writeln!(
                s,
                r#"<rect x="{x:.1}" y="{:.1}" width="{BAR}" height="{:.1}" fill="{fill}"><title>{name}: {}</title></rect>"#,
                top[i], h[i], counts[i]
            );
            let (tx, anchor) = if side == 0 {
                (LEFT - 6.0, "end")
            } else {
                (RIGHT + BAR + 6.0, "start")
            };
            let _ = writeln!(
                s,
                r#"<text x="{tx:.1}" y="{:.1}" text-anchor="{anchor}" fill="{DARK}">{name} {}</text>"#,
                top[i] + h[i] / 2.0 + 4.0,
                counts[i]
            );
        }
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="40" text-anchor="middle" font-weight="bold" fill="{DARK}">old</text><text x="{:.1}" y="40" text-anchor="middle" font-weight="bold" fill="{DARK}">new</text>"#,
        LEFT + BAR / 2.0,
        RIGHT + BAR / 2.0
    );
    s.push_str("</svg>\n");
    s
}

/// The first listing file `m` records that is not beside `file`.
fn missing_listing(file: &Path, m: &Manifest) -> Option<PathBuf> {
    let shapes = m.shapes.as_ref()?;
    let dir = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    [&shapes.ordinary.file, &shapes.full.file]
        .into_iter()
        .map(|f| dir.join(f))
        .find(|p| !p.exists())
}

/// The shapes section of `audit-diff`'s report (and demo's): the listings
/// beside both manifests compared, or why not.
pub fn shapes_section(
    old_file: &Path,
    old: &Manifest,
    new_file: &Path,
    new: &Manifest,
) -> crate::Result<ShapesSection> {
    // A manifest copied away from its sweep folder keeps its record of the
    // listings but not the files: the section says so rather than failing
    // the whole diff (a listing that is there but does not match its
    // recorded fingerprint is still an error).
    for (file, m) in [(old_file, old), (new_file, new)] {
        if let Some(missing) = missing_listing(file, m) {
            return Ok(ShapesSection::NotRecorded(format!(
                "{}: the shape listing it records is not beside it ({})",
                file.display(),
                missing.display()
            )));
        }
    }
    let o = crate::shapes::of_manifest(old_file, old.shapes.as_ref())?;
    let n = crate::shapes::of_manifest(new_file, new.shapes.as_ref())?;
    Ok(match (o, n, &old.shapes, &new.shapes) {
        (Some((oo, of)), Some((no, nf)), Some(os), Some(ns)) => ShapesSection::Compared {
            ordinary: oo.diff(&no),
            full: of.diff(&nf),
            fingerprints: [
                (
                    os.ordinary.fingerprint.clone(),
                    ns.ordinary.fingerprint.clone(),
                ),
                (os.full.fingerprint.clone(), ns.full.fingerprint.clone()),
            ],
        },
        _ => ShapesSection::NotRecorded(format!(
            "{} records no shape listings (a sweep by an older agy-audit)",
            if old.shapes.is_none() {
                old_file
            } else {
                new_file
            }
            .display()
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::ReasonClass;

    const P: &str = "sqlite-v1-p";

    fn rec(
        id: usize,
        verdict: Option<VerdictKind>,
        class: Option<ReasonClass>,
        reason: Option<&str>,
    ) -> SessionRecord {
        use crate::outcome::{Refused, SessionOutcome};
        let reason = reason.unwrap_or_default().to_string();
        let result = match (verdict, class) {
            (Some(VerdictKind::Verified), _) => SessionOutcome::Verified,
            (Some(VerdictKind::VerifiedSourceOnly), _) => {
                SessionOutcome::VerifiedSourceOnly(Vec::new())
            }
            (Some(_), Some(c)) => SessionOutcome::Refused(Refused::recorded(c, reason)),
            (Some(v), None) => panic!("a {v:?} test record needs a class"),
            (None, Some(ReasonClass::DaemonUnavailable)) => SessionOutcome::NotFetched { reason },
            (None, _) => SessionOutcome::Error { reason },
        };
        SessionRecord::for_test(id, P, result)
    }

    fn verified(id: usize) -> SessionRecord {
        rec(id, Some(VerdictKind::Verified), None, None)
    }

    fn refused(id: usize, class: ReasonClass, reason: &str) -> SessionRecord {
        rec(id, Some(class.verdict()), Some(class), Some(reason))
    }

    fn change(old: Option<&SessionRecord>, new: Option<&SessionRecord>) -> (Change, Vec<Change>) {
        let d = classify("x", old, new);
        (d.change, d.also)
    }

    #[test]
    fn every_classification() {
        use Change::*;
        let v = verified(1);
        let vso = rec(1, Some(VerdictKind::VerifiedSourceOnly), None, Some("x"));
        let uf = refused(
            1,
            ReasonClass::UnknownField,
            "steps[3].metadata: unknown field 900",
        );
        assert_eq!(change(Some(&v), Some(&v)), (StillVerified, vec![]));
        assert_eq!(change(Some(&uf), Some(&uf)), (Unchanged, vec![]));
        assert_eq!(change(None, Some(&v)), (Appeared, vec![]));
        assert_eq!(change(Some(&v), None), (Disappeared, vec![]));
        assert_eq!(change(Some(&v), Some(&uf)), (NewlyRefused, vec![]));
        assert_eq!(change(Some(&uf), Some(&v)), (NewlyVerified, vec![]));
        assert_eq!(change(Some(&v), Some(&vso)), (ReasonChanged, vec![]));
        // Verified both times by other qualifying rules: the reason
        // changed, and still no regression.
        let mut by_rule = verified(1);
        by_rule.rules = vec![crate::rules::RuleId::ALL[0].id().to_string()];
        assert_eq!(change(Some(&v), Some(&by_rule)), (ReasonChanged, vec![]));
        assert!(!classify("x", Some(&v), Some(&by_rule)).regressed());
        assert_eq!(
            change(Some(&by_rule), Some(&by_rule)),
            (StillVerified, vec![])
        );
        // Class, location or rule.
        let other_class = refused(
            1,
            ReasonClass::UnknownEnum,
            "steps[3].metadata: unknown enum",
        );
        assert_eq!(
            change(Some(&uf), Some(&other_class)),
            (ReasonChanged, vec![])
        );
        let other_place = refused(
            1,
            ReasonClass::UnknownField,
            "steps[4].metadata: unknown field 900",
        );
        assert_eq!(
            change(Some(&uf), Some(&other_place)),
            (ReasonChanged, vec![])
        );
        let wording = refused(
            1,
            ReasonClass::UnknownField,
            "steps[3].metadata: unknown field 901",
        );
        assert_eq!(change(Some(&uf), Some(&wording)), (Unchanged, vec![]));
        let rule_a = refused(
            1,
            ReasonClass::UnqualifiedProjection,
            "steps[2]: outside (modern-run-command)",
        );
        let rule_b = refused(
            1,
            ReasonClass::UnqualifiedProjection,
            "steps[2]: outside (modern-read-file)",
        );
        assert_eq!(
            change(Some(&rule_a), Some(&rule_b)),
            (ReasonChanged, vec![])
        );
        // Source and profile, alone and together with others.
        let mut moved = v.clone();
        moved.source_digest = "sha256:other".into();
        assert_eq!(change(Some(&v), Some(&moved)), (SourceChanged, vec![]));
        let mut reprofiled = v.clone();
        reprofiled.profile = "sqlite-v1-q".into();
        assert_eq!(
            change(Some(&v), Some(&reprofiled)),
            (ProfileChanged, vec![])
        );
        let mut all = uf.clone();
        all.source_digest = "sha256:other".into();
        all.profile = "sqlite-v1-q".into();
        assert_eq!(
            change(Some(&v), Some(&all)),
            (NewlyRefused, vec![SourceChanged, ProfileChanged])
        );
        // Not fetched ↔ error, and a not-fetched reason's wording is no location.
        let nf = |r: &str| rec(1, None, Some(ReasonClass::DaemonUnavailable), Some(r));
        assert_eq!(
            change(
                Some(&nf("http://127.0.0.1:1: refused")),
                Some(&nf("http://127.0.0.1:2: refused"))
            ),
            (Unchanged, vec![])
        );
        let err = rec(1, None, None, Some("/x.db: I/O error"));
        assert_eq!(
            change(Some(&nf("a: b")), Some(&err)),
            (ReasonChanged, vec![])
        );
    }

    #[test]
    fn regressions_counts_tables_and_chart() {
        let mut old = Manifest::new("/a", "e", "t".into());
        let mut new = Manifest::new("/b", "e", "t".into());
        old.add(verified(1));
        new.add(refused(
            1,
            ReasonClass::UnqualifiedProjection,
            "steps[1]: x (modern-read-file)",
        ));
        old.add(verified(2));
        old.add(refused(3, ReasonClass::UnknownField, "a: b"));
        new.add(verified(3));
        new.add(verified(4));
        let d = diff(&old, &new);
        assert_eq!(d.regressed, 2, "newly refused and disappeared");
        assert_eq!(d.counts[&Change::NewlyRefused], 1);
        assert_eq!(d.counts[&Change::Disappeared], 1);
        assert_eq!(d.counts[&Change::NewlyVerified], 1);
        assert_eq!(d.counts[&Change::Appeared], 1);
        assert!(d
            .classes
            .iter()
            .any(|r| r.name == "unknown-field" && r.old == 1 && r.new == 0));
        assert!(d
            .rules
            .iter()
            .any(|r| r.rule == "modern-read-file" && r.refused == (0, 1)));
        let j = d.to_json(&[]);
        assert_eq!(j["regressed"], 2);
        assert_eq!(j["counts"]["appeared"], 1);
        assert!(j.get("incompleteInputs").is_none());
        let svg = transition_chart(&d);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("verified → unknown: 1"), "{svg}");
        let inputs = Inputs {
            old_name: "old.json",
            new_name: "new.json",
            old: &old,
            new: &new,
            incomplete: &["old.json is not complete".to_string()],
        };
        let text = render_markdown(&d, &inputs);
        assert!(
            text.lines().next().unwrap().contains("Incomplete input"),
            "{text}"
        );
        assert!(text.contains("<svg"));
        assert_eq!(text, render_markdown(&d, &inputs), "deterministic");
    }
}
