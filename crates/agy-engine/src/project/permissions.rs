//! Approved permission records on run-command and view-file wrappers.

use super::args::ArgBound;
use super::doc::RuleDoc;
use super::family::{Args, Family, Hook};
use super::fields::{
    ensure, extra_field, flag, has, messages, reject, same, same_list, same_opt, set_fields,
    status, step_type, sub, text, trigger_name, Wrapper, DONE, R,
};
use super::native::{RUN_COMMAND, VIEW_FILE};
use super::reasons::Reason;
use crate::rules::RuleId;
use prost_reflect::DynamicMessage;

const REASONS: &[Reason] = &[
    Reason::PermissionOneCopy,
    Reason::PermissionCopiesDiffer,
    Reason::PermissionStatus,
    Reason::PermissionTool,
    Reason::PermissionGrant,
    Reason::PermissionRequest,
    Reason::PermissionTrigger,
    Reason::PermissionRejected,
    Reason::PermissionAnswer,
];

pub(crate) const DOCS: &[RuleDoc] = &[
    RuleDoc {
        rule: RuleId::PermissionRunCommand,
        accepts: "A DONE run_command wrapper over a DONE embedded RUN_COMMAND Step, both carrying equal permissions and completed_interactions: one grant {action: \"command\", allow: true, target: C, resource: {action: \"command\", target: C}} where C is the native command_line; one completed interaction whose request is only {resource: the grant's resource, trigger_source: {type: TYPE_FORCE_ASK_HOOK} (no detail)} and whose answer is {allow: true, persist_grants: {} (present, empty)} (the response carries nothing else: no trajectory_id, step_index or other field). Presented as the native Step with its copy; the wrapper's copy is dropped.",
        reasons: REASONS,
    },
    RuleDoc {
        rule: RuleId::PermissionViewFile,
        accepts: "A DONE view_file wrapper over a DONE embedded VIEW_FILE Step, both carrying equal permissions and completed_interactions: one grant {action: \"read_file\", allow: true, target: P, resource: {action: \"read_file\", target: P}} where P is the AbsolutePath argument (a JSON string); one completed interaction whose request is only {resource: the grant's resource, action_description: nonempty} (no trigger) and whose answer is {allow: true, persist_grants: {} (present, empty)} and nothing else in the response. Presented as the native Step with its copy.",
        reasons: REASONS,
    },
];

/// "A run-command or view-file step whose call asked for permission and was
/// approved stores the record on the wrapper and on the native Step:
/// permissions (the grant) and completed_interactions (the request and its
/// answer). The ordinary response presents the native Step's copy [...] and
/// drops the wrapper's. Both copies must be present and equal, both steps
/// DONE, and the record must be the shape observed in the agy 1.2.17 audit"
/// (and, for view-file, agy 1.2.16, agy-reader#axnr).
///
/// Bounds (see [`DOCS`]): "Any other field in the grant, request or answer,
/// a rejected request, another trigger, a record on one copy only, or a
/// wrapper record for any other tool or over any other native type fails."
/// Returns the rule that qualified the record.
pub(crate) fn check(w: &Wrapper, n: &DynamicMessage) -> R<RuleId> {
    let ntype = step_type(n);
    let (rule, tool, action) = match ntype.as_str() {
        RUN_COMMAND => (RuleId::PermissionRunCommand, "run_command", "command"),
        VIEW_FILE => (RuleId::PermissionViewFile, "view_file", "read_file"),
        _ => {
            return reject(
                Some(RuleId::PermissionRunCommand),
                Reason::PermissionTool,
                format!("record over {ntype}"),
            )
        }
    };
    ensure(w.tool == tool, rule, Reason::PermissionTool, || {
        format!("record on a {} call", w.tool)
    })?;
    ensure(
        !has(w.step, "requested_interaction") && !has(n, "requested_interaction"),
        rule,
        Reason::PermissionRequest,
        || "a pending requested_interaction".into(),
    )?;
    let wp = sub(w.step, "permissions");
    let np = sub(n, "permissions");
    let wc = messages(w.step, "completed_interactions");
    let nc = messages(n, "completed_interactions");
    ensure(
        wp.is_some() && np.is_some() && !wc.is_empty() && !nc.is_empty(),
        rule,
        Reason::PermissionOneCopy,
        || {
            format!(
                "wrapper: permissions {}, interactions {}; native: permissions {}, interactions {}",
                wp.is_some(),
                wc.len(),
                np.is_some(),
                nc.len()
            )
        },
    )?;
    ensure(
        same_opt(wp, np) && same_list(&wc, &nc),
        rule,
        Reason::PermissionCopiesDiffer,
        String::new,
    )?;
    let (ws, ns) = (status(w.step), status(n));
    ensure(
        ws == DONE && ns == DONE,
        rule,
        Reason::PermissionStatus,
        || format!("{ws} over {ns}"),
    )?;
    let target = if rule == RuleId::PermissionRunCommand {
        sub(n, "run_command")
            .map(|rc| text(rc, "command_line"))
            .unwrap_or_default()
    } else {
        match w.args.string("AbsolutePath") {
            Some(p) => p,
            None => {
                return reject(
                    Some(rule),
                    Reason::PermissionGrant,
                    "no AbsolutePath argument",
                )
            }
        }
    };
    let Some(np) = np else {
        return reject(Some(rule), Reason::PermissionOneCopy, "");
    };
    let grant = check_grant(rule, np, action, &target)?;
    ensure(nc.len() == 1, rule, Reason::PermissionRequest, || {
        format!("{} completed interactions", nc.len())
    })?;
    let ci = &nc[0];
    ensure(
        extra_field(ci, &["request", "response"]).is_none()
            && has(ci, "request")
            && has(ci, "response"),
        rule,
        Reason::PermissionRequest,
        || "interaction without exactly a request and a response".into(),
    )?;
    let request = sub(ci, "request").unwrap_or(ci);
    ensure(
        set_fields(request) == ["permission"],
        rule,
        Reason::PermissionRequest,
        || format!("request fields {:?}", set_fields(request)),
    )?;
    let perm = sub(request, "permission").unwrap_or(request);
    let trigger = trigger_name(perm);
    let expected_fields: &[&str] = if rule == RuleId::PermissionRunCommand {
        ensure(
            trigger.as_deref() == Some("TYPE_FORCE_ASK_HOOK"),
            rule,
            Reason::PermissionTrigger,
            || trigger.clone().unwrap_or_else(|| "no trigger".into()),
        )?;
        &["resource", "trigger_source"]
    } else {
        ensure(trigger.is_none(), rule, Reason::PermissionTrigger, || {
            trigger.clone().unwrap_or_default()
        })?;
        ensure(
            !text(perm, "action_description").is_empty(),
            rule,
            Reason::PermissionRequest,
            || "no action description".into(),
        )?;
        &["resource", "action_description"]
    };
    let pf = set_fields(perm);
    ensure(
        pf.len() == expected_fields.len()
            && expected_fields.iter().all(|f| pf.iter().any(|x| x == f)),
        rule,
        Reason::PermissionRequest,
        || format!("request fields {pf:?}"),
    )?;
    ensure(
        sub(perm, "resource").is_some_and(|r| same(r, &grant)),
        rule,
        Reason::PermissionRequest,
        || "request resource differs from the grant's".into(),
    )?;
    check_answer(rule, ci)?;
    Ok(rule)
}

/// The single allowing grant; returns its resource.
fn check_grant(
    rule: RuleId,
    perms: &DynamicMessage,
    action: &str,
    target: &str,
) -> R<DynamicMessage> {
    let grants = messages(perms, "permission_grants");
    ensure(
        set_fields(perms) == ["permission_grants"] && grants.len() == 1,
        rule,
        Reason::PermissionGrant,
        || format!("{} grants, fields {:?}", grants.len(), set_fields(perms)),
    )?;
    let g = &grants[0];
    ensure(
        set_fields(g) == ["action", "allow", "resource", "target"],
        rule,
        Reason::PermissionGrant,
        || format!("grant fields {:?}", set_fields(g)),
    )?;
    let resource = sub(g, "resource").unwrap_or(g);
    ensure(
        flag(g, "allow")
            && text(g, "action") == action
            && text(g, "target") == target
            && set_fields(resource) == ["action", "target"]
            && text(resource, "action") == action
            && text(resource, "target") == target,
        rule,
        Reason::PermissionGrant,
        || {
            format!(
                "grant {:?} on {:?} (resource {:?} on {:?}), expected an allowing {action:?} grant on {target:?}",
                text(g, "action"),
                text(g, "target"),
                text(resource, "action"),
                text(resource, "target")
            )
        },
    )?;
    Ok(resource.clone())
}

/// "answered with allow, with an empty persist_grants". "Any other field in
/// the grant, request or answer [...] fails": the response holds only the
/// permission answer (no trajectory_id, step_index or any other field, which
/// nothing would check), and the answer only `allow: true` and an empty,
/// present persist_grants.
fn check_answer(rule: RuleId, ci: &DynamicMessage) -> R<()> {
    let Some(resp) = sub(ci, "response") else {
        return reject(Some(rule), Reason::PermissionAnswer, "no answer");
    };
    if let Some(f) = extra_field(resp, &["permission"]) {
        return reject(
            Some(rule),
            Reason::PermissionAnswer,
            format!("response.{f}"),
        );
    }
    let Some(answer) = sub(resp, "permission") else {
        return reject(Some(rule), Reason::PermissionAnswer, "no permission answer");
    };
    ensure(
        has(answer, "allow") && flag(answer, "allow"),
        rule,
        Reason::PermissionRejected,
        || "the answer does not allow".into(),
    )?;
    let pg = sub(answer, "persist_grants");
    ensure(
        set_fields(answer) == ["allow", "persist_grants"]
            && pg.is_some_and(|p| set_fields(p).is_empty()),
        rule,
        Reason::PermissionAnswer,
        || format!("answer fields {:?}", set_fields(answer)),
    )
}

/// The family's argument bounds (the view-file record): AbsolutePath is
/// required; that the grant's target and resource target are that path is
/// the grant's own bound (`check_grant`), a check of the record rather than
/// of a stored field the argument repeats.
const ARGS: &[Args] = &[Args::of(
    RuleId::PermissionViewFile,
    "view_file",
    ArgBound::NONE
        .required(&["AbsolutePath"])
        .optional(&["StartLine", "EndLine"]),
    Reason::PermissionGrant,
)];

/// The family: permission records on embedded run-command and view-file
/// Steps, checked at the embedded family's records hook.
pub(crate) const FAMILY: Family = Family {
    file: "permissions.rs",
    docs: DOCS,
    claims: &[],
    hooks: &[Hook::EmbeddedRecords(check)],
    args: ARGS,
};
