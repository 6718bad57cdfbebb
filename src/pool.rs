//! A bounded pool of solver threads, shared by everything that solves.
//!
//! Each worker is an OS thread that owns one set of [`Engines`] for its whole life: a Double
//! Patience [`Solver`] (and so one 5^9 table) and an [`RpsSolver`] (its subset tables), both
//! allocated when the worker starts. One pool serves both games. Solving is CPU-bound and
//! allocation-free, so it belongs on dedicated threads rather than on an async runtime. Work enters through one bounded queue, which is where backpressure starts: a
//! submitter waits (asynchronously, or by blocking) while the queue is full.
//!
//! A job's result comes back through a [`Ticket`]. Dropping the ticket cancels the job: a worker that
//! takes a job whose ticket is gone skips it, so a stream whose client went away stops costing
//! solver time as soon as its queued jobs reach the front.
//!
//! A job that panics is reported to its ticket as [`PoolError::Panicked`]; its worker then replaces
//! its engines with fresh ones (a table may be half-written) and carries on, so the pool never
//! shrinks.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::thread;

use tokio::sync::oneshot;

use crate::rps::RpsSolver;
use crate::solver::Solver;

/// What each worker owns for life: one engine per game, each reused for every item it solves.
#[derive(Debug, Default)]
pub struct Engines {
    /// Double Patience: the 5^9 index table and its dense array.
    pub deals: Solver,
    /// FZU 2145: the subset tables, sized for the largest case accepted.
    pub rps: RpsSolver,
}

impl Engines {
    /// Allocates both engines' tables: a few milliseconds, once per worker.
    pub fn new() -> Engines {
        Engines::default()
    }
}

/// The default number of workers: one per core, since solving is CPU-bound.
pub fn default_workers() -> usize {
    thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// Why a job produced no result.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// The job panicked; its worker has been given fresh engines and goes on.
    #[error("solver failed: {0}")]
    Panicked(String),
    /// The pool is shutting down and takes no more work.
    #[error("the solver pool is shut down")]
    Closed,
}

/// A queued unit of work. It settles its own counts ([`PoolStats::settle`]) before it hands over
/// its result, so whoever holds the result sees counters that include it.
type Job = Box<dyn FnOnce(&mut Engines, &PoolStats) + Send>;

/// Counters that outlive any one job; read them for metrics and tests.
#[derive(Debug, Default)]
pub struct PoolStats {
    busy: AtomicUsize,
    done: AtomicU64,
    skipped: AtomicU64,
    panicked: AtomicU64,
    /// Moves whenever a worker gets anywhere: an item solved or panicked, a job skipped.
    progress: AtomicU64,
}

impl PoolStats {
    /// Workers solving right now.
    pub fn busy(&self) -> usize {
        self.busy.load(Ordering::Relaxed)
    }
    /// Jobs that ran (a batch cut short by cancellation counts here if it started).
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }
    /// Jobs dropped unrun because their ticket was gone.
    pub fn skipped(&self) -> u64 {
        self.skipped.load(Ordering::Relaxed)
    }
    /// Items that panicked (each cost its worker fresh engines, not its thread).
    pub fn panicked(&self) -> u64 {
        self.panicked.load(Ordering::Relaxed)
    }

    /// Items finished (solved or panicked) and jobs skipped, so far: what a watchdog reads to
    /// tell a slow pool (it moves, if rarely) from a stuck one (it does not).
    pub fn progress(&self) -> u64 {
        self.progress.load(Ordering::Relaxed)
    }

    /// A job is over: it ran (done) or was skipped, and its worker is no longer busy.
    fn settle(&self, ran: bool) {
        self.progress.fetch_add(1, Ordering::Relaxed);
        self.busy.fetch_sub(1, Ordering::Relaxed);
        let counter = if ran { &self.done } else { &self.skipped };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The pool. Dropping it stops taking work, lets the workers finish the queue, and joins them.
pub struct Pool {
    queue: async_channel::Sender<Job>,
    workers: Vec<thread::JoinHandle<()>>,
    stats: Arc<PoolStats>,
}

/// The workers and what they have done; the queue's jobs are closures, which do not print.
impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("workers", &self.workers.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Pool {
    /// Starts `workers` threads (at least one) behind a queue of `queue` jobs (at least one).
    pub fn new(workers: usize, queue: usize) -> io::Result<Pool> {
        let (tx, rx) = async_channel::bounded::<Job>(queue.max(1));
        let stats = Arc::new(PoolStats::default());
        let workers = (0..workers.max(1))
            .map(|i| {
                let rx = rx.clone();
                let stats = stats.clone();
                thread::Builder::new()
                    .name(format!("solver-{i}"))
                    .spawn(move || work(rx, stats))
            })
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Pool {
            queue: tx,
            workers,
            stats,
        })
    }

    /// The number of worker threads (and sets of engines).
    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// Jobs waiting in the queue.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    pub fn stats(&self) -> &PoolStats {
        &self.stats
    }

    /// Queues `f` to run on some worker's engines, waiting asynchronously while the queue is full.
    pub async fn submit<T, F>(&self, f: F) -> Result<Ticket<T>, PoolError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Engines) -> T + Send + 'static,
    {
        let (job, ticket) = single(f);
        self.queue.send(job).await.map_err(|_| PoolError::Closed)?;
        Ok(ticket)
    }

    /// Queues `f`, blocking the calling thread while the queue is full. Not for async code.
    pub fn submit_blocking<T, F>(&self, f: F) -> Result<Ticket<T>, PoolError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Engines) -> T + Send + 'static,
    {
        let (job, ticket) = single(f);
        self.queue
            .send_blocking(job)
            .map_err(|_| PoolError::Closed)?;
        Ok(ticket)
    }

    /// Queues one job that applies `f` to each item in turn on one worker, so the per-job cost is
    /// paid once per batch. Each item succeeds or panics on its own: a panic costs that item only.
    /// If the ticket is dropped mid-batch, the rest of the batch is skipped.
    pub async fn submit_batch<I, T, F>(
        &self,
        items: Vec<I>,
        f: F,
    ) -> Result<BatchTicket<T>, PoolError>
    where
        I: Send + 'static,
        T: Send + 'static,
        F: FnMut(&mut Engines, I) -> T + Send + 'static,
    {
        let (job, ticket) = batch(items, f);
        self.queue.send(job).await.map_err(|_| PoolError::Closed)?;
        Ok(ticket)
    }

    /// [`submit_batch`](Pool::submit_batch) for plain threads: blocks while the queue is full.
    pub fn submit_batch_blocking<I, T, F>(
        &self,
        items: Vec<I>,
        f: F,
    ) -> Result<BatchTicket<T>, PoolError>
    where
        I: Send + 'static,
        T: Send + 'static,
        F: FnMut(&mut Engines, I) -> T + Send + 'static,
    {
        let (job, ticket) = batch(items, f);
        self.queue
            .send_blocking(job)
            .map_err(|_| PoolError::Closed)?;
        Ok(ticket)
    }
}

/// The result of a batch: one result per item, in order.
pub type BatchTicket<T> = Ticket<Vec<Result<T, PoolError>>>;

impl Drop for Pool {
    fn drop(&mut self) {
        self.queue.close();
        for worker in self.workers.drain(..) {
            // A worker never panics itself (jobs are caught), so there is nothing to report.
            let _ = worker.join();
        }
    }
}

fn single<T, F>(f: F) -> (Job, Ticket<T>)
where
    T: Send + 'static,
    F: FnOnce(&mut Engines) -> T + Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let job: Job = Box::new(move |solver, stats| {
        if tx.is_closed() {
            return stats.settle(false);
        }
        let result = guarded(solver, stats, f);
        stats.settle(true);
        let _ = tx.send(result);
    });
    (job, Ticket { rx })
}

fn batch<I, T, F>(items: Vec<I>, mut f: F) -> (Job, BatchTicket<T>)
where
    I: Send + 'static,
    T: Send + 'static,
    F: FnMut(&mut Engines, I) -> T + Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let job: Job = Box::new(move |solver, stats| {
        let mut results = Vec::with_capacity(items.len());
        for item in items {
            if tx.is_closed() {
                return stats.settle(!results.is_empty());
            }
            results.push(guarded(solver, stats, |s| f(s, item)));
        }
        stats.settle(true);
        let _ = tx.send(Ok(results));
    });
    (job, Ticket { rx })
}

/// Runs `f`, turning a panic into an error and giving the worker fresh engines, since the panic
/// may have left a table half-written.
fn guarded<T>(
    engines: &mut Engines,
    stats: &PoolStats,
    f: impl FnOnce(&mut Engines) -> T,
) -> Result<T, PoolError> {
    let result = catch_unwind(AssertUnwindSafe(|| f(engines))).map_err(|payload| {
        *engines = Engines::new();
        stats.panicked.fetch_add(1, Ordering::Relaxed);
        PoolError::Panicked(panic_message(&*payload))
    });
    stats.progress.fetch_add(1, Ordering::Relaxed);
    result
}

fn work(queue: async_channel::Receiver<Job>, stats: Arc<PoolStats>) {
    let mut engines = Engines::new();
    while let Ok(job) = queue.recv_blocking() {
        stats.busy.fetch_add(1, Ordering::Relaxed);
        job(&mut engines, &stats);
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_string()
    }
}

/// The pending result of one job. Await it, or [`wait`](Ticket::wait) for it from a plain thread.
/// Dropping it cancels the job if no worker has started it yet.
#[must_use = "dropping a ticket cancels its job"]
#[derive(Debug)]
pub struct Ticket<T> {
    rx: oneshot::Receiver<Result<T, PoolError>>,
}

impl<T> Ticket<T> {
    /// Blocks the calling thread until the job has run. Not for async code.
    pub fn wait(self) -> Result<T, PoolError> {
        self.rx.blocking_recv().unwrap_or(Err(PoolError::Closed))
    }
}

impl<T> Future for Ticket<T> {
    type Output = Result<T, PoolError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx)
            .poll(cx)
            .map(|r| r.unwrap_or(Err(PoolError::Closed)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn returns_results_to_their_submitter() {
        let pool = Pool::new(2, 4).unwrap();
        let tickets: Vec<_> = (0..20)
            .map(|i| pool.submit_blocking(move |_| i * 2).unwrap())
            .collect();
        let got: Vec<_> = tickets.into_iter().map(|t| t.wait().unwrap()).collect();
        assert_eq!(got, (0..20).map(|i| i * 2).collect::<Vec<_>>());
    }

    /// One worker, both games, one after the other on the same engines: the problem statement's
    /// sample deal, and Maze alone always showing rock (Fat brother shows scissors: she wins).
    #[test]
    fn one_worker_solves_both_games() {
        let pool = Pool::new(1, 4).unwrap();
        let deal = crate::deal::Deal::parse(
            "AS 9S 6C KS JC QH AC KH 7S QD JD KD QS TS JS 9H 6D TD AD 8S \
             QC TH KC 8D 8C 9D TC 7C 9C 7H JH 7D 8H 6S AH 6H",
        )
        .unwrap();
        let case = crate::rps::Case::new([1.0, 0.0, 0.0], &[]).unwrap();
        let both = pool
            .submit_blocking(move |e: &mut Engines| {
                (e.deals.solve(&deal).probability, e.rps.solve(&case))
            })
            .unwrap()
            .wait()
            .unwrap();
        assert!((both.0 - 0.589314).abs() < 5e-7, "{both:?}");
        assert_eq!(both.1, 1.0);
    }

    #[test]
    fn a_panicking_job_reports_an_error_and_the_pool_keeps_its_workers() {
        let pool = Pool::new(2, 4).unwrap();
        let bad = pool
            .submit_blocking(|_| -> u32 { panic!("injected fault") })
            .unwrap();
        assert_eq!(
            bad.wait(),
            Err(PoolError::Panicked("injected fault".into()))
        );
        // Both workers still answer, concurrently: two jobs that each wait for the other to start.
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let tickets: Vec<_> = (0..2)
            .map(|_| {
                let b = barrier.clone();
                pool.submit_blocking(move |_| b.wait().is_leader()).unwrap()
            })
            .collect();
        let leaders = tickets.into_iter().map(|t| t.wait());
        assert_eq!(leaders.filter(|r| *r == Ok(true)).count(), 1);
        assert_eq!(pool.stats().panicked(), 1);
    }

    /// Whoever has a job's result sees it counted: the counters are settled before the result is
    /// handed over (a test that read `done` right after its answer once saw the count lag).
    #[test]
    fn a_result_in_hand_is_already_counted() {
        let pool = Pool::new(2, 4).unwrap();
        for n in 1..=500u64 {
            let ticket = if n % 2 == 0 {
                pool.submit_blocking(|_| ()).unwrap()
            } else {
                let batch = pool
                    .submit_batch_blocking(vec![(), ()], |_, ()| ())
                    .unwrap();
                batch.wait().unwrap().into_iter().for_each(|r| r.unwrap());
                assert_eq!(pool.stats().done(), n);
                assert_eq!(pool.stats().busy(), 0);
                continue;
            };
            ticket.wait().unwrap();
            assert_eq!(pool.stats().done(), n);
            assert_eq!(pool.stats().busy(), 0);
        }
    }

    #[test]
    fn a_job_whose_ticket_is_dropped_is_skipped() {
        let pool = Pool::new(1, 8).unwrap();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let blocker = pool
            .submit_blocking(move |_| release_rx.recv_timeout(Duration::from_secs(10)).is_ok())
            .unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..5 {
            let ran = ran.clone();
            drop(pool.submit_blocking(move |_| ran.fetch_add(1, Ordering::SeqCst)));
        }
        release_tx.send(()).unwrap();
        assert_eq!(blocker.wait(), Ok(true));
        let last = pool.submit_blocking(|_| ()).unwrap();
        last.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        assert_eq!(pool.stats().skipped(), 5);
    }

    /// A full queue holds a submitter back until a worker takes a job: shown without a clock,
    /// by polling an asynchronous submit (it cannot complete while the queue is full) and then
    /// seeing it and a blocking one complete once the worker is let go.
    #[test]
    fn submitters_wait_while_the_queue_is_full() {
        use futures::FutureExt as _;
        let pool = Arc::new(Pool::new(1, 1).unwrap());
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let busy = pool
            .submit_blocking(move |_| release_rx.recv_timeout(Duration::from_secs(10)))
            .unwrap();
        let _queued = pool.submit_blocking(|_| ()).unwrap();
        // The queue (capacity 1) is full and the only worker is busy: a submit cannot complete.
        let mut waiting = Box::pin(pool.submit(|_| 1));
        assert!(
            (&mut waiting).now_or_never().is_none(),
            "submit did not wait for queue space"
        );
        assert_eq!(pool.queued(), 1);
        let p = pool.clone();
        let blocking = thread::spawn(move || p.submit_blocking(|_| 2).map(|t| t.wait()));
        release_tx.send(()).unwrap();
        assert_eq!(busy.wait(), Ok(Ok(())));
        let ticket = futures::executor::block_on(waiting).unwrap();
        assert_eq!(ticket.wait(), Ok(1));
        assert!(matches!(blocking.join().unwrap(), Ok(Ok(2))));
    }
}
