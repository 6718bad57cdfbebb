//! Trace export for `patience client` (and `patience rps --addr`): with an OTLP endpoint set (the
//! same `OTEL_*` variables as the daemon, [`crate::trace`]), the run is one span and each call it
//! opens to a daemon a child of it, whose context the call carries: the daemons' spans join the
//! run's trace. The client logs nothing else through `tracing`; its messages are its own.

use std::time::Duration;

use anyhow::Context as _;
use prometheus_client::metrics::counter::Counter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

use crate::trace::{DroppedSpans, Tracing};

/// The most a run's end waits for its last spans to be exported: a collector that is down costs
/// a run at most this.
const FLUSH: Duration = Duration::from_secs(1);

/// How long the lanes' tasks, cancelled when the run ends, get to close their spans before the
/// flush: they only have to be polled once.
const LANES_CLOSE: Duration = Duration::from_millis(20);

/// Starts export when the environment asks for it (on `runtime`, which carries its connection).
pub fn start(runtime: &tokio::runtime::Runtime) -> anyhow::Result<Option<Tracing>> {
    let tracing = runtime.block_on(async {
        // No metrics endpoint in a client: what is dropped is only counted here.
        Tracing::from_env(DroppedSpans::new(Counter::default(), Counter::default()))
    });
    let Some(tracing) = tracing.context("cannot set up trace export")? else {
        return Ok(None);
    };
    tracing_subscriber::registry()
        .with(tracing.layer())
        .try_init()
        .map_err(|e| anyhow::anyhow!("cannot set up trace export: {e}"))?;
    Ok(Some(tracing))
}

/// The run's span, the root of its trace.
pub fn run_span() -> tracing::Span {
    tracing::info_span!(
        target: "patience::client",
        "run",
        otel.name = "patience client",
        otel.kind = "internal",
    )
}

/// Exports the run's last spans, within [`FLUSH`].
pub async fn flush(tracing: Tracing) {
    tokio::time::sleep(LANES_CLOSE).await;
    let _ = tokio::task::spawn_blocking(move || tracing.shutdown(FLUSH)).await;
}
