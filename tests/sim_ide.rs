//! The simulated daemon's IDE mode and the generated two-root home
//! (issue 34 item 5): the IDE's logs announce the port and the CSRF token
//! in the IDE's line formats, and the daemon refuses requests without the
//! token (401) or with another one (403).

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

use agy_corpus::corpus::{generate_home, PlanOptions, HOME_CLI_ROOT, HOME_IDE_ROOT};
use agy_corpus::sim::{DaemonSim, SimOptions};
use std::path::{Path, PathBuf};

const SVC: &str = "exa.language_server_pb.LanguageServerService";

fn home(name: &str) -> PathBuf {
    let h = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&h);
    generate_home(
        &h,
        &PlanOptions {
            conversations: 20,
            seed: 5,
            near_miss_rate: 0.0,
            fault_rate: 0.0,
            scale: 0.05,
        },
        false,
    )
    .unwrap();
    h
}

fn ids(root: &Path) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(root.join("conversations"))
        .unwrap()
        .map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            let (id, ext) = name.split_once('.').unwrap();
            (id.to_string(), ext.to_string())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_generated_home_has_a_cli_and_an_ide_root() {
    let h = home("sim_ide_home");
    let cli = h.join(HOME_CLI_ROOT);
    let ide = h.join(HOME_IDE_ROOT);
    assert!(cli.join("cli.log").is_file() && cli.join("jetski_state.pbtxt").is_file());
    assert!(!ide.join("cli.log").exists() && ide.join("antigravity_state.pbtxt").is_file());
    for root in [&cli, &ide] {
        let files = ids(root);
        // a legacy .pb, and a .pb shadowed by a .db of the same id
        let pb: Vec<&String> = files
            .iter()
            .filter(|(_, e)| e == "pb")
            .map(|(i, _)| i)
            .collect();
        assert!(pb.len() >= 2, "{files:?}");
        assert!(pb
            .iter()
            .any(|i| files.contains(&((*i).clone(), "db".into()))));
        assert!(pb
            .iter()
            .any(|i| !files.contains(&((*i).clone(), "db".into()))));
    }
    let cli_ids: Vec<String> = ids(&cli).into_iter().map(|(i, _)| i).collect();
    assert!(ids(&ide).iter().all(|(i, _)| !cli_ids.contains(i)));
}

#[test]
fn ide_mode_announces_port_and_token_and_requires_the_token() {
    let h = home("sim_ide_mode");
    let ide = h.join(HOME_IDE_ROOT);
    let logs = h.join(".config/Antigravity/logs");
    let mut o = SimOptions::new(&ide);
    o.ide_logs = Some(logs.clone());
    let sim = DaemonSim::start(o).unwrap();
    let token = sim.csrf_token().expect("IDE mode always has a token");
    let ls = std::fs::read_to_string(logs.join("language_server.log")).unwrap();
    let lines: Vec<&str> = ls.lines().collect();
    assert_eq!(lines.len(), 2, "{ls}");
    assert!(
        lines[0].starts_with('I')
            && lines[0].contains("] Language server listening on random port at ")
    );
    assert!(lines[0].ends_with(" for HTTPS (gRPC)"), "{ls}");
    assert!(
        lines[1].ends_with(&format!("at {} for HTTP", sim.port())),
        "{ls}"
    );
    let main = std::fs::read_to_string(logs.join("main.log")).unwrap();
    assert!(
        main.starts_with('[') && main.contains("] [info]  Spawning: "),
        "{main}"
    );
    assert!(main.contains(&format!(" --csrf_token {token} ")), "{main}");
    assert!(
        !ide.join("cli.log").exists(),
        "IDE mode leaves cli.log alone"
    );

    let (id, _) = ids(&ide).into_iter().next().unwrap();
    let c = reqwest::blocking::Client::builder()
        .no_proxy()
        .build()
        .unwrap();
    let post = |tok: Option<&str>| {
        let mut r = c
            .post(format!("{}/{SVC}/LoadTrajectory", sim.url()))
            .header("content-type", "application/json")
            .body(format!("{{\"cascadeId\":\"{id}\"}}"));
        if let Some(t) = tok {
            r = r.header("x-codeium-csrf-token", t);
        }
        r.send().unwrap().status().as_u16()
    };
    assert_eq!(post(None), 401);
    assert_eq!(post(Some("not-the-token")), 403);
    assert_eq!(post(Some(&token)), 200);
    sim.stop();
}
