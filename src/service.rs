//! The `patience.v1.Solver` gRPC service: deals in, probabilities out, in order.
//!
//! The service parses and validates deals itself (cheap, and it keeps bad deals off the workers),
//! then hands the valid ones to the shared [`Pool`] in batches. It never touches a solver table.
//!
//! # Layout
//! - this file: the service and its two rpcs;
//! - `limits.rs`: [`Limits`] and the statuses that name the limit a client hit;
//! - `lifecycle.rs`: the shutdown switches, [`Lifecycle`] and [`LifecycleControl`];
//! - `admission.rs`: the server-wide deal budget;
//! - `deadline.rs`: a call's deadline from its `grpc-timeout` header;
//! - `start.rs`: validating deals and queueing them on the pool in batches;
//! - `stream.rs`: one `SolveStream` call as a state type, from its first request to its log line.
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
use std::time::Instant;

use futures::Stream;
use futures::stream::StreamExt;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

mod admission;
mod deadline;
mod lifecycle;
mod limits;
mod start;
mod stream;

pub use lifecycle::{Lifecycle, LifecycleControl};
pub use limits::{Limits, is_tonic_too_large, message_too_large};

use admission::Admission;
use deadline::deadline;
use stream::Outgoing;

use crate::metrics::Metrics;
use crate::pool::Pool;
use crate::proto::{self, SolveRequest, SolveResponse};

/// The gRPC service. Cheap to clone: everything is shared.
#[derive(Clone, Debug)]
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
        if self.lifecycle.is_draining() {
            self.metrics
                .call_refused("shutting_down", peer, "shutting down");
            return Err(Status::unavailable(
                "the server is shutting down; retry on another replica",
            ));
        }
        self.admission.admit(peer)
    }
}

/// The response stream of `SolveStream`.
pub type ResponseStream = Pin<Box<dyn Stream<Item = Result<SolveResponse, Status>> + Send>>;

#[tonic::async_trait]
impl proto::solver_server::Solver for SolverService {
    type SolveStreamStream = ResponseStream;

    async fn solve_stream(
        &self,
        request: Request<Streaming<SolveRequest>>,
    ) -> Result<Response<ResponseStream>, Status> {
        let peer = request.remote_addr();
        self.admit(peer)?;
        let deadline = deadline(request.metadata())?;
        let inbound = request.into_inner();
        // Every queued response holds at least one permit, so this capacity is never the limit.
        let (tx, rx) = mpsc::channel::<Outgoing>(self.limits.max_in_flight.max(1));
        tokio::spawn(stream::run(self.clone(), inbound, tx, peer, deadline));
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
        let deadline = deadline(request.metadata())?;
        let request = request.into_inner();
        self.limits.check_size(&request)?;
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

fn display_peer(peer: Option<SocketAddr>) -> String {
    peer.map_or_else(|| "unknown".to_string(), |p| p.to_string())
}
