//! One plan for a job: what a run of `solve`, `client` or `rps`, or a job the daemon runs, reads,
//! where its answers go and how it reports. Built once, from the command line's flags (src/cli)
//! or from a job's spec (`board/run.rs`), and handed to `JobRun::start` (`job.rs`);
//! the library never sees a flag. Places are parsed once, by whoever builds the plan: the inputs
//! into [`Input`]s, the output into a [`Location`].

use std::time::Duration;

use crate::jobs::report::progress::ProgressMode;
use crate::jobs::sink::output::Render;
use crate::jobs::source::input::Input;
use crate::jobs::source::parquet_in::InputFormat;
use crate::jobs::source::shard::Shard;
use crate::jobs::store::location::Location;
use crate::jobs::store::object::StorageSettings;

/// Everything a run needs to know before it starts.
#[derive(Debug)]
pub struct JobPlan {
    /// What it reads, in order (standard input alone when the command line names none).
    pub inputs: Vec<Input>,
    /// Where the answers go: standard output when `None`.
    pub output: Option<Location>,
    /// Go on from the output's answers rather than write it anew.
    pub resume: bool,
    /// Progress on standard error.
    pub progress: ProgressMode,
    /// One summary line on standard error at the end.
    pub summary: bool,
    /// Answer only this shard of the inputs.
    pub shard: Option<Shard>,
    /// How the inputs are read.
    pub input_format: InputFormat,
    /// How each answer is written.
    pub render: Render,
    /// Object storage's limits.
    pub storage: StorageSettings,
    /// How often `ProgressMode::Log` prints.
    pub progress_every: Duration,
}
