//! Bounded metadata reuse (issue 35 item 2; completeness.md, "Legacy
//! watcher checks use the same bounded metadata reuse as SQLite, keyed by
//! both format profiles. Source or sidecar changes, expiry, and a sibling
//! SQLite file force another native check").
//!
//! Between native checks the polling loop may reuse what it judged of a
//! source while the source's metadata is unchanged, for at most
//! [`DEFAULT_BOUND`] (ten minutes; `watch --metadata-bound` may only lower
//! it). The key ([`Observed`]) holds, for the source and each companion
//! that can carry its content (`-wal`, `-journal`; not `-shm`, which agy
//! rewrites on reads), and for the sidecar: existence, size, modification
//! time, change time (ctime) and inode (with the device); for a `.pb`,
//! whether a sibling `.db` exists; and both format profiles (SQLite and
//! legacy). Any difference, or the bound's expiry, forces a native check.
//! ctime is set by the kernel on every content or metadata change and cannot
//! be set back by a user, so a content change with the mtime restored is
//! caught at once; within the bound in every case.

use std::path::Path;
use std::time::{Duration, Instant};

/// The longest a judgement is reused without a native check.
pub const DEFAULT_BOUND: Duration = Duration::from_secs(10 * 60);

/// One file's metadata, as far as the platform reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub inode: u64,
    pub device: u64,
}

impl Stamp {
    /// The stamp of `path` (not following a symbolic link), `None` when
    /// nothing is there; an error reading it is a stamp that matches nothing
    /// ([`Stamp::unreadable`]), so it never lets a judgement be reused.
    pub fn of(path: &Path) -> Option<Stamp> {
        match std::fs::symlink_metadata(path) {
            Ok(m) => Some(Stamp::from_metadata(&m)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(_) => Some(Stamp::unreadable()),
        }
    }

    /// A stamp no later observation equals (size `u64::MAX`, times minimal).
    fn unreadable() -> Stamp {
        Stamp {
            size: u64::MAX,
            mtime_ns: i128::MIN,
            ctime_ns: i128::MIN,
            inode: u64::MAX,
            device: u64::MAX,
        }
    }

    #[cfg(unix)]
    fn from_metadata(m: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Stamp {
            size: m.size(),
            mtime_ns: ns(m.mtime(), m.mtime_nsec()),
            ctime_ns: ns(m.ctime(), m.ctime_nsec()),
            inode: m.ino(),
            device: m.dev(),
        }
    }

    #[cfg(not(unix))]
    fn from_metadata(m: &std::fs::Metadata) -> Stamp {
        let t = |t: std::io::Result<std::time::SystemTime>| {
            t.ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(-1, |d| d.as_nanos() as i128)
        };
        Stamp {
            size: m.len(),
            mtime_ns: t(m.modified()),
            // No ctime or inode here: the bound alone catches a content
            // change with the mtime restored.
            ctime_ns: t(m.created()),
            inode: 0,
            device: 0,
        }
    }
}

/// What the loop observed of one conversation without reading it: the key
/// under which a judgement may be reused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// The source, then its `-wal` and `-journal` (SQLite).
    pub source: [Option<Stamp>; 3],
    /// A `.pb` whose sibling `.db` exists (SQLite wins: the `.db` is the
    /// source now).
    pub sibling_db: bool,
    pub sidecar: Option<Stamp>,
    /// Digest of both format profiles (SQLite, legacy).
    pub profiles: u64,
}

impl Observed {
    /// Observes `source` and `sidecar` under `profiles`
    /// ([`profiles_key`]).
    pub fn of(source: &Path, sidecar: &Path, profiles: u64) -> Observed {
        let is_pb = source.extension().is_some_and(|e| e == "pb");
        let [wal, _shm, journal] = crate::source::sqlite::companions(source);
        let companion = |p: &Path| if is_pb { None } else { Stamp::of(p) };
        Observed {
            source: [Stamp::of(source), companion(&wal), companion(&journal)],
            sibling_db: is_pb && std::fs::symlink_metadata(source.with_extension("db")).is_ok(),
            sidecar: Stamp::of(sidecar),
            profiles,
        }
    }

    /// The same observation with the sidecar as it is now (after a write).
    pub fn with_sidecar(mut self, sidecar: &Path) -> Observed {
        self.sidecar = Stamp::of(sidecar);
        self
    }
}

/// The key of both format profiles.
pub fn profiles_key(sqlite: &str, legacy: &str) -> u64 {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(sqlite.as_bytes());
    h.update([0]);
    h.update(legacy.as_bytes());
    let d = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_be_bytes(b)
}

/// A judgement kept between native checks.
#[derive(Debug, Clone)]
pub struct Reuse<J> {
    pub observed: Observed,
    pub checked_at: Instant,
    pub judgement: J,
}

impl<J> Reuse<J> {
    /// The judgement, when the key is unchanged and `bound` has not passed
    /// since the native check (a zero bound reuses nothing).
    pub fn get(&self, now: &Observed, at: Instant, bound: Duration) -> Option<&J> {
        let fresh = at.saturating_duration_since(self.checked_at) < bound;
        (fresh && self.observed == *now).then_some(&self.judgement)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn observe(dir: &Path, src: &Path) -> Observed {
        Observed::of(src, &dir.join("x.trajectory.json"), 7)
    }

    #[test]
    fn a_content_change_with_the_mtime_restored_is_seen_by_ctime() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("x.db");
        std::fs::write(&src, b"aaaa").unwrap();
        let mtime = std::fs::metadata(&src).unwrap().modified().unwrap();
        let before = observe(d.path(), &src);
        let entry = Reuse {
            observed: before.clone(),
            checked_at: Instant::now(),
            judgement: "fresh",
        };
        assert_eq!(
            entry.get(&before, Instant::now(), DEFAULT_BOUND),
            Some(&"fresh")
        );
        // let ctime move even on a filesystem that keeps whole seconds
        std::thread::sleep(Duration::from_millis(1100));
        let mut f = std::fs::OpenOptions::new().write(true).open(&src).unwrap();
        f.write_all(b"bbbb").unwrap();
        f.set_times(std::fs::FileTimes::new().set_modified(mtime))
            .unwrap();
        drop(f);
        let after = observe(d.path(), &src);
        assert_eq!(
            after.source[0].unwrap().size,
            before.source[0].unwrap().size
        );
        assert_eq!(
            after.source[0].unwrap().mtime_ns,
            before.source[0].unwrap().mtime_ns
        );
        #[cfg(unix)]
        assert_eq!(entry.get(&after, Instant::now(), DEFAULT_BOUND), None);
    }

    #[test]
    fn expiry_a_sidecar_a_companion_a_sibling_db_or_a_profile_force_a_check() {
        let d = tempfile::tempdir().unwrap();
        let pb = d.path().join("x.pb");
        std::fs::write(&pb, b"aaaa").unwrap();
        let now = observe(d.path(), &pb);
        let tiny = Duration::from_millis(30);
        let entry = Reuse {
            observed: now.clone(),
            checked_at: Instant::now(),
            judgement: (),
        };
        assert!(entry.get(&now, Instant::now(), tiny).is_some());
        std::thread::sleep(tiny * 2);
        assert!(entry.get(&now, Instant::now(), tiny).is_none(), "expired");
        assert!(entry.get(&now, Instant::now(), Duration::ZERO).is_none());
        let entry = Reuse {
            observed: now.clone(),
            checked_at: Instant::now(),
            judgement: (),
        };
        std::fs::write(d.path().join("x.trajectory.json"), b"{}").unwrap();
        assert!(entry
            .get(&observe(d.path(), &pb), Instant::now(), DEFAULT_BOUND)
            .is_none());
        std::fs::remove_file(d.path().join("x.trajectory.json")).unwrap();
        assert!(entry
            .get(&observe(d.path(), &pb), Instant::now(), DEFAULT_BOUND)
            .is_some());
        std::fs::write(d.path().join("x.db"), b"").unwrap();
        assert!(entry
            .get(&observe(d.path(), &pb), Instant::now(), DEFAULT_BOUND)
            .is_none());
        let other_profile = Observed::of(&pb, &d.path().join("x.trajectory.json"), 8);
        assert_ne!(other_profile.profiles, now.profiles);
        let db = d.path().join("y.db");
        std::fs::write(&db, b"").unwrap();
        let before = observe(d.path(), &db);
        std::fs::write(d.path().join("y.db-wal"), b"w").unwrap();
        assert_ne!(observe(d.path(), &db), before, "a new -wal");
        assert_ne!(profiles_key("a", "b"), profiles_key("a", "c"));
    }
}
