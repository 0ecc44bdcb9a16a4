//! The watcher's state file, so that `doctor` can say whether a watcher is
//! running for a root (public-format-facts §5.4: `watch: running | unknown`).
//!
//! One small JSON file per watched root, under the user's state folder,
//! never under a store root or its `conversations/`:
//! `$XDG_STATE_HOME/agy-audit/watch-<first 16 hex digits of SHA-256 of the
//! root's canonical path>.json` (default `$XDG_STATE_HOME` is
//! `~/.local/state`), mode 0600, written atomically. It holds the watcher's
//! pid, the root, when it started, its last heartbeat (written at most every
//! [`HEARTBEAT_EVERY`] while it polls) and, after a clean exit, when it
//! stopped. A watcher is *running* when the file names no stop, its
//! heartbeat is recent (within three poll intervals plus a minute) and, on
//! Linux, its pid is alive; anything else (no file, a stale or unreadable
//! one) is *unknown*: never "not running", since a watcher without a state
//! folder may still run.
//!
//! "Never under a store root" is checked, not assumed ([`check_outside`]):
//! a `$XDG_STATE_HOME` (or `HOME`) that puts the state folder inside a
//! watched root, or makes it the root itself, refuses the watch before it
//! writes anything. The README promises no fallback place, so there is
//! none. A root inside the state folder is fine.

use crate::util::atomic::{write_file, WriteError, WriteOptions};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How often the heartbeat is written at most.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(5);

/// The state file's contents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchState {
    pub pid: u32,
    pub root: String,
    pub started: String,
    pub heartbeat: String,
    /// The heartbeat in Unix seconds (what `doctor` compares).
    pub heartbeat_unix: u64,
    pub interval_ms: u64,
    /// Polls done so far.
    pub polls: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// What `doctor` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Running { pid: u32, heartbeat: String },
    Unknown,
}

/// The state folder: `$XDG_STATE_HOME/agy-audit`, else
/// `$HOME/.local/state/agy-audit`; `None` with neither set.
pub fn state_dir() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = env("XDG_STATE_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| env("HOME").map(|h| h.join(".local").join("state")))?;
    Some(base.join("agy-audit"))
}

/// The state folder would lie inside a watched store root (or be it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the state folder {} (from $XDG_STATE_HOME, else HOME/.local/state) is inside the store root {}: \
     watch never writes its state under a store root; point XDG_STATE_HOME outside every root",
    state.display(),
    root.display()
)]
pub struct StateUnderRoot {
    /// The state folder, resolved as it would be written.
    pub state: PathBuf,
    /// The root, resolved.
    pub root: PathBuf,
}

/// Refuses a state folder `dir` inside (or equal to) any of `roots`, both
/// resolved as the file system would resolve them when the state is
/// written: symbolic links in what exists followed, and the folders still
/// to be created (with any `.` and `..` among them) applied to that
/// ([`resolved`]). Stricter than comparing the text of the paths: a link
/// into a root, or `nonexistent/../root`, is caught.
pub fn check_outside(dir: &Path, roots: &[PathBuf]) -> Result<(), StateUnderRoot> {
    let state = resolved(dir);
    for root in roots {
        let root = resolved(root);
        if state.starts_with(&root) {
            return Err(StateUnderRoot { state, root });
        }
    }
    Ok(())
}

/// `p` made absolute, with its longest existing prefix canonicalized (links
/// followed) and the rest applied component by component: `.` dropped, `..`
/// the parent of what precedes it (those folders do not exist yet, so no
/// link can redirect them). What cannot be resolved at all stays as given.
fn resolved(p: &Path) -> PathBuf {
    use std::path::Component;
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    for base in abs.ancestors() {
        let Ok(mut out) = std::fs::canonicalize(base) else {
            continue;
        };
        let rest = abs.strip_prefix(base).unwrap_or(Path::new(""));
        for c in rest.components() {
            match c {
                Component::Normal(n) => out.push(n),
                Component::ParentDir => {
                    out.pop();
                }
                Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            }
        }
        return out;
    }
    abs
}

/// The state file of `root` in `dir`.
pub fn state_file(dir: &Path, root: &Path) -> PathBuf {
    let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let digest = crate::util::sha256_tagged(canonical.to_string_lossy().as_bytes());
    let hex = digest.strip_prefix("sha256:").unwrap_or(&digest);
    dir.join(format!("watch-{}.json", &hex[..16.min(hex.len())]))
}

/// Unix seconds now.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Writes `state` for its root (creating the folder, mode 0700).
pub fn write(dir: &Path, state: &WatchState) -> Result<(), WriteError> {
    let io = |source| WriteError::Io {
        path: dir.to_path_buf(),
        source,
    };
    if !dir.is_dir() {
        let mut b = std::fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            b.mode(0o700);
        }
        b.create(dir).map_err(io)?;
    }
    let mut bytes = serde_json::to_vec_pretty(state).unwrap_or_default();
    bytes.push(b'\n');
    write_file(
        &state_file(dir, Path::new(&state.root)),
        &bytes,
        &WriteOptions {
            force: true,
            mode: Some(0o600),
            protected: Vec::new(),
        },
    )
}

/// Whether a watcher runs for `root` (see the module documentation).
pub fn status(root: &Path) -> Status {
    let Some(dir) = state_dir() else {
        return Status::Unknown;
    };
    let path = state_file(&dir, root);
    let Some(state) =
        crate::util::bounded::read_regular(&path, crate::util::bounded::InputKind::Record)
            .ok()
            .and_then(|b| serde_json::from_slice::<WatchState>(&b).ok())
    else {
        return Status::Unknown;
    };
    judge(&state, unix_now(), pid_alive)
}

/// [`status`] of a read state at `now`, with `alive` telling whether a pid runs.
pub fn judge(state: &WatchState, now: u64, alive: impl Fn(u32) -> Option<bool>) -> Status {
    let window = 3 * state.interval_ms / 1000 + 60 + HEARTBEAT_EVERY.as_secs();
    let recent = now.saturating_sub(state.heartbeat_unix) <= window;
    if state.stopped.is_none() && recent && alive(state.pid) != Some(false) {
        Status::Running {
            pid: state.pid,
            heartbeat: state.heartbeat.clone(),
        }
    } else {
        Status::Unknown
    }
}

/// Whether `pid` is alive, where the platform says (Linux: `/proc/<pid>`).
fn pid_alive(pid: u32) -> Option<bool> {
    let proc = Path::new("/proc");
    proc.join("self")
        .exists()
        .then(|| proc.join(pid.to_string()).exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_needs_a_recent_heartbeat_a_live_pid_and_no_stop() {
        let s = WatchState {
            pid: 42,
            root: "/r".into(),
            started: "t".into(),
            heartbeat: "t".into(),
            heartbeat_unix: 1000,
            interval_ms: 30_000,
            polls: 3,
            stopped: None,
        };
        assert!(matches!(
            judge(&s, 1010, |_| Some(true)),
            Status::Running { pid: 42, .. }
        ));
        assert!(matches!(judge(&s, 1010, |_| None), Status::Running { .. }));
        assert_eq!(judge(&s, 1010, |_| Some(false)), Status::Unknown);
        assert_eq!(
            judge(&s, 1000 + 90 + 60 + 6, |_| Some(true)),
            Status::Unknown
        );
        let stopped = WatchState {
            stopped: Some("t".into()),
            ..s.clone()
        };
        assert_eq!(judge(&stopped, 1010, |_| Some(true)), Status::Unknown);
        let d = tempfile::tempdir().unwrap();
        let r = WatchState {
            root: d.path().display().to_string(),
            ..s
        };
        write(&d.path().join("state"), &r).unwrap();
        let f = state_file(&d.path().join("state"), d.path());
        assert!(f
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("watch-"));
        let back: WatchState = serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn the_state_folder_is_refused_inside_a_root_and_allowed_around_one() {
        let d = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(d.path()).unwrap();
        let root = base.join("store");
        std::fs::create_dir_all(root.join("conversations")).unwrap();
        let roots = [root.clone()];
        // inside, or the root itself
        for inside in [
            root.join("agy-audit"),
            root.join("conversations/x/agy-audit"),
            root.clone(),
            base.join("nowhere/../store/agy-audit"),
            root.join("./a/../agy-audit"),
        ] {
            let e = check_outside(&inside, &roots).unwrap_err();
            assert_eq!(e.root, root, "{}", inside.display());
            assert!(e.state.starts_with(&root), "{}", e.state.display());
            let text = e.to_string();
            assert!(text.contains(&root.display().to_string()), "{text}");
        }
        // through a link to the root
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&root, base.join("link")).unwrap();
            let e = check_outside(&base.join("link/agy-audit"), &roots).unwrap_err();
            assert_eq!(e.state, root.join("agy-audit"));
            // the root named through the link is the same root
            let e = check_outside(&root.join("agy-audit"), &[base.join("link")]).unwrap_err();
            assert_eq!(e.root, root);
        }
        // beside it, a sibling whose name extends the root's, or around it
        for outside in [
            base.join("state/agy-audit"),
            base.join("store-state/agy-audit"),
            base.join("store/../elsewhere"),
            base.clone(),
        ] {
            assert_eq!(
                check_outside(&outside, &roots),
                Ok(()),
                "{}",
                outside.display()
            );
        }
        // a root inside the state folder is fine
        let state = base.join("st/agy-audit");
        let inner = state.join("store");
        std::fs::create_dir_all(&inner).unwrap();
        assert_eq!(check_outside(&state, &[inner]), Ok(()));
    }
}
