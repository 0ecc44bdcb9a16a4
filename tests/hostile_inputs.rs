//! Hostile inputs (issue 45, started): a special file where agy keeps a
//! log, or given as a listing, is refused at once, never waited on.
//! `mkfifo <root>/cli.log` used to hang `doctor` forever; now doctor, sync
//! and audit-sweep each answer within the deadline, naming the file. A
//! listing is read once: `-` is standard input.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]
#![cfg(unix)]

mod common;

use common::{bin, mkfifo, output_text, wait_with_deadline};
use std::process::Stdio;

/// Runs `c` to its end, failing the test past a minute (a command that
/// waits on a FIFO would never end): its exit code and its output.
fn within_a_minute(c: &mut std::process::Command) -> (Option<i32>, String) {
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_with_deadline(&mut child, 60, &format!("{c:?}"));
    let o = child.wait_with_output().unwrap();
    (status.code(), output_text(&o))
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
        let (code, text) = within_a_minute(bin().args(&args).env("HOME", dir.path()));
        assert_ne!(code, Some(0), "{args:?}: {text}");
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
        let (code, text) = within_a_minute(&mut c);
        assert_eq!(code, Some(1), "{args:?}: {text}");
        assert!(text.contains("a FIFO"), "{args:?}: {text}");
    }
}

/// Text from outside lands escaped for its place (issue 45 item 2): a root
/// path with a backtick and a newline, rules and step types with HTML and
/// headings put no heading, row or tag into report, format-audit and
/// audit-diff Markdown; a reason's ESC and NUL are shown, not sent, by
/// audit-qualify.
#[test]
fn outside_text_is_escaped_where_it_lands() {
    use serde_json::{json, Value};
    let (dir, store, sweep) = common::swept_store(24, 4501);
    // The store moves to a root whose name holds a backtick, a newline, a
    // heading and a tag, and the manifest names it (as a sweep of it would).
    let evil = dir
        .path()
        .join("r`\n# Injected <img src=x onerror=alert(1)>");
    std::fs::rename(&store, &evil).unwrap();
    let store = evil;
    let mut m = common::read_manifest(&sweep);
    m["root"] = json!(store.to_str().unwrap());
    let sessions = m["sessions"].as_array_mut().unwrap();
    sessions[0]["rules"] = json!(["rule\n# Injected <img src=y>"]);
    sessions[0]["stepTypes"] = json!({"T\n# Injected <img src=z>": 1});
    let refused = sessions
        .iter_mut()
        .find(|s| s["verdict"] == "unknown" && s["reasonClass"] != "unqualified-projection");
    let had_refused = refused.is_some();
    if let Some(s) = refused {
        let r = s["reason"].as_str().unwrap().to_string();
        s["reason"] = json!(format!("{r} \u{1b}[2J\u{0}"));
    }
    let m: Value = common::recounted(m);
    // A copy of the sweep folder holding the forged manifest (format-audit
    // reads the saved answers beside it).
    let forged = dir.path().join("forged");
    std::fs::create_dir_all(forged.join("corpus")).unwrap();
    for e in std::fs::read_dir(sweep.join("corpus")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), forged.join("corpus").join(e.file_name())).unwrap();
    }
    for f in ["shapes-ordinary.tsv", "shapes-full.tsv"] {
        if sweep.join(f).exists() {
            std::fs::copy(sweep.join(f), forged.join(f)).unwrap();
        }
    }
    std::fs::write(
        forged.join("manifest.json"),
        serde_json::to_vec_pretty(&m).unwrap(),
    )
    .unwrap();
    let fm = forged.join("manifest.json");
    let outputs = [
        (vec!["report".to_string(), fm.display().to_string()], None),
        (
            vec![
                "format-audit".into(),
                fm.display().to_string(),
                "--out".into(),
                dir.path().join("fa.md").display().to_string(),
            ],
            Some(dir.path().join("fa.md")),
        ),
        (
            vec![
                "audit-diff".into(),
                sweep.display().to_string(),
                fm.display().to_string(),
            ],
            None,
        ),
    ];
    for (args, file) in outputs {
        let o = bin().args(&args).output().unwrap();
        let md = match &file {
            Some(f) => std::fs::read_to_string(f)
                .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", output_text(&o))),
            None => String::from_utf8_lossy(&o.stdout).into_owned(),
        };
        assert!(!md.is_empty(), "{args:?}: {}", output_text(&o));
        // Inside a code span `<img` is text; outside one it would be a tag.
        assert!(
            !outside_code(&md).contains("<img"),
            "{args:?} wrote a tag:\n{md}"
        );
        assert!(
            !md.lines().any(|l| l.starts_with("# Injected")),
            "{args:?} wrote a heading:\n{md}"
        );
    }
    if had_refused {
        let o = bin()
            .args(["audit-qualify"])
            .arg(&fm)
            .args(["--root", store.to_str().unwrap()])
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            !out.contains('\u{1b}') && !out.contains('\u{0}'),
            "raw control characters: {out:?}"
        );
        assert!(out.contains("\\u{1b}[2J\\u{0}"), "{out}");
    }
}

/// `md` without its code spans (CommonMark: a run of n backticks up to the
/// next run of exactly n; a backslash escapes the next character).
fn outside_code(md: &str) -> String {
    let c: Vec<char> = md.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < c.len() {
        if c[i] == '\\' {
            out.push(c[i]);
            if let Some(&n) = c.get(i + 1) {
                out.push(n);
            }
            i += 2;
            continue;
        }
        if c[i] != '`' {
            out.push(c[i]);
            i += 1;
            continue;
        }
        let start = i;
        while i < c.len() && c[i] == '`' {
            i += 1;
        }
        let n = i - start;
        let mut j = i;
        let mut closed = None;
        while j < c.len() {
            if c[j] == '`' {
                let k = j;
                while j < c.len() && c[j] == '`' {
                    j += 1;
                }
                if j - k == n {
                    closed = Some(j);
                    break;
                }
            } else {
                j += 1;
            }
        }
        match closed {
            Some(end) => i = end,
            None => out.extend(&c[start..i]),
        }
    }
    out
}
