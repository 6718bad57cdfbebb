//! What both sides of the wire agree a game's streaming call carries: its items as request
//! messages, and a response checked into answers. `patience client` sends the requests to
//! daemons ([`crate::client::Protocol`] adds how a call is opened on a channel); the daemon's
//! plain HTTP API sends the same requests to its own service in process. Both need the same
//! chunks and the same checks, and neither may import the other, so they live here, below both.
//!
//! - [`Exchange`]: one game's requests and responses; [`DealProtocol`] and [`RpsProtocol`].
//! - [`answers`]: a response checked before anyone prints it, into [`Answers`].
//! - [`Chunk`]: a batch of a file's entries as the ordered pipeline's piece and one request.

pub mod answers;
mod games;

use std::io::BufRead;

use tokio::sync::oneshot;

pub use answers::{Answer, Answers};
pub use games::{DealProtocol, RpsProtocol};

use crate::items::Items;
use crate::ordered::Piece;
use crate::proto;
use crate::solver::Options;

/// Why a response cannot be printed. Which side of the wire reads it decides what that means:
/// the client fails the daemon or stops the run (`client::status::Verdict`), the HTTP API ends
/// its call with an internal error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unfit {
    /// The response does not answer what was sent, or a field of it makes no sense: the daemon
    /// that sent it is broken, and another may answer.
    #[error("{0}")]
    Malformed(String),
    /// The response shows the daemon cannot do what the requests ask (an analysis, from a daemon
    /// older than it): every daemon of that version would answer the same.
    #[error("{0}")]
    Unsupported(String),
}

/// A game's streaming call as messages: what the client and the HTTP API both send and check.
pub trait Exchange: Send + Sync + 'static {
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

    /// A request as a daemon reads it that did not announce what [`Self::request`] may use (an
    /// older one): the same items, in the first version's fields.
    fn plain(request: Self::Request) -> Self::Request;

    /// A response checked against the chunk it answers (`sent` items) and the analysis the run
    /// asked for.
    fn check(
        response: Self::Response,
        sent: usize,
        asked: Option<Options>,
    ) -> Result<Answers, Unfit>;
}

/// One request message and where its answers go.
#[derive(Debug)]
pub struct Chunk<G: Exchange = DealProtocol> {
    pub request: G::Request,
    pub reply: oneshot::Sender<Answers>,
}

impl<G: Exchange> Chunk<G> {
    /// A batch of entries (an item, or a bad item's message) as the ordered pipeline's piece,
    /// and the chunk of its good items whose answers the piece waits for (none when every entry
    /// is bad). `analysis`: what every deal asks for beside its probability.
    pub fn of(
        entries: Vec<Result<G::Item, String>>,
        at: u64,
        analysis: Option<proto::AnalysisOptions>,
    ) -> (Piece<Answer>, Option<Chunk<G>>) {
        let mut chunk = None;
        let piece = Piece::batch(entries, at, |items| {
            let (reply, answers) = oneshot::channel();
            chunk = Some(Chunk {
                request: G::request(&items, analysis),
                reply,
            });
            Box::pin(async { answers.await.ok() })
        });
        (piece, chunk)
    }
}
