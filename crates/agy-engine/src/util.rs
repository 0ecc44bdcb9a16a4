//! Small shared helpers: hex, time formatting, atomic writes, a strict
//! one-pass JSON reader (`json_walk`), a bounded reader of input files
//! (`bounded`).

pub mod atomic;
pub mod bounded;
pub mod json_walk;
pub mod nesting;
pub mod time;

/// The longest run of `c` in `s` (a Markdown code span's fence must be
/// longer than any backtick run inside it).
pub fn longest_run(s: &str, c: char) -> usize {
    let (mut run, mut longest) = (0, 0);
    for x in s.chars() {
        run = if x == c { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

/// For `#[serde(skip_serializing_if)]`: a count that is zero is left out.
pub fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256_tagged(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_encodes_lowercase() {
        assert_eq!(super::hex(&[0x00, 0xab, 0xff]), "00abff");
    }
}

/// An I/O error's text without the trailing ` (os error N)`: the words say
/// it, the number only repeats it.
pub fn io_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_string(),
        _ => text,
    }
}

#[cfg(test)]
mod io_text_tests {
    #[test]
    fn the_os_error_number_is_dropped() {
        let e = std::io::Error::from_raw_os_error(2);
        assert_eq!(super::io_text(&e), "No such file or directory");
        let plain = std::io::Error::other("plain words");
        assert_eq!(super::io_text(&plain), "plain words");
    }
}

/// `1 conversation`, `2 conversations`: a count with its noun, plural when
/// the count is not one (regular English plurals only).
pub fn count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod count_tests {
    #[test]
    fn one_is_singular_everything_else_plural() {
        assert_eq!(super::count(1u64, "step"), "1 step");
        assert_eq!(super::count(0u64, "step"), "0 steps");
        assert_eq!(super::count(405u64, "conversation"), "405 conversations");
    }
}
