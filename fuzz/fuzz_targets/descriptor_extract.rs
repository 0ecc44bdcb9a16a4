//! The descriptor extractor (`schema extract`) over arbitrary bytes (an agy
//! binary, or anything else): the embedded FileDescriptorProto records it
//! finds, the set it assembles, and `schema verify` of its own manifest
//! against the same bytes, which must find no mismatch.
#![no_main]

use agy_audit::schema::extract;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(x) = extract::extract(data) {
        let _ = agy_audit::schema::decode_pool(&x.set);
        let mismatches = extract::verify(&x.manifest(None), data);
        assert!(
            mismatches.is_empty(),
            "an extraction does not verify against its own bytes: {mismatches:?}"
        );
    }
});
