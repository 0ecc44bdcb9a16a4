//! finish147: completed Finish calls with a result schema, and the
//! missing-file read wrappers the same capture qualifies.
//!
//! The specification: "The finish147 overlay adds only
//! exa.cortex.core.tools.Finish from the verified 1.4.7 snapshot. ... The
//! new projection supports completed Finish calls with a result schema, and
//! the same capture qualifies missing-file read wrappers. The offline export
//! follow-up records their bounds." Those bounds are not part of the
//! specification, so both rules take the narrowest reading: nothing is
//! derived or synthesized (the wrapper is presented exactly as stored, so
//! presentation equality covers every field), and every stored part is
//! bounded to the one shape the words name.

use super::common::{
    arguments, call_payload, completed_path_read, payload_claim, payload_fields, status_is,
    wrapper_shape, COMPLETED,
};
use crate::project::args::ArgBound;
use crate::project::doc::RuleDoc;
use crate::project::family::{Args, Ctx, Family, Hook, Presented};
use crate::project::fields::{flag, reject, text, Wrapper, DONE, R};
use crate::project::reasons::Reason;
use crate::rules::RuleId;
use bytes::Bytes;
use prost_reflect::DynamicMessage;

pub(crate) const DOCS: &[RuleDoc] = &[
    RuleDoc {
        rule: RuleId::ModernFinish,
        accepts: "A DONE finish wrapper whose result is only result text and an Any exa.cortex.core.tools.Finish with outcome COMPLETED setting only result_schema, result_json and outcome; result_schema a JSON object with at least one member (\"with a result schema\"); result_json a JSON object whose members are exactly the wrapper's arguments, each the same JSON; the arguments repeat the retained tool call; no outer error, task details, permission or interaction records. Presented unchanged (generic): nothing is derived.",
        reasons: &[
            Reason::ModernTool,
            Reason::ModernStatus,
            Reason::ModernWrapperField,
            Reason::ModernPayloadField,
            Reason::FinishSchema,
            Reason::FinishResult,
            Reason::ModernToolCallRepeat,
            Reason::ModernPermissionRecord,
            Reason::ModernDeclaration,
            Reason::ModernPayloadUndecodable,
        ],
    },
    RuleDoc {
        rule: RuleId::ModernMissingFileRead,
        accepts: "A DONE read_file wrapper whose result is only result text and an Any exa.cortex.core.tools.ReadFile with outcome COMPLETED setting only path, not_found (true) and outcome; path absolute, clean and only ASCII letters, digits and / . _ - @ +; the arguments exactly AbsolutePath (= path), repeating the retained tool call (no range, offset or other argument); no outer error, task details, permission or interaction records. Presented unchanged (generic): no VIEW_FILE step is synthesized for a file that was not found.",
        reasons: &[
            Reason::ModernStatus,
            Reason::ModernWrapperField,
            Reason::ModernPayloadField,
            Reason::ModernPath,
            Reason::ModernArguments,
            Reason::ModernToolCallRepeat,
            Reason::ModernPermissionRecord,
        ],
    },
];

/// A JSON object, parsed from `s`.
fn object(s: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    match serde_json::from_str::<serde_json::Value>(s) {
        Ok(serde_json::Value::Object(o)) => Some(o),
        _ => None,
    }
}

/// "The new projection supports completed Finish calls with a result
/// schema" (finish147).
///
/// Bounds (the narrowest reading; the specification leaves them to a
/// follow-up): tool finish, wrapper DONE and outcome COMPLETED; the result
/// only the result text and the payload; the payload sets only
/// result_schema, result_json and outcome; the schema is a JSON object with
/// at least one member; the result JSON is an object equal, member by
/// member, to the wrapper's arguments (the call's arguments are its
/// result); the arguments repeat the retained tool call; no outer error or
/// task details; permission1. Presented exactly as stored.
fn project_finish(ctx: &Ctx<'_>, w: &Wrapper, bytes: &Bytes) -> R<Presented> {
    let rule = RuleId::ModernFinish;
    let payload = call_payload(ctx, w, rule, "Finish", &["finish"], bytes)?;
    wrapper_shape(
        w,
        rule,
        &["type", "status", "metadata", "generic"],
        &["result", "payload"],
    )?;
    payload_fields(&payload, rule, &["result_schema", "result_json", "outcome"])?;
    status_is(w, &payload, rule, DONE, COMPLETED)?;
    let schema = text(&payload, "result_schema");
    if object(&schema).is_none_or(|o| o.is_empty()) {
        return reject(Some(rule), Reason::FinishSchema, schema);
    }
    // The arguments repeating the retained tool call (refused first) and
    // being exactly result_json's members, each the same JSON, are the
    // declared bound ([`ARGS`]), which the dispatcher enforces.
    Ok(Presented::unchanged(rule))
}

/// "... and the same capture qualifies missing-file read wrappers"
/// (finish147).
///
/// Bounds (the narrowest reading; the specification leaves them to a
/// follow-up): a read_file wrapper DONE with outcome COMPLETED whose
/// payload sets only path, not_found (true) and outcome (no content, range,
/// offset, media or byte count); the path needs no URI normalization; the
/// arguments are exactly AbsolutePath equal to the path and repeat the
/// retained tool call; the result only the result text and the payload; no
/// outer error or task details; permission1 (ide225's read permission
/// exception covers completed reads of existing files only). Presented
/// exactly as stored: no VIEW_FILE step is synthesized.
fn project_missing_file(w: &Wrapper, payload: &DynamicMessage) -> R<Presented> {
    let rule = RuleId::ModernMissingFileRead;
    wrapper_shape(
        w,
        rule,
        &["type", "status", "metadata", "generic"],
        &["result", "payload"],
    )?;
    payload_fields(payload, rule, &["path", "not_found", "outcome"])?;
    if !flag(payload, "not_found") {
        return reject(Some(rule), Reason::ModernPayloadField, "not_found false");
    }
    completed_path_read(w, payload, rule)?;
    // The arguments, exactly AbsolutePath (= path) repeating the retained
    // tool call, are the declared bound ([`ARGS`]), which the dispatcher
    // enforces.
    Ok(Presented::unchanged(rule))
}

/// The family's argument bounds (a Finish call's arguments are exactly result_json's members; the missing-file read's AbsolutePath is the path; both repeat the tool call).
const ARGS: &[Args] = &[
    Args::of(
        RuleId::ModernFinish,
        "finish",
        ArgBound::NONE.members_of("result_json").repeating(),
        Reason::FinishResult,
    )
    .repeat_refused(Reason::ModernToolCallRepeat),
    arguments(
        RuleId::ModernMissingFileRead,
        "read_file",
        ArgBound::NONE
            .equal(&[("AbsolutePath", "path")])
            .repeating(),
    )
    .repeat_refused(Reason::ModernToolCallRepeat),
];

/// The family: finish147's Finish calls and missing-file reads (a ReadFile
/// payload with not_found, through read_file's hook).
pub(crate) const FAMILY: Family = Family {
    file: "modern/finish.rs",
    docs: DOCS,
    claims: &[payload_claim(
        "type.googleapis.com/exa.cortex.core.tools.Finish",
        project_finish,
    )],
    hooks: &[Hook::ModernRead {
        field: "not_found",
        project: project_missing_file,
    }],
    args: ARGS,
};
