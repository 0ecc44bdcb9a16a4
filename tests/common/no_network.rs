//! The scan for network references in a generated HTML page, shared by the
//! HTML report tests (`#[path = "common/no_network.rs"] mod no_network;`).

/// Every place the file could name something outside itself: no `http://`,
/// `https://` or protocol-relative `//` reference, no `src=`, `href=` or
/// `url(` other than a fragment, no `@import` and no web font.
pub fn assert_no_network_reference(html: &str) {
    for bad in [
        "http://",
        "https://",
        "src=\"//",
        "href=\"//",
        "src='//",
        "href='//",
    ] {
        assert!(!html.contains(bad), "the page holds {bad:?}");
    }
    for attr in ["src=", "href=", "url("] {
        for (i, _) in html.match_indices(attr) {
            let rest = &html[i + attr.len()..];
            let value = rest.trim_start_matches(['"', '\'']);
            assert!(
                attr == "href=" && value.starts_with('#'),
                "a {attr} reference that is not a fragment: {}",
                &html[i..(i + 60).min(html.len())]
            );
        }
    }
    assert!(!html.contains("@import") && !html.contains("@font-face"));
}
