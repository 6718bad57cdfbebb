//! `patience solve`: the engine in this process, streaming deal files through the pool.
//!
//! A reader thread parses batches and queues them on the pool; this thread waits for the batches'
//! tickets in input order and prints. Both queues are bounded, so memory stays flat however large
//! the input is.

use std::io::{self, BufWriter};
use std::sync::mpsc;
use std::thread;

use anyhow::Context as _;

use super::SolveArgs;
use super::batches::{Entry, Event, read_batches};
use super::input::Input;
use super::output::{JsonAnalysis, Printer, Render, Status};
use super::progress::Progress;
use crate::pool::{BatchTicket, Engines, Pool, default_workers};
use crate::solver::Analysis;

/// Deals per pool job: enough to make the per-job cost (a queue hop and a wake-up) negligible
/// against ~25 µs of solving per deal, small enough to keep every worker busy.
const BATCH: usize = 32;

type Answer = Result<Analysis, String>;

enum Piece {
    /// A batch's answers to come, and the input bytes it and the batches before it span.
    Answers(BatchTicket<Answer>, u64),
    Unreadable(String),
}

pub fn run(args: &SolveArgs) -> anyhow::Result<Status> {
    let options = args.analysis.options()?;
    let workers = args.workers.map_or_else(default_workers, |n| n.get());
    let pool = Pool::new(workers, 2 * workers).context("cannot start solver threads")?;
    let inputs = Input::from_args(&args.files);
    let (tx, rx) = mpsc::sync_channel::<Piece>(4 * workers);
    let progress = Progress::new(args.quiet, &inputs);

    thread::scope(|scope| {
        let pool = &pool;
        let inputs = &inputs;
        scope.spawn(move || {
            read_batches(inputs, BATCH, |event| {
                let piece = match event {
                    Event::Batch(batch, at) => match pool.submit_batch_blocking(
                        batch,
                        move |engines: &mut Engines, entry: Entry| -> Answer {
                            // With nothing asked this is a plain solve.
                            entry.map(|deal| engines.deals.analyze(&deal, options))
                        },
                    ) {
                        Ok(ticket) => Piece::Answers(ticket, at),
                        Err(e) => Piece::Unreadable(e.to_string()),
                    },
                    Event::Unreadable(msg) => Piece::Unreadable(msg),
                };
                tx.send(piece).is_ok()
            });
        });
        let render = Render {
            format: args.analysis.format,
            precision: args.precision,
            asked: options,
        };
        let status = print_in_order(rx, render, &progress);
        progress.finish();
        status
    })
}

fn print_in_order(
    rx: mpsc::Receiver<Piece>,
    render: Render,
    progress: &Progress,
) -> anyhow::Result<Status> {
    let mut printer = Printer::new(BufWriter::new(io::stdout().lock()), render, progress);
    loop {
        let piece = match printer.receive(&rx) {
            Ok(Some(piece)) => piece,
            Ok(None) => break,
            Err(e) => return printer.write_failed(e),
        };
        match piece {
            Piece::Answers(ticket, at) => {
                // The pool lives until every ticket is answered, so a batch cannot be lost.
                let answers = ticket.wait().map_err(|e| anyhow::anyhow!(e))?;
                let count = answers.len() as u64;
                for answer in answers {
                    let answer = answer.unwrap_or_else(|e| Err(format!("internal error: {e}")));
                    let written = match &answer {
                        Ok(a) => printer.solved(
                            a.probability,
                            Some(JsonAnalysis::from_engine(a, render.asked)),
                        ),
                        Err(msg) => printer.failed(msg),
                    };
                    if let Err(e) = written {
                        return printer.write_failed(e);
                    }
                }
                printer.advance(count, at);
            }
            Piece::Unreadable(msg) => printer.unreadable(&msg),
        }
    }
    printer.finish()
}
