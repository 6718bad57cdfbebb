//! `patience solve`: the engine in this process, streaming deal files through the pool on the
//! pipeline it shares with `rps` (`local.rs`).

use std::io::{self, BufWriter};

use anyhow::Context as _;

use super::SolveArgs;
use super::input::Input;
use super::local;
use super::output::{ExitStatus, JsonAnalysis, Printer, Render};
use super::progress::ProgressDisplay;
use crate::deal::DealReader;
use crate::pool::{Engines, Pool, default_workers};

/// Deals per pool job: enough to make the per-job cost (a queue hop and a wake-up) negligible
/// against ~20 µs of solving per deal, small enough to keep every worker busy.
const BATCH: usize = 32;

pub fn run(args: &SolveArgs) -> anyhow::Result<ExitStatus> {
    let options = args.analysis.options()?;
    let workers = args.workers.map_or_else(default_workers, |n| n.get());
    let pool = Pool::new(workers, 2 * workers).context("cannot start solver threads")?;
    let inputs = Input::from_args(&args.files);
    let progress = ProgressDisplay::new(args.quiet, &inputs);
    let render = Render {
        format: args.analysis.format,
        precision: args.precision,
        asked: options,
    };
    let printer = Printer::new(BufWriter::new(io::stdout().lock()), render, &progress);
    let status = local::run::<DealReader<_>, _, _>(
        &inputs,
        &pool,
        BATCH,
        // With nothing asked this is a plain solve.
        move |engines: &mut Engines, entry| entry.map(|deal| engines.deals.analyze(&deal, options)),
        printer,
        |printer, answer| match answer {
            Ok(a) => printer.solved(a.probability, Some(JsonAnalysis::from_engine(&a, options))),
            Err(message) => printer.failed(&message),
        },
    );
    progress.finish();
    status
}
