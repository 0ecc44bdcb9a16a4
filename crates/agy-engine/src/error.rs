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
    /// A file that is not what it claims to be, at a location, breaking a rule.
    #[error("{path}: corrupt: {location}: {rule}")]
    Corrupt {
        path: PathBuf,
        location: String,
        rule: String,
    },
    #[error("{path}: {detail}")]
    Sqlite { path: PathBuf, detail: String },
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

    pub fn corrupt(
        path: impl Into<PathBuf>,
        location: impl Into<String>,
        rule: impl Into<String>,
    ) -> Error {
        Error::Corrupt {
            path: path.into(),
            location: location.into(),
            rule: rule.into(),
        }
    }

    /// Whether the user must correct an input (the CLI exits 2).
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::NotASource { .. })
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
