//! Subagent trees on a generated two-root home (issue 35 item 4): the CLI
//! root holds the families `corpus generate --home` writes (a parent, its
//! child and grandchild; an orphan whose parent is in no root; a parent
//! cycle), `.truth/families.json` names them. `export-offline --format md`
//! nests each child's transcript under the INVOKE_SUBAGENT step that
//! invoked it (`--no-tree` does not); `agyReader.parentCascadeId` comes
//! from the child's `parentConversationId` or a parent's invoke results,
//! in the offline export and in the sidecar `sync` writes; a cycle is
//! reported and not followed; a missing parent is reported; and each
//! parent-link diagnostic is reported by its public id. Every source is
//! byte-identical after every command (SHA-256 of each file, before and
//! after).
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

mod common;

use agy_corpus::corpus::families::{Families, FamilyRole};
use agy_corpus::corpus::HOME_CLI_ROOT;
use common::{
    bin, generated_home, home_cli_sim, home_source_digests, output_text, wait_with_deadline,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;

fn home(name: &str, seed: u64) -> (PathBuf, Families) {
    let (h, s) = generated_home(name, seed, 0.0);
    let f = s.cli.families.expect("the CLI root has families");
    let on_disk: Value = serde_json::from_slice(
        &std::fs::read(h.join(HOME_CLI_ROOT).join(".truth/families.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(on_disk["members"].as_array().unwrap().len(), 6);
    (h, f)
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// `agy-audit ARGS` with HOME = `home`, at most 120 s (a tree walk that
/// never ends fails the test instead of hanging it).
fn agy(home: &Path, args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let (o, e) = (dir.path().join("out"), dir.path().join("err"));
    let mut c = bin();
    c.env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .args(args)
        .stdout(Stdio::from(std::fs::File::create(&o).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&e).unwrap()));
    let mut child = c.spawn().unwrap();
    let st = wait_with_deadline(&mut child, 120, &format!("agy-audit {args:?}"));
    Run {
        code: st.code(),
        stdout: std::fs::read_to_string(o).unwrap(),
        stderr: std::fs::read_to_string(e).unwrap(),
    }
}

fn ok(r: &Run) {
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
}

fn id(f: &Families, role: FamilyRole) -> String {
    f.id(role).unwrap().to_string()
}

/// The `agyReader.parentCascadeId` of an offline JSON export.
fn exported_parent(home: &Path, id: &str, extra: &[&str]) -> (Option<String>, Run) {
    let mut args = vec!["export-offline", id];
    args.extend(extra);
    let r = agy(home, &args);
    ok(&r);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let p = v["agyReader"]["parentCascadeId"]
        .as_str()
        .map(str::to_string);
    (p, r)
}

#[test]
fn a_parents_export_nests_its_child_and_grandchild_and_no_tree_does_not() {
    let (h, f) = home("subagent_tree_nested", 9);
    let before = home_source_digests(&h);
    let (top, child, grand) = (
        id(&f, FamilyRole::TreeRoot),
        id(&f, FamilyRole::TreeChild),
        id(&f, FamilyRole::TreeGrandchild),
    );

    let r = agy(&h, &["export-offline", &top, "--format", "md"]);
    ok(&r);
    let md = &r.stdout;
    assert!(
        r.stderr.contains("nested 2 subagent conversations"),
        "{}",
        r.stderr
    );
    let child_head = format!("### Subagent conversation `{child}` (depth 1, ");
    let grand_head = format!("##### Subagent conversation `{grand}` (depth 2, ");
    assert!(
        md.lines()
            .any(|l| l.starts_with("## ") && l.contains(". Invoked subagent")),
        "{md}"
    );
    let (c, g) = (md.find(&child_head), md.find(&grand_head));
    assert!(c.is_some() && g.is_some(), "{md}");
    assert!(c < g, "the grandchild nests inside the child");
    // the child's own INVOKE_SUBAGENT step (a level deeper) precedes the grandchild
    let child_invoke = md[c.unwrap()..]
        .find(". Invoked subagent")
        .map(|i| i + c.unwrap());
    assert!(child_invoke.is_some_and(|i| i < g.unwrap()), "{md}");
    assert!(
        md.contains(&format!("> Subagent of `{top}`, from ")),
        "{md}"
    );
    assert!(
        md.contains(&format!("> Subagent of `{child}`, from ")),
        "{md}"
    );
    println!("--- nested export excerpt ---");
    let at = c.unwrap();
    for l in md[at.saturating_sub(600)..].lines().take(24) {
        println!("{l}");
    }

    // --no-tree: the same transcript without the nested sections
    let flat = agy(&h, &["export-offline", &top, "--format", "md", "--no-tree"]);
    ok(&flat);
    assert!(
        !flat.stdout.contains("Subagent conversation `"),
        "{}",
        flat.stdout
    );
    assert!(!flat.stderr.contains("parent-link"), "{}", flat.stderr);
    assert!(md.starts_with(flat.stdout.split(". Invoked subagent").next().unwrap()));
    assert!(flat.stdout.len() < md.len());

    // parentCascadeId from each child's own metadata, in the export...
    assert_eq!(
        exported_parent(&h, &child, &[]).0.as_deref(),
        Some(top.as_str())
    );
    assert_eq!(
        exported_parent(&h, &grand, &[]).0.as_deref(),
        Some(child.as_str())
    );
    assert_eq!(exported_parent(&h, &top, &[]).0, None);
    assert_eq!(
        exported_parent(&h, &grand, &["--no-tree"]).0.as_deref(),
        Some(child.as_str())
    );
    let r = agy(
        &h,
        &["export-offline", &child, "--format", "md", "--no-tree"],
    );
    ok(&r);
    assert!(r
        .stdout
        .contains(&format!("Subagent conversation of `{top}`.")));

    // ...and in the sidecar sync writes
    let cli = h.join(HOME_CLI_ROOT);
    let sim = home_cli_sim(&h);
    for (c, want) in [(&child, Some(&top)), (&grand, Some(&child)), (&top, None)] {
        let out = bin().env("HOME", &h).args(["sync", c]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
        let side: Value = serde_json::from_slice(
            &std::fs::read(
                cli.join("conversations")
                    .join(format!("{c}.trajectory.json")),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(
            side["agyReader"]["parentCascadeId"].as_str(),
            want.map(String::as_str),
            "{c}"
        );
    }
    sim.stop();
    // with the sidecars there, the nested export is the same bytes
    let again = agy(&h, &["export-offline", &top, "--format", "md"]);
    ok(&again);
    assert_eq!(&again.stdout, md, "the sidecars change nothing nested");
    assert_eq!(home_source_digests(&h), before);
}

#[test]
fn a_cycle_is_reported_and_not_followed_and_a_missing_parent_is_reported() {
    let (h, f) = home("subagent_tree_cycle", 9);
    let before = home_source_digests(&h);
    let (a, b) = (id(&f, FamilyRole::CycleA), id(&f, FamilyRole::CycleB));
    let r = agy(&h, &["export-offline", &a, "--format", "md"]);
    ok(&r);
    // b nests once under a; a under b is the cycle, not followed
    assert_eq!(
        r.stdout
            .matches(&format!("Subagent conversation `{b}` (depth 1"))
            .count(),
        1
    );
    assert!(
        r.stdout.contains(&format!("Subagent conversation `{a}`\n\n_Already shown above, as an ancestor of this step: a parent cycle (parent-cycle); not followed again._")),
        "{}",
        r.stdout
    );
    let (lo, hi) = if a < b { (&a, &b) } else { (&b, &a) };
    for m in [&a, &b] {
        let line = format!("parent-link: parent-cycle {m}: its parent edge forms a cycle ({lo} -> {hi} -> {lo}); not followed");
        assert!(r.stderr.contains(&line), "{}", r.stderr);
    }
    // a cycle's parents are never stamped
    let (p, j) = exported_parent(&h, &a, &[]);
    assert_eq!(p, None);
    assert!(
        j.stderr.contains(&format!("parent-cycle {a}")),
        "{}",
        j.stderr
    );
    // --no-tree: the native parent, unexamined
    assert_eq!(
        exported_parent(&h, &a, &["--no-tree"]).0.as_deref(),
        Some(b.as_str())
    );

    // the orphan: its parent is in no root; kept, and reported
    let o = id(&f, FamilyRole::Orphan);
    let (p, r) = exported_parent(&h, &o, &[]);
    assert_eq!(p.as_deref(), Some(f.missing_parent.as_str()));
    let line = format!(
        "parent-link: missing-parent {o}: parent {} is in no known root",
        f.missing_parent
    );
    assert!(r.stderr.contains(&line), "{}", r.stderr);
    let r = agy(&h, &["export-offline", &o, "--format", "md"]);
    ok(&r);
    assert!(r
        .stdout
        .contains(&format!("Subagent conversation of `{}`.", f.missing_parent)));
    assert!(r.stderr.contains(&line), "{}", r.stderr);
    assert_eq!(home_source_digests(&h), before);
}

#[test]
fn each_parent_link_diagnostic_is_reported_and_invoke_results_name_a_parent() {
    let (h, f) = home("subagent_tree_diagnostics", 9);
    let before = home_source_digests(&h);
    let conv = h.join(HOME_CLI_ROOT).join("conversations");
    // a plain conversation (not in any family, no parent of its own)
    let members: Vec<String> = f.members.iter().map(|m| m.id.clone()).collect();
    let plain: Vec<String> = std::fs::read_dir(&conv)
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().into_string().unwrap();
            n.strip_suffix(".db").map(str::to_string)
        })
        .filter(|i| !members.contains(i))
        .collect();
    let (x, w) = (plain[0].clone(), plain[1].clone());
    let (p0, _) = exported_parent(&h, &x, &[]);
    assert_eq!(p0, None, "{x} is a root");

    // a parent known by its sidecar alone, whose INVOKE_SUBAGENT lists x
    let parent = "7d0f7a55-3c59-4f6e-9a0e-2b1f6a3e9c11";
    let side = serde_json::json!({"cascadeId": parent, "steps": [
        {"type": "CORTEX_STEP_TYPE_INVOKE_SUBAGENT", "status": "CORTEX_STEP_STATUS_DONE",
         "invokeSubagent": {"results": [{"conversationId": x.to_uppercase()}]}}]});
    std::fs::write(
        conv.join(format!("{parent}.trajectory.json")),
        serde_json::to_vec(&side).unwrap(),
    )
    .unwrap();
    // an unreadable sidecar, one naming another cascade, an invalid stamp
    let broken = "0f0e0d0c-0b0a-4908-8706-050403020100";
    std::fs::write(
        conv.join(format!("{broken}.trajectory.json")),
        b"{\"cascadeId\":",
    )
    .unwrap();
    let misnamed = "1a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d";
    std::fs::write(
        conv.join(format!("{misnamed}.trajectory.json")),
        br#"{"cascadeId":"not-a-cascade"}"#,
    )
    .unwrap();
    std::fs::write(
        conv.join(format!("{w}.trajectory.json")),
        serde_json::to_vec(&serde_json::json!({"cascadeId": w,
            "agyReader": {"parentCascadeId": "{not-a-uuid}"}}))
        .unwrap(),
    )
    .unwrap();

    let (p, r) = exported_parent(&h, &x, &[]);
    assert_eq!(
        p.as_deref(),
        Some(parent),
        "from the parent's invoke results"
    );
    for line in [
        format!("parent-link: unreadable-sidecar {broken}: "),
        format!("parent-link: invalid-cascade-id {misnamed}: "),
        format!("parent-link: invalid-parent-stamp {w}: agyReader.parentCascadeId \"{{not-a-uuid}}\" is not a bare UUID; ignored"),
    ] {
        assert!(r.stderr.contains(&line), "{line}\n{}", r.stderr);
    }
    // the diagnostics come in one order: by kind, then conversation
    let kinds: Vec<&str> = r
        .stderr
        .lines()
        .filter_map(|l| l.split("parent-link: ").nth(1))
        .filter_map(|l| l.split(' ').next())
        .collect();
    let mut sorted = kinds.clone();
    let rank = |k: &str| {
        [
            "unreadable-sidecar",
            "invalid-cascade-id",
            "invalid-parent-stamp",
            "parent-cycle",
            "missing-parent",
            "conflicting-evidence",
        ]
        .iter()
        .position(|x| *x == k)
    };
    sorted.sort_by_key(|k| rank(k));
    assert_eq!(kinds, sorted);
    // --no-tree reads no sidecar: no diagnostics, only the native parent (none)
    let (p, r) = exported_parent(&h, &x, &["--no-tree"]);
    assert_eq!(p, None);
    assert!(!r.stderr.contains("parent-link"), "{}", r.stderr);
    // the sidecar-only parent is known: nothing nests (no source), no missing-parent
    let r = agy(&h, &["export-offline", &x, "--format", "md"]);
    ok(&r);
    assert!(
        !r.stderr.contains(&format!("missing-parent {x}")),
        "{}",
        r.stderr
    );
    assert!(r
        .stdout
        .contains(&format!("Subagent conversation of `{parent}`.")));
    // sync stamps the sidecar from the sibling parent's invoke results too
    let sim = home_cli_sim(&h);
    let out = bin().env("HOME", &h).args(["sync", &x]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    sim.stop();
    let side: Value =
        serde_json::from_slice(&std::fs::read(conv.join(format!("{x}.trajectory.json"))).unwrap())
            .unwrap();
    assert_eq!(side["agyReader"]["parentCascadeId"], parent);
    assert!(side["agyReader"]["completeness"]["payloadDigest"].is_string());
    assert_eq!(home_source_digests(&h), before);
}
