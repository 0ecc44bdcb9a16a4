//! `agy-audit export-check`: offline exports against a sweep's saved daemon
//! answers (the specification's opt-in `TestExportOfflineCorpus`, as a
//! command; `tests/export_offline_corpus.rs` is that test, driving this
//! command from the specification's variables).

use super::common::DecodeArgs;
use crate::export::{
    answer_markdown, export_json, offline_export, offline_markdown, offline_notice, OfflineExport,
};
use crate::rpc::TrajectoryResponse;
use crate::source::ReadOptions;
use crate::verdict::{exit, Outcome, VerdictKind};
use anyhow::Context;
use clap::Args;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Compare each verified session's offline export with the daemon answer the
/// sweep saved: the source's profile and digest must be the manifest's; the
/// exported JSON (`export-offline`'s), without reader provenance (agyReader)
/// and with an omitted empty steps list made explicit, must denote the same
/// trajectory as the saved ordinary answer (values under the proto3 JSON
/// mapping, so any legal spelling of the answer compares equal); and the
/// bytes `export-offline --format md --no-tree` writes for the session (this
/// session alone, no subagent nested) must equal the Markdown rendered from
/// the saved answer, except for the offline notice: the answer is rendered
/// under the export's own notice, so the notice is never compared and the
/// line numbers of a difference are the export's. The transcript has no
/// generation time, so nothing else is excluded. Every difference is listed,
/// and so is every session not compared, with why.
#[derive(Debug, Args)]
#[command(
    after_help = "Output: one line per session of the manifest: SAME, DIFFERS (each difference), ERROR, or NOT CHECKED with the reason (a session the sweep did not verify has no verified answer to compare with), then a count line (sessions, same, differ, error, notChecked).\n\nExit codes: 0 every export equals its saved answer, 1 an error (a missing source or answer, a manifest that is not complete), 2 usage, 4 a difference."
)]
pub struct ExportCheckArgs {
    /// The sweep's manifest.json (its corpus/ folder beside it holds the
    /// saved answers).
    pub manifest: PathBuf,
    /// Store root holding the sources under conversations/ (default: the
    /// manifest's root).
    #[arg(long, value_name = "DIR", conflicts_with = "sources")]
    pub root: Option<PathBuf>,
    /// The folder of the sources themselves, `<fileId>.db` (or `.pb`) each:
    /// a store's conversations/ folder or a copy of it (the specification's
    /// AGY_READER_OFFLINE_SOURCES).
    #[arg(long, value_name = "DIR")]
    pub sources: Option<PathBuf>,
    #[command(flatten)]
    pub decode: DecodeArgs,
}

/// Why a session of the manifest was not compared; each one is listed with
/// its reason (`NOT CHECKED <fileId>: <reason>`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum NotChecked {
    /// The sweep did not verify it (refused, not fetched, or an error):
    /// there is no verified answer to compare its export with.
    NotVerified {
        outcome: &'static str,
        reason: Option<String>,
    },
}

impl std::fmt::Display for NotChecked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotChecked::NotVerified { outcome, reason } => {
                write!(f, "not verified: the sweep's verdict is {outcome}")?;
                if let Some(r) = reason {
                    write!(f, " ({r})")?;
                }
                Ok(())
            }
        }
    }
}

/// Why `s` is not compared, none when it is.
fn not_checked(s: &crate::manifest::SessionRecord) -> Option<NotChecked> {
    match s.outcome() {
        Outcome::Verdict(VerdictKind::Verified | VerdictKind::VerifiedSourceOnly) => None,
        o => Some(NotChecked::NotVerified {
            outcome: o.as_str(),
            reason: s.reason_text().map(str::to_string),
        }),
    }
}

/// A line of at most this many characters is shown whole in a difference.
const WHOLE_LINE: usize = 100;
/// Characters shown before where a long text first differs.
const WINDOW_BEFORE: usize = 30;
/// Characters shown from where a long text first differs.
const WINDOW_AFTER: usize = 40;
/// `compare::value` shows a value in at most this many characters of its
/// JSON text: a longer one on each side may read the same in its
/// difference, which then also shows where they first differ.
const SHOWN_VALUE: usize = 60;

/// The zero-based character position where `a` and `b` first differ (the
/// shorter one's length when one is a prefix of the other); none when they
/// are equal.
fn first_difference(a: &str, b: &str) -> Option<usize> {
    let mut n = 0;
    let (mut x, mut y) = (a.chars(), b.chars());
    loop {
        match (x.next(), y.next()) {
            (None, None) => return None,
            (p, q) if p == q => n += 1,
            _ => return Some(n),
        }
    }
}

/// `s` quoted for a terminal line: `"` and `\` escaped, control characters
/// shown visibly (`report::escape::terminal`).
fn quoted(s: &str) -> String {
    let escaped = s.replace('\\', "\\\\").replace('"', "\\\"");
    format!("\"{}\"", crate::report::escape::terminal(&escaped))
}

/// The characters of `s` around position `at`, quoted, with `…` outside
/// the quotes where `s` goes on.
fn window(s: &str, at: usize) -> String {
    let from = at.saturating_sub(WINDOW_BEFORE);
    let shown: String = s
        .chars()
        .skip(from)
        .take(WINDOW_BEFORE + WINDOW_AFTER)
        .collect();
    let more = s.chars().count() > from + WINDOW_BEFORE + WINDOW_AFTER;
    format!(
        "{}{}{}",
        if from > 0 { "…" } else { "" },
        quoted(&shown),
        if more { "…" } else { "" }
    )
}

/// The first differing line of two texts, one-based, with both lines: whole
/// when both fit in [`WHOLE_LINE`] characters, else the window of each
/// around the first character where they differ (never two prefixes cut to
/// the same text); the column (one-based, in characters) follows.
fn first_line_difference(a: &str, b: &str) -> Option<String> {
    let (mut la, mut lb) = (a.lines(), b.lines());
    let mut n = 0;
    loop {
        n += 1;
        match (la.next(), lb.next()) {
            (None, None) => return None,
            (x, y) if x == y => continue,
            (Some(x), Some(y)) => {
                let at = first_difference(x, y).unwrap_or(0);
                let whole = x.chars().count() <= WHOLE_LINE && y.chars().count() <= WHOLE_LINE;
                let show = |l: &str| if whole { quoted(l) } else { window(l, at) };
                return Some(format!(
                    "markdown line {n}: offline {}, from the answer {} (first difference at column {})",
                    show(x),
                    show(y),
                    at + 1
                ));
            }
            (x, y) => {
                let show = |l: Option<&str>| match l {
                    None => "(end)".to_string(),
                    Some(l) if l.chars().count() <= WHOLE_LINE => quoted(l),
                    Some(l) => window(l, 0),
                };
                return Some(format!(
                    "markdown line {n}: offline {}, from the answer {}",
                    show(x),
                    show(y)
                ));
            }
        }
    }
}

/// The value at a `compare::value` difference path (`steps[3].x.y`, or
/// `(root)`) in `v`; a member matched by its name as written, else by its
/// lowerCamelCase form (a proto field name against its JSON name). None
/// when the path does not resolve (a map key holding `.` or `[`).
fn at_path<'v>(v: &'v Value, path: &str) -> Option<&'v Value> {
    fn camel(k: &str) -> String {
        let mut out = String::with_capacity(k.len());
        let mut up = false;
        for c in k.chars() {
            match c {
                '_' => up = true,
                c if up => {
                    out.extend(c.to_uppercase());
                    up = false;
                }
                c => out.push(c),
            }
        }
        out
    }
    if path == "(root)" {
        return Some(v);
    }
    let mut cur = v;
    for segment in path.split('.') {
        let (name, mut rest) = match segment.find('[') {
            Some(i) => (&segment[..i], &segment[i..]),
            None => (segment, ""),
        };
        if !name.is_empty() {
            let o = cur.as_object()?;
            cur = match o.get(name) {
                Some(x) => x,
                None => {
                    let want = camel(name);
                    o.iter().find(|(k, _)| camel(k) == want).map(|(_, x)| x)?
                }
            };
        }
        while let Some(r) = rest.strip_prefix('[') {
            let (index, after) = r.split_once(']')?;
            cur = cur.as_array()?.get(index.parse::<usize>().ok()?)?;
            rest = after;
        }
        if !rest.is_empty() {
            return None;
        }
    }
    Some(cur)
}

/// Where the two sides of a JSON difference first differ, when a side is
/// too long for the difference to show whole ([`SHOWN_VALUE`]): `(first
/// difference at character N: offline …"…"…, answer …"…"…)`, the
/// characters of a string's text, else of the value's JSON text.
fn json_position(diff: &str, offline: &Value, answer: &Value) -> Option<String> {
    let path = diff.split_once(": ")?.0;
    let (o, a) = (at_path(offline, path)?, at_path(answer, path)?);
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    let (o, a) = (text(o), text(a));
    if o.chars().count() <= SHOWN_VALUE && a.chars().count() <= SHOWN_VALUE {
        return None;
    }
    let at = first_difference(&o, &a)?;
    Some(format!(
        " (first difference at character {}: offline {}, answer {})",
        at + 1,
        window(&o, at),
        window(&a, at)
    ))
}

/// `v` without `agyReader` and with `steps` explicit.
fn comparable(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove(crate::attest::NAMESPACE);
        o.entry("steps").or_insert_with(|| Value::Array(Vec::new()));
    }
    v
}

pub fn run(mut a: ExportCheckArgs) -> anyhow::Result<i32> {
    // A sweep folder names its manifest.json: from here on, the file.
    let (manifest_file, m) = crate::manifest::read::read(&a.manifest)?;
    a.manifest = manifest_file;
    if !m.complete {
        crate::note!(
            "export-check: {}: refused: the manifest is not complete; finish it with `agy-audit audit-sweep --resume` first",
            a.manifest.display()
        );
        return Ok(exit::ERROR);
    }
    if let Some(dir) = &a.sources {
        if !dir.is_dir() {
            anyhow::bail!("--sources {}: not a folder", dir.display());
        }
    }
    let (schema, key) = a.decode.load()?;
    let root = a.root.clone().unwrap_or_else(|| PathBuf::from(&m.root));
    let source_of = |s: &crate::manifest::SessionRecord| match &a.sources {
        Some(dir) => dir.join(s.source_file_name()),
        None => s.source_path(&root),
    };
    let sweep = crate::sweep_dir::SweepDir::of_manifest(&a.manifest);
    // export-offline's defaults: no --allow-unknown.
    let opts = ReadOptions {
        schema: &schema,
        legacy_key: &key,
        collect_all: false,
        fingerprint: false,
    };
    let (mut same, mut differ, mut errors, mut unchecked) = (0usize, 0usize, 0usize, 0usize);
    for s in &m.sessions {
        if let Some(why) = not_checked(s) {
            unchecked += 1;
            outln!("NOT CHECKED {}: {why}", s.file_id);
            continue;
        }
        let path = source_of(s);
        let answer_path = sweep.answer(&s.file_id, crate::sweep_dir::Answer::Ordinary);
        match check_one(&schema, &opts, &path, &answer_path, s) {
            Ok((diffs, form)) if diffs.is_empty() => {
                same += 1;
                match form {
                    Some(alt) => outln!(
                        "SAME {} ({}; compared in that form)",
                        s.file_id,
                        alt.describe()
                    ),
                    None => outln!("SAME {}", s.file_id),
                }
            }
            Ok((diffs, _)) => {
                differ += 1;
                outln!("DIFFERS {}: {}", s.file_id, diffs.join("; "));
            }
            Err(e) => {
                errors += 1;
                outln!("ERROR {}: {}", s.file_id, super::errors::chain_text(&e));
            }
        }
    }
    outln!(
        "export-check: sessions={} same={same} differ={differ} error={errors} notChecked={unchecked}",
        m.sessions.len()
    );
    Ok(if errors > 0 {
        exit::ERROR
    } else if differ > 0 {
        exit::INCOMPLETE
    } else {
        exit::OK
    })
}

/// The differences of one session's offline export from its saved answer,
/// and the alternative form the JSON matched in, if not the presented one.
fn check_one(
    schema: &crate::schema::Schema,
    opts: &ReadOptions<'_>,
    path: &Path,
    answer_path: &Path,
    s: &crate::manifest::SessionRecord,
) -> anyhow::Result<(Vec<String>, Option<crate::project::Alternative>)> {
    let mut diffs = Vec::new();
    // What export-offline makes of the source: one read, one projection.
    let OfflineExport {
        source: src,
        json,
        projection,
    } = offline_export(path, opts).with_context(|| format!("reading {}", path.display()))?;
    if src.profile != s.profile {
        diffs.push(format!("profile {} (manifest {})", src.profile, s.profile));
    }
    if src.source_digest != s.source_digest {
        diffs.push(format!(
            "source digest {} (manifest {})",
            src.source_digest, s.source_digest
        ));
    }
    if let Some(r) = src.reason() {
        anyhow::bail!("{}: no longer qualifies offline: {r}", path.display());
    }
    let (Some(json), Some(mut projection)) = (json, projection) else {
        anyhow::bail!("{}: the source does not decode", path.display());
    };
    let body =
        crate::util::bounded::read_regular(answer_path, crate::util::bounded::InputKind::Answer)
            .with_context(|| format!("reading the saved answer {}", answer_path.display()))?;
    let answer = TrajectoryResponse::parse_captured(body)
        .map_err(|d| anyhow::anyhow!("{}: {d}", answer_path.display()))?;
    let answer_value = match crate::compare::parse_value(answer.trajectory()) {
        Ok(v) => comparable(v),
        Err(e) => anyhow::bail!("{}: {e}", answer_path.display()),
    };
    let answer_text = answer_value.to_string();
    // Values, not text: the export as a message, the answer compared with
    // it under the proto3 JSON mapping (any member the schema does not know
    // is a difference here: the offline export cannot hold it).
    let json_diffs_of = |exported: &Value| -> anyhow::Result<Vec<String>> {
        let expected =
            crate::compare::parse_strict(schema, &comparable(exported.clone()).to_string())
                .map_err(|e| {
                    anyhow::anyhow!("{}: the export does not parse back: {e}", path.display())
                })?;
        Ok(crate::compare::value::diff_text(
            &expected,
            &answer_text,
            crate::compare::MAX_REPORTED_PATHS,
        ))
    };
    // The export keeps each stored WaitMsBeforeAsync (replay147's copied
    // form, "Offline export uses the form that preserves stored waits"); an
    // answer in the other complete form (waits omitted throughout) is
    // compared with the export in that form, and the line says so.
    let mut json_diffs = json_diffs_of(&json)?;
    let mut form = None;
    if !json_diffs.is_empty() {
        for i in 0..projection.alternatives().len() {
            let Some(tried) = projection.with_alternative(i, |p| {
                let ordinary = src.trajectory.as_ref().map(|t| p.ordinary(t));
                let other = export_json(&src, ordinary.as_ref()).ok_or_else(|| {
                    anyhow::anyhow!("{}: the source does not decode", path.display())
                })?;
                json_diffs_of(&other)
            }) else {
                continue;
            };
            if tried?.is_empty() {
                form = Some(projection.alternatives()[i].kind);
                json_diffs = Vec::new();
                break;
            }
        }
    }
    // Each difference as the comparison words it (its path as the answer
    // spells it, shown visibly), then where long sides first differ.
    let offline_value = match json_diffs.is_empty() {
        true => Value::Null,
        false => comparable(json.clone()),
    };
    diffs.extend(json_diffs.into_iter().map(|d| {
        let position = json_position(&d, &offline_value, &answer_value).unwrap_or_default();
        format!("json {}{position}", crate::report::escape::terminal(&d))
    }));
    // Markdown: the bytes export-offline --format md --no-tree writes (the
    // presented form, whichever form the answer matched in) against the
    // transcript of the answer (normalized to the daemon's canonical
    // spelling, maps in the export's order) under the export's own notice.
    let offline_md = offline_markdown(&src, &json);
    match crate::compare::parse_strict(schema, &answer_text) {
        Ok(msg) => {
            let from_answer = answer_markdown(&msg, &offline_notice(&src));
            diffs.extend(first_line_difference(&offline_md, &from_answer));
        }
        Err(e) => diffs.push(format!("markdown: the answer does not parse strictly: {e}")),
    }
    Ok((diffs, form))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_lines_show_where_they_differ_not_a_shared_prefix() {
        let common: String = "word ".repeat(30);
        let (a, b) = (
            format!("{common}offline tail"),
            format!("{common}answer tail"),
        );
        let d = first_line_difference(&format!("same\n{a}\n"), &format!("same\n{b}\n")).unwrap();
        assert!(d.starts_with("markdown line 2: offline …\""), "{d}");
        assert!(d.contains("offline tail\", from the answer …\""), "{d}");
        assert!(
            d.ends_with("answer tail\" (first difference at column 151)"),
            "{d}"
        );
        // Short lines are shown whole, as before.
        let d = first_line_difference("a \"q\"\n", "a \"r\"\n").unwrap();
        assert_eq!(
            d,
            "markdown line 1: offline \"a \\\"q\\\"\", from the answer \"a \\\"r\\\"\" (first difference at column 4)"
        );
        // A missing line, and control characters shown visibly.
        let d = first_line_difference("x\n", "x\ny\u{1b}[2J\n").unwrap();
        assert_eq!(
            d,
            "markdown line 2: offline (end), from the answer \"y\\u{1b}[2J\""
        );
        assert_eq!(first_line_difference("a\nb", "a\nb"), None);
    }

    #[test]
    fn json_differences_past_the_shown_width_give_their_position() {
        let long = "x".repeat(80);
        let offline = json!({"steps": [{"plannerResponse": {"response": format!("{long}ab")}}]});
        let answer = json!({"steps": [{"planner_response": {"response": format!("{long}aZ")}}]});
        let diff = "steps[0].planner_response.response: \"xxx…\", expected \"xxx…\"";
        assert_eq!(
            json_position(diff, &offline, &answer).as_deref(),
            Some(
                " (first difference at character 82: offline …\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxab\", answer …\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxaZ\")"
            )
        );
        // Short values are shown whole by the difference itself.
        let (o, a) = (json!({"cascadeId": "a"}), json!({"cascadeId": "b"}));
        assert_eq!(
            json_position("cascadeId: \"b\", expected \"a\"", &o, &a),
            None
        );
        // A path that does not resolve on both sides: nothing added.
        assert_eq!(
            json_position("steps[3].x: missing", &offline, &answer),
            None
        );
        assert_eq!(at_path(&offline, "(root)"), Some(&offline));
    }
}
