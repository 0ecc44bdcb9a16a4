//! Resultless wrappers: generic steps with arguments but no result. Failed
//! before the tool ran (presented unchanged), and the run_command shapes
//! presented as RUN_COMMAND steps: hook-denied, rejected permission request,
//! canceled while the prompt was open. The missing-toolSummary rejection and
//! the BUILTIN view_file have their own files.

use super::args::ArgBound;
use super::doc::RuleDoc;
use super::family::{unqualified, Args, Claim, Ctx, Family, Hook, Presented, ProjectFn};
use super::fields::{
    ensure, enum_name, extra_field, has, history, hooks, messages, new_sub, only_short_full,
    plain_for_go_quote, reject, set, set_enum, set_fields, single_allow_hook, sub, text,
    tool_source, trigger_name, Wrapper, CANCELED, ERROR, INVALID, R, RUNNING, WAITING,
};
use super::native::RUN_COMMAND;
use super::reasons::Reason;
use crate::rules::RuleId;
use prost_reflect::{DynamicMessage, ReflectMessage, Value};

/// The prefix of a PreToolUse hook denial.
pub(crate) const HOOK_DENIED_PREFIX: &str = "tool call denied by pre-tool hook:";
/// The prefix of a rejected permission request's error.
pub(crate) const PERMISSION_DENIED_PREFIX: &str = "permission check failed for command ";
/// agy's advice after a rejected permission request: the third line of both
/// error texts. The specification describes this line ("agy's advice not to
/// circumvent the denial") without quoting it; this is the one literal the
/// reader accepts (the wording the modeled shapes carry), compared exactly: a
/// one-word change fails.
pub const REJECTED_ADVICE: &str =
    "Do not attempt to run this command another way or to circumvent this denial.";
/// The prefix of a generate_image argument rejection.
pub(crate) const INVALID_ARGUMENTS_PREFIX: &str = "invalid arguments:";

/// The statuses a wrapper that failed before its tool ran may have, per
/// tool (its arguments: [`ARGS`]).
pub(crate) const FAILED_BEFORE_RUN: &[(&str, &[&str])] = &[
    ("write_to_file", &[ERROR, INVALID]),
    ("view_file", &[ERROR]),
    ("find_by_name", &[ERROR]),
    ("list_dir", &[ERROR]),
    ("schedule", &[ERROR]),
    ("generate_image", &[INVALID]),
];

/// The family's argument bounds: a wrapper that failed before its tool ran,
/// per tool (those required and those allowed besides), and the three
/// command shapes (exactly [`COMMAND_ARGS`]; the rejected request may add
/// BypassSandbox "false"; the rejected and canceled ones repeat the
/// retained tool call).
pub(crate) const ARGS: &[Args] = &[
    Args::of(
        RuleId::ResultlessFailedBeforeRun,
        "write_to_file",
        ArgBound::NONE.required(&["TargetFile"]).optional(&[
            "CodeContent",
            "EmptyFile",
            "Overwrite",
            "Description",
            "Complexity",
            "toolAction",
            "toolSummary",
        ]),
        Reason::ResultlessArguments,
    ),
    Args::of(
        RuleId::ResultlessFailedBeforeRun,
        "view_file",
        ArgBound::NONE.required(&["AbsolutePath"]).optional(&[
            "StartLine",
            "EndLine",
            "toolAction",
            "toolSummary",
        ]),
        Reason::ResultlessArguments,
    ),
    Args::of(
        RuleId::ResultlessFailedBeforeRun,
        "find_by_name",
        ArgBound::NONE
            .required(&["SearchDirectory", "Pattern"])
            .optional(&[
                "Excludes",
                "Type",
                "MaxDepth",
                "Extensions",
                "FullPath",
                "toolAction",
                "toolSummary",
            ]),
        Reason::ResultlessArguments,
    ),
    Args::of(
        RuleId::ResultlessFailedBeforeRun,
        "list_dir",
        ArgBound::NONE
            .required(&["DirectoryPath"])
            .optional(&["toolAction", "toolSummary"]),
        Reason::ResultlessArguments,
    ),
    Args::of(
        RuleId::ResultlessFailedBeforeRun,
        "schedule",
        ArgBound::NONE.optional(&["DurationSeconds", "Prompt", "TimerCondition"]),
        Reason::ResultlessArguments,
    ),
    Args::of(
        RuleId::ResultlessFailedBeforeRun,
        "generate_image",
        ArgBound::NONE.required(&["AspectRatio", "ImageName", "Prompt"]),
        Reason::ResultlessArguments,
    ),
    Args::of(
        RuleId::ResultlessHookDenied,
        "run_command",
        ArgBound::NONE.required(COMMAND_ARGS),
        Reason::ResultlessArguments,
    ),
    Args::of(
        RuleId::ResultlessRejectedPermission,
        "run_command",
        ArgBound::NONE
            .required(COMMAND_ARGS)
            .optional(&["BypassSandbox"])
            .repeating(),
        Reason::ResultlessArguments,
    )
    .repeat_refused(Reason::ArgumentsRepeatToolCall),
    Args::of(
        RuleId::ResultlessCanceledPrompt,
        "run_command",
        ArgBound::NONE.required(COMMAND_ARGS).repeating(),
        Reason::ResultlessArguments,
    )
    .repeat_refused(Reason::ArgumentsRepeatToolCall),
];

const COMMAND_ARGS: &[&str] = &["CommandLine", "Cwd", "WaitMsBeforeAsync"];

pub(crate) const DOCS: &[RuleDoc] = &[
    RuleDoc {
        rule: RuleId::ResultlessFailedBeforeRun,
        accepts: "A resultless wrapper (arguments, an outer error of only short and full text, no result; only the type, status, metadata, error and generic.args fields), presented unchanged: write_to_file (ERROR or INVALID; requires TargetFile; allows CodeContent, EmptyFile, Overwrite, Description, Complexity, toolAction, toolSummary), view_file without a recorded tool source (ERROR; requires AbsolutePath; allows StartLine, EndLine, toolAction, toolSummary), find_by_name (ERROR; requires SearchDirectory, Pattern; allows Excludes, Type, MaxDepth, Extensions, FullPath, toolAction, toolSummary), list_dir (ERROR; requires DirectoryPath; allows toolAction, toolSummary), schedule (ERROR; at least one of DurationSeconds, Prompt, TimerCondition and nothing else), generate_image (INVALID only; exactly AspectRatio, ImageName and Prompt; the short error starts `invalid arguments:` and the full error is present and equal to it).",
        reasons: &[
            Reason::ResultlessNoError,
            Reason::ResultlessExtraField,
            Reason::ResultlessTool,
            Reason::ResultlessStatus,
            Reason::ResultlessArguments,
            Reason::ResultlessErrorPrefix,
            Reason::ResultlessFullError,
            Reason::OuterErrorText,
        ],
    },
    RuleDoc {
        rule: RuleId::ResultlessHookDenied,
        accepts: "A resultless run_command wrapper with status ERROR, exactly the arguments CommandLine and Cwd (JSON strings) and WaitMsBeforeAsync (a canonical decimal), an outer error of only short and full text, and exactly one pre-tool hook result: a deny with a nonempty reason R (hook_name, decision and reason only); the short error is exactly `tool call denied by pre-tool hook: R` (nothing after R) and the full error is present and equal to it. Presented as a RUN_COMMAND step keeping the status, metadata and error, with run_command {command_line and proposed_command_line: CommandLine, cwd: Cwd, blocking: true, combined_output: {}}.",
        reasons: &[
            Reason::ResultlessExtraField,
            Reason::ResultlessArguments,
            Reason::ResultlessErrorPrefix,
            Reason::OuterErrorText,
            Reason::HookDenyResult,
            Reason::HookDeniedErrorText,
            Reason::ResultlessFullError,
        ],
    },
    RuleDoc {
        rule: RuleId::ResultlessRejectedPermission,
        accepts: "A resultless run_command wrapper with status ERROR, the arguments CommandLine, Cwd, WaitMsBeforeAsync (and BypassSandbox \"false\" only in a subagent's conversation, whose trajectory metadata names a parent conversation) repeating the metadata tool call, no permissions grant, exactly one pre-tool hook result {decision: allow}, an outer error whose short and full text are both exactly `permission check failed for command \"C\": user denied permission to run command:` / C / `Do not attempt to run this command another way or to circumvent this denial.` (exactly these three lines, C plain printable ASCII without quote or backslash, so Go %q adds only the quotes), and one completed interaction: a request of exactly resource {action: \"command\", target: C}, persist_suggestion_type, suggested_persist_pattern, action_description, shell_name and trigger_source {type: TYPE_DEFAULT_FALLBACK} (no detail), answered with no allow field and an empty persist_grants, and nothing else in the response (no trajectory_id or step_index). Presented as a RUN_COMMAND step built like the hook-denied one, keeping status, metadata, error and the completed request.",
        reasons: &[
            Reason::ResultlessExtraField,
            Reason::ResultlessArguments,
            Reason::ResultlessErrorPrefix,
            Reason::OuterErrorText,
            Reason::ArgumentsRepeatToolCall,
            Reason::HookAllowResult,
            Reason::RejectedInteraction,
            Reason::RejectedAnswer,
            Reason::RejectedTrigger,
            Reason::RejectedGrant,
            Reason::RejectedBypass,
            Reason::RejectedBypassTopLevel,
        ],
    },
    RuleDoc {
        rule: RuleId::ResultlessCanceledPrompt,
        accepts: "A resultless run_command wrapper with status CANCELED, exactly the arguments CommandLine, Cwd and WaitMsBeforeAsync repeating the metadata tool call, no error, grant, interaction record (pending or completed) or task details, exactly one pre-tool hook result {decision: allow}, and a status history ending WAITING, RUNNING, CANCELED. Presented as a RUN_COMMAND step built like the hook-denied one, keeping status and metadata.",
        reasons: &[
            Reason::ResultlessExtraField,
            Reason::ResultlessArguments,
            Reason::ArgumentsRepeatToolCall,
            Reason::HookAllowResult,
            Reason::CanceledPromptRecord,
            Reason::CanceledPromptHistory,
        ],
    },
];

/// The resultless projection another family registered for `w`'s tool and
/// status (missing toolSummary).
fn lent(ctx: &Ctx<'_>, w: &Wrapper) -> Option<ProjectFn> {
    ctx.hook(|h| match h {
        Hook::Resultless {
            tool,
            status,
            project,
        } if *tool == w.tool && *status == w.status => Some(*project),
        _ => None,
    })
}

/// Dispatches a resultless wrapper by tool, status and error text.
fn project(ctx: &Ctx<'_>, w: &Wrapper) -> R<Presented> {
    if let Some(project) = lent(ctx, w) {
        return project(ctx, w);
    }
    match w.tool.as_str() {
        "run_command" => {
            if w.status == CANCELED {
                return canceled_prompt(w);
            }
            if w.status != ERROR {
                return reject(
                    None,
                    Reason::ResultlessStatus,
                    format!("run_command {}", w.status),
                );
            }
            let Some(err) = &w.error else {
                return reject(None, Reason::ResultlessNoError, "run_command");
            };
            let short = text(err, "short_error");
            if short.starts_with(HOOK_DENIED_PREFIX) {
                hook_denied(w)
            } else if short.starts_with(PERMISSION_DENIED_PREFIX) {
                rejected_permission(ctx, w)
            } else {
                reject(
                    None,
                    Reason::ResultlessErrorPrefix,
                    format!("run_command error {short:?}"),
                )
            }
        }
        "view_file" => {
            if w.status == ERROR && tool_source(w.step).is_none() {
                failed_before_run(w)
            } else {
                match ctx.hook(|h| match h {
                    Hook::ResultlessToolSource(project) => Some(*project),
                    _ => None,
                }) {
                    Some(project) => project(ctx, w),
                    None => reject(None, Reason::ResultlessTool, "view_file"),
                }
            }
        }
        t if FAILED_BEFORE_RUN.iter().any(|b| b.0 == t) => failed_before_run(w),
        "" => unqualified(w),
        t => reject(None, Reason::ResultlessTool, t.to_string()),
    }
}

/// Only type, status, metadata, error and generic.args (plus `extra`).
fn only_resultless_fields(rule: RuleId, w: &Wrapper, extra: &[&str]) -> R<()> {
    let mut allowed = vec!["type", "status", "metadata", "error", "generic"];
    allowed.extend_from_slice(extra);
    if let Some(f) = w.extra_step_field(&allowed) {
        return reject(Some(rule), Reason::ResultlessExtraField, f);
    }
    if let Some(f) = w.extra_generic_field(&["args"]) {
        return reject(
            Some(rule),
            Reason::ResultlessExtraField,
            format!("generic.{f}"),
        );
    }
    Ok(())
}

/// The outer error, required, of only short and full text.
fn short_full_error(rule: RuleId, w: &Wrapper) -> R<DynamicMessage> {
    let Some(err) = w.error else {
        return reject(Some(rule), Reason::ResultlessNoError, w.tool.clone());
    };
    ensure(only_short_full(err), rule, Reason::OuterErrorText, || {
        extra_field(err, &["short_error", "full_error"]).unwrap_or_default()
    })?;
    Ok(err.clone())
}

/// "A wrapper that failed before its tool ran stores arguments and an outer
/// error but no result. With status ERROR, the ordinary response presents it
/// unchanged for write_to_file, view_file without a recorded tool source,
/// find_by_name, list_dir and schedule, with arguments bounded per tool.
/// write_to_file is also accepted with status INVALID. A generate_image call
/// whose arguments the tool rejected has status INVALID only, an outer error
/// starting invalid arguments: and the arguments AspectRatio, ImageName and
/// Prompt; the ordinary response presents it unchanged. [...] Both outer
/// errors may hold only short and full error text. A resultless wrapper
/// without an outer error [...], with extra wrapper fields, or for any other
/// tool fails."
///
/// Bounds: the per-tool statuses of [`FAILED_BEFORE_RUN`] and arguments of
/// [`ARGS`]
/// (the specification does not list the other tools' arguments; these sets
/// are this reader's bounds). For generate_image "an outer error starting
/// invalid arguments:": the short error starts with the prefix, and the full
/// error must be present and hold the same text (stricter reading: the
/// specification names one error text, which agy repeats as the full error
/// of an INVALID call); an empty or other full error fails with
/// [`Reason::ResultlessFullError`].
fn failed_before_run(w: &Wrapper) -> R<Presented> {
    let rule = RuleId::ResultlessFailedBeforeRun;
    let Some(&(tool, statuses)) = FAILED_BEFORE_RUN.iter().find(|b| b.0 == w.tool) else {
        return reject(Some(rule), Reason::ResultlessTool, w.tool.clone());
    };
    only_resultless_fields(rule, w, &[])?;
    let err = short_full_error(rule, w)?;
    ensure(
        statuses.contains(&w.status.as_str()),
        rule,
        Reason::ResultlessStatus,
        || format!("{tool} {}", w.status),
    )?;
    // The names, required and allowed, are the declared bound's ([`ARGS`]),
    // which the dispatcher enforces; a call carries at least one (schedule
    // allows each of its three and requires none).
    ensure(
        !w.args.0.is_empty(),
        rule,
        Reason::ResultlessArguments,
        || format!("{tool} without arguments"),
    )?;
    if tool == "generate_image" {
        let (short, full) = (text(&err, "short_error"), text(&err, "full_error"));
        ensure(
            short.starts_with(INVALID_ARGUMENTS_PREFIX),
            rule,
            Reason::ResultlessErrorPrefix,
            || format!("{short:?}"),
        )?;
        ensure(full == short, rule, Reason::ResultlessFullError, || {
            format!("full error {full:?}, short error {short:?}")
        })?;
    }
    Ok(Presented::unchanged(rule))
}

/// CommandLine and Cwd as JSON strings, WaitMsBeforeAsync as a canonical decimal.
fn command_args(rule: RuleId, w: &Wrapper) -> R<(String, String)> {
    let cmd = w.args.string("CommandLine");
    let cwd = w.args.string("Cwd");
    match (cmd, cwd, w.args.canonical_uint("WaitMsBeforeAsync")) {
        (Some(cmd), Some(cwd), Some(_)) => Ok((cmd, cwd)),
        _ => reject(
            Some(rule),
            Reason::ResultlessArguments,
            "CommandLine and Cwd must be JSON strings, WaitMsBeforeAsync a canonical decimal",
        ),
    }
}

/// The RUN_COMMAND step presented for a resultless run_command: the
/// wrapper's status and metadata (and error and completed interactions when
/// asked), with the command line (also as the proposed command line), the
/// working directory, a blocking call and empty combined output.
fn command_step(
    w: &Wrapper,
    cmd: &str,
    cwd: &str,
    keep_error: bool,
    keep_interactions: bool,
) -> R<DynamicMessage> {
    let mut step = DynamicMessage::new(w.step.descriptor());
    set_enum(&mut step, "type", RUN_COMMAND);
    set_enum(&mut step, "status", &w.status);
    if let Some(m) = w.metadata() {
        set(&mut step, "metadata", Value::Message(m.clone()));
    }
    if keep_error {
        if let Some(e) = w.error {
            set(&mut step, "error", Value::Message(e.clone()));
        }
    }
    if keep_interactions {
        if let Some(v) = w.step.get_field_by_name("completed_interactions") {
            set(&mut step, "completed_interactions", v.into_owned());
        }
    }
    let (Some(mut rc), Some(out)) = (
        new_sub(&step, "run_command"),
        new_sub(&step, "run_command").and_then(|rc| new_sub(&rc, "combined_output")),
    ) else {
        return reject(
            None,
            Reason::UnqualifiedGeneric,
            "the schema has no Step.run_command",
        );
    };
    set(&mut rc, "command_line", Value::String(cmd.to_string()));
    set(
        &mut rc,
        "proposed_command_line",
        Value::String(cmd.to_string()),
    );
    set(&mut rc, "cwd", Value::String(cwd.to_string()));
    set(&mut rc, "blocking", Value::Bool(true));
    set(&mut rc, "combined_output", Value::Message(out));
    set(&mut step, "run_command", Value::Message(rc));
    Ok(step)
}

/// "A run_command call that a PreToolUse hook denied has status ERROR, an
/// outer error starting tool call denied by pre-tool hook: and the arguments
/// CommandLine, Cwd and WaitMsBeforeAsync; its metadata must record exactly
/// one hook result, a deny whose reason the error repeats. The ordinary
/// response presents it as a RUN_COMMAND step that keeps the status, metadata
/// and error, with the command line (also as the proposed command line),
/// working directory, a blocking call and empty combined output taken from
/// the arguments."
///
/// Bounds: exactly those three arguments; the one hook result sets only
/// hook_name, decision (DENY) and a nonempty reason R; the short error is
/// exactly the prefix, one space and R, nothing after it
/// ([`Reason::HookDeniedErrorText`]; an error that does not repeat R at all
/// is [`Reason::HookDenyResult`]); the full error is present and holds the
/// same text (stricter reading: the specification gives one error text, the
/// prefix and the reason; an empty or other full error fails with
/// [`Reason::ResultlessFullError`]); only short and full error text; no
/// extra wrapper fields.
fn hook_denied(w: &Wrapper) -> R<Presented> {
    let rule = RuleId::ResultlessHookDenied;
    only_resultless_fields(rule, w, &[])?;
    let err = short_full_error(rule, w)?;
    let (cmd, cwd) = command_args(rule, w)?;
    let (short, full) = (text(&err, "short_error"), text(&err, "full_error"));
    let h = hooks(w.step);
    let reason = match h.as_slice() {
        [one]
            if extra_field(one, &["hook_name", "decision", "reason"]).is_none()
                && enum_name(one, "decision") == "DECISION_DENY"
                && !text(one, "reason").is_empty() =>
        {
            text(one, "reason")
        }
        _ => {
            return reject(
                Some(rule),
                Reason::HookDenyResult,
                format!("{} hook results", h.len()),
            )
        }
    };
    let want = format!("{HOOK_DENIED_PREFIX} {reason}");
    ensure(
        short
            .strip_prefix(HOOK_DENIED_PREFIX)
            .is_some_and(|rest| rest.contains(&reason)),
        rule,
        Reason::HookDenyResult,
        || format!("the error does not repeat the deny reason {reason:?}"),
    )?;
    ensure(short == want, rule, Reason::HookDeniedErrorText, || {
        format!("{short:?}, want {want:?}")
    })?;
    ensure(full == short, rule, Reason::ResultlessFullError, || {
        format!("full error {full:?}, short error {short:?}")
    })?;
    Ok(Presented {
        step: Some(command_step(w, &cmd, &cwd, true, false)?),
        rule,
        extra: Vec::new(),
        carried: Vec::new(),
    })
}

/// The three-line error of a rejected request for `cmd`, minus the advice
/// line: Go `%q` of a plain command is the command in double quotes.
fn rejected_error_head(cmd: &str) -> String {
    format!("permission check failed for command \"{cmd}\": user denied permission to run command:")
}

/// "A run_command call whose permission request was rejected (agy 1.3.1,
/// agy-reader#xyfe) is also resultless. [...] The wrapper has status ERROR,
/// the arguments CommandLine, Cwd and WaitMsBeforeAsync (the headless child
/// also BypassSandbox "false"), no result and no permissions grant. Its
/// metadata records exactly one pre-tool hook result, {decision: allow}, with
/// no reason [...]. Its outer error holds only short and full text, both
/// exactly permission check failed for command "<command>": user denied
/// permission to run command:, the command, and agy's advice not to
/// circumvent the denial, on three lines. It keeps the completed request in
/// completed_interactions: one permission request for that command with only
/// a resource, a suggested persist type and pattern, an action description,
/// the shell name and a TYPE_DEFAULT_FALLBACK trigger with no detail,
/// answered with no allow field and an empty persist_grants."
///
/// Bounds: "The dropped arguments must repeat the presented tool call. The
/// quoted command in the error is taken to be Go %q quoting; only plain
/// commands were observed, and a different quoting fails closed. An answer
/// that allows, another trigger, a changed error, a missing or second
/// interaction, a grant, a hook result other than the one allow, another
/// status, BypassSandbox "true", or any other field fails."
///
/// Both error texts are exactly the three lines: the head with the command
/// in Go `%q` quoting, the command, and [`REJECTED_ADVICE`] (the
/// specification does not quote the advice line; the stricter reading is
/// one exact literal, not any line mentioning circumvention). The request's
/// resource is exactly {action: "command", target: the command} (the action
/// is the specification's "permission request for that command").
/// BypassSandbox "false" is "the headless child"'s argument: it is accepted
/// only in a subagent's conversation, whose trajectory metadata names a
/// parent conversation (parent_conversation_id nonempty), never on a
/// top-level call ([`Reason::RejectedBypassTopLevel`]).
fn rejected_permission(ctx: &Ctx<'_>, w: &Wrapper) -> R<Presented> {
    let rule = RuleId::ResultlessRejectedPermission;
    ensure(
        !has(w.step, "permissions"),
        rule,
        Reason::RejectedGrant,
        String::new,
    )?;
    only_resultless_fields(rule, w, &["completed_interactions"])?;
    let err = short_full_error(rule, w)?;
    let with_bypass = w.args.has("BypassSandbox");
    if with_bypass && w.args.raw("BypassSandbox") != Some("\"false\"") {
        return reject(
            Some(rule),
            Reason::RejectedBypass,
            w.args.raw("BypassSandbox").unwrap_or_default().to_string(),
        );
    }
    if with_bypass {
        let parent = ctx
            .trajectory(Some(rule))?
            .get_field_by_name("metadata")
            .and_then(|m| m.as_message().map(|m| text(m, "parent_conversation_id")))
            .unwrap_or_default();
        ensure(
            !parent.is_empty(),
            rule,
            Reason::RejectedBypassTopLevel,
            || "the trajectory metadata names no parent conversation".into(),
        )?;
    }
    let (cmd, cwd) = command_call_with_allow_hook(rule, w)?;
    let (short, full) = (text(&err, "short_error"), text(&err, "full_error"));
    let lines: Vec<&str> = short.split('\n').collect();
    let ok = plain_for_go_quote(&cmd)
        && short == full
        && lines.len() == 3
        && lines[0] == rejected_error_head(&cmd)
        && lines[1] == cmd
        && lines[2] == REJECTED_ADVICE;
    ensure(ok, rule, Reason::ResultlessErrorPrefix, || {
        format!("{short:?}")
    })?;
    check_rejected_interaction(rule, w, &cmd)?;
    Ok(Presented {
        step: Some(command_step(w, &cmd, &cwd, true, true)?),
        rule,
        extra: Vec::new(),
        carried: Vec::new(),
    })
}

fn check_rejected_interaction(rule: RuleId, w: &Wrapper, cmd: &str) -> R<()> {
    let fail = |d: String| reject(Some(rule), Reason::RejectedInteraction, d);
    let ci = messages(w.step, "completed_interactions");
    if ci.len() != 1 {
        return fail(format!("{} completed interactions", ci.len()));
    }
    let ci = &ci[0];
    if set_fields(ci) != ["request", "response"] {
        return fail(format!("interaction fields {:?}", set_fields(ci)));
    }
    let Some(req) = sub(ci, "request").filter(|r| set_fields(r) == ["permission"]) else {
        return fail("request other than one permission request".into());
    };
    let Some(perm) = sub(req, "permission") else {
        return fail("no permission request".into());
    };
    let trigger = trigger_name(perm).unwrap_or_else(|| "no trigger".into());
    if trigger != "TYPE_DEFAULT_FALLBACK" {
        return reject(Some(rule), Reason::RejectedTrigger, trigger);
    }
    let mut pf = set_fields(perm);
    pf.sort();
    let mut want = vec![
        "action_description",
        "persist_suggestion_type",
        "resource",
        "shell_name",
        "suggested_persist_pattern",
        "trigger_source",
    ];
    want.sort_unstable();
    if pf != want {
        return fail(format!("request fields {pf:?}"));
    }
    let resource_ok = sub(perm, "resource").is_some_and(|r| {
        extra_field(r, &["action", "target"]).is_none()
            && text(r, "action") == "command"
            && text(r, "target") == cmd
    });
    if !resource_ok {
        return fail("request resource is not {action: \"command\", target: the command}".into());
    }
    let Some(resp) = sub(ci, "response") else {
        return fail("no answer".into());
    };
    if let Some(f) = extra_field(resp, &["permission"]) {
        return fail(format!("response.{f}"));
    }
    let Some(answer) = sub(resp, "permission") else {
        return fail("no permission answer".into());
    };
    if has(answer, "allow") {
        return reject(Some(rule), Reason::RejectedAnswer, "allow field present");
    }
    let empty_grants = sub(answer, "persist_grants").is_some_and(|p| set_fields(p).is_empty());
    if set_fields(answer) != ["persist_grants"] || !empty_grants {
        return fail(format!("answer fields {:?}", set_fields(answer)));
    }
    Ok(())
}

/// "A run_command call canceled while its permission prompt was still open
/// (agy 1.3.1, agy-reader#3cxt) is the one resultless wrapper without an
/// outer error. [...] The wrapper has status CANCELED, the arguments
/// CommandLine, Cwd and WaitMsBeforeAsync, no result, no error, no
/// permissions grant and no interaction record, pending or completed. Its
/// metadata records exactly one pre-tool hook result, {decision: allow}, [...]
/// and a status history whose last three entries are WAITING, RUNNING,
/// CANCELED [...]. The ordinary response presents it as a RUN_COMMAND step
/// built like the hook-denied one, keeping the status and metadata".
///
/// Bounds: "The dropped arguments must repeat the presented tool call. An
/// outer error, a grant, an interaction record, task details, BypassSandbox
/// or any other argument, a hook result other than the one allow, a status
/// history that does not end that way, another status or another tool fails."
fn canceled_prompt(w: &Wrapper) -> R<Presented> {
    let rule = RuleId::ResultlessCanceledPrompt;
    for f in [
        "error",
        "permissions",
        "completed_interactions",
        "requested_interaction",
        "task_details",
    ] {
        ensure(!has(w.step, f), rule, Reason::CanceledPromptRecord, || {
            f.into()
        })?;
    }
    only_resultless_fields(rule, w, &[])?;
    let (cmd, cwd) = command_call_with_allow_hook(rule, w)?;
    let h = history(w.step);
    ensure(
        h.len() >= 3 && h[h.len() - 3..] == [WAITING, RUNNING, CANCELED],
        rule,
        Reason::CanceledPromptHistory,
        || format!("{h:?}"),
    )?;
    Ok(Presented {
        step: Some(command_step(w, &cmd, &cwd, false, false)?),
        rule,
        extra: Vec::new(),
        carried: Vec::new(),
    })
}

/// The command line and working directory of a resultless command whose
/// metadata records exactly one allow hook (the rejected-permission and
/// canceled-prompt shapes; that the arguments repeat the tool call is their
/// declared bound, [`ARGS`], which the dispatcher enforces).
fn command_call_with_allow_hook(rule: RuleId, w: &Wrapper) -> R<(String, String)> {
    let (cmd, cwd) = command_args(rule, w)?;
    ensure(
        single_allow_hook(w.step),
        rule,
        Reason::HookAllowResult,
        || format!("{} hook results", hooks(w.step).len()),
    )?;
    Ok((cmd, cwd))
}

/// The family: wrappers without a result (failed before the tool ran,
/// hook-denied, rejected permission, canceled prompt); the tools other
/// families lend a resultless projection go to them.
pub(crate) const FAMILY: Family = Family {
    file: "resultless.rs",
    docs: DOCS,
    claims: &[Claim::Resultless(project)],
    hooks: &[],
    args: ARGS,
};
