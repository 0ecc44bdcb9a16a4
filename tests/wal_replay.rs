//! The in-memory WAL replay (`source::wal`) reads exactly the state SQLite's
//! own recovery reads: every snapshot built in memory is compared, table by
//! table and row by row, with SQLite replaying the same files from a private
//! copy on disk (`Strategy::Disk`), on logs written by real SQLite (several
//! transactions, uncommitted and torn tails, a log restarted after a
//! checkpoint, several page sizes) and on every log of a generated corpus.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

use agy_audit::source::sqlite::{read_rows, snapshot_with, SnapshotVia, Strategy};
use agy_corpus::corpus::{generate, GenerateOptions, PlanOptions};
use rusqlite::types::ValueRef;
use rusqlite::Connection;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Every table's rows (and user_version), as text.
fn dump(c: &Connection) -> Vec<String> {
    let mut out = vec![format!(
        "user_version={}",
        c.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
            .unwrap()
    )];
    let tables: Vec<String> = c
        .prepare("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for t in tables {
        let mut st = c
            .prepare(&format!("SELECT * FROM \"{t}\" ORDER BY rowid"))
            .unwrap();
        let n = st.column_count();
        let mut rows = st.query([]).unwrap();
        while let Some(r) = rows.next().unwrap() {
            let mut line = format!("{t}:");
            for i in 0..n {
                line.push_str(&match r.get_ref(i).unwrap() {
                    ValueRef::Null => "null".to_string(),
                    ValueRef::Integer(v) => v.to_string(),
                    ValueRef::Real(v) => v.to_string(),
                    ValueRef::Text(v) => format!("t{v:?}"),
                    ValueRef::Blob(v) => {
                        format!("b{}:{}", v.len(), agy_audit::util::hex(&Sha256::digest(v)))
                    }
                });
                line.push('|');
            }
            out.push(line);
        }
    }
    out
}

/// Snapshots `db` both ways; asserts the same state (every row, and what
/// the reader makes of it) and returns how the in-memory one was built.
fn same_both_ways(db: &Path) -> SnapshotVia {
    let mem = snapshot_with(db, Strategy::Auto).unwrap();
    let disk = snapshot_with(db, Strategy::Disk).unwrap();
    assert_eq!(disk.via, SnapshotVia::Disk);
    assert_eq!(dump(mem.conn()), dump(disk.conn()), "{}", db.display());
    let (a, b) = (read_rows(db, &mem).unwrap(), read_rows(db, &disk).unwrap());
    assert_eq!(format!("{a:?}"), format!("{b:?}"), "{}", db.display());
    mem.via
}

/// A live WAL database with table `t (k, v)` under a fresh `tmp(name)`,
/// written by `writes`; the database and its log are copied (while the
/// writer is still open, so nothing is checkpointed) to
/// `out/conversation.db{,-wal}`. Returns the copy and its directory.
fn live_copy(name: &str, page: u32, writes: impl FnOnce(&Connection)) -> (PathBuf, PathBuf) {
    let base = tmp(name);
    let (work, out) = (base.join("work"), base.join("out"));
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    let live = work.join("live.db");
    let c = Connection::open(&live).unwrap();
    c.execute_batch(&format!(
        "PRAGMA page_size={page}; PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;
         CREATE TABLE t (k INTEGER, v BLOB);"
    ))
    .unwrap();
    writes(&c);
    let db = out.join("conversation.db");
    std::fs::copy(&live, &db).unwrap();
    std::fs::copy(work.join("live.db-wal"), out.join("conversation.db-wal")).unwrap();
    drop(c);
    (db, out)
}

fn blob(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn transactions(c: &Connection, from: usize, count: usize) {
    for i in from..from + count {
        c.execute(
            "INSERT INTO t (k, v) VALUES (?1, ?2)",
            rusqlite::params![i as i64, blob(100 + i * 997 % 9000, i as u8)],
        )
        .unwrap();
        if i % 3 == 0 {
            c.execute("UPDATE t SET v = x'00' WHERE k = ?1", [(i / 2) as i64])
                .unwrap();
        }
        if i % 5 == 0 {
            c.execute("DELETE FROM t WHERE k = ?1", [(i / 3) as i64])
                .unwrap();
        }
    }
}

fn tmp(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("wal-replay")
        .join(name);
    let _ = std::fs::remove_dir_all(&p);
    p
}

#[test]
fn real_sqlite_logs_replay_to_the_state_sqlite_reads() {
    for page in [512u32, 1024, 4096, 65536] {
        let (db, _) = live_copy(&format!("many-{page}"), page, |c| {
            c.execute_batch("PRAGMA user_version=7;").unwrap();
            transactions(c, 0, 40);
        });
        assert!(
            matches!(same_both_ways(&db), SnapshotVia::Replayed(n) if n > 0),
            "page size {page}"
        );
    }
}

#[test]
fn a_log_restarted_after_a_checkpoint_replays_only_its_new_frames() {
    let (db, out) = live_copy("restart", 4096, |c| {
        transactions(c, 0, 30);
        // a complete checkpoint; the next writer restarts the log from its
        // start with new salts, leaving older frames after the new ones
        let _: (i64, i64, i64) = c
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .unwrap();
        transactions(c, 30, 3);
    });
    let wal = std::fs::read(out.join("conversation.db-wal")).unwrap();
    let frames_in_file = (wal.len() - 32) / (24 + 4096);
    match same_both_ways(&db) {
        SnapshotVia::Replayed(n) => assert!(
            n < frames_in_file,
            "the restarted log ({n} frames) is followed by older ones ({frames_in_file} in the file)"
        ),
        other => panic!("not replayed: {other:?}"),
    }
}

#[test]
fn uncommitted_and_torn_tails_replay_like_sqlite() {
    let (db, out) = live_copy("tails", 1024, |c| transactions(c, 0, 12));
    let wal_path = out.join("conversation.db-wal");
    let wal = std::fs::read(&wal_path).unwrap();
    let frame = 24 + 1024;
    // cut at every frame boundary and inside frames, from the end backwards
    let mut cuts: Vec<usize> = (1..=6).map(|k| wal.len() - k * frame).collect();
    cuts.extend([wal.len() - 1, wal.len() - frame / 2, 32 + frame + 7, 32]);
    for cut in cuts {
        std::fs::write(&wal_path, &wal[..cut]).unwrap();
        same_both_ways(&db);
    }
    // a flipped byte in a middle frame: SQLite would end the log there and
    // silently drop every later commit; the next frame still chains from
    // the checksum the damaged one carries, so the checksums prove damage
    // (not a torn write) and the reader refuses it, naming the frame
    let mut bad = wal.clone();
    bad[32 + 3 * frame + 100] ^= 0xff;
    std::fs::write(&wal_path, &bad).unwrap();
    for strategy in [Strategy::Auto, Strategy::Disk] {
        let e = snapshot_with(&db, strategy)
            .err()
            .expect("a damaged log is refused");
        let text = e.to_string();
        assert!(
            text.contains("-wal") && text.contains("frame 3") && text.contains("damaged"),
            "{text}"
        );
    }
}

#[test]
fn every_log_of_a_generated_corpus_replays_like_sqlite() {
    let root = tmp("corpus");
    generate(&GenerateOptions {
        out: root.clone(),
        plan: PlanOptions {
            conversations: 40,
            seed: 5,
            near_miss_rate: 0.2,
            fault_rate: 0.0,
            scale: 0.2,
        },
        force: true,
    })
    .unwrap();
    let mut replayed = 0;
    for e in std::fs::read_dir(root.join("conversations")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "db") {
            replayed += usize::from(matches!(same_both_ways(&p), SnapshotVia::Replayed(_)));
        }
    }
    assert!(replayed > 0, "the corpus has logs to replay");
}
