//! Hostile inputs (issue 45, started): a special file where agy keeps a
//! log is refused at once, never waited on. `mkfifo <root>/cli.log` used to
//! hang `doctor` forever; now doctor, sync and audit-sweep each answer
//! within the deadline, naming the file.

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
