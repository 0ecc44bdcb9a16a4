//! The service examples in `deploy/` (issue 35 item 5): the systemd user
//! units parse (every section and key one systemd knows; `systemd-analyze
//! verify` when it is installed, with no warning about our files) and run an
//! `agy-audit watch` command line the binary's own parser accepts; the
//! launchd plist is a well-formed property list (python3's plistlib when
//! available, else a structural check) whose ProgramArguments do the same.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

type Unit = BTreeMap<String, Vec<(String, String)>>;

/// A unit file's sections and their `Key=Value` lines (comments dropped).
fn parse_unit(text: &str, name: &str) -> Unit {
    let mut unit = Unit::new();
    let mut section: Option<String> = None;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            assert!(
                !unit.contains_key(s),
                "{name}:{}: section [{s}] twice",
                n + 1
            );
            unit.insert(s.to_string(), Vec::new());
            section = Some(s.to_string());
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("{name}:{}: not Key=Value: {line}", n + 1));
        let s = section
            .as_ref()
            .unwrap_or_else(|| panic!("{name}:{}: a key before any section", n + 1));
        unit.get_mut(s)
            .unwrap()
            .push((k.trim().to_string(), v.trim().to_string()));
    }
    unit
}

/// The keys each section may use here (a subset of systemd.unit(5),
/// systemd.service(5), systemd.exec(5) and systemd.timer(5)).
fn known(section: &str) -> &'static [&'static str] {
    match section {
        "Unit" => &["Description", "Documentation", "After", "Wants", "Requires"],
        "Service" => &[
            "Type",
            "ExecStart",
            "Restart",
            "RestartSec",
            "Nice",
            "NoNewPrivileges",
            "Environment",
        ],
        "Timer" => &[
            "OnBootSec",
            "OnUnitActiveSec",
            "OnCalendar",
            "Persistent",
            "Unit",
        ],
        "Install" => &["WantedBy"],
        other => panic!("unknown section [{other}]"),
    }
}

fn get<'a>(unit: &'a Unit, section: &str, key: &str) -> Option<&'a str> {
    unit.get(section)?
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// `agy-audit watch …` as the binary parses it.
fn check_command(words: &[&str], name: &str) {
    assert!(
        words[0].ends_with("/agy-audit"),
        "{name}: runs {}",
        words[0]
    );
    assert_eq!(words.get(1), Some(&"watch"), "{name}");
    if let Err(e) = agy_audit::cli::check_args(&words[1..]) {
        panic!("{name}: {}: {e}", words.join(" "));
    }
}

#[test]
fn systemd_units_parse_and_run_watch() {
    let dir = deploy().join("systemd");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.contains(&"agy-audit-watch.service".to_string()),
        "{names:?}"
    );
    assert!(names.iter().any(|n| n.ends_with(".timer")), "{names:?}");
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let unit = parse_unit(&std::fs::read_to_string(f).unwrap(), &name);
        for (s, keys) in &unit {
            for (k, _) in keys {
                assert!(known(s).contains(&k.as_str()), "{name}: [{s}] {k}");
            }
        }
        assert!(get(&unit, "Unit", "Description").is_some(), "{name}");
        if name.ends_with(".service") {
            let exec = get(&unit, "Service", "ExecStart").expect("ExecStart");
            let words: Vec<&str> = exec.split_whitespace().collect();
            check_command(&words, &name);
            assert!(
                matches!(get(&unit, "Service", "Type"), Some("simple" | "oneshot")),
                "{name}"
            );
        } else {
            assert!(name.ends_with(".timer"), "{name}");
            // the timer starts the service of its own name
            let service = dir.join(name.replace(".timer", ".service"));
            assert!(service.is_file(), "{name}: no {}", service.display());
            assert!(get(&unit, "Timer", "OnUnitActiveSec").is_some(), "{name}");
            assert_eq!(get(&unit, "Install", "WantedBy"), Some("timers.target"));
        }
    }
    // systemd's own check, where it is installed, on copies running this
    // build's binary (verify needs ExecStart to exist)
    let analyze = Command::new("systemd-analyze").arg("--version").output();
    if !analyze.is_ok_and(|o| o.status.success()) {
        eprintln!("systemd-analyze not available: checked by parsing only");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let exe = env!("CARGO_BIN_EXE_agy-audit");
    let mut copies = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f)
            .unwrap()
            .replace("%h/.cargo/bin/agy-audit", exe);
        let p = tmp.path().join(f.file_name().unwrap());
        std::fs::write(&p, text).unwrap();
        copies.push(p);
    }
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .args(&copies)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("Failed to initialize manager") {
        eprintln!("systemd-analyze verify cannot run here ({err}): checked by parsing only");
        return;
    }
    assert!(out.status.success(), "{err}");
    let tmp_text = tmp.path().display().to_string();
    let ours: Vec<&str> = err.lines().filter(|l| l.contains(&tmp_text)).collect();
    assert!(
        ours.is_empty(),
        "systemd-analyze verify: {}",
        ours.join("\n")
    );
}

#[test]
fn launchd_plist_is_a_property_list_that_runs_watch() {
    let plist = deploy()
        .join("launchd")
        .join("com.github.agy-audit.watch.plist");
    let text = std::fs::read_to_string(&plist).unwrap();
    assert!(text.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"));
    assert!(text.contains("<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\""));
    let py =
        "import json, plistlib, sys\nprint(json.dumps(plistlib.load(open(sys.argv[1], 'rb'))))";
    let parsed = Command::new("python3")
        .args(["-c", py])
        .arg(&plist)
        .output();
    let words: Vec<String> = match parsed {
        Ok(o) if o.status.success() => {
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(v["Label"], "com.github.agy-audit.watch");
            assert_eq!(v["RunAtLoad"], true);
            assert!(v["StandardErrorPath"].as_str().unwrap().starts_with('/'));
            v["ProgramArguments"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| w.as_str().unwrap().to_string())
                .collect()
        }
        _ => {
            eprintln!("python3 plistlib not available: a structural check only");
            // every element opened is closed, in order
            let mut stack: Vec<String> = Vec::new();
            let body = &text[text.find("<plist").unwrap()..];
            let mut rest = body;
            while let Some(i) = rest.find('<') {
                rest = &rest[i + 1..];
                let end = rest.find('>').unwrap();
                let tag = &rest[..end];
                rest = &rest[end + 1..];
                if tag.starts_with("!--") || tag.ends_with('/') {
                    continue;
                }
                let name = tag.split_whitespace().next().unwrap().to_string();
                if let Some(closed) = name.strip_prefix('/') {
                    assert_eq!(stack.pop().as_deref(), Some(closed), "{}", plist.display());
                } else {
                    stack.push(name);
                }
            }
            assert!(stack.is_empty());
            let args = &text[text.find("<key>ProgramArguments</key>").unwrap()..];
            let args = &args[..args.find("</array>").unwrap()];
            args.split("<string>")
                .skip(1)
                .map(|s| s[..s.find("</string>").unwrap()].to_string())
                .collect()
        }
    };
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    check_command(&words, "launchd plist");
}
