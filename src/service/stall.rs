//! A streaming call's way out to tonic, and noticing a client that stopped reading.
//!
//! Finished responses wait in a channel until tonic takes them, which it does only as the
//! client's HTTP/2 window has room; each holds its deals' share of `--max-deals-in-flight`
//! meanwhile. A client that sends a long stream and never reads would hold that share for good,
//! and a few such clients the whole budget. Such a client cannot be told anything at once (a
//! status would wait behind the responses), so the call drops the responses still waiting, which
//! gives back what they hold, and leaves a status in their place for when the client reads again.
//! Its connection and the other calls on it are untouched.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use tokio::sync::{Notify, mpsc};
use tokio::time::{Interval, MissedTickBehavior};
use tonic::Status;

use super::stream::Outgoing;

/// What tonic has taken from a call's channel, counted on its side.
#[derive(Debug, Default)]
pub(super) struct Progress {
    /// Messages taken (responses and a final status).
    pub messages: AtomicU64,
    /// Results in the responses taken: the index a client that is cut may resume from.
    pub results: AtomicU64,
    /// Woken at every message taken.
    pub took: Notify,
}

/// The receiving end, owned by the response stream; the call reaches it through a weak
/// reference, so that the channel closes (and the call sees it) when tonic drops the stream.
/// One lock for all of it, taken once per poll.
type Shared<R> = Mutex<Inner<R>>;

struct Inner<R> {
    rx: mpsc::Receiver<Outgoing<R>>,
    /// Set by a cut: the stream yields `status` (once), then ends.
    cut: bool,
    status: Option<Status>,
    /// The call's request stream, once the call is done with it: dropping it resets the HTTP/2
    /// stream's sending half, which must not overtake the last response and status (a client
    /// still sending would see the reset instead of why the call ended).
    parked: Option<Box<dyn Send>>,
}

/// The lock, whether or not a holder panicked: every state it guards is valid at every step.
fn lock<R>(shared: &Shared<R>) -> std::sync::MutexGuard<'_, Inner<R>> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// The response stream tonic reads: the channel's responses, counted, and after a cut its status.
pub(super) struct Responses<R, T> {
    shared: Arc<Shared<R>>,
    progress: Arc<Progress>,
    results: fn(&R) -> usize,
    convert: fn(R) -> T,
    done: bool,
}

/// The call's side: its sender, and a way to cut the stream.
pub(super) struct Outbound<R> {
    pub tx: mpsc::Sender<Outgoing<R>>,
    pub progress: Arc<Progress>,
    shared: Weak<Shared<R>>,
}

/// A channel of `capacity` responses: the call's end and tonic's. `results` counts a response's
/// results; `convert` makes it the message tonic sends.
pub(super) fn channel<R, T>(
    capacity: usize,
    results: fn(&R) -> usize,
    convert: fn(R) -> T,
) -> (Outbound<R>, Responses<R, T>) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    let shared = Arc::new(Mutex::new(Inner {
        rx,
        cut: false,
        status: None,
        parked: None,
    }));
    let progress = Arc::new(Progress::default());
    let outbound = Outbound {
        tx,
        progress: progress.clone(),
        shared: Arc::downgrade(&shared),
    };
    let responses = Responses {
        shared,
        progress,
        results,
        convert,
        done: false,
    };
    (outbound, responses)
}

impl<R> Outbound<R> {
    /// Keeps `requests` (the call's request stream) until tonic has sent the last response and
    /// dropped the response stream; dropped at once if it has.
    pub fn park(&self, requests: Box<dyn Send>) {
        if let Some(shared) = self.shared.upgrade() {
            lock(&shared).parked = Some(requests);
        }
    }

    /// Drops every response still waiting (giving back the budget they hold) and leaves `status`
    /// to be sent in their place. Nothing to do if tonic has dropped the stream already.
    pub fn cut(&self, status: Status) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let mut inner = lock(&shared);
        inner.cut = true;
        inner.status = Some(status);
        inner.rx.close();
        while inner.rx.try_recv().is_ok() {}
    }
}

impl<R, T> Stream for Responses<R, T> {
    type Item = Result<T, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        let polled = {
            let mut inner = lock(&self.shared);
            if inner.cut {
                let status = inner.status.take();
                drop(inner);
                self.done = true;
                return Poll::Ready(status.map(Err));
            }
            inner.rx.poll_recv(cx)
        };
        match polled {
            Poll::Ready(Some(item)) => {
                let item = item.map(|(response, _held)| {
                    let results = (self.results)(&response) as u64;
                    self.progress.results.fetch_add(results, Ordering::Relaxed);
                    (self.convert)(response)
                });
                self.progress.messages.fetch_add(1, Ordering::Release);
                self.progress.took.notify_waiters();
                Poll::Ready(Some(item))
            }
            Poll::Ready(None) => {
                self.done = true;
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// One call's watch on its client's reading.
pub(super) struct StallWatch {
    progress: Arc<Progress>,
    /// Messages the call sent into the channel.
    sent: u64,
    /// Every half `--stall-timeout`.
    ticks: Interval,
    /// Messages taken at the last tick, whether some were waiting then, and for how many ticks
    /// in a row some have waited with none taken.
    last_taken: u64,
    was_waiting: bool,
    stalled_ticks: u32,
}

impl StallWatch {
    /// A watch with this timeout, if there is one.
    pub fn new(timeout: Option<Duration>, progress: Arc<Progress>) -> Option<StallWatch> {
        let period = (timeout? / 2).max(Duration::from_millis(1));
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Some(StallWatch {
            progress,
            sent: 0,
            ticks,
            last_taken: 0,
            was_waiting: false,
            stalled_ticks: 0,
        })
    }

    /// One more message sent into the channel.
    pub fn sent(&mut self) {
        self.sent += 1;
    }

    /// Whether every message sent has been taken.
    pub fn drained(&self) -> bool {
        self.progress.messages.load(Ordering::Acquire) >= self.sent
    }

    /// Waits for the next tick, then says whether the client has stalled: messages have waited,
    /// none taken, through two whole ticks (at least `--stall-timeout`, at most one and a half
    /// of it).
    pub async fn stalled(&mut self) -> bool {
        self.ticks.tick().await;
        let taken = self.progress.messages.load(Ordering::Acquire);
        let waiting = taken < self.sent;
        if waiting && self.was_waiting && taken == self.last_taken {
            self.stalled_ticks += 1;
        } else {
            self.stalled_ticks = 0;
        }
        (self.last_taken, self.was_waiting) = (taken, waiting);
        self.stalled_ticks >= 2
    }
}

/// Waits for `watch` to see a stall; never without one.
pub(super) async fn stalled(watch: &mut Option<StallWatch>) {
    match watch {
        Some(watch) => while !watch.stalled().await {},
        None => std::future::pending().await,
    }
}
