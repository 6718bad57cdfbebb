//! `patience rps`: FZU 2145 rock-paper-scissors cases, solved in this process on the same pool as
//! `solve`.
//!
//! Reading and printing are kept apart so that anything that produces the answers in input order
//! can use the same printer: here [`read`] parses batches of cases on a thread of its own and
//! queues each batch on the pool, and [`print_in_order`] waits for the batches' tickets in input
//! order and hands their [`Answer`]s to [`print_answers`]. A path through daemons needs only to
//! turn what they answer into [`Answer`]s, in order, and call [`print_answers`] (and
//! [`Printer::unreadable`] for an input that cannot be read) on a [`Printer`] made by [`printer`].
//! Both queues are bounded, so memory stays flat however large the input is.

use std::io::{self, BufWriter, Write};
use std::sync::mpsc;
use std::thread;

use anyhow::Context as _;

use super::RpsArgs;
use super::batches::{Entry, Event, read_items};
use super::input::{Input, Reader};
use super::output::{Printer, Render, Status};
use super::progress::{Progress, Unit};
use crate::pool::{BatchTicket, Engines, Pool, default_workers};
use crate::rps::{Case, CaseReader};

/// Cases per pool job. A case with 15 other players takes about a millisecond and one with none a
/// few nanoseconds, so batches are smaller than `solve`'s: big enough that a file of small cases
/// does not pay a queue hop per case, small enough that a run of large ones spreads over every
/// worker.
const BATCH: usize = 16;

/// One case's answer: the probability that Maze wins, or the message of its `error:` line
/// (already naming the file, case and line).
pub type Answer = Result<f64, String>;

/// What the reader hands the printer, in input order.
enum Piece {
    /// A batch's answers to come, and the input bytes it and the batches before it span.
    Answers(BatchTicket<Answer>, u64),
    Unreadable(String),
}

pub fn run(args: &RpsArgs) -> anyhow::Result<Status> {
    if !args.addr.is_empty() {
        return super::client::run_rps(args);
    }
    let workers = args.workers.map_or_else(default_workers, |n| n.get());
    let pool = Pool::new(workers, 2 * workers).context("cannot start solver threads")?;
    let inputs = Input::from_args(&args.files);
    let (tx, rx) = mpsc::sync_channel::<Piece>(4 * workers);
    let progress = Progress::counting(Unit::CASES, args.quiet, &inputs);

    thread::scope(|scope| {
        let pool = &pool;
        let inputs = &inputs;
        scope.spawn(move || read(inputs, pool, &tx));
        let printer = printer(args, BufWriter::new(io::stdout().lock()), &progress);
        let status = print_in_order(&rx, printer);
        progress.finish();
        status
    })
}

/// The printer for `args`' format and precision. Every path that prints rps answers starts here,
/// so that they all print the same bytes.
pub fn printer<'a, W: Write>(args: &RpsArgs, out: W, progress: &'a Progress) -> Printer<'a, W> {
    Printer::new(out, render(args), progress)
}

/// How each case's line is rendered, in-process and through daemons alike.
pub fn render(args: &RpsArgs) -> Render {
    Render {
        format: args.format,
        precision: args.precision,
        // No analysis for this game: JSON lines hold the index and the probability or error.
        asked: crate::solver::Options::default(),
    }
}

/// Prints the answers of consecutive cases, in order, and counts them on the progress bar: `at`
/// is how many input bytes they and the cases before them span.
pub fn print_answers<W: Write>(
    printer: &mut Printer<'_, W>,
    answers: impl IntoIterator<Item = Answer>,
    at: u64,
) -> io::Result<()> {
    let mut count = 0;
    for answer in answers {
        count += 1;
        match answer {
            Ok(p) => printer.solved(p, None)?,
            Err(message) => printer.failed(&message)?,
        }
    }
    printer.advance(count, at);
    Ok(())
}

/// Reads every input in batches and queues each on the pool; a bad case travels with its batch as
/// its error line, so it is printed in its place. Stops when the printer has gone.
fn read(inputs: &[Input], pool: &Pool, pieces: &mpsc::SyncSender<Piece>) {
    read_items::<CaseReader<Reader>>(inputs, BATCH, |event| {
        let piece = match event {
            Event::Batch(batch, at) => match pool.submit_batch_blocking(
                batch,
                |engines: &mut Engines, entry: Entry<Case>| -> Answer {
                    entry.map(|case| engines.rps.solve(&case))
                },
            ) {
                Ok(ticket) => Piece::Answers(ticket, at),
                Err(e) => Piece::Unreadable(e.to_string()),
            },
            Event::Unreadable(message) => Piece::Unreadable(message),
        };
        pieces.send(piece).is_ok()
    });
}

/// Waits for each batch's answers in input order and prints them.
fn print_in_order<W: Write>(
    pieces: &mpsc::Receiver<Piece>,
    mut printer: Printer<'_, W>,
) -> anyhow::Result<Status> {
    loop {
        let piece = match printer.receive(pieces) {
            Ok(Some(piece)) => piece,
            Ok(None) => break,
            Err(e) => return printer.write_failed(e),
        };
        match piece {
            Piece::Answers(ticket, at) => {
                // The pool lives until every ticket is answered, so a batch cannot be lost.
                let answers = ticket.wait().map_err(|e| anyhow::anyhow!(e))?;
                let answers = answers
                    .into_iter()
                    .map(|answer| answer.unwrap_or_else(|e| Err(format!("internal error: {e}"))));
                if let Err(e) = print_answers(&mut printer, answers, at) {
                    return printer.write_failed(e);
                }
            }
            Piece::Unreadable(message) => printer.unreadable(&message),
        }
    }
    printer.finish()
}
