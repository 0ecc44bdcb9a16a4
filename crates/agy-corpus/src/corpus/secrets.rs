//! Fake credentials for `corpus generate --plant-secrets` (issue 46): the
//! formats of the common secret-scanning rules (an AWS access key id, a
//! GitHub token, a Slack bot token, a PEM private key block, a URL with a
//! password, a Google API key), drawn from a random stream of their own
//! (`["secrets", <conversation id>]`), so planting changes no other draw of
//! the corpus, and each value is new. Planted in command outputs, file
//! contents and user text, at the start of the text (inside any excerpt a
//! step keeps), and recorded with where they went in `.truth/secrets.jsonl`.
//!
//! Written from the formats themselves, never from the reader's redactor:
//! the truth stays independent of the code under test.

use super::rng::Rng;
use serde::Serialize;

/// Where a value was planted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Place {
    /// A command's output (run_command and its kin).
    #[serde(rename = "command-output")]
    CommandOutput,
    /// A file's content as a tool read it.
    #[serde(rename = "file-content")]
    FileContent,
    /// What the user typed.
    #[serde(rename = "user-text")]
    UserText,
}

/// One planted value, as `.truth/secrets.jsonl` records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Planted {
    /// The secret itself (for a URL, its password).
    pub value: String,
    /// The credential's format, by the gitleaks rule id that names it
    /// (`url-password` for a password in a URL).
    pub kind: &'static str,
    /// The conversation (file id) whose step holds it.
    pub conversation: String,
    /// The step index (`idx`) whose text holds it.
    pub step: usize,
    /// Which text of the step.
    pub place: Place,
}

const UPPER32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const DIGITS: &[u8] = b"0123456789";
const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const KEYCHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";

/// The planter of one conversation.
#[derive(Debug)]
pub struct Planter {
    r: Rng,
    conversation: String,
    next: usize,
    /// The step whose text is being built.
    pub step: usize,
    /// What was planted so far.
    pub planted: Vec<Planted>,
}

impl Planter {
    /// The planter of conversation `conversation` of the corpus of `seed`.
    pub fn new(seed: u64, conversation: &str) -> Planter {
        Planter {
            r: Rng::new(seed, &["secrets", conversation]),
            conversation: conversation.to_string(),
            next: 0,
            step: 0,
            planted: Vec::new(),
        }
    }

    fn chars(&mut self, set: &[u8], n: usize) -> String {
        (0..n)
            .map(|_| set[self.r.below(set.len() as u64) as usize] as char)
            .collect()
    }

    /// The next credential: (the line to insert, the secret, its kind).
    /// `one_line`: a PEM block is skipped for a text whose lines count.
    fn credential(&mut self, one_line: bool) -> (String, String, &'static str) {
        let mut k = self.next % 6;
        self.next += 1;
        if one_line && k == 3 {
            k = 4;
            self.next += 1;
        }
        match k {
            0 => {
                let v = format!("AKIA{}", self.chars(UPPER32, 16));
                (format!("AWS_ACCESS_KEY_ID={v}"), v, "aws-access-token")
            }
            1 => {
                let v = format!("ghp_{}", self.chars(ALNUM, 36));
                (format!("GITHUB_TOKEN={v}"), v, "github-pat")
            }
            2 => {
                let v = format!(
                    "xoxb-{}-{}-{}",
                    self.chars(DIGITS, 12),
                    self.chars(DIGITS, 13),
                    self.chars(ALNUM, 24)
                );
                (format!("SLACK_BOT_TOKEN={v}"), v, "slack-bot-token")
            }
            3 => {
                let body: Vec<String> = (0..3).map(|_| self.chars(B64, 64)).collect();
                let v = format!(
                    "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
                    body.join("\n")
                );
                (v.clone(), v, "private-key")
            }
            4 => {
                let pw = self.chars(ALNUM, 20);
                (
                    format!("DATABASE_URL=postgres://app:{pw}@db.internal:5432/app"),
                    pw,
                    "url-password",
                )
            }
            _ => {
                let v = format!("AIza{}", self.chars(KEYCHARS, 35));
                (format!("GOOGLE_API_KEY={v}"), v, "gcp-api-key")
            }
        }
    }

    /// `text` with a credential planted at its start, recorded.
    pub fn plant(&mut self, text: String, place: Place) -> String {
        let one_line = place == Place::FileContent;
        let (line, value, kind) = self.credential(one_line);
        self.planted.push(Planted {
            value,
            kind,
            conversation: self.conversation.clone(),
            step: self.step,
            place,
        });
        match place {
            // The first line carries it, so the text keeps its line count.
            Place::FileContent => format!("{line} {text}"),
            Place::CommandOutput => format!("{line}\n{text}"),
            Place::UserText => format!("Use these credentials: {line} \n{text}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_every_kind() {
        let mut a = Planter::new(7, "c");
        let mut b = Planter::new(7, "c");
        for _ in 0..6 {
            assert_eq!(
                a.plant("x".into(), Place::CommandOutput),
                b.plant("x".into(), Place::CommandOutput)
            );
        }
        let kinds: std::collections::BTreeSet<_> = a.planted.iter().map(|p| p.kind).collect();
        assert_eq!(kinds.len(), 6);
        let f = a.plant("one\ntwo".into(), Place::FileContent);
        assert_eq!(f.lines().count(), 2);
    }
}
