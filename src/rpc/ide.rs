//! Finding a root's daemon and its CSRF token, for both surfaces.
//!
//! * CLI root: the newest `... for HTTP` line of `<root>/cli.log`
//!   ([`super::parse_cli_log`]); no token (the CLI daemon is launched
//!   without one and must not get the header).
//! * IDE root: the same port line in the IDE language server's
//!   `language_server.log`, and the token from the newest `--csrf_token`
//!   (`--csrf_token T` or `--csrf_token=T`) in the IDE's `main.log`, both in
//!   the IDE's log folder ([`ide_logs_dir`]).
//!
//! An explicit URL (`--daemon-url`, `$ANTIGRAVITY_DAEMON_URL`) or token
//! (`--csrf-token`, `$ANTIGRAVITY_CSRF_TOKEN`) wins over what the logs say.

use crate::error::{Error, Result, UsageError};
use crate::roots::Surface;
use crate::util::bounded::{read_tail, InputKind};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The IDE language server's log (port lines).
pub const IDE_SERVER_LOG: &str = "language_server.log";
/// The IDE's main log (the language server's spawn line with its token).
pub const IDE_MAIN_LOG: &str = "main.log";

/// The IDE's log folder: on Linux `$XDG_CONFIG_HOME/Antigravity/logs`
/// (default `~/.config`), on macOS `~/Library/Application
/// Support/Antigravity/logs`, on Windows `%APPDATA%\Antigravity\logs`.
pub fn ide_logs_dir() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = if cfg!(windows) {
        env("APPDATA")?
    } else if cfg!(target_os = "macos") {
        env("HOME")?.join("Library").join("Application Support")
    } else {
        env("XDG_CONFIG_HOME").or_else(|| env("HOME").map(|h| h.join(".config")))?
    };
    Some(base.join("Antigravity").join("logs"))
}

/// The newest `--csrf_token` value in a main.log text: the flag followed by
/// a space or `=` and a value not starting with `-` (a longer flag sharing
/// the prefix, or a flag without a value, is passed over).
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

/// The endpoint of `root` of `surface`: `explicit_url` and `explicit_token`
/// win; else the logs of the surface. A missing log or one without a port
/// line is a usage error naming the file.
pub fn endpoint_for(
    root: &Path,
    surface: Surface,
    explicit_url: Option<&str>,
    explicit_token: Option<&str>,
) -> Result<Endpoint> {
    let explicit_token = explicit_token.filter(|t| !t.is_empty()).map(str::to_string);
    if surface == Surface::Cli || explicit_url.is_some_and(|u| !u.is_empty()) {
        let url = super::discover_endpoint(root, explicit_url)?;
        return Ok(Endpoint {
            url,
            csrf_token: explicit_token,
            from: match explicit_url.filter(|u| !u.is_empty()) {
                Some(_) => "--daemon-url".into(),
                None => root.join("cli.log").display().to_string(),
            },
        });
    }
    let logs = ide_logs_dir().ok_or_else(|| {
        Error::Usage(UsageError::IdeLogsUnknown {
            root: root.to_path_buf(),
        })
    })?;
    let server_log = logs.join(IDE_SERVER_LOG);
    let text = read_tail(&server_log, InputKind::Log).map_err(|e| {
        let e = e.into_io();
        Error::Usage(UsageError::IdeServerLog {
            log: server_log.clone(),
            root: root.to_path_buf(),
            source: e,
        })
    })?;
    let port = super::parse_cli_log(&String::from_utf8_lossy(&text)).ok_or_else(|| {
        Error::Usage(UsageError::IdePortLine {
            log: server_log.clone(),
        })
    })?;
    let token = explicit_token.or_else(|| {
        read_tail(&logs.join(IDE_MAIN_LOG), InputKind::Log)
            .ok()
            .and_then(|t| parse_csrf_token(&String::from_utf8_lossy(&t)))
    });
    Ok(Endpoint {
        url: format!("http://127.0.0.1:{port}"),
        csrf_token: token,
        from: server_log.display().to_string(),
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
    fn a_root_names_its_daemon() {
        assert_eq!(
            daemon_of(Path::new("/r"), Surface::Ide),
            "the daemon of the ide root /r"
        );
    }
}
