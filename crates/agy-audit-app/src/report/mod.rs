//! Stage 6b: reports over a manifest: `audit-qualify` rechecks and the
//! Markdown qualification report with its SVG chart, and `audit-diff`'s
//! comparison of two manifests.

pub mod diff;
pub mod escape;
pub mod format_audit;
pub mod html;
pub mod junit;
pub mod markdown;
pub mod qualify;
pub mod redacted;
pub mod svg;

pub use markdown::render_report;
pub use svg::verdict_chart;
