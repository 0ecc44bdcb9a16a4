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
}

impl InputKind {
    /// The most bytes a file of this kind may hold.
    pub const fn cap(self) -> u64 {
        match self {
            InputKind::Manifest => 1 << 30,
            InputKind::Log => 16 << 20,
            InputKind::Listing => 256 << 20,
        }
    }

    /// The kind as an error names it.
    pub const fn name(self) -> &'static str {
        match self {
            InputKind::Manifest => "manifest",
            InputKind::Log => "log",
            InputKind::Listing => "listing",
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
fn open_regular(
    path: &Path,
    kind: InputKind,
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
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(io)?;
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

/// [`read_regular`] under the cap `cap` (the tests' caps are small).
fn read_capped(path: &Path, kind: InputKind, cap: u64) -> Result<Vec<u8>, BoundedReadError> {
    let (file, meta) = open_regular(path, kind)?;
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
    let (mut file, meta) = open_regular(path, kind)?;
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

    #[cfg(unix)]
    #[test]
    fn a_fifo_log_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("cli.log");
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a plain mkfifo(3) on a path in a fresh temp folder.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
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
        let p = d.path().join("fifo");
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a plain mkfifo(3) on a path in a fresh temp folder.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
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
