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
        ..Default::default()
    };
    request.deals.push(proto::Deal {
        id: String::new(),
        cards: "AS QX".into(),
    });
    request.deals.push(proto::Deal::default());
    stream_all(&mut client, vec![request]).await.unwrap();

    // The call's own task lowers the gauge once tonic has taken its status, which the client
    // may read first.
    let after = until(&metrics, &server, "patience_open_streams", 0.0).await;
    let get = |name: &str| sample(&after, name).unwrap_or_else(|| panic!("{name} in\n{after}"));
    assert_eq!(get("patience_deals_total{outcome=\"solved\"}"), 100.0);
    assert_eq!(get("patience_deals_total{outcome=\"bad_card\"}"), 1.0);
    assert_eq!(get("patience_deals_total{outcome=\"card_count\"}"), 1.0);
    assert_eq!(
        get("patience_solve_seconds_count{game=\"double_patience\"}"),
        100.0
    );
    // The 100 good deals, spread over the 2 workers: two jobs of 50 (a job takes a group's share
    // of the workers, at least 32 and at most 256 deals), each waiting in the queue once.
    assert_eq!(get("patience_queue_wait_seconds_count"), 2.0);
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

/// One method's series as go-grpc-prometheus names them: `NAME{grpc_type=...,grpc_service=...,
/// grpc_method=...}` (and `grpc_code` for `handled`).
fn grpc(name: &str, kind: &str, method: &str, code: Option<&str>) -> String {
    let (service, method) = method.rsplit_once('/').unwrap();
    let code = code.map_or(String::new(), |c| format!(",grpc_code=\"{c}\""));
    format!(
        "{name}{{grpc_type=\"{kind}\",grpc_service=\"{service}\",grpc_method=\"{method}\"{code}}}"
    )
}

/// Waits (with a hang guard) until `series` reads `value` in a scrape; returns that scrape.
async fn until(metrics: &Metrics, server: &TestServer, series: &str, value: f64) -> String {
    let limit = std::time::Duration::from_secs(20);
    let reached = common::poll_async(limit, common::POLL, async || {
        let text = metrics.render(&server.pool);
        (sample(&text, series) == Some(value)).then_some(text)
    })
    .await;
    reached.unwrap_or_else(|| {
        panic!(
            "{series} never reached {value}:\n{}",
            metrics.render(&server.pool)
        )
    })
}

/// After a mix of calls (OK, refused by the admission cap, by the token check and by tonic for an
/// unknown method, failed by the service, and cancelled by the client), each is counted once in
/// the standard gRPC series, by its method, type and code; every method and code of the daemon
/// is there from the start at zero; messages count as the client sent and received them; the
/// histogram holds one observation per call handled. Beside them: the process metrics, the memory
/// bound by `docs/operations.md`'s formula, and the drain's start once it began.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_counts_in_the_grpc_series_whoever_answers_it() {
    use patience::auth::{AddBearer, Secret};
    use patience::proto::solver_client::SolverClient;
    use patience::service::Limits;
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_client::HealthClient;

    let (deals, _) = corpus("random1000");
    let metrics = Metrics::new();
    let token = Secret::new("sesame");
    let server = TestServer::start(
        2,
        ServerConfig {
            workers: 2,
            metrics: metrics.clone(),
            auth_token: Some(token.clone()),
            limits: Limits {
                max_open_streams: 1,
                max_deals_per_request: 5,
                ..Limits::default()
            },
            ..config()
        },
    )
    .await;
    const SOLVE: &str = "patience.v1.Solver/Solve";
    const STREAM: &str = "patience.v1.Solver/SolveStream";
    const CHECK: &str = "grpc.health.v1.Health/Check";
    // Every method's series, at zero before any call.
    let mut expected = Vec::new();
    for (kind, method) in [
        ("unary", SOLVE),
        ("bidi_stream", STREAM),
        ("unary", "patience.v1.RpsService/SolveRps"),
        ("bidi_stream", "patience.v1.RpsService/SolveRpsStream"),
        ("unary", CHECK),
        ("server_stream", "grpc.health.v1.Health/Watch"),
        (
            "bidi_stream",
            "grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        ),
        (
            "bidi_stream",
            "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
        ),
        ("unary", "unknown/unknown"),
    ] {
        for name in [
            "grpc_server_started_total",
            "grpc_server_msg_received_total",
            "grpc_server_msg_sent_total",
            "grpc_server_handling_seconds_count",
        ] {
            expected.push(grpc(name, kind, method, None));
        }
        for code in patience::metrics::CODE_NAMES {
            expected.push(grpc("grpc_server_handled_total", kind, method, Some(code)));
        }
    }
    // The series are made as the server starts, one method after another, on a task of its own:
    // wait until the last is there (a scrape between two methods sees some and not others).
    let limit = std::time::Duration::from_secs(20);
    let before = common::poll_async(limit, common::POLL, async || {
        let text = metrics.render(&server.pool);
        expected
            .iter()
            .all(|series| sample(&text, series).is_some())
            .then_some(text)
    })
    .await
    .unwrap_or_else(|| metrics.render(&server.pool));
    for series in &expected {
        assert_eq!(sample(&before, series), Some(0.0), "{series}\n{before}");
    }

    let channel = tonic::transport::Channel::from_shared(server.addr.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let bearer = AddBearer::new(Some(&token)).unwrap();
    let mut client = SolverClient::with_interceptor(channel.clone(), bearer);
    let mut anonymous = SolverClient::new(channel.clone());
    let few = |n: usize| SolveRequest {
        analysis: None,
        deals: deals[..n].iter().map(|d| wire(d, "")).collect(),
        ..Default::default()
    };

    // Solve: OK; refused by the token check (its message never read); failed by the service
    // (more deals than --max-deals-per-request: read, then refused).
    client.solve(few(3)).await.unwrap();
    let refused = anonymous.solve(few(3)).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
    let failed = client.solve(few(6)).await.unwrap_err();
    assert_eq!(failed.code(), tonic::Code::InvalidArgument);

    // SolveStream: OK, two requests; then one held open, a second refused by the cap of one open
    // stream, and the held one cancelled by its client.
    let mut ok = client
        .solve_stream(tokio_stream::iter([few(2), few(4)]))
        .await
        .unwrap()
        .into_inner();
    let mut sent_by_stream = 0.0;
    while ok.message().await.unwrap().is_some() {
        sent_by_stream += 1.0;
    }
    let (tx, rx) = mpsc::channel::<SolveRequest>(4);
    let mut held = tonic::Request::new(ReceiverStream::new(rx));
    let cancel = held.cancellation_handle();
    let mut held = client.solve_stream(held).await.unwrap().into_inner();
    tx.send(few(1)).await.unwrap();
    held.message().await.unwrap().unwrap();
    sent_by_stream += 1.0;
    let (_tx2, rx2) = mpsc::channel::<SolveRequest>(1);
    let capped = client
        .solve_stream(ReceiverStream::new(rx2))
        .await
        .unwrap_err();
    assert_eq!(capped.code(), tonic::Code::ResourceExhausted);
    cancel.cancel();
    // The reset goes out when the request body is next polled.
    let _ = tx.send(few(1)).await;
    let canceled = grpc(
        "grpc_server_handled_total",
        "bidi_stream",
        STREAM,
        Some("Canceled"),
    );
    until(&metrics, &server, &canceled, 1.0).await;
    drop((tx, held));

    // Health: OK, and NOT_FOUND for a service it does not serve; a path nothing serves.
    let mut health = HealthClient::new(channel.clone());
    health
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap();
    let unknown = health
        .check(HealthCheckRequest {
            service: "patience.v1.Nothing".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), tonic::Code::NotFound);
    let mut raw = tonic::client::Grpc::new(channel.clone());
    raw.ready().await.unwrap();
    let nowhere = raw
        .unary(
            tonic::Request::new(few(1)),
            http::uri::PathAndQuery::from_static("/scanner.v1.Probe/Everything"),
            tonic_prost::ProstCodec::<SolveRequest, proto::SolveResponse>::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(nowhere.code(), tonic::Code::Unimplemented);

    let text = metrics.render(&server.pool);
    let get = |series: String| sample(&text, &series).unwrap_or_else(|| panic!("{series}\n{text}"));
    let handled =
        |kind, method, code| get(grpc("grpc_server_handled_total", kind, method, Some(code)));
    /// Type, method, calls started, messages read, messages sent, calls handled by code.
    type Counted<'a> = (&'a str, &'a str, f64, f64, f64, &'a [(&'a str, f64)]);
    let expected: [Counted; 4] = [
        (
            "unary",
            SOLVE,
            3.0,
            2.0,
            1.0,
            &[
                ("OK", 1.0),
                ("Unauthenticated", 1.0),
                ("InvalidArgument", 1.0),
            ],
        ),
        (
            "bidi_stream",
            STREAM,
            3.0,
            3.0,
            sent_by_stream,
            &[("OK", 1.0), ("Canceled", 1.0), ("ResourceExhausted", 1.0)],
        ),
        (
            "unary",
            CHECK,
            2.0,
            2.0,
            1.0,
            &[("OK", 1.0), ("NotFound", 1.0)],
        ),
        (
            "unary",
            "unknown/unknown",
            1.0,
            0.0,
            0.0,
            &[("Unimplemented", 1.0)],
        ),
    ];
    for (kind, method, started, received, sent, codes) in expected {
        assert_eq!(
            get(grpc("grpc_server_started_total", kind, method, None)),
            started,
            "{method}"
        );
        assert_eq!(
            get(grpc("grpc_server_msg_received_total", kind, method, None)),
            received,
            "{method}"
        );
        assert_eq!(
            get(grpc("grpc_server_msg_sent_total", kind, method, None)),
            sent,
            "{method}"
        );
        for code in patience::metrics::CODE_NAMES {
            let want = codes
                .iter()
                .find(|(c, _)| *c == code)
                .map_or(0.0, |(_, n)| *n);
            assert_eq!(handled(kind, method, code), want, "{method} {code}");
        }
        assert_eq!(
            get(grpc(
                "grpc_server_handling_seconds_count",
                kind,
                method,
                None
            )),
            started,
            "{method}"
        );
    }
    assert_eq!(
        get("patience_calls_refused_total{reason=\"max_open_streams\"}".into()),
        1.0
    );
    // A stream's duration fits a bucket below +Inf, and the buckets reach two hours.
    let le = |bound: &str| {
        text.lines()
            .find(|l| {
                l.starts_with("grpc_server_handling_seconds_bucket{")
                    && l.contains(&format!("le=\"{bound}\""))
                    && l.contains("grpc_method=\"SolveStream\"")
            })
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
    };
    assert_eq!(le("7200.0"), Some(3.0), "{text}");

    for process in [
        "process_resident_memory_bytes",
        "process_virtual_memory_bytes",
        "process_open_fds",
        "process_max_fds",
        "process_start_time_seconds",
        "process_cpu_seconds_total",
    ] {
        assert!(get(process.into()) >= 0.0, "{process}");
    }
    assert!(get("process_resident_memory_bytes".into()) > 1e6);
    assert!(get("process_open_fds".into()) >= 3.0);
    assert!(get("process_max_fds".into()) >= get("process_open_fds".into()));
    assert!(get("process_start_time_seconds".into()) > 1.6e9);
    // docs/operations.md, "Memory", the worst case (every stream a plain HTTP upload): 7 MiB +
    // W × (4 MiB + 6.1 MiB) + C × 18 KiB + S × (21 KiB + 64 KiB + 200 KiB) + U × (21 KiB + M) +
    // H × 9 KiB + D × 250 B, with this server's limits.
    let (kib, mib): (f64, f64) = (1024.0, 1024.0 * 1024.0);
    let c = ServerConfig::default();
    let bound = 7.0 * mib
        + 2.0 * (4.0 * mib + (6.1 * mib).floor())
        + c.max_connections as f64 * 18.0 * kib
        + 1.0 * (21.0 + 64.0 + 200.0) * kib
        + 64.0 * (21.0 * kib + 4.0 * mib)
        + 256.0 * 9.0 * kib
        + 65_536.0 * 250.0;
    assert_eq!(get("patience_memory_bound_bytes".into()), bound);
    assert_eq!(get("patience_drain_started_time_seconds".into()), 0.0);

    drop((client, anonymous, health, raw, channel));
    server.stop().await;
    let after = metrics.render(&patience::pool::Pool::new(1, 1).unwrap());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let drained = sample(&after, "patience_drain_started_time_seconds").unwrap();
    assert!(drained > now - 60.0 && drained <= now, "{drained} {now}");
}

/// One HTTP/1.1 exchange on a connection of its own (closed after it): the status code, and the
/// whole response as text (head and body).
fn http1(socket: std::net::SocketAddr, head: &str, body: &[u8]) -> (u16, String) {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(socket).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let head = format!(
        "{head}\r\nHost: {socket}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("an HTTP status in {text:?}"));
    (status, text)
}

/// Through the front (`src/server/front.rs`): a gRPC-Web call counts once, in the gRPC series
/// (OK), as does one refused by the framing for a compression it does not take (Unimplemented);
/// what the daemon answers in plain HTTP (415 for JSON to a gRPC method, 505 for gRPC over
/// HTTP/1.1, 404, the plain API's 405 for a GET and 200 for a deal file) counts in
/// `http_server_request_duration_seconds` by method, route and status, any path the daemon does
/// not serve as route `other`; no gRPC call shows there. The API's request also counts as the
/// SolveStream call it is translated into.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_through_the_front_count_once_grpc_by_method_http_by_route() {
    let metrics = Metrics::new();
    let server = TestServer::start(
        1,
        ServerConfig {
            metrics: metrics.clone(),
            ..config()
        },
    )
    .await;
    const CHECK: &str = "grpc.health.v1.Health/Check";
    let started = grpc("grpc_server_started_total", "unary", CHECK, None);
    until(&metrics, &server, &started, 0.0).await;
    let socket = server.socket;
    // A gRPC-Web call: one empty message (HealthCheckRequest for ""); its status comes in the
    // body's trailers frame.
    let empty_message = [0u8, 0, 0, 0, 0];
    let web =
        "POST /grpc.health.v1.Health/Check HTTP/1.1\r\ncontent-type: application/grpc-web+proto";
    let answers = tokio::task::spawn_blocking(move || {
        [
            http1(socket, web, &empty_message),
            http1(
                socket,
                &format!("{web}\r\ngrpc-encoding: br"),
                &[1, 0, 0, 0, 0],
            ),
            http1(
                socket,
                "POST /patience.v1.Solver/Solve HTTP/1.1\r\ncontent-type: application/json",
                b"{}",
            ),
            http1(
                socket,
                "POST /patience.v1.Solver/Solve HTTP/1.1\r\ncontent-type: application/grpc",
                &empty_message,
            ),
            http1(socket, "GET /wp-login.php HTTP/1.1", b""),
            http1(socket, "GET /v1/solve HTTP/1.1", b""),
            http1(
                socket,
                "POST /v1/solve HTTP/1.1\r\ncontent-type: text/plain",
                &std::fs::read(data("sample.in")).unwrap(),
            ),
        ]
    })
    .await
    .unwrap();
    let statuses = answers.each_ref().map(|(status, _)| *status);
    assert_eq!(
        statuses,
        [200, 200, 415, 505, 404, 405, 200],
        "{answers:#?}"
    );
    assert!(answers[6].1.contains("\r\n0.589314\n"), "{}", answers[6].1);
    assert!(answers[0].1.contains("grpc-status:0"), "{}", answers[0].1);
    assert!(answers[1].1.contains("grpc-status: 12"), "{}", answers[1].1);

    let http = |method: &str, route: &str, status: u16| {
        format!(
            "http_server_request_duration_seconds_count{{http_request_method=\"{method}\",\
             http_route=\"{route}\",http_response_status_code=\"{status}\"}}"
        )
    };
    // Counted when the response is done with, which may come just after the client has it.
    let last = http("POST", "/v1/solve", 200);
    until(&metrics, &server, &last, 1.0).await;
    let translated = grpc(
        "grpc_server_handled_total",
        "bidi_stream",
        "patience.v1.Solver/SolveStream",
        Some("OK"),
    );
    let text = until(&metrics, &server, &translated, 1.0).await;
    let get = |series: &str| sample(&text, series);
    for series in [
        http("POST", "/patience.v1.Solver/Solve", 415),
        http("POST", "/patience.v1.Solver/Solve", 505),
        http("GET", "other", 404),
        http("GET", "/v1/solve", 405),
    ] {
        assert_eq!(get(&series), Some(1.0), "{series}\n{text}");
    }
    let http_requests: f64 = text
        .lines()
        .filter(|l| l.starts_with("http_server_request_duration_seconds_count{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(http_requests, 5.0, "{text}");
    let check = |name, code| get(&grpc(name, "unary", CHECK, code));
    assert_eq!(
        check("grpc_server_started_total", None),
        Some(2.0),
        "{text}"
    );
    assert_eq!(check("grpc_server_msg_received_total", None), Some(1.0));
    assert_eq!(check("grpc_server_msg_sent_total", None), Some(1.0));
    assert_eq!(check("grpc_server_handled_total", Some("OK")), Some(1.0));
    assert_eq!(
        check("grpc_server_handled_total", Some("Unimplemented")),
        Some(1.0)
    );
    // The 505 never reached the services: no gRPC call of Solve started.
    let solve = grpc(
        "grpc_server_started_total",
        "unary",
        "patience.v1.Solver/Solve",
        None,
    );
    assert_eq!(get(&solve), Some(0.0), "{text}");
    let stream = grpc(
        "grpc_server_started_total",
        "bidi_stream",
        "patience.v1.Solver/SolveStream",
        None,
    );
    assert_eq!(get(&stream), Some(1.0), "{text}");
    server.stop().await;
}
