//! Materializes one planned conversation: every step as stored (the wrapper,
//! with its embedded native Step) and as agy's daemon presents it after
//! rehydration, built side by side from the same scenario values.
//!
//! This module never calls the reader or the projection: the ordinary view
//! is constructed from the recipe ("a completed run_command with this
//! output"), so comparing it with a projection is never circular.

use super::plan::{
    BeforeRunKind, ConvPlan, ModernKind, OuterKind, Planner50Site, Recipe, StepKind, TaskKind,
    UnqKind,
};
use super::rng::Rng;
use super::text;
use serde_json::{json, Map, Value};

/// The Any type URL of an embedded native step.
pub const STEP_ANY: &str = "type.googleapis.com/gemini_coder.Step";
/// The Any type URL of a generate_image payload.
pub const GENERATE_IMAGE_ANY: &str = "type.googleapis.com/exa.cortex.core.tools.GenerateImage";
/// agy's advice after a rejected permission request (third line of the
/// error), the specification's literal (the reader compares it exactly).
pub const REJECTED_ADVICE: &str =
    "Do not attempt to run this command another way or to circumvent this denial.";
/// The bridge formatting failure prefix.
pub const BRIDGE_PREFIX: &str =
    "bridged adapter run_command: to string: template execution error: ";
/// The exact missing-toolSummary error.
pub const MISSING_TOOL_SUMMARY: &str = "invalid arguments:\n- missing property 'toolSummary'";

/// One tool call: name, arguments as JSON texts (sorted by key), and the
/// metadata tool call's arguments_json rendering of the same.
#[derive(Debug, Clone)]
pub struct Call {
    /// Tool call id (`call_<n>`).
    pub id: String,
    /// Tool name.
    pub name: String,
    /// (key, JSON text) pairs, sorted by key.
    pub args: Vec<(String, String)>,
    /// The model's thinking signature over the call, when it sent one.
    pub signature: Option<String>,
}

impl Call {
    /// The JSON object text of the arguments.
    pub fn args_json(&self) -> String {
        let members: Vec<String> = self
            .args
            .iter()
            .map(|(k, v)| format!("{}:{v}", js(k)))
            .collect();
        format!("{{{}}}", members.join(","))
    }

    /// The generic step's `args` map.
    pub fn args_map(&self) -> Value {
        let mut m = Map::new();
        for (k, v) in &self.args {
            m.insert(k.clone(), Value::String(v.clone()));
        }
        Value::Object(m)
    }
}

/// A JSON string literal.
pub fn js(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// What a GREP_SEARCH step found (field-23 derivations read it).
#[derive(Debug, Clone)]
pub struct GrepInfo {
    /// The step's index.
    pub idx: usize,
    /// Its tool call id.
    pub tool_call_id: String,
    /// match_per_line.
    pub per_line: bool,
    /// (relative path, zero-based line number, line content).
    pub results: Vec<(String, u32, String)>,
    /// total_results.
    pub total: u32,
}

/// One built step, before encoding.
#[derive(Debug, Clone)]
pub struct StepJson {
    /// The step as stored.
    pub stored: Value,
    /// The step as the ordinary RPC presents it (None: unchanged).
    pub presented: Option<Value>,
    /// The tool call it answers.
    pub call: Option<Call>,
    /// The result text the model saw (tool-result prompts).
    pub result_text: Option<String>,
    /// The tool failed.
    pub is_error: bool,
    /// GREP_SEARCH results.
    pub grep: Option<GrepInfo>,
}

impl StepJson {
    fn plain(stored: Value) -> StepJson {
        StepJson {
            stored,
            presented: None,
            call: None,
            result_text: None,
            is_error: false,
            grep: None,
        }
    }
}

/// Everything built for one conversation, as JSON (encoded by the caller).
#[derive(Debug, Clone)]
pub struct ConvJson {
    /// Steps in idx order.
    pub steps: Vec<StepJson>,
    /// gen_metadata rows (JSON) with the step position each belongs to.
    pub gens: Vec<(Value, usize)>,
    /// executor_metadata rows (JSON) with the step position each is committed with.
    pub execs: Vec<(Value, usize)>,
    /// parent_references rows.
    pub refs: Vec<Value>,
    /// trajectory_metadata_blob.
    pub metadata: Value,
    /// Position in `message_prompts` of the newest gen row's tool-result prompt for each step.
    pub prompt_pos: Vec<Option<usize>>,
    /// Index of the gen row holding the prompt snapshot.
    pub snapshot_gen: usize,
}

struct Ctx<'a> {
    plan: &'a ConvPlan,
    r: Rng,
    ws: String,
    secs: i64,
    nanos: u32,
    calls: u32,
    exec_ids: Vec<String>,
    turn_of: Vec<usize>,
    registrations: Vec<Vec<Value>>,
    scale: f64,
}

fn status(s: &str) -> String {
    format!("CORTEX_STEP_STATUS_{s}")
}

fn ty(s: &str) -> String {
    format!("CORTEX_STEP_TYPE_{s}")
}

fn merge(into: &mut Value, extra: Value) {
    if let (Value::Object(a), Value::Object(b)) = (into, extra) {
        for (k, v) in b {
            a.insert(k, v);
        }
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… (truncated)", &s[..end])
}

fn any_of(url: &str, body: &Value) -> Value {
    let mut m = Map::new();
    m.insert("@type".into(), Value::String(url.into()));
    if let Value::Object(b) = body {
        for (k, v) in b {
            m.insert(k.clone(), v.clone());
        }
    }
    Value::Object(m)
}

/// The Any type URL of a modern tool payload `exa.cortex.core.tools.<name>`.
fn tools_url(name: &str) -> String {
    format!("type.googleapis.com/exa.cortex.core.tools.{name}")
}

/// The model real 1.2.x conversations name.
const MODEL: &str = "MODEL_GOOGLE_GEMINI_2_5_PRO";

fn render(title: &str, markdown: &str, verb: &str) -> Value {
    json!({"title": title, "markdown": markdown, "verb": verb, "icon": "tool", "kind": "card"})
}

impl<'a> Ctx<'a> {
    fn new(plan: &'a ConvPlan, seed: u64) -> Ctx<'a> {
        let mut r = Rng::new(seed, &["content", &plan.id]);
        let ws = text::workspace(&mut r);
        // 2026-06-01 plus up to ~150 days
        let secs = 1_780_272_000 + r.below(150 * 86_400) as i64;
        let turns = plan.turns();
        let mut turn_of = vec![0usize; plan.steps.len()];
        for (t, (a, b)) in turns.iter().enumerate() {
            for x in turn_of.iter_mut().take(*b + 1).skip(*a) {
                *x = t;
            }
        }
        let exec_ids = (0..turns.len()).map(|_| r.uuid()).collect();
        Ctx {
            plan,
            r,
            ws,
            secs,
            nanos: 0,
            calls: 0,
            exec_ids,
            turn_of,
            registrations: vec![Vec::new(); turns.len()],
            scale: plan.scale.clamp(0.01, 4.0),
        }
    }

    /// A size in `lo..=hi`, log-uniform (many small, a few large), scaled.
    fn sized(&mut self, lo: usize, hi: usize) -> usize {
        let (l, h) = (lo.max(1) as f64, hi.max(lo + 1) as f64);
        let n = l * (h / l).powf(self.r.unit()) * self.scale.max(0.1);
        (n as usize).max(lo.min(16))
    }

    fn ts(&mut self, max_ms: u64) -> String {
        let ms = self.r.range(1, max_ms.max(2));
        let total = u64::from(self.nanos) + ms * 1_000_000 + self.r.below(1_000_000);
        self.secs += (total / 1_000_000_000) as i64;
        self.nanos = (total % 1_000_000_000) as u32;
        let base = crate::util::time::rfc3339_seconds(self.secs);
        format!("{}.{:09}Z", &base[..19], self.nanos)
    }

    fn call(&mut self, name: &str, args: Vec<(&str, String)>) -> Call {
        self.calls += 1;
        let mut a: Vec<(String, String)> = args.into_iter().map(|(k, v)| (k.into(), v)).collect();
        a.sort();
        let signature = self.r.chance(0.5).then(|| self.signature());
        Call {
            id: format!("call_{}", self.calls),
            name: name.into(),
            args: a,
            signature,
        }
    }

    /// Step metadata with a status history; `extra` is merged in.
    fn meta(
        &mut self,
        idx: usize,
        source: &str,
        call: Option<&Call>,
        history: &[&str],
        extra: Value,
    ) -> Value {
        let created = self.ts(20_000);
        let mut m = json!({
            "createdAt": created,
            "source": format!("CORTEX_STEP_SOURCE_{source}"),
            "executionId": self.exec_ids[self.turn_of.get(idx).copied().unwrap_or(0)],
            "sourceTrajectoryStepInfo": {
                "trajectoryId": self.plan.trajectory_id,
                "stepIndex": idx,
                "cascadeId": self.plan.id,
            },
            "stepGenerationVersion": 1,
        });
        if let Some(c) = call {
            m["toolCall"] = json!({"id": c.id, "name": c.name, "argumentsJson": c.args_json()});
            if let Some(sig) = &c.signature {
                m["toolCall"]["thinkingSignature"] = json!(sig);
            }
            if !c.args.is_empty() {
                m["argumentsOrder"] = json!(c.args.iter().map(|(k, _)| k).collect::<Vec<_>>());
            }
            m["toolCallOutputTokens"] = json!(self.r.range(12, 900));
        }
        if !history.is_empty() {
            let mut trans = Vec::new();
            let mut last = created.clone();
            for (i, s) in history.iter().enumerate() {
                let t = if i == 0 {
                    created.clone()
                } else {
                    self.ts(3_000)
                };
                if i == 1 {
                    m["startedAt"] = Value::String(t.clone());
                }
                trans.push(json!({"updatedStatus": status(s), "timestamp": t}));
                last = t;
            }
            m["internalMetadata"] = json!({"statusTransitions": trans});
            if matches!(
                history.last().copied(),
                Some("DONE" | "ERROR" | "CANCELED" | "INVALID")
            ) {
                m["completedAt"] = Value::String(last);
            }
        }
        merge(&mut m, extra);
        m
    }

    fn native_meta(meta: &Value, summary: &str, action: &str) -> Value {
        let mut m = meta.clone();
        m["toolSummary"] = Value::String(summary.into());
        m["toolAction"] = Value::String(action.into());
        m
    }

    fn generic(status_name: &str, meta: Value, call: &Call, result: Option<Value>) -> Value {
        let mut g = Map::new();
        if !call.args.is_empty() {
            g.insert("args".into(), call.args_map());
        }
        if let Some(r) = result {
            g.insert("result".into(), r);
        }
        json!({
            "type": ty("GENERIC"),
            "status": status(status_name),
            "metadata": meta,
            "generic": Value::Object(g),
        })
    }

    fn planner(&mut self, idx: usize, call: Option<&Call>) -> StepJson {
        let paras = self.r.range(1, 2) as usize;
        let response = text::markdown(&mut self.r, paras);
        let th = self.r.range(1, 2) as usize;
        let thinking = text::paragraph(&mut self.r, th);
        let message_id = format!("msg_{}", self.r.next_u64() % 1_000_000_000);
        let usage = self.usage(&message_id);
        let mut body = json!({
            "response": response,
            "thinking": thinking,
            "messageId": message_id,
            "thinkingDuration": format!("{}.{:03}s", self.r.below(20), self.r.below(1000)),
            "stopReason": if self.r.chance(0.02) { "STOP_REASON_MAX_TOKENS" } else { "STOP_REASON_STOP_PATTERN" },
        });
        if self.r.chance(0.7) {
            body["thinkingSignature"] = json!(self.signature());
        }
        if self.r.chance(0.4) {
            body["modifiedResponse"] = body["response"].clone();
        }
        if let Some(c) = call {
            let mut tc = json!({"id": c.id, "name": c.name, "argumentsJson": c.args_json()});
            if let Some(sig) = &c.signature {
                tc["thinkingSignature"] = json!(sig);
            }
            body["toolCalls"] = json!([tc]);
        }
        if self.r.chance(0.03) {
            let end = self.r.range(40, 400);
            body["recitationMetadata"] = json!({"recitations": [{
                "citation": {"startIndex": end - 30, "endIndex": end,
                    "uri": format!("https://github.com/example/project-{}", self.r.range(1, 99))},
                "content": text::sentence(&mut self.r, 6)}]});
        }
        let mut extra = json!({"modelUsage": usage});
        self.model_metadata(&mut extra);
        let meta = self.meta(idx, "MODEL", None, &["GENERATING", "DONE"], extra);
        StepJson::plain(json!({
            "type": ty("PLANNER_RESPONSE"),
            "status": status("DONE"),
            "metadata": meta,
            "plannerResponse": body,
        }))
    }

    fn user_input(&mut self, idx: usize) -> StepJson {
        let n = self.r.range(1, 3) as usize;
        let text = text::paragraph(&mut self.r, n);
        let meta = self.meta(idx, "USER_EXPLICIT", None, &[], json!({}));
        let ws_uri = format!("file://{}", self.ws);
        let mut items = vec![json!({"text": text})];
        if self.r.chance(0.3) {
            let rel = text::rel_path(&mut self.r);
            let kind = if self.r.chance(0.7) {
                "file"
            } else {
                "directory"
            };
            let rel = if kind == "file" {
                rel
            } else {
                rel.rsplit_once('/')
                    .map(|(d, _)| d.to_string())
                    .unwrap_or(rel)
            };
            items.push(
                json!({"item": {kind: {"absoluteUri": format!("{ws_uri}/{rel}"),
                "workspaceUrisToRelativePaths": {ws_uri.clone(): rel}}}}),
            );
        }
        let skills = format!("{}/.agy/skills", self.ws);
        let config = json!({
            "plannerConfig": {
                "conversational": {"agenticMode": self.r.chance(0.8)},
                "planModel": MODEL,
                "requestedModel": {"model": MODEL},
                "customizationConfig": {
                    "customizationDiscoveryConfig": {"skills": {"inheritUser": true, "skillsPaths": [{"absolute": skills}]}},
                    "workspacePaths": {"absolutePaths": [self.ws]},
                },
                "retryConfig": {"apiRetry": {}},
                "toolConfig": {
                    "notifyUser": {"artifactReviewMode": "ARTIFACT_REVIEW_MODE_TURBO"},
                    "runCommand": {"autoCommandConfig": {"autoExecutionPolicy": "CASCADE_COMMANDS_AUTO_EXECUTION_AUTO"}},
                },
            },
            "executorConfig": {},
        });
        StepJson::plain(json!({
            "type": ty("USER_INPUT"),
            "status": status("DONE"),
            "metadata": meta,
            "userInput": {"userResponse": text, "query": text, "items": items,
                "userConfig": config.clone(), "lastUserConfig": config, "activeUserState": {}},
        }))
    }

    fn system_message(&mut self, idx: usize) -> StepJson {
        let msgs = [
            "The user's workspace changed on disk since the last read.",
            "Context was compacted to stay within the model's window.",
            "A background task finished: exit status 0.",
            "Rules loaded from AGENTS.md (3 rules).",
        ];
        let m = self.r.pick(&msgs).to_string();
        let meta = self.meta(idx, "SYSTEM", None, &[], json!({}));
        StepJson::plain(json!({
            "type": ty("SYSTEM_MESSAGE"),
            "status": status("DONE"),
            "metadata": meta,
            "systemMessage": {"message": m},
        }))
    }

    fn checkpoint(&mut self, idx: usize, k: usize) -> StepJson {
        let meta = self.meta(idx, "SYSTEM", None, &["RUNNING", "DONE"], json!({}));
        let mut body = json!({
            "checkpointIndex": k,
            "conversationTitle": text::sentence(&mut self.r, 5),
            "userIntent": text::sentence(&mut self.r, 12),
            "sessionSummary": text::paragraph(&mut self.r, 4),
            "userRequests": [text::sentence(&mut self.r, 8), text::sentence(&mut self.r, 6)],
            "intentOnly": self.r.chance(0.05),
            "includedStepIndexStart": if k > 1 { self.r.range(1, idx.max(2) as u64 - 1) as usize } else { 0 },
            "includedStepIndexEnd": idx.saturating_sub(1),
            "modelSummarizationFailed": self.r.chance(0.03),
            "usedFallbackSummary": self.r.chance(0.1),
            "conversationLogUris": [format!("file://{}/.gemini/antigravity-cli/brain/{}/.system_generated/logs/transcript.jsonl", self.ws, self.plan.id)],
        });
        let uri = format!("file://{}", text::abs_path(&mut self.r, &self.ws.clone()));
        let original = text::file_content(&mut self.r, 6);
        let modified = format!("{original}{}\n", text::sentence(&mut self.r, 6));
        body["trajectoryFileDiffs"] = json!([{"uri": uri, "originalContent": original,
            "modifiedContent": modified, "hasModelEdited": true, "isArtifactFile": self.r.chance(0.2),
            "lastModifiedAt": self.ts(2_000)}]);
        if self.r.chance(0.5) {
            let art = format!(
                "file://{}/.gemini/antigravity-cli/brain/{}/task.md",
                self.ws, self.plan.id
            );
            body["artifactSnapshots"] = json!([{"artifactAbsoluteUri": art, "artifactName": "task.md",
                "lastEdited": self.ts(2_000),
                "reviewState": {"artifactUri": art, "status": "ARTIFACT_REVIEW_STATUS_REVIEWED"}}]);
        }
        if self.r.chance(0.5) {
            let img = self.r.bytes(48);
            use base64_lite::encode;
            body["capturedUserRequests"] = json!([
                {"text": text::sentence(&mut self.r, 7)},
                {"text": text::sentence(&mut self.r, 5),
                 "media": [{"mimeType": "image/png", "inlineData": encode(&img), "description": "screenshot"}]},
            ]);
        }
        StepJson::plain(json!({
            "type": ty("CHECKPOINT"),
            "status": status("DONE"),
            "metadata": meta,
            "checkpoint": body,
        }))
    }

    fn error_message(&mut self, idx: usize) -> StepJson {
        let meta = self.meta(idx, "SYSTEM", None, &[], json!({}));
        StepJson::plain(json!({
            "type": ty("ERROR_MESSAGE"),
            "status": status("DONE"),
            "metadata": meta,
            "errorMessage": {"error": {
                "userErrorMessage": "The model is overloaded; retrying.",
                "shortError": "resource exhausted",
                "fullError": "rpc error: code = ResourceExhausted desc = quota exceeded (429)",
                "modelErrorMessage": "The request was rate limited.",
                "details": "quota exceeded for the project's requests per minute",
                "errorCode": 429,
                "errorId": format!("err-{:016x}", self.r.next_u64()),
                "isBenign": true,
                "rpcErrorDetails": ["type.googleapis.com/google.rpc.ErrorInfo: RATE_LIMIT_EXCEEDED"],
            }, "shouldShowModel": self.r.chance(0.5), "shouldShowUser": true},
        }))
    }

    fn builtin() -> Value {
        json!({"toolSource": "TOOL_SOURCE_BUILTIN"})
    }

    fn allow_hook() -> Value {
        json!({"toolSource": "TOOL_SOURCE_BUILTIN", "preToolHookResults": [{"decision": "DECISION_ALLOW"}]})
    }

    fn cmd_args(&mut self, cmd: &str, wait: u64) -> Vec<(&'static str, String)> {
        vec![
            ("CommandLine", js(cmd)),
            ("Cwd", js(&self.ws)),
            ("WaitMsBeforeAsync", wait.to_string()),
        ]
    }

    fn plain_command(&mut self) -> String {
        // plain commands only: letters, digits, spaces and - . / _
        let c = [
            "ls -la",
            "make test",
            "go vet ./...",
            "cargo fmt --check",
            "npm ci",
            "git fetch origin",
        ];
        self.r.pick(&c).to_string()
    }

    /// A thinking signature (opaque bytes, base64 in proto3 JSON).
    fn signature(&mut self) -> String {
        let n = self.r.range(48, 160) as usize;
        let b = self.r.bytes(n);
        base64_lite::encode(&b)
    }

    /// Model usage as real planner steps carry it.
    fn usage(&mut self, message_id: &str) -> Value {
        let out = self.r.range(20, 4_000);
        let thinking = self.r.range(0, out);
        json!({
            "model": MODEL,
            "inputTokens": self.r.range(2_000, 120_000).to_string(),
            "outputTokens": out.to_string(),
            "thinkingOutputTokens": thinking.to_string(),
            "responseOutputTokens": (out - thinking).to_string(),
            "cacheReadTokens": self.r.range(0, 90_000).to_string(),
            "apiProvider": "API_PROVIDER_GOOGLE_GEMINI",
            "messageId": message_id,
            "responseHeader": {"sessionID": format!("{:016x}", self.r.next_u64())},
            "responseId": format!("resp_{:012x}", self.r.next_u64() % (1 << 48)),
        })
    }

    /// The generation fields of a model-written step's metadata, and now and
    /// then a retried call.
    fn model_metadata(&mut self, extra: &mut Value) {
        extra["generatorModel"] = json!(MODEL);
        extra["requestedModel"] = json!({"model": MODEL});
        extra["viewableAt"] = json!(self.ts(800));
        extra["lastCompletedChunkAt"] = json!(self.ts(4_000));
        extra["finishedGeneratingAt"] = json!(self.ts(200));
        if self.r.chance(0.2) {
            extra["snapshotMetadata"] = json!({});
        }
        if self.r.chance(0.04) {
            let mid = format!("msg_{}", self.r.next_u64() % 1_000_000_000);
            let mut u = self.usage(&mid);
            u["inputTokens"] = json!(self.r.range(2_000, 120_000).to_string());
            extra["retryInfos"] = json!([{
                "usage": u,
                "error": "rpc error: code = Unavailable desc = the model is overloaded",
                "traceId": format!("{:032x}", u128::from(self.r.next_u64()) << 64 | u128::from(self.r.next_u64())),
                "retryReason": "RETRY_REASON_API_RETRYABLE",
            }]);
        }
    }

    /// A tool step (with its planner's call) for `recipe` at `idx`.
    fn tool(&mut self, pidx: usize, idx: usize, recipe: Recipe) -> (StepJson, StepJson) {
        use Recipe as R;
        match recipe {
            R::NativeViewFile => self.native_view_file(pidx, idx),
            R::NativeRunCommand => self.native_run_command(pidx, idx),
            R::NativeCodeAction => self.native_code_action(pidx, idx),
            R::NativeGrep { per_line, prompt23 } => self.native_grep(pidx, idx, per_line, prompt23),
            R::NativeListDir => self.native_list_dir(pidx, idx),
            R::NativeMcp => self.native_mcp(pidx, idx),
            R::NativeSearchWeb => self.native_search_web(pidx, idx),
            R::NativeReadUrl => self.native_read_url(pidx, idx),
            R::NativeFind => self.native_find(pidx, idx),
            R::NativeCommandStatus => self.native_command_status(pidx, idx),
            R::RunCommand { background, big } => self.run_command(pidx, idx, background, big),
            R::ViewFile => self.view_file(pidx, idx),
            R::CodeAction { create } => self.code_action(pidx, idx, create),
            R::InvokeSubagent => self.invoke_subagent(pidx, idx),
            R::CanceledCommand { native_error } => self.canceled_command(pidx, idx, native_error),
            R::PermissionCommand => self.permission_command(pidx, idx),
            R::PermissionView => self.permission_view(pidx, idx),
            R::ContentOffset => self.content_offset(pidx, idx),
            R::WriteAppend { value } => {
                self.write_append(pidx, idx, if value { "true" } else { "false" })
            }
            R::OuterError(k) => self.outer_error(pidx, idx, k),
            R::FailedImage => self.failed_image(pidx, idx),
            R::ImageSuccess => self.image_success(pidx, idx),
            R::FailedListResources => self.failed_list_resources(pidx, idx),
            R::BridgeFailure => self.bridge_failure(pidx, idx),
            R::FailedBeforeRun(k) => self.failed_before_run(pidx, idx, k),
            R::HookDenied => self.hook_denied(pidx, idx),
            R::MissingToolSummary { read } => self.missing_tool_summary(pidx, idx, read),
            R::RejectedPermission { headless } => self.rejected_permission(pidx, idx, headless),
            R::CanceledPrompt => self.canceled_prompt(pidx, idx, false),
            R::BuiltinViewFile { lines, skill } => self.builtin_view_file(pidx, idx, lines, skill),
            R::ManageTask(k) => self.manage_task(pidx, idx, k),
            R::SendInput => self.send_input(pidx, idx),
            R::Schedule { task_details } => self.schedule(pidx, idx, task_details, "DONE"),
            R::ScheduleError => self.schedule_error(pidx, idx),
            R::ManageSubagents => self.manage_subagents(pidx, idx, false),
            R::DefineSubagent { definition } => self.define_subagent(pidx, idx, definition),
            R::ListPermissions => self.list_permissions(pidx, idx, false),
            R::AskPermission => self.ask_permission(pidx, idx),
            R::GenerateImageAny => self.generate_image_any(pidx, idx),
            R::Modern(m) => self.modern(pidx, idx, m),
            R::Unqualified(k) => self.unqualified(pidx, idx, k),
        }
    }

    fn finish(
        &mut self,
        planner: StepJson,
        call: Call,
        stored: Value,
        presented: Option<Value>,
        result_text: String,
        is_error: bool,
    ) -> (StepJson, StepJson) {
        (
            planner,
            StepJson {
                stored,
                presented,
                call: Some(call),
                result_text: Some(result_text),
                is_error,
                grep: None,
            },
        )
    }

    // ---- passthrough natives -------------------------------------------------

    fn native_view_file(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let skill = self.r.chance(0.05);
        let path = if skill {
            format!("{}/.agy/skills/release/SKILL.md", self.ws)
        } else {
            text::abs_path(&mut self.r, &self.ws.clone())
        };
        let lines = self.sized(5, 160);
        let start = self.r.below(40) as usize;
        let content = text::file_content(&mut self.r, lines);
        let call = self.call(
            "view_file",
            vec![
                ("AbsolutePath", js(&path)),
                ("EndLine", (start + lines).to_string()),
                ("StartLine", (start + 1).to_string()),
            ],
        );
        let planner_first = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let mut body = json!({
            "absolutePathUri": format!("file://{path}"),
            "startLine": start,
            "endLine": start + lines - 1,
            "content": content,
            "numLines": lines,
            "numBytes": content.len(),
        });
        if skill {
            body["isSkillFile"] = Value::Bool(true);
            body["skillMetadata"] = json!({"name": "release",
                "description": "Cut a release: bump versions, tag and publish notes."});
        } else if self.r.chance(0.04) {
            let img = self.r.bytes(64);
            body["mediaData"] = json!({"mimeType": "image/png", "inlineData": base64_lite::encode(&img),
                "uri": format!("file://{path}")});
        }
        let stored = json!({"type": ty("VIEW_FILE"), "status": status("DONE"), "metadata": meta, "viewFile": body});
        (
            planner_first,
            StepJson {
                stored,
                presented: None,
                call: Some(call),
                result_text: Some(truncate(&content, 300)),
                is_error: false,
                grep: None,
            },
        )
    }

    fn native_run_command(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let cmd = text::command(&mut self.r);
        let args = self.cmd_args(&cmd, 5000);
        let call = self.call("run_command", args);
        let planner = self.planner(pidx, Some(&call));
        let n = self.sized(60, 4000);
        let out = text::output(&mut self.r, n);
        let exit = if self.r.chance(0.1) { 1 } else { 0 };
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let stored = json!({"type": ty("RUN_COMMAND"), "status": status("DONE"), "metadata": meta,
            "runCommand": {"commandLine": cmd, "proposedCommandLine": cmd, "cwd": self.ws,
                "waitMsBeforeAsync": 5000, "blocking": true, "exitCode": exit,
                "combinedOutput": {"full": out}, "shell": "bash"}});
        let mut stored = stored;
        let terminal = format!("terminal-{}", self.r.range(1, 6));
        stored["runCommand"]["requestedTerminalId"] = json!(terminal);
        stored["runCommand"]["terminalId"] = json!(terminal);
        if self.r.chance(0.3) {
            stored["runCommand"]["combinedOutputSnapshot"] = json!({"full": truncate(&out, 200)});
        }
        if self.r.chance(0.1) {
            stored["runCommand"]["sandboxOverride"] = json!(true);
        }
        // A native step keeps its permission records as stored (passthrough):
        // an answered request with everything real responses carry, or a
        // request still waiting for the user.
        let request = json!({"permission": {"resource": {"action": "command", "target": cmd},
            "actionDescription": format!("Run {cmd}"),
            "persistSuggestionType": "PERSIST_SUGGESTION_TYPE_PREFIX",
            "suggestedPersistPattern": cmd.split(' ').next().unwrap_or_default(),
            "triggerSource": {"type": "TYPE_POLICY_RULE", "detail": "commands outside the allow list ask first"}}});
        if self.r.chance(0.06) {
            stored["permissions"] = json!({"permissionGrants": [{"action": "command", "allow": true,
                "resource": {"action": "command", "target": cmd}, "target": cmd}]});
            stored["completedInteractions"] = json!([{"request": request,
                "response": {"permission": {"allow": true,
                    "persistGrants": {"allow": [cmd.split(' ').next().unwrap_or_default()]}},
                    "stepIndex": idx, "trajectoryId": self.plan.trajectory_id}}]);
        } else if self.r.chance(0.02) {
            stored["status"] = json!(status("WAITING"));
            stored["requestedInteraction"] = request;
            if let Some(rc) = stored["runCommand"].as_object_mut() {
                rc.remove("exitCode");
                rc.remove("combinedOutput");
                rc.remove("combinedOutputSnapshot");
            }
        }
        (
            planner,
            StepJson {
                stored,
                presented: None,
                call: Some(call),
                result_text: Some(truncate(&out, 300)),
                is_error: false,
                grep: None,
            },
        )
    }

    fn native_code_action(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let instr = text::sentence(&mut self.r, 8);
        let call = self.call(
            "replace_file_content",
            vec![("Instruction", js(&instr)), ("TargetFile", js(&path))],
        );
        let planner = self.planner(pidx, Some(&call));
        let diff = text::diff(&mut self.r, &path);
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let uri = format!("file://{path}");
        let stored = self.native_code_action_body(&path, &uri, &instr, &diff, meta);
        (
            planner,
            StepJson {
                stored,
                presented: None,
                call: Some(call),
                result_text: Some(diff),
                is_error: false,
                grep: None,
            },
        )
    }

    /// A native CODE_ACTION as real stores hold it: an edit with replacement
    /// chunks, their match information and the structured diff, or (now and
    /// then) a file creation, an artifact edit or a fast-apply fallback.
    fn native_code_action_body(
        &mut self,
        path: &str,
        uri: &str,
        instr: &str,
        diff: &str,
        meta: Value,
    ) -> Value {
        let ws_uri = format!("file://{}", self.ws);
        let rel = path
            .strip_prefix(&format!("{}/", self.ws))
            .unwrap_or(path)
            .to_string();
        let scope = json!({"absoluteUri": uri, "workspaceUrisToRelativePaths": {ws_uri: rel}});
        let lines: Vec<Value> = diff
            .lines()
            .filter_map(|l| {
                let (t, rest) = match l.as_bytes().first() {
                    Some(b'+') if !l.starts_with("+++") => {
                        ("UNIFIED_DIFF_LINE_TYPE_INSERT", &l[1..])
                    }
                    Some(b'-') if !l.starts_with("---") => {
                        ("UNIFIED_DIFF_LINE_TYPE_DELETE", &l[1..])
                    }
                    Some(b' ') => ("UNIFIED_DIFF_LINE_TYPE_UNCHANGED", &l[1..]),
                    _ => return None,
                };
                Some(json!({"text": rest, "type": t}))
            })
            .collect();
        let start = self.r.range(1, 200) as i64;
        let end = start + lines.len() as i64;
        let original = text::file_content(&mut self.r, 4);
        let block = json!({"endLine": end, "unifiedDiff": {"lines": lines}});
        let create = self.r.chance(0.2);
        let mut ca = if create {
            json!({"actionSpec": {"createFile": {"instruction": instr, "path": scope, "overwrite": self.r.chance(0.3)}},
                "actionResult": {"edit": {"absoluteUri": uri, "createFile": true, "unifiedDiff": diff, "diff": block}}})
        } else {
            let target = text::sentence(&mut self.r, 5);
            let replacement = text::sentence(&mut self.r, 6);
            let chunk = json!({"targetContent": target, "replacementContent": replacement,
                "allowMultiple": self.r.chance(0.1), "startLine": start, "endLine": end});
            let fast = self.r.chance(0.15);
            let exact = self.r.chance(0.9);
            let mut info = json!({"originalChunk": chunk, "numMatches": 1, "editDistance": 0,
                "relEditDistance": 0.0, "useGlobalMatch": self.r.chance(0.1)});
            if !exact {
                info["isNonExact"] = json!(true);
                info["fuzzyMatch"] = json!(text::sentence(&mut self.r, 5));
                info["editDistance"] = json!(self.r.range(1, 12));
                info["relEditDistance"] = json!(0.125);
                info["fastApplyFixable"] = json!(true);
                info["repairFixable"] = json!(self.r.chance(0.5));
                if self.r.chance(0.3) {
                    info["error"] = json!(true);
                    info["errorStr"] =
                        json!("target content matched with differences in whitespace");
                }
            }
            json!({"actionSpec": {"command": {"instruction": instr, "isEdit": true, "file": scope,
                    "replacementChunks": [chunk], "useFastApply": fast}},
                "actionResult": {"edit": {"absoluteUri": uri, "unifiedDiff": diff, "diff": block,
                    "originalContent": original}},
                "replacementInfos": [info], "useFastApply": fast})
        };
        ca["description"] = json!(text::sentence(&mut self.r, 6));
        if !create && self.r.chance(0.05) {
            ca["heuristicFailure"] = json!("CODE_HEURISTIC_FAILURE_LAZY_COMMENT");
            ca["fastApplyFallbackInfo"] = json!({"fallbackAttempted": true,
                "fastApplyPrompt": format!("Apply the edit to {rel}", rel = path),
                "fastApplyResult": {"edit": {"diff": ca["actionResult"]["edit"]["diff"].clone()}},
                "heuristicFailure": "CODE_HEURISTIC_FAILURE_DELETED_LINES",
                "numFastApplyEditsMasked": 1});
        }
        if self.r.chance(0.1) {
            ca["isArtifactFile"] = json!(true);
            ca["artifactMetadata"] = json!({"artifactType": "ARTIFACT_TYPE_TASK",
                "summary": text::sentence(&mut self.r, 7), "updatedAt": self.ts(1_000)});
        }
        json!({"type": ty("CODE_ACTION"), "status": status("DONE"), "metadata": meta, "codeAction": ca})
    }

    fn native_grep(
        &mut self,
        pidx: usize,
        idx: usize,
        per_line: bool,
        p23: bool,
    ) -> (StepJson, StepJson) {
        let q = ["TODO", "fn parse", "unwrap()", "timeout", "Error::", "café"];
        let query = self.r.pick(&q).to_string();
        let call = self.call(
            "grep_search",
            vec![
                ("MatchPerLine", per_line.to_string()),
                ("Query", js(&query)),
                ("SearchPath", js(&self.ws)),
            ],
        );
        let planner = self.planner(pidx, Some(&call));
        let n = if p23 {
            self.r.range(2, 12)
        } else {
            self.r.range(1, 12)
        } as usize;
        let elided = self.r.chance(0.4) || (p23 && self.r.chance(0.3));
        let total = n as u32
            + if elided {
                self.r.range(1, 40) as u32
            } else {
                0
            };
        let mut results = Vec::new();
        let mut res_json = Vec::new();
        for _ in 0..n {
            let p = text::rel_path(&mut self.r);
            let line = self.r.below(400) as u32;
            let content = format!("    {} // {query}", text::sentence(&mut self.r, 5));
            if per_line {
                res_json.push(json!({"relativePath": p, "lineNumber": line, "content": content}));
            } else {
                res_json.push(json!({"relativePath": p}));
            }
            results.push((p, line, content));
        }
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let mut stored = json!({"type": ty("GREP_SEARCH"), "status": status("DONE"), "metadata": meta,
            "grepSearch": {"searchPathUri": format!("file://{}", self.ws), "query": query,
                "matchPerLine": per_line, "results": res_json, "totalResults": total,
                "commandRun": format!("rg --json -n {} {}", js(&query), self.ws)}});
        {
            let ws = self.ws.clone();
            let g = &mut stored["grepSearch"];
            if let Some(rs) = g["results"].as_array_mut() {
                for r in rs.iter_mut() {
                    let rel = r["relativePath"].as_str().unwrap_or_default().to_string();
                    r["absolutePath"] = json!(format!("{ws}/{rel}"));
                }
            }
            g["caseInsensitive"] = json!(self.r.chance(0.3));
            g["isRegex"] = json!(self.r.chance(0.4));
            if self.r.chance(0.3) {
                g["includes"] = json!(["*.rs", "*.go"]);
            }
            if self.r.chance(0.2) {
                g["rawOutput"] = json!(format!("{n} matches"));
            }
            if self.r.chance(0.02) {
                g["timedOut"] = json!(true);
            }
        }
        let result_text = format!("{n} results for {query}");
        let grep = GrepInfo {
            idx,
            tool_call_id: call.id.clone(),
            per_line,
            results,
            total,
        };
        (
            planner,
            StepJson {
                stored,
                presented: None,
                call: Some(call),
                result_text: Some(result_text),
                is_error: false,
                grep: Some(grep),
            },
        )
    }

    fn native_list_dir(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let dir = format!("{}/src", self.ws);
        let call = self.call("list_dir", vec![("DirectoryPath", js(&dir))]);
        let planner = self.planner(pidx, Some(&call));
        let children: Vec<String> = (0..self.r.range(2, 20))
            .map(|i| format!("file_{i}.rs"))
            .collect();
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let stored = json!({"type": ty("LIST_DIRECTORY"), "status": status("DONE"), "metadata": meta,
            "listDirectory": {"directoryPathUri": format!("file://{dir}"), "children": children}});
        let mut stored = stored;
        let results: Vec<Value> = children
            .iter()
            .map(|c| json!({"name": c, "isDir": false, "sizeBytes": (c.len() as u64 * 97).to_string()}))
            .chain(std::iter::once(json!({"name": "testdata", "isDir": true})))
            .collect();
        stored["listDirectory"]["results"] = json!(results);
        let rt = children.join("\n");
        self.finish_native(planner, call, stored, rt)
    }

    fn finish_native(
        &mut self,
        planner: StepJson,
        call: Call,
        stored: Value,
        rt: String,
    ) -> (StepJson, StepJson) {
        (
            planner,
            StepJson {
                stored,
                presented: None,
                call: Some(call),
                result_text: Some(truncate(&rt, 300)),
                is_error: false,
                grep: None,
            },
        )
    }

    fn native_mcp(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let q = text::sentence(&mut self.r, 3);
        let call = self.call("mcp_github_search_issues", vec![("query", js(&q))]);
        let planner = self.planner(pidx, Some(&call));
        let res = format!(
            "[{{\"number\": {}, \"title\": {}}}]",
            self.r.range(1, 900),
            js(&q)
        );
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            json!({"toolSource": "TOOL_SOURCE_MCP"}),
        );
        let stored = json!({"type": ty("MCP_TOOL"), "status": status("DONE"), "metadata": meta,
            "mcpTool": {"serverName": "github", "toolCall": {"id": call.id, "name": "search_issues", "argumentsJson": call.args_json()},
                "resultString": res}});
        let mut stored = stored;
        if self.r.chance(0.2) {
            let m = stored["mcpTool"].as_object_mut();
            if let Some(m) = m {
                m.remove("resultString");
                m.insert(
                    "resultUri".into(),
                    json!(format!("file://{}/.gemini/mcp/result-{idx}.json", self.ws)),
                );
            }
        }
        self.finish_native(planner, call, stored, res)
    }

    fn native_search_web(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let q = text::sentence(&mut self.r, 4);
        let call = self.call("search_web", vec![("query", js(&q))]);
        let planner = self.planner(pidx, Some(&call));
        let summary = text::paragraph(&mut self.r, 3);
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let stored = json!({"type": ty("SEARCH_WEB"), "status": status("DONE"), "metadata": meta,
            "searchWeb": {"query": q, "summary": summary, "domain": "docs.example.com",
                "searchType": "SEARCH_WEB_TYPE_WEB", "thirdPartyConfig": {"provider": "THIRD_PARTY_WEB_SEARCH_PROVIDER_GEMINI"}}});
        self.finish_native(planner, call, stored, summary)
    }

    fn native_read_url(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let url = format!("https://docs.example.com/guide/{}", self.r.range(1, 99));
        let call = self.call("read_url_content", vec![("Url", js(&url))]);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let stored = json!({"type": ty("READ_URL_CONTENT"), "status": status("DONE"), "metadata": meta,
            "readUrlContent": {"url": url, "resolvedUrl": url, "latencyMs": self.r.range(20, 900),
                "webDocument": {"url": url, "documentId": format!("doc-{:x}", self.r.next_u64()),
                    "title": text::sentence(&mut self.r, 4), "summary": text::sentence(&mut self.r, 10),
                    "chunks": [{"markdownChunk": {"text": text::paragraph(&mut self.r, 2)}}]}}});
        self.finish_native(planner, call, stored, format!("Read {url}"))
    }

    fn native_find(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let dir = format!("{}/src", self.ws);
        let pattern = self
            .r
            .pick(&["*_test.go", "*.rs", "Makefile", "*.md"])
            .to_string();
        let call = self.call(
            "find_by_name",
            vec![("Pattern", js(&pattern)), ("SearchDirectory", js(&dir))],
        );
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let n = self.r.range(0, 30);
        let found: Vec<String> = (0..n).map(|_| text::rel_path(&mut self.r)).collect();
        let raw = found.join("\n");
        let mut find = json!({"pattern": pattern, "searchDirectory": dir, "type": "FIND_RESULT_TYPE_FILE",
            "maxDepth": 8, "totalResults": n, "rawOutput": raw, "excludes": ["node_modules", "target"]});
        if self.r.chance(0.3) {
            find["extensions"] = json!(["rs", "go"]);
        }
        if n > 20 {
            find["truncatedOutput"] = json!(found[..20].join("\n"));
            find["truncatedTotalResults"] = json!(20);
        }
        let stored =
            json!({"type": ty("FIND"), "status": status("DONE"), "metadata": meta, "find": find});
        self.finish_native(planner, call, stored, raw)
    }

    fn native_command_status(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let id = format!("{}/task-{}", self.plan.id, self.r.range(1, 40));
        let wait = self.r.range(1, 30);
        let call = self.call(
            "command_status",
            vec![
                ("CommandId", js(&id)),
                ("WaitDurationSeconds", wait.to_string()),
            ],
        );
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let n = self.sized(20, 2_000);
        let out = text::output(&mut self.r, n);
        let stored = json!({"type": ty("COMMAND_STATUS"), "status": status("DONE"), "metadata": meta,
            "commandStatus": {"commandId": id, "outputCharacterCount": out.chars().count(), "waitDurationSeconds": wait}});
        self.finish_native(planner, call, stored, out)
    }

    /// The agent configuration snapshot a conversation's metadata carries:
    /// its modeled part (the rest of a real snapshot has no public
    /// descriptor), with system prompt sections of realistic length.
    fn agent_script(&mut self) -> Value {
        let titles = [
            "Identity",
            "Tool use",
            "Making code changes",
            "Running commands",
            "Communication",
            "Task boundaries",
        ];
        let sections: Vec<Value> = titles
            .iter()
            .map(|t| {
                let n = self.r.range(6, 30) as usize;
                json!({"title": t, "content": text::paragraph(&mut self.r, n)})
            })
            .collect();
        json!({
            "name": "default",
            "description": "The default coding agent.",
            "hidden": self.r.chance(0.1),
            "config": {
                "commandExecutionPolicy": "auto",
                "cascadeConfig": {
                    "executorConfig": {},
                    "plannerConfig": {
                        "retryConfig": {
                            "apiRetry": {"maxRetries": 5, "initialSleepDurationMs": 1000,
                                "exponentialMultiplier": 2.0, "includeErrorFeedback": true, "range": 0.25},
                            "modelOutputRetry": {"maxRetries": 2, "forbidToolUse": true},
                        },
                        "toolConfig": {
                            "notifyUser": {"artifactReviewMode": "ARTIFACT_REVIEW_MODE_TURBO"},
                            "runCommand": {"autoCommandConfig": {"autoExecutionPolicy": "CASCADE_COMMANDS_AUTO_EXECUTION_AUTO"}},
                        },
                    },
                },
                "customizationConfig": {},
                "customAgent": {
                    "systemPromptConfig": {},
                    "systemPromptSections": sections,
                    "toolNames": ["run_command", "view_file", "replace_file_content", "write_to_file",
                        "grep_search", "list_dir", "find_by_name", "command_status", "search_web",
                        "read_url_content", "invoke_subagent", "manage_task"],
                },
            },
        })
    }

    fn ephemeral_message(&mut self, idx: usize) -> StepJson {
        let meta = self.meta(idx, "SYSTEM", None, &[], json!({}));
        let (content, heuristic) = *self.r.pick(&[
            (
                "Remember to update the task list when a step is done.",
                "task_reminder",
            ),
            (
                "The last three commands failed; consider another approach.",
                "repeated_failures",
            ),
            (
                "You have not read the file you are about to edit.",
                "edit_without_view",
            ),
        ]);
        StepJson::plain(json!({
            "type": ty("EPHEMERAL_MESSAGE"),
            "status": status("DONE"),
            "metadata": meta,
            "ephemeralMessage": {"content": content, "triggeredHeuristics": [heuristic]},
        }))
    }

    fn conversation_history(&mut self, idx: usize) -> StepJson {
        let meta = self.meta(idx, "SYSTEM", None, &[], json!({}));
        let content = text::paragraph(&mut self.r, 4);
        StepJson::plain(json!({
            "type": ty("CONVERSATION_HISTORY"),
            "status": status("DONE"),
            "metadata": meta,
            "conversationHistory": {"content": content},
        }))
    }

    // ---- wrappers over embedded native steps ---------------------------------

    fn run_command(
        &mut self,
        pidx: usize,
        idx: usize,
        background: bool,
        big: bool,
    ) -> (StepJson, StepJson) {
        let cmd = text::command(&mut self.r);
        let wait = if background { 500 } else { 5000 };
        let args = self.cmd_args(&cmd, wait);
        let call = self.call("run_command", args);
        let planner = self.planner(pidx, Some(&call));
        let size = if big {
            self.plan.big_output
        } else {
            self.sized(40, 4000)
        };
        let out = text::output(&mut self.r, size);
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let mut rc = json!({"commandLine": cmd, "proposedCommandLine": cmd, "cwd": self.ws,
            "waitMsBeforeAsync": wait, "blocking": !background,
            "combinedOutput": {"full": out}, "shell": "bash"});
        if !background {
            rc["exitCode"] = json!(if self.r.chance(0.12) { 1 } else { 0 });
        }
        let native = json!({"type": ty("RUN_COMMAND"), "status": status("DONE"),
            "metadata": Self::native_meta(&meta, &format!("Run {cmd}"), "Running command"),
            "runCommand": rc});
        let shown = truncate(&out, 1000);
        let mut result = json!({"result": shown, "payload": any_of(STEP_ANY, &native)});
        if big || out.len() > 4000 {
            result["fullOutputUri"] = Value::String(format!(
                "file://{}/.gemini/antigravity-cli/brain/{}/.system_generated/steps/{idx}/output.txt",
                self.ws, self.plan.id
            ));
        }
        let mut stored = Self::generic("DONE", meta, &call, Some(result));
        let mut presented = native;
        if background {
            let td = json!({"id": format!("{}/task-{idx}", self.plan.id),
                "logUri": format!("file://{}/.gemini/tasks/{idx}.log", self.ws),
                "commandLine": cmd, "shortDescription": format!("{cmd} (background)"),
                "movedToBackgroundAt": self.ts(600)});
            stored["taskDetails"] = td.clone();
            presented["taskDetails"] = td;
        }
        self.finish(planner, call, stored, Some(presented), shown, false)
    }

    fn view_body(&mut self, path: &str, start1: usize, lines: usize) -> (Value, String) {
        let content = text::file_content(&mut self.r, lines);
        let body = json!({"absolutePathUri": format!("file://{path}"), "startLine": start1 - 1,
            "endLine": start1 + lines - 2, "content": content, "numLines": lines, "numBytes": content.len()});
        (body, content)
    }

    fn view_file(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let lines = self.sized(5, 160);
        let start = self.r.range(1, 60) as usize;
        let call = self.call(
            "view_file",
            vec![
                ("AbsolutePath", js(&path)),
                ("EndLine", (start + lines - 1).to_string()),
                ("StartLine", start.to_string()),
            ],
        );
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let (body, content) = self.view_body(&path, start, lines);
        let native = json!({"type": ty("VIEW_FILE"), "status": status("DONE"),
            "metadata": Self::native_meta(&meta, &format!("Read {path}"), "Reading file"), "viewFile": body});
        let shown = truncate(&content, 800);
        let stored = Self::generic(
            "DONE",
            meta,
            &call,
            Some(json!({"result": shown, "payload": any_of(STEP_ANY, &native)})),
        );
        self.finish(planner, call, stored, Some(native), shown, false)
    }

    fn code_action(&mut self, pidx: usize, idx: usize, create: bool) -> (StepJson, StepJson) {
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let uri = format!("file://{path}");
        let lines = self.sized(3, 80);
        let content = text::file_content(&mut self.r, lines);
        let (call, spec, edit) = if create {
            let call = self.call(
                "write_to_file",
                vec![("CodeContent", js(&content)), ("TargetFile", js(&path))],
            );
            (
                call,
                json!({"createFile": {"path": {"absoluteUri": uri}}}),
                json!({"absoluteUri": uri, "createFile": true, "unifiedDiff": format!("--- /dev/null\n+++ b/{path}\n")}),
            )
        } else {
            let instr = text::sentence(&mut self.r, 9);
            let call = self.call(
                "replace_file_content",
                vec![
                    ("Instruction", js(&instr)),
                    ("ReplacementContent", js(&content)),
                    ("TargetFile", js(&path)),
                ],
            );
            let diff = text::diff(&mut self.r, &path);
            (
                call,
                json!({"command": {"instruction": instr, "isEdit": true, "file": {"absoluteUri": uri}}}),
                json!({"absoluteUri": uri, "unifiedDiff": diff}),
            )
        };
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let native = json!({"type": ty("CODE_ACTION"), "status": status("DONE"),
            "metadata": Self::native_meta(&meta, &format!("Edit {path}"), "Editing file"),
            "codeAction": {"actionSpec": spec, "actionResult": {"edit": edit},
                "description": text::sentence(&mut self.r, 6)}});
        let shown = format!("Updated {path}");
        let stored = Self::generic(
            "DONE",
            meta,
            &call,
            Some(json!({"result": shown, "payload": any_of(STEP_ANY, &native)})),
        );
        self.finish(planner, call, stored, Some(native), shown, false)
    }

    fn children(&mut self) -> Vec<String> {
        if self.plan.children.is_empty() {
            vec![self.r.uuid()]
        } else {
            self.plan.children.clone()
        }
    }

    fn invoke_native(&mut self, meta: &Value, prompt: &str, status_name: &str) -> Value {
        let kids = self.children();
        let specs: Vec<Value> = kids
            .iter()
            .enumerate()
            .map(|(i, _)| json!({"name": format!("helper-{i}"), "prompt": prompt, "workspace": "inherit"}))
            .collect();
        let results: Vec<Value> = kids
            .iter()
            .map(|k| json!({"conversationId": k,
                "logUri": format!("file://{}/.gemini/antigravity-cli/brain/{k}/.system_generated/logs/transcript.jsonl", self.ws),
                "workspaceUri": format!("file://{}", self.ws)}))
            .collect();
        json!({"type": ty("INVOKE_SUBAGENT"), "status": status(status_name),
            "metadata": Self::native_meta(meta, "Delegate to subagents", "Invoking subagents"),
            "invokeSubagent": {"subagentName": "general", "prompt": prompt, "specs": specs, "results": results}})
    }

    fn invoke_subagent(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let prompt = text::sentence(&mut self.r, 10);
        let call = self.call(
            "invoke_subagent",
            vec![("Prompt", js(&prompt)), ("Workspace", js("inherit"))],
        );
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let native = self.invoke_native(&meta, &prompt, "DONE");
        let shown = "Subagents finished.".to_string();
        let stored = Self::generic(
            "DONE",
            meta,
            &call,
            Some(json!({"result": shown, "payload": any_of(STEP_ANY, &native)})),
        );
        self.finish(planner, call, stored, Some(native), shown, false)
    }

    fn canceled_command(
        &mut self,
        pidx: usize,
        idx: usize,
        native_error: bool,
    ) -> (StepJson, StepJson) {
        let cmd = text::command(&mut self.r);
        let args = self.cmd_args(&cmd, 5000);
        let call = self.call("run_command", args);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "CANCELED"],
            Self::builtin(),
        );
        let n = self.sized(40, 800);
        let out = text::output(&mut self.r, n);
        let mut nm = Self::native_meta(&meta, &format!("Run {cmd}"), "Running command");
        let (nstatus, hist) = if native_error {
            ("ERROR", vec!["PENDING", "RUNNING", "ERROR"])
        } else {
            ("RUNNING", vec!["PENDING", "RUNNING"])
        };
        let trans: Vec<Value> = hist
            .iter()
            .map(|s| json!({"updatedStatus": status(s), "timestamp": meta["createdAt"].clone()}))
            .collect();
        nm["internalMetadata"] = json!({"statusTransitions": trans});
        let mut native = json!({"type": ty("RUN_COMMAND"), "status": status(nstatus), "metadata": nm,
            "runCommand": {"commandLine": cmd, "proposedCommandLine": cmd, "cwd": self.ws,
                "waitMsBeforeAsync": 5000, "blocking": true, "combinedOutput": {"full": out}, "shell": "bash"}});
        if native_error {
            native["error"] = json!({"shortError": "signal: interrupt", "fullError": "command interrupted by the user: signal: interrupt"});
        }
        let shown = "The command was canceled.".to_string();
        let stored = Self::generic(
            "CANCELED",
            meta,
            &call,
            Some(json!({"result": shown, "payload": any_of(STEP_ANY, &native)})),
        );
        let mut presented = native;
        presented["status"] = Value::String(status("CANCELED"));
        self.finish(planner, call, stored, Some(presented), shown, false)
    }

    fn permission_command(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let cmd = self.plain_command();
        let args = self.cmd_args(&cmd, 5000);
        let call = self.call("run_command", args);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "WAITING", "RUNNING", "DONE"],
            json!({"toolSource": "TOOL_SOURCE_BUILTIN", "preToolHookResults": [{"hookName": "force-ask", "decision": "DECISION_ASK"}]}),
        );
        let perms = json!({"permissionGrants": [{"action": "command", "allow": true,
            "resource": {"action": "command", "target": cmd}, "target": cmd}]});
        let inter = json!([{"request": {"permission": {"resource": {"action": "command", "target": cmd},
                "triggerSource": {"type": "TYPE_FORCE_ASK_HOOK"}}},
            "response": {"permission": {"allow": true, "persistGrants": {}}}}]);
        let n = self.sized(40, 1500);
        let out = text::output(&mut self.r, n);
        let native = json!({"type": ty("RUN_COMMAND"), "status": status("DONE"),
            "metadata": Self::native_meta(&meta, &format!("Run {cmd}"), "Running command"),
            "permissions": perms, "completedInteractions": inter,
            "runCommand": {"commandLine": cmd, "proposedCommandLine": cmd, "cwd": self.ws,
                "waitMsBeforeAsync": 5000, "blocking": true, "exitCode": 0, "combinedOutput": {"full": out}, "shell": "bash"}});
        let shown = truncate(&out, 1000);
        let mut stored = Self::generic(
            "DONE",
            meta,
            &call,
            Some(json!({"result": shown, "payload": any_of(STEP_ANY, &native)})),
        );
        stored["permissions"] = perms;
        stored["completedInteractions"] = inter;
        self.finish(planner, call, stored, Some(native), shown, false)
    }

    fn permission_view(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let lines = self.sized(5, 120);
        let call = self.call(
            "view_file",
            vec![
                ("AbsolutePath", js(&path)),
                ("EndLine", lines.to_string()),
                ("StartLine", "1".into()),
            ],
        );
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "WAITING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let perms = json!({"permissionGrants": [{"action": "read_file", "allow": true,
            "resource": {"action": "read_file", "target": path}, "target": path}]});
        let inter = json!([{"request": {"permission": {"resource": {"action": "read_file", "target": path},
                "actionDescription": format!("Read {path}")}},
            "response": {"permission": {"allow": true, "persistGrants": {}}}}]);
        let (body, content) = self.view_body(&path, 1, lines);
        let native = json!({"type": ty("VIEW_FILE"), "status": status("DONE"),
            "metadata": Self::native_meta(&meta, &format!("Read {path}"), "Reading file"),
            "permissions": perms, "completedInteractions": inter, "viewFile": body});
        let shown = truncate(&content, 800);
        let mut stored = Self::generic(
            "DONE",
            meta,
            &call,
            Some(json!({"result": shown, "payload": any_of(STEP_ANY, &native)})),
        );
        stored["permissions"] = perms;
        stored["completedInteractions"] = inter;
        self.finish(planner, call, stored, Some(native), shown, false)
    }

    fn content_offset(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let off = self.r.range(1, 20_000);
        let call = self.call(
            "view_file",
            vec![
                ("AbsolutePath", js(&path)),
                ("ContentOffset", off.to_string()),
            ],
        );
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let lines = self.sized(5, 80);
        let content = text::file_content(&mut self.r, lines);
        let native = json!({"type": ty("VIEW_FILE"), "status": status("DONE"),
            "metadata": Self::native_meta(&meta, &format!("Read {path}"), "Reading file"),
            "viewFile": {"absolutePathUri": format!("file://{path}"), "content": content,
                "numLines": lines, "numBytes": content.len(), "contentOffset": off}});
        let shown = truncate(&content, 800);
        let stored = Self::generic(
            "DONE",
            meta,
            &call,
            Some(json!({"result": shown, "payload": any_of(STEP_ANY, &native)})),
        );
        self.finish(planner, call, stored, Some(native), shown, false)
    }

    fn write_append(&mut self, pidx: usize, idx: usize, value: &str) -> (StepJson, StepJson) {
        let path = format!("{}/notes/{}.md", self.ws, self.r.range(1, 99));
        let content = text::paragraph(&mut self.r, 2);
        let call = self.call(
            "write_to_file",
            vec![
                ("Append", value.to_string()),
                ("CodeContent", js(&content)),
                ("TargetFile", js(&path)),
            ],
        );
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let uri = format!("file://{path}");
        let mut create = json!({"path": {"absoluteUri": uri}});
        if value == "true" {
            create["append"] = Value::Bool(true);
        }
        let native = json!({"type": ty("CODE_ACTION"), "status": status("DONE"),
            "metadata": Self::native_meta(&meta, &format!("Write {path}"), "Writing file"),
            "codeAction": {"actionSpec": {"createFile": create},
                "actionResult": {"edit": {"absoluteUri": uri, "createFile": value != "true"}}}});
        let shown = format!("Wrote {path}");
        let stored = Self::generic(
            "DONE",
            meta,
            &call,
            Some(json!({"result": shown, "payload": any_of(STEP_ANY, &native)})),
        );
        self.finish(planner, call, stored, Some(native), shown, false)
    }

    fn outer_error(&mut self, pidx: usize, idx: usize, kind: OuterKind) -> (StepJson, StepJson) {
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let uri = format!("file://{path}");
        let (name, args, nty, key, body, short): (
            &str,
            Vec<(&str, String)>,
            &str,
            &str,
            Value,
            &str,
        ) = match kind {
            OuterKind::RunCommand => {
                let cmd = "frobnicate --all".to_string();
                let a = self.cmd_args(&cmd, 5000);
                (
                    "run_command",
                    a,
                    "RUN_COMMAND",
                    "runCommand",
                    json!({"commandLine": cmd, "proposedCommandLine": cmd, "cwd": self.ws, "blocking": true,
                        "exitCode": 127, "combinedOutput": {"full": "bash: frobnicate: command not found\n"}}),
                    "exit status 127",
                )
            }
            OuterKind::CodeAction => (
                "write_to_file",
                vec![("CodeContent", js("x")), ("TargetFile", js(&path))],
                "CODE_ACTION",
                "codeAction",
                json!({"actionSpec": {"createFile": {"path": {"absoluteUri": uri}}}}),
                "parent directory does not exist",
            ),
            OuterKind::ViewFile => (
                "view_file",
                vec![("AbsolutePath", js(&path))],
                "VIEW_FILE",
                "viewFile",
                json!({"absolutePathUri": uri}),
                "file not found",
            ),
            OuterKind::GrepSearch => (
                "grep_search",
                vec![("Query", js("fn (")), ("SearchPath", js(&self.ws))],
                "GREP_SEARCH",
                "grepSearch",
                json!({"query": "fn (", "searchPathUri": format!("file://{}", self.ws)}),
                "regex parse error",
            ),
            OuterKind::McpTool => (
                "mcp_github_create_issue",
                vec![("title", js("Flaky test"))],
                "MCP_TOOL",
                "mcpTool",
                json!({"serverName": "github", "toolCall": {"name": "create_issue", "argumentsJson": "{\"title\":\"Flaky test\"}"}}),
                "MCP server github is not connected",
            ),
            OuterKind::ReadUrl => (
                "read_url_content",
                vec![("Url", js("https://example.com/missing"))],
                "READ_URL_CONTENT",
                "readUrlContent",
                json!({"url": "https://example.com/missing"}),
                "HTTP 404 Not Found",
            ),
            OuterKind::SearchWeb => (
                "search_web",
                vec![("query", js("rust wal format"))],
                "SEARCH_WEB",
                "searchWeb",
                json!({"query": "rust wal format"}),
                "search quota exceeded",
            ),
        };
        let call = self.call(name, args);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "ERROR"],
            Self::builtin(),
        );
        let mut native = json!({"type": ty(nty), "status": status("ERROR"),
            "metadata": Self::native_meta(&meta, name, "Running tool"),
            "error": {"shortError": short, "fullError": format!("{name}: {short}"),
                "userErrorMessage": format!("The tool {name} failed."),
                "errorId": format!("err-{:016x}", self.r.next_u64()), "isBenign": self.r.chance(0.3),
                "structuredErrorParts": [{"text": format!("{name} failed: ")}, {"codeText": short},
                    {"directoryUri": format!("file://{}", self.ws)}, {"url": "https://antigravity.google/docs/errors"}]}});
        native[key] = body;
        let mut stored = Self::generic(
            "ERROR",
            meta,
            &call,
            Some(json!({"payload": any_of(STEP_ANY, &native)})),
        );
        stored["error"] =
            json!({"shortError": short, "fullError": format!("tool {name} failed: {short}")});
        self.finish(
            planner,
            call,
            stored,
            Some(native),
            format!("Error: {short}"),
            true,
        )
    }

    fn image_args(&mut self) -> (Vec<(&'static str, String)>, String, String) {
        let prompt = text::sentence(&mut self.r, 9);
        let name = format!("diagram_{}", self.r.range(1, 99));
        (
            vec![
                ("AspectRatio", js("16:9")),
                ("ImageName", js(&name)),
                ("Prompt", js(&prompt)),
            ],
            prompt,
            name,
        )
    }

    fn failed_image(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let (args, prompt, name) = self.image_args();
        let call = self.call("generate_image", args);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "ERROR"],
            Self::builtin(),
        );
        let short = "image generation blocked by the safety filter";
        let native = json!({"type": ty("GENERATE_IMAGE"), "status": status("ERROR"),
            "metadata": Self::native_meta(&meta, "Generate image", "Generating image"),
            "error": {"shortError": short, "fullError": format!("generate_image: {short}")},
            "generateImage": {"prompt": prompt, "imageName": name, "aspectRatio": "16:9"}});
        let mut stored = Self::generic(
            "ERROR",
            meta,
            &call,
            Some(json!({"payload": any_of(STEP_ANY, &native)})),
        );
        stored["error"] = json!({"shortError": short, "fullError": format!("tool generate_image failed: {short}")});
        self.finish(planner, call, stored, Some(native), short.to_string(), true)
    }

    fn media(&mut self, name: &str) -> Value {
        json!({"mimeType": "image/png", "uri": format!("file://{}/.gemini/images/{name}.png", self.ws)})
    }

    fn image_success(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let (args, prompt, name) = self.image_args();
        let call = self.call("generate_image", args);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let mut m = self.media(&name);
        if self.r.chance(0.5) {
            let img = self.r.bytes(96);
            m["inlineData"] = json!(base64_lite::encode(&img));
        }
        let native = json!({"type": ty("GENERATE_IMAGE"), "status": status("DONE"),
            "metadata": Self::native_meta(&meta, "Generate image", "Generating image"),
            "generateImage": {"prompt": prompt, "imageName": name, "aspectRatio": "16:9",
                "modelName": "imagen-4", "generatedMedia": m}});
        let shown = format!("Generated {name}.png");
        let stored = Self::generic(
            "DONE",
            meta,
            &call,
            Some(json!({"result": shown, "media": [m], "payload": any_of(STEP_ANY, &native)})),
        );
        self.finish(planner, call, stored, Some(native), shown, false)
    }

    fn failed_list_resources(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let call = self.call("list_resources", vec![("ServerName", js("github"))]);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "ERROR"],
            Self::builtin(),
        );
        let short = "MCP server github does not support resources";
        let native = json!({"type": ty("LIST_RESOURCES"), "status": status("ERROR"), "metadata": meta.clone(),
            "error": {"shortError": short, "fullError": format!("list_resources: {short}")},
            "listResources": {"serverName": "github"}});
        let shown = format!("Error: {short}");
        let mut stored = Self::generic(
            "ERROR",
            meta,
            &call,
            Some(json!({"result": shown, "payload": any_of(STEP_ANY, &native)})),
        );
        stored["error"] = json!({"shortError": short, "fullError": format!("tool list_resources failed: {short}")});
        self.finish(planner, call, stored, Some(native), shown, true)
    }

    fn bridge_failure(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let cmd = self.plain_command();
        let args = self.cmd_args(&cmd, 5000);
        let call = self.call("run_command", args);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "ERROR"],
            Self::allow_hook(),
        );
        let mut nm = meta.clone();
        if let Some(t) = nm["internalMetadata"]["statusTransitions"].as_array_mut() {
            t.truncate(2);
        }
        if let Value::Object(o) = &mut nm {
            o.remove("completedAt");
        }
        let n = self.sized(40, 1500);
        let out = text::output(&mut self.r, n);
        let native = json!({"type": ty("RUN_COMMAND"), "status": status("DONE"), "metadata": nm,
            "runCommand": {"commandLine": cmd, "proposedCommandLine": cmd, "cwd": self.ws,
                "waitMsBeforeAsync": 5000, "blocking": true, "exitCode": 0,
                "combinedOutput": {"full": out}, "shell": "bash", "ranInSandbox": true}});
        let err = format!("{BRIDGE_PREFIX}template: output:1:9: executing \"output\" at <.Stdout>: can't evaluate field Stdout in type *tools.RunResult");
        let mut stored = Self::generic(
            "ERROR",
            meta,
            &call,
            Some(json!({"payload": any_of(STEP_ANY, &native)})),
        );
        stored["error"] = json!({"shortError": err, "fullError": err});
        let mut presented = native;
        presented["status"] = Value::String(status("ERROR"));
        self.finish(
            planner,
            call,
            stored,
            Some(presented),
            truncate(&out, 500),
            true,
        )
    }

    // ---- resultless wrappers -------------------------------------------------

    fn failed_before_run(
        &mut self,
        pidx: usize,
        idx: usize,
        kind: BeforeRunKind,
    ) -> (StepJson, StepJson) {
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let (name, args, st, short): (&str, Vec<(&str, String)>, &str, &str) = match kind {
            BeforeRunKind::WriteToFile => (
                "write_to_file",
                vec![
                    ("CodeContent", js("fn main() {}\n")),
                    ("TargetFile", js(&path)),
                ],
                "ERROR",
                "open target file: permission denied",
            ),
            BeforeRunKind::WriteToFileInvalid => (
                "write_to_file",
                vec![
                    ("CodeContent", js("x")),
                    ("TargetFile", js("relative/path.rs")),
                ],
                "INVALID",
                "invalid arguments: TargetFile must be an absolute path",
            ),
            BeforeRunKind::ViewFile => (
                "view_file",
                vec![
                    ("AbsolutePath", js(&path)),
                    ("EndLine", "40".into()),
                    ("StartLine", "1".into()),
                ],
                "ERROR",
                "file does not exist",
            ),
            BeforeRunKind::FindByName => (
                "find_by_name",
                vec![
                    ("Pattern", js("*.proto")),
                    ("SearchDirectory", js(&self.ws)),
                ],
                "ERROR",
                "search directory is outside the workspace",
            ),
            BeforeRunKind::ListDir => (
                "list_dir",
                vec![("DirectoryPath", js(&format!("{}/missing", self.ws)))],
                "ERROR",
                "directory does not exist",
            ),
            BeforeRunKind::Schedule => (
                "schedule",
                vec![
                    ("DurationSeconds", "-5".into()),
                    ("Prompt", js("check again")),
                    ("TimerCondition", js("elapsed")),
                ],
                "ERROR",
                "duration must be positive",
            ),
            BeforeRunKind::GenerateImageInvalid => (
                "generate_image",
                vec![
                    ("AspectRatio", js("7:3")),
                    ("ImageName", js("banner")),
                    ("Prompt", js("a banner")),
                ],
                "INVALID",
                "invalid arguments: aspect ratio 7:3 is not supported",
            ),
        };
        // agy repeats the rejection text as the full error of an INVALID call
        let full = if st == "INVALID" {
            short.to_string()
        } else {
            format!("{name}: {short}")
        };
        let call = self.call(name, args);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(idx, "MODEL", Some(&call), &["PENDING", st], json!({}));
        let mut stored = Self::generic(st, meta, &call, None);
        stored["error"] = json!({"shortError": short, "fullError": full});
        self.finish(planner, call, stored, None, short.to_string(), true)
    }

    fn resultless_command(meta: &Value, cmd: &str, cwd: &str, st: &str) -> Value {
        json!({"type": ty("RUN_COMMAND"), "status": status(st), "metadata": meta.clone(),
            "runCommand": {"commandLine": cmd, "proposedCommandLine": cmd, "cwd": cwd, "blocking": true,
                "combinedOutput": {}}})
    }

    fn hook_denied(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let cmd = "rm -rf build".to_string();
        let args = self.cmd_args(&cmd, 5000);
        let call = self.call("run_command", args);
        let planner = self.planner(pidx, Some(&call));
        let reason = "destructive commands are blocked in this repository";
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "ERROR"],
            json!({"toolSource": "TOOL_SOURCE_BUILTIN", "preToolHookResults": [{"decision": "DECISION_DENY", "reason": reason}]}),
        );
        let err = format!("tool call denied by pre-tool hook: {reason}");
        let error = json!({"shortError": err, "fullError": err});
        let mut stored = Self::generic("ERROR", meta.clone(), &call, None);
        stored["error"] = error.clone();
        let mut presented = Self::resultless_command(&meta, &cmd, &self.ws.clone(), "ERROR");
        presented["error"] = error;
        self.finish(planner, call, stored, Some(presented), err, true)
    }

    fn missing_tool_summary(
        &mut self,
        pidx: usize,
        idx: usize,
        read: bool,
    ) -> (StepJson, StepJson) {
        let (name, args): (&str, Vec<(&str, String)>) = if read {
            let path = text::abs_path(&mut self.r, &self.ws.clone());
            (
                "view_file",
                vec![
                    ("AbsolutePath", js(&path)),
                    ("EndLine", "80".into()),
                    ("StartLine", "1".into()),
                    ("toolAction", js("Reading file")),
                ],
            )
        } else {
            let cmd = text::command(&mut self.r);
            (
                "run_command",
                vec![
                    ("CommandLine", js(&cmd)),
                    ("Cwd", js(&self.ws)),
                    ("IsDaemon", "false".into()),
                    ("RunPersistent", "false".into()),
                    ("WaitMsBeforeAsync", "5000".into()),
                    ("toolAction", js("Running tests")),
                ],
            )
        };
        let call = self.call(name, args);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "INVALID"],
            Self::builtin(),
        );
        let mut stored = Self::generic("INVALID", meta, &call, None);
        stored["error"] =
            json!({"shortError": MISSING_TOOL_SUMMARY, "fullError": MISSING_TOOL_SUMMARY});
        self.finish(
            planner,
            call,
            stored,
            None,
            MISSING_TOOL_SUMMARY.into(),
            true,
        )
    }

    fn rejected_permission(
        &mut self,
        pidx: usize,
        idx: usize,
        headless: bool,
    ) -> (StepJson, StepJson) {
        let cmd = self.plain_command();
        let mut args = self.cmd_args(&cmd, 5000);
        if headless {
            args.push(("BypassSandbox", js("false")));
        }
        let call = self.call("run_command", args);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "WAITING", "RUNNING", "ERROR"],
            json!({"toolSource": "TOOL_SOURCE_BUILTIN", "preToolHookResults": [{"decision": "DECISION_ALLOW"}]}),
        );
        let err = format!(
            "permission check failed for command {}: user denied permission to run command:\n{cmd}\n{REJECTED_ADVICE}",
            js(&cmd)
        );
        let error = json!({"shortError": err, "fullError": err});
        let first = cmd.split(' ').next().unwrap_or("").to_string();
        let inter = json!([{"request": {"permission": {"resource": {"action": "command", "target": cmd},
                "persistSuggestionType": "PERSIST_SUGGESTION_TYPE_PREFIX",
                "suggestedPersistPattern": format!("{first} *"),
                "actionDescription": format!("Run command: {cmd}"),
                "shellName": "bash", "triggerSource": {"type": "TYPE_DEFAULT_FALLBACK"}}},
            "response": {"permission": {"persistGrants": {}}}}]);
        let mut stored = Self::generic("ERROR", meta.clone(), &call, None);
        stored["error"] = error.clone();
        stored["completedInteractions"] = inter.clone();
        let mut presented = Self::resultless_command(&meta, &cmd, &self.ws.clone(), "ERROR");
        presented["error"] = error;
        presented["completedInteractions"] = inter;
        self.finish(planner, call, stored, Some(presented), err, true)
    }

    fn canceled_prompt(&mut self, pidx: usize, idx: usize, bypass: bool) -> (StepJson, StepJson) {
        let cmd = self.plain_command();
        let mut args = self.cmd_args(&cmd, 5000);
        if bypass {
            args.push(("BypassSandbox", js("false")));
        }
        let call = self.call("run_command", args);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "WAITING", "RUNNING", "CANCELED"],
            json!({"toolSource": "TOOL_SOURCE_BUILTIN", "preToolHookResults": [{"decision": "DECISION_ALLOW"}]}),
        );
        let stored = Self::generic("CANCELED", meta.clone(), &call, None);
        let presented = Self::resultless_command(&meta, &cmd, &self.ws.clone(), "CANCELED");
        let presented = if bypass { None } else { Some(presented) };
        self.finish(planner, call, stored, presented, "canceled".into(), false)
    }

    fn builtin_view_file(
        &mut self,
        pidx: usize,
        idx: usize,
        lines: bool,
        skill: bool,
    ) -> (StepJson, StepJson) {
        let path = if skill {
            let names = ["deploy", "release-notes", "db-migrate"];
            format!("{}/.agy/skills/{}/SKILL.md", self.ws, self.r.pick(&names))
        } else {
            format!("{}/tmp/pipe-{}", self.ws, self.r.range(1, 9))
        };
        let (s, e) = (self.r.range(1, 30) as usize, 0usize);
        let e = if lines {
            s + self.r.range(0, 60) as usize
        } else {
            e
        };
        let mut args = vec![("AbsolutePath", js(&path))];
        if lines {
            args.push(("EndLine", e.to_string()));
            args.push(("StartLine", s.to_string()));
        }
        let call = self.call("view_file", args);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "ERROR"],
            Self::builtin(),
        );
        let short = if skill {
            "permission denied".to_string()
        } else {
            "path is a device, pipe, or socket, not a standard file".to_string()
        };
        let error = json!({"shortError": short, "fullError": format!("open {path}: {short}")});
        let mut stored = Self::generic("ERROR", meta.clone(), &call, None);
        stored["error"] = error.clone();
        let mut vf = json!({"absolutePathUri": format!("file://{path}")});
        if lines {
            vf["startLine"] = json!(s - 1);
            vf["endLine"] = json!(e - 1);
        }
        if skill {
            vf["isSkillFile"] = Value::Bool(true);
            let t = self.turn_of.get(idx).copied().unwrap_or(0);
            if let Some(regs) = self.registrations.get_mut(t) {
                regs.push(json!({"path": path, "kind": "KIND_SKILL", "enabled": true}));
            }
        }
        let presented = json!({"type": ty("VIEW_FILE"), "status": status("ERROR"), "metadata": meta,
            "error": error, "viewFile": vf});
        self.finish(planner, call, stored, Some(presented), short, true)
    }

    // ---- payload-free wrappers -----------------------------------------------

    fn task_id(&mut self) -> String {
        format!("{}/task-{}", self.plan.id, self.r.range(3, 400))
    }

    fn manage_task(&mut self, pidx: usize, idx: usize, kind: TaskKind) -> (StepJson, StepJson) {
        let tid = self.task_id();
        let desc = "cargo test --workspace (background)";
        let task_meta =
            json!({"task_description": desc, "task_id": tid, "tool_name": "run_command"});
        let (name, args, result, st): (&str, Vec<(&str, String)>, Value, &str) = match kind {
            TaskKind::Status => (
                "manage_task",
                vec![("Action", js("status")), ("TaskId", js(&tid))],
                json!({"result": format!("Task {tid} is running (elapsed 42s)"), "metadata": task_meta,
                    "stepRenderInfo": render("Task status", "**running** · 42s", "Checked")}),
                "DONE",
            ),
            TaskKind::List => (
                "manage_task",
                vec![("Action", js("list"))],
                json!({"result": "1 task running", "stepRenderInfo": render("Tasks", "1 running", "Listed")}),
                "DONE",
            ),
            TaskKind::Kill => (
                "manage_task",
                vec![("Action", js("kill")), ("TaskId", js(&tid))],
                json!({"result": format!("Killed {tid}"), "metadata": task_meta,
                    "stepRenderInfo": render("Task killed", "stopped", "Killed")}),
                "DONE",
            ),
            TaskKind::SendMessage => (
                "send_message",
                vec![
                    ("ConversationId", js(&self.plan.root.clone())),
                    ("Message", js(&text::sentence(&mut self.r, 10))),
                ],
                json!({"result": "Message delivered", "stepRenderInfo": render("Message", "delivered ✓", "Sent")}),
                "DONE",
            ),
            TaskKind::Error => (
                "manage_task",
                vec![("Action", js("status")), ("TaskId", js(&tid))],
                json!({"result": format!("no task {tid}"), "stepRenderInfo": render("Task status", "not found", "Checked")}),
                "ERROR",
            ),
        };
        let call = self.call(name, args);
        let planner = self.planner(pidx, Some(&call));
        let hist: &[&str] = if st == "DONE" {
            &["PENDING", "RUNNING", "DONE"]
        } else {
            &["PENDING", "RUNNING", "ERROR"]
        };
        let meta = self.meta(idx, "MODEL", Some(&call), hist, Self::builtin());
        let shown = result["result"].as_str().unwrap_or("").to_string();
        let mut stored = Self::generic(st, meta, &call, Some(result));
        if st == "ERROR" {
            stored["error"] = json!({"shortError": "task not found", "fullError": format!("manage_task: task {tid} not found")});
        }
        self.finish(planner, call, stored, None, shown, st == "ERROR")
    }

    fn send_input(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let tid = self.task_id();
        let input = "y\n";
        let call = self.call(
            "manage_task",
            vec![
                ("Action", js("send_input")),
                ("Input", js(input)),
                ("TaskId", js(&tid)),
            ],
        );
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::allow_hook(),
        );
        let result = json!({"result": format!("Sent input to {tid}"),
            "metadata": {"input": input, "task_id": tid, "task_description": "npm init (interactive)", "tool_name": "run_command"},
            "fullOutputUri": format!("file://{}/.gemini/tasks/{}.log", self.ws, idx),
            "stepRenderInfo": render("Input sent", "`y`", "Sent")});
        let shown = format!("Sent input to {tid}");
        let stored = Self::generic("DONE", meta, &call, Some(result));
        self.finish(planner, call, stored, None, shown, false)
    }

    fn schedule(
        &mut self,
        pidx: usize,
        idx: usize,
        task_details: bool,
        st: &str,
    ) -> (StepJson, StepJson) {
        let secs = self.r.range(30, 3600);
        let call = self.call(
            "schedule",
            vec![
                ("DurationSeconds", secs.to_string()),
                ("Prompt", js("check whether the deploy finished")),
                ("TimerCondition", js("elapsed")),
            ],
        );
        let planner = self.planner(pidx, Some(&call));
        let hist = ["PENDING", st];
        let meta = self.meta(idx, "MODEL", Some(&call), &hist, Self::builtin());
        let result = json!({"result": format!("Timer set for {secs}s"), "stepRenderInfo": render("Timer", &format!("{secs}s"), "Scheduled")});
        let mut stored = Self::generic(st, meta, &call, Some(result));
        if task_details {
            stored["taskDetails"] = json!({"id": format!("{}/task-{idx}", self.plan.id), "shortDescription": format!("timer {secs}s")});
        }
        self.finish(
            planner,
            call,
            stored,
            None,
            format!("Timer set for {secs}s"),
            false,
        )
    }

    fn schedule_error(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let (p, mut t) = self.schedule(pidx, idx, false, "ERROR");
        t.stored["error"] = json!({"shortError": "scheduler unavailable", "fullError": "schedule: scheduler unavailable"});
        t.is_error = true;
        (p, t)
    }

    fn manage_subagents(
        &mut self,
        pidx: usize,
        idx: usize,
        extra_key: bool,
    ) -> (StepJson, StepJson) {
        let a = self.r.uuid();
        let b = self.r.uuid();
        let call = self.call("manage_subagents", vec![("Action", js("kill"))]);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let mut md = json!({"killed_conversation_ids": format!("{a},{b}")});
        if extra_key {
            md["reason"] = Value::String("requested by the user".into());
        }
        let result = json!({"result": "Killed 2 subagents", "metadata": md,
            "stepRenderInfo": render("Subagents", "2 killed", "Killed")});
        let stored = Self::generic("DONE", meta, &call, Some(result));
        self.finish(
            planner,
            call,
            stored,
            None,
            "Killed 2 subagents".into(),
            false,
        )
    }

    fn define_subagent(
        &mut self,
        pidx: usize,
        idx: usize,
        definition: bool,
    ) -> (StepJson, StepJson) {
        let args: Vec<(&str, String)> = if definition {
            let def = json!({"name": "reviewer", "description": "Reviews diffs", "system_prompt": "Review carefully."}).to_string();
            vec![("definition", js(&def))]
        } else {
            vec![
                ("description", js("Reviews diffs")),
                ("enable_mcp_tools", "false".into()),
                ("enable_subagent_tools", "false".into()),
                ("enable_write_tools", "true".into()),
                ("name", js("reviewer")),
                ("system_prompt", js("Review carefully; be terse. ✍️")),
            ]
        };
        let call = self.call("define_subagent", args);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let result = json!({"result": "Defined subagent reviewer", "stepRenderInfo": render("Subagent", "reviewer", "Defined")});
        let stored = Self::generic("DONE", meta, &call, Some(result));
        self.finish(
            planner,
            call,
            stored,
            None,
            "Defined subagent reviewer".into(),
            false,
        )
    }

    fn list_permissions(
        &mut self,
        pidx: usize,
        idx: usize,
        with_arg: bool,
    ) -> (StepJson, StepJson) {
        let args = if with_arg {
            vec![("Scope", js("all"))]
        } else {
            vec![]
        };
        let call = self.call("list_permissions", args);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let result = json!({"result": "Allowed: run_command `git *`; read_file `**`",
            "stepRenderInfo": render("Permissions", "2 grants", "Listed")});
        let stored = Self::generic("DONE", meta, &call, Some(result));
        self.finish(planner, call, stored, None, "2 grants".into(), false)
    }

    fn ask_permission(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let cmd = self.plain_command();
        let call = self.call(
            "ask_permission",
            vec![
                ("Action", js("run_command")),
                ("Reason", js("needed to run the test suite")),
                ("Target", js(&cmd)),
            ],
        );
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let result = json!({"result": "Permission granted", "stepRenderInfo": render("Permission", &cmd, "Granted")});
        let stored = Self::generic("DONE", meta, &call, Some(result));
        self.finish(
            planner,
            call,
            stored,
            None,
            "Permission granted".into(),
            false,
        )
    }

    fn generate_image_any(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let (args, prompt, name) = self.image_args();
        let call = self.call("generate_image", args);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let m = self.media(&name);
        let uri = m["uri"].clone();
        let payload = json!({"prompt": prompt, "imageName": name, "aspectRatio": "16:9",
            "modelName": "imagen-4", "imageUri": uri});
        let shown = format!("Generated {name}.png");
        let stored = Self::generic(
            "DONE",
            meta.clone(),
            &call,
            Some(
                json!({"result": shown, "media": [m.clone()], "payload": any_of(GENERATE_IMAGE_ANY, &payload)}),
            ),
        );
        let presented = json!({"type": ty("GENERATE_IMAGE"), "status": status("DONE"), "metadata": meta,
            "generateImage": {"prompt": prompt, "imageName": name, "aspectRatio": "16:9",
                "modelName": "imagen-4", "generatedMedia": m}});
        self.finish(planner, call, stored, Some(presented), shown, false)
    }

    // ---- modern (agy 1.4.x) tool payloads: tools143, tools144, skill146 -------

    fn modern(&mut self, pidx: usize, idx: usize, m: ModernKind) -> (StepJson, StepJson) {
        use ModernKind as M;
        match m {
            M::RunCommand { background } => self.modern_run_command(pidx, idx, background),
            M::CanceledBackground => self.modern_canceled_background(pidx, idx),
            M::ReadFile { skill, range } => self.modern_read_file(pidx, idx, skill, range),
            M::FileCreate { empty } => self.modern_file_edit(pidx, idx, true, empty),
            M::FileEdit => self.modern_file_edit(pidx, idx, false, false),
            M::InvokeSubagent { inherit } => self.modern_invoke_subagent(pidx, idx, inherit),
            M::ManageTask(a) => self.modern_manage_task(pidx, idx, a),
            M::Schedule => self.modern_schedule(pidx, idx),
            M::ManageSubagentsList => self.modern_manage_subagents(pidx, idx),
            M::Ide225Read { permission, offset } => {
                self.modern_ide225_read(pidx, idx, permission, offset)
            }
            M::ArtifactCreate => self.modern_artifact(pidx, idx, true),
            M::ArtifactEdit => self.modern_artifact(pidx, idx, false),
            M::Finish => self.modern_finish(pidx, idx),
            M::MissingFileRead => self.modern_missing_file(pidx, idx),
            M::ReplayCopiedWait => self.modern_replay_copied(pidx, idx),
            M::ImageRead(k) => self.modern_image_read(pidx, idx, k),
        }
    }

    /// The stored step with result metadata `md` (the payload-derived keys
    /// the ordinary presentation adds).
    fn with_result_metadata(stored: &Value, md: Value) -> Value {
        let mut p = stored.clone();
        p["generic"]["result"]["metadata"] = md;
        p
    }

    fn modern_run_command(
        &mut self,
        pidx: usize,
        idx: usize,
        background: bool,
    ) -> (StepJson, StepJson) {
        let cmd = text::command(&mut self.r);
        let args = self.cmd_args(&cmd, if background { 500 } else { 5000 });
        let call = self.call("run_command", args);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let n = self.sized(40, 2000);
        let out = text::output(&mut self.r, n);
        let mut payload =
            json!({"commandLine": cmd, "cwd": self.ws, "outcome": "OUTCOME_COMPLETED"});
        let mut rc = json!({"commandLine": cmd, "proposedCommandLine": cmd, "cwd": self.ws,
            "blocking": !background, "combinedOutput": {"full": out}});
        if background {
            payload["background"] = json!(true);
        } else {
            let code = if self.r.chance(0.12) { 1 } else { 0 };
            payload["exitCode"] = json!(code);
            rc["exitCode"] = json!(code);
        }
        let mut stored = Self::generic(
            "DONE",
            meta.clone(),
            &call,
            Some(json!({"result": out, "payload": any_of(&tools_url("RunCommand"), &payload)})),
        );
        let mut presented = json!({"type": ty("RUN_COMMAND"), "status": status("DONE"), "metadata": meta, "runCommand": rc});
        if background {
            let td = json!({"id": format!("{}/task-{idx}", self.plan.id), "commandLine": cmd,
                "shortDescription": format!("{cmd} (background)"), "movedToBackgroundAt": self.ts(600)});
            stored["taskDetails"] = td.clone();
            presented["taskDetails"] = td;
        }
        self.finish(planner, call, stored, Some(presented), out, false)
    }

    fn modern_canceled_background(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let cmd = text::command(&mut self.r);
        let args = self.cmd_args(&cmd, 5000);
        let call = self.call("run_command", args);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "CANCELED"],
            Self::builtin(),
        );
        let td = json!({"id": format!("{}/task-{idx}", self.plan.id),
            "logUri": format!("file://{}/.gemini/tasks/{idx}.log", self.ws), "commandLine": cmd,
            "shortDescription": format!("{cmd} (background)"), "movedToBackgroundAt": self.ts(600)});
        let mut stored = Self::generic(
            "CANCELED",
            meta.clone(),
            &call,
            Some(json!({"stepRenderInfo": render("Command", &cmd, "Canceled")})),
        );
        stored["taskDetails"] = td.clone();
        let presented = json!({"type": ty("RUN_COMMAND"), "status": status("CANCELED"), "metadata": meta,
            "taskDetails": td,
            "runCommand": {"commandLine": cmd, "proposedCommandLine": cmd, "cwd": self.ws, "combinedOutput": {}}});
        self.finish(planner, call, stored, Some(presented), String::new(), false)
    }

    fn modern_read_file(
        &mut self,
        pidx: usize,
        idx: usize,
        skill: bool,
        range: bool,
    ) -> (StepJson, StepJson) {
        let path = if skill {
            let name = *self.r.pick(&["release", "deploy", "review"]);
            if self.r.chance(0.5) {
                format!("{}/.agy/skills/{name}/SKILL.md", self.ws)
            } else {
                format!("{}/.agy/plugins/toolkit/skills/{name}/SKILL.md", self.ws)
            }
        } else {
            text::abs_path(&mut self.r, &self.ws.clone())
        };
        let lines = self.sized(5, 160);
        let start = self.r.range(1, 60) as usize;
        let end = start + lines - 1;
        let mut args = vec![("AbsolutePath", js(&path))];
        let mut payload = json!({"path": path, "outcome": "OUTCOME_COMPLETED"});
        let mut vf = json!({"absolutePathUri": format!("file://{path}"), "isSkillFile": skill});
        if range {
            args.push(("EndLine", end.to_string()));
            args.push(("StartLine", start.to_string()));
            payload["startLine"] = json!(start);
            payload["endLine"] = json!(end);
            vf["startLine"] = json!(start - 1);
            vf["endLine"] = json!(end - 1);
        }
        let call = self.call("read_file", args);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let content = text::file_content(&mut self.r, lines);
        let shown = truncate(&content, 800);
        vf["content"] = json!(shown);
        let stored = Self::generic(
            "DONE",
            meta.clone(),
            &call,
            Some(json!({"result": shown, "payload": any_of(&tools_url("ReadFile"), &payload)})),
        );
        let presented = json!({"type": ty("VIEW_FILE"), "status": status("DONE"), "metadata": meta, "viewFile": vf});
        self.finish(planner, call, stored, Some(presented), shown, false)
    }

    fn modern_file_edit(
        &mut self,
        pidx: usize,
        idx: usize,
        create: bool,
        empty: bool,
    ) -> (StepJson, StepJson) {
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let uri = format!("file://{path}");
        let (call, diff, spec, edit) = if create {
            let content = if empty {
                String::new()
            } else {
                let n = self.sized(3, 60);
                text::file_content(&mut self.r, n)
            };
            let diff = if empty {
                String::new()
            } else {
                let added: String = content.lines().map(|l| format!("+{l}\n")).collect();
                format!(
                    "--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n{added}",
                    content.lines().count()
                )
            };
            let call = self.call(
                "write_to_file",
                vec![("CodeContent", js(&content)), ("TargetFile", js(&path))],
            );
            let spec = json!({"createFile": {"path": {"absoluteUri": uri}}});
            let edit = json!({"absoluteUri": uri, "createFile": true, "unifiedDiff": diff});
            (call, diff, spec, edit)
        } else {
            let instr = text::sentence(&mut self.r, 9);
            let n = self.sized(3, 40);
            let content = text::file_content(&mut self.r, n);
            let diff = text::diff(&mut self.r, &path);
            let call = self.call(
                "replace_file_content",
                vec![
                    ("Instruction", js(&instr)),
                    ("ReplacementContent", js(&content)),
                    ("TargetFile", js(&path)),
                ],
            );
            let spec = json!({"command": {"instruction": instr, "isEdit": true, "file": {"absoluteUri": uri}}});
            let edit = json!({"absoluteUri": uri, "unifiedDiff": diff});
            (call, diff, spec, edit)
        };
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let kind = if create { "KIND_CREATE" } else { "KIND_EDIT" };
        let payload =
            json!({"path": path, "kind": kind, "diff": diff, "outcome": "OUTCOME_COMPLETED"});
        let shown = format!("{} {path}", if create { "Created" } else { "Edited" });
        let stored = Self::generic(
            "DONE",
            meta.clone(),
            &call,
            Some(json!({"result": shown, "payload": any_of(&tools_url("FileEdit"), &payload)})),
        );
        let presented = json!({"type": ty("CODE_ACTION"), "status": status("DONE"), "metadata": meta,
            "codeAction": {"actionSpec": spec, "actionResult": {"edit": edit}}});
        self.finish(planner, call, stored, Some(presented), shown, false)
    }

    fn modern_invoke_subagent(
        &mut self,
        pidx: usize,
        idx: usize,
        inherit: bool,
    ) -> (StepJson, StepJson) {
        let prompt = text::sentence(&mut self.r, 10);
        let mut args = vec![("Prompt", js(&prompt))];
        if inherit {
            args.push(("Workspace", js("inherit")));
        }
        let call = self.call("invoke_subagent", args);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let kids: Vec<String> = (0..self.r.range(1, 2)).map(|_| self.r.uuid()).collect();
        let specs: Vec<Value> = (0..kids.len())
            .map(|i| json!({"name": format!("helper-{i}"), "prompt": prompt, "workspace": "inherit"}))
            .collect();
        let results: Vec<Value> = kids
            .iter()
            .map(|k| json!({"conversationId": k,
                "logUri": format!("file://{}/.gemini/antigravity-cli/brain/{k}/.system_generated/logs/transcript.jsonl", self.ws),
                "workspaceUri": format!("file://{}", self.ws)}))
            .collect();
        let payload = json!({"specs": specs, "results": results, "outcome": "OUTCOME_COMPLETED"});
        let shown = "Subagents finished.".to_string();
        let stored = Self::generic(
            "DONE",
            meta.clone(),
            &call,
            Some(
                json!({"result": shown, "payload": any_of(&tools_url("InvokeSubagent"), &payload)}),
            ),
        );
        let presented = json!({"type": ty("INVOKE_SUBAGENT"), "status": status("DONE"), "metadata": meta,
            "invokeSubagent": {"specs": specs, "results": results}});
        self.finish(planner, call, stored, Some(presented), shown, false)
    }

    fn modern_manage_task(&mut self, pidx: usize, idx: usize, a: u8) -> (StepJson, StepJson) {
        let action = ["status", "list", "kill"][usize::from(a % 3)];
        let task_id = format!("{}/task-{}", self.plan.id, self.r.range(1, 40));
        let desc = text::sentence(&mut self.r, 4);
        let task_status = if action == "kill" {
            "killed"
        } else {
            "running"
        };
        let mut args = vec![("Action", js(action))];
        if action != "list" {
            args.push(("TaskId", js(&task_id)));
        }
        let call = self.call("manage_task", args);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let payload = json!({"action": action, "tasks": [{"taskId": task_id, "description": desc, "status": task_status}],
            "outcome": "OUTCOME_COMPLETED"});
        let shown = format!("{task_id}: {task_status}");
        let stored = Self::generic(
            "DONE",
            meta,
            &call,
            Some(json!({"result": shown,
            "payload": any_of(&tools_url("ManageTask"), &payload),
            "stepRenderInfo": render("Task", &shown, "Checked")})),
        );
        let presented = Self::with_result_metadata(
            &stored,
            json!({"action": action, "task_id": task_id,
            "task_description": desc, "task_status": task_status}),
        );
        self.finish(planner, call, stored, Some(presented), shown, false)
    }

    fn modern_schedule(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let secs = self.r.range(30, 3600);
        let prompt = "check whether the deploy finished";
        let call = self.call(
            "schedule",
            vec![
                ("DurationSeconds", secs.to_string()),
                ("Prompt", js(prompt)),
            ],
        );
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "CANCELED"],
            Self::builtin(),
        );
        let payload = json!({"durationSeconds": secs.to_string(), "prompt": prompt, "canceled": true,
            "outcome": "OUTCOME_CANCELED"});
        let shown = format!("Timer for {secs}s canceled");
        let stored = Self::generic(
            "CANCELED",
            meta,
            &call,
            Some(json!({"result": shown,
            "payload": any_of(&tools_url("Schedule"), &payload),
            "stepRenderInfo": render("Timer", &format!("{secs}s"), "Canceled")})),
        );
        let presented = Self::with_result_metadata(
            &stored,
            json!({"duration_seconds": secs.to_string(), "canceled": "true"}),
        );
        self.finish(planner, call, stored, Some(presented), shown, false)
    }

    fn modern_manage_subagents(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let a = self.r.uuid();
        let b = self.r.uuid();
        let call = self.call("manage_subagents", vec![("Action", js("list"))]);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let payload =
            json!({"action": "list", "conversationIds": [a, b], "outcome": "OUTCOME_COMPLETED"});
        let shown = "2 subagents".to_string();
        let stored = Self::generic(
            "DONE",
            meta,
            &call,
            Some(json!({"result": shown,
            "payload": any_of(&tools_url("ManageSubagents"), &payload),
            "stepRenderInfo": render("Subagents", "2 running", "Listed")})),
        );
        let presented = Self::with_result_metadata(
            &stored,
            json!({"action": "list", "conversation_ids": format!("{a},{b}")}),
        );
        self.finish(planner, call, stored, Some(presented), shown, false)
    }

    // ---- issue 27: ide225 / finish147 / replay147 ----

    /// An approved read's two permission records (ide225 keeps both).
    fn read_records(path: &str) -> (Value, Value) {
        let perms = json!({"permissionGrants": [{"action": "read_file", "allow": true,
            "resource": {"action": "read_file", "target": path}, "target": path}]});
        let inter = json!([{"request": {"permission": {"resource": {"action": "read_file", "target": path},
                "actionDescription": format!("Read {path}")}},
            "response": {"permission": {"allow": true, "persistGrants": {}}}}]);
        (perms, inter)
    }

    fn modern_ide225_read(
        &mut self,
        pidx: usize,
        idx: usize,
        permission: bool,
        offset: bool,
    ) -> (StepJson, StepJson) {
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let lines = self.sized(5, 120);
        let start = self.r.range(1, 60) as usize;
        let end = start + lines - 1;
        let range = self.r.chance(0.5);
        let mut args = vec![("AbsolutePath", js(&path))];
        let mut payload = json!({"path": path, "outcome": "OUTCOME_COMPLETED"});
        let mut vf = json!({"absolutePathUri": format!("file://{path}")});
        if range {
            args.push(("EndLine", end.to_string()));
            args.push(("StartLine", start.to_string()));
            payload["startLine"] = json!(start);
            payload["endLine"] = json!(end);
            vf["startLine"] = json!(start - 1);
            vf["endLine"] = json!(end - 1);
        }
        if offset {
            args.push(("ByteOffset", "0".into()));
            payload["byteOffset"] = json!("0");
        }
        let call = self.call("read_file", args);
        let planner = self.planner(pidx, Some(&call));
        let history: &[&str] = if permission {
            &["PENDING", "RUNNING", "WAITING", "RUNNING", "DONE"]
        } else {
            &["PENDING", "RUNNING", "DONE"]
        };
        let meta = self.meta(idx, "MODEL", Some(&call), history, Self::builtin());
        let content = text::file_content(&mut self.r, lines);
        let shown = truncate(&content, 800);
        vf["content"] = json!(shown);
        let mut stored = Self::generic(
            "DONE",
            meta.clone(),
            &call,
            Some(json!({"result": shown, "payload": any_of(&tools_url("ReadFile"), &payload)})),
        );
        let mut presented = json!({"type": ty("VIEW_FILE"), "status": status("DONE"), "metadata": meta, "viewFile": vf});
        if permission {
            let (perms, inter) = Self::read_records(&path);
            stored["permissions"] = perms.clone();
            stored["completedInteractions"] = inter.clone();
            presented["permissions"] = perms;
            presented["completedInteractions"] = inter;
        }
        self.finish(planner, call, stored, Some(presented), shown, false)
    }

    fn modern_artifact(&mut self, pidx: usize, idx: usize, create: bool) -> (StepJson, StepJson) {
        let name = *self
            .r
            .pick(&["task", "implementation_plan", "walkthrough", "notes"]);
        let path = format!(
            "{}/.gemini/antigravity/brain/{}/{name}.md",
            self.ws, self.plan.id
        );
        let uri = format!("file://{path}");
        let n = self.sized(3, 40);
        let content = text::file_content(&mut self.r, n);
        let (call, diff, spec, edit, meta_payload) = if create {
            let added: String = content.lines().map(|l| format!("+{l}\n")).collect();
            let diff = format!(
                "--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n{added}",
                content.lines().count()
            );
            let summary = text::sentence(&mut self.r, 8);
            let facing = self.r.chance(0.7);
            let updated = self.ts(400);
            let arg = format!(
                "{{\"Summary\":{},\"UserFacing\":{facing},\"RequestFeedback\":false}}",
                js(&summary)
            );
            let call = self.call(
                "write_to_file",
                vec![
                    ("ArtifactMetadata", arg),
                    ("CodeContent", js(&content)),
                    ("TargetFile", js(&path)),
                ],
            );
            let spec = json!({"createFile": {"path": {"absoluteUri": uri}}});
            let edit = json!({"absoluteUri": uri, "createFile": true, "unifiedDiff": diff});
            let meta = json!({"summary": summary, "updatedAt": updated, "userFacing": facing});
            (call, diff, spec, edit, Some(meta))
        } else {
            let instr = text::sentence(&mut self.r, 9);
            let diff = text::diff(&mut self.r, &path);
            let call = self.call(
                "replace_file_content",
                vec![
                    ("Instruction", js(&instr)),
                    ("ReplacementContent", js(&content)),
                    ("TargetFile", js(&path)),
                ],
            );
            let spec = json!({"command": {"instruction": instr, "isEdit": true, "file": {"absoluteUri": uri}}});
            let edit = json!({"absoluteUri": uri, "unifiedDiff": diff});
            (call, diff, spec, edit, None)
        };
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let kind = if create { "KIND_CREATE" } else { "KIND_EDIT" };
        let mut payload = json!({"path": path, "kind": kind, "diff": diff, "isArtifactFile": true,
            "outcome": "OUTCOME_COMPLETED"});
        let mut ca =
            json!({"actionSpec": spec, "actionResult": {"edit": edit}, "isArtifactFile": true});
        if let Some(m) = meta_payload {
            payload["artifactMetadata"] = m.clone();
            ca["artifactMetadata"] = m;
        }
        let shown = format!("{} {path}", if create { "Created" } else { "Edited" });
        let stored = Self::generic(
            "DONE",
            meta.clone(),
            &call,
            Some(json!({"result": shown, "payload": any_of(&tools_url("FileEdit"), &payload)})),
        );
        let presented = json!({"type": ty("CODE_ACTION"), "status": status("DONE"), "metadata": meta,
            "codeAction": ca});
        self.finish(planner, call, stored, Some(presented), shown, false)
    }

    fn modern_finish(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let summary = text::sentence(&mut self.r, 8);
        let passed = self.r.chance(0.8);
        let call = self.call(
            "finish",
            vec![("Passed", passed.to_string()), ("Summary", js(&summary))],
        );
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let schema = "{\"type\":\"object\",\"properties\":{\"Passed\":{\"type\":\"boolean\"},\"Summary\":{\"type\":\"string\"}},\"required\":[\"Passed\",\"Summary\"]}";
        let payload = json!({"resultSchema": schema, "resultJson": call.args_json(),
            "outcome": "OUTCOME_COMPLETED"});
        let shown = "Finished.".to_string();
        let stored = Self::generic(
            "DONE",
            meta,
            &call,
            Some(json!({"result": shown, "payload": any_of(&tools_url("Finish"), &payload)})),
        );
        self.finish(planner, call, stored, None, shown, false)
    }

    fn modern_missing_file(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let call = self.call("read_file", vec![("AbsolutePath", js(&path))]);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let payload = json!({"path": path, "notFound": true, "outcome": "OUTCOME_COMPLETED"});
        let shown = format!("File not found: {path}");
        let stored = Self::generic(
            "DONE",
            meta,
            &call,
            Some(json!({"result": shown, "payload": any_of(&tools_url("ReadFile"), &payload)})),
        );
        self.finish(planner, call, stored, None, shown, false)
    }

    /// A tools143 command whose daemon presentation copies the stored wait
    /// (replay147's other complete form), built from the same call.
    fn modern_replay_copied(&mut self, pidx: usize, idx: usize) -> (StepJson, StepJson) {
        let background = self.r.chance(0.3);
        let (p, mut t) = self.modern_run_command(pidx, idx, background);
        let wait = t.call.as_ref().and_then(|c| {
            c.args
                .iter()
                .find(|(k, _)| k == "WaitMsBeforeAsync")
                .map(|(_, v)| v.clone())
        });
        if let (Some(w), Some(pr)) = (wait, t.presented.as_mut()) {
            pr["runCommand"]["waitMsBeforeAsync"] = Value::String(w);
        }
        (p, t)
    }

    fn modern_image_read(&mut self, pidx: usize, idx: usize, k: u8) -> (StepJson, StepJson) {
        let (mime, ext, magic): (&str, &str, &[u8]) = match k % 3 {
            0 => ("image/jpeg", "jpg", &[0xff, 0xd8, 0xff, 0xe0]),
            1 => (
                "image/png",
                "png",
                &[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a],
            ),
            _ => ("image/webp", "webp", b"RIFF\x00\x00\x00\x00WEBP"),
        };
        let name = *self.r.pick(&["diagram", "screenshot", "logo", "mockup"]);
        let path = format!("{}/assets/{name}.{ext}", self.ws);
        let n = self.r.range(64, 2048) as usize;
        let mut data = magic.to_vec();
        while data.len() < n {
            data.push(self.r.below(256) as u8);
        }
        let call = self.call("read_file", vec![("AbsolutePath", js(&path))]);
        let planner = self.planner(pidx, Some(&call));
        let meta = self.meta(
            idx,
            "MODEL",
            Some(&call),
            &["PENDING", "RUNNING", "DONE"],
            Self::builtin(),
        );
        let media = json!({"mimeType": mime, "inlineData": base64_lite::encode(&data)});
        let payload = json!({"path": path, "media": [media.clone()], "numBytes": data.len(),
            "outcome": "OUTCOME_COMPLETED"});
        let shown = format!("Read image {path} ({mime}, {} bytes)", data.len());
        let stored = Self::generic(
            "DONE",
            meta.clone(),
            &call,
            Some(json!({"result": shown, "payload": any_of(&tools_url("ReadFile"), &payload)})),
        );
        let presented = json!({"type": ty("VIEW_FILE"), "status": status("DONE"), "metadata": meta,
            "viewFile": {"absolutePathUri": format!("file://{path}"), "content": shown,
                "mediaData": media, "numBytes": data.len()}});
        self.finish(planner, call, stored, Some(presented), shown, false)
    }

    /// A wrapper shape one bound outside a rule; the daemon passes it through.
    fn unqualified(&mut self, pidx: usize, idx: usize, kind: UnqKind) -> (StepJson, StepJson) {
        let (p, mut t) = match kind {
            UnqKind::HookDeniedExtraArg => {
                let (p, mut t) = self.hook_denied(pidx, idx);
                add_arg(&mut t, "RunPersistent", "false");
                (p, t)
            }
            UnqKind::CanceledPromptBypass => self.canceled_prompt(pidx, idx, true),
            UnqKind::ListPermissionsArg => self.list_permissions(pidx, idx, true),
            UnqKind::PermissionNativeRunning => {
                let (p, mut t) = self.permission_command(pidx, idx);
                t.stored["generic"]["result"]["payload"]["status"] =
                    Value::String(status("RUNNING"));
                (p, t)
            }
            UnqKind::ManageSubagentsExtraKey => self.manage_subagents(pidx, idx, true),
            UnqKind::OuterErrorInvokeSubagent => {
                let (p, mut t) = self.invoke_subagent(pidx, idx);
                let err = json!({"shortError": "subagent crashed", "fullError": "invoke_subagent: subagent crashed"});
                t.stored["status"] = Value::String(status("ERROR"));
                t.stored["error"] = err.clone();
                t.stored["generic"]["result"]["payload"]["status"] = Value::String(status("ERROR"));
                t.stored["generic"]["result"]["payload"]["error"] = err;
                (p, t)
            }
            UnqKind::AppendBadValue => self.write_append(pidx, idx, "\"yes\""),
            UnqKind::UnknownTool => {
                let call = self.call("todo_write", vec![("Todos", js("[\"write tests\"]"))]);
                let planner = self.planner(pidx, Some(&call));
                let meta = self.meta(
                    idx,
                    "MODEL",
                    Some(&call),
                    &["PENDING", "RUNNING", "DONE"],
                    Self::builtin(),
                );
                let stored = Self::generic(
                    "DONE",
                    meta,
                    &call,
                    Some(
                        json!({"result": "1 todo", "stepRenderInfo": render("Todos", "1", "Updated")}),
                    ),
                );
                self.finish(planner, call, stored, None, "1 todo".into(), false)
            }
            UnqKind::ScheduleInvalid => self.schedule(pidx, idx, false, "INVALID"),
            UnqKind::ModernReadPath => {
                let (p, mut t) = self.modern_read_file(pidx, idx, false, false);
                let path = format!("{}/../etc/hosts", self.ws);
                t.stored["generic"]["result"]["payload"]["path"] = json!(path);
                set_arg(&mut t, "AbsolutePath", &js(&path));
                (p, t)
            }
            UnqKind::ModernCommandFailed => {
                let (p, mut t) = self.modern_run_command(pidx, idx, false);
                t.stored["generic"]["result"]["payload"]["outcome"] = json!("OUTCOME_FAILED");
                (p, t)
            }
            UnqKind::ModernEditArtifact => {
                let (p, mut t) = self.modern_file_edit(pidx, idx, true, false);
                t.stored["generic"]["result"]["payload"]["isArtifactFile"] = json!(true);
                (p, t)
            }
            UnqKind::ModernSubagentTaskMode => {
                let (p, mut t) = self.modern_invoke_subagent(pidx, idx, false);
                t.stored["generic"]["result"]["payload"]["taskMode"] = json!(true);
                (p, t)
            }
            UnqKind::ModernSubagentWorkspace => {
                let (p, mut t) = self.modern_invoke_subagent(pidx, idx, true);
                let ws = js(&format!("{}/scratch", self.ws));
                set_arg(&mut t, "Workspace", &ws);
                (p, t)
            }
            UnqKind::ModernTaskTwoTasks => {
                let (p, mut t) = self.modern_manage_task(pidx, idx, 1);
                let extra =
                    json!({"taskId": format!("{}/task-99", self.plan.id), "status": "running"});
                if let Some(tasks) =
                    t.stored["generic"]["result"]["payload"]["tasks"].as_array_mut()
                {
                    tasks.push(extra);
                }
                (p, t)
            }
            UnqKind::ModernTimerNotCanceled => {
                let (p, mut t) = self.modern_schedule(pidx, idx);
                t.stored["generic"]["result"]["payload"]["canceled"] = json!(false);
                (p, t)
            }
            UnqKind::ModernSubagentsThreeIds => {
                let (p, mut t) = self.modern_manage_subagents(pidx, idx);
                let c = self.r.uuid();
                if let Some(ids) =
                    t.stored["generic"]["result"]["payload"]["conversationIds"].as_array_mut()
                {
                    ids.push(json!(c));
                }
                (p, t)
            }
            UnqKind::ModernBackgroundWait => {
                let (p, mut t) = self.modern_canceled_background(pidx, idx);
                set_arg(&mut t, "WaitMsBeforeAsync", "500");
                (p, t)
            }
            UnqKind::ModernPermissionGrant => {
                let (p, mut t) = self.modern_read_file(pidx, idx, false, true);
                let path = t.stored["generic"]["result"]["payload"]["path"].clone();
                t.stored["permissions"] = json!({"permissionGrants": [{"action": "read_file", "allow": true,
                    "target": path.clone(), "resource": {"action": "read_file", "target": path}}]});
                (p, t)
            }
            UnqKind::ModernToolName => {
                let (mut p, mut t) = self.modern_read_file(pidx, idx, false, false);
                rename_tool(&mut p, &mut t, "view_file");
                (p, t)
            }
            UnqKind::ModernReadRange => {
                let (p, mut t) = self.modern_read_file(pidx, idx, false, true);
                t.stored["generic"]["result"]["payload"]["startLine"] = json!(0);
                set_arg(&mut t, "StartLine", "0");
                (p, t)
            }
            UnqKind::ModernEditKindMismatch => {
                let (p, mut t) = self.modern_file_edit(pidx, idx, false, false);
                t.stored["generic"]["result"]["payload"]["kind"] = json!("KIND_CREATE");
                (p, t)
            }
            UnqKind::ModernStoredMetadata => {
                let (p, mut t) = self.modern_manage_task(pidx, idx, 1);
                t.stored["generic"]["result"]["metadata"] = json!({"action": "list"});
                (p, t)
            }
            UnqKind::ModernWrapperTaskDetails => {
                let (p, mut t) = self.modern_read_file(pidx, idx, false, false);
                t.stored["taskDetails"] = json!({"id": format!("{}/task-{idx}", self.plan.id)});
                (p, t)
            }
            UnqKind::ModernExtraArgument => {
                let (p, mut t) = self.modern_read_file(pidx, idx, false, false);
                add_arg(&mut t, "Encoding", &js("utf-8"));
                (p, t)
            }
            // ---- issue 27: ide225 / finish147 / replay147 ----
            UnqKind::Ide225OffsetNonzero => {
                let (p, mut t) = self.modern_ide225_read(pidx, idx, false, true);
                t.stored["generic"]["result"]["payload"]["byteOffset"] = json!("512");
                set_arg(&mut t, "ByteOffset", "512");
                (p, t)
            }
            UnqKind::Ide225OffsetNotRepeated => {
                let (p, mut t) = self.modern_ide225_read(pidx, idx, false, true);
                if let Some(mut c) = t.call.clone() {
                    c.args.retain(|(k, _)| k != "ByteOffset");
                    t.stored["metadata"]["toolCall"]["argumentsJson"] =
                        Value::String(c.args_json());
                }
                (p, t)
            }
            UnqKind::Ide225ArtifactNoFlag => {
                let (p, mut t) = self.modern_artifact(pidx, idx, true);
                if let Some(o) = t.stored["generic"]["result"]["payload"].as_object_mut() {
                    o.remove("isArtifactFile");
                }
                (p, t)
            }
            UnqKind::Ide225EditMetadata => {
                let (p, mut t) = self.modern_artifact(pidx, idx, false);
                t.stored["generic"]["result"]["payload"]["artifactMetadata"] =
                    json!({"summary": "edited the plan"});
                (p, t)
            }
            UnqKind::Ide225MetadataField => {
                let (p, mut t) = self.modern_artifact(pidx, idx, true);
                let pl = &t.stored["generic"]["result"]["payload"]["artifactMetadata"];
                let arg = format!(
                    "{{\"Summary\":{},\"UserFacing\":{},\"RequestFeedback\":false,\"ArtifactType\":\"task\"}}",
                    pl["summary"],
                    pl["userFacing"].as_bool().unwrap_or(false)
                );
                set_arg(&mut t, "ArtifactMetadata", &arg);
                (p, t)
            }
            UnqKind::Ide225RequestFeedback => {
                let (p, mut t) = self.modern_artifact(pidx, idx, true);
                let pl = &t.stored["generic"]["result"]["payload"]["artifactMetadata"];
                let arg = format!(
                    "{{\"Summary\":{},\"UserFacing\":{},\"RequestFeedback\":true}}",
                    pl["summary"],
                    pl["userFacing"].as_bool().unwrap_or(false)
                );
                set_arg(&mut t, "ArtifactMetadata", &arg);
                (p, t)
            }
            UnqKind::Ide225MetadataMismatch => {
                let (p, mut t) = self.modern_artifact(pidx, idx, true);
                t.stored["generic"]["result"]["payload"]["artifactMetadata"]["summary"] =
                    json!("a different summary");
                (p, t)
            }
            UnqKind::Ide225InteractionAlone => {
                let (p, mut t) = self.modern_ide225_read(pidx, idx, true, false);
                if let Some(o) = t.stored.as_object_mut() {
                    o.remove("permissions");
                }
                (p, t)
            }
            UnqKind::FinishNoSchema => {
                let (p, mut t) = self.modern_finish(pidx, idx);
                if let Some(o) = t.stored["generic"]["result"]["payload"].as_object_mut() {
                    o.remove("resultSchema");
                }
                (p, t)
            }
            UnqKind::FinishResultMismatch => {
                let (p, mut t) = self.modern_finish(pidx, idx);
                t.stored["generic"]["result"]["payload"]["resultJson"] =
                    json!("{\"Passed\":false}");
                (p, t)
            }
            UnqKind::MissingFileContent => {
                let (p, mut t) = self.modern_missing_file(pidx, idx);
                t.stored["generic"]["result"]["payload"]["content"] = json!("stale content");
                (p, t)
            }
            UnqKind::ImageReadRange => {
                let (p, mut t) = self.modern_image_read(pidx, idx, 1);
                add_arg(&mut t, "StartLine", "1");
                add_arg(&mut t, "EndLine", "40");
                (p, t)
            }
            UnqKind::ImageReadTwoMedia => {
                let (p, mut t) = self.modern_image_read(pidx, idx, 1);
                let m = t.stored["generic"]["result"]["payload"]["media"][0].clone();
                if let Some(list) = t.stored["generic"]["result"]["payload"]["media"].as_array_mut()
                {
                    list.push(m);
                }
                (p, t)
            }
            UnqKind::ImageReadGif => {
                let (p, mut t) = self.modern_image_read(pidx, idx, 1);
                t.stored["generic"]["result"]["payload"]["media"][0]["mimeType"] =
                    json!("image/gif");
                (p, t)
            }
            UnqKind::ImageReadExternalUri => {
                let (p, mut t) = self.modern_image_read(pidx, idx, 0);
                let uri = format!("https://images.example.com/{}.jpg", self.r.range(1, 999));
                t.stored["generic"]["result"]["payload"]["media"][0]["uri"] = json!(uri);
                (p, t)
            }
            UnqKind::ImageReadTextMime => {
                let (p, mut t) = self.modern_image_read(pidx, idx, 2);
                t.stored["generic"]["result"]["result"] = json!("Read image (image/png)");
                (p, t)
            }
            UnqKind::ImageReadByteCount => {
                let (p, mut t) = self.modern_image_read(pidx, idx, 0);
                let n = t.stored["generic"]["result"]["payload"]["numBytes"]
                    .as_u64()
                    .unwrap_or(0);
                t.stored["generic"]["result"]["payload"]["numBytes"] = json!(n + 1);
                (p, t)
            }
            UnqKind::ImageReadPermission => {
                let (p, mut t) = self.modern_image_read(pidx, idx, 1);
                let path = t.stored["generic"]["result"]["payload"]["path"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let (perms, inter) = Self::read_records(&path);
                t.stored["permissions"] = perms;
                t.stored["completedInteractions"] = inter;
                (p, t)
            }
            UnqKind::ReplayWaitNoncanonical => {
                let (p, mut t) = self.modern_run_command(pidx, idx, false);
                set_arg(&mut t, "WaitMsBeforeAsync", "05000");
                (p, t)
            }
        };
        t.presented = None;
        (p, t)
    }
}

/// Renames the tool call of a wrapper (its retained call and the planner's).
fn rename_tool(p: &mut StepJson, t: &mut StepJson, name: &str) {
    let Some(c) = t.call.as_mut() else {
        return;
    };
    fn walk(v: &mut Value, id: &str, name: &str) {
        match v {
            Value::Object(m) => {
                if m.get("id").and_then(Value::as_str) == Some(id) && m.contains_key("name") {
                    m.insert("name".into(), Value::String(name.into()));
                }
                for x in m.values_mut() {
                    walk(x, id, name);
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, id, name)),
            _ => {}
        }
    }
    walk(&mut p.stored, &c.id, name);
    walk(&mut t.stored, &c.id, name);
    c.name = name.into();
}

/// Replaces (or adds) an argument on a wrapper and its retained tool call.
fn set_arg(t: &mut StepJson, key: &str, value: &str) {
    if let Some(c) = t.call.as_mut() {
        c.args.retain(|(k, _)| k != key);
    }
    add_arg(t, key, value);
}

/// Adds an argument to a wrapper and to its retained tool call.
fn add_arg(t: &mut StepJson, key: &str, value: &str) {
    if let Some(c) = t.call.as_mut() {
        c.args.push((key.into(), value.into()));
        c.args.sort();
        t.stored["generic"]["args"] = c.args_map();
        t.stored["metadata"]["toolCall"]["argumentsJson"] = Value::String(c.args_json());
    }
}

/// A tiny standard base64 encoder (proto3 JSON bytes).
mod base64_lite {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    /// Standard base64 with padding.
    pub fn encode(b: &[u8]) -> String {
        let mut s = String::with_capacity(b.len().div_ceil(3) * 4);
        for c in b.chunks(3) {
            let n = (u32::from(c[0]) << 16)
                | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
                | u32::from(*c.get(2).unwrap_or(&0));
            s.push(T[(n >> 18) as usize & 63] as char);
            s.push(T[(n >> 12) as usize & 63] as char);
            s.push(if c.len() > 1 {
                T[(n >> 6) as usize & 63] as char
            } else {
                '='
            });
            s.push(if c.len() > 2 {
                T[n as usize & 63] as char
            } else {
                '='
            });
        }
        s
    }
}

/// The planner configuration shared by generator and executor records.
fn planner_config(plan: &ConvPlan, r: &mut Rng) -> Value {
    let mut tool = json!({"viewFile": {"maxLinesPerView": 800}, "antigravityBrowser": {}});
    if r.chance(0.3) {
        tool["viewFile"]["skipPluginLogo"] = Value::Bool(r.chance(0.5));
        tool["antigravityBrowser"]["enableBrowserSubagentAutoInvoke"] = Value::Bool(r.chance(0.5));
    }
    if plan.per_tool_map {
        tool["toolOutput"] = json!({"perTool": {
            "run_command": {"maxOutputChars": 20000},
            "view_file": {"maxOutputChars": 0},
            "grep_search": {},
            "read_url_content": {"maxOutputChars": -1},
        }});
    }
    let mut pc =
        json!({"modelName": "gemini-3.8-flash-low", "maxOutputTokens": 65536, "toolConfig": tool});
    if plan.kind_map {
        pc["customizationConfig"] = json!({"customizationDiscoveryConfig": {"kindEnablement": {
            "skill": true, "rule": false, "workflow": true}}});
    }
    pc
}

/// Builds the JSON of every record of `plan`.
pub fn build(plan: &ConvPlan, seed: u64) -> ConvJson {
    let mut cx = Ctx::new(plan, seed);
    let n = plan.steps.len();
    let mut steps: Vec<StepJson> = Vec::with_capacity(n);
    let mut checkpoints = 0usize;
    let mut i = 0;
    while i < n {
        match plan.steps[i] {
            StepKind::UserInput => steps.push(cx.user_input(i)),
            StepKind::SystemMessage => steps.push(cx.system_message(i)),
            StepKind::ErrorMessage => steps.push(cx.error_message(i)),
            StepKind::EphemeralMessage => steps.push(cx.ephemeral_message(i)),
            StepKind::ConversationHistory => steps.push(cx.conversation_history(i)),
            StepKind::Checkpoint => {
                checkpoints += 1;
                steps.push(cx.checkpoint(i, checkpoints));
            }
            StepKind::Planner { tool_call: true } => {
                if let Some(StepKind::Tool(rec)) = plan.steps.get(i + 1).copied() {
                    let (p, t) = cx.tool(i, i + 1, rec);
                    steps.push(p);
                    steps.push(t);
                    i += 2;
                    continue;
                }
                steps.push(cx.planner(i, None));
            }
            StepKind::Planner { tool_call: false } => steps.push(cx.planner(i, None)),
            StepKind::Tool(rec) => {
                // a tool without its planner (not produced by the planner)
                let (_, t) = cx.tool(i, i, rec);
                steps.push(t);
            }
        }
        i += 1;
    }

    // generator metadata: one row per planner step; the newest carries the snapshot
    let gen_steps = plan.gen_steps();
    let mut pr = Rng::new(seed, &["planner-config", &plan.id]);
    let pc = planner_config(plan, &mut pr);
    let mut gens = Vec::with_capacity(gen_steps.len());
    let mut prompt_pos = vec![None; n];
    let snapshot_gen = gen_steps.len().saturating_sub(1);
    for (g, &si) in gen_steps.iter().enumerate() {
        let exec = cx.exec_ids[cx.turn_of[si]].clone();
        let mut chat = json!({"responseModel": "gemini-3.8-flash"});
        if g == snapshot_gen {
            let mut prompts = vec![json!({"source": "CHAT_MESSAGE_SOURCE_SYSTEM_PROMPT",
                "prompt": "You are agy, a coding agent. Follow the workspace rules.", "numTokens": 812})];
            for (k, s) in steps.iter().enumerate().take(si) {
                let stype = s.stored["type"].as_str().unwrap_or("");
                if let Some(rt) = &s.result_text {
                    prompt_pos[k] = Some(prompts.len());
                    let mut p = json!({"source": "CHAT_MESSAGE_SOURCE_TOOL", "prompt": truncate(rt, 400),
                        "toolCallId": s.call.as_ref().map(|c| c.id.clone()).unwrap_or_default(),
                        "stepIdx": k, "toolResultIsError": s.is_error});
                    let p23 = matches!(
                        plan.steps[k],
                        StepKind::Tool(Recipe::NativeGrep { prompt23: true, .. })
                    );
                    if let (Some(gi), false) = (&s.grep, p23) {
                        if cx.r.chance(0.3) {
                            let vals: Vec<Value> = gi
                                .results
                                .iter()
                                .map(|(path, _, _)| json!({"structValue": {"fields": {"path": {"stringValue": path}}}}))
                                .collect();
                            p["promptStruct"] =
                                json!({"fields": {"results": {"listValue": {"values": vals}}}});
                        }
                    }
                    prompts.push(p);
                } else if stype == ty("USER_INPUT") {
                    let t = s.stored["userInput"]["userResponse"].as_str().unwrap_or("");
                    prompts.push(
                        json!({"source": "CHAT_MESSAGE_SOURCE_USER", "prompt": truncate(t, 400)}),
                    );
                } else if stype == ty("PLANNER_RESPONSE") {
                    let t = s.stored["plannerResponse"]["response"]
                        .as_str()
                        .unwrap_or("");
                    let mut p =
                        json!({"source": "CHAT_MESSAGE_SOURCE_SYSTEM", "prompt": truncate(t, 400)});
                    if let Some(tc) = s.stored["plannerResponse"].get("toolCalls") {
                        p["toolCalls"] = tc.clone();
                    }
                    prompts.push(p);
                }
            }
            chat["systemPrompt"] =
                Value::String("You are agy, a coding agent. Follow the workspace rules.".into());
            chat["messagePrompts"] = Value::Array(prompts);
        }
        gens.push((
            json!({"stepIndices": [si], "executionId": exec, "plannerConfig": pc.clone(), "chatModel": chat}),
            si,
        ));
    }

    // executor metadata: one row per turn, committed with the turn's last step
    let turns = plan.turns();
    let mut execs = Vec::with_capacity(turns.len());
    for (t, (a, b)) in turns.iter().enumerate() {
        let gens_in = gen_steps.iter().filter(|s| **s >= *a && **s <= *b).count();
        let mut cc = json!({"plannerConfig": pc.clone(), "checkpointConfig": {"tokenThreshold": 180000, "enabled": true}});
        if plan.kind_map {
            cc["checkpointConfig"]["contextWindow"] = json!(1_000_000);
            cc["checkpointConfig"]["maxUserRequestMediaTokens"] = json!(4096);
        }
        let mut e = json!({"numGeneratorInvocations": gens_in, "lastStepIdx": b,
            "executionId": cx.exec_ids[t], "cascadeConfig": cc});
        let regs = &cx.registrations[t];
        if !regs.is_empty() {
            e["customizationRegistry"] = json!({"registrations": regs});
        } else if t == 0 {
            e["customizationRegistry"] = json!({"registrations": [
                {"path": format!("{}/AGENTS.md", cx.ws), "kind": "KIND_RULE", "enabled": true}]});
        }
        execs.push((e, *b));
    }

    // trajectory metadata
    let created = steps
        .first()
        .and_then(|s| s.stored["metadata"]["createdAt"].as_str())
        .unwrap_or("2026-06-01T00:00:00Z")
        .to_string();
    let mut metadata = json!({
        "workspaces": [{"workspaceFolderAbsoluteUri": format!("file://{}", cx.ws),
            "gitRootAbsoluteUri": format!("file://{}", cx.ws), "branchName": "main"}],
        "createdAt": created,
        "rootConversationId": plan.root,
        "workspaceUris": [format!("file://{}", cx.ws)],
        "projectId": "default-cli-project",
    });
    {
        let name = cx.ws.rsplit('/').next().unwrap_or("project").to_string();
        metadata["workspaces"][0]["repository"] = json!({"computedName": format!("example/{name}"),
            "gitOriginUrl": format!("https://github.com/example/{name}.git"),
            "gitUpstreamUrl": format!("https://github.com/upstream/{name}.git")});
        metadata["initializationStateId"] = json!(cx.r.uuid());
        if cx.r.chance(0.85) {
            metadata["agentScript"] = cx.agent_script();
        }
    }
    if let Some((p, depth)) = &plan.parent {
        metadata["parentConversationId"] = Value::String(p.clone());
        metadata["nestingDepth"] = json!(depth);
    }
    let refs = if plan.fork_ref {
        vec![
            json!({"trajectoryId": cx.r.uuid(), "stepIndex": 1 + cx.r.below(5),
            "trajectoryType": "CORTEX_TRAJECTORY_TYPE_CASCADE",
            "referenceType": "CORTEX_TRAJECTORY_REFERENCE_TYPE_FORK"}),
        ]
    } else {
        Vec::new()
    };
    ConvJson {
        steps,
        gens,
        execs,
        refs,
        metadata,
        prompt_pos,
        snapshot_gen,
    }
}

/// The accepted field-50 payload shapes.
pub fn planner50_payload(shape: u8) -> Vec<u8> {
    match shape % 4 {
        0 => vec![],
        1 => vec![0x10, 0x00],
        2 => vec![0x20, 0x00],
        _ => vec![0x10, 0x00, 0x20, 0x00],
    }
}

/// (record index, payload shape) pairs.
pub type Sites = Vec<(usize, u8)>;

/// Field-50 sites of a plan, split by record kind.
pub fn planner50_sites(plan: &ConvPlan) -> (Sites, Sites) {
    let mut g = Vec::new();
    let mut e = Vec::new();
    for (site, shape) in &plan.planner50 {
        match site {
            Planner50Site::Gen(i) => g.push((*i, *shape)),
            Planner50Site::Exec(i) => e.push((*i, *shape)),
        }
    }
    (g, e)
}

/// Encodes a field-23 payload (google.protobuf.Struct wire form) for `grep`.
/// `bump` is added to every line number (1 for the accepted derivation).
pub fn prompt23_payload(grep: &GrepInfo, bump: u32, drop_last: bool, elided: bool) -> Vec<u8> {
    use super::wire::{put_key, put_len, FIXED64};
    fn value_string(s: &str) -> Vec<u8> {
        let mut v = Vec::new();
        put_len(&mut v, 3, s.as_bytes());
        v
    }
    fn value_number(x: f64) -> Vec<u8> {
        let mut v = Vec::new();
        put_key(&mut v, 2, FIXED64);
        v.extend_from_slice(&x.to_le_bytes());
        v
    }
    fn entry(key: &str, value: &[u8]) -> Vec<u8> {
        let mut e = Vec::new();
        put_len(&mut e, 1, key.as_bytes());
        put_len(&mut e, 2, value);
        e
    }
    let mut list = Vec::new();
    let n = if drop_last && grep.results.len() > 1 {
        grep.results.len() - 1
    } else {
        grep.results.len()
    };
    for (path, line, content) in grep.results.iter().take(n) {
        let mut st = Vec::new();
        put_len(&mut st, 1, &entry("path", &value_string(path)));
        if grep.per_line {
            put_len(&mut st, 1, &entry("line_content", &value_string(content)));
            put_len(
                &mut st,
                1,
                &entry("line_number", &value_number(f64::from(line + bump))),
            );
        }
        let mut v = Vec::new();
        put_len(&mut v, 5, &st);
        put_len(&mut list, 1, &v);
    }
    let mut list_value = Vec::new();
    put_len(&mut list_value, 6, &list);
    let mut out = Vec::new();
    put_len(&mut out, 1, &entry("results", &list_value));
    let shown = grep.results.len() as u32;
    if elided && grep.total > shown {
        put_len(
            &mut out,
            1,
            &entry(
                "num_elided_results",
                &value_number(f64::from(grep.total - shown)),
            ),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_known_vectors() {
        assert_eq!(base64_lite::encode(b""), "");
        assert_eq!(base64_lite::encode(b"f"), "Zg==");
        assert_eq!(base64_lite::encode(b"fo"), "Zm8=");
        assert_eq!(base64_lite::encode(b"foo"), "Zm9v");
        assert_eq!(base64_lite::encode(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn call_renders_sorted_arguments() {
        let c = Call {
            id: "call_1".into(),
            name: "run_command".into(),
            args: vec![("A".into(), "1".into()), ("B".into(), "\"x\"".into())],
            signature: None,
        };
        assert_eq!(c.args_json(), r#"{"A":1,"B":"x"}"#);
        let v: Value = serde_json::from_str(&c.args_json()).unwrap();
        assert_eq!(v["B"], "x");
    }
}
