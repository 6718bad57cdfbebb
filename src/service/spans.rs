//! The child spans of a call's span for what takes its time: waiting for admission (a share of
//! `--max-in-flight` and `--max-deals-in-flight`) and solving a batch of items. Never one per
//! item: a batch is a request, or the requests of one pool group.

use futures::FutureExt as _;
use tracing::Instrument as _;

/// Runs a wait for admission; only a wait that does not finish at once gets a span (of the
/// current span, the call's), so a call that never waits records none.
pub(super) async fn admission<F: Future>(wait: F, items: usize) -> F::Output {
    let mut wait = std::pin::pin!(wait);
    if let Some(done) = wait.as_mut().now_or_never() {
        return done;
    }
    let span = tracing::info_span!(target: "patience::service", "admission", items = items as i64);
    wait.instrument(span).await
}

/// The span of a batch of `items` being solved: from its queueing on the pool to its last result.
pub(super) fn solve(items: usize) -> tracing::Span {
    tracing::info_span!(target: "patience::service", "solve", items = items as i64)
}
