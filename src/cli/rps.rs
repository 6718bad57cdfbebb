//! `patience rps`: FZU 2145 rock-paper-scissors cases, solved in this process on the same pool as
//! `solve`.
//!
//! The same in-process pipeline as `solve` (`local.rs`), with the case reader.

use anyhow::Context as _;

use super::RpsArgs;
use crate::jobs::batches::BatchSize;
use crate::jobs::input::Reader;
use crate::jobs::job::JobRun;
use crate::jobs::local;
use crate::jobs::output::ExitStatus;
use crate::jobs::progress::Unit;
use crate::pool::{Engines, Pool, default_workers};
use crate::rps::{Case, CaseReader};

/// Cases per pool job. A case with 15 other players takes about a millisecond and one with none a
/// few nanoseconds, so batches are smaller than `solve`'s: big enough that a file of small cases
/// does not pay a queue hop per case, small enough that a run of large ones spreads over every
/// worker.
const BATCH: BatchSize = BatchSize::fixed(16);

/// Solves the cases in this process (`rps` without `--addr`; with it, `client::run_rps`).
pub fn run(args: &RpsArgs) -> anyhow::Result<ExitStatus> {
    let render = args.render();
    let (job, sink) =
        JobRun::start::<CaseReader<Reader>>(&args.job, &args.files, Unit::CASES, &render)?;
    let workers = args.workers.map_or_else(default_workers, |n| n.get());
    let pool = Pool::new(workers, 2 * workers).context("cannot start solver threads")?;
    let status = local::run::<CaseReader<Reader>, _>(
        &job.reading(),
        &pool,
        BATCH,
        |engines: &mut Engines, entry: Result<Case, String>| {
            entry.map(|case| engines.rps.solve(&case))
        },
        job.printer(sink, render),
        |printer, answer| match answer {
            Ok(p) => printer.solved(p, None),
            Err(message) => printer.failed(&message),
        },
    );
    job.end(status, None)
}
