//! `agy-audit bench` on a small generated store: the figures are measured,
//! not printed constants (they follow the corpus), and the end-to-end sweep
//! runs against the simulated daemon without touching the store.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::process::Command;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agy-audit"));
    c.env_remove("ANTIGRAVITY_DAEMON_URL")
        .env_remove("ANTIGRAVITY_CLI_ROOT");
    c
}

fn generate(store: &Path, n: usize) {
    let o = bin()
        .args(["corpus", "generate", "--out"])
        .arg(store)
        .args(["--conversations", &n.to_string()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn bench_json(store: &Path, extra: &[&str]) -> serde_json::Value {
    let o = bin()
        .args(["bench", "--json", "--no-peer", "--no-rss", "--corpus"])
        .arg(store)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn bench_measures_the_corpus_and_sweeps_it_against_the_simulated_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    generate(&store, 30);
    let log_before = std::fs::read(store.join("cli.log")).ok();
    let v = bench_json(&store, &["--latency-ms", "5", "--concurrency", "1,4"]);
    let off = &v["offline"];
    let truth = std::fs::read_to_string(store.join(".truth/expected.jsonl")).unwrap();
    // No daemon faults in this corpus: exactly the truly verified sources
    // pass the offline verify.
    let qualified_truth = truth
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|t| t["verdict"].as_str().unwrap().starts_with("verified"))
        .count() as u64;
    let qualified = off["qualified"].as_u64().unwrap();
    let refused = off["refused"].as_u64().unwrap();
    assert_eq!(qualified + refused, 30);
    assert!(qualified > 0);
    assert_eq!(qualified, qualified_truth);
    assert!(off["bytes"].as_u64().unwrap() > 0);
    assert!(off["mbPerSec"].as_f64().unwrap() > 0.0);
    assert!(off["sha256MbPerSec"].as_f64().unwrap() > 0.0);
    let s = &v["sweep"];
    assert_eq!(s["latencyMs"], 5);
    let rows = s["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "one row per --concurrency value");
    for (r, c) in rows.iter().zip([1u64, 4]) {
        assert_eq!(r["concurrency"], c);
        assert_eq!(r["conversations"], 30);
        assert_eq!(r["error"], 0);
        assert_eq!(r["incomplete"], 0);
        assert_eq!(r["notFetched"], 0);
        let fetched = r["fetched"].as_u64().unwrap();
        assert!(fetched > 0 && fetched <= 30);
        // 2 × fetched × 5 ms / c
        let ideal = 2.0 * fetched as f64 * 0.005 / c as f64;
        assert!((r["idealSeconds"].as_f64().unwrap() - ideal).abs() < 1e-9);
        assert!(r["wallSeconds"].as_f64().unwrap() >= ideal);
        let cpu =
            r["clientUserSeconds"].as_f64().unwrap() + r["clientSysSeconds"].as_f64().unwrap();
        assert!(cpu > 0.0, "the client's own CPU is measured");
        assert!(r["clientPeakRss"].as_u64().unwrap() > 0);
        let floor = r["cpuFloorSeconds"].as_f64().unwrap();
        let ratio = r["ratio"].as_f64().unwrap();
        let wall = r["wallSeconds"].as_f64().unwrap();
        assert!((ratio - wall / ideal.max(floor)).abs() < 1e-9);
        // Both processes share the cores: the floor counts the daemon too.
        let both = cpu + r["simCpuSeconds"].as_f64().unwrap();
        let cores = r["cores"].as_f64().unwrap();
        assert!(
            (floor - both / cores).abs() < 1e-9,
            "{floor} vs {both}/{cores}"
        );
    }
    assert!(rows[0]["memoryPerConversation"].is_null());
    assert!(rows[1]["memoryPerConversation"].as_f64().is_some());
    let c = &v["comparison"];
    assert!(c["responses"].as_u64().unwrap() > 0);
    assert!(c["mbPerSec"].as_f64().unwrap() > 0.0);
    let targets = v["targets"].as_array().unwrap();
    let target = |name: &str| {
        targets
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no target {name}"))
    };
    // Judged from this run's rows, or said not measured.
    assert!(target("memory per conversation in flight")["met"].is_boolean());
    assert!(target("client peak RSS at concurrency 64")["met"].is_null());
    assert!(target("JSON comparison, one core")["met"].is_boolean());
    assert_eq!(
        std::fs::read(store.join("cli.log")).ok(),
        log_before,
        "the bench's daemon leaves cli.log alone"
    );
}

#[test]
fn bench_skips_the_sweep_for_a_store_without_daemon_views() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    generate(&store, 5);
    std::fs::remove_dir_all(store.join(".truth")).unwrap();
    let v = bench_json(&store, &[]);
    assert!(v["sweep"]["skipped"]
        .as_str()
        .unwrap()
        .contains("not a generated store"));
    assert_eq!(
        v["offline"]["qualified"].as_u64().unwrap() + v["offline"]["refused"].as_u64().unwrap(),
        5
    );
}

#[test]
fn bench_reports_the_median_of_its_passes() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    generate(&store, 6);
    let v = bench_json(&store, &["--no-sweep", "--passes", "3"]);
    let off = &v["offline"];
    assert_eq!(off["passes"], 3);
    let mb = off["mbPerSec"].as_f64().unwrap();
    let fastest = off["fastestMbPerSec"].as_f64().unwrap();
    let slowest = off["slowestMbPerSec"].as_f64().unwrap();
    assert!(
        slowest <= mb && mb <= fastest,
        "{slowest} <= {mb} <= {fastest}"
    );
    // The ratio and the hash figure are one measurement: hash = verify / ratio.
    let ratio = off["ratioToSha256"].as_f64().unwrap();
    let sha = off["sha256MbPerSec"].as_f64().unwrap();
    assert!((sha * ratio - mb).abs() <= 1e-6 * mb.max(1.0));
    assert_eq!(bench_json(&store, &["--no-sweep"])["offline"]["passes"], 5);

    let o = bin()
        .args([
            "bench",
            "--no-peer",
            "--no-rss",
            "--no-sweep",
            "--passes",
            "0",
            "--corpus",
        ])
        .arg(&store)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--passes"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn bench_store_scaling_sweeps_a_store_four_times_larger() {
    let dir = tempfile::tempdir().unwrap();
    let (small, large) = (dir.path().join("small"), dir.path().join("large"));
    generate(&small, 24);
    generate(&large, 96);
    let v = bench_json(
        &small,
        &[
            "--no-comparison",
            "--passes",
            "1",
            "--latency-ms",
            "5",
            "--concurrency",
            "16",
            "--store-scaling",
            "--large-corpus",
            large.to_str().unwrap(),
            "--base-verify-cpu",
            "1000",
        ],
    );
    let s = &v["sweep"]["storeScaling"];
    assert_eq!(s["small"]["conversations"], 24);
    assert_eq!(s["large"]["conversations"], 96);
    assert_eq!(s["factor"], 4);
    assert_eq!(
        s["small"]["concurrency"], 16,
        "at the highest --concurrency"
    );
    let cpu = |r: &serde_json::Value| {
        r["clientUserSeconds"].as_f64().unwrap() + r["clientSysSeconds"].as_f64().unwrap()
    };
    let ratio = s["cpuRatio"].as_f64().unwrap();
    assert!((ratio - cpu(&s["large"]) / cpu(&s["small"])).abs() < 1e-9);
    let rss = s["rssRatio"].as_f64().unwrap();
    let peak = |r: &serde_json::Value| r["clientPeakRss"].as_f64().unwrap();
    assert!((rss - peak(&s["large"]) / peak(&s["small"])).abs() < 1e-9);
    let targets = v["targets"].as_array().unwrap();
    let target = |name: &str| {
        targets
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no target {name}: {targets:?}"))
    };
    let (a, b) = (
        s["largestSmall"].as_f64().unwrap(),
        s["largestLarge"].as_f64().unwrap(),
    );
    let growth = target("sweep client CPU, 4 × the store");
    if (a - b).abs() <= 0.05 * a.max(b) {
        assert_eq!(growth["met"], serde_json::json!(ratio <= 4.2));
    } else {
        assert!(growth["met"].is_null(), "{growth}");
    }
    // Held to the given base verify figure, whatever this run's verify took.
    let cpu_target = target("sweep client CPU / offline verify CPU at concurrency 16");
    let measured = cpu_target["measured"].as_str().unwrap();
    assert!(
        measured.contains("/ 1000.00 s, the base commit's verify"),
        "{measured}"
    );
    assert_eq!(cpu_target["met"], true);
}

#[test]
fn bench_records_never_writes_into_a_folder_holding_anything() {
    let dir = tempfile::tempdir().unwrap();
    let held = dir.path().join("held");
    std::fs::create_dir(&held).unwrap();
    // A name the bench writes, and one it removes before a command runs.
    std::fs::write(held.join("old.json"), b"mine").unwrap();
    std::fs::write(held.join("report.html"), b"mine too").unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"plain").unwrap();
    for target in [&held, &file] {
        let o = bin()
            .args(["bench", "--records", "1000", "--records-dir"])
            .arg(target)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("--records-dir"), "{err}");
    }
    assert_eq!(std::fs::read(held.join("old.json")).unwrap(), b"mine");
    assert_eq!(
        std::fs::read(held.join("report.html")).unwrap(),
        b"mine too"
    );
    assert_eq!(std::fs::read_dir(&held).unwrap().count(), 2);
    assert_eq!(std::fs::read(&file).unwrap(), b"plain");
    // Fewer sessions than the planted changes need is refused by name.
    let o = bin().args(["bench", "--records", "999"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--records"));
}
