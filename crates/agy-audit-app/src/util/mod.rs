//! The engine's helpers (`agy_engine::util`: hex, time, atomic writes, the
//! strict JSON walk, the bounded reader), plus [`term`], the one way the
//! application and the CLI write to stdout and stderr.

pub use agy_engine::util::*;

pub mod term;
