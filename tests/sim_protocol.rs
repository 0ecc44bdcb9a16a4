//! The simulated daemon through a real HTTP client: every endpoint, every
//! error envelope and every fault as a client observes it.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

use agy_corpus::corpus::{generate, GenerateOptions, PlanOptions};
use agy_corpus::sim::{DaemonSim, FaultKind, FaultSpec, SimOptions};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const SVC: &str = "exa.language_server_pb.LanguageServerService";

/// One small generated store per test binary, under Cargo's test scratch
/// directory (regenerated on each run; tests copy it when they write).
fn store() -> &'static Path {
    static STORE: OnceLock<PathBuf> = OnceLock::new();
    STORE.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sim_protocol_store");
        generate(&GenerateOptions {
            out: root.clone(),
            plan: PlanOptions {
                conversations: 24,
                seed: 11,
                near_miss_rate: 0.0,
                fault_rate: 0.0,
                scale: 0.05,
            },
            force: true,
        })
        .unwrap();
        root
    })
}

/// A private copy of the store (for faults that write to it).
fn store_copy() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let dst = d.path().join("store");
    for e in walkdir::WalkDir::new(store()) {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(store()).unwrap();
        let to = dst.join(rel);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
    (d, dst)
}

/// (id, format, steps) of every conversation.
fn ids(root: &Path) -> Vec<(String, String, u64)> {
    std::fs::read_to_string(root.join(".truth/expected.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["fileId"].as_str().unwrap().to_string(),
                v["format"].as_str().unwrap().to_string(),
                v["steps"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn client(timeout_ms: u64) -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_millis(timeout_ms))
        .no_proxy()
        .build()
        .unwrap()
}

fn sim(root: &Path, faults: Vec<FaultSpec>) -> DaemonSim {
    let mut o = SimOptions::new(root);
    o.faults = faults;
    o.write_cli_log = false;
    DaemonSim::start(o).unwrap()
}

fn post(
    c: &reqwest::blocking::Client,
    s: &DaemonSim,
    method: &str,
    body: Value,
) -> reqwest::Result<reqwest::blocking::Response> {
    c.post(format!("{}/{SVC}/{method}", s.url()))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
}

fn load(c: &reqwest::blocking::Client, s: &DaemonSim, id: &str) -> u16 {
    post(c, s, "LoadTrajectory", json!({"cascadeId": id}))
        .unwrap()
        .status()
        .as_u16()
}

fn get(
    c: &reqwest::blocking::Client,
    s: &DaemonSim,
    id: &str,
    full: bool,
) -> reqwest::Result<reqwest::blocking::Response> {
    let body = if full {
        json!({"cascadeId": id, "trajectoryVerbosity": "CLIENT_TRAJECTORY_VERBOSITY_FULL", "disableRehydration": true})
    } else {
        json!({"cascadeId": id})
    };
    post(c, s, "GetCascadeTrajectory", body)
}

fn view(root: &Path, id: &str, which: &str) -> Vec<u8> {
    std::fs::read(root.join(format!(".truth/daemon/{id}.{which}.json"))).unwrap()
}

fn envelope(r: reqwest::blocking::Response) -> (u16, String) {
    let st = r.status().as_u16();
    let v: Value = serde_json::from_slice(&r.bytes().unwrap()).unwrap();
    assert!(v["message"].is_string(), "{v}");
    (st, v["code"].as_str().unwrap().to_string())
}

/// The raw `trajectory` member of a response body.
fn trajectory_bytes(body: &[u8]) -> Vec<u8> {
    #[derive(serde::Deserialize)]
    struct E<'a> {
        #[serde(borrow)]
        trajectory: &'a serde_json::value::RawValue,
    }
    let e: E<'_> = serde_json::from_slice(body).unwrap();
    e.trajectory.get().as_bytes().to_vec()
}

#[test]
fn load_then_get_serves_both_views_verbatim() {
    let root = store();
    let s = sim(root, vec![]);
    let c = client(10_000);
    for (id, _, steps) in ids(root).iter().take(6) {
        assert_eq!(load(&c, &s, id), 200);
        let r = post(&c, &s, "LoadTrajectory", json!({"cascadeId": id})).unwrap();
        assert_eq!(r.text().unwrap(), "{}");
        for (full, which) in [(true, "full"), (false, "ordinary")] {
            let r = get(&c, &s, id, full).unwrap();
            assert_eq!(r.status().as_u16(), 200);
            assert!(r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json"));
            let body = r.bytes().unwrap();
            assert_eq!(
                trajectory_bytes(&body),
                view(root, id, which),
                "{id} {which}"
            );
            let v: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(v["status"], "CASCADE_RUN_STATUS_IDLE");
            assert_eq!(v["numTotalSteps"], steps.to_string());
        }
        // full needs both FULL verbosity and rehydration disabled
        let r = post(
            &c,
            &s,
            "GetCascadeTrajectory",
            json!({"cascadeId": id, "trajectoryVerbosity": "CLIENT_TRAJECTORY_VERBOSITY_FULL"}),
        )
        .unwrap();
        assert_eq!(
            trajectory_bytes(&r.bytes().unwrap()),
            view(root, id, "ordinary")
        );
    }
    s.stop();
}

#[test]
fn errors_use_connect_envelopes_and_statuses() {
    let root = store();
    let s = sim(root, vec![]);
    let c = client(10_000);
    let (id, _, _) = &ids(root)[0];
    // before LoadTrajectory
    assert_eq!(
        envelope(get(&c, &s, id, true).unwrap()),
        (404, "not_found".into())
    );
    // unknown ids
    let unknown = "00000000-0000-4000-8000-000000000000";
    assert_eq!(
        envelope(post(&c, &s, "LoadTrajectory", json!({"cascadeId": unknown})).unwrap()),
        (404, "not_found".into())
    );
    assert_eq!(
        envelope(get(&c, &s, unknown, false).unwrap()),
        (404, "not_found".into())
    );
    // bad requests
    assert_eq!(
        envelope(post(&c, &s, "LoadTrajectory", json!({"id": id})).unwrap()),
        (400, "invalid_argument".into())
    );
    let r = c
        .post(format!("{}/{SVC}/LoadTrajectory", s.url()))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .unwrap();
    assert_eq!(envelope(r), (400, "invalid_argument".into()));
    let r = c
        .post(format!("{}/{SVC}/LoadTrajectory", s.url()))
        .header("content-type", "application/grpc-web+proto")
        .body(vec![0u8, 0, 0, 0, 0])
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 415);
    let r = c
        .get(format!("{}/{SVC}/LoadTrajectory", s.url()))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 405);
    assert_eq!(
        envelope(post(&c, &s, "NoSuchMethod", json!({"cascadeId": id})).unwrap()),
        (404, "unimplemented".into())
    );
    let r = c
        .post(format!("{}/other", s.url()))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    s.stop();
}

#[test]
fn csrf_token_is_required_when_configured() {
    let root = store();
    let mut o = SimOptions::new(root);
    o.write_cli_log = false;
    o.csrf_token = Some("s3cret".into());
    let s = DaemonSim::start(o).unwrap();
    let c = client(10_000);
    let (id, _, _) = &ids(root)[0];
    let url = format!("{}/{SVC}/LoadTrajectory", s.url());
    let body = json!({"cascadeId": id}).to_string();
    let r = c
        .post(&url)
        .header("content-type", "application/json")
        .body(body.clone())
        .send()
        .unwrap();
    assert_eq!(envelope(r), (401, "unauthenticated".into()));
    let r = c
        .post(&url)
        .header("content-type", "application/json")
        .header("x-codeium-csrf-token", "wrong")
        .body(body.clone())
        .send()
        .unwrap();
    assert_eq!(envelope(r), (403, "permission_denied".into()));
    let r = c
        .post(&url)
        .header("content-type", "application/json")
        .header("x-codeium-csrf-token", "s3cret")
        .body(body)
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
}

#[test]
fn cli_log_announces_the_port_for_discovery() {
    let (_d, root) = store_copy();
    let s = DaemonSim::start(SimOptions::new(&root)).unwrap();
    let text = std::fs::read_to_string(root.join("cli.log")).unwrap();
    assert!(text.contains("for HTTPS"), "decoy line");
    assert_eq!(agy_audit::rpc::parse_cli_log(&text), Some(s.port()));
    assert_eq!(
        agy_audit::rpc::discover_endpoint(&root, Some(&s.url())).unwrap(),
        s.url()
    );
    s.stop();
    let err = DaemonSim::start(SimOptions::new(root.join("conversations"))).unwrap_err();
    assert!(err.to_string().contains("not a generated store"), "{err}");
}

fn steps_of(body: &[u8]) -> (Vec<Value>, String) {
    let v: Value = serde_json::from_slice(body).unwrap();
    (
        v["trajectory"]["steps"].as_array().unwrap().clone(),
        v["numTotalSteps"].as_str().unwrap().to_string(),
    )
}

#[test]
fn content_faults_change_what_the_client_sees() {
    let root = store();
    let list = ids(root);
    let pick = |i: usize| {
        list.iter()
            .filter(|(_, _, n)| *n > 4)
            .nth(i)
            .unwrap()
            .0
            .clone()
    };
    let (stale, same, dropped, extra, skew, lat, jit) = (
        pick(0),
        pick(1),
        pick(2),
        pick(3),
        pick(4),
        pick(5),
        pick(6),
    );
    let s = sim(
        root,
        vec![
            FaultSpec::for_id(&stale, FaultKind::StaleCache),
            FaultSpec::for_id(&same, FaultKind::SameStepStale),
            FaultSpec::for_id(&dropped, FaultKind::DroppedField),
            FaultSpec::for_id(&extra, FaultKind::ExtraRpcField),
            FaultSpec::for_id(&skew, FaultKind::VersionSkew),
            FaultSpec::for_id(&lat, FaultKind::Latency(300)),
            FaultSpec::for_id(&jit, FaultKind::Jitter(200)),
        ],
    );
    let c = client(20_000);
    let fetch = |id: &str, full: bool| -> Vec<u8> {
        assert_eq!(load(&c, &s, id), 200);
        get(&c, &s, id, full).unwrap().bytes().unwrap().to_vec()
    };
    let truth = |id: &str, which: &str| -> Vec<Value> {
        let v: Value = serde_json::from_slice(&view(root, id, which)).unwrap();
        v["steps"].as_array().unwrap().clone()
    };
    // stale cache: fewer steps in both views, consistently counted
    for (full, which) in [(true, "full"), (false, "ordinary")] {
        let (steps, n) = steps_of(&fetch(&stale, full));
        assert!(steps.len() < truth(&stale, which).len());
        assert_eq!(n, steps.len().to_string());
    }
    // same-step stale: same count, one step differs
    let (steps, n) = steps_of(&fetch(&same, true));
    let t = truth(&same, "full");
    assert_eq!(steps.len(), t.len());
    assert_eq!(n, t.len().to_string());
    assert_eq!(steps.iter().zip(&t).filter(|(a, b)| a != b).count(), 1);
    // dropped field: the ordinary view lacks a field, the full one is intact
    assert_eq!(
        trajectory_bytes(&fetch(&dropped, true)),
        view(root, &dropped, "full")
    );
    let (steps, _) = steps_of(&fetch(&dropped, false));
    let t = truth(&dropped, "ordinary");
    let k = steps.iter().zip(&t).position(|(a, b)| a != b).unwrap();
    assert!(
        t[k]["metadata"]["createdAt"].is_string()
            && steps[k]["metadata"].get("createdAt").is_none()
    );
    // extra RPC-only field in the full view
    let (steps, _) = steps_of(&fetch(&extra, true));
    assert!(steps.iter().any(|s| s.get("rpcRenderHints").is_some()));
    assert_eq!(
        trajectory_bytes(&fetch(&extra, false)),
        view(root, &extra, "ordinary")
    );
    // version skew: the ordinary view is older than the full one
    let (full_steps, _) = steps_of(&fetch(&skew, true));
    let (ord_steps, n) = steps_of(&fetch(&skew, false));
    assert_eq!(full_steps.len(), truth(&skew, "full").len());
    assert_eq!(ord_steps.len() + 1, full_steps.len());
    assert_eq!(n, ord_steps.len().to_string());
    // latency: slower, same content; jitter: within its bound
    assert_eq!(load(&c, &s, &lat), 200);
    let t0 = Instant::now();
    let b = get(&c, &s, &lat, true).unwrap().bytes().unwrap();
    assert!(t0.elapsed() >= Duration::from_millis(300));
    assert_eq!(trajectory_bytes(&b), view(root, &lat, "full"));
    assert_eq!(load(&c, &s, &jit), 200);
    let t0 = Instant::now();
    let b = get(&c, &s, &jit, false).unwrap().bytes().unwrap();
    assert!(t0.elapsed() < Duration::from_millis(5_000));
    assert_eq!(trajectory_bytes(&b), view(root, &jit, "ordinary"));
    s.stop();
}

#[test]
fn transport_faults_are_observable_from_a_client() {
    let root = store();
    let list = ids(root);
    let id = |i: usize| list[i].0.clone();
    let s = sim(
        root,
        vec![
            FaultSpec::for_id(&id(0), FaultKind::Http500),
            FaultSpec::for_id(&id(1), FaultKind::Http503),
            FaultSpec::for_id(&id(2), FaultKind::Reset),
            FaultSpec::for_id(&id(3), FaultKind::Hang),
            FaultSpec::for_id(&id(4), FaultKind::TruncatedBody),
            FaultSpec::for_id(&id(5), FaultKind::OversizedBody(8 << 20)),
            FaultSpec::for_id(&id(6), FaultKind::InvalidJson),
            FaultSpec::for_id(&id(7), FaultKind::NotLoaded),
        ],
    );
    let c = client(10_000);
    for i in 0..7 {
        assert_eq!(load(&c, &s, &id(i)), 200, "{i}");
    }
    assert_eq!(
        envelope(get(&c, &s, &id(0), true).unwrap()),
        (500, "internal".into())
    );
    assert_eq!(
        envelope(get(&c, &s, &id(1), true).unwrap()),
        (503, "unavailable".into())
    );
    // reset: no response at all
    let e = get(&c, &s, &id(2), true).unwrap_err();
    assert!(!e.is_timeout() && e.status().is_none(), "{e:?}");
    // hang: the client's timeout fires
    let short = client(800);
    let t0 = Instant::now();
    let e = get(&short, &s, &id(3), true).unwrap_err();
    assert!(e.is_timeout(), "{e:?}");
    assert!(t0.elapsed() < Duration::from_secs(5));
    // truncated: headers promise more than arrives
    let r = get(&c, &s, &id(4), true).unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(
        r.bytes().is_err(),
        "a truncated body must not read as complete"
    );
    // oversized: announced and streamed, still JSON
    let r = get(&c, &s, &id(5), false).unwrap();
    assert!(r.content_length().unwrap() >= 8 << 20);
    let body = r.bytes().unwrap();
    assert!(body.len() >= 8 << 20);
    assert_eq!(trajectory_bytes(&body), view(root, &id(5), "ordinary"));
    // invalid JSON
    let r = get(&c, &s, &id(6), true).unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(serde_json::from_slice::<Value>(&r.bytes().unwrap()).is_err());
    // not loaded: LoadTrajectory fails, so GetCascadeTrajectory does too
    assert_eq!(
        envelope(post(&c, &s, "LoadTrajectory", json!({"cascadeId": id(7)})).unwrap()),
        (500, "internal".into())
    );
    assert_eq!(envelope(get(&c, &s, &id(7), true).unwrap()).0, 404);
    // a healthy conversation still works on the same server
    assert_eq!(load(&c, &s, &id(8)), 200);
    assert_eq!(get(&c, &s, &id(8), true).unwrap().status().as_u16(), 200);
    let t0 = Instant::now();
    s.stop();
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "stop waits for the hung request"
    );
}

#[test]
fn default_oversized_body_exceeds_a_256_mib_client_cap() {
    let root = store();
    let (id, _, _) = ids(root)[0].clone();
    let s = sim(
        root,
        vec![FaultSpec::for_id(
            &id,
            FaultKind::OversizedBody(agy_corpus::sim::fault::OVERSIZED_DEFAULT),
        )],
    );
    let c = client(10_000);
    assert_eq!(load(&c, &s, &id), 200);
    let r = get(&c, &s, &id, true).unwrap();
    assert!(r.content_length().unwrap() > 256 << 20);
    // read only the first bytes: the body is produced lazily
    let mut first = vec![0u8; 64];
    let mut r = r;
    std::io::Read::read_exact(&mut r, &mut first).unwrap();
    assert!(first.starts_with(b"{\"trajectory\":"));
    drop(r);
    s.stop();
}

#[test]
fn mutate_source_rewrites_the_store_after_each_answer() {
    let (_d, root) = store_copy();
    let list = ids(&root);
    let db_id = list
        .iter()
        .find(|(_, f, _)| f == "sqlite")
        .unwrap()
        .0
        .clone();
    let pb_id = list
        .iter()
        .find(|(_, f, _)| f == "protobuf")
        .map(|x| x.0.clone());
    let mut faults = vec![FaultSpec::for_id(&db_id, FaultKind::MutateSource)];
    if let Some(p) = &pb_id {
        faults.push(FaultSpec::for_id(p, FaultKind::MutateSource));
    }
    let s = sim(&root, faults);
    let c = client(10_000);
    let db = root.join(format!("conversations/{db_id}.db"));
    let snapshot = |p: &Path| -> Vec<u8> {
        let mut b = std::fs::read(p).unwrap();
        if let Ok(w) = std::fs::read(format!("{}-wal", p.display())) {
            b.extend(w);
        }
        b
    };
    let before = snapshot(&db);
    assert_eq!(load(&c, &s, &db_id), 200);
    let first = get(&c, &s, &db_id, true).unwrap().bytes().unwrap();
    let t0 = Instant::now();
    while snapshot(&db) == before && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let after = snapshot(&db);
    assert_ne!(after, before, "the source was not rewritten");
    // the daemon keeps answering the same content; every answer rewrites again
    let second = get(&c, &s, &db_id, true).unwrap().bytes().unwrap();
    assert_eq!(first, second);
    let t0 = Instant::now();
    while snapshot(&db) == after && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_ne!(
        snapshot(&db),
        after,
        "the second answer did not rewrite the source"
    );
    // the rewritten database is still a valid agy database with every step
    let conn = rusqlite::Connection::open(&db).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM steps", [], |r| r.get(0))
        .unwrap();
    let steps = list.iter().find(|x| x.0 == db_id).unwrap().2;
    assert_eq!(n as u64, steps);
    if let Some(p) = pb_id {
        let pb = root.join(format!("conversations/{p}.pb"));
        let before = std::fs::read(&pb).unwrap();
        assert_eq!(load(&c, &s, &p), 200);
        get(&c, &s, &p, false).unwrap().bytes().unwrap();
        let t0 = Instant::now();
        while std::fs::read(&pb).unwrap() == before && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let after = std::fs::read(&pb).unwrap();
        assert_ne!(after, before);
        assert_eq!(
            agy_corpus::corpus::legacy::open(&after).unwrap(),
            agy_corpus::corpus::legacy::open(&before).unwrap(),
            "same plaintext, new ciphertext"
        );
    }
    s.stop();
}

#[test]
fn rate_faults_and_the_fault_file_are_applied() {
    let root = store();
    let list = ids(root);
    let s = sim(root, vec![FaultSpec::parse("rate=1:http-503").unwrap()]);
    let c = client(10_000);
    for (id, _, _) in list.iter().take(4) {
        assert_eq!(load(&c, &s, id), 200);
        assert_eq!(get(&c, &s, id, true).unwrap().status().as_u16(), 503);
    }
    s.stop();
    let s = sim(root, vec![FaultSpec::parse("rate=0:http-503").unwrap()]);
    for (id, _, _) in list.iter().take(4) {
        assert_eq!(load(&c, &s, id), 200);
        assert_eq!(get(&c, &s, id, true).unwrap().status().as_u16(), 200);
    }
    s.stop();

    // a store generated with planned faults: the sim loads .truth/faults.txt
    let d = tempfile::tempdir().unwrap();
    generate(&GenerateOptions {
        out: d.path().to_path_buf(),
        plan: PlanOptions {
            conversations: 32,
            seed: 4,
            near_miss_rate: 0.0,
            fault_rate: 0.5,
            scale: 0.05,
        },
        force: false,
    })
    .unwrap();
    let planned = agy_corpus::sim::read_fault_file(d.path()).unwrap();
    assert_eq!(planned.len(), 16);
    let s = sim(d.path(), vec![]);
    assert_eq!(s.faults().len(), 16);
    let http500 = planned
        .iter()
        .find(|f| f.kind == FaultKind::Http500)
        .unwrap();
    let agy_corpus::sim::FaultTarget::Id(fid) = &http500.target else {
        panic!()
    };
    assert_eq!(load(&c, &s, fid), 200);
    assert_eq!(get(&c, &s, fid, true).unwrap().status().as_u16(), 500);
    s.stop();
}
