//! The store's own troubles, named (issue 48 item 5): what agy itself does
//! not handle, found by `list --check` and `doctor` (never by plain `list`,
//! which decodes nothing). None changes a verdict: these are states beside
//! the sidecar's, and the sweep still judges each source as it is.
//!
//! Every probe is read-only. Databases are read through the snapshot reader
//! ([`crate::source::sqlite::snapshot`]: the files read as plain bytes, the
//! state built in memory or in a private copy), so no SQLite connection ever
//! touches a source and no `-shm`, `-wal` or `-journal` can appear beside
//! it. Whether a writer holds a conversation is read from the operating
//! system's lock table (`/proc/locks` on Linux), never by opening or locking
//! the database.
//!
//! * **Not indexed** (public-format-facts §7.2): a source under
//!   `conversations/` whose id `<root>/conversation_summaries.db`'s table
//!   `conversation_summaries` (§1.7, column `conversation_id`) does not
//!   hold; agy's resume does not offer it. And the index's entries whose
//!   conversation has no source in `conversations/` ("index entry without a
//!   file"). Ids compare case-insensitively (discovery lowercases them). No
//!   index file: nothing is counted (the state says the index is absent).
//! * **Zombie steps** (§7.3): steps whose `steps.status` (the redundant
//!   copy of the Step's status, §1.6) is RUNNING or WAITING (the values
//!   named so in the loaded schema's `exa.cortex_pb.CortexStepStatus`) in a
//!   conversation that is not active: no process holds a lock on its `.db`,
//!   `-wal` or `-shm` in the lock table, and its last change (the newer
//!   mtime of `.db` and `-wal`) is at least [`ZOMBIE_QUIET`] old. Where the
//!   lock table cannot be read (another platform), activity is unknown and
//!   no step is called a zombie (the stricter reading); the in-flight steps
//!   are still counted. Legacy `.pb` sources are not probed (agy no longer
//!   writes them; their steps are judged by the sweep as they are).
//! * **Malformed** (§7.3): a database SQLite refuses (`PRAGMA quick_check`
//!   not `ok`, or an image it cannot open), named with SQLite's own message
//!   and the advice [`MALFORMED_ADVICE`]. The summaries index is checked
//!   the same way.
//! * **Oversized** (§7.2): a conversation whose files (`.db` and `-wal`,
//!   or `.pb`) hold more than [`OVERSIZED_BYTES`]; for a readable database
//!   the bytes each member kind holds (each table's blobs) are named,
//!   largest first, with what the rows do not account for (pages, free
//!   space) as `other`.

use crate::roots::Root;
use crate::source::Format;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// How long a conversation with in-flight steps must have been left
/// unchanged, with no writer holding it, before its steps are called
/// zombies: 10 minutes (agy rewrites a step's status as the step moves,
/// and a live turn writes its steps within seconds; the watcher's
/// metadata-reuse bound is the same 10 minutes).
pub const ZOMBIE_QUIET: Duration = Duration::from_secs(600);

/// The size above which a conversation is named oversized: 100 MB (decimal;
/// the report behind §7.2 averages about 75 MB per unindexed conversation,
/// and a single gen_metadata row reaches 97 MB, §1.5).
pub const OVERSIZED_BYTES: u64 = 100_000_000;

/// agy's conversation summaries index, in a root (§1.7).
pub const SUMMARIES_DB: &str = "conversation_summaries.db";

/// What to do about a malformed database.
pub const MALFORMED_ADVICE: &str = "never repair the original in place; \
     audit a copy made with SQLite's `.recover` (sqlite3 ORIGINAL .recover | sqlite3 COPY)";

/// The summaries index of a root.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum IndexState {
    /// No `conversation_summaries.db` in the root.
    Absent,
    /// Read: the conversations it misses and its entries without a file.
    #[serde(rename_all = "camelCase")]
    Read {
        /// Sources on disk the index does not hold, by id.
        not_indexed: Vec<String>,
        /// Index entries whose conversation has no source, by id.
        without_file: Vec<String>,
    },
    /// SQLite refuses the index (its message).
    Malformed {
        /// SQLite's message.
        message: String,
    },
    /// The index could not be read (not a malformed image: an I/O error,
    /// no `conversation_summaries` table...).
    Unreadable {
        /// Why.
        error: String,
    },
}

/// Whether a conversation with in-flight steps is active.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Activity {
    /// No writer, unchanged for at least [`ZOMBIE_QUIET`]: its in-flight
    /// steps are zombies.
    Idle,
    /// A process holds a lock on its files.
    Locked,
    /// Changed within [`ZOMBIE_QUIET`].
    Recent,
    /// The lock table cannot be read here: not judged.
    Unknown,
}

/// Steps left RUNNING or WAITING in one conversation.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InFlight {
    /// Steps RUNNING.
    pub running: u64,
    /// Steps WAITING.
    pub waiting: u64,
    /// Whether the conversation is active.
    pub activity: Activity,
    /// Seconds since its last change.
    pub quiet_seconds: u64,
}

impl InFlight {
    /// Steps in flight.
    pub fn steps(&self) -> u64 {
        self.running + self.waiting
    }

    /// Zombie steps: the in-flight ones of a conversation not active.
    pub fn zombies(&self) -> u64 {
        if self.activity == Activity::Idle {
            self.steps()
        } else {
            0
        }
    }
}

/// A conversation over [`OVERSIZED_BYTES`].
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Oversized {
    /// Its files' bytes.
    pub bytes: u64,
    /// Bytes per member kind, largest first (empty when the source could
    /// not be read as a database).
    pub largest: Vec<(String, u64)>,
}

/// One conversation's troubles.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationTroubles {
    /// Its id.
    pub id: String,
    /// Its source.
    pub path: String,
    /// Missing from the summaries index (false without an index).
    pub not_indexed: bool,
    /// Its in-flight steps (None: none, or not probed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<InFlight>,
    /// SQLite's message for a malformed database.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub malformed: Option<String>,
    /// Over [`OVERSIZED_BYTES`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oversized: Option<Oversized>,
}

impl ConversationTroubles {
    /// Whether anything is named.
    pub fn any(&self) -> bool {
        self.not_indexed
            || self.in_flight.is_some()
            || self.malformed.is_some()
            || self.oversized.is_some()
    }
}

/// A root's (or store folder's) troubles.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RootTroubles {
    /// The summaries index.
    pub index: IndexState,
    /// The conversations with a trouble, by id.
    pub conversations: Vec<ConversationTroubles>,
    /// Zombie steps in all.
    pub zombie_steps: u64,
    /// Conversations holding zombie steps.
    pub zombie_conversations: u64,
    /// Malformed conversation databases.
    pub malformed: u64,
    /// Oversized conversations.
    pub oversized: u64,
}

impl RootTroubles {
    /// One conversation's troubles, if any.
    pub fn of(&self, id: &str) -> Option<&ConversationTroubles> {
        self.conversations.iter().find(|c| c.id == id)
    }

    /// The index entries without a file.
    pub fn without_file(&self) -> &[String] {
        match &self.index {
            IndexState::Read { without_file, .. } => without_file,
            _ => &[],
        }
    }

    /// The conversations the index misses.
    pub fn not_indexed(&self) -> &[String] {
        match &self.index {
            IndexState::Read { not_indexed, .. } => not_indexed,
            _ => &[],
        }
    }
}

/// The in-flight status numbers (RUNNING, WAITING) the loaded schema names.
fn in_flight_numbers(schema: &crate::schema::Schema) -> Option<(i32, i32)> {
    let e = schema
        .pool
        .get_enum_by_name("exa.cortex_pb.CortexStepStatus")?;
    let n = |name: &str| e.get_value_by_name(name).map(|v| v.number());
    Some((
        n("CORTEX_STEP_STATUS_RUNNING")?,
        n("CORTEX_STEP_STATUS_WAITING")?,
    ))
}

/// The files (device, inode) a process holds a lock on, from the OS's
/// lock table; `None` where it cannot be read.
#[derive(Debug, Clone, Default)]
pub struct LockTable {
    held: BTreeSet<(u64, u64, u64)>,
}

impl LockTable {
    /// The table as it is now (`/proc/locks`, read boundedly); `None` on a
    /// platform without one, or when it cannot be read.
    pub fn read() -> Option<LockTable> {
        if !cfg!(target_os = "linux") {
            return None;
        }
        let bytes = crate::util::bounded::read_regular(
            Path::new("/proc/locks"),
            crate::util::bounded::InputKind::Log,
        )
        .ok()?;
        Some(LockTable::parse(&String::from_utf8_lossy(&bytes)))
    }

    /// Parses `/proc/locks`: each line's `MAJOR:MINOR:INODE` (major and
    /// minor in hexadecimal, the inode in decimal).
    pub fn parse(text: &str) -> LockTable {
        let mut held = BTreeSet::new();
        for line in text.lines() {
            for tok in line.split_whitespace() {
                let parts: Vec<&str> = tok.split(':').collect();
                if let [maj, min, ino] = parts[..] {
                    if let (Ok(a), Ok(b), Ok(c)) = (
                        u64::from_str_radix(maj, 16),
                        u64::from_str_radix(min, 16),
                        ino.parse::<u64>(),
                    ) {
                        held.insert((a, b, c));
                    }
                }
            }
        }
        LockTable { held }
    }

    /// Whether a process holds a lock on the file at `path`.
    pub fn holds(&self, path: &Path) -> bool {
        file_key(path).is_some_and(|k| self.held.contains(&k))
    }
}

/// A file's (major, minor, inode), as the lock table names it.
#[cfg(unix)]
fn file_key(path: &Path) -> Option<(u64, u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    let dev = m.dev();
    // the glibc/Linux encoding of a dev_t
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    Some((major, minor, m.ino()))
}

#[cfg(not(unix))]
fn file_key(_path: &Path) -> Option<(u64, u64, u64)> {
    None
}

fn mtime(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

fn size(p: &Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

/// SQLite's message when the snapshot reader refuses a database as
/// malformed; `Err` with the error text for any other failure.
fn malformed_message(e: &agy_engine::Error) -> Option<String> {
    match e {
        agy_engine::Error::Corrupt { rule, .. } => Some(format!("{}: {rule}", rule.location())),
        agy_engine::Error::Sqlite { failure, .. } => Some(failure.to_string()),
        _ => None,
    }
}

/// The summaries index of `root` against the ids on disk.
fn index_state(root: &Path, on_disk: &BTreeSet<String>) -> IndexState {
    let db = root.join(SUMMARIES_DB);
    if std::fs::symlink_metadata(&db).is_err() {
        return IndexState::Absent;
    }
    let snap = match crate::source::sqlite::snapshot(&db) {
        Ok(s) => s,
        Err(e) => {
            return match malformed_message(&e) {
                Some(message) => IndexState::Malformed { message },
                None => IndexState::Unreadable {
                    error: e.to_string(),
                },
            }
        }
    };
    let ids: rusqlite::Result<BTreeSet<String>> = (|| {
        let mut st = snap
            .conn()
            .prepare("SELECT conversation_id FROM conversation_summaries")?;
        let rows = st.query_map([], |r| r.get::<_, Option<String>>(0))?;
        let mut out = BTreeSet::new();
        for id in rows {
            if let Some(id) = id? {
                out.insert(id.trim().to_ascii_lowercase());
            }
        }
        Ok(out)
    })();
    match ids {
        Ok(indexed) => IndexState::Read {
            not_indexed: on_disk.difference(&indexed).cloned().collect(),
            without_file: indexed.difference(on_disk).cloned().collect(),
        },
        Err(e) => IndexState::Unreadable {
            error: format!("{}: {e}", db.display()),
        },
    }
}

/// Bytes per member kind of a readable conversation database, largest
/// first, with `other` for what the rows do not account for.
fn member_kinds(conn: &rusqlite::Connection, total: u64) -> Vec<(String, u64)> {
    const KINDS: &[(&str, &str)] = &[
        (
            "steps",
            "SELECT total(length(metadata)) + total(length(error_details)) + \
             total(length(permissions)) + total(length(task_details)) + \
             total(length(render_info)) + total(length(step_payload)) FROM steps",
        ),
        (
            "gen_metadata",
            "SELECT total(length(data)) FROM gen_metadata",
        ),
        (
            "executor_metadata",
            "SELECT total(length(data)) FROM executor_metadata",
        ),
        (
            "parent_references",
            "SELECT total(length(data)) FROM parent_references",
        ),
        (
            "trajectory_metadata_blob",
            "SELECT total(length(data)) FROM trajectory_metadata_blob",
        ),
        (
            "battle_mode_infos",
            "SELECT total(length(data)) FROM battle_mode_infos",
        ),
    ];
    let mut out: Vec<(String, u64)> = KINDS
        .iter()
        .filter_map(|(kind, sql)| {
            let n: f64 = conn.query_row(sql, [], |r| r.get(0)).ok()?;
            // total() is a float; the sums are whole byte counts
            Some(((*kind).to_string(), n.max(0.0) as u64))
        })
        .collect();
    let rows: u64 = out.iter().map(|(_, n)| n).sum();
    out.push(("other".into(), total.saturating_sub(rows)));
    out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

/// Probes one conversation.
fn probe_one(
    id: &str,
    path: &Path,
    format: Format,
    numbers: Option<(i32, i32)>,
    locks: Option<&LockTable>,
    now: SystemTime,
) -> ConversationTroubles {
    let [wal, shm, _] = crate::source::sqlite::companions(path);
    let bytes = match format {
        Format::Sqlite => size(path) + size(&wal),
        Format::Protobuf => size(path),
    };
    let mut t = ConversationTroubles {
        id: id.to_string(),
        path: path.display().to_string(),
        not_indexed: false,
        in_flight: None,
        malformed: None,
        oversized: (bytes > OVERSIZED_BYTES).then(|| Oversized {
            bytes,
            largest: Vec::new(),
        }),
    };
    if format != Format::Sqlite {
        return t;
    }
    let snap = match crate::source::sqlite::snapshot(path) {
        Ok(s) => s,
        Err(e) => {
            t.malformed = malformed_message(&e);
            return t;
        }
    };
    if let Some(o) = &mut t.oversized {
        o.largest = member_kinds(snap.conn(), bytes);
    }
    let Some((running, waiting)) = numbers else {
        return t;
    };
    let count = |n: i32| -> u64 {
        snap.conn()
            .query_row("SELECT count(*) FROM steps WHERE status = ?1", [n], |r| {
                r.get::<_, i64>(0)
            })
            .ok()
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(0)
    };
    let (r, w) = (count(running), count(waiting));
    if r + w == 0 {
        return t;
    }
    let last = [mtime(path), mtime(&wal)].into_iter().flatten().max();
    let quiet = last
        .and_then(|l| now.duration_since(l).ok())
        .unwrap_or_default();
    let activity = match locks {
        None => Activity::Unknown,
        Some(l) if [path, &wal, &shm].iter().any(|p| l.holds(p)) => Activity::Locked,
        Some(_) if quiet < ZOMBIE_QUIET => Activity::Recent,
        Some(_) => Activity::Idle,
    };
    t.in_flight = Some(InFlight {
        running: r,
        waiting: w,
        activity,
        quiet_seconds: quiet.as_secs(),
    });
    t
}

/// Probes a root (or a store folder): its summaries index and every
/// conversation `discover` selects. `locks` is the OS's lock table
/// ([`LockTable::read`]), read once per command.
pub fn probe(
    root: &Root,
    schema: &crate::schema::Schema,
    locks: Option<&LockTable>,
) -> crate::Result<RootTroubles> {
    let d = crate::discover::discover(&root.path)?;
    let on_disk: BTreeSet<String> = d.sources.iter().map(|s| s.id.clone()).collect();
    let index = index_state(&root.path, &on_disk);
    let unindexed: BTreeSet<&String> = match &index {
        IndexState::Read { not_indexed, .. } => not_indexed.iter().collect(),
        _ => BTreeSet::new(),
    };
    let numbers = in_flight_numbers(schema);
    let now = SystemTime::now();
    let mut out = RootTroubles {
        index: IndexState::Absent,
        conversations: Vec::new(),
        zombie_steps: 0,
        zombie_conversations: 0,
        malformed: 0,
        oversized: 0,
    };
    for s in &d.sources {
        let mut t = probe_one(&s.id, &s.path, s.format, numbers, locks, now);
        t.not_indexed = unindexed.contains(&s.id);
        if let Some(f) = &t.in_flight {
            out.zombie_steps += f.zombies();
            out.zombie_conversations += u64::from(f.zombies() > 0);
        }
        out.malformed += u64::from(t.malformed.is_some());
        out.oversized += u64::from(t.oversized.is_some());
        if t.any() {
            out.conversations.push(t);
        }
    }
    out.index = index;
    Ok(out)
}

/// A byte count in MB (decimal, one decimal place).
pub fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// The text lines naming one conversation's troubles (escaped for a
/// terminal by the caller's `escape`).
pub fn conversation_lines(t: &ConversationTroubles) -> Vec<String> {
    let mut out = Vec::new();
    if t.not_indexed {
        out.push(format!(
            "not indexed: {SUMMARIES_DB} does not hold it (agy will not offer it on resume)"
        ));
    }
    if let Some(f) = &t.in_flight {
        let what = format!("{} RUNNING, {} WAITING", f.running, f.waiting);
        out.push(match f.activity {
            Activity::Idle => format!(
                "zombie steps: {} ({what}; no writer holds it, unchanged for {} s; the sweep judges them as they are)",
                f.steps(),
                f.quiet_seconds
            ),
            Activity::Locked => format!("in-flight steps: {} ({what}; active: a process holds a lock on it)", f.steps()),
            Activity::Recent => format!("in-flight steps: {} ({what}; active: changed {} s ago)", f.steps(), f.quiet_seconds),
            Activity::Unknown => format!("in-flight steps: {} ({what}; activity unknown: no lock table to read here)", f.steps()),
        });
    }
    if let Some(m) = &t.malformed {
        out.push(format!("malformed: {m}; {MALFORMED_ADVICE}"));
    }
    if let Some(o) = &t.oversized {
        let kinds: Vec<String> = o
            .largest
            .iter()
            .take(3)
            .map(|(k, n)| format!("{k} {}", mb(*n)))
            .collect();
        out.push(format!(
            "oversized: {} (over {}){}",
            mb(o.bytes),
            mb(OVERSIZED_BYTES),
            if kinds.is_empty() {
                String::new()
            } else {
                format!("; largest: {}", kinds.join(", "))
            }
        ));
    }
    out
}

/// The lines naming a summaries index's state.
pub fn index_lines(index: &IndexState) -> Vec<String> {
    let mut out = Vec::new();
    match index {
        IndexState::Absent => out.push(format!("index: no {SUMMARIES_DB}")),
        IndexState::Read {
            not_indexed,
            without_file,
        } => {
            out.push(format!(
                "index: {} not indexed (agy will not offer them on resume){}",
                not_indexed.len(),
                list(not_indexed)
            ));
            out.push(format!(
                "index: {} entries without a file{}",
                without_file.len(),
                list(without_file)
            ));
        }
        IndexState::Malformed { message } => out.push(format!(
            "index: {SUMMARIES_DB} malformed: {message}; {MALFORMED_ADVICE}"
        )),
        IndexState::Unreadable { error } => out.push(format!("index: unreadable: {error}")),
    }
    out
}

/// The per-root summary lines (`doctor`'s `troubles:` block).
pub fn summary_lines(t: &RootTroubles) -> Vec<String> {
    let mut out = index_lines(&t.index);
    let zombies: Vec<String> = t
        .conversations
        .iter()
        .filter_map(|c| {
            let z = c.in_flight.as_ref()?.zombies();
            (z > 0).then(|| format!("{} ({z})", c.id))
        })
        .collect();
    out.push(format!(
        "zombie steps: {} in {} conversations (RUNNING or WAITING, no writer, unchanged for {} min or more){}",
        t.zombie_steps,
        t.zombie_conversations,
        ZOMBIE_QUIET.as_secs() / 60,
        list(&zombies)
    ));
    out.push(format!("malformed: {}", t.malformed));
    for c in t.conversations.iter().filter(|c| c.malformed.is_some()) {
        out.push(format!(
            "  {}: {}; {MALFORMED_ADVICE}",
            c.id,
            c.malformed.as_deref().unwrap_or("")
        ));
    }
    out.push(format!(
        "oversized (over {}): {}",
        mb(OVERSIZED_BYTES),
        t.oversized
    ));
    for c in t.conversations.iter().filter(|c| c.oversized.is_some()) {
        for line in conversation_lines(&ConversationTroubles {
            not_indexed: false,
            in_flight: None,
            malformed: None,
            ..c.clone()
        }) {
            out.push(format!("  {}: {line}", c.id));
        }
    }
    out
}

/// `: a, b, c` (at most 10, then `, ... (N more)`), or nothing when empty.
fn list(ids: &[String]) -> String {
    if ids.is_empty() {
        return String::new();
    }
    let mut s = ids.iter().take(10).cloned().collect::<Vec<_>>().join(", ");
    if ids.len() > 10 {
        s.push_str(&format!(", ... ({} more)", ids.len() - 10));
    }
    format!(": {s}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_table_is_read_by_device_and_inode() {
        let t = LockTable::parse(
            "1: POSIX  ADVISORY  READ 1234 08:02:131 128 128\n\
             2: -> POSIX  ADVISORY  WRITE 99 fd:01:77 0 EOF\n\
             3: FLOCK  ADVISORY  WRITE 5 00:1f:9 0 EOF\n",
        );
        assert!(t.held.contains(&(8, 2, 131)));
        assert!(t.held.contains(&(0xfd, 1, 77)));
        assert!(t.held.contains(&(0, 0x1f, 9)));
        assert_eq!(t.held.len(), 3);
    }

    #[test]
    fn in_flight_steps_are_zombies_only_when_idle() {
        let f = |activity| InFlight {
            running: 1,
            waiting: 2,
            activity,
            quiet_seconds: 0,
        };
        assert_eq!(f(Activity::Idle).zombies(), 3);
        for a in [Activity::Locked, Activity::Recent, Activity::Unknown] {
            assert_eq!(f(a).zombies(), 0);
        }
    }
}
