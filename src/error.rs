//! The library's error type: things that went wrong *around* a verdict (I/O,
//! corrupt files, unusable inputs). A refused representation is not an error;
//! it is a [`crate::verdict::Refusal`].

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
    Schema(#[from] crate::schema::SchemaError),
    #[error(transparent)]
    Write(#[from] crate::util::atomic::WriteError),
    #[error("{0}")]
    Usage(String),
    /// A whole-store run selected no conversation: an empty or mistaken
    /// root, never a passing audit.
    #[error("{}: no conversation to audit (no <uuid>.db or <uuid>.pb in its conversations/ folder): an empty or mistaken root is not a passing audit{hint}", root.display())]
    EmptySelection { root: PathBuf, hint: &'static str },
    /// The daemon cannot be used at all (checked once, before any work).
    #[error(transparent)]
    Daemon(#[from] crate::rpc::RpcError),
    #[error(transparent)]
    Shapes(#[from] crate::shapes::ShapeError),
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
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
