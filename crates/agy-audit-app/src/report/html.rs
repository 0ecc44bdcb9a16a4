//! The qualification report as one self-contained HTML file: styles, the
//! filter script and the SVG charts inline, no reference to anything outside
//! the file (no URL of any kind), so it opens from disk, offline, as a CI
//! artifact. The page is plain HTML that reads completely with JavaScript
//! off (every row and every drill-down is in the markup); the inline script
//! only hides rows that do not match the filters (also set from the URL
//! fragment, `report.html#verdict=unknown`, see [`SCRIPT`]). Everything taken from the
//! data is escaped ([`esc`]). Same inputs, same bytes.
//!
//! `audit-diff --format html` ([`render_diff_html`]) uses the same frame.

use crate::manifest::{Counts, Manifest, SessionRecord};
use crate::outcome::{Refused, SessionOutcome};
use crate::report::diff::{AuditDiff, Change, Inputs, State};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// The most of one offending step's transcript a drill-down shows; the
/// rest is cut at a character boundary and counted, so that one huge step
/// cannot swell the page.
pub const STEP_LIMIT: usize = 16 * 1024;

/// The most sessions the HTML report lists row by row (issue 49): a report
/// of more lists every session that is not verified (unknown, incomplete,
/// not fetched, error; each refused one with its drill-down, as below the
/// limit) and summarizes the verified ones (with or without source-only
/// fields) per profile, says so at its top and points to `sessions.csv`
/// for every session. 5,000 rows of the table are about 5 MB of markup,
/// which a browser lays out in a second or two; 100,000 rows (about
/// 100 MB) it does not render in two minutes. At or below the limit the
/// page is what it always was: every row in the markup.
pub const HTML_SESSION_ROWS: usize = 5_000;

/// Whether the HTML report of `m` summarizes its verified sessions
/// ([`HTML_SESSION_ROWS`]).
pub fn summarizes_verified(m: &Manifest) -> bool {
    m.sessions.len() > HTML_SESSION_ROWS
}

/// What the drill-down of a refused session shows of its offending step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepView {
    /// The step as the Markdown transcript renders it.
    Rendered { index: usize, markdown: String },
    /// The refusal's location names no step (the source as a whole).
    NoStep,
    /// The source is no longer under the root.
    Gone { path: String },
    /// The source is there but the offline export path could not show the
    /// step (it does not decode, or has no such step): why.
    Unavailable { reason: String },
}

/// Escapes text for HTML element content and quoted attribute values.
///
/// A slash that follows a slash is written `&#47;`: the text reads the same
/// in the browser, but no `//` (so no `http://`, `https://` or
/// protocol-relative reference) appears in the file's bytes, whatever the
/// data holds (a refusal naming an external image URI, a transcript's
/// links), and a scan of the file for network references stays exact.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '/' if o.ends_with('/') => o.push_str("&#47;"),
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// The location of a refusal: the reason text before its first `: `
/// (the manifest words a refusal `location: detail (rule-id)`).
pub fn location(reason: &str) -> Option<&str> {
    reason
        .split_once(": ")
        .map(|(l, _)| l)
        .filter(|l| !l.is_empty())
}

/// The top-level step a location names: `steps[12]...` is step 12.
pub fn step_index(location: &str) -> Option<usize> {
    let rest = location.strip_prefix("steps[")?;
    let (n, _) = rest.split_once(']')?;
    n.parse().ok()
}

/// A session whose drill-down the report carries: refused (unknown or
/// incomplete).
pub fn drills_down(s: &SessionRecord) -> bool {
    matches!(s.result, SessionOutcome::Refused(_))
}

/// Every rule a session's row is filterable by: those that presented it and
/// the one its refusal names.
fn session_rules(s: &SessionRecord) -> BTreeSet<String> {
    let mut rules: BTreeSet<String> = s.rules.iter().cloned().collect();
    if let Some(r) = s.result.refusal().and_then(Refused::rule) {
        rules.insert(r.id().to_string());
    }
    rules
}

fn class_id(s: &SessionRecord) -> &'static str {
    match (s.class(), &s.result) {
        (Some(c), _) => c.id(),
        (None, SessionOutcome::Error { .. }) => "error",
        (None, _) => "",
    }
}

/// An inline SVG chart: the XML namespace attribute (a URI, though never
/// fetched) dropped, as HTML's parser puts `<svg>` in its namespace itself.
fn inline_svg(svg: &str) -> String {
    svg.replace(r#" xmlns="http://www.w3.org/2000/svg""#, "")
        .trim_end()
        .to_string()
}

const STYLE: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:1.5em auto;max-width:80em;padding:0 1em;color:#212121;background:#fff}
h1{font-size:1.6em}h2{font-size:1.3em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font-family:ui-monospace,'SFMono-Regular',Menlo,Consolas,monospace;font-size:.9em}
pre{background:#f7f7f7;border:1px solid #ddd;padding:.6em;overflow:auto;white-space:pre-wrap;word-break:break-word}
details{margin:.4em 0;border:1px solid #ddd;padding:.3em .6em}summary{cursor:pointer}
.v-verified{color:#2e7d32}.v-verified-source-only{color:#558b2f}.v-unknown{color:#a66d00}.v-incomplete{color:#c62828}.v-not-fetched,.v-error{color:#616161}
#filters{margin:.5em 0;display:flex;flex-wrap:wrap;gap:.6em;align-items:center}#filters select{max-width:24em}
[hidden]{display:none!important}
.warn{background:#fff3e0;border:1px solid #f9a825;padding:.5em}
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dt{font-weight:bold}dd{margin:0}
";

/// The filter script: reads the form, hides rows that do not match, counts
/// the rows shown. Holds no data; the form is hidden until it runs. The
/// filters also live in the URL fragment, so that a filtered view can be
/// linked and opened as such: `#verdict=unknown&class=...&rule=...&profile=
/// ...&q=...` (names of the form's fields, values URL-encoded) sets the
/// fields on load and when the fragment changes; changing a field rewrites
/// the fragment (`history.replaceState`, no navigation, no request). A
/// fragment without `=` (a drill-down anchor `#d-ID`) is left alone.
const SCRIPT: &str = "\
(function(){
var f=document.getElementById('filters');if(!f)return;f.hidden=false;
var rows=Array.prototype.slice.call(document.querySelectorAll('#sessions tbody tr'));
var shown=document.getElementById('shown');
var names=['verdict','class','rule','profile','q'];
function val(n){var e=f.elements[n];return e?e.value:'';}
function fromHash(){var h=location.hash.slice(1);if(h.indexOf('=')<0)return;
names.forEach(function(n){var e=f.elements[n];if(e)e.value='';});
h.split('&').forEach(function(kv){var i=kv.indexOf('=');if(i<0)return;
try{var k=decodeURIComponent(kv.slice(0,i)),v=decodeURIComponent(kv.slice(i+1).replace(/\\+/g,' '));}catch(x){return;}
var e=f.elements[k];if(names.indexOf(k)>=0&&e)e.value=v;});}
function toHash(){var p=[];names.forEach(function(n){var v=val(n);if(v)p.push(n+'='+encodeURIComponent(v));});
try{history.replaceState(null,'',p.length?'#'+p.join('&'):location.pathname+location.search);}catch(x){}}
function apply(){
var v=val('verdict'),c=val('class'),r=val('rule'),p=val('profile'),q=val('q').trim().toLowerCase();
var n=0;
rows.forEach(function(t){var d=t.dataset;
var ok=(!v||d.verdict===v)&&(!c||d.class===c)&&(!r||(' '+d.rules+' ').indexOf(' '+r+' ')>=0)&&(!p||d.profile===p)&&(!q||d.id.toLowerCase().indexOf(q)>=0);
t.hidden=!ok;if(ok)n++;});
shown.textContent=n+' of '+rows.length+' sessions shown';}
function changed(){apply();toHash();}
f.addEventListener('input',changed);f.addEventListener('change',changed);
f.addEventListener('submit',function(e){e.preventDefault();});
window.addEventListener('hashchange',function(){if(location.hash.indexOf('=')>=0){fromHash();apply();}});
fromHash();apply();})();
";

fn open_page(s: &mut String, title: &str) {
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"generator\" content=\"agy-audit\">\n<title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        esc(title),
        esc(title)
    );
}

fn close_page(s: &mut String, script: bool) {
    if script {
        let _ = write!(s, "<script>\n{SCRIPT}</script>\n");
    }
    s.push_str("</body>\n</html>\n");
}

fn counts_cells(c: &Counts) -> String {
    [
        c.selected,
        c.verified,
        c.verified_source_only,
        c.unknown,
        c.incomplete,
        c.not_fetched,
        c.error,
        c.sqlite,
        c.protobuf,
    ]
    .iter()
    .map(|n| format!("<td class=\"n\">{n}</td>"))
    .collect()
}

const COUNTS_HEAD: &str = "<th>selected</th><th>verified</th><th>verified, source-only</th><th>unknown</th><th>incomplete</th><th>not fetched</th><th>error</th><th>sqlite</th><th>protobuf</th>";

fn select(s: &mut String, name: &str, label: &str, options: &BTreeSet<String>) {
    let _ = write!(
        s,
        "<label>{label} <select name=\"{name}\"><option value=\"\">all</option>"
    );
    for o in options {
        let _ = write!(s, "<option>{}</option>", esc(o));
    }
    s.push_str("</select></label>\n");
}

fn truncated(md: &str) -> String {
    if md.len() <= STEP_LIMIT {
        return md.to_string();
    }
    let mut cut = STEP_LIMIT;
    while !md.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}\n\n[... {} more bytes of this step not shown]",
        &md[..cut],
        md.len() - cut
    )
}

/// The HTML qualification report. `steps` holds the drill-down view of each
/// refused session by file id (a session missing from it is said to have no
/// view); `source_note` says where the sources were read from.
pub fn render_html(m: &Manifest, steps: &BTreeMap<String, StepView>, source_note: &str) -> String {
    let mut s = String::new();
    open_page(&mut s, "agy-audit qualification report");
    let summarized = summarizes_verified(m);
    if summarized {
        html_summarized_note(&mut s, m);
    }
    html_provenance(&mut s, m, source_note);
    html_summary(&mut s, m);
    if summarized {
        html_verified_per_profile(&mut s, m);
    }
    html_sessions(&mut s, m, summarized);
    html_refused(&mut s, m, steps);
    close_page(&mut s, true);
    s
}

/// A verified session (with or without source-only fields): the ones a
/// report past [`HTML_SESSION_ROWS`] summarizes rather than lists.
fn verified(s: &SessionRecord) -> bool {
    matches!(
        s.result,
        SessionOutcome::Verified | SessionOutcome::VerifiedSourceOnly(_)
    )
}

/// The note at the top of a report past [`HTML_SESSION_ROWS`]: what it
/// lists, what it summarizes, and where every session is.
fn html_summarized_note(s: &mut String, m: &Manifest) {
    let shown = m.sessions.iter().filter(|x| !verified(x)).count();
    let _ = writeln!(
        s,
        "<p class=\"warn\" id=\"summarized\" data-limit=\"{HTML_SESSION_ROWS}\"><strong>{total} sessions, more than the {HTML_SESSION_ROWS} this page lists row by row:</strong> the session table lists the {shown} that are not verified (each refused one with its drill-down below), and the {verified} verified sessions are summarized per profile (<a href=\"#verified-per-profile\">Verified sessions per profile</a>). Every session, one row each, is in the sweep's <code>{csv}</code> beside its manifest.</p>",
        total = m.sessions.len(),
        verified = m.sessions.len() - shown,
        csv = crate::manifest::CSV_FILE,
    );
}

/// The verified sessions of a report past [`HTML_SESSION_ROWS`], counted
/// per profile (labelled as in the chart).
fn html_verified_per_profile(s: &mut String, m: &Manifest) {
    let mut per: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for x in m.sessions.iter().filter(|x| verified(x)) {
        let e = per.entry(x.profile.as_str()).or_default();
        match x.result {
            SessionOutcome::Verified => e.0 += 1,
            _ => e.1 += 1,
        }
    }
    let labels: BTreeMap<String, String> = crate::report::svg::profile_labels(m)
        .into_iter()
        .map(|(label, p)| (p, label))
        .collect();
    s.push_str("<h3 id=\"verified-per-profile\">Verified sessions per profile</h3>\n<p>Summarized, not listed: the table below lists only the sessions that are not verified.</p>\n<table id=\"verified-summary\"><tr><th>chart</th><th>profile</th><th>verified</th><th>verified, source-only</th><th>sessions</th></tr>\n");
    for (p, (v, so)) in &per {
        let _ = writeln!(
            s,
            "<tr data-profile=\"{pe}\"><td>{label}</td><td><code>{pe}</code></td><td class=\"n\">{v}</td><td class=\"n\">{so}</td><td class=\"n\">{n}</td></tr>",
            pe = esc(p),
            label = esc(labels.get(*p).map_or("", String::as_str)),
            n = v + so,
        );
    }
    s.push_str("</table>\n");
}

/// The incomplete-run warning and the list of where the manifest comes from.
fn html_provenance(s: &mut String, m: &Manifest, source_note: &str) {
    if !m.complete {
        s.push_str("<p class=\"warn\"><strong>Incomplete run:</strong> this manifest is not complete (complete: false); it is not a finished audit.</p>\n");
    }
    let _ = write!(
        s,
        "<ul>\n<li>manifest version {}, {}</li>\n<li>root <code>{}</code>, endpoint <code>{}</code></li>\n<li>started {}, finished {}</li>\n<li>corpus digest <code>{}</code></li>\n",
        m.manifest_version,
        if m.complete { "complete" } else { "incomplete run" },
        esc(&m.root),
        esc(&m.endpoint),
        esc(&m.started),
        esc(m.finished.as_deref().unwrap_or("(not finished)")),
        esc(&crate::report::markdown::corpus_digest(m))
    );
    if let Some(sh) = &m.shard {
        let _ = writeln!(s, "<li>shard {}</li>", esc(sh));
    }
    let _ = writeln!(s, "<li>{}</li>\n</ul>", esc(source_note));
}

/// The summary: verdict counts, the chart, and counts per profile and format.
fn html_summary(s: &mut String, m: &Manifest) {
    let c = &m.counts;
    s.push_str("<h2 id=\"summary\">Summary</h2>\n<table id=\"verdicts\"><tr><th>verdict</th><th>sessions</th></tr>\n");
    for (v, n) in [
        ("selected", c.selected),
        ("verified", c.verified),
        ("verified-source-only", c.verified_source_only),
        ("unknown", c.unknown),
        ("incomplete", c.incomplete),
        ("not-fetched", c.not_fetched),
        ("error", c.error),
    ] {
        let _ = writeln!(
            s,
            "<tr data-verdict=\"{v}\"><td>{v}</td><td class=\"n\" data-count=\"{n}\">{n}</td></tr>"
        );
    }
    s.push_str("</table>\n");
    let _ = writeln!(
        s,
        "<figure>{}<figcaption>Verdicts per profile; P1, P2, ... name the profiles as in the table below.</figcaption></figure>",
        inline_svg(&crate::report::svg::verdict_chart(m))
    );
    let _ = writeln!(
        s,
        "<h3>Per profile</h3>\n<table id=\"per-profile\"><tr><th>chart</th><th>profile</th>{COUNTS_HEAD}</tr>"
    );
    for ((label, p), c) in crate::report::svg::profile_labels(m)
        .iter()
        .zip(m.counts_by_profile.values())
    {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td><code>{}</code></td>{}</tr>",
            esc(label),
            esc(p),
            counts_cells(c)
        );
    }
    let _ = writeln!(
        s,
        "</table>\n<h3>Per format</h3>\n<table id=\"per-format\"><tr><th>format</th>{COUNTS_HEAD}</tr>"
    );
    for (f, c) in &m.counts_by_format {
        let _ = writeln!(s, "<tr><td>{}</td>{}</tr>", esc(f), counts_cells(c));
    }
    s.push_str("</table>\n");
}

/// The session table and its filters: every session, or with `summarized`
/// only those that are not verified.
fn html_sessions(s: &mut String, m: &Manifest, summarized: bool) {
    let listed: Vec<&SessionRecord> = m
        .sessions
        .iter()
        .filter(|x| !summarized || !verified(x))
        .collect();
    let mut verdicts = BTreeSet::new();
    let mut classes = BTreeSet::new();
    let mut rules = BTreeSet::new();
    let mut profiles = BTreeSet::new();
    for sess in listed.iter().copied() {
        verdicts.insert(sess.verdict_str().to_string());
        let class = class_id(sess);
        if !class.is_empty() {
            classes.insert(class.to_string());
        }
        rules.extend(session_rules(sess));
        profiles.insert(sess.profile.clone());
    }
    if summarized {
        let _ = writeln!(
            s,
            "<h2 id=\"sessions-title\">Sessions not verified ({} of {}; the verified ones are summarized per profile above)</h2>\n<form id=\"filters\" hidden>",
            listed.len(),
            m.sessions.len()
        );
    } else {
        let _ = writeln!(
            s,
            "<h2 id=\"sessions-title\">Sessions</h2>\n<form id=\"filters\" hidden>"
        );
    }
    select(s, "verdict", "verdict", &verdicts);
    select(s, "class", "refusal class", &classes);
    select(s, "rule", "rule", &rules);
    select(s, "profile", "profile", &profiles);
    s.push_str("<label>id <input name=\"q\" type=\"search\" placeholder=\"search by id\"></label>\n</form>\n");
    let _ = writeln!(
        s,
        "<p id=\"shown\">{n} of {n} sessions shown</p>\n<table id=\"sessions\"><thead><tr><th>file id</th><th>verdict</th><th>refusal class</th><th>rules</th><th>profile</th><th>format</th><th>steps</th><th>reason</th></tr></thead>\n<tbody>",
        n = listed.len()
    );
    for sess in listed {
        let rules: Vec<String> = session_rules(sess).into_iter().collect();
        let rules = rules.join(" ");
        let verdict = sess.verdict_str();
        let id = esc(&sess.file_id);
        let id_cell = if drills_down(sess) {
            format!("<a href=\"#d-{id}\">{id}</a>")
        } else {
            id.clone()
        };
        let _ = writeln!(
            s,
            "<tr data-id=\"{id}\" data-verdict=\"{verdict}\" data-class=\"{class}\" data-rules=\"{rules}\" data-profile=\"{profile}\"><td><code>{id_cell}</code></td><td class=\"v-{verdict}\">{verdict}</td><td>{class}</td><td>{rules}</td><td><code>{profile}</code></td><td>{format}</td><td class=\"n\">{steps}</td><td>{reason}</td></tr>",
            class = esc(class_id(sess)),
            rules = esc(&rules),
            profile = esc(&sess.profile),
            format = esc(sess.format.as_str()),
            steps = sess.steps,
            reason = esc(sess.reason_text().unwrap_or("")),
        );
    }
    s.push_str("</tbody></table>\n");
}

/// The drill-downs: each refused session's refusal and its step view.
fn html_refused(s: &mut String, m: &Manifest, steps: &BTreeMap<String, StepView>) {
    let refused: Vec<&SessionRecord> = m.sessions.iter().filter(|s| drills_down(s)).collect();
    let _ = writeln!(
        s,
        "<h2 id=\"refused\">Refused sessions ({})</h2>",
        refused.len()
    );
    if refused.is_empty() {
        s.push_str("<p>None: no session was refused.</p>\n");
    }
    for sess in refused {
        let id = esc(&sess.file_id);
        let reason = sess.reason_text().unwrap_or("");
        let rule = sess
            .result
            .refusal()
            .and_then(Refused::rule)
            .map(|r| r.id().to_string());
        let _ = writeln!(
            s,
            "<details id=\"d-{id}\"><summary><code>{id}</code> · <span class=\"v-{v}\">{v}</span> · {class}</summary>\n<dl><dt>rule</dt><dd>{rule}</dd><dt>reason</dt><dd>{reason}</dd><dt>location</dt><dd>{loc}</dd><dt>profile</dt><dd><code>{profile}</code></dd></dl>",
            v = sess.verdict_str(),
            class = esc(class_id(sess)),
            rule = rule
                .map(|r| format!("<code>{}</code>", esc(&r)))
                .unwrap_or_else(|| "none named".into()),
            reason = esc(reason),
            loc = location(reason)
                .map(|l| format!("<code>{}</code>", esc(l)))
                .unwrap_or_else(|| "none given".into()),
            profile = esc(&sess.profile),
        );
        html_step_view(s, steps.get(&sess.file_id));
        s.push_str("</details>\n");
    }
}

/// A refused session's step view (`None`: no source root was given).
fn html_step_view(s: &mut String, view: Option<&StepView>) {
    match view {
        Some(StepView::Rendered { index, markdown }) => {
            let _ = writeln!(
                    s,
                    "<p>Step {index} as the Markdown transcript renders it (offline export, unverified):</p>\n<pre>{}</pre>",
                    esc(&truncated(markdown))
                );
        }
        Some(StepView::NoStep) => {
            s.push_str("<p>The refusal names no step: it concerns the source as a whole.</p>\n")
        }
        Some(StepView::Gone { path }) => {
            let _ = writeln!(
                    s,
                    "<p>The source is gone: <code>{}</code> no longer exists, so its step cannot be shown.</p>",
                    esc(path)
                );
        }
        Some(StepView::Unavailable { reason }) => {
            let _ = writeln!(s, "<p>The step cannot be shown: {}</p>", esc(reason));
        }
        None => s.push_str("<p>The step was not read (no source root given).</p>\n"),
    }
}

/// The drill-down view of every refused session of `m`: its source under
/// `root` read through the offline export path ([`crate::export::offline_export`],
/// every refusal collected so the tree past the first one is shown) and the
/// step its refusal's location names rendered as the Markdown transcript
/// renders it. Sources are opened read-only; nothing is written.
pub fn step_views(
    m: &Manifest,
    root: &std::path::Path,
    opts: &crate::source::ReadOptions<'_>,
) -> BTreeMap<String, StepView> {
    let mut views = BTreeMap::new();
    for sess in m.sessions.iter().filter(|s| drills_down(s)) {
        let view = match location(sess.reason_text().unwrap_or("")).and_then(step_index) {
            None => StepView::NoStep,
            Some(index) => {
                let path = sess.source_path(root);
                if !path.exists() {
                    StepView::Gone {
                        path: path.display().to_string(),
                    }
                } else {
                    match crate::export::offline_export(&path, opts) {
                        Err(e) => StepView::Unavailable {
                            reason: format!("{}: {e}", path.display()),
                        },
                        Ok(x) => match x.json.as_ref().map(|j| crate::export::render_step(j, index)) {
                            Some(Some(markdown)) => StepView::Rendered { index, markdown },
                            Some(None) => StepView::Unavailable {
                                reason: format!(
                                    "{}: the decoded trajectory has no step {index}",
                                    path.display()
                                ),
                            },
                            None => StepView::Unavailable {
                                reason: format!(
                                    "{}: the source does not decode as a whole (the refusal's own finding), so the offline export has no trajectory to show",
                                    path.display()
                                ),
                            },
                        },
                    }
                }
            }
        };
        views.insert(sess.file_id.clone(), view);
    }
    views
}

fn state_cells(st: Option<&State>) -> String {
    match st {
        None => "<td>absent</td><td></td><td></td>".into(),
        Some(st) => format!(
            "<td class=\"v-{o}\">{o}</td><td>{c}</td><td>{r}</td>",
            o = st.outcome.as_str(),
            c = esc(st.class.as_deref().unwrap_or("")),
            r = esc(st.reason.as_deref().unwrap_or("")),
        ),
    }
}

/// `audit-diff --format html`: the transitions chart, the refusal classes
/// and rules whose counts changed, and every changed session with both
/// sides, in the qualification report's frame.
pub fn render_diff_html(d: &AuditDiff, inputs: &Inputs<'_>) -> String {
    let mut s = String::new();
    open_page(&mut s, "agy-audit release diff");
    if !inputs.incomplete.is_empty() {
        let _ = writeln!(
            s,
            "<p class=\"warn\"><strong>Incomplete input (--allow-incomplete):</strong> {}; sessions without a verdict are compared as they are, and this comparison is not a finished audit.</p>",
            esc(&inputs.incomplete.join("; "))
        );
    }
    s.push_str("<ul>\n");
    for (label, name, m) in [
        ("old", inputs.old_name, inputs.old),
        ("new", inputs.new_name, inputs.new),
    ] {
        let _ = writeln!(
            s,
            "<li>{label}: <code>{}</code>, {} sessions, started {}, corpus digest <code>{}</code></li>",
            esc(name),
            m.sessions.len(),
            esc(&m.started),
            esc(&crate::report::markdown::corpus_digest(m))
        );
    }
    let _ = writeln!(
        s,
        "<li id=\"regressed\" data-count=\"{n}\"><strong>{n} regressed</strong> (verified in old, anything else in new)</li>\n</ul>",
        n = d.regressed
    );
    s.push_str(
        "<h2>Changes</h2>\n<table id=\"changes\"><tr><th>change</th><th>sessions</th></tr>\n",
    );
    for c in Change::ALL {
        let n = d.counts.get(&c).copied().unwrap_or(0);
        let _ = writeln!(
            s,
            "<tr data-change=\"{id}\"><td>{id}</td><td class=\"n\" data-count=\"{n}\">{n}</td></tr>",
            id = c.id()
        );
    }
    s.push_str("</table>\n");
    let _ = writeln!(
        s,
        "<figure>{}<figcaption>Verdict transitions, old to new.</figcaption></figure>",
        inline_svg(&crate::report::diff::transition_chart(d))
    );
    s.push_str("<h2>Refusal classes that changed</h2>\n");
    if d.classes.is_empty() {
        s.push_str("<p>None.</p>\n");
    } else {
        s.push_str("<table id=\"classes\"><tr><th>class</th><th>old</th><th>new</th><th>change</th></tr>\n");
        for r in &d.classes {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:+}</td></tr>",
                esc(&r.name),
                r.old,
                r.new,
                r.new as i64 - r.old as i64
            );
        }
        s.push_str("</table>\n");
    }
    s.push_str("<h2>Rules: gains and losses</h2>\n");
    if d.rules.is_empty() {
        s.push_str("<p>None.</p>\n");
    } else {
        s.push_str("<table id=\"rules\"><tr><th>rule</th><th>presented (old → new)</th><th>refused under (old → new)</th></tr>\n");
        for r in &d.rules {
            let _ = write!(s, "<tr><td><code>{}</code></td>", esc(&r.rule));
            for (old, new) in r.sides() {
                let _ = write!(s, "<td class=\"n\">{old} → {new}</td>");
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</table>\n");
    }
    let changed: Vec<_> = d
        .sessions
        .iter()
        .filter(|x| !matches!(x.change, Change::StillVerified | Change::Unchanged))
        .collect();
    let _ = writeln!(s, "<h2>Changed sessions ({})</h2>", changed.len());
    if changed.is_empty() {
        s.push_str("<p>None.</p>\n");
    } else {
        s.push_str("<table id=\"changed\"><thead><tr><th rowspan=\"2\">file id</th><th rowspan=\"2\">change</th><th rowspan=\"2\">also</th><th colspan=\"3\">old</th><th colspan=\"3\">new</th></tr><tr><th>outcome</th><th>class</th><th>reason</th><th>outcome</th><th>class</th><th>reason</th></tr></thead>\n<tbody>\n");
        for x in changed {
            let also: Vec<&str> = x.also.iter().map(|c| c.id()).collect();
            let _ = writeln!(
                s,
                "<tr data-id=\"{id}\" data-change=\"{ch}\"{reg}><td><code>{id}</code></td><td>{ch}</td><td>{also}</td>{old}{new}</tr>",
                id = esc(&x.file_id),
                ch = x.change.id(),
                reg = if x.regressed() { " data-regressed=\"true\"" } else { "" },
                also = esc(&also.join(" ")),
                old = state_cells(x.old.as_ref()),
                new = state_cells(x.new.as_ref()),
            );
        }
        s.push_str("</tbody></table>\n");
    }
    close_page(&mut s, false);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{ReasonClass, Refusal};

    fn refused(id: usize, reason: &str) -> SessionRecord {
        SessionRecord::for_test(
            id,
            "sqlite-v1-<b>\"x\"",
            SessionOutcome::refused(Refusal::new(ReasonClass::UnknownField, "", reason)),
        )
    }

    #[test]
    fn data_is_escaped_and_the_page_names_nothing_outside_itself() {
        let mut m = Manifest::new("/r<script>", "e", "t".into());
        m.add(refused(1, "steps[2].x: <img src=//evil> & 'q'"));
        m.add(SessionRecord::for_test(
            2,
            "sqlite-v1-a",
            SessionOutcome::Verified,
        ));
        let mut steps = BTreeMap::new();
        steps.insert(
            SessionRecord::test_id(1),
            StepView::Rendered {
                index: 2,
                markdown: "## 2. <script>alert(1)</script>".into(),
            },
        );
        let html = render_html(&m, &steps, "sources under <root>");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(!html.contains("<b>"), "{html}");
        assert!(!html.contains("http://") && !html.contains("https://"));
        assert!(!html.contains("src=\"//") && !html.contains("href=\"//"));
        assert!(!esc("see https://x.example//y").contains("//"));
        assert!(html.contains("&lt;img src=/&#47;evil&gt;"), "{html}");
        assert_eq!(html.matches("<script>").count(), 1);
        let id = SessionRecord::test_id(1);
        assert!(html.contains(&format!("<details id=\"d-{id}\">")));
        assert!(html.contains("<p id=\"shown\">2 of 2 sessions shown</p>"));
        assert_eq!(html, render_html(&m, &steps, "sources under <root>"));
    }

    #[test]
    fn locations_name_their_step() {
        assert_eq!(location("steps[3].a: b (r)"), Some("steps[3].a"));
        assert_eq!(step_index("steps[3].a"), Some(3));
        assert_eq!(step_index("metadata"), None);
        assert_eq!(location("no location"), None);
    }

    #[test]
    fn long_steps_are_cut_at_a_character_boundary() {
        let md = "é".repeat(STEP_LIMIT);
        let t = truncated(&md);
        assert!(t.len() < md.len() && t.contains("more bytes of this step not shown"));
    }
}
