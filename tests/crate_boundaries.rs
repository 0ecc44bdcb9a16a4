//! The crate boundaries of issue 47, read from `cargo metadata`: the
//! engine depends on no HTTP, terminal, CLI, async runtime or generator
//! crate, the application on no CLI, terminal widget or generator crate,
//! not directly, not through another crate, and not for their tests.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// What the engine may never depend on.
const ENGINE_FORBIDDEN: &[&str] = &[
    "reqwest",
    "hyper",
    "hyper-util",
    "tokio",
    "clap",
    "indicatif",
    "anyhow",
    "agy-corpus",
    "agy-audit-app",
    "agy-audit",
];

/// What the application may never depend on.
const APP_FORBIDDEN: &[&str] = &["clap", "indicatif", "anyhow", "agy-corpus", "agy-audit"];

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON")
}

/// Package id → name, and the workspace package ids by name.
fn names(m: &Value) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let mut by_id = BTreeMap::new();
    for p in m["packages"].as_array().expect("packages") {
        by_id.insert(
            p["id"].as_str().expect("id").to_string(),
            p["name"].as_str().expect("name").to_string(),
        );
    }
    let members = m["workspace_members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|id| {
            let id = id.as_str().expect("member id").to_string();
            (by_id[&id].clone(), id)
        })
        .collect();
    (by_id, members)
}

/// Every dependency `name` declares in its manifest (any kind: normal,
/// dev, build, any target).
fn declared(m: &Value, name: &str) -> BTreeSet<String> {
    m["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no package {name}"))["dependencies"]
        .as_array()
        .expect("dependencies")
        .iter()
        .map(|d| d["name"].as_str().expect("dependency name").to_string())
        .collect()
}

/// Every package `id` links, through any chain of normal dependencies
/// (as resolved for this workspace). A procedural macro's own dependencies
/// run in the compiler, never in the crate (prost-derive uses anyhow to
/// report a derive error), and a build script's are the build's, so
/// neither is followed; the crate's own manifest is checked whole by
/// [`declared`].
fn closure(m: &Value, by_id: &BTreeMap<String, String>, id: &str) -> BTreeSet<String> {
    let proc_macro: BTreeSet<&str> = m["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|p| {
            p["targets"].as_array().into_iter().flatten().any(|t| {
                t["kind"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|k| k == "proc-macro")
            })
        })
        .map(|p| p["id"].as_str().expect("id"))
        .collect();
    let nodes: BTreeMap<&str, Vec<&str>> = m["resolve"]["nodes"]
        .as_array()
        .expect("resolve")
        .iter()
        .map(|n| {
            let deps = n["deps"]
                .as_array()
                .expect("deps")
                .iter()
                .filter(|d| {
                    d["dep_kinds"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|k| k["kind"].is_null())
                })
                .map(|d| d["pkg"].as_str().expect("pkg"))
                .collect();
            (n["id"].as_str().expect("node id"), deps)
        })
        .collect();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut stack = vec![id];
    while let Some(n) = stack.pop() {
        for d in nodes.get(n).into_iter().flatten() {
            if seen.insert(d) && !proc_macro.contains(d) {
                stack.push(d);
            }
        }
    }
    seen.into_iter().map(|d| by_id[d].clone()).collect()
}

fn breaches(m: &Value, krate: &str, forbidden: &[&str]) -> Vec<String> {
    let (by_id, members) = names(m);
    let direct = declared(m, krate);
    let all = closure(m, &by_id, &members[krate]);
    let mut out = Vec::new();
    for f in forbidden {
        if direct.contains(*f) {
            out.push(format!("{krate} declares {f}"));
        } else if all.contains(*f) {
            out.push(format!("{krate} depends on {f} through another crate"));
        }
    }
    out
}

#[test]
fn the_engine_and_the_application_keep_their_dependency_rules() {
    let m = metadata();
    let mut bad = breaches(&m, "agy-engine", ENGINE_FORBIDDEN);
    bad.extend(breaches(&m, "agy-audit-app", APP_FORBIDDEN));
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // the checks see what they judge: the CLI does depend on each of these
    let cli = declared(&m, "agy-audit");
    for dep in [
        "clap",
        "indicatif",
        "anyhow",
        "agy-corpus",
        "agy-audit-app",
        "agy-engine",
    ] {
        assert!(cli.contains(dep), "agy-audit declares {dep}");
    }
    let app = declared(&m, "agy-audit-app");
    for dep in ["agy-engine", "reqwest", "tokio"] {
        assert!(app.contains(dep), "agy-audit-app declares {dep}");
    }
}

/// The check finds a forbidden dependency: the CLI, held to the engine's
/// rule, breaches it directly (clap) and through another crate (reqwest,
/// through the application).
#[test]
fn a_forbidden_dependency_is_found_directly_and_through_another_crate() {
    let m = metadata();
    let bad = breaches(&m, "agy-audit", &["clap", "reqwest"]).join("\n");
    assert!(bad.contains("agy-audit declares clap"), "{bad}");
    assert!(
        bad.contains("agy-audit depends on reqwest through another crate")
            || bad.contains("agy-audit declares reqwest"),
        "{bad}"
    );
    let bad = breaches(&m, "agy-audit-app", &["hyper"]).join("\n");
    assert!(
        bad.contains("agy-audit-app depends on hyper through another crate"),
        "{bad}"
    );
}
