//! The `agy-audit` binary: a thin shell over the library's CLI module.

fn main() {
    std::process::exit(agy_audit::cli::main());
}
