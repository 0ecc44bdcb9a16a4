//! A conversation's step count without reading its trajectory: the rows of
//! the `steps` table, counted from the table's b-tree pages alone.
//!
//! `list` shows a step count for every SQLite source without reading whole
//! trajectories (issue 34: a budget for 10,000 conversations). The count
//! reads the database header, the schema table (from page 1) to find the
//! `steps` table's root page, the interior pages of that table, and only
//! the 8-byte header of each leaf page (whose cell count is the number of
//! rows it holds): no cell, no overflow page, no step payload is read. A
//! `-wal` is read frame by frame, never held whole (issue 45: a 10 GB log
//! costs its frame offsets, not its bytes): its committed frames (SQLite's
//! own rules, [`super::wal::committed_of`]) stand in for the pages they
//! hold, read from the log when the walk needs them.
//!
//! Anything unusual (a hot `-journal`, a log this reader does not replay
//! itself, a page that is not what the b-tree says, a loop) gives `None`:
//! the caller then counts on a full snapshot, or shows no count. The files
//! are opened read-only and nothing is written beside them.

use super::wal::{committed_of, read_exact_at, Committed, FRAME_DATA};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::Path;

/// The deepest b-tree this reader walks (SQLite's own limit is 20).
const MAX_DEPTH: usize = 20;

struct Pages {
    file: File,
    page: usize,
    /// Pages in the database (after the last committed frame).
    count: u32,
    /// The log, when it holds committed frames.
    wal: Option<File>,
    /// The newest committed copy of a page in the log: where its bytes
    /// start in the log.
    logged: HashMap<u32, u64>,
}

impl Pages {
    /// `len` bytes of page `n` (1-based) from `at`.
    fn read(&self, n: u32, at: usize, len: usize) -> Option<Vec<u8>> {
        if n == 0 || n > self.count || at + len > self.page {
            return None;
        }
        let mut buf = vec![0u8; len];
        if let (Some(&start), Some(wal)) = (self.logged.get(&n), &self.wal) {
            read_exact_at(wal, &mut buf, start + at as u64).ok()?;
            return Some(buf);
        }
        let off = (u64::from(n) - 1) * self.page as u64 + at as u64;
        read_exact_at(&self.file, &mut buf, off).ok()?;
        Some(buf)
    }
}

fn be16(b: &[u8], at: usize) -> Option<usize> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]) as usize)
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes([
        *b.get(at)?,
        *b.get(at + 1)?,
        *b.get(at + 2)?,
        *b.get(at + 3)?,
    ]))
}

/// SQLite's varint at `at`: (value, bytes).
fn varint(b: &[u8], at: usize) -> Option<(u64, usize)> {
    let mut v: u64 = 0;
    for i in 0..9 {
        let byte = *b.get(at + i)?;
        if i == 8 {
            return Some(((v << 8) | u64::from(byte), 9));
        }
        v = (v << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// The `steps` rows of the SQLite database `db` (see the module
/// documentation); `None` when the pages do not allow a sure count.
pub fn steps(db: &Path) -> Option<u64> {
    let [wal, _, journal] = super::sqlite::companions(db);
    if std::fs::symlink_metadata(&journal).is_ok_and(|m| m.len() > 0) {
        // a hot journal: SQLite would roll it back first
        return None;
    }
    let meta = std::fs::symlink_metadata(db).ok()?;
    if !meta.is_file() {
        return None;
    }
    let (file, _) =
        crate::util::bounded::open_plain(db, crate::util::bounded::InputKind::Conversation).ok()?;
    let mut header = [0u8; 100];
    read_exact_at(&file, &mut header, 0).ok()?;
    if &header[..16] != b"SQLite format 3\0" {
        return None;
    }
    let page = super::wal::page_size(&header)?;
    let reserved = header[20] as usize;
    let mut count = u32::try_from(meta.len() / page as u64).ok()?;
    let mut logged = HashMap::new();
    let mut log = None;
    match std::fs::symlink_metadata(&wal) {
        Ok(m) if m.is_file() && m.len() > 0 => {
            let f = crate::util::bounded::open_regular(&wal, crate::util::bounded::InputKind::Wal)
                .ok()?;
            match committed_of(Some(page), &f).ok()? {
                Committed::Nothing => {}
                Committed::Defer(_) => return None,
                Committed::Frames { frames, pages } => {
                    count = pages;
                    for (off, pgno) in frames {
                        logged.insert(pgno, (off + FRAME_DATA) as u64);
                    }
                    log = Some(f);
                }
            }
        }
        Ok(m) if !m.is_file() => return None,
        _ => {}
    }
    let pages = Pages {
        file,
        page,
        count,
        wal: log,
        logged,
    };
    let usable = page.checked_sub(reserved)?;
    let root = steps_root(&pages, usable)?;
    let mut seen = HashSet::new();
    count_rows(&pages, root, 0, &mut seen)
}

/// The root page of the `steps` table, from the schema table (page 1).
fn steps_root(pages: &Pages, usable: usize) -> Option<u32> {
    let mut found = None;
    let mut seen = HashSet::new();
    walk_leaves(pages, 1, 0, &mut seen, &mut |page, hdr| {
        let cells = be16(page, hdr + 3)?;
        for i in 0..cells {
            let cell = be16(page, hdr + 8 + 2 * i)?;
            let (len, a) = varint(page, cell)?;
            let (_rowid, b) = varint(page, cell + a)?;
            let start = cell + a + b;
            // the locally stored part of the record (the columns read here
            // come first, so they lie in it)
            let local = local_payload(len as usize, usable);
            let end = (start + local).min(page.len());
            let rec = page.get(start..end)?;
            if let Some((kind, name, root)) = schema_row(rec) {
                if kind == "table" && name == "steps" {
                    found = Some(root);
                }
            }
        }
        Some(())
    })?;
    found
}

/// The bytes of a table-leaf cell's payload stored on the page itself.
fn local_payload(len: usize, usable: usize) -> usize {
    let max = usable.saturating_sub(35);
    if len <= max {
        return len;
    }
    let min = ((usable.saturating_sub(12)) * 32 / 255).saturating_sub(23);
    let k = min + len.saturating_sub(min) % (usable.saturating_sub(4)).max(1);
    if k <= max {
        k
    } else {
        min
    }
}

/// (type, name, rootpage) of a schema-table record.
fn schema_row(rec: &[u8]) -> Option<(String, String, u32)> {
    let (hlen, mut at) = varint(rec, 0)?;
    let hlen = usize::try_from(hlen).ok()?;
    let mut types = Vec::new();
    while at < hlen && types.len() < 5 {
        let (t, n) = varint(rec, at)?;
        types.push(t);
        at += n;
    }
    if types.len() < 4 {
        return None;
    }
    let mut body = hlen;
    let mut values: Vec<&[u8]> = Vec::new();
    for &t in &types[..4] {
        let size = match t {
            0 | 8 | 9 => 0,
            1 => 1,
            2 => 2,
            3 => 3,
            4 => 4,
            5 => 6,
            6 | 7 => 8,
            t if t >= 12 && t % 2 == 0 => ((t - 12) / 2) as usize,
            t if t >= 13 => ((t - 13) / 2) as usize,
            _ => return None,
        };
        values.push(rec.get(body..body + size)?);
        body += size;
    }
    let text = |i: usize| {
        (types[i] >= 13 && types[i] % 2 == 1)
            .then(|| String::from_utf8_lossy(values[i]).into_owned())
    };
    let root = match types[3] {
        8 => 0,
        9 => 1,
        1..=4 => values[3].iter().fold(0u64, |v, b| (v << 8) | u64::from(*b)),
        _ => return None,
    };
    Some((text(0)?, text(1)?, u32::try_from(root).ok()?))
}

/// Calls `leaf` with each leaf page of the table b-tree rooted at `n`
/// (whole page, header offset).
fn walk_leaves(
    pages: &Pages,
    n: u32,
    depth: usize,
    seen: &mut HashSet<u32>,
    leaf: &mut dyn FnMut(&[u8], usize) -> Option<()>,
) -> Option<()> {
    if depth > MAX_DEPTH || !seen.insert(n) {
        return None;
    }
    let page = pages.read(n, 0, pages.page)?;
    let hdr = if n == 1 { 100 } else { 0 };
    match *page.get(hdr)? {
        0x0d => leaf(&page, hdr),
        0x05 => {
            let cells = be16(&page, hdr + 3)?;
            for i in 0..cells {
                let cell = be16(&page, hdr + 12 + 2 * i)?;
                walk_leaves(pages, be32(&page, cell)?, depth + 1, seen, leaf)?;
            }
            walk_leaves(pages, be32(&page, hdr + 8)?, depth + 1, seen, leaf)
        }
        _ => None,
    }
}

/// The rows of the table b-tree rooted at `n`: each leaf's cell count, read
/// from its header alone.
fn count_rows(pages: &Pages, n: u32, depth: usize, seen: &mut HashSet<u32>) -> Option<u64> {
    if depth > MAX_DEPTH || !seen.insert(n) {
        return None;
    }
    let hdr = if n == 1 { 100 } else { 0 };
    let head = pages.read(n, hdr, 12)?;
    match head[0] {
        0x0d => Some(be16(&head, 3)? as u64),
        0x05 => {
            let page = pages.read(n, 0, pages.page)?;
            let cells = be16(&page, hdr + 3)?;
            let mut total = 0u64;
            for i in 0..cells {
                let cell = be16(&page, hdr + 12 + 2 * i)?;
                total += count_rows(pages, be32(&page, cell)?, depth + 1, seen)?;
            }
            Some(total + count_rows(pages, be32(&page, hdr + 8)?, depth + 1, seen)?)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_equal_sqlite_with_and_without_a_log() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("c.db");
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "PRAGMA page_size=1024; PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;
             CREATE TABLE other (x blob);
             CREATE TABLE `steps` (`idx` integer, `step_payload` blob, PRIMARY KEY (`idx`));",
        )
        .unwrap();
        let mut expected = 0u64;
        for round in 0..3 {
            for i in 0..700 {
                let idx = round * 700 + i;
                c.execute(
                    "INSERT INTO steps VALUES (?1, zeroblob(?2))",
                    rusqlite::params![idx, (idx % 7) * 300],
                )
                .unwrap();
            }
            c.execute("DELETE FROM steps WHERE idx % 50 = 3", [])
                .unwrap();
            expected = c
                .query_row("SELECT count(*) FROM steps", [], |r| r.get::<_, i64>(0))
                .unwrap() as u64;
            // the log holds the newest pages (no checkpoint yet)
            assert_eq!(steps(&db), Some(expected), "round {round}");
        }
        c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);").unwrap();
        assert_eq!(steps(&db), Some(expected));
        drop(c);
        assert_eq!(steps(&db), Some(expected));
        std::fs::write(d.path().join("junk.db"), b"not a database").unwrap();
        assert_eq!(steps(&d.path().join("junk.db")), None);

        // damage anywhere: never a panic, the source never written
        let image = std::fs::read(&db).unwrap();
        let hit = d.path().join("hit.db");
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for trial in 0..400 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let mut bytes = image.clone();
            let at = (state % bytes.len() as u64) as usize;
            if trial % 5 == 0 {
                bytes.truncate(at);
            } else {
                bytes[at] ^= (state >> 32) as u8 | 1;
            }
            std::fs::write(&hit, &bytes).unwrap();
            let _ = steps(&hit);
        }
        assert_eq!(std::fs::read(&db).unwrap(), image);
    }
}
