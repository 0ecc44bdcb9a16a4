//! JSON helpers the comparison's stages share: a number's exact decimal
//! value, the kind and short rendering of a value for a difference line, and
//! the first differing paths of two JSON trees. A leaf: it imports nothing
//! of the comparison.

use serde_json::Value;

/// A number's parts as written: sign, the digits before and after the
/// point, and the exponent; `None` without any digit or with an exponent
/// that is not an `i64`.
pub(crate) fn number_parts(text: &str) -> Option<(bool, &str, &str, i64)> {
    let (neg, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text),
    };
    let (mantissa, exp) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    Some((neg, int, frac, exp))
}

/// A number's exact decimal value: sign, significant digits, exponent.
pub(crate) fn decimal(text: &str) -> Option<(bool, String, i64)> {
    let (neg, int, frac, exp) = number_parts(text)?;
    let mut digits = format!("{int}{frac}");
    let mut exp = exp - frac.len() as i64;
    let lead = digits.len() - digits.trim_start_matches('0').len();
    digits.drain(..lead);
    while digits.ends_with('0') {
        digits.pop();
        exp += 1;
    }
    if digits.is_empty() {
        return Some((false, String::new(), 0));
    }
    Some((neg, digits, exp))
}

/// Whether two JSON numbers have the same exact decimal value.
pub fn numbers_equal(a: &serde_json::Number, b: &serde_json::Number) -> bool {
    let (a, b) = (a.to_string(), b.to_string());
    a == b || matches!((decimal(&a), decimal(&b)), (Some(x), Some(y)) if x == y)
}

pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value as a mismatch reason quotes it: whole up to 60 characters, else
/// its first 60 cut back to the last break, so the cut never leaves part of
/// a word. Reasons are redacted downstream (`agy_audit_app::redact`), and a
/// rule cannot recognize a fragment of a token: a token (or URL) that the
/// 60th character would split is left out whole, never shown in part.
pub(crate) fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() <= 60 {
        return s;
    }
    let head: Vec<char> = s.chars().take(61).collect();
    let mut end = 60;
    if !is_break(head[60]) {
        while end > 0 && !is_break(head[end - 1]) {
            end -= 1;
        }
    }
    format!("{}…", head[..end].iter().collect::<String>())
}

/// Where a quoted value may be cut without splitting a token: whitespace,
/// quotes, and JSON's own punctuation.
fn is_break(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '"' | '\'' | ',' | ';' | '[' | ']' | '{' | '}' | '(' | ')' | '<' | '>'
        )
}

/// The first `limit` paths where `actual` differs from `expected`.
pub fn json_diff(expected: &Value, actual: &Value, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    walk(expected, actual, &mut String::new(), &mut out, limit);
    out
}

fn walk(e: &Value, a: &Value, path: &mut String, out: &mut Vec<String>, limit: usize) {
    if out.len() >= limit {
        return;
    }
    let at = |p: &str| {
        if p.is_empty() {
            "(root)".to_string()
        } else {
            p.to_string()
        }
    };
    match (e, a) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, ev) in x {
                let saved = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
                match y.get(k) {
                    Some(av) => walk(ev, av, path, out, limit),
                    None => out.push(format!(
                        "{}: missing from the response (expected {})",
                        at(path),
                        short(ev)
                    )),
                }
                path.truncate(saved);
                if out.len() >= limit {
                    return;
                }
            }
            for k in y.keys().filter(|k| !x.contains_key(*k)) {
                if out.len() >= limit {
                    return;
                }
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                out.push(format!(
                    "{p}: not predicted (response has {})",
                    short(&y[k])
                ));
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                out.push(format!(
                    "{}: {} elements, expected {}",
                    at(path),
                    y.len(),
                    x.len()
                ));
            }
            for (i, (ev, av)) in x.iter().zip(y).enumerate() {
                let saved = path.len();
                path.push_str(&format!("[{i}]"));
                walk(ev, av, path, out, limit);
                path.truncate(saved);
                if out.len() >= limit {
                    return;
                }
            }
        }
        (Value::Number(x), Value::Number(y)) => {
            if !numbers_equal(x, y) {
                out.push(format!("{}: {y}, expected {x}", at(path)));
            }
        }
        _ if e == a => {}
        _ if kind(e) != kind(a) => out.push(format!(
            "{}: {} {}, expected {} {}",
            at(path),
            kind(a),
            short(a),
            kind(e),
            short(e)
        )),
        _ => out.push(format!("{}: {}, expected {}", at(path), short(a), short(e))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cut never shows part of a token: the fragment a 60-character cut
    /// would leave is dropped whole (issue 46: redaction cannot recognize a
    /// fragment).
    #[test]
    fn a_long_value_is_cut_between_tokens() {
        let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
        let v = Value::String(format!("export A=1; export GITHUB_TOKEN={token} # set"));
        let s = short(&v);
        assert_eq!(s, "\"export A=1; export …");
        assert!(!s.contains("ghp_"), "{s}");
        // a break at the cut keeps the whole head
        let v = Value::String(format!("{} {}", "a".repeat(58), "tail"));
        assert_eq!(short(&v), format!("\"{} …", "a".repeat(58)));
        // short values are whole
        assert_eq!(short(&Value::String("x".into())), "\"x\"");
    }
}
