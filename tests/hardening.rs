//! The daemon as a process under abuse and at shutdown: more silent connections than it has file
//! descriptors, thousands of calls that never send a message, and a drain that answers a stream
//! to its end. Each test runs the real `patience serve` on a free port.

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{Daemon, Scratch, TOLERANCE, corpus, probability, request, scrape};
use futures::StreamExt as _;
use patience::proto::{SolveRequest, SolveResponse};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;

/// `n` TCP connections to `addr` that never send a byte, kept open as long as they live.
async fn silent_connections(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    let mut open = Vec::with_capacity(n);
    for _ in 0..n {
        open.push(
            TcpStream::connect(addr)
                .await
                .expect("the kernel completes the TCP handshake even when the daemon waits"),
        );
    }
    open
}

/// The process may need more descriptors than a CI shell's soft default for the floods below.
fn allow_many_sockets() {
    let _ = rlimit::increase_nofile_limit(u64::MAX);
}

/// With the descriptor limit at 512 (and so, by default, 384 connections at once), 600 silent
/// connections (more than the limit) are held open by their clients. Those the daemon accepted
/// are closed at the handshake timeout (so counted as refused for it), the rest wait in the
/// kernel's backlog without costing a descriptor, and a real client that connects after all of
/// them is served in the first round of places freed: before a second handshake timeout has
/// passed since the flood began (a client left out of the backlog, or a daemon out of
/// descriptors, would wait for a later round). The daemon never runs out of descriptors: a
/// connection costs one, its lingering close included. (The figures, 1,500 connections
/// against 1,024 descriptors and the default timeout, come from `cargo bench --bench load --
/// --flood-only`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_past_the_file_limit_do_not_lock_out_a_client() {
    const HANDSHAKE: Duration = Duration::from_secs(5);
    allow_many_sockets();
    let daemon = Daemon::start_with(
        &[
            "--workers",
            "1",
            "--handshake-timeout",
            "5s",
            "--metrics-addr",
            "127.0.0.1:0",
        ],
        &[("RUST_LOG", "info")],
        Some(512),
    );
    assert!(
        daemon.start_line.contains("max_connections=384"),
        "{}",
        daemon.start_line
    );
    let flooded = std::time::Instant::now();
    let flood = silent_connections(daemon.socket, 600).await;
    let (deals, expected) = corpus("sample");
    let answer = tokio::time::timeout(2 * HANDSHAKE, async {
        let mut client = daemon.client().await;
        client.solve(request(&deals, 0)).await
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "the client was not served within two handshake timeouts of the flood ({:?} since it \
             began); log:\n{}",
            flooded.elapsed(),
            daemon.log_tail()
        )
    })
    .expect("the call succeeds");
    println!("served {:?} after the flood began", flooded.elapsed());
    let results = answer.into_inner().results;
    assert!((probability(&results[0]) - expected[0]).abs() <= TOLERANCE);
    let metrics = scrape(&daemon.metrics_addr());
    let refused = common::metric(
        &metrics,
        "patience_connections_refused_total{reason=\"handshake_timeout\"}",
    );
    assert!(
        refused.is_some_and(|n| n >= 1.0),
        "no silent connection was closed for the handshake timeout:\n{metrics}"
    );
    let out_of_files = common::metric(
        &metrics,
        "patience_accept_pauses_total{reason=\"file_limit\"}",
    );
    assert_eq!(
        out_of_files.unwrap_or(0.0),
        0.0,
        "the daemon ran out of descriptors:\n{}",
        daemon.log_tail()
    );
    drop(flood);
}

/// One raw HTTP/2 connection holding `calls` `SolveStream` calls that never send a message, with
/// the gRPC status of each that the server refused at once. Dropping it closes the connection.
struct SilentCalls {
    driver: tokio::task::JoinHandle<()>,
    _calls: Vec<(h2::RecvStream, h2::SendStream<bytes::Bytes>)>,
    refused: Vec<String>,
}

impl Drop for SilentCalls {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

async fn silent_calls(addr: SocketAddr, calls: usize) -> SilentCalls {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let (mut send, connection) = h2::client::handshake(tcp)
        .await
        .expect("an HTTP/2 handshake");
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut held = Vec::new();
    let mut refused = Vec::new();
    for _ in 0..calls {
        send = send.ready().await.expect("room for another stream");
        let request = http::Request::post(format!("http://{addr}/patience.v1.Solver/SolveStream"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .expect("a request");
        let (response, body) = send.send_request(request, false).expect("send the headers");
        let head = tokio::time::timeout(Duration::from_secs(20), response)
            .await
            .expect("the server answers the headers")
            .expect("a response");
        match head.headers().get("grpc-status") {
            // Trailers only: refused before any work.
            Some(code) => refused.push(format!(
                "{} {}",
                code.to_str().unwrap_or("?"),
                head.headers()
                    .get("grpc-message")
                    .and_then(|m| m.to_str().ok())
                    .unwrap_or("")
            )),
            // Both halves are kept: the call stays open, silent, until the connection closes.
            None => held.push((head.into_body(), body)),
        }
    }
    SilentCalls {
        driver,
        _calls: held,
        refused,
    }
}

/// 300 connections open 8 `SolveStream` calls each that never send a message: the first 1,024
/// (the default `--max-open-streams`) are held, every one beyond gets RESOURCE_EXHAUSTED naming
/// the flag, a unary call is still answered at once, a new stream is refused until the silent ones
/// go away and served after, and the daemon's peak memory stays well under 256 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_calls_beyond_the_cap_are_refused_and_memory_stays_bounded() {
    allow_many_sockets();
    let daemon = Daemon::start(&["--workers", "1"]);
    let (deals, expected) = corpus("sample");
    let rss_before = daemon.status_kib("VmRSS");
    let mut flood = Vec::new();
    for _ in 0..300 {
        flood.push(silent_calls(daemon.socket, 8).await);
    }
    let refused: Vec<&String> = flood.iter().flat_map(|f| &f.refused).collect();
    assert_eq!(refused.len(), 300 * 8 - 1_024, "{:?}", refused.first());
    for status in &refused {
        // 8 is RESOURCE_EXHAUSTED; the message is percent-encoded.
        assert!(status.starts_with("8 "), "{status}");
        assert!(status.contains("--max-open-streams"), "{status}");
    }
    let rss_held = daemon.status_kib("VmRSS");
    eprintln!(
        "daemon RSS {rss_before} KiB before, {rss_held} KiB with 300 connections and 1,024 \
         silent calls: {} KiB per call and its share of a connection",
        rss_held.saturating_sub(rss_before) / 1_024
    );

    let mut fresh = daemon.client().await;
    let answer = tokio::time::timeout(Duration::from_secs(30), fresh.solve(request(&deals, 0)))
        .await
        .expect("a unary call is not held up by the silent ones")
        .expect("a unary call");
    assert!((probability(&answer.into_inner().results[0]) - expected[0]).abs() <= TOLERANCE);
    let status = fresh
        .solve_stream(tokio_stream::iter(vec![request(&deals, 0)]))
        .await
        .expect_err("the stream cap is full");
    assert_eq!(status.code(), Code::ResourceExhausted);
    let said = common::assert_reason(&status, "MAX_OPEN_STREAMS");
    assert_eq!(said["flag"], "--max-open-streams");

    let peak = daemon.status_kib("VmHWM");
    assert!(peak < 256 * 1024, "peak RSS {peak} KiB");

    drop(flood);
    // The server sees the calls end once their connections close.
    let mut inbound = common::wait_for_async(
        Duration::from_secs(10),
        "a stream is served once the silent calls are gone",
        async || {
            let outbound = tokio_stream::iter(vec![request(&deals, 0)]);
            let response = fresh.solve_stream(outbound).await.ok()?;
            Some(response.into_inner())
        },
    )
    .await;
    let response: SolveResponse = inbound.message().await.unwrap().unwrap();
    assert!((probability(&response.results[0]) - expected[0]).abs() <= TOLERANCE);
}

/// A client that sends 20 deals, then, once their results are in, SIGTERM sent and the drain
/// begun, 130 more one by one, is answered to the end: the drain serves a stream whose client is
/// still sending until it finishes (within `--drain-timeout`), as generic gRPC clients, which
/// cannot resume, need.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_stream_gets_every_result_across_sigterm() {
    let daemon = Daemon::start(&["--workers", "1", "--drain-timeout", "30s"]);
    let (deals, expected) = corpus("random1000");
    let (tx, rx) = mpsc::channel(1);
    let slow: Vec<_> = deals[..150].to_vec();
    let (draining, drain_begun) = tokio::sync::oneshot::channel();
    let feeder = tokio::spawn(async move {
        let send = async |i: usize| {
            tx.send(request(std::slice::from_ref(&slow[i]), i))
                .await
                .is_ok()
        };
        for i in 0..20 {
            if !send(i).await {
                return;
            }
        }
        // The rest only once the daemon drains: they are sent during the drain, not before.
        if drain_begun.await.is_err() {
            return;
        }
        for i in 20..slow.len() {
            if !send(i).await {
                return;
            }
        }
    });
    let mut client = daemon.client().await;
    let mut inbound = client
        .solve_stream(ReceiverStream::new(rx))
        .await
        .expect("the stream opens")
        .into_inner();
    let mut results = Vec::new();
    let mut draining = Some(draining);
    let mut terminated = false;
    while let Some(response) = inbound.message().await.expect("no error across the drain") {
        results.extend(response.results);
        if results.len() >= 20 && !terminated {
            daemon.signal("TERM");
            terminated = true;
            daemon.line_with("shutting down: draining", Duration::from_secs(10));
            if let Some(draining) = draining.take() {
                let _ = draining.send(());
            }
        }
    }
    assert!(terminated, "the stream ended before the signal");
    feeder.await.unwrap();
    assert_eq!(results.len(), 150);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.index, i as u64);
        assert!(
            (probability(r) - expected[i]).abs() <= TOLERANCE,
            "deal {i}"
        );
    }
    drop((inbound, client));
    let (code, log) = daemon.wait(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{log:#?}");
}

/// A client that never stops sending is served through the drain until `--drain-timeout` (2 s
/// here), then cut at a request boundary: every result before the index UNAVAILABLE names has
/// arrived, in order, and the process exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_sender_is_cut_at_the_drain_timeout_with_the_exact_resume_index() {
    let daemon = Daemon::start(&["--workers", "1", "--drain-timeout", "2s"]);
    let (deals, expected) = corpus("random1000");
    let (tx, rx) = mpsc::channel(2);
    let rounds: Vec<SolveRequest> = deals
        .chunks(10)
        .enumerate()
        .map(|(i, chunk)| request(chunk, 10 * i))
        .collect();
    let feeder = tokio::spawn(async move {
        for request in rounds.iter().cycle() {
            if tx.send(request.clone()).await.is_err() {
                break;
            }
        }
    });
    let mut client = daemon.client().await;
    let mut inbound = client
        .solve_stream(ReceiverStream::new(rx))
        .await
        .expect("the stream opens")
        .into_inner();
    let mut results = inbound.message().await.unwrap().unwrap().results;
    daemon.signal("TERM");
    let status = loop {
        match inbound.message().await {
            Ok(Some(response)) => results.extend(response.results),
            Ok(None) => panic!("the stream ended without saying where to resume"),
            Err(status) => break status,
        }
    };
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    let said = common::assert_reason(&status, "DRAIN_TIMEOUT");
    assert_eq!(said["resume_index"], results.len().to_string());
    let resume = format!("from index {} on", results.len());
    assert!(status.message().contains(&resume), "{}", status.message());
    // The drain timeout did it, not something before it.
    daemon.line_with("drain timeout reached", Duration::from_secs(10));
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.index, i as u64);
        assert!((probability(r) - expected[i % expected.len()]).abs() <= TOLERANCE);
    }
    drop((inbound, client));
    feeder.abort();
    let (code, log) = daemon.wait(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{log:#?}");
}

/// The bound address is on the start line even when `RUST_LOG` asks only for warnings: a caller
/// that asked for port 0 needs it.
#[test]
fn the_listening_line_shows_with_rust_log_warn() {
    let daemon = Daemon::start_with(&[], &[("RUST_LOG", "warn")], None);
    assert!(daemon.socket.port() != 0, "{}", daemon.start_line);
}

/// Calls refused for a wrong token are counted by reason and logged, but at most one line per
/// reason in ten seconds, with the count of the others: a client retrying in a loop shows in the
/// log without flooding it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_calls_are_counted_and_logged_without_flooding_the_log() {
    let dir = Scratch::new("hardening");
    let token = dir.write("token", "secret\n");
    let daemon = Daemon::start(&["--auth-token-file", &token, "--metrics-addr", "127.0.0.1:0"]);
    let metrics_addr = daemon.metrics_addr();
    let (deals, _) = corpus("sample");
    let mut client = daemon.client().await;
    for _ in 0..30 {
        let status = client.solve(request(&deals, 0)).await.unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated);
        common::assert_reason(&status, "UNAUTHENTICATED");
    }
    let first = daemon.line_with("refused a call", Duration::from_secs(5));
    assert!(first.contains("unauthenticated"), "{first}");
    // A call with the token, logged after every refusal was (the daemon logs a refusal before
    // it answers it): what lies between is what the other 29 refusals logged.
    let secret = patience::auth::Secret::new("secret".to_string());
    let bearer = patience::auth::AddBearer::new(Some(&secret)).unwrap();
    let channel = tonic::transport::Endpoint::from_shared(daemon.addr.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    patience::proto::solver_client::SolverClient::with_interceptor(channel, bearer)
        .solve(request(&deals, 0))
        .await
        .expect("a call with the token is served");
    daemon.logged("call finished", Duration::from_secs(5));
    let more: Vec<String> = daemon
        .log_so_far()
        .into_iter()
        .filter(|l| l.contains("refused a call"))
        .collect();
    assert!(more.is_empty(), "{more:#?}");
    let text = scrape(&metrics_addr);
    assert!(
        text.contains("patience_calls_refused_total{reason=\"unauthenticated\"} 30"),
        "{text}"
    );
}

/// Two clients that send a long stream and never read its results (their 64 KiB windows fill,
/// so the daemon's finished responses wait, holding their deals' share of
/// `--max-deals-in-flight`) starve everyone else: a unary call cannot get its deals in. At
/// `--stall-timeout` their waiting results are dropped, the cuts counted and logged, and the
/// daemon serves again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_stop_reading_are_cut_at_the_stall_timeout() {
    let daemon = Daemon::start(&[
        "--workers",
        "1",
        "--max-in-flight",
        "32",
        "--max-deals-in-flight",
        "64",
        // Long enough for the refusal and the gauge below to be seen before the cut on a
        // loaded machine.
        "--stall-timeout",
        "6s",
        "--metrics-addr",
        "127.0.0.1:0",
    ]);
    let metrics = daemon.metrics_addr();
    let (deals, expected) = corpus("random1000");
    let mut stalled = Vec::new();
    for _ in 0..2 {
        let mut client = common::small_window_client(&daemon.addr).await;
        let requests = common::requests(&deals, 16, 8);
        let responses = client
            .solve_stream(tokio_stream::iter(requests))
            .await
            .unwrap()
            .into_inner();
        // Kept, never read.
        stalled.push((client, responses));
    }

    let mut client = daemon.client().await;
    let one = |ms| {
        let mut r = tonic::Request::new(request(&deals[..1], 0));
        r.set_timeout(Duration::from_millis(ms));
        r
    };
    // Once both hold all they may, the whole budget is held: a new call is refused at once,
    // naming the flag (before that, a call may just wait its turn on the busy worker).
    let mut last = None;
    let refused = common::poll_async(Duration::from_secs(10), common::POLL, async || match client
        .solve(one(200))
        .await
    {
        Err(status) if status.code() == Code::ResourceExhausted => Some(status),
        other => {
            last = Some(other);
            None
        }
    })
    .await
    .unwrap_or_else(|| panic!("the non-reading clients never held the budget: {last:?}"));
    assert!(
        refused.message().contains("--max-deals-in-flight"),
        "{refused:?}"
    );
    assert_eq!(
        common::assert_reason(&refused, "MAX_DEALS_IN_FLIGHT")["limit"],
        "64"
    );
    // The gauge shows what holds the budget: their finished, unsent results, once their windows
    // are full (the first refusal can come a moment before, while tonic still takes some).
    scraped(
        &metrics,
        "patience_deals_in_flight 64\n",
        Duration::from_secs(10),
    )
    .await;

    for _ in 0..2 {
        let line = daemon.line_with("took no results", Duration::from_secs(30));
        assert!(line.contains("SolveStream"), "{line}");
    }
    let answer = client.solve(one(30_000)).await.unwrap().into_inner();
    assert!((probability(&answer.results[0]) - expected[0]).abs() <= TOLERANCE);
    let text = scrape(&metrics);
    assert!(
        text.contains("patience_calls_cut_total{reason=\"stall_timeout\"} 2"),
        "{text}"
    );
    // Given back once their connections are gone (asynchronously, so within a moment).
    scraped(
        &metrics,
        "patience_deals_in_flight 0\n",
        Duration::from_secs(5),
    )
    .await;
    // A cut client that reads again gets the results that were on their way, then the status
    // naming the index to resume from, which is the count it got.
    for (_client, mut responses) in stalled {
        assert_cut_after(&mut responses, 8 * deals.len()).await;
    }
}

/// Health watches (open to anyone, even with a token required, and never ending by themselves)
/// have a cap of their own: past `--max-open-watches` they are refused with `RESOURCE_EXHAUSTED`
/// naming it, counted, and solving calls go on untouched; a place freed is a place again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_past_their_cap_are_refused_and_solving_goes_on() {
    use tonic_health::pb::HealthCheckRequest;

    let daemon = Daemon::start(&["--max-open-watches", "2", "--metrics-addr", "127.0.0.1:0"]);
    let mut health = daemon.health().await;
    let watch = || HealthCheckRequest {
        service: String::new(),
    };
    let mut open = Vec::new();
    for _ in 0..2 {
        let mut stream = health.watch(watch()).await.unwrap().into_inner();
        assert!(stream.message().await.unwrap().is_some());
        open.push(stream);
    }
    let refused = match health.watch(watch()).await {
        Ok(response) => response.into_inner().message().await.unwrap_err(),
        Err(status) => status,
    };
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(
        refused.message().contains("--max-open-watches"),
        "{refused:?}"
    );
    common::assert_reason(&refused, "MAX_OPEN_WATCHES");

    let (deals, expected) = corpus("sample");
    let mut client = daemon.client().await;
    let answer = client.solve(request(&deals, 0)).await.unwrap().into_inner();
    assert!((probability(&answer.results[0]) - expected[0]).abs() <= TOLERANCE);
    let text = scrape(&daemon.metrics_addr());
    assert!(text.contains("patience_open_watches 2\n"), "{text}");
    assert!(
        text.contains("patience_calls_refused_total{reason=\"max_open_watches\"} 1\n"),
        "{text}"
    );

    drop(open.pop());
    let mut last = None;
    let again = common::poll_async(Duration::from_secs(10), common::POLL, async || {
        let again = match health.watch(watch()).await {
            Ok(response) => response.into_inner().message().await.map(|_| ()),
            Err(status) => Err(status),
        };
        last = again.err();
        last.is_none().then_some(())
    })
    .await;
    assert!(
        again.is_some(),
        "the freed place was not given back: {last:?}"
    );
}

/// Unary calls that never finish sending their message hold their places under
/// `--max-open-unary`: past it a unary call is refused at once with `RESOURCE_EXHAUSTED` naming
/// the flag, while streams are served as ever; a place freed is a place again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unary_calls_past_their_cap_are_refused_and_streams_go_on() {
    let daemon = Daemon::start(&["--max-open-unary", "3", "--metrics-addr", "127.0.0.1:0"]);
    // A unary call's headers are answered only with its response, so the five are sent at once
    // and the refused ones are the only ones answered: the test waits for two answers (the hang
    // limit only catches a hang), and the unary call below, refused too, shows the other three
    // still hold their places, as the daemon's gauge of open calls says.
    let tcp = TcpStream::connect(daemon.socket).await.unwrap();
    let (mut send, connection) = h2::client::handshake(tcp).await.unwrap();
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut calls = Vec::new();
    for _ in 0..5 {
        send = send.ready().await.unwrap();
        let request =
            http::Request::post(format!("http://{}/patience.v1.Solver/Solve", daemon.socket))
                .header("content-type", "application/grpc")
                .header("te", "trailers")
                .body(())
                .unwrap();
        let (response, body) = send.send_request(request, false).unwrap();
        calls.push((Box::pin(response), body));
    }
    let mut answered: futures::stream::FuturesUnordered<_> =
        calls.iter_mut().map(|(response, _body)| response).collect();
    let mut refused = Vec::new();
    while refused.len() < 2 {
        let head = tokio::time::timeout(common::HANG_LIMIT, answered.next())
            .await
            .expect("fewer than two unary calls were refused")
            .expect("five calls")
            .unwrap();
        let header = |name| {
            head.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string()
        };
        refused.push(format!(
            "{} {}",
            header("grpc-status"),
            header("grpc-message")
        ));
    }
    drop(answered);
    // Two were refused because three were admitted first: exactly the flag's three are held.
    let metrics = scrape(&daemon.metrics_addr());
    assert_eq!(
        common::metric(&metrics, "patience_open_calls"),
        Some(3.0),
        "{metrics}"
    );
    for status in &refused {
        // 8 is RESOURCE_EXHAUSTED; the message is percent-encoded.
        assert!(status.starts_with("8 "), "{status}");
        assert!(status.contains("--max-open-unary"), "{status}");
    }
    let (deals, expected) = corpus("sample");
    let mut client = daemon.client().await;
    let refused = client.solve(request(&deals, 0)).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    let mut inbound = client
        .solve_stream(tokio_stream::iter(vec![request(&deals, 0)]))
        .await
        .unwrap()
        .into_inner();
    let response = inbound.message().await.unwrap().unwrap();
    assert!((probability(&response.results[0]) - expected[0]).abs() <= TOLERANCE);

    driver.abort();
    drop(calls);
    let answer = common::wait_for_async(
        Duration::from_secs(10),
        "a unary call is served once the silent ones are gone",
        async || Some(client.solve(request(&deals, 0)).await.ok()?.into_inner()),
    )
    .await;
    assert!((probability(&answer.results[0]) - expected[0]).abs() <= TOLERANCE);
}

/// Waits until a scrape of `metrics` contains `needle` (such as a gauge's line); panics with the
/// last scrape after `limit`, which only catches a hang.
async fn scraped(metrics: &str, needle: &str, limit: Duration) {
    let seen = common::poll_async(limit, common::POLL, async || {
        scrape(metrics).contains(needle).then_some(())
    })
    .await;
    assert!(seen.is_some(), "no {needle:?} in:\n{}", scrape(metrics));
}

/// Reads a stream the server cut at the stall timeout to its end: what arrived is a prefix, and
/// the status is `RESOURCE_EXHAUSTED` naming the flag and, as the index to resume from, exactly
/// the number of results that arrived.
async fn assert_cut_after(responses: &mut tonic::Streaming<SolveResponse>, sent: usize) {
    let (results, status) = common::results_until_status(responses).await;
    assert!(results < sent, "{results} of {sent}");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(status.message().contains("--stall-timeout"), "{status:?}");
    assert_eq!(
        common::assert_reason(&status, "STALL_TIMEOUT")["resume_index"],
        results.to_string()
    );
    assert!(
        status
            .message()
            .contains(&format!("results before index {results} were sent")),
        "{results} results arrived: {status:?}"
    );
}

/// A client that sends its whole stream, half-closes and never reads is cut as well: the call
/// keeps watching after it has answered everything, until tonic has taken every response, so
/// the results it holds are given back at the stall timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_sent_everything_and_never_reads_is_cut_too() {
    let daemon = Daemon::start(&[
        "--workers",
        "1",
        // The daemon reads all 2,000 deals (several flow-control refills) before the watch
        // starts counting: long enough for that on a loaded machine.
        "--stall-timeout",
        "3s",
        "--metrics-addr",
        "127.0.0.1:0",
    ]);
    let metrics = daemon.metrics_addr();
    let (deals, _) = corpus("random1000");
    let mut client = common::small_window_client(&daemon.addr).await;
    // 2,000 deals, under the default --max-in-flight so that every request is read, with moves
    // and lines (~200 bytes a result) so that their results are far more than its window holds.
    let mut requests = common::requests(&deals, 16, 2);
    for r in &mut requests {
        r.analysis = Some(patience::proto::AnalysisOptions {
            exact: false,
            moves: true,
            line: true,
        });
    }
    let mut responses = client
        .solve_stream(tokio_stream::iter(requests))
        .await
        .unwrap()
        .into_inner();
    let line = daemon.line_with("took no results", Duration::from_secs(15));
    assert!(line.contains("received=2000"), "{line}");
    scraped(
        &metrics,
        "patience_deals_in_flight 0\n",
        Duration::from_secs(5),
    )
    .await;
    assert_cut_after(&mut responses, 2 * deals.len()).await;
}
