//! The stored trajectory as its canonical encoding, indexed: each step's
//! extent, its type and whether it carries a generic payload, read from the
//! wire in one shallow pass after the strict scan. Projection reads this and
//! materializes only the steps it rewrites ([`WireTrajectory::decode_step`]);
//! the whole `DynamicMessage` tree is built only where the full comparison or
//! an export needs it ([`WireTrajectory::decode`]).
//!
//! Reading the wire gives exactly what decoding would: a singular field's
//! last occurrence wins, repeated `steps` keep their order, an absent `type`
//! is 0. A step is said to pass through only when nothing on its wire could
//! make the decoded message generic: no `generic` occurrence at all and a
//! type other than GENERIC.

use super::wire::{FieldIter, WireError, WireType};
use crate::schema::Names;
use bytes::Bytes;
use prost_reflect::{DynamicMessage, EnumDescriptor, MessageDescriptor};
use std::collections::BTreeMap;
use std::ops::Range;

/// The enum value name of a generic wrapper step.
const GENERIC_STEP_TYPE: &str = "CORTEX_STEP_TYPE_GENERIC";

/// A trajectory encoding with its steps located.
#[derive(Debug, Clone)]
pub struct WireTrajectory {
    encoding: Bytes,
    trajectory: MessageDescriptor,
    step: MessageDescriptor,
    step_type: Option<EnumDescriptor>,
    steps: Vec<StepSpan>,
    cascade_id: String,
    steps_field: u32,
}

/// One stored step on the wire.
#[derive(Debug, Clone)]
struct StepSpan {
    range: Range<usize>,
    /// The `type` enum number (the last occurrence; 0 when absent).
    type_number: i32,
    /// Whether any `generic` occurrence is on the wire.
    generic: bool,
}

/// Why an encoding could not be indexed (a passing strict scan rules all of
/// these out).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    #[error("{0}")]
    Wire(WireError),
    #[error("field {field} ({name}) is not {want}")]
    WireType {
        field: u32,
        name: &'static str,
        want: &'static str,
    },
    #[error("cascade_id is not valid UTF-8")]
    CascadeIdUtf8,
}

/// Why a step or the trajectory did not decode.
#[derive(Debug, Clone, thiserror::Error)]
pub enum DecodeError {
    #[error("there is no step {0}")]
    NoSuchStep(usize),
    #[error("{0}")]
    Wire(WireError),
    #[error("{0}")]
    Protobuf(#[from] prost::DecodeError),
}

impl WireTrajectory {
    /// Indexes `encoding`, a `gemini_coder.Trajectory` that passed the strict
    /// scan.
    pub fn index(names: &Names, encoding: Bytes) -> Result<WireTrajectory, IndexError> {
        let t = &names.traj;
        let s = &names.step_fields;
        let base = encoding.as_ptr() as usize;
        let mut steps = Vec::new();
        let mut cascade_id = "";
        for f in FieldIter::new(&encoding) {
            let f = f.map_err(IndexError::Wire)?;
            if f.number == t.steps {
                if f.wire_type != WireType::Len {
                    return Err(IndexError::WireType {
                        field: f.number,
                        name: "steps",
                        want: "length-delimited",
                    });
                }
                let start = f.value.as_ptr() as usize - base;
                let mut span = StepSpan {
                    range: start..start + f.value.len(),
                    type_number: 0,
                    generic: false,
                };
                for g in FieldIter::new(f.value) {
                    let g = g.map_err(IndexError::Wire)?;
                    if g.number == s.generic {
                        span.generic = true;
                    } else if g.number == s.r#type {
                        if g.wire_type != WireType::Varint {
                            return Err(IndexError::WireType {
                                field: g.number,
                                name: "type",
                                want: "a varint",
                            });
                        }
                        let mut pos = 0;
                        // prost reads an enum as the low 32 bits of the varint.
                        span.type_number = super::wire::read_varint(g.value, &mut pos)
                            .map_err(IndexError::Wire)?
                            as i32;
                    }
                }
                steps.push(span);
            } else if f.number == t.cascade_id {
                if f.wire_type != WireType::Len {
                    return Err(IndexError::WireType {
                        field: f.number,
                        name: "cascade_id",
                        want: "length-delimited",
                    });
                }
                cascade_id = std::str::from_utf8(f.value).map_err(|_| IndexError::CascadeIdUtf8)?;
            }
        }
        let cascade_id = cascade_id.to_string();
        let step_type = names
            .step
            .get_field(s.r#type)
            .and_then(|fd| fd.kind().as_enum().cloned());
        Ok(WireTrajectory {
            trajectory: names.trajectory.clone(),
            step: names.step.clone(),
            step_type,
            steps,
            cascade_id,
            steps_field: t.steps,
            encoding,
        })
    }

    /// The trajectory's message type.
    pub fn descriptor(&self) -> &MessageDescriptor {
        &self.trajectory
    }

    /// The number of the trajectory's `steps` field.
    pub fn steps_field(&self) -> u32 {
        self.steps_field
    }

    /// The encoding indexed.
    pub fn encoding(&self) -> &Bytes {
        &self.encoding
    }

    /// The number of stored steps.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The trajectory's `cascade_id` ("" when unset).
    pub fn cascade_id(&self) -> &str {
        &self.cascade_id
    }

    /// The enum value name of step `i`'s type, when the schema names it.
    pub fn step_type_name(&self, i: usize) -> Option<String> {
        let n = self.steps.get(i)?.type_number;
        self.step_type
            .as_ref()?
            .get_value(n)
            .map(|v| v.name().to_string())
    }

    /// Whether step `i` decodes to a message that is certainly not a generic
    /// wrapper: no `generic` on its wire and a type other than GENERIC. Such
    /// a step passes through projection unchanged without being decoded.
    pub fn passes_through(&self, i: usize) -> bool {
        self.steps.get(i).is_some_and(|s| {
            !s.generic
                && self
                    .step_type
                    .as_ref()
                    .and_then(|e| e.get_value_by_name(GENERIC_STEP_TYPE))
                    .is_none_or(|g| g.number() != s.type_number)
        })
    }

    /// Decodes step `i` alone (its `bytes` fields are slices of the encoding).
    pub fn decode_step(&self, i: usize) -> Result<DynamicMessage, DecodeError> {
        let span = self.steps.get(i).ok_or(DecodeError::NoSuchStep(i))?;
        Ok(DynamicMessage::decode(
            self.step.clone(),
            self.encoding.slice(span.range.clone()),
        )?)
    }

    /// Decodes the trajectory's fields other than `steps` (what a rule reads
    /// of the trajectory around a step: its ids, executor metadata).
    pub fn decode_without_steps(&self) -> Result<DynamicMessage, DecodeError> {
        let mut rest = Vec::new();
        for f in FieldIter::new(&self.encoding) {
            let f = f.map_err(DecodeError::Wire)?;
            if f.number != self.steps_field {
                rest.extend_from_slice(f.encoding);
            }
        }
        Ok(DynamicMessage::decode(
            self.trajectory.clone(),
            rest.as_slice(),
        )?)
    }

    /// Decodes the whole trajectory.
    pub fn decode(&self) -> Result<DynamicMessage, prost::DecodeError> {
        DynamicMessage::decode(self.trajectory.clone(), self.encoding.clone())
    }

    /// Steps by type name (`CORTEX_STEP_TYPE_` dropped; `UNSPECIFIED` for a
    /// number the schema does not name).
    pub fn step_types(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for i in 0..self.steps.len() {
            let name = self
                .step_type_name(i)
                .unwrap_or_else(|| "UNSPECIFIED".into());
            let short = name.strip_prefix("CORTEX_STEP_TYPE_").unwrap_or(&name);
            *out.entry(short.to_string()).or_insert(0) += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Schema;
    use crate::source::wire::{put_len_field, put_varint_field};
    use prost::Message;
    use prost_reflect::{ReflectMessage, Value};

    fn generic_number(s: &Schema) -> i32 {
        let fd = s.names.step.get_field_by_name("type").unwrap();
        fd.kind()
            .as_enum()
            .unwrap()
            .get_value_by_name(GENERIC_STEP_TYPE)
            .unwrap()
            .number()
    }

    fn step_bytes(s: &Schema, fields: &[(&str, Value)]) -> Vec<u8> {
        let mut m = DynamicMessage::new(s.names.step.clone());
        for (name, v) in fields {
            m.set_field_by_name(name, v.clone());
        }
        m.encode_to_vec()
    }

    #[test]
    fn locates_steps_and_reads_them_as_decoding_would() {
        let s = Schema::modeled().unwrap();
        let n = &s.names;
        let generic = generic_number(&s);
        let plain = step_bytes(&s, &[("type", Value::EnumNumber(generic + 1))]);
        let wrapper = step_bytes(&s, &[("type", Value::EnumNumber(generic))]);
        let mut enc = Vec::new();
        put_len_field(&mut enc, n.traj.cascade_id, b"first");
        put_len_field(&mut enc, n.traj.steps, &plain);
        put_len_field(&mut enc, n.traj.steps, &wrapper);
        // a singular field's last occurrence wins
        put_len_field(&mut enc, n.traj.cascade_id, b"c-1");
        // a later `type` occurrence turns the first step generic
        let mut turned = plain.clone();
        put_varint_field(&mut turned, n.step_fields.r#type, generic as u64);
        put_len_field(&mut enc, n.traj.steps, &turned);
        // an empty generic payload still counts
        let mut with_generic = plain.clone();
        put_len_field(&mut with_generic, n.step_fields.generic, b"");
        put_len_field(&mut enc, n.traj.steps, &with_generic);
        let w = WireTrajectory::index(n, Bytes::from(enc)).unwrap();
        assert_eq!(w.len(), 4);
        assert_eq!(w.cascade_id(), "c-1");
        let through: Vec<bool> = (0..4).map(|i| w.passes_through(i)).collect();
        assert_eq!(through, [true, false, false, false]);
        let whole = w.decode().unwrap();
        let steps = crate::schema::message_refs(&whole, "steps");
        for (i, step) in steps.iter().enumerate() {
            assert_eq!(&&w.decode_step(i).unwrap(), step, "step {i}");
            let ty = step
                .get_field_by_name("type")
                .and_then(|v| v.as_enum_number())
                .unwrap();
            let name = step
                .descriptor()
                .get_field_by_name("type")
                .and_then(|fd| fd.kind().as_enum()?.get_value(ty))
                .map(|v| v.name().to_string());
            assert_eq!(w.step_type_name(i), name);
        }
        let rest = w.decode_without_steps().unwrap();
        assert_eq!(
            rest.get_field_by_name("cascade_id").unwrap().as_str(),
            Some("c-1")
        );
        assert!(crate::schema::message_refs(&rest, "steps").is_empty());
        assert_eq!(w.step_types().values().sum::<u64>(), 4);
        assert!(w.decode_step(4).is_err());
    }

    #[test]
    fn refuses_what_no_scan_passes() {
        let s = Schema::modeled().unwrap();
        let n = &s.names;
        let mut bad_steps = Vec::new();
        put_varint_field(&mut bad_steps, n.traj.steps, 1);
        let mut bad_type = Vec::new();
        let mut step = Vec::new();
        put_len_field(&mut step, n.step_fields.r#type, b"x");
        put_len_field(&mut bad_type, n.traj.steps, &step);
        let mut bad_id = Vec::new();
        put_len_field(&mut bad_id, n.traj.cascade_id, &[0xff]);
        for (enc, want) in [
            (vec![0x0a, 0x05], "exceeds"),
            (bad_steps, "steps"),
            (bad_type, "type"),
            (bad_id, "UTF-8"),
        ] {
            let e = WireTrajectory::index(n, Bytes::from(enc)).unwrap_err();
            assert!(e.to_string().contains(want), "{e}");
        }
    }
}
