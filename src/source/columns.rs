//! Redundant step columns must equal the complete step payload:
//! `step_type` = Step `type`, `status` = `status`; `metadata`, `error_details`,
//! `permissions`, `task_details` byte-equal to those fields (SQL NULL exactly
//! when absent); `has_subtrajectory` true exactly when `subtrajectory` is
//! present (and a present subtrajectory is unsupported); `render_info` equal to
//! `generic.result.step_render_info`, presence included.

use super::sqlite::StepRow;
use super::wire::{read_varint, FieldIter, WireType};
use crate::schema::Names;
use crate::verdict::{ReasonClass, Refusal};

/// The raw values of one field number at the top of an encoding: `Err` when
/// it occurs more than once (no single value to compare).
fn single(payload: &[u8], number: u32) -> Result<Option<(&[u8], WireType)>, ()> {
    let mut found = None;
    for f in FieldIter::new(payload) {
        let Ok(f) = f else { return Ok(found) };
        if f.number == number {
            if found.is_some() {
                return Err(());
            }
            found = Some((f.value, f.wire_type));
        }
    }
    Ok(found)
}

fn varint_value(v: Option<(&[u8], WireType)>) -> i64 {
    match v {
        Some((b, WireType::Varint)) => {
            let mut pos = 0;
            read_varint(b, &mut pos).map(|x| x as i64).unwrap_or(-1)
        }
        Some(_) => -1,
        None => 0,
    }
}

fn bytes_value(v: Option<(&[u8], WireType)>) -> Option<&[u8]> {
    v.map(|(b, _)| b)
}

/// Checks one row; returns every disagreement.
pub fn check_step_row(names: &Names, row: &StepRow) -> Vec<Refusal> {
    let s = names.step_fields;
    let loc = format!("steps[{}]", row.idx);
    let mut out = Vec::new();
    let mut field = |number: u32, name: &str| match single(&row.step_payload, number) {
        Ok(v) => Some(v),
        Err(()) => {
            out.push(Refusal::new(
                ReasonClass::RedundantColumn,
                format!("{loc}.step_payload"),
                format!("Step field {name} occurs more than once; its column cannot equal it"),
            ));
            None
        }
    };
    let ty = field(s.r#type, "type");
    let status = field(s.status, "status");
    let metadata = field(s.metadata, "metadata");
    let error = field(s.error, "error");
    let permissions = field(s.permissions, "permissions");
    let task = field(s.task_details, "task_details");
    let sub = s.subtrajectory.map(|n| field(n, "subtrajectory"));
    let generic = field(s.generic, "generic");
    let mut refuse = |column: &str, detail: String| {
        out.push(Refusal::new(
            ReasonClass::RedundantColumn,
            format!("{loc}.{column}"),
            detail,
        ))
    };
    if let Some(ty) = ty {
        let v = varint_value(ty);
        if v != row.step_type {
            refuse(
                "step_type",
                format!(
                    "step_type column {} differs from the payload's type {v}",
                    row.step_type
                ),
            );
        }
    }
    if let Some(st) = status {
        let v = varint_value(st);
        if v != row.status {
            refuse(
                "status",
                format!(
                    "status column {} differs from the payload's status {v}",
                    row.status
                ),
            );
        }
    }
    let blobs = [
        ("metadata", metadata, &row.metadata),
        ("error_details", error, &row.error_details),
        ("permissions", permissions, &row.permissions),
        ("task_details", task, &row.task_details),
    ];
    for (column, payload, stored) in blobs {
        let Some(payload) = payload else { continue };
        let payload = bytes_value(payload);
        if payload != stored.as_deref() {
            let what = match (payload.is_some(), stored.is_some()) {
                (true, false) => "is NULL although the payload has the field",
                (false, true) => "is set although the payload lacks the field",
                _ => "is not byte-equal to the payload's field",
            };
            refuse(column, format!("{column} column {what}"));
        }
    }
    if row.has_subtrajectory != 0 && row.has_subtrajectory != 1 {
        refuse(
            "has_subtrajectory",
            format!(
                "has_subtrajectory {} is not a boolean",
                row.has_subtrajectory
            ),
        );
    }
    let present = matches!(sub, Some(Some(Some(_))));
    if (row.has_subtrajectory == 1) != present {
        refuse(
            "has_subtrajectory",
            format!(
                "has_subtrajectory {} but the payload {} a subtrajectory",
                row.has_subtrajectory,
                if present { "has" } else { "lacks" }
            ),
        );
    }
    if present || row.has_subtrajectory == 1 {
        out.push(Refusal::new(
            ReasonClass::Subtrajectory,
            format!("{loc}.subtrajectory"),
            "decomposed subtrajectories are unsupported",
        ));
    }
    if let Some(generic) = generic {
        let render = bytes_value(generic)
            .and_then(|g| single(g, names.generic_result).ok().flatten())
            .and_then(|(r, _)| single(r, names.result_render_info).ok().flatten())
            .map(|(b, _)| b);
        if render != row.render_info.as_deref() {
            let what = match (render.is_some(), row.render_info.is_some()) {
                (true, false) => "is NULL although generic.result.step_render_info is present",
                (false, true) => "is set although generic.result.step_render_info is absent",
                _ => "differs from generic.result.step_render_info",
            };
            out.push(Refusal::new(
                ReasonClass::RedundantColumn,
                format!("{loc}.render_info"),
                format!("render_info column {what}"),
            ));
        }
    }
    out
}
