//! The attesting pipeline end to end against a small in-test daemon on
//! 127.0.0.1 that answers from the fixture sources (full = the persisted
//! trajectory, ordinary = its presentation), with a few faults.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::schema::{to_daemon_json, Schema};
use agy_audit::source::legacy::LegacyKey;
use agy_audit::source::{read_source, ReadOptions};
use agy_corpus::sim::server::{Handler, HttpServer, Limits, Reply, Request};
use common::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Condvar, Mutex};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    Stale,
    Http500,
    ExtraField,
    Mutate,
    /// Each GetCascadeTrajectory answers only once the other one of the pair
    /// (full and ordinary) has arrived too; after 10 s alone, HTTP 503.
    PairTogether,
}

struct Fake {
    port: u16,
    _server: HttpServer,
}

fn trajectory_json(s: &Schema, path: &Path) -> String {
    let key = LegacyKey::default();
    let mut src = read_source(
        path,
        &ReadOptions {
            schema: s,
            legacy_key: &key,
            collect_all: false,
            fingerprint: false,
        },
    )
    .unwrap();
    serde_json::to_string(&to_daemon_json(src.materialize().unwrap())).unwrap()
}

fn start(s: &Schema, sources: &[(String, PathBuf, Fault)]) -> Fake {
    start_with_latency(s, sources, 0)
}

fn start_with_latency(s: &Schema, sources: &[(String, PathBuf, Fault)], latency_ms: u64) -> Fake {
    let mut views: HashMap<String, (String, Fault, PathBuf)> = HashMap::new();
    for (id, path, fault) in sources {
        views.insert(id.clone(), (trajectory_json(s, path), *fault, path.clone()));
    }
    let loaded = Arc::new(Mutex::new(std::collections::HashSet::new()));
    let arrived = Arc::new((Mutex::new(HashMap::<String, u32>::new()), Condvar::new()));
    let handler: Handler = Arc::new(move |req: &Request| {
        if latency_ms > 0 {
            std::thread::sleep(std::time::Duration::from_millis(latency_ms));
        }
        let v: serde_json::Value = serde_json::from_slice(&req.body).unwrap_or_default();
        let id = v["cascadeId"].as_str().unwrap_or("").to_string();
        let method = req.path.rsplit('/').next().unwrap_or("").to_string();
        let respond = |status: u16, text: String| Reply::Json {
            status,
            body: text.into_bytes(),
        };
        let Some((json, fault, path)) = views.get(&id) else {
            return respond(
                404,
                r#"{"code":"not_found","message":"no such cascade"}"#.into(),
            );
        };
        match method.as_str() {
            "LoadTrajectory" => {
                loaded.lock().unwrap().insert(id.clone());
                respond(200, "{}".into())
            }
            "GetCascadeTrajectory" if !loaded.lock().unwrap().contains(&id) => respond(
                400,
                r#"{"code":"failed_precondition","message":"not loaded"}"#.into(),
            ),
            "GetCascadeTrajectory" => {
                let full = v["trajectoryVerbosity"] == "CLIENT_TRAJECTORY_VERBOSITY_FULL";
                let mut t: serde_json::Value = serde_json::from_str(json).unwrap();
                match fault {
                    Fault::PairTogether => {
                        let (lock, cv) = &*arrived;
                        let mut n = lock.lock().unwrap();
                        *n.entry(id.clone()).or_insert(0) += 1;
                        cv.notify_all();
                        let (n, wait) = cv
                            .wait_timeout_while(n, std::time::Duration::from_secs(10), |n| {
                                n.get(&id).copied().unwrap_or(0) < 2
                            })
                            .unwrap();
                        drop(n);
                        if wait.timed_out() {
                            return respond(
                                503,
                                r#"{"code":"unavailable","message":"the other request of the pair never came"}"#.into(),
                            );
                        }
                    }
                    Fault::Http500 => {
                        return respond(500, r#"{"code":"internal","message":"boom"}"#.into());
                    }
                    Fault::Stale if full => {
                        t["steps"].as_array_mut().unwrap().pop();
                    }
                    Fault::ExtraField if !full => {
                        t["rpcOnlyField"] = serde_json::json!(1);
                    }
                    Fault::Mutate if !full => {
                        let c = rusqlite::Connection::open(path).unwrap();
                        c.execute_batch("PRAGMA journal_mode=DELETE; UPDATE gen_metadata SET data = x'2000', size = 2").unwrap();
                    }
                    _ => {}
                }
                let n = t["steps"].as_array().map(|a| a.len()).unwrap_or(0);
                respond(
                    200,
                    format!(
                        r#"{{"trajectory":{t},"status":"CASCADE_RUN_STATUS_IDLE","numTotalSteps":"{n}"}}"#
                    ),
                )
            }
            _ => respond(404, r#"{"code":"unimplemented","message":"?"}"#.into()),
        }
    });
    let server = HttpServer::start(0, Limits::default(), handler).unwrap();
    Fake {
        port: server.addr().port(),
        _server: server,
    }
}

const IDS: [&str; 5] = [
    "5f0c7a1e-2b3d-4c5e-8f90-a1b2c3d4e501",
    "5f0c7a1e-2b3d-4c5e-8f90-a1b2c3d4e502",
    "5f0c7a1e-2b3d-4c5e-8f90-a1b2c3d4e503",
    "5f0c7a1e-2b3d-4c5e-8f90-a1b2c3d4e504",
    "5f0c7a1e-2b3d-4c5e-8f90-a1b2c3d4e505",
];

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agy-audit"));
    c.env_remove("ANTIGRAVITY_DAEMON_URL")
        .env_remove("ANTIGRAVITY_CLI_ROOT");
    c
}

#[test]
fn sweep_qualify_report_and_sync_against_a_fake_daemon() {
    let s = schema();
    let (root, dir) = store();
    let faults = [
        Fault::None,
        Fault::Stale,
        Fault::Http500,
        Fault::ExtraField,
        Fault::Mutate,
    ];
    let mut sources = Vec::new();
    for (id, fault) in IDS.iter().zip(faults) {
        let mut conv = Conv::basic(&s);
        conv.cascade_id = id.to_string();
        let path = dir.join(format!("{id}.db"));
        write_db(&s, &path, &conv, |_| {});
        sources.push((id.to_string(), path, fault));
    }
    // A legacy source with field 50 at a declared path: verified with source-only fields.
    let legacy_id = "5f0c7a1e-2b3d-4c5e-8f90-a1b2c3d4e506";
    let mut conv = Conv::basic(&s);
    conv.cascade_id = legacy_id.into();
    let planner = num(
        &s,
        "exa.cortex_pb.CortexStepGeneratorMetadata",
        "planner_config",
    );
    conv.gens
        .push(len_field(planner, &len_field(50, &[0x10, 0x00])));
    let pb = dir.join(format!("{legacy_id}.pb"));
    write_pb(&s, &pb, &conv);
    sources.push((legacy_id.into(), pb, Fault::None));
    let fake = start(&s, &sources);
    std::fs::write(root.path().join("cli.log"), format!("I listening on random port at 1 for HTTPS\nI listening on random port at {} for HTTP\n", fake.port)).unwrap();

    let out = root.path().join("sweep");
    let o = bin()
        .args([
            "audit-sweep",
            "--root",
            root.path().to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--concurrency",
            "3",
            "--bracket-retries",
            "0",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    // HTTP 500 is missing evidence: not fetched, exit 1, not complete.
    assert_eq!(o.status.code(), Some(1), "{err}");
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["manifestVersion"], 5);
    assert_eq!(m["complete"], false);
    assert_eq!(m["counts"]["notFetched"], 1);
    let verdicts: Vec<(String, String, String)> = m["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["fileId"].as_str().unwrap().to_string(),
                x["verdict"].as_str().unwrap_or("error").to_string(),
                x["reasonClass"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let want = [
        ("verified", ""),
        ("incomplete", "full-mismatch"),
        ("error", "daemon-unavailable"),
        // An ordinary-response member the schema does not know is RPC-only
        // presentation: kept in the payload and named, not a mismatch.
        ("verified", ""),
        ("incomplete", "source-changed"),
        ("verified-source-only", ""),
    ];
    for (i, (v, c)) in want.iter().enumerate() {
        assert_eq!(
            (verdicts[i].1.as_str(), verdicts[i].2.as_str()),
            (*v, *c),
            "session {i}: {err}"
        );
    }
    assert_eq!(m["counts"]["verified"], 2);
    assert_eq!(m["counts"]["verifiedSourceOnly"], 1);
    assert_eq!(m["counts"]["protobuf"], 1);
    assert_eq!(m["counts"]["notVerified"], 3);
    // The RPC-only member is named in the manifest and the sidecar, and kept
    // in the saved payload (so in its digest).
    assert_eq!(
        m["sessions"][3]["rpcOnlyFields"],
        serde_json::json!(["rpcOnlyField"])
    );
    assert!(m["sessions"][0].get("rpcOnlyFields").is_none());
    let extra: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            out.join("corpus")
                .join(format!("{}.trajectory.json", IDS[3])),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        extra["agyReader"]["completeness"]["rpcOnlyFields"],
        serde_json::json!(["rpcOnlyField"])
    );
    assert_eq!(extra["rpcOnlyField"], 1);
    assert_eq!(m["counts"]["legacyUnverifiable"], 0);
    assert_eq!(m["profiles"].as_array().unwrap().len(), 2);
    let sidecar: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            out.join("corpus")
                .join(format!("{}.trajectory.json", IDS[0])),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(sidecar["agyReader"]["completeness"]["verdict"], "verified");
    let so: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            out.join("corpus")
                .join(format!("{legacy_id}.trajectory.json")),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        so["agyReader"]["completeness"]["reason"],
        "verified except declared source-only fields absent from RPC"
    );
    assert_eq!(
        so["agyReader"]["completeness"]["sourceOnly"][0]["field"],
        "exa.cortex_pb.CascadePlannerConfig.50"
    );
    assert!(
        std::fs::read_to_string(out.join("sessions.csv"))
            .unwrap()
            .lines()
            .count()
            == 7
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&out).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }
    // The output directory must not exist.
    let url = format!("http://127.0.0.1:{}", fake.port);
    let o = bin()
        .args([
            "audit-sweep",
            "--root",
            root.path().to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--daemon-url",
            &url,
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--resume"));

    // audit-qualify refuses a manifest that is not complete.
    let o = bin()
        .args([
            "audit-qualify",
            out.join("manifest.json").to_str().unwrap(),
            "--root",
            root.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not complete"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The same manifest without the session that was not fetched.
    let mut finished = m.clone();
    finished["complete"] = serde_json::json!(true);
    finished["sessions"]
        .as_array_mut()
        .unwrap()
        .retain(|x| x["reasonClass"] != "daemon-unavailable");
    let finished = common::recounted(finished);
    let finished_path = root.path().join("finished.json");
    std::fs::write(&finished_path, serde_json::to_vec(&finished).unwrap()).unwrap();

    // audit-qualify: the mutated source changed after the sweep too.
    let o = bin()
        .args([
            "audit-qualify",
            finished_path.to_str().unwrap(),
            "--root",
            root.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains(&format!("VERIFIED {}", IDS[0])), "{text}");
    assert!(text.contains(&format!("VERIFIED WITH SOURCE-ONLY FIELDS {legacy_id} (verified except declared source-only fields absent from RPC)")), "{text}");
    assert!(text.contains("holding=4 changed=1"), "{text}");
    assert_eq!(o.status.code(), Some(4), "{text}");

    // report
    let rep = root.path().join("report.md");
    let o = bin()
        .args([
            "report",
            out.join("manifest.json").to_str().unwrap(),
            "--out",
            rep.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let md = std::fs::read_to_string(&rep).unwrap();
    assert!(md.contains("6 sessions: **2 verified**"), "{md}");
    assert!(
        md.contains("| `rpcOnlyField` | 1 | 1 |"),
        "the report counts the RPC-only member: {md}"
    );
    assert!(std::fs::read_to_string(root.path().join("report.svg"))
        .unwrap()
        .starts_with("<svg"));

    // sync + offline recheck of the saved attestation.
    let o = bin()
        .args(["sync", "--daemon-url", &url, sources[0].1.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let o = bin()
        .args(["sync", "--recheck", sources[0].1.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("VERIFIED "));
    let c = rusqlite::Connection::open(&sources[0].1).unwrap();
    c.execute_batch("UPDATE executor_metadata SET data = x''")
        .unwrap();
    drop(c);
    let o = bin()
        .args(["sync", "--recheck", sources[0].1.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("INCOMPLETE (source changed"));
}

/// The full and the ordinary RPC of a conversation are in flight together
/// (a conversation costs two round trips, not three): a daemon that answers
/// neither until both have arrived still verifies it, even at --concurrency 1.
#[test]
fn the_full_and_ordinary_rpcs_are_in_flight_together() {
    let s = schema();
    let (root, dir) = store();
    let id = IDS[0];
    let path = dir.join(format!("{id}.db"));
    let mut conv = Conv::basic(&s);
    conv.cascade_id = id.to_string();
    write_db(&s, &path, &conv, |_| {});
    let fake = start(&s, &[(id.to_string(), path, Fault::PairTogether)]);
    let out = root.path().join("sweep");
    let url = format!("http://127.0.0.1:{}", fake.port);
    let o = sweep_cmd(root.path(), &out, &url, &[]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let (complete, sessions) = sessions(&out);
    assert!(complete);
    assert_eq!(sessions[0]["verdict"], "verified", "{sessions}");
}

fn many_sources(s: &Schema, dir: &Path, n: usize) -> Vec<(String, PathBuf, Fault)> {
    (0..n)
        .map(|i| {
            let id = format!("6f0c7a1e-2b3d-4c5e-8f90-a1b2c3d4{i:04x}");
            let mut conv = Conv::basic(s);
            conv.cascade_id = id.clone();
            let path = dir.join(format!("{id}.db"));
            write_db(s, &path, &conv, |_| {});
            (id, path, Fault::None)
        })
        .collect()
}

fn sessions(out: &Path) -> (bool, serde_json::Value) {
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    (m["complete"].as_bool().unwrap(), m["sessions"].clone())
}

fn sweep_cmd(root: &Path, out: &Path, url: &str, extra: &[&str]) -> Command {
    let mut c = bin();
    c.args([
        "audit-sweep",
        "--quiet",
        "--concurrency",
        "1",
        "--root",
        root.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--daemon-url",
        url,
    ]);
    c.args(extra);
    c
}

#[cfg(unix)]
#[test]
fn kill_9_and_ctrl_c_mid_sweep_resume_to_the_same_manifest() {
    let s = schema();
    let (root, dir) = store();
    let sources = many_sources(&s, &dir, 24);
    let fake = start_with_latency(&s, &sources, 15);
    let url = format!("http://127.0.0.1:{}", fake.port);
    let before = tree(&dir);
    // Reference: one uninterrupted run.
    let reference = root.path().join("ref");
    let o = sweep_cmd(root.path(), &reference, &url, &[])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let (complete, want) = sessions(&reference);
    assert!(complete);
    assert_eq!(want.as_array().unwrap().len(), 24);

    for signal in ["-9", "-INT"] {
        let out = root.path().join(format!("run{signal}"));
        let mut child = sweep_cmd(root.path(), &out, &url, &[]).spawn().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        // Wait until some sessions are written, then interrupt.
        loop {
            let n = std::fs::read(out.join("manifest.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .and_then(|m| m["sessions"].as_array().map(|a| a.len()))
                .unwrap_or(0);
            if n >= 3 || std::time::Instant::now() > deadline {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        let status = child.wait().unwrap();
        assert!(
            !status.success(),
            "{signal}: the sweep should not report success"
        );
        let (complete, partial) = sessions(&out);
        assert!(
            !complete,
            "{signal}: an interrupted sweep leaves complete: false"
        );
        assert!(
            partial.as_array().unwrap().len() < 24,
            "{signal}: interrupted before the end"
        );
        for f in std::fs::read_dir(out.join("corpus")).unwrap() {
            let f = f.unwrap().path();
            assert!(
                !f.to_string_lossy().ends_with(".tmp"),
                "{signal}: no temp file left: {}",
                f.display()
            );
            serde_json::from_slice::<serde_json::Value>(&std::fs::read(&f).unwrap()).unwrap();
        }
        let o = sweep_cmd(root.path(), &out, &url, &["--resume"])
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let (complete, got) = sessions(&out);
        assert!(complete);
        assert_eq!(
            got, want,
            "{signal}: resumed manifest equals the uninterrupted one"
        );
    }
    assert_eq!(tree(&dir), before, "sources unchanged");
}
