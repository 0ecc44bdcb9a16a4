//! The specification's opt-in TestExportOfflineCorpus: direct offline
//! exports compared with an independently captured audit-sweep corpus,
//! through the real binary's `export-check` over the sweep's manifest
//! (AGY_READER_OFFLINE_MANIFEST, its saved answers in `corpus/` beside it)
//! with the folder of its sources (AGY_READER_OFFLINE_SOURCES, `<id>.db`
//! each, `--sources`). Every verified session's source profile and digest
//! are checked against the manifest; the entire JSON is compared after
//! removing reader provenance and making an omitted empty steps array
//! explicit; the bytes `export-offline --format md --no-tree` writes are
//! compared with the Markdown rendered from the saved answer, excluding
//! only the offline notice (the transcript has no generation time); both
//! sides render only the selected session. Sessions the sweep did not
//! verify are listed as not checked, with why.
//!
//! Stricter than the specification's wording, which is silent on it: a
//! corpus in which no session was compared fails (nothing was shown).
//!
//! Unset, it prints one SKIP line and passes; a partial set fails naming the
//! missing variable. `.ci/run` sets them on a demo's sweep and store.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's output (clippy.toml)

mod common;

use common::{bin, opt_in_files, output_text};

const VARS: [&str; 2] = ["AGY_READER_OFFLINE_MANIFEST", "AGY_READER_OFFLINE_SOURCES"];

#[test]
fn export_offline_corpus() {
    let Some(files) = opt_in_files(
        "export_offline_corpus",
        &VARS,
        "to compare offline exports with a captured audit-sweep corpus (export-check)",
    ) else {
        return;
    };
    let (manifest, sources) = (&files[0], &files[1]);
    let o = bin()
        .arg("export-check")
        .arg(manifest)
        .arg("--sources")
        .arg(sources)
        .output()
        .expect("running agy-audit export-check");
    let out = output_text(&o);
    println!("{out}");
    assert_eq!(
        o.status.code(),
        Some(0),
        "export_offline_corpus: {} with {}: differences or errors:\n{out}",
        manifest.display(),
        sources.display()
    );
    let same = out
        .lines()
        .filter_map(|l| l.strip_prefix("export-check: "))
        .flat_map(str::split_whitespace)
        .find_map(|w| w.strip_prefix("same="))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("no count line:\n{out}"));
    assert!(
        same > 0,
        "export_offline_corpus: no session of {} was compared:\n{out}",
        manifest.display()
    );
}
