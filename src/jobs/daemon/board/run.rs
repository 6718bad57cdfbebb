//! One run of a job, on a thread of its own: `solve` or `rps` with `--output` in this process, on
//! the daemon's pool, then the job's end recorded.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use super::kept::{JobState, Kept, now_ms};
use super::{BATCH, Board, CANCEL, CLOSE, GO, work};
use crate::deal::DealReader;
use crate::jobs::daemon::spec::{JobGame, Placed, Refusal};
use crate::jobs::in_full;
use crate::jobs::outcome::ExitStatus;
use crate::jobs::parts::part::PartError;
use crate::jobs::pipeline::job::{JobError, JobRun};
use crate::jobs::pipeline::local::{self, LocalError};
use crate::jobs::pipeline::plan::JobPlan;
use crate::jobs::report::progress::{Progress, ProgressMode};
use crate::jobs::source::input::Input;
use crate::jobs::source::input::Reader;
use crate::jobs::source::parquet_in::InputFormat;
use crate::rps::CaseReader;

/// Why a job's run failed, as its record keeps it: its spec no longer fits the daemon, its output
/// could not be opened, the run stopped, or its part could not be recorded complete.
#[derive(Debug, thiserror::Error)]
enum JobFailure {
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// Boxed: opening an output fails in the most ways, some naming several places, which would
    /// make every result of a run as large.
    #[error(transparent)]
    Start(Box<JobError>),
    #[error(transparent)]
    Run(#[from] LocalError),
    #[error(transparent)]
    Part(#[from] PartError),
}

impl From<JobError> for JobFailure {
    fn from(e: JobError) -> JobFailure {
        JobFailure::Start(Box::new(e))
    }
}

impl Board {
    /// One run of lane `at`'s job, on its own thread; its names are placed in `home`.
    pub(super) fn run(&self, at: usize, home: PathBuf, kept: Kept, stop: Arc<AtomicU8>) {
        let span = tracing::info_span!("job", job_id = %kept.id, runs = kept.runs);
        let _entered = span.enter();
        tracing::info!(inputs = ?kept.spec.inputs, output = %kept.spec.output, "job started");
        let ended = self.answer(at, &home, &kept, &stop);
        let why = stop.load(Ordering::Relaxed);
        let mut table = self.table();
        table.running -= 1;
        table.lanes[at].running.remove(&kept.id);
        let Some(entry) = table.lanes[at].jobs.get_mut(&kept.id) else {
            return;
        };
        let live = entry.live.take();
        let trouble = live.as_ref().and_then(Progress::trouble);
        let last = live.map(|progress| progress.counts());
        // Items the output held already, which this run read again without answering them.
        let resumed = last.as_ref().map_or(0, |counts| counts.skipped);
        if let Some(counts) = &last {
            entry.kept.done = counts.all();
            entry.kept.bad = counts.bad + counts.skipped_bad;
            entry.kept.bytes_done = counts.consumed;
        }
        let measured = last.as_ref().and_then(work::rate_of);
        let (state, error) = match (ended, why) {
            // The daemon is ending: the record stays running, for the next start.
            (Err(_), CLOSE) => {
                tracing::info!(job_id = %kept.id, "job stopped by the daemon's end; it resumes at the next start");
                self.told(&table);
                return;
            }
            (Err(_), CANCEL) => (JobState::Cancelled, String::new()),
            (Err(e), _) => (JobState::Failed, in_full(&e)),
            (Ok(ExitStatus::Ok | ExitStatus::BadInput), _) => (JobState::Succeeded, String::new()),
            // The input's own words (or the store's), as `solve` says them on standard error.
            (Ok(status), _) => (
                JobState::Failed,
                trouble.unwrap_or_else(|| {
                    format!(
                        "an input could not be read through (exit status {})",
                        status as u8
                    )
                }),
            ),
        };
        entry.kept.error = error;
        entry.kept.ended_ms = now_ms();
        table.moved(at, &kept.id, state);
        if measured.is_some() {
            table.measured = measured;
        }
        let Some(entry) = table.lanes[at].jobs.get(&kept.id) else {
            return;
        };
        let kept = entry.kept.clone();
        tracing::info!(
            job_id = %kept.id,
            state = state.name(),
            items = kept.done,
            bad = kept.bad,
            resumed,
            error = %kept.error,
            "job ended"
        );
        if let Err(e) = self.keep(&home, &kept) {
            tracing::warn!(job_id = %kept.id, error = %in_full(&e), "cannot keep the job's record");
        }
        self.pump(table);
    }

    /// The job's answers, into its output.
    fn answer(
        &self,
        at: usize,
        home: &Path,
        kept: &Kept,
        stop: &AtomicU8,
    ) -> Result<ExitStatus, JobFailure> {
        let Placed {
            inputs,
            output,
            shard,
            render,
            unit,
            ..
        } = kept.spec.place(home)?;
        let dir = home;
        let plan = JobPlan {
            // Named relative to the jobs folder, as the spec names them, so that the folder can
            // be mounted elsewhere and the job resumes.
            inputs: inputs
                .into_iter()
                .map(|at| Input::at(at).named_within(dir))
                .collect(),
            output: Some(output),
            // A first run writes the output anew, as `--output` does; a later one goes on.
            resume: kept.runs > 1,
            progress: ProgressMode::Off,
            summary: false,
            shard,
            // Each input by its first bytes: a job reads text and Parquet alike.
            input_format: InputFormat::Auto,
            render,
            storage: self.inner.settings.storage,
            progress_every: Duration::from_secs(10),
        };
        let items = self.table().lanes[at].gauges.items.clone();
        let stopped = || {
            items.inc();
            stop.load(Ordering::Relaxed) != GO
        };
        let pool = &self.inner.pool;
        match kept.spec.game {
            JobGame::Deals => {
                let (job, sink) = JobRun::start::<DealReader<Reader>>(&plan, unit)?;
                self.running(at, &kept.id, &job.progress);
                let share = local::PoolShare {
                    batch: BATCH,
                    at_once: Some(pool.workers()),
                };
                let status = local::deals(&job, sink, render, pool, share, &stopped);
                job.end(status.map_err(JobFailure::from), None)
            }
            JobGame::Rps => {
                let (job, sink) = JobRun::start::<CaseReader<Reader>>(&plan, unit)?;
                self.running(at, &kept.id, &job.progress);
                let status = local::cases(&job, sink, render, pool, Some(pool.workers()), &stopped);
                job.end(status.map_err(JobFailure::from), None)
            }
        }
    }

    /// Job `id`'s run has its output open: its progress is what views show from now.
    fn running(&self, at: usize, id: &str, progress: &Progress) {
        let mut table = self.table();
        if let Some(entry) = table.lanes[at].jobs.get_mut(id) {
            entry.live = Some(progress.clone());
        }
        self.told(&table);
    }
}
