//! The subagent tree of an offline Markdown export: under each
//! INVOKE_SUBAGENT step, the transcript of every child its results list
//! that a known root holds, exported from the child's own source exactly as
//! `export-offline` exports it, and so on down; then, in a closing section,
//! the children the links name ([`ParentIndex`]) that no step lists.
//!
//! A child is nested once: one already shown (an ancestor, by a cycle, or
//! a sibling listed twice) gets a line saying so and is not followed;
//! nesting stops at [`MAX_DEPTH`]. A child that no known root holds, that
//! does not decode, that is refused as unknown (unless the export allows
//! unknown sources), or whose own metadata names another parent gets a
//! line saying why instead of a transcript.

use super::index::{ParentIndex, MAX_DEPTH};
use crate::export::{offline_export, render_transcript_steps};
use crate::source::ReadOptions;
use agy_engine::tree::links::{self, Diagnostic};
use serde_json::Value;
use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The source of conversation `id` in the first root holding one (SQLite
/// wins within a root).
pub fn find_source(roots: &[PathBuf], id: &str) -> Option<(PathBuf, PathBuf)> {
    roots.iter().find_map(|r| {
        ["db", "pb"].iter().find_map(|ext| {
            let p = r.join("conversations").join(format!("{id}.{ext}"));
            std::fs::symlink_metadata(&p)
                .is_ok()
                .then(|| (r.clone(), p))
        })
    })
}

/// What a nested export showed and found.
#[derive(Debug, Clone, Default)]
pub struct Nested {
    /// The conversations nested, in the order shown.
    pub shown: Vec<String>,
    /// Diagnostics found while nesting (a cycle met, a child naming another
    /// parent), beside the index's own.
    pub diagnostics: Vec<Diagnostic>,
}

/// Renders nested transcripts (see the module documentation).
pub struct Nester<'a> {
    roots: &'a [PathBuf],
    opts: &'a ReadOptions<'a>,
    allow_unknown: bool,
    index: &'a mut ParentIndex,
    /// The conversations shown so far (the top one included).
    seen: BTreeSet<String>,
    /// What was nested.
    pub nested: Nested,
}

impl<'a> Nester<'a> {
    /// A nester over `roots` for the export of conversation `top`.
    pub fn new(
        top: &str,
        roots: &'a [PathBuf],
        opts: &'a ReadOptions<'a>,
        allow_unknown: bool,
        index: &'a mut ParentIndex,
    ) -> Nester<'a> {
        let top = links::canonical_id(top).unwrap_or_else(|| top.to_string());
        Nester {
            roots,
            opts,
            allow_unknown,
            index,
            seen: BTreeSet::from([top]),
            nested: Nested::default(),
        }
    }

    /// What goes under step `step` (index `i`, heading `level`) of
    /// conversation `parent` at nesting `depth` (the top is 0).
    pub fn under_step(
        &mut self,
        parent: &str,
        ancestors: &[String],
        step: &Value,
        level: usize,
        depth: usize,
        i: usize,
    ) -> Option<String> {
        let inv = links::invocation(step, i)?;
        let mut out = String::new();
        // A step without a payload already says so (the flat transcript).
        if inv.children.is_empty() && step.get("invokeSubagent").is_some() {
            let _ = writeln!(
                out,
                "_This step names no subagent conversation; none is nested here._\n"
            );
        }
        for bad in &inv.invalid {
            let _ = writeln!(
                out,
                "_A result names `{}`, which is not a conversation id; nothing is nested for it._\n",
                bad.replace('`', "'")
            );
        }
        for child in &inv.children {
            out.push_str(&self.child(parent, ancestors, child, level + 1, depth + 1));
        }
        Some(out)
    }

    /// The children the links name under `parent` that no step listed, in a
    /// closing section at `level` (empty when there are none).
    pub fn unlisted(
        &mut self,
        parent: &str,
        ancestors: &[String],
        trajectory: &Value,
        level: usize,
        depth: usize,
    ) -> String {
        let listed: BTreeSet<String> = links::invocations(trajectory)
            .into_iter()
            .flat_map(|i| i.children)
            .collect();
        let extra: Vec<String> = self
            .index
            .children(parent)
            .into_iter()
            .filter(|c| !listed.contains(*c))
            .map(str::to_string)
            .collect();
        if extra.is_empty() {
            return String::new();
        }
        let mut out = format!(
            "{} Subagent conversations no INVOKE_SUBAGENT step lists\n\n",
            "#".repeat(level.clamp(1, 6))
        );
        for c in extra {
            out.push_str(&self.child(parent, ancestors, &c, level + 1, depth + 1));
        }
        out
    }

    fn child(
        &mut self,
        parent: &str,
        ancestors: &[String],
        id: &str,
        level: usize,
        depth: usize,
    ) -> String {
        let level = level.clamp(1, 6);
        let head = format!("{} Subagent conversation `{id}`", "#".repeat(level));
        if ancestors.iter().any(|a| a == id) || id == parent {
            let mut cycle: Vec<String> = ancestors
                .iter()
                .skip_while(|a| a.as_str() != id)
                .cloned()
                .collect();
            cycle.push(parent.to_string());
            cycle.dedup();
            self.nested.diagnostics.push(Diagnostic::ParentCycle {
                id: id.to_string(),
                cycle: links::cycle_from(cycle),
            });
            return format!("{head}\n\n_Already shown above, as an ancestor of this step: a parent cycle (parent-cycle); not followed again._\n\n");
        }
        if self.seen.contains(id) {
            return format!("{head}\n\n_Already shown above; not repeated._\n\n");
        }
        if depth > MAX_DEPTH {
            return format!(
                "{head}\n\n_Nested more than {MAX_DEPTH} levels deep; not followed._\n\n"
            );
        }
        let Some((root, path)) = find_source(self.roots, id) else {
            return format!(
                "{head}\n\n_In no known root: its transcript is not part of this export._\n\n"
            );
        };
        let ex = match offline_export(&path, self.opts) {
            Ok(ex) => ex,
            Err(e) => {
                return format!(
                    "{head}\n\n_{}: could not be read ({}); not shown._\n\n",
                    path.display(),
                    e.to_string().replace('\n', " ")
                )
            }
        };
        let src = &ex.source;
        if let Some(r) = src.reason() {
            if !self.allow_unknown {
                return format!(
                    "{head}\n\n_{}: refused as unknown ({r}); not shown (export with --allow-unknown to show it marked incomplete)._\n\n",
                    path.display()
                );
            }
        }
        let Some(json) = ex.json else {
            return format!(
                "{head}\n\n_{}: the source does not decode; not shown._\n\n",
                path.display()
            );
        };
        self.index.observe(id, &root, &json);
        if let Some(other) = links::native_parent(&json).id() {
            if other != parent {
                self.nested
                    .diagnostics
                    .push(Diagnostic::ConflictingEvidence {
                        id: id.to_string(),
                        parents: {
                            let mut v = vec![parent.to_string(), other.to_string()];
                            v.sort();
                            v
                        },
                    });
                return format!(
                    "{head}\n\n_Its own metadata names another parent, `{other}` (conflicting-evidence); not nested here._\n\n"
                );
            }
        }
        self.seen.insert(id.to_string());
        self.nested.shown.push(id.to_string());
        let n = json
            .get("steps")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let mut out = format!(
            "{head} (depth {depth}, {n} step{})\n\n",
            if n == 1 { "" } else { "s" }
        );
        let _ = writeln!(
            out,
            "> Subagent of `{parent}`, from {}: offline, unverified. Profile `{}`, source digest `{}`.{}\n",
            path.display(),
            src.profile,
            src.source_digest,
            if src.qualified() {
                ""
            } else {
                " **Incomplete:** refused as unknown; unknown fields are not shown."
            }
        );
        let mut chain = ancestors.to_vec();
        chain.push(parent.to_string());
        let me = id.to_string();
        let body = render_transcript_steps(&json, level + 1, &mut |step, i, l| {
            self.under_step(&me, &chain, step, l, depth, i)
        });
        out.push_str(&body);
        out.push_str(&self.unlisted(&me, &chain, &json, level + 1, depth));
        out
    }
}

/// The Markdown of `trajectory` (conversation `top`, exported from `path`
/// in `root`) with its subagent tree nested, and what nesting found.
pub fn nested_markdown(
    trajectory: &Value,
    notice: &str,
    top: &str,
    roots: &[PathBuf],
    opts: &ReadOptions<'_>,
    allow_unknown: bool,
    index: &mut ParentIndex,
) -> (String, Nested) {
    let mut n = Nester::new(top, roots, opts, allow_unknown, index);
    let top_id = links::canonical_id(top).unwrap_or_else(|| top.to_string());
    let mut md = crate::export::render_markdown_nested(trajectory, notice, &mut |step, i, l| {
        n.under_step(&top_id, &[], step, l, 0, i)
    });
    md.push_str(&n.unlisted(&top_id, &[], trajectory, 2, 0));
    (md, n.nested)
}

/// The root a source path lies in (`<root>/conversations/<file>`), when it does.
pub fn root_of(source: &Path) -> Option<PathBuf> {
    let dir = source.parent()?;
    (dir.file_name()? == "conversations").then(|| dir.parent().map(Path::to_path_buf))?
}
