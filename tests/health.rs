//! Health that means it: `patience health` and its exit statuses, the container image's
//! HEALTHCHECK, and the `""` status following the worker pool (liveness).

use std::path::Path;
use std::time::Duration;

use crate::common;

use common::{DEAD, Daemon, TestServer, config, metric, run};
use patience::metrics::Metrics;
use patience::proto::SolveRequest;
use patience::server::ServerConfig;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// How long a test waits for a status it expects; it only catches a hang.
const HANG: Duration = Duration::from_secs(20);

/// `patience health ARGS`: exit code, standard output, standard error.
fn health(args: &[&str]) -> (Option<i32>, String, String) {
    let out = run(&[&["health"], args].concat());
    (
        out.code(),
        out.stdout_str().to_string(),
        out.stderr_str().to_string(),
    )
}

/// Serving: 0 and SERVING for the daemon and for the Solver; 1 and SERVICE_UNKNOWN for a service
/// it does not serve. Draining: its listener is closed, so the probe cannot ask (2), and says
/// it could not connect. Absent: 2 likewise; and a socket that accepts but never answers: 2 once
/// `--timeout` has passed, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_exits_0_when_serving_1_when_not_and_2_when_it_cannot_ask() {
    let mut daemon = Daemon::start(&["--workers", "1", "--drain-timeout", "20s"]);
    let addr = daemon.addr.clone();
    assert_eq!(
        health(&["--addr", &addr]),
        (Some(0), "SERVING\n".into(), String::new())
    );
    let (code, out, _) = health(&["--addr", &addr, "--service", "patience.v1.Solver"]);
    assert_eq!((code, out.as_str()), (Some(0), "SERVING\n"));
    let (code, out, _) = health(&["--addr", &addr, "--service", "patience.v1.Nothing"]);
    assert_eq!((code, out.as_str()), (Some(1), "SERVICE_UNKNOWN\n"));

    // A call left open keeps the daemon draining after SIGTERM.
    let mut client = daemon.client().await;
    let (tx, rx) = mpsc::channel::<SolveRequest>(1);
    let _open = client
        .solve_stream(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    daemon.signal("TERM");
    daemon.line_with("shutting down: draining", HANG);
    // Once the listener is closed, a connection is refused.
    common::wait_until(HANG, "the listener closes", || {
        std::net::TcpStream::connect(daemon.socket).is_err()
    })
    .await;
    let (code, out, err) = health(&["--addr", &addr]);
    assert_eq!((code, out.as_str()), (Some(2), ""), "{err}");
    assert!(err.contains("cannot connect to"), "{err}");
    drop(tx);
    let (_, status) = daemon.stop();
    assert!(status.success());

    let (code, out, err) = health(&["--addr", DEAD]);
    assert_eq!((code, out.as_str()), (Some(2), ""), "{err}");
    assert!(err.contains("cannot connect to"), "{err}");

    // The kernel completes the connection into the backlog; nothing ever speaks HTTP/2 on it.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent = format!("http://{}", silent.local_addr().unwrap());
    let (code, out, err) = health(&["--addr", &silent, "--timeout", "300ms"]);
    assert_eq!((code, out.as_str()), (Some(2), ""), "{err}");
    assert!(err.contains("did not answer within 300ms"), "{err}");
}

/// The Dockerfile's HEALTHCHECK command, run with `sh` as Docker runs it, with this build's
/// `patience` on the PATH and the image's `PATIENCE_ADDR` pointing at a daemon: 0 while it serves,
/// not 0 once it is gone.
#[test]
fn the_dockerfile_healthcheck_asks_the_daemon_on_its_port() {
    let dockerfile =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/Dockerfile"))
            .unwrap();
    // The instruction, its continuation lines joined.
    let instruction = dockerfile
        .split("\nHEALTHCHECK ")
        .nth(1)
        .expect("a HEALTHCHECK instruction")
        .split("\n\n")
        .next()
        .unwrap()
        .replace("\\\n", " ");
    let command = instruction
        .split(" CMD ")
        .nth(1)
        .expect("HEALTHCHECK ... CMD COMMAND")
        .lines()
        .next()
        .unwrap()
        .trim()
        .to_string();
    assert!(!command.starts_with('['), "the shell form: {command}");
    let bin = Path::new(common::exe()).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let probe = |port: u16| {
        std::process::Command::new("sh")
            .args(["-c", &command])
            .env("PATH", &path)
            .env("PATIENCE_ADDR", format!("0.0.0.0:{port}"))
            .output()
            .unwrap()
    };
    let mut daemon = Daemon::start(&["--workers", "1"]);
    let out = probe(daemon.socket.port());
    assert!(out.status.success(), "{command}: {out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "SERVING\n");
    let port = daemon.socket.port();
    daemon.stop();
    let out = probe(port);
    assert!(!out.status.success(), "{command}: {out:?}");
}

/// A worker held stuck (a job that waits on a channel, on the only worker) with work waiting:
/// after `--liveness-timeout`, health for `""` turns NOT_SERVING (`patience health` exits 1,
/// `patience_pool_stalled` is 1) while readiness, `patience.v1.Solver`, stays SERVING; once the
/// worker finishes, `""` is SERVING again. The watch sees the flips as they happen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn liveness_follows_the_pool_not_the_runtime() {
    let metrics = Metrics::new();
    let server = TestServer::start(
        1,
        ServerConfig {
            liveness_timeout: Some(Duration::from_millis(200)),
            metrics: metrics.clone(),
            ..config()
        },
    )
    .await;
    let channel = tonic::transport::Channel::from_shared(server.addr.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health_client = HealthClient::new(channel);
    let mut watch = health_client
        .watch(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    let mut next = async || {
        let message = tokio::time::timeout(HANG, watch.message()).await;
        message
            .expect("a status within the hang guard")
            .unwrap()
            .unwrap()
            .status()
    };
    assert_eq!(next().await, ServingStatus::Serving);

    let (release, held) = std::sync::mpsc::channel::<()>();
    let stuck = server
        .pool
        .submit(move |_| held.recv_timeout(HANG).is_ok())
        .await
        .unwrap();
    assert_eq!(next().await, ServingStatus::NotServing);
    let stalled = metrics.render(&server.pool);
    assert_eq!(
        metric(&stalled, "patience_pool_stalled"),
        Some(1.0),
        "{stalled}"
    );
    let addr = server.addr.clone();
    let probes = tokio::task::spawn_blocking(move || {
        (
            health(&["--addr", &addr]),
            health(&["--addr", &addr, "--service", "patience.v1.Solver"]),
        )
    })
    .await
    .unwrap();
    assert_eq!(probes.0.0, Some(1), "{:?}", probes.0);
    assert_eq!(probes.0.1, "NOT_SERVING\n");
    assert_eq!(probes.1.0, Some(0), "{:?}", probes.1);

    release.send(()).unwrap();
    assert!(stuck.await.unwrap(), "the job was released");
    assert_eq!(next().await, ServingStatus::Serving);
    let moving = metrics.render(&server.pool);
    assert_eq!(
        metric(&moving, "patience_pool_stalled"),
        Some(0.0),
        "{moving}"
    );
    assert_eq!(
        metric(&moving, "patience_limit_seconds{flag=\"liveness_timeout\"}"),
        Some(0.2),
        "{moving}"
    );
    drop(health_client);
    server.stop().await;
}

/// The examples of `docs/operations.md`, "Health and liveness", against a daemon of their own:
/// the address they show becomes that daemon's.
#[test]
fn the_documented_health_examples_print_what_the_docs_say() {
    let daemon = Daemon::start(&["--workers", "1"]);
    common::doc_examples("docs/operations.md", "## Health and liveness")
        .at_least(3)
        .rewrite("127.0.0.1:50051", &daemon.socket.to_string())
        .run();
}
