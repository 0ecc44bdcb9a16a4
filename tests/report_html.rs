//! `report --format html` and `audit-diff --format html` through the real
//! binary: one self-contained file with no network reference, the same
//! bytes from the same manifest, counts that are the manifest's, a
//! drill-down per refused session (its step, or the word that its source is
//! gone), and well under 5 MB for a default-corpus-sized manifest.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

mod common;
#[path = "common/no_network.rs"]
mod no_network;

use common::{bin, output_text as text, read_manifest};
use no_network::assert_no_network_reference;
use std::path::{Path, PathBuf};

/// A generated store swept against daemon-sim, once for this file's tests:
/// (tempdir, store, sweep dir).
fn swept() -> &'static (tempfile::TempDir, PathBuf, PathBuf) {
    static SWEPT: std::sync::OnceLock<(tempfile::TempDir, PathBuf, PathBuf)> =
        std::sync::OnceLock::new();
    SWEPT.get_or_init(|| common::swept_store(30, 11))
}

fn report_html(manifest: &Path, out: &Path, extra: &[&str]) -> String {
    let o = bin()
        .arg("report")
        .arg(manifest)
        .args(["--format", "html", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    std::fs::read_to_string(out).unwrap()
}

/// The value of `data-count` in the row `data-verdict="v"` of the summary.
fn summary_count(html: &str, v: &str) -> u64 {
    let at = html
        .find(&format!("<tr data-verdict=\"{v}\">"))
        .unwrap_or_else(|| panic!("no summary row {v}"));
    let rest = &html[at..];
    let c = rest.find("data-count=\"").unwrap() + "data-count=\"".len();
    rest[c..c + rest[c..].find('"').unwrap()].parse().unwrap()
}

#[test]
fn the_html_report_is_self_contained_deterministic_and_counts_the_manifest() {
    let (dir, store, sweep) = swept();
    let manifest = sweep.join("manifest.json");
    let a = report_html(&manifest, &dir.path().join("a.html"), &[]);
    let b = report_html(&manifest, &dir.path().join("b.html"), &[]);
    assert_eq!(a, b, "same manifest, same bytes");
    assert_no_network_reference(&a);
    assert!(a.starts_with("<!DOCTYPE html>") && a.ends_with("</html>\n"));
    assert_eq!(a.matches("<script>").count(), 1);
    assert_eq!(a.matches("<svg").count(), 1, "the chart inline");

    let m = read_manifest(sweep);
    let sessions = m["sessions"].as_array().unwrap();
    let c = &m["counts"];
    for (v, key) in [
        ("selected", "selected"),
        ("verified", "verified"),
        ("verified-source-only", "verifiedSourceOnly"),
        ("unknown", "unknown"),
        ("incomplete", "incomplete"),
        ("not-fetched", "notFetched"),
        ("error", "error"),
    ] {
        assert_eq!(summary_count(&a, v), c[key].as_u64().unwrap(), "{v}");
    }
    let tbody = &a[a.find("<table id=\"sessions\">").unwrap()..];
    let tbody = &tbody[..tbody.find("</table>").unwrap()];
    assert_eq!(tbody.matches("<tr data-id=").count(), sessions.len());
    for s in sessions {
        let id = s["fileId"].as_str().unwrap();
        let verdict = s["verdict"].as_str().unwrap_or("error");
        assert!(
            tbody.contains(&format!("<tr data-id=\"{id}\" data-verdict=\"{verdict}\"")),
            "{id} {verdict}"
        );
    }
    let refused: Vec<&serde_json::Value> = sessions
        .iter()
        .filter(|s| matches!(s["verdict"].as_str(), Some("unknown" | "incomplete")))
        .collect();
    assert!(!refused.is_empty(), "the corpus has refusals");
    assert_eq!(a.matches("<details id=\"d-").count(), refused.len());
    assert!(
        a.contains("as the Markdown transcript renders it"),
        "at least one offending step shown"
    );

    // A source that is gone is said to be gone (with --root pointing at a
    // copy of the store without it); the drill-down stays.
    let id = refused
        .iter()
        .find(|s| s["reason"].as_str().unwrap_or("").starts_with("steps["))
        .map(|s| s["fileId"].as_str().unwrap().to_string())
        .expect("a refusal that names a step");
    let copy = dir.path().join("copy");
    std::fs::create_dir_all(copy.join("conversations")).unwrap();
    let gone = bin()
        .arg("report")
        .arg(&manifest)
        .args(["--format", "html", "--root"])
        .arg(&copy)
        .output()
        .unwrap();
    assert!(gone.status.success(), "{}", text(&gone));
    let gone = String::from_utf8(gone.stdout).unwrap();
    let details = &gone[gone.find(&format!("<details id=\"d-{id}\"")).unwrap()..];
    let details = &details[..details.find("</details>").unwrap()];
    assert!(details.contains("The source is gone"), "{details}");
    assert!(store.join("conversations").is_dir(), "the store untouched");
}

#[test]
fn the_report_never_overwrites_its_manifest() {
    let (_dir, _store, sweep) = swept();
    let manifest = sweep.join("manifest.json");
    let before = std::fs::read(&manifest).unwrap();
    let o = bin()
        .arg("report")
        .arg(&manifest)
        .args(["--format", "html", "--force", "--out"])
        .arg(&manifest)
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read(&manifest).unwrap(), before);
}

/// A manifest the size of the default corpus (405 sessions, a quarter
/// refused with long reasons, long profile ids), its sources absent.
#[test]
fn a_default_corpus_sized_report_is_well_under_5_mb() {
    use agy_audit::manifest::{Manifest, SessionRecord};
    use agy_audit::outcome::SessionOutcome;
    use agy_audit::source::Format;
    use agy_audit::verdict::{ReasonClass, Refusal};
    let dir = tempfile::tempdir().unwrap();
    let mut m = Manifest::new(dir.path().join("gone").to_str().unwrap(), "e", "t".into());
    for i in 0..405usize {
        let result = match i % 4 {
            0 => SessionOutcome::refused(Refusal::new(
                ReasonClass::UnknownField,
                format!("steps[{}].metadata", i % 50),
                format!("unknown field {} (varint) {}", 900 + i, "x".repeat(200)),
            )),
            _ => SessionOutcome::Verified,
        };
        let profile = format!(
            "sqlite-v1-format0-modeled-19f5ca8aba2b-r12934a-planner50-permission2-prompt23-history{}",
            i % 7
        );
        m.add(SessionRecord {
            file_id: format!("{i:08x}-0000-4000-8000-000000000000"),
            cascade_id: format!("{i:08x}-0000-4000-8000-000000000001"),
            format: Format::Sqlite,
            profile,
            source_digest: format!("sha256:{i:064x}"),
            payload_digest: None,
            result,
            rules: vec!["modern-image-read".into()],
            steps: 100,
            bytes: 1000,
            step_types: Default::default(),
            endpoint: None,
            rpc_only_fields: Vec::new(),
            rpc_only_fields_unlisted: 0,
        });
    }
    m.complete = true;
    m.finished = Some("t".into());
    let manifest = dir.path().join("manifest.json");
    std::fs::write(&manifest, m.to_json()).unwrap();
    let html = report_html(&manifest, &dir.path().join("r.html"), &[]);
    println!("405-session report: {} bytes", html.len());
    assert!(html.len() < 5_000_000, "{} bytes", html.len());
    assert_eq!(summary_count(&html, "selected"), 405);
    assert_eq!(html.matches("<details id=\"d-").count(), 102);
    assert_no_network_reference(&html);
}

#[test]
fn audit_diff_writes_the_same_style_of_html() {
    let (dir, _store, sweep) = swept();
    let manifest = sweep.join("manifest.json");
    let out = dir.path().join("diff.html");
    let o = bin()
        .arg("audit-diff")
        .arg(&manifest)
        .arg(&manifest)
        .args(["--format", "html", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let html = std::fs::read_to_string(&out).unwrap();
    assert_no_network_reference(&html);
    assert!(html.contains("<li id=\"regressed\" data-count=\"0\">"));
    assert!(html.contains("<svg") && html.contains("Changed sessions (0)"));
}

/// Parses a JUnit file with Python's xml.etree (an independent parser) and
/// checks the common schema's required attributes; returns (tests,
/// failures, the failed cases' names). None (after a printed skip line)
/// where python3 is absent.
fn parse_junit(path: &Path) -> Option<(u64, u64, Vec<String>)> {
    const CHECK: &str = r#"
import sys, json, xml.etree.ElementTree as E
root = E.parse(sys.argv[1]).getroot()
assert root.tag == "testsuites", root.tag
suites = root.findall("testsuite")
assert len(suites) == 1
for el in [root] + suites:
    for a in ["name", "tests", "failures", "errors", "skipped", "time"]:
        assert a in el.attrib, (el.tag, a)
    for a in ["tests", "failures", "errors", "skipped"]:
        assert int(el.get(a)) >= 0, (el.tag, a)
    float(el.get("time"))
s = suites[0]
cases = s.findall("testcase")
failed = []
for c in cases:
    assert c.get("classname") is not None and c.get("name"), c.attrib
    assert c.get("time") is not None and float(c.get("time")) >= 0, c.attrib
    f = c.findall("failure")
    if f:
        assert len(f) == 1 and f[0].get("message"), c.attrib
        failed.append(c.get("name"))
assert int(s.get("tests")) == len(cases) == int(root.get("tests"))
assert int(s.get("failures")) == len(failed) == int(root.get("failures"))
assert s.get("errors") == "0" and s.get("skipped") == "0"
print(json.dumps([len(cases), len(failed), failed]))
"#;
    let o = match std::process::Command::new("python3")
        .args(["-c", CHECK])
        .arg(path)
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            println!("skipped: python3 is not available ({e}); the JUnit file was not parsed independently");
            return None;
        }
    };
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    Some((
        v[0].as_u64().unwrap(),
        v[1].as_u64().unwrap(),
        v[2].as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect(),
    ))
}

#[test]
fn audit_qualify_writes_junit_with_a_failure_per_result_that_no_longer_holds() {
    let (dir, store, sweep) = swept();
    let manifest = sweep.join("manifest.json");
    let m = read_manifest(sweep);
    let sessions = m["sessions"].as_array().unwrap();
    // A copy of the store with one verified source gone.
    let root = dir.path().join("qualify-root");
    let conv = root.join("conversations");
    std::fs::create_dir_all(&conv).unwrap();
    for e in std::fs::read_dir(store.join("conversations")).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), conv.join(e.file_name())).unwrap();
        }
    }
    let victim = sessions
        .iter()
        .find(|s| s["verdict"] == "verified" && s["format"] == "sqlite")
        .unwrap()["fileId"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::remove_file(conv.join(format!("{victim}.db"))).unwrap();
    let junit = dir.path().join("qualify.xml");
    let run = |junit: &Path| {
        bin()
            .arg("audit-qualify")
            .arg(&manifest)
            .arg("--root")
            .arg(&root)
            .arg("--junit")
            .arg(junit)
            .output()
            .unwrap()
    };
    let o = run(&junit);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    let again = dir.path().join("qualify2.xml");
    run(&again);
    assert_eq!(
        std::fs::read(&junit).unwrap(),
        std::fs::read(&again).unwrap()
    );
    // Refuses to replace it without --force.
    let o = run(&junit);
    assert!(text(&o).contains("refusing to overwrite"), "{}", text(&o));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(&format!(
        "classname=\"{}\"",
        sessions[0]["profile"].as_str().unwrap()
    )));
    if let Some((tests, failures, failed)) = parse_junit(&junit) {
        println!("audit-qualify JUnit: tests={tests} failures={failures}");
        assert_eq!(tests, sessions.len() as u64);
        assert_eq!((failures, failed), (1, vec![victim]));
    }
}

#[test]
fn audit_diff_writes_junit_with_a_failure_per_regression() {
    let (dir, _store, sweep) = swept();
    let old = sweep.join("manifest.json");
    let mut m = read_manifest(sweep);
    let sessions = m["sessions"].as_array_mut().unwrap();
    let n = sessions.len() as u64;
    let s = sessions
        .iter_mut()
        .find(|s| s["verdict"] == "verified")
        .unwrap();
    s["verdict"] = "unknown".into();
    s["reasonClass"] = "unknown-field".into();
    s["reason"] = "steps[1].metadata: unknown field 900 (varint) <&>".into();
    s["payloadDigest"] = serde_json::Value::Null;
    let regressed = s["fileId"].as_str().unwrap().to_string();
    let m = common::recounted(m);
    let new = dir.path().join("new-manifest.json");
    std::fs::write(&new, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let junit = dir.path().join("diff.xml");
    let o = bin()
        .arg("audit-diff")
        .arg(&old)
        .arg(&new)
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(5), "{}", text(&o));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("unknown field 900 (varint) &lt;&amp;&gt;"),
        "{xml}"
    );
    if let Some((tests, failures, failed)) = parse_junit(&junit) {
        assert_eq!((tests, failures, failed), (n, 1, vec![regressed]));
    }
}

/// `bench --records n`'s synthesized sweep of `n` sessions (`old.json`, a
/// complete manifest the strict reader accepts: the bench runs report,
/// audit-diff and merge on it and fails otherwise) in `dir`; its JSON.
fn synthesized(dir: &Path, n: usize) -> serde_json::Value {
    let o = bin()
        .args(["bench", "--records", &n.to_string(), "--records-dir"])
        .arg(dir)
        .arg("--json")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&std::fs::read(dir.join("old.json")).unwrap()).unwrap()
}

/// The file ids of the rows of the session table.
fn table_ids(html: &str) -> Vec<String> {
    let at = html
        .find("<table id=\"sessions\">")
        .expect("the session table");
    let end = at + html[at..].find("</table>").unwrap();
    html[at..end]
        .match_indices("<tr data-id=\"")
        .map(|(i, m)| {
            let rest = &html[at + i + m.len()..];
            rest[..rest.find('"').unwrap()].to_string()
        })
        .collect()
}

fn is_verified(s: &serde_json::Value) -> bool {
    matches!(
        s["verdict"].as_str(),
        Some("verified" | "verified-source-only")
    )
}

/// Issue 49: past the documented limit (5,000 sessions) the page lists
/// every session that is not verified, each refused one with its
/// drill-down, summarizes the verified ones per profile, says so at its
/// top and points to sessions.csv; at the limit it lists every row as it
/// always did.
#[test]
fn past_5000_sessions_the_html_report_lists_the_unverified_and_summarizes_the_verified() {
    let d = tempfile::tempdir().unwrap();
    let (above, at) = (d.path().join("above"), d.path().join("at"));
    let m = synthesized(&above, 5_001);
    let sessions = m["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 5_001);
    let html = report_html(&above.join("old.json"), &d.path().join("a.html"), &[]);
    assert_no_network_reference(&html);
    // Said at the top: before the run's provenance and the summary.
    let note = html
        .find("<p class=\"warn\" id=\"summarized\"")
        .expect("the note");
    assert!(note < html.find("<ul>").unwrap() && note < html.find("id=\"summary\"").unwrap());
    let line = &html[note..note + html[note..].find("</p>").unwrap()];
    assert!(
        line.contains("5001 sessions") && line.contains("5000"),
        "{line}"
    );
    assert!(line.contains("<code>sessions.csv</code>"), "{line}");
    // Every session that is not verified is listed, and only those.
    let unverified: Vec<&str> = sessions
        .iter()
        .filter(|s| !is_verified(s))
        .map(|s| s["fileId"].as_str().unwrap())
        .collect();
    assert!(unverified.len() > 500, "{}", unverified.len());
    assert_eq!(table_ids(&html), unverified);
    assert!(
        line.contains(&format!(
            "lists the {} that are not verified",
            unverified.len()
        )),
        "{line}"
    );
    for s in sessions {
        let id = s["fileId"].as_str().unwrap();
        let refused = matches!(s["verdict"].as_str(), Some("unknown" | "incomplete"));
        assert_eq!(
            html.contains(&format!("<details id=\"d-{id}\">")),
            refused,
            "{id}"
        );
        if is_verified(s) {
            assert!(!html.contains(id), "verified {id} is listed");
        }
    }
    // The verified ones, per profile: the manifest's own counts.
    let at_table = html
        .find("<table id=\"verified-summary\">")
        .expect("the summary");
    let table = &html[at_table..at_table + html[at_table..].find("</table>").unwrap()];
    let mut rows = 0;
    for (profile, c) in m["countsByProfile"].as_object().unwrap() {
        let (v, so) = (
            c["verified"].as_u64().unwrap(),
            c["verifiedSourceOnly"].as_u64().unwrap(),
        );
        let row = format!(
            "<td><code>{profile}</code></td><td class=\"n\">{v}</td><td class=\"n\">{so}</td><td class=\"n\">{}</td>",
            v + so
        );
        assert!(table.contains(&row), "{row}\n{table}");
        rows += 1;
    }
    assert_eq!(table.matches("<tr data-profile=").count(), rows);
    // At the limit: every row, no note, no summary.
    let m = synthesized(&at, 5_000);
    let html = report_html(&at.join("old.json"), &d.path().join("b.html"), &[]);
    let all: Vec<&str> = m["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["fileId"].as_str().unwrap())
        .collect();
    assert_eq!(table_ids(&html), all);
    assert!(!html.contains("id=\"summarized\"") && !html.contains("verified-summary"));
}
