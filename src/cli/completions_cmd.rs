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

/// Prints `a.shell`'s completions of `cmd` (the whole CLI's definition,
/// which the caller hands in: this command knows no other).
pub fn run(a: CompletionsArgs, mut cmd: clap::Command) -> anyhow::Result<i32> {
    use clap_complete::{generate, shells};
    let mut buf = Vec::new();
    match a.shell {
        Shell::Bash => generate(shells::Bash, &mut cmd, "agy-audit", &mut buf),
        Shell::Zsh => generate(shells::Zsh, &mut cmd, "agy-audit", &mut buf),
        Shell::Fish => generate(shells::Fish, &mut cmd, "agy-audit", &mut buf),
    }
    crate::util::term::out(&buf);
    Ok(crate::verdict::exit::OK)
}
