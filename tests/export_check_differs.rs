//! export-check's DIFFERS line shows where the sides differ (issue 45 item
//! 4): a saved answer changed past the width a difference shows (100
//! characters of a Markdown line, 60 of a JSON value) is reported with the
//! position of the first differing character and a window of each side
//! around it, not two prefixes cut to the same text. Through the real
//! binary on a store swept against `daemon-sim`.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{bin, output_text as text};

/// A planner response of one line, long enough, and a position past 100
/// characters whose neighbourhood is letters and spaces only (so its text
/// reads the same in the Markdown and in the JSON):
/// (step index, its text, the position).
fn long_response(answer: &serde_json::Value) -> Option<(usize, Vec<char>, usize)> {
    let steps = answer["trajectory"]["steps"].as_array()?;
    steps.iter().enumerate().find_map(|(i, s)| {
        let text = s["plannerResponse"]["response"].as_str()?;
        if text.contains('\n') {
            return None;
        }
        let chars: Vec<char> = text.chars().collect();
        let plain = |c: &char| c.is_alphanumeric() || *c == ' ';
        (105..chars.len().saturating_sub(12))
            .find(|&p| chars[p - 6..p + 12].iter().all(plain) && chars[p].is_alphabetic())
            .map(|p| (i, chars, p))
    })
}

#[test]
fn differs_shows_where_long_sides_first_differ() {
    let (_d, store, sweep) = common::swept_store(12, 11);
    let m = common::read_manifest(&sweep);
    let (copy, csweep) = common::copied_sweep(&sweep);
    let _keep = copy;
    let (id, step, chars, at) = m["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["verdict"] == "verified")
        .find_map(|s| {
            let id = s["fileId"].as_str().unwrap().to_string();
            let a: serde_json::Value = serde_json::from_slice(
                &std::fs::read(sweep.join("corpus").join(format!("{id}.ordinary.json"))).unwrap(),
            )
            .unwrap();
            let (step, chars, at) = long_response(&a)?;
            Some((id, step, chars, at))
        })
        .expect("a verified session with a long one-line planner response");
    // The answer says another letter at `at`: the two sides share their
    // first `at` characters, more than either difference used to show.
    let mut changed = chars.clone();
    changed[at] = if chars[at] == 'Q' { 'K' } else { 'Q' };
    let changed: String = changed.into_iter().collect();
    let answer = csweep.join("corpus").join(format!("{id}.ordinary.json"));
    let mut body: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&answer).unwrap()).unwrap();
    body["trajectory"]["steps"][step]["plannerResponse"]["response"] = serde_json::json!(changed);
    std::fs::write(&answer, body.to_string()).unwrap();

    let o = bin()
        .arg("export-check")
        .arg(csweep.join("manifest.json"))
        .arg("--root")
        .arg(&store)
        .output()
        .unwrap();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(4), "{out}");
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix(&format!("DIFFERS {id}: ")))
        .unwrap_or_else(|| panic!("a DIFFERS line for {id}: {out}"));
    // Each side's own text around the change, on the line.
    let original: String = chars[at - 6..at + 12].iter().collect();
    let replaced: String = changed.chars().skip(at - 6).take(18).collect();
    assert_ne!(original, replaced);
    let json = line
        .split("; ")
        .find(|d| d.starts_with(&format!("json steps[{step}].plannerResponse.response")))
        .unwrap_or_else(|| panic!("the JSON difference: {line}"));
    assert!(
        json.contains(&format!("first difference at character {}", at + 1)),
        "{json}"
    );
    assert!(
        json.contains(&original) && json.contains(&replaced),
        "both sides around the change: {json}"
    );
    let md = line
        .split("; ")
        .find(|d| d.starts_with("markdown line "))
        .unwrap_or_else(|| panic!("the Markdown difference: {line}"));
    assert!(md.contains("first difference at column"), "{md}");
    let (offline, answer_side) = md
        .split_once(", from the answer ")
        .unwrap_or_else(|| panic!("{md}"));
    assert!(offline.contains(&original), "the offline side: {md}");
    assert!(answer_side.contains(&replaced), "the answer's side: {md}");
}
