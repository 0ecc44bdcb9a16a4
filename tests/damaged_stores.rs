//! Damaged stores: every page of a `.db` corrupted in turn, and random byte
//! flips and truncations across `.db`, `-wal` and `.pb`, each audited against
//! the undamaged store's daemon answers (the generator's `.truth/daemon/`
//! views, as `verify-capture` reads them).
//!
//! Each trial must end as an error or a refusal naming the file, or as a
//! verified result whose source digest (over the canonical encoding) equals
//! the undamaged one (a flip in bytes nothing reads): never a panic, never a
//! verified result with other content, and every damaged file byte-identical
//! afterwards. The CI version runs every page of two sources and 150 random
//! trials; `cargo test --release --test damaged_stores -- --ignored` runs
//! every page of every small source and 1,000 random trials.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

mod common;

use agy_audit::pipeline::{audit_prepared, prepare, AuditContext, Captured};
use agy_audit::schema::Schema;
use agy_audit::source::legacy::LegacyKey;
use agy_audit::verdict::{Outcome, VerdictKind};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// One conversation of the generated store: its files and the daemon's answers.
struct Case {
    id: String,
    /// (file name, bytes): the source, then its `-wal` when it has one.
    files: Vec<(String, Vec<u8>)>,
    full: Vec<u8>,
    ordinary: Vec<u8>,
    /// The undamaged source's digest (it verifies).
    digest: String,
}

fn store() -> (PathBuf, Vec<Case>) {
    let dir = common::scratch_dir("damaged");
    let root = common::small_store(&dir, 12, 3, 0.0, 0.2);
    let conv = root.join("conversations");
    let mut cases = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(&conv)
        .expect("conversations")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".db") || n.ends_with(".pb"))
        .collect();
    names.sort();
    for name in names {
        let id = name[..name.len() - 3].to_string();
        let mut files = vec![(
            name.clone(),
            std::fs::read(conv.join(&name)).expect("source"),
        )];
        let wal = format!("{name}-wal");
        if let Ok(b) = std::fs::read(conv.join(&wal)) {
            files.push((wal, b));
        }
        let truth = root.join(".truth/daemon");
        let full = std::fs::read(truth.join(format!("{id}.full.json"))).expect("full answer");
        let ordinary =
            std::fs::read(truth.join(format!("{id}.ordinary.json"))).expect("ordinary answer");
        cases.push(Case {
            id,
            files,
            full,
            ordinary,
            digest: String::new(),
        });
    }
    (dir, cases)
}

/// A deterministic xorshift generator (no dependency, same trials every run).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn sha(b: &[u8]) -> [u8; 32] {
    Sha256::digest(b).into()
}

/// What one audit of the files in `dir` said.
enum Seen {
    /// Verified, with this source digest.
    Verified(String),
    /// Refused, not fetched or an error, with its words.
    Other(String),
    Panicked(String),
}

fn audit(dir: &Path, case: &Case) -> Seen {
    let schema = Schema::modeled().expect("modeled schema");
    let key = LegacyKey::default();
    let captured = Captured {
        full: ("full.json".into(), case.full.clone()),
        ordinary: ("ordinary.json".into(), case.ordinary.clone()),
    };
    let ctx = AuditContext {
        schema: &schema,
        key: &key,
        client: Some(&captured),
        bracket_retries: 0,
    };
    let path = dir.join(&case.files[0].0);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        match prepare(&ctx, &path) {
            Err(e) => Seen::Other(format!("error: {e}")),
            Ok(p) => {
                let r = audit_prepared(&ctx, p);
                match r.record.outcome() {
                    Outcome::Verdict(VerdictKind::Verified)
                    | Outcome::Verdict(VerdictKind::VerifiedSourceOnly) => {
                        Seen::Verified(r.record.source_digest.clone())
                    }
                    o => Seen::Other(format!(
                        "{}: {}",
                        o.as_str(),
                        r.record.reason_text().unwrap_or_default()
                    )),
                }
            }
        }
    }));
    r.unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Seen::Panicked(what)
    })
}

/// How the trials ended.
#[derive(Debug, Default)]
struct Tally {
    /// Verified with the undamaged digest (the damage hit nothing read).
    verified: usize,
    /// Refused (unknown or incomplete) or not fetched.
    refused: usize,
    /// An error naming the file.
    errors: usize,
}

/// Writes `files` into a fresh folder, audits them, and checks the trial's
/// promise; returns a failure line, if any.
fn trial(
    base: &Path,
    n: usize,
    case: &Case,
    files: &[(String, Vec<u8>)],
    what: &str,
    tally: &mut Tally,
) -> Option<String> {
    let dir = base.join(format!("t{n}"));
    std::fs::create_dir_all(&dir).expect("trial dir");
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).expect("write trial file");
    }
    let seen = audit(&dir, case);
    let mut fail = None;
    for (name, bytes) in files {
        let after = std::fs::read(dir.join(name)).unwrap_or_default();
        if sha(&after) != sha(bytes) {
            fail = Some(format!("{what}: {name} changed on disk"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    match &seen {
        Seen::Verified(_) => tally.verified += 1,
        Seen::Other(w) if w.starts_with("error") => tally.errors += 1,
        Seen::Other(_) => tally.refused += 1,
        Seen::Panicked(_) => {}
    }
    match seen {
        Seen::Panicked(p) => Some(format!("{what}: panic: {p}")),
        Seen::Verified(d) if d != case.digest => {
            Some(format!("{what}: verified with other content ({d})"))
        }
        Seen::Other(words) if !words.contains(&case.id) && words.starts_with("error") => Some(
            format!("{what}: an error that does not name the file: {words}"),
        ),
        _ => fail,
    }
}

fn page_size(db: &[u8]) -> usize {
    match db.get(16..18).map(|b| u16::from_be_bytes([b[0], b[1]])) {
        Some(1) => 65536,
        Some(n) if n >= 512 => n as usize,
        _ => 4096,
    }
}

fn campaign(pages_of: usize, random: usize) -> (usize, usize, Vec<String>, Tally) {
    let (dir, mut cases) = store();
    let base = dir.join("trials");
    // the undamaged store verifies, and gives each case its digest
    for c in cases.iter_mut() {
        let clean = base.join(format!("clean-{}", c.id));
        std::fs::create_dir_all(&clean).unwrap();
        for (name, bytes) in &c.files {
            std::fs::write(clean.join(name), bytes).unwrap();
        }
        match audit(&clean, c) {
            Seen::Verified(d) => c.digest = d,
            Seen::Other(w) | Seen::Panicked(w) => panic!("{}: undamaged: {w}", c.id),
        }
    }
    let small: Vec<&Case> = cases
        .iter()
        .filter(|c| c.files[0].1.len() <= 300_000)
        .collect();
    let mut failures = Vec::new();
    let mut tally = Tally::default();
    let mut n = 0usize;
    // every page of the first `pages_of` small SQLite sources (one with a -wal)
    let mut dbs: Vec<&&Case> = small
        .iter()
        .filter(|c| c.files[0].0.ends_with(".db"))
        .collect();
    dbs.sort_by_key(|c| c.files.len() == 1);
    let mut pages = 0;
    for c in dbs.iter().take(pages_of) {
        let db = &c.files[0].1;
        let size = page_size(db);
        for p in 0..db.len().div_ceil(size) {
            let mut files = c.files.clone();
            for b in files[0].1[p * size..((p + 1) * size).min(db.len())].iter_mut() {
                *b ^= 0x5A;
            }
            n += 1;
            pages += 1;
            if let Some(f) = trial(
                &base,
                n,
                c,
                &files,
                &format!("{} page {p}", c.files[0].0),
                &mut tally,
            ) {
                failures.push(f);
            }
        }
    }
    // random flips and truncations across every small source's files
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..random {
        let c = small[rng.below(small.len())];
        let mut files = c.files.clone();
        let which = rng.below(files.len());
        let (name, bytes) = &mut files[which];
        let what = if rng.below(4) == 0 {
            let at = rng.below(bytes.len());
            bytes.truncate(at);
            format!("{name} truncated at {at}")
        } else {
            let at = rng.below(bytes.len());
            let bit = 1u8 << rng.below(8);
            bytes[at] ^= bit;
            format!("{name} byte {at} ^ {bit:#04x}")
        };
        n += 1;
        if let Some(f) = trial(&base, n, c, &files, &what, &mut tally) {
            failures.push(f);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    (pages, random, failures, tally)
}

/// Fails with every failing trial, else says how the trials ended.
fn no_failure(pages: usize, random: usize, failures: &[String], tally: &Tally) {
    assert!(
        failures.is_empty(),
        "{} of {} trials:\n{}",
        failures.len(),
        pages + random,
        failures.join("\n")
    );
    eprintln!("damaged stores: {pages} page trials, {random} random trials, no failure: {tally:?}");
}

#[test]
fn damaged_sources_are_refused_or_verified_unchanged() {
    let (pages, random, failures, tally) = campaign(2, 150);
    assert!(pages >= 20, "{pages} page trials");
    no_failure(pages, random, &failures, &tally);
}

#[test]
#[ignore = "the long campaign: every page of every small source, 1,000 random trials"]
fn damaged_sources_long_campaign() {
    let (pages, random, failures, tally) = campaign(usize::MAX, 1000);
    no_failure(pages, random, &failures, &tally);
}
