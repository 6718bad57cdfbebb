//! The jobs a daemon runs: created, queued in order for one of `--max-jobs` places, run on the
//! daemon's own solver pool, watched, cancelled, and taken up again after a restart.
//!
//! A job's run is `patience solve INPUTS --output OUTPUT` (or `rps`) in this process: the same
//! [`JobRun`] opens its output with its records (the answers appear whole: a file holds a correct
//! prefix with `NAME.resume.json` beside it, an object shows once its upload completes) and the
//! same pipeline ([`local`]) answers it on the shared pool, in jobs of at most [`BATCH`] items so
//! that the calls the daemon serves meanwhile wait behind little. What the daemon knows of each
//! job (its spec, state, counts) is a record in `--jobs-dir/.patience-jobs/ID.json`; a job still
//! queued or running there when the daemon starts is queued again, and its run resumes its output
//! where the last one stopped (`--resume`), ending with the same bytes as one uninterrupted run.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::watch;

use super::spec::{JobSpec, RECORDS, Refusal};
use crate::jobs::in_full;
use crate::jobs::report::progress::Progress;
use crate::jobs::source::batches::BatchSize;
use crate::jobs::store::beneath;
use crate::jobs::store::location::Location;
use crate::jobs::store::object::StorageSettings;
use crate::jobs::store::record::{self, RecordError};
use crate::jobs::store::{FileError, FileOp};
use crate::pool::Pool;

/// Items per pool job of a job's run: small, so that a unary call arriving while a job runs waits
/// for at most one short pool job a worker (the run keeps no more than that many in the pool),
/// not for 256-deal ones (docs/jobs.md has the figures).
pub const BATCH: BatchSize = BatchSize::growing(16, 64);

mod forget;
mod kept;
mod page;
mod run;

pub use forget::Clock;
pub use page::{Cursor, Page, PageError};

pub use kept::{JobState, JobView};
use kept::{Kept, VERSION, check_id, now_ms};

/// Why the daemon cannot keep its jobs in `--jobs-dir`: the records' folder cannot be made or
/// read.
#[derive(Debug, thiserror::Error)]
pub enum BoardError {
    /// A local file the operation failed on.
    #[error(transparent)]
    File(#[from] FileError),
    /// An entry of the folder that cannot be looked at.
    #[error(transparent)]
    Entry(io::Error),
    /// The folder cannot be made the only place the jobs touch (`beneath::confine`).
    #[error("cannot keep the jobs inside {}", .dir.display())]
    Confine {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// The daemon's settings for jobs (`serve --jobs-dir`, `--max-jobs`, `--max-queued-jobs`,
/// `--job-retention`).
#[derive(Clone, Debug)]
pub struct BoardSettings {
    pub dir: PathBuf,
    pub max_jobs: usize,
    /// Jobs that may wait for a place; a create beyond is refused (`Refusal::QueueFull`).
    pub max_queued: usize,
    /// How long an ended job is kept before it is forgotten ([`Board::sweep`]).
    pub retention: Duration,
    pub storage: StorageSettings,
}

/// The series jobs report into: jobs by state, and items answered by jobs.
#[derive(Clone, Debug, Default)]
pub struct JobMetrics {
    pub by_state: [Gauge; 5],
    pub items: Counter,
}

/// Why a running job is asked to stop.
const GO: u8 = 0;
const CANCEL: u8 = 1;
const CLOSE: u8 = 2;

struct JobEntry {
    kept: Kept,
    /// The run's progress while it runs.
    live: Option<Progress>,
    stop: Arc<AtomicU8>,
}

#[derive(Default)]
struct Table {
    jobs: HashMap<String, JobEntry>,
    /// Every job by (created_ms, id): the order lists go in, and where a page goes on from.
    order: BTreeSet<(i64, String)>,
    queue: VecDeque<String>,
    running: usize,
    made: u64,
}

struct BoardShared {
    settings: BoardSettings,
    pool: Arc<Pool>,
    metrics: JobMetrics,
    table: Mutex<Table>,
    changed: watch::Sender<u64>,
    runners: Mutex<Vec<JoinHandle<()>>>,
    /// Set once the daemon is ending: watches end, nothing starts.
    closing: std::sync::atomic::AtomicBool,
}

/// The daemon's jobs.
#[derive(Clone)]
pub struct Board {
    inner: Arc<BoardShared>,
}

impl std::fmt::Debug for Board {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Board")
            .field("dir", &self.inner.settings.dir)
            .finish_non_exhaustive()
    }
}

impl Board {
    /// The jobs of `settings.dir`: those its records leave queued or running are queued again,
    /// oldest first, and start as places free.
    pub fn open(
        settings: BoardSettings,
        pool: Arc<Pool>,
        metrics: JobMetrics,
    ) -> Result<Board, BoardError> {
        settings.storage.configure();
        // The daemon's drain stops the jobs' outputs; their keepers leave the signals alone.
        crate::jobs::sink::signals::leave_signals_alone();
        // The folder is made as the daemon's flag names it; from then on no job's file is opened
        // but beneath it, links and all.
        if let Err(source) = beneath::create_dir_all(&settings.dir) {
            return Err(BoardError::File(FileError {
                op: FileOp::Make,
                path: settings.dir.clone(),
                source,
            }));
        }
        beneath::confine(&settings.dir).map_err(|source| BoardError::Confine {
            dir: settings.dir.clone(),
            source,
        })?;
        let records = settings.dir.join(RECORDS);
        if let Err(source) = beneath::create_dir_all(&records) {
            return Err(BoardError::File(FileError {
                op: FileOp::Make,
                path: records,
                source,
            }));
        }
        let entries = match std::fs::read_dir(&records) {
            Ok(entries) => entries,
            Err(source) => {
                return Err(BoardError::File(FileError {
                    op: FileOp::Read,
                    path: records,
                    source,
                }));
            }
        };
        let mut kept: Vec<Kept> = Vec::new();
        for entry in entries {
            let path = entry.map_err(BoardError::Entry)?.path();
            if path.extension().is_some_and(|e| e == "json") {
                match record::read::<Kept>(&Location::File(path.clone())) {
                    Ok(Some(job)) => kept.push(job),
                    Ok(None) => {}
                    Err(e) => {
                        tracing::warn!(error = %in_full(&e), "a job record is left out")
                    }
                }
            }
        }
        kept.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
        let mut table = Table::default();
        for job in kept {
            if !job.state.ended() {
                table.queue.push_back(job.id.clone());
            }
            table.order.insert((job.created_ms, job.id.clone()));
            let mut job = job;
            if !job.state.ended() {
                job.state = JobState::Queued;
            }
            table.jobs.insert(
                job.id.clone(),
                JobEntry {
                    kept: job,
                    live: None,
                    stop: Arc::default(),
                },
            );
        }
        let board = Board {
            inner: Arc::new(BoardShared {
                settings,
                pool,
                metrics,
                table: Mutex::new(table),
                changed: watch::Sender::new(0),
                runners: Mutex::default(),
                closing: std::sync::atomic::AtomicBool::new(false),
            }),
        };
        let resumed = board.table().queue.len();
        if resumed > 0 {
            tracing::info!(
                jobs = resumed,
                "taking up the jobs a last run left unfinished"
            );
        }
        board.sweep(now_ms());
        board.pump(board.table());
        Ok(board)
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.inner
            .table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Creates job `id` (one made up when `None`) of `spec`, queued; with an `id` known already
    /// and the same spec, that job as it is now.
    pub fn create(&self, id: Option<&str>, spec: JobSpec) -> Result<JobView, Refusal> {
        if let Some(id) = id {
            check_id(id)?;
            let mut table = self.table();
            let queued = table.queue.len();
            if let Some(entry) = table.jobs.get_mut(id) {
                if entry.kept.spec != spec {
                    return Err(Refusal::Unmet {
                        field: "job_id".into(),
                        message: format!("job {id} exists, with another spec"),
                    });
                }
                // A job cancelled or failed goes on from its output as it stands, if the queue
                // has room for it.
                if matches!(entry.kept.state, JobState::Cancelled | JobState::Failed) {
                    self.room(queued)?;
                    entry.kept.state = JobState::Queued;
                    entry.kept.error.clear();
                    entry.kept.ended_ms = 0;
                    let kept = entry.kept.clone();
                    if let Err(e) = self.keep(&kept) {
                        tracing::warn!(job_id = %id, error = %in_full(&e), "cannot keep the job's record");
                    }
                    table.queue.push_back(id.to_string());
                    let again = view(&table.jobs[id]);
                    self.pump(table);
                    return Ok(again);
                }
                return Ok(view(entry));
            }
        }
        // Checked before anything is kept: a refused spec leaves no trace.
        spec.place(&self.inner.settings.dir)?;
        let mut table = self.table();
        self.room(table.queue.len())?;
        let id = match id {
            Some(id) => id.to_string(),
            None => loop {
                table.made += 1;
                let id = format!("job-{}-{}", now_ms(), table.made);
                if !table.jobs.contains_key(&id) {
                    break id;
                }
            },
        };
        if let Some(entry) = table.jobs.get(&id) {
            // Created by a call racing this one.
            return Ok(view(entry));
        }
        let kept = Kept {
            version: VERSION,
            id: id.clone(),
            spec,
            state: JobState::Queued,
            error: String::new(),
            created_ms: now_ms(),
            ended_ms: 0,
            runs: 0,
            done: 0,
            bad: 0,
            bytes_done: 0,
        };
        self.keep(&kept).map_err(|e| Refusal::Unmet {
            field: "job_id".into(),
            message: format!("cannot keep the job's record: {}", in_full(&e)),
        })?;
        table.order.insert((kept.created_ms, id.clone()));
        table.queue.push_back(id.clone());
        table.jobs.insert(
            id.clone(),
            JobEntry {
                kept,
                live: None,
                stop: Arc::default(),
            },
        );
        tracing::info!(job_id = %id, "job created");
        let made = view(&table.jobs[&id]);
        self.pump(table);
        Ok(made)
    }

    /// Whether one more job may wait, with `queued` waiting already.
    fn room(&self, queued: usize) -> Result<(), Refusal> {
        let limit = self.inner.settings.max_queued;
        if queued >= limit {
            return Err(Refusal::QueueFull { limit });
        }
        Ok(())
    }

    /// Job `id` as it is now.
    pub fn get(&self, id: &str) -> Option<JobView> {
        self.table().jobs.get(id).map(view)
    }

    /// Stops job `id`: a queued one at once, a running one within a second (its output is left
    /// as it stands, resumable); an ended one stays as it is.
    pub fn cancel(&self, id: &str) -> Option<JobView> {
        let mut table = self.table();
        let entry = table.jobs.get_mut(id)?;
        match entry.kept.state {
            JobState::Queued => {
                entry.kept.state = JobState::Cancelled;
                entry.kept.ended_ms = now_ms();
                let kept = entry.kept.clone();
                table.queue.retain(|queued| queued != id);
                if let Err(e) = self.keep(&kept) {
                    tracing::warn!(job_id = %id, error = %in_full(&e), "cannot keep the job's record");
                }
                self.told(&table);
            }
            JobState::Running => entry.stop.store(CANCEL, Ordering::Relaxed),
            _ => {}
        }
        table.jobs.get(id).map(view)
    }

    /// Whether the daemon is ending (watches end then).
    pub fn closing(&self) -> bool {
        self.inner.closing.load(Ordering::Relaxed)
    }

    /// Told of every change of any job (a new value each time).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }

    /// Stops the running jobs for the daemon's end, their outputs resumable and their records
    /// left running (so the next start takes them up), and waits up to `within` for them.
    pub fn close(&self, within: Duration) {
        self.inner.closing.store(true, Ordering::Relaxed);
        {
            let mut table = self.table();
            table.queue.clear();
            for entry in table.jobs.values() {
                if entry.kept.state == JobState::Running {
                    entry.stop.store(CLOSE, Ordering::Relaxed);
                }
            }
            self.told(&table);
        }
        let runners = std::mem::take(
            &mut *self
                .inner
                .runners
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let deadline = std::time::Instant::now() + within;
        for runner in runners {
            while !runner.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// Starts queued jobs while places are free.
    fn pump(&self, mut table: MutexGuard<'_, Table>) {
        while table.running < self.inner.settings.max_jobs.max(1) {
            let Some(id) = table.queue.pop_front() else {
                break;
            };
            let Some(entry) = table.jobs.get_mut(&id) else {
                continue;
            };
            entry.kept.state = JobState::Running;
            entry.kept.runs += 1;
            entry.stop.store(GO, Ordering::Relaxed);
            let (kept, stop) = (entry.kept.clone(), entry.stop.clone());
            table.running += 1;
            if let Err(e) = self.keep(&kept) {
                tracing::warn!(job_id = %id, error = %in_full(&e), "cannot keep the job's record");
            }
            let board = self.clone();
            let runner = std::thread::Builder::new()
                .name(format!("job-{id}"))
                .spawn(move || board.run(kept, stop));
            match runner {
                Ok(runner) => self
                    .inner
                    .runners
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(runner),
                Err(e) => {
                    table.running -= 1;
                    if let Some(entry) = table.jobs.get_mut(&id) {
                        entry.kept.state = JobState::Failed;
                        entry.kept.error = format!("cannot start the job's thread: {e}");
                    }
                }
            }
        }
        self.told(&table);
    }

    /// Writes a job's record.
    fn keep(&self, kept: &Kept) -> Result<(), RecordError> {
        let at = self
            .inner
            .settings
            .dir
            .join(RECORDS)
            .join(format!("{}.json", kept.id));
        record::write(&Location::File(at), kept)
    }

    /// Tells the watchers, and the metrics, that something changed.
    fn told(&self, table: &Table) {
        for (gauge, state) in self.inner.metrics.by_state.iter().zip(JobState::ALL) {
            let n = table
                .jobs
                .values()
                .filter(|entry| entry.kept.state == state)
                .count();
            gauge.set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        self.inner.changed.send_modify(|n| *n += 1);
    }
}

fn view(entry: &JobEntry) -> JobView {
    let kept = &entry.kept;
    let counts = entry.live.as_ref().map(Progress::counts);
    let rate = counts.as_ref().map_or(0.0, |c| c.rate(c.answering));
    JobView {
        id: kept.id.clone(),
        spec: kept.spec.clone(),
        state: kept.state,
        items_done: counts.as_ref().map_or(kept.done, |c| c.all()),
        items_bad: counts.as_ref().map_or(kept.bad, |c| c.bad + c.skipped_bad),
        bytes_done: counts.as_ref().map_or(kept.bytes_done, |c| c.consumed),
        bytes_total: counts.as_ref().and_then(|c| c.bytes),
        items_per_second: rate,
        eta_seconds: counts
            .as_ref()
            .and_then(|c| c.left())
            .map(|left| left.as_secs_f64()),
        error: kept.error.clone(),
        created_ms: kept.created_ms,
        ended_ms: kept.ended_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The jobs' folder's failures in the words they have always had (written out here by hand),
    /// and a job's record that cannot be kept said with its cause, as the daemon's log and a
    /// refused creation say it.
    #[test]
    fn board_errors_say_what_they_always_said() {
        let denied = || io::Error::from(io::ErrorKind::PermissionDenied);
        let make = BoardError::File(FileError {
            op: FileOp::Make,
            path: "/jobs/.patience-jobs".into(),
            source: denied(),
        });
        assert_eq!(
            in_full(&make),
            "cannot make /jobs/.patience-jobs: permission denied"
        );
        let read = BoardError::File(FileError {
            op: FileOp::Read,
            path: "/jobs/.patience-jobs".into(),
            source: denied(),
        });
        assert_eq!(
            in_full(&read),
            "cannot read /jobs/.patience-jobs: permission denied"
        );
        let unkept = RecordError::Write {
            at: Location::File("/jobs/.patience-jobs/job-1.json".into()),
            source: denied(),
        };
        assert_eq!(
            in_full(&unkept),
            "cannot write /jobs/.patience-jobs/job-1.json: permission denied"
        );
    }
}
