//! A TCP relay on loopback that makes a daemon look far away or cut off: every byte is held for
//! a fixed delay each way (a 100 ms delay is a 200 ms round trip), and in a partition nothing
//! goes through at all while the sockets stay open, as when a link or a host goes silent without
//! closing anything. The kernel here has no netem; this is what the tests and the cluster bench
//! use instead.
//!
//! Each connection made to the relay gets its own connection to the upstream, and two threads
//! per direction: one reads and stamps what it read with when it may go, the other writes it
//! out then. Bytes read during a partition are dropped, like packets into a black hole; a
//! connection made during one is accepted and held, its bytes dropped too.

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The relay: give clients [`DelayProxy::addr`] instead of the daemon's.
pub struct DelayProxy {
    /// `HOST:PORT` to give the client.
    pub addr: String,
    /// What the relay shares with its threads.
    state: Arc<State>,
}

struct State {
    /// One-way delay, in microseconds.
    delay_us: AtomicU64,
    partitioned: AtomicBool,
}

impl DelayProxy {
    /// Relays every connection made to a new port on 127.0.0.1 to `upstream`, holding every
    /// byte for `one_way` each way, for the life of the test process.
    pub fn start(upstream: &str, one_way: Duration) -> DelayProxy {
        let upstream: SocketAddr = upstream.parse().expect("an upstream IP:PORT");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the delay proxy");
        let addr = listener
            .local_addr()
            .expect("the delay proxy's address")
            .to_string();
        let state = Arc::new(State {
            delay_us: AtomicU64::new(one_way.as_micros() as u64),
            partitioned: AtomicBool::new(false),
        });
        let shared = state.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let _ = client.set_nodelay(true);
                let Ok(server) = TcpStream::connect(upstream) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                let _ = server.set_nodelay(true);
                pump(&client, &server, shared.clone());
                pump(&server, &client, shared.clone());
            }
        });
        DelayProxy { addr, state }
    }

    /// `http://HOST:PORT`, as `--addr` takes it.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Cuts every connection through the relay off (`true`), or heals it (`false`). While cut
    /// off, what is sent is lost, and nothing is closed.
    pub fn partition(&self, cut: bool) {
        self.state.partitioned.store(cut, Ordering::SeqCst);
    }

    /// A new one-way delay, for bytes read from now on.
    pub fn set_delay(&self, one_way: Duration) {
        self.state
            .delay_us
            .store(one_way.as_micros() as u64, Ordering::SeqCst);
    }
}

/// Copies `from` to `to`, each read held for the delay, on two threads of its own.
fn pump(from: &TcpStream, to: &TcpStream, state: Arc<State>) {
    let (mut from, mut to) = (
        from.try_clone().expect("clone a socket"),
        to.try_clone().expect("clone a socket"),
    );
    let (queue, held) = mpsc::channel::<(Instant, Vec<u8>)>();
    let reader_state = state.clone();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if reader_state.partitioned.load(Ordering::SeqCst) {
                continue;
            }
            let delay = Duration::from_micros(reader_state.delay_us.load(Ordering::SeqCst));
            if queue
                .send((Instant::now() + delay, buf[..n].to_vec()))
                .is_err()
            {
                break;
            }
        }
        // Dropping the queue tells the writer: it closes its side once the rest has gone.
    });
    std::thread::spawn(move || {
        while let Ok((due, bytes)) = held.recv() {
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            if state.partitioned.load(Ordering::SeqCst) {
                continue;
            }
            if to.write_all(&bytes).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}
