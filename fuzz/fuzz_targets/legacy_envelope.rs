//! The legacy envelope (AES-256-GCM, nonce first, authenticate before
//! decode, 64 MiB cap): the input read as a `.pb` file under agy's format
//! key, and the input sealed as a plaintext (a fixed nonce) then read back,
//! which must authenticate and yield exactly the input before the strict
//! scan reads it.
#![no_main]

use agy_audit::fuzzing;
use agy_audit::schema::Schema;
use agy_audit::source::legacy::{encrypt, LegacyKey};
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;

static SCHEMA: LazyLock<Schema> = LazyLock::new(|| Schema::modeled().expect("modeled schema"));

fuzz_target!(|data: &[u8]| {
    let _ = fuzzing::legacy_source(&SCHEMA, data);
    let sealed = encrypt(data, &LegacyKey::default(), [7; 12]);
    match fuzzing::legacy_source(&SCHEMA, &sealed) {
        Ok(src) => {
            let authenticated = !src
                .refusals
                .iter()
                .any(|r| r.class == agy_audit::verdict::ReasonClass::LegacyAuthentication);
            assert!(authenticated, "a sealed plaintext failed authentication");
            if !data.is_empty() && src.wire.is_some() {
                assert_eq!(&src.encoding[..], data, "the plaintext read back differs");
            }
        }
        Err(e) => assert!(data.is_empty(), "a sealed plaintext is an error: {e}"),
    }
});
