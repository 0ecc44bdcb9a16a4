//! The eleven members real agy steps carry that no public descriptor
//! declares (public-format-facts §7.4, found in the agy 1.0.10 captures of
//! `../shared/spec/real-captures/`), added to a descriptor set for the tests.
//!
//! Their JSON names and value types are known from the captures; their field
//! numbers are not public, so the numbers here are the tests' own choice:
//! the next number past every number (and reserved range) the message
//! already has, except `ChatToolCall.originalName`, whose number the caller
//! gives (the generator plants it at a number of its own). The message types
//! the captures show for `askQuestion` and `permissionConfig` are declared
//! here too, named `Test…` so nobody mistakes them for agy's.
//!
//! Used by `tests/real_captures.rs` and `tests/schema_installed.rs` (each
//! includes this file with `#[path]`).
#![allow(dead_code)]

use prost::Message;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, EnumValueDescriptorProto, FieldDescriptorProto, FileDescriptorProto,
    FileDescriptorSet,
};

/// The eleven, as `package.Message.jsonName` (an enum value as
/// `package.Enum.VALUE`), as proto/CONFORMANCE.md lists them.
pub const MEMBERS: [&str; 11] = [
    "exa.codeium_common_pb.ChatToolCall.originalName",
    "exa.cortex_pb.CascadePlannerConfig.useAiCredits",
    "exa.cortex_pb.CascadeToolConfig.permissionConfig",
    "exa.cortex_pb.CascadeUserInteraction.askQuestion",
    "exa.cortex_pb.CortexStepCheckpoint.renderLatestCheckpoint",
    "exa.cortex_pb.CortexStepCheckpoint.renderUserMessageStepIndex",
    "exa.cortex_pb.CustomizationConfig.enableJsonHooks",
    "exa.cortex_pb.PermissionInteractionSpec.PersistSuggestionType.PERSIST_SUGGESTION_TYPE_SUGGESTED",
    "exa.cortex_pb.RequestedInteraction.askQuestion",
    "exa.cortex_pb.RunCommandToolConfig.enableTerminalSandbox",
    "gemini_coder.Step.askQuestion",
];

/// The files of a serialized set.
pub fn files(set: &[u8]) -> Vec<FileDescriptorProto> {
    FileDescriptorSet::decode(set)
        .expect("a FileDescriptorSet")
        .file
}

/// The message `full` (`pkg.Outer.Inner`) among `files`.
fn message_mut<'a>(files: &'a mut [FileDescriptorProto], full: &str) -> &'a mut DescriptorProto {
    for f in files.iter_mut() {
        let pkg = f.package().to_string();
        let Some(rest) = full
            .strip_prefix(pkg.as_str())
            .and_then(|r| r.strip_prefix('.'))
        else {
            continue;
        };
        let mut parts = rest.split('.');
        let first = parts.next().unwrap_or_default();
        let Some(mut m) = f.message_type.iter_mut().find(|m| m.name() == first) else {
            continue;
        };
        for p in parts {
            m = m
                .nested_type
                .iter_mut()
                .find(|n| n.name() == p)
                .unwrap_or_else(|| panic!("no {full}"));
        }
        return m;
    }
    panic!("no message {full}")
}

/// The next number past every field number and reserved range of `m`.
fn next_free(m: &DescriptorProto) -> i32 {
    let fields = m.field.iter().map(|f| f.number() + 1);
    let reserved = m.reserved_range.iter().map(|r| r.end());
    fields.chain(reserved).max().unwrap_or(1).max(1)
}

fn field(
    name: &str,
    json: &str,
    number: i32,
    ty: Type,
    type_name: Option<&str>,
) -> FieldDescriptorProto {
    FieldDescriptorProto {
        name: Some(name.into()),
        json_name: Some(json.into()),
        number: Some(number),
        label: Some(Label::Optional as i32),
        r#type: Some(ty as i32),
        type_name: type_name.map(str::to_string),
        ..Default::default()
    }
}

fn repeated(mut f: FieldDescriptorProto) -> FieldDescriptorProto {
    f.label = Some(Label::Repeated as i32);
    f
}

/// Adds a field to `message`, in its oneof `oneof` when given.
fn add(
    files: &mut [FileDescriptorProto],
    message: &str,
    mut f: FieldDescriptorProto,
    oneof: Option<&str>,
) {
    let m = message_mut(files, message);
    if f.number.is_none() || f.number() == 0 {
        f.number = Some(next_free(m));
    }
    if let Some(o) = oneof {
        let i = m
            .oneof_decl
            .iter()
            .position(|d| d.name() == o)
            .unwrap_or_else(|| panic!("{message} has no oneof {o}"));
        f.oneof_index = Some(i as i32);
    }
    m.field.push(f);
}

fn msg(name: &str, fields: Vec<FieldDescriptorProto>) -> DescriptorProto {
    DescriptorProto {
        name: Some(name.into()),
        field: fields,
        ..Default::default()
    }
}

/// `set` (serialized) with the eleven members declared; `original_name` is
/// `ChatToolCall.originalName`'s number.
pub fn with_members(set: &[u8], original_name: i32) -> Vec<u8> {
    let mut files = files(set);
    let cortex = files
        .iter_mut()
        .find(|f| f.package() == "exa.cortex_pb")
        .expect("exa.cortex_pb");
    // askQuestion: questions with options (and the answer, once given), or
    // the responses.
    let mut ask = msg(
        "TestAskQuestion",
        vec![
            repeated(field(
                "questions",
                "questions",
                1,
                Type::Message,
                Some(".exa.cortex_pb.TestAskQuestion.Question"),
            )),
            repeated(field(
                "responses",
                "responses",
                2,
                Type::Message,
                Some(".exa.cortex_pb.TestAskQuestion.Response"),
            )),
        ],
    );
    ask.nested_type = vec![
        msg(
            "Question",
            vec![
                field("question", "question", 1, Type::String, None),
                repeated(field(
                    "options",
                    "options",
                    2,
                    Type::Message,
                    Some(".exa.cortex_pb.TestAskQuestion.Option"),
                )),
                repeated(field(
                    "selected_option_ids",
                    "selectedOptionIds",
                    3,
                    Type::String,
                    None,
                )),
            ],
        ),
        msg(
            "Option",
            vec![
                field("id", "id", 1, Type::String, None),
                field("text", "text", 2, Type::String, None),
            ],
        ),
        msg(
            "Response",
            vec![
                field("question", "question", 1, Type::String, None),
                repeated(field(
                    "selected_option_ids",
                    "selectedOptionIds",
                    2,
                    Type::String,
                    None,
                )),
            ],
        ),
    ];
    let mut permission = msg(
        "TestPermissionConfig",
        vec![
            field(
                "enterprise_config",
                "enterpriseConfig",
                1,
                Type::Message,
                Some(".exa.cortex_pb.TestPermissionConfig.EnterpriseConfig"),
            ),
            field(
                "effective_grants",
                "effectiveGrants",
                2,
                Type::Message,
                Some(".exa.cortex_pb.TestPermissionConfig.EffectiveGrants"),
            ),
        ],
    );
    permission.nested_type = vec![
        msg(
            "EnterpriseConfig",
            vec![field(
                "enforce_workspace_validation",
                "enforceWorkspaceValidation",
                1,
                Type::Bool,
                None,
            )],
        ),
        msg("EffectiveGrants", Vec::new()),
    ];
    cortex.message_type.push(ask);
    cortex.message_type.push(permission);

    let ask_type = Some(".exa.cortex_pb.TestAskQuestion");
    add(
        &mut files,
        "exa.codeium_common_pb.ChatToolCall",
        field(
            "original_name",
            "originalName",
            original_name,
            Type::String,
            None,
        ),
        None,
    );
    add(
        &mut files,
        "gemini_coder.Step",
        field("ask_question", "askQuestion", 0, Type::Message, ask_type),
        Some("step"),
    );
    add(
        &mut files,
        "exa.cortex_pb.RequestedInteraction",
        field("ask_question", "askQuestion", 0, Type::Message, ask_type),
        Some("interaction"),
    );
    add(
        &mut files,
        "exa.cortex_pb.CascadeUserInteraction",
        field("ask_question", "askQuestion", 0, Type::Message, ask_type),
        Some("interaction"),
    );
    add(
        &mut files,
        "exa.cortex_pb.CortexStepCheckpoint",
        field(
            "render_latest_checkpoint",
            "renderLatestCheckpoint",
            0,
            Type::Bool,
            None,
        ),
        None,
    );
    add(
        &mut files,
        "exa.cortex_pb.CortexStepCheckpoint",
        field(
            "render_user_message_step_index",
            "renderUserMessageStepIndex",
            0,
            Type::Uint64,
            None,
        ),
        None,
    );
    add(
        &mut files,
        "exa.cortex_pb.CustomizationConfig",
        field("enable_json_hooks", "enableJsonHooks", 0, Type::Bool, None),
        None,
    );
    add(
        &mut files,
        "exa.cortex_pb.CascadeToolConfig",
        field(
            "permission_config",
            "permissionConfig",
            0,
            Type::Message,
            Some(".exa.cortex_pb.TestPermissionConfig"),
        ),
        None,
    );
    add(
        &mut files,
        "exa.cortex_pb.RunCommandToolConfig",
        field(
            "enable_terminal_sandbox",
            "enableTerminalSandbox",
            0,
            Type::Bool,
            None,
        ),
        None,
    );
    add(
        &mut files,
        "exa.cortex_pb.CascadePlannerConfig",
        field("use_ai_credits", "useAiCredits", 0, Type::Bool, None),
        None,
    );
    let persist = message_mut(&mut files, "exa.cortex_pb.PermissionInteractionSpec");
    let e = persist
        .enum_type
        .iter_mut()
        .find(|e| e.name() == "PersistSuggestionType")
        .expect("PersistSuggestionType");
    let n = e.value.iter().map(|v| v.number() + 1).max().unwrap_or(0);
    e.value.push(EnumValueDescriptorProto {
        name: Some("PERSIST_SUGGESTION_TYPE_SUGGESTED".into()),
        number: Some(n),
        ..Default::default()
    });
    FileDescriptorSet { file: files }.encode_to_vec()
}
