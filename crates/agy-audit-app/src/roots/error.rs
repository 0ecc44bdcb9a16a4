//! Why a store root or a conversation cannot be found: the errors of
//! resolving roots and ids ([`crate::discover`], [`crate::roots`]). Every one
//! names an input the user must correct (`crate::Error::is_usage`: exit 2).
//! A leaf beneath the application's error, which wraps it.

use std::path::PathBuf;

/// A store root, or a conversation named by id, that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    /// No `--root`, no `$ANTIGRAVITY_CLI_ROOT` and no `HOME`.
    #[error("no store root: HOME is not set (the default root is ~/.gemini/antigravity-cli) and neither is {}; pass --root DIR, the folder that holds conversations/", crate::well_known::ROOT_ENV)]
    NoRoot,
    /// A store root that is not a folder.
    #[error("{}: not a folder; the store root is the folder that holds conversations/", root.display())]
    RootNotAFolder { root: PathBuf },
    /// A store root that does not exist.
    #[error("{}: {}; the store root is the folder that holds conversations/", root.display(), crate::util::io_text(source))]
    RootMissing {
        root: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A root without a `conversations/` folder.
    #[error("{}: not an agy store root (no conversations/ folder); name the folder that holds it", root.display())]
    NotAStoreRoot { root: PathBuf },
    /// A `conversations` that is not a folder.
    #[error("{}: not a folder; an agy store root holds a conversations/ folder", dir.display())]
    ConversationsNotAFolder { dir: PathBuf },
    /// A SOURCE argument that is neither an existing source nor an id.
    #[error("{arg}: neither an existing .db/.pb file nor a conversation id")]
    NotASourceOrId { arg: String },
    /// A conversation id with no source under the store.
    #[error("no conversation {id} under {} (looked for {id}.db and {id}.pb)", dir.display())]
    NoConversation { id: String, dir: PathBuf },
    /// A conversation id that no root in use holds.
    #[error("no conversation {id} in any root ({roots}; looked for conversations/{id}.db and .pb in each, in this order)")]
    NoConversationInRoots { id: String, roots: String },
    /// No `--root`, no pinned root and no `HOME` to find the default roots.
    #[error("no store root: HOME is not set (the default roots are ~/{} and ~/{}) and neither is {}; pass --root DIR", crate::well_known::CLI_SUBPATH, crate::well_known::IDE_SUBPATH, crate::well_known::ROOT_ENV)]
    NoHomeForRoots,
    /// Neither default root exists under the home folder.
    #[error("no store root found: neither ~/{} nor ~/{} exists under {}; pass --root DIR", crate::well_known::CLI_SUBPATH, crate::well_known::IDE_SUBPATH, home.display())]
    NoDefaultRoot { home: PathBuf },
}
