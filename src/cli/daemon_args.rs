//! Arguments for commands that talk to the daemon.

use crate::rpc::{ClientOptions, CSRF_ENV, DAEMON_URL_ENV, DEFAULT_MAX_BODY};
use clap::Args;
use std::time::Duration;

#[derive(Debug, Clone, Args)]
pub struct DaemonArgs {
    /// Daemon base URL (default: $ANTIGRAVITY_DAEMON_URL, else the newest
    /// `listening on random port at N for HTTP` line of <root>/cli.log).
    #[arg(long, value_name = "URL")]
    pub daemon_url: Option<String>,
    /// CSRF token sent as x-codeium-csrf-token (IDE daemons); sent only when set.
    #[arg(long, env = CSRF_ENV, value_name = "TOKEN")]
    pub csrf_token: Option<String>,
    /// Per-request timeout in seconds.
    #[arg(long, default_value_t = 30)]
    pub timeout: u64,
    /// Largest response body accepted, in bytes.
    #[arg(long, default_value_t = DEFAULT_MAX_BODY)]
    pub max_response_bytes: u64,
    /// Extra attempts after a transport error (never after an HTTP status or a timeout).
    #[arg(long, default_value_t = 2)]
    pub retries: u32,
    /// How often to re-fetch when the source changed during the fetch.
    #[arg(long, default_value_t = 2)]
    pub bracket_retries: u32,
}

impl DaemonArgs {
    pub fn client_options(&self) -> ClientOptions {
        ClientOptions {
            timeout: Duration::from_secs(self.timeout.max(1)),
            max_body: self.max_response_bytes,
            retries: self.retries,
            backoff: Duration::from_millis(100),
            csrf_token: self.csrf_token.clone().filter(|t| !t.is_empty()),
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
