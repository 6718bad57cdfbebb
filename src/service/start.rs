//! Starting requests on the pool: deals are parsed and validated here (cheap, and it keeps bad
//! deals off the workers), and the valid ones of consecutive requests go to the workers together,
//! in jobs of [`Limits::batch`](super::Limits::batch) deals, so that one-deal messages do not
//! cost one worker wake-up each.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tonic::Status;

use super::SolverService;
use super::admission::Held;
use crate::deal::Deal;
use crate::metrics::Metrics;
use crate::pool::{Engines, PoolError};
use crate::proto::{self, ErrorCode, SolveRequest, SolveResponse, result::Outcome};
use crate::solver::{Options, Solver};

/// A finished response and how many of its deals failed, for the call's log line.
pub(super) struct Answered {
    pub response: SolveResponse,
    pub errors: u64,
}

/// Requests queued on the pool together: the future of their responses, or why they could not be
/// queued.
pub(super) type Started = Result<BoxFuture<'static, Vec<Answered>>, Status>;

/// Where a valid deal's result goes: (request in the group, position in the request).
type Place = (usize, usize);

/// A valid deal for the pool, the analysis its request asked for, and whether the `panic_on_id`
/// test hook picked it.
type Work = (Deal, Option<Options>, bool);

impl SolverService {
    /// Validates the deals of consecutive requests and queues the valid ones on the pool, waiting
    /// for queue space. Each request comes with the stream index of its first deal. Returns the
    /// future of their responses, in order. Dropping this future while it waits for queue space
    /// drops the tickets already taken, so nothing it queued runs.
    pub(super) async fn start(&self, requests: Vec<(SolveRequest, u64)>) -> Started {
        let (mut answers, valid) = self.parse(requests);
        let mut batches = Vec::new();
        let mut rest = valid.into_iter().peekable();
        while rest.peek().is_some() {
            let (places, deals): (Vec<Place>, Vec<Work>) =
                rest.by_ref().take(self.limits.batch.max(1)).unzip();
            let metrics = self.metrics.clone();
            let queued = Instant::now();
            let waited = AtomicBool::new(false);
            let ticket = self
                .pool
                .submit_batch(deals, move |engines: &mut Engines, work: Work| {
                    // The batch's wait in the queue, measured once, when its first deal starts.
                    if !waited.swap(true, Ordering::Relaxed) {
                        metrics.queue_wait(queued.elapsed());
                    }
                    solve(&mut engines.deals, work, &metrics)
                })
                .await
                .map_err(|e| Status::unavailable(e.to_string()))?;
            batches.push((places, ticket));
        }

        let metrics = self.metrics.clone();
        Ok(async move {
            for (places, ticket) in batches {
                let mut outcomes = ticket.await;
                for (n, (r, i)) in places.into_iter().enumerate() {
                    let (outcome, analysis) = match &mut outcomes {
                        Ok(values) => match values.get_mut(n) {
                            Some(Ok((p, analysis))) => (Outcome::Probability(*p), analysis.take()),
                            Some(Err(e)) => (internal(e), None),
                            None => (internal(&PoolError::Closed), None),
                        },
                        Err(e) => (internal(e), None),
                    };
                    metrics.deal(match &outcome {
                        Outcome::Probability(_) => "solved",
                        Outcome::Error(e) => code_name(e.code),
                    });
                    if let Some(answer) = answers.get_mut(r) {
                        answer.errors += u64::from(matches!(outcome, Outcome::Error(_)));
                        if let Some(result) = answer.response.results.get_mut(i) {
                            result.outcome = Some(outcome);
                            result.analysis = analysis;
                        }
                    }
                }
            }
            answers
        }
        .boxed())
    }

    /// Each request's response with its bad deals already answered, and the valid deals for the
    /// pool, each with the place its result goes.
    fn parse(&self, requests: Vec<(SolveRequest, u64)>) -> (Vec<Answered>, Vec<(Place, Work)>) {
        let mut answers: Vec<Answered> = Vec::with_capacity(requests.len());
        let mut valid: Vec<(Place, Work)> = Vec::new();
        for (r, (request, first_index)) in requests.into_iter().enumerate() {
            let options = request.analysis.map(Options::from);
            let mut results = Vec::with_capacity(request.deals.len());
            let mut errors = 0;
            for (i, deal) in request.deals.into_iter().enumerate() {
                let outcome = match Deal::parse(&deal.cards) {
                    Ok(parsed) => {
                        let panic = self.limits.panic_on_id.as_ref() == Some(&deal.id);
                        valid.push(((r, i), (parsed, options, panic)));
                        None
                    }
                    Err(e) => {
                        errors += 1;
                        let wire = proto::DealError::from(&e);
                        self.metrics.deal(code_name(wire.code));
                        Some(Outcome::Error(wire))
                    }
                };
                results.push(proto::Result {
                    index: first_index + i as u64,
                    id: deal.id,
                    outcome,
                    analysis: None,
                });
            }
            answers.push(Answered {
                response: SolveResponse { results },
                errors,
            });
        }
        (answers, valid)
    }
}

/// One deal on a worker: its probability, and its analysis in wire form when its request asked
/// for one (converted here, so the async side only moves it).
fn solve(
    solver: &mut Solver,
    (deal, options, panic): Work,
    metrics: &Metrics,
) -> (f64, Option<proto::Analysis>) {
    assert!(!panic, "fault injected by the panic_on_id test hook");
    let started = Instant::now();
    let answer = match options {
        None => (solver.solve(&deal).probability, None),
        Some(options) => {
            let analysis = solver.analyze(&deal, options);
            (analysis.probability, Some(proto::Analysis::from(&analysis)))
        }
    };
    metrics.solve_time(started.elapsed());
    answer
}

fn internal(e: &PoolError) -> Outcome {
    Outcome::Error(proto::DealError {
        code: ErrorCode::Internal as i32,
        message: format!("internal error: {e}"),
    })
}

/// A metrics label for an error code.
fn code_name(code: i32) -> &'static str {
    match ErrorCode::try_from(code) {
        Ok(ErrorCode::BadCard) => "bad_card",
        Ok(ErrorCode::CardCount) => "card_count",
        Ok(ErrorCode::DuplicateCard) => "duplicate_card",
        Ok(ErrorCode::Internal) => "internal",
        _ => "unspecified",
    }
}

/// A request read from a stream, with the stream index of its first deal and the budget it holds.
pub(super) type Submission = (SolveRequest, u64, Held);

/// A stream's helper task that queues its requests' batches on the pool one group after another
/// (queueing waits while the pool's queue is full) and hands back each group's responses' future,
/// in order, with the budget they hold. So the stream's own task goes on reading and forwarding
/// meanwhile. The task ends when this is dropped, however the call ends.
pub(super) struct Submitter {
    requests: mpsc::UnboundedSender<Submission>,
    started: mpsc::UnboundedReceiver<(Started, Vec<Held>)>,
    task: tokio::task::JoinHandle<()>,
}

impl Submitter {
    pub fn spawn(service: SolverService) -> Submitter {
        let (requests, mut submit_rx) = mpsc::unbounded_channel::<Submission>();
        let (started_tx, started) = mpsc::unbounded_channel::<(Started, Vec<Held>)>();
        let batch = service.limits.batch.max(1);
        let task = tokio::spawn(async move {
            while let Some(first) = submit_rx.recv().await {
                // Requests that are already waiting join this one, up to one pool batch.
                let mut deals = first.0.deals.len();
                let mut group = vec![first];
                while deals < batch {
                    let Ok(next) = submit_rx.try_recv() else {
                        break;
                    };
                    deals += next.0.deals.len();
                    group.push(next);
                }
                let (requests, permits): (Vec<_>, Vec<_>) = group
                    .into_iter()
                    .map(|(request, first_index, permit)| ((request, first_index), permit))
                    .unzip();
                let started = service.start(requests).await;
                if started_tx.send((started, permits)).is_err() {
                    break;
                }
            }
        });
        Submitter {
            requests,
            started,
            task,
        }
    }

    /// Queues a request behind those sent before; `Err` only if the task has stopped.
    pub fn send(&self, submission: Submission) -> Result<(), Submission> {
        self.requests.send(submission).map_err(|e| e.0)
    }

    /// The next group's responses, in the order the requests were sent.
    pub async fn next(&mut self) -> Option<(Started, Vec<Held>)> {
        self.started.recv().await
    }
}

impl Drop for Submitter {
    fn drop(&mut self) {
        self.task.abort();
    }
}
