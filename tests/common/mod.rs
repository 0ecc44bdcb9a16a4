//! Fixture builders for the integration tests: conversations are written by
//! test code (rusqlite + prost-reflect), never committed as binaries.
#![allow(dead_code)]

use agy_audit::schema::Schema;
use agy_audit::source::legacy::{encrypt, LegacyKey};
use agy_audit::source::wire::{put_len_field, put_varint, FieldIter, WireType};
use prost::Message;
use prost_reflect::DynamicMessage;
use rusqlite::Connection;
use std::path::{Path, PathBuf};

/// agy's nine DDL statements, verbatim (public-format-facts §1.2).
pub const DDL: &[&str] = &[
    "CREATE TABLE `trajectory_meta` (`trajectory_id` text,`cascade_id` text,`trajectory_type` integer,`source` integer,PRIMARY KEY (`trajectory_id`))",
    "CREATE TABLE `steps` (`idx` integer,`step_type` integer NOT NULL DEFAULT 0,`status` integer NOT NULL DEFAULT 0,`has_subtrajectory` numeric NOT NULL DEFAULT false,`metadata` blob,`error_details` blob,`permissions` blob,`task_details` blob,`render_info` blob,`step_payload` blob,`step_format` integer NOT NULL DEFAULT 0,PRIMARY KEY (`idx`))",
    "CREATE INDEX `idx_steps_status` ON `steps`(`status`)",
    "CREATE INDEX `idx_steps_step_type` ON `steps`(`step_type`)",
    "CREATE TABLE `gen_metadata` (`idx` integer,`data` blob,`size` integer NOT NULL DEFAULT 0,PRIMARY KEY (`idx`))",
    "CREATE TABLE `executor_metadata` (`idx` integer,`data` blob,PRIMARY KEY (`idx`))",
    "CREATE TABLE `parent_references` (`idx` integer,`data` blob,PRIMARY KEY (`idx`))",
    "CREATE TABLE `trajectory_metadata_blob` (`id` text DEFAULT \"main\",`data` blob,PRIMARY KEY (`id`))",
    "CREATE TABLE `battle_mode_infos` (`idx` integer,`data` blob,PRIMARY KEY (`idx`))",
];

pub const CASCADE: &str = "5f0c7a1e-2b3d-4c5e-8f90-a1b2c3d4e5f6";
pub const TRAJ: &str = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d";

pub fn schema() -> Schema {
    Schema::modeled().expect("modeled schema")
}

/// Encodes a message of type `name` from its proto3 JSON.
pub fn msg(schema: &Schema, name: &str, json: &str) -> Vec<u8> {
    let desc = schema
        .pool
        .get_message_by_name(name)
        .unwrap_or_else(|| panic!("no {name}"));
    let mut de = serde_json::Deserializer::from_str(json);
    let m = DynamicMessage::deserialize(desc, &mut de)
        .unwrap_or_else(|e| panic!("{name}: {e}\n{json}"));
    m.encode_to_vec()
}

pub fn step(schema: &Schema, json: &str) -> Vec<u8> {
    msg(schema, "gemini_coder.Step", json)
}

/// A field number by message and field name.
pub fn num(schema: &Schema, message: &str, field: &str) -> u32 {
    schema
        .pool
        .get_message_by_name(message)
        .and_then(|m| m.get_field_by_name(field))
        .unwrap_or_else(|| panic!("no {message}.{field}"))
        .number()
}

/// The raw bytes of an unknown varint field.
pub fn unknown_varint(number: u32, value: u64) -> Vec<u8> {
    let mut b = Vec::new();
    put_varint(&mut b, u64::from(number) << 3);
    put_varint(&mut b, value);
    b
}

/// The raw bytes of a length-delimited field.
pub fn len_field(number: u32, payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    put_len_field(&mut b, number, payload);
    b
}

/// Appends `extra` inside the message reached by `path` ((field number,
/// occurrence) pairs) within `bytes`, rewriting the enclosing lengths. An
/// empty path appends at the top.
pub fn insert_raw(bytes: &[u8], path: &[(u32, usize)], extra: &[u8]) -> Vec<u8> {
    let Some(((number, nth), rest)) = path.split_first() else {
        let mut out = bytes.to_vec();
        out.extend_from_slice(extra);
        return out;
    };
    let mut out = Vec::with_capacity(bytes.len() + extra.len() + 8);
    let mut seen = 0;
    let mut done = false;
    for f in FieldIter::new(bytes) {
        let f = f.expect("well-formed fixture");
        if !done && f.number == *number && f.wire_type == WireType::Len {
            if seen == *nth {
                put_len_field(&mut out, f.number, &insert_raw(f.value, rest, extra));
                done = true;
                continue;
            }
            seen += 1;
        }
        out.extend_from_slice(f.encoding);
    }
    if !done {
        // The field did not exist yet: create it.
        assert_eq!(
            *nth, seen,
            "occurrence {nth} of field {number} does not exist"
        );
        put_len_field(&mut out, *number, &insert_raw(&[], rest, extra));
    }
    out
}

/// A conversation's rows before they are written.
#[derive(Debug, Clone)]
pub struct Conv {
    pub trajectory_id: String,
    pub cascade_id: String,
    pub trajectory_type: i64,
    pub source: i64,
    pub steps: Vec<Vec<u8>>,
    pub gens: Vec<Vec<u8>>,
    pub execs: Vec<Vec<u8>>,
    pub refs: Vec<Vec<u8>>,
    pub metadata: Vec<u8>,
}

impl Conv {
    /// A small, ordinary, qualified conversation.
    pub fn basic(s: &Schema) -> Conv {
        Conv {
            trajectory_id: TRAJ.into(),
            cascade_id: CASCADE.into(),
            trajectory_type: 4,
            source: 17,
            steps: vec![
                step(
                    s,
                    r#"{"type":"CORTEX_STEP_TYPE_USER_INPUT","status":"CORTEX_STEP_STATUS_DONE",
                    "metadata":{"createdAt":"2026-11-01T10:00:00Z","source":"CORTEX_STEP_SOURCE_USER_EXPLICIT"},
                    "userInput":{"userResponse":"List the files, please ✓"}}"#,
                ),
                step(
                    s,
                    r#"{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE","status":"CORTEX_STEP_STATUS_DONE",
                    "metadata":{"createdAt":"2026-11-01T10:00:01Z","source":"CORTEX_STEP_SOURCE_MODEL",
                      "sourceTrajectoryStepInfo":{"stepIndex":1},"modelUsage":{"inputTokens":"19268","outputTokens":"40"},
                      "internalMetadata":{"statusTransitions":[{"updatedStatus":"CORTEX_STEP_STATUS_GENERATING"},{"updatedStatus":"CORTEX_STEP_STATUS_DONE"}]}},
                    "plannerResponse":{"response":"Running ls.","thinking":"The user wants a listing.",
                      "toolCalls":[{"id":"call_1","name":"run_command","argumentsJson":"{\"CommandLine\":\"ls\"}"}]}}"#,
                ),
                step(
                    s,
                    r#"{"type":"CORTEX_STEP_TYPE_RUN_COMMAND","status":"CORTEX_STEP_STATUS_ERROR",
                    "metadata":{"createdAt":"2026-11-01T10:00:02Z","toolCall":{"id":"call_1","name":"run_command"}},
                    "error":{"shortError":"exit status 2","fullError":"ls: cannot access 'x': No such file"},
                    "runCommand":{"commandLine":"ls x","cwd":"/work","exitCode":2,"combinedOutput":{"full":"ls: cannot access 'x'"}}}"#,
                ),
            ],
            gens: vec![msg(
                s,
                "exa.cortex_pb.CortexStepGeneratorMetadata",
                r#"{"stepIndices":[1],"executionId":"exec-1",
                "chatModel":{"systemPrompt":"You are agy.","messagePrompts":[{"source":"CHAT_MESSAGE_SOURCE_USER","prompt":"List the files"}]}}"#,
            )],
            execs: vec![msg(
                s,
                "exa.cortex_pb.ExecutorMetadata",
                r#"{"numGeneratorInvocations":1,"lastStepIdx":2,"executionId":"exec-1"}"#,
            )],
            refs: vec![],
            metadata: msg(
                s,
                "exa.cortex_pb.CortexTrajectoryMetadata",
                r#"{"createdAt":"2026-11-01T10:00:00Z",
                "workspaces":[{"workspaceFolderAbsoluteUri":"file:///work"}],"projectId":"default-cli-project"}"#,
            ),
        }
    }

    /// The canonical Trajectory encoding of these rows (also a legacy plaintext).
    pub fn trajectory_bytes(&self, s: &Schema) -> Vec<u8> {
        let f = |n| num(s, "gemini_coder.Trajectory", n);
        let mut out = Vec::new();
        let mut pieces: Vec<(u32, Vec<Vec<u8>>)> = vec![
            (
                f("trajectory_id"),
                vec![self.trajectory_id.as_bytes().to_vec()],
            ),
            (f("steps"), self.steps.clone()),
            (f("generator_metadata"), self.gens.clone()),
            (f("parent_references"), self.refs.clone()),
            (f("cascade_id"), vec![self.cascade_id.as_bytes().to_vec()]),
            (f("metadata"), vec![self.metadata.clone()]),
            (f("executor_metadatas"), self.execs.clone()),
        ];
        pieces.push((f("trajectory_type"), vec![]));
        pieces.push((f("source"), vec![]));
        pieces.sort_by_key(|p| p.0);
        for (n, items) in pieces {
            if n == f("trajectory_type") {
                out.extend(unknown_varint(n, self.trajectory_type as u64));
            } else if n == f("source") {
                out.extend(unknown_varint(n, self.source as u64));
            } else {
                for i in items {
                    put_len_field(&mut out, n, &i);
                }
            }
        }
        out
    }
}

/// The top-level value of `number` in an encoding, if present.
fn top(payload: &[u8], number: u32) -> Option<Vec<u8>> {
    FieldIter::new(payload)
        .filter_map(Result::ok)
        .find(|f| f.number == number)
        .map(|f| f.value.to_vec())
}

fn top_varint(payload: &[u8], number: u32) -> i64 {
    top(payload, number)
        .map(|v| {
            let mut pos = 0;
            agy_audit::source::wire::read_varint(&v, &mut pos).unwrap_or(0) as i64
        })
        .unwrap_or(0)
}

/// Writes `conv` as an agy conversation database (WAL mode, checkpointed).
/// `tweak` runs on the open connection afterwards (for near-miss fixtures).
pub fn write_db(s: &Schema, path: &Path, conv: &Conv, tweak: impl FnOnce(&Connection)) {
    let c = Connection::open(path).expect("open fixture db");
    c.execute_batch("PRAGMA journal_mode=WAL;").expect("wal");
    write_rows(s, &c, conv);
    tweak(&c);
    drop(c);
}

/// Creates the schema and inserts the rows on `c`.
pub fn write_rows(s: &Schema, c: &Connection, conv: &Conv) {
    for stmt in DDL {
        c.execute(stmt, []).expect(stmt);
    }
    c.execute_batch("PRAGMA user_version=1;")
        .expect("user_version");
    c.execute(
        "INSERT INTO trajectory_meta VALUES (?1, ?2, ?3, ?4)",
        rusqlite::params![
            conv.trajectory_id,
            conv.cascade_id,
            conv.trajectory_type,
            conv.source
        ],
    )
    .expect("meta");
    let sn = |n| num(s, "gemini_coder.Step", n);
    let generic_result = num(s, "exa.cortex_pb.CortexStepGeneric", "result");
    let render = num(s, "exa.cortex_pb.GenericStepResult", "step_render_info");
    for (i, p) in conv.steps.iter().enumerate() {
        let render_info = top(p, sn("generic"))
            .and_then(|g| top(&g, generic_result))
            .and_then(|r| top(&r, render));
        c.execute(
            "INSERT INTO steps VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0)",
            rusqlite::params![
                i as i64,
                top_varint(p, sn("type")),
                top_varint(p, sn("status")),
                top(p, sn("subtrajectory")).is_some() as i64,
                top(p, sn("metadata")),
                top(p, sn("error")),
                top(p, sn("permissions")),
                top(p, sn("task_details")),
                render_info,
                p,
            ],
        )
        .expect("step");
    }
    for (i, g) in conv.gens.iter().enumerate() {
        c.execute(
            "INSERT INTO gen_metadata VALUES (?1, ?2, ?3)",
            rusqlite::params![i as i64, g, g.len() as i64],
        )
        .expect("gen");
    }
    for (table, rows) in [
        ("executor_metadata", &conv.execs),
        ("parent_references", &conv.refs),
    ] {
        for (i, d) in rows.iter().enumerate() {
            c.execute(
                &format!("INSERT INTO {table} VALUES (?1, ?2)"),
                rusqlite::params![i as i64, d],
            )
            .expect(table);
        }
    }
    c.execute(
        "INSERT INTO trajectory_metadata_blob VALUES ('main', ?1)",
        [&conv.metadata],
    )
    .expect("metadata blob");
}

/// A store root with a `conversations/` folder.
pub fn store() -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().expect("tempdir");
    let conv = root.path().join("conversations");
    std::fs::create_dir_all(&conv).expect("mkdir");
    (root, conv)
}

/// Writes `conv` as a legacy `.pb` sealed with the format key.
pub fn write_pb(s: &Schema, path: &Path, conv: &Conv) {
    std::fs::write(
        path,
        encrypt(&conv.trajectory_bytes(s), &LegacyKey::default(), [3; 12]),
    )
    .expect("write pb");
}

/// Every file under `dir` with its bytes.
pub fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<_> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (
                e.path().to_path_buf(),
                std::fs::read(e.path()).unwrap_or_default(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Reads a trajectory encoding sealed as a legacy `.pb` (its plaintext is the
/// encoding itself, so every byte placement is exact).
pub fn read_sealed(
    s: &Schema,
    plaintext: &[u8],
    collect_all: bool,
) -> agy_audit::source::DecodedSource {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(format!("{CASCADE}.pb"));
    std::fs::write(&path, encrypt(plaintext, &LegacyKey::default(), [9; 12])).expect("write pb");
    let key = LegacyKey::default();
    let opts = agy_audit::source::ReadOptions {
        schema: s,
        legacy_key: &key,
        collect_all,
        fingerprint: false,
    };
    agy_audit::source::read_source(&path, &opts).expect("read sealed source")
}

// ---------------------------------------------------------------------------
// Projection fixtures (tests/project_*.rs): steps as serde_json values, so a
// near-miss is one mutation of an accepted shape.
// ---------------------------------------------------------------------------

pub use serde_json::{json, Value as Json};

/// The embedded native Step's Any type URL.
pub const STEP_URL: &str = "type.googleapis.com/gemini_coder.Step";

/// A Step encoded from a JSON value.
pub fn step_v(s: &Schema, v: &Json) -> Vec<u8> {
    step(s, &v.to_string())
}

/// A JSON value normalized through the schema as daemon JSON (what a step
/// looks like once encoded and presented).
pub fn normalized_step(s: &Schema, v: &Json) -> Json {
    let bytes = step_v(s, v);
    let m = DynamicMessage::decode(s.names.step.clone(), bytes.as_slice()).expect("decode step");
    agy_audit::schema::to_daemon_json(&m)
}

/// The generic wrapper's `args` map: each argument's value JSON-rendered.
pub fn rendered_args(args: &Json) -> Json {
    let mut out = serde_json::Map::new();
    if let Some(o) = args.as_object() {
        for (k, v) in o {
            out.insert(k.clone(), Json::String(v.to_string()));
        }
    }
    Json::Object(out)
}

/// A metadata tool call for `name` with `args` as its arguments JSON.
pub fn tool_call(name: &str, args: &Json) -> Json {
    json!({"id": "call_7", "name": name, "argumentsJson": args.to_string()})
}

/// `v` as an Any of `url` (the `@type` member first).
pub fn any_of(url: &str, v: &Json) -> Json {
    let mut out = serde_json::Map::new();
    out.insert("@type".into(), json!(url));
    if let Some(o) = v.as_object() {
        for (k, x) in o {
            out.insert(k.clone(), x.clone());
        }
    }
    Json::Object(out)
}

/// A GENERIC wrapper for `tool` with `args`, `status` and an optional result.
pub fn wrapper(tool: &str, status: &str, args: &Json, result: Option<Json>) -> Json {
    let mut w = json!({
        "type": "CORTEX_STEP_TYPE_GENERIC",
        "status": status,
        "metadata": {"createdAt": "2026-11-01T10:00:03Z", "source": "CORTEX_STEP_SOURCE_MODEL",
                     "toolCall": tool_call(tool, args)},
        "generic": {"args": rendered_args(args)}
    });
    if let Some(r) = result {
        w["generic"]["result"] = r;
    }
    w
}

/// The Any type URL of the modern (agy 1.4.x) tool payload `name`.
pub fn modern_url(name: &str) -> String {
    format!("type.googleapis.com/exa.cortex.core.tools.{name}")
}

/// A modern wrapper: `tool`'s GENERIC step whose result holds the stored
/// result `text` and the payload `name` as an Any.
pub fn modern(
    tool: &str,
    status: &str,
    args: &Json,
    name: &str,
    payload: &Json,
    text: &str,
) -> Json {
    wrapper(
        tool,
        status,
        args,
        Some(json!({"result": text, "payload": any_of(&modern_url(name), payload)})),
    )
}

/// The modeled set with the modern payload field `message.field` renamed to
/// `to`, loaded as `--schema` (a user's build that lacks the declaration).
pub fn renamed_schema(message: &str, field: &str, to: &str) -> Schema {
    let mut fds =
        prost_types::FileDescriptorSet::decode(agy_audit::schema::MODELED_SET).expect("set");
    let mut done = false;
    for f in &mut fds.file {
        if f.package() != "exa.cortex.core.tools" {
            continue;
        }
        for m in &mut f.message_type {
            if m.name() == message {
                for fd in &mut m.field {
                    if fd.name() == field {
                        fd.name = Some(to.to_string());
                        fd.json_name = None;
                        done = true;
                    }
                }
            }
        }
    }
    assert!(done, "{message}.{field}");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("renamed.pb");
    std::fs::write(&path, fds.encode_to_vec()).expect("write");
    Schema::load(Some(&path)).expect("renamed set loads")
}

/// A wrapper over the embedded native Step `native`.
pub fn wrapper_over(tool: &str, status: &str, args: &Json, native: &Json) -> Json {
    wrapper(
        tool,
        status,
        args,
        Some(json!({"result": "tool output", "payload": any_of(STEP_URL, native)})),
    )
}

/// Sets the value at a JSON pointer, creating objects on the way.
pub fn set_at(v: &mut Json, pointer: &str, new: Json) {
    let parts: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|p| p.replace("~1", "/").replace("~0", "~"))
        .collect();
    set_parts(v, &parts, new);
}

fn set_parts(cur: &mut Json, parts: &[String], new: Json) {
    let Some((p, rest)) = parts.split_first() else {
        *cur = new;
        return;
    };
    if let (Some(a), Ok(i)) = (cur.as_array_mut(), p.parse::<usize>()) {
        if i == a.len() {
            a.push(Json::Null);
        }
        return set_parts(&mut a[i], rest, new);
    }
    if !cur.is_object() {
        *cur = json!({});
    }
    let o = cur.as_object_mut().expect("object");
    let next = o.entry(p.clone()).or_insert(Json::Null);
    set_parts(next, rest, new);
}

/// Removes the member at a JSON pointer (no-op when absent).
pub fn remove_at(v: &mut Json, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').expect("pointer");
    if let Some(p) = v.pointer_mut(parent) {
        if let Some(o) = p.as_object_mut() {
            o.remove(key);
        } else if let (Some(a), Ok(i)) = (p.as_array_mut(), key.parse::<usize>()) {
            a.remove(i);
        }
    }
}

/// `v` with one mutation applied.
pub fn with(v: &Json, pointer: &str, new: Json) -> Json {
    let mut out = v.clone();
    set_at(&mut out, pointer, new);
    out
}

/// `v` without the member at `pointer`.
pub fn without(v: &Json, pointer: &str) -> Json {
    let mut out = v.clone();
    remove_at(&mut out, pointer);
    out
}

/// A trajectory of `conv` decoded as the reader decodes it.
pub fn trajectory_of(s: &Schema, conv: &Conv) -> DynamicMessage {
    DynamicMessage::decode(
        s.names.trajectory.clone(),
        conv.trajectory_bytes(s).as_slice(),
    )
    .expect("decode trajectory")
}

/// The basic conversation with `steps` instead of its own.
pub fn conv_with(s: &Schema, steps: &[Json]) -> Conv {
    let mut c = Conv::basic(s);
    c.steps = steps.iter().map(|v| step_v(s, v)).collect();
    c
}

/// A projection together with the trajectory it was made from, with the
/// ordinary trajectory built, for assertions.
#[derive(Debug, Clone)]
pub struct Projected {
    pub trajectory: DynamicMessage,
    pub projection: agy_audit::project::Projection,
    pub step_rules: Vec<agy_audit::rules::RuleId>,
    pub extra_rules: Vec<(usize, agy_audit::rules::RuleId)>,
    pub ordinary: DynamicMessage,
}

impl Projected {
    pub fn dropped(&self) -> Vec<String> {
        self.projection.dropped(&self.trajectory)
    }

    pub fn rules(&self) -> Vec<agy_audit::rules::RuleId> {
        self.projection.rules()
    }
}

/// Projects `t`, checking the in-place presentation against the built one
/// and that the stored trajectory is restored after it.
pub fn project_of(
    s: &Schema,
    t: &DynamicMessage,
) -> Result<Projected, agy_audit::project::ProjectionRefusal> {
    let mut projection = agy_audit::project::project_message(s, t)?;
    let ordinary = projection.ordinary(t);
    let mut trajectory = t.clone();
    {
        let shown = projection.present(&mut trajectory);
        assert_eq!(*shown, ordinary, "present() shows the ordinary trajectory");
    }
    assert_eq!(&trajectory, t, "present() restores the stored trajectory");
    Ok(Projected {
        trajectory,
        step_rules: projection.step_rules.clone(),
        extra_rules: projection.extra_rules.clone(),
        projection,
        ordinary,
    })
}

/// Projects a conversation of `steps`.
pub fn project_steps(
    s: &Schema,
    steps: &[Json],
) -> Result<Projected, agy_audit::project::ProjectionRefusal> {
    project_of(s, &trajectory_of(s, &conv_with(s, steps)))
}

/// The presented step `i` of a projection, as daemon JSON.
pub fn presented(p: &Projected, i: usize) -> Json {
    let step = p
        .projection
        .presented_step(&p.trajectory, i)
        .expect("step message");
    let steps = p
        .ordinary
        .get_field_by_name("steps")
        .and_then(|v| v.as_list().map(|l| l.to_vec()))
        .expect("steps");
    let built = agy_audit::schema::to_daemon_json(steps[i].as_message().expect("step message"));
    let shown = agy_audit::schema::to_daemon_json(step);
    assert_eq!(shown, built, "presented_step agrees with ordinary()");
    shown
}

/// Projects one step and returns its presentation and rule, panicking on refusal.
pub fn accept_one(s: &Schema, v: &Json) -> (Json, agy_audit::rules::RuleId, Projected) {
    match project_steps(s, std::slice::from_ref(v)) {
        Ok(p) => (presented(&p, 0), p.step_rules[0], p),
        Err(r) => panic!("refused: {r}\n{v:#}"),
    }
}

/// Projects one step and returns its refusal, panicking when it projects.
pub fn refuse_one(s: &Schema, v: &Json) -> agy_audit::project::ProjectionRefusal {
    match project_steps(s, std::slice::from_ref(v)) {
        Ok(p) => panic!("projected under {:?}: {:#}", p.step_rules, presented(&p, 0)),
        Err(r) => r,
    }
}

/// Asserts that `v` refuses with `kind` (and, when given, under `rule`).
pub fn assert_refuses(
    s: &Schema,
    v: &Json,
    kind: agy_audit::project::Reason,
    rule: Option<agy_audit::rules::RuleId>,
) {
    let r = refuse_one(s, v);
    assert_eq!(r.kind, kind, "{r}");
    assert_eq!(r.reason, kind.text());
    if rule.is_some() {
        assert_eq!(r.rule, rule, "{r}");
    }
}

// ---------------------------------------------------------------------------
// The binary, generated stores and the simulated daemon (tests that run
// `agy-audit` as a child process).
// ---------------------------------------------------------------------------

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// The `agy-audit` binary, with none of the settings it reads from the
/// environment (daemon URL, CLI root, CSRF token, schema, legacy key file,
/// the desktop app's data folder).
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agy-audit"));
    c.env_remove("ANTIGRAVITY_DAEMON_URL")
        .env_remove("ANTIGRAVITY_CLI_ROOT")
        .env_remove("ANTIGRAVITY_CSRF_TOKEN")
        .env_remove("AGY_AUDIT_SCHEMA")
        .env_remove("AGY_AUDIT_SCHEMA_SHA256")
        .env_remove("AGY_AUDIT_LEGACY_KEY_FILE")
        .env_remove("ANTIGRAVITY_APP_DATA_DIR");
    c
}

/// Runs `agy-audit` with `args` (whatever it exits with).
pub fn run(args: &[&str]) -> std::process::Output {
    bin().args(args).output().expect("run agy-audit")
}

/// Runs `c`, asserting exit 0; returns its stdout.
pub fn run_ok(c: &mut Command) -> String {
    let o = c.output().expect("running agy-audit");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{c:?}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A command's standard output and error, as text (for assertion messages).
pub fn output_text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The `manifest.json` of the sweep folder `out`.
pub fn read_manifest(out: &Path) -> serde_json::Value {
    let bytes = std::fs::read(out.join("manifest.json"))
        .unwrap_or_else(|e| panic!("{}: no manifest: {e}", out.display()));
    serde_json::from_slice(&bytes).expect("the manifest is JSON")
}

/// `v` (a manifest's JSON) with its counts recounted from its sessions by
/// the library's own recount, as a tool that edits a manifest honestly
/// would leave it: a manifest is read strictly (counts equal to the
/// recount), so a test that edits its sessions recounts them.
pub fn recounted(v: serde_json::Value) -> serde_json::Value {
    let mut m: agy_audit::manifest::Manifest =
        serde_json::from_value(v).expect("a manifest's members");
    m.recount();
    serde_json::to_value(&m).expect("a manifest as JSON")
}

/// `agy-audit audit-sweep --quiet --root root --out out --daemon-url url`.
pub fn sweep_command(root: &Path, out: &Path, url: &str) -> Command {
    let mut c = bin();
    c.args(["audit-sweep", "--quiet", "--root"])
        .arg(root)
        .arg("--out")
        .arg(out)
        .args(["--daemon-url", url]);
    c
}

/// Waits for `child` at most `secs` seconds; past them it is killed and the
/// test fails naming `what`.
pub fn wait_with_deadline(child: &mut Child, secs: u64, what: &str) -> std::process::ExitStatus {
    let started = std::time::Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("waiting for agy-audit") {
            return s;
        }
        if started.elapsed() > std::time::Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Spawns `cmd` with standard output and error both closed at once (every
/// write gets EPIPE) and waits for it at most `secs` seconds.
pub fn run_with_closed_output(
    cmd: &mut Command,
    secs: u64,
    what: &str,
) -> std::process::ExitStatus {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting agy-audit");
    drop(child.stdout.take());
    drop(child.stderr.take());
    wait_with_deadline(&mut child, secs, what)
}

/// `dir/store`: `n` generated conversations (no planned faults) with `seed`,
/// `near_miss_rate` and `scale`, written by the generator in-process.
pub fn small_store(dir: &Path, n: usize, seed: u64, near_miss_rate: f64, scale: f64) -> PathBuf {
    use agy_corpus::corpus::{generate, GenerateOptions, PlanOptions};
    let store = dir.join("store");
    generate(&GenerateOptions {
        out: store.clone(),
        plan: PlanOptions {
            conversations: n,
            seed,
            near_miss_rate,
            fault_rate: 0.0,
            scale,
        },
        force: false,
    })
    .expect("generating a small store");
    store
}

/// The tool's own temp files (`.agy-audit-<random>.tmp`) anywhere under
/// `dir`, by path.
pub fn own_temp_files(dir: &Path) -> Vec<String> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy();
            name.starts_with(".agy-audit-") && name.ends_with(".tmp")
        })
        .map(|e| e.path().display().to_string())
        .collect()
}

/// A new scratch folder under the system's temp folder, its name unique to
/// `tag`, this process and this moment; the caller removes it.
pub fn scratch_dir(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let d = std::env::temp_dir().join(format!("agy-audit-{tag}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `agy-audit corpus generate --out store` with `options` (none: the
/// default plan).
pub fn generate_store(store: &Path, options: &[&str]) {
    run_ok(
        bin()
            .args(["corpus", "generate", "--out", store.to_str().unwrap()])
            .args(options),
    );
}

/// A store of `conversations` generated with `seed` at scale 0.1, swept
/// against daemon-sim: (tempdir, store, sweep dir).
pub fn swept_store(conversations: usize, seed: u64) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    generate_store(
        &store,
        &[
            "--conversations",
            &conversations.to_string(),
            "--seed",
            &seed.to_string(),
            "--scale",
            "0.1",
        ],
    );
    let sim = start_sim(&store, &["--no-fault-file"]);
    let sweep = dir.path().join("sweep");
    let o = sweep_command(&store, &sweep, &sim.url).output().unwrap();
    drop(sim);
    assert!(sweep.join("manifest.json").is_file(), "{}", output_text(&o));
    (dir, store, sweep)
}

/// `store`: a generated store with planted fake credentials (issue 46,
/// `corpus generate --plant-secrets`): 40 conversations, half of them near
/// misses (so refused sessions quote their offending steps), at scale 0.2.
pub fn planted_store(store: &Path) {
    generate_store(
        store,
        &[
            "--conversations",
            "40",
            "--near-miss-rate",
            "0.5",
            "--scale",
            "0.2",
            "--plant-secrets",
        ],
    );
}

/// The values planted in `store` (`value` of each `.truth/secrets.jsonl`
/// line).
pub fn planted_values(store: &Path) -> Vec<String> {
    std::fs::read_to_string(store.join(".truth/secrets.jsonl"))
        .expect("--plant-secrets writes .truth/secrets.jsonl")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            v["value"].as_str().expect("a value").to_string()
        })
        .collect()
}

/// The planted `values` (or, of a multi-line value, any line of 16
/// characters or more) found in `text`.
pub fn leaks<'a>(text: &str, values: &'a [String]) -> Vec<&'a str> {
    values
        .iter()
        .filter(|v| {
            text.contains(v.as_str())
                || v.lines()
                    .any(|l| l.len() >= 16 && v.contains('\n') && text.contains(l))
        })
        .map(String::as_str)
        .collect()
}

/// Makes one conversation of a [`planted_store`] refused with a reason that
/// quotes a planted value, as a mismatch on a command output holding a
/// credential would: the first conversation the truth verifies whose
/// command output starts with a one-line planted value gets " (changed)"
/// after that value in its full daemon view, so the full comparison quotes
/// both sides. Returns (conversation id, planted value).
pub fn planted_mismatch(store: &Path) -> (String, String) {
    let truth = truth_verdicts(store);
    let text = std::fs::read_to_string(store.join(".truth/secrets.jsonl")).unwrap();
    for line in text.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let (id, value) = (
            r["conversation"].as_str().unwrap(),
            r["value"].as_str().unwrap(),
        );
        let verified = truth.get(id).is_some_and(|(v, _)| v == "verified");
        if r["place"] != "command-output" || value.contains('\n') || !verified {
            continue;
        }
        let view = store.join(".truth/daemon").join(format!("{id}.full.json"));
        let answer = std::fs::read_to_string(&view).unwrap();
        if !answer.contains(value) {
            continue;
        }
        let changed = answer.replacen(value, &format!("{value} (changed)"), 1);
        std::fs::write(&view, changed).unwrap();
        return (id.to_string(), value.to_string());
    }
    panic!(
        "{}: no verified conversation with a planted command output",
        store.display()
    );
}

/// The simulated daemon as a child process, killed on drop.
pub struct Sim {
    child: Child,
    pub url: String,
    /// The line it announced itself with.
    pub announcement: String,
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `agy-audit daemon-sim --store store` with `options`, once it has
/// announced its URL.
pub fn start_sim(store: &Path, options: &[&str]) -> Sim {
    let mut child = bin()
        .args(["daemon-sim", "--store", store.to_str().unwrap()])
        .args(options)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting daemon-sim");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped stdout"))
        .read_line(&mut line)
        .expect("reading daemon-sim's announcement");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no URL in `{line}`"))
        .to_string();
    Sim {
        child,
        url,
        announcement: line,
    }
}

/// The generator's ground truth, `.truth/expected.jsonl`: `fileId` →
/// (verdict, reasonClass).
pub fn truth_verdicts(store: &Path) -> std::collections::HashMap<String, (String, Option<String>)> {
    let text = std::fs::read_to_string(store.join(".truth/expected.jsonl")).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["fileId"].as_str().unwrap().to_string(),
                (
                    v["verdict"].as_str().unwrap().to_string(),
                    v["reasonClass"].as_str().map(str::to_string),
                ),
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Daemon views of a generated corpus (tests/compare_*.rs).
// ---------------------------------------------------------------------------

use agy_audit::verdict::ReasonClass;

/// One daemon view the generator wrote (`.truth/daemon/<id>.<view>.json`)
/// for a conversation the offline audit accepts.
pub struct DaemonView {
    pub file_id: String,
    /// "full" or "ordinary".
    pub view: &'static str,
    /// The message the view must equal: the persisted trajectory, or its
    /// ordinary projection.
    pub expected: DynamicMessage,
    /// The class a disagreement of this view is refused under.
    pub class: ReasonClass,
    pub text: String,
}

/// Generates `conversations` conversations with `seed` into a scratch
/// folder named after `tag` (removed again) and returns the schema and the
/// daemon views of every conversation the offline audit accepts, in file
/// name order.
pub fn generated_daemon_views(
    tag: &str,
    conversations: usize,
    seed: u64,
) -> (Schema, Vec<DaemonView>) {
    use agy_audit::pipeline::{prepare, AuditContext};
    use agy_corpus::corpus::{generate, GenerateOptions, PlanOptions};
    let dir = std::env::temp_dir().join(format!("agy-audit-{tag}-{}-{seed}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    generate(&GenerateOptions {
        out: dir.clone(),
        plan: PlanOptions {
            conversations,
            seed,
            ..PlanOptions::default()
        },
        force: false,
    })
    .unwrap();
    let schema = Schema::modeled().unwrap();
    let key = LegacyKey::default();
    let ctx = AuditContext {
        schema: &schema,
        key: &key,
        client: None,
        bracket_retries: 0,
    };
    let mut paths: Vec<_> = std::fs::read_dir(dir.join("conversations"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.ends_with(".db") || name.ends_with(".pb")) {
            continue;
        }
        let mut p = prepare(&ctx, &path).unwrap();
        // Offline, prepare leaves the tree undecoded; the comparison needs it.
        p.source.materialize();
        if p.refusal().is_some() {
            continue;
        }
        let (Some(persisted), Some(projection)) = (&p.source.trajectory, &p.projection) else {
            continue;
        };
        let file_id = &name[..name.len() - 3];
        let ordinary = projection.ordinary(persisted);
        for (view, expected, class) in [
            ("full", persisted.clone(), ReasonClass::FullMismatch),
            ("ordinary", ordinary, ReasonClass::OrdinaryMismatch),
        ] {
            let file = dir
                .join(".truth/daemon")
                .join(format!("{file_id}.{view}.json"));
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            out.push(DaemonView {
                file_id: file_id.to_string(),
                view,
                expected,
                class,
                text,
            });
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    (schema, out)
}

/// A fresh generated two-root home (`corpus generate --home`) under the
/// test's temporary directory: 20 conversations at scale 0.05, no faults,
/// `near_miss_rate` of them near misses.
pub fn generated_home(
    name: &str,
    seed: u64,
    near_miss_rate: f64,
) -> (PathBuf, agy_corpus::corpus::HomeSummary) {
    let home = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&home);
    let plan = agy_corpus::corpus::PlanOptions {
        conversations: 20,
        seed,
        near_miss_rate,
        fault_rate: 0.0,
        scale: 0.05,
    };
    let summary = agy_corpus::corpus::generate_home(&home, &plan, false).unwrap();
    (home, summary)
}

/// The simulated CLI daemon of a generated home's CLI root (no fault file).
pub fn home_cli_sim(home: &Path) -> agy_corpus::sim::DaemonSim {
    let mut o = agy_corpus::sim::SimOptions::new(home.join(agy_corpus::corpus::HOME_CLI_ROOT));
    o.load_fault_file = false;
    agy_corpus::sim::DaemonSim::start(o).unwrap()
}

/// The simulated IDE daemon of a generated home's IDE root (no fault file;
/// its port and CSRF token in HOME/.config/Antigravity/logs).
pub fn home_ide_sim(home: &Path) -> agy_corpus::sim::DaemonSim {
    let mut o = agy_corpus::sim::SimOptions::new(home.join(agy_corpus::corpus::HOME_IDE_ROOT));
    o.load_fault_file = false;
    o.ide_logs = Some(home.join(".config/Antigravity/logs"));
    agy_corpus::sim::DaemonSim::start(o).unwrap()
}

/// The SHA-256 of every source file of a generated home's two roots: each
/// root's summaries index and every file under conversations/ and
/// implicit/ except the sidecars agy-audit writes (outputs).
pub fn home_source_digests(home: &Path) -> std::collections::BTreeMap<PathBuf, String> {
    let mut m = std::collections::BTreeMap::new();
    for root in [
        agy_corpus::corpus::HOME_CLI_ROOT,
        agy_corpus::corpus::HOME_IDE_ROOT,
    ] {
        let summaries = home.join(root).join("conversation_summaries.db");
        if let Ok(b) = std::fs::read(&summaries) {
            m.insert(summaries, agy_audit::util::sha256_tagged(&b));
        }
        for d in ["conversations", "implicit"] {
            let Ok(dir) = std::fs::read_dir(home.join(root).join(d)) else {
                continue;
            };
            for e in dir {
                let p = e.unwrap().path();
                if !p.to_string_lossy().ends_with(".trajectory.json") {
                    let digest = agy_audit::util::sha256_tagged(&std::fs::read(&p).unwrap());
                    m.insert(p, digest);
                }
            }
        }
    }
    m
}

/// The sorted ids of a root's conversations/ files with extension `ext`.
pub fn root_ids(root: &Path, ext: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root.join("conversations"))
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().into_string().unwrap();
            n.strip_suffix(&format!(".{ext}")).map(str::to_string)
        })
        .collect();
    v.sort();
    v
}

/// The files an opt-in evidence test is given through the environment
/// variables `names` (the specification's, e.g. AGY_READER_SCRATCH_DB), in
/// that order; none when every one is unset, after printing the one line
/// `SKIP <test>: set A, B and C <purpose>`. A partial set is a failure naming
/// the missing variables. A variable set to the empty string counts as set
/// (the stricter reading: only an unset variable skips), and then names no
/// file, so the test fails.
#[allow(clippy::disallowed_macros)] // the test harness's own line (clippy.toml)
pub fn opt_in_files(test: &str, names: &[&str], purpose: &str) -> Option<Vec<PathBuf>> {
    let values: Vec<Option<std::ffi::OsString>> = names.iter().map(std::env::var_os).collect();
    if values.iter().all(Option::is_none) {
        let list = match names {
            [] => String::new(),
            [one] => (*one).to_string(),
            [init @ .., last] => format!("{} and {last}", init.join(", ")),
        };
        println!("SKIP {test}: set {list} {purpose}");
        return None;
    }
    let missing: Vec<&str> = names
        .iter()
        .zip(&values)
        .filter(|(_, v)| v.is_none())
        .map(|(n, _)| *n)
        .collect();
    assert!(
        missing.is_empty(),
        "{test}: {} set but {} unset: set all of {} or none",
        names
            .iter()
            .zip(&values)
            .filter(|(_, v)| v.is_some())
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", "),
        missing.join(", "),
        names.join(", ")
    );
    Some(values.into_iter().flatten().map(PathBuf::from).collect())
}

/// A copy of a sweep folder's manifest and saved answers, to change:
/// (tempdir, the copy's sweep folder).
pub fn copied_sweep(sweep: &Path) -> (tempfile::TempDir, PathBuf) {
    let copy = tempfile::tempdir().unwrap();
    let csweep = copy.path().join("sweep");
    std::fs::create_dir_all(csweep.join("corpus")).unwrap();
    std::fs::copy(sweep.join("manifest.json"), csweep.join("manifest.json")).unwrap();
    for e in std::fs::read_dir(sweep.join("corpus")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, csweep.join("corpus").join(p.file_name().unwrap())).unwrap();
    }
    (copy, csweep)
}

/// One HTTP/1.1 request read from `conn` (its head, then as many body bytes
/// as its content-length says): the head lowercased, and every byte read;
/// `None` when the connection ends before a whole head.
pub fn read_http_request(conn: &mut std::net::TcpStream) -> Option<(String, Vec<u8>)> {
    use std::io::Read;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    Some((head, buf))
}

/// A FIFO at `p` (whatever the generator put there removed first).
#[cfg(unix)]
pub fn mkfifo(p: &Path) {
    let _ = std::fs::remove_file(p);
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: a plain mkfifo(3) on a path in a fresh temp folder.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// A generated two-root home (as [`generated_home`]) with `with`'s plants
/// (`corpus generate --home --plant-troubles --extra-roots`): the home and
/// what was planted (`.truth/plants.json`).
pub fn planted_home(
    name: &str,
    seed: u64,
    with: agy_corpus::corpus::HomePlants,
) -> (PathBuf, serde_json::Value) {
    let home = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&home);
    let plan = agy_corpus::corpus::PlanOptions {
        conversations: 20,
        seed,
        near_miss_rate: 0.0,
        fault_rate: 0.0,
        scale: 0.05,
    };
    let (_, planted) = agy_corpus::corpus::generate_home_with(&home, &plan, false, with).unwrap();
    (home, planted)
}

/// The SHA-256 of every file of every store under `home`: each file under
/// a `conversations/` folder (sidecars, agy-audit's outputs, excepted) and
/// every `conversation_summaries.db*`. A `-shm`, `-wal` or `-journal` that
/// appears, or a source that changes, changes the map.
pub fn home_store_digests(home: &Path) -> std::collections::BTreeMap<PathBuf, String> {
    walkdir::WalkDir::new(home)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().to_path_buf())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            let in_store = p
                .parent()
                .is_some_and(|d| d.file_name().is_some_and(|n| n == "conversations"));
            (in_store && !name.ends_with(".trajectory.json"))
                || name.starts_with("conversation_summaries.db")
        })
        .map(|p| {
            let digest = agy_audit::util::sha256_tagged(&std::fs::read(&p).unwrap());
            (p, digest)
        })
        .collect()
}
