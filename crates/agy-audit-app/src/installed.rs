//! The installed agy's own descriptors, pinned in the user's data folder:
//! `schema extract --installed` stores them, `--schema installed` loads them.
//!
//! Finding agy: the first `agy` on `PATH` that is an executable regular
//! file, else the first of [`FALLBACK_LOCATIONS`] that is one. The public
//! facts document no install location of agy's own (public-format-facts
//! §2.1 names only the binary), so the fallbacks are the conventional places
//! a user-installed command line tool lands: `~/.local/bin/agy`,
//! `/usr/local/bin/agy` and, on macOS, `/opt/homebrew/bin/agy`. Nothing
//! else is searched.
//!
//! Extracting: the binary is read once (bounded, read-only) and its bytes
//! copied into a private 0700 folder, so what is hashed, asked for its
//! version and extracted is one file that cannot change underneath; its
//! release is the first version-looking word of that copy's `--version`
//! (5 seconds at most). The copy's descriptors are extracted and then
//! verified record by record against its bytes (`extract::verify`), and the
//! set must load as a schema. The pinned set and its extraction manifest
//! (which pins it, `pin`) are stored as `agy-<release>-<sha12>.pb` and
//! `agy-<release>-<sha12>.pb.manifest.json` in [`data_dir`]: the name the
//! profile label gives it. A second run for the same binary finds both,
//! checks that the set's digest is the one its manifest pins and writes
//! nothing.
//!
//! Loading (`--schema installed`): the agy found now is hashed and its set
//! looked up by its full SHA-256 in the manifests of the data folder; none
//! is an error naming the command that stores it. Nothing is extracted or
//! loaded unless one of these is asked for.

use crate::schema::extract::{self, ExtractManifest};
use crate::schema::pin::valid_release;
use crate::schema::{AgyBuild, Schema};
use crate::util::atomic::{write_file, WriteOptions};
use crate::util::bounded::{read_regular, InputKind};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The `--schema` value that names the installed agy's pinned set.
pub const INSTALLED: &str = "installed";

/// The command that stores the installed agy's set.
pub const EXTRACT_COMMAND: &str = "agy-audit schema extract --installed";

/// Where agy is looked for after `PATH`, `~` the home folder.
pub const FALLBACK_LOCATIONS: &[&str] = if cfg!(target_os = "macos") {
    &[
        "~/.local/bin/agy",
        "/usr/local/bin/agy",
        "/opt/homebrew/bin/agy",
    ]
} else {
    &["~/.local/bin/agy", "/usr/local/bin/agy"]
};

/// Why the installed agy's set could not be stored or loaded.
#[derive(Debug, thiserror::Error)]
pub enum InstalledError {
    #[error("no agy found: none on PATH, nor at {}", FALLBACK_LOCATIONS.join(", "))]
    NoAgy,
    #[error("no data folder for the pinned schemas: set XDG_DATA_HOME or HOME")]
    NoDataDir,
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{agy}: `--version` said no release (expected a word like 1.4.7): {detail}; pass --release VERSION")]
    NoRelease { agy: PathBuf, detail: String },
    #[error("{agy}: {source}")]
    Extract {
        agy: PathBuf,
        #[source]
        source: extract::ExtractError,
    },
    #[error("{agy}: the extracted records do not verify against the copied binary: {detail}")]
    Unverified { agy: PathBuf, detail: String },
    #[error("{agy}: the extracted set does not load as a schema: {source}")]
    Unusable {
        agy: PathBuf,
        #[source]
        source: crate::schema::SchemaError,
    },
    #[error("no pinned schema for {agy} (SHA-256 {sha256}) in {dir}: store it with `{cmd}`", cmd = EXTRACT_COMMAND)]
    NotStored {
        agy: PathBuf,
        sha256: String,
        dir: PathBuf,
    },
    #[error("{path}: {detail}")]
    Stored { path: PathBuf, detail: String },
    #[error("{path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: crate::util::atomic::WriteError,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> InstalledError + '_ {
    move |source| InstalledError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

/// The folder the pinned sets live in: `$XDG_DATA_HOME/agy-audit/schemas`
/// (an absolute XDG_DATA_HOME only, as the XDG specification says), else
/// `~/.local/share/agy-audit/schemas`; on macOS `~/Library/Application
/// Support/agy-audit/schemas`; on Windows `%APPDATA%\agy-audit\schemas`.
pub fn data_dir() -> Result<PathBuf, InstalledError> {
    let base = if cfg!(windows) {
        std::env::var_os("APPDATA")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    } else if cfg!(target_os = "macos") {
        home().map(|h| h.join("Library/Application Support"))
    } else {
        std::env::var_os("XDG_DATA_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| home().map(|h| h.join(".local/share")))
    };
    Ok(base
        .ok_or(InstalledError::NoDataDir)?
        .join("agy-audit")
        .join("schemas"))
}

fn executable(p: &Path) -> bool {
    let Ok(m) = std::fs::metadata(p) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        m.is_file() && m.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        m.is_file()
    }
}

/// The agy binary: the first executable `agy` on PATH, else the first of
/// [`FALLBACK_LOCATIONS`].
pub fn locate_agy() -> Option<PathBuf> {
    let name = if cfg!(windows) { "agy.exe" } else { "agy" };
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name));
    let fallbacks = FALLBACK_LOCATIONS
        .iter()
        .filter_map(|l| match l.strip_prefix("~/") {
            Some(rest) => home().map(|h| h.join(rest)),
            None => Some(PathBuf::from(l)),
        });
    on_path.chain(fallbacks).find(|p| executable(p))
}

/// The file name of a stored set: `agy-<release>-<sha12>.pb` (its manifest
/// beside it, `pin::manifest_path`).
pub fn set_name(release: &str, binary_sha256: &str) -> String {
    format!("agy-{release}-{}.pb", &binary_sha256[..12])
}

/// A pinned set stored in the data folder.
#[derive(Debug, Clone)]
pub struct Stored {
    pub set: PathBuf,
    pub manifest: ExtractManifest,
}

/// Every stored set whose manifest says it came from the binary `sha256`
/// (full hex, or its first 12 digits as a profile names it).
pub fn stored_for(dir: &Path, sha256: &str) -> Result<Vec<Stored>, InstalledError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(dir)(e)),
    };
    let mut out = Vec::new();
    for e in entries {
        let e = e.map_err(io(dir))?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(stem) = name.strip_suffix(".pb.manifest.json") else {
            continue;
        };
        if !stem.starts_with("agy-") || !stem.ends_with(&sha256[..12.min(sha256.len())]) {
            continue;
        }
        let mpath = e.path();
        let m = extract::read_manifest(&mpath).map_err(|err| InstalledError::Stored {
            path: mpath.clone(),
            detail: err.to_string(),
        })?;
        if m.binary_sha256.starts_with(sha256) {
            out.push(Stored {
                set: dir.join(format!("{stem}.pb")),
                manifest: m,
            });
        }
    }
    out.sort_by(|a, b| a.set.cmp(&b.set));
    Ok(out)
}

/// SHA-256 of a binary, streamed (a bounded regular-file open, read-only).
fn binary_sha256(path: &Path) -> Result<String, InstalledError> {
    let mut f = crate::util::bounded::open_regular(path, InputKind::Binary)
        .map_err(|e| io(path)(e.into_io()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        use std::io::Read as _;
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(path)(e)),
        }
    }
    Ok(crate::util::hex(&h.finalize()))
}

/// The one stored set of `sha256`, its digest checked against its manifest.
fn one_stored(dir: &Path, sha256: &str) -> Result<Option<Stored>, InstalledError> {
    let mut found = stored_for(dir, sha256)?;
    if found.len() > 1 {
        return Err(InstalledError::Stored {
            path: dir.to_path_buf(),
            detail: format!(
                "{} sets claim the binary {sha256} ({}); remove all but one",
                found.len(),
                found
                    .iter()
                    .map(|s| s.set.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    let Some(s) = found.pop() else {
        return Ok(None);
    };
    let bytes = crate::schema::read_set_file(&s.set).map_err(|e| InstalledError::Stored {
        path: s.set.clone(),
        detail: e.to_string(),
    })?;
    let actual = crate::util::hex(&Sha256::digest(&bytes));
    if !actual.eq_ignore_ascii_case(&s.manifest.schema_sha256) {
        return Err(InstalledError::Stored {
            path: s.set.clone(),
            detail: format!(
                "SHA-256 is {actual}, but its manifest pins {}; remove both and run `{EXTRACT_COMMAND}`",
                s.manifest.schema_sha256
            ),
        });
    }
    Ok(Some(s))
}

/// What `schema extract --installed` did.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub agy: PathBuf,
    pub release: String,
    pub binary_sha256: String,
    pub set: PathBuf,
    /// False when the set was already stored (nothing written).
    pub written: bool,
    /// The extraction's summary, when one ran.
    pub extraction: Option<extract::Extraction>,
}

/// The first version-looking word of `--version`'s output (`v` dropped).
pub fn release_of(text: &str) -> Option<String> {
    text.split_whitespace()
        .map(|w| w.trim_start_matches('v').trim_end_matches([',', ';', ')']))
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
        .filter(|w| valid_release(w))
        .map(str::to_string)
}

/// Runs `program --version`, 5 seconds at most; its standard output (at
/// most 64 KiB read).
pub fn version_text(program: &Path) -> Result<String, String> {
    use std::io::Read as _;
    let mut child = std::process::Command::new(program)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| crate::util::io_text(&e))?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("no answer within 5 seconds".into());
            }
        }
    }
    let mut text = String::new();
    if let Some(mut out) = child.stdout.take() {
        out.by_ref()
            .take(64 << 10)
            .read_to_string(&mut text)
            .map_err(|e| crate::util::io_text(&e))?;
    }
    Ok(text)
}

/// A private copy of `bytes` in a new 0700 folder, executable by its owner.
fn private_copy(bytes: &[u8]) -> Result<(tempfile::TempDir, PathBuf), InstalledError> {
    let dir = tempfile::Builder::new()
        .prefix("agy-audit-agy-")
        .tempdir()
        .map_err(io(Path::new("a private temporary folder")))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
            .map_err(io(dir.path()))?;
    }
    let copy = dir
        .path()
        .join(if cfg!(windows) { "agy.exe" } else { "agy" });
    write_file(
        &copy,
        bytes,
        &WriteOptions {
            mode: Some(0o700),
            ..Default::default()
        },
    )
    .map_err(|source| InstalledError::Write {
        path: copy.clone(),
        source,
    })?;
    Ok((dir, copy))
}

/// `schema extract --installed`: finds agy, and stores its pinned set in
/// [`data_dir`] unless the set of this very binary is there already.
/// `release` overrides what `--version` says.
pub fn extract_installed(release: Option<&str>) -> Result<Outcome, InstalledError> {
    let agy = locate_agy().ok_or(InstalledError::NoAgy)?;
    let dir = data_dir()?;
    if let Some(s) = one_stored(&dir, &binary_sha256(&agy)?)? {
        return Ok(Outcome {
            agy,
            release: s.manifest.release.clone().unwrap_or_default(),
            binary_sha256: s.manifest.binary_sha256,
            set: s.set,
            written: false,
            extraction: None,
        });
    }
    // What is hashed, asked for its version and extracted is the private
    // copy of the bytes read here, once.
    let bytes = read_regular(&agy, InputKind::Binary).map_err(|e| io(&agy)(e.into_io()))?;
    let sha = crate::util::hex(&Sha256::digest(&bytes));
    let (_private, copy) = private_copy(&bytes)?;
    drop(bytes);
    let release = match release {
        Some(r) => r.to_string(),
        None => {
            let text = version_text(&copy).map_err(|detail| InstalledError::NoRelease {
                agy: agy.clone(),
                detail,
            })?;
            release_of(&text).ok_or_else(|| InstalledError::NoRelease {
                agy: agy.clone(),
                detail: format!("{:?}", text.lines().next().unwrap_or("")),
            })?
        }
    };
    // Extract from the private copy's bytes, as read back: the file that
    // answered --version.
    let copied = read_regular(&copy, InputKind::Binary).map_err(|e| io(&copy)(e.into_io()))?;
    if crate::util::hex(&Sha256::digest(&copied)) != sha {
        return Err(InstalledError::Unverified {
            agy,
            detail: "the private copy differs from the bytes read".into(),
        });
    }
    let x = extract::extract(&copied).map_err(|source| InstalledError::Extract {
        agy: agy.clone(),
        source,
    })?;
    let manifest = x.manifest(Some(&release));
    let bad = extract::verify(&manifest, &copied);
    if !bad.is_empty() {
        return Err(InstalledError::Unverified {
            agy,
            detail: bad
                .iter()
                .map(|m| m.to_string())
                .collect::<Vec<_>>()
                .join("; "),
        });
    }
    Schema::from_bytes(&x.set, crate::schema::SchemaOrigin::File(agy.clone())).map_err(
        |source| InstalledError::Unusable {
            agy: agy.clone(),
            source,
        },
    )?;
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let set = dir.join(set_name(&release, &sha));
    let mpath = crate::schema::pin::manifest_path(&set);
    let opts = WriteOptions {
        protected: vec![agy.clone()],
        ..Default::default()
    };
    let write = |path: &Path, b: &[u8]| {
        write_file(path, b, &opts).map_err(|source| InstalledError::Write {
            path: path.to_path_buf(),
            source,
        })
    };
    // The set first, then the manifest that pins it: a set without its
    // manifest is never found, so a crash between the two stores nothing.
    write(&set, &x.set)?;
    let mut text = serde_json::to_vec_pretty(&manifest).unwrap_or_default();
    text.push(b'\n');
    write(&mpath, &text)?;
    Ok(Outcome {
        agy,
        release,
        binary_sha256: sha,
        set,
        written: true,
        extraction: Some(x),
    })
}

/// `--schema installed`: the stored set of the agy found now (its path; its
/// manifest beside it pins it).
pub fn current_set() -> Result<PathBuf, InstalledError> {
    let agy = locate_agy().ok_or(InstalledError::NoAgy)?;
    let dir = data_dir()?;
    let sha = binary_sha256(&agy)?;
    match one_stored(&dir, &sha)? {
        Some(s) => Ok(s.set),
        None => Err(InstalledError::NotStored {
            agy,
            sha256: sha,
            dir,
        }),
    }
}

/// The installed agy as `doctor` reports it: where it is, and its stored
/// set when there is one (nothing extracted).
#[derive(Debug, Clone)]
pub enum Now {
    /// No agy found (PATH, then [`FALLBACK_LOCATIONS`]).
    NoAgy,
    /// agy found; no set stored for its binary.
    NotStored { agy: PathBuf, sha256: String },
    /// agy found and its set stored.
    Stored { agy: PathBuf, stored: Stored },
}

/// The agy found now and its stored set, if any: the binary is hashed, the
/// data folder read, nothing written or extracted.
pub fn now() -> Result<Now, InstalledError> {
    let Some(agy) = locate_agy() else {
        return Ok(Now::NoAgy);
    };
    let sha256 = binary_sha256(&agy)?;
    match one_stored(&data_dir()?, &sha256)? {
        Some(stored) => Ok(Now::Stored { agy, stored }),
        None => Ok(Now::NotStored { agy, sha256 }),
    }
}

/// The stored set `s`, loaded pinned by its manifest.
pub fn load(s: &Stored) -> Result<Schema, InstalledError> {
    crate::schema::pin::load(Some(&s.set), None, crate::schema::pin::Use::Verify).map_err(|e| {
        InstalledError::Stored {
            path: s.set.clone(),
            detail: e.to_string(),
        }
    })
}

/// The agy build a profile's schema label names, when the label is
/// `agy-<release>-<binary sha12>` (a pinned extraction: `schema extract
/// --installed`, or `schema extract BINARY --release R`).
///
/// The profile is `[legacy-…/]sqlite-v1-format0-<label>-<schema sha12>-r<rules
/// 6 hex>[-suffix…]` ([`crate::profile`]); a release may hold hyphens, so
/// the release ends at the first hyphen followed by two 12-hex-digit words
/// and an `r` with 6 hex digits. Stricter than a loose match: anything
/// else (a label that does not read so, a release `pin::valid_release`
/// refuses, upper-case hex) names no build, and its evidence is rechecked
/// with the command's own schema, under which its profile reads as changed
/// (unknown).
pub fn agy_build_of(profile: &str) -> Option<AgyBuild> {
    let sqlite = profile.rsplit('/').next()?;
    let rest = sqlite.strip_prefix("sqlite-v1-format0-agy-")?;
    let words: Vec<&str> = rest.split('-').collect();
    let hex12 =
        |w: &str| w.len() == 12 && w.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let rules = |w: &str| {
        w.len() == 7
            && w.starts_with('r')
            && w[1..]
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    let j = (1..words.len().saturating_sub(2))
        .find(|&j| hex12(words[j]) && hex12(words[j + 1]) && rules(words[j + 2]))?;
    let release = words[..j].join("-");
    valid_release(&release).then(|| AgyBuild {
        release,
        binary_sha12: words[j].to_string(),
    })
}

/// Why the set a piece of evidence's profile names cannot be used for its
/// recheck: the evidence then reads as minted under another profile
/// (unknown), and this names the command that restores the set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetUnavailable {
    #[error("the schema its profile names (agy {release}, binary SHA-256 {sha12}…) is not stored in {}: restore it with `{EXTRACT_COMMAND}` while that agy is the one installed, or `agy-audit schema extract AGY_BINARY --release {release} --out {}` from a copy of that binary", dir.display(), dir.join(format!("agy-{release}-{sha12}.pb")).display())]
    NotStored {
        release: String,
        sha12: String,
        dir: PathBuf,
    },
    #[error("the schema its profile names (agy {release}, binary SHA-256 {sha12}…) is stored but unusable: {detail}")]
    Unusable {
        release: String,
        sha12: String,
        detail: String,
    },
    #[error("the schema its profile names (agy {release}, binary SHA-256 {sha12}…) cannot be looked up: {detail}")]
    NoDataDir {
        release: String,
        sha12: String,
        detail: String,
    },
}

/// The schema a recheck uses: the command's own, or a stored set.
pub enum Chosen<'a> {
    /// The command's `--schema` (or the modeled one).
    Own(&'a Schema),
    /// The stored set the evidence's profile names.
    Stored(Arc<Schema>),
}

impl std::ops::Deref for Chosen<'_> {
    type Target = Schema;
    fn deref(&self) -> &Schema {
        match self {
            Chosen::Own(s) => s,
            Chosen::Stored(s) => s,
        }
    }
}

impl Chosen<'_> {
    /// Whether this is a stored set rather than the command's own schema.
    pub fn is_stored(&self) -> bool {
        matches!(self, Chosen::Stored(_))
    }
}

/// The schemas the rechecks of one command use. Evidence (a sidecar's
/// attestation, a manifest's session) whose profile names an agy build
/// ([`agy_build_of`]) other than the command's own schema's is rechecked
/// with the set stored for that binary in [`data_dir`] (found by its
/// digest, [`stored_for`], pinned by its manifest), so upgrading agy, or
/// sweeping with another schema, never turns a recorded result into a
/// change; any other evidence with the command's own schema. A set is
/// loaded only when a recheck the user asked for names it (at most once per
/// command), never extracted.
pub struct Rechecks<'a> {
    own: &'a Schema,
    own_label: String,
    loaded: Mutex<BTreeMap<String, Result<Arc<Schema>, SetUnavailable>>>,
}

impl<'a> Rechecks<'a> {
    pub fn new(own: &'a Schema) -> Self {
        Rechecks {
            own,
            own_label: own.origin.profile_label(),
            loaded: Mutex::new(BTreeMap::new()),
        }
    }

    /// The command's own schema.
    pub fn own(&self) -> &'a Schema {
        self.own
    }

    /// The schema to recheck evidence minted under `profile` with.
    pub fn for_profile(&self, profile: &str) -> Result<Chosen<'a>, SetUnavailable> {
        let Some(build) = agy_build_of(profile) else {
            return Ok(Chosen::Own(self.own));
        };
        let label = format!("agy-{}-{}", build.release, build.binary_sha12);
        if label == self.own_label {
            return Ok(Chosen::Own(self.own));
        }
        let mut loaded = self
            .loaded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        loaded
            .entry(label)
            .or_insert_with(|| load_stored(&build).map(Arc::new))
            .clone()
            .map(Chosen::Stored)
    }
}

/// The stored set of `build`'s binary, loaded pinned by its manifest.
fn load_stored(build: &AgyBuild) -> Result<Schema, SetUnavailable> {
    let (release, sha12) = (build.release.clone(), build.binary_sha12.clone());
    let dir = data_dir().map_err(|e| SetUnavailable::NoDataDir {
        release,
        sha12,
        detail: e.to_string(),
    })?;
    load_stored_in(&dir, build)
}

/// [`load_stored`] from `dir`.
fn load_stored_in(dir: &Path, build: &AgyBuild) -> Result<Schema, SetUnavailable> {
    let (release, sha12) = (build.release.clone(), build.binary_sha12.clone());
    let unusable = |detail: String| SetUnavailable::Unusable {
        release: release.clone(),
        sha12: sha12.clone(),
        detail,
    };
    let Some(s) = one_stored(dir, &build.binary_sha12).map_err(|e| unusable(e.to_string()))? else {
        return Err(SetUnavailable::NotStored {
            release,
            sha12,
            dir: dir.to_path_buf(),
        });
    };
    crate::schema::pin::load(Some(&s.set), None, crate::schema::pin::Use::Verify)
        .map_err(|e| unusable(format!("{}: {e}", s.set.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_is_the_first_version_looking_word() {
        assert_eq!(release_of("agy 1.0.10\n").as_deref(), Some("1.0.10"));
        assert_eq!(
            release_of("agy version v1.4.7 (abc)").as_deref(),
            Some("1.4.7")
        );
        assert_eq!(release_of("1.5.0-rc1").as_deref(), Some("1.5.0-rc1"));
        assert_eq!(release_of("agy dev build"), None);
        assert_eq!(release_of("agy 12"), None, "no dot: not a release");
        assert_eq!(
            release_of("agy 1.0/2"),
            None,
            "a slash: not fit for a profile"
        );
    }

    #[test]
    fn a_set_is_named_by_release_and_the_binary_digest() {
        let sha = "0123456789abcdef".repeat(4);
        assert_eq!(set_name("1.0.10", &sha), "agy-1.0.10-0123456789ab.pb");
    }
    /// The accepted shape names the release (hyphens kept) and the binary;
    /// each near miss names no build.
    #[test]
    fn a_profile_names_an_agy_build_only_in_the_label_shape() {
        let sqlite = "sqlite-v1-format0-agy-1.0.10-0123456789ab-fedcba987654-r3c0d1e-planner50";
        let b = agy_build_of(sqlite).unwrap();
        assert_eq!(
            (b.release.as_str(), b.binary_sha12.as_str()),
            ("1.0.10", "0123456789ab")
        );
        let legacy = format!("legacy-aes256gcm-v1-agy-1.4.4-337dcde66844/{sqlite}");
        assert_eq!(agy_build_of(&legacy), Some(b));
        let rc = agy_build_of("sqlite-v1-format0-agy-1.5.0-rc1-0123456789ab-fedcba987654-r3c0d1e")
            .unwrap();
        assert_eq!(rc.release, "1.5.0-rc1");
        for miss in [
            "sqlite-v1-format0-modeled-fedcba987654-r3c0d1e-planner50",
            "sqlite-v1-format0-pinned-fedcba987654-r3c0d1e",
            "sqlite-v1-format0-unpinned-fedcba987654-r3c0d1e",
            // no release
            "sqlite-v1-format0-agy-0123456789ab-fedcba987654-r3c0d1e",
            // an 11-digit binary digest
            "sqlite-v1-format0-agy-1.0.10-0123456789a-fedcba987654-r3c0d1e",
            // upper-case hex
            "sqlite-v1-format0-agy-1.0.10-0123456789AB-fedcba987654-r3c0d1e",
            // no schema digest
            "sqlite-v1-format0-agy-1.0.10-0123456789ab-r3c0d1e",
            // no rule-set digest
            "sqlite-v1-format0-agy-1.0.10-0123456789ab-fedcba987654-planner50",
            // another store format
            "sqlite-v2-format0-agy-1.0.10-0123456789ab-fedcba987654-r3c0d1e",
            // a release pin refuses
            "sqlite-v1-format0-agy-1.0_10-0123456789ab-fedcba987654-r3c0d1e",
            "",
        ] {
            assert_eq!(agy_build_of(miss), None, "{miss}");
        }
    }

    /// Evidence under the command's own label, or under no agy label, is
    /// rechecked with the command's schema; another agy label with the set
    /// stored for it, and a missing one is named with its remedy.
    #[test]
    fn rechecks_choose_the_set_the_profile_names() {
        let own = Schema::modeled().unwrap();
        let r = Rechecks::new(&own);
        let p = crate::profile::sqlite_profile(&own);
        assert!(!r.for_profile(&p).unwrap().is_stored());
        assert!(!r.for_profile("anything").unwrap().is_stored());
        let dir = tempfile::tempdir().unwrap();
        let missing = load_stored_in(
            dir.path(),
            &AgyBuild {
                release: "1.0.10".into(),
                binary_sha12: "0123456789ab".into(),
            },
        )
        .err()
        .unwrap();
        let text = missing.to_string();
        assert!(
            matches!(missing, SetUnavailable::NotStored { .. })
                && text.contains(EXTRACT_COMMAND)
                && text.contains("--release 1.0.10 --out ")
                && text.contains("agy-1.0.10-0123456789ab.pb"),
            "{text}"
        );
    }
}
