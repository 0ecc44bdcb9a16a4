//! write_to_file: the Append argument.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::project::Reason;
use agy_audit::rules::RuleId;
use common::*;

const DONE: &str = "CORTEX_STEP_STATUS_DONE";

fn append_write(append: bool) -> Json {
    let args = json!({"TargetFile": "/work/log.txt", "CodeContent": "more\n", "Append": append});
    let mut cf = json!({"path": {"absoluteUri": "file:///work/log.txt"}, "instruction": "append"});
    if append {
        cf["append"] = json!(true);
    }
    let native = json!({"type": "CORTEX_STEP_TYPE_CODE_ACTION", "status": DONE,
        "metadata": {"toolCall": tool_call("write_to_file", &args)},
        "codeAction": {"actionSpec": {"createFile": cf}, "description": "append to log.txt"}});
    wrapper_over("write_to_file", DONE, &args, &native)
}

#[test]
fn append_recorded_twice_on_the_native_step_is_accepted() {
    let s = schema();
    for append in [true, false] {
        let w = append_write(append);
        let (got, rule, p) = accept_one(&s, &w);
        assert_eq!(rule, RuleId::WriteToFileAppend);
        assert!(p.rules().contains(&RuleId::EmbeddedNativeStep));
        let native = without(
            w.pointer("/generic/result/payload").expect("payload"),
            "/@type",
        );
        assert_eq!(got, normalized_step(&s, &native));
        assert_eq!(
            got["codeAction"]["actionSpec"]["createFile"]
                .get("append")
                .is_some(),
            append
        );
    }
}

#[test]
fn append_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::WriteToFileAppend);
    let r = Reason::WriteToFileAppend;
    let w = append_write(true);
    // Any other value.
    for raw in ["\"true\"", "1", "True", "null"] {
        assert_refuses(&s, &with(&w, "/generic/args/Append", json!(raw)), r, rule);
    }
    // A call to another tool.
    assert_refuses(
        &s,
        &with(&w, "/metadata/toolCall/name", json!("replace_file_content")),
        r,
        rule,
    );
    // A native Step without a create_file spec.
    let p = "/generic/result/payload/codeAction/actionSpec";
    let v = with(
        &w,
        p,
        json!({"command": {"instruction": "edit", "isEdit": true}}),
    );
    assert_refuses(&s, &v, r, rule);
    // A tool call that lacks or changes the value.
    let tc = "/generic/result/payload/metadata/toolCall/argumentsJson";
    for args in [
        json!({"TargetFile": "/work/log.txt", "CodeContent": "more\n"}),
        json!({"TargetFile": "/work/log.txt", "CodeContent": "more\n", "Append": false}),
        json!({"TargetFile": "/work/log.txt", "CodeContent": "more\n", "Append": "true"}),
    ] {
        assert_refuses(&s, &with(&w, tc, json!(args.to_string())), r, rule);
    }
    // create_file.append that disagrees.
    assert_refuses(&s, &without(&w, &format!("{p}/createFile/append")), r, rule);
    let f = append_write(false);
    assert_refuses(
        &s,
        &with(&f, &format!("{p}/createFile/append"), json!(true)),
        r,
        rule,
    );
}
