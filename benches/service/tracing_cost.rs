//! What tracing costs `SolveStream` (256 deals per message): three daemons alike but for trace
//! export, driven by the same in-bench tonic client in alternating rounds:
//! - off (no `OTEL_*` variable);
//! - on, every call sampled (`OTEL_TRACES_SAMPLER=always_on`), exporting to an OTLP receiver
//!   (`tests/otel.py`, from PyPI's `opentelemetry-proto`; skipped without the venv);
//! - on, every call sampled, with the collector down (an address nobody listens on).
//!
//! The daemons send their spans every 200 ms (`OTEL_BSP_SCHEDULE_DELAY`, 5 s by default), so
//! that exporting happens during the rounds and is counted in them. The machine's noise between
//! runs is large next to the difference: the daemon's CPU per deal is the steadier figure.

use std::time::Duration;

use patience::proto::SolveRequest;
use patience::proto::solver_client::SolverClient;

use super::support::{Collector, Daemon, median, otel_python};
use super::{list, stream_call};

/// The rows of the comparison.
struct Traced {
    name: &'static str,
    daemon: Daemon,
    client: SolverClient<tonic::transport::Channel>,
    rates: Vec<f64>,
    cpu: f64,
}

/// Runs `runs` rounds of one `SolveStream` call per daemon with `requests` (of `deals` deals),
/// checking every answer against `expected`, and prints the medians side by side.
pub fn compare(workers: usize, requests: &[SolveRequest], expected: &[f64], runs: usize) {
    let deals = expected.len();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let python = otel_python();
    let collector = python.as_deref().map(Collector::start);
    let workers = workers.to_string();
    let args = ["--workers", workers.as_str(), "--log-format", "text"];
    let start = |endpoint: Option<&str>| {
        let mut env = vec![("RUST_LOG", "info")];
        if let Some(endpoint) = endpoint {
            env.extend([
                ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
                ("OTEL_TRACES_SAMPLER", "always_on"),
                ("OTEL_BSP_SCHEDULE_DELAY", "200"),
            ]);
        }
        let daemon = Daemon::start_with(&args, &env, None);
        let client = runtime.block_on(async {
            SolverClient::connect(daemon.addr.clone())
                .await
                .expect("connect")
                .max_decoding_message_size(usize::MAX)
        });
        (daemon, client)
    };
    let mut rows = Vec::new();
    let mut add = |name, endpoint: Option<&str>| {
        let (daemon, client) = start(endpoint);
        rows.push(Traced {
            name,
            daemon,
            client,
            rates: Vec::new(),
            cpu: 0.0,
        });
    };
    add("tracing off", None);
    if let Some(collector) = &collector {
        add("tracing on, every call sampled", Some(&collector.endpoint));
    }
    add(
        "tracing on, every call sampled, collector down",
        Some(super::support::DEAD),
    );
    let timeout = Duration::from_secs(120);
    for _ in 0..runs {
        for row in &mut rows {
            let cpu = row.daemon.cpu_seconds();
            let (took, probabilities) = runtime.block_on(async {
                tokio::time::timeout(
                    timeout,
                    stream_call(&mut row.client, requests.to_vec(), deals),
                )
                .await
                .unwrap_or_else(|_| panic!("{} did not finish in {timeout:?}", row.name))
            });
            row.cpu += row.daemon.cpu_seconds() - cpu;
            for (i, (got, want)) in probabilities.iter().zip(expected).enumerate() {
                assert!(
                    (got - want).abs() <= 1e-12,
                    "{}: deal {i}: {got} != {want}",
                    row.name
                );
            }
            row.rates.push(deals as f64 / took.as_secs_f64());
        }
    }
    let off = median(rows[0].rates.clone());
    println!("tracing, tonic SolveStream 256 deals/message, {runs} alternating rounds:");
    for row in &rows {
        let m = median(row.rates.clone());
        println!(
            "  {}: median {m:.0} deals/s = {:.1}% of off  (runs: {}; daemon CPU {:.1} us/deal)",
            row.name,
            100.0 * m / off,
            list(&row.rates),
            row.cpu * 1e6 / (deals * runs) as f64,
        );
    }
    if collector.is_none() {
        println!("  (tracing on with a collector: skipped, no venv with opentelemetry-proto)");
    }
    // The clients' connections close with their runtime, so that the drains have nothing to wait
    // for.
    let mut daemons: Vec<(&str, Daemon)> = rows.into_iter().map(|r| (r.name, r.daemon)).collect();
    drop(runtime);
    for (name, daemon) in &mut daemons {
        let (took, status) = daemon.stop();
        let dropped = daemon
            .log()
            .iter()
            .filter(|l| l.contains("dropping trace spans"))
            .count();
        println!(
            "  {}: stopped {:.0} ms after SIGTERM with {status}; 'dropping trace spans' logged \
             {dropped} time(s)",
            name,
            took.as_secs_f64() * 1e3
        );
    }
    if let Some(collector) = &collector {
        println!(
            "  spans the receiver had once the daemons stopped: {}",
            collector.spans().len()
        );
    }
}
