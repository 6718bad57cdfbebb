//! The `patience.v1.Solver` gRPC service: deals in, probabilities out, in order.
//!
//! The service parses and validates deals itself (cheap, and it keeps bad deals off the workers),
//! then hands the valid ones to the shared [`Pool`] in batches. It never touches a solver table.
//!
//! # Flow control
//! Each `SolveStream` call runs one task that alternates between reading the next request and
//! forwarding the oldest finished response. It reads a request only when the call has fewer than
//! [`Limits::max_in_flight`] deals read but not yet handed to the transport. So a client that
//! sends faster than the workers solve, or reads slower, fills its own window and then HTTP/2
//! flow control holds it back; the server's memory per call stays bounded and other calls are not
//! slowed. (What the transport has taken is bounded by the client's HTTP/2 receive window: a
//! client that stops reading lets the server solve that much further ahead, no more.)
//!
//! # Cancellation
//! When the client cancels or its deadline passes (both reset the stream), or its connection
//! drops, the call's task sees a cancelled request stream or a dropped response stream, stops, and
//! drops its pool tickets: its queued batches are skipped and a batch being solved stops after
//! the current deal. (A tonic client's `cancellation_handle` only sends its reset when its request
//! body is next polled; the in-flight budget keeps the server reading, so that is soon.)

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::future::OptionFuture;
use futures::stream::{FuturesOrdered, StreamExt};
use futures::{FutureExt, Stream};
use tokio::sync::{AcquireError, Semaphore, mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Request, Response, Status, Streaming};

mod admission;

use admission::{Admission, Held};

use crate::deal::{Deal, DealError, DealErrorKind};
use crate::metrics::Metrics;
use crate::pool::{Pool, PoolError};
use crate::proto::{
    self, DealError as ProtoDealError, ErrorCode, SolveRequest, SolveResponse, result::Outcome,
};
use crate::solver::{Analysis, Move, Options, Solver, fraction_text};

/// Limits that keep one client from taking more than its share.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest request message, in bytes; more is `RESOURCE_EXHAUSTED` (a deal is under 200).
    pub max_message_bytes: usize,
    /// Deals one request may carry; more is `INVALID_ARGUMENT`.
    pub max_deals_per_request: usize,
    /// Deals one `SolveStream` call may have read but not yet handed back to the transport; at the
    /// limit the server stops reading that call.
    pub max_in_flight: usize,
    /// `SolveStream` calls open at once across all connections; beyond, `RESOURCE_EXHAUSTED`
    /// (enforced by the server, which sees a call before it is read).
    pub max_open_streams: usize,
    /// `Solve` calls open at once across all connections (each may be reading a message of up to
    /// `max_message_bytes`); beyond, `RESOURCE_EXHAUSTED`.
    pub max_open_unary: usize,
    /// Deals read but not yet handed back across all calls; at the limit calls stop being read,
    /// and new calls get `RESOURCE_EXHAUSTED`.
    pub max_deals_in_flight: usize,
    /// Once shutdown begins, stop reading a stream whose client is still sending after this long
    /// (answering what was read and naming the resume index), instead of serving it until the
    /// drain timeout. Off by default.
    pub drain_cut_after: Option<Duration>,
    /// Deals per pool job: large enough to amortise the hop to a worker, small enough to spread
    /// one request over every worker.
    pub batch: usize,
    /// Test hook: a deal with this id makes its worker panic while solving it, to prove that a
    /// panic costs one `ERROR_CODE_INTERNAL` result and nothing else. `None` (off) by default;
    /// the command line never sets it.
    #[doc(hidden)]
    pub panic_on_id: Option<String>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: 4 << 20,
            max_deals_per_request: 10_000,
            max_in_flight: 4_096,
            max_open_streams: 1_024,
            max_open_unary: 64,
            max_deals_in_flight: 65_536,
            drain_cut_after: None,
            batch: 32,
            panic_on_id: None,
        }
    }
}

/// Server-wide switches the service obeys, flipped by the server during shutdown.
#[derive(Clone, Debug)]
pub struct Lifecycle {
    draining: watch::Receiver<bool>,
    abort: watch::Receiver<bool>,
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
}

impl LifecycleControl {
    /// From now on new calls are refused with `UNAVAILABLE`. Calls in flight go on to their end,
    /// whether or not their client is still sending (unless [`Limits::drain_cut_after`] says
    /// otherwise), until [`LifecycleControl::abort_calls`].
    pub fn start_draining(&self) {
        let _ = self.draining.send(true);
    }

    /// Ends every call still in flight with `UNAVAILABLE` after the responses it has finished.
    pub fn abort_calls(&self) {
        let _ = self.abort.send(true);
    }
}

/// The gRPC service. Cheap to clone: everything is shared.
#[derive(Clone)]
pub struct SolverService {
    pool: Arc<Pool>,
    limits: Limits,
    lifecycle: Lifecycle,
    metrics: Metrics,
    admission: Admission,
}

impl SolverService {
    pub fn new(pool: Arc<Pool>, limits: Limits, lifecycle: Lifecycle, metrics: Metrics) -> Self {
        let admission = Admission::new(&limits, metrics.clone());
        SolverService {
            pool,
            limits,
            lifecycle,
            metrics,
            admission,
        }
    }

    /// Lets a new call in, or says why not: shutting down, or a server-wide budget spent.
    fn admit(&self, peer: Option<SocketAddr>) -> Result<(), Status> {
        if *self.lifecycle.draining.borrow() {
            self.metrics
                .call_refused("shutting_down", peer, "shutting down");
            return Err(Status::unavailable(
                "the server is shutting down; retry on another replica",
            ));
        }
        self.admission.admit(peer)
    }

    fn check_size(&self, request: &SolveRequest) -> Result<(), Status> {
        let limit = self.limits.max_deals_per_request;
        if request.deals.len() > limit {
            return Err(Status::invalid_argument(format!(
                "the request has {} deals; the limit is {limit} deals per request \
                 (server flag --max-deals-per-request); split it into several requests",
                request.deals.len()
            )));
        }
        Ok(())
    }

    /// Validates the deals of consecutive requests and queues the valid ones on the pool, waiting
    /// for queue space. Each request comes with the stream index of its first deal. Returns the
    /// future of their responses, in order. Deals of several small requests share pool jobs, so
    /// one-deal messages do not cost one worker wake-up each. Dropping this future while it waits
    /// for queue space drops the tickets already taken, so nothing it queued runs.
    async fn start(
        &self,
        requests: Vec<(SolveRequest, u64)>,
    ) -> Result<BoxFuture<'static, Vec<Answered>>, Status> {
        let mut answers: Vec<Answered> = Vec::with_capacity(requests.len());
        let mut valid: Vec<(Place, Work)> = Vec::new();
        for (r, (request, first_index)) in requests.into_iter().enumerate() {
            let options = request.analysis.map(|o| Options {
                exact: o.exact,
                moves: o.moves,
                line: o.line,
            });
            let mut results = Vec::with_capacity(request.deals.len());
            let mut errors = 0;
            for (i, deal) in request.deals.into_iter().enumerate() {
                let outcome = match Deal::parse(&deal.cards) {
                    Ok(parsed) => {
                        let panic = self.limits.panic_on_id.as_ref() == Some(&deal.id);
                        valid.push(((r, i), (parsed, options, panic)));
                        None
                    }
                    Err(e) => {
                        errors += 1;
                        let wire = deal_error(&e);
                        self.metrics.deal(code_name(wire.code));
                        Some(Outcome::Error(wire))
                    }
                };
                results.push(proto::Result {
                    index: first_index + i as u64,
                    id: deal.id,
                    outcome,
                    analysis: None,
                });
            }
            answers.push(Answered {
                response: SolveResponse { results },
                errors,
            });
        }

        let mut batches = Vec::new();
        let mut rest = valid.into_iter().peekable();
        while rest.peek().is_some() {
            let (places, deals): (Vec<Place>, Vec<Work>) =
                rest.by_ref().take(self.limits.batch.max(1)).unzip();
            let metrics = self.metrics.clone();
            let queued = Instant::now();
            let waited = AtomicBool::new(false);
            let ticket = self
                .pool
                .submit_batch(
                    deals,
                    move |solver: &mut Solver, (deal, options, panic): Work| {
                        if !waited.swap(true, Ordering::Relaxed) {
                            metrics.queue_wait(queued.elapsed());
                        }
                        assert!(!panic, "fault injected by the panic_on_id test hook");
                        let started = Instant::now();
                        let answer = match options {
                            None => (solver.solve(&deal).probability, None),
                            Some(options) => {
                                let analysis = solver.analyze(&deal, options);
                                (analysis.probability, Some(wire_analysis(&analysis)))
                            }
                        };
                        metrics.solve_time(started.elapsed());
                        answer
                    },
                )
                .await
                .map_err(|e| Status::unavailable(e.to_string()))?;
            batches.push((places, ticket));
        }

        let metrics = self.metrics.clone();
        Ok(async move {
            for (places, ticket) in batches {
                let mut outcomes = ticket.await;
                for (n, (r, i)) in places.into_iter().enumerate() {
                    let (outcome, analysis) = match &mut outcomes {
                        Ok(values) => match values.get_mut(n) {
                            Some(Ok((p, analysis))) => (Outcome::Probability(*p), analysis.take()),
                            Some(Err(e)) => (internal(e), None),
                            None => (internal(&PoolError::Closed), None),
                        },
                        Err(e) => (internal(e), None),
                    };
                    metrics.deal(match &outcome {
                        Outcome::Probability(_) => "solved",
                        Outcome::Error(e) => code_name(e.code),
                    });
                    if let Some(answer) = answers.get_mut(r) {
                        answer.errors += u64::from(matches!(outcome, Outcome::Error(_)));
                        if let Some(result) = answer.response.results.get_mut(i) {
                            result.outcome = Some(outcome);
                            result.analysis = analysis;
                        }
                    }
                }
            }
            answers
        }
        .boxed())
    }
}

/// Where a valid deal's result goes: (request in the group, position in the request).
type Place = (usize, usize);

/// A valid deal for the pool, the analysis its request asked for, and whether the `panic_on_id`
/// test hook picked it.
type Work = (Deal, Option<Options>, bool);

/// The wire form of an analysis. Fields not asked for are empty, as the proto documents.
fn wire_analysis(a: &Analysis) -> proto::Analysis {
    let wire_move = |m: &Move| proto::Move {
        pile_a: u32::from(m.piles[0]),
        pile_b: u32::from(m.piles[1]),
        rank: m.rank.symbol().to_string(),
    };
    proto::Analysis {
        winnable: a.winnable,
        exact: a.exact.as_ref().map(fraction_text).unwrap_or_default(),
        moves: a
            .moves
            .iter()
            .map(|m| proto::MoveOdds {
                r#move: Some(wire_move(&m.play)),
                probability: m.probability,
            })
            .collect(),
        line: a.line.iter().map(wire_move).collect(),
        states: u64::from(a.states),
    }
}

/// Requests queued on the pool together: the future of their responses, or why they could not be
/// queued.
type Started = Result<BoxFuture<'static, Vec<Answered>>, Status>;

/// A finished response and how many of its deals failed, for the call's log line.
struct Answered {
    response: SolveResponse,
    errors: u64,
}

fn internal(e: &PoolError) -> Outcome {
    Outcome::Error(ProtoDealError {
        code: ErrorCode::Internal as i32,
        message: format!("internal error: {e}"),
    })
}

/// The status for a request message over [`Limits::max_message_bytes`]. tonic reports it as
/// `OUT_OF_RANGE`; the gRPC spec, and every other implementation, says `RESOURCE_EXHAUSTED`, and a
/// user needs to know which limit to raise or how to split the request.
pub fn message_too_large(limit: usize) -> Status {
    Status::resource_exhausted(format!(
        "the request message is larger than the limit of {limit} bytes (server flag \
         --max-message-bytes); send fewer deals per request"
    ))
}

/// Whether `status` is tonic's own report of a message over the receive limit.
pub fn is_tonic_too_large(code: Code, message: &str) -> bool {
    code == Code::OutOfRange && message.contains("message length too large")
}

/// A metrics label for an error code.
fn code_name(code: i32) -> &'static str {
    match ErrorCode::try_from(code) {
        Ok(ErrorCode::BadCard) => "bad_card",
        Ok(ErrorCode::CardCount) => "card_count",
        Ok(ErrorCode::DuplicateCard) => "duplicate_card",
        Ok(ErrorCode::Internal) => "internal",
        _ => "unspecified",
    }
}

/// The wire form of a deal's error.
pub fn deal_error(e: &DealError) -> ProtoDealError {
    let code = match e.kind() {
        DealErrorKind::BadCard => ErrorCode::BadCard,
        DealErrorKind::CardCount => ErrorCode::CardCount,
        DealErrorKind::DuplicateCard => ErrorCode::DuplicateCard,
    };
    ProtoDealError {
        code: code as i32,
        message: e.to_string(),
    }
}

/// The response stream of `SolveStream`.
pub type ResponseStream = Pin<Box<dyn Stream<Item = Result<SolveResponse, Status>> + Send>>;

/// What a call's task hands to tonic: a response with the in-flight permits of its deals, which
/// are returned only when tonic takes the response for sending.
type Outgoing = Result<(SolveResponse, Held), Status>;

#[tonic::async_trait]
impl proto::solver_server::Solver for SolverService {
    type SolveStreamStream = ResponseStream;

    async fn solve_stream(
        &self,
        request: Request<Streaming<SolveRequest>>,
    ) -> Result<Response<ResponseStream>, Status> {
        let peer = request.remote_addr();
        self.admit(peer)?;
        let deadline = deadline(&request)?;
        let inbound = request.into_inner();
        // Every queued response holds at least one permit, so this capacity is never the limit.
        let (tx, rx) = mpsc::channel::<Outgoing>(self.limits.max_in_flight.max(1));
        tokio::spawn(self.clone().run_stream(inbound, tx, peer, deadline));
        let responses =
            ReceiverStream::new(rx).map(|item| item.map(|(response, _permit)| response));
        Ok(Response::new(Box::pin(responses)))
    }

    async fn solve(
        &self,
        request: Request<SolveRequest>,
    ) -> Result<Response<SolveResponse>, Status> {
        let peer = request.remote_addr();
        self.admit(peer)?;
        let started = Instant::now();
        let deadline = deadline(&request)?;
        let request = request.into_inner();
        self.check_size(&request)?;
        let deals = request.deals.len();
        let _in_flight = InFlight::new(&self.metrics, deals as i64);
        let work = async {
            // Held until the response is returned, like a stream's permits.
            let _held = self.admission.hold(deals).await;
            self.start(vec![(request, 0)])
                .await?
                .await
                .pop()
                .ok_or_else(|| Status::internal("no response was produced"))
        };
        // Past the deadline the work is dropped, and with it the pool tickets.
        let answered = match deadline {
            Some(at) => tokio::time::timeout_at(at, work)
                .await
                .map_err(|_| Status::deadline_exceeded("the call's deadline passed"))??,
            None => work.await?,
        };
        tracing::info!(
            rpc = "Solve",
            peer = %display_peer(peer),
            deals,
            errors = answered.errors,
            duration_ms = started.elapsed().as_secs_f64() * 1e3,
            "call finished"
        );
        Ok(Response::new(answered.response))
    }
}

impl SolverService {
    /// Runs one `SolveStream` call to its end and logs one line about it.
    ///
    /// Each request takes one permit per deal (at least one) from the call's in-flight budget
    /// before it is read further; the permits come back only when tonic takes its response for
    /// sending. So deals read but not yet handed to the transport never exceed `max_in_flight`,
    /// whether the workers or the client's reading are the bottleneck.
    async fn run_stream(
        self,
        mut inbound: Streaming<SolveRequest>,
        tx: mpsc::Sender<Outgoing>,
        peer: Option<SocketAddr>,
        deadline: Option<tokio::time::Instant>,
    ) {
        let started = Instant::now();
        self.metrics.streams(1);
        // tonic enforces `grpc-timeout` only until the handler returns, not on a streaming body,
        // so the call enforces its own deadline.
        let expiry = tokio::time::sleep_until(
            deadline.unwrap_or_else(|| tokio::time::Instant::now() + FOREVER),
        );
        tokio::pin!(expiry);
        let max_in_flight = self.limits.max_in_flight.max(1);
        let budget = Arc::new(Semaphore::new(max_in_flight));
        let mut abort = self.lifecycle.abort.clone();
        let mut draining = self.lifecycle.draining.clone();
        // Armed when shutdown begins, with `drain_cut_after`: a client still sending then has
        // that long to finish.
        let stop_reading = tokio::time::sleep(FOREVER);
        tokio::pin!(stop_reading);
        let cut_after = self.limits.drain_cut_after;
        let mut drain_armed = false;
        let mut cut_short = false;
        let mut in_flight: FuturesOrdered<BoxFuture<'static, Vec<(Answered, Held)>>> =
            FuturesOrdered::new();
        // A request read from the client, waiting for its permits: the call's own and the
        // server's. The wait is kept across turns of the loop, so it keeps its place in the
        // server-wide queue.
        let mut waiting: Option<SolveRequest> = None;
        let mut acquiring: Option<BoxFuture<'static, Result<Held, AcquireError>>> = None;
        // Requests with their permits go to a helper task that queues their batches on the pool
        // one request after another (queueing waits while the pool's queue is full); it hands back
        // each response's future in order. Meanwhile this loop goes on reading and forwarding.
        let (submit_tx, mut submit_rx) = mpsc::unbounded_channel::<(SolveRequest, u64, Held)>();
        let (started_tx, mut started_rx) = mpsc::unbounded_channel::<(Started, Vec<Held>)>();
        let batch = self.limits.batch.max(1);
        let _submitter = AbortOnDrop(tokio::spawn({
            let service = self.clone();
            async move {
                while let Some(first) = submit_rx.recv().await {
                    // Requests that are already waiting join this one, up to one pool batch.
                    let mut deals = first.0.deals.len();
                    let mut group = vec![first];
                    while deals < batch {
                        let Ok(next) = submit_rx.try_recv() else {
                            break;
                        };
                        deals += next.0.deals.len();
                        group.push(next);
                    }
                    let (requests, permits): (Vec<_>, Vec<_>) = group
                        .into_iter()
                        .map(|(request, first_index, permit)| ((request, first_index), permit))
                        .unzip();
                    let started = service.start(requests).await;
                    if started_tx.send((started, permits)).is_err() {
                        break;
                    }
                }
            }
        }));
        let mut submitting = 0usize;
        let mut next_index = 0u64;
        let mut answered = 0u64;
        let mut errors = 0u64;
        let mut reading = true;
        // A status to end the call with once every earlier response has been sent.
        let mut failure: Option<Status> = None;
        let end = loop {
            if !reading && waiting.is_none() && submitting == 0 && in_flight.is_empty() {
                if let Some(status) = failure.take() {
                    let _ = tx.send(Err(status)).await;
                    break "ended with an error";
                }
                if cut_short {
                    let status = Status::unavailable(format!(
                        "the server is shutting down and stopped reading this stream; results \
                         before index {answered} were sent, resend the deals from index \
                         {answered} on (to another replica)"
                    ));
                    let _ =
                        tokio::time::timeout(Duration::from_secs(1), tx.send(Err(status))).await;
                    break "cut short by shutdown";
                }
                break "completed";
            }
            tokio::select! {
                biased;
                _ = tx.closed() => break "cancelled by the client",
                _ = &mut expiry, if deadline.is_some() => {
                    let status = Status::deadline_exceeded(format!(
                        "the call's deadline passed; results before index {answered} were sent"
                    ));
                    let _ = tokio::time::timeout(Duration::from_secs(1), tx.send(Err(status))).await;
                    break "deadline exceeded";
                }
                true = abort.wait_for(|&a| a).map(|r| r.is_ok()) => {
                    let status = Status::unavailable(format!(
                        "the server is shutting down; results before index {answered} were sent, \
                         resend the deals from index {answered} on"
                    ));
                    // A client that is not reading cannot be told; it sees the stream end.
                    let _ = tokio::time::timeout(Duration::from_secs(1), tx.send(Err(status))).await;
                    break "aborted by shutdown";
                }
                true = draining.wait_for(|&d| d).map(|r| r.is_ok()), if reading && !drain_armed && cut_after.is_some() => {
                    drain_armed = true;
                    let grace = cut_after.unwrap_or(FOREVER);
                    stop_reading.as_mut().reset(tokio::time::Instant::now() + grace);
                }
                _ = &mut stop_reading, if reading && drain_armed => {
                    // The client has not finished sending: what was read is answered, the rest is
                    // left for the client to resend elsewhere, so the drain ends soon.
                    reading = false;
                    cut_short = true;
                }
                Some(group) = in_flight.next() => {
                    let mut gone = false;
                    for (done, permit) in group {
                        answered += done.response.results.len() as u64;
                        self.metrics.in_flight(-(done.response.results.len() as i64));
                        errors += done.errors;
                        if tx.send(Ok((done.response, permit))).await.is_err() {
                            gone = true;
                            break;
                        }
                    }
                    if gone {
                        break "cancelled by the client";
                    }
                }
                Some((started, permits)) = started_rx.recv(), if submitting > 0 => {
                    submitting -= permits.len();
                    match started {
                        Ok(future) => in_flight.push_back(
                            future.map(move |done| done.into_iter().zip(permits).collect()).boxed(),
                        ),
                        Err(status) => {
                            failure = Some(status);
                            reading = false;
                            waiting = None;
                            acquiring = None;
                        }
                    }
                }
                Some(held) = OptionFuture::from(acquiring.as_mut()), if acquiring.is_some() => {
                    acquiring = None;
                    let (Ok(permit), Some(request)) = (held, waiting.take()) else {
                        break "internal error: the in-flight budget closed";
                    };
                    let first_index = next_index;
                    next_index += request.deals.len() as u64;
                    self.metrics.in_flight(request.deals.len() as i64);
                    if submit_tx.send((request, first_index, permit)).is_err() {
                        break "internal error: the submitter stopped";
                    }
                    submitting += 1;
                }
                message = inbound.message(), if reading && waiting.is_none() => {
                    match message {
                        Ok(Some(request)) => match self.check_size(&request) {
                            Ok(()) => {
                                let cost = request.deals.len().clamp(1, max_in_flight);
                                acquiring = Some(
                                    self.admission.hold_with(budget.clone(), cost).boxed(),
                                );
                                waiting = Some(request);
                            }
                            Err(status) => {
                                failure = Some(status);
                                reading = false;
                            }
                        },
                        Ok(None) => reading = false,
                        // RST_STREAM(CANCEL): a cancel, or a deadline enforced by the client.
                        Err(status) if status.code() == Code::Cancelled => {
                            break "cancelled by the client";
                        }
                        Err(status) => {
                            // Undecodable input, or the connection failed: answer what was read,
                            // then the error (if anyone is still there to read it).
                            failure = Some(if is_tonic_too_large(status.code(), status.message()) {
                                message_too_large(self.limits.max_message_bytes)
                            } else {
                                status
                            });
                            reading = false;
                        }
                    }
                }
            }
        };
        self.metrics.streams(-1);
        self.metrics.in_flight(-((next_index - answered) as i64));
        tracing::info!(
            rpc = "SolveStream",
            peer = %display_peer(peer),
            deals = answered,
            errors,
            received = next_index,
            duration_ms = started.elapsed().as_secs_f64() * 1e3,
            end,
            "call finished"
        );
    }
}

/// Stands in for "no deadline": far enough never to fire, near enough not to overflow.
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The call's deadline from its `grpc-timeout` header (`<digits><unit>`, unit one of H M S m u n).
fn deadline<T>(request: &Request<T>) -> Result<Option<tokio::time::Instant>, Status> {
    let Some(value) = request.metadata().get("grpc-timeout") else {
        return Ok(None);
    };
    let bad = || Status::invalid_argument("grpc-timeout is not <digits><H|M|S|m|u|n>");
    let text = value.to_str().map_err(|_| bad())?;
    let split = text.len().checked_sub(1).ok_or_else(bad)?;
    let (digits, unit) = text.split_at(split);
    if digits.is_empty() || digits.len() > 8 {
        return Err(bad());
    }
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let timeout = match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return Err(bad()),
    };
    Ok(Some(tokio::time::Instant::now() + timeout.min(FOREVER)))
}

/// Counts a unary call's deals as in flight until it ends, however it ends.
struct InFlight {
    metrics: Metrics,
    deals: i64,
}

impl InFlight {
    fn new(metrics: &Metrics, deals: i64) -> InFlight {
        metrics.in_flight(deals);
        InFlight {
            metrics: metrics.clone(),
            deals,
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.metrics.in_flight(-self.deals);
    }
}

/// Aborts a helper task when the call that spawned it ends, however it ends.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn display_peer(peer: Option<SocketAddr>) -> String {
    peer.map_or_else(|| "unknown".to_string(), |p| p.to_string())
}
