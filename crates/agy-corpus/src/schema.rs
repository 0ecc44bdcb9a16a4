//! The corpus's own descriptor pool and daemon JSON conversion.
//!
//! The pool is compiled by this crate's `build.rs` from the workspace's
//! `proto/` files (the format's data). The JSON conversion follows the proto3
//! JSON mapping the daemon speaks; it is written here, not borrowed from the
//! reader, so that the reader's comparison checks it rather than itself.

use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, SerializeOptions};

/// The modeled FileDescriptorSet compiled from `proto/` by `build.rs`.
pub const MODELED_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/corpus_schema.pb"));

/// Why the modeled schema could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The embedded set does not decode.
    #[error("the embedded modeled schema is invalid: {0}")]
    Invalid(String),
    /// A message the corpus builds is not declared.
    #[error("the modeled schema lacks message {0}")]
    MissingMessage(String),
}

/// The descriptor pool the generator builds messages from.
#[derive(Debug, Clone)]
pub struct Schema {
    /// Every declaration compiled from `proto/`, imports included.
    pub pool: DescriptorPool,
}

impl Schema {
    /// The modeled schema compiled from `proto/`.
    pub fn modeled() -> Result<Schema, SchemaError> {
        let pool =
            DescriptorPool::decode(MODELED_SET).map_err(|e| SchemaError::Invalid(e.to_string()))?;
        Ok(Schema { pool })
    }

    /// A message declaration by full name.
    pub fn message(&self, name: &str) -> Result<MessageDescriptor, SchemaError> {
        self.pool
            .get_message_by_name(name)
            .ok_or_else(|| SchemaError::MissingMessage(name.to_string()))
    }
}

/// The daemon's JSON spelling: lowerCamelCase field names, enum names,
/// 64-bit integers as strings, default values left out.
fn daemon_options() -> SerializeOptions {
    SerializeOptions::new()
        .stringify_64_bit_integers(true)
        .use_enum_numbers(false)
        .use_proto_field_name(false)
        .skip_default_fields(true)
}

/// A message as the daemon writes it (`null` if it cannot be serialized).
pub fn to_daemon_json(msg: &DynamicMessage) -> serde_json::Value {
    msg.serialize_with_options(serde_json::value::Serializer, &daemon_options())
        .unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_modeled_schema_declares_what_the_corpus_builds() {
        let s = Schema::modeled().expect("modeled schema");
        for name in [
            "gemini_coder.Trajectory",
            "gemini_coder.Step",
            "exa.cortex_pb.CortexStepMetadata",
        ] {
            assert!(s.message(name).is_ok(), "{name}");
        }
        assert!(s.message("no.such.Message").is_err());
    }
}
