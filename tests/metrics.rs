//! The Prometheus metrics move with the traffic, in process and on the wire.

use crate::common;

use common::{Daemon, TestServer, config, corpus, data, run, scrape, stream_all, wire};
use patience::metrics::Metrics;
use patience::proto::{self, SolveRequest};
use patience::server::ServerConfig;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// The value of one sample line (`name{labels} value`) in a scrape, if present.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_gauges_and_histograms_follow_a_stream() {
    let (deals, _) = corpus("random1000");
    let metrics = Metrics::new();
    let server = TestServer::start(
        2,
        ServerConfig {
            metrics: metrics.clone(),
            ..config()
        },
    )
    .await;
    let before = metrics.render(&server.pool);
    assert_eq!(
        sample(&before, "patience_deals_total{outcome=\"solved\"}"),
        None
    );
    assert_eq!(
        sample(&before, "patience_build_info{version=\"0.1.0\"}"),
        Some(1.0)
    );

    // A stream that stays open shows as open.
    let mut client = server.client().await;
    let (tx, rx) = mpsc::channel::<SolveRequest>(1);
    let mut open = client
        .solve_stream(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    let during = metrics.render(&server.pool);
    assert_eq!(sample(&during, "patience_open_streams"), Some(1.0));
    drop(tx);
    assert!(open.message().await.unwrap().is_none());

    let mut request = SolveRequest {
        analysis: None,
        deals: deals[..100].iter().map(|d| wire(d, "")).collect(),
    };
    request.deals.push(proto::Deal {
        id: String::new(),
        cards: "AS QX".into(),
    });
    request.deals.push(proto::Deal::default());
    stream_all(&mut client, vec![request]).await.unwrap();

    let after = metrics.render(&server.pool);
    let get = |name: &str| sample(&after, name).unwrap_or_else(|| panic!("{name} in\n{after}"));
    assert_eq!(get("patience_deals_total{outcome=\"solved\"}"), 100.0);
    assert_eq!(get("patience_deals_total{outcome=\"bad_card\"}"), 1.0);
    assert_eq!(get("patience_deals_total{outcome=\"card_count\"}"), 1.0);
    assert_eq!(
        get("patience_solve_seconds_count{game=\"double_patience\"}"),
        100.0
    );
    assert!(get("patience_queue_wait_seconds_count") >= 4.0);
    assert_eq!(get("patience_open_streams"), 0.0);
    assert_eq!(get("patience_deals_in_flight"), 0.0);
    assert_eq!(get("patience_busy_workers"), 0.0);
    server.stop().await;
}

#[test]
fn serve_exposes_metrics_on_its_own_address() {
    let daemon = Daemon::start(&["--metrics-addr", "127.0.0.1:0"]);
    let metrics = daemon.metrics_addr();

    let before = scrape(&metrics);
    assert!(before.contains("patience_build_info"), "{before}");
    let out = run(&["client", "--addr", &daemon.addr, &data("random1000.in")]);
    assert!(out.status.success());
    let after = scrape(&metrics);
    assert_eq!(
        sample(&after, "patience_deals_total{outcome=\"solved\"}"),
        Some(1000.0),
        "{after}"
    );
}

/// Every limit shows in the metrics with the value it was given, by flag or environment
/// variable, durations in seconds and a limit that is off as 0.
#[test]
fn every_limit_is_published_by_its_flag() {
    let daemon = Daemon::start_with(
        &[
            "--metrics-addr",
            "127.0.0.1:0",
            "--max-open-unary",
            "7",
            "--handshake-timeout",
            "1500ms",
            "--keepalive-interval",
            "45s",
            "--drain-cut-after",
            "2s",
        ],
        &[("RUST_LOG", "info"), ("PATIENCE_MAX_IN_FLIGHT", "333")],
        None,
    );
    let text = scrape(&daemon.metrics_addr());
    let limit = |flag: &str| sample(&text, &format!("patience_limit{{flag=\"{flag}\"}}"));
    let seconds = |flag: &str| sample(&text, &format!("patience_limit_seconds{{flag=\"{flag}\"}}"));
    assert_eq!(limit("max_open_unary"), Some(7.0), "{text}");
    assert_eq!(limit("max_in_flight"), Some(333.0), "{text}");
    assert_eq!(limit("max_open_streams"), Some(1024.0), "{text}");
    assert_eq!(limit("max_open_watches"), Some(256.0), "{text}");
    assert_eq!(seconds("handshake_timeout"), Some(1.5), "{text}");
    assert_eq!(seconds("keepalive_interval"), Some(45.0), "{text}");
    assert_eq!(seconds("keepalive_timeout"), Some(20.0), "{text}");
    assert_eq!(seconds("drain_cut_after"), Some(2.0), "{text}");
    assert_eq!(seconds("drain_timeout"), Some(30.0), "{text}");
    assert_eq!(seconds("max_connection_age"), Some(0.0), "{text}");
    assert_eq!(seconds("stall_timeout"), Some(60.0), "{text}");
}
