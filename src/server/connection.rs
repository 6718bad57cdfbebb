//! One client connection, from the accepted socket to its close: the handshake deadline, HTTP/2
//! through hyper, the three ways the server ends a connection gracefully (GOAWAY, then the
//! calls in progress finish): shutdown, idleness and age; and closing it at once, at the end of a
//! drain that ran out of time. (Request messages are held to `--max-message-bytes` by the framing,
//! `frames.rs`, not here.)
//!
//! The server owns this loop rather than leaving it to tonic's `Server` so that it can
//! - close a connection that has not completed its TLS handshake and sent the HTTP/2 preface
//!   within `--handshake-timeout` (tonic waits forever for the preface, and a socket that never
//!   sends anything holds a file descriptor for good);
//! - send GOAWAY to a connection idle for `--max-connection-idle`, and to one older than
//!   `--max-connection-age`, closing it for good `--max-connection-age-grace` later, as grpc-go's
//!   server keepalive parameters do (tonic's age limit skips the GOAWAY when a grace is set);
//! - close a connection that ended gracefully only once the client has stopped sending
//!   ([`linger`]), so that a call's last status is not lost to a TCP reset.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, watch};
use tokio::time::{Instant, Sleep};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tokio_util::either::Either;
use tonic::transport::server::TcpConnectInfo;
use tower::Service;

use crate::metrics::Metrics;
use crate::service::{Lifecycle, Phase};

/// The bytes of a connection, with or without TLS.
type Transport = Either<TcpStream, Box<TlsStream<TcpStream>>>;

/// The client's HTTP/2 connection preface: `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`.
const PREFACE_LEN: usize = 24;

/// How long a gracefully ended connection waits for its client to stop sending before it is
/// closed regardless (nginx's `lingering_time` is the same idea, 30 s there). A client reads the
/// last frames and closes within milliseconds; this only bounds one that never does.
const LINGER: Duration = Duration::from_secs(2);

/// How every connection is served; built once by the server.
pub struct Settings {
    pub handshake_timeout: Duration,
    pub tls: Option<TlsAcceptor>,
    pub max_idle: Option<Duration>,
    pub max_age: Option<Duration>,
    pub age_grace: Option<Duration>,
    pub keepalive: Option<Duration>,
    /// HTTP/2 (gRPC, h2c) and HTTP/1.1 (the plain HTTP API, gRPC-Web), told apart per connection
    /// by its first bytes.
    pub http: auto::Builder<TokioExecutor>,
}

impl Settings {
    /// The HTTP/2 settings tonic's `Server` applies with the same options, so that moving the
    /// connection loop here changed nothing a client can see; except that the limit on streams
    /// the server itself resets for a client's protocol errors stays at h2's 1,024 (tonic turns
    /// it off), which is what stops a "MadeYouReset" flood (CVE-2025-8671). Rapid resets by the
    /// client (CVE-2023-44487) are stopped by h2's own defaults.
    ///
    /// HTTP/1.1 must send its request head within the handshake timeout, as HTTP/2 its preface.
    pub fn http(
        max_concurrent_streams: u32,
        stream_window: u32,
        connection_window: u32,
        keepalive_interval: Duration,
        keepalive_timeout: Duration,
        handshake_timeout: Duration,
    ) -> auto::Builder<TokioExecutor> {
        let mut http = auto::Builder::new(TokioExecutor::new());
        http.http2()
            .timer(TokioTimer::new())
            .initial_connection_window_size(connection_window)
            .initial_stream_window_size(stream_window)
            .max_concurrent_streams(max_concurrent_streams)
            .keep_alive_interval(keepalive_interval)
            .keep_alive_timeout(keepalive_timeout)
            .adaptive_window(false)
            .max_pending_accept_reset_streams(None)
            .max_local_error_reset_streams(Some(1024));
        http.http1()
            .timer(TokioTimer::new())
            .header_read_timeout(handshake_timeout);
        http
    }
}

/// Serves one accepted connection until it closes, or until the server's phase ends it: GOAWAY
/// once it is [`Phase::Draining`], closed at once when it is [`Phase::Closed`]. `permit` (a
/// place under `--max-connections`) is returned when the connection ends.
pub async fn serve<S>(
    stream: TcpStream,
    settings: Arc<Settings>,
    service: S,
    metrics: Metrics,
    lifecycle: Lifecycle,
    _permit: OwnedSemaphorePermit,
) where
    S: Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
            Error = Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    metrics.connections(1);
    let _open = OnDrop(|| metrics.connections(-1));
    let deadline = Instant::now() + settings.handshake_timeout;
    let info = TcpConnectInfo {
        local_addr: stream.local_addr().ok(),
        remote_addr: stream.peer_addr().ok(),
    };
    let _ = stream.set_nodelay(true);
    if let Some(idle) = settings.keepalive {
        let keepalive = socket2::TcpKeepalive::new().with_time(idle);
        let _ = socket2::SockRef::from(&stream).set_tcp_keepalive(&keepalive);
    }
    let transport: Transport = match &settings.tls {
        None => Either::Left(stream),
        Some(acceptor) => {
            let handshake = tokio::time::timeout_at(deadline, acceptor.accept(stream));
            let accepted = tokio::select! {
                accepted = handshake => accepted,
                () = lifecycle.reached(Phase::Closed) => return,
            };
            match accepted {
                Ok(Ok(tls)) => Either::Right(Box::new(tls)),
                Ok(Err(e)) => {
                    super::tls::log_refused(&metrics, info.remote_addr, &e);
                    return;
                }
                Err(_) => {
                    metrics.connection_refused("handshake_timeout");
                    tracing::debug!(peer = ?info.remote_addr, "no TLS handshake within --handshake-timeout");
                    return;
                }
            }
        }
    };
    let timed_out = Arc::new(AtomicBool::new(false));
    // hyper hands the socket back here when it is done with it, for the linger: one descriptor
    // a connection, so that `--max-connections` derived from the open-file limit holds.
    let returned = Arc::new(Mutex::new(None));
    let io = Preface {
        inner: Some(transport),
        seen: 0,
        deadline: Box::pin(tokio::time::sleep_until(deadline)),
        timed_out: timed_out.clone(),
        returned: returned.clone(),
    };
    let (calls, mut calls_seen) = watch::channel(0usize);
    let per_connection = PerConnection {
        inner: service,
        info: info.clone(),
        calls: Arc::new(calls),
    };
    let conn = settings
        .http
        .serve_connection(TokioIo::new(io), TowerToHyperService::new(per_connection));
    // In a block of its own, so that hyper's connection is dropped when it ends, giving the
    // socket back for the linger.
    let ended = async {
        let conn = conn;
        tokio::pin!(conn);

        let idle = idle_for(settings.max_idle, &mut calls_seen);
        tokio::pin!(idle);
        let age = until(settings.max_age.map(|a| jittered(a, &info)));
        tokio::pin!(age);
        let mut closing = false;
        let mut force = Box::pin(until(None));
        loop {
            tokio::select! {
                result = &mut conn => {
                    if timed_out.load(Ordering::Relaxed) {
                        metrics.connection_refused("handshake_timeout");
                        tracing::debug!(peer = ?info.remote_addr, "no HTTP/2 preface within --handshake-timeout");
                        return Ended::Cut;
                    }
                    if let Err(e) = result {
                        tracing::debug!(peer = ?info.remote_addr, "connection ended: {e}");
                    }
                    return Ended::Gracefully;
                }
                () = lifecycle.reached(Phase::Draining), if !closing => {
                    closing = true;
                    conn.as_mut().graceful_shutdown();
                }
                () = &mut idle, if !closing => {
                    tracing::debug!(peer = ?info.remote_addr, "idle for --max-connection-idle: GOAWAY");
                    closing = true;
                    conn.as_mut().graceful_shutdown();
                }
                () = &mut age, if !closing => {
                    tracing::debug!(peer = ?info.remote_addr, "older than --max-connection-age: GOAWAY");
                    closing = true;
                    conn.as_mut().graceful_shutdown();
                    force = Box::pin(until(settings.age_grace.map(|g| Instant::now() + g)));
                }
                () = lifecycle.reached(Phase::Closed) => {
                    tracing::debug!(peer = ?info.remote_addr, "the drain is over: closing");
                    return Ended::Cut;
                }
                () = &mut force => {
                    tracing::debug!(peer = ?info.remote_addr, "--max-connection-age-grace is over: closing");
                    return Ended::Cut;
                }
            }
        }
    }
    .await;
    let socket = returned.lock().map_or(None, |mut s| s.take());
    if let (Ended::Gracefully, Some(socket)) = (ended, socket) {
        tokio::select! {
            () = linger(socket, LINGER) => {}
            () = lifecycle.reached(Phase::Closed) => {}
        }
    }
}

/// How hyper's part of a connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    /// hyper finished the connection: the client closed it, or every call ended after a GOAWAY.
    Gracefully,
    /// The server cut it: the drain ran out of time, or the age grace, or the handshake timeout.
    Cut,
}

/// Closes a socket whose connection hyper has finished without resetting it: sends FIN (hyper
/// may have already), then reads and throws away what the client still sends until it closes
/// its side or `bound` passes. Closing a socket with unread bytes makes the kernel answer with a
/// reset instead, and a client still sending (a stream cut at the drain timeout, whose client
/// was writing its next request) then fails on its write and drops the frames it had not read
/// yet: the call's status with its resume index among them.
async fn linger(mut socket: TcpStream, bound: Duration) {
    let mut sink = [0u8; 8192];
    let _ = tokio::time::timeout(bound, async {
        let _ = socket.shutdown().await;
        while let Ok(1..) = socket.read(&mut sink).await {}
    })
    .await;
}

/// Completes once no call has been open on the connection for `max_idle` (never without one).
async fn idle_for(max_idle: Option<Duration>, calls: &mut watch::Receiver<usize>) {
    let Some(max_idle) = max_idle else {
        return std::future::pending().await;
    };
    loop {
        if calls.wait_for(|&n| n == 0).await.is_err() {
            return std::future::pending().await;
        }
        tokio::select! {
            () = tokio::time::sleep(max_idle) => return,
            // A call started (or the count moved): wait for quiet again.
            _ = calls.changed() => {}
        }
    }
}

/// Sleeps until `at`, or forever without one.
async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// `age` plus or minus up to a tenth, as grpc-go does, so that connections opened together
/// (after a rollout) do not all reconnect at the same moment. The jitter comes from the peer's
/// port, which differs between connections and needs no random source.
fn jittered(age: Duration, info: &TcpConnectInfo) -> Instant {
    let port = info.remote_addr.map_or(0, |a| a.port());
    let spread = f64::from(port % 201) / 1000.0 - 0.1;
    Instant::now() + age.mul_f64(1.0 + spread)
}

/// The service as one connection sees it: each request is told the connection's addresses (what
/// `Request::remote_addr` reads), and it is counted as open on the connection (for idleness)
/// until its response body is done.
#[derive(Clone)]
struct PerConnection<S> {
    inner: S,
    info: TcpConnectInfo,
    calls: Arc<watch::Sender<usize>>,
}

impl<S> Service<http::Request<Incoming>> for PerConnection<S>
where
    S: Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
            Error = Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<Guarded<OpenCall>>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<Incoming>) -> Self::Future {
        self.calls.send_modify(|n| *n += 1);
        let open = OpenCall(self.calls.clone());
        request.extensions_mut().insert(self.info.clone());
        let response = self.inner.call(request.map(tonic::body::Body::new));
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|body| Guarded::new(body, open)))
        })
    }
}

/// Counts one call as open on its connection while alive.
struct OpenCall(Arc<watch::Sender<usize>>);

impl Drop for OpenCall {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// The connection's bytes, failing reads once the handshake deadline has passed before the
/// client's 24-byte HTTP/2 preface arrived. hyper always has a read pending while it waits for
/// the preface, so the deadline's timer wakes it and the connection ends.
///
/// When hyper drops it, the TCP socket (under TLS, if any) goes to `returned`, so that the
/// connection can [`linger`] on the one descriptor it has had all along.
struct Preface {
    /// `None` only once dropped.
    inner: Option<Transport>,
    seen: usize,
    deadline: Pin<Box<Sleep>>,
    timed_out: Arc<AtomicBool>,
    returned: Arc<Mutex<Option<TcpStream>>>,
}

impl Preface {
    fn transport(&mut self) -> io::Result<Pin<&mut Transport>> {
        self.inner
            .as_mut()
            .map(Pin::new)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))
    }
}

impl Drop for Preface {
    fn drop(&mut self) {
        let socket = match self.inner.take() {
            Some(Either::Left(tcp)) => tcp,
            Some(Either::Right(tls)) => tls.into_inner().0,
            None => return,
        };
        if let Ok(mut returned) = self.returned.lock() {
            *returned = Some(socket);
        }
    }
}

impl AsyncRead for Preface {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.seen < PREFACE_LEN && this.deadline.as_mut().poll(cx).is_ready() {
            this.timed_out.store(true, Ordering::Relaxed);
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no HTTP/2 preface within the handshake timeout",
            )));
        }
        let before = buf.filled().len();
        ready!(this.transport()?.poll_read(cx, buf))?;
        this.seen = this.seen.saturating_add(buf.filled().len() - before);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Preface {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().transport()?.poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().transport()?.poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.as_ref().is_some_and(|t| t.is_write_vectored())
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().transport()?.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().transport()?.poll_shutdown(cx)
    }
}

/// Runs a closure when dropped, however the scope ends.
pub struct OnDrop<F: FnMut()>(pub F);

impl<F: FnMut()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}

/// A response body that keeps `G` (the request's count on its connection, its HTTP metrics'
/// record) alive until the transport is done with the body, however the request ends.
#[derive(Debug)]
pub struct Guarded<G> {
    body: tonic::body::Body,
    _guard: G,
}

impl<G> Guarded<G> {
    pub fn new(body: tonic::body::Body, guard: G) -> Guarded<G> {
        Guarded {
            body,
            _guard: guard,
        }
    }
}

impl<G: Unpin> http_body::Body for Guarded<G> {
    type Data = bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<bytes::Bytes>, tonic::Status>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// The server's end of a connection whose client sent bytes the server never read, after the
    /// server's last bytes (`status`) went out; the client read them.
    fn unread_bytes_left() -> (std::net::TcpStream, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        client.write_all(&[0; 4096]).unwrap();
        server.write_all(b"status").unwrap();
        // The client's bytes are in the server's socket, unread.
        server.peek(&mut [0]).unwrap();
        let mut status = [0; 6];
        client.read_exact(&mut status).unwrap();
        assert_eq!(&status, b"status");
        (client, server)
    }

    fn tokio_stream(socket: std::net::TcpStream) -> TcpStream {
        socket.set_nonblocking(true).unwrap();
        TcpStream::from_std(socket).unwrap()
    }

    /// Closed with unread bytes, a socket resets its connection: a client still writing fails
    /// and loses what it had not read. The lingering close ends it with FIN instead: the client
    /// reads the end of the stream, may go on writing, and the linger ends when it closes.
    #[tokio::test]
    async fn a_lingering_close_ends_the_stream_where_a_plain_close_resets_it() {
        let (mut client, server) = unread_bytes_left();
        drop(server);
        let reset = client.read(&mut [0; 16]).unwrap_err();
        assert_eq!(reset.kind(), io::ErrorKind::ConnectionReset, "the control");

        let (mut client, server) = unread_bytes_left();
        let lingering = tokio::spawn(linger(tokio_stream(server), Duration::from_secs(60)));
        let read = tokio::task::spawn_blocking(move || {
            let end = client.read(&mut [0; 16]);
            let written = client.write_all(&[0; 4096]);
            (end.map_err(|e| e.kind()), written.map_err(|e| e.kind()))
        });
        assert_eq!(read.await.unwrap(), (Ok(0), Ok(())));
        tokio::time::timeout(Duration::from_secs(20), lingering)
            .await
            .expect("the linger ends once the client has closed")
            .unwrap();
    }

    /// A client that never stops sending is closed once the bound has passed.
    #[tokio::test(start_paused = true)]
    async fn a_linger_ends_at_its_bound() {
        let (client, server) = unread_bytes_left();
        let started = Instant::now();
        linger(tokio_stream(server), Duration::from_secs(2)).await;
        assert_eq!(started.elapsed(), Duration::from_secs(2));
        drop(client);
    }
}
