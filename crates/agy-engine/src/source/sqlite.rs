//! The SQLite snapshot reader.
//!
//! **Snapshot choice.** The `.db` and its `-wal` (and a `-journal`, if any)
//! are read byte for byte as plain files: no SQLite connection touches the
//! source, so no `-wal`, `-shm` or `-journal` can appear beside it. The reads
//! are bracketed by a stat of the files (length and mtime) and retried when
//! they moved.
//!
//! The state is then built in memory and handed to `sqlite3_deserialize`
//! read-only (header bytes 18-19, the WAL format markers, are set to legacy
//! in that private image only): the database bytes alone when there is no
//! `-wal` (or it commits nothing), else the database with the log's committed
//! frames replayed by [`super::wal`] exactly as SQLite's recovery does. When
//! the log is one that module defers (an unusual header), or there is a
//! `-journal`, the files are instead copied into a private temporary
//! directory (mode 0700) and SQLite replays them *there*
//! ([`SnapshotVia::Disk`]).
//!
//! Why not `immutable=1`: it tells SQLite the file cannot change and makes it
//! ignore the WAL entirely, so the uncheckpointed frames agy leaves in `-wal`
//! (often the newest steps) would be silently missing. Why not a plain
//! `mode=ro` open of the source: a read-only WAL open needs the `-shm`, and
//! SQLite may create `-wal`/`-shm` files beside the application's files.
//!
//! On the copy: `PRAGMA cell_size_check=ON`, `mmap_size=0`, defensive mode,
//! `trusted_schema=OFF`, then `PRAGMA quick_check` must answer `ok` before any
//! table is read (an untrusted file is checked before it is queried).

use crate::error::{CorruptRule, Error, Result, SqliteFailure};
use crate::util::bounded::{self, InputKind, WAL_SPILL_CAP};
use crate::verdict::{ReasonClass, Refusal};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Largest single blob accepted (gen_metadata rows reach ~100 MB in the wild).
pub const MAX_BLOB_BYTES: usize = 256 << 20;

/// The only `user_version` qualified.
pub const USER_VERSION: i64 = 1;

/// One `steps` row.
#[derive(Debug, Clone, Default)]
pub struct StepRow {
    pub idx: i64,
    pub step_type: i64,
    pub status: i64,
    pub has_subtrajectory: i64,
    pub metadata: Option<Vec<u8>>,
    pub error_details: Option<Vec<u8>>,
    pub permissions: Option<Vec<u8>>,
    pub task_details: Option<Vec<u8>>,
    pub render_info: Option<Vec<u8>>,
    pub step_payload: Vec<u8>,
}

/// Everything read from one conversation database.
#[derive(Debug, Clone, Default)]
pub struct SqliteRows {
    pub trajectory_id: String,
    pub cascade_id: String,
    pub trajectory_type: i64,
    pub source: i64,
    pub steps: Vec<StepRow>,
    pub gen_metadata: Vec<Vec<u8>>,
    pub executor_metadata: Vec<Vec<u8>>,
    pub parent_references: Vec<Vec<u8>>,
    pub battle_mode_infos: Vec<Vec<u8>>,
    pub metadata: Option<Vec<u8>>,
}

/// A private, consistent copy of a conversation database.
pub struct Snapshot {
    _dir: Option<tempfile::TempDir>,
    /// Declared before `_image`: fields drop in order, so the connection is
    /// closed before the image it reads is freed.
    conn: Connection,
    /// The in-memory image SQLite reads in place (never written, never
    /// moved: a `Vec`'s heap buffer stays put when the `Vec` moves).
    _image: Option<Vec<u8>>,
    /// Whether a non-empty `-wal` was read with the database.
    pub had_wal: bool,
    /// How the state was built.
    pub via: SnapshotVia,
}

impl Snapshot {
    /// The private connection over the snapshot.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The in-memory image's length (0 for a copy on disk): an upper bound
    /// of the bytes its rows hold.
    pub fn size_hint(&self) -> usize {
        self._image.as_ref().map_or(0, Vec::len)
    }

    /// The schema format number of an in-memory image (header bytes
    /// 44-47, which SQLite reads when it parses the schema); `None` for a
    /// copy on disk, whose state SQLite rebuilt from a log or journal.
    pub fn schema_format(&self) -> Option<u32> {
        let b = self._image.as_ref()?.get(44..48)?;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// How a snapshot's state was built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotVia {
    /// The database bytes alone, in memory.
    Memory,
    /// The database with this many committed log frames replayed, in memory.
    Replayed(usize),
    /// A private copy on disk, replayed by SQLite.
    Disk,
}

/// Where [`snapshot_with`] may build the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// In memory when possible (what [`snapshot`] does).
    Auto,
    /// Always a private copy on disk (the reference the in-memory replay is
    /// tested against).
    Disk,
}

fn stamp(path: &Path) -> Option<(u64, Option<SystemTime>)> {
    let m = fs::symlink_metadata(path).ok()?;
    Some((m.len(), m.modified().ok()))
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// The `-wal` and `-shm` paths of a database.
pub fn companions(db: &Path) -> [PathBuf; 3] {
    [
        sibling(db, "-wal"),
        sibling(db, "-shm"),
        sibling(db, "-journal"),
    ]
}

/// Reads a regular, non-symlinked file, at most [`InputKind::Conversation`]'s
/// cap.
fn read_plain(path: &Path) -> Result<Vec<u8>> {
    bounded::read_plain(path, InputKind::Conversation).map_err(source_error)
}

/// A conversation file refused by the bounded reader: a link or anything
/// but a regular file is a corrupt source (its rule named), as it always
/// was; a read error or a size past the cap stays what it is.
pub(crate) fn source_error(e: bounded::BoundedReadError) -> Error {
    match e {
        bounded::BoundedReadError::NotAFile {
            path,
            what: "a symbolic link",
            ..
        } => Error::corrupt(path, CorruptRule::SymbolicLink),
        bounded::BoundedReadError::NotAFile { path, what, .. } => {
            Error::corrupt(path, CorruptRule::NotARegularFile { what })
        }
        other => Error::Input(other),
    }
}

/// Reads `db` (and its `-wal`/`-journal`) and opens a private image of its state.
pub fn snapshot(db: &Path) -> Result<Snapshot> {
    snapshot_with(db, Strategy::Auto)
}

/// [`snapshot`], with the [`fingerprint`] of the bytes it was built from.
pub fn snapshot_fingerprinted(db: &Path) -> Result<(Snapshot, [u8; 32])> {
    match read_stable(db, Strategy::Auto)? {
        Stable::Memory((main, wal, journal)) => {
            let fp = fingerprint(&main, wal.as_deref(), journal.as_deref());
            Ok((build(db, Strategy::Auto, main, wal, journal)?, fp))
        }
        Stable::Spilled(spill) => {
            let fp = spill.fingerprint;
            Ok((build_spilled(db, spill)?, fp))
        }
    }
}

/// The [`fingerprint`] of `db` and its companions as they are now (the
/// bracket's second look at a source): the files are streamed through the
/// hash in fixed chunks, never held whole, and read again (up to 5 times)
/// while any of them changes under the read, as [`snapshot`] reads them.
pub fn file_fingerprint(db: &Path) -> Result<[u8; 32]> {
    let mut chunk = vec![0u8; 256 * 1024];
    while_stable(db, |main, wal, journal| {
        let mut h = FileHasher::new();
        let main_len = hash_plain(main, &mut h, &mut chunk)?;
        h.update(&main_len.to_le_bytes());
        for part in [wal, journal] {
            let len = part
                .map(|p| hash_plain(p, &mut h, &mut chunk))
                .transpose()?;
            companion_end(&mut h, len);
        }
        Ok(*h.finalize().as_bytes())
    })
}

/// Streams the plain file at `path` (checked as [`read_plain`] checks it)
/// through `h`; returns its length.
fn hash_plain(path: &Path, h: &mut FileHasher, chunk: &mut [u8]) -> Result<u64> {
    copy_plain(path, h, None, chunk)
}

/// Streams the plain file at `path` (a regular file, not a link) through
/// `h`, and into `copy` when given; returns its length.
fn copy_plain(
    path: &Path,
    h: &mut FileHasher,
    mut copy: Option<&mut fs::File>,
    chunk: &mut [u8],
) -> Result<u64> {
    use std::io::{Read, Write};
    let (mut f, _) = bounded::open_plain(path, InputKind::Wal).map_err(source_error)?;
    let mut len = 0u64;
    loop {
        let n = match f.read(chunk) {
            Ok(0) => return Ok(len),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(path, e)),
        };
        h.update(&chunk[..n]);
        if let Some(out) = copy.as_deref_mut() {
            out.write_all(&chunk[..n])
                .map_err(|e| Error::io(std::env::temp_dir(), e))?;
        }
        len += n as u64;
        if len > WAL_SPILL_CAP {
            return Err(too_large(path));
        }
    }
}

/// The refusal of a conversation whose files are too large to snapshot.
fn too_large(db: &Path) -> Error {
    Error::Input(bounded::BoundedReadError::TooLarge {
        path: db.to_path_buf(),
        cap: WAL_SPILL_CAP,
        kind: "conversation's database, -wal and -journal together",
    })
}

/// The hash of a [`fingerprint`]: BLAKE3, a cryptographic hash (so files
/// changed under the bracket cannot be made to look unchanged, whoever
/// writes them) that is several times as fast as SHA-256 on this
/// workload. The fingerprint is never recorded: it only tells, within one
/// run, whether a source's files changed between two looks (a sweep hashes
/// every source's files twice: BENCHMARKS.md, issue 49), so its hash is
/// free to differ from the recorded digests' SHA-256.
type FileHasher = blake3::Hasher;

/// [`FileHasher`] over the exact bytes of the database, its `-wal` and its
/// `-journal`: each file's bytes followed by its length, a companion's then
/// by 1, an absent companion by 0 alone (read from the end, the encoding
/// has one reading, so an absent file is told from an empty one). Equal
/// fingerprints mean byte-identical files, hence the same snapshot; a
/// different one says nothing (a checkpoint rewrites bytes, not content).
/// Lengths follow their bytes so that [`file_fingerprint`] can stream.
pub fn fingerprint(main: &[u8], wal: Option<&[u8]>, journal: Option<&[u8]>) -> [u8; 32] {
    let mut h = FileHasher::new();
    h.update(main);
    h.update(&(main.len() as u64).to_le_bytes());
    for part in [wal, journal] {
        if let Some(b) = part {
            h.update(b);
        }
        companion_end(&mut h, part.map(|b| b.len() as u64));
    }
    *h.finalize().as_bytes()
}

/// The end of a companion's part of a [`fingerprint`]: after its bytes, its
/// length and 1; for an absent one, 0 alone.
fn companion_end(h: &mut FileHasher, len: Option<u64>) {
    match len {
        Some(len) => h.update(&len.to_le_bytes()).update(&[1u8]),
        None => h.update(&[0u8]),
    };
}

type FileBytes = (Vec<u8>, Option<Vec<u8>>, Option<Vec<u8>>);

/// [`snapshot`], choosing where the state is built.
pub fn snapshot_with(db: &Path, strategy: Strategy) -> Result<Snapshot> {
    match read_stable(db, strategy)? {
        Stable::Memory((main, wal, journal)) => build(db, strategy, main, wal, journal),
        Stable::Spilled(spill) => build_spilled(db, spill),
    }
}

/// [`snapshot_with`] over bytes already in memory, as if read from `db` and
/// its `-wal` (no `-journal`): the fuzz targets' way in (`crate::fuzzing`).
pub(crate) fn snapshot_from_bytes(
    db: &Path,
    strategy: Strategy,
    main: Vec<u8>,
    wal: Option<Vec<u8>>,
) -> Result<Snapshot> {
    build(db, strategy, main, wal, None)
}

/// What [`read_stable`] read: the files' bytes, or their copies in a
/// private folder.
enum Stable {
    Memory(FileBytes),
    Spilled(Spill),
}

/// A conversation's files copied into a private folder (mode 0700), for
/// SQLite to replay there: files together larger than
/// [`InputKind::Conversation`]'s cap are never held in memory.
struct Spill {
    dir: tempfile::TempDir,
    /// The copy of the database (its companions beside it).
    copy: PathBuf,
    /// Whether a non-empty `-wal` was copied.
    had_wal: bool,
    /// The [`fingerprint`] of the bytes copied.
    fingerprint: [u8; 32],
}

/// The files' total length as their metadata says now.
fn total_len(files: &[Option<&Path>]) -> u64 {
    files
        .iter()
        .flatten()
        .filter_map(|p| fs::symlink_metadata(p).ok())
        .map(|m| m.len())
        .fold(0u64, u64::saturating_add)
}

/// The database and its companions, read until two stamps agree: into
/// memory when they fit [`InputKind::Conversation`]'s cap together (and
/// `strategy` allows), else copied to a private folder, streamed; refused
/// beyond [`WAL_SPILL_CAP`].
fn read_stable(db: &Path, strategy: Strategy) -> Result<Stable> {
    while_stable(db, |main, wal, journal| {
        let total = total_len(&[Some(main), wal, journal]);
        if total > WAL_SPILL_CAP {
            return Err(too_large(db));
        }
        if total > InputKind::Conversation.cap() || strategy == Strategy::Disk {
            return spill(main, wal, journal).map(Stable::Spilled);
        }
        Ok(Stable::Memory((
            read_plain(main)?,
            wal.map(read_plain).transpose()?,
            journal.map(read_plain).transpose()?,
        )))
    })
}

/// A private folder (mode 0700: `tempfile` creates it so) for a copy.
fn private_dir() -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("agy-audit-snapshot-")
        .tempdir()
        .map_err(|e| Error::io(std::env::temp_dir(), e))
}

/// Copies the files into a private folder, streamed, taking their
/// [`fingerprint`] on the way.
fn spill(main: &Path, wal: Option<&Path>, journal: Option<&Path>) -> Result<Spill> {
    let dir = private_dir()?;
    let copy = dir.path().join("conversation.db");
    let mut chunk = vec![0u8; 256 * 1024];
    let mut h = FileHasher::new();
    let create = |p: &Path| fs::File::create(p).map_err(|e| Error::io(p, e));
    let main_len = copy_plain(main, &mut h, Some(&mut create(&copy)?), &mut chunk)?;
    h.update(&main_len.to_le_bytes());
    let mut had_wal = false;
    for (part, suffix) in [(wal, "-wal"), (journal, "-journal")] {
        match part {
            Some(p) => {
                let len = copy_plain(
                    p,
                    &mut h,
                    Some(&mut create(&sibling(&copy, suffix))?),
                    &mut chunk,
                )?;
                had_wal |= suffix == "-wal" && len > 0;
                companion_end(&mut h, Some(len));
            }
            None => companion_end(&mut h, None),
        }
    }
    Ok(Spill {
        dir,
        copy,
        had_wal,
        fingerprint: *h.finalize().as_bytes(),
    })
}

/// Opens the private copy of a [`Spill`]: the same checks as an image in
/// memory (the database header, a damaged log), then SQLite replays the
/// log there.
fn build_spilled(db: &Path, spill: Spill) -> Result<Snapshot> {
    let mut header = [0u8; 100];
    {
        use std::io::Read;
        let mut f = bounded::open_regular(&spill.copy, InputKind::Conversation)?;
        let n = f.read(&mut header).map_err(|e| Error::io(&spill.copy, e))?;
        if n < 100 || !header.starts_with(b"SQLite format 3\0") {
            return Err(Error::corrupt(db, CorruptRule::NotSqlite3));
        }
    }
    let wal_copy = sibling(&spill.copy, "-wal");
    if let Ok(f) = bounded::open_regular(&wal_copy, InputKind::Wal) {
        let t = super::wal::tail_of(super::wal::page_size(&header), &f)
            .map_err(|e| Error::io(&wal_copy, e))?;
        check_tail(db, t)?;
    }
    let conn = open_copy(db, &spill.copy)?;
    finish(
        db,
        conn,
        Some(spill.dir),
        SnapshotVia::Disk,
        None,
        spill.had_wal,
    )
}

/// A log the checksums prove damaged after it was written is refused: SQLite
/// would silently drop that frame and every later one.
fn check_tail(db: &Path, tail: Option<super::wal::Tail>) -> Result<()> {
    if let Some(n) = tail.and_then(|t| t.damaged_frame) {
        return Err(Error::corrupt(
            sibling(db, "-wal"),
            CorruptRule::WalFrameDamaged { frame: n },
        ));
    }
    Ok(())
}

/// A read-write connection over a private copy (SQLite replays its log).
fn open_copy(db: &Path, copy: &Path) -> Result<Connection> {
    Connection::open_with_flags(
        copy,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| Error::sqlite(db, SqliteFailure::Open(e)))
}

/// `read(db, its -wal, its -journal)` (a companion absent when the read
/// began is `None`), done again while any of the three files changes under
/// it (their length and mtime before and after), up to 5 times.
fn while_stable<T>(
    db: &Path,
    mut read: impl FnMut(&Path, Option<&Path>, Option<&Path>) -> Result<T>,
) -> Result<T> {
    let [wal, _shm, journal] = companions(db);
    for _attempt in 0..5 {
        let before = (stamp(db), stamp(&wal), stamp(&journal));
        let got = read(
            db,
            before.1.is_some().then_some(wal.as_path()),
            before.2.is_some().then_some(journal.as_path()),
        )?;
        let after = (stamp(db), stamp(&wal), stamp(&journal));
        if before == after {
            return Ok(got);
        }
    }
    Err(Error::sqlite(
        db,
        SqliteFailure::KeptChanging { attempts: 5 },
    ))
}

/// Opens the private image of the state the bytes hold.
fn build(
    db: &Path,
    strategy: Strategy,
    mut main: Vec<u8>,
    wal_bytes: Option<Vec<u8>>,
    journal_bytes: Option<Vec<u8>>,
) -> Result<Snapshot> {
    if main.len() < 100 || !main.starts_with(b"SQLite format 3\0") {
        return Err(Error::corrupt(db, CorruptRule::NotSqlite3));
    }
    check_tail(
        db,
        wal_bytes
            .as_deref()
            .and_then(|w| super::wal::tail(&main, w)),
    )?;
    let had_wal = wal_bytes.as_ref().is_some_and(|w| !w.is_empty());
    let in_memory = match (strategy, &wal_bytes, &journal_bytes) {
        (Strategy::Disk, _, _) | (_, _, Some(_)) => None,
        (Strategy::Auto, None, None) => Some(SnapshotVia::Memory),
        // Replayed into the file's bytes themselves (left untouched unless
        // the log is applied), not into a copy of them.
        (Strategy::Auto, Some(w), None) => match super::wal::replay_in_place(&mut main, w) {
            super::wal::InPlace::NothingCommitted => Some(SnapshotVia::Memory),
            super::wal::InPlace::Applied { frames } => Some(SnapshotVia::Replayed(frames)),
            super::wal::InPlace::Defer(_) => None,
        },
    };
    let (conn, dir, via, image) = if let Some(via) = in_memory {
        // The bytes are the whole state: open a private in-memory image (a
        // replayed image is whole pages of at least 512 bytes; the file's
        // length was checked above).
        main[18] = 1;
        main[19] = 1;
        let conn =
            Connection::open_in_memory().map_err(|e| Error::sqlite(db, SqliteFailure::Open(e)))?;
        read_in_place(&conn, &main).map_err(|e| corrupt_db(db, e))?;
        (conn, None, via, Some(main))
    } else {
        let dir = private_dir()?;
        let copy = dir.path().join("conversation.db");
        fs::write(&copy, &main).map_err(|e| Error::io(&copy, e))?;
        if let Some(w) = wal_bytes {
            fs::write(sibling(&copy, "-wal"), w).map_err(|e| Error::io(&copy, e))?;
        }
        if let Some(j) = journal_bytes {
            fs::write(sibling(&copy, "-journal"), j).map_err(|e| Error::io(&copy, e))?;
        }
        (open_copy(db, &copy)?, Some(dir), SnapshotVia::Disk, None)
    };
    finish(db, conn, dir, via, image, had_wal)
}

/// The checks every snapshot's connection gets before any table is read.
fn finish(
    db: &Path,
    conn: Connection,
    dir: Option<tempfile::TempDir>,
    via: SnapshotVia,
    image: Option<Vec<u8>>,
    had_wal: bool,
) -> Result<Snapshot> {
    let sql = |e: rusqlite::Error| Error::sqlite(db, SqliteFailure::Configure(e));
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)
        .map_err(sql)?;
    // An in-memory image is read in place (SQLite's memory VFS hands out
    // pointers into it instead of copying each page into its cache); a
    // private disk copy is never memory-mapped.
    let mmap = image.as_ref().map_or(0, Vec::len);
    conn.execute_batch(&format!(
        "PRAGMA cell_size_check=ON; PRAGMA mmap_size={mmap}; PRAGMA trusted_schema=OFF;"
    ))
    .map_err(sql)?;
    let check: Vec<String> = {
        let mut st = conn
            .prepare("PRAGMA quick_check")
            .map_err(|e| corrupt_db(db, e))?;
        let rows = st
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| corrupt_db(db, e))?;
        rows.collect::<std::result::Result<_, _>>()
            .map_err(|e| corrupt_db(db, e))?
    };
    if check != ["ok"] {
        return Err(Error::corrupt(
            db,
            CorruptRule::QuickCheck { findings: check },
        ));
    }
    Ok(Snapshot {
        _dir: dir,
        conn,
        _image: image,
        had_wal,
        via,
    })
}

/// Opens `image` as `conn`'s main database, read-only and in place: no
/// copy into SQLite's memory, which [`Snapshot`] makes sound by owning the
/// image and closing the connection first.
fn read_in_place(conn: &Connection, image: &[u8]) -> rusqlite::Result<()> {
    use rusqlite::ffi;
    let len = i64::try_from(image.len())
        .map_err(|_| rusqlite::Error::SqliteFailure(ffi::Error::new(ffi::SQLITE_TOOBIG), None))?;
    // SAFETY: `image` outlives the connection (both owned by the Snapshot,
    // the connection dropped first) and is never written: without
    // SQLITE_DESERIALIZE_FREEONCLOSE SQLite does not free it, with
    // SQLITE_DESERIALIZE_READONLY it does not write or resize it. The
    // handle is a live connection of this thread.
    let rc = unsafe {
        ffi::sqlite3_deserialize(
            conn.handle(),
            c"main".as_ptr(),
            image.as_ptr().cast_mut(),
            len,
            len,
            ffi::SQLITE_DESERIALIZE_READONLY as std::ffi::c_uint,
        )
    };
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None))
    }
}

fn corrupt_db(db: &Path, e: rusqlite::Error) -> Error {
    Error::corrupt(db, CorruptRule::Malformed(e))
}

/// Reads and validates a snapshot. Structural deviations are refusals (the
/// source is unknown); a database that cannot be read at all is an error.
pub fn read_rows(db: &Path, snap: &Snapshot) -> Result<(SqliteRows, Vec<Refusal>)> {
    read_rows_with(db, snap, None).map(|(rows, refusals, _)| (rows, refusals))
}

/// Where [`read_rows_into`] puts each step payload instead of its
/// [`StepRow`] (the canonical encoding being built: `reconstruct`'s
/// `EncodingHead`).
pub trait PayloadSink {
    /// Called once, after `trajectory_meta` is read into `rows` and before
    /// the first step; `capacity` bounds the bytes the rows can hold.
    fn start(&mut self, rows: &SqliteRows, capacity: usize);
    /// Called for each step row kept, in order, with its payload.
    fn push(&mut self, payload: &[u8]);
}

/// [`read_rows`], with each kept step's payload handed to `sink` (and not
/// kept in its [`StepRow`], whose `step_payload` stays empty) when the steps
/// are read at all; the answer says whether they were (`sink` started).
/// The rows otherwise, and the refusals, are exactly [`read_rows`]'.
pub fn read_rows_into(
    db: &Path,
    snap: &Snapshot,
    sink: &mut dyn PayloadSink,
) -> Result<(SqliteRows, Vec<Refusal>, bool)> {
    read_rows_with(db, snap, Some(sink))
}

fn read_rows_with(
    db: &Path,
    snap: &Snapshot,
    mut sink: Option<&mut dyn PayloadSink>,
) -> Result<(SqliteRows, Vec<Refusal>, bool)> {
    let conn = snap.conn();
    let sql = |e: rusqlite::Error| Error::sqlite(db, SqliteFailure::Query(e));
    let mut refusals = Vec::new();
    let user_version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(sql)?;
    if user_version != USER_VERSION {
        refusals.push(Refusal::new(
            ReasonClass::UserVersion,
            "PRAGMA user_version",
            format!("user_version {user_version}, not {USER_VERSION}"),
        ));
        return Ok((SqliteRows::default(), refusals, false));
    }
    super::sqlite_schema::check_schema(conn, snap.schema_format(), &mut refusals).map_err(sql)?;
    if !refusals.is_empty() {
        return Ok((SqliteRows::default(), refusals, false));
    }
    let mut rows = SqliteRows::default();
    read_meta(conn, &mut rows, &mut refusals).map_err(sql)?;
    // The image bounds every blob's bytes; a step's key and length take at
    // most 15 more (a slack of an eighth covers them for any real store,
    // and a buffer that must grow after all only costs a copy).
    if let Some(sink) = sink.as_deref_mut() {
        sink.start(&rows, snap.size_hint() / 8 * 9 + 4096);
    }
    let started = sink.is_some();
    read_steps(conn, &mut rows, &mut refusals, sink).map_err(sql)?;
    rows.gen_metadata = read_indexed(conn, "gen_metadata", &mut refusals).map_err(sql)?;
    rows.executor_metadata = read_indexed(conn, "executor_metadata", &mut refusals).map_err(sql)?;
    rows.parent_references = read_indexed(conn, "parent_references", &mut refusals).map_err(sql)?;
    rows.battle_mode_infos = read_indexed(conn, "battle_mode_infos", &mut refusals).map_err(sql)?;
    read_metadata_blob(conn, &mut rows, &mut refusals).map_err(sql)?;
    Ok((rows, refusals, started))
}

fn shape(refusals: &mut Vec<Refusal>, location: impl Into<String>, detail: impl Into<String>) {
    refusals.push(Refusal::new(ReasonClass::RowShape, location, detail));
}

fn text(v: ValueRef<'_>) -> Option<String> {
    match v {
        ValueRef::Text(t) => std::str::from_utf8(t).ok().map(str::to_string),
        _ => None,
    }
}

fn int(v: ValueRef<'_>) -> Option<i64> {
    match v {
        ValueRef::Integer(i) => Some(i),
        _ => None,
    }
}

/// A blob column: `Ok(None)` for SQL NULL, `Err` for another storage class.
fn blob(v: ValueRef<'_>) -> std::result::Result<Option<Vec<u8>>, &'static str> {
    blob_ref(v).map(|b| b.map(<[u8]>::to_vec))
}

/// [`blob`], borrowed from the row.
fn blob_ref(v: ValueRef<'_>) -> std::result::Result<Option<&[u8]>, &'static str> {
    match v {
        ValueRef::Null => Ok(None),
        ValueRef::Blob(b) if b.len() > MAX_BLOB_BYTES => Err("larger than the blob limit"),
        ValueRef::Blob(b) => Ok(Some(b)),
        ValueRef::Text(_) => Err("stored as text, not blob"),
        ValueRef::Integer(_) | ValueRef::Real(_) => Err("stored as a number, not blob"),
    }
}

fn read_meta(
    conn: &Connection,
    rows: &mut SqliteRows,
    refusals: &mut Vec<Refusal>,
) -> rusqlite::Result<()> {
    let mut st = conn.prepare(
        "SELECT trajectory_id, cascade_id, trajectory_type, source FROM trajectory_meta",
    )?;
    let mut q = st.query([])?;
    let mut n = 0;
    while let Some(r) = q.next()? {
        n += 1;
        if n > 1 {
            continue;
        }
        match (
            text(r.get_ref(0)?),
            text(r.get_ref(1)?),
            int(r.get_ref(2)?),
            int(r.get_ref(3)?),
        ) {
            (Some(t), Some(c), Some(ty), Some(s)) => {
                rows.trajectory_id = t;
                rows.cascade_id = c;
                rows.trajectory_type = ty;
                rows.source = s;
            }
            _ => shape(
                refusals,
                "trajectory_meta",
                "a column holds another storage class than text, text, integer, integer",
            ),
        }
    }
    if n != 1 {
        shape(
            refusals,
            "trajectory_meta",
            format!("{n} rows, not exactly one"),
        );
    }
    Ok(())
}

fn contiguous(refusals: &mut Vec<Refusal>, table: &str, position: usize, idx: Option<i64>) -> bool {
    match idx {
        Some(i) if i == position as i64 => true,
        Some(i) => {
            refusals.push(Refusal::new(
                ReasonClass::IndexGap,
                format!("{table}.idx"),
                format!("idx {i} at position {position}: indices must be contiguous from zero"),
            ));
            false
        }
        None => {
            shape(refusals, format!("{table}.idx"), "idx is not an integer");
            false
        }
    }
}

fn read_steps(
    conn: &Connection,
    rows: &mut SqliteRows,
    refusals: &mut Vec<Refusal>,
    mut sink: Option<&mut dyn PayloadSink>,
) -> rusqlite::Result<()> {
    let mut st = conn.prepare(
        "SELECT idx, step_type, status, has_subtrajectory, metadata, error_details, permissions, \
         task_details, render_info, step_payload, step_format FROM steps ORDER BY idx",
    )?;
    let mut q = st.query([])?;
    while let Some(r) = q.next()? {
        let position = rows.steps.len();
        let idx = int(r.get_ref(0)?);
        if !contiguous(refusals, "steps", position, idx) {
            return Ok(());
        }
        let loc = format!("steps[{position}]");
        let format = int(r.get_ref(10)?);
        if format != Some(0) {
            refusals.push(Refusal::new(
                ReasonClass::StepFormat,
                format!("{loc}.step_format"),
                format!(
                    "step_format {}, not 0 (decomposed steps are unsupported)",
                    shown_int(format)
                ),
            ));
            return Ok(());
        }
        let mut row = StepRow {
            idx: position as i64,
            ..Default::default()
        };
        let ints = [(1, "step_type"), (2, "status"), (3, "has_subtrajectory")];
        for (col, name) in ints {
            match int(r.get_ref(col)?) {
                Some(v) => match col {
                    1 => row.step_type = v,
                    2 => row.status = v,
                    _ => row.has_subtrajectory = v,
                },
                None => {
                    shape(
                        refusals,
                        format!("{loc}.{name}"),
                        format!("{name} is not an integer"),
                    );
                    return Ok(());
                }
            }
        }
        let blobs = [
            "metadata",
            "error_details",
            "permissions",
            "task_details",
            "render_info",
            "step_payload",
        ];
        for (i, name) in blobs.iter().enumerate() {
            let v = match blob_ref(r.get_ref(4 + i)?) {
                Ok(v) => v,
                Err(why) => {
                    shape(refusals, format!("{loc}.{name}"), format!("{name} {why}"));
                    return Ok(());
                }
            };
            let owned = || v.map(<[u8]>::to_vec);
            match i {
                0 => row.metadata = owned(),
                1 => row.error_details = owned(),
                2 => row.permissions = owned(),
                3 => row.task_details = owned(),
                4 => row.render_info = owned(),
                _ => match v {
                    // Nothing can refuse the row after its payload: the
                    // sink takes it as the row is kept.
                    Some(p) => match sink.as_deref_mut() {
                        Some(sink) => sink.push(p),
                        None => row.step_payload = p.to_vec(),
                    },
                    None => {
                        shape(
                            refusals,
                            format!("{loc}.step_payload"),
                            "step_payload is NULL",
                        );
                        return Ok(());
                    }
                },
            }
        }
        rows.steps.push(row);
    }
    Ok(())
}

fn read_indexed(
    conn: &Connection,
    table: &str,
    refusals: &mut Vec<Refusal>,
) -> rusqlite::Result<Vec<Vec<u8>>> {
    let with_size = table == "gen_metadata";
    let sql = if with_size {
        "SELECT idx, data, size FROM gen_metadata ORDER BY idx".to_string()
    } else {
        format!("SELECT idx, data FROM `{table}` ORDER BY idx")
    };
    let mut st = conn.prepare(&sql)?;
    let mut q = st.query([])?;
    let mut out = Vec::new();
    while let Some(r) = q.next()? {
        let position = out.len();
        if !contiguous(refusals, table, position, int(r.get_ref(0)?)) {
            break;
        }
        let data = match blob(r.get_ref(1)?) {
            Ok(Some(d)) => d,
            Ok(None) => {
                shape(
                    refusals,
                    format!("{table}[{position}].data"),
                    "data is NULL",
                );
                break;
            }
            Err(why) => {
                shape(
                    refusals,
                    format!("{table}[{position}].data"),
                    format!("data {why}"),
                );
                break;
            }
        };
        if with_size {
            let size = int(r.get_ref(2)?);
            if size != Some(data.len() as i64) {
                shape(
                    refusals,
                    format!("gen_metadata[{position}].size"),
                    format!(
                        "size {} differs from length(data) {}",
                        shown_int(size),
                        data.len()
                    ),
                );
                break;
            }
        }
        out.push(data);
    }
    Ok(out)
}

fn read_metadata_blob(
    conn: &Connection,
    rows: &mut SqliteRows,
    refusals: &mut Vec<Refusal>,
) -> rusqlite::Result<()> {
    let mut st = conn.prepare("SELECT id, data FROM trajectory_metadata_blob")?;
    let mut q = st.query([])?;
    let mut n = 0;
    while let Some(r) = q.next()? {
        n += 1;
        if text(r.get_ref(0)?).as_deref() != Some("main") {
            shape(
                refusals,
                "trajectory_metadata_blob.id",
                "a row whose id is not 'main'",
            );
            continue;
        }
        match blob(r.get_ref(1)?) {
            Ok(d) => rows.metadata = Some(d.unwrap_or_default()),
            Err(why) => shape(
                refusals,
                "trajectory_metadata_blob.data",
                format!("data {why}"),
            ),
        }
    }
    if n != 1 {
        shape(
            refusals,
            "trajectory_metadata_blob",
            format!("{n} rows, not exactly one"),
        );
    }
    Ok(())
}

/// An integer column as a person reads it: its value, or what it holds
/// instead (NULL, text, a blob, a real).
fn shown_int(v: Option<i64>) -> String {
    v.map_or_else(|| "NULL or not an integer".to_string(), |n| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The streamed fingerprint of files is the fingerprint of their bytes,
    /// and tells an absent companion from an empty one.
    #[test]
    fn streamed_fingerprint_is_the_bytes_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("c.db");
        let big: Vec<u8> = (0..700_000u32).map(|i| (i % 251) as u8).collect();
        fs::write(&db, &big).unwrap();
        let [wal, _, journal] = companions(&db);
        type Case<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);
        let cases: [Case<'_>; 5] = [
            (None, None),
            (Some(b""), None),
            (Some(&big[..300_001]), None),
            (None, Some(b"j")),
            (Some(b"w"), Some(b"")),
        ];
        let mut seen = Vec::new();
        for (w, j) in cases {
            for (p, b) in [(&wal, w), (&journal, j)] {
                match b {
                    Some(b) => fs::write(p, b).unwrap(),
                    None => {
                        let _ = fs::remove_file(p);
                    }
                }
            }
            let streamed = file_fingerprint(&db).unwrap();
            assert_eq!(streamed, fingerprint(&big, w, j), "{w:?} {j:?}");
            assert!(!seen.contains(&streamed), "two cases, one fingerprint");
            seen.push(streamed);
        }
    }

    #[test]
    fn streamed_fingerprint_refuses_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("c.db");
        fs::write(dir.path().join("real"), b"x").unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), &db).unwrap();
        assert!(file_fingerprint(&db).is_err());
    }
}
