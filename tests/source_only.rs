//! The declared source-only fields: CascadePlannerConfig field 50 and
//! ChatMessagePrompt field 23, at their exact paths and shapes only.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::schema::Schema;
use agy_audit::source::scan::Scanner;
use agy_audit::source::source_only::{record, PLANNER50_SHAPES};
use agy_audit::source::DecodedSource;
use agy_audit::verdict::ReasonClass;
use common::*;
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use std::collections::HashMap;

fn read_plain(s: &Schema, plaintext: &[u8]) -> DecodedSource {
    read_sealed(s, plaintext, false)
}

fn tnum(s: &Schema, f: &str) -> u32 {
    num(s, "gemini_coder.Trajectory", f)
}

/// Every path from `desc` to a message of type `target`, entering each message
/// type at most twice on one path. Panics if a Step or Trajectory is reachable.
fn walk(
    desc: &MessageDescriptor,
    chain: &mut Vec<FieldDescriptor>,
    seen: &mut HashMap<String, usize>,
    target: &str,
    out: &mut Vec<Vec<FieldDescriptor>>,
) {
    walk_from(desc, chain, seen, target, out, true)
}

fn walk_from(
    desc: &MessageDescriptor,
    chain: &mut Vec<FieldDescriptor>,
    seen: &mut HashMap<String, usize>,
    target: &str,
    out: &mut Vec<Vec<FieldDescriptor>>,
    record: bool,
) {
    if desc.full_name() == target {
        out.push(chain.clone());
    }
    for fd in desc.fields() {
        let m = match fd.kind() {
            Kind::Message(m) if fd.is_map() => match m.map_entry_value_field().kind() {
                Kind::Message(v) => v,
                _ => continue,
            },
            Kind::Message(m) => m,
            _ => continue,
        };
        assert!(
            !record
                || (m.full_name() != "gemini_coder.Step"
                    && m.full_name() != "gemini_coder.Trajectory"),
            "{} reachable from a record outside an Any via {}",
            m.full_name(),
            chain.iter().map(|f| f.name()).collect::<Vec<_>>().join(".")
        );
        let c = seen.entry(m.full_name().to_string()).or_insert(0);
        if *c >= 2 {
            continue;
        }
        *c += 1;
        chain.push(fd.clone());
        walk_from(&m, chain, seen, target, out, record);
        chain.pop();
        if let Some(c) = seen.get_mut(m.full_name()) {
            *c -= 1;
        }
    }
}

/// Wraps `innermost` along `chain` (outermost first).
fn wrap(chain: &[FieldDescriptor], innermost: Vec<u8>) -> Vec<u8> {
    let mut bytes = innermost;
    for fd in chain.iter().rev() {
        if fd.is_map() {
            bytes = len_field(2, &bytes);
        }
        bytes = len_field(fd.number(), &bytes);
    }
    bytes
}

fn names(chain: &[FieldDescriptor]) -> Vec<&str> {
    chain.iter().map(|f| f.name()).collect()
}

fn paths_from_records(s: &Schema, roots: &[&str], target: &str) -> Vec<Vec<FieldDescriptor>> {
    let traj = s
        .pool
        .get_message_by_name("gemini_coder.Trajectory")
        .unwrap();
    let mut out = Vec::new();
    for root in roots {
        let fd = traj.get_field_by_name(root).unwrap();
        let Kind::Message(m) = fd.kind() else {
            panic!()
        };
        let mut chain = vec![fd.clone()];
        walk(&m, &mut chain, &mut HashMap::new(), target, &mut out);
    }
    out
}

#[test]
fn planner50_is_accepted_at_exactly_the_two_declared_paths() {
    let s = schema();
    let paths = paths_from_records(
        &s,
        &["generator_metadata", "executor_metadatas"],
        "exa.cortex_pb.CascadePlannerConfig",
    );
    assert!(
        paths.len() > 6,
        "the planner nests recursively: {} paths",
        paths.len()
    );
    let mut accepted = Vec::new();
    for chain in &paths {
        let bytes = wrap(chain, len_field(50, &[]));
        let mut scan = Scanner::new(&s.pool, Some(&s.struct_pool), false);
        scan.scan_root(&bytes, &s.names.trajectory);
        if scan.refusals.is_empty() {
            assert_eq!(scan.source_only.len(), 1);
            accepted.push(names(chain).join("."));
        } else {
            assert_eq!(
                scan.refusals[0].class,
                ReasonClass::SourceOnlyPlanner50,
                "{}",
                scan.refusals[0]
            );
        }
    }
    accepted.sort();
    assert_eq!(
        accepted,
        vec![
            "executor_metadatas.cascade_config.planner_config",
            "generator_metadata.planner_config"
        ]
    );
    assert!(
        paths
            .iter()
            .any(|c| names(c).join(".")
                == "executor_metadatas.request_override_config.planner_config")
    );
}

fn planner50_traj(s: &Schema, extra: &[u8]) -> Vec<u8> {
    let planner = num(
        s,
        "exa.cortex_pb.CortexStepGeneratorMetadata",
        "planner_config",
    );
    let mut t = Conv::basic(s).trajectory_bytes(s);
    t.extend(len_field(
        tnum(s, "generator_metadata"),
        &len_field(planner, extra),
    ));
    t
}

#[test]
fn planner50_accepts_each_observed_shape_and_records_it() {
    let s = schema();
    for shape in PLANNER50_SHAPES {
        let src = read_plain(&s, &planner50_traj(&s, &len_field(50, shape)));
        assert!(src.qualified(), "{shape:?}: {:?}", src.refusals);
        let rec = record(&src.source_only);
        assert_eq!(rec.len(), 1);
        assert_eq!(rec[0].field, "exa.cortex_pb.CascadePlannerConfig.50");
        assert_eq!(rec[0].occurrences, 1);
        assert_eq!(
            rec[0].locations[0].location,
            "generatorMetadata[1].plannerConfig"
        );
        assert_eq!(rec[0].locations[0].payload, agy_audit::util::hex(shape));
    }
}

#[test]
fn planner50_near_misses_are_refused() {
    let s = schema();
    let mut twice = len_field(50, &[]);
    twice.extend(len_field(50, &[]));
    let mut beside = len_field(50, &[]);
    beside.extend(unknown_varint(51, 0));
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (len_field(50, &[0x10, 0x01]), "payload"),
        (len_field(50, &[0x20, 0x00, 0x10, 0x00]), "payload"),
        (len_field(50, &[0x18, 0x00]), "payload"),
        (len_field(50, &[0x10, 0x00, 0x10, 0x00]), "payload"),
        (len_field(50, &[0x12, 0x00]), "payload"),
        (unknown_varint(50, 0), "wire type varint"),
        (twice, "more than once"),
        (beside, "beside another unknown field"),
    ];
    for (extra, want) in cases {
        let src = read_plain(&s, &planner50_traj(&s, &extra));
        let r = src.reason().unwrap_or_else(|| panic!("{want}: accepted"));
        assert_eq!(r.class, ReasonClass::SourceOnlyPlanner50, "{r}");
        assert!(r.detail.contains(want), "{want:?} not in {r}");
    }
}

// ---- prompt23 -------------------------------------------------------------

fn struct_bytes(s: &Schema, json: &str) -> Vec<u8> {
    use prost::Message;
    let desc = s
        .struct_pool
        .get_message_by_name("google.protobuf.Struct")
        .unwrap();
    let mut de = serde_json::Deserializer::from_str(json);
    prost_reflect::DynamicMessage::deserialize(desc, &mut de)
        .unwrap()
        .encode_to_vec()
}

const GREP_LINES: &str = r#"{"type":"CORTEX_STEP_TYPE_GREP_SEARCH","status":"CORTEX_STEP_STATUS_DONE",
  "metadata":{"toolCall":{"id":"call_g","name":"grep_search"}},
  "grepSearch":{"query":"main","matchPerLine":true,"totalResults":3,"results":[
    {"relativePath":"src/a.rs","lineNumber":2,"content":"fn main() {"},
    {"absolutePath":"/w/src/b.rs","lineNumber":0,"content":"// main"}]}}"#;

const GOOD_LINES: &str = r#"{"results":[{"path":"src/a.rs","line_content":"fn main() {","line_number":3},
  {"path":"/w/src/b.rs","line_content":"// main","line_number":1}],"num_elided_results":1}"#;

/// A generic grep_search wrapper embedding [`GREP_LINES`] as a Step Any; the
/// wrapper's own tool call carries the prompt's ID when `outer_id`.
fn grep_wrapper(outer_id: bool) -> String {
    let native: Json = serde_json::from_str(GREP_LINES).expect("json");
    let mut w = wrapper_over(
        "grep_search",
        "CORTEX_STEP_STATUS_DONE",
        &json!({"Query": "main", "SearchPath": "/w"}),
        &native,
    );
    if outer_id {
        w["metadata"]["toolCall"]["id"] = json!("call_g");
    }
    w.to_string()
}

/// A trajectory whose step 3 is a grep search and whose generator prompt carries `field23`.
fn prompt23_traj(s: &Schema, grep: &str, prompt_json: &str, field23: Vec<u8>) -> Vec<u8> {
    let mut conv = Conv::basic(s);
    conv.steps.push(step(s, grep));
    let chat = num(s, "exa.cortex_pb.CortexStepGeneratorMetadata", "chat_model");
    let prompts = num(s, "exa.cortex_pb.ChatModelMetadata", "message_prompts");
    let mut prompt = msg(s, "exa.chat_pb.ChatMessagePrompt", prompt_json);
    prompt.extend(field23);
    conv.gens
        .push(len_field(chat, &len_field(prompts, &prompt)));
    conv.trajectory_bytes(s)
}

const TOOL_PROMPT: &str = r#"{"source":"CHAT_MESSAGE_SOURCE_TOOL","toolCallId":"call_g","stepIdx":3,"prompt":"2 results"}"#;

#[test]
fn prompt23_line_and_path_shapes_are_accepted_when_derived_from_the_step() {
    let s = schema();
    let src = read_plain(
        &s,
        &prompt23_traj(
            &s,
            GREP_LINES,
            TOOL_PROMPT,
            len_field(23, &struct_bytes(&s, GOOD_LINES)),
        ),
    );
    assert!(src.qualified(), "{:?}", src.refusals);
    let rec = record(&src.source_only);
    assert_eq!(rec[0].field, "exa.chat_pb.ChatMessagePrompt.23");
    assert_eq!(
        rec[0].locations[0].location,
        "generatorMetadata[1].chatModel.messagePrompts[0]"
    );
    let grep_paths = GREP_LINES
        .replace(r#""matchPerLine":true"#, r#""matchPerLine":false"#)
        .replace(r#""totalResults":3"#, r#""totalResults":2"#);
    let paths = r#"{"results":[{"path":"src/a.rs"},{"path":"/w/src/b.rs"}]}"#;
    let src = read_plain(
        &s,
        &prompt23_traj(
            &s,
            &grep_paths,
            TOOL_PROMPT,
            len_field(23, &struct_bytes(&s, paths)),
        ),
    );
    assert!(src.qualified(), "{:?}", src.refusals);
    // Both declared fields: field 50 first, then field 23.
    let mut t = prompt23_traj(
        &s,
        GREP_LINES,
        TOOL_PROMPT,
        len_field(23, &struct_bytes(&s, GOOD_LINES)),
    );
    let planner = num(
        &s,
        "exa.cortex_pb.CortexStepGeneratorMetadata",
        "planner_config",
    );
    t.extend(len_field(
        tnum(&s, "generator_metadata"),
        &len_field(planner, &len_field(50, &[])),
    ));
    let src = read_plain(&s, &t);
    assert!(src.qualified(), "{:?}", src.refusals);
    let fields: Vec<_> = record(&src.source_only)
        .into_iter()
        .map(|e| e.field)
        .collect();
    assert_eq!(
        fields,
        [
            "exa.cortex_pb.CascadePlannerConfig.50",
            "exa.chat_pb.ChatMessagePrompt.23"
        ]
    );
}

#[test]
fn prompt23_near_misses_are_refused() {
    let s = schema();
    let good = || len_field(23, &struct_bytes(&s, GOOD_LINES));
    let with = |json: &str| len_field(23, &struct_bytes(&s, json));
    let media_value = {
        // results[0] value carrying unknown member 7 (a custom Struct's Media).
        let mut v = struct_bytes(
            &s,
            r#"{"results":[{"path":"src/a.rs","line_content":"fn main() {","line_number":3}]}"#,
        );
        v = insert_raw(&v, &[(1, 0), (2, 0)], &len_field(7, b"img"));
        len_field(23, &v)
    };
    let prompt = |json: &str| json.to_string();
    let cases: Vec<(String, String, Vec<u8>, &str)> = vec![
        (
            GREP_LINES.into(),
            prompt(r#"{"source":"CHAT_MESSAGE_SOURCE_USER","toolCallId":"call_g","stepIdx":3}"#),
            good(),
            "CHAT_MESSAGE_SOURCE_TOOL",
        ),
        (
            GREP_LINES.into(),
            prompt(r#"{"source":"CHAT_MESSAGE_SOURCE_TOOL","stepIdx":3}"#),
            good(),
            "tool_call_id",
        ),
        (
            GREP_LINES.into(),
            prompt(r#"{"source":"CHAT_MESSAGE_SOURCE_TOOL","toolCallId":"call_g"}"#),
            good(),
            "step_idx",
        ),
        (
            GREP_LINES.into(),
            prompt(
                r#"{"source":"CHAT_MESSAGE_SOURCE_TOOL","toolCallId":"call_g","stepIdx":3,"promptStruct":{}}"#,
            ),
            good(),
            "prompt_struct",
        ),
        (
            GREP_LINES.into(),
            TOOL_PROMPT.into(),
            unknown_varint(23, 1),
            "wire type varint",
        ),
        (
            GREP_LINES.into(),
            TOOL_PROMPT.into(),
            media_value,
            "strict google.protobuf.Struct",
        ),
        (
            GREP_LINES.into(),
            TOOL_PROMPT.into(),
            with(r#"{"results":[]}"#),
            "not 1 to 50",
        ),
        (
            GREP_LINES.into(),
            TOOL_PROMPT.into(),
            with(r#"{"results":[{"path":"a"}],"extra":1}"#),
            "unexpected member",
        ),
        (
            GREP_LINES.into(),
            TOOL_PROMPT.into(),
            with(
                r#"{"results":[{"path":"src/a.rs"},{"path":"x","line_content":"y","line_number":1}]}"#,
            ),
            "mix",
        ),
        (
            GREP_LINES.into(),
            TOOL_PROMPT.into(),
            with(
                r#"{"results":[{"path":"src/a.rs","line_content":"fn main() {","line_number":2.5}]}"#,
            ),
            "whole number",
        ),
        (
            GREP_LINES.into(),
            TOOL_PROMPT.into(),
            with(
                r#"{"results":[{"path":"src/a.rs","line_content":"fn main() {","line_number":0}]}"#,
            ),
            "whole number",
        ),
        (
            GREP_LINES.into(),
            TOOL_PROMPT.into(),
            with(r#"{"results":[{"path":7}]}"#),
            "not a string",
        ),
        (
            GREP_LINES.into(),
            TOOL_PROMPT.into(),
            with(&GOOD_LINES.replace(r#""line_number":3"#, r#""line_number":2"#)),
            "line_number",
        ),
        (
            GREP_LINES.into(),
            TOOL_PROMPT.into(),
            with(&GOOD_LINES.replace("fn main() {\",\"line", "fn main()\",\"line")),
            "line_content",
        ),
        (
            GREP_LINES.into(),
            TOOL_PROMPT.into(),
            with(&GOOD_LINES.replace(r#""path":"src/a.rs""#, r#""path":"src/c.rs""#)),
            "path",
        ),
        (
            GREP_LINES.into(),
            TOOL_PROMPT.into(),
            with(&GOOD_LINES.replace(r#","num_elided_results":1"#, "")),
            "num_elided_results missing",
        ),
        (
            GREP_LINES.into(),
            TOOL_PROMPT.into(),
            with(&GOOD_LINES.replace(r#""num_elided_results":1"#, r#""num_elided_results":2"#)),
            "num_elided_results 2",
        ),
        (
            GREP_LINES.into(),
            TOOL_PROMPT.into(),
            with(
                r#"{"results":[{"path":"src/a.rs","line_content":"fn main() {","line_number":3}],"num_elided_results":2}"#,
            ),
            "lists 1 results",
        ),
        (
            GREP_LINES.replace(r#""matchPerLine":true"#, r#""matchPerLine":false"#),
            TOOL_PROMPT.into(),
            good(),
            "match_per_line false",
        ),
        (
            GREP_LINES.replace("call_g", "call_h"),
            TOOL_PROMPT.into(),
            good(),
            "tool call ID",
        ),
        (
            GREP_LINES.replace("GREP_SEARCH", "VIEW_FILE"),
            TOOL_PROMPT.into(),
            good(),
            "not a GREP_SEARCH",
        ),
        // A generic wrapper embedding that very GREP_SEARCH Step, with the
        // prompt's tool-call ID on the wrapper and on the Step: the named
        // step itself is not a GREP_SEARCH step (#22.2).
        (
            grep_wrapper(true),
            TOOL_PROMPT.into(),
            good(),
            "not a GREP_SEARCH",
        ),
        // ... nor with the ID only on the embedded Step.
        (
            grep_wrapper(false),
            TOOL_PROMPT.into(),
            good(),
            "not a GREP_SEARCH",
        ),
        // The native step without its own tool call ID.
        (
            GREP_LINES.replace(r#""id":"call_g","#, ""),
            TOOL_PROMPT.into(),
            good(),
            "tool call ID",
        ),
        (
            GREP_LINES.into(),
            TOOL_PROMPT.replace("\"stepIdx\":3", "\"stepIdx\":9"),
            good(),
            "does not exist",
        ),
    ];
    for (grep, prompt, f23, want) in cases {
        let src = read_plain(&s, &prompt23_traj(&s, &grep, &prompt, f23));
        let r = src.reason().unwrap_or_else(|| panic!("{want}: accepted"));
        assert_eq!(r.class, ReasonClass::SourceOnlyPrompt23, "{want}: {r}");
        assert!(r.detail.contains(want), "{want:?} not in {r}");
    }
}

#[test]
fn prompt23_is_accepted_only_on_generator_message_prompts() {
    let s = schema();
    let mut all = paths_from_records(
        &s,
        &["generator_metadata", "executor_metadatas"],
        "exa.chat_pb.ChatMessagePrompt",
    );
    // From a step, too (the step's own payload messages).
    let traj = s
        .pool
        .get_message_by_name("gemini_coder.Trajectory")
        .unwrap();
    let steps_fd = traj.get_field_by_name("steps").unwrap();
    let mut chain = vec![steps_fd.clone()];
    walk_from(
        &s.names.step,
        &mut chain,
        &mut HashMap::new(),
        "exa.chat_pb.ChatMessagePrompt",
        &mut all,
        false,
    );
    let prompt = {
        let mut p = msg(&s, "exa.chat_pb.ChatMessagePrompt", TOOL_PROMPT);
        p.extend(len_field(23, &struct_bytes(&s, GOOD_LINES)));
        p
    };
    let mut accepted = Vec::new();
    for chain in &all {
        let mut conv = Conv::basic(&s);
        conv.steps.push(step(&s, GREP_LINES));
        let mut t = conv.trajectory_bytes(&s);
        t.extend(wrap(chain, prompt.clone()));
        let src = read_plain(&s, &t);
        if src.qualified() {
            accepted.push(names(chain).join("."));
        } else {
            assert_eq!(
                src.reason().unwrap().class,
                ReasonClass::SourceOnlyPrompt23,
                "{}",
                src.reason().unwrap()
            );
        }
    }
    assert_eq!(
        accepted,
        vec!["generator_metadata.chat_model.message_prompts"]
    );
}
