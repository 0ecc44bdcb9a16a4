//! Offline exports: a source's trajectory as daemon-style JSON or as a Markdown
//! transcript, produced from the stored source alone. An offline export proves
//! this reader decodes the source; it is not a fresh match with agy's daemon
//! and carries no completeness attestation.

mod maps;
mod markdown;

pub use maps::{daemon_json, sort_map_entries};
pub use markdown::{
    render_markdown, render_markdown_nested, render_step, render_transcript_steps, Nest,
};

use crate::source::{source_only, DecodedSource};
use serde_json::{json, Map, Value};

/// The notice every Markdown export carries.
pub const OFFLINE_NOTICE: &str =
    "**Offline export, unverified.** Produced by agy-audit from the stored \
source alone: it has not been compared with agy's daemon and carries no completeness attestation.";

/// Offline export format version.
pub const OFFLINE_VERSION: u32 = 1;

/// The export's `agyReader.offline` record.
pub fn offline_record(src: &DecodedSource) -> Value {
    let mut rec = json!({
        "version": OFFLINE_VERSION,
        "profile": src.profile,
        "sourceDigest": src.source_digest,
        "sourceOnlyFields": source_only::record(&src.source_only),
    });
    if !src.qualified() {
        if let Some(obj) = rec.as_object_mut() {
            obj.insert("complete".into(), Value::Bool(false));
            obj.insert(
                "refusals".into(),
                Value::Array(
                    src.refusals
                        .iter()
                        .map(|r| json!({"class": r.class.id(), "location": r.location, "detail": r.detail}))
                        .collect(),
                ),
            );
        }
    }
    rec
}

/// The JSON export: the presented trajectory (the projection when given, else
/// the persisted one, decoded here when it was not yet) in the daemon's
/// proto3 JSON plus `agyReader`. `None` when the source did not decode at all.
/// Map entries come out in the order [`sort_map_entries`] defines, so the
/// same source always exports the same bytes (the Markdown transcript is
/// rendered from this value).
pub fn export_json(
    src: &DecodedSource,
    presented: Option<&prost_reflect::DynamicMessage>,
) -> Option<Value> {
    let decoded;
    let t = match presented.or(src.trajectory.as_ref()) {
        Some(t) => t,
        None => {
            decoded = src.wire.as_ref()?.decode().ok()?;
            &decoded
        }
    };
    let mut v = daemon_json(t);
    // The subagent's parent, from its own metadata (`agyReader.parentCascadeId`).
    let parent = agy_engine::tree::links::parent_cascade_id(&v);
    let obj = v.as_object_mut()?;
    let mut reader = Map::new();
    reader.insert("offline".into(), offline_record(src));
    if !src.qualified() {
        reader.insert(
            "unknownFields".into(),
            serde_json::to_value(&src.unknown_fields).unwrap_or(Value::Null),
        );
    }
    if let Some(parent) = parent {
        reader.insert(
            agy_engine::tree::links::PARENT_STAMP.into(),
            Value::String(parent),
        );
    }
    obj.insert("agyReader".into(), Value::Object(reader));
    Some(v)
}

/// What the offline export path makes of one source: the decoded source
/// (its refusals, profile, digest) and the export's JSON, none when the
/// source did not decode at all.
pub struct OfflineExport {
    pub source: crate::source::DecodedSource,
    pub json: Option<Value>,
    /// The qualified presentation the export shows (none when the source
    /// did not qualify or project): its alternative complete forms are what
    /// `export-check` compares an answer in another form with.
    pub projection: Option<crate::project::Projection>,
}

/// Reads `path` and exports it as `export-offline` does: the qualified
/// presentation (the daemon's ordinary RPC's) when the source qualifies and
/// projects, else the persisted trajectory; a projection refusal joins the
/// source's refusals. The caller decides whether an unqualified source may
/// be shown (`export-offline --allow-unknown`, the HTML report's drill-down).
pub fn offline_export(
    path: &std::path::Path,
    opts: &crate::source::ReadOptions<'_>,
) -> crate::Result<OfflineExport> {
    let mut src = crate::source::read_source(path, opts)?;
    let mut projection = None;
    if src.qualified() {
        if let Some(w) = &src.wire {
            match crate::project::project(opts.schema, w) {
                Ok(p) => projection = Some(p),
                Err(r) => src.refusals.push(r.to_refusal()),
            }
        }
    }
    src.materialize();
    let ordinary = match (&projection, &src.trajectory) {
        (Some(p), Some(t)) => Some(p.ordinary(t)),
        _ => None,
    };
    let json = export_json(&src, ordinary.as_ref());
    Ok(OfflineExport {
        source: src,
        json,
        projection,
    })
}

/// The notice `export-offline --format md` writes under the heading: the
/// offline notice, the source's profile and digest, and, for a source
/// refused as unknown (`--allow-unknown`), that it is incomplete.
pub fn offline_notice(src: &DecodedSource) -> String {
    let mut notice = OFFLINE_NOTICE.to_string();
    notice.push_str(&format!(
        "\n> Profile `{}`, source digest `{}`.",
        src.profile, src.source_digest
    ));
    if !src.qualified() {
        notice.push_str(
            "\n> **Incomplete:** this source was refused as unknown; unknown fields are not shown.",
        );
    }
    notice
}

/// The bytes `export-offline --format md --no-tree` writes for `src`
/// exported as `json` (by [`offline_export`]): this session alone, no
/// subagent nested, under [`offline_notice`]. The transcript carries no
/// generation time.
pub fn offline_markdown(src: &DecodedSource, json: &Value) -> String {
    render_markdown(json, &offline_notice(src))
}

/// A daemon answer's trajectory rendered as [`offline_markdown`] renders an
/// export, under `notice`: its daemon-style JSON ([`daemon_json`]) with the
/// subagent parent taken from its own metadata as [`export_json`] takes it
/// (`agyReader.parentCascadeId`, the only `agyReader` member the transcript
/// shows), so that the two transcripts differ only where the trajectories
/// do.
pub fn answer_markdown(trajectory: &prost_reflect::DynamicMessage, notice: &str) -> String {
    let mut v = daemon_json(trajectory);
    if let Some(parent) = agy_engine::tree::links::parent_cascade_id(&v) {
        if let Some(obj) = v.as_object_mut() {
            let mut reader = Map::new();
            reader.insert(
                agy_engine::tree::links::PARENT_STAMP.into(),
                Value::String(parent),
            );
            obj.insert("agyReader".into(), Value::Object(reader));
        }
    }
    render_markdown(&v, notice)
}
