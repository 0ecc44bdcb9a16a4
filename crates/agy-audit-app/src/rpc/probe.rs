//! What one probe of a daemon's port answered (a leaf): the raw answer
//! [`super::DaemonClient::probe_answer`] gets and [`super::ide::classify`]
//! judges, so the client and the IDE discovery share these types without
//! importing each other.

/// The RPC a listener is asked, with and without the token: the read-only
/// GetCascadeTrajectory of the nil conversation id (no conversation is
/// loaded or changed), as [`super::DaemonClient::check_access`] asks it.
pub const PROBE_METHOD: &str = "GetCascadeTrajectory";
/// The most of a probe's answer that is read.
pub const PROBE_MAX_BODY: u64 = 64 << 10;

/// The body of a probe's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeBody {
    /// The whole body (at most [`PROBE_MAX_BODY`] bytes).
    Read(Vec<u8>),
    /// Longer than [`PROBE_MAX_BODY`]: not kept.
    TooLarge,
    /// A 401/403 to a request that carried the token: never read (it may
    /// echo the token).
    Unread,
}

/// What a listener answered one probe request with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeReply {
    pub status: u16,
    /// The `content-type` header, when it is text.
    pub content_type: Option<String>,
    pub body: ProbeBody,
}

/// Why a probe got no HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeFailure {
    /// No connection (refused, no route).
    #[error("no connection: {0}")]
    Connect(String),
    /// Connected, but no answer before the deadline.
    #[error("no answer within {0} s")]
    NoAnswer(u64),
    /// Connected, but what came back is no HTTP response (or it stopped
    /// short).
    #[error("no HTTP answer ({0})")]
    NotHttp(String),
}
