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

/// The mode of a file private to its owner (a sweep folder's files).
pub const PRIVATE_MODE: u32 = 0o600;

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

/// A file a command names, with how its user names it: the option or
/// argument that gives it (`--out`, `--junit`, `MANIFEST`), or how it is
/// derived from one (`the chart beside --out`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub what: String,
    pub path: PathBuf,
}

impl Named {
    pub fn new(what: impl Into<String>, path: impl Into<PathBuf>) -> Named {
        Named {
            what: what.into(),
            path: path.into(),
        }
    }
}

impl std::fmt::Display for Named {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.what, self.path.display())
    }
}

/// Why a command's outputs cannot all be written: found by
/// [`check_collisions`] before any of them is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Collision {
    /// Two outputs of one command are one file: the second would replace
    /// the first (with `--force`) or be refused after it was written.
    #[error("{first} and {second} are the same file: each output of a command is a file of its own; name another for one of them")]
    Outputs { first: Named, second: Named },
    /// An output is one of the files the command reads.
    #[error("{output}: refusing to write: it is {input} (the same file), an input of this command, never an output, even with --force")]
    Input { output: Named, input: Named },
}

/// Whether `a` and `b` name one file: the same device and inode when both
/// exist (links followed: a symbolic or hard link to it included), else the
/// same canonical name (the parent folder canonicalized, the file name
/// kept), or one of them a link that resolves to the other's name; two
/// equal spellings are one file even where their folder does not exist.
pub fn same_file(a: &Path, b: &Path) -> bool {
    FileKey::of(a).same(&FileKey::of(b))
}

/// What [`same_file`] compares, computed once per path.
struct FileKey<'a> {
    raw: &'a Path,
    id: Option<(u64, u64)>,
    /// The parent canonicalized, the file name kept.
    canonical: Option<PathBuf>,
    /// The path with every link resolved, when it exists.
    resolved: Option<PathBuf>,
}

impl<'a> FileKey<'a> {
    fn of(raw: &'a Path) -> FileKey<'a> {
        FileKey {
            raw,
            id: identity(raw),
            canonical: canonical_target(raw),
            resolved: fs::canonicalize(raw).ok(),
        }
    }

    fn same(&self, o: &FileKey<'_>) -> bool {
        let both = |x: &Option<PathBuf>, y: &Option<PathBuf>| x.is_some() && x == y;
        self.raw == o.raw
            || (self.id.is_some() && self.id == o.id)
            || both(&self.canonical, &o.canonical)
            || both(&self.resolved, &o.canonical)
            || both(&o.resolved, &self.canonical)
    }
}

/// Refuses, before anything is written or printed, a set of outputs that
/// cannot all be written as given: two outputs that are one file (every
/// pair, derived outputs included: a chart or a JSON record beside `--out`),
/// or an output that is one of `inputs` ([`same_file`] for both). Outputs
/// are compared among themselves first, in the order given, then with the
/// inputs.
pub fn check_collisions(outputs: &[Named], inputs: &[Named]) -> Result<(), Collision> {
    // Each path's identity and names are read once, however many it meets
    // (a manifest's every source is an input).
    let outs: Vec<FileKey<'_>> = outputs.iter().map(|o| FileKey::of(&o.path)).collect();
    for (k, first) in outs.iter().enumerate() {
        if let Some(j) = (k + 1..outs.len()).find(|&j| first.same(&outs[j])) {
            return Err(Collision::Outputs {
                first: outputs[k].clone(),
                second: outputs[j].clone(),
            });
        }
    }
    for (i, input) in inputs.iter().enumerate() {
        let key = FileKey::of(&input.path);
        if let Some(k) = outs.iter().position(|o| o.same(&key)) {
            return Err(Collision::Input {
                output: outputs[k].clone(),
                input: inputs[i].clone(),
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
    write_file_synced(path, &bytes, opts, true)
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
    write_file_synced(path, &bytes, opts, false)
}

/// What a file is written from: bytes in memory, or anything that can write
/// its whole self into the temp file (a [`Staged`] file written to another
/// folder is copied file to file, never read into memory for it).
pub trait Contents {
    fn write_into(&self, out: &mut fs::File) -> std::io::Result<()>;
}

impl Contents for &[u8] {
    fn write_into(&self, out: &mut fs::File) -> std::io::Result<()> {
        out.write_all(self)
    }
}

/// [`write_file_unsynced_dir`] of any [`Contents`].
pub fn write_contents_unsynced_dir(
    path: &Path,
    contents: &dyn Contents,
    opts: &WriteOptions,
) -> Result<(), WriteError> {
    write_file_synced(path, contents, opts, false)
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

/// Refuses, before anything is written, an output that [`write_file`]
/// would refuse as it stands (no folder, a symbolic link, not a regular
/// file, an existing file without `force`): a command with several outputs
/// checks them all first, so a refused second output never leaves the
/// first one written. A file that appears between this check and its
/// write is still refused by the write.
pub fn preflight(outputs: &[&Path], force: bool) -> Result<(), WriteError> {
    let opts = WriteOptions {
        force,
        ..Default::default()
    };
    for out in outputs {
        check_target(out, &opts)?;
    }
    Ok(())
}

/// The checks [`write_file`] makes before it writes `path`; its canonical
/// target when they pass.
fn check_target(path: &Path, opts: &WriteOptions) -> Result<PathBuf, WriteError> {
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
    Ok(target)
}

fn write_file_synced(
    path: &Path,
    contents: &dyn Contents,
    opts: &WriteOptions,
    sync_parent: bool,
) -> Result<(), WriteError> {
    let target = check_target(path, opts)?;
    let dir = target.parent().unwrap_or(Path::new("."));
    let mut staged = Staged::in_folder(dir, opts.mode).map_err(io(path))?;
    contents.write_into(staged.file_mut()).map_err(io(path))?;
    staged.persist(path, &target, opts, sync_parent)
}

/// An output being written in its own folder, in one of this tool's temp
/// files (the name [`is_own_temp_name`] knows, the mode set when it is
/// made): a writer fills it as the bytes arrive, and [`Self::commit`] puts
/// it under its name (synced, then renamed, with every check
/// [`write_file`] makes) instead of copying it into another temp file.
/// Dropped uncommitted, it is removed; should the process die first, it is
/// one of the own temp files a sweep folder removes when it is next opened.
#[derive(Debug)]
pub struct Staged {
    /// Made in a canonical folder: it is only renamed to a name in that
    /// folder (the same filesystem, and nothing moves across).
    tmp: tempfile::NamedTempFile,
}

impl Staged {
    /// A new, empty staged file in `dir`, with `mode` (default 0644).
    pub fn in_folder(dir: &Path, mode: Option<u32>) -> std::io::Result<Staged> {
        let folder = fs::canonicalize(dir)?;
        let tmp = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .suffix(TEMP_SUFFIX)
            .tempfile_in(&folder)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = mode.unwrap_or(0o644);
            tmp.as_file()
                .set_permissions(fs::Permissions::from_mode(mode))?;
        }
        #[cfg(not(unix))]
        let _ = mode;
        Ok(Staged { tmp })
    }

    /// The file, to write to or read back.
    pub fn file(&self) -> &fs::File {
        self.tmp.as_file()
    }

    /// The file, to write to.
    pub fn file_mut(&mut self) -> &mut fs::File {
        self.tmp.as_file_mut()
    }

    /// Puts the file under `path` (synced, then renamed; the folder is
    /// synced later, as [`write_file_unsynced_dir`] leaves it), after the
    /// checks [`write_file`] makes under `opts` and one more: the file
    /// holds exactly `len` bytes (what its writer wrote; a file that
    /// changed size since is refused, naming `path`). A `path` in another
    /// folder than the staged file's gets a copy of it, written as any
    /// output is.
    pub fn commit_unsynced_dir(
        self,
        path: &Path,
        len: u64,
        opts: &WriteOptions,
    ) -> Result<(), WriteError> {
        let size = self.file().metadata().map_err(io(path))?.len();
        if size != len {
            return Err(WriteError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("its staged file holds {size} bytes, not the {len} written"),
                ),
            });
        }
        let target = check_target(path, opts)?;
        if target.parent() != self.folder() {
            return write_contents_unsynced_dir(path, &self, opts);
        }
        self.persist(path, &target, opts, false)
    }

    /// The canonical folder it was made in.
    fn folder(&self) -> Option<&Path> {
        self.tmp.path().parent()
    }

    fn persist(
        self,
        path: &Path,
        target: &Path,
        opts: &WriteOptions,
        sync_parent: bool,
    ) -> Result<(), WriteError> {
        self.file().sync_all().map_err(io(path))?;
        let folder = self.folder().map(Path::to_path_buf);
        let failed = |e: tempfile::PersistError| {
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
        };
        if opts.force {
            self.tmp.persist(target).map_err(failed)?;
        } else {
            self.tmp.persist_noclobber(target).map_err(failed)?;
        }
        if let Some(folder) = folder.filter(|_| sync_parent) {
            sync_dir(&folder);
        }
        Ok(())
    }
}

/// What an output file is made from: contents written into a new temp
/// file, or a [`Staged`] file that already holds them (with the length its
/// writer wrote), renamed into place.
pub enum Body<'a> {
    Write(&'a dyn Contents),
    Staged(Staged, u64),
}

impl Body<'_> {
    /// [`write_contents_unsynced_dir`] of the contents, or
    /// [`Staged::commit_unsynced_dir`] of the staged file.
    pub fn commit_unsynced_dir(self, path: &Path, opts: &WriteOptions) -> Result<(), WriteError> {
        match self {
            Body::Write(contents) => write_contents_unsynced_dir(path, contents, opts),
            Body::Staged(staged, len) => staged.commit_unsynced_dir(path, len, opts),
        }
    }
}

/// A staged file copied whole (from its start, whatever was read of it).
impl Contents for Staged {
    fn write_into(&self, out: &mut fs::File) -> std::io::Result<()> {
        use std::io::Seek;
        let mut file = self.file();
        file.rewind()?;
        std::io::copy(&mut file, out)?;
        Ok(())
    }
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

    /// The names of the tool's own temp files in `dir`.
    fn own_temp_files(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| is_own_temp_name(n))
            .collect()
    }

    fn staged(dir: &Path, bytes: &[u8]) -> Staged {
        let mut s = Staged::in_folder(dir, Some(0o600)).unwrap();
        s.file_mut().write_all(bytes).unwrap();
        s
    }

    #[cfg(unix)]
    #[test]
    fn a_staged_file_is_renamed_into_place_with_every_check_of_a_write() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let force = WriteOptions {
            force: true,
            ..Default::default()
        };
        // Renamed: the same file (inode), its mode, nothing left behind.
        let s = staged(dir.path(), b"answer");
        assert_eq!(own_temp_files(dir.path()).len(), 1);
        let inode = s.file().metadata().unwrap().ino();
        let out = dir.path().join("out.json");
        s.commit_unsynced_dir(&out, 6, &force).unwrap();
        let m = fs::metadata(&out).unwrap();
        assert_eq!((m.ino(), m.permissions().mode() & 0o777), (inode, 0o600));
        assert_eq!(fs::read(&out).unwrap(), b"answer");
        assert!(own_temp_files(dir.path()).is_empty());
        // A file of another size than its writer wrote is refused, and so
        // is every output a write refuses; the staged file goes, the
        // output stays as it was.
        let real = dir.path().join("real");
        fs::write(&real, b"keep").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let protected = WriteOptions {
            force: true,
            protected: vec![real.clone()],
            ..Default::default()
        };
        for (path, len, opts) in [
            (&out, 5, &force),
            (&out, 7, &force),
            (&link, 6, &force),
            (&real, 6, &protected),
            (&out, 6, &WriteOptions::default()),
        ] {
            let e = staged(dir.path(), b"ANSWER")
                .commit_unsynced_dir(path, len, opts)
                .unwrap_err();
            assert!(
                matches!(
                    (len, &e),
                    (5 | 7, WriteError::Io { .. })
                        | (6, WriteError::Symlink { .. })
                        | (6, WriteError::Protected { .. })
                        | (6, WriteError::Exists { .. })
                ),
                "{path:?} {len}: {e}"
            );
            assert!(e.to_string().contains(&path.display().to_string()), "{e}");
            assert!(own_temp_files(dir.path()).is_empty());
        }
        assert_eq!(fs::read(&out).unwrap(), b"answer");
        assert_eq!(fs::read(&real).unwrap(), b"keep");
        // An output in another folder gets a copy, written as any output.
        let other = tempfile::tempdir().unwrap();
        let there = other.path().join("there.json");
        let s = staged(dir.path(), b"copied");
        s.commit_unsynced_dir(&there, 6, &force).unwrap();
        assert_eq!(fs::read(&there).unwrap(), b"copied");
        assert_ne!(fs::metadata(&there).unwrap().ino(), inode);
        assert!(own_temp_files(dir.path()).is_empty());
        assert!(own_temp_files(other.path()).is_empty());
    }

    fn named(what: &str, p: &Path) -> Named {
        Named::new(what, p)
    }

    #[cfg(unix)]
    #[test]
    fn outputs_that_are_one_file_by_any_name_collide() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let a = d.join("a.md");
        let sub = d.join("sub");
        fs::create_dir(&sub).unwrap();
        let alias = d.join("alias");
        std::os::unix::fs::symlink(d, &alias).unwrap();
        // Not yet existing: the same name however spelled.
        for other in [a.clone(), sub.join("..").join("a.md"), alias.join("a.md")] {
            let err =
                check_collisions(&[named("--out", &a), named("--junit", &other)], &[]).unwrap_err();
            assert_eq!(
                err,
                Collision::Outputs {
                    first: named("--out", &a),
                    second: named("--junit", &other)
                },
                "{}",
                other.display()
            );
        }
        // Equal spellings under a folder that does not exist.
        let ghost = d.join("nowhere").join("x.md");
        assert!(same_file(&ghost, &ghost));
        // Existing: a hard link or a symbolic link to it.
        fs::write(&a, b"x").unwrap();
        let hard = d.join("hard.md");
        fs::hard_link(&a, &hard).unwrap();
        let soft = d.join("soft.md");
        std::os::unix::fs::symlink(&a, &soft).unwrap();
        for other in [&hard, &soft] {
            assert!(matches!(
                check_collisions(&[named("--out", other), named("--junit", &a)], &[]),
                Err(Collision::Outputs { .. })
            ));
        }
        // A dangling link is not yet the file it names (the preflight
        // refuses it as a link).
        let fresh = d.join("fresh.md");
        let dangling = d.join("dangling.md");
        std::os::unix::fs::symlink(&fresh, &dangling).unwrap();
        assert!(!same_file(&dangling, &fresh));
        assert!(matches!(
            preflight(&[fresh.as_path(), dangling.as_path()], true),
            Err(WriteError::Symlink { .. })
        ));
        // Distinct files: no collision, in either list.
        let b = d.join("b.md");
        assert_eq!(
            check_collisions(
                &[named("--out", &a), named("--junit", &b)],
                &[named("OLD", &fresh)]
            ),
            Ok(())
        );
        // Outputs among themselves first, then against the inputs.
        let err = check_collisions(
            &[named("--out", &b), named("--junit", &a)],
            &[named("NEW", &hard)],
        )
        .unwrap_err();
        assert_eq!(
            err,
            Collision::Input {
                output: named("--junit", &a),
                input: named("NEW", &hard)
            }
        );
        let text = err.to_string();
        assert!(
            text.contains("--junit") && text.contains("NEW") && text.contains("an input"),
            "{text}"
        );
        let text = check_collisions(&[named("--out", &a), named("--junit", &a)], &[])
            .unwrap_err()
            .to_string();
        assert!(
            text.starts_with(&format!(
                "--out {} and --junit {} are the same file",
                a.display(),
                a.display()
            )),
            "{text}"
        );
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
