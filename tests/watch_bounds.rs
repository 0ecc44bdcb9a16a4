//! The bounds of `watch` and of `corpus generate --home` (issue 45 item 4):
//!
//! - `--interval` under its documented minimum (1s) is a usage error (exit
//!   2), 0s above all (it polled in a busy loop);
//! - the state folder for `doctor` is never under a store root: a
//!   `$XDG_STATE_HOME` inside a watched root (directly, through a link, or
//!   through `missing/..`) refuses the watch before it writes anything; a
//!   root inside the state folder is fine;
//! - with `--metadata-bound 0s` (a native check at every poll) a refused
//!   conversation is logged once per streak, not once per poll, and its
//!   repeats do not hold off the idle timeout;
//! - `corpus generate --home H --force` judges both roots before writing
//!   either: a real store at the IDE root leaves H exactly as it was.
//!
//! No timing is asserted: runs end by `--max-polls` or the idle timeout,
//! each under a generous deadline.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]
#![cfg(unix)]

mod common;

use common::{bin, output_text, small_store, start_sim, tree, truth_verdicts, wait_with_deadline};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `agy-audit watch --root ROOT` with its state under `state` (never the
/// user's), HOME pointed into the test's folder.
fn watch(home: &Path, state: &Path, root: &Path) -> Command {
    let mut c = bin();
    c.env("HOME", home)
        .env("XDG_STATE_HOME", state)
        .env_remove("XDG_CONFIG_HOME")
        .args(["watch", "--root"])
        .arg(root);
    c
}

/// Runs `c` to its end under a generous deadline (a watch that would not
/// end fails the test instead of hanging it): exit code and its output.
fn bounded(c: &mut Command, what: &str) -> (Option<i32>, String) {
    let out = tempfile::tempdir().unwrap();
    let (o, e) = (out.path().join("out"), out.path().join("err"));
    let mut child = c
        .stdout(std::fs::File::create(&o).unwrap())
        .stderr(std::fs::File::create(&e).unwrap())
        .spawn()
        .unwrap();
    let status = wait_with_deadline(&mut child, 120, what);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&std::fs::read(&o).unwrap()),
        String::from_utf8_lossy(&std::fs::read(&e).unwrap())
    );
    (status.code(), text)
}

/// Every file under `dir` with the SHA-256 of its bytes, and every folder
/// (what `tree` leaves out): a tree's state, short enough to print.
fn state_of(dir: &Path) -> (Vec<(PathBuf, String)>, Vec<PathBuf>) {
    let files = tree(dir)
        .into_iter()
        .map(|(p, b)| (p, agy_audit::util::sha256_tagged(&b)))
        .collect();
    (files, folders(dir))
}

/// Every folder under `dir`.
fn folders(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_dir())
        .map(|e| e.path().to_path_buf())
        .collect();
    v.sort();
    v
}

#[test]
fn an_interval_under_one_second_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path(), 2, 3, 0.0, 0.05);
    let state = dir.path().join("state");
    let before = state_of(&store);
    for short in ["0", "0s", "500ms", "999ms", "0.5"] {
        let (code, text) = bounded(
            watch(dir.path(), &state, &store).args(["--interval", short]),
            &format!("watch --interval {short}"),
        );
        assert_eq!(code, Some(2), "--interval {short}: {text}");
        assert!(
            text.contains("--interval") && text.contains("at least 1s"),
            "--interval {short}: {text}"
        );
    }
    assert_eq!(state_of(&store), before, "nothing written");
    assert!(!state.exists(), "no state written");
    // the minimum itself is accepted (one pass; no daemon: exit 1, not 2)
    let o = watch(dir.path(), &state, &store)
        .args(["--interval", "1s", "--once"])
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(2), "{}", output_text(&o));
    // the help says so
    let help = bin().args(["watch", "--help"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("at least 1s"),
        "{}",
        output_text(&help)
    );
}

#[test]
fn a_state_folder_inside_a_watched_root_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let store = small_store(&base, 2, 4, 0.0, 0.05);
    std::os::unix::fs::symlink(&store, base.join("link")).unwrap();
    let before = state_of(&store);
    for (what, state) in [
        ("inside", store.join("state")),
        ("in conversations/", store.join("conversations")),
        ("through a link", base.join("link").join("state")),
        ("through missing/..", base.join("missing/../store/s")),
    ] {
        for extra in [&["--once"][..], &["--interval", "1s", "--max-polls", "1"]] {
            let (code, text) = bounded(
                watch(&base, &state, &store).args(extra),
                &format!("watch {what} {extra:?}"),
            );
            assert_eq!(code, Some(2), "{what} {extra:?}: {text}");
            assert!(
                text.contains("is inside the store root")
                    && text.contains(&store.display().to_string()),
                "{what}: names both paths: {text}"
            );
            assert_eq!(state_of(&store), before, "{what}: untouched");
        }
    }
    assert!(!base.join("missing").exists());

    // the state folder equal to the root: $XDG_STATE_HOME/agy-audit is it
    let x = base.join("x");
    std::fs::create_dir_all(&x).unwrap();
    let root = x.join("agy-audit");
    std::fs::rename(&store, &root).unwrap();
    let before = state_of(&root);
    let o = watch(&base, &x, &root).arg("--once").output().unwrap();
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("is inside the store root"), "{text}");
    assert_eq!(state_of(&root), before);

    // a root inside the state folder is fine, and the state is written there
    let st = base.join("st");
    let inner = st.join("agy-audit").join("store");
    std::fs::create_dir_all(inner.parent().unwrap()).unwrap();
    std::fs::rename(&root, &inner).unwrap();
    let o = watch(&base, &st, &inner)
        .args(["--interval", "1s", "--max-polls", "1"])
        .output()
        .unwrap();
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(!text.contains("inside the store root"), "{text}");
    let states: Vec<_> = std::fs::read_dir(st.join("agy-audit"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("watch-"))
        .collect();
    assert_eq!(states.len(), 1, "{text}");
}

/// The ids of the truth's refused conversations (unknown or incomplete).
fn refused_ids(store: &Path) -> Vec<String> {
    let mut v: Vec<String> = truth_verdicts(store)
        .into_iter()
        .filter(|(_, (verdict, _))| verdict == "unknown" || verdict == "incomplete")
        .map(|(id, _)| id)
        .collect();
    v.sort();
    v
}

#[test]
fn a_refused_conversation_is_logged_once_per_streak_at_metadata_bound_zero() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path(), 8, 11, 0.5, 0.05);
    let refused = refused_ids(&store);
    assert!(!refused.is_empty(), "the store holds refused conversations");
    let sim = start_sim(&store, &["--no-fault-file"]);
    let state = dir.path().join("state");
    let polls = 4;
    let (code, log) = bounded(
        watch(dir.path(), &state, &store)
            .args(["--daemon-url", &sim.url])
            .args(["--interval", "1s", "--metadata-bound", "0s"])
            .args(["--max-polls", &polls.to_string()]),
        "watch --max-polls",
    );
    assert_eq!(code, Some(0), "{log}");
    assert!(
        log.contains(&format!("stopped after {polls} polls")),
        "{log}"
    );
    for id in &refused {
        let lines = log
            .lines()
            .filter(|l| l.starts_with(&format!("watch: checked {id} ")))
            .count();
        assert_eq!(lines, 1, "{id}: logged once over {polls} polls\n{log}");
    }
    let passes = log
        .lines()
        .filter(|l| l.starts_with("watch: pass "))
        .count();
    assert_eq!(passes, 1, "repeated refusals are no news\n{log}");

    // the repeats do not hold off the idle timeout (as a refusal judged from
    // unchanged metadata does not)
    let (code, log) = bounded(
        watch(dir.path(), &state, &store)
            .args(["--daemon-url", &sim.url])
            .args(["--interval", "1s", "--metadata-bound", "0s"])
            .args(["--idle-timeout", "2s"]),
        "watch --idle-timeout 2s with refusals",
    );
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("watch: idle for 2s"), "{log}");
}

#[test]
fn home_force_judges_both_roots_before_writing_either() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let generate = |seed: &str, force: bool| {
        let mut c = bin();
        c.args(["corpus", "generate", "--home"]).arg(&home).args([
            "--conversations",
            "20",
            "--scale",
            "0.05",
            "--seed",
            seed,
        ]);
        if force {
            c.arg("--force");
        }
        c.output().unwrap()
    };
    let o = generate("1", false);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    // the IDE root holds a conversation the generator never wrote: a real store
    let ide = home.join(agy_corpus::corpus::HOME_IDE_ROOT);
    let mine = ide
        .join("conversations")
        .join("0b7e1f7e-0000-4000-8000-000000000001.pb");
    std::fs::write(&mine, b"a conversation of the user's").unwrap();
    let before = state_of(&home);
    // another seed: a replaced CLI root would differ
    let o = generate("2", true);
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains(&mine.display().to_string()), "{text}");
    assert_eq!(
        state_of(&home),
        before,
        "nothing under HOME changed\n{text}"
    );

    // without --force: a non-empty IDE root refuses, and the absent CLI
    // root is not created
    let cli = home.join(agy_corpus::corpus::HOME_CLI_ROOT);
    std::fs::remove_dir_all(&cli).unwrap();
    let before = state_of(&home);
    let o = generate("2", false);
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("is not empty"), "{text}");
    assert!(!cli.exists(), "{text}");
    assert_eq!(state_of(&home), before);

    // once the user's file is gone, --force replaces both roots
    std::fs::remove_file(&mine).unwrap();
    let o = generate("2", true);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(cli.join(".truth/families.json").is_file());
}
