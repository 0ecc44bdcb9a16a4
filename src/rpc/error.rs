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
}
