//! An SVG chart of verdicts per profile (stacked horizontal bars).

use crate::manifest::Manifest;
use std::fmt::Write;

const COLORS: [(&str, &str); 5] = [
    ("verified", "#2e7d32"),
    ("verified-source-only", "#81c784"),
    ("unknown", "#f9a825"),
    ("incomplete", "#c62828"),
    ("error", "#616161"),
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The chart as an SVG document.
pub fn verdict_chart(m: &Manifest) -> String {
    let rows: Vec<(String, [u64; 5])> = m
        .counts_by_profile
        .iter()
        .map(|(p, c)| {
            (
                p.clone(),
                [
                    c.verified,
                    c.verified_source_only,
                    c.unknown,
                    c.incomplete,
                    c.error,
                ],
            )
        })
        .collect();
    let width = 900.0;
    let bar_w = 560.0;
    let row_h = 46.0;
    let height = 70.0 + row_h * rows.len().max(1) as f64 + 40.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        r#"<text x="10" y="22" font-size="16" font-weight="bold">Verdicts per profile ({} sessions)</text>"#,
        m.counts.selected
    );
    for (i, (profile, counts)) in rows.iter().enumerate() {
        let y = 50.0 + row_h * i as f64;
        let total: u64 = counts.iter().sum();
        let label: String = if profile.chars().count() > 110 {
            format!("{}…", profile.chars().take(110).collect::<String>())
        } else {
            profile.clone()
        };
        let _ = writeln!(
            s,
            r#"<text x="10" y="{:.1}" font-size="10">{}</text>"#,
            y + 10.0,
            esc(&label)
        );
        let mut x = 10.0;
        for (j, n) in counts.iter().enumerate() {
            if *n == 0 || total == 0 {
                continue;
            }
            let w = bar_w * *n as f64 / total as f64;
            let _ = writeln!(
                s,
                r#"<rect x="{x:.1}" y="{:.1}" width="{w:.1}" height="20" fill="{}"><title>{}: {n}</title></rect>"#,
                y + 16.0,
                COLORS[j].1,
                COLORS[j].0
            );
            if w > 24.0 {
                let _ = writeln!(
                    s,
                    r#"<text x="{:.1}" y="{:.1}" fill="white">{n}</text>"#,
                    x + 4.0,
                    y + 30.0
                );
            }
            x += w;
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}">{total}</text>"#,
            10.0 + bar_w + 8.0,
            y + 30.0
        );
    }
    let ly = height - 24.0;
    let mut lx = 10.0;
    for (name, color) in COLORS {
        let _ = writeln!(
            s,
            r#"<rect x="{lx:.1}" y="{:.1}" width="12" height="12" fill="{color}"/><text x="{:.1}" y="{:.1}">{name}</text>"#,
            ly - 10.0,
            lx + 16.0,
            ly
        );
        lx += 30.0 + name.len() as f64 * 7.0;
    }
    s.push_str("</svg>\n");
    s
}
