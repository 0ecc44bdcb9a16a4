//! What a rule family is and what it works with: a [`Family`] declares its
//! rule rows, the steps it claims ([`Claim`]), the checks it lends other
//! families at named points ([`Hook`]) and its argument bounds; the engine
//! hands each claimed step to it with the step's context ([`Ctx`]), and it
//! answers with a [`Presented`] step or a refusal.
//!
//! A leaf: it imports the field helpers, the reasons and the projection's
//! types, never a family. A family reaches another only through a hook it
//! looks up in the context (`Ctx::hook`), so the registry
//! (`registry.rs`) is the one place families are put together.

use super::args::ArgBound;
use super::doc::RuleDoc;
use super::fields::{has, reject, Reject, Wrapper, R};
use super::projection::{AlternativeForm, Projection};
use super::reasons::Reason;
use crate::rules::RuleId;
use crate::schema::Schema;
use crate::source::wire_trajectory::WireTrajectory;
use bytes::Bytes;
use prost_reflect::DynamicMessage;
use std::cell::OnceCell;

/// A rule family: one file's rules, registered once in `registry.rs`.
pub(crate) struct Family {
    /// The file that implements it (under `src/project/`).
    pub file: &'static str,
    /// Its rules' rows, in the order the rule table shows them.
    pub docs: &'static [RuleDoc],
    /// The generic steps it projects.
    pub claims: &'static [Claim],
    /// The checks it lends other families.
    pub hooks: &'static [Hook],
    /// Its argument bounds: for each tool it maps, the arguments it allows
    /// ([`ArgBound`]); every family whose rules read arguments declares one.
    pub args: &'static [Args],
}

/// A family's argument bound for one rule and tool.
#[derive(Debug, Clone, Copy)]
pub struct Args {
    pub rule: RuleId,
    /// The wrapper's tool (`metadata.tool_call.name`), or, ending in `_`,
    /// a tool-name prefix (MCP tools are `mcp_<server>_<tool>`).
    pub tool: &'static str,
    /// The native Step type a wrapper of this tool embeds, for the embedded
    /// rules (`None` elsewhere).
    pub over: Option<&'static str>,
    pub bound: ArgBound,
    /// The reason a call outside the bound is refused with, under `rule`
    /// (the dispatcher enforces the bound, [`super::bounds`]).
    pub refuse: Reason,
    /// The reason for arguments that do not repeat the retained tool call
    /// (`refuse` unless a rule names another).
    pub refuse_repeat: Reason,
}

impl Args {
    /// The embedded family's bound of `tool` over a native Step of type
    /// `over`.
    pub const fn over(over: &'static str, tool: &'static str, bound: ArgBound) -> Args {
        Args {
            rule: RuleId::EmbeddedNativeStep,
            tool,
            over: Some(over),
            bound,
            refuse: Reason::WrapperArgument,
            refuse_repeat: Reason::WrapperArgument,
        }
    }

    /// The bound of `rule` over calls of `tool`, refused with `refuse`.
    pub const fn of(rule: RuleId, tool: &'static str, bound: ArgBound, refuse: Reason) -> Args {
        Args {
            rule,
            tool,
            over: None,
            bound,
            refuse,
            refuse_repeat: refuse,
        }
    }

    /// With arguments that do not repeat the retained tool call refused
    /// with `reason`.
    pub const fn repeat_refused(self, reason: Reason) -> Args {
        Args {
            refuse_repeat: reason,
            ..self
        }
    }

    /// Whether the bound names `tool`: exactly, or, for a bound whose tool
    /// ends in `_` (MCP tools, `mcp_<server>_<tool>`), as a prefix.
    pub fn names_tool(&self, tool: &str) -> bool {
        self.tool == tool || (self.tool.ends_with('_') && tool.starts_with(self.tool))
    }
}

/// A projection of one claimed generic step.
pub(crate) type ProjectFn = fn(&Ctx<'_>, &Wrapper) -> R<Presented>;
/// A projection of a wrapper whose result payload is an Any.
pub(crate) type PayloadFn = fn(&Ctx<'_>, &Wrapper, &Bytes) -> R<Presented>;
/// A check over a wrapper and its embedded native Step.
pub(crate) type NativeCheck = fn(&Wrapper, &DynamicMessage) -> R<()>;

/// The generic steps a family projects; the engine tries them in the order
/// of its dispatch (`project::project_step`), never two for one step.
pub(crate) enum Claim {
    /// A wrapper whose result payload is an Any of exactly this type URL.
    /// `extra`: rules every such presentation also relies on (the modern
    /// mappings' permission1 refusal).
    Payload {
        url: &'static str,
        project: PayloadFn,
        extra: &'static [RuleId],
    },
    /// A wrapper without a result.
    Resultless(ProjectFn),
    /// A payload-less wrapper with a result that `when` recognizes, before
    /// [`Claim::Payloadless`].
    PayloadlessWhen {
        when: fn(&Wrapper) -> bool,
        project: ProjectFn,
        extra: &'static [RuleId],
    },
    /// Every other payload-less wrapper with a result.
    Payloadless(ProjectFn),
}

/// A check a family lends another at a named point; the family that reaches
/// the point looks it up with [`Ctx::hook`] and refuses when none is
/// registered (a family left out of the registry qualifies nothing).
pub(crate) enum Hook {
    /// An argument of a wrapper over an embedded native Step that only this
    /// rule accepts (ContentOffset, Append).
    EmbeddedArgument {
        arg: &'static str,
        rule: RuleId,
        check: NativeCheck,
    },
    /// Permission records on a wrapper over an embedded native Step; answers
    /// the rule that qualified them.
    EmbeddedRecords(fn(&Wrapper, &DynamicMessage) -> R<RuleId>),
    /// An ERROR wrapper with an outer error over a native Step of
    /// `native_type` (and `native_status`, when given), presented with
    /// `presented_status` (when given) under `rule`.
    OuterError {
        native_type: &'static str,
        native_status: Option<&'static str>,
        presented_status: Option<&'static str>,
        rule: RuleId,
        check: NativeCheck,
    },
    /// A wrapper without an outer error over a native Step of `native_type`
    /// that only this rule maps.
    EmbeddedSuccess {
        native_type: &'static str,
        rule: RuleId,
        check: NativeCheck,
    },
    /// A resultless wrapper of `tool` with status `status`.
    Resultless {
        tool: &'static str,
        status: &'static str,
        project: ProjectFn,
    },
    /// A resultless view_file that records its tool source.
    ResultlessToolSource(ProjectFn),
    /// The presented is_skill_file of a read of `path`.
    SkillFlag(fn(&Ctx<'_>, &Wrapper, &str) -> R<bool>),
    /// A modern ReadFile payload that sets `field` (media, not_found):
    /// another rule's read.
    ModernRead {
        field: &'static str,
        project: fn(&Wrapper, &DynamicMessage) -> R<Presented>,
    },
    /// Permission records a modern read may keep: true when kept.
    ModernReadRecords(fn(&Wrapper) -> R<bool>),
    /// The ByteOffset argument of a modern read: true when accepted.
    ModernReadOffset(fn(&Wrapper, &DynamicMessage) -> R<bool>),
    /// The artifact shape of a modern file edit (payload, create?).
    ModernEditArtifact(fn(&Ctx<'_>, &Wrapper, &DynamicMessage, bool) -> R<Option<Artifact>>),
    /// An alternative complete presentation of a whole trajectory.
    Alternative(fn(&Projection) -> Option<AlternativeForm>),
}

/// The artifact shape of a modern file edit (ide225).
pub(crate) struct Artifact {
    /// A create's payload artifact_metadata (None for an edit).
    pub metadata: Option<DynamicMessage>,
}

/// What the engine needs while projecting one step.
pub(crate) struct Ctx<'a> {
    pub schema: &'a Schema,
    /// The step's index in the trajectory.
    pub index: usize,
    around: &'a Around<'a>,
    /// The registered families (`registry::FAMILIES`), for [`Ctx::hook`].
    families: &'a [Family],
}

/// The trajectory around the steps: decoded (all but its steps) on first use.
pub(crate) struct Around<'a> {
    wire: &'a WireTrajectory,
    decoded: OnceCell<Result<DynamicMessage, String>>,
}

impl<'a> Around<'a> {
    pub fn new(wire: &'a WireTrajectory) -> Around<'a> {
        Around {
            wire,
            decoded: OnceCell::new(),
        }
    }
}

impl<'a> Ctx<'a> {
    /// The context of step `index` of the trajectory `around`, with the
    /// registered `families`.
    pub fn new(
        schema: &'a Schema,
        index: usize,
        around: &'a Around<'a>,
        families: &'a [Family],
    ) -> Ctx<'a> {
        Ctx {
            schema,
            index,
            around,
            families,
        }
    }

    /// Every registered claim, in the registry's order.
    pub fn claims(&self) -> impl Iterator<Item = &'a Claim> {
        self.families.iter().flat_map(|f| f.claims.iter())
    }

    /// Every registered argument bound, in the registry's order.
    pub fn bounds(&self) -> impl Iterator<Item = &'a Args> {
        self.families.iter().flat_map(|f| f.args.iter())
    }

    /// Every registered hook, in the registry's order.
    pub fn hooks(&self) -> impl Iterator<Item = &'a Hook> {
        self.families.iter().flat_map(|f| f.hooks.iter())
    }

    /// The first registered hook `pick` accepts (see [`Hook`]).
    pub fn hook<T>(&self, pick: impl Fn(&Hook) -> Option<T>) -> Option<T> {
        self.families
            .iter()
            .flat_map(|f| f.hooks.iter())
            .find_map(pick)
    }

    /// The trajectory's own fields (ids, executor metadata; not its steps),
    /// for a rule that reads around the step.
    pub fn trajectory(&self, rule: Option<RuleId>) -> R<&DynamicMessage> {
        let decoded = self.around.decoded.get_or_init(|| {
            self.around
                .wire
                .decode_without_steps()
                .map_err(|e| e.to_string())
        });
        match decoded {
            Ok(t) => Ok(t),
            Err(e) => reject(rule, Reason::StoredUndecodable, format!("trajectory: {e}")),
        }
    }
}

/// One presented step.
pub(crate) struct Presented {
    /// The presented form; `None`: exactly as stored.
    pub step: Option<DynamicMessage>,
    pub rule: RuleId,
    pub extra: Vec<RuleId>,
    /// Stored paths (relative to the step, daemon JSON names) whose content
    /// the presentation shows in another form, so they are not "dropped".
    pub carried: Vec<&'static str>,
}

impl Presented {
    /// A generic step presented exactly as stored.
    pub fn unchanged(rule: RuleId) -> Presented {
        Presented {
            step: None,
            rule,
            extra: Vec::new(),
            carried: Vec::new(),
        }
    }
}

/// The type URL of an embedded native Step.
pub(crate) const STEP_URL: &str = "type.googleapis.com/gemini_coder.Step";
/// The type URL prefix of the modern tool payloads.
pub(crate) const TOOLS_URL_PREFIX: &str = "type.googleapis.com/exa.cortex.core.tools.";

/// The generic catch-all refusal for a tool no rule of a family covers.
pub(crate) fn unqualified<T>(w: &Wrapper) -> R<T> {
    let tool = if w.tool.is_empty() {
        "(no tool name)".to_string()
    } else {
        w.tool.clone()
    };
    Err(Reject {
        rule: None,
        kind: Reason::UnqualifiedGeneric,
        detail: tool,
    })
}

/// Wrapper (Step) fields every generic rule may meet; rules narrow this.
pub(crate) fn has_records(step: &DynamicMessage) -> bool {
    has(step, "permissions")
        || has(step, "completed_interactions")
        || has(step, "requested_interaction")
}
