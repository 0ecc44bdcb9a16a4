//! Resultless wrappers: failed before the tool ran, hook-denied, rejected
//! permission request, canceled while the prompt was open.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::project::Reason;
use agy_audit::rules::RuleId;
use common::*;

const ERROR: &str = "CORTEX_STEP_STATUS_ERROR";
const INVALID: &str = "CORTEX_STEP_STATUS_INVALID";
const CANCELED: &str = "CORTEX_STEP_STATUS_CANCELED";

fn failed(tool: &str, status: &str, args: Json, short: &str) -> Json {
    let mut w = wrapper(tool, status, &args, None);
    // agy repeats an argument rejection's text as its full error.
    let full = if tool == "generate_image" {
        short.to_string()
    } else {
        format!("{short} (full)")
    };
    w["error"] = json!({"shortError": short, "fullError": full});
    w
}

fn cases() -> Vec<Json> {
    vec![
        failed(
            "write_to_file",
            ERROR,
            json!({"TargetFile": "/etc/x", "CodeContent": "y"}),
            "not a valid artifact path",
        ),
        failed(
            "write_to_file",
            INVALID,
            json!({"TargetFile": "/etc/x", "Overwrite": true}),
            "invalid arguments:\n- x",
        ),
        failed(
            "view_file",
            ERROR,
            json!({"AbsolutePath": "/nope", "StartLine": 1, "EndLine": 5}),
            "no such file",
        ),
        failed(
            "find_by_name",
            ERROR,
            json!({"SearchDirectory": "/work", "Pattern": "*.rs", "MaxDepth": 3}),
            "no such dir",
        ),
        failed(
            "list_dir",
            ERROR,
            json!({"DirectoryPath": "/nope"}),
            "no such dir",
        ),
        failed(
            "schedule",
            ERROR,
            json!({"DurationSeconds": 60, "Prompt": "check"}),
            "scheduler unavailable",
        ),
        failed(
            "generate_image",
            INVALID,
            json!({"AspectRatio": "9:1", "ImageName": "x", "Prompt": "a cat"}),
            "invalid arguments:\n- AspectRatio must be one of 1:1, 16:9",
        ),
    ]
}

#[test]
fn failed_before_the_tool_ran_is_presented_unchanged() {
    let s = schema();
    for w in cases() {
        let (got, rule, p) = accept_one(&s, &w);
        assert_eq!(rule, RuleId::ResultlessFailedBeforeRun, "{w}");
        assert_eq!(got, normalized_step(&s, &w));
        assert!(p.dropped().is_empty(), "{:?}", p.dropped());
    }
}

#[test]
fn failed_before_run_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ResultlessFailedBeforeRun);
    for w in cases() {
        assert_refuses(&s, &without(&w, "/error"), Reason::ResultlessNoError, rule);
        assert_refuses(
            &s,
            &with(&w, "/taskDetails", json!({"id": "t"})),
            Reason::ResultlessExtraField,
            rule,
        );
        assert_refuses(
            &s,
            &with(
                &w,
                "/permissions",
                json!({"permissionGrants": [{"action": "x"}]}),
            ),
            Reason::ResultlessExtraField,
            rule,
        );
        assert_refuses(
            &s,
            &with(&w, "/error/userErrorMessage", json!("x")),
            Reason::OuterErrorText,
            rule,
        );
        assert_refuses(
            &s,
            &with(&w, "/generic/args/Extra", json!("1")),
            Reason::ResultlessArguments,
            rule,
        );
    }
    // Another status per tool.
    let c = cases();
    assert_refuses(
        &s,
        &with(&c[3], "/status", json!(INVALID)),
        Reason::ResultlessStatus,
        rule,
    );
    assert_refuses(
        &s,
        &with(&c[0], "/status", json!(CANCELED)),
        Reason::ResultlessStatus,
        rule,
    );
    assert_refuses(
        &s,
        &with(&c[6], "/status", json!(ERROR)),
        Reason::ResultlessStatus,
        rule,
    );
    // Missing required arguments.
    assert_refuses(
        &s,
        &without(&c[0], "/generic/args/TargetFile"),
        Reason::ResultlessArguments,
        rule,
    );
    assert_refuses(
        &s,
        &without(&c[6], "/generic/args/Prompt"),
        Reason::ResultlessArguments,
        rule,
    );
    assert_refuses(
        &s,
        &with(&c[5], "/generic/args", json!({})),
        Reason::ResultlessArguments,
        rule,
    );
    // generate_image's error must start `invalid arguments:`.
    assert_refuses(
        &s,
        &with(&c[6], "/error/shortError", json!("quota exceeded")),
        Reason::ResultlessErrorPrefix,
        rule,
    );
    // #22.4: its full error is present and holds the same text.
    let short = c[6]["error"]["shortError"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for full in [
        json!(""),
        json!(format!("{short} (full)")),
        json!("invalid arguments:"),
    ] {
        assert_refuses(
            &s,
            &with(&c[6], "/error/fullError", full),
            Reason::ResultlessFullError,
            rule,
        );
    }
    assert_refuses(
        &s,
        &without(&c[6], "/error/fullError"),
        Reason::ResultlessFullError,
        rule,
    );
    // Any other tool.
    let w = failed("grep_search", ERROR, json!({"Query": "x"}), "boom");
    assert_refuses(&s, &w, Reason::ResultlessTool, None);
}

fn cmd_args() -> Json {
    json!({"CommandLine": "rm -rf /", "Cwd": "/work", "WaitMsBeforeAsync": 5000})
}

fn hook_denied() -> Json {
    let mut w = wrapper("run_command", ERROR, &cmd_args(), None);
    w["metadata"]["preToolHookResults"] = json!([{"hookName": "guard", "decision": "DECISION_DENY", "reason": "destructive command"}]);
    let e = "tool call denied by pre-tool hook: destructive command";
    w["error"] = json!({"shortError": e, "fullError": e});
    w
}

fn command_step(w: &Json, cmd: &str, keep_error: bool) -> Json {
    let mut v = json!({"type": "CORTEX_STEP_TYPE_RUN_COMMAND", "status": w["status"], "metadata": w["metadata"],
        "runCommand": {"commandLine": cmd, "proposedCommandLine": cmd, "cwd": "/work", "blocking": true, "combinedOutput": {}}});
    if keep_error {
        v["error"] = w["error"].clone();
    }
    v
}

#[test]
fn hook_denied_run_command_is_presented_as_a_command() {
    let s = schema();
    let w = hook_denied();
    let (got, rule, p) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::ResultlessHookDenied);
    assert_eq!(
        got,
        normalized_step(&s, &command_step(&w, "rm -rf /", true))
    );
    assert_eq!(got["runCommand"]["combinedOutput"], json!({}));
    assert!(got["runCommand"].get("exitCode").is_none());
    assert!(p
        .dropped()
        .iter()
        .any(|d| d == "steps[0].generic.args.WaitMsBeforeAsync"));
}

#[test]
fn hook_denied_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ResultlessHookDenied);
    let w = hook_denied();
    assert_refuses(
        &s,
        &with(&w, "/generic/args/BypassSandbox", json!("true")),
        Reason::ResultlessArguments,
        rule,
    );
    assert_refuses(
        &s,
        &without(&w, "/generic/args/Cwd"),
        Reason::ResultlessArguments,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/generic/args/CommandLine", json!("rm")),
        Reason::ResultlessArguments,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/error/userErrorMessage", json!("x")),
        Reason::OuterErrorText,
        rule,
    );
    // #22.4: the full error is present and equal to the short error.
    for full in [
        json!("something else"),
        json!(""),
        json!("tool call denied by pre-tool hook: destructive command (full)"),
        json!("tool call denied by pre-tool hook:"),
    ] {
        assert_refuses(
            &s,
            &with(&w, "/error/fullError", full),
            Reason::ResultlessFullError,
            rule,
        );
    }
    assert_refuses(
        &s,
        &without(&w, "/error/fullError"),
        Reason::ResultlessFullError,
        rule,
    );
    // #22.4: the short error is exactly the prefix and the reason.
    for short in [
        "tool call denied by pre-tool hook: destructive command; retry later",
        "tool call denied by pre-tool hook: destructive command.",
        "tool call denied by pre-tool hook:  destructive command",
        "tool call denied by pre-tool hook:destructive command",
        "tool call denied by pre-tool hook: not a destructive command",
    ] {
        let v = with(
            &with(&w, "/error/shortError", json!(short)),
            "/error/fullError",
            json!(short),
        );
        assert_refuses(&s, &v, Reason::HookDeniedErrorText, rule);
    }
    let h = "/metadata/preToolHookResults";
    assert_refuses(
        &s,
        &with(&w, &format!("{h}/1"), json!({"decision": "DECISION_ALLOW"})),
        Reason::HookDenyResult,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, &format!("{h}/0/decision"), json!("DECISION_ALLOW")),
        Reason::HookDenyResult,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, &format!("{h}/0/reason"), json!("another reason")),
        Reason::HookDenyResult,
        rule,
    );
    assert_refuses(
        &s,
        &without(&w, &format!("{h}/0/reason")),
        Reason::HookDenyResult,
        rule,
    );
    assert_refuses(&s, &without(&w, h), Reason::HookDenyResult, rule);
    assert_refuses(
        &s,
        &with(&w, "/taskDetails", json!({"id": "t"})),
        Reason::ResultlessExtraField,
        rule,
    );
    // Another status, or an error that is no qualified text.
    assert_refuses(
        &s,
        &with(&w, "/status", json!("CORTEX_STEP_STATUS_DONE")),
        Reason::ResultlessStatus,
        None,
    );
    assert_refuses(
        &s,
        &with(&w, "/error/shortError", json!("exec failed")),
        Reason::ResultlessErrorPrefix,
        None,
    );
}

const CMD: &str = "git push";

/// The advice line as the specification describes it, written out here
/// (not taken from the reader) so a drift in the reader's literal fails.
const ADVICE: &str = "Do not attempt to run this command another way or to circumvent this denial.";

fn rejected_error(cmd: &str) -> String {
    format!(
        "permission check failed for command \"{cmd}\": user denied permission to run command:\n{cmd}\n{ADVICE}"
    )
}

/// Projects `step` in a subagent's conversation: the trajectory metadata
/// names a parent conversation.
fn project_in_child(
    s: &agy_audit::schema::Schema,
    step: &Json,
) -> Result<Projected, agy_audit::project::ProjectionRefusal> {
    let mut conv = conv_with(s, std::slice::from_ref(step));
    conv.metadata = msg(
        s,
        "exa.cortex_pb.CortexTrajectoryMetadata",
        r#"{"createdAt":"2026-11-01T10:00:00Z","parentConversationId":"parent-1","nestingDepth":1}"#,
    );
    project_of(s, &trajectory_of(s, &conv))
}

fn rejected() -> Json {
    let args = json!({"CommandLine": CMD, "Cwd": "/work", "WaitMsBeforeAsync": 5000});
    let mut w = wrapper("run_command", ERROR, &args, None);
    w["metadata"]["preToolHookResults"] = json!([{"decision": "DECISION_ALLOW"}]);
    w["metadata"]["internalMetadata"] = json!({"statusTransitions": [
        {"updatedStatus": "CORTEX_STEP_STATUS_PENDING"}, {"updatedStatus": "CORTEX_STEP_STATUS_WAITING"},
        {"updatedStatus": "CORTEX_STEP_STATUS_RUNNING"}, {"updatedStatus": ERROR}]});
    w["error"] = json!({"shortError": rejected_error(CMD), "fullError": rejected_error(CMD)});
    w["completedInteractions"] = json!([{
        "request": {"permission": {"resource": {"action": "command", "target": CMD}, "actionDescription": "run git push",
            "triggerSource": {"type": "TYPE_DEFAULT_FALLBACK"}, "persistSuggestionType": "PERSIST_SUGGESTION_TYPE_PREFIX",
            "suggestedPersistPattern": "git push*", "shellName": "bash"}},
        "response": {"permission": {"persistGrants": {}}}}]);
    w
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
fn rejected_permission_request_is_presented_as_a_command_with_its_request() {
    let s = schema();
    let w = rejected();
    let (got, rule, _) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::ResultlessRejectedPermission);
    let mut want = command_step(&w, CMD, true);
    want["completedInteractions"] = w["completedInteractions"].clone();
    assert_eq!(got, normalized_step(&s, &want));
    assert_eq!(agy_audit::project::REJECTED_ADVICE, ADVICE);
    // The same in a subagent's conversation.
    let p = project_in_child(&s, &w).expect("projects in a child");
    assert_eq!(p.step_rules, [RuleId::ResultlessRejectedPermission]);
    // The headless child's BypassSandbox "false", in a subagent's conversation.
    let v = with_args(
        &w,
        json!({"CommandLine": CMD, "Cwd": "/work", "WaitMsBeforeAsync": 5000, "BypassSandbox": "false"}),
    );
    let p = project_in_child(&s, &v).expect("projects in a child");
    assert_eq!(p.step_rules, [RuleId::ResultlessRejectedPermission]);
}

/// #22.3: BypassSandbox "false" is the headless child's only: on an
/// ordinary top-level call (no parent conversation) it fails.
#[test]
fn rejected_permission_bypass_outside_a_subagent_fails() {
    let s = schema();
    let v = with_args(
        &rejected(),
        json!({"CommandLine": CMD, "Cwd": "/work", "WaitMsBeforeAsync": 5000, "BypassSandbox": "false"}),
    );
    assert_refuses(
        &s,
        &v,
        Reason::RejectedBypassTopLevel,
        Some(RuleId::ResultlessRejectedPermission),
    );
    // "true" stays refused in a child too.
    let v = with_args(
        &rejected(),
        json!({"CommandLine": CMD, "Cwd": "/work", "WaitMsBeforeAsync": 5000, "BypassSandbox": "true"}),
    );
    let r = project_in_child(&s, &v).expect_err("refused");
    assert_eq!(r.kind, Reason::RejectedBypass, "{r}");
}

#[test]
fn rejected_permission_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ResultlessRejectedPermission);
    let w = rejected();
    let ans = "/completedInteractions/0/response/permission";
    let req = "/completedInteractions/0/request/permission";
    // An answer that allows (or records allow at all).
    assert_refuses(
        &s,
        &with(&w, &format!("{ans}/allow"), json!(true)),
        Reason::RejectedAnswer,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, &format!("{ans}/allow"), json!(false)),
        Reason::RejectedAnswer,
        rule,
    );
    // Another trigger.
    assert_refuses(
        &s,
        &with(
            &w,
            &format!("{req}/triggerSource"),
            json!({"type": "TYPE_FORCE_ASK_HOOK"}),
        ),
        Reason::RejectedTrigger,
        rule,
    );
    // A changed error.
    let e = rejected_error(CMD);
    for changed in [
        // One word of the advice line changed, dropped or added.
        e.replace("circumvent", "evade"),
        e.replace("attempt", "try"),
        e.replace(" another way", ""),
        e.replace("denial.", "denial"),
        e.replace("denial.", "denial. Ask the user."),
        e.replace("circumvent", "work around"),
        e.replace("\ngit push\n", "\ngit pull\n"),
        e.replace("user denied", "policy denied"),
        e.lines().take(2).collect::<Vec<_>>().join("\n"),
        format!("{e}\nmore"),
    ] {
        let v = with(
            &with(&w, "/error/shortError", json!(changed)),
            "/error/fullError",
            json!(changed),
        );
        assert_refuses(&s, &v, Reason::ResultlessErrorPrefix, rule);
    }
    assert_refuses(
        &s,
        &with(&w, "/error/fullError", json!("other")),
        Reason::ResultlessErrorPrefix,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/error/userErrorMessage", json!("x")),
        Reason::OuterErrorText,
        rule,
    );
    // A command Go %q would escape: a different quoting fails closed.
    let q = "echo \"hi\"";
    let mut v = with_args(
        &w,
        json!({"CommandLine": q, "Cwd": "/work", "WaitMsBeforeAsync": 5000}),
    );
    let ge = format!("permission check failed for command \"echo \\\"hi\\\"\": user denied permission to run command:\n{q}\nDo not circumvent.");
    v["error"] = json!({"shortError": ge, "fullError": ge});
    v["completedInteractions"][0]["request"]["permission"]["resource"]["target"] = json!(q);
    assert_refuses(&s, &v, Reason::ResultlessErrorPrefix, rule);
    // A missing or second interaction; unqualified request fields.
    assert_refuses(
        &s,
        &without(&w, "/completedInteractions"),
        Reason::RejectedInteraction,
        rule,
    );
    assert_refuses(
        &s,
        &with(
            &w,
            "/completedInteractions/1",
            w["completedInteractions"][0].clone(),
        ),
        Reason::RejectedInteraction,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, &format!("{req}/triggerSource/detail"), json!("no tty")),
        Reason::RejectedTrigger,
        rule,
    );
    assert_refuses(
        &s,
        &without(&w, &format!("{req}/shellName")),
        Reason::RejectedInteraction,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, &format!("{req}/resource/target"), json!("ls")),
        Reason::RejectedInteraction,
        rule,
    );
    // #22.5: nothing beside the answer in the response.
    for (field, value) in [("trajectoryId", json!("t")), ("stepIndex", json!(3))] {
        assert_refuses(
            &s,
            &with(
                &w,
                &format!("/completedInteractions/0/response/{field}"),
                value,
            ),
            Reason::RejectedInteraction,
            rule,
        );
    }
    // The request's resource action is checked (#22.3).
    for action in [json!("read_file"), json!("Command"), json!("")] {
        assert_refuses(
            &s,
            &with(&w, &format!("{req}/resource/action"), action),
            Reason::RejectedInteraction,
            rule,
        );
    }
    assert_refuses(
        &s,
        &without(&w, &format!("{req}/resource/action")),
        Reason::RejectedInteraction,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, &format!("{ans}/persistGrants/allow"), json!(["git *"])),
        Reason::RejectedInteraction,
        rule,
    );
    // A grant.
    assert_refuses(
        &s,
        &with(
            &w,
            "/permissions",
            json!({"permissionGrants": [{"action": "command", "target": CMD}]}),
        ),
        Reason::RejectedGrant,
        rule,
    );
    // A hook result other than the one allow.
    let h = "/metadata/preToolHookResults";
    assert_refuses(
        &s,
        &with(&w, &format!("{h}/0/reason"), json!("ok")),
        Reason::HookAllowResult,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, &format!("{h}/1"), json!({"decision": "DECISION_ALLOW"})),
        Reason::HookAllowResult,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, &format!("{h}/0/decision"), json!("DECISION_ASK")),
        Reason::HookAllowResult,
        rule,
    );
    // BypassSandbox "true" (or not the string "false").
    for b in [json!("true"), json!(false)] {
        let v = with_args(
            &w,
            json!({"CommandLine": CMD, "Cwd": "/work", "WaitMsBeforeAsync": 5000, "BypassSandbox": b}),
        );
        assert_refuses(&s, &v, Reason::RejectedBypass, rule);
    }
    // Any other field or argument; arguments that do not repeat the tool call.
    assert_refuses(
        &s,
        &with(&w, "/taskDetails", json!({"id": "t"})),
        Reason::ResultlessExtraField,
        rule,
    );
    let v = with_args(
        &w,
        json!({"CommandLine": CMD, "Cwd": "/work", "WaitMsBeforeAsync": 5000, "toolSummary": "push"}),
    );
    assert_refuses(&s, &v, Reason::ResultlessArguments, rule);
    let v = with(
        &w,
        "/metadata/toolCall/argumentsJson",
        json!(json!({"CommandLine": CMD}).to_string()),
    );
    assert_refuses(&s, &v, Reason::ArgumentsRepeatToolCall, rule);
}

fn canceled_prompt() -> Json {
    let mut w = wrapper(
        "run_command",
        CANCELED,
        &json!({"CommandLine": "make deploy", "Cwd": "/work", "WaitMsBeforeAsync": 0}),
        None,
    );
    w["metadata"]["preToolHookResults"] = json!([{"decision": "DECISION_ALLOW"}]);
    w["metadata"]["internalMetadata"] = json!({"statusTransitions": [
        {"updatedStatus": "CORTEX_STEP_STATUS_PENDING"}, {"updatedStatus": "CORTEX_STEP_STATUS_RUNNING"},
        {"updatedStatus": "CORTEX_STEP_STATUS_WAITING"}, {"updatedStatus": "CORTEX_STEP_STATUS_RUNNING"},
        {"updatedStatus": CANCELED}]});
    w
}

#[test]
fn prompt_canceled_while_open_is_presented_as_a_canceled_command() {
    let s = schema();
    let w = canceled_prompt();
    let (got, rule, _) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::ResultlessCanceledPrompt);
    let mut want = command_step(&w, "make deploy", false);
    want["runCommand"]["cwd"] = json!("/work");
    assert_eq!(got, normalized_step(&s, &want));
    assert!(got.get("error").is_none());
}

#[test]
fn canceled_prompt_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ResultlessCanceledPrompt);
    let w = canceled_prompt();
    for (p, v) in [
        ("/error", json!({"shortError": "canceled"})),
        (
            "/permissions",
            json!({"permissionGrants": [{"action": "command"}]}),
        ),
        ("/completedInteractions", json!([{"request": {}}])),
        (
            "/requestedInteraction",
            json!({"permission": {"actionDescription": "x"}}),
        ),
        ("/taskDetails", json!({"id": "t"})),
    ] {
        assert_refuses(&s, &with(&w, p, v), Reason::CanceledPromptRecord, rule);
    }
    for args in [
        json!({"CommandLine": "make deploy", "Cwd": "/work", "WaitMsBeforeAsync": 0, "BypassSandbox": "false"}),
        json!({"CommandLine": "make deploy", "Cwd": "/work"}),
    ] {
        assert_refuses(&s, &with_args(&w, args), Reason::ResultlessArguments, rule);
    }
    let v = with(&w, "/metadata/toolCall/argumentsJson", json!("{}"));
    assert_refuses(&s, &v, Reason::ArgumentsRepeatToolCall, rule);
    assert_refuses(
        &s,
        &with(
            &w,
            "/metadata/preToolHookResults/0/decision",
            json!("DECISION_DENY"),
        ),
        Reason::HookAllowResult,
        rule,
    );
    assert_refuses(
        &s,
        &without(&w, "/metadata/preToolHookResults"),
        Reason::HookAllowResult,
        rule,
    );
    let t = "/metadata/internalMetadata/statusTransitions";
    assert_refuses(
        &s,
        &without(&w, &format!("{t}/2")),
        Reason::CanceledPromptHistory,
        rule,
    );
    assert_refuses(
        &s,
        &without(&w, "/metadata/internalMetadata"),
        Reason::CanceledPromptHistory,
        rule,
    );
    // Another tool: a canceled resultless write_to_file is no qualified shape.
    let v = with(
        &with(&w, "/metadata/toolCall/name", json!("write_to_file")),
        "/error",
        json!({"shortError": "x"}),
    );
    assert_refuses(
        &s,
        &v,
        Reason::ResultlessStatus,
        Some(RuleId::ResultlessFailedBeforeRun),
    );
}
