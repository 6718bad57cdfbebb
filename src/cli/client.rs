//! `patience client`: streams deal files to one or more daemons and prints exactly what
//! `patience solve` would.
//!
//! The files are read here with the same reader as `solve`, so a deal the client cannot parse gets
//! the same `error:` line in the same place without a round trip. Valid deals go out in chunks: one
//! request message of up to `--batch` deals each.
//!
//! Four parts, joined by bounded queues:
//! - the *reader* (a blocking thread) turns the files into printer slots and chunks;
//! - the *dispatcher* hands each chunk to whichever live daemon has the fewest chunks unanswered,
//!   never more than [`window`] each, and takes back the unanswered chunks of a daemon that fails;
//! - one *lane* per daemon: its own connection and one `SolveStream` call at a time, whose
//!   responses answer its chunks in the order it sent them. A lane whose daemon fails hands its
//!   chunks back, then reconnects in the background with capped exponential backoff, and once a
//!   new call is open reports itself back, with a new inbox, so a rolling restart of the daemons
//!   costs resends, not the run;
//! - the *printer* prints slots in input order, waiting for each chunk's answers.
//!
//! A chunk is always in exactly one place (queued, with one lane, or answered), so a daemon that
//! fails costs a resend of its unanswered chunks to the others, never a lost or doubled line. The
//! client gives up only when a chunk has nowhere to go because no daemon has been up for
//! `--give-up-after`, or at once when a daemon refuses the requests themselves (every daemon
//! would, and retrying would not change its mind). Lanes check each response
//! before the printer sees it. The reader never runs more than a bounded number of slots ahead of
//! the printer, so the client's memory is flat however large the input is.

use std::collections::VecDeque;
use std::io::{self, BufWriter, Write};
use std::time::Duration;

use anyhow::{Context as _, bail};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

use super::ClientArgs;
use super::OutputFormat;
use super::batches::{Event, read_batches};
use super::input::Input;
use super::output::{JsonAnalysis, Render, Status};
use super::progress::Progress;
use crate::auth::{AddBearer, read_token_file};
use crate::proto::solver_client::SolverClient;
use crate::proto::{self, SolveRequest, result::Outcome};
use crate::solver::{Analysis, Options};

/// How long connecting to one daemon may take before it counts as failed (the others go on).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// HTTP/2 pings find a daemon that vanished without closing its connection (a dead host, a
/// partition), so its chunks are resent instead of waited on forever.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);
/// Fewest printer slots read ahead, whatever the number of daemons.
const AHEAD: usize = 32;
/// A failed daemon's first attempt to come back waits this long, each further one twice as long
/// as the one before, up to [`RETRY_MAX`]: soon enough to catch a quick restart, and a daemon that
/// stays down costs a connection attempt every few seconds, not a busy loop.
const RETRY_FIRST: Duration = Duration::from_millis(500);
const RETRY_MAX: Duration = Duration::from_secs(5);

/// Chunks one daemon may have unanswered: about 4,096 deals, enough to keep its workers busy
/// across the round trip, and few enough that a failure resends little. At least 4 so that small
/// batches still pipeline; at most 64 so that `--batch 1` does not flood the daemon with messages.
fn window(batch: usize) -> usize {
    (4096 / batch.max(1)).clamp(4, 64)
}

/// One daemon's address with the TLS settings the flags ask for.
fn endpoint(args: &ClientArgs, addr: &str) -> anyhow::Result<Endpoint> {
    if !addr.starts_with("http://") && !addr.starts_with("https://") {
        bail!("{addr} is not an address like http://127.0.0.1:50051");
    }
    let endpoint = Endpoint::from_shared(addr.to_string())
        .with_context(|| format!("{addr} is not an address like http://127.0.0.1:50051"))?
        .connect_timeout(CONNECT_TIMEOUT)
        .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
        .keep_alive_timeout(KEEPALIVE_TIMEOUT)
        .keep_alive_while_idle(true);
    let https = addr.starts_with("https://");
    if !https && (args.tls_ca.is_some() || args.tls_cert.is_some()) {
        bail!("TLS flags need an https:// address (got {addr})");
    }
    if !https {
        return Ok(endpoint);
    }
    let read = |path: &std::path::Path| {
        std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
    };
    let Some(ca) = &args.tls_ca else {
        bail!(
            "an https:// address needs --tls-ca: the PEM CA that signed the daemon's certificate"
        );
    };
    let mut tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(read(ca)?));
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
    }
    endpoint.tls_config(tls).context("cannot set up TLS")
}

/// An error and its sources, each once: transport errors repeat their source's message.
fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(e) = next {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = e.source();
    }
    parts.join(": ")
}

/// One deal's answer from a daemon, checked by its lane, so the printer has nothing left to
/// refuse.
enum Answer {
    Solved {
        probability: f64,
        /// In `--format json` only.
        analysis: Option<JsonAnalysis>,
    },
    /// The daemon's `DealError` message: printed as an `error:` line, as `solve` would.
    Failed(String),
}

/// The answers of one chunk, in deal order.
type Answers = Vec<Answer>;

/// One request message of valid deals, numbered in input order, and where its answers go.
struct Chunk {
    seq: u64,
    request: SolveRequest,
    reply: oneshot::Sender<Answers>,
}

/// What the printer does for one batch, in input order.
enum Slot {
    /// The batch's lines (`None` marks a deal sent to a daemon), the chunk's answers when some
    /// deal was sent, and the input bytes the batch and those before it span.
    Lines {
        lines: Vec<Option<String>>,
        answers: Option<oneshot::Receiver<Answers>>,
        at: u64,
    },
    /// An input that could not be read.
    Unreadable(String),
}

/// What a lane tells the dispatcher.
enum Report {
    /// The lane's oldest chunk was answered: it has room for one more.
    Answered(usize),
    /// The lane's daemon failed; these chunks were never answered and must go elsewhere.
    Failed {
        lane: usize,
        reason: String,
        unanswered: Vec<Chunk>,
    },
    /// The daemon refused what this run asks of every daemon: the run stops.
    Rejected { lane: usize, reason: String },
    /// The failed lane's daemon is back: a new call is open, and its chunks go to this inbox.
    Back {
        lane: usize,
        inbox: mpsc::Sender<Chunk>,
    },
}

/// Why a lane ended early, which decides what the run does about it.
enum LaneError {
    /// The daemon, or the way to it, is unwell (gone, draining, cut off, or it sent nonsense):
    /// another daemon may well answer its chunks.
    Failed(String),
    /// The daemon's considered refusal of these requests (too many deals per request, a wrong
    /// token, no analysis support...). Every daemon gets the same requests with the same
    /// credentials, so resending would only spread the refusal: the run stops at once instead.
    Rejected(String),
}

/// The canonical name of a gRPC status code, as other tools and the server's logs print it.
fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// Sorts a status that ended a daemon's call into a failure of that daemon or a refusal of the
/// run. Codes about the daemon's or the connection's health fail over, and so does any status
/// tonic made up from a transport error (it carries the error as its source), whatever its code:
/// an HTTP/2 reset is not the daemon's opinion of our requests. `INTERNAL` and `UNKNOWN` fail over
/// too: tonic also reports a stream cut short by a proxy as `UNKNOWN`, without a source.
fn sort_status(status: &tonic::Status) -> LaneError {
    use std::error::Error as _;
    let code = status.code();
    let text = format!("{}: {}", code_name(code), status.message());
    let unwell = matches!(
        code,
        Code::Unavailable
            | Code::Cancelled
            | Code::Aborted
            | Code::DeadlineExceeded
            | Code::Internal
            | Code::Unknown
    );
    if unwell || status.source().is_some() {
        return LaneError::Failed(text);
    }
    let hint = match code {
        Code::InvalidArgument if status.message().contains("per request") => {
            "lower --batch to at most the daemon's --max-deals-per-request"
        }
        Code::ResourceExhausted | Code::OutOfRange => {
            "the request messages are too large for the daemon: lower --batch"
        }
        Code::Unauthenticated => {
            "give the daemon's token with --auth-token-file (sent as `authorization: Bearer <token>`)"
        }
        Code::PermissionDenied => {
            "check the token (--auth-token-file) and the client certificate (--tls-cert)"
        }
        Code::Unimplemented => "is this a patience daemon, and one as new as this client?",
        _ => "check the client's flags against the daemon's",
    };
    LaneError::Rejected(format!("rejected the requests with {text}; {hint}"))
}

/// Turns a daemon's response to one chunk into answers the printer can print as they are, or says
/// what is wrong with it. `analysis` is what `--format json` asked for (`None` in text).
fn check_response(
    results: Vec<proto::Result>,
    sent: usize,
    analysis: Option<Options>,
) -> Result<Answers, LaneError> {
    if results.len() != sent {
        return Err(LaneError::Failed(format!(
            "it answered {} results for {sent} deals",
            results.len()
        )));
    }
    results
        .into_iter()
        .map(|result| match result.outcome {
            Some(Outcome::Probability(probability)) => {
                let analysis = match (analysis, &result.analysis) {
                    (None, _) => None,
                    (Some(asked), Some(wire)) => {
                        let analysis = Analysis::try_from((probability, wire)).map_err(|e| {
                            LaneError::Failed(format!("it sent a malformed answer: {e}"))
                        })?;
                        Some(JsonAnalysis::from_engine(&analysis, asked))
                    }
                    // A daemon older than the analysis API ignores the request's options: its
                    // lines would silently lack the fields `solve` prints.
                    (Some(_), None) => {
                        return Err(LaneError::Rejected(
                            "does not support analysis (--format json needs a newer daemon)".into(),
                        ));
                    }
                };
                Ok(Answer::Solved {
                    probability,
                    analysis,
                })
            }
            Some(Outcome::Error(e)) => Ok(Answer::Failed(e.message)),
            None => Err(LaneError::Failed(
                "it sent a malformed answer: a result with neither a probability nor an error"
                    .into(),
            )),
        })
        .collect()
}

pub fn run(args: &ClientArgs) -> anyhow::Result<Status> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(stream_files(args));
    // The reader may be blocked reading standard input (a terminal, a pipe kept open) when the
    // run ends early; dropping the runtime would wait for it, that is for more input or EOF.
    // Leave it behind instead: the process is about to exit.
    runtime.shutdown_background();
    result
}

async fn stream_files(args: &ClientArgs) -> anyhow::Result<Status> {
    // Every address and flag is checked before anything is sent: a typo is a usage error.
    let endpoints = args
        .addr
        .iter()
        .map(|addr| Ok((addr.clone(), endpoint(args, addr)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let token = args
        .auth_token_file
        .as_deref()
        .map(read_token_file)
        .transpose()?;
    let bearer =
        AddBearer::new(token.as_ref()).map_err(|s| anyhow::anyhow!(s.message().to_string()))?;

    let asked = args.analysis.options()?;
    let render = Render {
        format: args.analysis.format,
        precision: args.precision,
        asked,
    };
    // JSON always carries winnable and states, so it always asks the daemon for an analysis.
    let wire_options =
        (args.analysis.format == OutputFormat::Json).then_some(proto::AnalysisOptions {
            exact: asked.exact,
            moves: asked.moves,
            line: asked.line,
        });
    // What the lanes check every solved deal's analysis against, in JSON only.
    let json_analysis = (args.analysis.format == OutputFormat::Json).then_some(asked);
    let batch = args.batch as usize;
    let window = window(batch);
    let inputs = Input::from_args(&args.files);
    let progress = Progress::new(args.quiet, &inputs);

    let (reports_tx, reports) = mpsc::unbounded_channel();
    // Set (or dropped) by the dispatcher when the run is over: failed lanes stop trying to come
    // back.
    let (over_tx, over) = watch::channel(false);
    let mut lanes = Vec::new();
    for (index, (addr, endpoint)) in endpoints.into_iter().enumerate() {
        let (inbox_tx, inbox) = mpsc::channel(window);
        tokio::spawn(lane(
            LaneConfig {
                index,
                endpoint,
                bearer: bearer.clone(),
                reports: reports_tx.clone(),
                window,
                analysis: json_analysis,
                over: over.clone(),
            },
            inbox,
        ));
        lanes.push(Lane {
            addr,
            inbox: Some(inbox_tx),
            busy: 0,
            up: true,
        });
    }
    drop(reports_tx);
    drop(over);

    let ahead = AHEAD.max(2 * window * lanes.len());
    let (slots_tx, slots) = mpsc::channel::<Slot>(ahead);
    let (fresh_tx, fresh) = mpsc::channel::<Chunk>(window);
    // Reading files is blocking work: keep it off the async threads.
    let reader = tokio::task::spawn_blocking(move || {
        let mut seq = 0;
        read_batches(&inputs, batch, |event| {
            let (lines, deals, at) = match event {
                Event::Batch(entries, at) => {
                    let mut deals = Vec::new();
                    let lines = entries
                        .into_iter()
                        .map(|entry| match entry {
                            Ok(deal) => {
                                deals.push(proto::Deal {
                                    id: String::new(),
                                    cards: deal.to_string(),
                                });
                                None
                            }
                            Err(msg) => Some(msg),
                        })
                        .collect();
                    (lines, deals, at)
                }
                Event::Unreadable(msg) => {
                    return slots_tx.blocking_send(Slot::Unreadable(msg)).is_ok();
                }
            };
            if deals.is_empty() {
                let slot = Slot::Lines {
                    lines,
                    answers: None,
                    at,
                };
                return slots_tx.blocking_send(slot).is_ok();
            }
            // The slot goes first: a chunk exists only once the printer is bound to wait for it,
            // which is what bounds the chunks alive to the slots read ahead.
            let (reply, answers) = oneshot::channel();
            let slot = Slot::Lines {
                lines,
                answers: Some(answers),
                at,
            };
            if slots_tx.blocking_send(slot).is_err() {
                return false;
            }
            let chunk = Chunk {
                seq,
                request: SolveRequest {
                    deals,
                    analysis: wire_options,
                },
                reply,
            };
            seq += 1;
            fresh_tx.blocking_send(chunk).is_ok()
        });
    });

    let mut dispatcher = tokio::spawn(dispatch(
        fresh,
        lanes,
        Reports {
            reports,
            over: over_tx,
        },
        window,
        args.give_up_after,
        progress.clone(),
    ));
    let printing = print(slots, render, &progress);
    tokio::pin!(printing);
    // Whichever ends first: the dispatcher may stop the run while the printer waits for answers.
    let (printed, dispatched) = tokio::select! {
        printed = &mut printing => (printed, None),
        joined = &mut dispatcher => match stopped(joined) {
            Err(Stop::Now(message)) => {
                // The printer, dropped on return, flushes the lines printed so far: an in-order
                // prefix.
                progress.finish();
                bail!("{message}");
            }
            // Done, or every daemon failed: in the latter case every chunk left went with the
            // dispatcher, so the printer soon stops at the first unanswered one, having printed
            // everything answered before it.
            dispatched => (printing.await, Some(dispatched)),
        },
    };
    progress.finish();
    let printed = match printed {
        Ok(printed) => printed,
        Err(e) => {
            dispatcher.abort();
            return Err(e);
        }
    };
    let status = match printed {
        Printed::Closed(status) => {
            dispatcher.abort();
            return Ok(status);
        }
        Printed::All(status) => Some(status),
        Printed::Lost => None,
    };
    // Waits for the lanes to close their streams, briefly, so a late failure is still reported;
    // or, when a chunk was lost, for the dispatcher's reason.
    let dispatched = match dispatched {
        Some(dispatched) => dispatched,
        None => stopped(dispatcher.await),
    };
    if let Err(Stop::Now(message) | Stop::AfterPrinting(message)) = dispatched {
        bail!("{message}");
    }
    let Some(status) = status else {
        bail!("a request was lost without an answer");
    };
    reader.await.context("the file reader failed")?;
    Ok(status)
}

/// Why the dispatcher stopped the run.
enum Stop {
    /// A daemon refused the run's requests (or the dispatcher itself failed): stop at once.
    Now(String),
    /// No daemon was up for `--give-up-after` with chunks left to place: print what was answered,
    /// then stop.
    AfterPrinting(String),
}

/// The dispatcher's outcome; a dispatcher that panicked stops the run at once.
fn stopped(joined: Result<Result<(), Stop>, tokio::task::JoinError>) -> Result<(), Stop> {
    joined.unwrap_or_else(|e| Err(Stop::Now(format!("the dispatcher failed: {e}"))))
}

/// How printing ended.
enum Printed {
    /// Every slot was printed.
    All(Status),
    /// Whoever reads standard output closed it (`patience client big | head`): not an error.
    Closed(Status),
    /// A chunk's answers will never come: the dispatcher gave up.
    Lost,
}

/// Prints every slot in input order, waiting for each chunk's answers.
async fn print(
    mut slots: mpsc::Receiver<Slot>,
    render: Render,
    progress: &Progress,
) -> anyhow::Result<Printed> {
    let mut out = BufWriter::new(io::stdout().lock());
    let mut status = Status::Ok;
    let mut index = 0u64;
    loop {
        if slots.is_empty() {
            // About to wait for the reader (someone typing deals?): show the answers so far.
            if let Err(e) = out.flush() {
                return write_failed(e, status);
            }
        }
        let Some(slot) = slots.recv().await else {
            break;
        };
        let (lines, answers, at) = match slot {
            Slot::Unreadable(msg) => {
                out.flush().ok();
                progress.eprintln(format_args!("patience: {msg}"));
                status = Status::Trouble;
                continue;
            }
            Slot::Lines { lines, answers, at } => (lines, answers, at),
        };
        let mut answers = match answers {
            None => Vec::new().into_iter(),
            Some(receiver) => {
                if receiver.is_empty() {
                    // About to wait for the daemons: let whoever reads our output see it so far.
                    if let Err(e) = out.flush() {
                        return write_failed(e, status);
                    }
                }
                match receiver.await {
                    Ok(answers) => answers.into_iter(),
                    Err(_) => {
                        out.flush().ok();
                        return Ok(Printed::Lost);
                    }
                }
            }
        };
        let count = lines.len() as u64;
        for line in lines {
            let line = match line {
                Some(error) => {
                    status = status.max(Status::BadDeal);
                    render.failed(index, &error)
                }
                // The lane checked the response: one answer per deal sent, each printable.
                None => match answers.next() {
                    Some(Answer::Solved {
                        probability,
                        analysis,
                    }) => render.solved(index, probability, analysis),
                    Some(Answer::Failed(message)) => {
                        status = status.max(Status::BadDeal);
                        render.failed(index, &format!("server: {message}"))
                    }
                    None => bail!("a chunk's answers ran short (a bug in this client)"),
                },
            };
            index += 1;
            if let Err(e) = writeln!(out, "{line}") {
                return write_failed(e, status);
            }
        }
        progress.advance(count, at);
    }
    match out.flush() {
        Ok(()) => Ok(Printed::All(status)),
        Err(e) => write_failed(e, status),
    }
}

/// A closed pipe (`patience client big | head`) is the reader's choice, not an error.
fn write_failed(e: io::Error, status: Status) -> anyhow::Result<Printed> {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Ok(Printed::Closed(status))
    } else {
        Err(anyhow::Error::new(e).context("cannot write the results"))
    }
}

/// The dispatcher's view of one daemon.
struct Lane {
    addr: String,
    /// Where its chunks go; dropped when the input is done, which ends its stream.
    inbox: Option<mpsc::Sender<Chunk>>,
    /// Chunks handed to it and not yet answered.
    busy: usize,
    /// False from its failure until it reports itself back: it gets nothing meanwhile.
    up: bool,
}

/// What the lanes report, and how the dispatcher tells them the run is over (by setting it, or
/// by dropping it when it stops the run).
struct Reports {
    reports: mpsc::UnboundedReceiver<Report>,
    over: watch::Sender<bool>,
}

/// The live lane with the fewest chunks unanswered, if any has room.
fn pick(lanes: &[Lane], window: usize) -> Option<usize> {
    lanes
        .iter()
        .enumerate()
        .filter(|(_, l)| l.up && l.busy < window)
        .min_by_key(|(_, l)| l.busy)
        .map(|(i, _)| i)
}

/// How long the client waits, once everything is printed, to report daemons that failed late.
/// A lane still connecting to an address that never answers would otherwise hold the exit for the
/// whole connect timeout, to report something that changes no output.
const LATE_FAILURES: Duration = Duration::from_secs(2);

/// Hands out chunks until the input is done and every chunk is answered. Stops the run when a
/// chunk has nowhere to go because no daemon has been up for `give_up_after` (failed ones are
/// retried meanwhile; without waiting when no daemon has ever answered), or at once when a daemon
/// refuses the run's requests.
async fn dispatch(
    mut fresh: mpsc::Receiver<Chunk>,
    mut lanes: Vec<Lane>,
    Reports { mut reports, over }: Reports,
    window: usize,
    give_up_after: Duration,
    progress: Progress,
) -> Result<(), Stop> {
    // Chunks taken back from failed daemons, oldest first: the printer waits on the oldest.
    let mut retry: VecDeque<Chunk> = VecDeque::new();
    let mut input_open = true;
    // When the last daemon up failed, while none is up.
    let mut none_up_since: Option<Instant> = None;
    // Whether any daemon has answered or come back. Until one has, nothing suggests waiting will
    // help (a wrong address, a daemon not started), so the client gives up without waiting.
    let mut ever_up = false;
    let warn = |lane: &Lane, reason: &str, resent: usize| {
        let what = match resent {
            0 => String::new(),
            1 => "; its unanswered request goes to the other daemons".to_string(),
            n => format!("; its {n} unanswered requests go to the other daemons"),
        };
        progress.eprintln(format_args!(
            "patience: warning: {} failed: {reason}{what}",
            lane.addr
        ));
    };
    let all_failed = |lanes: &[Lane], ever_up: bool| {
        let waited = if ever_up {
            format!(" and none came back within {give_up_after:?}")
        } else {
            String::new()
        };
        Stop::AfterPrinting(format!(
            "every daemon failed ({}){waited}; giving up with deals unanswered",
            lanes
                .iter()
                .map(|l| l.addr.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        ))
    };
    loop {
        while !retry.is_empty() {
            let Some(i) = pick(&lanes, window) else { break };
            if let Some(chunk) = retry.pop_front() {
                assign(&mut lanes[i], chunk, &mut retry, window);
            }
        }
        let up = lanes.iter().any(|l| l.up);
        none_up_since = match (up, none_up_since) {
            (true, _) => None,
            (false, None) => Some(Instant::now()),
            (false, since) => since,
        };
        // Give up only with a chunk in hand and no daemon to take it for a while. With nothing
        // waiting, the input may yet end with only bad deals, or none, which need no daemon.
        let give_up_at = none_up_since.filter(|_| !retry.is_empty()).map(|since| {
            since
                + if ever_up {
                    give_up_after
                } else {
                    Duration::ZERO
                }
        });
        let idle = lanes.iter().all(|l| !l.up || l.busy == 0);
        if !input_open && retry.is_empty() && idle {
            break;
        }
        // A new chunk is taken when a daemon has room for it, or when none is up (so that the
        // give-up clock runs with a chunk in hand). Either way at most one waits in `retry`.
        let take = input_open && retry.is_empty() && (!up || pick(&lanes, window).is_some());
        tokio::select! {
            biased;
            report = reports.recv() => match report {
                Some(Report::Answered(i)) => {
                    ever_up = true;
                    if let Some(lane) = lanes.get_mut(i) {
                        lane.busy = lane.busy.saturating_sub(1);
                    }
                }
                Some(Report::Failed { lane, reason, unanswered }) => {
                    let Some(l) = lanes.get_mut(lane) else { continue };
                    l.up = false;
                    l.busy = 0;
                    l.inbox = None;
                    warn(l, &reason, unanswered.len());
                    retry.extend(unanswered);
                    retry.make_contiguous().sort_by_key(|c| c.seq);
                }
                Some(Report::Rejected { lane, reason }) => {
                    let addr = lanes.get(lane).map_or("?", |l| l.addr.as_str());
                    return Err(Stop::Now(format!("daemon {addr} {reason}")));
                }
                Some(Report::Back { lane, inbox }) => {
                    ever_up = true;
                    let Some(l) = lanes.get_mut(lane) else { continue };
                    l.up = true;
                    l.busy = 0;
                    l.inbox = Some(inbox);
                    progress.eprintln(format_args!("patience: note: {} is back", l.addr));
                }
                // Every lane reports before it ends, and ends only when it is refused or the run
                // is over, so this means every lane vanished: none will come back.
                None => return Err(all_failed(&lanes, ever_up)),
            },
            () = sleep_until_some(give_up_at) => return Err(all_failed(&lanes, ever_up)),
            chunk = fresh.recv(), if take => match chunk {
                Some(chunk) => match pick(&lanes, window) {
                    Some(i) => assign(&mut lanes[i], chunk, &mut retry, window),
                    None => retry.push_back(chunk),
                },
                None => input_open = false,
            },
        }
    }
    // Done: closing the inboxes ends each stream, and failed lanes stop trying to come back.
    // Report the lanes that fail now (say, one that could not connect before the others did all
    // the work), for a little while.
    for lane in &mut lanes {
        lane.inbox = None;
    }
    // The lanes may all be gone already: nobody to tell then.
    let _ = over.send(true);
    let late = async {
        while let Some(report) = reports.recv().await {
            let (lane, reason, resent) = match report {
                // Its inbox, dropped here, ends its new call at once.
                Report::Answered(_) | Report::Back { .. } => continue,
                Report::Failed {
                    lane,
                    reason,
                    unanswered,
                } => (lane, reason, unanswered.len()),
                Report::Rejected { lane, reason } => (lane, reason, 0),
            };
            if let Some(l) = lanes.get_mut(lane)
                && l.up
            {
                l.up = false;
                warn(l, &reason, resent);
            }
        }
    };
    let _ = tokio::time::timeout(LATE_FAILURES, late).await;
    Ok(())
}

/// Waits until `at`, or forever when there is no `at`.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Gives `chunk` to `lane`; if the lane has just closed its inbox (it is failing, and will report
/// so), the chunk goes back to the front of the queue and the lane gets nothing more.
fn assign(lane: &mut Lane, chunk: Chunk, retry: &mut VecDeque<Chunk>, window: usize) {
    let Some(inbox) = &lane.inbox else {
        retry.push_front(chunk);
        return;
    };
    match inbox.try_send(chunk) {
        Ok(()) => lane.busy += 1,
        Err(mpsc::error::TrySendError::Closed(chunk) | mpsc::error::TrySendError::Full(chunk)) => {
            retry.push_front(chunk);
            lane.busy = window;
        }
    }
}

/// One call's chunks and the lane's way back to the dispatcher. Dropping it reports how the call
/// ended, whether it returned or the lane's task panicked, handing back every chunk it holds: a chunk the
/// dispatcher counts as with this lane is never simply forgotten, which would leave the printer
/// waiting for it.
struct LaneState {
    index: usize,
    reports: mpsc::UnboundedSender<Report>,
    inbox: mpsc::Receiver<Chunk>,
    /// Chunks sent and not yet answered, oldest first.
    pending: VecDeque<Chunk>,
    /// How the lane ended; still `None` if its task panicked.
    end: Option<Result<(), LaneError>>,
}

impl Drop for LaneState {
    fn drop(&mut self) {
        let error = match self.end.take() {
            Some(Ok(())) => return,
            Some(Err(error)) => error,
            None => LaneError::Failed("its task in this client failed unexpectedly".into()),
        };
        self.inbox.close();
        while let Ok(chunk) = self.inbox.try_recv() {
            self.pending.push_back(chunk);
        }
        let report = match error {
            LaneError::Failed(reason) => Report::Failed {
                lane: self.index,
                reason,
                unanswered: self.pending.drain(..).collect(),
            },
            LaneError::Rejected(reason) => Report::Rejected {
                lane: self.index,
                reason,
            },
        };
        // The dispatcher may be gone already (the run is over): nothing to tell then.
        let _ = self.reports.send(report);
    }
}

/// What a lane needs for its whole life, across reconnections.
struct LaneConfig {
    index: usize,
    endpoint: Endpoint,
    bearer: AddBearer,
    reports: mpsc::UnboundedSender<Report>,
    window: usize,
    analysis: Option<Options>,
    /// Set or dropped when the run is over: a failed lane stops trying to come back.
    over: watch::Receiver<bool>,
}

/// A `SolveStream` call just opened: where its requests go and where its responses come from.
type Call = (
    mpsc::Sender<SolveRequest>,
    tonic::Streaming<proto::SolveResponse>,
);

/// One daemon: connects, opens a `SolveStream` call, sends the chunks it is given and answers them
/// in order. Each call's end is reported by [`LaneState`]; after a failure the lane tries to come
/// back with a new call (and a new inbox, so that no chunk can sit in an inbox the dispatcher no
/// longer counts), until it does, it is refused, or the run is over. The first inbox exists before
/// the first call is open, so chunks wait for a daemon that is slow to answer at start.
async fn lane(mut config: LaneConfig, first_inbox: mpsc::Receiver<Chunk>) {
    let mut inbox = first_inbox;
    let mut call = None;
    loop {
        let mut state = LaneState {
            index: config.index,
            reports: config.reports.clone(),
            inbox,
            pending: VecDeque::new(),
            end: None,
        };
        let end = run_lane(&mut state, &config, call.take()).await;
        let failed = matches!(end, Err(LaneError::Failed(_)));
        state.end = Some(end);
        // Reports the end (and hands back the chunks) before any report that the lane is back.
        drop(state);
        if !failed {
            return;
        }
        let Some((opened, next_inbox)) = come_back(&mut config).await else {
            return;
        };
        call = Some(opened);
        inbox = next_inbox;
    }
}

/// Tries to open a new call to a failed lane's daemon, waiting longer after each failed attempt,
/// and reports the lane back once one is open. Each attempt connects anew, so a daemon restarted
/// at the same name but another IP is found. Attempts that fail are not reported: the failure was,
/// once. `None` when the run is over or the daemon refuses the run's requests (reported).
async fn come_back(config: &mut LaneConfig) -> Option<(Call, mpsc::Receiver<Chunk>)> {
    let mut wait = RETRY_FIRST;
    loop {
        let attempt = async {
            tokio::time::sleep(wait).await;
            open_call(&config.endpoint, &config.bearer, config.window).await
        };
        let opened = tokio::select! {
            opened = attempt => opened,
            // Set, or the dispatcher is gone: either way the run is over.
            _ = config.over.wait_for(|over| *over) => return None,
        };
        wait = (wait * 2).min(RETRY_MAX);
        match opened {
            Ok(call) => {
                let (inbox_tx, inbox) = mpsc::channel(config.window);
                let back = Report::Back {
                    lane: config.index,
                    inbox: inbox_tx,
                };
                config.reports.send(back).ok()?;
                return Some((call, inbox));
            }
            Err(LaneError::Rejected(reason)) => {
                let refused = Report::Rejected {
                    lane: config.index,
                    reason,
                };
                // The dispatcher may be gone already: nothing to tell then.
                let _ = config.reports.send(refused);
                return None;
            }
            Err(LaneError::Failed(_)) => {}
        }
    }
}

/// Connects to the daemon and opens one `SolveStream` call.
async fn open_call(
    endpoint: &Endpoint,
    bearer: &AddBearer,
    window: usize,
) -> Result<Call, LaneError> {
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| LaneError::Failed(format!("cannot connect: {}", causes(&e))))?;
    let mut client = SolverClient::with_interceptor(channel, bearer.clone())
        .max_decoding_message_size(usize::MAX);
    let (requests_tx, requests) = mpsc::channel::<SolveRequest>(window);
    let responses = client
        .solve_stream(ReceiverStream::new(requests))
        .await
        .map_err(|s| match sort_status(&s) {
            LaneError::Failed(reason) => {
                LaneError::Failed(format!("the stream was refused: {reason}"))
            }
            rejected => rejected,
        })?
        .into_inner();
    Ok((requests_tx, responses))
}

/// One call of a [`lane`]: opens it unless it is open already, then sends the inbox's chunks and
/// answers them until the inbox closes and every chunk is answered, or the call fails.
async fn run_lane(
    state: &mut LaneState,
    config: &LaneConfig,
    call: Option<Call>,
) -> Result<(), LaneError> {
    let analysis = config.analysis;
    let (requests_tx, mut responses) = match call {
        Some(call) => call,
        None => open_call(&config.endpoint, &config.bearer, config.window).await?,
    };
    let mut requests_tx = Some(requests_tx);
    let mut inbox_open = true;
    loop {
        if !inbox_open && state.pending.is_empty() {
            // Nothing more to send: ending the request stream lets the daemon end the call.
            requests_tx = None;
        }
        tokio::select! {
            chunk = state.inbox.recv(), if inbox_open => match chunk {
                Some(chunk) => {
                    let sent = match &requests_tx {
                        Some(tx) => tx.try_send(chunk.request.clone()),
                        None => Ok(()),
                    };
                    state.pending.push_back(chunk);
                    match sent {
                        // Closed: the call has ended, and the response side says why.
                        Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
                        // The dispatcher keeps at most `window` chunks here, so this cannot
                        // happen; should it, the chunk goes to another daemon, not nowhere.
                        Err(mpsc::error::TrySendError::Full(_)) => {
                            return Err(LaneError::Failed(
                                "its request queue was full (a bug in this client)".into(),
                            ));
                        }
                    }
                }
                None => inbox_open = false,
            },
            response = responses.message() => match response {
                Ok(Some(response)) => {
                    let Some(chunk) = state.pending.pop_front() else {
                        return Err(LaneError::Failed(
                            "it answered a request that was never sent".into(),
                        ));
                    };
                    let sent = chunk.request.deals.len();
                    let answers = match check_response(response.results, sent, analysis) {
                        Ok(answers) => answers,
                        Err(e) => {
                            state.pending.push_front(chunk);
                            return Err(e);
                        }
                    };
                    // The printer may be gone (its reader closed the output): nothing to do then.
                    let _ = chunk.reply.send(answers);
                    let _ = state.reports.send(Report::Answered(state.index));
                }
                Ok(None) if state.pending.is_empty() && requests_tx.is_none() => return Ok(()),
                Ok(None) => {
                    return Err(LaneError::Failed(
                        "it ended the stream before answering every request".into(),
                    ));
                }
                Err(s) => return Err(sort_status(&s)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn rejected(status: &tonic::Status) -> Option<String> {
        match sort_status(status) {
            LaneError::Rejected(reason) => Some(reason),
            LaneError::Failed(_) => None,
        }
    }

    #[test]
    fn statuses_about_the_daemons_health_fail_over_and_refusals_stop() {
        for status in [
            tonic::Status::unavailable("draining"),
            tonic::Status::cancelled("gone"),
            tonic::Status::aborted("aborted"),
            tonic::Status::deadline_exceeded("late"),
            tonic::Status::internal("h2 protocol error"),
            tonic::Status::unknown("missing grpc-status trailer"),
        ] {
            assert!(rejected(&status).is_none(), "{status:?}");
        }
        // Made by tonic from a transport error: not the daemon's opinion of the requests.
        let mut calm = tonic::Status::resource_exhausted("h2 protocol error: enhance your calm");
        calm.set_source(Arc::new(io::Error::other("stream reset")));
        assert!(rejected(&calm).is_none());

        let batch = tonic::Status::invalid_argument(
            "the request has 50 deals; the limit is 10 deals per request",
        );
        let reason = rejected(&batch).unwrap_or_default();
        assert!(reason.contains("INVALID_ARGUMENT") && reason.contains("lower --batch"));
        let token = tonic::Status::unauthenticated("this server requires a token");
        let reason = rejected(&token).unwrap_or_default();
        assert!(reason.contains("UNAUTHENTICATED") && reason.contains("authorization"));
        for status in [
            tonic::Status::resource_exhausted("too large"),
            tonic::Status::permission_denied("no"),
            tonic::Status::unimplemented("no such method"),
        ] {
            assert!(rejected(&status).is_some(), "{status:?}");
        }
    }

    fn solved(analysis: Option<proto::Analysis>) -> proto::Result {
        proto::Result {
            index: 0,
            id: String::new(),
            outcome: Some(Outcome::Probability(0.5)),
            analysis,
        }
    }

    #[test]
    fn responses_are_checked_before_the_printer_sees_them() {
        let json = Some(Options::default());
        assert!(matches!(
            check_response(vec![solved(None)], 2, None),
            Err(LaneError::Failed(_))
        ));
        let mut empty = solved(None);
        empty.outcome = None;
        assert!(matches!(
            check_response(vec![empty], 1, None),
            Err(LaneError::Failed(_))
        ));
        assert!(matches!(
            check_response(vec![solved(None)], 1, json),
            Err(LaneError::Rejected(reason)) if reason.contains("does not support analysis")
        ));
        let no_move = proto::Analysis {
            moves: vec![proto::MoveOdds {
                r#move: None,
                probability: 0.5,
            }],
            ..Default::default()
        };
        let moves = Some(Options {
            moves: true,
            ..Options::default()
        });
        assert!(matches!(
            check_response(vec![solved(Some(no_move))], 1, moves),
            Err(LaneError::Failed(reason)) if reason.contains("malformed")
        ));
        assert!(matches!(
            check_response(vec![solved(None)], 1, None).as_deref(),
            Ok([Answer::Solved { analysis: None, .. }])
        ));
    }

    fn chunk(seq: u64) -> (Chunk, oneshot::Receiver<Answers>) {
        let (reply, answers) = oneshot::channel();
        let request = SolveRequest {
            deals: Vec::new(),
            analysis: None,
        };
        (
            Chunk {
                seq,
                request,
                reply,
            },
            answers,
        )
    }

    /// A lane whose task dies without saying how (a panic) still hands back what it holds, sent
    /// or only queued, so the dispatcher can resend it and the printer is never left waiting.
    #[test]
    fn a_lane_that_ends_unreported_hands_back_its_chunks() {
        let (reports_tx, mut reports) = mpsc::unbounded_channel();
        let (inbox_tx, inbox) = mpsc::channel(4);
        let (sent, _a) = chunk(0);
        let (queued, _b) = chunk(1);
        let state = LaneState {
            index: 3,
            reports: reports_tx,
            inbox,
            pending: VecDeque::from([sent]),
            end: None,
        };
        assert!(inbox_tx.try_send(queued).is_ok());
        let unwound = std::thread::spawn(move || {
            let _state = state;
            panic!("a lane's bug");
        })
        .join();
        assert!(unwound.is_err());
        match reports.try_recv() {
            Ok(Report::Failed {
                lane, unanswered, ..
            }) => {
                assert_eq!(lane, 3);
                let seqs: Vec<u64> = unanswered.iter().map(|c| c.seq).collect();
                assert_eq!(seqs, [0, 1]);
            }
            _ => panic!("no failure reported"),
        }
    }
}
