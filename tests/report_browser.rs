//! The HTML report checked in a real browser (issue 38, item 3): a small
//! sweep with refusals is reported with `report --format html`, and Debian's
//! headless Chromium renders the file offline (in its own network namespace
//! where `unshare -n` works, and always with DNS and proxy pointed nowhere,
//! background networking off and a fresh profile). The test reads the
//! rendered DOM (`--dump-dom`) and checks:
//!
//! - the summary counts and the session rows are the manifest's, and the
//!   filter script ran (the form shown, "N of N sessions shown");
//! - a filter hides exactly the rows it should: the page applies the filters
//!   a URL fragment names on load (`report.html#verdict=unknown`, then a
//!   search by id), so the rendered DOM shows which rows the script hid;
//! - with JavaScript off (the file as written) every row is shown and the
//!   form stays hidden;
//! - the page made no network request: Chromium's own net log
//!   (`--log-net-log`) holds no request that a page started (the browser's
//!   background requests carry the initiator "not an origin"); a control
//!   page with an image reference proves the check sees a page's request;
//! - a screenshot (`--screenshot --window-size=1280,1600`) is a 1280x1600
//!   PNG. It is written in the test's temporary folder; with
//!   `AGY_AUDIT_UPDATE_SCREENSHOT=1` it also replaces
//!   `docs/report-screenshot.png`, the one README shows (a test run never
//!   changes a tracked file otherwise).
//!
//! A second test renders the HTML report of a store with planted fake
//! credentials (issue 46): no planted value in the rendered DOM or its
//! text, the redaction statement shown; with `--no-redact` (the control)
//! planted values shown and the page saying NOT REDACTED.
//!
//! Where no Chromium is found (`chromium`, `chromium-browser` on PATH, or
//! `AGY_AUDIT_CHROMIUM`), the test prints one skip line and passes;
//! `.ci/run` installs Debian's `chromium` first.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

mod common;
#[path = "common/no_network.rs"]
mod no_network;

use common::{bin, output_text, read_manifest};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The flags every run gets: headless, offline, nothing of the user's.
const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    // nothing resolves and every connection goes to a closed local port
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=127.0.0.1:9",
];

/// The most seconds one browser run may take.
const BROWSER_DEADLINE: u64 = 180;

/// A Chromium executable: `AGY_AUDIT_CHROMIUM`, else `chromium` or
/// `chromium-browser` on PATH.
fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("AGY_AUDIT_CHROMIUM").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n)))
        .find(|p| p.is_file())
}

struct Browser {
    exe: PathBuf,
    /// Runs inside `unshare -n` (a network namespace with no interface up).
    own_netns: bool,
    work: PathBuf,
}

/// What one browser run left: its standard output and its net log.
struct Run {
    stdout: String,
    netlog: PathBuf,
}

impl Browser {
    fn new(exe: PathBuf, work: &Path) -> Browser {
        let own_netns = Command::new("unshare")
            .args(["-n", "true"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        Browser {
            exe,
            own_netns,
            work: work.to_path_buf(),
        }
    }

    /// Loads `url` with `extra` flags in a fresh profile; fails the test
    /// when the browser fails or overruns [`BROWSER_DEADLINE`].
    fn run(&self, tag: &str, extra: &[String], url: &str) -> Run {
        use std::os::unix::process::CommandExt;
        let profile = self.work.join(format!("profile-{tag}"));
        std::fs::create_dir_all(&profile).unwrap();
        let netlog = self.work.join(format!("netlog-{tag}.json"));
        let out = self.work.join(format!("stdout-{tag}.txt"));
        let err = self.work.join(format!("stderr-{tag}.txt"));
        let mut c = if self.own_netns {
            let mut c = Command::new("unshare");
            c.arg("-n").arg(&self.exe);
            c
        } else {
            Command::new(&self.exe)
        };
        c.args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(format!("--log-net-log={}", netlog.display()))
            .args(extra)
            .arg(url)
            .env("HOME", &profile)
            .env("XDG_CONFIG_HOME", profile.join("config"))
            .env("XDG_CACHE_HOME", profile.join("cache"))
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .process_group(0);
        let mut child = c.spawn().expect("starting chromium");
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if started.elapsed().as_secs() > BROWSER_DEADLINE {
                // the whole process group: the browser and its helpers
                let _ = Command::new("kill")
                    .arg("-KILL")
                    .arg(format!("-{}", child.id()))
                    .status();
                let _ = child.wait();
                panic!("chromium ({tag}): still running after {BROWSER_DEADLINE} s");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let errors = std::fs::read_to_string(&err).unwrap_or_default();
        assert!(
            status.success(),
            "chromium ({tag}): {status}\n{}",
            tail(&errors)
        );
        Run {
            stdout: std::fs::read_to_string(&out).unwrap(),
            netlog,
        }
    }

    fn dump_dom(&self, tag: &str, page: &Path, fragment: &str, extra: &[&str]) -> Run {
        let mut flags: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        flags.push("--dump-dom".into());
        let run = self.run(tag, &flags, &format!("{}{fragment}", file_url(page)));
        assert!(
            run.stdout.contains("</html>"),
            "chromium ({tag}) printed no DOM"
        );
        run
    }
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

fn file_url(p: &Path) -> String {
    let p = p.canonicalize().unwrap();
    let mut url = String::from("file://");
    for b in p.to_str().expect("a UTF-8 temporary path").bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                url.push(b as char)
            }
            b => url.push_str(&format!("%{b:02X}")),
        }
    }
    url
}

/// The requests a page started, from Chromium's net log: every
/// URL_REQUEST_START_JOB whose initiator is an origin (a file:// page's is
/// "null"); the browser's own background requests have "not an origin".
fn page_requests(netlog: &Path) -> Vec<String> {
    let mut text = std::fs::read_to_string(netlog).expect("chromium wrote its net log");
    let log: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(_) => {
            // a log cut short at exit lacks its closing brackets
            let trimmed = text.trim_end().trim_end_matches(',').to_string();
            text = format!("{trimmed}]}}");
            serde_json::from_str(&text).expect("the net log is JSON")
        }
    };
    let start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
        .as_u64()
        .expect("the net log names URL_REQUEST_START_JOB");
    log["events"]
        .as_array()
        .expect("the net log's events")
        .iter()
        .filter(|e| e["type"].as_u64() == Some(start))
        .filter_map(|e| {
            let p = &e["params"];
            match p["initiator"].as_str() {
                None | Some("not an origin") => None,
                Some(i) => Some(format!("{} (initiator {i})", p["url"])),
            }
        })
        .collect()
}

/// The value of `data-count` in the summary row `data-verdict="v"`.
fn summary_count(html: &str, v: &str) -> u64 {
    let at = html
        .find(&format!("<tr data-verdict=\"{v}\">"))
        .unwrap_or_else(|| panic!("no summary row {v}"));
    let rest = &html[at..];
    let c = rest.find("data-count=\"").unwrap() + "data-count=\"".len();
    rest[c..c + rest[c..].find('"').unwrap()].parse().unwrap()
}

/// One row of the rendered session table.
#[derive(Debug)]
struct Row {
    id: String,
    verdict: String,
    hidden: bool,
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    Some(tag[at..at + tag[at..].find('"')?].to_string())
}

/// The rows of `<table id="sessions">` as the browser left them.
fn rows(dom: &str) -> Vec<Row> {
    let table = &dom[dom
        .find("<table id=\"sessions\">")
        .expect("the session table")..];
    let table = &table[..table.find("</table>").unwrap()];
    table
        .match_indices("<tr data-id=")
        .map(|(i, _)| {
            let tag = &table[i..i + table[i..].find('>').unwrap()];
            Row {
                id: attr(tag, "data-id").unwrap(),
                verdict: attr(tag, "data-verdict").unwrap(),
                hidden: tag.contains(" hidden"),
            }
        })
        .collect()
}

/// `<p id="shown">` as the script left it.
fn shown(dom: &str) -> String {
    let at = dom.find("<p id=\"shown\">").expect("the shown line") + "<p id=\"shown\">".len();
    dom[at..at + dom[at..].find("</p>").unwrap()].to_string()
}

/// Width and height from a PNG's IHDR.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert!(
        png.len() > 24 && png.starts_with(b"\x89PNG\r\n\x1a\n") && &png[12..16] == b"IHDR",
        "not a PNG"
    );
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&png[16..20]), be(&png[20..24]))
}

#[test]
fn the_html_report_renders_counts_filters_and_offline_in_chromium() {
    let Some(exe) = find_chromium() else {
        println!("skipped: report_browser: no chromium found (install Debian's chromium: apt-get install -y chromium)");
        return;
    };
    let (dir, _store, sweep) = common::swept_store(30, 11);
    let manifest = sweep.join("manifest.json");
    let page = dir.path().join("report.html");
    let o = bin()
        .arg("report")
        .arg(&manifest)
        .args(["--format", "html", "--out"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", output_text(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    no_network::assert_no_network_reference(&html);

    let m = read_manifest(&sweep);
    let sessions = m["sessions"].as_array().unwrap();
    let n = sessions.len();
    let unknown = m["counts"]["unknown"].as_u64().unwrap() as usize;
    assert!(unknown > 0 && unknown < n, "the sweep has refusals");

    let work = dir.path().join("browser");
    std::fs::create_dir_all(&work).unwrap();
    let browser = Browser::new(exe, &work);
    println!(
        "chromium {}, {}",
        browser.exe.display(),
        if browser.own_netns {
            "in its own network namespace (unshare -n)"
        } else {
            "offline by its flags only (unshare -n is not allowed here)"
        }
    );

    // The net-log check sees a page's request: a control page with an
    // image reference.
    let control = work.join("control.html");
    std::fs::write(
        &control,
        "<!DOCTYPE html><html><body><img src=\"http://192.0.2.1/x.png\"></body></html>\n",
    )
    .unwrap();
    let run = browser.dump_dom("control", &control, "", &[]);
    let seen = page_requests(&run.netlog);
    assert!(
        seen.iter().any(|r| r.contains("192.0.2.1")),
        "the net-log check misses a page's request: {seen:?}"
    );

    // As opened: every count, every row, the script ran.
    let run = browser.dump_dom("plain", &page, "", &[]);
    let dom = &run.stdout;
    for (v, key) in [
        ("selected", "selected"),
        ("verified", "verified"),
        ("verified-source-only", "verifiedSourceOnly"),
        ("unknown", "unknown"),
        ("incomplete", "incomplete"),
        ("not-fetched", "notFetched"),
        ("error", "error"),
    ] {
        assert_eq!(
            summary_count(dom, v),
            m["counts"][key].as_u64().unwrap(),
            "{v}"
        );
    }
    let all = rows(dom);
    assert_eq!(all.len(), n);
    for (row, s) in all.iter().zip(sessions) {
        assert_eq!(row.id, s["fileId"].as_str().unwrap());
        assert_eq!(row.verdict, s["verdict"].as_str().unwrap_or("error"));
        assert!(!row.hidden, "{row:?} hidden without a filter");
    }
    assert!(
        dom.contains("<form id=\"filters\">"),
        "the script shows the form"
    );
    assert_eq!(shown(dom), format!("{n} of {n} sessions shown"));
    assert_eq!(page_requests(&run.netlog), Vec::<String>::new());

    // Filtered by verdict: exactly the other verdicts' rows hidden.
    let run = browser.dump_dom("unknown", &page, "#verdict=unknown", &[]);
    let filtered = rows(&run.stdout);
    assert_eq!(filtered.len(), n);
    for row in &filtered {
        assert_eq!(row.hidden, row.verdict != "unknown", "{row:?}");
    }
    assert_eq!(
        shown(&run.stdout),
        format!("{unknown} of {n} sessions shown")
    );
    assert_eq!(page_requests(&run.netlog), Vec::<String>::new());

    // Searched by id: the rows whose id holds the text.
    let q = &all[0].id[..6];
    let run = browser.dump_dom("search", &page, &format!("#q={q}"), &[]);
    let found = rows(&run.stdout);
    let expected = all.iter().filter(|r| r.id.contains(q)).count();
    assert!(expected >= 1);
    for row in &found {
        assert_eq!(row.hidden, !row.id.contains(q), "{row:?}");
    }
    assert_eq!(
        shown(&run.stdout),
        format!("{expected} of {n} sessions shown")
    );

    // JavaScript off the page is the file as written (Chromium's
    // --dump-dom needs script to read the DOM): every row shown, the form
    // hidden.
    assert!(rows(&html).iter().all(|r| !r.hidden));
    assert!(html.contains("<form id=\"filters\" hidden>"));

    // The screenshot.
    let shot = work.join("report-screenshot.png");
    let run = browser.run(
        "screenshot",
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,1600".into(),
        ],
        &file_url(&page),
    );
    assert_eq!(page_requests(&run.netlog), Vec::<String>::new());
    let png = std::fs::read(&shot).expect("chromium wrote the screenshot");
    assert_eq!(png_size(&png), (1280, 1600));
    println!("screenshot: {} bytes, 1280x1600", png.len());
    if std::env::var_os("AGY_AUDIT_UPDATE_SCREENSHOT").is_some_and(|v| v == "1") {
        let kept = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report-screenshot.png");
        std::fs::write(&kept, &png).unwrap();
        println!("kept as {}", kept.display());
    }
}

/// The text a page shows: the DOM without its tags, comments, scripts and
/// styles, HTML's entities read back.
fn dom_text(dom: &str) -> String {
    let mut out = String::with_capacity(dom.len());
    let mut rest = dom;
    while let Some(i) = rest.find('<') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let skip_to = |r: &str, end: &str| r.find(end).map(|e| e + end.len()).unwrap_or(r.len());
        let n = if rest.starts_with("<!--") {
            skip_to(rest, "-->")
        } else if rest.starts_with("<script") {
            skip_to(rest, "</script>")
        } else if rest.starts_with("<style") {
            skip_to(rest, "</style>")
        } else {
            skip_to(rest, ">")
        };
        rest = &rest[n..];
        out.push(' ');
    }
    out.push_str(rest);
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
}

/// Issue 46's done-when: the HTML report of a store with planted fake
/// credentials (one refusal's reason quoting one too,
/// `common::planted_mismatch`), rendered in headless Chromium, shows none
/// of them, in its text or anywhere in its DOM, and shows its redaction
/// statement; the control, `report --no-redact`, shows planted values and
/// says NOT REDACTED.
#[test]
fn the_html_report_of_a_planted_store_shows_no_secret_in_chromium() {
    let Some(exe) = find_chromium() else {
        println!("skipped: report_browser (secrets): no chromium found (install Debian's chromium: apt-get install -y chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    common::planted_store(&store);
    let values = common::planted_values(&store);
    let (quoted, _) = common::planted_mismatch(&store);
    let sim = common::start_sim(&store, &["--no-fault-file"]);
    let sweep = dir.path().join("sweep");
    let o = common::sweep_command(&store, &sweep, &sim.url)
        .output()
        .unwrap();
    drop(sim);
    assert!(sweep.join("manifest.json").is_file(), "{}", output_text(&o));
    let work = dir.path().join("browser");
    std::fs::create_dir_all(&work).unwrap();
    let browser = Browser::new(exe, &work);
    let render = |tag: &str, flags: &[&str]| {
        let page = dir.path().join(format!("{tag}.html"));
        let o = bin()
            .arg("report")
            .arg(&sweep)
            .args(["--format", "html", "--out"])
            .arg(&page)
            .args(flags)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", output_text(&o));
        let run = browser.dump_dom(tag, &page, "", &[]);
        assert_eq!(page_requests(&run.netlog), Vec::<String>::new());
        run.stdout
    };

    let dom = render("redacted", &[]);
    let text = dom_text(&dom);
    assert!(
        dom.contains(&quoted),
        "the refused session is in the report"
    );
    assert_eq!(common::leaks(&dom, &values), Vec::<&str>::new(), "DOM");
    assert_eq!(common::leaks(&text, &values), Vec::<&str>::new(), "text");
    let statement = text
        .split("Redacted ")
        .nth(1)
        .and_then(|t| t.split('\n').next())
        .expect("the redaction statement is shown");
    assert!(
        statement.contains("ruleset gitleaks-v8.30.1") && text.contains("[REDACTED:"),
        "{statement}"
    );
    println!("redacted report: Redacted {}", statement.trim());

    let dom = render("not-redacted", &["--no-redact"]);
    let text = dom_text(&dom);
    assert!(
        !common::leaks(&text, &values).is_empty(),
        "the control shows planted values"
    );
    assert!(
        text.contains("NOT REDACTED (--no-redact)"),
        "the control says so"
    );
}
