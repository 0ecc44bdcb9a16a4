//! Machine-readable outputs: `audit-qualify --json` and the shell
//! completions generated from the CLI definition.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

mod common;

use common::{bin, output_text, read_manifest};

#[test]
fn audit_qualify_json_counts_every_session_and_flags_a_change() {
    let (dir, store, sweep) = common::swept_store(12, 5);
    let manifest = sweep.join("manifest.json");
    let m = read_manifest(&sweep);
    let n = m["sessions"].as_array().unwrap().len();
    let o = bin()
        .arg("audit-qualify")
        .arg(&manifest)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(v["counts"]["sessions"], n);
    assert_eq!(v["counts"]["holding"], n);
    assert_eq!(v["counts"]["changed"], 0);
    assert_eq!(v["sessions"].as_array().unwrap().len(), n);
    assert_eq!(v["absent"], serde_json::json!([]));

    // a verified source edited: its recorded result no longer holds
    let id = m["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["verdict"] == "verified" && s["format"] == "sqlite")
        .and_then(|s| s["fileId"].as_str())
        .unwrap()
        .to_string();
    let copy = dir.path().join("copy");
    std::fs::create_dir_all(copy.join("conversations")).unwrap();
    for e in std::fs::read_dir(store.join("conversations")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, copy.join("conversations").join(p.file_name().unwrap())).unwrap();
    }
    std::fs::remove_file(copy.join("conversations").join(format!("{id}.db"))).unwrap();
    let _ = std::fs::remove_file(copy.join("conversations").join(format!("{id}.db-wal")));
    let o = bin()
        .arg("audit-qualify")
        .arg(&manifest)
        .arg("--root")
        .arg(&copy)
        .arg("--json")
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0), "{}", output_text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(v["counts"]["changed"], 1, "{v:#}");
    let s = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["fileId"] == id.as_str())
        .unwrap();
    assert_eq!(s["holds"], false);
    assert!(s["change"].is_string(), "{s}");
}

#[test]
fn completions_are_generated_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let o = bin().args(["completions", shell]).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{shell}: {}", output_text(&o));
        let text = String::from_utf8_lossy(&o.stdout);
        for word in ["audit-sweep", "audit-qualify", "audit-diff", "--junit"] {
            assert!(text.contains(word), "{shell}: no {word}");
        }
    }
    let o = bin().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
    // bash accepts the bash script, where bash is installed
    let script = bin().args(["completions", "bash"]).output().unwrap().stdout;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agy-audit.bash");
    std::fs::write(&path, script).unwrap();
    match std::process::Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
    {
        Ok(o) => assert!(o.status.success(), "{}", output_text(&o)),
        Err(_) => eprintln!("SKIP: no bash to parse the bash completions"),
    }
}

/// `audit-sweep --json`: one object on standard output whose counts,
/// sessions, manifest path and complete flag are the manifest's.
#[test]
fn audit_sweep_json_is_the_manifest_summary() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    common::generate_store(
        &store,
        &["--conversations", "12", "--seed", "5", "--scale", "0.1"],
    );
    let sim = common::start_sim(&store, &["--no-fault-file"]);
    let sweep = dir.path().join("sweep");
    let o = common::sweep_command(&store, &sweep, &sim.url)
        .arg("--json")
        .output()
        .unwrap();
    drop(sim);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("one JSON object ({e}): {}", output_text(&o)));
    let m = read_manifest(&sweep);
    assert_eq!(
        v["manifest"],
        sweep.join("manifest.json").display().to_string()
    );
    assert_eq!(v["out"], sweep.display().to_string());
    assert_eq!(v["root"], m["root"]);
    assert_eq!(v["endpoint"], m["endpoint"]);
    assert_eq!(v["complete"], m["complete"]);
    assert_eq!(v["complete"], true);
    assert_eq!(v["interrupted"], false);
    assert_eq!(v["daemonDown"], serde_json::Value::Null);
    assert_eq!(v["pending"], 0);
    assert_eq!(v["shard"], serde_json::Value::Null);
    assert_eq!(v["resume"], serde_json::Value::Null);
    assert_eq!(v["sessions"], m["sessions"].as_array().unwrap().len());
    assert_eq!(v["sessions"], 12);
    assert_eq!(v["skipped"], 0);
    assert_eq!(v["profiles"], m["profiles"]);
    assert_eq!(v["counts"], m["counts"]);
    assert_eq!(v["countsByProfile"], m["countsByProfile"]);
    assert_eq!(v["countsByFormat"], m["countsByFormat"]);
    for key in [
        "selected",
        "verified",
        "verifiedSourceOnly",
        "unknown",
        "incomplete",
        "notFetched",
        "error",
    ] {
        assert!(v["counts"][key].is_u64(), "counts.{key}: {v:#}");
    }
    assert_eq!(v["exitCode"], o.status.code().unwrap());
    let unknown = v["counts"]["unknown"].as_u64().unwrap();
    assert_eq!(o.status.code(), Some(if unknown > 0 { 3 } else { 0 }));
    // the summary line still goes to standard error
    assert!(String::from_utf8_lossy(&o.stderr).contains("audit-sweep: selected=12"));

    // a shard whose every fetch fails: not complete, the resume command
    // given
    let sim = common::start_sim(&store, &["--no-fault-file", "--fault", "rate=1:http-503"]);
    let sweep2 = dir.path().join("sweep2");
    let o = common::sweep_command(&store, &sweep2, &sim.url)
        .args(["--shard", "1/2", "--json"])
        .output()
        .unwrap();
    drop(sim);
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    let m = read_manifest(&sweep2);
    assert_eq!(v["complete"], false);
    assert_eq!(v["complete"], m["complete"]);
    assert_eq!(v["shard"], "1/2");
    assert_eq!(v["shard"], m["shard"]);
    assert_eq!(v["counts"], m["counts"]);
    assert!(v["pending"].as_u64().unwrap() > 0, "{v:#}");
    assert_eq!(v["pending"], m["counts"]["notFetched"]);
    assert_eq!(
        v["resume"],
        format!(
            "agy-audit audit-sweep --root {} --out {} --shard 1/2 --resume",
            m["root"].as_str().unwrap(),
            sweep2.display()
        )
    );
    assert_eq!(v["exitCode"], 1);
}

/// `export-offline --json`: the verdict and notes of one source, its
/// profile and digest the manifest's, the export embedded or written.
#[test]
fn export_offline_json_gives_the_verdict_and_notes() {
    let (dir, store, sweep) = common::swept_store(30, 11);
    let m = read_manifest(&sweep);
    let sessions = m["sessions"].as_array().unwrap();
    let source = |s: &serde_json::Value| {
        let ext = if s["format"] == "sqlite" { "db" } else { "pb" };
        store
            .join("conversations")
            .join(format!("{}.{ext}", s["fileId"].as_str().unwrap()))
    };
    let export = |path: &std::path::Path, extra: &[&str]| {
        let o = bin()
            .arg("export-offline")
            .arg(path)
            .arg("--root")
            .arg(&store)
            .arg("--json")
            .args(extra)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("one JSON object ({e}): {}", output_text(&o)));
        (o, v)
    };

    // a verified source: qualified, the export embedded
    let ok = sessions
        .iter()
        .find(|s| s["verdict"] == "verified" && s["format"] == "sqlite")
        .unwrap();
    let (o, v) = export(&source(ok), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert_eq!(v["fileId"], ok["fileId"]);
    assert_eq!(v["sourceFormat"], "sqlite");
    assert_eq!(v["profile"], ok["profile"]);
    assert_eq!(v["sourceDigest"], ok["sourceDigest"]);
    assert_eq!(v["steps"], ok["steps"]);
    assert_eq!(v["verdict"], "qualified");
    assert_eq!(v["reason"], serde_json::Value::Null);
    assert_eq!(v["exported"], true);
    assert_eq!(v["exportFormat"], "json");
    assert_eq!(v["out"], serde_json::Value::Null);
    assert_eq!(
        v["export"]["agyReader"]["offline"]["sourceDigest"],
        ok["sourceDigest"]
    );
    assert_eq!(v["exitCode"], 0);
    assert!(v["notes"].is_array());

    // written to --out as Markdown: the object says where and how much
    let out = dir.path().join("t.md");
    let (o, v) = export(
        &source(ok),
        &["--format", "md", "--out", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert_eq!(v["out"], out.display().to_string());
    assert_eq!(v["bytes"], std::fs::metadata(&out).unwrap().len());
    assert_eq!(v["export"], serde_json::Value::Null);
    assert_eq!(v["exportFormat"], "md");
    let notes = v["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("wrote ")),
        "{v:#}"
    );

    // a refused source: unknown with the manifest's class, nothing exported
    let bad = sessions
        .iter()
        .find(|s| s["verdict"] == "unknown")
        .expect("the sweep has a refusal");
    let (o, v) = export(&source(bad), &[]);
    assert_eq!(o.status.code(), Some(3), "{}", output_text(&o));
    assert_eq!(v["verdict"], "unknown");
    assert_eq!(v["profile"], bad["profile"]);
    assert_eq!(v["reason"]["class"], bad["reasonClass"]);
    assert!(v["reason"]["detail"].is_string());
    assert_eq!(v["exported"], false);
    assert_eq!(v["export"], serde_json::Value::Null);
    assert_eq!(v["exitCode"], 3);
    let notes: Vec<&str> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes.iter().any(|n| n.contains("nothing exported")),
        "{notes:?}"
    );
}
