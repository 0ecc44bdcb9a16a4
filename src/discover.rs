//! Stage 1: discover conversation sources under a store root.
//!
//! Sources are `conversations/<uuid>.db` (SQLite, with its `-wal`) and legacy
//! `conversations/<uuid>.pb`. When both exist for one id, SQLite wins and the
//! `.pb` is recorded as shadowed. `implicit/` (implicit trajectories, not
//! conversations) is never selected. Links are not followed.

use crate::error::{Error, Result};
use crate::source::{looks_like_uuid, Format};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The environment variable naming the default store root.
pub const ROOT_ENV: &str = "ANTIGRAVITY_CLI_ROOT";

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

/// `$ANTIGRAVITY_CLI_ROOT`, else `~/.gemini/antigravity-cli`.
pub fn default_root() -> PathBuf {
    if let Some(r) = std::env::var_os(ROOT_ENV).filter(|r| !r.is_empty()) {
        return PathBuf::from(r);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    home.join(".gemini").join("antigravity-cli")
}

/// Lists the sources under `root/conversations`.
pub fn discover(root: &Path) -> Result<Discovery> {
    let dir = root.join("conversations");
    let meta = match std::fs::symlink_metadata(&dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::Usage(format!(
                "{}: not an agy store root (no conversations/ folder); pass --root with the folder that holds it",
                root.display()
            )))
        }
        Err(e) => return Err(Error::io(&dir, e)),
    };
    if !meta.is_dir() {
        return Err(Error::Usage(format!("{}: not a directory", dir.display())));
    }
    let mut by_id: BTreeMap<String, (Option<PathBuf>, Option<PathBuf>)> = BTreeMap::new();
    let mut out = Discovery::default();
    for entry in walkdir::WalkDir::new(&dir)
        .min_depth(1)
        .max_depth(1)
        .follow_links(false)
        .sort_by_file_name()
    {
        let entry = entry.map_err(|e| Error::Io {
            path: dir.clone(),
            source: std::io::Error::other(e.to_string()),
        })?;
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

/// Resolves a SOURCE argument: an existing `.db`/`.pb` path, or a conversation
/// id under `root/conversations` (the `.db` wins over the `.pb`).
pub fn resolve(arg: &str, root: &Path) -> Result<PathBuf> {
    let p = Path::new(arg);
    if Format::of(p).is_some() && std::fs::symlink_metadata(p).is_ok() {
        return Ok(p.to_path_buf());
    }
    if looks_like_uuid(arg) {
        let dir = root.join("conversations");
        for ext in ["db", "pb"] {
            let cand = dir.join(format!("{arg}.{ext}"));
            if std::fs::symlink_metadata(&cand).is_ok() {
                return Ok(cand);
            }
        }
        return Err(Error::Usage(format!(
            "no conversation {arg} under {} (looked for {arg}.db and {arg}.pb)",
            dir.display()
        )));
    }
    Err(Error::Usage(format!(
        "{arg}: neither an existing .db/.pb file nor a conversation id"
    )))
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
