//! `agy-audit watch` on the generated two-root home (issue 35 items 1-3),
//! served by the simulated CLI daemon and the simulated IDE daemon:
//!
//! - `--once` syncs every conversation; a file at a sidecar path that is not
//!   a trajectory sidecar is left alone byte for byte (exit 1: that
//!   conversation has no evidence); another reader's sidecar (no
//!   attestation) is replaced keeping its other `agyReader` members; an
//!   attestation minted under another profile is re-verified; a legacy
//!   source rewritten with its mtime restored is re-verified;
//! - a long-running watch catches a content change with the mtime restored
//!   at once (ctime moved, the 10-minute bound has not passed), logs a killed
//!   daemon once per failure streak and `recovered` when it is back (on a
//!   new port, found again in cli.log), `doctor` reports it running, and
//!   SIGTERM drains it (exit 0);
//! - every source is byte-identical after, apart from the changes the test
//!   makes itself.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::source::legacy::{decrypt, encrypt, LegacyKey};
use agy_corpus::corpus::{HOME_CLI_ROOT, HOME_IDE_ROOT};
use common::{
    bin, generated_home, home_cli_sim, home_ide_sim, home_source_digests, output_text, root_ids,
};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn in_home(home: &Path) -> Command {
    let mut c = bin();
    c.env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_STATE_HOME")
        .env_remove("ANTIGRAVITY_CLI_ROOT")
        .env_remove("ANTIGRAVITY_DAEMON_URL")
        .env_remove("ANTIGRAVITY_CSRF_TOKEN");
    c
}

/// A legacy `.pb` no `.db` shadows.
fn lone_pb(root: &Path) -> PathBuf {
    let db = root_ids(root, "db");
    let id = root_ids(root, "pb")
        .into_iter()
        .find(|i| !db.contains(i))
        .expect("a legacy .pb without a .db");
    root.join("conversations").join(format!("{id}.pb"))
}

/// Re-seals a legacy source under another nonce (same plaintext, same size,
/// new bytes) and sets its modification time back.
fn reseal_keeping_mtime(pb: &Path, nonce: u8) {
    let bytes = std::fs::read(pb).unwrap();
    let mtime = std::fs::metadata(pb).unwrap().modified().unwrap();
    let key = LegacyKey::default();
    let plain = decrypt(pb, &bytes, &key).unwrap().unwrap();
    let sealed = encrypt(&plain, &key, [nonce; 12]);
    assert_eq!(sealed.len(), bytes.len());
    assert_ne!(sealed, bytes);
    std::fs::write(pb, &sealed).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(pb).unwrap();
    f.set_times(std::fs::FileTimes::new().set_modified(mtime))
        .unwrap();
    drop(f);
    assert_eq!(std::fs::metadata(pb).unwrap().modified().unwrap(), mtime);
}

fn sidecar(source: &Path) -> PathBuf {
    let stem = source.file_stem().unwrap().to_string_lossy().into_owned();
    source.with_file_name(format!("{stem}.trajectory.json"))
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn once(home: &Path) -> (i32, String) {
    let out = in_home(home).args(["watch", "--once"]).output().unwrap();
    (out.status.code().unwrap_or(-1), output_text(&out))
}

#[test]
fn once_syncs_refreshes_other_readers_and_other_profiles_and_leaves_foreign_files_alone() {
    let (home, _) = generated_home("watch_once_home", 21, 0.0);
    let cli = home.join(HOME_CLI_ROOT);
    let ide = home.join(HOME_IDE_ROOT);
    let (cli_daemon, ide_daemon) = (home_cli_sim(&home), home_ide_sim(&home));
    let before = home_source_digests(&home);

    // a file of the user's at one conversation's sidecar path
    let foreign_src = cli
        .join("conversations")
        .join(format!("{}.db", root_ids(&cli, "db")[0]));
    let foreign = sidecar(&foreign_src);
    std::fs::write(&foreign, b"my notes, not a sidecar\n").unwrap();

    let (code, text) = once(&home);
    assert_eq!(code, 1, "a conversation is left without evidence\n{text}");
    assert!(
        text.contains(&format!("refusing {}", foreign.display())),
        "{text}"
    );
    assert!(text.contains("left alone, never overwritten"), "{text}");
    assert_eq!(
        std::fs::read(&foreign).unwrap(),
        b"my notes, not a sidecar\n"
    );
    assert!(text.contains("watch: synced "), "{text}");
    assert!(text.contains("watch: wrote "), "{text}");
    assert!(
        text.contains(
            "verified-source-only (verified except declared source-only fields absent from RPC)"
        ),
        "synced and wrote lines carry the source-only reason\n{text}"
    );
    assert_eq!(home_source_digests(&home), before);
    let mut all = Vec::new();
    for root in [&cli, &ide] {
        for id in root_ids(root, "db").into_iter().chain(root_ids(root, "pb")) {
            let src = ["db", "pb"]
                .iter()
                .map(|e| root.join("conversations").join(format!("{id}.{e}")))
                .find(|p| p.exists())
                .unwrap();
            all.push(src);
        }
    }
    for src in &all {
        if *src == foreign_src {
            continue;
        }
        let doc = read_json(&sidecar(src));
        assert!(
            doc["agyReader"]["completeness"]["verdict"]
                .as_str()
                .unwrap()
                .starts_with("verified"),
            "{}",
            src.display()
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(sidecar(src))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    // a second pass: every sidecar holds, nothing is written
    let stamps: Vec<_> = all
        .iter()
        .filter(|s| **s != foreign_src)
        .map(|s| std::fs::read(sidecar(s)).unwrap())
        .collect();
    let (code, text) = once(&home);
    assert_eq!(code, 1, "{text}");
    assert!(!text.contains("watch: synced "), "{text}");
    let again: Vec<_> = all
        .iter()
        .filter(|s| **s != foreign_src)
        .map(|s| std::fs::read(sidecar(s)).unwrap())
        .collect();
    assert_eq!(stamps, again);

    // another reader's sidecar (no attestation, its own agyReader member);
    // an attestation minted under another profile; a legacy source
    // rewritten with its mtime restored
    let other = sidecar(
        &ide.join("conversations")
            .join(format!("{}.db", root_ids(&ide, "db")[0])),
    );
    let mut doc = read_json(&other);
    doc["agyReader"] = serde_json::json!({"otherReader": {"seen": true}});
    std::fs::write(&other, serde_json::to_vec(&doc).unwrap()).unwrap();
    let old_profile = sidecar(
        &ide.join("conversations")
            .join(format!("{}.db", root_ids(&ide, "db")[1])),
    );
    let mut doc = read_json(&old_profile);
    doc["agyReader"]["completeness"]["profile"] = "sqlite-v1-format0-agy-1.3.0-19be6af38f7b".into();
    std::fs::write(&old_profile, serde_json::to_vec(&doc).unwrap()).unwrap();
    let pb = lone_pb(&ide);
    let pb_digest = std::fs::read(sidecar(&pb))
        .map(|b| read_json_bytes(&b))
        .unwrap()["agyReader"]["completeness"]["sourceDigest"]
        .clone();
    reseal_keeping_mtime(&pb, 77);
    let before = home_source_digests(&home);

    let (code, text) = once(&home);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("was stale: a sidecar without an attestation (another reader's)"),
        "{text}"
    );
    assert!(
        text.contains(
            "was stale: attested under another profile (sqlite-v1-format0-agy-1.3.0-19be6af38f7b)"
        ),
        "{text}"
    );
    assert!(
        text.contains("was stale: the source changed since the attestation"),
        "{text}"
    );
    let doc = read_json(&other);
    assert_eq!(doc["agyReader"]["otherReader"]["seen"], true, "kept");
    assert!(doc["agyReader"]["completeness"]["verdict"]
        .as_str()
        .unwrap()
        .starts_with("verified"));
    let doc = read_json(&old_profile);
    assert_ne!(
        doc["agyReader"]["completeness"]["profile"],
        "sqlite-v1-format0-agy-1.3.0-19be6af38f7b"
    );
    let doc = read_json(&sidecar(&pb));
    assert_ne!(doc["agyReader"]["completeness"]["sourceDigest"], pb_digest);
    assert_eq!(
        std::fs::read(&foreign).unwrap(),
        b"my notes, not a sidecar\n"
    );
    assert_eq!(home_source_digests(&home), before);
    cli_daemon.stop();
    ide_daemon.stop();
}

fn read_json_bytes(b: &[u8]) -> Value {
    serde_json::from_slice(b).unwrap()
}

/// Lines of a child's standard error, as they come.
struct Log {
    rx: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Log {
    /// Waits (at most a minute) for a line containing `want`; returns it.
    fn wait_for(&mut self, want: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(want) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no line with {want:?} within a minute:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// Everything logged until now (and for `settle` more).
    fn drain(&mut self, settle: Duration) {
        std::thread::sleep(settle);
        while let Ok(line) = self.rx.try_recv() {
            self.seen.push(line);
        }
    }

    fn count(&self, want: &str) -> usize {
        self.seen.iter().filter(|l| l.contains(want)).count()
    }
}

#[test]
fn a_running_watch_catches_ctime_recovers_a_killed_daemon_and_drains_on_sigterm() {
    let (home, _) = generated_home("watch_loop_home", 21, 0.0);
    let cli = home.join(HOME_CLI_ROOT);
    let (cli_daemon, ide_daemon) = (home_cli_sim(&home), home_ide_sim(&home));
    let mut child = in_home(&home)
        .args(["watch", "--interval", "1s", "--idle-timeout", "5m"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            if tx.send(line.unwrap_or_default()).is_err() {
                break;
            }
        }
    });
    let mut log = Log {
        rx,
        seen: Vec::new(),
    };
    let first = log.wait_for("watch: pass 1:");
    assert!(
        first.contains("0 pending"),
        "{first}\n{}",
        log.seen.join("\n")
    );

    // doctor sees the watcher
    let out = in_home(&home)
        .args(["doctor", "--json", "--root"])
        .arg(&cli)
        .output()
        .unwrap();
    let v: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", output_text(&out)));
    let state = v["roots"][0]["watch"].as_str().unwrap().to_string();
    assert!(
        state.starts_with(&format!("running (pid {}", child.id())),
        "{state}"
    );

    // a content change with the mtime restored, well within the 10-minute
    // bound: caught at once because ctime moved
    let pb = lone_pb(&cli);
    let id = pb.file_stem().unwrap().to_string_lossy().into_owned();
    let before = home_source_digests(&home);
    // past the first pass's second, so that even a filesystem keeping whole
    // seconds moves ctime
    std::thread::sleep(Duration::from_millis(1100));
    reseal_keeping_mtime(&pb, 91);
    let line = log.wait_for(&format!("watch: synced {id} "));
    assert!(
        line.contains("was stale: the source changed since the attestation"),
        "{line}"
    );
    log.wait_for(&format!("watch: wrote {}", sidecar(&pb).display()));

    // the CLI daemon killed: one line for the whole streak
    cli_daemon.stop();
    let victim = sidecar(
        &cli.join("conversations")
            .join(format!("{}.db", root_ids(&cli, "db")[0])),
    );
    std::fs::remove_file(&victim).unwrap();
    log.wait_for("watch: daemon of the cli root");
    log.drain(Duration::from_millis(1500));
    assert_eq!(
        log.count("unavailable"),
        1,
        "one line per failure streak\n{}",
        log.seen.join("\n")
    );
    assert!(!victim.exists());
    // back on another port: found again in cli.log
    let cli_daemon = home_cli_sim(&home);
    log.wait_for("recovered");
    log.wait_for(&format!("watch: wrote {}", victim.display()));
    assert!(victim.exists());

    // SIGTERM drains: exit 0
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        assert!(Instant::now() < deadline, "watch did not drain");
        std::thread::sleep(Duration::from_millis(50));
    };
    log.drain(Duration::from_millis(200));
    assert_eq!(code, Some(0), "{}", log.seen.join("\n"));
    assert_eq!(
        log.count("stopped by SIGTERM"),
        1,
        "{}",
        log.seen.join("\n")
    );
    let mut after = home_source_digests(&home);
    let mut expected = before;
    expected.remove(&pb);
    after.remove(&pb);
    assert_eq!(after, expected, "every source byte-identical");
    // and doctor no longer says running
    let out = in_home(&home)
        .args(["doctor", "--json", "--root"])
        .arg(&cli)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["roots"][0]["watch"], "unknown");
    cli_daemon.stop();
    ide_daemon.stop();
}
