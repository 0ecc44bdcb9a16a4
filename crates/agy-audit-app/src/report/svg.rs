//! An SVG chart of verdicts per profile (stacked horizontal bars).
//!
//! Profile identifiers run past 150 characters, so each bar carries a short
//! label (`P1 sqlite`, `P2 legacy`, ...) and a legend under the chart maps
//! every label to its full profile (the Markdown report's per-profile table
//! carries the same labels). A count is drawn inside its segment only when it
//! fits, in a colour that contrasts with the fill; otherwise it is drawn under
//! the bar, beside a swatch of the segment's colour.

use crate::manifest::Manifest;
use std::fmt::Write;

const COLORS: [(&str, &str); 5] = [
    ("verified", "#2e7d32"),
    ("verified-source-only", "#81c784"),
    ("unknown", "#f9a825"),
    ("incomplete", "#c62828"),
    ("not fetched or error", "#616161"),
];

/// The colour of an outcome (`verified`, `verified-source-only`,
/// `unknown`, `incomplete`, `not-fetched`, `error`) in every chart; the
/// diff's transitions chart splits `not fetched or error` in two and greys
/// out `absent` (anything else).
pub fn outcome_color(outcome: &str) -> &'static str {
    match outcome {
        "verified" => COLORS[0].1,
        "verified-source-only" => COLORS[1].1,
        "unknown" => COLORS[2].1,
        "incomplete" => COLORS[3].1,
        "not-fetched" => COLORS[4].1,
        "error" => "#424242",
        _ => "#bdbdbd",
    }
}

/// Dark text, for light fills and the chart background (every chart's).
pub(crate) const DARK: &str = "#212121";

/// Starts a chart: the `<svg>` element of `width` × `height` at the charts'
/// 12 px sans-serif, and its bold 16 px title at the top left.
pub(crate) fn open(width: f64, height: f64, title: std::fmt::Arguments<'_>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{LABEL_X}" y="22" font-size="16" font-weight="bold" fill="{DARK}">{title}</text>"#
    );
    s
}

/// Average advance of a character at the chart's 12 px font (digits are
/// about 6.7 px wide in common sans-serif faces; rounded up).
const CHAR_W: f64 = 7.0;

/// The same at the legend's 10 px font.
const LEGEND_CHAR_W: f64 = 6.0;

/// Horizontal padding a number needs inside its segment, both sides together.
const PAD: f64 = 6.0;

/// Where each part of a row sits.
const LABEL_X: f64 = 10.0;
const BAR_X: f64 = 120.0;
const BAR_W: f64 = 640.0;
const BAR_H: f64 = 22.0;
const ROW_H: f64 = 52.0;
const TOP: f64 = 40.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The short chart label of each profile, in the manifest's (sorted) order:
/// `P<n>` and the storage kind the identifier starts with.
pub fn profile_labels(m: &Manifest) -> Vec<(String, String)> {
    m.counts_by_profile
        .keys()
        .enumerate()
        .map(|(i, p)| {
            let kind: String = p
                .split(['-', '/'])
                .next()
                .unwrap_or("")
                .chars()
                .take(10)
                .collect();
            let label = if kind.is_empty() {
                format!("P{}", i + 1)
            } else {
                format!("P{} {kind}", i + 1)
            };
            (label, p.clone())
        })
        .collect()
}

/// Text that reads on `fill`: white on dark fills, dark on light ones
/// (relative luminance of the sRGB colour against 0.5).
pub fn text_on(fill: &str) -> &'static str {
    let hex = fill.trim_start_matches('#');
    let channel = |i: usize| {
        hex.get(i..i + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .map(|v| {
                let c = f64::from(v) / 255.0;
                if c <= 0.03928 {
                    c / 12.92
                } else {
                    ((c + 0.055) / 1.055).powf(2.4)
                }
            })
            .unwrap_or(0.0)
    };
    let l = 0.2126 * channel(0) + 0.7152 * channel(2) + 0.0722 * channel(4);
    // White wins when its contrast ratio beats the dark text's.
    let white = 1.05 / (l + 0.05);
    let dark = (l + 0.05) / 0.0648;
    if white >= dark {
        "white"
    } else {
        DARK
    }
}

/// The width a count needs to be drawn inside a segment.
pub fn needed_width(n: u64) -> f64 {
    n.to_string().len() as f64 * CHAR_W + PAD
}

/// The chart as an SVG document.
pub fn verdict_chart(m: &Manifest) -> String {
    let labels = profile_labels(m);
    let rows: Vec<(&str, &str, [u64; 5])> = m
        .counts_by_profile
        .values()
        .zip(&labels)
        .map(|(c, (label, profile))| {
            (
                label.as_str(),
                profile.as_str(),
                [
                    c.verified,
                    c.verified_source_only,
                    c.unknown,
                    c.incomplete,
                    c.error + c.not_fetched,
                ],
            )
        })
        .collect();
    let legend_w = labels
        .iter()
        .map(|(l, p)| (l.len() + p.chars().count() + 3) as f64 * LEGEND_CHAR_W + 2.0 * LABEL_X)
        .fold(0.0, f64::max);
    let width = (BAR_X + BAR_W + 60.0).max(legend_w).ceil();
    let bars_end = TOP + ROW_H * rows.len().max(1) as f64;
    let height = bars_end + 34.0 + 16.0 * labels.len() as f64 + 10.0;
    let mut s = open(
        width,
        height,
        format_args!("Verdicts per profile ({} sessions)", m.counts.selected),
    );
    for (i, (label, profile, counts)) in rows.iter().enumerate() {
        let y = TOP + ROW_H * i as f64;
        let total: u64 = counts.iter().sum();
        let _ = writeln!(
            s,
            r#"<text x="{LABEL_X}" y="{:.1}" font-weight="bold" fill="{DARK}"><title>{}</title>{}</text>"#,
            y + 15.0,
            esc(profile),
            esc(label)
        );
        let mut x = BAR_X;
        // Counts too wide for their segment go under the bar, left to right.
        let mut under_end = f64::MIN;
        for (j, n) in counts.iter().enumerate() {
            if *n == 0 || total == 0 {
                continue;
            }
            let (name, fill) = COLORS[j];
            let w = BAR_W * *n as f64 / total as f64;
            let _ = writeln!(
                s,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{BAR_H}" fill="{fill}"><title>{name}: {n}</title></rect>"#
            );
            if w >= needed_width(*n) {
                let _ = writeln!(
                    s,
                    r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="{}">{n}</text>"#,
                    x + w / 2.0,
                    y + 15.0,
                    text_on(fill)
                );
            } else {
                // Beside the bar: a swatch of the segment's colour, then the count.
                let item_w = 12.0 + n.to_string().len() as f64 * CHAR_W;
                let ux = (x + w / 2.0 - item_w / 2.0).max(under_end + 6.0).max(BAR_X);
                let _ = writeln!(
                    s,
                    r#"<rect x="{ux:.1}" y="{:.1}" width="8" height="8" fill="{fill}"/><text x="{:.1}" y="{:.1}" fill="{DARK}"><title>{name}: {n}</title>{n}</text>"#,
                    y + BAR_H + 6.0,
                    ux + 11.0,
                    y + BAR_H + 14.0
                );
                under_end = ux + item_w;
            }
            x += w;
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" fill="{DARK}">{total}</text>"#,
            BAR_X + BAR_W + 8.0,
            y + 15.0
        );
    }
    let ly = bars_end + 10.0;
    let mut lx = LABEL_X;
    for (name, color) in COLORS {
        let _ = writeln!(
            s,
            r#"<rect x="{lx:.1}" y="{:.1}" width="12" height="12" fill="{color}"/><text x="{:.1}" y="{:.1}" fill="{DARK}">{name}</text>"#,
            ly - 10.0,
            lx + 16.0,
            ly
        );
        lx += 30.0 + name.len() as f64 * CHAR_W;
    }
    for (k, (label, profile)) in labels.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<text x="{LABEL_X}" y="{:.1}" font-size="10" fill="{DARK}"><tspan font-weight="bold">{}</tspan> = {}</text>"#,
            ly + 24.0 + 16.0 * k as f64,
            esc(label),
            esc(profile)
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{Manifest, SessionRecord};
    use crate::outcome::SessionOutcome;
    use crate::verdict::{ReasonClass, Refusal, VerdictKind};

    const LONG_SQLITE: &str = "sqlite-v1-format0-modeled-19f5ca8aba2b-r12934a-planner50-permission2-prompt23-history2-options145-compaction146-skill146-finish147-replay147";

    fn session(id: usize, profile: &str, verdict: Option<VerdictKind>) -> SessionRecord {
        let refused = |class| SessionOutcome::refused(Refusal::new(class, "", "refused"));
        let outcome = match verdict {
            Some(VerdictKind::Verified) => SessionOutcome::Verified,
            Some(VerdictKind::VerifiedSourceOnly) => SessionOutcome::VerifiedSourceOnly(Vec::new()),
            Some(VerdictKind::Unknown) => refused(ReasonClass::UnknownField),
            Some(VerdictKind::Incomplete) => refused(ReasonClass::FullMismatch),
            None => SessionOutcome::Error {
                reason: "unreadable".into(),
            },
        };
        SessionRecord::for_test(id, profile, outcome)
    }

    /// `counts` sessions per verdict (verified, source-only, unknown,
    /// incomplete, error) under `profile`.
    fn manifest(rows: &[(&str, [usize; 5])]) -> Manifest {
        let mut m = Manifest::new("/r", "e", "t".into());
        let verdicts = [
            Some(VerdictKind::Verified),
            Some(VerdictKind::VerifiedSourceOnly),
            Some(VerdictKind::Unknown),
            Some(VerdictKind::Incomplete),
            None,
        ];
        let mut id = 0;
        for (profile, counts) in rows {
            for (v, n) in verdicts.iter().zip(counts) {
                for _ in 0..*n {
                    id += 1;
                    m.add(session(id, profile, *v));
                }
            }
        }
        m
    }

    /// Every `<text ...>` element: its attributes and its visible text
    /// (without any `<title>` or `<tspan>` markup).
    fn texts(svg: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut rest = svg;
        while let Some(p) = rest.find("<text ") {
            rest = &rest[p + 6..];
            let Some(close) = rest.find('>') else { break };
            let attrs = rest[..close].to_string();
            let Some(end) = rest.find("</text>") else {
                break;
            };
            let mut inner = rest[close + 1..end].to_string();
            if let (Some(a), Some(b)) = (inner.find("<title>"), inner.find("</title>")) {
                inner.replace_range(a..b + 8, "");
            }
            let inner = inner
                .replace("<tspan font-weight=\"bold\">", "")
                .replace("</tspan>", "");
            out.push((attrs, inner));
            rest = &rest[end..];
        }
        out
    }

    fn attr(attrs: &str, name: &str) -> Option<f64> {
        let key = format!("{name}=\"");
        let p = attrs.find(&key)? + key.len();
        let end = attrs[p..].find('"')?;
        attrs[p..p + end].parse().ok()
    }

    fn fill(attrs: &str) -> String {
        let p = attrs.find("fill=\"").map(|p| p + 6).unwrap_or(0);
        attrs[p..].split('"').next().unwrap_or("").to_string()
    }

    #[test]
    fn profiles_get_short_labels_and_a_legend_with_the_full_identifier() {
        let legacy = format!("legacy-aes256gcm-v1-2516d3eccb18/{LONG_SQLITE}");
        let m = manifest(&[
            (&legacy, [17, 3, 2, 0, 0]),
            (LONG_SQLITE, [243, 101, 39, 0, 0]),
        ]);
        let labels = profile_labels(&m);
        assert_eq!(
            labels,
            vec![
                ("P1 legacy".to_string(), legacy.clone()),
                ("P2 sqlite".to_string(), LONG_SQLITE.to_string())
            ]
        );
        let svg = verdict_chart(&m);
        let texts = texts(&svg);
        // The row labels are the short ones, and nothing else long sits left of the bars.
        for (label, _) in &labels {
            assert!(
                texts.iter().any(|(_, t)| t == label),
                "no row label {label}: {svg}"
            );
        }
        for (a, t) in &texts {
            if attr(a, "y").is_some_and(|y| y < TOP + ROW_H * 2.0) {
                assert!(t.chars().count() <= 40, "long text on the chart: {t}");
            }
        }
        // The legend maps each short label to the whole identifier, untruncated.
        for (label, profile) in &labels {
            let line = format!("{label} = {profile}");
            assert!(
                texts.iter().any(|(_, t)| *t == line),
                "legend lacks {line:?}: {svg}"
            );
        }
        assert!(!svg.contains('…'), "{svg}");
        // The legend fits the drawing.
        let width = attr(&svg[..svg.find('>').unwrap_or(0)], "width").unwrap_or(0.0);
        let longest = labels
            .iter()
            .map(|(l, p)| l.len() + p.len() + 3)
            .max()
            .unwrap_or(0);
        assert!(width >= longest as f64 * LEGEND_CHAR_W + LABEL_X, "{width}");
    }

    #[test]
    fn counts_fit_their_segment_in_a_contrasting_colour_or_sit_under_the_bar() {
        let m = manifest(&[("sqlite-v1-x", [1000, 400, 1, 12, 0])]);
        let svg = verdict_chart(&m);
        let texts = texts(&svg);
        let bar_bottom = TOP + BAR_H;
        let find = |n: &str| {
            texts
                .iter()
                .find(|(_, t)| t == n)
                .unwrap_or_else(|| panic!("count {n} not drawn: {svg}"))
                .0
                .clone()
        };
        // Wide segments: inside the bar, centred, legible on the fill.
        let verified = find("1000");
        assert!(attr(&verified, "y").is_some_and(|y| y < bar_bottom));
        assert_eq!(fill(&verified), "white", "white on dark green");
        let source_only = find("400");
        assert!(attr(&source_only, "y").is_some_and(|y| y < bar_bottom));
        assert_eq!(fill(&source_only), DARK, "dark text on light green");
        // Narrow segments (1 and 12 of 1413 sessions, under 6 px): under the bar,
        // dark on the background, not overlapping each other.
        let one = find("1");
        let twelve = find("12");
        for a in [&one, &twelve] {
            assert!(attr(a, "y").is_some_and(|y| y > bar_bottom), "{a}");
            assert_eq!(fill(a), DARK);
        }
        let (x1, x12) = (
            attr(&one, "x").unwrap_or(0.0),
            attr(&twelve, "x").unwrap_or(0.0),
        );
        assert!(x12 >= x1 + CHAR_W + 6.0, "{x1} {x12}");
        // Each drawn count fits where it is drawn.
        assert!(BAR_W * 1000.0 / 1413.0 >= needed_width(1000));
        assert!(BAR_W * 12.0 / 1413.0 < needed_width(12));
    }

    #[test]
    fn text_colour_contrasts_with_every_fill() {
        for (name, fill) in COLORS {
            let want = match name {
                "verified-source-only" | "unknown" => DARK,
                _ => "white",
            };
            assert_eq!(text_on(fill), want, "{name} {fill}");
        }
    }
}
