//! The server-wide deal budget: at most `--max-deals-in-flight` deals read but not yet handed
//! back, across all calls (the number of calls is capped by the server, `server/calls.rs`).
//!
//! A new call that finds the budget spent is refused with `RESOURCE_EXHAUSTED` naming the flag;
//! calls in progress are untouched: they wait for budget, which the workers give back as they
//! answer. Each request's deals are held by a [`Held`], released when its response is handed to
//! the transport.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore};
use tonic::Status;

use super::InFlight;
use crate::metrics::Metrics;

#[derive(Clone, Debug)]
pub(super) struct Admission {
    deals: Arc<Semaphore>,
    max_deals: usize,
    metrics: Metrics,
}

/// A request's deals, counted against its call's budget and the server's until its response has
/// been handed to the transport (or dropped), and for a stream's in `patience_deals_in_flight`
/// as long: so the gauge shows what the budget holds, a client that does not read included.
pub(super) struct Held {
    _call: Option<OwnedSemaphorePermit>,
    _server: OwnedSemaphorePermit,
    in_flight: Option<InFlight>,
}

impl Held {
    /// Counts the request's `items` in `patience_deals_in_flight` while this is held.
    pub fn count(&mut self, metrics: &Metrics, items: usize) {
        self.in_flight = Some(InFlight::new(metrics, items as i64));
    }
}

impl Admission {
    pub fn new(limits: &super::Limits, metrics: Metrics) -> Admission {
        let max_deals = limits.max_deals_in_flight.max(1);
        Admission {
            deals: Arc::new(Semaphore::new(max_deals)),
            max_deals,
            metrics,
        }
    }

    /// Lets a new call in, or says with `RESOURCE_EXHAUSTED` that the deal budget is spent.
    pub fn admit(&self, peer: Option<SocketAddr>) -> Result<(), Status> {
        if self.deals.available_permits() == 0 {
            let status = Status::resource_exhausted(format!(
                "the server holds its limit of {} unanswered deals (server flag \
                 --max-deals-in-flight); retry later, or on another replica",
                self.max_deals
            ));
            self.metrics
                .call_refused("max_deals_in_flight", peer, status.message());
            return Err(status);
        }
        Ok(())
    }

    /// Waits for `deals` (at least one, at most the whole budget) of the server's deal budget.
    pub async fn hold(&self, deals: usize) -> Result<Held, AcquireError> {
        let server = self
            .deals
            .clone()
            .acquire_many_owned(self.cost(deals))
            .await?;
        Ok(Held {
            _call: None,
            _server: server,
            in_flight: None,
        })
    }

    /// Waits for `deals` of a call's own budget `call`, then of the server's, in that order (a
    /// call never holds server budget while it waits for its own).
    pub fn hold_with(
        &self,
        call: Arc<Semaphore>,
        deals: usize,
    ) -> impl Future<Output = Result<Held, AcquireError>> + Send + 'static {
        let server = self.deals.clone();
        let cost = self.cost(deals);
        async move {
            let own = call.acquire_many_owned(cost).await?;
            let server = server.acquire_many_owned(cost).await?;
            Ok(Held {
                _call: Some(own),
                _server: server,
                in_flight: None,
            })
        }
    }

    fn cost(&self, deals: usize) -> u32 {
        u32::try_from(deals.clamp(1, self.max_deals)).unwrap_or(u32::MAX)
    }
}
