//! `agy-audit format-audit`: a release's format-audit record.

use crate::manifest::Manifest;
use crate::report::format_audit::{record, render_markdown, Inputs};
use crate::util::atomic::{write_file, Named, WriteOptions};
use clap::Args;
use std::path::{Path, PathBuf};

/// How the JSON record is named in a refusal: it is not given by a flag of
/// its own.
const JSON_BESIDE_OUT: &str =
    "the JSON record written beside --out (its name with the extension .json)";

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

/// The files format-audit reads: the manifest, `--against`, the shape
/// listings beside the manifest, the full answers under its `corpus/` and
/// the SQLite sources under its root (each with its companions).
fn inputs(a: &FormatAuditArgs, file: &Path, m: &Manifest) -> Vec<Named> {
    let mut v = vec![Named::new("MANIFEST", file)];
    v.extend(a.against.as_ref().map(|p| Named::new("--against", p)));
    v.extend(super::common::listing_inputs("MANIFEST", file, m));
    let sweep = crate::sweep_dir::SweepDir::of_manifest(file);
    v.extend(m.sessions.iter().map(|s| {
        Named::new(
            "a saved full answer of the sweep",
            sweep.answer(&s.file_id, crate::sweep_dir::Answer::Full),
        )
    }));
    v.extend(super::common::source_inputs(m, Path::new(&m.root)));
    v
}

pub fn run(a: FormatAuditArgs) -> anyhow::Result<i32> {
    let (file, m) = crate::manifest::read::read(&a.manifest)?;
    // Both records (the Markdown and the JSON beside it, `--out X.json`
    // being one file) against each other and every file read, before the
    // store is read or anything written.
    let inputs = inputs(&a, &file, &m);
    let outputs = a.out.as_ref().map(|out| {
        [
            Named::new("--out", out),
            Named::new(JSON_BESIDE_OUT, out.with_extension("json")),
        ]
    });
    if let Some(outputs) = &outputs {
        super::common::refuse_collisions(outputs, &inputs, a.force)?;
    }
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
            let opts = WriteOptions {
                force: a.force,
                protected: inputs.into_iter().map(|n| n.path).collect(),
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
