//! The qualification report: totals, per-profile and per-format counts,
//! refusal reasons by class and rule, step-type coverage, corpus digest,
//! timing and throughput.

use crate::manifest::{Counts, Manifest};
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
        c.error,
        c.sqlite,
        c.protobuf
    )
}

const COUNTS_HEAD: &str = "| | selected | verified | verified, source-only | unknown | incomplete | error | sqlite | protobuf |\n|---|---|---|---|---|---|---|---|---|";

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
    let _ = writeln!(s, "- root `{}`, endpoint `{}`", m.root, m.endpoint);
    let _ = writeln!(
        s,
        "- started {}, finished {}",
        m.started,
        m.finished.as_deref().unwrap_or("(not finished)")
    );
    let _ = writeln!(s, "- corpus digest `{}`", corpus_digest(m));
    if let Some(sh) = &m.shard {
        let _ = writeln!(s, "- shard {sh}");
    }
    let c = &m.counts;
    let _ = writeln!(s, "\n## Totals\n");
    let _ = writeln!(
        s,
        "{} sessions: **{} verified**, {} verified with source-only fields, {} unknown, {} incomplete, {} errors ({} not verified, {} of them legacy).\n",
        c.selected, c.verified, c.verified_source_only, c.unknown, c.incomplete, c.error, c.not_verified, c.legacy_unverifiable
    );
    if let Some(chart) = chart {
        let _ = writeln!(s, "![Verdicts per profile]({chart})\n");
    }
    let _ = writeln!(s, "## Per profile\n\n{COUNTS_HEAD}");
    for (p, c) in &m.counts_by_profile {
        let _ = writeln!(s, "{}", counts_row(&format!("`{p}`"), c));
    }
    let _ = writeln!(s, "\n## Per format\n\n{COUNTS_HEAD}");
    for (f, c) in &m.counts_by_format {
        let _ = writeln!(s, "{}", counts_row(f, c));
    }
    let mut by_class: BTreeMap<String, (u64, BTreeMap<String, u64>)> = BTreeMap::new();
    for sess in &m.sessions {
        if matches!(sess.verdict_str(), "verified" | "verified-source-only") {
            continue;
        }
        let class = sess
            .reason_class
            .map(|c| c.id().to_string())
            .unwrap_or_else(|| "error".into());
        let e = by_class.entry(class).or_default();
        e.0 += 1;
        let rule = sess
            .reason
            .as_deref()
            .and_then(|r| {
                r.rsplit_once('(')
                    .map(|(_, x)| x.trim_end_matches(')').to_string())
            })
            .filter(|x| crate::rules::RuleId::from_id(x).is_some())
            .unwrap_or_else(|| "-".into());
        *e.1.entry(rule).or_insert(0) += 1;
    }
    let _ = writeln!(
        s,
        "\n## Refusal reasons\n\n| class | sessions | rules |\n|---|---|---|"
    );
    for (class, (n, rules)) in &by_class {
        let rules: Vec<String> = rules.iter().map(|(r, k)| format!("{r} ×{k}")).collect();
        let _ = writeln!(s, "| {class} | {n} | {} |", rules.join(", "));
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
        let _ = writeln!(s, "| {r} | {n} |");
    }
    let _ = writeln!(
        s,
        "\n## Step-type coverage\n\n| step type | steps | in verified sessions |\n|---|---|---|"
    );
    let mut types: Vec<_> = types.into_iter().collect();
    types.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
    for (t, (n, v)) in types {
        let _ = writeln!(s, "| {t} | {n} | {v} |");
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
