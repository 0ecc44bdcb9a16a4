//! Atomic output: temp file in the target directory, fsync, rename.
//!
//! Outputs never follow a symlink, never clobber a file unless asked, and are
//! never one of the protected paths: every file the command was given to read
//! (a source and its `-wal`/`-shm`, a manifest, a binary, a descriptor set, a
//! key). A protected path is compared with the output by identity (device and
//! inode, after resolving links) when both exist, and by canonical name
//! otherwise, so no spelling of the path, symlink or hard link to an input
//! lets `--force` replace it.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Why an output was not written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{path}: refusing to write: the path is a symbolic link")]
    Symlink { path: PathBuf },
    #[error("{path}: refusing to overwrite an existing file (use --force)")]
    Exists { path: PathBuf },
    #[error("{path}: refusing to write: {} an input of this command (a conversation source or its -wal/-shm, a manifest, a binary, a descriptor set or a key), never an output, even with --force", same_file_text(path, input))]
    Protected { path: PathBuf, input: PathBuf },
    #[error("{path}: not a regular file")]
    NotAFile { path: PathBuf },
    #[error("{path}: the folder {parent} does not exist")]
    NoParent { path: PathBuf, parent: PathBuf },
    #[error("{path}: {}", crate::util::io_text(source))]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// "it is" when the output names the input itself, else "it is <input>,".
fn same_file_text(path: &Path, input: &Path) -> String {
    if path == input {
        "it is".into()
    } else {
        format!("it is {} (the same file),", input.display())
    }
}

/// How to write an output file.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// Replace an existing regular file.
    pub force: bool,
    /// Unix permission bits for the new file (default 0644).
    pub mode: Option<u32>,
    /// The command's inputs: paths that must never be written, compared by
    /// device and inode when both exist, else after canonicalizing parents.
    pub protected: Vec<PathBuf>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
    move |source| WriteError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Canonical form of a path whose file may not exist yet.
fn canonical_target(path: &Path) -> Option<PathBuf> {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name()?;
    Some(fs::canonicalize(parent).ok()?.join(name))
}

/// Device and inode of what `path` names, links resolved.
#[cfg(unix)]
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn identity(path: &Path) -> Option<(u64, u64)> {
    let _ = path;
    None
}

/// The first of `inputs` that the output `path` (canonical `target`) would
/// replace: the same file by identity, or the same canonical name.
fn protected_input<'a>(path: &Path, target: &Path, inputs: &'a [PathBuf]) -> Option<&'a Path> {
    let out_id = identity(path);
    inputs.iter().map(PathBuf::as_path).find(|input| {
        let same_file = out_id.is_some() && identity(input) == out_id;
        same_file
            || canonical_target(input).as_deref() == Some(target)
            || fs::canonicalize(input).ok().as_deref() == Some(target)
    })
}

/// Refuses, before anything is written, when any of `outputs` would replace
/// one of `inputs` (see [`WriteOptions::protected`]): a command with several
/// outputs checks them all first, so a refused second output never leaves the
/// first one written.
pub fn check_outputs(outputs: &[&Path], inputs: &[PathBuf]) -> Result<(), WriteError> {
    for out in outputs {
        let target = canonical_target(out).unwrap_or_else(|| out.to_path_buf());
        if let Some(input) = protected_input(out, &target, inputs) {
            return Err(WriteError::Protected {
                path: out.to_path_buf(),
                input: input.to_path_buf(),
            });
        }
    }
    Ok(())
}

/// The temp file name prefix and suffix of [`write_file`].
const TEMP_PREFIX: &str = ".agy-audit-";
const TEMP_SUFFIX: &str = ".tmp";

/// Whether `name` is one of [`write_file`]'s temp file names
/// (`.agy-audit-<random letters and digits>.tmp`).
pub fn is_own_temp_name(name: &str) -> bool {
    name.strip_prefix(TEMP_PREFIX)
        .and_then(|r| r.strip_suffix(TEMP_SUFFIX))
        .is_some_and(|mid| !mid.is_empty() && mid.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Writes `bytes` to `path` atomically under `opts`: the file's bytes are
/// synced before the rename, and the folder after it, so that once this
/// returns the file survives a crash under its name.
pub fn write_file(path: &Path, bytes: &[u8], opts: &WriteOptions) -> Result<(), WriteError> {
    write_file_synced(path, bytes, opts, true)
}

/// [`write_file`] without the folder's sync: the file's bytes are synced
/// before the rename (so the name never points at missing data), but the
/// rename itself is durable only once [`sync_dir`] of its folder returns.
/// For many files of one folder committed together by a later record (the
/// sweep's session files, committed by its manifest): one folder sync for
/// all of them instead of one each.
pub fn write_file_unsynced_dir(
    path: &Path,
    bytes: &[u8],
    opts: &WriteOptions,
) -> Result<(), WriteError> {
    write_file_synced(path, bytes, opts, false)
}

/// Makes the renames done in `dir` so far durable (fsync of the folder),
/// where the platform can: exactly as [`write_file`] syncs its folder, a
/// folder that cannot be opened or synced as a file (Windows, some
/// filesystems) is not an error.
pub fn sync_dir(dir: &Path) {
    // a folder opened only to be synced, never read
    #[allow(clippy::disallowed_methods)]
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

fn write_file_synced(
    path: &Path,
    bytes: &[u8],
    opts: &WriteOptions,
    sync_parent: bool,
) -> Result<(), WriteError> {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(WriteError::NoParent {
            path: path.to_path_buf(),
            parent: parent.to_path_buf(),
        });
    }
    let target = canonical_target(path).ok_or_else(|| WriteError::NotAFile {
        path: path.to_path_buf(),
    })?;
    if let Some(input) = protected_input(path, &target, &opts.protected) {
        return Err(WriteError::Protected {
            path: path.to_path_buf(),
            input: input.to_path_buf(),
        });
    }
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(WriteError::Symlink {
                path: path.to_path_buf(),
            })
        }
        Ok(m) if !m.is_file() => {
            return Err(WriteError::NotAFile {
                path: path.to_path_buf(),
            })
        }
        Ok(_) if !opts.force => {
            return Err(WriteError::Exists {
                path: path.to_path_buf(),
            })
        }
        Ok(_) | Err(_) => {}
    }
    let dir = target.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(TEMP_SUFFIX)
        .tempfile_in(dir)
        .map_err(io(path))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = opts.mode.unwrap_or(0o644);
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(mode)).map_err(io(path))?;
    }
    tmp.write_all(bytes).map_err(io(path))?;
    tmp.as_file().sync_all().map_err(io(path))?;
    if opts.force {
        tmp.persist(&target).map_err(|e| WriteError::Io {
            path: path.to_path_buf(),
            source: e.error,
        })?;
    } else {
        tmp.persist_noclobber(&target).map_err(|e| {
            if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                WriteError::Exists {
                    path: path.to_path_buf(),
                }
            } else {
                WriteError::Io {
                    path: path.to_path_buf(),
                    source: e.error,
                }
            }
        })?;
    }
    if sync_parent {
        // a folder opened only to be synced, never read
        #[allow(clippy::disallowed_methods)]
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_existing_without_force_and_replaces_with_force() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        write_file(&p, b"one", &WriteOptions::default()).unwrap();
        let err = write_file(&p, b"two", &WriteOptions::default()).unwrap_err();
        assert!(matches!(err, WriteError::Exists { .. }));
        assert_eq!(fs::read(&p).unwrap(), b"one");
        let force = WriteOptions {
            force: true,
            ..Default::default()
        };
        write_file(&p, b"two", &force).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        let leftovers: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temp file left behind");
    }

    #[cfg(unix)]
    #[test]
    fn refuses_symlink_even_with_force() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        fs::write(&real, b"keep").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let force = WriteOptions {
            force: true,
            ..Default::default()
        };
        assert!(matches!(
            write_file(&link, b"x", &force).unwrap_err(),
            WriteError::Symlink { .. }
        ));
        assert_eq!(fs::read(&real).unwrap(), b"keep");
    }

    #[test]
    fn refuses_protected_path() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("a.db");
        fs::write(&src, b"db").unwrap();
        let opts = WriteOptions {
            force: true,
            protected: vec![src.clone()],
            ..Default::default()
        };
        assert!(matches!(
            write_file(&src, b"x", &opts).unwrap_err(),
            WriteError::Protected { .. }
        ));
        assert_eq!(fs::read(&src).unwrap(), b"db");
    }

    #[cfg(unix)]
    #[test]
    fn an_input_is_never_replaced_by_any_name_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("manifest.json");
        fs::write(&input, b"input").unwrap();
        let hard = dir.path().join("hard.json");
        fs::hard_link(&input, &hard).unwrap();
        let sub = dir.path().join("sub");
        fs::create_dir(&sub).unwrap();
        let dotted = sub.join("..").join("manifest.json");
        let linked_dir = dir.path().join("alias");
        std::os::unix::fs::symlink(dir.path(), &linked_dir).unwrap();
        let via_dir_link = linked_dir.join("manifest.json");
        let opts = WriteOptions {
            force: true,
            protected: vec![input.clone()],
            ..Default::default()
        };
        for out in [&input, &hard, &dotted, &via_dir_link] {
            assert!(
                matches!(
                    write_file(out, b"x", &opts).unwrap_err(),
                    WriteError::Protected { .. }
                ),
                "{}",
                out.display()
            );
            assert!(matches!(
                check_outputs(
                    &[dir.path().join("new").as_path(), out.as_path()],
                    &opts.protected
                )
                .unwrap_err(),
                WriteError::Protected { .. }
            ));
        }
        // The input given through a symlink protects the file it names.
        let input_link = dir.path().join("input-link");
        std::os::unix::fs::symlink(&input, &input_link).unwrap();
        let by_link = WriteOptions {
            force: true,
            protected: vec![input_link],
            ..Default::default()
        };
        assert!(matches!(
            write_file(&input, b"x", &by_link).unwrap_err(),
            WriteError::Protected { .. }
        ));
        assert_eq!(fs::read(&input).unwrap(), b"input");
        write_file(&dir.path().join("other.json"), b"x", &opts).unwrap();
    }
}
