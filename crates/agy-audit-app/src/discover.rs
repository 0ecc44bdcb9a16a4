//! Stage 1: discover conversation sources under a store root.
//!
//! Sources are `conversations/<uuid>.db` (SQLite, with its `-wal`) and legacy
//! `conversations/<uuid>.pb`. When both exist for one id, SQLite wins and the
//! `.pb` is recorded as shadowed. `implicit/` (implicit trajectories, not
//! conversations) is never selected. Links are not followed.

use crate::error::{Error, Result};
use crate::roots::error::RootError;
use crate::source::{looks_like_uuid, Format};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The environment variable naming the default store root.
pub use crate::well_known::ROOT_ENV;

/// One selected source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRef {
    pub id: String,
    pub format: Format,
    pub path: PathBuf,
    /// A legacy `.pb` of the same id that the `.db` shadows.
    pub shadowed: Option<PathBuf>,
}

/// What discovery found.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// Selected sources, sorted by id.
    pub sources: Vec<SourceRef>,
    /// Files under `conversations/` that were passed over, with the reason.
    pub ignored: Vec<(PathBuf, &'static str)>,
}

/// `$ANTIGRAVITY_CLI_ROOT`, else `~/.gemini/antigravity-cli`. With neither
/// that variable nor `HOME` set (or set empty) there is no default: a usage
/// error naming both, never a path relative to wherever the command runs.
pub fn default_root() -> Result<PathBuf> {
    if let Some(r) = std::env::var_os(ROOT_ENV).filter(|r| !r.is_empty()) {
        return Ok(PathBuf::from(r));
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".gemini").join("antigravity-cli")),
        None => Err(RootError::NoRoot.into()),
    }
}

/// Checks that a store root names a folder: a missing one and one that is
/// not a folder are usage errors (exit 2), as is a root without
/// `conversations/` ([`discover`]): each is a root the user must correct.
pub fn check_root(root: &Path) -> Result<()> {
    match std::fs::symlink_metadata(root) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(m) if m.file_type().is_symlink() && root.is_dir() => Ok(()),
        Ok(_) => Err(RootError::RootNotAFolder {
            root: root.to_path_buf(),
        }
        .into()),
        Err(source) if missing(&source) => Err(RootError::RootMissing {
            root: root.to_path_buf(),
            source,
        }
        .into()),
        Err(e) => Err(Error::io(root, e)),
    }
}

/// A path that names nothing: not found, or a component is a file.
fn missing(e: &std::io::Error) -> bool {
    /// `ENOTDIR` (the same number on Linux and the BSDs).
    const ENOTDIR: i32 = 20;
    e.kind() == std::io::ErrorKind::NotFound || (cfg!(unix) && e.raw_os_error() == Some(ENOTDIR))
}

/// The store root made absolute, checked first ([`check_root`]), so a
/// missing root is the same usage error as a root without `conversations/`.
pub fn store_root(root: &Path) -> Result<PathBuf> {
    check_root(root)?;
    std::fs::canonicalize(root).map_err(|e| Error::io(root, e))
}

/// Lists the sources under `root/conversations`.
pub fn discover(root: &Path) -> Result<Discovery> {
    let dir = conversations_dir(root)?;
    let mut by_id: BTreeMap<String, (Option<PathBuf>, Option<PathBuf>)> = BTreeMap::new();
    let mut out = Discovery::default();
    for entry in walkdir::WalkDir::new(&dir)
        .min_depth(1)
        .max_depth(1)
        .follow_links(false)
        .sort_by_file_name()
    {
        let entry =
            entry.map_err(|e| Error::io(dir.clone(), std::io::Error::other(e.to_string())))?;
        let path = entry.path().to_path_buf();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with("-wal")
            || name.ends_with("-shm")
            || name.ends_with("-journal")
            || name.ends_with(".trajectory.json")
        {
            continue;
        }
        let Some(format) = Format::of(&path) else {
            out.ignored.push((path, "not a .db or .pb file"));
            continue;
        };
        if entry.path_is_symlink() || !entry.file_type().is_file() {
            out.ignored.push((path, "not a regular file"));
            continue;
        }
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !looks_like_uuid(&stem) {
            out.ignored
                .push((path, "file name is not a conversation UUID"));
            continue;
        }
        let slot = by_id.entry(stem.to_ascii_lowercase()).or_default();
        match format {
            Format::Sqlite => slot.0 = Some(path),
            Format::Protobuf => slot.1 = Some(path),
        }
    }
    for (id, (db, pb)) in by_id {
        let source = match (db, pb) {
            (Some(db), pb) => SourceRef {
                id,
                format: Format::Sqlite,
                path: db,
                shadowed: pb,
            },
            (None, Some(pb)) => SourceRef {
                id,
                format: Format::Protobuf,
                path: pb,
                shadowed: None,
            },
            (None, None) => continue,
        };
        out.sources.push(source);
    }
    Ok(out)
}

/// `root/conversations`, checked: a missing root, a root without
/// `conversations/` and a `conversations` that is not a folder are usage
/// errors (exit 2), each saying which it is.
pub fn conversations_dir(root: &Path) -> Result<PathBuf> {
    check_root(root)?;
    let dir = root.join("conversations");
    match std::fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => Ok(dir),
        Ok(_) => Err(RootError::ConversationsNotAFolder { dir }.into()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(RootError::NotAStoreRoot {
            root: root.to_path_buf(),
        }
        .into()),
        Err(e) => Err(Error::io(&dir, e)),
    }
}

/// Resolves a SOURCE argument: an existing `.db`/`.pb` path, or a conversation
/// id under `root/conversations` (the `.db` wins over the `.pb`).
pub fn resolve(arg: &str, root: &Path) -> Result<PathBuf> {
    let p = Path::new(arg);
    if Format::of(p).is_some() && std::fs::symlink_metadata(p).is_ok() {
        return Ok(p.to_path_buf());
    }
    if looks_like_uuid(arg) {
        let dir = conversations_dir(root)?;
        for ext in ["db", "pb"] {
            let cand = dir.join(format!("{arg}.{ext}"));
            if std::fs::symlink_metadata(&cand).is_ok() {
                return Ok(cand);
            }
        }
        return Err(RootError::NoConversation {
            id: arg.to_string(),
            dir,
        }
        .into());
    }
    Err(RootError::NotASourceOrId {
        arg: arg.to_string(),
    }
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_wins_and_implicit_and_junk_are_passed_over() {
        let root = tempfile::tempdir().unwrap();
        let conv = root.path().join("conversations");
        std::fs::create_dir_all(&conv).unwrap();
        std::fs::create_dir_all(root.path().join("implicit")).unwrap();
        let a = "0b6b2f0e-1c1d-4a7e-9a5e-0d6f3f1f2a01";
        let b = "1b6b2f0e-1c1d-4a7e-9a5e-0d6f3f1f2a02";
        for f in [
            format!("{a}.db"),
            format!("{a}.db-wal"),
            format!("{a}.pb"),
            format!("{b}.pb"),
            "notes.txt".into(),
            "x.db".into(),
        ] {
            std::fs::write(conv.join(f), b"x").unwrap();
        }
        std::fs::write(root.path().join("implicit").join(format!("{b}.pb")), b"x").unwrap();
        let d = discover(root.path()).unwrap();
        assert_eq!(d.sources.len(), 2);
        assert_eq!(d.sources[0].format, Format::Sqlite);
        assert!(d.sources[0].shadowed.is_some());
        assert_eq!(d.sources[1].format, Format::Protobuf);
        assert_eq!(d.ignored.len(), 2);
        assert_eq!(
            resolve(a, root.path()).unwrap(),
            conv.join(format!("{a}.db"))
        );
        assert!(resolve("nope", root.path()).is_err());
    }
}
