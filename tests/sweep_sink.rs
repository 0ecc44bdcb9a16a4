//! The sweep's boundary as a type: `sweep_to` hands its sinks what happens,
//! in the order their contract states (`pipeline::sink`); the manifest,
//! `sessions.csv` and the shape listings are sinks themselves
//! (`pipeline::Records`), and a sink can fail or stop the sweep, which then
//! ends cleanly (no new source, the manifest `complete: false`, the error
//! returned, exit 1 from the command).

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::manifest::Manifest;
use agy_audit::pipeline::{
    sweep_to, Finish, Flow, Records, SessionResult, SinkError, SinkResult, SweepOptions, SweepSink,
};
use agy_audit::rpc::ClientOptions;
use agy_audit::schema::Schema;
use agy_audit::source::legacy::LegacyKey;
use agy_audit::sweep_dir::{Committed, SweepDir};
use agy_corpus::corpus::{generate, GenerateOptions, PlanOptions};
use agy_corpus::sim::{DaemonSim, SimOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<String>>,
    decoded: AtomicU64,
    fetched: AtomicU64,
    committed: Mutex<Vec<Committed>>,
}

impl SweepSink for Recorder {
    fn started(&self, total: u64, _m: &Manifest) -> SinkResult {
        self.events.lock().unwrap().push(format!("started {total}"));
        Ok(Flow::Continue)
    }
    fn decoded(&self) {
        self.decoded.fetch_add(1, Ordering::SeqCst);
    }
    fn fetched(&self) {
        self.fetched.fetch_add(1, Ordering::SeqCst);
    }
    fn committed(&self, c: &Committed, r: &SessionResult) -> SinkResult {
        assert_eq!(c.file_id, r.record.file_id);
        self.committed.lock().unwrap().push(c.clone());
        Ok(Flow::Continue)
    }
    fn recorded(&self, r: &SessionResult, m: &Manifest) -> SinkResult {
        // Committed before recorded; the bodies already dropped.
        assert!(self
            .committed
            .lock()
            .unwrap()
            .iter()
            .any(|c| c.file_id == r.record.file_id));
        assert!(r.full_body.is_none() && r.ordinary_body.is_none());
        self.events.lock().unwrap().push(format!(
            "recorded {} {}",
            r.record.file_id, m.counts.selected
        ));
        Ok(Flow::Continue)
    }
    fn finished(&self, end: &mut Finish<'_>) -> Result<(), SinkError> {
        let complete = end.manifest().complete;
        self.events
            .lock()
            .unwrap()
            .push(format!("finished {complete}"));
        Ok(())
    }
}

/// A sink that answers `recorded` with `answer` from the `after`-th
/// session on.
struct Failing {
    after: u64,
    seen: AtomicU64,
    answer: fn(&Path) -> SinkResult,
}

impl SweepSink for Failing {
    fn recorded(&self, _r: &SessionResult, _m: &Manifest) -> SinkResult {
        if self.seen.fetch_add(1, Ordering::SeqCst) + 1 >= self.after {
            return (self.answer)(Path::new("/sink/output"));
        }
        Ok(Flow::Continue)
    }
}

fn write_failure(p: &Path) -> SinkResult {
    Err(SinkError::Output(agy_audit::Error::io(
        p,
        std::io::Error::other("disk full"),
    )))
}

fn stop(_p: &Path) -> SinkResult {
    Ok(Flow::Stop)
}

struct Fixture {
    _dir: tempfile::TempDir,
    _sim: DaemonSim,
    opts: SweepOptions,
}

/// A generated store of `n` conversations served by an in-process
/// daemon-sim, and the options of a sweep of it into `<tmp>/sweep`.
fn fixture(n: usize) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    generate(&GenerateOptions {
        out: root.clone(),
        plan: PlanOptions {
            conversations: n,
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
    Fixture {
        _dir: dir,
        _sim: sim,
        opts,
    }
}

fn sweep(
    opts: &SweepOptions,
    sinks: &[&dyn SweepSink],
) -> agy_audit::Result<agy_audit::pipeline::SweepSummary> {
    let schema = Schema::modeled().unwrap();
    sweep_to(
        &schema,
        &LegacyKey::default(),
        opts,
        Arc::new(AtomicBool::new(false)),
        sinks,
    )
}

fn manifest_on_disk(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap()
}

#[test]
fn a_sink_sees_every_session_once_in_contract_order() {
    let f = fixture(12);
    let sink = Recorder::default();
    let records = Records::new(&SweepDir::new(&f.opts.out));
    let [shapes, csv, manifest] = records.sinks();
    let summary = sweep(&f.opts, &[&sink, shapes, csv, manifest]).unwrap();
    let events = sink.events.lock().unwrap().clone();
    assert_eq!(events.first().map(String::as_str), Some("started 12"));
    assert_eq!(events.last().map(String::as_str), Some("finished true"));
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
    // Each commit names the files it renamed into corpus/, and they are
    // there (the layout is SweepDir's).
    let committed = sink.committed.lock().unwrap().clone();
    assert_eq!(committed.len(), 12);
    for c in &committed {
        for file in &c.files {
            assert!(file.starts_with(f.opts.out.join("corpus")), "{file:?}");
            assert!(file.is_file(), "{file:?}");
        }
    }
    // The records' sinks wrote the folder: the manifest on disk is the
    // summary's, with the listings' fingerprints; the CSV and listings are
    // beside it.
    let on_disk = manifest_on_disk(&f.opts.out);
    assert_eq!(on_disk["complete"], true);
    assert_eq!(
        on_disk,
        serde_json::from_slice::<serde_json::Value>(&summary.manifest.to_json()).unwrap()
    );
    assert!(summary.manifest.shapes.is_some());
    for name in ["sessions.csv", "shapes-ordinary.tsv", "shapes-full.tsv"] {
        assert!(f.opts.out.join(name).is_file(), "{name}");
    }
}

#[test]
fn a_sweep_without_sinks_audits_the_same_and_writes_only_corpus() {
    let f = fixture(4);
    let summary = sweep(&f.opts, &[]).unwrap();
    assert!(summary.manifest.complete);
    assert_eq!(summary.manifest.counts.selected, 4);
    // No manifest sink: no manifest, no CSV, no listings; the sessions'
    // files are the pipeline's own.
    let names: Vec<PathBuf> = std::fs::read_dir(&f.opts.out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(names, vec![f.opts.out.join("corpus")]);
}

#[test]
fn a_failing_sink_stops_the_sweep_cleanly_with_its_error() {
    let f = fixture(24);
    let failing = Failing {
        after: 1,
        seen: AtomicU64::new(0),
        answer: write_failure,
    };
    let sink = Recorder::default();
    let records = Records::new(&SweepDir::new(&f.opts.out));
    let [shapes, csv, manifest] = records.sinks();
    let e = sweep(&f.opts, &[&failing, &sink, shapes, csv, manifest]).unwrap_err();
    // The sink's own error, as the sweep's (an I/O error: exit 1).
    let text = e.to_string();
    assert!(
        text.contains("/sink/output") && text.contains("disk full"),
        "{text}"
    );
    assert!(!e.is_usage());
    // Every sink was still finished, the manifest written incomplete.
    let events = sink.events.lock().unwrap().clone();
    assert_eq!(events.last().map(String::as_str), Some("finished false"));
    let on_disk = manifest_on_disk(&f.opts.out);
    assert_eq!(on_disk["complete"], false);
    // What was recorded is whole: the strict reader accepts it, and every
    // recorded session's files are there.
    let (_, m) = agy_audit::manifest::read::read(&f.opts.out).unwrap();
    let dir = SweepDir::new(&f.opts.out);
    for s in &m.sessions {
        if s.payload_digest.is_some() {
            assert!(dir.sidecar(&s.file_id).is_file(), "{}", s.file_id);
        }
    }
    // No new source was taken after the failure: of 24, the ones already
    // on their way finished, not all.
    assert!(m.sessions.len() < 24, "{}", m.sessions.len());
}

#[test]
fn a_sink_that_stops_the_sweep_leaves_it_incomplete_and_resumable() {
    let f = fixture(24);
    let stopping = Failing {
        after: 1,
        seen: AtomicU64::new(0),
        answer: stop,
    };
    let records = Records::new(&SweepDir::new(&f.opts.out));
    let [shapes, csv, manifest] = records.sinks();
    let summary = sweep(&f.opts, &[&stopping, shapes, csv, manifest]).unwrap();
    assert!(summary.stopped);
    assert!(!summary.manifest.complete);
    assert!(summary.pending > 0, "{}", summary.pending);
    assert_eq!(manifest_on_disk(&f.opts.out)["complete"], false);
    // --resume finishes it.
    let mut again = f.opts.clone();
    again.resume = true;
    let records = Records::new(&SweepDir::new(&f.opts.out));
    let [shapes, csv, manifest] = records.sinks();
    let summary = sweep(&again, &[shapes, csv, manifest]).unwrap();
    assert!(summary.manifest.complete && !summary.stopped);
    assert_eq!(summary.manifest.sessions.len(), 24);
}

/// A record that cannot be written at the end (here `sessions.csv`, a
/// folder in its place) fails the sweep (exit 1, naming it) and the
/// manifest, written after every other output, says `complete: false`:
/// never a complete manifest beside a missing output.
#[test]
fn an_output_not_written_at_the_end_leaves_the_manifest_incomplete() {
    let (_dir, store, sweep) = common::swept_store(6, 5);
    assert_eq!(common::read_manifest(&sweep)["complete"], true);
    let csv = sweep.join("sessions.csv");
    std::fs::remove_file(&csv).unwrap();
    std::fs::create_dir(&csv).unwrap();
    let sim = common::start_sim(&store, &["--no-fault-file"]);
    let o = common::sweep_command(&store, &sweep, &sim.url)
        .arg("--resume")
        .output()
        .unwrap();
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("sessions.csv"), "{text}");
    assert_eq!(common::read_manifest(&sweep)["complete"], false, "{text}");
}
