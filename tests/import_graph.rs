//! The library's modules import each other without a circle.
//!
//! The graph is read from the source text: a file's module imports every
//! module that a `crate::…` or `super::…` path in it names (outside its
//! `#[cfg(test)] mod tests`), and a `mod.rs` also imports each child it names
//! by a bare `child::` path. A path that ends at an item resolves to the
//! module holding it; re-exports through `lib.rs` (`crate::Error`) are not
//! counted. Visibility (`pub(crate)`, `pub(super)`) is not a path. In
//! particular no rule family under `src/project/` imports another: families
//! meet only in `project/registry.rs`.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read src") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file
        .strip_prefix(src)
        .expect("under src")
        .with_extension("");
    let mut parts: Module = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    if parts == ["lib"] {
        parts.clear();
    }
    if parts == ["main"] {
        parts = vec!["<main>".into()];
    }
    parts
}

/// The text without line comments, visibility paths and the test module.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    let mut out = String::new();
    for line in text.lines() {
        let line = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(line);
        out.push('\n');
    }
    for vis in ["pub(crate)", "pub(super)", "pub(self)"] {
        out = out.replace(vis, "pub");
    }
    out
}

fn ident_end(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'_') {
        i += 1;
    }
    i
}

/// Every path (as segments) that starts at `crate` or `super` in `text`,
/// with each member of a `{...}` group after it as its own path.
fn paths(text: &str) -> Vec<(String, Vec<String>)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = |w: &str| b[i..].starts_with(w.as_bytes());
        let boundary =
            i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b':');
        if boundary && (starts("crate::") || starts("super::")) {
            let base = if starts("crate::") { "crate" } else { "super" };
            let mut j = i + base.len();
            let mut segs = Vec::new();
            while b[j..].starts_with(b"::") {
                let k = ident_end(b, j + 2);
                if k == j + 2 {
                    break;
                }
                segs.push(text[j + 2..k].to_string());
                j = k;
            }
            if b[j..].starts_with(b"::{") {
                let close = text[j..].find('}').map(|c| j + c).unwrap_or(b.len());
                let inner = &text[j + 3..close];
                for item in inner.split(',') {
                    let item = item.trim().split(" as ").next().unwrap_or("").trim();
                    if item.is_empty() || item.contains('{') {
                        continue;
                    }
                    let mut p = segs.clone();
                    p.extend(
                        item.split("::")
                            .filter(|s| !s.is_empty() && *s != "self")
                            .map(str::to_string),
                    );
                    out.push((base.to_string(), p));
                }
                i = close;
            } else if !segs.is_empty() {
                out.push((base.to_string(), segs));
                i = j;
            }
        }
        i += 1;
    }
    out
}

fn graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeMap<Module, PathBuf> = files
        .iter()
        .map(|f| (module_of(src, f), f.clone()))
        .collect();
    let resolve = |path: &[String]| -> Option<Module> {
        (1..=path.len())
            .rev()
            .map(|k| path[..k].to_vec())
            .find(|m| modules.contains_key(m))
    };
    let mut g: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (m, f) in &modules {
        let text = code(&std::fs::read_to_string(f).expect("read"));
        let is_dir_mod = f.ends_with("mod.rs") || f.ends_with("lib.rs");
        let parent: Module = m[..m.len().saturating_sub(1)].to_vec();
        let edges = g.entry(m.clone()).or_default();
        for (base, segs) in paths(&text) {
            let mut start = if base == "crate" {
                Vec::new()
            } else {
                parent.clone()
            };
            let mut segs = segs.as_slice();
            while segs.first().is_some_and(|s| s == "super") {
                start.pop();
                segs = &segs[1..];
            }
            let mut full = start;
            full.extend(segs.iter().cloned());
            if let Some(r) = resolve(&full) {
                if &r != m && !r.is_empty() {
                    edges.insert(r);
                }
            }
        }
        if is_dir_mod {
            for (child, _) in modules
                .iter()
                .filter(|(c, _)| c.len() == m.len() + 1 && c.starts_with(m))
            {
                let name = child.last().expect("child name");
                let b = text.as_bytes();
                let needle = format!("{name}::");
                let used = text.match_indices(&needle).any(|(i, _)| {
                    i == 0
                        || !(b[i - 1].is_ascii_alphanumeric()
                            || b[i - 1] == b'_'
                            || b[i - 1] == b':')
                });
                if used {
                    edges.insert(child.clone());
                }
            }
        }
    }
    g
}

/// The strongly connected components of more than one module.
fn circles(g: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    // reachability closure is small enough here (a few hundred modules)
    let nodes: Vec<&Module> = g.keys().collect();
    let reach = |from: &Module| -> BTreeSet<Module> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(n) = stack.pop() {
            for e in g.get(&n).into_iter().flatten() {
                if seen.insert(e.clone()) {
                    stack.push(e.clone());
                }
            }
        }
        seen
    };
    let all: BTreeMap<&Module, BTreeSet<Module>> = nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut done: BTreeSet<Module> = BTreeSet::new();
    let mut out = Vec::new();
    for n in &nodes {
        if done.contains(*n) {
            continue;
        }
        let comp: Vec<Module> = nodes
            .iter()
            .filter(|m| **m == *n || (all[*n].contains(**m) && all[**m].contains(*n)))
            .map(|m| (*m).clone())
            .collect();
        done.extend(comp.iter().cloned());
        if comp.len() > 1 {
            out.push(comp);
        }
    }
    out
}

#[test]
fn no_import_circle_in_src() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graph(&src);
    assert!(g.len() > 80, "{} modules", g.len());
    let found = circles(&g);
    let text: Vec<String> = found
        .iter()
        .map(|c| {
            c.iter()
                .map(|m| m.join("/"))
                .collect::<Vec<_>>()
                .join(" <-> ")
        })
        .collect();
    assert!(found.is_empty(), "import circles:\n{}", text.join("\n"));
}

#[test]
fn no_rule_family_imports_another() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graph(&src);
    let leaves: BTreeSet<&str> = [
        "args",
        "checks",
        "doc",
        "family",
        "fields",
        "native",
        "projection",
        "reasons",
    ]
    .into_iter()
    .collect();
    let project = |m: &Module| m.first().is_some_and(|f| f == "project");
    let is_family = |m: &Module| {
        project(m)
            && m.len() >= 2
            && !leaves.contains(m[1].as_str())
            && !["registry", "table", "modern"].contains(&m[1].as_str())
            || (m.len() == 3 && m[1] == "modern" && m[2] != "common")
    };
    let mut bad = Vec::new();
    for (m, edges) in &g {
        if !is_family(m) {
            continue;
        }
        for e in edges {
            if is_family(e) {
                bad.push(format!("{} imports {}", m.join("/"), e.join("/")));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // the circle test above would pass on an empty graph; this one on a
    // wrong notion of family: make sure families and their leaf imports exist
    let families = g.keys().filter(|m| is_family(m)).count();
    assert!(families >= 20, "{families} families");
    let embedded = vec!["project".to_string(), "embedded".to_string()];
    assert!(g[&embedded].contains(&vec!["project".to_string(), "family".to_string()]));
}
