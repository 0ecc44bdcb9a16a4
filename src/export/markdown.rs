//! The Markdown transcript: user turns, planner responses and thinking, tool
//! calls with arguments, command output, code-action diffs, `file://` links
//! and errors, under a visible notice that the export is offline and unverified.

use serde_json::Value;
use std::fmt::Write;

fn s<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str()
}

fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    Some(cur)
}

/// A `file://` URI as a Markdown link; anything else unchanged.
pub fn link(uri: &str) -> String {
    match uri.strip_prefix("file://") {
        Some(path) => format!("[{path}]({uri})"),
        None if uri.starts_with('/') => format!("[{uri}](file://{uri})"),
        None => format!("`{uri}`"),
    }
}

fn fence(out: &mut String, lang: &str, body: &str) {
    let ticks = if body.contains("```") { "````" } else { "```" };
    let _ = writeln!(
        out,
        "{ticks}{lang}\n{}\n{ticks}\n",
        body.trim_end_matches('\n')
    );
}

fn short_type(t: &str) -> &str {
    t.strip_prefix("CORTEX_STEP_TYPE_").unwrap_or(t)
}

fn short_status(t: &str) -> &str {
    t.strip_prefix("CORTEX_STEP_STATUS_").unwrap_or(t)
}

fn render_error(out: &mut String, err: &Value) {
    let short = err.get("shortError").and_then(Value::as_str).unwrap_or("");
    let full = err.get("fullError").and_then(Value::as_str).unwrap_or("");
    let user = err
        .get("userErrorMessage")
        .and_then(Value::as_str)
        .unwrap_or("");
    let head = [short, user]
        .into_iter()
        .find(|x| !x.is_empty())
        .unwrap_or("error");
    let _ = writeln!(out, "> **Error:** {}\n", head.replace('\n', " "));
    if !full.is_empty() && full != head {
        fence(out, "text", full);
    }
}

fn render_tool_call(out: &mut String, call: &Value) {
    let name = call.get("name").and_then(Value::as_str).unwrap_or("?");
    let _ = writeln!(out, "**Tool call** `{name}`\n");
    if let Some(args) = call.get("argumentsJson").and_then(Value::as_str) {
        let pretty = serde_json::from_str::<Value>(args)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or_else(|| args.to_string());
        fence(out, "json", &pretty);
    }
}

/// Renders one step's body (the oneof payload and envelope).
fn render_step(out: &mut String, step: &Value, depth: usize) {
    if depth > 4 {
        return;
    }
    if let Some(u) = step.get("userInput") {
        let text = u
            .get("userResponse")
            .and_then(Value::as_str)
            .or_else(|| u.get("query").and_then(Value::as_str))
            .unwrap_or("");
        let _ = writeln!(out, "{text}\n");
    }
    if let Some(p) = step.get("plannerResponse") {
        if let Some(th) = p
            .get("thinking")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            let _ = writeln!(
                out,
                "<details><summary>Thinking</summary>\n\n{th}\n\n</details>\n"
            );
        }
        if let Some(r) = p.get("response").and_then(Value::as_str) {
            let _ = writeln!(out, "{r}\n");
        }
        for call in p
            .get("toolCalls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            render_tool_call(out, call);
        }
    }
    if let Some(c) = step.get("runCommand") {
        let cmd = c
            .get("commandLine")
            .or_else(|| c.get("command"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let _ = writeln!(out, "**Command** `{cmd}`");
        if let Some(cwd) = c.get("cwd").and_then(Value::as_str) {
            let _ = writeln!(out, " in {}", link(cwd));
        }
        if let Some(code) = c.get("exitCode") {
            let _ = writeln!(out, " (exit code {code})");
        }
        out.push('\n');
        let output =
            s(c, &["combinedOutput", "full"]).or_else(|| c.get("stdout").and_then(Value::as_str));
        if let Some(o) = output.filter(|o| !o.is_empty()) {
            fence(out, "text", o);
        }
    }
    if let Some(v) = step.get("viewFile") {
        let uri = v
            .get("absolutePathUri")
            .and_then(Value::as_str)
            .unwrap_or("");
        let range = match (v.get("startLine"), v.get("endLine")) {
            (Some(a), Some(b)) => format!(" lines {a}–{b}"),
            _ => String::new(),
        };
        let _ = writeln!(out, "**Read** {}{range}\n", link(uri));
    }
    if let Some(ca) = step.get("codeAction") {
        let uri = s(ca, &["actionResult", "edit", "absoluteUri"])
            .or_else(|| s(ca, &["actionSpec", "createFile", "path", "absoluteUri"]))
            .or_else(|| s(ca, &["actionSpec", "command", "file", "absoluteUri"]))
            .unwrap_or("");
        let _ = writeln!(out, "**Edit** {}\n", link(uri));
        if let Some(d) = ca.get("description").and_then(Value::as_str) {
            let _ = writeln!(out, "{d}\n");
        }
        if let Some(diff) = s(ca, &["actionResult", "edit", "unifiedDiff"]) {
            fence(out, "diff", diff);
        }
    }
    if let Some(g) = step.get("grepSearch") {
        let q = g.get("query").and_then(Value::as_str).unwrap_or("");
        let _ = writeln!(out, "**Search** `{q}`\n");
        for r in g
            .get("results")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let path = r
                .get("relativePath")
                .or_else(|| r.get("absolutePath"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let line = r
                .get("lineNumber")
                .map(|l| format!(":{l}"))
                .unwrap_or_default();
            let content = r.get("content").and_then(Value::as_str).unwrap_or("");
            let _ = writeln!(out, "- `{path}{line}` {content}");
        }
        out.push('\n');
    }
    if let Some(m) = step
        .get("systemMessage")
        .and_then(|m| m.get("message"))
        .and_then(Value::as_str)
    {
        let _ = writeln!(out, "_{m}_\n");
    }
    if let Some(c) = step.get("checkpoint") {
        for key in ["conversationTitle", "userIntent", "sessionSummary"] {
            if let Some(t) = c.get(key).and_then(Value::as_str) {
                let _ = writeln!(out, "**{key}:** {t}\n");
            }
        }
    }
    if let Some(e) = step.get("errorMessage").and_then(|e| e.get("error")) {
        render_error(out, e);
    }
    if let Some(g) = step.get("generic") {
        let name = s(step, &["metadata", "toolCall", "name"]).unwrap_or("tool");
        let _ = writeln!(out, "**Tool** `{name}`\n");
        if let Some(args) = g
            .get("args")
            .and_then(Value::as_object)
            .filter(|a| !a.is_empty())
        {
            for (k, v) in args {
                let v = v.as_str().unwrap_or_default();
                let shown = if v.starts_with("\"file://") || v.starts_with("file://") {
                    link(v.trim_matches('"'))
                } else {
                    format!("`{}`", v.replace('`', "'"))
                };
                let _ = writeln!(out, "- {k}: {shown}");
            }
            out.push('\n');
        }
        if let Some(r) = s(g, &["result", "result"]).filter(|r| !r.is_empty()) {
            fence(out, "text", r);
        }
        if let Some(uri) = s(g, &["result", "fullOutputUri"]) {
            let _ = writeln!(out, "Full output: {}\n", link(uri));
        }
        if let Some(inner) = get(g, &["result", "payload"]) {
            if inner.get("@type").and_then(Value::as_str)
                == Some("type.googleapis.com/gemini_coder.Step")
            {
                render_step(out, inner, depth + 1);
            }
        }
    }
    if let Some(e) = step.get("error") {
        render_error(out, e);
    }
}

/// Renders a trajectory JSON (daemon style) as a Markdown transcript.
pub fn render_markdown(trajectory: &Value, notice: &str) -> String {
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
    for w in get(trajectory, &["metadata", "workspaces"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(uri) = w.get("workspaceFolderAbsoluteUri").and_then(Value::as_str) {
            let _ = writeln!(out, "Workspace {}\n", link(uri));
        }
    }
    let steps = trajectory
        .get("steps")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, step) in steps.iter().enumerate() {
        let ty = short_type(
            step.get("type")
                .and_then(Value::as_str)
                .unwrap_or("UNSPECIFIED"),
        );
        let status = short_status(step.get("status").and_then(Value::as_str).unwrap_or(""));
        let heading = match ty {
            "USER_INPUT" => "User".to_string(),
            "PLANNER_RESPONSE" => "Assistant".to_string(),
            other => other.to_string(),
        };
        let when = s(step, &["metadata", "createdAt"])
            .map(|t| format!(" · {t}"))
            .unwrap_or_default();
        let status = if status.is_empty() || status == "DONE" {
            String::new()
        } else {
            format!(" ({status})")
        };
        let _ = writeln!(out, "## {i}. {heading}{status}{when}\n");
        render_step(&mut out, step, 0);
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
            "(ERROR)",
            "**Error:** exit 2",
            "```diff",
            "[/w/a.rs](file:///w/a.rs)",
        ] {
            assert!(md.contains(want), "missing {want:?} in\n{md}");
        }
    }
}
