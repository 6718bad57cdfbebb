//! `patience solve`: the engine in this process, streaming deal files through the pool.
//!
//! A reader thread parses batches and queues them on the pool; this thread waits for the batches'
//! tickets in input order and prints. Both queues are bounded, so memory stays flat however large
//! the input is.

use std::io::{self, BufWriter, Write};
use std::sync::mpsc;
use std::thread;

use anyhow::Context as _;

use super::batches::{Entry, Event, read_batches};
use super::input::Input;
use super::output::{JsonAnalysis, JsonLine, Status, error_line, json_line, probability_line};
use super::{OutputFormat, SolveArgs};
use crate::pool::{BatchTicket, Pool, default_workers};
use crate::solver::{Analysis, Options, Solver};

/// Deals per pool job: enough to make the per-job cost (a queue hop and a wake-up) negligible
/// against ~25 µs of solving per deal, small enough to keep every worker busy.
const BATCH: usize = 32;

type Answer = Result<Analysis, String>;

enum Piece {
    Answers(BatchTicket<Answer>),
    Unreadable(String),
}

pub fn run(args: &SolveArgs) -> anyhow::Result<Status> {
    let options = args.analysis.options()?;
    let workers = args.workers.map_or_else(default_workers, |n| n.get());
    let pool = Pool::new(workers, 2 * workers).context("cannot start solver threads")?;
    let inputs = Input::from_args(&args.files);
    let (tx, rx) = mpsc::sync_channel::<Piece>(4 * workers);

    thread::scope(|scope| {
        let pool = &pool;
        let inputs = &inputs;
        scope.spawn(move || {
            read_batches(inputs, BATCH, |event| {
                let piece = match event {
                    Event::Batch(batch) => match pool.submit_batch_blocking(
                        batch,
                        move |solver: &mut Solver, entry: Entry| -> Answer {
                            // With nothing asked this is a plain solve.
                            entry.map(|deal| solver.analyze(&deal, options))
                        },
                    ) {
                        Ok(ticket) => Piece::Answers(ticket),
                        Err(e) => Piece::Unreadable(e.to_string()),
                    },
                    Event::Unreadable(msg) => Piece::Unreadable(msg),
                };
                tx.send(piece).is_ok()
            });
        });
        print_in_order(rx, args.precision, args.analysis.format, options)
    })
}

fn print_in_order(
    rx: mpsc::Receiver<Piece>,
    precision: u8,
    format: OutputFormat,
    options: Options,
) -> anyhow::Result<Status> {
    let mut out = BufWriter::new(io::stdout().lock());
    let mut status = Status::Ok;
    let mut index = 0u64;
    loop {
        let piece = match rx.try_recv() {
            Ok(piece) => piece,
            Err(mpsc::TryRecvError::Empty) => {
                // About to wait for the reader: let whoever reads our output see what we have.
                if let Err(e) = out.flush() {
                    return write_failed(e, status);
                }
                match rx.recv() {
                    Ok(piece) => piece,
                    Err(_) => break,
                }
            }
            Err(mpsc::TryRecvError::Disconnected) => break,
        };
        match piece {
            Piece::Answers(ticket) => {
                // The pool lives until every ticket is answered, so a batch cannot be lost.
                let answers = ticket.wait().map_err(|e| anyhow::anyhow!(e))?;
                for answer in answers {
                    let answer = answer.unwrap_or_else(|e| Err(format!("internal error: {e}")));
                    if answer.is_err() {
                        status = status.max(Status::BadDeal);
                    }
                    let line = match (format, &answer) {
                        (OutputFormat::Text, Ok(a)) => probability_line(a.probability, precision),
                        (OutputFormat::Text, Err(msg)) => error_line(msg),
                        (OutputFormat::Json, Ok(a)) => json_line(&JsonLine {
                            index,
                            probability: Some(a.probability),
                            error: None,
                            analysis: Some(JsonAnalysis::from_engine(a, options)),
                        }),
                        (OutputFormat::Json, Err(msg)) => json_line(&JsonLine {
                            index,
                            probability: None,
                            error: Some(msg),
                            analysis: None,
                        }),
                    };
                    index += 1;
                    if let Err(e) = writeln!(out, "{line}") {
                        return write_failed(e, status);
                    }
                }
            }
            Piece::Unreadable(msg) => {
                let _ = out.flush();
                eprintln!("patience: {msg}");
                status = Status::Trouble;
            }
        }
    }
    match out.flush() {
        Ok(()) => Ok(status),
        Err(e) => write_failed(e, status),
    }
}

/// A closed pipe (`patience solve big | head`) is the reader's choice, not an error.
fn write_failed(e: io::Error, status: Status) -> anyhow::Result<Status> {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Ok(status)
    } else {
        Err(anyhow::Error::new(e).context("cannot write the results"))
    }
}
