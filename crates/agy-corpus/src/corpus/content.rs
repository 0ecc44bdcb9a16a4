//! Materializes one planned conversation: every step as stored (the wrapper,
//! with its embedded native Step) and as agy's daemon presents it after
//! rehydration, built side by side from the same scenario values.
//!
//! Tool steps are data: one table (`Ctx::recipe`) maps every planned
//! `Recipe` to a row (the tool called, the status history, the tool source
//! and hook, a native step or a GENERIC wrapper, and a body for what
//! differs), near-misses included as the row of the shape they leave plus
//! the edit that takes them outside the rule; one driver (`Ctx::drive`)
//! runs the skeleton they share. The random draws keep one order (the
//! body's arguments, the call, its planner step, the metadata, the rest of
//! the body), so the same seed keeps giving the same bytes. The other steps
//! (user input, checkpoints, system, error and ephemeral messages,
//! conversation history) and the per-conversation records (generator,
//! executor and trajectory metadata) are built by hand.
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
    /// `--plant-secrets`: fake credentials put into outputs, file contents
    /// and user text, from a random stream of their own.
    plant: Option<super::secrets::Planter>,
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

// ---- the recipe table's types ------------------------------------------------

/// A status history: the transitions a tool step's metadata records. Its
/// last status is the stored step's status.
type History = &'static [&'static str];

/// Ran to completion.
const RAN: History = &["PENDING", "RUNNING", "DONE"];
/// Failed while running.
const RAN_FAILED: History = &["PENDING", "RUNNING", "ERROR"];
/// Canceled while running.
const RAN_CANCELED: History = &["PENDING", "RUNNING", "CANCELED"];
/// Waited at the permission prompt, was approved and ran to completion.
const APPROVED: History = &["PENDING", "RUNNING", "WAITING", "RUNNING", "DONE"];
/// Waited at the permission prompt and was denied.
const DENIED: History = &["PENDING", "RUNNING", "WAITING", "RUNNING", "ERROR"];
/// Waited at the permission prompt and was canceled there.
const PROMPT_CANCELED: History = &["PENDING", "RUNNING", "WAITING", "RUNNING", "CANCELED"];
/// Failed before it ran.
const REFUSED: History = &["PENDING", "ERROR"];
/// Rejected as an invalid call.
const INVALID: History = &["PENDING", "INVALID"];
/// Done without a running phase (a timer set).
const SET: History = &["PENDING", "DONE"];

/// The reason the PreToolUse hook gives for the command it denies.
const HOOK_DENIAL: &str = "destructive commands are blocked in this repository";

/// The tool source and pre-tool hook results a tool step's metadata records.
#[derive(Debug, Clone, Copy)]
enum Hook {
    /// Neither (a call refused before its tool source was recorded).
    Unrecorded,
    /// A builtin tool, no hook.
    Builtin,
    /// A builtin tool a pre-tool hook allowed.
    Allow,
    /// A builtin tool the force-ask hook sent to the permission prompt.
    ForceAsk,
    /// A builtin tool a pre-tool hook denied ([`HOOK_DENIAL`]).
    Deny,
    /// An MCP tool.
    Mcp,
}

impl Hook {
    /// The metadata keys (merged into the step's metadata).
    fn metadata(self) -> Value {
        const BUILTIN: &str = "TOOL_SOURCE_BUILTIN";
        match self {
            Hook::Unrecorded => json!({}),
            Hook::Builtin => json!({"toolSource": BUILTIN}),
            Hook::Allow => {
                json!({"toolSource": BUILTIN, "preToolHookResults": [{"decision": "DECISION_ALLOW"}]})
            }
            Hook::ForceAsk => json!({"toolSource": BUILTIN,
                "preToolHookResults": [{"hookName": "force-ask", "decision": "DECISION_ASK"}]}),
            Hook::Deny => json!({"toolSource": BUILTIN,
                "preToolHookResults": [{"decision": "DECISION_DENY", "reason": HOOK_DENIAL}]}),
            Hook::Mcp => json!({"toolSource": "TOOL_SOURCE_MCP"}),
        }
    }
}

/// How a recipe's tool step is stored.
#[derive(Debug, Clone, Copy)]
enum Form {
    /// A top-level native step of this `CORTEX_STEP_TYPE_*` (the daemon
    /// passes it through), the body's value under this field.
    Native(&'static str, &'static str),
    /// A GENERIC wrapper: the call's arguments, and the body's value as the
    /// `result` (none: a resultless wrapper).
    Generic,
}

/// What differs between the steps of a recipe: draws the call's arguments,
/// hands them to the [`Turn`] (which draws the call, its planner step and the
/// step's metadata from the row's columns) and builds the payload, the
/// result text and the presented form from what it drew.
type BodyFn<'a> = Box<dyn FnOnce(&mut Ctx<'a>, Turn) -> Body + 'a>;

/// A near-miss's edit of its finished step (one bound outside a rule).
type Edit<'a> = fn(&mut Ctx<'a>, &mut NearMiss);

/// One row of the recipe table ([`Ctx::recipe`]): what the skeleton every
/// tool step shares needs to know about a recipe.
struct StepRecipe<'a> {
    /// The tool the planner calls.
    tool: &'static str,
    /// The step's status history; its last status is the stored status.
    history: History,
    /// Tool source and pre-tool hook results.
    hook: Hook,
    /// Native step or GENERIC wrapper.
    form: Form,
    /// Everything else.
    body: BodyFn<'a>,
    /// A near-miss's edit of the finished step; the daemon passes a
    /// near-miss through, so its presented form is dropped.
    near_miss: Option<Edit<'a>>,
}

/// A row for a native step of type `ty` (its payload under `field`) that ran
/// to completion with a builtin tool.
fn native<'a>(
    tool: &'static str,
    ty: &'static str,
    field: &'static str,
    body: impl FnOnce(&mut Ctx<'a>, Turn) -> Body + 'a,
) -> StepRecipe<'a> {
    StepRecipe {
        tool,
        history: RAN,
        hook: Hook::Builtin,
        form: Form::Native(ty, field),
        body: Box::new(body),
        near_miss: None,
    }
}

/// A row for a GENERIC wrapper.
fn wrapper<'a>(
    tool: &'static str,
    history: History,
    hook: Hook,
    body: impl FnOnce(&mut Ctx<'a>, Turn) -> Body + 'a,
) -> StepRecipe<'a> {
    StepRecipe {
        tool,
        history,
        hook,
        form: Form::Generic,
        body: Box::new(body),
        near_miss: None,
    }
}

impl<'a> StepRecipe<'a> {
    /// The same row with another hook.
    fn hook(self, hook: Hook) -> Self {
        StepRecipe { hook, ..self }
    }

    /// The same row as a near-miss, edited by `edit` once built.
    fn near_miss(self, edit: Edit<'a>) -> Self {
        StepRecipe {
            near_miss: Some(edit),
            ..self
        }
    }
}

/// One tool step in the making: its row's columns, carried through the
/// draws every recipe makes in the same order: the call, the planner step
/// that makes it, the step's metadata. A body draws its arguments first and
/// may draw more between these (the order is part of the corpus: the same
/// seed gives the same bytes).
#[derive(Debug, Clone, Copy)]
struct Turn {
    /// The planner step's index.
    pidx: usize,
    /// The tool step's index.
    idx: usize,
    tool: &'static str,
    history: History,
    hook: Hook,
}

/// A drawn call; its planner step is drawn next.
struct Called {
    turn: Turn,
    call: Call,
}

/// A drawn call and its planner step; the step's metadata is drawn next.
struct Planned {
    turn: Turn,
    call: Call,
    planner: StepJson,
}

/// What the skeleton draws for a tool step.
struct Drawn {
    call: Call,
    planner: StepJson,
    meta: Value,
}

impl Turn {
    /// The stored step's status (the history's last).
    fn status(&self) -> &'static str {
        self.history.last().copied().unwrap_or("DONE")
    }

    /// Draws the call with `args`.
    fn call(self, cx: &mut Ctx<'_>, args: Vec<(&str, String)>) -> Called {
        let call = cx.call(self.tool, args);
        Called { turn: self, call }
    }

    /// Draws the call with `args` and its planner step.
    fn plan(self, cx: &mut Ctx<'_>, args: Vec<(&str, String)>) -> Planned {
        self.call(cx, args).plan(cx)
    }

    /// Draws the call with `args`, its planner step and the step's metadata.
    fn draw(self, cx: &mut Ctx<'_>, args: Vec<(&str, String)>) -> Drawn {
        self.plan(cx, args).meta(cx)
    }
}

impl Called {
    /// Draws the planner step that makes the call.
    fn plan(self, cx: &mut Ctx<'_>) -> Planned {
        let planner = cx.planner(self.turn.pidx, Some(&self.call));
        Planned {
            turn: self.turn,
            call: self.call,
            planner,
        }
    }
}

impl Planned {
    /// Draws the step's metadata (status history and hook from the row).
    fn meta(self, cx: &mut Ctx<'_>) -> Drawn {
        let t = self.turn;
        let meta = cx.meta(
            t.idx,
            "MODEL",
            Some(&self.call),
            t.history,
            t.hook.metadata(),
        );
        Drawn {
            call: self.call,
            planner: self.planner,
            meta,
        }
    }
}

/// What a recipe's body built: the step's payload and everything that is
/// not the skeleton's.
struct Body {
    drawn: Drawn,
    /// A native step's payload; a wrapper's `result` (None: resultless).
    value: Option<Value>,
    /// Keys set on the stored step once built, in this order (error,
    /// permissions, task details …). A stored `error` marks the result an
    /// error.
    extra: Value,
    /// The step as the ordinary RPC presents it (None: unchanged).
    presented: Option<Value>,
    /// Presented as the stored wrapper with this result metadata (the
    /// payload-derived keys the ordinary presentation adds).
    result_metadata: Option<Value>,
    /// The result text the model saw.
    text: String,
    /// GREP_SEARCH results.
    grep: Option<GrepInfo>,
}

impl Body {
    fn new(drawn: Drawn, value: Option<Value>, presented: Option<Value>, text: String) -> Body {
        Body {
            drawn,
            value,
            extra: json!({}),
            presented,
            result_metadata: None,
            text,
            grep: None,
        }
    }

    /// Sets `extra`'s keys on the stored step, after the ones set before.
    fn with(mut self, extra: Value) -> Body {
        merge(&mut self.extra, extra);
        self
    }

    /// Presented as the stored wrapper with result metadata `md`.
    fn result_metadata(mut self, md: Value) -> Body {
        self.result_metadata = Some(md);
        self
    }
}

/// A finished near-miss step, as its edit sees it.
struct NearMiss {
    /// The tool step's index.
    idx: usize,
    planner: StepJson,
    step: StepJson,
}

impl NearMiss {
    /// The wrapper's payload.
    fn payload(&mut self) -> &mut Value {
        &mut self.step.stored["generic"]["result"]["payload"]
    }

    /// Rewrites the ArtifactMetadata argument from the payload's metadata,
    /// with `tail` after its Summary and UserFacing members.
    fn artifact_metadata_arg(&mut self, tail: &str) {
        let pl = &self.payload()["artifactMetadata"];
        let arg = format!(
            "{{\"Summary\":{},\"UserFacing\":{},{tail}}}",
            pl["summary"],
            pl["userFacing"].as_bool().unwrap_or(false)
        );
        set_arg(&mut self.step, "ArtifactMetadata", &arg);
    }
}

/// Adds StartLine and EndLine to a modern read (its arguments, its payload
/// and its presented VIEW_FILE, zero-based there).
fn read_range(
    args: &mut Vec<(&'static str, String)>,
    payload: &mut Value,
    vf: &mut Value,
    start: usize,
    end: usize,
) {
    args.push(("EndLine", end.to_string()));
    args.push(("StartLine", start.to_string()));
    payload["startLine"] = json!(start);
    payload["endLine"] = json!(end);
    vf["startLine"] = json!(start - 1);
    vf["endLine"] = json!(end - 1);
}

/// The unified diff of a file created with `content`.
fn creation_diff(path: &str, content: &str) -> String {
    let added: String = content.lines().map(|l| format!("+{l}\n")).collect();
    format!(
        "--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n{added}",
        content.lines().count()
    )
}

/// The presented action spec and edit of a file creation.
fn created(uri: &str, diff: &str) -> (Value, Value) {
    let spec = json!({"createFile": {"path": {"absoluteUri": uri}}});
    let edit = json!({"absoluteUri": uri, "createFile": true, "unifiedDiff": diff});
    (spec, edit)
}

/// A wrapper's result carrying the native step it wraps.
fn carrying(shown: &str, native: &Value) -> Value {
    json!({"result": shown, "payload": any_of(STEP_ANY, native)})
}

/// A wrapper's result carrying the native step it wraps, without a result text.
fn carrying_only(native: &Value) -> Value {
    json!({"payload": any_of(STEP_ANY, native)})
}

/// A wrapper's result carrying a modern tool payload `exa.cortex.core.tools.<name>`.
fn carrying_tool(shown: &str, name: &str, payload: &Value) -> Value {
    json!({"result": shown, "payload": any_of(&tools_url(name), payload)})
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
            plant: None,
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

    /// `text` with a planted credential (`--plant-secrets`), else as is.
    fn planted(&mut self, text: String, place: super::secrets::Place) -> String {
        match &mut self.plant {
            Some(p) => p.plant(text, place),
            None => text,
        }
    }

    fn user_input(&mut self, idx: usize) -> StepJson {
        let n = self.r.range(1, 3) as usize;
        let text = text::paragraph(&mut self.r, n);
        let text = self.planted(text, super::secrets::Place::UserText);
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

    // ---- the recipe table ----------------------------------------------------

    /// A tool step (with its planner's call) for `recipe` at `idx`.
    fn tool(&mut self, pidx: usize, idx: usize, recipe: Recipe) -> (StepJson, StepJson) {
        let row = Self::recipe(recipe);
        self.drive(pidx, idx, row)
    }

    /// The recipe table: every [`Recipe`]'s row, in one place. A row is
    /// `native(tool, step type, payload field, body)` for a native step (it
    /// ran to completion, [`RAN`], with a builtin tool unless `.hook(..)`
    /// says otherwise) or `wrapper(tool, history, hook, body)` for a GENERIC
    /// wrapper. The columns: the tool the planner calls; the status history
    /// (its last status is the stored step's; see [`RAN`] and the other
    /// histories); the tool source and pre-tool hook results ([`Hook`]); the
    /// body, the one function that builds what differs (the arguments, the
    /// payload, the result text, the presented form). A near-miss
    /// ([`Recipe::Unqualified`]) is the row of the shape it leaves (its own
    /// row where no planned recipe has that shape's parameters) with
    /// `.near_miss(edit)`: the edit takes the built step one bound outside
    /// the rule, and the daemon passes it through.
    fn recipe(recipe: Recipe) -> StepRecipe<'a> {
        use BeforeRunKind as B;
        use Hook::{Allow, Builtin, Deny, ForceAsk, Unrecorded};
        use ModernKind as M;
        use OuterKind as O;
        use Recipe as R;
        use TaskKind as T;
        use UnqKind as U;
        match recipe {
            // passthrough natives
            R::NativeViewFile => native("view_file", "VIEW_FILE", "viewFile", Self::native_view_file),
            R::NativeRunCommand => {
                native("run_command", "RUN_COMMAND", "runCommand", Self::native_run_command)
            }
            R::NativeCodeAction => native(
                "replace_file_content",
                "CODE_ACTION",
                "codeAction",
                Self::native_code_action,
            ),
            R::NativeGrep { per_line, prompt23 } => {
                native("grep_search", "GREP_SEARCH", "grepSearch", move |cx, t| {
                    cx.native_grep(t, per_line, prompt23)
                })
            }
            R::NativeListDir => {
                native("list_dir", "LIST_DIRECTORY", "listDirectory", Self::native_list_dir)
            }
            R::NativeMcp => native("mcp_github_search_issues", "MCP_TOOL", "mcpTool", Self::native_mcp)
                .hook(Hook::Mcp),
            R::NativeSearchWeb => {
                native("search_web", "SEARCH_WEB", "searchWeb", Self::native_search_web)
            }
            R::NativeReadUrl => native(
                "read_url_content",
                "READ_URL_CONTENT",
                "readUrlContent",
                Self::native_read_url,
            ),
            R::NativeFind => native("find_by_name", "FIND", "find", Self::native_find),
            R::NativeCommandStatus => native(
                "command_status",
                "COMMAND_STATUS",
                "commandStatus",
                Self::native_command_status,
            ),
            // wrappers over embedded native steps
            R::RunCommand { background, big } => {
                wrapper("run_command", RAN, Builtin, move |cx, t| {
                    cx.run_command(t, background, big)
                })
            }
            R::ViewFile => wrapper("view_file", RAN, Builtin, Self::view_file),
            R::CodeAction { create: true } => {
                wrapper("write_to_file", RAN, Builtin, |cx, t| cx.code_action(t, true))
            }
            R::CodeAction { create: false } => {
                wrapper("replace_file_content", RAN, Builtin, |cx, t| cx.code_action(t, false))
            }
            R::InvokeSubagent => wrapper("invoke_subagent", RAN, Builtin, Self::invoke_subagent),
            R::CanceledCommand { native_error } => {
                wrapper("run_command", RAN_CANCELED, Builtin, move |cx, t| {
                    cx.canceled_command(t, native_error)
                })
            }
            R::PermissionCommand => {
                wrapper("run_command", APPROVED, ForceAsk, Self::permission_command)
            }
            R::PermissionView => wrapper("view_file", APPROVED, Builtin, Self::permission_view),
            R::ContentOffset => wrapper("view_file", RAN, Builtin, Self::content_offset),
            R::WriteAppend { value } => {
                let value = if value { "true" } else { "false" };
                wrapper("write_to_file", RAN, Builtin, move |cx, t| cx.write_append(t, value))
            }
            R::OuterError(k) => {
                let tool = match k {
                    O::RunCommand => "run_command",
                    O::CodeAction => "write_to_file",
                    O::ViewFile => "view_file",
                    O::GrepSearch => "grep_search",
                    O::McpTool => "mcp_github_create_issue",
                    O::ReadUrl => "read_url_content",
                    O::SearchWeb => "search_web",
                };
                wrapper(tool, RAN_FAILED, Builtin, move |cx, t| cx.outer_error(t, k))
            }
            R::FailedImage => wrapper("generate_image", RAN_FAILED, Builtin, Self::failed_image),
            R::ImageSuccess => wrapper("generate_image", RAN, Builtin, Self::image_success),
            R::FailedListResources => {
                wrapper("list_resources", RAN_FAILED, Builtin, Self::failed_list_resources)
            }
            R::BridgeFailure => wrapper("run_command", RAN_FAILED, Allow, Self::bridge_failure),
            // resultless wrappers
            R::FailedBeforeRun(k) => {
                let (tool, history) = match k {
                    B::WriteToFile => ("write_to_file", REFUSED),
                    B::WriteToFileInvalid => ("write_to_file", INVALID),
                    B::ViewFile => ("view_file", REFUSED),
                    B::FindByName => ("find_by_name", REFUSED),
                    B::ListDir => ("list_dir", REFUSED),
                    B::Schedule => ("schedule", REFUSED),
                    B::GenerateImageInvalid => ("generate_image", INVALID),
                };
                wrapper(tool, history, Unrecorded, move |cx, t| cx.failed_before_run(t, k))
            }
            R::HookDenied => wrapper("run_command", REFUSED, Deny, Self::hook_denied),
            R::MissingToolSummary { read: true } => {
                wrapper("view_file", INVALID, Builtin, |cx, t| cx.missing_tool_summary(t, true))
            }
            R::MissingToolSummary { read: false } => {
                wrapper("run_command", INVALID, Builtin, |cx, t| cx.missing_tool_summary(t, false))
            }
            R::RejectedPermission { headless } => {
                wrapper("run_command", DENIED, Allow, move |cx, t| {
                    cx.rejected_permission(t, headless)
                })
            }
            R::CanceledPrompt => {
                wrapper("run_command", PROMPT_CANCELED, Allow, |cx, t| cx.canceled_prompt(t, false))
            }
            R::BuiltinViewFile { lines, skill } => {
                wrapper("view_file", REFUSED, Builtin, move |cx, t| {
                    cx.builtin_view_file(t, lines, skill)
                })
            }
            // payload-free wrappers
            R::ManageTask(k) => {
                let (tool, history) = match k {
                    T::SendMessage => ("send_message", RAN),
                    T::Error => ("manage_task", RAN_FAILED),
                    T::Status | T::List | T::Kill => ("manage_task", RAN),
                };
                wrapper(tool, history, Builtin, move |cx, t| cx.manage_task(t, k))
            }
            R::SendInput => wrapper("manage_task", RAN, Allow, Self::send_input),
            R::Schedule { task_details } => {
                wrapper("schedule", SET, Builtin, move |cx, t| cx.schedule(t, task_details))
            }
            R::ScheduleError => wrapper("schedule", REFUSED, Builtin, |cx, t| cx.schedule(t, false)),
            R::ManageSubagents => {
                wrapper("manage_subagents", RAN, Builtin, |cx, t| cx.manage_subagents(t, false))
            }
            R::DefineSubagent { definition } => {
                wrapper("define_subagent", RAN, Builtin, move |cx, t| {
                    cx.define_subagent(t, definition)
                })
            }
            R::ListPermissions => {
                wrapper("list_permissions", RAN, Builtin, |cx, t| cx.list_permissions(t, false))
            }
            R::AskPermission => wrapper("ask_permission", RAN, Builtin, Self::ask_permission),
            R::GenerateImageAny => {
                wrapper("generate_image", RAN, Builtin, Self::generate_image_any)
            }
            // modern (agy 1.4.x) tool payloads: tools143, tools144, skill146
            R::Modern(M::RunCommand { background }) => {
                wrapper("run_command", RAN, Builtin, move |cx, t| {
                    cx.modern_run_command(t, background)
                })
            }
            R::Modern(M::CanceledBackground) => {
                wrapper("run_command", RAN_CANCELED, Builtin, Self::modern_canceled_background)
            }
            R::Modern(M::ReadFile { skill, range }) => {
                wrapper("read_file", RAN, Builtin, move |cx, t| {
                    cx.modern_read_file(t, skill, range)
                })
            }
            R::Modern(M::FileCreate { empty }) => {
                wrapper("write_to_file", RAN, Builtin, move |cx, t| {
                    cx.modern_file_edit(t, true, empty)
                })
            }
            R::Modern(M::FileEdit) => wrapper("replace_file_content", RAN, Builtin, |cx, t| {
                cx.modern_file_edit(t, false, false)
            }),
            R::Modern(M::InvokeSubagent { inherit }) => {
                wrapper("invoke_subagent", RAN, Builtin, move |cx, t| {
                    cx.modern_invoke_subagent(t, inherit)
                })
            }
            R::Modern(M::ManageTask(a)) => {
                wrapper("manage_task", RAN, Builtin, move |cx, t| cx.modern_manage_task(t, a))
            }
            R::Modern(M::Schedule) => {
                wrapper("schedule", RAN_CANCELED, Builtin, Self::modern_schedule)
            }
            R::Modern(M::ManageSubagentsList) => {
                wrapper("manage_subagents", RAN, Builtin, Self::modern_manage_subagents)
            }
            // ide225 / finish147 / replay147 (Antigravity IDE 2.25, agy 1.4.7)
            R::Modern(M::Ide225Read { permission, offset }) => {
                let history = if permission { APPROVED } else { RAN };
                wrapper("read_file", history, Builtin, move |cx, t| {
                    cx.modern_ide225_read(t, permission, offset)
                })
            }
            R::Modern(M::ArtifactCreate) => {
                wrapper("write_to_file", RAN, Builtin, |cx, t| cx.modern_artifact(t, true))
            }
            R::Modern(M::ArtifactEdit) => {
                wrapper("replace_file_content", RAN, Builtin, |cx, t| cx.modern_artifact(t, false))
            }
            R::Modern(M::Finish) => wrapper("finish", RAN, Builtin, Self::modern_finish),
            R::Modern(M::MissingFileRead) => {
                wrapper("read_file", RAN, Builtin, Self::modern_missing_file)
            }
            R::Modern(M::ReplayCopiedWait) => {
                wrapper("run_command", RAN, Builtin, Self::modern_replay_copied)
            }
            R::Modern(M::ImageRead(k)) => {
                wrapper("read_file", RAN, Builtin, move |cx, t| cx.modern_image_read(t, k))
            }
            // near-misses: a wrapper shape one bound outside a rule
            R::Unqualified(U::HookDeniedExtraArg) => Self::recipe(R::HookDenied)
                .near_miss(|_, n| add_arg(&mut n.step, "RunPersistent", "false")),
            R::Unqualified(U::CanceledPromptBypass) => {
                wrapper("run_command", PROMPT_CANCELED, Allow, |cx, t| cx.canceled_prompt(t, true))
                    .near_miss(|_, _| {})
            }
            R::Unqualified(U::ListPermissionsArg) => {
                wrapper("list_permissions", RAN, Builtin, |cx, t| cx.list_permissions(t, true))
                    .near_miss(|_, _| {})
            }
            R::Unqualified(U::PermissionNativeRunning) => Self::recipe(R::PermissionCommand)
                .near_miss(|_, n| n.payload()["status"] = Value::String(status("RUNNING"))),
            R::Unqualified(U::ManageSubagentsExtraKey) => {
                wrapper("manage_subagents", RAN, Builtin, |cx, t| cx.manage_subagents(t, true))
                    .near_miss(|_, _| {})
            }
            R::Unqualified(U::OuterErrorInvokeSubagent) => Self::recipe(R::InvokeSubagent)
                .near_miss(|_, n| {
                    let err = json!({"shortError": "subagent crashed", "fullError": "invoke_subagent: subagent crashed"});
                    n.step.stored["status"] = Value::String(status("ERROR"));
                    n.step.stored["error"] = err.clone();
                    n.payload()["status"] = Value::String(status("ERROR"));
                    n.payload()["error"] = err;
                }),
            R::Unqualified(U::AppendBadValue) => {
                wrapper("write_to_file", RAN, Builtin, |cx, t| cx.write_append(t, "\"yes\""))
                    .near_miss(|_, _| {})
            }
            R::Unqualified(U::UnknownTool) => {
                wrapper("todo_write", RAN, Builtin, Self::unknown_tool).near_miss(|_, _| {})
            }
            R::Unqualified(U::ScheduleInvalid) => {
                wrapper("schedule", INVALID, Builtin, |cx, t| cx.schedule(t, false))
                    .near_miss(|_, _| {})
            }
            R::Unqualified(U::ModernReadPath) => {
                Self::recipe(R::Modern(M::ReadFile { skill: false, range: false })).near_miss(
                    |cx, n| {
                        let path = format!("{}/../etc/hosts", cx.ws);
                        n.payload()["path"] = json!(path);
                        set_arg(&mut n.step, "AbsolutePath", &js(&path));
                    },
                )
            }
            R::Unqualified(U::ModernCommandFailed) => {
                Self::recipe(R::Modern(M::RunCommand { background: false }))
                    .near_miss(|_, n| n.payload()["outcome"] = json!("OUTCOME_FAILED"))
            }
            R::Unqualified(U::ModernEditArtifact) => {
                Self::recipe(R::Modern(M::FileCreate { empty: false }))
                    .near_miss(|_, n| n.payload()["isArtifactFile"] = json!(true))
            }
            R::Unqualified(U::ModernSubagentTaskMode) => {
                Self::recipe(R::Modern(M::InvokeSubagent { inherit: false }))
                    .near_miss(|_, n| n.payload()["taskMode"] = json!(true))
            }
            R::Unqualified(U::ModernSubagentWorkspace) => {
                Self::recipe(R::Modern(M::InvokeSubagent { inherit: true })).near_miss(|cx, n| {
                    let ws = js(&format!("{}/scratch", cx.ws));
                    set_arg(&mut n.step, "Workspace", &ws);
                })
            }
            R::Unqualified(U::ModernTaskTwoTasks) => {
                Self::recipe(R::Modern(M::ManageTask(1))).near_miss(|cx, n| {
                    let extra =
                        json!({"taskId": format!("{}/task-99", cx.plan.id), "status": "running"});
                    if let Some(tasks) = n.payload()["tasks"].as_array_mut() {
                        tasks.push(extra);
                    }
                })
            }
            R::Unqualified(U::ModernTimerNotCanceled) => Self::recipe(R::Modern(M::Schedule))
                .near_miss(|_, n| n.payload()["canceled"] = json!(false)),
            R::Unqualified(U::ModernSubagentsThreeIds) => {
                Self::recipe(R::Modern(M::ManageSubagentsList)).near_miss(|cx, n| {
                    let c = cx.r.uuid();
                    if let Some(ids) = n.payload()["conversationIds"].as_array_mut() {
                        ids.push(json!(c));
                    }
                })
            }
            R::Unqualified(U::ModernBackgroundWait) => {
                Self::recipe(R::Modern(M::CanceledBackground))
                    .near_miss(|_, n| set_arg(&mut n.step, "WaitMsBeforeAsync", "500"))
            }
            R::Unqualified(U::ModernPermissionGrant) => {
                Self::recipe(R::Modern(M::ReadFile { skill: false, range: true })).near_miss(
                    |_, n| {
                        let path = n.payload()["path"].clone();
                        n.step.stored["permissions"] = json!({"permissionGrants": [{"action": "read_file", "allow": true,
                            "target": path.clone(), "resource": {"action": "read_file", "target": path}}]});
                    },
                )
            }
            R::Unqualified(U::ModernToolName) => {
                Self::recipe(R::Modern(M::ReadFile { skill: false, range: false }))
                    .near_miss(|_, n| rename_tool(&mut n.planner, &mut n.step, "view_file"))
            }
            R::Unqualified(U::ModernReadRange) => {
                Self::recipe(R::Modern(M::ReadFile { skill: false, range: true })).near_miss(
                    |_, n| {
                        n.payload()["startLine"] = json!(0);
                        set_arg(&mut n.step, "StartLine", "0");
                    },
                )
            }
            R::Unqualified(U::ModernEditKindMismatch) => Self::recipe(R::Modern(M::FileEdit))
                .near_miss(|_, n| n.payload()["kind"] = json!("KIND_CREATE")),
            R::Unqualified(U::ModernStoredMetadata) => Self::recipe(R::Modern(M::ManageTask(1)))
                .near_miss(|_, n| {
                    n.step.stored["generic"]["result"]["metadata"] = json!({"action": "list"});
                }),
            R::Unqualified(U::ModernWrapperTaskDetails) => {
                Self::recipe(R::Modern(M::ReadFile { skill: false, range: false })).near_miss(
                    |cx, n| {
                        n.step.stored["taskDetails"] =
                            json!({"id": format!("{}/task-{}", cx.plan.id, n.idx)});
                    },
                )
            }
            R::Unqualified(U::ModernExtraArgument) => {
                Self::recipe(R::Modern(M::ReadFile { skill: false, range: false }))
                    .near_miss(|_, n| add_arg(&mut n.step, "Encoding", &js("utf-8")))
            }
            // ide225 / finish147 / replay147 (Antigravity IDE 2.25, agy 1.4.7)
            R::Unqualified(U::Ide225OffsetNonzero) => {
                Self::recipe(R::Modern(M::Ide225Read { permission: false, offset: true }))
                    .near_miss(|_, n| {
                        n.payload()["byteOffset"] = json!("512");
                        set_arg(&mut n.step, "ByteOffset", "512");
                    })
            }
            R::Unqualified(U::Ide225OffsetNotRepeated) => {
                Self::recipe(R::Modern(M::Ide225Read { permission: false, offset: true }))
                    .near_miss(|_, n| {
                        if let Some(mut c) = n.step.call.clone() {
                            c.args.retain(|(k, _)| k != "ByteOffset");
                            n.step.stored["metadata"]["toolCall"]["argumentsJson"] =
                                Value::String(c.args_json());
                        }
                    })
            }
            R::Unqualified(U::Ide225ArtifactNoFlag) => Self::recipe(R::Modern(M::ArtifactCreate))
                .near_miss(|_, n| {
                    if let Some(o) = n.payload().as_object_mut() {
                        o.remove("isArtifactFile");
                    }
                }),
            R::Unqualified(U::Ide225EditMetadata) => Self::recipe(R::Modern(M::ArtifactEdit))
                .near_miss(|_, n| {
                    n.payload()["artifactMetadata"] = json!({"summary": "edited the plan"});
                }),
            R::Unqualified(U::Ide225MetadataField) => Self::recipe(R::Modern(M::ArtifactCreate))
                .near_miss(|_, n| {
                    n.artifact_metadata_arg("\"RequestFeedback\":false,\"ArtifactType\":\"task\"");
                }),
            R::Unqualified(U::Ide225RequestFeedback) => Self::recipe(R::Modern(M::ArtifactCreate))
                .near_miss(|_, n| n.artifact_metadata_arg("\"RequestFeedback\":true")),
            R::Unqualified(U::Ide225MetadataMismatch) => Self::recipe(R::Modern(M::ArtifactCreate))
                .near_miss(|_, n| {
                    n.payload()["artifactMetadata"]["summary"] = json!("a different summary");
                }),
            R::Unqualified(U::Ide225InteractionAlone) => {
                Self::recipe(R::Modern(M::Ide225Read { permission: true, offset: false }))
                    .near_miss(|_, n| {
                        if let Some(o) = n.step.stored.as_object_mut() {
                            o.remove("permissions");
                        }
                    })
            }
            R::Unqualified(U::FinishNoSchema) => {
                Self::recipe(R::Modern(M::Finish)).near_miss(|_, n| {
                    if let Some(o) = n.payload().as_object_mut() {
                        o.remove("resultSchema");
                    }
                })
            }
            R::Unqualified(U::FinishResultMismatch) => Self::recipe(R::Modern(M::Finish))
                .near_miss(|_, n| n.payload()["resultJson"] = json!("{\"Passed\":false}")),
            R::Unqualified(U::MissingFileContent) => Self::recipe(R::Modern(M::MissingFileRead))
                .near_miss(|_, n| n.payload()["content"] = json!("stale content")),
            R::Unqualified(U::ImageReadRange) => {
                Self::recipe(R::Modern(M::ImageRead(1))).near_miss(|_, n| {
                    add_arg(&mut n.step, "StartLine", "1");
                    add_arg(&mut n.step, "EndLine", "40");
                })
            }
            R::Unqualified(U::ImageReadTwoMedia) => {
                Self::recipe(R::Modern(M::ImageRead(1))).near_miss(|_, n| {
                    let m = n.payload()["media"][0].clone();
                    if let Some(list) = n.payload()["media"].as_array_mut() {
                        list.push(m);
                    }
                })
            }
            R::Unqualified(U::ImageReadGif) => Self::recipe(R::Modern(M::ImageRead(1)))
                .near_miss(|_, n| n.payload()["media"][0]["mimeType"] = json!("image/gif")),
            R::Unqualified(U::ImageReadExternalUri) => {
                Self::recipe(R::Modern(M::ImageRead(0))).near_miss(|cx, n| {
                    let uri = format!("https://images.example.com/{}.jpg", cx.r.range(1, 999));
                    n.payload()["media"][0]["uri"] = json!(uri);
                })
            }
            R::Unqualified(U::ImageReadTextMime) => {
                Self::recipe(R::Modern(M::ImageRead(2))).near_miss(|_, n| {
                    n.step.stored["generic"]["result"]["result"] = json!("Read image (image/png)");
                })
            }
            R::Unqualified(U::ImageReadByteCount) => {
                Self::recipe(R::Modern(M::ImageRead(0))).near_miss(|_, n| {
                    let bytes = n.payload()["numBytes"].as_u64().unwrap_or(0);
                    n.payload()["numBytes"] = json!(bytes + 1);
                })
            }
            R::Unqualified(U::ImageReadPermission) => {
                Self::recipe(R::Modern(M::ImageRead(1))).near_miss(|_, n| {
                    let path = n.payload()["path"].as_str().unwrap_or_default().to_string();
                    let (perms, inter) = Self::read_records(&path);
                    n.step.stored["permissions"] = perms;
                    n.step.stored["completedInteractions"] = inter;
                })
            }
            R::Unqualified(U::ReplayWaitNoncanonical) => {
                Self::recipe(R::Modern(M::RunCommand { background: false }))
                    .near_miss(|_, n| set_arg(&mut n.step, "WaitMsBeforeAsync", "05000"))
            }
        }
    }

    /// Runs the skeleton every tool step shares: the row's body (which draws
    /// the call, the planner step and the metadata through its [`Turn`]),
    /// then the stored step in the row's form, the finished pair and a
    /// near-miss's edit.
    fn drive(&mut self, pidx: usize, idx: usize, row: StepRecipe<'a>) -> (StepJson, StepJson) {
        let StepRecipe {
            tool,
            history,
            hook,
            form,
            body,
            near_miss,
        } = row;
        let turn = Turn {
            pidx,
            idx,
            tool,
            history,
            hook,
        };
        let st = turn.status();
        let Body {
            drawn,
            value,
            extra,
            presented,
            result_metadata,
            text,
            grep,
        } = body(self, turn);
        let Drawn {
            call,
            planner,
            meta,
        } = drawn;
        let mut stored = match form {
            Form::Native(step_type, field) => {
                let mut s = json!({"type": ty(step_type), "status": status(st), "metadata": meta});
                s[field] = value.unwrap_or(Value::Null);
                s
            }
            Form::Generic => Self::generic(st, meta, &call, value),
        };
        let presented = match result_metadata {
            Some(md) => Some(Self::with_result_metadata(&stored, md)),
            None => presented,
        };
        merge(&mut stored, extra);
        let is_error = stored.get("error").is_some();
        let step = StepJson {
            stored,
            presented,
            call: Some(call),
            result_text: Some(text),
            is_error,
            grep,
        };
        match near_miss {
            None => (planner, step),
            Some(edit) => {
                let mut n = NearMiss { idx, planner, step };
                edit(self, &mut n);
                n.step.presented = None;
                (n.planner, n.step)
            }
        }
    }

    // ---- passthrough natives -------------------------------------------------

    fn native_view_file(&mut self, t: Turn) -> Body {
        let skill = self.r.chance(0.05);
        let path = if skill {
            format!("{}/.agy/skills/release/SKILL.md", self.ws)
        } else {
            text::abs_path(&mut self.r, &self.ws.clone())
        };
        let lines = self.sized(5, 160);
        let start = self.r.below(40) as usize;
        let content = text::file_content(&mut self.r, lines);
        let content = self.planted(content, super::secrets::Place::FileContent);
        let d = t.draw(
            self,
            vec![
                ("AbsolutePath", js(&path)),
                ("EndLine", (start + lines).to_string()),
                ("StartLine", (start + 1).to_string()),
            ],
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
        Body::new(d, Some(body), None, truncate(&content, 300))
    }

    fn native_run_command(&mut self, t: Turn) -> Body {
        let cmd = text::command(&mut self.r);
        let args = self.cmd_args(&cmd, 5000);
        let p = t.plan(self, args);
        let n = self.sized(60, 4000);
        let out = text::output(&mut self.r, n);
        let out = self.planted(out, super::secrets::Place::CommandOutput);
        let exit = if self.r.chance(0.1) { 1 } else { 0 };
        let d = p.meta(self);
        let mut rc = json!({"commandLine": cmd, "proposedCommandLine": cmd, "cwd": self.ws,
            "waitMsBeforeAsync": 5000, "blocking": true, "exitCode": exit,
            "combinedOutput": {"full": out}, "shell": "bash"});
        let terminal = format!("terminal-{}", self.r.range(1, 6));
        rc["requestedTerminalId"] = json!(terminal);
        rc["terminalId"] = json!(terminal);
        if self.r.chance(0.3) {
            rc["combinedOutputSnapshot"] = json!({"full": truncate(&out, 200)});
        }
        if self.r.chance(0.1) {
            rc["sandboxOverride"] = json!(true);
        }
        // A native step keeps its permission records as stored (passthrough):
        // an answered request with everything real responses carry, or a
        // request still waiting for the user.
        let request = json!({"permission": {"resource": {"action": "command", "target": cmd},
            "actionDescription": format!("Run {cmd}"),
            "persistSuggestionType": "PERSIST_SUGGESTION_TYPE_PREFIX",
            "suggestedPersistPattern": cmd.split(' ').next().unwrap_or_default(),
            "triggerSource": {"type": "TYPE_POLICY_RULE", "detail": "commands outside the allow list ask first"}}});
        let mut extra = json!({});
        if self.r.chance(0.06) {
            extra["permissions"] = json!({"permissionGrants": [{"action": "command", "allow": true,
                "resource": {"action": "command", "target": cmd}, "target": cmd}]});
            extra["completedInteractions"] = json!([{"request": request,
                "response": {"permission": {"allow": true,
                    "persistGrants": {"allow": [cmd.split(' ').next().unwrap_or_default()]}},
                    "stepIndex": t.idx, "trajectoryId": self.plan.trajectory_id}}]);
        } else if self.r.chance(0.02) {
            extra["status"] = json!(status("WAITING"));
            extra["requestedInteraction"] = request;
            if let Some(o) = rc.as_object_mut() {
                o.remove("exitCode");
                o.remove("combinedOutput");
                o.remove("combinedOutputSnapshot");
            }
        }
        Body::new(d, Some(rc), None, truncate(&out, 300)).with(extra)
    }

    fn native_code_action(&mut self, t: Turn) -> Body {
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let instr = text::sentence(&mut self.r, 8);
        let p = t.plan(
            self,
            vec![("Instruction", js(&instr)), ("TargetFile", js(&path))],
        );
        let diff = text::diff(&mut self.r, &path);
        let d = p.meta(self);
        let uri = format!("file://{path}");
        let ca = self.native_code_action_body(&path, &uri, &instr, &diff);
        Body::new(d, Some(ca), None, diff)
    }

    /// A native CODE_ACTION's payload as real stores hold it: an edit with
    /// replacement chunks, their match information and the structured diff,
    /// or (now and then) a file creation, an artifact edit or a fast-apply
    /// fallback.
    fn native_code_action_body(&mut self, path: &str, uri: &str, instr: &str, diff: &str) -> Value {
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
        ca
    }

    fn native_grep(&mut self, t: Turn, per_line: bool, p23: bool) -> Body {
        let q = ["TODO", "fn parse", "unwrap()", "timeout", "Error::", "café"];
        let query = self.r.pick(&q).to_string();
        let p = t.plan(
            self,
            vec![
                ("MatchPerLine", per_line.to_string()),
                ("Query", js(&query)),
                ("SearchPath", js(&self.ws)),
            ],
        );
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
        let d = p.meta(self);
        let mut g = json!({"searchPathUri": format!("file://{}", self.ws), "query": query,
            "matchPerLine": per_line, "results": res_json, "totalResults": total,
            "commandRun": format!("rg --json -n {} {}", js(&query), self.ws)});
        if let Some(rs) = g["results"].as_array_mut() {
            for r in rs.iter_mut() {
                let rel = r["relativePath"].as_str().unwrap_or_default().to_string();
                r["absolutePath"] = json!(format!("{}/{rel}", self.ws));
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
        let grep = GrepInfo {
            idx: t.idx,
            tool_call_id: d.call.id.clone(),
            per_line,
            results,
            total,
        };
        let mut body = Body::new(d, Some(g), None, format!("{n} results for {query}"));
        body.grep = Some(grep);
        body
    }

    fn native_list_dir(&mut self, t: Turn) -> Body {
        let dir = format!("{}/src", self.ws);
        let p = t.plan(self, vec![("DirectoryPath", js(&dir))]);
        let children: Vec<String> = (0..self.r.range(2, 20))
            .map(|i| format!("file_{i}.rs"))
            .collect();
        let d = p.meta(self);
        let mut ld = json!({"directoryPathUri": format!("file://{dir}"), "children": children});
        let results: Vec<Value> = children
            .iter()
            .map(|c| json!({"name": c, "isDir": false, "sizeBytes": (c.len() as u64 * 97).to_string()}))
            .chain(std::iter::once(json!({"name": "testdata", "isDir": true})))
            .collect();
        ld["results"] = json!(results);
        Body::new(d, Some(ld), None, truncate(&children.join("\n"), 300))
    }

    fn native_mcp(&mut self, t: Turn) -> Body {
        let q = text::sentence(&mut self.r, 3);
        let p = t.plan(self, vec![("query", js(&q))]);
        let res = format!(
            "[{{\"number\": {}, \"title\": {}}}]",
            self.r.range(1, 900),
            js(&q)
        );
        let d = p.meta(self);
        let mut mcp = json!({"serverName": "github",
            "toolCall": {"id": d.call.id, "name": "search_issues", "argumentsJson": d.call.args_json()},
            "resultString": res});
        if self.r.chance(0.2) {
            if let Some(m) = mcp.as_object_mut() {
                m.remove("resultString");
                m.insert(
                    "resultUri".into(),
                    json!(format!(
                        "file://{}/.gemini/mcp/result-{}.json",
                        self.ws, t.idx
                    )),
                );
            }
        }
        Body::new(d, Some(mcp), None, truncate(&res, 300))
    }

    fn native_search_web(&mut self, t: Turn) -> Body {
        let q = text::sentence(&mut self.r, 4);
        let p = t.plan(self, vec![("query", js(&q))]);
        let summary = text::paragraph(&mut self.r, 3);
        let d = p.meta(self);
        let sw = json!({"query": q, "summary": summary, "domain": "docs.example.com",
            "searchType": "SEARCH_WEB_TYPE_WEB", "thirdPartyConfig": {"provider": "THIRD_PARTY_WEB_SEARCH_PROVIDER_GEMINI"}});
        Body::new(d, Some(sw), None, truncate(&summary, 300))
    }

    fn native_read_url(&mut self, t: Turn) -> Body {
        let url = format!("https://docs.example.com/guide/{}", self.r.range(1, 99));
        let d = t.draw(self, vec![("Url", js(&url))]);
        let ru = json!({"url": url, "resolvedUrl": url, "latencyMs": self.r.range(20, 900),
            "webDocument": {"url": url, "documentId": format!("doc-{:x}", self.r.next_u64()),
                "title": text::sentence(&mut self.r, 4), "summary": text::sentence(&mut self.r, 10),
                "chunks": [{"markdownChunk": {"text": text::paragraph(&mut self.r, 2)}}]}});
        Body::new(d, Some(ru), None, truncate(&format!("Read {url}"), 300))
    }

    fn native_find(&mut self, t: Turn) -> Body {
        let dir = format!("{}/src", self.ws);
        let pattern = self
            .r
            .pick(&["*_test.go", "*.rs", "Makefile", "*.md"])
            .to_string();
        let d = t.draw(
            self,
            vec![("Pattern", js(&pattern)), ("SearchDirectory", js(&dir))],
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
        Body::new(d, Some(find), None, truncate(&raw, 300))
    }

    fn native_command_status(&mut self, t: Turn) -> Body {
        let id = format!("{}/task-{}", self.plan.id, self.r.range(1, 40));
        let wait = self.r.range(1, 30);
        let d = t.draw(
            self,
            vec![
                ("CommandId", js(&id)),
                ("WaitDurationSeconds", wait.to_string()),
            ],
        );
        let n = self.sized(20, 2_000);
        let out = text::output(&mut self.r, n);
        let out = self.planted(out, super::secrets::Place::CommandOutput);
        let cs = json!({"commandId": id, "outputCharacterCount": out.chars().count(), "waitDurationSeconds": wait});
        Body::new(d, Some(cs), None, truncate(&out, 300))
    }

    // ---- wrappers over embedded native steps ---------------------------------

    fn run_command(&mut self, t: Turn, background: bool, big: bool) -> Body {
        let idx = t.idx;
        let cmd = text::command(&mut self.r);
        let wait = if background { 500 } else { 5000 };
        let args = self.cmd_args(&cmd, wait);
        let p = t.plan(self, args);
        let size = if big {
            self.plan.big_output
        } else {
            self.sized(40, 4000)
        };
        let out = text::output(&mut self.r, size);
        let out = self.planted(out, super::secrets::Place::CommandOutput);
        let d = p.meta(self);
        let mut rc = json!({"commandLine": cmd, "proposedCommandLine": cmd, "cwd": self.ws,
            "waitMsBeforeAsync": wait, "blocking": !background,
            "combinedOutput": {"full": out}, "shell": "bash"});
        if !background {
            rc["exitCode"] = json!(if self.r.chance(0.12) { 1 } else { 0 });
        }
        let native = json!({"type": ty("RUN_COMMAND"), "status": status("DONE"),
            "metadata": Self::native_meta(&d.meta, &format!("Run {cmd}"), "Running command"),
            "runCommand": rc});
        let shown = truncate(&out, 1000);
        let mut result = carrying(&shown, &native);
        if big || out.len() > 4000 {
            result["fullOutputUri"] = Value::String(format!(
                "file://{}/.gemini/antigravity-cli/brain/{}/.system_generated/steps/{idx}/output.txt",
                self.ws, self.plan.id
            ));
        }
        let mut presented = native;
        let mut extra = json!({});
        if background {
            let td = json!({"id": format!("{}/task-{idx}", self.plan.id),
                "logUri": format!("file://{}/.gemini/tasks/{idx}.log", self.ws),
                "commandLine": cmd, "shortDescription": format!("{cmd} (background)"),
                "movedToBackgroundAt": self.ts(600)});
            extra["taskDetails"] = td.clone();
            presented["taskDetails"] = td;
        }
        Body::new(d, Some(result), Some(presented), shown).with(extra)
    }

    fn view_body(&mut self, path: &str, start1: usize, lines: usize) -> (Value, String) {
        let content = text::file_content(&mut self.r, lines);
        let content = self.planted(content, super::secrets::Place::FileContent);
        let body = json!({"absolutePathUri": format!("file://{path}"), "startLine": start1 - 1,
            "endLine": start1 + lines - 2, "content": content, "numLines": lines, "numBytes": content.len()});
        (body, content)
    }

    fn view_file(&mut self, t: Turn) -> Body {
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let lines = self.sized(5, 160);
        let start = self.r.range(1, 60) as usize;
        let d = t.draw(
            self,
            vec![
                ("AbsolutePath", js(&path)),
                ("EndLine", (start + lines - 1).to_string()),
                ("StartLine", start.to_string()),
            ],
        );
        let (body, content) = self.view_body(&path, start, lines);
        let native = json!({"type": ty("VIEW_FILE"), "status": status("DONE"),
            "metadata": Self::native_meta(&d.meta, &format!("Read {path}"), "Reading file"), "viewFile": body});
        let shown = truncate(&content, 800);
        Body::new(d, Some(carrying(&shown, &native)), Some(native), shown)
    }

    fn code_action(&mut self, t: Turn, create: bool) -> Body {
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let uri = format!("file://{path}");
        let lines = self.sized(3, 80);
        let content = text::file_content(&mut self.r, lines);
        let (called, spec, edit) = if create {
            let called = t.call(
                self,
                vec![("CodeContent", js(&content)), ("TargetFile", js(&path))],
            );
            (
                called,
                json!({"createFile": {"path": {"absoluteUri": uri}}}),
                json!({"absoluteUri": uri, "createFile": true, "unifiedDiff": format!("--- /dev/null\n+++ b/{path}\n")}),
            )
        } else {
            let instr = text::sentence(&mut self.r, 9);
            let called = t.call(
                self,
                vec![
                    ("Instruction", js(&instr)),
                    ("ReplacementContent", js(&content)),
                    ("TargetFile", js(&path)),
                ],
            );
            let diff = text::diff(&mut self.r, &path);
            (
                called,
                json!({"command": {"instruction": instr, "isEdit": true, "file": {"absoluteUri": uri}}}),
                json!({"absoluteUri": uri, "unifiedDiff": diff}),
            )
        };
        let d = called.plan(self).meta(self);
        let native = json!({"type": ty("CODE_ACTION"), "status": status("DONE"),
            "metadata": Self::native_meta(&d.meta, &format!("Edit {path}"), "Editing file"),
            "codeAction": {"actionSpec": spec, "actionResult": {"edit": edit},
                "description": text::sentence(&mut self.r, 6)}});
        let shown = format!("Updated {path}");
        Body::new(d, Some(carrying(&shown, &native)), Some(native), shown)
    }

    fn children(&mut self) -> Vec<String> {
        if self.plan.children.is_empty() {
            vec![self.r.uuid()]
        } else {
            self.plan.children.clone()
        }
    }

    /// The specs and results of a subagent call that started `kids`.
    fn subagents(&self, kids: &[String], prompt: &str) -> (Vec<Value>, Vec<Value>) {
        let specs = (0..kids.len())
            .map(|i| json!({"name": format!("helper-{i}"), "prompt": prompt, "workspace": "inherit"}))
            .collect();
        let results = kids
            .iter()
            .map(|k| json!({"conversationId": k,
                "logUri": format!("file://{}/.gemini/antigravity-cli/brain/{k}/.system_generated/logs/transcript.jsonl", self.ws),
                "workspaceUri": format!("file://{}", self.ws)}))
            .collect();
        (specs, results)
    }

    fn invoke_native(&mut self, meta: &Value, prompt: &str, status_name: &str) -> Value {
        let kids = self.children();
        let (specs, results) = self.subagents(&kids, prompt);
        json!({"type": ty("INVOKE_SUBAGENT"), "status": status(status_name),
            "metadata": Self::native_meta(meta, "Delegate to subagents", "Invoking subagents"),
            "invokeSubagent": {"subagentName": "general", "prompt": prompt, "specs": specs, "results": results}})
    }

    fn invoke_subagent(&mut self, t: Turn) -> Body {
        let prompt = text::sentence(&mut self.r, 10);
        let d = t.draw(
            self,
            vec![("Prompt", js(&prompt)), ("Workspace", js("inherit"))],
        );
        let native = self.invoke_native(&d.meta, &prompt, "DONE");
        let shown = "Subagents finished.".to_string();
        Body::new(d, Some(carrying(&shown, &native)), Some(native), shown)
    }

    fn canceled_command(&mut self, t: Turn, native_error: bool) -> Body {
        let cmd = text::command(&mut self.r);
        let args = self.cmd_args(&cmd, 5000);
        let d = t.draw(self, args);
        let n = self.sized(40, 800);
        let out = text::output(&mut self.r, n);
        let mut nm = Self::native_meta(&d.meta, &format!("Run {cmd}"), "Running command");
        let (nstatus, hist) = if native_error {
            ("ERROR", vec!["PENDING", "RUNNING", "ERROR"])
        } else {
            ("RUNNING", vec!["PENDING", "RUNNING"])
        };
        let trans: Vec<Value> = hist
            .iter()
            .map(|s| json!({"updatedStatus": status(s), "timestamp": d.meta["createdAt"].clone()}))
            .collect();
        nm["internalMetadata"] = json!({"statusTransitions": trans});
        let mut native = json!({"type": ty("RUN_COMMAND"), "status": status(nstatus), "metadata": nm,
            "runCommand": {"commandLine": cmd, "proposedCommandLine": cmd, "cwd": self.ws,
                "waitMsBeforeAsync": 5000, "blocking": true, "combinedOutput": {"full": out}, "shell": "bash"}});
        if native_error {
            native["error"] = json!({"shortError": "signal: interrupt", "fullError": "command interrupted by the user: signal: interrupt"});
        }
        let shown = "The command was canceled.".to_string();
        let result = carrying(&shown, &native);
        let mut presented = native;
        presented["status"] = Value::String(status("CANCELED"));
        Body::new(d, Some(result), Some(presented), shown)
    }

    fn permission_command(&mut self, t: Turn) -> Body {
        let cmd = self.plain_command();
        let args = self.cmd_args(&cmd, 5000);
        let d = t.draw(self, args);
        let perms = json!({"permissionGrants": [{"action": "command", "allow": true,
            "resource": {"action": "command", "target": cmd}, "target": cmd}]});
        let inter = json!([{"request": {"permission": {"resource": {"action": "command", "target": cmd},
                "triggerSource": {"type": "TYPE_FORCE_ASK_HOOK"}}},
            "response": {"permission": {"allow": true, "persistGrants": {}}}}]);
        let n = self.sized(40, 1500);
        let out = text::output(&mut self.r, n);
        let native = json!({"type": ty("RUN_COMMAND"), "status": status("DONE"),
            "metadata": Self::native_meta(&d.meta, &format!("Run {cmd}"), "Running command"),
            "permissions": perms, "completedInteractions": inter,
            "runCommand": {"commandLine": cmd, "proposedCommandLine": cmd, "cwd": self.ws,
                "waitMsBeforeAsync": 5000, "blocking": true, "exitCode": 0, "combinedOutput": {"full": out}, "shell": "bash"}});
        let shown = truncate(&out, 1000);
        Body::new(d, Some(carrying(&shown, &native)), Some(native), shown)
            .with(json!({"permissions": perms, "completedInteractions": inter}))
    }

    fn permission_view(&mut self, t: Turn) -> Body {
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let lines = self.sized(5, 120);
        let d = t.draw(
            self,
            vec![
                ("AbsolutePath", js(&path)),
                ("EndLine", lines.to_string()),
                ("StartLine", "1".into()),
            ],
        );
        let (perms, inter) = Self::read_records(&path);
        let (body, content) = self.view_body(&path, 1, lines);
        let native = json!({"type": ty("VIEW_FILE"), "status": status("DONE"),
            "metadata": Self::native_meta(&d.meta, &format!("Read {path}"), "Reading file"),
            "permissions": perms, "completedInteractions": inter, "viewFile": body});
        let shown = truncate(&content, 800);
        Body::new(d, Some(carrying(&shown, &native)), Some(native), shown)
            .with(json!({"permissions": perms, "completedInteractions": inter}))
    }

    fn content_offset(&mut self, t: Turn) -> Body {
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let off = self.r.range(1, 20_000);
        let d = t.draw(
            self,
            vec![
                ("AbsolutePath", js(&path)),
                ("ContentOffset", off.to_string()),
            ],
        );
        let lines = self.sized(5, 80);
        let content = text::file_content(&mut self.r, lines);
        let native = json!({"type": ty("VIEW_FILE"), "status": status("DONE"),
            "metadata": Self::native_meta(&d.meta, &format!("Read {path}"), "Reading file"),
            "viewFile": {"absolutePathUri": format!("file://{path}"), "content": content,
                "numLines": lines, "numBytes": content.len(), "contentOffset": off}});
        let shown = truncate(&content, 800);
        Body::new(d, Some(carrying(&shown, &native)), Some(native), shown)
    }

    fn write_append(&mut self, t: Turn, value: &str) -> Body {
        let path = format!("{}/notes/{}.md", self.ws, self.r.range(1, 99));
        let content = text::paragraph(&mut self.r, 2);
        let d = t.draw(
            self,
            vec![
                ("Append", value.to_string()),
                ("CodeContent", js(&content)),
                ("TargetFile", js(&path)),
            ],
        );
        let uri = format!("file://{path}");
        let mut create = json!({"path": {"absoluteUri": uri}});
        if value == "true" {
            create["append"] = Value::Bool(true);
        }
        let native = json!({"type": ty("CODE_ACTION"), "status": status("DONE"),
            "metadata": Self::native_meta(&d.meta, &format!("Write {path}"), "Writing file"),
            "codeAction": {"actionSpec": {"createFile": create},
                "actionResult": {"edit": {"absoluteUri": uri, "createFile": value != "true"}}}});
        let shown = format!("Wrote {path}");
        Body::new(d, Some(carrying(&shown, &native)), Some(native), shown)
    }

    fn outer_error(&mut self, t: Turn, kind: OuterKind) -> Body {
        let name = t.tool;
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let uri = format!("file://{path}");
        let (args, nty, key, body, short): (Vec<(&str, String)>, &str, &str, Value, &str) =
            match kind {
                OuterKind::RunCommand => {
                    let cmd = "frobnicate --all".to_string();
                    let a = self.cmd_args(&cmd, 5000);
                    (
                        a,
                        "RUN_COMMAND",
                        "runCommand",
                        json!({"commandLine": cmd, "proposedCommandLine": cmd, "cwd": self.ws, "blocking": true,
                            "exitCode": 127, "combinedOutput": {"full": "bash: frobnicate: command not found\n"}}),
                        "exit status 127",
                    )
                }
                OuterKind::CodeAction => (
                    vec![("CodeContent", js("x")), ("TargetFile", js(&path))],
                    "CODE_ACTION",
                    "codeAction",
                    json!({"actionSpec": {"createFile": {"path": {"absoluteUri": uri}}}}),
                    "parent directory does not exist",
                ),
                OuterKind::ViewFile => (
                    vec![("AbsolutePath", js(&path))],
                    "VIEW_FILE",
                    "viewFile",
                    json!({"absolutePathUri": uri}),
                    "file not found",
                ),
                OuterKind::GrepSearch => (
                    vec![("Query", js("fn (")), ("SearchPath", js(&self.ws))],
                    "GREP_SEARCH",
                    "grepSearch",
                    json!({"query": "fn (", "searchPathUri": format!("file://{}", self.ws)}),
                    "regex parse error",
                ),
                OuterKind::McpTool => (
                    vec![("title", js("Flaky test"))],
                    "MCP_TOOL",
                    "mcpTool",
                    json!({"serverName": "github", "toolCall": {"name": "create_issue", "argumentsJson": "{\"title\":\"Flaky test\"}"}}),
                    "MCP server github is not connected",
                ),
                OuterKind::ReadUrl => (
                    vec![("Url", js("https://example.com/missing"))],
                    "READ_URL_CONTENT",
                    "readUrlContent",
                    json!({"url": "https://example.com/missing"}),
                    "HTTP 404 Not Found",
                ),
                OuterKind::SearchWeb => (
                    vec![("query", js("rust wal format"))],
                    "SEARCH_WEB",
                    "searchWeb",
                    json!({"query": "rust wal format"}),
                    "search quota exceeded",
                ),
            };
        let d = t.draw(self, args);
        let mut native = json!({"type": ty(nty), "status": status("ERROR"),
            "metadata": Self::native_meta(&d.meta, name, "Running tool"),
            "error": {"shortError": short, "fullError": format!("{name}: {short}"),
                "userErrorMessage": format!("The tool {name} failed."),
                "errorId": format!("err-{:016x}", self.r.next_u64()), "isBenign": self.r.chance(0.3),
                "structuredErrorParts": [{"text": format!("{name} failed: ")}, {"codeText": short},
                    {"directoryUri": format!("file://{}", self.ws)}, {"url": "https://antigravity.google/docs/errors"}]}});
        native[key] = body;
        let error =
            json!({"shortError": short, "fullError": format!("tool {name} failed: {short}")});
        Body::new(
            d,
            Some(carrying_only(&native)),
            Some(native),
            format!("Error: {short}"),
        )
        .with(json!({ "error": error }))
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

    fn failed_image(&mut self, t: Turn) -> Body {
        let (args, prompt, name) = self.image_args();
        let d = t.draw(self, args);
        let short = "image generation blocked by the safety filter";
        let native = json!({"type": ty("GENERATE_IMAGE"), "status": status("ERROR"),
            "metadata": Self::native_meta(&d.meta, "Generate image", "Generating image"),
            "error": {"shortError": short, "fullError": format!("generate_image: {short}")},
            "generateImage": {"prompt": prompt, "imageName": name, "aspectRatio": "16:9"}});
        let error = json!({"shortError": short, "fullError": format!("tool generate_image failed: {short}")});
        Body::new(
            d,
            Some(carrying_only(&native)),
            Some(native),
            short.to_string(),
        )
        .with(json!({ "error": error }))
    }

    fn media(&mut self, name: &str) -> Value {
        json!({"mimeType": "image/png", "uri": format!("file://{}/.gemini/images/{name}.png", self.ws)})
    }

    fn image_success(&mut self, t: Turn) -> Body {
        let (args, prompt, name) = self.image_args();
        let d = t.draw(self, args);
        let mut m = self.media(&name);
        if self.r.chance(0.5) {
            let img = self.r.bytes(96);
            m["inlineData"] = json!(base64_lite::encode(&img));
        }
        let native = json!({"type": ty("GENERATE_IMAGE"), "status": status("DONE"),
            "metadata": Self::native_meta(&d.meta, "Generate image", "Generating image"),
            "generateImage": {"prompt": prompt, "imageName": name, "aspectRatio": "16:9",
                "modelName": "imagen-4", "generatedMedia": m}});
        let shown = format!("Generated {name}.png");
        let result = json!({"result": shown, "media": [m], "payload": any_of(STEP_ANY, &native)});
        Body::new(d, Some(result), Some(native), shown)
    }

    fn failed_list_resources(&mut self, t: Turn) -> Body {
        let d = t.draw(self, vec![("ServerName", js("github"))]);
        let short = "MCP server github does not support resources";
        let native = json!({"type": ty("LIST_RESOURCES"), "status": status("ERROR"), "metadata": d.meta.clone(),
            "error": {"shortError": short, "fullError": format!("list_resources: {short}")},
            "listResources": {"serverName": "github"}});
        let shown = format!("Error: {short}");
        let error = json!({"shortError": short, "fullError": format!("tool list_resources failed: {short}")});
        Body::new(d, Some(carrying(&shown, &native)), Some(native), shown)
            .with(json!({ "error": error }))
    }

    fn bridge_failure(&mut self, t: Turn) -> Body {
        let cmd = self.plain_command();
        let args = self.cmd_args(&cmd, 5000);
        let d = t.draw(self, args);
        let mut nm = d.meta.clone();
        if let Some(trans) = nm["internalMetadata"]["statusTransitions"].as_array_mut() {
            trans.truncate(2);
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
        let result = carrying_only(&native);
        let mut presented = native;
        presented["status"] = Value::String(status("ERROR"));
        Body::new(d, Some(result), Some(presented), truncate(&out, 500))
            .with(json!({"error": {"shortError": err, "fullError": err}}))
    }

    // ---- resultless wrappers -------------------------------------------------

    fn failed_before_run(&mut self, t: Turn, kind: BeforeRunKind) -> Body {
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let (args, short): (Vec<(&str, String)>, &str) = match kind {
            BeforeRunKind::WriteToFile => (
                vec![
                    ("CodeContent", js("fn main() {}\n")),
                    ("TargetFile", js(&path)),
                ],
                "open target file: permission denied",
            ),
            BeforeRunKind::WriteToFileInvalid => (
                vec![
                    ("CodeContent", js("x")),
                    ("TargetFile", js("relative/path.rs")),
                ],
                "invalid arguments: TargetFile must be an absolute path",
            ),
            BeforeRunKind::ViewFile => (
                vec![
                    ("AbsolutePath", js(&path)),
                    ("EndLine", "40".into()),
                    ("StartLine", "1".into()),
                ],
                "file does not exist",
            ),
            BeforeRunKind::FindByName => (
                vec![
                    ("Pattern", js("*.proto")),
                    ("SearchDirectory", js(&self.ws)),
                ],
                "search directory is outside the workspace",
            ),
            BeforeRunKind::ListDir => (
                vec![("DirectoryPath", js(&format!("{}/missing", self.ws)))],
                "directory does not exist",
            ),
            BeforeRunKind::Schedule => (
                vec![
                    ("DurationSeconds", "-5".into()),
                    ("Prompt", js("check again")),
                    ("TimerCondition", js("elapsed")),
                ],
                "duration must be positive",
            ),
            BeforeRunKind::GenerateImageInvalid => (
                vec![
                    ("AspectRatio", js("7:3")),
                    ("ImageName", js("banner")),
                    ("Prompt", js("a banner")),
                ],
                "invalid arguments: aspect ratio 7:3 is not supported",
            ),
        };
        // agy repeats the rejection text as the full error of an INVALID call
        let full = if t.status() == "INVALID" {
            short.to_string()
        } else {
            format!("{}: {short}", t.tool)
        };
        let d = t.draw(self, args);
        Body::new(d, None, None, short.to_string())
            .with(json!({"error": {"shortError": short, "fullError": full}}))
    }

    fn resultless_command(meta: &Value, cmd: &str, cwd: &str, st: &str) -> Value {
        json!({"type": ty("RUN_COMMAND"), "status": status(st), "metadata": meta.clone(),
            "runCommand": {"commandLine": cmd, "proposedCommandLine": cmd, "cwd": cwd, "blocking": true,
                "combinedOutput": {}}})
    }

    fn hook_denied(&mut self, t: Turn) -> Body {
        let cmd = "rm -rf build".to_string();
        let args = self.cmd_args(&cmd, 5000);
        let d = t.draw(self, args);
        let err = format!("tool call denied by pre-tool hook: {HOOK_DENIAL}");
        let error = json!({"shortError": err, "fullError": err});
        let mut presented = Self::resultless_command(&d.meta, &cmd, &self.ws, "ERROR");
        presented["error"] = error.clone();
        Body::new(d, None, Some(presented), err).with(json!({ "error": error }))
    }

    fn missing_tool_summary(&mut self, t: Turn, read: bool) -> Body {
        let args: Vec<(&str, String)> = if read {
            let path = text::abs_path(&mut self.r, &self.ws.clone());
            vec![
                ("AbsolutePath", js(&path)),
                ("EndLine", "80".into()),
                ("StartLine", "1".into()),
                ("toolAction", js("Reading file")),
            ]
        } else {
            let cmd = text::command(&mut self.r);
            vec![
                ("CommandLine", js(&cmd)),
                ("Cwd", js(&self.ws)),
                ("IsDaemon", "false".into()),
                ("RunPersistent", "false".into()),
                ("WaitMsBeforeAsync", "5000".into()),
                ("toolAction", js("Running tests")),
            ]
        };
        let d = t.draw(self, args);
        Body::new(d, None, None, MISSING_TOOL_SUMMARY.into()).with(
            json!({"error": {"shortError": MISSING_TOOL_SUMMARY, "fullError": MISSING_TOOL_SUMMARY}}),
        )
    }

    fn rejected_permission(&mut self, t: Turn, headless: bool) -> Body {
        let cmd = self.plain_command();
        let mut args = self.cmd_args(&cmd, 5000);
        if headless {
            args.push(("BypassSandbox", js("false")));
        }
        let d = t.draw(self, args);
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
        let mut presented = Self::resultless_command(&d.meta, &cmd, &self.ws, "ERROR");
        presented["error"] = error.clone();
        presented["completedInteractions"] = inter.clone();
        Body::new(d, None, Some(presented), err)
            .with(json!({"error": error, "completedInteractions": inter}))
    }

    fn canceled_prompt(&mut self, t: Turn, bypass: bool) -> Body {
        let cmd = self.plain_command();
        let mut args = self.cmd_args(&cmd, 5000);
        if bypass {
            args.push(("BypassSandbox", js("false")));
        }
        let d = t.draw(self, args);
        let presented =
            (!bypass).then(|| Self::resultless_command(&d.meta, &cmd, &self.ws, "CANCELED"));
        Body::new(d, None, presented, "canceled".into())
    }

    fn builtin_view_file(&mut self, t: Turn, lines: bool, skill: bool) -> Body {
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
        let d = t.draw(self, args);
        let short = if skill {
            "permission denied".to_string()
        } else {
            "path is a device, pipe, or socket, not a standard file".to_string()
        };
        let error = json!({"shortError": short, "fullError": format!("open {path}: {short}")});
        let mut vf = json!({"absolutePathUri": format!("file://{path}")});
        if lines {
            vf["startLine"] = json!(s - 1);
            vf["endLine"] = json!(e - 1);
        }
        if skill {
            vf["isSkillFile"] = Value::Bool(true);
            let turn = self.turn_of.get(t.idx).copied().unwrap_or(0);
            if let Some(regs) = self.registrations.get_mut(turn) {
                regs.push(json!({"path": path, "kind": "KIND_SKILL", "enabled": true}));
            }
        }
        let presented = json!({"type": ty("VIEW_FILE"), "status": status("ERROR"), "metadata": d.meta,
            "error": error, "viewFile": vf});
        Body::new(d, None, Some(presented), short).with(json!({ "error": error }))
    }

    // ---- payload-free wrappers -----------------------------------------------

    fn task_id(&mut self) -> String {
        format!("{}/task-{}", self.plan.id, self.r.range(3, 400))
    }

    fn manage_task(&mut self, t: Turn, kind: TaskKind) -> Body {
        let tid = self.task_id();
        let desc = "cargo test --workspace (background)";
        let task_meta =
            json!({"task_description": desc, "task_id": tid, "tool_name": "run_command"});
        let (args, result): (Vec<(&str, String)>, Value) = match kind {
            TaskKind::Status => (
                vec![("Action", js("status")), ("TaskId", js(&tid))],
                json!({"result": format!("Task {tid} is running (elapsed 42s)"), "metadata": task_meta,
                    "stepRenderInfo": render("Task status", "**running** · 42s", "Checked")}),
            ),
            TaskKind::List => (
                vec![("Action", js("list"))],
                json!({"result": "1 task running", "stepRenderInfo": render("Tasks", "1 running", "Listed")}),
            ),
            TaskKind::Kill => (
                vec![("Action", js("kill")), ("TaskId", js(&tid))],
                json!({"result": format!("Killed {tid}"), "metadata": task_meta,
                    "stepRenderInfo": render("Task killed", "stopped", "Killed")}),
            ),
            TaskKind::SendMessage => (
                vec![
                    ("ConversationId", js(&self.plan.root.clone())),
                    ("Message", js(&text::sentence(&mut self.r, 10))),
                ],
                json!({"result": "Message delivered", "stepRenderInfo": render("Message", "delivered ✓", "Sent")}),
            ),
            TaskKind::Error => (
                vec![("Action", js("status")), ("TaskId", js(&tid))],
                json!({"result": format!("no task {tid}"), "stepRenderInfo": render("Task status", "not found", "Checked")}),
            ),
        };
        let d = t.draw(self, args);
        let shown = result["result"].as_str().unwrap_or("").to_string();
        let body = Body::new(d, Some(result), None, shown);
        if kind == TaskKind::Error {
            body.with(json!({"error": {"shortError": "task not found",
                "fullError": format!("manage_task: task {tid} not found")}}))
        } else {
            body
        }
    }

    fn send_input(&mut self, t: Turn) -> Body {
        let idx = t.idx;
        let tid = self.task_id();
        let input = "y\n";
        let d = t.draw(
            self,
            vec![
                ("Action", js("send_input")),
                ("Input", js(input)),
                ("TaskId", js(&tid)),
            ],
        );
        let result = json!({"result": format!("Sent input to {tid}"),
            "metadata": {"input": input, "task_id": tid, "task_description": "npm init (interactive)", "tool_name": "run_command"},
            "fullOutputUri": format!("file://{}/.gemini/tasks/{}.log", self.ws, idx),
            "stepRenderInfo": render("Input sent", "`y`", "Sent")});
        Body::new(d, Some(result), None, format!("Sent input to {tid}"))
    }

    /// A timer: set (DONE), refused by an unavailable scheduler (ERROR, with
    /// the outer error) or rejected as invalid, by the row's history.
    fn schedule(&mut self, t: Turn, task_details: bool) -> Body {
        let idx = t.idx;
        let secs = self.r.range(30, 3600);
        let d = t.draw(
            self,
            vec![
                ("DurationSeconds", secs.to_string()),
                ("Prompt", js("check whether the deploy finished")),
                ("TimerCondition", js("elapsed")),
            ],
        );
        let result = json!({"result": format!("Timer set for {secs}s"), "stepRenderInfo": render("Timer", &format!("{secs}s"), "Scheduled")});
        let mut extra = json!({});
        if task_details {
            extra["taskDetails"] = json!({"id": format!("{}/task-{idx}", self.plan.id), "shortDescription": format!("timer {secs}s")});
        }
        if t.status() == "ERROR" {
            extra["error"] = json!({"shortError": "scheduler unavailable", "fullError": "schedule: scheduler unavailable"});
        }
        Body::new(d, Some(result), None, format!("Timer set for {secs}s")).with(extra)
    }

    fn manage_subagents(&mut self, t: Turn, extra_key: bool) -> Body {
        let a = self.r.uuid();
        let b = self.r.uuid();
        let d = t.draw(self, vec![("Action", js("kill"))]);
        let mut md = json!({"killed_conversation_ids": format!("{a},{b}")});
        if extra_key {
            md["reason"] = Value::String("requested by the user".into());
        }
        let result = json!({"result": "Killed 2 subagents", "metadata": md,
            "stepRenderInfo": render("Subagents", "2 killed", "Killed")});
        Body::new(d, Some(result), None, "Killed 2 subagents".into())
    }

    fn define_subagent(&mut self, t: Turn, definition: bool) -> Body {
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
        let d = t.draw(self, args);
        let result = json!({"result": "Defined subagent reviewer", "stepRenderInfo": render("Subagent", "reviewer", "Defined")});
        Body::new(d, Some(result), None, "Defined subagent reviewer".into())
    }

    fn list_permissions(&mut self, t: Turn, with_arg: bool) -> Body {
        let args = if with_arg {
            vec![("Scope", js("all"))]
        } else {
            vec![]
        };
        let d = t.draw(self, args);
        let result = json!({"result": "Allowed: run_command `git *`; read_file `**`",
            "stepRenderInfo": render("Permissions", "2 grants", "Listed")});
        Body::new(d, Some(result), None, "2 grants".into())
    }

    fn ask_permission(&mut self, t: Turn) -> Body {
        let cmd = self.plain_command();
        let d = t.draw(
            self,
            vec![
                ("Action", js("run_command")),
                ("Reason", js("needed to run the test suite")),
                ("Target", js(&cmd)),
            ],
        );
        let result = json!({"result": "Permission granted", "stepRenderInfo": render("Permission", &cmd, "Granted")});
        Body::new(d, Some(result), None, "Permission granted".into())
    }

    /// A tool this corpus has no rule for.
    fn unknown_tool(&mut self, t: Turn) -> Body {
        let d = t.draw(self, vec![("Todos", js("[\"write tests\"]"))]);
        let result = json!({"result": "1 todo", "stepRenderInfo": render("Todos", "1", "Updated")});
        Body::new(d, Some(result), None, "1 todo".into())
    }

    fn generate_image_any(&mut self, t: Turn) -> Body {
        let (args, prompt, name) = self.image_args();
        let d = t.draw(self, args);
        let m = self.media(&name);
        let uri = m["uri"].clone();
        let payload = json!({"prompt": prompt, "imageName": name, "aspectRatio": "16:9",
            "modelName": "imagen-4", "imageUri": uri});
        let shown = format!("Generated {name}.png");
        let result = json!({"result": shown, "media": [m.clone()], "payload": any_of(GENERATE_IMAGE_ANY, &payload)});
        let presented = json!({"type": ty("GENERATE_IMAGE"), "status": status("DONE"), "metadata": d.meta,
            "generateImage": {"prompt": prompt, "imageName": name, "aspectRatio": "16:9",
                "modelName": "imagen-4", "generatedMedia": m}});
        Body::new(d, Some(result), Some(presented), shown)
    }

    // ---- modern (agy 1.4.x) tool payloads: tools143, tools144, skill146 -------

    /// The stored step with result metadata `md` (the payload-derived keys
    /// the ordinary presentation adds).
    fn with_result_metadata(stored: &Value, md: Value) -> Value {
        let mut p = stored.clone();
        p["generic"]["result"]["metadata"] = md;
        p
    }

    fn modern_run_command(&mut self, t: Turn, background: bool) -> Body {
        let idx = t.idx;
        let cmd = text::command(&mut self.r);
        let args = self.cmd_args(&cmd, if background { 500 } else { 5000 });
        let d = t.draw(self, args);
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
        let result = carrying_tool(&out, "RunCommand", &payload);
        let mut presented = json!({"type": ty("RUN_COMMAND"), "status": status("DONE"), "metadata": d.meta, "runCommand": rc});
        let mut extra = json!({});
        if background {
            let td = json!({"id": format!("{}/task-{idx}", self.plan.id), "commandLine": cmd,
                "shortDescription": format!("{cmd} (background)"), "movedToBackgroundAt": self.ts(600)});
            extra["taskDetails"] = td.clone();
            presented["taskDetails"] = td;
        }
        Body::new(d, Some(result), Some(presented), out).with(extra)
    }

    fn modern_canceled_background(&mut self, t: Turn) -> Body {
        let idx = t.idx;
        let cmd = text::command(&mut self.r);
        let args = self.cmd_args(&cmd, 5000);
        let d = t.draw(self, args);
        let td = json!({"id": format!("{}/task-{idx}", self.plan.id),
            "logUri": format!("file://{}/.gemini/tasks/{idx}.log", self.ws), "commandLine": cmd,
            "shortDescription": format!("{cmd} (background)"), "movedToBackgroundAt": self.ts(600)});
        let result = json!({"stepRenderInfo": render("Command", &cmd, "Canceled")});
        let presented = json!({"type": ty("RUN_COMMAND"), "status": status("CANCELED"), "metadata": d.meta,
            "taskDetails": td,
            "runCommand": {"commandLine": cmd, "proposedCommandLine": cmd, "cwd": self.ws, "combinedOutput": {}}});
        Body::new(d, Some(result), Some(presented), String::new())
            .with(json!({ "taskDetails": td }))
    }

    fn modern_read_file(&mut self, t: Turn, skill: bool, range: bool) -> Body {
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
            read_range(&mut args, &mut payload, &mut vf, start, end);
        }
        let d = t.draw(self, args);
        let content = text::file_content(&mut self.r, lines);
        let shown = truncate(&content, 800);
        vf["content"] = json!(shown);
        let result = carrying_tool(&shown, "ReadFile", &payload);
        let presented = json!({"type": ty("VIEW_FILE"), "status": status("DONE"), "metadata": d.meta, "viewFile": vf});
        Body::new(d, Some(result), Some(presented), shown)
    }

    /// A modern replace_file_content edit: its arguments, the (drawn) diff,
    /// the presented action spec and edit.
    fn replacement(
        &mut self,
        path: &str,
        uri: &str,
        instr: &str,
        content: &str,
    ) -> (Vec<(&'static str, String)>, String, Value, Value) {
        let diff = text::diff(&mut self.r, path);
        let args = vec![
            ("Instruction", js(instr)),
            ("ReplacementContent", js(content)),
            ("TargetFile", js(path)),
        ];
        let spec = json!({"command": {"instruction": instr, "isEdit": true, "file": {"absoluteUri": uri}}});
        let edit = json!({"absoluteUri": uri, "unifiedDiff": diff});
        (args, diff, spec, edit)
    }

    fn modern_file_edit(&mut self, t: Turn, create: bool, empty: bool) -> Body {
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let uri = format!("file://{path}");
        let (args, diff, spec, edit) = if create {
            let content = if empty {
                String::new()
            } else {
                let n = self.sized(3, 60);
                text::file_content(&mut self.r, n)
            };
            let diff = if empty {
                String::new()
            } else {
                creation_diff(&path, &content)
            };
            let (spec, edit) = created(&uri, &diff);
            let args = vec![("CodeContent", js(&content)), ("TargetFile", js(&path))];
            (args, diff, spec, edit)
        } else {
            let instr = text::sentence(&mut self.r, 9);
            let n = self.sized(3, 40);
            let content = text::file_content(&mut self.r, n);
            self.replacement(&path, &uri, &instr, &content)
        };
        let d = t.draw(self, args);
        let kind = if create { "KIND_CREATE" } else { "KIND_EDIT" };
        let payload =
            json!({"path": path, "kind": kind, "diff": diff, "outcome": "OUTCOME_COMPLETED"});
        let shown = format!("{} {path}", if create { "Created" } else { "Edited" });
        let result = carrying_tool(&shown, "FileEdit", &payload);
        let presented = json!({"type": ty("CODE_ACTION"), "status": status("DONE"), "metadata": d.meta,
            "codeAction": {"actionSpec": spec, "actionResult": {"edit": edit}}});
        Body::new(d, Some(result), Some(presented), shown)
    }

    fn modern_invoke_subagent(&mut self, t: Turn, inherit: bool) -> Body {
        let prompt = text::sentence(&mut self.r, 10);
        let mut args = vec![("Prompt", js(&prompt))];
        if inherit {
            args.push(("Workspace", js("inherit")));
        }
        let d = t.draw(self, args);
        let kids: Vec<String> = (0..self.r.range(1, 2)).map(|_| self.r.uuid()).collect();
        let (specs, results) = self.subagents(&kids, &prompt);
        let payload = json!({"specs": specs, "results": results, "outcome": "OUTCOME_COMPLETED"});
        let shown = "Subagents finished.".to_string();
        let result = carrying_tool(&shown, "InvokeSubagent", &payload);
        let presented = json!({"type": ty("INVOKE_SUBAGENT"), "status": status("DONE"), "metadata": d.meta,
            "invokeSubagent": {"specs": specs, "results": results}});
        Body::new(d, Some(result), Some(presented), shown)
    }

    fn modern_manage_task(&mut self, t: Turn, a: u8) -> Body {
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
        let d = t.draw(self, args);
        let payload = json!({"action": action, "tasks": [{"taskId": task_id, "description": desc, "status": task_status}],
            "outcome": "OUTCOME_COMPLETED"});
        let shown = format!("{task_id}: {task_status}");
        let mut result = carrying_tool(&shown, "ManageTask", &payload);
        result["stepRenderInfo"] = render("Task", &shown, "Checked");
        Body::new(d, Some(result), None, shown).result_metadata(json!({"action": action,
            "task_id": task_id, "task_description": desc, "task_status": task_status}))
    }

    fn modern_schedule(&mut self, t: Turn) -> Body {
        let secs = self.r.range(30, 3600);
        let prompt = "check whether the deploy finished";
        let d = t.draw(
            self,
            vec![
                ("DurationSeconds", secs.to_string()),
                ("Prompt", js(prompt)),
            ],
        );
        let payload = json!({"durationSeconds": secs.to_string(), "prompt": prompt, "canceled": true,
            "outcome": "OUTCOME_CANCELED"});
        let shown = format!("Timer for {secs}s canceled");
        let mut result = carrying_tool(&shown, "Schedule", &payload);
        result["stepRenderInfo"] = render("Timer", &format!("{secs}s"), "Canceled");
        Body::new(d, Some(result), None, shown)
            .result_metadata(json!({"duration_seconds": secs.to_string(), "canceled": "true"}))
    }

    fn modern_manage_subagents(&mut self, t: Turn) -> Body {
        let a = self.r.uuid();
        let b = self.r.uuid();
        let d = t.draw(self, vec![("Action", js("list"))]);
        let payload =
            json!({"action": "list", "conversationIds": [a, b], "outcome": "OUTCOME_COMPLETED"});
        let shown = "2 subagents".to_string();
        let mut result = carrying_tool(&shown, "ManageSubagents", &payload);
        result["stepRenderInfo"] = render("Subagents", "2 running", "Listed");
        Body::new(d, Some(result), None, shown)
            .result_metadata(json!({"action": "list", "conversation_ids": format!("{a},{b}")}))
    }

    // ---- ide225 / finish147 / replay147 (Antigravity IDE 2.25, agy 1.4.7) ----

    /// An approved read's two permission records (ide225 keeps both).
    fn read_records(path: &str) -> (Value, Value) {
        let perms = json!({"permissionGrants": [{"action": "read_file", "allow": true,
            "resource": {"action": "read_file", "target": path}, "target": path}]});
        let inter = json!([{"request": {"permission": {"resource": {"action": "read_file", "target": path},
                "actionDescription": format!("Read {path}")}},
            "response": {"permission": {"allow": true, "persistGrants": {}}}}]);
        (perms, inter)
    }

    fn modern_ide225_read(&mut self, t: Turn, permission: bool, offset: bool) -> Body {
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let lines = self.sized(5, 120);
        let start = self.r.range(1, 60) as usize;
        let end = start + lines - 1;
        let range = self.r.chance(0.5);
        let mut args = vec![("AbsolutePath", js(&path))];
        let mut payload = json!({"path": path, "outcome": "OUTCOME_COMPLETED"});
        let mut vf = json!({"absolutePathUri": format!("file://{path}")});
        if range {
            read_range(&mut args, &mut payload, &mut vf, start, end);
        }
        if offset {
            args.push(("ByteOffset", "0".into()));
            payload["byteOffset"] = json!("0");
        }
        let d = t.draw(self, args);
        let content = text::file_content(&mut self.r, lines);
        let shown = truncate(&content, 800);
        vf["content"] = json!(shown);
        let result = carrying_tool(&shown, "ReadFile", &payload);
        let mut presented = json!({"type": ty("VIEW_FILE"), "status": status("DONE"), "metadata": d.meta, "viewFile": vf});
        let mut extra = json!({});
        if permission {
            let (perms, inter) = Self::read_records(&path);
            extra["permissions"] = perms.clone();
            extra["completedInteractions"] = inter.clone();
            presented["permissions"] = perms;
            presented["completedInteractions"] = inter;
        }
        Body::new(d, Some(result), Some(presented), shown).with(extra)
    }

    fn modern_artifact(&mut self, t: Turn, create: bool) -> Body {
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
        let (args, diff, spec, edit, meta_payload) = if create {
            let diff = creation_diff(&path, &content);
            let summary = text::sentence(&mut self.r, 8);
            let facing = self.r.chance(0.7);
            let updated = self.ts(400);
            let arg = format!(
                "{{\"Summary\":{},\"UserFacing\":{facing},\"RequestFeedback\":false}}",
                js(&summary)
            );
            let args = vec![
                ("ArtifactMetadata", arg),
                ("CodeContent", js(&content)),
                ("TargetFile", js(&path)),
            ];
            let (spec, edit) = created(&uri, &diff);
            let meta = json!({"summary": summary, "updatedAt": updated, "userFacing": facing});
            (args, diff, spec, edit, Some(meta))
        } else {
            let instr = text::sentence(&mut self.r, 9);
            let (args, diff, spec, edit) = self.replacement(&path, &uri, &instr, &content);
            (args, diff, spec, edit, None)
        };
        let d = t.draw(self, args);
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
        let result = carrying_tool(&shown, "FileEdit", &payload);
        let presented = json!({"type": ty("CODE_ACTION"), "status": status("DONE"), "metadata": d.meta,
            "codeAction": ca});
        Body::new(d, Some(result), Some(presented), shown)
    }

    fn modern_finish(&mut self, t: Turn) -> Body {
        let summary = text::sentence(&mut self.r, 8);
        let passed = self.r.chance(0.8);
        let d = t.draw(
            self,
            vec![("Passed", passed.to_string()), ("Summary", js(&summary))],
        );
        let schema = "{\"type\":\"object\",\"properties\":{\"Passed\":{\"type\":\"boolean\"},\"Summary\":{\"type\":\"string\"}},\"required\":[\"Passed\",\"Summary\"]}";
        let payload = json!({"resultSchema": schema, "resultJson": d.call.args_json(),
            "outcome": "OUTCOME_COMPLETED"});
        let shown = "Finished.".to_string();
        let result = carrying_tool(&shown, "Finish", &payload);
        Body::new(d, Some(result), None, shown)
    }

    fn modern_missing_file(&mut self, t: Turn) -> Body {
        let path = text::abs_path(&mut self.r, &self.ws.clone());
        let d = t.draw(self, vec![("AbsolutePath", js(&path))]);
        let payload = json!({"path": path, "notFound": true, "outcome": "OUTCOME_COMPLETED"});
        let shown = format!("File not found: {path}");
        let result = carrying_tool(&shown, "ReadFile", &payload);
        Body::new(d, Some(result), None, shown)
    }

    /// A tools143 command whose daemon presentation copies the stored wait
    /// (replay147's other complete form), built from the same call.
    fn modern_replay_copied(&mut self, t: Turn) -> Body {
        let background = self.r.chance(0.3);
        let mut body = self.modern_run_command(t, background);
        let wait = body
            .drawn
            .call
            .args
            .iter()
            .find(|(k, _)| k == "WaitMsBeforeAsync")
            .map(|(_, v)| v.clone());
        if let (Some(w), Some(pr)) = (wait, body.presented.as_mut()) {
            pr["runCommand"]["waitMsBeforeAsync"] = Value::String(w);
        }
        body
    }

    fn modern_image_read(&mut self, t: Turn, k: u8) -> Body {
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
        let d = t.draw(self, vec![("AbsolutePath", js(&path))]);
        let media = json!({"mimeType": mime, "inlineData": base64_lite::encode(&data)});
        let payload = json!({"path": path, "media": [media.clone()], "numBytes": data.len(),
            "outcome": "OUTCOME_COMPLETED"});
        let shown = format!("Read image {path} ({mime}, {} bytes)", data.len());
        let result = carrying_tool(&shown, "ReadFile", &payload);
        let presented = json!({"type": ty("VIEW_FILE"), "status": status("DONE"), "metadata": d.meta,
            "viewFile": {"absolutePathUri": format!("file://{path}"), "content": shown,
                "mediaData": media, "numBytes": data.len()}});
        Body::new(d, Some(result), Some(presented), shown)
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
    build_planted(plan, seed, false).0
}

/// [`build`], with fake credentials planted when `plant` is set
/// (`--plant-secrets`), and the values planted.
pub fn build_planted(
    plan: &ConvPlan,
    seed: u64,
    plant: bool,
) -> (ConvJson, Vec<super::secrets::Planted>) {
    let mut cx = Ctx::new(plan, seed);
    if plant {
        cx.plant = Some(super::secrets::Planter::new(seed, &plan.id));
    }
    let n = plan.steps.len();
    let mut steps: Vec<StepJson> = Vec::with_capacity(n);
    let mut checkpoints = 0usize;
    let mut i = 0;
    while i < n {
        if let Some(p) = &mut cx.plant {
            // A planner and its tool are built together: the tool's text.
            p.step = match (plan.steps[i], plan.steps.get(i + 1)) {
                (StepKind::Planner { tool_call: true }, Some(StepKind::Tool(_))) => i + 1,
                _ => i,
            };
        }
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
    let planted = cx.plant.take().map(|p| p.planted).unwrap_or_default();
    (
        ConvJson {
            steps,
            gens,
            execs,
            refs,
            metadata,
            prompt_pos,
            snapshot_gen,
        },
        planted,
    )
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
