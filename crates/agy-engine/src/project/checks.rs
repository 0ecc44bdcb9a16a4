//! The checks several families share: the wrapper's tool and argument
//! allow-list over an embedded native Step, the outer-error bounds, and the
//! path shape reads and writes need no normalization for. A leaf: it
//! imports the field helpers, the native type names and the reasons, never
//! a family.

use super::args::ArgBound;
use super::family::Args;
use super::fields::{
    ensure, extra_field, only_short_full, reject, status, sub, text, Wrapper, ERROR, R,
};
use super::native::*;
use super::reasons::Reason;
use crate::rules::RuleId;
use prost_reflect::DynamicMessage;

/// The wrapper tool qualified over each native type (the wrapper's
/// `metadata.tool_call.name`; the native type in `over`), with that tool's
/// argument allow-list (`generic.args` keys): the embedded family's argument
/// bounds.
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
pub(crate) const WRAPPER_TOOLS: &[Args] = &[
    Args::over(
        RUN_COMMAND,
        "run_command",
        ArgBound::allowing(&["CommandLine", "Cwd", "WaitMsBeforeAsync"]),
    ),
    Args::over(
        VIEW_FILE,
        "view_file",
        ArgBound::allowing(&["AbsolutePath", "StartLine", "EndLine"]),
    ),
    Args::over(
        CODE_ACTION,
        "write_to_file",
        ArgBound::allowing(&["TargetFile", "CodeContent"]),
    ),
    Args::over(
        CODE_ACTION,
        "replace_file_content",
        ArgBound::allowing(&["TargetFile", "Instruction", "ReplacementContent"]),
    ),
    Args::over(
        INVOKE_SUBAGENT,
        "invoke_subagent",
        ArgBound::allowing(&["Prompt", "Workspace"]),
    ),
    Args::over(
        GENERATE_IMAGE,
        "generate_image",
        ArgBound::allowing(&["AspectRatio", "ImageName", "Prompt"]),
    ),
    Args::over(
        GREP_SEARCH,
        "grep_search",
        ArgBound::allowing(&["Query", "SearchPath"]),
    ),
    Args::over(
        READ_URL_CONTENT,
        "read_url_content",
        ArgBound::allowing(&["Url"]),
    ),
    Args::over(SEARCH_WEB, "search_web", ArgBound::allowing(&["query"])),
    Args::over(
        LIST_RESOURCES,
        "list_resources",
        ArgBound::allowing(&["ServerName"]),
    ),
    Args::over(
        MCP_TOOL,
        MCP_TOOL_PREFIX,
        ArgBound::NONE.members_of("mcp_tool.tool_call.arguments_json"),
    ),
];

/// An MCP tool wrapper is named `mcp_<server>_<tool>` after the native
/// `mcp_tool.server_name` and `mcp_tool.tool_call.name`; its arguments are
/// the MCP tool's own, so their allow-list is the native tool call's: the
/// wrapper arguments must repeat `mcp_tool.tool_call.arguments_json` exactly
/// (the same keys, each the same JSON value).
pub(crate) const MCP_TOOL_PREFIX: &str = "mcp_";

/// "Generic wrappers containing recognized [...] native Steps": the
/// wrapper's tool must be the one qualified over the native type
/// ([`WRAPPER_TOOLS`], MCP tools by [`MCP_TOOL_PREFIX`]); a mismatch fails
/// with [`Reason::WrapperTool`]. Its arguments within that tool's
/// allow-list (the MCP tool call's members) are the declared bound, which
/// the dispatcher enforces (`bounds::enforce`: another argument fails with
/// [`Reason::WrapperArgument`]); ContentOffset and Append are named only by
/// their own rules' bounds, so they pass only where those rules presented
/// the step.
pub(crate) fn check_tool(w: &Wrapper, ntype: &str, n: &DynamicMessage) -> R<()> {
    let base = RuleId::EmbeddedNativeStep;
    if ntype == MCP_TOOL {
        let mcp = sub(n, "mcp_tool");
        let server = mcp.map(|m| text(m, "server_name")).unwrap_or_default();
        let call = mcp.and_then(|m| sub(m, "tool_call"));
        let name = call.map(|c| text(c, "name")).unwrap_or_default();
        let want = format!("{MCP_TOOL_PREFIX}{server}_{name}");
        return ensure(
            !server.is_empty() && !name.is_empty() && w.tool == want,
            base,
            Reason::WrapperTool,
            || format!("{:?} over {ntype} (want {want:?})", w.tool),
        );
    }
    if WRAPPER_TOOLS
        .iter()
        .any(|a| a.over == Some(ntype) && a.tool == w.tool && ntype != MCP_TOOL)
    {
        return Ok(());
    }
    let want: Vec<&str> = WRAPPER_TOOLS
        .iter()
        .filter(|a| a.over == Some(ntype))
        .map(|a| a.tool)
        .collect();
    let tool = if w.tool.is_empty() {
        "(no tool name)"
    } else {
        w.tool.as_str()
    };
    reject(
        Some(base),
        Reason::WrapperTool,
        format!("{tool} over {ntype} (want one of {want:?})"),
    )
}

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

/// Whether `p` is an absolute, clean path of only the observed characters.
pub(crate) fn qualified_path(p: &str) -> bool {
    let chars_ok = p
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-@+".contains(&b));
    if !chars_ok || !p.starts_with('/') {
        return false;
    }
    if p == "/" {
        return true;
    }
    !p.ends_with('/')
        && p[1..]
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}
