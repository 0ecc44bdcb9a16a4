//! Redundant step columns must equal the complete step payload:
//! `step_type` = Step `type`, `status` = `status`; `metadata`, `error_details`,
//! `permissions`, `task_details` byte-equal to those fields (SQL NULL exactly
//! when absent); `has_subtrajectory` true exactly when `subtrajectory` is
//! present (and a present subtrajectory is unsupported); `render_info` equal to
//! `generic.result.step_render_info`, presence included.
//!
//! "The complete step payload" is the message protobuf builds from the
//! bytes. A singular field may legally occur more than once on the wire: a
//! message field's occurrences merge, a scalar's last one wins, and a later
//! member of the `step` oneof clears an earlier one. When every compared
//! field (and `generic.result`, `step_render_info` inside it) occurs at most
//! once and at most one member of the oneof occurs, each column is compared
//! byte for byte with the one occurrence. Otherwise the step is decoded
//! (merged as protobuf merges it) and each column compared with the merged
//! value: a message column must be present exactly when the merged field is
//! (so a NULL column never passes against a payload that carries the field in
//! any occurrence) and decode to a message equal to it; `step_type` and
//! `status` equal the merged (last) value.

use super::sqlite::StepRow;
use super::wire::{read_varint, FieldIter, WireType};
use crate::schema::Names;
use crate::verdict::{ReasonClass, Refusal};
use prost::Message;
use prost_reflect::{DynamicMessage, MessageDescriptor, ReflectMessage};

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

/// One field's answer from [`single`].
type Single<'a> = Result<Option<(&'a [u8], WireType)>, ()>;

/// [`single`] for several field numbers in one pass over the encoding:
/// entry `i` is exactly `single(payload, numbers[i])` (each number's answer
/// depends only on its own occurrences before the first ill-formed field).
/// A number that cannot occur (0) answers `Ok(None)`.
fn singles<'a, const N: usize>(payload: &'a [u8], numbers: [u32; N]) -> [Single<'a>; N] {
    let mut out: [Single<'a>; N] = [Ok(None); N];
    for f in FieldIter::new(payload) {
        let Ok(f) = f else { break };
        for (slot, &n) in out.iter_mut().zip(&numbers) {
            if f.number == n {
                *slot = match slot {
                    Ok(None) => Ok(Some((f.value, f.wire_type))),
                    _ => Err(()),
                };
            }
        }
    }
    out
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

/// How many times `number` occurs at the top of an encoding
/// (counting stops at the first malformed field, which the scan refuses).
fn count(payload: &[u8], number: u32) -> usize {
    let mut n = 0;
    for f in FieldIter::new(payload) {
        let Ok(f) = f else { break };
        if f.number == number {
            n += 1;
        }
    }
    n
}

/// One field of the payload, as the column must reproduce it.
enum Observed<'a> {
    Absent,
    /// The field's one occurrence, compared byte for byte.
    Bytes(&'a [u8]),
    /// The merged message of several occurrences, compared as a message.
    Merged(DynamicMessage),
}

impl Observed<'_> {
    fn present(&self) -> bool {
        !matches!(self, Observed::Absent)
    }

    /// Whether `column` reproduces this field; `desc` is the field's message type.
    fn matches(&self, column: Option<&[u8]>, desc: Option<&MessageDescriptor>) -> bool {
        match (self, column) {
            (Observed::Absent, None) => true,
            (Observed::Bytes(b), Some(c)) => *b == c,
            (Observed::Merged(m), Some(c)) => {
                let Some(desc) = desc else { return false };
                match (canonical(desc, &m.encode_to_vec()), canonical(desc, c)) {
                    (Some(a), Some(b)) => a == b,
                    _ => false,
                }
            }
            _ => false,
        }
    }
}

/// The message `bytes` decode to, with explicit defaults of fields without
/// presence dropped (decoded, re-encoded, decoded), so two encodings of one
/// message compare equal whatever their field order or map order.
fn canonical(desc: &MessageDescriptor, bytes: &[u8]) -> Option<DynamicMessage> {
    let m = DynamicMessage::decode(desc.clone(), bytes).ok()?;
    DynamicMessage::decode(desc.clone(), m.encode_to_vec().as_slice()).ok()
}

/// The numbers of the `step` oneof's members (the oneof holding `generic`).
fn step_oneof(names: &Names) -> Vec<u32> {
    names
        .step
        .oneofs()
        .find(|o| o.fields().any(|f| f.number() == names.step_fields.generic))
        .map(|o| o.fields().map(|f| f.number()).collect())
        .unwrap_or_default()
}

/// What the columns must reproduce.
struct Expected<'a> {
    step_type: i64,
    status: i64,
    /// metadata, error_details, permissions, task_details.
    blobs: [Observed<'a>; 4],
    subtrajectory: bool,
    render: Observed<'a>,
}

/// The compared top-level Step fields' numbers: generic, type, status,
/// metadata, error, permissions, task_details and subtrajectory (0 when the
/// schema has none).
fn compared_numbers(names: &Names) -> [u32; 8] {
    let s = names.step_fields;
    [
        s.generic,
        s.r#type,
        s.status,
        s.metadata,
        s.error,
        s.permissions,
        s.task_details,
        s.subtrajectory.unwrap_or(0),
    ]
}

/// The fast path: every compared field occurs at most once.
fn expected_single<'a>(names: &Names, payload: &'a [u8]) -> Expected<'a> {
    let s = names.step_fields;
    // One pass over the payload for every compared field (field number 0
    // never occurs, so an absent subtrajectory number finds nothing).
    let [generic, step_type, status, metadata, error, permissions, task_details, subtrajectory] =
        singles(payload, compared_numbers(names)).map(|r| r.ok().flatten());
    let blob = |v: Option<(&'a [u8], WireType)>| match v {
        Some((b, _)) => Observed::Bytes(b),
        None => Observed::Absent,
    };
    let render = generic
        .and_then(|(g, _)| single(g, names.generic_result).ok().flatten())
        .and_then(|(r, _)| single(r, names.result_render_info).ok().flatten());
    Expected {
        step_type: varint_value(step_type),
        status: varint_value(status),
        blobs: [
            blob(metadata),
            blob(error),
            blob(permissions),
            blob(task_details),
        ],
        subtrajectory: s.subtrajectory.is_some() && subtrajectory.is_some(),
        render: match render {
            Some((b, _)) => Observed::Bytes(b),
            None => Observed::Absent,
        },
    }
}

/// Whether the payload needs the merged comparison: a compared field (or
/// generic.result, or its step_render_info) occurs more than once, or more
/// than one member of the step oneof occurs. One pass over the top level.
fn needs_merge(names: &Names, cols: &StepColumns, payload: &[u8]) -> bool {
    let s = names.step_fields;
    let compared = &cols.compared;
    let oneof = &cols.oneof;
    let mut seen: Vec<u32> = Vec::new();
    let mut oneof_members = 0usize;
    for f in FieldIter::new(payload) {
        let Ok(f) = f else { break };
        let first = !seen.contains(&f.number);
        if !first && compared.contains(&f.number) {
            return true;
        }
        if first {
            seen.push(f.number);
            if oneof.contains(&f.number) {
                oneof_members += 1;
                if oneof_members > 1 {
                    return true;
                }
            }
        }
    }
    let Some((g, _)) = single(payload, s.generic).ok().flatten() else {
        return false;
    };
    if count(g, names.generic_result) > 1 {
        return true;
    }
    single(g, names.generic_result)
        .ok()
        .flatten()
        .is_some_and(|(r, _)| count(r, names.result_render_info) > 1)
}

/// The merged path: the step decoded as protobuf merges it.
fn expected_merged(names: &Names, payload: &[u8]) -> Result<Expected<'static>, String> {
    let s = names.step_fields;
    let step = DynamicMessage::decode(names.step.clone(), payload).map_err(|e| e.to_string())?;
    let field = |m: &DynamicMessage, n: u32| -> Option<DynamicMessage> {
        let fd = m.descriptor().get_field(n)?;
        if !m.has_field(&fd) {
            return None;
        }
        m.get_field(&fd).as_message().cloned()
    };
    let blob = |n: u32| match field(&step, n) {
        Some(m) => Observed::Merged(m),
        None => Observed::Absent,
    };
    let number = |n: u32| -> i64 {
        step.descriptor()
            .get_field(n)
            .map(|fd| step.get_field(&fd).as_enum_number().map_or(-1, i64::from))
            .unwrap_or(-1)
    };
    let render = field(&step, s.generic)
        .and_then(|g| field(&g, names.generic_result))
        .and_then(|r| field(&r, names.result_render_info));
    Ok(Expected {
        step_type: number(s.r#type),
        status: number(s.status),
        blobs: [
            blob(s.metadata),
            blob(s.error),
            blob(s.permissions),
            blob(s.task_details),
        ],
        subtrajectory: s.subtrajectory.is_some_and(|n| field(&step, n).is_some()),
        render: match render {
            Some(m) => Observed::Merged(m),
            None => Observed::Absent,
        },
    })
}

/// The message type of Step field `number`, for comparing merged values.
fn field_type(desc: &MessageDescriptor, number: u32) -> Option<MessageDescriptor> {
    desc.get_field(number)?.kind().as_message().cloned()
}

/// The message type of generic.result.step_render_info.
fn render_type(names: &Names) -> Option<MessageDescriptor> {
    let generic = field_type(&names.step, names.step_fields.generic)?;
    let result = field_type(&generic, names.generic_result)?;
    field_type(&result, names.result_render_info)
}

/// What [`check_step_row`] looks up in the schema, once per source instead
/// of once per row (the same descriptors and numbers each time).
pub struct StepColumns {
    /// The compared top-level Step fields.
    compared: Vec<u32>,
    /// The numbers of the `step` oneof's members.
    oneof: Vec<u32>,
    /// The message types of metadata, error_details, permissions,
    /// task_details (for merged comparisons).
    blob_types: [Option<MessageDescriptor>; 4],
    /// The message type of generic.result.step_render_info.
    render: Option<MessageDescriptor>,
}

impl StepColumns {
    pub fn new(names: &Names) -> StepColumns {
        let s = names.step_fields;
        StepColumns {
            // Field number 0 never occurs: the schema has no subtrajectory.
            compared: compared_numbers(names)
                .into_iter()
                .filter(|n| *n != 0)
                .collect(),
            oneof: step_oneof(names),
            blob_types: [s.metadata, s.error, s.permissions, s.task_details]
                .map(|n| field_type(&names.step, n)),
            render: render_type(names),
        }
    }

    /// Checks one row; returns every disagreement.
    pub fn check(&self, names: &Names, row: &StepRow) -> Vec<Refusal> {
        check_row(names, self, row, &row.step_payload)
    }

    /// [`Self::check`] for a row whose payload is held elsewhere (in the
    /// encoding the rows were read into).
    pub fn check_payload(&self, names: &Names, row: &StepRow, payload: &[u8]) -> Vec<Refusal> {
        check_row(names, self, row, payload)
    }
}

/// Checks one row; returns every disagreement.
pub fn check_step_row(names: &Names, row: &StepRow) -> Vec<Refusal> {
    check_row(names, &StepColumns::new(names), row, &row.step_payload)
}

fn check_row(names: &Names, cols: &StepColumns, row: &StepRow, payload: &[u8]) -> Vec<Refusal> {
    // Built only when a refusal names it (most rows have none).
    let loc = || format!("steps[{}]", row.idx);
    let mut out = Vec::new();
    let merged = needs_merge(names, cols, payload);
    let expected = if merged {
        match expected_merged(names, payload) {
            Ok(e) => e,
            Err(e) => {
                out.push(Refusal::new(
                    ReasonClass::RedundantColumn,
                    format!("{}.step_payload", loc()),
                    format!(
                        "the payload repeats a compared field and does not decode ({e}); its columns cannot be compared"
                    ),
                ));
                return out;
            }
        }
    } else {
        expected_single(names, payload)
    };
    let mut refuse = |column: &str, detail: String| {
        out.push(Refusal::new(
            ReasonClass::RedundantColumn,
            format!("{}.{column}", loc()),
            detail,
        ))
    };
    if expected.step_type != row.step_type {
        refuse(
            "step_type",
            format!(
                "step_type column {} differs from the payload's type {}",
                row.step_type, expected.step_type
            ),
        );
    }
    if expected.status != row.status {
        refuse(
            "status",
            format!(
                "status column {} differs from the payload's status {}",
                row.status, expected.status
            ),
        );
    }
    let columns = [
        ("metadata", &row.metadata),
        ("error_details", &row.error_details),
        ("permissions", &row.permissions),
        ("task_details", &row.task_details),
    ];
    for (((column, stored), observed), desc) in columns
        .into_iter()
        .zip(&expected.blobs)
        .zip(&cols.blob_types)
    {
        if !observed.matches(stored.as_deref(), desc.as_ref()) {
            let what = match (observed.present(), stored.is_some()) {
                (true, false) => "is NULL although the payload has the field",
                (false, true) => "is set although the payload lacks the field",
                _ if merged => "is not equal to the payload's merged field",
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
    let present = expected.subtrajectory;
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
    if !expected
        .render
        .matches(row.render_info.as_deref(), cols.render.as_ref())
    {
        let what = match (expected.render.present(), row.render_info.is_some()) {
            (true, false) => "is NULL although generic.result.step_render_info is present",
            (false, true) => "is set although generic.result.step_render_info is absent",
            _ if merged => "differs from the merged generic.result.step_render_info",
            _ => "differs from generic.result.step_render_info",
        };
        refuse("render_info", format!("render_info column {what}"));
    }
    if present || row.has_subtrajectory == 1 {
        out.push(Refusal::new(
            ReasonClass::Subtrajectory,
            format!("{}.subtrajectory", loc()),
            "decomposed subtrajectories are unsupported",
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::wire::{put_len_field, put_varint_field};

    /// `singles` answers exactly what `single` answers, number by number:
    /// absent, one value, repeated, and cut off by an ill-formed field.
    #[test]
    fn singles_agrees_with_single() {
        let mut p = Vec::new();
        put_varint_field(&mut p, 1, 7);
        put_len_field(&mut p, 2, b"a");
        put_len_field(&mut p, 3, b"b");
        put_len_field(&mut p, 2, b"c");
        put_varint_field(&mut p, 5, 300);
        let mut cut = p.clone();
        cut.push(0x0e); // invalid wire type: iteration stops here
        put_varint_field(&mut cut, 4, 1);
        put_varint_field(&mut cut, 1, 8);
        for payload in [&p[..], &cut[..], &[][..]] {
            let numbers = [1, 2, 3, 4, 5, 6, 0];
            let got = singles(payload, numbers);
            for (n, g) in numbers.iter().zip(got) {
                assert_eq!(g, single(payload, *n), "field {n}");
            }
        }
    }
}
