//! The modern (agy 1.4.x) tool payloads: tools143 RunCommand, ReadFile,
//! FileEdit, InvokeSubagent, ManageTask, Schedule; the permission1 refusal;
//! tools144 canceled background command, ManageSubagents list and
//! Workspace=inherit; the skill146 path rule. Each accepted shape verifies,
//! each near-miss refuses with its named reason.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::project::Reason;
use agy_audit::rules::RuleId;
use common::*;
use prost::Message;

const DONE: &str = "CORTEX_STEP_STATUS_DONE";
const CANCELED: &str = "CORTEX_STEP_STATUS_CANCELED";
const ERROR: &str = "CORTEX_STEP_STATUS_ERROR";
const P: &str = "/generic/result/payload";

fn history(step: &mut Json, statuses: &[&str]) {
    let t: Vec<Json> = statuses
        .iter()
        .map(|s| json!({"updatedStatus": format!("CORTEX_STEP_STATUS_{s}"), "timestamp": "2026-11-01T10:00:04Z"}))
        .collect();
    step["metadata"]["internalMetadata"] = json!({"statusTransitions": t});
}

// ---- RunCommand -----------------------------------------------------------

fn cmd_args() -> Json {
    json!({"CommandLine": "cargo test", "Cwd": "/work/app", "WaitMsBeforeAsync": 5000})
}

fn run_command() -> Json {
    let payload = json!({"commandLine": "cargo test", "cwd": "/work/app", "exitCode": 0, "outcome": "OUTCOME_COMPLETED"});
    let mut w = modern(
        "run_command",
        DONE,
        &cmd_args(),
        "RunCommand",
        &payload,
        "ok\n3 passed\n",
    );
    w["taskDetails"] = json!({"id": "t1", "commandLine": "cargo test"});
    w
}

#[test]
fn run_command_presents_the_result_text_as_output() {
    let s = schema();
    let w = run_command();
    let (got, rule, _) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::ModernRunCommand);
    let want = normalized_step(
        &s,
        &json!({"type": "CORTEX_STEP_TYPE_RUN_COMMAND", "status": DONE, "metadata": w["metadata"],
            "taskDetails": w["taskDetails"],
            "runCommand": {"commandLine": "cargo test", "proposedCommandLine": "cargo test", "cwd": "/work/app",
                "blocking": true, "exitCode": 0, "combinedOutput": {"full": "ok\n3 passed\n"},
                "waitMsBeforeAsync": "5000"}}),
    );
    assert_eq!(got, want);
    // background: not blocking, no exit code invented
    let bg = without(
        &with(&w, &format!("{P}/background"), json!(true)),
        &format!("{P}/exitCode"),
    );
    let (got, _, _) = accept_one(&s, &bg);
    assert_eq!(got["runCommand"].get("exitCode"), None);
    assert_eq!(got["runCommand"].get("blocking"), None);
}

#[test]
fn run_command_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ModernRunCommand);
    let w = run_command();
    let cases: Vec<(Json, Reason)> = vec![
        (with(&w, "/status", json!(ERROR)), Reason::ModernStatus),
        (
            with(&w, &format!("{P}/outcome"), json!("OUTCOME_FAILED")),
            Reason::ModernStatus,
        ),
        (
            with(&w, &format!("{P}/output"), json!("x")),
            Reason::ModernPayloadField,
        ),
        (
            with(&w, &format!("{P}/waitMsBeforeAsync"), json!("5000")),
            Reason::ModernPayloadField,
        ),
        (
            with(&w, "/metadata/toolCall/name", json!("exec")),
            Reason::ModernTool,
        ),
        (
            with(&w, "/generic/args/Shell", json!("\"bash\"")),
            Reason::ModernArguments,
        ),
        (
            with(&w, "/generic/args/CommandLine", json!("\"ls\"")),
            Reason::ModernArguments,
        ),
        (
            with(&w, "/generic/args/WaitMsBeforeAsync", json!("05000")),
            Reason::ModernArguments,
        ),
        (
            with(&w, "/error", json!({"shortError": "x"})),
            Reason::ModernWrapperField,
        ),
        (
            with(&w, "/generic/result/fullOutputUri", json!("file:///o.txt")),
            Reason::ModernWrapperField,
        ),
    ];
    for (v, reason) in cases {
        assert_refuses(&s, &v, reason, rule);
    }
}

// ---- permission1 ------------------------------------------------------------

#[test]
fn permission_records_on_modern_wrappers_fail() {
    let s = schema();
    for w in [
        run_command(),
        read_file(),
        file_edit(true),
        invoke(false),
        manage_task("status"),
    ] {
        let grant = with(
            &w,
            "/permissions",
            json!({"permissionGrants": [{"allow": true, "target": "x"}]}),
        );
        assert_refuses(
            &s,
            &grant,
            Reason::ModernPermissionRecord,
            Some(RuleId::ModernPermission1),
        );
        let asked = with(
            &w,
            "/completedInteractions",
            json!([{"request": {"permission": {"actionDescription": "run"}}}]),
        );
        assert_refuses(
            &s,
            &asked,
            Reason::ModernPermissionRecord,
            Some(RuleId::ModernPermission1),
        );
    }
}

// ---- canceled background command (tools144) --------------------------------

fn canceled_background() -> Json {
    let mut w = wrapper(
        "run_command",
        CANCELED,
        &cmd_args(),
        Some(json!({"stepRenderInfo": {"title": "Run cargo test"}})),
    );
    history(&mut w, &["PENDING", "RUNNING", "CANCELED"]);
    w["taskDetails"] = json!({"id": "t2", "commandLine": "cargo test", "movedToBackgroundAt": "2026-11-01T10:00:09Z"});
    w
}

#[test]
fn canceled_background_command_becomes_a_native_command() {
    let s = schema();
    let w = canceled_background();
    let (got, rule, _) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::ModernCanceledBackgroundCommand);
    let want = normalized_step(
        &s,
        &json!({"type": "CORTEX_STEP_TYPE_RUN_COMMAND", "status": CANCELED, "metadata": w["metadata"],
            "taskDetails": w["taskDetails"],
            "runCommand": {"commandLine": "cargo test", "proposedCommandLine": "cargo test", "cwd": "/work/app",
                "combinedOutput": {}}}),
    );
    assert_eq!(got, want);
    assert_eq!(got["runCommand"].get("exitCode"), None);
}

#[test]
fn canceled_background_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ModernCanceledBackgroundCommand);
    let w = canceled_background();
    let mut short = w.clone();
    history(&mut short, &["PENDING", "CANCELED"]);
    let cases: Vec<(Json, Reason)> = vec![
        (short, Reason::BackgroundHistory),
        (
            with(&w, "/generic/args/WaitMsBeforeAsync", json!("500")),
            Reason::BackgroundWait,
        ),
        (
            without(&w, "/generic/args/WaitMsBeforeAsync"),
            Reason::BackgroundWait,
        ),
        (
            with(&w, "/generic/args/Extra", json!("1")),
            Reason::BackgroundWait,
        ),
        (
            without(&w, "/taskDetails/movedToBackgroundAt"),
            Reason::BackgroundTimestamp,
        ),
        (without(&w, "/taskDetails"), Reason::BackgroundTimestamp),
        (
            with(&w, "/generic/result/result", json!("partial")),
            Reason::BackgroundResult,
        ),
        (
            with(&w, "/error", json!({"shortError": "x"})),
            Reason::ModernWrapperField,
        ),
    ];
    for (v, reason) in cases {
        assert_refuses(&s, &v, reason, rule);
    }
    assert_refuses(
        &s,
        &with(
            &w,
            "/permissions",
            json!({"permissionGrants": [{"allow": true, "target": "x"}]}),
        ),
        Reason::ModernPermissionRecord,
        Some(RuleId::ModernPermission1),
    );
}

// ---- ReadFile / skill146 -----------------------------------------------------

fn read_args(path: &str) -> Json {
    json!({"AbsolutePath": path, "StartLine": 3, "EndLine": 9})
}

fn read_at(path: &str) -> Json {
    let payload =
        json!({"path": path, "startLine": 3, "endLine": 9, "outcome": "OUTCOME_COMPLETED"});
    modern(
        "read_file",
        DONE,
        &read_args(path),
        "ReadFile",
        &payload,
        "line three\n",
    )
}

fn read_file() -> Json {
    read_at("/work/app/src/main.rs")
}

#[test]
fn read_file_becomes_a_zero_based_view_file() {
    let s = schema();
    let w = read_file();
    let (got, rule, p) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::ModernReadFile);
    assert!(p.rules().contains(&RuleId::ModernSkillPath));
    let want = normalized_step(
        &s,
        &json!({"type": "CORTEX_STEP_TYPE_VIEW_FILE", "status": DONE, "metadata": w["metadata"],
            "viewFile": {"absolutePathUri": "file:///work/app/src/main.rs", "startLine": 2, "endLine": 8,
                "content": "line three\n"}}),
    );
    assert_eq!(got, want);
    // no range: a whole-file read
    let whole = without(
        &without(
            &without(
                &without(&w, &format!("{P}/startLine")),
                &format!("{P}/endLine"),
            ),
            "/generic/args/StartLine",
        ),
        "/generic/args/EndLine",
    );
    let (got, _, _) = accept_one(&s, &whole);
    assert_eq!(got["viewFile"].get("startLine"), None);
}

#[test]
fn skill146_marks_skill_paths_by_path_alone() {
    let s = schema();
    for (path, skill) in [
        ("/home/u/.gemini/skills/deploy/SKILL.md", true),
        ("/home/u/plugins/x/SKILL.md", true),
        ("/home/u/skills/deploy/skill.md", false),
        ("/home/u/skills/deploy/SKILL.MD", false),
        ("/home/u/SKILL.md.txt", false),
    ] {
        let (got, _, _) = accept_one(&s, &read_at(path));
        assert_eq!(
            got["viewFile"].get("isSkillFile") == Some(&json!(true)),
            skill,
            "{path}"
        );
    }
}

#[test]
fn read_file_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ModernReadFile);
    let w = read_file();
    let cases: Vec<(Json, Reason)> = vec![
        (with(&w, "/status", json!(ERROR)), Reason::ModernStatus),
        (
            with(&w, &format!("{P}/outcome"), json!("OUTCOME_FAILED")),
            Reason::ModernStatus,
        ),
        (
            with(&w, &format!("{P}/content"), json!("x")),
            Reason::ModernPayloadField,
        ),
        (read_at("/work/app/../etc/passwd"), Reason::ModernPath),
        (read_at("relative/SKILL.md"), Reason::ModernPath),
        (read_at("C:\\work\\SKILL.md"), Reason::ModernPath),
        (read_at("/work/my file.rs"), Reason::ModernPath),
        (
            with(&w, &format!("{P}/startLine"), json!(0)),
            Reason::ModernRange,
        ),
        (
            with(&w, &format!("{P}/startLine"), json!(12)),
            Reason::ModernRange,
        ),
        (without(&w, &format!("{P}/endLine")), Reason::ModernRange),
        (
            with(&w, "/generic/args/StartLine", json!("4")),
            Reason::ModernArguments,
        ),
        (
            with(&w, "/generic/args/AbsolutePath", json!("\"/other\"")),
            Reason::ModernArguments,
        ),
        (
            with(&w, "/metadata/toolCall/name", json!("view_file")),
            Reason::ModernTool,
        ),
        (
            with(&w, "/taskDetails/id", json!("t")),
            Reason::ModernWrapperField,
        ),
    ];
    for (v, reason) in cases {
        assert_refuses(&s, &v, reason, rule);
    }
    // a ranged read of a missing file is outside finish147's missing-file shape
    assert_refuses(
        &s,
        &with(&w, &format!("{P}/notFound"), json!(true)),
        Reason::ModernPayloadField,
        Some(RuleId::ModernMissingFileRead),
    );
    // an offset on one side only is outside ide225's ByteOffset=0 shape
    for v in [
        with(&w, &format!("{P}/byteOffset"), json!("0")),
        with(&w, "/generic/args/ByteOffset", json!("0")),
    ] {
        assert_refuses(
            &s,
            &v,
            Reason::Ide225ByteOffset,
            Some(RuleId::ModernIde225ByteOffset),
        );
    }
}

// ---- FileEdit ------------------------------------------------------------------

fn file_edit(create: bool) -> Json {
    let path = "/work/app/src/lib.rs";
    if create {
        let args = json!({"CodeContent": "", "TargetFile": path});
        let payload = json!({"path": path, "kind": "KIND_CREATE", "outcome": "OUTCOME_COMPLETED"});
        modern(
            "write_to_file",
            DONE,
            &args,
            "FileEdit",
            &payload,
            "Created lib.rs",
        )
    } else {
        let args =
            json!({"Instruction": "rename", "ReplacementContent": "fn b() {}", "TargetFile": path});
        let payload = json!({"path": path, "kind": "KIND_EDIT", "diff": "@@ -1 +1 @@\n-fn a() {}\n+fn b() {}\n",
            "outcome": "OUTCOME_COMPLETED"});
        modern(
            "replace_file_content",
            DONE,
            &args,
            "FileEdit",
            &payload,
            "Edited lib.rs",
        )
    }
}

#[test]
fn file_edits_become_code_actions() {
    let s = schema();
    let uri = "file:///work/app/src/lib.rs";
    let w = file_edit(true);
    let (got, rule, _) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::ModernFileEdit);
    let want = normalized_step(
        &s,
        &json!({"type": "CORTEX_STEP_TYPE_CODE_ACTION", "status": DONE, "metadata": w["metadata"],
            "codeAction": {"actionSpec": {"createFile": {"path": {"absoluteUri": uri}}},
                "actionResult": {"edit": {"absoluteUri": uri, "createFile": true}}}}),
    );
    assert_eq!(got, want, "an empty-file create: empty diff");
    let w = file_edit(false);
    let (got, _, _) = accept_one(&s, &w);
    let want = normalized_step(
        &s,
        &json!({"type": "CORTEX_STEP_TYPE_CODE_ACTION", "status": DONE, "metadata": w["metadata"],
            "codeAction": {"actionSpec": {"command": {"instruction": "rename", "isEdit": true, "file": {"absoluteUri": uri}}},
                "actionResult": {"edit": {"absoluteUri": uri, "unifiedDiff": "@@ -1 +1 @@\n-fn a() {}\n+fn b() {}\n"}}}}),
    );
    assert_eq!(got, want);
}

#[test]
fn file_edit_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ModernFileEdit);
    let c = file_edit(true);
    let e = file_edit(false);
    let cases: Vec<(Json, Reason)> = vec![
        (
            with(&c, &format!("{P}/kind"), json!("KIND_EDIT")),
            Reason::ModernEditKind,
        ),
        (
            with(&c, &format!("{P}/kind"), json!("KIND_UNSPECIFIED")),
            Reason::ModernEditKind,
        ),
        (with(&c, "/status", json!(ERROR)), Reason::ModernStatus),
        (
            with(&e, &format!("{P}/outcome"), json!("OUTCOME_CANCELED")),
            Reason::ModernStatus,
        ),
        (
            with(&c, &format!("{P}/isArtifactFile"), json!(true)),
            Reason::ModernPayloadField,
        ),
        (
            with(&e, &format!("{P}/content"), json!("x")),
            Reason::ModernPayloadField,
        ),
        (
            with(&c, &format!("{P}/path"), json!("/work/./lib.rs")),
            Reason::ModernPath,
        ),
        (
            with(&e, "/generic/args/TargetFile", json!("\"/work/other.rs\"")),
            Reason::ModernArguments,
        ),
        (
            with(&c, "/generic/args/Overwrite", json!("true")),
            Reason::ModernArguments,
        ),
        (
            with(&c, "/metadata/toolCall/name", json!("edit_file")),
            Reason::ModernTool,
        ),
    ];
    for (v, reason) in cases {
        assert_refuses(&s, &v, reason, rule);
    }
}

// ---- InvokeSubagent -----------------------------------------------------------

fn invoke(inherit: bool) -> Json {
    let args = if inherit {
        json!({"Prompt": "check the tests", "Workspace": "inherit"})
    } else {
        json!({"Prompt": "check the tests"})
    };
    let payload = json!({"specs": [{"name": "helper-0", "prompt": "check the tests", "workspace": "inherit"}],
        "results": [{"conversationId": "c0ffee00-0000-4000-8000-000000000001", "logUri": "file:///l.jsonl",
            "workspaceUri": "file:///work/app"}],
        "outcome": "OUTCOME_COMPLETED"});
    modern(
        "invoke_subagent",
        DONE,
        &args,
        "InvokeSubagent",
        &payload,
        "Subagents finished.",
    )
}

#[test]
fn invoke_subagent_preserves_children() {
    let s = schema();
    for inherit in [false, true] {
        let w = invoke(inherit);
        let (got, rule, p) = accept_one(&s, &w);
        assert_eq!(rule, RuleId::ModernInvokeSubagent);
        assert_eq!(
            p.rules().contains(&RuleId::ModernSubagentInheritWorkspace),
            inherit
        );
        let pl = w.pointer(P).expect("payload");
        let want = normalized_step(
            &s,
            &json!({"type": "CORTEX_STEP_TYPE_INVOKE_SUBAGENT", "status": DONE, "metadata": w["metadata"],
                "invokeSubagent": {"specs": pl["specs"], "results": pl["results"]}}),
        );
        assert_eq!(got, want);
    }
}

#[test]
fn invoke_subagent_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ModernInvokeSubagent);
    let w = invoke(false);
    let i = invoke(true);
    let other_ws = {
        let args = json!({"Prompt": "check the tests", "Workspace": "/tmp/ws"});
        let mut v = with(&i, "/generic/args", rendered_args(&args));
        v["metadata"]["toolCall"] = tool_call("invoke_subagent", &args);
        v
    };
    let cases: Vec<(Json, Reason, Option<RuleId>)> = vec![
        (
            with(&w, &format!("{P}/taskMode"), json!(true)),
            Reason::ModernTaskMode,
            rule,
        ),
        (
            with(&w, "/status", json!(ERROR)),
            Reason::ModernStatus,
            rule,
        ),
        (
            with(&w, &format!("{P}/outcome"), json!("OUTCOME_FAILED")),
            Reason::ModernStatus,
            rule,
        ),
        (
            with(&w, &format!("{P}/specs"), json!([])),
            Reason::ModernArguments,
            rule,
        ),
        (
            with(&w, "/generic/args/Background", json!("true")),
            Reason::ModernArguments,
            rule,
        ),
        (
            other_ws,
            Reason::ModernWorkspace,
            Some(RuleId::ModernSubagentInheritWorkspace),
        ),
        (
            with(
                &i,
                "/metadata/toolCall/argumentsJson",
                json!("{\"Prompt\":\"other\",\"Workspace\":\"inherit\"}"),
            ),
            Reason::ModernWorkspace,
            Some(RuleId::ModernSubagentInheritWorkspace),
        ),
        (
            with(&w, "/metadata/toolCall/name", json!("define_subagent")),
            Reason::ModernTool,
            rule,
        ),
    ];
    for (v, reason, rule) in cases {
        assert_refuses(&s, &v, reason, rule);
    }
}

// ---- ManageTask, Schedule, ManageSubagents (generic) --------------------------

fn with_render(mut w: Json) -> Json {
    w["generic"]["result"]["stepRenderInfo"] = json!({"title": "Task"});
    w
}

fn manage_task(action: &str) -> Json {
    let args = if action == "list" {
        json!({"Action": action})
    } else {
        json!({"Action": action, "TaskId": "task-1"})
    };
    let payload = json!({"action": action, "tasks": [{"taskId": "task-1", "description": "cargo build", "status": "running"}],
        "outcome": "OUTCOME_COMPLETED"});
    with_render(modern(
        "manage_task",
        DONE,
        &args,
        "ManageTask",
        &payload,
        "task-1: running",
    ))
}

#[test]
fn manage_task_remains_generic_with_derived_metadata() {
    let s = schema();
    for action in ["status", "list", "kill"] {
        let w = manage_task(action);
        let (got, rule, _) = accept_one(&s, &w);
        assert_eq!(rule, RuleId::ModernManageTask);
        let want = normalized_step(
            &s,
            &with(
                &w,
                "/generic/result/metadata",
                json!({"action": action, "task_id": "task-1",
                "task_description": "cargo build", "task_status": "running"}),
            ),
        );
        assert_eq!(got, want, "{action}");
    }
}

#[test]
fn manage_task_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ModernManageTask);
    let w = manage_task("status");
    let two = with(&w, &format!("{P}/tasks/1"), json!({"taskId": "task-2"}));
    let cases: Vec<(Json, Reason)> = vec![
        (two, Reason::ModernTaskAction),
        (
            with(&w, &format!("{P}/tasks"), json!([])),
            Reason::ModernTaskAction,
        ),
        (
            with(
                &with(&w, &format!("{P}/action"), json!("send_input")),
                "/generic/args/Action",
                json!("\"send_input\""),
            ),
            Reason::ModernTaskAction,
        ),
        (
            with(&w, "/generic/args/TaskId", json!("\"task-9\"")),
            Reason::ModernArguments,
        ),
        (without(&w, "/generic/args/TaskId"), Reason::ModernArguments),
        (
            with(&w, "/generic/result/metadata/task_id", json!("task-1")),
            Reason::ModernResultMetadata,
        ),
        (with(&w, "/status", json!(ERROR)), Reason::ModernStatus),
        (
            with(&w, "/taskDetails/id", json!("t")),
            Reason::ModernWrapperField,
        ),
    ];
    for (v, reason) in cases {
        assert_refuses(&s, &v, reason, rule);
    }
}

fn schedule() -> Json {
    let args = json!({"DurationSeconds": 300, "Prompt": "check the build"});
    let payload = json!({"durationSeconds": "300", "prompt": "check the build", "canceled": true, "outcome": "OUTCOME_CANCELED"});
    with_render(modern(
        "schedule",
        CANCELED,
        &args,
        "Schedule",
        &payload,
        "Timer canceled",
    ))
}

#[test]
fn canceled_timer_remains_generic_with_derived_metadata() {
    let s = schema();
    let w = schedule();
    let (got, rule, _) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::ModernSchedule);
    let want = normalized_step(
        &s,
        &with(
            &w,
            "/generic/result/metadata",
            json!({"duration_seconds": "300", "canceled": "true"}),
        ),
    );
    assert_eq!(got, want);
}

#[test]
fn schedule_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ModernSchedule);
    let w = schedule();
    let cases: Vec<(Json, Reason)> = vec![
        (
            with(&w, &format!("{P}/canceled"), json!(false)),
            Reason::ModernTimer,
        ),
        (with(&w, "/status", json!(DONE)), Reason::ModernStatus),
        (
            with(&w, &format!("{P}/outcome"), json!("OUTCOME_COMPLETED")),
            Reason::ModernStatus,
        ),
        (
            with(&w, "/generic/args/DurationSeconds", json!("301")),
            Reason::ModernArguments,
        ),
        (
            with(&w, "/generic/args/TimerCondition", json!("\"x\"")),
            Reason::ModernArguments,
        ),
        (
            with(&w, "/error", json!({"shortError": "x"})),
            Reason::ModernWrapperField,
        ),
    ];
    for (v, reason) in cases {
        assert_refuses(&s, &v, reason, rule);
    }
}

fn manage_subagents() -> Json {
    let payload =
        json!({"action": "list", "conversationIds": ["c1", "c2"], "outcome": "OUTCOME_COMPLETED"});
    with_render(modern(
        "manage_subagents",
        DONE,
        &json!({"Action": "list"}),
        "ManageSubagents",
        &payload,
        "2 subagents",
    ))
}

#[test]
fn manage_subagents_list_gains_action_and_ids() {
    let s = schema();
    let w = manage_subagents();
    let (got, rule, _) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::ModernManageSubagentsList);
    let want = normalized_step(
        &s,
        &with(
            &w,
            "/generic/result/metadata",
            json!({"action": "list", "conversation_ids": "c1,c2"}),
        ),
    );
    assert_eq!(got, want);
}

#[test]
fn manage_subagents_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ModernManageSubagentsList);
    let w = manage_subagents();
    let cases: Vec<(Json, Reason)> = vec![
        (
            with(&w, &format!("{P}/conversationIds"), json!(["c1"])),
            Reason::ModernSubagentsList,
        ),
        (
            with(
                &w,
                &format!("{P}/conversationIds"),
                json!(["c1", "c2", "c3"]),
            ),
            Reason::ModernSubagentsList,
        ),
        (
            with(&w, &format!("{P}/action"), json!("kill")),
            Reason::ModernSubagentsList,
        ),
        (
            with(&w, "/generic/args/Action", json!("\"kill\"")),
            Reason::ModernArguments,
        ),
        (with(&w, "/status", json!(ERROR)), Reason::ModernStatus),
        (
            with(&w, "/generic/result/metadata/action", json!("list")),
            Reason::ModernResultMetadata,
        ),
    ];
    for (v, reason) in cases {
        assert_refuses(&s, &v, reason, rule);
    }
}

#[test]
fn other_modern_payloads_still_fail() {
    let s = schema();
    // a modeled message that is no tool payload (Finish is finish147's now)
    let w = modern(
        "manage_task",
        DONE,
        &json!({}),
        "TaskInfo",
        &json!({"taskId": "t1"}),
        "done",
    );
    assert_refuses(&s, &w, Reason::ModernToolPayload, None);
}

// ---- the name table --------------------------------------------------------

#[test]
fn a_renamed_payload_field_refuses_naming_the_declaration() {
    let modeled = schema();
    let cases: Vec<(&str, &str, Json, RuleId)> = vec![
        ("ReadFile", "path", read_file(), RuleId::ModernReadFile),
        (
            "RunCommand",
            "command_line",
            run_command(),
            RuleId::ModernRunCommand,
        ),
        ("FileEdit", "kind", file_edit(true), RuleId::ModernFileEdit),
        (
            "InvokeSubagent",
            "specs",
            invoke(false),
            RuleId::ModernInvokeSubagent,
        ),
        (
            "ManageTask",
            "tasks",
            manage_task("list"),
            RuleId::ModernManageTask,
        ),
        (
            "TaskInfo",
            "task_id",
            manage_task("list"),
            RuleId::ModernManageTask,
        ),
        ("Schedule", "canceled", schedule(), RuleId::ModernSchedule),
        (
            "ManageSubagents",
            "conversation_ids",
            manage_subagents(),
            RuleId::ModernManageSubagentsList,
        ),
    ];
    for (message, field, step, rule) in cases {
        let renamed = renamed_schema(message, field, "renamed_field");
        // encoded under the modeled set, read under the renamed one
        let t = trajectory_of(&modeled, &conv_with(&modeled, &[step]));
        let bytes = t.encode_to_vec();
        let t2 = prost_reflect::DynamicMessage::decode(
            renamed.names.trajectory.clone(),
            bytes.as_slice(),
        )
        .expect("decode under the renamed set");
        let r = match agy_audit::project::project_message(&renamed, &t2) {
            Ok(_) => panic!("{message}.{field}: projected under a renamed set"),
            Err(r) => r,
        };
        assert_eq!(r.kind, Reason::ModernDeclaration, "{r}");
        assert_eq!(r.rule, Some(rule));
        assert_eq!(
            r.detail,
            format!("field exa.cortex.core.tools.{message}.{field}"),
            "{r}"
        );
    }
}

#[test]
fn every_modern_declaration_is_listed_in_conformance() {
    let text = std::fs::read_to_string(
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("proto/CONFORMANCE.md"),
    )
    .expect("proto/CONFORMANCE.md");
    let (_, section) = text
        .split_once("## Modeled modern payload fields")
        .expect("section");
    for (message, fields) in agy_audit::schema::MODERN_DECLARATIONS {
        for f in *fields {
            // listed as `message.field` or, after the first field of a line, `.field`
            let full = format!("`{message}.{f}`");
            let line_ok = section.lines().any(|l| {
                l.contains(&full)
                    || (l.contains(&format!("`{message}.")) && l.contains(&format!("`.{f}`")))
            });
            assert!(line_ok, "{message}.{f} not listed as modeled");
        }
    }
}

// ---- the corpus's modern near-miss shapes -------------------------------------

/// Each modern near-miss recipe of the corpus generator (the default corpus
/// holds one conversation of each) refuses under the rule it names.
#[test]
fn corpus_modern_near_misses_refuse_under_their_rule() {
    use agy_corpus::corpus::plan::{plan, NearMiss, PlanOptions, Recipe, StepKind, UnqKind};
    let s = schema();
    let base = plan(&PlanOptions {
        conversations: 12,
        near_miss_rate: 0.0,
        ..PlanOptions::default()
    });
    let kinds = [
        (UnqKind::ModernReadPath, Reason::ModernPath),
        (UnqKind::ModernCommandFailed, Reason::ModernStatus),
        (UnqKind::ModernEditArtifact, Reason::ModernPayloadField),
        (UnqKind::ModernSubagentTaskMode, Reason::ModernTaskMode),
        (UnqKind::ModernSubagentWorkspace, Reason::ModernWorkspace),
        (UnqKind::ModernTaskTwoTasks, Reason::ModernTaskAction),
        (UnqKind::ModernTimerNotCanceled, Reason::ModernTimer),
        (
            UnqKind::ModernSubagentsThreeIds,
            Reason::ModernSubagentsList,
        ),
        (UnqKind::ModernBackgroundWait, Reason::BackgroundWait),
        (
            UnqKind::ModernPermissionGrant,
            Reason::ModernPermissionRecord,
        ),
        (UnqKind::ModernToolName, Reason::ModernTool),
        (UnqKind::ModernReadRange, Reason::ModernRange),
        (UnqKind::ModernEditKindMismatch, Reason::ModernEditKind),
        (UnqKind::ModernStoredMetadata, Reason::ModernResultMetadata),
        (
            UnqKind::ModernWrapperTaskDetails,
            Reason::ModernWrapperField,
        ),
        (UnqKind::ModernExtraArgument, Reason::ModernArguments),
    ];

    for (k, reason) in kinds {
        let mut cp = base.conversations[0].clone();
        cp.steps = vec![
            StepKind::UserInput,
            StepKind::Planner { tool_call: true },
            StepKind::Tool(Recipe::Unqualified(k)),
            StepKind::Planner { tool_call: false },
        ];
        cp.planner50.clear();
        cp.near_miss = Some(NearMiss::Unqualified(k));
        let cj = agy_corpus::corpus::content::build(&cp, 1);
        let stored = cj.steps[2].stored.clone();
        let r = refuse_one(&s, &stored);
        // The corpus names its rule by public id; the reader's rule by its own.
        assert_eq!(r.rule.map(|r| r.id()), Some(k.rule().id()), "{k:?}: {r}");
        assert_eq!(r.kind, reason, "{k:?}: {r}");
    }
}
