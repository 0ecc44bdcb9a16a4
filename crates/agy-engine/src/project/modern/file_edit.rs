//! File edits: the tools143 FileEdit payload (CREATE and EDIT) presented as
//! CODE_ACTION.

use super::common::{
    arguments, arguments_hold, call_payload, child, native_step, payload_claim, payload_fields,
    presented_native, put, status_is, wrapper_shape, COMPLETED, SHOWS_PAYLOAD,
};
use crate::project::args::ArgBound;
use crate::project::checks::qualified_path;
use crate::project::doc::RuleDoc;
use crate::project::family::{Args, Ctx, Family, Hook, Presented};
use crate::project::fields::{enum_name, flag, reject, text, Wrapper, DONE, R};
use crate::project::reasons::Reason;
use crate::rules::RuleId;
use crate::schema::FILE_EDIT_FIELDS;
use bytes::Bytes;
use prost_reflect::Value;

const CODE_ACTION_TYPE: &str = "CORTEX_STEP_TYPE_CODE_ACTION";
/// With ide225's artifact fields: every FileEdit field the schema resolves.
const ARTIFACT_FIELDS: &[&str] = FILE_EDIT_FIELDS;
/// tools143's: the artifact fields' first four.
const PAYLOAD_FIELDS: &[&str] = match ARTIFACT_FIELDS.split_at_checked(4) {
    Some((fields, _artifact)) => fields,
    None => &[],
};

pub(crate) const DOCS: &[RuleDoc] = &[RuleDoc {
    rule: RuleId::ModernFileEdit,
    accepts: "A DONE write_to_file (kind CREATE; exactly the arguments CodeContent and TargetFile) or replace_file_content (kind EDIT; exactly Instruction, ReplacementContent and TargetFile) wrapper whose result is only result text and an Any exa.cortex.core.tools.FileEdit with outcome COMPLETED setting only path, kind, diff (possibly empty: empty-file diffs) and outcome; TargetFile (a JSON string) equals path, which is absolute, clean and only ASCII letters, digits and / . _ - @ +; no outer error, task details, permission or interaction records. Presented as a CODE_ACTION step with the wrapper's status and metadata: CREATE as action_spec.create_file {path {absolute_uri}} and action_result.edit {absolute_uri, create_file: true, unified_diff: diff}; EDIT as action_spec.command {instruction: Instruction, is_edit: true, file {absolute_uri}} and action_result.edit {absolute_uri, unified_diff: diff}; absolute_uri is file:// + path.",
    reasons: &[
        Reason::ModernTool,
        Reason::ModernStatus,
        Reason::ModernWrapperField,
        Reason::ModernPayloadField,
        Reason::ModernEditKind,
        Reason::ModernPath,
        Reason::ModernArguments,
        Reason::ModernDeclaration,
        Reason::ModernPayloadUndecodable,
        Reason::ModernPresentedField,
    ],
}];

/// "FileEdit maps CREATE and EDIT results into CODE_ACTION, including
/// empty-file diffs" (tools143), bounded to "completed ... creates and
/// edits".
///
/// Bounds (stricter where silent): DONE and COMPLETED; kind CREATE under the
/// tool write_to_file, EDIT under replace_file_content (the tool names the
/// native mappings qualify); the payload sets only path, kind, diff and
/// outcome (artifact fields are newly populated here: ide225 is a separate
/// suffix); diff may be empty; arguments exactly as listed with TargetFile
/// equal to the path, which needs no URI normalization; the result only text
/// and payload; no outer error or task details; permission1.
///
/// ide225 extends it (`ide225::artifact`): artifact creates and edits keep
/// is_artifact_file, creates also the payload's artifact metadata, with the
/// ArtifactMetadata argument on creates.
fn project(ctx: &Ctx<'_>, w: &Wrapper, bytes: &Bytes) -> R<Presented> {
    let rule = RuleId::ModernFileEdit;
    let payload = call_payload(
        ctx,
        w,
        rule,
        "FileEdit",
        &["write_to_file", "replace_file_content"],
        bytes,
    )?;
    wrapper_shape(
        w,
        rule,
        &["type", "status", "metadata", "generic"],
        &["result", "payload"],
    )?;
    let kind = enum_name(&payload, "kind");
    let artifact = match ctx.hook(|h| match h {
        Hook::ModernEditArtifact(f) => Some(*f),
        _ => None,
    }) {
        Some(artifact) => artifact(ctx, w, &payload, kind == "KIND_CREATE")?,
        None => None,
    };
    payload_fields(
        &payload,
        rule,
        if artifact.is_some() {
            ARTIFACT_FIELDS
        } else {
            PAYLOAD_FIELDS
        },
    )?;
    status_is(w, &payload, rule, DONE, COMPLETED)?;
    let create = match (kind.as_str(), w.tool.as_str()) {
        ("KIND_CREATE", "write_to_file") => true,
        ("KIND_EDIT", "replace_file_content") => false,
        _ => {
            return reject(
                Some(rule),
                Reason::ModernEditKind,
                format!("{kind} under {}", w.tool),
            )
        }
    };
    let path = text(&payload, "path");
    if !qualified_path(&path) {
        return reject(Some(rule), Reason::ModernPath, path);
    }
    // The names (ArtifactMetadata only under ide225's rule, which the
    // artifact hook adds for a create with metadata) and TargetFile (= path)
    // are the declared bounds ([`ARGS`], ide225's), which the dispatcher
    // enforces. The content arguments being JSON strings is checked here:
    // the ArgBound vocabulary cannot say it.
    let texts: &[&str] = if create {
        &["CodeContent"]
    } else {
        &["Instruction", "ReplacementContent"]
    };
    arguments_hold(w, rule, texts.iter().all(|k| w.args.string(k).is_some()))?;
    let uri = format!("file://{path}");

    let step = native_step(w, rule, CODE_ACTION_TYPE, false)?;
    let mut ca = child(&step, rule, "code_action")?;
    let mut spec = child(&ca, rule, "action_spec")?;
    let mut result = child(&ca, rule, "action_result")?;
    let mut edit = child(&result, rule, "edit")?;
    put(&mut edit, rule, "absolute_uri", Value::String(uri.clone()))?;
    if create {
        let mut cf = child(&spec, rule, "create_file")?;
        let mut p = child(&cf, rule, "path")?;
        put(&mut p, rule, "absolute_uri", Value::String(uri))?;
        put(&mut cf, rule, "path", Value::Message(p))?;
        put(&mut spec, rule, "create_file", Value::Message(cf))?;
        put(&mut edit, rule, "create_file", Value::Bool(true))?;
    } else {
        let mut cmd = child(&spec, rule, "command")?;
        let instruction = w.args.string("Instruction").unwrap_or_default();
        put(&mut cmd, rule, "instruction", Value::String(instruction))?;
        put(&mut cmd, rule, "is_edit", Value::Bool(true))?;
        let mut f = child(&cmd, rule, "file")?;
        put(&mut f, rule, "absolute_uri", Value::String(uri))?;
        put(&mut cmd, rule, "file", Value::Message(f))?;
        put(&mut spec, rule, "command", Value::Message(cmd))?;
    }
    put(
        &mut edit,
        rule,
        "unified_diff",
        Value::String(text(&payload, "diff")),
    )?;
    put(&mut result, rule, "edit", Value::Message(edit))?;
    put(&mut ca, rule, "action_spec", Value::Message(spec))?;
    put(&mut ca, rule, "action_result", Value::Message(result))?;
    let mut extra = Vec::new();
    if let Some(a) = artifact {
        let arule = RuleId::ModernIde225Artifact;
        put(&mut ca, arule, "is_artifact_file", Value::Bool(true))?;
        if let Some(meta) = a.metadata {
            let mut am = child(&ca, arule, "artifact_metadata")?;
            put(
                &mut am,
                arule,
                "summary",
                Value::String(text(&meta, "summary")),
            )?;
            if let Some(ts) = meta.get_field_by_name("updated_at") {
                put(&mut am, arule, "updated_at", ts.into_owned())?;
            }
            put(
                &mut am,
                arule,
                "user_facing",
                Value::Bool(flag(&meta, "user_facing")),
            )?;
            put(&mut ca, arule, "artifact_metadata", Value::Message(am))?;
        }
        extra.push(arule);
    }
    presented_native(step, rule, ("code_action", ca), extra, SHOWS_PAYLOAD)
}

/// The family's argument bounds (TargetFile is the payload's path; the create and edit shapes).
const ARGS: &[Args] = &[
    arguments(
        RuleId::ModernFileEdit,
        "write_to_file",
        ArgBound::NONE
            .equal(&[("TargetFile", "path")])
            .required(&["CodeContent"]),
    ),
    arguments(
        RuleId::ModernFileEdit,
        "replace_file_content",
        ArgBound::NONE
            .equal(&[("TargetFile", "path")])
            .required(&["Instruction", "ReplacementContent"]),
    ),
];

/// The family: tools143 FileEdit creates and edits (ide225's artifact
/// shape through its hook).
pub(crate) const FAMILY: Family = Family {
    file: "modern/file_edit.rs",
    docs: DOCS,
    claims: &[payload_claim(
        "type.googleapis.com/exa.cortex.core.tools.FileEdit",
        project,
    )],
    hooks: &[],
    args: ARGS,
};
