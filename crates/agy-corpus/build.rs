//! Compiles the modeled schema in the workspace's `proto/` with protox (no
//! `protoc`) into a FileDescriptorSet this crate embeds. The `.proto` files
//! are the format's data; the descriptor pool built from them here is the
//! corpus's own, not the reader's.
//!
//! It also fingerprints everything a generation's bytes derive from (this
//! crate's sources and the modeled schema) as `AGY_CORPUS_BUILD_DIGEST`, so
//! a cached corpus can tell whether this build would write it differently.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)
use prost::Message;
use sha2::{Digest, Sha256};
use std::path::PathBuf;

/// SHA-256 over the relative path and bytes of every file below `dirs`, in
/// path order.
fn digest(dirs: &[&str]) -> String {
    let mut files: Vec<PathBuf> = Vec::new();
    for d in dirs {
        for e in walkdir::WalkDir::new(d).sort_by_file_name() {
            let e = e.unwrap_or_else(|e| panic!("reading {d}: {e}"));
            if e.file_type().is_file() {
                files.push(e.into_path());
            }
        }
    }
    let mut h = Sha256::new();
    for f in &files {
        let bytes = std::fs::read(f).unwrap_or_else(|e| panic!("reading {}: {e}", f.display()));
        let name = f.to_string_lossy();
        h.update((name.len() as u64).to_le_bytes());
        h.update(name.as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

const PROTO: &str = "../../proto";
include!("../../build-support/roots.rs");

fn main() {
    println!("cargo:rerun-if-changed={PROTO}");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=build.rs");
    let generator = digest(&["src", "build.rs", PROTO]);
    println!("cargo:rustc-env=AGY_CORPUS_BUILD_DIGEST={generator}");
    let fds = protox::Compiler::new([PROTO])
        .expect("protox include path")
        .include_imports(true)
        .include_source_info(false)
        .open_files(roots(PROTO))
        .unwrap_or_else(|e| panic!("modeled schema does not compile: {e:?}"))
        .file_descriptor_set();
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("corpus_schema.pb");
    std::fs::write(&out, fds.encode_to_vec()).expect("write corpus_schema.pb");
}
