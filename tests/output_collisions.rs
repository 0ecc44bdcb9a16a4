//! Outputs that collide are refused before anything is written or printed
//! (issue 45 item 4), through the real binary on a store swept against
//! `daemon-sim`: two outputs of one command that are one file (`audit-diff
//! --out F --junit F`, `report --out X.svg` beside its chart, `format-audit
//! --out X.json` beside its JSON) are a usage error (exit 2) naming both and
//! the path; an output that is one of the command's inputs (`--junit` onto
//! a manifest or a source, a derived output onto a saved answer) is refused
//! (exit 1) before the report or the rechecks reach standard output.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{bin, output_text as text};
use std::path::{Path, PathBuf};
use std::process::Output;

/// A generated store swept against daemon-sim, once for this file's tests:
/// (tempdir, store, sweep dir).
fn swept() -> &'static (tempfile::TempDir, PathBuf, PathBuf) {
    static SWEPT: std::sync::OnceLock<(tempfile::TempDir, PathBuf, PathBuf)> =
        std::sync::OnceLock::new();
    SWEPT.get_or_init(|| common::swept_store(8, 5))
}

fn run(args: &[&std::ffi::OsStr]) -> Output {
    bin().args(args).output().unwrap()
}

/// Every file under `dir` with its bytes, to show nothing changed.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    common::tree(dir)
}

/// A refusal of two outputs that are one file: exit 2, nothing on standard
/// output, the message naming both outputs and the path.
fn assert_outputs_collide(o: &Output, first: &str, second: &str, path: &Path) {
    assert_eq!(o.status.code(), Some(2), "{}", text(o));
    assert!(o.stdout.is_empty(), "nothing printed: {}", text(o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("usage error"), "{err}");
    assert!(err.contains(first) && err.contains(second), "{err}");
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("are the same file"), "{err}");
}

/// A refusal of an output that is an input: exit 1, nothing on standard
/// output, the message naming the output and the input.
fn assert_onto_input(o: &Output, output: &str, input: &str) {
    assert_eq!(o.status.code(), Some(1), "{}", text(o));
    assert!(o.stdout.is_empty(), "nothing printed: {}", text(o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(output) && err.contains(input), "{err}");
    assert!(err.contains("an input of this command"), "{err}");
}

/// `audit-diff MANIFEST MANIFEST EXTRA... [--force]`.
fn diff_of_itself(m: &Path, extra: &[&std::ffi::OsStr], force: bool) -> Output {
    let mut args: Vec<&std::ffi::OsStr> = vec!["audit-diff".as_ref(), m.as_os_str(), m.as_os_str()];
    args.extend_from_slice(extra);
    if force {
        args.push("--force".as_ref());
    }
    run(&args)
}

#[test]
fn audit_diff_refuses_out_and_junit_naming_one_file() {
    let (_d, _store, sweep) = swept();
    let m = sweep.join("manifest.json");
    let work = tempfile::tempdir().unwrap();
    let f = work.path().join("diff.md");
    // The same name, spelled twice or through a folder's `..`.
    let sub = work.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let spelled = sub.join("..").join("diff.md");
    for other in [&f, &spelled] {
        for force in [false, true] {
            let o = diff_of_itself(
                &m,
                &[
                    "--out".as_ref(),
                    f.as_os_str(),
                    "--junit".as_ref(),
                    other.as_os_str(),
                ],
                force,
            );
            assert_outputs_collide(&o, "--out", "--junit", other);
            assert!(!f.exists(), "nothing written");
        }
    }
    // An existing file under --force: left as it was.
    std::fs::write(&f, b"keep").unwrap();
    let o = diff_of_itself(
        &m,
        &[
            "--out".as_ref(),
            f.as_os_str(),
            "--junit".as_ref(),
            f.as_os_str(),
        ],
        true,
    );
    assert_outputs_collide(&o, "--out", "--junit", &f);
    assert_eq!(std::fs::read(&f).unwrap(), b"keep");
    // The accepted shape: two files, both written.
    let junit = work.path().join("diff.xml");
    let o = diff_of_itself(
        &m,
        &[
            "--out".as_ref(),
            f.as_os_str(),
            "--junit".as_ref(),
            junit.as_os_str(),
        ],
        true,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(std::fs::read_to_string(&f)
        .unwrap()
        .starts_with("# agy-audit release diff"));
    assert!(std::fs::read_to_string(&junit)
        .unwrap()
        .contains("<testsuite"));
}

#[test]
fn audit_diff_junit_onto_an_input_is_refused_before_the_report_is_printed() {
    let (_d, _store, sweep) = swept();
    let m = sweep.join("manifest.json");
    let before = snapshot(sweep);
    let listing = sweep.join("shapes-ordinary.tsv");
    assert!(listing.is_file());
    for (target, named) in [(&m, "NEW"), (&listing, "a shape listing of OLD")] {
        for force in [false, true] {
            let o = diff_of_itself(&m, &["--junit".as_ref(), target.as_os_str()], force);
            // OLD and NEW are one file here: the first input named is OLD's.
            let named = if named == "NEW" { "OLD" } else { named };
            assert_onto_input(&o, "--junit", named);
        }
    }
    assert_eq!(snapshot(sweep), before, "the sweep is untouched");
}

/// `COMMAND MANIFEST --out BESIDE` where `BESIDE` is the file the command
/// derives from `--out` (`what`): refused with and without `--force`,
/// nothing written, an existing file kept; then the accepted shape,
/// `--out ACCEPTED`, writes both (its exit code is returned for the
/// caller's own checks).
fn refuses_out_beside_its_own(command: &str, beside: &Path, what: &str, accepted: &Path) {
    let (_d, _store, sweep) = swept();
    let m = sweep.join("manifest.json");
    let with = |out: &Path, force: bool| {
        let mut args: Vec<&std::ffi::OsStr> = vec![
            command.as_ref(),
            m.as_os_str(),
            "--out".as_ref(),
            out.as_os_str(),
        ];
        if force {
            args.push("--force".as_ref());
        }
        run(&args)
    };
    for force in [false, true] {
        assert_outputs_collide(&with(beside, force), "--out", what, beside);
        assert!(!beside.exists(), "nothing written");
    }
    std::fs::write(beside, b"keep").unwrap();
    assert_outputs_collide(&with(beside, true), "--out", what, beside);
    assert_eq!(std::fs::read(beside).unwrap(), b"keep");
    let o = with(accepted, true);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(accepted.is_file());
}

#[test]
fn report_refuses_out_beside_its_own_chart() {
    let work = tempfile::tempdir().unwrap();
    let svg = work.path().join("report.svg");
    let md = work.path().join("report.md");
    refuses_out_beside_its_own("report", &svg, "the chart written beside --out", &md);
    // the accepted shape: the report and its chart beside it
    assert!(std::fs::read_to_string(&md).unwrap().contains("report.svg"));
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
}

#[test]
fn format_audit_refuses_out_beside_its_own_json() {
    let work = tempfile::tempdir().unwrap();
    let json = work.path().join("record.json");
    let md = work.path().join("record.md");
    refuses_out_beside_its_own(
        "format-audit",
        &json,
        "the JSON record written beside --out",
        &md,
    );
    // the accepted shape: the Markdown record and its JSON beside it
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).expect("the JSON record");
    assert!(record.is_object());
}

/// The JSON record beside `--out` is derived from it: an `--out` whose
/// `.json` sibling is an answer the sweep saved (which format-audit reads)
/// is refused, `--force` or not, and the answer left as it was.
#[test]
fn format_audit_never_writes_its_json_over_a_saved_answer() {
    let (_d, _store, sweep) = swept();
    let m = sweep.join("manifest.json");
    let before = snapshot(sweep);
    let manifest = common::read_manifest(sweep);
    let id = manifest["sessions"][0]["fileId"]
        .as_str()
        .unwrap()
        .to_string();
    let answer = sweep.join("corpus").join(format!("{id}.full.json"));
    assert!(answer.is_file());
    let out = sweep.join("corpus").join(format!("{id}.full.md"));
    let o = run(&[
        "format-audit".as_ref(),
        m.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
        "--force".as_ref(),
    ]);
    assert_onto_input(
        &o,
        "the JSON record written beside --out",
        "a saved full answer of the sweep",
    );
    assert!(!out.exists(), "nothing written");
    assert_eq!(snapshot(sweep), before, "the sweep is untouched");
}

#[test]
fn audit_qualify_junit_onto_an_input_is_refused_before_any_line() {
    let (_d, store, sweep) = swept();
    let m = sweep.join("manifest.json");
    let manifest = common::read_manifest(sweep);
    let db = manifest["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["format"] == "sqlite")
        .map(|s| {
            store
                .join("conversations")
                .join(format!("{}.db", s["fileId"].as_str().unwrap()))
        })
        .expect("a sqlite session");
    let (sweep_before, store_before) = (snapshot(sweep), snapshot(store));
    for (target, named) in [(&m, "MANIFEST"), (&db, "a source the manifest records")] {
        let o = run(&[
            "audit-qualify".as_ref(),
            m.as_os_str(),
            "--junit".as_ref(),
            target.as_os_str(),
            "--force".as_ref(),
        ]);
        assert_onto_input(&o, "--junit", named);
    }
    assert_eq!(snapshot(sweep), sweep_before);
    assert_eq!(snapshot(store), store_before);
}

/// A second output that its write would refuse (an existing file without
/// --force, a symbolic link) is found before the first one is written or
/// the report printed.
#[cfg(unix)]
#[test]
fn a_refused_second_output_leaves_the_first_unwritten() {
    let (_d, _store, sweep) = swept();
    let m = sweep.join("manifest.json");
    let work = tempfile::tempdir().unwrap();
    let md = work.path().join("diff.md");
    let existing = work.path().join("existing.xml");
    std::fs::write(&existing, b"keep").unwrap();
    let link = work.path().join("link.xml");
    std::os::unix::fs::symlink(work.path().join("elsewhere.xml"), &link).unwrap();
    for (junit, force, words) in [
        (&existing, false, "use --force"),
        (&link, true, "symbolic link"),
    ] {
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "audit-diff".as_ref(),
            m.as_os_str(),
            m.as_os_str(),
            "--out".as_ref(),
            md.as_os_str(),
            "--junit".as_ref(),
            junit.as_os_str(),
        ];
        if force {
            args.push("--force".as_ref());
        }
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(text(&o).contains(words), "{}", text(&o));
        assert!(!md.exists(), "the first output is not written");
    }
    assert_eq!(std::fs::read(&existing).unwrap(), b"keep");
    // audit-qualify: no recheck line before the refusal.
    let o = run(&[
        "audit-qualify".as_ref(),
        m.as_os_str(),
        "--junit".as_ref(),
        existing.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(o.stdout.is_empty(), "{}", text(&o));
    assert_eq!(std::fs::read(&existing).unwrap(), b"keep");
}
