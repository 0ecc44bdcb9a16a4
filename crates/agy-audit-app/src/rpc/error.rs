//! Why a call to the daemon failed: the RPC stage's typed errors. A leaf: it
//! imports only the envelope's defects.

use super::envelope::ResponseDefect;

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
