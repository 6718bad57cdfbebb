//! The daemon's jobs (`serve --jobs-dir`): how many are in each state, and the items they
//! answered.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

#[derive(Clone, Debug, Default)]
pub(super) struct JobSeries {
    jobs: Family<StateLabels, Gauge>,
    items: Counter,
}

impl JobSeries {
    /// Registers them in `registry`, which prefixes them with `patience_`.
    pub(super) fn register(registry: &mut Registry) -> JobSeries {
        let series = JobSeries::default();
        registry.register(
            "jobs",
            "The daemon's jobs (serve --jobs-dir) in each state: queued, running, succeeded, \
             failed, cancelled",
            series.jobs.clone(),
        );
        registry.register(
            "job_items",
            "Items (deals, cases) the daemon's jobs answered, bad ones included",
            series.items.clone(),
        );
        series
    }

    /// The gauge of jobs in `state`, at zero from now on.
    pub(super) fn in_state(&self, state: &'static str) -> Gauge {
        self.jobs.get_or_create(&StateLabels { state }).clone()
    }

    pub(super) fn items(&self) -> Counter {
        self.items.clone()
    }
}
