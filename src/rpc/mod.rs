//! Stage 4: the daemon client. Connect-RPC JSON over loopback HTTP:
//! `POST <base>/exa.language_server_pb.LanguageServerService/<Method>`.
//!
//! Per-request timeout that bounds the whole request (connect, headers and
//! every byte of the body: a daemon that drips its answer is cut off at the
//! deadline), a response size cap that bounds memory (the buffer is reserved
//! once and never grows past the cap, so a request in flight holds at most
//! the cap plus one read chunk), no redirects (an answer comes from the
//! endpoint or is an error), and bounded retries with backoff on transport
//! errors only (never on an HTTP status, never on a timeout). A
//! GetCascadeTrajectory answer is parsed whole and strictly
//! ([`envelope`]). Every error names the endpoint and method.

mod endpoint;
pub mod envelope;
pub mod error;
pub mod ide;

pub use endpoint::{discover_endpoint, parse_cli_log, validate_endpoint, DAEMON_URL_ENV};
pub use envelope::ResponseDefect;
pub use error::RpcError;

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
    /// Whose daemon this is, for messages (e.g. `the daemon of the ide root
    /// /home/u/.gemini/antigravity`, [`ide::daemon_of`]); default `the daemon`.
    pub daemon_of: Option<String>,
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
            daemon_of: None,
        }
    }
}

/// How often a waiting call looks at the cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// Reads at most `limit + 1` bytes, until `deadline`.
///
/// The buffer is reserved once, for the declared length when there is one
/// (never more than the cap), else for the whole cap: reserving address space
/// costs no memory until it is written, and a buffer that never reallocates
/// never holds an old copy beside the new one. So the memory of one body is
/// at most the cap plus one read chunk, whatever the daemon sends; an
/// oversized body is refused while streaming, not after buffering it.
fn read_capped(
    mut r: impl Read,
    limit: u64,
    hint: Option<u64>,
    deadline: std::time::Instant,
) -> std::io::Result<Vec<u8>> {
    let cap = usize::try_from(limit.saturating_add(1)).unwrap_or(usize::MAX);
    let reserve = hint
        .and_then(|h| usize::try_from(h.saturating_add(1)).ok())
        .map_or(cap, |h| h.min(cap));
    let mut bytes: Vec<u8> = Vec::new();
    bytes
        .try_reserve_exact(reserve)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::OutOfMemory, e.to_string()))?;
    let mut chunk = [0u8; 16 << 10];
    loop {
        if std::time::Instant::now() >= deadline {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the body did not arrive within the timeout",
            ));
        }
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
            // A body longer than it declared: grow to the cap, once.
            bytes
                .try_reserve_exact(cap - bytes.len())
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::OutOfMemory, e.to_string()))?;
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
}

/// One GetCascadeTrajectory answer, checked whole ([`envelope::parse`]).
#[derive(Debug, Clone)]
pub struct TrajectoryResponse {
    /// The whole body, as received (checked UTF-8 once, here).
    body: String,
    envelope: envelope::Envelope,
}

impl TrajectoryResponse {
    /// Checks `body` as a whole GetCascadeTrajectoryResponse.
    pub fn parse(body: Vec<u8>) -> Result<TrajectoryResponse, ResponseDefect> {
        let body = envelope::into_text(body)?;
        let envelope = envelope::parse(&body)?;
        Ok(TrajectoryResponse { body, envelope })
    }

    /// A captured answer: a whole response ([`Self::parse`]) when its top
    /// level has a `trajectory` member, else a bare trajectory
    /// ([`envelope::parse_bare`]).
    pub fn parse_captured(body: Vec<u8>) -> Result<TrajectoryResponse, ResponseDefect> {
        let body = envelope::into_text(body)?;
        let envelope = if envelope::is_enveloped(&body) {
            envelope::parse(&body)?
        } else {
            envelope::parse_bare(&body)?
        };
        Ok(TrajectoryResponse { body, envelope })
    }

    /// The exact text of the `trajectory` member.
    pub fn trajectory(&self) -> &str {
        // The envelope's range is a JSON value's extent in this text, so it
        // lies on character boundaries.
        self.body
            .get(self.envelope.trajectory.clone())
            .unwrap_or_default()
    }

    /// The whole body, as received.
    pub fn into_body(self) -> Vec<u8> {
        self.body.into_bytes()
    }

    /// The `CascadeRunStatus` name the answer carries.
    pub fn status(&self) -> &'static str {
        self.envelope.status
    }

    /// `numTotalSteps`, equal to the trajectory's step count.
    pub fn num_total_steps(&self) -> u32 {
        self.envelope.num_total_steps
    }
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
            // An answer comes from the endpoint itself: a redirect (to
            // another host or not) is an HTTP status error, never followed.
            .redirect(reqwest::redirect::Policy::none())
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

    /// One attempt, on its own thread, so that Ctrl-C (the cancel flag) or
    /// the deadline abandons it at once; the thread itself stops reading at
    /// the deadline.
    fn call_cancellable(
        &self,
        method: &'static str,
        url: &str,
        body: &str,
    ) -> Result<Vec<u8>, RpcError> {
        // Always on its own thread: the caller's wait ends at the deadline
        // even while a read inside the HTTP library is still blocked.
        let cancel = self.opts.cancel.clone().unwrap_or_default();
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
        // The request thread stops itself at the deadline; this wait is
        // bounded by it too (plus a grace for the thread's own answer).
        let give_up = std::time::Instant::now() + self.opts.timeout + CANCEL_POLL * 4;
        loop {
            match rx.recv_timeout(CANCEL_POLL) {
                Ok(r) => return r,
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                    if std::time::Instant::now() >= give_up {
                        return Err(RpcError::Timeout {
                            endpoint: self.base.clone(),
                            method,
                            seconds: self.opts.timeout.as_secs(),
                        });
                    }
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
        // One deadline for the whole request: connect, headers and body.
        let deadline = std::time::Instant::now() + self.opts.timeout;
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
        let bytes = read_capped(resp, self.opts.max_body, declared, deadline).map_err(|e| {
            if e.kind() == std::io::ErrorKind::TimedOut || e.to_string().contains("timed out") {
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
            let daemon = || {
                self.opts
                    .daemon_of
                    .clone()
                    .unwrap_or_else(|| "the daemon".to_string())
            };
            let connect_code = env.as_ref().is_some_and(|e| e.code.is_some());
            match status {
                // the body is dropped: it may echo the token
                401 | 403 => {
                    return Err(RpcError::Unauthorized {
                        endpoint,
                        method,
                        status,
                        daemon: daemon(),
                        token_sent: self.opts.csrf_token.is_some(),
                    })
                }
                415 => {
                    return Err(RpcError::WrongListener {
                        endpoint,
                        method,
                        status,
                        daemon: daemon(),
                    })
                }
                400 if !connect_code => {
                    return Err(RpcError::WrongListener {
                        endpoint,
                        method,
                        status,
                        daemon: daemon(),
                    })
                }
                _ => {}
            }
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

    /// Whether the daemon accepts this client's requests at all: one
    /// read-only GetCascadeTrajectory for the nil conversation id (no
    /// conversation is loaded or changed). `Err` only for a setup problem
    /// ([`RpcError::setup_problem`]: 401/403, the wrong listener); any other
    /// answer, a refusal of the id included, means the request was accepted,
    /// and a transport error or timeout is left to the caller's own calls
    /// and probe.
    pub fn check_access(&self) -> Result<(), RpcError> {
        const NIL: &str = "00000000-0000-0000-0000-000000000000";
        let body = serde_json::json!({ "cascadeId": NIL }).to_string();
        match self.call("GetCascadeTrajectory", body) {
            Err(e) if e.setup_problem() => Err(e),
            _ => Ok(()),
        }
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
        let invalid = |defect: ResponseDefect| RpcError::InvalidResponse {
            endpoint: self.base.clone(),
            method,
            defect,
        };
        TrajectoryResponse::parse(bytes).map_err(invalid)
    }
}
