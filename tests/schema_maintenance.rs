//! Schema maintenance (#25): extraction from a binary, verify, diff, bundle
//! exact deltas and refusals, and pinning of `--schema`.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

use agy_audit::schema::bundle::{bundle, BundleError};
use agy_audit::schema::diff::diff;
use agy_audit::schema::extract::{extract, verify, ANNOTATION_ONLY};
use agy_audit::schema::pin::{self, PinError, Use};
use agy_audit::schema::{SchemaOrigin, MODELED_SET};
use prost::Message;
use prost_reflect::DescriptorPool;
use prost_types::{FileDescriptorProto, FileDescriptorSet};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn ide_set() -> Option<Vec<u8>> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/schema/antigravity-ide-descriptors.protoset");
    std::fs::read(p).ok()
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_agy-audit"))
}

struct Rng(u64);
impl Rng {
    fn byte(&mut self) -> u8 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 24) as u8
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.byte()).collect()
    }
}

/// The records of a set, by name.
fn records(set: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let s = FileDescriptorSet::decode(set).unwrap();
    s.file
        .iter()
        .map(|f| (f.name().to_string(), f.encode_to_vec()))
        .collect()
}

/// Random bytes with every record embedded at odd offsets, and decoys: a
/// `.proto` string in text, a name-only fake record, a truncated copy of a
/// record, and records followed by bytes that are not fields.
fn synthetic(set: &[u8], seed: u64) -> Vec<u8> {
    let mut r = Rng(seed);
    let mut b = r.bytes(4097);
    b.extend(b"see google/protobuf/any.proto for the Any type\0");
    b.extend(r.bytes(333));
    b.extend([0x0a, 0x0c]);
    b.extend(b"x/fake.proto");
    b.extend(r.bytes(101));
    for (i, (_, rec)) in records(set).iter().enumerate() {
        if i % 3 == 0 {
            // A truncated copy before the real record.
            b.extend(&rec[..rec.len() / 2]);
            b.extend(r.bytes(77));
        }
        b.extend(rec);
        if i % 2 == 0 {
            b.extend([0xff, 0xff, 0xff]); // trailing bytes that are no field
        }
        let gap = 2 * (i % 5) + 3;
        b.extend(r.bytes(gap));
    }
    b.extend(r.bytes(1001));
    b
}

fn check_recovers(set: &[u8], label: &str) {
    let bin = synthetic(set, 0x5eed_1234_abcd_0001);
    let t = std::time::Instant::now();
    let x = extract(&bin).expect("extract");
    let mut expected = records(set);
    expected.retain(|n, _| !ANNOTATION_ONLY.contains(&n.as_str()));
    let got = records(&x.set);
    println!(
        "{label}: {} bytes, {} records, {} truncated copies dropped, dropped {:?}, {:?}",
        bin.len(),
        x.records.len(),
        x.truncated.len(),
        x.dropped,
        t.elapsed()
    );
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>(),
        "{label}: file names"
    );
    for (n, bytes) in &expected {
        let g = &got[n];
        if g != bytes {
            // Only an import of a dropped annotation-only file may differ.
            let (a, b) = (
                FileDescriptorProto::decode(&g[..]).unwrap(),
                FileDescriptorProto::decode(&bytes[..]).unwrap(),
            );
            assert!(
                b.dependency
                    .iter()
                    .any(|d| ANNOTATION_ONLY.contains(&d.as_str())),
                "{label}: {n} changed"
            );
            assert_eq!(a.message_type, b.message_type, "{label}: {n}");
        }
    }
    // Records are where the manifest says, and verify agrees.
    let m = x.manifest(Some("9.9.9"));
    assert!(verify(&m, &bin).is_empty());
    assert!(DescriptorPool::decode(&x.set[..]).is_ok());
    // Deterministic.
    assert_eq!(extract(&bin).unwrap().set, x.set);
}

#[test]
fn extract_recovers_the_modeled_set_from_a_synthetic_binary() {
    check_recovers(MODELED_SET, "modeled");
}

#[test]
fn extract_recovers_the_public_ide_set_from_a_synthetic_binary() {
    let Some(ide) = ide_set() else {
        println!("SKIP: ../shared/schema/antigravity-ide-descriptors.protoset is absent");
        return;
    };
    check_recovers(&ide, "ide");
}

#[test]
fn verify_names_a_flipped_byte() {
    let bin = synthetic(MODELED_SET, 7);
    let x = extract(&bin).unwrap();
    let m = x.manifest(None);
    let r = &m.records[m.records.len() / 2];
    let mut bad = bin.clone();
    bad[(r.offset + r.length / 2) as usize] ^= 0x40;
    let mism = verify(&m, &bad);
    assert!(mism.iter().any(|x| x.name == r.name), "{mism:?}");
    assert!(mism.iter().any(|x| x.name == "<binary>"), "{mism:?}");
    assert_eq!(mism.len(), 2, "{mism:?}");
}

#[test]
fn cli_extract_verify_and_a_missing_import() {
    let dir = tempfile::tempdir().unwrap();
    let binp = dir.path().join("agy.copy");
    let bytes = synthetic(MODELED_SET, 11);
    std::fs::write(&binp, &bytes).unwrap();
    let out = dir.path().join("x.pb");
    let o = bin()
        .args(["schema", "extract"])
        .arg(&binp)
        .arg("--out")
        .arg(&out)
        .args(["--release", "1.4.7"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    println!("{text}");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        text.contains("sha256: ") && text.contains("records: "),
        "{text}"
    );
    let mp = pin::manifest_path(&out);
    let o = bin()
        .args(["schema", "verify", "--manifest"])
        .arg(&mp)
        .arg(&binp)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let mut bad = bytes.clone();
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&mp).unwrap()).unwrap();
    let off = m["records"][0]["offset"].as_u64().unwrap() as usize + 3;
    bad[off] ^= 1;
    let badp = dir.path().join("bad.copy");
    std::fs::write(&badp, &bad).unwrap();
    let o = bin()
        .args(["schema", "verify", "--manifest"])
        .arg(&mp)
        .arg(&badp)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(4), "{text}");
    assert!(
        text.contains(&format!(
            "MISMATCH {}",
            m["records"][0]["name"].as_str().unwrap()
        )),
        "{text}"
    );

    // A set whose import is absent (and not annotation-only) stops extraction.
    let mut s = FileDescriptorSet::decode(MODELED_SET).unwrap();
    let i = s
        .file
        .iter()
        .position(|f| {
            s.file
                .iter()
                .any(|g| g.dependency.iter().any(|d| d == f.name()))
        })
        .unwrap();
    let gone = s.file.remove(i).name().to_string();
    let err = extract(&synthetic(&s.encode_to_vec(), 3))
        .unwrap_err()
        .to_string();
    assert!(err.contains(&format!("imports {gone}")), "{err}");
}

#[test]
fn extract_from_a_real_go_program() {
    let Some(path) = [
        "/usr/local/bin/docker",
        "/usr/bin/docker",
        "/usr/bin/containerd",
        "/usr/bin/kubectl",
    ]
    .iter()
    .map(Path::new)
    .find(|p| p.is_file()) else {
        println!("SKIP: no Go program embedding protobuf descriptors (docker, containerd, kubectl) is installed");
        return;
    };
    let bytes = std::fs::read(path).unwrap();
    let t = std::time::Instant::now();
    match extract(&bytes) {
        Ok(x) => {
            let pool = DescriptorPool::decode(&x.set[..]).unwrap();
            println!(
                "{}: {} bytes, {} records, {} files, {} messages, {} enums, dropped {:?}, {:?}",
                path.display(),
                bytes.len(),
                x.records.len(),
                x.files.len(),
                pool.all_messages().count(),
                pool.all_enums().count(),
                x.dropped,
                t.elapsed()
            );
            assert!(verify(&x.manifest(None), &bytes).is_empty());
        }
        Err(e) => println!("SKIP: {}: {e}", path.display()),
    }
}

/// The diff from the public IDE set to the modeled schema (a SKIP line and
/// `None` when ../shared is absent).
fn ide_vs_modeled() -> Option<agy_audit::schema::diff::SchemaDiff> {
    let Some(ide) = ide_set() else {
        println!("SKIP: ../shared/schema/antigravity-ide-descriptors.protoset is absent");
        return None;
    };
    Some(diff(
        &DescriptorPool::decode(&ide[..]).unwrap(),
        &DescriptorPool::decode(MODELED_SET).unwrap(),
    ))
}

#[test]
fn diff_of_the_public_ide_set_against_the_modeled_schema() {
    let Some(d) = ide_vs_modeled() else {
        return;
    };
    println!("ide -> modeled: {}", d.summary());
    assert!(!d.additive());
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/schema/antigravity-ide-descriptors.protoset");
    let o = bin()
        .args(["schema", "diff", "--json"])
        .arg(&p)
        .arg("modeled")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(4));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["summary"], d.summary());
    let o = bin()
        .args(["schema", "diff", "modeled", "modeled"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
}

/// `schema diff` of the public IDE set against the modeled schema tells the
/// same story as proto/CONFORMANCE.md: nothing the two share differs
/// (no change), and every declaration the modeled schema adds is one of the
/// table's documented differences (a field or value inside an added message
/// or enum comes with it).
#[test]
fn the_ide_diff_agrees_with_conformance_md() {
    let Some(d) = ide_vs_modeled() else {
        return;
    };
    assert!(
        d.changed.is_empty(),
        "shared declarations differ: {:#?}",
        d.changed
    );
    let table = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("proto/CONFORMANCE.md"),
    )
    .unwrap();
    let entries: BTreeSet<String> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`').map(|(e, _)| e.to_string()))
        .collect();
    let added_parents: BTreeSet<&str> = d
        .added
        .iter()
        .filter(|c| c.kind == "message" || c.kind == "enum")
        .map(|c| c.name.as_str())
        .collect();
    let mut undocumented = Vec::new();
    for c in &d.added {
        let parent = c.name.rsplit_once('.').map(|(p, _)| p).unwrap_or("");
        let documented = match c.kind {
            "message" | "enum" => {
                entries.contains(&format!("{} {}", c.kind, c.name))
                    || added_parents.contains(parent)
            }
            "field" => {
                added_parents.contains(parent)
                    || entries.contains(&format!("field {} = {}", c.name, c.number.unwrap_or(0)))
            }
            _ => {
                added_parents.contains(parent)
                    || entries.contains(&format!("value {} = {}", c.name, c.number.unwrap_or(0)))
            }
        };
        if !documented {
            undocumented.push(format!("{} {} {:?}", c.kind, c.name, c.number));
        }
    }
    assert!(
        undocumented.is_empty(),
        "in the diff but not in CONFORMANCE.md:\n{}",
        undocumented.join("\n")
    );
}

// ---- bundle ----

fn find_msg<'a>(
    s: &'a mut FileDescriptorSet,
    full: &str,
) -> Option<&'a mut prost_types::DescriptorProto> {
    for f in &mut s.file {
        let pkg = f.package().to_string();
        let Some(rest) = full.strip_prefix(&format!("{pkg}.")) else {
            continue;
        };
        let mut parts = rest.split('.');
        let first = parts.next()?;
        let Some(mut m) = f.message_type.iter_mut().find(|m| m.name() == first) else {
            continue;
        };
        for p in parts {
            m = m.nested_type.iter_mut().find(|n| n.name() == p)?;
        }
        return Some(m);
    }
    None
}

/// A field of the modeled schema that is plain (no oneof), preferring one
/// whose removal leaves the base loadable: (message, field).
fn pick_field(pool: &DescriptorPool, optional: bool) -> Option<(String, String)> {
    pool.all_messages()
        .filter(|m| !m.full_name().starts_with("google.") && !m.is_map_entry())
        .flat_map(|m| m.fields().collect::<Vec<_>>())
        .find(|f| {
            let o = f.field_descriptor_proto();
            if optional {
                o.proto3_optional() && {
                    let m = f.parent_message();
                    o.oneof_index == Some(m.descriptor_proto().oneof_decl.len() as i32 - 1)
                }
            } else {
                o.oneof_index.is_none() && o.type_name().is_empty()
            }
        })
        .map(|f| {
            (
                f.parent_message().full_name().to_string(),
                f.name().to_string(),
            )
        })
}

fn remove_field(s: &mut FileDescriptorSet, msg: &str, field: &str) {
    let m = find_msg(s, msg).unwrap();
    let i = m.field.iter().position(|f| f.name() == field).unwrap();
    let f = m.field.remove(i);
    if f.proto3_optional() {
        m.oneof_decl.pop();
    }
}

fn delta_names(base: &[u8], new: &[u8]) -> Vec<String> {
    let d = diff(
        &DescriptorPool::decode(base).unwrap(),
        &DescriptorPool::decode(new).unwrap(),
    );
    assert!(d.additive(), "{}", d.text());
    d.added
        .iter()
        .map(|c| format!("{} {}", c.kind, c.name))
        .collect()
}

#[test]
fn bundle_adds_exactly_one_field_message_or_enum_value() {
    let from = MODELED_SET;
    let pool = DescriptorPool::decode(from).unwrap();
    for optional in [false, true] {
        let Some((msg, field)) = pick_field(&pool, optional) else {
            println!(
                "SKIP: no {} field to remove",
                if optional { "optional" } else { "plain" }
            );
            continue;
        };
        let mut s = FileDescriptorSet::decode(from).unwrap();
        remove_field(&mut s, &msg, &field);
        let base = s.encode_to_vec();
        let name = format!("{msg}.{field}");
        let b = bundle(&base, from, std::slice::from_ref(&name)).unwrap();
        assert_eq!(delta_names(&base, &b.set), vec![format!("field {name}")]);
        // Presence survives: the bundle's field is the modeled one.
        let bp = DescriptorPool::decode(&b.set[..]).unwrap();
        let got = bp
            .get_message_by_name(&msg)
            .unwrap()
            .get_field_by_name(&field)
            .unwrap();
        let want = pool
            .get_message_by_name(&msg)
            .unwrap()
            .get_field_by_name(&field)
            .unwrap();
        assert_eq!(got.supports_presence(), want.supports_presence(), "{name}");
        assert_eq!(got.field_descriptor_proto(), want.field_descriptor_proto());
        assert!(diff(&bp, &pool).added.is_empty() && diff(&bp, &pool).additive());
        println!("bundle +field {name} (optional: {optional}): ok");
    }
    // A whole message no field refers to.
    let referenced: std::collections::BTreeSet<String> = pool
        .all_messages()
        .flat_map(|m| m.fields().collect::<Vec<_>>())
        .filter_map(|f| f.kind().as_message().map(|m| m.full_name().to_string()))
        .collect();
    let m = pool
        .all_messages()
        .find(|m| {
            !m.full_name().starts_with("google.")
                && m.parent_message().is_none()
                && !referenced.contains(m.full_name())
                && m.fields()
                    .all(|f| f.kind().as_message().is_none() && f.kind().as_enum().is_none())
        })
        .unwrap();
    let mut s = FileDescriptorSet::decode(from).unwrap();
    let file = s
        .file
        .iter_mut()
        .find(|f| f.name() == m.parent_file().name())
        .unwrap();
    file.message_type.retain(|x| x.name() != m.name());
    let base = s.encode_to_vec();
    let b = bundle(&base, from, &[m.full_name().to_string()]).unwrap();
    assert_eq!(
        delta_names(&base, &b.set),
        vec![format!("message {}", m.full_name())]
    );
    // An enum value.
    let e = pool
        .all_enums()
        .find(|e| !e.full_name().starts_with("google.") && e.values().len() > 2)
        .unwrap();
    let last = e.values().last().unwrap();
    let mut s = FileDescriptorSet::decode(from).unwrap();
    fn strip(v: &mut [prost_types::EnumDescriptorProto], en: &str, val: &str) {
        for x in v.iter_mut().filter(|x| x.name() == en) {
            x.value.retain(|v| v.name() != val);
        }
    }
    for f in &mut s.file {
        if f.name() != e.parent_file().name() {
            continue;
        }
        strip(&mut f.enum_type, e.name(), last.name());
        fn walk(ms: &mut [prost_types::DescriptorProto], en: &str, val: &str) {
            for m in ms {
                strip(&mut m.enum_type, en, val);
                walk(&mut m.nested_type, en, val);
            }
        }
        walk(&mut f.message_type, e.name(), last.name());
    }
    let base = s.encode_to_vec();
    let vname = format!("{}.{}", e.full_name(), last.name());
    let b = bundle(&base, from, std::slice::from_ref(&vname)).unwrap();
    assert_eq!(
        delta_names(&base, &b.set),
        vec![format!("enum-value {vname}")]
    );
}

#[test]
fn bundle_refuses_unknown_conflicting_and_dangling_names() {
    let from = MODELED_SET;
    let pool = DescriptorPool::decode(from).unwrap();
    let e = bundle(from, from, &["no.such.Thing".into()]).unwrap_err();
    assert!(matches!(e, BundleError::NotFound(_)), "{e}");
    // A field whose type the base lacks: a message field whose message is removed.
    let f = pool
        .all_messages()
        .filter(|m| !m.full_name().starts_with("google."))
        .flat_map(|m| m.fields().collect::<Vec<_>>())
        .find(|f| {
            f.containing_oneof().is_none()
                && !f.is_map()
                && f.kind().as_message().is_some_and(|t| {
                    !t.full_name().starts_with("google.")
                        && t.parent_message().is_none()
                        && pool
                            .all_messages()
                            .flat_map(|m| m.fields().collect::<Vec<_>>())
                            .filter(|g| {
                                g.kind()
                                    .as_message()
                                    .is_some_and(|x| x.full_name() == t.full_name())
                            })
                            .count()
                            == 1
                })
        })
        .unwrap();
    let target = f.kind().as_message().unwrap().clone();
    let mut s = FileDescriptorSet::decode(from).unwrap();
    remove_field(&mut s, f.parent_message().full_name(), f.name());
    let tf = s
        .file
        .iter_mut()
        .find(|x| x.name() == target.parent_file().name())
        .unwrap();
    tf.message_type.retain(|m| m.name() != target.name());
    let base = s.encode_to_vec();
    assert!(DescriptorPool::decode(&base[..]).is_ok(), "base must load");
    let fname = format!("{}.{}", f.parent_message().full_name(), f.name());
    let e = bundle(&base, from, std::slice::from_ref(&fname)).unwrap_err();
    assert!(matches!(e, BundleError::Dependency { .. }), "{e}");
    // With the type added too, it works: exactly two additions (plus the type's nested ones).
    let b = bundle(
        &base,
        from,
        &[target.full_name().to_string(), fname.clone()],
    )
    .unwrap();
    let names = delta_names(&base, &b.set);
    assert!(
        names.contains(&format!("field {fname}"))
            && names.contains(&format!("message {}", target.full_name())),
        "{names:?}"
    );
    // A field the base defines differently: change its type in the base.
    let (msg, field) = pick_field(&pool, false).unwrap();
    let mut s = FileDescriptorSet::decode(from).unwrap();
    let m = find_msg(&mut s, &msg).unwrap();
    let fd = m.field.iter_mut().find(|x| x.name() == field).unwrap();
    fd.r#type = Some(
        if fd.r#type() == prost_types::field_descriptor_proto::Type::String {
            prost_types::field_descriptor_proto::Type::Bytes
        } else {
            prost_types::field_descriptor_proto::Type::String
        } as i32,
    );
    let base = s.encode_to_vec();
    let e = bundle(&base, from, &[format!("{msg}.{field}")]).unwrap_err();
    assert!(matches!(e, BundleError::Conflict { .. }), "{e}");
    // The same definition is a no-op, not an addition.
    let b = bundle(from, from, &[format!("{msg}.{field}")]).unwrap();
    assert!(b.added.is_empty() && b.unchanged.len() == 1);
}

// ---- pinning ----

#[test]
fn pinning_refuses_unpinned_and_mismatching_sets_for_verifying() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.pb");
    std::fs::write(&p, MODELED_SET).unwrap();
    let sha = agy_audit::util::hex(&<sha2::Sha256 as sha2::Digest>::digest(MODELED_SET));
    let e = pin::load(Some(&p), None, Use::Verify).unwrap_err();
    assert!(matches!(e, PinError::Unpinned { .. }), "{e}");
    let s = pin::load(Some(&p), None, Use::Inspect).unwrap();
    assert_eq!(s.origin.profile_label(), "unpinned");
    let s = pin::load(Some(&p), Some(&sha), Use::Verify).unwrap();
    assert_eq!(s.origin.profile_label(), "pinned");
    let wrong = "0".repeat(64);
    assert!(matches!(
        pin::load(Some(&p), Some(&wrong), Use::Inspect).unwrap_err(),
        PinError::Mismatch { .. }
    ));
    // A manifest beside it pins it and names the agy build.
    let bsha = "ab".repeat(32);
    std::fs::write(
        pin::manifest_path(&p),
        format!(r#"{{"schemaSha256":"{sha}","release":"1.4.7","binarySha256":"{bsha}"}}"#),
    )
    .unwrap();
    let s = pin::load(Some(&p), None, Use::Verify).unwrap();
    assert_eq!(s.origin.profile_label(), "agy-1.4.7-abababababab");
    assert!(matches!(s.origin, SchemaOrigin::Pinned { .. }));
    let prof = agy_audit::profile::sqlite_profile(&s);
    assert!(
        prof.starts_with("sqlite-v1-format0-agy-1.4.7-abababababab-"),
        "{prof}"
    );
    assert!(
        agy_audit::profile::sqlite_profile(&agy_audit::schema::Schema::modeled().unwrap())
            .starts_with("sqlite-v1-format0-modeled-")
    );
    // A manifest that does not match is refused, whatever the use.
    std::fs::write(
        pin::manifest_path(&p),
        format!(r#"{{"schemaSha256":"{wrong}"}}"#),
    )
    .unwrap();
    assert!(matches!(
        pin::load(Some(&p), None, Use::Inspect).unwrap_err(),
        PinError::Mismatch { .. }
    ));
}

#[test]
fn cli_sync_refuses_an_unpinned_schema_and_accepts_a_pinned_one() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.pb");
    std::fs::write(&p, MODELED_SET).unwrap();
    let src = dir.path().join("00000000-0000-0000-0000-000000000000.db");
    let o = bin()
        .args(["sync", "--schema"])
        .arg(&p)
        .arg(&src)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("not pinned") && err.contains("--schema-sha256"),
        "{err}"
    );
    let sha = agy_audit::util::hex(&<sha2::Sha256 as sha2::Digest>::digest(MODELED_SET));
    let o = bin()
        .args(["sync", "--schema"])
        .arg(&p)
        .args(["--schema-sha256", &sha])
        .arg(&src)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    // Past the schema: the missing source is what stops it now.
    assert!(!err.contains("not pinned"), "{err}");
    assert!(err.contains("neither an existing"), "{err}");
}
