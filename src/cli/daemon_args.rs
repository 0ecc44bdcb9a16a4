//! Arguments for commands that talk to the daemon.

use super::common::whole;
use crate::rpc::{ClientOptions, CSRF_ENV, DAEMON_URL_ENV, DEFAULT_MAX_BODY};
use clap::Args;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// The largest `--timeout`, in seconds (one hour).
pub const MAX_TIMEOUT_SECS: u64 = 3600;
/// The largest `--max-response-bytes` (4 GiB): every request in flight may
/// buffer this much, so memory is bounded by concurrency × 2 × this.
pub const MAX_RESPONSE_BYTES: u64 = 4 << 30;

#[derive(Debug, Clone, Args)]
pub struct DaemonArgs {
    /// Daemon base URL, http:// or https://, host and port only (default:
    /// $ANTIGRAVITY_DAEMON_URL, else the newest `listening on random port at N
    /// for HTTP` line of <root>/cli.log). A malformed URL is a usage error.
    #[arg(long, value_name = "URL", value_parser = parse_url)]
    pub daemon_url: Option<String>,
    /// CSRF token sent as x-codeium-csrf-token (IDE daemons); sent only when set.
    #[arg(long, env = CSRF_ENV, value_name = "TOKEN")]
    pub csrf_token: Option<String>,
    /// Per-request timeout in seconds (1 to 3600).
    #[arg(long, default_value_t = 30, allow_negative_numbers = true, value_parser = whole::<u64>(1, MAX_TIMEOUT_SECS))]
    pub timeout: u64,
    /// Largest response body accepted, in bytes (1 to 4 GiB); a larger answer
    /// is refused while it streams, never buffered past this.
    #[arg(long, default_value_t = DEFAULT_MAX_BODY, allow_negative_numbers = true, value_parser = whole::<u64>(1, MAX_RESPONSE_BYTES))]
    pub max_response_bytes: u64,
    /// Extra attempts after a transport error (never after an HTTP status or a timeout; 0 to 10).
    #[arg(long, default_value_t = 2, allow_negative_numbers = true, value_parser = whole::<u32>(0, 10))]
    pub retries: u32,
    /// How often to re-fetch when the source changed during the fetch (0 to 10).
    #[arg(long, default_value_t = 2, allow_negative_numbers = true, value_parser = whole::<u32>(0, 10))]
    pub bracket_retries: u32,
}

fn parse_url(s: &str) -> Result<String, String> {
    crate::rpc::validate_endpoint(s)
}

impl DaemonArgs {
    /// The client's options; `cancel` (the Ctrl-C flag) abandons calls in flight.
    pub fn client_options(&self, cancel: Option<Arc<AtomicBool>>) -> ClientOptions {
        ClientOptions {
            timeout: Duration::from_secs(self.timeout.max(1)),
            max_body: self.max_response_bytes,
            retries: self.retries,
            backoff: Duration::from_millis(100),
            csrf_token: self.csrf_token.clone().filter(|t| !t.is_empty()),
            cancel,
        }
    }

    pub fn endpoint(&self, root: &std::path::Path) -> anyhow::Result<String> {
        let explicit = self
            .daemon_url
            .clone()
            .or_else(|| std::env::var(DAEMON_URL_ENV).ok());
        Ok(crate::rpc::discover_endpoint(root, explicit.as_deref())?)
    }
}
