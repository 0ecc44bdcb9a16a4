//! Canonical JSON: object keys sorted by their UTF-8 bytes, no insignificant
//! whitespace, strings escaped as serde_json escapes them, numbers written
//! exactly as they were received (serde_json's arbitrary precision).

use serde_json::Value;

/// The canonical encoding of `v`.
pub fn canonical_json(v: &Value) -> Vec<u8> {
    canonical_json_without(v, None)
}

/// [`canonical_json`] of `v` with the top-level key `omit` left out (as if
/// removed from a copy, without making one).
pub fn canonical_json_without(v: &Value, omit: Option<&str>) -> Vec<u8> {
    let mut out = Vec::new();
    write(v, omit, &mut out);
    out
}

fn write(v: &Value, omit: Option<&str>, out: &mut Vec<u8>) {
    match v {
        Value::Object(o) => {
            let mut entries: Vec<(&String, &Value)> =
                o.iter().filter(|(k, _)| Some(k.as_str()) != omit).collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (k, x)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                string(k, out);
                out.push(b':');
                write(x, None, out);
            }
            out.push(b'}');
        }
        Value::Array(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(x, None, out);
            }
            out.push(b']');
        }
        // Writing into a Vec cannot fail (serde_json fails only on I/O).
        other => {
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

/// Appends `s` as a JSON string, escaped as serde_json escapes it.
fn string(s: &str, out: &mut Vec<u8>) {
    let _ = serde_json::to_writer(&mut *out, s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The definition: keys sorted by their bytes, each value as serde_json
    /// writes it, nothing else.
    fn reference(v: &Value) -> Vec<u8> {
        match v {
            Value::Object(o) => {
                let mut keys: Vec<&String> = o.keys().collect();
                keys.sort();
                let mut out = b"{".to_vec();
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend(serde_json::to_vec(k).unwrap());
                    out.push(b':');
                    out.extend(reference(&o[k.as_str()]));
                }
                out.push(b'}');
                out
            }
            Value::Array(a) => {
                let mut out = b"[".to_vec();
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend(reference(x));
                }
                out.push(b']');
                out
            }
            other => serde_json::to_vec(other).unwrap(),
        }
    }

    fn samples() -> Vec<Value> {
        vec![
            json!(null),
            json!(true),
            json!(12345678901234567890u64),
            json!(-1.5e300),
            json!("tab\t quote\" slash\\ nul\u{0} é 😀"),
            json!({"b": 1, "a": [1, {"z": null, "y": "\n"}], "é": {}, "A": [], "": 0}),
            serde_json::from_str(r#"{"n": 1.000000000000000000001, "m": 1e400}"#).unwrap(),
        ]
    }

    #[test]
    fn matches_the_definition() {
        for v in samples() {
            assert_eq!(canonical_json(&v), reference(&v), "{v}");
        }
    }

    #[test]
    fn omits_only_the_top_level_key() {
        let v = json!({"agyReader": {"x": 1}, "b": {"agyReader": 2}, "a": 1});
        let mut copy = v.clone();
        copy.as_object_mut().unwrap().remove("agyReader");
        assert_eq!(
            canonical_json_without(&v, Some("agyReader")),
            reference(&copy)
        );
        assert_eq!(canonical_json_without(&v, None), reference(&v));
    }
}
