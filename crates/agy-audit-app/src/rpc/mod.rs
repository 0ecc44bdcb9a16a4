//! Stage 4: the daemon client. Connect-RPC JSON over loopback HTTP:
//! `POST <base>/exa.language_server_pb.LanguageServerService/<Method>`.
//!
//! Per-request timeout that bounds the whole request (connect, headers and
//! every byte of the body: a daemon that drips its answer is cut off at the
//! deadline), a response size cap that bounds memory (the buffer is reserved
//! once and never grows past the cap, so a request in flight holds at most
//! the cap), no redirects (an answer comes from the endpoint or is an
//! error), and bounded retries with backoff on transport errors only (never
//! on an HTTP status, never on a timeout). A GetCascadeTrajectory answer is
//! read strictly as it arrives, chunk by chunk, by the engine's one-pass
//! reader, and kept on disk once it is large ([`Spooler`]). Every error
//! names the endpoint and method.
//!
//! The client is asynchronous inside and synchronous outside: one small
//! tokio runtime per client (shared by its clones) drives every connection
//! of one pool, and each public call blocks its caller until the answer,
//! the deadline or Ctrl-C. No call starts a thread: a conversation's full
//! and ordinary GetCascadeTrajectory are two futures of one wait
//! ([`DaemonClient::get_trajectory_pair`]).

mod endpoint;
pub mod envelope;
pub mod error;
pub mod ide;
pub mod probe;

pub use endpoint::{discover_endpoint, parse_cli_log, validate_endpoint, DAEMON_URL_ENV};
pub use envelope::ResponseDefect;
pub use error::RpcError;

use agy_engine::util::atomic::{Body, Staged};
use serde::Deserialize;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::sync::watch;

pub const SERVICE: &str = "exa.language_server_pb.LanguageServerService";
pub const CSRF_HEADER: &str = "x-codeium-csrf-token";
pub const CSRF_ENV: &str = "ANTIGRAVITY_CSRF_TOKEN";
pub use crate::well_known::DEFAULT_MAX_BODY;

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
    /// Conversations fetched at once (the sweep's `--concurrency`): the
    /// connection pool keeps up to twice this many idle connections, one for
    /// each request a conversation has in flight (its full and ordinary
    /// GetCascadeTrajectory), so a sweep reuses its connections instead of
    /// opening new ones.
    pub concurrency: usize,
    /// Where a GetCascadeTrajectory answer of [`HOLD_IN_MEMORY_BELOW`]
    /// bytes or more is written as it arrives (a staged file, one of the
    /// tool's own temp files, that a sweep renames into place as the
    /// session's answer file: [`Spooler`], [`HeldResponse::body`]); `None`
    /// keeps every answer in memory.
    pub spool: Option<std::path::PathBuf>,
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
            concurrency: 8,
            spool: None,
        }
    }
}

/// How often the client looks at the cancel flag while calls are in flight.
const CANCEL_POLL: Duration = Duration::from_millis(50);
/// The client runtime's worker threads, at most: they only move bytes
/// between sockets and the waiting callers (who parse the answers on their
/// own threads), so two keep up with any sweep this machine class runs.
const MAX_WORKERS: usize = 2;
/// The runtime's blocking threads, at most: only host name resolution uses
/// them (an IP address, as every discovered endpoint is, needs none).
const MAX_BLOCKING: usize = 4;

/// Why a body read stopped short.
enum BodyError {
    /// More than the cap arrived.
    TooLarge,
    Failed(String),
}

/// Reads the body of `resp` as it arrives, at most `limit` bytes.
///
/// The buffer is reserved once, for the declared length when there is one
/// (never more than the cap; the HTTP layer delivers no more than a declared
/// length), else for the whole cap: reserving address space costs no memory
/// until it is written, and a buffer that never reallocates never holds an
/// old copy beside the new one. Each chunk is copied once, from the
/// connection's buffer into this one; a chunk that would take the body past
/// the cap is refused before it is copied, so the memory of one body is at
/// most the cap whatever the daemon sends.
async fn read_capped(
    mut resp: reqwest::Response,
    limit: u64,
    declared: Option<u64>,
) -> Result<Vec<u8>, BodyError> {
    let cap = usize::try_from(limit).unwrap_or(usize::MAX);
    let expected = expected_len(declared, cap);
    let mut bytes: Vec<u8> = Vec::new();
    loop {
        let chunk = match resp.chunk().await {
            Ok(Some(c)) => c,
            Ok(None) => return Ok(bytes),
            Err(e) => return Err(BodyError::Failed(e.to_string())),
        };
        if chunk.len() > cap - bytes.len() {
            return Err(BodyError::TooLarge);
        }
        reserve_room(&mut bytes, chunk.len(), expected, cap)
            .map_err(|e| BodyError::Failed(e.to_string()))?;
        bytes.extend_from_slice(&chunk);
    }
}

/// The length a body of at most `cap` bytes is expected to have: the one it
/// declared (never more than the cap), else the cap.
fn expected_len(declared: Option<u64>, cap: usize) -> usize {
    declared
        .and_then(|d| usize::try_from(d).ok())
        .map_or(cap, |d| d.min(cap))
}

/// Room in `buf` for `more` bytes of a body of at most `cap` bytes expected
/// to be `expected` long ([`expected_len`]): reserved exactly, at most
/// twice, the expected length first and the cap when the body runs past it.
/// Reserving address space costs no memory until it is written, and a
/// buffer that never doubles never holds an old copy beside the new one.
fn reserve_room(
    buf: &mut Vec<u8>,
    more: usize,
    expected: usize,
    cap: usize,
) -> std::io::Result<()> {
    let len = buf.len();
    if buf.capacity() - len >= more {
        return Ok(());
    }
    let want = if len + more <= expected {
        expected
    } else {
        cap.max(len + more)
    };
    buf.try_reserve_exact(want - len)
        .map_err(|e| std::io::Error::other(format!("out of memory: {e}")))
}

/// Reads a GetCascadeTrajectory answer as it arrives, at most `limit`
/// bytes, each chunk checked and kept by a [`Spooler`] and let go: the
/// answer is never whole in memory unless it is small.
async fn read_spooled(
    mut resp: reqwest::Response,
    (limit, declared): (u64, Option<u64>),
    spool: Option<&std::path::Path>,
    listed: bool,
) -> Result<Result<HeldResponse, ResponseDefect>, BodyError> {
    let cap = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut spooler = Spooler::new(spool, declared, cap, listed);
    loop {
        let chunk = match resp.chunk().await {
            Ok(Some(c)) => c,
            Ok(None) => return Ok(spooler.finish()),
            Err(e) => return Err(BodyError::Failed(e.to_string())),
        };
        if chunk.len() > cap - spooler.len() {
            return Err(BodyError::TooLarge);
        }
        spooler
            .push(&chunk)
            .map_err(|e| BodyError::Failed(format!("setting the answer aside: {e}")))?;
    }
}

/// Polls `a` and `b` together; both outputs once both are done (a join of
/// two futures, without a task or a thread for either).
async fn both<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let (mut a, mut b) = (std::pin::pin!(a), std::pin::pin!(b));
    let (mut ra, mut rb) = (None, None);
    std::future::poll_fn(move |cx| {
        if ra.is_none() {
            if let Poll::Ready(v) = a.as_mut().poll(cx) {
                ra = Some(v);
            }
        }
        if rb.is_none() {
            if let Poll::Ready(v) = b.as_mut().poll(cx) {
                rb = Some(v);
            }
        }
        match (ra.take(), rb.take()) {
            (Some(x), Some(y)) => Poll::Ready((x, y)),
            (x, y) => {
                (ra, rb) = (x, y);
                Poll::Pending
            }
        }
    })
    .await
}

/// `work`'s output, or `None` as soon as `stop` finishes first (`work` is
/// then dropped: its connections are closed, its buffers freed).
async fn unless<T>(work: impl Future<Output = T>, stop: impl Future<Output = ()>) -> Option<T> {
    let (mut work, mut stop) = (std::pin::pin!(work), std::pin::pin!(stop));
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(v) = work.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        stop.as_mut().poll(cx).map(|()| None)
    })
    .await
}

/// The client's tokio runtime, shut down without waiting when the last
/// clone of the client goes.
///
/// Owned by the client rather than kept in a process-wide static, so that a
/// command with no daemon starts no thread, and a client dropped (the watch
/// loop drops a failing root's client and makes another) takes its threads
/// and connections with it. `shutdown_background` never blocks and never
/// panics, even when the last clone is dropped on a thread that is itself
/// inside another runtime (a plain drop of a runtime there panics).
#[derive(Debug)]
struct OwnedRuntime(Option<tokio::runtime::Runtime>);

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// What the clones of one client share.
#[derive(Debug)]
struct Shared {
    /// Held for its `Drop`, and dropped first (fields drop in order): its
    /// tasks and connections end before the pool that refers to them.
    _runtime: OwnedRuntime,
    handle: tokio::runtime::Handle,
    http: reqwest::Client,
    /// Turns `true` within [`CANCEL_POLL`] of the cancel flag being set
    /// (one watcher task per client, not one timer per call).
    cancelled: Option<watch::Receiver<bool>>,
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
    pub fn body(&self) -> &[u8] {
        self.body.as_bytes()
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

/// One GetCascadeTrajectory answer taken in as it arrives, chunk by chunk:
/// each chunk is read by the engine's one-pass reader
/// ([`agy_engine::answer::AnswerReader`]: UTF-8, JSON, the envelope) and
/// kept, in memory while the answer is under [`HOLD_IN_MEMORY_BELOW`] bytes,
/// else from then on in a staged file of the spool folder (one of the
/// tool's own temp files, [`agy_engine::util::atomic::Staged`]; a folder
/// that cannot take it keeps the answer in memory). So an answer in flight
/// costs at most that much memory however large it is, nothing reads it
/// again before its judge, and a sweep that spools into its `corpus/`
/// folder renames the file into place as the session's answer instead of
/// copying it ([`HeldResponse::body`]).
pub struct Spooler {
    reader: agy_engine::answer::AnswerReader,
    dir: Option<std::path::PathBuf>,
    memory: Vec<u8>,
    file: Option<Staged>,
    /// An answer kept in memory without a spool folder reserves as
    /// [`read_capped`] does ([`reserve_room`]).
    expected: usize,
    cap: usize,
}

impl Spooler {
    /// A spooler writing large answers under `dir` (`None`: memory only),
    /// for an answer of at most `cap` bytes that declared `declared`;
    /// `listed`: the reader takes the answer's shape listing in its pass.
    pub fn new(
        dir: Option<&std::path::Path>,
        declared: Option<u64>,
        cap: usize,
        listed: bool,
    ) -> Spooler {
        let expected = expected_len(declared, cap);
        // A small answer that says its length is kept in a buffer of
        // exactly that length (a vector that doubles as it grows would hold
        // up to twice each of the many small answers in flight).
        let mut memory = Vec::new();
        if declared.is_some() && expected <= HOLD_IN_MEMORY_BELOW {
            let _ = memory.try_reserve_exact(expected);
        }
        let reader = agy_engine::answer::AnswerReader::response();
        Spooler {
            reader: if listed { reader.listing() } else { reader },
            dir: dir.map(std::path::Path::to_path_buf),
            memory,
            file: None,
            expected,
            cap,
        }
    }

    /// The next bytes of the answer.
    pub fn push(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        use std::io::Write;
        self.reader.push(chunk);
        if let Some(file) = &mut self.file {
            return file.file_mut().write_all(chunk);
        }
        // While the answer may still go to disk, the vector grows as usual.
        if self.dir.is_none() {
            reserve_room(&mut self.memory, chunk.len(), self.expected, self.cap)?;
        }
        self.memory.extend_from_slice(chunk);
        if self.memory.len() >= HOLD_IN_MEMORY_BELOW {
            if let Some(dir) = self.dir.take() {
                if let Ok(mut file) = Staged::in_folder(&dir, Some(SPOOL_MODE)) {
                    file.file_mut().write_all(&self.memory)?;
                    self.memory = Vec::new();
                    self.file = Some(file);
                }
            }
        }
        Ok(())
    }

    /// How many bytes were pushed.
    pub fn len(&self) -> usize {
        usize::try_from(self.reader.len()).unwrap_or(usize::MAX)
    }

    /// Whether nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.reader.is_empty()
    }

    /// The end of the answer: held where it was kept, or its defect.
    pub fn finish(self) -> Result<HeldResponse, ResponseDefect> {
        let len = self.len();
        let (envelope, shapes) = self.reader.finish_listed()?;
        let held = match self.file {
            Some(file) => Held::Disk {
                file,
                len,
                envelope,
            },
            None => {
                let mut memory = self.memory;
                // One that did not say its length: no slack kept while it
                // waits for its judge.
                if self.dir.is_some() && memory.capacity() > memory.len() + memory.len() / 4 {
                    memory.shrink_to_fit();
                }
                Held::Memory(TrajectoryResponse {
                    body: envelope::into_text(memory)?,
                    envelope,
                })
            }
        };
        Ok(HeldResponse(held, shapes))
    }
}

/// Answers smaller than this stay in memory while they wait to be judged
/// (at most twice this much a conversation in flight); larger ones are set
/// aside on disk.
pub const HOLD_IN_MEMORY_BELOW: usize = 64 << 10;

/// The mode of a spooled answer's file: a sweep folder's files are
/// private, and the file may become one.
const SPOOL_MODE: u32 = agy_engine::util::atomic::PRIVATE_MODE;

/// A checked answer waiting to be judged. At a sweep's concurrency most
/// answered conversations wait for a judge thread, and their bodies were
/// most of the sweep's memory (issue 49: 85 MB of 344 at concurrency 64),
/// so a large body waits on disk: a staged file in the sweep's own
/// `corpus/` folder (one of its own temp files, removed if the answer is
/// not kept, and by the folder's next opening if the run dies), written as
/// it arrives ([`Spooler`]), read back whole through the same handle when
/// its conversation is judged, and renamed into place as the session's
/// answer file ([`Self::body`]). The page cache holds it meanwhile, not
/// the process.
#[derive(Debug)]
pub struct HeldResponse(Held, Option<crate::shapes::Listing>);

#[derive(Debug)]
enum Held {
    Memory(TrajectoryResponse),
    Disk {
        file: Staged,
        len: usize,
        envelope: envelope::Envelope,
    },
    /// Its staged file was handed on to become a session file
    /// ([`HeldResponse::body`]): there is nothing left to read.
    HandedOn,
}

impl HeldResponse {
    /// [`Self::take`], an answer that cannot be read back reported as the
    /// transport failure it is (the session is not fetched, and `--resume`
    /// fetches it again).
    pub fn take_answer(self, endpoint: &str) -> Result<TrajectoryResponse, RpcError> {
        self.take().map_err(|e| lost(endpoint, &e))
    }

    /// An answer already whole in memory (a captured one), held there.
    pub fn memory(answer: TrajectoryResponse) -> HeldResponse {
        HeldResponse(Held::Memory(answer), None)
    }

    /// The answer, as it was checked: read back from its file when it was
    /// set aside (exactly the bytes written, valid UTF-8, or an error).
    pub fn take(self) -> std::io::Result<TrajectoryResponse> {
        match self.0 {
            Held::Memory(r) => Ok(r),
            Held::Disk { .. } | Held::HandedOn => self.read().map(std::borrow::Cow::into_owned),
        }
    }

    /// The answer, as it was checked, without letting it go: borrowed when
    /// it is in memory, read back from its file (exactly the bytes written,
    /// valid UTF-8, or an error) when it was set aside, so that the judge
    /// holds one answer's text at a time and drops it once read.
    pub fn read(&self) -> std::io::Result<std::borrow::Cow<'_, TrajectoryResponse>> {
        use std::io::{Read, Seek};
        let (mut file, len, envelope) = match &self.0 {
            Held::Memory(r) => return Ok(std::borrow::Cow::Borrowed(r)),
            Held::Disk {
                file,
                len,
                envelope,
            } => (file.file(), *len, envelope),
            Held::HandedOn => return Err(handed_on()),
        };
        file.rewind()?;
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(len)
            .map_err(std::io::Error::other)?;
        // One byte more than was written shows a file that grew.
        file.take(len as u64 + 1).read_to_end(&mut bytes)?;
        if bytes.len() != len {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{} bytes read back of the {len} set aside", bytes.len()),
            ));
        }
        let body = String::from_utf8(bytes)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        Ok(std::borrow::Cow::Owned(TrajectoryResponse {
            body,
            envelope: envelope.clone(),
        }))
    }

    /// The answer's response shape listing, taken in the pass that read it
    /// as it arrived, when that pass was sure of it
    /// ([`agy_engine::answer::AnswerReader::listing`]); `None`: list the
    /// text.
    pub fn shapes(&self) -> Option<&crate::shapes::Listing> {
        self.1.as_ref()
    }

    /// [`Self::read`], an answer that cannot be read back reported as
    /// [`Self::take_answer`] reports it.
    pub fn read_answer(
        &self,
        endpoint: &str,
    ) -> Result<std::borrow::Cow<'_, TrajectoryResponse>, RpcError> {
        self.read().map_err(|e| lost(endpoint, &e))
    }
}

/// The error of an answer set aside that cannot be read back.
fn lost(endpoint: &str, e: &std::io::Error) -> RpcError {
    RpcError::Transport {
        endpoint: endpoint.to_string(),
        method: "GetCascadeTrajectory",
        detail: format!(
            "the answer set aside on disk while it waited to be judged could not be read back: {e}"
        ),
    }
}

/// The error of an answer read after its file was handed on.
fn handed_on() -> std::io::Error {
    std::io::Error::other("the answer's file was already handed on to become its session file")
}

impl HeldResponse {
    /// How the answer becomes its session file: its staged file itself,
    /// taken (synced and renamed into place by the writer, never copied),
    /// when it waits on disk; else its bytes, written as any file is. After
    /// the file is taken the answer can no longer be read, and asking for
    /// its body again gives one whose writing fails, saying so.
    pub fn body(&mut self) -> Body<'_> {
        if let Held::Disk { .. } = self.0 {
            if let Held::Disk { file, len, .. } = std::mem::replace(&mut self.0, Held::HandedOn) {
                return Body::Staged(file, len as u64);
            }
        }
        match &self.0 {
            Held::Memory(r) => Body::Write(r),
            _ => Body::Write(&HandedOn),
        }
    }
}

/// An answer held in memory is written to its session file as received.
impl agy_engine::util::atomic::Contents for TrajectoryResponse {
    fn write_into(&self, out: &mut std::fs::File) -> std::io::Result<()> {
        use std::io::Write;
        out.write_all(self.body.as_bytes())
    }
}

/// The body of an answer whose staged file was already handed on.
struct HandedOn;

impl agy_engine::util::atomic::Contents for HandedOn {
    fn write_into(&self, _out: &mut std::fs::File) -> std::io::Result<()> {
        Err(handed_on())
    }
}

#[derive(Deserialize)]
struct ErrorEnvelope {
    code: Option<String>,
    message: Option<String>,
}

/// A client for one daemon endpoint: synchronous calls over one
/// asynchronous connection pool. Clones share the pool and its runtime.
///
/// Each call blocks the calling thread until its answer, its deadline or
/// Ctrl-C, and must not be made from a thread that is running a tokio
/// runtime's tasks (no caller does); should one be, the call waits on a
/// scoped thread of its own instead of panicking.
#[derive(Debug, Clone)]
pub struct DaemonClient {
    base: String,
    opts: ClientOptions,
    shared: Arc<Shared>,
}

impl DaemonClient {
    pub fn new(base: &str, opts: ClientOptions) -> Result<DaemonClient, RpcError> {
        let base = base.trim_end_matches('/').to_string();
        let failed = |detail: String| RpcError::Transport {
            endpoint: base.clone(),
            method: "connect",
            detail,
        };
        let workers = std::thread::available_parallelism()
            .map_or(1, std::num::NonZeroUsize::get)
            .clamp(1, MAX_WORKERS);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .max_blocking_threads(MAX_BLOCKING)
            .thread_name("agy-audit-rpc")
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| failed(format!("cannot start the client's runtime: {e}")))?;
        let handle = runtime.handle().clone();
        let http = {
            let _in_runtime = runtime.enter();
            reqwest::Client::builder()
                .no_proxy()
                // An answer comes from the endpoint itself: a redirect (to
                // another host or not) is an HTTP status error, never followed.
                .redirect(reqwest::redirect::Policy::none())
                .pool_max_idle_per_host(opts.concurrency.max(1).saturating_mul(2))
                .build()
                .map_err(|e| failed(e.to_string()))?
        };
        let cancelled = opts.cancel.clone().map(|flag| {
            let (tx, rx) = watch::channel(flag.load(Ordering::SeqCst));
            runtime.spawn(async move {
                loop {
                    if flag.load(Ordering::SeqCst) {
                        let _ = tx.send(true);
                        return;
                    }
                    if tx.is_closed() {
                        return;
                    }
                    tokio::time::sleep(CANCEL_POLL).await;
                }
            });
            rx
        });
        Ok(DaemonClient {
            base,
            opts,
            shared: Arc::new(Shared {
                _runtime: OwnedRuntime(Some(runtime)),
                handle,
                http,
                cancelled,
            }),
        })
    }

    /// Where large answers wait ([`ClientOptions::spool`]).
    pub fn spool_dir(&self) -> Option<&std::path::Path> {
        self.opts.spool.as_deref()
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

    fn cancelled_error(&self, method: &'static str) -> RpcError {
        RpcError::Cancelled {
            endpoint: self.base.clone(),
            method,
        }
    }

    /// Finishes when the cancel flag is seen set (Ctrl-C); never without
    /// a flag, or once the runtime is going away.
    fn stopped(&self) -> impl Future<Output = ()> + Send + 'static {
        let cancelled = self.shared.cancelled.clone();
        async move {
            let seen = match cancelled {
                Some(mut rx) => rx.wait_for(|c| *c).await.is_ok(),
                None => false,
            };
            if !seen {
                // No flag, or a closed channel (the runtime going
                // away): never a Ctrl-C.
                std::future::pending::<()>().await;
            }
        }
    }

    /// `work`'s outcome, or [`RpcError::Cancelled`] as soon as the cancel
    /// flag is seen set (`work` is then dropped with its calls in flight).
    async fn cancellable<T>(
        &self,
        method: &'static str,
        work: impl Future<Output = Result<T, RpcError>>,
    ) -> Result<T, RpcError> {
        unless(work, self.stopped())
            .await
            .unwrap_or_else(|| Err(self.cancelled_error(method)))
    }

    /// Runs `work` to its end on the calling thread (the runtime's workers
    /// drive the sockets meanwhile), or returns [`RpcError::Cancelled`] as
    /// soon as the cancel flag is seen set: the calls in flight are then
    /// dropped, not waited for.
    fn wait<T: Send>(
        &self,
        method: &'static str,
        work: impl Future<Output = Result<T, RpcError>> + Send,
    ) -> Result<T, RpcError> {
        let work = self.cancellable(method, work);
        let handle = &self.shared.handle;
        if tokio::runtime::Handle::try_current().is_err() {
            return handle.block_on(work);
        }
        // Inside some runtime's context `block_on` would panic: wait on a
        // thread outside it (no caller does this today).
        std::thread::scope(|s| {
            std::thread::Builder::new()
                .name("agy-audit-rpc-wait".into())
                .spawn_scoped(s, || handle.block_on(work))
                .map_err(|e| RpcError::Transport {
                    endpoint: self.base.clone(),
                    method,
                    detail: format!("cannot start a thread to wait on: {e}"),
                })?
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
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

    /// One call with its retries: a transport error is tried again after a
    /// backoff that doubles, anything else (an answer, a status, a timeout)
    /// is final.
    async fn call(&self, method: &'static str, body: String) -> Result<Vec<u8>, RpcError> {
        self.call_reading(method, body, |resp, limits| {
            read_capped(resp, limits.0, limits.1)
        })
        .await
    }

    /// [`Self::call`], a 2xx body read by `read` (given the response, the
    /// cap and the declared length); any other status's body is read whole
    /// ([`read_capped`]) for its error.
    async fn call_reading<T, F, Fut>(
        &self,
        method: &'static str,
        body: String,
        read: F,
    ) -> Result<T, RpcError>
    where
        F: Fn(reqwest::Response, (u64, Option<u64>)) -> Fut,
        Fut: Future<Output = Result<T, BodyError>>,
    {
        let url = format!("{}/{SERVICE}/{method}", self.base);
        let body = bytes::Bytes::from(body);
        let mut attempt = 0;
        loop {
            if self.cancelled() {
                return Err(self.cancelled_error(method));
            }
            match self.call_once(method, &url, body.clone(), &read).await {
                Err(RpcError::Transport { .. }) if attempt < self.opts.retries => {
                    attempt += 1;
                    tokio::time::sleep(self.opts.backoff * (1 << (attempt - 1))).await;
                }
                other => return other,
            }
        }
    }

    /// One attempt, under one deadline for the whole request: connect,
    /// headers and every byte of the body.
    async fn call_once<T, Fut>(
        &self,
        method: &'static str,
        url: &str,
        body: bytes::Bytes,
        read: &impl Fn(reqwest::Response, (u64, Option<u64>)) -> Fut,
    ) -> Result<T, RpcError>
    where
        Fut: Future<Output = Result<T, BodyError>>,
    {
        let deadline = tokio::time::Instant::now() + self.opts.timeout;
        tokio::time::timeout_at(deadline, self.exchange(method, url, body, read))
            .await
            .unwrap_or_else(|_| Err(self.timeout_error(method)))
    }

    fn timeout_error(&self, method: &'static str) -> RpcError {
        RpcError::Timeout {
            endpoint: self.base.clone(),
            method,
            seconds: self.opts.timeout.as_secs(),
        }
    }

    /// The request and its answer, without a deadline ([`Self::call_once`]
    /// gives it one).
    async fn exchange<T, Fut>(
        &self,
        method: &'static str,
        url: &str,
        body: bytes::Bytes,
        read: &impl Fn(reqwest::Response, (u64, Option<u64>)) -> Fut,
    ) -> Result<T, RpcError>
    where
        Fut: Future<Output = Result<T, BodyError>>,
    {
        let endpoint = self.base.clone();
        let transport = |e: reqwest::Error| {
            if e.is_timeout() {
                self.timeout_error(method)
            } else {
                RpcError::Transport {
                    endpoint: endpoint.clone(),
                    method,
                    detail: e.to_string(),
                }
            }
        };
        let mut req = self
            .shared
            .http
            .post(url)
            .header("content-type", "application/json")
            .body(body);
        if let Some(t) = &self.opts.csrf_token {
            req = req.header(CSRF_HEADER, t);
        }
        let resp = req.send().await.map_err(transport)?;
        let status = resp.status().as_u16();
        let declared = resp.content_length();
        let too_large = || RpcError::TooLarge {
            endpoint: endpoint.clone(),
            method,
            limit: self.opts.max_body,
        };
        if declared.is_some_and(|n| n > self.opts.max_body) {
            return Err(too_large());
        }
        let daemon = || {
            self.opts
                .daemon_of
                .clone()
                .unwrap_or_else(|| "the daemon".to_string())
        };
        if matches!(status, 401 | 403) {
            // The body is never read, let alone kept: it may echo the token.
            return Err(RpcError::Unauthorized {
                endpoint: endpoint.clone(),
                method,
                status,
                daemon: daemon(),
                token_sent: self.opts.csrf_token.is_some(),
            });
        }
        let body_error = |e| match e {
            BodyError::TooLarge => too_large(),
            BodyError::Failed(detail) => RpcError::Transport {
                endpoint: endpoint.clone(),
                method,
                detail: format!("reading the body: {detail}"),
            },
        };
        if (200..300).contains(&status) {
            return read(resp, (self.opts.max_body, declared))
                .await
                .map_err(body_error);
        }
        // Any other status: its body, read whole, says why.
        let bytes = read_capped(resp, self.opts.max_body, declared)
            .await
            .map_err(body_error)?;
        let env: Option<ErrorEnvelope> = serde_json::from_slice(&bytes).ok();
        let connect_code = env.as_ref().is_some_and(|e| e.code.is_some());
        if status == 415 || (status == 400 && !connect_code) {
            return Err(RpcError::WrongListener {
                endpoint,
                method,
                status,
                daemon: daemon(),
            });
        }
        Err(RpcError::Status {
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
        })
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
        let method = "GetCascadeTrajectory";
        let body = serde_json::json!({ "cascadeId": NIL }).to_string();
        match self.wait(method, self.call(method, body)) {
            Err(e) if e.setup_problem() => Err(e),
            _ => Ok(()),
        }
    }

    /// One probe of what listens at the endpoint (`ide::check_listener`):
    /// the read-only [`probe::PROBE_METHOD`] of the nil conversation id, sent
    /// with this client's CSRF token only when `send_token` (never
    /// otherwise, whatever the options hold), no retry, under the client's
    /// deadline; the raw answer, for `ide::classify` to judge. At most
    /// [`probe::PROBE_MAX_BODY`] bytes of the body are read, and none of a
    /// 401/403 to a request that carried the token (it may echo it). The
    /// client's calls, pool and transport are untouched.
    pub fn probe_answer(&self, send_token: bool) -> Result<probe::ProbeReply, probe::ProbeFailure> {
        use probe::{ProbeBody, ProbeFailure, ProbeReply};
        const NIL: &str = "00000000-0000-0000-0000-000000000000";
        let url = format!("{}/{SERVICE}/{}", self.base, probe::PROBE_METHOD);
        let body = serde_json::json!({ "cascadeId": NIL }).to_string();
        let token = self.opts.csrf_token.as_ref().filter(|_| send_token);
        let failed = |e: reqwest::Error| {
            let mut detail = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                detail = s.to_string();
                source = s.source();
            }
            if e.is_connect() {
                ProbeFailure::Connect(detail)
            } else {
                ProbeFailure::NotHttp(detail)
            }
        };
        let work = async {
            let mut req = self
                .shared
                .http
                .post(&url)
                .header("content-type", "application/json")
                .body(body);
            if let Some(t) = token {
                req = req.header(CSRF_HEADER, t);
            }
            let resp = req.send().await.map_err(failed)?;
            let status = resp.status().as_u16();
            let content_type = resp
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let body = if token.is_some() && matches!(status, 401 | 403) {
                ProbeBody::Unread
            } else {
                let declared = resp.content_length();
                if declared.is_some_and(|n| n > probe::PROBE_MAX_BODY) {
                    ProbeBody::TooLarge
                } else {
                    match read_capped(resp, probe::PROBE_MAX_BODY, declared).await {
                        Ok(b) => ProbeBody::Read(b),
                        Err(BodyError::TooLarge) => ProbeBody::TooLarge,
                        Err(BodyError::Failed(d)) => {
                            return Err(ProbeFailure::NotHttp(format!("reading the body: {d}")))
                        }
                    }
                }
            };
            Ok(ProbeReply {
                status,
                content_type,
                body,
            })
        };
        let seconds = self.opts.timeout.as_secs();
        let timed = async {
            Ok(tokio::time::timeout(self.opts.timeout, work)
                .await
                .unwrap_or(Err(ProbeFailure::NoAnswer(seconds))))
        };
        self.wait(probe::PROBE_METHOD, timed)
            .unwrap_or_else(|e| Err(ProbeFailure::NotHttp(e.to_string())))
    }

    /// `LoadTrajectory {cascadeId}`: must precede GetCascadeTrajectory.
    pub fn load_trajectory(&self, cascade_id: &str) -> Result<(), RpcError> {
        self.wait("LoadTrajectory", self.load(cascade_id))
    }

    /// One `LoadTrajectory {cascadeId}`.
    async fn load(&self, cascade_id: &str) -> Result<(), RpcError> {
        let body = serde_json::json!({ "cascadeId": cascade_id }).to_string();
        self.call("LoadTrajectory", body).await.map(|_| ())
    }

    /// `GetCascadeTrajectory`: the full unrehydrated RPC (`full`: verbosity
    /// FULL, disableRehydration true) or the ordinary one.
    pub fn get_trajectory(
        &self,
        cascade_id: &str,
        full: bool,
    ) -> Result<TrajectoryResponse, RpcError> {
        self.wait("GetCascadeTrajectory", self.trajectory(cascade_id, full))?
            .take_answer(&self.base)
    }

    /// The full and the ordinary `GetCascadeTrajectory` of a loaded
    /// conversation, in flight together on two pooled connections, in one
    /// wait of the calling thread (no thread per request). Both run to
    /// their end (or Ctrl-C); when both fail, the full one's error is the
    /// one returned.
    pub fn get_trajectory_pair(
        &self,
        cascade_id: &str,
    ) -> Result<(TrajectoryResponse, TrajectoryResponse), RpcError> {
        let (full, ordinary) = self.wait("GetCascadeTrajectory", self.pair(cascade_id))?;
        Ok((
            full.take_answer(&self.base)?,
            ordinary.take_answer(&self.base)?,
        ))
    }

    /// [`Self::get_trajectory_pair`], each answer held where it arrived
    /// (a large one on disk in the spool folder, [`ClientOptions::spool`]).
    pub fn get_held_pair(
        &self,
        cascade_id: &str,
    ) -> Result<(HeldResponse, HeldResponse), RpcError> {
        self.wait("GetCascadeTrajectory", self.pair(cascade_id))
    }

    /// The full and the ordinary `GetCascadeTrajectory`, polled together;
    /// when both fail, the full one's error.
    async fn pair(&self, cascade_id: &str) -> Result<(HeldResponse, HeldResponse), RpcError> {
        let (full, ordinary) = both(
            self.trajectory(cascade_id, true),
            self.trajectory(cascade_id, false),
        )
        .await;
        Ok((full?, ordinary?))
    }

    /// LoadTrajectory, then the full and the ordinary `GetCascadeTrajectory`
    /// in flight together ([`Self::load_trajectory`] then
    /// [`Self::get_trajectory_pair`]), started on the client's runtime
    /// without any thread waiting for it: `done` gets the outcome on one of
    /// the runtime's workers, so it must not block (a send on an unbounded
    /// channel, say). Ctrl-C ends the call as [`RpcError::Cancelled`], as it
    /// ends a waited one. Many of these in flight cost a task each, not a
    /// thread: the sweep keeps `--concurrency` conversations in flight so.
    pub fn fetch_detached<F>(&self, cascade_id: String, done: F)
    where
        F: FnOnce(Result<(HeldResponse, HeldResponse), RpcError>) + Send + 'static,
    {
        let this = self.clone();
        self.shared.handle.spawn(async move {
            let work = async {
                this.load(&cascade_id).await?;
                this.pair(&cascade_id).await
            };
            done(this.cancellable("GetCascadeTrajectory", work).await);
        });
    }

    /// One `GetCascadeTrajectory`, its answer read and kept as it arrives
    /// ([`read_spooled`]): large answers wait on disk in the spool folder
    /// ([`ClientOptions::spool`]) from their first 64 KiB on.
    async fn trajectory(&self, cascade_id: &str, full: bool) -> Result<HeldResponse, RpcError> {
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
        let spool = self.opts.spool.as_deref();
        // Only the full answer is listed in the pass: the ordinary one's
        // listing comes from its attestation's pass when it is verified, and
        // from its text (which the judge reads then) when not.
        let answer = self
            .call_reading(method, body.to_string(), |resp, limits| {
                read_spooled(resp, limits, spool, full)
            })
            .await?;
        answer.map_err(|defect| RpcError::InvalidResponse {
            endpoint: self.base.clone(),
            method,
            defect,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::{Condvar, Mutex};
    use std::time::Instant;

    /// A whole, consistent GetCascadeTrajectory answer with no steps.
    const ANSWER: &str = r#"{"trajectory":{},"numTotalSteps":0}"#;

    /// An answer of `n` bytes or more: one step whose text is long.
    fn large_answer(n: usize) -> String {
        format!(
            r#"{{"trajectory":{{"steps":[{{"x":"{}"}}]}},"numTotalSteps":1,"status":"CASCADE_RUN_STATUS_IDLE"}}"#,
            "é\\n".repeat(n / 3)
        )
    }

    /// `text` through a spooler under `dir`, in chunks of 1,000 bytes.
    fn spooled(text: &str, dir: Option<&std::path::Path>) -> Result<HeldResponse, ResponseDefect> {
        let mut s = Spooler::new(dir, None, 1 << 20, true);
        for chunk in text.as_bytes().chunks(1000) {
            s.push(chunk).unwrap();
        }
        s.finish()
    }

    #[test]
    fn a_large_answer_arrives_on_disk_and_comes_back_as_it_was_checked() {
        let dir = tempfile::tempdir().unwrap();
        let text = large_answer(HOLD_IN_MEMORY_BELOW * 2);
        let r = TrajectoryResponse::parse(text.clone().into_bytes()).unwrap();
        let held = spooled(&text, Some(dir.path())).unwrap();
        assert!(matches!(held.0, Held::Disk { .. }), "set aside");
        // In one of the tool's own temp files, private (a sweep folder's
        // next opening removes it should the run die), ...
        let names = own_temp_files(dir.path());
        assert_eq!(names.len(), 1, "{names:?}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(&names[0]))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let back = held.take().unwrap();
        // ... removed once the answer is let go without being kept.
        assert!(own_temp_files(dir.path()).is_empty());
        assert_eq!(back.trajectory(), r.trajectory());
        assert_eq!(back.status(), "CASCADE_RUN_STATUS_IDLE");
        assert_eq!(back.num_total_steps(), 1);
        assert_eq!(back.into_body(), text.clone().into_bytes());
        let small = spooled(ANSWER, Some(dir.path())).unwrap();
        assert!(matches!(small.0, Held::Memory(_)));
        // A folder that cannot take it, or none: kept in memory, not lost.
        let gone = dir.path().join("gone");
        for memory in [spooled(&text, Some(&gone)), spooled(&text, None)] {
            let Held::Memory(m) = memory.unwrap().0 else {
                panic!("not in memory")
            };
            assert_eq!(m.into_body(), text.clone().into_bytes());
        }
        // A defect is named at the end, wherever the answer was kept.
        let miscounted = text.replace(r#""numTotalSteps":1"#, r#""numTotalSteps":2"#);
        assert!(matches!(
            spooled(&miscounted, Some(dir.path())),
            Err(ResponseDefect::CountMismatch { declared: 2, .. })
        ));
    }

    #[test]
    fn an_answer_set_aside_that_changed_is_not_taken_back() {
        use std::io::Write;
        let r = TrajectoryResponse::parse(large_answer(100_000).into_bytes()).unwrap();
        let len = r.body.len();
        for bytes in [
            r.body.as_bytes()[..len - 1].to_vec(),
            [r.body.as_bytes(), b" "].concat(),
            {
                let mut b = r.body.as_bytes().to_vec();
                b[40] = 0xff;
                b
            },
        ] {
            let dir = tempfile::tempdir().unwrap();
            let mut file = Staged::in_folder(dir.path(), None).unwrap();
            file.file_mut().write_all(&bytes).unwrap();
            let held = HeldResponse(
                Held::Disk {
                    file,
                    len,
                    envelope: r.envelope.clone(),
                },
                None,
            );
            let e = held.take().unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidData, "{e}");
        }
    }

    /// The names of the tool's own temp files in `dir`.
    fn own_temp_files(dir: &std::path::Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| agy_engine::util::atomic::is_own_temp_name(n))
            .collect()
    }

    #[test]
    fn an_answer_on_disk_becomes_its_session_file_without_a_copy() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let text = large_answer(HOLD_IN_MEMORY_BELOW * 2);
        let mut held = spooled(&text, Some(dir.path())).unwrap();
        let staged_inode = {
            let Held::Disk { file, .. } = &held.0 else {
                panic!("not on disk")
            };
            file.file().metadata().unwrap().ino()
        };
        // Read by its judge first, as the sweep does.
        assert_eq!(held.read().unwrap().body(), text.as_bytes());
        let path = dir.path().join("x.full.json");
        let opts = agy_engine::util::atomic::WriteOptions {
            force: true,
            ..Default::default()
        };
        let body = held.body();
        assert!(matches!(body, Body::Staged(..)), "the file itself");
        body.commit_unsynced_dir(&path, &opts).unwrap();
        // The same file, renamed: its bytes, its inode, no temp file left.
        assert_eq!(std::fs::read(&path).unwrap(), text.as_bytes());
        assert_eq!(std::fs::metadata(&path).unwrap().ino(), staged_inode);
        assert!(own_temp_files(dir.path()).is_empty());
        // Nothing is left to read, and it says so.
        assert!(held.read().is_err());
        let again = held.body();
        assert!(matches!(again, Body::Write(_)));
        assert!(again
            .commit_unsynced_dir(&dir.path().join("again.json"), &opts)
            .is_err());
        assert!(!dir.path().join("again.json").exists());
        // A small answer, in memory, is written as any file is.
        let mut small = spooled(ANSWER, Some(dir.path())).unwrap();
        let small_path = dir.path().join("y.full.json");
        let body = small.body();
        assert!(matches!(body, Body::Write(_)));
        body.commit_unsynced_dir(&small_path, &opts).unwrap();
        assert_eq!(std::fs::read(&small_path).unwrap(), ANSWER.as_bytes());
    }

    fn http(status: &str, body: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    /// One request's body from `r`, `None` at the end of the connection.
    fn request(r: &mut BufReader<TcpStream>) -> Option<String> {
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            if r.read_line(&mut line).ok()? == 0 {
                return None;
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((name, value)) = l.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().ok()?;
                }
            }
        }
        let mut body = vec![0u8; length];
        r.read_exact(&mut body).ok()?;
        String::from_utf8(body).ok()
    }

    /// A loopback HTTP server (a thread per connection, keep-alive): each
    /// request's body goes to `respond`, whose bytes are written back
    /// (`None`: never answered, the connection held until the client
    /// closes it). Its URL.
    fn serve(respond: impl Fn(&str) -> Option<Vec<u8>> + Send + Sync + 'static) -> String {
        serve_counting(respond).0
    }

    /// [`serve`], and the count of connections it has accepted.
    fn serve_counting(
        respond: impl Fn(&str) -> Option<Vec<u8>> + Send + Sync + 'static,
    ) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let respond = Arc::new(respond);
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = accepted.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                counter.fetch_add(1, Ordering::SeqCst);
                let respond = respond.clone();
                std::thread::spawn(move || {
                    let mut out = conn.try_clone().unwrap();
                    let mut r = BufReader::new(conn);
                    while let Some(body) = request(&mut r) {
                        match respond(&body) {
                            Some(bytes) => {
                                if out.write_all(&bytes).is_err() {
                                    return;
                                }
                            }
                            None => {
                                // held: wait for the client to go away
                                let _ = r.read_to_end(&mut Vec::new());
                                return;
                            }
                        }
                    }
                });
            }
        });
        (url, accepted)
    }

    fn options() -> ClientOptions {
        ClientOptions {
            timeout: Duration::from_secs(60),
            retries: 0,
            ..ClientOptions::default()
        }
    }

    #[test]
    fn a_pair_is_in_flight_together() {
        // Each request is held until both have arrived: fetched one after
        // the other, the first would never be answered (and the server
        // gives up on it with a 500 after 20 s).
        let arrived = Arc::new((Mutex::new(Vec::<String>::new()), Condvar::new()));
        let seen = arrived.clone();
        let url = serve(move |body| {
            let (lock, cv) = &*seen;
            let mut bodies = lock.lock().unwrap();
            bodies.push(body.to_string());
            cv.notify_all();
            let (bodies, wait) = cv
                .wait_timeout_while(bodies, Duration::from_secs(20), |b| b.len() < 2)
                .unwrap();
            drop(bodies);
            Some(if wait.timed_out() {
                http(
                    "500 Internal Server Error",
                    r#"{"code":"internal","message":"alone"}"#,
                )
            } else {
                http("200 OK", ANSWER)
            })
        });
        let client = DaemonClient::new(&url, options()).unwrap();
        let (full, ordinary) = client
            .get_trajectory_pair("c1")
            .expect("both answers, in flight together");
        assert_eq!((full.trajectory(), ordinary.trajectory()), ("{}", "{}"));
        let bodies = arrived.0.lock().unwrap().clone();
        assert_eq!(bodies.len(), 2, "{bodies:?}");
        let fulls = bodies
            .iter()
            .filter(|b| b.contains("CLIENT_TRAJECTORY_VERBOSITY_FULL"))
            .count();
        assert_eq!(fulls, 1, "one full and one ordinary request: {bodies:?}");
    }

    #[test]
    fn connections_are_pooled_across_calls() {
        let (url, accepted) = serve_counting(|_| Some(http("200 OK", ANSWER)));
        let client = DaemonClient::new(&url, options()).unwrap();
        for i in 0..5 {
            client.load_trajectory(&format!("c{i}")).unwrap();
            client.get_trajectory_pair(&format!("c{i}")).unwrap();
            // a clone shares the pool
            client
                .clone()
                .get_trajectory(&format!("c{i}"), false)
                .unwrap();
        }
        // one connection per request in flight at once (the pair's two),
        // not one per call; a connection goes back to the pool on the
        // runtime's worker once its body has ended, which can come after
        // the next call asked for one (a race the base commit lost 13 times
        // in 40 on a loaded machine), so a third or fourth may open: still
        // far from the 20 of a client that does not pool
        let n = accepted.load(Ordering::SeqCst);
        assert!((1..=4).contains(&n), "{n} connections for 20 calls");
    }

    #[test]
    fn a_pair_reports_the_full_requests_error_first() {
        let url = serve(|body| {
            Some(if body.contains("FULL") {
                http("404 Not Found", r#"{"code":"not_found","message":"full"}"#)
            } else {
                http(
                    "500 Internal Server Error",
                    r#"{"code":"internal","message":"ordinary"}"#,
                )
            })
        });
        let client = DaemonClient::new(&url, options()).unwrap();
        match client.get_trajectory_pair("c1") {
            Err(RpcError::Status {
                status, message, ..
            }) => assert_eq!((status, message.as_str()), (404, "full")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ctrl_c_abandons_a_pair_in_flight_at_once() {
        let url = serve(|_| None);
        let flag = Arc::new(AtomicBool::new(false));
        let client = DaemonClient::new(
            &url,
            ClientOptions {
                cancel: Some(flag.clone()),
                ..options()
            },
        )
        .unwrap();
        let setter = {
            let flag = flag.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                flag.store(true, Ordering::SeqCst);
            })
        };
        let started = Instant::now();
        let r = client.get_trajectory_pair("c1");
        setter.join().unwrap();
        assert!(matches!(r, Err(RpcError::Cancelled { .. })), "{r:?}");
        // long before the 60 s deadline
        assert!(started.elapsed() < Duration::from_secs(30));
        // and a later call is refused without a request
        assert!(matches!(
            client.load_trajectory("c2"),
            Err(RpcError::Cancelled { .. })
        ));
    }

    #[test]
    fn the_deadline_bounds_a_request_that_is_never_answered() {
        let url = serve(|_| None);
        let client = DaemonClient::new(
            &url,
            ClientOptions {
                timeout: Duration::from_secs(1),
                retries: 2,
                ..options()
            },
        )
        .unwrap();
        // a timeout is never retried
        match client.get_trajectory("c1", true) {
            Err(RpcError::Timeout { seconds, .. }) => assert_eq!(seconds, 1),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_chunked_body_past_the_cap_is_refused_while_it_streams() {
        let url = serve(|_| {
            let mut r = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
            for _ in 0..8 {
                r.extend_from_slice(format!("100\r\n{}\r\n", " ".repeat(256)).as_bytes());
            }
            r.extend_from_slice(b"0\r\n\r\n");
            Some(r)
        });
        for (cap, too_large) in [(1000, true), (2048, false)] {
            let client = DaemonClient::new(
                &url,
                ClientOptions {
                    max_body: cap,
                    ..options()
                },
            )
            .unwrap();
            match client.load_trajectory("c1") {
                Err(RpcError::TooLarge { limit, .. }) => {
                    assert!(too_large);
                    assert_eq!(limit, cap);
                }
                Ok(()) => assert!(!too_large),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn an_answer_streams_to_the_spool_and_past_the_cap_is_refused_while_it_streams() {
        // A 200 KB answer, sent in chunks of 4 KiB.
        let text = large_answer(200_000);
        let served = text.clone();
        let url = serve(move |_| {
            let mut r = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
            for chunk in served.as_bytes().chunks(4096) {
                r.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                r.extend_from_slice(chunk);
                r.extend_from_slice(b"\r\n");
            }
            r.extend_from_slice(b"0\r\n\r\n");
            Some(r)
        });
        let dir = tempfile::tempdir().unwrap();
        let client = DaemonClient::new(
            &url,
            ClientOptions {
                spool: Some(dir.path().to_path_buf()),
                ..options()
            },
        )
        .unwrap();
        let held = client
            .wait("GetCascadeTrajectory", client.trajectory("c1", false))
            .unwrap();
        assert!(matches!(held.0, Held::Disk { .. }), "arrived on disk");
        assert_eq!(own_temp_files(dir.path()).len(), 1);
        assert_eq!(held.take().unwrap().into_body(), text.as_bytes());
        let capped = DaemonClient::new(
            &url,
            ClientOptions {
                max_body: 100_000,
                spool: Some(dir.path().to_path_buf()),
                ..options()
            },
        )
        .unwrap();
        assert!(matches!(
            capped.get_trajectory("c1", false),
            Err(RpcError::TooLarge { limit: 100_000, .. })
        ));
        // Neither answer left its file behind: one was let go, the other
        // refused while it streamed.
        assert!(own_temp_files(dir.path()).is_empty());
    }

    #[test]
    fn a_declared_length_past_the_cap_is_refused_before_the_body() {
        let url = serve(|_| Some(b"HTTP/1.1 200 OK\r\ncontent-length: 5000\r\n\r\n{".to_vec()));
        let client = DaemonClient::new(
            &url,
            ClientOptions {
                max_body: 4999,
                ..options()
            },
        )
        .unwrap();
        assert!(matches!(
            client.load_trajectory("c1"),
            Err(RpcError::TooLarge { limit: 4999, .. })
        ));
    }

    #[test]
    fn a_refusal_of_the_token_keeps_nothing_of_its_body() {
        let url = serve(|_| Some(http("401 Unauthorized", "echo: secret-token")));
        let client = DaemonClient::new(
            &url,
            ClientOptions {
                csrf_token: Some("secret-token".into()),
                ..options()
            },
        )
        .unwrap();
        let e = client.check_access().unwrap_err();
        assert!(matches!(
            e,
            RpcError::Unauthorized {
                status: 401,
                token_sent: true,
                ..
            }
        ));
        assert!(!e.to_string().contains("echo"), "{e}");
    }

    #[test]
    fn the_client_works_and_drops_inside_another_runtime() {
        // The simulated daemon runs its own runtime; a client used or
        // dropped on one of that runtime's threads must neither panic nor
        // hang.
        let url = serve(|_| Some(http("200 OK", ANSWER)));
        let other = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let client = DaemonClient::new(&url, options()).unwrap();
        other.block_on(async move {
            let (full, _) = client.get_trajectory_pair("c1").unwrap();
            assert_eq!(full.num_total_steps(), 0);
            drop(client);
        });
    }
}
