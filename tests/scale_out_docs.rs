//! `docs/scale-out.md` (issue 33 item 5): its GitHub Actions workflow and its
//! Kubernetes manifests are valid YAML, and every `agy-audit` command line in
//! them is accepted by the CLI's own argument parser
//! (`agy_audit::cli::check_args`, the parser the binary runs).

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

use serde_norway::Value;

/// The fenced ```yaml blocks of a Markdown text.
fn yaml_blocks(md: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in md.lines() {
        match &mut current {
            None if line.trim_start() == "```yaml" => current = Some(String::new()),
            Some(b) if line.trim_start() == "```" => {
                blocks.push(std::mem::take(b));
                current = None;
            }
            Some(b) => {
                b.push_str(line);
                b.push('\n');
            }
            None => {}
        }
    }
    assert!(current.is_none(), "an unclosed yaml block");
    blocks
}

/// Every YAML document of a block.
fn documents(block: &str) -> Vec<Value> {
    use serde::Deserialize;
    serde_norway::Deserializer::from_str(block)
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("invalid YAML: {e}\n{block}")))
        .collect()
}

/// The engines' placeholders, as a run would expand them.
fn expand(word: &str) -> String {
    let w = word
        .replace("${{ matrix.shard }}", "1")
        .replace("$JOB_COMPLETION_INDEX", "0");
    assert!(
        !w.contains('$'),
        "an unexpanded placeholder in `{word}`: teach this test its value"
    );
    w
}

/// Shell words of one command line, up to a `;`, `|` or `&&`: whitespace
/// splits, single and double quotes group.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (None, ';' | '|' | '&') => break,
            (None, c) if c.is_whitespace() => {
                if any || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            (None, c) => word.push(c),
        }
    }
    assert!(quote.is_none(), "unbalanced quotes in `{line}`");
    if any || !word.is_empty() {
        words.push(word);
    }
    words
}

/// Every `agy-audit` command in a YAML value: lines of a string (a `run:`
/// script, an `args:` script) that start with it, and sequences (a
/// container's `command:`) whose first item is it.
fn commands(v: &Value, out: &mut Vec<Vec<String>>) {
    match v {
        Value::String(s) => {
            let joined = s.replace("\\\n", " ");
            for line in joined.lines() {
                let line = line.trim();
                if line.starts_with("agy-audit ") {
                    // The engine expands its placeholders before the shell splits.
                    out.push(shell_words(&expand(line)));
                }
            }
        }
        Value::Sequence(items) => {
            if items.first().and_then(Value::as_str) == Some("agy-audit") {
                out.push(
                    items
                        .iter()
                        .map(|i| expand(i.as_str().expect("a command word is a string")))
                        .collect(),
                );
            } else {
                for i in items {
                    commands(i, out);
                }
            }
        }
        Value::Mapping(m) => {
            for (_, v) in m {
                commands(v, out);
            }
        }
        Value::Tagged(t) => commands(&t.value, out),
        _ => {}
    }
}

#[test]
fn the_workflows_are_yaml_and_every_command_parses() {
    let md = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/scale-out.md"))
        .expect("docs/scale-out.md");
    let blocks = yaml_blocks(&md);
    assert_eq!(
        blocks.len(),
        2,
        "a GitHub Actions workflow and a Kubernetes manifest"
    );
    let github = documents(&blocks[0]);
    assert_eq!(github.len(), 1);
    assert!(github[0]["jobs"]["sweep"]["strategy"]["matrix"]["shard"].is_sequence());
    let kube = documents(&blocks[1]);
    assert_eq!(kube.len(), 2, "the Indexed Job and the merge Job");
    assert_eq!(kube[0]["kind"], Value::from("Job"));
    assert_eq!(kube[0]["spec"]["completionMode"], Value::from("Indexed"));
    assert_eq!(kube[1]["kind"], Value::from("Job"));

    for (name, docs) in [("GitHub Actions", &github), ("Kubernetes", &kube)] {
        let mut found = Vec::new();
        for d in docs.iter() {
            commands(d, &mut found);
        }
        let names: Vec<String> = found
            .iter()
            .map(|c| c[1..].iter().take(2).cloned().collect::<Vec<_>>().join(" "))
            .collect();
        assert!(
            names.iter().any(|n| n.starts_with("audit-sweep")),
            "{name}: no sweep in {names:?}"
        );
        assert!(
            names.iter().any(|n| n == "manifest merge"),
            "{name}: no merge in {names:?}"
        );
        for c in &found {
            if let Err(e) = agy_audit::cli::check_args(&c[1..]) {
                panic!("{name}: `{}` does not parse:\n{e}", c.join(" "));
            }
        }
    }
    // The check is real: a misspelt flag or a bad shard does not pass.
    assert!(agy_audit::cli::check_args([
        "audit-sweep",
        "--out",
        "o",
        "--shard",
        "auto",
        "--shard-cout",
        "4"
    ])
    .is_err());
    assert!(agy_audit::cli::check_args(["audit-sweep", "--out", "o", "--shard", "5/4"]).is_err());
    assert!(
        agy_audit::cli::check_args(["manifest", "merge", "a.json"]).is_err(),
        "--out is required"
    );
}
