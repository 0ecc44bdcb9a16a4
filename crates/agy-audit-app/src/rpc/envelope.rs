//! The whole GetCascadeTrajectory answer, checked strictly as the response
//! message `exa.language_server_pb.GetCascadeTrajectoryResponse`: the
//! engine's one-pass reader ([`agy_engine::answer`], whose module doc says
//! what it refuses and which defect it names first) over a body held whole
//! (a captured answer, a test). A live answer is read the same way chunk by
//! chunk as it arrives (`rpc::DaemonClient`).
//!
//! The whole-text check this replaced (`serde_json` visitors over the body)
//! is kept here as the reference of a differential test: both must accept
//! the same bodies and name the same defect.

use agy_engine::answer::AnswerReader;
pub use agy_engine::answer::{Envelope, ResponseDefect, MAX_JSON_DEPTH, RUN_STATUSES};

/// An answer's bytes as text, checked once: every later look at it (the
/// envelope, the trajectory the comparison reads) takes the `String`.
pub fn into_text(body: Vec<u8>) -> Result<String, ResponseDefect> {
    String::from_utf8(body).map_err(|e| ResponseDefect::NotUtf8 {
        offset: e.utf8_error().valid_up_to(),
    })
}

/// Checks `text` as a whole response.
pub fn parse(text: &str) -> Result<Envelope, ResponseDefect> {
    AnswerReader::response().read(text.as_bytes())
}

/// Checks `body` as a bare trajectory (a captured answer without its
/// envelope, as a sidecar keeps it): UTF-8, depth, one JSON object whose
/// `steps` and `generatorMetadata` appear at most once. It has no status or
/// counts to check; the status reads as unspecified and the step count is
/// the trajectory's own.
pub fn parse_bare(text: &str) -> Result<Envelope, ResponseDefect> {
    AnswerReader::bare().read(text.as_bytes())
}

/// Whether `body` is a whole answer (its top-level object has a
/// `trajectory` member, which no Trajectory field is named) rather than a
/// bare trajectory. Only the top level is read.
pub fn is_enveloped(text: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(borrow, default)]
        trajectory: Option<&'a serde_json::value::RawValue>,
    }
    serde_json::from_str::<Probe<'_>>(text).is_ok_and(|p| p.trajectory.is_some())
}

/// The whole-text check the engine's reader replaced, kept as the
/// reference its acceptance is tested against (see `tests` below).
#[cfg(test)]
mod reference {
    use crate::rpc::envelope::{Envelope, ResponseDefect, MAX_JSON_DEPTH, RUN_STATUSES};
    use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use serde::Deserializer;
    use std::fmt;

    /// Checks `text` as a whole response; see the module doc.
    pub fn parse(text: &str) -> Result<Envelope, ResponseDefect> {
        check_depth(text.as_bytes())?;
        let mut de = serde_json::Deserializer::from_str(text);
        let members = (&mut de)
            .deserialize_map(EnvelopeVisitor)
            .and_then(|m| de.end().map(|()| m))
            .map_err(|e| ResponseDefect::NotJson {
                detail: e.to_string(),
            })??;
        let raw = members
            .trajectory
            .ok_or(ResponseDefect::MissingTrajectory)?;
        let start = raw.get().as_ptr() as usize - text.as_ptr() as usize;
        let range = start..start + raw.get().len();
        if !raw.get().starts_with('{') {
            return Err(ResponseDefect::TrajectoryNotObject);
        }
        let lists = count_lists(raw.get())?;
        let status = match members.status {
            None | Some(serde_json::Value::Null) => RUN_STATUSES[0].0,
            Some(v) => run_status(&v)?,
        };
        let steps = count("numTotalSteps", members.num_total_steps)?;
        let metadata = count(
            "numTotalGeneratorMetadata",
            members.num_total_generator_metadata,
        )?;
        if u64::from(steps) != lists.steps {
            return Err(ResponseDefect::CountMismatch {
                member: "numTotalSteps",
                declared: steps,
                actual: lists.steps,
            });
        }
        // Zero is agy's default (the CLI daemon does not send the member).
        if metadata != 0 && u64::from(metadata) != lists.generator_metadata {
            return Err(ResponseDefect::CountMismatch {
                member: "numTotalGeneratorMetadata",
                declared: metadata,
                actual: lists.generator_metadata,
            });
        }
        Ok(Envelope {
            trajectory: range,
            status,
            num_total_steps: steps,
        })
    }

    /// Checks `body` as a bare trajectory (a captured answer without its
    /// envelope, as a sidecar keeps it): UTF-8, depth, one JSON object whose
    /// `steps` and `generatorMetadata` appear at most once. It has no status or
    /// counts to check; the status reads as unspecified and the step count is
    /// the trajectory's own.
    pub fn parse_bare(text: &str) -> Result<Envelope, ResponseDefect> {
        check_depth(text.as_bytes())?;
        let raw: &serde_json::value::RawValue =
            serde_json::from_str(text).map_err(|e| ResponseDefect::NotJson {
                detail: e.to_string(),
            })?;
        if !raw.get().starts_with('{') {
            return Err(ResponseDefect::TrajectoryNotObject);
        }
        let start = raw.get().as_ptr() as usize - text.as_ptr() as usize;
        let lists = count_lists(raw.get())?;
        Ok(Envelope {
            trajectory: start..start + raw.get().len(),
            status: RUN_STATUSES[0].0,
            num_total_steps: u32::try_from(lists.steps).unwrap_or(u32::MAX),
        })
    }

    /// One pass over the bytes: the deepest `[`/`{` nesting outside strings.
    /// A string's body is skipped to its next quote or backslash at a time
    /// (`memchr2`): most of an answer's bytes are text.
    fn check_depth(b: &[u8]) -> Result<(), ResponseDefect> {
        let mut depth = 0usize;
        let mut i = 0;
        while let Some(&c) = b.get(i) {
            match c {
                b'"' => {
                    i += 1;
                    // To the closing quote; an escape takes the next byte with it.
                    loop {
                        let Some(j) = b
                            .get(i..)
                            .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
                        else {
                            // An unterminated string: the parser reports it.
                            return Ok(());
                        };
                        i += j;
                        if b[i] == b'\\' {
                            i += 2;
                        } else {
                            break;
                        }
                    }
                }
                b'[' | b'{' => {
                    depth += 1;
                    if depth > MAX_JSON_DEPTH {
                        return Err(ResponseDefect::TooDeep { offset: i });
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            i += 1;
        }
        Ok(())
    }

    #[derive(Default)]
    struct Members<'a> {
        trajectory: Option<&'a serde_json::value::RawValue>,
        status: Option<serde_json::Value>,
        num_total_steps: Option<serde_json::Value>,
        num_total_generator_metadata: Option<serde_json::Value>,
    }

    struct EnvelopeVisitor;

    impl<'de> Visitor<'de> for EnvelopeVisitor {
        type Value = Result<Members<'de>, ResponseDefect>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a GetCascadeTrajectoryResponse object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut m = Members::default();
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                let slot = match key.as_ref() {
                    "trajectory" => {
                        if m.trajectory.is_some() {
                            return drain(map, repeated("trajectory"));
                        }
                        m.trajectory = Some(map.next_value()?);
                        continue;
                    }
                    "status" => &mut m.status,
                    "numTotalSteps" | "num_total_steps" => &mut m.num_total_steps,
                    "numTotalGeneratorMetadata" | "num_total_generator_metadata" => {
                        &mut m.num_total_generator_metadata
                    }
                    other => {
                        let member = other.chars().take(80).collect();
                        return drain(map, ResponseDefect::UnknownMember { member });
                    }
                };
                if slot.is_some() {
                    return drain(map, repeated(&key));
                }
                *slot = Some(map.next_value()?);
            }
            Ok(Ok(m))
        }
    }

    /// Reads the rest of an object unread (its depth was checked first) so that
    /// the parser reaches its end, and answers `defect`: the first defect found
    /// is the one named, not a parse error about the unread rest.
    fn drain<'de, A: MapAccess<'de>, T>(
        mut map: A,
        defect: ResponseDefect,
    ) -> Result<Result<T, ResponseDefect>, A::Error> {
        // A value whose key was just read is still pending: read it first.
        map.next_value::<IgnoredAny>()?;
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Err(defect))
    }

    fn repeated(member: &str) -> ResponseDefect {
        ResponseDefect::RepeatedMember {
            member: member.to_string(),
        }
    }

    /// The counted lists of a trajectory.
    #[derive(Default)]
    struct Lists {
        steps: u64,
        generator_metadata: u64,
    }

    /// Counts `steps` and `generatorMetadata` (either spelling) in one pass that
    /// skips every other member unread; either list twice is refused.
    fn count_lists(trajectory: &str) -> Result<Lists, ResponseDefect> {
        let mut de = serde_json::Deserializer::from_str(trajectory);
        let lists = (&mut de)
            .deserialize_map(ListsVisitor)
            .and_then(|l| de.end().map(|()| l))
            .map_err(|e| ResponseDefect::NotJson {
                detail: format!("trajectory: {e}"),
            })?;
        lists
    }

    struct ListsVisitor;

    impl<'de> Visitor<'de> for ListsVisitor {
        type Value = Result<Lists, ResponseDefect>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a Trajectory object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut lists = Lists::default();
            let (mut steps, mut metadata) = (false, false);
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                let (seen, slot, name) = match key.as_ref() {
                    "steps" => (&mut steps, &mut lists.steps, "trajectory.steps"),
                    "generatorMetadata" | "generator_metadata" => (
                        &mut metadata,
                        &mut lists.generator_metadata,
                        "trajectory.generatorMetadata",
                    ),
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    }
                };
                if *seen {
                    return drain(map, repeated(name));
                }
                *seen = true;
                *slot = map.next_value_seed(Len)?;
            }
            Ok(Ok(lists))
        }
    }

    /// The length of a JSON array (`null` is an empty list), elements unread.
    struct Len;

    impl<'de> DeserializeSeed<'de> for Len {
        type Value = u64;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Len {
        type Value = u64;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list")
        }

        fn visit_unit<E: de::Error>(self) -> Result<u64, E> {
            Ok(0)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<u64, A::Error> {
            let mut n = 0;
            while seq.next_element::<IgnoredAny>()?.is_some() {
                n += 1;
            }
            Ok(n)
        }
    }

    /// A `CascadeRunStatus` by name or number.
    fn run_status(v: &serde_json::Value) -> Result<&'static str, ResponseDefect> {
        let found = match v {
            serde_json::Value::String(s) => RUN_STATUSES.iter().find(|(n, _)| n == s),
            serde_json::Value::Number(_) => agy_engine::compare::value::int_of(v)
                .and_then(|n| RUN_STATUSES.iter().find(|(_, k)| i128::from(*k) == n)),
            _ => None,
        };
        found
            .map(|(n, _)| *n)
            .ok_or_else(|| ResponseDefect::UnknownStatus { value: short(v) })
    }

    /// A uint32 under the proto3 JSON mapping: a number or a numeric string of
    /// an integral value (`227`, `"227"`, `2.27e2`); `null` or absent is zero.
    fn count(member: &'static str, v: Option<serde_json::Value>) -> Result<u32, ResponseDefect> {
        let v = match v {
            None | Some(serde_json::Value::Null) => return Ok(0),
            Some(v) => v,
        };
        let n = match &v {
            serde_json::Value::Number(_) | serde_json::Value::String(_) => {
                agy_engine::compare::value::int_of(&v)
            }
            _ => None,
        };
        n.and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| ResponseDefect::BadCount {
                member,
                value: short(&v),
            })
    }

    /// A value as the error shows it, at most 80 characters.
    fn short(v: &serde_json::Value) -> String {
        let t = v.to_string();
        if t.chars().count() > 80 {
            format!("{}...", t.chars().take(80).collect::<String>())
        } else {
            t
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(traj: &str, rest: &str) -> Vec<u8> {
        format!("{{\"trajectory\":{traj}{rest}}}").into_bytes()
    }

    const T2: &str = r#"{"steps":[{"a":1},{"b":[1,2]}],"generatorMetadata":[{}]}"#;

    #[test]
    fn a_consistent_answer_parses_in_every_spelling() {
        for rest in [
            r#","status":"CASCADE_RUN_STATUS_IDLE","numTotalSteps":"2","numTotalGeneratorMetadata":1"#,
            r#","status":1,"num_total_steps":2,"num_total_generator_metadata":"1""#,
            r#","numTotalSteps":2.0e0,"numTotalGeneratorMetadata":"1e0","status":null"#,
            r#","numTotalSteps":"2""#,
            r#","numTotalSteps":"2","numTotalGeneratorMetadata":"0""#,
        ] {
            let b = body(T2, rest);
            let e = into_text(b.clone())
                .and_then(|t| parse(&t))
                .unwrap_or_else(|d| panic!("{rest}: {d}"));
            assert_eq!(&b[e.trajectory.clone()], T2.as_bytes());
            assert_eq!(e.num_total_steps, 2);
        }
    }

    #[test]
    fn each_defect_is_named() {
        let ok = r#","status":"CASCADE_RUN_STATUS_IDLE","numTotalSteps":"2","numTotalGeneratorMetadata":1"#;
        type Case = (Vec<u8>, fn(&ResponseDefect) -> bool);
        let cases: Vec<Case> = vec![
            (b"\xff".to_vec(), |d| {
                matches!(d, ResponseDefect::NotUtf8 { .. })
            }),
            (
                body(
                    T2,
                    &format!("{ok},\"x\":{}1{}", "[".repeat(200), "]".repeat(200)),
                ),
                |d| matches!(d, ResponseDefect::TooDeep { .. }),
            ),
            (
                body(T2, &format!("{ok},\"extra\":1")),
                |d| matches!(d, ResponseDefect::UnknownMember { member } if member == "extra"),
            ),
            (body(T2, &format!("{ok},\"status\":1")), |d| {
                matches!(d, ResponseDefect::RepeatedMember { .. })
            }),
            (body(T2, &format!("{ok},\"num_total_steps\":2")), |d| {
                matches!(d, ResponseDefect::RepeatedMember { .. })
            }),
            (body(T2, &format!("{ok},\"trajectory\":{{}}")), |d| {
                matches!(d, ResponseDefect::RepeatedMember { .. })
            }),
            (b"{\"status\":1}".to_vec(), |d| {
                matches!(d, ResponseDefect::MissingTrajectory)
            }),
            (body("[]", ""), |d| {
                matches!(d, ResponseDefect::TrajectoryNotObject)
            }),
            (
                body(
                    T2,
                    r#","status":"CASCADE_RUN_STATUS_NEW","numTotalSteps":"2","numTotalGeneratorMetadata":1"#,
                ),
                |d| matches!(d, ResponseDefect::UnknownStatus { .. }),
            ),
            (
                body(
                    T2,
                    r#","numTotalSteps":"99999999999999999999999999227","numTotalGeneratorMetadata":1"#,
                ),
                |d| matches!(d, ResponseDefect::BadCount { .. }),
            ),
            (
                body(T2, r#","numTotalSteps":"3","numTotalGeneratorMetadata":1"#),
                |d| {
                    matches!(
                        d,
                        ResponseDefect::CountMismatch {
                            declared: 3,
                            actual: 2,
                            ..
                        }
                    )
                },
            ),
            (body(T2, r#","numTotalGeneratorMetadata":1"#), |d| {
                matches!(d, ResponseDefect::CountMismatch { declared: 0, .. })
            }),
            (
                body(T2, r#","numTotalSteps":2,"numTotalGeneratorMetadata":2"#),
                |d| {
                    matches!(
                        d,
                        ResponseDefect::CountMismatch {
                            member: "numTotalGeneratorMetadata",
                            declared: 2,
                            actual: 1
                        }
                    )
                },
            ),
            (
                body(
                    r#"{"steps":[],"steps":[{}],"generatorMetadata":[{}]}"#,
                    r#","numTotalSteps":1,"numTotalGeneratorMetadata":1"#,
                ),
                |d| matches!(d, ResponseDefect::RepeatedMember { .. }),
            ),
            (body(T2, &format!("{ok}}} trailing")), |d| {
                matches!(d, ResponseDefect::NotJson { .. })
            }),
            (b"[1]".to_vec(), |d| {
                matches!(d, ResponseDefect::NotJson { .. })
            }),
        ];
        for (b, want) in cases {
            match into_text(b.clone()).and_then(|t| parse(&t)) {
                Ok(_) => panic!("accepted {}", String::from_utf8_lossy(&b)),
                Err(d) => assert!(want(&d), "{}: {d:?}", String::from_utf8_lossy(&b)),
            }
        }
    }

    /// Both readers name the same verdict: the same envelope, or the same
    /// defect (a syntax error's wording is each parser's own).
    fn agree(a: &Result<Envelope, ResponseDefect>, b: &Result<Envelope, ResponseDefect>) -> bool {
        match (a, b) {
            (Err(ResponseDefect::NotJson { .. }), Err(ResponseDefect::NotJson { .. })) => true,
            _ => a == b,
        }
    }

    /// Answers that pass, in the spellings a daemon may use, as the seeds
    /// of the mutations below.
    fn seeds() -> Vec<Vec<u8>> {
        let deep = format!("{}1{}", "[".repeat(126), "]".repeat(126));
        let mut seeds: Vec<Vec<u8>> = [
            r#","status":"CASCADE_RUN_STATUS_IDLE","numTotalSteps":"2","numTotalGeneratorMetadata":1"#,
            r#","status":1,"num_total_steps":2,"num_total_generator_metadata":"1""#,
            r#","numTotalSteps":2.0e0,"numTotalGeneratorMetadata":"1e0","status":null"#,
            r#" , "numTotalSteps" : 2 "#,
        ]
        .iter()
        .map(|rest| body(T2, rest))
        .collect();
        seeds.push(
            format!(
                r#"{{"st\u0061tus":4,"trajectory":{{"steps":[{{"t":"\ud83d\ude00 \u00e9 \" \\ \/ \b\f\n\r\t é"}}, {deep}, -0.5E+3, true, false, null],"generator_metadata":null,"x":{{"steps":1}}}},"numTotalSteps":"6"}}"#
            )
            .into_bytes(),
        );
        seeds.push(br#"{"trajectory":{}}"#.to_vec());
        // Near misses too, so that mutations land on each side of them.
        seeds.push(br#"{"trajectory":{"steps":[],"generatorMetadata":[1],"generator_metadata":[]},"status":2,"status":3}"#.to_vec());
        seeds.push(br#"{"numTotalSteps":0,"trajectory":[{"steps":[]}],"status":"0"}"#.to_vec());
        seeds.push(br#"{"status":1,"numTotalSteps":"0","numTotalGeneratorMetadata":0}"#.to_vec());
        seeds
    }

    /// One random change to `b`: a byte replaced by one that matters to a
    /// JSON reader, a byte dropped, a run repeated, or the end cut.
    fn mutate(rng: &mut fastrand::Rng, b: &[u8]) -> Vec<u8> {
        const BYTES: &[u8] = b"\"\\{}[],: 0-e.u\xff\xc3\x01ntf9";
        let mut m = b.to_vec();
        if m.is_empty() {
            return m;
        }
        let at = rng.usize(..m.len());
        match rng.usize(..4) {
            0 => m[at] = BYTES[rng.usize(..BYTES.len())],
            1 => {
                m.remove(at);
            }
            2 => {
                let end = (at + 1 + rng.usize(..12)).min(m.len());
                let run = m[at..end].to_vec();
                m.splice(at..at, run);
            }
            _ => m.truncate(at),
        }
        m
    }

    #[test]
    fn the_one_pass_reader_agrees_with_the_whole_text_reference() {
        // Seeded, so a failure reproduces.
        let mut rng = fastrand::Rng::with_seed(0x9e37_79b9_7f4a_7c15);
        let mut kinds = std::collections::BTreeMap::new();
        for seed in seeds() {
            let mut bodies = vec![seed.clone()];
            for _ in 0..3000 {
                let once = mutate(&mut rng, &seed);
                bodies.push(mutate(&mut rng, &once));
                bodies.push(once);
            }
            for b in bodies {
                let reference = into_text(b.clone()).and_then(|t| reference::parse(&t));
                let reader = AnswerReader::response().read(&b);
                // The listing taken in the same pass, when it is sure, is
                // the one a walk of the whole text gives.
                let mut listed = AnswerReader::response().listing();
                listed.push(&b);
                if let Ok((_, Some(listing))) = listed.finish_listed() {
                    let mut want = crate::shapes::Listing::new();
                    want.add_bytes(std::path::Path::new(""), &b).unwrap();
                    assert_eq!(
                        listing.text(),
                        want.text(),
                        "{}",
                        String::from_utf8_lossy(&b)
                    );
                    *kinds.entry("listed".to_string()).or_insert(0) += 1;
                }
                assert!(
                    agree(&reference, &reader),
                    "{}:\n reference {reference:?}\n reader    {reader:?}",
                    String::from_utf8_lossy(&b)
                );
                // The same verdict in chunks of any size.
                let mut chunked = AnswerReader::response();
                let mut rest = &b[..];
                while !rest.is_empty() {
                    let n = 1 + rng.usize(..rest.len().min(9));
                    chunked.push(&rest[..n]);
                    rest = &rest[n..];
                }
                assert_eq!(chunked.finish(), reader);
                let bare_ref = into_text(b.clone()).and_then(|t| reference::parse_bare(&t));
                assert!(agree(&bare_ref, &AnswerReader::bare().read(&b)));
                let kind = match &reader {
                    Ok(_) => "ok".to_string(),
                    Err(d) => format!("{d:?}")
                        .split([' ', '{'])
                        .next()
                        .unwrap_or("")
                        .to_string(),
                };
                *kinds.entry(kind).or_insert(0) += 1;
            }
        }
        // The mutations reach every kind of verdict, or the test proves little.
        for kind in [
            "ok",
            "listed",
            "NotUtf8",
            "TooDeep",
            "NotJson",
            "UnknownMember",
            "RepeatedMember",
            "MissingTrajectory",
            "TrajectoryNotObject",
            "UnknownStatus",
            "BadCount",
            "CountMismatch",
        ] {
            assert!(kinds.contains_key(kind), "no {kind} among {kinds:?}");
        }
    }

    #[test]
    fn the_status_table_is_the_schemas() {
        let schema = crate::schema::Schema::modeled().expect("modeled schema");
        let e = schema
            .pool
            .get_enum_by_name("exa.cortex_pb.CascadeRunStatus")
            .expect("CascadeRunStatus is modeled");
        let declared: Vec<(String, i32)> = e
            .values()
            .map(|v| (v.name().to_string(), v.number()))
            .collect();
        let table: Vec<(String, i32)> = RUN_STATUSES
            .iter()
            .map(|(n, k)| (n.to_string(), *k))
            .collect();
        assert_eq!(declared, table);
    }
}
