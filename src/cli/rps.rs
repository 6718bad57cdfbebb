//! `patience rps`: FZU 2145 rock-paper-scissors cases, solved in this process on the same pool as
//! `solve`.
//!
//! The same in-process pipeline as `solve` (`local.rs`), with the case reader.

use anyhow::Context as _;

use super::RpsArgs;
use crate::jobs::outcome::ExitStatus;
use crate::jobs::pipeline::job::JobRun;
use crate::jobs::pipeline::local;
use crate::jobs::report::progress::Unit;
use crate::jobs::source::input::Reader;
use crate::pool::{Pool, default_workers};
use crate::rps::CaseReader;

/// Solves the cases in this process (`rps` without `--addr`; with it, `client::run_rps`).
pub fn run(args: &RpsArgs) -> anyhow::Result<ExitStatus> {
    let render = args.render();
    let plan = args.job.plan(&args.files, render)?;
    let (job, sink) = JobRun::start::<CaseReader<Reader>>(&plan, Unit::CASES)?;
    let workers = args.workers.map_or_else(default_workers, |n| n.get());
    let pool = Pool::new(workers, 2 * workers).context("cannot start solver threads")?;
    let status = local::cases(&job, sink, render, &pool, None, &|| false);
    job.end(status.map_err(anyhow::Error::from), None)
}
