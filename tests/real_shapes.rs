//! The modeled schema against real agy response shapes.
//!
//! `../shared/spec/real-shapes/*.tsv` lists every JSON path (with the JSON
//! types seen) of real GetCascadeTrajectory responses. Each path is walked
//! from `gemini_coder.Trajectory` under a schema and classified:
//!
//! - represented: every segment is a field (by JSON or proto name), `[]`
//!   steps into a repeated field, any key into a map, and every JSON type seen
//!   is one proto3 JSON writes for the field (Timestamp, Duration, FieldMask
//!   and 64-bit integers as strings, wrappers as their value, Struct/Value as
//!   anything);
//! - type mismatch: a JSON type seen is not one the field is written as (and
//!   every path below such a node);
//! - missing: a segment names no field (and every path below it).
//!
//! The same classification runs under the public IDE descriptor set. The test
//! fails when a path the IDE set represents is not represented by the modeled
//! schema, or on any type mismatch under the modeled schema. The paths that
//! neither schema represents are listed, by the message where the walk stops,
//! in proto/CONFORMANCE.md ("Seen in real data, not modeled"); the test
//! checks that list is exact.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)] // a harness's or cargo's output, not a command's (clippy.toml)

use agy_audit::schema::Schema;
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

fn shared() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared");
    p.exists().then_some(p)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Represented,
    Mismatch,
    Missing,
}

/// Where the walk stands after some segments.
#[derive(Clone)]
enum Pos {
    /// One value of this kind (a singular field, a list element, a map value).
    Value(Kind),
    /// A repeated or map field as a whole (the JSON array or object).
    Container(FieldDescriptor),
    /// Free-form JSON (Struct, Value, the interior of an Any).
    Free,
}

/// The JSON types proto3 JSON writes for one value of `kind` (null aside).
fn written_as(kind: &Kind) -> &'static [&'static str] {
    match kind {
        Kind::Double | Kind::Float => &["number", "string"],
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 | Kind::Uint32 | Kind::Fixed32 => &["number"],
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 | Kind::Uint64 | Kind::Fixed64 => &["string"],
        Kind::Bool => &["boolean"],
        Kind::String | Kind::Bytes => &["string"],
        Kind::Enum(e) if e.full_name() == "google.protobuf.NullValue" => &["null"],
        Kind::Enum(_) => &["string"],
        Kind::Message(m) => match m.full_name() {
            "google.protobuf.Timestamp"
            | "google.protobuf.Duration"
            | "google.protobuf.FieldMask"
            | "google.protobuf.Int64Value"
            | "google.protobuf.UInt64Value"
            | "google.protobuf.StringValue"
            | "google.protobuf.BytesValue" => &["string"],
            "google.protobuf.Int32Value"
            | "google.protobuf.UInt32Value"
            | "google.protobuf.DoubleValue"
            | "google.protobuf.FloatValue" => &["number", "string"],
            "google.protobuf.BoolValue" => &["boolean"],
            "google.protobuf.ListValue" => &["array"],
            "google.protobuf.Value" => &["object", "array", "string", "number", "boolean", "null"],
            _ => &["object"],
        },
    }
}

fn allowed(pos: &Pos) -> &'static [&'static str] {
    match pos {
        Pos::Value(k) => written_as(k),
        Pos::Container(f) if f.is_map() => &["object"],
        Pos::Container(_) => &["array"],
        Pos::Free => &["object", "array", "string", "number", "boolean", "null"],
    }
}

fn field_named(m: &MessageDescriptor, seg: &str) -> Option<FieldDescriptor> {
    m.fields().find(|f| f.json_name() == seg || f.name() == seg)
}

/// One path's step: `Err(class)` when the walk cannot continue.
/// `at` records the message and segment where a field was not found.
fn step(pos: &Pos, seg: &str, at: &mut Option<(String, String)>) -> Result<Pos, Class> {
    match pos {
        Pos::Free => Ok(Pos::Free),
        Pos::Container(f) if f.is_map() => match f.kind() {
            Kind::Message(entry) => Ok(Pos::Value(entry.map_entry_value_field().kind())),
            _ => Err(Class::Mismatch),
        },
        Pos::Container(f) => {
            if seg == "[]" {
                Ok(Pos::Value(f.kind()))
            } else {
                Err(Class::Mismatch)
            }
        }
        Pos::Value(Kind::Message(m)) => match m.full_name() {
            "google.protobuf.Struct" | "google.protobuf.Value" | "google.protobuf.Any" => {
                Ok(Pos::Free)
            }
            "google.protobuf.ListValue" if seg == "[]" => Ok(Pos::Free),
            _ if written_as(&Kind::Message(m.clone())) != ["object"] => Err(Class::Mismatch),
            _ if seg == "[]" => Err(Class::Mismatch),
            _ => match field_named(m, seg) {
                Some(f) if f.is_list() || f.is_map() => Ok(Pos::Container(f)),
                Some(f) => Ok(Pos::Value(f.kind())),
                None => {
                    *at = Some((m.full_name().to_string(), seg.to_string()));
                    Err(Class::Missing)
                }
            },
        },
        Pos::Value(_) => Err(Class::Mismatch),
    }
}

struct Walk {
    class: Class,
    /// For a missing path: the message and JSON segment where the walk stopped.
    stop: Option<(String, String)>,
    /// The fields walked through (message full name, field name).
    fields: Vec<FieldDescriptor>,
}

fn walk(root: &MessageDescriptor, path: &str, types: &[&str]) -> Walk {
    let mut pos = Pos::Value(Kind::Message(root.clone()));
    let mut stop = None;
    let mut fields = Vec::new();
    if !path.is_empty() {
        for seg in path.split('.') {
            match step(&pos, seg, &mut stop) {
                Ok(next) => {
                    if let Pos::Value(Kind::Message(m)) = &pos {
                        if let Some(f) = field_named(m, seg) {
                            fields.push(f);
                        }
                    }
                    pos = next;
                }
                Err(class) => {
                    return Walk {
                        class,
                        stop,
                        fields,
                    }
                }
            }
        }
    }
    let ok = allowed(&pos);
    let class = if types.iter().all(|t| *t == "null" || ok.contains(t)) {
        Class::Represented
    } else {
        Class::Mismatch
    };
    Walk {
        class,
        stop: None,
        fields,
    }
}

fn listing(shared: &std::path::Path, version: &str) -> Vec<(String, Vec<String>)> {
    let p = shared.join(format!("spec/real-shapes/agy-{version}-sidecar-shape.tsv"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    text.lines()
        .map(|l| {
            let (path, types) = l
                .split_once('\t')
                .unwrap_or_else(|| panic!("bad line {l:?}"));
            (
                path.to_string(),
                types.split('|').map(str::to_string).collect(),
            )
        })
        .collect()
}

struct Report {
    counts: BTreeMap<Class, usize>,
    classes: Vec<(String, Class)>,
    /// Missing paths: (message, JSON segment) where the walk stopped → paths.
    stops: BTreeMap<(String, String), BTreeSet<String>>,
    mismatches: Vec<String>,
    walks: BTreeMap<String, Vec<FieldDescriptor>>,
}

fn classify(schema: &Schema, lines: &[(String, Vec<String>)]) -> Report {
    let root = schema
        .pool
        .get_message_by_name("gemini_coder.Trajectory")
        .expect("gemini_coder.Trajectory");
    let mut r = Report {
        counts: BTreeMap::new(),
        classes: Vec::new(),
        stops: BTreeMap::new(),
        mismatches: Vec::new(),
        walks: BTreeMap::new(),
    };
    for (path, types) in lines {
        let types: Vec<&str> = types.iter().map(String::as_str).collect();
        let w = walk(&root, path, &types);
        *r.counts.entry(w.class).or_default() += 1;
        if w.class == Class::Mismatch {
            r.mismatches.push(format!("{path}\t{}", types.join("|")));
        }
        if let Some(s) = w.stop {
            r.stops.entry(s).or_default().insert(path.clone());
        }
        r.classes.push((path.clone(), w.class));
        r.walks.insert(path.clone(), w.fields);
    }
    r
}

fn counts(r: &Report) -> String {
    let c = |k| r.counts.get(&k).copied().unwrap_or(0);
    format!(
        "{} represented / {} type mismatch / {} missing",
        c(Class::Represented),
        c(Class::Mismatch),
        c(Class::Missing)
    )
}

fn label(f: &FieldDescriptor) -> &'static str {
    if f.is_map() {
        "map"
    } else if f.is_list() {
        "repeated"
    } else if f.supports_presence() && f.containing_oneof().is_some_and(|o| o.is_synthetic()) {
        "optional"
    } else {
        "singular"
    }
}

fn kind_name(k: &Kind) -> String {
    match k {
        Kind::Message(m) => m.full_name().to_string(),
        Kind::Enum(e) => e.full_name().to_string(),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// The "Seen in real data, not modeled" section of CONFORMANCE.md: one row
/// per message, `| Message | jsonName (paths), jsonName (paths) | total |`.
fn listed_unmodeled() -> BTreeMap<(String, String), usize> {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("proto/CONFORMANCE.md"),
    )
    .expect("proto/CONFORMANCE.md");
    let Some((_, section)) = text.split_once("## Seen in real data, not modeled") else {
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    for line in section.lines().skip(1) {
        if line.starts_with("## ") {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() != 5 || !cells[1].contains('.') {
            continue;
        }
        let mut total = 0;
        for item in cells[2].split(", ") {
            let (name, n) = item
                .strip_suffix(')')
                .and_then(|i| i.split_once(" ("))
                .unwrap_or_else(|| panic!("CONFORMANCE.md: bad item {item:?} in {line:?}"));
            let n: usize = n
                .parse()
                .unwrap_or_else(|_| panic!("CONFORMANCE.md: bad count in {line:?}"));
            total += n;
            out.insert((cells[1].to_string(), name.to_string()), n);
        }
        assert_eq!(
            cells[3].parse::<usize>().ok(),
            Some(total),
            "CONFORMANCE.md: total of {line:?}"
        );
    }
    out
}

/// The rows of that section, as they should read.
fn unmodeled_rows(unmodeled: &BTreeMap<(String, String), usize>) -> Vec<String> {
    let mut by_msg: BTreeMap<&str, Vec<(&str, usize)>> = BTreeMap::new();
    for ((msg, seg), n) in unmodeled {
        by_msg.entry(msg).or_default().push((seg, *n));
    }
    by_msg
        .into_iter()
        .map(|(msg, fields)| {
            let total: usize = fields.iter().map(|(_, n)| n).sum();
            let items: Vec<String> = fields.iter().map(|(f, n)| format!("{f} ({n})")).collect();
            format!("| {msg} | {} | {total} |", items.join(", "))
        })
        .collect()
}

#[test]
fn modeled_schema_represents_what_real_data_and_the_ide_set_share() {
    let Some(shared) = shared() else {
        println!("SKIP real_shapes: ../shared not found");
        return;
    };
    let ide_path = shared.join("schema/antigravity-ide-descriptors.protoset");
    let modeled = Schema::modeled().unwrap();
    let ide = Schema::from_file(&ide_path).unwrap();

    let mut failures = Vec::new();
    // (message, JSON segment) → paths, for paths neither schema represents (1.2.10 ∪ 1.2.5).
    let mut unmodeled_paths: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for version in ["1.2.10", "1.2.5"] {
        let lines = listing(&shared, version);
        let m = classify(&modeled, &lines);
        let i = classify(&ide, &lines);
        println!("agy {version} ({} paths)", lines.len());
        println!("  modeled schema: {}", counts(&m));
        println!("  public IDE set: {}", counts(&i));

        // Fields the IDE set represents on paths the modeled schema does not.
        let mut wanted: BTreeMap<String, String> = BTreeMap::new();
        let mut gap = 0usize;
        for ((path, mc), (_, ic)) in m.classes.iter().zip(&i.classes) {
            if *ic == Class::Represented && *mc != Class::Represented {
                gap += 1;
                for f in &i.walks[path] {
                    let owner = f.parent_message().full_name().to_string();
                    let known = modeled
                        .pool
                        .get_message_by_name(&owner)
                        .and_then(|mm| mm.get_field(f.number()));
                    if known.is_none() {
                        wanted.insert(
                            format!("{owner}.{}", f.name()),
                            format!(
                                "= {} ({} {}, JSON {})",
                                f.number(),
                                label(f),
                                kind_name(&f.kind()),
                                f.json_name()
                            ),
                        );
                    }
                }
            }
        }
        if gap > 0 {
            println!("  {gap} paths the IDE set represents and the modeled schema does not; IDE fields to model:");
            for (f, d) in &wanted {
                println!("    {f} {d}");
            }
            failures.push(format!(
                "agy {version}: {gap} paths represented by the IDE set are not represented by the modeled schema"
            ));
        }
        if !m.mismatches.is_empty() {
            println!("  type mismatches under the modeled schema:");
            for p in &m.mismatches {
                println!("    {p}");
            }
            failures.push(format!(
                "agy {version}: {} type mismatches",
                m.mismatches.len()
            ));
        }
        for (k, paths) in &m.stops {
            unmodeled_paths
                .entry(k.clone())
                .or_default()
                .extend(paths.iter().cloned());
        }
    }

    let unmodeled: BTreeMap<(String, String), usize> = unmodeled_paths
        .into_iter()
        .map(|(k, v)| (k, v.len()))
        .collect();
    let listed = listed_unmodeled();
    if listed != unmodeled {
        println!("proto/CONFORMANCE.md \"Seen in real data, not modeled\" should read:");
        println!("| message | JSON fields (paths at or below each) | paths |");
        println!("|---|---|---|");
        for row in unmodeled_rows(&unmodeled) {
            println!("{row}");
        }
        let fields: BTreeSet<_> = unmodeled.keys().collect();
        failures.push(format!(
            "proto/CONFORMANCE.md does not list exactly the {} fields seen in real data and not modeled",
            fields.len()
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---- the default corpus against the real shapes --------------------------------

/// The subtrees agy-reader's shape listings do not descend into.
const PRUNED: &[&str] = &[
    "executorMetadatas",
    "generatorMetadata",
    "metadata.mendelExperimentIds",
    "steps.[].generic",
    "steps.[].metadata.internalMetadata",
    "steps.[].metadata.sourceTrajectoryStepInfo",
    "steps.[].userInput.activeUserState",
    "steps.[].userInput.userConfig",
];

/// A data-dependent map key, which the listings write as `*`: URIs, paths,
/// UUIDs, integers and long hex.
fn volatile(key: &str) -> bool {
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit());
    key.contains('/')
        || key.contains(':')
        || (!key.is_empty() && key.bytes().all(|b| b.is_ascii_digit()))
        || (key.len() >= 16 && hex(key))
        || (key.len() == 36 && key.split('-').all(hex))
}

/// Every path of `v` as the listings write it.
fn shape_paths(v: &serde_json::Value, path: &str, out: &mut BTreeSet<String>) {
    out.insert(path.to_string());
    if PRUNED.contains(&path) {
        return;
    }
    let join = |seg: &str| {
        if path.is_empty() {
            seg.to_string()
        } else {
            format!("{path}.{seg}")
        }
    };
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let seg = if volatile(k) { "*" } else { k.as_str() };
                shape_paths(x, &join(seg), out);
            }
        }
        serde_json::Value::Array(a) => {
            let p = join("[]");
            for x in a {
                shape_paths(x, &p, out);
            }
        }
        _ => {}
    }
}

/// The paths of every conversation the default corpus's daemon serves
/// (full and ordinary views), built in memory from the plan.
fn default_corpus_paths() -> BTreeSet<String> {
    use agy_corpus::corpus::{assemble, content, msg::Builder, plan};
    let p = plan::plan(&plan::PlanOptions::default());
    let b = Builder::new(agy_corpus::schema::Schema::modeled().unwrap());
    let mut out = BTreeSet::new();
    for cp in &p.conversations {
        let a = assemble::assemble(&b, cp, content::build(cp, 1))
            .unwrap_or_else(|e| panic!("{}: {e}", cp.id));
        for bytes in [&a.full, &a.ordinary] {
            let v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
            shape_paths(&v, "", &mut out);
        }
    }
    out
}

/// Item 3 of the real-data issue: the generator writes what real stores
/// hold. Every path of the real 1.2.10 listing that the modeled schema
/// represents appears in the default corpus's daemon responses.
#[test]
fn the_default_corpus_writes_every_modeled_real_path() {
    let Some(shared) = shared() else {
        println!("SKIP real_shapes: ../shared not found");
        return;
    };
    let modeled = Schema::modeled().unwrap();
    let lines = listing(&shared, "1.2.10");
    let r = classify(&modeled, &lines);
    let represented: BTreeSet<&String> = r
        .classes
        .iter()
        .filter(|(_, c)| *c == Class::Represented)
        .map(|(p, _)| p)
        .collect();
    let written = default_corpus_paths();
    let unwritten: Vec<&&String> = represented
        .iter()
        .filter(|p| !written.contains(p.as_str()))
        .collect();
    println!(
        "default corpus: writes {} of the {} modeled real paths; {} paths it writes are not in the listing",
        represented.len() - unwritten.len(),
        represented.len(),
        written.iter().filter(|p| !lines.iter().any(|(l, _)| l == *p)).count()
    );
    for p in &unwritten {
        println!("  unwritten {p}");
    }
    assert!(
        unwritten.is_empty(),
        "{} modeled real paths the corpus never writes",
        unwritten.len()
    );
}
