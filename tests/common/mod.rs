//! Shared by the wire tests: a real server on port 0 in this process, reference data, and
//! small helpers for building and reading requests.
#![allow(dead_code)] // each test binary uses a different part

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use patience::deal::{Deal, DealReader};
use patience::pool::Pool;
use patience::proto::solver_client::SolverClient;
use patience::proto::{self, SolveRequest, SolveResponse, result::Outcome};
use patience::server::{ServerConfig, run_with_pool};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tonic::transport::Channel;
/// The reference answers are printed with 9 decimals: allow their rounding on top of 1e-9.
pub const TOLERANCE: f64 = 1e-9 + 5e-10;

pub fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
        .display()
        .to_string()
}

pub fn corpus(name: &str) -> (Vec<Deal>, Vec<f64>) {
    let text = std::fs::read_to_string(data(&format!("{name}.in"))).expect("corpus file");
    let deals: Vec<Deal> = DealReader::new(text.as_bytes())
        .map(|d| d.expect("corpus deals are valid"))
        .collect();
    let expected: Vec<f64> = std::fs::read_to_string(data(&format!("{name}.out9")))
        .expect("reference answers")
        .lines()
        .map(|l| l.trim().parse().expect("a number"))
        .collect();
    assert_eq!(deals.len(), expected.len());
    (deals, expected)
}

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

/// A server running in this process on a free port, stopped when dropped.
pub struct TestServer {
    pub addr: String,
    pub socket: std::net::SocketAddr,
    pub pool: Arc<Pool>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl TestServer {
    pub async fn start(workers: usize, config: ServerConfig) -> TestServer {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let socket = listener.local_addr().unwrap();
        let addr = format!("http://{socket}");
        let pool = Arc::new(Pool::new(workers, 2 * workers).unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(run_with_pool(listener, pool.clone(), config, async {
            let _ = stopped.await;
        }));
        let task = tokio::spawn(async move {
            task.await.unwrap().unwrap();
        });
        TestServer {
            addr,
            socket,
            pool,
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub async fn client(&self) -> SolverClient<Channel> {
        SolverClient::connect(self.addr.clone()).await.unwrap()
    }

    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(10), task)
                .await
                .expect("server stops")
                .unwrap();
        }
    }
}

pub fn config() -> ServerConfig {
    ServerConfig {
        drain_timeout: Duration::from_secs(5),
        ..ServerConfig::default()
    }
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

pub fn probability(r: &proto::Result) -> f64 {
    match &r.outcome {
        Some(Outcome::Probability(p)) => *p,
        other => panic!("result {} is not a probability: {other:?}", r.index),
    }
}
