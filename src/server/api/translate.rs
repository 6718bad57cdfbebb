//! One call of the plain HTTP API, translated to a streaming call on the service and back. The
//! call is entered in the call layer first (token, cap, series), as a call of its rpc on the wire
//! is. Three parts run at once:
//! - the **reader**, on a blocking thread: the body through the game's reader, in batches cut as
//!   `solve` cuts them (full, or when nothing more has arrived: someone typing deals into
//!   `curl -T -` sees each answer at once);
//! - the **feeder**: each batch's slots (a good item, or a bad one's message) into the call's
//!   queue, then its good items in one request message to the service, in process;
//! - the **answerer**: each response's results into lines, taking slots off the queue in input
//!   order, so that a bad item's `error:` line comes in its place, as `solve` prints it.
//!
//! Everything between is bounded: the reader waits for the feeder, the feeder for the service's
//! budget (its requests are read only within `--max-in-flight`) and for room in the queue, and
//! the answerer for the client to take the lines. So a call holds what its budget allows, however
//! large its body.
//!
//! The games are `patience client`'s ([`Protocol`]): the same requests from the same items and the
//! same checked [`Answer`]s, which print as `solve` prints the engine's.

use std::collections::VecDeque;
use std::io::{self, BufReader, Read};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use futures::{Stream, StreamExt as _, TryStreamExt as _};
use http::HeaderValue;
use tokio::sync::{Notify, mpsc};
use tokio_util::io::{StreamReader, SyncIoBridge};
use tonic::body::Body;
use tonic::{Code, Status};

use crate::client::{Answer, DealProtocol, Protocol, RpsProtocol};
use crate::items::{Items, Step};
use crate::render::{JsonAnalysis, OutputFormat, Render};
use crate::server::call::{Calls, InProcess};
use crate::service::{GameStream, Inbound, SolverService};
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
    /// The request's, checked as a gRPC call's is.
    pub authorization: Option<HeaderValue>,
    /// Who called, for the logs and the refusals.
    pub peer: Option<SocketAddr>,
    pub render: Render,
    pub batch: usize,
    /// Slots the queue may hold before the feeder waits.
    pub max_queued: usize,
    pub gzip: bool,
}

/// How a game's stream is opened on the service, in process.
type Open<G> = fn(
    &SolverService,
    Inbound<<G as Protocol>::Request>,
    Option<SocketAddr>,
) -> GameStream<<G as Protocol>::Response>;

/// Starts the call: its lines, or its failure, come on the receiver; it ends when they end.
pub fn run(game: Endpoint, call: ApiCall, body: Body) -> mpsc::Receiver<Result<Bytes, Failure>> {
    let (lines, receiver) = mpsc::channel(4);
    let reader = body_reader(body, call.gzip);
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
/// needs its runtime), and finished on the reader's thread: a gzip decoder reads its header as
/// soon as it is made, which must not block the runtime.
fn body_reader(body: Body, gzip: bool) -> impl FnOnce() -> BodyReader + Send + 'static {
    let bytes: Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send>> =
        Box::pin(http_body_util::BodyDataStream::new(body).map_err(io::Error::other));
    let raw = SyncIoBridge::new(StreamReader::new(bytes));
    move || {
        let inner: Box<dyn Read + Send> = if gzip {
            Box::new(flate2::read::MultiGzDecoder::new(BufReader::new(raw)))
        } else {
            Box::new(raw)
        };
        BufReader::with_capacity(BUFFER, inner)
    }
}

/// A batch of the body, in input order: items, or bad items' messages.
type Batch<T> = Vec<Result<T, String>>;

/// What the reader hands the feeder.
enum Parsed<T> {
    Batch(Batch<T>),
    /// The body cannot be read on; nothing follows.
    Unreadable(String),
}

fn start<G: Protocol>(
    game: Endpoint,
    call: ApiCall,
    body: impl FnOnce() -> BodyReader + Send + 'static,
    lines: mpsc::Sender<Result<Bytes, Failure>>,
    open: Open<G>,
) {
    // Refused before the body is read at all.
    let entered = match call
        .calls
        .enter(game.rpc(), call.authorization.as_ref(), call.peer)
    {
        Ok(entered) => entered,
        Err(status) => {
            let _ = lines.try_send(Err(Failure::ApiCall(status)));
            return;
        }
    };
    let (parsed, batches) = mpsc::channel(2);
    let batch = call.batch;
    tokio::task::spawn_blocking(move || read::<G::Reader<BodyReader>>(body(), batch, &parsed));
    tokio::spawn(translate::<G>(call, entered, open, batches, lines));
}

/// The reader: see the module's doc. Stops when the feeder has gone.
fn read<R: Items<BodyReader>>(
    body: BodyReader,
    max: usize,
    parsed: &mpsc::Sender<Parsed<R::Item>>,
) {
    let mut items = R::over(body);
    let mut batch = Vec::with_capacity(max);
    while let Some(step) = items.step() {
        match step {
            Step::Item(item) => batch.push(Ok(item)),
            Step::Bad(message) => batch.push(Err(message)),
            Step::Failed(message) => {
                if !batch.is_empty() && parsed.blocking_send(Parsed::Batch(batch)).is_err() {
                    return;
                }
                let _ = parsed.blocking_send(Parsed::Unreadable(message));
                return;
            }
        }
        if (batch.len() >= max || items.input().buffer().is_empty())
            && parsed
                .blocking_send(Parsed::Batch(std::mem::take(&mut batch)))
                .is_err()
        {
            return;
        }
    }
    if !batch.is_empty() {
        let _ = parsed.blocking_send(Parsed::Batch(batch));
    }
}

/// An item's place in the output.
enum Spot {
    /// Sent to the service: its line is the next result.
    Sent,
    /// A bad item: its `error:` line, in its place.
    Bad(String),
    /// The body broke off here.
    Unreadable(String),
}

/// The slots of items read and not yet printed, in input order, shared by the feeder (which
/// pushes a batch's slots before sending its request, so that any result finds its slot) and the
/// answerer.
struct Queue {
    slots: Mutex<VecDeque<Spot>>,
    /// Told when slots were pushed (bad ones may be printable at once).
    pushed: Notify,
    /// Told when slots were taken (the feeder may have waited for room).
    taken: Notify,
    max: usize,
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Spot>> {
        // Nothing panics while holding it; were it poisoned, the slots are still whole.
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn translate<G: Protocol>(
    call: ApiCall,
    mut entered: InProcess,
    open: Open<G>,
    batches: mpsc::Receiver<Parsed<G::Item>>,
    lines: mpsc::Sender<Result<Bytes, Failure>>,
) {
    let (requests, inbound) = mpsc::channel(1);
    let responses = open(&call.service, entered.inbound(inbound), call.peer);
    let queue = Arc::new(Queue {
        slots: Mutex::new(VecDeque::new()),
        pushed: Notify::new(),
        taken: Notify::new(),
        max: call.max_queued,
    });
    let render = call.render;
    let feeder = tokio::spawn(feed::<G>(batches, requests, queue.clone(), render));
    let answered = answer::<G>(responses, &entered, &queue, render, &lines).await;
    // Once the answers have ended, nothing the feeder still holds can be answered.
    feeder.abort();
    match answered {
        Ok(Some(code)) => entered.end(code),
        // The client has gone: the call is dropped, as `Canceled`.
        Ok(None) => {}
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

/// The feeder: see the module's doc.
async fn feed<G: Protocol>(
    mut batches: mpsc::Receiver<Parsed<G::Item>>,
    requests: mpsc::Sender<G::Request>,
    queue: Arc<Queue>,
    render: Render,
) {
    while let Some(parsed) = batches.recv().await {
        while queue.lock().len() >= queue.max {
            queue.taken.notified().await;
        }
        let (slots, items) = match parsed {
            Parsed::Batch(batch) => {
                let mut slots = Vec::with_capacity(batch.len());
                let mut items = Vec::with_capacity(batch.len());
                for entry in batch {
                    match entry {
                        Ok(item) => {
                            slots.push(Spot::Sent);
                            items.push(item);
                        }
                        Err(message) => slots.push(Spot::Bad(message)),
                    }
                }
                (slots, items)
            }
            Parsed::Unreadable(message) => (vec![Spot::Unreadable(message)], Vec::new()),
        };
        queue.lock().extend(slots);
        queue.pushed.notify_one();
        // JSON lines carry `winnable` and `states` even when nothing more is asked.
        let analysis = (render.format == OutputFormat::Json).then(|| render.asked.into());
        if !items.is_empty() && requests.send(G::request(&items, analysis)).await.is_err() {
            // The call has ended; the answerer says how.
            return;
        }
    }
    // Dropping `requests` ends the call's requests: the service answers the rest and ends.
}

/// The answerer: see the module's doc. The call's status when every line was printed, `None`
/// when the client left first.
async fn answer<G: Protocol>(
    mut responses: GameStream<G::Response>,
    entered: &InProcess,
    queue: &Queue,
    render: Render,
    lines: &mpsc::Sender<Result<Bytes, Failure>>,
) -> Result<Option<Code>, Failure> {
    let mut text = Text {
        render,
        index: 0,
        out: String::new(),
    };
    loop {
        let ended = tokio::select! {
            message = responses.next() => match message.transpose().map_err(Failure::ApiCall)? {
                Some(response) => {
                    entered.sent();
                    let results = G::results(&response);
                    let answers = G::check(response, results, text.asked())
                        .map_err(|verdict| Failure::Internal(verdict.words().to_string()))?;
                    for answered in answers {
                        text.printable(queue);
                        match queue.lock().pop_front() {
                            Some(Spot::Sent) => text.answered(answered)?,
                            _ => {
                                let what = "the service answered an item it was not sent";
                                return Err(Failure::Internal(what.into()));
                            }
                        }
                    }
                    false
                }
                None => true,
            },
            () = queue.pushed.notified() => false,
        };
        text.printable(queue);
        queue.taken.notify_one();
        if !text.out.is_empty() {
            let piece = Bytes::from(std::mem::take(&mut text.out));
            if lines.send(Ok(piece)).await.is_err() {
                // The client has gone: nobody is left to tell.
                return Ok(None);
            }
        }
        if ended {
            // The requests have ended, so every slot has been pushed, and printed.
            return match queue.lock().pop_front() {
                None => Ok(Some(Code::Ok)),
                Some(Spot::Unreadable(message)) => Err(Failure::Unreadable(message)),
                Some(_) => Err(Failure::Internal(
                    "the service ended the call before answering every item".into(),
                )),
            };
        }
    }
}

/// The lines being made, and the index of the next (as `solve --format json` counts).
struct Text {
    render: Render,
    index: u64,
    out: String,
}

impl Text {
    fn line(&mut self, line: &str) {
        self.out.push_str(line);
        self.out.push('\n');
        self.index += 1;
    }

    /// Prints the bad items at the front of the queue, which wait for nothing; stops at a sent
    /// item (its answer comes from the service) and at the place the body broke off (the call's
    /// end says it).
    fn printable(&mut self, queue: &Queue) {
        let mut slots = queue.lock();
        while let Some(Spot::Bad(_)) = slots.front() {
            if let Some(Spot::Bad(message)) = slots.pop_front() {
                let line = self.render.failed(self.index, &message);
                self.line(&line);
            }
        }
    }

    /// The analysis each deal's answer must carry: what JSON lines print.
    fn asked(&self) -> Option<Options> {
        (self.render.format == OutputFormat::Json).then_some(self.render.asked)
    }

    fn answered(&mut self, answered: Answer) -> Result<(), Failure> {
        let line = match answered {
            Answer::Solved {
                probability,
                analysis,
            } => {
                let analysis = analysis
                    .as_ref()
                    .map(|analysis| JsonAnalysis::from_engine(analysis, self.render.asked));
                self.render.solved(self.index, probability, analysis)
            }
            Answer::Failed(message) => self.render.failed(self.index, &message),
        };
        self.line(&line);
        Ok(())
    }
}
