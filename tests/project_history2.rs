//! The history2 registry rule: is_skill_file of failed legacy reads.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::project::Reason;
use agy_audit::rules::RuleId;
use common::*;

const SKILL: &str = "/work/.agents/skills/deploy/SKILL.md";
/// The read's step index.
const AT: u64 = 2;

fn read(exec: Option<&str>) -> Json {
    let args = json!({"AbsolutePath": SKILL});
    let mut w = wrapper("view_file", "CORTEX_STEP_STATUS_ERROR", &args, None);
    w["metadata"]["toolSource"] = json!("TOOL_SOURCE_BUILTIN");
    if let Some(e) = exec {
        w["metadata"]["executionId"] = json!(e);
    }
    w["error"] = json!({"shortError": "path is a device, pipe, or socket, not a standard file"});
    w
}

fn reg(path: &str, kind: &str, enabled: bool, step: u64) -> Json {
    json!({"path": path, "kind": kind, "enabled": enabled,
           "sourceStep": {"trajectoryId": TRAJ, "cascadeId": CASCADE, "stepIndex": step}})
}

fn skill() -> Json {
    reg(SKILL, "KIND_SKILL", true, AT)
}

fn exec(id: &str, last: u64, regs: Vec<Json>) -> Json {
    json!({"executionId": id, "lastStepIdx": last, "customizationRegistry": {"registrations": regs}})
}

/// Projects two ordinary steps, then the read, under `execs`; the read's flag or refusal.
fn flag(read: &Json, execs: &[Json]) -> Result<bool, agy_audit::project::ProjectionRefusal> {
    let s = schema();
    let basic = Conv::basic(&s);
    let mut conv = basic.clone();
    conv.steps = vec![
        basic.steps[0].clone(),
        basic.steps[1].clone(),
        step_v(&s, read),
    ];
    conv.execs = execs
        .iter()
        .map(|e| msg(&s, "exa.cortex_pb.ExecutorMetadata", &e.to_string()))
        .collect();
    let p = project_of(&s, &trajectory_of(&s, &conv))?;
    assert_eq!(p.step_rules[2], RuleId::ResultlessBuiltinViewFile);
    assert!(p.extra_rules.contains(&(2, RuleId::History2SkillRegistry)));
    let v = presented(&p, 2);
    Ok(v["viewFile"].get("isSkillFile") == Some(&json!(true)))
}

fn marked(read: &Json, execs: &[Json]) -> bool {
    flag(read, execs).unwrap_or_else(|r| panic!("refused: {r}"))
}

fn refused(read: &Json, execs: &[Json], kind: Reason) {
    let r = flag(read, execs).expect_err("refuses");
    assert_eq!(r.kind, kind, "{r}");
    assert_eq!(r.rule, Some(RuleId::History2SkillRegistry));
    assert_eq!(r.step, AT as usize);
}

#[test]
fn a_current_executor_registration_marks_the_read() {
    let r = read(Some("exec-1"));
    assert!(marked(&r, &[exec("exec-1", 3, vec![skill()])]));
    // Registered by the current executor: its source step is not consulted.
    assert!(marked(
        &r,
        &[exec("exec-1", 3, vec![reg(SKILL, "KIND_SKILL", true, 9)])]
    ));
}

#[test]
fn a_qualified_earlier_executor_registration_marks_the_read() {
    let r = read(Some("exec-1"));
    assert!(marked(
        &r,
        &[exec("exec-0", 1, vec![skill()]), exec("exec-1", 2, vec![])]
    ));
}

#[test]
fn missing_binding_or_registration_leaves_the_flag_unset() {
    let execs = [exec("exec-1", 3, vec![skill()])];
    assert!(!marked(&read(None), &execs));
    assert!(!marked(&read(Some("exec-9")), &execs));
    let r = read(Some("exec-1"));
    // No matching registration; the SKILL.md filename alone decides nothing.
    assert!(!marked(
        &r,
        &[exec(
            "exec-1",
            3,
            vec![reg("/work/other/SKILL.md", "KIND_SKILL", true, AT)]
        )]
    ));
    assert!(!marked(&r, &[exec("exec-1", 3, vec![])]));
    // Only disabled or non-skill registrations, repeated ones included.
    let disabled = reg(SKILL, "KIND_SKILL", false, AT);
    let rule = reg(SKILL, "KIND_RULE", true, AT);
    assert!(!marked(
        &r,
        &[exec(
            "exec-1",
            3,
            vec![disabled.clone(), disabled, rule.clone(), rule]
        )]
    ));
}

#[test]
fn unusable_earlier_registrations_leave_the_flag_unset() {
    let r = read(Some("exec-1"));
    // Another source step, trajectory or cascade.
    for bad in [
        reg(SKILL, "KIND_SKILL", true, AT + 1),
        with(&skill(), "/sourceStep/trajectoryId", json!("other")),
        with(&skill(), "/sourceStep/cascadeId", json!("other")),
    ] {
        assert!(!marked(
            &r,
            &[exec("exec-0", 1, vec![bad]), exec("exec-1", 3, vec![])]
        ));
    }
    // An earlier executor that does not end before the step.
    assert!(!marked(
        &r,
        &[exec("exec-0", 2, vec![skill()]), exec("exec-1", 3, vec![])]
    ));
    // A current executor that ends before the step.
    assert!(!marked(
        &r,
        &[exec("exec-0", 0, vec![skill()]), exec("exec-1", 1, vec![])]
    ));
    // Registrations after the current executor cannot mark a read.
    assert!(!marked(
        &r,
        &[exec("exec-1", 3, vec![]), exec("exec-2", 5, vec![skill()])]
    ));
}

#[test]
fn a_non_unique_binding_refuses_only_a_markable_read() {
    let r = read(Some("exec-1"));
    refused(
        &r,
        &[exec("exec-1", 1, vec![]), exec("exec-1", 3, vec![skill()])],
        Reason::SkillBinding,
    );
    // Duplicate IDs do not prevent an unmarked read.
    assert!(!marked(
        &r,
        &[exec("exec-1", 1, vec![]), exec("exec-1", 3, vec![])]
    ));
}

#[test]
fn the_registration_must_be_the_only_exact_path_match() {
    let r = read(Some("exec-1"));
    let disabled = reg(SKILL, "KIND_SKILL", false, AT);
    refused(
        &r,
        &[exec("exec-1", 3, vec![skill(), disabled.clone()])],
        Reason::SkillNotOnlyMatch,
    );
    refused(
        &r,
        &[
            exec("exec-0", 1, vec![disabled]),
            exec("exec-1", 3, vec![skill()]),
        ],
        Reason::SkillNotOnlyMatch,
    );
    refused(
        &r,
        &[
            exec("exec-0", 1, vec![skill()]),
            exec("exec-1", 3, vec![skill()]),
        ],
        Reason::SkillNotOnlyMatch,
    );
}

#[test]
fn an_earlier_registration_requires_unique_ids_and_ordering() {
    let r = read(Some("exec-1"));
    // Duplicate earlier IDs.
    refused(
        &r,
        &[
            exec("exec-0", 0, vec![]),
            exec("exec-0", 1, vec![skill()]),
            exec("exec-1", 3, vec![]),
        ],
        Reason::SkillExecutorOrder,
    );
    // An empty earlier ID.
    refused(
        &r,
        &[exec("", 1, vec![skill()]), exec("exec-1", 3, vec![])],
        Reason::SkillExecutorOrder,
    );
    // End indices that do not strictly increase.
    refused(
        &r,
        &[
            exec("exec-a", 1, vec![skill()]),
            exec("exec-b", 1, vec![]),
            exec("exec-1", 3, vec![]),
        ],
        Reason::SkillExecutorOrder,
    );
    // Unrelated duplicates do not prevent a marker from the current executor.
    assert!(marked(
        &r,
        &[
            exec("exec-a", 0, vec![]),
            exec("exec-a", 1, vec![]),
            exec("exec-1", 3, vec![skill()])
        ]
    ));
}
