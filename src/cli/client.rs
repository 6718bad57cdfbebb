//! `patience client`: streams deal files to a daemon and prints exactly what `patience solve` would.
//!
//! The files are read here with the same reader as `solve`, so a deal the client cannot parse gets
//! the same `error:` line in the same place without a round trip. Valid deals go out in requests of
//! `--batch` deals on one `SolveStream` call; each response is matched to its request in order.
//! Every queue between the file and the terminal is bounded, so the client's memory is flat
//! however large the file is.

use std::io::{self, BufWriter, Write};

use anyhow::{Context as _, bail};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::ClientArgs;
use super::batches::{Event, read_batches};
use super::input::Input;
use super::output::{Status, error_line, probability_line};
use crate::auth::{AddBearer, read_token_file};
use crate::proto::solver_client::SolverClient;
use crate::proto::{self, SolveRequest, result::Outcome};
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

/// The daemon's address with the TLS settings the flags ask for.
fn endpoint(args: &ClientArgs) -> anyhow::Result<Endpoint> {
    let endpoint = Endpoint::from_shared(args.addr.clone()).with_context(|| {
        format!(
            "{} is not an address like http://127.0.0.1:50051",
            args.addr
        )
    })?;
    let https = args.addr.starts_with("https://");
    if !https && (args.tls_ca.is_some() || args.tls_cert.is_some()) {
        bail!("TLS flags need an https:// address (got {})", args.addr);
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

/// What the printer does for one batch, in input order.
enum Slot {
    /// The batch's lines: `None` marks a deal sent to the server, answered by the next response.
    Lines(Vec<Option<String>>),
    /// An input that could not be read.
    Unreadable(String),
}

/// Batches read ahead of the printer; bounds the client's memory.
const AHEAD: usize = 32;

pub fn run(args: &ClientArgs) -> anyhow::Result<Status> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(stream_files(args))
}

async fn stream_files(args: &ClientArgs) -> anyhow::Result<Status> {
    let channel = endpoint(args)?
        .connect()
        .await
        .with_context(|| format!("cannot connect to {}", args.addr))?;
    let token = args
        .auth_token_file
        .as_deref()
        .map(read_token_file)
        .transpose()?;
    let bearer =
        AddBearer::new(token.as_ref()).map_err(|s| anyhow::anyhow!(s.message().to_string()))?;
    let mut client =
        SolverClient::with_interceptor(channel, bearer).max_decoding_message_size(usize::MAX);

    let (requests_tx, requests_rx) = mpsc::channel::<SolveRequest>(AHEAD);
    let (slots_tx, mut slots_rx) = mpsc::channel::<Slot>(AHEAD);
    let inputs = Input::from_args(&args.files);
    let batch = args.batch as usize;
    // Reading files is blocking work: keep it off the async threads.
    let reader = tokio::task::spawn_blocking(move || {
        read_batches(&inputs, batch, |event| {
            let slot = match event {
                Event::Batch(entries) => {
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
                            Err(msg) => Some(error_line(&msg)),
                        })
                        .collect();
                    if !deals.is_empty()
                        && requests_tx
                            .blocking_send(SolveRequest {
                                deals,
                                analysis: None,
                            })
                            .is_err()
                    {
                        return false;
                    }
                    Slot::Lines(lines)
                }
                Event::Unreadable(msg) => Slot::Unreadable(msg),
            };
            slots_tx.blocking_send(slot).is_ok()
        });
    });

    let mut responses = client
        .solve_stream(ReceiverStream::new(requests_rx))
        .await
        .context("the server refused the stream")?
        .into_inner();

    let mut out = BufWriter::new(io::stdout().lock());
    let mut status = Status::Ok;
    while let Some(slot) = slots_rx.recv().await {
        match slot {
            Slot::Unreadable(msg) => {
                out.flush().ok();
                eprintln!("patience: {msg}");
                status = Status::Trouble;
            }
            Slot::Lines(lines) => {
                let mut answers = if lines.iter().any(Option::is_none) {
                    let response = match responses.message().await {
                        Ok(Some(r)) => r,
                        Ok(None) => {
                            bail!("the server ended the stream before answering every deal")
                        }
                        Err(s) => bail!("the server failed: {}: {}", s.code(), s.message()),
                    };
                    response.results.into_iter()
                } else {
                    Vec::new().into_iter()
                };
                for line in lines {
                    let line = match line {
                        Some(error) => {
                            status = status.max(Status::BadDeal);
                            error
                        }
                        None => match answers.next().and_then(|r| r.outcome) {
                            Some(Outcome::Probability(p)) => probability_line(p, args.precision),
                            Some(Outcome::Error(e)) => {
                                status = status.max(Status::BadDeal);
                                error_line(&format!("server: {}", e.message))
                            }
                            None => bail!("the server's response is missing a result"),
                        },
                    };
                    if let Err(e) = writeln!(out, "{line}") {
                        if e.kind() == io::ErrorKind::BrokenPipe {
                            return Ok(status);
                        }
                        return Err(e).context("cannot write the results");
                    }
                }
                if slots_rx.is_empty() {
                    out.flush().context("cannot write the results")?;
                }
            }
        }
    }
    out.flush().context("cannot write the results")?;
    reader.await.context("the file reader failed")?;
    Ok(status)
}
