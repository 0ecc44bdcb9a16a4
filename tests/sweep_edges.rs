//! The sweep's edges through the real binary (issue 31 items 6 and 9):
//! SIGTERM drains like Ctrl-C (exit 143, a valid manifest holding every
//! finished session), an empty root is not a passing audit (nor is its
//! manifest), an empty shard is legitimate, `audit-qualify` names the store's
//! sources a manifest lacks, and `--resume` removes the temp files a killed
//! run left in its own folders, and nothing else; a large answer becomes its
//! session file exactly, by a rename, leaving no staged file behind.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{
    bin, generate_store, output_text, own_temp_files, read_manifest as manifest,
    run_with_closed_output, start_sim, sweep_command, Sim,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn generate(root: &Path, n: usize) {
    generate_store(
        root,
        &[
            "--conversations",
            &n.to_string(),
            "--seed",
            "3",
            "--scale",
            "0.05",
        ],
    );
}

/// `daemon-sim` on the store, every answer delayed by `latency_ms`.
fn sim(root: &Path, latency_ms: u64) -> Sim {
    let latency = format!("rate=1:latency:{latency_ms}");
    let mut options = vec!["--no-fault-file"];
    if latency_ms > 0 {
        options.extend(["--fault", latency.as_str()]);
    }
    start_sim(root, &options)
}

#[cfg(unix)]
#[test]
fn sigterm_drains_like_ctrl_c_and_exits_143() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    generate(&root, 24);
    let daemon = sim(&root, 300);
    let out = dir.path().join("sweep");
    let child = sweep_command(&root, &out, &daemon.url)
        .args(["--concurrency", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until some sessions are recorded, then terminate.
    let started = Instant::now();
    loop {
        let recorded = std::fs::read(out.join("manifest.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|m| m["sessions"].as_array().map(Vec::len))
            .unwrap_or(0);
        if recorded >= 2 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no session recorded"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("SIGTERM"), "{stderr}");
    assert!(stderr.contains("--resume"), "the hint: {stderr}");
    let m = manifest(&out);
    assert_eq!(m["complete"], false);
    let recorded = m["sessions"].as_array().unwrap().len();
    assert!((2..24).contains(&recorded), "{recorded} sessions recorded");
    // --resume finishes it.
    let o = sweep_command(&root, &out, &daemon.url)
        .arg("--resume")
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(101));
    let m = manifest(&out);
    assert_eq!(m["complete"], true, "{}", output_text(&o));
    assert_eq!(m["sessions"].as_array().unwrap().len(), 24);
}

#[test]
fn an_empty_root_is_not_a_passing_audit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("empty");
    std::fs::create_dir_all(root.join("conversations")).unwrap();
    // A daemon is not even needed: the selection is judged first.
    let out = dir.path().join("sweep");
    let o = sweep_command(&root, &out, "http://127.0.0.1:9")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no conversation to audit"), "{stderr}");
    assert!(stderr.contains("--allow-empty"), "{stderr}");
    assert!(!out.exists(), "--out was not touched");

    // With --allow-empty (and a daemon) it records an empty sweep ...
    let store = dir.path().join("store");
    generate(&store, 1);
    let daemon = sim(&store, 0);
    let o = sweep_command(&root, &out, &daemon.url)
        .args(["--allow-empty"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert_eq!(manifest(&out)["counts"]["selected"], 0);
    // ... which audit-qualify refuses unless told otherwise.
    let mpath = out.join("manifest.json");
    let o = bin().arg("audit-qualify").arg(&mpath).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("selected no conversation"), "{stderr}");
    let o = bin()
        .args(["audit-qualify", "--allow-empty"])
        .arg(&mpath)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
}

#[test]
fn an_empty_shard_is_legitimate_and_qualify_names_absent_sources() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    generate(&root, 2);
    let daemon = sim(&root, 0);
    // Shard 3/3 of two conversations selects nothing: exit 0, said so.
    let out = dir.path().join("shard3");
    let o = sweep_command(&root, &out, &daemon.url)
        .args(["--shard", "3/3"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("shard 3/3 selected no conversation"),
        "{stderr}"
    );
    let m = manifest(&out);
    assert_eq!(m["shard"], "3/3");
    assert_eq!(m["counts"]["selected"], 0);

    // Shard 1/2 holds one of the two: qualifying it alone names nothing
    // absent (the other belongs to shard 2/2); a whole-store manifest with
    // a session removed names it.
    let out = dir.path().join("whole");
    let o = sweep_command(&root, &out, &daemon.url).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let mut m = manifest(&out);
    let dropped = m["sessions"][1]["fileId"].as_str().unwrap().to_string();
    m["sessions"].as_array_mut().unwrap().remove(1);
    let m = common::recounted(m);
    let edited = dir.path().join("edited.json");
    std::fs::write(&edited, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let o = bin().arg("audit-qualify").arg(&edited).output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("absent from the manifest"), "{stdout}");
    assert!(stdout.contains(&dropped), "{stdout}");
    assert!(stdout.contains("absent=1"), "{stdout}");
}

#[test]
fn resume_removes_the_temp_files_a_killed_run_left_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    generate(&root, 2);
    let daemon = sim(&root, 0);
    let out = dir.path().join("sweep");
    let sweep = |extra: &[&str]| {
        sweep_command(&root, &out, &daemon.url)
            .args(extra)
            .output()
            .unwrap()
    };
    assert_eq!(sweep(&[]).status.code(), Some(0));
    // What a kill -9 mid-write leaves, and look-alikes that are not ours.
    let litter: Vec<PathBuf> = vec![
        out.join(".agy-audit-Ab12Cd.tmp"),
        out.join("corpus").join(".agy-audit-zz99ZZ.tmp"),
    ];
    let keep: Vec<PathBuf> = vec![
        out.join("notes.tmp"),
        out.join(".agy-audit-.tmp"),
        out.join("corpus").join(".agy-audit-x y.tmp"),
        root.join(".agy-audit-Ab12Cd.tmp"),
    ];
    for p in litter.iter().chain(&keep) {
        std::fs::write(p, b"x").unwrap();
    }
    let o = sweep(&["--resume"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    for p in &litter {
        assert!(!p.exists(), "{} left", p.display());
    }
    for p in &keep {
        assert!(p.exists(), "{} removed", p.display());
    }
}

/// `demo` with standard output and error both closed (EPIPE on every
/// write) finishes its work: the run is recorded in its files.
#[test]
fn demo_with_closed_stdout_and_stderr_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    let status = run_with_closed_output(
        bin()
            .args(["demo", "--conversations", "6", "--out"])
            .arg(&out),
        120,
        "demo with closed stdout and stderr",
    );
    assert_eq!(status.code(), Some(0));
    let m = manifest(&out.join("sweep"));
    assert_eq!(m["complete"], true);
    assert_eq!(m["counts"]["selected"], 6);
}

/// Issue 49 item 3: a large answer arrives in a staged file of `corpus/`
/// and becomes its session file by a rename on the verdict. Its session
/// file is the answer exactly as the daemon sends it (fetched again here
/// into memory, the client's other way), and a finished sweep leaves no
/// staged file behind, whatever each session's verdict.
#[test]
fn large_answers_become_their_session_files_exactly_and_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    generate_store(
        &root,
        &["--conversations", "12", "--seed", "5", "--scale", "1.0"],
    );
    let daemon = sim(&root, 0);
    let out = dir.path().join("sweep");
    let o = sweep_command(&root, &out, &daemon.url)
        .args(["--concurrency", "4"])
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 3)),
        "{}",
        output_text(&o)
    );
    let m = manifest(&out);
    assert_eq!(m["complete"], true, "{}", output_text(&o));
    assert!(
        own_temp_files(&out).is_empty(),
        "{:?}",
        own_temp_files(&out)
    );
    let client =
        agy_audit::rpc::DaemonClient::new(&daemon.url, agy_audit::rpc::ClientOptions::default())
            .unwrap();
    let mut large = 0;
    for s in m["sessions"].as_array().unwrap() {
        let (id, cascade) = (
            s["fileId"].as_str().unwrap(),
            s["cascadeId"].as_str().unwrap(),
        );
        for (full, name) in [(true, "full"), (false, "ordinary")] {
            let path = out.join("corpus").join(format!("{id}.{name}.json"));
            let Ok(saved) = std::fs::read(&path) else {
                continue;
            };
            if saved.len() >= agy_audit::rpc::HOLD_IN_MEMORY_BELOW {
                large += 1;
            }
            let again = client.get_trajectory(cascade, full).unwrap().into_body();
            assert!(
                saved == again,
                "{} differs from the daemon's answer",
                path.display()
            );
        }
    }
    assert!(
        large > 0,
        "no answer large enough to be staged: the test proves nothing"
    );
}
