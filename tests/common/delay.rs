//! A TCP relay on loopback that makes a daemon look far away or cut off: every byte is held for
//! a fixed delay each way (a 100 ms delay is a 200 ms round trip), and in a partition nothing
//! goes through at all while the sockets stay open, as when a link or a host goes silent without
//! closing anything. The kernel here has no netem; this is what the tests and the cluster bench
//! use instead.
//!
//! It is also the tests' one relay for what a network does to a connection beyond delay: it
//! severs every connection at once ([`DelayProxy::sever`]), as a cable pulled or a process dying
//! would, and its address outlives the daemon behind it ([`DelayProxy::retarget`]), so that a test
//! restarts a daemon "on the same address" without releasing a port and binding it again (which
//! another test's daemon could take in between).
//!
//! Each connection made to the relay gets its own connection to the upstream (the one the relay
//! points at when the connection is made), and two threads per direction: one reads and stamps
//! what it read with when it may go, the other writes it out then. Bytes read during a partition
//! are dropped, like packets into a black hole; a connection made during one is accepted and
//! held, its bytes dropped too. A connection made while nothing listens upstream is closed at
//! once, as a refused one would be.

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
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
    /// Where connections made from now on go.
    upstream: Mutex<SocketAddr>,
    /// Both sockets of every connection relayed so far, for [`DelayProxy::sever`].
    relayed: Mutex<Vec<TcpStream>>,
    /// Connections accepted so far.
    accepted: AtomicUsize,
}

impl DelayProxy {
    /// Relays every connection made to a new port on 127.0.0.1 to `upstream`, holding every
    /// byte for `one_way` each way, for the life of the test process.
    pub fn start(upstream: &str, one_way: Duration) -> DelayProxy {
        DelayProxy::relay(upstream_addr(upstream), one_way)
    }

    /// A relay with no delay to `upstream` (`IP:PORT`), for a test that cuts connections or
    /// restarts the daemon behind a fixed address.
    pub fn plain(upstream: &str) -> DelayProxy {
        DelayProxy::start(upstream, Duration::ZERO)
    }

    fn relay(upstream: SocketAddr, one_way: Duration) -> DelayProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the delay proxy");
        let addr = listener
            .local_addr()
            .expect("the delay proxy's address")
            .to_string();
        let state = Arc::new(State {
            delay_us: AtomicU64::new(one_way.as_micros() as u64),
            partitioned: AtomicBool::new(false),
            upstream: Mutex::new(upstream),
            relayed: Mutex::new(Vec::new()),
            accepted: AtomicUsize::new(0),
        });
        let shared = state.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                shared.accepted.fetch_add(1, Ordering::SeqCst);
                let _ = client.set_nodelay(true);
                let upstream = *shared
                    .upstream
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                let Ok(server) = TcpStream::connect(upstream) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                let _ = server.set_nodelay(true);
                if let (Ok(a), Ok(b)) = (client.try_clone(), server.try_clone()) {
                    shared
                        .relayed
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .extend([a, b]);
                }
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

    /// Connections made from now on go to `upstream` (`IP:PORT`), such as a daemon restarted on
    /// a port of its own; those made before stay with the old one.
    pub fn retarget(&self, upstream: &str) {
        *self
            .state
            .upstream
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = upstream_addr(upstream);
    }

    /// Closes both sides of every connection relayed so far, as a cable pulled or a process
    /// dying would: each end sees its peer close. New connections still go through.
    pub fn sever(&self) {
        let relayed = std::mem::take(
            &mut *self
                .state
                .relayed
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for socket in relayed {
            let _ = socket.shutdown(Shutdown::Both);
        }
    }

    /// Connections made to the relay so far (relayed or, with nothing upstream, closed).
    pub fn accepted(&self) -> usize {
        self.state.accepted.load(Ordering::SeqCst)
    }

    /// A new one-way delay, for bytes read from now on.
    pub fn set_delay(&self, one_way: Duration) {
        self.state
            .delay_us
            .store(one_way.as_micros() as u64, Ordering::SeqCst);
    }
}

fn upstream_addr(upstream: &str) -> SocketAddr {
    upstream.parse().expect("an upstream IP:PORT")
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
