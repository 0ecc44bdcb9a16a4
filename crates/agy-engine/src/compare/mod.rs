//! Stage 5a: compare the daemon's answers with what the source predicts.
//!
//! * The full raw RPC is parsed strictly against the schema (an unknown JSON
//!   field or enum name is a mismatch) and must equal the persisted trajectory
//!   with the declared source-only fields removed.
//! * The ordinary RPC must equal the projection in every presented field.
//!
//! Equality is equality of protobuf values under the proto3 JSON mapping
//! ([`value`]): field names in JSON or proto form, enums by name or number,
//! 64-bit integers as strings or numbers, Timestamps and Durations with any
//! number of fraction digits, bytes in either base64 alphabet. Numbers are
//! compared by their exact decimal value (`1`, `1.0` and `1e0` are equal,
//! `0.1` and `0.1000000000000000055` are not): no float round trip. A
//! member repeated in one object is refused. The first differing paths are
//! reported with both values. [`stream`] confirms the canonical text in one
//! pass first; only when it cannot does the value comparison run.

pub(crate) mod json;
pub mod stream;
pub mod value;

pub(crate) use json::decimal;
pub use json::{json_diff, numbers_equal};

use crate::schema::Schema;
use crate::source::wire_trajectory::WireTrajectory;
use crate::verdict::{ReasonClass, Refusal};
use prost_reflect::DynamicMessage;
use serde_json::Value;

/// How many differing paths a mismatch reports.
pub const MAX_REPORTED_PATHS: usize = 5;

/// The daemon's answer disagrees with the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub class: ReasonClass,
    pub paths: Vec<String>,
}

impl Mismatch {
    pub fn to_refusal(&self) -> Refusal {
        let what = match self.class {
            ReasonClass::FullMismatch => "full raw RPC differs from the persisted trajectory",
            _ => "ordinary RPC differs from the projection",
        };
        // The first difference is the location; the detail names the rule
        // and only the other differences, so no path is said twice.
        let detail = match self.paths.get(1..) {
            Some(rest) if !rest.is_empty() => format!("{what}; also {}", rest.join("; ")),
            _ => what.to_string(),
        };
        Refusal::new(
            self.class,
            self.paths.first().cloned().unwrap_or_default(),
            detail,
        )
    }
}

/// Parses a trajectory JSON strictly against the schema: an unknown field,
/// an unknown enum name or a value of the wrong type is an error.
///
/// Numbers are handed to the message parser as decimal strings (which the
/// protobuf JSON mapping accepts for every numeric type), integral values
/// spelled plainly (`1.0` and `1e0` as `1`): exact numbers are kept as text
/// throughout, and the parser would otherwise see them as opaque values.
/// Whether a number stands where the schema wants one is the tree
/// comparison's to decide (a number is never equal to a string there).
pub fn parse_strict(schema: &Schema, text: &str) -> Result<DynamicMessage, String> {
    parse_strict_as(schema.names.trajectory.clone(), text)
}

/// [`parse_strict`] for any message type.
pub fn parse_strict_as(
    desc: prost_reflect::MessageDescriptor,
    text: &str,
) -> Result<DynamicMessage, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    DynamicMessage::deserialize(desc, strict_view(value)).map_err(|e| e.to_string())
}

/// `v` with every number replaced by its decimal string (see [`parse_strict`]).
fn strict_view(v: Value) -> Value {
    match v {
        Value::Number(n) => {
            let text = n.to_string();
            Value::String(integral_text(&text).unwrap_or(text))
        }
        Value::Array(a) => Value::Array(a.into_iter().map(strict_view).collect()),
        Value::Object(m) => {
            Value::Object(m.into_iter().map(|(k, v)| (k, strict_view(v))).collect())
        }
        other => other,
    }
}

/// The plain integer spelling of an integral number (`1.0`, `1e3`), if it is one.
fn integral_text(text: &str) -> Option<String> {
    let (neg, digits, exp) = decimal(text)?;
    if digits.is_empty() {
        return Some("0".into());
    }
    if !(0..=400).contains(&exp) {
        return None;
    }
    let sign = if neg { "-" } else { "" };
    Some(format!("{sign}{digits}{}", "0".repeat(exp as usize)))
}

/// Parses JSON keeping exact numbers.
pub fn parse_value(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// Compares the full raw RPC trajectory with the persisted one.
pub fn compare_full(
    schema: &Schema,
    persisted: &DynamicMessage,
    full: &str,
) -> Result<(), Mismatch> {
    compare(schema, persisted, full, ReasonClass::FullMismatch)
}

/// Whether the one pass over the source's encoding ([`stream::wire`])
/// confirms the full raw RPC trajectory equal to the persisted one, without
/// decoding the trajectory into a tree. `false` is not a mismatch: the
/// persisted tree is then decoded and [`compare_full`] decides (and names
/// the paths).
pub fn full_confirmed(wire: &WireTrajectory, full: &str) -> bool {
    stream::wire::equals(wire.descriptor(), wire.encoding(), None, full)
}

/// [`compare_ordinary_projection`]'s answer where the one pass over the
/// source's encoding can give it without decoding the trajectory into a
/// tree: `Some(Ok)` when it confirms the ordinary RPC trajectory equal to
/// the projection's presented form (the steps a rule rewrote compared in
/// place of the stored ones, as [`crate::project::Projection::present`]
/// shows them), or else to its first alternative complete presentation,
/// then held to that alternative's violations exactly as there (`Some(Err)`
/// names them). `None`: the tree is decoded and
/// [`compare_ordinary_projection`] decides (RPC-only members, other
/// spellings and the differing paths are its).
///
/// The same answer: an answer the pass confirms equal to an alternative is
/// that alternative's value, so it cannot also equal the presented form
/// (unless the two are one value, which the pass would have confirmed
/// first); only the first alternative is tried, since when the pass cannot
/// confirm it the value comparison might still match it before any later
/// one.
pub fn ordinary_on_wire(
    projection: &crate::project::Projection,
    wire: &WireTrajectory,
    ordinary: &str,
) -> Option<Result<value::RpcOnly, Mismatch>> {
    let confirmed = |alternative: Option<usize>| {
        let Some(steps) = projection.presented_steps(alternative) else {
            return false;
        };
        let Some(splice) = stream::wire::Splice::new(wire.steps_field(), &steps) else {
            return false;
        };
        stream::wire::equals(wire.descriptor(), wire.encoding(), Some(splice), ordinary)
    };
    if confirmed(None) {
        return Some(Ok(value::RpcOnly::default()));
    }
    // The first alternative only: when the pass cannot confirm it, the
    // value comparison might still match it, before any later one.
    let form = projection.alternatives().first()?;
    if !confirmed(Some(0)) {
        return None;
    }
    Some(held_to(form, ordinary, value::RpcOnly::default()))
}

/// An ordinary answer that matched the alternative `form`, held to the
/// form's violations (the members an answer in it may not spell): its
/// RPC-only members when it spells none, else the violations' paths.
fn held_to(
    form: &crate::project::AlternativeForm,
    ordinary: &str,
    rpc_only: value::RpcOnly,
) -> Result<value::RpcOnly, Mismatch> {
    let violations = parse_value(ordinary)
        .map(|v| form.violations(&v))
        .unwrap_or_default();
    if violations.is_empty() {
        return Ok(rpc_only);
    }
    Err(Mismatch {
        class: ReasonClass::OrdinaryMismatch,
        paths: violations.into_iter().take(MAX_REPORTED_PATHS).collect(),
    })
}

/// Compares the ordinary RPC trajectory with the projection.
///
/// "Unknown RPC-only JSON fields remain in the saved payload and its
/// digest." Read to the letter: a member of the ordinary response that the
/// schema does not know at its place (no field of that message, in either
/// spelling) is presentation the daemon computed, with nothing in the source
/// it could come from; it does not fail the comparison, it stays in the
/// saved payload and its digest, and its path is returned so that the
/// manifest, the sidecar and the report name it (a release that adds one is
/// visible). Every field the schema knows must still equal the projection,
/// every projected field must be present, and no member may repeat. The
/// full response has no such allowance ([`compare_full`]): it must equal
/// the persisted trajectory, so a member the source lacks fails there.
pub fn compare_ordinary(
    _schema: &Schema,
    projection: &DynamicMessage,
    ordinary: &str,
) -> Result<value::RpcOnly, Mismatch> {
    if stream::equals(projection, ordinary) {
        return Ok(value::RpcOnly::default());
    }
    let (diffs, rpc_only) = value::diff_text_rpc_only(projection, ordinary, MAX_REPORTED_PATHS);
    if diffs.is_empty() {
        Ok(rpc_only)
    } else {
        Err(Mismatch {
            class: ReasonClass::OrdinaryMismatch,
            paths: diffs,
        })
    }
}

/// Compares the ordinary RPC trajectory with the projection of `trajectory`
/// (the persisted one), taking the projection's alternative complete
/// presentations into account ([`crate::project::AlternativeForm`], e.g.
/// replay147's two command wait forms): the presented form first; when it
/// does not match, each alternative for the whole trajectory at once. A
/// match of an alternative also requires none of its violations
/// ([`crate::project::AlternativeForm::violations`]; replay147: no
/// wait member spelled). Mixed forms match none; the presented form's
/// differences are reported.
pub fn compare_ordinary_projection(
    schema: &Schema,
    projection: &mut crate::project::Projection,
    trajectory: &mut DynamicMessage,
    ordinary: &str,
) -> Result<value::RpcOnly, Mismatch> {
    let presented = compare_ordinary(schema, &projection.present(trajectory), ordinary);
    if presented.is_ok() {
        return presented;
    }
    for i in 0..projection.alternatives().len() {
        let matched = projection.with_alternative(i, |p| {
            compare_ordinary(schema, &p.present(trajectory), ordinary)
        });
        let Some(Ok(rpc_only)) = matched else {
            continue;
        };
        return held_to(&projection.alternatives()[i], ordinary, rpc_only);
    }
    presented
}

/// The one-pass check of [`stream::equals`] (the canonical text); when it
/// does not confirm equality, the value comparison ([`compare_slow`])
/// decides and names the differing paths.
fn compare(
    schema: &Schema,
    expected: &DynamicMessage,
    response: &str,
    class: ReasonClass,
) -> Result<(), Mismatch> {
    if stream::equals(expected, response) {
        return Ok(());
    }
    compare_slow(schema, expected, response, class)
}

/// The value comparison ([`value`]), without the fast path: the response
/// must denote the expected message under the proto3 JSON mapping, every
/// member unique; the differing paths are named with both values.
pub fn compare_slow(
    _schema: &Schema,
    expected: &DynamicMessage,
    response: &str,
    class: ReasonClass,
) -> Result<(), Mismatch> {
    let diffs = value::diff_text(expected, response, MAX_REPORTED_PATHS);
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(Mismatch {
            class,
            paths: diffs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn n(s: &str) -> serde_json::Number {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn numbers_compare_by_exact_decimal_value() {
        assert!(numbers_equal(&n("1"), &n("1.0")));
        assert!(numbers_equal(&n("1e2"), &n("100")));
        assert!(numbers_equal(&n("-0.50"), &n("-5e-1")));
        assert!(numbers_equal(&n("0"), &n("-0.0")));
        assert!(!numbers_equal(&n("0.1"), &n("0.1000000000000000055")));
        assert!(!numbers_equal(
            &n("9007199254740993"),
            &n("9007199254740992")
        ));
    }

    #[test]
    fn integral_numbers_are_spelled_plainly_for_the_strict_parse() {
        assert_eq!(integral_text("1.0").as_deref(), Some("1"));
        assert_eq!(integral_text("1e3").as_deref(), Some("1000"));
        assert_eq!(integral_text("-20.00").as_deref(), Some("-20"));
        assert_eq!(integral_text("-0.0").as_deref(), Some("0"));
        assert_eq!(integral_text("0.5"), None);
        assert_eq!(integral_text("1e-3"), None);
    }

    #[test]
    fn strict_parse_takes_exact_numbers_of_every_spelling() {
        let s = Schema::modeled().unwrap();
        let value = s.pool.get_message_by_name("genai.Value").unwrap();
        for ok in [
            r#"{"numberValue": 0.5}"#,
            r#"{"numberValue": 1}"#,
            r#"{"numberValue": 1e3}"#,
            r#"{"numberValue": -2.5E-3}"#,
        ] {
            assert!(parse_strict_as(value.clone(), ok).is_ok(), "{ok}");
        }
        for bad in [
            r#"{"numberValue": 0.5, "nope": 1}"#,
            r#"{"numberValue": {}}"#,
            r#"{"nullValue": "NOT_A_NAME"}"#,
        ] {
            assert!(parse_strict_as(value.clone(), bad).is_err(), "{bad}");
        }
        let t = &s.names.trajectory;
        let int_field = t.fields().find(|f| {
            matches!(
                f.kind(),
                prost_reflect::Kind::Int32 | prost_reflect::Kind::Uint32
            )
        });
        if let Some(f) = int_field {
            let name = f.json_name();
            assert!(parse_strict_as(t.clone(), &format!(r#"{{"{name}": 2.0}}"#)).is_ok());
            assert!(parse_strict_as(t.clone(), &format!(r#"{{"{name}": 2.5}}"#)).is_err());
        }
    }

    #[test]
    fn diff_reports_paths() {
        let e = json!({"steps": [{"type": "A", "n": 1}], "id": "x"});
        let a = json!({"steps": [{"type": "B", "n": 1.0}], "id": "x", "extra": true});
        let d = json_diff(&e, &a, 5);
        assert_eq!(
            d,
            vec![
                "steps[0].type: \"B\", expected \"A\"",
                "extra: not predicted (response has true)"
            ]
        );
        let a2 = json!({"steps": [], "id": "x"});
        assert_eq!(json_diff(&e, &a2, 5), vec!["steps: 0 elements, expected 1"]);
        assert!(json_diff(&e, &e, 5).is_empty());
    }
}
