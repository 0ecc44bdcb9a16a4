//! Every argument bound a registered family declares, held to its near-misses.
//!
//! The bounds come from the registry (`agy_audit::project::argument_bounds`),
//! never from this file: for each declared (rule, tool), an accepted step is
//! taken from the synthetic corpus (the ground truth, built in memory), and
//! the near-misses its bound names are built from it:
//!
//! 1. an extra argument (in the arguments and in the retained tool call);
//! 2. each required argument missing (from both);
//! 3. each argument bound to a stored field given another value (in both);
//! 4. when the bound requires the retained tool call, an argument that
//!    differs from it (changed in the arguments only).
//!
//! Each must refuse the trajectory at that step with a named reason. A bound
//! with no accepted sample in the corpus fails the test, and so does an
//! accepted wrapper carrying arguments under rules no bound covers, so a new
//! family cannot skip its bound.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

use agy_audit::project::{argument_bounds, project_message, Args};
use agy_audit::rules::RuleId;
use agy_audit::schema::Schema;
use agy_corpus::corpus::assemble::assemble;
use agy_corpus::corpus::content::build;
use agy_corpus::corpus::msg::Builder;
use agy_corpus::corpus::plan::{plan, PlanOptions};
use agy_corpus::ids::VerdictKind;
use prost_reflect::{DynamicMessage, MapKey, Value};
use std::collections::{BTreeMap, BTreeSet};

/// One accepted step of a corpus trajectory.
struct Sample {
    trajectory: DynamicMessage,
    index: usize,
    conversation: usize,
}

fn steps_mut(t: &mut DynamicMessage) -> &mut Vec<Value> {
    match t.get_field_by_name_mut("steps") {
        Some(Value::List(l)) => l,
        _ => panic!("a trajectory without steps"),
    }
}

fn message_mut<'a>(m: &'a mut DynamicMessage, field: &str) -> &'a mut DynamicMessage {
    match m.get_field_by_name_mut(field) {
        Some(Value::Message(x)) => x,
        _ => panic!("no message {field}"),
    }
}

fn step_of(t: &DynamicMessage, i: usize) -> DynamicMessage {
    let steps = t.get_field_by_name("steps").expect("steps");
    steps.as_list().expect("list")[i]
        .as_message()
        .expect("step")
        .clone()
}

/// The wrapper's `generic.args` (argument name to its JSON text).
fn args_of(step: &DynamicMessage) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Some(Value::Message(g)) = step.get_field_by_name("generic").as_deref() {
        if let Some(Value::Map(m)) = g.get_field_by_name("args").as_deref() {
            for (k, v) in m {
                if let (MapKey::String(k), Value::String(v)) = (k, v) {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
    }
    out
}

fn tool_of(step: &DynamicMessage) -> String {
    let Some(Value::Message(m)) = step.get_field_by_name("metadata").as_deref().cloned() else {
        return String::new();
    };
    let Some(Value::Message(tc)) = m.get_field_by_name("tool_call").as_deref().cloned() else {
        return String::new();
    };
    tc.get_field_by_name("name")
        .and_then(|n| n.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The type URL of the wrapper's result payload, if any.
fn payload_url(step: &DynamicMessage) -> String {
    let Some(Value::Message(g)) = step.get_field_by_name("generic").as_deref().cloned() else {
        return String::new();
    };
    let Some(Value::Message(r)) = g.get_field_by_name("result").as_deref().cloned() else {
        return String::new();
    };
    let Some(Value::Message(p)) = r.get_field_by_name("payload").as_deref().cloned() else {
        return String::new();
    };
    p.get_field_by_name("type_url")
        .and_then(|u| u.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Whether bound `a` names `tool`: its tool exactly, or, for a bound whose
/// tool ends in `_` (MCP tools, `mcp_<server>_<tool>`), as a prefix.
fn names_tool(a: &Args, tool: &str) -> bool {
    a.tool == tool || (a.tool.ends_with('_') && tool.starts_with(a.tool))
}

/// Rewrites step `i`'s arguments with `f` (name to JSON text), and, when
/// `tool_call`, its retained tool call's arguments the same way.
fn edit_args(
    t: &mut DynamicMessage,
    i: usize,
    tool_call: bool,
    f: &dyn Fn(&mut BTreeMap<String, String>),
) {
    let step = match &mut steps_mut(t)[i] {
        Value::Message(m) => m,
        _ => panic!("step"),
    };
    let mut args = args_of(step);
    f(&mut args);
    let map: std::collections::HashMap<MapKey, Value> = args
        .iter()
        .map(|(k, v)| (MapKey::String(k.clone()), Value::String(v.clone())))
        .collect();
    message_mut(step, "generic").set_field_by_name("args", Value::Map(map));
    if tool_call {
        let tc = message_mut(message_mut(step, "metadata"), "tool_call");
        let text = tc
            .get_field_by_name("arguments_json")
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let mut json: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&text).unwrap_or_default();
        let mut as_text: BTreeMap<String, String> = json
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect();
        f(&mut as_text);
        json = as_text
            .into_iter()
            .map(|(k, v)| {
                let value = serde_json::from_str(&v).unwrap_or(serde_json::Value::String(v));
                (k, value)
            })
            .collect();
        tc.set_field_by_name(
            "arguments_json",
            Value::String(serde_json::Value::Object(json).to_string()),
        );
    }
}

/// Another value of the same JSON kind.
fn other_value(json_text: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(json_text) {
        Ok(serde_json::Value::String(s)) => {
            serde_json::Value::String(format!("{s}-near-miss")).to_string()
        }
        Ok(serde_json::Value::Bool(b)) => (!b).to_string(),
        Ok(serde_json::Value::Number(n)) => match n.as_u64() {
            Some(u) => (u + 1).to_string(),
            None => "7".to_string(),
        },
        _ => "\"near-miss\"".to_string(),
    }
}

/// An accepted sample per (rule, tool).
type Samples = BTreeMap<(RuleId, String), Sample>;
/// The (rules, tool) of every accepted wrapper that carries arguments.
type Shapes = BTreeSet<(Vec<RuleId>, String)>;

/// The corpus's accepted steps, by (rule, tool), and the shapes of those
/// with arguments.
fn samples(schema: &Schema) -> (Samples, Shapes) {
    let p = plan(&PlanOptions::default());
    let b = Builder::new(agy_corpus::schema::Schema::modeled().expect("corpus schema"));
    let mut out: BTreeMap<(RuleId, String), Sample> = BTreeMap::new();
    let mut shapes: BTreeSet<(Vec<RuleId>, String)> = BTreeSet::new();
    for (n, cp) in p.conversations.iter().enumerate() {
        if !matches!(
            cp.expected().0,
            VerdictKind::Verified | VerdictKind::VerifiedSourceOnly
        ) {
            continue;
        }
        let asm = assemble(&b, cp, build(cp, p.seed)).expect("assemble");
        let Ok(t) =
            DynamicMessage::decode(schema.names.trajectory.clone(), asm.trajectory.as_slice())
        else {
            continue;
        };
        let Ok(projection) = project_message(schema, &t) else {
            continue;
        };
        for (i, rule) in projection.step_rules.iter().enumerate() {
            let step = step_of(&t, i);
            if *rule == RuleId::Passthrough {
                continue;
            }
            let has_args = !args_of(&step).is_empty();
            let tool = tool_of(&step);
            let mut rules = vec![*rule];
            // The embedded allow-list bounds every route over an embedded
            // native Step (outer errors and images included).
            if payload_url(&step) == "type.googleapis.com/gemini_coder.Step" {
                rules.push(RuleId::EmbeddedNativeStep);
            }
            rules.extend(
                projection
                    .extra_rules
                    .iter()
                    .filter(|(j, _)| *j == i)
                    .map(|(_, r)| *r),
            );
            for r in &rules {
                out.entry((*r, tool.clone())).or_insert_with(|| Sample {
                    trajectory: t.clone(),
                    index: i,
                    conversation: n,
                });
            }
            rules.sort();
            rules.dedup();
            if has_args {
                shapes.insert((rules, tool));
            }
        }
    }
    (out, shapes)
}

/// Whether `t` is refused at step `i`; the refusal's words otherwise.
fn refused_at(schema: &Schema, t: &DynamicMessage, i: usize) -> Result<String, String> {
    match project_message(schema, t) {
        Err(r) if r.step == i => Ok(format!("{:?}", r.kind)),
        Err(r) => Err(format!("refused at another step: {r}")),
        Ok(p) => Err(format!("accepted under {:?}", p.step_rules.get(i))),
    }
}

#[test]
fn every_declared_argument_bound_refuses_its_near_misses() {
    let schema = Schema::modeled().expect("modeled schema");
    let bounds: Vec<Args> = argument_bounds();
    assert!(bounds.len() >= 30, "{} bounds", bounds.len());
    let (samples, shapes) = samples(&schema);

    // Every accepted wrapper with arguments is under some declared bound.
    let uncovered: Vec<_> = shapes
        .iter()
        .filter(|(rules, tool)| {
            !bounds
                .iter()
                .any(|a| rules.contains(&a.rule) && names_tool(a, tool))
        })
        .collect();
    assert!(
        uncovered.is_empty(),
        "accepted arguments no family bounds: {uncovered:?}"
    );

    let mut failures = Vec::new();
    let mut built = 0usize;
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for a in &bounds {
        let Some(s) = samples
            .iter()
            .find(|((r, tool), _)| *r == a.rule && names_tool(a, tool))
            .map(|(_, s)| s)
        else {
            failures.push(format!(
                "{:?} {}: no accepted sample in the corpus",
                a.rule, a.tool
            ));
            continue;
        };
        let args = args_of(&step_of(&s.trajectory, s.index));
        let mut misses: Vec<(String, DynamicMessage)> = Vec::new();
        // 1. an extra argument
        let mut t = s.trajectory.clone();
        edit_args(&mut t, s.index, true, &|m| {
            m.insert("NearMissExtra".into(), "\"x\"".into());
        });
        misses.push(("extra".into(), t));
        // 2. each required argument missing
        let mut required: Vec<String> = a
            .bound
            .required_names()
            .iter()
            .map(|s| s.to_string())
            .collect();
        if a.bound.members_of.is_some() {
            required.extend(args.keys().take(1).cloned());
        }
        for r in &required {
            let mut t = s.trajectory.clone();
            let r2 = r.clone();
            edit_args(&mut t, s.index, true, &move |m| {
                m.remove(&r2);
            });
            misses.push((format!("missing {r}"), t));
        }
        // 3. each argument bound to a stored field, contradicting it
        let mut bound_to_field: Vec<String> = a
            .bound
            .equal
            .iter()
            .chain(a.bound.equal_if_present.iter())
            .map(|(arg, _)| arg.to_string())
            .filter(|arg| args.contains_key(arg))
            .collect();
        if a.bound.members_of.is_some() {
            bound_to_field.extend(args.keys().take(1).cloned());
        }
        for arg in &bound_to_field {
            let mut t = s.trajectory.clone();
            let value = other_value(&args[arg]);
            let (arg2, value2) = (arg.clone(), value.clone());
            edit_args(&mut t, s.index, true, &move |m| {
                m.insert(arg2.clone(), value2.clone());
            });
            misses.push((format!("{arg} contradicting its field"), t));
        }
        // 4. differing from the retained tool call
        if a.bound.repeat_tool_call {
            if let Some((arg, v)) = args.iter().next() {
                let mut t = s.trajectory.clone();
                let (arg2, value2) = (arg.clone(), other_value(v));
                edit_args(&mut t, s.index, false, &move |m| {
                    m.insert(arg2.clone(), value2.clone());
                });
                misses.push((format!("{arg} differing from the tool call"), t));
            }
        }
        for (what, t) in &misses {
            built += 1;
            let kind = if what.starts_with("extra") {
                "extra"
            } else if what.starts_with("missing") {
                "missing"
            } else if what.contains("contradicting") {
                "contradicting"
            } else {
                "differing from the tool call"
            }
            .to_string();
            *kinds.entry(kind).or_default() += 1;
            if let Err(e) = refused_at(&schema, t, s.index) {
                failures.push(format!(
                    "{:?} {} (conversation {}, step {}): {what}: {e}",
                    a.rule, a.tool, s.conversation, s.index
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {built} near-misses:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        built > bounds.len(),
        "{built} near-misses for {} bounds",
        bounds.len()
    );
    eprintln!(
        "{built} near-misses over {} bounds: {kinds:?}",
        bounds.len()
    );
}
