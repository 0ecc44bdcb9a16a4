//! Store folders besides the roots a command uses (issue 48 item 4).
//!
//! Users of agy keep conversations at more places than the CLI's and the
//! IDE's default roots ([`crate::roots`]); peer tools read them
//! (public-format-facts §7.1). [`find`] looks, read-only, at exactly these
//! places, in this order:
//!
//! * `~/.gemini/antigravity-backup/` ([`FolderKind::Backup`]; ccusage
//!   PR #1631);
//! * `~/.gemini/antigravity-ide/` ([`FolderKind::IdeChannel`]; ccusage
//!   PR #1631, contextrot v2.1.0; §1.1: the newer IDE channel's live store,
//!   or a migration snapshot);
//! * `$ANTIGRAVITY_APP_DATA_DIR` ([`FolderKind::AppDataEnv`]; plannotator-tui
//!   v0.9.6);
//! * the desktop app's data folder ([`FolderKind::AppData`]; ccusage PR
//!   #1651): `~/.config/Antigravity/` on Linux (`$XDG_CONFIG_HOME/Antigravity`
//!   when that is set, the same base the IDE's logs are read from,
//!   [`crate::roots::ide_app_dir`]), `~/Library/Application
//!   Support/Antigravity/` on macOS, `%APPDATA%\Antigravity\` on Windows.
//!
//! `ANTIGRAVITY_DATA_DIR` and `AGY_HOME` (also in §7.1) are not consulted:
//! the issue names only the places above, and what those two variables
//! point at (a store root or a home) is not established; the stricter
//! reading looks at fewer places.
//!
//! A place is shown only when it holds a `conversations/` folder with at
//! least one source of agy's formats (a `<uuid>.db` or `<uuid>.pb` regular
//! file, as [`crate::discover::discover`] selects them); an empty
//! `conversations/` holds nothing to show (the stricter reading of "holds a
//! `conversations/` of agy's formats"). A place that is one of the roots in
//! use, or one found earlier, is not shown twice.
//!
//! Its surface comes from a marker in the folder itself, never from its
//! location: `cli.log` (the CLI daemon's announcement) or
//! `jetski_state.pbtxt` (the CLI's state file, §1.1) make it the CLI's,
//! `antigravity_state.pbtxt` the IDE's (`cli.log` first, as
//! [`crate::roots::detect_surface`] decides); without any it is an
//! "unknown surface".
//!
//! These folders are never roots of a command that writes (sync, watch):
//! [`crate::roots::select`] does not choose them, so id resolution is
//! unchanged and a backup never shadows a live root. The user may name any
//! of them with `--root` (`audit-sweep --root DIR`).

use crate::roots::{Root, Surface};
use std::path::{Path, PathBuf};

/// The environment variable naming the desktop app's data folder.
pub const APP_DATA_ENV: &str = "ANTIGRAVITY_APP_DATA_DIR";

/// The CLI's state file in its root (§1.1).
pub const CLI_STATE_FILE: &str = "jetski_state.pbtxt";

/// What a store folder besides the roots is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FolderKind {
    /// `~/.gemini/antigravity-backup/`.
    Backup,
    /// `~/.gemini/antigravity-ide/`.
    IdeChannel,
    /// `$ANTIGRAVITY_APP_DATA_DIR`.
    AppDataEnv,
    /// The platform's application-data folder for Antigravity.
    AppData,
}

impl FolderKind {
    /// The kind's id (`--json`).
    pub fn as_str(self) -> &'static str {
        match self {
            FolderKind::Backup => "backup",
            FolderKind::IdeChannel => "ide-channel",
            FolderKind::AppDataEnv => "app-data-env",
            FolderKind::AppData => "app-data",
        }
    }

    /// What the kind is, in words.
    pub fn describe(self) -> &'static str {
        match self {
            FolderKind::Backup => "a backup of agy's store (~/.gemini/antigravity-backup)",
            FolderKind::IdeChannel => {
                "the Antigravity IDE channel's folder (~/.gemini/antigravity-ide)"
            }
            FolderKind::AppDataEnv => "the desktop app's data folder ($ANTIGRAVITY_APP_DATA_DIR)",
            FolderKind::AppData => {
                "the desktop app's data folder (the platform's application data)"
            }
        }
    }
}

/// One store folder besides the roots in use.
#[derive(Debug, Clone)]
pub struct ExtraFolder {
    /// The folder (its `conversations/` inside).
    pub path: PathBuf,
    /// What it is.
    pub kind: FolderKind,
    /// Its surface when a marker in it says; `None`: unknown surface.
    pub surface: Option<Surface>,
}

impl ExtraFolder {
    /// `cli`, `ide` or `unknown surface`.
    pub fn surface_label(&self) -> &'static str {
        self.surface.map_or(UNKNOWN_SURFACE, Surface::as_str)
    }

    /// The folder as a [`Root`] for reading (never explicit: not the
    /// user's choice, so nothing writes to it). Its surface is the
    /// marker's, or `cli` for reading only when none says (the label stays
    /// [`ExtraFolder::surface_label`]).
    pub fn as_root(&self) -> Root {
        Root {
            path: self.path.clone(),
            surface: self.surface.unwrap_or(Surface::Cli),
            explicit: false,
        }
    }
}

/// The label of a folder no marker names.
pub const UNKNOWN_SURFACE: &str = "unknown surface";

/// A folder's surface from its markers only (see the module documentation).
pub fn marker_surface(dir: &Path) -> Option<Surface> {
    if dir.join("cli.log").is_file() {
        Some(Surface::Cli)
    } else if dir.join(crate::roots::IDE_STATE_FILE).is_file() {
        Some(Surface::Ide)
    } else if dir.join(CLI_STATE_FILE).is_file() {
        Some(Surface::Cli)
    } else {
        None
    }
}

fn env_dir(k: &str) -> Option<PathBuf> {
    std::env::var_os(k)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The places [`find`] looks at, in order, with their kinds.
pub fn candidates() -> Vec<(PathBuf, FolderKind)> {
    let mut out = Vec::new();
    if let Some(h) = env_dir("HOME") {
        out.push((h.join(".gemini/antigravity-backup"), FolderKind::Backup));
        out.push((h.join(".gemini/antigravity-ide"), FolderKind::IdeChannel));
    }
    if let Some(d) = env_dir(APP_DATA_ENV) {
        out.push((d, FolderKind::AppDataEnv));
    }
    if let Some(d) = crate::roots::ide_app_dir() {
        out.push((d, FolderKind::AppData));
    }
    out
}

fn same_path(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Whether `dir/conversations` holds at least one source of agy's formats.
fn holds_conversations(dir: &Path) -> bool {
    dir.join("conversations").is_dir()
        && crate::discover::discover(dir).is_ok_and(|d| !d.sources.is_empty())
}

/// The store folders besides `roots` (see the module documentation).
pub fn find(roots: &[Root]) -> Vec<ExtraFolder> {
    let mut out: Vec<ExtraFolder> = Vec::new();
    for (path, kind) in candidates() {
        if roots.iter().any(|r| same_path(&r.path, &path))
            || out.iter().any(|f| same_path(&f.path, &path))
            || !holds_conversations(&path)
        {
            continue;
        }
        out.push(ExtraFolder {
            surface: marker_surface(&path),
            path,
            kind,
        });
    }
    out
}

/// The live root holding conversation `id` too (the first of `roots`, in
/// order, as id resolution finds it): a backup's conversation is a copy of
/// that one.
pub fn copy_of<'a>(id: &str, roots: &'a [Root]) -> Option<&'a Root> {
    crate::roots::resolve_id(id, roots).map(|(r, _)| r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_name_the_surface_and_nothing_else_does() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(marker_surface(d.path()), None);
        std::fs::write(d.path().join(CLI_STATE_FILE), b"").unwrap();
        assert_eq!(marker_surface(d.path()), Some(Surface::Cli));
        std::fs::write(d.path().join(crate::roots::IDE_STATE_FILE), b"").unwrap();
        assert_eq!(marker_surface(d.path()), Some(Surface::Ide));
        std::fs::write(d.path().join("cli.log"), b"").unwrap();
        assert_eq!(marker_surface(d.path()), Some(Surface::Cli));
    }

    #[test]
    fn an_empty_conversations_folder_is_not_a_store() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("conversations")).unwrap();
        assert!(!holds_conversations(d.path()));
        std::fs::write(d.path().join("conversations/notes.db"), b"x").unwrap();
        assert!(!holds_conversations(d.path()));
        let id = "0b6b2f0e-1c1d-4a7e-9a5e-0d6f3f1f2a01";
        std::fs::write(d.path().join(format!("conversations/{id}.db")), b"x").unwrap();
        assert!(holds_conversations(d.path()));
    }
}
