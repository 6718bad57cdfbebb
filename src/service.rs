//! The gRPC services: `patience.v1.Solver` (Double Patience deals) and `patience.v1.RpsService`
//! (FZU 2145 cases), one value serving both, on one pool of workers and under one set of limits.
//!
//! The service checks every item itself (cheap, and it keeps bad items off the workers), then
//! hands the valid ones to the shared [`Pool`] in batches. It never touches a solver table.
//!
//! # Layout
//! - this file: the service and its four rpcs, each a thin call into the generic machinery, and
//!   the unary call;
//! - `game.rs`: the `Game` trait, what the machinery needs to know of a game;
//!   `deals.rs`, `rps.rs`: the two games;
//! - `admission.rs`: whether a call may open and what its requests may hold: call caps per
//!   method kind from its service's descriptors, shutdown, the deal budgets ([`Admission`]);
//! - `limits.rs`: [`Limits`], and the statuses that name the limit a client hit;
//! - `lifecycle.rs`: the server's [`Phase`], which every call obeys;
//! - `deadline.rs`: a call's deadline from its `grpc-timeout` header;
//! - `start.rs`: splitting requests and putting their items on the pool in batches;
//! - `stream.rs`: one streaming call, read to sent, in one task; `outbox.rs`: its way out to
//!   tonic, and the stall watch; `end.rs`: how a call ended, where it ends, and its log line;
//! - `spans.rs`: the trace spans of what takes a call's time (admission waits, batches).
//!
//! Every limit that counts deals counts rps cases alike: `--max-deals-per-request`,
//! `--max-in-flight`, `--max-deals-in-flight`.
//!
//! # Flow control
//! A streaming call reads a request only when it has fewer than [`Limits::max_in_flight`] items
//! read but not yet handed to the transport. So a client that sends faster than the workers
//! solve, or reads slower, fills its own window and then HTTP/2 flow control holds it back; the
//! server's memory per call stays bounded and other calls are not slowed. (What the transport has
//! taken is bounded by the client's HTTP/2 receive window: a client that stops reading lets the
//! server solve that much further ahead, no more.)
//!
//! # Cancellation
//! When the client cancels or its deadline passes (both reset the stream), or its connection
//! drops, the call's task sees a cancelled request stream or a dropped response stream, stops, and
//! drops its pool tickets: its queued batches are skipped and a batch being solved stops after
//! the current item. (A tonic client's `cancellation_handle` only sends its reset when its request
//! body is next polled; the in-flight budget keeps the server reading, so that is soon.)

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use tonic::metadata::MetadataValue;
use tonic::{Request, Response, Status, Streaming};
use tracing::Instrument as _;

mod admission;
mod deadline;
mod deals;
mod end;
mod game;
pub mod jobs;
mod lifecycle;
mod limits;
mod outbox;
mod rps;
mod spans;
mod start;
mod stream;

pub use admission::{Admission, Admitted, CallKind, Caps, ServiceKinds, service_kinds};
pub use end::Ending;
pub use lifecycle::{Lifecycle, LifecycleControl, Phase};
pub use limits::Limits;

use admission::InFlight;
use deadline::deadline;
use deals::Deals;
use end::{Account, CallEnd};
use game::Game;
use rps::Rps;
use start::Answered;

use crate::metrics::Metrics;
use crate::pool::Pool;
use crate::proto::reason::Reason;
use crate::proto::{
    self, SolveRequest, SolveResponse, SolveRpsRequest, SolveRpsResponse, SolveRpsStreamRequest,
    SolveRpsStreamResponse,
};
use crate::wire;

/// The gRPC service. Cheap to clone: everything is shared. Calls reach it through the server's
/// call layer, which checks the token and has [`Admission`] decide whether they may open at all.
#[derive(Clone, Debug)]
pub struct SolverService {
    pool: Arc<Pool>,
    limits: Limits,
    lifecycle: Lifecycle,
    metrics: Metrics,
    admission: Admission,
}

impl SolverService {
    pub fn new(
        pool: Arc<Pool>,
        limits: Limits,
        admission: Admission,
        lifecycle: Lifecycle,
        metrics: Metrics,
    ) -> Self {
        SolverService {
            pool,
            limits,
            lifecycle,
            metrics,
            admission,
        }
    }

    /// Opens a streaming call of game `G` from the wire.
    fn open_stream<G: Game>(
        &self,
        request: Request<Streaming<G::StreamRequest>>,
    ) -> Result<Response<GameStream<G::StreamResponse>>, Status> {
        let peer = request.remote_addr();
        let deadline = deadline(request.metadata())?;
        let ending = ending_of(&request);
        let inbound = Box::pin(request.into_inner());
        let mut response = Response::new(self.stream::<G>(inbound, peer, deadline, ending));
        if let Some(features) = G::FEATURES {
            response
                .metadata_mut()
                .insert(wire::FEATURES_HEADER, MetadataValue::from_static(features));
        }
        Ok(response)
    }

    /// A streaming call of game `G` on any stream of requests: its task runs until the call
    /// ends, however it ends, under the call's span, and gives its `ending` its account. The wire's
    /// calls come through
    /// [`Self::open_stream`]; the plain HTTP API's come here directly, with their messages as
    /// they are, never encoded.
    fn stream<G: Game>(
        &self,
        inbound: Inbound<G::StreamRequest>,
        peer: Option<SocketAddr>,
        deadline: Option<tokio::time::Instant>,
        ending: Ending,
    ) -> GameStream<G::StreamResponse> {
        let (out, responses) = outbox::channel(self.limits.max_in_flight, G::results, G::to_stream);
        // Counted before the client has its response headers, so whoever sees the call open sees
        // it counted; the call's task gives it back at its end.
        self.metrics.streams(1);
        let span = ending.span();
        let call = stream::run::<G>(self.clone(), inbound, out, peer, deadline, ending);
        tokio::spawn(call.instrument(span));
        Box::pin(responses)
    }

    /// `SolveStream` in process: the plain HTTP API's deals. The caller has admitted the call
    /// (token, cap) as the call layer admits a call on the wire.
    pub fn solve_stream_in_process(
        &self,
        inbound: Inbound<SolveRequest>,
        peer: Option<SocketAddr>,
        ending: Ending,
    ) -> ResponseStream {
        self.stream::<Deals>(inbound, peer, None, ending)
    }

    /// `SolveRpsStream` in process: the plain HTTP API's cases, as
    /// [`Self::solve_stream_in_process`].
    pub fn solve_rps_stream_in_process(
        &self,
        inbound: Inbound<SolveRpsStreamRequest>,
        peer: Option<SocketAddr>,
        ending: Ending,
    ) -> GameStream<SolveRpsStreamResponse> {
        self.stream::<Rps>(inbound, peer, None, ending)
    }

    /// One unary call of game `G`: the same checks, budget and deadline as a stream's request,
    /// and the same account for its log line, however it ends (one its client cancels is dropped
    /// mid-way, before it can give one).
    async fn unary<G: Game>(
        &self,
        request: Request<G::Request>,
    ) -> Result<Response<G::Response>, Status> {
        let peer = request.remote_addr();
        let ending = ending_of(&request);
        let items = G::items(request.get_ref()) as u64;
        let answered = self.answer_unary::<G>(request).await;
        let (errors, end) = match &answered {
            Ok(answered) => (answered.errors, CallEnd::Completed),
            Err(status) if status.code() == tonic::Code::DeadlineExceeded => {
                (0, CallEnd::DeadlineExceeded)
            }
            Err(_) => (0, CallEnd::Failed),
        };
        ending.account(Account {
            rpc: G::UNARY_RPC,
            game: G::LABEL,
            peer,
            received: items,
            answered: if answered.is_ok() { items } else { 0 },
            errors,
            end,
            status: answered.as_ref().err().cloned(),
        });
        answered.map(|answered| Response::new(answered.response))
    }

    async fn answer_unary<G: Game>(
        &self,
        request: Request<G::Request>,
    ) -> Result<Answered<G::Response>, Status> {
        let deadline = deadline(request.metadata())?;
        let request = request.into_inner();
        G::check_size(self, &request)?;
        let items = G::items(&request);
        let _in_flight = InFlight::new(&self.metrics, items);
        let work = async {
            // Held until the response is returned, like a stream's budget.
            let _held = spans::admission(self.admission.hold(items), items).await;
            let solving = spans::solve(items);
            let solved =
                async { Ok::<_, Status>(self.start::<G>(vec![(request, 0)]).await?.await) };
            solved.instrument(solving).await?.pop().ok_or_else(|| {
                let detail = "no response was produced".to_string();
                Reason::Internal { detail }.status()
            })
        };
        // Past the deadline the work is dropped, and with it the pool tickets.
        match deadline {
            Some(at) => tokio::time::timeout_at(at, work)
                .await
                .map_err(|_| Reason::DeadlineExceeded { resume_index: None }.status())?,
            None => work.await,
        }
    }
}

/// The call's ending, which the call layer opened and put in the request's extensions; a call made
/// around the call layer (a test's, on the service itself) gets one of its own.
fn ending_of<T>(request: &Request<T>) -> Ending {
    request
        .extensions()
        .get::<Ending>()
        .cloned()
        .unwrap_or_else(Ending::detached)
}

/// The request stream of a streaming call: tonic's, or the plain HTTP API's.
pub type Inbound<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;
/// The response stream of a streaming rpc.
pub type GameStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;
/// The response stream of `SolveStream`.
pub type ResponseStream = GameStream<SolveResponse>;

#[tonic::async_trait]
impl proto::solver_server::Solver for SolverService {
    type SolveStreamStream = ResponseStream;

    async fn solve_stream(
        &self,
        request: Request<Streaming<SolveRequest>>,
    ) -> Result<Response<ResponseStream>, Status> {
        self.open_stream::<Deals>(request)
    }

    async fn solve(
        &self,
        request: Request<SolveRequest>,
    ) -> Result<Response<SolveResponse>, Status> {
        self.unary::<Deals>(request).await
    }
}

#[tonic::async_trait]
impl proto::rps_service_server::RpsService for SolverService {
    type SolveRpsStreamStream = GameStream<SolveRpsStreamResponse>;

    async fn solve_rps_stream(
        &self,
        request: Request<Streaming<SolveRpsStreamRequest>>,
    ) -> Result<Response<Self::SolveRpsStreamStream>, Status> {
        self.open_stream::<Rps>(request)
    }

    async fn solve_rps(
        &self,
        request: Request<SolveRpsRequest>,
    ) -> Result<Response<SolveRpsResponse>, Status> {
        self.unary::<Rps>(request).await
    }
}
