//! view_file rules: the ContentOffset argument of an embedded view-file, and
//! the resultless BUILTIN view_file presented as a VIEW_FILE step.

use super::args::ArgBound;
use super::checks::qualified_path;
use super::doc::RuleDoc;
use super::family::{Args, Ctx, Family, Hook, Presented};
use super::fields::{
    canonical_uint, extra_field, int, new_sub, only_short_full, reject, set, set_enum, step_type,
    sub, tool_call_args, tool_source, Wrapper, BUILTIN, ERROR, R,
};
use super::native::VIEW_FILE;
use super::reasons::Reason;
use crate::rules::RuleId;
use prost_reflect::{DynamicMessage, ReflectMessage, Value};

pub(crate) const DOCS: &[RuleDoc] = &[
    RuleDoc {
        rule: RuleId::ViewFileContentOffset,
        accepts: "A ContentOffset argument on a view_file wrapper over an embedded VIEW_FILE Step, when the argument is a canonical decimal (0 or [1-9][0-9]*, within uint32) and the native Step carries the same value both in its tool-call arguments (the same JSON number) and in view_file.content_offset (unset for 0).",
        reasons: &[Reason::ContentOffset],
    },
    RuleDoc {
        rule: RuleId::ResultlessBuiltinViewFile,
        accepts: "A resultless view_file wrapper with status ERROR, tool source BUILTIN, an outer error of only short and full text, only the type, status, metadata, error and generic.args fields, and arguments equal to the metadata tool call: AbsolutePath (a JSON string: absolute, clean, only ASCII letters, digits and / . _ - @ +) and either both or neither of StartLine and EndLine (canonical decimals, 1 <= StartLine <= EndLine). Presented as a VIEW_FILE step with the wrapper's status, metadata and error and view_file {absolute_path_uri: file:// + path, start_line: StartLine - 1, end_line: EndLine - 1}, is_skill_file per the history2 registry rule.",
        reasons: &[Reason::ResultlessViewFile],
    },
];

/// "A view-file ContentOffset argument is accepted only when it is a
/// canonical decimal and the presented native Step carries the same value,
/// both in its tool-call arguments and in view_file.content_offset. The
/// ordinary response therefore still shows the offset that the dropped
/// argument recorded."
///
/// Bounds: the call is view_file over a VIEW_FILE Step; the raw argument is
/// `0` or `[1-9][0-9]*` within uint32; the native tool call's ContentOffset
/// is the same JSON number text; view_file.content_offset equals it (unset
/// means 0). Anything else fails with `unsupported view_file ContentOffset`.
pub(crate) fn check_content_offset(w: &Wrapper, n: &DynamicMessage) -> R<()> {
    let fail = |d: String| {
        reject(
            Some(RuleId::ViewFileContentOffset),
            Reason::ContentOffset,
            d,
        )
    };
    if w.tool != "view_file" || step_type(n) != VIEW_FILE {
        return fail(format!("a {} call over {}", w.tool, step_type(n)));
    }
    let raw = w.args.raw("ContentOffset").unwrap_or_default().to_string();
    let Some(v) = canonical_uint(&raw).filter(|v| *v <= u64::from(u32::MAX)) else {
        return fail(format!("{raw:?} is not a canonical decimal"));
    };
    let tc = tool_call_args(n).and_then(|a| a.get("ContentOffset").cloned());
    match tc {
        Some(serde_json::Value::Number(num)) if num.to_string() == raw => {}
        other => {
            return fail(format!(
                "native tool call ContentOffset {}",
                other
                    .map(|o| o.to_string())
                    .unwrap_or_else(|| "absent".into())
            ))
        }
    }
    let stored = sub(n, "view_file")
        .and_then(|vf| int(vf, "content_offset"))
        .unwrap_or(0);
    if stored != i128::from(v) {
        return fail(format!("view_file.content_offset {stored}, argument {v}"));
    }
    Ok(())
}

/// "A resultless view_file with status ERROR that records the BUILTIN tool
/// source is presented instead as a VIEW_FILE step built from its arguments:
/// the wrapper's status, metadata and error, no generic arguments, and a
/// view_file with absolute_path_uri file:// plus the path and the one-based
/// StartLine and EndLine as zero-based start_line and end_line."
///
/// Bounds: "The arguments must equal the presented tool call, which still
/// shows them, and are limited to the path and either both lines or neither,
/// with 1 <= StartLine <= EndLine. The path must be absolute, already clean,
/// and made only of letters, digits and / . _ - @ +. [...] Another tool
/// source, another status, an outer error with more than short and full
/// text, any other argument, or another path or line shape fails with
/// unsupported resultless view_file." Letters and digits are ASCII; extra
/// wrapper fields also fail. The presented is_skill_file comes from the
/// history2 registry rule (history2.rs's `SkillFlag` hook; without it, the
/// read is refused).
fn project_builtin(ctx: &Ctx<'_>, w: &Wrapper) -> R<Presented> {
    let rule = RuleId::ResultlessBuiltinViewFile;
    let fail = |d: String| reject(Some(rule), Reason::ResultlessViewFile, d);
    let src = tool_source(w.step);
    if src.as_deref() != Some(BUILTIN) {
        return fail(format!(
            "tool source {}",
            src.unwrap_or_else(|| "unset".into())
        ));
    }
    if w.status != ERROR {
        return fail(format!("status {}", w.status));
    }
    if let Some(f) = w.extra_step_field(&["type", "status", "metadata", "error", "generic"]) {
        return fail(format!("wrapper field {f}"));
    }
    if let Some(f) = w.extra_generic_field(&["args"]) {
        return fail(format!("generic.{f}"));
    }
    let Some(err) = w.error else {
        return fail("no outer error".into());
    };
    if !only_short_full(err) {
        return fail(format!(
            "outer error field {}",
            extra_field(err, &["short_error", "full_error"]).unwrap_or_default()
        ));
    }
    let lines = w.args.has("StartLine") || w.args.has("EndLine");
    let keys: &[&str] = if lines {
        &["AbsolutePath", "StartLine", "EndLine"]
    } else {
        &["AbsolutePath"]
    };
    if !w.args.keys_are(keys) {
        return fail(format!("arguments {:?}", w.args.keys()));
    }
    let Some(path) = w.args.string("AbsolutePath").filter(|p| qualified_path(p)) else {
        return fail(format!(
            "path {}",
            w.args.raw("AbsolutePath").unwrap_or_default()
        ));
    };
    let range = if lines {
        let (s, e) = (
            w.args.canonical_uint("StartLine"),
            w.args.canonical_uint("EndLine"),
        );
        match (s, e) {
            (Some(s), Some(e)) if 1 <= s && s <= e && e <= u64::from(u32::MAX) => {
                Some((s as u32 - 1, e as u32 - 1))
            }
            _ => {
                return fail(format!(
                    "lines {:?}..{:?}",
                    w.args.raw("StartLine").unwrap_or_default(),
                    w.args.raw("EndLine").unwrap_or_default()
                ))
            }
        }
    } else {
        None
    };
    if !w.args.repeat_tool_call(w.step) {
        return fail("the arguments differ from the metadata tool call".into());
    }
    let Some(skill_flag) = ctx.hook(|h| match h {
        Hook::SkillFlag(f) => Some(*f),
        _ => None,
    }) else {
        return fail("no is_skill_file rule registered".to_string());
    };
    let skill = skill_flag(ctx, w, &path)?;

    let mut step = DynamicMessage::new(w.step.descriptor());
    set_enum(&mut step, "type", VIEW_FILE);
    set_enum(&mut step, "status", ERROR);
    if let Some(m) = w.metadata() {
        set(&mut step, "metadata", Value::Message(m.clone()));
    }
    set(&mut step, "error", Value::Message(err.clone()));
    let Some(mut vf) = new_sub(&step, "view_file") else {
        return fail("the schema has no Step.view_file".into());
    };
    set(
        &mut vf,
        "absolute_path_uri",
        Value::String(format!("file://{path}")),
    );
    if let Some((s, e)) = range {
        set(&mut vf, "start_line", Value::U32(s));
        set(&mut vf, "end_line", Value::U32(e));
    }
    if skill {
        set(&mut vf, "is_skill_file", Value::Bool(true));
    }
    set(&mut step, "view_file", Value::Message(vf));
    Ok(Presented {
        step: Some(step),
        rule,
        extra: vec![RuleId::History2SkillRegistry],
        carried: Vec::new(),
    })
}

/// The family's argument bounds (ContentOffset, when present, is the native view_file.content_offset; the resultless BUILTIN read: the path and both lines or neither, repeating the tool call).
const ARGS: &[Args] = &[
    Args::of(
        RuleId::ViewFileContentOffset,
        "view_file",
        ArgBound::NONE
            .optional(&["AbsolutePath", "StartLine", "EndLine"])
            .equal_if_present(&[("ContentOffset", "view_file.content_offset")]),
        Reason::ContentOffset,
    ),
    Args::of(
        RuleId::ResultlessBuiltinViewFile,
        "view_file",
        ArgBound::NONE
            .required(&["AbsolutePath"])
            .optional(&["StartLine", "EndLine"])
            .repeating(),
        Reason::ResultlessViewFile,
    ),
];

/// The family: the ContentOffset argument of an embedded view-file, and the
/// resultless BUILTIN view_file (reached from the resultless family).
pub(crate) const FAMILY: Family = Family {
    file: "view_file.rs",
    docs: DOCS,
    claims: &[],
    hooks: &[
        Hook::EmbeddedArgument {
            arg: "ContentOffset",
            rule: RuleId::ViewFileContentOffset,
            check: check_content_offset,
        },
        Hook::ResultlessToolSource(project_builtin),
    ],
    args: ARGS,
};

#[cfg(test)]
mod tests {
    use super::qualified_path;

    #[test]
    fn paths() {
        for ok in ["/dev/null", "/tmp/a.b_c-d@e+f", "/", "/a/B9"] {
            assert!(qualified_path(ok), "{ok}");
        }
        for bad in [
            "dev/null", "/tmp/", "//a", "/a//b", "/a/./b", "/a/../b", "/a b", "/a%20", "/é", "/a/.",
        ] {
            assert!(!qualified_path(bad), "{bad}");
        }
    }
}
