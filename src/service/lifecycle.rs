//! The switches the server flips during shutdown and every call obeys: first stop taking new
//! calls, then end the ones still running. Watch channels, so a call can both read the current
//! state (on admission) and wait for a change (while it streams).

use tokio::sync::watch;

/// Server-wide switches the service obeys, flipped by the server during shutdown.
#[derive(Clone, Debug)]
pub struct Lifecycle {
    pub(super) draining: watch::Receiver<bool>,
    pub(super) abort: watch::Receiver<bool>,
}

/// The server's side of [`Lifecycle`].
#[derive(Debug)]
pub struct LifecycleControl {
    draining: watch::Sender<bool>,
    abort: watch::Sender<bool>,
}

impl Lifecycle {
    pub fn new() -> (Lifecycle, LifecycleControl) {
        let (draining_tx, draining_rx) = watch::channel(false);
        let (abort_tx, abort_rx) = watch::channel(false);
        (
            Lifecycle {
                draining: draining_rx,
                abort: abort_rx,
            },
            LifecycleControl {
                draining: draining_tx,
                abort: abort_tx,
            },
        )
    }

    /// Whether shutdown has begun, so new calls are to be refused.
    pub(super) fn is_draining(&self) -> bool {
        *self.draining.borrow()
    }
}

impl LifecycleControl {
    /// From now on new calls are refused with `UNAVAILABLE`. Calls in flight go on to their end,
    /// whether or not their client is still sending (unless [`super::Limits::drain_cut_after`]
    /// says otherwise), until [`LifecycleControl::abort_calls`].
    pub fn start_draining(&self) {
        let _ = self.draining.send(true);
    }

    /// Ends every call still in flight with `UNAVAILABLE` after the responses it has finished.
    pub fn abort_calls(&self) {
        let _ = self.abort.send(true);
    }
}
