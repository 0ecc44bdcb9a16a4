//! The application's error type: things that went wrong *around* a verdict (I/O,
//! corrupt files, unusable inputs). A refused representation is not an error;
//! it is a [`crate::verdict::Refusal`].

pub use crate::pipeline::error::SweepStartError;
pub use crate::roots::error::RootError;
pub use crate::rpc::error::{EndpointError, UrlOrigin};
use crate::rpc::error::{TokenDefect, MAX_TOKEN_LEN};
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// What the engine could not read (I/O, a corrupt file, a schema, an
    /// input over its cap, a path that is not a source).
    #[error(transparent)]
    Engine(#[from] agy_engine::Error),
    /// A store root or a conversation id that cannot be used (a usage
    /// error: the CLI exits 2, as for clap's own).
    #[error(transparent)]
    Root(#[from] RootError),
    /// The daemon's endpoint cannot be found from what was given (a usage
    /// error).
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// A sweep's options that cannot start it (a usage error).
    #[error(transparent)]
    SweepStart(#[from] SweepStartError),
    /// A file the application reads that breaks its rule.
    #[error("{}: corrupt: {input}", path.display())]
    Corrupt { path: PathBuf, input: CorruptInput },
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

    /// Whether the user must correct an input: the one test of exit 2.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::Root(_) | Error::Endpoint(_) | Error::SweepStart(_) => true,
            Error::Engine(e) => e.is_usage(),
            Error::EmptySelection { .. } | Error::Daemon(_) | Error::Corrupt { .. } => false,
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

/// A file the application reads (not a conversation source: those are the
/// engine's, `agy_engine::error::CorruptRule`) that is not what it claims
/// to be. Each names the rule it breaks.
#[derive(Debug, thiserror::Error)]
pub enum CorruptInput {
    /// A CSRF token read (from `--csrf-token` or the IDE's main.log) that
    /// is not a plain printable token (`rpc::ide::check_token`).
    #[error("the CSRF token: not a plain printable CSRF token (1 to {MAX_TOKEN_LEN} ASCII characters `!` to `~`): {0}; it is not sent")]
    CsrfToken(TokenDefect),
    /// The manifest a `--resume` continues, refused by the strict reader.
    /// Its problem (`manifest::read::ManifestProblem`) is kept whole, boxed:
    /// the manifest's module stands on a floor above this one.
    #[error("manifest: {0}")]
    ResumedManifest(Box<dyn std::error::Error + Send + Sync>),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::shard::ShardEnvError;

    fn io(kind: std::io::ErrorKind) -> std::io::Error {
        std::io::Error::from(kind)
    }

    /// Every operation's error is a usage error through the one
    /// `Error::is_usage`, whichever enum raised it; a corrupt input and the
    /// daemon's own failures are not.
    #[test]
    fn each_operations_error_is_a_usage_error_through_the_one_test() {
        let p = || PathBuf::from("p");
        let roots = [
            RootError::NoRoot,
            RootError::RootNotAFolder { root: p() },
            RootError::RootMissing {
                root: p(),
                source: io(std::io::ErrorKind::NotFound),
            },
            RootError::NotAStoreRoot { root: p() },
            RootError::ConversationsNotAFolder { dir: p() },
            RootError::NotASourceOrId { arg: "x".into() },
            RootError::NoConversation {
                id: "x".into(),
                dir: p(),
            },
            RootError::NoConversationInRoots {
                id: "x".into(),
                roots: "r".into(),
            },
            RootError::NoHomeForRoots,
            RootError::NoDefaultRoot { home: p() },
        ];
        for e in roots {
            assert!(Error::from(e).is_usage());
        }
        let endpoints = [
            EndpointError::DaemonUrl {
                origin: UrlOrigin::Env,
                detail: "d".into(),
            },
            EndpointError::NoCliLog { log: p() },
            EndpointError::NoPortLine { log: p() },
            EndpointError::IdeLogsUnknown { root: p() },
            EndpointError::IdeServerLog {
                log: p(),
                root: p(),
                source: io(std::io::ErrorKind::PermissionDenied),
            },
            EndpointError::IdePortLine { log: p() },
        ];
        for e in endpoints {
            assert!(Error::from(e).is_usage());
        }
        let threads = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .spawn_handler(|_| Err(std::io::Error::other("no thread")))
            .build()
            .expect_err("a pool whose thread cannot start is refused");
        let starts = [
            SweepStartError::ShardEnv(ShardEnvError::NoRunner),
            SweepStartError::ShardCountWithFixed {
                count: 2,
                index: 1,
                of: 3,
            },
            SweepStartError::ResumeListingShard { manifest: p() },
            SweepStartError::OutHoldsSweep { out: p() },
            SweepStartError::OutExists { out: p() },
            SweepStartError::OutIsFile { out: p() },
            SweepStartError::OutParentMissing {
                out: p(),
                parent: p(),
            },
            SweepStartError::ResumeNotASweep { out: p() },
            SweepStartError::ResumeOtherRoot {
                manifest: p(),
                recorded: "a".into(),
                given: "b".into(),
            },
            SweepStartError::ResumeOtherShard {
                manifest: p(),
                recorded: None,
                given: Some("1/2".into()),
            },
            SweepStartError::DecodeThreads {
                jobs: 2,
                source: threads,
            },
        ];
        for e in starts {
            assert!(Error::from(e).is_usage());
        }
        let corrupt = Error::Corrupt {
            path: p(),
            input: CorruptInput::CsrfToken(TokenDefect::Empty),
        };
        assert!(!corrupt.is_usage());
    }

    /// The split kept every message a user reads, byte for byte (a sample
    /// of each enum, and the corrupt inputs that were the engine's
    /// strings).
    #[test]
    fn the_split_keeps_the_messages() {
        let cases: [(Error, &str); 8] = [
            (
                RootError::NotAStoreRoot {
                    root: PathBuf::from("/r"),
                }
                .into(),
                "/r: not an agy store root (no conversations/ folder); name the folder that holds it",
            ),
            (
                RootError::NoConversationInRoots {
                    id: "i".into(),
                    roots: "/a (cli)".into(),
                }
                .into(),
                "no conversation i in any root (/a (cli); looked for conversations/i.db and .pb in each, in this order)",
            ),
            (
                EndpointError::DaemonUrl {
                    origin: UrlOrigin::Flag,
                    detail: "not a URL".into(),
                }
                .into(),
                "--daemon-url: not a URL",
            ),
            (
                EndpointError::NoPortLine {
                    log: PathBuf::from("/r/cli.log"),
                }
                .into(),
                "/r/cli.log: no `listening on random port at N for HTTP` line; is agy running? (or pass --daemon-url URL)",
            ),
            (
                SweepStartError::OutHoldsSweep {
                    out: PathBuf::from("/o"),
                }
                .into(),
                "/o: already holds a sweep; pass --resume to continue it, or name a new folder",
            ),
            (
                SweepStartError::ResumeOtherShard {
                    manifest: PathBuf::from("/o/manifest.json"),
                    recorded: Some("1/2".into()),
                    given: None,
                }
                .into(),
                "/o/manifest.json: --resume with another shard: the manifest records 1/2, this run has none",
            ),
            (
                Error::Corrupt {
                    path: PathBuf::from("--csrf-token"),
                    input: CorruptInput::CsrfToken(TokenDefect::TooLong { len: 300 }),
                },
                "--csrf-token: corrupt: the CSRF token: not a plain printable CSRF token (1 to 256 ASCII characters `!` to `~`): it is 300 bytes long, more than 256; it is not sent",
            ),
            (
                Error::Corrupt {
                    path: PathBuf::from("/o/manifest.json"),
                    input: CorruptInput::ResumedManifest(Box::new(
                        crate::manifest::read::ManifestProblem::NoVersion,
                    )),
                },
                "/o/manifest.json: corrupt: manifest: no `manifestVersion`: a version-5 manifest is required",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text);
        }
    }
}
