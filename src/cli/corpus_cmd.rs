//! `agy-audit corpus generate`: the synthetic agy store generator.

use super::common::{conversations_value, fraction, real, seed};
use agy_corpus::corpus::{
    generate_home_with, generate_release, generate_with_secrets, GenerateOptions, HomePlants,
    PlanOptions, Release, HOME_CLI_ROOT, HOME_IDE_ROOT,
};
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `agy-audit corpus ...`.
#[derive(Debug, Subcommand)]
pub enum CorpusCommand {
    /// Write a deterministic synthetic agy store with its ground truth and daemon views.
    Generate(GenerateArgs),
}

/// `agy-audit corpus generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Store root to write (created; must be empty unless --force).
    #[arg(
        long,
        value_name = "DIR",
        required_unless_present = "home",
        conflicts_with = "home"
    )]
    pub out: Option<PathBuf>,
    /// Write a two-root home instead: a CLI store at
    /// HOME/.gemini/antigravity-cli (with cli.log) and an IDE store at
    /// HOME/.gemini/antigravity (with antigravity_state.pbtxt, no cli.log;
    /// the seed after --seed), each with --conversations conversations (20
    /// or more: each then holds a legacy .pb shadowed by a .db). The CLI
    /// store also holds 6 subagent family members (a parent, its child and
    /// grandchild; an orphan whose parent is in no root; a parent cycle),
    /// listed in .truth/families.json. Serve the IDE store with
    /// `daemon-sim --ide --ide-logs HOME/.config/Antigravity/logs`.
    #[arg(long, value_name = "HOME")]
    pub home: Option<PathBuf>,
    /// Number of selected conversations (1 to 100000).
    #[arg(long, default_value_t = 405, allow_negative_numbers = true, value_parser = conversations_value)]
    pub conversations: usize,
    /// Seed (a whole number, 0 or more): the same seed gives byte-identical files.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = seed())]
    pub seed: u64,
    /// Fraction of conversations carrying exactly one deliberate near-miss
    /// (0 to 0.5, so that at least half of the corpus stays clean), cycling
    /// over the refusal classes; when nonzero, one more near-miss
    /// conversation for every rule-bound shape the cycle left out, only while
    /// at least half of the corpus stays clean.
    #[arg(long, default_value_t = 0.1, allow_hyphen_values = true, value_parser = fraction(MAX_NEAR_MISS_RATE))]
    pub near_miss_rate: f64,
    /// Fraction of conversations with a planned daemon fault (0 to 1; written
    /// to .truth/faults.txt). Only conversations without a near-miss get one.
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true, value_parser = fraction(1.0))]
    pub fault_rate: f64,
    /// Multiplier on content sizes and step counts (greater than 0, at most
    /// 4; 1 = the default corpus).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true, value_parser = real(0.0, true, MAX_SCALE))]
    pub scale: f64,
    /// Replace a corpus this command generated in DIR. Only a folder carrying
    /// the generator's marker (.truth/generator.json) is replaced, only the
    /// files the marker lists are removed, and a folder holding any other file
    /// is refused untouched (a real agy store is never deleted).
    #[arg(long)]
    pub force: bool,
    /// Write the store's next release instead (release day): from the plan
    /// of the same options, 3 conversations gain a step shape the reader
    /// refuses (an unknown field on a step), 3 continue (their sources
    /// change), one disappears and one appears, and the daemon views carry
    /// one new presentation-only member (`displayDensity`) in every
    /// ordinary-response step. Sweep both and compare with audit-diff.
    #[arg(long)]
    pub next_release: bool,
    /// Plant realistic fake credentials (an AWS access key id AKIA..., a
    /// GitHub token ghp_..., a Slack bot token xoxb-..., a PEM private key
    /// block, a URL with a password, a Google API key AIza...) at the start
    /// of command outputs, file contents and user text, offending steps of
    /// refused sessions included, each recorded with where it went in
    /// .truth/secrets.jsonl (one object a line, the value under "value").
    /// Verdicts are the planned store's; the same seed gives the same
    /// values. For checking that shared reports redact them.
    #[arg(long, conflicts_with_all = ["next_release", "home"])]
    pub plant_secrets: bool,
    /// With --home: plant the store troubles users report in the CLI
    /// store: a conversation_summaries.db missing two conversations and
    /// holding one entry without a file, a conversation whose last steps
    /// are left RUNNING and WAITING an hour ago, one whose database SQLite
    /// reports malformed, one over 100 MB (a sparse file). The three
    /// conversations whose content changed leave .truth/expected.jsonl;
    /// everything planted is listed in .truth/plants.json. For `list
    /// --check` and `doctor`.
    #[arg(long, requires = "home")]
    pub plant_troubles: bool,
    /// With --home: plant the store folders other tools read:
    /// HOME/.gemini/antigravity-backup (copies of three CLI conversations),
    /// HOME/.gemini/antigravity-ide (with the IDE's state file),
    /// HOME/.config/Antigravity (the desktop app's data folder on Linux) and
    /// HOME/antigravity-app-data (for $ANTIGRAVITY_APP_DATA_DIR), each with
    /// a conversations/ folder; listed in the CLI store's
    /// .truth/plants.json.
    #[arg(long, requires = "home")]
    pub extra_roots: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The largest `--near-miss-rate`: at least half of the corpus stays clean.
pub const MAX_NEAR_MISS_RATE: f64 = 0.5;
/// The largest `--scale`.
pub const MAX_SCALE: f64 = 4.0;

/// Runs a corpus subcommand.
pub fn run(cmd: CorpusCommand) -> anyhow::Result<i32> {
    match cmd {
        CorpusCommand::Generate(a) => generate(&a),
    }
}

/// `corpus generate`: a store at `--out`, or a two-root home at `--home`.
fn generate(a: &GenerateArgs) -> anyhow::Result<i32> {
    let plan = PlanOptions {
        conversations: a.conversations,
        seed: a.seed,
        near_miss_rate: a.near_miss_rate,
        fault_rate: a.fault_rate,
        scale: a.scale,
    };
    let out = match (&a.out, &a.home) {
        (Some(out), _) => out.clone(),
        (None, Some(home)) => return generate_home(a, home, &plan),
        (None, None) => {
            return Err(super::errors::Usage::Text(
                "corpus generate needs --out DIR or --home HOME".into(),
            )
            .into())
        }
    };
    let opts = GenerateOptions {
        out: out.clone(),
        plan,
        force: a.force,
    };
    // Every error of the generator names its file (the --out folder
    // or one below it): no context repeating the path.
    let which = if a.next_release {
        Release::Next
    } else {
        Release::Current
    };
    let s = if a.plant_secrets {
        generate_with_secrets(&opts)?
    } else {
        generate_release(&opts, which)?
    };
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(0);
    }
    print_summary(&s, &out);
    Ok(0)
}

/// What `corpus generate --out` wrote, in text.
fn print_summary(s: &agy_corpus::corpus::Summary, out: &std::path::Path) {
    outln!(
        "wrote {} ({} sqlite, {} legacy .pb, {} with both, {} -wal) to {}",
        crate::util::count(s.conversations as u64, "conversation"),
        s.sqlite,
        s.protobuf,
        s.both,
        s.wal_files,
        out.display()
    );
    outln!(
        "steps {}; sources {:.1} MB (largest {:.1} MB); total {:.1} MB; {:.1}s",
        s.steps,
        s.source_bytes as f64 / 1e6,
        s.largest_source as f64 / 1e6,
        s.total_bytes as f64 / 1e6,
        s.seconds
    );
    let v: Vec<String> = s.verdicts.iter().map(|(k, n)| format!("{k}={n}")).collect();
    outln!("truth: {}", v.join(" "));
}

/// `corpus generate --home HOME`: the CLI and IDE stores, with the plants
/// asked for.
fn generate_home(
    a: &GenerateArgs,
    home: &std::path::Path,
    plan: &PlanOptions,
) -> anyhow::Result<i32> {
    let with = HomePlants {
        troubles: a.plant_troubles,
        extra_roots: a.extra_roots,
    };
    let (s, planted) = generate_home_with(home, plan, a.force, with)?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(0);
    }
    for (label, rel, s) in [
        ("cli", HOME_CLI_ROOT, &s.cli),
        ("ide", HOME_IDE_ROOT, &s.ide),
    ] {
        outln!(
            "{label}: wrote {} ({} sqlite, {} legacy .pb, {} with both) to {}",
            crate::util::count(s.conversations as u64, "conversation"),
            s.sqlite,
            s.protobuf,
            s.both,
            home.join(rel).display()
        );
    }
    if a.plant_troubles || a.extra_roots {
        outln!(
            "planted {} in {}",
            planted
                .as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>().join(" and "))
                .unwrap_or_default(),
            home.join(HOME_CLI_ROOT)
                .join(".truth/plants.json")
                .display()
        );
    }
    if let Some(f) = &s.cli.families {
        outln!(
            "cli: {} subagent family members (tree, orphan, cycle) in {}",
            f.members.len(),
            home.join(HOME_CLI_ROOT)
                .join(".truth/families.json")
                .display()
        );
    }
    Ok(0)
}
