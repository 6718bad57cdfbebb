//! Stage 5, the parts: shards' outputs as parts of one whole.
//!
//! - Comes in: a shard's output (a file or an object) as its run ends; for `patience merge`, the
//!   parts of one input.
//! - Goes out: a part's lock while it is written and its completion record (`part.rs`), and the
//!   whole output merged from complete parts, refused in words when they do not make one whole
//!   (`merge.rs`, its refusals in `merge/refusal.rs`).

pub mod merge;
pub mod part;

#[cfg(test)]
mod in_memory;
