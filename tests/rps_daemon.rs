//! The second game on the daemon: `patience.v1.RpsService` on a real server on port 0.
//!
//! Expected probabilities come from `tests/data/rps-*.out15`, printed by `reference-rps` (seed
//! 004), and from hand-worked cases; the in-process engine is compared bit for bit.

use crate::common;

use common::{TestServer, config, rps_answers, rps_cases};
use patience::proto::rps_service_client::RpsServiceClient;
use patience::proto::{
    self, RpsErrorCode, SolveRpsRequest, SolveRpsStreamRequest, SolveRpsStreamResponse,
    rps_result::Outcome,
};
use patience::rps::{Case, RpsSolver};
use patience::server::ServerConfig;
use patience::service::Limits;
use tonic::Code;
use tonic::transport::Channel;

/// The reference prints 15 decimals; the engines agree far closer than this.
const TOLERANCE: f64 = 1e-9;

async fn client(server: &TestServer) -> RpsServiceClient<Channel> {
    RpsServiceClient::connect(server.addr.clone())
        .await
        .unwrap()
}

fn wire(case: &Case, id: impl Into<String>) -> proto::RpsCase {
    proto::RpsCase {
        id: id.into(),
        ..proto::RpsCase::from(case)
    }
}

fn g(rock: f64, paper: f64, scissors: f64) -> proto::Gestures {
    proto::Gestures {
        rock,
        paper,
        scissors,
    }
}

async fn stream_all(
    client: &mut RpsServiceClient<Channel>,
    requests: Vec<SolveRpsStreamRequest>,
) -> Result<Vec<SolveRpsStreamResponse>, tonic::Status> {
    let mut inbound = client
        .solve_rps_stream(tokio_stream::iter(requests))
        .await?
        .into_inner();
    let mut out = Vec::new();
    while let Some(response) = inbound.message().await? {
        out.push(response);
    }
    Ok(out)
}

fn probability(r: &proto::RpsResult) -> f64 {
    match &r.outcome {
        Some(Outcome::Probability(p)) => *p,
        other => panic!("case {} has no probability: {other:?}", r.index),
    }
}

fn error(r: &proto::RpsResult) -> (RpsErrorCode, &str) {
    match &r.outcome {
        Some(Outcome::Error(e)) => (RpsErrorCode::try_from(e.code).unwrap(), &e.message),
        other => panic!("case {} is not an error: {other:?}", r.index),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_cases_come_back_in_order_and_match_the_reference_for_any_batching() {
    let cases = rps_cases("rps-random120.in");
    let expected = rps_answers("rps-random120.out15");
    for workers in [1, 2] {
        let server = TestServer::start(workers, config()).await;
        let mut client = client(&server).await;
        for batch in [1, 7, 120] {
            let requests = cases
                .chunks(batch)
                .enumerate()
                .map(|(c, chunk)| SolveRpsStreamRequest {
                    cases: chunk
                        .iter()
                        .enumerate()
                        .map(|(i, case)| wire(case, format!("case-{}", c * batch + i)))
                        .collect(),
                })
                .collect();
            let responses = stream_all(&mut client, requests).await.unwrap();
            assert_eq!(responses.len(), cases.len().div_ceil(batch));
            let results: Vec<_> = responses.into_iter().flat_map(|r| r.results).collect();
            assert_eq!(results.len(), cases.len());
            for (i, r) in results.iter().enumerate() {
                assert_eq!(r.index, i as u64);
                assert_eq!(r.id, format!("case-{i}"));
                let p = probability(r);
                assert!(
                    (p - expected[i]).abs() <= TOLERANCE,
                    "workers {workers}, batch {batch}, case {i}: {p} vs {}",
                    expected[i]
                );
            }
        }
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_answers_exactly_what_the_engine_answers_in_process() {
    let cases = rps_cases("rps-random120.in");
    let mut solver = RpsSolver::new();
    let in_process: Vec<u64> = cases.iter().map(|c| solver.solve(c).to_bits()).collect();
    let server = TestServer::start(2, config()).await;
    let response = client(&server)
        .await
        .solve_rps(SolveRpsRequest {
            cases: cases.iter().map(|c| wire(c, "")).collect(),
        })
        .await
        .unwrap()
        .into_inner();
    let daemon: Vec<u64> = response
        .results
        .iter()
        .map(|r| probability(r).to_bits())
        .collect();
    assert_eq!(daemon, in_process);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_worked_cases_over_the_wire() {
    let server = TestServer::start(1, config()).await;
    let case = |maze, others: Vec<proto::Gestures>| proto::RpsCase {
        id: String::new(),
        maze: Some(maze),
        others,
    };
    let response = client(&server)
        .await
        .solve_rps(SolveRpsRequest {
            cases: vec![
                // Maze always rock, alone: Fat brother shows scissors and she wins (the seed: nan).
                case(g(1.0, 0.0, 0.0), vec![]),
                // Rock, paper, scissors always shown whatever he does: it never ends, never won.
                case(g(1.0, 0.0, 0.0), vec![g(0.0, 1.0, 0.0), g(0.0, 0.0, 1.0)]),
                // Maze uniform, alone: whatever he shows, she beats him or he beats her, 1/2.
                case(g(1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0), vec![]),
            ],
        })
        .await
        .unwrap()
        .into_inner();
    let got: Vec<f64> = response.results.iter().map(probability).collect();
    assert_eq!(got[0], 1.0);
    assert_eq!(got[1], 0.0);
    assert!((got[2] - 0.5).abs() < 1e-12, "{got:?}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_cases_get_their_codes_and_the_rest_of_the_stream_is_answered() {
    let cases = rps_cases("rps-sample.in");
    let expected = rps_answers("rps-sample.out15");
    let server = TestServer::start(1, config()).await;
    let bad = vec![
        proto::RpsCase {
            id: "no-maze".into(),
            ..Default::default()
        },
        proto::RpsCase {
            id: "sum".into(),
            maze: Some(g(0.5, 0.5, 0.5)),
            others: vec![],
        },
        proto::RpsCase {
            id: "nan".into(),
            maze: Some(g(1.0, 0.0, 0.0)),
            others: vec![g(0.0, 1.0, 0.0), g(f64::NAN, 0.0, 1.0)],
        },
        proto::RpsCase {
            id: "crowd".into(),
            maze: Some(g(1.0, 0.0, 0.0)),
            others: vec![g(1.0, 0.0, 0.0); 16],
        },
    ];
    let requests = vec![
        SolveRpsStreamRequest {
            cases: vec![wire(&cases[0], "first")],
        },
        SolveRpsStreamRequest { cases: bad },
        SolveRpsStreamRequest {
            cases: cases[1..].iter().map(|c| wire(c, "after")).collect(),
        },
    ];
    let results: Vec<_> = stream_all(&mut client(&server).await, requests)
        .await
        .unwrap()
        .into_iter()
        .flat_map(|r| r.results)
        .collect();
    assert_eq!(results.len(), cases.len() + 4);
    assert!((probability(&results[0]) - expected[0]).abs() <= TOLERANCE);
    let codes: Vec<_> = results[1..5].iter().map(error).collect();
    assert_eq!(codes[0].0, RpsErrorCode::MissingMaze);
    assert_eq!(codes[1].0, RpsErrorCode::Sum);
    assert!(codes[1].1.contains("Maze"), "{}", codes[1].1);
    assert_eq!(codes[2].0, RpsErrorCode::NotAProbability);
    assert!(codes[2].1.contains("player 2"), "{}", codes[2].1);
    assert_eq!(codes[3].0, RpsErrorCode::TooManyPlayers);
    for (r, want) in results[5..].iter().zip(&expected[1..]) {
        assert!((probability(r) - want).abs() <= TOLERANCE);
    }
    assert_eq!(results.last().unwrap().index, cases.len() as u64 + 3);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_cases_in_one_request_is_invalid_argument_naming_the_flag() {
    let cases = rps_cases("rps-sample.in");
    let config = ServerConfig {
        limits: Limits {
            max_deals_per_request: 3,
            ..Limits::default()
        },
        ..config()
    };
    let server = TestServer::start(1, config).await;
    let request = || SolveRpsRequest {
        cases: cases[..4].iter().map(|c| wire(c, "")).collect(),
    };
    let status = client(&server)
        .await
        .solve_rps(request())
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().contains("4 cases")
            && status.message().contains("--max-deals-per-request"),
        "{}",
        status.message()
    );
    let streamed = stream_all(
        &mut client(&server).await,
        vec![SolveRpsStreamRequest {
            cases: request().cases,
        }],
    )
    .await
    .unwrap_err();
    assert_eq!(streamed.code(), Code::InvalidArgument);
    let said = common::assert_reason(&streamed, "MAX_DEALS_PER_REQUEST");
    assert_eq!(said["flag"], "--max-deals-per-request");
    let violations = tonic_types::StatusExt::get_error_details(&streamed)
        .bad_request()
        .map(|b| b.field_violations.clone())
        .unwrap_or_default();
    assert_eq!(violations.len(), 1, "{streamed:?}");
    assert_eq!(violations[0].field, "cases");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_case_that_panics_its_worker_costs_that_case_only() {
    let cases = rps_cases("rps-sample.in");
    let expected = rps_answers("rps-sample.out15");
    let config = ServerConfig {
        limits: Limits {
            panic_on_id: Some("boom".into()),
            ..Limits::default()
        },
        ..config()
    };
    let server = TestServer::start(1, config).await;
    let mut sent: Vec<_> = cases.iter().map(|c| wire(c, "")).collect();
    sent[2].id = "boom".into();
    let results = client(&server)
        .await
        .solve_rps(SolveRpsRequest { cases: sent })
        .await
        .unwrap()
        .into_inner()
        .results;
    for (i, r) in results.iter().enumerate() {
        if i == 2 {
            assert_eq!(error(r).0, RpsErrorCode::Internal);
        } else {
            assert!(
                (probability(r) - expected[i]).abs() <= TOLERANCE,
                "case {i}"
            );
        }
    }
    assert_eq!(server.pool.workers(), 1);
    assert_eq!(server.pool.stats().panicked(), 1);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_cases_under_the_rps_game() {
    let metrics = patience::metrics::Metrics::new();
    let config = ServerConfig {
        metrics: metrics.clone(),
        ..config()
    };
    let cases = rps_cases("rps-sample.in");
    let server = TestServer::start(1, config).await;
    let mut sent: Vec<_> = cases.iter().map(|c| wire(c, "")).collect();
    sent.push(proto::RpsCase::default());
    client(&server)
        .await
        .solve_rps(SolveRpsRequest { cases: sent })
        .await
        .unwrap();
    let text = metrics.render(&server.pool);
    let get = |name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok()))
            .unwrap_or_else(|| panic!("no {name} in\n{text}"))
    };
    let solved = cases.len() as f64;
    assert_eq!(
        get("patience_answers_total{game=\"rps\",outcome=\"solved\"}"),
        solved
    );
    assert_eq!(
        get("patience_answers_total{game=\"rps\",outcome=\"missing_maze\"}"),
        1.0
    );
    assert_eq!(get("patience_solve_seconds_count{game=\"rps\"}"), solved);
    assert!(
        !text.contains("patience_deals_total{outcome=\"solved\"} 6"),
        "cases counted as deals:\n{text}"
    );
    server.stop().await;
}
