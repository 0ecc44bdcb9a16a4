//! Generic wrappers over embedded native Steps
//! (`type.googleapis.com/gemini_coder.Step` in `generic.result.payload`),
//! the qualified CANCELED command cases and the outer-error rule. The
//! argument rules (ContentOffset, Append), the permission records, and the
//! type-specific mappings (bridge failure, failed list_resources, images)
//! are checked from here but live in their own files.

use super::fields::{
    ensure, extra_field, has, only_short_full, reject, status, step_type, sub, text, Wrapper,
    CANCELED, DONE, ERROR, R, RUNNING,
};
use super::table::RuleDoc;
use super::{
    command_bridge, generate_image, list_resources, permissions, view_file, write_to_file, Ctx,
    Presented, Reason,
};
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

pub(crate) const RUN_COMMAND: &str = "CORTEX_STEP_TYPE_RUN_COMMAND";
pub(crate) const VIEW_FILE: &str = "CORTEX_STEP_TYPE_VIEW_FILE";
pub(crate) const CODE_ACTION: &str = "CORTEX_STEP_TYPE_CODE_ACTION";
const INVOKE_SUBAGENT: &str = "CORTEX_STEP_TYPE_INVOKE_SUBAGENT";
const LIST_RESOURCES: &str = "CORTEX_STEP_TYPE_LIST_RESOURCES";
const GENERATE_IMAGE: &str = "CORTEX_STEP_TYPE_GENERATE_IMAGE";
const GREP_SEARCH: &str = "CORTEX_STEP_TYPE_GREP_SEARCH";
const MCP_TOOL: &str = "CORTEX_STEP_TYPE_MCP_TOOL";
const READ_URL_CONTENT: &str = "CORTEX_STEP_TYPE_READ_URL_CONTENT";
const SEARCH_WEB: &str = "CORTEX_STEP_TYPE_SEARCH_WEB";

/// The wrapper tool qualified over each native type (the wrapper's
/// `metadata.tool_call.name`), with that tool's argument allow-list: (tool,
/// native type, allowed `generic.args` keys).
///
/// The specification names the tool of each mapping ("run-command",
/// "view-file", "write_to_file", "invoke-subagent", "generate_image",
/// "list_resources", ...) but lists the wrapper arguments only for some of
/// them (generate_image: "its prompt, image name and aspect ratio
/// arguments"; list_resources: ServerName; run_command: CommandLine, Cwd and
/// WaitMsBeforeAsync in every command rule). Where it is silent, the stricter
/// reading: only the arguments observed for that tool over that native type
/// in the specification and in the modeled shapes (the synthetic corpus),
/// nothing inferred from other rules (no toolAction, toolSummary, IsDaemon,
/// RunPersistent, BypassSandbox, ByteOffset, EmptyFile, Overwrite, ...).
/// ContentOffset and Append are not in these lists: they are accepted only
/// under their own rules ([`view_file`], [`write_to_file`]), which refuse
/// them on any other tool. An MCP_TOOL step is named by its server and tool
/// instead (see [`MCP_TOOL_PREFIX`]).
pub(crate) const WRAPPER_TOOLS: &[(&str, &str, &[&str])] = &[
    (
        "run_command",
        RUN_COMMAND,
        &["CommandLine", "Cwd", "WaitMsBeforeAsync"],
    ),
    (
        "view_file",
        VIEW_FILE,
        &["AbsolutePath", "StartLine", "EndLine"],
    ),
    ("write_to_file", CODE_ACTION, &["TargetFile", "CodeContent"]),
    (
        "replace_file_content",
        CODE_ACTION,
        &["TargetFile", "Instruction", "ReplacementContent"],
    ),
    ("invoke_subagent", INVOKE_SUBAGENT, &["Prompt", "Workspace"]),
    (
        "generate_image",
        GENERATE_IMAGE,
        &["AspectRatio", "ImageName", "Prompt"],
    ),
    ("grep_search", GREP_SEARCH, &["Query", "SearchPath"]),
    ("read_url_content", READ_URL_CONTENT, &["Url"]),
    ("search_web", SEARCH_WEB, &["query"]),
    ("list_resources", LIST_RESOURCES, &["ServerName"]),
];

/// An MCP tool wrapper is named `mcp_<server>_<tool>` after the native
/// `mcp_tool.server_name` and `mcp_tool.tool_call.name`; its arguments are
/// the MCP tool's own, so their allow-list is the native tool call's: the
/// wrapper arguments must repeat `mcp_tool.tool_call.arguments_json` exactly
/// (the same keys, each the same JSON value).
pub(crate) const MCP_TOOL_PREFIX: &str = "mcp_";

/// The arguments a wrapper may carry besides its tool's allow-list: each is
/// accepted only under its own rule, which refuses it on another tool.
const OWN_RULE_ARGS: &[&str] = &["ContentOffset", "Append"];

/// "Generic wrappers containing recognized [...] native Steps": the
/// wrapper's tool must be the one qualified over the native type, and its
/// arguments within that tool's allow-list ([`WRAPPER_TOOLS`], MCP tools by
/// [`MCP_TOOL_PREFIX`]). A mismatch fails with [`Reason::WrapperTool`], any
/// other argument with [`Reason::WrapperArgument`].
pub(crate) fn check_tool_and_args(w: &Wrapper, ntype: &str, n: &DynamicMessage) -> R<()> {
    let base = RuleId::EmbeddedNativeStep;
    if ntype == MCP_TOOL {
        let mcp = sub(n, "mcp_tool");
        let server = mcp.map(|m| text(m, "server_name")).unwrap_or_default();
        let call = mcp.and_then(|m| sub(m, "tool_call"));
        let name = call.map(|c| text(c, "name")).unwrap_or_default();
        let want = format!("{MCP_TOOL_PREFIX}{server}_{name}");
        ensure(
            !server.is_empty() && !name.is_empty() && w.tool == want,
            base,
            Reason::WrapperTool,
            || format!("{:?} over {ntype} (want {want:?})", w.tool),
        )?;
        let native_args = call.and_then(|c| {
            match serde_json::from_str::<serde_json::Value>(&text(c, "arguments_json")) {
                Ok(serde_json::Value::Object(o)) => Some(o),
                _ => None,
            }
        });
        let Some(native_args) = native_args else {
            return reject(
                Some(base),
                Reason::WrapperArgument,
                "the native MCP tool call has no argument object",
            );
        };
        if let Some(k) = w.args.keys().into_iter().find(
            |k| !matches!((native_args.get(*k), w.args.json(k)), (Some(a), Some(b)) if *a == b),
        ) {
            return reject(
                Some(base),
                Reason::WrapperArgument,
                format!("{} argument {k} is not the native MCP tool call's", w.tool),
            );
        }
        return ensure(
            native_args.len() == w.args.0.len(),
            base,
            Reason::WrapperArgument,
            || format!("{} lacks arguments of the native MCP tool call", w.tool),
        );
    }
    let Some(&(tool, _, allowed)) = WRAPPER_TOOLS.iter().find(|t| t.1 == ntype && t.0 == w.tool)
    else {
        let want: Vec<&str> = WRAPPER_TOOLS
            .iter()
            .filter(|t| t.1 == ntype)
            .map(|t| t.0)
            .collect();
        let tool = if w.tool.is_empty() {
            "(no tool name)"
        } else {
            w.tool.as_str()
        };
        return reject(
            Some(base),
            Reason::WrapperTool,
            format!("{tool} over {ntype} (want one of {want:?})"),
        );
    };
    match w
        .args
        .keys()
        .into_iter()
        .find(|k| !allowed.contains(k) && !OWN_RULE_ARGS.contains(k))
    {
        Some(k) => reject(
            Some(base),
            Reason::WrapperArgument,
            format!("{tool} argument {k} (allowed: {allowed:?})"),
        ),
        None => Ok(()),
    }
}

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
/// Native Step fields besides its body.
const NATIVE_FIELDS: &[&str] = &[
    "type",
    "status",
    "metadata",
    "error",
    "task_details",
    "permissions",
    "completed_interactions",
];
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

/// The outer-error rule's shared bounds, under `rule`: "The outer error may
/// hold only short and full error text", the native Step "must also be ERROR
/// and its own error must have the same short error".
pub(crate) fn outer_error_matches(rule: RuleId, w: &Wrapper, n: &DynamicMessage) -> R<()> {
    let Some(oe) = &w.error else {
        return reject(Some(rule), Reason::OuterErrorStatus, "no outer error");
    };
    ensure(only_short_full(oe), rule, Reason::OuterErrorText, || {
        extra_field(oe, &["short_error", "full_error"]).unwrap_or_default()
    })?;
    let ns = status(n);
    ensure(ns == ERROR, rule, Reason::OuterErrorNativeStatus, || {
        ns.clone()
    })?;
    let outer = text(oe, "short_error");
    let inner = sub(n, "error").map(|e| text(e, "short_error"));
    ensure(
        !outer.is_empty() && inner.as_deref() == Some(outer.as_str()),
        rule,
        Reason::OuterErrorShortError,
        || format!("outer {outer:?}, native {:?}", inner.unwrap_or_default()),
    )
}

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
/// arguments ([`view_file`], [`write_to_file`]); permission records
/// ([`permissions`]); with an outer error, the bridge failure, failed
/// list_resources, failed generate_image or the outer-error rule; without
/// one, the image mapping, equal statuses, or the CANCELED command cases.
/// Last, whatever the route: the wrapper's tool is the one qualified over
/// the native type and its arguments are within that tool's allow-list
/// ([`check_tool_and_args`], [`WRAPPER_TOOLS`]).
pub(crate) fn project(ctx: &Ctx<'_>, w: &Wrapper, bytes: &Bytes) -> R<Presented> {
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

    // Task details: outer preserved, inner-only or conflicting fail.
    let wt = sub(w.step, "task_details");
    let nt = sub(&n, "task_details");
    match (&wt, &nt) {
        (None, Some(_)) => return reject(Some(base), Reason::InnerOnlyTaskDetails, ""),
        (Some(a), Some(b)) if !super::fields::same(a, b) => {
            return reject(Some(base), Reason::ConflictingTaskDetails, "")
        }
        _ => {}
    }

    let mut rules: Vec<RuleId> = Vec::new();
    if w.args.has("Append") {
        write_to_file::check_append(w, &n)?;
        rules.push(RuleId::WriteToFileAppend);
    }
    if w.args.has("ContentOffset") {
        view_file::check_content_offset(w, &n)?;
        rules.push(RuleId::ViewFileContentOffset);
    }
    if super::has_records(w.step) || super::has_records(&n) {
        rules.push(permissions::check(w, &n)?);
    }

    let ws = w.status.clone();
    let ns = status(&n);
    let mut presented_status: Option<&str> = None;
    let route = if w.error.is_some() {
        if ws != ERROR {
            return reject(Some(RuleId::OuterError), Reason::OuterErrorStatus, ws);
        }
        match ntype.as_str() {
            RUN_COMMAND if ns == DONE => {
                command_bridge::check(w, &n)?;
                presented_status = Some(ERROR);
                RuleId::CommandBridgeFormatFailure
            }
            LIST_RESOURCES => {
                list_resources::check(w, &n)?;
                RuleId::FailedListResources
            }
            GENERATE_IMAGE => {
                generate_image::check_failed(w, &n)?;
                RuleId::FailedGenerateImage
            }
            INVOKE_SUBAGENT => {
                return reject(
                    Some(RuleId::OuterError),
                    Reason::OuterErrorNativeType,
                    ntype,
                )
            }
            _ => {
                outer_error_matches(RuleId::OuterError, w, &n)?;
                RuleId::OuterError
            }
        }
    } else {
        match qualified {
            Qualified::Image => {
                generate_image::check_success(w, &n)?;
                RuleId::EmbeddedImageSuccess
            }
            Qualified::OuterErrorOnly if ntype == LIST_RESOURCES => {
                return reject(
                    Some(RuleId::FailedListResources),
                    Reason::ListResourcesOutcome,
                    format!("{ws} wrapper without an outer error"),
                )
            }
            Qualified::OuterErrorOnly => {
                return reject(Some(base), Reason::EmbeddedOuterOnlyType, ntype)
            }
            Qualified::Recognized if ws == ns => base,
            Qualified::Recognized if ws == CANCELED && ntype == RUN_COMMAND => {
                let ok = (ns == ERROR && has(&n, "error")) || (ns == RUNNING && !has(&n, "error"));
                ensure(
                    ok,
                    RuleId::CanceledCommandStatus,
                    Reason::CanceledCombination,
                    || format!("CANCELED over {ns}"),
                )?;
                presented_status = Some(CANCELED);
                RuleId::CanceledCommandStatus
            }
            Qualified::Recognized if ws == CANCELED => {
                return reject(
                    Some(base),
                    Reason::CanceledCombination,
                    format!("CANCELED over {ntype} {ns}"),
                )
            }
            Qualified::Recognized => {
                return reject(
                    Some(base),
                    Reason::StatusMismatch,
                    format!("{ws} over {ns}"),
                )
            }
        }
    };

    // After the type-specific rules, so their named reasons (another tool
    // for Append or ContentOffset, a record for another tool, arguments that
    // do not repeat the native tool call) come first.
    check_tool_and_args(w, &ntype, &n)?;

    let mut step = n;
    if let Some(td) = wt {
        super::fields::set(&mut step, "task_details", Value::Message(td.clone()));
    }
    if let Some(s) = presented_status {
        super::fields::set_enum(&mut step, "status", s);
    }
    // The primary rule: the most specific one; the rest are extras.
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
    Ok(Presented {
        step: Some(step),
        rule: primary,
        extra,
        carried: vec!["generic.result.payload"],
    })
}
