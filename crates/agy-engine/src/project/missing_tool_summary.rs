//! Resultless run_command and view_file calls rejected for missing toolSummary.

use super::args::ArgBound;
use super::doc::RuleDoc;
use super::family::{Args, Ctx, Family, Hook, Presented};
use super::fields::{
    ensure, extra_field, history, text, tool_source, Wrapper, BUILTIN, INVALID, PENDING, R,
};
use super::reasons::Reason;
use crate::rules::RuleId;

/// Both error strings of the rejection, exactly.
pub(crate) const MISSING_TOOL_SUMMARY: &str =
    "invalid arguments:\n- missing property 'toolSummary'";

const COMMAND_SHAPE: &[&str] = &[
    "CommandLine",
    "Cwd",
    "WaitMsBeforeAsync",
    "IsDaemon",
    "RunPersistent",
    "toolAction",
];
const READ_SHAPE: &[&str] = &["AbsolutePath", "StartLine", "EndLine", "toolAction"];

pub(crate) const DOCS: &[RuleDoc] = &[RuleDoc {
    rule: RuleId::MissingToolSummary,
    accepts: "A resultless run_command or view_file wrapper with status INVALID, tool source BUILTIN, status history exactly PENDING, INVALID, only the type, status, metadata, error and generic.args fields, an error of exactly short and full text both `invalid arguments:\\n- missing property 'toolSummary'`, and arguments equal to the metadata tool call: the command shape CommandLine, Cwd (JSON strings), WaitMsBeforeAsync (canonical decimal), IsDaemon=false, RunPersistent=false and toolAction (JSON string); or the read shape AbsolutePath, toolAction (JSON strings), StartLine and EndLine (canonical decimals). Presented unchanged.",
    reasons: &[
        Reason::MissingSummaryError,
        Reason::MissingSummaryOutcome,
        Reason::MissingSummaryArguments,
        Reason::MissingSummaryRecords,
        Reason::ArgumentsRepeatToolCall,
    ],
}];

/// "A resultless run_command or view_file rejected for missing toolSummary
/// stays generic. Both error strings must be exactly invalid arguments:\n-
/// missing property 'toolSummary' (where \n is a newline), the status must
/// be INVALID, the tool source BUILTIN, and the history PENDING, INVALID. The
/// arguments must equal the retained metadata tool call. The command shape
/// requires CommandLine, Cwd, WaitMsBeforeAsync, IsDaemon=false,
/// RunPersistent=false and toolAction; the read shape requires AbsolutePath,
/// StartLine, EndLine and toolAction."
///
/// Bounds: "A result, toolSummary, other arguments, task details, permission
/// or interaction records, or another error fails. This mapping preserves
/// the entire wrapper; it does not synthesize a native failed command or
/// file read." The shapes are exact key sets; string arguments must be JSON
/// strings and numbers canonical decimals.
fn project(_ctx: &Ctx<'_>, w: &Wrapper) -> R<Presented> {
    let rule = RuleId::MissingToolSummary;
    if let Some(f) = w.extra_step_field(&["type", "status", "metadata", "error", "generic"]) {
        return super::fields::reject(Some(rule), Reason::MissingSummaryRecords, f);
    }
    if let Some(f) = w.extra_generic_field(&["args"]) {
        return super::fields::reject(
            Some(rule),
            Reason::MissingSummaryRecords,
            format!("generic.{f}"),
        );
    }
    let err_ok = w.error.as_ref().is_some_and(|e| {
        extra_field(e, &["short_error", "full_error"]).is_none()
            && text(e, "short_error") == MISSING_TOOL_SUMMARY
            && text(e, "full_error") == MISSING_TOOL_SUMMARY
    });
    ensure(err_ok, rule, Reason::MissingSummaryError, || {
        w.error
            .as_ref()
            .map(|e| format!("{:?}", text(e, "short_error")))
            .unwrap_or_else(|| "no error".into())
    })?;
    let src = tool_source(w.step);
    let h = history(w.step);
    ensure(
        w.status == INVALID && src.as_deref() == Some(BUILTIN) && h == [PENDING, INVALID],
        rule,
        Reason::MissingSummaryOutcome,
        || format!("status {}, tool source {src:?}, history {h:?}", w.status),
    )?;
    let a = &w.args;
    let shape_ok = match w.tool.as_str() {
        "run_command" => {
            a.string("CommandLine").is_some()
                && a.string("Cwd").is_some()
                && a.canonical_uint("WaitMsBeforeAsync").is_some()
                && a.raw("IsDaemon") == Some("false")
                && a.raw("RunPersistent") == Some("false")
                && a.string("toolAction").is_some()
        }
        "view_file" => {
            a.string("AbsolutePath").is_some()
                && a.canonical_uint("StartLine").is_some()
                && a.canonical_uint("EndLine").is_some()
                && a.string("toolAction").is_some()
        }
        _ => false,
    };
    // The values of the declared shapes; the names (exactly the shape) and
    // the repeat of the tool call are the declared bound ([`ARGS`]), which
    // the dispatcher enforces.
    ensure(shape_ok, rule, Reason::MissingSummaryArguments, || {
        format!("{} arguments {:?}", w.tool, a.keys())
    })?;
    Ok(Presented::unchanged(rule))
}

/// The family's argument bounds (the command and read shapes, exactly, repeating the tool call).
const ARGS: &[Args] = &[
    Args::of(
        RuleId::MissingToolSummary,
        "run_command",
        ArgBound::NONE.required(COMMAND_SHAPE).repeating(),
        Reason::MissingSummaryArguments,
    )
    .repeat_refused(Reason::ArgumentsRepeatToolCall),
    Args::of(
        RuleId::MissingToolSummary,
        "view_file",
        ArgBound::NONE.required(READ_SHAPE).repeating(),
        Reason::MissingSummaryArguments,
    )
    .repeat_refused(Reason::ArgumentsRepeatToolCall),
];

/// The family: resultless run_command and view_file calls rejected for
/// missing toolSummary (status INVALID), reached from the resultless family.
pub(crate) const FAMILY: Family = Family {
    file: "missing_tool_summary.rs",
    docs: DOCS,
    claims: &[],
    hooks: &[
        Hook::Resultless {
            tool: "run_command",
            status: INVALID,
            project,
        },
        Hook::Resultless {
            tool: "view_file",
            status: INVALID,
            project,
        },
    ],
    args: ARGS,
};
