//! `agy-audit format-audit`: a release's format-audit record.

use crate::report::format_audit::{record, render_markdown, Inputs};
use crate::util::atomic::{check_outputs, write_file, WriteOptions};
use clap::Args;
use std::path::PathBuf;

const HELP: &str = "\
The record (Markdown, and JSON beside it with the extension .json) holds:
selected and fetched counts; SQLite and legacy counts; PRAGMA quick_check
results, user_version, tables and the fingerprint of the DDL of every SQLite
source (read from the manifest's store root, which must be readable); populated
and empty trajectories, steps, distinct step types and done / canceled / error
steps (from the full answers saved under the sweep's corpus/); verified and
verified-with-source-only counts; both shape fingerprints with their entry
counts; with --against, the ordinary listing's entries added and removed
against a listing (.tsv), a trajectory JSON or an earlier record's .json; the
reader's version and the installed agy version the sweep recorded (not proof of
which daemon answered). A manifest that is not complete gives a record whose
first line says so.

Exit codes: 0 written; 1 an input unreadable or inconsistent; 2 usage error.";

/// Write a format-audit record of a sweep.
#[derive(Debug, Args)]
#[command(after_help = HELP)]
pub struct FormatAuditArgs {
    /// The sweep's manifest.json (or its folder); its shape listings are
    /// read beside it and its answers under corpus/.
    pub manifest: PathBuf,
    /// The Markdown record to write (the JSON record goes beside it, .json);
    /// default: the Markdown on standard output, no JSON.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// A previous release's listing or format-audit record (.json) to list
    /// the ordinary listing's added and removed entries against.
    #[arg(long, value_name = "LISTING_OR_RECORD")]
    pub against: Option<PathBuf>,
    /// Replace existing output files.
    #[arg(long)]
    pub force: bool,
}

pub fn run(a: FormatAuditArgs) -> anyhow::Result<i32> {
    let (file, m) = crate::manifest::read::read(&a.manifest)?;
    let against = match &a.against {
        Some(p) => Some((p.as_path(), crate::shapes::read_any(p)?)),
        None => None,
    };
    let schema = crate::schema::Schema::modeled()?;
    let r = record(&Inputs {
        manifest_file: &file,
        manifest: &m,
        against: against.as_ref().map(|(p, l)| (*p, l)),
        schema: &schema,
    })?;
    let md = render_markdown(&r);
    match &a.out {
        None => {
            crate::util::term::out(md.as_bytes());
        }
        Some(out) => {
            let json_out = out.with_extension("json");
            let mut inputs = vec![file.clone()];
            inputs.extend(a.against.clone());
            check_outputs(&[out.as_path(), json_out.as_path()], &inputs)?;
            let opts = WriteOptions {
                force: a.force,
                protected: inputs,
                ..Default::default()
            };
            let mut j = serde_json::to_vec_pretty(&r)?;
            j.push(b'\n');
            write_file(&json_out, &j, &opts)?;
            write_file(out, md.as_bytes(), &opts)?;
            crate::note!(
                "format-audit: wrote {} and {}",
                out.display(),
                json_out.display()
            );
        }
    }
    Ok(0)
}
