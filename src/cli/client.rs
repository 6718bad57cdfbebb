//! `patience client`: streams deal files to one or more daemons through [`crate::client`] and
//! prints exactly what `patience solve` would.
//!
//! The files are read here with the same reader as `solve`, so a deal the client cannot parse gets
//! the same `error:` line in the same place without a round trip. Valid deals go out in chunks: one
//! request message of up to `--batch` deals each. Three parts:
//! - the *reader* (a thread) turns the files into printer slots and submissions;
//! - the library's *session* answers the submissions, in order, from the daemons;
//! - the *printer* prints slots in input order, waiting for each chunk's answers.
//!
//! The reader never runs more than a bounded number of slots ahead of the printer, so the
//! client's memory is flat however large the input is.

use std::io::{self, BufWriter, Write};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use tokio::sync::{mpsc, oneshot};

use super::batches::{Event as Read, read_batches};
use super::input::Input;
use super::output::{JsonAnalysis, Render, Status};
use super::progress::Progress;
use super::{ClientArgs, OutputFormat};
use crate::auth::{AddBearer, read_token_file};
use crate::client::{
    self, Answer, Answers, ClientConfig, Connector, Event, Submission, SystemResolver, Target,
    TlsFiles,
};
use crate::proto::{self, SolveRequest};

/// Fewest printer slots read ahead, whatever the number of daemons.
const AHEAD: usize = 32;

/// The flags, checked and turned into what the library runs with. Every address and flag is
/// checked before anything is sent: a typo is a usage error.
fn config(args: &ClientArgs) -> anyhow::Result<ClientConfig> {
    let targets = args
        .addr
        .iter()
        .map(|addr| Target::parse(addr))
        .collect::<Result<Vec<_>, _>>()?;
    let files = TlsFiles {
        ca: args.tls_ca.clone(),
        cert: args.tls_cert.clone(),
        key: args.tls_key.clone(),
    };
    let connector = Connector::new(&targets, &files)?;
    let token = args
        .auth_token_file
        .as_deref()
        .map(read_token_file)
        .transpose()?;
    let bearer =
        AddBearer::new(token.as_ref()).map_err(|s| anyhow::anyhow!(s.message().to_string()))?;
    let asked = args.analysis.options()?;
    Ok(ClientConfig {
        targets,
        connector,
        bearer,
        window: client::window(args.batch as usize),
        // JSON always carries winnable and states, so it always asks the daemon for an analysis.
        asked: (args.analysis.format == OutputFormat::Json).then_some(asked),
        give_up_after: args.give_up_after,
        dns_refresh: args.dns_refresh,
        hedge_floor: client::HEDGE_FLOOR,
        resolver: Arc::new(SystemResolver),
    })
}

pub fn run(args: &ClientArgs) -> anyhow::Result<Status> {
    let config = config(args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // The reader may be blocked reading standard input (a terminal, a pipe kept open) when the
    // run ends early; it is a plain thread, so nothing waits for it: the process is about to
    // exit.
    runtime.block_on(stream_files(args, config))
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

async fn stream_files(args: &ClientArgs, config: ClientConfig) -> anyhow::Result<Status> {
    let asked = args.analysis.options()?;
    let render = Render {
        format: args.analysis.format,
        precision: args.precision,
        asked,
    };
    let wire_options = config.asked.map(proto::AnalysisOptions::from);
    let batch = args.batch as usize;
    let inputs = Input::from_args(&args.files);
    let progress = Progress::new(args.quiet, &inputs);
    let ahead = AHEAD.max(2 * config.window * config.targets.len());
    let (slots_tx, slots) = mpsc::channel::<Slot>(ahead);
    let (submit, submissions) = mpsc::channel::<Submission>(1);
    std::thread::Builder::new()
        .name("reader".into())
        .spawn(move || read(&inputs, batch, wire_options, &slots_tx, &submit))
        .context("cannot start the reader")?;

    let (events_tx, mut events) = mpsc::unbounded_channel();
    // Its own task: the printer blocks its task while standard output is full, and the session
    // must go on meanwhile (a daemon coming back, another failing).
    let mut session = tokio::spawn(client::run(config, submissions, events_tx));
    let telling = {
        let progress = progress.clone();
        async move {
            while let Some(event) = events.recv().await {
                tell(&progress, &event);
            }
        }
    };
    let telling = tokio::spawn(telling);
    let printing = print(slots, render, &progress);
    tokio::pin!(printing);
    // Whichever ends first: the session may stop the run while the printer waits for answers.
    let (printed, ended) = tokio::select! {
        printed = &mut printing => (printed, None),
        ended = &mut session => match joined(ended) {
            Err(e) if e.stops_at_once() => {
                // The printer, dropped on return, flushes the lines printed so far: an in-order
                // prefix.
                progress.finish();
                bail!("{e}");
            }
            // Done, or every daemon failed: then every answer left went with the session, so the
            // printer soon stops at the first unanswered chunk, having printed all before it.
            ended => (printing.await, Some(ended)),
        },
    };
    let printed = printed?;
    let status = match printed {
        Printed::Closed(status) => {
            progress.finish();
            return Ok(status);
        }
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
    let _ = tokio::time::timeout(Duration::from_secs(1), telling).await;
    progress.finish();
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

/// Reads every input into slots and submissions. The slot goes first: a chunk exists only once
/// the printer is bound to wait for it, which is what bounds the chunks alive to the slots read
/// ahead.
fn read(
    inputs: &[Input],
    batch: usize,
    analysis: Option<proto::AnalysisOptions>,
    slots: &mpsc::Sender<Slot>,
    submit: &mpsc::Sender<Submission>,
) {
    read_batches(inputs, batch, |event| {
        let (entries, at) = match event {
            Read::Batch(entries, at) => (entries, at),
            Read::Unreadable(msg) => return slots.blocking_send(Slot::Unreadable(msg)).is_ok(),
        };
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
        if deals.is_empty() {
            let slot = Slot::Lines {
                lines,
                answers: None,
                at,
            };
            return slots.blocking_send(slot).is_ok();
        }
        let (reply, answers) = oneshot::channel();
        let slot = Slot::Lines {
            lines,
            answers: Some(answers),
            at,
        };
        if slots.blocking_send(slot).is_err() {
            return false;
        }
        let request = SolveRequest { deals, analysis };
        submit.blocking_send(Submission { request, reply }).is_ok()
    });
}

/// One line on standard error about what happened to a daemon.
fn tell(progress: &Progress, event: &Event) {
    match event {
        Event::Failed {
            daemon,
            reason,
            resent,
        } => {
            let what = match resent {
                0 => String::new(),
                1 => "; its unanswered request goes to the other daemons".to_string(),
                n => format!("; its {n} unanswered requests go to the other daemons"),
            };
            progress.eprintln(format_args!(
                "patience: warning: {daemon} failed: {reason}{what}"
            ));
        }
        Event::Back { daemon } => {
            progress.eprintln(format_args!("patience: note: {daemon} is back"));
        }
        Event::Slowed { daemon, holding } => progress.eprintln(format_args!(
            "patience: note: {daemon} has answered nothing for a while; its {holding} unanswered \
             requests also go to the other daemons, and the first answer counts"
        )),
        Event::Found { daemon } => {
            progress.eprintln(format_args!(
                "patience: note: found {daemon}; it takes work too"
            ));
        }
        Event::ResolveFailed { name, error } => {
            progress.eprintln(format_args!("patience: warning: {name}: {error}"));
        }
    }
}

/// How printing ended.
enum Printed {
    /// Every slot was printed.
    All(Status),
    /// Whoever reads standard output closed it (`patience client big | head`): not an error.
    Closed(Status),
    /// A chunk's answers will never come: the session gave up.
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
                // The session checked the response: one answer per deal sent, each printable.
                None => match answers.next() {
                    Some(Answer::Solved {
                        probability,
                        analysis,
                    }) => {
                        let analysis = analysis
                            .as_ref()
                            .map(|a| JsonAnalysis::from_engine(a, render.asked));
                        render.solved(index, probability, analysis)
                    }
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
