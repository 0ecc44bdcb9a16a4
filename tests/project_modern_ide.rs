//! Issue 27, the modern (agy 1.4.x) payloads of part 2: ide225 (read
//! permission records, ByteOffset=0 reads, artifact creates and edits),
//! finish147 (Finish calls, missing-file reads) and replay147 (command wait
//! forms, image reads). Each accepted shape verifies, each near-miss refuses
//! with its named reason; the wait forms are checked through the ordinary
//! comparison, and the offline export keeps the stored waits.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::project::Reason;
use agy_audit::rules::RuleId;
use agy_audit::schema::Schema;
use common::*;
use prost::Message;

const DONE: &str = "CORTEX_STEP_STATUS_DONE";
const ERROR: &str = "CORTEX_STEP_STATUS_ERROR";
const P: &str = "/generic/result/payload";
const PATH: &str = "/work/app/src/main.rs";

/// `w` with argument `key` set on both the wrapper and its retained tool call.
fn with_arg(w: &Json, key: &str, value: Json) -> Json {
    let mut args: Json =
        serde_json::from_str(w["metadata"]["toolCall"]["argumentsJson"].as_str().unwrap()).unwrap();
    args[key] = value;
    let mut v = with(w, "/generic/args", rendered_args(&args));
    v["metadata"]["toolCall"]["argumentsJson"] = json!(args.to_string());
    v
}

/// `w` with argument `key` removed from both.
fn without_arg(w: &Json, key: &str) -> Json {
    let mut args: Json =
        serde_json::from_str(w["metadata"]["toolCall"]["argumentsJson"].as_str().unwrap()).unwrap();
    args.as_object_mut().unwrap().remove(key);
    let mut v = with(w, "/generic/args", rendered_args(&args));
    v["metadata"]["toolCall"]["argumentsJson"] = json!(args.to_string());
    v
}

fn grant() -> Json {
    json!({"permissionGrants": [{"action": "read_file", "allow": true, "target": PATH,
        "resource": {"action": "read_file", "target": PATH}}]})
}

fn interaction() -> Json {
    json!([{"request": {"permission": {"resource": {"action": "read_file", "target": PATH},
        "actionDescription": "Read the file"}},
        "response": {"permission": {"allow": true, "persistGrants": {}}}}])
}

// ---- ide225: read permission records --------------------------------------

fn read(args: Json, payload: Json) -> Json {
    modern(
        "read_file",
        DONE,
        &args,
        "ReadFile",
        &payload,
        "fn main() {}\n",
    )
}

fn plain_read() -> Json {
    read(
        json!({"AbsolutePath": PATH, "StartLine": 1, "EndLine": 4}),
        json!({"path": PATH, "startLine": 1, "endLine": 4, "outcome": "OUTCOME_COMPLETED"}),
    )
}

fn permission_read() -> Json {
    let mut w = plain_read();
    w["permissions"] = grant();
    w["completedInteractions"] = interaction();
    w
}

#[test]
fn ide225_read_keeps_both_permission_records_unchanged() {
    let s = schema();
    let w = permission_read();
    let (got, rule, p) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::ModernReadFile);
    assert!(p.rules().contains(&RuleId::ModernIde225ReadPermissions));
    assert!(!p.rules().contains(&RuleId::ModernIde225ByteOffset));
    let want = normalized_step(
        &s,
        &json!({"type": "CORTEX_STEP_TYPE_VIEW_FILE", "status": DONE, "metadata": w["metadata"],
            "permissions": grant(), "completedInteractions": interaction(),
            "viewFile": {"absolutePathUri": format!("file://{PATH}"), "startLine": 0, "endLine": 3,
                "content": "fn main() {}\n"}}),
    );
    assert_eq!(got, want);
    // a plain read gains no record
    let (got, _, p) = accept_one(&s, &plain_read());
    assert_eq!(got.get("permissions"), None);
    assert!(!p.rules().contains(&RuleId::ModernIde225ReadPermissions));
}

#[test]
fn ide225_read_permission_near_misses_fail() {
    let s = schema();
    let p1 = Some(RuleId::ModernPermission1);
    let w = permission_read();
    let grant_alone = without(&w, "/completedInteractions");
    let interaction_alone = without(&w, "/permissions");
    let requested = with(
        &w,
        "/requestedInteraction",
        json!({"permission": {"actionDescription": "read"}}),
    );
    for v in [grant_alone, interaction_alone, requested] {
        assert_refuses(&s, &v, Reason::ModernPermissionRecord, p1);
    }
    // other modern tools still refuse permission-bearing wrappers
    let cmd = modern(
        "run_command",
        DONE,
        &json!({"CommandLine": "ls", "Cwd": "/work"}),
        "RunCommand",
        &json!({"commandLine": "ls", "cwd": "/work", "outcome": "OUTCOME_COMPLETED"}),
        "a\n",
    );
    let mut cmd = with(&cmd, "/permissions", grant());
    cmd["completedInteractions"] = interaction();
    assert_refuses(&s, &cmd, Reason::ModernPermissionRecord, p1);
    let mut edit = artifact_edit();
    edit["permissions"] = grant();
    edit["completedInteractions"] = interaction();
    assert_refuses(&s, &edit, Reason::ModernPermissionRecord, p1);
    // the read's own bounds still apply
    assert_refuses(
        &s,
        &with(&w, "/status", json!(ERROR)),
        Reason::ModernStatus,
        Some(RuleId::ModernReadFile),
    );
}

// ---- ide225: ByteOffset=0 ---------------------------------------------------

fn offset_read() -> Json {
    read(
        json!({"AbsolutePath": PATH, "ByteOffset": 0}),
        json!({"path": PATH, "byteOffset": "0", "outcome": "OUTCOME_COMPLETED"}),
    )
}

#[test]
fn ide225_byte_offset_zero_reads_verify() {
    let s = schema();
    let w = offset_read();
    let (got, rule, p) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::ModernReadFile);
    assert!(p.rules().contains(&RuleId::ModernIde225ByteOffset));
    let want = normalized_step(
        &s,
        &json!({"type": "CORTEX_STEP_TYPE_VIEW_FILE", "status": DONE, "metadata": w["metadata"],
            "viewFile": {"absolutePathUri": format!("file://{PATH}"), "content": "fn main() {}\n"}}),
    );
    assert_eq!(got, want);
    // with a range too
    let ranged = read(
        json!({"AbsolutePath": PATH, "ByteOffset": 0, "StartLine": 2, "EndLine": 3}),
        json!({"path": PATH, "byteOffset": "0", "startLine": 2, "endLine": 3, "outcome": "OUTCOME_COMPLETED"}),
    );
    let (got, _, _) = accept_one(&s, &ranged);
    assert_eq!(got["viewFile"]["startLine"], json!(1));
    // and with both permission records
    let mut both = offset_read();
    both["permissions"] = grant();
    both["completedInteractions"] = interaction();
    let (_, _, p) = accept_one(&s, &both);
    assert!(p.rules().contains(&RuleId::ModernIde225ReadPermissions));
    assert!(p.rules().contains(&RuleId::ModernIde225ByteOffset));
}

#[test]
fn ide225_byte_offset_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ModernIde225ByteOffset);
    let w = offset_read();
    let cases: Vec<(Json, Reason)> = vec![
        (
            with(
                &with_arg(&w, "ByteOffset", json!(512)),
                &format!("{P}/byteOffset"),
                json!("512"),
            ),
            Reason::Ide225ByteOffset,
        ),
        (
            with(&w, &format!("{P}/byteOffset"), json!("3")),
            Reason::Ide225ByteOffset,
        ),
        (
            with_arg(&w, "ByteOffset", json!("0")),
            Reason::Ide225ByteOffset,
        ),
        (
            with(&w, "/generic/args/ByteOffset", json!("00")),
            Reason::Ide225ByteOffset,
        ),
        (
            with(&w, "/generic/args/ByteOffset", json!("-0")),
            Reason::Ide225ByteOffset,
        ),
        (
            without(&w, &format!("{P}/byteOffset")),
            Reason::Ide225ByteOffset,
        ),
        (without_arg(&w, "ByteOffset"), Reason::Ide225ByteOffset),
        (
            with(
                &w,
                "/metadata/toolCall/argumentsJson",
                json!(format!("{{\"AbsolutePath\":\"{PATH}\"}}")),
            ),
            Reason::ModernToolCallRepeat,
        ),
    ];
    for (v, reason) in cases {
        assert_refuses(&s, &v, reason, rule);
    }
    // the tools143 read bounds still apply
    assert_refuses(
        &s,
        &with_arg(&w, "Extra", json!(1)),
        Reason::ModernArguments,
        Some(RuleId::ModernReadFile),
    );
}

// ---- ide225: artifacts --------------------------------------------------------

const ART: &str = "/work/app/.gemini/brain/task.md";

fn meta_arg() -> Json {
    json!({"Summary": "Track the refactor", "UserFacing": true, "RequestFeedback": false})
}

fn artifact_create() -> Json {
    let args =
        json!({"ArtifactMetadata": meta_arg(), "CodeContent": "# Task\n", "TargetFile": ART});
    let payload = json!({"path": ART, "kind": "KIND_CREATE", "diff": "+# Task\n", "isArtifactFile": true,
        "artifactMetadata": {"summary": "Track the refactor", "updatedAt": "2026-11-01T10:00:05Z", "userFacing": true},
        "outcome": "OUTCOME_COMPLETED"});
    modern(
        "write_to_file",
        DONE,
        &args,
        "FileEdit",
        &payload,
        "Created task.md",
    )
}

fn artifact_edit() -> Json {
    let args =
        json!({"Instruction": "tick a box", "ReplacementContent": "- [x] a", "TargetFile": ART});
    let payload = json!({"path": ART, "kind": "KIND_EDIT", "diff": "-- [ ] a\n+- [x] a\n", "isArtifactFile": true,
        "outcome": "OUTCOME_COMPLETED"});
    modern(
        "replace_file_content",
        DONE,
        &args,
        "FileEdit",
        &payload,
        "Edited task.md",
    )
}

#[test]
fn ide225_artifacts_keep_their_flag_and_create_metadata() {
    let s = schema();
    let uri = format!("file://{ART}");
    let w = artifact_create();
    let (got, rule, p) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::ModernFileEdit);
    assert!(p.rules().contains(&RuleId::ModernIde225Artifact));
    let want = normalized_step(
        &s,
        &json!({"type": "CORTEX_STEP_TYPE_CODE_ACTION", "status": DONE, "metadata": w["metadata"],
            "codeAction": {"actionSpec": {"createFile": {"path": {"absoluteUri": uri}}},
                "actionResult": {"edit": {"absoluteUri": uri, "createFile": true, "unifiedDiff": "+# Task\n"}},
                "isArtifactFile": true,
                "artifactMetadata": {"summary": "Track the refactor", "updatedAt": "2026-11-01T10:00:05Z", "userFacing": true}}}),
    );
    assert_eq!(got, want);
    let w = artifact_edit();
    let (got, _, p) = accept_one(&s, &w);
    assert!(p.rules().contains(&RuleId::ModernIde225Artifact));
    let want = normalized_step(
        &s,
        &json!({"type": "CORTEX_STEP_TYPE_CODE_ACTION", "status": DONE, "metadata": w["metadata"],
            "codeAction": {"actionSpec": {"command": {"instruction": "tick a box", "isEdit": true, "file": {"absoluteUri": uri}}},
                "actionResult": {"edit": {"absoluteUri": uri, "unifiedDiff": "-- [ ] a\n+- [x] a\n"}},
                "isArtifactFile": true}}),
    );
    assert_eq!(got, want);
}

#[test]
fn ide225_artifact_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ModernIde225Artifact);
    let c = artifact_create();
    let e = artifact_edit();
    let mut extra_member = meta_arg();
    extra_member["ArtifactType"] = json!("task");
    let mut feedback = meta_arg();
    feedback["RequestFeedback"] = json!(true);
    let mut other_summary = meta_arg();
    other_summary["Summary"] = json!("Something else");
    let mut facing_string = meta_arg();
    facing_string["UserFacing"] = json!("true");
    let cases: Vec<(Json, Reason)> = vec![
        // missing artifact flags
        (
            without(&c, &format!("{P}/isArtifactFile")),
            Reason::Ide225ArtifactFlag,
        ),
        (
            without(&with(&e, &format!("{P}/artifactMetadata/summary"), json!("x")), &format!("{P}/isArtifactFile")),
            Reason::Ide225ArtifactFlag,
        ),
        // metadata on edits
        (
            with(&e, &format!("{P}/artifactMetadata/summary"), json!("x")),
            Reason::Ide225EditMetadata,
        ),
        (
            with_arg(&e, "ArtifactMetadata", meta_arg()),
            Reason::Ide225EditMetadata,
        ),
        // the argument and the payload
        (
            without_arg(&c, "ArtifactMetadata"),
            Reason::Ide225ArtifactMetadata,
        ),
        (
            without(&c, &format!("{P}/artifactMetadata")),
            Reason::Ide225ArtifactMetadata,
        ),
        (
            without(&c, &format!("{P}/artifactMetadata/updatedAt")),
            Reason::Ide225ArtifactMetadata,
        ),
        (
            with_arg(&c, "ArtifactMetadata", other_summary),
            Reason::Ide225ArtifactMetadata,
        ),
        (
            with_arg(&c, "ArtifactMetadata", facing_string),
            Reason::Ide225ArtifactMetadata,
        ),
        (
            with(&c, &format!("{P}/artifactMetadata/userFacing"), json!(false)),
            Reason::Ide225ArtifactMetadata,
        ),
        (
            with(
                &c,
                "/generic/args/ArtifactMetadata",
                json!("{\"Summary\": \"Track the refactor\", \"UserFacing\": true, \"RequestFeedback\": false}"),
            ),
            Reason::Ide225ArtifactMetadata,
        ),
        (
            with(
                &c,
                "/metadata/toolCall/argumentsJson",
                json!(format!("{{\"CodeContent\":\"# Task\\n\",\"TargetFile\":\"{ART}\"}}")),
            ),
            Reason::ModernToolCallRepeat,
        ),
        // RequestFeedback
        (
            with_arg(&c, "ArtifactMetadata", feedback),
            Reason::Ide225RequestFeedback,
        ),
        (
            with(&c, &format!("{P}/artifactMetadata/requestFeedback"), json!(true)),
            Reason::Ide225RequestFeedback,
        ),
        // unqualified metadata fields
        (
            with_arg(&c, "ArtifactMetadata", extra_member),
            Reason::Ide225MetadataField,
        ),
    ];
    for (v, reason) in cases {
        assert_refuses(&s, &v, reason, rule);
    }
    // a spaced (noncanonical) argument repeated in the tool call
    let spaced =
        "{\"Summary\": \"Track the refactor\", \"UserFacing\": true, \"RequestFeedback\": false}";
    let mut v = with(&c, "/generic/args/ArtifactMetadata", json!(spaced));
    let mut tc: Json =
        serde_json::from_str(c["metadata"]["toolCall"]["argumentsJson"].as_str().unwrap()).unwrap();
    tc["ArtifactMetadata"] = serde_json::from_str(spaced).unwrap();
    v["metadata"]["toolCall"]["argumentsJson"] = json!(tc.to_string());
    assert_refuses(&s, &v, Reason::Ide225ArtifactMetadata, rule);
    // a create flag alone stays a tools143 newly populated field
    let flag_only = without(
        &without_arg(&c, "ArtifactMetadata"),
        &format!("{P}/artifactMetadata"),
    );
    assert_refuses(
        &s,
        &flag_only,
        Reason::ModernPayloadField,
        Some(RuleId::ModernFileEdit),
    );
}

// ---- finish147: Finish ------------------------------------------------------------

fn finish() -> Json {
    let args = json!({"Passed": true, "Summary": "all green"});
    let payload = json!({"resultSchema": "{\"type\":\"object\",\"properties\":{\"Passed\":{\"type\":\"boolean\"}}}",
        "resultJson": "{\"Passed\":true,\"Summary\":\"all green\"}", "outcome": "OUTCOME_COMPLETED"});
    modern("finish", DONE, &args, "Finish", &payload, "Finished.")
}

#[test]
fn finish147_finish_calls_remain_generic() {
    let s = schema();
    let w = finish();
    let (got, rule, p) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::ModernFinish);
    assert!(p.rules().contains(&RuleId::ModernPermission1));
    assert_eq!(got, normalized_step(&s, &w));
    assert!(p.dropped().is_empty(), "{:?}", p.dropped());
}

#[test]
fn finish147_finish_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ModernFinish);
    let w = finish();
    let cases: Vec<(Json, Reason)> = vec![
        (
            without(&w, &format!("{P}/resultSchema")),
            Reason::FinishSchema,
        ),
        (
            with(&w, &format!("{P}/resultSchema"), json!("{}")),
            Reason::FinishSchema,
        ),
        (
            with(&w, &format!("{P}/resultSchema"), json!("[1]")),
            Reason::FinishSchema,
        ),
        (
            with(
                &w,
                &format!("{P}/resultJson"),
                json!("{\"Passed\":false,\"Summary\":\"all green\"}"),
            ),
            Reason::FinishResult,
        ),
        (
            with(&w, &format!("{P}/resultJson"), json!("{\"Passed\":true}")),
            Reason::FinishResult,
        ),
        (
            with(&w, &format!("{P}/resultJson"), json!("not json")),
            Reason::FinishResult,
        ),
        (
            with(
                &w,
                "/metadata/toolCall/argumentsJson",
                json!("{\"Passed\":true}"),
            ),
            Reason::ModernToolCallRepeat,
        ),
        // Both missed (the arguments differ from the tool call and from
        // result_json): the repeat is refused first, as before the bound was
        // executed by the dispatcher alone.
        (
            with(&w, "/generic/args/Passed", json!("false")),
            Reason::ModernToolCallRepeat,
        ),
        (with(&w, "/status", json!(ERROR)), Reason::ModernStatus),
        (
            with(&w, &format!("{P}/outcome"), json!("OUTCOME_FAILED")),
            Reason::ModernStatus,
        ),
        (
            with(&w, "/metadata/toolCall/name", json!("complete")),
            Reason::ModernTool,
        ),
        (
            with(
                &w,
                "/generic/result/stepRenderInfo",
                json!({"title": "Done"}),
            ),
            Reason::ModernWrapperField,
        ),
        (
            with(&w, "/taskDetails/id", json!("t")),
            Reason::ModernWrapperField,
        ),
    ];
    for (v, reason) in cases {
        assert_refuses(&s, &v, reason, rule);
    }
    assert_refuses(
        &s,
        &with(&w, "/permissions", grant()),
        Reason::ModernPermissionRecord,
        Some(RuleId::ModernPermission1),
    );
}

// ---- finish147: missing-file reads ----------------------------------------------

fn missing_file() -> Json {
    read(
        json!({"AbsolutePath": PATH}),
        json!({"path": PATH, "notFound": true, "outcome": "OUTCOME_COMPLETED"}),
    )
}

#[test]
fn finish147_missing_file_reads_remain_generic() {
    let s = schema();
    let w = missing_file();
    let (got, rule, _) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::ModernMissingFileRead);
    assert_eq!(got, normalized_step(&s, &w));
}

#[test]
fn finish147_missing_file_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ModernMissingFileRead);
    let w = missing_file();
    let cases: Vec<(Json, Reason)> = vec![
        (
            with(&w, &format!("{P}/content"), json!("x")),
            Reason::ModernPayloadField,
        ),
        (
            with(&w, &format!("{P}/startLine"), json!(1)),
            Reason::ModernPayloadField,
        ),
        (with_arg(&w, "StartLine", json!(1)), Reason::ModernArguments),
        (
            with_arg(&w, "AbsolutePath", json!("/work/other.rs")),
            Reason::ModernArguments,
        ),
        (
            with(&w, "/metadata/toolCall/argumentsJson", json!("{}")),
            Reason::ModernToolCallRepeat,
        ),
        (
            with(
                &with_arg(&w, "AbsolutePath", json!("/work/../etc")),
                &format!("{P}/path"),
                json!("/work/../etc"),
            ),
            Reason::ModernPath,
        ),
        (with(&w, "/status", json!(ERROR)), Reason::ModernStatus),
        (
            with(&w, "/error", json!({"shortError": "not found"})),
            Reason::ModernWrapperField,
        ),
    ];
    for (v, reason) in cases {
        assert_refuses(&s, &v, reason, rule);
    }
    let mut records = w.clone();
    records["permissions"] = grant();
    records["completedInteractions"] = interaction();
    assert_refuses(
        &s,
        &records,
        Reason::ModernPermissionRecord,
        Some(RuleId::ModernPermission1),
    );
}

// ---- replay147: image reads ----------------------------------------------------------

fn image(mime: &str, ext: &str) -> Json {
    let path = format!("/work/app/assets/logo.{ext}");
    // 6 bytes
    let media = json!({"mimeType": mime, "inlineData": "AAECAwQF"});
    read(
        json!({"AbsolutePath": path}),
        json!({"path": path, "media": [media], "numBytes": 6, "outcome": "OUTCOME_COMPLETED"}),
    )
    .pipe(|mut w| {
        w["generic"]["result"]["result"] = json!(format!("Read image {path} ({mime}, 6 bytes)"));
        w
    })
}

trait Pipe: Sized {
    fn pipe<T>(self, f: impl FnOnce(Self) -> T) -> T {
        f(self)
    }
}
impl Pipe for Json {}

#[test]
fn replay147_image_reads_copy_media_exactly() {
    let s = schema();
    for (mime, ext) in [
        ("image/jpeg", "jpg"),
        ("image/png", "png"),
        ("image/webp", "webp"),
    ] {
        let w = image(mime, ext);
        let (got, rule, p) = accept_one(&s, &w);
        assert_eq!(rule, RuleId::ModernImageRead);
        assert!(p.rules().contains(&RuleId::ModernSkillPath));
        let path = format!("/work/app/assets/logo.{ext}");
        let want = normalized_step(
            &s,
            &json!({"type": "CORTEX_STEP_TYPE_VIEW_FILE", "status": DONE, "metadata": w["metadata"],
                "viewFile": {"absolutePathUri": format!("file://{path}"),
                    "content": format!("Read image {path} ({mime}, 6 bytes)"),
                    "mediaData": {"mimeType": mime, "inlineData": "AAECAwQF"}, "numBytes": 6}}),
        );
        assert_eq!(got, want, "{mime}");
    }
}

#[test]
fn replay147_image_read_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::ModernImageRead);
    let w = image("image/png", "png");
    let m = format!("{P}/media/0");
    let cases: Vec<(Json, Reason)> = vec![
        (
            with_arg(&with_arg(&w, "StartLine", json!(1)), "EndLine", json!(9)),
            Reason::ModernRange,
        ),
        (with_arg(&w, "EndLine", json!(9)), Reason::ModernRange),
        (
            with(&w, &format!("{P}/startLine"), json!(1)),
            Reason::ModernRange,
        ),
        (
            with(
                &w,
                &format!("{P}/media/1"),
                json!({"mimeType": "image/png", "inlineData": "AAE="}),
            ),
            Reason::ImageReadMediaCount,
        ),
        (
            with(&w, &format!("{m}/mimeType"), json!("image/gif")),
            Reason::ImageReadMime,
        ),
        (
            with(&w, &format!("{m}/mimeType"), json!("image/PNG")),
            Reason::ImageReadMime,
        ),
        (
            with(
                &w,
                &format!("{m}/uri"),
                json!("https://example.com/logo.png"),
            ),
            Reason::ImageReadExternal,
        ),
        (
            without(&w, &format!("{m}/inlineData")),
            Reason::ImageReadExternal,
        ),
        (
            with(&w, &format!("{m}/description"), json!("a logo")),
            Reason::ModernPayloadField,
        ),
        (
            with(
                &w,
                "/generic/result/result",
                json!("Read image (image/jpeg)"),
            ),
            Reason::ImageReadText,
        ),
        (
            with(&w, &format!("{P}/numBytes"), json!(7)),
            Reason::ImageReadBytes,
        ),
        (
            with(
                &w,
                &format!("{P}/path"),
                json!("/work/app/assets/other.png"),
            ),
            Reason::ModernArguments,
        ),
        (
            with(&w, &format!("{P}/content"), json!("x")),
            Reason::ModernPayloadField,
        ),
        (with(&w, "/status", json!(ERROR)), Reason::ModernStatus),
        (
            with(
                &w,
                "/generic/result/media",
                json!([{"mimeType": "image/png", "inlineData": "AAE="}]),
            ),
            Reason::ModernWrapperField,
        ),
    ];
    for (v, reason) in cases {
        assert_refuses(&s, &v, reason, rule);
    }
    let mut records = w.clone();
    records["permissions"] = grant();
    records["completedInteractions"] = interaction();
    assert_refuses(
        &s,
        &records,
        Reason::ModernPermissionRecord,
        Some(RuleId::ModernPermission1),
    );
}

// ---- replay147: command wait forms ------------------------------------------------------

fn command(cmd: &str, wait: Option<Json>) -> Json {
    let mut args = json!({"CommandLine": cmd, "Cwd": "/work/app"});
    if let Some(w) = wait {
        args["WaitMsBeforeAsync"] = w;
    }
    let payload = json!({"commandLine": cmd, "cwd": "/work/app", "exitCode": 0, "outcome": "OUTCOME_COMPLETED"});
    modern("run_command", DONE, &args, "RunCommand", &payload, "ok\n")
}

/// A trajectory of three modern commands (waits 5000, 300 and 0) and a
/// tools144 canceled background command, its projection and the copied
/// form's ordinary JSON.
fn wait_trajectory() -> (
    Schema,
    prost_reflect::DynamicMessage,
    agy_audit::project::Projection,
    Json,
) {
    let s = schema();
    let steps = [
        command("cargo build", Some(json!(5000))),
        command("cargo test", Some(json!(300))),
        command("ls", Some(json!(0))),
        command("pwd", None),
    ];
    let t = trajectory_of(&s, &conv_with(&s, &steps));
    let p = agy_audit::project::project_message(&s, &t).expect("projects");
    let copied = agy_audit::schema::to_daemon_json(&p.ordinary(&t));
    (s, t, p, copied)
}

fn compare(
    s: &Schema,
    t: &prost_reflect::DynamicMessage,
    p: &agy_audit::project::Projection,
    response: &Json,
) -> Result<(), agy_audit::compare::Mismatch> {
    let mut t = t.clone();
    let mut p = p.clone();
    let on_wire = wire_answer(s, &t, &p, response);
    let r =
        agy_audit::compare::compare_ordinary_projection(s, &mut p, &mut t, &response.to_string());
    // The sweep's comparison over the stored encoding, where it answers,
    // answers the same.
    if let Some(w) = on_wire {
        assert_eq!(w, r, "{response}");
    }
    // the comparison leaves the projection in the copied form
    let fresh = agy_audit::project::project_message(s, &t).expect("projects");
    assert_eq!(
        agy_audit::schema::to_daemon_json(&p.ordinary(&t)),
        agy_audit::schema::to_daemon_json(&fresh.ordinary(&t))
    );
    r.map(|_| ())
}

/// The sweep's ordinary comparison over the stored encoding
/// (`compare::ordinary_on_wire`): `None` where it leaves the answer to the
/// tree.
fn wire_answer(
    s: &Schema,
    t: &prost_reflect::DynamicMessage,
    p: &agy_audit::project::Projection,
    response: &Json,
) -> Option<Result<agy_audit::compare::value::RpcOnly, agy_audit::compare::Mismatch>> {
    use prost::Message;
    let encoding = bytes::Bytes::from(t.encode_to_vec());
    let wire = agy_audit::source::wire_trajectory::WireTrajectory::index(&s.names, encoding)
        .expect("indexes");
    agy_audit::compare::ordinary_on_wire(p, &wire, &response.to_string())
}

const WAIT: &str = "/runCommand/waitMsBeforeAsync";

fn omitted(copied: &Json) -> Json {
    let mut o = copied.clone();
    for i in 0..4 {
        remove_at(&mut o, &format!("/steps/{i}{WAIT}"));
    }
    o
}

#[test]
fn replay147_projection_copies_each_stored_wait() {
    let (_, _, p, copied) = wait_trajectory();
    assert_eq!(
        copied.pointer(&format!("/steps/0{WAIT}")),
        Some(&json!("5000"))
    );
    assert_eq!(
        copied.pointer(&format!("/steps/1{WAIT}")),
        Some(&json!("300"))
    );
    assert_eq!(
        copied.pointer(&format!("/steps/2{WAIT}")),
        None,
        "zero is the default"
    );
    assert_eq!(copied.pointer(&format!("/steps/3{WAIT}")), None);
    // The omitted form is an alternative for the whole trajectory, as data:
    // the four RunCommand steps, none of which may spell a wait in it.
    let alts = p.alternatives();
    assert_eq!(alts.len(), 1);
    assert_eq!(alts[0].kind, agy_audit::project::Alternative::WaitsOmitted);
    let steps: Vec<usize> = alts[0].unspelled.iter().map(|u| u.step).collect();
    assert_eq!(steps, vec![0, 1, 2, 3]);
    assert!(p.rules().contains(&RuleId::ModernReplayWaits));
}

#[test]
fn replay147_either_complete_form_verifies() {
    let (s, t, p, copied) = wait_trajectory();
    compare(&s, &t, &p, &copied).expect("copied form");
    compare(&s, &t, &p, &omitted(&copied)).expect("omitted form");
    // The sweep confirms either form over the stored encoding, no tree.
    for form in [copied.clone(), omitted(&copied)] {
        assert!(
            matches!(wire_answer(&s, &t, &p, &form), Some(Ok(_))),
            "{form}"
        );
    }
    // an explicit zero on a zero wait selects the copied form, which matches
    let mut zero = copied.clone();
    set_at(&mut zero, &format!("/steps/2{WAIT}"), json!("0"));
    compare(&s, &t, &p, &zero).expect("copied form with an explicit zero");
    // waits as JSON numbers and proto names are the same values
    let mut numbers = copied.clone();
    set_at(&mut numbers, &format!("/steps/0{WAIT}"), json!(5000));
    compare(&s, &t, &p, &numbers).expect("64-bit integer as a number");
}

#[test]
fn replay147_mixed_forms_and_altered_values_fail() {
    let (s, t, p, copied) = wait_trajectory();
    let mut mixed = copied.clone();
    remove_at(&mut mixed, &format!("/steps/1{WAIT}"));
    assert!(compare(&s, &t, &p, &mixed).is_err(), "mixed forms");
    let mut altered = copied.clone();
    set_at(&mut altered, &format!("/steps/0{WAIT}"), json!("5001"));
    assert!(compare(&s, &t, &p, &altered).is_err(), "altered value");
    // an explicit zero where the others are omitted: mixed forms
    let mut zero_in_omitted = omitted(&copied);
    set_at(&mut zero_in_omitted, &format!("/steps/2{WAIT}"), json!("0"));
    let m = compare(&s, &t, &p, &zero_in_omitted).expect_err("explicit zero selects copied");
    assert!(
        m.paths[0].starts_with("steps[2].runCommand.waitMsBeforeAsync"),
        "{m:?}"
    );
    // a zero hiding a nonzero source value
    let mut hidden = omitted(&copied);
    set_at(&mut hidden, &format!("/steps/0{WAIT}"), json!("0"));
    assert!(compare(&s, &t, &p, &hidden).is_err(), "zero over 5000");
    // the same in proto names
    let mut proto = omitted(&copied);
    set_at(
        &mut proto,
        "/steps/2/runCommand/wait_ms_before_async",
        json!("0"),
    );
    assert!(
        compare(&s, &t, &p, &proto).is_err(),
        "proto-name explicit zero"
    );
}

#[test]
fn replay147_noncanonical_waits_are_refused() {
    let s = schema();
    for bad in [json!("05000"), json!(-1), json!("5000"), json!(1.5)] {
        assert_refuses(
            &s,
            &command("ls", Some(bad)),
            Reason::ModernArguments,
            Some(RuleId::ModernRunCommand),
        );
    }
}

#[test]
fn replay147_offline_export_keeps_the_stored_waits() {
    let s = schema();
    let (_root, dir) = store();
    let db = dir.join(format!("{CASCADE}.db"));
    let conv = conv_with(
        &s,
        &[
            command("cargo build", Some(json!(5000))),
            command("cargo test", Some(json!(300))),
        ],
    );
    write_db(&s, &db, &conv, |_| {});
    let o = run(&["export-offline", db.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Json = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["steps"][0]["runCommand"]["waitMsBeforeAsync"], "5000");
    assert_eq!(v["steps"][1]["runCommand"]["waitMsBeforeAsync"], "300");
    assert!(v["agyReader"]["offline"]["profile"]
        .as_str()
        .unwrap()
        .ends_with("-ide225-options145-compaction146-skill146-finish147-replay147"));
}

// ---- the name table ------------------------------------------------------------------

#[test]
fn a_renamed_payload_field_refuses_naming_the_declaration() {
    let modeled = schema();
    let cases: Vec<(&str, &str, Json, RuleId)> = vec![
        ("Finish", "result_schema", finish(), RuleId::ModernFinish),
        ("Finish", "result_json", finish(), RuleId::ModernFinish),
        (
            "ArtifactMetadata",
            "summary",
            artifact_create(),
            RuleId::ModernIde225Artifact,
        ),
        (
            "ArtifactMetadata",
            "request_feedback",
            artifact_edit(),
            RuleId::ModernIde225Artifact,
        ),
        (
            "ReadFile",
            "byte_offset",
            offset_read(),
            RuleId::ModernReadFile,
        ),
        (
            "ReadFile",
            "media",
            image("image/png", "png"),
            RuleId::ModernReadFile,
        ),
        (
            "ReadFile",
            "not_found",
            missing_file(),
            RuleId::ModernReadFile,
        ),
        (
            "FileEdit",
            "is_artifact_file",
            artifact_edit(),
            RuleId::ModernFileEdit,
        ),
    ];
    for (message, field, step, rule) in cases {
        let renamed = renamed_schema(message, field, "renamed_field");
        let t = trajectory_of(&modeled, &conv_with(&modeled, &[step]));
        let bytes = t.encode_to_vec();
        let t2 = prost_reflect::DynamicMessage::decode(
            renamed.names.trajectory.clone(),
            bytes.as_slice(),
        );
        // a renamed field keeps its number, so the bytes still decode
        let t2 = t2.expect("decode under the renamed set");
        let r = match agy_audit::project::project_message(&renamed, &t2) {
            Ok(_) => panic!("{message}.{field}: projected under a renamed set"),
            Err(r) => r,
        };
        assert_eq!(r.kind, Reason::ModernDeclaration, "{message}.{field}: {r}");
        assert_eq!(r.rule, Some(rule), "{message}.{field}: {r}");
        assert_eq!(
            r.detail,
            format!("field exa.cortex.core.tools.{message}.{field}"),
            "{r}"
        );
    }
}

// ---- the corpus's recipes --------------------------------------------------------------

fn corpus_step(recipe: agy_corpus::corpus::plan::Recipe) -> agy_corpus::corpus::content::StepJson {
    use agy_corpus::corpus::plan::{plan, NearMiss, PlanOptions, Recipe, StepKind};
    let base = plan(&PlanOptions {
        conversations: 12,
        near_miss_rate: 0.0,
        ..PlanOptions::default()
    });
    let mut cp = base.conversations[0].clone();
    cp.steps = vec![
        StepKind::UserInput,
        StepKind::Planner { tool_call: true },
        StepKind::Tool(recipe),
        StepKind::Planner { tool_call: false },
    ];
    cp.planner50.clear();
    cp.near_miss = match recipe {
        Recipe::Unqualified(k) => Some(NearMiss::Unqualified(k)),
        _ => None,
    };
    let cj = agy_corpus::corpus::content::build(&cp, 1);
    cj.steps[2].clone()
}

/// Each new accepted recipe of the generator is presented by the reader
/// exactly as the generator's daemon view presents it (the generator never
/// calls the reader; this test compares the two).
#[test]
fn corpus_recipes_agree_with_the_projection() {
    use agy_corpus::corpus::plan::{ModernKind as M, Recipe};
    let s = schema();
    let kinds = [
        M::Ide225Read {
            permission: true,
            offset: false,
        },
        M::Ide225Read {
            permission: false,
            offset: true,
        },
        M::ArtifactCreate,
        M::ArtifactEdit,
        M::Finish,
        M::MissingFileRead,
        M::ReplayCopiedWait,
        M::ImageRead(0),
        M::ImageRead(1),
        M::ImageRead(2),
    ];
    for k in kinds {
        let st = corpus_step(Recipe::Modern(k));
        let (got, rule, p) = accept_one(&s, &st.stored);
        assert_eq!(rule.id(), k.rule().id(), "{k:?}");
        let mut want_rules: Vec<&str> = k.extra_rules().iter().map(|r| r.id()).collect();
        want_rules.push(rule.id());
        let got_rules: Vec<&str> = p.rules().iter().map(|r| r.id()).collect();
        for r in want_rules {
            assert!(got_rules.contains(&r), "{k:?}: {r} in {got_rules:?}");
        }
        let want = normalized_step(&s, st.presented.as_ref().unwrap_or(&st.stored));
        if k == M::ReplayCopiedWait {
            assert!(want["runCommand"].get("waitMsBeforeAsync").is_some());
        }
        assert_eq!(got, want, "{k:?}");
    }
}

/// Each issue-27 near-miss recipe refuses under the rule it names, with its
/// named reason.
#[test]
fn corpus_near_misses_refuse_under_their_rule() {
    use agy_corpus::corpus::plan::{Recipe, UnqKind as U};
    let s = schema();
    let kinds = [
        (U::Ide225OffsetNonzero, Reason::Ide225ByteOffset),
        (U::Ide225OffsetNotRepeated, Reason::ModernToolCallRepeat),
        (U::Ide225ArtifactNoFlag, Reason::Ide225ArtifactFlag),
        (U::Ide225EditMetadata, Reason::Ide225EditMetadata),
        (U::Ide225MetadataField, Reason::Ide225MetadataField),
        (U::Ide225RequestFeedback, Reason::Ide225RequestFeedback),
        (U::Ide225MetadataMismatch, Reason::Ide225ArtifactMetadata),
        (U::Ide225InteractionAlone, Reason::ModernPermissionRecord),
        (U::FinishNoSchema, Reason::FinishSchema),
        (U::FinishResultMismatch, Reason::FinishResult),
        (U::MissingFileContent, Reason::ModernPayloadField),
        (U::ImageReadRange, Reason::ModernRange),
        (U::ImageReadTwoMedia, Reason::ImageReadMediaCount),
        (U::ImageReadGif, Reason::ImageReadMime),
        (U::ImageReadExternalUri, Reason::ImageReadExternal),
        (U::ImageReadTextMime, Reason::ImageReadText),
        (U::ImageReadByteCount, Reason::ImageReadBytes),
        (U::ImageReadPermission, Reason::ModernPermissionRecord),
        (U::ReplayWaitNoncanonical, Reason::ModernArguments),
    ];
    for (k, reason) in kinds {
        let st = corpus_step(Recipe::Unqualified(k));
        let r = refuse_one(&s, &st.stored);
        assert_eq!(r.rule.map(|r| r.id()), Some(k.rule().id()), "{k:?}: {r}");
        assert_eq!(r.kind, reason, "{k:?}: {r}");
    }
}

#[test]
fn the_default_corpus_carries_the_issue_27_shapes() {
    use agy_corpus::corpus::plan::{plan, ModernKind as M, PlanOptions, Recipe, StepKind};
    let p = plan(&PlanOptions::default());
    assert_eq!(p.conversations.len(), 405);
    let mut count = std::collections::BTreeMap::<String, usize>::new();
    let mut ide_sources = 0;
    for c in &p.conversations {
        let ide = c.steps.iter().any(|st| {
            matches!(
                st,
                StepKind::Tool(Recipe::Modern(
                    M::Ide225Read { .. } | M::ArtifactCreate | M::ArtifactEdit
                ))
            )
        });
        if ide {
            assert_eq!(c.trajectory_source(), 1, "{}: IDE source", c.id);
            ide_sources += 1;
        }
        for st in &c.steps {
            if let StepKind::Tool(Recipe::Modern(m)) = st {
                let key = match m {
                    M::Ide225Read {
                        permission: true, ..
                    } => "permission read",
                    M::Ide225Read { offset: true, .. } => "offset read",
                    M::ArtifactCreate => "artifact create",
                    M::ArtifactEdit => "artifact edit",
                    M::Finish => "finish",
                    M::MissingFileRead => "missing-file read",
                    M::ReplayCopiedWait => "copied waits",
                    M::RunCommand { .. } => "omitted waits",
                    M::ImageRead(0) => "jpeg read",
                    M::ImageRead(1) => "png read",
                    M::ImageRead(_) => "webp read",
                    _ => continue,
                };
                *count.entry(key.into()).or_default() += 1;
            }
        }
    }
    let at_least = [
        ("permission read", 3),
        ("offset read", 10),
        ("artifact create", 7),
        ("artifact edit", 6),
        ("finish", 3),
        ("missing-file read", 3),
        ("copied waits", 3),
        ("omitted waits", 3),
        ("jpeg read", 1),
        ("png read", 1),
        ("webp read", 1),
    ];
    assert!(ide_sources >= 3, "{ide_sources} IDE-source conversations");
    for (k, n) in at_least {
        assert!(count.get(k).copied().unwrap_or(0) >= n, "{k}: {count:?}");
    }
}
