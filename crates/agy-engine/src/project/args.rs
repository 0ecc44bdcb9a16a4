//! A family's argument bound, declared as data: the arguments a call must
//! carry, those it may carry (no other is allowed), the stored field an
//! argument must equal, and whether they must repeat the retained tool call
//! (`metadata.tool_call.arguments_json`). "Arguments and wrapper/result
//! fields are bounded separately for each projection": a family states its
//! bound here rather than in code, so the bound is visible and testable
//! (every near-miss kind is refused with its [`ArgMiss`]).
//!
//! A leaf: it imports only the field helpers, never a family.

use super::fields::{text, Args};
use prost_reflect::DynamicMessage;
use std::fmt;

/// The arguments of a projection. Every family whose rules read a call's
/// arguments declares one per tool (`Family::args`); the registry's test
/// builds each near-miss the bound names (an extra argument, a missing
/// required one, one contradicting its field, one differing from the
/// retained tool call) and requires a refusal.
#[derive(Debug, Clone, Copy)]
pub struct ArgBound {
    /// Each argument the call must carry with the field (of the payload or
    /// the native step the family names) whose text it must equal as a JSON
    /// string.
    pub equal: &'static [(&'static str, &'static str)],
    /// Further arguments the call must carry.
    pub required: &'static [&'static str],
    /// Arguments the call may carry besides. No other argument is allowed.
    pub optional: &'static [&'static str],
    /// Arguments the call may carry, each equal, when present, to a field
    /// (an argument only its own rule accepts: ContentOffset, Append).
    pub equal_if_present: &'static [(&'static str, &'static str)],
    /// The arguments are exactly the members of this JSON-object payload
    /// field, each the same JSON (a Finish call's result_json), whatever
    /// their names.
    pub members_of: Option<&'static str>,
    /// The arguments must repeat the retained tool call: the same keys, each
    /// the same JSON.
    pub repeat_tool_call: bool,
}

/// How a call's arguments miss their bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgMiss {
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
    /// No argument at all; the builders below add to it.
    pub const NONE: ArgBound = ArgBound {
        equal: &[],
        required: &[],
        optional: &[],
        equal_if_present: &[],
        members_of: None,
        repeat_tool_call: false,
    };

    /// A bound of only optional arguments (an allow-list).
    pub const fn allowing(optional: &'static [&'static str]) -> ArgBound {
        ArgBound::NONE.optional(optional)
    }

    /// With these arguments required, each equal to its field.
    pub const fn equal(self, equal: &'static [(&'static str, &'static str)]) -> ArgBound {
        ArgBound { equal, ..self }
    }

    /// With these arguments required.
    pub const fn required(self, required: &'static [&'static str]) -> ArgBound {
        ArgBound { required, ..self }
    }

    /// With these arguments allowed.
    pub const fn optional(self, optional: &'static [&'static str]) -> ArgBound {
        ArgBound { optional, ..self }
    }

    /// With these arguments allowed, each equal to its field when present.
    pub const fn equal_if_present(
        self,
        equal_if_present: &'static [(&'static str, &'static str)],
    ) -> ArgBound {
        ArgBound {
            equal_if_present,
            ..self
        }
    }

    /// With the arguments exactly the members of this payload field.
    pub const fn members_of(self, field: &'static str) -> ArgBound {
        ArgBound {
            members_of: Some(field),
            ..self
        }
    }

    /// Repeating the retained tool call.
    pub const fn repeating(self) -> ArgBound {
        ArgBound {
            repeat_tool_call: true,
            ..self
        }
    }

    /// The arguments the call must carry.
    pub fn required_names(&self) -> Vec<&'static str> {
        self.equal
            .iter()
            .map(|(a, _)| *a)
            .chain(self.required.iter().copied())
            .collect()
    }

    /// The argument names the bound allows.
    pub fn names(&self) -> Vec<&'static str> {
        let mut n = self.required_names();
        n.extend(self.optional.iter().copied());
        n.extend(self.equal_if_present.iter().map(|(a, _)| *a));
        n
    }

    /// Checks `args` against the bound: `source` holds the fields named in
    /// [`Self::equal`], `step` the retained tool call.
    pub(crate) fn check(
        &self,
        args: &Args,
        source: &DynamicMessage,
        step: &DynamicMessage,
    ) -> Result<(), ArgMiss> {
        if let Some(k) = args.extra_key(&self.names()) {
            return Err(ArgMiss::Extra(k.to_string()));
        }
        for arg in self.required_names() {
            if !args.has(arg) {
                return Err(ArgMiss::Missing(arg));
            }
        }
        let present = self
            .equal_if_present
            .iter()
            .filter(|(arg, _)| args.has(arg));
        for (arg, field) in self.equal.iter().chain(present) {
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
