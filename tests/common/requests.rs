//! Building `SolveRequest`s and reading what comes back.

use patience::deal::Deal;
use patience::proto::solver_client::SolverClient;
use patience::proto::{self, SolveRequest, SolveResponse, result::Outcome};
use tonic::transport::Channel;

/// Asserts that `status` carries the daemon's details with this reason (`patience::proto::reason`),
/// and returns their metadata (`flag`, `limit`, `resume_index`...).
pub fn assert_reason(
    status: &tonic::Status,
    reason: &str,
) -> std::collections::HashMap<String, String> {
    let said =
        proto::reason::Said::of(status).unwrap_or_else(|| panic!("no details in {status:?}"));
    assert_eq!(said.reason, reason, "{status:?}");
    said.metadata
}

/// A deal as the wire carries it: its cards on one line, with this id.
pub fn wire(deal: &Deal, id: impl Into<String>) -> proto::Deal {
    proto::Deal {
        id: id.into(),
        cards: deal
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// One request for `deals`, their ids numbered from `first_id`.
pub fn request(deals: &[Deal], first_id: usize) -> SolveRequest {
    SolveRequest {
        analysis: None,
        deals: deals
            .iter()
            .enumerate()
            .map(|(i, d)| wire(d, (first_id + i).to_string()))
            .collect(),
        ..Default::default()
    }
}

/// `copies` rounds of `deals`, `per_request` deals a request (the last may have fewer), without
/// ids.
pub fn requests(deals: &[Deal], per_request: usize, copies: usize) -> Vec<SolveRequest> {
    let all: Vec<&Deal> = (0..copies).flat_map(|_| deals.iter()).collect();
    all.chunks(per_request)
        .map(|chunk| SolveRequest {
            analysis: None,
            deals: chunk.iter().map(|d| wire(d, "")).collect(),
            ..Default::default()
        })
        .collect()
}

/// Sends `requests` on one stream and collects every response.
pub async fn stream_all(
    client: &mut SolverClient<Channel>,
    requests: Vec<SolveRequest>,
) -> Result<Vec<SolveResponse>, tonic::Status> {
    let outbound = tokio_stream::iter(requests);
    let mut inbound = client.solve_stream(outbound).await?.into_inner();
    let mut responses = Vec::new();
    while let Some(r) = inbound.message().await? {
        responses.push(r);
    }
    Ok(responses)
}

/// Reads a stream that must end with an error: the results that came before it, and the status.
/// Panics if the stream ends as if complete.
pub async fn results_until_status(
    responses: &mut tonic::Streaming<SolveResponse>,
) -> (usize, tonic::Status) {
    let mut results = 0;
    loop {
        match responses.message().await {
            Ok(Some(r)) => results += r.results.len(),
            Ok(None) => panic!("the stream ended as if complete after {results} results"),
            Err(status) => return (results, status),
        }
    }
}

/// The probability of a result; panics if it is anything else.
pub fn probability(r: &proto::Result) -> f64 {
    match &r.outcome {
        Some(Outcome::Probability(p)) => *p,
        other => panic!("result {} is not a probability: {other:?}", r.index),
    }
}

/// A client of `addr` (`http://...`) with HTTP/2's default 64 KiB windows, as most gRPC clients
/// outside tonic have (tonic's own are far larger): one that does not read is held back after
/// some 64 KiB of results, as the stall tests need.
pub async fn small_window_client(addr: &str) -> SolverClient<Channel> {
    let channel = tonic::transport::Endpoint::from_shared(addr.to_string())
        .expect("an http:// address")
        .initial_stream_window_size(65_535)
        .initial_connection_window_size(65_535)
        .connect()
        .await
        .expect("connect");
    SolverClient::new(channel)
}

/// `curl -s`'s status code, headers (lowercased) and body for `args`: an HTTP route called as
/// users call it.
pub fn curl(args: &[&str]) -> (String, String, String) {
    let out = std::process::Command::new("curl")
        .args(["-s", "-D", "-", "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let (rest, code) = text.rsplit_once('\n').unwrap();
    let (headers, body) = rest.split_once("\r\n\r\n").unwrap_or((rest, ""));
    (code.to_string(), headers.to_lowercase(), body.to_string())
}
