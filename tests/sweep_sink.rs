//! The sweep's boundary as a type: `sweep_to` tells a `SweepSink` what
//! happens, in the order its contract states, and audits the same with no
//! terminal at all (what the coming `watch` needs).

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

use agy_audit::manifest::Counts;
use agy_audit::pipeline::{sweep_to, SessionResult, SweepOptions, SweepSink};
use agy_audit::rpc::ClientOptions;
use agy_audit::schema::Schema;
use agy_audit::source::legacy::LegacyKey;
use agy_corpus::corpus::{generate, GenerateOptions, PlanOptions};
use agy_corpus::sim::{DaemonSim, SimOptions};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<String>>,
    decoded: AtomicU64,
    fetched: AtomicU64,
}

impl SweepSink for Recorder {
    fn started(&self, total: u64) {
        self.events.lock().unwrap().push(format!("started {total}"));
    }
    fn decoded(&self) {
        self.decoded.fetch_add(1, Ordering::SeqCst);
    }
    fn fetched(&self) {
        self.fetched.fetch_add(1, Ordering::SeqCst);
    }
    fn recorded(&self, r: &SessionResult, counts: &Counts) {
        self.events
            .lock()
            .unwrap()
            .push(format!("recorded {} {}", r.record.file_id, counts.selected));
    }
    fn finished(&self) {
        self.events.lock().unwrap().push("finished".into());
    }
}

#[test]
fn a_sink_sees_every_session_once_in_contract_order() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    generate(&GenerateOptions {
        out: root.clone(),
        plan: PlanOptions {
            conversations: 12,
            seed: 2,
            near_miss_rate: 0.2,
            fault_rate: 0.0,
            scale: 0.05,
        },
        force: false,
    })
    .unwrap();
    let mut sim = SimOptions::new(&root);
    sim.load_fault_file = false;
    let sim = DaemonSim::start(sim).unwrap();
    let opts = SweepOptions {
        root: root.clone(),
        out: dir.path().join("sweep"),
        endpoint: sim.url(),
        client: ClientOptions::default(),
        concurrency: 3,
        jobs: 2,
        resume: false,
        shard: None,
        bracket_retries: 0,
        allow_empty: false,
        installed_agy_version: None,
        redaction: agy_audit::redact::Mode::Redact,
    };
    let sink = Recorder::default();
    let schema = Schema::modeled().unwrap();
    let summary = sweep_to(
        &schema,
        &LegacyKey::default(),
        &opts,
        Arc::new(AtomicBool::new(false)),
        &sink,
    )
    .unwrap();
    let events = sink.events.lock().unwrap().clone();
    assert_eq!(events.first().map(String::as_str), Some("started 12"));
    assert_eq!(events.last().map(String::as_str), Some("finished"));
    let recorded: Vec<&String> = events
        .iter()
        .filter(|e| e.starts_with("recorded"))
        .collect();
    assert_eq!(recorded.len(), 12, "{events:?}");
    // The running counts grow by one session per call.
    for (i, e) in recorded.iter().enumerate() {
        assert!(e.ends_with(&format!(" {}", i + 1)), "{e}");
    }
    assert_eq!(sink.decoded.load(Ordering::SeqCst), 12);
    // Only sources without a refusal of their own reach the fetch stage.
    let fetched = sink.fetched.load(Ordering::SeqCst);
    assert!(fetched > 0 && fetched <= 12, "{fetched}");
    assert!(summary.manifest.complete);
    assert_eq!(summary.manifest.counts.selected, 12);
}
