//! The one pipeline every run of a command prints through, whatever answers it: a reader turns
//! the inputs into the printer's pieces, handing each batch to what answers it (an
//! [`Answering`]: the pool in this process, `local.rs`, or the daemons, `client::files`), and the
//! printer drains the pieces in input order ([`crate::ordered`]). The pieces' channel is bounded,
//! so the reader never runs more than its capacity ahead of the printer and memory stays flat
//! however large the input is; a bad item travels in its batch as its `error:` line, so it is
//! printed in its place.

use std::io;

use tokio::sync::mpsc;

use crate::jobs::outcome::ExitStatus;
use crate::jobs::sink::output::{OutputError, Printer, Printing};
use crate::jobs::source::batches::{BatchSize, Batched, Entry, Items, ToRead, read_items};
use crate::jobs::source::input::Reader;
use crate::ordered::{self, Drained, Piece, Stopped};

/// What answers the batches a run reads.
pub trait Answering<I> {
    /// One item's answer, as the printer takes it.
    type Answer;
    /// What goes to the answerer once the printer holds the batch's piece (the daemons' chunk:
    /// a chunk exists only once the printer is bound to wait for it, which is what bounds the
    /// chunks alive to the pieces read ahead).
    type Later;

    /// The printer's piece for the batch `entries` (which, with the items before them, span `at`
    /// bytes of the inputs), and what to send once it holds it.
    fn take(
        &mut self,
        entries: Vec<Entry<I>>,
        at: u64,
    ) -> (Piece<Self::Answer>, Option<Self::Later>);

    /// Sends what [`Answering::take`] left for later; `false` when nothing takes it any more (the
    /// run is over), which stops the reading.
    fn send(&mut self, later: Self::Later) -> bool;
}

/// Reads every item of `reading` with the game's reader `R` (the first `reading.skip` only to
/// count them: a resume), each batch given to `answering`, each piece to `pieces`, until the
/// inputs end or the printer has gone.
pub fn read<R, B>(
    reading: &ToRead,
    batch: BatchSize,
    answering: &mut B,
    pieces: &mpsc::Sender<Piece<B::Answer>>,
) where
    R: Items<Reader>,
    B: Answering<R::Item>,
{
    read_items::<R>(reading, batch, |event| {
        let (piece, later) = match event {
            Batched::Batch(entries, at) => answering.take(entries, at),
            Batched::Skipped { items, bad, at } => (Piece::Skipped { items, bad, at }, None),
            Batched::Unreadable(message) => (Piece::Unreadable(message), None),
        };
        // Stops reading once the printer has gone.
        pieces.blocking_send(piece).is_ok() && later.is_none_or(|later| answering.send(later))
    });
}

/// How printing ended.
#[derive(Debug)]
pub enum Printed {
    /// Every piece was printed.
    All(ExitStatus),
    /// Whoever reads standard output closed it (`patience solve big | head`): not an error.
    Closed(ExitStatus),
    /// A batch's answers will never come (the daemons gave up; the pool never loses one).
    Lost,
}

/// Prints every piece in input order with `print`, waiting for each batch's answers.
pub async fn print<'p, A, F>(
    pieces: &mut mpsc::Receiver<Piece<A>>,
    printer: Printer<'p>,
    print: F,
) -> Result<Printed, PrintError>
where
    F: FnMut(&mut Printer<'p>, A) -> io::Result<()>,
{
    let mut printing = Printing { printer, print };
    let drained = ordered::drain(pieces, &mut printing).await;
    let printer = printing.printer;
    match drained {
        Ok(Drained::All) => Ok(Printed::All(printer.finish()?)),
        Ok(Drained::Lost) => Ok(Printed::Lost),
        Err(Stopped::Write(e)) => Ok(Printed::Closed(printer.write_failed(e)?)),
        Err(Stopped::Short) => Err(PrintError::Short),
    }
}

/// Why printing ended without the run's status: the output's failure, or the pipeline's own,
/// which would be a bug.
#[derive(Debug, thiserror::Error)]
pub enum PrintError {
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error("{} (a bug in this program)", Stopped::Short)]
    Short,
}
