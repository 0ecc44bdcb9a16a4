//! ide225: the file-tool wrappers observed in Antigravity IDE 2.25.0, as
//! extensions of the tools143 ReadFile and FileEdit mappings (which call
//! into this file): read permission records kept unchanged, ByteOffset=0
//! reads, artifact creates and edits.
//!
//! The specification: "Three completed read_file wrappers retain their
//! permission grants and completed interactions unchanged. Both fields must
//! be present together. There is no permission record synthesis or removal;
//! full-source equality and presentation equality cover their complete
//! contents. Other modern tools still refuse permission-bearing wrappers."
//! "Ten reads accept ByteOffset=0, with all arguments repeated in the
//! retained tool call. Nonzero and noncanonical offsets remain unsupported."
//! "Seven artifact creates and six artifact edits retain isArtifactFile.
//! Creates also retain the payload's summary, update timestamp and
//! user-facing flag. Their ArtifactMetadata argument must match the retained
//! tool call and payload, with RequestFeedback=false. Metadata on edits,
//! missing artifact flags and unqualified metadata fields remain
//! unsupported."

use super::common::{declared, no_permission_records};
use crate::project::args::ArgBound;
use crate::project::doc::RuleDoc;
use crate::project::family::{Args, Artifact, Ctx, Family, Hook};
use crate::project::fields::{flag, has, reject, sub, text, Wrapper, R};
use crate::project::reasons::Reason;
use crate::rules::RuleId;
use prost_reflect::DynamicMessage;

pub(crate) const DOCS: &[RuleDoc] = &[
    RuleDoc {
        rule: RuleId::ModernIde225ReadPermissions,
        accepts: "A modern read_file wrapper otherwise within the tools143 ReadFile bounds (or the ByteOffset=0 shape) that carries both a permissions grant and completed_interactions, and no requested interaction: presented as the same VIEW_FILE step with both records copied unchanged (no record synthesized or removed; their contents are covered by full-source and presentation equality). A grant or completed interaction alone, a requested interaction, or permission records on any other modern tool stay refused by permission1.",
        reasons: &[Reason::ModernPermissionRecord],
    },
    RuleDoc {
        rule: RuleId::ModernIde225ByteOffset,
        accepts: "A modern read_file wrapper otherwise within the tools143 ReadFile bounds with the argument ByteOffset exactly the canonical decimal 0, the payload's byte_offset explicitly 0 (stricter where silent: the payload repeats the argument), and all arguments repeated in the retained tool call (metadata.tool_call.arguments_json: the same keys, each the same JSON). Presented as the tools143 VIEW_FILE step (an offset of 0 shows nothing more).",
        reasons: &[Reason::Ide225ByteOffset, Reason::ModernToolCallRepeat],
    },
    RuleDoc {
        rule: RuleId::ModernIde225Artifact,
        accepts: "A modern file edit otherwise within the tools143 FileEdit bounds whose payload sets is_artifact_file. An EDIT (replace_file_content) carries no artifact_metadata and no ArtifactMetadata argument. A CREATE (write_to_file) carries a payload artifact_metadata setting only summary, updated_at (required) and user_facing, and an ArtifactMetadata argument that is compact JSON with exactly Summary (= summary), UserFacing (= user_facing) and RequestFeedback false. Every argument of either repeats the retained tool call. Presented as the tools143 CODE_ACTION step plus is_artifact_file true and, for a create, artifact_metadata {summary, updated_at, user_facing} copied from the payload. A CREATE whose payload sets is_artifact_file with neither metadata nor the argument stays a newly populated payload field under tools143.",
        reasons: &[
            Reason::Ide225ArtifactFlag,
            Reason::Ide225EditMetadata,
            Reason::Ide225ArtifactMetadata,
            Reason::Ide225MetadataField,
            Reason::Ide225RequestFeedback,
            Reason::ModernToolCallRepeat,
            Reason::ModernDeclaration,
        ],
    },
];

/// Whether ide225's read permission exception applies: both a grant and a
/// completed interaction, no requested interaction. A record alone, or a
/// requested interaction, is refused by permission1 ("Both fields must be
/// present together"; "Other modern tools still refuse permission-bearing
/// wrappers": the exception is this pair on a read, nothing else).
fn read_permissions(w: &Wrapper) -> R<bool> {
    let grant = has(w.step, "permissions");
    let done = has(w.step, "completed_interactions");
    if grant && done && !has(w.step, "requested_interaction") {
        Ok(true)
    } else {
        no_permission_records(w).map(|()| false)
    }
}

/// Whether the read is ide225's ByteOffset=0 shape; refuses any other
/// offset. Bounds: the argument is exactly `0` (canonical decimal), the
/// payload's byte_offset is present and 0 (stricter where silent), and all
/// arguments repeat the retained tool call.
fn byte_offset(w: &Wrapper, payload: &DynamicMessage) -> R<bool> {
    let rule = Some(RuleId::ModernIde225ByteOffset);
    let arg = w.args.raw("ByteOffset");
    let stored = has(payload, "byte_offset");
    if arg.is_none() && !stored {
        return Ok(false);
    }
    let payload_zero = crate::project::fields::int(payload, "byte_offset") == Some(0);
    if arg != Some("0") || !stored || !payload_zero {
        return reject(
            rule,
            Reason::Ide225ByteOffset,
            format!(
                "argument {arg:?}, payload {:?}",
                crate::project::fields::int(payload, "byte_offset")
            ),
        );
    }
    if !w.args.repeat_tool_call(w.step) {
        return reject(
            rule,
            Reason::ModernToolCallRepeat,
            format!("{:?}", w.args.0),
        );
    }
    Ok(true)
}

/// The metadata fields a create may set.
const METADATA_FIELDS: &[&str] = &["summary", "updated_at", "user_facing", "request_feedback"];
/// The ArtifactMetadata argument's members.
const ARGUMENT_KEYS: &[&str] = &["RequestFeedback", "Summary", "UserFacing"];

/// The ide225 artifact shape of a tools143 file edit, if any.
///
/// Bounds (stricter where silent): an edit sets is_artifact_file and nothing
/// else of the artifact fields, and has no ArtifactMetadata argument
/// ("Metadata on edits ... remain[s] unsupported"); a create sets
/// is_artifact_file and artifact_metadata and has the ArtifactMetadata
/// argument (metadata without the flag: "missing artifact flags"); the
/// payload metadata sets only summary, updated_at (required: "retain the
/// payload's ... update timestamp") and user_facing, with request_feedback
/// unset (false); the argument is compact JSON (it re-serializes to its own
/// text: no spaces, no repeated member) with exactly Summary, UserFacing and
/// RequestFeedback, equal to the payload's summary, user_facing and false;
/// every argument repeats the retained tool call. A create that sets only
/// is_artifact_file, with neither metadata nor argument, is no ide225 shape
/// and stays a newly populated payload field under tools143.
fn artifact(
    ctx: &Ctx<'_>,
    w: &Wrapper,
    payload: &DynamicMessage,
    create: bool,
) -> R<Option<Artifact>> {
    let rule = RuleId::ModernIde225Artifact;
    let is_artifact = flag(payload, "is_artifact_file");
    let meta = sub(payload, "artifact_metadata");
    let arg = w.args.raw("ArtifactMetadata");
    if meta.is_none() && arg.is_none() && (!is_artifact || create) {
        return Ok(None);
    }
    declared(ctx, rule, "ArtifactMetadata")?;
    if !is_artifact {
        return reject(Some(rule), Reason::Ide225ArtifactFlag, String::new());
    }
    if !w.args.repeat_tool_call(w.step) {
        return reject(
            Some(rule),
            Reason::ModernToolCallRepeat,
            format!("{:?}", w.args.keys()),
        );
    }
    if !create {
        if meta.is_some() || arg.is_some() {
            return reject(Some(rule), Reason::Ide225EditMetadata, String::new());
        }
        return Ok(Some(Artifact { metadata: None }));
    }
    let (Some(meta), Some(arg)) = (meta, arg) else {
        return reject(
            Some(rule),
            Reason::Ide225ArtifactMetadata,
            "metadata and argument not both present",
        );
    };
    if let Some(f) = crate::project::fields::extra_field(meta, METADATA_FIELDS) {
        return reject(Some(rule), Reason::Ide225MetadataField, f);
    }
    if flag(meta, "request_feedback") {
        return reject(Some(rule), Reason::Ide225RequestFeedback, "payload");
    }
    if !has(meta, "updated_at") {
        return reject(
            Some(rule),
            Reason::Ide225ArtifactMetadata,
            "payload without updated_at",
        );
    }
    let obj = match serde_json::from_str::<serde_json::Value>(arg) {
        Ok(serde_json::Value::Object(o)) => o,
        _ => return reject(Some(rule), Reason::Ide225ArtifactMetadata, arg.to_string()),
    };
    let compact = serde_json::to_string(&obj).unwrap_or_default();
    if compact != arg {
        return reject(Some(rule), Reason::Ide225ArtifactMetadata, arg.to_string());
    }
    if let Some(k) = obj.keys().find(|k| !ARGUMENT_KEYS.contains(&k.as_str())) {
        return reject(Some(rule), Reason::Ide225MetadataField, k.clone());
    }
    if obj.get("RequestFeedback") != Some(&serde_json::Value::Bool(false)) {
        return reject(Some(rule), Reason::Ide225RequestFeedback, arg.to_string());
    }
    let summary_ok =
        obj.get("Summary").and_then(|v| v.as_str()) == Some(text(meta, "summary").as_str());
    let facing_ok =
        obj.get("UserFacing").and_then(|v| v.as_bool()) == Some(flag(meta, "user_facing"));
    if !summary_ok || !facing_ok {
        return reject(Some(rule), Reason::Ide225ArtifactMetadata, arg.to_string());
    }
    Ok(Some(Artifact {
        metadata: Some(meta.clone()),
    }))
}

/// The family's argument bounds (ByteOffset 0 and the artifact create, repeating the tool call).
const ARGS: &[Args] = &[
    Args::of(
        RuleId::ModernIde225ByteOffset,
        "read_file",
        ArgBound::NONE
            .equal(&[("AbsolutePath", "path")])
            .required(&["ByteOffset"])
            .optional(&["StartLine", "EndLine"])
            .repeating(),
        Reason::Ide225ByteOffset,
    )
    .repeat_refused(Reason::ModernToolCallRepeat),
    Args::of(
        RuleId::ModernIde225Artifact,
        "write_to_file",
        ArgBound::NONE
            .equal(&[("TargetFile", "path")])
            .required(&["CodeContent"])
            .optional(&["ArtifactMetadata"])
            .repeating(),
        Reason::Ide225ArtifactMetadata,
    )
    .repeat_refused(Reason::ModernToolCallRepeat),
];

/// The family: ide225's read records, ByteOffset=0 reads and artifact
/// edits, lent to read_file and file_edit through hooks.
pub(crate) const FAMILY: Family = Family {
    file: "modern/ide225.rs",
    docs: DOCS,
    claims: &[],
    hooks: &[
        Hook::ModernReadRecords(read_permissions),
        Hook::ModernReadOffset(byte_offset),
        Hook::ModernEditArtifact(artifact),
    ],
    args: ARGS,
};
