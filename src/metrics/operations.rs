//! The gauges the shipped alerts read beside the limits (`deploy/monitoring/rules.yaml`): the
//! memory bound the limits give, when a drain began, and whether the pool is stalled.

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Default)]
pub(super) struct OperationsGauges {
    memory_bound: Gauge,
    drain_started: Gauge<f64, AtomicU64>,
    pool_stalled: Gauge,
}

impl OperationsGauges {
    /// Registers them in `registry`, which prefixes them with `patience_`.
    pub(super) fn register(registry: &mut Registry) -> OperationsGauges {
        let gauges = OperationsGauges::default();
        registry.register(
            "memory_bound_bytes",
            "The most memory this daemon's limits let it hold, by the formula of \
             docs/operations.md (Memory); process_resident_memory_bytes near it means the formula \
             no longer holds",
            gauges.memory_bound.clone(),
        );
        registry.register(
            "drain_started_time_seconds",
            "When shutdown began draining calls, in seconds since the Unix epoch; 0 while serving",
            gauges.drain_started.clone(),
        );
        registry.register(
            "pool_stalled",
            "1 while work waits for the workers and none has finished anything for \
             --liveness-timeout (health for \"\" then says NOT_SERVING), else 0",
            gauges.pool_stalled.clone(),
        );
        gauges
    }

    pub(super) fn memory_bound(&self, bytes: u64) {
        self.memory_bound
            .set(i64::try_from(bytes).unwrap_or(i64::MAX));
    }

    pub(super) fn drain_began(&self) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        self.drain_started.set(now);
    }

    pub(super) fn pool_stalled(&self, stalled: bool) {
        self.pool_stalled.set(i64::from(stalled));
    }
}
