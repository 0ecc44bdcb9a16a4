//! The import structure of each crate, checked against what ARCHITECTURE.md
//! declares (issue 47), not against an order read off today's imports.
//!
//! ARCHITECTURE.md's "Layers" section declares, per crate, its floors by
//! role: a fenced block `layers <crate src folder>` whose lines read
//! `<floor> <name> [flat]: <pattern> ...`. A pattern names a module by its
//! path (`source`, `pipeline/shard`), `x/*` its descendants only, and `*`
//! inside a segment is a glob (`cli/*_cmd`); a module takes the floor of
//! its most specific pattern. Then:
//!
//! * every module of the crate has a floor, and every pattern names one;
//! * every import runs down or across, never up (an import of a module on
//!   a higher floor is an arrow back up);
//! * on a `flat` floor no module imports another (the commands);
//! * no import circle in any crate, and no rule family imports another.
//!
//! The graph is read from the source text: a file's module imports every
//! module that a `crate::…` or `super::…` path in it names (outside its
//! `#[cfg(test)] mod tests`), and a `mod.rs` also imports each child it names
//! by a bare `child::` path. A path that ends at an item resolves to the
//! module holding it; paths into another crate (the engine's modules the
//! application re-exports) are not imports inside the crate. Visibility
//! (`pub(crate)`, `pub(super)`) is not a path.
//!
//! The same file holds the size rule: no function in the engine or the
//! application is longer than 150 lines (tests excluded).

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

/// The crates whose structure ARCHITECTURE.md declares, by source folder.
const CRATES: &[&str] = &["crates/agy-engine/src", "crates/agy-audit-app/src", "src"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One declared floor.
#[derive(Debug, Clone)]
struct Floor {
    number: u32,
    name: String,
    flat: bool,
    patterns: Vec<String>,
}

/// The floors ARCHITECTURE.md declares for each crate source folder.
fn declared() -> BTreeMap<String, Vec<Floor>> {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let mut out: BTreeMap<String, Vec<Floor>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(dir) = line.strip_prefix("```layers ") {
            current = Some(dir.trim().to_string());
            out.entry(dir.trim().to_string()).or_default();
            continue;
        }
        if line.starts_with("```") {
            current = None;
            continue;
        }
        let Some(dir) = &current else { continue };
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (head, pats) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("layers {dir}: `{line}` has no `:`"));
        let mut words = head.split_whitespace();
        let number: u32 = words
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("layers {dir}: `{line}` does not start with a floor number"));
        let name = words.next().unwrap_or_default().to_string();
        let flat = words.next() == Some("flat");
        out.get_mut(dir).expect("block").push(Floor {
            number,
            name,
            flat,
            patterns: pats.split_whitespace().map(str::to_string).collect(),
        });
    }
    out
}

/// `*` within one segment: any run of characters.
fn glob(pattern: &str, s: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == s,
        Some((pre, post)) => {
            s.len() >= pre.len() + post.len() && s.starts_with(pre) && s.ends_with(post)
        }
    }
}

/// How specifically `pattern` names `m` (None when it does not).
fn specificity(pattern: &str, m: &Module) -> Option<u32> {
    let segs: Vec<&str> = pattern.split('/').collect();
    let (segs, children_only) = match segs.split_last() {
        Some((&"*", base)) if !base.is_empty() => (base.to_vec(), true),
        _ => (segs, false),
    };
    if m.len() < segs.len() || (children_only && m.len() == segs.len()) {
        return None;
    }
    if !segs.iter().zip(m).all(|(p, s)| glob(p, s)) {
        return None;
    }
    // a longer path is more specific; at the same depth the module itself
    // (`x` naming `x`) beats its descendants (`x/*`), which beat `x`
    // naming what is under it; a glob is less specific than a name
    let rank = if m.len() == segs.len() {
        3
    } else if children_only {
        2
    } else {
        1
    };
    let globs = segs.iter().filter(|s| s.contains('*')).count() as u32;
    Some(segs.len() as u32 * 8 + rank * 2 - globs.min(1))
}

/// Each module's floor (its index into `floors`); the undeclared listed.
fn floors_of<'a>(
    g: &BTreeMap<Module, BTreeSet<Module>>,
    floors: &'a [Floor],
) -> (BTreeMap<Module, &'a Floor>, Vec<String>) {
    let mut of = BTreeMap::new();
    let mut undeclared = Vec::new();
    for m in g.keys().filter(|m| !m.is_empty()) {
        let best = floors
            .iter()
            .flat_map(|f| f.patterns.iter().map(move |p| (f, p)))
            .filter_map(|(f, p)| specificity(p, m).map(|s| (s, f)))
            .max_by_key(|(s, _)| *s);
        match best {
            Some((_, f)) => {
                of.insert(m.clone(), f);
            }
            None => undeclared.push(m.join("/")),
        }
    }
    (of, undeclared)
}

/// What breaks the declaration in one crate, one line each.
fn violations(g: &BTreeMap<Module, BTreeSet<Module>>, floors: &[Floor]) -> Vec<String> {
    let (of, mut bad) = floors_of(g, floors);
    bad = bad
        .into_iter()
        .map(|m| format!("{m}: on no declared floor"))
        .collect();
    for f in floors {
        for p in &f.patterns {
            if !g.keys().any(|m| specificity(p, m).is_some()) {
                bad.push(format!(
                    "floor {} {}: `{p}` names no module",
                    f.number, f.name
                ));
            }
        }
    }
    for (a, edges) in g {
        let Some(fa) = of.get(a) else { continue };
        for b in edges {
            let Some(fb) = of.get(b) else { continue };
            if fb.number > fa.number {
                bad.push(format!(
                    "{} (floor {} {}) imports {} (floor {} {}): an arrow back up",
                    a.join("/"),
                    fa.number,
                    fa.name,
                    b.join("/"),
                    fb.number,
                    fb.name
                ));
            } else if fa.number == fb.number && fa.flat {
                bad.push(format!(
                    "{} imports {}: floor {} {} is flat",
                    a.join("/"),
                    b.join("/"),
                    fa.number,
                    fa.name
                ));
            }
        }
    }
    bad
}

#[test]
fn every_import_runs_down_the_declared_floors() {
    let declared = declared();
    assert_eq!(
        declared.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        CRATES.iter().copied().collect::<BTreeSet<_>>(),
        "ARCHITECTURE.md declares the layers of exactly these crates"
    );
    let mut all = Vec::new();
    for dir in CRATES {
        let g = graph(&root().join(dir));
        assert!(g.len() > 20, "{dir}: {} modules", g.len());
        for v in violations(&g, &declared[*dir]) {
            all.push(format!("{dir}: {v}"));
        }
    }
    assert!(all.is_empty(), "{}", all.join("\n"));
}

/// The checker itself: an import up, an import across a flat floor, an
/// undeclared module and a stale pattern are each found.
#[test]
fn the_floor_check_finds_each_kind_of_breach() {
    let m = |s: &str| -> Module { s.split('/').map(str::to_string).collect() };
    let floor = |number, flat, pats: &str| Floor {
        number,
        name: format!("f{number}"),
        flat,
        patterns: pats.split_whitespace().map(str::to_string).collect(),
    };
    let floors = [
        floor(1, false, "util a/leaf"),
        floor(2, true, "cmd/*_cmd"),
        floor(3, false, "a cmd"),
    ];
    let mut g: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for k in ["util", "a", "a/leaf", "cmd", "cmd/x_cmd", "cmd/y_cmd"] {
        g.insert(m(k), BTreeSet::new());
    }
    assert!(violations(&g, &floors).is_empty());
    g.get_mut(&m("a/leaf")).unwrap().insert(m("a"));
    g.get_mut(&m("cmd/x_cmd")).unwrap().insert(m("cmd/y_cmd"));
    g.insert(m("stray"), BTreeSet::new());
    let mut with_stale = floors.to_vec();
    with_stale.push(floor(4, false, "gone"));
    let v = violations(&g, &with_stale).join("\n");
    assert!(
        v.contains("a/leaf (floor 1 f1) imports a (floor 3 f3): an arrow back up"),
        "{v}"
    );
    assert!(
        v.contains("cmd/x_cmd imports cmd/y_cmd: floor 2 f2 is flat"),
        "{v}"
    );
    assert!(v.contains("stray: on no declared floor"), "{v}");
    assert!(v.contains("`gone` names no module"), "{v}");
}

#[test]
fn no_import_circle_in_any_crate() {
    for dir in CRATES {
        let g = graph(&root().join(dir));
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
        assert!(
            found.is_empty(),
            "{dir}: import circles:\n{}",
            text.join("\n")
        );
    }
}

#[test]
fn no_rule_family_imports_another() {
    let g = graph(&root().join("crates/agy-engine/src"));
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

/// The longest a function of the engine or the application may be.
const MAX_FUNCTION_LINES: usize = 150;

/// `text` with comments, string and character literals blanked (their
/// newlines kept), so braces count only as code.
fn blank_literals(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let keep_lines = |seg: &str, out: &mut String| {
        out.extend(seg.chars().filter(|c| *c == '\n'));
    };
    let mut i = 0;
    while i < b.len() {
        let rest = &text[i..];
        let prev_ident = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if rest.starts_with("//") {
            let end = rest.find('\n').map_or(b.len(), |k| i + k);
            i = end;
        } else if let Some(after) = rest.strip_prefix("/*") {
            let end = after.find("*/").map_or(b.len(), |k| i + 2 + k + 2);
            keep_lines(&text[i..end], &mut out);
            i = end;
        } else if !prev_ident
            && (rest.starts_with("r\"")
                || rest.starts_with("r#")
                || rest.starts_with("br\"")
                || rest.starts_with("br#"))
        {
            let start = if rest.starts_with('b') { i + 2 } else { i + 1 };
            let hashes = text[start..].bytes().take_while(|c| *c == b'#').count();
            if text.as_bytes().get(start + hashes) != Some(&b'"') {
                out.push(b[i] as char);
                i += 1;
                continue;
            }
            let close = format!("\"{}", "#".repeat(hashes));
            let body = start + hashes + 1;
            let end = text[body..]
                .find(&close)
                .map_or(b.len(), |k| body + k + close.len());
            keep_lines(&text[i..end], &mut out);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            keep_lines(&text[i..end], &mut out);
            i = end;
        } else if b[i] == b'\'' {
            // a character literal ('x', '\n', '\u{..}', '{'), not a lifetime
            let mut cs = rest.chars();
            let (_, c1, c2) = (cs.next(), cs.next(), cs.next());
            let lit = match (c1, c2) {
                (Some('\\'), _) if rest.len() >= 4 => rest[3..].find('\'').map(|k| k + 4),
                (Some(c), Some('\'')) => Some(2 + c.len_utf8()),
                _ => None,
            };
            match lit {
                Some(n) => i += n,
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let c = rest.chars().next().expect("a char");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Every function with a body in `text` (tests excluded): name, first line
/// and length in lines, signature to closing brace.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let code = blank_literals(text);
    let code = match code.find("#[cfg(test)]\nmod tests") {
        Some(i) => &code[..i],
        None => &code[..],
    };
    let b = code.as_bytes();
    let line_of = |i: usize| code[..i].matches('\n').count() + 1;
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(k) = code[from..].find("fn ") {
        let at = from + k;
        from = at + 3;
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
            continue;
        }
        let name_end = ident_end(b, at + 3);
        if name_end == at + 3 {
            continue;
        }
        // the body opens at the first `{` before any `;` (a declaration)
        let Some(open) = code[name_end..].find(['{', ';']).map(|k| name_end + k) else {
            break;
        };
        if b[open] == b';' {
            continue;
        }
        let mut depth = 0usize;
        let mut close = open;
        for (j, c) in code[open..].bytes().enumerate() {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = open + j;
                        break;
                    }
                }
                _ => {}
            }
        }
        let (first, last) = (line_of(at), line_of(close));
        out.push((code[at + 3..name_end].to_string(), first, last - first + 1));
    }
    out
}

#[test]
fn the_function_counter_counts_lines_not_literals() {
    let text = "fn a() {\n    let s = \"}\";\n    let c = '{';\n    let q = ['\\'', '\\u{7b}', 'é'];\n    // }\n    let r = r#\"{\"#;\n}\nfn b<'x>(v: &'x str) -> &'x str {\n    v\n}\nfn decl();\n";
    assert_eq!(
        functions(text),
        vec![("a".to_string(), 1, 7), ("b".to_string(), 8, 3)]
    );
}

#[test]
fn no_function_of_the_engine_or_the_application_is_longer_than_150_lines() {
    let mut long = Vec::new();
    let mut count = 0;
    for dir in &CRATES[..2] {
        let mut files = Vec::new();
        rust_files(&root().join(dir), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).expect("read");
            for (name, line, len) in functions(&text) {
                count += 1;
                if len > MAX_FUNCTION_LINES {
                    long.push(format!(
                        "{}:{line}: fn {name} is {len} lines",
                        f.strip_prefix(root()).unwrap_or(&f).display()
                    ));
                }
            }
        }
    }
    assert!(count > 1000, "{count} functions found");
    assert!(
        long.is_empty(),
        "longer than {MAX_FUNCTION_LINES} lines:\n{}",
        long.join("\n")
    );
}
