//! replay147: completed image reads.
//!
//! The specification: "replay147 also qualifies completed image reads with
//! one persisted inline JPEG, PNG or WebP media item. The source path must
//! match the argument, and the result text must identify that MIME type.
//! The reader copies the media, byte count, path, text and outer metadata
//! exactly. Line-range arguments, permission records, external media URIs,
//! multiple media items and other MIME types remain outside this rule. Full-
//! source comparison still checks all dropped wrapper content."

use super::common::{
    arguments, completed_path_read, payload_fields, put, view_file_presented, view_file_step,
    wrapper_shape,
};
use crate::project::args::ArgBound;
use crate::project::doc::RuleDoc;
use crate::project::family::{Args, Family, Hook, Presented};
use crate::project::fields::{extra_field, int, message_refs, reject, text, Wrapper, R};
use crate::project::reasons::Reason;
use crate::rules::RuleId;
use prost_reflect::{DynamicMessage, Value};

/// The MIME types the rule names.
const MIME_TYPES: &[&str] = &["image/jpeg", "image/png", "image/webp"];

pub(crate) const DOCS: &[RuleDoc] = &[RuleDoc {
    rule: RuleId::ModernImageRead,
    accepts: "A DONE read_file wrapper whose result is only result text and an Any exa.cortex.core.tools.ReadFile with outcome COMPLETED setting only path, media, num_bytes and outcome; exactly one media item setting only mime_type (image/jpeg, image/png or image/webp) and nonempty inline_data; num_bytes equal to the inline data's length; the result text containing that MIME type; path absolute, clean and only ASCII letters, digits and / . _ - @ +; the arguments exactly AbsolutePath (= path; no line range); no outer error, task details, permission or interaction records. Presented as a VIEW_FILE step with the wrapper's status and metadata and view_file {absolute_path_uri: file:// + path, content: the result text, media_data: the media item, num_bytes, is_skill_file: the skill146 path rule}.",
    reasons: &[
        Reason::ModernStatus,
        Reason::ModernWrapperField,
        Reason::ModernPayloadField,
        Reason::ModernPath,
        Reason::ModernRange,
        Reason::ModernArguments,
        Reason::ModernPermissionRecord,
        Reason::ImageReadMediaCount,
        Reason::ImageReadMime,
        Reason::ImageReadExternal,
        Reason::ImageReadText,
        Reason::ImageReadBytes,
        Reason::ModernPresentedField,
    ],
}];

/// replay147's completed image read (called by `read_file.rs` for a
/// ReadFile payload with media).
///
/// Bounds (stricter where silent): DONE and COMPLETED; the payload sets only
/// path, media, num_bytes and outcome (a line range is refused as such,
/// content or an offset as newly populated fields); one media item setting
/// only mime_type and inline_data (a URI is "external", a description an
/// unqualified field), the inline data nonempty; the byte count equals the
/// inline data's length; the result text contains the MIME type verbatim;
/// the arguments exactly AbsolutePath equal to the path ("the source path
/// must match the argument"), StartLine/EndLine refused as line ranges; the
/// result only text and payload; no outer error or task details;
/// permission1 (the rule names permission records as outside it).
fn project(w: &Wrapper, payload: &DynamicMessage) -> R<Presented> {
    let rule = RuleId::ModernImageRead;
    wrapper_shape(
        w,
        rule,
        &["type", "status", "metadata", "generic"],
        &["result", "payload"],
    )?;
    // Line-range arguments are refused as a range (the rule names them
    // outside it), before the payload is read; the declared bound
    // ([`ARGS`], exactly AbsolutePath = path, which the dispatcher enforces)
    // would refuse them only later, as unnamed arguments.
    if w.args.has("StartLine") || w.args.has("EndLine") {
        return reject(Some(rule), Reason::ModernRange, format!("{:?}", w.args.0));
    }
    if int(payload, "start_line").is_some() || int(payload, "end_line").is_some() {
        return reject(Some(rule), Reason::ModernRange, "payload line range");
    }
    payload_fields(payload, rule, &["path", "media", "num_bytes", "outcome"])?;
    let path = completed_path_read(w, payload, rule)?;
    let media = message_refs(payload, "media");
    let item: &DynamicMessage = match media.as_slice() {
        [one] => one,
        _ => {
            return reject(
                Some(rule),
                Reason::ImageReadMediaCount,
                format!("{} items", media.len()),
            )
        }
    };
    if crate::project::fields::has(item, "uri") {
        return reject(Some(rule), Reason::ImageReadExternal, text(item, "uri"));
    }
    if let Some(f) = extra_field(item, &["mime_type", "inline_data"]) {
        return reject(Some(rule), Reason::ModernPayloadField, format!("Media.{f}"));
    }
    let data_len = item
        .get_field_by_name("inline_data")
        .and_then(|v| v.as_bytes().map(|b| b.len()))
        .unwrap_or(0);
    if data_len == 0 {
        return reject(Some(rule), Reason::ImageReadExternal, "no inline data");
    }
    let mime = text(item, "mime_type");
    if !MIME_TYPES.contains(&mime.as_str()) {
        return reject(Some(rule), Reason::ImageReadMime, mime);
    }
    let shown = w.result.map(|r| text(r, "result")).unwrap_or_default();
    if !shown.contains(&mime) {
        return reject(Some(rule), Reason::ImageReadText, shown);
    }
    let num_bytes = int(payload, "num_bytes").unwrap_or(0);
    let Ok(n) = u32::try_from(num_bytes) else {
        return reject(Some(rule), Reason::ImageReadBytes, num_bytes.to_string());
    };
    if usize::try_from(n).ok() != Some(data_len) {
        return reject(
            Some(rule),
            Reason::ImageReadBytes,
            format!("{n} for {data_len} bytes"),
        );
    }

    let (step, mut vf) = view_file_step(w, rule, &path)?;
    put(&mut vf, rule, "media_data", Value::Message(item.clone()))?;
    put(&mut vf, rule, "num_bytes", Value::U32(n))?;
    view_file_presented(step, vf, rule, &path, shown)
}

/// The family's argument bounds (AbsolutePath alone, the payload's path).
const ARGS: &[Args] = &[arguments(
    RuleId::ModernImageRead,
    "read_file",
    ArgBound::NONE.equal(&[("AbsolutePath", "path")]),
)];

/// The family: replay147's image reads (a ReadFile payload with media,
/// through read_file's hook).
pub(crate) const FAMILY: Family = Family {
    file: "modern/image_read.rs",
    docs: DOCS,
    claims: &[],
    hooks: &[Hook::ModernRead {
        field: "media",
        project,
    }],
    args: ARGS,
};
