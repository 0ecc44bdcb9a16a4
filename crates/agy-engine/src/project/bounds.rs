//! The dispatcher's execution of the declared argument bounds: a generic
//! step a family presents is accepted only when its arguments are within the
//! bounds the registered families declare ([`super::family::Args`]) for the
//! rules it is presented under and its tool, so a family cannot accept an
//! argument its declaration does not name, however its own code reads them.
//!
//! Which bounds apply: every declared bound of one of the presented rules
//! (the rule and its extras, in that order) that names the wrapper's tool,
//! and, for a wrapper over an embedded native Step, the embedded allow-list
//! of its tool over the native type (`Args::over`), which bounds every route
//! over a native Step. Then:
//!
//! 1. every argument is named by one of them (a bound of the members of a
//!    field, `members_of`, names its members); an argument none names is
//!    refused under the first bound that does not name it, those binding
//!    arguments to stored fields first (a route's own bound), then the
//!    others in the order above;
//! 2. each bound's required arguments are present, those bound to a field
//!    equal it, and, when the bound says so, the arguments repeat the
//!    retained tool call; a miss is refused under that bound's rule with its
//!    declared reason;
//! 3. a wrapper with arguments and no applicable bound is refused (a rule
//!    that declares no bound accepts no argument).
//!
//! The field a bound names is read from the decoded result payload (a modern
//! tool payload Any), the presented native Step (an embedded native Step), or
//! the wrapper's `generic` (a payload-free or resultless wrapper).
//!
//! A leaf: it imports the step context, the field helpers and the reasons,
//! never a family.

use super::args::ArgMiss;
use super::family::{Args, Ctx, Presented, STEP_URL};
use super::fields::{reject, step_type, sub, Wrapper, R};
use super::reasons::Reason;
use bytes::Bytes;
use prost_reflect::{DynamicMessage, MapKey, ReflectMessage, Value};
use std::cell::OnceCell;

/// The result payload a wrapper carried (type URL, value bytes), if any.
pub(crate) type Payload<'p> = Option<&'p (String, Bytes)>;

/// Refuses `p` unless `w`'s arguments are within the bounds that apply to
/// it (see the module comment).
pub(crate) fn enforce(ctx: &Ctx<'_>, w: &Wrapper, payload: Payload, p: &Presented) -> R<()> {
    let native = match payload {
        Some((url, _)) if url == STEP_URL => p.step.as_ref(),
        _ => None,
    };
    let bounds = applicable(ctx, w, native, p);
    let Some(first) = bounds.first() else {
        if w.args.0.is_empty() {
            return Ok(());
        }
        return reject(
            Some(p.rule),
            Reason::UnqualifiedGeneric,
            format!(
                "{} arguments {:?} under a rule that declares no bound for the tool",
                w.tool,
                w.args.keys()
            ),
        );
    };
    if !bounds.iter().any(|a| a.bound.members_of.is_some()) {
        let named: Vec<&str> = bounds.iter().flat_map(|a| a.bound.names()).collect();
        if let Some(k) = w.args.extra_key(&named) {
            // A route's own bound (one binding arguments to stored fields:
            // failed image, list_resources, the bridge, the modern payloads)
            // before the embedded allow-list, and that before the rules an
            // argument only adds (ContentOffset, Append, permission records).
            let binds = |a: &&&Args| !a.bound.equal.is_empty();
            let a = bounds
                .iter()
                .filter(binds)
                .chain(bounds.iter().filter(|a| !binds(a)))
                .find(|a| !a.bound.names().contains(&k))
                .unwrap_or(first);
            return refuse(a, w, &ArgMiss::Extra(k.to_string()));
        }
    }
    let source = Source::new(ctx, w, payload, native);
    for a in &bounds {
        if let Err(miss) = a.bound.check_values(&w.args, &|f| source.field(f), w.step) {
            return refuse(a, w, &miss);
        }
    }
    Ok(())
}

/// The bounds that apply to `w` presented as `p` (see the module comment):
/// the presented rules' bounds naming the tool, then the embedded allow-list.
fn applicable<'a>(
    ctx: &Ctx<'a>,
    w: &Wrapper,
    native: Option<&DynamicMessage>,
    p: &Presented,
) -> Vec<&'a Args> {
    let rules = std::iter::once(p.rule).chain(p.extra.iter().copied());
    let mut out: Vec<&'a Args> = Vec::new();
    for rule in rules {
        for a in ctx.bounds() {
            let fits = a.rule == rule && a.over.is_none() && a.names_tool(&w.tool);
            if fits && !out.iter().any(|b| std::ptr::eq(*b, a)) {
                out.push(a);
            }
        }
    }
    if let Some(n) = native {
        let ntype = step_type(n);
        out.extend(
            ctx.bounds()
                .filter(|a| a.over == Some(ntype.as_str()) && a.names_tool(&w.tool)),
        );
    }
    out
}

/// The refusal of a call that misses bound `a`.
fn refuse(a: &Args, w: &Wrapper, miss: &ArgMiss) -> R<()> {
    let kind = match miss {
        ArgMiss::NotInToolCall => a.refuse_repeat,
        _ => a.refuse,
    };
    reject(Some(a.rule), kind, format!("{} {miss}", w.tool))
}

/// Where the fields a bound names are read from.
struct Source<'a, 'w> {
    ctx: &'a Ctx<'a>,
    w: &'a Wrapper<'w>,
    payload: Payload<'a>,
    native: Option<&'a DynamicMessage>,
    decoded: OnceCell<Option<DynamicMessage>>,
}

impl<'a, 'w> Source<'a, 'w> {
    fn new(
        ctx: &'a Ctx<'a>,
        w: &'a Wrapper<'w>,
        payload: Payload<'a>,
        native: Option<&'a DynamicMessage>,
    ) -> Self {
        Source {
            ctx,
            w,
            payload,
            native,
            decoded: OnceCell::new(),
        }
    }

    /// The message the declared fields are paths into.
    fn message(&self) -> Option<&DynamicMessage> {
        if let Some(n) = self.native {
            return Some(n);
        }
        let Some((url, bytes)) = self.payload else {
            return Some(self.w.generic);
        };
        self.decoded
            .get_or_init(|| {
                let name = url.rsplit_once('/').map(|(_, n)| n)?;
                let md = self.ctx.schema.pool.get_message_by_name(name)?;
                DynamicMessage::decode(md, bytes.clone()).ok()
            })
            .as_ref()
    }

    /// Field `path` as JSON (see [`field_json`]).
    fn field(&self, path: &str) -> Option<serde_json::Value> {
        field_json(self.message()?, path)
    }
}

/// The value at a dotted `path` of `m` as JSON: each step a set message
/// field, the last a scalar field (its value, the default when unset), or a
/// `map<string, _>` field followed by one key. `None` when a step is unset,
/// undeclared or of another kind.
pub(crate) fn field_json(m: &DynamicMessage, path: &str) -> Option<serde_json::Value> {
    let mut parts = path.split('.').peekable();
    let mut cur = m;
    while let Some(part) = parts.next() {
        let fd = cur.descriptor().get_field_by_name(part)?;
        let last = parts.peek().is_none();
        if fd.is_map() {
            let key = parts.next()?;
            if parts.next().is_some() {
                return None;
            }
            let value = cur.get_field(&fd);
            let Value::Map(map) = value.as_ref() else {
                return None;
            };
            return scalar_json(map.get(&MapKey::String(key.to_string()))?);
        }
        if fd.is_list() {
            return None;
        }
        if fd.kind().as_message().is_some() {
            if last {
                return None;
            }
            cur = sub(cur, part)?;
            continue;
        }
        if !last {
            return None;
        }
        return scalar_json(cur.get_field(&fd).as_ref());
    }
    None
}

/// A scalar field value as JSON (strings, bools, integers).
fn scalar_json(v: &Value) -> Option<serde_json::Value> {
    Some(match v {
        Value::String(s) => serde_json::Value::String(s.clone()),
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::I32(n) => (*n).into(),
        Value::I64(n) => (*n).into(),
        Value::U32(n) => (*n).into(),
        Value::U64(n) => (*n).into(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::args::ArgBound;
    use super::super::family::{Around, Claim, Family};
    use super::super::fields::{new_sub, set, set_enum, Reject};
    use super::*;
    use crate::rules::RuleId;
    use crate::schema::Schema;
    use crate::source::wire_trajectory::WireTrajectory;
    use prost::Message;
    use std::collections::HashMap;

    const RULE: RuleId = RuleId::PayloadFreeListPermissions;
    const TOOL: &str = "test_tool";

    /// A family whose code accepts every payload-less wrapper, whatever its
    /// arguments: only the dispatcher holds it to its declaration.
    fn accept_all(_: &Ctx<'_>, _: &Wrapper) -> R<Presented> {
        Ok(Presented::unchanged(RULE))
    }

    const fn family(args: &'static [Args]) -> Family {
        Family {
            file: "bounds.rs",
            docs: &[],
            claims: &[Claim::Payloadless(accept_all)],
            hooks: &[],
            args,
        }
    }

    /// Declares A only (B is not named).
    const ONLY_A: Family = family(&[Args::of(
        RULE,
        TOOL,
        ArgBound::allowing(&["A"]),
        Reason::PayloadFreeArguments,
    )]);
    /// Requires A and B, repeating the retained tool call.
    const A_AND_B: Family = family(&[Args::of(
        RULE,
        TOOL,
        ArgBound::NONE.required(&["A", "B"]).repeating(),
        Reason::PayloadFreeArguments,
    )
    .repeat_refused(Reason::ArgumentsRepeatToolCall)]);
    /// Declares no bound for the tool.
    const NO_BOUND: Family = family(&[]);

    /// A DONE payload-less generic wrapper of [`TOOL`] with `args` (JSON
    /// texts) and the retained tool call `tool_call` (JSON object text).
    fn wrapper(s: &Schema, args: &[(&str, &str)], tool_call: &str) -> DynamicMessage {
        let mut step = DynamicMessage::new(s.names.step.clone());
        assert!(set_enum(&mut step, "type", "CORTEX_STEP_TYPE_GENERIC"));
        assert!(set_enum(&mut step, "status", "CORTEX_STEP_STATUS_DONE"));
        let mut generic = new_sub(&step, "generic").expect("generic");
        let map: HashMap<MapKey, Value> = args
            .iter()
            .map(|(k, v)| (MapKey::String(k.to_string()), Value::String(v.to_string())))
            .collect();
        assert!(set(&mut generic, "args", Value::Map(map)));
        let mut result = new_sub(&generic, "result").expect("result");
        assert!(set(&mut result, "result", Value::String("ok".into())));
        assert!(set(&mut generic, "result", Value::Message(result)));
        assert!(set(&mut step, "generic", Value::Message(generic)));
        let mut metadata = new_sub(&step, "metadata").expect("metadata");
        let mut call = new_sub(&metadata, "tool_call").expect("tool_call");
        assert!(set(&mut call, "name", Value::String(TOOL.into())));
        assert!(set(
            &mut call,
            "arguments_json",
            Value::String(tool_call.into())
        ));
        assert!(set(&mut metadata, "tool_call", Value::Message(call)));
        assert!(set(&mut step, "metadata", Value::Message(metadata)));
        step
    }

    /// Dispatches `step` with `families` registered.
    fn dispatch(s: &Schema, families: &[Family], step: &DynamicMessage) -> R<RuleId> {
        let mut t = DynamicMessage::new(s.names.trajectory.clone());
        t.set_field_by_name("steps", Value::List(vec![Value::Message(step.clone())]));
        let wire = WireTrajectory::index(&s.names, t.encode_to_vec().into()).expect("index");
        let around = Around::new(&wire);
        let ctx = Ctx::new(s, 0, &around, families);
        super::super::project_step(&ctx, step).map(|p| p.rule)
    }

    fn refusal(r: R<RuleId>) -> Reject {
        r.expect_err("refused")
    }

    #[test]
    fn an_argument_the_declaration_does_not_name_is_refused_though_the_family_accepts_it() {
        let s = Schema::modeled().expect("schema");
        let a = wrapper(&s, &[("A", "\"a\"")], r#"{"A":"a"}"#);
        assert_eq!(dispatch(&s, &[ONLY_A], &a), Ok(RULE));
        let ab = wrapper(
            &s,
            &[("A", "\"a\""), ("B", "\"b\"")],
            r#"{"A":"a","B":"b"}"#,
        );
        let r = refusal(dispatch(&s, &[ONLY_A], &ab));
        assert_eq!(r.rule, Some(RULE));
        assert_eq!(r.kind, Reason::PayloadFreeArguments);
        assert!(r.detail.contains("unexpected argument B"), "{}", r.detail);
        // The same wrapper under a declaration naming both is accepted.
        assert_eq!(dispatch(&s, &[A_AND_B], &ab), Ok(RULE));
    }

    #[test]
    fn required_and_repeated_arguments_are_enforced_from_the_declaration() {
        let s = Schema::modeled().expect("schema");
        let a = wrapper(&s, &[("A", "\"a\"")], r#"{"A":"a"}"#);
        let r = refusal(dispatch(&s, &[A_AND_B], &a));
        assert_eq!((r.rule, r.kind), (Some(RULE), Reason::PayloadFreeArguments));
        assert!(r.detail.contains("missing argument B"), "{}", r.detail);
        let differs = wrapper(
            &s,
            &[("A", "\"a\""), ("B", "\"b\"")],
            r#"{"A":"a","B":"c"}"#,
        );
        let r = refusal(dispatch(&s, &[A_AND_B], &differs));
        assert_eq!(
            (r.rule, r.kind),
            (Some(RULE), Reason::ArgumentsRepeatToolCall)
        );
    }

    #[test]
    fn a_rule_that_declares_no_bound_accepts_no_argument() {
        let s = Schema::modeled().expect("schema");
        let none = wrapper(&s, &[], "{}");
        assert_eq!(dispatch(&s, &[NO_BOUND], &none), Ok(RULE));
        let a = wrapper(&s, &[("A", "\"a\"")], r#"{"A":"a"}"#);
        let r = refusal(dispatch(&s, &[NO_BOUND], &a));
        assert_eq!((r.rule, r.kind), (Some(RULE), Reason::UnqualifiedGeneric));
    }

    #[test]
    fn fields_resolve_by_dotted_path_and_map_key() {
        let s = Schema::modeled().expect("schema");
        let step = wrapper(&s, &[("A", "\"a\"")], "{}");
        let json = |p: &str| field_json(&step, p);
        assert_eq!(json("status"), None, "an enum is not compared");
        assert_eq!(
            json("metadata.tool_call.name"),
            Some(serde_json::Value::String(TOOL.into()))
        );
        assert_eq!(
            json("generic.args.A"),
            Some(serde_json::Value::String("\"a\"".into()))
        );
        assert_eq!(json("generic.args.B"), None);
        assert_eq!(json("generic.result"), None, "a message is no value");
        assert_eq!(json("metadata.tool_call.name.more"), None);
        assert_eq!(json("no_such_field"), None);
        assert_eq!(json("run_command.command_line"), None, "an unset message");
    }
}
