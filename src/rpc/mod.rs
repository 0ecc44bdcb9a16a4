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
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            timeout: Duration::from_secs(30),
            max_body: DEFAULT_MAX_BODY,
            retries: 2,
            backoff: Duration::from_millis(100),
            csrf_token: None,
        }
    }
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
    #[error("{endpoint} {method}: invalid response: {detail}")]
    InvalidResponse {
        endpoint: String,
        method: &'static str,
        detail: String,
    },
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

    fn call(&self, method: &'static str, body: String) -> Result<Vec<u8>, RpcError> {
        let url = format!("{}/{SERVICE}/{method}", self.base);
        let mut attempt = 0;
        loop {
            match self.call_once(method, &url, &body) {
                Err(RpcError::Transport { .. }) if attempt < self.opts.retries => {
                    attempt += 1;
                    std::thread::sleep(self.opts.backoff * (1 << (attempt - 1)));
                }
                other => return other,
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
        let mut bytes = Vec::new();
        resp.take(self.opts.max_body + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| {
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
