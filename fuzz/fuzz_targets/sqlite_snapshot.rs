//! The SQLite snapshot from raw `.db` bytes (no `-wal`): header check, the
//! in-memory image opened read-only in place, `quick_check`, the exact
//! tables, columns and indexes, row shapes, contiguous `idx`, redundant step
//! columns, the canonical encoding and its strict scan. An error or refusals,
//! never a panic (nor a memory error: the target runs under AddressSanitizer).
#![no_main]

use agy_audit::fuzzing;
use agy_audit::schema::Schema;
use agy_audit::source::sqlite::Strategy;
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;

static SCHEMA: LazyLock<Schema> = LazyLock::new(|| Schema::modeled().expect("modeled schema"));

fuzz_target!(|data: &[u8]| {
    if let Ok(mut src) = fuzzing::sqlite_source(&SCHEMA, data, None, Strategy::Auto) {
        if src.qualified() {
            src.materialize();
        }
    }
});
