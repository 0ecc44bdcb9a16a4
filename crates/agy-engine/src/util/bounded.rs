//! Reading an input file boundedly: a regular file only, at most a cap.
//!
//! Every record the tool reads back (a manifest, agy's logs) is hostile
//! input like any other: a FIFO would block the command forever, a device or a
//! multi-gigabyte file would exhaust memory. So a file is opened without
//! blocking, checked to be a regular file on the open descriptor (no race
//! between a look and the open), and read up to its kind's cap; one byte
//! more is refused with the cap named.

use std::io::Read;
use std::path::{Path, PathBuf};

/// What kind of input a file is, for its cap and its errors' wording.
///
/// The caps (issue 45 item 1), each the most bytes the tool holds in memory
/// for one such file:
///
/// | kind | cap | beyond it |
/// |---|---|---|
/// | manifest, shard manifest | 1 GiB | refused |
/// | log (`cli.log`, `main.log`, `language_server.log`) | last 16 MiB | older lines skipped |
/// | shape listing | 256 MiB | refused |
/// | sidecar | the response cap + 16 MiB (272 MiB by default) | not read: left alone, reported |
/// | conversation file read into memory | 256 MiB | a SQLite store is copied to a private folder instead (see [`InputKind::Wal`]); a `.pb` is refused |
/// | `-wal` | streamed, never held whole | with its database, at most 4 GiB copied; refused beyond |
/// | captured daemon answer | 256 MiB | refused |
/// | descriptor set | 64 MiB | refused |
/// | program binary (`schema extract`) | 1 GiB | refused |
/// | small record (watch state, pin and extraction manifests) | 64 MiB | refused |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// A version-5 manifest (a merged one of 100,000 sessions is about
    /// 180 MB).
    Manifest,
    /// A log whose newest lines are what is read (`cli.log`, the IDE's
    /// `main.log` and `language_server.log`): read from its end, the last
    /// 16 MiB at most ([`read_tail`]).
    Log,
    /// A response shape listing, or a document listed as one (`shapes`,
    /// `format-audit --against`): 256 MiB (agy-reader's 2 M-entry listing
    /// is 36 MB).
    Listing,
    /// A `<uuid>.trajectory.json` sidecar: the default cap is the default
    /// response cap plus 16 MiB for the `agyReader` record (a sidecar is an
    /// answer's trajectory member, compact, plus that record); the callers
    /// pass the cap of the response cap in force
    /// (`attest::cache::sidecar_cap`), so the tool never refuses its own
    /// sidecars.
    Sidecar,
    /// A conversation file read into memory (a legacy `.pb`; a `.db` and
    /// its companions snapshotted in memory): 256 MiB.
    Conversation,
    /// A SQLite `-wal`: read frame by frame where it is only read; copied
    /// with its database to a private folder where SQLite must replay it,
    /// 4 GiB at most for the conversation's files together
    /// ([`WAL_SPILL_CAP`]).
    Wal,
    /// A captured daemon answer (`verify-capture`, `export-check`): the
    /// default response cap, 256 MiB.
    Answer,
    /// A FileDescriptorSet file (gzip-compressed or not): 64 MiB.
    DescriptorSet,
    /// A program binary a schema is extracted from: 1 GiB.
    Binary,
    /// A small record the tool reads back (watch state, a pin or
    /// extraction manifest): 64 MiB.
    Record,
}

/// The most bytes a conversation's database, `-wal` and `-journal` may hold
/// together when they are copied to a private folder for SQLite to replay
/// (the state is then built on disk, not in memory): 4 GiB.
pub const WAL_SPILL_CAP: u64 = 4 << 30;

impl InputKind {
    /// The most bytes a file of this kind may hold.
    pub const fn cap(self) -> u64 {
        match self {
            InputKind::Manifest | InputKind::Binary => 1 << 30,
            InputKind::Log => 16 << 20,
            InputKind::Listing | InputKind::Conversation | InputKind::Answer => 256 << 20,
            InputKind::Sidecar => (256 << 20) + (16 << 20),
            InputKind::Wal => WAL_SPILL_CAP,
            InputKind::DescriptorSet | InputKind::Record => 64 << 20,
        }
    }

    /// The kind as an error names it.
    pub const fn name(self) -> &'static str {
        match self {
            InputKind::Manifest => "manifest",
            InputKind::Log => "log",
            InputKind::Listing => "listing",
            InputKind::Sidecar => "sidecar",
            InputKind::Conversation => "conversation file",
            InputKind::Wal => "write-ahead log",
            InputKind::Answer => "captured answer",
            InputKind::DescriptorSet => "descriptor set",
            InputKind::Binary => "program binary",
            InputKind::Record => "record",
        }
    }
}

/// Why an input file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BoundedReadError {
    #[error("{}: {}", path.display(), crate::util::io_text(source))]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not a regular file ({what}): a {kind} is read only from a regular file", path.display())]
    NotAFile {
        path: PathBuf,
        what: &'static str,
        kind: &'static str,
    },
    #[error("{}: larger than {cap} bytes, the most a {kind} may hold", path.display())]
    TooLarge {
        path: PathBuf,
        cap: u64,
        kind: &'static str,
    },
}

impl BoundedReadError {
    /// The error as an `std::io::Error` without the path (for callers whose
    /// errors name the path themselves): the I/O error itself, or one of
    /// kind `InvalidInput` saying what the file is.
    pub fn into_io(self) -> std::io::Error {
        match self {
            BoundedReadError::Io { source, .. } => source,
            BoundedReadError::NotAFile { what, kind, .. } => std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("not a regular file ({what}): a {kind} is read only from a regular file"),
            ),
            BoundedReadError::TooLarge { cap, kind, .. } => std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("larger than {cap} bytes, the most a {kind} may hold"),
            ),
        }
    }
}

/// What a file type is, as an error names it.
fn type_name(t: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_block_device() || t.is_char_device() {
            return "a device";
        }
    }
    if t.is_dir() {
        "a folder"
    } else {
        "not a regular file"
    }
}

/// The regular file at `path` opened for reading without blocking (a FIFO
/// would block the open itself), with its metadata; anything else refused.
/// A symbolic link to a regular file is followed ([`open_plain`] refuses
/// one).
pub fn open_regular(path: &Path, kind: InputKind) -> Result<std::fs::File, BoundedReadError> {
    open_checked(path, kind, false).map(|(f, _)| f)
}

/// [`open_regular`], refusing a symbolic link too (a conversation source
/// must be the file itself).
pub fn open_plain(
    path: &Path,
    kind: InputKind,
) -> Result<(std::fs::File, std::fs::Metadata), BoundedReadError> {
    open_checked(path, kind, true)
}

fn open_checked(
    path: &Path,
    kind: InputKind,
    no_follow: bool,
) -> Result<(std::fs::File, std::fs::Metadata), BoundedReadError> {
    let io = |source| BoundedReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        // A FIFO would block the open itself until a writer came.
        use std::os::unix::fs::OpenOptionsExt;
        let nofollow = if no_follow { libc::O_NOFOLLOW } else { 0 };
        options.custom_flags(libc::O_NONBLOCK | nofollow);
    }
    #[cfg(not(unix))]
    if no_follow && std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(BoundedReadError::NotAFile {
            path: path.to_path_buf(),
            what: "a symbolic link",
            kind: kind.name(),
        });
    }
    let file = match options.open(path) {
        #[cfg(unix)]
        Err(e) if no_follow && e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(BoundedReadError::NotAFile {
                path: path.to_path_buf(),
                what: "a symbolic link",
                kind: kind.name(),
            })
        }
        other => other.map_err(io)?,
    };
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(BoundedReadError::NotAFile {
            path: path.to_path_buf(),
            what: type_name(meta.file_type()),
            kind: kind.name(),
        });
    }
    Ok((file, meta))
}

/// The bytes of the regular file at `path` (a symbolic link to one is
/// followed), at most `kind`'s cap.
pub fn read_regular(path: &Path, kind: InputKind) -> Result<Vec<u8>, BoundedReadError> {
    read_capped(path, kind, kind.cap())
}

/// [`read_regular`] under the cap `cap` instead of the kind's (a sidecar's
/// cap follows the response cap in force).
pub fn read_capped(path: &Path, kind: InputKind, cap: u64) -> Result<Vec<u8>, BoundedReadError> {
    let (file, meta) = open_checked(path, kind, false)?;
    read_open(file, &meta, path, kind, cap)
}

/// [`open_plain`] then read whole, at most `kind`'s cap: a conversation
/// source's own bytes.
pub fn read_plain(path: &Path, kind: InputKind) -> Result<Vec<u8>, BoundedReadError> {
    let (file, meta) = open_plain(path, kind)?;
    read_open(file, &meta, path, kind, kind.cap())
}

fn read_open(
    file: std::fs::File,
    meta: &std::fs::Metadata,
    path: &Path,
    kind: InputKind,
    cap: u64,
) -> Result<Vec<u8>, BoundedReadError> {
    if meta.len() > cap {
        return Err(too_large(path, kind, cap));
    }
    read_up_to(file, path, kind, cap, meta.len())
}

fn too_large(path: &Path, kind: InputKind, cap: u64) -> BoundedReadError {
    BoundedReadError::TooLarge {
        path: path.to_path_buf(),
        cap,
        kind: kind.name(),
    }
}

/// All of `reader` (`path`'s bytes, `size_hint` of them expected), refused
/// once more than `cap` bytes come: whatever its size said, nothing past
/// the cap is kept.
fn read_up_to(
    reader: impl Read,
    path: &Path,
    kind: InputKind,
    cap: u64,
    size_hint: u64,
) -> Result<Vec<u8>, BoundedReadError> {
    let mut bytes = Vec::with_capacity(usize::try_from(size_hint.min(cap)).unwrap_or(0));
    reader
        .take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| BoundedReadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > cap {
        return Err(too_large(path, kind, cap));
    }
    Ok(bytes)
}

/// [`read_regular`], `None` when nothing is at `path`.
pub fn read_if_present(path: &Path, kind: InputKind) -> Result<Option<Vec<u8>>, BoundedReadError> {
    match read_regular(path, kind) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(BoundedReadError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// [`read_regular`], or standard input, read once and boundedly, when
/// `path` is `-`.
pub fn read_input(path: &Path, kind: InputKind) -> Result<Vec<u8>, BoundedReadError> {
    if path.as_os_str() != "-" {
        return read_regular(path, kind);
    }
    read_up_to(std::io::stdin().lock(), path, kind, kind.cap(), 0)
}

/// The last `kind.cap()` bytes of the regular file at `path`, from the
/// start of a line: a log is read from its end, where its newest lines are,
/// whatever its size (a line cut by the cap is dropped).
pub fn read_tail(path: &Path, kind: InputKind) -> Result<Vec<u8>, BoundedReadError> {
    use std::io::{Seek, SeekFrom};
    let io = |source| BoundedReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let (mut file, meta) = open_checked(path, kind, false)?;
    let cap = kind.cap();
    let start = meta.len().saturating_sub(cap);
    file.seek(SeekFrom::Start(start)).map_err(io)?;
    let mut bytes = Vec::new();
    file.take(cap).read_to_end(&mut bytes).map_err(io)?;
    if start > 0 {
        let first_line_end = bytes
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| i + 1);
        bytes.drain(..first_line_end);
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_reads_whole() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("m.json");
        std::fs::write(&p, b"{}").unwrap();
        assert_eq!(read_regular(&p, InputKind::Manifest).unwrap(), b"{}");
    }

    #[test]
    fn a_folder_is_refused_by_kind() {
        let d = tempfile::tempdir().unwrap();
        let e = read_regular(d.path(), InputKind::Manifest).unwrap_err();
        assert!(
            matches!(
                e,
                BoundedReadError::NotAFile {
                    what: "a folder",
                    ..
                }
            ),
            "{e}"
        );
    }

    /// The cap is the most bytes a file may hold: a file of exactly `cap`
    /// bytes reads whole, one more is refused before it is read.
    #[test]
    fn a_file_of_the_cap_reads_whole_and_one_more_byte_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("m.json");
        std::fs::write(&p, b"0123456789abcdef").unwrap();
        assert_eq!(
            read_capped(&p, InputKind::Manifest, 16).unwrap(),
            b"0123456789abcdef"
        );
        let e = read_capped(&p, InputKind::Manifest, 15).unwrap_err();
        assert!(
            matches!(e, BoundedReadError::TooLarge { cap: 15, .. }),
            "{e}"
        );
    }

    /// A file that holds more than its size says (a procfs file says 0) is
    /// refused once the bytes read pass the cap, never cut short at it.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_longer_than_its_size_says_is_refused_at_the_cap() {
        let p = Path::new("/proc/self/status");
        assert_eq!(std::fs::metadata(p).unwrap().len(), 0);
        let e = read_capped(p, InputKind::Manifest, 16).unwrap_err();
        assert!(
            matches!(e, BoundedReadError::TooLarge { cap: 16, .. }),
            "{e}"
        );
    }

    /// A device is named as one.
    #[cfg(unix)]
    #[test]
    fn a_device_is_refused_by_name() {
        let e = read_regular(Path::new("/dev/null"), InputKind::Manifest).unwrap_err();
        assert!(
            matches!(
                e,
                BoundedReadError::NotAFile {
                    what: "a device",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn a_log_is_read_from_its_end_whole_lines_only() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("cli.log");
        std::fs::write(&p, b"old\nnew\n").unwrap();
        assert_eq!(read_tail(&p, InputKind::Log).unwrap(), b"old\nnew\n");
        // Past the cap: the newest lines, the cut line dropped.
        let cap = InputKind::Log.cap() as usize;
        let mut big = vec![b'x'; cap];
        big.extend_from_slice(b"\nnewest line\n");
        std::fs::write(&p, &big).unwrap();
        assert_eq!(read_tail(&p, InputKind::Log).unwrap(), b"newest line\n");
    }

    /// A FIFO named `name` in the folder `dir`.
    #[cfg(unix)]
    fn fifo_in(dir: &Path, name: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a plain mkfifo(3) on a path in a fresh temp folder.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        p
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_log_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let p = fifo_in(d.path(), "cli.log");
        let e = read_tail(&p, InputKind::Log).unwrap_err();
        assert!(
            e.to_string()
                .contains("a log is read only from a regular file"),
            "{e}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let p = fifo_in(d.path(), "fifo");
        let e = read_regular(&p, InputKind::Manifest).unwrap_err();
        assert!(
            matches!(e, BoundedReadError::NotAFile { what: "a FIFO", .. }),
            "{e}"
        );
        assert!(e
            .to_string()
            .contains("a manifest is read only from a regular file"));
    }
}
