//! Starting requests on the pool, for either game: each request is split into its bad items
//! (answered at once) and its valid ones, and the valid items of consecutive requests go to the
//! workers together, in jobs of [`Limits::batch`](super::Limits::batch) items, so that one-item
//! messages do not cost one worker wake-up each.

use std::time::Instant;

use futures::FutureExt;
use futures::future::BoxFuture;
use tonic::Status;

use super::SolverService;
use super::game::Game;
use crate::pool::{Engines, PoolError};
use crate::proto::reason::Reason;

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
        let job = job_size(valid.len(), self.pool.workers(), self.limits.batch);
        let mut rest = valid.into_iter().peekable();
        while rest.peek().is_some() {
            let (places, items): (Vec<ResultAt>, Vec<G::Work>) = rest.by_ref().take(job).unzip();
            let metrics = self.metrics.clone();
            let queued = Instant::now();
            // When the item before this one ended: the next one starts then. One clock read per
            // item instead of two.
            let mut last: Option<Instant> = None;
            let ticket = self
                .pool
                .submit_batch(items, move |engines: &mut Engines, work: G::Work| {
                    // The batch's wait in the queue, measured once, when its first item starts.
                    let started = *last.get_or_insert_with(|| {
                        let now = Instant::now();
                        metrics.queue_wait(now.saturating_duration_since(queued));
                        now
                    });
                    let solved = G::solve(engines, work);
                    let ended = Instant::now();
                    metrics.solve_time(G::LABEL, ended.saturating_duration_since(started));
                    last = Some(ended);
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

/// The most items one pool job takes: past this the per-job cost (a queue hop, a wake-up of the
/// call's task) is a thousandth of the job, and a longer job only delays the call's first answer.
const MAX_JOB: usize = 256;

/// Items per pool job for a group of `items`: the group spread over every worker, each job at
/// least `least` items (the `Limits::batch` floor, so one-item messages grouped together do not
/// cost a job each) and at most [`MAX_JOB`]. A 256-deal message on two workers is two jobs of 128,
/// where jobs of 32 cost eight wake-ups.
fn job_size(items: usize, workers: usize, least: usize) -> usize {
    items
        .div_ceil(workers.max(1))
        .clamp(least.max(1), MAX_JOB.max(least))
}

#[cfg(test)]
mod tests {
    use super::job_size;

    #[test]
    fn a_group_is_spread_over_the_workers_in_jobs_between_the_floor_and_the_ceiling() {
        // A 256-deal message on two workers: two jobs.
        assert_eq!(job_size(256, 2, 32), 128);
        // Small groups are not cut below the floor.
        assert_eq!(job_size(40, 4, 32), 32);
        assert_eq!(job_size(1, 8, 32), 32);
        // Large groups on one worker: jobs of the ceiling.
        assert_eq!(job_size(10_000, 1, 32), 256);
        // A floor above the ceiling wins (it is what the operator asked for).
        assert_eq!(job_size(10_000, 1, 500), 500);
        assert_eq!(job_size(10, 0, 0), 10);
    }
}
