//! `schema extract --installed` (the installed agy's pinned set, stored in
//! the user's data folder) and `--schema installed` (that set, loaded):
//! the CLI's side of `crate::installed`.

use crate::installed::{self, InstalledError, INSTALLED};
use crate::verdict::exit;
use std::path::{Path, PathBuf};

/// `schema extract --installed [--release VERSION]`.
pub fn run_extract_installed(release: Option<&str>) -> anyhow::Result<i32> {
    let o = installed::extract_installed(release)?;
    outln!("agy: {}", o.agy.display());
    outln!("sha256: {}", o.binary_sha256);
    if !o.release.is_empty() {
        outln!("release: {}", o.release);
    }
    if !o.written {
        outln!(
            "already stored: {} (pinned by {}); nothing to do",
            o.set.display(),
            crate::schema::pin::manifest_path(&o.set).display()
        );
        return Ok(exit::OK);
    }
    if let Some(x) = &o.extraction {
        outln!("records: {}", records_line(x));
        outln!("verified: every record matches the copied binary");
    }
    outln!("stored: {}", o.set.display());
    outln!(
        "pinned by: {}",
        crate::schema::pin::manifest_path(&o.set).display()
    );
    outln!("use it with: --schema {INSTALLED}");
    Ok(exit::OK)
}

/// `--schema installed`: the stored set of the agy found now, in its place;
/// any other value unchanged.
pub fn resolve(schema: Option<&Path>) -> anyhow::Result<Option<PathBuf>> {
    match schema {
        Some(p) if p == Path::new(INSTALLED) => installed::current_set()
            .map(Some)
            .map_err(|e: InstalledError| anyhow::Error::new(e).context("--schema installed")),
        other => Ok(other.map(Path::to_path_buf)),
    }
}

/// `N extracted, M skipped (k reason, ...)`.
pub(super) fn records_line(x: &crate::schema::extract::Extraction) -> String {
    let mut by: std::collections::BTreeMap<&str, usize> = Default::default();
    for s in &x.skipped {
        *by.entry(s.reason.kind()).or_default() += 1;
    }
    let mut line = format!("{} extracted, {} skipped", x.records.len(), x.skipped.len());
    if !by.is_empty() {
        let parts: Vec<String> = by.iter().map(|(k, n)| format!("{n} {k}")).collect();
        line += &format!(" ({})", parts.join(", "));
    }
    line
}
