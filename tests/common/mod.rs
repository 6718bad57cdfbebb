//! Shared by the wire tests: a real server on port 0 in this process, reference data, and
//! small helpers for building and reading requests.
#![allow(dead_code, reason = "each test binary uses a different part")]

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

/// The `patience` binary under test.
pub fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_patience")
}

/// A `patience serve` process on a free port, killed if the test ends early. Its log is read on
/// a thread for its whole life, so it never blocks on a full pipe.
pub struct Daemon {
    pub child: std::process::Child,
    /// `http://ADDR`, from the "listening on" line.
    pub addr: String,
    pub socket: std::net::SocketAddr,
    /// The "listening on" line, which carries the configuration.
    pub start_line: String,
    log: std::sync::mpsc::Receiver<String>,
}

impl Daemon {
    /// `patience serve --addr 127.0.0.1:0 ARGS` with `RUST_LOG=info` and no `PATIENCE_*`
    /// variables from the test's environment.
    pub fn start(args: &[&str]) -> Daemon {
        Daemon::start_with(args, &[("RUST_LOG", "info")], None)
    }

    /// Like [`Daemon::start`], with these environment variables, and with the open-file limit
    /// (soft and hard) lowered to `open_files` first when given (through `sh -c 'ulimit -n'`).
    pub fn start_with(args: &[&str], env: &[(&str, &str)], open_files: Option<u64>) -> Daemon {
        use std::io::BufRead as _;
        let mut cmd = match open_files {
            None => {
                let mut cmd = std::process::Command::new(exe());
                cmd.args(["serve", "--addr", "127.0.0.1:0"]).args(args);
                cmd
            }
            Some(limit) => {
                let mut cmd = std::process::Command::new("sh");
                cmd.arg("-c")
                    .arg(format!(
                        "ulimit -n {limit} && exec \"$0\" serve --addr 127.0.0.1:0 \"$@\""
                    ))
                    .arg(exe())
                    .args(args);
                cmd
            }
        };
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("PATIENCE_") {
                cmd.env_remove(key);
            }
        }
        cmd.envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().expect("start patience serve");
        let stderr = child.stderr.take().expect("a piped stderr");
        let (tx, log) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let mut daemon = Daemon {
            child,
            addr: String::new(),
            socket: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            start_line: String::new(),
            log,
        };
        let start_line = daemon.line_with("listening on ", Duration::from_secs(20));
        let bound = start_line
            .split("listening on ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .expect("an address after \"listening on\"");
        daemon.socket = bound.parse().expect("a socket address");
        daemon.addr = format!("http://{bound}");
        daemon.start_line = start_line;
        daemon
    }

    /// The next line of the log that contains `needle`; panics after `limit`.
    pub fn line_with(&self, needle: &str, limit: Duration) -> String {
        let deadline = std::time::Instant::now() + limit;
        loop {
            let line = self
                .log
                .recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
                .unwrap_or_else(|_| panic!("no log line with {needle:?} within {limit:?}"));
            if line.contains(needle) {
                return line;
            }
        }
    }

    /// The log lines that arrived so far and were not read yet.
    pub fn log_so_far(&self) -> Vec<String> {
        self.log.try_iter().collect()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub async fn client(&self) -> SolverClient<Channel> {
        SolverClient::connect(self.addr.clone())
            .await
            .expect("connect to the daemon")
    }

    pub fn signal(&self, name: &str) {
        let status = std::process::Command::new("kill")
            .args([&format!("-{name}"), &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} failed");
    }

    /// Waits for the process to exit; its exit code and the rest of its log.
    pub fn wait(mut self, limit: Duration) -> (Option<i32>, Vec<String>) {
        let deadline = std::time::Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the daemon") {
                // The log thread may still be reading the last lines.
                std::thread::sleep(Duration::from_millis(50));
                return (status.code(), self.log.try_iter().collect());
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the daemon did not exit within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A `kB` field of `/proc/PID/status` (`VmRSS`, `VmHWM`), in KiB.
    pub fn status_kib(&self, field: &str) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .ok()
            .and_then(|s| {
                s.lines().find_map(|l| {
                    l.strip_prefix(field)
                        .and_then(|v| v.strip_prefix(':'))
                        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                })
            })
            .unwrap_or(0)
    }

    /// User plus system CPU seconds the daemon has used, from `/proc/PID/stat`.
    pub fn cpu_seconds(&self) -> f64 {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())) else {
            return 0.0;
        };
        let rest = &stat[stat.rfind(')').map_or(0, |p| p + 1)..];
        let ticks: f64 = rest
            .split_whitespace()
            .skip(11)
            .take(2)
            .map(|f| f.parse::<f64>().unwrap_or(0.0))
            .sum();
        // USER_HZ is 100 on every Linux this runs on.
        ticks / 100.0
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
