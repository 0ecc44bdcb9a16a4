//! The one-pass comparison (`compare::stream::equals`) may only ever make an
//! equal response cheaper to confirm: whenever it says "equal", the strict
//! parse and the tree comparison must say so too. Checked on every daemon view
//! of a generated corpus, and on systematic near-misses of each view.

mod common;

use agy_audit::compare::{compare_slow, stream};
use agy_audit::schema::Schema;
use agy_audit::verdict::ReasonClass;
use common::generated_daemon_views;
use prost_reflect::DynamicMessage;
use serde_json::Value;

/// Every node path of a JSON tree (as index/key steps).
fn nodes(v: &Value, path: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    out.push(path.clone());
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                path.push(Step::Key(k.clone()));
                nodes(c, path, out);
                path.pop();
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                path.push(Step::Index(i));
                nodes(c, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

fn at<'a>(v: &'a mut Value, path: &[Step]) -> &'a mut Value {
    path.iter().fold(v, |v, s| match s {
        Step::Key(k) => &mut v[k.as_str()],
        Step::Index(i) => &mut v[*i],
    })
}

/// Near-misses of `v` at `path`, each with whether it should still be equal.
fn mutations(v: &Value, path: &[Step]) -> Vec<(String, Value, bool)> {
    let mut out = Vec::new();
    let mut push = |what: &str, f: &dyn Fn(&mut Value) -> bool, equal: bool| {
        let mut m = v.clone();
        if f(at(&mut m, path)) {
            out.push((format!("{what} at {path:?}"), m, equal));
        }
    };
    push(
        "string changed",
        &|n| match n {
            Value::String(s) => {
                s.push('x');
                true
            }
            _ => false,
        },
        false,
    );
    push(
        "number changed",
        &|n| match n {
            Value::Number(x) => {
                let t = x.to_string();
                let t = match t.strip_prefix('-') {
                    Some(rest) => format!("-1{rest}"),
                    None => format!("1{t}"),
                };
                *n = serde_json::from_str(&t).unwrap();
                true
            }
            _ => false,
        },
        false,
    );
    push(
        "number quoted",
        &|n| match n {
            Value::Number(x) => {
                *n = Value::String(x.to_string());
                true
            }
            _ => false,
        },
        false,
    );
    push(
        "number respelled",
        &|n| match n {
            Value::Number(x) => {
                let t = x.to_string();
                if t.contains(['e', 'E']) {
                    return false;
                }
                let re = if t.contains('.') {
                    format!("{t}0")
                } else {
                    format!("{t}.0")
                };
                *n = serde_json::from_str(&re).unwrap();
                true
            }
            _ => false,
        },
        true,
    );
    push(
        "key added",
        &|n| match n {
            Value::Object(m) => {
                m.insert("zzUnknown".into(), Value::Bool(true));
                true
            }
            _ => false,
        },
        false,
    );
    push(
        "key removed",
        &|n| match n {
            Value::Object(m) if !m.is_empty() => {
                let k = m.keys().next().unwrap().clone();
                m.shift_remove(&k);
                true
            }
            _ => false,
        },
        false,
    );
    push(
        "keys reversed",
        &|n| match n {
            Value::Object(m) if m.len() > 1 => {
                let mut items: Vec<_> = std::mem::take(m).into_iter().collect();
                items.reverse();
                m.extend(items);
                true
            }
            _ => false,
        },
        true,
    );
    push(
        "element dropped",
        &|n| match n {
            Value::Array(a) if !a.is_empty() => {
                a.pop();
                true
            }
            _ => false,
        },
        false,
    );
    push(
        "element doubled",
        &|n| match n {
            Value::Array(a) if !a.is_empty() => {
                let last = a[a.len() - 1].clone();
                a.push(last);
                true
            }
            _ => false,
        },
        false,
    );
    push(
        "nulled",
        &|n| {
            if n.is_null() {
                false
            } else {
                *n = Value::Null;
                true
            }
        },
        false,
    );
    push(
        "bool flipped",
        &|n| match n {
            Value::Bool(b) => {
                *b = !*b;
                true
            }
            _ => false,
        },
        false,
    );
    out
}

fn check(schema: &Schema, expected: &DynamicMessage, text: &str, class: ReasonClass, what: &str) {
    let fast = stream::equals(expected, text);
    let slow = compare_slow(schema, expected, text, class);
    if fast {
        assert!(
            slow.is_ok(),
            "{what}: the fast path said equal, the slow path {slow:?}"
        );
    }
}

#[test]
fn fast_path_never_confirms_what_the_slow_path_refuses() {
    let (schema, views) = generated_daemon_views("fastpath", 8, 7);
    let mut confirmed = 0;
    let mut mutated = 0;
    let mut refused = 0;
    for dv in &views {
        let (id, view, class) = (&dv.file_id, dv.view, dv.class);
        let (expected, text) = (&dv.expected, dv.text.as_str());
        if compare_slow(&schema, expected, text, class).is_err() {
            // A planned disagreement of the daemon's view (the truth
            // says incomplete): the fast path must not confirm it either.
            assert!(!stream::equals(expected, text), "{id} {view}");
            refused += 1;
            continue;
        }
        if let Err(e) = stream::check(expected, text) {
            let col = e.column();
            let around = &text[col.saturating_sub(200)..(col + 100).min(text.len())];
            panic!("{id} {view}: the daemon's own view is not confirmed by the fast path: {e}: …{around}…");
        }
        confirmed += 1;
        let v: Value = serde_json::from_str(text).unwrap();
        let mut all = Vec::new();
        nodes(&v, &mut Vec::new(), &mut all);
        // A spread of 16 nodes, from the root down.
        let stride = (all.len() / 16).max(1);
        for path in all.iter().step_by(stride) {
            for (what, m, equal) in mutations(&v, path) {
                let t = serde_json::to_string(&m).unwrap();
                check(
                    &schema,
                    expected,
                    &t,
                    class,
                    &format!("{id} {view}: {what}"),
                );
                if equal {
                    assert!(
                        stream::equals(expected, &t),
                        "{id} {view}: {what}: still equal, confirmed by the fast path"
                    );
                }
                mutated += 1;
            }
        }
        // Textual near-misses the tree cannot express.
        let dup = text.replacen('{', "{\"trajectoryId\":\"x\",", 1);
        check(
            &schema,
            expected,
            &dup,
            class,
            &format!("{id} {view}: duplicate key"),
        );
        assert!(!stream::equals(expected, &format!("{text} {{}}")));
        assert!(!stream::equals(expected, &text[..text.len() / 2]));
    }
    assert!(
        confirmed > 8,
        "{confirmed} views confirmed ({refused} refused)"
    );
    assert!(mutated > 500, "{mutated} near-misses checked");
}
