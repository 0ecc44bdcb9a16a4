//! The demo shows release day (issue 33 item 6): after the default sweep it
//! generates the store's next release, sweeps it, checks it against its own
//! ground truth, and prints and writes the audit-diff report naming the new
//! response shape entry. The first sweep's lines are those of a plain demo.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{bin, output_text};

#[test]
fn the_demo_sweeps_the_next_release_and_names_the_new_shape_entry() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    let o = bin()
        .args(["demo", "--quiet", "--conversations", "40", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let t = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("demo: verdicts agreeing with the ground truth: 40/40"),
        "{t}"
    );
    assert!(t.contains("release day: verdicts agreeing with the next release's ground truth: 40/40 (false verified: 0)"), "{t}");
    let diff_line = t
        .lines()
        .find(|l| l.contains("release day: audit-diff:"))
        .unwrap();
    for want in [
        "newly-refused=",
        "source-changed=",
        "appeared=1",
        "disappeared=1",
    ] {
        assert!(diff_line.contains(want), "{diff_line}");
    }
    // The one new member is the one entry the ordinary answers add (the
    // conversation that disappeared may take entries with it in a small
    // corpus); the full answers add none.
    let ordinary = t
        .lines()
        .find(|l| l.contains("ordinary response shapes:"))
        .unwrap();
    assert!(ordinary.contains(": 1 new entry,"), "{ordinary}");
    assert!(
        ordinary.contains("+steps.[].displayDensity string"),
        "{ordinary}"
    );
    let full = t
        .lines()
        .find(|l| l.contains("full response shapes:"))
        .unwrap();
    assert!(full.contains(": 0 new entries,"), "{full}");
    let report = std::fs::read_to_string(out.join("release-diff.md")).unwrap();
    assert!(report.contains("## Response shapes"), "{report}");
    assert!(
        report.contains("added `steps.[].displayDensity : string`"),
        "{report}"
    );
    // The same report as audit-diff of the two sweeps writes (exit 5: the
    // next release refused conversations that were verified).
    let o = bin()
        .arg("audit-diff")
        .arg(out.join("sweep"))
        .arg(out.join("sweep-next"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(5), "{}", output_text(&o));
    assert_eq!(String::from_utf8(o.stdout).unwrap(), report);
}

#[test]
fn no_release_day_skips_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    let o = bin()
        .args([
            "demo",
            "--quiet",
            "--no-release-day",
            "--conversations",
            "6",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let t = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(!t.contains("release day"), "{t}");
    assert!(!out.join("store-next").exists());
}
