//! `agy-audit verify-capture`: the whole verification on captured files,
//! without a daemon (the specification's opt-in `TestNativeEvidence`, as a
//! command a user with real captures runs).

use super::common::DecodeArgs;
use crate::pipeline::{audit_prepared, prepare, AuditContext, Captured};
use crate::util::atomic::{check_outputs, write_file, WriteOptions};
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;

/// Verify one conversation from captured files alone: its stored source
/// (strict decode), the full raw GetCascadeTrajectory answer it must equal,
/// and the ordinary answer its projection must equal; prints the verdict
/// with its reason and the attestation's digests. Each answer may be the
/// whole response or the bare trajectory; both are checked as strictly as a
/// live answer. Nothing is fetched; the captured files are only read.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit codes: 0 verified, 1 error or an answer that is not a valid response (not fetched), 2 usage, 3 unknown, 4 incomplete."
)]
pub struct VerifyCaptureArgs {
    /// The conversation's stored source: a SQLite .db (its -wal beside it)
    /// or a legacy .pb (an X.pb whose X.db exists means the .db: SQLite
    /// wins, as agy and its daemon read it).
    #[arg(long, value_name = "FILE")]
    pub db: PathBuf,
    /// The full raw answer (verbosity FULL, disableRehydration).
    #[arg(long, value_name = "FILE")]
    pub full: PathBuf,
    /// The ordinary (default) answer.
    #[arg(long, value_name = "FILE")]
    pub ordinary: PathBuf,
    /// Also write the attested sidecar here (verified only; never over an
    /// input, an existing file only with --force).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace an existing --out file.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub decode: DecodeArgs,
}

pub fn run(a: VerifyCaptureArgs) -> anyhow::Result<i32> {
    // "SQLite wins" for an explicit X.pb too: agy (and its daemon) read X.db
    let db = crate::roots::sqlite_wins(&a.db);
    if db != a.db {
        crate::note!(
            "verify-capture: {} is shadowed by {} (SQLite wins); verifying the .db",
            a.db.display(),
            db.display()
        );
    }
    let mut inputs = vec![a.db.clone(), db.clone(), a.full.clone(), a.ordinary.clone()];
    inputs.extend(crate::source::sqlite::companions(&db));
    inputs.extend(a.decode.inputs());
    if let Some(out) = &a.out {
        check_outputs(&[out.as_path()], &inputs)?;
    }
    let (schema, key) = a.decode.load()?;
    let read = |p: &PathBuf| {
        crate::util::bounded::read_regular(p, crate::util::bounded::InputKind::Answer)
            .with_context(|| format!("reading {}", p.display()))
    };
    let captured = Captured {
        full: (a.full.display().to_string(), read(&a.full)?),
        ordinary: (a.ordinary.display().to_string(), read(&a.ordinary)?),
    };
    let ctx = AuditContext {
        schema: &schema,
        key: &key,
        client: Some(&captured),
        bracket_retries: 0,
    };
    let prepared = prepare(&ctx, &db)?;
    let r = audit_prepared(&ctx, prepared);
    let s = &r.record;
    outln!(
        "{} {}{}",
        s.verdict_str().to_uppercase(),
        s.file_id,
        s.reason_text()
            .map(|x| format!(" ({x})"))
            .unwrap_or_default()
    );
    outln!("profile {}", s.profile);
    outln!("sourceDigest {}", s.source_digest);
    if let Some(d) = &s.payload_digest {
        outln!("payloadDigest {d}");
    }
    for p in &s.rpc_only_fields {
        outln!("rpcOnlyField {p}");
    }
    if let (Some(out), Some(bytes)) = (&a.out, &r.sidecar) {
        write_file(
            out,
            bytes,
            &WriteOptions {
                force: a.force,
                mode: Some(0o600),
                protected: inputs,
            },
        )?;
        crate::note!("wrote {}", out.display());
    }
    Ok(s.result.exit_code())
}
