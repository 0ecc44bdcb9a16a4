//! The strict scanner over the modeled schema: an arbitrary trajectory
//! encoding is scanned (strictly, then collecting every refusal as
//! `--allow-unknown` does), indexed by step, its field-23 payloads derived
//! from their steps, projected by the qualified rules and decoded whole.
//! Beyond "never a panic": a source the strict scan qualifies must decode
//! (`DecodedSource::materialize`'s comment says the scan rules out a failing
//! decode) and its projection must present.
#![no_main]

use agy_audit::fuzzing;
use agy_audit::schema::{to_daemon_json, Schema};
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;

static SCHEMA: LazyLock<Schema> = LazyLock::new(|| Schema::modeled().expect("modeled schema"));

fuzz_target!(|data: &[u8]| {
    let schema = &*SCHEMA;
    let mut src = fuzzing::decode_trajectory(schema, data, false);
    if src.qualified() {
        let projection = src
            .wire
            .as_ref()
            .map(|w| agy_audit::project::project(schema, w));
        let t = src.materialize().cloned();
        assert!(
            src.qualified(),
            "the strict scan passed but the trajectory does not decode: {:?}",
            src.refusals
        );
        if let (Some(Ok(p)), Some(t)) = (projection, t) {
            let _ = to_daemon_json(&p.ordinary(&t));
        }
    }
    // The export path (`--allow-unknown`): every refusal collected.
    let all = fuzzing::decode_trajectory(schema, data, true);
    if let Some(t) = &all.trajectory {
        let _ = to_daemon_json(t);
    }
});
