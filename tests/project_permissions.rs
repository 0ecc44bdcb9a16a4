//! Approved permission records on run-command and view-file wrappers.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::project::Reason;
use agy_audit::rules::RuleId;
use common::*;

const DONE: &str = "CORTEX_STEP_STATUS_DONE";
const N: &str = "/generic/result/payload";

fn record(action: &str, target: &str, request: Json) -> (Json, Json) {
    let resource = json!({"action": action, "target": target});
    let mut req = request;
    req["resource"] = resource.clone();
    (
        json!({"permissionGrants": [{"action": action, "allow": true, "resource": resource, "target": target}]}),
        json!([{"request": {"permission": req}, "response": {"permission": {"allow": true, "persistGrants": {}}}}]),
    )
}

fn with_record(native: Json, tool: &str, args: &Json, perms: &(Json, Json)) -> Json {
    let mut n = native;
    n["permissions"] = perms.0.clone();
    n["completedInteractions"] = perms.1.clone();
    let mut w = wrapper_over(tool, DONE, args, &n);
    w["permissions"] = perms.0.clone();
    w["completedInteractions"] = perms.1.clone();
    w
}

fn command() -> Json {
    let args = json!({"CommandLine": "rm -rf build", "Cwd": "/work", "WaitMsBeforeAsync": 5000});
    let native = json!({
        "type": "CORTEX_STEP_TYPE_RUN_COMMAND", "status": DONE,
        "metadata": {"toolCall": tool_call("run_command", &args),
                     "preToolHookResults": [{"decision": "DECISION_ALLOW"}]},
        "runCommand": {"commandLine": "rm -rf build", "cwd": "/work", "exitCode": 0}
    });
    let perms = record(
        "command",
        "rm -rf build",
        json!({"triggerSource": {"type": "TYPE_FORCE_ASK_HOOK"}}),
    );
    with_record(native, "run_command", &args, &perms)
}

fn read() -> Json {
    let args = json!({"AbsolutePath": "/work/secret.txt"});
    let native = json!({
        "type": "CORTEX_STEP_TYPE_VIEW_FILE", "status": DONE,
        "metadata": {"toolCall": tool_call("view_file", &args)},
        "viewFile": {"absolutePathUri": "file:///work/secret.txt", "content": "s"}
    });
    let perms = record(
        "read_file",
        "/work/secret.txt",
        json!({"actionDescription": "read /work/secret.txt"}),
    );
    with_record(native, "view_file", &args, &perms)
}

fn both(v: &Json, rel: &str, new: Json) -> Json {
    let v = with(v, rel, new.clone());
    with(&v, &format!("{N}{rel}"), new)
}

fn both_without(v: &Json, rel: &str) -> Json {
    let v = without(v, rel);
    without(&v, &format!("{N}{rel}"))
}

#[test]
fn approved_command_presents_the_native_copy() {
    let s = schema();
    let w = command();
    let (got, rule, p) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::PermissionRunCommand);
    let native = w.pointer(N).expect("payload").clone();
    assert_eq!(got, normalized_step(&s, &without(&native, "/@type")));
    assert_eq!(
        got["metadata"]["preToolHookResults"][0]["decision"],
        "DECISION_ALLOW"
    );
    assert!(p.rules().contains(&RuleId::EmbeddedNativeStep));
}

#[test]
fn approved_read_presents_the_native_copy() {
    let s = schema();
    let (got, rule, _) = accept_one(&s, &read());
    assert_eq!(rule, RuleId::PermissionViewFile);
    assert_eq!(
        got["permissions"]["permissionGrants"][0]["target"],
        "/work/secret.txt"
    );
}

#[test]
fn a_record_on_one_copy_only_fails() {
    let s = schema();
    for (v, rule) in [
        (command(), RuleId::PermissionRunCommand),
        (read(), RuleId::PermissionViewFile),
    ] {
        for p in [
            "/permissions",
            "/completedInteractions",
            "/generic/result/payload/permissions",
            "/generic/result/payload/completedInteractions",
        ] {
            assert_refuses(&s, &without(&v, p), Reason::PermissionOneCopy, Some(rule));
        }
    }
}

#[test]
fn copies_that_differ_fail() {
    let s = schema();
    let w = with(
        &command(),
        "/completedInteractions/0/response/trajectoryId",
        json!("t"),
    );
    assert_refuses(
        &s,
        &w,
        Reason::PermissionCopiesDiffer,
        Some(RuleId::PermissionRunCommand),
    );
}

#[test]
fn records_on_steps_that_are_not_done_fail() {
    let s = schema();
    let w = both(&command(), "/status", json!("CORTEX_STEP_STATUS_ERROR"));
    assert_refuses(
        &s,
        &w,
        Reason::PermissionStatus,
        Some(RuleId::PermissionRunCommand),
    );
}

#[test]
fn records_for_another_tool_or_native_type_fail() {
    let s = schema();
    let w = with(
        &command(),
        "/metadata/toolCall/name",
        json!("write_to_file"),
    );
    assert_refuses(
        &s,
        &w,
        Reason::PermissionTool,
        Some(RuleId::PermissionRunCommand),
    );
    let perms = record(
        "command",
        "x",
        json!({"triggerSource": {"type": "TYPE_FORCE_ASK_HOOK"}}),
    );
    let native = json!({"type": "CORTEX_STEP_TYPE_CODE_ACTION", "status": DONE, "codeAction": {"description": "d"}});
    let w = with_record(native, "write_to_file", &json!({}), &perms);
    assert_refuses(&s, &w, Reason::PermissionTool, None);
}

#[test]
fn grants_outside_the_observed_shape_fail() {
    let s = schema();
    let g = "/permissions/permissionGrants/0";
    for (rel, new) in [
        (format!("{g}/allow"), json!(false)),
        (format!("{g}/target"), json!("other")),
        (format!("{g}/resource/target"), json!("other")),
        (format!("{g}/action"), json!("read_file")),
        (
            "/permissions/permissionGrants/1".to_string(),
            json!({"action": "command", "allow": true}),
        ),
    ] {
        let w = both(&command(), &rel, new);
        assert_refuses(
            &s,
            &w,
            Reason::PermissionGrant,
            Some(RuleId::PermissionRunCommand),
        );
    }
    let w = both_without(&command(), &format!("{g}/resource/action"));
    assert_refuses(
        &s,
        &w,
        Reason::PermissionGrant,
        Some(RuleId::PermissionRunCommand),
    );
    // The read grant's target is the AbsolutePath argument.
    let w = both(&read(), &format!("{g}/target"), json!("/work/other.txt"));
    assert_refuses(
        &s,
        &w,
        Reason::PermissionGrant,
        Some(RuleId::PermissionViewFile),
    );
}

#[test]
fn requests_outside_the_observed_shape_fail() {
    let s = schema();
    let req = "/completedInteractions/0/request/permission";
    for (rel, new) in [
        (format!("{req}/actionDescription"), json!("run it")),
        (format!("{req}/shellName"), json!("bash")),
        (format!("{req}/resource/target"), json!("ls")),
    ] {
        assert_refuses(
            &s,
            &both(&command(), &rel, new),
            Reason::PermissionRequest,
            Some(RuleId::PermissionRunCommand),
        );
    }
    let second = both(
        &command(),
        "/completedInteractions/1",
        json!({"request": {}}),
    );
    assert_refuses(
        &s,
        &second,
        Reason::PermissionRequest,
        Some(RuleId::PermissionRunCommand),
    );
    // The read request needs its action description.
    let w = both_without(&read(), &format!("{req}/actionDescription"));
    assert_refuses(
        &s,
        &w,
        Reason::PermissionRequest,
        Some(RuleId::PermissionViewFile),
    );
    // A pending requested interaction is no part of any qualified wrapper.
    let w = with(
        &command(),
        "/requestedInteraction",
        json!({"permission": {"actionDescription": "x"}}),
    );
    assert_refuses(
        &s,
        &w,
        Reason::WrapperField,
        Some(RuleId::EmbeddedNativeStep),
    );
}

#[test]
fn another_trigger_fails() {
    let s = schema();
    let t = "/completedInteractions/0/request/permission/triggerSource";
    let w = both(&command(), t, json!({"type": "TYPE_POLICY_RULE"}));
    assert_refuses(
        &s,
        &w,
        Reason::PermissionTrigger,
        Some(RuleId::PermissionRunCommand),
    );
    // The trigger is an object {type, detail}: a detail is another trigger.
    let w = both(
        &command(),
        t,
        json!({"type": "TYPE_FORCE_ASK_HOOK", "detail": "hook"}),
    );
    assert_refuses(
        &s,
        &w,
        Reason::PermissionTrigger,
        Some(RuleId::PermissionRunCommand),
    );
    let w = both_without(&command(), t);
    assert_refuses(
        &s,
        &w,
        Reason::PermissionTrigger,
        Some(RuleId::PermissionRunCommand),
    );
    // A read request has no trigger.
    let w = both(&read(), t, json!({"type": "TYPE_FORCE_ASK_HOOK"}));
    assert_refuses(
        &s,
        &w,
        Reason::PermissionTrigger,
        Some(RuleId::PermissionViewFile),
    );
}

#[test]
fn a_rejected_request_fails() {
    let s = schema();
    let a = "/completedInteractions/0/response/permission/allow";
    assert_refuses(
        &s,
        &both(&command(), a, json!(false)),
        Reason::PermissionRejected,
        Some(RuleId::PermissionRunCommand),
    );
    assert_refuses(
        &s,
        &both_without(&read(), a),
        Reason::PermissionRejected,
        Some(RuleId::PermissionViewFile),
    );
}

#[test]
fn answers_outside_the_observed_shape_fail() {
    let s = schema();
    // #22.5: nothing beside the answer in the response, on both copies.
    for (field, value) in [("trajectoryId", json!("t")), ("stepIndex", json!(3))] {
        let p = format!("/completedInteractions/0/response/{field}");
        assert_refuses(
            &s,
            &both(&command(), &p, value.clone()),
            Reason::PermissionAnswer,
            Some(RuleId::PermissionRunCommand),
        );
        assert_refuses(
            &s,
            &both(&read(), &p, value),
            Reason::PermissionAnswer,
            Some(RuleId::PermissionViewFile),
        );
    }
    let pg = "/completedInteractions/0/response/permission/persistGrants";
    let w = both(&command(), pg, json!({"allow": ["rm *"]}));
    assert_refuses(
        &s,
        &w,
        Reason::PermissionAnswer,
        Some(RuleId::PermissionRunCommand),
    );
    let w = both_without(&command(), pg);
    assert_refuses(
        &s,
        &w,
        Reason::PermissionAnswer,
        Some(RuleId::PermissionRunCommand),
    );
}
