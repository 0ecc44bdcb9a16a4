//! `schema extract --installed` and `--schema installed` against a fake
//! installed agy: a shell script on PATH that answers `--version` and
//! carries, appended after its `exit`, the serialized descriptors of the
//! modeled set plus the eleven members real agy steps carry
//! (`common/real_members.rs`), as a Go binary embeds its FileDescriptorProto
//! records. HOME and XDG_DATA_HOME point into a temporary folder.
//!
//! - Before any extraction, `--schema installed` is an error that names the
//!   command storing the set.
//! - `schema extract --installed` stores the pinned set once, named by the
//!   release and the binary's digest; a second run writes nothing and says so.
//! - A generated conversation given a `ChatToolCall.originalName` (planted
//!   here, in the source and in both captured answers) is refused by the
//!   modeled schema (`unknown-field`, with the hint naming the command) and
//!   verified by `verify-capture --schema installed`, whose profile names
//!   the release and binary. Sources stay byte-identical.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

mod common;
#[path = "common/real_members.rs"]
mod real_members;

use agy_audit::schema::MODELED_SET;
use common::{
    bin, generate_store, insert_raw, len_field, num, output_text, schema, start_sim, tree,
};
use prost::Message;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Env {
    _dir: tempfile::TempDir,
    home: PathBuf,
    data: PathBuf,
    bin: PathBuf,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let data = dir.path().join("data");
        let bin = dir.path().join("bin");
        for d in [&home, &data, &bin] {
            std::fs::create_dir_all(d).unwrap();
        }
        Env {
            _dir: dir,
            home,
            data,
            bin,
        }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = bin();
        c.args(args)
            .env("HOME", &self.home)
            .env("XDG_DATA_HOME", &self.data)
            .env("PATH", format!("{}:/usr/bin:/bin", self.bin.display()))
            .env_remove("AGY_AUDIT_SCHEMA")
            .env_remove("AGY_AUDIT_SCHEMA_SHA256");
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn schemas(&self) -> PathBuf {
        self.data.join("agy-audit").join("schemas")
    }
}

/// `ChatToolCall.originalName`'s number in the fake agy (the next free one;
/// no public number exists).
fn original_name_number() -> u32 {
    let set = real_members::with_members(MODELED_SET, 0);
    let pool = prost_reflect::DescriptorPool::decode(set.as_slice()).unwrap();
    pool.get_message_by_name("exa.codeium_common_pb.ChatToolCall")
        .and_then(|m| m.get_field_by_name("original_name"))
        .unwrap()
        .number()
}

/// Writes the fake agy (release `release`) on the env's PATH; its SHA-256.
fn fake_agy(env: &Env, release: &str) -> String {
    let set = real_members::with_members(MODELED_SET, 0);
    let mut bytes = format!("#!/bin/sh\necho \"agy {release}\"\nexit 0\n").into_bytes();
    for f in real_members::files(&set) {
        bytes.extend_from_slice(b"\n\0\0\0\0");
        bytes.extend_from_slice(&f.encode_to_vec());
    }
    let path = env.bin.join("agy");
    std::fs::write(&path, &bytes).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn extract_installed_stores_once_and_names_the_remedy_before() {
    let env = Env::new();
    let sha = fake_agy(&env, "1.0.10");

    // Nothing stored yet: --schema installed names the command.
    let store = env.home.join("store");
    generate_store(&store, &["--conversations", "2", "--scale", "0.1"]);
    let source = std::fs::read_dir(store.join("conversations"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "db"))
        .unwrap();
    let o = env.run(&[
        "export-offline",
        "--schema",
        "installed",
        source.to_str().unwrap(),
    ]);
    let text = output_text(&o);
    assert_ne!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("no pinned schema for")
            && text.contains("agy-audit schema extract --installed"),
        "{text}"
    );
    assert!(!env.schemas().exists(), "nothing extracted unasked");

    let o = env.run(&["schema", "extract", "--installed"]);
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    let name = format!("agy-1.0.10-{}.pb", &sha[..12]);
    let set = env.schemas().join(&name);
    let manifest = env.schemas().join(format!("{name}.manifest.json"));
    assert!(
        text.contains(&format!("stored: {}", set.display())),
        "{text}"
    );
    assert!(text.contains(&format!("sha256: {sha}")), "{text}");
    assert!(text.contains("release: 1.0.10"), "{text}");
    let m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    assert_eq!(m["binarySha256"], sha.as_str());
    assert_eq!(m["release"], "1.0.10");
    let set_bytes = std::fs::read(&set).unwrap();
    let set_sha: String = Sha256::digest(&set_bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(m["schemaSha256"], set_sha.as_str());
    let files: Vec<_> = std::fs::read_dir(env.schemas()).unwrap().collect();
    assert_eq!(files.len(), 2, "the set and its manifest");

    // The same binary again: nothing written.
    let before = tree(&env.data);
    let o = env.run(&["schema", "extract", "--installed"]);
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("already stored") && text.contains("nothing to do"),
        "{text}"
    );
    assert_eq!(tree(&env.data), before, "a second run writes nothing");

    // A new agy release (other bytes): a second set beside the first.
    let sha2 = fake_agy(&env, "1.0.11");
    let o = env.run(&["schema", "extract", "--installed"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(env
        .schemas()
        .join(format!("agy-1.0.11-{}.pb", &sha2[..12]))
        .is_file());
    assert!(set.is_file(), "the earlier set is kept");
}

#[test]
fn extract_installed_without_an_agy_says_so() {
    let env = Env::new();
    let o = env.run(&["schema", "extract", "--installed"]);
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("no agy found"), "{text}");
    let o = env.run(&["schema", "extract", "--installed", "--out", "x.pb"]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
}

/// A verified generated SQLite conversation with a planner tool call, its
/// source and its truth answers (bare trajectories).
fn planner_tool_call(store: &Path) -> (String, PathBuf, usize) {
    let truth = store.join(".truth").join("daemon");
    let mut ids: Vec<String> = std::fs::read_dir(store.join("conversations"))
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "db").then(|| p.file_stem()?.to_str().map(str::to_string))?
        })
        .collect();
    ids.sort();
    let verdicts = common::truth_verdicts(store);
    for id in ids {
        let db = store.join("conversations").join(format!("{id}.db"));
        let wal = store.join("conversations").join(format!("{id}.db-wal"));
        if wal.exists() || verdicts.get(&id).map(|v| v.0.as_str()) != Some("verified") {
            continue;
        }
        let Ok(text) = std::fs::read(truth.join(format!("{id}.full.json"))) else {
            continue;
        };
        let v: Value = serde_json::from_slice(&text).unwrap();
        let steps = v["steps"].as_array().cloned().unwrap_or_default();
        if let Some(i) = steps.iter().position(|s| {
            s["plannerResponse"]["toolCalls"][0].is_object() && s.get("generic").is_none()
        }) {
            return (id, db, i);
        }
    }
    panic!("no verified SQLite conversation with a planner tool call")
}

/// Plants `originalName` (field `number`) on step `i`'s first planner tool
/// call: in the source's payload and in both truth answers.
fn plant_original_name(store: &Path, id: &str, db: &Path, i: usize, number: u32) {
    let s = schema();
    let pr = num(&s, "gemini_coder.Step", "planner_response");
    let tc = num(&s, "exa.cortex_pb.CortexStepPlannerResponse", "tool_calls");
    let c = rusqlite::Connection::open(db).unwrap();
    let payload: Vec<u8> = c
        .query_row(
            "SELECT step_payload FROM steps WHERE idx = ?1",
            [i as i64],
            |r| r.get(0),
        )
        .unwrap();
    let name = "run_command";
    let planted = insert_raw(
        &payload,
        &[(pr, 0), (tc, 0)],
        &len_field(number, name.as_bytes()),
    );
    c.execute(
        "UPDATE steps SET step_payload = ?1 WHERE idx = ?2",
        rusqlite::params![planted, i as i64],
    )
    .unwrap();
    drop(c);
    for kind in ["full", "ordinary"] {
        let p = store
            .join(".truth")
            .join("daemon")
            .join(format!("{id}.{kind}.json"));
        let mut v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        v["steps"][i]["plannerResponse"]["toolCalls"][0]["originalName"] = name.into();
        std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
    }
}

/// A small generated store in `env`'s home whose one planner tool call
/// carries `originalName` (the source and the daemon views): the store, the
/// conversation's id and its database.
fn store_with_original_name(env: &Env) -> (PathBuf, String, PathBuf) {
    let store = env.home.join("store");
    generate_store(
        &store,
        &["--conversations", "8", "--seed", "48", "--scale", "0.1"],
    );
    let (id, db, i) = planner_tool_call(&store);
    plant_original_name(&store, &id, &db, i, original_name_number());
    (store, id, db)
}

#[test]
fn a_conversation_carrying_original_name_verifies_under_the_installed_schema_only() {
    let env = Env::new();
    let sha = fake_agy(&env, "1.0.10");
    let (store, id, db) = store_with_original_name(&env);
    let truth = store.join(".truth").join("daemon");
    let full = truth.join(format!("{id}.full.json"));
    let ordinary = truth.join(format!("{id}.ordinary.json"));
    let verify = |extra: &[&str]| {
        let mut args = vec![
            "verify-capture",
            "--db",
            db.to_str().unwrap(),
            "--full",
            full.to_str().unwrap(),
            "--ordinary",
            ordinary.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        env.run(&args)
    };
    let sources = tree(&store.join("conversations"));

    // The modeled schema refuses it, naming the member's message and
    // number, with the hint.
    let o = verify(&[]);
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(3), "{text}");
    let number = original_name_number();
    assert!(
        text.contains(&format!(
            "unknown field {number} (length-delimited) in exa.codeium_common_pb.ChatToolCall"
        )),
        "{text}"
    );
    assert!(
        text.contains(
            "the embedded schema models public descriptors only: `agy-audit schema extract --installed`"
        ),
        "{text}"
    );

    let o = env.run(&["schema", "extract", "--installed"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let o = verify(&["--schema", "installed"]);
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("VERIFIED"), "{text}");
    assert!(
        text.contains(&format!("-agy-1.0.10-{}-", &sha[..12])),
        "the profile names the release and binary: {text}"
    );
    assert_eq!(
        tree(&store.join("conversations")),
        sources,
        "sources byte-identical"
    );
}

/// Issue 48 item 1: evidence minted under the installed set (a sidecar by
/// `sync --schema installed`, a manifest by `audit-sweep --schema
/// installed`, both against daemon-sim) is rechecked with the set its
/// profile names, found by the binary's digest in the data folder, even
/// after agy is upgraded and with no `--schema` given (`sync --recheck`,
/// `doctor`, `list --check`, `audit-qualify`); with that set gone, each
/// names the command that restores it, and the evidence reads as unknown.
#[test]
fn evidence_under_an_installed_set_is_rechecked_with_that_set() {
    let env = Env::new();
    let sha = fake_agy(&env, "1.0.10");
    let (store, id, db) = store_with_original_name(&env);
    let o = env.run(&["schema", "extract", "--installed"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let sources = || {
        let mut t = tree(&store.join("conversations"));
        t.retain(|(p, _)| !p.to_string_lossy().ends_with(".trajectory.json"));
        t
    };
    let before = sources();

    let sim = start_sim(&store, &["--no-fault-file"]);
    let sweep = env.home.join("sweep");
    let mut c = env.cmd(&["audit-sweep", "--quiet", "--schema", "installed", "--root"]);
    c.arg(&store)
        .arg("--out")
        .arg(&sweep)
        .args(["--daemon-url", &sim.url]);
    let o = c.output().unwrap();
    assert!(sweep.join("manifest.json").is_file(), "{}", output_text(&o));
    let label = format!("-agy-1.0.10-{}-", &sha[..12]);
    let m: Value =
        serde_json::from_slice(&std::fs::read(sweep.join("manifest.json")).unwrap()).unwrap();
    let planted = m["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["fileId"] == format!("{id}.db").as_str() || s["fileId"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} in the manifest: {m}"));
    assert!(
        planted["profile"].as_str().unwrap().contains(&label),
        "{planted}"
    );
    let o = env.run(&[
        "sync",
        "--schema",
        "installed",
        "--daemon-url",
        &sim.url,
        db.to_str().unwrap(),
    ]);
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    drop(sim);

    // agy upgraded (other bytes, not extracted), no --schema given.
    fake_agy(&env, "1.0.11");
    let recheck = || env.run(&["sync", "--recheck", db.to_str().unwrap()]);
    let o = recheck();
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.starts_with("VERIFIED "), "{text}");
    let qualify = || {
        env.run(&[
            "audit-qualify",
            sweep.join("manifest.json").to_str().unwrap(),
        ])
    };
    let o = qualify();
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("changed=0"), "{text}");
    let doctor = || {
        let o = env.run(&["doctor", "--json", "--root", store.to_str().unwrap()]);
        let v: Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", output_text(&o)));
        v["roots"][0].clone()
    };
    let r = doctor();
    assert_eq!(r["sidecars"]["fresh"], 1, "{r}");
    assert_eq!(r["sidecars"]["stale"], 0, "{r}");
    assert_eq!(r["missingSchemas"], serde_json::json!([]), "{r}");
    let o = env.run(&[
        "list",
        "--check",
        "--json",
        "--root",
        store.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let row: Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} in {text}"));
    assert_eq!(row["fresh"], true, "{row}");
    // watch judges it fresh under its set: not re-audited with the modeled
    // schema (which refuses it), its sidecar untouched.
    let sidecar = db.with_extension("trajectory.json");
    let minted = std::fs::read(&sidecar).unwrap();
    let watch = || {
        output_text(&env.run(&[
            "watch",
            "--once",
            "--root",
            store.to_str().unwrap(),
            "--daemon-url",
            "http://127.0.0.1:9",
        ]))
    };
    let text = watch();
    assert!(
        text.contains("watch: pass 1: ") && text.contains(" 1 fresh,") && !text.contains(&id),
        "{text}"
    );
    assert_eq!(std::fs::read(&sidecar).unwrap(), minted);

    // The set gone: each names it and the command restoring it.
    std::fs::remove_dir_all(env.schemas()).unwrap();
    let o = recheck();
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(3), "{text}");
    assert!(
        text.starts_with("UNKNOWN ")
            && text.contains("is not stored in")
            && text.contains("agy-audit schema extract --installed")
            && text.contains("--release 1.0.10 --out "),
        "{text}"
    );
    let o = qualify();
    let text = output_text(&o);
    assert_ne!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("cannot be rechecked")
            && text.contains("agy-audit schema extract --installed"),
        "{text}"
    );
    let r = doctor();
    assert_eq!(r["sidecars"]["stale"], 1, "{r}");
    let missing = r["missingSchemas"][0].as_str().unwrap_or_default();
    assert!(
        missing.contains("agy-audit schema extract --installed"),
        "{r}"
    );
    let text = watch();
    assert!(
        text.contains(&id)
            && text.contains("is not stored in")
            && text.contains("agy-audit schema extract --installed"),
        "{text}"
    );
    assert_eq!(
        std::fs::read(&sidecar).unwrap(),
        minted,
        "refused: not replaced"
    );
    assert!(!env.schemas().exists(), "nothing extracted unasked");
    assert_eq!(sources(), before, "sources byte-identical");
}

/// Issue 48's first "Done when": a fake installed agy on PATH; `doctor`
/// names the modeled schema's unknown-field refusals and the command that
/// stores the set before `schema extract --installed` (which stores it
/// once), and the stored set, how many of those pass under it and the
/// command that uses it after; `audit-sweep --schema installed` against
/// daemon-sim verifies the conversation carrying `originalName` that the
/// modeled schema's sweep refuses. Sources byte-identical.
#[test]
fn doctor_advises_the_installed_set_and_the_sweep_verifies_under_it() {
    let env = Env::new();
    let sha = fake_agy(&env, "1.0.10");
    let (store, id, _) = store_with_original_name(&env);
    let before = tree(&store.join("conversations"));
    let doctor = |extra: &[&str]| {
        let mut args = vec!["doctor", "--root", store.to_str().unwrap()];
        args.extend_from_slice(extra);
        env.run(&args)
    };
    let advice = |extra: &[&str]| {
        let mut args = vec!["--json"];
        args.extend_from_slice(extra);
        let o = doctor(&args);
        let v: Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", output_text(&o)));
        v["roots"][0]["schema"].clone()
    };

    // Before: the modeled schema's refusals and the command that stores the set.
    let a = advice(&[]);
    assert_eq!(a["modeled"], true, "{a}");
    assert_eq!(a["sweep"], "modeled", "{a}");
    let refused = a["unknownField"].as_u64().unwrap();
    assert!(refused >= 1, "{a}");
    assert_eq!(
        a["installed"]["agy"],
        env.bin.join("agy").to_str().unwrap(),
        "{a}"
    );
    assert_eq!(a["installed"]["set"], Value::Null, "{a}");
    assert_eq!(a["passUnderInstalled"], Value::Null, "{a}");
    assert_eq!(a["extract"], "agy-audit schema extract --installed", "{a}");
    assert_eq!(a["use"], "agy-audit audit-sweep --schema installed", "{a}");
    let text = output_text(&doctor(&[]));
    assert!(
        text.contains("schema: modeled")
            && text.contains(&format!("it refuses {refused} of 8 conversations offline for an unknown field"))
            && text.contains("store it with `agy-audit schema extract --installed`, then sweep with `agy-audit audit-sweep --schema installed`"),
        "{text}"
    );
    assert!(!env.schemas().exists(), "doctor extracts nothing");

    // Stored once; a second run writes nothing.
    let o = env.run(&["schema", "extract", "--installed"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let stored = tree(&env.data);
    let o = env.run(&["schema", "extract", "--installed"]);
    assert!(
        output_text(&o).contains("already stored"),
        "{}",
        output_text(&o)
    );
    assert_eq!(tree(&env.data), stored);

    // After: the pinned set, how many of the refusals pass under it, and
    // the command that uses it.
    let set = env.schemas().join(format!("agy-1.0.10-{}.pb", &sha[..12]));
    let a = advice(&[]);
    assert_eq!(a["installed"]["set"], set.to_str().unwrap(), "{a}");
    let passing = a["passUnderInstalled"].as_u64().unwrap();
    assert!((1..=refused).contains(&passing), "{a}");
    let text = output_text(&doctor(&[]));
    assert!(
        text.contains(&format!(
            "under the installed agy's stored set ({}) {passing} of those {refused} pass every offline check",
            set.display()
        )) && text.contains("sweep with it: `agy-audit audit-sweep --schema installed`"),
        "{text}"
    );
    let a = advice(&["--schema", "installed"]);
    assert_eq!(a["modeled"], false, "{a}");
    assert_eq!(
        a["sweep"],
        format!("agy-1.0.10-{}", &sha[..12]).as_str(),
        "{a}"
    );
    assert_eq!(a["unknownField"], Value::Null, "{a}");

    // The sweeps: the modeled schema refuses the planted conversation, the
    // installed set verifies it.
    let sim = start_sim(&store, &["--no-fault-file"]);
    let sweep = |name: &str, extra: &[&str]| {
        let out = env.home.join(name);
        let mut c = env.cmd(&["audit-sweep", "--quiet", "--root"]);
        c.arg(&store)
            .arg("--out")
            .arg(&out)
            .args(["--daemon-url", &sim.url])
            .args(extra);
        let o = c.output().unwrap();
        let m: Value = serde_json::from_slice(
            &std::fs::read(out.join("manifest.json"))
                .unwrap_or_else(|_| panic!("{}", output_text(&o))),
        )
        .unwrap();
        m["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| {
                s["fileId"]
                    .as_str()
                    .is_some_and(|f| f.starts_with(id.as_str()))
            })
            .unwrap_or_else(|| panic!("{id} in {m}"))
            .clone()
    };
    let modeled = sweep("sweep-modeled", &[]);
    assert_eq!(modeled["verdict"], "unknown", "{modeled}");
    assert_eq!(modeled["reasonClass"], "unknown-field", "{modeled}");
    let installed = sweep("sweep-installed", &["--schema", "installed"]);
    assert_eq!(installed["verdict"], "verified", "{installed}");
    assert!(
        installed["profile"]
            .as_str()
            .unwrap()
            .contains(&format!("-agy-1.0.10-{}-", &sha[..12])),
        "{installed}"
    );
    drop(sim);
    assert_eq!(
        tree(&store.join("conversations")),
        before,
        "sources byte-identical"
    );
}
