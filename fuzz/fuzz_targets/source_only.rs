//! The source-only payload checks: the planner50 shapes, and field 23 of a
//! `ChatMessagePrompt` (the prompt's own fields, the strict
//! `google.protobuf.Struct` scan of the payload, its shape) then, with a
//! trajectory, the payload's derivation from the GREP_SEARCH step it names.
//! The input is `fuzzing::split2(prompt, split2(payload, trajectory))`.
#![no_main]

use agy_audit::fuzzing;
use agy_audit::schema::Schema;
use agy_audit::source::source_only::check_prompt23_derivations;
use agy_audit::source::wire_trajectory::WireTrajectory;
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;

static SCHEMA: LazyLock<Schema> = LazyLock::new(|| Schema::modeled().expect("modeled schema"));

fuzz_target!(|data: &[u8]| {
    let schema = &*SCHEMA;
    let (prompt, rest) = fuzzing::split2(data);
    let (payload, trajectory) = fuzzing::split2(rest);
    let _ = fuzzing::planner50(payload);
    let Ok(pending) = fuzzing::prompt23(schema, prompt, payload) else {
        return;
    };
    if let Ok(w) = WireTrajectory::index(&schema.names, agy_audit::fuzzing::bytes_of(trajectory)) {
        let _ = check_prompt23_derivations(&w, std::slice::from_ref(&pending));
    }
});
