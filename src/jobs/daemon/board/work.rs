//! The work the jobs have left, for an autoscaler: input bytes waiting and running, and the
//! seconds of this daemon's solving they come to, per tenant.
//!
//! Jobs count what differs between a queue of ten deals and one of a billion, their input bytes:
//! a waiting job's are its inputs' sizes when it was created, less what an earlier run answered;
//! a running job's are its input's bytes not yet read. Seconds are bytes over the rate, in input
//! bytes a second, that the daemon's jobs ran at: the running jobs' own rates while any has run a
//! second, else the last run's that lasted a second (inputs of known size only), else [`ASSUMED_RATE`]. A job waiting or
//! running counts at least one second (a FIFO's size is not known, nor that of a job an older
//! daemon recorded), so the sum is never zero while a job waits or runs.

use std::time::Duration;

use super::{Board, Table};
use crate::jobs::report::words::Counts;

/// Input bytes a second a daemon's jobs are taken to run at before one has been measured:
/// about 37,000 deals a second of 108 bytes (9 piles of 4 cards, 3 bytes a card), the order of
/// one 2-core daemon (docs/jobs.md has the figures).
pub const ASSUMED_RATE: f64 = 4_000_000.0;

/// How often the gauges are reckoned again while jobs run (a change reckons them at once).
pub const RECKON_EVERY: Duration = Duration::from_secs(5);

/// A run's rate in input bytes a second, once it has answered for a second; none for an input
/// of unknown size (a FIFO), whose rate is its writer's rather than the solving's.
pub(super) fn rate_of(counts: &Counts) -> Option<f64> {
    let seconds = counts.answering.as_secs_f64();
    let known = counts.bytes.is_some() && counts.consumed > 0;
    (seconds >= 1.0 && known).then(|| counts.consumed as f64 / seconds)
}

/// Sets every tenant's work gauges from the table as it is.
pub(super) fn reckon(table: &Table) {
    let live: Vec<f64> = table
        .lanes
        .iter()
        .flat_map(|lane| lane.running.iter().filter_map(|id| lane.jobs.get(id)))
        .filter_map(|entry| entry.live.as_ref().and_then(|p| rate_of(&p.counts())))
        .collect();
    let rate = match live.len() {
        0 => table.measured.unwrap_or(ASSUMED_RATE),
        n => live.iter().sum::<f64>() / n as f64,
    };
    for lane in &table.lanes {
        let mut running_bytes = 0u64;
        let mut seconds = (lane.queued_bytes as f64 / rate).max(lane.queue.len() as f64);
        for entry in lane.running.iter().filter_map(|id| lane.jobs.get(id)) {
            let left = entry.bytes_left();
            running_bytes = running_bytes.saturating_add(left);
            seconds += (left as f64 / rate).max(1.0);
        }
        let [queued, running] = &lane.gauges.work_bytes;
        queued.set(i64::try_from(lane.queued_bytes).unwrap_or(i64::MAX));
        running.set(i64::try_from(running_bytes).unwrap_or(i64::MAX));
        lane.gauges.work_seconds.set(seconds);
    }
}

impl Board {
    /// Reckons the work gauges every `RECKON_EVERY` for as long as the board lives, so that
    /// running jobs' progress shows between changes; the daemon spawns it.
    pub async fn reckon_every(self) {
        let mut ticks = tokio::time::interval(RECKON_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while !self.closing() {
            ticks.tick().await;
            reckon(&self.table());
        }
    }
}
