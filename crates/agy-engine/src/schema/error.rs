//! Why a descriptor set could not be loaded or built: the schema stage's
//! typed errors. A leaf: it imports nothing of the schema stage.

use std::path::PathBuf;

/// Why a descriptor set could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("{path}: cannot read descriptor set: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: descriptor set larger than {limit} bytes")]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("{path}: not a valid FileDescriptorSet: {detail}")]
    Invalid { path: PathBuf, detail: String },
    #[error("{path}: {source}")]
    Syntax {
        path: PathBuf,
        #[source]
        source: UnsupportedSyntax,
    },
    #[error("{origin}: descriptor set lacks required {kind} `{name}`")]
    Missing {
        origin: String,
        kind: &'static str,
        name: String,
    },
}

/// A descriptor file whose `syntax` the descriptor library cannot build.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("descriptor file {file:?} declares syntax {syntax:?}, which this reader cannot load (only proto2 and proto3; protoc writes \"editions\" for edition-2023 files)")]
pub struct UnsupportedSyntax {
    /// The file's `name` inside the descriptor.
    pub file: String,
    /// Its `syntax`, as written.
    pub syntax: String,
}

/// Why a serialized FileDescriptorSet did not build a pool.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    #[error(transparent)]
    Syntax(#[from] UnsupportedSyntax),
    #[error("{0}")]
    Decode(#[from] prost::DecodeError),
    #[error("{0}")]
    Descriptor(#[from] prost_reflect::DescriptorError),
}

impl PoolError {
    /// The [`SchemaError`] for this failure of the set read from `path`.
    pub fn at(self, path: impl Into<PathBuf>) -> SchemaError {
        let path = path.into();
        match self {
            PoolError::Syntax(source) => SchemaError::Syntax { path, source },
            other => SchemaError::Invalid {
                path,
                detail: other.to_string(),
            },
        }
    }
}
