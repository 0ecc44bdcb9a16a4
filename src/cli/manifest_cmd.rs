//! `agy-audit manifest merge`: the shard manifests of one sweep as one.

use crate::manifest::merge::merge_moving;
use crate::shapes::{self, Listing};
use crate::util::atomic::{check_outputs, write_file, WriteOptions};
use crate::verdict::exit;
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
The shards' shape listings (shapes-ordinary.tsv, shapes-full.tsv beside each
shard's manifest, fingerprints checked) are merged (the union of their
entries) and written beside --out (under the same names when --out is
named manifest.json, else prefixed with its stem: merged.shapes-ordinary.tsv
for merged.json), recorded under `shapes`; when a shard has none, the merged manifest records none.
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
    /// Write the sessions' reasons as the shards hold them, for a local
    /// look, recording `"redaction": {"redacted": false}`. By default the
    /// merged manifest redacts every reason it writes, whichever shard it
    /// came from (a shard swept with --no-redact too).
    #[arg(long)]
    pub no_redact: bool,
}

pub fn run(c: ManifestCommand) -> anyhow::Result<i32> {
    match c {
        ManifestCommand::Merge(a) => run_merge(a),
    }
}

fn run_merge(a: MergeArgs) -> anyhow::Result<i32> {
    let mut shards = Vec::new();
    for given in &a.shards {
        shards.push(crate::manifest::read::read(given)?);
    }
    let mut merged = merge_moving(&mut shards)?;
    merged.set_redaction_mode(crate::redact::Mode::from_no_redact(a.no_redact));
    let mut inputs: Vec<PathBuf> = shards.iter().map(|(f, _)| f.clone()).collect();
    // The shards' shape listings, unioned when every shard has them.
    let mut listings = Some((Listing::new(), 0, Listing::new(), 0));
    for (file, m) in &shards {
        let dir = file.parent().filter(|p| !p.as_os_str().is_empty());
        let dir = dir.unwrap_or(std::path::Path::new("."));
        if let Some(sh) = &m.shapes {
            inputs.push(dir.join(&sh.ordinary.file));
            inputs.push(dir.join(&sh.full.file));
        }
        match (
            shapes::of_manifest(file, m.shapes.as_ref())?,
            &mut listings,
            &m.shapes,
        ) {
            (Some((o, f)), Some((uo, no, uf, nf)), Some(sh)) => {
                uo.union(&o);
                uf.union(&f);
                *no += sh.ordinary.documents;
                *nf += sh.full.documents;
            }
            _ => listings = None,
        }
    }
    let opts = WriteOptions {
        force: a.force,
        protected: inputs.clone(),
        ..Default::default()
    };
    let dir = a
        .out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."))
        .to_path_buf();
    // Beside a `manifest.json`, the sweep's names; beside another name,
    // prefixed with its stem, so that several merges may share a folder.
    let prefix = match (a.out.file_name(), a.out.file_stem()) {
        (Some(n), _) if n == crate::manifest::MANIFEST_FILE => String::new(),
        (_, Some(stem)) => format!("{}.", stem.to_string_lossy()),
        _ => String::new(),
    };
    let (name_o, name_f) = (
        format!("{prefix}{}", shapes::ORDINARY_FILE),
        format!("{prefix}{}", shapes::FULL_FILE),
    );
    if let Some((uo, no, uf, nf)) = &listings {
        let (po, pf) = (dir.join(&name_o), dir.join(&name_f));
        check_outputs(&[a.out.as_path(), po.as_path(), pf.as_path()], &inputs)?;
        let record = |name: &str, l: &Listing, documents: usize| shapes::ListingRecord {
            file: name.to_string(),
            fingerprint: l.fingerprint(),
            entries: l.len(),
            documents,
        };
        write_file(&po, uo.text().as_bytes(), &opts)?;
        write_file(&pf, uf.text().as_bytes(), &opts)?;
        merged.shapes = Some(shapes::Shapes {
            ordinary: record(&name_o, uo, *no),
            full: record(&name_f, uf, *nf),
        });
    } else {
        crate::note!("manifest merge: a shard records no shape listings (an older sweep): the merged manifest records none");
    }
    write_file(&a.out, &merged.to_json(), &opts)?;
    let c = &merged.counts;
    let info = merged.merged.as_ref();
    crate::note!(
        "manifest merge: {} of {} shards, {} complete={} manifest={}",
        info.map(|m| m.shards.len()).unwrap_or(0),
        info.map(|m| m.shard_count).unwrap_or(0),
        c.summary(),
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
