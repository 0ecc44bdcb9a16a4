//! The qualification report: totals, per-profile and per-format counts,
//! refusal reasons by class and rule, step-type coverage, corpus digest,
//! timing and throughput.

use crate::manifest::{Counts, Manifest};
use crate::outcome::Refused;
use crate::report::escape::{md_code, md_text};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt::Write;

/// `sha256:` over the sorted `fileId sourceDigest` lines: one value naming the corpus.
pub fn corpus_digest(m: &Manifest) -> String {
    let mut h = Sha256::new();
    for s in &m.sessions {
        h.update(format!("{} {}\n", s.file_id, s.source_digest).as_bytes());
    }
    format!("sha256:{}", crate::util::hex(&h.finalize()))
}

fn counts_row(name: &str, c: &Counts) -> String {
    format!(
        "| {name} | {} | {} | {} | {} | {} | {} | {} | {} |",
        c.selected,
        c.verified,
        c.verified_source_only,
        c.unknown,
        c.incomplete,
        c.error + c.not_fetched,
        c.sqlite,
        c.protobuf
    )
}

/// The rules a refusal class names: `rule` for one session, `rule (k
/// sessions)` for more, then how many named none; `none` when none did.
fn rules_cell(sessions: u64, rules: &BTreeMap<String, u64>) -> String {
    let mut parts: Vec<String> = rules
        .iter()
        .map(|(r, k)| match k {
            1 => md_code(r, true),
            k => format!("{} ({k} sessions)", md_code(r, true)),
        })
        .collect();
    let named: u64 = rules.values().sum();
    if parts.is_empty() {
        return "none".into();
    }
    match sessions.saturating_sub(named) {
        0 => {}
        1 => parts.push("1 session named none".into()),
        k => parts.push(format!("{k} sessions named none")),
    }
    parts.join(", ")
}

const COUNTS_HEAD: &str = "| | selected | verified | verified, source-only | unknown | incomplete | not fetched or error | sqlite | protobuf |\n|---|---|---|---|---|---|---|---|---|";

/// Renders the report; `chart` is the SVG file name to link, if any.
pub fn render_report(m: &Manifest, chart: Option<&str>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# agy-audit qualification report\n");
    let _ = writeln!(
        s,
        "- manifest version {}, {}",
        m.manifest_version,
        if m.complete {
            "complete"
        } else {
            "**incomplete run**"
        }
    );
    let _ = writeln!(
        s,
        "- root {}, endpoint {}",
        md_code(&m.root, false),
        md_code(&m.endpoint, false)
    );
    let _ = writeln!(
        s,
        "- started {}, finished {}",
        md_text(&m.started),
        m.finished
            .as_deref()
            .map_or("(not finished)".into(), md_text)
    );
    let _ = writeln!(s, "- corpus digest `{}`", corpus_digest(m));
    if let Some(sh) = &m.shard {
        let _ = writeln!(s, "- shard {}", md_text(sh));
    }
    let c = &m.counts;
    let _ = writeln!(s, "\n## Totals\n");
    let _ = writeln!(
        s,
        "{} sessions: **{} verified**, {} verified with source-only fields, {} unknown, {} incomplete, {} not fetched, {} errors ({} not verified, {} of them legacy).\n",
        c.selected, c.verified, c.verified_source_only, c.unknown, c.incomplete, c.not_fetched, c.error, c.not_verified, c.legacy_unverifiable
    );
    if let Some(chart) = chart {
        let _ = writeln!(
            s,
            "![Verdicts per profile]({chart})\n\nThe chart labels each profile P1, P2, ... as in the first column below.\n"
        );
    }
    // The chart's short labels (P1, P2, ...) name the same profiles.
    let _ = writeln!(
        s,
        "## Per profile\n\n| chart | profile | selected | verified | verified, source-only | unknown | incomplete | not fetched or error | sqlite | protobuf |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    for ((label, p), c) in crate::report::svg::profile_labels(m)
        .iter()
        .zip(m.counts_by_profile.values())
    {
        let _ = writeln!(
            s,
            "{}",
            counts_row(&format!("{label} | {}", md_code(p, true)), c)
        );
    }
    let _ = writeln!(s, "\n## Per format\n\n{COUNTS_HEAD}");
    for (f, c) in &m.counts_by_format {
        let _ = writeln!(s, "{}", counts_row(&md_text(f), c));
    }
    // Per class: sessions, and the qualified rule each refusal names (most
    // refusals, of the source itself, name none).
    let mut by_class: BTreeMap<String, (u64, BTreeMap<String, u64>)> = BTreeMap::new();
    for sess in &m.sessions {
        if matches!(sess.verdict_str(), "verified" | "verified-source-only") {
            continue;
        }
        let class = sess
            .class()
            .map(|c| c.id().to_string())
            .unwrap_or_else(|| "error".into());
        let e = by_class.entry(class).or_default();
        e.0 += 1;
        let rule = sess.result.refusal().and_then(Refused::rule);
        if let Some(rule) = rule {
            *e.1.entry(rule.id().to_string()).or_insert(0) += 1;
        }
    }
    let _ = writeln!(
        s,
        "\n## Refusal reasons\n\n| class | sessions | qualified rules named |\n|---|---|---|"
    );
    for (class, (n, rules)) in &by_class {
        let _ = writeln!(
            s,
            "| {} | {n} | {} |",
            md_text(class),
            rules_cell(*n, rules)
        );
    }
    let mut rules_used: BTreeMap<&str, u64> = BTreeMap::new();
    let mut types: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for sess in &m.sessions {
        for r in &sess.rules {
            *rules_used.entry(r).or_insert(0) += 1;
        }
        let ok = matches!(sess.verdict_str(), "verified" | "verified-source-only");
        for (t, n) in &sess.step_types {
            let e = types.entry(t).or_insert((0, 0));
            e.0 += n;
            if ok {
                e.1 += n;
            }
        }
    }
    let _ = writeln!(
        s,
        "\n## Qualified rules exercised\n\n| rule | sessions |\n|---|---|"
    );
    for (r, n) in &rules_used {
        let _ = writeln!(s, "| {} | {n} |", md_text(r));
    }
    rpc_only_section(&mut s, m);
    let _ = writeln!(
        s,
        "\n## Step-type coverage\n\n| step type | steps | in verified sessions |\n|---|---|---|"
    );
    let mut types: Vec<_> = types.into_iter().collect();
    types.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
    for (t, (n, v)) in types {
        let _ = writeln!(s, "| {} | {n} | {v} |", md_text(t));
    }
    let t = &m.timing;
    let _ = writeln!(s, "\n## Timing and throughput\n");
    let secs = t.wall_seconds.max(1e-9);
    let _ = writeln!(
        s,
        "- wall time {:.2} s at concurrency {}, {} decode jobs\n- {:.1} sessions/s, {:.0} steps/s, {:.2} MB/s of source ({} steps, {:.1} MB)",
        t.wall_seconds,
        t.concurrency,
        t.jobs,
        m.sessions.len() as f64 / secs,
        t.steps as f64 / secs,
        t.source_bytes as f64 / 1e6 / secs,
        t.steps,
        t.source_bytes as f64 / 1e6
    );
    s
}

/// `steps[12].x[3].y` as `steps[].x[].y`: one row per place, not per index.
fn path_pattern(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push('[');
            }
            ']' => {
                in_index = false;
                out.push(']');
            }
            _ if in_index => {}
            _ => out.push(c),
        }
    }
    out
}

/// The ordinary responses' members the schema does not know, which the
/// comparison kept in the payload ("Unknown RPC-only JSON fields remain in
/// the saved payload and its digest"): counted per place, so that a release
/// that adds one is visible.
fn rpc_only_section(s: &mut String, m: &Manifest) {
    let mut places: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut unlisted = 0usize;
    for sess in &m.sessions {
        let mut seen: std::collections::BTreeSet<String> = Default::default();
        for p in &sess.rpc_only_fields {
            let pattern = path_pattern(p);
            let e = places.entry(pattern.clone()).or_insert((0, 0));
            e.1 += 1;
            if seen.insert(pattern) {
                e.0 += 1;
            }
        }
        unlisted += sess.rpc_only_fields_unlisted;
    }
    let _ = writeln!(s, "\n## RPC-only fields\n");
    if places.is_empty() {
        let _ = writeln!(
            s,
            "None: every member of every verified ordinary response is a field of the schema."
        );
        return;
    }
    let _ = writeln!(
        s,
        "Members of the ordinary responses that the schema does not know, kept in the saved payload and its digest.\n\n| place | sessions | members |\n|---|---|---|"
    );
    for (place, (sessions, n)) in &places {
        let _ = writeln!(s, "| {} | {sessions} | {n} |", md_code(place, true));
    }
    if unlisted > 0 {
        let _ = writeln!(s, "\n{unlisted} more past the listed ones.");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::SessionRecord;
    use crate::outcome::SessionOutcome;
    use crate::source::Format;
    use crate::verdict::{ReasonClass, Refusal};

    fn refused(id: usize, class: ReasonClass, reason: &str) -> SessionRecord {
        SessionRecord::for_test(
            id,
            "sqlite-v1-format0-modeled-19f5ca8aba2b-r12934a-planner50-permission2-prompt23-history2",
            SessionOutcome::refused(Refusal::new(class, "", reason)),
        )
    }

    fn section<'a>(md: &'a str, title: &str) -> &'a str {
        let start = md.find(title).unwrap_or(md.len());
        let end = md[start + 1..]
            .find("\n## ")
            .map(|p| start + 1 + p)
            .unwrap_or(md.len());
        &md[start..end]
    }

    #[test]
    fn refusal_rows_read_cleanly_without_placeholder_rules() {
        let mut m = Manifest::new("/r", "e", "t".into());
        let rule = crate::rules::RuleId::ALL[0].id();
        let mut id = 0;
        let mut add = |m: &mut Manifest, class, reason: String| {
            id += 1;
            m.add(refused(id, class, &reason));
        };
        for _ in 0..3 {
            add(
                &mut m,
                ReasonClass::UnknownField,
                "steps[1].metadata: unknown field 900 (varint)".into(),
            );
        }
        add(
            &mut m,
            ReasonClass::UnqualifiedProjection,
            format!("steps[3]: out of bounds ({rule})"),
        );
        add(
            &mut m,
            ReasonClass::UnqualifiedProjection,
            format!("steps[4]: out of bounds ({rule})"),
        );
        add(
            &mut m,
            ReasonClass::UnqualifiedProjection,
            "steps[5]: no rule applies".into(),
        );
        let mut error = refused(99, ReasonClass::UnknownField, "");
        error.result = SessionOutcome::Error {
            reason: String::new(),
        };
        m.add(error);
        let md = render_report(&m, None);
        let table = section(&md, "## Refusal reasons");
        assert!(
            !table.contains("- \u{d7}") && !table.contains("| - |"),
            "{table}"
        );
        assert!(!table.contains("\u{d7}1"), "{table}");
        assert!(table.contains("| unknown-field | 3 | none |"), "{table}");
        assert!(table.contains("| error | 1 | none |"), "{table}");
        assert!(
            table.contains(&format!(
                "| unqualified-projection | 3 | `{rule}` (2 sessions), 1 session named none |"
            )),
            "{table}"
        );
    }

    #[test]
    fn the_per_profile_table_maps_chart_labels_to_profiles() {
        let mut m = Manifest::new("/r", "e", "t".into());
        m.add(refused(1, ReasonClass::UnknownField, "x"));
        let mut legacy = refused(2, ReasonClass::UnknownField, "x");
        legacy.profile = format!("legacy-aes256gcm-v1-2516d3eccb18/{}", legacy.profile);
        legacy.format = Format::Protobuf;
        m.add(legacy);
        let md = render_report(&m, Some("r.svg"));
        let table = section(&md, "## Per profile");
        for (label, profile) in crate::report::svg::profile_labels(&m) {
            assert!(
                table.contains(&format!("| {label} | `{profile}` |")),
                "{label}: {table}"
            );
        }
        assert!(md.contains("P1, P2"), "{md}");
    }
}
