//! Plausible conversation content: prose in several scripts, paths, commands,
//! file contents and (large) command outputs. Cheap to generate: large
//! outputs are built from repeated, numbered lines.

use super::rng::Rng;

const WORDS: &[&str] = &[
    "the",
    "build",
    "fails",
    "because",
    "parser",
    "module",
    "returns",
    "an",
    "error",
    "when",
    "input",
    "is",
    "empty",
    "we",
    "should",
    "add",
    "a",
    "test",
    "for",
    "this",
    "case",
    "and",
    "then",
    "refactor",
    "config",
    "loader",
    "so",
    "that",
    "it",
    "handles",
    "missing",
    "files",
    "gracefully",
    "cache",
    "layer",
    "timeout",
    "retry",
    "logic",
    "migration",
    "schema",
    "index",
    "query",
    "latency",
    "benchmark",
    "regression",
    "fix",
    "deploy",
    "staging",
    "release",
    "notes",
    "check",
    "lint",
    "warnings",
    "format",
    "dependency",
    "upgrade",
    "workspace",
];

const UNICODE: &[&str] = &[
    "naïve café résumé",
    "Grüße aus Köln",
    "日本語のテキスト",
    "中文测试字符串",
    "한국어 문장",
    "Ελληνικά γράμματα",
    "Русский текст",
    "עברית מימין לשמאל",
    "العربية",
    "emoji ✅ 🚀 🦀 🎉",
    "math ∀x∈ℝ: x² ≥ 0",
    "box ┌─┐ │ │ └─┘",
    "zero\u{200b}width joiner 👩\u{200d}💻",
];

const DIRS: &[&str] = &[
    "src",
    "src/parser",
    "src/net",
    "tests",
    "docs",
    "scripts",
    "crates/core/src",
    "web/app",
    "internal/store",
    "cmd/server",
];

const FILES: &[&str] = &[
    "main.rs",
    "lib.rs",
    "mod.rs",
    "config.toml",
    "README.md",
    "handler.go",
    "index.ts",
    "utils.py",
    "schema.sql",
    "Makefile",
    "build.rs",
    "server_test.go",
    "app.tsx",
];

const COMMANDS: &[&str] = &[
    "cargo test --workspace",
    "cargo build --release",
    "go test ./...",
    "npm run build",
    "pytest -q",
    "ls -la",
    "git status --short",
    "git log --oneline -n 20",
    "make check",
    "rg -n TODO src",
    "du -sh target",
    "python3 scripts/migrate.py --dry-run",
];

/// A sentence of `n` words, sometimes with a unicode fragment.
pub fn sentence(r: &mut Rng, n: usize) -> String {
    let mut s = String::new();
    for i in 0..n.max(1) {
        if i > 0 {
            s.push(' ');
        }
        if r.chance(0.04) {
            let w = r.pick::<&str>(UNICODE);
            s.push_str(w);
        } else {
            let w = r.pick::<&str>(WORDS);
            s.push_str(w);
        }
    }
    if let Some(first) = s.get(0..1) {
        let up = first.to_ascii_uppercase();
        s.replace_range(0..1, &up);
    }
    s.push('.');
    s
}

/// A paragraph of a few sentences.
pub fn paragraph(r: &mut Rng, sentences: usize) -> String {
    (0..sentences.max(1))
        .map(|_| {
            let n = r.range(5, 16) as usize;
            sentence(r, n)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Markdown prose: paragraphs, sometimes a list or a code block.
pub fn markdown(r: &mut Rng, paragraphs: usize) -> String {
    let mut out = String::new();
    for i in 0..paragraphs.max(1) {
        if i > 0 {
            out.push_str("\n\n");
        }
        match r.below(6) {
            0 => {
                for _ in 0..r.range(2, 5) {
                    out.push_str("- ");
                    let n = r.range(4, 9) as usize;
                    out.push_str(&sentence(r, n));
                    out.push('\n');
                }
            }
            1 => {
                out.push_str("```rust\n");
                let n = r.range(3, 12) as usize;
                out.push_str(&code(r, n));
                out.push_str("```");
            }
            _ => {
                let n = r.range(1, 4) as usize;
                out.push_str(&paragraph(r, n));
            }
        }
    }
    out
}

/// A repository-relative path.
pub fn rel_path(r: &mut Rng) -> String {
    format!("{}/{}", r.pick(DIRS), r.pick(FILES))
}

/// The workspace root of a conversation.
pub fn workspace(r: &mut Rng) -> String {
    let users = ["dev", "alex", "mkim", "ana", "build"];
    let projects = [
        "atlas",
        "ledger-svc",
        "webshop",
        "compiler",
        "infra",
        "notes-app",
    ];
    format!("/home/{}/src/{}", r.pick(&users), r.pick(&projects))
}

/// An absolute path made only of letters, digits and `/ . _ - @ +`.
pub fn abs_path(r: &mut Rng, root: &str) -> String {
    format!("{root}/{}", rel_path(r))
}

/// A shell command.
pub fn command(r: &mut Rng) -> String {
    r.pick(COMMANDS).to_string()
}

/// Source-code-looking lines.
pub fn code(r: &mut Rng, lines: usize) -> String {
    let mut s = String::new();
    for i in 0..lines {
        let w = r.pick(WORDS);
        match r.below(5) {
            0 => s.push_str(&format!(
                "fn {w}_{i}(input: &str) -> Result<(), Error> {{\n"
            )),
            1 => s.push_str(&format!(
                "    let {w} = parse(input)?; // {}\n",
                r.pick(UNICODE)
            )),
            2 => s.push_str("    }\n"),
            3 => s.push_str(&format!("    // TODO({w}): handle the empty case\n")),
            _ => s.push_str(&format!("    {w}.push({i});\n")),
        }
    }
    s
}

/// A command output of roughly `bytes` bytes (numbered log lines).
pub fn output(r: &mut Rng, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 128);
    let kinds = [
        "test result: ok",
        "Compiling",
        "warning: unused variable",
        "INFO request served",
        "DEBUG cache miss",
        "PASS",
        "ok  \tgithub.com/acme/svc",
    ];
    let mut i = 0u64;
    while s.len() < bytes {
        let k = kinds[(i % kinds.len() as u64) as usize];
        s.push_str(&format!("{k} #{i} {} in {}ms", r.pick(WORDS), r.below(900)));
        if i % 97 == 13 {
            s.push(' ');
            let w = r.pick::<&str>(UNICODE);
            s.push_str(w);
        }
        s.push('\n');
        i += 1;
    }
    s
}

/// A file's content of `lines` lines.
pub fn file_content(r: &mut Rng, lines: usize) -> String {
    code(r, lines)
}

/// A unified diff of a small edit.
pub fn diff(r: &mut Rng, path: &str) -> String {
    let a = r.pick(WORDS);
    let b = r.pick(WORDS);
    format!("--- a/{path}\n+++ b/{path}\n@@ -1,3 +1,3 @@\n fn main() {{\n-    {a}();\n+    {b}();\n }}\n")
}
