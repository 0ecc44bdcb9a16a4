//! Plants in a generated home (`corpus generate --home H --plant-troubles
//! --extra-roots`): the store troubles users report (public-format-facts
//! §7.2, §7.3) and the store folders other tools read (§7.1), written by
//! the generator itself, independently of the reader's code.
//!
//! Troubles, in the CLI root (`H/.gemini/antigravity-cli`), each in its own
//! conversation (SQLite sources without a `-wal` or a shadowed `.pb`, in
//! file-name order):
//!
//! * a summaries index `conversation_summaries.db` (§1.7's columns,
//!   `user_version` 3, WAL header bytes) that misses two conversations and
//!   holds one entry, [`GONE_ID`], whose conversation has no file;
//! * zombie steps: the last step set RUNNING and the one before it WAITING
//!   (the `steps.status` column and the Step's field 4 alike), the files'
//!   mtime set an hour back, no process holding them;
//! * a malformed database: page 2's b-tree page type byte overwritten, so
//!   SQLite's `PRAGMA quick_check` fails;
//! * an oversized conversation: its `.db` extended, sparse, to 100 MiB
//!   (over the reader's 100 MB), the header's page count unchanged.
//!
//! The three conversations whose content changed leave the ground truth
//! (`.truth/expected.jsonl`): their planned verdict no longer holds.
//! Everything planted is listed in `.truth/plants.json`.
//!
//! Store folders: `H/.gemini/antigravity-backup/conversations/` (byte copies
//! of three CLI conversations: same ids; no marker, so an unknown surface),
//! `H/.gemini/antigravity-ide/` (a store of its own with the IDE's state
//! file), the desktop app's data folder `H/.config/Antigravity/` (a store
//! of its own, no marker) and `H/antigravity-app-data/` (a store of its own
//! for `$ANTIGRAVITY_APP_DATA_DIR`, no marker).

use super::{generate, io, CorpusError, GenerateOptions, PlanOptions, IDE_STATE};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The id of the summaries index's entry without a file.
pub const GONE_ID: &str = "d1ed0000-0000-4000-8000-00000000d0e5";

/// The size the oversized conversation's `.db` is extended to: 100 MiB.
pub const OVERSIZED_LEN: u64 = 100 << 20;

/// The summaries index's DDL (§1.7's columns, in its order).
const SUMMARIES_DDL: &str = "CREATE TABLE `conversation_summaries` (\
    `conversation_id` text,`title` text,`preview` text,`step_count` integer,\
    `last_modified_time` datetime,`workspace_uris` text,`status` text,`source` text,\
    `project_id` text,`agent_name` text,`parent_conversation_id` text,\
    `nesting_depth` integer,`battle_id` text,`winning_conversation_id` text,\
    `not_fully_idle` numeric,`killed` numeric,`last_user_input_time` datetime,\
    `last_user_input_step_index` integer,`app_data_dir` text,`raw_summary` blob,\
    `group_id` text,PRIMARY KEY (`conversation_id`))";

fn sql(path: &Path, e: rusqlite::Error) -> CorpusError {
    CorpusError::Sqlite {
        path: path.to_path_buf(),
        detail: e.to_string(),
    }
}

/// The SQLite conversations of a root with neither a `-wal` nor a `.pb`
/// beside them, by file name.
fn plain_dbs(root: &Path) -> Result<Vec<PathBuf>, CorpusError> {
    let dir = root.join("conversations");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| io(&dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "db"))
        .filter(|p| !sibling(p, "-wal").exists() && !p.with_extension("pb").exists())
        .collect();
    out.sort();
    Ok(out)
}

fn sibling(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// All ids under a root's `conversations/`.
fn ids(root: &Path) -> Result<Vec<String>, CorpusError> {
    let dir = root.join("conversations");
    let mut out: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| io(&dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "db" || x == "pb"))
        .map(|p| stem(&p))
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// A step payload with its top-level field 4 (status) set to `status`: the
/// varint replaced where it is, or appended when the payload has none.
fn with_status(payload: &[u8], status: u64) -> Option<Vec<u8>> {
    fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *b.get(*at)?;
            *at += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    let mut out = Vec::with_capacity(payload.len() + 2);
    let mut at = 0;
    let mut done = false;
    while at < payload.len() {
        let start = at;
        let key = varint(payload, &mut at)?;
        let value_start = at;
        match key & 7 {
            0 => {
                varint(payload, &mut at)?;
            }
            1 => at += 8,
            2 => {
                let n = usize::try_from(varint(payload, &mut at)?).ok()?;
                at += n;
            }
            5 => at += 4,
            _ => return None,
        }
        if at > payload.len() {
            return None;
        }
        if key == (4 << 3) && !done {
            out.extend_from_slice(&payload[start..value_start]);
            out.push(u8::try_from(status).ok()?);
            done = true;
        } else {
            out.extend_from_slice(&payload[start..at]);
        }
    }
    if !done {
        out.push(4 << 3);
        out.push(u8::try_from(status).ok()?);
    }
    Some(out)
}

/// Sets the last step RUNNING (2) and the one before WAITING (9) (§2.6).
fn plant_zombie(db: &Path) -> Result<Value, CorpusError> {
    let c = rusqlite::Connection::open(db).map_err(|e| sql(db, e))?;
    let rows: Vec<(i64, Vec<u8>)> = {
        let mut st = c
            .prepare("SELECT idx, step_payload FROM steps ORDER BY idx DESC LIMIT 2")
            .map_err(|e| sql(db, e))?;
        let r = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| sql(db, e))?;
        r.collect::<Result<_, _>>().map_err(|e| sql(db, e))?
    };
    let mut planted = Vec::new();
    for ((idx, payload), status) in rows.into_iter().zip([2u64, 9]) {
        let p = with_status(&payload, status).ok_or_else(|| {
            CorpusError::Build(format!("{}: step {idx}: not a wire message", db.display()))
        })?;
        c.execute(
            "UPDATE steps SET status = ?1, step_payload = ?2 WHERE idx = ?3",
            rusqlite::params![status as i64, p, idx],
        )
        .map_err(|e| sql(db, e))?;
        planted.push(json!({"idx": idx, "status": status}));
    }
    c.close().map_err(|(_, e)| sql(db, e))?;
    backdate(db, 3600)?;
    Ok(json!({"id": stem(db), "steps": planted, "running": 1, "waiting": 1}))
}

/// Sets a file's mtime `secs` seconds back.
pub fn backdate(p: &Path, secs: u64) -> Result<(), CorpusError> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(p)
        .map_err(|e| io(p, e))?;
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
    f.set_modified(t).map_err(|e| io(p, e))
}

/// Overwrites page 2's b-tree page type byte (trajectory_meta's root, §1.1).
fn plant_malformed(db: &Path) -> Result<Value, CorpusError> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(db)
        .map_err(|e| io(db, e))?;
    let mut header = [0u8; 18];
    f.read_exact(&mut header).map_err(|e| io(db, e))?;
    let page = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65536u64,
        n => u64::from(n),
    };
    f.seek(SeekFrom::Start(page)).map_err(|e| io(db, e))?;
    f.write_all(&[0xff]).map_err(|e| io(db, e))?;
    Ok(json!({"id": stem(db), "page": 2, "byte": 0}))
}

/// Extends the `.db` (sparse) to [`OVERSIZED_LEN`].
fn plant_oversized(db: &Path) -> Result<Value, CorpusError> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(db)
        .map_err(|e| io(db, e))?;
    f.set_len(OVERSIZED_LEN).map_err(|e| io(db, e))?;
    Ok(json!({"id": stem(db), "bytes": OVERSIZED_LEN}))
}

/// Writes the summaries index: every id of `indexed`, plus [`GONE_ID`].
fn write_index(root: &Path, indexed: &[String]) -> Result<(), CorpusError> {
    let db = root.join("conversation_summaries.db");
    let c = rusqlite::Connection::open(&db).map_err(|e| sql(&db, e))?;
    c.execute_batch(&format!(
        "PRAGMA journal_mode=WAL; PRAGMA user_version=3; {SUMMARIES_DDL};"
    ))
    .map_err(|e| sql(&db, e))?;
    for (i, id) in indexed
        .iter()
        .map(String::as_str)
        .chain([GONE_ID])
        .enumerate()
    {
        c.execute(
            "INSERT INTO conversation_summaries (conversation_id, title, preview, step_count, \
             last_modified_time, workspace_uris, status, not_fully_idle, killed) \
             VALUES (?1, ?2, '', 0, '2026-11-01 10:00:00.000000000+00:00', '[]', '', 0, 0)",
            rusqlite::params![id, format!("Generated conversation {}", i + 1)],
        )
        .map_err(|e| sql(&db, e))?;
    }
    c.close().map_err(|(_, e)| sql(&db, e))?;
    Ok(())
}

/// Removes the truth lines of `ids` from `root/.truth/expected.jsonl`.
fn drop_truth(root: &Path, ids: &[String]) -> Result<(), CorpusError> {
    let p = root.join(".truth/expected.jsonl");
    let text = std::fs::read_to_string(&p).map_err(|e| io(&p, e))?;
    let kept: String = text
        .lines()
        .filter(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or(Value::Null);
            !ids.iter().any(|id| v["fileId"] == id.as_str())
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&p, kept).map_err(|e| io(&p, e))
}

/// Plants the troubles in the CLI root `root` (see the module
/// documentation); returns what was planted.
pub fn plant_troubles(root: &Path) -> Result<Value, CorpusError> {
    let dbs = plain_dbs(root)?;
    let [zombie, malformed, oversized, skip1, skip2, ..] = &dbs[..] else {
        return Err(CorpusError::Usage(format!(
            "{}: --plant-troubles needs 5 SQLite conversations without a -wal, found {}",
            root.display(),
            dbs.len()
        )));
    };
    let not_indexed = vec![stem(skip1), stem(skip2)];
    let indexed: Vec<String> = ids(root)?
        .into_iter()
        .filter(|id| !not_indexed.contains(id))
        .collect();
    write_index(root, &indexed)?;
    let z = plant_zombie(zombie)?;
    let m = plant_malformed(malformed)?;
    let o = plant_oversized(oversized)?;
    drop_truth(root, &[stem(zombie), stem(malformed), stem(oversized)])?;
    Ok(json!({
        "notIndexed": not_indexed,
        "withoutFile": [GONE_ID],
        "zombie": z,
        "malformed": m,
        "oversized": o,
    }))
}

/// A small store of its own at `dir` (the plan's options, `conversations`
/// of them, `seed`), without `cli.log` (so no daemon says its surface) and
/// with `marker` written when given.
fn own_store(
    dir: &Path,
    plan: &PlanOptions,
    seed: u64,
    marker: Option<&str>,
    force: bool,
) -> Result<Vec<String>, CorpusError> {
    let mut p = plan.clone();
    p.seed = seed;
    p.conversations = 3;
    p.near_miss_rate = 0.0;
    p.fault_rate = 0.0;
    generate(&GenerateOptions {
        out: dir.to_path_buf(),
        plan: p,
        force,
    })?;
    let log = dir.join("cli.log");
    std::fs::remove_file(&log).map_err(|e| io(&log, e))?;
    if let Some(m) = marker {
        let p = dir.join(m);
        std::fs::write(&p, b"# generated marker\n").map_err(|e| io(&p, e))?;
    }
    ids(dir)
}

/// The app-data folder `$ANTIGRAVITY_APP_DATA_DIR` is pointed at, relative
/// to the home.
pub const APP_DATA_ENV_DIR: &str = "antigravity-app-data";
/// The desktop app's data folder on Linux, relative to the home.
pub const APP_DATA_DIR: &str = ".config/Antigravity";
/// The backup folder, relative to the home.
pub const BACKUP_DIR: &str = ".gemini/antigravity-backup";
/// The IDE channel's folder, relative to the home.
pub const IDE_CHANNEL_DIR: &str = ".gemini/antigravity-ide";

/// Plants the store folders besides the roots (see the module
/// documentation) in `home`, whose CLI root is `cli_root`.
pub fn plant_extra_roots(
    home: &Path,
    cli_root: &Path,
    plan: &PlanOptions,
    force: bool,
) -> Result<Value, CorpusError> {
    let backup = home.join(BACKUP_DIR).join("conversations");
    std::fs::create_dir_all(&backup).map_err(|e| io(&backup, e))?;
    let mut copied = Vec::new();
    for db in plain_dbs(cli_root)?.iter().rev().take(3) {
        let to = backup.join(db.file_name().unwrap_or_default());
        std::fs::copy(db, &to).map_err(|e| io(&to, e))?;
        copied.push(stem(db));
    }
    copied.sort();
    let ide = own_store(
        &home.join(IDE_CHANNEL_DIR),
        plan,
        plan.seed.wrapping_add(2),
        Some(IDE_STATE),
        force,
    )?;
    let app = own_store(
        &home.join(APP_DATA_DIR),
        plan,
        plan.seed.wrapping_add(3),
        None,
        force,
    )?;
    let env = own_store(
        &home.join(APP_DATA_ENV_DIR),
        plan,
        plan.seed.wrapping_add(4),
        None,
        force,
    )?;
    Ok(json!({
        "backup": {"path": BACKUP_DIR, "ids": copied, "copyOf": super::HOME_CLI_ROOT},
        "ideChannel": {"path": IDE_CHANNEL_DIR, "ids": ide, "surface": "ide"},
        "appData": {"path": APP_DATA_DIR, "ids": app, "surface": null},
        "appDataEnv": {"path": APP_DATA_ENV_DIR, "ids": env, "surface": null, "env": "ANTIGRAVITY_APP_DATA_DIR"},
    }))
}

/// Writes `.truth/plants.json` in the CLI root.
pub fn record(cli_root: &Path, plants: &Value) -> Result<(), CorpusError> {
    let p = cli_root.join(".truth/plants.json");
    let text =
        serde_json::to_string_pretty(plants).map_err(|e| CorpusError::Build(e.to_string()))?;
    std::fs::write(&p, text).map_err(|e| io(&p, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_is_replaced_in_place_or_appended() {
        // field 1 varint 5, field 4 varint 3, field 5 bytes "ab"
        let p = [0x08, 5, 0x20, 3, 0x2a, 2, b'a', b'b'];
        assert_eq!(
            with_status(&p, 2).unwrap(),
            vec![0x08, 5, 0x20, 2, 0x2a, 2, b'a', b'b']
        );
        assert_eq!(with_status(&[0x08, 5], 9).unwrap(), vec![0x08, 5, 0x20, 9]);
        assert!(with_status(&[0x2a, 9], 2).is_none());
    }
}
