//! One call of the plain HTTP API, made on the service in process and printed through the
//! ordered pipeline ([`crate::ordered`]) into the HTTP body, as `patience client` prints into
//! standard output. The call is entered in the call layer first (token, cap, series), as a call
//! of its rpc on the wire is. Then four parts run at once:
//! - the **reader**, on a blocking thread: the body through the game's reader, in batches cut as
//!   `solve` cuts them (full, or when nothing more has arrived: someone typing deals into
//!   `curl -T -` sees each answer at once), each batch a piece for the printer and a chunk of its
//!   good items ([`Chunk::of`], as `patience client` makes them);
//! - the **feeder**: each chunk's request to the service, its reply queued for the answerer;
//! - the **answerer**: each response checked ([`Exchange::check`]) and handed to its chunk's
//!   reply, in order;
//! - the **printer**: [`ordered::drain`] into [`HttpLines`], bad items' `error:` lines in their
//!   places.
//!
//! Everything between is bounded: the reader waits for room among the pieces and for the feeder,
//! the feeder for the service's budget (its requests are read only within `--max-in-flight`),
//! and the printer for the client to take the lines. So a call holds what its budget allows,
//! however large its body.

use std::io::{self, BufReader, Read};
use std::net::SocketAddr;
use std::pin::Pin;

use bytes::Bytes;
use futures::{Stream, StreamExt as _, TryStreamExt as _};
use tokio::sync::{mpsc, oneshot};
use tokio_util::io::{StreamReader, SyncIoBridge};
use tonic::body::Body;
use tonic::{Code, Status};

use crate::compressed::{self, Codec};
use crate::exchange::{Answer, Answers, Chunk, DealProtocol, Exchange, RpsProtocol};
use crate::items::{Items, Step};
use crate::ordered::{self, Drained, Piece, Stopped};
use crate::render::columns::ArrowStream;
use crate::render::{OutputFormat, Render};
use crate::server::call::{Calls, InProcess};
use crate::service::{Ending, GameStream, Inbound, SolverService};
use crate::solver::Options;

/// Large enough that a big upload is batched well; the reader still holds one line at a time.
const BUFFER: usize = 1 << 16;

/// Which game a path serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Deals,
    Rps,
}

impl Endpoint {
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::Deals => "/v1/solve",
            Endpoint::Rps => "/v1/rps",
        }
    }

    pub fn file(self) -> &'static str {
        match self {
            Endpoint::Deals => "deal",
            Endpoint::Rps => "FZU 2145 case",
        }
    }

    pub fn parameters(self) -> &'static str {
        match self {
            Endpoint::Deals => "precision, format, exact, moves and line",
            Endpoint::Rps => "precision and format",
        }
    }

    /// The rpc a call of the path is, counted and admitted as.
    pub fn rpc(self) -> &'static str {
        match self {
            Endpoint::Deals => "/patience.v1.Solver/SolveStream",
            Endpoint::Rps => "/patience.v1.RpsService/SolveRpsStream",
        }
    }

    /// Items per request: as `patience client` sends deals; cases, as `rps` batches them.
    pub fn batch(self) -> usize {
        match self {
            Endpoint::Deals => 256,
            Endpoint::Rps => 16,
        }
    }
}

/// Why a call's lines stop short.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The gRPC call failed: refused, or ended by its deadline, the drain, a stall.
    #[error("{}", .0.message())]
    ApiCall(Status),
    /// The body could not be read on (not text, or the client's upload broke off).
    #[error("{0}")]
    Unreadable(String),
    #[error("internal error: {0}")]
    Internal(String),
}

/// What a call needs from its HTTP request.
pub struct ApiCall {
    /// Where the call is admitted and counted, as a call of its rpc.
    pub calls: Calls,
    pub service: SolverService,
    /// The request's headers: its token, checked as a gRPC call's is, and its trace context.
    pub headers: http::HeaderMap,
    /// Who called, for the logs and the refusals.
    pub peer: Option<SocketAddr>,
    pub render: Render,
    /// Answers as an Arrow IPC stream (`Accept: application/vnd.apache.arrow.stream`) rather
    /// than lines.
    pub arrow: bool,
    pub batch: usize,
    /// Items (and bad items' messages) read ahead of the printer, at most about.
    pub max_queued: usize,
    /// The compression the body's `Content-Encoding` names, if any.
    pub encoded: Option<Codec>,
}

/// How a game's stream is opened on the service, in process.
type OpenStream<G> = fn(
    &SolverService,
    Inbound<<G as Exchange>::Request>,
    Option<SocketAddr>,
    Ending,
) -> GameStream<<G as Exchange>::Response>;

/// Starts the call: its lines, or its failure, come on the receiver; it ends when they end.
pub fn run(game: Endpoint, call: ApiCall, body: Body) -> mpsc::Receiver<Result<Bytes, Failure>> {
    let (lines, receiver) = mpsc::channel(4);
    let reader = body_reader(body, call.encoded);
    match game {
        Endpoint::Deals => start::<DealProtocol>(
            game,
            call,
            reader,
            lines,
            SolverService::solve_stream_in_process,
        ),
        Endpoint::Rps => start::<RpsProtocol>(
            game,
            call,
            reader,
            lines,
            SolverService::solve_rps_stream_in_process,
        ),
    }
    receiver
}

/// The body as a blocking reader, for the game readers.
type BodyReader = BufReader<Box<dyn Read + Send + 'static>>;

/// The body as a blocking reader, for the game readers. Made in the async context (the bridge
/// needs its runtime), and finished on the reader's thread: the decoder reads the body's first
/// bytes as soon as it is made, which must not block the runtime. A body compressed with gzip or
/// zstd is read decoded, as a file is; one whose `Content-Encoding` names a compression its
/// bytes are not fails at its first read, in words.
fn body_reader(body: Body, encoded: Option<Codec>) -> impl FnOnce() -> BodyReader + Send + 'static {
    let bytes: Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send>> =
        Box::pin(http_body_util::BodyDataStream::new(body).map_err(io::Error::other));
    let raw = SyncIoBridge::new(StreamReader::new(bytes));
    move || {
        let inner: Box<dyn Read + Send> = match compressed::decoded(Box::new(raw)) {
            Ok((found, _)) if encoded.is_some_and(|said| found != Some(said)) => {
                Box::new(Refused(format!(
                    "the body is sent with Content-Encoding: {}, but it is not {0} data",
                    encoded.map_or("identity", Codec::name)
                )))
            }
            Ok((_, reader)) => reader,
            Err(e) => Box::new(Refused(format!("cannot read the body: {e}"))),
        };
        BufReader::with_capacity(BUFFER, inner)
    }
}

/// A body that cannot be read, for the reason given.
struct Refused(String);

impl Read for Refused {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        Err(io::Error::new(io::ErrorKind::InvalidData, self.0.clone()))
    }
}

fn start<G: Exchange>(
    game: Endpoint,
    call: ApiCall,
    body: impl FnOnce() -> BodyReader + Send + 'static,
    lines: mpsc::Sender<Result<Bytes, Failure>>,
    open: OpenStream<G>,
) {
    // Refused before the body is read at all.
    let entered = match call
        .calls
        .enter(game.rpc(), game.path(), &call.headers, call.peer)
    {
        Ok(entered) => entered,
        Err(status) => {
            let _ = lines.try_send(Err(Failure::ApiCall(status)));
            return;
        }
    };
    let (pieces_tx, pieces) = mpsc::channel(call.max_queued / call.batch.max(1) + 1);
    let (submit, chunks) = mpsc::channel(1);
    let (batch, render) = (call.batch, call.render);
    // JSON lines carry `winnable` and `states` even when nothing more is asked.
    let analysis = (render.format == OutputFormat::Json).then(|| render.asked.into());
    tokio::task::spawn_blocking(move || read::<G>(body(), batch, analysis, &pieces_tx, &submit));
    tokio::spawn(translate::<G>(call, entered, open, pieces, chunks, lines));
}

/// The reader: see the module's doc. Stops when the printer or the feeder has gone.
fn read<G: Exchange>(
    body: BodyReader,
    max: usize,
    analysis: Option<crate::proto::AnalysisOptions>,
    pieces: &mpsc::Sender<Piece<Answer>>,
    submit: &mpsc::Sender<Chunk<G>>,
) {
    let send = |batch: Vec<_>| {
        let (piece, chunk) = Chunk::<G>::of(batch, 0, analysis);
        pieces.blocking_send(piece).is_ok()
            && chunk.is_none_or(|chunk| submit.blocking_send(chunk).is_ok())
    };
    let mut items = G::Reader::over(body);
    let mut batch = Vec::with_capacity(max);
    while let Some(step) = items.step() {
        match step {
            Step::Item(item) => batch.push(Ok(item)),
            Step::Bad(message) => batch.push(Err(message)),
            Step::Failed(message) => {
                if batch.is_empty() || send(batch) {
                    let _ = pieces.blocking_send(Piece::Unreadable(message));
                }
                return;
            }
        }
        if (batch.len() >= max || items.input().buffer().is_empty())
            && !send(std::mem::replace(&mut batch, Vec::with_capacity(max)))
        {
            return;
        }
    }
    if !batch.is_empty() {
        send(batch);
    }
}

async fn translate<G: Exchange>(
    call: ApiCall,
    mut entered: InProcess,
    open: OpenStream<G>,
    mut pieces: mpsc::Receiver<Piece<Answer>>,
    chunks: mpsc::Receiver<Chunk<G>>,
    lines: mpsc::Sender<Result<Bytes, Failure>>,
) {
    let (requests, inbound) = mpsc::channel(1);
    let responses = open(
        &call.service,
        entered.inbound(inbound),
        call.peer,
        entered.ending(),
    );
    let (queued, replies) = mpsc::unbounded_channel();
    let feeder = tokio::spawn(feed::<G>(chunks, requests, queued));
    let render = call.render;
    let columns = match call.arrow {
        true => match ArrowStream::new(call.batch) {
            Ok(stream) => Some(stream),
            Err(e) => {
                entered.end(Code::Internal);
                let _ = lines.send(Err(Failure::Internal(e.to_string()))).await;
                return;
            }
        },
        false => None,
    };
    let mut printer = HttpLines {
        render,
        index: 0,
        out: String::new(),
        columns,
        lines: lines.clone(),
        unreadable: None,
    };
    let asked = (render.format == OutputFormat::Json).then_some(render.asked);
    let mut answering = Box::pin(answer::<G>(responses, replies, &entered, asked));
    let mut answered = None;
    let drained = {
        let draining = ordered::drain(&mut pieces, &mut printer);
        tokio::pin!(draining);
        loop {
            tokio::select! {
                drained = &mut draining => break drained,
                ended = &mut answering, if answered.is_none() => answered = Some(ended),
            }
        }
    };
    let ended = match drained {
        // The client has gone: the call is dropped, as `Canceled`.
        Err(Stopped::Write(_)) => return feeder.abort(),
        Err(e @ Stopped::Short) => Err(Failure::Internal(e.to_string())),
        Ok(drained) => {
            let answered = match answered {
                Some(answered) => answered,
                None => (&mut answering).await,
            };
            match (drained, answered) {
                (Drained::All, Ok(())) => match printer.unreadable.take() {
                    Some(message) => Err(Failure::Unreadable(message)),
                    None => Ok(()),
                },
                (_, Err(failure)) => Err(failure),
                (Drained::Lost, Ok(())) => Err(Failure::Internal(
                    "the service ended the call before answering every item".into(),
                )),
            }
        }
    };
    drop(answering);
    feeder.abort();
    // An Arrow stream's last piece says it ended (an empty one is its schema and its end).
    let ended = match (ended, printer.columns.as_mut().map(ArrowStream::end)) {
        (Ok(()), Some(Ok(last))) => match lines.send(Ok(Bytes::from(last))).await {
            Ok(()) => Ok(()),
            Err(_) => return,
        },
        (Ok(()), Some(Err(e))) => Err(Failure::Internal(e.to_string())),
        (ended, _) => ended,
    };
    match ended {
        Ok(()) => entered.end(Code::Ok),
        Err(failure) => {
            entered.end(match &failure {
                Failure::ApiCall(status) => status.code(),
                Failure::Unreadable(_) => Code::Ok,
                Failure::Internal(_) => Code::Internal,
            });
            let _ = lines.send(Err(failure)).await;
        }
    }
}

/// A chunk sent, as the answerer waits for its response: its items, and where its answers go.
type Queued = (usize, oneshot::Sender<Answers>);

/// The feeder: see the module's doc.
async fn feed<G: Exchange>(
    mut chunks: mpsc::Receiver<Chunk<G>>,
    requests: mpsc::Sender<G::Request>,
    queued: mpsc::UnboundedSender<Queued>,
) {
    while let Some(Chunk { request, reply }) = chunks.recv().await {
        // Queued first, so that its response finds it.
        if queued.send((G::items(&request), reply)).is_err()
            || requests.send(request).await.is_err()
        {
            // The call has ended; the answerer says how.
            return;
        }
    }
    // Dropping `requests` ends the call's requests: the service answers the rest and ends.
}

/// The answerer: see the module's doc. Ends when the service ends the call: `Ok` with every
/// response handed on.
async fn answer<G: Exchange>(
    mut responses: GameStream<G::Response>,
    mut replies: mpsc::UnboundedReceiver<Queued>,
    entered: &InProcess,
    asked: Option<Options>,
) -> Result<(), Failure> {
    while let Some(response) = responses.next().await {
        let response = response.map_err(Failure::ApiCall)?;
        entered.sent();
        let Some((sent, reply)) = replies.recv().await else {
            let what = "the service answered a request it was not sent";
            return Err(Failure::Internal(what.into()));
        };
        let answers = G::check(response, sent, asked)
            .map_err(|unfit| Failure::Internal(unfit.to_string()))?;
        // The printer may have stopped already: then nobody waits for these.
        let _ = reply.send(answers);
    }
    Ok(())
}

/// The HTTP body as the ordered pipeline's sink: the lines `solve` prints, handed to the body at
/// the end of every batch, so that the call holds one batch of lines at most.
struct HttpLines {
    render: Render,
    /// The next line's index (as `solve --format json` counts).
    index: u64,
    out: String,
    /// The answers as Arrow columns instead of `out`'s lines.
    columns: Option<ArrowStream>,
    lines: mpsc::Sender<Result<Bytes, Failure>>,
    /// Where the body broke off: the call's end says it, after every line before it.
    unreadable: Option<String>,
}

impl HttpLines {
    fn line(&mut self, line: &str) {
        self.out.push_str(line);
        self.out.push('\n');
        self.index += 1;
    }
}

impl ordered::AnswerSink<Answer> for HttpLines {
    fn answer(&mut self, answer: Answer) -> io::Result<()> {
        let printable = answer.printable(self.render.asked);
        if let Some(columns) = &mut self.columns {
            match printable {
                Ok((probability, _)) => columns.rows.solved(self.index, None, probability),
                Err(message) => columns.rows.failed(self.index, None, message),
            }
            self.index += 1;
            return Ok(());
        }
        let line = match printable {
            Ok((probability, analysis)) => self.render.solved(self.index, probability, analysis),
            Err(message) => self.render.failed(self.index, message),
        };
        self.line(&line);
        Ok(())
    }

    fn bad(&mut self, message: &str) -> io::Result<()> {
        if let Some(columns) = &mut self.columns {
            columns.rows.failed(self.index, None, message);
            self.index += 1;
            return Ok(());
        }
        let line = self.render.failed(self.index, message);
        self.line(&line);
        Ok(())
    }

    fn advance(&mut self, _items: u64, _at: u64) {}

    fn skipped(&mut self, _items: u64, _bad: u64, _at: u64) {}

    fn unreadable(&mut self, message: &str) {
        self.unreadable.get_or_insert_with(|| message.to_string());
    }

    fn flush(&mut self, _waiting: bool) -> impl Future<Output = io::Result<()>> + Send {
        let piece = match &mut self.columns {
            Some(columns) => columns
                .piece()
                .map_err(io::Error::other)
                .map(|piece| (!piece.is_empty()).then(|| Bytes::from(piece))),
            None => Ok((!self.out.is_empty()).then(|| Bytes::from(std::mem::take(&mut self.out)))),
        };
        let lines = &self.lines;
        async move {
            match piece? {
                Some(piece) => lines
                    .send(Ok(piece))
                    .await
                    .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client has gone")),
                None => Ok(()),
            }
        }
    }
}
