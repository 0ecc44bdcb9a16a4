//! JUnit XML for CI test reporters (GitLab, Jenkins, GitHub test-report
//! actions): one `<testcase>` per session, `classname` its profile and
//! `name` its conversation (file) id, with a `<failure message=...>` when
//! the session fails the check (`audit-qualify`: a recorded result that no
//! longer holds; `audit-diff`: a regression). The document follows the
//! common JUnit schema: `<testsuites>` and one `<testsuite>`, each with
//! `name`, `tests`, `failures`, `errors`, `skipped` and `time`. Times are
//! written `0` so that the same input gives the same bytes.

use std::fmt::Write;

/// One test case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    pub classname: String,
    pub name: String,
    /// `(type, message)` of the failure, when the case failed.
    pub failure: Option<(String, String)>,
}

/// Escapes text for an XML 1.0 attribute or element: the five markup
/// characters as entities, and characters XML 1.0 cannot carry at all
/// (C0 controls other than tab, newline and carriage return, U+FFFE,
/// U+FFFF) as U+FFFD, so a hostile reason never breaks the document.
pub fn xml_esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\t' => o.push_str("&#9;"),
            '\n' => o.push_str("&#10;"),
            '\r' => o.push_str("&#13;"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

/// The JUnit document: a `<testsuites>` named `suites` holding one
/// `<testsuite>` named `suite` with every case in the order given.
pub fn render(suites: &str, suite: &str, cases: &[Case]) -> String {
    render_with(suites, suite, &[], cases)
}

/// [`render`] with `<properties>` on the suite (name, value), first in it
/// as the schema places them: how the document was redacted (issue 46).
pub fn render_with(
    suites: &str,
    suite: &str,
    properties: &[(String, String)],
    cases: &[Case],
) -> String {
    let failures = cases.iter().filter(|c| c.failure.is_some()).count();
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let counts = format!(
        "tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"0\"",
        cases.len()
    );
    let _ = writeln!(s, "<testsuites name=\"{}\" {counts}>", xml_esc(suites));
    let _ = writeln!(s, "  <testsuite name=\"{}\" {counts}>", xml_esc(suite));
    if !properties.is_empty() {
        s.push_str("    <properties>\n");
        for (k, v) in properties {
            let _ = writeln!(
                s,
                "      <property name=\"{}\" value=\"{}\"/>",
                xml_esc(k),
                xml_esc(v)
            );
        }
        s.push_str("    </properties>\n");
    }
    for c in cases {
        let head = format!(
            "    <testcase classname=\"{}\" name=\"{}\" time=\"0\"",
            xml_esc(&c.classname),
            xml_esc(&c.name)
        );
        match &c.failure {
            None => {
                let _ = writeln!(s, "{head}/>");
            }
            Some((ty, message)) => {
                let _ = writeln!(
                    s,
                    "{head}>\n      <failure message=\"{m}\" type=\"{t}\">{m}</failure>\n    </testcase>",
                    m = xml_esc(message),
                    t = xml_esc(ty)
                );
            }
        }
    }
    s.push_str("  </testsuite>\n</testsuites>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_escapes() {
        let cases = vec![
            Case {
                classname: "p<1>".into(),
                name: "a".into(),
                failure: None,
            },
            Case {
                classname: "p".into(),
                name: "b".into(),
                failure: Some(("UNKNOWN".into(), "x \"&\" \u{1} y".into())),
            },
        ];
        let x = render("s", "t", &cases);
        assert!(x.contains("tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"0\" time=\"0\""));
        assert!(x.contains("classname=\"p&lt;1&gt;\""));
        assert!(x.contains("message=\"x &quot;&amp;&quot; \u{FFFD} y\""));
        assert_eq!(x, render("s", "t", &cases));
    }
}
