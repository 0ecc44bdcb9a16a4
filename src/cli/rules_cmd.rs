//! `agy-audit rules`: the qualified rule table, generated from the code.
//!
//! `docs/rules.md` is this command's Markdown output; regenerate it with
//! `agy-audit rules --markdown > docs/rules.md` (a test keeps them equal).

use crate::project::table;
use crate::verdict::exit;
use clap::Args;

/// Print every qualified rule with its profile suffix, what it accepts and
/// its refusal reasons.
#[derive(Debug, Args)]
pub struct RulesArgs {
    /// Print the Markdown table (the content of docs/rules.md).
    #[arg(long)]
    pub markdown: bool,
}

pub fn run(a: RulesArgs) -> anyhow::Result<i32> {
    let out = if a.markdown {
        table::markdown()
    } else {
        table::text()
    };
    crate::util::term::out(out.as_bytes());
    Ok(exit::OK)
}
