//! The gRPC daemon, tested on the wire: a real server on port 0, the generated client.
//!
//! Expected probabilities come from `tests/data/*.out9`, made by the reference solver.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{
    DelayProxy, TOLERANCE, TestServer, config, corpus, metric, probability, stream_all, wait_until,
    wire,
};
use patience::metrics::Metrics;
use patience::pool::Ticket;
use patience::proto::solver_client::SolverClient;
use patience::proto::{self, ErrorCode, SolveRequest, result::Outcome};
use patience::server::ServerConfig;
use patience::service::Limits;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;
use tonic::transport::Channel;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random1000_comes_back_in_order_and_correct_for_any_workers_and_batching() {
    let (deals, expected) = corpus("random1000");
    for workers in [1, 2, 4] {
        let server = TestServer::start(workers, config()).await;
        let mut client = server.client().await;
        for batch in [1, 7, 500] {
            let requests: Vec<SolveRequest> = deals
                .chunks(batch)
                .enumerate()
                .map(|(c, chunk)| SolveRequest {
                    analysis: None,
                    deals: chunk
                        .iter()
                        .enumerate()
                        .map(|(i, d)| wire(d, format!("deal-{}", c * batch + i)))
                        .collect(),
                    ..Default::default()
                })
                .collect();
            let responses = stream_all(&mut client, requests).await.unwrap();
            assert_eq!(responses.len(), deals.len().div_ceil(batch));
            let results: Vec<proto::Result> =
                responses.into_iter().flat_map(|r| r.results).collect();
            assert_eq!(results.len(), deals.len());
            for (i, r) in results.iter().enumerate() {
                assert_eq!(r.index, i as u64, "workers {workers}, batch {batch}");
                assert_eq!(r.id, format!("deal-{i}"));
                let p = probability(r);
                assert!(
                    (p - expected[i]).abs() <= TOLERANCE,
                    "workers {workers}, batch {batch}, deal {i}: {p} vs {}",
                    expected[i]
                );
            }
        }
        server.stop().await;
    }
}

/// A deal packed as `SolveRequest.packed_deals` documents it, worked from the text here rather
/// than by the crate's packer: rank (6 7 8 9 T J Q K A) * 4 + suit (S C D H), card by card.
fn packed_by_hand(deal: &patience::deal::Deal) -> Vec<u8> {
    let text = wire(deal, "").cards;
    let bytes: Vec<u8> = text
        .split(' ')
        .map(|card| {
            let card = card.as_bytes();
            let rank = b"6789TJQKA".iter().position(|&r| r == card[0]).unwrap();
            let suit = b"SCDH".iter().position(|&s| s == card[1]).unwrap();
            (rank * 4 + suit) as u8
        })
        .collect();
    assert_eq!(bytes.len(), 36);
    bytes
}

/// Packed deals are answered as their text would be, after the text deals of their request, the
/// indices following on across the stream; a bad packed deal (a byte that is no card, a card
/// twice, bytes left over) is that deal's error only; the stream's response headers say the
/// server reads them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packed_deals_are_answered_as_their_text_and_announced() {
    let (deals, expected) = corpus("random1000");
    let server = TestServer::start(2, config()).await;
    let mut client = server.client().await;
    // Chunks of 100: the first 10 deals of each as text with ids, the other 90 packed.
    let requests: Vec<SolveRequest> = deals
        .chunks(100)
        .enumerate()
        .map(|(c, chunk)| SolveRequest {
            deals: chunk[..10]
                .iter()
                .enumerate()
                .map(|(i, d)| wire(d, format!("deal-{}", c * 100 + i)))
                .collect(),
            packed_deals: chunk[10..].iter().flat_map(packed_by_hand).collect(),
            ..Default::default()
        })
        .collect();
    let (tx, rx) = mpsc::channel(requests.len());
    for r in requests {
        tx.send(r).await.unwrap();
    }
    drop(tx);
    let response = client.solve_stream(ReceiverStream::new(rx)).await.unwrap();
    let features = response.metadata().get("patience-features");
    assert_eq!(features.and_then(|v| v.to_str().ok()), Some("packed-deals"));
    let mut inbound = response.into_inner();
    let mut results = Vec::new();
    while let Some(r) = inbound.message().await.unwrap() {
        results.extend(r.results);
    }
    assert_eq!(results.len(), deals.len());
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.index, i as u64);
        let id = if i % 100 < 10 {
            format!("deal-{i}")
        } else {
            String::new()
        };
        assert_eq!(r.id, id);
        let p = probability(r);
        assert!(
            (p - expected[i]).abs() <= TOLERANCE,
            "deal {i}: {p} vs {}",
            expected[i]
        );
    }

    let good = packed_by_hand(&deals[0]);
    let mut not_a_card = good.clone();
    not_a_card[2] = 36;
    let mut twice = good.clone();
    twice[35] = twice[0];
    let bad = SolveRequest {
        deals: vec![wire(&deals[1], "text")],
        packed_deals: [&good[..], &not_a_card, &twice, &good, &good[..20]].concat(),
        ..Default::default()
    };
    let responses = stream_all(&mut client, vec![bad]).await.unwrap();
    let outcomes: Vec<_> = responses[0].results.iter().map(|r| &r.outcome).collect();
    assert_eq!(outcomes.len(), 6);
    let code = |o: &Option<Outcome>| match o {
        Some(Outcome::Error(e)) => Some((ErrorCode::try_from(e.code).unwrap(), e.message.clone())),
        _ => None,
    };
    assert!((probability(&responses[0].results[0]) - expected[1]).abs() <= TOLERANCE);
    assert!((probability(&responses[0].results[1]) - expected[0]).abs() <= TOLERANCE);
    assert!((probability(&responses[0].results[4]) - expected[0]).abs() <= TOLERANCE);
    let (c, m) = code(outcomes[2]).unwrap();
    assert_eq!(c, ErrorCode::BadCard);
    assert!(
        m.contains("pile 1, position 3") && m.contains("byte 36"),
        "{m}"
    );
    let (c, m) = code(outcomes[3]).unwrap();
    assert_eq!(c, ErrorCode::DuplicateCard);
    assert!(m.contains("pile 9, position 4"), "{m}");
    let (c, m) = code(outcomes[5]).unwrap();
    assert_eq!(c, ErrorCode::CardCount);
    assert!(m.contains("20 cards"), "{m}");
    server.stop().await;
}

/// Asked for packed answers, a request whose deals are all solved without an id or an analysis
/// is answered by `probabilities` (the judge's answers, in order, `first_index` its first deal's
/// stream index); one with a bad deal, an id or an analysis is answered by `results` as ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packed_answers_are_the_judges_and_give_way_to_results_where_needed() {
    let (deals, expected) = corpus("random1000");
    let server = TestServer::start(2, config()).await;
    let mut client = server.client().await;
    let packed = |range: std::ops::Range<usize>| SolveRequest {
        packed_deals: deals[range].iter().flat_map(packed_by_hand).collect(),
        packed_answers: true,
        ..Default::default()
    };
    let mut bad = packed(300..310);
    // The sixth deal is bad: the five before it were taken for packed answers already.
    bad.packed_deals[5 * 36 + 3] = 36;
    let with_id = SolveRequest {
        deals: vec![wire(&deals[310], "an-id")],
        packed_answers: true,
        ..Default::default()
    };
    let analysed = SolveRequest {
        analysis: Some(proto::AnalysisOptions::default()),
        ..packed(311..320)
    };
    let text = SolveRequest {
        deals: deals[320..400].iter().map(|d| wire(d, "")).collect(),
        packed_answers: true,
        ..Default::default()
    };
    let requests = vec![
        packed(0..256),
        packed(256..300),
        bad,
        with_id,
        analysed,
        text,
    ];
    let responses = stream_all(&mut client, requests).await.unwrap();
    let near = |p: f64, i: usize| assert!((p - expected[i]).abs() <= TOLERANCE, "deal {i}: {p}");
    for (r, first, count) in [
        (&responses[0], 0, 256),
        (&responses[1], 256, 44),
        (&responses[5], 320, 80),
    ] {
        assert!(r.results.is_empty(), "{r:?}");
        assert_eq!(r.first_index, first);
        assert_eq!(r.probabilities.len(), count);
        for (i, &p) in r.probabilities.iter().enumerate() {
            near(p, first as usize + i);
        }
    }
    let bad = &responses[2];
    assert!(bad.probabilities.is_empty());
    assert_eq!(bad.results.len(), 10);
    for (i, r) in bad.results.iter().enumerate() {
        assert_eq!(r.index, 300 + i as u64);
        if i == 5 {
            assert!(matches!(r.outcome, Some(Outcome::Error(_))), "{r:?}");
        } else {
            near(probability(r), 300 + i);
        }
    }
    assert!(responses[3].probabilities.is_empty());
    assert_eq!(responses[3].results[0].id, "an-id");
    near(probability(&responses[3].results[0]), 310);
    assert!(responses[4].probabilities.is_empty());
    assert_eq!(responses[4].results.len(), 9);
    for (i, r) in responses[4].results.iter().enumerate() {
        assert!(r.analysis.is_some());
        near(probability(r), 311 + i);
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_deals_get_their_error_codes_and_the_rest_are_answered() {
    let (deals, expected) = corpus("random1000");
    let good = |i: usize| wire(&deals[i], format!("good-{i}"));
    let text = |cards: &str| proto::Deal {
        id: "bad".into(),
        cards: cards.into(),
    };
    let sample = good(0).cards;
    let cards: Vec<&str> = sample.split(' ').collect();
    let bad_token = sample.replacen(cards[5], "QX", 1);
    let short = cards[..35].join(" ");
    let long = format!("{sample} {}", cards[0]);
    let duplicate = sample.replacen(cards[1], cards[0], 1);
    let request = SolveRequest {
        analysis: None,
        deals: vec![
            good(0),
            text(&bad_token),
            good(1),
            text(&short),
            text(""),
            good(2),
            text(&long),
            text(&duplicate),
            text("ÄS \u{0} \u{1b}[31m"),
            good(3),
        ],
        ..Default::default()
    };
    let want = [
        None,
        Some(ErrorCode::BadCard),
        None,
        Some(ErrorCode::CardCount),
        Some(ErrorCode::CardCount),
        None,
        Some(ErrorCode::CardCount),
        Some(ErrorCode::DuplicateCard),
        Some(ErrorCode::BadCard),
        None,
    ];
    let server = TestServer::start(2, config()).await;
    let mut client = server.client().await;
    // Twice on one stream, so the second request's indexes continue from the first's.
    let responses = stream_all(&mut client, vec![request.clone(), request.clone()])
        .await
        .unwrap();
    assert_eq!(responses.len(), 2);
    let mut good_seen = 0;
    for (r, result) in responses.iter().flat_map(|r| &r.results).enumerate() {
        assert_eq!(result.index, r as u64);
        match (want[r % want.len()], &result.outcome) {
            (None, Some(Outcome::Probability(p))) => {
                let i = good_seen % 4;
                assert_eq!(result.id, format!("good-{i}"));
                assert!((p - expected[i]).abs() <= TOLERANCE);
                good_seen += 1;
            }
            (Some(code), Some(Outcome::Error(e))) => {
                assert_eq!(e.code, code as i32, "{}", e.message);
                assert_eq!(result.id, "bad");
                assert!(!e.message.is_empty());
            }
            (w, got) => panic!("result {r}: wanted {w:?}, got {got:?}"),
        }
    }
    assert_eq!(good_seen, 8);
    let messages: Vec<&str> = responses[0]
        .results
        .iter()
        .filter_map(|r| match &r.outcome {
            Some(Outcome::Error(e)) => Some(e.message.as_str()),
            _ => None,
        })
        .collect();
    assert!(messages[0].contains("pile 2, position 2") && messages[0].contains("QX"));
    assert!(messages[1].contains("35 cards"));
    assert!(messages[3].contains("37 cards"));
    assert!(messages[4].contains("appears twice"));
    // Control characters are escaped, never echoed raw.
    assert!(!messages[5].contains('\u{1b}'), "{}", messages[5]);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unary_solve_answers_a_request() {
    let (deals, expected) = corpus("random1000");
    let server = TestServer::start(2, config()).await;
    let mut client = server.client().await;
    let request = SolveRequest {
        analysis: None,
        deals: deals[..50].iter().map(|d| wire(d, "")).collect(),
        ..Default::default()
    };
    let response = client.solve(request).await.unwrap().into_inner();
    assert_eq!(response.results.len(), 50);
    for (i, r) in response.results.iter().enumerate() {
        assert_eq!(r.index, i as u64);
        assert!((probability(r) - expected[i]).abs() <= TOLERANCE);
    }
    let empty = client.solve(SolveRequest::default()).await.unwrap();
    assert!(empty.into_inner().results.is_empty());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_over_a_limit_get_the_status_users_expect() {
    let (deals, expected) = corpus("random1000");
    let config = ServerConfig {
        limits: Limits {
            max_deals_per_request: 10,
            max_message_bytes: 4096,
            ..Limits::default()
        },
        ..config()
    };
    let server = TestServer::start(1, config).await;
    let mut client = server.client().await;
    let eleven = SolveRequest {
        analysis: None,
        deals: deals[..11].iter().map(|d| wire(d, "")).collect(),
        ..Default::default()
    };
    let status = client.solve(eleven.clone()).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    let said = common::assert_reason(&status, "MAX_DEALS_PER_REQUEST");
    assert_eq!(said["limit"], "10");
    assert_eq!(said["flag"], "--max-deals-per-request");
    assert!(
        status.message().contains("limit is 10 deals"),
        "{}",
        status.message()
    );

    // On a stream, the requests before the bad one are still answered, in order.
    let ok = SolveRequest {
        analysis: None,
        deals: deals[..3].iter().map(|d| wire(d, "")).collect(),
        ..Default::default()
    };
    let outbound = tokio_stream::iter(vec![ok.clone(), eleven, ok]);
    let mut inbound = client.solve_stream(outbound).await.unwrap().into_inner();
    let first = inbound.message().await.unwrap().unwrap();
    assert_eq!(first.results.len(), 3);
    assert!((probability(&first.results[2]) - expected[2]).abs() <= TOLERANCE);
    let status = inbound.message().await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    common::assert_reason(&status, "MAX_DEALS_PER_REQUEST");

    let huge = SolveRequest {
        analysis: None,
        deals: vec![proto::Deal {
            id: String::new(),
            cards: "AS ".repeat(5000),
        }],
        ..Default::default()
    };
    let status = client.solve(huge.clone()).await.unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted);
    assert_eq!(
        common::assert_reason(&status, "MAX_MESSAGE_BYTES")["limit"],
        "4096"
    );
    assert!(
        status.message().contains("limit of 4096 bytes"),
        "{}",
        status.message()
    );
    let status = stream_all(&mut client, vec![huge]).await.unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted);
    common::assert_reason(&status, "MAX_MESSAGE_BYTES");
    assert!(
        status.message().contains("--max-message-bytes"),
        "{}",
        status.message()
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_serves_every_name_and_reflection_lists_both_games() {
    use tonic_health::pb::health_client::HealthClient;
    use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus};
    use tonic_reflection::pb::v1::ServerReflectionRequest;
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;

    let server = TestServer::start(1, config()).await;
    let channel = Channel::from_shared(server.addr.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = HealthClient::new(channel.clone());
    for service in ["", "patience.v1.Solver", "patience.v1.RpsService"] {
        let status = health
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner()
            .status;
        assert_eq!(status, ServingStatus::Serving as i32, "{service:?}");
    }
    let unknown = health
        .check(HealthCheckRequest {
            service: "no.such.Service".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);

    let mut reflection = ServerReflectionClient::new(channel);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut responses = reflection
        .server_reflection_info(tokio_stream::iter(vec![request]))
        .await
        .unwrap()
        .into_inner();
    let response = responses.message().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = response.message_response else {
        panic!("not a service list: {response:?}");
    };
    let names: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"patience.v1.Solver"), "{names:?}");
    assert!(names.contains(&"patience.v1.RpsService"), "{names:?}");
    assert!(names.contains(&"grpc.health.v1.Health"), "{names:?}");
    server.stop().await;
}

/// How long a test waits for an event where it only guards against a hang.
const HANG: Duration = Duration::from_secs(20);

/// Waits until the pool is idle; returns the batches that ran meanwhile.
async fn batches_run_until_idle(server: &TestServer, since: u64) -> u64 {
    let (pool, stats) = (&server.pool, server.pool.stats());
    wait_until(HANG, "the pool goes idle", || {
        pool.queued() == 0 && stats.busy() == 0
    })
    .await;
    stats.done() - since
}

/// Whether the server has let go of every call: none open, and no item of one held (the budget
/// held with a request's items, and their pool tickets, are let go together).
fn let_go(metrics: &Metrics, server: &TestServer) -> bool {
    let text = metrics.render(&server.pool);
    metric(&text, "patience_open_calls") == Some(0.0)
        && metric(&text, "patience_deals_in_flight") == Some(0.0)
}

/// The server's only worker, held by a job of the test's until [`Blocker::release`]: meanwhile
/// nothing of a call is solved, and what the call queued waits, so that a test counts exactly
/// which jobs ran after an event instead of bounding those that raced it.
struct Blocker {
    release: std::sync::mpsc::Sender<()>,
    job: Ticket<()>,
}

impl Blocker {
    /// Queues the test's job and waits until the worker runs it.
    async fn hold(server: &TestServer) -> Blocker {
        let (release, released) = std::sync::mpsc::channel::<()>();
        let started = Arc::new(AtomicBool::new(false));
        let running = started.clone();
        let job = server
            .pool
            .submit(move |_| {
                running.store(true, Ordering::SeqCst);
                let _ = released.recv();
            })
            .await
            .unwrap();
        wait_until(HANG, "the test's job holds the worker", || {
            started.load(Ordering::SeqCst)
        })
        .await;
        Blocker { release, job }
    }

    /// Lets the worker go, and waits for the test's job to end.
    async fn release(self) {
        self.release.send(()).unwrap();
        self.job.await.unwrap();
    }
}

/// With the worker held ([`Blocker`]) under a call that has plenty left to solve: waits until
/// the call's jobs fill the pool's queue (two per worker) behind it; the counts of jobs run and
/// skipped then.
async fn queue_filled(server: &TestServer) -> (u64, u64) {
    let pool = &server.pool;
    wait_until(HANG, "the call's jobs fill the queue", || {
        pool.queued() == 2
    })
    .await;
    (pool.stats().done(), pool.stats().skipped())
}

/// After a call went away with the worker held and its jobs queued: lets the worker go once the
/// server has let go of the call, and asserts that no job of the call ran after it went away
/// (only the test's did) and that the two it had queued were skipped.
async fn nothing_ran_after(
    server: &TestServer,
    metrics: &Metrics,
    blocker: Blocker,
    at: (u64, u64),
) {
    wait_until(HANG, "the server lets go of the call", || {
        let_go(metrics, server)
    })
    .await;
    blocker.release().await;
    let ran = batches_run_until_idle(server, at.0).await;
    assert_eq!(
        ran,
        1,
        "{} jobs of the call ran after it went away",
        ran - 1
    );
    // The pool may look idle between taking a job and counting it skipped: wait for the count.
    let stats = server.pool.stats();
    wait_until(HANG, "the call's queued jobs are skipped", || {
        stats.skipped() - at.1 >= 2
    })
    .await;
    assert_eq!(
        stats.skipped() - at.1,
        2,
        "the call's queued jobs were not skipped"
    );
}

/// After a call went away, the next call is served by a pool that runs nothing else.
async fn next_stream_gets_the_whole_pool(server: &TestServer) {
    let (deals, expected) = corpus("random1000");
    let mut client = server.client().await;
    let request = SolveRequest {
        analysis: None,
        deals: deals[..100].iter().map(|d| wire(d, "")).collect(),
        ..Default::default()
    };
    let before = server.pool.stats().done();
    let responses = stream_all(&mut client, vec![request]).await.unwrap();
    for (i, r) in responses[0].results.iter().enumerate() {
        assert!((probability(r) - expected[i]).abs() <= TOLERANCE);
    }
    // One job: a request's deals are spread over the workers (here one) in jobs of at least
    // `Limits::batch` (32) and at most 256 deals.
    assert_eq!(batches_run_until_idle(server, before).await, 1);
}

fn big_request() -> SolveRequest {
    let (deals, _) = corpus("random1000");
    SolveRequest {
        analysis: None,
        deals: deals[..500].iter().map(|d| wire(d, "")).collect(),
        ..Default::default()
    }
}

/// A stream cancelled by its client runs nothing more: with the worker held by the test and the
/// call's jobs queued behind it, none of them runs once the worker is let go. The worker is held
/// before the call starts, so however slowly the test runs, the call cannot have finished first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_stream_frees_the_workers_for_the_next_one() {
    let config = config();
    let metrics = config.metrics.clone();
    let server = TestServer::start(1, config).await;
    let mut client = server.client().await;
    let blocker = Blocker::hold(&server).await;
    // 4,000 deals, 16 jobs for the one worker; then the client waits.
    let (tx, rx) = mpsc::channel::<SolveRequest>(8);
    for _ in 0..8 {
        tx.send(big_request()).await.unwrap();
    }
    let mut request = tonic::Request::new(ReceiverStream::new(rx));
    let cancel = request.cancellation_handle();
    let inbound = client.solve_stream(request).await.unwrap().into_inner();
    let at_cancel = queue_filled(&server).await;
    cancel.cancel();
    nothing_ran_after(&server, &metrics, blocker, at_cancel).await;
    drop((tx, inbound));
    next_stream_gets_the_whole_pool(&server).await;
    server.stop().await;
}

/// A connection cut under a stream (through the relay, the way a network or a dying process
/// would; dropping a tonic client does not close its connection while a request stream is still
/// being sent: grpc/grpc-rust#2079) runs nothing more of the stream, as a cancel does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_frees_the_workers_for_the_next_one() {
    let config = config();
    let metrics = config.metrics.clone();
    let server = TestServer::start(1, config).await;
    let cable = DelayProxy::plain(&server.socket.to_string());
    let mut client = SolverClient::connect(cable.url()).await.unwrap();
    // The worker held first, as for a cancel; then 40 requests of 500 deals.
    let blocker = Blocker::hold(&server).await;
    let _inbound = client
        .solve_stream(tokio_stream::iter(vec![big_request(); 40]))
        .await
        .unwrap()
        .into_inner();
    let at_cut = queue_filled(&server).await;
    cable.sever();
    nothing_ran_after(&server, &metrics, blocker, at_cut).await;
    next_stream_gets_the_whole_pool(&server).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_read_stops_the_server_solving_for_it() {
    let (deals, _) = corpus("random1000");
    let config = ServerConfig {
        limits: Limits {
            max_in_flight: 32,
            ..Limits::default()
        },
        ..config()
    };
    let metrics = config.metrics.clone();
    let server = TestServer::start(2, config).await;
    // A small receive window, as many non-Rust clients have, makes the stall come early; tonic's
    // own 2 MiB window would let the server run ~80,000 one-deal answers ahead.
    let channel = Channel::from_shared(server.addr.clone())
        .unwrap()
        .initial_stream_window_size(Some(65_535))
        .initial_connection_window_size(Some(1 << 20))
        .connect()
        .await
        .unwrap();
    let mut client = SolverClient::new(channel);
    // Sixteen deals a message: answers of under 256 bytes each would trip h2's own guard
    // against floods of small frames in a client that buffers without reading.
    let total = 20_000;
    let per_message = 16;
    let (tx, rx) = mpsc::channel::<SolveRequest>(1);
    let feeder = tokio::spawn(async move {
        for i in (0..total).step_by(per_message) {
            let req = SolveRequest {
                analysis: None,
                deals: (i..i + per_message)
                    .map(|j| wire(&deals[j % deals.len()], ""))
                    .collect(),
                ..Default::default()
            };
            if tx.send(req).await.is_err() {
                break;
            }
        }
    });
    let mut inbound = client
        .solve_stream(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    // Do not read. The server stops solving for us once the call's whole budget is held by
    // results waiting for the transport: nothing of the call is then queued or being solved,
    // and nothing can be until the client reads.
    let (pool, stats) = (&server.pool, server.pool.stats());
    wait_until(
        HANG,
        "the server stops solving for a client that does not read",
        || {
            metric(&metrics.render(pool), "patience_deals_in_flight") == Some(32.0)
                && pool.queued() == 0
                && stats.busy() == 0
        },
    )
    .await;
    let last = stats.done();
    let solved = last as usize * Limits::default().batch.min(per_message);
    assert!(
        solved < total / 2,
        "{solved} of {total} deals solved for a client that read nothing"
    );
    // Then read everything: all of it arrives, in order.
    let mut next = 0u64;
    while let Some(r) = inbound.message().await.unwrap() {
        for result in r.results {
            assert_eq!(result.index, next);
            next += 1;
        }
    }
    feeder.await.unwrap();
    assert_eq!(next, total as u64);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_past_its_deadline_ends_with_deadline_exceeded_and_frees_the_workers() {
    let config = config();
    let metrics = config.metrics.clone();
    let server = TestServer::start(1, config).await;
    let mut client = server.client().await;
    // A client that never stops sending: whatever the machine's speed, the deadline comes before
    // the end. (A fixed 20,000 deals once finished in 275 ms.) tonic's client holds the response
    // headers to the same deadline, so it is long enough for them on a loaded machine.
    let endless = tokio_stream::iter(std::iter::repeat_with(big_request));
    let mut request = tonic::Request::new(endless);
    request.set_timeout(Duration::from_secs(3));
    let mut inbound = client.solve_stream(request).await.unwrap().into_inner();
    let mut answered = 0;
    let status = loop {
        match inbound.message().await {
            Ok(Some(r)) => answered += r.results.len(),
            Ok(None) => panic!("the stream ended cleanly past its deadline"),
            Err(status) => break status,
        }
    };
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    let said = common::assert_reason(&status, "DEADLINE_EXCEEDED");
    assert_eq!(said["resume_index"], answered.to_string());
    assert!(
        status
            .message()
            .contains(&format!("before index {answered}"))
    );
    // Once the server has let go of the call, only the batch being solved may still finish
    // (cut short): what was queued is skipped.
    wait_until(HANG, "the server lets go of the call", || {
        let_go(&metrics, &server)
    })
    .await;
    let done = server.pool.stats().done();
    let ran = batches_run_until_idle(&server, done).await;
    assert!(
        ran <= 1,
        "{ran} batches ran after the server let go of the call"
    );
    next_stream_gets_the_whole_pool(&server).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unary_call_past_its_deadline_is_dropped() {
    let (deals, _) = corpus("random1000");
    let config = config();
    let metrics = config.metrics.clone();
    let server = TestServer::start(1, config).await;
    let mut client = server.client().await;
    let mut request = tonic::Request::new(SolveRequest {
        analysis: None,
        deals: (0..10_000)
            .map(|i| wire(&deals[i % deals.len()], ""))
            .collect(),
        ..Default::default()
    });
    // 30 ms: some 10 of its 40 jobs on one worker, even on a fast machine.
    request.set_timeout(Duration::from_millis(30));
    let status = client.solve(request).await.unwrap_err();
    // tonic's client enforces unary deadlines itself (CANCELLED, resetting the stream); other
    // clients leave it to the server (DEADLINE_EXCEEDED). Either way the work must stop.
    assert!(
        matches!(status.code(), Code::DeadlineExceeded | Code::Cancelled),
        "{status:?}"
    );
    // The server may learn of the reset only after the client has given up (on a loaded machine,
    // while it still reads the 10,000 deals): the pool is idle for good only once it has let go
    // of the call.
    wait_until(HANG, "the server lets go of the call", || {
        let_go(&metrics, &server)
    })
    .await;
    let ran = batches_run_until_idle(&server, 0).await;
    assert!(ran < 30, "{ran} of 40 jobs ran for a call that gave up");
    next_stream_gets_the_whole_pool(&server).await;
    server.stop().await;
}

/// Analysis on the wire: asked per request, absent otherwise; positions in the `/` form; facts
/// checked by hand (the 2/3 position) and against the reference (probabilities of full deals).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analysis_is_answered_only_when_asked_and_positions_work() {
    let (deals, expected) = corpus("random1000");
    let server = TestServer::start(2, config()).await;
    let mut client = server.client().await;
    let text = |id: &str, cards: &str| proto::Deal {
        id: id.into(),
        cards: cards.into(),
    };
    let everything = proto::AnalysisOptions {
        exact: true,
        moves: true,
        line: true,
    };
    let requests = vec![
        SolveRequest {
            analysis: Some(everything),
            deals: vec![
                wire(&deals[1], "full"),
                text("two-thirds", "7S 6S / 6C 6H / 7C 6D / / / / / /"),
                text("too-high", "6S 6C 6D 6H 7S / / / / / / / /"),
            ],
            ..Default::default()
        },
        // The same deal, nothing asked: exactly the plain answer.
        SolveRequest {
            analysis: None,
            deals: vec![wire(&deals[1], "plain")],
            ..Default::default()
        },
        // An empty options message asks for winnable and states only.
        SolveRequest {
            analysis: Some(proto::AnalysisOptions::default()),
            deals: vec![wire(&deals[0], "basic")],
            ..Default::default()
        },
    ];
    let responses = stream_all(&mut client, requests).await.unwrap();
    let results: Vec<&proto::Result> = responses.iter().flat_map(|r| &r.results).collect();
    assert_eq!(results.len(), 5);

    let full = results[0];
    assert!((probability(full) - expected[1]).abs() <= TOLERANCE);
    let a = full.analysis.as_ref().expect("asked for");
    assert!(a.winnable, "deal 2 of random1000 has a probability above 0");
    let (n, d) = a.exact.split_once('/').expect("numerator/denominator");
    assert!(n.bytes().all(|b| b.is_ascii_digit()) && d.bytes().all(|b| b.is_ascii_digit()));
    assert!(a.states > 1);
    assert!(!a.moves.is_empty());
    let average = a.moves.iter().map(|m| m.probability).sum::<f64>() / a.moves.len() as f64;
    assert!((average - expected[1]).abs() <= TOLERANCE);
    assert_eq!(a.line.len(), 18);

    let gadget = results[1];
    assert!((probability(gadget) - 2.0 / 3.0).abs() < 1e-15);
    let a = gadget.analysis.as_ref().expect("asked for");
    assert_eq!(a.exact, "2/3");
    let line: Vec<(u32, u32, &str)> = a
        .line
        .iter()
        .map(|m| (m.pile_a, m.pile_b, m.rank.as_str()))
        .collect();
    assert_eq!(line, [(1, 2, "6"), (2, 3, "6"), (1, 3, "7")]);
    let losing = a
        .moves
        .last()
        .and_then(|m| m.r#move.as_ref())
        .expect("a move");
    assert_eq!((losing.pile_a, losing.pile_b), (1, 3));

    match &results[2].outcome {
        Some(Outcome::Error(e)) => {
            assert_eq!(e.code, ErrorCode::CardCount as i32);
            assert!(e.message.contains("pile 1 has 5 cards"), "{}", e.message);
        }
        other => panic!("expected an error, got {other:?}"),
    }
    assert!(results[2].analysis.is_none());

    assert_eq!(probability(results[3]), probability(full));
    assert!(results[3].analysis.is_none());

    let basic = results[4]
        .analysis
        .as_ref()
        .expect("an empty options message asks");
    // Deal 1 of random1000 is lost (probability 0 in the reference).
    assert_eq!(expected[0], 0.0);
    assert!(!basic.winnable);
    assert!(basic.exact.is_empty() && basic.moves.is_empty() && basic.line.is_empty());
    assert!(basic.states > 0);
    server.stop().await;
}

/// A server in the test's runtime (one worker) and a `SolveStream` call on it from a client with
/// 64 KiB windows that sends eight copies of `deals` (16 a request) and reads nothing until the
/// test does; the client is returned to keep its connection.
async fn unread_call(
    config: ServerConfig,
    deals: &[patience::deal::Deal],
) -> (
    TestServer,
    Metrics,
    SolverClient<Channel>,
    tonic::Streaming<proto::SolveResponse>,
) {
    let metrics = config.metrics.clone();
    let server = TestServer::start(1, config).await;
    let mut client = common::small_window_client(&server.addr).await;
    let responses = client
        .solve_stream(tokio_stream::iter(common::requests(deals, 16, 8)))
        .await
        .unwrap()
        .into_inner();
    (server, metrics, client, responses)
}

/// Waits until a call's whole budget (`max_in_flight` deals) is held by results waiting for the
/// transport: nothing queued, nothing being solved.
async fn budget_held(metrics: &Metrics, server: &TestServer, max_in_flight: usize) {
    wait_until(HANG, "the call's budget fills", || {
        metric(&metrics.render(&server.pool), "patience_deals_in_flight")
            == Some(max_in_flight as f64)
            && server.pool.queued() == 0
            && server.pool.stats().busy() == 0
    })
    .await;
}

/// A drain that runs out of time while a client has stopped reading (with `--stall-timeout`
/// off) ends with the server closing every connection before `run` returns: a library user is
/// not left with a connection still serving, which would end that client's stream as if
/// complete. The drain runs on paused time (a current-thread runtime): its timers fire when the
/// runtime has nothing else to do, at once on the wall clock.
#[tokio::test]
async fn a_drain_out_of_time_closes_every_connection_before_returning() {
    let (deals, _) = corpus("random1000");
    let config = ServerConfig {
        drain_timeout: Duration::from_millis(500),
        // The connection's grace after the abort, shortened: its client does not read.
        close_after_abort: Duration::from_millis(100),
        limits: Limits {
            max_in_flight: 32,
            stall_timeout: None,
            ..Limits::default()
        },
        ..config()
    };
    let (server, metrics, _client, mut responses) = unread_call(config, &deals).await;
    // Until its window is full and the server has stopped reading it: the call's whole budget is
    // held by results waiting for the transport.
    budget_held(&metrics, &server, 32).await;
    // Nothing waits for a worker from here (a solver thread does not see tokio's clock), so the
    // clock may be paused: it moves only to the drain's next timer.
    tokio::time::pause();
    let stopping = tokio::time::Instant::now();
    server.stop().await;
    let drained = stopping.elapsed();
    assert!(
        drained >= Duration::from_millis(500),
        "the server stopped {drained:?} into a 500 ms drain with a call still open"
    );

    let mut results = 0;
    let end = loop {
        match responses.message().await {
            Ok(Some(r)) => results += r.results.len(),
            Ok(None) => break None,
            Err(status) => break Some(status),
        }
    };
    assert!(
        end.is_some(),
        "the stream ended as if complete after {results} results"
    );
    assert!(results < 8 * deals.len());
}

/// A call whose client stopped reading is cut at `--stall-timeout`, not before and not much
/// after (the watch ticks at half the timeout and cuts after two whole ticks without a message
/// taken: between one and one and a half timeouts from the last message taken). On paused time
/// from the start: the clock moves only when the runtime has nothing to do, so the test measures
/// the stall on the clock the watch runs on, and waits no wall time for it.
#[tokio::test(start_paused = true)]
async fn a_stalled_call_is_cut_at_its_stall_timeout_and_not_before() {
    const STALL: Duration = Duration::from_secs(20);
    let (deals, _) = corpus("random1000");
    let config = ServerConfig {
        limits: Limits {
            max_in_flight: 32,
            stall_timeout: Some(STALL),
            ..Limits::default()
        },
        // No keepalive ping while the clock moves on: the call ends by its stall, nothing else.
        keepalive_interval: Duration::from_secs(24 * 3600),
        ..config()
    };
    let (server, metrics, _client, mut responses) = unread_call(config, &deals).await;
    let series = |name: &str| {
        let text = metrics.render(&server.pool);
        let series = format!(
            "{name}{{grpc_type=\"bidi_stream\",grpc_service=\"patience.v1.Solver\",\
             grpc_method=\"SolveStream\"}}"
        );
        (
            metric(&text, &series).unwrap_or(0.0),
            metric(&text, "patience_calls_cut_total{reason=\"stall_timeout\"}").unwrap_or(0.0),
        )
    };
    // The messages the transport took, and when they last changed, until the call is cut.
    let mut last = (0.0, tokio::time::Instant::now());
    wait_until(HANG, "the stalled call is cut", || {
        let (taken, cut) = series("grpc_server_msg_sent_total");
        if taken != last.0 {
            last = (taken, tokio::time::Instant::now());
        }
        cut == 1.0
    })
    .await;
    let stalled = last.1.elapsed();
    assert!(
        (STALL - common::POLL..=STALL * 3 / 2 + common::POLL).contains(&stalled),
        "cut {stalled:?} after the last message taken; the stall timeout is {STALL:?}"
    );
    // Reading again, the client gets what was on its way, then the status naming the index to
    // resume from: exactly the results it got.
    let (results, status) = common::results_until_status(&mut responses).await;
    assert!(results < 8 * deals.len());
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    let said = common::assert_reason(&status, "STALL_TIMEOUT");
    assert_eq!(said["resume_index"], results.to_string());
    server.stop().await;
}
