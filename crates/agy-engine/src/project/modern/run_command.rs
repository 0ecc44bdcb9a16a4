//! run_command: the tools143 RunCommand payload and the tools144 canceled
//! background command with a render-only result.

use super::common::{
    arguments, arguments_hold, call_payload, child, native_step, payload_claim, payload_fields,
    presented_native, put, status_is, wrapper_shape, COMPLETED, SHOWS_RESULT, WAIT_FIELD,
};
use crate::project::args::ArgBound;
use crate::project::doc::RuleDoc;
use crate::project::family::{Args, Claim, Ctx, Family, Presented};
use crate::project::fields::{
    flag, history, int, reject, sub, text, Wrapper, CANCELED, DONE, PENDING, R, RUNNING,
};
use crate::project::reasons::Reason;
use crate::rules::RuleId;
use bytes::Bytes;
use prost_reflect::Value;

const RUN_COMMAND_TYPE: &str = "CORTEX_STEP_TYPE_RUN_COMMAND";
/// The payload fields the completed mapping reads; anything else set is a
/// newly populated field.
const PAYLOAD_FIELDS: &[&str] = &["command_line", "cwd", "exit_code", "background", "outcome"];
/// The background wait argument tools144 requires.
const BACKGROUND_WAIT: &str = "5000";

pub(crate) const DOCS: &[RuleDoc] = &[
    RuleDoc {
        rule: RuleId::ModernRunCommand,
        accepts: "A run_command wrapper with status DONE whose result is only result text and an Any exa.cortex.core.tools.RunCommand with outcome COMPLETED setting only command_line, cwd, exit_code, background and outcome; arguments CommandLine and Cwd (JSON strings equal to command_line and cwd) and optionally WaitMsBeforeAsync (a canonical decimal); optional task details; no outer error, permission or interaction records. Presented as a RUN_COMMAND step with the wrapper's status, metadata and task details and run_command {command_line and proposed_command_line: command_line, cwd, blocking: not background, exit_code when stored, combined_output.full: the stored result text}.",
        reasons: &[
            Reason::ModernTool,
            Reason::ModernStatus,
            Reason::ModernWrapperField,
            Reason::ModernPayloadField,
            Reason::ModernArguments,
            Reason::ModernDeclaration,
            Reason::ModernPayloadUndecodable,
            Reason::ModernPresentedField,
        ],
    },
    RuleDoc {
        rule: RuleId::ModernCanceledBackgroundCommand,
        accepts: "A CANCELED run_command wrapper without a payload whose result holds only render information, with exactly the arguments CommandLine, Cwd (JSON strings) and WaitMsBeforeAsync exactly 5000, a status history of exactly PENDING, RUNNING, CANCELED, task details with moved_to_background_at, and no outer error, permission or interaction records. Presented as a RUN_COMMAND step with the wrapper's status, metadata and task details and run_command {command_line and proposed_command_line: CommandLine, cwd: Cwd, combined_output: {}} (no exit code).",
        reasons: &[
            Reason::BackgroundResult,
            Reason::BackgroundWait,
            Reason::BackgroundHistory,
            Reason::BackgroundTimestamp,
            Reason::ModernWrapperField,
            Reason::ModernPresentedField,
        ],
    },
];

/// "RunCommand retains outer metadata and task details and presents the
/// stored result text as command output" (tools143), bounded to "completed
/// commands".
///
/// Bounds (the stricter reading where the wording is silent): tool
/// run_command, wrapper DONE and payload outcome COMPLETED; the result is
/// only the result text and the payload (no output URI, media, metadata or
/// render information); the payload sets only command_line, cwd, exit_code,
/// background and outcome (its own `output` and `wait_ms_before_async` are
/// newly populated fields: the stored result text is the output); the
/// arguments are exactly CommandLine and Cwd, optionally WaitMsBeforeAsync
/// (canonical decimal), and CommandLine/Cwd equal the payload; task details
/// optional; no outer error; permission1.
fn project(ctx: &Ctx<'_>, w: &Wrapper, bytes: &Bytes) -> R<Presented> {
    let rule = RuleId::ModernRunCommand;
    let payload = call_payload(ctx, w, rule, "RunCommand", &["run_command"], bytes)?;
    wrapper_shape(
        w,
        rule,
        &["type", "status", "metadata", "generic", "task_details"],
        &["result", "payload"],
    )?;
    payload_fields(&payload, rule, PAYLOAD_FIELDS)?;
    status_is(w, &payload, rule, DONE, COMPLETED)?;
    let cmd = text(&payload, "command_line");
    let cwd = text(&payload, "cwd");
    // The names and CommandLine/Cwd (= the payload's) are the declared bound
    // ([`ARGS`]), which the dispatcher enforces. WaitMsBeforeAsync, when
    // present, a canonical decimal is checked here: the ArgBound vocabulary
    // cannot say it.
    let wait_ok =
        !w.args.has("WaitMsBeforeAsync") || w.args.canonical_uint("WaitMsBeforeAsync").is_some();
    arguments_hold(w, rule, wait_ok && !cmd.is_empty())?;
    let output = w.result.map(|r| text(r, "result")).unwrap_or_default();

    let step = native_step(w, rule, RUN_COMMAND_TYPE, true)?;
    let mut rc = child(&step, rule, "run_command")?;
    put(&mut rc, rule, "command_line", Value::String(cmd.clone()))?;
    put(&mut rc, rule, "proposed_command_line", Value::String(cmd))?;
    put(&mut rc, rule, "cwd", Value::String(cwd))?;
    put(
        &mut rc,
        rule,
        "blocking",
        Value::Bool(!flag(&payload, "background")),
    )?;
    if let Some(code) = int(&payload, "exit_code") {
        let code = i32::try_from(code)
            .or_else(|_| reject(Some(rule), Reason::ModernPayloadField, "exit_code"))?;
        put(&mut rc, rule, "exit_code", Value::I32(code))?;
    }
    let mut out = child(&rc, rule, "combined_output")?;
    put(&mut out, rule, "full", Value::String(output))?;
    put(&mut rc, rule, "combined_output", Value::Message(out))?;
    // replay147: the copied form (see `replay_wait.rs`); the omitted form is
    // the comparison's alternative for the whole trajectory.
    if let Some(wait) = w.args.canonical_uint("WaitMsBeforeAsync") {
        put(
            &mut rc,
            RuleId::ModernReplayWaits,
            WAIT_FIELD,
            Value::U64(wait),
        )?;
    }
    let extra = vec![RuleId::ModernReplayWaits];
    presented_native(step, rule, ("run_command", rc), extra, SHOWS_RESULT)
}

/// Whether a payload-less wrapper is the tools144 canceled background
/// command's shape to test (run_command, CANCELED, with a result).
pub(crate) fn is_canceled_background(w: &Wrapper) -> bool {
    w.tool == "run_command" && w.status == CANCELED && w.result.is_some()
}

/// "Canceled background run_command steps with render-only results become
/// native command steps with the stored command and empty output. They
/// retain metadata and task details, require the observed
/// pending/running/canceled history, background timestamp and 5000 ms wait
/// argument, and do not invent an exit code." (tools144)
///
/// Bounds (stricter where silent): the result holds only
/// step_render_info; the arguments are exactly CommandLine, Cwd (JSON
/// strings) and WaitMsBeforeAsync `5000`; the history is exactly PENDING,
/// RUNNING, CANCELED; task details are present with moved_to_background_at;
/// no outer error; permission1. The presented command has no blocking flag,
/// wait or exit code: only the stored command, its cwd and an empty output.
pub(crate) fn project_canceled_background(w: &Wrapper) -> R<Presented> {
    let rule = RuleId::ModernCanceledBackgroundCommand;
    if w.extra_result_field(&["step_render_info"]).is_some()
        || w.result
            .is_none_or(|r| sub(r, "step_render_info").is_none())
    {
        return reject(Some(rule), Reason::BackgroundResult, "result fields");
    }
    wrapper_shape(
        w,
        rule,
        &["type", "status", "metadata", "generic", "task_details"],
        &["step_render_info"],
    )?;
    let cmd = w.args.string("CommandLine").unwrap_or_default();
    let cwd = w.args.string("Cwd");
    // Exactly these three names is the declared bound ([`ARGS`]), which the
    // dispatcher enforces; their values (JSON strings, the command
    // nonempty, the wait exactly 5000) are checked here: the ArgBound
    // vocabulary cannot say them.
    if cmd.is_empty() || cwd.is_none() || w.args.raw("WaitMsBeforeAsync") != Some(BACKGROUND_WAIT) {
        return reject(
            Some(rule),
            Reason::BackgroundWait,
            format!("{:?}", w.args.0),
        );
    }
    let h = history(w.step);
    if h != [PENDING, RUNNING, CANCELED] {
        return reject(Some(rule), Reason::BackgroundHistory, h.join(", "));
    }
    let backgrounded =
        sub(w.step, "task_details").is_some_and(|td| sub(td, "moved_to_background_at").is_some());
    if !backgrounded {
        return reject(Some(rule), Reason::BackgroundTimestamp, String::new());
    }
    let step = native_step(w, rule, RUN_COMMAND_TYPE, true)?;
    let mut rc = child(&step, rule, "run_command")?;
    put(&mut rc, rule, "command_line", Value::String(cmd.clone()))?;
    put(&mut rc, rule, "proposed_command_line", Value::String(cmd))?;
    put(&mut rc, rule, "cwd", Value::String(cwd.unwrap_or_default()))?;
    let out = child(&rc, rule, "combined_output")?;
    put(&mut rc, rule, "combined_output", Value::Message(out))?;
    presented_native(step, rule, ("run_command", rc), Vec::new(), &[])
}

/// The family's argument bounds (CommandLine and Cwd are the payload's; the background command's three arguments).
const ARGS: &[Args] = &[
    arguments(
        RuleId::ModernRunCommand,
        "run_command",
        ArgBound::NONE
            .equal(&[("CommandLine", "command_line"), ("Cwd", "cwd")])
            .optional(&["WaitMsBeforeAsync"]),
    ),
    Args::of(
        RuleId::ModernCanceledBackgroundCommand,
        "run_command",
        ArgBound::NONE.required(&["CommandLine", "Cwd", "WaitMsBeforeAsync"]),
        Reason::BackgroundWait,
    ),
];

/// The family: tools143 RunCommand payloads and tools144's payload-less
/// canceled background command.
pub(crate) const FAMILY: Family = Family {
    file: "modern/run_command.rs",
    docs: DOCS,
    claims: &[
        payload_claim(
            "type.googleapis.com/exa.cortex.core.tools.RunCommand",
            project,
        ),
        Claim::PayloadlessWhen {
            when: is_canceled_background,
            project: |_ctx, w| project_canceled_background(w),
            extra: &[RuleId::ModernPermission1],
        },
    ],
    hooks: &[],
    args: ARGS,
};
