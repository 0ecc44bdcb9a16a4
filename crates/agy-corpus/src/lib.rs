//! agy-corpus: the ground truth agy-audit is tested against.
//!
//! * [`corpus`]: the deterministic synthetic store generator (plan →
//!   content → SQLite / legacy `.pb` → `.truth/`).
//! * [`sim`]: the simulated daemon serving the generator's `.truth/daemon/`
//!   views, with planned faults and `--json-style` spellings.
//!
//! This crate depends on none of agy-audit's modules (its manifest does not
//! list agy-audit, so the compiler enforces it): the descriptor pool
//! ([`schema`]), the wire encoders (`corpus::wire`), the daemon's JSON
//! conversion and the public ids the truth file speaks ([`ids`]) are its own.
//! When the reader and the generator agree, they agree because both follow
//! the specification, not because they share a function.
//!
//! Exception to the workspace's bounded-read rule (`clippy.toml`): this
//! crate reads only files it wrote itself (a generated store's `.truth/`,
//! its own SQLite images) and cannot use agy-audit's `util::bounded`
//! without depending on the reader it is the independent truth for.
#![allow(clippy::disallowed_methods)]

pub mod corpus;
pub mod ids;
pub mod schema;
pub mod sim;
mod util;
