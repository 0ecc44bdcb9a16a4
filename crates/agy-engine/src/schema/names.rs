//! Field numbers the reader needs, resolved by name from the loaded pool.

use super::error::SchemaError;
use prost_reflect::{DescriptorPool, MessageDescriptor};

/// Message and field identities resolved from whichever pool is loaded.
#[derive(Debug, Clone)]
pub struct Names {
    pub trajectory: MessageDescriptor,
    pub step: MessageDescriptor,
    /// `gemini_coder.Trajectory` field numbers.
    pub traj: TrajectoryFields,
    /// `gemini_coder.Step` envelope field numbers.
    pub step_fields: StepFields,
    /// `CortexStepGeneric.result`, then `GenericStepResult.step_render_info`.
    pub generic_result: u32,
    pub result_render_info: u32,
    /// The modern (agy 1.4.x) tool payload declarations the modern rules
    /// read; resolved without failing the load, so a set that lacks one only
    /// makes those rules refuse.
    pub modern: ModernNames,
}

/// The FileEdit fields the modern file-edit rules read (tools143's first
/// four, ide225's artifact fields after them).
pub const FILE_EDIT_FIELDS: &[&str] = &[
    "path",
    "kind",
    "diff",
    "outcome",
    "is_artifact_file",
    "artifact_metadata",
];

/// The modern payload messages the `project::modern` rules read, each with
/// the fields they read, by name: `(message, fields)`.
pub const MODERN_DECLARATIONS: &[(&str, &[&str])] = &[
    (
        "exa.cortex.core.tools.RunCommand",
        &[
            "command_line",
            "cwd",
            "wait_ms_before_async",
            "output",
            "exit_code",
            "background",
            "outcome",
        ],
    ),
    (
        "exa.cortex.core.tools.ReadFile",
        &[
            "path",
            "start_line",
            "end_line",
            "outcome",
            "byte_offset",
            "media",
            "num_bytes",
            "not_found",
        ],
    ),
    ("exa.cortex.core.tools.FileEdit", FILE_EDIT_FIELDS),
    (
        "exa.cortex.core.tools.InvokeSubagent",
        &["specs", "results", "task_mode", "outcome"],
    ),
    (
        "exa.cortex.core.tools.ManageTask",
        &["action", "tasks", "outcome"],
    ),
    (
        "exa.cortex.core.tools.TaskInfo",
        &["task_id", "description", "status"],
    ),
    (
        "exa.cortex.core.tools.Schedule",
        &["duration_seconds", "prompt", "canceled", "outcome"],
    ),
    (
        "exa.cortex.core.tools.ManageSubagents",
        &["action", "conversation_ids", "outcome"],
    ),
    // ---- ide225 / finish147 / replay147 (Antigravity IDE 2.25, agy 1.4.7) ----
    (
        "exa.cortex.core.tools.ArtifactMetadata",
        &["summary", "updated_at", "user_facing", "request_feedback"],
    ),
    (
        "exa.cortex.core.tools.Finish",
        &["result_schema", "result_json", "outcome"],
    ),
];

/// The modern payload declarations as resolved from the loaded pool.
#[derive(Debug, Clone)]
pub struct ModernNames {
    /// Full message name → its descriptor, or the first missing declaration
    /// (`message X` or `field X.f`).
    resolved: Vec<(&'static str, Result<MessageDescriptor, String>)>,
}

impl ModernNames {
    fn resolve(pool: &DescriptorPool) -> ModernNames {
        let resolved = MODERN_DECLARATIONS
            .iter()
            .map(|(name, fields)| {
                let r = match pool.get_message_by_name(name) {
                    None => Err(format!("message {name}")),
                    Some(m) => match fields.iter().find(|f| m.get_field_by_name(f).is_none()) {
                        Some(f) => Err(format!("field {name}.{f}")),
                        None => Ok(m),
                    },
                };
                (*name, r)
            })
            .collect();
        ModernNames { resolved }
    }

    /// The descriptor of modern payload message `name` (full name), when the
    /// loaded pool declares it with every field the rules read; else the
    /// missing declaration.
    pub fn message(&self, name: &str) -> Result<&MessageDescriptor, String> {
        match self.resolved.iter().find(|(n, _)| *n == name) {
            Some((_, Ok(m))) => Ok(m),
            Some((_, Err(e))) => Err(e.clone()),
            None => Err(format!("message {name} (not a modern declaration)")),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct TrajectoryFields {
    pub trajectory_id: u32,
    pub steps: u32,
    pub generator_metadata: u32,
    pub trajectory_type: u32,
    pub parent_references: u32,
    pub cascade_id: u32,
    pub metadata: u32,
    pub source: u32,
    pub executor_metadatas: u32,
    /// Absent from some descriptor sets (the IDE set has no field 10).
    pub battle_mode_infos: Option<u32>,
}

#[derive(Debug, Clone, Copy)]
pub struct StepFields {
    pub r#type: u32,
    pub status: u32,
    pub metadata: u32,
    pub subtrajectory: Option<u32>,
    pub error: u32,
    pub permissions: u32,
    pub task_details: u32,
    pub generic: u32,
}

fn missing(origin: &str, kind: &'static str, name: String) -> SchemaError {
    SchemaError::Missing {
        origin: origin.to_string(),
        kind,
        name,
    }
}

fn message(
    pool: &DescriptorPool,
    origin: &str,
    name: &str,
) -> Result<MessageDescriptor, SchemaError> {
    pool.get_message_by_name(name)
        .ok_or_else(|| missing(origin, "message", name.to_string()))
}

fn field(m: &MessageDescriptor, origin: &str, name: &str) -> Result<u32, SchemaError> {
    m.get_field_by_name(name)
        .map(|f| f.number())
        .ok_or_else(|| missing(origin, "field", format!("{}.{name}", m.full_name())))
}

fn opt_field(m: &MessageDescriptor, name: &str) -> Option<u32> {
    m.get_field_by_name(name).map(|f| f.number())
}

impl Names {
    pub(super) fn resolve(pool: &DescriptorPool, origin: &str) -> Result<Names, SchemaError> {
        let trajectory = message(pool, origin, "gemini_coder.Trajectory")?;
        let step = message(pool, origin, "gemini_coder.Step")?;
        let t = &trajectory;
        let traj = TrajectoryFields {
            trajectory_id: field(t, origin, "trajectory_id")?,
            steps: field(t, origin, "steps")?,
            generator_metadata: field(t, origin, "generator_metadata")?,
            trajectory_type: field(t, origin, "trajectory_type")?,
            parent_references: field(t, origin, "parent_references")?,
            cascade_id: field(t, origin, "cascade_id")?,
            metadata: field(t, origin, "metadata")?,
            source: field(t, origin, "source")?,
            executor_metadatas: field(t, origin, "executor_metadatas")?,
            battle_mode_infos: opt_field(t, "battle_mode_infos"),
        };
        let s = &step;
        let step_fields = StepFields {
            r#type: field(s, origin, "type")?,
            status: field(s, origin, "status")?,
            metadata: field(s, origin, "metadata")?,
            subtrajectory: opt_field(s, "subtrajectory"),
            error: field(s, origin, "error")?,
            permissions: field(s, origin, "permissions")?,
            task_details: field(s, origin, "task_details")?,
            generic: field(s, origin, "generic")?,
        };
        let generic = message(pool, origin, "exa.cortex_pb.CortexStepGeneric")?;
        let result = message(pool, origin, "exa.cortex_pb.GenericStepResult")?;
        Ok(Names {
            generic_result: field(&generic, origin, "result")?,
            result_render_info: field(&result, origin, "step_render_info")?,
            modern: ModernNames::resolve(pool),
            trajectory,
            step,
            traj,
            step_fields,
        })
    }
}
