//! generate_image: the failed call over a native image Step, successful
//! embedded image Steps, and the `exa.cortex.core.tools.GenerateImage` Any.

use super::args::ArgBound;
use super::checks::outer_error_matches;
use super::doc::RuleDoc;
use super::family::{Args, Claim, Ctx, Family, Hook, Presented};
use super::fields::{
    ensure, extra_field, messages, new_sub, reject, same, set, set_enum, sub, text, Wrapper, DONE,
    R,
};
use super::native::GENERATE_IMAGE;
use super::reasons::Reason;
use crate::rules::RuleId;
use bytes::Bytes;
use prost_reflect::{DynamicMessage, ReflectMessage, Value};

/// The GenerateImage payload's type URL.
pub(crate) const GENERATE_IMAGE_URL: &str =
    "type.googleapis.com/exa.cortex.core.tools.GenerateImage";
const GENERATE_IMAGE_MESSAGE: &str = "exa.cortex.core.tools.GenerateImage";
const IMAGE_TYPE: &str = "CORTEX_STEP_TYPE_GENERATE_IMAGE";
/// The qualified GenerateImage payload fields.
const PAYLOAD_FIELDS: &[&str] = &[
    "prompt",
    "image_name",
    "aspect_ratio",
    "model_name",
    "image_uri",
];
/// The generate_image arguments and the GenerateImage payload fields that
/// repeat them.
const IMAGE_ARGS: &[(&str, &str)] = &[
    ("AspectRatio", "aspect_ratio"),
    ("ImageName", "image_name"),
    ("Prompt", "prompt"),
];
/// The same arguments and the native image Step's fields that repeat them.
const NATIVE_IMAGE_ARGS: &[(&str, &str)] = &[
    ("AspectRatio", "generate_image.aspect_ratio"),
    ("ImageName", "generate_image.image_name"),
    ("Prompt", "generate_image.prompt"),
];

/// A failed call's arguments: exactly the three, each the native field's.
const FAILED_ARGS: ArgBound = ArgBound::NONE.equal(NATIVE_IMAGE_ARGS);

/// The GenerateImage Any's arguments: exactly the three, each the payload's
/// field, repeating the retained tool call. The specification bounds every
/// projection's arguments but names none for this one; this is the failed
/// call's set (its "prompt, image name and aspect ratio arguments"), which
/// the payload repeats, plus the tool call (stricter where silent).
const ANY_ARGS: ArgBound = ArgBound::NONE.equal(IMAGE_ARGS).repeating();

pub(crate) const DOCS: &[RuleDoc] = &[
    RuleDoc {
        rule: RuleId::FailedGenerateImage,
        accepts: "An ERROR generate_image wrapper with an outer error of only short and full text over an embedded ERROR GENERATE_IMAGE Step (not a GenerateImage Any) with the same nonempty short error, exactly the arguments AspectRatio, ImageName and Prompt (JSON strings) equal to the native aspect_ratio, image_name and prompt, no generated media and no wrapper media. Presented as the native Step with its inner error.",
        reasons: &[
            Reason::FailedImage,
            Reason::OuterErrorNativeStatus,
            Reason::OuterErrorShortError,
            Reason::OuterErrorText,
        ],
    },
    RuleDoc {
        rule: RuleId::EmbeddedImageSuccess,
        accepts: "A DONE wrapper over an embedded DONE GENERATE_IMAGE Step, without an outer error, whose result carries exactly one media item equal to the native generate_image.generated_media. Presented as the native Step.",
        reasons: &[Reason::ImageStatus, Reason::ImageMedia],
    },
    RuleDoc {
        rule: RuleId::GenerateImageAny,
        accepts: "A DONE generate_image wrapper without an error, task details or records, with exactly the arguments AspectRatio, ImageName and Prompt (JSON strings equal to the payload's aspect_ratio, image_name and prompt) repeating the retained tool call, whose result payload is an Any `type.googleapis.com/exa.cortex.core.tools.GenerateImage` setting only prompt, image_name, aspect_ratio, model_name and a nonempty image_uri, and whose result (only result text, payload, media, full_output_uri) carries exactly one media item whose uri equals image_uri. Presented as a GENERATE_IMAGE step with the wrapper's status and metadata and generate_image {prompt, image_name, aspect_ratio, model_name, generated_media: the media item}.",
        reasons: &[
            Reason::ImagePayloadField,
            Reason::ImagePayloadMedia,
            Reason::ImagePayloadUri,
            Reason::ImagePayloadStep,
            Reason::ImagePayloadArgs,
        ],
    },
];

/// "A failed generate_image call embeds a native image Step instead of a
/// GenerateImage Any and is qualified the same way [as the outer-error
/// rule], with its prompt, image name and aspect ratio arguments."
///
/// Bounds: the outer-error rule's (ERROR over ERROR, same short error, only
/// short and full text); exactly AspectRatio, ImageName and Prompt, each a
/// JSON string equal to the native field; a failed image carries no
/// generated media and the wrapper no media.
pub(crate) fn check_failed(w: &Wrapper, n: &DynamicMessage) -> R<()> {
    let rule = RuleId::FailedGenerateImage;
    outer_error_matches(rule, w, n)?;
    let gi = sub(n, "generate_image").unwrap_or(n);
    ensure(
        w.tool == "generate_image",
        rule,
        Reason::FailedImage,
        || format!("tool {}", w.tool),
    )?;
    let media = w
        .result
        .as_ref()
        .map(|r| messages(r, "media").len())
        .unwrap_or(0);
    ensure(
        sub(gi, "generated_media").is_none() && media == 0,
        rule,
        Reason::FailedImage,
        || "media on a failed image".into(),
    )
}

/// "Successful embedded image Steps use a separate mapping that requires
/// both statuses to be DONE and the wrapper's single media item to match the
/// native generated media."
pub(crate) fn check_success(w: &Wrapper, n: &DynamicMessage) -> R<()> {
    let rule = RuleId::EmbeddedImageSuccess;
    let ns = super::fields::status(n);
    ensure(
        w.status == DONE && ns == DONE,
        rule,
        Reason::ImageStatus,
        || format!("{} over {ns}", w.status),
    )?;
    let media = w
        .result
        .as_ref()
        .map(|r| messages(r, "media"))
        .unwrap_or_default();
    let native = sub(n, "generate_image").and_then(|gi| sub(gi, "generated_media"));
    ensure(
        media.len() == 1 && native.is_some_and(|m| same(m, &media[0])),
        rule,
        Reason::ImageMedia,
        || format!("{} wrapper media items", media.len()),
    )
}

/// "The generate_image tool's exa.cortex.core.tools.GenerateImage Any becomes
/// a native image step. It preserves outer metadata and maps prompt, image
/// name, aspect ratio, model name, and the single returned media item. The
/// media URI must agree with the payload's image URI. Unqualified payload
/// fields, missing or multiple media items, and other Any types fail closed."
///
/// Bounds: the call is generate_image, DONE, with no error, task details or
/// records; its arguments are exactly AspectRatio, ImageName and Prompt,
/// each the JSON string of the payload's aspect_ratio, image_name and
/// prompt, repeating the retained tool call ([`ANY_ARGS`]); the result holds
/// only text, the payload, media and an output URI (the arguments, result
/// text and output URI are dropped); image_uri is nonempty.
pub(crate) fn project_any(ctx: &Ctx<'_>, w: &Wrapper, bytes: &Bytes) -> R<Presented> {
    let rule = RuleId::GenerateImageAny;
    let Some(md) = ctx.schema.pool.get_message_by_name(GENERATE_IMAGE_MESSAGE) else {
        return reject(None, Reason::UnsupportedAnyType, GENERATE_IMAGE_URL);
    };
    let payload = DynamicMessage::decode(md, bytes.clone())
        .or_else(|e| reject(Some(rule), Reason::ImagePayloadField, e.to_string()))?;
    if let Some(f) = extra_field(&payload, PAYLOAD_FIELDS) {
        return reject(Some(rule), Reason::ImagePayloadField, f);
    }
    let step_ok = w.tool == "generate_image"
        && w.status == DONE
        && w.extra_step_field(&["type", "status", "metadata", "generic"])
            .is_none()
        && w.extra_generic_field(&["args", "result"]).is_none()
        && w.extra_result_field(&["result", "payload", "media", "full_output_uri"])
            .is_none();
    ensure(step_ok, rule, Reason::ImagePayloadStep, || {
        format!("{} {}", w.tool, w.status)
    })?;
    let media = w
        .result
        .as_ref()
        .map(|r| messages(r, "media"))
        .unwrap_or_default();
    ensure(media.len() == 1, rule, Reason::ImagePayloadMedia, || {
        format!("{} media items", media.len())
    })?;
    let uri = text(&payload, "image_uri");
    ensure(
        !uri.is_empty() && text(&media[0], "uri") == uri,
        rule,
        Reason::ImagePayloadUri,
        || format!("media {:?}, payload {uri:?}", text(&media[0], "uri")),
    )?;

    let mut step = DynamicMessage::new(w.step.descriptor());
    set_enum(&mut step, "type", IMAGE_TYPE);
    set_enum(&mut step, "status", &w.status);
    if let Some(m) = w.metadata() {
        set(&mut step, "metadata", Value::Message(m.clone()));
    }
    let Some(mut gi) = new_sub(&step, "generate_image") else {
        return reject(
            Some(rule),
            Reason::ImagePayloadStep,
            "no Step.generate_image",
        );
    };
    for f in ["prompt", "image_name", "aspect_ratio", "model_name"] {
        set(&mut gi, f, Value::String(text(&payload, f)));
    }
    set(&mut gi, "generated_media", Value::Message(media[0].clone()));
    set(&mut step, "generate_image", Value::Message(gi));
    Ok(Presented {
        step: Some(step),
        rule,
        extra: Vec::new(),
        carried: vec!["generic.result.payload", "generic.result.media"],
    })
}

/// The family: failed and successful embedded image Steps, and the
/// GenerateImage Any.
pub(crate) const FAMILY: Family = Family {
    file: "generate_image.rs",
    docs: DOCS,
    claims: &[Claim::Payload {
        url: GENERATE_IMAGE_URL,
        project: project_any,
        extra: &[],
    }],
    hooks: &[
        Hook::OuterError {
            native_type: GENERATE_IMAGE,
            native_status: None,
            presented_status: None,
            rule: RuleId::FailedGenerateImage,
            check: check_failed,
        },
        Hook::EmbeddedSuccess {
            native_type: GENERATE_IMAGE,
            rule: RuleId::EmbeddedImageSuccess,
            check: check_success,
        },
    ],
    args: &[
        Args::of(
            RuleId::FailedGenerateImage,
            "generate_image",
            FAILED_ARGS,
            Reason::FailedImage,
        ),
        Args::of(
            RuleId::GenerateImageAny,
            "generate_image",
            ANY_ARGS,
            Reason::ImagePayloadArgs,
        ),
    ],
};
