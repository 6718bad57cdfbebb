//! `patience serve`: logging and trace export, binding, signals; the daemon itself is
//! [`crate::server`].

use std::io::IsTerminal as _;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

use super::{LogFormat, ServeArgs};
use crate::auth::read_token_file;
use crate::auth::tenants::{Tenant, read_tenants};
use crate::jobs::daemon::board::{BoardSettings, TenantShare};
use crate::jobs::outcome::ExitStatus;
use crate::metrics::Metrics;
use crate::server::{self, ServerConfig, TlsIdentity};
use crate::service::Limits;
use crate::trace::{DroppedSpans, Tracing};

/// What the last spans' export may take when the drain itself took none of its timeout.
const MIN_FLUSH: Duration = Duration::from_secs(1);

pub fn run(args: &ServeArgs) -> anyhow::Result<ExitStatus> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("patience-io")
        .build()
        .context("cannot start the async runtime")?;
    let metrics = Metrics::new();
    // The exporter's connection lives on the runtime, so it is built there.
    let tracing = runtime.block_on(async {
        let dropped = DroppedSpans::new(
            metrics.spans_dropped("queue_full"),
            metrics.spans_dropped("export_failed"),
        );
        Tracing::from_env(dropped).context("cannot set up trace export")
    })?;
    init_logging(args.log_format, tracing.as_ref())?;
    let open_files = raise_open_file_limit();
    let tenants = args
        .tenants
        .as_deref()
        .map(read_tenants)
        .transpose()?
        .unwrap_or_default();
    let config = ServerConfig {
        workers: args
            .workers
            .map_or_else(crate::pool::default_workers, |n| n.get()),
        limits: Limits {
            max_message_bytes: args.max_message_bytes,
            max_deals_per_request: args.max_deals_per_request,
            max_in_flight: args.max_in_flight.max(1),
            max_open_streams: args.max_open_streams.max(1),
            max_open_unary: args.max_open_unary.max(1),
            max_deals_in_flight: args.max_deals_in_flight.max(1),
            drain_cut_after: args.drain_cut_after.0,
            stall_timeout: args.stall_timeout.0,
            ..Limits::default()
        },
        max_concurrent_streams: args.max_concurrent_streams,
        max_open_watches: args.max_open_watches.max(1),
        max_connections: args.max_connections.map_or_else(
            || server::default_max_connections(open_files, args.metrics_max_connections.get()),
            |n| n.get(),
        ),
        metrics_max_connections: args.metrics_max_connections.get(),
        listen_backlog: args.listen_backlog,
        handshake_timeout: args.handshake_timeout,
        max_connection_idle: args.max_connection_idle.0,
        max_connection_age: args.max_connection_age.0,
        max_connection_age_grace: args.max_connection_age_grace.0,
        keepalive_interval: args.keepalive_interval,
        keepalive_timeout: args.keepalive_timeout,
        drain_timeout: args.drain_timeout,
        liveness_timeout: args.liveness_timeout.0,
        tls: tls_identity(args)?,
        auth_token: args
            .auth_token_file
            .as_deref()
            .map(read_token_file)
            .transpose()?,
        tenants: tenants.clone(),
        metrics_addr: args.metrics_addr,
        compress_min_bytes: args.compress_min_bytes.0,
        cors_allow_origins: server::CorsOrigins(args.cors_allow_origins.clone()),
        ui: !args.no_ui,
        metrics,
        jobs: args.jobs_dir.clone().map(|dir| BoardSettings {
            tenants: tenants.iter().map(share).collect(),
            dir,
            max_jobs: args.max_jobs.get(),
            max_queued: args.max_queued_jobs.get(),
            retention: args.job_retention,
            storage: args.storage.settings(),
        }),
        ..ServerConfig::default()
    };
    runtime.block_on(async {
        let listener = server::bind(args.addr, config.listen_backlog)
            .with_context(|| format!("cannot listen on {}", args.addr))?;
        let bound = listener
            .local_addr()
            .context("cannot read the bound address")?;
        // Every listener is bound before the daemon says it is listening.
        let metrics_listener = server::bind_metrics(config.metrics_addr, config.listen_backlog)?;
        let metrics_bound = metrics_listener.as_ref().and_then(|l| l.local_addr().ok());
        // Watched before the daemon says it is listening: a SIGTERM sent by whoever read that
        // line drains, where one caught before the first poll of a lazy watch would kill.
        let stop_signals = StopSignals::watch();
        // The whole effective configuration in one line (never the token itself), so that what a
        // daemon ran with can be read from its log whether flags, environment or defaults set it.
        tracing::info!(
            addr = %bound,
            workers = config.workers,
            max_message_bytes = config.limits.max_message_bytes,
            max_deals_per_request = config.limits.max_deals_per_request,
            max_in_flight = config.limits.max_in_flight,
            max_open_streams = config.limits.max_open_streams,
            max_open_unary = config.limits.max_open_unary,
            max_deals_in_flight = config.limits.max_deals_in_flight,
            max_open_watches = config.max_open_watches,
            max_concurrent_streams = config.max_concurrent_streams,
            max_connections = config.max_connections,
            metrics_max_connections = config.metrics_max_connections,
            listen_backlog = config.listen_backlog,
            handshake_timeout_s = config.handshake_timeout.as_secs_f64(),
            max_connection_idle = %shown(config.max_connection_idle),
            max_connection_age = %shown(config.max_connection_age),
            max_connection_age_grace = %shown(config.max_connection_age_grace),
            keepalive_interval_s = config.keepalive_interval.as_secs_f64(),
            keepalive_timeout_s = config.keepalive_timeout.as_secs_f64(),
            drain_timeout_s = config.drain_timeout.as_secs_f64(),
            drain_cut_after = %shown(config.limits.drain_cut_after),
            stall_timeout = %shown(config.limits.stall_timeout),
            liveness_timeout = %shown(config.liveness_timeout),
            compress_min_bytes = %config.compress_min_bytes.map_or_else(|| "off".to_string(), |n| n.to_string()),
            cors_allow_origin = %config.cors_allow_origins.0.join(","),
            ui = if config.ui { "on" } else { "off" },
            tls = config.tls.as_ref().map_or("off", |t| if t.client_ca_pem.is_some() { "mutual" } else { "on" }),
            auth = match (config.tenants.len(), config.auth_token.is_some()) {
                (0, true) => "bearer token".to_string(),
                (0, false) => "off".to_string(),
                (n, _) => format!("{n} tenants"),
            },
            tenants = %config.tenants.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(","),
            metrics_addr = %metrics_bound.map_or_else(|| "off".to_string(), |a| a.to_string()),
            log_format = match args.log_format {
                LogFormat::Text => "text",
                LogFormat::Json => "json",
            },
            traces = tracing.as_ref().map_or("off", |t| t.endpoint()),
            jobs_dir = %config.jobs.as_ref().map_or_else(|| "off".to_string(), |j| j.dir.display().to_string()),
            max_jobs = config.jobs.as_ref().map_or(0, |j| j.max_jobs),
            version = env!("CARGO_PKG_VERSION"),
            "listening on {bound}"
        );
        let signalled = Arc::new(OnceLock::new());
        let shutdown = {
            let signalled = signalled.clone();
            async move {
                stop_signals.recv().await;
                let _ = signalled.set(Instant::now());
            }
        };
        let drain_timeout = config.drain_timeout;
        let served = server::run_bound(listener, metrics_listener, config, shutdown).await;
        if let Some(tracing) = tracing {
            // The last spans go out within what is left of the drain timeout (at least
            // `MIN_FLUSH`); the exporter's connection needs the runtime, so it runs beside it.
            let took = signalled.get().map_or(Duration::ZERO, Instant::elapsed);
            let budget = drain_timeout.saturating_sub(took).max(MIN_FLUSH);
            let _ = tokio::task::spawn_blocking(move || tracing.shutdown(budget)).await;
        }
        served?;
        tracing::info!("stopped");
        Ok(ExitStatus::Ok)
    })
}

fn tls_identity(args: &ServeArgs) -> anyhow::Result<Option<TlsIdentity>> {
    let read = |path: &std::path::Path| {
        std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
    };
    let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) else {
        return Ok(None);
    };
    let identity = TlsIdentity {
        cert_pem: read(cert)?,
        key_pem: read(key)?,
        client_ca_pem: args.tls_client_ca.as_deref().map(read).transpose()?,
    };
    identity
        .check()
        .context("cannot use the TLS certificate and key")?;
    Ok(Some(identity))
}

/// A duration for the start line: seconds, or `off`.
fn shown(d: Option<Duration>) -> String {
    d.map_or_else(|| "off".to_string(), |d| format!("{}s", d.as_secs_f64()))
}

/// Raises the soft limit on open files to the hard one, as Go's runtime does at start: every
/// connection costs a descriptor, and the soft limit is often a low default (1,024) that the
/// hard limit does not share. Returns the limit now in force.
fn raise_open_file_limit() -> u64 {
    let before = rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(1_024, |(soft, _)| soft);
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(now) if now > before => {
            tracing::info!(from = before, to = now, "raised the open-file limit");
            now
        }
        Ok(now) => now,
        Err(e) => {
            tracing::warn!(limit = before, "cannot raise the open-file limit: {e}");
            before
        }
    }
}

/// Logs to standard error, filtered by `RUST_LOG`; with trace export on, the spans go to the
/// exporter too, whatever `RUST_LOG` says. Lines logged under a call's span carry its `trace_id`
/// and `span_id`: in the text line's span prefix, and in a JSON line's `span` object.
fn init_logging(format: LogFormat, tracing: Option<&Tracing>) -> anyhow::Result<()> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // The start line (with the bound address, which a caller of port 0 needs) and the stop line
    // show whatever RUST_LOG says about the rest, unless it names this module itself.
    let filter = if std::env::var("RUST_LOG").is_ok_and(|v| v.contains("patience::cli::serve")) {
        filter
    } else {
        match "patience::cli::serve=info".parse() {
            Ok(directive) => filter.add_directive(directive),
            Err(_) => filter,
        }
    };
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let fmt = match format {
        LogFormat::Text => fmt.with_filter(filter).boxed(),
        LogFormat::Json => fmt.json().flatten_event(true).with_filter(filter).boxed(),
    };
    tracing_subscriber::registry()
        .with(fmt)
        .with(tracing.map(Tracing::layer))
        .try_init()
        .map_err(|e| anyhow::anyhow!("cannot set up logging: {e}"))
}

/// SIGTERM and SIGINT, registered when watched (not when first polled, as
/// `tokio::signal::ctrl_c` is), so that neither can end the daemon ungracefully once it is watching.
struct StopSignals {
    #[cfg(unix)]
    watched: Result<(tokio::signal::unix::Signal, tokio::signal::unix::Signal), std::io::Error>,
}

impl StopSignals {
    fn watch() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Self {
                watched: signal(SignalKind::terminate())
                    .and_then(|term| Ok((term, signal(SignalKind::interrupt())?))),
            }
        }
        #[cfg(not(unix))]
        {
            Self {}
        }
    }

    /// Completes on the first SIGTERM or SIGINT.
    async fn recv(self) {
        #[cfg(unix)]
        match self.watched {
            Ok((mut terminate, mut interrupt)) => {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(e) => {
                tracing::warn!("cannot watch SIGTERM ({e}); stopping on SIGINT only");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// A tenant's share of the jobs: its folder beneath `--jobs-dir` is its name.
fn share(tenant: &Tenant) -> TenantShare {
    TenantShare {
        name: tenant.name.clone(),
        home: Some(tenant.name.clone()),
        weight: tenant.weight,
        max_queued: tenant.max_queued_jobs,
        max_running: tenant.max_running_jobs,
    }
}
