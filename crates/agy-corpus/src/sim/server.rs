//! The HTTP/1.1 server under the simulated daemon, on hyper 1.x (its
//! `server` and `http1` features) and a tokio runtime the server owns.
//!
//! hyper parses requests and writes answers; what it does not do is here:
//!
//! * **Every request on every keep-alive connection is answered**: each
//!   accepted connection is its own task, and each handler call runs on
//!   tokio's blocking pool (a handler may sleep: latency, jitter, hang), whose
//!   size is the connection bound, so no request ever waits behind another
//!   connection's. (tiny_http 0.12's task pool could leave a freshly accepted
//!   connection queued behind long-lived ones.)
//! * **Planned faults** that no server does by itself: [`Reply::Reset`]
//!   closes the connection without answering (the service fails, and hyper
//!   drops the connection); [`Reply::Truncated`] announces the whole length,
//!   sends part of it and closes: the connection's I/O is wrapped
//!   ([`CutIo`]) so that the close happens only after hyper has flushed the
//!   part, so a client always sees exactly `sent` bytes of the body.
//! * **Bounds**: a request head of about [`MAX_HEAD`] bytes (hyper answers
//!   431 beyond) and [`MAX_HEADERS`] headers; a body of at most the server's
//!   `max_body` bytes, announced by `Content-Length` (413 beyond; a chunked
//!   request body is refused with 411); at most `max_connections` open
//!   connections (one more is answered 503 and closed). A request hyper
//!   cannot parse is answered by hyper (400, 431 or 505) and closed; the
//!   refusals made here are Connect-style JSON errors, then close.
//! * **Shutdown**: [`HttpServer::stop`] (or drop) stops accepting, asks every
//!   connection to shut down gracefully (an idle keep-alive connection closes
//!   at once, a request in flight is finished, for at most [`GRACE`]), waits
//!   for every connection task and then drops the runtime, which joins every
//!   thread the server started (workers and blocking pool).

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::header::{HeaderValue, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, TRANSFER_ENCODING};
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

/// Largest request head (request line and headers), bytes: hyper's read
/// buffer bound, checked before each read, so a head is refused (431) once
/// it exceeds this by at most one read's worth.
pub const MAX_HEAD: usize = 64 << 10;
/// Most headers in one request.
pub const MAX_HEADERS: usize = 100;
/// How long a request in flight may still take once the server stops.
pub const GRACE: Duration = Duration::from_secs(2);

/// One request, its body read whole.
#[derive(Debug, Clone)]
pub struct Request {
    /// `POST`, `GET`, ... as sent.
    pub method: String,
    /// The request target, as sent (`/service/Method`).
    pub path: String,
    /// Header names (lowercase) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body (`Content-Length` bytes).
    pub body: Vec<u8>,
    /// The client's address.
    pub peer: Option<SocketAddr>,
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
    /// A JSON body of `len` bytes produced by a reader (a short reader
    /// leaves the announced length unmet: the connection is closed).
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

/// A request handler shared by every connection (called on the blocking
/// pool: it may sleep).
pub type Handler = Arc<dyn Fn(&Request) -> Reply + Send + Sync>;

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
    open: AtomicUsize,
    limits: Limits,
    handler: Handler,
}

/// A running server on 127.0.0.1.
pub struct HttpServer {
    addr: SocketAddr,
    state: Arc<State>,
    stop_tx: watch::Sender<bool>,
    runtime: Option<tokio::runtime::Runtime>,
    accept: Option<tokio::task::JoinHandle<()>>,
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
    ///
    /// Must not be called, stopped or dropped from inside an async runtime
    /// (the server owns and drops its own).
    pub fn start(port: u16, limits: Limits, handler: Handler) -> std::io::Result<HttpServer> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let limits = Limits {
            max_body: limits.max_body,
            max_connections: limits.max_connections.max(1),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            // one handler call per connection at most (HTTP/1.1 answers in
            // order), so a pool of this size never makes a request wait
            .max_blocking_threads(limits.max_connections + 1)
            .thread_name("daemon-sim")
            .enable_all()
            .build()?;
        let state = Arc::new(State {
            stopping: AtomicBool::new(false),
            open: AtomicUsize::new(0),
            limits,
            handler,
        });
        let (stop_tx, stop_rx) = watch::channel(false);
        let listener = {
            let _guard = runtime.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let accept = runtime.spawn(accept_loop(listener, Arc::clone(&state), stop_rx));
        Ok(HttpServer {
            addr,
            state,
            stop_tx,
            runtime: Some(runtime),
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
        let Some(runtime) = self.runtime.take() else {
            return;
        };
        self.state.stopping.store(true, Ordering::SeqCst);
        let _ = self.stop_tx.send(true);
        if let Some(accept) = self.accept.take() {
            // the accept task returns once every connection task has ended
            let _ = runtime.block_on(accept);
        }
        // joins the workers and the blocking pool
        drop(runtime);
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// `fut`'s output, or `None` once the server stops.
async fn or_stop<F: Future>(fut: F, stop: &mut watch::Receiver<bool>) -> Option<F::Output> {
    let mut fut = pin!(fut);
    let mut stopped = pin!(stop.wait_for(|s| *s));
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        if stopped.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await
}

/// Decrements the open-connection count when a connection task ends.
struct OpenGuard(Arc<State>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    st: Arc<State>,
    mut stop: watch::Receiver<bool>,
) {
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        while tasks.try_join_next().is_some() {}
        let Some(accepted) = or_stop(listener.accept(), &mut stop).await else {
            break;
        };
        let Ok((stream, peer)) = accepted else {
            // e.g. EMFILE: let a connection end before trying again
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        if st.open.load(Ordering::SeqCst) >= st.limits.max_connections {
            tasks.spawn(refuse(stream));
            continue;
        }
        st.open.fetch_add(1, Ordering::SeqCst);
        let guard = OpenGuard(Arc::clone(&st));
        tasks.spawn(serve_connection(stream, peer, guard, stop.clone()));
    }
    drop(listener);
    while tasks.join_next().await.is_some() {}
}

/// One connection beyond the bound: 503 and close, without reading.
async fn refuse(mut stream: tokio::net::TcpStream) {
    let body = error_body("unavailable", "too many connections");
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(&body).await;
    let _ = stream.shutdown().await;
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    guard: OpenGuard,
    mut stop: watch::Receiver<bool>,
) {
    let st = Arc::clone(&guard.0);
    let cut = Arc::new(AtomicBool::new(false));
    let io = CutIo {
        inner: TokioIo::new(stream),
        cut: Arc::clone(&cut),
    };
    let service = hyper::service::service_fn(move |req| {
        respond(req, Arc::clone(&st), peer, Arc::clone(&cut))
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .keep_alive(true)
        .max_buf_size(MAX_HEAD)
        .max_headers(MAX_HEADERS);
    let mut conn = pin!(builder.serve_connection(io, service));
    if or_stop(conn.as_mut(), &mut stop).await.is_none() {
        conn.as_mut().graceful_shutdown();
        let _ = tokio::time::timeout(GRACE, conn).await;
    }
    drop(guard);
}

/// The service's failure: hyper closes the connection without answering.
#[derive(Debug)]
struct Closed;

impl std::fmt::Display for Closed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection closed without an answer")
    }
}

impl std::error::Error for Closed {}

fn error_body(code: &str, message: &str) -> Vec<u8> {
    serde_json::json!({"code": code, "message": message})
        .to_string()
        .into_bytes()
}

fn response(status: u16, body: Body, close: bool) -> hyper::Response<Body> {
    let mut r = hyper::Response::new(body);
    *r.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if close {
        h.insert(CONNECTION, HeaderValue::from_static("close"));
    }
    r
}

/// A refusal made here: a Connect-style JSON error, then close.
fn refusal(status: u16, code: &str, message: &str) -> hyper::Response<Body> {
    let body = Body::Full(Some(Bytes::from(error_body(code, message))));
    response(status, body, true)
}

async fn respond(
    req: hyper::Request<Incoming>,
    st: Arc<State>,
    peer: SocketAddr,
    cut: Arc<AtomicBool>,
) -> Result<hyper::Response<Body>, Closed> {
    if st.stopping.load(Ordering::SeqCst) {
        return Err(Closed);
    }
    if req.headers().contains_key(TRANSFER_ENCODING) {
        return Ok(refusal(
            411,
            "invalid_argument",
            "chunked request bodies are not supported; send Content-Length",
        ));
    }
    // hyper has checked Content-Length (one value, a number)
    let len = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    let max_body = st.limits.max_body;
    if len > max_body {
        return Ok(refusal(
            413,
            "invalid_argument",
            &format!("request body larger than {max_body} bytes"),
        ));
    }
    let (parts, body) = req.into_parts();
    let body = http_body_util::Limited::new(body, max_body as usize)
        .collect()
        .await
        .map_err(|_| Closed)?
        .to_bytes();
    let request = Request {
        method: parts.method.as_str().to_string(),
        path: parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.to_string(), |p| p.as_str().to_string()),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).trim().to_string(),
                )
            })
            .collect(),
        body: body.to_vec(),
        peer: Some(peer),
    };
    let handler = Arc::clone(&st.handler);
    let reply = tokio::task::spawn_blocking(move || handler(&request))
        .await
        .map_err(|_| Closed)?;
    let close = st.stopping.load(Ordering::SeqCst);
    Ok(match reply {
        Reply::Json { status, body } => {
            response(status, Body::Full(Some(Bytes::from(body))), close)
        }
        Reply::Stream { status, len, body } => response(
            status,
            Body::Stream {
                reader: body,
                remaining: len,
            },
            close,
        ),
        Reply::Reset => return Err(Closed),
        Reply::Truncated { body, sent } => {
            let whole = body.len();
            let mut part = body;
            part.truncate(sent.min(whole));
            let mut r = response(
                200,
                Body::Cut {
                    part: Some(Bytes::from(part)),
                    cut,
                },
                true,
            );
            r.headers_mut()
                .insert(CONTENT_LENGTH, HeaderValue::from(whole));
            r
        }
    })
}

/// An answer's body.
enum Body {
    /// All of it at once.
    Full(Option<Bytes>),
    /// `remaining` bytes read from `reader` in chunks.
    Stream {
        reader: Box<dyn Read + Send>,
        remaining: u64,
    },
    /// The part a truncated answer sends; its length is announced by a
    /// header, and once the part is handed over the connection is marked to
    /// close after its next flush ([`CutIo`]).
    Cut {
        part: Option<Bytes>,
        cut: Arc<AtomicBool>,
    },
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        match self.get_mut() {
            Body::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Body::Stream { reader, remaining } => {
                if *remaining == 0 {
                    return Poll::Ready(None);
                }
                let n = (*remaining).min(64 << 10) as usize;
                let mut buf = vec![0u8; n];
                match reader.read(&mut buf) {
                    // short: hyper sees the announced length unmet and closes
                    Ok(0) => Poll::Ready(None),
                    Ok(k) => {
                        buf.truncate(k);
                        *remaining -= k as u64;
                        Poll::Ready(Some(Ok(Frame::data(Bytes::from(buf)))))
                    }
                    Err(e) => Poll::Ready(Some(Err(e))),
                }
            }
            Body::Cut { part, cut } => match part.take() {
                Some(p) => {
                    cut.store(true, Ordering::SeqCst);
                    Poll::Ready(Some(Ok(Frame::data(p))))
                }
                // never ends: the connection closes after the flush
                None => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Body::Full(b) => b.is_none(),
            Body::Stream { remaining, .. } => *remaining == 0,
            Body::Cut { .. } => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Body::Full(None) => SizeHint::with_exact(0),
            Body::Stream { remaining, .. } => SizeHint::with_exact(*remaining),
            // unknown: the Content-Length header announces the whole body
            Body::Cut { .. } => SizeHint::default(),
        }
    }
}

/// A connection's I/O: once `cut` is set, the next completed flush (hyper
/// flushes only after its buffer is written) shuts the socket down and
/// fails, which ends the connection with exactly what was flushed sent.
struct CutIo {
    inner: TokioIo<tokio::net::TcpStream>,
    cut: Arc<AtomicBool>,
}

impl hyper::rt::Read for CutIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for CutIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if let Err(e) = std::task::ready!(Pin::new(&mut this.inner).poll_flush(cx)) {
            return Poll::Ready(Err(e));
        }
        if this.cut.load(Ordering::SeqCst) {
            let _ = std::task::ready!(Pin::new(&mut this.inner).poll_shutdown(cx));
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "answer truncated by a planned fault",
            )));
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpStream;

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
        let _ = c.write_all(raw);
        let mut out = Vec::new();
        let _ = c.read_to_end(&mut out);
        String::from_utf8_lossy(&out).to_ascii_lowercase()
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
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length: ") {
                    len = v.trim().parse().unwrap();
                }
                assert!(!lower.starts_with("connection: close"), "{line}");
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
        assert!(out.starts_with("http/1.1 200 ok\r\n"), "{out}");
        assert!(out.contains("connection: close\r\n"), "{out}");
        // HTTP/1.0 without keep-alive: answered, then closed (read_to_end returns)
        let old = post("{}", "").replacen("HTTP/1.1", "HTTP/1.0", 1);
        let out = exchange(&s, old.as_bytes());
        assert!(out.starts_with("http/1.0 200 ok\r\n"), "{out}");
    }

    #[test]
    fn malformed_requests_are_answered_and_closed() {
        let s = echo();
        let cases: [(&[u8], &str, &str); 7] = [
            (b"POST /x\r\n\r\n", "400", ""),
            (b"POST /x HTTP/2.0\r\n\r\n", "", ""),
            (b"POST /x HTTP/1.1\r\nno-colon\r\n\r\n", "400", ""),
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
                b"POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx",
                "400",
                "",
            ),
            (b"POST /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n", "400", ""),
        ];
        for (raw, status, msg) in cases {
            // read_to_end returning at all means the server closed
            let out = exchange(&s, raw);
            assert!(
                out.starts_with(&format!("http/1.1 {status}")),
                "{status}: {out}"
            );
            assert!(!out.contains("200 ok"), "{out}");
            assert!(out.contains(msg), "{msg}: {out}");
        }
    }

    #[test]
    fn an_oversized_head_is_refused() {
        let s = echo();
        let mut raw = b"POST /x HTTP/1.1\r\nX-Big: ".to_vec();
        raw.extend(std::iter::repeat_n(b'a', 2 * MAX_HEAD));
        raw.extend_from_slice(b"\r\n\r\n");
        let out = exchange(&s, &raw);
        assert!(out.starts_with("http/1.1 431 "), "{out}");
        let mut raw = b"POST /x HTTP/1.1\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            raw.extend_from_slice(format!("X-{i}: 1\r\n").as_bytes());
        }
        raw.extend_from_slice(b"\r\n");
        let out = exchange(&s, &raw);
        assert!(out.starts_with("http/1.1 431 "), "{out}");
    }

    #[test]
    fn connections_beyond_the_limit_get_503() {
        let s = echo();
        let held: Vec<TcpStream> = (0..4).map(|_| connect(&s)).collect();
        // let the accept loop register the four
        std::thread::sleep(Duration::from_millis(100));
        let out = exchange(&s, post("{}", "").as_bytes());
        assert!(out.starts_with("http/1.1 503 "), "{out}");
        assert!(out.contains("too many connections"), "{out}");
        drop(held);
        std::thread::sleep(Duration::from_millis(100));
        let out = exchange(&s, post("{}", "Connection: close\r\n").as_bytes());
        assert!(out.starts_with("http/1.1 200 "), "{out}");
    }

    #[test]
    fn reset_truncated_and_stream_replies() {
        let big = vec![b'x'; 3 << 20];
        let handler: Handler = Arc::new(move |req: &Request| match req.path.as_str() {
            "/reset" => Reply::Reset,
            "/cut" => Reply::Truncated {
                body: b"0123456789".to_vec(),
                sent: 4,
            },
            "/bigcut" => Reply::Truncated {
                body: big.clone(),
                sent: 2 << 20,
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
        assert!(out.contains("content-length: 10\r\n"), "{out}");
        assert!(out.ends_with("\r\n\r\n0123"), "{out}");
        // a part larger than any socket buffer still arrives whole
        let out = exchange(&s, b"POST /bigcut HTTP/1.1\r\n\r\n");
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(
            head.contains(&format!("content-length: {}", 3 << 20)),
            "{head}"
        );
        assert_eq!(body.len(), 2 << 20);
        let out = exchange(&s, b"POST /s HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert!(out.contains("content-length: 5\r\n"), "{out}");
        assert!(out.ends_with("\r\n\r\nabcde"), "{out}");
    }

    #[test]
    fn stop_closes_idle_connections_and_joins_threads() {
        let s = echo();
        let mut c = connect(&s);
        c.write_all(post("{}", "").as_bytes()).unwrap();
        let mut buf = [0u8; 15];
        c.read_exact(&mut buf).unwrap();
        let t0 = std::time::Instant::now();
        s.stop();
        assert!(t0.elapsed() < GRACE, "an idle connection delayed the stop");
        let mut rest = Vec::new();
        // the server closed its side: the read ends instead of timing out
        let r = c.read_to_end(&mut rest);
        assert!(r.is_ok() || r.is_err_and(|e| e.kind() != std::io::ErrorKind::WouldBlock));
    }
}
