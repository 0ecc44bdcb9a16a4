//! A family's argument bound, declared as data: the arguments a call must
//! carry, those it may carry (no other is allowed), the stored field an
//! argument must equal, and whether they must repeat the retained tool call
//! (`metadata.tool_call.arguments_json`). "Arguments and wrapper/result
//! fields are bounded separately for each projection": a family states its
//! bound here rather than in code, so the bound is visible and testable
//! (every near-miss kind is refused with its [`ArgMiss`]).
//!
//! A leaf: it imports only the field helpers, never a family.

use super::fields::Args;
use prost_reflect::DynamicMessage;
use std::fmt;

/// The arguments of a projection. Every family whose rules read a call's
/// arguments declares one per tool (`Family::args`); the registry's test
/// builds each near-miss the bound names (an extra argument, a missing
/// required one, one contradicting its field, one differing from the
/// retained tool call) and requires a refusal.
#[derive(Debug, Clone, Copy)]
pub struct ArgBound {
    /// Each argument the call must carry with the field whose value it must
    /// equal as JSON: a dotted path (a map's key as its last step) into the
    /// decoded result payload (a modern tool payload), the presented native
    /// Step (a wrapper over an embedded native Step), or the wrapper's
    /// `generic` (a payload-free wrapper); see `bounds::source`.
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
    /// The arguments are not exactly the members of the JSON object this
    /// field holds (each the same JSON).
    NotMembers { field: &'static str },
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
            ArgMiss::NotMembers { field } => {
                write!(f, "arguments not exactly the members of {field}")
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

    /// Checks `args` against the bound's values: the required arguments are
    /// present, those bound to a field equal it, when the bound says so they
    /// repeat the retained tool call, and they are the members of the field
    /// [`Self::members_of`] names (after the repeat: a Finish call that
    /// differs from its tool call is refused for that first). `field` resolves a declared field
    /// (of [`Self::equal`], [`Self::equal_if_present`], [`Self::members_of`])
    /// to its stored value as JSON (`None`: absent or not resolvable), and
    /// `step` holds the retained tool call. The names are not checked here:
    /// the dispatcher checks them against every bound that applies at once
    /// (`bounds::enforce`).
    ///
    /// An argument bound to a field must be the same JSON as the field's
    /// value: a string field's text as a JSON string, an integer field as a
    /// JSON number, a bool field as a JSON literal. A field that does not
    /// resolve contradicts every argument (fail closed).
    pub(crate) fn check_values(
        &self,
        args: &Args,
        field: &dyn Fn(&str) -> Option<serde_json::Value>,
        step: &DynamicMessage,
    ) -> Result<(), ArgMiss> {
        for arg in self.required_names() {
            if !args.has(arg) {
                return Err(ArgMiss::Missing(arg));
            }
        }
        let present = self
            .equal_if_present
            .iter()
            .filter(|(arg, _)| args.has(arg));
        for (arg, f) in self.equal.iter().chain(present) {
            let value = field(f);
            if value.is_none() || args.json(arg) != value {
                return Err(ArgMiss::Contradicts { arg, field: f });
            }
        }
        if self.repeat_tool_call && !args.repeat_tool_call(step) {
            return Err(ArgMiss::NotInToolCall);
        }
        if let Some(f) = self.members_of {
            members_are(args, f, field(f))?;
        }
        Ok(())
    }
}

/// The arguments are exactly the members of the JSON object that field `f`
/// holds as text (`value`), each the same JSON.
fn members_are(
    args: &Args,
    f: &'static str,
    value: Option<serde_json::Value>,
) -> Result<(), ArgMiss> {
    let object = match value {
        Some(serde_json::Value::String(t)) => serde_json::from_str::<serde_json::Value>(&t).ok(),
        _ => None,
    };
    let Some(serde_json::Value::Object(members)) = object else {
        return Err(ArgMiss::NotMembers { field: f });
    };
    if let Some(k) = args.keys().into_iter().find(|k| !members.contains_key(*k)) {
        return Err(ArgMiss::Extra(k.to_string()));
    }
    let same = members.len() == args.0.len()
        && members
            .iter()
            .all(|(k, v)| args.json(k).is_some_and(|a| a == *v));
    if same {
        Ok(())
    } else {
        Err(ArgMiss::NotMembers { field: f })
    }
}
