//! `doctor` calls a daemon reachable only when it answers like agy's
//! (issue 45 item 3), through the real binary:
//!
//! - a token-less request goes first; an HTML page, a bare HTTP error, a
//!   JSON error without agy's `message`, no HTTP at all and an `https://`
//!   URL at a plain-HTTP port are each named ("something else listens on
//!   this port", "TLS mismatch"), never "reachable", and the CSRF token is
//!   never sent to them (the listeners record every header they get);
//! - an agy-like answer (agy's JSON error body) lets the token go, in a
//!   second request; the simulated IDE daemon is reachable with its token;
//! - a token that is not a plain printable token is refused where it is
//!   read (main.log, `$ANTIGRAVITY_CSRF_TOKEN`, `daemon-sim --csrf-token`)
//!   and named, never "found";
//! - a malformed pinned `$ANTIGRAVITY_DAEMON_URL` is a usage error (exit 2)
//!   in doctor, in the words sync uses;
//! - main.log's token is found whether language_server.log is missing or
//!   holds only the HTTPS line;
//! - for a CLI root, doctor says when it sends `$ANTIGRAVITY_CSRF_TOKEN`.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{bin, generate_store, output_text};
use serde_json::Value;
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

const SECRET: &str = "secret-token-4711";

/// A store of two generated conversations under a fresh temporary home:
/// (home, store). `surface` "cli" gives it a cli.log, "ide" the IDE's
/// state file.
fn store(tag: &str, surface: &str) -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::Builder::new()
        .prefix(&format!("doctor-listener-{tag}-"))
        .tempdir()
        .unwrap();
    let store = home.path().join("store");
    generate_store(&store, &["--conversations", "2", "--seed", "3"]);
    match surface {
        "cli" => std::fs::write(store.join("cli.log"), b"").unwrap(),
        _ => {
            // the generator writes a cli.log; an IDE root has none
            let _ = std::fs::remove_file(store.join("cli.log"));
            std::fs::write(store.join("antigravity_state.pbtxt"), b"").unwrap();
        }
    }
    (home, store)
}

/// The IDE's log folder under `home` (Linux layout, XDG_CONFIG_HOME unset).
fn logs(home: &Path) -> PathBuf {
    home.join(".config/Antigravity/logs")
}

/// `agy-audit doctor --root store` with HOME at `home` and `env` set.
fn doctor(home: &Path, store: &Path, json: bool, env: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = bin();
    c.env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .arg("doctor")
        .args(if json { &["--json"][..] } else { &[][..] })
        .arg("--root")
        .arg(store);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        output_text(&o),
    )
}

fn doctor_json(home: &Path, store: &Path, env: &[(&str, &str)]) -> (i32, Value) {
    let (code, stdout, text) = doctor(home, store, true, env);
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|_| panic!("{text}"));
    (code, v)
}

/// The simulated daemon in IDE mode (`daemon-sim --ide`'s server, run in
/// process): its port and token announced in `logs`, stopped on drop.
fn ide_sim(store: &Path, logs: &Path) -> agy_corpus::sim::DaemonSim {
    let mut o = agy_corpus::sim::SimOptions::new(store);
    o.load_fault_file = false;
    o.ide_logs = Some(logs.to_path_buf());
    agy_corpus::sim::DaemonSim::start(o).unwrap()
}

/// A listener that answers every connection with the same bytes (after
/// reading the request's head and body) and records each request's head.
struct Recorder {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn start(reply: Vec<u8>) -> Recorder {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = heads.clone();
        std::thread::spawn(move || {
            for conn in l.incoming() {
                let Ok(mut conn) = conn else { continue };
                let Some((_, buf)) = common::read_http_request(&mut conn) else {
                    continue;
                };
                seen.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&buf).into_owned());
                let _ = conn.write_all(&reply);
            }
        });
        Recorder { port, heads }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request it got, head and body.
    fn requests(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }

    /// How many requests carried the CSRF header, and whether any request
    /// held the secret anywhere.
    fn token_seen(&self) -> (usize, bool) {
        let r = self.requests();
        (
            r.iter()
                .filter(|h| h.contains("x-codeium-csrf-token"))
                .count(),
            r.iter().any(|h| h.contains(SECRET)),
        )
    }
}

fn http(status: &str, content_type: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Python's `http.server` answering a POST: HTTP/1.0 501 with its HTML page.
fn python_501() -> Vec<u8> {
    let body = "<!DOCTYPE HTML>\n<html lang=\"en\">\n    <head>\n        <meta charset=\"utf-8\">\n        <title>Error response</title>\n    </head>\n    <body>\n        <h1>Error response</h1>\n        <p>Error code: 501</p>\n        <p>Message: Unsupported method ('POST').</p>\n    </body>\n</html>\n";
    format!(
        "HTTP/1.0 501 Unsupported method ('POST')\r\nServer: SimpleHTTP/0.6 Python/3.12.3\r\nConnection: close\r\nContent-Type: text/html;charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Each listener that is not agy's daemon is named, never reachable, and
/// never gets the token, from a CLI root with `$ANTIGRAVITY_CSRF_TOKEN` set
/// (which doctor would otherwise send).
#[test]
fn something_else_at_the_port_is_named_and_never_gets_the_token() {
    let (home, store) = store("other", "cli");
    let cases: Vec<(&str, Vec<u8>, &str, &str)> = vec![
        (
            "an HTML page",
            http(
                "200 OK",
                "text/html",
                "<!doctype html><html><body>hi</body></html>",
            ),
            "something else",
            "an HTML page (HTTP 200)",
        ),
        (
            "python http.server",
            python_501(),
            "something else",
            "an HTML page (HTTP 501)",
        ),
        (
            "a bare 501",
            http("501 Not Implemented", "text/plain", "Not Implemented"),
            "something else",
            "HTTP 501 without a JSON object body",
        ),
        (
            "a JSON 404 without message",
            http(
                "404 Not Found",
                "application/json",
                r#"{"error":"not found"}"#,
            ),
            "something else",
            "HTTP 404 with a JSON body that is not agy's error",
        ),
        (
            "a JSON 404 with a number for message",
            http("404 Not Found", "application/json", r#"{"message":404}"#),
            "something else",
            "HTTP 404 with a JSON body that is not agy's error",
        ),
        (
            "a 200 that is not JSON",
            http("200 OK", "text/plain", "ok"),
            "something else",
            "HTTP 200 without a JSON object body",
        ),
        (
            "not HTTP",
            b"SSH-2.0-OpenSSH_9.6\r\n".to_vec(),
            "something else",
            "no HTTP answer",
        ),
    ];
    for (what, reply, state, words) in cases {
        let rec = Recorder::start(reply);
        let env = [
            ("ANTIGRAVITY_DAEMON_URL", rec.url()),
            ("ANTIGRAVITY_CSRF_TOKEN", SECRET.to_string()),
        ];
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (code, v) = doctor_json(home.path(), &store, &env);
        let d = &v["roots"][0]["daemon"];
        assert_eq!(code, 1, "{what}: {v:#}");
        assert_eq!(d["state"], state, "{what}: {v:#}");
        assert_eq!(d["reachable"], false, "{what}: {v:#}");
        let error = d["error"].as_str().unwrap_or("");
        assert!(
            error.contains("something else listens on this port") && error.contains(words),
            "{what}: {error}"
        );
        assert_eq!(v["roots"][0]["csrfToken"]["sent"], false, "{what}: {v:#}");
        // the listener was asked, token-less, and never got the token
        assert!(!rec.requests().is_empty(), "{what}: no request was made");
        assert_eq!(rec.token_seen(), (0, false), "{what}: {:?}", rec.requests());
        // the text says it too, and says the token was not sent
        let (code, stdout, text) = doctor(home.path(), &store, false, &env);
        assert_eq!(code, 1, "{text}");
        assert!(
            stdout.contains("daemon: not agy's (http://127.0.0.1:"),
            "{what}: {stdout}"
        );
        assert!(!stdout.contains("daemon: reachable"), "{what}: {stdout}");
        assert!(
            stdout.contains("csrf: found ($ANTIGRAVITY_CSRF_TOKEN), not sent"),
            "{what}: {stdout}"
        );
        assert_eq!(rec.token_seen(), (0, false), "{what}: {:?}", rec.requests());
    }
}

/// An `https://` URL at a plain-HTTP port is a TLS mismatch (this reader's
/// client speaks no TLS; the port answers plain HTTP), and gets no token.
#[test]
fn https_to_a_plain_http_port_is_a_tls_mismatch() {
    let (home, store) = store("tls", "cli");
    let rec = Recorder::start(http(
        "404 Not Found",
        "application/json",
        r#"{"code":"not_found","message":"conversation not found"}"#,
    ));
    let url = format!("https://127.0.0.1:{}", rec.port);
    let (code, v) = doctor_json(
        home.path(),
        &store,
        &[
            ("ANTIGRAVITY_DAEMON_URL", &url),
            ("ANTIGRAVITY_CSRF_TOKEN", SECRET),
        ],
    );
    let d = &v["roots"][0]["daemon"];
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(d["state"], "tls mismatch", "{v:#}");
    assert_eq!(d["reachable"], false, "{v:#}");
    assert!(
        d["error"].as_str().unwrap().contains("answers plain HTTP"),
        "{v:#}"
    );
    assert_eq!(rec.token_seen(), (0, false), "{:?}", rec.requests());
}

/// An answer agy's daemon could give (agy's JSON error body, §4.1) lets the
/// token go, in a second request: the first carried none.
#[test]
fn an_agy_like_answer_gets_the_token_in_a_second_request() {
    let (home, store) = store("agy", "cli");
    let rec = Recorder::start(http(
        "404 Not Found",
        "application/json",
        r#"{"message":"conversation not found"}"#,
    ));
    let (code, v) = doctor_json(
        home.path(),
        &store,
        &[
            ("ANTIGRAVITY_DAEMON_URL", &rec.url()),
            ("ANTIGRAVITY_CSRF_TOKEN", SECRET),
        ],
    );
    let r = &v["roots"][0];
    assert_eq!(r["daemon"]["state"], "reachable", "{v:#}");
    assert_eq!(r["daemon"]["reachable"], true, "{v:#}");
    assert_eq!(r["csrfToken"]["state"], "found", "{v:#}");
    assert_eq!(r["csrfToken"]["from"], "$ANTIGRAVITY_CSRF_TOKEN", "{v:#}");
    assert_eq!(r["csrfToken"]["sent"], true, "{v:#}");
    // exit 1 only for the missing sidecars
    assert_eq!(code, 1, "{v:#}");
    let reqs = rec.requests();
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    assert!(!reqs[0].contains("x-codeium-csrf-token"), "{reqs:?}");
    assert!(
        reqs[1].contains(&format!("x-codeium-csrf-token: {SECRET}")),
        "{reqs:?}"
    );
    // and the text says it sends the variable's token to a CLI root
    let (_, stdout, _) = doctor(
        home.path(),
        &store,
        false,
        &[
            ("ANTIGRAVITY_DAEMON_URL", &rec.url()),
            ("ANTIGRAVITY_CSRF_TOKEN", SECRET),
        ],
    );
    assert!(
        stdout.contains("csrf: found ($ANTIGRAVITY_CSRF_TOKEN), sent (agy's CLI daemon is launched without a token)"),
        "{stdout}"
    );
    // without the variable, a CLI root has no csrf line and no token goes
    let (_, stdout, _) = doctor(
        home.path(),
        &store,
        false,
        &[("ANTIGRAVITY_DAEMON_URL", &rec.url())],
    );
    assert!(!stdout.contains("csrf:"), "{stdout}");
    assert!(stdout.contains("daemon: reachable"), "{stdout}");
}

/// The simulated IDE daemon answers a request without its token as §4.1
/// says agy does (an HTTP error with a JSON `message`), and doctor finds it
/// reachable with the token of main.log, sent.
#[test]
fn the_simulated_ide_daemon_is_reachable_and_gets_its_token() {
    let (home, store) = store("sim", "ide");
    let logs = logs(home.path());
    let sim = ide_sim(&store, &logs);
    // the token-less answer: 401 with a JSON object holding a string message
    let resp = reqwest::blocking::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(format!(
            "{}/exa.language_server_pb.LanguageServerService/GetCascadeTrajectory",
            sim.url()
        ))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    let body: Value = serde_json::from_slice(&resp.bytes().unwrap()).unwrap();
    assert!(body["message"].is_string(), "{body}");

    let (code, v) = doctor_json(home.path(), &store, &[]);
    let r = &v["roots"][0];
    assert_eq!(r["surface"], "ide", "{v:#}");
    assert_eq!(r["daemon"]["state"], "reachable", "{v:#}");
    assert_eq!(r["daemon"]["reachable"], true, "{v:#}");
    assert_eq!(r["csrf"], true, "{v:#}");
    assert_eq!(r["csrfToken"]["sent"], true, "{v:#}");
    assert!(
        r["csrfToken"]["from"]
            .as_str()
            .unwrap()
            .contains("main.log"),
        "{v:#}"
    );
    assert_eq!(code, 1, "missing sidecars only: {v:#}");
    let (_, stdout, _) = doctor(home.path(), &store, false, &[]);
    assert!(stdout.contains("daemon: reachable"), "{stdout}");
    assert!(stdout.contains("csrf: found ("), "{stdout}");
    assert!(stdout.contains("main.log"), "{stdout}");
    assert!(stdout.contains("), sent"), "{stdout}");
}

/// A main.log whose newest token holds a control character: refused and
/// named (the log), never "found", never sent (no request at all is made
/// with it: the header could not carry it); sync refuses it too, naming
/// the log.
#[test]
fn a_main_log_token_with_control_characters_is_refused_and_named() {
    let (home, store) = store("badtoken", "ide");
    let logs = logs(home.path());
    let sim = ide_sim(&store, &logs);
    let _ = &sim;
    let main = logs.join("main.log");
    let mut text = std::fs::read_to_string(&main).unwrap();
    text.push_str("[2026-07-03 10:00:00.000] [info]  Spawning: /opt/ls --standalone --csrf_token ab\u{7}cd\u{1b}[2J --app_data_dir antigravity\n");
    std::fs::write(&main, text).unwrap();

    let (code, v) = doctor_json(home.path(), &store, &[]);
    let r = &v["roots"][0];
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(r["csrf"], false, "{v:#}");
    assert_eq!(r["csrfToken"]["state"], "refused", "{v:#}");
    assert_eq!(r["csrfToken"]["sent"], false, "{v:#}");
    let error = r["csrfToken"]["error"].as_str().unwrap();
    assert!(
        error.contains(&main.display().to_string()) && error.contains("U+0007"),
        "{error}"
    );
    // the daemon wants a token: without one, it refuses (named, not reachable-and-found)
    assert_eq!(r["daemon"]["state"], "unauthorized", "{v:#}");
    let (_, stdout, _) = doctor(home.path(), &store, false, &[]);
    assert!(stdout.contains("csrf: refused: "), "{stdout}");
    assert!(stdout.contains("main.log"), "{stdout}");
    assert!(!stdout.contains("csrf: found"), "{stdout}");
    // no raw control character reaches the terminal
    assert!(
        !stdout.contains('\u{7}') && !stdout.contains('\u{1b}'),
        "{stdout:?}"
    );

    // sync refuses it where it reads it, naming the log
    let id = std::fs::read_dir(store.join("conversations"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .find(|n| n.ends_with(".db"))
        .unwrap();
    let o = bin()
        .env("HOME", home.path())
        .env_remove("XDG_CONFIG_HOME")
        .args(["sync", "--root"])
        .arg(&store)
        .arg(store.join("conversations").join(&id))
        .output()
        .unwrap();
    let text = output_text(&o);
    assert_ne!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("main.log") && text.contains("not a plain printable"),
        "{text}"
    );
}

/// `$ANTIGRAVITY_CSRF_TOKEN` with whitespace or a control character is
/// refused and named in doctor; `sync` refuses it as a usage error.
#[test]
fn a_malformed_token_variable_is_refused_and_named() {
    let (home, store) = store("badenv", "cli");
    let rec = Recorder::start(http(
        "404 Not Found",
        "application/json",
        r#"{"message":"conversation not found"}"#,
    ));
    for bad in ["two words", "line\nbreak", "bell\u{7}", "tab\t"] {
        let (code, v) = doctor_json(
            home.path(),
            &store,
            &[
                ("ANTIGRAVITY_DAEMON_URL", &rec.url()),
                ("ANTIGRAVITY_CSRF_TOKEN", bad),
            ],
        );
        let t = &v["roots"][0]["csrfToken"];
        assert_eq!(code, 1, "{v:#}");
        assert_eq!(t["state"], "refused", "{bad:?}: {v:#}");
        assert_eq!(t["sent"], false, "{v:#}");
        assert!(
            t["error"]
                .as_str()
                .unwrap()
                .starts_with("$ANTIGRAVITY_CSRF_TOKEN: not a plain printable CSRF token"),
            "{v:#}"
        );
        assert_eq!(rec.token_seen().0, 0, "{:?}", rec.requests());
    }
    let o = bin()
        .env("HOME", home.path())
        .env_remove("XDG_CONFIG_HOME")
        .env("ANTIGRAVITY_CSRF_TOKEN", "line\nbreak")
        .env("ANTIGRAVITY_DAEMON_URL", rec.url())
        .args(["sync", "--root"])
        .arg(&store)
        .arg("00000000-0000-0000-0000-000000000000")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    assert_eq!(rec.token_seen().0, 0, "{:?}", rec.requests());
}

/// Each malformed pinned `$ANTIGRAVITY_DAEMON_URL` is a usage error (exit
/// 2) in doctor, with the message sync gives, never "not running".
#[test]
fn a_malformed_pinned_url_is_a_usage_error_as_in_sync() {
    let (home, store) = store("badurl", "cli");
    let id = std::fs::read_dir(store.join("conversations"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .find(|n| n.ends_with(".db"))
        .unwrap();
    for bad in [
        "127.0.0.1:4100",
        "http://127.0.0.1:99999",
        "http://127.0.0.1:4100/path",
        "http://user:pw@127.0.0.1:4100",
        "ftp://127.0.0.1:4100",
        "http://127.0.0.1:4100\n",
        "http://127.0.0.1:41\n00",
    ] {
        let (code, _, text) = doctor(
            home.path(),
            &store,
            false,
            &[("ANTIGRAVITY_DAEMON_URL", bad)],
        );
        assert_eq!(code, 2, "{bad:?}: {text}");
        assert!(!text.contains("not running"), "{bad:?}: {text}");
        let said = |t: &str| {
            t.lines()
                .find_map(|l| l.split_once("usage error: ").map(|(_, m)| m.to_string()))
                .unwrap_or_else(|| panic!("{bad:?}: no usage error in {t}"))
        };
        let doctor_says = said(&text);
        assert!(
            doctor_says.starts_with("$ANTIGRAVITY_DAEMON_URL: "),
            "{bad:?}: {doctor_says}"
        );
        let o = bin()
            .env("HOME", home.path())
            .env_remove("XDG_CONFIG_HOME")
            .env("ANTIGRAVITY_DAEMON_URL", bad)
            .args(["sync", "--root"])
            .arg(&store)
            .arg(store.join("conversations").join(&id))
            .output()
            .unwrap();
        let sync_text = output_text(&o);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {sync_text}");
        assert_eq!(said(&sync_text), doctor_says, "{bad:?}");
    }
}

/// The IDE's token is read from main.log whether language_server.log is
/// missing or holds only the HTTPS (gRPC) line: the daemon is not running,
/// and the token is found.
#[test]
fn main_log_is_read_without_a_usable_language_server_log() {
    let (home, store) = store("mainlog", "ide");
    let logs = logs(home.path());
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(
        logs.join("main.log"),
        "[2026-07-02 22:12:10.821] [info]  Spawning: /opt/ls --standalone --csrf_token 6f1c2a9e-1b7d-4c4e-9a51-2f0c5d7e8b13 --app_data_dir antigravity\n",
    )
    .unwrap();
    let https_only = "I0702 22:12:11.004 server.go:1] Language server listening on random port at 41234 for HTTPS (gRPC)\n";
    for server_log in [None, Some(https_only)] {
        if let Some(t) = server_log {
            std::fs::write(logs.join("language_server.log"), t).unwrap();
        }
        let (_, v) = doctor_json(home.path(), &store, &[]);
        let r = &v["roots"][0];
        assert_eq!(r["daemon"]["state"], "not running", "{server_log:?}: {v:#}");
        assert_eq!(r["csrf"], true, "{server_log:?}: {v:#}");
        assert_eq!(r["csrfToken"]["state"], "found", "{v:#}");
        assert_eq!(r["csrfToken"]["sent"], false, "{v:#}");
        let (_, stdout, _) = doctor(home.path(), &store, false, &[]);
        assert!(stdout.contains("csrf: found ("), "{server_log:?}: {stdout}");
        assert!(!stdout.contains("csrf: not found"), "{stdout}");
    }
}

/// `daemon-sim --ide --csrf-token` with whitespace or a newline is a usage
/// error (exit 2): it could not be written to main.log and read back.
#[test]
fn daemon_sim_refuses_a_token_with_whitespace() {
    let (home, store) = store("simtoken", "cli");
    for bad in ["a b", "ab\n", "\tab", "a\u{7}b"] {
        // were the token accepted, the simulated daemon would announce it
        // in the temporary home's logs and stop at once, never elsewhere
        let o = Command::new(env!("CARGO_BIN_EXE_agy-audit"))
            .env("HOME", home.path())
            .env_remove("XDG_CONFIG_HOME")
            .args(["daemon-sim", "--ide", "--duration", "0", "--ide-logs"])
            .arg(logs(home.path()))
            .arg("--store")
            .arg(&store)
            .args(["--csrf-token", bad])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", output_text(&o));
        assert!(
            output_text(&o).contains("not a plain printable CSRF token"),
            "{}",
            output_text(&o)
        );
    }
}
