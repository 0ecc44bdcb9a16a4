//! The store's own troubles, named (issue 48 item 5): on a generated home
//! with every trouble planted (`corpus generate --home --plant-troubles`),
//! `doctor` and `list --check` name the conversations the summaries index
//! misses and its entries without a file, zombie steps, a malformed
//! database (with SQLite's message and the advice never to repair it in
//! place) and an oversized conversation with its largest member kinds;
//! plain `list` decodes nothing and names none of them; a conversation a
//! process holds a lock on, or changed recently, is active, not a zombie.
//! Every store file is byte-identical after every command, and no
//! `-shm`/`-journal` appears.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_corpus::corpus::plants::GONE_ID;
use agy_corpus::corpus::{HomePlants, HOME_CLI_ROOT};
use common::{bin, home_store_digests, output_text, planted_home};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const TROUBLES: HomePlants = HomePlants {
    troubles: true,
    extra_roots: false,
};

fn in_home(home: &Path) -> Command {
    let mut c = bin();
    c.env("HOME", home).env_remove("XDG_CONFIG_HOME");
    c
}

fn doctor_json(home: &Path) -> Value {
    let out = in_home(home).args(["doctor", "--json"]).output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", output_text(&out)))
}

/// The CLI root's troubles in doctor's JSON.
fn cli_troubles(v: &Value, home: &Path) -> Value {
    let cli = home.join(HOME_CLI_ROOT).display().to_string();
    v["roots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == cli.as_str())
        .unwrap()["troubles"]
        .clone()
}

fn conv<'a>(t: &'a Value, id: &Value) -> &'a Value {
    t["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == *id)
        .unwrap_or_else(|| panic!("{id} not named in {t}"))
}

#[test]
fn doctor_names_every_planted_trouble_and_changes_nothing() {
    let (home, planted) = planted_home("troubles_doctor", 41, TROUBLES);
    let p = &planted["troubles"];
    let before = home_store_digests(&home);

    let v = doctor_json(&home);
    let t = cli_troubles(&v, &home);
    // the index: the two it misses, its entry without a file
    assert_eq!(t["index"]["state"], "read", "{t}");
    assert_eq!(t["index"]["notIndexed"], p["notIndexed"]);
    assert_eq!(t["index"]["withoutFile"], serde_json::json!([GONE_ID]));
    for id in p["notIndexed"].as_array().unwrap() {
        assert_eq!(conv(&t, id)["notIndexed"], true);
    }
    // zombie steps: one RUNNING, one WAITING, in an idle conversation
    let z = conv(&t, &p["zombie"]["id"]);
    assert_eq!(z["inFlight"]["running"], 1);
    assert_eq!(z["inFlight"]["waiting"], 1);
    assert_eq!(z["inFlight"]["activity"], "idle");
    assert_eq!(t["zombieSteps"], 2);
    assert_eq!(t["zombieConversations"], 1);
    // malformed, with SQLite's message
    let m = conv(&t, &p["malformed"]["id"]);
    assert!(
        m["malformed"].as_str().unwrap().contains("malformed"),
        "{m}"
    );
    assert_eq!(t["malformed"], 1);
    // oversized, with its member kinds, largest first
    let o = conv(&t, &p["oversized"]["id"]);
    assert_eq!(o["oversized"]["bytes"], p["oversized"]["bytes"]);
    let kinds: Vec<&str> = o["oversized"]["largest"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k[0].as_str().unwrap())
        .collect();
    for k in ["steps", "gen_metadata", "other"] {
        assert!(kinds.contains(&k), "{kinds:?}");
    }
    assert_eq!(t["oversized"], 1);
    // the IDE root has no index and no trouble
    let ide = v["roots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["surface"] == "ide")
        .unwrap();
    assert_eq!(ide["troubles"]["index"]["state"], "absent");
    assert_eq!(ide["troubles"]["zombieSteps"], 0);

    // the text: a line for each
    let out = in_home(&home).arg("doctor").output().unwrap();
    let text = output_text(&out);
    for needle in [
        "index: 2 not indexed (agy will not offer them on resume)",
        &format!("index: 1 entries without a file: {GONE_ID}"),
        "zombie steps: 2 in 1 conversations",
        "malformed: 1",
        "never repair the original in place",
        ".recover",
        "oversized (over 100.0 MB): 1",
        "largest: other",
    ] {
        assert!(text.contains(needle), "{needle}\n{text}");
    }
    assert_eq!(home_store_digests(&home), before);
}

#[test]
fn list_check_names_them_and_plain_list_decodes_nothing() {
    let (home, planted) = planted_home("troubles_list", 42, TROUBLES);
    let p = &planted["troubles"];
    let before = home_store_digests(&home);
    let lines = |args: &[&str]| -> Vec<Value> {
        let out = in_home(&home).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    // plain list: no troubles
    let plain = lines(&["list", "--json"]);
    assert!(plain.iter().all(|r| r.get("troubles").is_none()));
    // list --check: every row a state (one kind of line), the index's too
    let rows = lines(&["list", "--check", "--json"]);
    assert_eq!(rows.len(), plain.len());
    assert!(rows
        .iter()
        .all(|r| r.get("troubles").is_some() && r.get("id").is_some()));
    let row = |id: &Value| rows.iter().find(|r| r["id"] == *id).unwrap();
    assert_eq!(row(&p["notIndexed"][0])["troubles"]["notIndexed"], true);
    assert_eq!(
        row(&p["zombie"]["id"])["troubles"]["inFlight"]["activity"],
        "idle"
    );
    assert!(row(&p["malformed"]["id"])["troubles"]["malformed"].is_string());
    assert!(row(&p["oversized"]["id"])["troubles"]["oversized"]["bytes"].is_u64());
    let index = &row(&p["zombie"]["id"])["troubles"]["index"];
    assert_eq!(index["state"], "read");
    assert_eq!(index["withoutFile"], 1);
    // none changes a verdict: the same sidecar states as plain list
    for r in &rows {
        let same = plain.iter().find(|q| q["path"] == r["path"]).unwrap();
        assert_eq!(r["sidecar"], same["sidecar"]);
    }
    // the text: a line under each row, the index's lines
    let out = in_home(&home).args(["list", "--check"]).output().unwrap();
    let text = output_text(&out);
    for needle in [
        "not indexed: conversation_summaries.db does not hold it",
        "zombie steps: 2 (1 RUNNING, 1 WAITING; no writer holds it",
        "malformed: ",
        "oversized: 104.9 MB (over 100.0 MB)",
        "index: 1 entries without a file",
    ] {
        assert!(text.contains(needle), "{needle}\n{text}");
    }
    let text = output_text(&in_home(&home).arg("list").output().unwrap());
    assert!(
        !text.contains("zombie") && !text.contains("not indexed"),
        "{text}"
    );
    assert_eq!(home_store_digests(&home), before);
}

#[test]
fn a_held_or_recent_conversation_is_active_not_a_zombie() {
    let (home, planted) = planted_home("troubles_active", 43, TROUBLES);
    let id = planted["troubles"]["zombie"]["id"].clone();
    let db = home
        .join(HOME_CLI_ROOT)
        .join("conversations")
        .join(format!("{}.db", id.as_str().unwrap()));
    // a process holds a lock on it (here: this test, through the OS)
    let f = std::fs::File::open(&db).unwrap();
    f.lock_shared().unwrap();
    let t = cli_troubles(&doctor_json(&home), &home);
    assert_eq!(conv(&t, &id)["inFlight"]["activity"], "locked");
    assert_eq!(t["zombieSteps"], 0);
    f.unlock().unwrap();
    drop(f);
    let t = cli_troubles(&doctor_json(&home), &home);
    assert_eq!(conv(&t, &id)["inFlight"]["activity"], "idle");
    // changed a moment ago: active
    std::fs::OpenOptions::new()
        .write(true)
        .open(&db)
        .unwrap()
        .set_modified(std::time::SystemTime::now())
        .unwrap();
    let t = cli_troubles(&doctor_json(&home), &home);
    assert_eq!(conv(&t, &id)["inFlight"]["activity"], "recent");
    assert_eq!(t["zombieSteps"], 0);
}
