//! Both agy stores found without flags (issue 34 items 1-3): on a generated
//! two-root home served by the simulated CLI daemon and the simulated IDE
//! daemon (IDE mode: logs in HOME/.config/Antigravity/logs, CSRF required),
//! `sync ID` resolves the id across the roots and discovers each root's
//! daemon and token, an explicit `X.pb` with a sibling `X.db` verifies the
//! `.db`, a wrong token is an authentication error that names the root and
//! never echoes the body, and `list` shows both roots with the sidecars'
//! states. Every source is byte-identical after every command.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_corpus::corpus::{HOME_CLI_ROOT, HOME_IDE_ROOT};
use common::{
    bin, generated_home, home_cli_sim, home_ide_sim, home_source_digests, output_text, root_ids,
};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn in_home(home: &Path) -> Command {
    let mut c = bin();
    c.env("HOME", home).env_remove("XDG_CONFIG_HOME");
    c
}

#[test]
fn sync_and_list_across_a_cli_and_an_ide_root() {
    let (home, _) = generated_home("two_roots_home", 9, 0.0);
    let cli = home.join(HOME_CLI_ROOT);
    let ide = home.join(HOME_IDE_ROOT);
    let cli_sim = home_cli_sim(&home);
    let ide_sim = home_ide_sim(&home);
    let before = home_source_digests(&home);

    // an id of each root, resolved across the default roots
    let ide_id = root_ids(&ide, "db")[0].clone();
    let cli_id = root_ids(&cli, "db")[0].clone();
    for id in [&ide_id, &cli_id] {
        let out = in_home(&home).args(["sync", id]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    }
    assert_eq!(home_source_digests(&home), before);

    // SQLite wins for an explicit X.pb whose X.db exists
    let db = root_ids(&ide, "db");
    let shadowed = root_ids(&ide, "pb")
        .into_iter()
        .find(|i| db.contains(i))
        .expect("a .pb shadowed by its .db");
    let pb = ide.join("conversations").join(format!("{shadowed}.pb"));
    let out = in_home(&home).arg("sync").arg(&pb).output().unwrap();
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("SQLite wins"), "{text}");
    assert_eq!(home_source_digests(&home), before);

    // a wrong token: an authentication error naming the root, no body echoed
    let out = in_home(&home)
        .args(["sync", &ide_id, "--csrf-token", "wrong"])
        .output()
        .unwrap();
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("authentication error"), "{text}");
    assert!(text.contains(&ide.display().to_string()), "{text}");
    assert!(!text.contains("invalid x-codeium-csrf-token"), "{text}");

    // list: both roots, newest first, the sidecars' states
    let out = in_home(&home).args(["list", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    let rows: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // 20 planned in each root, and the CLI root's 6 subagent family members
    assert_eq!(rows.len(), 46);
    for key in ["id", "root", "surface", "format", "path", "sidecar"] {
        assert!(rows.iter().all(|r| r.get(key).is_some()), "{key}");
    }
    let state = |id: &str| {
        rows.iter()
            .find(|r| r["id"] == id)
            .map(|r| {
                (
                    r["surface"].as_str().unwrap().to_string(),
                    r["sidecar"].as_str().unwrap().to_string(),
                )
            })
            .unwrap()
    };
    assert_eq!(state(&ide_id).0, "ide");
    assert_eq!(state(&cli_id).0, "cli");
    assert!(state(&ide_id).1.starts_with("verified"));
    assert!(state(&cli_id).1.starts_with("verified"));
    assert!(state(&shadowed).1.starts_with("verified"));
    let untouched = root_ids(&cli, "db")
        .into_iter()
        .find(|i| *i != cli_id)
        .unwrap();
    assert_eq!(state(&untouched).1, "none");
    let modified: Vec<u64> = rows
        .iter()
        .map(|r| r["modified"].as_u64().unwrap())
        .collect();
    assert!(modified.windows(2).all(|w| w[0] >= w[1]), "newest first");
    // one root only, and implicit/ on request
    let out = in_home(&home)
        .args(["list", "--json", "--include-implicit", "--root"])
        .arg(&ide)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.lines().all(|l| l.contains("\"surface\":\"ide\"")),
        "{text}"
    );
    assert!(text.contains("\"implicit\":true"), "{text}");
    // audit-sweep: one root per run; without --root it names both and asks
    let out = in_home(&home)
        .args(["audit-sweep", "--quiet", "--out"])
        .arg(home.join("sweep-none"))
        .output()
        .unwrap();
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains(&format!("{} (cli)", cli.display())), "{text}");
    assert!(text.contains(&format!("{} (ide)", ide.display())), "{text}");
    // the IDE root swept with its daemon and token found in the IDE's logs
    let out = in_home(&home)
        .args(["audit-sweep", "--quiet", "--root"])
        .arg(&ide)
        .arg("--out")
        .arg(home.join("sweep-ide"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    // a missing explicit root is a usage error
    let out = in_home(&home)
        .args(["list", "--root"])
        .arg(home.join("nope"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", output_text(&out));
    assert_eq!(home_source_digests(&home), before);
    cli_sim.stop();
    ide_sim.stop();
}

fn doctor(home: &Path, root: &Path, env: Option<(&str, &str)>) -> (i32, Value) {
    let mut c = in_home(home);
    c.args(["doctor", "--json", "--root"]).arg(root);
    if let Some((k, v)) = env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let v: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", output_text(&out)));
    (out.status.code().unwrap(), v)
}

/// `doctor --json` as issue 34 documents it: `{"healthy": bool, "roots":
/// [{"path", "surface", "daemon": {"url", "reachable"}, "csrf", "sidecars":
/// {"fresh", "stale", "total"}, "counts": {...}}]}` (more keys allowed).
fn the_documented_shape(v: &Value) {
    assert!(v["healthy"].is_boolean(), "{v:#}");
    let roots = v["roots"].as_array().expect("roots");
    assert!(!roots.is_empty());
    for r in roots {
        assert!(r["path"].is_string(), "{r:#}");
        assert!(["cli", "ide"].contains(&r["surface"].as_str().unwrap()));
        assert!(r["daemon"]["url"].is_string() || r["daemon"]["url"].is_null());
        assert!(r["daemon"]["reachable"].is_boolean(), "{r:#}");
        assert!(r.get("csrf").is_some(), "{r:#}");
        for k in ["fresh", "stale", "total"] {
            assert!(r["sidecars"][k].is_u64(), "{k}: {r:#}");
        }
        assert!(r["counts"].is_object(), "{r:#}");
    }
}

#[test]
fn doctor_healthy_and_each_actionable_state() {
    let (home, _) = generated_home("two_roots_doctor", 13, 0.0);
    let ide = home.join(HOME_IDE_ROOT);
    let sim = home_ide_sim(&home);
    let before = home_source_digests(&home);

    // missing sidecars: actionable
    let (code, v) = doctor(&home, &ide, None);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["healthy"], false);
    the_documented_shape(&v);
    assert_eq!(
        v["roots"][0]["sidecars"]["missing"],
        v["roots"][0]["sidecars"]["total"]
    );
    let r = &v["roots"][0];
    assert_eq!(r["surface"], "ide");
    assert_eq!(r["daemon"]["reachable"], true);
    assert_eq!(r["csrf"], true);
    assert_eq!(r["sidecars"]["fresh"], 0);

    // every conversation synced: healthy
    let mut all = root_ids(&ide, "db");
    all.extend(root_ids(&ide, "pb"));
    all.sort();
    all.dedup();
    for id in &all {
        let out = in_home(&home).args(["sync", id]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    }
    let (code, v) = doctor(&home, &ide, None);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["roots"][0]["sidecars"]["fresh"], all.len());
    assert_eq!(v["roots"][0]["sidecars"]["total"], all.len());
    the_documented_shape(&v);
    let c = &v["roots"][0]["counts"];
    assert_eq!(
        c["verified"].as_u64().unwrap() + c["verifiedSourceOnly"].as_u64().unwrap(),
        all.len() as u64,
        "{v:#}"
    );

    // the installed agy (a fake `agy` on PATH printing a version): the
    // profile's release is compatible, another one is version skew
    let fake = home.join("fake-bin");
    std::fs::create_dir_all(&fake).unwrap();
    let release = v["agyVersion"]["profile"].as_str().unwrap().to_string();
    let path = format!(
        "{}:{}",
        fake.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (printed, code_wanted, skew) in [(release.as_str(), 0, false), ("0.0.1", 1, true)] {
        let agy = fake.join("agy");
        std::fs::write(&agy, format!("#!/bin/sh\necho \"agy version {printed}\"\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&agy, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (code, v) = doctor(&home, &ide, Some(("PATH", &path)));
        assert_eq!(code, code_wanted, "{v:#}");
        assert_eq!(v["healthy"], !skew);
        assert_eq!(v["agyVersion"]["skew"], skew, "{v:#}");
        assert_eq!(v["agyVersion"]["installed"], printed);
        let out = in_home(&home)
            .env("PATH", &path)
            .args(["doctor", "--root"])
            .arg(&ide)
            .output()
            .unwrap();
        let text = output_text(&out);
        assert_eq!(out.status.code(), Some(code_wanted), "{text}");
        assert!(
            text.contains(&format!("agy version: {printed} (skew vs agy")) == skew,
            "{text}"
        );
    }

    // an unreachable pinned URL: actionable
    let (code, v) = doctor(
        &home,
        &ide,
        Some(("ANTIGRAVITY_DAEMON_URL", "http://127.0.0.1:1")),
    );
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(v["roots"][0]["daemon"]["state"], "unreachable pin");

    // a daemon simply not running: informational
    sim.stop();
    let (code, v) = doctor(&home, &ide, None);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["roots"][0]["daemon"]["reachable"], false);

    // a stale sidecar (its payload no longer the attested one): actionable
    let side = ide
        .join("conversations")
        .join(format!("{}.trajectory.json", all[0]));
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&side).unwrap()).unwrap();
    doc["trajectoryId"] = Value::String("edited".into());
    std::fs::write(&side, serde_json::to_vec(&doc).unwrap()).unwrap();
    let (code, v) = doctor(&home, &ide, None);
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(v["roots"][0]["sidecars"]["stale"], 1);
    // list --check shows it stale, and counts legacy steps after decryption
    let out = in_home(&home)
        .args(["list", "--check", "--json", "--root"])
        .arg(&ide)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    let rows: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let stale: Vec<&Value> = rows.iter().filter(|r| r["fresh"] == false).collect();
    assert_eq!(stale.len(), 1, "{rows:?}");
    assert_eq!(stale[0]["id"], all[0].as_str());
    assert_eq!(
        rows.iter().filter(|r| r["fresh"] == true).count(),
        all.len() - 1
    );
    assert!(rows.iter().all(|r| r["steps"].is_u64()), "{rows:?}");
    assert_eq!(home_source_digests(&home), before);
}

/// A conversation this reader's rules refuse offline has no sidecar after
/// `sync` (it is unknown, nothing is attested): doctor counts it as unknown
/// and `refused`, not as a missing sidecar, so a fully synced store with
/// near-misses is healthy; a qualifying conversation without a sidecar is
/// still missing.
#[test]
fn doctor_counts_refused_conversations_as_unknown_not_missing() {
    let (home, _) = generated_home("two_roots_doctor_refused", 21, 0.4);
    let ide = home.join(HOME_IDE_ROOT);
    let sim = home_ide_sim(&home);
    let before = home_source_digests(&home);
    let mut all = root_ids(&ide, "db");
    all.extend(root_ids(&ide, "pb"));
    all.sort();
    all.dedup();
    let mut unknown = 0u64;
    let mut verified = Vec::new();
    for id in &all {
        let out = in_home(&home).args(["sync", id]).output().unwrap();
        match out.status.code() {
            Some(0) => verified.push(id.clone()),
            Some(3) => unknown += 1,
            c => panic!("sync {id}: {c:?}: {}", output_text(&out)),
        }
    }
    assert!(unknown > 0, "the plan has near-misses");
    let (code, v) = doctor(&home, &ide, None);
    let r = &v["roots"][0];
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(r["sidecars"]["refused"], unknown, "{v:#}");
    assert_eq!(r["sidecars"]["missing"], 0, "{v:#}");
    assert_eq!(r["counts"]["unknown"], unknown, "{v:#}");
    assert_eq!(r["sidecars"]["fresh"], verified.len(), "{v:#}");

    // a qualifying conversation's sidecar removed: missing, actionable
    let side = ide
        .join("conversations")
        .join(format!("{}.trajectory.json", verified[0]));
    std::fs::remove_file(&side).unwrap();
    let (code, v) = doctor(&home, &ide, None);
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(v["roots"][0]["sidecars"]["missing"], 1, "{v:#}");
    assert_eq!(v["roots"][0]["sidecars"]["refused"], unknown, "{v:#}");

    // a verified-source-only attestation whose source-only record no
    // longer matches the source (the payload digest excludes agyReader, so
    // only the record tells): stale, as `watch` and `sync --recheck` judge it
    let with_record = verified[1..]
        .iter()
        .map(|id| {
            ide.join("conversations")
                .join(format!("{id}.trajectory.json"))
        })
        .find(|p| {
            let d: Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
            d["agyReader"]["completeness"]["verdict"] == "verified-source-only"
        })
        .expect("the plan has a source-only conversation");
    let mut d: Value = serde_json::from_slice(&std::fs::read(&with_record).unwrap()).unwrap();
    d["agyReader"]["completeness"]["sourceOnly"][0]["occurrences"] = Value::from(999);
    std::fs::write(&with_record, serde_json::to_vec(&d).unwrap()).unwrap();
    let (code, v) = doctor(&home, &ide, None);
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(v["roots"][0]["sidecars"]["stale"], 1, "{v:#}");
    assert_eq!(home_source_digests(&home), before);
    sim.stop();
}
