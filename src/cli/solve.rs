//! `patience solve`: the engine in this process, streaming deal files through the pool on the
//! pipeline it shares with `rps` (`local.rs`).

use anyhow::Context as _;

use super::SolveArgs;
use crate::deal::DealReader;
use crate::jobs::outcome::ExitStatus;
use crate::jobs::pipeline::job::JobRun;
use crate::jobs::pipeline::local;
use crate::jobs::report::progress::Unit;
use crate::jobs::sink::output::Render;
use crate::jobs::source::input::Reader;
use crate::pool::{Pool, default_workers};

pub fn run(args: &SolveArgs) -> anyhow::Result<ExitStatus> {
    let options = args.analysis.options()?;
    let render = Render {
        format: args.analysis.format,
        precision: args.precision,
        asked: options,
    };
    let plan = args.job.plan(&args.files, render)?;
    let (job, sink) = JobRun::start::<DealReader<Reader>>(&plan, Unit::DEALS)?;
    let workers = args.workers.map_or_else(default_workers, |n| n.get());
    let pool = Pool::new(workers, 2 * workers).context("cannot start solver threads")?;
    let status = local::deals(
        &job,
        sink,
        render,
        &pool,
        local::PoolShare {
            batch: local::DEALS_BATCH,
            at_once: None,
        },
        &|| false,
    );
    job.end(status.map_err(anyhow::Error::from), None)
}
