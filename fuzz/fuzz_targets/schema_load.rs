//! The schema loader over arbitrary `--schema FILE` bytes: the size cap,
//! gunzip, the syntax of every file, the descriptor pool and the names the
//! reader resolves; a set it loads is then used to scan its own modeled
//! seed trajectory shape (an empty trajectory), as a sweep would.
#![no_main]

use agy_audit::fuzzing;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(schema) = fuzzing::schema_from_file_bytes(data) {
        let _ = schema.sha256_hex();
        let _ = fuzzing::decode_trajectory(&schema, &[], false);
    }
});
