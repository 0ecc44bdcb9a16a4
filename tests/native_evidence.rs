//! The specification's opt-in TestNativeEvidence: explicitly supplied
//! disposable files — a stored source (AGY_READER_SCRATCH_DB), its full raw
//! GetCascadeTrajectory answer (AGY_READER_SCRATCH_RAW) and its default
//! (ordinary) answer (AGY_READER_SCRATCH_PRESENTATION) — verified by the
//! code `verify-capture` runs, through the real binary. It discovers no live
//! profile or daemon: the binary is given those three files alone, with the
//! daemon and root variables removed, and nothing is fetched.
//!
//! Unset, it prints one SKIP line and passes; a partial set fails naming the
//! missing variable. `.ci/run` sets them on a demo's verified conversation.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's output (clippy.toml)

mod common;

use common::{bin, opt_in_files, output_text};

const VARS: [&str; 3] = [
    "AGY_READER_SCRATCH_DB",
    "AGY_READER_SCRATCH_RAW",
    "AGY_READER_SCRATCH_PRESENTATION",
];

#[test]
fn native_evidence() {
    let Some(files) = opt_in_files(
        "native_evidence",
        &VARS,
        "to verify a disposable source with its full raw and default answers (verify-capture)",
    ) else {
        return;
    };
    let [db, raw, presentation] = [&files[0], &files[1], &files[2]];
    let before: Vec<Vec<u8>> = files
        .iter()
        .map(|p| std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect();
    let o = bin()
        .arg("verify-capture")
        .arg("--db")
        .arg(db)
        .arg("--full")
        .arg(raw)
        .arg("--ordinary")
        .arg(presentation)
        .output()
        .expect("running agy-audit verify-capture");
    let out = output_text(&o);
    println!("{out}");
    // VERIFIED, or VERIFIED-SOURCE-ONLY (verified with declared source-only
    // fields); anything else (unknown, incomplete, an invalid answer) fails.
    let verdict = out.split_whitespace().next().unwrap_or_default();
    assert!(
        o.status.code() == Some(0) && matches!(verdict, "VERIFIED" | "VERIFIED-SOURCE-ONLY"),
        "native_evidence: {} with {} and {} is not verified (exit {:?}):\n{out}",
        db.display(),
        raw.display(),
        presentation.display(),
        o.status.code()
    );
    for (p, b) in files.iter().zip(&before) {
        assert_eq!(
            &std::fs::read(p).unwrap_or_default(),
            b,
            "{} changed: the evidence files are only read",
            p.display()
        );
    }
}
