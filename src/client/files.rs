//! `patience client` and `patience rps --addr` as a library: a run's inputs through the daemons
//! into its output, printing exactly what `patience solve` or `patience rps` would.
//!
//! The files are read with the same reader as in-process, so an item the client cannot parse
//! gets the same `error:` line in the same place without a round trip. Valid items go out in
//! chunks: one request message of up to a batch's items each. The run is the one pipeline every
//! command prints through ([`crate::jobs::pipeline::stream`]) with the daemons behind it:
//! - the *reader* (a thread) turns the files into the printer's pieces and submissions;
//! - the *session* ([`crate::client::run`]) answers the submissions, in order, from the daemons;
//! - the *printer* prints the pieces in input order, waiting for each chunk's answers.
//!
//! The reader never runs more than a bounded number of pieces ahead of the printer, so the
//! client's memory is flat however large the input is.

use std::time::Duration;

use tokio::sync::mpsc;
use tracing::Instrument as _;

use super::{Answer, Chunk, ClientConfig, ClientError, Event, Protocol, Tally, words};
use crate::jobs::outcome::ExitStatus;
use crate::jobs::parts::part::PartError;
use crate::jobs::pipeline::job::{JobError, JobRun};
use crate::jobs::pipeline::plan::JobPlan;
use crate::jobs::pipeline::stream::{self, Answering, PrintError, Printed};
use crate::jobs::report::progress::Unit;
use crate::jobs::sink::lines::Sink;
use crate::jobs::sink::output::{Printer, Render};
use crate::jobs::source::batches::{BatchSize, Entry, ToRead};
use crate::jobs::source::input::Reader;
use crate::ordered::Piece;
use crate::proto;

/// Chunks the reader may have submitted and the session not yet taken. The reader waits until
/// this many are taken, then reads as many: one wakeup of its thread for each burst, where a
/// channel of one woke it for every chunk (about one context switch in four of `patience client`).
const SUBMIT_BURST: usize = 4;
/// Fewest printer slots read ahead, whatever `--reorder-buffer-bytes` says.
const AHEAD: usize = 32;
/// What one item read ahead may hold at most, counted against `--reorder-buffer-bytes`: its
/// request (a deal's 107 characters and the message around them, about 170 bytes), its place in
/// the printer's slot and its answer, rounded up (docs/client.md has the measured figures).
const AHEAD_BYTES_PER_ITEM: usize = 512;

/// What one run reads and how it prints.
#[derive(Debug)]
pub struct FilesPlan {
    /// What the items are called in the progress and the summary.
    pub unit: Unit,
    pub batch: BatchSize,
    /// `--reorder-buffer-bytes`.
    pub reorder_bytes: usize,
    pub render: Render,
    pub job: JobPlan,
}

/// Why a run through the daemons ended without its status.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// The output could not be opened, or the inputs planned.
    #[error(transparent)]
    Job(#[from] JobError),
    /// A shard's part could not be recorded complete.
    #[error(transparent)]
    Part(#[from] PartError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Print(#[from] PrintError),
    #[error("a request was lost without an answer")]
    Lost,
    #[error("cannot start the reader")]
    Reader(#[source] std::io::Error),
}

/// Opens the output, streams the inputs through the daemons, and ends with the summary (the
/// daemons' shares in it). Runs on a multi-threaded runtime: the printer blocks its task while
/// standard output is full.
pub async fn stream_files<G: Protocol>(
    plan: FilesPlan,
    config: ClientConfig,
) -> Result<ExitStatus, FilesError> {
    let (job, sink) = JobRun::start::<G::Reader<Reader>>(&plan.job, plan.unit)?;
    let mut tally = None;
    let ended = stream::<G>(&job, sink, &plan, config, &mut tally).await;
    job.end(ended, tally.map(|t| words::daemons(&t, plan.unit.noun)))
}

/// The run: the reader, the session and the printer, and how they ended; `tally` gets what the
/// daemons did when the run ends with a status.
async fn stream<G: Protocol>(
    job: &JobRun,
    sink: Sink,
    plan: &FilesPlan,
    config: ClientConfig,
    tally: &mut Option<Tally>,
) -> Result<ExitStatus, FilesError> {
    let render = plan.render;
    let batch = plan.batch;
    let reading = job.reading();
    let ahead = AHEAD.max(plan.reorder_bytes / (AHEAD_BYTES_PER_ITEM * batch.max().max(1)));
    let (slots_tx, mut slots) = mpsc::channel::<Piece<Answer>>(ahead);
    let (submit, submissions) = mpsc::channel::<Chunk<G>>(SUBMIT_BURST);
    let analysis = config.asked.map(proto::AnalysisOptions::from);
    start_reader::<G>(reading, batch, analysis, submit, slots_tx).map_err(FilesError::Reader)?;

    let (events_tx, events) = mpsc::unbounded_channel();
    // Its own task: the printer blocks its task while standard output is full, and the session
    // must go on meanwhile (a daemon coming back, another failing).
    let mut session = tokio::spawn(super::run(config, submissions, events_tx).in_current_span());
    let telling = tokio::spawn(tell(events, job.progress.clone()));
    let printing = print(&mut slots, job.printer(sink, render), render);
    tokio::pin!(printing);
    // Whichever ends first: the session may stop the run while the printer waits for answers.
    let (printed, ended) = tokio::select! {
        printed = &mut printing => (printed, None),
        ended = &mut session => match joined(ended) {
            // The printer, dropped on return, flushes the lines printed so far: an in-order
            // prefix.
            Err(e) if e.stops_at_once() => return Err(e.into()),
            // Done, or every daemon failed: then every answer left went with the session, so the
            // printer soon stops at the first unanswered chunk, having printed all before it.
            ended => (printing.await, Some(ended)),
        },
    };
    let status = match printed? {
        Printed::Closed(status) => return Ok(status),
        Printed::All(status) => Some(status),
        Printed::Lost => None,
    };
    // Waits for the session to close its streams, briefly, so a late failure is still reported;
    // or, when a chunk was lost, for its reason.
    let ended = match ended {
        Some(ended) => ended,
        None => joined(session.await),
    };
    // Every event is told before the run's last word.
    if let Ok(Ok(told)) = tokio::time::timeout(Duration::from_secs(1), telling).await {
        *tally = told;
    }
    ended?;
    status.ok_or(FilesError::Lost)
}

/// The reader's thread. The runtime may be blocked on it reading standard input (a terminal, a
/// pipe kept open) when the run ends early; it is a plain thread, so nothing waits for it.
fn start_reader<G: Protocol>(
    reading: ToRead,
    batch: BatchSize,
    analysis: Option<proto::AnalysisOptions>,
    submit: mpsc::Sender<Chunk<G>>,
    pieces: mpsc::Sender<Piece<Answer>>,
) -> std::io::Result<()> {
    let runtime = tokio::runtime::Handle::current();
    std::thread::Builder::new()
        .name("reader".into())
        .spawn(move || {
            let mut daemons = ToTheDaemons {
                analysis,
                submit: &submit,
                runtime,
                room: None,
            };
            stream::read::<G::Reader<Reader>, _>(&reading, batch, &mut daemons, &pieces);
        })
        .map(drop)
}

/// Says each event past the progress bar as it comes; the tally at the end.
async fn tell(
    mut events: mpsc::UnboundedReceiver<Event>,
    progress: crate::jobs::report::progress::Progress,
) -> Option<Tally> {
    let mut tally = None;
    while let Some(event) = events.recv().await {
        match event {
            Event::Done(done) => tally = Some(done),
            event => {
                if let Some(line) = words::event(&event) {
                    progress.eprintln(format_args!("{line}"));
                }
            }
        }
    }
    tally
}

/// The session's outcome; a session that panicked stops the run.
fn joined(
    joined: Result<Result<(), ClientError>, tokio::task::JoinError>,
) -> Result<(), ClientError> {
    joined.unwrap_or_else(|e| Err(ClientError::Internal(e.to_string())))
}

/// Prints every piece in input order; the analysis the user asked for tells an empty list from
/// one not asked for.
async fn print(
    pieces: &mut mpsc::Receiver<Piece<Answer>>,
    printer: Printer<'_>,
    render: Render,
) -> Result<Printed, PrintError> {
    let asked = render.asked;
    // The session checked each response: one answer per deal sent, each printable.
    let print = |printer: &mut Printer<'_>, answer: Answer| match answer.printable(asked) {
        Ok((probability, analysis)) => printer.solved(probability, analysis),
        Err(message) => printer.failed(&format!("server: {message}")),
    };
    stream::print(pieces, printer, print).await
}

/// The daemons as what answers a run's batches: each batch's good items become a chunk, submitted
/// to the session once the printer holds the batch's piece.
struct ToTheDaemons<'a, G: Protocol> {
    analysis: Option<proto::AnalysisOptions>,
    submit: &'a mpsc::Sender<Chunk<G>>,
    runtime: tokio::runtime::Handle,
    /// Room for the next chunks, taken [`SUBMIT_BURST`] at a time.
    room: Option<mpsc::PermitIterator<'a, Chunk<G>>>,
}

impl<G: Protocol> Answering<G::Item> for ToTheDaemons<'_, G> {
    type Answer = Answer;
    type Later = Chunk<G>;

    fn take(&mut self, entries: Vec<Entry<G::Item>>, at: u64) -> (Piece<Answer>, Option<Chunk<G>>) {
        Chunk::<G>::of(entries, at, self.analysis)
    }

    fn send(&mut self, chunk: Chunk<G>) -> bool {
        if self.room.as_ref().is_none_or(|room| room.len() == 0) {
            self.room = self
                .runtime
                .block_on(self.submit.reserve_many(SUBMIT_BURST))
                .ok();
        }
        self.room
            .as_mut()
            .and_then(Iterator::next)
            .map(|permit| permit.send(chunk))
            .is_some()
    }
}
