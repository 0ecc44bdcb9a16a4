//! agy-reader's test trajectory (`../shared/spec/peer-data/`, the daemon's
//! proto3 JSON shape) under the modeled schema: every member is a modeled
//! field and every enum name a modeled value, except exactly the ones listed
//! in proto/CONFORMANCE.md ("agy-reader's test trajectory"), which no public
//! descriptor defines. Without them the trajectory parses strictly
//! (`compare::parse_strict`) and the message read equals the text under the
//! proto3 JSON mapping (`compare::value`).
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

mod common;

use agy_audit::compare::parse_strict;
use agy_audit::compare::value::diff_value;
use agy_audit::schema::Schema;
use prost_reflect::{Kind, MessageDescriptor};
use serde_json::Value;
use std::path::PathBuf;

fn peer_file() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/spec/peer-data/agy-reader-invoke_subagent.trajectory.json");
    p.exists().then_some(p)
}

/// What the modeled schema cannot represent, as JSON pointers: an unknown
/// member (`/a/b`) or an unknown enum name (`/a/b = NAME`).
fn unrepresented(m: &MessageDescriptor, v: &Value, at: &str, out: &mut Vec<String>) {
    let Value::Object(members) = v else {
        return;
    };
    for (k, v) in members {
        let path = format!("{at}/{k}");
        let Some(f) = m.fields().find(|f| f.json_name() == k || f.name() == k) else {
            out.push(path);
            continue;
        };
        let kind = if f.is_map() {
            match f.kind() {
                Kind::Message(e) => e.map_entry_value_field().kind(),
                other => other,
            }
        } else {
            f.kind()
        };
        let items: Vec<(String, &Value)> = match v {
            Value::Array(a) if f.is_list() => a
                .iter()
                .enumerate()
                .map(|(i, x)| (format!("{path}/{i}"), x))
                .collect(),
            Value::Object(o) if f.is_map() => o
                .iter()
                .map(|(key, x)| (format!("{path}/{key}"), x))
                .collect(),
            x => vec![(path.clone(), x)],
        };
        for (p, x) in items {
            match (&kind, x) {
                (Kind::Message(mm), _) if !mm.full_name().starts_with("google.protobuf.") => {
                    unrepresented(mm, x, &p, out)
                }
                (Kind::Enum(e), Value::String(s)) if e.get_value_by_name(s).is_none() => {
                    out.push(format!("{p} = {s}"))
                }
                _ => {}
            }
        }
    }
}

/// `v` without the members named by `paths` (pointers, an enum's ` = NAME` cut off).
fn without(mut v: Value, paths: &[String]) -> Value {
    for p in paths {
        let p = p.split(" = ").next().unwrap_or(p);
        let (parent, key) = p.rsplit_once('/').unwrap_or(("", p));
        if let Some(Value::Object(o)) = v.pointer_mut(parent) {
            o.remove(key);
        }
    }
    v
}

/// The paths no public descriptor defines, as proto/CONFORMANCE.md lists them.
fn listed() -> Vec<String> {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("proto/CONFORMANCE.md"),
    )
    .expect("proto/CONFORMANCE.md");
    let Some((_, section)) = text.split_once("## agy-reader's test trajectory") else {
        return Vec::new();
    };
    section
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|l| l.strip_prefix("- `"))
        .filter_map(|l| l.split_once('`').map(|(p, _)| p.to_string()))
        .collect()
}

#[test]
fn peer_trajectory_parses_strictly_but_for_the_listed_paths() {
    let Some(path) = peer_file() else {
        println!("SKIP peer_trajectory: ../shared/spec/peer-data not found");
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    let schema = Schema::modeled().unwrap();

    let mut left = Vec::new();
    unrepresented(&schema.names.trajectory, &value, "", &mut left);
    println!("not represented by the modeled schema: {left:#?}");
    assert_eq!(
        left,
        listed(),
        "proto/CONFORMANCE.md (agy-reader's test trajectory) must list exactly what the modeled schema cannot represent"
    );
    if left.is_empty() {
        parse_strict(&schema, &text).expect("the whole trajectory parses strictly");
    } else {
        assert!(
            parse_strict(&schema, &text).is_err(),
            "the listed paths are refused"
        );
    }
    let rest = without(value, &left);
    let msg = parse_strict(&schema, &rest.to_string())
        .unwrap_or_else(|e| panic!("without the listed paths: {e}"));
    let diffs = diff_value(&msg, &rest, 10);
    assert!(diffs.is_empty(), "reads back differently: {diffs:?}");
}

/// Item 4's second half: the peer trajectory's steps (without the listed
/// paths) go through the projection, and a store holding the same content
/// exports, as JSON and as Markdown, with every step rendered.
#[test]
fn peer_trajectory_projects_and_exports_offline() {
    let Some(path) = peer_file() else {
        println!("SKIP peer_trajectory: ../shared/spec/peer-data not found");
        return;
    };
    let value: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let schema = Schema::modeled().unwrap();
    let mut left = Vec::new();
    unrepresented(&schema.names.trajectory, &value, "", &mut left);
    let rest = without(value, &left);
    let steps = rest["steps"].as_array().expect("steps").clone();
    assert!(!steps.is_empty());
    match common::project_steps(&schema, &steps) {
        Ok(p) => println!("projects: rules {:?}", p.step_rules),
        Err(r) => panic!("the peer trajectory is refused: {r}"),
    }

    let (root, conv) = common::store();
    let db = conv.join(format!("{}.db", common::CASCADE));
    common::write_db(&schema, &db, &common::conv_with(&schema, &steps), |_| {});
    let root_s = root.path().to_str().unwrap();
    let export = |format: &str| {
        let o = common::run(&[
            "export-offline",
            "--format",
            format,
            "--root",
            root_s,
            db.to_str().unwrap(),
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{format}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        o.stdout
    };
    let json: Value = serde_json::from_slice(&export("json")).expect("JSON export");
    let exported = json["steps"].as_array().expect("exported steps");
    assert_eq!(exported.len(), steps.len());
    for (i, (a, b)) in exported.iter().zip(&steps).enumerate() {
        assert_eq!(a["type"], b["type"], "step {i}");
    }
    let md = String::from_utf8(export("md")).expect("UTF-8 Markdown");
    // every planner response's text and every tool call's name is rendered
    for st in &steps {
        let p = &st["plannerResponse"];
        if let Some(text) = p["response"].as_str() {
            assert!(md.contains(text), "{text:?} not rendered:\n{md}");
        }
        for call in p["toolCalls"].as_array().into_iter().flatten() {
            let name = call["name"].as_str().expect("tool call name");
            assert!(md.contains(name), "{name} not rendered:\n{md}");
        }
    }
}
