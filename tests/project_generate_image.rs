//! generate_image: failed calls over native image Steps, successful embedded
//! image Steps, and the GenerateImage Any.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::project::Reason;
use agy_audit::rules::RuleId;
use common::*;

const DONE: &str = "CORTEX_STEP_STATUS_DONE";
const ERROR: &str = "CORTEX_STEP_STATUS_ERROR";
const N: &str = "/generic/result/payload";
const ANY_URL: &str = "type.googleapis.com/exa.cortex.core.tools.GenerateImage";

fn image_args() -> Json {
    json!({"AspectRatio": "16:9", "ImageName": "sunset", "Prompt": "a sunset over the sea"})
}

fn media() -> Json {
    json!({"mimeType": "image/png", "uri": "file:///brain/images/sunset.png", "description": "sunset"})
}

fn failed_image() -> Json {
    let native = json!({"type": "CORTEX_STEP_TYPE_GENERATE_IMAGE", "status": ERROR,
        "metadata": {"toolCall": tool_call("generate_image", &image_args())},
        "error": {"shortError": "safety filter", "fullError": "image blocked by the safety filter"},
        "generateImage": {"prompt": "a sunset over the sea", "imageName": "sunset", "aspectRatio": "16:9", "modelName": "imagen"}});
    let mut w = wrapper_over("generate_image", ERROR, &image_args(), &native);
    w["error"] =
        json!({"shortError": "safety filter", "fullError": "generate_image: safety filter"});
    w
}

fn embedded_image() -> Json {
    let native = json!({"type": "CORTEX_STEP_TYPE_GENERATE_IMAGE", "status": DONE,
        "generateImage": {"prompt": "a sunset over the sea", "imageName": "sunset", "aspectRatio": "16:9", "generatedMedia": media()}});
    let mut w = wrapper_over("generate_image", DONE, &image_args(), &native);
    w["generic"]["result"]["media"] = json!([media()]);
    w
}

fn image_any() -> Json {
    image_any_with(&image_args())
}

/// The GenerateImage Any wrapper with `args` (in the step and in its
/// retained tool call).
fn image_any_with(args: &Json) -> Json {
    let payload = json!({"prompt": "a sunset over the sea", "imageName": "sunset", "aspectRatio": "16:9",
                         "modelName": "imagen-4", "imageUri": "file:///brain/images/sunset.png"});
    wrapper(
        "generate_image",
        DONE,
        args,
        Some(json!({"result": "Generated sunset",
        "payload": any_of(ANY_URL, &payload), "media": [media()]})),
    )
}

#[test]
fn failed_generate_image_presents_the_native_step() {
    let s = schema();
    let w = failed_image();
    let (got, rule, _) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::FailedGenerateImage);
    assert_eq!(
        got,
        normalized_step(&s, &without(w.pointer(N).expect("payload"), "/@type"))
    );
}

#[test]
fn failed_generate_image_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::FailedGenerateImage);
    let w = failed_image();
    assert_refuses(
        &s,
        &with(&w, &format!("{N}/error/shortError"), json!("quota")),
        Reason::OuterErrorShortError,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/error/userErrorMessage", json!("x")),
        Reason::OuterErrorText,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, &format!("{N}/status"), json!(DONE)),
        Reason::OuterErrorNativeStatus,
        rule,
    );
    // Arguments: exactly the three, repeated by the native Step.
    assert_refuses(
        &s,
        &without(&w, "/generic/args/AspectRatio"),
        Reason::FailedImage,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/generic/args/Seed", json!("1")),
        Reason::FailedImage,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, &format!("{N}/generateImage/imageName"), json!("other")),
        Reason::FailedImage,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/metadata/toolCall/name", json!("edit_image")),
        Reason::FailedImage,
        rule,
    );
    // No media on a failed image.
    assert_refuses(
        &s,
        &with(&w, &format!("{N}/generateImage/generatedMedia"), media()),
        Reason::FailedImage,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/generic/result/media", json!([media()])),
        Reason::FailedImage,
        rule,
    );
}

#[test]
fn successful_embedded_image_presents_the_native_step() {
    let s = schema();
    let w = embedded_image();
    let (got, rule, _) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::EmbeddedImageSuccess);
    assert_eq!(
        got,
        normalized_step(&s, &without(w.pointer(N).expect("payload"), "/@type"))
    );
}

#[test]
fn successful_embedded_image_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::EmbeddedImageSuccess);
    let w = embedded_image();
    let v = with(
        &with(&w, "/status", json!(ERROR)),
        &format!("{N}/status"),
        json!(ERROR),
    );
    assert_refuses(&s, &v, Reason::ImageStatus, rule);
    assert_refuses(
        &s,
        &with(
            &w,
            &format!("{N}/status"),
            json!("CORTEX_STEP_STATUS_RUNNING"),
        ),
        Reason::ImageStatus,
        rule,
    );
    assert_refuses(
        &s,
        &without(&w, "/generic/result/media"),
        Reason::ImageMedia,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/generic/result/media/1", media()),
        Reason::ImageMedia,
        rule,
    );
    assert_refuses(
        &s,
        &with(
            &w,
            "/generic/result/media/0/uri",
            json!("file:///other.png"),
        ),
        Reason::ImageMedia,
        rule,
    );
}

#[test]
fn generate_image_any_becomes_a_native_image_step() {
    let s = schema();
    let w = image_any();
    let (got, rule, p) = accept_one(&s, &w);
    assert_eq!(rule, RuleId::GenerateImageAny);
    let want = normalized_step(
        &s,
        &json!({"type": "CORTEX_STEP_TYPE_GENERATE_IMAGE", "status": DONE, "metadata": w["metadata"],
        "generateImage": {"prompt": "a sunset over the sea", "imageName": "sunset", "aspectRatio": "16:9",
                          "modelName": "imagen-4", "generatedMedia": media()}}),
    );
    assert_eq!(got, want);
    assert!(
        p.dropped()
            .iter()
            .any(|d| d == "steps[0].generic.result.result"),
        "{:?}",
        p.dropped()
    );
    assert!(
        !p.dropped()
            .iter()
            .any(|d| d.contains("payload") || d.contains("media")),
        "{:?}",
        p.dropped()
    );
}

#[test]
fn generate_image_any_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::GenerateImageAny);
    let w = image_any();
    // Missing or multiple media items.
    assert_refuses(
        &s,
        &without(&w, "/generic/result/media"),
        Reason::ImagePayloadMedia,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/generic/result/media/1", media()),
        Reason::ImagePayloadMedia,
        rule,
    );
    // The media URI must agree with the payload's image URI.
    assert_refuses(
        &s,
        &with(&w, "/generic/result/media/0/uri", json!("file:///x.png")),
        Reason::ImagePayloadUri,
        rule,
    );
    assert_refuses(
        &s,
        &without(&w, &format!("{N}/imageUri")),
        Reason::ImagePayloadUri,
        rule,
    );
    // Unqualified wrapper shapes.
    assert_refuses(
        &s,
        &with(&w, "/status", json!(ERROR)),
        Reason::ImagePayloadStep,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/error", json!({"shortError": "x"})),
        Reason::ImagePayloadStep,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/taskDetails", json!({"id": "t"})),
        Reason::ImagePayloadStep,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/generic/result/metadata", json!({"k": "v"})),
        Reason::ImagePayloadStep,
        rule,
    );
    assert_refuses(
        &s,
        &with(&w, "/metadata/toolCall/name", json!("draw")),
        Reason::ImagePayloadStep,
        rule,
    );
    // Other Any types fail closed.
    let v = with(
        &w,
        &format!("{N}/@type"),
        json!("type.googleapis.com/exa.cortex.core.tools.Schedule"),
    );
    let v = with(
        &v,
        N,
        any_of(
            "type.googleapis.com/exa.cortex.core.tools.TaskInfo",
            &json!({"taskId": "t1"}),
        ),
    );
    assert_refuses(&s, &v, Reason::ModernToolPayload, None);
}

/// "Arguments and wrapper/result fields are bounded separately for each
/// projection": the GenerateImage Any's arguments are exactly AspectRatio,
/// ImageName and Prompt, each the payload's, repeating the retained tool
/// call. The four near-miss kinds are each refused with their reason.
#[test]
fn generate_image_any_argument_near_misses_fail() {
    let s = schema();
    let rule = Some(RuleId::GenerateImageAny);
    let reason = Reason::ImagePayloadArgs;
    // An extra argument.
    let mut extra = image_args();
    extra["Seed"] = json!("7");
    assert_refuses(&s, &image_any_with(&extra), reason, rule);
    // A missing required one, and none at all.
    for drop in ["AspectRatio", "ImageName", "Prompt"] {
        let mut fewer = image_args();
        fewer.as_object_mut().unwrap().remove(drop);
        assert_refuses(&s, &image_any_with(&fewer), reason, rule);
    }
    assert_refuses(&s, &image_any_with(&json!({})), reason, rule);
    // One contradicting the payload (another value, or not a JSON string).
    for (arg, value) in [
        ("Prompt", json!("a sunrise over the hills")),
        ("ImageName", json!("sunrise")),
        ("AspectRatio", json!("1:1")),
        ("AspectRatio", json!(169)),
    ] {
        let mut other = image_args();
        other[arg] = value;
        assert_refuses(&s, &image_any_with(&other), reason, rule);
    }
    // One differing from the retained tool call, or no tool call arguments.
    let w = image_any();
    let mut call_args = image_args();
    call_args["Prompt"] = json!("a sunrise over the hills");
    let differs = with(
        &w,
        "/metadata/toolCall/argumentsJson",
        json!(call_args.to_string()),
    );
    assert_refuses(&s, &differs, reason, rule);
    let mut call_extra = image_args();
    call_extra["Seed"] = json!("7");
    let more = with(
        &w,
        "/metadata/toolCall/argumentsJson",
        json!(call_extra.to_string()),
    );
    assert_refuses(&s, &more, reason, rule);
    assert_refuses(
        &s,
        &without(&w, "/metadata/toolCall/argumentsJson"),
        reason,
        rule,
    );
    // The accepted shape still verifies with the tool call's keys reordered.
    let reordered = with(
        &w,
        "/metadata/toolCall/argumentsJson",
        json!(r#"{"Prompt":"a sunset over the sea","AspectRatio":"16:9","ImageName":"sunset"}"#),
    );
    assert_eq!(accept_one(&s, &reordered).1, RuleId::GenerateImageAny);
}
