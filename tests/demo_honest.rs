//! Issue 31 items 6 and 9 (demo), through the real binary: a demo whose
//! sessions were not all fetched says so and how to fetch them; its exit
//! codes are in its help; an interrupted demo reports what it generated and
//! keeps its folder; a passing demo without --out removes the temporary
//! folder it created (unless --keep), and a failing one keeps it and says
//! where.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{bin, output_text as text};

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The entries of `dir`.
fn entries(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

#[test]
fn the_help_lists_every_exit_code_and_the_keep_flag() {
    let o = bin().args(["demo", "--help"]).output().unwrap();
    let t = text(&o);
    for want in [
        "  0 ", "  1 ", "  2 ", "  4 ", "130", "143", "SIGTERM", "--keep",
    ] {
        assert!(t.contains(want), "demo --help should mention {want:?}: {t}");
    }
}

/// Sessions the faulty daemon failed are not fetched: the demo says how many,
/// that the manifest is complete: false, and how to fetch them, and keeps
/// its folder.
#[test]
fn a_demo_with_faults_says_why_it_exits_1() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("demo");
    let o = bin()
        .args([
            "demo",
            "--quiet",
            "--fault-rate",
            "0.4",
            "--conversations",
            "20",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("not fetched"), "{t}");
    assert!(t.contains("complete: false"), "{t}");
    assert!(t.contains("audit-sweep --resume"), "{t}");
    assert!(t.contains("daemon-sim"), "{t}");
    let sweep = out.join("sweep").display().to_string();
    let store = out.join("store").display().to_string();
    assert!(t.contains(&format!("--out {sweep}")), "{t}");
    assert!(t.contains(&format!("--root {store}")), "{t}");
    assert!(out.join("sweep/manifest.json").is_file());
}

/// Without --out, a passing demo removes the folder it created under the
/// temporary directory, and says so; with --keep it keeps it and says where;
/// a failing demo keeps it and says where.
#[test]
fn a_demo_without_out_cleans_up_after_itself_unless_told_or_failing() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        bin()
            .env("TMPDIR", tmp.path())
            .args(["demo", "--quiet"])
            .args(extra)
            .output()
            .unwrap()
    };
    let o = run(&["--conversations", "3"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("removed"), "{t}");
    assert!(t.contains("--keep"), "{t}");
    assert_eq!(entries(tmp.path()), Vec::<std::path::PathBuf>::new(), "{t}");

    let o = run(&["--keep", "--conversations", "3"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let kept = entries(tmp.path());
    assert_eq!(kept.len(), 1, "{t}");
    assert!(t.contains(&kept[0].display().to_string()), "{t}");
    assert!(kept[0].join("report.md").is_file());
    std::fs::remove_dir_all(&kept[0]).unwrap();

    // every conversation gets a planned fault, HTTP 5xx among them (the
    // sixth kind): those sessions are not fetched, so the run fails
    let o = run(&["--fault-rate", "1", "--conversations", "8"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let kept = entries(tmp.path());
    assert_eq!(kept.len(), 1, "a failing run keeps its evidence: {t}");
    assert!(t.contains(&kept[0].display().to_string()), "{t}");
    assert!(kept[0].join("sweep/manifest.json").is_file());
}

/// A demo given --out keeps it (the user named it).
#[test]
fn a_demo_with_out_keeps_it() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("mine");
    let o = bin()
        .args(["demo", "--quiet", "--conversations", "2", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(out.join("report.md").is_file(), "{t}");
    assert!(!t.contains("removed"), "{t}");
}

fn signal(pid: u32, sig: &str) {
    let s = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
    assert!(s.success());
}

/// Waits until `cond` holds (at most a minute).
fn wait_for(mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < until, "timed out");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGTERM while the corpus is being generated: exit 143, the demo says the
/// generation was interrupted and where it kept the partial store.
#[test]
fn sigterm_during_generation_is_reported_and_keeps_the_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = bin()
        .env("TMPDIR", tmp.path())
        .args(["demo", "--quiet"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // the store's conversations/ folder exists once generation has begun
    wait_for(|| {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .filter_map(Result::ok)
            .any(|e| e.path().join("store/conversations").is_dir())
    });
    signal(child.id(), "-TERM");
    let mut out = String::new();
    let mut err = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    let t = format!("{out}{err}");
    assert_eq!(status.code(), Some(143), "{t}");
    assert!(t.contains("interrupted"), "{t}");
    assert!(t.contains("generat"), "{t}");
    let kept: Vec<_> = entries(tmp.path())
        .into_iter()
        .filter(|p| p.join("store").is_dir())
        .collect();
    assert_eq!(kept.len(), 1, "{t}");
    assert!(t.contains(&kept[0].display().to_string()), "{t}");
}

/// Ctrl-C (SIGINT) during the sweep: exit 130, and the store line reports
/// every generated conversation, not only the sessions recorded so far.
#[test]
fn ctrl_c_during_the_sweep_reports_the_whole_store() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("demo");
    let mut child = bin()
        .args([
            "demo",
            "--quiet",
            "--conversations",
            "24",
            "--concurrency",
            "1",
        ])
        .args(["--latency-ms", "300", "--out"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // the simulated daemon announces itself in cli.log once the sweep starts
    wait_for(|| {
        std::fs::read_to_string(out.join("store/cli.log")).is_ok_and(|l| l.contains("for HTTP\n"))
    });
    std::thread::sleep(Duration::from_millis(700));
    signal(child.id(), "-INT");
    let mut o = String::new();
    let mut e = String::new();
    child.stdout.take().unwrap().read_to_string(&mut o).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut e).unwrap();
    let status = child.wait().unwrap();
    let t = format!("{o}{e}");
    assert_eq!(status.code(), Some(130), "{t}");
    assert!(t.contains("interrupted"), "{t}");
    let store_line = t
        .lines()
        .find(|l| l.starts_with("demo:   store "))
        .unwrap_or_else(|| panic!("no store line: {t}"));
    assert!(store_line.contains("24 conversations"), "{store_line}\n{t}");
    assert!(t.contains(&out.display().to_string()), "{t}");
}
