//! The JSON comparison of a daemon answer against a fixed expected
//! trajectory: conversation f7cb245c of the default corpus
//! (`fuzz/fixtures/compare/`, read by the reader's own pipeline), its full
//! view (the persisted trajectory) and its ordinary view (the projection).
//!
//! The input is an answer (enveloped, as the daemon sends it: the envelope
//! is checked strictly first) or a bare trajectory (as a capture keeps it).
//! For each view both paths run: the one-pass `compare::stream` and the
//! value comparison (`compare::value`); differential: the one-pass path
//! never says "equal" where the value path finds a difference, and the
//! production entry points (`compare_full`, `compare_ordinary`) agree with
//! the value path.
//!
//! A custom mutator keeps inputs near the canonical text: half the time it
//! rewrites one JSON value into another legal spelling of the same protobuf
//! value (numbers respelled or quoted, Timestamps with other fraction
//! digits, either base64 alphabet, proto field names, members reordered,
//! indentation) or a near miss (a value changed, a member dropped or
//! added); otherwise libFuzzer's own mutations. How often "equal" is reached
//! is printed on stderr (`compare_json: equal ...`), at each power of two.
#![no_main]
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

use agy_audit::compare::{self, stream, value};
use agy_audit::pipeline::{prepare, AuditContext};
use agy_audit::rpc::envelope;
use agy_audit::schema::Schema;
use agy_audit::source::legacy::LegacyKey;
use agy_audit::verdict::ReasonClass;
use libfuzzer_sys::{fuzz_mutator, fuzz_target, fuzzer_mutate};
use prost_reflect::DynamicMessage;
use serde_json::{Map, Number, Value};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::LazyLock;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/compare/f7cb245c-5845-485a-b742-99cb2d064317.pb"
);

struct Expected {
    schema: Schema,
    full: DynamicMessage,
    ordinary: DynamicMessage,
}

static EXPECTED: LazyLock<Expected> = LazyLock::new(|| {
    let schema = Schema::modeled().expect("modeled schema");
    let key = LegacyKey::default();
    let ctx = AuditContext {
        schema: &schema,
        key: &key,
        client: None,
        bracket_retries: 0,
    };
    let mut p = prepare(&ctx, Path::new(FIXTURE)).expect("the fixture reads");
    assert!(p.refusal().is_none(), "the fixture qualifies");
    let full = p.source.materialize().expect("the fixture decodes").clone();
    let ordinary = p.projection.as_ref().expect("projected").ordinary(&full);
    Expected {
        schema,
        full,
        ordinary,
    }
});

static RUNS: AtomicU64 = AtomicU64::new(0);
static EQUAL_FULL: AtomicU64 = AtomicU64::new(0);
static EQUAL_ORDINARY: AtomicU64 = AtomicU64::new(0);
static EQUAL_BY_VALUE_ONLY: AtomicU64 = AtomicU64::new(0);

fuzz_target!(|data: &[u8]| {
    let e = &*EXPECTED;
    let runs = RUNS.fetch_add(1, Relaxed) + 1;
    if runs.is_power_of_two() {
        eprintln!(
            "compare_json: equal full={} ordinary={} (by the value path only: {}) of {runs} inputs",
            EQUAL_FULL.load(Relaxed),
            EQUAL_ORDINARY.load(Relaxed),
            EQUAL_BY_VALUE_ONLY.load(Relaxed),
        );
    }
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    let trajectory = if envelope::is_enveloped(body) {
        match envelope::parse(body) {
            Ok(env) => &body[env.trajectory],
            Err(_) => return,
        }
    } else {
        match envelope::parse_bare(body) {
            Ok(_) => body,
            Err(_) => return,
        }
    };
    // the full view
    let fast = stream::equals(&e.full, trajectory);
    let diffs = value::diff_text(&e.full, trajectory, compare::MAX_REPORTED_PATHS);
    assert!(
        !fast || diffs.is_empty(),
        "full: the one-pass path says equal, the value path finds {diffs:?}"
    );
    let verdict = compare::compare_full(&e.schema, &e.full, trajectory);
    assert_eq!(
        verdict.is_ok(),
        diffs.is_empty(),
        "full: compare_full disagrees"
    );
    if let Err(m) = &verdict {
        assert_eq!(m.class, ReasonClass::FullMismatch);
    }
    if diffs.is_empty() {
        EQUAL_FULL.fetch_add(1, Relaxed);
        if !fast {
            EQUAL_BY_VALUE_ONLY.fetch_add(1, Relaxed);
        }
    }
    // the ordinary view
    let fast = stream::equals(&e.ordinary, trajectory);
    let (diffs, rpc_only) =
        value::diff_text_rpc_only(&e.ordinary, trajectory, compare::MAX_REPORTED_PATHS);
    assert!(
        !fast || (diffs.is_empty() && rpc_only == value::RpcOnly::default()),
        "ordinary: the one-pass path says equal, the value path finds {diffs:?} {rpc_only:?}"
    );
    let verdict = compare::compare_ordinary(&e.schema, &e.ordinary, trajectory);
    assert_eq!(
        verdict.is_ok(),
        diffs.is_empty(),
        "ordinary: compare_ordinary disagrees"
    );
    if diffs.is_empty() {
        EQUAL_ORDINARY.fetch_add(1, Relaxed);
        if !fast {
            EQUAL_BY_VALUE_ONLY.fetch_add(1, Relaxed);
        }
    }
});

/// splitmix64 over libFuzzer's seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn count(v: &Value) -> usize {
    1 + match v {
        Value::Object(m) => m.values().map(count).sum(),
        Value::Array(a) => a.iter().map(count).sum(),
        _ => 0,
    }
}

/// Mutates the `n`-th node in pre-order; whether there was one.
fn mutate_nth(v: &mut Value, n: &mut usize, r: &mut Rng) -> bool {
    if *n == 0 {
        mutate_node(v, r);
        return true;
    }
    *n -= 1;
    match v {
        Value::Object(m) => m.values_mut().any(|c| mutate_nth(c, n, r)),
        Value::Array(a) => a.iter_mut().any(|c| mutate_nth(c, n, r)),
        _ => false,
    }
}

fn num(text: &str) -> Option<Value> {
    serde_json::from_str::<Number>(text).ok().map(Value::Number)
}

fn snake(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Rewrites one node: mostly a legal respelling of the same value, sometimes
/// a near miss.
fn mutate_node(node: &mut Value, r: &mut Rng) {
    match node {
        Value::Number(n) => {
            let t = n.to_string();
            let new = match r.below(6) {
                0 => num(&format!("{t}e0")),
                1 if !t.contains(['.', 'e', 'E']) => num(&format!("{t}.0")),
                2 => Some(Value::String(t.clone())),
                3 => num(&format!("{t}1")),
                4 => num(&format!("-{}", t.trim_start_matches('-'))),
                _ => num("0"),
            };
            if let Some(v) = new {
                *node = v;
            }
        }
        Value::String(s) => {
            let digits = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'-');
            let upper = !s.is_empty() && s.bytes().all(|b| b.is_ascii_uppercase() || b == b'_');
            if digits && r.below(2) == 0 {
                if let Some(v) = num(s) {
                    *node = v;
                    return;
                }
            }
            if upper && r.below(2) == 0 {
                *node = Value::Number(Number::from(r.below(40)));
                return;
            }
            if s.ends_with('Z') && s.contains('T') {
                let body = &s[..s.len() - 1];
                *s = match r.below(4) {
                    0 if body.contains('.') => format!("{body}000Z"),
                    1 if !body.contains('.') => format!("{body}.000000000Z"),
                    2 => format!("{body}+00:00"),
                    _ => format!("{body}+01:30"),
                };
                return;
            }
            if s.ends_with('s') && s[..s.len() - 1].parse::<f64>().is_ok() {
                let body = &s[..s.len() - 1];
                *s = if body.contains('.') {
                    format!("{body}0s")
                } else {
                    format!("{body}.000s")
                };
                return;
            }
            match r.below(4) {
                0 if s.contains(['+', '/', '=']) => {
                    *s = s
                        .replace('+', "-")
                        .replace('/', "_")
                        .trim_end_matches('=')
                        .to_string();
                }
                1 => s.push('x'),
                2 => {
                    s.pop();
                }
                _ => *node = Value::Null,
            }
        }
        Value::Bool(b) => *b = !*b,
        Value::Null => *node = Value::Number(Number::from(0)),
        Value::Object(m) => {
            if m.is_empty() {
                return;
            }
            let keys: Vec<String> = m.keys().cloned().collect();
            let k = keys[r.below(keys.len())].clone();
            match r.below(5) {
                0 => {
                    let mut rev = Map::new();
                    for k in keys.iter().rev() {
                        if let Some(v) = m.remove(k) {
                            rev.insert(k.clone(), v);
                        }
                    }
                    *m = rev;
                }
                1 | 2 => {
                    // the proto field name instead of the JSON name
                    let mut out = Map::new();
                    for key in keys {
                        if let Some(v) = m.remove(&key) {
                            let name = if key == k { snake(&key) } else { key };
                            out.insert(name, v);
                        }
                    }
                    *m = out;
                }
                3 => {
                    m.remove(&k);
                }
                _ => {
                    m.insert(format!("{k}X"), Value::Number(Number::from(1)));
                }
            }
        }
        Value::Array(a) => {
            if a.is_empty() {
                return;
            }
            let i = r.below(a.len());
            match r.below(3) {
                0 => {
                    a.remove(i);
                }
                1 => {
                    let c = a[i].clone();
                    a.insert(i, c);
                }
                _ => {
                    let j = r.below(a.len());
                    a.swap(i, j);
                }
            }
        }
    }
}

fn mutate_json(data: &[u8], r: &mut Rng) -> Option<Vec<u8>> {
    let mut v: Value = serde_json::from_slice(data).ok()?;
    let mut n = r.below(count(&v));
    if !mutate_nth(&mut v, &mut n, r) {
        return None;
    }
    if r.below(4) == 0 {
        serde_json::to_vec_pretty(&v).ok()
    } else {
        serde_json::to_vec(&v).ok()
    }
}

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    let mut r = Rng(u64::from(seed) ^ 0x5eed);
    if r.below(2) == 0 {
        if let Some(out) = mutate_json(&data[..size], &mut r) {
            if out.len() <= max_size {
                data[..out.len()].copy_from_slice(&out);
                return out.len();
            }
        }
    }
    fuzzer_mutate(data, size, max_size)
});
