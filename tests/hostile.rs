//! Faults and hostile input on the wire: each answered with a clear per-deal error or the right
//! gRPC status, never a crash, a hang, or a lost result for the other deals.

use crate::common;

use std::time::Duration;

use common::{TOLERANCE, TestServer, config, corpus, probability, stream_all, wire};
use patience::deal::Deal;
use patience::proto::{self, ErrorCode, SolveRequest, result::Outcome};
use patience::server::ServerConfig;
use patience::service::Limits;
use proptest::prelude::*;
use tonic::Code;

fn deal(id: &str, cards: impl Into<String>) -> proto::Deal {
    proto::Deal {
        id: id.into(),
        cards: cards.into(),
    }
}

fn error_code(r: &proto::Result) -> Option<ErrorCode> {
    match &r.outcome {
        Some(Outcome::Error(e)) => ErrorCode::try_from(e.code).ok(),
        _ => None,
    }
}

/// Proves both workers are alive: two jobs that wait for each other can only finish if two
/// workers run them at the same time.
async fn both_workers_answer(server: &TestServer) {
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let mut tickets = Vec::new();
    for _ in 0..2 {
        let b = barrier.clone();
        tickets.push(
            server
                .pool
                .submit(move |_| b.wait().is_leader())
                .await
                .unwrap(),
        );
    }
    let mut leaders = 0;
    for t in tickets {
        let leader = tokio::time::timeout(Duration::from_secs(10), t)
            .await
            .expect("both workers run at once")
            .unwrap();
        leaders += usize::from(leader);
    }
    assert_eq!(leaders, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_worker_costs_one_internal_result_and_the_pool_stays_whole() {
    let (deals, expected) = corpus("random1000");
    let config = ServerConfig {
        limits: Limits {
            panic_on_id: Some("boom".into()),
            ..Limits::default()
        },
        ..config()
    };
    let server = TestServer::start(2, config).await;
    let mut client = server.client().await;
    let mut request = SolveRequest {
        analysis: None,
        deals: deals[..100].iter().map(|d| wire(d, "")).collect(),
        ..Default::default()
    };
    request.deals[40].id = "boom".into();
    request.deals[77].id = "boom".into();
    let responses = stream_all(&mut client, vec![request.clone(), request])
        .await
        .unwrap();
    let results: Vec<&proto::Result> = responses.iter().flat_map(|r| &r.results).collect();
    assert_eq!(results.len(), 200);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.index, i as u64);
        if i % 100 == 40 || i % 100 == 77 {
            assert_eq!(error_code(r), Some(ErrorCode::Internal), "result {i}");
        } else {
            assert!(
                (probability(r) - expected[i % 100]).abs() <= TOLERANCE,
                "result {i}"
            );
        }
    }
    assert_eq!(server.pool.stats().panicked(), 4);
    both_workers_answer(&server).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_deals_get_their_own_errors_and_the_rest_are_answered() {
    let (deals, expected) = corpus("random1000");
    let sample = deals[0]
        .to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let cards: Vec<&str> = sample.split(' ').collect();
    let config = ServerConfig {
        limits: Limits {
            max_message_bytes: 16 << 20,
            ..Limits::default()
        },
        ..config()
    };
    let server = TestServer::start(2, config).await;
    let mut client = server.client().await;
    let huge = "AS ".repeat(10 << 20 >> 2);
    let hostile = vec![
        ("empty", String::new(), ErrorCode::CardCount),
        ("blank", " \t\r\n ".into(), ErrorCode::CardCount),
        ("35", cards[..35].join(" "), ErrorCode::CardCount),
        ("37", format!("{sample} {}", cards[0]), ErrorCode::CardCount),
        (
            "rank",
            sample.replacen(cards[3], "1S", 1),
            ErrorCode::BadCard,
        ),
        (
            "suit",
            sample.replacen(cards[3], "AX", 1),
            ErrorCode::BadCard,
        ),
        (
            "ten",
            sample.replacen(cards[3], "10S", 1),
            ErrorCode::BadCard,
        ),
        (
            "dup",
            sample.replacen(cards[3], cards[4], 1),
            ErrorCode::DuplicateCard,
        ),
        (
            "utf8",
            sample.replacen(cards[3], "ÄS", 1),
            ErrorCode::BadCard,
        ),
        (
            "nul",
            sample.replacen(cards[3], "A\u{0}", 1),
            ErrorCode::BadCard,
        ),
        ("esc", format!("\u{1b}[2J{sample}"), ErrorCode::BadCard),
        ("emoji", "🂡 ".repeat(36), ErrorCode::BadCard),
        ("huge", huge, ErrorCode::CardCount),
    ];
    let mut request = SolveRequest::default();
    for (id, cards, _) in &hostile {
        request.deals.push(deal(id, cards.clone()));
        request
            .deals
            .push(wire(&deals[request.deals.len()], "good"));
    }
    let response = client.solve(request.clone()).await.unwrap().into_inner();
    let streamed = stream_all(&mut client, vec![request]).await.unwrap();
    assert_eq!(streamed[0], response);
    assert_eq!(response.results.len(), 2 * hostile.len());
    for (n, (id, _, code)) in hostile.iter().enumerate() {
        let bad = &response.results[2 * n];
        assert_eq!(bad.id, *id);
        assert_eq!(error_code(bad), Some(*code), "{id}: {:?}", bad.outcome);
        let Some(Outcome::Error(e)) = &bad.outcome else {
            unreachable!()
        };
        assert!(
            e.message.len() < 300,
            "{id}: a {}-byte message",
            e.message.len()
        );
        assert!(
            !e.message.chars().any(|c| c.is_control()),
            "{id}: {:?}",
            e.message
        );
        let good = &response.results[2 * n + 1];
        assert!(
            (probability(good) - expected[2 * n + 1]).abs() <= TOLERANCE,
            "{id}"
        );
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_empty_deals_is_refused_by_the_per_request_limit() {
    let server = TestServer::start(1, config()).await;
    let mut client = server.client().await;
    let request = SolveRequest {
        analysis: None,
        deals: vec![proto::Deal::default(); 1_000_000],
        ..Default::default()
    };
    let status = client.solve(request.clone()).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(status.message().contains("10000"), "{}", status.message());
    assert_eq!(
        common::assert_reason(&status, "MAX_DEALS_PER_REQUEST")["items"],
        "1000000"
    );
    let status = stream_all(&mut client, vec![request]).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    // And the server is fine afterwards.
    let (deals, expected) = corpus("random1000");
    let ok = client
        .solve(SolveRequest {
            analysis: None,
            deals: vec![wire(&deals[0], "")],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!((probability(&ok.results[0]) - expected[0]).abs() <= TOLERANCE);
    server.stop().await;
}

/// Sends raw bytes as the body of one gRPC message, the way a broken client would.
async fn send_garbage(addr: &str, body: Vec<u8>) -> tonic::Status {
    use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

    #[derive(Default)]
    struct Raw;
    struct RawEncoder;
    struct RawDecoder;
    impl Encoder for RawEncoder {
        type Item = Vec<u8>;
        type Error = tonic::Status;
        fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
            use bytes_like::BufMut;
            dst.put_slice(&item);
            Ok(())
        }
    }
    impl Decoder for RawDecoder {
        type Item = Vec<u8>;
        type Error = tonic::Status;
        fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, tonic::Status> {
            use bytes_like::Buf;
            let mut out = vec![0; src.remaining()];
            src.copy_to_slice(&mut out);
            Ok(Some(out))
        }
    }
    impl Codec for Raw {
        type Encode = Vec<u8>;
        type Decode = Vec<u8>;
        type Encoder = RawEncoder;
        type Decoder = RawDecoder;
        fn encoder(&mut self) -> RawEncoder {
            RawEncoder
        }
        fn decoder(&mut self) -> RawDecoder {
            RawDecoder
        }
    }
    mod bytes_like {
        pub use prost::bytes::{Buf, BufMut};
    }

    let channel = tonic::transport::Endpoint::from_shared(addr.to_string())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let path = http::uri::PathAndQuery::from_static("/patience.v1.Solver/Solve");
    grpc.unary(tonic::Request::new(body), path, Raw)
        .await
        .unwrap_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_bytes_and_silent_connections_do_not_hurt_anyone_else() {
    let server = TestServer::start(1, config()).await;
    // Not a protobuf message at all.
    let status = send_garbage(&server.addr, vec![0xff; 64]).await;
    // The client's mistake, said as such: INVALID_ARGUMENT, not the INTERNAL prost's codec says.
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    common::assert_reason(&status, "MALFORMED_MESSAGE");
    // Connections that open and send nothing, or half a preface.
    let mut silent = Vec::new();
    for i in 0..50 {
        let mut s = tokio::net::TcpStream::connect(server.socket).await.unwrap();
        if i % 2 == 0 {
            use tokio::io::AsyncWriteExt;
            s.write_all(b"PRI * HTTP/2.0\r\n").await.unwrap();
        }
        silent.push(s);
    }
    // Everyone else is served as usual.
    let (deals, expected) = corpus("random1000");
    let mut client = server.client().await;
    let request = SolveRequest {
        analysis: None,
        deals: deals[..50].iter().map(|d| wire(d, "")).collect(),
        ..Default::default()
    };
    let response = tokio::time::timeout(Duration::from_secs(10), client.solve(request))
        .await
        .expect("served despite silent connections")
        .unwrap()
        .into_inner();
    for (i, r) in response.results.iter().enumerate() {
        assert!((probability(r) - expected[i]).abs() <= TOLERANCE);
    }
    drop(silent);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_concurrent_streams_each_get_every_result_in_order() {
    let (deals, expected) = corpus("random1000");
    let server = TestServer::start(2, config()).await;
    let mut streams = Vec::new();
    for s in 0..64 {
        // Every stream its own connection, batch size and starting offset.
        let mut client = server.client().await;
        let batch = [1, 7, 100, 1000][s % 4];
        let offset = s * 13 % deals.len();
        let order: Vec<usize> = (0..deals.len())
            .map(|i| (i + offset) % deals.len())
            .collect();
        let requests: Vec<SolveRequest> = order
            .chunks(batch)
            .map(|chunk| SolveRequest {
                analysis: None,
                deals: chunk
                    .iter()
                    .map(|&i| wire(&deals[i], i.to_string()))
                    .collect(),
                ..Default::default()
            })
            .collect();
        streams.push(tokio::spawn(async move {
            let responses = stream_all(&mut client, requests).await.unwrap();
            (order, responses)
        }));
    }
    for stream in streams {
        let (order, responses) = stream.await.unwrap();
        let results: Vec<&proto::Result> = responses.iter().flat_map(|r| &r.results).collect();
        assert_eq!(results.len(), order.len());
        for (n, (r, &i)) in results.iter().zip(&order).enumerate() {
            assert_eq!(r.index, n as u64);
            assert_eq!(r.id, i.to_string());
            assert!((probability(r) - expected[i]).abs() <= TOLERANCE);
        }
    }
    server.stop().await;
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any string either parses to a valid deal that solves to a number in [0, 1], or is a typed
    /// error; nothing panics.
    #[test]
    fn any_text_is_a_deal_or_a_typed_error(text in any::<String>()) {
        check_text(&text);
    }

    /// The same for text built from card-like tokens, which reaches the deeper checks.
    #[test]
    fn card_like_text_is_a_deal_or_a_typed_error(
        tokens in prop::collection::vec("[2-9TJQKAtjqka1][SCDHscdhX]{0,2}", 30..40),
        seps in prop::collection::vec("[ \t\r\n]{1,2}", 40),
    ) {
        let text: String = tokens.iter().zip(&seps).map(|(t, s)| format!("{t}{s}")).collect();
        check_text(&text);
    }
}

fn check_text(text: &str) {
    match Deal::parse(text) {
        Ok(deal) => {
            let p = patience::solver::Solver::new().solve(&deal).probability;
            assert!((0.0..=1.0).contains(&p), "{p}");
            assert_eq!(Deal::parse(&deal.to_string()), Ok(deal));
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}
