//! `agy-audit export-offline --format md` on a generated default corpus (the
//! default plan: 405 conversations, seed 1, at a reduced scale so the test
//! stays quick; scale changes step counts and sizes, not which recipes and so
//! which step types occur). For every step of every exported conversation, the
//! step's section in the transcript has a heading in words (never a raw enum
//! name) and shows content taken from the step's JSON export, not just a
//! heading; view ranges are one-based while the JSON keeps zero-based values.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

mod common;

use common::run;
use serde_json::Value;
use std::collections::BTreeSet;

/// Every step type the default corpus holds; the test fails if one vanishes
/// from the corpus (then this list, not the renderer, needs a look).
const CORPUS_TYPES: &[(&str, &str)] = &[
    ("USER_INPUT", "User"),
    ("PLANNER_RESPONSE", "Assistant"),
    ("RUN_COMMAND", "Ran command"),
    ("VIEW_FILE", "Read file"),
    ("LIST_DIRECTORY", "Listed directory"),
    ("CODE_ACTION", "Edited file"), // "Created file" for a create
    ("GREP_SEARCH", "Searched files"),
    ("READ_URL_CONTENT", "Read URL"),
    ("SEARCH_WEB", "Searched the web"),
    ("MCP_TOOL", "Called MCP tool"),
    ("LIST_RESOURCES", "Listed MCP resources"),
    ("GENERATE_IMAGE", "Generated image"),
    ("INVOKE_SUBAGENT", "Invoked subagent"),
    ("SYSTEM_MESSAGE", "System message"),
    ("CHECKPOINT", "Checkpoint"),
    ("ERROR_MESSAGE", "Error"),
    ("GENERIC", "Used tool"),
];

/// The JSON names of a step's payload fields: the members of the `step`
/// oneof of `gemini_coder.Step` (the one holding `generic`), as the modeled
/// schema declares them, not as the renderer lists its envelope.
fn payload_fields() -> BTreeSet<String> {
    let schema = agy_audit::schema::Schema::modeled().expect("modeled schema");
    let step = schema
        .pool
        .get_message_by_name("gemini_coder.Step")
        .expect("gemini_coder.Step");
    let oneof = step
        .oneofs()
        .find(|o| o.fields().any(|f| f.name() == "generic"))
        .expect("the step oneof");
    oneof.fields().map(|f| f.json_name().to_string()).collect()
}

/// The strings at `path` ("*" walks an array), pushed onto `out`.
fn at(v: &Value, path: &[&str], out: &mut Vec<String>) {
    match path.split_first() {
        None => match v {
            Value::String(s) if !s.trim().is_empty() => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| at(x, &[], out)),
            _ => {}
        },
        Some((&"*", rest)) => {
            for x in v.as_array().into_iter().flatten() {
                at(x, rest, out);
            }
        }
        Some((k, rest)) => {
            if let Some(x) = v.get(*k) {
                at(x, rest, out);
            }
        }
    }
}

/// Every string leaf under `v`.
fn leaves(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) if !s.trim().is_empty() => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| leaves(x, out)),
        Value::Object(o) => o.values().for_each(|x| leaves(x, out)),
        _ => {}
    }
}

/// The content a step's section must show: the fields a reader of that step
/// type looks for, from the step's JSON export.
fn wanted(step: &Value) -> Vec<String> {
    let ty = step["type"].as_str().unwrap_or("");
    let ty = ty.strip_prefix("CORTEX_STEP_TYPE_").unwrap_or(ty);
    let mut w = Vec::new();
    let paths: &[&[&str]] = match ty {
        "USER_INPUT" => &[&["userInput", "userResponse"]],
        "PLANNER_RESPONSE" => &[
            &["plannerResponse", "response"],
            &["plannerResponse", "thinking"],
            &["plannerResponse", "toolCalls", "*", "name"],
        ],
        "RUN_COMMAND" => &[
            &["runCommand", "commandLine"],
            &["runCommand", "cwd"],
            &["runCommand", "combinedOutput", "full"],
        ],
        "VIEW_FILE" => &[&["viewFile", "absolutePathUri"], &["viewFile", "content"]],
        "LIST_DIRECTORY" => &[
            &["listDirectory", "directoryPathUri"],
            &["listDirectory", "children"],
        ],
        "CODE_ACTION" => &[
            &["codeAction", "actionResult", "edit", "absoluteUri"],
            &["codeAction", "actionResult", "edit", "unifiedDiff"],
            &["codeAction", "description"],
        ],
        "GREP_SEARCH" => &[
            &["grepSearch", "query"],
            &["grepSearch", "results", "*", "relativePath"],
            &["grepSearch", "results", "*", "content"],
        ],
        "READ_URL_CONTENT" => &[&["readUrlContent", "url"]],
        "SEARCH_WEB" => &[&["searchWeb", "query"], &["searchWeb", "summary"]],
        "MCP_TOOL" => &[
            &["mcpTool", "serverName"],
            &["mcpTool", "toolCall", "name"],
            &["mcpTool", "resultString"],
        ],
        "LIST_RESOURCES" => &[&["listResources", "serverName"]],
        "GENERATE_IMAGE" => &[
            &["generateImage", "prompt"],
            &["generateImage", "imageName"],
            &["generateImage", "generatedMedia", "uri"],
        ],
        "INVOKE_SUBAGENT" => &[
            &["invokeSubagent", "subagentName"],
            &["invokeSubagent", "prompt"],
            &["invokeSubagent", "specs", "*", "name"],
            &["invokeSubagent", "results", "*", "conversationId"],
            &["invokeSubagent", "results", "*", "logUri"],
        ],
        "SYSTEM_MESSAGE" => &[&["systemMessage", "message"]],
        "CHECKPOINT" => &[
            &["checkpoint", "conversationTitle"],
            &["checkpoint", "userIntent"],
            &["checkpoint", "sessionSummary"],
            &["checkpoint", "userRequests"],
            &["checkpoint", "capturedUserRequests", "*", "text"],
        ],
        "ERROR_MESSAGE" => &[
            &["errorMessage", "error", "shortError"],
            &["errorMessage", "error", "fullError"],
        ],
        "GENERIC" => &[
            &["metadata", "toolCall", "name"],
            &["generic", "result", "result"],
        ],
        _ => &[],
    };
    for p in paths {
        at(step, p, &mut w);
    }
    if ty == "GENERIC" {
        // Arguments are JSON texts: a string argument shows decoded.
        for v in step["generic"]["args"]
            .as_object()
            .into_iter()
            .flat_map(|a| a.values())
        {
            if let Some(Ok(Value::String(s))) = v.as_str().map(serde_json::from_str::<Value>) {
                if !s.trim().is_empty() {
                    w.push(s);
                }
            }
        }
        if let Some(inner) = step["generic"]["result"].get("payload") {
            w.extend(wanted(inner));
        }
    }
    at(step, &["error", "shortError"], &mut w);
    w
}

/// `## i. ` to the next top-level step heading.
fn section(md: &str, i: usize) -> &str {
    let head = format!("\n## {i}. ");
    let Some(start) = md.find(&head).map(|p| p + 1) else {
        panic!("no section {i}");
    };
    let next = format!("\n## {}. ", i + 1);
    let end = md[start..]
        .find(&next)
        .map(|p| start + p)
        .unwrap_or(md.len());
    &md[start..end]
}

fn shows(sec: &str, text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .all(|l| sec.contains(l))
}

fn check_conversation(
    json: &Value,
    md: &str,
    file: &str,
    payload: &BTreeSet<String>,
    seen: &mut BTreeSet<String>,
) -> usize {
    let steps = json["steps"].as_array().cloned().unwrap_or_default();
    for (i, step) in steps.iter().enumerate() {
        let sec = section(md, i);
        let heading = sec.lines().next().unwrap_or("");
        let ty = step["type"].as_str().unwrap_or("");
        let short = ty.strip_prefix("CORTEX_STEP_TYPE_").unwrap_or(ty);
        seen.insert(short.to_string());
        assert!(
            !heading.contains("CORTEX_") && !heading.contains(short),
            "{file} step {i}: raw enum name in heading {heading:?}"
        );
        if let Some((_, words)) = CORPUS_TYPES.iter().find(|(t, _)| *t == short) {
            let created = step["codeAction"]["actionSpec"].get("createFile").is_some();
            let words = if created { "Created file" } else { words };
            assert!(
                heading.starts_with(&format!("## {i}. {words}")),
                "{file} step {i} ({short}): heading {heading:?}, want {words:?}"
            );
        }
        let body = &sec[heading.len()..];
        let want = wanted(step);
        if want.is_empty() {
            // A type without a dedicated list: some payload string shows.
            let mut all = Vec::new();
            for (k, v) in step.as_object().into_iter().flatten() {
                if payload.contains(k) {
                    leaves(v, &mut all);
                }
            }
            assert!(
                all.is_empty() || all.iter().any(|l| shows(body, l)),
                "{file} step {i} ({short}): no payload content shown:\n{sec}"
            );
        }
        for w in &want {
            assert!(
                shows(body, w),
                "{file} step {i} ({short}): {w:?} not shown:\n{sec}"
            );
        }
        if let Some(v) = step.get("viewFile") {
            let line = |k: &str| v.get(k).and_then(Value::as_u64);
            if line("startLine").is_some() || line("endLine").is_some() {
                // proto3 JSON omits a zero bound.
                let (s, e) = (line("startLine").unwrap_or(0), line("endLine").unwrap_or(0));
                let range = if s == e {
                    format!("line {}", s + 1)
                } else {
                    format!("lines {}-{}", s + 1, e + 1)
                };
                assert!(
                    body.contains(&range),
                    "{file} step {i}: stored {s}..{e} should read {range:?}:\n{sec}"
                );
            }
        }
    }
    steps.len()
}

#[test]
fn every_step_of_the_default_corpus_shows_its_content_in_markdown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("store");
    let root_s = root.to_str().expect("utf-8 path");
    let o = run(&["corpus", "generate", "--out", root_s, "--scale", "0.1"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut sources: Vec<_> = std::fs::read_dir(root.join("conversations"))
        .expect("conversations/")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| matches!(p.extension().and_then(|x| x.to_str()), Some("db" | "pb")))
        .collect();
    sources.sort();
    assert!(sources.len() >= 400, "{} sources", sources.len());
    let payload = payload_fields();
    assert!(
        payload.contains("runCommand") && !payload.contains("metadata"),
        "{payload:?}"
    );
    let mut seen = BTreeSet::new();
    let (mut conversations, mut steps) = (0, 0);
    for src in &sources {
        let file = src
            .file_name()
            .and_then(|f| f.to_str())
            .unwrap_or("?")
            .to_string();
        let export = |format: &str| {
            let o = run(&[
                "export-offline",
                "--allow-unknown",
                "--format",
                format,
                "--root",
                root_s,
                src.to_str().expect("utf-8 path"),
            ]);
            assert!(
                matches!(o.status.code(), Some(0 | 3)),
                "{file}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            o.stdout
        };
        let json = export("json");
        if json.is_empty() {
            continue; // did not decode at all: nothing to render
        }
        let json: Value = serde_json::from_slice(&json).expect("JSON export");
        let md = String::from_utf8(export("md")).expect("UTF-8 Markdown");
        steps += check_conversation(&json, &md, &file, &payload, &mut seen);
        conversations += 1;
    }
    assert!(
        conversations >= 400,
        "{conversations} conversations exported"
    );
    let missing: Vec<&str> = CORPUS_TYPES
        .iter()
        .map(|(t, _)| *t)
        .filter(|t| !seen.contains(*t))
        .collect();
    assert!(
        missing.is_empty(),
        "step types not in the corpus: {missing:?}"
    );
    println!(
        "{conversations} conversations, {steps} steps, {} step types",
        seen.len()
    );
}
