//! A relay on loopback in front of an S3 server (moto) that throttles as S3 does under load: the
//! next N connections made to it are each answered `503 Slow Down` with S3's `SlowDown` error
//! body, once their request has been read whole, and closed (`Connection: close`, so a retry
//! makes a new connection); every other connection is relayed to the server byte for byte.
//!
//! Counting connections rather than requests keeps it a plain TCP relay (no HTTP parsing of what
//! it forwards): a throttled request is always on a connection of its own, and a client's first
//! request makes a new connection, so a budget set before a run starts throttles that run's first
//! N requests.

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// S3's error body for throttling (its documented `SlowDown` code and message).
const SLOW_DOWN: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>\
<Message>Please reduce your request rate.</Message><RequestId>0THROTTLED0</RequestId></Error>";

/// The relay: give clients [`Throttle::endpoint`] instead of the server's.
pub struct Throttle {
    /// `http://127.0.0.1:PORT`, for `AWS_ENDPOINT_URL`.
    pub endpoint: String,
    addr: SocketAddr,
    state: Arc<State>,
}

struct State {
    /// Connections still to be throttled.
    budget: AtomicU64,
    throttled: AtomicU64,
    relayed: AtomicU64,
    stop: AtomicBool,
}

impl Throttle {
    /// A relay to `upstream` (`http://HOST:PORT`) on a port of its own, throttling nothing yet.
    pub fn start(upstream: &str) -> Throttle {
        let upstream: SocketAddr = upstream
            .trim_start_matches("http://")
            .parse()
            .expect("an http://HOST:PORT endpoint");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the throttling relay");
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State {
            budget: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
            relayed: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let shared = state.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if shared.stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                let throttle = shared
                    .budget
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |b| b.checked_sub(1))
                    .is_ok();
                let shared = shared.clone();
                std::thread::spawn(move || {
                    if throttle {
                        slow_down(client, &shared.throttled);
                    } else if let Ok(server) = TcpStream::connect(upstream) {
                        shared.relayed.fetch_add(1, Ordering::SeqCst);
                        relay(client, server);
                    }
                });
            }
        });
        Throttle {
            endpoint: format!("http://{addr}"),
            addr,
            state,
        }
    }

    /// Throttles the next `connections` connections (`u64::MAX`: all of them, for good).
    pub fn throttle(&self, connections: u64) {
        self.state.budget.store(connections, Ordering::SeqCst);
    }

    /// Connections answered `503 Slow Down` so far.
    pub fn throttled(&self) -> u64 {
        self.state.throttled.load(Ordering::SeqCst)
    }

    /// Connections relayed to the server so far.
    pub fn relayed(&self) -> u64 {
        self.state.relayed.load(Ordering::SeqCst)
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then sees the stop.
        let _ = TcpStream::connect(self.addr);
    }
}

/// Reads the request on `client` whole (its head, then a body of its Content-Length), counts it
/// in `throttled`, answers `503 Slow Down`, and closes.
fn slow_down(mut client: TcpStream, throttled: &AtomicU64) {
    let _ = client.set_read_timeout(Some(Duration::from_secs(10)));
    let mut request = Vec::new();
    let mut buffer = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = request.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match client.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buffer[..n]),
        }
    };
    let head = String::from_utf8_lossy(&request[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = request.len() - head_end;
    while body < length {
        match client.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => body += n,
        }
    }
    let mut answer = format!(
        "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        SLOW_DOWN.len()
    );
    // A HEAD's answer has no body.
    if !head.starts_with("head ") {
        answer.push_str(SLOW_DOWN);
    }
    // Counted before the client can read the answer, so a test that saw the client's run end
    // reads every throttled connection counted.
    throttled.fetch_add(1, Ordering::SeqCst);
    let _ = client.write_all(answer.as_bytes());
    let _ = client.shutdown(Shutdown::Write);
    // What the client still sends (nothing, or its close) is read, so that closing does not reset
    // the connection under an answer not yet read.
    let _ = std::io::copy(&mut client, &mut std::io::sink());
}

/// Copies each way until both ends are done.
fn relay(client: TcpStream, server: TcpStream) {
    let (Ok(mut client_read), Ok(mut server_write)) = (client.try_clone(), server.try_clone())
    else {
        return;
    };
    let upstream = std::thread::spawn(move || {
        let _ = std::io::copy(&mut client_read, &mut server_write);
        let _ = server_write.shutdown(Shutdown::Write);
    });
    let (mut server_read, mut client_write) = (server, client);
    let _ = std::io::copy(&mut server_read, &mut client_write);
    let _ = client_write.shutdown(Shutdown::Write);
    let _ = upstream.join();
}
