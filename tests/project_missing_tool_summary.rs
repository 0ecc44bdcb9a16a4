//! Resultless run_command and view_file rejected for missing toolSummary.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::project::Reason;
use agy_audit::rules::RuleId;
use common::*;

const MSG: &str = "invalid arguments:\n- missing property 'toolSummary'";

fn rejected(tool: &str, args: Json) -> Json {
    let mut w = wrapper(tool, "CORTEX_STEP_STATUS_INVALID", &args, None);
    w["metadata"]["toolSource"] = json!("TOOL_SOURCE_BUILTIN");
    w["metadata"]["internalMetadata"] = json!({"statusTransitions": [
        {"updatedStatus": "CORTEX_STEP_STATUS_PENDING"}, {"updatedStatus": "CORTEX_STEP_STATUS_INVALID"}]});
    w["error"] = json!({"shortError": MSG, "fullError": MSG});
    w
}

fn command_args() -> Json {
    json!({"CommandLine": "cargo test", "Cwd": "/work", "WaitMsBeforeAsync": 5000,
           "IsDaemon": false, "RunPersistent": false, "toolAction": "run"})
}

fn read_args() -> Json {
    json!({"AbsolutePath": "/work/a.rs", "StartLine": 1, "EndLine": 40, "toolAction": "read"})
}

fn cases() -> Vec<Json> {
    vec![
        rejected("run_command", command_args()),
        rejected("view_file", read_args()),
    ]
}

fn with_args(w: &Json, args: Json) -> Json {
    let v = with(w, "/generic/args", rendered_args(&args));
    with(
        &v,
        "/metadata/toolCall/argumentsJson",
        json!(args.to_string()),
    )
}

#[test]
fn missing_tool_summary_rejections_stay_generic() {
    let s = schema();
    for w in cases() {
        let (got, rule, p) = accept_one(&s, &w);
        assert_eq!(rule, RuleId::MissingToolSummary);
        assert_eq!(got, normalized_step(&s, &w));
        assert!(p.dropped().is_empty());
    }
}

#[test]
fn missing_tool_summary_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::MissingToolSummary);
    for w in cases() {
        // A result.
        let v = with(&w, "/generic/result", json!({"result": "x"}));
        assert_refuses(&s, &v, Reason::PayloadFreeTool, None);
        // Task details, permission or interaction records.
        for (p, x) in [
            ("/taskDetails", json!({"id": "t"})),
            (
                "/permissions",
                json!({"permissionGrants": [{"action": "x"}]}),
            ),
            ("/completedInteractions", json!([{"request": {}}])),
        ] {
            assert_refuses(&s, &with(&w, p, x), Reason::MissingSummaryRecords, rule);
        }
        // Another error.
        assert_refuses(
            &s,
            &with(&w, "/error/fullError", json!("invalid arguments:")),
            Reason::MissingSummaryError,
            rule,
        );
        assert_refuses(
            &s,
            &with(
                &w,
                "/error/shortError",
                json!("invalid arguments:\n- missing property 'Cwd'"),
            ),
            Reason::MissingSummaryError,
            rule,
        );
        assert_refuses(
            &s,
            &with(&w, "/error/userErrorMessage", json!("x")),
            Reason::MissingSummaryError,
            rule,
        );
        assert_refuses(
            &s,
            &without(&w, "/error"),
            Reason::MissingSummaryError,
            rule,
        );
        // Tool source and history.
        assert_refuses(
            &s,
            &with(&w, "/metadata/toolSource", json!("TOOL_SOURCE_MCP")),
            Reason::MissingSummaryOutcome,
            rule,
        );
        assert_refuses(
            &s,
            &without(&w, "/metadata/toolSource"),
            Reason::MissingSummaryOutcome,
            rule,
        );
        let t = "/metadata/internalMetadata/statusTransitions/1";
        assert_refuses(
            &s,
            &with(
                &w,
                &format!("{t}/updatedStatus"),
                json!("CORTEX_STEP_STATUS_ERROR"),
            ),
            Reason::MissingSummaryOutcome,
            rule,
        );
        assert_refuses(
            &s,
            &with(
                &w,
                "/metadata/internalMetadata/statusTransitions/2",
                json!({"updatedStatus": "CORTEX_STEP_STATUS_INVALID"}),
            ),
            Reason::MissingSummaryOutcome,
            rule,
        );
        // Arguments that do not repeat the tool call.
        assert_refuses(
            &s,
            &with(&w, "/metadata/toolCall/argumentsJson", json!("{}")),
            Reason::ArgumentsRepeatToolCall,
            rule,
        );
    }
    let c = cases();
    // toolSummary and other arguments; the shapes' values.
    let mut a = command_args();
    a["toolSummary"] = json!("runs tests");
    assert_refuses(
        &s,
        &with_args(&c[0], a),
        Reason::MissingSummaryArguments,
        rule,
    );
    for (k, v) in [
        ("IsDaemon", json!(true)),
        ("RunPersistent", json!("false")),
        ("WaitMsBeforeAsync", json!("5000")),
    ] {
        let mut a = command_args();
        a[k] = v;
        assert_refuses(
            &s,
            &with_args(&c[0], a),
            Reason::MissingSummaryArguments,
            rule,
        );
    }
    let mut a = command_args();
    a.as_object_mut().expect("object").remove("toolAction");
    assert_refuses(
        &s,
        &with_args(&c[0], a),
        Reason::MissingSummaryArguments,
        rule,
    );
    let mut a = read_args();
    a.as_object_mut().expect("object").remove("EndLine");
    assert_refuses(
        &s,
        &with_args(&c[1], a),
        Reason::MissingSummaryArguments,
        rule,
    );
    let mut a = read_args();
    a["ContentOffset"] = json!(3);
    assert_refuses(
        &s,
        &with_args(&c[1], a),
        Reason::MissingSummaryArguments,
        rule,
    );
}
