//! `patience client` and `patience rps --addr`: stream deal or case files to one or more daemons
//! through [`crate::client`] and print exactly what `patience solve` or `patience rps` would.
//!
//! The files are read here with the same reader as in-process, so an item the client cannot parse
//! gets the same `error:` line in the same place without a round trip. Valid items go out in
//! chunks: one request message of up to `--batch` items each. Three parts:
//! - the *reader* (a thread) turns the files into the printer's pieces and submissions;
//! - the library's *session* answers the submissions, in order, from the daemons;
//! - the *printer* prints the pieces in input order, waiting for each chunk's answers: the
//!   ordered pipeline `solve` and the HTTP API print through too ([`crate::ordered`]).
//!
//! The reader never runs more than a bounded number of pieces ahead of the printer, so the
//! client's memory is flat however large the input is.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use tokio::sync::mpsc;
use tracing::Instrument as _;

use super::traced;
use super::{ClientArgs, OutputFormat, RemoteArgs, RpsArgs};
use crate::client::{
    self, Answer, Chunk, ClientConfig, Connector, DealProtocol, Event, Protocol, RpsProtocol,
    SystemResolver, Tally, Target, words,
};
use crate::jobs::outcome::ExitStatus;
use crate::jobs::pipeline::job::JobRun;
use crate::jobs::pipeline::plan::JobPlan;
use crate::jobs::report::progress::Unit;
use crate::jobs::sink::output::{Printer, Printing, Render};
use crate::jobs::source::batches::{BatchSize, Batched, ToRead, read_items};
use crate::jobs::source::input::Reader;

use crate::jobs::sink::lines::Sink;
use crate::ordered::{self, Drained, Piece, Stopped};
use crate::proto;
use crate::solver::Options;

/// Chunks the reader may have submitted and the session not yet taken. The reader waits until
/// this many are taken, then reads as many: one wakeup of its thread for each burst, where a
/// channel of one woke it for every chunk (about one context switch in four of `patience client`).
const SUBMIT_BURST: usize = 4;
/// Fewest printer slots read ahead, whatever `--reorder-buffer-bytes` says.
const AHEAD: usize = 32;
/// `patience client`'s messages without `--batch`: the first of 256 deals, so that a short input
/// (or deals typed as they come) is answered in several messages over several daemons, each next
/// one twice as large up to 1,024, so that a long one costs few wake-ups a deal on either side
/// (docs/client.md has the figures).
const CLIENT_BATCH: BatchSize = BatchSize::growing(256, 1_024);
/// What one item read ahead may hold at most, counted against `--reorder-buffer-bytes`: its
/// request (a deal's 107 characters and the message around them, about 170 bytes), its place in
/// the printer's slot and its answer, rounded up (docs/client.md has the measured figures).
const AHEAD_BYTES_PER_ITEM: usize = 512;

/// What one run reads and how it prints, from either command's flags.
struct Plan {
    /// What the items are called in the progress and the summary.
    unit: Unit,
    batch: BatchSize,
    /// `--reorder-buffer-bytes`.
    reorder_bytes: usize,
    render: Render,
    job: JobPlan,
}

/// The flags, checked and turned into what the library runs with. Every address and flag is
/// checked before anything is sent: a typo is a usage error.
fn config(
    addr: &[String],
    remote: &RemoteArgs,
    batch: BatchSize,
    asked: Option<Options>,
) -> anyhow::Result<ClientConfig> {
    let targets = addr
        .iter()
        .map(|addr| Target::parse(addr))
        .collect::<Result<Vec<_>, _>>()?;
    let files = remote.tls.files();
    for (flag, value) in [
        ("--keepalive-interval", remote.keepalive_interval),
        ("--keepalive-timeout", remote.keepalive_timeout),
    ] {
        if value < Duration::from_millis(100) {
            bail!("{flag} must be at least 100ms (got {value:?})");
        }
    }
    let connector = Connector::new(&targets, &files)?
        .keepalive(remote.keepalive_interval, remote.keepalive_timeout);
    let bearer = super::remote::bearer(remote.auth_token_file.as_deref())?;
    Ok(ClientConfig {
        targets,
        connector,
        bearer,
        window: client::window(batch.max()),
        streams: remote.streams,
        stream_max_bytes: remote.stream_max_bytes,
        asked,
        give_up_after: remote.give_up_after,
        dns_refresh: remote.dns_refresh,
        hedge_floor: remote.hedge_floor.unwrap_or(client::HEDGE_FLOOR),
        late_failures: remote.late_failures.unwrap_or(client::LATE_FAILURES),
        close_grace: remote.close_grace.unwrap_or(client::CLOSE_GRACE),
        resolver: Arc::new(SystemResolver),
    })
}

pub fn run(args: &ClientArgs) -> anyhow::Result<ExitStatus> {
    let asked = args.analysis.options()?;
    // JSON always carries winnable and states, so it always asks the daemon for an analysis.
    let wanted = (args.analysis.format == OutputFormat::Json).then_some(asked);
    let batch = args
        .batch
        .map_or(CLIENT_BATCH, |n| BatchSize::fixed(n as usize));
    let config = config(&args.addr, &args.remote, batch, wanted)?;
    let render = Render {
        format: args.analysis.format,
        precision: args.precision,
        asked,
    };
    let plan = Plan {
        unit: Unit::DEALS,
        batch,
        reorder_bytes: args.remote.reorder_buffer_bytes,
        render,
        job: args.job.plan(&args.files, render)?,
    };
    on_runtime(stream_files::<DealProtocol>(plan, config))
}

/// `patience rps --addr`: the cases go to the daemons, and print as in-process.
pub fn run_rps(args: &RpsArgs) -> anyhow::Result<ExitStatus> {
    let batch = BatchSize::fixed(args.batch as usize);
    let config = config(&args.addr, &args.remote, batch, None)?;
    let plan = Plan {
        unit: Unit::CASES,
        batch,
        reorder_bytes: args.remote.reorder_buffer_bytes,
        render: args.render(),
        job: args.job.plan(&args.files, args.render())?,
    };
    on_runtime(stream_files::<RpsProtocol>(plan, config))
}

/// The runtime's threads: the session, its calls and their connections. One is enough: the reader
/// and the printer have threads of their own (the printer runs on the main thread, in
/// `block_on`, so a full standard output never holds up the session), and a client core feeds
/// some 20 engine threads. A second worker cost CPU without adding speed: the runtime woke it for
/// every task another thread woke, and it mostly found nothing to do (500,000 deals through a
/// local daemon, 8 alternating runs: the client's CPU 0.905x with one worker, wall 0.99x).
const RUNTIME_WORKERS: usize = 1;

fn on_runtime(run: impl Future<Output = anyhow::Result<ExitStatus>>) -> anyhow::Result<ExitStatus> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(RUNTIME_WORKERS)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let tracing = traced::start(&runtime)?;
    // The reader may be blocked reading standard input (a terminal, a pipe kept open) when the
    // run ends early; it is a plain thread, so nothing waits for it: the process is about to
    // exit.
    let ended = runtime.block_on(run.instrument(traced::run_span()));
    if let Some(tracing) = tracing {
        runtime.block_on(traced::flush(tracing));
    }
    ended
}

/// Opens the output, streams the inputs, and ends with the summary (the daemons' shares in it).
async fn stream_files<G: Protocol>(plan: Plan, config: ClientConfig) -> anyhow::Result<ExitStatus> {
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
    plan: &Plan,
    config: ClientConfig,
    tally: &mut Option<Tally>,
) -> anyhow::Result<ExitStatus> {
    let render = plan.render;
    let wire_options = config.asked.map(proto::AnalysisOptions::from);
    let batch = plan.batch;
    let reading = job.reading();
    let progress = &job.progress;
    let ahead = AHEAD.max(plan.reorder_bytes / (AHEAD_BYTES_PER_ITEM * batch.max().max(1)));
    let (slots_tx, slots) = mpsc::channel::<Piece<Answer>>(ahead);
    let (submit, submissions) = mpsc::channel::<Chunk<G>>(SUBMIT_BURST);
    let runtime = tokio::runtime::Handle::current();
    std::thread::Builder::new()
        .name("reader".into())
        .spawn(move || {
            read::<G>(&reading, batch, wire_options, &slots_tx, &submit, &runtime);
        })
        .context("cannot start the reader")?;

    let (events_tx, mut events) = mpsc::unbounded_channel();
    // Its own task: the printer blocks its task while standard output is full, and the session
    // must go on meanwhile (a daemon coming back, another failing).
    let mut session = tokio::spawn(client::run(config, submissions, events_tx).in_current_span());
    let telling = {
        let progress = progress.clone();
        async move {
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
    };
    let telling = tokio::spawn(telling);
    let printing = print(slots, job.printer(sink, render), render.asked);
    tokio::pin!(printing);
    // Whichever ends first: the session may stop the run while the printer waits for answers.
    let (printed, ended) = tokio::select! {
        printed = &mut printing => (printed, None),
        ended = &mut session => match joined(ended) {
            Err(e) if e.stops_at_once() => {
                // The printer, dropped on return, flushes the lines printed so far: an in-order
                // prefix.
                bail!("{e}");
            }
            // Done, or every daemon failed: then every answer left went with the session, so the
            // printer soon stops at the first unanswered chunk, having printed all before it.
            ended => (printing.await, Some(ended)),
        },
    };
    let printed = printed?;
    let status = match printed {
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
    if let Err(e) = ended {
        bail!("{e}");
    }
    let Some(status) = status else {
        bail!("a request was lost without an answer");
    };
    Ok(status)
}

/// The session's outcome; a session that panicked stops the run.
fn joined(
    joined: Result<Result<(), client::ClientError>, tokio::task::JoinError>,
) -> Result<(), client::ClientError> {
    joined.unwrap_or_else(|e| Err(client::ClientError::Internal(e.to_string())))
}

/// Reads every input into the printer's pieces and submissions. The piece goes first: a chunk
/// exists only once the printer is bound to wait for it, which is what bounds the chunks alive to
/// the pieces read ahead.
fn read<G: Protocol>(
    reading: &ToRead,
    batch: BatchSize,
    analysis: Option<proto::AnalysisOptions>,
    pieces: &mpsc::Sender<Piece<Answer>>,
    submit: &mpsc::Sender<Chunk<G>>,
    runtime: &tokio::runtime::Handle,
) {
    // Room for the next chunks, taken SUBMIT_BURST at a time.
    let mut room: Option<mpsc::PermitIterator<'_, Chunk<G>>> = None;
    read_items::<G::Reader<Reader>>(reading, batch, |event| {
        let (entries, at) = match event {
            Batched::Batch(entries, at) => (entries, at),
            Batched::Skipped { items, bad, at } => {
                return pieces
                    .blocking_send(Piece::Skipped { items, bad, at })
                    .is_ok();
            }
            Batched::Unreadable(msg) => {
                return pieces.blocking_send(Piece::Unreadable(msg)).is_ok();
            }
        };
        let (piece, chunk) = Chunk::<G>::of(entries, at, analysis);
        if pieces.blocking_send(piece).is_err() {
            return false;
        }
        chunk.is_none_or(|chunk| {
            if room.as_ref().is_none_or(|room| room.len() == 0) {
                room = runtime.block_on(submit.reserve_many(SUBMIT_BURST)).ok();
            }
            room.as_mut()
                .and_then(Iterator::next)
                .map(|permit| permit.send(chunk))
                .is_some()
        })
    });
}

/// How printing ended.
enum Printed {
    /// Every piece was printed.
    All(ExitStatus),
    /// Whoever reads standard output closed it (`patience client big | head`): not an error.
    Closed(ExitStatus),
    /// A chunk's answers will never come: the session gave up.
    Lost,
}

/// Prints every piece in input order, waiting for each chunk's answers; `asked` is the analysis
/// the user asked for, to tell an empty list from one not asked for.
async fn print(
    mut pieces: mpsc::Receiver<Piece<Answer>>,
    printer: Printer<'_>,
    asked: Options,
) -> anyhow::Result<Printed> {
    // The session checked each response: one answer per deal sent, each printable.
    let print = |printer: &mut Printer<'_>, answer: Answer| match answer.printable(asked) {
        Ok((probability, analysis)) => printer.solved(probability, analysis),
        Err(message) => printer.failed(&format!("server: {message}")),
    };
    let mut printing = Printing { printer, print };
    let drained = ordered::drain(&mut pieces, &mut printing).await;
    let printer = printing.printer;
    match drained {
        Ok(Drained::All) => Ok(Printed::All(printer.finish()?)),
        Ok(Drained::Lost) => Ok(Printed::Lost),
        Err(Stopped::Write(e)) => Ok(Printed::Closed(printer.write_failed(e)?)),
        Err(e @ Stopped::Short) => bail!("{e} (a bug in this client)"),
    }
}
