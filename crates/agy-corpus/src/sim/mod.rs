//! The simulated agy daemon (`agy-audit daemon-sim`): a real HTTP/1.1 server
//! on 127.0.0.1 ([`server`], hyper on a tokio runtime it owns) answering agy's Connect-RPC JSON calls from a
//! generated store's `.truth/daemon/` views, with faults on demand.
//!
//! * `POST /exa.language_server_pb.LanguageServerService/LoadTrajectory`
//!   `{cascadeId}` → `{}`;
//! * `POST .../GetCascadeTrajectory` `{cascadeId, trajectoryVerbosity,
//!   disableRehydration}` → `{"trajectory": <view>, "status":
//!   "CASCADE_RUN_STATUS_IDLE", "numTotalSteps": "<n>"}`, the view being the
//!   full (unrehydrated) one for verbosity FULL with rehydration disabled and
//!   the ordinary one otherwise. The view's bytes are spliced verbatim.
//! * Errors are Connect envelopes `{code, message}`: an unknown id or an id
//!   not loaded yet is 404 `not_found`; a bad body 400 `invalid_argument`; a
//!   wrong HTTP method 405; a wrong content type 415; with `--csrf-token` a
//!   missing `x-codeium-csrf-token` is 401 `unauthenticated`, a wrong one 403
//!   `permission_denied`; an unknown procedure 404 `unimplemented`.
//!
//! On start the listening line is appended to the store's `cli.log` (after
//! an HTTPS decoy line), so discovery works as with agy. In IDE mode
//! ([`SimOptions::ide_logs`]) the daemon behaves like the IDE's language
//! server instead: it requires `x-codeium-csrf-token` (401 without it, 403
//! for a wrong one), and appends its two port lines to
//! `<logs>/language_server.log` and its spawn line, carrying
//! `--csrf_token <token>`, to `<logs>/main.log`, in the IDE's line formats
//! (glog lines; `[date time] [info]  Spawning: ...`); `cli.log` is left alone. [`DaemonSim::stop`]
//! (or drop) wakes hung requests, shuts every accepted connection down and
//! joins every thread the server started, so none outlives it.

#![warn(missing_docs)]

pub mod fault;
mod mutate;
mod serve;
pub mod server;
pub mod style;

pub use fault::{FaultKind, FaultSpec, FaultTarget};
pub use style::JsonStyle;

use crossbeam_channel::{Receiver, Sender};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The Connect service path prefix.
pub const SERVICE_PREFIX: &str = "/exa.language_server_pb.LanguageServerService/";

/// Why the simulated daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A store file could not be read or written.
    #[error("{path}: {}", crate::util::io_text(source))]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The store has no daemon views.
    #[error(
        "{0}: not a generated store (no .truth/daemon/); run `agy-audit corpus generate` first"
    )]
    NotAStore(PathBuf),
    /// The listening socket could not be bound.
    #[error("cannot listen on 127.0.0.1:{port}: {detail}")]
    Bind {
        /// The requested port.
        port: u16,
        /// The cause.
        detail: String,
    },
    /// The schema a `--json-style` walks did not load.
    #[error("loading the schema for --json-style: {0}")]
    Schema(String),
    /// A fault specification (from `--fault` or `.truth/faults.txt`) is invalid.
    #[error(transparent)]
    Fault(#[from] fault::FaultParseError),
}

/// How to run the simulated daemon.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// The generated store root.
    pub store: PathBuf,
    /// Port on 127.0.0.1 (0: an ephemeral one).
    pub port: u16,
    /// Require this `x-codeium-csrf-token`.
    pub csrf_token: Option<String>,
    /// Faults, in addition to `.truth/faults.txt`.
    pub faults: Vec<FaultSpec>,
    /// Seed of rate faults and jitter.
    pub seed: u64,
    /// Most connections open at once (one more is answered 503 and closed).
    pub max_connections: usize,
    /// Append the listening line to `<store>/cli.log`.
    pub write_cli_log: bool,
    /// Load `<store>/.truth/faults.txt` when present.
    pub load_fault_file: bool,
    /// How long a `hang` lasts at most (the server's stop ends it earlier).
    pub hang_limit: Duration,
    /// How the answers' trajectories are spelled ([`style`]).
    pub json_style: JsonStyle,
    /// IDE mode: the IDE's log folder to announce the port and token in
    /// (see [`default_ide_logs_dir`]). A token is always required in IDE
    /// mode: `csrf_token`, or one derived from the seed and the port.
    pub ide_logs: Option<PathBuf>,
}

impl SimOptions {
    /// Defaults for a store.
    pub fn new(store: impl Into<PathBuf>) -> SimOptions {
        SimOptions {
            store: store.into(),
            port: 0,
            csrf_token: None,
            faults: Vec::new(),
            seed: 1,
            max_connections: server::Limits::default().max_connections,
            write_cli_log: true,
            load_fault_file: true,
            hang_limit: Duration::from_secs(3600),
            json_style: JsonStyle::Canonical,
            ide_logs: None,
        }
    }
}

/// The IDE's log folder on this system, as the IDE places it: on Linux
/// `$XDG_CONFIG_HOME/Antigravity/logs` (default `~/.config`), on macOS
/// `~/Library/Application Support/Antigravity/logs`, on Windows
/// `%APPDATA%\Antigravity\logs`. `None` when the variable it derives from
/// is unset.
pub fn default_ide_logs_dir() -> Option<PathBuf> {
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

/// A UUID-shaped token derived from `seed` and `port` (new with every port,
/// as the IDE's is new with every start).
fn derived_token(seed: u64, port: u16) -> String {
    let p = port.to_string();
    let a = crate::corpus::rng::derive(seed, &["csrf", &p, "a"]);
    let b = crate::corpus::rng::derive(seed, &["csrf", &p, "b"]);
    let h = crate::util::hex(&[a.to_be_bytes(), b.to_be_bytes()].concat());
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// State shared by the connection threads.
pub(crate) struct Shared {
    pub store: PathBuf,
    /// Set before the first request can arrive (IDE mode derives it from
    /// the bound port).
    pub csrf: Arc<Mutex<Option<String>>>,
    pub faults: Vec<FaultSpec>,
    pub seed: u64,
    pub hang_limit: Duration,
    pub loaded: Mutex<HashSet<String>>,
    /// The answers' spelling, and the trajectory type it walks.
    pub style: JsonStyle,
    pub trajectory: Option<prost_reflect::MessageDescriptor>,
    /// Source rewrites done per id (mutate-source).
    pub mutations: Mutex<HashMap<String, u64>>,
    pub counter: AtomicU64,
    pub stopping: AtomicBool,
    /// Never receives: disconnects when the server stops (wakes sleepers).
    pub stop_rx: Receiver<()>,
}

/// A running simulated daemon.
pub struct DaemonSim {
    port: u16,
    shared: Arc<Shared>,
    server: Option<server::HttpServer>,
    stop_tx: Option<Sender<()>>,
}

impl std::fmt::Debug for DaemonSim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DaemonSim")
            .field("port", &self.port)
            .field("store", &self.shared.store)
            .finish()
    }
}

fn io(path: &Path, e: std::io::Error) -> SimError {
    SimError::Io {
        path: path.to_path_buf(),
        source: e,
    }
}

/// Reads `.truth/faults.txt` (one `--fault` spec a line; `#` comments).
pub fn read_fault_file(store: &Path) -> Result<Vec<FaultSpec>, SimError> {
    let p = store.join(".truth").join("faults.txt");
    if !p.exists() {
        return Ok(Vec::new());
    }
    let text = std::fs::read_to_string(&p).map_err(|e| io(&p, e))?;
    let mut out = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        out.push(FaultSpec::parse(l)?);
    }
    Ok(out)
}

impl DaemonSim {
    /// Binds 127.0.0.1:`opts.port`, starts serving and writes the
    /// listening line to the store's `cli.log`.
    pub fn start(opts: SimOptions) -> Result<DaemonSim, SimError> {
        let views = opts.store.join(".truth").join("daemon");
        if !views.is_dir() {
            return Err(SimError::NotAStore(opts.store.clone()));
        }
        let mut faults = if opts.load_fault_file {
            read_fault_file(&opts.store)?
        } else {
            Vec::new()
        };
        faults.extend(opts.faults.iter().cloned());
        let trajectory = match opts.json_style {
            JsonStyle::Canonical => None,
            _ => Some(
                crate::schema::Schema::modeled()
                    .and_then(|s| s.message("gemini_coder.Trajectory"))
                    .map_err(|e| SimError::Schema(e.to_string()))?,
            ),
        };
        let (stop_tx, stop_rx) = crossbeam_channel::bounded::<()>(0);
        // IDE mode: the token depends on the port, known only once bound
        let csrf = Arc::new(Mutex::new(opts.csrf_token.clone()));
        let shared = Arc::new(Shared {
            store: opts.store.clone(),
            csrf: Arc::clone(&csrf),
            faults,
            seed: opts.seed,
            hang_limit: opts.hang_limit,
            loaded: Mutex::new(HashSet::new()),
            style: opts.json_style,
            trajectory,
            mutations: Mutex::new(HashMap::new()),
            counter: AtomicU64::new(0),
            stopping: AtomicBool::new(false),
            stop_rx,
        });
        let sh = Arc::clone(&shared);
        let handler: server::Handler = Arc::new(move |req| serve::handle(req, &sh));
        let limits = server::Limits {
            max_body: serve::MAX_REQUEST,
            max_connections: opts.max_connections.max(1),
        };
        let server =
            server::HttpServer::start(opts.port, limits, handler).map_err(|e| SimError::Bind {
                port: opts.port,
                detail: e.to_string(),
            })?;
        let port = server.addr().port();
        if opts.ide_logs.is_some() {
            if let Ok(mut t) = csrf.lock() {
                if t.is_none() {
                    *t = Some(derived_token(opts.seed, port));
                }
            }
        }
        let sim = DaemonSim {
            port,
            shared,
            server: Some(server),
            stop_tx: Some(stop_tx),
        };
        if let Some(logs) = &opts.ide_logs {
            let token = sim.csrf_token().unwrap_or_default();
            append_ide_logs(logs, port, &token)?;
        } else if opts.write_cli_log {
            append_cli_log(&opts.store, port)?;
        }
        Ok(sim)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The `x-codeium-csrf-token` the daemon requires, if any.
    pub fn csrf_token(&self) -> Option<String> {
        self.shared.csrf.lock().ok().and_then(|t| t.clone())
    }

    /// The faults in force (command line and fault file).
    pub fn faults(&self) -> &[FaultSpec] {
        &self.shared.faults
    }

    /// Stops the server: hung requests are released, accepted connections
    /// are shut down, every server thread is joined.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let Some(server) = self.server.take() else {
            return;
        };
        self.shared.stopping.store(true, Ordering::SeqCst);
        // wakes every paused request (latency, jitter, hang)
        drop(self.stop_tx.take());
        server.stop();
    }
}

impl Drop for DaemonSim {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn append_cli_log(store: &Path, port: u16) -> Result<(), SimError> {
    use std::io::Write;
    let p = store.join("cli.log");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&p)
        .map_err(|e| io(&p, e))?;
    let now = crate::util::time::now_rfc3339();
    let decoy = if port == u16::MAX {
        port - 1
    } else {
        port.wrapping_add(1).max(1)
    };
    let text = format!(
        "{now} listening on random port at {decoy} for HTTPS (gRPC)\n{now} listening on random port at {port} for HTTP\n"
    );
    f.write_all(text.as_bytes()).map_err(|e| io(&p, e))
}

fn append(p: &Path, text: &str) -> Result<(), SimError> {
    use std::io::Write;
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(p)
        .map_err(|e| io(p, e))?;
    f.write_all(text.as_bytes()).map_err(|e| io(p, e))
}

/// The IDE's two logs: the language server's glog port lines (HTTPS decoy
/// first, as the IDE writes them) and the main log's spawn line.
fn append_ide_logs(logs: &Path, port: u16, token: &str) -> Result<(), SimError> {
    let (date, glog) = crate::util::time::log_stamps();
    let pid = std::process::id();
    let decoy = if port == u16::MAX {
        port - 1
    } else {
        port.wrapping_add(1).max(1)
    };
    append(
        &logs.join("main.log"),
        &format!(
            "[{date}] [info]  Spawning: /opt/Antigravity-x64/resources/bin/language_server --standalone --override_ide_name antigravity --https_server_port 0 --csrf_token {token} --app_data_dir antigravity --enable_sidecars\n"
        ),
    )?;
    append(
        &logs.join("language_server.log"),
        &format!(
            "{glog} {pid} server.go:514] Language server listening on random port at {decoy} for HTTPS (gRPC)\n\
             {glog} {pid} server.go:522] Language server listening on random port at {port} for HTTP\n"
        ),
    )
}
