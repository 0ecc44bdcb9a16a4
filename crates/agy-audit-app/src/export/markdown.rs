//! The Markdown transcript: every step under a heading a person reads
//! ("Ran command", "Listed directory", "Searched the web", ...), user turns,
//! planner responses and thinking, tool calls with arguments, command output,
//! file contents, directory listings, code-action diffs, web, MCP, subagent and
//! image steps, permission answers, `file://` links and errors, under a visible
//! notice that the export is offline and unverified.
//!
//! Nothing the JSON export holds in a step's payload is silently dropped: a
//! payload this renderer has no dedicated view for is shown as fenced JSON.

use serde_json::Value;
use std::fmt::Write;

/// Step fields that are the envelope around the payload (the `step` oneof).
const ENVELOPE: &[&str] = &[
    "type",
    "status",
    "metadata",
    "error",
    "permissions",
    "taskDetails",
    "requestedInteraction",
    "completedInteractions",
    "subtrajectory",
];

/// Nesting limit for subtrajectories and embedded steps.
const MAX_DEPTH: usize = 4;

fn s<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    get(v, path)?.as_str()
}

/// A non-empty string at `path`.
fn ne<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    s(v, path).filter(|x| !x.is_empty())
}

fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    Some(cur)
}

fn arr<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

/// A scalar JSON value as text (strings unquoted; proto3 JSON writes 64-bit
/// integers as strings).
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(x) => Some(x.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A `file://` URI as a Markdown link; anything else unchanged.
pub fn link(uri: &str) -> String {
    match uri.strip_prefix("file://") {
        Some(path) => format!("[{path}]({uri})"),
        None if uri.starts_with('/') => format!("[{uri}](file://{uri})"),
        None if uri.starts_with("http://") || uri.starts_with("https://") => format!("<{uri}>"),
        None => code(uri),
    }
}

/// An inline code span that shows `text` verbatim, backticks included.
fn code(text: &str) -> String {
    let text = text.replace('\n', " ");
    let longest = crate::util::longest_run(&text, '`');
    if longest == 0 {
        return format!("`{text}`");
    }
    let ticks = "`".repeat(longest + 1);
    format!("{ticks} {text} {ticks}")
}

fn fence(out: &mut String, lang: &str, body: &str) {
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let ticks = "`".repeat(longest.max(2) + 1);
    let _ = writeln!(
        out,
        "{ticks}{lang}\n{}\n{ticks}\n",
        body.trim_end_matches('\n')
    );
}

/// Text as a block quote (every line quoted).
fn quote(out: &mut String, text: &str) {
    for line in text.trim_end_matches('\n').lines() {
        if line.is_empty() {
            out.push_str(">\n");
        } else {
            let _ = writeln!(out, "> {line}");
        }
    }
    out.push('\n');
}

/// `label: value` on one line, or the value fenced under the label when it
/// spans lines.
fn labelled(out: &mut String, label: &str, value: &str) {
    if value.contains('\n') {
        let _ = writeln!(out, "**{label}:**\n");
        fence(out, "text", value);
    } else {
        let _ = writeln!(out, "**{label}:** {value}\n");
    }
}

/// Pretty JSON of `v` in a fence.
fn dump(out: &mut String, v: &Value) {
    let pretty = serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    fence(out, "json", &pretty);
}

fn enum_words(name: &str, prefix: &str) -> String {
    let short = name.strip_prefix(prefix).unwrap_or(name).to_lowercase();
    let mut words = short.replace('_', " ");
    if let Some(first) = words.get(0..1) {
        let up = first.to_uppercase();
        words.replace_range(0..1, &up);
    }
    words
}

/// The heading words for a step type (`CORTEX_STEP_TYPE_...`, or the number
/// of a value the schema does not name).
pub fn step_heading(ty: &Value) -> String {
    let Some(name) = ty.as_str() else {
        return match ty.as_i64() {
            Some(n) => format!("Step of type {n}"),
            None => "Step".into(),
        };
    };
    let short = name.strip_prefix("CORTEX_STEP_TYPE_").unwrap_or(name);
    let fixed = match short {
        "USER_INPUT" => "User",
        "PLANNER_RESPONSE" => "Assistant",
        "RUN_COMMAND" => "Ran command",
        "VIEW_FILE" => "Read file",
        "LIST_DIRECTORY" => "Listed directory",
        "CODE_ACTION" => "Edited file",
        "GREP_SEARCH" => "Searched files",
        "READ_URL_CONTENT" => "Read URL",
        "SEARCH_WEB" => "Searched the web",
        "MCP_TOOL" => "Called MCP tool",
        "LIST_RESOURCES" => "Listed MCP resources",
        "GENERATE_IMAGE" => "Generated image",
        "INVOKE_SUBAGENT" => "Invoked subagent",
        "SYSTEM_MESSAGE" => "System message",
        "CHECKPOINT" => "Checkpoint",
        "ERROR_MESSAGE" => "Error",
        "FIND" => "Found files",
        "COMMAND_STATUS" => "Checked command",
        "EPHEMERAL_MESSAGE" => "Reminder",
        "CONVERSATION_HISTORY" => "Conversation history",
        "GENERIC" => "Used tool",
        "UNSPECIFIED" => "Step",
        _ => "",
    };
    if fixed.is_empty() {
        enum_words(name, "CORTEX_STEP_TYPE_")
    } else {
        fixed.to_string()
    }
}

/// The status words shown after a heading; none for DONE.
fn status_words(st: &Value) -> Option<String> {
    let Some(name) = st.as_str() else {
        return st.as_i64().map(|n| format!("status {n}"));
    };
    let short = name.strip_prefix("CORTEX_STEP_STATUS_").unwrap_or(name);
    Some(match short {
        "DONE" | "" => return None,
        "ERROR" => "failed".to_string(),
        "UNSPECIFIED" => "status unspecified".to_string(),
        other => other.to_lowercase().replace('_', " "),
    })
}

/// A one-based view range from the stored zero-based, inclusive start and end
/// lines (proto3 JSON omits a zero, so an absent bound is 0 when the other is
/// present).
fn view_range(v: &Value) -> Option<String> {
    let line = |k: &str| {
        v.get(k)
            .and_then(|x| x.as_u64().or_else(|| x.as_str()?.parse().ok()))
    };
    let (a, b) = match (line("startLine"), line("endLine")) {
        (None, None) => return None,
        (a, b) => (a.unwrap_or(0) + 1, b.unwrap_or(0) + 1),
    };
    Some(if a == b {
        format!("line {a}")
    } else {
        format!("lines {a}-{b}")
    })
}

fn render_error(out: &mut String, err: &Value) {
    let short = ne(err, &["shortError"]).unwrap_or("");
    let full = ne(err, &["fullError"]).unwrap_or("");
    let user = ne(err, &["userErrorMessage"]).unwrap_or("");
    let head = [short, user, full]
        .into_iter()
        .find(|x| !x.is_empty())
        .unwrap_or("error");
    let _ = writeln!(out, "> **Error:** {}\n", head.replace('\n', " "));
    if !user.is_empty() && user != head {
        let _ = writeln!(out, "> {}\n", user.replace('\n', " "));
    }
    if !full.is_empty() && full != head {
        fence(out, "text", full);
    }
}

fn render_tool_call(out: &mut String, call: &Value) {
    let name = ne(call, &["name"]).unwrap_or("?");
    let _ = writeln!(out, "**Tool call** {}\n", code(name));
    if let Some(args) = ne(call, &["argumentsJson"]) {
        let pretty = serde_json::from_str::<Value>(args)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or_else(|| args.to_string());
        fence(out, "json", &pretty);
    }
}

/// One attachment: its link or the size of its inline data.
fn render_media(out: &mut String, m: &Value) {
    let mime = ne(m, &["mimeType"]).unwrap_or("media");
    let mut line = format!("- {mime}");
    if let Some(uri) = ne(m, &["uri"]) {
        let _ = write!(line, " {}", link(uri));
    }
    if let Some(data) = ne(m, &["inlineData"]) {
        let pad = data.bytes().rev().take_while(|b| *b == b'=').count();
        let bytes = (data.len() / 4 * 3).saturating_sub(pad);
        let _ = write!(line, " (inline, {bytes} bytes)");
    }
    if let Some(d) = ne(m, &["description"]) {
        let _ = write!(line, ": {}", d.replace('\n', " "));
    }
    let _ = writeln!(out, "{line}");
}

fn render_user_input(out: &mut String, u: &Value) {
    let text = ne(u, &["userResponse"]).or_else(|| ne(u, &["query"]));
    if let Some(t) = text {
        let _ = writeln!(out, "{t}\n");
    }
    if let (Some(q), Some(r)) = (ne(u, &["query"]), ne(u, &["userResponse"])) {
        if q != r {
            labelled(out, "Query", q);
        }
    }
    if u.get("isQueuedMessage").and_then(Value::as_bool) == Some(true) {
        let _ = writeln!(out, "_(queued while the agent was busy)_\n");
    }
}

fn render_planner(out: &mut String, p: &Value) {
    if let Some(th) = ne(p, &["thinking"]) {
        let _ = writeln!(
            out,
            "<details><summary>Thinking</summary>\n\n{th}\n\n</details>\n"
        );
    }
    if let Some(r) = ne(p, &["response"]) {
        let _ = writeln!(out, "{r}\n");
    }
    if let Some(m) = ne(p, &["modifiedResponse"]).filter(|m| Some(*m) != ne(p, &["response"])) {
        let _ = writeln!(out, "**Modified response:**\n\n{m}\n");
    }
    for call in arr(p, "toolCalls") {
        render_tool_call(out, call);
    }
}

fn render_run_command(out: &mut String, c: &Value) {
    let cmd = ne(c, &["commandLine"])
        .or_else(|| ne(c, &["command"]))
        .or_else(|| ne(c, &["proposedCommandLine"]))
        .unwrap_or("");
    let mut line = format!("**Command** {}", code(cmd));
    if let Some(cwd) = ne(c, &["cwd"]) {
        let _ = write!(line, " in {}", link(cwd));
    }
    if let Some(sh) = ne(c, &["shell"]) {
        let _ = write!(line, " ({sh})");
    }
    if let Some(code) = c.get("exitCode").and_then(scalar) {
        let _ = write!(line, ", exit code {code}");
    }
    let _ = writeln!(out, "{line}\n");
    if let Some(p) = ne(c, &["proposedCommandLine"]).filter(|p| *p != cmd) {
        let _ = writeln!(out, "Proposed as {}\n", code(p));
    }
    let full = ne(c, &["combinedOutput", "full"]);
    if let Some(o) = full.or_else(|| ne(c, &["stdout"])) {
        fence(out, "text", o);
    }
    if let Some(t) = ne(c, &["combinedOutput", "truncated"]).filter(|t| Some(*t) != full) {
        let _ = writeln!(out, "Truncated output:\n");
        fence(out, "text", t);
    }
}

fn render_view_file(out: &mut String, v: &Value) {
    let uri = ne(v, &["absolutePathUri"]).unwrap_or("");
    let mut line = format!("**Read** {}", link(uri));
    if let Some(r) = view_range(v) {
        let _ = write!(line, ", {r}");
    }
    if v.get("isSkillFile").and_then(Value::as_bool) == Some(true) {
        line.push_str(" (skill file)");
    }
    let _ = writeln!(out, "{line}\n");
    if let Some(c) = ne(v, &["content"]) {
        fence(out, "text", c);
    }
    if let Some(m) = v.get("mediaData") {
        render_media(out, m);
        out.push('\n');
    }
}

fn render_list_directory(out: &mut String, d: &Value) {
    let uri = ne(d, &["directoryPathUri"]).unwrap_or("");
    let _ = writeln!(out, "**Directory** {}\n", link(uri));
    if d.get("dirNotFound").and_then(Value::as_bool) == Some(true) {
        let _ = writeln!(out, "_Directory not found._\n");
    }
    let mut any = false;
    for c in arr(d, "children") {
        if let Some(name) = scalar(c) {
            let _ = writeln!(out, "- {}", code(&name));
            any = true;
        }
    }
    if any {
        out.push('\n');
    } else if d.get("dirNotFound").is_none() {
        let _ = writeln!(out, "_(empty)_\n");
    }
}

fn render_code_action(out: &mut String, ca: &Value) {
    let created = get(ca, &["actionSpec", "createFile"]).is_some();
    let uri = ne(ca, &["actionResult", "edit", "absoluteUri"])
        .or_else(|| ne(ca, &["actionSpec", "createFile", "path", "absoluteUri"]))
        .or_else(|| ne(ca, &["actionSpec", "command", "file", "absoluteUri"]))
        .unwrap_or("");
    let verb = if created { "Created" } else { "Edit" };
    let _ = writeln!(out, "**{verb}** {}\n", link(uri));
    if let Some(d) = ne(ca, &["description"]) {
        let _ = writeln!(out, "{d}\n");
    }
    let instruction = ne(ca, &["actionSpec", "command", "instruction"])
        .or_else(|| ne(ca, &["actionSpec", "createFile", "instruction"]))
        .or_else(|| ne(ca, &["codeInstruction"]));
    if let Some(i) = instruction {
        labelled(out, "Instruction", i);
    }
    if let Some(diff) = ne(ca, &["actionResult", "edit", "unifiedDiff"]) {
        fence(out, "diff", diff);
    }
}

fn render_grep(out: &mut String, g: &Value) {
    let q = ne(g, &["query"]).unwrap_or("");
    let mut line = format!("**Search** {}", code(q));
    if let Some(uri) = ne(g, &["searchPathUri"]) {
        let _ = write!(line, " in {}", link(uri));
    }
    let _ = writeln!(out, "{line}\n");
    let mut shown = 0u64;
    for r in arr(g, "results") {
        let path = ne(r, &["relativePath"])
            .or_else(|| ne(r, &["absolutePath"]))
            .unwrap_or("");
        let line = r
            .get("lineNumber")
            .and_then(scalar)
            .map(|l| format!(":{l}"))
            .unwrap_or_default();
        let mut item = format!("- {}", code(&format!("{path}{line}")));
        if let Some(content) = ne(r, &["content"]) {
            let _ = write!(item, " {}", content.replace('\n', " "));
        }
        let _ = writeln!(out, "{item}");
        shown += 1;
    }
    let total = g
        .get("totalResults")
        .and_then(scalar)
        .and_then(|t| t.parse::<u64>().ok());
    match total {
        Some(t) if t > shown => {
            let _ = writeln!(out, "\n{t} results in all.");
        }
        _ if shown == 0 => {
            let _ = writeln!(out, "_No results._");
        }
        _ => {}
    }
    out.push('\n');
}

fn render_read_url(out: &mut String, r: &Value) {
    let url = ne(r, &["url"]).unwrap_or("");
    let mut line = format!("**URL** {}", link(url));
    if let Some(res) = ne(r, &["resolvedUrl"]).filter(|x| *x != url) {
        let _ = write!(line, ", resolved to {}", link(res));
    }
    if let Some(ms) = r.get("latencyMs").and_then(scalar) {
        let _ = write!(line, " ({ms} ms)");
    }
    let _ = writeln!(out, "{line}\n");
    if let Some(doc) = r.get("webDocument") {
        if let Some(t) = ne(doc, &["title"]) {
            let _ = writeln!(out, "**{t}**\n");
        }
        if let Some(s) = ne(doc, &["summary"]) {
            let _ = writeln!(out, "{s}\n");
        }
        for c in arr(doc, "chunks") {
            if let Some(t) = ne(c, &["markdownChunk", "text"]) {
                quote(out, t);
            }
        }
    }
}

fn render_find(out: &mut String, f: &Value) {
    let mut line = format!("**Pattern** {}", code(ne(f, &["pattern"]).unwrap_or("")));
    if let Some(d) = ne(f, &["searchDirectory"]) {
        let _ = write!(line, " in {}", link(d));
    }
    if let Some(n) = f.get("totalResults").and_then(scalar) {
        let _ = write!(line, ", {n} results");
    }
    let _ = writeln!(out, "{line}\n");
    if let Some(o) = ne(f, &["truncatedOutput"]).or_else(|| ne(f, &["rawOutput"])) {
        fence(out, "text", o);
    }
}

fn render_command_status(out: &mut String, c: &Value) {
    let id = ne(c, &["commandId"]).unwrap_or("?");
    let mut line = format!("**Command** {}", code(id));
    if let Some(w) = c.get("waitDurationSeconds").and_then(scalar) {
        let _ = write!(line, ", waited {w} s");
    }
    if let Some(n) = c.get("outputCharacterCount").and_then(scalar) {
        let _ = write!(line, ", {n} characters of output");
    }
    let _ = writeln!(out, "{line}\n");
}

fn render_search_web(out: &mut String, w: &Value) {
    let mut line = format!("**Query** {}", code(ne(w, &["query"]).unwrap_or("")));
    if let Some(d) = ne(w, &["domain"]) {
        let _ = write!(line, " on {}", code(d));
    }
    let _ = writeln!(out, "{line}\n");
    if let Some(sum) = ne(w, &["summary"]) {
        quote(out, sum);
    }
}

fn render_mcp_tool(out: &mut String, m: &Value) {
    let server = ne(m, &["serverName"]).unwrap_or("?");
    let tool = ne(m, &["toolCall", "name"]).unwrap_or("?");
    let _ = writeln!(
        out,
        "**MCP server** {}, tool {}\n",
        code(server),
        code(tool)
    );
    if let Some(args) = ne(m, &["toolCall", "argumentsJson"]) {
        let pretty = serde_json::from_str::<Value>(args)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or_else(|| args.to_string());
        fence(out, "json", &pretty);
    }
    if m.get("userRejected").and_then(Value::as_bool) == Some(true) {
        let _ = writeln!(out, "_The user rejected this call._\n");
    }
    if let Some(r) = ne(m, &["resultString"]) {
        let _ = writeln!(out, "Result:\n");
        fence(out, "text", r);
    }
    if let Some(u) = ne(m, &["resultUri"]) {
        let _ = writeln!(out, "Result stored at {}\n", link(u));
    }
}

fn render_list_resources(out: &mut String, l: &Value) {
    let server = ne(l, &["serverName"]).unwrap_or("?");
    let _ = writeln!(out, "**MCP server** {}\n", code(server));
    if let Some(c) = ne(l, &["nextCursor"]) {
        let _ = writeln!(out, "More resources after cursor {}\n", code(c));
    }
}

fn render_generate_image(out: &mut String, g: &Value) {
    if let Some(p) = ne(g, &["prompt"]) {
        let _ = writeln!(out, "**Prompt:**\n");
        quote(out, p);
    }
    let mut facts = Vec::new();
    if let Some(n) = ne(g, &["imageName"]) {
        facts.push(format!("image {}", code(n)));
    }
    if let Some(m) = ne(g, &["modelName"]) {
        facts.push(format!("model {}", code(m)));
    }
    if let Some(a) = ne(g, &["aspectRatio"]) {
        facts.push(format!("aspect ratio {a}"));
    }
    if !facts.is_empty() {
        let _ = writeln!(out, "{}\n", facts.join(", "));
    }
    if let Some(m) = g.get("generatedMedia") {
        let _ = writeln!(out, "Generated:\n");
        render_media(out, m);
        out.push('\n');
    }
}

fn render_invoke_subagent(out: &mut String, a: &Value) {
    let name = ne(a, &["subagentName"]).unwrap_or("?");
    let mut line = format!("**Subagent** {}", code(name));
    if a.get("background").and_then(Value::as_bool) == Some(true) {
        line.push_str(" (in the background)");
    }
    if let Some(c) = ne(a, &["conversationId"]) {
        let _ = write!(line, ", conversation {}", code(c));
    }
    let _ = writeln!(out, "{line}\n");
    if let Some(p) = ne(a, &["prompt"]) {
        quote(out, p);
    }
    let specs: Vec<&Value> = arr(a, "specs").collect();
    if !specs.is_empty() {
        let _ = writeln!(out, "Children:\n");
        for sp in specs {
            let mut item = format!("- {}", code(ne(sp, &["name"]).unwrap_or("?")));
            if let Some(w) = ne(sp, &["workspace"]) {
                let _ = write!(item, " (workspace {w})");
            }
            if let Some(p) = ne(sp, &["prompt"]) {
                let _ = write!(item, ": {}", p.replace('\n', " "));
            }
            let _ = writeln!(out, "{item}");
        }
        out.push('\n');
    }
    let results: Vec<&Value> = arr(a, "results").collect();
    if !results.is_empty() {
        let _ = writeln!(out, "Results:\n");
        for r in results {
            let mut item = format!(
                "- conversation {}",
                code(ne(r, &["conversationId"]).unwrap_or("?"))
            );
            if let Some(l) = ne(r, &["logUri"]) {
                let _ = write!(item, ", log {}", link(l));
            }
            if let Some(w) = ne(r, &["workspaceUri"]) {
                let _ = write!(item, ", workspace {}", link(w));
            }
            let _ = writeln!(out, "{item}");
        }
        out.push('\n');
    }
    if let Some(r) = ne(a, &["result"]) {
        let _ = writeln!(out, "Result:\n");
        fence(out, "text", r);
    }
}

fn render_checkpoint(out: &mut String, c: &Value) {
    if let Some(i) = c.get("checkpointIndex").and_then(scalar) {
        let _ = writeln!(out, "Checkpoint {i}\n");
    }
    for (key, label) in [
        ("conversationTitle", "Title"),
        ("userIntent", "User intent"),
        ("sessionSummary", "Summary"),
    ] {
        if let Some(t) = ne(c, &[key]) {
            let _ = writeln!(out, "**{label}:** {t}\n");
        }
    }
    let requests: Vec<String> = arr(c, "userRequests").filter_map(scalar).collect();
    if !requests.is_empty() {
        let _ = writeln!(out, "**User requests:**\n");
        for r in requests {
            let _ = writeln!(out, "- {}", r.replace('\n', " "));
        }
        out.push('\n');
    }
    let captured: Vec<&Value> = arr(c, "capturedUserRequests").collect();
    if !captured.is_empty() {
        let _ = writeln!(out, "**Captured user requests:**\n");
        for r in captured {
            let _ = writeln!(
                out,
                "- {}",
                ne(r, &["text"]).unwrap_or("").replace('\n', " ")
            );
            for m in arr(r, "media") {
                out.push_str("  ");
                render_media(out, m);
            }
        }
        out.push('\n');
    }
}

/// A generic argument's value: the JSON text decoded when it is a string.
fn arg_value(out: &mut String, k: &str, raw: &Value) {
    let raw = scalar(raw).unwrap_or_else(|| raw.to_string());
    let shown = match serde_json::from_str::<Value>(&raw) {
        Ok(Value::String(x)) => x,
        _ => raw,
    };
    if shown.contains('\n') {
        let _ = writeln!(out, "- {k}:\n");
        let mut block = String::new();
        fence(&mut block, "text", &shown);
        for line in block.lines() {
            if line.is_empty() {
                out.push('\n');
            } else {
                let _ = writeln!(out, "  {line}");
            }
        }
    } else if shown.starts_with("file://") || shown.starts_with('/') {
        let _ = writeln!(out, "- {k}: {}", link(&shown));
    } else {
        let _ = writeln!(out, "- {k}: {}", code(&shown));
    }
}

fn render_generic(out: &mut String, step: &Value, g: &Value, depth: usize, level: usize) {
    if let Some(name) = ne(step, &["metadata", "toolCall", "name"]) {
        let _ = writeln!(out, "**Tool** {}\n", code(name));
    }
    if let Some(args) = g
        .get("args")
        .and_then(Value::as_object)
        .filter(|a| !a.is_empty())
    {
        for (k, v) in args {
            arg_value(out, k, v);
        }
        out.push('\n');
    }
    let Some(result) = g.get("result") else {
        return;
    };
    if let Some(info) = result.get("stepRenderInfo") {
        let words: Vec<&str> = ["verb", "title"]
            .into_iter()
            .filter_map(|k| ne(info, &[k]))
            .collect();
        let mut line = words.join(" ");
        if let Some(md) = ne(info, &["markdown"]) {
            if line.is_empty() {
                line = md.to_string();
            } else {
                let _ = write!(line, ": {md}");
            }
        }
        if !line.is_empty() {
            let _ = writeln!(out, "_{}_\n", line.replace('\n', " "));
        }
        if let Some(meta) = info.get("metadata").and_then(Value::as_object) {
            for (k, v) in meta {
                arg_value(out, k, v);
            }
            if !meta.is_empty() {
                out.push('\n');
            }
        }
    }
    if let Some(r) = ne(result, &["result"]) {
        fence(out, "text", r);
    }
    if let Some(meta) = result.get("metadata").and_then(Value::as_object) {
        if !meta.is_empty() {
            let _ = writeln!(out, "Result metadata:\n");
            for (k, v) in meta {
                arg_value(out, k, v);
            }
            out.push('\n');
        }
    }
    let media: Vec<&Value> = arr(result, "media").collect();
    if !media.is_empty() {
        let _ = writeln!(out, "Attachments:\n");
        for m in media {
            render_media(out, m);
        }
        out.push('\n');
    }
    if let Some(uri) = ne(result, &["fullOutputUri"]) {
        let _ = writeln!(out, "Full output: {}\n", link(uri));
    }
    if let Some(inner) = result.get("payload") {
        if s(inner, &["@type"]) == Some("type.googleapis.com/gemini_coder.Step") {
            render_body(out, inner, depth + 1, level);
        } else {
            let _ = writeln!(out, "Payload:\n");
            dump(out, inner);
        }
    }
}

/// Permission grants, permission requests and answers, task details.
fn render_envelope(out: &mut String, step: &Value) {
    let resource = |r: &Value| {
        let action = ne(r, &["action"]).unwrap_or("?");
        match ne(r, &["target"]) {
            Some(t) => format!("{} {}", code(action), code(t)),
            None => code(action),
        }
    };
    let grants: Vec<&Value> = step
        .get("permissions")
        .map(|p| arr(p, "permissionGrants").collect())
        .unwrap_or_default();
    for g in grants {
        let allow = g.get("allow").and_then(Value::as_bool) == Some(true);
        let what = g
            .get("resource")
            .map(resource)
            .unwrap_or_else(|| code(ne(g, &["action"]).unwrap_or("?")));
        let _ = writeln!(
            out,
            "- Permission {}: {what}",
            if allow { "granted" } else { "denied" }
        );
    }
    let request = |out: &mut String, req: &Value, answer: Option<&Value>| {
        let Some(p) = req.get("permission") else {
            let _ = writeln!(out, "- Interaction requested:\n");
            dump(out, req);
            return;
        };
        let mut line = match ne(p, &["actionDescription"]) {
            Some(d) => format!("- Asked permission: {}", d.replace('\n', " ")),
            None => format!(
                "- Asked permission: {}",
                p.get("resource").map(resource).unwrap_or_default()
            ),
        };
        if let Some(t) = ne(p, &["triggerSource", "detail"]) {
            let _ = write!(line, " ({t})");
        }
        match answer.and_then(|a| a.get("permission")) {
            Some(a) => match a.get("allow").and_then(Value::as_bool) {
                Some(true) => line.push_str(" — allowed"),
                Some(false) => line.push_str(" — denied"),
                None => line.push_str(" — answered"),
            },
            None if answer.is_some() => line.push_str(" — answered"),
            None => line.push_str(" — awaiting an answer"),
        }
        let _ = writeln!(out, "{line}");
        let persisted: Vec<String> = answer
            .and_then(|a| get(a, &["permission", "persistGrants"]))
            .map(|g| arr(g, "allow").filter_map(scalar).collect())
            .unwrap_or_default();
        if !persisted.is_empty() {
            let shown: Vec<String> = persisted.iter().map(|p| code(p)).collect();
            let _ = writeln!(out, "  (remembered: {})", shown.join(", "));
        }
    };
    if let Some(req) = step.get("requestedInteraction") {
        request(out, req, None);
    }
    for ci in arr(step, "completedInteractions") {
        match ci.get("request") {
            Some(req) => request(out, req, ci.get("response")),
            None => {
                let _ = writeln!(out, "- Interaction:\n");
                dump(out, ci);
            }
        }
    }
    if let Some(t) = step.get("taskDetails") {
        let mut line = "- Task".to_string();
        if let Some(id) = ne(t, &["id"]) {
            let _ = write!(line, " {}", code(id));
        }
        if let Some(d) = ne(t, &["shortDescription"]) {
            let _ = write!(line, ": {}", d.replace('\n', " "));
        }
        if let Some(c) = ne(t, &["commandLine"]) {
            let _ = write!(line, ", command {}", code(c));
        }
        if let Some(p) = ne(t, &["progress"]) {
            let _ = write!(line, ", progress {}", p.replace('\n', " "));
        }
        if let Some(l) = ne(t, &["logUri"]) {
            let _ = write!(line, ", log {}", link(l));
        }
        if let Some(m) = ne(t, &["movedToBackgroundAt"]) {
            let _ = write!(line, ", moved to the background at {m}");
        }
        let _ = writeln!(out, "{line}");
    }
    if !out.ends_with("\n\n") {
        out.push('\n');
    }
}

/// Renders one step's body: the payload (whichever `step` oneof member is
/// set), the envelope, any subtrajectory. `level` is the heading level of
/// this step's own heading.
fn render_body(out: &mut String, step: &Value, depth: usize, level: usize) {
    if depth > MAX_DEPTH {
        let _ = writeln!(out, "_(nested too deeply to show)_\n");
        return;
    }
    let Some(obj) = step.as_object() else {
        dump(out, step);
        return;
    };
    for (key, v) in obj {
        if ENVELOPE.contains(&key.as_str()) || key == "@type" {
            continue;
        }
        match key.as_str() {
            "userInput" => render_user_input(out, v),
            "plannerResponse" => render_planner(out, v),
            "runCommand" => render_run_command(out, v),
            "viewFile" => render_view_file(out, v),
            "listDirectory" => render_list_directory(out, v),
            "codeAction" => render_code_action(out, v),
            "grepSearch" => render_grep(out, v),
            "readUrlContent" => render_read_url(out, v),
            "searchWeb" => render_search_web(out, v),
            "mcpTool" => render_mcp_tool(out, v),
            "listResources" => render_list_resources(out, v),
            "generateImage" => render_generate_image(out, v),
            "invokeSubagent" => render_invoke_subagent(out, v),
            "systemMessage" => {
                if let Some(m) = ne(v, &["message"]) {
                    if m.trim_end().contains('\n') {
                        quote(out, m);
                    } else {
                        let _ = writeln!(out, "_{}_\n", m.trim_end());
                    }
                }
            }
            "checkpoint" => render_checkpoint(out, v),
            "find" => render_find(out, v),
            "commandStatus" => render_command_status(out, v),
            "ephemeralMessage" => {
                if let Some(m) = ne(v, &["content"]) {
                    quote(out, m);
                }
            }
            "conversationHistory" => {
                if let Some(m) = ne(v, &["content"]) {
                    let _ = writeln!(out, "**Earlier conversation**\n");
                    quote(out, m);
                }
            }
            "errorMessage" => {
                if let Some(e) = v.get("error") {
                    render_error(out, e);
                }
            }
            "generic" => render_generic(out, step, v, depth, level),
            other => {
                // A payload without a dedicated view: shown whole.
                let _ = writeln!(out, "**{other}**\n");
                dump(out, v);
            }
        }
    }
    if s(step, &["type"]) == Some("CORTEX_STEP_TYPE_INVOKE_SUBAGENT")
        && !obj.contains_key("invokeSubagent")
    {
        let _ = writeln!(
            out,
            "_A subagent was invoked; this step does not name its conversation, which is recorded separately._\n"
        );
    }
    let envelope = [
        "permissions",
        "requestedInteraction",
        "completedInteractions",
        "taskDetails",
    ];
    if envelope.iter().any(|k| obj.contains_key(*k)) {
        render_envelope(out, step);
    }
    if let Some(e) = step.get("error") {
        render_error(out, e);
    }
    if let Some(sub) = step.get("subtrajectory") {
        let steps: Vec<&Value> = arr(sub, "steps").collect();
        let n = steps.len();
        let _ = writeln!(
            out,
            "**Subtrajectory** ({n} step{})\n",
            if n == 1 { "" } else { "s" }
        );
        render_steps(out, &steps, depth + 1, (level + 1).min(6));
    }
}

fn render_steps(out: &mut String, steps: &[&Value], depth: usize, level: usize) {
    let hashes = "#".repeat(level);
    for (i, step) in steps.iter().enumerate() {
        render_step_at(out, i, step, &hashes, depth, level);
    }
}

/// One step under its transcript heading (`## i. Heading ...`) and body.
fn render_step_at(
    out: &mut String,
    i: usize,
    step: &Value,
    hashes: &str,
    depth: usize,
    level: usize,
) {
    let mut heading = step_heading(step.get("type").unwrap_or(&Value::Null));
    if get(step, &["codeAction", "actionSpec", "createFile"]).is_some() {
        heading = "Created file".into();
    }
    let tool = if s(step, &["type"]) == Some("CORTEX_STEP_TYPE_GENERIC") {
        ne(step, &["metadata", "toolCall", "name"])
            .map(|n| format!(" {n}"))
            .unwrap_or_default()
    } else {
        String::new()
    };
    let status = step
        .get("status")
        .and_then(status_words)
        .map(|w| format!(" ({w})"))
        .unwrap_or_default();
    let when = s(step, &["metadata", "createdAt"])
        .map(|t| format!(" · {t}"))
        .unwrap_or_default();
    let _ = writeln!(out, "{hashes} {i}. {heading}{tool}{status}{when}\n");
    render_body(out, step, depth, level);
}

/// Renders step `index` of a trajectory JSON (daemon style) exactly as the
/// whole transcript ([`render_markdown`]) renders it, heading included; none
/// when the trajectory has no such step.
pub fn render_step(trajectory: &Value, index: usize) -> Option<String> {
    let step = trajectory.get("steps")?.as_array()?.get(index)?;
    let mut out = String::new();
    render_step_at(&mut out, index, step, "##", 0, 2);
    Some(out)
}

/// What a subagent tree export nests under a conversation's steps: called
/// after each top-level step with the step, its index and the heading level
/// of its own heading; what it returns is appended under the step.
pub type Nest<'a> = dyn FnMut(&Value, usize, usize) -> Option<String> + 'a;

/// Renders a trajectory JSON (daemon style) as a Markdown transcript.
pub fn render_markdown(trajectory: &Value, notice: &str) -> String {
    render_markdown_nested(trajectory, notice, &mut |_, _, _| None)
}

/// [`render_markdown`] with `nest` asked after each top-level step (a hook
/// that never answers renders exactly [`render_markdown`]'s bytes).
pub fn render_markdown_nested(trajectory: &Value, notice: &str, nest: &mut Nest<'_>) -> String {
    let mut out = String::new();
    let id = trajectory
        .get("cascadeId")
        .and_then(Value::as_str)
        .unwrap_or("(unknown)");
    let _ = writeln!(out, "# Conversation {id}\n");
    let _ = writeln!(out, "> {notice}\n");
    if let Some(created) = s(trajectory, &["metadata", "createdAt"]) {
        let _ = writeln!(out, "Created {created}.\n");
    }
    if let Some(parent) = ne(trajectory, &["agyReader", "parentCascadeId"]) {
        let _ = writeln!(out, "Subagent conversation of {}.\n", code(parent));
    }
    for w in get(trajectory, &["metadata", "workspaces"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(uri) = w.get("workspaceFolderAbsoluteUri").and_then(Value::as_str) {
            let _ = writeln!(out, "Workspace {}\n", link(uri));
        }
    }
    out.push_str(&render_transcript_steps(trajectory, 2, nest));
    out
}

/// The steps of a trajectory alone, their headings at `level` (1 to 6),
/// with `nest` asked after each one: the body of a nested transcript.
pub fn render_transcript_steps(trajectory: &Value, level: usize, nest: &mut Nest<'_>) -> String {
    let mut out = String::new();
    let level = level.clamp(1, 6);
    let hashes = "#".repeat(level);
    for (i, step) in arr(trajectory, "steps").enumerate() {
        render_step_at(&mut out, i, step, &hashes, 0, level);
        if let Some(more) = nest(step, i, level) {
            out.push_str(&more);
        }
    }
    out
}
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_turns_commands_diffs_links_and_errors() {
        let t = json!({
            "cascadeId": "c1",
            "steps": [
                {"type": "CORTEX_STEP_TYPE_USER_INPUT", "userInput": {"userResponse": "fix the bug"}},
                {"type": "CORTEX_STEP_TYPE_PLANNER_RESPONSE", "plannerResponse": {"thinking": "hmm", "response": "ok",
                  "toolCalls": [{"name": "run_command", "argumentsJson": "{\"CommandLine\":\"ls\"}"}]}},
                {"type": "CORTEX_STEP_TYPE_RUN_COMMAND", "status": "CORTEX_STEP_STATUS_ERROR",
                 "runCommand": {"commandLine": "ls", "cwd": "/w", "exitCode": 2, "combinedOutput": {"full": "nope"}},
                 "error": {"shortError": "exit 2", "fullError": "exit status 2"}},
                {"type": "CORTEX_STEP_TYPE_CODE_ACTION", "codeAction": {"actionResult": {"edit": {"absoluteUri": "file:///w/a.rs", "unifiedDiff": "-a\n+b"}}}}
            ]
        });
        let md = render_markdown(&t, "OFFLINE NOTICE");
        for want in [
            "OFFLINE NOTICE",
            "## 0. User",
            "fix the bug",
            "<details>",
            "`run_command`",
            "\"CommandLine\": \"ls\"",
            "nope",
            "(failed)",
            "**Error:** exit 2",
            "```diff",
            "[/w/a.rs](file:///w/a.rs)",
        ] {
            assert!(md.contains(want), "missing {want:?} in\n{md}");
        }
    }

    /// The section of step `i` (top level) in `md`.
    fn section(md: &str, i: usize) -> &str {
        let head = format!("\n## {i}. ");
        let start = md.find(&head).map(|p| p + 1).unwrap_or(md.len());
        let next = format!("\n## {}. ", i + 1);
        let end = md[start..]
            .find(&next)
            .map(|p| start + p)
            .unwrap_or(md.len());
        &md[start..end]
    }

    #[test]
    fn every_payload_the_schema_models_is_shown_under_words_a_person_reads() {
        // One step per member of gemini_coder.Step's `step` oneof, each with
        // the content that must show, and the heading it gets.
        let cases: Vec<(Value, &str, Vec<&str>)> = vec![
            (
                json!({"type": "CORTEX_STEP_TYPE_USER_INPUT", "userInput": {"userResponse": "hello there"}}),
                "User",
                vec!["hello there"],
            ),
            (
                json!({"type": "CORTEX_STEP_TYPE_PLANNER_RESPONSE", "plannerResponse": {"response": "on it"}}),
                "Assistant",
                vec!["on it"],
            ),
            (
                json!({"type": "CORTEX_STEP_TYPE_RUN_COMMAND", "runCommand": {"commandLine": "cargo t", "cwd": "/w", "combinedOutput": {"full": "ok 3"}}}),
                "Ran command",
                vec!["cargo t", "ok 3", "/w"],
            ),
            (
                json!({"type": "CORTEX_STEP_TYPE_VIEW_FILE", "viewFile": {"absolutePathUri": "file:///w/a.rs", "endLine": 39, "content": "fn a() {}\n"}}),
                "Read file",
                vec!["/w/a.rs", "lines 1-40", "fn a() {}"],
            ),
            (
                json!({"type": "CORTEX_STEP_TYPE_LIST_DIRECTORY", "listDirectory": {"directoryPathUri": "file:///w/src", "children": ["main.rs", "lib.rs"]}}),
                "Listed directory",
                vec!["/w/src", "main.rs", "lib.rs"],
            ),
            (
                json!({"type": "CORTEX_STEP_TYPE_CODE_ACTION", "codeAction": {"actionResult": {"edit": {"absoluteUri": "file:///w/b.rs", "unifiedDiff": "-x\n+y"}}}}),
                "Edited file",
                vec!["/w/b.rs", "+y"],
            ),
            (
                json!({"type": "CORTEX_STEP_TYPE_GREP_SEARCH", "grepSearch": {"query": "TODO", "results": [{"relativePath": "c.rs", "lineNumber": 3, "content": "// TODO x"}]}}),
                "Searched files",
                vec!["TODO", "c.rs:3", "// TODO x"],
            ),
            (
                json!({"type": "CORTEX_STEP_TYPE_READ_URL_CONTENT", "readUrlContent": {"url": "https://example.com/d", "latencyMs": 12}}),
                "Read URL",
                vec!["https://example.com/d", "12 ms"],
            ),
            (
                json!({"type": "CORTEX_STEP_TYPE_SEARCH_WEB", "searchWeb": {"query": "wal format", "summary": "It is a log."}}),
                "Searched the web",
                vec!["wal format", "It is a log."],
            ),
            (
                json!({"type": "CORTEX_STEP_TYPE_MCP_TOOL", "mcpTool": {"serverName": "github", "toolCall": {"name": "search_issues", "argumentsJson": "{\"q\":\"bug\"}"}, "resultString": "[#1 bug]"}}),
                "Called MCP tool",
                vec!["github", "search_issues", "\"q\": \"bug\"", "[#1 bug]"],
            ),
            (
                json!({"type": "CORTEX_STEP_TYPE_LIST_RESOURCES", "listResources": {"serverName": "docs-srv"}}),
                "Listed MCP resources",
                vec!["docs-srv"],
            ),
            (
                json!({"type": "CORTEX_STEP_TYPE_GENERATE_IMAGE", "generateImage": {"prompt": "a red fox", "imageName": "fox", "generatedMedia": {"mimeType": "image/png", "uri": "file:///w/fox.png"}}}),
                "Generated image",
                vec!["a red fox", "fox", "/w/fox.png"],
            ),
            (
                json!({"type": "CORTEX_STEP_TYPE_INVOKE_SUBAGENT", "invokeSubagent": {"subagentName": "general", "prompt": "review it",
                "specs": [{"name": "helper-0", "prompt": "review it"}], "results": [{"conversationId": "c-42", "logUri": "file:///l.jsonl"}]}}),
                "Invoked subagent",
                vec!["general", "review it", "helper-0", "c-42", "/l.jsonl"],
            ),
            (
                json!({"type": "CORTEX_STEP_TYPE_SYSTEM_MESSAGE", "systemMessage": {"message": "compacted"}}),
                "System message",
                vec!["compacted"],
            ),
            (
                json!({"type": "CORTEX_STEP_TYPE_CHECKPOINT", "checkpoint": {"userIntent": "ship it", "userRequests": ["do a"]}}),
                "Checkpoint",
                vec!["ship it", "do a"],
            ),
            (
                json!({"type": "CORTEX_STEP_TYPE_ERROR_MESSAGE", "errorMessage": {"error": {"shortError": "quota", "fullError": "rpc: quota (429)"}}}),
                "Error",
                vec!["quota", "rpc: quota (429)"],
            ),
            (
                json!({"type": "CORTEX_STEP_TYPE_GENERIC", "metadata": {"toolCall": {"name": "schedule"}},
                "generic": {"args": {"Prompt": "\"check back\""}, "result": {"result": "Timer set"}}}),
                "Used tool schedule",
                vec!["check back", "Timer set"],
            ),
        ];
        let steps: Vec<Value> = cases.iter().map(|c| c.0.clone()).collect();
        let md = render_markdown(&json!({"cascadeId": "c", "steps": steps}), "N");
        assert!(!md.contains("CORTEX_STEP_TYPE_"), "{md}");
        for (i, (_, heading, wants)) in cases.iter().enumerate() {
            let sec = section(&md, i);
            assert!(
                sec.starts_with(&format!("## {i}. {heading}\n")),
                "heading of {i}: {sec}"
            );
            for w in wants {
                assert!(sec.contains(w), "step {i} misses {w:?}:\n{sec}");
            }
        }
    }

    #[test]
    fn view_ranges_are_one_based_as_the_user_asked() {
        let t = json!({"steps": [
            {"type": "CORTEX_STEP_TYPE_VIEW_FILE", "viewFile": {"absolutePathUri": "file:///a", "startLine": 17, "endLine": 21}},
            {"type": "CORTEX_STEP_TYPE_VIEW_FILE", "viewFile": {"absolutePathUri": "file:///a", "endLine": 39}},
            {"type": "CORTEX_STEP_TYPE_VIEW_FILE", "viewFile": {"absolutePathUri": "file:///a", "startLine": 4, "endLine": 4}},
            {"type": "CORTEX_STEP_TYPE_VIEW_FILE", "viewFile": {"absolutePathUri": "file:///a"}}
        ]});
        let md = render_markdown(&t, "N");
        assert!(section(&md, 0).contains("lines 18-22"), "{md}");
        assert!(section(&md, 1).contains("lines 1-40"), "{md}");
        assert!(section(&md, 2).contains("line 5\n"), "{md}");
        assert!(!section(&md, 3).contains("line"), "{md}");
        assert!(!md.contains("17") && !md.contains("21"), "{md}");
    }

    #[test]
    fn unknown_payloads_and_types_still_show_their_content() {
        let t = json!({"steps": [
            {"type": "CORTEX_STEP_TYPE_READ_TERMINAL", "readTerminal": {"terminalId": "t-7", "contents": "$ make"}},
            {"type": 999, "status": 42, "mystery": {"note": "kept"}},
            {"type": "CORTEX_STEP_TYPE_GENERIC", "generic": {"result": {"payload": {"@type": "type.googleapis.com/x.Y", "z": "inner-z"}}}}
        ]});
        let md = render_markdown(&t, "N");
        let s0 = section(&md, 0);
        assert!(s0.starts_with("## 0. Read terminal\n"), "{s0}");
        assert!(
            s0.contains("```json") && s0.contains("\"terminalId\": \"t-7\""),
            "{s0}"
        );
        let s1 = section(&md, 1);
        assert!(s1.starts_with("## 1. Step of type 999 (status 42)"), "{s1}");
        assert!(s1.contains("\"note\": \"kept\""), "{s1}");
        assert!(section(&md, 2).contains("inner-z"), "{md}");
    }

    #[test]
    fn inline_code_keeps_backticks_and_permission_answers_show() {
        assert_eq!(code("a`b"), "`` a`b ``");
        let t = json!({"steps": [
            {"type": "CORTEX_STEP_TYPE_RUN_COMMAND", "runCommand": {"commandLine": "echo `id`"},
             "completedInteractions": [{"request": {"permission": {"actionDescription": "Run echo"}},
                "response": {"permission": {"allow": false}}}],
             "taskDetails": {"id": "x/task-1", "shortDescription": "bg"}}
        ]});
        let md = render_markdown(&t, "N");
        assert!(md.contains("`` echo `id` ``"), "{md}");
        assert!(
            md.contains("- Asked permission: Run echo — denied\n"),
            "{md}"
        );
        assert!(md.contains("- Task `x/task-1`: bg\n"), "{md}");
    }
}
