//! Arguments shared by every decoding command.

use crate::schema::pin::{self, PinError, Use};
use crate::schema::Schema;
use crate::source::legacy::LegacyKey;
use crate::util::atomic::{check_collisions, preflight, Collision, Named};
use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Args)]
pub struct DecodeArgs {
    /// Decode with this FileDescriptorSet (raw or gzip), e.g. one extracted from
    /// your own agy build, instead of the embedded modeled schema.
    /// Commands that verify (audit-sweep, sync, audit-qualify) require it
    /// pinned: by --schema-sha256, or by the manifest `schema extract` or
    /// `schema bundle` wrote beside it (FILE.manifest.json). Inspection
    /// (export-offline, bench) loads an unpinned set, labelled `unpinned`.
    /// The word `installed` names the set `schema extract --installed`
    /// stored for the agy found now (its profile names that agy's release
    /// and binary); an error names that command when none is stored (a file
    /// called `installed`: ./installed).
    #[arg(long, env = "AGY_AUDIT_SCHEMA", value_name = "FILE")]
    pub schema: Option<PathBuf>,
    /// Pin --schema to this SHA-256 (64 hex digits, of the set after gunzip,
    /// as `schema info` prints it); a set with another digest is refused.
    #[arg(long, env = "AGY_AUDIT_SCHEMA_SHA256", value_name = "HEX")]
    pub schema_sha256: Option<String>,
    /// Key for legacy .pb sources: 32 raw bytes or 64 hex digits. Default: the
    /// fixed format key agy distributes. Another key only opens sources for
    /// offline inspection (e.g. export-offline --allow-unknown): unknown keys
    /// remain unsupported, so every source read under one is refused as
    /// unknown (legacy-unsupported-key) and never verified.
    #[arg(long, env = "AGY_AUDIT_LEGACY_KEY_FILE", value_name = "FILE")]
    pub legacy_key_file: Option<PathBuf>,
}

impl DecodeArgs {
    /// Loads for a command that verifies: a `--schema` must be pinned.
    pub fn load(&self) -> anyhow::Result<(Schema, LegacyKey)> {
        self.load_for(Use::Verify)
    }

    /// Loads for offline inspection: an unpinned `--schema` loads, labelled
    /// `unpinned` in the profile, with a note on standard error.
    pub fn load_inspect(&self) -> anyhow::Result<(Schema, LegacyKey)> {
        self.load_for(Use::Inspect)
    }

    fn load_for(&self, use_: Use) -> anyhow::Result<(Schema, LegacyKey)> {
        let set = super::schema_installed::resolve(self.schema.as_deref())?;
        let schema = match pin::load(set.as_deref(), self.schema_sha256.as_deref(), use_) {
            Ok(s) => s,
            Err(e @ (PinError::Unpinned { .. } | PinError::BadHex(_))) => {
                return Err(anyhow::Error::new(super::errors::Usage::Pin(e)))
            }
            Err(e) => return Err(anyhow::Error::new(e).context("loading the descriptor set")),
        };
        if let crate::schema::SchemaOrigin::File(p) = &schema.origin {
            crate::note!(
                "agy-audit: note: {} is not pinned (--schema-sha256 or {}): output is unverified inspection, profile label `unpinned`",
                p.display(),
                pin::manifest_path(p).display()
            );
        }
        let key = match &self.legacy_key_file {
            Some(p) => LegacyKey::from_file(p).context("loading the legacy key")?,
            None => LegacyKey::default(),
        };
        Ok((schema, key))
    }
}

/// `--root`: the one store root of a sweep.
#[derive(Debug, Clone, Args)]
pub struct RootArg {
    /// Store root: one per run, the manifest names it (default: the root
    /// $ANTIGRAVITY_CLI_ROOT pins; without either, a usage error names the
    /// default roots that exist, ~/.gemini/antigravity-cli (the CLI's) and
    /// ~/.gemini/antigravity (the IDE's), and asks for one). A --root that
    /// names no folder is a usage error.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

impl RootArg {
    /// The store root: `--root` (which must name a folder), else the
    /// default ([`crate::discover::default_root`]); a usage error when
    /// `--root` names nothing or there is no default (HOME unset).
    pub fn try_get(&self) -> anyhow::Result<PathBuf> {
        match &self.root {
            Some(r) => match crate::discover::check_root(r) {
                Ok(()) => Ok(r.clone()),
                Err(crate::Error::Root(source)) => Err(super::errors::Usage::Flag {
                    flag: "--root",
                    source,
                }
                .into()),
                Err(e) => Err(e.into()),
            },
            None => Ok(crate::discover::default_root()?),
        }
    }
}

/// `--root`, repeatable: the store roots a command that takes one
/// conversation may look in.
#[derive(Debug, Clone, Args)]
pub struct RootsArg {
    /// A store root (repeatable). A conversation id is looked up in the
    /// roots in order (the first root holding <id>.db or <id>.pb wins, the
    /// .db within a root); each root keeps its own daemon, CSRF token and
    /// sidecars. Without --root: the root $ANTIGRAVITY_CLI_ROOT pins, else
    /// each default root that exists, ~/.gemini/antigravity-cli (the CLI's)
    /// then ~/.gemini/antigravity (the IDE's); a missing default root is
    /// noted on stderr, not an error. A --root that names no folder is a
    /// usage error. A path argument names its own root (the folder holding
    /// its conversations/).
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
}

impl RootsArg {
    /// Where `source` is ([`crate::roots::locate`]), with the default roots
    /// that do not exist and a shadowed `.pb` said on stderr for `command`.
    pub fn locate(&self, source: &str, command: &str) -> anyhow::Result<crate::roots::Located> {
        let found = crate::roots::locate(source, &self.roots)?;
        for m in &found.missing {
            crate::note!(
                "{command}: default root {} does not exist (skipped)",
                m.display()
            );
        }
        if let Some(pb) = &found.shadowed {
            crate::note!(
                "{command}: {} is shadowed by {} (SQLite wins); using the .db",
                pb.display(),
                found.path.display()
            );
        }
        Ok(found)
    }
}

// Checked numeric flag values. Every numeric flag parses through one of
// these, so a negative number, a fraction where a whole number is due, nan,
// inf or a value out of range is clap's usage error (exit 2) naming the flag,
// before anything runs. Whole-number flags set `allow_negative_numbers`, real
// ones `allow_hyphen_values` (for `-inf`), so `-1` reaches the parser instead
// of reading as an unknown flag.

/// `a whole number from 0 to 1000`, `a whole number, 0 or more`.
fn whole_range(min: u64, max: u64) -> String {
    match (min, max) {
        (min, u64::MAX) => format!("a whole number, {min} or more"),
        (min, max) => format!("a whole number from {min} to {max}"),
    }
}

/// A whole number from `min` to `max`, as a clap value parser.
pub fn whole<T>(
    min: u64,
    max: u64,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
{
    move |s: &str| {
        let t = s.trim();
        let range = whole_range(min, max);
        let digits = t.strip_prefix(|c: char| c == '-' || c == '+').unwrap_or(t);
        let all_digits = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
        if !all_digits {
            let negative = t.parse::<f64>().is_ok_and(|v| v < 0.0);
            return Err(if negative {
                format!("must be non-negative ({range}), got {t}")
            } else {
                format!("not a whole number (takes {range})")
            });
        }
        let zero = digits.bytes().all(|b| b == b'0');
        if t.starts_with('-') && !zero {
            return Err(format!("must be non-negative ({range}), got {t}"));
        }
        let out_of_range = || {
            if min == 0 {
                format!("must be at most {max}, got {digits}")
            } else {
                format!("must be between {min} and {max}, got {digits}")
            }
        };
        let n: u64 = digits.parse().map_err(|_| out_of_range())?;
        if n < min || n > max {
            return Err(out_of_range());
        }
        T::try_from(n).map_err(|_| out_of_range())
    }
}

/// A finite real number from `min` (excluded when `min_open`) to `max`, as
/// a clap value parser; `-0` reads as 0.
pub fn real(
    min: f64,
    min_open: bool,
    max: f64,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let t = s.trim();
        let range = if min_open {
            format!("greater than {min} and at most {max}")
        } else {
            format!("between {min} and {max}")
        };
        let v: f64 = t
            .parse()
            .map_err(|_| format!("not a number (takes a number {range})"))?;
        if !v.is_finite() {
            return Err(format!("must be a finite number {range}, got {t}"));
        }
        let v = v + 0.0;
        let below = if min_open { v <= min } else { v < min };
        if v < 0.0 && min >= 0.0 && !min_open {
            return Err(format!("must be non-negative: {range}, got {t}"));
        }
        if below || v > max {
            return Err(format!("must be {range}, got {t}"));
        }
        Ok(v)
    }
}

/// A fraction: a real number from 0 to `max`.
pub fn fraction(max: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    real(0.0, false, max)
}

/// A seed: any whole number from 0 to 2^64 - 1.
pub fn seed() -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    whole(0, u64::MAX)
}

/// The most milliseconds of latency a simulated daemon adds per answer in
/// `demo` and `bench` (their clients time out after 10 and 30 seconds, and
/// a request is answered after LoadTrajectory's delay and its own).
pub const MAX_LATENCY_MS: u64 = 1000;

impl DecodeArgs {
    /// The files these flags make a command read (the descriptor set, its
    /// pin manifest, the legacy key): never an output of the command.
    pub fn inputs(&self) -> Vec<PathBuf> {
        let mut v = Vec::new();
        if let Some(s) = &self.schema {
            v.push(s.clone());
            v.push(pin::manifest_path(s));
        }
        v.extend(self.legacy_key_file.clone());
        v
    }
}

impl DecodeArgs {
    /// [`Self::inputs`], each named by the flag that gives it.
    pub fn named_inputs(&self) -> Vec<Named> {
        let mut v = Vec::new();
        if let Some(s) = &self.schema {
            v.push(Named::new("--schema", s));
            v.push(Named::new(
                "the pin manifest of --schema",
                pin::manifest_path(s),
            ));
        }
        if let Some(k) = &self.legacy_key_file {
            v.push(Named::new("--legacy-key-file", k));
        }
        v
    }
}

/// The sources a manifest records under `root`, each with its `-wal`,
/// `-shm` and `-journal`: files a command that reads them never writes.
pub fn source_inputs(m: &crate::manifest::Manifest, root: &Path) -> Vec<Named> {
    let mut v = Vec::new();
    for s in &m.sessions {
        let p = s.source_path(root);
        for c in crate::source::sqlite::companions(&p) {
            v.push(Named::new(
                "a companion of a source the manifest records",
                c,
            ));
        }
        v.push(Named::new("a source the manifest records", p));
    }
    v
}

/// The shape listings a manifest records beside `file` (its
/// `shapes-ordinary.tsv` and `shapes-full.tsv`), named after `what`.
pub fn listing_inputs(what: &str, file: &Path, m: &crate::manifest::Manifest) -> Vec<Named> {
    let dir = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    m.shapes
        .iter()
        .flat_map(|sh| [&sh.ordinary.file, &sh.full.file])
        .map(|f| Named::new(format!("a shape listing of {what}"), dir.join(f)))
        .collect()
}

/// Refuses, before a command writes or prints anything, outputs that
/// cannot all be written ([`check_collisions`], every output the command
/// will write, derived ones included, against each other and against every
/// file it reads). Two outputs that are one file are a usage error (exit
/// 2) naming both and the path. An output that is one of the inputs stays
/// the error it is when `write_file` refuses it (exit 1, as for every
/// command's `protected` inputs), now said before anything is written or
/// printed and naming the argument that gave each file. Then each output
/// as `write_file` would find it (`preflight`: a symbolic link, an existing
/// file without `force`), so no refused output follows one written.
pub fn refuse_collisions(outputs: &[Named], inputs: &[Named], force: bool) -> anyhow::Result<()> {
    match check_collisions(outputs, inputs) {
        Ok(()) => {
            let paths: Vec<&Path> = outputs.iter().map(|o| o.path.as_path()).collect();
            Ok(preflight(&paths, force)?)
        }
        // The CLI's usage error (exit 2) in the collision's own words, as
        // `schema`'s commands say theirs.
        Err(c @ Collision::Outputs { .. }) => Err(super::errors::Usage::Text(c.to_string()).into()),
        Err(c @ Collision::Input { .. }) => Err(c.into()),
    }
}

/// `agy --version`'s first line when an `agy` executable is on PATH, else
/// nothing; given 5 seconds, then the child is killed and nothing recorded.
pub fn installed_agy_version() -> Option<String> {
    let path = std::env::var_os("PATH")?;
    let agy = std::env::split_paths(&path)
        .map(|d| d.join("agy"))
        .find(|p| p.is_file())?;
    let text = crate::installed::version_text(&agy).ok()?;
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(200).collect())
}

/// The most conversations fetched at once.
pub const MAX_CONCURRENCY: usize = 256;
/// The most decode threads.
pub const MAX_JOBS: usize = 256;

/// The most conversations a generated corpus holds.
pub const MAX_CONVERSATIONS: usize = 100_000;
/// `--conversations`: 1 to [`MAX_CONVERSATIONS`].
pub fn conversations_value(s: &str) -> Result<usize, String> {
    whole::<usize>(1, MAX_CONVERSATIONS as u64)(s)
}

/// `--shard i/n`: 1 <= i <= n.
pub fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| format!("`{s}`: takes i/n, e.g. 1/4"))?;
    let num = |x: &str| {
        x.trim()
            .parse::<usize>()
            .map_err(|_| format!("`{s}`: takes i/n with whole numbers, e.g. 1/4"))
    };
    let (i, n) = (num(i)?, num(n)?);
    if n == 0 || i == 0 || i > n {
        return Err(format!("`{s}`: need 1 <= i <= n"));
    }
    Ok((i, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_refuse_signs_fractions_and_range() {
        let p = whole::<u64>(1, 256);
        assert_eq!(p("8"), Ok(8));
        assert_eq!(p(" +8 "), Ok(8));
        assert!(p("-1").unwrap_err().contains("non-negative"));
        assert!(p("-1.5").unwrap_err().contains("non-negative"));
        assert!(p("1.5").unwrap_err().contains("not a whole number"));
        assert!(p("0").unwrap_err().contains("between 1 and 256"));
        assert!(p("99999999999999999999999")
            .unwrap_err()
            .contains("between"));
        let z = whole::<u16>(0, u16::MAX as u64);
        assert_eq!(z("-0"), Ok(0));
        assert!(z("65536").unwrap_err().contains("at most 65535"));
        assert!(seed()("-1").unwrap_err().contains("0 or more"));
    }

    #[test]
    fn reals_refuse_nan_inf_and_range() {
        let f = fraction(1.0);
        assert_eq!(f("0.25"), Ok(0.25));
        assert_eq!(f("-0").map(f64::to_bits), Ok(0f64.to_bits()));
        for bad in ["nan", "inf", "-inf", "NaN", "infinity"] {
            assert!(f(bad).unwrap_err().contains("finite"), "{bad}");
        }
        assert!(f("2").unwrap_err().contains("between 0 and 1"));
        assert!(f("-0.5").unwrap_err().contains("non-negative"));
        assert!(f("x").unwrap_err().contains("not a number"));
        let scale = real(0.0, true, 4.0);
        assert!(scale("0").unwrap_err().contains("greater than 0"));
        assert_eq!(scale("4"), Ok(4.0));
    }
}
