//! How a manifest, its `sessions.csv` and `audit-sweep --json` say how the
//! sessions' reasons were written (issue 46, "secrets stay home").
//!
//! A leaf of `manifest`: it reads outcomes and tallies, never a
//! [`super::Manifest`], so `manifest` and `manifest::read` use it without a
//! circle.
//!
//! ## The `redaction` member
//!
//! Exactly one of two shapes, or absent:
//!
//! * `{"ruleset": S, "total": N, "byRule": {<rule id>: n, ...}}`: the
//!   reasons were redacted ([`crate::redact`]) after their location and hold
//!   N markers `[REDACTED:<rule id>]`, counted by rule; written whenever a
//!   reason holds a marker.
//! * absent: redacted, and no reason holds a marker (the captured manifests
//!   of older sweeps read alike; a manifest without the member whose
//!   reasons hold markers was written by no writer and is refused).
//! * `{"redacted": false}`: written with `--no-redact` (`audit-sweep`,
//!   `manifest merge`): the reasons are as the audit worded them and may
//!   hold credentials; nothing is counted.
//!
//! Stricter than the prose where it is silent: `redacted` is written only
//! as `false` (a redacted manifest says so by the counted shape, and
//! `"redacted": true` is refused rather than guessed at); the counted shape
//! is whole (all three members) and never mixed with `redacted`; its counts
//! must equal the markers its reasons hold (a recount, like `counts`), so a
//! count edited or a marker added by hand is refused, and so is a counted
//! member that counts nothing (a writer leaves the member out then). `ruleset` is any
//! text: it names the ruleset that redacted (an older build's too), which
//! the recount cannot check.
//!
//! ## Later writers
//!
//! The mode is the writer's, at every write ([`super::Manifest::set_redaction_mode`]):
//! a redacting write redacts every reason it holds, an earlier run's or
//! another shard's included, so a written manifest never claims redaction
//! while holding raw text; an unredacted write leaves every reason as it is
//! (an earlier run's redacted ones stay redacted) and says `redacted: false`.

use crate::outcome::SessionOutcome;
use crate::redact::{Mode, Redactions, NOT_REDACTED, RULESET_VERSION};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How a manifest's reasons were written (its `redaction` member; the
/// module documentation gives the shapes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RedactionWire", into = "RedactionWire")]
pub enum Redaction {
    /// Redacted: the ruleset, and the markers the reasons hold, by rule.
    Redacted {
        ruleset: String,
        total: u64,
        by_rule: BTreeMap<String, u64>,
    },
    /// `--no-redact`: the reasons as the audit worded them.
    NotRedacted,
}

impl Redaction {
    /// The member a redacting write records for `tally` (none when it
    /// counts nothing).
    pub fn of_tally(tally: &Redactions) -> Option<Redaction> {
        (tally.total() > 0).then(|| Redaction::Redacted {
            ruleset: RULESET_VERSION.to_string(),
            total: tally.total(),
            by_rule: by_rule(tally),
        })
    }
}

fn by_rule(tally: &Redactions) -> BTreeMap<String, u64> {
    tally
        .by_rule()
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect()
}

/// The member as written: every member optional, so that a wrong shape is
/// named rather than reported as "no variant matched".
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RedactionWire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    redacted: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ruleset: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    total: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    by_rule: Option<BTreeMap<String, u64>>,
}

impl From<Redaction> for RedactionWire {
    fn from(r: Redaction) -> RedactionWire {
        match r {
            Redaction::Redacted {
                ruleset,
                total,
                by_rule,
            } => RedactionWire {
                redacted: None,
                ruleset: Some(ruleset),
                total: Some(total),
                by_rule: Some(by_rule),
            },
            Redaction::NotRedacted => RedactionWire {
                redacted: Some(false),
                ruleset: None,
                total: None,
                by_rule: None,
            },
        }
    }
}

/// Why a `redaction` member is no shape a writer writes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedactionShapeError {
    #[error("`redaction.redacted` is written only as false (--no-redact); a redacted manifest's `redaction` is {{ruleset, total, byRule}}")]
    RedactedTrue,
    #[error(
        "`redaction` is {{\"redacted\": false}} with `{0}`: an unredacted manifest counts nothing"
    )]
    CountsWhenNotRedacted(&'static str),
    #[error(
        "`redaction` has no `{0}`: a redacted manifest's `redaction` is {{ruleset, total, byRule}}"
    )]
    Missing(&'static str),
}

impl TryFrom<RedactionWire> for Redaction {
    type Error = RedactionShapeError;

    fn try_from(w: RedactionWire) -> Result<Redaction, RedactionShapeError> {
        match w.redacted {
            Some(true) => Err(RedactionShapeError::RedactedTrue),
            Some(false) => {
                let counted = [
                    ("ruleset", w.ruleset.is_some()),
                    ("total", w.total.is_some()),
                    ("byRule", w.by_rule.is_some()),
                ];
                match counted.iter().find(|(_, present)| *present) {
                    Some((name, _)) => Err(RedactionShapeError::CountsWhenNotRedacted(name)),
                    None => Ok(Redaction::NotRedacted),
                }
            }
            None => Ok(Redaction::Redacted {
                ruleset: w.ruleset.ok_or(RedactionShapeError::Missing("ruleset"))?,
                total: w.total.ok_or(RedactionShapeError::Missing("total"))?,
                by_rule: w.by_rule.ok_or(RedactionShapeError::Missing("byRule"))?,
            }),
        }
    }
}

/// The mode a manifest's `redaction` member says it was written in.
pub fn mode_of(r: Option<&Redaction>) -> Mode {
    match r {
        Some(Redaction::NotRedacted) => Mode::Off,
        _ => Mode::Redact,
    }
}

/// A reason split where redaction starts: the location of a refusal the
/// source alone shows (`location: `, kept as recorded, since
/// `audit-qualify` rechecks such a refusal by class, location and rule; its
/// location is a path or a table and column the reader names), and the
/// rest, which is redacted. Every other reason is redacted whole: a
/// mismatch's "location" is its first difference, which quotes both
/// values from the conversation (`steps[4]...result: "GITHUB_TOKEN=...",
/// expected ...`), and no recheck reads it. None when the outcome has no
/// reason.
pub fn split_reason(o: &SessionOutcome) -> Option<(&str, &str)> {
    let text = o.reason_text()?;
    let keep = match o {
        SessionOutcome::Refused(r) if !r.class().offline() => 0,
        SessionOutcome::Refused(r) if !r.refusal().location.is_empty() => {
            r.refusal().location.len() + 2
        }
        SessionOutcome::Refused(_) => text.find(": ").map(|i| i + 2).unwrap_or(0),
        _ => 0,
    };
    let keep = keep.min(text.len());
    Some(match text.is_char_boundary(keep) {
        true => text.split_at(keep),
        false => ("", text),
    })
}

/// The markers the redacted part of `o`'s reason holds.
pub fn markers(o: &SessionOutcome) -> Redactions {
    let mut tally = Redactions::default();
    if let Some((_, detail)) = split_reason(o) {
        tally.count_markers(detail);
    }
    tally
}

/// Why a `redaction` member disagrees with the reasons (the strict
/// reader's recount): what it records and what the reasons hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disagreement {
    pub recorded: String,
    pub recount: String,
}

/// A manifest's `redaction` held to the markers its sessions' reasons hold
/// (none checked for `{"redacted": false}`, whose reasons are raw text).
pub fn recount<'a>(
    recorded: Option<&Redaction>,
    outcomes: impl Iterator<Item = &'a SessionOutcome>,
) -> Result<(), Disagreement> {
    if recorded == Some(&Redaction::NotRedacted) {
        return Ok(());
    }
    let mut tally = Redactions::default();
    for o in outcomes {
        tally.merge(&markers(o));
    }
    // What a redacting write records: none when no reason holds a marker.
    let expected = Redaction::of_tally(&tally);
    let same = match (recorded, &expected) {
        (None, None) => true,
        (
            Some(Redaction::Redacted { total, by_rule, .. }),
            Some(Redaction::Redacted {
                total: t,
                by_rule: b,
                ..
            }),
        ) => total == t && by_rule == b,
        _ => false,
    };
    if same {
        return Ok(());
    }
    let say = |r: Option<&Redaction>| match r {
        Some(Redaction::Redacted { total, by_rule, .. }) => {
            let list: Vec<String> = by_rule.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{total} marker(s) [{}]", list.join(", "))
        }
        Some(Redaction::NotRedacted) => "redacted: false".to_string(),
        None => "no redaction member".to_string(),
    };
    Err(Disagreement {
        recorded: say(recorded),
        recount: say(expected.as_ref()),
    })
}

/// The `sessions.csv` column that says how a row's reason was written
/// (`redaction`, the last column): `redacted <n> (<ruleset>)` with
/// `: <rule>=<n>, ...` when it redacted any, or, with `--no-redact`,
/// [`CSV_NOT_REDACTED`] on every row.
pub const CSV_COLUMN: &str = "redaction";

/// The `redaction` cell of every row of an unredacted `sessions.csv`.
pub const CSV_NOT_REDACTED: &str =
    "NOT REDACTED (--no-redact): this row's reason may hold credentials; do not share it";

/// The `redaction` cell of a row whose outcome is `o` as written.
pub fn csv_cell(mode: Mode, o: &SessionOutcome) -> String {
    match mode {
        Mode::Off => CSV_NOT_REDACTED.to_string(),
        Mode::Redact => {
            let t = markers(o);
            let mut cell = format!("redacted {} ({RULESET_VERSION})", t.total());
            if t.total() > 0 {
                let list: Vec<String> = t
                    .by_rule()
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                cell.push_str(": ");
                cell.push_str(&list.join(", "));
            }
            cell
        }
    }
}

/// `audit-sweep --json`'s `redaction` member for a manifest written with
/// `recorded` (as written): `{"redacted": true, "ruleset", "total",
/// "byRule"}` or `{"redacted": false, "note"}`, the shape `audit-qualify`
/// and `audit-diff` use (`report::redacted::json_member`).
pub fn summary_member(recorded: Option<&Redaction>) -> serde_json::Value {
    match recorded {
        Some(Redaction::NotRedacted) => {
            serde_json::json!({"redacted": false, "note": NOT_REDACTED})
        }
        Some(Redaction::Redacted {
            ruleset,
            total,
            by_rule,
        }) => serde_json::json!({
            "redacted": true,
            "ruleset": ruleset,
            "total": total,
            "byRule": by_rule,
        }),
        None => serde_json::json!({
            "redacted": true,
            "ruleset": RULESET_VERSION,
            "total": 0,
            "byRule": {},
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Refused;
    use crate::verdict::ReasonClass;

    fn read(v: serde_json::Value) -> Result<Redaction, String> {
        serde_json::from_value::<Redaction>(v).map_err(|e| e.to_string())
    }

    /// The accepted shapes read and write back as themselves.
    #[test]
    fn the_two_shapes_round_trip() {
        for v in [
            serde_json::json!({"redacted": false}),
            serde_json::json!({"ruleset": "r", "total": 2, "byRule": {"jwt": 2}}),
        ] {
            let r = read(v.clone()).unwrap();
            assert_eq!(serde_json::to_value(&r).unwrap(), v);
        }
        assert_eq!(
            read(serde_json::json!({"redacted": false})).unwrap(),
            Redaction::NotRedacted
        );
    }

    /// Each near miss is refused with its reason.
    #[test]
    fn near_miss_shapes_are_refused_by_name() {
        let cases = [
            (
                serde_json::json!({"redacted": true}),
                "written only as false",
            ),
            (
                serde_json::json!({"redacted": true, "ruleset": "r", "total": 0, "byRule": {}}),
                "written only as false",
            ),
            (
                serde_json::json!({"redacted": false, "total": 0}),
                "with `total`",
            ),
            (
                serde_json::json!({"redacted": false, "ruleset": "r"}),
                "with `ruleset`",
            ),
            (
                serde_json::json!({"redacted": false, "byRule": {}}),
                "with `byRule`",
            ),
            (
                serde_json::json!({"total": 1, "byRule": {"jwt": 1}}),
                "no `ruleset`",
            ),
            (
                serde_json::json!({"ruleset": "r", "byRule": {"jwt": 1}}),
                "no `total`",
            ),
            (
                serde_json::json!({"ruleset": "r", "total": 1}),
                "no `byRule`",
            ),
            (serde_json::json!({}), "no `ruleset`"),
            (
                serde_json::json!({"redacted": false, "note": "x"}),
                "unknown field `note`",
            ),
            (serde_json::json!({"redacted": "false"}), "invalid type"),
            (serde_json::json!(false), "invalid type"),
        ];
        for (v, why) in cases {
            let e = read(v.clone()).expect_err(&v.to_string());
            assert!(e.contains(why), "{v}: {e}");
        }
    }

    fn refused(text: &str) -> SessionOutcome {
        // An offline class: its location is kept, and not counted.
        SessionOutcome::Refused(Refused::recorded(ReasonClass::UnknownField, text.into()))
    }

    /// The recount: the member equals the markers after each location;
    /// an unredacted manifest is not counted.
    #[test]
    fn the_member_is_held_to_the_markers() {
        let a = refused("steps[1]: value [REDACTED:jwt] and [REDACTED:jwt]");
        let b = refused("[REDACTED:github-pat]: in the location, not counted");
        let ok = Redaction::Redacted {
            ruleset: "any".into(),
            total: 2,
            by_rule: [("jwt".to_string(), 2)].into(),
        };
        assert_eq!(recount(Some(&ok), [&a, &b].into_iter()), Ok(()));
        assert_eq!(recount(None, [&b].into_iter()), Ok(()));
        assert_eq!(
            recount(Some(&Redaction::NotRedacted), [&a].into_iter()),
            Ok(())
        );
        let off_by_one = Redaction::Redacted {
            ruleset: "any".into(),
            total: 3,
            by_rule: [("jwt".to_string(), 3)].into(),
        };
        let e = recount(Some(&off_by_one), [&a].into_iter()).unwrap_err();
        assert_eq!(e.recorded, "3 marker(s) [jwt=3]");
        assert_eq!(e.recount, "2 marker(s) [jwt=2]");
        let e = recount(None, [&a].into_iter()).unwrap_err();
        assert_eq!(e.recorded, "no redaction member");
        let zero = Redaction::Redacted {
            ruleset: "any".into(),
            total: 0,
            by_rule: BTreeMap::new(),
        };
        // A writer writes no member that counts nothing.
        let e = recount(Some(&zero), [&b].into_iter()).unwrap_err();
        assert_eq!(e.recount, "no redaction member");
        let wrong_rule = Redaction::Redacted {
            ruleset: "any".into(),
            total: 2,
            by_rule: [("gitlab-pat".to_string(), 2)].into(),
        };
        assert!(recount(Some(&wrong_rule), [&a].into_iter()).is_err());
    }

    #[test]
    fn csv_cells_say_the_mode_and_the_rules() {
        let a = refused("steps[1]: value [REDACTED:jwt] [REDACTED:url-password]");
        assert_eq!(
            csv_cell(Mode::Redact, &a),
            format!("redacted 2 ({RULESET_VERSION}): jwt=1, url-password=1")
        );
        assert_eq!(
            csv_cell(Mode::Redact, &SessionOutcome::Verified),
            format!("redacted 0 ({RULESET_VERSION})")
        );
        assert_eq!(csv_cell(Mode::Off, &a), CSV_NOT_REDACTED);
    }

    /// The strict reader (`manifest::read`) takes each written shape and
    /// refuses each near miss by name.
    #[test]
    fn the_strict_reader_holds_the_member() {
        use crate::manifest::read::{parse_strict, ManifestProblem};
        let mut v: serde_json::Value = serde_json::from_slice(include_bytes!(
            "../../../../manifests/default-corpus.manifest.json"
        ))
        .unwrap();
        let read = |v: &serde_json::Value| parse_strict(&serde_json::to_vec(v).unwrap());
        assert!(read(&v).is_ok());
        v["redaction"] = serde_json::json!({"redacted": false});
        assert_eq!(read(&v).unwrap().redaction_mode(), crate::redact::Mode::Off);
        v["redaction"] = serde_json::json!({"redacted": true});
        assert!(
            matches!(read(&v), Err(ManifestProblem::Shape(e)) if e.contains("written only as false"))
        );
        // A refused session whose reason holds a marker.
        let i = v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .position(|s| s["reasonClass"].is_string() && s["verdict"].is_string())
            .unwrap();
        let reason = v["sessions"][i]["reason"].as_str().unwrap().to_string();
        v["sessions"][i]["reason"] = format!("{reason} [REDACTED:jwt]").into();
        let counted =
            serde_json::json!({"ruleset": RULESET_VERSION, "total": 1, "byRule": {"jwt": 1}});
        v["redaction"] = counted.clone();
        assert!(read(&v).is_ok(), "{:?}", read(&v));
        v["redaction"] = serde_json::json!({"redacted": false});
        assert!(read(&v).is_ok(), "an unredacted manifest is not counted");
        v.as_object_mut().unwrap().remove("redaction");
        assert!(matches!(
            read(&v),
            Err(ManifestProblem::Redaction { recorded, .. }) if recorded == "no redaction member"
        ));
        v["redaction"] = serde_json::json!({"ruleset": "r", "total": 2, "byRule": {"jwt": 2}});
        assert!(matches!(
            read(&v),
            Err(ManifestProblem::Redaction { recount, .. }) if recount == "1 marker(s) [jwt=1]"
        ));
        v["redaction"] = counted;
        v["sessions"][i]["reason"] = reason.into();
        assert!(matches!(
            read(&v),
            Err(ManifestProblem::Redaction { recount, .. }) if recount == "no redaction member"
        ));
    }

    /// A mismatch's first difference quotes the conversation's values: the
    /// whole reason is redacted, its "location" too; an offline refusal's
    /// location (rechecked by `audit-qualify`) is kept as recorded.
    #[test]
    fn a_mismatch_is_redacted_whole_and_an_offline_location_kept() {
        use crate::verdict::Refusal;
        const KEY: &str = "ghp_R7xqLk2M9vTn4Wp8Ys1Hd6Fj3Bc5Gz0Ea2Qu";
        let first = format!("steps[4].generic.result.result: \"T={KEY} (x…, expected \"T={KEY}\"");
        let mismatch =
            SessionOutcome::refused(Refusal::new(ReasonClass::FullMismatch, first, "differs"));
        assert_eq!(split_reason(&mismatch).map(|(h, _)| h), Some(""));
        let mut m = crate::manifest::Manifest::new("/s", "e", "t".into());
        m.add(crate::manifest::SessionRecord::for_test(
            1, "sqlite-p", mismatch,
        ));
        let location = format!("steps[1].metadata.{KEY}");
        let offline = SessionOutcome::refused(Refusal::new(
            ReasonClass::UnknownField,
            location.as_str(),
            format!("unknown field {KEY}"),
        ));
        assert_eq!(
            split_reason(&offline).map(|(h, _)| h),
            Some(format!("{location}: ").as_str())
        );
        m.add(crate::manifest::SessionRecord::for_test(
            2, "sqlite-p", offline,
        ));
        let json = String::from_utf8(m.to_json()).unwrap();
        assert!(
            json.contains("steps[4].generic.result.result: \\\"T=[REDACTED:github-pat] (x…"),
            "{json}"
        );
        assert!(
            json.contains(&format!("{location}: unknown field [REDACTED:github-pat]")),
            "{json}"
        );
        // Read back and written again: the same bytes.
        let back = crate::manifest::read::parse_strict(json.as_bytes()).unwrap();
        assert_eq!(back.to_json(), m.to_json());
    }
}
