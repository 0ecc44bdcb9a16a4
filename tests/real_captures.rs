//! The twelve verbatim steps of a real agy 1.0.10 daemon
//! (`../shared/spec/real-captures/agy-1.0.10/`, public-format-facts §7.4)
//! under the modeled schema.
//!
//! Their bytes are pinned by the folder's `SHA256SUMS` (checked here first);
//! members whose name starts with `_` are the capturing project's
//! annotations and are dropped. Each step then either decodes strictly under
//! the modeled schema (`compare::parse_strict_as`, the reader's strict proto3
//! JSON parse) or is refused, and the members it lacks are named exactly:
//! where (the JSON path in the step), which (`package.Message.jsonName`, an
//! enum value as `package.Enum.VALUE`) and the field number where the
//! capture shows one (a JSON capture never does: JSON carries names). The
//! expected set per capture is asserted; without those members each refused
//! step decodes strictly and reads back equal, so nothing else is lacking.
//! Every member so named is listed in proto/CONFORMANCE.md ("Seen in real
//! data, not modeled", its "Real daemon captures" list) and the list is
//! exact. With a schema built here from the modeled set plus the eleven
//! members (`common/real_members.rs`), all twelve decode strictly and read
//! back equal.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

#[path = "common/real_members.rs"]
mod real_members;

use agy_audit::compare::parse_strict_as;
use agy_audit::compare::value::diff_value;
use agy_audit::schema::MODELED_SET;
use prost_reflect::{DescriptorPool, Kind, MessageDescriptor};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::PathBuf;

const RELEASE_DIR: &str = "../shared/spec/real-captures/agy-1.0.10";

/// The twelve captures, their bytes checked against `SHA256SUMS`, with the
/// `_` members dropped: (file name, step).
fn captures() -> Vec<(String, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(RELEASE_DIR);
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: the real captures live in the shared/ folder beside the clone \
             (../shared/spec/real-captures/agy-1.0.10/, as .ci/run provides it)",
            dir.join("SHA256SUMS").display()
        )
    });
    let mut out = Vec::new();
    for line in sums.lines().filter(|l| !l.trim().is_empty()) {
        let (sum, name) = line
            .split_once("  ")
            .unwrap_or_else(|| panic!("SHA256SUMS: bad line {line:?}"));
        let bytes = std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let actual = hex(&Sha256::digest(&bytes));
        assert_eq!(actual, sum, "{name}: SHA-256 differs from SHA256SUMS");
        let mut v: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        drop_annotations(&mut v);
        out.push((name.to_string(), v));
    }
    assert_eq!(out.len(), 12, "SHA256SUMS lists twelve captures");
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Drops every member whose name starts with `_`, at any depth.
fn drop_annotations(v: &mut Value) {
    match v {
        Value::Object(o) => {
            o.retain(|k, _| !k.starts_with('_'));
            o.values_mut().for_each(drop_annotations);
        }
        Value::Array(a) => a.iter_mut().for_each(drop_annotations),
        _ => {}
    }
}

/// A member a step carries that the schema does not declare.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Lack {
    /// The member's JSON path in the step (`plannerResponse.toolCalls[0].originalName`).
    at: String,
    /// `package.Message.jsonName`, or `package.Enum.VALUE` for an enum value.
    member: String,
    /// The field (or enum value) number, where the capture shows it.
    number: Option<i32>,
}

/// What `v`, read as a `m`, carries that `m`'s schema does not declare.
fn lacks(m: &MessageDescriptor, v: &Value, at: &str, out: &mut Vec<Lack>) {
    let Value::Object(members) = v else {
        return;
    };
    for (k, v) in members {
        let path = if at.is_empty() {
            k.clone()
        } else {
            format!("{at}.{k}")
        };
        let Some(f) = m.fields().find(|f| f.json_name() == k || f.name() == k) else {
            out.push(Lack {
                at: path,
                member: format!("{}.{k}", m.full_name()),
                number: None,
            });
            continue;
        };
        let kind = match f.kind() {
            Kind::Message(e) if f.is_map() => e.map_entry_value_field().kind(),
            other => other,
        };
        let items: Vec<(String, &Value)> = match v {
            Value::Array(a) if f.is_list() => a
                .iter()
                .enumerate()
                .map(|(i, x)| (format!("{path}[{i}]"), x))
                .collect(),
            Value::Object(o) if f.is_map() => o
                .iter()
                .map(|(key, x)| (format!("{path}[{key:?}]"), x))
                .collect(),
            x => vec![(path.clone(), x)],
        };
        for (p, x) in items {
            match (&kind, x) {
                (Kind::Message(mm), _) if !mm.full_name().starts_with("google.protobuf.") => {
                    lacks(mm, x, &p, out)
                }
                (Kind::Enum(e), Value::String(s)) if e.get_value_by_name(s).is_none() => {
                    out.push(Lack {
                        at: p,
                        member: format!("{}.{s}", e.full_name()),
                        number: None,
                    })
                }
                (Kind::Enum(e), Value::Number(n)) => {
                    let n = n.as_i64().and_then(|n| i32::try_from(n).ok());
                    if n.is_none_or(|n| e.get_value(n).is_none()) {
                        out.push(Lack {
                            at: p,
                            member: format!("{}.{x}", e.full_name()),
                            number: n,
                        })
                    }
                }
                _ => {}
            }
        }
    }
}

/// `v` without the members at `paths` (an enum value's member included).
fn without(v: &Value, paths: &[&Lack]) -> Value {
    let mut v = v.clone();
    for l in paths {
        let pointer: String =
            l.at.split('.')
                .flat_map(|seg| {
                    let (name, idx) = seg.split_once('[').unwrap_or((seg, ""));
                    let mut parts = vec![name.to_string()];
                    parts.extend(
                        idx.split('[')
                            .filter(|s| !s.is_empty())
                            .map(|s| s.trim_end_matches(']').trim_matches('"').to_string()),
                    );
                    parts
                })
                .map(|p| format!("/{p}"))
                .collect();
        let (parent, key) = pointer.rsplit_once('/').expect("a member path");
        if let Some(Value::Object(o)) = v.pointer_mut(parent) {
            assert!(o.remove(key).is_some(), "{}: nothing at {pointer}", l.at);
        }
    }
    v
}

/// The expected lacks per capture under the modeled schema: (member path, member).
fn expected() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    const NAME: &str = "exa.codeium_common_pb.ChatToolCall.originalName";
    const STEP_ASK: &str = "gemini_coder.Step.askQuestion";
    const REQ_ASK: &str = "exa.cortex_pb.RequestedInteraction.askQuestion";
    const SUGGESTED: &str =
        "exa.cortex_pb.PermissionInteractionSpec.PersistSuggestionType.PERSIST_SUGGESTION_TYPE_SUGGESTED";
    vec![
        (
            "ask_question_done.json",
            vec![
                ("askQuestion", STEP_ASK),
                ("completedInteractions[0].request.askQuestion", REQ_ASK),
                (
                    "completedInteractions[0].response.askQuestion",
                    "exa.cortex_pb.CascadeUserInteraction.askQuestion",
                ),
                ("metadata.toolCall.originalName", NAME),
                ("requestedInteraction.askQuestion", REQ_ASK),
            ],
        ),
        (
            "ask_question_waiting.json",
            vec![
                ("askQuestion", STEP_ASK),
                ("metadata.toolCall.originalName", NAME),
                ("requestedInteraction.askQuestion", REQ_ASK),
            ],
        ),
        (
            "checkpoint.json",
            vec![
                (
                    "checkpoint.renderLatestCheckpoint",
                    "exa.cortex_pb.CortexStepCheckpoint.renderLatestCheckpoint",
                ),
                (
                    "checkpoint.renderUserMessageStepIndex",
                    "exa.cortex_pb.CortexStepCheckpoint.renderUserMessageStepIndex",
                ),
            ],
        ),
        ("conversation_history.json", vec![]),
        (
            "list_directory_done.json",
            vec![("metadata.toolCall.originalName", NAME)],
        ),
        ("planner_response_text.json", vec![]),
        (
            "planner_response_tool_call_ask_question.json",
            vec![("plannerResponse.toolCalls[0].originalName", NAME)],
        ),
        (
            "planner_response_tool_call_run_command.json",
            vec![("plannerResponse.toolCalls[0].originalName", NAME)],
        ),
        (
            "run_command_done.json",
            vec![
                (
                    "completedInteractions[0].request.permission.persistSuggestionType",
                    SUGGESTED,
                ),
                ("metadata.toolCall.originalName", NAME),
                ("requestedInteraction.permission.persistSuggestionType", SUGGESTED),
            ],
        ),
        (
            "run_command_error.json",
            vec![
                ("metadata.toolCall.originalName", NAME),
                ("requestedInteraction.permission.persistSuggestionType", SUGGESTED),
            ],
        ),
        (
            "run_command_waiting.json",
            vec![
                ("metadata.toolCall.originalName", NAME),
                ("requestedInteraction.permission.persistSuggestionType", SUGGESTED),
            ],
        ),
        (
            "user_input.json",
            vec![
                (
                    "userInput.userConfig.plannerConfig.customizationConfig.enableJsonHooks",
                    "exa.cortex_pb.CustomizationConfig.enableJsonHooks",
                ),
                (
                    "userInput.userConfig.plannerConfig.toolConfig.permissionConfig",
                    "exa.cortex_pb.CascadeToolConfig.permissionConfig",
                ),
                (
                    "userInput.userConfig.plannerConfig.toolConfig.runCommand.enableTerminalSandbox",
                    "exa.cortex_pb.RunCommandToolConfig.enableTerminalSandbox",
                ),
                (
                    "userInput.userConfig.plannerConfig.useAiCredits",
                    "exa.cortex_pb.CascadePlannerConfig.useAiCredits",
                ),
            ],
        ),
    ]
}

fn step_of(pool: &DescriptorPool) -> MessageDescriptor {
    pool.get_message_by_name("gemini_coder.Step")
        .expect("gemini_coder.Step")
}

/// Parses `v` strictly as a Step and checks it reads back equal.
fn decodes(step: &MessageDescriptor, name: &str, v: &Value) -> Result<(), String> {
    let m = parse_strict_as(step.clone(), &v.to_string())?;
    let d = diff_value(&m, v, 5);
    assert!(
        d.is_empty(),
        "{name}: decoded but reads back differently: {d:?}"
    );
    Ok(())
}

/// The "Real daemon captures" list of proto/CONFORMANCE.md's "Seen in real
/// data, not modeled" section: its `- \`member\`` lines.
fn listed_in_conformance() -> BTreeSet<String> {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("proto/CONFORMANCE.md"),
    )
    .expect("proto/CONFORMANCE.md");
    let (_, section) = text
        .split_once("## Seen in real data, not modeled")
        .expect("CONFORMANCE.md: no \"Seen in real data, not modeled\" section");
    let section = section.split("\n## ").next().unwrap_or_default();
    let (_, list) = section
        .split_once("### Real daemon captures")
        .expect("CONFORMANCE.md: no \"### Real daemon captures\" list in that section");
    let list = list.split("\n#").next().unwrap_or_default();
    list.lines()
        .filter_map(|l| l.strip_prefix("- `"))
        .map(|l| {
            l.split_once('`')
                .unwrap_or_else(|| panic!("CONFORMANCE.md: bad list line {l:?}"))
                .0
                .to_string()
        })
        .collect()
}

#[test]
fn each_real_capture_decodes_or_names_exactly_what_it_lacks() {
    let modeled = DescriptorPool::decode(MODELED_SET).expect("modeled set");
    let step = step_of(&modeled);
    let captures = captures();
    let expected = expected();
    let mut named = BTreeSet::new();
    let mut strict = 0;
    for ((name, v), (want_name, want)) in captures.iter().zip(&expected) {
        assert_eq!(
            name, want_name,
            "SHA256SUMS lists the captures in this order"
        );
        let mut found = Vec::new();
        lacks(&step, v, "", &mut found);
        found.sort();
        let got: Vec<(&str, &str)> = found
            .iter()
            .map(|l| (l.at.as_str(), l.member.as_str()))
            .collect();
        assert_eq!(&got, want, "{name}: the members it lacks");
        assert!(
            found.iter().all(|l| l.number.is_none()),
            "{name}: a JSON capture shows no numbers: {found:?}"
        );
        match decodes(&step, name, v) {
            Ok(()) => {
                assert!(
                    found.is_empty(),
                    "{name}: decoded although it lacks {found:?}"
                );
                strict += 1;
            }
            Err(e) => {
                assert!(!found.is_empty(), "{name}: refused for nothing named: {e}");
                // The strict parse names a member it lacks: a field by its
                // JSON name, an enum value by its name.
                let names: Vec<&str> = found
                    .iter()
                    .filter_map(|l| l.member.rsplit('.').next())
                    .collect();
                assert!(
                    names.iter().any(|n| e.contains(n)),
                    "{name}: the refusal {e:?} names none of {names:?}"
                );
                let refs: Vec<&Lack> = found.iter().collect();
                let rest = without(v, &refs);
                decodes(&step, name, &rest).unwrap_or_else(|e| {
                    panic!("{name}: without {found:?} it still does not decode: {e}")
                });
            }
        }
        named.extend(found.into_iter().map(|l| l.member));
    }
    assert_eq!(
        strict, 2,
        "the modeled schema accepts 2 of the 12 steps strictly"
    );
    let eleven: BTreeSet<String> = real_members::MEMBERS
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        named, eleven,
        "the members the captures lack are the eleven of §7.4"
    );
    assert_eq!(
        listed_in_conformance(),
        named,
        "proto/CONFORMANCE.md's \"Real daemon captures\" list is exactly what the captures lack"
    );
}

#[test]
fn with_the_eleven_members_declared_all_twelve_decode() {
    let set = real_members::with_members(MODELED_SET, 900);
    let pool = DescriptorPool::decode(set.as_slice()).expect("the extended set builds");
    let step = step_of(&pool);
    for (name, v) in captures() {
        let mut found = Vec::new();
        lacks(&step, &v, "", &mut found);
        assert!(found.is_empty(), "{name}: still lacks {found:?}");
        decodes(&step, &name, &v).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn an_annotation_member_is_dropped_and_nothing_else() {
    let mut v = serde_json::json!({"_a": 1, "b": {"_c": [1], "d": [{"_e": 2, "f": 3}]}});
    drop_annotations(&mut v);
    assert_eq!(v, serde_json::json!({"b": {"d": [{"f": 3}]}}));
}
