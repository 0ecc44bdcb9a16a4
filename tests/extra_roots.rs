//! Every root agy's users have (issue 48 item 4): on a generated home with
//! the store folders other tools read planted (`corpus generate --home
//! --extra-roots`), `list` and `doctor` find each one holding a
//! `conversations/` (a backup, the IDE channel's folder, the desktop app's
//! data folder, `$ANTIGRAVITY_APP_DATA_DIR`), say what it is (its surface,
//! or "unknown surface"), show a backup's conversations as copies of the
//! live root's, and never write to them; `audit-sweep --root` takes one;
//! id resolution for `sync` and `export-offline` is unchanged (a backup
//! never shadows a live root). Every store file is byte-identical after
//! every command, and no `-shm`/`-journal` appears.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_corpus::corpus::plants::{APP_DATA_DIR, APP_DATA_ENV_DIR, BACKUP_DIR, IDE_CHANNEL_DIR};
use agy_corpus::corpus::{HomePlants, HOME_CLI_ROOT};
use common::{bin, home_cli_sim, home_store_digests, output_text, planted_home};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const EXTRA: HomePlants = HomePlants {
    troubles: false,
    extra_roots: true,
};

fn in_home(home: &Path) -> Command {
    let mut c = bin();
    c.env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env("ANTIGRAVITY_APP_DATA_DIR", home.join(APP_DATA_ENV_DIR));
    c
}

fn json_lines(out: &std::process::Output) -> Vec<Value> {
    assert_eq!(out.status.code(), Some(0), "{}", output_text(out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn ids(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

#[test]
fn list_and_doctor_name_every_store_folder_and_write_none() {
    let (home, planted) = planted_home("extra_roots_list", 31, EXTRA);
    let p = &planted["extraRoots"];
    let cli = home.join(HOME_CLI_ROOT);
    let before = home_store_digests(&home);

    let rows = json_lines(&in_home(&home).args(["list", "--json"]).output().unwrap());
    let of = |dir: &str| -> Vec<&Value> {
        let root = home.join(dir).display().to_string();
        rows.iter().filter(|r| r["root"] == root.as_str()).collect()
    };
    // (folder, kind, surface, planted ids)
    for (dir, kind, surface, key) in [
        (BACKUP_DIR, "backup", "unknown surface", "backup"),
        (IDE_CHANNEL_DIR, "ide-channel", "ide", "ideChannel"),
        (APP_DATA_DIR, "app-data", "unknown surface", "appData"),
        (
            APP_DATA_ENV_DIR,
            "app-data-env",
            "unknown surface",
            "appDataEnv",
        ),
    ] {
        let found = of(dir);
        let mut got: Vec<String> = found
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect();
        got.sort();
        assert_eq!(got, ids(&p[key]["ids"]), "{dir}");
        for r in &found {
            assert_eq!(r["store"], kind, "{dir}");
            assert_eq!(r["surface"], surface, "{dir}");
        }
    }
    // a backup's conversations are copies of the live root's (same id)
    for r in of(BACKUP_DIR) {
        assert_eq!(r["copyOf"], cli.display().to_string().as_str());
        assert!(
            rows.iter()
                .any(|l| l["id"] == r["id"] && l["root"] == cli.display().to_string().as_str()),
            "the live conversation is listed too"
        );
    }
    for r in of(IDE_CHANNEL_DIR) {
        assert!(r["copyOf"].is_null());
    }
    // a live root's rows carry no store kind
    assert!(of(HOME_CLI_ROOT).iter().all(|r| r.get("store").is_none()));

    // text: the folder named on stderr with what it is; each row says so
    let out = in_home(&home).arg("list").output().unwrap();
    let text = output_text(&out);
    assert!(text.contains("a backup of agy's store"), "{text}");
    assert!(text.contains("unknown surface"), "{text}");
    assert!(
        text.contains(&format!("a copy of {}'s", cli.display())),
        "{text}"
    );
    assert!(text.contains("audit-sweep --root"), "{text}");

    // doctor: one block per folder, never actionable for them
    let out = in_home(&home).args(["doctor", "--json"]).output().unwrap();
    let v: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", output_text(&out)));
    let folders = v["storeFolders"].as_array().unwrap();
    let kinds: Vec<&str> = folders
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["backup", "ide-channel", "app-data-env", "app-data"]);
    let backup = &folders[0];
    assert_eq!(backup["surface"], "unknown surface");
    assert_eq!(backup["copies"], 3);
    assert_eq!(backup["copyOf"][0], cli.display().to_string().as_str());
    assert_eq!(folders[1]["surface"], "ide");
    assert_eq!(folders[1]["copies"], 0);
    let out = in_home(&home).arg("doctor").output().unwrap();
    let text = output_text(&out);
    assert!(
        text.contains("3 copies of a live root's conversation"),
        "{text}"
    );
    assert!(text.contains("not a root: never written"), "{text}");

    // nothing written anywhere: no sidecar in any folder, no -shm/-journal
    assert_eq!(home_store_digests(&home), before);
    for dir in [BACKUP_DIR, IDE_CHANNEL_DIR, APP_DATA_DIR, APP_DATA_ENV_DIR] {
        for e in std::fs::read_dir(home.join(dir).join("conversations")).unwrap() {
            let n = e.unwrap().file_name().into_string().unwrap();
            assert!(
                n.ends_with(".db") || n.ends_with(".pb") || n.ends_with(".db-wal"),
                "{n}"
            );
        }
    }
}

#[test]
fn folders_are_found_only_where_the_sources_say() {
    let (home, _) = planted_home("extra_roots_where", 32, EXTRA);
    // without $ANTIGRAVITY_APP_DATA_DIR that folder is not looked at
    let rows = json_lines(
        &in_home(&home)
            .env_remove("ANTIGRAVITY_APP_DATA_DIR")
            .args(["list", "--json"])
            .output()
            .unwrap(),
    );
    let env_root = home.join(APP_DATA_ENV_DIR).display().to_string();
    assert!(rows.iter().all(|r| r["root"] != env_root.as_str()));
    assert!(rows.iter().any(|r| r["store"] == "app-data"));
    // $XDG_CONFIG_HOME moves the desktop app's data folder (as for its logs)
    let rows = json_lines(
        &in_home(&home)
            .env("XDG_CONFIG_HOME", home.join("elsewhere"))
            .args(["list", "--json"])
            .output()
            .unwrap(),
    );
    assert!(rows.iter().all(|r| r["store"] != "app-data"));
    // a root the user names is all they asked for
    let cli = home.join(HOME_CLI_ROOT);
    let rows = json_lines(
        &in_home(&home)
            .args(["list", "--json", "--root"])
            .arg(&cli)
            .output()
            .unwrap(),
    );
    assert!(rows.iter().all(|r| r.get("store").is_none()));
    assert!(!rows.is_empty());
    // an empty conversations/ is no store
    let backup = home.join(BACKUP_DIR).join("conversations");
    for e in std::fs::read_dir(&backup).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    let rows = json_lines(&in_home(&home).args(["list", "--json"]).output().unwrap());
    assert!(rows.iter().all(|r| r["store"] != "backup"));
}

#[test]
fn a_backup_never_shadows_the_live_root_and_audit_sweep_takes_it() {
    let (home, planted) = planted_home("extra_roots_resolve", 33, EXTRA);
    let cli = home.join(HOME_CLI_ROOT);
    let backup = home.join(BACKUP_DIR);
    let id = ids(&planted["extraRoots"]["backup"]["ids"])[0].clone();
    let sim = home_cli_sim(&home);
    let before = home_store_digests(&home);

    // sync ID: the live root's conversation, its sidecar beside it
    let out = in_home(&home).args(["sync", &id]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    let side = |root: &Path| {
        root.join("conversations")
            .join(format!("{id}.trajectory.json"))
    };
    assert!(side(&cli).is_file());
    assert!(!side(&backup).exists(), "a backup is never written");

    // export-offline ID reads the live root's source
    let by_id = in_home(&home)
        .args(["export-offline", &id, "--format", "md", "--no-tree"])
        .output()
        .unwrap();
    let live = cli.join("conversations").join(format!("{id}.db"));
    let by_path = in_home(&home)
        .args(["export-offline", "--format", "md", "--no-tree"])
        .arg(&live)
        .output()
        .unwrap();
    assert_eq!(by_id.status.code(), Some(0), "{}", output_text(&by_id));
    assert_eq!(by_id.stdout, by_path.stdout);

    // audit-sweep --root takes the backup (read, never written)
    let out_dir = home.join("sweep-of-backup");
    let _ = std::fs::remove_dir_all(&out_dir);
    let out = common::sweep_command(&backup, &out_dir, &sim.url())
        .env("HOME", &home)
        .output()
        .unwrap();
    let m = common::read_manifest(&out_dir);
    assert_eq!(
        m["sessions"].as_array().map(Vec::len),
        Some(3),
        "{}",
        output_text(&out)
    );
    assert!(!side(&backup).exists());
    assert_eq!(home_store_digests(&home), before);
}
