//! One escaper per place outside text lands (issue 45 item 2): every text
//! that came from outside the tool (a store root's path, a file name, a
//! conversation id, a profile, a rule name, a refusal reason, a listing
//! line, daemon text) is escaped here for where it is written, so a path
//! holding a backtick and a newline cannot put a heading or an HTML tag into
//! a Markdown report, and a reason holding ESC cannot drive the terminal.
//!
//! Control characters are never written raw anywhere: they are shown as
//! `\u{1b}` (Rust's escape spelling), which keeps them visible.

use std::fmt::Write as _;

/// A control character, visibly: `\u{1b}`.
fn visible(out: &mut String, c: char) {
    let _ = write!(out, "\\u{{{:x}}}", c as u32);
}

/// Text for a terminal line: control characters (a newline, ESC, NUL...)
/// shown visibly, everything else as it is ([`crate::util::term::visible`],
/// which every `note!` line goes through too).
pub fn terminal(s: &str) -> std::borrow::Cow<'_, str> {
    crate::util::term::visible(s)
}

/// Text for Markdown running text or a table cell: no control character
/// (so no new line, heading or table row can start), and the characters
/// that open structure escaped: `\`, `` ` ``, `|`, `[`, `]`, `*`, `_`, and
/// `<`, `>`, `&` as HTML entities (no tag, no entity of the source's own).
pub fn md_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            c if c.is_control() => visible(&mut out, c),
            '\\' | '`' | '|' | '[' | ']' | '*' | '_' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            c => out.push(c),
        }
    }
    out
}

/// A whole Markdown code span showing `s` literally: fenced with one more
/// backtick than the longest run inside it (padded with a space when `s`
/// starts or ends with one), control characters shown visibly, and `|`
/// escaped when the span sits in a table cell (GFM splits cells on it even
/// inside code).
pub fn md_code(s: &str, in_table: bool) -> String {
    let mut body = String::with_capacity(s.len() + 4);
    for c in s.chars() {
        match c {
            c if c.is_control() => visible(&mut body, c),
            '|' if in_table => body.push_str("\\|"),
            c => body.push(c),
        }
    }
    let fence = "`".repeat(crate::util::longest_run(s, '`') + 1);
    let pad = if body.starts_with('`') || body.ends_with('`') || body.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{body}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_unchanged() {
        for s in [
            "sqlite-v1-format0-modeled",
            "/tmp/store",
            "2026-12-07T00:00:00Z",
        ] {
            assert_eq!(md_text(s), s);
        }
        for s in [
            "sqlite-v1-format0-modeled",
            "/tmp/store",
            "steps.[].x string",
        ] {
            assert_eq!(md_code(s, true), format!("`{s}`"));
            assert_eq!(terminal(s), s);
        }
        assert_eq!(md_text("steps[3]"), r"steps\[3\]");
    }

    #[test]
    fn injected_markdown_stays_text() {
        let evil = "/r`\n# Injected <img src=x onerror=alert(1)> | [x](javascript:1)";
        let t = md_text(evil);
        assert!(
            !t.contains('\n') && !t.contains("<img") && !t.contains("[x]("),
            "{t}"
        );
        assert!(t.contains("\\u{a}# Injected &lt;img"), "{t}");
        let c = md_code(evil, true);
        assert!(
            c.starts_with("``") && c.ends_with("``") && !c.contains('\n'),
            "{c}"
        );
        assert!(c.contains("\\|"), "{c}");
        assert_eq!(md_code("a`b", false), "``a`b``");
        assert_eq!(md_code("`a", false), "`` `a ``");
    }

    #[test]
    fn control_characters_are_visible_on_a_terminal() {
        assert_eq!(terminal("a\u{1b}[2Jb\0c"), "a\\u{1b}[2Jb\\u{0}c");
    }
}
