//! The one owner of an `audit-sweep` output folder's layout: where the
//! manifest, `sessions.csv`, the two shape listings and each session's
//! `corpus/` files are, how the sweep creates and writes them, and where
//! the commands that read a sweep back (`format-audit`, `export-check`,
//! the shape listings of a resumed sweep) find them. No other module spells
//! a name of this folder.
//!
//! ```text
//! <out>/                         0700
//!   manifest.json                the sweep's record and commit point
//!   sessions.csv                 one row per recorded session
//!   shapes-ordinary.tsv          the response shape listings
//!   shapes-full.tsv
//!   corpus/                      0700
//!     <fileId>.full.json         the full answer, as received
//!     <fileId>.ordinary.json     the ordinary answer, as received
//!     <fileId>.trajectory.json   the sidecar, when verified
//! ```
//!
//! A session's `corpus/` files are written by a [`SessionWriter`], opened
//! before the session's fetch and committed (each file's bytes synced, then
//! renamed under its name) once the session is judged; the renames become
//! durable with the next [`SweepDir::sync_corpus`], which the manifest's
//! writer runs before every write of the manifest (ARCHITECTURE.md, "A
//! sweep's manifest is its commit point").

use crate::error::{Error, Result};
use crate::util::atomic::{sync_dir, write_file, Body, Contents, WriteOptions, PRIVATE_MODE};
use std::path::{Path, PathBuf};

/// The folder of the sessions' saved answers and sidecars.
pub const CORPUS_DIR: &str = "corpus";

/// One of a session's saved answers under `corpus/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The full (unrehydrated) GetCascadeTrajectory answer.
    Full,
    /// The ordinary GetCascadeTrajectory answer.
    Ordinary,
}

impl Answer {
    fn suffix(self) -> &'static str {
        match self {
            Answer::Full => "full.json",
            Answer::Ordinary => "ordinary.json",
        }
    }
}

/// An `audit-sweep` output folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepDir {
    out: PathBuf,
}

/// The options every file of the folder is written with: private, and
/// replaced when it exists (a `--resume` rewrites its own files).
fn private() -> WriteOptions {
    WriteOptions {
        force: true,
        mode: Some(PRIVATE_MODE),
        protected: Vec::new(),
    }
}

fn mkdir_private(p: &Path) -> Result<()> {
    let mut b = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(p).map_err(|e| Error::io(p, e))
}

impl SweepDir {
    /// The folder `out` (`audit-sweep --out`).
    pub fn new(out: impl Into<PathBuf>) -> SweepDir {
        SweepDir { out: out.into() }
    }

    /// The folder of the manifest read from `manifest_file` (the folder it
    /// sits in; `.` for a bare file name).
    pub fn of_manifest(manifest_file: &Path) -> SweepDir {
        let dir = manifest_file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        SweepDir::new(dir)
    }

    /// The folder itself.
    pub fn path(&self) -> &Path {
        &self.out
    }

    /// `manifest.json`.
    pub fn manifest(&self) -> PathBuf {
        self.out.join(crate::well_known::MANIFEST_FILE)
    }

    /// `sessions.csv`.
    pub fn csv(&self) -> PathBuf {
        self.out.join(crate::manifest::CSV_FILE)
    }

    /// A shape listing beside the manifest (`shapes::ORDINARY_FILE`,
    /// `shapes::FULL_FILE`).
    pub fn listing(&self, name: &str) -> PathBuf {
        self.out.join(name)
    }

    /// `corpus/`.
    pub fn corpus(&self) -> PathBuf {
        self.out.join(CORPUS_DIR)
    }

    /// `corpus/<file_id>.full.json` or `.ordinary.json`.
    pub fn answer(&self, file_id: &str, which: Answer) -> PathBuf {
        self.corpus().join(format!("{file_id}.{}", which.suffix()))
    }

    /// `corpus/<file_id>.trajectory.json`.
    pub fn sidecar(&self, file_id: &str) -> PathBuf {
        self.corpus().join(format!("{file_id}.trajectory.json"))
    }

    /// Creates the folder and its `corpus/` (mode 0700); the folder must
    /// not exist (the sweep's start checks say why it does).
    pub fn create(&self) -> Result<()> {
        mkdir_private(&self.out)?;
        mkdir_private(&self.corpus())
    }

    /// Makes a `--resume`d folder ready: its `corpus/` created when
    /// missing, and the temp files a killed run left behind removed
    /// ([`remove_own_temp_files`]) from the folder and from `corpus/`.
    pub fn reopen(&self) -> Result<()> {
        let corpus = self.corpus();
        if !corpus.is_dir() {
            mkdir_private(&corpus)?;
        }
        // A run killed mid-write (kill -9) leaves its temp files behind.
        remove_own_temp_files(&self.out)?;
        remove_own_temp_files(&corpus)
    }

    /// Makes the renames of the session files committed so far durable
    /// (one sync of `corpus/`; each file's bytes were synced before its
    /// rename).
    pub fn sync_corpus(&self) {
        let corpus = self.corpus();
        if corpus.is_dir() {
            sync_dir(&corpus);
        }
    }

    /// Writes one of the folder's own files (the manifest, the CSV, a
    /// listing) atomically, file and folder synced.
    pub fn write(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        write_file(path, bytes, &private())?;
        Ok(())
    }

    /// The writer of `file_id`'s session files, opened before its fetch.
    pub fn open_session(&self, file_id: &str) -> SessionWriter {
        SessionWriter {
            dir: self.clone(),
            file_id: file_id.to_string(),
        }
    }
}

/// What a session leaves under `corpus/`: the answers it received (a large
/// one renamed into place from the staged file of `corpus/` it arrived in,
/// a small one written from memory) and its sidecar, each written only when
/// present.
#[derive(Default)]
pub struct SessionFiles<'a> {
    pub full: Option<Body<'a>>,
    pub ordinary: Option<Body<'a>>,
    pub sidecar: Option<&'a [u8]>,
}

/// One session's files, from its fetch to its verdict: opened by
/// [`SweepDir::open_session`], committed by [`SessionWriter::commit`].
#[derive(Debug)]
pub struct SessionWriter {
    dir: SweepDir,
    file_id: String,
}

/// A session's files renamed into `corpus/` (the event sinks receive):
/// which of them it wrote, under which names. The renames are durable once
/// the folder is next synced (before the manifest that records the
/// session).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    pub file_id: String,
    /// The paths written, in the order full, ordinary, sidecar.
    pub files: Vec<PathBuf>,
}

impl SessionWriter {
    /// The session's file id.
    pub fn file_id(&self) -> &str {
        &self.file_id
    }

    /// Writes each present file (bytes synced, then renamed under its
    /// name; the folder is synced later, once for many sessions, by
    /// [`SweepDir::sync_corpus`]). Stops at the first file that cannot be
    /// written, naming it.
    pub fn commit(self, files: SessionFiles<'_>) -> Result<Committed> {
        let opts = private();
        let mut written = Vec::new();
        let id = &self.file_id;
        let sidecar = files
            .sidecar
            .as_ref()
            .map(|b| Body::Write(b as &dyn Contents));
        for (path, body) in [
            (self.dir.answer(id, Answer::Full), files.full),
            (self.dir.answer(id, Answer::Ordinary), files.ordinary),
            (self.dir.sidecar(id), sidecar),
        ] {
            if let Some(body) = body {
                body.commit_unsynced_dir(&path, &opts)?;
                written.push(path);
            }
        }
        Ok(Committed {
            file_id: self.file_id,
            files: written,
        })
    }
}

/// Removes, directly in `dir`, the temp files this tool's atomic writer
/// names (`.agy-audit-<random>.tmp`, regular files, not links) that a killed
/// run left behind: they are the sweep's own, in its own folder, and never
/// a finished output. Nothing else is touched.
fn remove_own_temp_files(dir: &Path) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !crate::util::atomic::is_own_temp_name(name) {
            continue;
        }
        let is_file = entry
            .file_type()
            .map(|t| t.is_file() && !t.is_symlink())
            .unwrap_or(false);
        if is_file {
            let path = entry.path();
            std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: &[u8] = b"F";

    #[test]
    fn the_layout_is_spelled_here_once() {
        let d = SweepDir::new("/s");
        assert_eq!(d.manifest(), Path::new("/s/manifest.json"));
        assert_eq!(d.csv(), Path::new("/s/sessions.csv"));
        assert_eq!(
            d.answer("x", Answer::Full),
            Path::new("/s/corpus/x.full.json")
        );
        assert_eq!(
            d.answer("x", Answer::Ordinary),
            Path::new("/s/corpus/x.ordinary.json")
        );
        assert_eq!(d.sidecar("x"), Path::new("/s/corpus/x.trajectory.json"));
        assert_eq!(
            SweepDir::of_manifest(Path::new("manifest.json")).path(),
            Path::new(".")
        );
        assert_eq!(
            SweepDir::of_manifest(Path::new("/a/b/manifest.json")).path(),
            Path::new("/a/b")
        );
    }

    #[test]
    fn a_session_commits_only_the_files_it_has() {
        let t = tempfile::tempdir().unwrap();
        let d = SweepDir::new(t.path().join("out"));
        d.create().unwrap();
        let w = d.open_session("id1");
        assert_eq!(w.file_id(), "id1");
        let c = w
            .commit(SessionFiles {
                full: Some(Body::Write(&F)),
                ordinary: None,
                sidecar: Some(b"S"),
            })
            .unwrap();
        assert_eq!(
            c.files,
            vec![d.answer("id1", Answer::Full), d.sidecar("id1")]
        );
        assert_eq!(std::fs::read(d.answer("id1", Answer::Full)).unwrap(), b"F");
        assert!(!d.answer("id1", Answer::Ordinary).exists());
    }

    #[test]
    fn a_commit_that_cannot_write_names_the_file() {
        let t = tempfile::tempdir().unwrap();
        // no corpus/ folder: the first file cannot be written
        let d = SweepDir::new(t.path());
        let e = d
            .open_session("id2")
            .commit(SessionFiles {
                full: Some(Body::Write(&F)),
                ..Default::default()
            })
            .unwrap_err();
        assert!(e.to_string().contains("id2.full.json"), "{e}");
    }
}
