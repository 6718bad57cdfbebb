//! What the client side of the wire needs to know about a game: its files' items and reader,
//! which rpc a stream opens, how a chunk of items becomes a request, and how a response is
//! checked into [`Answers`]. Everything else (dispatching, hedging, resending, reconnecting,
//! printing in order) is the same for both games. The one trait for every caller of the games'
//! streaming rpcs: `patience client` (through lanes, on a `Channel`) and the daemon's plain HTTP
//! API (its items, requests and checked answers; it opens its calls on the service in process).

use std::io::BufRead;

use futures::future::BoxFuture;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Extensions;
use tonic::metadata::MetadataMap;
use tonic::transport::Channel;
use tonic::{Request, Status, Streaming};

use super::answers::{self, Answers};
use super::status::Verdict;
use crate::auth::AddBearer;
use crate::deal::{Deal, DealReader};
use crate::items::Items;
use crate::proto::rps_service_client::RpsServiceClient;
use crate::proto::solver_client::SolverClient;
use crate::proto::{
    self, SolveRequest, SolveResponse, SolveRpsStreamRequest, SolveRpsStreamResponse,
};
use crate::rps::{Case, CaseReader};
use crate::solver::Options;

/// A game the client can stream to daemons.
pub trait Protocol: Send + Sync + 'static {
    /// One item of the game's files: a deal, a case.
    type Item: Send + 'static;
    /// The game's file reader over any input, the same as in-process.
    type Reader<R: BufRead>: Items<R, Item = Self::Item>;
    /// One chunk, as sent (and resent) to a daemon.
    type Request: prost::Message + Clone + Send + Sync + std::fmt::Debug + 'static;
    type Response: Send + 'static;
    /// The streaming call, as `package.Service/Method`.
    const RPC: &'static str;

    /// A chunk of items as its request; `analysis`, what every deal asks for beside its
    /// probability (the second game has none).
    fn request(items: &[Self::Item], analysis: Option<proto::AnalysisOptions>) -> Self::Request;

    /// Items in a chunk: what a response must answer.
    fn items(request: &Self::Request) -> usize;

    /// Results in a response.
    fn results(response: &Self::Response) -> usize;

    /// Opens the game's streaming call on `channel`, with the bearer token and `metadata` (the
    /// call's trace context).
    fn open(
        channel: Channel,
        bearer: AddBearer,
        requests: ReceiverStream<Self::Request>,
        metadata: MetadataMap,
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
    type Item = Deal;
    type Reader<R: BufRead> = DealReader<R>;
    type Request = SolveRequest;
    type Response = SolveResponse;
    const RPC: &'static str = "patience.v1.Solver/SolveStream";

    fn request(deals: &[Deal], analysis: Option<proto::AnalysisOptions>) -> SolveRequest {
        SolveRequest {
            deals: deals.iter().map(proto::Deal::from).collect(),
            analysis,
        }
    }

    fn items(request: &SolveRequest) -> usize {
        request.deals.len()
    }

    fn results(response: &SolveResponse) -> usize {
        response.results.len()
    }

    fn open(
        channel: Channel,
        bearer: AddBearer,
        requests: ReceiverStream<SolveRequest>,
        metadata: MetadataMap,
    ) -> BoxFuture<'static, Result<Streaming<SolveResponse>, Status>> {
        Box::pin(async move {
            let mut client = SolverClient::with_interceptor(channel, bearer)
                .max_decoding_message_size(usize::MAX);
            let request = Request::from_parts(metadata, Extensions::default(), requests);
            Ok(client.solve_stream(request).await?.into_inner())
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
    type Item = Case;
    type Reader<R: BufRead> = CaseReader<R>;
    type Request = SolveRpsStreamRequest;
    type Response = SolveRpsStreamResponse;
    const RPC: &'static str = "patience.v1.RpsService/SolveRpsStream";

    fn request(cases: &[Case], _: Option<proto::AnalysisOptions>) -> SolveRpsStreamRequest {
        SolveRpsStreamRequest {
            cases: cases.iter().map(proto::RpsCase::from).collect(),
        }
    }

    fn items(request: &SolveRpsStreamRequest) -> usize {
        request.cases.len()
    }

    fn results(response: &SolveRpsStreamResponse) -> usize {
        response.results.len()
    }

    fn open(
        channel: Channel,
        bearer: AddBearer,
        requests: ReceiverStream<SolveRpsStreamRequest>,
        metadata: MetadataMap,
    ) -> BoxFuture<'static, Result<Streaming<SolveRpsStreamResponse>, Status>> {
        Box::pin(async move {
            let mut client = RpsServiceClient::with_interceptor(channel, bearer)
                .max_decoding_message_size(usize::MAX);
            let request = Request::from_parts(metadata, Extensions::default(), requests);
            Ok(client.solve_rps_stream(request).await?.into_inner())
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
