//! The generated shell completions complete what the CLI defines (issue 45
//! item 4): for every leaf subcommand (enumerated from the CLI's own clap
//! definition, so a new command is covered without editing this file),
//! `agy-audit <subcommand> --<TAB>` offers each of its visible long
//! options. bash and fish run the generated script and ask it as the shell
//! would; zsh (which completes only inside its line editor) gets a smoke
//! check: the script parses, loads under compinit and registers itself. A
//! shell that is not installed is skipped with a note.

#![cfg(unix)]
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's notes (clippy.toml)

mod common;

use clap::CommandFactory as _;
use common::{bin, output_text};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// Every leaf subcommand: the words that name it and its visible long
/// options (`--help` included, as clap adds it).
fn leaves() -> Vec<(Vec<String>, BTreeSet<String>)> {
    fn walk(
        c: &clap::Command,
        path: &mut Vec<String>,
        out: &mut Vec<(Vec<String>, BTreeSet<String>)>,
    ) {
        let subs: Vec<&clap::Command> = c
            .get_subcommands()
            .filter(|s| s.get_name() != "help" && !s.is_hide_set())
            .collect();
        if subs.is_empty() {
            let longs = c
                .get_arguments()
                .filter(|a| !a.is_hide_set())
                .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
                .collect();
            out.push((path.clone(), longs));
        }
        for s in subs {
            path.push(s.get_name().to_string());
            walk(s, path, out);
            path.pop();
        }
    }
    let mut cmd = agy_audit::cli::Cli::command();
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, &mut Vec::new(), &mut out);
    out
}

fn script(shell: &str, dir: &Path) -> std::path::PathBuf {
    let o = bin().args(["completions", shell]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let p = dir.join(format!("agy-audit.{shell}"));
    std::fs::write(&p, &o.stdout).unwrap();
    p
}

fn installed(shell: &str) -> bool {
    let found = Command::new(shell)
        .args(["-c", "exit 0"])
        .env("HOME", std::env::temp_dir())
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("SKIP: no {shell} installed to run its completions");
    }
    found
}

/// Shell words, single-quoted.
fn quoted(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The options offered for each leaf, `- ` per line in `out` after a
/// `= <leaf words>` line.
fn parse_offers(out: &str) -> Vec<(String, BTreeSet<String>)> {
    let mut v: Vec<(String, BTreeSet<String>)> = Vec::new();
    for line in out.lines() {
        if let Some(l) = line.strip_prefix("= ") {
            v.push((l.to_string(), BTreeSet::new()));
        } else if let (Some(o), Some(last)) = (line.strip_prefix("- "), v.last_mut()) {
            // fish prints `--option<TAB>description`
            let word = o.split('\t').next().unwrap_or_default();
            last.1.insert(word.to_string());
        }
    }
    v
}

fn assert_every_option_offered(shell: &str, out: &str) {
    let leaves = leaves();
    assert!(leaves.len() > 20, "{leaves:?}");
    let offers = parse_offers(out);
    assert_eq!(offers.len(), leaves.len(), "{shell}: {out}");
    for ((words, longs), (said, offered)) in leaves.iter().zip(&offers) {
        assert_eq!(*said, words.join(" "));
        assert!(longs.contains("--help"), "{words:?}: {longs:?}");
        let missing: Vec<_> = longs.difference(offered).collect();
        assert!(
            missing.is_empty(),
            "{shell}: `agy-audit {} --<TAB>` does not offer {missing:?}; it offers {offered:?}",
            words.join(" ")
        );
    }
}

#[test]
fn bash_completes_every_option_of_every_leaf_subcommand() {
    if !installed("bash") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let comp = script("bash", dir.path());
    // Ask the completion function as bash's completion would: the words of
    // `agy-audit <leaf> --`, the cursor on the last, then print COMPREPLY.
    let mut driver = format!(
        "source {}\nspec=($(complete -p agy-audit))\nfn=''\nfor ((i = 0; i < ${{#spec[@]}}; i++)); do\n  [[ ${{spec[i]}} == -F ]] && fn=${{spec[i+1]}}\ndone\n[[ -n $fn ]] || {{ echo 'no completion function' >&2; exit 3; }}\n",
        quoted(&[comp.display().to_string()])
    );
    for (words, _) in leaves() {
        let mut all = vec!["agy-audit".to_string()];
        all.extend(words.iter().cloned());
        let prev = all.last().cloned().unwrap_or_default();
        all.push("--".into());
        driver.push_str(&format!(
            "echo {}\nCOMP_WORDS=({})\nCOMP_CWORD={}\nCOMPREPLY=()\n\"$fn\" agy-audit -- {}\nfor w in \"${{COMPREPLY[@]}}\"; do echo \"- $w\"; done\n",
            quoted(&[format!("= {}", words.join(" "))]),
            quoted(&all),
            all.len() - 1,
            quoted(&[prev]),
        ));
    }
    let d = dir.path().join("driver.bash");
    std::fs::write(&d, driver).unwrap();
    let o = Command::new("bash")
        .args(["--norc", "--noprofile"])
        .arg(&d)
        .env("HOME", dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", output_text(&o));
    assert_every_option_offered("bash", &String::from_utf8_lossy(&o.stdout));
}

#[test]
fn fish_completes_every_option_of_every_leaf_subcommand() {
    if !installed("fish") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let comp = script("fish", dir.path());
    let mut driver = format!("source {}\n", quoted(&[comp.display().to_string()]));
    for (words, _) in leaves() {
        let line = format!("agy-audit {} --", words.join(" "));
        driver.push_str(&format!(
            "echo {}\nfor w in (complete -C {})\n  echo \"- $w\"\nend\n",
            quoted(&[format!("= {}", words.join(" "))]),
            quoted(&[line]),
        ));
    }
    let d = dir.path().join("driver.fish");
    std::fs::write(&d, driver).unwrap();
    let o = Command::new("fish")
        .arg("--no-config")
        .arg(&d)
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", output_text(&o));
    assert_every_option_offered("fish", &String::from_utf8_lossy(&o.stdout));
}

#[test]
fn zsh_loads_the_completions_under_compinit() {
    if !installed("zsh") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let comp = script("zsh", dir.path());
    let o = Command::new("zsh")
        .arg("-n")
        .arg(&comp)
        .env("HOME", dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "zsh -n: {}", output_text(&o));
    // Loaded under compinit it registers itself for agy-audit, and every
    // `_agy-audit…_commands` function a subcommand's state names is defined.
    let check = format!(
        "autoload -U compinit && compinit -u -D\nsource {}\n\
         [[ $_comps[agy-audit] == _agy-audit ]] || {{ print -r -- \"not registered: $_comps[agy-audit]\"; exit 3 }}\n\
         for f in $(grep -o '_agy-audit[a-zA-Z0-9_-]*_commands' {} | sort -u); do\n\
           (( $+functions[$f] )) || {{ print -r -- \"undefined: $f\"; exit 4 }}\n\
         done\nprint ok\n",
        quoted(&[comp.display().to_string()]),
        quoted(&[comp.display().to_string()]),
    );
    let o = Command::new("zsh")
        .args(["-f", "-c", &check])
        .env("HOME", dir.path())
        .output()
        .unwrap();
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).contains("ok"),
        "{}",
        output_text(&o)
    );
}
