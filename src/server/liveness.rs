//! Liveness that means the workers solve. The async runtime can answer health checks while every
//! worker is stuck (a job that never ends, a thread blocked for good), so the health status of
//! `""`, which the manifests' liveness probe asks for, follows the pool instead: NOT_SERVING while
//! work waits for the pool (queued, or on a worker) and no worker has finished anything for
//! `--liveness-timeout`, and SERVING again as soon as one does. `patience_pool_stalled` says the
//! same in the metrics. The readiness status (`patience.v1.Solver`) is left alone: a restart is
//! the cure for a stuck pool, and the probe that restarts is liveness.
//!
//! "Finished anything" counts every item a worker solves (or that panics) and every job it skips,
//! not whole batches, so a slow batch is not taken for a stuck one.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

use crate::metrics::Metrics;
use crate::pool::Pool;

/// Watches `pool` until dropped (the server aborts it when the drain begins, which owns the
/// health statuses from then on).
pub async fn watch(pool: Arc<Pool>, timeout: Duration, health: HealthReporter, metrics: Metrics) {
    // Often enough that the flip comes within a quarter of the timeout, at most once a second.
    let tick = (timeout / 4).clamp(Duration::from_millis(5), Duration::from_secs(1));
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stall = Stall::new(timeout, pool.stats().progress(), Instant::now());
    loop {
        interval.tick().await;
        let waiting = pool.queued() > 0 || pool.stats().busy() > 0;
        let Some(stalled) = stall.observe(pool.stats().progress(), waiting, Instant::now()) else {
            continue;
        };
        metrics.pool_stalled(stalled);
        let status = if stalled {
            tracing::warn!(
                liveness_timeout_s = timeout.as_secs_f64(),
                queued = pool.queued(),
                busy = pool.stats().busy(),
                "work waits and no worker has finished anything for --liveness-timeout: \
                 health for \"\" is NOT_SERVING"
            );
            ServingStatus::NotServing
        } else {
            tracing::info!("a worker finished something again: health for \"\" is SERVING");
            ServingStatus::Serving
        };
        health.set_service_status("", status).await;
    }
}

/// Whether the pool is stalled, from what it is seen doing over time.
#[derive(Debug)]
struct Stall {
    timeout: Duration,
    progress: u64,
    /// Since when the pool has had work waiting and made no progress.
    since: Instant,
    stalled: bool,
}

impl Stall {
    fn new(timeout: Duration, progress: u64, now: Instant) -> Stall {
        Stall {
            timeout,
            progress,
            since: now,
            stalled: false,
        }
    }

    /// One look at the pool: its progress counter and whether work waits for it. The new state
    /// when it changes.
    fn observe(&mut self, progress: u64, waiting: bool, now: Instant) -> Option<bool> {
        if progress != self.progress || !waiting {
            self.progress = progress;
            self.since = now;
        }
        let stalled = waiting && now.duration_since(self.since) >= self.timeout;
        (stalled != self.stalled).then(|| {
            self.stalled = stalled;
            stalled
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stalled_only_while_work_waits_and_nothing_finishes_for_the_timeout() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut stall = Stall::new(Duration::from_millis(100), 0, t0);
        // Idle for ever: never stalled.
        assert_eq!(stall.observe(0, false, at(500)), None);
        // Work arrives at 500 ms; the clock starts then, not at the last progress.
        assert_eq!(stall.observe(0, true, at(550)), None);
        assert_eq!(stall.observe(0, true, at(599)), None);
        // Progressing slowly (once per 90 ms) is not stalled.
        assert_eq!(stall.observe(1, true, at(610)), None);
        assert_eq!(stall.observe(2, true, at(700)), None);
        // 100 ms with work waiting and no progress: stalled, said once.
        assert_eq!(stall.observe(2, true, at(800)), Some(true));
        assert_eq!(stall.observe(2, true, at(900)), None);
        // One item finishes: live again at once.
        assert_eq!(stall.observe(3, true, at(901)), Some(false));
        // Stuck again, then the work goes away (cancelled): live.
        assert_eq!(stall.observe(3, true, at(1001)), Some(true));
        assert_eq!(stall.observe(3, false, at(1002)), Some(false));
    }
}
