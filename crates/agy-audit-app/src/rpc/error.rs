//! Why the daemon cannot be used: the RPC stage's typed errors. Why a call
//! failed ([`RpcError`]); why the daemon's endpoint cannot be found
//! ([`EndpointError`], a usage error); why a CSRF token is refused
//! ([`TokenDefect`]). A leaf: it imports only the envelope's defects.

use super::envelope::ResponseDefect;
use std::path::PathBuf;

/// Why the daemon's endpoint cannot be found or used: a URL given, or the
/// log that should announce the port. Every one names an input the user
/// must correct (`crate::Error::is_usage`: exit 2).
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// A daemon URL (`--daemon-url` or its environment variable) that is
    /// not a usable base URL.
    #[error("{origin}: {detail}")]
    DaemonUrl {
        origin: UrlOrigin,
        /// Why it is refused (`rpc::validate_endpoint`, `rpc::ide::check_url`).
        detail: String,
    },
    /// No URL given and no `cli.log` to read the daemon's port from.
    #[error("{}: no such file, so the daemon's port is unknown; pass --daemon-url URL (or set ${}), or --root for the store whose agy is running", log.display(), crate::well_known::DAEMON_URL_ENV)]
    NoCliLog { log: PathBuf },
    /// A `cli.log` without the daemon's port line.
    #[error("{}: no `listening on random port at N for HTTP` line; is agy running? (or pass --daemon-url URL)", log.display())]
    NoPortLine { log: PathBuf },
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
}

impl EndpointError {
    /// Whether the daemon's port is unknown only because agy left no log or
    /// no port line (it is not running), not because a log could not be
    /// read.
    pub fn log_absent(&self) -> bool {
        match self {
            EndpointError::NoCliLog { .. }
            | EndpointError::NoPortLine { .. }
            | EndpointError::IdeLogsUnknown { .. }
            | EndpointError::IdePortLine { .. } => true,
            EndpointError::IdeServerLog { source, .. } => {
                source.kind() == std::io::ErrorKind::NotFound
            }
            EndpointError::DaemonUrl { .. } => false,
        }
    }
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

/// The longest CSRF token accepted, in bytes.
pub const MAX_TOKEN_LEN: usize = 256;

/// Why a CSRF token is refused (`rpc::ide::check_token`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenDefect {
    #[error("it is empty")]
    Empty,
    #[error("it is {len} bytes long, more than {MAX_TOKEN_LEN}")]
    TooLong { len: usize },
    #[error("byte {at} is U+{code:04X}, not a printable ASCII character (a token has no whitespace, control or non-ASCII character)")]
    NotPrintable { at: usize, code: u32 },
}

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RpcError {
    #[error("{endpoint} {method}: transport error: {detail}")]
    Transport {
        endpoint: String,
        method: &'static str,
        detail: String,
    },
    #[error("{endpoint} {method}: timed out after {seconds}s")]
    Timeout {
        endpoint: String,
        method: &'static str,
        seconds: u64,
    },
    #[error("{endpoint} {method}: HTTP {status}: {code} {message}")]
    Status {
        endpoint: String,
        method: &'static str,
        status: u16,
        code: String,
        message: String,
    },
    #[error("{endpoint} {method}: response larger than {limit} bytes")]
    TooLarge {
        endpoint: String,
        method: &'static str,
        limit: u64,
    },
    #[error("{endpoint} {method}: invalid response: {defect}")]
    InvalidResponse {
        endpoint: String,
        method: &'static str,
        defect: ResponseDefect,
    },
    /// The call was abandoned because the run was interrupted (Ctrl-C).
    #[error("{endpoint} {method}: cancelled (interrupted)")]
    Cancelled {
        endpoint: String,
        method: &'static str,
    },
    /// Nothing accepts connections at the endpoint.
    #[error("{endpoint}: the daemon is unreachable: {detail}")]
    Unreachable { endpoint: String, detail: String },
    /// HTTP 401 or 403: the daemon refused the request's credentials. The
    /// body is never kept (it may echo the token); `daemon` names the root
    /// whose daemon it is, when the client was told
    /// ([`super::ClientOptions::daemon_of`]).
    #[error("authentication error: {daemon} at {endpoint} refused {method} (HTTP {status}): {}", auth_hint(*token_sent))]
    Unauthorized {
        endpoint: String,
        method: &'static str,
        status: u16,
        daemon: String,
        /// Whether an `x-codeium-csrf-token` was sent.
        token_sent: bool,
    },
    /// HTTP 415, or HTTP 400 without a Connect error envelope, to a JSON
    /// request: agy's gRPC-Web listener refuses JSON this way (avenor's
    /// agy 1.1.5 capture), so the endpoint is most likely the wrong port. A
    /// 400 that carries a Connect `code` is the daemon's own answer
    /// (invalid_argument, failed_precondition) and stays a [`Self::Status`].
    #[error("{endpoint} {method}: HTTP {status} to a JSON request: most likely the wrong listener ({daemon} answered like agy's gRPC-Web port, which refuses JSON); use the port of the `... for HTTP` line, not the `for HTTPS (gRPC)` one")]
    WrongListener {
        endpoint: String,
        method: &'static str,
        status: u16,
        daemon: String,
    },
}

/// What to do about a 401/403.
fn auth_hint(token_sent: bool) -> &'static str {
    if token_sent {
        "the CSRF token was refused (stale or not this daemon's: the IDE makes a new one at every start and its main.log records it); pass the current one with --csrf-token"
    } else {
        "no CSRF token was sent (none given and none found in the root's logs); pass the daemon's token with --csrf-token"
    }
}

impl RpcError {
    /// The error says nothing about this conversation: the daemon itself
    /// could not be used (refused connection, timeout), so the sweep checks
    /// whether it is still reachable at all.
    pub fn daemon_wide(&self) -> bool {
        matches!(
            self,
            RpcError::Transport { .. } | RpcError::Timeout { .. } | RpcError::Unreachable { .. }
        )
    }

    /// The daemon refused how it is reached (a missing or wrong token, the
    /// wrong listener), not this conversation: every other request would
    /// get the same answer, so a run stops and says so once.
    pub fn setup_problem(&self) -> bool {
        matches!(
            self,
            RpcError::Unauthorized { .. } | RpcError::WrongListener { .. }
        )
    }
}
