//! What the shared reports show of a conversation, redacted (issue 46):
//! the one place the report writers take [`crate::redact`] to their
//! inputs, and the line, member or property each output says it with.
//!
//! Redaction is applied to copies made for display, after every decision:
//! `audit-diff` classifies the manifests as read, `audit-qualify` rechecks
//! them as read, the HTML drill-down finds its step from the reason as
//! read; only then is the text shown redacted. So a redacted reason never
//! changes a verdict, a recheck or a classification, and the evidence
//! (manifest, sidecars, `corpus/` answers, digests) is never touched.

use crate::manifest::Manifest;
use crate::outcome::{Refused, SessionOutcome};
use crate::redact::{Mode, Redactions, NOT_REDACTED, RULESET_VERSION};
use crate::report::diff::{AuditDiff, State};
use crate::report::html::StepView;
use std::collections::BTreeMap;

/// The outcome with its reason text redacted (a refusal keeps its class;
/// its text, read back as the manifest records it, is redacted whole).
pub fn outcome(o: &SessionOutcome, r: &mut Redactions) -> SessionOutcome {
    match o {
        SessionOutcome::Refused(x) => {
            let text = r.apply(x.text());
            match text {
                std::borrow::Cow::Borrowed(_) => o.clone(),
                std::borrow::Cow::Owned(t) => {
                    SessionOutcome::Refused(Refused::recorded(x.class(), t))
                }
            }
        }
        SessionOutcome::NotFetched { reason } => SessionOutcome::NotFetched {
            reason: r.apply(reason).into_owned(),
        },
        SessionOutcome::Error { reason } => SessionOutcome::Error {
            reason: r.apply(reason).into_owned(),
        },
        SessionOutcome::Verified | SessionOutcome::VerifiedSourceOnly(_) => o.clone(),
    }
}

/// A copy of `m` for display: every session's reason and every skipped
/// file's reason redacted.
pub fn manifest(m: &Manifest, r: &mut Redactions) -> Manifest {
    manifest_owned(m.clone(), r)
}

/// [`manifest`] of a manifest the caller no longer needs as read: redacted
/// in place, never held twice (a 100,000-session manifest is some 150 MB
/// in memory).
pub fn manifest_owned(mut shown: Manifest, r: &mut Redactions) -> Manifest {
    for s in &mut shown.sessions {
        if !matches!(
            s.result,
            SessionOutcome::Verified | SessionOutcome::VerifiedSourceOnly(_)
        ) {
            s.result = outcome(&s.result, r);
        }
    }
    for k in &mut shown.skipped {
        r.apply_owned(&mut k.reason);
    }
    shown
}

/// The drill-down views redacted: the rendered step's whole Markdown
/// (before the HTML writer truncates or escapes it) and any reason.
pub fn step_views(views: &mut BTreeMap<String, StepView>, r: &mut Redactions) {
    for v in views.values_mut() {
        match v {
            StepView::Rendered { markdown, .. } => r.apply_owned(markdown),
            StepView::Unavailable { reason } => r.apply_owned(reason),
            StepView::Gone { path } => r.apply_owned(path),
            StepView::NoStep => {}
        }
    }
}

fn state(s: &mut State, r: &mut Redactions) {
    if let Some(t) = &mut s.reason {
        r.apply_owned(t);
    }
    if let Some(t) = &mut s.location {
        r.apply_owned(t);
    }
}

/// The diff's reasons and locations redacted, after it was classified.
pub fn diff(d: &mut AuditDiff, r: &mut Redactions) {
    for s in &mut d.sessions {
        for side in [&mut s.old, &mut s.new].into_iter().flatten() {
            state(side, r);
        }
    }
}

/// The diff report in Markdown as it is shared (`audit-diff`, the demo's
/// `release-diff.md`): the reasons shown redacted after every change was
/// classified, under the redaction line.
pub fn diff_markdown(
    d: &mut AuditDiff,
    inputs: &crate::report::diff::Inputs<'_>,
    mode: Mode,
) -> String {
    let mut tally = Redactions::default();
    if mode.on() {
        diff(d, &mut tally);
    }
    into_markdown(
        crate::report::diff::render_markdown(d, inputs),
        mode,
        &tally,
    )
}

/// The line a text output says its redaction with.
pub fn line(mode: Mode, r: &Redactions) -> String {
    match mode {
        Mode::Redact => r.to_string(),
        Mode::Off => NOT_REDACTED.to_string(),
    }
}

/// Puts the redaction line into a Markdown document: with `--no-redact`
/// as its first line; otherwise as a paragraph after its title (the first
/// line starting `# `), else first.
pub fn into_markdown(doc: String, mode: Mode, r: &Redactions) -> String {
    let l = line(mode, r);
    if mode == Mode::Off {
        return format!("**{l}**\n\n{doc}");
    }
    match doc
        .find("# ")
        .filter(|&i| i == 0 || doc[..i].ends_with('\n'))
    {
        Some(i) => {
            let end = doc[i..].find('\n').map(|e| i + e + 1).unwrap_or(doc.len());
            format!("{}\n{l}\n\n{}", &doc[..end], &doc[end..])
        }
        None => format!("{l}\n\n{doc}"),
    }
}

/// Puts the redaction line into an HTML document: a comment as its first
/// line (with `--no-redact`), and a paragraph after the page's `<h1>`
/// (a warning with `--no-redact`). The document also carries it as
/// `<meta name="agy-audit-redaction">`.
pub fn into_html(doc: String, mode: Mode, r: &Redactions) -> String {
    let (meta, para) = html_parts(mode, r);
    let mut out = String::with_capacity(doc.len() + meta.len() + para.len() + 64);
    if mode == Mode::Off {
        out.push_str("<!-- NOT REDACTED (--no-redact) -->\n");
    }
    // The meta before the first `<title>`, the paragraph after the first
    // `</h1>\n` (or first of all), written in one pass over `doc`: a large
    // report is never held twice over.
    let title = doc.find("<title>");
    let h1 = doc.find("</h1>\n").map(|i| i + "</h1>\n".len());
    let mut cuts: Vec<(usize, &str)> = Vec::new();
    match h1 {
        Some(e) => cuts.push((e, &para)),
        None => out.push_str(&para),
    }
    if let Some(t) = title {
        cuts.push((t, &meta));
    }
    // In offset order; at one offset the paragraph first (the meta goes
    // right before `<title>`), as inserting the meta first and then finding
    // the heading's end in that text placed them.
    cuts.sort_by_key(|(at, _)| *at);
    let mut from = 0;
    for (at, text) in cuts {
        out.push_str(&doc[from..at]);
        out.push_str(text);
        from = at;
    }
    out.push_str(&doc[from..]);
    out
}

/// What [`into_html`] inserts: the `<meta>` line and the paragraph.
fn html_parts(mode: Mode, r: &Redactions) -> (String, String) {
    let l = crate::report::html::esc(&line(mode, r));
    let meta = format!(
        "<meta name=\"agy-audit-redaction\" content=\"{}\">\n",
        match mode {
            Mode::Redact => format!("redacted {} {RULESET_VERSION}", r.total()),
            Mode::Off => "not-redacted".to_string(),
        }
    );
    let para = match mode {
        Mode::Redact => format!("<p id=\"redaction\">{l}</p>\n"),
        Mode::Off => format!("<p id=\"redaction\" class=\"warn\"><strong>{l}</strong></p>\n"),
    };
    (meta, para)
}

/// The JSON member a summary says its redaction with (`"redaction"`).
pub fn json_member(mode: Mode, r: &Redactions) -> serde_json::Value {
    match mode {
        Mode::Redact => {
            let mut v = r.to_json();
            if let Some(o) = v.as_object_mut() {
                o.insert("redacted".into(), true.into());
            }
            v
        }
        Mode::Off => serde_json::json!({"redacted": false, "note": NOT_REDACTED}),
    }
}

/// The JUnit properties a document says its redaction with.
pub fn junit_properties(mode: Mode, r: &Redactions) -> Vec<(String, String)> {
    match mode {
        Mode::Redact => vec![
            ("agy-audit.redacted".into(), "true".into()),
            ("agy-audit.redaction.ruleset".into(), RULESET_VERSION.into()),
            ("agy-audit.redaction.total".into(), r.total().to_string()),
            ("agy-audit.redaction.rules".into(), r.rules_text()),
        ],
        Mode::Off => vec![("agy-audit.redacted".into(), "false".into())],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-pass insertion writes what inserting the meta and then the
    /// paragraph wrote, wherever the title and the heading are.
    #[test]
    fn into_html_places_meta_and_paragraph_as_before() {
        fn before(doc: &str, mode: Mode, r: &Redactions) -> String {
            let (meta, para) = html_parts(mode, r);
            let mut out = String::new();
            if mode == Mode::Off {
                out.push_str("<!-- NOT REDACTED (--no-redact) -->\n");
            }
            let with_meta = doc.replacen("<title>", &format!("{meta}<title>"), 1);
            match with_meta.find("</h1>\n") {
                Some(i) => {
                    let end = i + "</h1>\n".len();
                    out.push_str(&with_meta[..end]);
                    out.push_str(&para);
                    out.push_str(&with_meta[end..]);
                }
                None => {
                    out.push_str(&para);
                    out.push_str(&with_meta);
                }
            }
            out
        }
        let r = Redactions::default();
        for doc in [
            "<head><title>t</title></head><h1>x</h1>\nbody<title>",
            "<h1>x</h1>\n<title>t</title>",
            "<h1>x</h1>\n",
            "<title>t</title>",
            "",
            "</h1>\n</h1>\n<title><title>",
        ] {
            for mode in [Mode::Redact, Mode::Off] {
                assert_eq!(
                    into_html(doc.to_string(), mode, &r),
                    before(doc, mode, &r),
                    "{doc:?}"
                );
            }
        }
    }
    use crate::verdict::{ReasonClass, Refusal};

    const KEY: &str = "AKIAQ3EGRSNDW5TKXM7P";

    #[test]
    fn a_refusal_keeps_class_and_rule_and_loses_the_secret() {
        let o = SessionOutcome::refused(Refusal::new(
            ReasonClass::FullMismatch,
            "steps[3]",
            format!("value {KEY} differs (tools143)"),
        ));
        let mut r = Redactions::default();
        let shown = outcome(&o, &mut r);
        assert_eq!(shown.class(), o.class());
        assert_eq!(shown.verdict(), o.verdict());
        let (a, b) = (
            o.refusal().map(|x| x.rule()),
            shown.refusal().map(|x| x.rule()),
        );
        assert_eq!(a, b);
        let text = shown.reason_text().unwrap_or_default();
        assert!(!text.contains(KEY), "{text}");
        assert!(text.contains("[REDACTED:aws-access-token]"), "{text}");
        assert_eq!(r.total(), 1);
    }

    #[test]
    fn notices_land_where_said() {
        let r = Redactions::default();
        let md = into_markdown("# T\n\nbody\n".into(), Mode::Redact, &r);
        assert!(md.starts_with("# T\n\nRedacted 0 value(s)"), "{md}");
        let md = into_markdown("# T\n".into(), Mode::Off, &r);
        assert!(md.starts_with("**NOT REDACTED"), "{md}");
        let html = into_html(
            "<!DOCTYPE html>\n<title>x</title>\n<h1>x</h1>\nrest".into(),
            Mode::Off,
            &r,
        );
        assert!(html.starts_with("<!-- NOT REDACTED"), "{html}");
        assert!(html.contains("<h1>x</h1>\n<p id=\"redaction\" class=\"warn\">"));
        assert!(html.contains("content=\"not-redacted\""));
    }
}
