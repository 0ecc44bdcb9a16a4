//! Why a sweep cannot start: its options judged against its `--out` folder,
//! the manifest it would resume, the shard and its decode threads. Every one
//! names an input the user must correct (`crate::Error::is_usage`: exit 2).
//! A leaf beneath the application's error, which wraps it; it imports only
//! the shard assignment's own error.

use super::shard::{ShardEnvError, SHARD_ASSIGNMENT};
use std::path::PathBuf;

/// A sweep's options that cannot start it.
#[derive(Debug, thiserror::Error)]
pub enum SweepStartError {
    /// `--shard auto` could not name a shard from the environment.
    #[error(transparent)]
    ShardEnv(#[from] ShardEnvError),
    /// `--shard-count` given with a fixed `--shard i/n`.
    #[error("--shard-count {count} goes with --shard auto; --shard {index}/{of} names its count")]
    ShardCountWithFixed {
        count: usize,
        index: usize,
        of: usize,
    },
    /// `--resume` of a shard manifest split by listing position.
    #[error("{}: --resume of a shard assigned by listing position (no shardBy {}); sweep the shard again into a new folder", manifest.display(), SHARD_ASSIGNMENT)]
    ResumeListingShard { manifest: PathBuf },
    /// `--out` already holds a sweep (and no `--resume`).
    #[error("{}: already holds a sweep; pass --resume to continue it, or name a new folder", out.display())]
    OutHoldsSweep { out: PathBuf },
    /// `--out` names an existing folder.
    #[error("{}: already exists; --out must name a new folder", out.display())]
    OutExists { out: PathBuf },
    /// `--out` names a file.
    #[error("{}: is a file, not a folder; --out must name a new folder", out.display())]
    OutIsFile { out: PathBuf },
    /// `--out`'s parent folder does not exist.
    #[error("{}: the parent folder {} does not exist", out.display(), parent.display())]
    OutParentMissing { out: PathBuf, parent: PathBuf },
    /// `--resume` on a folder without a manifest.
    #[error("{}: not an audit-sweep output folder (no {}); --resume continues a sweep, run without it to start one", out.display(), crate::well_known::MANIFEST_FILE)]
    ResumeNotASweep { out: PathBuf },
    /// `--resume` with another store root than the manifest's.
    #[error("{}: --resume with another store root: the manifest records {recorded}, this run has {given}", manifest.display())]
    ResumeOtherRoot {
        manifest: PathBuf,
        recorded: String,
        given: String,
    },
    /// `--resume` with another shard than the manifest's (`none` for none).
    #[error("{}: --resume with another shard: the manifest records {}, this run has {}", manifest.display(), recorded.as_deref().unwrap_or("none"), given.as_deref().unwrap_or("none"))]
    ResumeOtherShard {
        manifest: PathBuf,
        recorded: Option<String>,
        given: Option<String>,
    },
    /// `--jobs` decode threads could not be started.
    #[error("cannot start {jobs} decode threads: {source}")]
    DecodeThreads {
        jobs: usize,
        #[source]
        source: rayon::ThreadPoolBuildError,
    },
}
