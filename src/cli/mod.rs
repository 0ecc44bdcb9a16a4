//! Command-line interface. Each subcommand lives in its own file; this module
//! only parses arguments, dispatches, and maps outcomes to exit codes.
//! `anyhow` context is added here, at the edge, and nowhere in the library.

use crate::verdict::exit;
use clap::{Parser, Subcommand};

/// `println!` through [`crate::util::term`]: a closed standard output drops
/// the line and never ends the command nor changes its exit code (the
/// terminal never decides a run).
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::util::term::out_line(format_args!($($arg)*))
    };
}

mod audit_diff_cmd;
mod bench_cmd;
mod common;
mod completions_cmd;
mod corpus_cmd;
mod daemon_args;
mod daemon_sim_cmd;
mod demo_cmd;
mod doctor_cmd;
mod doctor_folders;
mod errors;
mod export_check_cmd;
mod export_cmd;
mod format_audit_cmd;
mod list_cmd;
mod manifest_cmd;
pub mod progress;
mod qualify_cmd;
mod report_cmd;
mod rules_cmd;
mod schema_cmd;
mod schema_installed;
mod shapes_cmd;
mod signals;
mod sweep_cmd;
mod sync_cmd;
mod verify_capture_cmd;
mod watch_cmd;

pub use errors::chain_text;
use errors::usage;

const EXIT_CODES: &str = "\
Exit codes:
  0    success (every selected source qualified)
  1    error: I/O, a corrupt file, an unusable daemon (sessions not fetched;
       the manifest is complete: false), a manifest that is not complete
  2    usage error
  3    a source was refused as unknown (unsupported representation)
  4    a source or attestation is incomplete (mismatch, changed source or payload)
  5    audit-diff: a session verified in OLD is not verified (or gone) in NEW
  130  interrupted by Ctrl-C (audit-sweep, demo; --resume continues)";

/// Audits Google Antigravity (agy) conversation stores: which conversations can
/// this reader represent completely?
#[derive(Debug, Parser)]
#[command(name = "agy-audit", version, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The descriptor set agy-audit decodes with: dump, info, and its maintenance
    /// (extract from an agy binary, verify, diff, bundle).
    #[command(subcommand)]
    Schema(schema_cmd::SchemaCommand),
    /// Export one conversation from its stored source alone (JSON or Markdown).
    ExportOffline(export_cmd::ExportArgs),
    /// List the conversations of every store root (the CLI's and the IDE's
    /// by default), newest first, with the state their sidecars record.
    List(list_cmd::ListArgs),
    /// Check every store root: surface, daemon, CSRF token (IDE), agy
    /// version, and whether each sidecar still matches its native source
    /// (exit 1 when something is actionable).
    Doctor(doctor_cmd::DoctorArgs),
    /// Compare each verified session's offline export (JSON and Markdown)
    /// with the daemon answer a sweep saved, listing every difference.
    ExportCheck(export_check_cmd::ExportCheckArgs),
    /// Requalify a whole store against the daemon into a version-5 manifest.
    AuditSweep(sweep_cmd::SweepArgs),
    /// Recheck a captured version-5 manifest offline (the CI regression).
    AuditQualify(qualify_cmd::QualifyArgs),
    /// Compare two manifests (an old and a new sweep): what changed per
    /// session, which rules and refusal classes gained or lost sessions, and
    /// whether any session regressed (exit 5).
    AuditDiff(audit_diff_cmd::AuditDiffArgs),
    /// Manifest maintenance: merge the shard manifests of one sweep.
    #[command(subcommand)]
    Manifest(manifest_cmd::ManifestCommand),
    /// Response shape listings: fingerprint one (digest), or list the
    /// entries added and removed between two (diff).
    #[command(subcommand, after_help = shapes_cmd::SHAPES_HELP)]
    Shapes(shapes_cmd::ShapesCommand),
    /// Write a release's format-audit record (Markdown and JSON) of a sweep:
    /// counts, SQLite facts, steps, shape fingerprints, versions.
    FormatAudit(format_audit_cmd::FormatAuditArgs),
    /// Write the qualification report of a manifest: Markdown + SVG, or one
    /// self-contained HTML file (--format html).
    Report(report_cmd::ReportArgs),
    /// Verify one conversation and write its sidecar, or recheck it offline.
    Sync(sync_cmd::SyncArgs),
    /// Keep every root's sidecars verified: poll, re-verify each stale
    /// sidecar, write it atomically beside its source.
    Watch(watch_cmd::WatchArgs),
    /// Verify one conversation from captured files (source, full and
    /// ordinary answers) without a daemon, and print the verdict.
    VerifyCapture(verify_capture_cmd::VerifyCaptureArgs),
    /// Measure decode throughput against SHA-256 and a peer decoder.
    Bench(bench_cmd::BenchArgs),
    /// The main job on the embedded default: generate the synthetic corpus,
    /// serve it with the simulated daemon, sweep it, report, and check the
    /// verdicts against the ground truth.
    Demo(demo_cmd::DemoArgs),
    /// Print the qualified rule table: rule id, profile suffix, what each rule
    /// accepts and its refusal reasons (--markdown writes docs/rules.md).
    Rules(rules_cmd::RulesArgs),
    /// Generate a deterministic synthetic agy store with its ground truth.
    #[command(subcommand)]
    Corpus(corpus_cmd::CorpusCommand),
    /// Serve a generated store like agy's language server (Connect-RPC JSON on 127.0.0.1), with faults.
    DaemonSim(daemon_sim_cmd::DaemonSimArgs),
    /// Print shell completions (bash, zsh, fish) generated from this CLI's definition.
    Completions(completions_cmd::CompletionsArgs),
}

impl Command {
    /// The subcommand's name as typed, so every error names the command.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Schema(_) => "schema",
            Command::ExportOffline(_) => "export-offline",
            Command::List(_) => "list",
            Command::Doctor(_) => "doctor",
            Command::ExportCheck(_) => "export-check",
            Command::AuditSweep(_) => "audit-sweep",
            Command::AuditQualify(_) => "audit-qualify",
            Command::AuditDiff(_) => "audit-diff",
            Command::Manifest(_) => "manifest",
            Command::Shapes(_) => "shapes",
            Command::FormatAudit(_) => "format-audit",
            Command::Report(_) => "report",
            Command::Sync(_) => "sync",
            Command::Watch(_) => "watch",
            Command::VerifyCapture(_) => "verify-capture",
            Command::Bench(_) => "bench",
            Command::Demo(_) => "demo",
            Command::Rules(_) => "rules",
            Command::Corpus(_) => "corpus",
            Command::DaemonSim(_) => "daemon-sim",
            Command::Completions(_) => "completions",
        }
    }
}

/// Whether `args` (the words after `agy-audit`) parse as a command line,
/// exactly as the binary's parser reads them, without running anything:
/// `Err` holds clap's message. `docs/scale-out.md`'s test checks the
/// commands of its workflows with it.
pub fn check_args<I, T>(args: I) -> Result<(), String>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let words = std::iter::once(std::ffi::OsString::from("agy-audit"))
        .chain(args.into_iter().map(Into::into));
    Cli::try_parse_from(words)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// clap's usage error as it reaches the terminal: a value the user gave
/// that holds control characters (a newline, ESC) is shown visibly where
/// clap quotes it, and no other control character but clap's own line ends
/// is sent raw (issue 45 item 2).
fn usage_text(rendered: &str) -> String {
    // clap drops ANSI escape sequences from what it quotes when the stream
    // is no terminal: a value is looked for as given and as clap shows it
    let ansi = regex::Regex::new(r"\x1b(\[[0-?]*[ -/]*[@-~]|.)").ok();
    let mut text = rendered.to_string();
    for arg in std::env::args_os().skip(1) {
        let arg = arg.to_string_lossy();
        if !arg.chars().any(char::is_control) {
            continue;
        }
        let shown = crate::util::term::visible(&arg).into_owned();
        text = text.replace(&*arg, &shown);
        if let Some(stripped) = ansi.as_ref().map(|re| re.replace_all(&arg, "")) {
            if !stripped.is_empty() && stripped != arg {
                text = text.replace(&*stripped, &shown);
            }
        }
    }
    text.split('\n')
        .map(|l| crate::util::term::visible(l).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Parses the process arguments, runs the command and returns the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            if !e.use_stderr() {
                // --help, --version: on standard output, through util::term
                crate::util::term::out(e.render().to_string().as_bytes());
                return exit::OK;
            }
            crate::util::term::err(usage_text(&e.render().to_string()).as_bytes());
            return exit::USAGE;
        }
    };
    let name = cli.command.name();
    let result = match cli.command {
        Command::Schema(c) => schema_cmd::run(c),
        Command::ExportOffline(a) => export_cmd::run(a),
        Command::List(a) => list_cmd::run(a),
        Command::Doctor(a) => doctor_cmd::run(a),
        Command::ExportCheck(a) => export_check_cmd::run(a),
        Command::AuditSweep(a) => sweep_cmd::run(a),
        Command::AuditQualify(a) => qualify_cmd::run(a),
        Command::AuditDiff(a) => audit_diff_cmd::run(a),
        Command::Manifest(c) => manifest_cmd::run(c),
        Command::Shapes(c) => shapes_cmd::run(c),
        Command::FormatAudit(a) => format_audit_cmd::run(a),
        Command::Report(a) => report_cmd::run(a),
        Command::Sync(a) => sync_cmd::run(a),
        Command::Watch(a) => watch_cmd::run(a),
        Command::VerifyCapture(a) => verify_capture_cmd::run(a),
        Command::Bench(a) => bench_cmd::run(a),
        Command::Demo(a) => demo_cmd::run(a),
        Command::Rules(a) => rules_cmd::run(a),
        Command::Corpus(c) => corpus_cmd::run(c),
        Command::DaemonSim(a) => daemon_sim_cmd::run(a),
        Command::Completions(a) => {
            completions_cmd::run(a, <Cli as clap::CommandFactory>::command())
        }
    };
    match result {
        // The code is the result's, whatever happened to the terminal:
        // nothing written to stdout or stderr can fail a command
        // (`util::term`), so a broken pipe here came from elsewhere (a
        // socket, a child) and is an error like any other.
        Ok(code) => code,
        Err(e) if usage(&e) => {
            crate::note!("agy-audit {name}: usage error: {}", chain_text(&e));
            exit::USAGE
        }
        Err(e) => {
            crate::note!("agy-audit {name}: error: {}", chain_text(&e));
            exit::ERROR
        }
    }
}
