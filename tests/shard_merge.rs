//! Sweeps that span many machines (issue 33 items 3 to 5), through the real
//! binary against the simulated daemon: a conversation's shard follows its
//! file id (adding one moves only itself), `--shard auto` reads the job
//! runner's environment, and `manifest merge` of the shards equals the
//! unsharded sweep session by session, leaves a missing shard incomplete and
//! refuses overlap; `audit-qualify`, `report` and `audit-diff` accept the
//! merged manifest.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::pipeline::shard::shard_of;
use common::{bin, generate_store, output_text, read_manifest, start_sim, sweep_command};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn ids(m: &Value) -> Vec<String> {
    m["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["fileId"].as_str().unwrap().to_string())
        .collect()
}

/// Sweeps `shard` (`i/n`, or none) of `root` into `out`; returns its manifest.
fn sweep(root: &Path, out: &Path, url: &str, extra: &[&str]) -> Value {
    let o = sweep_command(root, out, url).args(extra).output().unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 3 | 4)),
        "{}",
        output_text(&o)
    );
    let m = read_manifest(out);
    assert_eq!(m["complete"], true, "{}", output_text(&o));
    m
}

fn merge(shards: &[PathBuf], out: &Path) -> std::process::Output {
    bin()
        .args(["manifest", "merge"])
        .args(shards)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn stable_shards_and_a_merge_equal_to_the_unsharded_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    generate_store(
        &root,
        &["--conversations", "12", "--seed", "5", "--scale", "0.05"],
    );
    let daemon = start_sim(&root, &["--no-fault-file"]);

    // The whole store, unsharded.
    let whole_out = dir.path().join("whole");
    let whole = sweep(&root, &whole_out, &daemon.url, &[]);
    let all = ids(&whole);
    assert_eq!(all.len(), 12);

    // Stable shards: set one conversation aside, shard 3 ways, bring it back,
    // shard again: every other conversation stays in its shard.
    let moved = all[5].clone();
    let conversations = root.join("conversations");
    let aside = dir.path().join("aside");
    std::fs::create_dir(&aside).unwrap();
    let files: Vec<PathBuf> = std::fs::read_dir(&conversations)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&moved))
        .collect();
    assert!(!files.is_empty());
    for f in &files {
        std::fs::rename(f, aside.join(f.file_name().unwrap())).unwrap();
    }
    let shard_map = |tag: &str| -> BTreeMap<String, usize> {
        let mut map = BTreeMap::new();
        for i in 1..=3 {
            let out = dir.path().join(format!("{tag}-{i}"));
            let m = sweep(&root, &out, &daemon.url, &["--shard", &format!("{i}/3")]);
            assert_eq!(m["shard"], format!("{i}/3"));
            assert_eq!(m["shardBy"], "sha256-fileid");
            for id in ids(&m) {
                assert!(map.insert(id, i).is_none(), "a session in two shards");
            }
        }
        map
    };
    let before = shard_map("before");
    for f in &files {
        std::fs::rename(aside.join(f.file_name().unwrap()), f).unwrap();
    }
    let after = shard_map("after");
    assert_eq!(before.len(), 11);
    assert_eq!(after.len(), 12);
    for (id, shard) in &before {
        assert_eq!(after.get(id), Some(shard), "{id} moved");
        assert_eq!(*shard, shard_of(id, 3), "the documented hash");
    }
    assert_eq!(after[&moved], shard_of(&moved, 3));

    // Four shards merged equal the unsharded sweep, session by session.
    let mut shards = Vec::new();
    for i in 1..=4 {
        let out = dir.path().join(format!("four-{i}"));
        sweep(&root, &out, &daemon.url, &["--shard", &format!("{i}/4")]);
        shards.push(out.join("manifest.json"));
    }
    let merged_path = dir.path().join("merged.json");
    let o = merge(&shards, &merged_path);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let merged: Value = serde_json::from_slice(&std::fs::read(&merged_path).unwrap()).unwrap();
    assert_eq!(merged["complete"], true);
    assert_eq!(merged["manifestVersion"], 5);
    assert_eq!(merged["sessions"], whole["sessions"], "session by session");
    for key in [
        "counts",
        "countsByProfile",
        "countsByFormat",
        "profiles",
        "root",
    ] {
        assert_eq!(merged[key], whole[key], "{key}");
    }
    assert_eq!(merged["merged"]["shardCount"], 4);
    // The shards' shape listings merge into the unsharded sweep's.
    for key in ["ordinary", "full"] {
        for field in ["fingerprint", "entries", "documents"] {
            assert_eq!(merged["shapes"][key][field], whole["shapes"][key][field]);
        }
    }
    for f in ["shapes-ordinary.tsv", "shapes-full.tsv"] {
        assert_eq!(
            std::fs::read(dir.path().join(format!("merged.{f}"))).unwrap(),
            std::fs::read(whole_out.join(f)).unwrap(),
            "{f}"
        );
    }

    // audit-qualify, report and audit-diff accept the merged manifest.
    let o = bin()
        .arg("audit-qualify")
        .arg(&merged_path)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let report = dir.path().join("report.md");
    let o = bin()
        .arg("report")
        .arg(&merged_path)
        .arg("--out")
        .arg(&report)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let o = bin()
        .arg("audit-diff")
        .arg(whole_out.join("manifest.json"))
        .arg(&merged_path)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let d: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(d["regressed"], 0);
    let same = d["counts"]["still-verified"].as_u64().unwrap()
        + d["counts"]["unchanged"].as_u64().unwrap();
    assert_eq!(same, 12, "{d:#}");

    // A missing shard: written, complete: false, exit 1.
    let partial = dir.path().join("partial.json");
    let o = merge(&shards[..3], &partial);
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    let m: Value = serde_json::from_slice(&std::fs::read(&partial).unwrap()).unwrap();
    assert_eq!(m["complete"], false);
    assert_eq!(m["merged"]["missing"], serde_json::json!([4]));
    let o = bin().arg("audit-qualify").arg(&partial).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));

    // Overlap: a shard that also holds another shard's session is refused,
    // naming both files, and nothing is written.
    let donor: Value = serde_json::from_slice(&std::fs::read(&shards[0]).unwrap()).unwrap();
    let mut greedy: Value = serde_json::from_slice(&std::fs::read(&shards[1]).unwrap()).unwrap();
    let stolen = donor["sessions"][0].clone();
    let sessions = greedy["sessions"].as_array_mut().unwrap();
    sessions.push(stolen);
    sessions.sort_by(|a, b| a["fileId"].as_str().cmp(&b["fileId"].as_str()));
    let greedy = common::recounted(greedy);
    let greedy_path = dir.path().join("greedy.json");
    std::fs::write(&greedy_path, serde_json::to_vec_pretty(&greedy).unwrap()).unwrap();
    let refused = dir.path().join("refused.json");
    let o = merge(
        &[
            shards[0].clone(),
            greedy_path.clone(),
            shards[2].clone(),
            shards[3].clone(),
        ],
        &refused,
    );
    // Under the hash assignment the stolen session is in the wrong shard:
    // the strict reading of the greedy shard refuses it, naming its file.
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("is not of shard 2/4"), "{text}");
    assert!(text.contains(&greedy_path.display().to_string()), "{text}");
    assert!(!refused.exists());
    // Conflicting shard sets: 1/4 with a 1/3.
    let o = merge(
        &[shards[0].clone(), dir.path().join("after-2/manifest.json")],
        &refused,
    );
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("conflicting shard sets"), "{text}");
    assert!(!refused.exists());
}

#[test]
fn shard_auto_reads_the_job_runner_and_an_empty_shard_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    generate_store(
        &root,
        &["--conversations", "3", "--seed", "5", "--scale", "0.05"],
    );
    let daemon = start_sim(&root, &["--no-fault-file"]);
    let clean = |c: &mut std::process::Command| {
        c.env_remove("JOB_COMPLETION_INDEX")
            .env_remove("CI_NODE_INDEX")
            .env_remove("CI_NODE_TOTAL");
    };
    // Kubernetes: 0-based index, count from --shard-count.
    let out = dir.path().join("k8s");
    let mut c = sweep_command(&root, &out, &daemon.url);
    clean(&mut c);
    let o = c
        .args(["--shard", "auto", "--shard-count", "2"])
        .env("JOB_COMPLETION_INDEX", "1")
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 3 | 4)),
        "{}",
        output_text(&o)
    );
    assert_eq!(read_manifest(&out)["shard"], "2/2");
    // GitLab: 1-based index and total.
    let out = dir.path().join("gitlab");
    let mut c = sweep_command(&root, &out, &daemon.url);
    clean(&mut c);
    let o = c
        .args(["--shard", "auto"])
        .env("CI_NODE_INDEX", "1")
        .env("CI_NODE_TOTAL", "2")
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 3 | 4)),
        "{}",
        output_text(&o)
    );
    assert_eq!(read_manifest(&out)["shard"], "1/2");
    // Missing or contradictory variables: usage errors, nothing written.
    for (env, extra) in [
        (vec![], vec!["--shard-count", "2"]),
        (vec![("JOB_COMPLETION_INDEX", "0")], vec![]),
        (
            vec![("JOB_COMPLETION_INDEX", "2")],
            vec!["--shard-count", "2"],
        ),
        (vec![("CI_NODE_INDEX", "1")], vec![]),
        (
            vec![("CI_NODE_INDEX", "1"), ("CI_NODE_TOTAL", "2")],
            vec!["--shard-count", "3"],
        ),
        (
            vec![
                ("JOB_COMPLETION_INDEX", "0"),
                ("CI_NODE_INDEX", "2"),
                ("CI_NODE_TOTAL", "2"),
            ],
            vec!["--shard-count", "2"],
        ),
    ] {
        let out = dir.path().join("refused");
        let mut c = sweep_command(&root, &out, &daemon.url);
        clean(&mut c);
        c.args(["--shard", "auto"]).args(&extra);
        for (k, v) in &env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(2),
            "{env:?} {extra:?}: {}",
            output_text(&o)
        );
        assert!(!out.exists());
    }
    // --shard-count goes with auto only.
    let o = sweep_command(&root, &dir.path().join("x"), &daemon.url)
        .args(["--shard", "1/2", "--shard-count", "2"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));

    // An empty shard: a shard index no conversation hashes to.
    let whole = dir.path().join("whole");
    let all = ids(&sweep(&root, &whole, &daemon.url, &[]));
    let n = 16;
    let empty = (1..=n)
        .find(|i| all.iter().all(|id| shard_of(id, n) != *i))
        .unwrap();
    let out = dir.path().join("empty");
    let m = sweep(
        &root,
        &out,
        &daemon.url,
        &["--shard", &format!("{empty}/{n}")],
    );
    assert_eq!(m["emptyShard"], true);
    assert_eq!(m["counts"]["selected"], 0);
    assert!(m["readerProfiles"].as_array().is_some_and(|p| p.len() == 2));
    let full = sweep(
        &root,
        &dir.path().join("full"),
        &daemon.url,
        &["--shard", &format!("{}/{n}", shard_of(&all[0], n))],
    );
    assert!(full.get("emptyShard").is_none());
}
