//! The run_command bridge formatting failure (history2): an ERROR wrapper over
//! a successful DONE native command.

use super::args::ArgBound;
use super::doc::RuleDoc;
use super::family::{Args, Family, Hook};
use super::fields::{
    ensure, flag, has_any, history, int, only_short_full, single_allow_hook, sub, text,
    tool_source, Wrapper, BUILTIN, DONE, ERROR, PENDING, R, RUNNING,
};
use super::native::RUN_COMMAND;
use super::reasons::Reason;
use crate::rules::RuleId;
use prost_reflect::DynamicMessage;

/// The start of both of the wrapper's error strings.
pub(crate) const BRIDGE_PREFIX: &str =
    "bridged adapter run_command: to string: template execution error: ";
/// The observed wait before going asynchronous.
const WAIT_MS: u64 = 5000;
/// The observed shell.
const SHELL: &str = "bash";

pub(crate) const DOCS: &[RuleDoc] = &[RuleDoc {
    rule: RuleId::CommandBridgeFormatFailure,
    accepts: "An ERROR wrapper whose outer error holds only equal short and full text starting `bridged adapter run_command: to string: template execution error: `, whose result holds only the payload: a DONE embedded RUN_COMMAND Step without an error, with exit_code 0, blocking, ran_in_sandbox, shell \"bash\", wait_ms_before_async 5000, command_line = proposed_command_line = the CommandLine argument (command unset or equal), cwd = the Cwd argument; wrapper arguments CommandLine, Cwd, WaitMsBeforeAsync (canonical 5000), optionally toolAction and toolSummary, equal to both Steps' tool calls; both Steps with tool source BUILTIN and exactly one {decision: allow} hook; histories PENDING, RUNNING, ERROR (wrapper) and PENDING, RUNNING (native); no task details, permission or interaction records. Presented as the native Step with status ERROR.",
    reasons: &[
        Reason::BridgeError,
        Reason::BridgeCommand,
        Reason::BridgeHistory,
        Reason::BridgeRecords,
        Reason::BridgeResult,
    ],
}];

/// "A run_command bridge formatting failure stores a successful DONE native
/// command inside an ERROR wrapper. The wrapper's short and full errors must
/// match and start with bridged adapter run_command: to string: template
/// execution error: . Its result contains only the native payload. The
/// ordinary response presents that payload with status ERROR, preserving all
/// native command output and metadata while omitting the wrapper's error.
/// Qualification requires exit code zero, a blocking sandboxed Bash command,
/// a 5000 ms wait, and matching command, proposed command, working directory
/// and tool-call arguments. Both steps must record the built-in tool source
/// and one allow hook; their histories must be PENDING, RUNNING, ERROR
/// outside and PENDING, RUNNING inside."
///
/// Bounds: "Native errors, task details, permission or interaction records,
/// other result fields and other command outcomes fail." "Bash" is read as
/// run_command.shell == "bash" and "sandboxed" as ran_in_sandbox; the wrapper
/// may carry toolAction and toolSummary besides the three command arguments.
pub(crate) fn check(w: &Wrapper, n: &DynamicMessage) -> R<()> {
    let rule = RuleId::CommandBridgeFormatFailure;
    let err_ok = w.error.as_ref().is_some_and(|e| {
        let short = text(e, "short_error");
        only_short_full(e) && short == text(e, "full_error") && short.starts_with(BRIDGE_PREFIX)
    });
    ensure(err_ok, rule, Reason::BridgeError, || {
        w.error
            .as_ref()
            .map(|e| format!("{:?}", text(e, "short_error")))
            .unwrap_or_default()
    })?;
    ensure(
        w.wrapper_result_is(&["payload"]),
        rule,
        Reason::BridgeResult,
        || w.extra_result_field(&["payload"]).unwrap_or_default(),
    )?;
    let records = [
        "task_details",
        "permissions",
        "completed_interactions",
        "requested_interaction",
    ];
    ensure(
        !has_any(w.step, &records) && !has_any(n, &records) && !has_any(n, &["error"]),
        rule,
        Reason::BridgeRecords,
        String::new,
    )?;
    let rc = sub(n, "run_command").unwrap_or(n);
    let cmd = w.args.string("CommandLine");
    let cwd = w.args.string("Cwd");
    let allowed = [
        "CommandLine",
        "Cwd",
        "WaitMsBeforeAsync",
        "toolAction",
        "toolSummary",
    ];
    let native_cmd = text(rc, "command_line");
    let outcome_ok = int(rc, "exit_code") == Some(0)
        && flag(rc, "blocking")
        && flag(rc, "ran_in_sandbox")
        && text(rc, "shell") == SHELL
        && int(rc, "wait_ms_before_async") == Some(i128::from(WAIT_MS))
        && cmd.as_deref() == Some(native_cmd.as_str())
        && text(rc, "proposed_command_line") == native_cmd
        && (text(rc, "command").is_empty() || text(rc, "command") == native_cmd)
        && cwd.as_deref() == Some(text(rc, "cwd").as_str())
        && w.args.canonical_uint("WaitMsBeforeAsync") == Some(WAIT_MS)
        && w.args.extra_key(&allowed).is_none()
        && w.args.repeat_tool_call(w.step)
        && w.args.repeat_tool_call(n);
    ensure(outcome_ok, rule, Reason::BridgeCommand, || {
        format!("command {native_cmd:?}, arguments {:?}", w.args.keys())
    })?;
    let exec_ok = tool_source(w.step).as_deref() == Some(BUILTIN)
        && tool_source(n).as_deref() == Some(BUILTIN)
        && single_allow_hook(w.step)
        && single_allow_hook(n);
    ensure(exec_ok, rule, Reason::BridgeCommand, || {
        "tool source or hook results".into()
    })?;
    let (wh, nh) = (history(w.step), history(n));
    ensure(
        wh == [PENDING, RUNNING, ERROR] && nh == [PENDING, RUNNING],
        rule,
        Reason::BridgeHistory,
        || format!("wrapper {wh:?}, native {nh:?}"),
    )
}

/// The family's argument bounds (the command and working directory are the
/// native command's; the wait is 5000; repeating the tool calls). Exactly
/// these three: the embedded allow-list of run_command over RUN_COMMAND
/// (`checks::WRAPPER_TOOLS`) bounds this route too, and names no other.
const ARGS: &[Args] = &[Args::of(
    RuleId::CommandBridgeFormatFailure,
    "run_command",
    ArgBound::NONE
        .equal(&[
            ("CommandLine", "run_command.command_line"),
            ("Cwd", "run_command.cwd"),
        ])
        .required(&["WaitMsBeforeAsync"])
        .repeating(),
    Reason::BridgeCommand,
)];

/// The family: a run_command bridge formatting failure (an ERROR wrapper
/// with an outer error over a DONE native command).
pub(crate) const FAMILY: Family = Family {
    file: "command_bridge.rs",
    docs: DOCS,
    claims: &[],
    hooks: &[Hook::OuterError {
        native_type: RUN_COMMAND,
        native_status: Some(DONE),
        presented_status: Some(ERROR),
        rule: RuleId::CommandBridgeFormatFailure,
        check,
    }],
    args: ARGS,
};
