//! Which store roots a command works on, and what each one is.
//!
//! agy keeps two stores: the CLI's (`~/.gemini/antigravity-cli`, whose
//! daemon announces itself in `<root>/cli.log`) and the IDE's
//! (`~/.gemini/antigravity`, whose language server logs its port and CSRF
//! token in the IDE's own log folder). [`select`] turns the `--root` flags
//! into the ordered list of roots to use: explicit roots are hard
//! requirements (a missing one is a usage error); without any, every default
//! root that exists is used and a missing one is only reported;
//! `$ANTIGRAVITY_CLI_ROOT` pins a single root (treated as explicit).
//!
//! The surface of a root ([`detect_surface`]): a `cli.log` inside it makes
//! it the CLI's (agy writes it on every run, the IDE never does); otherwise
//! `antigravity_state.pbtxt` (the IDE's state file) or the default IDE
//! location make it the IDE's; anything else is taken as a CLI root.

use crate::error::{Error, Result};
use error::RootError;
use std::path::{Path, PathBuf};

pub mod error;

/// The CLI store, relative to the home folder.
pub use crate::well_known::CLI_SUBPATH;
/// The IDE store, relative to the home folder.
pub use crate::well_known::IDE_SUBPATH;
/// The IDE's state file in its root.
pub const IDE_STATE_FILE: &str = "antigravity_state.pbtxt";

/// Which Antigravity product owns a root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Surface {
    /// The `agy` CLI.
    Cli,
    /// The Antigravity IDE.
    Ide,
}

impl Surface {
    /// `cli` or `ide`.
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Cli => "cli",
            Surface::Ide => "ide",
        }
    }
}

/// One root a command uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// The folder (as given or as derived from `HOME`).
    pub path: PathBuf,
    /// Its surface.
    pub surface: Surface,
    /// Named by `--root` or `$ANTIGRAVITY_CLI_ROOT` (else a default).
    pub explicit: bool,
}

/// The roots [`select`] chose, and the default roots it passed over.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// The roots to use, in order (explicit order, else CLI then IDE).
    pub roots: Vec<Root>,
    /// Default roots that do not exist (reported, not fatal).
    pub missing: Vec<PathBuf>,
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The surface of a root (see the module documentation).
pub fn detect_surface(root: &Path) -> Surface {
    if root.join("cli.log").is_file() {
        return Surface::Cli;
    }
    if root.join(IDE_STATE_FILE).is_file() {
        return Surface::Ide;
    }
    match home() {
        Some(h) if same_path(root, &h.join(IDE_SUBPATH)) => Surface::Ide,
        _ => Surface::Cli,
    }
}

fn same_path(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The roots to use for `explicit` (the `--root` flags, in order).
///
/// Explicit roots must each be a folder ([`crate::discover::check_root`]);
/// without any, `$ANTIGRAVITY_CLI_ROOT` pins one (checked the same way),
/// else the CLI and IDE roots under `HOME` that exist are used (none
/// existing, or `HOME` unset, is a usage error naming `--root`).
pub fn select(explicit: &[PathBuf]) -> Result<Selection> {
    let mut sel = Selection::default();
    let pinned = std::env::var_os(crate::discover::ROOT_ENV)
        .filter(|r| !r.is_empty())
        .map(PathBuf::from);
    let given: Vec<PathBuf> = if explicit.is_empty() {
        pinned.into_iter().collect()
    } else {
        explicit.to_vec()
    };
    if !given.is_empty() {
        for p in given {
            crate::discover::check_root(&p)?;
            if sel.roots.iter().any(|r| same_path(&r.path, &p)) {
                continue;
            }
            sel.roots.push(Root {
                surface: detect_surface(&p),
                path: p,
                explicit: true,
            });
        }
        return Ok(sel);
    }
    let Some(h) = home() else {
        return Err(Error::Root(RootError::NoHomeForRoots));
    };
    for (sub, surface) in [(CLI_SUBPATH, Surface::Cli), (IDE_SUBPATH, Surface::Ide)] {
        let p = h.join(sub);
        if p.is_dir() {
            sel.roots.push(Root {
                path: p,
                surface,
                explicit: false,
            });
        } else {
            sel.missing.push(p);
        }
    }
    if sel.roots.is_empty() {
        return Err(Error::Root(RootError::NoDefaultRoot { home: h }));
    }
    Ok(sel)
}

/// Resolves a conversation id across `roots` in order: the first root whose
/// `conversations/` holds `<id>.db` or `<id>.pb` (SQLite wins within a
/// root). `None` when no root holds it.
pub fn resolve_id<'a>(id: &str, roots: &'a [Root]) -> Option<(&'a Root, PathBuf)> {
    roots.iter().find_map(|r| {
        let dir = r.path.join("conversations");
        ["db", "pb"].iter().find_map(|ext| {
            let p = dir.join(format!("{id}.{ext}"));
            std::fs::symlink_metadata(&p)
                .is_ok()
                .then(|| (r, p.clone()))
        })
    })
}

/// Where a command's SOURCE argument is ([`locate`]).
#[derive(Debug, Clone)]
pub struct Located {
    /// The root the source belongs to: for a file under a
    /// `conversations/` folder, that folder's parent; for an id, the first
    /// root that holds it; else the first root in use, if any.
    pub root: Option<Root>,
    /// The source to read ("SQLite wins" applied).
    pub path: PathBuf,
    /// The `.pb` named explicitly that its sibling `.db` shadows.
    pub shadowed: Option<PathBuf>,
    /// Default roots that do not exist (to report, not fatal).
    pub missing: Vec<PathBuf>,
}

/// Where `source` (an existing `.db`/`.pb` path, or a conversation id) is,
/// given the `--root` flags `explicit`: a path names its own root (the
/// folder holding its `conversations/`); an id is resolved across the roots
/// [`select`] chooses, in order, and no root holding it is a usage error
/// naming every root searched. "SQLite wins" holds for an explicit `X.pb`
/// too: when `X.db` exists, `X.db` is the source.
pub fn locate(source: &str, explicit: &[PathBuf]) -> Result<Located> {
    let p = Path::new(source);
    let is_file = crate::source::Format::of(p).is_some() && std::fs::symlink_metadata(p).is_ok();
    let (root, path, missing) = if is_file {
        let own = p
            .parent()
            .filter(|d| d.file_name().is_some_and(|n| n == "conversations"))
            .and_then(Path::parent)
            .filter(|r| !r.as_os_str().is_empty());
        match own {
            Some(r) => {
                if !explicit.is_empty() {
                    // the --root flags are still checked: a wrong one is a
                    // usage error, whatever the path
                    select(explicit)?;
                }
                (
                    Some(Root {
                        surface: detect_surface(r),
                        path: r.to_path_buf(),
                        explicit: true,
                    }),
                    p.to_path_buf(),
                    Vec::new(),
                )
            }
            None if explicit.is_empty() => {
                let sel = select(&[]).unwrap_or_default();
                (sel.roots.into_iter().next(), p.to_path_buf(), sel.missing)
            }
            None => {
                let sel = select(explicit)?;
                (sel.roots.into_iter().next(), p.to_path_buf(), sel.missing)
            }
        }
    } else if crate::source::looks_like_uuid(source.trim()) {
        let id = source.trim();
        let sel = select(explicit)?;
        for r in sel.roots.iter().filter(|r| r.explicit) {
            // a root the user named must be a store: one without
            // conversations/ is a usage error saying so
            crate::discover::conversations_dir(&r.path)?;
        }
        match resolve_id(id, &sel.roots) {
            Some((r, p)) => (Some(r.clone()), p, sel.missing),
            None => {
                let roots: Vec<String> = sel
                    .roots
                    .iter()
                    .map(|r| format!("{} ({})", r.path.display(), r.surface.as_str()))
                    .collect();
                return Err(Error::Root(RootError::NoConversationInRoots {
                    id: id.to_string(),
                    roots: roots.join(", "),
                }));
            }
        }
    } else {
        return Err(Error::Root(RootError::NotASourceOrId {
            arg: source.to_string(),
        }));
    };
    let winner = sqlite_wins(&path);
    let shadowed = (winner != path).then_some(path);
    Ok(Located {
        root,
        path: winner,
        shadowed,
        missing,
    })
}

/// "SQLite wins" for an explicit path: for `X.pb` whose sibling `X.db`
/// exists, the `.db`; any other path unchanged.
pub fn sqlite_wins(path: &Path) -> PathBuf {
    if path.extension().and_then(|e| e.to_str()) == Some("pb") {
        let db = path.with_extension("db");
        if std::fs::symlink_metadata(&db).is_ok() {
            return db;
        }
    }
    path.to_path_buf()
}

/// The Antigravity IDE's application folder: on Linux
/// `$XDG_CONFIG_HOME/Antigravity` (default `~/.config`), on macOS
/// `~/Library/Application Support/Antigravity`, on Windows
/// `%APPDATA%\Antigravity` (its `logs` hold the daemon's port and token).
pub fn ide_app_dir() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = if cfg!(windows) {
        env("APPDATA")?
    } else if cfg!(target_os = "macos") {
        env("HOME")?.join("Library").join("Application Support")
    } else {
        env("XDG_CONFIG_HOME").or_else(|| env("HOME").map(|h| h.join(".config")))?
    };
    Some(base.join("Antigravity"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surface_and_sqlite_wins() {
        let d = tempfile::tempdir().unwrap();
        let cli = d.path().join("c");
        let ide = d.path().join("i");
        std::fs::create_dir_all(cli.join("conversations")).unwrap();
        std::fs::create_dir_all(ide.join("conversations")).unwrap();
        std::fs::write(cli.join("cli.log"), b"").unwrap();
        std::fs::write(ide.join(IDE_STATE_FILE), b"").unwrap();
        assert_eq!(detect_surface(&cli), Surface::Cli);
        assert_eq!(detect_surface(&ide), Surface::Ide);
        let id = "0b6b2f0e-1c1d-4a7e-9a5e-0d6f3f1f2a01";
        let pb = ide.join("conversations").join(format!("{id}.pb"));
        std::fs::write(&pb, b"x").unwrap();
        assert_eq!(sqlite_wins(&pb), pb);
        std::fs::write(pb.with_extension("db"), b"x").unwrap();
        assert_eq!(sqlite_wins(&pb), pb.with_extension("db"));
        let roots = select(&[cli.clone(), ide.clone()]).unwrap().roots;
        let (r, p) = resolve_id(id, &roots).unwrap();
        assert_eq!(r.path, ide);
        assert_eq!(p, pb.with_extension("db"));
        assert!(select(&[d.path().join("missing")]).is_err());
    }
}
