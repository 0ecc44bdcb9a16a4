//! `agy-audit completions SHELL`: shell completions generated from the CLI
//! definition itself (clap_complete), so they never drift from the flags.

use clap::{Args, ValueEnum};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// Print shell completions for agy-audit to standard output.
#[derive(Debug, Args)]
#[command(
    after_help = "Install, e.g.:\n  agy-audit completions bash > ~/.local/share/bash-completion/completions/agy-audit\n  agy-audit completions zsh > \"${fpath[1]}/_agy-audit\"\n  agy-audit completions fish > ~/.config/fish/completions/agy-audit.fish"
)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// The command name the completions are for.
const BIN: &str = "agy-audit";

/// Prints `a.shell`'s completions of `cmd` (the whole CLI's definition,
/// which the caller hands in: this command knows no other).
pub fn run(a: CompletionsArgs, mut cmd: clap::Command) -> anyhow::Result<i32> {
    let buf = script(a.shell, &mut cmd);
    crate::util::term::out(&buf);
    Ok(crate::verdict::exit::OK)
}

/// `shell`'s completion script of `cmd`, completing the command [`BIN`].
fn script(shell: Shell, cmd: &mut clap::Command) -> Vec<u8> {
    use clap_complete::{generate, shells};
    let mut buf = Vec::new();
    match shell {
        Shell::Bash => {
            generate(shells::Bash, cmd, BIN, &mut buf);
            buf = mend_bash_labels(&String::from_utf8_lossy(&buf), BIN).into_bytes();
        }
        Shell::Zsh => generate(shells::Zsh, cmd, BIN, &mut buf),
        Shell::Fish => generate(shells::Fish, cmd, BIN, &mut buf),
    }
    buf
}

/// clap_complete's bash generator (4.6) spells a subcommand's state two
/// ways when the command's name holds a `-`: the word loop assigns
/// `cmd="agy__audit__subcmd__audit__subcmd__sweep"` (the name's `-` turned
/// into `__`), while the `case "${cmd}"` label that lists the subcommand's
/// options reads `agy__subcmd__audit__subcmd__audit__subcmd__sweep)` (the
/// name's `-` turned into `__subcmd__`). No label matched, so only
/// subcommand names completed, never an option. This rewrites the label's
/// prefix (the command's name) to the spelling the loop assigns; a label
/// already spelled alike (a name without `-`, or a generator that agrees
/// with itself) is left as it is.
fn mend_bash_labels(script: &str, bin: &str) -> String {
    let wrong = format!("{}__subcmd__", bin.replace('-', "__subcmd__"));
    let right = format!("{}__subcmd__", bin.replace('-', "__"));
    if wrong == right {
        return script.to_string();
    }
    let mut out = String::with_capacity(script.len());
    for line in script.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let label = body.trim_start();
        let indent = &body[..body.len() - label.len()];
        match label.strip_prefix(&wrong) {
            Some(rest) if rest.ends_with(')') && !rest.contains(char::is_whitespace) => {
                out.push_str(indent);
                out.push_str(&right);
                out.push_str(rest);
                out.push_str(&line[body.len()..]);
            }
            _ => out.push_str(line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The states the bash script's word loop assigns (`cmd="X"`) and the
    /// `case` labels it lists options under (`X)` at the label's indent).
    fn states_and_labels(script: &str) -> (BTreeSet<String>, BTreeSet<String>) {
        let mut assigned = BTreeSet::new();
        let mut labels = BTreeSet::new();
        for line in script.lines() {
            let t = line.trim();
            if let Some(v) = t.strip_prefix("cmd=\"").and_then(|v| v.strip_suffix('"')) {
                if !v.is_empty() {
                    assigned.insert(v.to_string());
                }
            }
            if line.starts_with("        ") && !line.starts_with("         ") {
                if let Some(l) = t.strip_suffix(')') {
                    if l.starts_with("agy__") {
                        labels.insert(l.to_string());
                    }
                }
            }
        }
        (assigned, labels)
    }

    #[test]
    fn every_bash_state_the_loop_assigns_has_its_options_label() {
        let mut cmd = <crate::cli::Cli as clap::CommandFactory>::command();
        let text = String::from_utf8(script(Shell::Bash, &mut cmd)).unwrap();
        let (assigned, labels) = states_and_labels(&text);
        assert!(assigned.contains("agy__audit__subcmd__audit__subcmd__sweep"));
        assert!(assigned.len() > 20, "{assigned:?}");
        let unmatched: Vec<_> = assigned.difference(&labels).collect();
        assert!(
            unmatched.is_empty(),
            "states without a label: {unmatched:?}"
        );
        let orphans: Vec<_> = labels.difference(&assigned).collect();
        assert!(orphans.is_empty(), "labels no state reaches: {orphans:?}");
    }

    #[test]
    fn mending_rewrites_only_a_label_spelled_the_other_way() {
        let s = "    case x in\n        agy__subcmd__audit__subcmd__list)\n            opts=\"agy__subcmd__audit__subcmd__x)\"\n        agy__audit__subcmd__list)\n";
        assert_eq!(
            mend_bash_labels(s, "agy-audit"),
            "    case x in\n        agy__audit__subcmd__list)\n            opts=\"agy__subcmd__audit__subcmd__x)\"\n        agy__audit__subcmd__list)\n"
        );
        assert_eq!(mend_bash_labels(s, "agy"), s);
        assert_eq!(
            mend_bash_labels("no newline at the end", "agy-audit"),
            "no newline at the end"
        );
    }
}
