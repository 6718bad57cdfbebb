//! The daemon's jobs (`serve --jobs-dir`) and its tenants (`serve --tenants`): jobs in each state,
//! the items they answered and the work they have left, each by tenant; the calls each tenant
//! made; each tenant's caps. Tenant names come from the daemon's configuration only (a caller
//! cannot add one), so the series stay as many as the file says.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::Metrics;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TenantStateLabels {
    tenant: String,
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TenantLabels {
    tenant: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TenantCallLabels {
    tenant: String,
    /// `package.Service/Method`, or `unknown`: the call layer's names, a bounded set.
    method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TenantCapLabels {
    tenant: String,
    cap: &'static str,
}

#[derive(Clone, Debug, Default)]
pub(super) struct JobSeries {
    jobs: Family<TenantStateLabels, Gauge>,
    items: Family<TenantLabels, Counter>,
    work_bytes: Family<TenantStateLabels, Gauge>,
    work_seconds: Family<TenantLabels, Gauge<f64, AtomicU64>>,
    calls: Family<TenantCallLabels, Counter>,
    caps: Family<TenantCapLabels, Gauge>,
}

impl JobSeries {
    /// Registers them in `registry`, which prefixes them with `patience_`.
    pub(super) fn register(registry: &mut Registry) -> JobSeries {
        let series = JobSeries::default();
        registry.register(
            "jobs",
            "The daemon's jobs (serve --jobs-dir) by tenant and state: queued, running, \
             succeeded, failed, cancelled",
            series.jobs.clone(),
        );
        registry.register(
            "job_items",
            "Items (deals, cases) the daemon's jobs answered, bad ones included, by tenant",
            series.items.clone(),
        );
        registry.register(
            "jobs_work_bytes",
            "Input bytes the daemon's jobs have left to answer, by tenant and state (queued, \
             running)",
            series.work_bytes.clone(),
        );
        registry.register(
            "jobs_work_seconds",
            "An estimate of the seconds of this daemon's solving its jobs have left, by tenant: \
             input bytes left over the rate its jobs ran at; at least 1 for each job waiting or running",
            series.work_seconds.clone(),
        );
        registry.register(
            "tenant_calls",
            "Calls let through the token check, by tenant (serve --tenants; default without) \
             and method",
            series.calls.clone(),
        );
        registry.register(
            "tenant_limit",
            "Each tenant's caps (serve --tenants), by cap: weight, max_queued_jobs, \
             max_running_jobs",
            series.caps.clone(),
        );
        series
    }
}

impl Metrics {
    /// The gauge of `tenant`'s jobs in `state` (`queued`, `running`, ...), at zero from now on.
    pub fn jobs_in_state(&self, tenant: &str, state: &'static str) -> Gauge {
        self.jobs
            .jobs
            .get_or_create(&TenantStateLabels {
                tenant: tenant.into(),
                state,
            })
            .clone()
    }

    /// The count of items `tenant`'s jobs answered.
    pub fn job_items(&self, tenant: &str) -> Counter {
        self.jobs
            .items
            .get_or_create(&TenantLabels {
                tenant: tenant.into(),
            })
            .clone()
    }

    /// The gauge of the input bytes `tenant`'s jobs in `state` (`queued`, `running`) have left.
    pub fn jobs_work_bytes(&self, tenant: &str, state: &'static str) -> Gauge {
        self.jobs
            .work_bytes
            .get_or_create(&TenantStateLabels {
                tenant: tenant.into(),
                state,
            })
            .clone()
    }

    /// The gauge of the solving seconds `tenant`'s jobs have left.
    pub fn jobs_work_seconds(&self, tenant: &str) -> Gauge<f64, AtomicU64> {
        self.jobs
            .work_seconds
            .get_or_create(&TenantLabels {
                tenant: tenant.into(),
            })
            .clone()
    }

    /// One call of `method` let through for `tenant`.
    pub fn tenant_call(&self, tenant: &str, method: &str) {
        self.jobs
            .calls
            .get_or_create(&TenantCallLabels {
                tenant: tenant.into(),
                method: method.into(),
            })
            .inc();
    }

    /// Publishes one of `tenant`'s caps.
    pub fn tenant_limit(&self, tenant: &str, cap: &'static str, value: u64) {
        self.jobs
            .caps
            .get_or_create(&TenantCapLabels {
                tenant: tenant.into(),
                cap,
            })
            .set(i64::try_from(value).unwrap_or(i64::MAX));
    }
}
