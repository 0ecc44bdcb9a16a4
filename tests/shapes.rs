//! Response shape listings (issue 33 item 2): the reference's fingerprint
//! reproduced on its published listings, the peer trajectory's paths all in
//! the published 1.2.10 listing, volatile keys collapsed, the same input
//! giving the same digest, an added field detected, and a sweep recording
//! both listings beside its manifest.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{bin, generate_store, output_text, read_manifest, start_sim, sweep_command};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn shared() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/spec");
    p.exists().then_some(p)
}

fn shapes(args: &[&str]) -> String {
    let o = bin().arg("shapes").args(args).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// `(fingerprint, entries)` as `shapes digest` prints them.
fn digest(file: &Path) -> (String, usize) {
    let out = shapes(&["digest", file.to_str().unwrap()]);
    let mut f = out.trim_end().split('\t');
    let fp = f.next().unwrap().to_string();
    let n = f
        .next()
        .unwrap()
        .trim_end_matches(" entries")
        .parse()
        .unwrap();
    (fp, n)
}

fn diff_json(a: &Path, b: &Path) -> Value {
    let out = shapes(&["diff", "--json", a.to_str().unwrap(), b.to_str().unwrap()]);
    serde_json::from_str(&out).unwrap()
}

/// The README's table: file → (line count, published fingerprint prefix).
fn published(readme: &str) -> Vec<(String, usize, String)> {
    readme
        .lines()
        .filter(|l| l.starts_with("| agy-") && l.contains(".tsv"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let lines = cells[2].replace(',', "").parse().unwrap();
            let fp = cells[3].split('`').nth(1).unwrap().trim_end_matches('…');
            (cells[1].to_string(), lines, fp.to_string())
        })
        .collect()
}

#[test]
fn published_listings_give_their_published_fingerprints() {
    let Some(spec) = shared() else { return };
    let dir = spec.join("real-shapes");
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let table = published(&readme);
    assert_eq!(table.len(), 2, "{table:?}");
    for (file, lines, prefix) in table {
        assert!(prefix.len() >= 8, "{prefix}");
        let (fp, n) = digest(&dir.join(&file));
        assert!(
            fp.starts_with(&format!("sha256:{prefix}")),
            "{file}: {fp} vs {prefix}"
        );
        assert_eq!(fp.len(), "sha256:".len() + 64);
        assert_eq!(n, lines, "{file}");
    }
    // The 1.2.10 listing is the 1.2.5 listing plus paths, none removed.
    let d = diff_json(
        &dir.join("agy-1.2.5-sidecar-shape.tsv"),
        &dir.join("agy-1.2.10-sidecar-shape.tsv"),
    );
    assert_eq!(d["removed"], json!([]));
    assert!(readme.contains(&format!(
        "plus {} paths",
        d["added"].as_array().unwrap().len()
    )));
}

#[test]
fn the_peer_trajectory_is_inside_the_published_1_2_10_listing() {
    let Some(spec) = shared() else { return };
    let peer = spec.join("peer-data/agy-reader-invoke_subagent.trajectory.json");
    let published = spec.join("real-shapes/agy-1.2.10-sidecar-shape.tsv");
    let (_, n) = digest(&peer);
    assert_eq!(n, 25, "25 paths under the reference algorithm");
    // Every path and type of the peer's listing is in the published one.
    let d = diff_json(&published, &peer);
    assert_eq!(d["added"], json!([]), "paths or types not in 1.2.10");
    assert_eq!(d["removed"].as_array().unwrap().len(), 1736 - 25);
}

fn write(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec_pretty(v).unwrap()).unwrap();
    p
}

fn trajectory(keys: [&str; 2], extra: Option<(&str, Value)>) -> Value {
    let mut step = json!({"type": "CORTEX_STEP_TYPE_VIEW_FILE", "status": "CORTEX_STEP_STATUS_DONE",
        "viewFile": {"absolutePathUri": "file:///w/a.rs", "content": "x"}});
    if let Some((k, v)) = extra {
        step["viewFile"][k] = v;
    }
    let mut map = serde_json::Map::new();
    for k in keys {
        map.insert(k.to_string(), json!("rel"));
    }
    json!({"trajectory": {"cascadeId": "c", "steps": [step],
        "metadata": {"workspaceUrisToRelativePaths": map}, "agyReader": {"offline": true}},
        "status": "CASCADE_RUN_STATUS_IDLE"})
}

#[test]
fn volatile_keys_collapse_same_input_same_digest_and_an_added_field_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(
        dir.path(),
        "a.json",
        &trajectory(["file:///w", "0f1e2d3c4b5a69788796a5b4c3d2e1f0"], None),
    );
    let b = write(
        dir.path(),
        "b.json",
        &trajectory(["11111111-2222-3333-4444-555555555555", "4711"], None),
    );
    // Data-dependent keys collapse to `*`: the same listing.
    let (fa, na) = digest(&a);
    assert_eq!(digest(&b), (fa.clone(), na));
    assert_eq!(digest(&a), (fa.clone(), na), "same input, same digest");
    let listing = shapes(&["diff", a.to_str().unwrap(), a.to_str().unwrap()]);
    assert!(listing.is_empty());
    // The listing itself: `*`, no agyReader, the envelope unwrapped.
    let empty = dir.path().join("empty.tsv");
    std::fs::write(&empty, "").unwrap();
    let d = diff_json(&empty, &a);
    let added: Vec<&str> = d["added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        added.contains(&"metadata.workspaceUrisToRelativePaths.*\tstring"),
        "{added:?}"
    );
    assert!(
        added
            .iter()
            .all(|l| !l.contains("agyReader") && !l.starts_with("status")),
        "{added:?}"
    );
    // An added field is found, by path and type.
    let c = write(
        dir.path(),
        "c.json",
        &trajectory(
            ["file:///w", "1"],
            Some(("presentationHint", json!("brief"))),
        ),
    );
    let d = diff_json(&a, &c);
    assert_eq!(
        d["added"],
        json!(["steps.[].viewFile.presentationHint\tstring"])
    );
    assert_eq!(d["removed"], json!([]));
    assert_ne!(digest(&c).0, fa);
    // A listing written by hand must be canonical.
    let bad = dir.path().join("bad.tsv");
    std::fs::write(&bad, "b\tstring\na\tstring\n").unwrap();
    let o = bin().args(["shapes", "digest"]).arg(&bad).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(output_text(&o).contains("line 2"), "{}", output_text(&o));
}

/// A PATH whose first folder holds an `agy` that prints a version.
fn fake_agy(dir: &Path) -> std::ffi::OsString {
    let bin_dir = dir.join("fake-bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let agy = bin_dir.join("agy");
    std::fs::write(&agy, "#!/bin/sh\necho 'agy 9.9.9 (test)'\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&agy, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut paths = vec![bin_dir];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).unwrap()
}

#[test]
fn a_sweep_records_both_listings_and_format_audit_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    generate_store(
        &root,
        &["--conversations", "8", "--seed", "3", "--scale", "0.05"],
    );
    let daemon = start_sim(&root, &["--no-fault-file"]);
    let mut listings = Vec::new();
    for tag in ["one", "two"] {
        let out = dir.path().join(tag);
        let mut c = sweep_command(&root, &out, &daemon.url);
        if tag == "one" {
            // An `agy` on PATH: its --version is recorded, with the note.
            c.env("PATH", fake_agy(dir.path()));
        }
        let o = c.output().unwrap();
        assert!(o.status.code().is_some(), "{}", output_text(&o));
        let m = read_manifest(&out);
        if tag == "one" {
            assert_eq!(m["installedAgyVersion"], "agy 9.9.9 (test)");
            let note = m["installedAgyVersionNote"].as_str().unwrap();
            assert!(note.contains("not proof"), "{note}");
        }
        let mut files = Vec::new();
        for (key, file) in [
            ("ordinary", "shapes-ordinary.tsv"),
            ("full", "shapes-full.tsv"),
        ] {
            let rec = &m["shapes"][key];
            assert_eq!(rec["file"], file);
            let (fp, n) = digest(&out.join(file));
            assert_eq!(rec["fingerprint"], fp);
            assert_eq!(rec["entries"], n);
            assert!(n > 10, "{key}: {n} entries");
            let bytes = std::fs::read(out.join(file)).unwrap();
            assert!(!bytes.ends_with(b"\n"), "no trailing newline");
            files.push(bytes);
        }
        listings.push(files);
    }
    assert_eq!(listings[0], listings[1], "same answers, same listings");

    // format-audit: a Markdown and a JSON record.
    let out = dir.path().join("one");
    let record = dir.path().join("audit.md");
    let o = bin()
        .arg("format-audit")
        .arg(out.join("manifest.json"))
        .arg("--out")
        .arg(&record)
        .arg("--against")
        .arg(out.join("shapes-ordinary.tsv"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let r: Value =
        serde_json::from_slice(&std::fs::read(record.with_extension("json")).unwrap()).unwrap();
    let m = read_manifest(&out);
    assert_eq!(r["selected"], m["counts"]["selected"]);
    assert_eq!(r["sqlite"], m["counts"]["sqlite"]);
    assert_eq!(
        r["shapes"]["ordinary"]["fingerprint"],
        m["shapes"]["ordinary"]["fingerprint"]
    );
    assert_eq!(r["against"]["added"], json!([]));
    assert_eq!(r["against"]["removed"], json!([]));
    for key in [
        "quickCheck",
        "userVersions",
        "schemas",
        "trajectories",
        "steps",
        "distinctStepTypes",
        "stepStatuses",
        "readerVersion",
        "installedAgyVersionNote",
    ] {
        assert!(!r[key].is_null(), "{key}");
    }
    assert_eq!(r["installedAgyVersion"], "agy 9.9.9 (test)");
    // A format-audit record serves as --against and as a shapes diff input.
    let d = diff_json(
        &record.with_extension("json"),
        &out.join("shapes-ordinary.tsv"),
    );
    assert_eq!(d, json!({"added": [], "removed": []}));
    let md = std::fs::read_to_string(&record).unwrap();
    assert!(md.contains("done / canceled / error steps"), "{md}");
}
