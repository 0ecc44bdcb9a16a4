//! Sweeps killed at random moments, then resumed.
//!
//! Each sweep runs against the simulated daemon with latency, is killed with
//! SIGKILL (or sent SIGINT twice, the abort a second Ctrl-C gives) at a
//! pseudo-random moment, then resumed with `--resume` until it completes.
//! After every kill the manifest (when one was written) still parses; the
//! resumed result equals an uninterrupted sweep of the same store session by
//! session; no temporary file is left behind. The CI version kills 4 sweeps
//! and interrupts 2; `-- --ignored` runs 20 and 5.

#![cfg(unix)]
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

mod common;

use common::*;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// The sessions of a manifest without what differs between runs (the
/// daemon's URL).
fn sessions(out: &Path) -> Vec<serde_json::Value> {
    let m = read_manifest(out);
    let mut s = m["sessions"].as_array().cloned().unwrap_or_default();
    for x in s.iter_mut() {
        if let Some(o) = x.as_object_mut() {
            o.remove("endpoint");
        }
    }
    s
}

fn signal(pid: u32, sig: &str) {
    let _ = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status();
}

fn campaign(kills: usize, interrupts: usize) {
    let dir = tempfile::tempdir().unwrap();
    let root = small_store(dir.path(), 16, 11, 0.0, 0.2);
    let daemon = start_sim(&root, &["--fault", "rate=1:latency:40"]);
    let clean = dir.path().join("clean");
    let o = sweep_command(&root, &clean, &daemon.url)
        .args(["--concurrency", "2"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let want = sessions(&clean);
    assert_eq!(want.len(), 16);

    let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut resumed, mut fresh) = (0, 0);
    for n in 0..kills + interrupts {
        let out = dir.path().join(format!("run{n}"));
        let mut child = sweep_command(&root, &out, &daemon.url)
            .args(["--concurrency", "2"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // somewhere in the run (which takes about 16 × 2 × 40 ms / 2)
        std::thread::sleep(Duration::from_millis(50 + next() % 700));
        if n < kills {
            signal(child.id(), "-KILL");
        } else {
            signal(child.id(), "-INT");
            std::thread::sleep(Duration::from_millis(5));
            signal(child.id(), "-INT");
        }
        let _ = wait_with_deadline(&mut child, 60, "a killed sweep");
        if out.join("manifest.json").exists() {
            let bytes = std::fs::read(out.join("manifest.json")).unwrap();
            let parsed: Result<serde_json::Value, _> = serde_json::from_slice(&bytes);
            assert!(
                parsed.is_ok(),
                "run {n}: the manifest left by the kill does not parse"
            );
            resumed += 1;
            // resume until complete
            let mut tries = 0;
            loop {
                let o = sweep_command(&root, &out, &daemon.url)
                    .args(["--concurrency", "2", "--resume"])
                    .output()
                    .unwrap();
                if o.status.code() == Some(0) {
                    break;
                }
                tries += 1;
                assert!(tries < 3, "run {n}: resume failed: {}", output_text(&o));
            }
        } else {
            // killed before the first manifest: a fresh run into a new folder
            fresh += 1;
            let _ = std::fs::remove_dir_all(&out);
            let o = sweep_command(&root, &out, &daemon.url)
                .args(["--concurrency", "2"])
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(0), "run {n}: {}", output_text(&o));
        }
        assert_eq!(read_manifest(&out)["complete"], true, "run {n}");
        assert_eq!(sessions(&out), want, "run {n}: the resumed sweep differs");
        let left = own_temp_files(&out);
        assert!(left.is_empty(), "run {n}: temp files left: {left:?}");
    }
    eprintln!(
        "kill and resume: {kills} SIGKILL + {interrupts} double SIGINT; {resumed} resumed from the manifest left behind, {fresh} killed before the first manifest; every result equal to the uninterrupted sweep"
    );
}

#[test]
fn killed_sweeps_resume_to_the_uninterrupted_result() {
    campaign(4, 2);
}

#[test]
#[ignore = "the long campaign: 20 SIGKILLs and 5 double SIGINTs"]
fn killed_sweeps_long_campaign() {
    campaign(20, 5);
}
