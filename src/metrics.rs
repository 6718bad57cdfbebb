//! Prometheus metrics for the daemon, served as text at `/metrics` on `--metrics-addr`.
//!
//! The service records what happens to deals and streams; the pool's own counters (busy workers,
//! jobs waiting) are read when a scrape arrives, so nothing on the solving path takes a lock.
//! Beside ours (`patience_*`), the sets every operator's tooling expects, unprefixed: the gRPC
//! server metrics as go-grpc-prometheus names them (`grpc.rs`), the other HTTP requests as
//! OpenTelemetry names them (`http.rs`), and the process metrics as the Prometheus client
//! libraries name them (`process.rs`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
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

mod grpc;
mod http;
mod jobs;
mod operations;
mod process;
mod refusals;

pub use grpc::{CODE_NAMES, GrpcType, HANDLING_BUCKETS, MethodCounters};

/// The games, as the `game` label names them.
pub const GAMES: [&str; 2] = ["double_patience", "rps"];

/// The outcomes the service reports, by game: `solved`, or an error code's name.
const OUTCOMES: [(&str, &str); 13] = [
    ("double_patience", "solved"),
    ("double_patience", "bad_card"),
    ("double_patience", "card_count"),
    ("double_patience", "duplicate_card"),
    ("double_patience", "internal"),
    ("double_patience", "unspecified"),
    ("rps", "solved"),
    ("rps", "not_a_probability"),
    ("rps", "sum"),
    ("rps", "too_many_players"),
    ("rps", "missing_maze"),
    ("rps", "internal"),
    ("rps", "unspecified"),
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    /// `solved`, or the error code (`bad_card`, `card_count`, `duplicate_card`, `internal`).
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AnswerLabels {
    /// `double_patience` or `rps`.
    game: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GameLabels {
    game: &'static str,
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

/// An outcome's counter in `answers`, and in `deals` for Double Patience.
type OutcomeCounters = (Counter, Option<Counter>);

/// The daemon's metrics. Cheap to clone: every metric is shared.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    deals: Family<OutcomeLabels, Counter>,
    answers: Family<AnswerLabels, Counter>,
    /// Each outcome's counters (in `answers`, and in `deals` for Double Patience), fetched on
    /// first use and then kept, so counting an item is an atomic add or two rather than lookups
    /// under the families' locks.
    outcomes: Arc<[OnceLock<OutcomeCounters>; OUTCOMES.len()]>,
    /// Each game's histogram, in `GAMES` order, taken from the family once.
    solve_seconds: [Histogram; GAMES.len()],
    queue_wait_seconds: Histogram,
    deals_in_flight: Gauge,
    open_streams: Gauge,
    busy_workers: Gauge,
    queued_jobs: Gauge,
    open_connections: Gauge,
    open_calls: Gauge,
    open_watches: Gauge,
    connections_refused: Family<ReasonLabels, Counter>,
    accept_pauses: Family<ReasonLabels, Counter>,
    calls_refused: Family<ReasonLabels, Counter>,
    calls_cut: Family<ReasonLabels, Counter>,
    spans_dropped: Family<ReasonLabels, Counter>,
    limits: Family<LimitLabels, Gauge>,
    limit_seconds: Family<LimitLabels, Gauge<f64, AtomicU64>>,
    operations: operations::OperationsGauges,
    jobs: jobs::JobSeries,
    grpc: grpc::GrpcFamilies,
    http: http::HttpFamily,
    /// When each kind of refusal was last logged, and how many went unlogged since.
    refusal_log: Arc<Mutex<HashMap<&'static str, (Instant, u64)>>>,
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
        let mut root = Registry::default();
        let grpc = grpc::GrpcFamilies::register(&mut root);
        let http = http::HttpFamily::register(&mut root);
        root.register_collector(Box::new(process::ProcessCollector));
        let registry = root.sub_registry_with_prefix("patience");
        let deals = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "deals",
            "Double Patience deals answered, by outcome: solved, or the error code (the same as \
             answers{game=\"double_patience\"}, kept for dashboards that predate the second game)",
            deals.clone(),
        );
        let answers = Family::<AnswerLabels, Counter>::default();
        registry.register(
            "answers",
            "Items answered, by game (double_patience, rps) and outcome: solved, or the error code",
            answers.clone(),
        );
        // 10 us to about 0.3 s: one deal is ~30 us, a hard one a few ms, an rps case up to ~3 ms.
        let solve_family = Family::<GameLabels, Histogram>::new_with_constructor(
            (|| Histogram::new(exponential_buckets(1e-5, 2.0, 16))) as fn() -> Histogram,
        );
        registry.register(
            "solve_seconds",
            "Time to solve one item on a worker, by game",
            solve_family.clone(),
        );
        let solve_seconds =
            GAMES.map(|game| solve_family.get_or_create(&GameLabels { game }).clone());
        let queue_wait_seconds = Histogram::new(exponential_buckets(1e-5, 2.0, 20));
        registry.register(
            "queue_wait_seconds",
            "Time a batch of deals waited for a free worker",
            queue_wait_seconds.clone(),
        );
        let deals_in_flight = Gauge::default();
        registry.register(
            "deals_in_flight",
            "Items (deals and rps cases) read from clients and not yet answered: on a stream, until \
             the transport takes the result",
            deals_in_flight.clone(),
        );
        let open_streams = Gauge::default();
        registry.register(
            "open_streams",
            "Streaming calls (SolveStream, SolveRpsStream) in progress",
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
            "Solving calls in progress (SolveStream and SolveRpsStream against --max-open-streams, Solve \
             and SolveRps against --max-open-unary; health and reflection are not counted)",
            open_calls.clone(),
        );
        let open_watches = Gauge::default();
        registry.register(
            "open_watches",
            "Health Watch and reflection streams open, counted against --max-open-watches",
            open_watches.clone(),
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
            "Calls refused before any work, by reason: max_open_streams, max_open_unary, \
             max_open_watches, max_deals_in_flight (RESOURCE_EXHAUSTED), unauthenticated, \
             shutting_down (UNAVAILABLE)",
            calls_refused.clone(),
        );
        let calls_cut = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "calls_cut",
            "Calls in progress the server cut, by reason: stall_timeout (the client took none of \
             its results for --stall-timeout; those waiting were dropped)",
            calls_cut.clone(),
        );
        let spans_dropped = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "trace_spans_dropped",
            "Trace spans not delivered to the collector: queue_full (OTEL_BSP_MAX_QUEUE_SIZE was \
             reached: the collector is slow), export_failed (down or refusing); solving never waits",
            spans_dropped.clone(),
        );
        for reason in ["queue_full", "export_failed"] {
            drop(spans_dropped.get_or_create(&ReasonLabels { reason }));
        }
        let limits = Family::<LimitLabels, Gauge>::default();
        registry.register(
            "limit",
            "The value of each limit this daemon runs with, by flag",
            limits.clone(),
        );
        let limit_seconds = Family::<LimitLabels, Gauge<f64, AtomicU64>>::default();
        registry.register(
            "limit_seconds",
            "The value of each time limit this daemon runs with, by flag, in seconds (0: off)",
            limit_seconds.clone(),
        );
        let operations = operations::OperationsGauges::register(registry);
        let jobs = jobs::JobSeries::register(registry);
        registry.register(
            "build",
            "The running version",
            Info::new(BuildLabels {
                version: env!("CARGO_PKG_VERSION"),
            }),
        );
        Metrics {
            registry: Arc::new(root),
            deals,
            answers,
            outcomes: Arc::new(std::array::from_fn(|_| OnceLock::new())),
            solve_seconds,
            queue_wait_seconds,
            deals_in_flight,
            open_streams,
            busy_workers,
            queued_jobs,
            open_connections,
            open_calls,
            open_watches,
            connections_refused,
            accept_pauses,
            calls_refused,
            calls_cut,
            spans_dropped,
            limits,
            jobs,
            limit_seconds,
            operations,
            grpc,
            http,
            refusal_log: Arc::default(),
        }
    }

    /// The counter of trace spans dropped for `reason` (`queue_full`, `export_failed`).
    pub fn spans_dropped(&self, reason: &'static str) -> Counter {
        self.spans_dropped
            .get_or_create(&ReasonLabels { reason })
            .clone()
    }

    /// A connection opened (`1`) or closed (`-1`).
    pub fn connections(&self, n: i64) {
        self.open_connections.inc_by(n);
    }

    /// A call of either rpc started (`1`) or ended (`-1`).
    pub fn calls(&self, n: i64) {
        self.open_calls.inc_by(n);
    }

    /// Health watches and reflection streams opened (`n > 0`) or ended.
    pub fn watches(&self, n: i64) {
        self.open_watches.inc_by(n);
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
    /// most once per `REFUSAL_LOG_INTERVAL` and reason, with how many more there were since.
    pub fn call_refused(&self, reason: &'static str, peer: Option<SocketAddr>, status: &str) {
        self.calls_refused
            .get_or_create(&ReasonLabels { reason })
            .inc();
        if let Some(unlogged) = refusals::due(&self.refusal_log, reason) {
            tracing::warn!(
                reason,
                peer = peer_text(peer),
                more_since_last_logged = unlogged,
                "refused a call: {status}"
            );
        }
    }

    /// A TLS handshake that failed (counted as the `tls` reason of connections refused). Logged
    /// at info, as refused calls are, so that a client whose certificate the server refuses is
    /// told in the server's log too, not only by an alert the client may word as it likes.
    pub fn tls_refused(&self, peer: Option<SocketAddr>, why: &dyn std::fmt::Display) {
        self.connection_refused("tls");
        if let Some(unlogged) = refusals::due(&self.refusal_log, "tls") {
            tracing::info!(
                peer = peer_text(peer),
                more_since_last_logged = unlogged,
                "refused a connection: TLS handshake failed: {why}"
            );
        }
    }

    /// Counts a call the server cut while it was in progress.
    pub fn call_cut(&self, reason: &'static str) {
        self.calls_cut.get_or_create(&ReasonLabels { reason }).inc();
    }

    /// Publishes the value a limit runs with.
    pub fn limit(&self, flag: &'static str, value: u64) {
        self.limits
            .get_or_create(&LimitLabels { flag })
            .set(i64::try_from(value).unwrap_or(i64::MAX));
    }

    /// Publishes the value a time limit runs with; `None` (off) as 0.
    pub fn limit_seconds(&self, flag: &'static str, value: Option<Duration>) {
        self.limit_seconds
            .get_or_create(&LimitLabels { flag })
            .set(value.map_or(0.0, |d| d.as_secs_f64()));
    }

    /// Publishes the memory bound the limits give, in bytes.
    pub fn memory_bound(&self, bytes: u64) {
        self.operations.memory_bound(bytes);
    }

    /// Shutdown has begun draining calls, now.
    pub fn drain_began(&self) {
        self.operations.drain_began();
    }

    /// Whether the pool counts as stalled (see `server/liveness.rs`).
    pub fn pool_stalled(&self, stalled: bool) {
        self.operations.pool_stalled(stalled);
    }

    /// The standard gRPC series of one method, created now at zero, to record its calls into.
    pub fn grpc_method(&self, kind: GrpcType, service: &str, method: &str) -> MethodCounters {
        self.grpc.method(kind, service, method)
    }

    /// One HTTP request that was no gRPC call: its method (as `http_request_method` names it),
    /// route, status and time.
    pub fn http_request(&self, method: &'static str, route: &str, status: u16, took: Duration) {
        self.http.request(method, route, status, took);
    }

    /// Counts one answered item of `game` (one of [`GAMES`]); `outcome` is `solved` or an error
    /// code's name.
    pub fn answered(&self, game: &'static str, outcome: &'static str) {
        let counters = || {
            let answer = self
                .answers
                .get_or_create(&AnswerLabels { game, outcome })
                .clone();
            let deal = (game == GAMES[0])
                .then(|| self.deals.get_or_create(&OutcomeLabels { outcome }).clone());
            (answer, deal)
        };
        let inc = |(answer, deal): &OutcomeCounters| {
            answer.inc();
            if let Some(deal) = deal {
                deal.inc();
            }
        };
        match OUTCOMES.iter().position(|&o| o == (game, outcome)) {
            Some(i) => inc(self.outcomes[i].get_or_init(counters)),
            None => inc(&counters()),
        }
    }

    /// One item's time on a worker; `game` is one of [`GAMES`].
    pub fn solve_time(&self, game: &'static str, took: Duration) {
        let i = GAMES.iter().position(|&g| g == game).unwrap_or(0);
        self.solve_seconds[i].observe(took.as_secs_f64());
    }

    pub fn queue_wait(&self, took: Duration) {
        self.queue_wait_seconds.observe(took.as_secs_f64());
    }

    /// The in-flight gauge itself, for a count that lives with a response.
    pub fn in_flight_gauge(&self) -> Gauge {
        self.deals_in_flight.clone()
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

/// A peer's address for a log line.
fn peer_text(peer: Option<SocketAddr>) -> String {
    peer.map_or_else(|| "unknown".to_string(), |p| p.to_string())
}
