//! Stage 4: the daemon client. Connect-RPC JSON over loopback HTTP:
//! `POST <base>/exa.language_server_pb.LanguageServerService/<Method>`.
//!
//! Per-request timeout, a response size cap, and bounded retries with backoff
//! on transport errors only (never on an HTTP status, never on a timeout).
//! Every error names the endpoint and method.

mod endpoint;

pub use endpoint::{discover_endpoint, parse_cli_log, DAEMON_URL_ENV};

use serde::Deserialize;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const SERVICE: &str = "exa.language_server_pb.LanguageServerService";
pub const CSRF_HEADER: &str = "x-codeium-csrf-token";
pub const CSRF_ENV: &str = "ANTIGRAVITY_CSRF_TOKEN";
/// Default cap on one response body.
pub const DEFAULT_MAX_BODY: u64 = 256 << 20;

/// How the client talks to the daemon.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    pub timeout: Duration,
    pub max_body: u64,
    /// Extra attempts after a transport error.
    pub retries: u32,
    pub backoff: Duration,
    /// Sent as `x-codeium-csrf-token` only when set.
    pub csrf_token: Option<String>,
    /// When set (Ctrl-C), calls in flight return [`RpcError::Cancelled`] at
    /// once instead of waiting for the daemon or the timeout.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            timeout: Duration::from_secs(30),
            max_body: DEFAULT_MAX_BODY,
            retries: 2,
            backoff: Duration::from_millis(100),
            csrf_token: None,
            cancel: None,
        }
    }
}

/// How often a waiting call looks at the cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(50);

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
    #[error("{endpoint} {method}: invalid response: {detail}")]
    InvalidResponse {
        endpoint: String,
        method: &'static str,
        detail: String,
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

/// The most `--daemon-url` may be: `http://` or `https://`, a host, an
/// optional port, nothing else (no credentials, path, query or fragment).
///
/// Returns the base URL without a trailing slash.
pub fn validate_endpoint(url: &str) -> Result<String, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "`{url}`: the daemon URL must start with http:// or https://"
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("`{url}`: the daemon URL has no host"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(format!(
            "`{url}`: the daemon URL must not carry credentials"
        ));
    }
    if parsed.path() != "/" || parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(format!(
            "`{url}`: the daemon URL is scheme, host and port only (e.g. http://127.0.0.1:4100)"
        ));
    }
    Ok(url.trim_end_matches('/').to_string())
}

/// Reads at most `limit + 1` bytes: the buffer never grows past the limit
/// (an oversized body is refused while streaming, not after buffering it).
fn read_capped(mut r: impl Read, limit: u64, hint: Option<u64>) -> std::io::Result<Vec<u8>> {
    let cap = usize::try_from(limit.saturating_add(1)).unwrap_or(usize::MAX);
    let mut bytes: Vec<u8> = Vec::with_capacity(
        hint.and_then(|h| usize::try_from(h).ok())
            .unwrap_or(64 << 10)
            .min(cap),
    );
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let want = chunk.len().min(cap - bytes.len());
        if want == 0 {
            return Ok(bytes);
        }
        let n = match r.read(&mut chunk[..want]) {
            Ok(0) => return Ok(bytes),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if bytes.len() + n > bytes.capacity() {
            let grown = (bytes.capacity() * 2).max(bytes.len() + n).min(cap);
            bytes.reserve_exact(grown - bytes.len());
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
}

/// One GetCascadeTrajectory answer.
#[derive(Debug, Clone)]
pub struct TrajectoryResponse {
    /// The whole body, as received.
    pub body: Vec<u8>,
    /// The exact bytes of the `trajectory` member.
    pub trajectory: String,
    pub status: Option<String>,
    pub num_total_steps: Option<String>,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    trajectory: Option<&'a serde_json::value::RawValue>,
    status: Option<String>,
    #[serde(rename = "numTotalSteps")]
    num_total_steps: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ErrorEnvelope {
    code: Option<String>,
    message: Option<String>,
}

/// A blocking client for one daemon endpoint.
#[derive(Debug, Clone)]
pub struct DaemonClient {
    base: String,
    http: reqwest::blocking::Client,
    opts: ClientOptions,
}

impl DaemonClient {
    pub fn new(base: &str, opts: ClientOptions) -> Result<DaemonClient, RpcError> {
        let base = base.trim_end_matches('/').to_string();
        let http = reqwest::blocking::Client::builder()
            .timeout(opts.timeout)
            .no_proxy()
            .build()
            .map_err(|e| RpcError::Transport {
                endpoint: base.clone(),
                method: "connect",
                detail: e.to_string(),
            })?;
        Ok(DaemonClient { base, http, opts })
    }

    pub fn endpoint(&self) -> &str {
        &self.base
    }

    fn cancelled(&self) -> bool {
        self.opts
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::SeqCst))
    }

    /// Checks, once and up front, that something accepts connections at the
    /// endpoint (a TCP connect, no request): an unreachable daemon is one
    /// error, not one per conversation.
    pub fn probe(&self) -> Result<(), RpcError> {
        let unreachable = |detail: String| RpcError::Unreachable {
            endpoint: self.base.clone(),
            detail,
        };
        let url = reqwest::Url::parse(&self.base).map_err(|e| unreachable(e.to_string()))?;
        let addrs = url
            .socket_addrs(|| None)
            .map_err(|e| unreachable(format!("cannot resolve the host: {e}")))?;
        let wait = self.opts.timeout.min(Duration::from_secs(5));
        let mut last = String::from("the host resolves to no address");
        for a in addrs {
            match std::net::TcpStream::connect_timeout(&a, wait) {
                Ok(_) => return Ok(()),
                Err(e) => last = format!("{a}: {}", crate::util::io_text(&e)),
            }
        }
        Err(unreachable(last))
    }

    fn call(&self, method: &'static str, body: String) -> Result<Vec<u8>, RpcError> {
        let url = format!("{}/{SERVICE}/{method}", self.base);
        let mut attempt = 0;
        loop {
            if self.cancelled() {
                return Err(RpcError::Cancelled {
                    endpoint: self.base.clone(),
                    method,
                });
            }
            match self.call_cancellable(method, &url, &body) {
                Err(RpcError::Transport { .. }) if attempt < self.opts.retries => {
                    attempt += 1;
                    std::thread::sleep(self.opts.backoff * (1 << (attempt - 1)));
                }
                other => return other,
            }
        }
    }

    /// One attempt; with a cancel flag it runs on its own thread so that
    /// Ctrl-C abandons it at once (the thread ends with the request's timeout).
    fn call_cancellable(
        &self,
        method: &'static str,
        url: &str,
        body: &str,
    ) -> Result<Vec<u8>, RpcError> {
        let Some(cancel) = self.opts.cancel.clone() else {
            return self.call_once(method, url, body);
        };
        let (tx, rx) = crossbeam_channel::bounded(1);
        let this = self.clone();
        let (url, body) = (url.to_string(), body.to_string());
        std::thread::Builder::new()
            .name("agy-audit-rpc".into())
            .spawn(move || {
                let _ = tx.send(this.call_once(method, &url, &body));
            })
            .map_err(|e| RpcError::Transport {
                endpoint: self.base.clone(),
                method,
                detail: format!("cannot start a request thread: {e}"),
            })?;
        loop {
            match rx.recv_timeout(CANCEL_POLL) {
                Ok(r) => return r,
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                    if cancel.load(Ordering::SeqCst) {
                        return Err(RpcError::Cancelled {
                            endpoint: self.base.clone(),
                            method,
                        });
                    }
                }
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                    return Err(RpcError::Transport {
                        endpoint: self.base.clone(),
                        method,
                        detail: "the request thread ended without an answer".into(),
                    })
                }
            }
        }
    }

    fn call_once(&self, method: &'static str, url: &str, body: &str) -> Result<Vec<u8>, RpcError> {
        let endpoint = self.base.clone();
        let timeout = || RpcError::Timeout {
            endpoint: endpoint.clone(),
            method,
            seconds: self.opts.timeout.as_secs(),
        };
        let transport = |e: reqwest::Error| {
            if e.is_timeout() {
                timeout()
            } else {
                RpcError::Transport {
                    endpoint: endpoint.clone(),
                    method,
                    detail: e.to_string(),
                }
            }
        };
        let mut req = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(t) = &self.opts.csrf_token {
            req = req.header(CSRF_HEADER, t);
        }
        let resp = req.send().map_err(transport)?;
        let status = resp.status().as_u16();
        let declared = resp.content_length();
        if declared.is_some_and(|n| n > self.opts.max_body) {
            return Err(RpcError::TooLarge {
                endpoint,
                method,
                limit: self.opts.max_body,
            });
        }
        let bytes = read_capped(resp, self.opts.max_body, declared).map_err(|e| {
            if e.to_string().contains("timed out") {
                timeout()
            } else {
                RpcError::Transport {
                    endpoint: endpoint.clone(),
                    method,
                    detail: format!("reading the body: {e}"),
                }
            }
        })?;
        if bytes.len() as u64 > self.opts.max_body {
            return Err(RpcError::TooLarge {
                endpoint,
                method,
                limit: self.opts.max_body,
            });
        }
        if !(200..300).contains(&status) {
            let env: Option<ErrorEnvelope> = serde_json::from_slice(&bytes).ok();
            return Err(RpcError::Status {
                endpoint,
                method,
                status,
                code: env
                    .as_ref()
                    .and_then(|e| e.code.clone())
                    .unwrap_or_default(),
                message: env
                    .and_then(|e| e.message)
                    .unwrap_or_else(|| String::from_utf8_lossy(&bytes).chars().take(200).collect()),
            });
        }
        Ok(bytes)
    }

    /// `LoadTrajectory {cascadeId}`: must precede GetCascadeTrajectory.
    pub fn load_trajectory(&self, cascade_id: &str) -> Result<(), RpcError> {
        let body = serde_json::json!({ "cascadeId": cascade_id }).to_string();
        self.call("LoadTrajectory", body).map(|_| ())
    }

    /// `GetCascadeTrajectory`: the full unrehydrated RPC (`full`: verbosity
    /// FULL, disableRehydration true) or the ordinary one.
    pub fn get_trajectory(
        &self,
        cascade_id: &str,
        full: bool,
    ) -> Result<TrajectoryResponse, RpcError> {
        let body = if full {
            serde_json::json!({
                "cascadeId": cascade_id,
                "trajectoryVerbosity": "CLIENT_TRAJECTORY_VERBOSITY_FULL",
                "disableRehydration": true,
            })
        } else {
            serde_json::json!({ "cascadeId": cascade_id })
        };
        let method = "GetCascadeTrajectory";
        let bytes = self.call(method, body.to_string())?;
        let invalid = |detail: String| RpcError::InvalidResponse {
            endpoint: self.base.clone(),
            method,
            detail,
        };
        let text = std::str::from_utf8(&bytes).map_err(|e| invalid(format!("not UTF-8: {e}")))?;
        let env: Envelope<'_> =
            serde_json::from_str(text).map_err(|e| invalid(format!("not JSON: {e}")))?;
        let trajectory = env
            .trajectory
            .ok_or_else(|| invalid("no trajectory member".into()))?
            .get()
            .to_string();
        let num_total_steps = env.num_total_steps.map(|v| match v {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        });
        Ok(TrajectoryResponse {
            trajectory,
            status: env.status,
            num_total_steps,
            body: bytes,
        })
    }
}
