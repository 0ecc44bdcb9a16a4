//! The terminal never decides a run (issue 44 item 1).
//!
//! Every subcommand the CLI defines (enumerated from its own clap
//! definition, so a new command is covered without editing this file) is
//! run into a closed pipe, standard output and error both: `--help` still
//! exits 0 and an unknown flag still exits 2. Then each scenario below runs
//! twice in twin folders, once with its output read and once into a closed
//! pipe: the exit code and every file it writes must be the same, byte for
//! byte. The scenarios hold the failing gates the issue names (audit-diff 5,
//! audit-qualify 4, verify-capture of swapped answers 4, export-check,
//! doctor 1) and every other command that writes files.

#![cfg(unix)]
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's output (clippy.toml)

mod common;

use clap::CommandFactory as _;
use common::{bin, start_sim, sweep_command};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every leaf subcommand, as the words that name it (`["schema", "dump"]`).
fn leaves() -> Vec<Vec<String>> {
    fn walk(c: &clap::Command, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        let subs: Vec<&clap::Command> = c
            .get_subcommands()
            .filter(|s| s.get_name() != "help")
            .collect();
        if subs.is_empty() {
            out.push(path.clone());
        }
        for s in subs {
            path.push(s.get_name().to_string());
            walk(s, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(&agy_audit::cli::Cli::command(), &mut Vec::new(), &mut out);
    out
}

/// How a run's standard streams end up.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Streams {
    /// Read to their end.
    Read,
    /// Both pipes closed by the reader before the command writes anything.
    Closed,
}

fn run(cmd: &mut Command, streams: Streams, what: &str) -> i32 {
    match streams {
        Streams::Read => {
            let o = cmd.output().expect("running agy-audit");
            o.status
                .code()
                .unwrap_or_else(|| panic!("{what}: killed by a signal"))
        }
        Streams::Closed => common::run_with_closed_output(cmd, 600, what)
            .code()
            .unwrap_or_else(|| panic!("{what}: killed by a signal (SIGPIPE?)")),
    }
}

#[test]
fn every_subcommand_keeps_its_code_into_a_closed_pipe() {
    let all = leaves();
    assert!(all.len() >= 25, "{all:?}");
    for words in &all {
        for (extra, want) in [("--help", 0), ("--no-such-flag-anywhere", 2)] {
            for streams in [Streams::Read, Streams::Closed] {
                let what = format!("agy-audit {} {extra} ({streams:?})", words.join(" "));
                let code = run(bin().args(words).arg(extra), streams, &what);
                assert_eq!(code, want, "{what}");
            }
        }
    }
}

/// The files under `dir`, relative, with their bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let e = e.unwrap();
        if e.file_type().is_file() {
            let rel = e.path().strip_prefix(dir).unwrap().to_path_buf();
            out.insert(rel, std::fs::read(e.path()).unwrap());
        }
    }
    out
}

/// A command run twice, each in its own empty working folder: its code and
/// files must not depend on whether anybody reads its output.
struct Scenario {
    name: &'static str,
    args: Vec<String>,
    /// The exit code its result calls for (`None`: only the same both ways).
    code: Option<i32>,
    /// Files it must write (relative to its working folder).
    writes: Vec<&'static str>,
    /// Files whose bytes name the moment of the run (compared by presence):
    /// a name, or `prefix*suffix`.
    timed: Vec<&'static str>,
}

fn s(name: &'static str, args: &[&str], code: Option<i32>, writes: &[&'static str]) -> Scenario {
    Scenario {
        name,
        args: args.iter().map(|a| a.to_string()).collect(),
        code,
        writes: writes.to_vec(),
        timed: Vec::new(),
    }
}

fn check(sc: &Scenario, scratch: &Path, home: &Path) {
    let mut seen = Vec::new();
    for streams in [Streams::Read, Streams::Closed] {
        let cwd = scratch.join(format!("{}-{streams:?}", sc.name));
        std::fs::create_dir_all(&cwd).unwrap();
        let what = format!("{} ({streams:?}): agy-audit {}", sc.name, sc.args.join(" "));
        let code = run(
            bin().args(&sc.args).current_dir(&cwd).env("HOME", home),
            streams,
            &what,
        );
        if let Some(want) = sc.code {
            assert_eq!(code, want, "{what}");
        }
        let mut written = files(&cwd);
        for f in &sc.writes {
            assert!(
                written.contains_key(Path::new(f)),
                "{what}: {f} not written (wrote {:?})",
                written.keys().collect::<Vec<_>>()
            );
        }
        for (name, bytes) in written.iter_mut() {
            let name = name.to_string_lossy();
            let timed = sc.timed.iter().any(|t| match t.split_once('*') {
                Some((pre, suf)) => name.starts_with(pre) && name.ends_with(suf),
                None => name == *t,
            });
            if timed {
                bytes.clear();
            }
        }
        seen.push((code, written));
    }
    assert_eq!(seen[0].0, seen[1].0, "{}: exit code", sc.name);
    let (a, b) = (&seen[0].1, &seen[1].1);
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "{}: files written",
        sc.name
    );
    for (k, v) in a {
        assert!(v == &b[k], "{}: {} differs", sc.name, k.display());
    }
}

/// The sweep's manifest with one verified session turned into an unknown
/// one (a regression), recounted so it reads strictly.
fn regressed_copy(manifest: &Path, out: &Path) -> String {
    use agy_audit::outcome::SessionOutcome;
    use agy_audit::verdict::{ReasonClass, Refusal};
    let (_, mut m) = agy_audit::manifest::read::read(manifest).unwrap();
    let s = m
        .sessions
        .iter_mut()
        .find(|s| matches!(s.result, SessionOutcome::Verified))
        .expect("a verified session");
    s.result = SessionOutcome::refused(Refusal::new(
        ReasonClass::UnknownField,
        "steps[1].metadata",
        "unknown field 900",
    ));
    s.payload_digest = None;
    let id = s.file_id.clone();
    m.recount();
    std::fs::write(out, m.to_json()).unwrap();
    id
}

/// The manifest with one verified session's source digest changed: its
/// recorded result no longer holds (audit-qualify exits 4).
fn stale_copy(manifest: &Path, out: &Path) {
    let (_, mut m) = agy_audit::manifest::read::read(manifest).unwrap();
    let s = m
        .sessions
        .iter_mut()
        .find(|s| s.result == agy_audit::outcome::SessionOutcome::Verified)
        .expect("a verified session");
    s.source_digest = format!("sha256:{}", "0".repeat(64));
    std::fs::write(out, m.to_json()).unwrap();
}

#[test]
fn every_gate_keeps_its_code_and_writes_its_files_into_a_closed_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let store = dir.path().join("store");
    common::generate_store(
        &store,
        &["--conversations", "24", "--seed", "44", "--scale", "0.1"],
    );
    let sim = start_sim(&store, &["--no-fault-file"]);
    let sweep = dir.path().join("sweep");
    // A sweep exits 0, or 3 when it refused a conversation.
    let swept = |c: &mut Command, out: &Path| {
        let o = c.output().unwrap();
        assert!(
            matches!(o.status.code(), Some(0 | 3)),
            "{}",
            common::output_text(&o)
        );
        assert!(out.join("manifest.json").is_file());
    };
    swept(&mut sweep_command(&store, &sweep, &sim.url), &sweep);
    let shards: Vec<PathBuf> = (1..=2)
        .map(|i| {
            let out = dir.path().join(format!("shard{i}"));
            swept(
                sweep_command(&store, &out, &sim.url).args(["--shard", &format!("{i}/2")]),
                &out,
            );
            out
        })
        .collect();
    let manifest = sweep.join("manifest.json");
    let regressed = dir.path().join("regressed.json");
    regressed_copy(&manifest, &regressed);
    let stale = dir.path().join("stale.json");
    stale_copy(&manifest, &stale);
    let (_, m) = agy_audit::manifest::read::read(&manifest).unwrap();
    let verified: Vec<&str> = m
        .sessions
        .iter()
        .filter(|s| s.result == agy_audit::outcome::SessionOutcome::Verified)
        .map(|s| s.file_id.as_str())
        .collect();
    let (a, b) = (verified[0], verified[1]);
    let p = |x: &Path| x.to_str().unwrap().to_string();
    let db = |id: &str| p(&store.join("conversations").join(format!("{id}.db")));
    let answer = |id: &str, kind: &str| p(&sweep.join("corpus").join(format!("{id}.{kind}.json")));
    let (st, sw, mf) = (p(&store), p(&sweep), p(&manifest));
    let mut scenarios = vec![
        s(
            "audit-diff-regressed",
            &[
                "audit-diff",
                &mf,
                &p(&regressed),
                "--json",
                "--junit",
                "j.xml",
            ],
            Some(5),
            &["j.xml"],
        ),
        s(
            "audit-diff-html",
            &[
                "audit-diff",
                &sw,
                &p(&regressed),
                "--format",
                "html",
                "--out",
                "d.html",
                "--junit",
                "j.xml",
            ],
            Some(5),
            &["d.html", "j.xml"],
        ),
        s(
            "audit-qualify-stale",
            &[
                "audit-qualify",
                &p(&stale),
                "--root",
                &st,
                "--junit",
                "q.xml",
            ],
            Some(4),
            &["q.xml"],
        ),
        s(
            "audit-qualify-holds",
            &[
                "audit-qualify",
                &sw,
                "--root",
                &st,
                "--json",
                "--junit",
                "q.xml",
            ],
            Some(0),
            &["q.xml"],
        ),
        s(
            "verify-capture-swapped",
            &[
                "verify-capture",
                "--db",
                &db(a),
                "--full",
                &answer(b, "full"),
                "--ordinary",
                &answer(b, "ordinary"),
                "--out",
                "side.json",
            ],
            Some(4),
            &[],
        ),
        s(
            "verify-capture-verified",
            &[
                "verify-capture",
                "--db",
                &db(a),
                "--full",
                &answer(a, "full"),
                "--ordinary",
                &answer(a, "ordinary"),
                "--out",
                "side.json",
            ],
            Some(0),
            &["side.json"],
        ),
        s(
            "export-check",
            &["export-check", &sw, "--root", &st],
            None,
            &[],
        ),
        s("doctor", &["doctor", "--root", &st], Some(1), &[]),
        s(
            "doctor-json",
            &["doctor", "--root", &st, "--json"],
            Some(1),
            &[],
        ),
        s(
            "report",
            &["report", &mf, "--out", "r.md"],
            Some(0),
            &["r.md", "r.svg"],
        ),
        s(
            "report-html",
            &[
                "report", &sw, "--format", "html", "--root", &st, "--out", "r.html",
            ],
            Some(0),
            &["r.html"],
        ),
        s("report-stdout", &["report", &mf], Some(0), &[]),
        s(
            "format-audit",
            &["format-audit", &sw, "--out", "f.md"],
            Some(0),
            &["f.md", "f.json"],
        ),
        s(
            "manifest-merge",
            &[
                "manifest",
                "merge",
                &p(&shards[0]),
                &p(&shards[1]),
                "--out",
                "merged.json",
            ],
            Some(0),
            &["merged.json"],
        ),
        s(
            "list",
            &["list", "--root", &st, "--check", "--json"],
            None,
            &[],
        ),
        s(
            "sync-recheck",
            &["sync", "--root", &st, "--recheck", a],
            None,
            &[],
        ),
        s(
            "sync-daemon",
            &[
                "sync",
                "--root",
                &st,
                "--daemon-url",
                &sim.url,
                "--out",
                "synced.json",
                a,
            ],
            Some(0),
            &["synced.json"],
        ),
        s(
            "export-offline",
            &["export-offline", "--root", &st, "--out", "e.json", a],
            Some(0),
            &["e.json"],
        ),
        s(
            "export-offline-stdout",
            &["export-offline", "--root", &st, "--format", "md", a],
            Some(0),
            &[],
        ),
        s(
            "shapes-digest",
            &["shapes", "digest", &p(&sweep.join("shapes-ordinary.tsv"))],
            Some(0),
            &[],
        ),
        s("rules", &["rules", "--markdown"], Some(0), &[]),
        s(
            "schema-dump",
            &["schema", "dump", "--out", "set.pb"],
            Some(0),
            &["set.pb"],
        ),
        s("schema-info", &["schema", "info"], Some(0), &[]),
        s("completions", &["completions", "bash"], Some(0), &[]),
        s(
            "corpus-generate",
            &[
                "corpus",
                "generate",
                "--out",
                "gen",
                "--conversations",
                "20",
                "--scale",
                "0.1",
            ],
            Some(0),
            &["gen/.truth/expected.jsonl"],
        ),
        s(
            "audit-sweep",
            &[
                "audit-sweep",
                "--root",
                &st,
                "--out",
                "sw",
                "--daemon-url",
                &sim.url,
            ],
            Some(3),
            &["sw/manifest.json", "sw/sessions.csv"],
        ),
    ];
    // The manifest of a sweep and a merge records when it ran.
    for sc in &mut scenarios {
        match sc.name {
            // The sidecars' attestations say when they were verified.
            "audit-sweep" => sc.timed = vec!["sw/manifest.json", "sw/corpus/*.trajectory.json"],
            "verify-capture-verified" => sc.timed = vec!["side.json"],
            "sync-daemon" => sc.timed = vec!["synced.json"],
            "manifest-merge" => sc.timed = vec!["merged.json"],
            "format-audit" => sc.timed = vec!["f.md", "f.json"],
            _ => {}
        }
    }
    let scratch = dir.path().join("runs");
    for sc in &scenarios {
        check(sc, &scratch, &home);
    }
    drop(sim);
}

/// Read, standard output gets every byte a command prints: `rules` prints
/// the rule table whole (the terminal drops only what a closed pipe
/// refuses).
#[test]
fn a_read_stdout_gets_every_byte() {
    let o = bin().arg("rules").output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        agy_audit::project::table::text()
    );
}
