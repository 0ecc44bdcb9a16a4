//! invoke_subagent: the tools143 InvokeSubagent payload, with the tools144
//! Workspace=inherit argument.

use super::common::{
    arguments, arguments_hold, call_payload, child, native_step, payload_claim, payload_fields,
    presented_native, put, status_is, wrapper_shape, COMPLETED, SHOWS_PAYLOAD,
};
use crate::project::args::ArgBound;
use crate::project::doc::RuleDoc;
use crate::project::family::{Args, Ctx, Family, Presented};
use crate::project::fields::{flag, message_refs, reject, Wrapper, DONE, R};
use crate::project::reasons::Reason;
use crate::rules::RuleId;
use bytes::Bytes;
use prost_reflect::Value;

const INVOKE_TYPE: &str = "CORTEX_STEP_TYPE_INVOKE_SUBAGENT";
const PAYLOAD_FIELDS: &[&str] = &["specs", "results", "task_mode", "outcome"];

pub(crate) const DOCS: &[RuleDoc] = &[
    RuleDoc {
        rule: RuleId::ModernInvokeSubagent,
        accepts: "A DONE invoke_subagent wrapper whose result is only result text and an Any exa.cortex.core.tools.InvokeSubagent with outcome COMPLETED, task_mode unset, at least one child specification and setting only specs, results and outcome; the argument exactly Prompt (a JSON string), or under tools144 Prompt and Workspace \"inherit\" repeating the metadata tool call; no outer error, task details, permission or interaction records. Presented as an INVOKE_SUBAGENT step with the wrapper's status and metadata and invoke_subagent {specs, results} copied unchanged from the payload.",
        reasons: &[
            Reason::ModernTool,
            Reason::ModernStatus,
            Reason::ModernTaskMode,
            Reason::ModernWrapperField,
            Reason::ModernPayloadField,
            Reason::ModernArguments,
            Reason::ModernWorkspace,
            Reason::ModernDeclaration,
            Reason::ModernPayloadUndecodable,
            Reason::ModernPresentedField,
        ],
    },
    RuleDoc {
        rule: RuleId::ModernSubagentInheritWorkspace,
        accepts: "A modern invoke_subagent (see modern-invoke-subagent) whose arguments are exactly Prompt and Workspace with Workspace the JSON string \"inherit\" and both arguments equal to the metadata tool call's; child specifications and results unchanged. Other workspace selectors, or arguments that differ from the tool call, are refused.",
        reasons: &[Reason::ModernWorkspace],
    },
];

/// "InvokeSubagent preserves the child specifications and results"
/// (tools143), bounded to "a completed subagent invocation without task
/// mode"; tools144: "Modern subagent invocations also accept
/// Workspace=inherit when the stored arguments match the metadata tool
/// call; child specifications and results remain unchanged. Other workspace
/// selectors ... remain unknown."
///
/// Bounds (stricter where silent): DONE and COMPLETED; task_mode false; at
/// least one child specification; the arguments exactly Prompt, or Prompt
/// and Workspace "inherit" repeating the tool call; the result only text
/// and payload; no outer error or task details; permission1.
fn project(ctx: &Ctx<'_>, w: &Wrapper, bytes: &Bytes) -> R<Presented> {
    let rule = RuleId::ModernInvokeSubagent;
    let payload = call_payload(ctx, w, rule, "InvokeSubagent", &["invoke_subagent"], bytes)?;
    wrapper_shape(
        w,
        rule,
        &["type", "status", "metadata", "generic"],
        &["result", "payload"],
    )?;
    if flag(&payload, "task_mode") {
        return reject(Some(rule), Reason::ModernTaskMode, String::new());
    }
    payload_fields(&payload, rule, PAYLOAD_FIELDS)?;
    status_is(w, &payload, rule, DONE, COMPLETED)?;
    let specs = message_refs(&payload, "specs");
    let results = message_refs(&payload, "results");
    // Prompt a JSON string is checked here (the ArgBound vocabulary cannot
    // say it); the names are the declared bounds ([`ARGS`]), which the
    // dispatcher enforces: exactly Prompt, or, under tools144's rule, Prompt
    // and Workspace repeating the retained tool call.
    arguments_hold(
        w,
        rule,
        !specs.is_empty() && w.args.string("Prompt").is_some(),
    )?;
    let mut extra = Vec::new();
    // Exactly Prompt and Workspace is tools144's shape; its Workspace
    // "inherit" is checked here (no stored field holds it for a bound to
    // name). Any other names stay under tools143's bound alone.
    if w.args.keys_are(&["Prompt", "Workspace"]) {
        if w.args.string("Workspace").as_deref() != Some("inherit") {
            return reject(
                Some(RuleId::ModernSubagentInheritWorkspace),
                Reason::ModernWorkspace,
                w.args.raw("Workspace").unwrap_or_default().to_string(),
            );
        }
        extra.push(RuleId::ModernSubagentInheritWorkspace);
    }

    let step = native_step(w, rule, INVOKE_TYPE, false)?;
    let mut inv = child(&step, rule, "invoke_subagent")?;
    let list = |v: Vec<&prost_reflect::DynamicMessage>| {
        Value::List(v.into_iter().map(|m| Value::Message(m.clone())).collect())
    };
    put(&mut inv, rule, "specs", list(specs))?;
    if !results.is_empty() {
        put(&mut inv, rule, "results", list(results))?;
    }
    presented_native(step, rule, ("invoke_subagent", inv), extra, SHOWS_PAYLOAD)
}

/// The family's argument bounds (Prompt; tools144's optional Workspace=inherit, with which the arguments repeat the tool call).
const ARGS: &[Args] = &[
    arguments(
        RuleId::ModernInvokeSubagent,
        "invoke_subagent",
        ArgBound::NONE.required(&["Prompt"]),
    ),
    Args::of(
        RuleId::ModernSubagentInheritWorkspace,
        "invoke_subagent",
        ArgBound::NONE
            .required(&["Prompt"])
            .optional(&["Workspace"])
            .repeating(),
        Reason::ModernWorkspace,
    ),
];

/// The family: tools143 InvokeSubagent (tools144 Workspace=inherit).
pub(crate) const FAMILY: Family = Family {
    file: "modern/invoke_subagent.rs",
    docs: DOCS,
    claims: &[payload_claim(
        "type.googleapis.com/exa.cortex.core.tools.InvokeSubagent",
        project,
    )],
    hooks: &[],
    args: ARGS,
};
