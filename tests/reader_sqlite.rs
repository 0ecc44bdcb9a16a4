//! The SQLite snapshot reader: the accepted shape, and a refusal for each near-miss.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

mod common;

use agy_audit::schema::Schema;
use agy_audit::source::legacy::LegacyKey;
use agy_audit::source::{read_source, DecodedSource, ReadOptions};
use agy_audit::verdict::ReasonClass;
use agy_engine::error::CorruptRule;
use agy_engine::Error;
use common::*;
use rusqlite::Connection;
use std::path::Path;

fn options<'a>(s: &'a Schema, key: &'a LegacyKey, fingerprint: bool) -> ReadOptions<'a> {
    ReadOptions {
        schema: s,
        legacy_key: key,
        collect_all: false,
        fingerprint,
    }
}

fn read(s: &Schema, path: &Path) -> DecodedSource {
    let key = LegacyKey::default();
    read_source(path, &options(s, &key, false))
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn assert_refused(src: &DecodedSource, class: ReasonClass, location: &str) {
    let r = src
        .reason()
        .unwrap_or_else(|| panic!("expected a {class} refusal, source qualified"));
    assert_eq!(r.class, class, "refusal: {r}");
    assert!(
        r.location.contains(location),
        "location {:?} lacks {location:?} ({r})",
        r.location
    );
}

fn fixture(tweak: impl FnOnce(&Connection)) -> (tempfile::TempDir, std::path::PathBuf, Schema) {
    let s = schema();
    let (root, conv) = store();
    let path = conv.join(format!("{CASCADE}.db"));
    write_db(&s, &path, &Conv::basic(&s), tweak);
    (root, path, s)
}

fn fixture_conv(
    conv: &Conv,
    tweak: impl FnOnce(&Connection),
) -> (tempfile::TempDir, std::path::PathBuf, Schema) {
    let s = schema();
    let (root, dir) = store();
    let path = dir.join(format!("{CASCADE}.db"));
    write_db(&s, &path, conv, tweak);
    (root, path, s)
}

#[test]
fn accepted_shape_decodes_with_a_stable_digest() {
    let (_root, path, s) = fixture(|_| {});
    let a = read(&s, &path);
    assert!(a.qualified(), "{:?}", a.refusals);
    assert_eq!(a.steps, 3);
    assert_eq!(a.cascade_id(), CASCADE);
    assert!(a.source_digest.starts_with("sha256:"));
    assert_eq!(
        a.encoding,
        Conv::basic(&s).trajectory_bytes(&s),
        "canonical encoding"
    );
    let b = read(&s, &path);
    assert_eq!(a.source_digest, b.source_digest);
    let json = agy_audit::export::export_json(&a, None).unwrap();
    assert_eq!(json["cascadeId"], CASCADE);
    assert_eq!(
        json["steps"][1]["metadata"]["modelUsage"]["inputTokens"], "19268",
        "64-bit as string"
    );
    assert_eq!(json["steps"][2]["runCommand"]["exitCode"], 2);
    assert_eq!(json["agyReader"]["offline"]["version"], 1);
    assert!(json["agyReader"].get("completeness").is_none());
}

#[test]
fn digest_changes_with_content() {
    let s = schema();
    let (_r1, p1, _) = fixture(|_| {});
    let mut conv = Conv::basic(&s);
    conv.steps[0] = step(
        &s,
        r#"{"type":"CORTEX_STEP_TYPE_USER_INPUT","status":"CORTEX_STEP_STATUS_DONE","userInput":{"userResponse":"other"}}"#,
    );
    let (_r2, p2, _) = fixture_conv(&conv, |_| {});
    assert_ne!(read(&s, &p1).source_digest, read(&s, &p2).source_digest);
}

#[test]
fn uncheckpointed_wal_frames_are_read_and_nothing_appears_beside_the_source() {
    let s = schema();
    let (root, dir) = store();
    let path = dir.join(format!("{CASCADE}.db"));
    let conv = Conv::basic(&s);
    {
        // Write while holding the connection open with checkpoints off, then
        // copy the files as a live agy store leaves them.
        let work = tempfile::tempdir().unwrap();
        let live = work.path().join("live.db");
        let c = Connection::open(&live).unwrap();
        c.execute_batch("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;")
            .unwrap();
        write_rows(&s, &c, &conv);
        let wal = std::fs::read(work.path().join("live.db-wal")).unwrap();
        assert!(!wal.is_empty());
        std::fs::copy(&live, &path).unwrap();
        std::fs::write(dir.join(format!("{CASCADE}.db-wal")), wal).unwrap();
        drop(c);
    }
    let before = tree(root.path());
    let src = read(&s, &path);
    assert!(src.qualified(), "{:?}", src.refusals);
    assert!(src.had_wal);
    assert_eq!(src.steps, 3, "steps from the WAL are present");
    assert_eq!(
        tree(root.path()),
        before,
        "source bytes and file set unchanged"
    );
}

#[test]
fn not_a_database_is_an_error_not_a_verdict() {
    let s = schema();
    let (_root, dir) = store();
    let path = dir.join(format!("{CASCADE}.db"));
    std::fs::write(&path, b"definitely not sqlite").unwrap();
    let key = LegacyKey::default();
    let opts = options(&s, &key, false);
    assert!(matches!(
        read_source(&path, &opts),
        Err(Error::Corrupt {
            rule: CorruptRule::NotSqlite3,
            ..
        })
    ));
    // A SQLite header followed by garbage pages.
    let mut bytes = b"SQLite format 3\0".to_vec();
    bytes.extend(std::iter::repeat_n(0xa5u8, 8192));
    std::fs::write(&path, bytes).unwrap();
    assert!(read_source(&path, &opts).is_err());
}

#[cfg(unix)]
#[test]
fn a_symlinked_source_is_refused() {
    let (root, path, s) = fixture(|_| {});
    let link = root
        .path()
        .join("conversations")
        .join("0b6b2f0e-1c1d-4a7e-9a5e-0d6f3f1f2a01.db");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let key = LegacyKey::default();
    let opts = options(&s, &key, false);
    assert!(matches!(
        read_source(&link, &opts),
        Err(Error::Corrupt {
            rule: CorruptRule::SymbolicLink,
            ..
        })
    ));
}

#[test]
fn near_miss_user_version() {
    let (_r, p, s) = fixture(|c| c.execute_batch("PRAGMA user_version=2").unwrap());
    assert_refused(&read(&s, &p), ReasonClass::UserVersion, "user_version");
}

#[test]
fn near_miss_extra_table() {
    let (_r, p, s) = fixture(|c| c.execute_batch("CREATE TABLE extra (x)").unwrap());
    assert_refused(&read(&s, &p), ReasonClass::SchemaDrift, "extra");
}

#[test]
fn near_miss_extra_column() {
    let (_r, p, s) = fixture(|c| {
        c.execute_batch("ALTER TABLE steps ADD COLUMN shiny blob")
            .unwrap()
    });
    assert_refused(&read(&s, &p), ReasonClass::SchemaDrift, "steps");
}

#[test]
fn near_miss_missing_index_and_extra_view() {
    let (_r, p, s) = fixture(|c| c.execute_batch("DROP INDEX idx_steps_status").unwrap());
    assert_refused(&read(&s, &p), ReasonClass::SchemaDrift, "idx_steps_status");
    let (_r, p, s) = fixture(|c| {
        c.execute_batch("CREATE VIEW v AS SELECT * FROM steps")
            .unwrap()
    });
    assert_refused(&read(&s, &p), ReasonClass::SchemaDrift, "view");
}

#[test]
fn near_miss_step_format() {
    let (_r, p, s) = fixture(|c| {
        c.execute_batch("UPDATE steps SET step_format = 1 WHERE idx = 2")
            .unwrap();
    });
    assert_refused(&read(&s, &p), ReasonClass::StepFormat, "steps[2]");
}

#[test]
fn near_miss_index_gaps() {
    let (_r, p, s) = fixture(|c| {
        c.execute_batch("UPDATE steps SET idx = 5 WHERE idx = 2")
            .unwrap()
    });
    assert_refused(&read(&s, &p), ReasonClass::IndexGap, "steps.idx");
    let (_r, p, s) = fixture(|c| c.execute_batch("DELETE FROM steps WHERE idx = 0").unwrap());
    assert_refused(&read(&s, &p), ReasonClass::IndexGap, "steps.idx");
    let (_r, p, s) = fixture(|c| c.execute_batch("UPDATE gen_metadata SET idx = 1").unwrap());
    assert_refused(&read(&s, &p), ReasonClass::IndexGap, "gen_metadata.idx");
    let (_r, p, s) = fixture(|c| {
        c.execute_batch("UPDATE executor_metadata SET idx = -1")
            .unwrap()
    });
    assert_refused(
        &read(&s, &p),
        ReasonClass::IndexGap,
        "executor_metadata.idx",
    );
}

#[test]
fn near_miss_gen_metadata_size() {
    let (_r, p, s) = fixture(|c| {
        c.execute_batch("UPDATE gen_metadata SET size = size + 1")
            .unwrap()
    });
    assert_refused(&read(&s, &p), ReasonClass::RowShape, "gen_metadata[0].size");
}

#[test]
fn near_miss_row_counts_and_storage_classes() {
    let (_r, p, s) = fixture(|c| {
        c.execute_batch("INSERT INTO trajectory_meta VALUES ('other', 'x', 4, 17)")
            .unwrap();
    });
    assert_refused(&read(&s, &p), ReasonClass::RowShape, "trajectory_meta");
    let (_r, p, s) = fixture(|c| {
        c.execute_batch("UPDATE trajectory_metadata_blob SET id = 'side'")
            .unwrap()
    });
    assert_refused(
        &read(&s, &p),
        ReasonClass::RowShape,
        "trajectory_metadata_blob",
    );
    let (_r, p, s) = fixture(|c| {
        c.execute_batch("UPDATE steps SET step_payload = NULL WHERE idx = 1")
            .unwrap()
    });
    assert_refused(
        &read(&s, &p),
        ReasonClass::RowShape,
        "steps[1].step_payload",
    );
    let (_r, p, s) = fixture(|c| {
        c.execute_batch("UPDATE steps SET metadata = 'text' WHERE idx = 1")
            .unwrap()
    });
    assert_refused(&read(&s, &p), ReasonClass::RowShape, "steps[1].metadata");
    let (_r, p, s) = fixture(|c| {
        c.execute_batch(
            "UPDATE trajectory_meta SET cascade_id = '00000000-0000-4000-8000-000000000000'",
        )
        .unwrap();
    });
    assert_refused(&read(&s, &p), ReasonClass::RowShape, "cascade_id");
}

#[test]
fn near_miss_redundant_columns() {
    let cases: &[(&str, &str)] = &[
        (
            "UPDATE steps SET status = 7 WHERE idx = 1",
            "steps[1].status",
        ),
        (
            "UPDATE steps SET step_type = 14 WHERE idx = 1",
            "steps[1].step_type",
        ),
        (
            "UPDATE steps SET metadata = x'0a00' WHERE idx = 1",
            "steps[1].metadata",
        ),
        (
            "UPDATE steps SET metadata = NULL WHERE idx = 1",
            "steps[1].metadata",
        ),
        (
            "UPDATE steps SET error_details = NULL WHERE idx = 2",
            "steps[2].error_details",
        ),
        (
            "UPDATE steps SET error_details = x'' WHERE idx = 1",
            "steps[1].error_details",
        ),
        (
            "UPDATE steps SET permissions = x'0a00' WHERE idx = 0",
            "steps[0].permissions",
        ),
        (
            "UPDATE steps SET task_details = x'0a00' WHERE idx = 0",
            "steps[0].task_details",
        ),
        (
            "UPDATE steps SET has_subtrajectory = 1 WHERE idx = 0",
            "steps[0].has_subtrajectory",
        ),
        (
            "UPDATE steps SET has_subtrajectory = 2 WHERE idx = 0",
            "steps[0].has_subtrajectory",
        ),
    ];
    for (sql, loc) in cases {
        let (_r, p, s) = fixture(|c| c.execute_batch(sql).unwrap());
        assert_refused(&read(&s, &p), ReasonClass::RedundantColumn, loc);
    }
}

fn generic_step(s: &Schema, with_render: bool) -> Vec<u8> {
    let render = if with_render {
        r#","stepRenderInfo":{"title":"Task","markdown":"**done**"}"#
    } else {
        ""
    };
    step(
        s,
        &format!(
            r#"{{"type":"CORTEX_STEP_TYPE_GENERIC","status":"CORTEX_STEP_STATUS_DONE",
            "metadata":{{"toolCall":{{"id":"call_9","name":"manage_task"}}}},
            "generic":{{"args":{{"Action":"\"list\""}},"result":{{"result":"no tasks"{render}}}}}}}"#
        ),
    )
}

#[test]
fn render_info_must_equal_generic_result_render_info_including_presence() {
    let s = schema();
    let mut conv = Conv::basic(&s);
    conv.steps.push(generic_step(&s, true));
    conv.steps.push(generic_step(&s, false));
    let (_r, p, _) = fixture_conv(&conv, |_| {});
    assert!(
        read(&s, &p).qualified(),
        "accepted: render_info equal, NULL when absent"
    );
    let (_r, p, _) = fixture_conv(&conv, |c| {
        c.execute_batch("UPDATE steps SET render_info = x'0a01' WHERE idx = 3")
            .unwrap()
    });
    assert_refused(
        &read(&s, &p),
        ReasonClass::RedundantColumn,
        "steps[3].render_info",
    );
    let (_r, p, _) = fixture_conv(&conv, |c| {
        c.execute_batch("UPDATE steps SET render_info = NULL WHERE idx = 3")
            .unwrap()
    });
    assert_refused(
        &read(&s, &p),
        ReasonClass::RedundantColumn,
        "steps[3].render_info",
    );
    let (_r, p, _) = fixture_conv(&conv, |c| {
        c.execute_batch("UPDATE steps SET render_info = x'' WHERE idx = 4")
            .unwrap()
    });
    assert_refused(
        &read(&s, &p),
        ReasonClass::RedundantColumn,
        "steps[4].render_info",
    );
}

#[test]
fn a_present_subtrajectory_is_unsupported() {
    let s = schema();
    let mut conv = Conv::basic(&s);
    conv.steps.push(step(&s, r#"{"type":"CORTEX_STEP_TYPE_INVOKE_SUBAGENT","status":"CORTEX_STEP_STATUS_DONE","subtrajectory":{"trajectoryId":"x"}}"#));
    let (_r, p, _) = fixture_conv(&conv, |_| {});
    let src = read(&s, &p);
    assert!(
        src.refusals
            .iter()
            .any(|r| r.class == ReasonClass::Subtrajectory),
        "{:?}",
        src.refusals
    );
}

#[test]
fn unknown_field_inside_a_step_names_its_path() {
    let s = schema();
    let mut conv = Conv::basic(&s);
    let metadata = num(&s, "gemini_coder.Step", "metadata");
    let tool_call = num(&s, "exa.cortex_pb.CortexStepMetadata", "tool_call");
    conv.steps[2] = insert_raw(
        &conv.steps[2],
        &[(metadata, 0), (tool_call, 0)],
        &unknown_varint(41, 1),
    );
    let (_r, p, _) = fixture_conv(&conv, |_| {});
    let src = read(&s, &p);
    let r = src.reason().unwrap();
    assert_eq!(r.class, ReasonClass::UnknownField);
    let said = "steps[2].metadata.toolCall: unknown field 41 (varint) in exa.codeium_common_pb.ChatToolCall: \
         the schema in use does not define it; if your agy build does, audit with its descriptors (--schema FILE)";
    // Made with the embedded schema: the hint follows the location and rule,
    // which stay as they are.
    assert_eq!(
        r.to_string(),
        format!(
            "{said}; the embedded schema models public descriptors only: \
             `agy-audit schema extract --installed`"
        )
    );
    assert_eq!(r.location, "steps[2].metadata.toolCall");
    assert!(said.ends_with(&r.detail), "{}", r.detail);
    // The same set loaded as a pinned file: the same refusal, no hint.
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("modeled.pb");
    std::fs::write(&set, agy_audit::schema::MODELED_SET).unwrap();
    let pinned = agy_audit::schema::pin::load(
        Some(&set),
        Some(&s.sha256_hex()),
        agy_audit::schema::pin::Use::Verify,
    )
    .unwrap();
    let src = read(&pinned, &p);
    let r = src.reason().unwrap();
    assert_eq!(r.class, ReasonClass::UnknownField);
    assert_eq!(r.to_string(), said);
}

/// The bracket's second snapshot: byte-identical files are unchanged at once;
/// a rewrite that keeps the content (here a header write that only bumps the
/// change counter) is unchanged by the digest; a changed row is a change.
#[test]
fn the_bracket_fingerprint_and_its_digest_fallback() {
    use agy_audit::source::{sqlite, unchanged};
    let (_root, path, s) = fixture(|_| {});
    let key = LegacyKey::default();
    let opts = options(&s, &key, true);
    let src = read_source(&path, &opts).unwrap();
    assert!(src.qualified(), "{:?}", src.reason());
    let fp = src.file_fingerprint.expect("a fingerprint was asked for");
    assert_eq!(sqlite::file_fingerprint(&path).unwrap(), fp);
    assert!(unchanged(&path, Some(fp), &src.source_digest, &opts).unwrap());
    assert!(
        read(&s, &path).file_fingerprint.is_none(),
        "only when asked"
    );

    let c = Connection::open(&path).unwrap();
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    c.execute_batch(&format!("PRAGMA user_version = {v}"))
        .unwrap();
    drop(c);
    assert_ne!(
        sqlite::file_fingerprint(&path).unwrap(),
        fp,
        "the bytes moved"
    );
    assert!(unchanged(&path, Some(fp), &src.source_digest, &opts).unwrap());

    let c = Connection::open(&path).unwrap();
    c.execute_batch("UPDATE gen_metadata SET data = x'2000', size = 2")
        .unwrap();
    drop(c);
    assert!(!unchanged(&path, Some(fp), &src.source_digest, &opts).unwrap());
    assert!(!unchanged(&path, None, &src.source_digest, &opts).unwrap());
}

/// A damaged database file is an error naming the file, never a panic or a
/// verdict, and the file is left as it was (the snapshot reads the bytes in
/// place, so this is also the in-place image's bad-input check).
#[test]
fn a_damaged_database_is_an_error_naming_the_file() {
    let (_root, path, s) = fixture(|_| {});
    let good = std::fs::read(&path).unwrap();
    let page = u16::from_be_bytes([good[16], good[17]]) as usize;
    let page = if page == 1 { 65536 } else { page };
    assert!(good.len() >= 3 * page, "fixture has {} bytes", good.len());
    let damages: Vec<(&str, Vec<u8>)> = vec![
        ("not a database", {
            let mut b = good.clone();
            b[..16].copy_from_slice(b"SQLite format 2\0");
            b
        }),
        ("cut mid-page", good[..page + page / 2].to_vec()),
        ("a b-tree page of no type", {
            let mut b = good.clone();
            b[page] = 0xff;
            b
        }),
        ("a cell pointer past the page", {
            let mut b = good.clone();
            // page 1's first cell pointer (after the 100-byte file header
            // and its 12-byte interior or 8-byte leaf page header)
            let header = if b[100] == 0x05 { 12 } else { 8 };
            b[100 + header] = 0xff;
            b[100 + header + 1] = 0xff;
            b
        }),
    ];
    let key = LegacyKey::default();
    for (what, bytes) in damages {
        std::fs::write(&path, &bytes).unwrap();
        match read_source(&path, &options(&s, &key, false)) {
            Err(e) => {
                assert!(
                    e.to_string().contains(&path.display().to_string()),
                    "{what}: {e}"
                );
            }
            Ok(src) => panic!("{what}: read as a source ({:?})", src.reason()),
        }
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{what}: file changed");
    }
}

// ---- #22.6: singular message fields that occur more than once -------------

/// A generic step (index 3 of the conversation) whose payload is `payload`,
/// with `columns` (column, value) written over what the fixture derived.
fn merged_case(
    payload: Vec<u8>,
    columns: Vec<(&'static str, Option<Vec<u8>>)>,
) -> (tempfile::TempDir, std::path::PathBuf, Schema) {
    let s = schema();
    let mut conv = Conv::basic(&s);
    conv.steps.push(payload);
    fixture_conv(&conv, move |c| {
        for (column, value) in columns {
            c.execute(
                &format!("UPDATE steps SET {column} = ?1 WHERE idx = 3"),
                [value],
            )
            .expect("update");
        }
    })
}

fn render(s: &Schema, json: &str) -> Vec<u8> {
    msg(s, "exa.cortex_pb.StepRenderInfo", json)
}

/// The generic step {args, result {result}} with `second_result` as a second
/// occurrence of generic.result: inside the one generic, or (`split_generic`)
/// in a second occurrence of generic.
fn split_render_payload(s: &Schema, second_result: &[u8], split_generic: bool) -> Vec<u8> {
    let sn = |n| num(s, "gemini_coder.Step", n);
    let generic_result = num(s, "exa.cortex_pb.CortexStepGeneric", "result");
    let base = generic_step(s, false);
    let extra_result = len_field(generic_result, second_result);
    if split_generic {
        let mut p = base;
        p.extend(len_field(sn("generic"), &extra_result));
        p
    } else {
        // rebuild: every field of the base step, with `generic` extended.
        let mut out = Vec::new();
        let mut rest = base.as_slice();
        while !rest.is_empty() {
            let (number, field, tail) = split_field(rest);
            if number == sn("generic") {
                let mut g = field_payload(field);
                g.extend(&extra_result);
                out.extend(len_field(number, &g));
            } else {
                out.extend_from_slice(field);
            }
            rest = tail;
        }
        out
    }
}

/// The first top-level field of `b`: (number, its whole encoding, the rest).
fn split_field(b: &[u8]) -> (u32, &[u8], &[u8]) {
    let (key, n) = varint(b);
    let number = (key >> 3) as u32;
    let end = match key & 7 {
        0 => n + varint(&b[n..]).1,
        2 => {
            let (len, m) = varint(&b[n..]);
            n + m + len as usize
        }
        w => panic!("wire type {w} in a test step"),
    };
    (number, &b[..end], &b[end..])
}

/// The payload of one length-delimited field encoding.
fn field_payload(field: &[u8]) -> Vec<u8> {
    let (_, n) = varint(field);
    let (_, m) = varint(&field[n..]);
    field[n + m..].to_vec()
}

fn varint(b: &[u8]) -> (u64, usize) {
    let mut v = 0u64;
    for (i, byte) in b.iter().enumerate() {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return (v, i + 1);
        }
    }
    panic!("truncated varint")
}

#[test]
fn render_info_split_across_result_or_generic_occurrences_is_compared_merged() {
    let s = schema();
    let render_field = num(&s, "exa.cortex_pb.GenericStepResult", "step_render_info");
    let full = render(&s, r#"{"title":"Task","markdown":"**done**"}"#);
    for split_generic in [false, true] {
        let second = len_field(render_field, &full);
        let payload = split_render_payload(&s, &second, split_generic);
        // The merged value passes.
        let (_r, p, _) = merged_case(payload.clone(), vec![("render_info", Some(full.clone()))]);
        let src = read(&s, &p);
        assert!(
            src.qualified(),
            "split_generic {split_generic}: {:?}",
            src.refusals
        );
        // NULL never passes against render info in any occurrence.
        let (_r, p, _) = merged_case(payload.clone(), vec![("render_info", None)]);
        assert_refused(
            &read(&s, &p),
            ReasonClass::RedundantColumn,
            "steps[3].render_info",
        );
        // Another value fails.
        let (_r, p, _) = merged_case(
            payload,
            vec![("render_info", Some(render(&s, r#"{"title":"Task"}"#)))],
        );
        assert_refused(
            &read(&s, &p),
            ReasonClass::RedundantColumn,
            "steps[3].render_info",
        );
    }
}

#[test]
fn render_info_occurring_twice_is_compared_merged() {
    let s = schema();
    let render_field = num(&s, "exa.cortex_pb.GenericStepResult", "step_render_info");
    let mut second = len_field(render_field, &render(&s, r#"{"title":"Task"}"#));
    second.extend(len_field(
        render_field,
        &render(
            &s,
            r#"{"markdown":"**done**","metadata":{"a":"1","b":"2"}}"#,
        ),
    ));
    let payload = split_render_payload(&s, &second, false);
    let merged = render(
        &s,
        r#"{"title":"Task","markdown":"**done**","metadata":{"a":"1","b":"2"}}"#,
    );
    let (_r, p, _) = merged_case(payload.clone(), vec![("render_info", Some(merged))]);
    let src = read(&s, &p);
    assert!(src.qualified(), "{:?}", src.refusals);
    for column in [
        None,
        Some(render(&s, r#"{"title":"Task"}"#)),
        Some(render(
            &s,
            r#"{"markdown":"**done**","metadata":{"a":"1","b":"2"}}"#,
        )),
    ] {
        let (_r, p, _) = merged_case(payload.clone(), vec![("render_info", column)]);
        assert_refused(
            &read(&s, &p),
            ReasonClass::RedundantColumn,
            "steps[3].render_info",
        );
    }
}

#[test]
fn a_later_oneof_member_clears_generic_and_its_render_info() {
    let s = schema();
    let sn = |n| num(&s, "gemini_coder.Step", n);
    let mut payload = generic_step(&s, true);
    payload.extend(len_field(
        sn("run_command"),
        &msg(
            &s,
            "exa.cortex_pb.CortexStepRunCommand",
            r#"{"commandLine":"ls"}"#,
        ),
    ));
    // The generic occurrence's render info is not in the merged step.
    let (_r, p, _) = merged_case(payload.clone(), vec![]);
    assert_refused(
        &read(&s, &p),
        ReasonClass::RedundantColumn,
        "steps[3].render_info",
    );
    let (_r, p, _) = merged_case(payload, vec![("render_info", None)]);
    let src = read(&s, &p);
    assert!(
        !src.refusals
            .iter()
            .any(|r| r.class == ReasonClass::RedundantColumn),
        "{:?}",
        src.refusals
    );
}

#[test]
fn every_redundant_column_is_compared_with_the_merged_field() {
    let s = schema();
    let sn = |n| num(&s, "gemini_coder.Step", n);
    let meta = |j: &str| msg(&s, "exa.cortex_pb.CortexStepMetadata", j);
    let a = r#"{"createdAt":"2026-11-01T10:00:03Z"}"#;
    let b = r#"{"toolCall":{"id":"call_9","name":"manage_task"}}"#;
    let both =
        r#"{"createdAt":"2026-11-01T10:00:03Z","toolCall":{"id":"call_9","name":"manage_task"}}"#;
    let err = |j: &str| msg(&s, "exa.cortex_pb.CortexErrorDetails", j);
    let mut payload = generic_step(&s, false);
    payload.extend(len_field(sn("metadata"), &meta(a)));
    payload.extend(len_field(sn("error"), &err(r#"{"shortError":"x"}"#)));
    payload.extend(len_field(sn("error"), &err(r#"{"fullError":"y"}"#)));
    // The status occurs twice: the last one (ERROR) wins.
    let status = num(&s, "gemini_coder.Step", "status");
    let error_status = s
        .pool
        .get_enum_by_name("exa.cortex_pb.CortexStepStatus")
        .and_then(|e| e.get_value_by_name("CORTEX_STEP_STATUS_ERROR"))
        .map(|v| v.number())
        .expect("ERROR status");
    payload.extend(unknown_varint(status, error_status as u64));
    let good = || {
        vec![
            ("metadata", Some(meta(both))),
            (
                "error_details",
                Some(err(r#"{"shortError":"x","fullError":"y"}"#)),
            ),
        ]
    };
    let with_status = |v: i64, cols: Vec<(&'static str, Option<Vec<u8>>)>| {
        let s2 = schema();
        let mut conv = Conv::basic(&s2);
        conv.steps.push(payload.clone());
        fixture_conv(&conv, move |c| {
            for (column, value) in cols {
                c.execute(
                    &format!("UPDATE steps SET {column} = ?1 WHERE idx = 3"),
                    [value],
                )
                .expect("update");
            }
            c.execute("UPDATE steps SET status = ?1 WHERE idx = 3", [v])
                .expect("status");
        })
    };
    let (_r, p, _) = with_status(i64::from(error_status), good());
    let src = read(&s, &p);
    assert!(src.qualified(), "{:?}", src.refusals);
    // The first status, not the last.
    let done = s
        .pool
        .get_enum_by_name("exa.cortex_pb.CortexStepStatus")
        .and_then(|e| e.get_value_by_name("CORTEX_STEP_STATUS_DONE"))
        .map(|v| v.number())
        .expect("DONE status");
    let (_r, p, _) = with_status(i64::from(done), good());
    assert_refused(
        &read(&s, &p),
        ReasonClass::RedundantColumn,
        "steps[3].status",
    );
    // metadata: NULL, or one occurrence only.
    for column in [None, Some(meta(a)), Some(meta(b))] {
        let mut cols = good();
        cols[0].1 = column;
        let (_r, p, _) = with_status(i64::from(error_status), cols);
        assert_refused(
            &read(&s, &p),
            ReasonClass::RedundantColumn,
            "steps[3].metadata",
        );
    }
    // error_details: NULL, or the first occurrence only.
    for column in [None, Some(err(r#"{"shortError":"x"}"#))] {
        let mut cols = good();
        cols[1].1 = column;
        let (_r, p, _) = with_status(i64::from(error_status), cols);
        assert_refused(
            &read(&s, &p),
            ReasonClass::RedundantColumn,
            "steps[3].error_details",
        );
    }
}

/// The schema check is remembered by the exact `sqlite_master` text: a
/// second database with the same drifted schema gets the same refusals, and
/// schemas with the same objects but other SQL (one column's declared type)
/// are each checked anew, not answered from another's memo.
#[test]
fn a_remembered_schema_check_answers_only_the_same_schema_text() {
    let drift = |c: &Connection| {
        c.execute_batch("ALTER TABLE steps ADD COLUMN shiny blob")
            .unwrap()
    };
    let (_r1, p1, s) = fixture(drift);
    let (_r2, p2, _) = fixture(drift);
    let (first, second) = (read(&s, &p1), read(&s, &p2));
    assert_refused(&first, ReasonClass::SchemaDrift, "steps");
    assert_eq!(first.refusals, second.refusals);
    let retyped = |ty: &'static str| {
        move |c: &Connection| {
            c.execute_batch(&format!(
                "DROP TABLE battle_mode_infos; \
                 CREATE TABLE battle_mode_infos (idx integer, data {ty}, PRIMARY KEY (idx))"
            ))
            .unwrap()
        }
    };
    let mut details = Vec::new();
    for ty in ["text", "integer", "text"] {
        let (_r, p, _) = fixture(retyped(ty));
        let src = read(&s, &p);
        assert_refused(&src, ReasonClass::SchemaDrift, "battle_mode_infos");
        let detail = src.reason().unwrap().detail.clone();
        assert!(
            detail.to_lowercase().contains(&format!("data {ty}")),
            "{detail}"
        );
        details.push(detail);
    }
    assert_eq!(details[0], details[2]);
    assert_ne!(details[0], details[1]);
    let (_r4, p4, _) = fixture(|_| {});
    assert!(read(&s, &p4).qualified(), "{:?}", read(&s, &p4).refusals);
}

// ---------------------------------------------------------------------------
// The exact-columns check compares each table's and index's structure as
// SQLite reports it (issue 44 item 4), through the real binary on a store
// `corpus generate` made: one verified conversation's rows are copied into a
// database whose schema is agy's but for one difference; `export-offline
// --json` must refuse it as schema drift naming the table, column or index
// and the difference, and the accepted spellings must still verify against
// the generator's daemon answers (`verify-capture`).
// ---------------------------------------------------------------------------

use std::path::PathBuf;

/// A store generated by the binary, once: (tempdir, store root, the id of a
/// SQLite conversation its truth says verifies).
fn generated() -> &'static (tempfile::TempDir, PathBuf, String) {
    static STORE: std::sync::OnceLock<(tempfile::TempDir, PathBuf, String)> =
        std::sync::OnceLock::new();
    STORE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        generate_store(&root, &["--conversations", "12", "--scale", "0.2"]);
        let truth = truth_verdicts(&root);
        let mut ids: Vec<&String> = truth
            .iter()
            .filter(|(id, (v, _))| {
                v == "verified" && root.join("conversations").join(format!("{id}.db")).exists()
            })
            .map(|(id, _)| id)
            .collect();
        ids.sort();
        let id = ids
            .first()
            .expect("a verified SQLite conversation")
            .to_string();
        (dir, root, id)
    })
}

/// agy's DDL (public-format-facts §1.2) with `edit` applied to each
/// statement.
fn agy_ddl_with(edit: impl Fn(&str) -> String) -> Vec<String> {
    DDL.iter().map(|s| edit(s)).collect()
}

/// A new `conversations/<id>.db` holding the generated conversation's rows
/// under the schema `ddl`, then `after` run on it: (tempdir, path).
fn respelled(ddl: &[String], after: &str) -> (tempfile::TempDir, PathBuf) {
    let (_, root, id) = generated();
    let dir = tempfile::tempdir().unwrap();
    // The generated files are copied first: attaching them in place could
    // leave a -shm beside the store.
    let src = dir.path().join("src.db");
    let conv = root.join("conversations");
    std::fs::copy(conv.join(format!("{id}.db")), &src).unwrap();
    let wal = conv.join(format!("{id}.db-wal"));
    if wal.exists() {
        std::fs::copy(&wal, dir.path().join("src.db-wal")).unwrap();
    }
    std::fs::create_dir_all(dir.path().join("conversations")).unwrap();
    let path = dir.path().join("conversations").join(format!("{id}.db"));
    let c = Connection::open(&path).unwrap();
    for stmt in ddl {
        c.execute_batch(stmt)
            .unwrap_or_else(|e| panic!("{stmt}: {e}"));
    }
    c.execute("ATTACH ?1 AS src", [src.to_str().unwrap()])
        .unwrap();
    for table in [
        "trajectory_meta",
        "steps",
        "gen_metadata",
        "executor_metadata",
        "parent_references",
        "trajectory_metadata_blob",
        "battle_mode_infos",
    ] {
        let cols: Vec<String> = c
            .prepare(&format!("PRAGMA src.table_info(`{table}`)"))
            .unwrap()
            .query_map([], |r| r.get::<_, String>(1))
            .unwrap()
            .map(|n| format!("`{}`", n.unwrap()))
            .collect();
        let cols = cols.join(",");
        c.execute_batch(&format!(
            "INSERT INTO main.`{table}` ({cols}) SELECT {cols} FROM src.`{table}`"
        ))
        .unwrap();
    }
    c.execute_batch("DETACH src; PRAGMA user_version=1;")
        .unwrap();
    c.execute_batch(after)
        .unwrap_or_else(|e| panic!("{after}: {e}"));
    drop(c);
    (dir, path)
}

/// `export-offline --json` of `db`: (exit code, its JSON summary).
fn offline_verdict(db: &Path) -> (Option<i32>, serde_json::Value) {
    let o = run(&[
        "export-offline",
        "--json",
        "--no-tree",
        db.to_str().unwrap(),
    ]);
    // Anything but the summary (an error) is kept as its words.
    let doc = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|_| serde_json::json!({ "verdict": "none", "reason": output_text(&o) }));
    (o.status.code(), doc)
}

/// Why `db` is not refused as schema drift (exit 3, unknown) with a reason
/// whose location names `location` and whose detail names `detail`, if it
/// is not.
fn drift_miss(db: &Path, location: &str, detail: &str) -> Option<String> {
    let (code, doc) = offline_verdict(db);
    let reason = &doc["reason"];
    let (loc, det) = (
        reason["location"].as_str().unwrap_or_default(),
        reason["detail"].as_str().unwrap_or_default(),
    );
    let refused = doc["verdict"] == "unknown"
        && code == Some(3)
        && reason["class"] == "schema-drift"
        && loc.contains(location)
        && detail_has(det, detail);
    (!refused).then(|| {
        format!(
            "wanted schema-drift at {location:?} naming {detail:?}; got exit {code:?}, verdict {}, reason {reason}",
            doc["verdict"]
        )
    })
}

/// `db` is refused as schema drift (exit 3, unknown), the reason's location
/// naming `location` and its detail `detail`.
fn assert_drift(db: &Path, location: &str, detail: &str) {
    if let Some(miss) = drift_miss(db, location, detail) {
        panic!("{miss}");
    }
}

fn detail_has(detail: &str, part: &str) -> bool {
    detail.to_lowercase().contains(&part.to_lowercase())
}

/// `db` verifies against the generator's daemon answers.
fn assert_verifies(db: &Path) {
    let (_, root, id) = generated();
    let truth = root.join(".truth").join("daemon");
    let o = bin()
        .arg("verify-capture")
        .arg("--db")
        .arg(db)
        .arg("--full")
        .arg(truth.join(format!("{id}.full.json")))
        .arg("--ordinary")
        .arg(truth.join(format!("{id}.ordinary.json")))
        .output()
        .unwrap();
    let out = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.starts_with(&format!("VERIFIED {id}")), "{out}");
}

/// The schema of `table` in agy's DDL with `from` replaced by `to`.
fn replace_in(table: &'static str, from: &'static str, to: &'static str) -> Vec<String> {
    agy_ddl_with(|s| {
        if s.starts_with(&format!("CREATE TABLE `{table}`")) {
            assert!(s.contains(from), "{s} lacks {from}");
            s.replacen(from, to, 1)
        } else {
            s.to_string()
        }
    })
}

/// `idx_steps_status` declared as `index` instead.
fn status_index(index: &'static str) -> Vec<String> {
    agy_ddl_with(|s| {
        if s.contains("`idx_steps_status`") {
            index.to_string()
        } else {
            s.to_string()
        }
    })
}

#[test]
fn the_accepted_spellings_verify() {
    // agy's DDL itself.
    let (_d, db) = respelled(&agy_ddl_with(str::to_string), "");
    assert_verifies(&db);
    // The same tables spelled as older builds and other writers do
    // (§1.2): names unquoted or otherwise quoted, upper-case types, the
    // integer and text keys inline, other spacing, comments.
    let older = [
        "CREATE TABLE trajectory_meta (\n  trajectory_id TEXT PRIMARY KEY,\n  cascade_id TEXT,\n  trajectory_type INTEGER,\n  source INTEGER\n)",
        "CREATE TABLE steps (idx INTEGER PRIMARY KEY, step_type INTEGER NOT NULL DEFAULT 0, status INTEGER NOT NULL DEFAULT 0, has_subtrajectory NUMERIC NOT NULL DEFAULT false, metadata BLOB, error_details BLOB, permissions BLOB, task_details BLOB, render_info BLOB, step_payload BLOB, step_format INTEGER NOT NULL DEFAULT 0)",
        "CREATE INDEX idx_steps_status ON steps (status)",
        "CREATE INDEX \"idx_steps_step_type\" ON \"steps\"(\"step_type\")",
        "CREATE TABLE \"gen_metadata\" (\"idx\" integer, \"data\" blob, \"size\" integer NOT NULL DEFAULT 0, PRIMARY KEY (\"idx\"))",
        "CREATE TABLE [executor_metadata] ([idx] integer PRIMARY KEY, [data] blob)",
        "CREATE TABLE parent_references (idx integer, -- the row\n data blob /* a CortexTrajectoryReference */, PRIMARY KEY (idx))",
        "CREATE TABLE trajectory_metadata_blob (id TEXT DEFAULT \"main\" PRIMARY KEY, data BLOB)",
        "create table battle_mode_infos (idx integer primary key, data blob)",
    ]
    .map(str::to_string);
    let (_d, db) = respelled(&older, "");
    assert_verifies(&db);
}

/// The simplified rendering §1.2 calls older drops the NOT NULL and
/// DEFAULT clauses: another structure (SQLite reports both), and no agy
/// build is known to have written it, so it stays refused (the stricter
/// reading, as before the structural comparison).
#[test]
fn a_table_without_agys_not_null_and_defaults_is_refused() {
    let ddl = replace_in(
        "gen_metadata",
        "`size` integer NOT NULL DEFAULT 0",
        "`size` integer",
    );
    let (_d, db) = respelled(&ddl, "");
    assert_drift(&db, "table `gen_metadata` column `size`", "not null false");
}

#[test]
fn a_generated_virtual_column_is_refused() {
    // The issue's reproduction: PRAGMA table_info does not list it.
    let (_d, db) = respelled(
        &agy_ddl_with(str::to_string),
        "ALTER TABLE steps ADD COLUMN g INTEGER GENERATED ALWAYS AS (1) VIRTUAL",
    );
    assert_drift(&db, "table `steps` column `g`", "generated VIRTUAL column");
}

#[test]
fn a_generated_stored_column_is_refused() {
    let ddl = replace_in(
        "steps",
        ",PRIMARY KEY (`idx`)",
        ",`g` integer GENERATED ALWAYS AS (`status` + 1) STORED,PRIMARY KEY (`idx`)",
    );
    let (_d, db) = respelled(&ddl, "");
    assert_drift(&db, "table `steps` column `g`", "generated STORED column");
}

#[test]
fn a_column_check_constraint_is_refused() {
    let ddl = replace_in(
        "steps",
        "`status` integer NOT NULL DEFAULT 0",
        "`status` integer NOT NULL DEFAULT 0 CHECK (`status` >= 0)",
    );
    let (_d, db) = respelled(&ddl, "");
    assert_drift(&db, "table `steps` column `status`", "CHECK constraint");
}

#[test]
fn a_table_check_constraint_is_refused() {
    let ddl = replace_in(
        "gen_metadata",
        ",PRIMARY KEY (`idx`)",
        ",PRIMARY KEY (`idx`), CHECK (`size` = length(`data`))",
    );
    let (_d, db) = respelled(&ddl, "");
    assert_drift(&db, "table `gen_metadata`", "CHECK constraint");
}

#[test]
fn a_column_collation_is_refused() {
    let ddl = replace_in(
        "trajectory_meta",
        "`cascade_id` text",
        "`cascade_id` text COLLATE NOCASE",
    );
    let (_d, db) = respelled(&ddl, "");
    assert_drift(
        &db,
        "table `trajectory_meta` column `cascade_id`",
        "collation NOCASE",
    );
}

#[test]
fn a_foreign_key_is_refused() {
    let ddl = replace_in(
        "gen_metadata",
        "`idx` integer,",
        "`idx` integer REFERENCES `steps`(`idx`),",
    );
    let (_d, db) = respelled(&ddl, "");
    assert_drift(
        &db,
        "table `gen_metadata` column `idx`",
        "foreign key to `steps`",
    );
}

#[test]
fn a_strict_table_is_refused() {
    let ddl = replace_in(
        "executor_metadata",
        "PRIMARY KEY (`idx`))",
        "PRIMARY KEY (`idx`)) STRICT",
    );
    let (_d, db) = respelled(&ddl, "");
    assert_drift(&db, "table `executor_metadata`", "STRICT");
}

#[test]
fn a_without_rowid_table_is_refused() {
    let ddl = replace_in(
        "parent_references",
        "PRIMARY KEY (`idx`))",
        "PRIMARY KEY (`idx`)) WITHOUT ROWID",
    );
    let (_d, db) = respelled(&ddl, "");
    assert_drift(&db, "table `parent_references`", "WITHOUT ROWID");
}

#[test]
fn an_index_unlike_agys_is_refused() {
    let cases = [
        (
            "CREATE INDEX `idx_steps_status` ON `steps`(`status`) WHERE `status` > 0",
            "partial index",
        ),
        (
            "CREATE INDEX `idx_steps_status` ON `steps`(`status` DESC)",
            "`status` DESC",
        ),
        (
            "CREATE INDEX `idx_steps_status` ON `steps`(`status`, `step_type`)",
            "keys (`status`, `step_type`, rowid)",
        ),
        (
            "CREATE INDEX `idx_steps_status` ON `steps`(`status` COLLATE NOCASE)",
            "`status` COLLATE NOCASE",
        ),
        (
            "CREATE INDEX `idx_steps_status` ON `steps`(`status` + 0)",
            "an expression",
        ),
    ];
    let misses: Vec<String> = cases
        .iter()
        .filter_map(|(index, detail)| {
            let (_d, db) = respelled(&status_index(index), "");
            drift_miss(&db, "index `idx_steps_status`", detail).map(|m| format!("{index}: {m}"))
        })
        .collect();
    assert!(misses.is_empty(), "{}", misses.join("\n"));
}

#[test]
fn a_unique_index_instead_of_a_plain_one_is_refused() {
    // Statuses repeat, so the unique declaration is written into the schema
    // text (quick_check does not verify uniqueness).
    let (_d, db) = respelled(
        &agy_ddl_with(str::to_string),
        "PRAGMA writable_schema=ON; \
         UPDATE sqlite_master SET sql = 'CREATE UNIQUE INDEX `idx_steps_status` ON `steps`(`status`)' \
         WHERE name = 'idx_steps_status'; \
         PRAGMA writable_schema=OFF;",
    );
    assert_drift(&db, "index `idx_steps_status`", "UNIQUE");
}
