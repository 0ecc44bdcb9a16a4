//! Embedded native Steps, canceled command status and the outer-error rule.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::project::Reason;
use agy_audit::rules::RuleId;
use common::*;

fn cmd_args() -> Json {
    json!({"CommandLine": "ls", "Cwd": "/work", "WaitMsBeforeAsync": 5000})
}

fn native_cmd(status: &str) -> Json {
    json!({
        "type": "CORTEX_STEP_TYPE_RUN_COMMAND", "status": status,
        "metadata": {"createdAt": "2026-11-01T10:00:03Z", "toolCall": tool_call("run_command", &cmd_args())},
        "runCommand": {"commandLine": "ls", "cwd": "/work", "exitCode": 0, "combinedOutput": {"full": "a b"}}
    })
}

fn cmd_wrapper(ws: &str, ns: &str) -> Json {
    wrapper_over(
        "run_command",
        &format!("CORTEX_STEP_STATUS_{ws}"),
        &cmd_args(),
        &native_cmd(&format!("CORTEX_STEP_STATUS_{ns}")),
    )
}

fn native(ty: &str, status: &str, body: &str, b: Json) -> Json {
    let mut n = json!({"type": format!("CORTEX_STEP_TYPE_{ty}"), "status": format!("CORTEX_STEP_STATUS_{status}"),
                       "metadata": {"createdAt": "2026-11-01T10:00:03Z"}});
    n[body] = b;
    n
}

const PAYLOAD: &str = "/generic/result/payload";

/// The rule each near-miss is refused under.
const EMBEDDED: Option<RuleId> = Some(RuleId::EmbeddedNativeStep);
const OUTER: Option<RuleId> = Some(RuleId::OuterError);
const CANCELED: Option<RuleId> = Some(RuleId::CanceledCommandStatus);

/// A native VIEW_FILE step of `file:///a`.
fn native_view_file(status: &str) -> Json {
    native(
        "VIEW_FILE",
        status,
        "viewFile",
        json!({"absolutePathUri": "file:///a"}),
    )
}

/// A native INVOKE_SUBAGENT step of subagent `r`.
fn native_subagent(status: &str) -> Json {
    native(
        "INVOKE_SUBAGENT",
        status,
        "invokeSubagent",
        json!({"subagentName": "r"}),
    )
}

/// A native MCP_TOOL step of `srv`'s `make_issue`, failed with "boom".
fn native_mcp_error(arguments_json: &str) -> Json {
    failed(native(
        "MCP_TOOL",
        "ERROR",
        "mcpTool",
        json!({"serverName": "srv", "toolCall": {"name": "make_issue", "argumentsJson": arguments_json}}),
    ))
}

/// `n` with its own error "boom".
fn failed(n: Json) -> Json {
    with(&n, "/error", json!({"shortError": "boom"}))
}

/// A DONE wrapper of `tool` over the native step `n`.
fn done_over(tool: &str, args: &Json, n: &Json) -> Json {
    wrapper_over(tool, "CORTEX_STEP_STATUS_DONE", args, n)
}

/// An ERROR wrapper of `tool` over the native step `n`, with the outer error "boom".
fn outer_error_over(tool: &str, args: &Json, n: &Json) -> Json {
    with_outer_error(
        &wrapper_over(tool, "CORTEX_STEP_STATUS_ERROR", args, n),
        "boom",
    )
}

#[test]
fn ordinary_steps_pass_through_unchanged() {
    let s = schema();
    let conv = Conv::basic(&s);
    let p = project_of(&s, &trajectory_of(&s, &conv)).expect("projects");
    assert_eq!(p.step_rules, vec![RuleId::Passthrough; 3]);
    assert!(p.dropped().is_empty(), "{:?}", p.dropped());
    assert_eq!(
        agy_audit::schema::to_daemon_json(&p.ordinary),
        agy_audit::schema::to_daemon_json(&trajectory_of(&s, &conv))
    );
}

#[test]
fn run_command_wrapper_presents_the_embedded_step() {
    let s = schema();
    let (got, rule, p) = accept_one(&s, &cmd_wrapper("DONE", "DONE"));
    assert_eq!(rule, RuleId::EmbeddedNativeStep);
    assert_eq!(
        got,
        normalized_step(&s, &native_cmd("CORTEX_STEP_STATUS_DONE"))
    );
    assert_eq!(got["runCommand"]["combinedOutput"]["full"], "a b");
    for d in [
        "steps[0].generic.args.CommandLine",
        "steps[0].generic.result.result",
        "steps[0].type",
    ] {
        assert!(
            p.dropped().iter().any(|x| x == d),
            "{d} not in {:?}",
            p.dropped()
        );
    }
    assert!(
        !p.dropped().iter().any(|x| x.contains("payload")),
        "{:?}",
        p.dropped()
    );
}

#[test]
fn code_action_view_file_and_invoke_subagent_wrappers_are_replaced() {
    let s = schema();
    for (tool, n) in [
        (
            "write_to_file",
            native(
                "CODE_ACTION",
                "DONE",
                "codeAction",
                json!({"description": "create a.txt",
            "actionSpec": {"createFile": {"path": {"absoluteUri": "file:///work/a.txt"}}}}),
            ),
        ),
        (
            "view_file",
            native(
                "VIEW_FILE",
                "DONE",
                "viewFile",
                json!({"absolutePathUri": "file:///work/a.txt", "content": "x"}),
            ),
        ),
        (
            "invoke_subagent",
            native(
                "INVOKE_SUBAGENT",
                "DONE",
                "invokeSubagent",
                json!({"subagentName": "r", "prompt": "p",
            "results": [{"conversationId": "c1"}]}),
            ),
        ),
    ] {
        let args = match tool {
            "write_to_file" => json!({"TargetFile": "/work/a.txt", "CodeContent": "x"}),
            "view_file" => json!({"AbsolutePath": "/work/a.txt", "StartLine": 1, "EndLine": 1}),
            _ => json!({"Prompt": "p", "Workspace": "inherit"}),
        };
        let w = wrapper_over(tool, "CORTEX_STEP_STATUS_DONE", &args, &n);
        let (got, rule, _) = accept_one(&s, &w);
        assert_eq!(rule, RuleId::EmbeddedNativeStep, "{tool}");
        assert_eq!(got, normalized_step(&s, &n), "{tool}");
    }
}

#[test]
fn outer_task_details_are_preserved() {
    let s = schema();
    let td = json!({"id": "conv/task-3", "commandLine": "ls", "shortDescription": "listing"});
    let w = with(&cmd_wrapper("DONE", "DONE"), "/taskDetails", td.clone());
    let (got, _, _) = accept_one(&s, &w);
    assert_eq!(got["taskDetails"], td);
    // Equal inner task details are not a conflict.
    let both = with(&w, &format!("{PAYLOAD}/taskDetails"), td.clone());
    assert_eq!(accept_one(&s, &both).0["taskDetails"], td);
}

#[test]
fn inner_only_and_conflicting_task_details_fail() {
    let s = schema();
    let inner = with(
        &cmd_wrapper("DONE", "DONE"),
        &format!("{PAYLOAD}/taskDetails"),
        json!({"id": "t"}),
    );
    assert_refuses(&s, &inner, Reason::InnerOnlyTaskDetails, EMBEDDED);
    let conflicting = with(&inner, "/taskDetails", json!({"id": "other"}));
    assert_refuses(&s, &conflicting, Reason::ConflictingTaskDetails, EMBEDDED);
}

#[test]
fn wrapper_and_native_status_must_match() {
    let s = schema();
    for (wrapper_status, native_status) in [("DONE", "ERROR"), ("ERROR", "DONE")] {
        let w = cmd_wrapper(wrapper_status, native_status);
        assert_refuses(&s, &w, Reason::StatusMismatch, EMBEDDED);
    }
    // Equal non-DONE statuses are a match.
    let (got, rule, _) = accept_one(&s, &cmd_wrapper("ERROR", "ERROR"));
    assert_eq!(rule, RuleId::EmbeddedNativeStep);
    assert_eq!(got["status"], "CORTEX_STEP_STATUS_ERROR");
}

#[test]
fn canceled_command_over_native_error_with_details_presents_canceled() {
    let s = schema();
    let w = with(
        &cmd_wrapper("CANCELED", "ERROR"),
        &format!("{PAYLOAD}/error"),
        json!({"shortError": "signal: killed"}),
    );
    let (got, rule, p) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::CanceledCommandStatus);
    assert_eq!(got["status"], "CORTEX_STEP_STATUS_CANCELED");
    assert_eq!(got["error"]["shortError"], "signal: killed");
    assert!(p.rules().contains(&RuleId::EmbeddedNativeStep));
}

#[test]
fn canceled_command_over_native_running_without_error_presents_canceled() {
    let s = schema();
    let (got, rule, _) = accept_one(&s, &cmd_wrapper("CANCELED", "RUNNING"));
    assert_eq!(rule, RuleId::CanceledCommandStatus);
    let mut want = normalized_step(&s, &native_cmd("CORTEX_STEP_STATUS_RUNNING"));
    want["status"] = json!("CORTEX_STEP_STATUS_CANCELED");
    assert_eq!(got, want);
}

#[test]
fn other_canceled_combinations_fail() {
    let s = schema();
    // Native ERROR without error details.
    let w = cmd_wrapper("CANCELED", "ERROR");
    assert_refuses(&s, &w, Reason::CanceledCombination, CANCELED);
    // Native RUNNING with an error.
    let running_err = with(
        &cmd_wrapper("CANCELED", "RUNNING"),
        &format!("{PAYLOAD}/error"),
        json!({"shortError": "x"}),
    );
    assert_refuses(&s, &running_err, Reason::CanceledCombination, CANCELED);
    // Native DONE.
    let w = cmd_wrapper("CANCELED", "DONE");
    assert_refuses(&s, &w, Reason::CanceledCombination, CANCELED);
    // Another native type.
    let vf = with(
        &native_view_file("ERROR"),
        "/error",
        json!({"shortError": "x"}),
    );
    let w = wrapper_over("view_file", "CORTEX_STEP_STATUS_CANCELED", &json!({}), &vf);
    assert_refuses(&s, &w, Reason::CanceledCombination, EMBEDDED);
}

#[test]
fn unrecognized_native_types_and_bodies_fail() {
    let s = schema();
    let n = native(
        "USER_INPUT",
        "DONE",
        "userInput",
        json!({"userResponse": "hi"}),
    );
    let w = done_over("x", &json!({}), &n);
    assert_refuses(&s, &w, Reason::EmbeddedType, EMBEDDED);
    let n = native(
        "RUN_COMMAND",
        "DONE",
        "viewFile",
        json!({"absolutePathUri": "file:///a"}),
    );
    let w = done_over("run_command", &json!({}), &n);
    assert_refuses(&s, &w, Reason::EmbeddedBody, EMBEDDED);
    // A type qualified only under an outer error, without one.
    let n = native("GREP_SEARCH", "DONE", "grepSearch", json!({"query": "x"}));
    let w = done_over("grep_search", &json!({}), &n);
    assert_refuses(&s, &w, Reason::EmbeddedOuterOnlyType, EMBEDDED);
}

#[test]
fn extra_wrapper_native_and_result_fields_fail() {
    let s = schema();
    let w = with(
        &cmd_wrapper("DONE", "DONE"),
        "/subtrajectory",
        json!({"trajectoryId": "t"}),
    );
    assert_refuses(&s, &w, Reason::WrapperField, EMBEDDED);
    let w = with(
        &cmd_wrapper("DONE", "DONE"),
        &format!("{PAYLOAD}/subtrajectory"),
        json!({"trajectoryId": "t"}),
    );
    assert_refuses(&s, &w, Reason::NativeField, EMBEDDED);
    let w = with(
        &cmd_wrapper("DONE", "DONE"),
        "/generic/result/media",
        json!([{"mimeType": "image/png", "uri": "file:///i.png"}]),
    );
    assert_refuses(&s, &w, Reason::WrapperResultField, EMBEDDED);
}

fn with_outer_error(w: &Json, short: &str) -> Json {
    with(
        w,
        "/error",
        json!({"shortError": short, "fullError": format!("{short}: details")}),
    )
}

/// Each type the outer-error rule lists: (type, body, body value, the
/// wrapper tool qualified over it, arguments within its allow-list).
fn listed_outer_error_types() -> Vec<(&'static str, &'static str, Json, &'static str, Json)> {
    vec![
        (
            "RUN_COMMAND",
            "runCommand",
            json!({"commandLine": "ls", "exitCode": 2}),
            "run_command",
            cmd_args(),
        ),
        (
            "CODE_ACTION",
            "codeAction",
            json!({"description": "edit"}),
            "write_to_file",
            json!({"TargetFile": "/a", "CodeContent": "x"}),
        ),
        (
            "VIEW_FILE",
            "viewFile",
            json!({"absolutePathUri": "file:///a"}),
            "view_file",
            json!({"AbsolutePath": "/a"}),
        ),
        (
            "GREP_SEARCH",
            "grepSearch",
            json!({"query": "x"}),
            "grep_search",
            json!({"Query": "x", "SearchPath": "/work"}),
        ),
        (
            "MCP_TOOL",
            "mcpTool",
            json!({"serverName": "srv", "toolCall": {"name": "make_issue", "argumentsJson": "{\"title\":\"t\"}"}}),
            "mcp_srv_make_issue",
            json!({"title": "t"}),
        ),
        (
            "READ_URL_CONTENT",
            "readUrlContent",
            json!({"url": "https://example.com"}),
            "read_url_content",
            json!({"Url": "https://example.com"}),
        ),
        (
            "SEARCH_WEB",
            "searchWeb",
            json!({"query": "q"}),
            "search_web",
            json!({"query": "q"}),
        ),
    ]
}

#[test]
fn outer_error_over_each_listed_native_type_presents_the_native_error() {
    let s = schema();
    for (ty, body, b, tool, args) in listed_outer_error_types() {
        let n = with(
            &native(ty, "ERROR", body, b),
            "/error",
            json!({"shortError": "boom", "fullError": "inner boom"}),
        );
        let w = outer_error_over(tool, &args, &n);
        let (got, rule, p) = accept_one(&s, &w);
        assert_eq!(rule, RuleId::OuterError, "{ty}");
        assert_eq!(got, normalized_step(&s, &n), "{ty}");
        assert!(
            p.dropped().iter().any(|d| d == "steps[0].error.fullError"),
            "{:?}",
            p.dropped()
        );
    }
}

fn outer_error_cmd() -> Json {
    let w = cmd_wrapper("ERROR", "ERROR");
    let w = with(
        &w,
        &format!("{PAYLOAD}/error"),
        json!({"shortError": "exit status 2"}),
    );
    with_outer_error(&w, "exit status 2")
}

#[test]
fn outer_error_near_misses_fail() {
    let s = schema();
    assert_eq!(accept_one(&s, &outer_error_cmd()).1, RuleId::OuterError);
    // More than short and full text.
    let w = with(
        &outer_error_cmd(),
        "/error/userErrorMessage",
        json!("Something failed"),
    );
    assert_refuses(&s, &w, Reason::OuterErrorText, OUTER);
    // Another short error.
    let w = with(
        &outer_error_cmd(),
        &format!("{PAYLOAD}/error/shortError"),
        json!("other"),
    );
    assert_refuses(&s, &w, Reason::OuterErrorShortError, OUTER);
    // A native Step without its own error.
    let w = without(&outer_error_cmd(), &format!("{PAYLOAD}/error"));
    assert_refuses(&s, &w, Reason::OuterErrorShortError, OUTER);
    // A native Step that is not ERROR.
    let n = native(
        "CODE_ACTION",
        "DONE",
        "codeAction",
        json!({"description": "d"}),
    );
    let w = outer_error_over("t", &json!({}), &n);
    assert_refuses(&s, &w, Reason::OuterErrorNativeStatus, OUTER);
    // An outer error on a wrapper that is not ERROR.
    let w = with_outer_error(&cmd_wrapper("DONE", "DONE"), "boom");
    assert_refuses(&s, &w, Reason::OuterErrorStatus, OUTER);
    // Over invoke-subagent.
    let n = failed(native_subagent("ERROR"));
    let w = outer_error_over("invoke_subagent", &json!({}), &n);
    assert_refuses(&s, &w, Reason::OuterErrorNativeType, OUTER);
    // Over any other native type.
    let n = failed(native(
        "USER_INPUT",
        "ERROR",
        "userInput",
        json!({"userResponse": "x"}),
    ));
    let w = outer_error_over("t", &json!({}), &n);
    assert_refuses(&s, &w, Reason::EmbeddedType, EMBEDDED);
}

#[test]
fn generic_shapes_no_rule_covers_fail() {
    let s = schema();
    let w = json!({"type": "CORTEX_STEP_TYPE_GENERIC", "status": "CORTEX_STEP_STATUS_DONE"});
    assert_refuses(&s, &w, Reason::GenericWithoutPayload, None);
    let w = json!({"type": "CORTEX_STEP_TYPE_RUN_COMMAND", "status": "CORTEX_STEP_STATUS_DONE",
                   "generic": {"args": {"A": "1"}}});
    assert_refuses(&s, &w, Reason::GenericUnderOtherType, None);
    let w = wrapper(
        "run_command",
        "CORTEX_STEP_STATUS_DONE",
        &cmd_args(),
        Some(json!({"result": "a b",
        "payload": any_of("type.googleapis.com/exa.cortex.core.tools.TaskInfo", &json!({"taskId": "t1"}))})),
    );
    // TaskInfo is a modeled message no modern rule maps (tests/project_modern.rs has the rest)
    assert_refuses(&s, &w, Reason::ModernToolPayload, None);
    let w = wrapper(
        "grep_search",
        "CORTEX_STEP_STATUS_DONE",
        &json!({"Query": "x"}),
        Some(json!({"result": "r"})),
    );
    assert_refuses(&s, &w, Reason::PayloadFreeTool, None);
}

#[test]
fn an_embedded_wrapper_read_from_sqlite_projects() {
    let s = schema();
    let (_root, dir) = store();
    let path = dir.join(format!("{CASCADE}.db"));
    let conv = conv_with(&s, &[cmd_wrapper("DONE", "DONE")]);
    write_db(&s, &path, &conv, |_| {});
    let key = agy_audit::source::legacy::LegacyKey::default();
    let mut src = agy_audit::source::read_source(
        &path,
        &agy_audit::source::ReadOptions {
            schema: &s,
            legacy_key: &key,
            collect_all: false,
            fingerprint: false,
        },
    )
    .expect("read");
    assert!(src.qualified(), "{:?}", src.refusals);
    let t = src.materialize().expect("decoded").clone();
    let p = project_of(&s, &t).expect("projects");
    assert_eq!(p.step_rules, vec![RuleId::EmbeddedNativeStep]);
    assert_eq!(
        presented(&p, 0),
        normalized_step(&s, &native_cmd("CORTEX_STEP_STATUS_DONE"))
    );
}

/// Item 1 of #22: the wrapper's tool must match the native type, and its
/// arguments stay within that tool's allow-list.
#[test]
fn wrapper_tool_must_match_the_native_type() {
    let s = schema();
    // Accepted: run_command over RUN_COMMAND (above), and each listed type.
    for (ty, body, b, tool, args) in listed_outer_error_types() {
        let n = failed(native(ty, "ERROR", body, b.clone()));
        let ok = outer_error_over(tool, &args, &n);
        assert_eq!(accept_one(&s, &ok).1, RuleId::OuterError, "{ty}");
        // Another tool over the same native type.
        let other = if tool == "run_command" {
            "view_file"
        } else {
            "run_command"
        };
        let w = outer_error_over(other, &args, &n);
        assert_refuses(&s, &w, Reason::WrapperTool, EMBEDDED);
    }
    // run_command over VIEW_FILE, view_file over RUN_COMMAND, and no tool name.
    let w = done_over("run_command", &cmd_args(), &native_view_file("DONE"));
    assert_refuses(&s, &w, Reason::WrapperTool, EMBEDDED);
    let args = json!({"AbsolutePath": "/a"});
    let w = done_over("view_file", &args, &native_cmd("CORTEX_STEP_STATUS_DONE"));
    assert_refuses(&s, &w, Reason::WrapperTool, EMBEDDED);
    let w = without(&cmd_wrapper("DONE", "DONE"), "/metadata/toolCall");
    assert_refuses(&s, &w, Reason::WrapperTool, EMBEDDED);
    // write_to_file over INVOKE_SUBAGENT.
    let args = json!({"TargetFile": "/a"});
    let w = done_over("write_to_file", &args, &native_subagent("DONE"));
    assert_refuses(&s, &w, Reason::WrapperTool, EMBEDDED);
    // An MCP wrapper named after another server or tool.
    let n = native_mcp_error("{}");
    for tool in [
        "mcp_other_make_issue",
        "mcp_srv_other",
        "mcp_srv",
        "make_issue",
    ] {
        let w = outer_error_over(tool, &json!({}), &n);
        assert_refuses(&s, &w, Reason::WrapperTool, EMBEDDED);
    }
}

#[test]
fn wrapper_arguments_outside_the_tools_allow_list_fail() {
    let s = schema();
    // The accepted shape: exactly the allow-listed arguments.
    assert_eq!(
        accept_one(&s, &cmd_wrapper("DONE", "DONE")).1,
        RuleId::EmbeddedNativeStep
    );
    // One more argument, for each qualified tool.
    for (ty, body, b, tool, args) in listed_outer_error_types() {
        let n = failed(native(ty, "ERROR", body, b));
        for extra in ["toolSummary", "Extra", "BypassSandbox"] {
            let mut a = args.clone();
            a[extra] = json!("x");
            let r = refuse_one(&s, &outer_error_over(tool, &a, &n));
            assert_eq!(r.kind, Reason::WrapperArgument, "{tool} {extra}: {r}");
            assert_eq!(r.rule, EMBEDDED);
        }
    }
    // run_command's own bounds: the missing-toolSummary shape's arguments do not carry over.
    for extra in ["IsDaemon", "RunPersistent", "toolAction"] {
        let mut a = cmd_args();
        a[extra] = json!(false);
        let w = done_over("run_command", &a, &native_cmd("CORTEX_STEP_STATUS_DONE"));
        assert_refuses(&s, &w, Reason::WrapperArgument, EMBEDDED);
    }
    // view_file: ByteOffset (a modern-read argument) is not a native read's.
    let args = json!({"AbsolutePath": "/a", "ByteOffset": 0});
    let w = done_over("view_file", &args, &native_view_file("DONE"));
    assert_refuses(&s, &w, Reason::WrapperArgument, EMBEDDED);
    // invoke_subagent with a task-mode argument.
    let args = json!({"Prompt": "p", "Workspace": "inherit", "TaskMode": true});
    let w = done_over("invoke_subagent", &args, &native_subagent("DONE"));
    assert_refuses(&s, &w, Reason::WrapperArgument, EMBEDDED);
    // MCP: arguments that do not repeat the native MCP tool call.
    for (native_args, wrapper_args) in [
        ("{\"title\":\"t\"}", json!({"title": "u"})),
        ("{\"title\":\"t\"}", json!({"title": "t", "body": "b"})),
        ("{\"title\":\"t\",\"body\":\"b\"}", json!({"title": "t"})),
        ("not json", json!({})),
    ] {
        let n = native_mcp_error(native_args);
        let w = outer_error_over("mcp_srv_make_issue", &wrapper_args, &n);
        assert_refuses(&s, &w, Reason::WrapperArgument, EMBEDDED);
    }
}
