//! The `agy-audit` binary: a thin shell over the library's CLI module.

use std::ffi::{c_int, c_long};

/// The sweep allocates and frees many small JSON and message nodes across
/// threads; mimalloc's per-thread heaps cut that cost well below glibc's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc returns freed memory to the OS only `purge_delay` ms after it is
/// freed (1000 ms by default in 3.3). Over a long verify or sweep the freed
/// but not yet purged pages then pile up at each step of the arena's growth:
/// peak RSS over 10× the corpus measured 1.10-1.12× the 1× figure. At 250 ms
/// it stays flat (1.02-1.03×) for about a third more page faults (~2% of
/// verify time).
const PURGE_DELAY_MS: c_long = 250;

/// `mi_option_purge_delay` in mimalloc 3.3's `mi_option_t`, its documented
/// default, and that version: the enum is not stable across versions, so the
/// option is set only on the vendored version and only when it reads as
/// its default (a user's `MIMALLOC_PURGE_DELAY` is left alone).
const MI_OPTION_PURGE_DELAY: c_int = 15;
const MI_PURGE_DELAY_DEFAULT: c_long = 1000;
const MI_VERSION_VENDORED: c_int = 30302;

extern "C" {
    fn mi_version() -> c_int;
    fn mi_option_get(option: c_int) -> c_long;
    fn mi_option_set(option: c_int, value: c_long);
}

fn tune_allocator() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: plain calls into the mimalloc linked as the global allocator;
    // the option number is checked against the version and the default it
    // must read as before anything is set.
    unsafe {
        if mi_version() == MI_VERSION_VENDORED
            && mi_option_get(MI_OPTION_PURGE_DELAY) == MI_PURGE_DELAY_DEFAULT
        {
            mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS);
        }
    }
}

fn main() {
    tune_allocator();
    std::process::exit(agy_audit::cli::main());
}
