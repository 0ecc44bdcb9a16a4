//! The environment variables and file names agy-audit reads or writes,
//! named once, so that the library's error messages can name them without
//! importing the stage that uses them. A leaf: constants only.

/// Pins the CLI store root (instead of `~/.gemini/antigravity-cli`).
pub const ROOT_ENV: &str = "ANTIGRAVITY_CLI_ROOT";
/// The daemon's base URL (instead of discovery from `cli.log`).
pub const DAEMON_URL_ENV: &str = "ANTIGRAVITY_DAEMON_URL";
/// A sweep's manifest, in its output folder.
pub const MANIFEST_FILE: &str = "manifest.json";
/// The CLI store root under the home folder.
pub const CLI_SUBPATH: &str = ".gemini/antigravity-cli";
/// The IDE store root under the home folder.
pub const IDE_SUBPATH: &str = ".gemini/antigravity";

/// Default cap on one daemon response body (`--max-response-bytes`); the
/// sidecar cap ([`crate::attest::cache::sidecar_cap`]) is derived from it.
pub const DEFAULT_MAX_BODY: u64 = 256 << 20;
