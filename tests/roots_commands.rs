//! Several roots for every command that takes one conversation (issue 34
//! item 1): `sync` and `export-offline` take `--root` repeatedly and
//! resolve an id across the roots in order, each root with its own daemon
//! and token; "SQLite wins" for an explicit `X.pb` in both; a missing
//! default root is noted, a missing explicit one is a usage error. And the
//! daemon's refusals (item 2), from one place in the client: 401/403 an
//! authentication error naming the root without the body, 400/415 the wrong
//! listener, in sync, audit-sweep and doctor; the CSRF header only when a
//! token is known (a CLI daemon never gets one). Every source is
//! byte-identical after every command.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_corpus::corpus::{HOME_CLI_ROOT, HOME_IDE_ROOT};
use agy_corpus::sim::{DaemonSim, SimOptions};
use common::{
    bin, generated_home, home_cli_sim, home_ide_sim, home_source_digests, output_text, root_ids,
};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

fn in_home(home: &Path) -> Command {
    let mut c = bin();
    c.env("HOME", home).env_remove("XDG_CONFIG_HOME");
    c
}

fn run(mut c: Command) -> (i32, String, Vec<u8>) {
    let out = c.output().unwrap();
    (out.status.code().unwrap(), output_text(&out), out.stdout)
}

#[test]
fn sync_and_export_offline_resolve_ids_across_roots() {
    let (home, _) = generated_home("roots_commands_ids", 21, 0.0);
    let cli = home.join(HOME_CLI_ROOT);
    let ide = home.join(HOME_IDE_ROOT);
    let cli_sim = home_cli_sim(&home);
    let ide_sim = home_ide_sim(&home);
    let before = home_source_digests(&home);
    let cli_id = root_ids(&cli, "db")[1].clone();
    let ide_id = root_ids(&ide, "db")[1].clone();

    // --root repeated: the id is found in the second root, and synced with
    // that root's own daemon (the CLI's, no token) and sidecar; and the
    // IDE's id with its daemon and the token from the IDE's logs
    for (id, first, own) in [(&cli_id, &ide, &cli), (&ide_id, &cli, &ide)] {
        let mut c = in_home(&home);
        c.arg("sync")
            .arg(id)
            .arg("--root")
            .arg(first)
            .arg("--root")
            .arg(own);
        let (code, text, _) = run(c);
        assert_eq!(code, 0, "{text}");
        assert!(own
            .join("conversations")
            .join(format!("{id}.trajectory.json"))
            .is_file());
    }
    // an id that none of the given roots holds: a usage error naming them
    let mut c = in_home(&home);
    c.arg("sync").arg(&ide_id).arg("--root").arg(&cli);
    let (code, text, _) = run(c);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains(&cli.display().to_string()), "{text}");
    // $ANTIGRAVITY_CLI_ROOT pins one root
    let mut c = in_home(&home);
    c.env("ANTIGRAVITY_CLI_ROOT", &cli)
        .args(["export-offline", &ide_id]);
    let (code, text, _) = run(c);
    assert_eq!(code, 2, "{text}");
    // export-offline: without --root, the default roots in order
    let (code, text, ide_json) = run({
        let mut c = in_home(&home);
        c.args(["export-offline", &ide_id]);
        c
    });
    assert_eq!(code, 0, "{text}");
    let v: Value = serde_json::from_slice(&ide_json).unwrap();
    assert!(v.is_object(), "{v}");
    let (code, text, again) = run({
        let mut c = in_home(&home);
        c.args(["export-offline", &ide_id, "--root"])
            .arg(&cli)
            .arg("--root")
            .arg(&ide);
        c
    });
    assert_eq!(code, 0, "{text}");
    assert_eq!(again, ide_json, "the same source, the same bytes");
    // a missing explicit root is a usage error, even with the id elsewhere
    let (code, text, _) = run({
        let mut c = in_home(&home);
        c.args(["export-offline", &ide_id, "--root"])
            .arg(home.join("nope"))
            .arg("--root")
            .arg(&ide);
        c
    });
    assert_eq!(code, 2, "{text}");

    // "SQLite wins" for an explicit X.pb whose X.db exists: export-offline
    // and sync read the .db, and say so
    for root in [&cli, &ide] {
        let db = root_ids(root, "db");
        let shadowed = root_ids(root, "pb")
            .into_iter()
            .find(|i| db.contains(i))
            .expect("a .pb shadowed by its .db");
        let conv = root.join("conversations");
        let (code, text, from_pb) = run({
            let mut c = in_home(&home);
            c.arg("export-offline")
                .arg(conv.join(format!("{shadowed}.pb")));
            c
        });
        assert_eq!(code, 0, "{text}");
        assert!(text.contains("SQLite wins"), "{text}");
        let (code, text, from_db) = run({
            let mut c = in_home(&home);
            c.arg("export-offline")
                .arg(conv.join(format!("{shadowed}.db")));
            c
        });
        assert_eq!(code, 0, "{text}");
        assert_eq!(from_pb, from_db);
        // even with a --root naming the other root: the path names its own
        let other = if root == &cli { &ide } else { &cli };
        let (code, text, _) = run({
            let mut c = in_home(&home);
            c.arg("sync")
                .arg(conv.join(format!("{shadowed}.pb")))
                .arg("--root")
                .arg(other);
            c
        });
        assert_eq!(code, 0, "{text}");
        assert!(text.contains("SQLite wins"), "{text}");
        // the attestation is of the .db: --recheck of the .db agrees
        let (code, text, _) = run({
            let mut c = in_home(&home);
            c.arg("sync")
                .arg(conv.join(format!("{shadowed}.db")))
                .arg("--recheck");
            c
        });
        assert_eq!(code, 0, "{text}");
        assert!(text.starts_with("VERIFIED"), "{text}");
        // verify-capture: the captured answers are the .db's
        let views = root.join(".truth").join("daemon");
        let (code, text, _) = run({
            let mut c = in_home(&home);
            c.arg("verify-capture")
                .arg("--db")
                .arg(conv.join(format!("{shadowed}.pb")))
                .arg("--full")
                .arg(views.join(format!("{shadowed}.full.json")))
                .arg("--ordinary")
                .arg(views.join(format!("{shadowed}.ordinary.json")));
            c
        });
        assert_eq!(code, 0, "{text}");
        assert!(text.contains("SQLite wins"), "{text}");
    }
    assert_eq!(home_source_digests(&home), before);
    cli_sim.stop();
    ide_sim.stop();

    // a default root that does not exist is noted, not fatal
    let only_cli = home.join("only-cli");
    std::fs::create_dir_all(only_cli.join(".gemini")).unwrap();
    std::os::unix::fs::symlink(&cli, only_cli.join(HOME_CLI_ROOT)).unwrap();
    let (code, text, _) = run({
        let mut c = in_home(&only_cli);
        c.args(["export-offline", &cli_id]);
        c
    });
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("does not exist") && text.contains(HOME_IDE_ROOT),
        "{text}"
    );
    let (code, text, _) = run({
        let mut c = in_home(&only_cli);
        c.args(["list"]);
        c
    });
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("does not exist"), "{text}");
    // audit-sweep asks for its one root even when only one exists
    let (code, text, _) = run({
        let mut c = in_home(&only_cli);
        c.args(["audit-sweep", "--quiet", "--out"])
            .arg(home.join("sweep-unasked"));
        c
    });
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("this root exists:"), "{text}");
    assert!(text.contains("(cli)") && text.contains("--root"), "{text}");
    assert!(!home.join("sweep-unasked").exists());
    assert_eq!(home_source_digests(&home), before);
}

/// A daemon stand-in that answers every request with one status and body
/// and records each request's header names and the CSRF value.
struct Recorder {
    url: String,
    answer: Arc<Mutex<(u16, &'static str, String)>>,
    seen: Arc<Mutex<Vec<Option<String>>>>,
}

impl Recorder {
    fn start() -> Recorder {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://127.0.0.1:{}", l.local_addr().unwrap().port());
        let answer = Arc::new(Mutex::new((200u16, "application/json", "{}".to_string())));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (a, s) = (answer.clone(), seen.clone());
        std::thread::spawn(move || {
            for conn in l.incoming() {
                let Ok(mut conn) = conn else { continue };
                let Some((head, _)) = common::read_http_request(&mut conn) else {
                    continue;
                };
                let token = head
                    .lines()
                    .find_map(|l| l.strip_prefix("x-codeium-csrf-token:"))
                    .map(|v| v.trim().to_string());
                s.lock().unwrap().push(token);
                let (status, ct, body) = a.lock().unwrap().clone();
                let reply = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: {ct}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(reply.as_bytes());
            }
        });
        Recorder { url, answer, seen }
    }

    fn answer(&self, status: u16, ct: &'static str, body: &str) {
        *self.answer.lock().unwrap() = (status, ct, body.to_string());
        self.seen.lock().unwrap().clear();
    }

    fn tokens(&self) -> Vec<Option<String>> {
        self.seen.lock().unwrap().clone()
    }
}

#[test]
fn refusals_are_named_in_every_daemon_command_and_the_token_only_when_known() {
    let (home, _) = generated_home("roots_commands_refusals", 22, 0.0);
    let cli = home.join(HOME_CLI_ROOT);
    let ide = home.join(HOME_IDE_ROOT);
    let before = home_source_digests(&home);
    let cli_id = root_ids(&cli, "db")[0].clone();
    let rec = Recorder::start();
    let secret = "SECRET-BODY-4711";
    let sync = |root: &Path, id: &str, extra: &[&str]| {
        let mut c = in_home(&home);
        c.args([
            "sync",
            id,
            "--retries",
            "0",
            "--timeout",
            "5",
            "--daemon-url",
            &rec.url,
        ])
        .args(extra)
        .arg("--root")
        .arg(root);
        run(c)
    };
    let sweep = |root: &Path, out: &str| {
        let mut c = in_home(&home);
        c.args(["audit-sweep", "--quiet", "--retries", "0", "--timeout", "5"])
            .args(["--daemon-url", &rec.url, "--root"])
            .arg(root)
            .arg("--out")
            .arg(home.join(out));
        run(c)
    };
    let doctor = |root: &Path| {
        let mut c = in_home(&home);
        c.env("ANTIGRAVITY_DAEMON_URL", &rec.url)
            .args(["doctor", "--json", "--root"])
            .arg(root);
        let (code, text, stdout) = run(c);
        let v: Value = serde_json::from_slice(&stdout).unwrap_or_else(|_| panic!("{text}"));
        (code, v)
    };

    // 401 with a body: an authentication error naming the root, never the
    // body; the CLI root sent no token (none was known)
    for status in [401u16, 403] {
        rec.answer(
            status,
            "application/json",
            &format!("{{\"code\":\"unauthenticated\",\"message\":\"{secret}\"}}"),
        );
        // exit 1, an authentication error naming the root, never the body
        let refused = |code: i32, text: &str| {
            assert_eq!(code, 1, "{text}");
            assert!(text.contains("authentication error"), "{text}");
            assert!(
                text.contains(&format!("cli root {}", cli.display())),
                "{text}"
            );
            assert!(!text.contains(secret), "{text}");
        };
        let (code, text, _) = sync(&cli, &cli_id, &[]);
        refused(code, &text);
        assert!(!rec.tokens().is_empty());
        assert!(
            rec.tokens().iter().all(Option::is_none),
            "{:?}",
            rec.tokens()
        );
        let (code, text, _) = sweep(&cli, &format!("sweep-{status}"));
        refused(code, &text);
        let m: Value = serde_json::from_slice(
            &std::fs::read(home.join(format!("sweep-{status}/manifest.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(m["complete"], false);
        let (code, v) = doctor(&cli);
        assert_eq!(code, 1, "{v:#}");
        let d = &v["roots"][0]["daemon"];
        assert_eq!(d["state"], "unauthorized", "{v:#}");
        assert!(d["error"]
            .as_str()
            .unwrap()
            .contains("authentication error"));
        assert!(!v.to_string().contains(secret));
        assert!(rec.tokens().iter().all(Option::is_none));
    }

    // 400 without a Connect envelope, and 415: the wrong listener
    for (status, ct, body) in [
        (400u16, "application/grpc-web+proto", "\u{0}\u{0}"),
        (415, "text/plain", "unsupported"),
    ] {
        rec.answer(status, ct, body);
        let (code, text, _) = sync(&cli, &cli_id, &[]);
        assert_eq!(code, 1, "{text}");
        assert!(text.contains("wrong listener"), "{text}");
        let (code, text, _) = sweep(&cli, &format!("sweep-{status}"));
        assert_eq!(code, 1, "{text}");
        assert!(text.contains("wrong listener"), "{text}");
        let (code, v) = doctor(&cli);
        assert_eq!(code, 1, "{v:#}");
        assert_eq!(v["roots"][0]["daemon"]["state"], "wrong listener");
    }

    // a token given is sent, to any root
    rec.answer(401, "application/json", "{}");
    let (code, text, _) = sync(&cli, &cli_id, &["--csrf-token", "given-token"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("the CSRF token was refused"), "{text}");
    assert!(
        rec.tokens()
            .iter()
            .all(|t| t.as_deref() == Some("given-token")),
        "{:?}",
        rec.tokens()
    );

    // the IDE's simulated daemon refuses a request without its token: with
    // the token line gone from main.log, sync says no token was sent and
    // names the IDE root; with it, sync succeeds (the header was sent)
    let logs = home.join(".config/Antigravity/logs");
    let mut o = SimOptions::new(&ide);
    o.load_fault_file = false;
    o.ide_logs = Some(logs.clone());
    let sim = DaemonSim::start(o).unwrap();
    let main_log = logs.join("main.log");
    let with_token = std::fs::read(&main_log).unwrap();
    std::fs::write(&main_log, b"[2026-07-02 22:12:10.821] [info]  started\n").unwrap();
    let ide_id = root_ids(&ide, "db")[0].clone();
    let (code, text, _) = run({
        let mut c = in_home(&home);
        c.args(["sync", &ide_id]);
        c
    });
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("authentication error"), "{text}");
    assert!(text.contains("no CSRF token was sent"), "{text}");
    assert!(
        text.contains(&format!("ide root {}", ide.display())),
        "{text}"
    );
    assert!(!text.contains("missing x-codeium-csrf-token"), "{text}");
    std::fs::write(&main_log, &with_token).unwrap();
    let (code, text, _) = run({
        let mut c = in_home(&home);
        c.args(["sync", &ide_id]);
        c
    });
    assert_eq!(code, 0, "{text}");
    sim.stop();
    assert_eq!(home_source_digests(&home), before);
}

#[test]
fn list_shows_stored_titles_and_step_counts_without_the_trajectory() {
    let (home, _) = generated_home("roots_commands_list", 23, 0.0);
    let cli = home.join(HOME_CLI_ROOT);
    let ide = home.join(HOME_IDE_ROOT);
    let some = root_ids(&ide, "db")[2].clone();
    // agy's summaries index beside conversations/ (the generator writes
    // none; this one is made here, with the columns the index has)
    let idx = rusqlite::Connection::open(ide.join("conversation_summaries.db")).unwrap();
    idx.execute_batch(
        "CREATE TABLE conversation_summaries (conversation_id text PRIMARY KEY, title text, preview text, step_count integer);",
    )
    .unwrap();
    idx.execute(
        "INSERT INTO conversation_summaries VALUES (?1, 'Fix the flaky\ntest', 'p', 3)",
        [&some],
    )
    .unwrap();
    drop(idx);
    let before = home_source_digests(&home);
    let (code, text, stdout) = run({
        let mut c = in_home(&home);
        c.args(["list", "--json"]);
        c
    });
    assert_eq!(code, 0, "{text}");
    let rows: Vec<Value> = String::from_utf8(stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for r in &rows {
        let want = (r["id"] == some.as_str()).then_some("Fix the flaky\ntest");
        assert_eq!(r["title"].as_str(), want, "{r}");
        if r["format"] == "sqlite" {
            // the steps table's rows, as SQLite counts them
            let path = PathBuf::from(r["path"].as_str().unwrap());
            let image = std::fs::read(&path).unwrap();
            let wal = std::fs::read(format!("{}-wal", path.display())).unwrap_or_default();
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("c.db"), image).unwrap();
            if !wal.is_empty() {
                std::fs::write(dir.path().join("c.db-wal"), wal).unwrap();
            }
            let c = rusqlite::Connection::open(dir.path().join("c.db")).unwrap();
            let n: i64 = c
                .query_row("SELECT count(*) FROM steps", [], |r| r.get(0))
                .unwrap();
            assert_eq!(r["steps"].as_i64(), Some(n), "{r}");
        } else {
            assert!(r["steps"].is_null(), "{r}");
        }
    }
    let (code, text, stdout) = run({
        let mut c = in_home(&home);
        c.args(["list", "--root"]).arg(&ide);
        c
    });
    assert_eq!(code, 0, "{text}");
    let text = String::from_utf8(stdout).unwrap();
    let line = text.lines().find(|l| l.starts_with(&some)).unwrap();
    assert!(line.ends_with("  Fix the flaky test"), "{line}");
    assert!(text
        .lines()
        .filter(|l| !l.starts_with(&some))
        .all(|l| !l.contains("Fix the")));
    let _ = cli;
    assert_eq!(home_source_digests(&home), before);
}
