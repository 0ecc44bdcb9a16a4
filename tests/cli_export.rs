//! `agy-audit export-offline` and `schema`, run as the real binary.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Output;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ide_set() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/schema/antigravity-ide-descriptors.protoset.gz")
}

/// A store with one SQLite conversation (with a -wal) and one legacy source.
fn store_with_sources() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let s = schema();
    let (root, dir) = store();
    let db = dir.join(format!("{CASCADE}.db"));
    write_db(&s, &db, &Conv::basic(&s), |_| {});
    std::fs::write(dir.join(format!("{CASCADE}.db-wal")), b"").unwrap();
    let pb = dir.join("1b6b2f0e-1c1d-4a7e-9a5e-0d6f3f1f2a02.pb");
    let mut legacy = Conv::basic(&s);
    legacy.cascade_id = "1b6b2f0e-1c1d-4a7e-9a5e-0d6f3f1f2a02".into();
    write_pb(&s, &pb, &legacy);
    (root, db, pb)
}

#[test]
fn exports_json_and_markdown_and_never_touches_the_store() {
    let (root, db, pb) = store_with_sources();
    let before = tree(root.path());
    let out_dir = tempfile::tempdir().unwrap();
    let json_out = out_dir.path().join("c.json");
    let o = run(&[
        "export-offline",
        db.to_str().unwrap(),
        "--out",
        json_out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json_out).unwrap()).unwrap();
    assert_eq!(v["cascadeId"], CASCADE);
    assert_eq!(v["trajectoryType"], "CORTEX_TRAJECTORY_TYPE_CASCADE");
    assert_eq!(v["source"], "CORTEX_TRAJECTORY_SOURCE_CLI");
    assert_eq!(
        v["steps"][0]["metadata"]["createdAt"],
        "2026-11-01T10:00:00Z"
    );
    assert_eq!(v["agyReader"]["offline"]["version"], 1);
    assert!(v["agyReader"]["offline"]["profile"]
        .as_str()
        .unwrap()
        .starts_with("sqlite-v1-format0-modeled-"));
    assert!(v["agyReader"].get("completeness").is_none());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&json_out).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    // By id under --root, Markdown to stdout.
    let o = run(&[
        "export-offline",
        "--format",
        "md",
        "--root",
        root.path().to_str().unwrap(),
        CASCADE,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let md = stdout(&o);
    for want in [
        "Offline export, unverified",
        "## 0. User",
        "List the files, please ✓",
        "**Command** `ls x`",
        "**Error:** exit status 2",
        "<details>",
    ] {
        assert!(md.contains(want), "{want:?} missing:\n{md}");
    }
    // The legacy source.
    let o = run(&["export-offline", pb.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["agyReader"]["offline"]["profile"]
        .as_str()
        .unwrap()
        .starts_with("legacy-aes256gcm-v1-"));
    assert_eq!(
        tree(root.path()),
        before,
        "sources byte-identical, no new files beside them"
    );
}

#[test]
fn output_protection() {
    let (root, db, _pb) = store_with_sources();
    let before = tree(root.path());
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("x.json");
    std::fs::write(&out, b"keep").unwrap();
    let o = run(&[
        "export-offline",
        db.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("refusing to overwrite"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"keep");
    let o = run(&[
        "export-offline",
        db.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--force",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for protected in [
        db.clone(),
        PathBuf::from(format!("{}-wal", db.display())),
        PathBuf::from(format!("{}-shm", db.display())),
    ] {
        let o = run(&[
            "export-offline",
            db.to_str().unwrap(),
            "--out",
            protected.to_str().unwrap(),
            "--force",
        ]);
        assert_eq!(o.status.code(), Some(1), "{}", protected.display());
        assert!(stderr(&o).contains("conversation source"), "{}", stderr(&o));
    }
    #[cfg(unix)]
    {
        let link = out_dir.path().join("link.json");
        std::os::unix::fs::symlink(&out, &link).unwrap();
        let o = run(&[
            "export-offline",
            db.to_str().unwrap(),
            "--out",
            link.to_str().unwrap(),
            "--force",
        ]);
        assert_eq!(o.status.code(), Some(1));
        assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
    }
    assert_eq!(tree(root.path()), before);
}

fn unknown_source(dir: &Path) -> PathBuf {
    let s = schema();
    let mut conv = Conv::basic(&s);
    let steps = num(&s, "gemini_coder.Step", "metadata");
    conv.steps[1] = insert_raw(&conv.steps[1], &[(steps, 0)], &unknown_varint(61, 3));
    let db = dir.join(format!("{CASCADE}.db"));
    write_db(&s, &db, &conv, |_| {});
    db
}

#[test]
fn unknown_sources_are_refused_unless_allow_unknown() {
    let (root, dir) = store();
    let db = unknown_source(&dir);
    let before = tree(root.path());
    let o = run(&["export-offline", db.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stdout(&o).is_empty());
    assert!(
        stderr(&o).contains("steps[1].metadata: unknown field 61 (varint) in exa.cortex_pb.CortexStepMetadata: \
             the schema in use does not define it; if your agy build does, audit with its descriptors (--schema FILE); \
             the embedded schema models public descriptors only: `agy-audit schema extract --installed` [unknown-field]"),
        "{}",
        stderr(&o)
    );
    let o = run(&["export-offline", "--allow-unknown", db.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["agyReader"]["offline"]["complete"], false);
    assert_eq!(
        v["agyReader"]["unknownFields"][0]["path"],
        "steps[1].metadata"
    );
    assert_eq!(v["agyReader"]["unknownFields"][0]["bytes"], "e80303");
    assert_eq!(tree(root.path()), before);
}

#[test]
fn bad_input_gets_a_clear_error() {
    let (_root, dir) = store();
    let db = dir.join(format!("{CASCADE}.db"));
    std::fs::write(&db, b"garbage").unwrap();
    let o = run(&["export-offline", db.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(&format!(
            "{}: corrupt: header: not a SQLite 3 database",
            db.display()
        )),
        "{}",
        stderr(&o)
    );
    let o = run(&["export-offline", "no-such-thing"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("neither an existing .db/.pb file nor a conversation id"));
    let o = run(&["export-offline"]);
    assert_eq!(o.status.code(), Some(2));
    let pb = dir.join("1b6b2f0e-1c1d-4a7e-9a5e-0d6f3f1f2a02.pb");
    std::fs::write(&pb, [0u8; 20]).unwrap();
    let o = run(&["export-offline", pb.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("20 bytes"), "{}", stderr(&o));
    let bad_schema = dir.join("not-a-set.pb");
    std::fs::write(&bad_schema, b"\xff\xff\xff").unwrap();
    let o = run(&["schema", "info", "--schema", bad_schema.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("not a valid FileDescriptorSet"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn schema_dump_and_info() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("modeled.pb");
    let o = run(&["schema", "dump", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), agy_audit::schema::MODELED_SET);
    let o = run(&["schema", "info", "--schema", out.to_str().unwrap()]);
    let info = stdout(&o);
    let sha = agy_audit::util::hex(&<sha2::Sha256 as sha2::Digest>::digest(
        agy_audit::schema::MODELED_SET,
    ));
    assert!(info.contains(&format!("sha256: {sha}")), "{info}");
    assert!(info.contains("gemini_coder/proto/trajectory.proto"));
    if ide_set().exists() {
        let o = run(&["schema", "info", "--schema", ide_set().to_str().unwrap()]);
        assert!(
            stdout(&o).contains("files: 29  messages: 1553  enums: 244"),
            "{}",
            stdout(&o)
        );
    }
}

#[test]
fn schema_flag_drives_decoding_with_the_ide_set() {
    if !ide_set().exists() {
        println!("SKIP: IDE descriptor set not found");
        return;
    }
    let s = schema();
    let (_root, dir) = store();
    // A step whose metadata records a CLI-only tool summary (field 30).
    let mut conv = Conv::basic(&s);
    conv.steps[2] = step(
        &s,
        r#"{"type":"CORTEX_STEP_TYPE_RUN_COMMAND","status":"CORTEX_STEP_STATUS_DONE",
        "metadata":{"toolSummary":"list files","toolCall":{"id":"call_1","name":"run_command"}},
        "runCommand":{"commandLine":"ls","cwd":"/work"}}"#,
    );
    let db = dir.join(format!("{CASCADE}.db"));
    write_db(&s, &db, &conv, |_| {});
    let ide = ide_set();
    let modeled = run(&["export-offline", db.to_str().unwrap()]);
    assert_eq!(modeled.status.code(), Some(0), "{}", stderr(&modeled));
    let o = run(&[
        "export-offline",
        "--schema",
        ide.to_str().unwrap(),
        db.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("steps[2].metadata: unknown field 30 (length-delimited)"),
        "{}",
        stderr(&o)
    );
    // A legacy source whose task details carry the CLI-only command line (field 4).
    let mut legacy = Conv::basic(&s);
    legacy.steps[2] = step(
        &s,
        r#"{"type":"CORTEX_STEP_TYPE_RUN_COMMAND","status":"CORTEX_STEP_STATUS_DONE",
        "taskDetails":{"id":"x/task-2","commandLine":"sleep 60"},"runCommand":{"commandLine":"sleep 60"}}"#,
    );
    let pb = dir.join("1b6b2f0e-1c1d-4a7e-9a5e-0d6f3f1f2a02.pb");
    write_pb(&s, &pb, &legacy);
    let o = run(&[
        "export-offline",
        "--schema",
        ide.to_str().unwrap(),
        pb.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("steps[2].taskDetails: unknown field 4 (length-delimited)"),
        "{}",
        stderr(&o)
    );
    // An enum value the IDE set lacks: the CLI trajectory source 17.
    let o = run(&[
        "export-offline",
        "--schema",
        ide.to_str().unwrap(),
        "--allow-unknown",
        pb.to_str().unwrap(),
    ]);
    let err = stderr(&o);
    assert!(err.contains("unknown"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let refusals = v["agyReader"]["offline"]["refusals"].as_array().unwrap();
    assert!(
        refusals
            .iter()
            .any(|r| r["location"] == "source" && r["class"] == "unknown-enum"),
        "{refusals:?}"
    );
}

/// #22.7: `--legacy-key-file` with another key opens a legacy source for
/// inspection only: its verdict is unknown, never verified.
#[test]
fn another_legacy_key_only_permits_inspection() {
    let s = schema();
    let (_root, dir) = store();
    let pb = dir.join("1b6b2f0e-1c1d-4a7e-9a5e-0d6f3f1f2a02.pb");
    let mut conv = Conv::basic(&s);
    conv.cascade_id = "1b6b2f0e-1c1d-4a7e-9a5e-0d6f3f1f2a02".into();
    let key = agy_audit::source::legacy::LegacyKey::from_bytes([7; 32]);
    std::fs::write(
        &pb,
        agy_audit::source::legacy::encrypt(&conv.trajectory_bytes(&s), &key, [3; 12]),
    )
    .unwrap();
    let key_dir = tempfile::tempdir().unwrap();
    let key_file = key_dir.path().join("key.hex");
    std::fs::write(&key_file, format!("{}\n", "07".repeat(32))).unwrap();
    let k = key_file.to_str().unwrap();
    let o = run(&[
        "export-offline",
        "--legacy-key-file",
        k,
        pb.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
    assert!(
        stderr(&o).contains("[legacy-unsupported-key]"),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "export-offline",
        "--allow-unknown",
        "--legacy-key-file",
        k,
        pb.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["agyReader"]["offline"]["complete"], false);
    assert_eq!(v["steps"].as_array().map(Vec::len), Some(3));
}
