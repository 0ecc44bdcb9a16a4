//! `agy-audit manifest merge`: the shard manifests of one sweep as one.

use crate::manifest::{merge::merge, Manifest, MANIFEST_FILE};
use crate::util::atomic::{write_file, WriteOptions};
use crate::verdict::exit;
use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum ManifestCommand {
    /// Merge the shard manifests of one sweep (`audit-sweep --shard i/n`)
    /// into one version-5 manifest that audit-qualify, report and
    /// audit-diff accept.
    Merge(MergeArgs),
}

const MERGE_HELP: &str = "\
The merged manifest recounts totals, per-profile and per-format counts from
the shards' sessions. It is complete only when every shard 1..n is given,
each complete, all of the same n, store root and reader profiles, and
assigned by file id (shardBy sha256-fileid); otherwise it is written with
complete: false and its reasons under merged.problems.
Refused (exit 1, nothing written): a manifest that is not a shard, shards
of different n or the same shard twice (conflicting shard sets), a session
in two shards (overlap), or a session outside its shard; the error names
both files.

Exit codes:
  0    merged, complete
  1    merged with complete: false, or refused, or an I/O error
  2    usage error";

/// Merge shard manifests.
#[derive(Debug, Args)]
#[command(after_help = MERGE_HELP)]
pub struct MergeArgs {
    /// The shards' manifest.json files (or their sweep folders).
    #[arg(required = true, value_name = "SHARD")]
    pub shards: Vec<PathBuf>,
    /// The merged manifest to write (atomically; never over an input).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Replace an existing output file.
    #[arg(long)]
    pub force: bool,
}

pub fn run(c: ManifestCommand) -> anyhow::Result<i32> {
    match c {
        ManifestCommand::Merge(a) => run_merge(a),
    }
}

fn run_merge(a: MergeArgs) -> anyhow::Result<i32> {
    let mut shards = Vec::new();
    for given in &a.shards {
        let file = if given.is_dir() {
            given.join(MANIFEST_FILE)
        } else {
            given.clone()
        };
        let bytes = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
        let m = Manifest::parse(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
        shards.push((file, m));
    }
    let merged = merge(&shards)?;
    let inputs: Vec<PathBuf> = shards.iter().map(|(f, _)| f.clone()).collect();
    write_file(
        &a.out,
        &merged.to_json(),
        &WriteOptions {
            force: a.force,
            protected: inputs,
            ..Default::default()
        },
    )?;
    let c = &merged.counts;
    let info = merged.merged.as_ref();
    crate::note!(
        "manifest merge: {} of {} shards, selected={} verified={} verifiedSourceOnly={} unknown={} incomplete={} notFetched={} error={} complete={} manifest={}",
        info.map(|m| m.shards.len()).unwrap_or(0),
        info.map(|m| m.shard_count).unwrap_or(0),
        c.selected,
        c.verified,
        c.verified_source_only,
        c.unknown,
        c.incomplete,
        c.not_fetched,
        c.error,
        merged.complete,
        a.out.display()
    );
    for p in info.map(|m| m.problems.as_slice()).unwrap_or_default() {
        crate::note!("manifest merge: not complete: {p}");
    }
    Ok(if merged.complete {
        exit::OK
    } else {
        exit::ERROR
    })
}
