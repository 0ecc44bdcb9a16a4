//! The application's error type: things that went wrong *around* a verdict (I/O,
//! corrupt files, unusable inputs). A refused representation is not an error;
//! it is a [`crate::verdict::Refusal`].

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// What the engine could not read (I/O, a corrupt file, a schema, an
    /// input over its cap, a path that is not a source).
    #[error(transparent)]
    Engine(#[from] agy_engine::Error),
    /// An input the user must correct (a flag's value, a path, a root):
    /// the CLI exits 2, as for clap's own usage errors.
    #[error(transparent)]
    Usage(#[from] UsageError),
    /// A whole-store run selected no conversation: an empty or mistaken
    /// root, never a passing audit.
    #[error("{}: no conversation to audit (no <uuid>.db or <uuid>.pb in its conversations/ folder): an empty or mistaken root is not a passing audit{hint}", root.display())]
    EmptySelection { root: PathBuf, hint: &'static str },
    /// The daemon cannot be used at all (checked once, before any work).
    #[error(transparent)]
    Daemon(#[from] crate::rpc::error::RpcError),
}

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Engine(agy_engine::Error::io(path, source))
    }

    pub fn corrupt(
        path: impl Into<PathBuf>,
        location: impl Into<String>,
        rule: impl Into<String>,
    ) -> Error {
        Error::Engine(agy_engine::Error::corrupt(path, location, rule))
    }

    /// Whether the user must correct an input: the one test of exit 2.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::Usage(_) => true,
            Error::Engine(e) => e.is_usage(),
            Error::EmptySelection { .. } | Error::Daemon(_) => false,
        }
    }
}

/// The engine's errors a `?` lifts into the application's.
macro_rules! through_engine {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Error {
                Error::Engine(e.into())
            }
        }
    )*};
}
through_engine!(
    crate::schema::error::SchemaError,
    crate::util::atomic::WriteError,
    crate::shapes::ShapeError,
    crate::util::bounded::BoundedReadError
);

/// A usage error found past argument parsing: a value only the library can
/// judge. Each names what to correct; the CLI maps every one to exit 2.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    /// A SOURCE argument that is neither an existing source nor an id.
    #[error("{arg}: neither an existing .db/.pb file nor a conversation id")]
    NotASourceOrId { arg: String },
    /// A conversation id with no source under the store.
    #[error("no conversation {id} under {} (looked for {id}.db and {id}.pb)", dir.display())]
    NoConversation { id: String, dir: PathBuf },
    /// A conversation id that no root in use holds.
    #[error("no conversation {id} in any root ({roots}; looked for conversations/{id}.db and .pb in each, in this order)")]
    NoConversationInRoots { id: String, roots: String },
    /// No `--root`, no `$ANTIGRAVITY_CLI_ROOT` and no `HOME`.
    #[error("no store root: HOME is not set (the default root is ~/.gemini/antigravity-cli) and neither is {}; pass --root DIR, the folder that holds conversations/", crate::well_known::ROOT_ENV)]
    NoRoot,
    /// A store root that is not a folder.
    #[error("{}: not a folder; the store root is the folder that holds conversations/", root.display())]
    RootNotAFolder { root: PathBuf },
    /// A store root that does not exist.
    #[error("{}: {}; the store root is the folder that holds conversations/", root.display(), crate::util::io_text(source))]
    RootMissing {
        root: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A root without a `conversations/` folder.
    #[error("{}: not an agy store root (no conversations/ folder); name the folder that holds it", root.display())]
    NotAStoreRoot { root: PathBuf },
    /// A `conversations` that is not a folder.
    #[error("{}: not a folder; an agy store root holds a conversations/ folder", dir.display())]
    ConversationsNotAFolder { dir: PathBuf },
    /// A daemon URL (`--daemon-url` or its environment variable) that is
    /// not a usable base URL.
    #[error("{origin}: {detail}")]
    DaemonUrl {
        origin: UrlOrigin,
        /// Why it is refused (`rpc::validate_endpoint`).
        detail: String,
    },
    /// No URL given and no `cli.log` to read the daemon's port from.
    #[error("{}: no such file, so the daemon's port is unknown; pass --daemon-url URL (or set ${}), or --root for the store whose agy is running", log.display(), crate::well_known::DAEMON_URL_ENV)]
    NoCliLog { log: PathBuf },
    /// A `cli.log` without the daemon's port line.
    #[error("{}: no `listening on random port at N for HTTP` line; is agy running? (or pass --daemon-url URL)", log.display())]
    NoPortLine { log: PathBuf },
    /// `--shard auto` could not name a shard from the environment.
    #[error(transparent)]
    ShardEnv(#[from] crate::pipeline::shard::ShardEnvError),
    /// `--shard-count` given with a fixed `--shard i/n`.
    #[error("--shard-count {count} goes with --shard auto; --shard {index}/{of} names its count")]
    ShardCountWithFixed {
        count: usize,
        index: usize,
        of: usize,
    },
    /// `--resume` of a shard manifest split by listing position.
    #[error("{}: --resume of a shard assigned by listing position (no shardBy {}); sweep the shard again into a new folder", manifest.display(), crate::pipeline::shard::SHARD_ASSIGNMENT)]
    ResumeListingShard { manifest: PathBuf },
    /// No `--root`, no pinned root and no `HOME` to find the default roots.
    #[error("no store root: HOME is not set (the default roots are ~/{} and ~/{}) and neither is {}; pass --root DIR", crate::well_known::CLI_SUBPATH, crate::well_known::IDE_SUBPATH, crate::well_known::ROOT_ENV)]
    NoHomeForRoots,
    /// Neither default root exists under the home folder.
    #[error("no store root found: neither ~/{} nor ~/{} exists under {}; pass --root DIR", crate::well_known::CLI_SUBPATH, crate::well_known::IDE_SUBPATH, home.display())]
    NoDefaultRoot { home: PathBuf },
    /// An IDE root whose log folder cannot be located.
    #[error("{}: an IDE root, but the IDE's log folder is unknown (HOME/APPDATA unset); pass --daemon-url URL and --csrf-token T", root.display())]
    IdeLogsUnknown { root: PathBuf },
    /// The IDE language server's log cannot be read.
    #[error("{}: {} (the IDE root {}'s daemon announces its port there); is the Antigravity IDE running? (or pass --daemon-url URL)", log.display(), crate::util::io_text(source), root.display())]
    IdeServerLog {
        log: PathBuf,
        root: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The IDE language server's log has no port line.
    #[error("{}: no `listening on random port at N for HTTP` line; is the Antigravity IDE running? (or pass --daemon-url URL)", log.display())]
    IdePortLine { log: PathBuf },
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

/// Where a daemon URL came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlOrigin {
    /// `--daemon-url`.
    Flag,
    /// `$ANTIGRAVITY_DAEMON_URL`.
    Env,
}

impl std::fmt::Display for UrlOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UrlOrigin::Flag => f.write_str("--daemon-url"),
            UrlOrigin::Env => write!(f, "${}", crate::well_known::DAEMON_URL_ENV),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
