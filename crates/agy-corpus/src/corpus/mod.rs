//! The synthetic agy store generator (`agy-audit corpus generate`).
//!
//! A deterministic function of its options: the same seed gives
//! byte-identical files, `-wal` included. The layout under `--out DIR`:
//!
//! * `conversations/<uuid>.db` (+ `<uuid>.db-wal` for conversations whose
//!   newest steps agy left uncheckpointed), `conversations/<uuid>.pb` legacy
//!   sources (a few ids have both; the `.db` wins);
//! * `implicit/<uuid>.pb` (implicit trajectories, never selected);
//! * `cli.log` (the simulated daemon appends its listening line);
//! * `.truth/expected.jsonl` (one ground-truth line per selected
//!   conversation), `.truth/daemon/<uuid>.full.json` and `.ordinary.json`
//!   (what agy's daemon returns unrehydrated and rehydrated),
//!   `.truth/scenario.json` (the plan), `.truth/faults.txt` (planned daemon
//!   faults, when `--fault-rate` is nonzero), `.truth/generator.json` (the
//!   generator's marker: every file it may write; `--force` replaces only a
//!   folder carrying it, removes only the files it lists, and refuses a folder
//!   holding anything else), `.truth/generation.json` (written last: the
//!   generator's build digest and the options, so a cached corpus can be
//!   told stale, see [`is_current`]).
//!
//! Stages: [`plan`] decides everything from the seed (cheap; the ground
//! truth comes from it alone), [`content`] builds each conversation's stored
//! and presented steps side by side, [`assemble`] encodes them and writes
//! the declared source-only fields and near-misses as raw wire bytes,
//! [`sqlite`] writes the database and its WAL deterministically.

#![warn(missing_docs)]

pub mod assemble;
pub mod content;
pub mod families;
pub mod legacy;
pub mod msg;
pub mod plan;
pub mod plants;
pub mod release;
pub mod rng;
pub mod secrets;
pub mod sqlite;
pub mod text;
pub mod wire;

pub use plan::{plan as plan_corpus, CorpusPlan, PlanOptions};

use crate::schema::Schema;
use msg::Builder;
use plan::{ConvPlan, Format};
use rayon::prelude::*;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Why generation failed.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    /// A file could not be read or written.
    #[error("{path}: {}", crate::util::io_text(source))]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// SQLite refused an operation.
    #[error("{path}: sqlite: {detail}")]
    Sqlite {
        /// The scratch database.
        path: PathBuf,
        /// SQLite's message.
        detail: String,
    },
    /// The schema lacks a message or field the generator builds.
    #[error("schema: {0}")]
    Schema(String),
    /// A message could not be built or encoded.
    #[error("building a message: {0}")]
    Build(String),
    /// Bad options.
    #[error("{0}")]
    Usage(String),
}

impl From<crate::schema::SchemaError> for CorpusError {
    fn from(e: crate::schema::SchemaError) -> Self {
        CorpusError::Schema(e.to_string())
    }
}

fn io(path: &Path, e: std::io::Error) -> CorpusError {
    CorpusError::Io {
        path: path.to_path_buf(),
        source: e,
    }
}

/// Options of one generation.
#[derive(Debug, Clone)]
pub struct GenerateOptions {
    /// The store root to write.
    pub out: PathBuf,
    /// What to generate.
    pub plan: PlanOptions,
    /// Replace a previous corpus in `out`: only a folder carrying the
    /// generator's marker ([`MARKER`]), and only the files it lists.
    pub force: bool,
}

/// What a generation wrote.
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Selected conversations.
    pub conversations: usize,
    /// SQLite sources.
    pub sqlite: usize,
    /// Legacy `.pb` sources.
    pub protobuf: usize,
    /// Ids with both a `.db` and a shadowed `.pb`.
    pub both: usize,
    /// `-wal` files with uncheckpointed frames.
    pub wal_files: usize,
    /// Total steps.
    pub steps: usize,
    /// Bytes of source files (`conversations/`, `implicit/`).
    pub source_bytes: u64,
    /// Bytes of every file written.
    pub total_bytes: u64,
    /// The largest source file.
    pub largest_source: u64,
    /// Steps by step-type name.
    pub step_types: BTreeMap<String, usize>,
    /// Truth lines by verdict.
    pub verdicts: BTreeMap<String, usize>,
    /// Truth lines by reason class.
    pub reasons: BTreeMap<String, usize>,
    /// Seconds taken.
    pub seconds: f64,
    /// The subagent families a home's CLI root gained ([`families`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub families: Option<families::Families>,
}

/// The marker a generation leaves in its store root: the claim that this
/// folder is a generated corpus, and the list of every file the generator
/// may have written there. `--force` replaces only a folder that carries it,
/// and removes only the files it lists.
pub const MARKER: &str = ".truth/generator.json";

/// The marker's `generator` member.
const MARKER_GENERATOR: &str = "agy-audit corpus generate";

/// The marker document.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Marker {
    generator: String,
    version: u32,
    /// Every file the generation may write, relative to the store root.
    files: Vec<String>,
}

/// Every file a generation of `plan` may write (the optional `-wal` files
/// and `faults.txt` included), relative to the store root.
fn planned_files(plan: &CorpusPlan) -> Vec<String> {
    let mut files = vec![
        // written by a home's planted troubles (plants)
        "conversation_summaries.db".to_string(),
        "cli.log".to_string(),
        CLI_STATE.to_string(),
        IDE_STATE.to_string(),
    ];
    for cp in &plan.conversations {
        match cp.format {
            Format::Sqlite => {
                files.push(format!("conversations/{}.db", cp.id));
                files.push(format!("conversations/{}.db-wal", cp.id));
                if cp.also_pb {
                    files.push(format!("conversations/{}.pb", cp.id));
                }
            }
            Format::Protobuf => files.push(format!("conversations/{}.pb", cp.id)),
        }
        files.push(format!(".truth/daemon/{}.full.json", cp.id));
        files.push(format!(".truth/daemon/{}.ordinary.json", cp.id));
    }
    for ip in &plan.implicit {
        files.push(format!("implicit/{}.pb", ip.id));
    }
    for f in [
        "expected.jsonl",
        "scenario.json",
        "faults.txt",
        "families.json",
        "secrets.jsonl",
        "generation.json",
        "plants.json",
    ] {
        files.push(format!(".truth/{f}"));
    }
    files
}

/// The CLI's state file in its root (agy writes it; the IDE never does).
pub const CLI_STATE: &str = "jetski_state.pbtxt";
/// The IDE's state file in its root (the IDE's marker).
pub const IDE_STATE: &str = "antigravity_state.pbtxt";

/// Where a home's CLI store lives, relative to the home.
pub const HOME_CLI_ROOT: &str = ".gemini/antigravity-cli";
/// Where a home's IDE store lives, relative to the home.
pub const HOME_IDE_ROOT: &str = ".gemini/antigravity";

/// The smallest `conversations` of [`generate_home`]: from 20 a corpus
/// holds an id with both a `.db` and a shadowed legacy `.pb`.
pub const HOME_MIN_CONVERSATIONS: usize = 20;

/// What [`generate_home`] wrote.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HomeSummary {
    /// The CLI store ([`HOME_CLI_ROOT`]).
    pub cli: Summary,
    /// The IDE store ([`HOME_IDE_ROOT`]).
    pub ide: Summary,
}

/// Writes a two-root home as agy and the Antigravity IDE lay it out: a CLI
/// store at `home/.gemini/antigravity-cli` (with `cli.log` and
/// `jetski_state.pbtxt`) from `plan` plus the subagent families of
/// [`families`] (a parent, child and grandchild; an orphan whose parent is
/// in no root; a parent cycle; listed in `.truth/families.json`), and an
/// IDE store at
/// `home/.gemini/antigravity` (with `antigravity_state.pbtxt` and no
/// `cli.log`: the IDE announces its daemon in its own logs, which
/// `daemon-sim --ide` writes) from the same plan with the next seed, so the
/// two stores share no conversation id. Each holds legacy `.pb` sources
/// and at least one `.pb` shadowed by a `.db` of the same id. Both roots
/// are judged as targets (absent, empty, or with `force` a previous
/// generation only) before either is written: a refusal leaves the home as
/// it was.
pub fn generate_home(
    home: &Path,
    plan: &PlanOptions,
    force: bool,
) -> Result<HomeSummary, CorpusError> {
    if plan.conversations < HOME_MIN_CONVERSATIONS {
        return Err(CorpusError::Usage(format!(
            "--home needs --conversations {HOME_MIN_CONVERSATIONS} or more (each root then holds a legacy .pb shadowed by a .db), got {}",
            plan.conversations
        )));
    }
    let cli_root = home.join(HOME_CLI_ROOT);
    let ide_root = home.join(HOME_IDE_ROOT);
    // Every target is judged before anything is written: a refused IDE root
    // (a real store, say) must not find the CLI root already replaced.
    for root in [&cli_root, &ide_root] {
        check_out(root, force)?;
    }
    let cli = generate_planned(
        &GenerateOptions {
            out: cli_root.clone(),
            plan: plan.clone(),
            force,
        },
        Release::Current,
        true,
        false,
    )?;
    write(&cli_root.join(CLI_STATE), b"# agy CLI state (generated)\n")?;
    let mut ide_plan = plan.clone();
    ide_plan.seed = plan.seed.wrapping_add(1);
    let ide = generate(&GenerateOptions {
        out: ide_root.clone(),
        plan: ide_plan,
        force,
    })?;
    let log = ide_root.join("cli.log");
    std::fs::remove_file(&log).map_err(|e| io(&log, e))?;
    write(
        &ide_root.join(IDE_STATE),
        b"# Antigravity IDE state (generated)\n",
    )?;
    Ok(HomeSummary { cli, ide })
}

/// What [`generate_home_with`] plants besides the two roots ([`plants`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct HomePlants {
    /// The store troubles, in the CLI root.
    pub troubles: bool,
    /// The store folders besides the roots.
    pub extra_roots: bool,
}

/// [`generate_home`], then the [`plants`] asked for (the store folders
/// first, so the backup copies conversations the troubles leave alone),
/// recorded in the CLI root's `.truth/plants.json`.
pub fn generate_home_with(
    home: &Path,
    plan: &PlanOptions,
    force: bool,
    with: HomePlants,
) -> Result<(HomeSummary, serde_json::Value), CorpusError> {
    let summary = generate_home(home, plan, force)?;
    let cli_root = home.join(HOME_CLI_ROOT);
    let mut planted = serde_json::Map::new();
    if with.extra_roots {
        planted.insert(
            "extraRoots".into(),
            plants::plant_extra_roots(home, &cli_root, plan, force)?,
        );
    }
    if with.troubles {
        planted.insert("troubles".into(), plants::plant_troubles(&cli_root)?);
    }
    let planted = serde_json::Value::Object(planted);
    if with.extra_roots || with.troubles {
        plants::record(&cli_root, &planted)?;
    }
    Ok((summary, planted))
}

/// The folders a generation creates, children before parents.
const GENERATED_DIRS: &[&str] = &[".truth/daemon", ".truth", "implicit", "conversations"];

/// Reads the marker of a store root that is to be replaced; anything but a
/// marker this generator wrote refuses the replacement.
fn read_marker(out: &Path) -> Result<Marker, CorpusError> {
    let path = out.join(MARKER);
    let refuse = |why: String| {
        CorpusError::Usage(format!(
            "{}: refusing to replace this folder: {why}; --force only replaces a corpus that \
             `agy-audit corpus generate` wrote (it carries {MARKER})",
            out.display()
        ))
    };
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(refuse(format!("it is not empty and has no {MARKER}")))
        }
        Err(e) => return Err(io(&path, e)),
    };
    if !meta.is_file() {
        return Err(refuse(format!("{MARKER} is not a regular file")));
    }
    let bytes = std::fs::read(&path).map_err(|e| io(&path, e))?;
    let marker: Marker = serde_json::from_slice(&bytes)
        .map_err(|e| refuse(format!("{MARKER} is not the generator's marker ({e})")))?;
    if marker.generator != MARKER_GENERATOR || marker.version != 1 {
        return Err(refuse(format!("{MARKER} is not the generator's marker")));
    }
    Ok(marker)
}

/// Removes a previous generation: every entry in the folder must be one the
/// marker lists (or a folder the generator creates); anything else stops the
/// replacement before a single file is removed.
fn remove_previous(out: &Path) -> Result<(), CorpusError> {
    for p in removable(out)? {
        std::fs::remove_file(&p).map_err(|e| io(&p, e))?;
    }
    let marker_path = out.join(MARKER);
    std::fs::remove_file(&marker_path).map_err(|e| io(&marker_path, e))?;
    for d in GENERATED_DIRS {
        let p = out.join(d);
        match std::fs::remove_dir(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(&p, e)),
        }
    }
    Ok(())
}

/// The files a replacement of the previous generation in `out` removes
/// (the marker aside), judged without touching anything: the folder must
/// carry the generator's marker, and every entry in it must be one the
/// marker lists (or a folder the generator creates).
fn removable(out: &Path) -> Result<Vec<PathBuf>, CorpusError> {
    let marker = read_marker(out)?;
    let listed: std::collections::HashSet<PathBuf> =
        marker.files.iter().map(PathBuf::from).collect();
    for name in &marker.files {
        let rel = Path::new(name);
        let plain = rel
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !plain {
            return Err(CorpusError::Usage(format!(
                "{}: refusing to replace this folder: {MARKER} lists `{name}`, outside the corpus",
                out.display()
            )));
        }
    }
    let mut to_remove = Vec::new();
    for entry in walkdir::WalkDir::new(out).min_depth(1) {
        let entry = entry.map_err(|e| {
            let p = e.path().unwrap_or(out).to_path_buf();
            io(&p, e.into())
        })?;
        let rel = entry.path().strip_prefix(out).unwrap_or(entry.path());
        let is_dir = entry.file_type().is_dir();
        let generated_dir = GENERATED_DIRS.iter().any(|d| Path::new(d) == rel);
        if rel == Path::new(MARKER) || (is_dir && generated_dir) {
            continue;
        }
        if !entry.file_type().is_file() || !listed.contains(rel) {
            return Err(CorpusError::Usage(format!(
                "{}: refusing to replace this folder: {} was not written by the generator \
                 (move it away first); nothing was removed",
                out.display(),
                entry.path().display()
            )));
        }
        to_remove.push(entry.path().to_path_buf());
    }
    Ok(to_remove)
}

/// Whether a generation may write `out`, judged without writing or removing
/// anything: absent, an empty folder, or (with `force`) a folder holding
/// only a previous generation's files ([`removable`]). What
/// [`prepare_out`] then does to it, it does only after this held.
fn check_out(out: &Path, force: bool) -> Result<(), CorpusError> {
    if target_holds_files(out, force)? {
        removable(out)?;
    }
    Ok(())
}

/// `out`'s state as a target: `Ok(false)` when absent or empty, `Ok(true)`
/// when a folder with entries that `force` allows replacing; refused when it
/// is not a folder, or holds entries without `force`.
fn target_holds_files(out: &Path, force: bool) -> Result<bool, CorpusError> {
    match std::fs::symlink_metadata(out) {
        Ok(m) if !m.is_dir() => Err(CorpusError::Usage(format!(
            "{}: not a directory",
            out.display()
        ))),
        Ok(_) => {
            let non_empty = std::fs::read_dir(out)
                .map_err(|e| io(out, e))?
                .next()
                .is_some();
            if non_empty && !force {
                return Err(CorpusError::Usage(format!(
                    "{} is not empty; pass --force to replace a corpus this command generated",
                    out.display()
                )));
            }
            Ok(non_empty)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io(out, e)),
    }
}

fn prepare_out(out: &Path, force: bool, plan: &CorpusPlan) -> Result<(), CorpusError> {
    if target_holds_files(out, force)? {
        remove_previous(out)?;
    }
    for d in ["conversations", "implicit", ".truth/daemon"] {
        let p = out.join(d);
        std::fs::create_dir_all(&p).map_err(|e| io(&p, e))?;
    }
    // The claim comes first: an interrupted generation can still be replaced.
    let marker = Marker {
        generator: MARKER_GENERATOR.to_string(),
        version: 1,
        files: planned_files(plan),
    };
    let bytes =
        serde_json::to_vec_pretty(&marker).map_err(|e| CorpusError::Build(e.to_string()))?;
    write(&out.join(MARKER), &bytes)?;
    Ok(())
}

/// Writes a new file; never follows or replaces an existing entry (a
/// symlink planted in a generated folder is not written through).
fn write(path: &Path, bytes: &[u8]) -> Result<u64, CorpusError> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| io(path, e))?;
    f.write_all(bytes).map_err(|e| io(path, e))?;
    Ok(bytes.len() as u64)
}

fn nonce(seed: u64, label: &str, id: &str) -> [u8; 12] {
    let b = rng::Rng::new(seed, &["nonce", label, id]).bytes(12);
    let mut n = [0u8; 12];
    n.copy_from_slice(&b);
    n
}

struct ConvStats {
    step_types: Vec<i64>,
    source_bytes: u64,
    view_bytes: u64,
    largest: u64,
    wal: bool,
    planted: Vec<secrets::Planted>,
}

fn generate_one(
    b: &Builder,
    cp: &ConvPlan,
    seed: u64,
    out: &Path,
    scratch: &Path,
    next: bool,
    plant: bool,
) -> Result<ConvStats, CorpusError> {
    let (cj, planted) = content::build_planted(cp, seed, plant);
    let mut asm = assemble::assemble(b, cp, cj)?;
    if next {
        asm.ordinary =
            release::present(&asm.ordinary).map_err(|e| CorpusError::Build(e.to_string()))?;
    }
    let conv = out.join("conversations");
    let mut source_bytes = 0;
    let mut largest = 0;
    let mut wal = false;
    match cp.format {
        Format::Sqlite => {
            let salt = rng::derive(seed, &["wal-salt", &cp.id]);
            let files = sqlite::build(&asm.rows, &scratch.join(format!("{}.tmp.db", cp.id)), salt)?;
            let n = write(&conv.join(format!("{}.db", cp.id)), &files.db)?;
            source_bytes += n;
            largest = largest.max(n);
            if let Some(w) = &files.wal {
                source_bytes += write(&conv.join(format!("{}.db-wal", cp.id)), w)?;
                wal = true;
            }
            if let Some(older) = &asm.older {
                let sealed = legacy::seal(older, nonce(seed, "older", &cp.id))?;
                source_bytes += write(&conv.join(format!("{}.pb", cp.id)), &sealed)?;
            }
        }
        Format::Protobuf => {
            let mut sealed = legacy::seal(&asm.trajectory, nonce(seed, "pb", &cp.id))?;
            if let Some(plan::NearMiss::LegacyAuth(f)) = cp.near_miss {
                let i = match f {
                    plan::AuthFault::TagByte => sealed.len() - 1,
                    plan::AuthFault::CiphertextByte => 12 + (sealed.len() - 28) / 2,
                };
                sealed[i] ^= 0x20;
            }
            let n = write(&conv.join(format!("{}.pb", cp.id)), &sealed)?;
            source_bytes += n;
            largest = largest.max(n);
        }
    }
    let daemon = out.join(".truth/daemon");
    let mut view_bytes = write(&daemon.join(format!("{}.full.json", cp.id)), &asm.full)?;
    view_bytes += write(
        &daemon.join(format!("{}.ordinary.json", cp.id)),
        &asm.ordinary,
    )?;
    Ok(ConvStats {
        step_types: asm.step_types,
        source_bytes,
        view_bytes,
        largest,
        wal,
        planted,
    })
}

fn implicit_trajectory(
    b: &Builder,
    ip: &plan::ImplicitPlan,
    seed: u64,
) -> Result<Vec<u8>, CorpusError> {
    let mut r = rng::Rng::new(seed, &["implicit", &ip.id]);
    let steps: Vec<serde_json::Value> = (0..ip.steps)
        .map(|i| {
            json!({"type": "CORTEX_STEP_TYPE_PLANNER_RESPONSE", "status": "CORTEX_STEP_STATUS_DONE",
                "metadata": {"createdAt": "2026-07-01T10:00:00Z", "sourceTrajectoryStepInfo": {"stepIndex": i}},
                "plannerResponse": {"response": text::sentence(&mut r, 8)}})
        })
        .collect();
    b.encode(
        "gemini_coder.Trajectory",
        json!({"trajectoryId": r.uuid(), "cascadeId": ip.id,
            "trajectoryType": "CORTEX_TRAJECTORY_TYPE_CHECKPOINT", "steps": steps,
            "source": "CORTEX_TRAJECTORY_SOURCE_CLI"}),
    )
}

/// The truth line of one conversation.
pub fn truth_line(cp: &ConvPlan) -> serde_json::Value {
    let (_, reason) = cp.expected();
    json!({
        "fileId": cp.id,
        "cascadeId": cp.id,
        "format": match cp.format { Format::Sqlite => "sqlite", Format::Protobuf => "protobuf" },
        "verdict": cp.expected_outcome().as_str(),
        "reasonClass": reason.map(|r| r.id()),
        "rules": cp.rules().iter().map(|r| r.id()).collect::<Vec<_>>(),
        "steps": cp.steps.len(),
        "fault": cp.fault_text(),
    })
}

/// The planned daemon faults, one `--fault` spec a line.
pub fn faults_text(p: &CorpusPlan) -> String {
    let mut s = String::new();
    for cp in &p.conversations {
        if let (Some(k), None) = (cp.fault, cp.near_miss) {
            s.push_str(&crate::sim::fault::FaultSpec::for_id(&cp.id, k).to_string());
            s.push('\n');
        }
    }
    s
}

fn step_type_name(b: &Builder, n: i64) -> String {
    b.schema
        .pool
        .get_enum_by_name("exa.cortex_pb.CortexStepType")
        .and_then(|e| e.get_value(n as i32))
        .map(|v| v.name().trim_start_matches("CORTEX_STEP_TYPE_").to_string())
        .unwrap_or_else(|| n.to_string())
}

/// Which release of the store a generation writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Release {
    /// The store as planned (the default corpus for the default options).
    #[default]
    Current,
    /// The same store after a new agy release ([`release::next_release`]).
    Next,
}

/// Generates a corpus.
pub fn generate(opts: &GenerateOptions) -> Result<Summary, CorpusError> {
    generate_release(opts, Release::Current)
}

/// Generates a corpus, of the planned store or of its next release.
pub fn generate_release(opts: &GenerateOptions, which: Release) -> Result<Summary, CorpusError> {
    generate_planned(opts, which, false, false)
}

/// Generates the planned store with fake credentials planted in command
/// outputs, file contents and user text (`corpus generate
/// --plant-secrets`), each recorded in `.truth/secrets.jsonl` (one object
/// a line: `value`, `kind`, `conversation`, `step`, `place`). Verdicts
/// are those of the planned store; the bytes are not (never current for
/// it: the stamp says `derived: secrets`).
pub fn generate_with_secrets(opts: &GenerateOptions) -> Result<Summary, CorpusError> {
    generate_planned(opts, Release::Current, false, true)
}

/// Generates a corpus; with `with_families`, the planned store plus the
/// subagent families of [`families::add_families`] (a home's CLI root).
fn generate_planned(
    opts: &GenerateOptions,
    which: Release,
    with_families: bool,
    plant: bool,
) -> Result<Summary, CorpusError> {
    let started = Instant::now();
    if opts.plan.conversations == 0 {
        return Err(CorpusError::Usage(
            "--conversations must be at least 1".into(),
        ));
    }
    let p = &opts.plan;
    if !(p.scale > 0.0 && p.scale <= 4.0) {
        return Err(CorpusError::Usage(format!(
            "--scale must be a finite number greater than 0 and at most 4, got {}",
            p.scale
        )));
    }
    // At least half of the corpus stays clean.
    if !(0.0..=0.5).contains(&p.near_miss_rate) {
        return Err(CorpusError::Usage(format!(
            "--near-miss-rate must be a finite number between 0 and 0.5, got {}",
            p.near_miss_rate
        )));
    }
    if !(0.0..=1.0).contains(&p.fault_rate) {
        return Err(CorpusError::Usage(format!(
            "--fault-rate must be a finite number between 0 and 1, got {}",
            p.fault_rate
        )));
    }
    let mut plan = plan_corpus(&opts.plan);
    let next = which == Release::Next;
    if next {
        release::next_release(&mut plan);
    }
    let families = if with_families {
        Some(families::add_families(&mut plan).ok_or_else(|| {
            CorpusError::Usage(format!(
                "the plan holds too few clean conversations for the {} subagent family members",
                families::ROLES.len()
            ))
        })?)
    } else {
        None
    };
    prepare_out(&opts.out, opts.force, &plan)?;
    let b = Builder::new(Schema::modeled()?);
    let scratch = tempfile::tempdir().map_err(|e| io(Path::new("<tempdir>"), e))?;
    let seed = plan.seed;
    let stats: Vec<ConvStats> = plan
        .conversations
        .par_iter()
        .map(|cp| generate_one(&b, cp, seed, &opts.out, scratch.path(), next, plant))
        .collect::<Result<_, _>>()?;

    let mut summary = Summary {
        conversations: plan.conversations.len(),
        ..Summary::default()
    };
    for ip in &plan.implicit {
        let t = implicit_trajectory(&b, ip, seed)?;
        let sealed = legacy::seal(&t, nonce(seed, "implicit", &ip.id))?;
        summary.source_bytes += write(
            &opts.out.join("implicit").join(format!("{}.pb", ip.id)),
            &sealed,
        )?;
    }
    let log = "I1101 09:59:58.120311 41872 main.go:61] agy 1.4.7 (cli) starting\n\
               I1101 09:59:58.301876 41872 server.go:210] language server initialising; store root ready\n\
               I1101 09:59:58.402113 41872 server.go:244] loaded 0 cascades from conversation summaries\n";
    let mut other_bytes = write(&opts.out.join("cli.log"), log.as_bytes())?;

    let mut lines = String::new();
    for (cp, st) in plan.conversations.iter().zip(&stats) {
        let t = truth_line(cp);
        lines.push_str(&t.to_string());
        lines.push('\n');
        let r = cp.expected().1;
        *summary
            .verdicts
            .entry(cp.expected_outcome().as_str().to_string())
            .or_default() += 1;
        if let Some(r) = r {
            *summary.reasons.entry(r.id().to_string()).or_default() += 1;
        }
        match cp.format {
            Format::Sqlite => summary.sqlite += 1,
            Format::Protobuf => summary.protobuf += 1,
        }
        summary.both += usize::from(cp.also_pb);
        summary.wal_files += usize::from(st.wal);
        summary.steps += st.step_types.len();
        summary.source_bytes += st.source_bytes;
        summary.largest_source = summary.largest_source.max(st.largest);
        other_bytes += st.view_bytes;
        for t in &st.step_types {
            *summary
                .step_types
                .entry(step_type_name(&b, *t))
                .or_default() += 1;
        }
    }
    let truth = opts.out.join(".truth");
    other_bytes += write(&truth.join("expected.jsonl"), lines.as_bytes())?;
    let scenario =
        serde_json::to_vec_pretty(&plan).map_err(|e| CorpusError::Build(e.to_string()))?;
    other_bytes += write(&truth.join("scenario.json"), &scenario)?;
    let faults = faults_text(&plan);
    if !faults.is_empty() {
        other_bytes += write(&truth.join("faults.txt"), faults.as_bytes())?;
    }
    if let Some(f) = &families {
        let mut bytes =
            serde_json::to_vec_pretty(f).map_err(|e| CorpusError::Build(e.to_string()))?;
        bytes.push(b'\n');
        other_bytes += write(&truth.join("families.json"), &bytes)?;
    }
    summary.families = families;
    if plant {
        let mut lines = String::new();
        for p in stats.iter().flat_map(|st| &st.planted) {
            let line = serde_json::to_string(p).map_err(|e| CorpusError::Build(e.to_string()))?;
            lines.push_str(&line);
            lines.push('\n');
        }
        other_bytes += write(&truth.join("secrets.jsonl"), lines.as_bytes())?;
    }
    // Last: the claim that the generation finished, and from what.
    let mut stamped = stamp(&opts.plan);
    if next {
        // Never current for the planned store (`is_current`), never the same bytes.
        stamped = stamp_next(&opts.plan);
    }
    if summary.families.is_some() {
        // A home's CLI root is not the planned store either.
        stamped = stamp_with(&opts.plan, "families");
    }
    if plant {
        // Nor is a store with planted secrets.
        stamped = stamp_with(&opts.plan, "secrets");
    }
    other_bytes += write(&opts.out.join(STAMP), &stamped)?;
    summary.total_bytes = summary.source_bytes + other_bytes;
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// The fingerprint of everything a generation's bytes derive from: this
/// crate's sources and the modeled schema (SHA-256, computed at build time).
/// Two builds with the same digest write the same corpus for the same
/// options.
pub const GENERATOR_DIGEST: &str = env!("AGY_CORPUS_BUILD_DIGEST");

/// The file a finished generation writes last: the generator digest and
/// the options it ran with.
pub const STAMP: &str = ".truth/generation.json";

fn stamp(plan: &PlanOptions) -> Vec<u8> {
    stamp_of(plan, None)
}

fn stamp_next(plan: &PlanOptions) -> Vec<u8> {
    stamp_with(plan, "next")
}

/// The stamp of a store derived from the planned one (`what`: `next`, the
/// next release; `families`, a home's CLI root).
fn stamp_with(plan: &PlanOptions, what: &str) -> Vec<u8> {
    let key = if what == "next" { "release" } else { "derived" };
    stamp_of(plan, Some((key, what)))
}

/// The generator digest and the options, with the derived store's mark.
fn stamp_of(plan: &PlanOptions, mark: Option<(&str, &str)>) -> Vec<u8> {
    let mut v = json!({
        "generatorDigest": GENERATOR_DIGEST,
        "conversations": plan.conversations,
        "seed": plan.seed,
        "nearMissRate": plan.near_miss_rate,
        "faultRate": plan.fault_rate,
        "scale": plan.scale,
    });
    if let (Some((key, what)), Some(o)) = (mark, v.as_object_mut()) {
        o.insert(key.to_string(), json!(what));
    }
    let mut bytes = serde_json::to_vec_pretty(&v).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// Whether `out` holds a finished generation that this build of the
/// generator would write again byte for byte with `plan`: its stamp names
/// this generator digest and these options. A corpus from an older
/// generator, an interrupted generation or a foreign folder is not current.
pub fn is_current(out: &Path, plan: &PlanOptions) -> bool {
    std::fs::read(out.join(STAMP)).is_ok_and(|b| b == stamp(plan))
}
