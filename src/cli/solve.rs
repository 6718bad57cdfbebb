//! `patience solve`: the engine in this process, streaming deal files through the pool on the
//! pipeline it shares with `rps` (`local.rs`).

use anyhow::Context as _;

use super::SolveArgs;
use crate::deal::DealReader;
use crate::jobs::batches::BatchSize;
use crate::jobs::input::Reader;
use crate::jobs::job::JobRun;
use crate::jobs::local;
use crate::jobs::output::{ExitStatus, JsonAnalysis, Render};
use crate::jobs::progress::Unit;
use crate::pool::{Engines, Pool, default_workers};

/// Deals per pool job: 16 at first, so that a short file still spreads over every worker, then
/// doubling up to 256, where the per-job cost (a queue hop and a wake-up or two, several
/// microseconds each on a VM) is a few thousandths of the job's ~3 ms of solving. Measured
/// (docs/performance.md): jobs of 32 throughout cost `solve --workers 1` some 4% of its time in
/// waking the printer alone.
const BATCH: BatchSize = BatchSize::growing(16, 256);

pub fn run(args: &SolveArgs) -> anyhow::Result<ExitStatus> {
    let options = args.analysis.options()?;
    let render = Render {
        format: args.analysis.format,
        precision: args.precision,
        asked: options,
    };
    let (job, sink) =
        JobRun::start::<DealReader<Reader>>(&args.job, &args.files, Unit::DEALS, &render)?;
    let workers = args.workers.map_or_else(default_workers, |n| n.get());
    let pool = Pool::new(workers, 2 * workers).context("cannot start solver threads")?;
    let status = local::run::<DealReader<_>, _>(
        &job.reading(),
        &pool,
        BATCH,
        // With nothing asked this is a plain solve.
        move |engines: &mut Engines, entry| entry.map(|deal| engines.deals.analyze(&deal, options)),
        job.printer(sink, render),
        |printer, answer| match answer {
            Ok(a) => printer.solved(a.probability, Some(JsonAnalysis::from_engine(&a, options))),
            Err(message) => printer.failed(&message),
        },
    );
    job.end(status, None)
}
