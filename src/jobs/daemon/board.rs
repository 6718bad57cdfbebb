//! The jobs a daemon runs: created, queued in order for one of `--max-jobs` places, run on the
//! daemon's own solver pool, watched, cancelled, and taken up again after a restart.
//!
//! A job's run is `patience solve INPUTS --output OUTPUT` (or `rps`) in this process: the same
//! [`JobRun`](crate::jobs::pipeline::job::JobRun) opens its output with its records (the answers appear whole: a file holds a correct
//! prefix with `NAME.resume.json` beside it, an object shows once its upload completes) and the
//! same pipeline ([`local`](crate::jobs::pipeline::local)) answers it on the shared pool, in jobs of at most [`BATCH`] items so
//! that the calls the daemon serves meanwhile wait behind little. What the daemon knows of each
//! job (its spec, state, counts) is a record in `--jobs-dir/.patience-jobs/ID.json`; a job still
//! queued or running there when the daemon starts is queued again, and its run resumes its output
//! where the last one stopped (`--resume`), ending with the same bytes as one uninterrupted run.

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::watch;

use super::spec::RECORDS;
use crate::jobs::in_full;
use crate::jobs::report::progress::Progress;
use crate::jobs::source::batches::BatchSize;
use crate::jobs::store::FileError;
use crate::jobs::store::location::Location;
use crate::jobs::store::object::StorageSettings;
use crate::jobs::store::record::{self, RecordError};
use crate::pool::Pool;

/// Items per pool job of a job's run: small, so that a unary call arriving while a job runs waits
/// for at most one short pool job a worker (the run keeps no more than that many in the pool),
/// not for 256-deal ones (docs/jobs.md has the figures).
pub const BATCH: BatchSize = BatchSize::growing(16, 64);

mod create;
mod forget;
mod kept;
mod lanes;
mod open;
mod page;
mod run;
mod work;

pub use forget::Clock;
pub use lanes::{TenantGauges, TenantShare};
pub use page::{Cursor, Page, PageError};

pub use kept::{JobState, JobView};
use kept::{Kept, now_ms};
use lanes::{ShareClock, TenantLane};

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
/// `--job-retention`, `--tenants`).
#[derive(Clone, Debug)]
pub struct BoardSettings {
    pub dir: PathBuf,
    pub max_jobs: usize,
    /// Jobs that may wait for a place, all tenants' together; a create beyond is refused
    /// (`Refusal::QueueFull`).
    pub max_queued: usize,
    /// How long an ended job is kept before it is forgotten ([`Board::sweep`]).
    pub retention: Duration,
    pub storage: StorageSettings,
    /// The tenants whose jobs are kept apart; none: one tenant, `default`, at `dir` itself.
    pub tenants: Vec<TenantShare>,
}

/// The series jobs report into: each tenant's, made when the board opens.
#[derive(Clone)]
pub struct JobMetrics {
    pub tenant: Arc<dyn Fn(&str) -> TenantGauges + Send + Sync>,
}

impl Default for JobMetrics {
    /// Series no registry reads.
    fn default() -> JobMetrics {
        JobMetrics {
            tenant: Arc::new(|_| TenantGauges::default()),
        }
    }
}

impl std::fmt::Debug for JobMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JobMetrics")
    }
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

impl JobEntry {
    fn new(kept: Kept) -> JobEntry {
        JobEntry {
            kept,
            live: None,
            stop: Arc::default(),
        }
    }

    /// Input bytes the job has left to answer, as far as is known.
    fn bytes_left(&self) -> u64 {
        match self.live.as_ref().map(Progress::counts) {
            Some(counts) => counts
                .bytes
                .unwrap_or(self.kept.bytes_total)
                .saturating_sub(counts.consumed),
            None => self.kept.bytes_total.saturating_sub(self.kept.bytes_done),
        }
    }
}

/// A job for the lanes' tests, created at `created_ms`.
#[cfg(test)]
fn test_entry(id: &str, created_ms: i64) -> JobEntry {
    JobEntry::new(Kept {
        version: kept::VERSION,
        id: id.into(),
        spec: super::spec::JobSpec {
            inputs: vec!["in".into()],
            output: "out".into(),
            game: super::spec::JobGame::Deals,
            format: "text".into(),
            precision: 6,
            shard: None,
        },
        state: JobState::Queued,
        error: String::new(),
        created_ms,
        ended_ms: 0,
        runs: 0,
        done: 0,
        bad: 0,
        bytes_done: 0,
        bytes_total: 0,
    })
}

struct Table {
    /// Each tenant's jobs, in the settings' order (a runner names its lane by place).
    lanes: Vec<TenantLane>,
    by_name: HashMap<String, usize>,
    /// Jobs waiting and running, all lanes together.
    queued: usize,
    running: usize,
    clock: ShareClock,
    /// Input bytes a second the last run that answered for a second or more went at.
    measured: Option<f64>,
    made: u64,
}

impl Table {
    fn lane(&self, tenant: &str) -> Option<&TenantLane> {
        self.by_name.get(tenant).map(|&at| &self.lanes[at])
    }

    /// A job's state changes: its lane's series follow.
    fn moved(&mut self, lane: usize, id: &str, to: JobState) {
        let lane = &mut self.lanes[lane];
        let Some(entry) = lane.jobs.get_mut(id) else {
            return;
        };
        lane.gauges.by_state[entry.kept.state.index()].dec();
        lane.gauges.by_state[to.index()].inc();
        entry.kept.state = to;
    }

    /// Job `id` of `lane` waits, at the end of its tenant's queue.
    fn enqueue(&mut self, lane: usize, id: &str) {
        let Some(entry) = self.lanes[lane].jobs.get(id) else {
            return;
        };
        let bytes = entry.bytes_left();
        self.lanes[lane].queued_bytes = self.lanes[lane].queued_bytes.saturating_add(bytes);
        self.queued += 1;
        lanes::enqueue(&mut self.lanes, &self.clock, lane, id.to_string());
    }

    /// Job `id` of `lane` no longer waits (it starts, or is cancelled).
    fn dequeued(&mut self, lane: usize, id: &str) {
        let lane = &mut self.lanes[lane];
        if let Some(entry) = lane.jobs.get(id) {
            lane.queued_bytes = lane.queued_bytes.saturating_sub(entry.bytes_left());
        }
        self.queued = self.queued.saturating_sub(1);
    }
}

struct BoardShared {
    settings: BoardSettings,
    pool: Arc<Pool>,
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
    fn table(&self) -> MutexGuard<'_, Table> {
        self.inner
            .table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Where `tenant`'s job names are placed: its folder beneath `--jobs-dir`.
    fn home_of(&self, lane: &TenantLane) -> PathBuf {
        home(&self.inner.settings.dir, &lane.share)
    }

    /// `tenant`'s job `id` as it is now.
    pub fn get(&self, tenant: &str, id: &str) -> Option<JobView> {
        self.table().lane(tenant)?.jobs.get(id).map(view)
    }

    /// Stops `tenant`'s job `id`: a queued one at once, a running one within a second (its output
    /// is left as it stands, resumable); an ended one stays as it is.
    pub fn cancel(&self, tenant: &str, id: &str) -> Option<JobView> {
        let mut table = self.table();
        let at = *table.by_name.get(tenant)?;
        let state = table.lanes[at].jobs.get(id)?.kept.state;
        match state {
            JobState::Queued => {
                table.dequeued(at, id);
                table.lanes[at].queue.retain(|queued| queued != id);
                table.moved(at, id, JobState::Cancelled);
                let home = self.home_of(&table.lanes[at]);
                if let Some(entry) = table.lanes[at].jobs.get_mut(id) {
                    entry.kept.ended_ms = now_ms();
                    if let Err(e) = self.keep(&home, &entry.kept) {
                        tracing::warn!(job_id = %id, error = %in_full(&e), "cannot keep the job's record");
                    }
                }
                self.told(&table);
            }
            JobState::Running => {
                if let Some(entry) = table.lanes[at].jobs.get(id) {
                    entry.stop.store(CANCEL, Ordering::Relaxed);
                }
            }
            _ => {}
        }
        table.lanes[at].jobs.get(id).map(view)
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
            table.queued = 0;
            for lane in &mut table.lanes {
                lane.queue.clear();
                lane.queued_bytes = 0;
                for entry in lane.jobs.values() {
                    if entry.kept.state == JobState::Running {
                        entry.stop.store(CLOSE, Ordering::Relaxed);
                    }
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

    /// Starts queued jobs while places are free, the places shared by weight between the
    /// tenants with jobs waiting (`lanes.rs`).
    fn pump(&self, mut table: MutexGuard<'_, Table>) {
        while table.running < self.inner.settings.max_jobs.max(1) {
            let table = &mut *table;
            let Some(at) = lanes::next(&mut table.lanes, &mut table.clock) else {
                break;
            };
            let Some(id) = table.lanes[at].queue.pop_front() else {
                break;
            };
            table.dequeued(at, &id);
            table.moved(at, &id, JobState::Running);
            let home = self.home_of(&table.lanes[at]);
            let Some(entry) = table.lanes[at].jobs.get_mut(&id) else {
                continue;
            };
            entry.kept.runs += 1;
            entry.stop.store(GO, Ordering::Relaxed);
            let (kept, stop) = (entry.kept.clone(), entry.stop.clone());
            table.running += 1;
            table.lanes[at].running.insert(id.clone());
            if let Err(e) = self.keep(&home, &kept) {
                tracing::warn!(job_id = %id, error = %in_full(&e), "cannot keep the job's record");
            }
            let board = self.clone();
            let runner = std::thread::Builder::new()
                .name(format!("job-{id}"))
                .spawn(move || board.run(at, home, kept, stop));
            match runner {
                Ok(runner) => self
                    .inner
                    .runners
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(runner),
                Err(e) => {
                    table.running -= 1;
                    table.lanes[at].running.remove(&id);
                    table.moved(at, &id, JobState::Failed);
                    if let Some(entry) = table.lanes[at].jobs.get_mut(&id) {
                        entry.kept.error = format!("cannot start the job's thread: {e}");
                    }
                }
            }
        }
        self.told(&table);
    }

    /// Writes a job's record, in the records' folder of `home`.
    fn keep(&self, home: &std::path::Path, kept: &Kept) -> Result<(), RecordError> {
        let at = home.join(RECORDS).join(format!("{}.json", kept.id));
        record::write(&Location::File(at), kept)
    }

    /// Tells the watchers, and the work gauges, that something changed.
    fn told(&self, table: &Table) {
        work::reckon(table);
        self.inner.changed.send_modify(|n| *n += 1);
    }
}

/// Where a tenant's job names are placed and its records kept.
fn home(dir: &std::path::Path, share: &TenantShare) -> PathBuf {
    match &share.home {
        Some(name) => dir.join(name),
        None => dir.to_path_buf(),
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
    use crate::jobs::store::FileOp;

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
