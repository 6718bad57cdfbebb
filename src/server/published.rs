//! What the daemon runs with, published in its metrics (`patience_limit`, `patience_limit_seconds`)
//! where it is watched.

use super::ServerConfig;
use crate::metrics::Metrics;

/// Every limit in the metrics, by the flag that sets it, so that what a daemon runs with can be
/// read where it is watched.
pub(super) fn limits(config: &ServerConfig, metrics: &Metrics) {
    let l = &config.limits;
    for (flag, value) in [
        ("workers", config.workers as u64),
        ("max_message_bytes", l.max_message_bytes as u64),
        ("max_deals_per_request", l.max_deals_per_request as u64),
        ("max_in_flight", l.max_in_flight as u64),
        ("max_open_streams", l.max_open_streams as u64),
        ("max_open_unary", l.max_open_unary as u64),
        ("max_deals_in_flight", l.max_deals_in_flight as u64),
        (
            "max_concurrent_streams",
            u64::from(config.max_concurrent_streams),
        ),
        ("max_connections", config.max_connections as u64),
        (
            "max_jobs",
            config.jobs.as_ref().map_or(0, |jobs| jobs.max_jobs as u64),
        ),
        (
            "max_queued_jobs",
            config
                .jobs
                .as_ref()
                .map_or(0, |jobs| jobs.max_queued as u64),
        ),
        (
            "metrics_max_connections",
            config.metrics_max_connections as u64,
        ),
        ("listen_backlog", u64::from(config.listen_backlog)),
        ("max_open_watches", config.max_open_watches as u64),
        (
            "compress_min_bytes",
            config.compress_min_bytes.map_or(0, |n| n as u64),
        ),
    ] {
        metrics.limit(flag, value);
    }
    for (flag, value) in [
        ("handshake_timeout", Some(config.handshake_timeout)),
        ("max_connection_idle", config.max_connection_idle),
        ("max_connection_age", config.max_connection_age),
        ("max_connection_age_grace", config.max_connection_age_grace),
        ("keepalive_interval", Some(config.keepalive_interval)),
        ("keepalive_timeout", Some(config.keepalive_timeout)),
        ("drain_timeout", Some(config.drain_timeout)),
        ("drain_cut_after", l.drain_cut_after),
        ("stall_timeout", l.stall_timeout),
        ("liveness_timeout", config.liveness_timeout),
        (
            "job_retention",
            config.jobs.as_ref().map(|jobs| jobs.retention),
        ),
    ] {
        metrics.limit_seconds(flag, value);
    }
    for tenant in &config.tenants {
        let name = &tenant.name;
        metrics.tenant_limit(name, "weight", u64::from(tenant.weight));
        // Left out, a tenant's cap is the daemon's: shown as the daemon's value.
        let jobs = config.jobs.as_ref();
        let queued = tenant
            .max_queued_jobs
            .or(jobs.map(|jobs| jobs.max_queued))
            .unwrap_or(0);
        let running = tenant
            .max_running_jobs
            .or(jobs.map(|jobs| jobs.max_jobs))
            .unwrap_or(0);
        metrics.tenant_limit(name, "max_queued_jobs", queued as u64);
        metrics.tenant_limit(name, "max_running_jobs", running as u64);
    }
    metrics.memory_bound(super::memory_bound::bytes(config));
}
