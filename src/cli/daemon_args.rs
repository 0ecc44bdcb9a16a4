//! Arguments for commands that talk to the daemon.

use super::common::whole;
use crate::rpc::{ClientOptions, CSRF_ENV, DEFAULT_MAX_BODY};
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
    /// $ANTIGRAVITY_DAEMON_URL, else each root's own: the newest `listening
    /// on random port at N for HTTP` line of <root>/cli.log for a CLI root,
    /// of the IDE's language_server.log for an IDE root). Given, it is used
    /// for every root the command touches, so with several roots name the
    /// root too. A malformed URL (either one) is a usage error, as is one
    /// holding whitespace or a control character.
    #[arg(long, value_name = "URL", value_parser = parse_url)]
    pub daemon_url: Option<String>,
    /// CSRF token sent as x-codeium-csrf-token (default: for an IDE root
    /// whose daemon is found in the IDE's logs, the newest --csrf_token of
    /// the IDE's main.log; a CLI root, or a --daemon-url given, gets none).
    /// Sent only when known. A token is 1 to 256 printable ASCII characters
    /// (no whitespace or control character); any other value, given or in
    /// main.log, is refused, never sent.
    #[arg(long, env = CSRF_ENV, value_name = "TOKEN", value_parser = parse_token)]
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
    crate::rpc::ide::check_url(s)
}

/// `--csrf-token` / `$ANTIGRAVITY_CSRF_TOKEN`: a plain printable token
/// ([`crate::rpc::ide::check_token`]); empty means none, as before.
fn parse_token(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Ok(String::new());
    }
    crate::rpc::ide::check_token(s)
        .map(|()| s.to_string())
        .map_err(|e| format!("not a plain printable CSRF token: {e}"))
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
            daemon_of: None,
            ..ClientOptions::default()
        }
    }

    /// The daemon of one root and how to talk to it: the URL from
    /// `--daemon-url`/`$ANTIGRAVITY_DAEMON_URL`, else the root's own logs
    /// (cli.log; the IDE's language_server.log); the token from
    /// `--csrf-token`/`$ANTIGRAVITY_CSRF_TOKEN`, else (IDE roots) the IDE's
    /// main.log, sent only when known (a CLI daemon never gets one it did
    /// not ask for); errors name the root ([`crate::rpc::ide::daemon_of`]).
    pub fn for_root(
        &self,
        root: &std::path::Path,
        surface: crate::roots::Surface,
        cancel: Option<Arc<AtomicBool>>,
    ) -> anyhow::Result<(crate::rpc::ide::Endpoint, ClientOptions)> {
        // the flag (checked by its parser), else the environment, checked
        // here: a malformed one is a usage error naming the variable
        let explicit_url = crate::rpc::ide::pinned_url(self.daemon_url.as_deref())?;
        let found = crate::rpc::ide::endpoint_for(
            root,
            surface,
            explicit_url.as_deref(),
            self.csrf_token.as_deref(),
        )?;
        let mut options = self.client_options(cancel);
        options.csrf_token = found.csrf_token.clone();
        options.daemon_of = Some(crate::rpc::ide::daemon_of(root, surface));
        Ok((found, options))
    }

    pub fn endpoint(&self, root: &std::path::Path) -> anyhow::Result<String> {
        let explicit = crate::rpc::ide::pinned_url(self.daemon_url.as_deref())?;
        Ok(crate::rpc::discover_endpoint(root, explicit.as_deref())?)
    }
}
