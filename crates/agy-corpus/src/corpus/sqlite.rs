//! Deterministic conversation databases, WAL included.
//!
//! SQLite writes the database pages deterministically, but a `-wal` it writes
//! starts with random salts. So the database is built in a scratch file with
//! `journal_mode=OFF`: the checkpointed part is committed first and its image
//! becomes the `.db`; every later transaction (one per trailing step, as agy
//! commits them) is committed in turn, and the pages it changed become frames
//! of a `-wal` this module writes itself (sqlite.org/fileformat2.html#walformat):
//! a 32-byte header (magic 0x377f0682, version 3007000, page size, checkpoint
//! sequence, two salts derived from the seed, a checksum), then per page a
//! 24-byte frame header (page number, database size after commit on the last
//! frame of a transaction, the salts, cumulative checksums) and the page.
//! Bytes 18 and 19 of every page-1 image are set to 2 (WAL mode), as agy's
//! files have them.

use super::CorpusError;
use rusqlite::Connection;
use std::path::Path;

/// agy's nine DDL statements, verbatim (public-format-facts §1.2).
pub const DDL: &[&str] = &[
    "CREATE TABLE `trajectory_meta` (`trajectory_id` text,`cascade_id` text,`trajectory_type` integer,`source` integer,PRIMARY KEY (`trajectory_id`))",
    "CREATE TABLE `steps` (`idx` integer,`step_type` integer NOT NULL DEFAULT 0,`status` integer NOT NULL DEFAULT 0,`has_subtrajectory` numeric NOT NULL DEFAULT false,`metadata` blob,`error_details` blob,`permissions` blob,`task_details` blob,`render_info` blob,`step_payload` blob,`step_format` integer NOT NULL DEFAULT 0,PRIMARY KEY (`idx`))",
    "CREATE INDEX `idx_steps_status` ON `steps`(`status`)",
    "CREATE INDEX `idx_steps_step_type` ON `steps`(`step_type`)",
    "CREATE TABLE `gen_metadata` (`idx` integer,`data` blob,`size` integer NOT NULL DEFAULT 0,PRIMARY KEY (`idx`))",
    "CREATE TABLE `executor_metadata` (`idx` integer,`data` blob,PRIMARY KEY (`idx`))",
    "CREATE TABLE `parent_references` (`idx` integer,`data` blob,PRIMARY KEY (`idx`))",
    "CREATE TABLE `trajectory_metadata_blob` (`id` text DEFAULT \"main\",`data` blob,PRIMARY KEY (`id`))",
    "CREATE TABLE `battle_mode_infos` (`idx` integer,`data` blob,PRIMARY KEY (`idx`))",
];

/// The page size of generated databases.
pub const PAGE_SIZE: usize = 4096;
/// WAL header magic (little-endian checksums).
pub const WAL_MAGIC: u32 = 0x377f_0682;
/// WAL format version.
pub const WAL_VERSION: u32 = 3_007_000;

/// One `steps` row, columns as stored.
#[derive(Debug, Clone, Default)]
pub struct StepRow {
    /// idx.
    pub idx: i64,
    /// step_type.
    pub step_type: i64,
    /// status.
    pub status: i64,
    /// has_subtrajectory.
    pub has_subtrajectory: i64,
    /// metadata.
    pub metadata: Option<Vec<u8>>,
    /// error_details.
    pub error_details: Option<Vec<u8>>,
    /// permissions.
    pub permissions: Option<Vec<u8>>,
    /// task_details.
    pub task_details: Option<Vec<u8>>,
    /// render_info.
    pub render_info: Option<Vec<u8>>,
    /// step_payload.
    pub step_payload: Vec<u8>,
    /// step_format.
    pub step_format: i64,
}

/// Everything one database holds, plus where its WAL starts.
#[derive(Debug, Clone, Default)]
pub struct DbRows {
    /// trajectory_meta.trajectory_id.
    pub trajectory_id: String,
    /// trajectory_meta.cascade_id.
    pub cascade_id: String,
    /// trajectory_meta.trajectory_type.
    pub trajectory_type: i64,
    /// trajectory_meta.source.
    pub source: i64,
    /// steps rows, in insertion order.
    pub steps: Vec<StepRow>,
    /// gen_metadata rows: (idx, data, the position in `steps` it is committed with).
    pub gens: Vec<(i64, Vec<u8>, usize)>,
    /// executor_metadata rows: (idx, data, the position in `steps` it is committed with).
    pub execs: Vec<(i64, Vec<u8>, usize)>,
    /// parent_references rows.
    pub refs: Vec<Vec<u8>>,
    /// trajectory_metadata_blob 'main'.
    pub metadata: Vec<u8>,
    /// PRAGMA user_version.
    pub user_version: i64,
    /// Extra statements run after the DDL (schema-drift near-misses).
    pub extra_sql: Vec<String>,
    /// Steps from this position on are committed one transaction each into the WAL.
    pub wal_from: usize,
}

/// The files of one conversation database.
#[derive(Debug, Clone)]
pub struct DbFiles {
    /// The `.db` bytes.
    pub db: Vec<u8>,
    /// The `-wal` bytes, when frames were left uncheckpointed.
    pub wal: Option<Vec<u8>>,
}

fn sql(path: &Path, e: rusqlite::Error) -> CorpusError {
    CorpusError::Sqlite {
        path: path.to_path_buf(),
        detail: e.to_string(),
    }
}

fn io(path: &Path, e: std::io::Error) -> CorpusError {
    CorpusError::Io {
        path: path.to_path_buf(),
        source: e,
    }
}

/// Builds the database in `scratch` (a file path that may be overwritten) and
/// returns its deterministic `.db` and `-wal` bytes. `salt` seeds the WAL salts.
pub fn build(rows: &DbRows, scratch: &Path, salt: u64) -> Result<DbFiles, CorpusError> {
    let _ = std::fs::remove_file(scratch);
    let c = Connection::open(scratch).map_err(|e| sql(scratch, e))?;
    c.execute_batch(&format!(
        "PRAGMA page_size={PAGE_SIZE}; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
    ))
    .map_err(|e| sql(scratch, e))?;
    let wal_from = rows.wal_from.min(rows.steps.len());
    c.execute_batch("BEGIN").map_err(|e| sql(scratch, e))?;
    for stmt in DDL {
        c.execute(stmt, []).map_err(|e| sql(scratch, e))?;
    }
    for stmt in &rows.extra_sql {
        c.execute_batch(stmt).map_err(|e| sql(scratch, e))?;
    }
    c.execute_batch(&format!("PRAGMA user_version={};", rows.user_version))
        .map_err(|e| sql(scratch, e))?;
    c.execute(
        "INSERT INTO trajectory_meta VALUES (?1, ?2, ?3, ?4)",
        rusqlite::params![
            rows.trajectory_id,
            rows.cascade_id,
            rows.trajectory_type,
            rows.source
        ],
    )
    .map_err(|e| sql(scratch, e))?;
    c.execute(
        "INSERT INTO trajectory_metadata_blob VALUES ('main', ?1)",
        [&rows.metadata],
    )
    .map_err(|e| sql(scratch, e))?;
    for (i, d) in rows.refs.iter().enumerate() {
        c.execute(
            "INSERT INTO parent_references VALUES (?1, ?2)",
            rusqlite::params![i as i64, d],
        )
        .map_err(|e| sql(scratch, e))?;
    }
    for pos in 0..wal_from {
        insert_step(&c, rows, pos).map_err(|e| sql(scratch, e))?;
    }
    c.execute_batch("COMMIT").map_err(|e| sql(scratch, e))?;
    let mut prev = read_image(scratch)?;
    let base = prev.clone();
    let mut frames: Vec<(u32, Vec<u8>, u32)> = Vec::new();
    for pos in wal_from..rows.steps.len() {
        c.execute_batch("BEGIN").map_err(|e| sql(scratch, e))?;
        insert_step(&c, rows, pos).map_err(|e| sql(scratch, e))?;
        c.execute_batch("COMMIT").map_err(|e| sql(scratch, e))?;
        let next = read_image(scratch)?;
        let pages = next.len() / PAGE_SIZE;
        let mut changed: Vec<u32> = Vec::new();
        for p in 0..pages {
            let a = next.get(p * PAGE_SIZE..(p + 1) * PAGE_SIZE);
            let b = prev.get(p * PAGE_SIZE..(p + 1) * PAGE_SIZE);
            if a != b {
                changed.push(p as u32 + 1);
            }
        }
        let last = changed.len();
        for (k, pgno) in changed.into_iter().enumerate() {
            let start = (pgno as usize - 1) * PAGE_SIZE;
            let page = next[start..start + PAGE_SIZE].to_vec();
            let commit = if k + 1 == last { pages as u32 } else { 0 };
            frames.push((pgno, page, commit));
        }
        prev = next;
    }
    drop(c);
    let _ = std::fs::remove_file(scratch);
    let wal = if frames.is_empty() {
        None
    } else {
        Some(wal_bytes(&frames, salt))
    };
    Ok(DbFiles { db: base, wal })
}

fn insert_step(c: &Connection, rows: &DbRows, pos: usize) -> rusqlite::Result<()> {
    let s = &rows.steps[pos];
    c.execute(
        "INSERT INTO steps (idx, step_type, status, has_subtrajectory, metadata, error_details, \
         permissions, task_details, render_info, step_payload, step_format) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        rusqlite::params![
            s.idx,
            s.step_type,
            s.status,
            s.has_subtrajectory,
            s.metadata,
            s.error_details,
            s.permissions,
            s.task_details,
            s.render_info,
            s.step_payload,
            s.step_format,
        ],
    )?;
    for (idx, data, at) in &rows.gens {
        if *at == pos {
            c.execute(
                "INSERT INTO gen_metadata VALUES (?1, ?2, ?3)",
                rusqlite::params![idx, data, data.len() as i64],
            )?;
        }
    }
    for (idx, data, at) in &rows.execs {
        if *at == pos {
            c.execute(
                "INSERT INTO executor_metadata VALUES (?1, ?2)",
                rusqlite::params![idx, data],
            )?;
        }
    }
    Ok(())
}

/// Reads the scratch file and marks it as a WAL-mode database.
fn read_image(path: &Path) -> Result<Vec<u8>, CorpusError> {
    let mut b = std::fs::read(path).map_err(|e| io(path, e))?;
    if b.len() < 100 || b.len() % PAGE_SIZE != 0 {
        return Err(CorpusError::Sqlite {
            path: path.to_path_buf(),
            detail: format!("unexpected database size {}", b.len()),
        });
    }
    b[18] = 2;
    b[19] = 2;
    Ok(b)
}

/// The WAL checksum over `data` (8-byte aligned), continuing from `s`, with
/// little-endian words (magic 0x377f0682).
pub fn wal_checksum(data: &[u8], s: (u32, u32)) -> (u32, u32) {
    let (mut s0, mut s1) = s;
    for c in data.chunks_exact(8) {
        let x0 = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        let x1 = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
        s0 = s0.wrapping_add(x0).wrapping_add(s1);
        s1 = s1.wrapping_add(x1).wrapping_add(s0);
    }
    (s0, s1)
}

/// A WAL file holding `frames` ((page number, page image, db size on commit
/// or 0)), with salts derived from `salt`.
pub fn wal_bytes(frames: &[(u32, Vec<u8>, u32)], salt: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + frames.len() * (24 + PAGE_SIZE));
    let salt1 = (salt >> 32) as u32;
    let salt2 = salt as u32;
    out.extend_from_slice(&WAL_MAGIC.to_be_bytes());
    out.extend_from_slice(&WAL_VERSION.to_be_bytes());
    out.extend_from_slice(&(PAGE_SIZE as u32).to_be_bytes());
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&salt1.to_be_bytes());
    out.extend_from_slice(&salt2.to_be_bytes());
    let mut ck = wal_checksum(&out[..24], (0, 0));
    out.extend_from_slice(&ck.0.to_be_bytes());
    out.extend_from_slice(&ck.1.to_be_bytes());
    for (pgno, page, commit) in frames {
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&pgno.to_be_bytes());
        h.extend_from_slice(&commit.to_be_bytes());
        ck = wal_checksum(&h[..8], ck);
        ck = wal_checksum(page, ck);
        h.extend_from_slice(&salt1.to_be_bytes());
        h.extend_from_slice(&salt2.to_be_bytes());
        h.extend_from_slice(&ck.0.to_be_bytes());
        h.extend_from_slice(&ck.1.to_be_bytes());
        out.extend_from_slice(&h);
        out.extend_from_slice(page);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(n: usize, wal_from: usize) -> DbRows {
        DbRows {
            trajectory_id: "t".into(),
            cascade_id: "c".into(),
            trajectory_type: 4,
            source: 17,
            steps: (0..n)
                .map(|i| StepRow {
                    idx: i as i64,
                    step_type: 15,
                    status: 3,
                    step_payload: vec![i as u8; 3000 + i * 500],
                    ..StepRow::default()
                })
                .collect(),
            gens: (0..n).map(|i| (i as i64, vec![7; 100], i)).collect(),
            execs: vec![(0, vec![1, 2], n.saturating_sub(1))],
            refs: vec![],
            metadata: vec![],
            user_version: 1,
            extra_sql: vec![],
            wal_from,
        }
    }

    #[test]
    fn wal_frames_replay_and_bytes_are_deterministic() {
        let dir = tempfile::tempdir().unwrap();
        let a = build(&rows(8, 3), &dir.path().join("a.tmp"), 42).unwrap();
        let b = build(&rows(8, 3), &dir.path().join("b.tmp"), 42).unwrap();
        assert_eq!(a.db, b.db);
        assert_eq!(a.wal, b.wal);
        assert_eq!(&a.db[18..20], &[2, 2]);
        let wal = a.wal.clone().unwrap();
        assert_eq!(&wal[..4], &WAL_MAGIC.to_be_bytes());
        let db = dir.path().join("x.db");
        std::fs::write(&db, &a.db).unwrap();
        std::fs::write(dir.path().join("x.db-wal"), &wal).unwrap();
        let c = Connection::open(&db).unwrap();
        let n: i64 = c
            .query_row("SELECT count(*) FROM steps", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 8);
        let mode: String = c
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let ok: String = c.query_row("PRAGMA quick_check", [], |r| r.get(0)).unwrap();
        assert_eq!(ok, "ok");
        let uv: i64 = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(uv, 1);
        drop(c);
        // without the WAL only the checkpointed part is there
        let only = dir.path().join("y.db");
        std::fs::write(&only, &a.db).unwrap();
        let c = Connection::open(&only).unwrap();
        let n: i64 = c
            .query_row("SELECT count(*) FROM steps", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 3);
    }
}
