//! What the client needs to know about a game: which rpc a lane opens, how many items a chunk
//! holds, and how a response is checked. Everything else (dispatching, hedging, resending,
//! reconnecting) is the same for both games.

use futures::future::BoxFuture;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;
use tonic::{Status, Streaming};

use super::answers::{self, Answers};
use super::status::Verdict;
use crate::auth::AddBearer;
use crate::proto::rps_service_client::RpsServiceClient;
use crate::proto::solver_client::SolverClient;
use crate::proto::{
    self, SolveRequest, SolveResponse, SolveRpsStreamRequest, SolveRpsStreamResponse,
};
use crate::solver::Options;

/// A game the client can stream to daemons.
pub trait Protocol: Send + Sync + 'static {
    /// One chunk, as sent (and resent) to a daemon.
    type Request: prost::Message + Clone + Send + Sync + std::fmt::Debug + 'static;
    type Response: Send + 'static;

    /// Items in a chunk: what a response must answer.
    fn items(request: &Self::Request) -> usize;

    /// Opens the game's streaming call on `channel`.
    fn open(
        channel: Channel,
        bearer: AddBearer,
        requests: ReceiverStream<Self::Request>,
    ) -> BoxFuture<'static, Result<Streaming<Self::Response>, Status>>;

    /// A response checked against the chunk it answers (`sent` items) and the analysis the run
    /// asked for.
    fn check(
        response: Self::Response,
        sent: usize,
        asked: Option<Options>,
    ) -> Result<Answers, Verdict>;
}

/// Double Patience deals, on `patience.v1.Solver/SolveStream`.
#[derive(Debug)]
pub struct DealProtocol;

impl Protocol for DealProtocol {
    type Request = SolveRequest;
    type Response = SolveResponse;

    fn items(request: &SolveRequest) -> usize {
        request.deals.len()
    }

    fn open(
        channel: Channel,
        bearer: AddBearer,
        requests: ReceiverStream<SolveRequest>,
    ) -> BoxFuture<'static, Result<Streaming<SolveResponse>, Status>> {
        Box::pin(async move {
            let mut client = SolverClient::with_interceptor(channel, bearer)
                .max_decoding_message_size(usize::MAX);
            Ok(client.solve_stream(requests).await?.into_inner())
        })
    }

    fn check(
        response: SolveResponse,
        sent: usize,
        asked: Option<Options>,
    ) -> Result<Answers, Verdict> {
        answers::check(response.results, sent, asked)
    }
}

/// FZU 2145 cases, on `patience.v1.RpsService/SolveRpsStream`.
#[derive(Debug)]
pub struct RpsProtocol;

impl Protocol for RpsProtocol {
    type Request = SolveRpsStreamRequest;
    type Response = SolveRpsStreamResponse;

    fn items(request: &SolveRpsStreamRequest) -> usize {
        request.cases.len()
    }

    fn open(
        channel: Channel,
        bearer: AddBearer,
        requests: ReceiverStream<SolveRpsStreamRequest>,
    ) -> BoxFuture<'static, Result<Streaming<SolveRpsStreamResponse>, Status>> {
        Box::pin(async move {
            let mut client = RpsServiceClient::with_interceptor(channel, bearer)
                .max_decoding_message_size(usize::MAX);
            Ok(client.solve_rps_stream(requests).await?.into_inner())
        })
    }

    fn check(
        response: SolveRpsStreamResponse,
        sent: usize,
        _asked: Option<Options>,
    ) -> Result<Answers, Verdict> {
        answers::check_rps(response.results, sent)
    }
}

/// The cases of one chunk, for [`RpsProtocol`].
pub fn rps_request(cases: &[crate::rps::Case]) -> SolveRpsStreamRequest {
    SolveRpsStreamRequest {
        cases: cases.iter().map(proto::RpsCase::from).collect(),
    }
}
