//! Issue 31 item 8, through the real binary: every numeric flag is checked
//! (negative, not a number, nan, inf, out of range) and refused as a usage
//! error (exit 2) that names the flag, before anything is written; a
//! `--fault` naming no conversation of the store is refused; a missing store
//! root and a root without `conversations/` exit alike; `HOME` unset is named;
//! messages say a path once, never a raw `(os error N)`, and count in
//! correct plurals.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{bin, output_text as text};

use std::path::{Path, PathBuf};

/// A small generated store.
fn small_store(dir: &Path, n: usize) -> PathBuf {
    common::small_store(dir, n, 3, 0.0, 0.05)
}

const UUID: &str = "0b6b2f0e-1c1d-4a7e-9a5e-0d6f3f1f2a01";

/// Runs `args` in `dir` and checks the usage error: exit 2, the flag named,
/// `want` said, no clap "unexpected argument" for a negative number, and
/// nothing written.
fn refused(dir: &Path, args: &[&str], flag: &str, want: &str) {
    let o = bin().current_dir(dir).args(args).output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
    assert!(t.contains(flag), "{args:?} should name {flag}: {t}");
    assert!(t.contains(want), "{args:?} should say {want:?}: {t}");
    assert!(!t.contains("unexpected argument"), "{args:?}: {t}");
    assert!(!t.contains("panicked"), "{args:?}: {t}");
    assert!(!dir.join("out").exists(), "{args:?} wrote its --out");
}

/// Rates, scales and counts out of range, nan, inf and negative values.
#[test]
fn hostile_numbers_are_usage_errors_naming_the_flag() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let gen = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["corpus", "generate", "--out", "out"];
        v.extend_from_slice(extra);
        v
    };
    let demo = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["demo", "--out", "out"];
        v.extend_from_slice(extra);
        v
    };
    for (rate, want) in [
        ("2", "between 0 and 1"),
        ("1.0001", "between 0 and 1"),
        ("inf", "finite"),
        ("-inf", "finite"),
        ("nan", "finite"),
        ("-0.5", "non-negative"),
        ("lots", "not a number"),
    ] {
        refused(dir, &demo(&["--fault-rate", rate]), "--fault-rate", want);
        refused(dir, &gen(&["--fault-rate", rate]), "--fault-rate", want);
    }
    for (rate, want) in [
        ("1.5", "between 0 and 0.5"),
        ("0.51", "between 0 and 0.5"),
        ("nan", "finite"),
        ("inf", "finite"),
        ("-0.1", "non-negative"),
    ] {
        refused(
            dir,
            &gen(&["--near-miss-rate", rate]),
            "--near-miss-rate",
            want,
        );
    }
    for (scale, want) in [
        ("-1", "greater than 0"),
        ("0", "greater than 0"),
        ("4.5", "at most 4"),
        ("nan", "finite"),
        ("inf", "finite"),
    ] {
        refused(dir, &gen(&["--scale", scale]), "--scale", want);
    }
    let negative: &[(&[&str], &str)] = &[
        (&gen(&["--seed", "-1"]), "--seed"),
        (&gen(&["--conversations", "-3"]), "--conversations"),
        (&demo(&["--seed", "-1"]), "--seed"),
        (&demo(&["--latency-ms", "-5"]), "--latency-ms"),
        (&demo(&["--concurrency", "-2"]), "--concurrency"),
        (&demo(&["--conversations", "-1"]), "--conversations"),
        (&["daemon-sim", "--store", "out", "--port", "-1"], "--port"),
        (&["daemon-sim", "--store", "out", "--seed", "-1"], "--seed"),
        (
            &["daemon-sim", "--store", "out", "--duration", "-1"],
            "--duration",
        ),
        (&["bench", "--latency-ms", "-5"], "--latency-ms"),
        (&["bench", "--concurrency", "-1"], "--concurrency"),
        (&["bench", "--passes", "-1"], "--passes"),
        (&["sync", "--timeout", "-5", UUID], "--timeout"),
        (&["sync", "--retries", "-1", UUID], "--retries"),
        (
            &["sync", "--max-response-bytes", "-1", UUID],
            "--max-response-bytes",
        ),
        (
            &["sync", "--bracket-retries", "-1", UUID],
            "--bracket-retries",
        ),
    ];
    for (args, flag) in negative {
        refused(dir, args, flag, "non-negative");
    }
    let too_big: &[(&[&str], &str, &str)] = &[
        (
            &demo(&["--latency-ms", "99999999999"]),
            "--latency-ms",
            "at most",
        ),
        (
            &["bench", "--latency-ms", "100000"],
            "--latency-ms",
            "at most",
        ),
        (
            &["bench", "--concurrency", "0"],
            "--concurrency",
            "between 1 and 256",
        ),
        (
            &["bench", "--concurrency", "257"],
            "--concurrency",
            "between 1 and 256",
        ),
        (&demo(&["--seed", "1.5"]), "--seed", "not a whole number"),
        (
            &["daemon-sim", "--store", "out", "--port", "70000"],
            "--port",
            "at most 65535",
        ),
    ];
    for (args, flag, want) in too_big {
        refused(dir, args, flag, want);
    }
}

/// The help promises that at least half of the corpus stays clean: the
/// near-miss rate's range says so, and its upper end generates.
#[test]
fn the_near_miss_rate_range_is_the_one_the_help_promises() {
    let o = bin()
        .args(["corpus", "generate", "--help"])
        .output()
        .unwrap();
    let t = text(&o);
    assert!(t.contains("0 to 0.5"), "{t}");
    assert!(t.contains("0 to 1"), "{t}");
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("half");
    let o = bin()
        .args([
            "corpus",
            "generate",
            "--conversations",
            "8",
            "--scale",
            "0.05",
        ])
        .args(["--near-miss-rate", "0.5", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let truth = std::fs::read_to_string(out.join(".truth/expected.jsonl")).unwrap();
    let clean = truth
        .lines()
        .filter(|l| l.contains("\"reasonClass\":null"))
        .count();
    assert!(clean >= 4, "at least half stays clean: {truth}");
}

/// `--fault ID:KIND` naming no conversation of the store is a usage error
/// naming the flag and the id; a real id serves.
#[test]
fn a_fault_naming_no_conversation_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let store = small_store(d.path(), 2);
    let o = bin()
        .args(["daemon-sim", "--duration", "0", "--store"])
        .arg(&store)
        .args(["--fault", &format!("{UUID}:http-500")])
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("--fault") && t.contains(UUID), "{t}");
    let o = bin()
        .args(["daemon-sim", "--duration", "0", "--store"])
        .arg(&store)
        .args(["--fault", "../../etc/passwd:hang"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let truth = std::fs::read_to_string(store.join(".truth/expected.jsonl")).unwrap();
    let v: serde_json::Value = serde_json::from_str(truth.lines().next().unwrap()).unwrap();
    let id = v["fileId"].as_str().unwrap();
    let o = bin()
        .args(["daemon-sim", "--duration", "0", "--store"])
        .arg(&store)
        .args(["--fault", &format!("{id}:http-500")])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("1 fault,"), "{}", text(&o));
}

/// A missing store root and a root without conversations/ are both usage
/// errors (exit 2), each saying which it is.
#[test]
fn a_missing_root_and_a_root_without_conversations_exit_alike() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("no-such-root");
    let empty = d.path().join("empty-root");
    std::fs::create_dir(&empty).unwrap();
    for (root, want) in [
        (&missing, "No such file or directory"),
        (&empty, "no conversations/ folder"),
    ] {
        let runs: Vec<Vec<std::ffi::OsString>> = vec![
            vec![
                "audit-sweep".into(),
                "--out".into(),
                d.path().join("out").into(),
                "--daemon-url".into(),
                "http://127.0.0.1:1".into(),
                "--root".into(),
                root.into(),
            ],
            vec![
                "export-offline".into(),
                "--root".into(),
                root.into(),
                UUID.into(),
            ],
            vec![
                "bench".into(),
                "--no-peer".into(),
                "--no-rss".into(),
                "--no-sweep".into(),
                "--corpus".into(),
                root.into(),
            ],
        ];
        for args in runs {
            let o = bin().args(&args).output().unwrap();
            let t = text(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
            assert!(t.contains(want), "{args:?} should say {want:?}: {t}");
            assert!(!t.contains("os error"), "{args:?}: {t}");
            assert!(!d.path().join("out").exists());
        }
    }
}

/// `daemon-sim --store` naming no folder, or a folder that is no generated
/// store, is a usage error naming the flag; so is an empty --csrf-token.
#[test]
fn daemon_sim_refuses_a_store_it_cannot_serve() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("no-such-store");
    let empty = d.path().join("empty-store");
    std::fs::create_dir(&empty).unwrap();
    for (store, want) in [
        (&missing, "No such file or directory"),
        (&empty, "not a generated store"),
    ] {
        let o = bin()
            .args(["daemon-sim", "--duration", "0", "--store"])
            .arg(store)
            .output()
            .unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{t}");
        assert!(t.contains("--store") && t.contains(want), "{t}");
    }
    let o = bin()
        .args([
            "daemon-sim",
            "--duration",
            "0",
            "--csrf-token",
            "",
            "--store",
        ])
        .arg(&empty)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("--csrf-token"), "{t}");
}

/// With neither --root, ANTIGRAVITY_CLI_ROOT nor HOME there is no default
/// store root: the error names HOME instead of a relative `.gemini/` path.
#[test]
fn home_unset_is_named() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    let runs: Vec<Vec<std::ffi::OsString>> = vec![
        vec!["export-offline".into(), UUID.into()],
        vec!["sync".into(), UUID.into()],
        vec![
            "audit-sweep".into(),
            "--out".into(),
            out.clone().into(),
            "--daemon-url".into(),
            "http://127.0.0.1:1".into(),
        ],
    ];
    for args in runs {
        let o = bin()
            .current_dir(d.path())
            .env_remove("HOME")
            .args(&args)
            .output()
            .unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        assert!(t.contains("HOME"), "{args:?}: {t}");
        assert!(t.contains("--root"), "{args:?}: {t}");
        assert!(!t.contains(".gemini/antigravity-cli/conversations"), "{t}");
        assert!(!out.exists());
    }
}

/// An error names each path once and drops the `(os error N)` number.
#[test]
fn errors_say_each_path_once() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let under_file = file.join("sub");
    let missing = d.path().join("missing-store");
    let cases: Vec<(Vec<std::ffi::OsString>, &Path)> = vec![
        (
            vec![
                "corpus".into(),
                "generate".into(),
                "--out".into(),
                file.clone().into(),
            ],
            &file,
        ),
        (
            vec![
                "corpus".into(),
                "generate".into(),
                "--out".into(),
                under_file.clone().into(),
            ],
            &under_file,
        ),
        (
            vec![
                "daemon-sim".into(),
                "--duration".into(),
                "0".into(),
                "--store".into(),
                missing.clone().into(),
            ],
            &missing,
        ),
        (
            vec![
                "demo".into(),
                "--conversations".into(),
                "1".into(),
                "--out".into(),
                under_file.clone().into(),
            ],
            &under_file,
        ),
    ];
    for (args, path) in cases {
        let o = bin().args(&args).output().unwrap();
        let t = text(&o);
        assert_ne!(o.status.code(), Some(0), "{args:?}: {t}");
        let p = path.display().to_string();
        assert_eq!(t.matches(&p).count(), 1, "{args:?} names {p} once: {t}");
        assert!(!t.contains("os error"), "{args:?}: {t}");
    }
}

/// Counts read in correct plurals.
#[test]
fn counts_read_in_correct_plurals() {
    let d = tempfile::tempdir().unwrap();
    let store = small_store(d.path(), 1);
    let o = bin()
        .args([
            "bench",
            "--no-peer",
            "--no-rss",
            "--no-sweep",
            "--passes",
            "1",
        ])
        .arg("--corpus")
        .arg(&store)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("1 source:"), "{t}");
    assert!(!t.contains("1 passes") && !t.contains("1 sources"), "{t}");
}
