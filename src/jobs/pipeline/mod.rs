//! Stage 6, the pipeline: one run, from its plan to its exit status.
//!
//! - Comes in: a [`plan::JobPlan`], built once from the command line's flags or from a daemon
//!   job's spec.
//! - Goes out: the run's output opened, its progress started and its inputs to read (`job.rs`:
//!   what `solve`, `client` and `rps` share), the one pipeline they print through, read ->
//!   pieces -> drain (`stream.rs`), with the pool behind it for `solve`, `rps` and the daemon's
//!   jobs (`local.rs`; the daemons for `client`, in `client::files`), and the run's end (a part
//!   recorded complete, the summary).

pub mod job;
pub mod local;
pub mod plan;
pub mod stream;
