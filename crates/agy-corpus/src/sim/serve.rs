//! Request handling of the simulated daemon.

use super::fault::FaultKind;
use super::server::{Reply, Request};
use super::{Shared, SERVICE_PREFIX};
use crate::corpus::rng;
use serde_json::{json, Value};
use std::io::Read;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Largest request body read.
pub(crate) const MAX_REQUEST: u64 = 1 << 20;

fn respond_json(status: u16, body: Vec<u8>) -> Reply {
    Reply::Json { status, body }
}

fn error(status: u16, code: &str, message: &str) -> Reply {
    let body = json!({"code": code, "message": message})
        .to_string()
        .into_bytes();
    respond_json(status, body)
}

/// Sleeps up to `d`, returning early when the server stops.
fn pause(shared: &Shared, d: Duration) {
    let _ = shared.stop_rx.recv_timeout(d);
}

/// Answers one request.
pub(crate) fn handle(req: &Request, shared: &Shared) -> Reply {
    if req.method != "POST" {
        return error(405, "unimplemented", "only POST is supported");
    }
    let Some(method) = req.path.strip_prefix(SERVICE_PREFIX) else {
        return error(
            404,
            "unimplemented",
            &format!("unknown procedure {}", req.path),
        );
    };
    let csrf = shared.csrf.lock().ok().and_then(|t| t.clone());
    if let Some(expected) = &csrf {
        match req.header("x-codeium-csrf-token") {
            None => return error(401, "unauthenticated", "missing x-codeium-csrf-token"),
            Some(t) if t != expected => {
                return error(403, "permission_denied", "invalid x-codeium-csrf-token")
            }
            Some(_) => {}
        }
    }
    let ct = req
        .header("Content-Type")
        .unwrap_or("")
        .to_ascii_lowercase();
    if ct.split(';').next().map(str::trim) != Some("application/json") {
        return error(
            415,
            "invalid_argument",
            &format!("unsupported content type `{ct}`; use application/json"),
        );
    }
    let Ok(Value::Object(args)) = serde_json::from_slice::<Value>(&req.body) else {
        return error(400, "invalid_argument", "the body is not a JSON object");
    };
    let Some(id) = args.get("cascadeId").and_then(Value::as_str) else {
        return error(400, "invalid_argument", "cascadeId is required");
    };
    if !valid_id(id) {
        return error(
            400,
            "invalid_argument",
            "cascadeId is not a conversation id",
        );
    }
    let faults: Vec<FaultKind> = shared
        .faults
        .iter()
        .filter(|f| f.applies(id, shared.seed))
        .map(|f| f.kind)
        .collect();
    for f in &faults {
        match f {
            FaultKind::Latency(ms) => pause(shared, Duration::from_millis(*ms)),
            FaultKind::Jitter(ms) => {
                let n = shared.counter.fetch_add(1, Ordering::SeqCst);
                let d = rng::derive(shared.seed, &["jitter", id, &n.to_string()]) % (ms + 1);
                pause(shared, Duration::from_millis(d));
            }
            _ => {}
        }
    }
    match method {
        "LoadTrajectory" => load(shared, id, &faults),
        "GetCascadeTrajectory" => {
            let full = args.get("trajectoryVerbosity").and_then(Value::as_str)
                == Some("CLIENT_TRAJECTORY_VERBOSITY_FULL")
                && args.get("disableRehydration").and_then(Value::as_bool) == Some(true);
            get(shared, id, full, &faults)
        }
        other => error(404, "unimplemented", &format!("unknown method {other}")),
    }
}

fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

fn known(shared: &Shared, id: &str) -> bool {
    let conv = shared.store.join("conversations");
    let views = shared.store.join(".truth").join("daemon");
    (conv.join(format!("{id}.db")).exists() || conv.join(format!("{id}.pb")).exists())
        && views.join(format!("{id}.full.json")).exists()
        && views.join(format!("{id}.ordinary.json")).exists()
}

fn load(shared: &Shared, id: &str, faults: &[FaultKind]) -> Reply {
    if !known(shared, id) {
        return error(404, "not_found", &format!("conversation {id} not found"));
    }
    if faults.contains(&FaultKind::NotLoaded) {
        return error(500,
            "internal",
            &format!("failed to load trajectory {id}: loading conversation: cipher: message authentication failed"),
        );
    }
    if let Ok(mut l) = shared.loaded.lock() {
        l.insert(id.to_string());
    }
    respond_json(200, b"{}".to_vec())
}

#[derive(serde::Deserialize)]
struct StepsOnly {
    #[serde(default)]
    steps: Vec<serde::de::IgnoredAny>,
}

fn get(shared: &Shared, id: &str, full: bool, faults: &[FaultKind]) -> Reply {
    if !known(shared, id) {
        return error(404, "not_found", &format!("conversation {id} not found"));
    }
    let loaded = shared
        .loaded
        .lock()
        .map(|l| l.contains(id))
        .unwrap_or(false);
    if !loaded {
        return error(
            404,
            "not_found",
            &format!("cascade {id} is not loaded; call LoadTrajectory first"),
        );
    }
    for f in faults {
        match f {
            FaultKind::Http500 => return error(500, "internal", "internal error"),
            FaultKind::Http503 => return error(503, "unavailable", "language server is busy"),
            FaultKind::Reset => return Reply::Reset,
            FaultKind::Hang => {
                pause(shared, shared.hang_limit);
                if shared.stopping.load(Ordering::SeqCst) {
                    return Reply::Reset;
                }
                return error(504, "deadline_exceeded", "request hung");
            }
            _ => {}
        }
    }
    let which = if full { "full" } else { "ordinary" };
    let path = shared
        .store
        .join(".truth")
        .join("daemon")
        .join(format!("{id}.{which}.json"));
    let view = match std::fs::read(&path) {
        Ok(v) => v,
        Err(e) => return error(500, "internal", &format!("reading the trajectory: {e}")),
    };
    let (view, steps) = match transform(shared, id, full, faults, view) {
        Ok(v) => v,
        Err(m) => return error(500, "internal", &m),
    };
    // --json-style: another legal spelling of the same value, after the
    // content faults (which edit the canonical form).
    let view = match &shared.trajectory {
        Some(desc) => {
            let label = [id, which];
            match super::style::restyle(&view, desc, shared.style, shared.seed, &label) {
                Ok(v) => v,
                Err(e) => return error(500, "internal", &e.to_string()),
            }
        }
        None => view,
    };
    let mut body = Vec::with_capacity(view.len() + 96);
    body.extend_from_slice(b"{\"trajectory\":");
    body.extend_from_slice(&view);
    body.extend_from_slice(
        format!(",\"status\":\"CASCADE_RUN_STATUS_IDLE\",\"numTotalSteps\":\"{steps}\"}}")
            .as_bytes(),
    );
    // mutate-source: the source is rewritten with every answer for the id
    // (the first included), as while agy keeps writing the conversation, so
    // a reader that re-brackets its fetch sees it change every time. The
    // answer's content is the view from before the change; the write is done
    // before the body is sent, so no client can see the answer first.
    // The lock is held through the rewrite: a client's two concurrent
    // GetCascadeTrajectory calls must not interleave two rewrites of one file.
    if faults.contains(&FaultKind::MutateSource) {
        if let Ok(mut m) = shared.mutations.lock() {
            let n = m.entry(id.to_string()).or_insert(0);
            *n += 1;
            let n = *n;
            let _ = super::mutate::mutate_source(&shared.store, id, shared.seed, n);
        }
    }
    if faults.contains(&FaultKind::TruncatedBody) {
        let sent = body.len() / 2;
        Reply::Truncated { body, sent }
    } else if faults.contains(&FaultKind::InvalidJson) {
        let cut = (body.len() / 2).max(1);
        let mut b = body[..cut].to_vec();
        b.extend_from_slice(b"\x00<!-- language server: template error -->");
        respond_json(200, b)
    } else if let Some(FaultKind::OversizedBody(n)) = faults
        .iter()
        .find(|f| matches!(f, FaultKind::OversizedBody(_)))
        .copied()
    {
        oversized(body, n)
    } else {
        respond_json(200, body)
    }
}

/// Applies the content faults to a view; returns it and its step count.
fn transform(
    shared: &Shared,
    id: &str,
    full: bool,
    faults: &[FaultKind],
    view: Vec<u8>,
) -> Result<(Vec<u8>, usize), String> {
    let content = faults.iter().any(|f| {
        matches!(
            f,
            FaultKind::StaleCache
                | FaultKind::SameStepStale
                | FaultKind::DroppedField
                | FaultKind::ExtraRpcField
                | FaultKind::VersionSkew
        )
    });
    if !content {
        let n = serde_json::from_slice::<StepsOnly>(&view)
            .map(|s| s.steps.len())
            .map_err(|e| format!("stored view is not JSON: {e}"))?;
        return Ok((view, n));
    }
    let mut v: Value =
        serde_json::from_slice(&view).map_err(|e| format!("stored view is not JSON: {e}"))?;
    let pick =
        |n: usize| (rng::derive(shared.seed, &["fault-step", id]) % n.max(1) as u64) as usize;
    let Some(Value::Array(steps)) = v.get_mut("steps") else {
        return Err("stored view has no steps".into());
    };
    for f in faults {
        let n = steps.len();
        match f {
            FaultKind::StaleCache if n > 1 => {
                let keep = n - (n / 5).max(1);
                steps.truncate(keep.max(1));
            }
            FaultKind::SameStepStale if n > 0 => {
                let k = pick(n);
                older_step(&mut steps[k]);
            }
            FaultKind::DroppedField if !full && n > 0 => {
                let k = pick(n);
                if let Some(Value::Object(m)) = steps[k].get_mut("metadata") {
                    m.remove("createdAt");
                }
            }
            FaultKind::ExtraRpcField if full && n > 0 => {
                let k = pick(n);
                if let Value::Object(m) = &mut steps[k] {
                    m.insert(
                        "rpcRenderHints".into(),
                        json!({"collapsed": true, "renderVersion": 3}),
                    );
                }
            }
            FaultKind::VersionSkew if !full && n > 1 => {
                steps.truncate(n - 1);
                if let Some(last) = steps.last_mut() {
                    older_step(last);
                }
            }
            _ => {}
        }
    }
    let count = steps.len();
    let bytes = serde_json::to_vec(&v).map_err(|e| e.to_string())?;
    Ok((bytes, count))
}

/// The step as an older cache would hold it: still running.
fn older_step(step: &mut Value) {
    let Value::Object(m) = step else { return };
    let was_running = m.get("status").and_then(Value::as_str) == Some("CORTEX_STEP_STATUS_RUNNING");
    m.insert(
        "status".into(),
        Value::String(
            if was_running {
                "CORTEX_STEP_STATUS_PENDING"
            } else {
                "CORTEX_STEP_STATUS_RUNNING"
            }
            .into(),
        ),
    );
    if let Some(Value::Object(meta)) = m.get_mut("metadata") {
        meta.remove("completedAt");
        if let Some(Value::Array(t)) = meta
            .get_mut("internalMetadata")
            .and_then(|i| i.get_mut("statusTransitions"))
        {
            if t.len() > 1 {
                t.pop();
            }
        }
    }
}

/// A body padded to about `total` bytes, produced lazily.
struct Padded {
    head: Vec<u8>,
    pos: usize,
    padding: u64,
    tail: &'static [u8],
    tail_pos: usize,
}

impl Read for Padded {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos < self.head.len() {
            let n = buf.len().min(self.head.len() - self.pos);
            buf[..n].copy_from_slice(&self.head[self.pos..self.pos + n]);
            self.pos += n;
            return Ok(n);
        }
        if self.padding > 0 {
            let n = (buf.len() as u64).min(self.padding) as usize;
            buf[..n].fill(b' ');
            self.padding -= n as u64;
            return Ok(n);
        }
        let n = buf.len().min(self.tail.len() - self.tail_pos);
        buf[..n].copy_from_slice(&self.tail[self.tail_pos..self.tail_pos + n]);
        self.tail_pos += n;
        Ok(n)
    }
}

fn oversized(body: Vec<u8>, total: u64) -> Reply {
    // the body's closing brace moves after the padding (whitespace is valid JSON)
    let mut head = body;
    head.pop();
    let tail: &'static [u8] = b"}";
    let padding = total.saturating_sub(head.len() as u64 + 1);
    let len = head.len() as u64 + padding + 1;
    let reader = Padded {
        head,
        pos: 0,
        padding,
        tail,
        tail_pos: 0,
    };
    Reply::Stream {
        status: 200,
        len,
        body: Box::new(reader),
    }
}
