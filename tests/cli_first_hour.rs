//! What a new user hit in the first hour, each case run through the real
//! binary: a daemon failure is missing evidence (never `unknown`, never a
//! complete manifest), `--resume` and `audit-qualify` honour that, the start
//! checks leave nothing behind, usage errors exit 2, Ctrl-C does not wait for
//! a hanging daemon, an oversized answer is refused while it streams, and
//! every printing command ends quietly on a closed pipe.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_corpus::corpus::{generate, GenerateOptions, PlanOptions};
use agy_corpus::sim::{DaemonSim, FaultSpec, SimOptions};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::bin;

/// A small generated store (no planned faults).
fn small_store(dir: &Path, n: usize) -> PathBuf {
    common::small_store(dir, n, 7, 0.1, 0.1)
}

fn sim(store: &Path, faults: &[&str]) -> DaemonSim {
    let mut o = SimOptions::new(store);
    o.write_cli_log = false;
    o.load_fault_file = false;
    o.hang_limit = Duration::from_secs(120);
    o.faults = faults
        .iter()
        .map(|f| FaultSpec::parse(f).unwrap())
        .collect();
    DaemonSim::start(o).unwrap()
}

fn ids(store: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_to_string(store.join(".truth/expected.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["fileId"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    v.sort();
    v
}

fn manifest(out: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap()
}

fn sweep(store: &Path, out: &Path, url: &str, extra: &[&str]) -> std::process::Output {
    bin()
        .args(["audit-sweep", "--quiet", "--root"])
        .arg(store)
        .arg("--out")
        .arg(out)
        .args(["--daemon-url", url])
        .args(extra)
        .output()
        .unwrap()
}

/// Everything a piped child wrote to its standard error (until it closed it).
fn stderr_of(child: &mut std::process::Child) -> String {
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut err).unwrap();
    }
    err
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Item 3: HTTP 5xx, a reset, non-JSON and an oversized answer are recorded
/// as not fetched; the manifest is not complete, the exit is 1, audit-qualify
/// refuses it, and --resume (against a restarted daemon on another port)
/// fetches exactly those sessions and completes the manifest.
#[test]
fn daemon_failures_are_not_fetched_and_resume_retries_them() {
    let d = tempfile::tempdir().unwrap();
    let store = small_store(d.path(), 8);
    let ids = ids(&store);
    // A limit above every real answer of this store (its daemon views, plus
    // room for the response envelope), and an oversized answer twice that.
    let largest = std::fs::read_dir(store.join(".truth/daemon"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .max()
        .unwrap();
    let limit = (largest + 65_536).max(100_000);
    let faults = [
        format!("{}:http-500", ids[0]),
        format!("{}:reset", ids[1]),
        format!("{}:invalid-json", ids[2]),
        format!("{}:oversized-body:{}", ids[3], 2 * limit),
    ];
    let fault_refs: Vec<&str> = faults.iter().map(String::as_str).collect();
    let faulty = sim(&store, &fault_refs);
    let out = d.path().join("sweep");
    let limit_arg = limit.to_string();
    let o = sweep(
        &store,
        &out,
        &faulty.url(),
        &["--max-response-bytes", &limit_arg, "--retries", "0"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("--resume"), "{}", text(&o));
    let m = manifest(&out);
    assert_eq!(m["complete"], false);
    assert_eq!(m["counts"]["notFetched"], 4, "{m:#}");
    for s in m["sessions"].as_array().unwrap() {
        let faulted = ids[..4].iter().any(|id| s["fileId"] == id.as_str());
        if faulted {
            assert!(
                s["verdict"].is_null(),
                "a daemon failure is never a verdict: {s}"
            );
            assert_eq!(s["reasonClass"], "daemon-unavailable", "{s}");
        } else {
            assert_ne!(s["reasonClass"], "daemon-unavailable", "{s}");
        }
    }
    let csv = std::fs::read_to_string(out.join("sessions.csv")).unwrap();
    assert_eq!(csv.matches(",not-fetched,").count(), 4, "{csv}");

    let q = bin()
        .arg("audit-qualify")
        .arg(out.join("manifest.json"))
        .output()
        .unwrap();
    assert_eq!(q.status.code(), Some(1), "{}", text(&q));
    assert!(text(&q).contains("not complete"), "{}", text(&q));
    faulty.stop();

    let healthy = sim(&store, &[]);
    let o = sweep(&store, &out, &healthy.url(), &["--resume"]);
    let m = manifest(&out);
    assert_eq!(m["complete"], true, "{}", text(&o));
    assert_eq!(m["counts"]["notFetched"], 0);
    assert_eq!(m["counts"]["selected"], 8);
    // each session names the daemon it was fetched from
    let endpoints: std::collections::BTreeSet<&str> = m["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["endpoint"].as_str().unwrap())
        .collect();
    assert_eq!(endpoints.len(), 2, "{endpoints:?}");
    let q = bin()
        .arg("audit-qualify")
        .arg(out.join("manifest.json"))
        .output()
        .unwrap();
    assert_eq!(
        q.status.code().map(|c| c != 1 && c != 101),
        Some(true),
        "{}",
        text(&q)
    );
    healthy.stop();
}

/// Items 3 and 4: a closed port and a malformed URL are reported once, up
/// front, and leave no --out folder behind; so does a store root without
/// conversations/.
#[test]
fn an_unusable_daemon_or_root_fails_before_any_work() {
    let d = tempfile::tempdir().unwrap();
    let store = small_store(d.path(), 3);
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let out = d.path().join("sweep");
    let o = sweep(&store, &out, &format!("http://127.0.0.1:{port}"), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(text(&o).matches("unreachable").count(), 1, "{}", text(&o));
    assert!(!out.exists(), "a failed start leaves no --out folder");

    for bad in [
        "not a url",
        "ftp://127.0.0.1:1",
        "http://127.0.0.1:1/path?q",
    ] {
        let o = sweep(&store, &out, bad, &[]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
        assert!(text(&o).contains("--daemon-url"), "{}", text(&o));
        assert!(!out.exists());
    }

    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let healthy = sim(&store, &[]);
    let o = sweep(&empty, &out, &healthy.url(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("no conversations/ folder"),
        "{}",
        text(&o)
    );
    assert!(!out.exists(), "a failed start leaves no --out folder");
    // the same --out now starts cleanly
    let o = sweep(&store, &out, &healthy.url(), &[]);
    assert!(out.join("manifest.json").is_file(), "{}", text(&o));
    let m = manifest(&out);
    assert!(Path::new(m["root"].as_str().unwrap()).is_absolute());
    healthy.stop();
}

/// Item 4: --resume refuses another store root, and a folder that is no sweep.
#[test]
fn resume_refuses_another_root_and_a_folder_that_is_not_a_sweep() {
    let d = tempfile::tempdir().unwrap();
    let store = small_store(d.path(), 3);
    let other = d.path().join("other");
    generate(&GenerateOptions {
        out: other.clone(),
        plan: PlanOptions {
            conversations: 2,
            seed: 9,
            scale: 0.1,
            ..PlanOptions::default()
        },
        force: false,
    })
    .unwrap();
    let healthy = sim(&store, &[]);
    let out = d.path().join("sweep");
    sweep(&store, &out, &healthy.url(), &[]);
    let before = std::fs::read(out.join("manifest.json")).unwrap();
    let o = sweep(&other, &out, &healthy.url(), &["--resume"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("another store root"), "{}", text(&o));
    assert_eq!(std::fs::read(out.join("manifest.json")).unwrap(), before);
    let o = sweep(
        &store,
        &out,
        &healthy.url(),
        &["--resume", "--shard", "1/2"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = sweep(&store, &store, &healthy.url(), &["--resume"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("not an audit-sweep output"),
        "{}",
        text(&o)
    );
    healthy.stop();
}

/// Items 5 and 6: bounds and usage errors exit 2 and name the flag.
#[test]
fn bad_flags_are_usage_errors_naming_the_flag() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("o");
    let cases: &[&[&str]] = &[
        &["audit-sweep", "--out", "o", "--concurrency", "0"],
        &["audit-sweep", "--out", "o", "--concurrency", "257"],
        &["audit-sweep", "--out", "o", "--jobs", "0"],
        &["audit-sweep", "--out", "o", "--jobs", "100000"],
        &["audit-sweep", "--out", "o", "--shard", "a/b"],
        &["audit-sweep", "--out", "o", "--shard", "3/2"],
        &["audit-sweep", "--out", "o", "--max-response-bytes", "0"],
        &["audit-sweep", "--out", "o", "--timeout", "0"],
        &["demo", "--concurrency", "0"],
        &["demo", "--conversations", "0"],
        &["daemon-sim", "--store", "s", "--fault", "x:no-such-kind"],
    ];
    for args in cases {
        let o = bin().current_dir(d.path()).args(*args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let flag = args.iter().rev().find(|a| a.starts_with("--")).unwrap();
        assert!(
            text(&o).contains(flag),
            "{args:?} should name {flag}: {}",
            text(&o)
        );
    }
    let o = bin()
        .args(["corpus", "generate", "--conversations", "0", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--conversations"), "{}", text(&o));
}

/// A daemon that accepts connections and never answers.
fn hanging_daemon() -> (u16, std::thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let h = std::thread::spawn(move || {
        let mut held = Vec::new();
        l.set_nonblocking(true).unwrap();
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until {
            match l.accept() {
                Ok((s, _)) => held.push(s),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
            if held.len() > 64 {
                break;
            }
        }
    });
    (port, h)
}

/// Item 3: Ctrl-C while the daemon hangs ends the sweep at once (not after
/// the 60 s timeout), with exit 130, a resume hint and a resumable manifest
/// that records no session it never fetched.
#[cfg(unix)]
#[test]
fn ctrl_c_while_the_daemon_hangs_does_not_wait_for_the_timeout() {
    let d = tempfile::tempdir().unwrap();
    let store = small_store(d.path(), 4);
    let (port, _h) = hanging_daemon();
    let out = d.path().join("sweep");
    let mut child = bin()
        .args(["audit-sweep", "--quiet", "--timeout", "60", "--root"])
        .arg(&store)
        .arg("--out")
        .arg(&out)
        .args(["--daemon-url", &format!("http://127.0.0.1:{port}")])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !out.join("manifest.json").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let sent = Instant::now();
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if sent.elapsed() > Duration::from_secs(15) {
            let _ = child.kill();
            panic!("the sweep waited for the hanging daemon after Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = stderr_of(&mut child);
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted: draining"), "{err}");
    assert!(err.contains("--resume"), "{err}");
    let m = manifest(&out);
    assert_eq!(m["complete"], false);
    assert!(
        m["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["reasonClass"] != "daemon-unavailable"),
        "abandoned fetches are not recorded: {m:#}"
    );
}

/// Item 5: a body larger than --max-response-bytes is refused while it
/// streams (the daemon sends far more than the limit, chunked, without a
/// length), recorded as not fetched.
#[test]
fn an_oversized_streamed_answer_is_refused_at_the_limit() {
    let d = tempfile::tempdir().unwrap();
    let store = small_store(d.path(), 1);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = sent.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { break };
            let counter = counter.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
                if s.write_all(head).is_err() {
                    return;
                }
                let chunk = vec![b' '; 64 << 10];
                for _ in 0..(64 * 16) {
                    let frame = format!("{:x}\r\n", chunk.len());
                    if s.write_all(frame.as_bytes()).is_err()
                        || s.write_all(&chunk).is_err()
                        || s.write_all(b"\r\n").is_err()
                    {
                        return;
                    }
                    counter.fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::SeqCst);
                }
                let _ = s.write_all(b"0\r\n\r\n");
            });
        }
    });
    let out = d.path().join("sweep");
    let o = sweep(
        &store,
        &out,
        &format!("http://127.0.0.1:{port}"),
        &["--max-response-bytes", "100000", "--retries", "0"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let m = manifest(&out);
    assert_eq!(m["counts"]["notFetched"], 1, "{m:#}");
    let reason = m["sessions"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("larger than 100000 bytes"), "{reason}");
}

/// Item 2: every printing command ends quietly when its reader has gone.
#[cfg(unix)]
#[test]
fn every_printing_command_ends_quietly_on_a_closed_pipe() {
    let d = tempfile::tempdir().unwrap();
    let store = small_store(d.path(), 3);
    let ids = ids(&store);
    let healthy = sim(&store, &[]);
    let out = d.path().join("sweep");
    sweep(&store, &out, &healthy.url(), &[]);
    healthy.stop();
    let manifest = out.join("manifest.json");
    let source = store.join("conversations").join(format!("{}.db", ids[0]));
    let source = if source.exists() {
        source
    } else {
        store.join("conversations").join(format!("{}.pb", ids[0]))
    };
    let m = manifest.to_str().unwrap();
    let s = source.to_str().unwrap();
    let gen_out = d.path().join("gen");
    let g = gen_out.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["rules"],
        vec!["rules", "--markdown"],
        vec!["schema", "info"],
        vec!["schema", "dump"],
        vec!["audit-qualify", m],
        vec!["report", m],
        vec!["export-offline", s],
        vec!["export-offline", "--format", "md", s],
        vec![
            "corpus",
            "generate",
            "--conversations",
            "2",
            "--scale",
            "0.1",
            "--out",
            g,
        ],
        vec!["--help"],
    ];
    for args in cases {
        for _ in 0..3 {
            let mut child = bin()
                .args(&args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            // The reader goes away before the command prints.
            drop(child.stdout.take());
            let err = stderr_of(&mut child);
            let status = child.wait().unwrap();
            assert_ne!(status.code(), Some(101), "{args:?}: {err}");
            assert!(!err.contains("panicked"), "{args:?}: {err}");
            assert!(!err.contains("Broken pipe"), "{args:?}: {err}");
            let _ = std::fs::remove_dir_all(&gen_out);
        }
    }
}

/// Item 9: an export whose `-wal` was cut short says how many frames were
/// ignored; a `-wal` whose checksums prove damage is refused, naming it.
#[test]
fn a_cut_or_damaged_wal_is_never_a_silent_gap() {
    let d = tempfile::tempdir().unwrap();
    let store = small_store(d.path(), 12);
    let wal = std::fs::read_dir(store.join("conversations"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".db-wal"))
        .expect("the corpus has a -wal");
    let db = PathBuf::from(wal.to_string_lossy().trim_end_matches("-wal").to_string());
    let good = std::fs::read(&wal).unwrap();
    let page = u32::from_be_bytes([good[8], good[9], good[10], good[11]]) as usize;
    let frames = (good.len() - 32) / (24 + page);
    assert!(frames >= 2, "a log with several frames");

    std::fs::write(&wal, &good[..good.len() - 100]).unwrap();
    let o = bin().arg("export-offline").arg(&db).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("ignored") && err.contains("torn"), "{err}");

    let mut flipped = good.clone();
    flipped[32 + 24 + 40] ^= 0x10;
    std::fs::write(&wal, &flipped).unwrap();
    let o = bin().arg("export-offline").arg(&db).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("-wal") && err.contains("damaged"), "{err}");
    std::fs::write(&wal, &good).unwrap();
}

/// Item 9: files in conversations/ that are not conversations are listed.
#[test]
fn files_that_are_not_conversations_are_listed_as_skipped() {
    let d = tempfile::tempdir().unwrap();
    let store = small_store(d.path(), 2);
    std::fs::write(store.join("conversations/notes.txt"), b"x").unwrap();
    std::fs::write(store.join("conversations/backup.db"), b"x").unwrap();
    let healthy = sim(&store, &[]);
    let out = d.path().join("sweep");
    let o = bin()
        .args(["audit-sweep", "--root"])
        .arg(&store)
        .arg("--out")
        .arg(&out)
        .args(["--daemon-url", &healthy.url()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("skipped") && err.contains("notes.txt") && err.contains("backup.db"),
        "{err}"
    );
    let m = manifest(&out);
    assert_eq!(m["skipped"].as_array().unwrap().len(), 2, "{m:#}");
    healthy.stop();
}

/// Items 6 and 7: a damaged legacy source says it may be damaged (not just
/// "another key"); errors name the command and say each thing once.
#[test]
fn damaged_sources_and_missing_paths_read_clearly() {
    let d = tempfile::tempdir().unwrap();
    let store = small_store(d.path(), 12);
    let pb = std::fs::read_dir(store.join("conversations"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "pb"))
        .expect("the corpus has a legacy source");
    let mut bytes = std::fs::read(&pb).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    let damaged = d.path().join("copy").join(pb.file_name().unwrap());
    std::fs::create_dir_all(damaged.parent().unwrap()).unwrap();
    std::fs::write(&damaged, &bytes).unwrap();
    let o = bin().arg("export-offline").arg(&damaged).output().unwrap();
    assert!(text(&o).contains("damaged"), "{}", text(&o));
    std::fs::write(&damaged, &bytes[..bytes.len() - 9]).unwrap();
    let o = bin().arg("export-offline").arg(&damaged).output().unwrap();
    assert!(text(&o).contains("damaged"), "{}", text(&o));

    let o = bin()
        .args(["audit-sweep", "--root", "/nonexistent/store", "--out"])
        .arg(d.path().join("o"))
        .args(["--daemon-url", "http://127.0.0.1:9"])
        .output()
        .unwrap();
    let t = text(&o);
    assert!(t.starts_with("agy-audit audit-sweep: "), "{t}");
    assert_eq!(t.matches("No such file or directory").count(), 1, "{t}");
    assert!(!t.contains("os error"), "{t}");
    let o = bin()
        .args(["report", "/nonexistent/manifest.json"])
        .output()
        .unwrap();
    assert!(
        text(&o).starts_with("agy-audit report: error: "),
        "{}",
        text(&o)
    );
    let o = bin()
        .arg("export-offline")
        .arg("--out")
        .arg(d.path().join("no/such/folder/x.json"))
        .arg(&pb)
        .output()
        .unwrap();
    assert!(text(&o).contains("does not exist"), "{}", text(&o));
    assert!(!text(&o).contains("not a regular file"), "{}", text(&o));
}
