//! The strict decoder: unknown fields, enums, UTF-8, depth, trailing bytes,
//! Any payloads and map entries, each accepted shape and its near-misses.
//! Trajectories are sealed as legacy `.pb` sources, whose plaintext is the
//! Trajectory encoding itself, so every byte placement is exact.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::schema::Schema;
use agy_audit::source::DecodedSource;
use agy_audit::verdict::ReasonClass;
use common::*;

fn read_plain(s: &Schema, plaintext: &[u8]) -> DecodedSource {
    read_sealed(s, plaintext, false)
}

fn read_plain_opts(s: &Schema, plaintext: &[u8], collect_all: bool) -> DecodedSource {
    read_sealed(s, plaintext, collect_all)
}

fn refused(src: &DecodedSource, class: ReasonClass, display: &str) {
    let r = src
        .reason()
        .unwrap_or_else(|| panic!("expected {class}, got a qualified source"));
    assert_eq!(r.class, class, "{r}");
    assert_eq!(r.to_string(), display);
}

/// An unknown-field refusal: `head` (location, number, wire type, message)
/// and the suggestion to load the user's own build's descriptors, then the
/// embedded schema's hint.
fn hint(head: &str) -> String {
    format!("{head}: the schema in use does not define it; if your agy build does, audit with its descriptors (--schema FILE); the embedded schema models public descriptors only: `agy-audit schema extract --installed`")
}

fn tnum(s: &Schema, f: &str) -> u32 {
    num(s, "gemini_coder.Trajectory", f)
}

#[test]
fn accepted_legacy_source_decodes() {
    let s = schema();
    let src = read_plain(&s, &Conv::basic(&s).trajectory_bytes(&s));
    assert!(src.qualified(), "{:?}", src.refusals);
    assert_eq!(src.steps, 3);
    assert!(src.profile.starts_with("legacy-aes256gcm-v1-"));
}

#[test]
fn unknown_fields_at_every_depth_name_their_path() {
    let s = schema();
    let base = Conv::basic(&s).trajectory_bytes(&s);
    let steps = tnum(&s, "steps");
    let meta = num(&s, "gemini_coder.Step", "metadata");
    let usage = num(&s, "exa.cortex_pb.CortexStepMetadata", "model_usage");
    let top = insert_raw(&base, &[], &unknown_varint(99, 1));
    refused(
        &read_plain(&s, &top),
        ReasonClass::UnknownField,
        &hint("unknown field 99 (varint) in gemini_coder.Trajectory"),
    );
    let deep = insert_raw(
        &base,
        &[(steps, 1), (meta, 0), (usage, 0)],
        &len_field(77, b"x"),
    );
    refused(
        &read_plain(&s, &deep),
        ReasonClass::UnknownField,
        &hint("steps[1].metadata.modelUsage: unknown field 77 (length-delimited) in exa.codeium_common_pb.ModelUsageStats"),
    );
    let key = |n: u64, wt: u64| {
        let mut b = Vec::new();
        agy_audit::source::wire::put_varint(&mut b, (n << 3) | wt);
        b
    };
    let mut f32 = key(1000, 5);
    f32.extend([1, 2, 3, 4]);
    let fixed = insert_raw(&base, &[(steps, 0)], &f32);
    refused(
        &read_plain(&s, &fixed),
        ReasonClass::UnknownField,
        &hint("steps[0]: unknown field 1000 (fixed32) in gemini_coder.Step"),
    );
    let mut g = key(1002, 3);
    g.extend(key(1002, 4));
    let group = insert_raw(&base, &[(steps, 2)], &g);
    refused(
        &read_plain(&s, &group),
        ReasonClass::UnknownField,
        &hint("steps[2]: unknown field 1002 (start-group) in gemini_coder.Step"),
    );
}

#[test]
fn allow_unknown_lists_every_unknown_field_with_its_bytes() {
    let s = schema();
    let base = Conv::basic(&s).trajectory_bytes(&s);
    let steps = tnum(&s, "steps");
    let two = insert_raw(
        &insert_raw(&base, &[(steps, 0)], &unknown_varint(90, 5)),
        &[(steps, 2)],
        &unknown_varint(91, 6),
    );
    let src = read_plain_opts(&s, &two, true);
    assert_eq!(src.refusals.len(), 2);
    let paths: Vec<_> = src
        .unknown_fields
        .iter()
        .map(|u| (u.path.as_str(), u.field, u.bytes.as_str()))
        .collect();
    assert_eq!(
        paths,
        vec![("steps[0]", 90, "d00505"), ("steps[2]", 91, "d80506")]
    );
    let json = agy_audit::export::export_json(&src, None).unwrap();
    assert_eq!(json["agyReader"]["offline"]["complete"], false);
    assert_eq!(json["agyReader"]["unknownFields"][1]["path"], "steps[2]");
}

#[test]
fn unknown_enum_value_is_refused() {
    let s = schema();
    let mut conv = Conv::basic(&s);
    let status = num(&s, "gemini_coder.Step", "status");
    conv.steps[0] = insert_raw(&conv.steps[0], &[], &unknown_varint(status, 10)); // 10 HALTED: not in the schema
    refused(
        &read_plain(&s, &conv.trajectory_bytes(&s)),
        ReasonClass::UnknownEnum,
        "steps[0].status: unknown enum value 10 for exa.cortex_pb.CortexStepStatus",
    );
}

/// The basic conversation with invalid UTF-8 in step 0's user response.
fn invalid_user_response(s: &Schema) -> Vec<u8> {
    let mut conv = Conv::basic(s);
    let ui = num(s, "gemini_coder.Step", "user_input");
    let resp = num(s, "exa.cortex_pb.CortexStepUserInput", "user_response");
    conv.steps[0] = insert_raw(&conv.steps[0], &[(ui, 0)], &len_field(resp, &[0xff, 0xfe]));
    conv.trajectory_bytes(s)
}

#[test]
fn invalid_utf8_is_refused() {
    let s = schema();
    refused(
        &read_plain(&s, &invalid_user_response(&s)),
        ReasonClass::InvalidUtf8,
        "steps[0].userInput.userResponse: field user_response is not valid UTF-8",
    );
}

#[test]
fn invalid_utf8_is_the_reason_even_before_a_later_refusal() {
    // The reader leaves plain strings' UTF-8 to the decoder and rescans in
    // full when anything is refused: the first refusal is still the string.
    let s = schema();
    let bytes = insert_raw(&invalid_user_response(&s), &[], &unknown_varint(99, 1));
    let src = read_plain(&s, &bytes);
    refused(
        &src,
        ReasonClass::InvalidUtf8,
        "steps[0].userInput.userResponse: field user_response is not valid UTF-8",
    );
    assert_eq!(src.refusals.len(), 1, "{:?}", src.refusals);
    // Collecting every refusal lists both, in order.
    let all = read_plain_opts(&s, &bytes, true);
    let classes: Vec<_> = all.refusals.iter().map(|r| r.class).collect();
    assert_eq!(
        classes,
        [ReasonClass::InvalidUtf8, ReasonClass::UnknownField],
        "{:?}",
        all.refusals
    );
}

#[test]
fn trailing_garbage_and_truncation_are_malformed() {
    let s = schema();
    let base = Conv::basic(&s).trajectory_bytes(&s);
    let mut trailing = base.clone();
    trailing.push(0x80);
    let r = read_plain(&s, &trailing);
    assert_eq!(r.reason().unwrap().class, ReasonClass::MalformedProtobuf);
    let r = read_plain(&s, &base[..base.len() - 3]);
    assert_eq!(r.reason().unwrap().class, ReasonClass::MalformedProtobuf);
}

#[test]
fn wire_type_mismatch_is_refused() {
    let s = schema();
    let mut conv = Conv::basic(&s);
    let ui = num(&s, "gemini_coder.Step", "user_input");
    let resp = num(&s, "exa.cortex_pb.CortexStepUserInput", "user_response");
    conv.steps[0] = insert_raw(&conv.steps[0], &[(ui, 0)], &unknown_varint(resp, 1));
    let r = read_plain(&s, &conv.trajectory_bytes(&s));
    let r = r.reason().unwrap();
    assert_eq!(r.class, ReasonClass::MalformedProtobuf);
    assert_eq!(r.location, "steps[0].userInput.userResponse");
}

#[test]
fn recursion_past_the_limit_is_refused_and_within_is_accepted() {
    let s = schema();
    // AgentDefinition.cascade_config → CascadeConfig.planner_config →
    // CascadePlannerConfig.customization_config → agent_definitions → ... nests without bound.
    let cc = num(&s, "exa.cortex_pb.CascadeConfig", "planner_config");
    let pc = num(
        &s,
        "exa.cortex_pb.CascadePlannerConfig",
        "customization_config",
    );
    let ad = num(&s, "exa.cortex_pb.CustomizationConfig", "agent_definitions");
    let dc = num(&s, "exa.cortex_pb.AgentDefinition", "cascade_config");
    let exec_cc = num(&s, "exa.cortex_pb.ExecutorMetadata", "cascade_config");
    let nest = |levels: usize| {
        let mut inner: Vec<u8> = Vec::new();
        for _ in 0..levels {
            inner = len_field(dc, &len_field(cc, &len_field(pc, &len_field(ad, &inner))));
        }
        // inner is an AgentDefinition body chain; wrap in CascadeConfig ... ExecutorMetadata
        let cascade = len_field(cc, &len_field(pc, &len_field(ad, &inner)));
        let exec = len_field(exec_cc, &cascade);
        let mut t = Conv::basic(&s).trajectory_bytes(&s);
        t.extend(len_field(tnum(&s, "executor_metadatas"), &exec));
        t
    };
    let ok = read_plain(&s, &nest(20));
    assert!(ok.qualified(), "{:?}", ok.refusals);
    let deep = read_plain(&s, &nest(30));
    assert_eq!(deep.reason().unwrap().class, ReasonClass::RecursionLimit);
}

fn generic_with_payload(s: &Schema, any_json: &str) -> Vec<u8> {
    step(
        s,
        &format!(
            r#"{{"type":"CORTEX_STEP_TYPE_GENERIC","status":"CORTEX_STEP_STATUS_DONE",
            "metadata":{{"toolCall":{{"id":"call_3","name":"run_command"}}}},
            "generic":{{"args":{{"CommandLine":"\"ls\""}},"result":{{"result":"a b","payload":{any_json}}}}}}}"#
        ),
    )
}

#[test]
fn any_payloads_are_walked_by_type_url() {
    let s = schema();
    let mut conv = Conv::basic(&s);
    conv.steps.push(generic_with_payload(
        &s,
        r#"{"@type":"type.googleapis.com/gemini_coder.Step","type":"CORTEX_STEP_TYPE_RUN_COMMAND","status":"CORTEX_STEP_STATUS_DONE","runCommand":{"commandLine":"ls","combinedOutput":{"full":"a b"}}}"#,
    ));
    let ok = conv.trajectory_bytes(&s);
    assert!(read_plain(&s, &ok).qualified());
    // An unknown field inside the embedded Step is found and named.
    let steps = tnum(&s, "steps");
    let generic = num(&s, "gemini_coder.Step", "generic");
    let result = num(&s, "exa.cortex_pb.CortexStepGeneric", "result");
    let payload = num(&s, "exa.cortex_pb.GenericStepResult", "payload");
    let step3 = agy_audit::source::wire::FieldIter::new(&ok)
        .filter_map(Result::ok)
        .filter(|f| f.number == steps)
        .nth(3)
        .unwrap()
        .value
        .to_vec();
    let any_bytes = {
        let g = agy_audit::source::wire::FieldIter::new(&step3)
            .filter_map(Result::ok)
            .find(|f| f.number == generic)
            .unwrap()
            .value
            .to_vec();
        let r = agy_audit::source::wire::FieldIter::new(&g)
            .filter_map(Result::ok)
            .find(|f| f.number == result)
            .unwrap()
            .value
            .to_vec();
        agy_audit::source::wire::FieldIter::new(&r)
            .filter_map(Result::ok)
            .find(|f| f.number == payload)
            .unwrap()
            .value
            .to_vec()
    };
    let value = agy_audit::source::wire::FieldIter::new(&any_bytes)
        .filter_map(Result::ok)
        .find(|f| f.number == 2)
        .unwrap()
        .value
        .to_vec();
    // The basic conversation plus a GENERIC step whose result payload is
    // the Any of `url` and `value`.
    let with_any = |url: &[u8], value: &[u8]| {
        let mut any = len_field(1, url);
        any.extend(len_field(2, value));
        let mut c = Conv::basic(&s);
        c.steps.push(insert_raw(
            &step(
                &s,
                r#"{"type":"CORTEX_STEP_TYPE_GENERIC","status":"CORTEX_STEP_STATUS_DONE"}"#,
            ),
            &[(generic, 0), (result, 0)],
            &len_field(payload, &any),
        ));
        c.trajectory_bytes(&s)
    };
    let c2 = with_any(
        b"type.googleapis.com/gemini_coder.Step",
        &insert_raw(&value, &[], &unknown_varint(63, 1)),
    );
    refused(
        &read_plain(&s, &c2),
        ReasonClass::UnknownField,
        &hint("steps[3].generic.result.payload(gemini_coder.Step): unknown field 63 (varint) in gemini_coder.Step"),
    );
    // An unknown type URL is unknown.
    let c3 = with_any(b"type.googleapis.com/exa.cortex.core.tools.Mystery", b"");
    refused(
        &read_plain(&s, &c3),
        ReasonClass::UnknownAnyType,
        "steps[3].generic.result.payload: unknown Any type URL `type.googleapis.com/exa.cortex.core.tools.Mystery`",
    );
    // A modeled modern payload decodes by its type URL.
    let mut c4 = Conv::basic(&s);
    c4.steps.push(generic_with_payload(&s, r#"{"@type":"type.googleapis.com/exa.cortex.core.tools.RunCommand","commandLine":"ls","output":"a b"}"#));
    assert!(read_plain(&s, &c4.trajectory_bytes(&s)).qualified());
    // Invalid UTF-8 inside the payload is refused by the scan itself: the
    // trajectory's decoder never looks inside an Any.
    let ui = num(&s, "gemini_coder.Step", "user_input");
    let resp = num(&s, "exa.cortex_pb.CortexStepUserInput", "user_response");
    let c5 = with_any(
        b"type.googleapis.com/gemini_coder.Step",
        &insert_raw(&value, &[], &len_field(ui, &len_field(resp, &[0xff, 0xfe]))),
    );
    refused(
        &read_plain(&s, &c5),
        ReasonClass::InvalidUtf8,
        "steps[3].generic.result.payload(gemini_coder.Step).userInput.userResponse: field user_response is not valid UTF-8",
    );
}

/// A generator metadata row whose planner carries a per-tool map built from raw entries.
fn per_tool_conv(s: &Schema, entries: &[Vec<u8>], split: bool) -> Vec<u8> {
    let planner = num(
        s,
        "exa.cortex_pb.CortexStepGeneratorMetadata",
        "planner_config",
    );
    let tool_config = num(s, "exa.cortex_pb.CascadePlannerConfig", "tool_config");
    let tool_output = num(s, "exa.cortex_pb.CascadeToolConfig", "tool_output");
    let per_tool = num(s, "exa.cortex_pb.ToolOutputConfig", "per_tool");
    let mut gen = Vec::new();
    if split {
        // The enclosing singular ToolOutputConfig occurs twice: its maps merge.
        for e in entries {
            gen.extend(len_field(
                planner,
                &len_field(
                    tool_config,
                    &len_field(tool_output, &len_field(per_tool, e)),
                ),
            ));
        }
    } else {
        let mut map = Vec::new();
        for e in entries {
            map.extend(len_field(per_tool, e));
        }
        gen.extend(len_field(
            planner,
            &len_field(tool_config, &len_field(tool_output, &map)),
        ));
    }
    let mut t = Conv::basic(s).trajectory_bytes(s);
    t.extend(len_field(tnum(s, "generator_metadata"), &gen));
    t
}

fn entry(key: &str, value: Option<Vec<u8>>) -> Vec<u8> {
    let mut e = len_field(1, key.as_bytes());
    if let Some(v) = value {
        e.extend(len_field(2, &v));
    }
    e
}

#[test]
fn per_tool_map_accepts_absent_zero_negative_positive_and_missing_members() {
    let s = schema();
    let limit = unknown_varint(1, 4096); // ToolOutputOverride.max_output_chars = 4096
    let negative = unknown_varint(1, u64::MAX); // -1 as int32 varint
    let t = per_tool_conv(
        &s,
        &[
            entry("run_command", Some(limit)),
            entry("view_file", Some(unknown_varint(1, 0))),
            entry("grep_search", Some(negative)),
            entry("list_dir", Some(vec![])),
            entry("find_by_name", None),
            len_field(2, &unknown_varint(1, 7)), // missing key: the default "" key
        ],
        false,
    );
    let src = read_plain(&s, &t);
    assert!(src.qualified(), "{:?}", src.refusals);
}

#[test]
fn per_tool_map_near_misses_are_refused_on_the_wire() {
    let s = schema();
    let ok = || Some(unknown_varint(1, 1));
    let cases: Vec<(Vec<Vec<u8>>, bool, &str)> = vec![
        (
            vec![entry("run_command", ok()), entry("run_command", ok())],
            false,
            "duplicate map key \"run_command\"",
        ),
        (
            vec![entry("run_command", ok()), entry("run_command", ok())],
            true,
            "duplicate map key \"run_command\"",
        ),
        (
            vec![{
                let mut e = entry("a", ok());
                e.extend(unknown_varint(3, 1));
                e
            }],
            false,
            "unknown map entry member 3 (varint)",
        ),
        (
            vec![{
                let mut e = entry("a", ok());
                e.extend(len_field(1, b"b"));
                e
            }],
            false,
            "duplicate map entry key member",
        ),
        (
            vec![{
                let mut e = entry("a", ok());
                e.extend(len_field(2, b""));
                e
            }],
            false,
            "duplicate map entry value member",
        ),
        (
            vec![{
                let mut e = unknown_varint(1, 5);
                e.extend(len_field(2, b""));
                e
            }],
            false,
            "map entry key encoded as varint",
        ),
        (
            vec![{
                let mut e = len_field(1, b"a");
                e.extend(unknown_varint(2, 5));
                e
            }],
            false,
            "map entry value encoded as varint",
        ),
        (
            vec![vec![0x0a, 0x05, b'a']],
            false,
            "malformed map entry: length 5 exceeds the 1 remaining bytes",
        ),
        (
            vec![entry("a", Some(unknown_varint(9, 1)))],
            false,
            "unknown field 9 (varint) in exa.cortex_pb.ToolOutputOverride: the schema in use does not define it; if your agy build does, audit with its descriptors (--schema FILE)",
        ),
    ];
    for (entries, split, detail) in cases {
        let src = read_plain(&s, &per_tool_conv(&s, &entries, split));
        let r = src.reason().unwrap_or_else(|| panic!("{detail}: accepted"));
        assert!(r.detail == detail, "want {detail:?}, got {r}");
        assert!(
            r.location
                .starts_with("generatorMetadata[1].plannerConfig.toolConfig.toolOutput.perTool"),
            "{r}"
        );
        let want = if detail.starts_with("unknown field") {
            ReasonClass::UnknownField
        } else {
            ReasonClass::BadMapEntry
        };
        assert_eq!(r.class, want, "{r}");
    }
}

#[test]
fn kind_enablement_map_gets_the_same_wire_checks() {
    let s = schema();
    let planner = num(
        &s,
        "exa.cortex_pb.CortexStepGeneratorMetadata",
        "planner_config",
    );
    let cust = num(
        &s,
        "exa.cortex_pb.CascadePlannerConfig",
        "customization_config",
    );
    let disc = num(
        &s,
        "exa.cortex_pb.CustomizationConfig",
        "customization_discovery_config",
    );
    let kinds = num(
        &s,
        "exa.cortex_pb.CustomizationDiscoveryConfig",
        "kind_enablement",
    );
    let build = |entries: &[Vec<u8>]| {
        let mut map = Vec::new();
        for e in entries {
            map.extend(len_field(kinds, e));
        }
        let mut t = Conv::basic(&s).trajectory_bytes(&s);
        t.extend(len_field(
            tnum(&s, "generator_metadata"),
            &len_field(planner, &len_field(cust, &len_field(disc, &map))),
        ));
        t
    };
    let e = |k: &str, v: u64| {
        let mut b = len_field(1, k.as_bytes());
        b.extend(unknown_varint(2, v));
        b
    };
    assert!(read_plain(&s, &build(&[e("skills", 1), e("rules", 0)])).qualified());
    let dup = read_plain(&s, &build(&[e("skills", 1), e("skills", 0)]));
    assert_eq!(dup.reason().unwrap().class, ReasonClass::BadMapEntry);
    let mut bad = len_field(1, b"skills");
    bad.extend(len_field(2, b"\x01"));
    assert_eq!(
        read_plain(&s, &build(&[bad])).reason().unwrap().class,
        ReasonClass::BadMapEntry
    );
}

/// #22.7: a legacy source read under any key other than agy's fixed format
/// key is never verified, even when it authenticates under that key.
#[test]
fn a_legacy_source_under_another_key_is_never_verified() {
    use agy_audit::source::legacy::{encrypt, LegacyKey, FORMAT_KEY};
    let s = schema();
    let plain = Conv::basic(&s).trajectory_bytes(&s);
    let dir = tempfile::tempdir().expect("tempdir");
    let read_with = |sealed_under: &LegacyKey, read_under: &LegacyKey, collect_all: bool| {
        let path = dir.path().join(format!("{CASCADE}.pb"));
        std::fs::write(&path, encrypt(&plain, sealed_under, [5; 12])).expect("write pb");
        let opts = agy_audit::source::ReadOptions {
            schema: &s,
            legacy_key: read_under,
            collect_all,
            fingerprint: false,
        };
        agy_audit::source::read_source(&path, &opts).expect("read")
    };
    // The accepted shape: the format key, given by default or as a key file's bytes.
    let format = LegacyKey::default();
    assert!(read_with(&format, &format, false).qualified());
    let same = LegacyKey::from_bytes(*FORMAT_KEY);
    assert!(read_with(&format, &same, false).qualified());
    // Sealed and read under another key: it authenticates, decodes, and is refused.
    let other = LegacyKey::from_bytes([7; 32]);
    let src = read_with(&other, &other, false);
    let r = src.reason().expect("refused");
    assert_eq!(r.class, ReasonClass::LegacyUnsupportedKey, "{r}");
    assert_eq!(
        r.to_string(),
        format!(
            "envelope: read with key sha256 {}, not agy's fixed format key: unknown keys remain unsupported, so this source is never verified",
            other.fingerprint()
        )
    );
    assert_eq!(src.refusals.len(), 1, "{:?}", src.refusals);
    assert_eq!(src.steps, 3, "still decoded, for inspection");
    // Inspection: with every refusal collected, the tree is there.
    assert!(read_with(&other, &other, true).trajectory.is_some());
    // Read under another key than it was sealed with: both reasons, the key first.
    let src = read_with(&format, &other, false);
    let classes: Vec<_> = src.refusals.iter().map(|r| r.class).collect();
    assert_eq!(
        classes,
        [
            ReasonClass::LegacyUnsupportedKey,
            ReasonClass::LegacyAuthentication
        ]
    );
    // Sealed under another key, read under the format key: authentication.
    let src = read_with(&other, &format, false);
    assert_eq!(
        src.reason().map(|r| r.class),
        Some(ReasonClass::LegacyAuthentication)
    );
}
