//! `agy-audit shapes`: shape listings' fingerprints and differences
//! ([`crate::shapes`]).

use crate::shapes::{read_any, Listing};
use clap::{Args, Subcommand};
use std::io::Write as _;
use std::path::PathBuf;

pub const SHAPES_HELP: &str = "\
A listing is one line per JSON path of the answers, `path<TAB>types`, sorted
bytewise (agy-reader's shape fingerprint, public-format-facts 5.2): `[]` for
array elements, `*` for data-dependent map keys, a few opaque paths not
descended, agyReader excluded. audit-sweep writes shapes-ordinary.tsv and
shapes-full.tsv beside its manifest, with their fingerprints under `shapes`.";

#[derive(Debug, Subcommand)]
pub enum ShapesCommand {
    /// Print a listing's fingerprint (`sha256:` + hex of its lines joined
    /// with newlines, without a final newline) and its entry count.
    Digest(DigestArgs),
    /// List the entries added (`+`) and removed (`-`) from A to B.
    Diff(DiffArgs),
}

/// Print a listing's fingerprint.
#[derive(Debug, Args)]
pub struct DigestArgs {
    /// A listing file (`shapes-*.tsv`, or a published one such as
    /// agy-1.2.10-sidecar-shape.tsv); refused unless canonical (sorted,
    /// known types, each path once). A JSON trajectory or response is
    /// listed first. `-` reads standard input (once); a FIFO, device or
    /// folder is refused, and a file past 256 MiB.
    pub listing: PathBuf,
}

/// List entries added and removed between two listings.
#[derive(Debug, Args)]
#[command(
    after_help = "Each input is a listing file, a JSON trajectory or response (listed \
first), or a format-audit record (its ordinary listing). A path whose types changed is one \
entry removed and one added. Exit 0 whether or not they differ; 1 on an unreadable input."
)]
pub struct DiffArgs {
    /// The earlier listing.
    pub a: PathBuf,
    /// The later listing.
    pub b: PathBuf,
    /// Print `{"added": [...], "removed": [...]}` instead of lines.
    #[arg(long)]
    pub json: bool,
}

pub fn run(c: ShapesCommand) -> anyhow::Result<i32> {
    match c {
        ShapesCommand::Digest(a) => {
            // Read once (a pipe given as /dev/stdin or `-` has one reading).
            let bytes = crate::shapes::read_listing_file(&a.listing)?;
            let (listing, fp) = if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
                let l = crate::shapes::any_of_bytes(&a.listing, bytes)?;
                let fp = l.fingerprint();
                (l, fp)
            } else {
                Listing::parse_bytes(&a.listing, &bytes)?
            };
            let mut out = crate::util::term::stdout();
            let _ = writeln!(
                out,
                "{fp}\t{} entries\t{}",
                listing.len(),
                a.listing.display()
            );
            Ok(0)
        }
        ShapesCommand::Diff(a) => {
            let (old, new) = (read_any(&a.a)?, read_any(&a.b)?);
            let d = old.diff(&new);
            let mut out = crate::util::term::stdout();
            if a.json {
                let v = serde_json::json!({"added": d.added, "removed": d.removed});
                let _ = writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(&v).unwrap_or_default()
                );
            } else {
                for l in &d.added {
                    let _ = writeln!(out, "+ {l}");
                }
                for l in &d.removed {
                    let _ = writeln!(out, "- {l}");
                }
            }
            crate::note!(
                "shapes diff: {} entries -> {} entries: added={} removed={}",
                old.len(),
                new.len(),
                d.added.len(),
                d.removed.len()
            );
            Ok(0)
        }
    }
}
