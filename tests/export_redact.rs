//! `export-offline --redact` (issue 46 item 2): an export is made for
//! fidelity, so by default it carries the conversation's bytes, planted
//! credentials included (the control); with the opt-in `--redact` none of
//! the values the generator planted (`.truth/secrets.jsonl`) is left, in
//! the Markdown transcript or the JSON export, and the count is said.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{bin, output_text};

#[test]
fn export_offline_redacts_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    common::generate_store(
        &store,
        &["--conversations", "6", "--scale", "0.2", "--plant-secrets"],
    );
    let planted = std::fs::read_to_string(store.join(".truth/secrets.jsonl")).unwrap();
    let mut by_conversation: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for line in planted.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        by_conversation
            .entry(v["conversation"].as_str().unwrap().to_string())
            .or_default()
            .push(v["value"].as_str().unwrap().to_string());
    }
    assert!(!by_conversation.is_empty(), "nothing planted");
    let mut shown = 0;
    for (id, values) in &by_conversation {
        if !store
            .join("conversations")
            .join(format!("{id}.db"))
            .exists()
        {
            continue;
        }
        for format in ["md", "json"] {
            let run = |redact: bool| {
                let mut c = bin();
                c.args(["export-offline", "--root"]).arg(&store).args([
                    "--format",
                    format,
                    "--allow-unknown",
                    id,
                ]);
                if redact {
                    c.arg("--redact");
                }
                c.output().unwrap()
            };
            let plain = run(false);
            let redacted = run(true);
            let (p, r) = (
                String::from_utf8_lossy(&plain.stdout).into_owned(),
                String::from_utf8_lossy(&redacted.stdout).into_owned(),
            );
            assert_eq!(
                plain.status.code(),
                redacted.status.code(),
                "{}",
                output_text(&redacted)
            );
            if format == "json" && !r.is_empty() {
                serde_json::from_str::<serde_json::Value>(&r).expect("the redacted export is JSON");
            }
            for v in values {
                // JSON spells a PEM block's newlines as \n: its first line
                let probe = v.lines().next().unwrap_or(v);
                assert!(
                    !r.contains(probe),
                    "{id} {format}: `{probe}` left in the redacted export"
                );
                if p.contains(probe) {
                    shown += 1;
                }
            }
            if !p.is_empty() {
                assert!(
                    String::from_utf8_lossy(&redacted.stderr).contains("redacted "),
                    "{}",
                    output_text(&redacted)
                );
            }
        }
    }
    // the control: without --redact the export keeps the planted values
    assert!(shown > 0, "no planted value in any unredacted export");
}
