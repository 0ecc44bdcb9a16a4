//! The terminal never decides a run (issue 44 item 1): the one owner of
//! standard output and standard error for every command.
//!
//! A closed or broken stdout or stderr (`| head -0`, a reader that went
//! away, a closed descriptor) is not a reason to stop, and never a reason to
//! change the exit code: the command finishes its work, writes every file it
//! was asked for and exits with the code its result calls for. The run is
//! recorded in its files (the manifest, the report, the JUnit file), not on
//! the terminal. So every write to either stream goes through here, and a
//! write that fails is dropped: the stream is marked lost and later writes
//! to it are skipped. `eprintln!`/`println!` would panic instead, and a `?`
//! on a failed `writeln!` would end the command early with a code that says
//! nothing of its result. `clippy.toml` forbids the direct ways
//! (`std::io::stdout`, `std::io::stderr`, `print!`, `println!`, `eprint!`,
//! `eprintln!`) everywhere but this module.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_LOST: AtomicBool = AtomicBool::new(false);
static STDERR_LOST: AtomicBool = AtomicBool::new(false);

/// Which standard stream a [`Terminal`] writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Out,
    Err,
}

/// A writer to standard output or error that never fails: a write error
/// marks the stream lost (later writes are skipped) and is reported as a
/// whole write, so `writeln!(term::stdout(), ..)?` can never end a command.
#[derive(Debug)]
pub struct Terminal {
    stream: Stream,
}

/// Standard output, as a writer that never fails (see the module doc).
pub fn stdout() -> Terminal {
    Terminal {
        stream: Stream::Out,
    }
}

/// Standard error, as a writer that never fails (see the module doc).
pub fn stderr() -> Terminal {
    Terminal {
        stream: Stream::Err,
    }
}

impl Terminal {
    fn lost(&self) -> &'static AtomicBool {
        match self.stream {
            Stream::Out => &STDOUT_LOST,
            Stream::Err => &STDERR_LOST,
        }
    }

    // The one place that may name the process's standard streams.
    #[allow(clippy::disallowed_methods)]
    fn raw(&self, buf: &[u8]) -> std::io::Result<()> {
        match self.stream {
            Stream::Out => {
                let mut o = std::io::stdout().lock();
                o.write_all(buf).and_then(|()| o.flush())
            }
            Stream::Err => std::io::stderr().lock().write_all(buf),
        }
    }
}

impl Write for Terminal {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        let lost = self.lost();
        if buf.is_empty() || lost.load(Ordering::Relaxed) {
            return Ok(());
        }
        if self.raw(buf).is_err() {
            lost.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Whether a write to standard output has failed in this process (the
/// reader closed it): informational only, it never changes an exit code.
pub fn stdout_lost() -> bool {
    STDOUT_LOST.load(Ordering::Relaxed)
}

/// Whether standard error is a terminal (a progress display is drawn only
/// there).
#[allow(clippy::disallowed_methods)] // a question, not a write
pub fn stderr_is_terminal() -> bool {
    use std::io::IsTerminal as _;
    std::io::stderr().is_terminal()
}

/// `bytes` on standard output; a write error is dropped (module doc).
pub fn out(bytes: &[u8]) {
    let _ = stdout().write_all(bytes);
}

/// `bytes` on standard error; a write error is dropped (module doc).
pub fn err(bytes: &[u8]) {
    let _ = stderr().write_all(bytes);
}

/// One line on standard output; a write error is dropped (module doc).
pub fn out_line(args: std::fmt::Arguments<'_>) {
    let mut line = args.to_string();
    line.push('\n');
    out(line.as_bytes());
}

/// One line on standard error; a write error is dropped (module doc).
pub fn note(args: std::fmt::Arguments<'_>) {
    // one line, whatever the text from outside it holds (a path with a
    // newline, a reason with ESC): control characters shown, never sent
    let mut line = visible(&args.to_string()).into_owned();
    line.push('\n');
    let _ = stderr().write_all(line.as_bytes());
}

/// Text for a terminal line: control characters (a newline, ESC, NUL...)
/// shown visibly as `\u{1b}` (Rust's escape spelling), everything else as
/// it is (issue 45 item 2).
pub fn visible(s: &str) -> std::borrow::Cow<'_, str> {
    use std::fmt::Write as _;
    if !s.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `eprintln!` that never panics nor fails: see the module doc.
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::util::term::note(format_args!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Control characters are shown, never sent; other text is unchanged
    /// (and not copied).
    #[test]
    fn control_characters_are_shown_visibly() {
        assert_eq!(visible("a\nb\u{1b}[2J\u{0}c"), "a\\u{a}b\\u{1b}[2J\\u{0}c");
        assert!(matches!(
            visible("plain é"),
            std::borrow::Cow::Borrowed("plain é")
        ));
    }

    #[test]
    fn a_terminal_writer_reports_every_write_whole() {
        // Whatever the test harness does with the streams, the writer's
        // answer is always a whole write: nothing upstream can see an error.
        let mut t = stdout();
        assert_eq!(t.write(b"").unwrap(), 0);
        assert!(t.flush().is_ok());
        let mut e = stderr();
        assert!(e.write_all(b"").is_ok());
    }
}
