//! The `agy-audit` binary: a thin shell over the library's CLI module.

/// The sweep allocates and frees many small JSON and message nodes across
/// threads; mimalloc's per-thread heaps cut that cost well below glibc's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(agy_audit::cli::main());
}
