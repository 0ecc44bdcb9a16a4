//! Small helpers of the corpus crate's own (the reader keeps its own copies).

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

/// An I/O error's text without the ` (os error N)` suffix.
pub fn io_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_string(),
        _ => text,
    }
}

pub mod time {
    use std::time::{SystemTime, UNIX_EPOCH};

    /// `YYYY-MM-DDTHH:MM:SSZ` for a Unix time in seconds.
    pub fn rfc3339_seconds(unix: i64) -> String {
        let days = unix.div_euclid(86_400);
        let secs = unix.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
            secs / 3600,
            (secs / 60) % 60,
            secs % 60
        )
    }

    /// The current time as RFC 3339 UTC.
    pub fn now_rfc3339() -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        rfc3339_seconds(now)
    }

    /// The current time as the IDE's two logs stamp it: `YYYY-MM-DD
    /// HH:MM:SS.mmm` (main.log) and glog's `IMMDD HH:MM:SS.uuuuuu`
    /// (language_server.log), both UTC.
    pub fn log_stamps() -> (String, String) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let unix = now.as_secs() as i64;
        let micros = now.subsec_micros();
        let (y, m, d) = civil_from_days(unix.div_euclid(86_400));
        let secs = unix.rem_euclid(86_400);
        let hms = format!(
            "{:02}:{:02}:{:02}",
            secs / 3600,
            (secs / 60) % 60,
            secs % 60
        );
        (
            format!("{y:04}-{m:02}-{d:02} {hms}.{:03}", micros / 1000),
            format!("I{m:02}{d:02} {hms}.{micros:06}"),
        )
    }

    /// Howard Hinnant's civil-from-days.
    fn civil_from_days(z: i64) -> (i64, u32, u32) {
        let z = z + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let y = yoe + era * 400;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        (if m <= 2 { y + 1 } else { y }, m, d)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_values() {
        assert_eq!(super::hex(&[0x00, 0xab, 0x7f]), "00ab7f");
        assert_eq!(super::time::rfc3339_seconds(0), "1970-01-01T00:00:00Z");
        assert_eq!(
            super::time::rfc3339_seconds(1_798_761_600),
            "2027-01-01T00:00:00Z"
        );
        assert_eq!(
            super::io_text(&std::io::Error::from_raw_os_error(2)),
            "No such file or directory"
        );
    }
}
