//! Ended jobs leave: `DeleteJob` forgets one at once, and the sweep forgets those ended more than
//! `--job-retention` ago. Forgetting a job removes its record (so it is not loaded at the next
//! start) and its place in the lists; its output stays where the job wrote it.

use std::time::Duration;

use super::lanes::TenantLane;
use super::{Board, JobView, RECORDS, home, view};
use crate::jobs::daemon::spec::Refusal;
use crate::jobs::in_full;

/// The wall clock in Unix milliseconds, moved on by tokio's clock: an ended job's age is wall
/// time (its `ended_ms` survives restarts), and a test pausing tokio's time moves this one too.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    wall_ms: i64,
    at: tokio::time::Instant,
}

impl Clock {
    /// The wall clock from now on.
    pub fn start() -> Clock {
        Clock {
            wall_ms: super::now_ms(),
            at: tokio::time::Instant::now(),
        }
    }

    pub fn now_ms(&self) -> i64 {
        let moved = i64::try_from(self.at.elapsed().as_millis()).unwrap_or(i64::MAX);
        self.wall_ms.saturating_add(moved)
    }
}

/// Takes ended job `id` off its lane and out of its series.
fn forget(lane: &mut TenantLane, id: &str) {
    if let Some(entry) = lane.jobs.remove(id) {
        lane.gauges.by_state[entry.kept.state.index()].dec();
        lane.order.remove(&(entry.kept.created_ms, id.to_string()));
    }
}

impl Board {
    /// Forgets `tenant`'s ended job `id`: its record goes, its output stays. `Ok(None)`: no such
    /// job; a queued or running one is refused (cancel it first).
    pub fn delete(&self, tenant: &str, id: &str) -> Result<Option<JobView>, Refusal> {
        let mut table = self.table();
        let Some(&at) = table.by_name.get(tenant) else {
            return Ok(None);
        };
        let lane = &mut table.lanes[at];
        let Some(entry) = lane.jobs.get(id) else {
            return Ok(None);
        };
        if !entry.kept.state.ended() {
            return Err(Refusal::Unmet {
                field: "job_id".into(),
                message: format!(
                    "job {id} is {}: cancel it first (CancelJob, POST /v1/jobs/{id}:cancel)",
                    entry.kept.state.name()
                ),
            });
        }
        let gone = view(entry);
        self.unrecord(&home(&self.inner.settings.dir, &lane.share), id);
        forget(lane, id);
        self.told(&table);
        tracing::info!(job_id = %id, tenant, "job deleted");
        Ok(Some(gone))
    }

    /// Forgets every job that ended `retention` or more before `now_ms`, every tenant's; how
    /// many went.
    pub fn sweep(&self, now_ms: i64) -> usize {
        let retention =
            i64::try_from(self.inner.settings.retention.as_millis()).unwrap_or(i64::MAX);
        let mut table = self.table();
        let mut gone = 0;
        for lane in &mut table.lanes {
            let old: Vec<String> = lane
                .jobs
                .values()
                .filter(|e| {
                    e.kept.state.ended() && e.kept.ended_ms.saturating_add(retention) <= now_ms
                })
                .map(|e| e.kept.id.clone())
                .collect();
            let at = home(&self.inner.settings.dir, &lane.share);
            for id in &old {
                self.unrecord(&at, id);
                forget(lane, id);
            }
            gone += old.len();
        }
        if gone > 0 {
            self.told(&table);
            tracing::info!(jobs = gone, "ended jobs forgotten after --job-retention");
        }
        gone
    }

    /// Sweeps now and then every `every` (a tenth of the retention, at most a minute) for as
    /// long as the board lives; the daemon spawns it.
    pub async fn sweep_every(self, clock: Clock) {
        let every = (self.inner.settings.retention / 10)
            .clamp(Duration::from_millis(100), Duration::from_secs(60));
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while !self.closing() {
            ticks.tick().await;
            let board = self.clone();
            let now = clock.now_ms();
            // The records' removal is file work: off the runtime's threads.
            if tokio::task::spawn_blocking(move || board.sweep(now))
                .await
                .is_err()
            {
                return;
            }
        }
    }

    /// Removes job `id`'s record from `home`'s records; a record already gone is fine.
    fn unrecord(&self, home: &std::path::Path, id: &str) {
        let at = home.join(RECORDS).join(format!("{id}.json"));
        match std::fs::remove_file(&at) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(job_id = %id, error = %in_full(&e), "cannot remove the job's record")
            }
        }
    }
}
