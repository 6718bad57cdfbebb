//! What the client side of the wire adds to a game's [`Exchange`]: which rpc a stream opens on a
//! channel, and whether the daemon reads the current requests. Everything else (dispatching,
//! hedging, resending, reconnecting, printing in order) is the same for both games; the requests
//! and the checks of their responses are the daemon's plain HTTP API's too, so they live in
//! [`crate::exchange`].

use futures::future::BoxFuture;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Extensions;
use tonic::metadata::MetadataMap;
use tonic::transport::Channel;
use tonic::{Request, Status, Streaming};

use crate::auth::AddBearer;
pub use crate::exchange::{DealProtocol, Exchange, RpsProtocol};
use crate::proto::rps_service_client::RpsServiceClient;
use crate::proto::solver_client::SolverClient;
use crate::proto::{SolveRequest, SolveResponse, SolveRpsStreamRequest, SolveRpsStreamResponse};
use crate::wire;

/// A game the client can stream to daemons.
pub trait Protocol: Exchange {
    /// Opens the game's streaming call on `channel`, with the bearer token and `metadata` (the
    /// call's trace context).
    fn open(
        channel: Channel,
        bearer: AddBearer,
        requests: ReceiverStream<Self::Request>,
        metadata: MetadataMap,
    ) -> BoxFuture<'static, Result<Opened<Self::Response>, Status>>;
}

/// A call a daemon took: its responses, and whether it reads requests as [`Exchange::request`]
/// builds them (it announced their features in its response headers) or only as
/// [`Exchange::plain`] makes them.
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

/// Full deals go packed (`packed_deals`, 36 bytes each) to daemons that announce they read them.
impl Protocol for DealProtocol {
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
}

impl Protocol for RpsProtocol {
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
}
