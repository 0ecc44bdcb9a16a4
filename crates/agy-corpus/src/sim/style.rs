//! `--json-style`: legal re-encodings of the daemon's answers under the
//! proto3 JSON mapping. The stored views are canonical (JSON names, enum
//! names, 64-bit integers as strings, Timestamps with 0, 3, 6 or 9 fraction
//! digits); a style rewrites each answer's trajectory into another spelling
//! of the same protobuf value, which a reader that compares values (not
//! text) must accept with the same verdicts.
//!
//! Written independently of the reader's comparison (agy-audit's `compare`): this
//! module walks the JSON with the schema's descriptors only to know which
//! members are Timestamps, Durations, enums, 64-bit integers or bytes, and
//! does its own time arithmetic and base64.

use crate::corpus::rng;
use base64::Engine;
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use serde_json::{Map, Value as J};
use std::fmt;
use std::str::FromStr;

/// How the simulated daemon spells its answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JsonStyle {
    /// The stored views verbatim (what agy's daemon writes).
    #[default]
    Canonical,
    /// Every Timestamp and Duration with nine fraction digits.
    NineDigitTimes,
    /// Field names as in the .proto (`trajectory_id`).
    ProtoNames,
    /// Enum values as numbers.
    EnumNumbers,
    /// 64-bit integers as JSON numbers.
    Int64Numbers,
    /// Indented, with spaces.
    Spaced,
    /// A seeded random mix of all of the above per answer and per value,
    /// plus Timestamp offsets other than Z, other fraction lengths,
    /// URL-safe unpadded base64 and quoted 32-bit and floating point numbers.
    Mixed,
}

/// Every style, in the order of `--help`.
pub const ALL_STYLES: [JsonStyle; 7] = [
    JsonStyle::Canonical,
    JsonStyle::NineDigitTimes,
    JsonStyle::ProtoNames,
    JsonStyle::EnumNumbers,
    JsonStyle::Int64Numbers,
    JsonStyle::Spaced,
    JsonStyle::Mixed,
];

impl JsonStyle {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            JsonStyle::Canonical => "canonical",
            JsonStyle::NineDigitTimes => "nine-digit-times",
            JsonStyle::ProtoNames => "proto-names",
            JsonStyle::EnumNumbers => "enum-numbers",
            JsonStyle::Int64Numbers => "int64-numbers",
            JsonStyle::Spaced => "spaced",
            JsonStyle::Mixed => "mixed",
        }
    }
}

impl fmt::Display for JsonStyle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown `--json-style` name.
#[derive(Debug, thiserror::Error)]
#[error("unknown JSON style `{0}` (canonical, nine-digit-times, proto-names, enum-numbers, int64-numbers, spaced, mixed)")]
pub struct UnknownStyle(pub String);

impl FromStr for JsonStyle {
    type Err = UnknownStyle;
    fn from_str(s: &str) -> Result<JsonStyle, UnknownStyle> {
        ALL_STYLES
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownStyle(s.to_string()))
    }
}

/// Why a view could not be restyled.
#[derive(Debug, thiserror::Error)]
pub enum StyleError {
    /// The view is not JSON.
    #[error("stored view is not JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Rewrites one answer's trajectory `view` (canonical daemon JSON of
/// `desc`) in `style`; `label` seeds the mixed style per answer.
pub fn restyle(
    view: &[u8],
    desc: &MessageDescriptor,
    style: JsonStyle,
    seed: u64,
    label: &[&str],
) -> Result<Vec<u8>, StyleError> {
    if style == JsonStyle::Canonical {
        return Ok(view.to_vec());
    }
    let mut v: J = serde_json::from_slice(view)?;
    let mut labels = vec!["json-style"];
    labels.extend_from_slice(label);
    let mut r = Recoder {
        style,
        state: rng::derive(seed, &labels),
    };
    r.message(desc, &mut v);
    let spaced = match style {
        JsonStyle::Spaced => true,
        JsonStyle::Mixed => r.coin(),
        _ => false,
    };
    Ok(if spaced {
        serde_json::to_vec_pretty(&v)?
    } else {
        serde_json::to_vec(&v)?
    })
}

struct Recoder {
    style: JsonStyle,
    state: u64,
}

impl Recoder {
    /// splitmix64.
    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }

    /// Whether to apply `wanted` here: always in that style, by a coin in
    /// the mixed one.
    fn apply(&mut self, wanted: JsonStyle) -> bool {
        self.style == wanted || (self.style == JsonStyle::Mixed && self.coin())
    }

    fn mixed(&mut self) -> bool {
        self.style == JsonStyle::Mixed && self.coin()
    }

    fn message(&mut self, desc: &MessageDescriptor, v: &mut J) {
        let name = desc.full_name();
        match (name, &mut *v) {
            ("google.protobuf.Timestamp", J::String(s)) => {
                if let Some(t) = self.timestamp(s) {
                    *s = t;
                }
                return;
            }
            ("google.protobuf.Duration", J::String(s)) => {
                if let Some(t) = self.duration(s) {
                    *s = t;
                }
                return;
            }
            ("google.protobuf.Any", J::Object(m)) => return self.any(desc, m),
            _ if name.starts_with("google.protobuf.") => return,
            _ => {}
        }
        let J::Object(m) = v else { return };
        let members = std::mem::take(m);
        for (key, mut value) in members {
            let Some(field) = desc.get_field_by_json_name(&key) else {
                m.insert(key, value);
                continue;
            };
            self.field(&field, &mut value);
            let key = if self.apply(JsonStyle::ProtoNames) {
                field.name().to_string()
            } else {
                key
            };
            m.insert(key, value);
        }
    }

    fn any(&mut self, any: &MessageDescriptor, m: &mut Map<String, J>) {
        let Some(J::String(url)) = m.get("@type") else {
            return;
        };
        let name = url.rsplit('/').next().unwrap_or_default();
        let Some(inner) = any.parent_pool().get_message_by_name(name) else {
            return;
        };
        if inner.full_name().starts_with("google.protobuf.") {
            if let Some(v) = m.get_mut("value") {
                self.message(&inner, v);
            }
            return;
        }
        let type_url = m.shift_remove("@type").unwrap_or(J::Null);
        let mut rest = J::Object(std::mem::take(m));
        self.message(&inner, &mut rest);
        m.insert("@type".into(), type_url);
        if let J::Object(r) = rest {
            m.extend(r);
        }
    }

    fn field(&mut self, field: &FieldDescriptor, v: &mut J) {
        let kind = field.kind();
        if field.is_map() {
            let (Kind::Message(entry), J::Object(m)) = (&kind, v) else {
                return;
            };
            let value_kind = entry.map_entry_value_field().kind();
            for value in m.values_mut() {
                self.single(&value_kind, value);
            }
        } else if let (true, J::Array(items)) = (field.is_list(), &mut *v) {
            for item in items {
                self.single(&kind, item);
            }
        } else {
            self.single(&kind, v);
        }
    }

    fn single(&mut self, kind: &Kind, v: &mut J) {
        match kind {
            Kind::Message(d) => self.message(d, v),
            Kind::Enum(e) => {
                if let J::String(name) = v {
                    if let Some(value) = e.get_value_by_name(name) {
                        if self.apply(JsonStyle::EnumNumbers) {
                            *v = J::from(value.number());
                        }
                    }
                }
            }
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 | Kind::Uint64 | Kind::Fixed64 => {
                if let J::String(s) = v {
                    if let Ok(n) = serde_json::Number::from_str(s) {
                        if self.apply(JsonStyle::Int64Numbers) {
                            *v = J::Number(n);
                        }
                    }
                }
            }
            Kind::Int32
            | Kind::Sint32
            | Kind::Sfixed32
            | Kind::Uint32
            | Kind::Fixed32
            | Kind::Float
            | Kind::Double => {
                if let J::Number(n) = v {
                    if self.mixed() {
                        *v = J::String(n.to_string());
                    }
                }
            }
            Kind::Bytes => {
                if let J::String(s) = v {
                    if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(&*s) {
                        if self.mixed() {
                            *s = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
                        }
                    }
                }
            }
            Kind::Bool | Kind::String => {}
        }
    }

    /// How many fraction digits to write for one with `len` digits.
    fn fraction_len(&mut self, len: usize) -> usize {
        if self.style == JsonStyle::NineDigitTimes {
            9
        } else if self.style == JsonStyle::Mixed {
            len + (self.next() % (10 - len as u64)) as usize
        } else {
            len
        }
    }

    /// `YYYY-MM-DDTHH:MM:SS[.f]Z`, restyled.
    fn timestamp(&mut self, s: &str) -> Option<String> {
        let body = s.strip_suffix('Z')?;
        let (civil, frac) = body.split_once('.').unwrap_or((body, ""));
        if civil.len() != 19 || frac.len() > 9 {
            return None;
        }
        let frac = format!("{frac:0<width$}", width = self.fraction_len(frac.len()));
        let dot = if frac.is_empty() { "" } else { "." };
        if !self.mixed() {
            return Some(format!("{civil}{dot}{frac}Z"));
        }
        // The same instant at another offset, within ±14:00.
        let minutes = (self.next() % (28 * 4 + 1)) as i64 * 15 - 14 * 60;
        let utc = epoch_seconds(civil)?;
        let local = civil_text(utc + minutes * 60)?;
        let sign = if minutes < 0 { '-' } else { '+' };
        let m = minutes.abs();
        Some(format!(
            "{local}{dot}{frac}{sign}{:02}:{:02}",
            m / 60,
            m % 60
        ))
    }

    /// `[-]S[.f]s`, restyled.
    fn duration(&mut self, s: &str) -> Option<String> {
        let body = s.strip_suffix('s')?;
        let (int, frac) = body.split_once('.').unwrap_or((body, ""));
        if frac.len() > 9 {
            return None;
        }
        let frac = format!("{frac:0<width$}", width = self.fraction_len(frac.len()));
        let dot = if frac.is_empty() { "" } else { "." };
        Some(format!("{int}{dot}{frac}s"))
    }
}

/// Seconds since 1970 of `YYYY-MM-DDTHH:MM:SS` (UTC).
fn epoch_seconds(civil: &str) -> Option<i64> {
    let n = |r: std::ops::Range<usize>| civil.get(r).and_then(|t| t.parse::<i64>().ok());
    let (y, mo, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (h, mi, s) = (n(11..13)?, n(14..16)?, n(17..19)?);
    // Howard Hinnant's days_from_civil.
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if mo > 2 { mo - 3 } else { mo + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some((era * 146_097 + doe - 719_468) * 86_400 + h * 3600 + mi * 60 + s)
}

/// `YYYY-MM-DDTHH:MM:SS` of seconds since 1970, for years 1 to 9999.
fn civil_text(t: i64) -> Option<String> {
    let days = t.div_euclid(86_400);
    let secs = t.rem_euclid(86_400);
    // civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    if !(1..=9999).contains(&y) {
        return None;
    }
    Some(format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trips() {
        for t in [
            0,
            -1,
            1_796_467_053,
            -62_135_596_800,
            253_402_300_799,
            951_782_400,
        ] {
            let text = civil_text(t).unwrap();
            assert_eq!(epoch_seconds(&text), Some(t), "{text}");
        }
        assert_eq!(
            civil_text(1_796_467_053).as_deref(),
            Some("2026-12-05T10:37:33")
        );
    }

    #[test]
    fn styles_parse_by_name() {
        for s in ALL_STYLES {
            assert_eq!(s.name().parse::<JsonStyle>().unwrap(), s);
        }
        assert!("nine-digits".parse::<JsonStyle>().is_err());
    }

    #[test]
    fn times_get_nine_digits() {
        let mut r = Recoder {
            style: JsonStyle::NineDigitTimes,
            state: 1,
        };
        assert_eq!(
            r.timestamp("2026-12-05T10:37:33.824913Z").as_deref(),
            Some("2026-12-05T10:37:33.824913000Z")
        );
        assert_eq!(
            r.timestamp("2026-12-05T10:37:33Z").as_deref(),
            Some("2026-12-05T10:37:33.000000000Z")
        );
        assert_eq!(r.duration("2.769s").as_deref(), Some("2.769000000s"));
        assert_eq!(r.duration("-3s").as_deref(), Some("-3.000000000s"));
    }
}
