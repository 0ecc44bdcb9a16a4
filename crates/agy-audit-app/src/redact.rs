//! The one redactor of shared outputs (issue 46, "secrets stay home").
//!
//! Every text that came from a conversation and lands in an output made to
//! be shared (the qualification report in Markdown and HTML with its
//! drill-downs, the diff report, JUnit XML, `--json` summaries' reason
//! text) passes through [`redact`] first: each secret found is replaced by
//! `[REDACTED:<rule id>]`, and a [`Redactions`] tally counts them by rule.
//! It runs on the whole text before any truncation, excerpt or escaping,
//! so no cut can leave part of a secret. Evidence (sidecars, a sweep's
//! `corpus/` answers, digests, fidelity exports) never passes through it.
//!
//! ## The ruleset, and why it is embedded
//!
//! The rules mirror the gitleaks default configuration (v8.30.1, source
//! commit `83d9cd68`, MIT licence, Copyright (c) 2019 Zachary Rice): each
//! rule below keeps its gitleaks id and its regular expression, with `\w`
//! spelled as the ASCII class gitleaks' Go engine means by it. No crate
//! carrying those rules could be used as a library here: `keyspoor`
//! (which embeds the transformed v8.30.1 data and exposes an `Engine`)
//! requires rustc 1.96 (this project builds with 1.95 and declares 1.82),
//! and `stakpak-shared` (which embeds a gitleaks.toml) pulls 35 direct
//! dependencies (SSH, TLS, an SQL client). So the rules are a curated
//! subset, named by [`RULESET_VERSION`] in every output.
//!
//! Where gitleaks is silent or lenient, the stricter reading for secrecy
//! is taken: its minimum-entropy thresholds and allowlists (which exist to
//! keep a scanner's false positives down) are not applied, so a value
//! shaped like a credential is redacted even when it looks like a
//! placeholder. The tool's own rule covers what the ruleset lacks: a
//! password in a URL's user information (`scheme://user:password@host`).

use regex::Regex;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;

/// The ruleset's version, as every redacted output names it.
pub const RULESET_VERSION: &str = "gitleaks-v8.30.1-subset+agy-audit-1";

/// The marker a redacted value becomes: `[REDACTED:<rule id>]`.
pub fn marker(rule: &str) -> String {
    format!("[REDACTED:{rule}]")
}

/// One rule: its id, its expression, and which group is the secret
/// (0: the whole match).
struct Rule {
    id: &'static str,
    re: Regex,
    group: usize,
}

/// The trailing context gitleaks requires after some tokens.
const END: &str = r#"(?:[\x60'"\s;]|\\[nr]|$)"#;

/// `(id, pattern, secret group)`, gitleaks v8.30.1's ids and expressions.
fn rule_table() -> Vec<(&'static str, String, usize)> {
    vec![
        (
            "aws-access-token",
            r"\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b".into(),
            1,
        ),
        ("github-pat", r"ghp_[0-9a-zA-Z]{36}".into(), 0),
        ("github-oauth", r"gho_[0-9a-zA-Z]{36}".into(), 0),
        ("github-app-token", r"(?:ghu|ghs)_[0-9a-zA-Z]{36}".into(), 0),
        ("github-refresh-token", r"ghr_[0-9a-zA-Z]{36}".into(), 0),
        (
            "github-fine-grained-pat",
            r"github_pat_[0-9A-Za-z_]{82}".into(),
            0,
        ),
        ("gitlab-pat", r"glpat-[0-9A-Za-z_-]{20}".into(), 0),
        (
            "slack-bot-token",
            r"xoxb-[0-9]{10,13}-[0-9]{10,13}[a-zA-Z0-9-]*".into(),
            0,
        ),
        (
            "slack-legacy-bot-token",
            r"xoxb-[0-9]{8,14}-[a-zA-Z0-9]{18,26}".into(),
            0,
        ),
        (
            "slack-user-token",
            r"xox[pe](?:-[0-9]{10,13}){3}-[a-zA-Z0-9-]{28,34}".into(),
            0,
        ),
        (
            "slack-app-token",
            r"(?i)xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+".into(),
            0,
        ),
        (
            "slack-webhook-url",
            r"(?:https?://)?hooks.slack.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56}"
                .into(),
            0,
        ),
        (
            "private-key",
            r"(?i)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S-]{64,}?KEY(?: BLOCK)?-----"
                .into(),
            0,
        ),
        ("gcp-api-key", format!(r"\b(AIza[0-9A-Za-z_-]{{35}}){END}"), 1),
        (
            "openai-api-key",
            format!(
                r"\b(sk-(?:proj|svcacct|admin)-(?:[A-Za-z0-9_-]{{74}}|[A-Za-z0-9_-]{{58}})T3BlbkFJ(?:[A-Za-z0-9_-]{{74}}|[A-Za-z0-9_-]{{58}})\b|sk-[a-zA-Z0-9]{{20}}T3BlbkFJ[a-zA-Z0-9]{{20}}){END}"
            ),
            1,
        ),
        (
            "anthropic-api-key",
            format!(r"\b(sk-ant-api03-[a-zA-Z0-9_\-]{{93}}AA){END}"),
            1,
        ),
        (
            "stripe-access-token",
            format!(r"\b((?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{{10,99}}){END}"),
            1,
        ),
        (
            "npm-access-token",
            format!(r"(?i)\b(npm_[a-z0-9]{{36}}){END}"),
            1,
        ),
        (
            "pypi-upload-token",
            r"pypi-AgEIcHlwaS5vcmc[0-9A-Za-z_-]{50,1000}".into(),
            0,
        ),
        (
            "jwt",
            format!(
                r"\b(ey[a-zA-Z0-9]{{17,}}\.ey[a-zA-Z0-9/\\_-]{{17,}}\.(?:[a-zA-Z0-9/\\_-]{{10,}}={{0,2}})?){END}"
            ),
            1,
        ),
        // The tool's own: a URL whose user information carries a password
        // (`scheme://user:password@host`); the password is the secret.
        (
            URL_PASSWORD,
            r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*:([^\s/?#@]+)@".into(),
            1,
        ),
    ]
}

/// The id of the tool's own URL-password rule.
pub const URL_PASSWORD: &str = "url-password";

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    rule_table()
        .into_iter()
        .filter_map(|(id, pattern, group)| {
            // The table is the tool's own text, compiled by the unit test
            // `every_rule_compiles`; a rule that did not would be dropped
            // here rather than panic, and that test fails.
            Regex::new(&pattern).ok().map(|re| Rule { id, re, group })
        })
        .collect()
});

/// The ids of every rule, gitleaks' and the tool's own.
pub fn rule_ids() -> Vec<&'static str> {
    RULES.iter().map(|r| r.id).collect()
}

/// How many values were redacted, by rule id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redactions {
    by_rule: BTreeMap<&'static str, u64>,
}

impl Redactions {
    /// The values redacted in all.
    pub fn total(&self) -> u64 {
        self.by_rule.values().sum()
    }

    /// The count per rule id, in id order.
    pub fn by_rule(&self) -> &BTreeMap<&'static str, u64> {
        &self.by_rule
    }

    /// Adds another tally to this one.
    pub fn merge(&mut self, other: &Redactions) {
        for (k, v) in &other.by_rule {
            *self.by_rule.entry(k).or_insert(0) += v;
        }
    }

    /// Redacts `text`, counting here what it redacted.
    pub fn apply<'a>(&mut self, text: &'a str) -> Cow<'a, str> {
        let (out, r) = redact(text);
        self.merge(&r);
        out
    }

    /// Redacts an owned text in place, counting here.
    pub fn apply_owned(&mut self, text: &mut String) {
        if let Cow::Owned(o) = self.apply(text) {
            *text = o;
        }
    }

    /// Counts the markers `[REDACTED:<rule id>]` already in `text` (of this
    /// ruleset's rules), as a text redacted earlier holds them.
    pub fn count_markers(&mut self, text: &str) {
        let mut rest = text;
        while let Some(i) = rest.find("[REDACTED:") {
            rest = &rest[i + "[REDACTED:".len()..];
            let Some(end) = rest.find(']') else { break };
            if let Some(id) = RULES.iter().map(|r| r.id).find(|id| *id == &rest[..end]) {
                *self.by_rule.entry(id).or_insert(0) += 1;
            }
        }
    }

    /// The tally as a JSON object: `{"ruleset", "total", "byRule"}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "ruleset": RULESET_VERSION,
            "total": self.total(),
            "byRule": self.by_rule,
        })
    }

    /// `rule-a ×2, rule-b ×1` (or `none`).
    pub fn rules_text(&self) -> String {
        if self.by_rule.is_empty() {
            return "none".into();
        }
        self.by_rule
            .iter()
            .map(|(k, v)| format!("{k} ×{v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Redactions {
    /// The line an output says its redaction with.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Redacted {} value(s) from conversations (ruleset {}): {}.",
            self.total(),
            RULESET_VERSION,
            self.rules_text()
        )
    }
}

/// Whether an output is redacted, and the line it says so with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Redact,
    /// `--no-redact`: for a local look; the output says so first.
    Off,
}

impl Mode {
    pub fn from_no_redact(no_redact: bool) -> Mode {
        if no_redact {
            Mode::Off
        } else {
            Mode::Redact
        }
    }

    pub fn on(self) -> bool {
        self == Mode::Redact
    }
}

/// The first line of an output made with `--no-redact`.
pub const NOT_REDACTED: &str =
    "NOT REDACTED (--no-redact): this output may hold credentials from conversations; do not share it.";

/// Replaces every secret in `text` by `[REDACTED:<rule id>]`.
///
/// Overlapping matches (two rules over one token) are merged into one
/// span, named by the rule whose match starts first (the longer on a tie),
/// so no part of either match survives.
pub fn redact(text: &str) -> (Cow<'_, str>, Redactions) {
    let mut spans: Vec<(usize, usize, &'static str)> = Vec::new();
    for rule in RULES.iter() {
        for caps in rule.re.captures_iter(text) {
            if let Some(m) = caps.get(rule.group).or_else(|| caps.get(0)) {
                if m.end() > m.start() {
                    spans.push((m.start(), m.end(), rule.id));
                }
            }
        }
    }
    let mut tally = Redactions::default();
    if spans.is_empty() {
        return (Cow::Borrowed(text), tally);
    }
    spans.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut merged: Vec<(usize, usize, &'static str)> = Vec::new();
    for (s, e, id) in spans {
        match merged.last_mut() {
            Some(last) if s < last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e, id)),
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (s, e, id) in merged {
        out.push_str(&text[at..s]);
        out.push_str(&marker(id));
        *tally.by_rule.entry(id).or_insert(0) += 1;
        at = e;
    }
    out.push_str(&text[at..]);
    (Cow::Owned(out), tally)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Realistic fakes, one per family.
    pub(crate) const FAKES: &[(&str, &str)] = &[
        ("aws-access-token", "AKIAQ3EGRSNDW5TKXM7P"),
        ("github-pat", "ghp_R7xqLk2M9vTn4Wp8Ys1Hd6Fj3Bc5Gz0Ea2Qu"),
        ("github-oauth", "gho_R7xqLk2M9vTn4Wp8Ys1Hd6Fj3Bc5Gz0Ea2Qu"),
        ("gitlab-pat", "glpat-Xq7Lk2M9vTn4Wp8Ys1Hd"),
        (
            "slack-bot-token",
            "xoxb-1234567890123-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        ),
        ("gcp-api-key", "AIzaSyD4r7Xq2Lk9Mv3Tn8Wp1Ys6Hd0Fj5Bc2Gz"),
        ("stripe-access-token", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
        (
            "jwt",
            "eyJhbGciOiJIUzI1NiJ9abc.eyJzdWIiOiIxMjM0NTY3ODkwIn0abc.dozjgNryP4J3jVmNHl0w5N",
        ),
    ];

    const PEM: &str = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n-----END RSA PRIVATE KEY-----";

    #[test]
    fn every_rule_compiles() {
        assert_eq!(RULES.len(), rule_table().len());
    }

    #[test]
    fn each_family_redacts_a_realistic_fake() {
        for (id, value) in FAKES {
            let text = format!("export TOKEN={value}\nnext line");
            let (out, r) = redact(&text);
            assert!(!out.contains(value), "{id}: {out}");
            assert!(out.contains(&marker(id)), "{id}: {out}");
            assert_eq!(r.total(), 1, "{id}: {out}");
            assert!(out.ends_with("\nnext line"), "{id}: {out}");
        }
        let text = format!("key:\n{PEM}\ndone");
        let (out, r) = redact(&text);
        assert_eq!(out, "key:\n[REDACTED:private-key]\ndone");
        assert_eq!(r.by_rule().get("private-key"), Some(&1));
    }

    #[test]
    fn a_url_password_is_redacted_and_the_rest_kept() {
        let (out, r) = redact("git clone https://deploy:s3cr3t-Pa55@example.com/x.git");
        assert_eq!(
            out,
            "git clone https://deploy:[REDACTED:url-password]@example.com/x.git"
        );
        assert_eq!(r.by_rule().get(URL_PASSWORD), Some(&1));
        let (out, _) = redact("postgres://app:hunter2@db:5432/main");
        assert_eq!(out, "postgres://app:[REDACTED:url-password]@db:5432/main");
    }

    #[test]
    fn near_misses_are_left() {
        for text in [
            "AKIAQ3EGRSNDW5TKXM7",                     // one short
            "ghp_R7xqLk2M9vTn4Wp8Ys1Hd6Fj3Bc5Gz0Ea2Q", // 35 characters
            "xoxb-123-456",                            // too short
            "AIzaSyD4r7Xq2Lk9",                        // too short
            "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
            "https://example.com:8443/path", // a port, no user
            "https://user@example.com/",     // no password
            "mailto:someone@example.com",
            "plain text with AKIA in it",
        ] {
            let (out, r) = redact(text);
            assert!(matches!(out, Cow::Borrowed(_)), "{text} -> {out}");
            assert_eq!(r.total(), 0, "{text}");
        }
    }

    #[test]
    fn overlapping_matches_leave_no_part() {
        // slack-bot-token and slack-legacy-bot-token both match.
        let v = "xoxb-1234567890-12345678901234567890AbCd";
        let (out, r) = redact(v);
        assert_eq!(r.total(), 1);
        assert!(out.starts_with("[REDACTED:slack-"), "{out}");
        assert!(!out.contains("AbCd"), "{out}");
    }

    #[test]
    fn an_excerpt_after_redaction_never_holds_part_of_a_secret() {
        let (_, v) = FAKES[1];
        let text = format!("{}{v} trailing", "x".repeat(30));
        let (out, _) = redact(&text);
        // Any cut of the redacted text, at any length: no 8-character
        // piece of the secret survives.
        for cut in 0..=out.len() {
            if !out.is_char_boundary(cut) {
                continue;
            }
            let piece = &out[..cut];
            for i in 0..v.len().saturating_sub(8) {
                assert!(!piece.contains(&v[i..i + 8]), "{piece}");
            }
        }
    }

    #[test]
    fn tally_line_names_rules_and_ruleset() {
        let mut t = Redactions::default();
        let mut s = format!("a {} b {}", FAKES[0].1, FAKES[0].1);
        t.apply_owned(&mut s);
        assert_eq!(t.total(), 2);
        let line = t.to_string();
        assert!(line.contains("aws-access-token ×2"), "{line}");
        assert!(line.contains(RULESET_VERSION), "{line}");
        assert_eq!(t.to_json()["byRule"]["aws-access-token"], 2);
    }
}
