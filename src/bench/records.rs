//! Issue 49 item 5: the fleet-scale records. `agy-audit bench --records N`
//! (hidden from `--help`, documented in BENCHMARKS.md) synthesizes version-5
//! manifests of N sessions that the strict manifest reader accepts, then
//! measures the commands that read them (`audit-diff`, `manifest merge`,
//! `report --format html`), each a child process of its own: wall time, peak
//! RSS (`wait4`) and the size of what it wrote, judged against the targets
//! (a minute, 1 GB).
//!
//! What is written, into `--records-dir` (or a temporary folder):
//!
//! * `old.json`: N sessions, sorted by file id, in a fixed mix ([`mix`]):
//!   60 % verified, 20 % verified with source-only fields, 15 % unknown,
//!   3 % incomplete, 2 % unreadable (error); 5 % legacy (`.pb`);
//! * `new.json`: the same sweep later ([`later`]): 0.5 % of the sessions
//!   gone, 0.5 % newly refused, 0.5 % newly verified, 0.5 % with another
//!   source digest, 0.5 % refused elsewhere, and 0.5 % more appeared;
//! * `shard-1.json` ... `shard-4.json`: `new.json` split the way
//!   `audit-sweep --shard i/4` splits a store (`sha256-fileid`), each a
//!   complete shard, for `manifest merge`.
//!
//! The synthesizer writes the JSON text itself and counts the figures the
//! strict reader recounts (`counts`, `countsByProfile`, `countsByFormat`,
//! `profiles`, `timing.steps`, `timing.sourceBytes`) with its own tally
//! ([`Tally`]), and assigns shards with its own reading of the assignment
//! ([`shard_of`]): nothing the reader checks is computed by the reader's
//! code, so the reader accepting these files is a check of both.

use super::{wait_usage, BenchError, Result, Target};
use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// How many shards `manifest merge` is measured on.
pub const SHARDS: usize = 4;

/// The targets of issue 49 item 5, per command at 100,000 sessions.
pub const WALL_TARGET_SECONDS: f64 = 60.0;
pub const RSS_TARGET_BYTES: u64 = 1_000_000_000;

const SQLITE_PROFILE: &str = "sqlite-v1-format0-modeled-8d2a517663e4-ra814e3-planner50-permission2-prompt23-tools143-permission1-tools144-skill1-history2-ide225-options145-compaction146-skill146-finish147-replay147";
const LEGACY_PROFILE: &str = "legacy-aes256gcm-v1-agy-1.4.4-337dcde66844/sqlite-v1-format0-modeled-8d2a517663e4-ra814e3-planner50-permission2-prompt23-tools143-permission1-tools144-skill1-history2-ide225-options145-compaction146-skill146-finish147-replay147";
const ENDPOINT: &str = "http://127.0.0.1:34631";

/// Refusals the synthesized sessions carry: (class, verdict, reason).
const REFUSALS: [(&str, &str, &str); 6] = [
    ("unqualified-projection", "unknown", "steps[8]: modern tool arguments outside the qualified names or disagreeing with the payload: [\"CommandLine\", \"Cwd\"] (modern-run-command)"),
    ("unknown-field", "unknown", "steps[3].metadata: unknown field 900 (wire type 0)"),
    ("unqualified-projection", "unknown", "steps[66]: permission grant or completed interaction on a modern tool wrapper: permissions (modern-permission1)"),
    ("schema-drift", "unknown", "table `steps`: 12 columns, not the 11 agy writes"),
    ("full-mismatch", "incomplete", "steps[12].plannerResponse: the full RPC differs from the persisted trajectory"),
    ("ordinary-mismatch", "incomplete", "steps[40]: the ordinary RPC differs from the projection"),
];

const RULES: [&str; 8] = [
    "passthrough",
    "embedded-native-step",
    "canceled-command-status",
    "payload-free-manage-task",
    "modern-schedule",
    "modern-permission1",
    "modern-read-file",
    "modern-skill-path",
];

const STEP_TYPES: [&str; 14] = [
    "CODE_ACTION",
    "COMMAND_STATUS",
    "CONVERSATION_HISTORY",
    "ERROR_MESSAGE",
    "FIND",
    "GENERIC",
    "GREP_SEARCH",
    "LIST_DIRECTORY",
    "MCP_TOOL",
    "PLANNER_RESPONSE",
    "RUN_COMMAND",
    "SYSTEM_MESSAGE",
    "USER_INPUT",
    "VIEW_FILE",
];

/// What one synthesized session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Verified,
    SourceOnly,
    /// Refused with [`REFUSALS`]`[i]`.
    Refused(usize),
    Error,
}

#[derive(Debug, Clone, Copy)]
struct Synth {
    /// The id's counter: [`file_id`] of it.
    key: u64,
    kind: Kind,
    legacy: bool,
    /// Changes the source digest.
    salt: u64,
}

/// splitmix64: a fixed, well-spread hash of a counter.
fn mixed(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A version-4-looking UUID whose first eight hex digits are `key`, so that
/// ids sort as their keys do.
fn file_id(key: u64) -> String {
    let h = mixed(key);
    format!(
        "{:08x}-{:04x}-4{:03x}-{:x}{:03x}-{:012x}",
        key,
        (h >> 48) & 0xffff,
        (h >> 36) & 0xfff,
        8 + ((h >> 34) & 3),
        (h >> 20) & 0xfff,
        mixed(h) & 0xffff_ffff_ffff
    )
}

/// The old sweep's session `i`: the mix of the module documentation.
fn mix(i: u64) -> Synth {
    let h = mixed(i);
    let kind = match h % 100 {
        0..=59 => Kind::Verified,
        60..=79 => Kind::SourceOnly,
        80..=94 => Kind::Refused(((h >> 8) % 4) as usize),
        95..=97 => Kind::Refused(4 + ((h >> 8) % 2) as usize),
        _ => Kind::Error,
    };
    Synth {
        key: 2 * i,
        kind,
        legacy: (h >> 16) % 20 == 0,
        salt: 0,
    }
}

/// The new sweep's sessions for the old one's session `i`: none (gone),
/// the same, changed, or the same and one appeared after it.
fn later(i: u64) -> Vec<Synth> {
    let old = mix(i);
    let mut s = old;
    let pick = mixed(i ^ 0x5eed) % 1000;
    match pick {
        0..=4 => return Vec::new(),
        5..=9 if matches!(old.kind, Kind::Verified | Kind::SourceOnly) => s.kind = Kind::Refused(0),
        10..=14 if matches!(old.kind, Kind::Refused(_)) => s.kind = Kind::Verified,
        15..=19 => s.salt = 1,
        20..=24 => {
            if let Kind::Refused(r) = old.kind {
                s.kind = Kind::Refused(if r < 4 { (r + 1) % 4 } else { 9 - r });
            }
        }
        _ => {}
    }
    let mut out = vec![s];
    if (25..=29).contains(&pick) {
        out.push(Synth {
            key: 2 * i + 1,
            kind: Kind::Verified,
            legacy: false,
            salt: 0,
        });
    }
    out
}

impl Synth {
    fn profile(&self) -> &'static str {
        match (self.kind, self.legacy) {
            (Kind::Error, _) => "",
            (_, true) => LEGACY_PROFILE,
            (_, false) => SQLITE_PROFILE,
        }
    }

    fn format(&self) -> &'static str {
        if self.legacy {
            "protobuf"
        } else {
            "sqlite"
        }
    }

    fn steps(&self) -> u64 {
        match self.kind {
            Kind::Error => 0,
            _ => 20 + mixed(self.key) % 180,
        }
    }

    fn bytes(&self) -> u64 {
        match self.kind {
            Kind::Error => 0,
            _ => self.steps() * 2048 + mixed(self.key ^ 7) % 2048,
        }
    }

    fn digest(&self, what: u64) -> String {
        let mut h = Sha256::new();
        h.update(self.key.to_be_bytes());
        h.update(what.to_be_bytes());
        h.update(self.salt.to_be_bytes());
        let d = h.finalize();
        let mut s = String::from("sha256:");
        for b in d.iter() {
            s.push_str(&format!("{b:02x}"));
        }
        s
    }

    /// The session as manifest version 5 spells it.
    fn wire(self) -> Value {
        let id = file_id(self.key);
        let h = mixed(self.key ^ 0xfeed);
        let (verdict, reason, class): (Value, Value, Value) = match self.kind {
            Kind::Verified => (json!("verified"), Value::Null, Value::Null),
            Kind::SourceOnly => (
                json!("verified-source-only"),
                json!("verified except declared source-only fields absent from RPC"),
                Value::Null,
            ),
            Kind::Refused(r) => {
                let (class, verdict, reason) = REFUSALS[r];
                (json!(verdict), json!(reason), json!(class))
            }
            Kind::Error => (
                Value::Null,
                json!(format!(
                    "/home/dev/.gemini/antigravity/conversations/{id}.db: corrupt: the file is not a database"
                )),
                Value::Null,
            ),
        };
        let error = self.kind == Kind::Error;
        let rules: Vec<&str> = if error {
            Vec::new()
        } else {
            RULES
                .iter()
                .enumerate()
                .filter(|(k, _)| *k < 2 || (h >> k) & 1 == 1)
                .map(|(_, r)| *r)
                .collect()
        };
        let mut step_types = serde_json::Map::new();
        if !error {
            for (k, t) in STEP_TYPES.iter().enumerate() {
                if *t == "PLANNER_RESPONSE" || (h >> (16 + 2 * k)) & 7 != 0 {
                    step_types.insert(t.to_string(), json!(1 + (h >> (2 * k)) % 30));
                }
            }
        }
        let mut v = json!({
            "fileId": id,
            "cascadeId": id,
            "format": self.format(),
            "profile": self.profile(),
            "sourceDigest": if error { String::new() } else { self.digest(1) },
            "payloadDigest": match self.kind {
                Kind::Verified | Kind::SourceOnly => json!(self.digest(2)),
                _ => Value::Null,
            },
            "verdict": verdict,
            "reason": reason,
            "reasonClass": class,
            "rules": rules,
            "steps": self.steps(),
            "bytes": self.bytes(),
            "stepTypes": step_types,
        });
        if self.kind == Kind::SourceOnly {
            let locations: Vec<Value> = (0..(6 + h % 16))
                .map(|k| json!({"location": if k % 3 == 2 { format!("executorMetadatas[{k}].cascadeConfig.plannerConfig") } else { format!("generatorMetadata[{k}].plannerConfig") }, "payload": "10002000"}))
                .collect();
            v["sourceOnly"] = json!([{
                "field": "exa.cortex_pb.CascadePlannerConfig.50",
                "declaredPaths": [
                    "generatorMetadata[].plannerConfig",
                    "executorMetadatas[].cascadeConfig.plannerConfig"
                ],
                "occurrences": locations.len(),
                "sha256": self.digest(3),
                "locations": locations,
            }]);
        }
        if !error {
            v["endpoint"] = json!(ENDPOINT);
        }
        v
    }
}

/// The figures of one set of sessions, counted here, apart from the
/// manifest module's recount (the strict reader holds them to its own).
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    selected: u64,
    verified: u64,
    verified_source_only: u64,
    sqlite: u64,
    protobuf: u64,
    not_verified: u64,
    legacy_unverifiable: u64,
    unknown: u64,
    incomplete: u64,
    error: u64,
}

impl Tally {
    fn add(&mut self, s: &Synth) {
        self.selected += 1;
        if s.legacy {
            self.protobuf += 1;
        } else {
            self.sqlite += 1;
        }
        let refused = match s.kind {
            Kind::Verified => {
                self.verified += 1;
                false
            }
            Kind::SourceOnly => {
                self.verified_source_only += 1;
                false
            }
            Kind::Refused(r) => {
                if REFUSALS[r].1 == "unknown" {
                    self.unknown += 1;
                } else {
                    self.incomplete += 1;
                }
                true
            }
            Kind::Error => {
                self.error += 1;
                true
            }
        };
        if refused {
            self.not_verified += 1;
            if s.legacy {
                self.legacy_unverifiable += 1;
            }
        }
    }

    fn to_json(self) -> Value {
        json!({
            "selected": self.selected,
            "verified": self.verified,
            "verifiedSourceOnly": self.verified_source_only,
            "sqlite": self.sqlite,
            "protobuf": self.protobuf,
            "notVerified": self.not_verified,
            "legacyUnverifiable": self.legacy_unverifiable,
            "unknown": self.unknown,
            "incomplete": self.incomplete,
            "notFetched": 0,
            "error": self.error,
        })
    }
}

/// The 1-based shard of `id` among `n`: the first eight bytes of
/// SHA-256(id), big-endian, mod n, plus one (docs/manifest-v5.md's
/// `sha256-fileid`), read here apart from the pipeline's own.
fn shard_of(id: &str, n: usize) -> usize {
    let d = Sha256::digest(id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&d[..8]);
    (u64::from_be_bytes(first) % n as u64) as usize + 1
}

/// Writes `sessions` (sorted by key) as a complete version-5 manifest at
/// `path`, a shard `(i, n)` when given; its size in bytes.
fn write_manifest(path: &Path, sessions: &[Synth], shard: Option<(usize, usize)>) -> Result<u64> {
    let mut total = Tally::default();
    let mut by_profile: std::collections::BTreeMap<&str, Tally> = Default::default();
    let mut by_format: std::collections::BTreeMap<&str, Tally> = Default::default();
    let (mut steps, mut bytes) = (0u64, 0u64);
    for s in sessions {
        total.add(s);
        if !s.profile().is_empty() {
            by_profile.entry(s.profile()).or_default().add(s);
        }
        by_format.entry(s.format()).or_default().add(s);
        steps += s.steps();
        bytes += s.bytes();
    }
    let mut head = json!({
        "manifestVersion": 5,
        "complete": true,
        "root": path.with_file_name("store").display().to_string(),
        "endpoint": ENDPOINT,
        "started": "2026-12-07T08:00:00Z",
        "finished": "2026-12-07T09:00:00Z",
        "profiles": by_profile.keys().collect::<Vec<_>>(),
        "counts": total.to_json(),
        "countsByProfile": by_profile.iter().map(|(k, t)| (k.to_string(), t.to_json())).collect::<serde_json::Map<_, _>>(),
        "countsByFormat": by_format.iter().map(|(k, t)| (k.to_string(), t.to_json())).collect::<serde_json::Map<_, _>>(),
    });
    if let Some((i, n)) = shard {
        head["shard"] = json!(format!("{i}/{n}"));
        head["shardBy"] = json!("sha256-fileid");
        head["readerProfiles"] = json!([LEGACY_PROFILE, SQLITE_PROFILE]);
    }
    head["timing"] = json!({
        "wallSeconds": 3600.0,
        "sourceBytes": bytes,
        "steps": steps,
        "concurrency": 64,
        "jobs": 2,
    });
    let io = |e: std::io::Error| BenchError::Records {
        what: format!("writing {}", path.display()),
        detail: e.to_string(),
    };
    let file = std::fs::File::create(path).map_err(io)?;
    let mut w = std::io::BufWriter::new(file);
    // The head pretty-printed, its closing brace replaced by the sessions.
    let text = serde_json::to_string_pretty(&head).unwrap_or_default();
    let open = text.trim_end().trim_end_matches('}').trim_end();
    write!(w, "{open},\n  \"sessions\": [").map_err(io)?;
    for (k, s) in sessions.iter().enumerate() {
        let one = serde_json::to_string_pretty(&s.wire()).unwrap_or_default();
        let sep = if k == 0 { "\n    " } else { ",\n    " };
        write!(w, "{sep}{}", one.replace('\n', "\n    ")).map_err(io)?;
    }
    w.write_all(if sessions.is_empty() {
        b"]\n}\n"
    } else {
        b"\n  ]\n}\n"
    })
    .map_err(io)?;
    w.flush().map_err(io)?;
    let len = std::fs::metadata(path).map_err(io)?.len();
    Ok(len)
}

/// The files [`synthesize`] wrote, with their sizes.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Synthesized {
    pub sessions: u64,
    pub old: PathBuf,
    pub old_bytes: u64,
    pub new: PathBuf,
    pub new_sessions: u64,
    pub new_bytes: u64,
    pub shards: Vec<PathBuf>,
}

/// Writes `old.json`, `new.json` and the shards of `new.json` for `n`
/// sessions into `dir` (module documentation).
pub fn synthesize(dir: &Path, n: u64) -> Result<Synthesized> {
    let old: Vec<Synth> = (0..n).map(mix).collect();
    let new: Vec<Synth> = (0..n).flat_map(later).collect();
    let (old_path, new_path) = (dir.join("old.json"), dir.join("new.json"));
    let old_bytes = write_manifest(&old_path, &old, None)?;
    drop(old);
    let new_bytes = write_manifest(&new_path, &new, None)?;
    let mut shards = Vec::new();
    for i in 1..=SHARDS {
        let mine: Vec<Synth> = new
            .iter()
            .filter(|s| shard_of(&file_id(s.key), SHARDS) == i)
            .copied()
            .collect();
        let p = dir.join(format!("shard-{i}.json"));
        write_manifest(&p, &mine, Some((i, SHARDS)))?;
        shards.push(p);
    }
    Ok(Synthesized {
        sessions: n,
        old: old_path,
        old_bytes,
        new: new_path,
        new_sessions: new.len() as u64,
        new_bytes,
        shards,
    })
}

/// One command measured on the synthesized records.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordsRun {
    /// The command line after `agy-audit`, file names relative to the folder.
    pub command: String,
    pub wall_seconds: f64,
    pub user_seconds: f64,
    pub sys_seconds: f64,
    pub peak_rss: u64,
    /// The size of what it wrote (`--out`).
    pub output_bytes: u64,
    pub exit_code: i32,
}

/// `bench --records N`'s figures.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordsFigures {
    pub dir: PathBuf,
    pub synthesized: Synthesized,
    pub synthesize_seconds: f64,
    pub runs: Vec<RecordsRun>,
    pub targets: Vec<Target>,
}

/// Runs `exe args` in `dir` as a child, its standard error kept in
/// `<name>.stderr`; refused unless it exits `expect`.
fn measure(
    exe: &Path,
    dir: &Path,
    name: &str,
    args: &[&str],
    out: &str,
    expect: i32,
) -> Result<RecordsRun> {
    let io = |e: std::io::Error| BenchError::Records {
        what: format!("running agy-audit {}", args.join(" ")),
        detail: e.to_string(),
    };
    let err_path = dir.join(format!("{name}.stderr"));
    let err = std::fs::File::create(&err_path).map_err(io)?;
    let _ = std::fs::remove_file(dir.join(out));
    let started = Instant::now();
    let child = Command::new(exe)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .map_err(io)?;
    let usage = wait_usage(child).map_err(io)?;
    let wall = started.elapsed().as_secs_f64();
    if usage.exit_code != Some(expect) {
        let tail = crate::util::bounded::read_tail(&err_path, crate::util::bounded::InputKind::Log)
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&tail);
        return Err(BenchError::Records {
            what: format!("agy-audit {}", args.join(" ")),
            detail: format!(
                "exited {:?}, not {expect}: {}",
                usage.exit_code,
                text.lines().last().unwrap_or("")
            ),
        });
    }
    Ok(RecordsRun {
        command: args.join(" "),
        wall_seconds: wall,
        user_seconds: usage.user_seconds,
        sys_seconds: usage.sys_seconds,
        peak_rss: usage.peak_rss,
        output_bytes: std::fs::metadata(dir.join(out))
            .map(|m| m.len())
            .unwrap_or(0),
        exit_code: expect,
    })
}

/// Synthesizes the records of `n` sessions into `dir` and measures the
/// three commands on them.
pub fn records(exe: &Path, dir: &Path, n: u64) -> Result<RecordsFigures> {
    let started = Instant::now();
    let synthesized = synthesize(dir, n)?;
    let synthesize_seconds = started.elapsed().as_secs_f64();
    let mut runs = Vec::new();
    // audit-diff exits 5: from 1,000 sessions on (the least `--records`
    // takes) the new sweep holds newly refused sessions by construction.
    runs.push(measure(
        exe,
        dir,
        "audit-diff",
        &["audit-diff", "old.json", "new.json", "--out", "diff.md"],
        "diff.md",
        5,
    )?);
    runs.push(measure(
        exe,
        dir,
        "audit-diff-json",
        &[
            "audit-diff",
            "old.json",
            "new.json",
            "--json",
            "--out",
            "diff.json",
        ],
        "diff.json",
        5,
    )?);
    let mut merge = vec!["manifest", "merge"];
    let names: Vec<String> = (1..=SHARDS).map(|i| format!("shard-{i}.json")).collect();
    merge.extend(names.iter().map(String::as_str));
    merge.extend(["--out", "merged.json"]);
    runs.push(measure(exe, dir, "merge", &merge, "merged.json", 0)?);
    runs.push(measure(
        exe,
        dir,
        "report-html",
        &[
            "report",
            "new.json",
            "--format",
            "html",
            "--out",
            "report.html",
        ],
        "report.html",
        0,
    )?);
    let targets = runs
        .iter()
        .map(|r| Target {
            name: format!("agy-audit {} ({} sessions)", r.command, n),
            measured: format!(
                "{:.1} s, peak RSS {:.0} MB, wrote {:.1} MB",
                r.wall_seconds,
                r.peak_rss as f64 / 1e6,
                r.output_bytes as f64 / 1e6
            ),
            limit: format!(
                "≤ {WALL_TARGET_SECONDS:.0} s and ≤ {:.0} MB",
                RSS_TARGET_BYTES as f64 / 1e6
            ),
            met: Some(r.wall_seconds <= WALL_TARGET_SECONDS && r.peak_rss <= RSS_TARGET_BYTES),
        })
        .collect();
    Ok(RecordsFigures {
        dir: dir.to_path_buf(),
        synthesized,
        synthesize_seconds,
        runs,
        targets,
    })
}

impl RecordsFigures {
    /// The figures as the bench prints them, one line each.
    pub fn lines(&self) -> Vec<String> {
        let s = &self.synthesized;
        let mut out = vec![format!(
            "records: {} sessions synthesized in {:.1} s into {} (old.json {:.1} MB; new.json {} sessions, {:.1} MB; {} shards of new.json)",
            s.sessions,
            self.synthesize_seconds,
            self.dir.display(),
            s.old_bytes as f64 / 1e6,
            s.new_sessions,
            s.new_bytes as f64 / 1e6,
            s.shards.len()
        )];
        out.push("| command | wall | user | sys | peak RSS | output |".into());
        out.push("|---|---|---|---|---|---|".into());
        for r in &self.runs {
            out.push(format!(
                "| {} | {:.1} s | {:.1} s | {:.1} s | {:.0} MB | {:.1} MB |",
                r.command,
                r.wall_seconds,
                r.user_seconds,
                r.sys_seconds,
                r.peak_rss as f64 / 1e6,
                r.output_bytes as f64 / 1e6
            ));
        }
        out.push("targets (BENCHMARKS.md, issue 49):".into());
        out.push("| target | measured | limit | met |".into());
        out.push("|---|---|---|---|".into());
        for t in &self.targets {
            let met = t
                .met
                .map_or("not measured", |m| if m { "met" } else { "missed" });
            out.push(format!(
                "| {} | {} | {} | {met} |",
                t.name, t.measured, t.limit
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_sort_as_their_keys_and_are_uuids() {
        let ids: Vec<String> = [0u64, 1, 2, 15, 16, 255, 4096, 199_999]
            .iter()
            .map(|k| file_id(*k))
            .collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
        for id in &ids {
            assert!(crate::source::looks_like_uuid(id), "{id}");
        }
    }

    /// The synthesizer's own shard reading is the pipeline's.
    #[test]
    fn the_shard_reading_is_the_assignment() {
        for k in 0..200 {
            let id = file_id(k);
            assert_eq!(shard_of(&id, 4), crate::pipeline::shard::shard_of(&id, 4));
        }
    }
}
