//! From built JSON to stored bytes: canonical encodings, the declared
//! source-only fields and near-misses written as raw wire bytes, the SQLite
//! rows with their redundant columns, the legacy plaintext, and the daemon's
//! full and ordinary views.

use super::content::{self, ConvJson, GrepInfo};
use super::msg::Builder;
use super::plan::{
    ColumnFault, ConvPlan, DriftKind, GapKind, MalformedAt, MapFault, NearMiss, Planner50Fault,
    Prompt23Fault, Recipe, StepKind, TaskKind, UnknownEnumAt, UnknownFieldAt,
};
use super::sqlite::{DbRows, StepRow};
use super::wire::{self, append_at, len_field, put_key, varint_field, LEN};
use super::CorpusError;
use prost_reflect::MessageDescriptor;
use serde_json::Value;

const STEP: &str = "gemini_coder.Step";
const TRAJ: &str = "gemini_coder.Trajectory";
const GEN: &str = "exa.cortex_pb.CortexStepGeneratorMetadata";
const EXEC: &str = "exa.cortex_pb.ExecutorMetadata";
const META: &str = "exa.cortex_pb.CortexTrajectoryMetadata";
const REF: &str = "exa.cortex_pb.CortexTrajectoryReference";

/// One conversation, ready to write.
#[derive(Debug, Clone)]
pub struct Assembled {
    /// The SQLite rows (also for legacy sources, which do not use them).
    pub rows: DbRows,
    /// The persisted trajectory encoding (the legacy plaintext).
    pub trajectory: Vec<u8>,
    /// The plaintext of a shadowed older `.pb`, when planned.
    pub older: Option<Vec<u8>>,
    /// The daemon's full (unrehydrated) trajectory JSON.
    pub full: Vec<u8>,
    /// The daemon's ordinary (rehydrated) trajectory JSON.
    pub ordinary: Vec<u8>,
    /// step_type of every step, in order.
    pub step_types: Vec<i64>,
}

fn unused_number(desc: &MessageDescriptor) -> u32 {
    let reserved: Vec<std::ops::Range<u32>> = desc.reserved_ranges().collect();
    (900..19_000)
        .find(|n| desc.get_field(*n).is_none() && !reserved.iter().any(|r| r.contains(n)))
        .unwrap_or(18_999)
}

fn unknown_enum_number(b: &Builder, message: &str, field: &str) -> Result<u64, CorpusError> {
    let fd = b
        .desc(message)?
        .get_field_by_name(field)
        .ok_or_else(|| CorpusError::Schema(format!("no field {message}.{field}")))?;
    match fd.kind() {
        prost_reflect::Kind::Enum(e) => Ok((10..1000)
            .find(|n| e.get_value(*n).is_none())
            .unwrap_or(999) as u64),
        _ => Err(CorpusError::Schema(format!(
            "{message}.{field} is not an enum"
        ))),
    }
}

/// The first step index matching `pred`, else the first planner step.
fn target(plan: &ConvPlan, pred: impl Fn(&StepKind) -> bool) -> usize {
    plan.steps
        .iter()
        .position(pred)
        .or_else(|| {
            plan.steps
                .iter()
                .position(|s| matches!(s, StepKind::Planner { .. }))
        })
        .unwrap_or(0)
}

fn first_planner(plan: &ConvPlan) -> usize {
    target(plan, |s| matches!(s, StepKind::Planner { .. }))
}

/// Encodes the trajectory from its parts, fields in ascending number.
fn trajectory(
    b: &Builder,
    plan: &ConvPlan,
    steps: &[&[u8]],
    gens: &[&[u8]],
    execs: &[&[u8]],
    refs: &[Vec<u8>],
    metadata: &[u8],
) -> Result<Vec<u8>, CorpusError> {
    let n = |f: &str| b.num(TRAJ, f);
    let size: usize = steps.iter().map(|s| s.len() + 6).sum::<usize>()
        + gens.iter().map(|s| s.len() + 6).sum::<usize>()
        + execs.iter().map(|s| s.len() + 6).sum::<usize>()
        + metadata.len()
        + 256;
    let mut parts: Vec<(u32, u8)> = vec![
        (n("trajectory_id")?, 0),
        (n("steps")?, 1),
        (n("generator_metadata")?, 2),
        (n("trajectory_type")?, 3),
        (n("parent_references")?, 4),
        (n("cascade_id")?, 5),
        (n("metadata")?, 6),
        (n("source")?, 7),
        (n("executor_metadatas")?, 8),
    ];
    parts.sort();
    let mut out = Vec::with_capacity(size);
    for (num, what) in parts {
        match what {
            0 => wire::put_len(&mut out, num, plan.trajectory_id.as_bytes()),
            1 => steps.iter().for_each(|s| wire::put_len(&mut out, num, s)),
            2 => gens.iter().for_each(|s| wire::put_len(&mut out, num, s)),
            3 => wire::put_varint_field(&mut out, num, 4),
            4 => refs.iter().for_each(|s| wire::put_len(&mut out, num, s)),
            5 => wire::put_len(&mut out, num, plan.id.as_bytes()),
            6 => wire::put_len(&mut out, num, metadata),
            7 => wire::put_varint_field(&mut out, num, plan.trajectory_source()),
            _ => execs.iter().for_each(|s| wire::put_len(&mut out, num, s)),
        }
    }
    Ok(out)
}

fn field50(payload: &[u8]) -> Vec<u8> {
    len_field(50, payload)
}

/// Assembles one built conversation.
pub fn assemble(b: &Builder, plan: &ConvPlan, cj: ConvJson) -> Result<Assembled, CorpusError> {
    let n = cj.steps.len();
    let mut steps: Vec<Vec<u8>> = Vec::with_capacity(n);
    let mut presented: Vec<Option<Vec<u8>>> = Vec::with_capacity(n);
    let mut greps: Vec<Option<GrepInfo>> = Vec::with_capacity(n);
    for s in cj.steps {
        steps.push(b.encode(STEP, s.stored)?);
        presented.push(match s.presented {
            Some(p) => Some(b.encode(STEP, p)?),
            None => None,
        });
        greps.push(s.grep);
    }
    let mut gens: Vec<Vec<u8>> = cj
        .gens
        .iter()
        .map(|(g, _)| b.encode(GEN, g.clone()))
        .collect::<Result<_, _>>()?;
    let gen_at: Vec<usize> = cj.gens.iter().map(|(_, at)| *at).collect();
    let mut execs: Vec<Vec<u8>> = cj
        .execs
        .iter()
        .map(|(e, _)| b.encode(EXEC, e.clone()))
        .collect::<Result<_, _>>()?;
    let exec_at: Vec<usize> = cj.execs.iter().map(|(_, at)| *at).collect();
    let refs: Vec<Vec<u8>> = cj
        .refs
        .into_iter()
        .map(|r| b.encode(REF, r))
        .collect::<Result<_, _>>()?;
    let mut metadata = b.encode(META, cj.metadata)?;

    let gen_pc = b.path(GEN, &["planner_config"])?;
    let exec_pc = b.path(EXEC, &["cascade_config", "planner_config"])?;

    // accepted field-50 occurrences
    let (g50, e50) = content::planner50_sites(plan);
    for (i, shape) in g50 {
        if let Some(g) = gens.get_mut(i) {
            *g = append_at(g, &gen_pc, &field50(&content::planner50_payload(shape)))?;
        }
    }
    for (i, shape) in e50 {
        if let Some(e) = execs.get_mut(i) {
            *e = append_at(e, &exec_pc, &field50(&content::planner50_payload(shape)))?;
        }
    }

    // field-23 occurrences on the snapshot's tool-result prompts
    let p23_fault = match plan.near_miss {
        Some(NearMiss::Prompt23(f)) => Some(f),
        _ => None,
    };
    let step_idx_num = b.num("exa.chat_pb.ChatMessagePrompt", "step_idx")?;
    for k in plan.prompt23_steps().collect::<Vec<_>>() {
        let (Some(Some(grep)), Some(Some(pos))) = (greps.get(k), cj.prompt_pos.get(k)) else {
            continue;
        };
        let (bump, drop_last, elided_ok) = match p23_fault {
            Some(Prompt23Fault::WrongLineNumber) => (0, false, true),
            Some(Prompt23Fault::WrongCount) => (1, true, true),
            Some(Prompt23Fault::MissingElided) => (1, false, false),
            _ => (1, false, true),
        };
        let shown = grep.results.len() as u32;
        let mut payload = content::prompt23_payload(grep, bump, drop_last, elided_ok);
        if !elided_ok && grep.total <= shown {
            // present although nothing was elided
            let mut g2 = grep.clone();
            g2.total = shown + 1;
            payload = content::prompt23_payload(&g2, bump, false, true);
        }
        let at = match p23_fault {
            Some(Prompt23Fault::NotToolPrompt) => pos.saturating_sub(1),
            _ => *pos,
        };
        let path = b.path_n(GEN, &[("chat_model", 0), ("message_prompts", at)])?;
        if let Some(g) = gens.get_mut(cj.snapshot_gen) {
            *g = append_at(g, &path, &len_field(23, &payload))?;
            if p23_fault == Some(Prompt23Fault::WrongStep) {
                *g = wire::set_varint_at(g, &path, step_idx_num, k.saturating_sub(1) as u64)?;
            }
        }
        if p23_fault.is_some() {
            break;
        }
    }

    // near-misses on encodings (before the redundant columns are derived)
    let mut clean_step: Option<(usize, Vec<u8>)> = None;
    let mut clean_gen: Option<(usize, Vec<u8>)> = None;
    let mut clean_meta: Option<Vec<u8>> = None;
    let fp = first_planner(plan);
    match plan.near_miss {
        Some(NearMiss::UnknownField(at)) => {
            let unknown = |name: &str| -> Result<Vec<u8>, CorpusError> {
                Ok(varint_field(unused_number(&b.desc(name)?), 1))
            };
            match at {
                UnknownFieldAt::StepTop => {
                    steps[fp] = append_at(&steps[fp], &[], &unknown(STEP)?)?;
                }
                UnknownFieldAt::StepMetadata => {
                    let p = b.path(STEP, &["metadata"])?;
                    steps[fp] = append_at(
                        &steps[fp],
                        &p,
                        &unknown("exa.cortex_pb.CortexStepMetadata")?,
                    )?;
                }
                UnknownFieldAt::GenericResult => {
                    let k = target(plan, |s| matches!(s, StepKind::Tool(Recipe::ViewFile)));
                    let p = b.path(STEP, &["generic", "result"])?;
                    steps[k] =
                        append_at(&steps[k], &p, &unknown("exa.cortex_pb.GenericStepResult")?)?;
                }
                UnknownFieldAt::EmbeddedStep => {
                    let k = target(plan, |s| matches!(s, StepKind::Tool(Recipe::ViewFile)));
                    let p = b.path(STEP, &["generic", "result", "payload", "value"])?;
                    steps[k] = append_at(&steps[k], &p, &unknown(STEP)?)?;
                }
                UnknownFieldAt::GenPrompt => {
                    let p = b.path(GEN, &["chat_model", "message_prompts"])?;
                    let last = gens.len().saturating_sub(1);
                    if let Some(g) = gens.get_mut(last) {
                        *g = append_at(g, &p, &unknown("exa.chat_pb.ChatMessagePrompt")?)?;
                    }
                }
                UnknownFieldAt::ExecConfig => {
                    let p = b.path(EXEC, &["cascade_config", "checkpoint_config"])?;
                    if let Some(e) = execs.get_mut(0) {
                        *e = append_at(e, &p, &unknown("exa.cortex_pb.CheckpointConfig")?)?;
                    }
                }
                UnknownFieldAt::TrajectoryMetadata => {
                    metadata = append_at(&metadata, &[], &unknown(META)?)?;
                }
            }
        }
        Some(NearMiss::UnknownEnum(at)) => match at {
            UnknownEnumAt::StepStatus => {
                let v = unknown_enum_number(b, STEP, "status")?;
                steps[fp] = wire::set_varint_at(&steps[fp], &[], b.num(STEP, "status")?, v)?;
            }
            UnknownEnumAt::Transition => {
                let k = target(plan, |s| {
                    matches!(s, StepKind::Tool(Recipe::CanceledPrompt))
                });
                let v = unknown_enum_number(b, "exa.cortex_pb.StatusTransition", "updated_status")?;
                let p = b.path(
                    STEP,
                    &["metadata", "internal_metadata", "status_transitions"],
                )?;
                let num = b.num("exa.cortex_pb.StatusTransition", "updated_status")?;
                steps[k] = wire::set_varint_at(&steps[k], &p, num, v)?;
            }
            UnknownEnumAt::MetadataSource => {
                let v = unknown_enum_number(b, "exa.cortex_pb.CortexStepMetadata", "source")?;
                let p = b.path(STEP, &["metadata"])?;
                let num = b.num("exa.cortex_pb.CortexStepMetadata", "source")?;
                steps[fp] = wire::set_varint_at(&steps[fp], &p, num, v)?;
            }
        },
        Some(NearMiss::BadMapEntry(f)) => {
            let per_tool = b.num("exa.cortex_pb.ToolOutputConfig", "per_tool")?;
            let max = b.num("exa.cortex_pb.ToolOutputOverride", "max_output_chars")?;
            let tool_output_path =
                b.path(GEN, &["planner_config", "tool_config", "tool_output"])?;
            let entry = |key: &str, extra: &[u8]| {
                let mut e = len_field(1, key.as_bytes());
                e.extend(len_field(2, &varint_field(max, 5)));
                e.extend_from_slice(extra);
                len_field(per_tool, &e)
            };
            if let Some(g) = gens.get_mut(0) {
                // a wrong wire type does not decode: the daemon's views come
                // from the clean bytes
                clean_gen = Some((0, g.clone()));
                *g = match f {
                    MapFault::DuplicateKey => {
                        append_at(g, &tool_output_path, &entry("run_command", &[]))?
                    }
                    MapFault::SplitDuplicate => {
                        let p = b.path(GEN, &["planner_config", "tool_config"])?;
                        let to = b.num("exa.cortex_pb.CascadeToolConfig", "tool_output")?;
                        append_at(g, &p, &len_field(to, &entry("run_command", &[])))?
                    }
                    MapFault::UnknownMember => {
                        append_at(g, &tool_output_path, &entry("lint", &varint_field(3, 1)))?
                    }
                    MapFault::WrongWireType => {
                        let mut e = varint_field(1, 7);
                        e.extend(len_field(2, &[]));
                        append_at(g, &tool_output_path, &len_field(per_tool, &e))?
                    }
                    MapFault::KindDuplicate => {
                        let p = b.path(
                            GEN,
                            &[
                                "planner_config",
                                "customization_config",
                                "customization_discovery_config",
                            ],
                        )?;
                        let ke = b.num(
                            "exa.cortex_pb.CustomizationDiscoveryConfig",
                            "kind_enablement",
                        )?;
                        let mut e = len_field(1, b"skill");
                        e.extend(varint_field(2, 0));
                        append_at(g, &p, &len_field(ke, &e))?
                    }
                };
            }
        }
        Some(NearMiss::Planner50(f)) => match f {
            Planner50Fault::RequestOverride => {
                let p = b.path(EXEC, &["request_override_config", "planner_config"])?;
                if let Some(e) = execs.get_mut(0) {
                    *e = append_at(e, &p, &field50(&[]))?;
                }
            }
            Planner50Fault::NestedAgentDefinition => {
                let p = b.path(
                    GEN,
                    &[
                        "planner_config",
                        "customization_config",
                        "agent_definitions",
                        "cascade_config",
                        "planner_config",
                    ],
                )?;
                if let Some(g) = gens.get_mut(0) {
                    *g = append_at(g, &p, &field50(&[]))?;
                }
            }
            other => {
                let bytes = match other {
                    Planner50Fault::NonzeroPayload => field50(&[0x10, 0x01]),
                    Planner50Fault::WrongOrder => field50(&[0x20, 0x00, 0x10, 0x00]),
                    Planner50Fault::Twice => {
                        let mut v = field50(&[]);
                        v.extend(field50(&[0x10, 0x00]));
                        v
                    }
                    _ => varint_field(50, 0),
                };
                if let Some(g) = gens.get_mut(0) {
                    // a varint field 50 does not decode under the declared
                    // message: the daemon's views come from the clean bytes
                    clean_gen = Some((0, g.clone()));
                    *g = append_at(g, &gen_pc, &bytes)?;
                }
            }
        },
        Some(NearMiss::InvalidUtf8) => {
            let k = target(plan, |s| matches!(s, StepKind::SystemMessage));
            let p = b.path(STEP, &["system_message"])?;
            let num = b.num("exa.cortex_pb.CortexStepSystemMessage", "message")?;
            clean_step = Some((k, steps[k].clone()));
            steps[k] = append_at(
                &steps[k],
                &p,
                &len_field(num, b"caf\xc3 \xff\xfe workspace"),
            )?;
        }
        Some(NearMiss::Subtrajectory) => {
            let sub_planner = steps[fp].clone();
            let tn = |f: &str| b.num(TRAJ, f);
            let mut sub = len_field(tn("trajectory_id")?, plan.trajectory_id.as_bytes());
            sub.extend(len_field(tn("steps")?, &sub_planner));
            let num = b.num(STEP, "subtrajectory")?;
            steps[fp] = append_at(&steps[fp], &[], &len_field(num, &sub))?;
        }
        _ => {}
    }

    // redundant columns, derived from the final payloads
    let sn = |f: &str| b.num(STEP, f);
    let (n_type, n_status, n_meta, n_err, n_perm, n_task, n_generic, n_sub) = (
        sn("type")?,
        sn("status")?,
        sn("metadata")?,
        sn("error")?,
        sn("permissions")?,
        sn("task_details")?,
        sn("generic")?,
        sn("subtrajectory")?,
    );
    let n_result = b.num("exa.cortex_pb.CortexStepGeneric", "result")?;
    let n_render = b.num("exa.cortex_pb.GenericStepResult", "step_render_info")?;
    let mut rows: Vec<StepRow> = Vec::with_capacity(n);
    for (i, p) in steps.iter().enumerate() {
        let render_info = match wire::first_len(p, n_generic)? {
            Some(g) => match wire::first_len(g, n_result)? {
                Some(r) => wire::first_len(r, n_render)?.map(<[u8]>::to_vec),
                None => None,
            },
            None => None,
        };
        rows.push(StepRow {
            idx: i as i64,
            step_type: wire::last_varint(p, n_type)? as i64,
            status: wire::last_varint(p, n_status)? as i64,
            has_subtrajectory: i64::from(wire::first_len(p, n_sub)?.is_some()),
            metadata: wire::first_len(p, n_meta)?.map(<[u8]>::to_vec),
            error_details: wire::first_len(p, n_err)?.map(<[u8]>::to_vec),
            permissions: wire::first_len(p, n_perm)?.map(<[u8]>::to_vec),
            task_details: wire::first_len(p, n_task)?.map(<[u8]>::to_vec),
            render_info,
            step_payload: Vec::new(),
            step_format: 0,
        });
    }
    let step_types: Vec<i64> = rows.iter().map(|r| r.step_type).collect();

    // near-misses after the columns: malformed bytes and disagreeing columns
    match plan.near_miss {
        Some(NearMiss::Malformed(at)) => match at {
            MalformedAt::StepPayload => {
                clean_step = Some((fp, steps[fp].clone()));
                steps[fp].extend_from_slice(&[0x0a, 0x7f, 0x61]);
            }
            MalformedAt::GenMetadata => {
                if let Some(g) = gens.get_mut(0) {
                    clean_gen = Some((0, g.clone()));
                    g.extend_from_slice(&[0x0a, 0x7f, 0x61]);
                }
            }
            MalformedAt::TrajectoryMetadata => {
                clean_meta = Some(metadata.clone());
                let mut m = Vec::new();
                put_key(&mut m, 1, LEN);
                m.push(0x40);
                m.extend_from_slice(b"file:///home/dev");
                metadata.extend_from_slice(&m);
            }
        },
        Some(NearMiss::RedundantColumn(f)) => match f {
            ColumnFault::Status => rows[fp].status = 7,
            ColumnFault::StepType => rows[fp].step_type = 8,
            ColumnFault::Metadata => {
                if let Some(m) = rows[fp].metadata.as_mut() {
                    let sgv = b.num(
                        "exa.cortex_pb.CortexStepMetadata",
                        "step_generation_version",
                    )?;
                    *m = wire::set_varint_at(m, &[], sgv, 2)?;
                }
            }
            ColumnFault::RenderInfoMissing => {
                let k = target(plan, |s| {
                    matches!(s, StepKind::Tool(Recipe::ManageTask(TaskKind::Status)))
                });
                rows[k].render_info = None;
            }
            ColumnFault::RenderInfoExtra => {
                rows[fp].render_info = Some(len_field(1, b"Thinking"));
            }
            ColumnFault::ErrorDetails => {
                let k = target(plan, |s| {
                    matches!(
                        s,
                        StepKind::Tool(Recipe::OuterError(super::plan::OuterKind::RunCommand))
                    )
                });
                rows[k].error_details = None;
            }
        },
        _ => {}
    }
    for (row, p) in rows.iter_mut().zip(steps.iter()) {
        row.step_payload = p.clone();
    }
    let mut user_version = 1;
    let mut extra_sql = Vec::new();
    match plan.near_miss {
        Some(NearMiss::IndexGap(g)) => {
            let mid = (n / 2).max(1);
            for (pos, row) in rows.iter_mut().enumerate() {
                if g == GapKind::StartAtOne || pos >= mid {
                    row.idx = pos as i64 + 1;
                }
            }
        }
        Some(NearMiss::StepFormat) => {
            let mid = n / 2;
            if let Some(r) = rows.get_mut(mid) {
                r.step_format = 1;
            }
        }
        Some(NearMiss::UserVersion(v)) => user_version = v,
        Some(NearMiss::SchemaDrift(d)) => extra_sql.push(
            match d {
                DriftKind::ExtraColumn => "ALTER TABLE `steps` ADD COLUMN `user_annotations` blob",
                DriftKind::ExtraTable => {
                    "CREATE TABLE `step_annotations` (`idx` integer,`data` blob,PRIMARY KEY (`idx`))"
                }
                DriftKind::ExtraIndex => "CREATE INDEX `idx_gen_metadata_size` ON `gen_metadata`(`size`)",
            }
            .to_string(),
        ),
        _ => {}
    }

    let step_refs: Vec<&[u8]> = steps.iter().map(Vec::as_slice).collect();
    let gen_refs: Vec<&[u8]> = gens.iter().map(Vec::as_slice).collect();
    let exec_refs: Vec<&[u8]> = execs.iter().map(Vec::as_slice).collect();
    let traj = trajectory(b, plan, &step_refs, &gen_refs, &exec_refs, &refs, &metadata)?;

    // the daemon's views: from the persisted trajectory, or from its clean
    // version when the near-miss makes it undecodable
    let full = match b.daemon_json(TRAJ, &traj) {
        Ok(v) => v,
        Err(_) => {
            let mut s2 = step_refs.clone();
            if let Some((k, c)) = &clean_step {
                s2[*k] = c;
            }
            let mut g2 = gen_refs.clone();
            if let Some((k, c)) = &clean_gen {
                g2[*k] = c;
            }
            let m2: &[u8] = clean_meta.as_deref().unwrap_or(&metadata);
            let t2 = trajectory(b, plan, &s2, &g2, &exec_refs, &refs, m2)?;
            b.daemon_json(TRAJ, &t2)?
        }
    };
    let mut ordinary = full.clone();
    if let Some(Value::Array(list)) = ordinary.get_mut("steps") {
        for (i, p) in presented.iter().enumerate() {
            if let (Some(p), Some(slot)) = (p, list.get_mut(i)) {
                *slot = b.daemon_json(STEP, p)?;
            }
        }
    }
    // The declared source-only fields (planner 50, prompt 23) and any unknown
    // field never appear in proto3 JSON, so the full view needs no stripping.
    let full_bytes = serde_json::to_vec(&full).map_err(|e| CorpusError::Build(e.to_string()))?;
    let ord_bytes = serde_json::to_vec(&ordinary).map_err(|e| CorpusError::Build(e.to_string()))?;

    let older = if plan.also_pb {
        let half = (n / 2).max(1).min(n);
        Some(trajectory(
            b,
            plan,
            &step_refs[..half],
            &gen_refs,
            &exec_refs,
            &refs,
            &metadata,
        )?)
    } else {
        None
    };
    let wal_from = n.saturating_sub(plan.wal_tail);
    let db = DbRows {
        trajectory_id: plan.trajectory_id.clone(),
        cascade_id: plan.id.clone(),
        trajectory_type: 4,
        source: plan.trajectory_source() as i64,
        steps: rows,
        gens: gens
            .into_iter()
            .enumerate()
            .map(|(i, g)| (i as i64, g, gen_at.get(i).copied().unwrap_or(0)))
            .collect(),
        execs: execs
            .into_iter()
            .enumerate()
            .map(|(i, e)| (i as i64, e, exec_at.get(i).copied().unwrap_or(0)))
            .collect(),
        refs,
        metadata,
        user_version,
        extra_sql,
        wal_from,
    };
    Ok(Assembled {
        rows: db,
        trajectory: traj,
        older,
        full: full_bytes,
        ordinary: ord_bytes,
        step_types,
    })
}
