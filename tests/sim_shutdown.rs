//! Stopping the simulated daemon leaves nothing behind: no thread of this
//! process (a hung request and a keep-alive connection included), and no
//! process when the CLI is stopped. One test per concern,
//! run one after the other (thread counts are per process).
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

use agy_corpus::corpus::{generate, GenerateOptions, PlanOptions};
use agy_corpus::sim::{DaemonSim, FaultKind, FaultSpec, SimOptions};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());
const SVC: &str = "exa.language_server_pb.LanguageServerService";

fn store(name: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    generate(&GenerateOptions {
        out: root.clone(),
        plan: PlanOptions {
            conversations: 6,
            seed: 21,
            near_miss_rate: 0.0,
            fault_rate: 0.0,
            scale: 0.05,
        },
        force: true,
    })
    .unwrap();
    root
}

fn first_id(root: &Path) -> String {
    let text = std::fs::read_to_string(root.join(".truth/expected.jsonl")).unwrap();
    let v: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    v["fileId"].as_str().unwrap().to_string()
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| d.count())
        .unwrap_or(0)
}

fn post(c: &reqwest::blocking::Client, url: &str, method: &str, id: &str) -> reqwest::Result<u16> {
    c.post(format!("{url}/{SVC}/{method}"))
        .header("content-type", "application/json")
        .body(format!("{{\"cascadeId\":\"{id}\"}}"))
        .send()
        .map(|r| r.status().as_u16())
}

#[test]
fn stop_leaves_no_thread_behind() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !Path::new("/proc/self/task").is_dir() {
        eprintln!("no /proc/self/task: thread accounting unavailable");
        return;
    }
    let root = store("sim_shutdown_threads");
    let id = first_id(&root);
    // a client created and dropped first, so its runtime is not counted
    drop(reqwest::blocking::Client::new());
    std::thread::sleep(Duration::from_millis(200));
    let baseline = threads();
    for round in 0..2 {
        let mut o = SimOptions::new(&root);
        o.write_cli_log = false;
        o.faults = vec![FaultSpec::for_id(&id, FaultKind::Hang)];
        let sim = DaemonSim::start(o).unwrap();
        let url = sim.url();
        assert!(threads() > baseline);
        {
            // keep-alive connections and a request hanging when the server stops
            let c = reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(30))
                .no_proxy()
                .build()
                .unwrap();
            assert_eq!(post(&c, &url, "LoadTrajectory", &id).unwrap(), 200);
            let hung = {
                let c = c.clone();
                let url = url.clone();
                let id = id.clone();
                std::thread::spawn(move || post(&c, &url, "GetCascadeTrajectory", &id))
            };
            std::thread::sleep(Duration::from_millis(300));
            let t0 = Instant::now();
            sim.stop();
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "round {round}: stop blocked"
            );
            let r = hung.join().unwrap();
            assert!(r.is_err(), "the hung request ends without an answer: {r:?}");
            assert!(t0.elapsed() < Duration::from_secs(10));
        }
        // the port is closed
        let c = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(2))
            .no_proxy()
            .build()
            .unwrap();
        assert!(post(&c, &url, "LoadTrajectory", &id).is_err());
        drop(c);
        // stop() joined every server thread; what may still be ending is the
        // dropped clients' runtime threads
        let t0 = Instant::now();
        while threads() > baseline && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(
            threads() <= baseline,
            "round {round}: {} threads left, baseline {baseline}",
            threads()
        );
    }
}

#[test]
fn dropping_the_handle_stops_the_server() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let root = store("sim_shutdown_drop");
    let id = first_id(&root);
    let url = {
        let mut o = SimOptions::new(&root);
        o.write_cli_log = false;
        let sim = DaemonSim::start(o).unwrap();
        sim.url()
    };
    let c = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(2))
        .no_proxy()
        .build()
        .unwrap();
    assert!(post(&c, &url, "LoadTrajectory", &id).is_err());
}

#[test]
fn the_cli_serves_until_stopped_and_leaves_no_process() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let root = store("sim_shutdown_cli");
    let id = first_id(&root);
    let bin = env!("CARGO_BIN_EXE_agy-audit");
    // bounded run: exits by itself
    let t0 = Instant::now();
    let out = Command::new(bin)
        .args(["daemon-sim", "--store"])
        .arg(&root)
        .args(["--duration", "1", "--fault", &format!("{id}:latency:10")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(t0.elapsed() < Duration::from_secs(20));
    assert!(String::from_utf8_lossy(&out.stdout).contains("daemon-sim: serving"));
    // unbounded run: serves the port it wrote to cli.log, then is killed
    let mut child = Command::new(bin)
        .args(["daemon-sim", "--store"])
        .arg(&root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let log = root.join("cli.log");
    let t0 = Instant::now();
    let mut port = None;
    while port.is_none() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        port = agy_audit::rpc::parse_cli_log(&text)
            .filter(|_| text.matches("for HTTP\n").count() >= 2);
    }
    let url = format!(
        "http://127.0.0.1:{}",
        port.expect("the CLI announced its port")
    );
    let c = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(5))
        .no_proxy()
        .build()
        .unwrap();
    assert_eq!(post(&c, &url, "LoadTrajectory", &id).unwrap(), 200);
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success());
    assert!(!Path::new(&format!("/proc/{pid}")).exists() || !cfg!(target_os = "linux"));
    assert!(post(&c, &url, "LoadTrajectory", &id).is_err());
}
