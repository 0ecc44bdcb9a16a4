//! Hostile inputs (issue 45, started): a special file where agy keeps a
//! log, or given as a listing, is refused at once, never waited on.
//! `mkfifo <root>/cli.log` used to hang `doctor` forever; now doctor, sync
//! and audit-sweep each answer within the deadline, naming the file. A
//! listing is read once: `-` is standard input.

#![cfg(unix)]

mod common;

use common::{bin, output_text, wait_with_deadline};
use std::process::Stdio;

fn mkfifo(p: &std::path::Path) {
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: a plain mkfifo(3) on a path in a fresh temp folder.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn a_fifo_cli_log_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    common::generate_store(&store, &["--conversations", "20", "--scale", "0.1"]);
    let log = store.join("cli.log");
    std::fs::remove_file(&log).unwrap();
    mkfifo(&log);
    let root = store.to_str().unwrap();
    let out = dir.path().join("sweep");
    let id = std::fs::read_dir(store.join("conversations"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".db"))
        .unwrap()
        .trim_end_matches(".db")
        .to_string();
    let runs: Vec<Vec<&str>> = vec![
        vec!["doctor", "--root", root],
        vec![
            "audit-sweep",
            "--root",
            root,
            "--out",
            out.to_str().unwrap(),
        ],
        vec!["sync", "--root", root, &id],
    ];
    for args in runs {
        let mut child = bin()
            .args(&args)
            .env("HOME", dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let status = wait_with_deadline(&mut child, 60, &format!("{args:?}"));
        let o = child.wait_with_output().unwrap();
        let text = output_text(&o);
        assert_ne!(status.code(), Some(0), "{args:?}: {text}");
        assert!(
            text.contains("a FIFO") && text.contains("cli.log"),
            "{args:?} does not name the FIFO: {text}"
        );
    }
    // The FIFO is still a FIFO: nothing replaced it.
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&log)
        .unwrap()
        .file_type()
        .is_fifo());
}

#[test]
fn a_listing_is_read_once_and_a_fifo_listing_is_refused() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let listing = dir.path().join("shapes.tsv");
    std::fs::write(&listing, "a\tstring\nb\tnumber\n").unwrap();
    let o = bin()
        .args(["shapes", "digest"])
        .arg(&listing)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let from_file = String::from_utf8_lossy(&o.stdout)
        .split('\t')
        .next()
        .unwrap()
        .to_string();
    // `-`: standard input, read once, the same fingerprint.
    let mut child = bin()
        .args(["shapes", "digest", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"a\tstring\nb\tnumber\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with(&from_file),
        "{}",
        output_text(&o)
    );
    assert!(
        !from_file.ends_with("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    );
    // A FIFO: refused at once, named.
    let fifo = dir.path().join("fifo.tsv");
    mkfifo(&fifo);
    for args in [vec!["shapes", "digest"], vec!["shapes", "diff"]] {
        let mut c = bin();
        c.args(&args).arg(&fifo);
        if args[1] == "diff" {
            c.arg(&listing);
        }
        let mut child = c
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let status = wait_with_deadline(&mut child, 60, &format!("{args:?}"));
        let o = child.wait_with_output().unwrap();
        assert_eq!(status.code(), Some(1), "{args:?}: {}", output_text(&o));
        assert!(
            output_text(&o).contains("a FIFO"),
            "{args:?}: {}",
            output_text(&o)
        );
    }
}
