//! What a hostile user found (issue 31), for the schema commands, through the
//! real binary:
//!
//! - item 10: a descriptor whose `syntax` is neither absent, `proto2` nor
//!   `proto3` (protoc writes `editions` for edition-2023 files) made
//!   prost-reflect 0.16 panic (exit 101) at every pool load; each entry point
//!   must refuse it cleanly, naming the file, the input and the syntax;
//! - item 7: `schema extract` extracts every well-formed record (files that
//!   only public-import others included) and lists every one it does not
//!   use, with its offset and reason;
//! - item 1: no schema command writes onto a file it was given to read,
//!   whatever the flags (`--force`, symlinks, hard links).

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

use agy_audit::schema::extract::{extract, read_manifest, verify, ExtractError, SkipReason};
use agy_audit::schema::MODELED_SET;
use prost::Message;
use prost_types::{
    DescriptorProto, FieldDescriptorProto, FileDescriptorProto, FileDescriptorSet, FileOptions,
};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_agy-audit"))
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/schema")
        .join(name)
}

/// The 24-byte record the fuzzer found: `a.proto`, one message `M`,
/// `syntax = "editions"`.
const EDITIONS_RECORD: &[u8] = b"\x0a\x07a.proto\x22\x03\x0a\x01M\x62\x08editions";

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A clean refusal: a non-zero exit that is no panic (101), and standard
/// error naming every one of `words`.
fn assert_refused(o: &Output, words: &[&str], what: &str) {
    let (out, err) = text(o);
    let code = o.status.code();
    assert!(
        code.is_some() && code != Some(0) && code != Some(101),
        "{what}: exit {code:?}\nstdout: {out}\nstderr: {err}"
    );
    assert!(!err.contains("panicked"), "{what}: {err}");
    for w in words {
        assert!(err.contains(w), "{what}: stderr does not name {w:?}: {err}");
    }
}

#[test]
fn the_fixtures_are_the_fuzzer_s_bytes() {
    let record = std::fs::read(fixture("editions-record.bin")).unwrap();
    assert_eq!(record, EDITIONS_RECORD);
    let set = std::fs::read(fixture("editions-set.pb")).unwrap();
    let mut wrapped = vec![0x0a, EDITIONS_RECORD.len() as u8];
    wrapped.extend(EDITIONS_RECORD);
    assert_eq!(set, wrapped);
    let f = FileDescriptorSet::decode(&set[..]).unwrap();
    assert_eq!(f.file.len(), 1);
    assert_eq!(f.file[0].syntax(), "editions");
}

// ---------------------------------------------------------------- item 10

#[test]
fn extract_refuses_an_editions_record_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    for input in ["editions-record.bin", "editions-set.pb"] {
        let out = dir.path().join(format!("{input}.set"));
        let o = bin()
            .args(["schema", "extract", "--out"])
            .arg(&out)
            .arg(fixture(input))
            .output()
            .unwrap();
        assert_refused(&o, &["a.proto", "\"editions\"", input], "schema extract");
        assert!(!out.exists(), "nothing written");
    }
}

#[test]
fn every_schema_load_refuses_an_editions_set_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let set = fixture("editions-set.pb");
    let set_s = set.to_str().unwrap();
    let words = ["a.proto", "\"editions\"", "editions-set.pb"];

    let o = bin()
        .args(["schema", "info", "--schema"])
        .arg(&set)
        .output()
        .unwrap();
    assert_refused(&o, &words, "schema info --schema");

    // The same through the environment.
    let o = bin()
        .args(["schema", "info"])
        .env("AGY_AUDIT_SCHEMA", &set)
        .output()
        .unwrap();
    assert_refused(&o, &words, "schema info (AGY_AUDIT_SCHEMA)");

    // A gzip-compressed copy.
    let gz = dir.path().join("editions-set.pb.gz");
    {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&std::fs::read(&set).unwrap()).unwrap();
        std::fs::write(&gz, e.finish().unwrap()).unwrap();
    }
    let o = bin()
        .args(["schema", "info", "--schema"])
        .arg(&gz)
        .output()
        .unwrap();
    assert_refused(
        &o,
        &["a.proto", "\"editions\"", "editions-set.pb.gz"],
        "schema info --schema (gzip)",
    );

    for (old, new) in [(set_s, "modeled"), ("modeled", set_s)] {
        let o = bin().args(["schema", "diff", old, new]).output().unwrap();
        assert_refused(&o, &words, "schema diff");
        let o = bin()
            .args(["schema", "diff", "--json", old, new])
            .output()
            .unwrap();
        assert_refused(&o, &words, "schema diff --json");
    }

    // bundle: as --base and as --from.
    let modeled = dir.path().join("modeled.pb");
    std::fs::write(&modeled, MODELED_SET).unwrap();
    let out = dir.path().join("bundle.pb");
    for (base, from) in [
        (set.clone(), modeled.clone()),
        (modeled.clone(), set.clone()),
    ] {
        let o = bin()
            .args(["schema", "bundle", "--base"])
            .arg(&base)
            .arg("--from")
            .arg(&from)
            .args(["--add", "M", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        assert_refused(&o, &words, "schema bundle");
        assert!(!out.exists());
    }
    let o = bin()
        .args(["schema", "bundle", "--base", "modeled", "--from"])
        .arg(&set)
        .args(["--add", "M", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_refused(&o, &words, "schema bundle --base modeled");

    // A decoding command loading it for inspection, and one pinning it.
    let src = dir.path().join("x.db");
    let o = bin()
        .args(["export-offline", "--schema"])
        .arg(&set)
        .arg(&src)
        .output()
        .unwrap();
    assert_refused(&o, &words, "export-offline --schema");
    let sha = agy_audit::util::hex(&Sha256::digest(std::fs::read(&set).unwrap()));
    let o = bin()
        .args(["sync", "--schema"])
        .arg(&set)
        .args(["--schema-sha256", &sha])
        .arg(&src)
        .output()
        .unwrap();
    assert_refused(&o, &words, "sync --schema --schema-sha256");
}

#[test]
fn the_library_loaders_return_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("e.pb");
    std::fs::copy(fixture("editions-set.pb"), &p).unwrap();
    let e = agy_audit::schema::Schema::from_file(&p).unwrap_err();
    assert!(
        matches!(&e, agy_audit::schema::SchemaError::Syntax { source, .. }
            if source.file == "a.proto" && source.syntax == "editions"),
        "{e:?}"
    );
    let set = std::fs::read(fixture("editions-set.pb")).unwrap();
    let e = agy_audit::schema::decode_pool(&set).unwrap_err();
    assert!(
        matches!(&e, agy_audit::schema::PoolError::Syntax(s) if s.file == "a.proto"),
        "{e:?}"
    );
    let e = agy_audit::schema::bundle::bundle(&set, MODELED_SET, &["M".to_string()]).unwrap_err();
    assert!(
        matches!(e, agy_audit::schema::bundle::BundleError::Syntax { .. }),
        "{e:?}"
    );
    let e = agy_audit::schema::bundle::bundle(MODELED_SET, &set, &["M".to_string()]).unwrap_err();
    assert!(
        matches!(e, agy_audit::schema::bundle::BundleError::Syntax { .. }),
        "{e:?}"
    );
    // Absent, proto2 and proto3 pass; anything else (the empty string too)
    // is refused.
    for (syntax, ok) in [
        (None, true),
        (Some("proto2"), true),
        (Some("proto3"), true),
        (Some("editions"), false),
        (Some(""), false),
        (Some("proto4"), false),
    ] {
        let f = FileDescriptorProto {
            name: Some("s.proto".into()),
            syntax: syntax.map(str::to_string),
            message_type: vec![DescriptorProto {
                name: Some("S".into()),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(
            agy_audit::schema::check_file_syntax(&f).is_ok(),
            ok,
            "{syntax:?}"
        );
        let set = FileDescriptorSet { file: vec![f] }.encode_to_vec();
        assert_eq!(
            agy_audit::schema::decode_pool(&set).is_ok(),
            ok,
            "{syntax:?}"
        );
    }
}

// ----------------------------------------------------------------- item 7

fn file(name: &str, package: &str) -> FileDescriptorProto {
    FileDescriptorProto {
        name: Some(name.into()),
        package: Some(package.into()),
        syntax: Some("proto3".into()),
        ..Default::default()
    }
}

fn message(name: &str, fields: Vec<FieldDescriptorProto>) -> DescriptorProto {
    DescriptorProto {
        name: Some(name.into()),
        field: fields,
        ..Default::default()
    }
}

fn message_field(name: &str, number: i32, type_name: &str) -> FieldDescriptorProto {
    FieldDescriptorProto {
        name: Some(name.into()),
        number: Some(number),
        label: Some(1),
        r#type: Some(11),
        type_name: Some(type_name.into()),
        json_name: Some(name.into()),
        ..Default::default()
    }
}

/// `dep/a.proto` declares `dep.A`.
fn rec_a() -> FileDescriptorProto {
    let mut f = file("dep/a.proto", "dep");
    f.message_type.push(message("A", vec![]));
    f
}

/// `wrap/w.proto` declares nothing: it only public-imports `dep/a.proto`,
/// like golang/protobuf's `ptypes/*` wrappers.
fn rec_w() -> FileDescriptorProto {
    let mut f = file("wrap/w.proto", "wrap");
    f.dependency.push("dep/a.proto".into());
    f.public_dependency.push(0);
    f.options = Some(FileOptions {
        go_package: Some("example.com/wrap;wrap".into()),
        ..Default::default()
    });
    f
}

/// `b/b.proto` uses `dep.A` through the wrapper's public import.
fn rec_b() -> FileDescriptorProto {
    let mut f = file("b/b.proto", "b");
    f.dependency.push("wrap/w.proto".into());
    f.message_type
        .push(message("B", vec![message_field("a", 1, ".dep.A")]));
    f
}

/// Bytes around the records, each record's offset returned in order.
fn binary(records: &[Vec<u8>]) -> (Vec<u8>, Vec<usize>) {
    let mut b = b"\x7fELF\x02\x01\x01 not a real program \x00\xff\xfe".to_vec();
    let mut offsets = Vec::new();
    for (i, r) in records.iter().enumerate() {
        b.extend(std::iter::repeat_n(0xa5u8, 7 + 3 * i));
        b.extend(b"\xff\x00");
        offsets.push(b.len());
        b.extend(r);
        b.extend(b"\xff\xff\xff");
    }
    b.extend(b"\x00 trailing bytes \x00");
    (b, offsets)
}

#[test]
fn extract_counts_every_record_it_does_not_use() {
    let a = rec_a().encode_to_vec();
    let w = rec_w().encode_to_vec();
    let bb = rec_b().encode_to_vec();
    let e = EDITIONS_RECORD.to_vec();
    let (b, at) = binary(&[a.clone(), w.clone(), e.clone(), bb.clone(), a.clone()]);
    let x = extract(&b).expect("extract");

    // Every well-formed record is extracted, the wrapper included...
    let names: Vec<&str> = x.records.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["dep/a.proto", "wrap/w.proto", "b/b.proto"]);
    assert_eq!(
        x.records.iter().map(|r| r.offset).collect::<Vec<_>>(),
        [at[0] as u64, at[1] as u64, at[3] as u64]
    );
    assert_eq!(x.files, ["dep/a.proto", "wrap/w.proto", "b/b.proto"]);
    let pool = agy_audit::schema::decode_pool(&x.set).unwrap();
    assert!(pool.get_message_by_name("b.B").is_some());
    // ... each as its original bytes.
    let set = FileDescriptorSet::decode(&x.set[..]).unwrap();
    assert_eq!(set.file[1].encode_to_vec(), w);

    // ... or listed as skipped, with its offset and reason: none is dropped
    // silently.
    assert_eq!(x.skipped.len(), 2, "{:?}", x.skipped);
    let ed = &x.skipped[0];
    assert_eq!(ed.offset, at[2] as u64);
    assert_eq!(ed.length, e.len() as u64);
    assert_eq!(ed.name.as_deref(), Some("a.proto"));
    assert_eq!(
        ed.reason,
        SkipReason::UnsupportedSyntax {
            syntax: "editions".into()
        }
    );
    let dup = &x.skipped[1];
    assert_eq!(dup.offset, at[4] as u64);
    assert_eq!(dup.name.as_deref(), Some("dep/a.proto"));
    assert_eq!(dup.reason, SkipReason::Duplicate { of: at[0] as u64 });
    assert_eq!(x.duplicates, [("dep/a.proto".to_string(), at[4] as u64)]);
    for off in &at {
        let off = *off as u64;
        assert!(
            x.records.iter().any(|r| r.offset == off) || x.skipped.iter().any(|s| s.offset == off),
            "the record at {off} is counted nowhere"
        );
    }

    // The manifest lists them; verify rechecks them; an old manifest
    // without `skipped` still reads.
    let m = x.manifest(Some("1.2.3"));
    let v = serde_json::to_value(&m).unwrap();
    let sk = v["skipped"].as_array().expect("skipped array");
    assert_eq!(sk.len(), 2);
    assert_eq!(sk[0]["offset"], at[2] as u64);
    assert_eq!(sk[0]["name"], "a.proto");
    assert!(
        sk[0]["reason"].as_str().unwrap().contains("\"editions\""),
        "{sk:?}"
    );
    assert_eq!(sk[1]["offset"], at[4] as u64);
    assert!(verify(&m, &b).is_empty());
    let mut flipped = b.clone();
    flipped[at[2] + 3] ^= 1;
    assert!(
        verify(&m, &flipped)
            .iter()
            .any(|x| x.offset == at[2] as u64),
        "a changed skipped record is named"
    );
    let dir = tempfile::tempdir().unwrap();
    let mut old = v.clone();
    old.as_object_mut().unwrap().remove("skipped");
    let op = dir.path().join("old.manifest.json");
    std::fs::write(&op, serde_json::to_vec(&old).unwrap()).unwrap();
    let read = read_manifest(&op).unwrap();
    assert!(read.skipped.is_empty());
    assert!(verify(&read, &b).is_empty());

    // Without the wrapper, b/b.proto's import is missing: the wrapper is
    // what the set needs.
    let (b2, _) = binary(&[a.clone(), bb.clone()]);
    let err = extract(&b2).unwrap_err().to_string();
    assert!(err.contains("imports wrap/w.proto"), "{err}");
}

#[test]
fn a_kept_file_importing_an_editions_record_stops_extraction() {
    let mut f = file("c/c.proto", "c");
    f.dependency.push("a.proto".into());
    f.message_type.push(message("C", vec![]));
    let (b, at) = binary(&[EDITIONS_RECORD.to_vec(), f.encode_to_vec()]);
    let e = extract(&b).unwrap_err();
    assert!(
        matches!(&e, ExtractError::UnsupportedImport { file, import, offset, syntax }
            if file == "c/c.proto" && import == "a.proto" && *offset == at[0] as u64 && syntax == "editions"),
        "{e:?}"
    );
    let t = e.to_string();
    assert!(t.contains("c/c.proto") && t.contains("a.proto") && t.contains("\"editions\""));
}

#[test]
fn cli_extract_prints_and_records_what_it_skipped() {
    let (b, at) = binary(&[
        rec_a().encode_to_vec(),
        rec_w().encode_to_vec(),
        EDITIONS_RECORD.to_vec(),
        rec_b().encode_to_vec(),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let binp = dir.path().join("agy.copy");
    std::fs::write(&binp, &b).unwrap();
    let out = dir.path().join("x.pb");
    let o = bin()
        .args(["schema", "extract"])
        .arg(&binp)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("records: 3 extracted, 1 skipped"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("skipped: a.proto at offset {}", at[2]))
            && stdout.contains("\"editions\""),
        "{stdout}"
    );
    let mp = agy_audit::schema::pin::manifest_path(&out);
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&mp).unwrap()).unwrap();
    assert_eq!(m["skipped"][0]["offset"], at[2] as u64);
    assert_eq!(m["records"].as_array().unwrap().len(), 3);
    let o = bin()
        .args(["schema", "verify", "--manifest"])
        .arg(&mp)
        .arg(&binp)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let set = FileDescriptorSet::decode(&std::fs::read(&out).unwrap()[..]).unwrap();
    let names: Vec<&str> = set.file.iter().map(|f| f.name()).collect();
    assert_eq!(names, ["dep/a.proto", "wrap/w.proto", "b/b.proto"]);
}

// ----------------------------------------------------------------- item 1

/// A binary `schema extract` succeeds on: the modeled set's records between
/// other bytes.
fn good_binary() -> Vec<u8> {
    let set = FileDescriptorSet::decode(MODELED_SET).unwrap();
    let recs: Vec<Vec<u8>> = set.file.iter().map(|f| f.encode_to_vec()).collect();
    binary(&recs).0
}

#[cfg(unix)]
fn inode(p: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(p).unwrap();
    (m.dev(), m.ino())
}

#[cfg(unix)]
/// The file's bytes and identity, to check it is untouched.
fn snapshot(p: &Path) -> (Vec<u8>, (u64, u64)) {
    (std::fs::read(p).unwrap(), inode(p))
}

#[cfg(unix)]
#[test]
fn extract_never_writes_onto_its_binary() {
    let dir = tempfile::tempdir().unwrap();
    let binp = dir.path().join("agy.copy");
    std::fs::write(&binp, good_binary()).unwrap();
    let before = snapshot(&binp);
    let link = dir.path().join("agy.symlink");
    std::os::unix::fs::symlink(&binp, &link).unwrap();
    let hard = dir.path().join("agy.hardlink");
    std::fs::hard_link(&binp, &hard).unwrap();
    let other = dir.path().join("ok.pb");

    let binp_s = binp.to_str().unwrap();
    for target in [&binp, &link, &hard] {
        let t = target.to_str().unwrap();
        for force in [false, true] {
            let f: &[&str] = if force { &["--force"] } else { &[] };
            // --out onto the binary.
            let o = bin()
                .args(["schema", "extract", binp_s, "--out", t])
                .args(f)
                .output()
                .unwrap();
            assert_refused(&o, &[t], &format!("extract --out {t} {f:?}"));
            // --manifest onto the binary: --out is not written either.
            let o = bin()
                .args(["schema", "extract", binp_s, "--out"])
                .arg(&other)
                .args(["--manifest", t])
                .args(f)
                .output()
                .unwrap();
            assert_refused(&o, &[t], &format!("extract --manifest {t} {f:?}"));
            assert!(!other.exists(), "the first output was written");
            assert_eq!(snapshot(&binp), before);
            assert_eq!(std::fs::read(target).unwrap(), before.0);
        }
    }
    // The default manifest path onto the binary: --out B where
    // B.manifest.json is a hard link to the binary.
    let out = dir.path().join("set.pb");
    std::fs::hard_link(&binp, agy_audit::schema::pin::manifest_path(&out)).unwrap();
    let o = bin()
        .args(["schema", "extract", binp_s, "--out"])
        .arg(&out)
        .arg("--force")
        .output()
        .unwrap();
    assert_refused(&o, &["set.pb.manifest.json"], "extract default manifest");
    assert!(!out.exists());
    assert_eq!(snapshot(&binp), before);

    // --out and --manifest the same file.
    let same = dir.path().join("same.pb");
    for force in [false, true] {
        let f: &[&str] = if force { &["--force"] } else { &[] };
        let o = bin()
            .args(["schema", "extract", binp_s, "--out"])
            .arg(&same)
            .arg("--manifest")
            .arg(&same)
            .args(f)
            .output()
            .unwrap();
        assert_refused(&o, &["same.pb"], "extract --out == --manifest");
        assert!(!same.exists(), "nothing written");
    }
    // And the ordinary run still works.
    let o = bin()
        .args(["schema", "extract", binp_s, "--out"])
        .arg(&other)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert_eq!(snapshot(&binp), before);
}

/// The modeled set plus one message `HostileExtra` in the first file with a
/// package: a `--from` a bundle can take one declaration from.
fn newer_set() -> (Vec<u8>, String) {
    let mut s = FileDescriptorSet::decode(MODELED_SET).unwrap();
    let f = s
        .file
        .iter_mut()
        .find(|f| !f.package().is_empty() && !f.message_type.is_empty())
        .unwrap();
    f.message_type.push(message("HostileExtra", vec![]));
    let name = format!("{}.HostileExtra", f.package());
    (s.encode_to_vec(), name)
}

#[cfg(unix)]
#[test]
fn bundle_never_writes_onto_its_base_or_from() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.pb");
    std::fs::write(&base, MODELED_SET).unwrap();
    let from = dir.path().join("from.pb");
    let (newer, add) = newer_set();
    std::fs::write(&from, &newer).unwrap();
    let inputs = [base.clone(), from.clone()];
    let before: Vec<_> = inputs.iter().map(|p| snapshot(p)).collect();
    let check = |what: &str| {
        for (p, b) in inputs.iter().zip(&before) {
            assert_eq!(&snapshot(p), b, "{what}: {} changed", p.display());
        }
    };
    let run = |out: &Path, force: bool| {
        let mut c = bin();
        c.args(["schema", "bundle", "--base"])
            .arg(&base)
            .arg("--from")
            .arg(&from)
            .args(["--add", &add, "--out"])
            .arg(out);
        if force {
            c.arg("--force");
        }
        c.output().unwrap()
    };
    let mut targets = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let link = dir.path().join(format!("sym{i}.pb"));
        std::os::unix::fs::symlink(input, &link).unwrap();
        let hard = dir.path().join(format!("hard{i}.pb"));
        std::fs::hard_link(input, &hard).unwrap();
        targets.extend([input.clone(), link, hard]);
    }
    for t in &targets {
        for force in [false, true] {
            let o = run(t, force);
            let what = format!("bundle --out {} force={force}", t.display());
            assert_refused(&o, &[t.to_str().unwrap()], &what);
            check(&what);
        }
    }
    // The bundle's manifest onto an input (a hard link or a symlink named
    // OUT.manifest.json): refused before OUT is written.
    for (i, input) in inputs.iter().enumerate() {
        for kind in ["hard", "sym"] {
            let out = dir.path().join(format!("m{kind}{i}.pb"));
            let mp = agy_audit::schema::pin::manifest_path(&out);
            if kind == "hard" {
                std::fs::hard_link(input, &mp).unwrap();
            } else {
                std::os::unix::fs::symlink(input, &mp).unwrap();
            }
            let o = run(&out, true);
            let what = format!("bundle manifest {} -> {}", mp.display(), input.display());
            assert_refused(&o, &[mp.file_name().unwrap().to_str().unwrap()], &what);
            assert!(!out.exists(), "{what}: OUT written");
            check(&what);
        }
    }
    // --from's own pin manifest is an input too.
    let from_manifest = agy_audit::schema::pin::manifest_path(&from);
    let sha = agy_audit::util::hex(&Sha256::digest(&newer));
    let pin = format!("{{\"schemaSha256\": \"{sha}\"}}\n");
    std::fs::write(&from_manifest, &pin).unwrap();
    let out = dir.path().join("fm.pb");
    std::fs::hard_link(&from_manifest, agy_audit::schema::pin::manifest_path(&out)).unwrap();
    let o = run(&out, true);
    assert_refused(
        &o,
        &["fm.pb.manifest.json"],
        "bundle manifest onto --from's manifest",
    );
    assert_eq!(std::fs::read(&from_manifest).unwrap(), pin.as_bytes());
    assert!(!out.exists());
    check("from manifest");

    // The ordinary run still works.
    let out = dir.path().join("ok.pb");
    let o = run(&out, false);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    check("ordinary run");
}

#[test]
fn dump_reads_no_schema_so_it_cannot_overwrite_one() {
    // `schema dump` writes the embedded modeled set and takes no --schema:
    // a --schema naming its --out is refused by the parser, the file kept.
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("mine.pb");
    std::fs::write(&s, b"my extraction").unwrap();
    let o = bin()
        .args(["schema", "dump", "--schema"])
        .arg(&s)
        .arg("--out")
        .arg(&s)
        .arg("--force")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    assert_eq!(std::fs::read(&s).unwrap(), b"my extraction");
}
