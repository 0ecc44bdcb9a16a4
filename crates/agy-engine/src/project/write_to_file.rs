//! The write_to_file Append argument of an embedded code-action.

use super::args::ArgBound;
use super::doc::RuleDoc;
use super::family::{Args, Family, Hook};
use super::fields::{flag, has, reject, step_type, sub, tool_call_args, Wrapper, R};
use super::native::CODE_ACTION;
use super::reasons::Reason;
use crate::rules::RuleId;
use prost_reflect::DynamicMessage;

pub(crate) const DOCS: &[RuleDoc] = &[RuleDoc {
    rule: RuleId::WriteToFileAppend,
    accepts: "An Append argument on a write_to_file wrapper over an embedded CODE_ACTION Step, when the argument is the JSON literal true or false, the native tool-call arguments carry the same literal, and code_action.action_spec.create_file exists with append set for true and unset for false.",
    reasons: &[Reason::WriteToFileAppend],
}];

/// "A write_to_file Append argument is accepted only when it is true or false
/// and the presented native code-action Step records the same value twice:
/// as the same JSON literal in its tool-call arguments, and in
/// code_action.action_spec.create_file.append (set for true, unset for
/// false)."
///
/// Bounds: "Any other value, a call to another tool, a native Step without a
/// create_file spec, or a tool call that lacks or changes the value fails
/// with unsupported write_to_file append." (Only true was observed, in one
/// retained agy 1.2.16 session; false is accepted as the specification
/// words it.)
pub(crate) fn check_append(w: &Wrapper, n: &DynamicMessage) -> R<()> {
    let fail = |d: String| {
        reject(
            Some(RuleId::WriteToFileAppend),
            Reason::WriteToFileAppend,
            d,
        )
    };
    if w.tool != "write_to_file" {
        return fail(format!("a call to {}", w.tool));
    }
    let value = match w.args.raw("Append") {
        Some("true") => true,
        Some("false") => false,
        other => return fail(format!("Append {}", other.unwrap_or_default())),
    };
    if step_type(n) != CODE_ACTION {
        return fail(format!("native {}", step_type(n)));
    }
    let Some(cf) = sub(n, "code_action")
        .and_then(|ca| sub(ca, "action_spec"))
        .and_then(|spec| sub(spec, "create_file"))
    else {
        return fail("native Step without a create_file spec".into());
    };
    match tool_call_args(n).and_then(|a| a.get("Append").cloned()) {
        Some(serde_json::Value::Bool(b)) if b == value => {}
        other => {
            return fail(format!(
                "native tool call Append {}",
                other
                    .map(|o| o.to_string())
                    .unwrap_or_else(|| "absent".into())
            ))
        }
    }
    if has(cf, "append") != value || flag(cf, "append") != value {
        return fail(format!("create_file.append {}", flag(cf, "append")));
    }
    Ok(())
}

/// The family's argument bounds (Append, when present, is the native create_file.append).
const ARGS: &[Args] = &[Args::of(
    RuleId::WriteToFileAppend,
    "write_to_file",
    ArgBound::NONE
        .optional(&["TargetFile", "CodeContent"])
        .equal_if_present(&[("Append", "code_action.action_spec.create_file.append")]),
    Reason::WriteToFileAppend,
)];

/// The family: the Append argument of an embedded write_to_file.
pub(crate) const FAMILY: Family = Family {
    file: "write_to_file.rs",
    docs: DOCS,
    claims: &[],
    hooks: &[Hook::EmbeddedArgument {
        arg: "Append",
        rule: RuleId::WriteToFileAppend,
        check: check_append,
    }],
    args: ARGS,
};
