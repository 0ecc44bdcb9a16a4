//! Printing that never fails a run: a closed or broken standard error (or
//! output) is not a reason to stop. The run is recorded in its files (the
//! manifest, the report), not on the terminal, so a line that cannot be
//! written is dropped, where `eprintln!` would panic (`2>&1 | head -0`) and,
//! inside a sweep's writer, leave its workers blocked on a full channel.

use std::io::Write;

/// One line on standard error; a write error is ignored.
pub fn note(args: std::fmt::Arguments<'_>) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_fmt(args);
    let _ = e.write_all(b"\n");
}

/// `eprintln!` that never panics: see the module doc.
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::util::term::note(format_args!($($arg)*))
    };
}
