//! The synthetic store generator: determinism, layout, SQLite/WAL and legacy
//! formats, ground truth and daemon views. Small corpora (`scale` < 1) keep
//! these fast in debug builds; coverage of the default corpus is checked on
//! its plan in `corpus_coverage.rs`.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::schema::{to_daemon_json, Schema};
use agy_corpus::corpus::{generate, GenerateOptions, PlanOptions};
use prost_reflect::DynamicMessage;
use rusqlite::Connection;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::DDL;

fn opts(out: &Path, n: usize, seed: u64) -> GenerateOptions {
    GenerateOptions {
        out: out.to_path_buf(),
        plan: PlanOptions {
            conversations: n,
            seed,
            near_miss_rate: 0.1,
            fault_rate: 0.0,
            scale: 0.1,
        },
        force: false,
    }
}

fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (
                e.path().strip_prefix(dir).unwrap().to_path_buf(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn truth(root: &Path) -> Vec<Value> {
    std::fs::read_to_string(root.join(".truth/expected.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Copies the `.db` and its `-wal` into a fresh directory and opens the copy.
fn open_copy(db: &Path) -> (tempfile::TempDir, Connection) {
    let d = tempfile::tempdir().unwrap();
    let name = db.file_name().unwrap();
    std::fs::copy(db, d.path().join(name)).unwrap();
    let wal = PathBuf::from(format!("{}-wal", db.display()));
    if wal.exists() {
        std::fs::copy(
            &wal,
            d.path().join(format!("{}-wal", name.to_string_lossy())),
        )
        .unwrap();
    }
    let c = Connection::open(d.path().join(name)).unwrap();
    (d, c)
}

#[test]
fn same_seed_gives_identical_bytes_and_another_seed_differs() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let c = tempfile::tempdir().unwrap();
    generate(&opts(a.path(), 30, 7)).unwrap();
    generate(&opts(b.path(), 30, 7)).unwrap();
    generate(&opts(c.path(), 30, 8)).unwrap();
    let (ta, tb, tc) = (tree(a.path()), tree(b.path()), tree(c.path()));
    assert!(
        ta.keys().any(|p| p.to_string_lossy().ends_with(".db-wal")),
        "no -wal generated"
    );
    assert_eq!(ta.len(), tb.len());
    for (p, bytes) in &ta {
        assert_eq!(
            Some(bytes),
            tb.get(p),
            "{} differs between two runs",
            p.display()
        );
    }
    assert_ne!(ta, tc);
    let same_names = ta.keys().filter(|k| tc.contains_key(*k)).count();
    // only cli.log, expected.jsonl, scenario.json, the marker and the stamp
    // keep their names
    assert!(
        same_names <= 5,
        "another seed should give other ids ({same_names} shared names)"
    );
}

#[test]
fn an_existing_corpus_is_replaced_only_with_force() {
    let d = tempfile::tempdir().unwrap();
    generate(&opts(d.path(), 3, 1)).unwrap();
    let err = generate(&opts(d.path(), 3, 1)).unwrap_err();
    assert!(err.to_string().contains("--force"), "{err}");
    let mut o = opts(d.path(), 3, 2);
    o.force = true;
    generate(&o).unwrap();
    assert_eq!(truth(d.path()).len(), 3);
}

/// A cached corpus is current only when this generator build finished it
/// with the same options: another seed, an interrupted generation (no
/// stamp) or a stamp from another generator build is stale, and replacing
/// a stale one with `--force` makes it current again.
#[test]
fn a_corpus_is_current_only_for_this_generator_and_these_options() {
    use agy_corpus::corpus::{is_current, STAMP};
    let d = tempfile::tempdir().unwrap();
    let o = opts(d.path(), 3, 1);
    assert!(!is_current(d.path(), &o.plan), "an empty folder");
    generate(&o).unwrap();
    assert!(is_current(d.path(), &o.plan));
    assert!(
        !is_current(d.path(), &opts(d.path(), 3, 2).plan),
        "another seed"
    );
    assert!(
        !is_current(d.path(), &opts(d.path(), 4, 1).plan),
        "another size"
    );
    let stamp = d.path().join(STAMP);
    let text = std::fs::read_to_string(&stamp).unwrap();
    let older = text.replace(agy_corpus::corpus::GENERATOR_DIGEST, "0000");
    assert_ne!(older, text);
    std::fs::write(&stamp, older).unwrap();
    assert!(!is_current(d.path(), &o.plan), "another generator build");
    std::fs::remove_file(&stamp).unwrap();
    assert!(!is_current(d.path(), &o.plan), "an interrupted generation");
    let mut again = o.clone();
    again.force = true;
    generate(&again).unwrap();
    assert!(is_current(d.path(), &o.plan));
}

/// `--force` must never delete what the generator did not write: a folder
/// without the generator's marker (a real agy store, say) is refused and left
/// byte for byte as it was.
#[test]
fn force_refuses_a_folder_the_generator_did_not_write() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    std::fs::create_dir_all(root.join("conversations")).unwrap();
    std::fs::write(root.join("conversations/user.db"), b"the user's history").unwrap();
    std::fs::write(root.join("conversations/user.db-wal"), b"wal").unwrap();
    std::fs::write(root.join("conversations/old.pb"), b"sealed").unwrap();
    std::fs::write(root.join("cli.log"), b"agy log").unwrap();
    let before = tree(root);
    let mut o = opts(root, 3, 1);
    o.force = true;
    let err = generate(&o).unwrap_err();
    assert!(err.to_string().contains("generator.json"), "{err}");
    assert_eq!(
        tree(root),
        before,
        "a refused --force must not touch anything"
    );
    // a marker someone else wrote is no marker either
    std::fs::create_dir_all(root.join(".truth")).unwrap();
    std::fs::write(root.join(".truth/generator.json"), b"{\"files\": []}").unwrap();
    let before = tree(root);
    assert!(generate(&o).is_err());
    assert_eq!(tree(root), before);
}

/// A generated corpus into which the user put a file of their own is not
/// replaced either: nothing the marker does not list is ever removed.
#[test]
fn force_refuses_a_generated_corpus_holding_foreign_files() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    generate(&opts(root, 3, 1)).unwrap();
    std::fs::write(root.join("conversations/mine.db"), b"mine").unwrap();
    let before = tree(root);
    let mut o = opts(root, 3, 2);
    o.force = true;
    let err = generate(&o).unwrap_err();
    assert!(err.to_string().contains("mine.db"), "{err}");
    assert_eq!(tree(root), before);
    std::fs::remove_file(root.join("conversations/mine.db")).unwrap();
    generate(&o).unwrap();
    assert_eq!(truth(root).len(), 3);
}

#[test]
fn layout_databases_wal_and_truth_follow_the_contract() {
    let d = tempfile::tempdir().unwrap();
    let s = generate(&opts(d.path(), 40, 3)).unwrap();
    let root = d.path();
    let lines = truth(root);
    assert_eq!(lines.len(), 40);
    assert_eq!(s.conversations, 40);
    assert!(root.join("cli.log").is_file());
    assert!(root.join(".truth/scenario.json").is_file());
    let implicit: Vec<_> = std::fs::read_dir(root.join("implicit")).unwrap().collect();
    assert!(!implicit.is_empty());
    let keys = [
        "fileId",
        "cascadeId",
        "format",
        "verdict",
        "reasonClass",
        "rules",
        "steps",
        "fault",
    ];
    let mut wal_checked = 0;
    for t in &lines {
        let obj = t.as_object().unwrap();
        assert_eq!(obj.keys().map(String::as_str).collect::<Vec<_>>(), keys);
        let id = t["fileId"].as_str().unwrap();
        assert_eq!(t["cascadeId"], t["fileId"]);
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4", "{id}");
        assert!(id
            .chars()
            .all(|c| c == '-' || c.is_ascii_digit() || ('a'..='f').contains(&c)));
        let rules: Vec<&str> = t["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        let mut sorted: Vec<_> = rules
            .iter()
            .map(|r| {
                agy_audit::rules::RuleId::from_id(r).unwrap_or_else(|| panic!("unknown rule {r}"))
            })
            .collect();
        sorted.sort();
        assert_eq!(
            sorted.iter().map(|r| r.id()).collect::<Vec<_>>(),
            rules,
            "rules not sorted"
        );
        if let Some(rc) = t["reasonClass"].as_str() {
            assert!(
                agy_audit::verdict::ReasonClass::from_id(rc).is_some(),
                "{rc}"
            );
        }
        for v in ["full", "ordinary"] {
            let p = root.join(format!(".truth/daemon/{id}.{v}.json"));
            let j: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
            assert_eq!(j["cascadeId"], id);
            assert_eq!(
                j["steps"].as_array().unwrap().len() as u64,
                t["steps"].as_u64().unwrap()
            );
        }
        let db = root.join(format!("conversations/{id}.db"));
        if t["format"] == "sqlite" {
            let head = std::fs::read(&db).unwrap();
            assert_eq!(&head[18..20], &[2, 2], "not WAL mode");
            let (_d, c) = open_copy(&db);
            let n: i64 = c
                .query_row("SELECT count(*) FROM steps", [], |r| r.get(0))
                .unwrap();
            assert_eq!(
                n as u64,
                t["steps"].as_u64().unwrap(),
                "{id}: steps seen through the WAL"
            );
            let mode: String = c
                .query_row("PRAGMA journal_mode", [], |r| r.get(0))
                .unwrap();
            assert_eq!(mode, "wal");
            let ok: String = c.query_row("PRAGMA quick_check", [], |r| r.get(0)).unwrap();
            assert_eq!(ok, "ok");
            let (tid, cid, ty, src): (String, String, i64, i64) = c
                .query_row("SELECT * FROM trajectory_meta", [], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })
                .unwrap();
            assert_eq!((cid.as_str(), ty), (id, 4));
            // 1 = IDE for a conversation with an IDE 2.25 file tool, 17 = CLI
            let ide = t["rules"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r.as_str().unwrap().starts_with("modern-ide225"));
            if ide {
                assert_eq!(src, 1, "{id}: an IDE 2.25 conversation");
            } else {
                assert!(src == 17 || src == 1, "{id}: source {src}");
            }
            assert_ne!(tid, id);
            if t["reasonClass"].is_null() {
                let mut st = c
                    .prepare("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")
                    .unwrap();
                let sql: Vec<String> = st
                    .query_map([], |r| r.get(0))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                assert_eq!(sql, DDL);
                let uv: i64 = c
                    .query_row("PRAGMA user_version", [], |r| r.get(0))
                    .unwrap();
                assert_eq!(uv, 1);
                let idx: Vec<i64> = c
                    .prepare("SELECT idx FROM steps ORDER BY idx")
                    .unwrap()
                    .query_map([], |r| r.get(0))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                assert_eq!(idx, (0..n).collect::<Vec<_>>());
                let bad: i64 = c
                    .query_row(
                        "SELECT count(*) FROM gen_metadata WHERE size != length(data)",
                        [],
                        |r| r.get(0),
                    )
                    .unwrap();
                assert_eq!(bad, 0);
            }
            let wal = root.join(format!("conversations/{id}.db-wal"));
            if wal.exists() {
                // the checkpointed part alone misses the newest steps
                let d2 = tempfile::tempdir().unwrap();
                std::fs::copy(&db, d2.path().join("x.db")).unwrap();
                let c2 = Connection::open(d2.path().join("x.db")).unwrap();
                let m: i64 = c2
                    .query_row("SELECT count(*) FROM steps", [], |r| r.get(0))
                    .unwrap();
                assert!(m < n, "{id}: the WAL holds no step");
                wal_checked += 1;
            }
        } else {
            assert!(root.join(format!("conversations/{id}.pb")).is_file());
        }
    }
    assert!(wal_checked > 0);
}

fn rows_trajectory(s: &Schema, c: &Connection) -> DynamicMessage {
    // independent reconstruction: Trajectory fields set by name from the rows
    let desc = s
        .pool
        .get_message_by_name("gemini_coder.Trajectory")
        .unwrap();
    let mut t = DynamicMessage::new(desc.clone());
    let (tid, cid, ty, src): (String, String, i32, i32) = c
        .query_row("SELECT * FROM trajectory_meta", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .unwrap();
    use prost_reflect::Value as V;
    t.set_field_by_name("trajectory_id", V::String(tid));
    t.set_field_by_name("cascade_id", V::String(cid));
    t.set_field_by_name("trajectory_type", V::EnumNumber(ty));
    t.set_field_by_name("source", V::EnumNumber(src));
    let list = |field: &str, sql: &str| -> V {
        let kind = desc.get_field_by_name(field).unwrap().kind();
        let md = kind.as_message().unwrap().clone();
        let rows: Vec<Vec<u8>> = c
            .prepare(sql)
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        V::List(
            rows.iter()
                .map(|b| V::Message(DynamicMessage::decode(md.clone(), b.as_slice()).unwrap()))
                .collect(),
        )
    };
    t.set_field_by_name(
        "steps",
        list("steps", "SELECT step_payload FROM steps ORDER BY idx"),
    );
    t.set_field_by_name(
        "generator_metadata",
        list(
            "generator_metadata",
            "SELECT data FROM gen_metadata ORDER BY idx",
        ),
    );
    t.set_field_by_name(
        "executor_metadatas",
        list(
            "executor_metadatas",
            "SELECT data FROM executor_metadata ORDER BY idx",
        ),
    );
    t.set_field_by_name(
        "parent_references",
        list(
            "parent_references",
            "SELECT data FROM parent_references ORDER BY idx",
        ),
    );
    let meta: Vec<u8> = c
        .query_row(
            "SELECT data FROM trajectory_metadata_blob WHERE id = 'main'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let md = desc
        .get_field_by_name("metadata")
        .unwrap()
        .kind()
        .as_message()
        .unwrap()
        .clone();
    t.set_field_by_name(
        "metadata",
        V::Message(DynamicMessage::decode(md, meta.as_slice()).unwrap()),
    );
    t
}

/// JSON equality that ignores object key order (protobuf maps have none).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same_json(v, w))
        }
        _ => a == b,
    }
}

#[test]
fn full_view_is_the_persisted_trajectory_and_legacy_files_decrypt() {
    let d = tempfile::tempdir().unwrap();
    generate(&opts(d.path(), 40, 5)).unwrap();
    let s = Schema::modeled().unwrap();
    let root = d.path();
    let mut legacy = 0;
    let mut both = 0;
    for t in truth(root) {
        let id = t["fileId"].as_str().unwrap().to_string();
        let full: Value = serde_json::from_slice(
            &std::fs::read(root.join(format!(".truth/daemon/{id}.full.json"))).unwrap(),
        )
        .unwrap();
        let ordinary: Value = serde_json::from_slice(
            &std::fs::read(root.join(format!(".truth/daemon/{id}.ordinary.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(
            full["steps"].as_array().unwrap().len(),
            ordinary["steps"].as_array().unwrap().len()
        );
        let pb = root.join(format!("conversations/{id}.pb"));
        let db = root.join(format!("conversations/{id}.db"));
        if t["format"] == "protobuf" {
            legacy += 1;
            assert!(!db.exists());
            let sealed = std::fs::read(&pb).unwrap();
            if t["reasonClass"] == "legacy-authentication" {
                assert!(agy_corpus::corpus::legacy::open(&sealed).is_err());
                continue;
            }
            let plain = agy_corpus::corpus::legacy::open(&sealed).unwrap();
            let desc = s
                .pool
                .get_message_by_name("gemini_coder.Trajectory")
                .unwrap();
            let m = DynamicMessage::decode(desc, plain.as_slice()).unwrap();
            assert!(
                same_json(&to_daemon_json(&m), &full),
                "{id}: full view ≠ legacy plaintext"
            );
            // fields 1..10 in ascending order
            let nums: Vec<u32> = agy_corpus::corpus::wire::fields(&plain)
                .unwrap()
                .iter()
                .map(|f| f.number)
                .collect();
            assert!(nums.windows(2).all(|w| w[0] <= w[1]), "{nums:?}");
            assert!(nums.iter().all(|n| (1..=10).contains(n)));
            continue;
        }
        if pb.exists() {
            both += 1;
            assert!(db.exists(), "a .pb beside a .db");
        }
        if t["reasonClass"].is_null() {
            let (_d, c) = open_copy(&db);
            let traj = rows_trajectory(&s, &c);
            assert!(
                same_json(&to_daemon_json(&traj), &full),
                "{id}: full view ≠ persisted trajectory"
            );
        }
    }
    assert!(legacy > 0 && both > 0, "legacy {legacy}, both {both}");
}

#[test]
fn planned_faults_are_written_and_set_the_truth() {
    let d = tempfile::tempdir().unwrap();
    let mut o = opts(d.path(), 40, 9);
    o.plan.fault_rate = 0.5;
    generate(&o).unwrap();
    let text = std::fs::read_to_string(d.path().join(".truth/faults.txt")).unwrap();
    let specs: Vec<_> = text
        .lines()
        .map(|l| agy_corpus::sim::FaultSpec::parse(l).unwrap())
        .collect();
    assert_eq!(specs.len(), 20);
    let lines = truth(d.path());
    for spec in &specs {
        let agy_corpus::sim::FaultTarget::Id(id) = &spec.target else {
            panic!("planned faults name ids")
        };
        let t = lines.iter().find(|t| t["fileId"] == id.as_str()).unwrap();
        assert_eq!(t["fault"], spec.to_string());
        match spec.kind.expected() {
            Some((v, c)) => {
                // The truth's ids, parsed by the reader's own parsers.
                let v = agy_audit::verdict::VerdictKind::from_id(v.as_str()).unwrap();
                let c = agy_audit::verdict::ReasonClass::from_id(c.id()).unwrap();
                // A daemon failure is no verdict: not fetched.
                let want = if c == agy_audit::verdict::ReasonClass::DaemonUnavailable {
                    agy_audit::verdict::Outcome::NotFetched
                } else {
                    agy_audit::verdict::Outcome::Verdict(v)
                };
                assert_eq!(t["verdict"], want.as_str(), "{spec}");
                assert_eq!(t["reasonClass"], c.id(), "{spec}");
            }
            None => assert!(
                t["verdict"].as_str().unwrap().starts_with("verified"),
                "{spec}"
            ),
        }
    }
}

/// Every variant of every near-miss class assembles (the cycle reaches the
/// later variants only when most conversations are near-misses): a wrong
/// wire type serves the daemon's views from the clean bytes.
#[test]
fn every_near_miss_variant_assembles_at_rate_one() {
    use agy_corpus::corpus::{assemble, content, msg::Builder, plan};
    let p = plan::plan(&plan::PlanOptions {
        conversations: 400,
        near_miss_rate: 1.0,
        ..plan::PlanOptions::default()
    });
    let b = Builder::new(agy_corpus::schema::Schema::modeled().expect("modeled schema"));
    let mut failed = Vec::new();
    for cp in &p.conversations {
        if let Err(e) = assemble::assemble(&b, cp, content::build(cp, 1)) {
            failed.push(format!("{:?}: {e}", cp.near_miss));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}
