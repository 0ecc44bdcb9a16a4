//! A family's argument bound, declared as data: the arguments a call must
//! carry (no other is allowed), the stored field each must equal, and
//! whether they must repeat the retained tool call
//! (`metadata.tool_call.arguments_json`). "Arguments and wrapper/result
//! fields are bounded separately for each projection": a family states its
//! bound here rather than in code, so the bound is visible and testable
//! (every near-miss kind is refused with its [`ArgMiss`]).
//!
//! A leaf: it imports only the field helpers, never a family.

use super::fields::{text, Args};
use prost_reflect::DynamicMessage;
use std::fmt;

/// The arguments of a projection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArgBound {
    /// Each argument the call must carry, with the field (of the payload or
    /// the native step the family names) whose text it must equal as a JSON
    /// string. No other argument is allowed.
    pub equal: &'static [(&'static str, &'static str)],
    /// The arguments must repeat the retained tool call: the same keys, each
    /// the same JSON.
    pub repeat_tool_call: bool,
}

/// How a call's arguments miss their bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ArgMiss {
    /// An argument the bound does not allow.
    Extra(String),
    /// A required argument is absent.
    Missing(&'static str),
    /// An argument that is not a JSON string equal to its field.
    Contradicts {
        arg: &'static str,
        field: &'static str,
    },
    /// The arguments differ from the retained tool call's (or there is none).
    NotInToolCall,
}

impl fmt::Display for ArgMiss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgMiss::Extra(a) => write!(f, "unexpected argument {a}"),
            ArgMiss::Missing(a) => write!(f, "missing argument {a}"),
            ArgMiss::Contradicts { arg, field } => {
                write!(f, "argument {arg} is not the string of {field}")
            }
            ArgMiss::NotInToolCall => {
                f.write_str("arguments not repeated in the retained tool call")
            }
        }
    }
}

impl ArgBound {
    /// The argument names the bound allows (all of them required).
    pub fn names(&self) -> Vec<&'static str> {
        self.equal.iter().map(|(a, _)| *a).collect()
    }

    /// Checks `args` against the bound: `source` holds the fields named in
    /// [`Self::equal`], `step` the retained tool call.
    pub fn check(
        &self,
        args: &Args,
        source: &DynamicMessage,
        step: &DynamicMessage,
    ) -> Result<(), ArgMiss> {
        if let Some(k) = args.extra_key(&self.names()) {
            return Err(ArgMiss::Extra(k.to_string()));
        }
        for (arg, field) in self.equal {
            if !args.has(arg) {
                return Err(ArgMiss::Missing(arg));
            }
            if args.string(arg).as_deref() != Some(text(source, field).as_str()) {
                return Err(ArgMiss::Contradicts { arg, field });
            }
        }
        if self.repeat_tool_call && !args.repeat_tool_call(step) {
            return Err(ArgMiss::NotInToolCall);
        }
        Ok(())
    }
}
