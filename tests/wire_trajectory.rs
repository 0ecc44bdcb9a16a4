//! The step index the offline path projects from reads every generated
//! source exactly as decoding the whole tree does: the same steps, types and
//! cascade id; a step said to pass through is never a generic wrapper; a
//! passing strict scan always decodes; and projecting from the index gives
//! the projection of the decoded tree.

// Tests read the files they wrote directly: the bounded-read rule
// (clippy.toml) is for the tool's own inputs.
#![allow(clippy::disallowed_methods)]

use agy_audit::project::{project, project_message};
use agy_audit::schema::{message_refs, Schema};
use agy_audit::source::legacy::LegacyKey;
use agy_audit::source::{read_source, ReadOptions};
use agy_corpus::corpus::{generate, GenerateOptions, PlanOptions};
use prost_reflect::ReflectMessage;

#[test]
fn the_step_index_reads_each_source_as_the_decoded_tree() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    generate(&GenerateOptions {
        out: root.clone(),
        plan: PlanOptions {
            conversations: 40,
            seed: 11,
            ..PlanOptions::default()
        },
        force: false,
    })
    .unwrap();
    let s = Schema::modeled().unwrap();
    let key = LegacyKey::default();
    let opts = ReadOptions {
        schema: &s,
        legacy_key: &key,
        collect_all: false,
        fingerprint: false,
    };
    let (mut indexed, mut through, mut decoded_steps) = (0, 0, 0);
    for e in std::fs::read_dir(root.join("conversations")).unwrap() {
        let path = e.unwrap().path();
        if !matches!(path.extension().and_then(|x| x.to_str()), Some("db" | "pb")) {
            continue;
        }
        let src = read_source(&path, &opts).unwrap();
        assert!(src.trajectory.is_none(), "offline reads leave the tree");
        let Some(w) = &src.wire else {
            assert!(
                !src.qualified(),
                "{}: qualified without an index",
                path.display()
            );
            continue;
        };
        indexed += 1;
        let tree = w
            .decode()
            .unwrap_or_else(|e| panic!("{}: scanned but does not decode: {e}", path.display()));
        let steps = message_refs(&tree, "steps");
        assert_eq!(w.len(), steps.len(), "{}", path.display());
        let cascade = tree
            .get_field_by_name("cascade_id")
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        assert_eq!(w.cascade_id(), cascade, "{}", path.display());
        for (i, step) in steps.iter().enumerate() {
            assert_eq!(
                &&w.decode_step(i).unwrap(),
                step,
                "{} step {i}",
                path.display()
            );
            let fd = step.descriptor().get_field_by_name("type").unwrap();
            let number = step.get_field(&fd).as_enum_number().unwrap();
            let name = fd
                .kind()
                .as_enum()
                .and_then(|e| e.get_value(number))
                .map(|v| v.name().to_string());
            assert_eq!(w.step_type_name(i), name, "{} step {i}", path.display());
            if w.passes_through(i) {
                through += 1;
                assert_ne!(name.as_deref(), Some("CORTEX_STEP_TYPE_GENERIC"));
                assert!(
                    !step.has_field_by_name("generic"),
                    "{} step {i}",
                    path.display()
                );
            } else {
                decoded_steps += 1;
            }
        }
        let from_index = project(&s, w);
        let from_tree = project_message(&s, &tree);
        match (&from_index, &from_tree) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.step_rules, b.step_rules, "{}", path.display());
                assert_eq!(a.extra_rules, b.extra_rules, "{}", path.display());
                assert_eq!(a.ordinary(&tree), b.ordinary(&tree), "{}", path.display());
            }
            (Err(a), Err(b)) => assert_eq!(a, b, "{}", path.display()),
            _ => panic!("{}: {from_index:?} vs {from_tree:?}", path.display()),
        }
    }
    assert!(indexed > 20, "{indexed} sources indexed");
    assert!(
        through > 100 && decoded_steps > 20,
        "{through} / {decoded_steps}"
    );
}
