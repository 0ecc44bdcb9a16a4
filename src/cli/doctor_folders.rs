//! `doctor`'s report of the store folders besides the roots
//! ([`crate::store_folders`]) and of each root's troubles
//! ([`crate::troubles`]): informational, never actionable (no verdict
//! changes, nothing to sync: these folders are never written).

use crate::pipeline::AuditContext;
use crate::report::escape::terminal;
use crate::roots::Selection;
use crate::troubles::{LockTable, RootTroubles};
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// One JSON object per store folder besides the roots of `sel` (only when
/// they are the default roots: a root the user names is all they asked
/// for): {"path", "kind", "what", "surface" (cli, ide or "unknown
/// surface"), "conversations", "copies" (conversations a live root holds
/// too), "copyOf" (those live roots), "troubles"}.
pub(super) fn reports(
    sel: &Selection,
    ctx: &AuditContext,
    locks: Option<&LockTable>,
) -> anyhow::Result<Vec<Value>> {
    if sel.roots.iter().any(|r| r.explicit) {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for f in crate::store_folders::find(&sel.roots) {
        let root = f.as_root();
        let d = crate::discover::discover(&root.path)?;
        let mut copies = 0u64;
        let mut of = BTreeSet::new();
        for s in &d.sources {
            if let Some(live) = crate::store_folders::copy_of(&s.id, &sel.roots) {
                copies += 1;
                of.insert(live.path.display().to_string());
            }
        }
        out.push(json!({
            "path": f.path.display().to_string(),
            "kind": f.kind.as_str(),
            "what": f.kind.describe(),
            "surface": f.surface_label(),
            "conversations": d.sources.len(),
            "copies": copies,
            "copyOf": of,
            "troubles": crate::troubles::probe(&root, ctx.schema, locks)?,
        }));
    }
    Ok(out)
}

/// A root's `troubles:` block (text), from its JSON.
pub(super) fn trouble_lines(v: &Value) {
    let Ok(t) = serde_json::from_value::<RootTroubles>(v.clone()) else {
        return;
    };
    outln!("  troubles (informational; no verdict changes):");
    for line in crate::troubles::summary_lines(&t) {
        outln!("    {}", terminal(&line));
    }
}

/// The store folders' blocks (text).
pub(super) fn print(folders: &[Value]) {
    for f in folders {
        let text = |v: &Value| terminal(v.as_str().unwrap_or("")).into_owned();
        outln!("{}", text(&f["path"]));
        outln!(
            "  found: {}; not a root: never written (audit it with `agy-audit audit-sweep --root {}`)",
            text(&f["what"]),
            text(&f["path"])
        );
        outln!("  surface: {}", text(&f["surface"]));
        let of: Vec<String> = f["copyOf"]
            .as_array()
            .map(|a| a.iter().map(&text).collect())
            .unwrap_or_default();
        outln!(
            "  conversations: {} ({} copies of a live root's conversation, same id{})",
            f["conversations"],
            f["copies"],
            if of.is_empty() {
                String::new()
            } else {
                format!(": {}", of.join(", "))
            }
        );
        trouble_lines(&f["troubles"]);
    }
}
