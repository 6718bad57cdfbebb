//! The `patience.v1.Solver` gRPC service: deals in, probabilities out, in order.
//!
//! The service parses and validates deals itself (cheap, and it keeps bad deals off the workers),
//! then hands the valid ones to the shared [`Pool`] in batches. It never touches a solver table.
//!
//! # Flow control
//! Each `SolveStream` call runs one task that alternates between reading the next request and
//! forwarding the oldest finished response. It reads only while fewer than
//! [`Limits::max_in_flight`] deals of that call are unanswered, and it forwards through a small
//! bounded channel. So a client that sends faster than the workers solve, or reads slower, fills
//! its own window and then HTTP/2 flow control holds it back; the server's memory per call stays
//! bounded and other calls are not slowed.
//!
//! # Cancellation
//! When the client cancels, its deadline passes or its connection drops, tonic drops the response
//! stream; the call's task sees that, stops, and drops its pool tickets, so its queued batches are
//! skipped and a batch being solved stops after the current deal.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::stream::{FuturesOrdered, StreamExt};
use futures::{FutureExt, Stream};
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::deal::{Deal, DealError, DealErrorKind};
use crate::pool::{Pool, PoolError};
use crate::proto::{
    self, DealError as ProtoDealError, ErrorCode, SolveRequest, SolveResponse, result::Outcome,
};
use crate::solver::Solver;

/// Limits that keep one client from taking more than its share.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Deals one request may carry; more is `INVALID_ARGUMENT`.
    pub max_deals_per_request: usize,
    /// Unanswered deals one `SolveStream` call may have before the server stops reading it.
    pub max_in_flight: usize,
    /// Deals per pool job: large enough to amortise the hop to a worker, small enough to spread
    /// one request over every worker.
    pub batch: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_deals_per_request: 10_000,
            max_in_flight: 4_096,
            batch: 32,
        }
    }
}

/// Server-wide switches the service obeys, flipped by the server during shutdown.
#[derive(Clone, Debug)]
pub struct Lifecycle {
    draining: Arc<AtomicBool>,
    abort: watch::Receiver<bool>,
}

/// The server's side of [`Lifecycle`].
#[derive(Debug)]
pub struct LifecycleControl {
    draining: Arc<AtomicBool>,
    abort: watch::Sender<bool>,
}

impl Lifecycle {
    pub fn new() -> (Lifecycle, LifecycleControl) {
        let draining = Arc::new(AtomicBool::new(false));
        let (tx, rx) = watch::channel(false);
        (
            Lifecycle {
                draining: draining.clone(),
                abort: rx,
            },
            LifecycleControl {
                draining,
                abort: tx,
            },
        )
    }
}

impl LifecycleControl {
    /// From now on new calls are refused with `UNAVAILABLE`; calls in flight go on.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
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
}

impl SolverService {
    pub fn new(pool: Arc<Pool>, limits: Limits, lifecycle: Lifecycle) -> Self {
        SolverService {
            pool,
            limits,
            lifecycle,
        }
    }

    fn admit(&self) -> Result<(), Status> {
        if self.lifecycle.draining.load(Ordering::SeqCst) {
            Err(Status::unavailable(
                "the server is shutting down; retry on another replica",
            ))
        } else {
            Ok(())
        }
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

    /// Validates a request's deals and queues the valid ones on the pool, waiting for queue space.
    /// Returns the future of its response, numbered from `first_index`.
    async fn start(
        &self,
        request: SolveRequest,
        first_index: u64,
    ) -> Result<BoxFuture<'static, Answered>, Status> {
        let mut results = Vec::with_capacity(request.deals.len());
        let mut valid: Vec<(usize, Deal)> = Vec::new();
        let mut errors = 0;
        for (i, deal) in request.deals.into_iter().enumerate() {
            let outcome = match Deal::parse(&deal.cards) {
                Ok(parsed) => {
                    valid.push((i, parsed));
                    None
                }
                Err(e) => {
                    errors += 1;
                    Some(Outcome::Error(deal_error(&e)))
                }
            };
            results.push(proto::Result {
                index: first_index + i as u64,
                id: deal.id,
                outcome,
            });
        }

        let mut batches = Vec::new();
        let mut rest = valid.into_iter().peekable();
        while rest.peek().is_some() {
            let (places, deals): (Vec<usize>, Vec<Deal>) =
                rest.by_ref().take(self.limits.batch.max(1)).unzip();
            let ticket = self
                .pool
                .submit_batch(deals, |solver: &mut Solver, deal: Deal| {
                    solver.solve(&deal).probability
                })
                .await
                .map_err(|e| Status::unavailable(e.to_string()))?;
            batches.push((places, ticket));
        }

        Ok(async move {
            for (places, ticket) in batches {
                let outcomes = ticket.await;
                for (n, place) in places.into_iter().enumerate() {
                    let outcome = match &outcomes {
                        Ok(values) => match values.get(n) {
                            Some(Ok(p)) => Outcome::Probability(*p),
                            Some(Err(e)) => internal(e),
                            None => internal(&PoolError::Closed),
                        },
                        Err(e) => internal(e),
                    };
                    if matches!(outcome, Outcome::Error(_)) {
                        errors += 1;
                    }
                    results[place].outcome = Some(outcome);
                }
            }
            Answered {
                response: SolveResponse { results },
                errors,
            }
        }
        .boxed())
    }
}

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

/// Responses a call may have finished but the client not yet read: small, since the in-flight
/// window already keeps the workers busy.
const OUTBOX: usize = 4;

#[tonic::async_trait]
impl proto::solver_server::Solver for SolverService {
    type SolveStreamStream = ResponseStream;

    async fn solve_stream(
        &self,
        request: Request<Streaming<SolveRequest>>,
    ) -> Result<Response<ResponseStream>, Status> {
        self.admit()?;
        let peer = request.remote_addr();
        let inbound = request.into_inner();
        let (tx, rx) = mpsc::channel(OUTBOX);
        tokio::spawn(self.clone().run_stream(inbound, tx, peer));
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn solve(
        &self,
        request: Request<SolveRequest>,
    ) -> Result<Response<SolveResponse>, Status> {
        self.admit()?;
        let started = Instant::now();
        let peer = request.remote_addr();
        let request = request.into_inner();
        self.check_size(&request)?;
        let deals = request.deals.len();
        let answered = self.start(request, 0).await?.await;
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
    async fn run_stream(
        self,
        mut inbound: Streaming<SolveRequest>,
        tx: mpsc::Sender<Result<SolveResponse, Status>>,
        peer: Option<SocketAddr>,
    ) {
        let started = Instant::now();
        let mut abort = self.lifecycle.abort.clone();
        let mut in_flight: FuturesOrdered<BoxFuture<'static, Answered>> = FuturesOrdered::new();
        let mut in_flight_deals = VecDeque::new();
        let mut unanswered = 0usize;
        let mut next_index = 0u64;
        let mut answered = 0u64;
        let mut errors = 0u64;
        let mut reading = true;
        // A status to end the call with once every earlier response has been sent.
        let mut failure: Option<Status> = None;
        let end = loop {
            if !reading && in_flight.is_empty() {
                if let Some(status) = failure.take() {
                    let _ = tx.send(Err(status)).await;
                    break "ended with an error";
                }
                break "completed";
            }
            tokio::select! {
                biased;
                _ = tx.closed() => break "cancelled by the client",
                true = abort.wait_for(|&a| a).map(|r| r.is_ok()) => {
                    let status = Status::unavailable(format!(
                        "the server is shutting down; results before index {answered} were sent, \
                         resend the deals from index {answered} on"
                    ));
                    // A client that is not reading cannot be told; it sees the stream end.
                    let _ = tokio::time::timeout(Duration::from_secs(1), tx.send(Err(status))).await;
                    break "aborted by shutdown";
                }
                Some(done) = in_flight.next() => {
                    unanswered -= in_flight_deals.pop_front().unwrap_or(0);
                    answered += done.response.results.len() as u64;
                    errors += done.errors;
                    if tx.send(Ok(done.response)).await.is_err() {
                        break "cancelled by the client";
                    }
                }
                message = inbound.message(), if reading && unanswered < self.limits.max_in_flight => {
                    match message {
                        Ok(Some(request)) => {
                            if let Err(status) = self.check_size(&request) {
                                failure = Some(status);
                                reading = false;
                                continue;
                            }
                            let n = request.deals.len();
                            match self.start(request, next_index).await {
                                Ok(future) => {
                                    in_flight.push_back(future);
                                    in_flight_deals.push_back(n);
                                    unanswered += n;
                                    next_index += n as u64;
                                }
                                Err(status) => {
                                    failure = Some(status);
                                    reading = false;
                                }
                            }
                        }
                        Ok(None) => reading = false,
                        Err(status) => {
                            // The client reset the stream or sent something undecodable.
                            failure = Some(status);
                            reading = false;
                        }
                    }
                }
            }
        };
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

fn display_peer(peer: Option<SocketAddr>) -> String {
    peer.map_or_else(|| "unknown".to_string(), |p| p.to_string())
}
