//! view_file: the ContentOffset argument and the resultless BUILTIN view_file.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::project::Reason;
use agy_audit::rules::RuleId;
use common::*;

const DONE: &str = "CORTEX_STEP_STATUS_DONE";
const ERROR: &str = "CORTEX_STEP_STATUS_ERROR";

fn offset_read(offset: u64) -> Json {
    let args = json!({"AbsolutePath": "/work/big.log", "ContentOffset": offset});
    let mut vf = json!({"absolutePathUri": "file:///work/big.log", "content": "tail"});
    if offset != 0 {
        vf["contentOffset"] = json!(offset);
    }
    let native = json!({"type": "CORTEX_STEP_TYPE_VIEW_FILE", "status": DONE,
        "metadata": {"toolCall": tool_call("view_file", &args)}, "viewFile": vf});
    wrapper_over("view_file", DONE, &args, &native)
}

#[test]
fn content_offset_matching_the_native_step_is_accepted() {
    let s = schema();
    for offset in [120, 0] {
        let w = offset_read(offset);
        let (got, rule, p) = accept_one(&s, &w);
        assert_eq!(rule, RuleId::ViewFileContentOffset);
        assert!(p.rules().contains(&RuleId::EmbeddedNativeStep));
        let native = without(
            w.pointer("/generic/result/payload").expect("payload"),
            "/@type",
        );
        assert_eq!(got, normalized_step(&s, &native));
        if offset != 0 {
            assert_eq!(got["viewFile"]["contentOffset"], 120);
        }
        assert!(p
            .dropped()
            .iter()
            .any(|d| d == "steps[0].generic.args.ContentOffset"));
    }
}

#[test]
fn content_offset_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ViewFileContentOffset);
    let w = offset_read(120);
    for raw in ["0120", "\"120\"", "-1", "1e2", "120.0", "4294967296"] {
        let v = with(&w, "/generic/args/ContentOffset", json!(raw));
        assert_refuses(&s, &v, Reason::ContentOffset, rule);
    }
    let tc = "/generic/result/payload/metadata/toolCall/argumentsJson";
    for args in [
        json!({"AbsolutePath": "/work/big.log"}),
        json!({"AbsolutePath": "/work/big.log", "ContentOffset": 121}),
        json!({"AbsolutePath": "/work/big.log", "ContentOffset": "120"}),
    ] {
        let v = with(&w, tc, json!(args.to_string()));
        assert_refuses(&s, &v, Reason::ContentOffset, rule);
    }
    let v = with(
        &w,
        "/generic/result/payload/viewFile/contentOffset",
        json!(7),
    );
    assert_refuses(&s, &v, Reason::ContentOffset, rule);
    let v = without(&w, "/generic/result/payload/viewFile/contentOffset");
    assert_refuses(&s, &v, Reason::ContentOffset, rule);
    // A call to another tool.
    let v = with(&w, "/metadata/toolCall/name", json!("read_file"));
    assert_refuses(&s, &v, Reason::ContentOffset, rule);
    // Over another native type.
    let args = json!({"CommandLine": "ls", "ContentOffset": 1});
    let n = json!({"type": "CORTEX_STEP_TYPE_RUN_COMMAND", "status": DONE, "runCommand": {"commandLine": "ls"}});
    assert_refuses(
        &s,
        &wrapper_over("view_file", DONE, &args, &n),
        Reason::ContentOffset,
        rule,
    );
}

fn device_read(args: Json) -> Json {
    let mut w = wrapper("view_file", ERROR, &args, None);
    w["metadata"]["toolSource"] = json!("TOOL_SOURCE_BUILTIN");
    w["metadata"]["executionId"] = json!("exec-1");
    w["error"] = json!({"shortError": "path is a device, pipe, or socket, not a standard file",
                        "fullError": "view_file: /dev/null: path is a device, pipe, or socket, not a standard file"});
    w
}

fn lines_args() -> Json {
    json!({"AbsolutePath": "/dev/null", "StartLine": 2, "EndLine": 10})
}

#[test]
fn resultless_builtin_view_file_is_presented_as_view_file() {
    let s = schema();
    let w = device_read(lines_args());
    let (got, rule, p) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::ResultlessBuiltinViewFile);
    assert!(p.rules().contains(&RuleId::History2SkillRegistry));
    let want = normalized_step(
        &s,
        &json!({"type": "CORTEX_STEP_TYPE_VIEW_FILE", "status": ERROR,
                "metadata": w["metadata"], "error": w["error"],
                "viewFile": {"absolutePathUri": "file:///dev/null", "startLine": 1, "endLine": 9}}),
    );
    assert_eq!(got, want);
    assert!(got.get("generic").is_none());
    assert!(
        p.dropped()
            .iter()
            .any(|d| d == "steps[0].generic.args.AbsolutePath"),
        "{:?}",
        p.dropped()
    );
    // Neither line.
    let (got, _, _) = accept_one(&s, &device_read(json!({"AbsolutePath": "/tmp/fifo_1.p@+"})));
    assert_eq!(
        got["viewFile"],
        json!({"absolutePathUri": "file:///tmp/fifo_1.p@+"})
    );
    // StartLine 1 is zero-based 0 (a default, so omitted).
    let (got, _, _) = accept_one(
        &s,
        &device_read(json!({"AbsolutePath": "/dev/null", "StartLine": 1, "EndLine": 1})),
    );
    assert_eq!(
        got["viewFile"],
        json!({"absolutePathUri": "file:///dev/null"})
    );
}

#[test]
fn resultless_builtin_view_file_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ResultlessBuiltinViewFile);
    let r = Reason::ResultlessViewFile;
    let w = device_read(lines_args());
    // Another tool source, another status.
    assert_refuses(
        &s,
        &with(&w, "/metadata/toolSource", json!("TOOL_SOURCE_MCP")),
        r,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/status", json!("CORTEX_STEP_STATUS_CANCELED")),
        r,
        rule,
    );
    // An outer error with more than short and full text; none at all.
    assert_refuses(
        &s,
        &with(&w, "/error/userErrorMessage", json!("x")),
        r,
        rule,
    );
    assert_refuses(&s, &without(&w, "/error"), r, rule);
    // Extra wrapper fields.
    assert_refuses(&s, &with(&w, "/taskDetails", json!({"id": "t"})), r, rule);
    // Any other argument; one line only; bad line shapes.
    for args in [
        json!({"AbsolutePath": "/dev/null", "StartLine": 2, "EndLine": 10, "toolSummary": "read"}),
        json!({"AbsolutePath": "/dev/null", "StartLine": 2}),
        json!({"AbsolutePath": "/dev/null", "EndLine": 2}),
        json!({"AbsolutePath": "/dev/null", "StartLine": 0, "EndLine": 2}),
        json!({"AbsolutePath": "/dev/null", "StartLine": 3, "EndLine": 2}),
        json!({"AbsolutePath": "/dev/null", "StartLine": "2", "EndLine": "3"}),
        json!({"StartLine": 1, "EndLine": 2}),
    ] {
        assert_refuses(&s, &device_read(args), r, rule);
    }
    let v = with(&w, "/generic/args/StartLine", json!("02"));
    assert_refuses(&s, &v, r, rule);
    // Another path shape.
    for path in [
        "dev/null",
        "/tmp/../dev/null",
        "/tmp/./x",
        "/tmp//x",
        "/tmp/x/",
        "/tmp/a b",
        "/tmp/é",
        "/tmp/a%20",
    ] {
        assert_refuses(&s, &device_read(json!({"AbsolutePath": path})), r, rule);
    }
    // Arguments that do not equal the presented tool call.
    let v = with(
        &w,
        "/metadata/toolCall/argumentsJson",
        json!(json!({"AbsolutePath": "/dev/null", "StartLine": 2, "EndLine": 11}).to_string()),
    );
    assert_refuses(&s, &v, r, rule);
}
