//! Prometheus metrics for the daemon, served as text at `/metrics` on `--metrics-addr`.
//!
//! The service records what happens to deals and streams; the pool's own counters (busy workers,
//! jobs waiting) are read when a scrape arrives, so nothing on the solving path takes a lock.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

use crate::pool::Pool;

/// The outcomes the service reports.
const OUTCOMES: [&str; 6] = [
    "solved",
    "bad_card",
    "card_count",
    "duplicate_card",
    "internal",
    "unspecified",
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    /// `solved`, or the error code (`bad_card`, `card_count`, `duplicate_card`, `internal`).
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: &'static str,
}

/// The daemon's metrics. Cheap to clone: every metric is shared.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    deals: Family<OutcomeLabels, Counter>,
    /// Each outcome's counter, fetched from `deals` on first use and then kept, so counting a deal
    /// is one atomic add rather than a lookup under the family's lock.
    outcomes: Arc<[OnceLock<Counter>; OUTCOMES.len()]>,
    solve_seconds: Histogram,
    queue_wait_seconds: Histogram,
    deals_in_flight: Gauge,
    open_streams: Gauge,
    busy_workers: Gauge,
    queued_jobs: Gauge,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("patience");
        let deals = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "deals",
            "Deals answered, by outcome: solved, or the error code",
            deals.clone(),
        );
        // 10 us to about 0.3 s: one deal is ~50 us, a hard one a few ms.
        let solve_seconds = Histogram::new(exponential_buckets(1e-5, 2.0, 16));
        registry.register(
            "solve_seconds",
            "Time to solve one deal on a worker",
            solve_seconds.clone(),
        );
        let queue_wait_seconds = Histogram::new(exponential_buckets(1e-5, 2.0, 20));
        registry.register(
            "queue_wait_seconds",
            "Time a batch of deals waited for a free worker",
            queue_wait_seconds.clone(),
        );
        let deals_in_flight = Gauge::default();
        registry.register(
            "deals_in_flight",
            "Deals read from clients and not yet answered",
            deals_in_flight.clone(),
        );
        let open_streams = Gauge::default();
        registry.register(
            "open_streams",
            "SolveStream calls in progress",
            open_streams.clone(),
        );
        let busy_workers = Gauge::default();
        registry.register(
            "busy_workers",
            "Solver workers solving right now",
            busy_workers.clone(),
        );
        let queued_jobs = Gauge::default();
        registry.register(
            "queued_jobs",
            "Batches waiting for a free worker",
            queued_jobs.clone(),
        );
        registry.register(
            "build",
            "The running version",
            Info::new(BuildLabels {
                version: env!("CARGO_PKG_VERSION"),
            }),
        );
        Metrics {
            registry: Arc::new(registry),
            deals,
            outcomes: Arc::new(std::array::from_fn(|_| OnceLock::new())),
            solve_seconds,
            queue_wait_seconds,
            deals_in_flight,
            open_streams,
            busy_workers,
            queued_jobs,
        }
    }

    /// Counts one answered deal; `outcome` is `solved` or an error code's name.
    pub fn deal(&self, outcome: &'static str) {
        match OUTCOMES.iter().position(|&o| o == outcome) {
            Some(i) => self.outcomes[i]
                .get_or_init(|| self.deals.get_or_create(&OutcomeLabels { outcome }).clone())
                .inc(),
            None => self.deals.get_or_create(&OutcomeLabels { outcome }).inc(),
        };
    }

    pub fn solve_time(&self, took: Duration) {
        self.solve_seconds.observe(took.as_secs_f64());
    }

    pub fn queue_wait(&self, took: Duration) {
        self.queue_wait_seconds.observe(took.as_secs_f64());
    }

    /// Deals read but not answered: `n` more (or fewer, when negative).
    pub fn in_flight(&self, n: i64) {
        self.deals_in_flight.inc_by(n);
    }

    /// A stream opened (`1`) or closed (`-1`).
    pub fn streams(&self, n: i64) {
        self.open_streams.inc_by(n);
    }

    /// The text exposition, with the pool's gauges read now.
    pub fn render(&self, pool: &Pool) -> String {
        self.busy_workers.set(pool.stats().busy() as i64);
        self.queued_jobs.set(pool.queued() as i64);
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// Serves `/metrics` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: Metrics,
    pool: Arc<Pool>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let text = metrics.render(&pool);
            async move {
                (
                    [(
                        axum::http::header::CONTENT_TYPE,
                        "text/plain; version=0.0.4; charset=utf-8",
                    )],
                    text,
                )
            }
        }),
    );
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

/// The addresses a metrics endpoint was bound to, for logs.
pub fn describe(addr: Option<SocketAddr>) -> String {
    addr.map_or_else(|| "off".to_string(), |a| format!("http://{a}/metrics"))
}
