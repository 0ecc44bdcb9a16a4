//! Failed list_resources calls (history2).

use super::args::ArgBound;
use super::checks::outer_error_matches;
use super::doc::RuleDoc;
use super::family::{Args, Family, Hook};
use super::fields::{ensure, extra_field, has_any, sub, text, Wrapper, R};
use super::native::LIST_RESOURCES;
use super::reasons::Reason;
use crate::rules::RuleId;
use prost_reflect::DynamicMessage;

pub(crate) const DOCS: &[RuleDoc] = &[RuleDoc {
    rule: RuleId::FailedListResources,
    accepts: "An ERROR wrapper with an outer error of only short and full text over an embedded ERROR LIST_RESOURCES Step with the same nonempty short error; the ServerName argument (a JSON string) equals list_resources.server_name, all wrapper arguments equal the native metadata's tool call, the native body holds only server_name, the wrapper result only result text, the payload and full_output_uri; no task details, permission or interaction records on either Step. Presented as the native Step.",
    reasons: &[
        Reason::ListResourcesOutcome,
        Reason::ListResourcesArguments,
        Reason::ListResourcesShape,
        Reason::ListResourcesRecords,
        Reason::OuterErrorStatus,
        Reason::OuterErrorNativeStatus,
        Reason::OuterErrorShortError,
        Reason::OuterErrorText,
    ],
}];

/// "A failed list_resources call is qualified only as an ERROR wrapper over
/// an ERROR native LIST_RESOURCES Step with the same short error. The
/// ServerName argument must equal the native server_name, and all wrapper
/// arguments must equal the native metadata's tool call. The native resource
/// body may contain only that server name; the wrapper result may contain
/// only text, the native payload and an output URI."
///
/// Bounds: "Task details, permission records, interaction records and
/// successful list calls remain unqualified." The outer error follows the
/// outer-error rule (only short and full text).
pub(crate) fn check(w: &Wrapper, n: &DynamicMessage) -> R<()> {
    let rule = RuleId::FailedListResources;
    outer_error_matches(rule, w, n)?;
    let records = [
        "task_details",
        "permissions",
        "completed_interactions",
        "requested_interaction",
    ];
    ensure(
        !has_any(w.step, &records) && !has_any(n, &records),
        rule,
        Reason::ListResourcesRecords,
        String::new,
    )?;
    let server = sub(n, "list_resources")
        .map(|lr| text(lr, "server_name"))
        .unwrap_or_default();
    ensure(
        w.args.string("ServerName").as_deref() == Some(server.as_str())
            && w.args.repeat_tool_call(n),
        rule,
        Reason::ListResourcesArguments,
        || {
            format!(
                "ServerName {:?}, native {server:?}",
                w.args.raw("ServerName")
            )
        },
    )?;
    let body_extra = sub(n, "list_resources").and_then(|lr| extra_field(lr, &["server_name"]));
    ensure(
        body_extra.is_none(),
        rule,
        Reason::ListResourcesShape,
        || format!("list_resources.{}", body_extra.clone().unwrap_or_default()),
    )?;
    let result_extra = w.extra_result_field(&["result", "payload", "full_output_uri"]);
    ensure(
        result_extra.is_none(),
        rule,
        Reason::ListResourcesShape,
        || format!("result.{}", result_extra.clone().unwrap_or_default()),
    )
}

/// The family's argument bounds (ServerName is the native server_name; all arguments repeat the native tool call).
const ARGS: &[Args] = &[Args::of(
    RuleId::FailedListResources,
    "list_resources",
    ArgBound::NONE
        .equal(&[("ServerName", "list_resources.server_name")])
        .repeating(),
    Reason::ListResourcesArguments,
)];

/// The family: a failed list_resources call.
pub(crate) const FAMILY: Family = Family {
    file: "list_resources.rs",
    docs: DOCS,
    claims: &[],
    hooks: &[Hook::OuterError {
        native_type: LIST_RESOURCES,
        native_status: None,
        presented_status: None,
        rule: RuleId::FailedListResources,
        check,
    }],
    args: ARGS,
};
