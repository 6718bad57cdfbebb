//! Starting requests on the pool, for either game: each request is split into its bad items
//! (answered at once) and its valid ones, and the valid items of consecutive requests go to the
//! workers together, in jobs of [`Limits::batch`](super::Limits::batch) items, so that one-item
//! messages do not cost one worker wake-up each.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use futures::FutureExt;
use futures::future::BoxFuture;
use tonic::Status;

use super::SolverService;
use super::game::Game;
use crate::pool::{Engines, PoolError};
use crate::reason::Reason;

/// A finished response and how many of its items failed, for the call's log line.
pub(super) struct Answered<R> {
    pub response: R,
    pub errors: u64,
}

/// Requests queued on the pool together: the future of their responses, or why they could not be
/// queued.
pub(super) type Started<R> = Result<BoxFuture<'static, Vec<Answered<R>>>, Status>;

/// Where a valid item's result goes: (request in the group, position in the request).
type ResultAt = (usize, usize);

impl SolverService {
    /// Splits consecutive requests and queues their valid items on the pool, waiting for queue
    /// space. Each request comes with the stream index of its first item. Returns the future of
    /// their responses, in order. Dropping this future while it waits for queue space drops the
    /// tickets already taken, so nothing it queued runs.
    pub(super) async fn start<G: Game>(
        &self,
        requests: Vec<(G::Request, u64)>,
    ) -> Started<G::Response> {
        let mut answers = Vec::with_capacity(requests.len());
        let mut valid: Vec<(ResultAt, G::Work)> = Vec::new();
        for (r, (request, first_index)) in requests.into_iter().enumerate() {
            let split = G::split(self, request, first_index);
            answers.push(Answered {
                response: split.response,
                errors: split.errors,
            });
            valid.extend(split.valid.into_iter().map(|(i, w)| ((r, i), w)));
        }

        let mut batches = Vec::new();
        let mut rest = valid.into_iter().peekable();
        while rest.peek().is_some() {
            let (places, items): (Vec<ResultAt>, Vec<G::Work>) =
                rest.by_ref().take(self.limits.batch.max(1)).unzip();
            let metrics = self.metrics.clone();
            let queued = Instant::now();
            let waited = AtomicBool::new(false);
            let ticket = self
                .pool
                .submit_batch(items, move |engines: &mut Engines, work: G::Work| {
                    // The batch's wait in the queue, measured once, when its first item starts.
                    if !waited.swap(true, Ordering::Relaxed) {
                        metrics.queue_wait(queued.elapsed());
                    }
                    let started = Instant::now();
                    let solved = G::solve(engines, work);
                    metrics.solve_time(G::LABEL, started.elapsed());
                    solved
                })
                .await
                // The pool takes no more work only once the server is going away.
                .map_err(|_| Reason::Draining.status())?;
            batches.push((places, ticket));
        }

        let service = self.clone();
        Ok(async move {
            for (places, ticket) in batches {
                let mut outcomes = ticket
                    .await
                    .map(|v| v.into_iter().map(Some).collect::<Vec<_>>());
                for (n, (r, i)) in places.into_iter().enumerate() {
                    let solved = match &mut outcomes {
                        Ok(values) => values
                            .get_mut(n)
                            .and_then(Option::take)
                            .unwrap_or(Err(PoolError::Closed)),
                        Err(e) => Err(e.clone()),
                    };
                    if let Some(answer) = answers.get_mut(r) {
                        let failed = G::fill(&service, &mut answer.response, i, solved);
                        answer.errors += u64::from(failed);
                    }
                }
            }
            answers
        }
        .boxed())
    }
}
