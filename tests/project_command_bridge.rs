//! The run_command bridge formatting failure.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::project::Reason;
use agy_audit::rules::RuleId;
use common::*;

const N: &str = "/generic/result/payload";
const PREFIX: &str = "bridged adapter run_command: to string: template execution error: ";

fn history(statuses: &[&str]) -> Json {
    json!({"statusTransitions": statuses.iter().map(|s| json!({"updatedStatus": format!("CORTEX_STEP_STATUS_{s}")})).collect::<Vec<_>>()})
}

fn bridge() -> Json {
    let args = json!({"CommandLine": "go test ./...", "Cwd": "/work", "WaitMsBeforeAsync": 5000});
    let native = json!({"type": "CORTEX_STEP_TYPE_RUN_COMMAND", "status": "CORTEX_STEP_STATUS_DONE",
        "metadata": {"toolCall": tool_call("run_command", &args), "toolSource": "TOOL_SOURCE_BUILTIN",
                     "preToolHookResults": [{"decision": "DECISION_ALLOW"}],
                     "internalMetadata": history(&["PENDING", "RUNNING"])},
        "runCommand": {"commandLine": "go test ./...", "proposedCommandLine": "go test ./...", "cwd": "/work",
                       "waitMsBeforeAsync": "5000", "blocking": true, "exitCode": 0, "shell": "bash",
                       "ranInSandbox": true, "combinedOutput": {"full": "ok  pkg 0.1s"}}});
    let mut w = wrapper(
        "run_command",
        "CORTEX_STEP_STATUS_ERROR",
        &args,
        Some(json!({"payload": any_of(STEP_URL, &native)})),
    );
    w["metadata"]["toolSource"] = json!("TOOL_SOURCE_BUILTIN");
    w["metadata"]["preToolHookResults"] = json!([{"decision": "DECISION_ALLOW"}]);
    w["metadata"]["internalMetadata"] = history(&["PENDING", "RUNNING", "ERROR"]);
    let e = format!("{PREFIX}template: output:1: unexpected EOF");
    w["error"] = json!({"shortError": e, "fullError": e});
    w
}

#[test]
fn bridge_failure_presents_the_native_command_as_error() {
    let s = schema();
    let w = bridge();
    let (got, rule, p) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::CommandBridgeFormatFailure);
    let mut want = without(w.pointer(N).expect("payload"), "/@type");
    want["status"] = json!("CORTEX_STEP_STATUS_ERROR");
    assert_eq!(got, normalized_step(&s, &want));
    assert!(got.get("error").is_none());
    assert!(
        p.dropped().iter().any(|d| d == "steps[0].error"),
        "{:?}",
        p.dropped()
    );
}

#[test]
fn bridge_failure_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::CommandBridgeFormatFailure);
    let w = bridge();
    // The formatting error.
    assert_refuses(
        &s,
        &with(&w, "/error/fullError", json!("other")),
        Reason::BridgeError,
        rule,
    );
    let e = "bridged adapter run_command: exec failed";
    assert_refuses(
        &s,
        &with(
            &with(&w, "/error/shortError", json!(e)),
            "/error/fullError",
            json!(e),
        ),
        Reason::BridgeError,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/error/userErrorMessage", json!("x")),
        Reason::BridgeError,
        rule,
    );
    // Other result fields.
    assert_refuses(
        &s,
        &with(&w, "/generic/result/result", json!("ok")),
        Reason::BridgeResult,
        rule,
    );
    // Native errors, task details, permission or interaction records.
    for (p, v) in [
        (format!("{N}/error"), json!({"shortError": "x"})),
        ("/taskDetails".to_string(), json!({"id": "t"})),
        (format!("{N}/taskDetails"), json!({"id": "t"})),
    ] {
        let r = refuse_one(&s, &with(&w, &p, v));
        assert!(
            matches!(r.kind, Reason::BridgeRecords | Reason::InnerOnlyTaskDetails),
            "{r}"
        );
    }
    // Other command outcomes.
    let rc = format!("{N}/runCommand");
    for (k, v) in [
        ("exitCode", json!(1)),
        ("blocking", json!(false)),
        ("ranInSandbox", json!(false)),
        ("shell", json!("zsh")),
        ("waitMsBeforeAsync", json!("0")),
        ("proposedCommandLine", json!("go test")),
        ("cwd", json!("/tmp")),
        ("command", json!("other")),
    ] {
        assert_refuses(
            &s,
            &with(&w, &format!("{rc}/{k}"), v),
            Reason::BridgeCommand,
            rule,
        );
    }
    assert_refuses(
        &s,
        &without(&w, &format!("{rc}/exitCode")),
        Reason::BridgeCommand,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/generic/args/Extra", json!("1")),
        Reason::BridgeCommand,
        rule,
    );
    assert_refuses(
        &s,
        &with(
            &w,
            &format!("{N}/metadata/toolCall/argumentsJson"),
            json!("{}"),
        ),
        Reason::BridgeCommand,
        rule,
    );
    // Tool source and hooks on both steps.
    for m in ["/metadata", &format!("{N}/metadata")] {
        assert_refuses(
            &s,
            &without(&w, &format!("{m}/toolSource")),
            Reason::BridgeCommand,
            rule,
        );
        assert_refuses(
            &s,
            &with(
                &w,
                &format!("{m}/preToolHookResults/1"),
                json!({"decision": "DECISION_ALLOW"}),
            ),
            Reason::BridgeCommand,
            rule,
        );
    }
    // Histories.
    assert_refuses(
        &s,
        &with(
            &w,
            "/metadata/internalMetadata",
            history(&["PENDING", "ERROR"]),
        ),
        Reason::BridgeHistory,
        rule,
    );
    assert_refuses(
        &s,
        &with(
            &w,
            &format!("{N}/metadata/internalMetadata"),
            history(&["PENDING", "RUNNING", "DONE"]),
        ),
        Reason::BridgeHistory,
        rule,
    );
}
