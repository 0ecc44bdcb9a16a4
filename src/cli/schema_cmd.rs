//! `agy-audit schema dump|info`.

use crate::schema::{Schema, MODELED_SET};
use crate::util::atomic::{write_file, WriteOptions};
use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum SchemaCommand {
    /// Write the embedded modeled FileDescriptorSet (binary) to a file or stdout.
    Dump(DumpArgs),
    /// Print a descriptor set's files, message and enum counts and SHA-256.
    Info(InfoArgs),
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
                    eprintln!("wrote {} ({} bytes)", path.display(), MODELED_SET.len());
                }
                None => {
                    use std::io::Write;
                    std::io::stdout().write_all(MODELED_SET)?;
                }
            }
            Ok(0)
        }
        SchemaCommand::Info(a) => {
            let schema = Schema::load(a.schema.as_deref())?;
            {
                use std::io::Write as _;
                std::io::stdout()
                    .lock()
                    .write_all(describe(&schema).as_bytes())?;
            }
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
