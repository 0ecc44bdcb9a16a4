//! Failed list_resources calls.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::project::Reason;
use agy_audit::rules::RuleId;
use common::*;

const ERROR: &str = "CORTEX_STEP_STATUS_ERROR";
const N: &str = "/generic/result/payload";

fn failed_list() -> Json {
    let args = json!({"ServerName": "docs"});
    let native = json!({"type": "CORTEX_STEP_TYPE_LIST_RESOURCES", "status": ERROR,
        "metadata": {"toolCall": tool_call("list_resources", &args)},
        "error": {"shortError": "server docs not found", "fullError": "mcp: server docs not found"},
        "listResources": {"serverName": "docs"}});
    let mut w = wrapper_over("list_resources", ERROR, &args, &native);
    w["generic"]["result"]["fullOutputUri"] = json!("file:///brain/steps/4/output.txt");
    w["error"] = json!({"shortError": "server docs not found", "fullError": "list_resources: server docs not found"});
    w
}

#[test]
fn failed_list_resources_presents_the_native_step() {
    let s = schema();
    let w = failed_list();
    let (got, rule, p) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::FailedListResources);
    assert_eq!(
        got,
        normalized_step(&s, &without(w.pointer(N).expect("payload"), "/@type"))
    );
    assert!(
        p.dropped()
            .iter()
            .any(|d| d == "steps[0].generic.result.fullOutputUri"),
        "{:?}",
        p.dropped()
    );
}

#[test]
fn failed_list_resources_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::FailedListResources);
    let w = failed_list();
    // A successful list call; a wrapper without an outer error.
    let ok = with(
        &with(
            &without(&w, "/error"),
            "/status",
            json!("CORTEX_STEP_STATUS_DONE"),
        ),
        &format!("{N}/status"),
        json!("CORTEX_STEP_STATUS_DONE"),
    );
    assert_refuses(
        &s,
        &without(&ok, &format!("{N}/error")),
        Reason::ListResourcesOutcome,
        rule,
    );
    assert_refuses(
        &s,
        &without(&w, "/error"),
        Reason::ListResourcesOutcome,
        rule,
    );
    // Another short error; a native Step that is not ERROR; more than short and full text.
    assert_refuses(
        &s,
        &with(&w, &format!("{N}/error/shortError"), json!("timeout")),
        Reason::OuterErrorShortError,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, &format!("{N}/status"), json!("CORTEX_STEP_STATUS_DONE")),
        Reason::OuterErrorNativeStatus,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/error/errorId", json!("e1")),
        Reason::OuterErrorText,
        rule,
    );
    // ServerName and the tool call.
    let v = with(&w, "/generic/args/ServerName", json!("\"other\""));
    assert_refuses(&s, &v, Reason::ListResourcesArguments, rule);
    let v = with(&w, "/generic/args/Cursor", json!("\"c\""));
    assert_refuses(&s, &v, Reason::ListResourcesArguments, rule);
    // The native body and the wrapper result.
    assert_refuses(
        &s,
        &with(&w, &format!("{N}/listResources/nextCursor"), json!("c2")),
        Reason::ListResourcesShape,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/generic/result/metadata", json!({"k": "v"})),
        Reason::ListResourcesShape,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/generic/result/stepRenderInfo", json!({"title": "t"})),
        Reason::ListResourcesShape,
        rule,
    );
    // Task details, permission and interaction records.
    assert_refuses(
        &s,
        &with(&w, "/taskDetails", json!({"id": "t"})),
        Reason::ListResourcesRecords,
        rule,
    );
    let both = with(
        &with(&w, "/taskDetails", json!({"id": "t"})),
        &format!("{N}/taskDetails"),
        json!({"id": "t"}),
    );
    assert_refuses(&s, &both, Reason::ListResourcesRecords, rule);
    assert_refuses(
        &s,
        &with(&w, &format!("{N}/taskDetails"), json!({"id": "t"})),
        Reason::InnerOnlyTaskDetails,
        None,
    );
    let perm = json!({"permissionGrants": [{"action": "mcp", "allow": true}]});
    assert_refuses(
        &s,
        &with(&w, "/permissions", perm),
        Reason::PermissionTool,
        None,
    );
}
