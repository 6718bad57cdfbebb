//! The pool behind the one pipeline (`stream.rs`), for `solve`, `rps` and the daemon's jobs: the
//! reader queues each batch on the pool as it reads it; this thread waits for the batches' tickets
//! in input order and prints them. The pool's queue is bounded as well as the pieces', so memory
//! stays flat however large the input is.

use std::convert::Infallible;
use std::io;
use std::thread;

use futures::FutureExt as _;
use tokio::sync::mpsc;

use super::job::JobRun;
use super::stream::{self, Answering, PrintError, Printed};
use crate::deal::DealReader;
use crate::jobs::outcome::ExitStatus;
use crate::jobs::sink::lines::Sink;
use crate::jobs::sink::output::{JsonAnalysis, OutputError, Printer, Render};
use crate::jobs::source::batches::{BatchSize, Entry, Items, ToRead};
use crate::jobs::source::input::Reader;
use crate::ordered::{Piece, Stopped};
use crate::pool::{Engines, Pool};
use crate::rps::{Case, CaseReader};
use crate::solver::Options;

/// Deals per pool job for `solve`: 16 at first, so that a short file still spreads over every
/// worker, then doubling up to 256, where the per-job cost (a queue hop and a wake-up or two,
/// several microseconds each on a VM) is a few thousandths of the job's ~3 ms of solving.
/// Measured (docs/performance.md): jobs of 32 throughout cost `solve --workers 1` some 4% of its
/// time in waking the printer alone.
pub const DEALS_BATCH: BatchSize = BatchSize::growing(16, 256);

/// Cases per pool job. A case with 15 other players takes about a millisecond and one with none a
/// few nanoseconds, so batches are smaller than `solve`'s: big enough that a file of small cases
/// does not pay a queue hop per case, small enough that a run of large ones spreads over every
/// worker.
pub const CASES_BATCH: BatchSize = BatchSize::fixed(16);

/// How a run shares the pool: its batches' size, and how many of them may be in the pool at once
/// (queued or being solved). A command's run has the pool to itself (no bound but the queue's); a
/// job the daemon runs keeps at most one batch a worker there, so that a call the daemon serves
/// meanwhile waits behind at most one short batch a worker, never behind a queue of them.
#[derive(Clone, Copy, Debug)]
pub struct PoolShare {
    pub batch: BatchSize,
    pub at_once: Option<usize>,
}

/// Why a run stopped before its end when [`deals`] or [`cases`] was asked to stop: its output
/// holds whole lines, a correct prefix, and its records stay, so `--resume` goes on from it.
pub const STOPPED: &str = "the run was stopped; its output goes on with --resume";

/// Why a run in this process ended without its status: the printer's failure, or the pipeline's
/// own, which would be a bug.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error("the solver pool stopped before answering every item")]
    PoolStopped,
    #[error("{} (a bug in this program)", Stopped::Short)]
    Short,
}

impl From<PrintError> for LocalError {
    fn from(e: PrintError) -> LocalError {
        match e {
            PrintError::Output(e) => LocalError::Output(e),
            PrintError::Short => LocalError::Short,
        }
    }
}

/// A printer's answer to a stop asked for: the pipeline ends as on a failed write.
fn stop_asked() -> io::Error {
    io::Error::new(io::ErrorKind::Interrupted, STOPPED)
}

/// `job`'s deals solved on `pool` in jobs of `batch`, with the analysis `asked`, printed into
/// `sink` with `render`: `solve`'s run, and a job's the daemon runs. `stop` is asked before each
/// answer is printed; once it says so the run ends with [`STOPPED`].
pub fn deals(
    job: &JobRun,
    sink: Sink,
    render: Render,
    pool: &Pool,
    share: PoolShare,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<ExitStatus, LocalError> {
    let asked: Options = render.asked;
    run::<DealReader<_>, _>(
        &job.reading(),
        pool,
        share,
        // With nothing asked this is a plain solve.
        move |engines: &mut Engines, entry| entry.map(|deal| engines.deals.analyze(&deal, asked)),
        job.printer(sink, render),
        |printer, answer| match answer {
            _ if stop() => Err(stop_asked()),
            Ok(a) => printer.solved(a.probability, Some(JsonAnalysis::from_engine(&a, asked))),
            Err(message) => printer.failed(&message),
        },
    )
}

/// `job`'s cases solved on `pool`: `rps`'s run, and a job's the daemon runs (as [`deals`]).
pub fn cases(
    job: &JobRun,
    sink: Sink,
    render: Render,
    pool: &Pool,
    at_once: Option<usize>,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<ExitStatus, LocalError> {
    run::<CaseReader<Reader>, _>(
        &job.reading(),
        pool,
        PoolShare {
            batch: CASES_BATCH,
            at_once,
        },
        |engines: &mut Engines, entry: Result<Case, String>| {
            entry.map(|case| engines.rps.solve(&case))
        },
        job.printer(sink, render),
        |printer, answer| match answer {
            _ if stop() => Err(stop_asked()),
            Ok(p) => printer.solved(p, None),
            Err(message) => printer.failed(&message),
        },
    )
}

/// One item's answer, or the message of its `error:` line (already naming the file, item and
/// line).
pub type ItemResult<A> = Result<A, String>;

/// Reads every item of `reading` with the game's reader `R` (the first `reading.skip` only to
/// count them: a resume), solves the rest on `pool` with `solve` (jobs of `share.batch` items)
/// and prints each answer in input order with `print`, through the one pipeline (`stream.rs`).
/// A bad item travels with its batch to the pool, which hands its message back as its answer.
pub fn run<'p, R, A>(
    reading: &ToRead,
    pool: &Pool,
    share: PoolShare,
    solve: impl Fn(&mut Engines, Entry<R::Item>) -> ItemResult<A> + Clone + Send + 'static,
    printer: Printer<'p>,
    print: impl FnMut(&mut Printer<'p>, ItemResult<A>) -> io::Result<()>,
) -> Result<ExitStatus, LocalError>
where
    R: Items<Reader>,
    R::Item: Send + 'static,
    A: Send + 'static,
{
    let (tx, mut pieces) = mpsc::channel::<Piece<ItemResult<A>>>(4 * pool.workers());
    let mut on_the_pool = OnThePool {
        pool,
        slots: share.at_once.map(Slots::new),
        solve,
    };
    let printed = thread::scope(|scope| {
        scope.spawn(move || stream::read::<R, _>(reading, share.batch, &mut on_the_pool, &tx));
        // This thread is the only one waiting on the pool's tickets: no runtime is needed.
        let printed = futures::executor::block_on(stream::print(&mut pieces, printer, print));
        // Dropping the receiver when printing stops (say, stdout closed) is what stops the reader.
        drop(pieces);
        printed
    });
    match printed? {
        Printed::All(status) | Printed::Closed(status) => Ok(status),
        // The pool lives until every ticket is answered, so a batch cannot be lost.
        Printed::Lost => Err(LocalError::PoolStopped),
    }
}

/// The pool as what answers a run's batches: each is queued on it as it is read (waiting while
/// the queue is full), its ticket the piece's answers.
struct OnThePool<'a, S> {
    pool: &'a Pool,
    /// [`PoolShare::at_once`]'s places.
    slots: Option<std::sync::Arc<Slots>>,
    solve: S,
}

impl<I, A, S> Answering<I> for OnThePool<'_, S>
where
    I: Send + 'static,
    A: Send + 'static,
    S: Fn(&mut Engines, Entry<I>) -> ItemResult<A> + Clone + Send + 'static,
{
    type Answer = ItemResult<A>;
    type Later = Infallible;

    fn take(
        &mut self,
        entries: Vec<Entry<I>>,
        at: u64,
    ) -> (Piece<ItemResult<A>>, Option<Infallible>) {
        let lines = vec![None; entries.len()];
        // Held by the batch's job until the worker is done with it.
        let slot = self.slots.as_ref().map(Slots::take);
        let solve = self.solve.clone();
        let job = move |engines: &mut Engines, entry| {
            let _held = &slot;
            solve(engines, entry)
        };
        let piece = match self.pool.submit_batch_blocking(entries, job) {
            Ok(ticket) => Piece::Batch {
                lines,
                answers: Some(Box::pin(ticket.map(|answers| {
                    let answers = answers.ok()?.into_iter();
                    Some(answers.map(|a| a.unwrap_or_else(internal)).collect())
                }))),
                at,
            },
            Err(e) => Piece::Unreadable(e.to_string()),
        };
        (piece, None)
    }

    fn send(&mut self, later: Infallible) -> bool {
        match later {}
    }
}

/// A counting semaphore for plain threads: [`PoolShare::at_once`]'s places in the pool.
struct Slots {
    free: std::sync::Mutex<usize>,
    freed: std::sync::Condvar,
}

/// One place, given back when dropped.
struct Slot(std::sync::Arc<Slots>);

impl Slots {
    fn new(places: usize) -> std::sync::Arc<Slots> {
        std::sync::Arc::new(Slots {
            free: std::sync::Mutex::new(places.max(1)),
            freed: std::sync::Condvar::new(),
        })
    }

    /// Waits for a place, and takes it.
    fn take(self: &std::sync::Arc<Slots>) -> Slot {
        let mut free = self
            .free
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while *free == 0 {
            free = self
                .freed
                .wait(free)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        *free -= 1;
        Slot(self.clone())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut free = self
            .0
            .free
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *free += 1;
        self.0.freed.notify_one();
    }
}

/// An item whose solving panicked: its line says so, and the run goes on.
fn internal<A>(e: crate::pool::PoolError) -> ItemResult<A> {
    Err(format!("internal error: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pipeline's own failures in the words they have always had (written out here by hand).
    #[test]
    fn a_pipeline_stopped_short_says_so_as_it_always_did() {
        assert_eq!(
            LocalError::PoolStopped.to_string(),
            "the solver pool stopped before answering every item"
        );
        assert_eq!(
            LocalError::Short.to_string(),
            "a batch's answers ran short (a bug in this program)"
        );
    }
}
