//! The in-process pipeline `solve` and `rps` share: a reader thread parses batches with the
//! game's reader and queues each on the pool; this thread waits for the batches' tickets in input
//! order and prints them. Both queues are bounded, so memory stays flat however large the input
//! is, and a bad item travels with its batch as its error line, so it is printed in its place.

use std::io;
use std::sync::mpsc;
use std::thread;

use super::batches::{Batched, Entry, Items, ToRead, read_items};
use super::input::Reader;
use super::output::{ExitStatus, Printer};
use crate::pool::{BatchTicket, Engines, Pool};

/// One item's answer, or the message of its `error:` line (already naming the file, item and
/// line).
pub type ItemResult<A> = Result<A, String>;

/// What the reader hands the printer, in input order.
enum Piece<A> {
    /// A batch's answers to come, and the input bytes it and the batches before it span.
    Answers(BatchTicket<ItemResult<A>>, u64),
    /// Inputs read again whose answers the output holds (a resume): how many, bad ones, bytes.
    Skipped(u64, u64, u64),
    Unreadable(String),
}

/// Reads every item of `reading` with the game's reader `R`, the first `reading.skip` only to
/// count them (a resume), solves the rest on `pool` with `solve` (`batch` items per job) and prints each
/// answer in input order with `print`.
pub fn run<R, A>(
    reading: &ToRead,
    pool: &Pool,
    batch: usize,
    solve: impl Fn(&mut Engines, Entry<R::Item>) -> ItemResult<A> + Clone + Send + 'static,
    printer: Printer<'_>,
    print: impl FnMut(&mut Printer<'_>, ItemResult<A>) -> io::Result<()>,
) -> anyhow::Result<ExitStatus>
where
    R: Items<Reader>,
    R::Item: Send + 'static,
    A: Send + 'static,
{
    let (tx, rx) = mpsc::sync_channel::<Piece<A>>(4 * pool.workers());
    thread::scope(|scope| {
        scope.spawn(move || {
            read_items::<R>(reading, batch, |event| {
                let piece = match event {
                    Batched::Batch(items, at) => {
                        match pool.submit_batch_blocking(items, solve.clone()) {
                            Ok(ticket) => Piece::Answers(ticket, at),
                            Err(e) => Piece::Unreadable(e.to_string()),
                        }
                    }
                    Batched::Skipped { items, bad, at } => Piece::Skipped(items, bad, at),
                    Batched::Unreadable(message) => Piece::Unreadable(message),
                };
                // Stops reading once the printer has gone.
                tx.send(piece).is_ok()
            });
        });
        // Dropping the receiver when printing stops (say, stdout closed) is what stops the reader.
        print_in_order(rx, printer, print)
    })
}

fn print_in_order<A>(
    pieces: mpsc::Receiver<Piece<A>>,
    mut printer: Printer<'_>,
    mut print: impl FnMut(&mut Printer<'_>, ItemResult<A>) -> io::Result<()>,
) -> anyhow::Result<ExitStatus> {
    loop {
        let piece = match printer.receive(&pieces) {
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
                    if let Err(e) = print(&mut printer, answer) {
                        return printer.write_failed(e);
                    }
                }
                printer.advance(count, at);
            }
            Piece::Skipped(items, bad, at) => printer.skipped(items, bad, at),
            Piece::Unreadable(message) => printer.unreadable(&message),
        }
    }
    printer.finish()
}
