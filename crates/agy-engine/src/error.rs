//! The engine's error: what went wrong *around* a verdict while reading a
//! source, a schema or a file (I/O, a corrupt file, an unusable input). A
//! refused representation is not an error; it is a
//! [`crate::verdict::Refusal`]. The application wraps this error in its own
//! (`agy_audit_app::Error::Engine`), which adds the daemon's and the
//! command line's troubles.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {}", crate::util::io_text(source))]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A conversation source (or its key file or log) that is not what it
    /// claims to be: the rule it breaks names its location.
    #[error("{}: corrupt: {}: {rule}", path.display(), rule.location())]
    Corrupt { path: PathBuf, rule: CorruptRule },
    /// SQLite could not make or read a snapshot of a database.
    #[error("{}: {failure}", path.display())]
    Sqlite {
        path: PathBuf,
        failure: SqliteFailure,
    },
    #[error(transparent)]
    Schema(#[from] crate::schema::error::SchemaError),
    #[error(transparent)]
    Write(#[from] crate::util::atomic::WriteError),
    #[error(transparent)]
    Shapes(#[from] crate::shapes::ShapeError),
    /// An input file refused by the bounded reader (not a regular file, or
    /// larger than its kind's cap: `crate::util::bounded`).
    #[error(transparent)]
    Input(#[from] crate::util::bounded::BoundedReadError),
    /// A path given as a source that is neither a `.db` nor a `.pb`: the
    /// user's to correct (a usage error, exit 2).
    #[error("{}: not a conversation source (expected a .db or .pb file)", path.display())]
    NotASource { path: PathBuf },
}

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub fn corrupt(path: impl Into<PathBuf>, rule: CorruptRule) -> Error {
        Error::Corrupt {
            path: path.into(),
            rule,
        }
    }

    pub fn sqlite(path: impl Into<PathBuf>, failure: SqliteFailure) -> Error {
        Error::Sqlite {
            path: path.into(),
            failure,
        }
    }

    /// Whether the user must correct an input (the CLI exits 2).
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::NotASource { .. })
    }
}

/// The rules a corrupt source breaks: the closed set the engine raises, each
/// with its location ([`CorruptRule::location`]) and its words.
#[derive(Debug, thiserror::Error)]
pub enum CorruptRule {
    /// A conversation source that is a symbolic link.
    #[error("a conversation source must not be a symbolic link")]
    SymbolicLink,
    /// A conversation source that is not a regular file (`what` it is).
    #[error("not a regular file ({what})")]
    NotARegularFile { what: &'static str },
    /// A `.db` without SQLite 3's 100-byte header.
    #[error("not a SQLite 3 database")]
    NotSqlite3,
    /// A `-wal` frame whose checksum proves it damaged after it was written.
    #[error("fails its checksum although the next frame chains from the checksum it carries: the log was damaged after it was written (not a torn write); SQLite would silently drop it and every later frame")]
    WalFrameDamaged { frame: usize },
    /// `PRAGMA quick_check` did not answer `ok` (its findings, in order).
    #[error("{}", findings.join("; "))]
    QuickCheck { findings: Vec<String> },
    /// SQLite refused the database as malformed while checking it.
    #[error("{0}")]
    Malformed(rusqlite::Error),
    /// A legacy key file that is neither 32 raw bytes nor 64 hex digits.
    #[error("{len} bytes: a legacy key file holds 32 raw bytes or 64 hex digits")]
    KeyFileLength { len: usize },
    /// A legacy envelope too short to hold its nonce and tag.
    #[error("{len} bytes: a legacy source is a 12-byte nonce, ciphertext and a 16-byte tag")]
    EnvelopeTooShort { len: usize },
    /// A legacy envelope's nonce that is not 12 bytes.
    #[error("nonce is not 12 bytes")]
    NonceLength,
}

impl CorruptRule {
    /// Where in the file the rule is broken.
    pub fn location(&self) -> std::borrow::Cow<'static, str> {
        match self {
            CorruptRule::SymbolicLink | CorruptRule::NotARegularFile { .. } => "file".into(),
            CorruptRule::NotSqlite3 => "header".into(),
            CorruptRule::WalFrameDamaged { frame } => format!("frame {frame}").into(),
            CorruptRule::QuickCheck { .. } => "PRAGMA quick_check".into(),
            CorruptRule::Malformed(_) => "database".into(),
            CorruptRule::KeyFileLength { .. } => "key file".into(),
            CorruptRule::EnvelopeTooShort { .. } | CorruptRule::NonceLength => "envelope".into(),
        }
    }
}

/// What SQLite could not do while a snapshot was made or read. Each shows
/// SQLite's own words (or, for [`SqliteFailure::KeptChanging`], the
/// reader's).
#[derive(Debug, thiserror::Error)]
pub enum SqliteFailure {
    /// The private copy (or in-memory image) could not be opened.
    #[error("{0}")]
    Open(rusqlite::Error),
    /// The snapshot's connection could not be configured (defensive mode,
    /// cell checks, mmap, untrusted schema).
    #[error("{0}")]
    Configure(rusqlite::Error),
    /// A query of the snapshot's tables failed.
    #[error("{0}")]
    Query(rusqlite::Error),
    /// The database and its companions kept changing while they were copied.
    #[error("the database kept changing while it was copied ({attempts} attempts)")]
    KeptChanging { attempts: u32 },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rule the engine raises, with the words it printed when the
    /// location and the rule were strings: the types change nothing a user
    /// reads.
    #[test]
    fn each_corrupt_rule_keeps_its_location_and_words() {
        let malformed = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
            Some("database disk image is malformed".into()),
        );
        let cases = [
            (
                CorruptRule::SymbolicLink,
                "a.db: corrupt: file: a conversation source must not be a symbolic link",
            ),
            (
                CorruptRule::NotARegularFile { what: "a FIFO" },
                "a.db: corrupt: file: not a regular file (a FIFO)",
            ),
            (
                CorruptRule::NotSqlite3,
                "a.db: corrupt: header: not a SQLite 3 database",
            ),
            (
                CorruptRule::WalFrameDamaged { frame: 3 },
                "a.db: corrupt: frame 3: fails its checksum although the next frame chains from \
                 the checksum it carries: the log was damaged after it was written (not a torn \
                 write); SQLite would silently drop it and every later frame",
            ),
            (
                CorruptRule::QuickCheck {
                    findings: vec!["row 1 missing".into(), "page 2 never used".into()],
                },
                "a.db: corrupt: PRAGMA quick_check: row 1 missing; page 2 never used",
            ),
            (
                CorruptRule::Malformed(malformed),
                "a.db: corrupt: database: database disk image is malformed",
            ),
            (
                CorruptRule::KeyFileLength { len: 7 },
                "a.db: corrupt: key file: 7 bytes: a legacy key file holds 32 raw bytes or 64 hex digits",
            ),
            (
                CorruptRule::EnvelopeTooShort { len: 28 },
                "a.db: corrupt: envelope: 28 bytes: a legacy source is a 12-byte nonce, ciphertext and a 16-byte tag",
            ),
            (
                CorruptRule::NonceLength,
                "a.db: corrupt: envelope: nonce is not 12 bytes",
            ),
        ];
        for (rule, text) in cases {
            let e = Error::corrupt("a.db", rule);
            assert_eq!(e.to_string(), text);
            assert!(!e.is_usage(), "{e}");
        }
    }

    /// A SQLite failure says what failed in its variant and prints only
    /// SQLite's words (or the reader's, for a database that kept changing).
    #[test]
    fn each_sqlite_failure_keeps_its_words() {
        let sql = || {
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                Some("unable to open database file".into()),
            )
        };
        for failure in [
            SqliteFailure::Open(sql()),
            SqliteFailure::Configure(sql()),
            SqliteFailure::Query(sql()),
        ] {
            let e = Error::sqlite("a.db", failure);
            assert_eq!(e.to_string(), "a.db: unable to open database file");
            assert!(!e.is_usage());
        }
        assert_eq!(
            Error::sqlite("a.db", SqliteFailure::KeptChanging { attempts: 5 }).to_string(),
            "a.db: the database kept changing while it was copied (5 attempts)"
        );
    }
}
