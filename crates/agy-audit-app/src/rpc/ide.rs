//! Finding a root's daemon and its CSRF token, for both surfaces, and
//! telling agy's daemon from whatever else listens on its port.
//!
//! * CLI root: the newest `... for HTTP` line of `<root>/cli.log`
//!   ([`super::parse_cli_log`]); no token (the CLI daemon is launched
//!   without one and must not get the header).
//! * IDE root: the same port line in the IDE language server's
//!   `language_server.log` ([`ide_url`]), and the token from the newest
//!   `--csrf_token` (`--csrf_token T` or `--csrf_token=T`) in the IDE's
//!   `main.log` ([`main_log_token`]), both in the IDE's log folder
//!   ([`ide_logs_dir`]). The two logs are read independently: the token is
//!   found whether or not the port is.
//!
//! An explicit URL (`--daemon-url`, `$ANTIGRAVITY_DAEMON_URL`) or token
//! (`--csrf-token`, `$ANTIGRAVITY_CSRF_TOKEN`) wins over what the logs say.
//! Every token, wherever it is read, must be a plain printable token
//! ([`check_token`]); every pinned URL passes [`check_url`].
//!
//! [`check_listener`] asks a listener one token-less question before any
//! token goes to it ([`classify`]: an answer agy's daemon could give, or
//! [`Other`], named).

use super::error::{EndpointError, UrlOrigin};
use crate::error::{CorruptInput, Error, Result};
use crate::roots::Surface;
use crate::util::bounded::{read_tail, InputKind};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The IDE language server's log (port lines).
pub const IDE_SERVER_LOG: &str = "language_server.log";
/// The IDE's main log (the language server's spawn line with its token).
pub const IDE_MAIN_LOG: &str = "main.log";

/// The IDE's log folder: `logs` in the IDE's application folder
/// ([`crate::roots::ide_app_dir`]).
pub fn ide_logs_dir() -> Option<PathBuf> {
    crate::roots::ide_app_dir().map(|d| d.join("logs"))
}

/// The newest `--csrf_token` value in a main.log text, as written (not yet
/// judged: [`check_token`]): the flag followed by a space or `=` and a
/// value not starting with `-` (a longer flag sharing the prefix, or a flag
/// without a value, is passed over). The value runs to the next whitespace.
pub fn parse_csrf_token(text: &str) -> Option<String> {
    const FLAG: &str = "--csrf_token";
    text.lines().rev().find_map(|line| {
        let mut rest = line;
        while let Some(at) = rest.find(FLAG) {
            rest = &rest[at + FLAG.len()..];
            let value = if let Some(v) = rest.strip_prefix('=') {
                v
            } else if rest.starts_with(' ') {
                rest.trim_start_matches(' ')
            } else {
                continue;
            };
            let token = value.split_whitespace().next().unwrap_or("");
            if !token.is_empty() && !token.starts_with('-') {
                return Some(token.to_string());
            }
        }
        None
    })
}

pub use super::error::{TokenDefect, MAX_TOKEN_LEN};

/// A plain printable token: 1 to [`MAX_TOKEN_LEN`] bytes, each an ASCII
/// graphic character (`!` to `~`, 0x21 to 0x7E).
///
/// Stricter than anything the sources say: the public facts (§4.4) name the
/// token and its header, never its alphabet, and an HTTP header value would
/// admit more (inner spaces, tabs, bytes past 0x7F). agy's tokens are
/// UUID-shaped; a value with whitespace, a control character or non-ASCII
/// text is no token agy wrote (a damaged or forged log line, a pasted
/// newline), and a header carrying it would either not be sent at all or
/// not be the value the daemon holds. Refused wherever a token is read:
/// `--csrf-token`, `$ANTIGRAVITY_CSRF_TOKEN`, the IDE's main.log and
/// `daemon-sim --csrf-token`.
pub fn check_token(token: &str) -> std::result::Result<(), TokenDefect> {
    if token.is_empty() {
        return Err(TokenDefect::Empty);
    }
    if let Some((at, c)) = token.char_indices().find(|(_, c)| !c.is_ascii_graphic()) {
        return Err(TokenDefect::NotPrintable {
            at,
            code: u32::from(c),
        });
    }
    if token.len() > MAX_TOKEN_LEN {
        return Err(TokenDefect::TooLong { len: token.len() });
    }
    Ok(())
}

/// Where a CSRF token was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// `--csrf-token` (or its environment variable, through the flag).
    Flag,
    /// `$ANTIGRAVITY_CSRF_TOKEN`, read by `doctor`.
    Env,
    /// The newest `--csrf_token` of the IDE's main.log.
    MainLog(PathBuf),
}

impl std::fmt::Display for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenSource::Flag => f.write_str("--csrf-token"),
            TokenSource::Env => write!(f, "${}", super::CSRF_ENV),
            TokenSource::MainLog(p) => write!(f, "{} (its newest --csrf_token)", p.display()),
        }
    }
}

/// A token read and refused: where, and why. It is never sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{from}: not a plain printable CSRF token: {defect}; it is not sent")]
pub struct RefusedToken {
    pub from: TokenSource,
    pub defect: TokenDefect,
}

/// What the IDE's main.log says of the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MainLogToken {
    /// The newest `--csrf_token` value, a plain printable token.
    Found { token: String, log: PathBuf },
    /// The newest value is no plain printable token: refused, not sent
    /// (an older line is never used instead: it names an earlier IDE run).
    Refused(RefusedToken),
    /// No main.log to read, or no `--csrf_token` line in it.
    Absent { log: PathBuf },
}

/// The IDE's CSRF token from `<logs>/main.log`, read from its end
/// (`util::bounded`), whatever `language_server.log` holds.
pub fn main_log_token(logs: &Path) -> MainLogToken {
    let log = logs.join(IDE_MAIN_LOG);
    let found = read_tail(&log, InputKind::Log)
        .ok()
        .and_then(|t| parse_csrf_token(&String::from_utf8_lossy(&t)));
    match found {
        None => MainLogToken::Absent { log },
        Some(token) => match check_token(&token) {
            Ok(()) => MainLogToken::Found { token, log },
            Err(defect) => MainLogToken::Refused(RefusedToken {
                from: TokenSource::MainLog(log),
                defect,
            }),
        },
    }
}

/// A pinned daemon URL as `sync` and `doctor` accept it: no whitespace or
/// control character anywhere (a URL parser drops a tab or newline
/// silently, so the text given would not be the URL used: stricter than the
/// parser), then [`super::validate_endpoint`] (http:// or https://, a host,
/// a port in range, nothing else). The base URL without a trailing slash.
pub fn check_url(url: &str) -> std::result::Result<String, String> {
    if let Some(c) = url.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "`{}`: the daemon URL holds U+{:04X} (whitespace or a control character)",
            url.escape_debug(),
            u32::from(c)
        ));
    }
    super::validate_endpoint(url)
}

/// The pinned daemon URL: `flag` (`--daemon-url`) when given and not
/// empty, else `$ANTIGRAVITY_DAEMON_URL` when set and not empty. A
/// malformed one ([`check_url`]) is a usage error naming where it came
/// from; `None` when nothing pins the URL.
pub fn pinned_url(flag: Option<&str>) -> Result<Option<String>> {
    let (url, origin) = match flag.filter(|u| !u.is_empty()) {
        Some(u) => (u.to_string(), UrlOrigin::Flag),
        None => match std::env::var_os(super::DAEMON_URL_ENV).filter(|u| !u.is_empty()) {
            Some(u) => (u.to_string_lossy().into_owned(), UrlOrigin::Env),
            None => return Ok(None),
        },
    };
    check_url(&url)
        .map(Some)
        .map_err(|detail| EndpointError::DaemonUrl { origin, detail }.into())
}

/// Where a root's daemon is and which token it wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `http://127.0.0.1:PORT` (or the explicit URL).
    pub url: String,
    /// The token to send (IDE roots; explicit tokens for any root).
    pub csrf_token: Option<String>,
    /// Where the URL came from (for messages): a log file or a flag.
    pub from: String,
}

/// The URL an IDE root's daemon announces: the newest `... for HTTP` line
/// of the IDE's `language_server.log`, and that log. A missing log or one
/// without the line is a usage error naming the file.
pub fn ide_url(root: &Path) -> Result<(String, PathBuf)> {
    let logs = ide_logs_dir().ok_or_else(|| {
        Error::from(EndpointError::IdeLogsUnknown {
            root: root.to_path_buf(),
        })
    })?;
    let server_log = logs.join(IDE_SERVER_LOG);
    let text = read_tail(&server_log, InputKind::Log).map_err(|e| {
        let e = e.into_io();
        Error::from(EndpointError::IdeServerLog {
            log: server_log.clone(),
            root: root.to_path_buf(),
            source: e,
        })
    })?;
    let port = super::parse_cli_log(&String::from_utf8_lossy(&text)).ok_or_else(|| {
        Error::from(EndpointError::IdePortLine {
            log: server_log.clone(),
        })
    })?;
    Ok((format!("http://127.0.0.1:{port}"), server_log))
}

/// The endpoint of `root` of `surface`: `explicit_url` and `explicit_token`
/// win; else the logs of the surface. A missing log or one without a port
/// line is a usage error naming the file. A token is sent only when it is a
/// plain printable token ([`check_token`]): a refused main.log token is an
/// error naming the log (never a silent request without it, which the
/// daemon would refuse as if no token had been found), and so is a refused
/// explicit token (the flag's own parser refuses it first).
pub fn endpoint_for(
    root: &Path,
    surface: Surface,
    explicit_url: Option<&str>,
    explicit_token: Option<&str>,
) -> Result<Endpoint> {
    let explicit_token = explicit_token.filter(|t| !t.is_empty()).map(str::to_string);
    if let Some(t) = &explicit_token {
        check_token(t).map_err(|defect| refused(&TokenSource::Flag, defect))?;
    }
    if surface == Surface::Cli || explicit_url.is_some_and(|u| !u.is_empty()) {
        let explicit_url = explicit_url.filter(|u| !u.is_empty());
        if let Some(u) = explicit_url {
            check_url(u).map_err(|detail| {
                Error::from(EndpointError::DaemonUrl {
                    origin: UrlOrigin::Flag,
                    detail,
                })
            })?;
        }
        let url = super::discover_endpoint(root, explicit_url)?;
        return Ok(Endpoint {
            url,
            csrf_token: explicit_token,
            from: match explicit_url {
                Some(_) => "--daemon-url".into(),
                None => root.join("cli.log").display().to_string(),
            },
        });
    }
    let (url, server_log) = ide_url(root)?;
    let token = match explicit_token {
        Some(t) => Some(t),
        None => match ide_logs_dir().map(|logs| main_log_token(&logs)) {
            Some(MainLogToken::Found { token, .. }) => Some(token),
            Some(MainLogToken::Refused(r)) => return Err(refused(&r.from, r.defect)),
            Some(MainLogToken::Absent { .. }) | None => None,
        },
    };
    Ok(Endpoint {
        url,
        csrf_token: token,
        from: server_log.display().to_string(),
    })
}

/// A refused token as the library's error: the place it was read and the
/// rule it breaks.
fn refused(from: &TokenSource, defect: TokenDefect) -> Error {
    let path = match from {
        TokenSource::MainLog(p) => p.clone(),
        other => PathBuf::from(other.to_string()),
    };
    Error::Corrupt {
        path,
        input: CorruptInput::CsrfToken(defect),
    }
}

pub use super::probe::{ProbeBody, ProbeFailure, ProbeReply, PROBE_MAX_BODY, PROBE_METHOD};

/// What answered at a daemon's port, when it is not agy's daemon. Its
/// `Display` is the line `doctor` prints.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Other {
    #[error("something else listens on this port: an HTML page (HTTP {status})")]
    Html { status: u16 },
    /// An answer whose body is not a JSON object (a bare HTTP error, say).
    #[error("something else listens on this port: HTTP {status} without a JSON object body (agy's daemon answers JSON)")]
    NotJson { status: u16 },
    /// An error status with a JSON object that is neither agy's error body
    /// (a string `message`) nor a Connect error (a Connect `code`).
    #[error("something else listens on this port: HTTP {status} with a JSON body that is not agy's error (no string `message`, no Connect `code`)")]
    NotAgyError { status: u16 },
    #[error("something else listens on this port: HTTP {status} with a body past {PROBE_MAX_BODY} bytes to a read-only probe")]
    TooLarge { status: u16 },
    #[error("something else listens on this port: {0}")]
    NoAnswer(ProbeFailure),
    /// An `https://` URL whose listener answers plain HTTP.
    #[error(
        "TLS mismatch: the https:// URL names a listener that answers plain HTTP; use http://"
    )]
    TlsToPlainHttp,
    /// An `https://` URL whose listener does not answer plain HTTP: this
    /// reader's client speaks no TLS, so nothing there can be checked.
    #[error("TLS mismatch: this reader's client speaks no TLS and the listener does not answer plain HTTP; pin agy's plain-HTTP port (its `... for HTTP` log line) with http://")]
    TlsUnsupported,
}

/// How one answer reads ([`classify`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listener {
    /// 2xx with a JSON object body: an answer agy's daemon could give.
    Answer { status: u16 },
    /// HTTP >= 300 with agy's JSON error body (an object whose `message` is
    /// a string) or a Connect error (an object whose `code` is a Connect
    /// code, `message` absent or a string).
    Error { status: u16 },
    /// 401/403 to a request that carried the token (body unread).
    TokenRefused { status: u16 },
    /// HTTP 415, or 400 without a Connect `code`: agy's gRPC-Web listener
    /// refusing JSON ([`super::RpcError::WrongListener`], the client's rule).
    GrpcWeb { status: u16 },
    /// Anything else.
    Other(Other),
}

/// The Connect protocol's error codes.
const CONNECT_CODES: [&str; 16] = [
    "canceled",
    "unknown",
    "invalid_argument",
    "deadline_exceeded",
    "not_found",
    "already_exists",
    "permission_denied",
    "resource_exhausted",
    "failed_precondition",
    "aborted",
    "out_of_range",
    "unimplemented",
    "internal",
    "unavailable",
    "data_loss",
    "unauthenticated",
];

/// Whether `body` is markup: an HTML document's start.
fn is_html(content_type: Option<&str>, body: &[u8]) -> bool {
    let ct_html = content_type.is_some_and(|c| {
        c.split(';')
            .next()
            .is_some_and(|m| m.trim().eq_ignore_ascii_case("text/html"))
    });
    let start = body
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(body.len());
    let head: Vec<u8> = body[start..]
        .iter()
        .take(14)
        .map(u8::to_ascii_lowercase)
        .collect();
    ct_html || head.starts_with(b"<!doctype html") || head.starts_with(b"<html")
}

/// Reads one probe answer, by the public facts' transport rules (§4.1:
/// errors are HTTP >= 300 with a JSON `{"message": ...}` body) and the
/// Connect protocol's error shape (`{"code": ..., "message"?: ...}`),
/// strictly:
///
/// * an HTML page (a `text/html` content type, or a body that opens an
///   HTML document) is something else, whatever its status;
/// * 415, or 400 without a Connect `code`, is agy's gRPC-Web port, as the
///   client judges it ([`super::RpcError::WrongListener`]);
/// * 2xx is agy's only with a body that is a JSON object;
/// * a status of 300 or more is agy's only with a JSON object whose `message`, when present,
///   is a string and whose `code`, when present, is one of the Connect
///   codes, holding at least one of the two. A JSON body with neither (`{}`,
///   `{"error": ...}`) is refused: agy's errors carry `message` (§4.1) and
///   Connect's carry `code`, and a listener that answers otherwise is not
///   shown to be agy's;
/// * the content type is not judged beyond HTML (the facts name the body,
///   not the header).
pub fn classify(reply: &ProbeReply) -> Listener {
    let status = reply.status;
    let body = match &reply.body {
        ProbeBody::Unread => return Listener::TokenRefused { status },
        ProbeBody::TooLarge => return Listener::Other(Other::TooLarge { status }),
        ProbeBody::Read(b) => b,
    };
    if is_html(reply.content_type.as_deref(), body) {
        return Listener::Other(Other::Html { status });
    }
    let object = serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(body).ok();
    let code = object
        .as_ref()
        .and_then(|o| o.get("code"))
        .and_then(serde_json::Value::as_str);
    if status == 415 || (status == 400 && code.is_none()) {
        return Listener::GrpcWeb { status };
    }
    let Some(object) = object else {
        return Listener::Other(Other::NotJson { status });
    };
    if (200..300).contains(&status) {
        return Listener::Answer { status };
    }
    let message = object.get("message");
    let code = object.get("code");
    let message_ok = message.is_none_or(serde_json::Value::is_string);
    let code_ok = code.is_none_or(|c| c.as_str().is_some_and(|c| CONNECT_CODES.contains(&c)));
    if status >= 300 && message_ok && code_ok && (message.is_some() || code.is_some()) {
        Listener::Error { status }
    } else {
        Listener::Other(Other::NotAgyError { status })
    }
}

/// What [`check_listener`] found at an endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reached {
    /// agy's daemon: the token-less answer was agy's, and so was the answer
    /// with the token when one was sent.
    Agy { token_sent: bool },
    /// 401/403 ([`super::RpcError::Unauthorized`]).
    Unauthorized(super::RpcError),
    /// agy's gRPC-Web port ([`super::RpcError::WrongListener`]).
    WrongListener(super::RpcError),
    /// Something else answered. `token_sent` only when the token-less
    /// answer was agy's and the one with the token was not.
    Other { other: Other, token_sent: bool },
    /// Nothing accepted the connection.
    Unreachable(String),
}

/// Whether agy's daemon listens at `url`, asking first without the token:
/// one token-less probe ([`PROBE_METHOD`]); only when its answer is one
/// agy's daemon could give ([`classify`]) does `token` go, in a second
/// probe whose answer must be agy's too. A 401/403 is the access error
/// (with or without the token); an `https://` URL is asked in plain HTTP at
/// its host and port (token-less), since this reader's client speaks no
/// TLS: an answer there is a TLS mismatch. The token never reaches a
/// listener whose token-less answer was not agy's.
pub fn check_listener(
    url: &str,
    token: Option<&str>,
    options: &super::ClientOptions,
) -> std::result::Result<Reached, super::RpcError> {
    let daemon = options
        .daemon_of
        .clone()
        .unwrap_or_else(|| "the daemon".to_string());
    let client = |base: &str, token: Option<&str>| {
        let opts = super::ClientOptions {
            retries: 0,
            csrf_token: token.map(str::to_string),
            ..options.clone()
        };
        super::DaemonClient::new(base, opts)
    };
    if let Some(rest) = url.strip_prefix("https://") {
        let plain = client(&format!("http://{rest}"), None)?;
        return Ok(match plain.probe_answer(false) {
            Ok(_) => Reached::Other {
                other: Other::TlsToPlainHttp,
                token_sent: false,
            },
            Err(ProbeFailure::Connect(d)) => Reached::Unreachable(d),
            Err(_) => Reached::Other {
                other: Other::TlsUnsupported,
                token_sent: false,
            },
        });
    }
    let c = client(url, token)?;
    let unauthorized = |status: u16, token_sent: bool| {
        Reached::Unauthorized(super::RpcError::Unauthorized {
            endpoint: c.endpoint().to_string(),
            method: PROBE_METHOD,
            status,
            daemon: daemon.clone(),
            token_sent,
        })
    };
    let wrong = |status: u16| {
        Reached::WrongListener(super::RpcError::WrongListener {
            endpoint: c.endpoint().to_string(),
            method: PROBE_METHOD,
            status,
            daemon: daemon.clone(),
        })
    };
    let first = match c.probe_answer(false) {
        Ok(reply) => classify(&reply),
        Err(ProbeFailure::Connect(d)) => return Ok(Reached::Unreachable(d)),
        Err(f) => {
            return Ok(Reached::Other {
                other: Other::NoAnswer(f),
                token_sent: false,
            })
        }
    };
    let status = match first {
        Listener::Answer { status } | Listener::Error { status } => status,
        Listener::GrpcWeb { status } => return Ok(wrong(status)),
        // the token was not sent: cannot happen; judged as refused access
        Listener::TokenRefused { status } => return Ok(unauthorized(status, false)),
        Listener::Other(other) => {
            return Ok(Reached::Other {
                other,
                token_sent: false,
            })
        }
    };
    if token.is_none() {
        return Ok(if matches!(status, 401 | 403) {
            unauthorized(status, false)
        } else {
            Reached::Agy { token_sent: false }
        });
    }
    Ok(match c.probe_answer(true) {
        Ok(reply) => match classify(&reply) {
            Listener::Answer { .. } | Listener::Error { .. } => Reached::Agy { token_sent: true },
            Listener::TokenRefused { status } => unauthorized(status, true),
            Listener::GrpcWeb { status } => wrong(status),
            Listener::Other(other) => Reached::Other {
                other,
                token_sent: true,
            },
        },
        Err(ProbeFailure::Connect(d)) => Reached::Unreachable(d),
        Err(f) => Reached::Other {
            other: Other::NoAnswer(f),
            token_sent: true,
        },
    })
}

/// A short dial check: whether something accepts TCP connections at the
/// endpoint's host and port (within `timeout`).
pub fn dial(url: &str, timeout: Duration) -> bool {
    let Ok(u) = reqwest::Url::parse(url) else {
        return false;
    };
    let (Some(host), Some(port)) = (u.host_str(), u.port_or_known_default()) else {
        return false;
    };
    use std::net::ToSocketAddrs;
    let Ok(addrs) = (host, port).to_socket_addrs() else {
        return false;
    };
    addrs
        .into_iter()
        .any(|a| std::net::TcpStream::connect_timeout(&a, timeout).is_ok())
}

/// How messages name a root's daemon: `the daemon of the ide root /path`.
pub fn daemon_of(root: &Path, surface: Surface) -> String {
    format!(
        "the daemon of the {} root {}",
        surface.as_str(),
        root.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_token_wins_and_lookalikes_are_passed_over() {
        let line = |t: &str| {
            format!("[2026-07-02 22:12:10.821] [info]  Spawning: /opt/ls --standalone --csrf_token {t} --app_data_dir antigravity\n")
        };
        assert_eq!(parse_csrf_token(&line("abc")), Some("abc".into()));
        let two = format!("{}other\n{}", line("old"), line("new"));
        assert_eq!(parse_csrf_token(&two), Some("new".into()));
        assert_eq!(parse_csrf_token("x --csrf_token=eq y\n"), Some("eq".into()));
        assert_eq!(parse_csrf_token("x --csrf_token_file /t\n"), None);
        assert_eq!(parse_csrf_token("x --csrf_token --next\n"), None);
        let fallback = format!("{}x --csrf_token --next\n", line("earlier"));
        assert_eq!(parse_csrf_token(&fallback), Some("earlier".into()));
        assert_eq!(parse_csrf_token(""), None);
    }

    #[test]
    fn a_token_is_plain_printable_ascii_and_bounded() {
        assert_eq!(check_token("6f1c2a9e-1b7d-4c4e-9a51-2f0c5d7e8b13"), Ok(()));
        assert_eq!(check_token("!~"), Ok(()));
        assert_eq!(check_token(&"a".repeat(MAX_TOKEN_LEN)), Ok(()));
        assert_eq!(check_token(""), Err(TokenDefect::Empty));
        assert_eq!(
            check_token(&"a".repeat(MAX_TOKEN_LEN + 1)),
            Err(TokenDefect::TooLong {
                len: MAX_TOKEN_LEN + 1
            })
        );
        for (bad, at, code) in [
            ("a b", 1, 0x20),
            ("ab\n", 2, 0x0A),
            ("\tab", 0, 0x09),
            ("a\u{7}b", 1, 0x07),
            ("a\u{7f}", 1, 0x7F),
            ("caf\u{e9}", 3, 0xE9),
            ("a\u{fffd}", 1, 0xFFFD),
        ] {
            assert_eq!(
                check_token(bad),
                Err(TokenDefect::NotPrintable { at, code }),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_pinned_url_holds_no_whitespace_or_control_character() {
        assert_eq!(
            check_url("http://127.0.0.1:4100/").as_deref(),
            Ok("http://127.0.0.1:4100")
        );
        for bad in [
            "http://127.0.0.1:4100\n",
            "http://127.0.0.1:41\n00",
            "\thttp://127.0.0.1:4100",
            " http://127.0.0.1:4100",
            "http://127.0.0.1:4100\r",
            "127.0.0.1:4100",
            "http://127.0.0.1:99999",
            "http://127.0.0.1:4100/path",
            "http://u:pw@127.0.0.1:4100",
            "ftp://127.0.0.1:4100",
        ] {
            let e = check_url(bad).unwrap_err();
            assert!(!e.contains('\n'), "{bad:?}: the message is one line: {e}");
        }
    }

    fn reply(status: u16, ct: &str, body: &str) -> ProbeReply {
        ProbeReply {
            status,
            content_type: Some(ct.into()),
            body: ProbeBody::Read(body.as_bytes().to_vec()),
        }
    }

    #[test]
    fn agy_like_answers_are_exactly_the_json_ones() {
        let json = "application/json";
        // accepted: a 2xx JSON object; >= 300 with agy's {message} or a
        // Connect error (a Connect code, message absent or a string)
        for (status, body) in [
            (200, "{}"),
            (200, r#"{"trajectory":{},"numTotalSteps":"0"}"#),
        ] {
            assert_eq!(
                classify(&reply(status, json, body)),
                Listener::Answer { status }
            );
        }
        for (status, body) in [
            (404, r#"{"message":"conversation not found"}"#),
            (
                401,
                r#"{"code":"unauthenticated","message":"missing token"}"#,
            ),
            (404, r#"{"code":"not_found"}"#),
            (500, r#"{"code":"internal","message":"x","details":[]}"#),
            (400, r#"{"code":"invalid_argument","message":"x"}"#),
            (302, r#"{"message":"moved"}"#),
        ] {
            assert_eq!(
                classify(&reply(status, "text/plain", body)),
                Listener::Error { status },
                "{status} {body}"
            );
        }
        // agy's gRPC-Web port, as the client judges it
        for (status, ct, body) in [
            (415, "text/plain", "unsupported"),
            (400, "application/grpc-web+proto", "\u{0}"),
            (400, json, r#"{"message":"no code"}"#),
        ] {
            assert_eq!(
                classify(&reply(status, ct, body)),
                Listener::GrpcWeb { status }
            );
        }
        // near misses, each named
        let other = |status: u16, ct: &str, body: &str| match classify(&reply(status, ct, body)) {
            Listener::Other(o) => o,
            l => panic!("{status} {ct} {body}: {l:?}"),
        };
        assert_eq!(
            other(200, "text/html", "{}"),
            Other::Html { status: 200 },
            "an HTML content type is a page, whatever the body"
        );
        assert_eq!(
            other(501, "text/plain", " <!DOCTYPE HTML><html>"),
            Other::Html { status: 501 }
        );
        assert_eq!(other(501, "text/plain", ""), Other::NotJson { status: 501 });
        assert_eq!(other(200, json, "[]"), Other::NotJson { status: 200 });
        assert_eq!(other(200, json, "{"), Other::NotJson { status: 200 });
        assert_eq!(
            other(404, json, "\"message\""),
            Other::NotJson { status: 404 }
        );
        for body in [
            "{}",
            r#"{"error":"not found"}"#,
            r#"{"message":404}"#,
            r#"{"message":null}"#,
            r#"{"code":"teapot","message":"x"}"#,
            r#"{"code":5}"#,
            r#"{"code":"not_found","message":7}"#,
        ] {
            assert_eq!(
                other(404, json, body),
                Other::NotAgyError { status: 404 },
                "{body}"
            );
        }
        assert_eq!(
            classify(&ProbeReply {
                status: 200,
                content_type: None,
                body: ProbeBody::TooLarge
            }),
            Listener::Other(Other::TooLarge { status: 200 })
        );
        assert_eq!(
            classify(&ProbeReply {
                status: 403,
                content_type: None,
                body: ProbeBody::Unread
            }),
            Listener::TokenRefused { status: 403 }
        );
        // the named lines doctor prints
        assert_eq!(
            Other::NotJson { status: 501 }.to_string(),
            "something else listens on this port: HTTP 501 without a JSON object body (agy's daemon answers JSON)"
        );
    }

    #[test]
    fn a_main_log_token_is_judged_where_it_is_read() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join(IDE_MAIN_LOG);
        assert_eq!(
            main_log_token(d.path()),
            MainLogToken::Absent { log: log.clone() }
        );
        std::fs::write(&log, "x --csrf_token good-1\nx --csrf_token bad\u{7}\n").unwrap();
        // the newest value is refused; the older one is never used instead
        assert_eq!(
            main_log_token(d.path()),
            MainLogToken::Refused(RefusedToken {
                from: TokenSource::MainLog(log.clone()),
                defect: TokenDefect::NotPrintable { at: 3, code: 7 },
            })
        );
        std::fs::write(&log, "x --csrf_token bad\u{7}\nx --csrf_token good-2 --y\n").unwrap();
        assert_eq!(
            main_log_token(d.path()),
            MainLogToken::Found {
                token: "good-2".into(),
                log
            }
        );
    }

    #[test]
    fn a_root_names_its_daemon() {
        assert_eq!(
            daemon_of(Path::new("/r"), Surface::Ide),
            "the daemon of the ide root /r"
        );
    }
}
