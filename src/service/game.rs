//! What the service's machinery needs to know about a game: its messages, how a request splits
//! into items for the workers, and how their results go back into a response.
//!
//! Both games share everything else (limits, budgets, streams, deadlines, drain, logs), so a
//! promise made for deals holds for the rps cases by construction.

use tonic::Status;

use super::SolverService;
use crate::pool::{Engines, PoolError};

/// A request split by [`Game::split`].
pub(super) struct Split<R, W> {
    /// The response, with the bad items answered.
    pub response: R,
    /// How many items were bad.
    pub errors: u64,
    /// The valid items, with their positions in the response.
    pub valid: Vec<(usize, W)>,
}

/// A game served by [`SolverService`]. Its items are what the limits count (deals or cases).
pub(super) trait Game: Send + Sync + 'static {
    /// A unary call's request; a stream's messages are converted to it on arrival.
    type Request: Send + 'static;
    type Response: Send + 'static;
    type StreamRequest: Send + 'static;
    type StreamResponse: Send + 'static;
    /// A valid item, ready for a worker.
    type Work: Send + 'static;
    /// What the worker hands back for one item.
    type Solved: Send + 'static;

    /// The `game` label of the metrics and the log lines.
    const LABEL: &'static str;
    /// The rpc names, for the log lines.
    const STREAM_RPC: &'static str;
    const UNARY_RPC: &'static str;
    /// What the items are called in messages to clients: "deals", "cases".
    const ITEMS: &'static str;
    /// What its requests may carry beyond the first version of the API, told in the
    /// `patience-features` response header of a stream, so a client sends it only to a server
    /// that reads it (an older one ignores the field): "packed-deals".
    const FEATURES: Option<&'static str>;

    fn items(request: &Self::Request) -> usize;
    fn results(response: &Self::Response) -> usize;
    fn from_stream(request: Self::StreamRequest) -> Self::Request;
    fn to_stream(response: Self::Response) -> Self::StreamResponse;

    /// Checks every item of a request: the bad ones are answered (and counted in the metrics) at
    /// once, the valid ones go to the workers. Cheap: runs on the async side.
    fn split(
        service: &SolverService,
        request: Self::Request,
        first_index: u64,
    ) -> Split<Self::Response, Self::Work>;

    /// Solves one item on a worker.
    fn solve(engines: &mut Engines, work: Self::Work) -> Self::Solved;

    /// Puts an item's result at its position, counting it in the metrics; true when it is an
    /// error.
    fn fill(
        service: &SolverService,
        response: &mut Self::Response,
        at: usize,
        solved: Result<Self::Solved, PoolError>,
    ) -> bool;

    /// Refuses a request with more items than one may carry, naming the flag, so the client knows
    /// to split it rather than retry it.
    fn check_size(service: &SolverService, request: &Self::Request) -> Result<(), Status> {
        service.limits.check_size(Self::items(request), Self::ITEMS)
    }
}
