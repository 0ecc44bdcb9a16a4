//! Generic wrappers over embedded native Steps
//! (`type.googleapis.com/gemini_coder.Step` in `generic.result.payload`),
//! the qualified CANCELED command cases and the outer-error rule. The
//! argument rules (ContentOffset, Append), the permission records, and the
//! type-specific mappings (bridge failure, failed list_resources, images)
//! are checked from here but live in their own files.

use super::checks::{check_tool, outer_error_matches, WRAPPER_TOOLS};
use super::doc::RuleDoc;
use super::family::{has_records, Claim, Ctx, Family, Hook, Presented, STEP_URL};
use super::fields::{
    ensure, extra_field, has, reject, same, set, set_enum, status, step_type, sub, Wrapper,
    CANCELED, ERROR, R, RUNNING,
};
use super::native::*;
use super::reasons::Reason;
use crate::rules::RuleId;
use bytes::Bytes;
use prost_reflect::{DynamicMessage, Value};

/// How a native type is qualified inside a wrapper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Qualified {
    /// run-command, code-action, view-file, invoke-subagent: replaced by the Step.
    Recognized,
    /// Only under an outer error (grep-search, MCP-tool, read-URL-content, search-web, list-resources).
    OuterErrorOnly,
    /// generate-image: failed (outer error) or successful (media) mapping.
    Image,
}

/// Native types observed inside wrappers: type name, body field, how qualified.
const NATIVE: &[(&str, &str, Qualified)] = &[
    (
        "CORTEX_STEP_TYPE_RUN_COMMAND",
        "run_command",
        Qualified::Recognized,
    ),
    (
        "CORTEX_STEP_TYPE_CODE_ACTION",
        "code_action",
        Qualified::Recognized,
    ),
    (
        "CORTEX_STEP_TYPE_VIEW_FILE",
        "view_file",
        Qualified::Recognized,
    ),
    (
        "CORTEX_STEP_TYPE_INVOKE_SUBAGENT",
        "invoke_subagent",
        Qualified::Recognized,
    ),
    (
        "CORTEX_STEP_TYPE_GENERATE_IMAGE",
        "generate_image",
        Qualified::Image,
    ),
    (
        "CORTEX_STEP_TYPE_GREP_SEARCH",
        "grep_search",
        Qualified::OuterErrorOnly,
    ),
    (
        "CORTEX_STEP_TYPE_MCP_TOOL",
        "mcp_tool",
        Qualified::OuterErrorOnly,
    ),
    (
        "CORTEX_STEP_TYPE_READ_URL_CONTENT",
        "read_url_content",
        Qualified::OuterErrorOnly,
    ),
    (
        "CORTEX_STEP_TYPE_SEARCH_WEB",
        "search_web",
        Qualified::OuterErrorOnly,
    ),
    (
        "CORTEX_STEP_TYPE_LIST_RESOURCES",
        "list_resources",
        Qualified::OuterErrorOnly,
    ),
];

/// Native types whose failures only their own rules map (failed
/// list_resources, failed generate_image): without that rule registered,
/// they are refused rather than taken by the generic outer-error rule.
const OUTER_ERROR_OWN_RULE: &[&str] = &[LIST_RESOURCES, GENERATE_IMAGE];

/// Wrapper (Step) fields a wrapper over an embedded Step may set.
const WRAPPER_FIELDS: &[&str] = &[
    "type",
    "status",
    "metadata",
    "error",
    "task_details",
    "permissions",
    "completed_interactions",
    "generic",
];
/// Native Step fields besides its body: the wrapper's but `generic`.
const NATIVE_FIELDS: &[&str] = match WRAPPER_FIELDS.split_last() {
    Some((_generic, fields)) => fields,
    None => &[],
};
/// Wrapper result fields (media only for image Steps).
const RESULT_FIELDS: &[&str] = &[
    "result",
    "metadata",
    "step_render_info",
    "full_output_uri",
    "payload",
];
const IMAGE_RESULT_FIELDS: &[&str] = &[
    "result",
    "metadata",
    "step_render_info",
    "full_output_uri",
    "payload",
    "media",
];

pub(crate) const DOCS: &[RuleDoc] = &[
    RuleDoc {
        rule: RuleId::EmbeddedNativeStep,
        accepts: "A GENERIC wrapper whose result payload is an Any `type.googleapis.com/gemini_coder.Step` holding a RUN_COMMAND, CODE_ACTION, VIEW_FILE or INVOKE_SUBAGENT Step with its matching body, with equal wrapper and native statuses and no outer error. Presented as the embedded Step; outer task details are preserved (inner task details must be absent or equal to them). Wrapper fields: type, status, metadata, task_details, generic{args, result{result, metadata, step_render_info, full_output_uri, payload}}; native fields: type, status, metadata, error, task_details and the body. Permission records, ContentOffset and Append arguments only under their own rules. The wrapper's tool must match the native type, and its arguments stay within that tool's allow-list (every embedded rule builds on this): run_command over RUN_COMMAND {CommandLine, Cwd, WaitMsBeforeAsync}; view_file over VIEW_FILE {AbsolutePath, StartLine, EndLine} (+ ContentOffset under its rule); write_to_file over CODE_ACTION {TargetFile, CodeContent} (+ Append under its rule); replace_file_content over CODE_ACTION {TargetFile, Instruction, ReplacementContent}; invoke_subagent over INVOKE_SUBAGENT {Prompt, Workspace}; generate_image over GENERATE_IMAGE {AspectRatio, ImageName, Prompt}; grep_search over GREP_SEARCH {Query, SearchPath}; read_url_content over READ_URL_CONTENT {Url}; search_web over SEARCH_WEB {query}; list_resources over LIST_RESOURCES {ServerName}; `mcp_<server_name>_<tool_call.name>` over MCP_TOOL with arguments repeating the native mcp_tool.tool_call arguments exactly. Where the specification lists no arguments, the stricter reading: only those observed for that tool.",
        reasons: &[
            Reason::EmbeddedUndecodable,
            Reason::EmbeddedType,
            Reason::EmbeddedBody,
            Reason::EmbeddedOuterOnlyType,
            Reason::WrapperTool,
            Reason::WrapperArgument,
            Reason::WrapperField,
            Reason::NativeField,
            Reason::WrapperResultField,
            Reason::InnerOnlyTaskDetails,
            Reason::ConflictingTaskDetails,
            Reason::StatusMismatch,
            Reason::CanceledCombination,
        ],
    },
    RuleDoc {
        rule: RuleId::CanceledCommandStatus,
        accepts: "A CANCELED wrapper over an embedded RUN_COMMAND Step that is ERROR with error details, or RUNNING without an error; presented as the native Step with the outer CANCELED status. No outer error.",
        reasons: &[Reason::CanceledCombination],
    },
    RuleDoc {
        rule: RuleId::OuterError,
        accepts: "An ERROR wrapper with an outer error of only short and full text over an embedded ERROR RUN_COMMAND, CODE_ACTION, VIEW_FILE, GREP_SEARCH, MCP_TOOL, READ_URL_CONTENT or SEARCH_WEB Step whose own error has the same nonempty short error; presented as the native Step with its inner error (the outer error is dropped). GENERATE_IMAGE and LIST_RESOURCES use their own rules; INVOKE_SUBAGENT and any other type fail.",
        reasons: &[
            Reason::OuterErrorStatus,
            Reason::OuterErrorNativeType,
            Reason::OuterErrorNativeStatus,
            Reason::OuterErrorShortError,
            Reason::OuterErrorText,
        ],
    },
];

/// "Generic wrappers containing recognized run-command, code-action,
/// view-file, or invoke-subagent native Steps are replaced with the embedded
/// Step. Outer task details are preserved; conflicting or inner-only task
/// details fail. Wrapper and native status must match except for the
/// qualified command cases."
///
/// Bounds: the Any decodes as a Step whose type is one of [`NATIVE`] with its
/// matching body; the wrapper sets only [`WRAPPER_FIELDS`], the native Step
/// only [`NATIVE_FIELDS`] and its body, the result only [`RESULT_FIELDS`]
/// (media only for images). Then, in order: ContentOffset and Append
/// arguments (the `EmbeddedArgument` hooks of view_file.rs and
/// write_to_file.rs); permission records (permissions.rs's
/// `EmbeddedRecords` hook); with an outer error, the bridge failure, failed
/// list_resources, failed generate_image or the outer-error rule; without
/// one, the image mapping, equal statuses, or the CANCELED command cases.
/// Last, whatever the route: the wrapper's tool is the one qualified over
/// the native type ([`check_tool`]). Its arguments are held to that tool's
/// allow-list (`checks::WRAPPER_TOOLS`, this family's declared bounds) by
/// the dispatcher, after the route (`bounds::enforce`).
fn project(ctx: &Ctx<'_>, w: &Wrapper, bytes: &Bytes) -> R<Presented> {
    let (n, ntype, qualified) = embedded_step(ctx, w, bytes)?;
    let wt = task_details(w, &n)?;
    let rules = argument_rules(ctx, w, &n)?;
    let (route, presented_status) = if w.error.is_some() {
        outer_error_route(ctx, w, &n, &ntype)?
    } else {
        success_route(ctx, w, &n, &ntype, qualified)?
    };
    // After the type-specific rules, so their named reasons (another tool
    // for Append or ContentOffset, a record for another tool, arguments that
    // do not repeat the native tool call) come first.
    check_tool(w, &ntype, &n)?;
    let mut step = n;
    if let Some(td) = wt {
        set(&mut step, "task_details", Value::Message(td));
    }
    if let Some(s) = presented_status {
        set_enum(&mut step, "status", s);
    }
    let (primary, extra) = primary_rule(route, rules, qualified);
    Ok(Presented {
        step: Some(step),
        rule: primary,
        extra,
        carried: vec!["generic.result.payload"],
    })
}

/// The embedded native Step decoded, its type qualified with its body, and
/// no field outside the wrapper's, the generic's, the native's or the
/// result's qualified shape.
fn embedded_step(
    ctx: &Ctx<'_>,
    w: &Wrapper,
    bytes: &Bytes,
) -> R<(DynamicMessage, String, Qualified)> {
    let base = RuleId::EmbeddedNativeStep;
    let n = DynamicMessage::decode(ctx.schema.names.step.clone(), bytes.clone())
        .or_else(|e| reject(Some(base), Reason::EmbeddedUndecodable, e.to_string()))?;
    let ntype = step_type(&n);
    let Some(&(_, body, qualified)) = NATIVE.iter().find(|t| t.0 == ntype) else {
        return reject(Some(base), Reason::EmbeddedType, ntype);
    };
    ensure(has(&n, body), base, Reason::EmbeddedBody, || {
        format!("{ntype} without {body}")
    })?;
    if let Some(f) = w.extra_step_field(WRAPPER_FIELDS) {
        return reject(Some(base), Reason::WrapperField, f);
    }
    if let Some(f) = w.extra_generic_field(&["args", "result"]) {
        return reject(Some(base), Reason::WrapperField, format!("generic.{f}"));
    }
    let mut native_fields = NATIVE_FIELDS.to_vec();
    native_fields.push(body);
    if let Some(f) = extra_field(&n, &native_fields) {
        return reject(Some(base), Reason::NativeField, f);
    }
    let result_fields = if qualified == Qualified::Image {
        IMAGE_RESULT_FIELDS
    } else {
        RESULT_FIELDS
    };
    if let Some(f) = w.extra_result_field(result_fields) {
        return reject(Some(base), Reason::WrapperResultField, f);
    }
    Ok((n, ntype, qualified))
}

/// Task details: the outer ones preserved; inner-only or conflicting ones
/// refused.
fn task_details(w: &Wrapper, n: &DynamicMessage) -> R<Option<DynamicMessage>> {
    let base = RuleId::EmbeddedNativeStep;
    let wt = sub(w.step, "task_details");
    let nt = sub(n, "task_details");
    match (&wt, &nt) {
        (None, Some(_)) => return reject(Some(base), Reason::InnerOnlyTaskDetails, ""),
        (Some(a), Some(b)) if !same(a, b) => {
            return reject(Some(base), Reason::ConflictingTaskDetails, "")
        }
        _ => {}
    }
    Ok(wt.cloned())
}

/// The rules of arguments only their own rules accept (Append,
/// ContentOffset), in the registry's order, then the permission records'.
fn argument_rules(ctx: &Ctx<'_>, w: &Wrapper, n: &DynamicMessage) -> R<Vec<RuleId>> {
    let mut rules: Vec<RuleId> = Vec::new();
    for (arg, rule, check) in ctx.hooks().filter_map(|h| match h {
        Hook::EmbeddedArgument { arg, rule, check } => Some((*arg, *rule, *check)),
        _ => None,
    }) {
        if w.args.has(arg) {
            check(w, n)?;
            rules.push(rule);
        }
    }
    if has_records(w.step) || has_records(n) {
        let Some(records) = ctx.hook(|h| match h {
            Hook::EmbeddedRecords(check) => Some(*check),
            _ => None,
        }) else {
            return reject(
                Some(RuleId::EmbeddedNativeStep),
                Reason::WrapperField,
                "permission records",
            );
        };
        rules.push(records(w, n)?);
    }
    Ok(rules)
}

/// A wrapper with an outer error: a type-specific failure mapping first
/// (the bridge failure, failed list_resources, failed generate_image), else
/// the outer-error rule. The rule, and the status it presents if another.
fn outer_error_route(
    ctx: &Ctx<'_>,
    w: &Wrapper,
    n: &DynamicMessage,
    ntype: &str,
) -> R<(RuleId, Option<&'static str>)> {
    let ws = w.status.clone();
    if ws != ERROR {
        return reject(Some(RuleId::OuterError), Reason::OuterErrorStatus, ws);
    }
    let ns = status(n);
    let own = ctx.hook(|h| match h {
        Hook::OuterError {
            native_type,
            native_status,
            presented_status,
            rule,
            check,
        } if *native_type == ntype && native_status.is_none_or(|s| s == ns) => {
            Some((*rule, *check, *presented_status))
        }
        _ => None,
    });
    match own {
        Some((rule, check, presented)) => {
            check(w, n)?;
            Ok((rule, presented))
        }
        None if ntype == INVOKE_SUBAGENT || OUTER_ERROR_OWN_RULE.contains(&ntype) => reject(
            Some(RuleId::OuterError),
            Reason::OuterErrorNativeType,
            ntype,
        ),
        None => {
            outer_error_matches(RuleId::OuterError, w, n)?;
            Ok((RuleId::OuterError, None))
        }
    }
}

/// A wrapper without an outer error: the image mapping, equal statuses, or
/// the CANCELED command cases. The rule, and the status it presents if
/// another.
fn success_route(
    ctx: &Ctx<'_>,
    w: &Wrapper,
    n: &DynamicMessage,
    ntype: &str,
    qualified: Qualified,
) -> R<(RuleId, Option<&'static str>)> {
    let base = RuleId::EmbeddedNativeStep;
    let ws = w.status.clone();
    let ns = status(n);
    match qualified {
        Qualified::Image => {
            let Some((rule, check)) = ctx.hook(|h| match h {
                Hook::EmbeddedSuccess {
                    native_type,
                    rule,
                    check,
                } if *native_type == ntype => Some((*rule, *check)),
                _ => None,
            }) else {
                return reject(Some(base), Reason::EmbeddedType, ntype);
            };
            check(w, n)?;
            Ok((rule, None))
        }
        Qualified::OuterErrorOnly if ntype == LIST_RESOURCES => reject(
            Some(RuleId::FailedListResources),
            Reason::ListResourcesOutcome,
            format!("{ws} wrapper without an outer error"),
        ),
        Qualified::OuterErrorOnly => reject(Some(base), Reason::EmbeddedOuterOnlyType, ntype),
        Qualified::Recognized if ws == ns => Ok((base, None)),
        Qualified::Recognized if ws == CANCELED && ntype == RUN_COMMAND => {
            let ok = (ns == ERROR && has(n, "error")) || (ns == RUNNING && !has(n, "error"));
            ensure(
                ok,
                RuleId::CanceledCommandStatus,
                Reason::CanceledCombination,
                || format!("CANCELED over {ns}"),
            )?;
            Ok((RuleId::CanceledCommandStatus, Some(CANCELED)))
        }
        Qualified::Recognized if ws == CANCELED => reject(
            Some(base),
            Reason::CanceledCombination,
            format!("CANCELED over {ntype} {ns}"),
        ),
        Qualified::Recognized => reject(
            Some(base),
            Reason::StatusMismatch,
            format!("{ws} over {ns}"),
        ),
    }
}

/// The primary rule (the most specific one) and the rest as extras.
fn primary_rule(route: RuleId, rules: Vec<RuleId>, qualified: Qualified) -> (RuleId, Vec<RuleId>) {
    let base = RuleId::EmbeddedNativeStep;
    let mut all = vec![route];
    all.extend(rules);
    if route != base && !all.contains(&base) && qualified == Qualified::Recognized {
        all.push(base);
    }
    let primary = all
        .iter()
        .copied()
        .find(|r| {
            matches!(
                r,
                RuleId::PermissionRunCommand
                    | RuleId::PermissionViewFile
                    | RuleId::WriteToFileAppend
                    | RuleId::ViewFileContentOffset
            )
        })
        .unwrap_or(route);
    let mut extra: Vec<RuleId> = all.into_iter().filter(|r| *r != primary).collect();
    extra.dedup();
    (primary, extra)
}

/// The family: wrappers whose result payload is an embedded native Step.
pub(crate) const FAMILY: Family = Family {
    file: "embedded.rs",
    docs: DOCS,
    claims: &[Claim::Payload {
        url: STEP_URL,
        project,
        extra: &[],
    }],
    hooks: &[],
    args: WRAPPER_TOOLS,
};
