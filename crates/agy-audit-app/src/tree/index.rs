//! The parent links among the conversations of the known roots: every
//! `conversations/<uuid>.db|.pb` source is known to exist, every
//! `<uuid>.trajectory.json` sidecar beside them is read for its native
//! evidence (its metadata's parent, its INVOKE_SUBAGENT results) and the
//! reader's stamp, and any trajectory the caller decoded from its source
//! ([`ParentIndex::observe`]) adds its own. [`ParentIndex::resolve`] then
//! chooses each conversation's parent and reports what it cannot choose.
//!
//! The rules, the stricter reading where the reference is silent:
//! * native evidence (a child's `parentConversationId`, a parent's results
//!   listing the child) decides; the reader's stamp is used only for a
//!   conversation without native evidence;
//! * evidence naming two parents chooses none (`conflicting-evidence`);
//! * a parent edge on a cycle (a conversation its own ancestor, itself
//!   included) is dropped for every member (`parent-cycle`);
//! * a chosen parent that no known root holds is kept (it is a valid
//!   pointer) and reported (`missing-parent`);
//! * an unreadable sidecar (`unreadable-sidecar`), one whose `cascadeId` is
//!   not the bare UUID its file is named after (`invalid-cascade-id`), and
//!   an invalid stamp (`invalid-parent-stamp`) are reported and skipped.
//!
//! Walking up ([`ParentIndex::ancestors`]) is bounded by [`MAX_DEPTH`] and a
//! visited set, so no damaged store is followed forever.

use agy_engine::tree::links::{self, Diagnostic, Named};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The deepest subagent nesting followed (agy's own trees are a few
/// levels deep; anything deeper is reported, not followed).
pub const MAX_DEPTH: usize = 32;

/// What is known of one conversation.
#[derive(Debug, Clone, Default)]
struct Node {
    /// The root holding its source or sidecar first.
    root: Option<PathBuf>,
    /// Its source (`.db`, else `.pb`) exists in a known root.
    source: bool,
    /// The parent its metadata names.
    native: Option<String>,
    /// The reader's (valid) stamp.
    stamp: Option<String>,
    /// The children its INVOKE_SUBAGENT results list.
    invoked: Vec<String>,
}

/// The parent links of the known roots (see the module documentation).
#[derive(Debug, Clone, Default)]
pub struct ParentIndex {
    nodes: BTreeMap<String, Node>,
    parents: BTreeMap<String, String>,
    cyclic: BTreeSet<String>,
    diagnostics: BTreeSet<Diagnostic>,
}

fn sidecar_stem(name: &str) -> Option<&str> {
    name.strip_suffix(".trajectory.json")
}

impl ParentIndex {
    /// Scans the `conversations/` folder of each root (in order; a root
    /// without one is passed over) and resolves the links.
    pub fn scan(roots: &[PathBuf]) -> ParentIndex {
        Self::scan_filtered(roots, None)
    }

    /// [`ParentIndex::scan`] reading only the sidecars whose bytes mention
    /// conversation `id` (in lower or upper case): the links into and out
    /// of it, for one conversation's stamp without parsing a whole store.
    pub fn scan_mentioning(roots: &[PathBuf], id: &str) -> ParentIndex {
        Self::scan_filtered(roots, Some(id))
    }

    fn scan_filtered(roots: &[PathBuf], mentioning: Option<&str>) -> ParentIndex {
        let needles: Vec<Vec<u8>> = mentioning
            .map(|id| {
                vec![
                    id.to_ascii_lowercase().into_bytes(),
                    id.to_ascii_uppercase().into_bytes(),
                ]
            })
            .unwrap_or_default();
        let mut ix = ParentIndex::default();
        for root in roots {
            let dir = root.join("conversations");
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut names: Vec<String> = rd
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .collect();
            names.sort();
            for name in names {
                let path = dir.join(&name);
                if let Some(stem) = name.strip_suffix(".db").or(name.strip_suffix(".pb")) {
                    if let Some(id) = links::canonical_id(stem) {
                        let n = ix.node(&id, root);
                        n.source = true;
                    }
                } else if let Some(stem) = sidecar_stem(&name) {
                    ix.read_sidecar(stem, &path, root, &needles);
                }
            }
        }
        ix.resolve();
        ix
    }

    fn node(&mut self, id: &str, root: &Path) -> &mut Node {
        let n = self.nodes.entry(id.to_string()).or_default();
        if n.root.is_none() {
            n.root = Some(root.to_path_buf());
        }
        n
    }

    fn read_sidecar(&mut self, stem: &str, path: &Path, root: &Path, needles: &[Vec<u8>]) {
        let id = stem.to_ascii_lowercase();
        // bounded like every sidecar read (the default response cap's
        // sidecar cap: the index has no response cap of its own); a FIFO or
        // a file past the cap is named, never read
        let read =
            crate::util::bounded::read_regular(path, crate::util::bounded::InputKind::Sidecar);
        let doc = match read {
            Err(e) => Err(crate::util::io_text(&e.into_io())),
            Ok(bytes)
                if !needles.is_empty()
                    && !needles
                        .iter()
                        .any(|n| bytes.windows(n.len()).any(|w| w == n.as_slice())) =>
            {
                return;
            }
            Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                Ok(v) if v.is_object() => Ok(v),
                Ok(_) => Err("not a JSON object".to_string()),
                Err(e) => Err(format!("not JSON ({e})")),
            },
        };
        let doc = match doc {
            Ok(d) => d,
            Err(why) => {
                self.diagnostics.insert(Diagnostic::UnreadableSidecar {
                    id,
                    path: path.to_path_buf(),
                    why,
                });
                return;
            }
        };
        let own = links::cascade_id(&doc);
        let matches =
            matches!((&own, links::canonical_id(stem)), (Named::Id(a), Some(b)) if *a == b);
        if !matches {
            let value = match own {
                Named::Absent => String::new(),
                Named::Id(s) | Named::Invalid(s) => s,
            };
            self.diagnostics.insert(Diagnostic::InvalidCascadeId {
                id,
                path: path.to_path_buf(),
                value,
            });
            return;
        }
        match links::stamped_parent(&doc) {
            Named::Invalid(value) => {
                self.diagnostics.insert(Diagnostic::InvalidParentStamp {
                    id: id.clone(),
                    value,
                });
            }
            Named::Id(p) => self.node(&id, root).stamp = Some(p),
            Named::Absent => {}
        }
        self.observe_in(&id, &doc, root, false);
    }

    /// Records what `trajectory` says of conversation `id`: merged with
    /// what is known (a sidecar), or, `from_source`, replacing it (the
    /// source is the freshest record).
    fn observe_in(&mut self, id: &str, trajectory: &Value, root: &Path, from_source: bool) {
        let native = links::native_parent(trajectory).id().map(str::to_string);
        let invoked: Vec<String> = links::invocations(trajectory)
            .into_iter()
            .flat_map(|i| i.children)
            .collect();
        let n = self.node(id, root);
        if from_source {
            n.native = native;
            n.invoked.clear();
        } else if native.is_some() {
            n.native = native;
        }
        for c in invoked {
            if !n.invoked.contains(&c) {
                n.invoked.push(c);
            }
        }
    }

    /// Adds what a trajectory decoded from conversation `id`'s source (in
    /// `root`) says, its source known to exist, and resolves again. The
    /// source is the freshest record: its native parent and children replace
    /// a sidecar's (the reader's stamp stays, used only without them).
    pub fn observe(&mut self, id: &str, root: &Path, trajectory: &Value) {
        let Some(id) = links::canonical_id(id) else {
            return;
        };
        self.node(&id, root).source = true;
        self.observe_in(&id, trajectory, root, true);
        self.resolve();
    }

    /// Chooses every conversation's parent (see the module documentation).
    fn resolve(&mut self) {
        self.diagnostics.retain(|d| {
            !matches!(
                d,
                Diagnostic::ParentCycle { .. }
                    | Diagnostic::MissingParent { .. }
                    | Diagnostic::ConflictingEvidence { .. }
            )
        });
        let mut listed: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (p, n) in &self.nodes {
            for c in &n.invoked {
                listed.entry(c.as_str()).or_default().insert(p.as_str());
            }
        }
        let mut parents = BTreeMap::new();
        let mut found = Vec::new();
        let ids: BTreeSet<&str> = self
            .nodes
            .keys()
            .map(String::as_str)
            .chain(listed.keys().copied())
            .collect();
        for id in ids {
            let mut cands: BTreeSet<&str> = listed.get(id).cloned().unwrap_or_default();
            let node = self.nodes.get(id);
            if let Some(p) = node.and_then(|n| n.native.as_deref()) {
                cands.insert(p);
            }
            if cands.is_empty() {
                if let Some(p) = node.and_then(|n| n.stamp.as_deref()) {
                    cands.insert(p);
                }
            }
            match cands.len() {
                0 => {}
                1 => {
                    if let Some(p) = cands.first() {
                        parents.insert(id.to_string(), p.to_string());
                    }
                }
                _ => found.push(Diagnostic::ConflictingEvidence {
                    id: id.to_string(),
                    parents: cands.iter().map(|p| p.to_string()).collect(),
                }),
            }
        }
        // Cycle members: walk up from each id with a visited set; the walk
        // ends at a root, a missing parent, a node already settled, or a
        // repeat (whose loop is the cycle).
        let mut cyclic = BTreeSet::new();
        let mut settled: BTreeSet<String> = BTreeSet::new();
        for start in parents.keys() {
            let mut path: Vec<String> = Vec::new();
            let mut at: BTreeMap<String, usize> = BTreeMap::new();
            let mut cur = Some(start.clone());
            while let Some(id) = cur {
                if settled.contains(&id) {
                    break;
                }
                if let Some(&i) = at.get(&id) {
                    let cycle = links::cycle_from(path[i..].to_vec());
                    for m in &cycle {
                        cyclic.insert(m.clone());
                        found.push(Diagnostic::ParentCycle {
                            id: m.clone(),
                            cycle: cycle.clone(),
                        });
                    }
                    break;
                }
                at.insert(id.clone(), path.len());
                path.push(id.clone());
                cur = parents.get(&id).cloned();
            }
            settled.extend(path);
        }
        for m in &cyclic {
            parents.remove(m);
        }
        for (c, p) in &parents {
            if !self
                .nodes
                .get(p)
                .is_some_and(|n| n.source || n.root.is_some())
            {
                found.push(Diagnostic::MissingParent {
                    id: c.clone(),
                    parent: p.clone(),
                });
            }
        }
        self.parents = parents;
        self.cyclic = cyclic;
        self.diagnostics.extend(found);
    }

    /// The parent chosen for `id` (none for a root, a conflict or a cycle).
    pub fn parent(&self, id: &str) -> Option<&str> {
        self.parents.get(id).map(String::as_str)
    }

    /// Whether `id`'s parent edge lies on a cycle.
    pub fn on_cycle(&self, id: &str) -> bool {
        self.cyclic.contains(id)
    }

    /// Whether a known root holds `id` (a source or a sidecar).
    pub fn known(&self, id: &str) -> bool {
        self.nodes.contains_key(id)
    }

    /// The conversations whose chosen parent is `id`, sorted.
    pub fn children(&self, id: &str) -> Vec<&str> {
        self.parents
            .iter()
            .filter(|(_, p)| p.as_str() == id)
            .map(|(c, _)| c.as_str())
            .collect()
    }

    /// `id`'s ancestors, nearest first: at most [`MAX_DEPTH`], never one
    /// twice (a cycle ends the walk; [`ParentIndex::resolve`] reported it).
    pub fn ancestors(&self, id: &str) -> Vec<&str> {
        let mut seen = BTreeSet::from([id]);
        let mut out = Vec::new();
        let mut cur = id;
        while let Some(p) = self.parent(cur) {
            if out.len() >= MAX_DEPTH || !seen.insert(p) {
                break;
            }
            out.push(p);
            cur = p;
        }
        out
    }

    /// Every diagnostic, sorted (by kind, then conversation).
    pub fn diagnostics(&self) -> Vec<&Diagnostic> {
        let mut v: Vec<&Diagnostic> = self.diagnostics.iter().collect();
        v.sort_by(|a, b| (a.kind(), a.id()).cmp(&(b.kind(), b.id())).then(a.cmp(b)));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::links::DiagnosticKind;
    use serde_json::json;

    fn uuid(n: u8) -> String {
        format!("00000000-0000-4000-8000-0000000000{n:02x}")
    }

    fn side(dir: &Path, id: &str, doc: &Value) {
        std::fs::write(
            dir.join(format!("{id}.trajectory.json")),
            serde_json::to_vec(doc).unwrap(),
        )
        .unwrap();
    }

    #[test]
    fn parents_cycles_conflicts_missing_and_bad_sidecars() {
        let d = tempfile::tempdir().unwrap();
        let conv = d.path().join("conversations");
        std::fs::create_dir_all(&conv).unwrap();
        let [p, c, g, x, y, o, q, s] = [1, 2, 3, 4, 5, 6, 7, 8].map(uuid);
        let invoke = |kids: &[&String]| {
            json!({"type": links::INVOKE_SUBAGENT, "invokeSubagent": {"results":
                kids.iter().map(|k| json!({"conversationId": k})).collect::<Vec<_>>()}})
        };
        side(
            &conv,
            &p,
            &json!({"cascadeId": p, "steps": [invoke(&[&c])]}),
        );
        // c: named by p's results only; g: by its metadata only
        side(&conv, &c, &json!({"cascadeId": c, "steps": []}));
        side(
            &conv,
            &g,
            &json!({"cascadeId": g, "metadata": {"parentConversationId": c}}),
        );
        // x <-> y
        side(
            &conv,
            &x,
            &json!({"cascadeId": x, "metadata": {"parentConversationId": y}}),
        );
        side(
            &conv,
            &y,
            &json!({"cascadeId": y, "metadata": {"parentConversationId": x}}),
        );
        // o: a parent nobody holds, and an invalid stamp
        let absent = uuid(0x99);
        side(
            &conv,
            &o,
            &json!({"cascadeId": o, "metadata": {"parentConversationId": absent},
            "agyReader": {"parentCascadeId": "not-a-uuid"}}),
        );
        // q: metadata says p, c's results do not list it but s's do
        side(
            &conv,
            &q,
            &json!({"cascadeId": q, "metadata": {"parentConversationId": p}}),
        );
        side(
            &conv,
            &s,
            &json!({"cascadeId": s, "steps": [invoke(&[&q])]}),
        );
        std::fs::write(conv.join(format!("{}.trajectory.json", uuid(0x10))), b"{").unwrap();
        side(&conv, &uuid(0x11), &json!({"cascadeId": "other"}));
        let ix = ParentIndex::scan(&[d.path().to_path_buf()]);
        assert_eq!(ix.parent(&c), Some(p.as_str()));
        assert_eq!(ix.parent(&g), Some(c.as_str()));
        assert_eq!(ix.ancestors(&g), vec![c.as_str(), p.as_str()]);
        assert_eq!(ix.parent(&x), None);
        assert!(ix.on_cycle(&x) && ix.on_cycle(&y));
        assert_eq!(ix.parent(&o), Some(absent.as_str()));
        assert_eq!(ix.parent(&q), None);
        let kinds: Vec<(DiagnosticKind, &str)> = ix
            .diagnostics()
            .iter()
            .map(|d| (d.kind(), d.id()))
            .collect();
        let u10 = uuid(0x10);
        let u11 = uuid(0x11);
        assert_eq!(
            kinds,
            vec![
                (DiagnosticKind::UnreadableSidecar, u10.as_str()),
                (DiagnosticKind::InvalidCascadeId, u11.as_str()),
                (DiagnosticKind::InvalidParentStamp, o.as_str()),
                (DiagnosticKind::ParentCycle, x.as_str()),
                (DiagnosticKind::ParentCycle, y.as_str()),
                (DiagnosticKind::MissingParent, o.as_str()),
                (DiagnosticKind::ConflictingEvidence, q.as_str()),
            ]
        );
        // the source is the freshest record: without a parent in it, the
        // sidecar's is gone; a bounded walk from the cycle ends
        let mut ix = ix;
        ix.observe(&g, d.path(), &json!({"cascadeId": g}));
        assert_eq!(ix.parent(&g), None);
        assert!(ix.ancestors(&x).len() <= 1);
    }
}
