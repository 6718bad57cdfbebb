//! Wiring the daemon: the solver service with health and reflection beside it, the connection
//! limits, and a graceful shutdown with a time limit.
//!
//! [`run`] takes a bound listener and a shutdown future, so tests start it on port 0 and stop it
//! at will, exactly as `patience serve` does with SIGTERM. The server accepts and serves
//! connections itself (`listener.rs`, `connection.rs`) on hyper, with tonic's routing and
//! services on top, so that every connection is under its limits from the first byte.

mod api;
mod app;
mod call;
mod connection;
mod frames;
mod front;
mod http_metrics;
mod listener;
mod liveness;
mod memory_bound;
mod metrics_endpoint;
mod published;
mod route;
mod tls;
mod ui;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::Semaphore;
use tokio_util::task::{AbortOnDropHandle, TaskTracker};

use crate::auth::Secret;
use crate::auth::tenants::Tenant;
use crate::jobs::daemon::board::{Board, BoardSettings, Clock, JobMetrics, JobState, TenantGauges};
use crate::jobs::in_full;
use crate::metrics::Metrics;
use crate::pool::Pool;
use crate::proto::rps_service_server::RpsServiceServer;
use crate::proto::solver_server::SolverServer;
use crate::service::jobs::JobsService;
use crate::service::{Admission, Caps, Lifecycle, Limits, Phase, SolverService};

pub use front::CorsOrigins;
pub use tls::TlsError;

/// HTTP/2 receive window per stream. This is what a stream whose reading has been paused (its
/// in-flight window is full) may still buffer in the server, so it bounds memory per stream.
///
/// It must also stay small for a reason of h2's own: h2 charges every small DATA frame it buffers
/// against a per-connection budget of half the connection window, and closes the whole connection
/// (GOAWAY `ENHANCE_YOUR_CALM`, "too_many_data_frames") when the budget runs out. A client that
/// streams one deal per message (frames of ~120 bytes, charged ~136 each) to a server that has
/// paused reading would hit that with hyper's 1 MiB windows; with these windows, 32 paused streams
/// of one connection buffer at most 2 MiB of frames, charged under 5 MiB, within the 8 MiB
/// budget.
pub const STREAM_WINDOW: u32 = 64 << 10;
/// HTTP/2 receive window per connection: large, so that the small-frame budget (half of it) is
/// never what stops a well-behaved client; the per-stream windows bound the memory.
pub const CONNECTION_WINDOW: u32 = 16 << 20;

/// The default `--compress-min-bytes`: a response of a few dozen deals. Below it compression
/// saves a handful of bytes for its CPU, and a one-deal answer compressed grows.
pub const DEFAULT_COMPRESS_MIN_BYTES: usize = 512;

/// Files the process keeps for itself beside its connections and its metrics scrapes (standard
/// streams, the runtime's epoll and wake-up descriptors, the listeners, the trace exporter's
/// connection, `/proc` while a scrape reads it, the certificate and token files while they are
/// read), with room to spare.
pub const RESERVED_FILES: u64 = 112;

/// The default `--metrics-max-connections`: Prometheus keeps one connection per scraper, so a
/// few are plenty; every one is a descriptor the main port cannot have.
pub const DEFAULT_METRICS_CONNECTIONS: usize = 16;

/// The default `--max-connections`: what the open-file limit leaves after [`RESERVED_FILES`] and
/// the metrics port's connections, and no more than 4,096 (the memory bound in
/// `docs/operations.md` assumes that many at most). A connection costs one descriptor for its
/// whole life, its lingering close included, so at this many the process never runs out.
pub fn default_max_connections(open_file_limit: u64, metrics_connections: usize) -> usize {
    usize::try_from(
        open_file_limit
            .saturating_sub(RESERVED_FILES)
            .saturating_sub(metrics_connections as u64)
            .clamp(1, 4_096),
    )
    .unwrap_or(1)
}

/// The default `--listen-backlog`: room for a flood's worth of connections waiting while the
/// daemon is at `--max-connections` (the kernel caps it at `net.core.somaxconn`, 4,096 on Linux
/// since 5.4).
pub const DEFAULT_LISTEN_BACKLOG: u32 = 4_096;

/// Binds a listener whose kernel queue holds `backlog` connections not yet accepted. tokio's
/// `TcpListener::bind` asks for 128, as Rust's standard library does: behind a flood of silent
/// connections at `--max-connections`, the SYN of every connection past those 128 is dropped,
/// and a real client then waits on TCP's retransmission backoff (1, 3, 7, 15 s) instead of being
/// accepted as soon as a place frees. Go and nginx ask for more for the same reason.
pub fn bind(addr: SocketAddr, backlog: u32) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(backlog)
}

/// Everything `serve` can be told, with the defaults a daemon on one machine wants.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Solver threads, each with its own table.
    pub workers: usize,
    pub limits: Limits,
    /// Concurrent calls one HTTP/2 connection may have open.
    pub max_concurrent_streams: u32,
    /// Connections served at once; more wait in the listen backlog.
    pub max_connections: usize,
    /// Connections to the metrics port at once, counted apart from `max_connections`.
    pub metrics_max_connections: usize,
    /// Connections the kernel holds for each listener until they are accepted ([`bind`]).
    pub listen_backlog: u32,
    /// Health `Watch` and reflection streams open at once across all connections; more get
    /// `RESOURCE_EXHAUSTED`. They need no token and a watch never ends by itself, so without a
    /// cap they would be memory no other limit bounds.
    pub max_open_watches: usize,
    /// How long a new connection may take to finish its TLS handshake (with TLS) and send the
    /// HTTP/2 preface before it is closed.
    pub handshake_timeout: Duration,
    /// GOAWAY to a connection with no call open for this long.
    pub max_connection_idle: Option<Duration>,
    /// GOAWAY to a connection this old (give or take a tenth), so long-lived clients spread over
    /// new replicas.
    pub max_connection_age: Option<Duration>,
    /// After the age GOAWAY, how long its calls may take before the connection is closed.
    pub max_connection_age_grace: Option<Duration>,
    /// Interval of HTTP/2 keepalive pings to idle clients, so dead peers are noticed (and of TCP
    /// keepalive probes).
    pub keepalive_interval: Duration,
    /// How long a keepalive ping may go unanswered before the connection is closed.
    pub keepalive_timeout: Duration,
    /// How long calls in flight may take to finish once shutdown begins.
    pub drain_timeout: Duration,
    /// Health for `""` (liveness) turns NOT_SERVING while work waits for the pool and no worker
    /// has finished anything for this long; `None` never does.
    pub liveness_timeout: Option<Duration>,
    /// After the drain timeout has ended the calls still in flight, how long their connections
    /// have to deliver those calls' last statuses before they are closed regardless. Not a flag:
    /// tests shorten it.
    pub close_after_abort: Duration,
    /// Serve over TLS with this identity (and, with a client CA, require client certificates).
    pub tls: Option<TlsIdentity>,
    /// Require `authorization: Bearer <token>` on every Solver call.
    pub auth_token: Option<Secret>,
    /// Callers told apart by their tokens (`--tenants`), each token required as `auth_token` is;
    /// empty: `auth_token` or none, one tenant (`default`).
    pub tenants: Vec<Tenant>,
    /// Compress response messages of at least this many bytes for clients that accept gzip or
    /// zstd; `None`: never compress responses.
    pub compress_min_bytes: Option<usize>,
    /// Browser origins whose gRPC-Web calls are allowed (CORS); none by default.
    pub cors_allow_origins: CorsOrigins,
    /// Serve the analysis board (a page for people) at `/`; on by default, `--no-ui` turns it
    /// off.
    pub ui: bool,
    /// Serve Prometheus text at `/metrics` on this address (port 0 picks one; the log says which).
    pub metrics_addr: Option<SocketAddr>,
    /// Where the service records; give one in to read it (tests do).
    pub metrics: Metrics,
    /// The jobs the daemon runs (`--jobs-dir`, `--max-jobs`); none without a folder.
    pub jobs: Option<BoardSettings>,
}

/// PEM-encoded TLS material for the server.
#[derive(Clone)]
pub struct TlsIdentity {
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
    /// With this CA, only clients presenting a certificate it signed may connect (mutual TLS).
    pub client_ca_pem: Option<Vec<u8>>,
}

impl TlsIdentity {
    /// Whether the server can use this material, checked before the daemon says it is listening:
    /// a certificate it cannot use is an error at start, not after a success was announced.
    pub fn check(&self) -> Result<(), TlsError> {
        tls::acceptor(self).map(drop)
    }
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsIdentity")
            .field("key_pem", &"***")
            .field("mutual", &self.client_ca_pem.is_some())
            .finish()
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            workers: crate::pool::default_workers(),
            limits: Limits::default(),
            max_concurrent_streams: 32,
            max_connections: default_max_connections(1_024, DEFAULT_METRICS_CONNECTIONS),
            metrics_max_connections: DEFAULT_METRICS_CONNECTIONS,
            listen_backlog: DEFAULT_LISTEN_BACKLOG,
            max_open_watches: 256,
            handshake_timeout: Duration::from_secs(10),
            max_connection_idle: None,
            max_connection_age: None,
            max_connection_age_grace: None,
            keepalive_interval: Duration::from_secs(60),
            keepalive_timeout: Duration::from_secs(20),
            drain_timeout: Duration::from_secs(30),
            liveness_timeout: Some(Duration::from_secs(60)),
            close_after_abort: Duration::from_secs(5),
            compress_min_bytes: Some(DEFAULT_COMPRESS_MIN_BYTES),
            cors_allow_origins: CorsOrigins::default(),
            ui: true,
            tls: None,
            auth_token: None,
            tenants: Vec::new(),
            metrics_addr: None,
            metrics: Metrics::new(),
            jobs: None,
        }
    }
}

/// Why the server stopped other than by being asked to.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot start the solver threads")]
    Pool(#[source] std::io::Error),
    /// The jobs' folder cannot be used (its words, with their causes).
    #[error("cannot take up the jobs of --jobs-dir: {0}")]
    Jobs(String),
    #[error("cannot build the reflection service")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("cannot serve metrics on {0}")]
    Metrics(SocketAddr, #[source] std::io::Error),
    #[error("cannot use the TLS certificate and key")]
    Tls(#[from] TlsError),
    #[error("cannot read a service's methods, which admission and the call metrics go by")]
    Descriptors(#[from] crate::proto::DescriptorError),
}

/// Binds the metrics endpoint's listener, when there is one: done before the daemon says it is
/// listening, so a port in use is an error at start, not after a success was announced.
pub fn bind_metrics(
    addr: Option<SocketAddr>,
    backlog: u32,
) -> Result<Option<TcpListener>, ServerError> {
    let Some(addr) = addr else {
        return Ok(None);
    };
    bind(addr, backlog)
        .map(Some)
        .map_err(|e| ServerError::Metrics(addr, e))
}

/// Serves until `shutdown` completes, then drains: health turns NOT_SERVING, the listener closes
/// and new calls are refused, every connection gets GOAWAY, calls in flight may finish within
/// `drain_timeout`, and whatever is still running after that ends with `UNAVAILABLE`.
pub async fn run(
    listener: TcpListener,
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let metrics = bind_metrics(config.metrics_addr, config.listen_backlog)?;
    run_bound(listener, metrics, config, shutdown).await
}

/// [`run`] with the metrics listener (for `config.metrics_addr`) already bound.
pub async fn run_bound(
    listener: TcpListener,
    metrics_listener: Option<TcpListener>,
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let pool = Pool::new(config.workers, 2 * config.workers).map_err(ServerError::Pool)?;
    serve(listener, metrics_listener, Arc::new(pool), config, shutdown).await
}

/// [`run`] on a pool the caller made, for callers (and tests) that watch the pool's counters.
/// `config.workers` is ignored.
pub async fn run_with_pool(
    listener: TcpListener,
    pool: Arc<Pool>,
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let metrics = bind_metrics(config.metrics_addr, config.listen_backlog)?;
    serve(listener, metrics, pool, config, shutdown).await
}

async fn serve(
    listener: TcpListener,
    metrics_listener: Option<TcpListener>,
    pool: Arc<Pool>,
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let metrics = config.metrics.clone();
    published::limits(&config, &metrics);
    let (lifecycle, phase) = Lifecycle::new();
    let admission = Admission::new(
        Caps {
            streams: config.limits.max_open_streams,
            unary: config.limits.max_open_unary,
            watches: config.max_open_watches,
        },
        config.limits.max_deals_in_flight,
        lifecycle.clone(),
        metrics.clone(),
    );
    let service = SolverService::new(
        pool.clone(),
        config.limits.clone(),
        admission.clone(),
        lifecycle.clone(),
        metrics.clone(),
    );
    let board = match config.jobs.clone() {
        None => None,
        Some(settings) => {
            let series = metrics.clone();
            let job_metrics = JobMetrics {
                tenant: Arc::new(move |tenant: &str| TenantGauges {
                    by_state: JobState::ALL.map(|state| series.jobs_in_state(tenant, state.name())),
                    items: series.job_items(tenant),
                    work_bytes: ["queued", "running"]
                        .map(|state| series.jobs_work_bytes(tenant, state)),
                    work_seconds: series.jobs_work_seconds(tenant),
                }),
            };
            let pool = pool.clone();
            let opened =
                tokio::task::spawn_blocking(move || Board::open(settings, pool, job_metrics))
                    .await
                    .map_err(|e| ServerError::Jobs(e.to_string()))?;
            let board = opened.map_err(|e| ServerError::Jobs(in_full(&e)))?;
            // Ended jobs leave after --job-retention, for as long as the daemon runs.
            tokio::spawn(board.clone().sweep_every(Clock::start()));
            // The work gauges follow the running jobs' progress.
            tokio::spawn(board.clone().reckon_every());
            Some(board)
        }
    };
    let (metrics_stop, metrics_stopped) = tokio::sync::oneshot::channel::<()>();
    if let Some(listener) = metrics_listener {
        let bound = listener
            .local_addr()
            .map_or_else(|_| "?".to_string(), |a| a.to_string());
        tracing::info!(addr = %bound, "metrics on http://{bound}/metrics");
        let (metrics, pool) = (metrics.clone(), pool.clone());
        let max_connections = config.metrics_max_connections;
        tokio::spawn(async move {
            let stopped = async {
                let _ = metrics_stopped.await;
            };
            metrics_endpoint::serve(listener, metrics, pool, max_connections, stopped).await;
        });
    }
    // Dropped when the server returns, which stops the metrics endpoint.
    let _metrics_stop = metrics_stop;

    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<SolverServer<SolverService>>().await;
    health
        .set_serving::<RpsServiceServer<SolverService>>()
        .await;
    let liveness = config.liveness_timeout.map(|timeout| {
        AbortOnDropHandle::new(tokio::spawn(liveness::watch(
            pool.clone(),
            timeout,
            health.clone(),
            metrics.clone(),
        )))
    });

    let jobs = JobsService::new(board.clone());
    let app = app::build(&config, service, jobs, &admission, health_service, &metrics)?;

    let settings = Arc::new(connection::Settings {
        handshake_timeout: config.handshake_timeout,
        tls: config.tls.as_ref().map(tls::acceptor).transpose()?,
        max_idle: config.max_connection_idle,
        max_age: config.max_connection_age,
        age_grace: config.max_connection_age_grace,
        keepalive: Some(config.keepalive_interval),
        http: connection::Settings::http(
            config.max_concurrent_streams,
            STREAM_WINDOW,
            CONNECTION_WINDOW,
            config.keepalive_interval,
            config.keepalive_timeout,
            config.handshake_timeout,
        ),
    });

    let drain_timeout = config.drain_timeout;
    let stop = {
        let health = health.clone();
        let phase = &phase;
        let metrics = metrics.clone();
        async move {
            shutdown.await;
            metrics.drain_began();
            // The drain owns the health statuses from here on.
            if let Some(liveness) = liveness {
                liveness.abort();
                let _ = liveness.await;
            }
            // Balancers watching health stop routing here before the listener goes away.
            health
                .set_not_serving::<SolverServer<SolverService>>()
                .await;
            health
                .set_not_serving::<RpsServiceServer<SolverService>>()
                .await;
            health
                .set_service_status("", tonic_health::ServingStatus::NotServing)
                .await;
            phase.advance(Phase::Draining);
            tracing::info!("shutting down: draining calls in flight");
            // Running jobs stop where they are (resumable; their records stay running, so the
            // next start takes them up), and their watches end.
            if let Some(board) = board {
                let within = drain_timeout;
                let _ = tokio::task::spawn_blocking(move || board.close(within)).await;
            }
        }
    };
    let connections = TaskTracker::new();
    let cap = Arc::new(Semaphore::new(config.max_connections.max(1)));
    listener::accept(
        listener,
        cap,
        config.max_connections.max(1),
        metrics.clone(),
        stop,
        |stream, _peer, permit| {
            connections.spawn(connection::serve(
                stream,
                settings.clone(),
                app.clone(),
                metrics.clone(),
                phase.subscribe(),
                permit,
            ));
        },
    )
    .await;
    // The listener is closed now: new connections are refused by the kernel. (The phase is
    // draining already, unless accepting ended for another reason.)
    phase.advance(Phase::Draining);
    connections.close();
    // Health watches never end by themselves and would hold their connections open: forgetting
    // the services ends them (their watchers were told NOT_SERVING at the start of the drain).
    let end_watches = || async {
        let mut health = health.clone();
        for service in ["patience.v1.Solver", "patience.v1.RpsService", ""] {
            health.clear_service_status(service).await;
        }
    };
    let drained = async {
        admission.solving_done().await;
        end_watches().await;
        connections.wait().await;
    };
    if tokio::time::timeout(config.drain_timeout, drained)
        .await
        .is_ok()
    {
        tracing::info!("drained; stopping");
        return Ok(());
    }
    tracing::warn!(
        drain_timeout_s = config.drain_timeout.as_secs_f64(),
        "drain timeout reached; ending the calls still in flight with UNAVAILABLE"
    );
    phase.advance(Phase::Aborting);
    end_watches().await;
    if tokio::time::timeout(config.close_after_abort, connections.wait())
        .await
        .is_err()
    {
        tracing::warn!("connections still open after the calls ended; closing them");
    }
    // Every connection task ends at once in this phase, whatever it is doing.
    phase.advance(Phase::Closed);
    connections.wait().await;
    Ok(())
}
