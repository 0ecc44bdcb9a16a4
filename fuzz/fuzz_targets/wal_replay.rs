//! The WAL replay from `.db` + `-wal` bytes (`fuzzing::split2`: the `.db`
//! first): the log's tail (torn writes, stale frames, a frame the checksums
//! prove damaged), the in-memory replay, and the snapshot built on it.
//!
//! Differential: `source::wal` says it "can never admit a state SQLite would
//! not read". Whenever it replays frames itself, the same bytes are also
//! handed to SQLite on a private disk copy (`Strategy::Disk`); both must
//! agree on whether the source reads, and on its canonical encoding and
//! refusals when it does.
#![no_main]

use agy_audit::fuzzing;
use agy_audit::schema::Schema;
use agy_audit::source::sqlite::Strategy;
use agy_audit::source::wal::{self, Replay};
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;

static SCHEMA: LazyLock<Schema> = LazyLock::new(|| Schema::modeled().expect("modeled schema"));

fuzz_target!(|data: &[u8]| {
    let (db, log) = fuzzing::split2(data);
    let _ = wal::tail(db, log);
    let replay = wal::replay(db, log);
    let memory = fuzzing::sqlite_source(&SCHEMA, db, Some(log), Strategy::Auto);
    if let Replay::Applied { .. } = replay {
        let disk = fuzzing::sqlite_source(&SCHEMA, db, Some(log), Strategy::Disk);
        match (&memory, &disk) {
            (Ok(m), Ok(d)) => {
                assert_eq!(
                    m.encoding, d.encoding,
                    "replayed in memory and by SQLite differ"
                );
                assert_eq!(
                    m.refusals, d.refusals,
                    "replayed in memory and by SQLite differ"
                );
            }
            (Err(_), Err(_)) => {}
            (m, d) => panic!(
                "in memory: {:?}; by SQLite: {:?}",
                m.as_ref().map(|s| s.refusals.len()),
                d.as_ref().map(|s| s.refusals.len())
            ),
        }
    }
});
