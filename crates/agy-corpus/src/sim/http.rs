//! The HTTP/1.1 server under the simulated daemon: one thread per accepted
//! connection, keep-alive, `Content-Length` bodies, nothing else.
//!
//! Why not a general server crate: the simulated daemon must answer *every*
//! request on *every* keep-alive connection (tiny_http 0.12's task pool can
//! leave a freshly accepted connection queued behind long-lived ones, so a
//! request on it is never answered), and its faults need to close, cut or
//! stall one connection on purpose. Both are simple with the socket in hand.
//!
//! Bounds: a request head (request line and headers) of at most
//! [`MAX_HEAD`] bytes and [`MAX_HEADERS`] headers; a body of at most the
//! server's `max_body` bytes, announced by `Content-Length` (a chunked
//! request body is refused); at most `max_connections` open connections
//! (one more is answered 503 and closed). A malformed request is answered
//! with a Connect-style JSON error and the connection is closed.
//!
//! [`HttpServer::stop`] (or drop) stops accepting, shuts every open
//! connection down and joins every thread it started.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Largest request head (request line and headers), bytes.
pub const MAX_HEAD: usize = 64 << 10;
/// Most headers in one request.
pub const MAX_HEADERS: usize = 100;

/// One parsed request.
#[derive(Debug, Clone)]
pub struct Request {
    /// `POST`, `GET`, ... as sent.
    pub method: String,
    /// The request target, as sent (`/service/Method`).
    pub path: String,
    /// Header names and values, in order, names as sent.
    pub headers: Vec<(String, String)>,
    /// The body (`Content-Length` bytes).
    pub body: Vec<u8>,
    /// The client's address.
    pub peer: Option<SocketAddr>,
    keep_alive: bool,
}

impl Request {
    /// The first header named `name` (ASCII case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What a handler answers.
pub enum Reply {
    /// A JSON body with its length announced.
    Json {
        /// HTTP status.
        status: u16,
        /// The body.
        body: Vec<u8>,
    },
    /// A JSON body of `len` bytes produced by a reader.
    Stream {
        /// HTTP status.
        status: u16,
        /// The announced and produced length.
        len: u64,
        /// The body.
        body: Box<dyn Read + Send>,
    },
    /// Close the connection without answering.
    Reset,
    /// Announce `body.len()` bytes with status 200, send the first `sent`
    /// of them, then close the connection.
    Truncated {
        /// The whole body.
        body: Vec<u8>,
        /// How many bytes are sent.
        sent: usize,
    },
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reply::Json { status, body } => write!(f, "Json({status}, {} bytes)", body.len()),
            Reply::Stream { status, len, .. } => write!(f, "Stream({status}, {len} bytes)"),
            Reply::Reset => write!(f, "Reset"),
            Reply::Truncated { body, sent } => write!(f, "Truncated({sent}/{})", body.len()),
        }
    }
}

/// A request handler shared by every connection thread.
pub type Handler = Arc<dyn Fn(&Request) -> Reply + Send + Sync>;

/// Why a request could not be read; answered, then the connection closes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum BadRequest {
    /// (status, Connect code, message)
    Reply(u16, &'static str, String),
    /// The connection ended or failed: nothing to answer.
    Gone,
}

/// Server limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest request body, bytes.
    pub max_body: u64,
    /// Most connections open at once.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body: 1 << 20,
            max_connections: 512,
        }
    }
}

struct State {
    stopping: AtomicBool,
    next_id: AtomicU64,
    /// A clone of every open connection's socket, to shut it down on stop.
    open: Mutex<HashMap<u64, TcpStream>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    limits: Limits,
    handler: Handler,
}

/// A running server on 127.0.0.1.
pub struct HttpServer {
    addr: SocketAddr,
    state: Arc<State>,
    accept: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("addr", &self.addr)
            .finish()
    }
}

impl HttpServer {
    /// Binds 127.0.0.1:`port` (0: an ephemeral port) and starts accepting.
    pub fn start(port: u16, limits: Limits, handler: Handler) -> std::io::Result<HttpServer> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            stopping: AtomicBool::new(false),
            next_id: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
            threads: Mutex::new(Vec::new()),
            limits,
            handler,
        });
        let st = Arc::clone(&state);
        let accept = std::thread::Builder::new()
            .name("daemon-sim-accept".into())
            .spawn(move || accept_loop(&listener, &st))?;
        Ok(HttpServer {
            addr,
            state,
            accept: Some(accept),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, shuts every connection down, joins every thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let Some(accept) = self.accept.take() else {
            return;
        };
        self.state.stopping.store(true, Ordering::SeqCst);
        // wake the blocking accept(); it sees `stopping` and returns
        let _ = TcpStream::connect(self.addr);
        let _ = accept.join();
        if let Ok(open) = self.state.open.lock() {
            for s in open.values() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
        let threads = self
            .state
            .threads
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        for t in threads {
            let _ = t.join();
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn accept_loop(listener: &TcpListener, st: &Arc<State>) {
    for conn in listener.incoming() {
        if st.stopping.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = conn else { continue };
        let _ = stream.set_nodelay(true);
        let id = st.next_id.fetch_add(1, Ordering::SeqCst);
        let too_many = match (st.open.lock(), stream.try_clone()) {
            (Ok(mut open), Ok(clone)) => {
                if open.len() >= st.limits.max_connections {
                    true
                } else {
                    open.insert(id, clone);
                    false
                }
            }
            _ => true,
        };
        if too_many {
            let mut s = stream;
            let _ = write_reply(
                &mut s,
                error_reply(503, "unavailable", "too many connections".into()),
                false,
            );
            let _ = s.shutdown(Shutdown::Both);
            continue;
        }
        let st2 = Arc::clone(st);
        let spawned = std::thread::Builder::new()
            .name(format!("daemon-sim-conn-{id}"))
            .spawn(move || {
                serve_connection(stream, &st2);
                if let Ok(mut open) = st2.open.lock() {
                    open.remove(&id);
                }
            });
        match spawned {
            Ok(h) => {
                if let Ok(mut t) = st.threads.lock() {
                    t.retain(|h| !h.is_finished());
                    t.push(h);
                }
            }
            Err(_) => {
                if let Ok(mut open) = st.open.lock() {
                    if let Some(s) = open.remove(&id) {
                        let _ = s.shutdown(Shutdown::Both);
                    }
                }
            }
        }
    }
}

fn serve_connection(stream: TcpStream, st: &State) {
    let peer = stream.peer_addr().ok();
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut writer = stream;
    loop {
        let req = match read_request(&mut reader, st.limits.max_body, peer) {
            Ok(Some(r)) => r,
            Ok(None) | Err(BadRequest::Gone) => break,
            Err(BadRequest::Reply(status, code, message)) => {
                let _ = write_reply(&mut writer, error_reply(status, code, message), false);
                break;
            }
        };
        if st.stopping.load(Ordering::SeqCst) {
            break;
        }
        let reply = (st.handler)(&req);
        let keep = req.keep_alive && !st.stopping.load(Ordering::SeqCst);
        match write_reply(&mut writer, reply, keep) {
            Ok(true) => {}
            _ => break,
        }
    }
    let _ = writer.shutdown(Shutdown::Both);
}

fn error_reply(status: u16, code: &str, message: String) -> Reply {
    Reply::Json {
        status,
        body: serde_json::json!({"code": code, "message": message})
            .to_string()
            .into_bytes(),
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

fn head(status: u16, len: u64, keep: bool) -> String {
    format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {len}\r\nConnection: {}\r\n\r\n",
        reason(status),
        if keep { "keep-alive" } else { "close" }
    )
}

/// Writes a reply; `Ok(true)` when the connection may carry another request.
fn write_reply(w: &mut TcpStream, reply: Reply, keep: bool) -> std::io::Result<bool> {
    match reply {
        Reply::Json { status, body } => {
            let mut out = head(status, body.len() as u64, keep).into_bytes();
            out.extend_from_slice(&body);
            w.write_all(&out)?;
            w.flush()?;
            Ok(keep)
        }
        Reply::Stream { status, len, body } => {
            w.write_all(head(status, len, keep).as_bytes())?;
            let mut out = std::io::BufWriter::with_capacity(64 << 10, &mut *w);
            let sent = std::io::copy(&mut body.take(len), &mut out)?;
            out.flush()?;
            // a short reader leaves the announced length unmet: close
            Ok(keep && sent == len)
        }
        Reply::Reset => {
            let _ = w.shutdown(Shutdown::Both);
            Ok(false)
        }
        Reply::Truncated { body, sent } => {
            w.write_all(head(200, body.len() as u64, false).as_bytes())?;
            w.write_all(&body[..sent.min(body.len())])?;
            w.flush()?;
            let _ = w.shutdown(Shutdown::Both);
            Ok(false)
        }
    }
}

/// Reads one line ending in CRLF (or LF) into `buf`, counting it against
/// `budget`. `Ok(false)`: the connection ended before any byte.
fn read_line(
    r: &mut BufReader<TcpStream>,
    buf: &mut Vec<u8>,
    budget: &mut usize,
) -> Result<bool, BadRequest> {
    buf.clear();
    let n = r
        .by_ref()
        .take(*budget as u64 + 1)
        .read_until(b'\n', buf)
        .map_err(|_| BadRequest::Gone)?;
    if n == 0 {
        return Ok(false);
    }
    if n > *budget {
        return Err(BadRequest::Reply(
            431,
            "invalid_argument",
            format!("request head larger than {MAX_HEAD} bytes"),
        ));
    }
    *budget -= n;
    if buf.last() != Some(&b'\n') {
        return Err(BadRequest::Gone);
    }
    buf.pop();
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(true)
}

fn bad(message: impl Into<String>) -> BadRequest {
    BadRequest::Reply(400, "invalid_argument", message.into())
}

/// Reads one request; `Ok(None)` when the client closed an idle connection.
fn read_request(
    r: &mut BufReader<TcpStream>,
    max_body: u64,
    peer: Option<SocketAddr>,
) -> Result<Option<Request>, BadRequest> {
    let mut budget = MAX_HEAD;
    let mut line = Vec::new();
    // tolerate blank lines before a request line (RFC 9112 §2.2)
    loop {
        if !read_line(r, &mut line, &mut budget)? {
            return Ok(None);
        }
        if !line.is_empty() {
            break;
        }
    }
    let text = std::str::from_utf8(&line).map_err(|_| bad("request line is not UTF-8"))?;
    let mut parts = text.split(' ');
    let (Some(method), Some(path), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad(format!("malformed request line `{text}`")));
    };
    let http11 = match version {
        "HTTP/1.1" => true,
        "HTTP/1.0" => false,
        v => {
            return Err(BadRequest::Reply(
                505,
                "invalid_argument",
                format!("unsupported HTTP version `{v}`"),
            ))
        }
    };
    let (method, path) = (method.to_string(), path.to_string());
    let mut headers = Vec::new();
    loop {
        if !read_line(r, &mut line, &mut budget)? {
            return Err(BadRequest::Gone);
        }
        if line.is_empty() {
            break;
        }
        if headers.len() >= MAX_HEADERS {
            return Err(BadRequest::Reply(
                431,
                "invalid_argument",
                format!("more than {MAX_HEADERS} headers"),
            ));
        }
        let text = std::str::from_utf8(&line).map_err(|_| bad("a header is not UTF-8"))?;
        let Some((name, value)) = text.split_once(':') else {
            return Err(bad(format!("malformed header `{text}`")));
        };
        if name.is_empty() || name.bytes().any(|b| b == b' ' || b == b'\t') {
            return Err(bad(format!("malformed header name `{name}`")));
        }
        headers.push((name.to_string(), value.trim().to_string()));
    }
    let find = |n: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(n))
            .map(|(_, v)| v.as_str())
    };
    if find("transfer-encoding").is_some() {
        return Err(BadRequest::Reply(
            411,
            "invalid_argument",
            "chunked request bodies are not supported; send Content-Length".into(),
        ));
    }
    let lengths: Vec<&str> = headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.as_str())
        .collect();
    let len = match lengths.as_slice() {
        [] => 0,
        [one] => one
            .parse::<u64>()
            .map_err(|_| bad(format!("invalid Content-Length `{one}`")))?,
        _ => return Err(bad("more than one Content-Length")),
    };
    if len > max_body {
        return Err(BadRequest::Reply(
            413,
            "invalid_argument",
            format!("request body larger than {max_body} bytes"),
        ));
    }
    let mut body = vec![0u8; len as usize];
    r.read_exact(&mut body).map_err(|_| BadRequest::Gone)?;
    let conn = find("connection").map(str::to_ascii_lowercase);
    let keep_alive = match conn.as_deref() {
        Some(c) if c.split(',').any(|t| t.trim() == "close") => false,
        Some(c) if c.split(',').any(|t| t.trim() == "keep-alive") => true,
        _ => http11,
    };
    Ok(Some(Request {
        method,
        path,
        headers,
        body,
        peer,
        keep_alive,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn echo() -> HttpServer {
        let handler: Handler = Arc::new(|req: &Request| Reply::Json {
            status: 200,
            body: format!("{{\"path\":\"{}\",\"len\":{}}}", req.path, req.body.len()).into_bytes(),
        });
        HttpServer::start(
            0,
            Limits {
                max_body: 64,
                max_connections: 4,
            },
            handler,
        )
        .unwrap()
    }

    fn connect(s: &HttpServer) -> TcpStream {
        let c = TcpStream::connect(s.addr()).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c
    }

    /// Everything the server sends until it closes the connection.
    fn exchange(s: &HttpServer, raw: &[u8]) -> String {
        let mut c = connect(s);
        c.write_all(raw).unwrap();
        let mut out = Vec::new();
        let _ = c.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    fn post(body: &str, extra: &str) -> String {
        format!(
            "POST /svc/M HTTP/1.1\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
    }

    #[test]
    fn keep_alive_serves_several_requests_on_one_connection() {
        let s = echo();
        let mut c = connect(&s);
        let mut r = BufReader::new(c.try_clone().unwrap());
        for body in ["{}", "{\"a\":1}", ""] {
            c.write_all(post(body, "").as_bytes()).unwrap();
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            assert_eq!(line, "HTTP/1.1 200 OK\r\n");
            let mut len = 0;
            loop {
                line.clear();
                r.read_line(&mut line).unwrap();
                if line == "\r\n" {
                    break;
                }
                if let Some(v) = line.strip_prefix("Content-Length: ") {
                    len = v.trim().parse().unwrap();
                }
                if line.starts_with("Connection:") {
                    assert_eq!(line, "Connection: keep-alive\r\n");
                }
            }
            let mut b = vec![0; len];
            r.read_exact(&mut b).unwrap();
            assert_eq!(
                String::from_utf8(b).unwrap(),
                format!("{{\"path\":\"/svc/M\",\"len\":{}}}", body.len())
            );
        }
    }

    #[test]
    fn connection_close_and_http_1_0_end_the_connection() {
        let s = echo();
        let out = exchange(&s, post("{}", "Connection: close\r\n").as_bytes());
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
        assert!(out.contains("Connection: close\r\n"), "{out}");
        let old = post("{}", "").replacen("HTTP/1.1", "HTTP/1.0", 1);
        let out = exchange(&s, old.as_bytes());
        assert!(out.contains("Connection: close\r\n"), "{out}");
    }

    #[test]
    fn malformed_requests_are_answered_and_closed() {
        let s = echo();
        let cases: [(&[u8], &str, &str); 7] = [
            (b"POST /x\r\n\r\n", "400", "malformed request line"),
            (
                b"POST /x HTTP/2.0\r\n\r\n",
                "505",
                "unsupported HTTP version",
            ),
            (
                b"POST /x HTTP/1.1\r\nno-colon\r\n\r\n",
                "400",
                "malformed header",
            ),
            (
                b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                "411",
                "chunked request bodies",
            ),
            (
                b"POST /x HTTP/1.1\r\nContent-Length: 65\r\n\r\n",
                "413",
                "larger than 64 bytes",
            ),
            (
                b"POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
                "400",
                "more than one Content-Length",
            ),
            (
                b"POST /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
                "400",
                "invalid Content-Length",
            ),
        ];
        for (raw, status, msg) in cases {
            let out = exchange(&s, raw);
            assert!(
                out.starts_with(&format!("HTTP/1.1 {status} ")),
                "{status}: {out}"
            );
            assert!(out.contains(msg), "{msg}: {out}");
            assert!(out.contains("Connection: close"), "{out}");
        }
    }

    #[test]
    fn an_oversized_head_is_refused() {
        let s = echo();
        let mut raw = b"POST /x HTTP/1.1\r\nX-Big: ".to_vec();
        raw.extend(std::iter::repeat_n(b'a', MAX_HEAD));
        raw.extend_from_slice(b"\r\n\r\n");
        let out = exchange(&s, &raw);
        assert!(out.starts_with("HTTP/1.1 431 "), "{out}");
        let mut raw = b"POST /x HTTP/1.1\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            raw.extend_from_slice(format!("X-{i}: 1\r\n").as_bytes());
        }
        raw.extend_from_slice(b"\r\n");
        let out = exchange(&s, &raw);
        assert!(out.contains("more than 100 headers"), "{out}");
    }

    #[test]
    fn connections_beyond_the_limit_get_503() {
        let s = echo();
        let held: Vec<TcpStream> = (0..4).map(|_| connect(&s)).collect();
        // let the accept loop register the four
        std::thread::sleep(Duration::from_millis(100));
        let out = exchange(&s, post("{}", "").as_bytes());
        assert!(out.starts_with("HTTP/1.1 503 "), "{out}");
        drop(held);
    }

    #[test]
    fn reset_truncated_and_stream_replies() {
        let handler: Handler = Arc::new(|req: &Request| match req.path.as_str() {
            "/reset" => Reply::Reset,
            "/cut" => Reply::Truncated {
                body: b"0123456789".to_vec(),
                sent: 4,
            },
            _ => Reply::Stream {
                status: 200,
                len: 5,
                body: Box::new(&b"abcdefgh"[..]),
            },
        });
        let s = HttpServer::start(0, Limits::default(), handler).unwrap();
        let out = exchange(&s, b"POST /reset HTTP/1.1\r\n\r\n");
        assert_eq!(out, "");
        let out = exchange(&s, b"POST /cut HTTP/1.1\r\n\r\n");
        assert!(out.contains("Content-Length: 10\r\n"), "{out}");
        assert!(out.ends_with("\r\n\r\n0123"), "{out}");
        let out = exchange(&s, b"POST /s HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert!(out.contains("Content-Length: 5\r\n"), "{out}");
        assert!(out.ends_with("\r\n\r\nabcde"), "{out}");
    }

    #[test]
    fn stop_closes_idle_connections_and_joins_threads() {
        let s = echo();
        let mut c = connect(&s);
        c.write_all(post("{}", "").as_bytes()).unwrap();
        let mut buf = [0u8; 15];
        c.read_exact(&mut buf).unwrap();
        s.stop();
        let mut rest = Vec::new();
        // the server closed its side: the read ends instead of timing out
        let r = c.read_to_end(&mut rest);
        assert!(r.is_ok() || r.is_err_and(|e| e.kind() != std::io::ErrorKind::WouldBlock));
    }
}
