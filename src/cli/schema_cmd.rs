//! `agy-audit schema dump|info|extract|verify|diff|bundle`.

use crate::schema::bundle::BUNDLE_FORMAT;
use crate::schema::extract;
use crate::schema::pin::{self, valid_release};
use crate::schema::{decode_pool, read_set_file, Schema, MODELED_SET};
use crate::util::atomic::{check_outputs, write_file, WriteOptions};
use crate::verdict::exit;
use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Instant;

const EXTRACT_HELP: &str = "\
Reads BINARY once into memory (never writes or locks it; copy an installed agy
first so it cannot change underneath you), prints its SHA-256, finds every
serialized FileDescriptorProto a Go protobuf program embeds raw, accepts a
record only when it decodes strictly and re-encodes to the same bytes, and
writes a deterministic FileDescriptorSet (files in dependency order) plus a
JSON manifest of each record's name, offset, length and SHA-256, the binary's
SHA-256, --release and the set's SHA-256 (the pin).

Every well-formed record is extracted (files that only import others
included) or listed as skipped, with its offset and reason, in the summary
and the manifest's `skipped` array: identical repeats, truncated copies,
records that declare and import nothing, and records whose syntax is not
proto2 or proto3 (edition-2023 files say \"editions\"; a kept file importing
one stops extraction).

Neither output may be BINARY (by name, symbolic or hard link), nor each
other, --force or not; both are checked before anything is written.

Annotation-only files are dropped with the imports and extensions that refer
to them: google/api/annotations.proto, google/api/client.proto,
google/api/field_behavior.proto, google/api/http.proto,
google/api/launch_stage.proto, google/api/resource.proto. Any other missing
import stops extraction (exit 1).

--installed (instead of BINARY and --out): finds agy (the first executable
`agy` on PATH, then ~/.local/bin/agy, /usr/local/bin/agy and, on macOS,
/opt/homebrew/bin/agy), copies it into a private 0700 temporary folder, asks
the copy for `--version` (its first version-looking word is the release;
--release overrides it), extracts the copy's descriptors, verifies every
record against the copy's bytes and stores the set with its manifest (which
pins it) as agy-<release>-<sha256 12 hex>.pb in the user's data folder:
$XDG_DATA_HOME/agy-audit/schemas (else ~/.local/share/agy-audit/schemas; on
macOS ~/Library/Application Support/agy-audit/schemas). A second run for the
same binary writes nothing and says so. Verifying commands then take
`--schema installed`: the stored set of the agy found at that moment, its
profile naming the release and binary (agy-<release>-<sha12>).";

const DIFF_HELP: &str = "\
OLD and NEW are FileDescriptorSet files (raw or gzip) or the word `modeled`
(the embedded schema). Lists messages, fields (number, type, label: singular,
optional = explicit presence, repeated, map; real oneof) and enums and their
values added (+), removed (-) or changed (~), then a summary line.

Exit codes: 0 when NEW keeps every declaration of OLD (additions alone),
4 when anything was removed or changed, 1 on an unreadable set.";

const BUNDLE_HELP: &str = "\
A pinned bundle is the base plus exactly the named declarations copied from a
newer extraction: messages or enums (pkg.Msg, copied whole with their nested
declarations), fields (pkg.Msg.field, with their optional-field presence) and
enum values (pkg.Enum.VALUE). Refused (exit 2, nothing written): a name --from
does not declare, a name already in the base with a different definition, a
number the base already uses, a dependency on a type neither in the base nor
added, a file the base lacks. The result is checked to differ from the base by
exactly the named declarations. Written atomically with OUT.manifest.json
(its SHA-256, the base's and --from's, and the agy release and binary from
--from's own manifest when present), which pins it for --schema.

Neither OUT nor OUT.manifest.json may be --base, --from or --from's manifest
(by name, symbolic or hard link), --force or not, and an existing
OUT.manifest.json is replaced only with --force; all is checked before
anything is written.";

#[derive(Debug, Subcommand)]
pub enum SchemaCommand {
    /// Write the embedded modeled FileDescriptorSet (binary) to a file or stdout.
    Dump(DumpArgs),
    /// Print a descriptor set's files, message and enum counts and SHA-256.
    Info(InfoArgs),
    /// Extract the descriptor set embedded in an agy (or any Go protobuf) binary.
    #[command(after_help = EXTRACT_HELP)]
    Extract(ExtractArgs),
    /// Recheck every record of an extraction manifest against the binary.
    #[command(
        after_help = "Exit codes: 0 every record matches; 4 a record (or the binary's SHA-256) does not, each mismatch named; 1 unreadable input."
    )]
    Verify(VerifyArgs),
    /// Compare two descriptor sets: what was added, removed or changed.
    #[command(after_help = DIFF_HELP)]
    Diff(DiffArgs),
    /// Build a pinned bundle: a base set plus exactly the named declarations.
    #[command(after_help = BUNDLE_HELP)]
    Bundle(BundleArgs),
}

#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// The binary to read (read-only, once).
    #[arg(required_unless_present = "installed")]
    pub binary: Option<PathBuf>,
    /// Where to write the FileDescriptorSet (atomically).
    #[arg(long, value_name = "FILE", required_unless_present = "installed")]
    pub out: Option<PathBuf>,
    /// Where to write the JSON manifest (default: OUT.manifest.json, which
    /// also pins OUT for --schema).
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// Extract from the installed agy (PATH, then ~/.local/bin/agy and
    /// /usr/local/bin/agy) and store the pinned set in the user's data
    /// folder, named by its release (`agy --version`) and SHA-256, for
    /// `--schema installed`; nothing is written when that binary's set is
    /// stored already.
    #[arg(long, conflicts_with_all = ["binary", "out", "manifest", "force"])]
    pub installed: bool,
    /// The agy release the binary is (e.g. 1.4.7), recorded in the manifest
    /// and named in the profile of a set pinned by it.
    #[arg(long, value_name = "VERSION")]
    pub release: Option<String>,
    /// Replace existing output files.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The manifest `schema extract` wrote.
    #[arg(long, value_name = "FILE")]
    pub manifest: PathBuf,
    /// The binary to recheck.
    pub binary: PathBuf,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The older set (file, or `modeled`).
    pub old: String,
    /// The newer set (file, or `modeled`).
    pub new: String,
    /// Print JSON {added, removed, changed, summary} instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BundleArgs {
    /// The base set (file, or `modeled`).
    #[arg(long, value_name = "FILE")]
    pub base: String,
    /// The newer extraction to copy declarations from.
    #[arg(long, value_name = "FILE")]
    pub from: PathBuf,
    /// Declarations to copy: pkg.Msg, pkg.Msg.field, pkg.Enum, pkg.Enum.VALUE.
    #[arg(long, value_name = "NAME", num_args = 1.., required = true)]
    pub add: Vec<String>,
    /// Where to write the bundle (atomically), with OUT.manifest.json beside it.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Replace existing output files.
    #[arg(long)]
    pub force: bool,
}

fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(super::errors::Usage::Text(msg.into()))
}

/// A set's bytes: a file (raw or gzip) or `modeled`.
fn set_bytes(spec: &str) -> anyhow::Result<Vec<u8>> {
    if spec == "modeled" {
        return Ok(MODELED_SET.to_vec());
    }
    Ok(read_set_file(Path::new(spec))?)
}

/// A pool from a set's bytes (behind the schema module's syntax guard), its
/// errors naming `spec`.
fn pool(spec: &str, bytes: &[u8]) -> anyhow::Result<prost_reflect::DescriptorPool> {
    Ok(decode_pool(bytes).map_err(|e| e.at(spec))?)
}

fn write_json(path: &Path, v: &serde_json::Value, opts: &WriteOptions) -> anyhow::Result<()> {
    let mut text = serde_json::to_vec_pretty(v)?;
    text.push(b'\n');
    write_file(path, &text, opts)?;
    Ok(())
}

/// `path` with its folder resolved (the file itself need not exist).
fn resolved(path: &Path) -> Option<PathBuf> {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Some(std::fs::canonicalize(parent).ok()?.join(path.file_name()?))
}

/// Both paths name one existing file, links followed (a symbolic or hard
/// link to it included).
fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        x.dev() == y.dev() && x.ino() == y.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (x, y);
        matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(p), Ok(q)) if p == q
        )
    }
}

/// Refuses, before anything is written, an output that is one of the
/// command's inputs (`check_outputs`: by name, symbolic or hard link) or
/// another of its outputs: no schema command writes onto a file it was given
/// to read, `--force` or not, and a refused second output never leaves the
/// first written. `write_file` is given the inputs as `protected` too.
fn refuse_overlaps(outputs: &[(&str, &Path)], inputs: &[PathBuf]) -> anyhow::Result<()> {
    let paths: Vec<&Path> = outputs.iter().map(|(_, p)| *p).collect();
    check_outputs(&paths, inputs)?;
    for (k, (flag, out)) in outputs.iter().enumerate() {
        for (flag2, out2) in &outputs[k + 1..] {
            if same_file(out, out2) || resolved(out).is_some_and(|o| resolved(out2) == Some(o)) {
                bail!(usage(format!(
                    "{}: {flag} and {flag2} are the same file ({})",
                    out.display(),
                    out2.display()
                )));
            }
        }
    }
    Ok(())
}

fn run_extract(a: ExtractArgs) -> anyhow::Result<i32> {
    if let Some(r) = &a.release {
        if !valid_release(r) {
            bail!(usage(format!(
                "--release {r:?}: expected letters, digits, dots or dashes (e.g. 1.4.7)"
            )));
        }
    }
    let (Some(binary), Some(out)) = (a.binary.clone(), a.out.clone()) else {
        return super::schema_installed::run_extract_installed(a.release.as_deref());
    };
    let (a_binary, a_out) = (binary, out);
    let manifest_path = a
        .manifest
        .clone()
        .unwrap_or_else(|| pin::manifest_path(&a_out));
    let inputs = vec![a_binary.clone()];
    refuse_overlaps(
        &[("--out", &a_out), ("--manifest", &manifest_path)],
        &inputs,
    )?;
    let opts = WriteOptions {
        force: a.force,
        protected: inputs,
        ..Default::default()
    };
    for p in [&a_out, &manifest_path] {
        if !a.force && p.symlink_metadata().is_ok() {
            bail!(usage(format!(
                "{}: refusing to overwrite an existing file (use --force)",
                p.display()
            )));
        }
    }
    let t0 = Instant::now();
    let bytes =
        crate::util::bounded::read_regular(&a_binary, crate::util::bounded::InputKind::Binary)?;
    let read_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let x = extract::extract(&bytes)
        .with_context(|| format!("extracting from {}", a_binary.display()))?;
    let scan_s = t1.elapsed().as_secs_f64();
    drop(bytes);
    let m = x.manifest(a.release.as_deref());
    outln!("binary: {}", a_binary.display());
    outln!("sha256: {}", m.binary_sha256);
    outln!("bytes: {}", m.binary_bytes);
    if let Some(r) = &m.release {
        outln!("release: {r}");
    }
    outln!("records: {}", super::schema_installed::records_line(&x));
    for s in &x.skipped {
        outln!("skipped: {s}");
    }
    if !x.dropped.is_empty() {
        outln!("dropped annotation-only: {}", x.dropped.join(", "));
    }
    let p = pool("extraction", &x.set)?;
    outln!(
        "set: {} files, {} messages, {} enums",
        x.files.len(),
        p.all_messages().count(),
        p.all_enums().count()
    );
    write_file(&a_out, &x.set, &opts)?;
    let value = serde_json::to_value(&m)?;
    write_json(&manifest_path, &value, &opts)?;
    outln!(
        "wrote {} (sha256 {}, {} bytes)",
        a_out.display(),
        m.schema_sha256,
        x.set.len()
    );
    outln!("wrote {}", manifest_path.display());
    let mb = m.binary_bytes as f64 / 1e6;
    outln!(
        "time: read {:.2} s, extract {:.2} s ({:.0} MB/s)",
        read_s,
        scan_s,
        mb / scan_s.max(1e-9)
    );
    Ok(exit::OK)
}

fn run_verify(a: VerifyArgs) -> anyhow::Result<i32> {
    let m = extract::read_manifest(&a.manifest)?;
    let bytes =
        crate::util::bounded::read_regular(&a.binary, crate::util::bounded::InputKind::Binary)?;
    let bad = extract::verify(&m, &bytes);
    if bad.is_empty() {
        outln!(
            "ok: {} records ({} extracted, {} skipped) match {} (sha256 {})",
            m.records.len() + m.skipped.len(),
            m.records.len(),
            m.skipped.len(),
            a.binary.display(),
            m.binary_sha256
        );
        return Ok(exit::OK);
    }
    for b in &bad {
        outln!("MISMATCH {b}");
    }
    crate::note!(
        "agy-audit schema verify: {} of {} records do not match {}",
        bad.len(),
        m.records.len() + m.skipped.len(),
        a.binary.display()
    );
    Ok(exit::INCOMPLETE)
}

fn run_diff(a: DiffArgs) -> anyhow::Result<i32> {
    let old = pool(&a.old, &set_bytes(&a.old)?)?;
    let new = pool(&a.new, &set_bytes(&a.new)?)?;
    let d = crate::schema::diff::diff(&old, &new);
    if a.json {
        let mut v = serde_json::to_value(&d)?;
        v["summary"] = serde_json::Value::String(d.summary());
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        crate::util::term::out(d.text().as_bytes());
    }
    Ok(if d.additive() {
        exit::OK
    } else {
        exit::INCOMPLETE
    })
}

fn run_bundle(a: BundleArgs) -> anyhow::Result<i32> {
    let mp = pin::manifest_path(&a.out);
    // Inputs: --from, the pin manifest beside it (read when present), and
    // --base unless it is the embedded set.
    let mut inputs = vec![a.from.clone(), pin::manifest_path(&a.from)];
    if a.base != "modeled" {
        inputs.push(PathBuf::from(&a.base));
    }
    refuse_overlaps(&[("--out", &a.out), ("OUT.manifest.json", &mp)], &inputs)?;
    let opts = WriteOptions {
        force: a.force,
        protected: inputs,
        ..Default::default()
    };
    for p in [&a.out, &mp] {
        if !a.force && p.symlink_metadata().is_ok() {
            bail!(usage(format!(
                "{}: refusing to overwrite an existing file (use --force)",
                p.display()
            )));
        }
    }
    let base = set_bytes(&a.base)?;
    let from = read_set_file(&a.from)?;
    let from_sha = crate::util::hex(&Sha256::digest(&from));
    // The extraction's own manifest names the release and binary.
    let (release, binary) = match pin::read_pin_manifest(&a.from)? {
        Some((mp, m)) => {
            if m.schema_sha256.to_ascii_lowercase() != from_sha {
                bail!(usage(format!(
                    "{}: SHA-256 is {from_sha}, but {} says {}",
                    a.from.display(),
                    mp.display(),
                    m.schema_sha256
                )));
            }
            (m.release, m.binary_sha256)
        }
        None => (None, None),
    };
    let b = match crate::schema::bundle::bundle(&base, &from, &a.add) {
        Ok(b) => b,
        // A set that does not load: named by its path.
        Err(e) if e.which().is_some() => {
            let path = match e.which() {
                Some("--base") => a.base.clone(),
                Some("--from") => a.from.display().to_string(),
                _ => format!("the bundle for {}", a.out.display()),
            };
            return Err(anyhow::Error::new(e).context(path));
        }
        Err(e) => bail!(usage(e.to_string())),
    };
    for c in &b.delta.added {
        outln!("+ {} {}", c.kind, c.name);
    }
    for n in &b.unchanged {
        outln!("= {n} (already in the base, identical)");
    }
    let sha = crate::util::hex(&b.sha256);
    write_file(&a.out, &b.set, &opts)?;
    let manifest = serde_json::json!({
        "format": BUNDLE_FORMAT,
        "schemaSha256": sha,
        "baseSha256": crate::util::hex(&Sha256::digest(&base)),
        "fromSha256": from_sha,
        "release": release,
        "binarySha256": binary,
        "added": b.added,
        "unchanged": b.unchanged,
    });
    write_json(&mp, &manifest, &opts)?;
    outln!("bundle: {} ({} bytes)", a.out.display(), b.set.len());
    outln!("sha256: {sha}");
    outln!("pinned by: {}", mp.display());
    Ok(exit::OK)
}

#[derive(Debug, Args)]
pub struct DumpArgs {
    /// Output file (default: standard output). Written atomically.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace an existing output file.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// A FileDescriptorSet (raw or gzip) to describe instead of the modeled one.
    #[arg(long, env = "AGY_AUDIT_SCHEMA")]
    pub schema: Option<PathBuf>,
}

pub fn run(cmd: SchemaCommand) -> anyhow::Result<i32> {
    match cmd {
        SchemaCommand::Dump(a) => {
            match a.out {
                Some(path) => {
                    let opts = WriteOptions {
                        force: a.force,
                        ..Default::default()
                    };
                    write_file(&path, MODELED_SET, &opts)
                        .with_context(|| "writing the modeled descriptor set")?;
                    crate::note!("wrote {} ({} bytes)", path.display(), MODELED_SET.len());
                }
                None => crate::util::term::out(MODELED_SET),
            }
            Ok(0)
        }
        SchemaCommand::Extract(a) => run_extract(a),
        SchemaCommand::Verify(a) => run_verify(a),
        SchemaCommand::Diff(a) => run_diff(a),
        SchemaCommand::Bundle(a) => run_bundle(a),
        SchemaCommand::Info(a) => {
            let schema = Schema::load(a.schema.as_deref())?;
            crate::util::term::out(describe(&schema).as_bytes());
            Ok(0)
        }
    }
}

/// The `schema info` text.
pub fn describe(schema: &Schema) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let files: Vec<_> = schema.pool.files().collect();
    let _ = writeln!(s, "schema: {}", schema.origin.label());
    let _ = writeln!(s, "sha256: {}", schema.sha256_hex());
    if let crate::schema::SchemaOrigin::File(p) = &schema.origin {
        let pin = match crate::schema::pin::read_pin_manifest(p) {
            Ok(Some((mp, m))) if m.schema_sha256.eq_ignore_ascii_case(&schema.sha256_hex()) => {
                format!("pinned by {}", mp.display())
            }
            Ok(Some((mp, _))) => format!("{} does NOT match: refused for verifying", mp.display()),
            _ => "none (pass --schema-sha256 to verify with it)".to_string(),
        };
        let _ = writeln!(s, "pin: {pin}");
    }
    let _ = writeln!(
        s,
        "files: {}  messages: {}  enums: {}",
        files.len(),
        schema.pool.all_messages().count(),
        schema.pool.all_enums().count()
    );
    for f in files {
        let _ = writeln!(
            s,
            "  {}  (package {}, {} messages, {} enums)",
            f.name(),
            f.package_name(),
            f.messages().count(),
            f.enums().count()
        );
    }
    s
}
