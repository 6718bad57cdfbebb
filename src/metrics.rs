//! Prometheus metrics for the daemon, served as text at `/metrics` on `--metrics-addr`.
//!
//! The service records what happens to deals and streams; the pool's own counters (busy workers,
//! jobs waiting) are read when a scrape arrives, so nothing on the solving path takes a lock.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitLabels {
    /// The flag that sets it, without the dashes: `max_open_streams`.
    flag: &'static str,
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
    open_connections: Gauge,
    open_calls: Gauge,
    connections_refused: Family<ReasonLabels, Counter>,
    accept_pauses: Family<ReasonLabels, Counter>,
    calls_refused: Family<ReasonLabels, Counter>,
    limits: Family<LimitLabels, Gauge>,
    /// When each kind of refusal was last logged, and how many went unlogged since.
    refusal_log: Arc<Mutex<HashMap<&'static str, (Instant, u64)>>>,
}

/// At most one log line per kind of refusal in this interval: an attack or a misconfigured client
/// shows in the log without flooding it.
const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(10);

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
        let open_connections = Gauge::default();
        registry.register(
            "open_connections",
            "Client connections open (TCP accepted, handshake done or under way)",
            open_connections.clone(),
        );
        let open_calls = Gauge::default();
        registry.register(
            "open_calls",
            "Calls of any rpc in progress, counted against --max-open-streams",
            open_calls.clone(),
        );
        let connections_refused = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "connections_refused",
            "Connections closed before serving a call, by reason: handshake_timeout (no TLS \
             handshake or HTTP/2 preface within --handshake-timeout), tls (a failed TLS \
             handshake)",
            connections_refused.clone(),
        );
        let accept_pauses = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "accept_pauses",
            "Times the listener stopped accepting for a while, by reason: max_connections (at \
             --max-connections), file_limit (out of file descriptors), accept_error",
            accept_pauses.clone(),
        );
        let calls_refused = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "calls_refused",
            "Calls refused before any work, by reason: max_open_streams, max_deals_in_flight \
             (RESOURCE_EXHAUSTED), unauthenticated, shutting_down (UNAVAILABLE)",
            calls_refused.clone(),
        );
        let limits = Family::<LimitLabels, Gauge>::default();
        registry.register(
            "limit",
            "The value of each limit this daemon runs with, by flag",
            limits.clone(),
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
            open_connections,
            open_calls,
            connections_refused,
            accept_pauses,
            calls_refused,
            limits,
            refusal_log: Arc::default(),
        }
    }

    /// A connection opened (`1`) or closed (`-1`).
    pub fn connections(&self, n: i64) {
        self.open_connections.inc_by(n);
    }

    /// A call of either rpc started (`1`) or ended (`-1`).
    pub fn calls(&self, n: i64) {
        self.open_calls.inc_by(n);
    }

    /// A connection closed before serving anything; `reason` as the metric documents.
    pub fn connection_refused(&self, reason: &'static str) {
        self.connections_refused
            .get_or_create(&ReasonLabels { reason })
            .inc();
    }

    /// The listener paused accepting; `reason` as the metric documents.
    pub fn accept_paused(&self, reason: &'static str) {
        self.accept_pauses
            .get_or_create(&ReasonLabels { reason })
            .inc();
    }

    /// A call refused before any work; `reason` as the metric documents. Logged at warn, at
    /// most once per [`REFUSAL_LOG_INTERVAL`] and reason, with how many more there were since.
    pub fn call_refused(&self, reason: &'static str, peer: Option<SocketAddr>, status: &str) {
        self.calls_refused
            .get_or_create(&ReasonLabels { reason })
            .inc();
        let now = Instant::now();
        let unlogged = {
            let Ok(mut log) = self.refusal_log.lock() else {
                return;
            };
            match log.get_mut(reason) {
                Some((last, unlogged)) if now.duration_since(*last) < REFUSAL_LOG_INTERVAL => {
                    *unlogged += 1;
                    return;
                }
                Some((last, unlogged)) => {
                    *last = now;
                    std::mem::take(unlogged)
                }
                None => {
                    log.insert(reason, (now, 0));
                    0
                }
            }
        };
        let peer = peer.map_or_else(|| "unknown".to_string(), |p| p.to_string());
        tracing::warn!(
            reason,
            peer,
            more_since_last_logged = unlogged,
            "refused a call: {status}"
        );
    }

    /// Publishes the value a limit runs with.
    pub fn limit(&self, flag: &'static str, value: u64) {
        self.limits
            .get_or_create(&LimitLabels { flag })
            .set(i64::try_from(value).unwrap_or(i64::MAX));
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
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let text = metrics.render(&pool);
            async move {
                (
                    [(
                        http::header::CONTENT_TYPE,
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
