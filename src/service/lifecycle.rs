//! The server's life as one value that only moves forward, [`Phase`], watched by every call and
//! connection: a call reads it on admission and waits for it to change while it streams; a
//! connection waits for it to send GOAWAY or to close.

use tokio::sync::watch;

/// Where the server is in its life. Each phase includes the ones before it: a server that is
/// aborting calls is also draining.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Taking and answering calls.
    Serving,
    /// Shutdown has begun: health says NOT_SERVING, connections get GOAWAY, new calls are refused
    /// with `UNAVAILABLE`; calls in flight go on (a client still sending is cut after
    /// `--drain-cut-after`, when set).
    Draining,
    /// The drain timeout passed: every call still in flight ends with `UNAVAILABLE` after the
    /// responses it has finished.
    Aborting,
    /// Every connection is closed at once, whatever it is doing.
    Closed,
}

/// The phase as calls and connections see it. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Lifecycle(watch::Receiver<Phase>);

/// The server's side of [`Lifecycle`]: the only one that moves the phase.
#[derive(Debug)]
pub struct LifecycleControl(watch::Sender<Phase>);

impl Lifecycle {
    /// A lifecycle in [`Phase::Serving`], and its control.
    pub fn new() -> (Lifecycle, LifecycleControl) {
        let (tx, rx) = watch::channel(Phase::Serving);
        (Lifecycle(rx), LifecycleControl(tx))
    }

    /// The phase now.
    pub fn phase(&self) -> Phase {
        *self.0.borrow()
    }

    /// Completes once the server has reached `phase` (at once if it has). Never completes if the
    /// control is dropped first: a server that is gone moves no call forward.
    pub async fn reached(&self, phase: Phase) {
        // A receiver of its own, so that several waits can be pending on one lifecycle.
        let mut rx = self.0.clone();
        if rx.wait_for(|&now| now >= phase).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl LifecycleControl {
    /// Moves the server to `phase`; never backwards.
    pub fn advance(&self, phase: Phase) {
        self.0.send_if_modified(|now| {
            let later = phase > *now;
            if later {
                *now = phase;
            }
            later
        });
    }

    /// Another view of the phase, for a call or a connection.
    pub fn subscribe(&self) -> Lifecycle {
        Lifecycle(self.0.subscribe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_phase_only_moves_forward_and_waiters_see_the_later_phases() {
        let (lifecycle, control) = Lifecycle::new();
        assert_eq!(lifecycle.phase(), Phase::Serving);
        control.advance(Phase::Aborting);
        // Waiting for an earlier phase returns at once: aborting includes draining.
        lifecycle.reached(Phase::Draining).await;
        control.advance(Phase::Draining);
        assert_eq!(lifecycle.phase(), Phase::Aborting);
        let other = control.subscribe();
        let closed = tokio::spawn(async move { other.reached(Phase::Closed).await });
        tokio::task::yield_now().await;
        assert!(!closed.is_finished());
        control.advance(Phase::Closed);
        closed.await.unwrap();
    }
}
