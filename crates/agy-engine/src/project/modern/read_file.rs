//! read_file: the tools143 ReadFile payload presented as VIEW_FILE, with the
//! skill146 path rule for its isSkillFile flag.

use super::common::{
    argument_values_hold, arguments, call_payload, no_permission_records, payload_claim,
    payload_fields, put, status_is, view_file_presented, view_file_step, wrapper_fields, COMPLETED,
};
use crate::project::args::ArgBound;
use crate::project::checks::qualified_path;
use crate::project::doc::RuleDoc;
use crate::project::family::{Args, Ctx, Family, Hook, Presented};
use crate::project::fields::{has, int, reject, text, Wrapper, DONE, R};
use crate::project::reasons::Reason;
use crate::rules::RuleId;
use bytes::Bytes;
use prost_reflect::Value;

const PAYLOAD_FIELDS: &[&str] = &["path", "start_line", "end_line", "outcome"];
/// With ide225's ByteOffset=0 shape.
const PAYLOAD_FIELDS_OFFSET: &[&str] =
    &["path", "start_line", "end_line", "outcome", "byte_offset"];

pub(crate) const DOCS: &[RuleDoc] = &[
    RuleDoc {
        rule: RuleId::ModernReadFile,
        accepts: "A read_file wrapper with status DONE whose result is only result text and an Any exa.cortex.core.tools.ReadFile with outcome COMPLETED setting only path, start_line, end_line and outcome; path absolute, clean and only ASCII letters, digits and / . _ - @ + (anything else would need URI normalization); both or neither of start_line and end_line with 1 <= start_line <= end_line; arguments exactly AbsolutePath (= path) and, with a range, StartLine and EndLine (canonical decimals equal to the range); no outer error, task details, permission or interaction records. Presented as a VIEW_FILE step with the wrapper's status and metadata and view_file {absolute_path_uri: file:// + path, start_line: start_line - 1, end_line: end_line - 1, content: the stored result text, is_skill_file: the skill146 path rule}.",
        reasons: &[
            Reason::ModernTool,
            Reason::ModernStatus,
            Reason::ModernWrapperField,
            Reason::ModernPayloadField,
            Reason::ModernPath,
            Reason::ModernRange,
            Reason::ModernArguments,
            Reason::ModernDeclaration,
            Reason::ModernPayloadUndecodable,
            Reason::ModernPresentedField,
        ],
    },
    RuleDoc {
        rule: RuleId::ModernSkillPath,
        accepts: "The is_skill_file flag of every modern read presented as VIEW_FILE: set exactly when the stored path, with backslashes read as slashes, ends in /SKILL.md or is exactly SKILL.md (case-sensitive: skill.md and SKILL.MD stay unmarked); no registry, filesystem or content. Replaces the skill1 registry rule (skill1 stays in the profile identifier). Legacy native VIEW_FILE steps keep their stored flag; failed legacy reads keep the history2 registry rule.",
        reasons: &[],
    },
];

/// "ReadFile converts one-based ranges to zero-based VIEW_FILE ranges and
/// keeps the stored result text" (tools143), bounded to "completed reads";
/// "paths requiring URI normalization ... still return unknown".
///
/// Bounds (stricter where silent): tool read_file, wrapper DONE and outcome
/// COMPLETED; the result is only the result text and the payload; the
/// payload sets only path, start_line, end_line and outcome (content,
/// byte_offset, media, num_bytes and not_found are newly populated fields);
/// the path is one `file://` + path needs no normalization for: absolute,
/// clean, only ASCII letters, digits and / . _ - @ + (so a path with a
/// backslash is refused here, before the skill146 rule could read it);
/// both or neither of the lines, 1 <= start <= end; the arguments exactly
/// AbsolutePath and, with a range, StartLine and EndLine, equal to the
/// payload; no outer error or task details; permission1.
///
/// ide225 extends it (`ide225.rs`): both a permission grant and a completed
/// interaction are kept unchanged on the presented step; a ByteOffset `0`
/// argument is accepted with byte_offset 0 in the payload. A payload with
/// media is replay147's image read (`image_read.rs`), one with not_found
/// finish147's missing-file read (`finish.rs`).
fn project(ctx: &Ctx<'_>, w: &Wrapper, bytes: &Bytes) -> R<Presented> {
    let rule = RuleId::ModernReadFile;
    let payload = call_payload(ctx, w, rule, "ReadFile", &["read_file"], bytes)?;
    // A payload setting another rule's field (media, not_found) is that
    // rule's read; without it registered, a newly populated field.
    for (field, project) in ctx.hooks().filter_map(|h| match h {
        Hook::ModernRead { field, project } => Some((*field, *project)),
        _ => None,
    }) {
        if has(&payload, field) {
            return project(w, &payload);
        }
    }
    let records = match ctx.hook(|h| match h {
        Hook::ModernReadRecords(f) => Some(*f),
        _ => None,
    }) {
        Some(records) => records(w)?,
        None => {
            no_permission_records(w)?;
            false
        }
    };
    let step_fields: &[&str] = if records {
        &[
            "type",
            "status",
            "metadata",
            "generic",
            "permissions",
            "completed_interactions",
        ]
    } else {
        &["type", "status", "metadata", "generic"]
    };
    wrapper_fields(w, rule, step_fields, &["result", "payload"])?;
    let offset = match ctx.hook(|h| match h {
        Hook::ModernReadOffset(f) => Some(*f),
        _ => None,
    }) {
        Some(offset) => offset(w, &payload)?,
        None => false,
    };
    payload_fields(
        &payload,
        rule,
        if offset {
            PAYLOAD_FIELDS_OFFSET
        } else {
            PAYLOAD_FIELDS
        },
    )?;
    status_is(w, &payload, rule, DONE, COMPLETED)?;
    let path = text(&payload, "path");
    if !qualified_path(&path) {
        return reject(Some(rule), Reason::ModernPath, path);
    }
    let range = match (int(&payload, "start_line"), int(&payload, "end_line")) {
        (None, None) => None,
        (Some(s), Some(e)) if 1 <= s && s <= e && e <= i128::from(u32::MAX) => Some((s, e)),
        (s, e) => return reject(Some(rule), Reason::ModernRange, format!("{s:?}..{e:?}")),
    };
    // AbsolutePath (= path) and the names (ByteOffset only under ide225's
    // rule, which the offset hook adds) are the declared bounds ([`ARGS`],
    // ide225's), which the dispatcher enforces. StartLine and EndLine
    // present exactly with a stored range, as canonical decimals equal to
    // it, are checked here: the ArgBound vocabulary cannot say a presence
    // that depends on a payload field, nor a canonical decimal.
    let lines_ok = match range {
        None => !w.args.has("StartLine") && !w.args.has("EndLine"),
        Some((s, e)) => {
            w.args.canonical_uint("StartLine").map(i128::from) == Some(s)
                && w.args.canonical_uint("EndLine").map(i128::from) == Some(e)
        }
    };
    argument_values_hold(w, rule, lines_ok)?;
    let content = w.result.map(|r| text(r, "result")).unwrap_or_default();

    let (mut step, mut vf) = view_file_step(w, rule, &path)?;
    if let Some((s, e)) = range {
        // 1 <= s <= e <= u32::MAX, checked above
        let zero = |x: i128| u32::try_from(x - 1).unwrap_or_default();
        put(&mut vf, rule, "start_line", Value::U32(zero(s)))?;
        put(&mut vf, rule, "end_line", Value::U32(zero(e)))?;
    }
    if records {
        for f in ["permissions", "completed_interactions"] {
            if let Some(v) = w.step.get_field_by_name(f) {
                put(&mut step, rule, f, v.into_owned())?;
            }
        }
    }
    let mut presented = view_file_presented(step, vf, rule, &path, content)?;
    if records {
        presented.extra.push(RuleId::ModernIde225ReadPermissions);
    }
    if offset {
        presented.extra.push(RuleId::ModernIde225ByteOffset);
    }
    Ok(presented)
}

/// The family's argument bounds (AbsolutePath is the payload's path; the range both or neither).
const ARGS: &[Args] = &[arguments(
    RuleId::ModernReadFile,
    "read_file",
    ArgBound::NONE
        .equal(&[("AbsolutePath", "path")])
        .optional(&["StartLine", "EndLine"]),
)];

/// The family: tools143 ReadFile (with skill146's path rule); the reads
/// other families shape (ide225, finish147, replay147) through hooks.
pub(crate) const FAMILY: Family = Family {
    file: "modern/read_file.rs",
    docs: DOCS,
    claims: &[payload_claim(
        "type.googleapis.com/exa.cortex.core.tools.ReadFile",
        project,
    )],
    hooks: &[],
    args: ARGS,
};

#[cfg(test)]
mod tests {
    use super::super::common::is_skill_path;

    #[test]
    fn skill146_path_rule() {
        for yes in [
            "SKILL.md",
            "/a/b/SKILL.md",
            "a\\b\\SKILL.md",
            "C:\\x\\SKILL.md",
            "\\SKILL.md",
        ] {
            assert!(is_skill_path(yes), "{yes}");
        }
        for no in [
            "skill.md",
            "SKILL.MD",
            "/a/skill.md",
            "/a/SKILL.md.bak",
            "/a/xSKILL.md",
            "",
            "/a/SKILL.md/",
        ] {
            assert!(!is_skill_path(no), "{no}");
        }
    }
}
