//! Payload-free generic steps: manage_task, send_message, send_input,
//! schedule, manage_subagents, define_subagent, list_permissions, ask_permission.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::project::Reason;
use agy_audit::rules::RuleId;
use common::*;

const DONE: &str = "CORTEX_STEP_STATUS_DONE";
const ERROR: &str = "CORTEX_STEP_STATUS_ERROR";

fn render() -> Json {
    json!({"title": "Task", "markdown": "done", "verb": "Checked"})
}

fn payload_free(tool: &str, args: Json, result: Json) -> Json {
    wrapper(tool, DONE, &args, Some(result))
}

fn manage_task() -> Json {
    payload_free(
        "manage_task",
        json!({"Action": "status", "TaskId": "conv/task-3"}),
        json!({"result": "running", "metadata": {"task_id": "conv/task-3", "task_description": "build", "tool_name": "run_command"},
               "stepRenderInfo": render(), "fullOutputUri": "file:///brain/steps/5/output.txt"}),
    )
}

fn send_message() -> Json {
    payload_free(
        "send_message",
        json!({"ConversationId": "c-2", "Message": "hello"}),
        json!({"result": "sent", "stepRenderInfo": render()}),
    )
}

fn send_input() -> Json {
    let mut w = payload_free(
        "manage_task",
        json!({"Action": "send_input", "TaskId": "conv/task-3", "Input": "y\n"}),
        json!({"result": "sent", "metadata": {"input": "y\n", "task_id": "conv/task-3", "task_description": "installer", "tool_name": "run_command"},
               "stepRenderInfo": render(), "fullOutputUri": "file:///o.txt"}),
    );
    w["metadata"]["toolSource"] = json!("TOOL_SOURCE_BUILTIN");
    w["metadata"]["preToolHookResults"] = json!([{"decision": "DECISION_ALLOW"}]);
    w
}

fn schedule() -> Json {
    payload_free(
        "schedule",
        json!({"DurationSeconds": 300, "Prompt": "check the build", "TimerCondition": "once"}),
        json!({"result": "scheduled", "stepRenderInfo": render(), "fullOutputUri": "file:///o.txt"}),
    )
}

fn manage_subagents() -> Json {
    payload_free(
        "manage_subagents",
        json!({"Action": "kill_all"}),
        json!({"result": "killed 2", "metadata": {"killed_conversation_ids": "c1,c2"}, "stepRenderInfo": render()}),
    )
}

fn define_subagent(args: Json) -> Json {
    payload_free(
        "define_subagent",
        args,
        json!({"result": "defined", "stepRenderInfo": render()}),
    )
}

fn list_permissions() -> Json {
    payload_free(
        "list_permissions",
        json!({}),
        json!({"result": "none", "stepRenderInfo": render()}),
    )
}

fn ask_permission() -> Json {
    payload_free(
        "ask_permission",
        json!({"Action": "write", "Reason": "update config", "Target": "/etc/app.conf"}),
        json!({"result": "granted", "stepRenderInfo": render()}),
    )
}

fn accepted() -> Vec<(Json, RuleId)> {
    vec![
        (manage_task(), RuleId::PayloadFreeManageTask),
        (send_message(), RuleId::PayloadFreeManageTask),
        (send_input(), RuleId::ManageTaskSendInput),
        (schedule(), RuleId::PayloadFreeScheduleSubagents),
        (manage_subagents(), RuleId::PayloadFreeScheduleSubagents),
        (
            define_subagent(json!({"definition": "{...}"})),
            RuleId::PayloadFreeScheduleSubagents,
        ),
        (
            define_subagent(
                json!({"name": "reviewer", "description": "reviews", "system_prompt": "Review.",
            "enable_mcp_tools": false, "enable_subagent_tools": false, "enable_write_tools": true}),
            ),
            RuleId::PayloadFreeScheduleSubagents,
        ),
        (list_permissions(), RuleId::PayloadFreeListPermissions),
        (ask_permission(), RuleId::PayloadFreeAskPermission),
    ]
}

#[test]
fn payload_free_steps_are_presented_unchanged() {
    let s = schema();
    for (w, rule) in accepted() {
        let (got, r, p) = accept_one(&s, &w);
        assert_eq!(r, rule, "{w}");
        assert_eq!(got, normalized_step(&s, &w));
        assert!(p.dropped().is_empty());
    }
    // A failed manage_task with an outer error; a failed schedule.
    let e = json!({"shortError": "no such task", "fullError": "manage_task: no such task"});
    let w = with(
        &with(&manage_task(), "/status", json!(ERROR)),
        "/error",
        e.clone(),
    );
    assert_eq!(accept_one(&s, &w).1, RuleId::PayloadFreeManageTask);
    let w = with(&with(&schedule(), "/status", json!(ERROR)), "/error", e);
    assert_eq!(accept_one(&s, &w).1, RuleId::PayloadFreeScheduleSubagents);
    // Only schedule carries task details.
    let w = with(
        &schedule(),
        "/taskDetails",
        json!({"id": "conv/task-9", "shortDescription": "timer"}),
    );
    assert_eq!(accept_one(&s, &w).1, RuleId::PayloadFreeScheduleSubagents);
}

#[test]
fn common_near_misses_fail() {
    let s = schema();
    for (w, rule) in accepted() {
        let rule = Some(rule);
        // Permission or interaction records, payloads, media, extra arguments.
        assert_refuses(
            &s,
            &with(
                &w,
                "/permissions",
                json!({"permissionGrants": [{"action": "x"}]}),
            ),
            Reason::PayloadFreeRecords,
            rule,
        );
        assert_refuses(
            &s,
            &with(&w, "/completedInteractions", json!([{"request": {}}])),
            Reason::PayloadFreeRecords,
            rule,
        );
        assert_refuses(
            &s,
            &with(
                &w,
                "/generic/result/media",
                json!([{"uri": "file:///i.png"}]),
            ),
            Reason::PayloadFreeResult,
            rule,
        );
        let r = refuse_one(&s, &with(&w, "/generic/args/Unexpected", json!("1")));
        assert!(
            matches!(
                r.kind,
                Reason::PayloadFreeArguments | Reason::SendInputArguments
            ),
            "{r}"
        );
        // Another status.
        let r = refuse_one(
            &s,
            &with(&w, "/status", json!("CORTEX_STEP_STATUS_CANCELED")),
        );
        assert_eq!(r.kind, Reason::PayloadFreeStatus, "{r}");
        // An outer error on a DONE step.
        assert_refuses(
            &s,
            &with(&w, "/error", json!({"shortError": "x"})),
            Reason::PayloadFreeOuterError,
            rule,
        );
    }
    // Task details on anything but schedule.
    for (w, rule) in accepted()
        .into_iter()
        .filter(|(w, _)| w["metadata"]["toolCall"]["name"] != "schedule")
    {
        assert_refuses(
            &s,
            &with(&w, "/taskDetails", json!({"id": "t"})),
            Reason::PayloadFreeRecords,
            Some(rule),
        );
    }
    // A payload-free step for any other tool.
    let w = payload_free(
        "find_by_name",
        json!({"Pattern": "*"}),
        json!({"result": "a"}),
    );
    assert_refuses(&s, &w, Reason::PayloadFreeTool, None);
}

#[test]
fn manage_task_and_send_message_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::PayloadFreeManageTask);
    // Task metadata keys outside task_description, task_id and tool_name.
    assert_refuses(
        &s,
        &with(&manage_task(), "/generic/result/metadata/input", json!("y")),
        Reason::PayloadFreeMetadataKeys,
        rule,
    );
    // Missing Action.
    assert_refuses(
        &s,
        &without(&manage_task(), "/generic/args/Action"),
        Reason::PayloadFreeArguments,
        rule,
    );
    // An outer error on send_message; a failed send_message.
    let e = json!({"shortError": "x"});
    assert_refuses(
        &s,
        &with(
            &with(&send_message(), "/status", json!(ERROR)),
            "/error",
            e.clone(),
        ),
        Reason::PayloadFreeStatus,
        rule,
    );
    // The manage_task outer error holds only short and full text.
    let w = with(
        &with(&manage_task(), "/status", json!(ERROR)),
        "/error",
        json!({"shortError": "x", "errorId": "e"}),
    );
    assert_refuses(&s, &w, Reason::OuterErrorText, rule);
}

#[test]
fn send_input_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ManageTaskSendInput);
    let w = send_input();
    let md = "/generic/result/metadata";
    // Empty or mismatched input.
    let empty = with(
        &with(&w, "/generic/args/Input", json!("\"\"")),
        &format!("{md}/input"),
        json!(""),
    );
    assert_refuses(&s, &empty, Reason::SendInputArguments, rule);
    assert_refuses(
        &s,
        &with(&w, &format!("{md}/input"), json!("n\n")),
        Reason::SendInputArguments,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, &format!("{md}/task_id"), json!("conv/task-4")),
        Reason::SendInputArguments,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/metadata/toolCall/argumentsJson", json!("{}")),
        Reason::SendInputArguments,
        rule,
    );
    // Other target tools; extra or missing metadata.
    assert_refuses(
        &s,
        &with(&w, &format!("{md}/tool_name"), json!("run_tests")),
        Reason::SendInputTarget,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, &format!("{md}/extra"), json!("1")),
        Reason::SendInputMetadata,
        rule,
    );
    assert_refuses(
        &s,
        &without(&w, &format!("{md}/task_description")),
        Reason::SendInputMetadata,
        rule,
    );
    // Tool source and hooks.
    assert_refuses(
        &s,
        &without(&w, "/metadata/toolSource"),
        Reason::SendInputExecution,
        rule,
    );
    assert_refuses(
        &s,
        &with(
            &w,
            "/metadata/preToolHookResults/1",
            json!({"decision": "DECISION_ALLOW"}),
        ),
        Reason::SendInputExecution,
        rule,
    );
    // Outer errors, task details, records.
    let failed = with(
        &with(&w, "/status", json!(ERROR)),
        "/error",
        json!({"shortError": "x"}),
    );
    assert_refuses(&s, &failed, Reason::PayloadFreeStatus, rule);
    assert_refuses(
        &s,
        &with(&w, "/taskDetails", json!({"id": "t"})),
        Reason::PayloadFreeRecords,
        rule,
    );
    // Another action is the plain manage_task rule.
    let other = with(&w, "/generic/args/Action", json!("\"kill\""));
    assert_refuses(
        &s,
        &other,
        Reason::PayloadFreeArguments,
        Some(RuleId::PayloadFreeManageTask),
    );
}

#[test]
fn schedule_and_subagent_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::PayloadFreeScheduleSubagents);
    // Arguments.
    assert_refuses(
        &s,
        &with(
            &manage_subagents(),
            "/generic/args/ConversationIds",
            json!("[\"c1\"]"),
        ),
        Reason::PayloadFreeArguments,
        rule,
    );
    assert_refuses(
        &s,
        &with(&schedule(), "/generic/args", json!({})),
        Reason::PayloadFreeArguments,
        rule,
    );
    assert_refuses(
        &s,
        &define_subagent(json!({"definition": "{}", "name": "x"})),
        Reason::PayloadFreeArguments,
        rule,
    );
    assert_refuses(
        &s,
        &define_subagent(json!({"description": "no name"})),
        Reason::PayloadFreeArguments,
        rule,
    );
    // Result metadata: only killed_conversation_ids, and only on manage_subagents.
    assert_refuses(
        &s,
        &with(
            &manage_subagents(),
            "/generic/result/metadata/action",
            json!("kill"),
        ),
        Reason::PayloadFreeMetadataKeys,
        rule,
    );
    assert_refuses(
        &s,
        &with(&schedule(), "/generic/result/metadata", json!({"k": "v"})),
        Reason::PayloadFreeResult,
        rule,
    );
    // A failed schedule needs an outer error of only short and full text.
    assert_refuses(
        &s,
        &with(&schedule(), "/status", json!(ERROR)),
        Reason::PayloadFreeOuterError,
        rule,
    );
    let w = with(
        &with(&schedule(), "/status", json!(ERROR)),
        "/error",
        json!({"shortError": "x", "userErrorMessage": "y"}),
    );
    assert_refuses(&s, &w, Reason::OuterErrorText, rule);
    // Only schedule may fail.
    let w = with(
        &with(&manage_subagents(), "/status", json!(ERROR)),
        "/error",
        json!({"shortError": "x"}),
    );
    assert_refuses(&s, &w, Reason::PayloadFreeStatus, rule);
}

#[test]
fn list_and_ask_permission_near_misses_fail() {
    let s = schema();
    let l = Some(RuleId::PayloadFreeListPermissions);
    let a = Some(RuleId::PayloadFreeAskPermission);
    assert_refuses(
        &s,
        &with(&list_permissions(), "/generic/args/Filter", json!("\"x\"")),
        Reason::PayloadFreeArguments,
        l,
    );
    assert_refuses(
        &s,
        &without(&ask_permission(), "/generic/args/Reason"),
        Reason::PayloadFreeArguments,
        a,
    );
    for (w, rule) in [(list_permissions(), l), (ask_permission(), a)] {
        assert_refuses(
            &s,
            &with(&w, "/generic/result/fullOutputUri", json!("file:///o")),
            Reason::PayloadFreeResult,
            rule,
        );
        assert_refuses(
            &s,
            &with(&w, "/generic/result/metadata", json!({"k": "v"})),
            Reason::PayloadFreeResult,
            rule,
        );
        let failed = with(
            &with(&w, "/status", json!(ERROR)),
            "/error",
            json!({"shortError": "x"}),
        );
        assert_refuses(&s, &failed, Reason::PayloadFreeStatus, rule);
    }
}
