//! The connection timers on a clock the tests control: `--handshake-timeout`,
//! `--max-connection-idle`, `--max-connection-age` with its grace, and the keepalive ping, against
//! an in-process server on a listener the test bound, with tokio's time paused from the start.
//!
//! The clock moves only when the runtime has nothing left to do, straight to the next timer, so
//! each test reads the exact moment a timer fired and waits no wall time for it. None of these
//! tests solves a deal: a solver thread runs on the wall clock, and the paused clock would jump
//! past the timers while a worker computed. (tests/connections.rs runs the same timers through
//! the real binary, on the wall clock.)

use crate::common;

use std::future::poll_fn;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use common::TestServer;
use h2::client::SendRequest;
use patience::server::ServerConfig;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio::time::Instant;

const SOLVE_STREAM: &str = "/patience.v1.Solver/SolveStream";
/// The client's HTTP/2 connection preface (24 bytes).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// An empty SETTINGS frame: what a client sends right after the preface.
const SETTINGS: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0];
/// How far a timer may fire past its moment: tokio's timer wheel has a resolution of 1 ms.
const TICK: Duration = Duration::from_millis(2);

/// A server with `config` on 127.0.0.1 port 0 (a listener bound here), with no liveness watch
/// (it asks a solver thread, which runs on the wall clock).
async fn server(config: ServerConfig) -> TestServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a listener");
    TestServer::on(
        listener,
        1,
        ServerConfig {
            liveness_timeout: None,
            ..config
        },
    )
}

/// Reads and drops what the server sends until it closes the connection; when that was.
async fn closed(stream: &mut TcpStream) -> Instant {
    let mut buf = [0u8; 4096];
    while let Ok(1..) = stream.read(&mut buf).await {}
    Instant::now()
}

/// Asserts that `at` is `due`, give or take the timer's resolution.
fn assert_at(at: Duration, due: Duration, what: &str) {
    assert!(
        (due..=due + TICK).contains(&at),
        "{what} at {at:?}, due at {due:?}"
    );
}

/// An HTTP/2 connection through the `h2` crate, driven by a task whose end is the connection's.
struct Connection {
    sender: SendRequest<Bytes>,
    driver: JoinHandle<Result<(), h2::Error>>,
    local: SocketAddr,
    socket: SocketAddr,
}

impl Connection {
    async fn open(socket: SocketAddr) -> Connection {
        let tcp = TcpStream::connect(socket).await.expect("connect");
        let local = tcp.local_addr().expect("the local address");
        let (sender, connection) = h2::client::handshake(tcp)
            .await
            .expect("an HTTP/2 handshake");
        Connection {
            sender,
            driver: tokio::spawn(connection),
            local,
            socket,
        }
    }

    /// Opens a `SolveStream` call that sends nothing (the server waits for its requests, no
    /// solver involved) and waits for its response headers.
    async fn hold_stream(&mut self) -> (h2::SendStream<Bytes>, h2::RecvStream) {
        poll_fn(|cx| self.sender.poll_ready(cx))
            .await
            .expect("room for a call");
        let request = http::Request::post(format!("http://{}{SOLVE_STREAM}", self.socket))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .expect("a request");
        let (response, send) = self
            .sender
            .send_request(request, false)
            .expect("send the headers");
        let response = response.await.expect("the response headers");
        assert_eq!(response.status(), 200);
        (send, response.into_body())
    }

    /// Whether a GOAWAY has arrived: h2 refuses new calls from then on.
    fn refused(&mut self) -> Option<h2::Error> {
        let waker = futures::task::noop_waker();
        match self
            .sender
            .poll_ready(&mut std::task::Context::from_waker(&waker))
        {
            std::task::Poll::Ready(Err(e)) => Some(e),
            _ => None,
        }
    }

    /// When the GOAWAY arrived, the clock moving a millisecond at a time (each step lets the
    /// server and the connection's task run to quiet first); `None` if the connection closed
    /// without one, or none came within `limit`.
    async fn goaway_within(&mut self, limit: Duration) -> Option<Instant> {
        let until = Instant::now() + limit;
        while Instant::now() < until {
            // With no call open the server closes the connection right after its GOAWAY, so the
            // connection may have ended in the same step.
            if self.refused().is_some_and(|e| e.is_go_away()) {
                return Some(Instant::now());
            }
            if self.driver.is_finished() {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        None
    }

    /// Waits for the connection to close; when it did.
    async fn closed(&mut self) -> Instant {
        let _ = (&mut self.driver).await;
        Instant::now()
    }
}

/// A TCP connection that sends nothing is closed exactly at `--handshake-timeout`, and one that
/// sent only part of the HTTP/2 preface at the same deadline (it is for the whole preface).
#[tokio::test(start_paused = true)]
async fn silent_and_partial_connections_close_at_the_handshake_timeout() {
    let timeout = Duration::from_secs(10);
    let server = server(ServerConfig {
        handshake_timeout: timeout,
        ..common::config()
    })
    .await;
    let opened = Instant::now();
    let mut silent = TcpStream::connect(server.socket).await.expect("connect");
    let mut partial = TcpStream::connect(server.socket).await.expect("connect");
    partial.write_all(&PREFACE[..10]).await.expect("10 bytes");
    assert_at(
        closed(&mut silent).await - opened,
        timeout,
        "the silent connection closed",
    );
    assert_at(
        closed(&mut partial).await - opened,
        timeout,
        "the connection with 10 bytes of preface closed",
    );
    server.stop().await;
}

/// A connection that sent its preface outlives the handshake deadline: it is neither closed nor
/// sent GOAWAY there, whatever the clock does after.
#[tokio::test(start_paused = true)]
async fn a_connection_past_its_preface_outlives_the_handshake_timeout() {
    let server = server(ServerConfig {
        handshake_timeout: Duration::from_secs(1),
        ..common::config()
    })
    .await;
    let mut connection = Connection::open(server.socket).await;
    assert_eq!(
        connection.goaway_within(Duration::from_secs(5)).await,
        None,
        "a connection that sent its preface had a GOAWAY or closed within 5 handshake timeouts"
    );
    assert!(!connection.driver.is_finished());
    server.stop().await;
}

/// `--max-connection-idle`: GOAWAY exactly that long after the last call on a connection ended,
/// never while a call is open however quiet it is, and the connection then closes.
#[tokio::test(start_paused = true)]
async fn the_idle_goaway_comes_exactly_max_idle_after_the_last_call() {
    let idle = Duration::from_secs(30);
    let server = server(ServerConfig {
        max_connection_idle: Some(idle),
        ..common::config()
    })
    .await;
    let mut connection = Connection::open(server.socket).await;
    let (mut send, mut body) = connection.hold_stream().await;
    // A call open: three idle periods pass without a GOAWAY.
    assert_eq!(connection.goaway_within(3 * idle).await, None);
    // The call ends (no request, so no answer): its status, then the idle period.
    send.send_data(Bytes::new(), true)
        .expect("end the requests");
    while let Some(chunk) = body.data().await {
        chunk.expect("the response body");
    }
    let trailers = body.trailers().await.expect("the trailers");
    assert_eq!(
        trailers.as_ref().and_then(|t| t.get("grpc-status")),
        Some(&http::HeaderValue::from_static("0")),
        "{trailers:?}"
    );
    let ended = Instant::now();
    let goaway = connection
        .goaway_within(2 * idle)
        .await
        .expect("a GOAWAY for --max-connection-idle");
    assert_at(goaway - ended, idle, "the idle GOAWAY");
    // Nothing is open, so the connection ends with the GOAWAY.
    assert_at(connection.closed().await - ended, idle, "the idle close");
    server.stop().await;
}

/// `--max-connection-age`: GOAWAY at the connection's age (jittered by a tenth at most, from the
/// client's port) even with a call open; `--max-connection-age-grace` later the connection is
/// closed, the call still open.
#[tokio::test(start_paused = true)]
async fn an_old_connection_gets_goaway_at_its_age_and_closes_after_the_grace() {
    let age = Duration::from_secs(100);
    let grace = Duration::from_secs(7);
    let server = server(ServerConfig {
        max_connection_age: Some(age),
        max_connection_age_grace: Some(grace),
        ..common::config()
    })
    .await;
    let opened = Instant::now();
    let mut connection = Connection::open(server.socket).await;
    let _held = connection.hold_stream().await;
    // The jitter as the server computes it from the client's port: a tenth of the age at most.
    let spread = f64::from(connection.local.port() % 201) / 1000.0 - 0.1;
    let due = age.mul_f64(1.0 + spread);
    let goaway = connection
        .goaway_within(2 * age)
        .await
        .expect("a GOAWAY for --max-connection-age");
    assert_at(goaway - opened, due, "the age GOAWAY");
    assert_at(
        connection.closed().await - opened,
        due + grace,
        "the close after the grace",
    );
    server.stop().await;
}

/// A client that stops answering pings (it sent its preface and SETTINGS, then went silent,
/// as a peer behind a dead link does) is closed once the keepalive ping has gone unanswered for
/// `--keepalive-timeout`: the ping goes out `--keepalive-interval` after the last bytes read.
#[tokio::test(start_paused = true)]
async fn a_client_that_does_not_answer_pings_is_closed_at_the_keepalive_timeout() {
    let interval = Duration::from_secs(60);
    let timeout = Duration::from_secs(20);
    let server = server(ServerConfig {
        keepalive_interval: interval,
        keepalive_timeout: timeout,
        ..common::config()
    })
    .await;
    let mut tcp = TcpStream::connect(server.socket).await.expect("connect");
    tcp.write_all(PREFACE).await.expect("the preface");
    tcp.write_all(SETTINGS).await.expect("SETTINGS");
    let sent = Instant::now();
    assert_at(
        closed(&mut tcp).await - sent,
        interval + timeout,
        "the close for an unanswered ping",
    );
    server.stop().await;
}
