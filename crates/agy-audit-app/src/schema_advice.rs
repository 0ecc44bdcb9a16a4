//! `doctor`'s schema advice (issue 48 item 2): per root, which schema a
//! sweep would use and, when it is the embedded modeled one, what that
//! costs on this root and what the installed agy's own set would change.
//!
//! A sweep decodes with `--schema` (or `$AGY_AUDIT_SCHEMA`), else the
//! modeled schema; `doctor` takes the same flags, so the schema it loaded is
//! the one a sweep would use. When that is the modeled schema, every source
//! of the root is read offline with it (the sweep's own reading and
//! projection, no daemon) and the conversations refused for an unknown
//! field (`ReasonClass::UnknownField`) are counted. Where a set is stored
//! for the agy found now (`installed::now`: the binary hashed, the data
//! folder read, nothing extracted), each of those is read again under that
//! set and counted when it passes every offline check there: stricter than
//! "decodes" (a source that decodes but is refused for another reason
//! offline is not counted), so the number never promises more than a sweep
//! could verify. The advice names the commands that store the set and use
//! it. Informational: no verdict, sidecar or exit status changes.

use crate::installed::{self, Now, EXTRACT_COMMAND};
use crate::pipeline::{prepare, AuditContext};
use crate::schema::{Schema, SchemaOrigin};
use crate::verdict::ReasonClass;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The command that sweeps with the installed agy's set.
pub const USE_COMMAND: &str = "agy-audit audit-sweep --schema installed";

/// The installed agy's set, as the advice sees it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstalledSet {
    /// The agy binary found (null when none is).
    pub agy: Option<PathBuf>,
    /// Its stored set (null when none is stored).
    pub set: Option<PathBuf>,
    /// Why the agy or its set could not be looked at (a read error, a
    /// stored set that does not match its manifest), when one occurred.
    pub error: Option<String>,
}

/// One root's schema advice (doctor's `--json` member `schema`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Advice {
    /// The profile label of the schema a sweep would use (`modeled`,
    /// `agy-<release>-<sha12>`, `pinned`).
    pub sweep: String,
    /// That schema is the embedded modeled one.
    pub modeled: bool,
    /// The root's conversations.
    pub conversations: u64,
    /// With the modeled schema: how many of them it refuses offline for an
    /// unknown field (null otherwise).
    pub unknown_field: Option<u64>,
    /// With the modeled schema: of those, how many pass every offline check
    /// under the installed agy's stored set (null without one).
    pub pass_under_installed: Option<u64>,
    /// The installed agy and its set (looked at only with the modeled
    /// schema and at least one unknown-field refusal).
    pub installed: Option<InstalledSet>,
    /// The command that stores the installed agy's set.
    pub extract: String,
    /// The command that sweeps with it.
    #[serde(rename = "use")]
    pub use_: String,
}

/// The installed agy's state, looked at once per `doctor` run (its set
/// loaded once): [`Installed::look`].
pub struct Installed {
    set: InstalledSet,
    schema: Option<Schema>,
}

impl Installed {
    /// Finds agy and loads its stored set, if any (nothing extracted).
    pub fn look() -> Installed {
        let (set, schema) = match installed::now() {
            Ok(Now::NoAgy) => (none(None), None),
            Ok(Now::NotStored { agy, .. }) => (none(Some(agy)), None),
            Ok(Now::Stored { agy, stored }) => match installed::load(&stored) {
                Ok(s) => (
                    InstalledSet {
                        agy: Some(agy),
                        set: Some(stored.set),
                        error: None,
                    },
                    Some(s),
                ),
                Err(e) => (
                    InstalledSet {
                        agy: Some(agy),
                        set: Some(stored.set),
                        error: Some(e.to_string()),
                    },
                    None,
                ),
            },
            Err(e) => (
                InstalledSet {
                    agy: None,
                    set: None,
                    error: Some(e.to_string()),
                },
                None,
            ),
        };
        Installed { set, schema }
    }
}

fn none(agy: Option<PathBuf>) -> InstalledSet {
    InstalledSet {
        agy,
        set: None,
        error: None,
    }
}

/// The advice for `sources` (a root's), read with `ctx` (the schema a sweep
/// would use); the installed agy is looked at ([`Installed::look`], once
/// per `installed` cell) only when the modeled schema refuses one of them
/// for an unknown field.
pub fn advise<'a>(
    ctx: &AuditContext,
    sources: impl IntoIterator<Item = &'a Path>,
    installed: &std::cell::OnceCell<Installed>,
) -> Advice {
    let modeled = matches!(ctx.schema.origin, SchemaOrigin::Modeled);
    let mut advice = Advice {
        sweep: ctx.schema.origin.profile_label(),
        modeled,
        conversations: 0,
        unknown_field: None,
        pass_under_installed: None,
        installed: None,
        extract: EXTRACT_COMMAND.into(),
        use_: USE_COMMAND.into(),
    };
    let sources: Vec<&Path> = sources.into_iter().collect();
    advice.conversations = sources.len() as u64;
    if !modeled {
        return advice;
    }
    let refused: Vec<&Path> = sources
        .into_iter()
        .filter(|p| {
            prepare(ctx, p).is_ok_and(|r| {
                r.refusal()
                    .is_some_and(|r| r.class == ReasonClass::UnknownField)
            })
        })
        .collect();
    advice.unknown_field = Some(refused.len() as u64);
    if refused.is_empty() {
        return advice;
    }
    let found = installed.get_or_init(Installed::look);
    advice.installed = Some(found.set.clone());
    if let Some(schema) = &found.schema {
        let under = AuditContext { schema, ..*ctx };
        advice.pass_under_installed = Some(
            refused
                .iter()
                .filter(|p| prepare(&under, p).is_ok_and(|r| r.refusal().is_none()))
                .count() as u64,
        );
    }
    advice
}

/// The advice as text lines (after `  schema: `), paths escaped for a
/// terminal by the caller's `escape`.
pub fn lines(a: &Advice, escape: &dyn Fn(&str) -> String) -> Vec<String> {
    if !a.modeled {
        return vec![format!(
            "{} (a pinned set: a sweep uses it)",
            escape(&a.sweep)
        )];
    }
    let mut out = vec![String::from(
        "modeled (the embedded schema: public descriptors only; a sweep uses it unless given --schema)",
    )];
    let Some(n) = a.unknown_field else {
        return out;
    };
    out.push(format!(
        "it refuses {n} of {} conversations offline for an unknown field",
        a.conversations
    ));
    let Some(found) = &a.installed else {
        return out;
    };
    if let Some(e) = &found.error {
        out.push(format!(
            "the installed agy's set cannot be used: {}",
            escape(e)
        ));
    }
    match (&found.agy, &found.set, a.pass_under_installed) {
        (_, Some(set), Some(p)) => {
            out.push(format!(
                "under the installed agy's stored set ({}) {p} of those {n} pass every offline check",
                escape(&set.display().to_string())
            ));
            out.push(format!("sweep with it: `{}`", a.use_));
        }
        (Some(agy), None, _) => {
            out.push(format!(
                "no set is stored for the installed agy ({}): store it with `{}`, then sweep with `{}`",
                escape(&agy.display().to_string()),
                a.extract,
                a.use_
            ));
        }
        (None, _, _) if found.error.is_none() => out.push(format!(
            "no agy found to take the set from (PATH, {}): install agy, then `{}` and `{}`",
            installed::FALLBACK_LOCATIONS.join(", "),
            a.extract,
            a.use_
        )),
        _ => {}
    }
    out
}
