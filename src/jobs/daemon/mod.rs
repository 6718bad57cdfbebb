//! Stage 7, the daemon's jobs: runs the daemon keeps for its callers.
//!
//! - Comes in: a job's spec from `patience.v1.JobService` or the HTTP API, and the daemon's
//!   `--jobs-dir`.
//! - Goes out: the spec checked and placed beneath `--jobs-dir` (`spec.rs`); the queue of jobs,
//!   each run on the daemon's pool through the pipeline, recorded, watched, cancelled and taken
//!   up again after a restart (`board.rs`; a job's record and view, `board/kept.rs`; one run of a
//!   job, `board/run.rs`).

pub mod board;
pub mod spec;
