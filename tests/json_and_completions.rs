//! Machine-readable outputs: `audit-qualify --json` and the shell
//! completions generated from the CLI definition.

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
