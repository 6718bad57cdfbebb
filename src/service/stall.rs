//! Noticing a client that stopped reading. A streaming call's finished responses wait in a
//! channel until tonic takes them, which it does only as the client's HTTP/2 window has room; each
//! holds its deals' share of `--max-deals-in-flight` meanwhile. A client that sends a long stream
//! and never reads would hold that share for good, and a few such clients the whole budget. Such
//! a client cannot be told anything (a status would wait behind the responses), so the call closes
//! its connection, which drops them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::{Interval, MissedTickBehavior};

use super::ConnectionCloser;

/// One call's watch on its client's reading.
pub(super) struct StallWatch {
    /// Responses tonic has taken from the channel (counted on its side), and how many the call
    /// sent into it.
    taken: Arc<AtomicU64>,
    sent: u64,
    closer: ConnectionCloser,
    /// Every half `--stall-timeout`.
    ticks: Interval,
    /// `taken` at the last tick, whether responses were waiting then, and for how many ticks in a
    /// row responses have waited with none taken.
    last_taken: u64,
    was_waiting: bool,
    stalled_ticks: u32,
}

impl StallWatch {
    /// A watch with this timeout, if there is one and a connection to close.
    pub fn new(
        timeout: Option<Duration>,
        taken: Arc<AtomicU64>,
        closer: Option<ConnectionCloser>,
    ) -> Option<StallWatch> {
        let (timeout, closer) = (timeout?, closer?);
        let period = (timeout / 2).max(Duration::from_millis(1));
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Some(StallWatch {
            taken,
            sent: 0,
            closer,
            ticks,
            last_taken: 0,
            was_waiting: false,
            stalled_ticks: 0,
        })
    }

    /// One more response sent into the channel.
    pub fn sent(&mut self) {
        self.sent += 1;
    }

    /// Waits for the next tick, then says whether the client has stalled: responses have waited,
    /// none taken, through two whole ticks (at least `--stall-timeout`, at most one and a half
    /// of it). Then the connection is closed already.
    pub async fn stalled(&mut self) -> bool {
        self.ticks.tick().await;
        let taken = self.taken.load(Ordering::Relaxed);
        let waiting = taken < self.sent;
        if waiting && self.was_waiting && taken == self.last_taken {
            self.stalled_ticks += 1;
        } else {
            self.stalled_ticks = 0;
        }
        (self.last_taken, self.was_waiting) = (taken, waiting);
        if self.stalled_ticks < 2 {
            return false;
        }
        self.closer.0.cancel();
        true
    }
}

/// Waits for `watch` to see a stall; never without one.
pub(super) async fn stalled(watch: &mut Option<StallWatch>) {
    match watch {
        Some(watch) => while !watch.stalled().await {},
        None => std::future::pending().await,
    }
}
