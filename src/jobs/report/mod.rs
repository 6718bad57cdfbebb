//! Stage 2, the report: what a run says about itself on standard error.
//!
//! - Comes in: counts as the run goes (items read, answered, bad, bytes), and how the run asked
//!   to be told (`ProgressMode`).
//! - Goes out: the progress bar or the `--progress log` lines (`progress.rs`) and the summary at
//!   the end, in their words (`words.rs`).

pub mod progress;
pub mod words;
