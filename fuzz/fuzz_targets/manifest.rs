//! The strict manifest parser (`manifest::read::parse_strict`, what `audit-qualify`,
//! `audit-diff`, `--resume` and `manifest merge` read): a version-5 manifest,
//! its sessions' wire form refusing any combination the audit never writes.
//! Beyond "never a panic": a manifest it accepts is written back
//! (`to_json`, `to_csv`) and the written form parses to the same manifest.
#![no_main]

use agy_audit::manifest::read::parse_strict;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = parse_strict(data) {
        let again = m.to_json();
        let _ = m.to_csv();
        let back = parse_strict(&again).expect("a manifest written back parses");
        assert_eq!(
            back.to_json(),
            again,
            "a manifest written back reads differently"
        );
    }
});
