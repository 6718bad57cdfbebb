//! A TCP relay in front of a plaintext daemon that reads the HTTP/2 frames going through it and
//! counts the gRPC messages each way by their compressed flag: what a test needs to see that a
//! foreign client (Python, Node) really sends gzip and gets gzip back, on the wire, without
//! trusting the client's word or the daemon's.

use std::collections::HashMap;
use std::io::{Read as _, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};

/// Messages seen one way: how many had the compressed flag clear (0) or set (1), and their
/// bytes (as their 5-byte headers give them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    pub plain: usize,
    pub compressed: usize,
    pub bytes: usize,
}

/// Messages seen both ways since the relay started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub requests: Flags,
    pub responses: Flags,
}

/// The relay: connect a client to [`Sniffer::addr`] instead of the daemon.
pub struct Sniffer {
    /// `HOST:PORT` to give the client.
    pub addr: String,
    counts: Arc<Mutex<Counts>>,
}

impl Sniffer {
    /// Relays every connection made to a new port on 127.0.0.1 to `upstream`, for the life of
    /// the test process.
    pub fn start(upstream: SocketAddr) -> Sniffer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the relay");
        let addr = listener
            .local_addr()
            .expect("the relay's address")
            .to_string();
        let counts = Arc::new(Mutex::new(Counts::default()));
        let shared = counts.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                relay(&client, &server, true, shared.clone());
                relay(&server, &client, false, shared.clone());
            }
        });
        Sniffer { addr, counts }
    }

    pub fn counts(&self) -> Counts {
        *self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Copies `from` to `to` on a thread of its own, counting the gRPC messages in its DATA frames.
fn relay(from: &TcpStream, to: &TcpStream, requests: bool, counts: Arc<Mutex<Counts>>) {
    let (mut from, mut to) = (
        from.try_clone().expect("clone a socket"),
        to.try_clone().expect("clone a socket"),
    );
    std::thread::spawn(move || {
        // The client's side starts with the connection preface, which is not a frame.
        let mut frames = Frames::new(if requests { PREFACE } else { 0 });
        let mut buf = [0u8; 16 << 10];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            // Counted before it is passed on, so that whoever saw the far end done reads every
            // message counted.
            let flags = frames.feed(&buf[..n]);
            {
                let mut counts = counts.lock().unwrap_or_else(PoisonError::into_inner);
                let side = if requests {
                    &mut counts.requests
                } else {
                    &mut counts.responses
                };
                side.plain += flags.plain;
                side.compressed += flags.compressed;
                side.bytes += flags.bytes;
            }
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}

/// "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
const PREFACE: usize = 24;
const DATA: u8 = 0;
const PADDED: u8 = 0x8;

/// One direction of an HTTP/2 connection, parsed as it comes.
struct Frames {
    /// Bytes of the preface still to skip.
    skip: usize,
    /// Bytes not yet parsed (a frame not whole yet).
    pending: Vec<u8>,
    /// Per stream, where its gRPC messages stand.
    streams: HashMap<u32, Messages>,
}

/// The length-prefixed gRPC messages of one stream: the 5-byte prefix being read, then the body.
#[derive(Default)]
struct Messages {
    prefix: Vec<u8>,
    body_left: usize,
}

impl Frames {
    fn new(skip: usize) -> Frames {
        Frames {
            skip,
            pending: Vec::new(),
            streams: HashMap::new(),
        }
    }

    /// Takes the next bytes of the connection; the messages whose prefix they completed.
    fn feed(&mut self, mut bytes: &[u8]) -> Flags {
        let skipped = self.skip.min(bytes.len());
        self.skip -= skipped;
        bytes = &bytes[skipped..];
        self.pending.extend_from_slice(bytes);
        let mut seen = Flags::default();
        let mut at = 0;
        while let Some(header) = self.pending.get(at..at + 9) {
            let len =
                usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
            let (kind, flags) = (header[3], header[4]);
            let stream =
                u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff;
            let Some(payload) = self.pending.get(at + 9..at + 9 + len) else {
                break;
            };
            if kind == DATA {
                let data = if flags & PADDED != 0 {
                    let pad = payload.first().map_or(0, |&p| usize::from(p));
                    payload.get(1..len.saturating_sub(pad)).unwrap_or(&[])
                } else {
                    payload
                };
                let messages = self.streams.entry(stream).or_default();
                messages.feed(data, &mut seen);
            }
            at += 9 + len;
        }
        self.pending.drain(..at);
        seen
    }
}

impl Messages {
    fn feed(&mut self, mut data: &[u8], seen: &mut Flags) {
        while !data.is_empty() {
            if self.body_left > 0 {
                let take = self.body_left.min(data.len());
                self.body_left -= take;
                data = &data[take..];
                continue;
            }
            let take = (5 - self.prefix.len()).min(data.len());
            self.prefix.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.prefix.len() == 5 {
                match self.prefix[0] {
                    0 => seen.plain += 1,
                    _ => seen.compressed += 1,
                }
                self.body_left = u32::from_be_bytes([
                    self.prefix[1],
                    self.prefix[2],
                    self.prefix[3],
                    self.prefix[4],
                ]) as usize;
                seen.bytes += self.body_left;
                self.prefix.clear();
            }
        }
    }
}
