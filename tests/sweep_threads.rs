//! A sweep's threads do not grow with the requests it has in flight
//! (issue 36: one connection pool, no thread per request).
//!
//! The sweep runs its fixed stages (the feeder, `--jobs` decoders, one
//! dispatcher, `--jobs` judges, the writer) and the daemon client's runtime
//! (at most two workers); its conversations in flight are tasks on that
//! runtime. Before the client was asynchronous, every request had a thread
//! of its own and every conversation in flight a fetch worker. The sweep process's threads are counted (`/proc/<pid>/task`)
//! every few milliseconds while it fetches against a simulated daemon that
//! holds every answer 40 ms, so that a conversation's requests are in flight
//! long enough to be seen.

#![cfg(target_os = "linux")]
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

mod common;

use common::*;
use std::time::{Duration, Instant};

fn threads(pid: u32) -> Option<usize> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()
        .map(|d| d.count())
}

#[test]
fn a_sweep_starts_no_thread_per_request() {
    const CONCURRENCY: usize = 16;
    const JOBS: usize = 2;
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path(), 48, 36, 0.0, 0.1);
    let daemon = start_sim(&store, &["--fault", "rate=1:latency:40"]);
    let out = dir.path().join("sweep");
    let mut child = sweep_command(&store, &out, &daemon.url)
        .args(["--concurrency", &CONCURRENCY.to_string()])
        .args(["--jobs", &JOBS.to_string()])
        .spawn()
        .unwrap();
    let pid = child.id();
    let started = Instant::now();
    let mut most = 0;
    let status = loop {
        if let Some(n) = threads(pid) {
            most = most.max(n);
        }
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > Duration::from_secs(600) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the sweep still runs after 600 s");
        }
        std::thread::sleep(Duration::from_millis(3));
    };
    drop(daemon);
    assert!(
        status.code().is_some_and(|c| c == 0 || c == 3),
        "{status:?}"
    );
    let m = read_manifest(&out);
    assert_eq!(m["counts"]["notFetched"], 0, "{}", m["counts"]);
    assert_eq!(m["counts"]["error"], 0, "{}", m["counts"]);
    // The fixed stages: main, feeder, the decoders' spawner and pool
    // (JOBS), the dispatcher, the judges (JOBS), the client's runtime (2),
    // and a few of the process's own (signal handling). Neither a thread
    // per request nor one per conversation in flight: CONCURRENCY does not
    // appear in the bound.
    eprintln!("most threads at once: {most}");
    let bound = 2 * JOBS + 10;
    assert!(
        most <= bound,
        "the sweep ran {most} threads at once (at most {bound} expected: {JOBS} decoders, {JOBS} judges and a fixed few, whatever the concurrency)"
    );
    // and it was seen running its stages at all
    assert!(most >= 2 * JOBS, "only {most} threads seen");
}
