//! A hostile daemon, end to end: `audit-sweep` and `sync` (the real binary)
//! against a raw TCP server on 127.0.0.1 that answers GetCascadeTrajectory
//! with malformed, inconsistent, endless, dripping or redirected answers
//! built from the generator's honest views (`.truth/daemon/`).
//!
//! Every case must end, for the session concerned only, as not fetched,
//! incomplete or error: never verified, never a crash (exit 101), within
//! `--timeout` plus a small constant, with a valid manifest and no body of
//! an invalid answer kept under `corpus/`.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{bin, generate_store, read_manifest, run_with_closed_output, sweep_command};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the hostile daemon sends for one GetCascadeTrajectory.
enum Answer {
    /// Status, extra header lines, body.
    Bytes(u16, String, Vec<u8>),
    /// The body one byte every `ms`, with its true length declared.
    Drip(Vec<u8>, u64),
    /// An endless chunked body.
    Endless,
    /// Declares the body's length, sends half, closes.
    CloseMidStream(Vec<u8>),
}

/// The honest views and how one case twists them.
struct Views {
    full: std::collections::HashMap<String, String>,
    ordinary: std::collections::HashMap<String, String>,
}

impl Views {
    fn read(store: &Path) -> Views {
        let mut v = Views {
            full: Default::default(),
            ordinary: Default::default(),
        };
        for e in std::fs::read_dir(store.join(".truth/daemon")).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p).unwrap();
            if let Some(id) = name.strip_suffix(".full.json") {
                v.full.insert(id.to_string(), text);
            } else if let Some(id) = name.strip_suffix(".ordinary.json") {
                v.ordinary.insert(id.to_string(), text);
            }
        }
        v
    }
}

/// An honest envelope around `trajectory`.
fn envelope(trajectory: &str) -> String {
    let t: serde_json::Value = serde_json::from_str(trajectory).unwrap();
    let steps = t["steps"].as_array().map_or(0, Vec::len);
    // As agy's CLI daemon answers: no numTotalGeneratorMetadata.
    format!(
        r#"{{"trajectory":{trajectory},"status":"CASCADE_RUN_STATUS_IDLE","numTotalSteps":"{steps}"}}"#
    )
}

type Twist = dyn Fn(&str, bool, &Views) -> Answer + Send + Sync;

struct Hostile {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(views: Views, twist: Box<Twist>) -> Hostile {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    let (views, twist) = (Arc::new(views), Arc::new(twist));
    let s = stop.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            if s.load(Ordering::SeqCst) {
                break;
            }
            let Ok(conn) = conn else { continue };
            let (views, twist, s) = (views.clone(), twist.clone(), s.clone());
            std::thread::spawn(move || handle(conn, &views, &**twist, &s));
        }
    });
    Hostile { port, stop }
}

fn handle(conn: TcpStream, views: &Views, twist: &Twist, stop: &AtomicBool) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut out = conn;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let req: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        let id = req["cascadeId"].as_str().unwrap_or("").to_string();
        let answer = if path.ends_with("/LoadTrajectory") {
            Answer::Bytes(200, String::new(), b"{}".to_vec())
        } else if path.ends_with("/GetCascadeTrajectory") && views.full.contains_key(&id) {
            let full = req["trajectoryVerbosity"] == "CLIENT_TRAJECTORY_VERBOSITY_FULL";
            twist(&id, full, views)
        } else {
            Answer::Bytes(404, String::new(), br#"{"code":"not_found"}"#.to_vec())
        };
        let head = |status: u16, extra: &str, len: Option<usize>| {
            let mut h = format!("HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{extra}");
            match len {
                Some(n) => h.push_str(&format!("content-length: {n}\r\n\r\n")),
                None => h.push_str("transfer-encoding: chunked\r\n\r\n"),
            }
            h.into_bytes()
        };
        let ok = match answer {
            Answer::Bytes(status, extra, b) => out
                .write_all(&head(status, &extra, Some(b.len())))
                .and_then(|()| out.write_all(&b))
                .is_ok(),
            Answer::Drip(b, ms) => {
                let _ = out.write_all(&head(200, "", Some(b.len())));
                for byte in b {
                    if stop.load(Ordering::SeqCst) || out.write_all(&[byte]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(ms));
                }
                true
            }
            Answer::Endless => {
                let _ = out.write_all(&head(200, "", None));
                let chunk = vec![b' '; 1 << 20];
                let mut framed = format!("{:x}\r\n", chunk.len()).into_bytes();
                framed.extend_from_slice(&chunk);
                framed.extend_from_slice(b"\r\n");
                while !stop.load(Ordering::SeqCst) && out.write_all(&framed).is_ok() {}
                return;
            }
            Answer::CloseMidStream(b) => {
                let _ = out.write_all(&head(200, "", Some(b.len())));
                let _ = out.write_all(&b[..b.len() / 2]);
                return;
            }
        };
        if !ok {
            return;
        }
    }
}

/// A small generated store (three clean conversations) shared by the cases.
fn store() -> &'static Path {
    static STORE: std::sync::OnceLock<(tempfile::TempDir, PathBuf)> = std::sync::OnceLock::new();
    &STORE
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().join("store");
            generate_store(
                &root,
                &[
                    "--conversations",
                    "3",
                    "--seed",
                    "5",
                    "--near-miss-rate",
                    "0",
                    "--scale",
                    "0.05",
                ],
            );
            (dir, root)
        })
        .1
}

const TIMEOUT: u64 = 2;
/// What `--timeout` may be exceeded by: retries, the bracket's second
/// snapshot, process start.
const SLACK: Duration = Duration::from_secs(12);

/// Sweeps the store against `twist`; checks the run ended in time, the
/// manifest is valid and no session verified. Returns the manifest.
fn sweep_against(name: &str, twist: Box<Twist>, extra: &[&str]) -> serde_json::Value {
    let root = store();
    let daemon = serve(Views::read(root), twist);
    let out = tempfile::tempdir().unwrap();
    let sweep_out = out.path().join("sweep");
    let started = Instant::now();
    let o = bin()
        .args([
            "audit-sweep",
            "--quiet",
            "--concurrency",
            "2",
            "--retries",
            "0",
            "--root",
        ])
        .arg(root)
        .arg("--out")
        .arg(&sweep_out)
        .args(["--daemon-url", &format!("http://127.0.0.1:{}", daemon.port)])
        .args(["--timeout", &TIMEOUT.to_string()])
        .args(extra)
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(101), "{name}: panicked: {stderr}");
    assert!(o.status.code().is_some(), "{name}: killed by a signal");
    assert_ne!(o.status.code(), Some(0), "{name}: exit 0: {stderr}");
    assert!(
        took < Duration::from_secs(TIMEOUT) * 2 + SLACK,
        "{name}: took {took:?}"
    );
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sweep_out.join("manifest.json")).unwrap())
            .unwrap_or_else(|e| panic!("{name}: manifest: {e}"));
    let sessions = m["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 3, "{name}: every session recorded");
    for s in sessions {
        let verdict = s["verdict"].as_str();
        assert!(
            !matches!(verdict, Some("verified" | "verified-source-only")),
            "{name}: {} verified: {s}",
            s["fileId"]
        );
        assert!(
            matches!(verdict, None | Some("incomplete")),
            "{name}: {} ended as {verdict:?}, not as not fetched, incomplete or error",
            s["fileId"]
        );
    }
    // A manifest is complete exactly when every session has a verdict.
    let pending = sessions.iter().any(|s| s["verdict"].is_null());
    assert_eq!(m["complete"], !pending, "{name}");
    // Nothing verified, so no sidecar; an invalid answer's body is not kept.
    for e in std::fs::read_dir(sweep_out.join("corpus")).unwrap() {
        let p = e.unwrap().path();
        let name_ = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            !name_.ends_with(".trajectory.json"),
            "{name}: sidecar {name_}"
        );
        if m["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["verdict"].is_null() && name_.starts_with(s["fileId"].as_str().unwrap()))
        {
            panic!("{name}: the body of an answer that was not valid was kept: {name_}");
        }
    }
    m
}

/// `sync` of the first conversation against `twist`: never verified, never
/// a crash, in time, no sidecar written.
fn sync_against(name: &str, twist: Box<Twist>) {
    let root = store();
    let daemon = serve(Views::read(root), twist);
    let id = {
        let mut ids: Vec<String> = Views::read(root).full.keys().cloned().collect();
        ids.sort();
        ids[0].clone()
    };
    let out = tempfile::tempdir().unwrap();
    let sidecar = out.path().join("s.trajectory.json");
    let started = Instant::now();
    let o = bin()
        .args(["sync", "--retries", "0", "--root"])
        .arg(root)
        .arg("--out")
        .arg(&sidecar)
        .args(["--daemon-url", &format!("http://127.0.0.1:{}", daemon.port)])
        .args(["--timeout", &TIMEOUT.to_string()])
        .arg(&id)
        .output()
        .unwrap();
    let took = started.elapsed();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_ne!(o.status.code(), Some(101), "{name}: panicked: {text}");
    assert!(
        matches!(o.status.code(), Some(1 | 4)),
        "{name}: sync exit {:?}: {text}",
        o.status.code()
    );
    assert!(!sidecar.exists(), "{name}: a sidecar was written");
    assert!(
        took < Duration::from_secs(TIMEOUT) * 2 + SLACK,
        "{name}: took {took:?}"
    );
}

fn honest(id: &str, full: bool, v: &Views) -> String {
    if full {
        v.full[id].clone()
    } else {
        v.ordinary[id].clone()
    }
}

fn ok(body: String) -> Answer {
    Answer::Bytes(200, String::new(), body.into_bytes())
}

/// A value nested `n` deep.
fn deep(n: usize) -> String {
    format!("{}1{}", "[".repeat(n), "]".repeat(n))
}

/// Inserts `member` (`"k":v`) as the first member of the first step.
fn in_first_step(trajectory: &str, member: &str) -> String {
    let at = trajectory.find(r#""steps":[{"#).expect("a step") + r#""steps":[{"#.len();
    format!("{}{member},{}", &trajectory[..at], &trajectory[at..])
}

// The twists both `audit-sweep` and `sync` are run against.

/// `numTotalSteps` with 26 more digits than the step count: beyond 64 bits.
fn count_beyond_64_bits(id: &str, full: bool, v: &Views) -> Answer {
    let e = envelope(&honest(id, full, v));
    ok(e.replacen(
        r#""numTotalSteps":""#,
        r#""numTotalSteps":"99999999999999999999999999"#,
        1,
    ))
}

/// An extra envelope member nested 100,000 deep.
fn deep_extra_member(id: &str, full: bool, v: &Views) -> Answer {
    let e = envelope(&honest(id, full, v));
    ok(format!(
        "{},\"extra\":{}}}",
        &e[..e.len() - 1],
        deep(100_000)
    ))
}

/// The honest answer, a byte every 100 ms.
fn drip(id: &str, full: bool, v: &Views) -> Answer {
    Answer::Drip(envelope(&honest(id, full, v)).into_bytes(), 100)
}

/// An endless chunked body.
fn endless(_: &str, _: bool, _: &Views) -> Answer {
    Answer::Endless
}

/// The next conversation's (in id order) honest answer.
fn another_conversation(id: &str, full: bool, v: &Views) -> Answer {
    let mut ids: Vec<&String> = v.full.keys().collect();
    ids.sort();
    let at = ids.iter().position(|k| *k == id).unwrap();
    let other = ids[(at + 1) % ids.len()];
    ok(envelope(&honest(other, full, v)))
}

#[test]
fn malformed_envelopes_never_verify() {
    let cases: Vec<(&str, Box<Twist>)> = vec![
        (
            "numTotalSteps beyond 64 bits",
            Box::new(count_beyond_64_bits),
        ),
        (
            "numTotalSteps with an exponent, off by one",
            Box::new(|id, full, v| {
                let t = honest(id, full, v);
                let steps = serde_json::from_str::<serde_json::Value>(&t).unwrap()["steps"]
                    .as_array()
                    .map_or(0, Vec::len);
                let e = envelope(&t);
                ok(e.replace(
                    &format!(r#""numTotalSteps":"{steps}""#),
                    &format!(r#""numTotalSteps":{}e0"#, steps + 1),
                ))
            }),
        ),
        (
            "an extra envelope member nested 100,000 deep",
            Box::new(deep_extra_member),
        ),
        (
            "an extra flat envelope member",
            Box::new(|id, full, v| {
                let e = envelope(&honest(id, full, v));
                ok(format!(
                    "{},\"numTotalCheckpoints\":\"1\"}}",
                    &e[..e.len() - 1]
                ))
            }),
        ),
        (
            "a repeated envelope member",
            Box::new(|id, full, v| {
                let e = envelope(&honest(id, full, v));
                ok(format!(
                    "{},\"status\":\"CASCADE_RUN_STATUS_IDLE\"}}",
                    &e[..e.len() - 1]
                ))
            }),
        ),
        (
            "an unknown status",
            Box::new(|id, full, v| {
                ok(envelope(&honest(id, full, v))
                    .replace("CASCADE_RUN_STATUS_IDLE", "CASCADE_RUN_STATUS_EXPLODED"))
            }),
        ),
        (
            "an error envelope with HTTP 200",
            Box::new(|_, _, _| ok(r#"{"code":"internal","message":"boom"}"#.to_string())),
        ),
        (
            "invalid UTF-8",
            Box::new(|id, full, v| {
                let mut b = envelope(&honest(id, full, v)).into_bytes();
                let at = b.len() / 2;
                b.splice(at..at, [0xff, 0xfe]);
                Answer::Bytes(200, String::new(), b)
            }),
        ),
    ];
    for (name, twist) in cases {
        sweep_against(name, twist, &[]);
    }
}

#[test]
fn malformed_trajectories_never_verify() {
    let cases: Vec<(&str, Box<Twist>)> = vec![
        (
            "a step member repeated",
            Box::new(|id, full, v| {
                let t = honest(id, full, v);
                let ty = r#""type":"CORTEX_STEP_TYPE_USER_INPUT""#;
                ok(envelope(&in_first_step(&t, ty)))
            }),
        ),
        (
            "steps repeated at the top",
            Box::new(|id, full, v| {
                let t = honest(id, full, v);
                let e = envelope(&t);
                ok(e.replacen(r#""steps":["#, r#""steps":[],"steps":["#, 1))
            }),
        ),
        (
            "100,000-deep nesting inside a step",
            Box::new(|id, full, v| {
                let t = honest(id, full, v);
                ok(envelope(&in_first_step(
                    &t,
                    &format!("\"deep\":{}", deep(100_000)),
                )))
            }),
        ),
        (
            "a number beyond 64 bits inside a step",
            Box::new(|id, full, v| {
                let t = honest(id, full, v);
                ok(envelope(&in_first_step(
                    &t,
                    r#""stepIndex":123456789012345678901234567890"#,
                )))
            }),
        ),
        (
            "a lone surrogate inside a step",
            Box::new(|id, full, v| {
                let t = honest(id, full, v);
                ok(envelope(&in_first_step(&t, r#""x\ud800":"\udc00""#)))
            }),
        ),
        (
            "another conversation's trajectory",
            Box::new(another_conversation),
        ),
    ];
    for (name, twist) in cases {
        sweep_against(name, twist, &[]);
    }
}

#[test]
fn transport_hostility_is_bounded_in_time_and_memory() {
    let cases: Vec<(&str, Box<Twist>)> = vec![
        (
            "a redirect to another host",
            Box::new(|_, _, _| {
                Answer::Bytes(
                    302,
                    "location: http://127.0.0.2:9/exa.language_server_pb.LanguageServerService/GetCascadeTrajectory\r\n".into(),
                    Vec::new(),
                )
            }),
        ),
        (
            "a close mid-stream",
            Box::new(|id, full, v| {
                Answer::CloseMidStream(envelope(&honest(id, full, v)).into_bytes())
            }),
        ),
        ("a body dripped a byte every 100 ms", Box::new(drip)),
        ("an endless chunked body", Box::new(endless)),
    ];
    for (name, twist) in cases {
        sweep_against(name, twist, &["--max-response-bytes", "8388608"]);
    }
}

#[test]
fn sync_against_a_hostile_daemon_never_verifies() {
    let cases: Vec<(&str, Box<Twist>)> = vec![
        (
            "numTotalSteps beyond 64 bits",
            Box::new(count_beyond_64_bits),
        ),
        (
            "an extra envelope member nested 100,000 deep",
            Box::new(deep_extra_member),
        ),
        ("a body dripped a byte every 100 ms", Box::new(drip)),
        ("an endless chunked body", Box::new(endless)),
        (
            "another conversation's trajectory",
            Box::new(another_conversation),
        ),
    ];
    for (name, twist) in cases {
        sync_against(name, twist);
    }
}

/// The honest answers verify through the same server (so the hostile
/// cases fail for their twist, not for the harness).
#[test]
fn the_harness_itself_verifies_honest_answers() {
    let root = store();
    let daemon = serve(
        Views::read(root),
        Box::new(|id, full, v| ok(envelope(&honest(id, full, v)))),
    );
    let out = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}", daemon.port);
    let o = sweep_command(root, &out.path().join("s"), &url)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Peak memory against an endless body stays near the cap per request in
/// flight (a bounded-memory property with a generous bound, not a speed
/// target): `sync` holds two requests (full and ordinary) at once.
#[cfg(target_os = "linux")]
#[test]
fn memory_against_an_endless_body_stays_near_the_cap() {
    let root = store();
    let daemon = serve(Views::read(root), Box::new(|_, _, _| Answer::Endless));
    let id = {
        let mut ids: Vec<String> = Views::read(root).full.keys().cloned().collect();
        ids.sort();
        ids[0].clone()
    };
    let cap: u64 = 256 << 20;
    let out = tempfile::tempdir().unwrap();
    let mut child = bin()
        .args(["sync", "--retries", "0", "--timeout", "30", "--root"])
        .arg(root)
        .arg("--out")
        .arg(out.path().join("s.trajectory.json"))
        .args(["--daemon-url", &format!("http://127.0.0.1:{}", daemon.port)])
        .args(["--max-response-bytes", &cap.to_string()])
        .arg(&id)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak_kb: u64 = 0;
    loop {
        if let Ok(text) = std::fs::read_to_string(&status_path) {
            for line in text.lines() {
                if let Some(v) = line.strip_prefix("VmHWM:") {
                    let kb: u64 = v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
                    peak_kb = peak_kb.max(kb);
                }
            }
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let peak = peak_kb * 1024;
    // Two bodies at the cap, plus the process itself (schema, source,
    // allocator slack): generous, but far below what a buffer that doubles
    // past the cap (or keeps a copy beside it) would reach.
    let bound = 2 * cap + (cap / 2) + (96 << 20);
    assert!(peak > 0, "VmHWM was read");
    assert!(
        peak < bound,
        "peak RSS {} MiB against an endless body with a {} MiB cap (bound {} MiB)",
        peak >> 20,
        cap >> 20,
        bound >> 20
    );
}

/// A closed standard error (EPIPE on every write) never deadlocks or
/// panics a sweep: it finishes its work and its manifest is the record.
#[test]
fn a_sweep_with_a_closed_stderr_finishes() {
    let root = store();
    let daemon = serve(
        Views::read(root),
        Box::new(|id, full, v| ok(envelope(&honest(id, full, v)))),
    );
    let out = tempfile::tempdir().unwrap();
    let sweep_out = out.path().join("s");
    for quiet in [false, true] {
        let _ = std::fs::remove_dir_all(&sweep_out);
        let url = format!("http://127.0.0.1:{}", daemon.port);
        let mut cmd = if quiet {
            sweep_command(root, &sweep_out, &url)
        } else {
            // Not a terminal: a line per session on stderr, then the summary.
            let mut c = bin();
            c.args(["audit-sweep", "--root"])
                .arg(root)
                .arg("--out")
                .arg(&sweep_out)
                .args(["--daemon-url", &url]);
            c
        };
        let status = run_with_closed_output(&mut cmd, 60, "a sweep with a closed stderr");
        assert_eq!(status.code(), Some(0), "quiet {quiet}");
        let m = read_manifest(&sweep_out);
        assert_eq!(m["complete"], true);
        assert_eq!(m["counts"]["selected"], 3);
    }
}
