//! Compiles the modeled schema in `proto/` with protox (no `protoc`) into a
//! FileDescriptorSet that the library embeds with `include_bytes!`.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)
use prost::Message;
use std::path::PathBuf;

include!("../../build-support/roots.rs");

fn main() {
    println!("cargo:rerun-if-changed=../../proto");
    let fds = protox::Compiler::new(["../../proto"])
        .expect("protox include path")
        .include_imports(true)
        .include_source_info(false)
        .open_files(roots("../../proto"))
        .unwrap_or_else(|e| panic!("modeled schema does not compile: {e:?}"))
        .file_descriptor_set();
    let out =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("modeled_schema.pb");
    std::fs::write(&out, fds.encode_to_vec()).expect("write modeled_schema.pb");

    // google.protobuf.Struct alone, from protox's bundled well-known types.
    let structs = protox::Compiler::new(["../../proto"])
        .expect("protox include path")
        .include_imports(true)
        .include_source_info(false)
        .open_files(["google/protobuf/struct.proto"])
        .unwrap_or_else(|e| panic!("struct.proto: {e:?}"))
        .file_descriptor_set();
    let out = out.with_file_name("struct_schema.pb");
    std::fs::write(&out, structs.encode_to_vec()).expect("write struct_schema.pb");
}
