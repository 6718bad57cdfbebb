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
use crate::wire;

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
    ) -> BoxFuture<'static, Result<Opened<Self::Response>, Status>>;

    /// A request as a daemon reads it that did not announce what [`Self::request`] may use (an
    /// older one): the same items, in the first version's fields.
    fn plain(request: Self::Request) -> Self::Request;

    /// A response checked against the chunk it answers (`sent` items) and the analysis the run
    /// asked for.
    fn check(
        response: Self::Response,
        sent: usize,
        asked: Option<Options>,
    ) -> Result<Answers, Verdict>;
}

/// A call a daemon took: its responses, and whether it reads requests as [`Protocol::request`]
/// builds them (it announced their features in its response headers) or only as
/// [`Protocol::plain`] makes them.
#[derive(Debug)]
pub struct Opened<R> {
    pub responses: Streaming<R>,
    pub current: bool,
}

/// Whether a call's response headers announce `feature` in `patience-features`.
fn announces(metadata: &MetadataMap, feature: &str) -> bool {
    metadata
        .get_all(wire::FEATURES_HEADER)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|f| f.trim() == feature)
}

/// Double Patience deals, on `patience.v1.Solver/SolveStream`. Full deals go packed
/// (`packed_deals`, 36 bytes each) to daemons that read them, a chunk holding a position as text.
#[derive(Debug)]
pub struct DealProtocol;

impl Protocol for DealProtocol {
    type Item = Deal;
    type Reader<R: BufRead> = DealReader<R>;
    type Request = SolveRequest;
    type Response = SolveResponse;
    const RPC: &'static str = "patience.v1.Solver/SolveStream";

    fn request(deals: &[Deal], analysis: Option<proto::AnalysisOptions>) -> SolveRequest {
        // Probabilities come back packed when nothing else is asked (a daemon that does not know
        // the field answers with results, which `check` reads as well).
        let packed_answers = analysis.is_none();
        let mut packed_deals = Vec::with_capacity(deals.len() * Deal::PACKED);
        if deals.iter().all(|deal| deal.pack_into(&mut packed_deals)) {
            return SolveRequest {
                deals: Vec::new(),
                analysis,
                packed_deals,
                packed_answers,
            };
        }
        SolveRequest {
            deals: deals.iter().map(proto::Deal::from).collect(),
            analysis,
            packed_deals: Vec::new(),
            packed_answers,
        }
    }

    fn items(request: &SolveRequest) -> usize {
        request.deals.len() + request.packed_deals.len().div_ceil(Deal::PACKED)
    }

    /// Packed deals unpacked into text ones; this client packs only whole deals it read, so
    /// every one unpacks.
    fn plain(mut request: SolveRequest) -> SolveRequest {
        let packed = std::mem::take(&mut request.packed_deals);
        request.deals.extend(
            packed
                .chunks(Deal::PACKED)
                .filter_map(|bytes| Deal::from_packed(bytes).ok())
                .map(|deal| proto::Deal::from(&deal)),
        );
        request
    }

    fn results(response: &SolveResponse) -> usize {
        response.results.len() + response.probabilities.len()
    }

    fn open(
        channel: Channel,
        bearer: AddBearer,
        requests: ReceiverStream<SolveRequest>,
        metadata: MetadataMap,
    ) -> BoxFuture<'static, Result<Opened<SolveResponse>, Status>> {
        Box::pin(async move {
            let mut client = SolverClient::with_interceptor(channel, bearer)
                .max_decoding_message_size(usize::MAX);
            let request = Request::from_parts(metadata, Extensions::default(), requests);
            let response = client.solve_stream(request).await?;
            let current = announces(response.metadata(), wire::PACKED_DEALS);
            Ok(Opened {
                responses: response.into_inner(),
                current,
            })
        })
    }

    fn check(
        response: SolveResponse,
        sent: usize,
        asked: Option<Options>,
    ) -> Result<Answers, Verdict> {
        if response.probabilities.is_empty() {
            answers::check(response.results, sent, asked)
        } else if response.results.is_empty() {
            answers::check_packed(response.probabilities, sent, asked)
        } else {
            Err(Verdict::Failed(
                "it sent a malformed answer: both results and packed probabilities".into(),
            ))
        }
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
    ) -> BoxFuture<'static, Result<Opened<SolveRpsStreamResponse>, Status>> {
        Box::pin(async move {
            let mut client = RpsServiceClient::with_interceptor(channel, bearer)
                .max_decoding_message_size(usize::MAX);
            let request = Request::from_parts(metadata, Extensions::default(), requests);
            Ok(Opened {
                responses: client.solve_rps_stream(request).await?.into_inner(),
                current: true,
            })
        })
    }

    /// The cases' fields are the first version's.
    fn plain(request: SolveRpsStreamRequest) -> SolveRpsStreamRequest {
        request
    }

    fn check(
        response: SolveRpsStreamResponse,
        sent: usize,
        _asked: Option<Options>,
    ) -> Result<Answers, Verdict> {
        answers::check_rps(response.results, sent)
    }
}
