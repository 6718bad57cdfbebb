//! One streaming call (`SolveStream`, `SolveRpsStream`), from its first request to its log line,
//! in one task that owns all of it.
//!
//! A request goes down one pipeline, in order:
//! 1. **read** from the client, only while the call has room in its own budget;
//! 2. **admitted**: it waits for its items' share of the call's budget (`--max-in-flight`) and
//!    then of the server's (`--max-deals-in-flight`);
//! 3. **queued**: its valid items go to the pool, together with those of the requests admitted
//!    meanwhile, in jobs of `batch` items (queueing waits while the pool's queue is full);
//! 4. **solved**, and **sent** to tonic in order, through the [`Outbox`]; the budget comes back
//!    when tonic takes the response.
//!
//! So items read but not yet handed to the transport never exceed `--max-in-flight`, whether the
//! workers or the client's reading are the bottleneck. Beside the pipeline, [`Interrupts`] holds
//! what can end the call from outside: the client leaving, its deadline, the drain, a stall. One
//! loop with one `biased` select waits for all of it, in the order [`CallEvent`] gives.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::{FuturesOrdered, StreamExt};
use tokio::sync::{AcquireError, Semaphore};
use tokio::time::Sleep;
use tonic::{Code, Status};
use tracing::Instrument as _;

use super::admission::Held;
use super::end::{Account, CallEnd, Ending};
use super::game::Game;
use super::lifecycle::{Lifecycle, Phase};
use super::outbox::{Outbox, StallWatch};
use super::start::{Answered, Started};
use super::{Inbound, SolverService, spans};
use crate::proto::reason::Reason;

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

/// Runs one streaming call to its end and ends it with its account (the log line).
pub(super) async fn run<G: Game>(
    service: SolverService,
    inbound: Inbound<G::StreamRequest>,
    out: Outbox<G::Response>,
    peer: Option<SocketAddr>,
    deadline: Option<tokio::time::Instant>,
    ending: Ending,
) {
    let mut call = StreamCall::<G>::new(service, inbound, out, deadline);
    let end = call.serve().await;
    call.finish(peer, end, &ending);
}

/// The state of one streaming call.
struct StreamCall<G: Game> {
    service: SolverService,
    inbound: Inbound<G::StreamRequest>,
    reading: Reading,
    pipeline: Pipeline<G>,
    out: Outbox<G::Response>,
    interrupts: Interrupts,
    /// Items read: the stream index of the next one.
    received: u64,
    /// Items whose responses were handed to tonic, and how many of them were errors.
    answered: u64,
    errors: u64,
    /// The status the call ended with, for its log line.
    status: Option<Status>,
}

/// What the call waits for, in the order it handles them when several are ready: the client's
/// leaving and every other interruption first, then finished work, then new requests.
enum CallEvent<G: Game> {
    Interrupted(Interrupt),
    Stage(Stage<G::Response>),
    Read(Result<Option<G::StreamRequest>, Status>),
}

impl<G: Game> StreamCall<G> {
    fn new(
        service: SolverService,
        inbound: Inbound<G::StreamRequest>,
        out: Outbox<G::Response>,
        deadline: Option<tokio::time::Instant>,
    ) -> StreamCall<G> {
        let limits = &service.limits;
        StreamCall {
            inbound,
            reading: Reading::Open,
            pipeline: Pipeline::new(limits.max_in_flight, limits.batch),
            out,
            interrupts: Interrupts {
                deadline: deadline.map(|at| Box::pin(tokio::time::sleep_until(at))),
                lifecycle: service.lifecycle.clone(),
                stall: StallWatch::new(limits.stall_timeout),
                cut_after: limits.drain_cut_after,
                cut: None,
            },
            received: 0,
            answered: 0,
            errors: 0,
            status: None,
            service,
        }
    }

    /// Handles the call's events until one ends it.
    async fn serve(&mut self) -> CallEnd {
        loop {
            if self.pipeline.is_empty() && !matches!(self.reading, Reading::Open) {
                return self.conclude().await;
            }
            let reading = matches!(self.reading, Reading::Open);
            let interrupts = &mut self.interrupts;
            // The drain's cut is armed once, when the drain begins, while the call still reads.
            let arm = reading && interrupts.cut.is_none() && interrupts.cut_after.is_some();
            // One loop, one select: the arms are the call's events in the order it handles them
            // when several are ready (see `CallEvent`).
            let event = tokio::select! {
                biased;
                () = self.out.closed() => return CallEnd::CancelledByClient,
                () = fired(interrupts.deadline.as_mut()) => CallEvent::<G>::Interrupted(Interrupt::Deadline),
                () = interrupts.lifecycle.reached(Phase::Aborting) => CallEvent::Interrupted(Interrupt::Abort),
                () = stalled(&mut interrupts.stall, &self.out) => CallEvent::Interrupted(Interrupt::Stalled),
                () = interrupts.lifecycle.reached(Phase::Draining), if arm => CallEvent::Interrupted(Interrupt::DrainBegan),
                () = fired(interrupts.cut.as_mut()), if reading => CallEvent::Interrupted(Interrupt::StopReading),
                step = self.pipeline.next() => CallEvent::Stage(step),
                message = self.inbound.next().map(Option::transpose), if reading && self.pipeline.has_room() => {
                    CallEvent::Read(message)
                }
            };
            let handled = match event {
                CallEvent::Interrupted(interrupt) => self.interrupted(interrupt),
                CallEvent::Stage(Stage::Solved(group)) => self.send(group).await,
                CallEvent::Stage(Stage::Queued(started, held, span)) => {
                    self.queued(started, held, span);
                    Ok(())
                }
                CallEvent::Stage(Stage::Admitted(held)) => self.admitted(held),
                CallEvent::Read(message) => self.read(message),
            };
            if let Err(end) = handled {
                return end;
            }
        }
    }

    /// A request (it waits for its budget), the end of the client's requests, or why there are
    /// no more.
    fn read(&mut self, message: Result<Option<G::StreamRequest>, Status>) -> Result<(), CallEnd> {
        match message.map(|m| m.map(G::from_stream)) {
            Ok(Some(request)) => match G::check_size(&self.service, &request) {
                Ok(()) => {
                    let items = G::items(&request);
                    let budget = self.service.admission.hold_with(
                        self.pipeline.budget.clone(),
                        self.pipeline.max_in_flight,
                        items,
                    );
                    let budget = spans::admission(budget, items).in_current_span();
                    self.pipeline.waiting = Some((request, budget.boxed()));
                }
                Err(status) => self.reading = Reading::Failed(status),
            },
            Ok(None) => self.reading = Reading::Finished,
            // RST_STREAM(CANCEL): a cancel, or a deadline enforced by the client.
            Err(status) if status.code() == Code::Cancelled => {
                return Err(CallEnd::CancelledByClient);
            }
            // Undecodable or oversized input, or the connection failed: answer what was read,
            // then the error (if anyone is still there to read it).
            Err(status) => self.reading = Reading::Failed(status),
        }
        Ok(())
    }

    /// The waiting request has its budget: it gets its stream indices and joins the queue.
    fn admitted(&mut self, held: Result<Held, AcquireError>) -> Result<(), CallEnd> {
        let request = self.pipeline.waiting.take().map(|(request, _)| request);
        let (Ok(held), Some(request)) = (held, request) else {
            return Err(CallEnd::BudgetClosed);
        };
        let items = G::items(&request);
        self.pipeline
            .ready
            .push_back((request, self.received, held));
        self.received += items as u64;
        self.pipeline.queue_next(&self.service);
        Ok(())
    }

    /// A group of requests is on the pool (its responses join the ones being solved), or could
    /// not be put there: then nothing more is read, and the call ends with why after the
    /// responses before it.
    fn queued(&mut self, started: Started<G::Response>, held: Vec<Held>, span: tracing::Span) {
        match started {
            Ok(solving) => {
                let solving = solving.map(|done| done.into_iter().zip(held).collect());
                self.pipeline
                    .solving
                    .push_back(solving.instrument(span).boxed());
                self.pipeline.queue_next(&self.service);
            }
            Err(status) => {
                self.reading = Reading::Failed(status);
                self.pipeline.waiting = None;
                self.pipeline.ready.clear();
            }
        }
    }

    /// Hands finished responses to tonic, in order; each takes its budget along.
    async fn send(&mut self, group: Vec<(Answered<G::Response>, Held)>) -> Result<(), CallEnd> {
        for (done, held) in group {
            self.answered += G::results(&done.response) as u64;
            self.errors += done.errors;
            self.out
                .send(done.response, held)
                .await
                .map_err(|_| CallEnd::CancelledByClient)?;
        }
        Ok(())
    }

    /// Something from outside the call's own work: it ends the call, or stops its reading.
    fn interrupted(&mut self, interrupt: Interrupt) -> Result<(), CallEnd> {
        let resume_index = self.answered;
        let end = match interrupt {
            Interrupt::DrainBegan => {
                let after = self.interrupts.cut_after.unwrap_or_default();
                self.interrupts.cut = Some(Box::pin(tokio::time::sleep(after)));
                return Ok(());
            }
            Interrupt::StopReading => {
                self.reading = Reading::CutShort;
                return Ok(());
            }
            Interrupt::Stalled => return Err(self.stall_cut()),
            Interrupt::Deadline => {
                let resume_index = Some(resume_index);
                self.end_with(Reason::DeadlineExceeded { resume_index }.status());
                CallEnd::DeadlineExceeded
            }
            Interrupt::Abort => {
                let what = G::ITEMS;
                self.end_with(Reason::DrainTimeout { resume_index, what }.status());
                CallEnd::AbortedByShutdown
            }
        };
        Err(end)
    }

    /// Nothing left to read or to solve: the call ends, once the client has been told why if it
    /// did not end well, and (for one that did) once tonic has taken every response, so that a
    /// client that does not read them is still cut at the stall timeout.
    async fn conclude(&mut self) -> CallEnd {
        match std::mem::replace(&mut self.reading, Reading::Finished) {
            Reading::Open | Reading::Finished => self.until_taken(CallEnd::Completed).await,
            Reading::Failed(status) => {
                self.end_with(status);
                self.until_taken(CallEnd::Failed).await
            }
            Reading::CutShort => {
                let (resume_index, what) = (self.answered, G::ITEMS);
                self.end_with(Reason::DrainCut { resume_index, what }.status());
                CallEnd::CutShortByShutdown
            }
        }
    }

    async fn until_taken(&mut self, end: CallEnd) -> CallEnd {
        tokio::select! {
            () = self.out.all_taken() => end,
            () = self.out.closed() => CallEnd::CancelledByClient,
            () = self.interrupts.lifecycle.reached(Phase::Aborting) => end,
            () = stalled(&mut self.interrupts.stall, &self.out) => self.stall_cut(),
        }
    }

    /// The status the call ends with, after the responses already sent.
    fn end_with(&mut self, status: Status) {
        self.out.finish(status.clone());
        self.status = Some(status);
    }

    /// The client took none of its results for `--stall-timeout`: the ones waiting are dropped,
    /// with a status in their place naming the index to resume from.
    fn stall_cut(&mut self) -> CallEnd {
        let after = self.service.limits.stall_timeout.unwrap_or_default();
        let mut told = None;
        self.out.cut(|resume_index| {
            let status = Reason::StallTimeout {
                resume_index,
                after,
                what: G::ITEMS,
            }
            .status();
            told = Some(status.clone());
            status
        });
        self.status = told;
        self.service.metrics.call_cut("stall_timeout");
        CallEnd::Stalled
    }

    /// Gives back what the call still counts (the open stream, counted when it was opened) and
    /// ends the call with its account (and its log line), before the response stream ends.
    fn finish(self, peer: Option<SocketAddr>, end: CallEnd, ending: &Ending) {
        self.service.metrics.streams(-1);
        ending.account(Account {
            rpc: G::STREAM_RPC,
            game: G::LABEL,
            peer,
            received: self.received,
            answered: self.answered,
            errors: self.errors,
            end,
            status: self.status,
        });
        self.out.park(Box::new(self.inbound));
    }
}

/// A request read from the client and the wait for its budget. The wait is kept across turns of
/// the loop, so it keeps its place in the server-wide queue.
type Waiting<R> = (R, BoxFuture<'static, Result<Held, AcquireError>>);

/// A group of requests being queued on the pool, with the budget they hold and their span.
type Queueing<R> = BoxFuture<'static, (Started<R>, Vec<Held>, tracing::Span)>;

/// A group of requests being solved: their responses, in order, with the budget they hold.
type Solving<R> = BoxFuture<'static, Vec<(Answered<R>, Held)>>;

/// The requests between reading and sending, each stage in order.
struct Pipeline<G: Game> {
    /// The call's own budget, `--max-in-flight` items.
    budget: Arc<Semaphore>,
    max_in_flight: usize,
    /// Items per pool job.
    batch: usize,
    /// The request waiting for its budget: at most one, so reading stops while it waits.
    waiting: Option<Waiting<G::Request>>,
    /// Requests with their budget, waiting for their turn to be queued on the pool, with the
    /// stream index of their first item.
    ready: VecDeque<(G::Request, u64, Held)>,
    /// The group being queued on the pool: one at a time, so groups reach it in order.
    queueing: Option<Queueing<G::Response>>,
    solving: FuturesOrdered<Solving<G::Response>>,
}

/// A stage of the pipeline done.
enum Stage<R> {
    /// The oldest group being solved is finished.
    Solved(Vec<(Answered<R>, Held)>),
    /// A group is on the pool, or could not be put there (with the span of its solving).
    Queued(Started<R>, Vec<Held>, tracing::Span),
    /// The waiting request has its budget (or the budget was closed).
    Admitted(Result<Held, AcquireError>),
}

impl<G: Game> Pipeline<G> {
    fn new(max_in_flight: usize, batch: usize) -> Pipeline<G> {
        let max_in_flight = max_in_flight.max(1);
        Pipeline {
            budget: Arc::new(Semaphore::new(max_in_flight)),
            max_in_flight,
            batch: batch.max(1),
            waiting: None,
            ready: VecDeque::new(),
            queueing: None,
            solving: FuturesOrdered::new(),
        }
    }

    fn is_empty(&self) -> bool {
        self.waiting.is_none()
            && self.ready.is_empty()
            && self.queueing.is_none()
            && self.solving.is_empty()
    }

    /// Whether another request may be read: not while one waits for its budget.
    fn has_room(&self) -> bool {
        self.waiting.is_none()
    }

    /// The next stage done, finished work first; never, with nothing in the pipeline.
    async fn next(&mut self) -> Stage<G::Response> {
        tokio::select! {
            biased;
            Some(group) = self.solving.next() => Stage::Solved(group),
            (started, held, span) = fired(self.queueing.as_mut()) => {
                self.queueing = None;
                Stage::Queued(started, held, span)
            }
            held = fired(self.waiting.as_mut().map(|(_, budget)| budget)) => {
                Stage::Admitted(held)
            }
        }
    }

    /// Starts queueing the requests that are ready, up to one pool batch of items (at least one
    /// request), unless a group is being queued already.
    fn queue_next(&mut self, service: &SolverService) {
        if self.queueing.is_some() || self.ready.is_empty() {
            return;
        }
        let (mut requests, mut held, mut items) = (Vec::new(), Vec::new(), 0);
        while items < self.batch {
            let Some((request, first_index, h)) = self.ready.pop_front() else {
                break;
            };
            items += G::items(&request);
            requests.push((request, first_index));
            held.push(h);
        }
        let service = service.clone();
        let span = spans::solve(items);
        let queueing = async move { service.start::<G>(requests).await }.instrument(span.clone());
        self.queueing = Some(queueing.map(|started| (started, held, span)).boxed());
    }
}

/// Waits for a future, if there is one; forever without.
async fn fired<F: Future + Unpin>(future: Option<&mut F>) -> F::Output {
    match future {
        Some(future) => future.await,
        None => std::future::pending().await,
    }
}

/// What can end or change the call from outside its own work.
#[derive(Debug)]
enum Interrupt {
    Deadline,
    Abort,
    Stalled,
    /// The drain has begun: a client still sending has `--drain-cut-after` to finish.
    DrainBegan,
    /// `--drain-cut-after` has passed since the drain began: stop reading.
    StopReading,
}

/// What can interrupt the call from outside its own work, as the call's loop waits for it.
struct Interrupts {
    /// Fires at the client's deadline, if it gave one. tonic enforces `grpc-timeout` only until
    /// the handler returns, not on a streaming body, so the call enforces its own.
    deadline: Option<Pin<Box<Sleep>>>,
    lifecycle: Lifecycle,
    /// Cuts the call if the client stops taking responses (`--stall-timeout`).
    stall: Option<StallWatch>,
    cut_after: Option<std::time::Duration>,
    /// Armed when the drain begins, with `cut_after`: a client still sending then has that long
    /// to finish.
    cut: Option<Pin<Box<Sleep>>>,
}

/// Completes when `watch` sees the client of `out` stall; never without a watch.
async fn stalled<R>(watch: &mut Option<StallWatch>, out: &Outbox<R>) {
    match watch {
        Some(watch) => watch.stalled(out).await,
        None => std::future::pending().await,
    }
}
