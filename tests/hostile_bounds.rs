//! The permanent hostile-input suite (issue 45 item 5): sparse giant files,
//! FIFOs where a file is expected, and signals against a daemon that never
//! answers. Every case runs the real binary and checks four things: its exit
//! code, that it ends within its deadline (a minute; ten seconds after a
//! signal), its peak memory (at most 500 MB whatever the input's size, the
//! documented bound: a generous bound, not a speed target) and that no
//! input changed.
//!
//! The giant files are sparse (`set_len`): they cost no disk, and a command
//! that reads one whole still pays its full size in memory and time.
//!
//! The peak is `wait4`'s `ru_maxrss`, which on Linux also holds this test
//! process's own peak at the spawn (exec keeps the larger of the two): an
//! upper bound, so the tests keep their own memory small.

#![cfg(target_os = "linux")]
// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

mod common;

use common::{bin, mkfifo};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// The documented bound of any command's peak memory, in KiB.
const PEAK_BOUND_KIB: i64 = 500 * 1000 * 1000 / 1024;

/// What a measured run ended with.
struct Run {
    code: Option<i32>,
    /// Peak resident memory, in KiB (`ru_maxrss`).
    peak_kib: i64,
    took: Duration,
    text: String,
}

/// Runs `cmd` (its output to files, so a full pipe never stalls it),
/// reaping it with `wait4` for its own peak memory; fails the test past
/// `deadline`. `signal`: sent once after `signal_after`, the deadline then
/// counting from the signal.
fn measured(cmd: &mut Command, deadline: Duration, signal: Option<(i32, Duration)>) -> Run {
    let out = tempfile::NamedTempFile::new().unwrap();
    let err = tempfile::NamedTempFile::new().unwrap();
    // reaped by wait4 below (for its rusage), not by `Child::wait`
    #[allow(clippy::zombie_processes)]
    let child = cmd
        .stdin(Stdio::null())
        .stdout(out.reopen().unwrap())
        .stderr(err.reopen().unwrap())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let started = Instant::now();
    let mut clock = started;
    let mut pending = signal;
    loop {
        let mut status = 0;
        // SAFETY: a zeroed rusage is a valid out-parameter for wait4(2).
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 on our own child's pid, with valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
            let text = format!(
                "{}{}",
                std::fs::read_to_string(out.path()).unwrap_or_default(),
                std::fs::read_to_string(err.path()).unwrap_or_default()
            );
            return Run {
                code,
                peak_kib: usage.ru_maxrss,
                took: clock.elapsed(),
                text,
            };
        }
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            panic!("wait4 failed for {cmd:?}: {e}");
        }
        if let Some((sig, after)) = pending {
            if started.elapsed() >= after {
                // SAFETY: kill(2) of our own live child.
                unsafe { libc::kill(pid, sig) };
                pending = None;
                clock = Instant::now();
            }
        }
        if clock.elapsed() > deadline {
            // SAFETY: kill(2) of our own live child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{cmd:?}: still running after {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What a file is, to tell that nothing changed it: its type, length,
/// modification time and (for a file of at most 8 MiB) its bytes.
#[derive(Debug, PartialEq)]
struct FileState {
    kind: &'static str,
    len: u64,
    mtime: Option<SystemTime>,
    bytes: Option<Vec<u8>>,
}

fn state_of(p: &Path) -> FileState {
    use std::os::unix::fs::FileTypeExt;
    let m = std::fs::symlink_metadata(p).unwrap();
    let t = m.file_type();
    let kind = if t.is_fifo() {
        "fifo"
    } else if t.is_dir() {
        "dir"
    } else {
        "file"
    };
    let bytes = (kind == "file" && m.len() <= 8 << 20).then(|| std::fs::read(p).unwrap());
    FileState {
        kind,
        len: m.len(),
        mtime: m.modified().ok(),
        bytes,
    }
}

/// The inputs' states, to compare after a run.
fn states(inputs: &[PathBuf]) -> BTreeMap<PathBuf, FileState> {
    inputs.iter().map(|p| (p.clone(), state_of(p))).collect()
}

/// Every source file of a store (its conversations, companions and logs):
/// what no command may change.
fn store_inputs(store: &Path) -> Vec<PathBuf> {
    let mut v = vec![store.join("cli.log")];
    for e in std::fs::read_dir(store.join("conversations")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".trajectory.json") {
            v.push(p);
        }
    }
    v.sort();
    v
}

/// Runs the case: its exit code as `want`, within a minute, under the
/// memory bound, `inputs` unchanged; returns its output.
fn case(what: &str, cmd: &mut Command, want: i32, inputs: &[PathBuf]) -> String {
    let before = states(inputs);
    let r = measured(cmd, Duration::from_secs(60), None);
    assert_eq!(r.code, Some(want), "{what}: {}", r.text);
    assert!(
        r.peak_kib <= PEAK_BOUND_KIB,
        "{what}: peak {} KiB past the 500 MB bound",
        r.peak_kib
    );
    assert_eq!(states(inputs), before, "{what} changed an input");
    eprintln!(
        "{what}: exit {want}, {:.2} s, peak {} MiB",
        r.took.as_secs_f64(),
        r.peak_kib / 1024
    );
    r.text
}

fn sparse(p: &Path, len: u64) {
    std::fs::File::create(p).unwrap().set_len(len).unwrap();
}

/// A small generated store and its conversations' ids.
fn store(dir: &Path, n: usize) -> (PathBuf, Vec<String>) {
    let store = dir.join("store");
    common::generate_store(
        &store,
        &["--conversations", &n.to_string(), "--scale", "0.1"],
    );
    let mut ids: Vec<String> = std::fs::read_dir(store.join("conversations"))
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().to_string_lossy().into_owned();
            n.strip_suffix(".db").map(str::to_string)
        })
        .collect();
    ids.sort();
    (store, ids)
}

/// Plain `list` over a 10 GB `-wal` reads its frames, not its bytes.
#[test]
fn list_over_a_ten_gigabyte_wal_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let (store, ids) = store(dir.path(), 4);
    sparse(
        &store
            .join("conversations")
            .join(format!("{}.db-wal", ids[0])),
        10 << 30,
    );
    let inputs = store_inputs(&store);
    let root = store.to_str().unwrap();
    let text = case("list", bin().args(["list", "--root", root]), 0, &inputs);
    assert!(text.contains(&ids[1]), "{text}");
}

/// A 2 GiB sidecar is not read by watch, list --check, sync --recheck or
/// doctor: each names it as larger than the sidecar cap and leaves it
/// alone.
#[test]
fn a_two_gibibyte_sidecar_is_named_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let (store, ids) = store(dir.path(), 4);
    let giant = store
        .join("conversations")
        .join(format!("{}.trajectory.json", ids[0]));
    sparse(&giant, 2 << 30);
    let mut inputs = store_inputs(&store);
    inputs.push(giant.clone());
    let root = store.to_str().unwrap();
    let sim = common::start_sim(&store, &["--no-fault-file"]);
    let text = case(
        "watch --once",
        bin()
            .args(["watch", "--once", "--root", root, "--daemon-url", &sim.url])
            .env("XDG_STATE_HOME", dir.path().join("state")),
        1,
        &inputs,
    );
    assert!(
        text.contains("larger than") && text.contains(&ids[0]),
        "{text}"
    );
    drop(sim);
    let text = case(
        "list --check",
        bin().args(["list", "--check", "--root", root]),
        0,
        &inputs,
    );
    let row = text.lines().find(|l| l.starts_with(&ids[0])).unwrap_or("");
    assert!(row.contains("not a sidecar"), "{text}");
    // doctor counts it apart, not as missing (as watch leaves it alone)
    let text = case(
        "doctor --json",
        bin()
            .args(["doctor", "--json", "--root", root])
            .env_remove("ANTIGRAVITY_DAEMON_URL")
            .env("HOME", dir.path()),
        1,
        &inputs,
    );
    // the pretty JSON object (stdout) ends at its first unindented `}`
    let end = text.find("\n}").map_or(text.len(), |i| i + 2);
    let v: serde_json::Value = serde_json::from_str(&text[..end]).unwrap_or_default();
    let sidecars = &v["roots"][0]["sidecars"];
    assert_eq!(sidecars["notSidecars"], 1, "{text}");
    assert_eq!(sidecars["missing"], 0, "{text}");
    let text = case(
        "sync --recheck",
        bin().args(["sync", "--recheck", "--root", root, &ids[0]]),
        1,
        &inputs,
    );
    assert!(text.contains("larger than"), "{text}");
}

/// `shapes digest` over a 2 M-entry listing.
#[test]
fn shapes_digest_over_two_million_entries_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let listing = dir.path().join("big.tsv");
    {
        // written as it is made: this process's own peak stays small (a
        // child's measured peak includes its parent's at the spawn)
        use std::io::Write;
        let mut w = std::io::BufWriter::new(std::fs::File::create(&listing).unwrap());
        for i in 0..2_000_000u32 {
            writeln!(w, "steps.[].p{i:07}.field\tboolean|string").unwrap();
        }
        w.flush().unwrap();
    }
    let out = case(
        "shapes digest",
        bin().args(["shapes", "digest"]).arg(&listing),
        0,
        std::slice::from_ref(&listing),
    );
    assert!(out.contains("2000000 entries"), "{out}");
}

/// `doctor` over a 2 GiB `cli.log` reads its end only.
#[test]
fn doctor_over_a_two_gibibyte_log_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = store(dir.path(), 2);
    let log = store.join("cli.log");
    sparse(&log, 2 << 30);
    let inputs = store_inputs(&store);
    let text = case(
        "doctor",
        bin()
            .args(["doctor", "--root", store.to_str().unwrap()])
            .env_remove("ANTIGRAVITY_DAEMON_URL")
            .env("HOME", dir.path()),
        1,
        &inputs,
    );
    assert!(text.contains("daemon"), "{text}");
}

/// A FIFO where a file is expected is refused at once (never waited on),
/// named, and left a FIFO: a `-wal`, a sidecar, a shard manifest, a
/// descriptor set.
#[test]
fn fifos_are_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let (store, ids) = store(dir.path(), 3);
    let root = store.to_str().unwrap();
    let conv = store.join("conversations");
    // a FIFO -wal: list still lists (no count for that conversation), and
    // a sweep reports that conversation's source as unreadable
    let wal = conv.join(format!("{}.db-wal", ids[0]));
    mkfifo(&wal);
    let inputs = store_inputs(&store);
    case(
        "list, FIFO -wal",
        bin().args(["list", "--root", root]),
        0,
        &inputs,
    );
    let text = case(
        "sync --recheck, FIFO -wal",
        bin().args(["sync", "--recheck", "--root", root, &ids[0]]),
        3,
        &inputs,
    );
    assert!(text.contains(&ids[0]), "{text}");
    std::fs::remove_file(&wal).unwrap();
    // a FIFO sidecar: not a sidecar, left alone
    let side = conv.join(format!("{}.trajectory.json", ids[1]));
    mkfifo(&side);
    let mut inputs = store_inputs(&store);
    inputs.push(side.clone());
    let text = case(
        "sync --recheck, FIFO sidecar",
        bin().args(["sync", "--recheck", "--root", root, &ids[1]]),
        1,
        &inputs,
    );
    assert!(text.contains("not a regular file"), "{text}");
    let text = case(
        "list --check, FIFO sidecar",
        bin().args(["list", "--check", "--root", root]),
        0,
        &inputs,
    );
    let row = text.lines().find(|l| l.starts_with(&ids[1])).unwrap_or("");
    assert!(row.contains("not a sidecar"), "{text}");
    // a FIFO shard and a FIFO descriptor set
    let shard = dir.path().join("shard.json");
    mkfifo(&shard);
    let text = case(
        "manifest merge, FIFO shard",
        bin()
            .args(["manifest", "merge", "--out"])
            .arg(dir.path().join("merged.json"))
            .arg(&shard),
        1,
        std::slice::from_ref(&shard),
    );
    assert!(text.contains("a FIFO"), "{text}");
    let set = dir.path().join("set.protoset");
    mkfifo(&set);
    let text = case(
        "list --check --schema FIFO",
        bin()
            .args(["list", "--check", "--root", root, "--schema"])
            .arg(&set),
        1,
        std::slice::from_ref(&set),
    );
    assert!(text.contains("a FIFO"), "{text}");
}

/// A listener that accepts connections and never answers.
fn silent_listener() -> (String, std::thread::JoinHandle<()>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let h = std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in l.incoming().take(64) {
            match c {
                Ok(c) => held.push(c),
                Err(_) => return,
            }
        }
    });
    (url, h)
}

/// The first SIGINT or SIGTERM ends a sweep within ten seconds, even with
/// every fetch hanging on a daemon that never answers; the manifest is
/// written, not complete.
#[test]
fn the_first_signal_ends_a_sweep_within_ten_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = store(dir.path(), 6);
    let inputs = store_inputs(&store);
    let (url, _listener) = silent_listener();
    for (name, sig) in [("SIGINT", libc::SIGINT), ("SIGTERM", libc::SIGTERM)] {
        let out = dir.path().join(format!("sweep-{name}"));
        let before = states(&inputs);
        let r = measured(
            &mut common::sweep_command(&store, &out, &url),
            Duration::from_secs(10),
            Some((sig, Duration::from_secs(2))),
        );
        assert_ne!(r.code, Some(0), "{name}: {}", r.text);
        assert!(r.peak_kib <= PEAK_BOUND_KIB, "{name}: {} KiB", r.peak_kib);
        assert_eq!(states(&inputs), before, "{name} changed an input");
        let m = common::read_manifest(&out);
        assert_eq!(m["complete"], false, "{name}: {}", r.text);
    }
}

/// An error about an input from outside is one visible line on stderr
/// (issue 45 item 2): a root path holding a newline and ESC is shown with
/// `\u{a}` and `\u{1b}`, never sent raw.
#[test]
fn an_error_naming_outside_text_is_one_visible_line() {
    let dir = tempfile::tempdir().unwrap();
    let evil = dir.path().join("no\nsuch\u{1b}[2J");
    let o = bin().args(["list", "--root"]).arg(&evil).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err:?}");
    assert!(err.contains("no\\u{a}such\\u{1b}[2J"), "{err:?}");
    assert!(!err.contains('\u{1b}'), "{err:?}");
    // the same for a value clap itself refuses and quotes
    let o = bin()
        .args(["audit-sweep", "--concurrency", "7\n# x\u{1b}[2J"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("'7\\u{a}# x\\u{1b}[2J'"), "{err:?}");
    assert!(!err.contains('\u{1b}') && !err.contains("7\n#"), "{err:?}");
}
