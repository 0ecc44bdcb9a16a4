//! "Unknown RPC-only JSON fields remain in the saved payload and its
//! digest", to the letter: a member of the ordinary response that the schema
//! does not know (at any depth, inside an Any's message too) does not fail
//! the ordinary comparison and is named by path; every known field must
//! still match; a repeated member still fails; and the full response has no
//! such allowance (it must equal the persisted trajectory).

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::compare::{compare_full, compare_ordinary};
use common::*;
use prost_reflect::DynamicMessage;

const TRAJECTORY: &str = r#"{
  "trajectoryId": "t1",
  "cascadeId": "c1",
  "steps": [
    {"type": "CORTEX_STEP_TYPE_USER_INPUT", "status": "CORTEX_STEP_STATUS_DONE",
     "metadata": {"createdAt": "2026-11-01T10:00:00Z"},
     "userInput": {"userResponse": "hello"}},
    {"type": "CORTEX_STEP_TYPE_GENERIC", "status": "CORTEX_STEP_STATUS_DONE",
     "metadata": {"createdAt": "2026-11-01T10:00:01Z"},
     "generic": {"args": {"Todos": "[]"}}}
  ]
}"#;

fn expected(s: &agy_audit::schema::Schema) -> DynamicMessage {
    agy_audit::compare::parse_strict(s, TRAJECTORY).expect("the fixture parses")
}

fn with(v: &Json, pointer: &str, key: &str, value: Json) -> String {
    let mut v = v.clone();
    v.pointer_mut(pointer)
        .and_then(Json::as_object_mut)
        .expect("an object at the pointer")
        .insert(key.to_string(), value);
    v.to_string()
}

#[test]
fn unknown_ordinary_members_are_kept_and_named() {
    let s = schema();
    let exp = expected(&s);
    let base: Json = serde_json::from_str(TRAJECTORY).unwrap();
    // Nothing unknown: nothing named.
    let r = compare_ordinary(&s, &exp, &base.to_string()).expect("equal");
    assert!(r.paths.is_empty());
    // At the top, in a step, nested in a known message.
    for (pointer, key, path) in [
        ("", "renderHints", "renderHints"),
        ("/steps/1", "rpcRenderHints", "steps[1].rpcRenderHints"),
        (
            "/steps/0/metadata",
            "displayGroup",
            "steps[0].metadata.displayGroup",
        ),
        (
            "/steps/0/userInput",
            "renderedMarkdown",
            "steps[0].userInput.renderedMarkdown",
        ),
    ] {
        let text = with(&base, pointer, key, json!({"collapsed": true, "v": [1, 2]}));
        let r = compare_ordinary(&s, &exp, &text)
            .unwrap_or_else(|m| panic!("{path}: refused: {:?}", m.paths));
        assert_eq!(r.paths, vec![path.to_string()], "{path}");
    }
    // Two at once, in response order.
    let text = with(&base, "/steps/1", "b", json!(1));
    let text = with(&serde_json::from_str(&text).unwrap(), "", "a", json!(2));
    let r = compare_ordinary(&s, &exp, &text).expect("equal");
    assert_eq!(r.paths.len(), 2, "{:?}", r.paths);
}

#[test]
fn known_fields_still_must_match_and_members_must_not_repeat() {
    let s = schema();
    let exp = expected(&s);
    let base: Json = serde_json::from_str(TRAJECTORY).unwrap();
    // An unknown member does not excuse a changed known field.
    let mut changed = base.clone();
    changed["steps"][0]["userInput"]["userResponse"] = json!("bye");
    let text = with(&changed, "", "renderHints", json!(1));
    assert!(compare_ordinary(&s, &exp, &text).is_err());
    // Nor a missing one.
    let mut missing = base.clone();
    missing["steps"][0]
        .as_object_mut()
        .unwrap()
        .remove("userInput");
    let text = with(&missing, "", "renderHints", json!(1));
    assert!(compare_ordinary(&s, &exp, &text).is_err());
    // An unknown member repeated is a repeated member.
    let text = base
        .to_string()
        .replacen("\"trajectoryId\"", "\"x\":1,\"x\":2,\"trajectoryId\"", 1);
    assert!(compare_ordinary(&s, &exp, &text).is_err());
    // An unknown enum value in a known field is a difference, not RPC-only.
    let text = base
        .to_string()
        .replace("CORTEX_STEP_STATUS_DONE", "CORTEX_STEP_STATUS_SHINY");
    assert!(compare_ordinary(&s, &exp, &text).is_err());
}

#[test]
fn the_full_response_has_no_rpc_only_allowance() {
    let s = schema();
    let exp = expected(&s);
    let base: Json = serde_json::from_str(TRAJECTORY).unwrap();
    assert!(compare_full(&s, &exp, &base.to_string()).is_ok());
    for (pointer, key) in [("", "renderHints"), ("/steps/1", "rpcRenderHints")] {
        let text = with(&base, pointer, key, json!(true));
        let m = compare_full(&s, &exp, &text).expect_err("a member the source lacks");
        assert!(
            m.paths.iter().any(|p| p.contains(key)),
            "{key}: {:?}",
            m.paths
        );
    }
}
