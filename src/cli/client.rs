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
//! - one *lane* per daemon: its own connection and one `SolveStream` call, whose responses answer
//!   its chunks in the order it sent them;
//! - the *printer* prints slots in input order, waiting for each chunk's answers.
//!
//! A chunk is always in exactly one place (queued, with one lane, or answered), so a daemon that
//! fails costs a resend of its unanswered chunks to the others, never a lost or doubled line. Only
//! when every daemon has failed does the client give up. The reader never runs more than a bounded
//! number of slots ahead of the printer, so the client's memory is flat however large the input is.

use std::collections::VecDeque;
use std::io::{self, BufWriter, Write};
use std::time::Duration;

use anyhow::{Context as _, bail};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
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

/// How long connecting to one daemon may take before it counts as failed (the others go on).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// HTTP/2 pings find a daemon that vanished without closing its connection (a dead host, a
/// partition), so its chunks are resent instead of waited on forever.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);
/// Fewest printer slots read ahead, whatever the number of daemons.
const AHEAD: usize = 32;

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

/// The results of one chunk, in deal order.
type Answers = Vec<proto::Result>;

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
    let batch = args.batch as usize;
    let window = window(batch);
    let inputs = Input::from_args(&args.files);
    let progress = Progress::new(args.quiet, &inputs);

    let (reports_tx, reports) = mpsc::unbounded_channel();
    let mut lanes = Vec::new();
    for (index, (addr, endpoint)) in endpoints.into_iter().enumerate() {
        let (inbox_tx, inbox) = mpsc::channel(window);
        tokio::spawn(lane(
            index,
            endpoint,
            bearer.clone(),
            inbox,
            reports_tx.clone(),
            window,
        ));
        lanes.push(Lane {
            addr,
            inbox: Some(inbox_tx),
            busy: 0,
            up: true,
        });
    }
    drop(reports_tx);

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

    let dispatcher = tokio::spawn(dispatch(fresh, lanes, reports, window, progress.clone()));
    let printed = print(slots, render, &progress).await;
    progress.finish();
    match printed {
        Ok(Printed::All(status)) => {
            // Waits for the lanes to close their streams, so a late failure is still reported.
            dispatcher.await.context("the dispatcher failed")??;
            reader.await.context("the file reader failed")?;
            Ok(status)
        }
        Ok(Printed::Closed(status)) => {
            dispatcher.abort();
            Ok(status)
        }
        Ok(Printed::Lost) => {
            // The dispatcher dropped a chunk: it gave up, and says why.
            dispatcher.await.context("the dispatcher failed")??;
            bail!("a request was lost without an answer")
        }
        Err(e) => {
            dispatcher.abort();
            Err(e)
        }
    }
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
                // The lane checked that a response has one result per deal sent.
                None => {
                    let Some(result) = answers.next() else {
                        bail!("the server's response is missing a result");
                    };
                    match result.outcome {
                        Some(Outcome::Probability(p)) => {
                            let analysis = result
                                .analysis
                                .as_ref()
                                .map(|a| JsonAnalysis::from_wire(a, render.asked));
                            render.solved(index, p, analysis)
                        }
                        Some(Outcome::Error(e)) => {
                            status = status.max(Status::BadDeal);
                            render.failed(index, &format!("server: {}", e.message))
                        }
                        None => bail!("the server's response is missing a result"),
                    }
                }
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
    /// False once it failed: it gets nothing more.
    up: bool,
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

/// Hands out chunks until the input is done and every chunk is answered; fails when every daemon
/// has failed with work left.
async fn dispatch(
    mut fresh: mpsc::Receiver<Chunk>,
    mut lanes: Vec<Lane>,
    mut reports: mpsc::UnboundedReceiver<Report>,
    window: usize,
    progress: Progress,
) -> anyhow::Result<()> {
    // Chunks taken back from failed daemons, oldest first: the printer waits on the oldest.
    let mut retry: VecDeque<Chunk> = VecDeque::new();
    let mut input_open = true;
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
    loop {
        while !retry.is_empty() {
            let Some(i) = pick(&lanes, window) else { break };
            if let Some(chunk) = retry.pop_front() {
                assign(&mut lanes[i], chunk, &mut retry, window);
            }
        }
        let idle = lanes.iter().all(|l| !l.up || l.busy == 0);
        if !input_open && retry.is_empty() && idle {
            break;
        }
        if lanes.iter().all(|l| !l.up) {
            bail!(
                "every daemon failed ({}); giving up with deals unanswered",
                lanes
                    .iter()
                    .map(|l| l.addr.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let room = retry.is_empty() && pick(&lanes, window).is_some();
        tokio::select! {
            biased;
            report = reports.recv() => match report {
                Some(Report::Answered(i)) => lanes[i].busy = lanes[i].busy.saturating_sub(1),
                Some(Report::Failed { lane, reason, unanswered }) => {
                    let l = &mut lanes[lane];
                    l.up = false;
                    l.busy = 0;
                    l.inbox = None;
                    warn(l, &reason, unanswered.len());
                    retry.extend(unanswered);
                    retry.make_contiguous().sort_by_key(|c| c.seq);
                }
                None => bail!("every daemon connection ended with deals unanswered"),
            },
            chunk = fresh.recv(), if input_open && room => match chunk {
                Some(chunk) => {
                    if let Some(i) = pick(&lanes, window) {
                        assign(&mut lanes[i], chunk, &mut retry, window);
                    } else {
                        retry.push_back(chunk);
                    }
                }
                None => input_open = false,
            },
        }
    }
    // Done: closing the inboxes ends each stream. Wait for the lanes to finish, reporting any that
    // failed late (say, one that could not connect before the others did all the work).
    for lane in &mut lanes {
        lane.inbox = None;
    }
    while let Some(report) = reports.recv().await {
        if let Report::Failed {
            lane,
            reason,
            unanswered,
            ..
        } = report
            && lanes[lane].up
        {
            lanes[lane].up = false;
            warn(&lanes[lane], &reason, unanswered.len());
        }
    }
    Ok(())
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

/// One daemon: connects, opens one `SolveStream` call, sends the chunks it is given and answers
/// them in order. On failure, hands every chunk it holds back to the dispatcher.
async fn lane(
    index: usize,
    endpoint: Endpoint,
    bearer: AddBearer,
    mut inbox: mpsc::Receiver<Chunk>,
    reports: mpsc::UnboundedSender<Report>,
    window: usize,
) {
    let mut pending = VecDeque::new();
    let Err(reason) = run_lane(
        index,
        endpoint,
        bearer,
        &mut inbox,
        &mut pending,
        &reports,
        window,
    )
    .await
    else {
        return;
    };
    inbox.close();
    while let Ok(chunk) = inbox.try_recv() {
        pending.push_back(chunk);
    }
    let _ = reports.send(Report::Failed {
        lane: index,
        reason,
        unanswered: pending.into(),
    });
}

/// The body of [`lane`]; `pending` holds the chunks sent and not yet answered, oldest first.
async fn run_lane(
    index: usize,
    endpoint: Endpoint,
    bearer: AddBearer,
    inbox: &mut mpsc::Receiver<Chunk>,
    pending: &mut VecDeque<Chunk>,
    reports: &mpsc::UnboundedSender<Report>,
    window: usize,
) -> Result<(), String> {
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| format!("cannot connect: {}", causes(&e)))?;
    let mut client =
        SolverClient::with_interceptor(channel, bearer).max_decoding_message_size(usize::MAX);
    let (requests_tx, requests) = mpsc::channel::<SolveRequest>(window);
    let mut responses = client
        .solve_stream(ReceiverStream::new(requests))
        .await
        .map_err(|s| format!("the stream was refused: {}: {}", s.code(), s.message()))?
        .into_inner();
    let mut requests_tx = Some(requests_tx);
    let mut inbox_open = true;
    loop {
        if !inbox_open && pending.is_empty() {
            // Nothing more to send: ending the request stream lets the daemon end the call.
            requests_tx = None;
        }
        tokio::select! {
            chunk = inbox.recv(), if inbox_open => match chunk {
                Some(chunk) => {
                    // The dispatcher keeps at most `window` chunks here, so there is room; if the
                    // call has ended, the response side says why.
                    if let Some(tx) = &requests_tx {
                        let _ = tx.try_send(chunk.request.clone());
                    }
                    pending.push_back(chunk);
                }
                None => inbox_open = false,
            },
            response = responses.message() => match response {
                Ok(Some(response)) => {
                    let Some(chunk) = pending.pop_front() else {
                        return Err("it answered a request that was never sent".into());
                    };
                    let (got, sent) = (response.results.len(), chunk.request.deals.len());
                    if got != sent {
                        pending.push_front(chunk);
                        return Err(format!("it answered {got} results for {sent} deals"));
                    }
                    // The printer may be gone (its reader closed the output): nothing to do then.
                    let _ = chunk.reply.send(response.results);
                    let _ = reports.send(Report::Answered(index));
                }
                Ok(None) if pending.is_empty() && requests_tx.is_none() => return Ok(()),
                Ok(None) => {
                    return Err("it ended the stream before answering every request".into());
                }
                Err(s) => return Err(format!("{}: {}", s.code(), s.message())),
            },
        }
    }
}
