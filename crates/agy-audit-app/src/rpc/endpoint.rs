//! Finding the daemon: `--daemon-url` / `$ANTIGRAVITY_DAEMON_URL`, else the
//! newest `listening on random port at N for HTTP` line of `<root>/cli.log`
//! (never the `for HTTPS` line).

use super::error::{EndpointError, UrlOrigin};
use crate::error::{Error, Result};
use crate::util::bounded::{read_tail, BoundedReadError, InputKind};
use std::path::Path;

pub use crate::well_known::DAEMON_URL_ENV;

const MARKER: &str = "listening on random port at ";

/// The port of the newest plain-HTTP listening line in a cli.log text.
pub fn parse_cli_log(text: &str) -> Option<u16> {
    text.lines().rev().find_map(|line| {
        let at = line.find(MARKER)?;
        let rest = &line[at + MARKER.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let tail = rest[digits.len()..].trim_start();
        let proto = tail.strip_prefix("for ")?;
        let word: String = proto
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if word != "HTTP" {
            return None;
        }
        digits.parse::<u16>().ok().filter(|p| *p != 0)
    })
}

/// The daemon base URL for a store root. An explicit or environment URL is
/// validated ([`validate_endpoint`]); a malformed one is a usage error.
pub fn discover_endpoint(root: &Path, explicit: Option<&str>) -> Result<String> {
    if let Some(url) = explicit.filter(|u| !u.is_empty()) {
        return validate_endpoint(url).map_err(|detail| bad_url(UrlOrigin::Flag, detail));
    }
    if let Some(url) = std::env::var(DAEMON_URL_ENV).ok().filter(|u| !u.is_empty()) {
        return validate_endpoint(&url).map_err(|detail| bad_url(UrlOrigin::Env, detail));
    }
    let log = root.join("cli.log");
    // Read from its end, boundedly; a FIFO or device is refused, never
    // waited on (util::bounded).
    let text = match read_tail(&log, InputKind::Log).map_err(BoundedReadError::into_io) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(EndpointError::NoCliLog { log }.into())
        }
        Err(e) => return Err(Error::io(&log, e)),
    };
    let port = parse_cli_log(&String::from_utf8_lossy(&text))
        .ok_or_else(|| EndpointError::NoPortLine { log: log.clone() })?;
    Ok(format!("http://127.0.0.1:{port}"))
}

fn bad_url(origin: UrlOrigin, detail: String) -> Error {
    EndpointError::DaemonUrl { origin, detail }.into()
}

/// The most `--daemon-url` may be: `http://` or `https://`, a host, an
/// optional port, nothing else (no credentials, path, query or fragment).
///
/// Returns the base URL without a trailing slash.
pub fn validate_endpoint(url: &str) -> Result<String, String> {
    // the URL parser drops a newline or a tab silently: refused here, so
    // every caller (sync, doctor, watch, audit-sweep) refuses it
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "`{}`: the daemon URL holds whitespace or a control character",
            crate::util::term::visible(url)
        ));
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_with_whitespace_or_a_control_character_is_refused() {
        assert!(validate_endpoint("http://127.0.0.1:4100").is_ok());
        for bad in [
            "http://127.0.0.1:4100\n",
            "http://127.0.\t0.1:4100",
            " http://127.0.0.1:1",
        ] {
            let e = validate_endpoint(bad).unwrap_err();
            assert!(e.contains("whitespace or a control character"), "{e}");
            assert!(!e.contains('\n') && !e.contains('\t'), "{e}");
        }
    }

    #[test]
    fn newest_http_line_wins_and_https_is_ignored() {
        let log = "I 10:00 listening on random port at 4100 for HTTP\n\
                   I 10:05 listening on random port at 4200 for HTTP\n\
                   I 10:05 listening on random port at 4300 for HTTPS (gRPC)\n";
        assert_eq!(parse_cli_log(log), Some(4200));
        assert_eq!(
            parse_cli_log("listening on random port at 4300 for HTTPS\n"),
            None
        );
        assert_eq!(parse_cli_log("nothing here"), None);
    }

    #[test]
    fn a_malformed_url_is_a_usage_error_and_a_missing_log_names_the_flag() {
        let d = tempfile::tempdir().unwrap();
        for bad in [
            "not a url",
            "ftp://127.0.0.1:1",
            "http://127.0.0.1:1/x?y",
            "http://u:p@h:1",
        ] {
            let e = discover_endpoint(d.path(), Some(bad)).unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::Endpoint(EndpointError::DaemonUrl {
                        origin: UrlOrigin::Flag,
                        ..
                    })
                ),
                "{bad}: {e}"
            );
            assert!(e.to_string().starts_with("--daemon-url: "), "{e}");
        }
        assert_eq!(
            discover_endpoint(d.path(), Some("http://127.0.0.1:4100/")).unwrap(),
            "http://127.0.0.1:4100"
        );
        if std::env::var_os(DAEMON_URL_ENV).is_none() {
            let e = discover_endpoint(d.path(), None).unwrap_err().to_string();
            assert!(e.contains("--daemon-url") && e.contains("cli.log"), "{e}");
            assert!(!e.contains("os error"), "{e}");
        }
    }
}
