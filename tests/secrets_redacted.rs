//! Issue 46, "secrets stay home": a store generated with planted fake
//! credentials (`corpus generate --plant-secrets`, `.truth/secrets.jsonl`)
//! is swept against daemon-sim, and every shared output (the report in
//! Markdown and HTML with its drill-downs, audit-qualify's --json and
//! --junit, audit-diff's Markdown, HTML, --json and --junit) carries none of
//! them and says how it redacted; with --no-redact (the control) the
//! drill-down shows them and every output says so first. Redaction changes
//! no verdict, recheck or classification, and the evidence (the sweep's
//! manifest and `corpus/` answers) is never touched.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{
    bin, leaks, output_text, planted_store, planted_values, start_sim, sweep_command,
    truth_verdicts,
};
use std::path::Path;

/// Runs `agy-audit args`, expecting exit `code`; its stdout.
fn run(args: &[&str], code: i32) -> String {
    let o = bin().args(args).output().unwrap();
    assert_eq!(o.status.code(), Some(code), "{args:?}: {}", output_text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Every shared output of the sweep `sweep` (its copy `sweep2` as audit-diff's
/// NEW), written under `dir`, with or without `--no-redact`: (name, text).
fn outputs(sweep: &Path, sweep2: &Path, dir: &Path, no_redact: bool) -> Vec<(String, String)> {
    std::fs::create_dir_all(dir).unwrap();
    let flag: &[&str] = if no_redact { &["--no-redact"] } else { &[] };
    let s = sweep.to_str().unwrap();
    let s2 = sweep2.to_str().unwrap();
    let f = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let mut out = Vec::new();
    let (md, html) = (f("report.md"), f("report.html"));
    run(&[&["report", s, "--out", &md][..], flag].concat(), 0);
    run(
        &[&["report", s, "--format", "html", "--out", &html][..], flag].concat(),
        0,
    );
    let qj = f("qualify.xml");
    let q = run(
        &[&["audit-qualify", s, "--json", "--junit", &qj][..], flag].concat(),
        0,
    );
    out.push(("audit-qualify --json".into(), q));
    let (dmd, dhtml, dj) = (f("diff.md"), f("diff.html"), f("diff.xml"));
    run(
        &[
            &["audit-diff", s, s2, "--out", &dmd, "--junit", &dj][..],
            flag,
        ]
        .concat(),
        0,
    );
    run(
        &[
            &["audit-diff", s, s2, "--format", "html", "--out", &dhtml][..],
            flag,
        ]
        .concat(),
        0,
    );
    let djson = run(&[&["audit-diff", s, s2, "--json"][..], flag].concat(), 0);
    out.push(("audit-diff --json".into(), djson));
    for p in [md, html, qj, dmd, dhtml, dj] {
        let text = std::fs::read_to_string(&p).unwrap();
        out.push((p, text));
    }
    out
}

#[test]
fn shared_outputs_carry_no_planted_secret_and_no_redact_shows_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    planted_store(&store);
    let values = planted_values(&store);
    assert!(values.len() > 100, "{} values planted", values.len());

    let sim = start_sim(&store, &["--no-fault-file"]);
    let sweep = dir.path().join("sweep");
    let o = sweep_command(&store, &sweep, &sim.url).output().unwrap();
    drop(sim);
    assert!(sweep.join("manifest.json").is_file(), "{}", output_text(&o));

    // Planting changes no verdict: the sweep equals the ground truth.
    let manifest = common::read_manifest(&sweep);
    let truth = truth_verdicts(&store);
    for s in manifest["sessions"].as_array().unwrap() {
        let id = s["fileId"].as_str().unwrap();
        let got = (
            s["verdict"].as_str().unwrap().to_string(),
            s["reasonClass"].as_str().map(str::to_string),
        );
        assert_eq!(Some(&got), truth.get(id), "{id}");
    }
    // The evidence holds the secrets as the daemon answered them: the
    // sweep's corpus/ answers are never redacted.
    let evidence = common::tree(&sweep);
    let answers: String = evidence
        .iter()
        .filter(|(p, _)| p.starts_with(sweep.join("corpus")))
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .collect();
    assert!(!leaks(&answers, &values).is_empty(), "corpus/ holds them");

    let sweep2 = dir.path().join("sweep2");
    std::fs::create_dir_all(&sweep2).unwrap();
    for (p, b) in &evidence {
        let to = sweep2.join(p.strip_prefix(&sweep).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(to, b).unwrap();
    }

    let redacted = outputs(&sweep, &sweep2, &dir.path().join("r"), false);
    for (name, text) in &redacted {
        let found = leaks(text, &values);
        assert!(found.is_empty(), "{name} leaks {found:?}");
    }
    let by_name = |all: &[(String, String)], end: &str| {
        all.iter()
            .find(|(n, _)| n.ends_with(end))
            .map(|(_, t)| t.clone())
            .unwrap()
    };
    // Each says how it redacted, by rule, with the ruleset's version.
    let html = by_name(&redacted, "report.html");
    assert!(
        html.contains("<p id=\"redaction\">Redacted "),
        "report.html"
    );
    assert!(html.contains("[REDACTED:"), "the drill-down shows markers");
    for end in ["report.md", "diff.md"] {
        let md = by_name(&redacted, end);
        assert!(
            md.contains("Redacted ") && md.contains("ruleset gitleaks-v8.30.1"),
            "{end}"
        );
    }
    for end in ["qualify.xml", "diff.xml"] {
        let x = by_name(&redacted, end);
        assert!(
            x.contains("<property name=\"agy-audit.redacted\" value=\"true\"/>"),
            "{end}"
        );
    }
    for end in ["audit-qualify --json", "audit-diff --json"] {
        let v: serde_json::Value = serde_json::from_str(&by_name(&redacted, end)).unwrap();
        assert_eq!(v["redaction"]["redacted"], true, "{end}");
        assert!(v["redaction"]["ruleset"].is_string(), "{end}");
    }

    // The control: --no-redact shows them, and says so first.
    let plain = outputs(&sweep, &sweep2, &dir.path().join("n"), true);
    let html = by_name(&plain, "report.html");
    assert!(
        !leaks(&html, &values).is_empty(),
        "the drill-down shows them"
    );
    assert!(html.starts_with("<!-- NOT REDACTED"));
    for end in ["report.md", "diff.md"] {
        assert!(by_name(&plain, end).starts_with("**NOT REDACTED"), "{end}");
    }
    for end in ["qualify.xml", "diff.xml"] {
        assert!(
            by_name(&plain, end)
                .contains("<property name=\"agy-audit.redacted\" value=\"false\"/>"),
            "{end}"
        );
    }
    // Verdicts, rechecks and classifications are the same either way.
    for end in ["audit-qualify --json", "audit-diff --json"] {
        let strip = |t: String| {
            let mut v: serde_json::Value = serde_json::from_str(&t).unwrap();
            let o = v.as_object_mut().unwrap();
            o.remove("redaction");
            for s in o
                .get_mut("sessions")
                .and_then(|s| s.as_array_mut())
                .into_iter()
                .flatten()
            {
                let s = s.as_object_mut().unwrap();
                s.remove("reason");
                for side in ["old", "new"] {
                    if let Some(x) = s.get_mut(side).and_then(|x| x.as_object_mut()) {
                        x.remove("reason");
                        x.remove("location");
                    }
                }
            }
            v
        };
        assert_eq!(
            strip(by_name(&redacted, end)),
            strip(by_name(&plain, end)),
            "{end}"
        );
    }
    // The evidence is untouched: the manifest, the CSV, every answer and
    // sidecar, byte for byte.
    assert_eq!(common::tree(&sweep), evidence);
}
