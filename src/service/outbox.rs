//! A streaming call's way out to tonic, and noticing a client that stopped reading.
//!
//! The call's task puts finished responses, then at most one final status, into a channel; tonic
//! takes them as the client's HTTP/2 window has room. Each response holds its items' share of
//! the budgets meanwhile ([`Held`]), given back when tonic takes it.
//!
//! The channel is the only state the call shares with tonic, and it is shared for one reason: a
//! client that sends a long stream and never reads would hold its share for good, and a few such
//! clients the whole server's. tonic does not poll a stream whose client has no window, so the
//! call itself must be able to drop the responses still waiting ([`Outbox::cut`]), which gives
//! back what they hold, and leave a status in their place for when the client reads again. Its
//! connection and the other calls on it are untouched.

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use tokio::sync::mpsc;
use tokio::time::{Interval, MissedTickBehavior};
use tonic::Status;

use super::admission::Held;

/// What the call sends: a response with the budget its items hold, or the status it ends with.
type Item<R> = Result<(R, Held), Status>;

/// The channel's receiving end and what tonic has taken from it, under one lock that tonic takes
/// once per message and the call once per stall check.
struct Inner<R> {
    rx: mpsc::Receiver<Item<R>>,
    /// Messages taken (responses and a final status).
    taken: u64,
    /// Results in the responses taken: the index a client that is cut may resume from.
    taken_results: u64,
    /// Set by a cut: sent once the channel, closed and emptied by the cut, ends.
    last: Option<Status>,
    /// The call's request stream, once the call is done with it: dropping it resets the HTTP/2
    /// stream's sending half, which must not overtake the last response and status (a client
    /// still sending would see the reset instead of why the call ended).
    parked: Option<Box<dyn Send>>,
}

/// The lock, whether or not a holder panicked: every state it guards is valid at every step.
fn lock<R>(shared: &Mutex<Inner<R>>) -> MutexGuard<'_, Inner<R>> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// The call's side.
pub(super) struct Outbox<R> {
    tx: mpsc::Sender<Item<R>>,
    /// Weak, so that the channel closes (and the call sees it) when tonic drops the stream.
    shared: Weak<Mutex<Inner<R>>>,
    /// Messages sent into the channel.
    sent: u64,
}

/// tonic's side: the stream of the call's messages, converted to the wire type.
pub(super) struct Responses<R, T> {
    shared: Arc<Mutex<Inner<R>>>,
    results: fn(&R) -> usize,
    convert: fn(R) -> T,
    done: bool,
}

/// A channel for a call that holds at most `max_in_flight` responses at once (each holds at least
/// one of its call's `max_in_flight` permits): one more place is kept for the final status, so
/// that ending a call never waits for a client to read. `results` counts a response's results;
/// `convert` makes it the message tonic sends.
pub(super) fn channel<R, T>(
    max_in_flight: usize,
    results: fn(&R) -> usize,
    convert: fn(R) -> T,
) -> (Outbox<R>, Responses<R, T>) {
    let (tx, rx) = mpsc::channel(max_in_flight.max(1) + 1);
    let shared = Arc::new(Mutex::new(Inner {
        rx,
        taken: 0,
        taken_results: 0,
        last: None,
        parked: None,
    }));
    let outbox = Outbox {
        tx,
        shared: Arc::downgrade(&shared),
        sent: 0,
    };
    let responses = Responses {
        shared,
        results,
        convert,
        done: false,
    };
    (outbox, responses)
}

/// tonic dropped the response stream: the client is gone.
#[derive(Debug)]
pub(super) struct Gone;

impl<R> Outbox<R> {
    /// Hands a response to tonic; it gives back `held` when it takes it.
    pub async fn send(&mut self, response: R, held: Held) -> Result<(), Gone> {
        self.tx.send(Ok((response, held))).await.map_err(|_| Gone)?;
        self.sent += 1;
        Ok(())
    }

    /// Queues the status the call ends with, behind its responses. Never waits: the channel
    /// keeps a place for it. Nothing to do once tonic has dropped the stream, or after a cut
    /// (which left its own status).
    pub fn finish(&mut self, status: Status) {
        if self.tx.try_send(Err(status)).is_ok() {
            self.sent += 1;
        }
    }

    /// Completes when tonic drops the stream: the client cancelled, or its connection is gone.
    pub async fn closed(&self) {
        self.tx.closed().await;
    }

    /// Completes when tonic has taken every message sent (or dropped the stream).
    pub async fn all_taken(&self) {
        if let Ok(places) = self.tx.reserve_many(self.tx.max_capacity()).await {
            drop(places);
        }
    }

    /// How many messages tonic has taken, and how many results they held.
    fn taken(&self) -> (u64, u64) {
        self.shared.upgrade().map_or((self.sent, 0), |shared| {
            let inner = lock(&shared);
            (inner.taken, inner.taken_results)
        })
    }

    /// Keeps `requests` (the call's request stream) until tonic has sent the last message and
    /// dropped the response stream; dropped at once if it has.
    pub fn park(&self, requests: Box<dyn Send>) {
        if let Some(shared) = self.shared.upgrade() {
            lock(&shared).parked = Some(requests);
        }
    }

    /// Drops every message still waiting (giving back the budget they hold) and leaves `status`
    /// to be sent in their place: `status_for` is given the index of the first result the client
    /// will not get. Nothing to do if tonic has dropped the stream already.
    pub fn cut(&self, status_for: impl FnOnce(u64) -> Status) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let mut inner = lock(&shared);
        inner.rx.close();
        while inner.rx.try_recv().is_ok() {}
        inner.last = Some(status_for(inner.taken_results));
    }
}

impl<R, T> Stream for Responses<R, T> {
    type Item = Result<T, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        let (results, convert) = (self.results, self.convert);
        let mut inner = lock(&self.shared);
        let item = match inner.rx.poll_recv(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Some(item)) => {
                inner.taken += 1;
                Some(item.map(|(response, _held)| {
                    inner.taken_results += results(&response) as u64;
                    convert(response)
                }))
            }
            // The call is done (or was cut): a cut's status, if any, is the last word.
            Poll::Ready(None) => inner.last.take().map(Err),
        };
        drop(inner);
        if item.as_ref().is_none_or(Result::is_err) {
            self.done = true;
        }
        Poll::Ready(item)
    }
}

/// One call's watch on its client's reading: a stall is messages waiting, none taken, through two
/// whole ticks of half `--stall-timeout` (so at least the timeout, at most one and a half of it).
pub(super) struct StallWatch {
    ticks: Interval,
    /// Messages taken at the last tick, whether some were waiting then, and for how many ticks
    /// in a row some have waited with none taken.
    last_taken: u64,
    was_waiting: bool,
    stalled_ticks: u32,
}

impl StallWatch {
    /// A watch with this timeout, if there is one.
    pub fn new(timeout: Option<Duration>) -> Option<StallWatch> {
        let period = (timeout? / 2).max(Duration::from_millis(1));
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Some(StallWatch {
            ticks,
            last_taken: 0,
            was_waiting: false,
            stalled_ticks: 0,
        })
    }

    /// Completes when the client of `out` has stalled.
    pub async fn stalled<R>(&mut self, out: &Outbox<R>) {
        loop {
            self.ticks.tick().await;
            let (taken, _) = out.taken();
            let waiting = taken < out.sent;
            if waiting && self.was_waiting && taken == self.last_taken {
                self.stalled_ticks += 1;
            } else {
                self.stalled_ticks = 0;
            }
            (self.last_taken, self.was_waiting) = (taken, waiting);
            if self.stalled_ticks >= 2 {
                return;
            }
        }
    }
}
