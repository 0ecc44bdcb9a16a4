//! Compiles the modeled schema in the workspace's `proto/` with protox (no
//! `protoc`) into a FileDescriptorSet this crate embeds. The `.proto` files
//! are the format's data; the descriptor pool built from them here is the
//! corpus's own, not the reader's.
use prost::Message;
use std::path::PathBuf;

const PROTO: &str = "../../proto";
const ROOTS: &[&str] = &[
    "gemini_coder/proto/trajectory.proto",
    "jetski/cortex/core/tools_pb/tools.proto",
    "jetski/language_server_pb/language_server.proto",
];

fn main() {
    println!("cargo:rerun-if-changed={PROTO}");
    let fds = protox::Compiler::new([PROTO])
        .expect("protox include path")
        .include_imports(true)
        .include_source_info(false)
        .open_files(ROOTS)
        .unwrap_or_else(|e| panic!("modeled schema does not compile: {e:?}"))
        .file_descriptor_set();
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("corpus_schema.pb");
    std::fs::write(&out, fds.encode_to_vec()).expect("write corpus_schema.pb");
}
