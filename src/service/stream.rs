//! One streaming call (`SolveStream`, `SolveRpsStream`), from its first request to its log line.
//!
//! The call is a [`StreamCall`]: what it has read, what waits for budget, what is being solved,
//! what it has sent. One task waits on every event the call reacts to and hands each to the method
//! that handles it, until one of them says how the call ends ([`StreamEnd`]).
//!
//! Each request takes one permit per item (deal or case; at least one) from the call's in-flight budget before
//! the next is read; the permits come back only when tonic takes its response for sending. So items
//! read but not yet handed to the transport never exceed `max_in_flight`, whether the workers or
//! the client's reading are the bottleneck.

use std::net::SocketAddr;
use std::ops::ControlFlow::{self, Break, Continue};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::{BoxFuture, OptionFuture};
use futures::stream::{FuturesOrdered, StreamExt};
use tokio::sync::{AcquireError, Semaphore, watch};
use tokio::time::Sleep;
use tonic::{Code, Status, Streaming};

use super::admission::Held;
use super::deadline::FOREVER;
use super::end::{Internal, StreamEnd};
use super::game::Game;
use super::stall::{self, Outbound, StallWatch};
use super::start::{Answered, Started, Submitter};
use super::{SolverService, display_peer, is_tonic_too_large, message_too_large};

/// What a call's task hands to tonic: a response with the in-flight permits of its items, which
/// are returned only when tonic takes the response for sending.
pub(super) type Outgoing<R> = Result<(R, Held), Status>;

/// How far the call has read its client's requests.
#[derive(Debug)]
enum Reading {
    /// Reading on.
    Open,
    /// The client finished sending, and everything it sent was read.
    Finished,
    /// Shutdown stopped reading before the client finished: what was read is answered, then the
    /// call ends with `UNAVAILABLE` naming the index to resume from.
    CutShort,
    /// Reading stopped on an error: what was read is answered, then the call ends with it.
    Failed(Status),
}

/// A request read from the client, waiting for its permits: the call's own and the server's. The
/// wait is kept across turns of the loop, so it keeps its place in the server-wide queue.
struct Waiting<G: Game> {
    request: G::Request,
    budget: BoxFuture<'static, Result<Held, AcquireError>>,
}

/// A group of requests being solved: their responses, in order, with the permits they hold.
type Solving<R> = BoxFuture<'static, Vec<(Answered<R>, Held)>>;

/// The state of one streaming call.
struct StreamCall<G: Game> {
    service: SolverService,
    peer: Option<SocketAddr>,
    started: Instant,
    inbound: Streaming<G::StreamRequest>,
    /// Where the responses go, and what tonic has taken of them.
    out: Outbound<G::Response>,
    /// Cuts the call if the client stops taking responses (`--stall-timeout`).
    stall: Option<StallWatch>,
    /// Fires at the client's deadline, if it gave one. tonic enforces `grpc-timeout` only until
    /// the handler returns, not on a streaming body, so the call enforces its own.
    expiry: Option<Pin<Box<Sleep>>>,
    abort: watch::Receiver<bool>,
    draining: watch::Receiver<bool>,
    /// Armed when shutdown begins, with `drain_cut_after`: a client still sending then has that
    /// long to finish.
    cut: Option<Pin<Box<Sleep>>>,
    reading: Reading,
    /// The call's in-flight budget, `max_in_flight` items.
    budget: Arc<Semaphore>,
    waiting: Option<Waiting<G>>,
    /// Queues requests with their permits on the pool, one after another, while this task goes on
    /// reading and forwarding.
    submitter: Submitter<G>,
    /// Requests handed to the submitter whose responses' future has not come back yet.
    submitting: usize,
    /// The responses being solved, in request order, with the permits they hold.
    solving: FuturesOrdered<Solving<G::Response>>,
    /// Items read: the stream index of the next one.
    received: u64,
    /// Items whose responses were handed to the transport.
    answered: u64,
    /// Answered items that got an error.
    errors: u64,
}

/// Runs one streaming call to its end and logs one line about it.
pub(super) async fn run<G: Game>(
    service: SolverService,
    inbound: Streaming<G::StreamRequest>,
    outbound: Outbound<G::Response>,
    peer: Option<SocketAddr>,
    deadline: Option<tokio::time::Instant>,
) {
    let mut call = StreamCall::<G>::new(service, inbound, outbound, peer, deadline);
    let end = call.run().await;
    call.finish(end);
}

impl<G: Game> StreamCall<G> {
    fn new(
        service: SolverService,
        inbound: Streaming<G::StreamRequest>,
        outbound: Outbound<G::Response>,
        peer: Option<SocketAddr>,
        deadline: Option<tokio::time::Instant>,
    ) -> StreamCall<G> {
        let started = Instant::now();
        service.metrics.streams(1);
        let budget = Arc::new(Semaphore::new(service.limits.max_in_flight.max(1)));
        StreamCall {
            peer,
            started,
            inbound,
            stall: StallWatch::new(service.limits.stall_timeout, outbound.progress.clone()),
            out: outbound,
            expiry: deadline.map(|at| Box::pin(tokio::time::sleep_until(at))),
            abort: service.lifecycle.abort.clone(),
            draining: service.lifecycle.draining.clone(),
            cut: None,
            reading: Reading::Open,
            budget,
            waiting: None,
            submitter: Submitter::spawn(service.clone()),
            submitting: 0,
            solving: FuturesOrdered::new(),
            received: 0,
            answered: 0,
            errors: 0,
            service,
        }
    }

    /// Handles the call's events until one ends it. Earlier arms win when several are ready: the
    /// client's cancel, the deadline and the abort before any work, and forwarding finished
    /// responses before reading more requests.
    async fn run(&mut self) -> StreamEnd {
        loop {
            if let Some(end) = self.end_if_done().await {
                return self.until_taken(end).await;
            }
            let step = tokio::select! {
                biased;
                () = self.out.tx.closed() => Break(StreamEnd::CancelledByClient),
                () = fired(&mut self.expiry), if self.expiry.is_some() => {
                    Break(self.deadline_passed().await)
                }
                true = self.abort.wait_for(|&a| a).map(|r| r.is_ok()) => {
                    Break(self.aborted().await)
                }
                () = stall::stalled(&mut self.stall), if self.stall.is_some() => {
                    Break(self.stall_cut())
                }
                true = self.draining.wait_for(|&d| d).map(|r| r.is_ok()), if self.may_arm_cut() => {
                    self.arm_cut()
                }
                () = fired(&mut self.cut), if self.is_reading() && self.cut.is_some() => {
                    self.cut_short()
                }
                Some(group) = self.solving.next() => self.forward(group).await,
                Some((started, permits)) = self.submitter.next(), if self.submitting > 0 => {
                    self.started(started, permits)
                }
                Some(held) = OptionFuture::from(self.waiting.as_mut().map(|w| &mut w.budget)),
                    if self.waiting.is_some() => self.submit(held),
                message = self.inbound.message(), if self.is_reading() && self.waiting.is_none() => {
                    self.read(message)
                }
            };
            if let Break(end) = step {
                return end;
            }
        }
    }

    fn is_reading(&self) -> bool {
        matches!(self.reading, Reading::Open)
    }

    /// With nothing left to read, wait for or send: how the call ends, once the client has been
    /// told why if it did not end well.
    async fn end_if_done(&mut self) -> Option<StreamEnd> {
        if self.is_reading()
            || self.waiting.is_some()
            || self.submitting > 0
            || !self.solving.is_empty()
        {
            return None;
        }
        match std::mem::replace(&mut self.reading, Reading::Finished) {
            Reading::Open | Reading::Finished => Some(StreamEnd::Completed),
            Reading::Failed(status) => {
                // Behind the results: waits as long as they do, but not past a stall.
                tokio::select! {
                    sent = self.out.tx.send(Err(status)) => {
                        if let (Ok(()), Some(stall)) = (sent, &mut self.stall) {
                            stall.sent();
                        }
                        Some(StreamEnd::Failed)
                    }
                    () = stall::stalled(&mut self.stall), if self.stall.is_some() => {
                        Some(self.stall_cut())
                    }
                }
            }
            Reading::CutShort => {
                let answered = self.answered;
                self.last_word(Status::unavailable(format!(
                    "the server is shutting down and stopped reading this stream; results before \
                     index {answered} were sent, resend the {} from index {answered} on (to \
                     another replica)",
                    G::ITEMS
                )))
                .await;
                Some(StreamEnd::CutShortByShutdown)
            }
        }
    }

    async fn deadline_passed(&mut self) -> StreamEnd {
        let answered = self.answered;
        self.last_word(Status::deadline_exceeded(format!(
            "the call's deadline passed; results before index {answered} were sent"
        )))
        .await;
        StreamEnd::DeadlineExceeded
    }

    async fn aborted(&mut self) -> StreamEnd {
        let answered = self.answered;
        self.last_word(Status::unavailable(format!(
            "the server is shutting down; results before index {answered} were sent, resend the \
             {} from index {answered} on",
            G::ITEMS
        )))
        .await;
        StreamEnd::AbortedByShutdown
    }

    /// Sends the status the call ends with, giving up after a second: a client that is not
    /// reading cannot be told, and sees the stream end. (`&mut`: the call is `Send`, not `Sync`.)
    async fn last_word(&mut self, status: Status) {
        let _ = tokio::time::timeout(Duration::from_secs(1), self.out.tx.send(Err(status))).await;
    }

    /// After a call that ended well or with its client told why: waits until tonic has taken
    /// every response, so that a client that does not read them is still cut at the stall
    /// timeout (their permits stay held until they are taken).
    async fn until_taken(&mut self, end: StreamEnd) -> StreamEnd {
        if !matches!(end, StreamEnd::Completed | StreamEnd::Failed) {
            return end;
        }
        loop {
            let progress = self.out.progress.clone();
            let took = progress.took.notified();
            tokio::pin!(took);
            // Registered before the count is read, so a message taken between the two wakes us.
            took.as_mut().enable();
            if self.stall.as_ref().is_none_or(StallWatch::drained) {
                return end;
            }
            tokio::select! {
                () = took => {}
                () = self.out.tx.closed() => return StreamEnd::CancelledByClient,
                true = self.abort.wait_for(|&a| a).map(|r| r.is_ok()) => return end,
                () = stall::stalled(&mut self.stall) => return self.stall_cut(),
            }
        }
    }

    /// The client took none of its results for `--stall-timeout`: the ones waiting are dropped,
    /// with a status in their place naming the index to resume from.
    fn stall_cut(&mut self) -> StreamEnd {
        let resume = self.out.progress.results.load(Ordering::Relaxed);
        let after = self.service.limits.stall_timeout.unwrap_or_default();
        self.out.cut(Status::resource_exhausted(format!(
            "the client took none of its results for {}s (server flag --stall-timeout), so the \
             server dropped the rest; results before index {resume} were sent, resend the {} \
             from index {resume} on",
            after.as_secs_f64(),
            G::ITEMS
        )));
        self.service.metrics.call_cut("stall_timeout");
        StreamEnd::Stalled
    }

    /// Whether shutdown would start the countdown to stop reading: only with `drain_cut_after`,
    /// only once, and only while the client is still sending.
    fn may_arm_cut(&self) -> bool {
        self.is_reading() && self.cut.is_none() && self.service.limits.drain_cut_after.is_some()
    }

    fn arm_cut(&mut self) -> ControlFlow<StreamEnd> {
        let grace = self.service.limits.drain_cut_after.unwrap_or(FOREVER);
        self.cut = Some(Box::pin(tokio::time::sleep(grace)));
        Continue(())
    }

    /// The client has not finished sending: what was read is answered, the rest is left for the
    /// client to resend elsewhere, so the drain ends soon.
    fn cut_short(&mut self) -> ControlFlow<StreamEnd> {
        self.reading = Reading::CutShort;
        Continue(())
    }

    /// Hands finished responses to tonic, in order; each takes its permits along.
    async fn forward(
        &mut self,
        group: Vec<(Answered<G::Response>, Held)>,
    ) -> ControlFlow<StreamEnd> {
        for (done, permit) in group {
            let items = G::results(&done.response);
            self.answered += items as u64;
            self.errors += done.errors;
            if self.out.tx.send(Ok((done.response, permit))).await.is_err() {
                return Break(StreamEnd::CancelledByClient);
            }
            if let Some(stall) = &mut self.stall {
                stall.sent();
            }
        }
        Continue(())
    }

    /// A group of requests is queued on the pool (its responses join the ones being solved), or
    /// could not be: then nothing more is read, and the call ends with why after the responses
    /// before it.
    fn started(
        &mut self,
        started: Started<G::Response>,
        permits: Vec<Held>,
    ) -> ControlFlow<StreamEnd> {
        self.submitting = self.submitting.saturating_sub(permits.len());
        match started {
            Ok(future) => self.solving.push_back(
                future
                    .map(move |done| done.into_iter().zip(permits).collect())
                    .boxed(),
            ),
            Err(status) => {
                self.reading = Reading::Failed(status);
                self.waiting = None;
            }
        }
        Continue(())
    }

    /// The waiting request has its permits: it gets its stream indices and goes to the submitter.
    fn submit(&mut self, held: Result<Held, AcquireError>) -> ControlFlow<StreamEnd> {
        let request = self.waiting.take().map(|w| w.request);
        let (Ok(mut permit), Some(request)) = (held, request) else {
            return Break(StreamEnd::Internal(Internal::BudgetClosed));
        };
        let first_index = self.received;
        let items = G::items(&request);
        self.received += items as u64;
        permit.count(&self.service.metrics, items);
        if self.submitter.send((request, first_index, permit)).is_err() {
            return Break(StreamEnd::Internal(Internal::SubmitterStopped));
        }
        self.submitting += 1;
        Continue(())
    }

    /// A request (it waits for its permits), the end of the client's requests, or why there are
    /// no more.
    fn read(
        &mut self,
        message: Result<Option<G::StreamRequest>, Status>,
    ) -> ControlFlow<StreamEnd> {
        match message.map(|m| m.map(G::from_stream)) {
            Ok(Some(request)) => match G::check_size(&self.service, &request) {
                Ok(()) => {
                    let max_in_flight = self.service.limits.max_in_flight.max(1);
                    let cost = G::items(&request).clamp(1, max_in_flight);
                    let budget = self
                        .service
                        .admission
                        .hold_with(self.budget.clone(), cost)
                        .boxed();
                    self.waiting = Some(Waiting { request, budget });
                }
                Err(status) => self.reading = Reading::Failed(status),
            },
            Ok(None) => self.reading = Reading::Finished,
            // RST_STREAM(CANCEL): a cancel, or a deadline enforced by the client.
            Err(status) if status.code() == Code::Cancelled => {
                return Break(StreamEnd::CancelledByClient);
            }
            // Undecodable input, or the connection failed: answer what was read, then the error
            // (if anyone is still there to read it).
            Err(status) => {
                self.reading =
                    Reading::Failed(if is_tonic_too_large(status.code(), status.message()) {
                        message_too_large(self.service.limits.max_message_bytes)
                    } else {
                        status
                    });
            }
        }
        Continue(())
    }

    /// Gives back what the call still counts and logs its one line.
    fn finish(self, end: StreamEnd) {
        let metrics = &self.service.metrics;
        metrics.streams(-1);
        // The target the line has always had, beside the unary rpcs', so log filters and
        // searches for it keep working; Double Patience keeps its `deals` field.
        let duration_ms = self.started.elapsed().as_secs_f64() * 1e3;
        let peer = display_peer(self.peer);
        if G::ITEMS == "deals" {
            tracing::info!(
                target: "patience::service",
                rpc = G::STREAM_RPC,
                peer = %peer,
                deals = self.answered,
                errors = self.errors,
                received = self.received,
                duration_ms,
                end = end.as_str(),
                "call finished"
            );
        } else {
            tracing::info!(
                target: "patience::service",
                rpc = G::STREAM_RPC,
                game = G::LABEL,
                peer = %peer,
                cases = self.answered,
                errors = self.errors,
                received = self.received,
                duration_ms,
                end = end.as_str(),
                "call finished"
            );
        }
        self.out.park(Box::new(self.inbound));
    }
}

/// Waits for a timer to fire; forever without one.
async fn fired(timer: &mut Option<Pin<Box<Sleep>>>) {
    match timer {
        Some(timer) => timer.as_mut().await,
        None => std::future::pending().await,
    }
}
