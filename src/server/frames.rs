//! The gRPC messages on the wire, both ways: each message is framed by a 5-byte header, a
//! compression flag and a big-endian length. This is the one place that reads that framing on the
//! server; the call's life (`call.rs`) puts these bodies around each call's request and response.
//!
//! [`RequestFrames`]: a message over `--max-message-bytes` is refused from its header, before any
//! of it is buffered; a compressed one (gzip or zstd, as its `grpc-encoding` says) is decompressed
//! here, its output held to the same limit, and handed on uncompressed; a bad flag is a malformed
//! message. Every refusal is the service's own status with its details (`crate::proto::reason`), which
//! tonic hands on to the call unchanged. (tonic has its own limit and decompression, but says
//! `OUT_OF_RANGE` or `UNIMPLEMENTED` in words of its own that name no flag.) Each message is
//! counted as it completes.
//!
//! [`ResponseFrames`]: the messages sent, counted as they pass; when the client accepts gzip or
//! zstd (`grpc-accept-encoding`) and response compression is on, each message of at least
//! `--compress-min-bytes` is compressed (zstd preferred); smaller ones go as they are, which gRPC
//! allows message by message. tonic's own response compression has no such minimum, and a
//! one-deal answer compressed grows.

use std::collections::VecDeque;
use std::io::Read as _;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use http::HeaderValue;
use tonic::body::Body;

use crate::proto::reason::Reason;

/// The length of a gRPC message's header.
const HEADER_LEN: usize = 5;

/// A message's header: its compression flag and the length of its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Header {
    flag: u8,
    len: usize,
}

impl Header {
    /// The one reading of a header's bytes, whichever way the message goes.
    fn read([flag, a, b, c, d]: [u8; HEADER_LEN]) -> Header {
        Header {
            flag,
            len: u32::from_be_bytes([a, b, c, d]) as usize,
        }
    }

    /// The header of the message at the front of `bytes`, when all of it has come.
    fn at(bytes: &[u8]) -> Option<Header> {
        let bytes: [u8; HEADER_LEN] = bytes.get(..HEADER_LEN)?.try_into().ok()?;
        Some(Header::read(bytes))
    }
}

/// A header gathered from bytes that come split anywhere, as a body's chunks do.
#[derive(Debug, Default)]
struct Gather {
    bytes: [u8; HEADER_LEN],
    have: usize,
}

impl Gather {
    /// Takes what the header still lacks from the front of `data`; the header once it is whole
    /// (and a new one begins).
    fn take(&mut self, data: &mut &[u8]) -> Option<(Header, [u8; HEADER_LEN])> {
        let n = (HEADER_LEN - self.have).min(data.len());
        self.bytes[self.have..self.have + n].copy_from_slice(&data[..n]);
        self.have += n;
        *data = &data[n..];
        if self.have < HEADER_LEN {
            return None;
        }
        self.have = 0;
        Some((Header::read(self.bytes), self.bytes))
    }
}

/// What a client may compress requests with, as the server says it in `grpc-accept-encoding`.
const ACCEPTED: &str = "zstd,gzip";

/// How messages are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Gzip,
    Zstd,
}

impl Encoding {
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Gzip => "gzip",
            Encoding::Zstd => "zstd",
        }
    }

    /// A request's `grpc-encoding`: `None` for none or `identity`, `Err` for one not taken.
    pub fn of_request(value: Option<&HeaderValue>) -> Result<Option<Encoding>, Reason> {
        let name = value.map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string());
        match name.as_deref() {
            None | Some("identity") => Ok(None),
            Some("gzip") => Ok(Some(Encoding::Gzip)),
            Some("zstd") => Ok(Some(Encoding::Zstd)),
            Some(other) => Err(Reason::UnsupportedEncoding {
                encoding: other.to_string(),
            }),
        }
    }

    /// The encoding to answer with, from a client's `grpc-accept-encoding`: zstd if it takes
    /// it (smaller and cheaper than gzip on these messages), else gzip, else none.
    pub fn for_response(accept: Option<&HeaderValue>) -> Option<Encoding> {
        let accept = accept?.to_str().ok()?;
        let takes = |name: &str| accept.split(',').any(|e| e.trim() == name);
        if takes("zstd") {
            Some(Encoding::Zstd)
        } else if takes("gzip") {
            Some(Encoding::Gzip)
        } else {
            None
        }
    }

    /// `data` decompressed, at most `limit` bytes of it.
    fn decompress(self, data: &[u8], limit: usize) -> Result<Vec<u8>, Reason> {
        let malformed = |e: std::io::Error| Reason::MalformedMessage {
            detail: format!("it does not decompress as {}: {e}", self.name()),
        };
        let mut out = Vec::new();
        let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
        match self {
            Encoding::Gzip => flate2::read::GzDecoder::new(data)
                .take(cap)
                .read_to_end(&mut out)
                .map_err(malformed)?,
            Encoding::Zstd => zstd::stream::read::Decoder::new(data)
                .map_err(malformed)?
                .take(cap)
                .read_to_end(&mut out)
                .map_err(malformed)?,
        };
        if out.len() > limit {
            return Err(Reason::MaxMessageBytes { limit });
        }
        Ok(out)
    }

    /// `data` compressed, at the fast end of each method: these answers are small and many.
    fn compress(self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        match self {
            Encoding::Gzip => {
                let mut encoder =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                std::io::Write::write_all(&mut encoder, data)?;
                encoder.finish()
            }
            Encoding::Zstd => zstd::stream::encode_all(data, 1),
        }
    }
}

/// Tells the client which request encodings the server takes.
pub fn advertise(response: &mut http::Response<Body>) {
    response
        .headers_mut()
        .insert("grpc-accept-encoding", HeaderValue::from_static(ACCEPTED));
}

/// A request's messages as they arrive: checked, decompressed when they are compressed, and
/// counted as they complete.
#[derive(Debug)]
pub struct Incoming {
    limit: usize,
    encoding: Option<Encoding>,
    /// The current message's header, as far as it has come.
    header: Gather,
    /// The current message's body: bytes still to come, and (when compressed) those come so far.
    remaining: usize,
    compressed: Option<BytesMut>,
    /// What is ready to hand on.
    out: VecDeque<Bytes>,
    /// Messages completed since [`Incoming::take`] last said.
    completed: u64,
}

impl Incoming {
    pub fn new(limit: usize, encoding: Option<Encoding>) -> Incoming {
        Incoming {
            limit,
            encoding,
            header: Gather::default(),
            remaining: 0,
            compressed: None,
            out: VecDeque::new(),
            completed: 0,
        }
    }

    /// Follows the framing through `data`, queueing what to hand on; the messages it completed.
    pub fn take(&mut self, mut data: Bytes) -> Result<u64, Reason> {
        while !data.is_empty() {
            if self.remaining > 0 {
                let n = self.remaining.min(data.len());
                let piece = data.split_to(n);
                self.remaining -= n;
                match &mut self.compressed {
                    Some(buffer) => buffer.put(piece),
                    None => self.out.push_back(piece),
                }
                if self.remaining == 0 {
                    self.finish_message()?;
                }
                continue;
            }
            let mut rest = &data[..];
            let header = self.header.take(&mut rest);
            data.advance(data.len() - rest.len());
            if let Some((header, bytes)) = header {
                self.start_message(header, bytes)?;
            }
        }
        Ok(std::mem::take(&mut self.completed))
    }

    /// The next piece to hand on, if any is ready.
    pub fn next(&mut self) -> Option<Bytes> {
        self.out.pop_front()
    }

    /// Whether nothing is held to hand on.
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    /// After a refusal: nothing more is handed on.
    pub fn clear(&mut self) {
        self.out.clear();
    }

    /// A message's header is complete: `bytes`, as it came.
    fn start_message(&mut self, header: Header, bytes: [u8; HEADER_LEN]) -> Result<(), Reason> {
        let Header { flag, len } = header;
        // The flag first: a body that is not gRPC at all has nonsense for a length too.
        if flag > 1 {
            return Err(Reason::MalformedMessage {
                detail: format!(
                    "a message's compressed flag is {flag}, not 0 or 1 (is the body gRPC, with \
                     its 5-byte message headers?)"
                ),
            });
        }
        if len > self.limit {
            return Err(Reason::MaxMessageBytes { limit: self.limit });
        }
        match (flag, self.encoding) {
            (0, _) => self.out.push_back(Bytes::copy_from_slice(&bytes)),
            (_, None) => {
                return Err(Reason::MalformedMessage {
                    detail: "a message is flagged compressed, and the call has no grpc-encoding"
                        .into(),
                });
            }
            (_, Some(_)) => self.compressed = Some(BytesMut::with_capacity(len)),
        }
        self.remaining = len;
        if len == 0 {
            self.finish_message()?;
        }
        Ok(())
    }

    /// A message's body is complete: a compressed one goes on decompressed.
    fn finish_message(&mut self) -> Result<(), Reason> {
        self.completed += 1;
        let (Some(buffer), Some(encoding)) = (self.compressed.take(), self.encoding) else {
            return Ok(());
        };
        let plain = encoding.decompress(&buffer, self.limit)?;
        let len = u32::try_from(plain.len()).unwrap_or(u32::MAX);
        let mut header = BytesMut::with_capacity(HEADER_LEN);
        header.put_u8(0);
        header.put_u32(len);
        self.out.push_back(header.freeze());
        self.out.push_back(Bytes::from(plain));
        Ok(())
    }
}

/// A response's messages as they are sent: counted, and those of at least `min` bytes compressed
/// when the call compresses. Without compression the bytes pass as they come (only the headers
/// are followed); with it, a message is held until it is whole.
#[derive(Debug)]
pub struct Outgoing {
    compress: Option<(Encoding, usize)>,
    /// Bytes of messages not yet complete, when compressing.
    pending: BytesMut,
    /// Where the headers are, when not compressing.
    follow: Follow,
}

impl Outgoing {
    /// `compress`: the encoding and the smallest message it applies to, or none.
    pub fn new(compress: Option<(Encoding, usize)>) -> Outgoing {
        Outgoing {
            compress,
            pending: BytesMut::new(),
            follow: Follow::default(),
        }
    }

    /// Takes the next bytes of the response: what to send now, and the messages completed.
    pub fn take(&mut self, data: Bytes) -> Result<(Option<Bytes>, u64), Reason> {
        let Some((encoding, min)) = self.compress else {
            let completed = self.follow.feed(&data);
            return Ok(((!data.is_empty()).then_some(data), completed));
        };
        self.pending.put(data);
        let mut out = BytesMut::new();
        let mut completed = 0;
        while let Some(Header { len, .. }) = Header::at(&self.pending) {
            if self.pending.len() < HEADER_LEN + len {
                break;
            }
            completed += 1;
            let message = self.pending.split_to(HEADER_LEN + len);
            let (flag, payload) = (message[0], &message[HEADER_LEN..]);
            if flag != 0 || len < min {
                out.put(message);
                continue;
            }
            let packed = encoding.compress(payload).map_err(|e| Reason::Internal {
                detail: format!("cannot compress a response: {e}"),
            })?;
            out.put_u8(1);
            out.put_u32(u32::try_from(packed.len()).unwrap_or(u32::MAX));
            out.put(&packed[..]);
        }
        Ok(((!out.is_empty()).then(|| out.freeze()), completed))
    }

    /// Whether nothing is held back.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }
}

/// Follows gRPC's framing through bytes that pass as they are, however they are split, counting
/// the messages completed.
#[derive(Debug, Default)]
struct Follow {
    header: Gather,
    /// Bytes of the current message still to come, once its header is read.
    remaining: Option<usize>,
}

impl Follow {
    /// Reads `data`; the messages it completed.
    fn feed(&mut self, mut data: &[u8]) -> u64 {
        let mut done = 0;
        loop {
            match self.remaining {
                None => {
                    let Some((header, _)) = self.header.take(&mut data) else {
                        return done;
                    };
                    self.remaining = Some(header.len);
                }
                Some(remaining) => {
                    let take = remaining.min(data.len());
                    data = &data[take..];
                    if take < remaining {
                        self.remaining = Some(remaining - take);
                        return done;
                    }
                    self.remaining = None;
                    done += 1;
                }
            }
            if data.is_empty() && self.remaining != Some(0) {
                return done;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(flag: u8, payload: &[u8]) -> Vec<u8> {
        let mut bytes = vec![flag];
        bytes.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_be_bytes());
        bytes.extend_from_slice(payload);
        bytes
    }

    /// The messages of a whole, well-formed stream, walked header by header.
    fn messages(mut stream: &[u8]) -> u64 {
        let mut n = 0;
        while stream.len() >= HEADER_LEN {
            let len = u32::from_be_bytes(stream[1..HEADER_LEN].try_into().unwrap()) as usize;
            stream = &stream[(HEADER_LEN + len).min(stream.len())..];
            n += 1;
        }
        n
    }

    /// Everything a request body hands on for `stream`, fed in chunks of `chunk` bytes.
    fn through(
        stream: &[u8],
        chunk: usize,
        limit: usize,
        encoding: Option<Encoding>,
    ) -> Result<Vec<u8>, Reason> {
        let mut requests = Incoming::new(limit, encoding);
        let mut completed = 0;
        for piece in stream.chunks(chunk) {
            completed += requests.take(Bytes::copy_from_slice(piece))?;
        }
        assert_eq!(completed, messages(stream), "messages counted");
        assert_eq!((requests.header.have, requests.remaining), (0, 0));
        Ok(requests.out.iter().flat_map(|b| b.to_vec()).collect())
    }

    #[test]
    fn plain_messages_up_to_the_limit_pass_unchanged_however_the_bytes_are_split() {
        let mut stream = message(0, &[7; 10]);
        stream.extend(message(0, &[]));
        stream.extend(message(0, &[9; 9]));
        for chunk in 1..=stream.len() {
            assert_eq!(through(&stream, chunk, 10, None), Ok(stream.clone()));
        }
    }

    #[test]
    fn a_message_over_the_limit_is_refused_from_its_header() {
        let mut stream = message(0, &[1, 2, 3]);
        stream.extend(&message(0, &[0; 11])[..HEADER_LEN]);
        for chunk in 1..=stream.len() {
            let refused = through(&stream, chunk, 10, None);
            assert_eq!(refused, Err(Reason::MaxMessageBytes { limit: 10 }));
        }
        let huge = [0, 0xff, 0xff, 0xff, 0xff];
        assert!(through(&huge, 5, 10, None).is_err());
    }

    /// A compressed message goes on decompressed, for both encodings and any split; its
    /// decompressed size is held to the limit too (a small bomb is refused).
    #[test]
    fn compressed_messages_go_on_decompressed_within_the_limit() {
        let payload: Vec<u8> = (0..200u8).collect();
        for encoding in [Encoding::Gzip, Encoding::Zstd] {
            let packed = encoding.compress(&payload).unwrap();
            let mut stream = message(1, &packed);
            stream.extend(message(0, b"plain"));
            let mut expected = message(0, &payload);
            expected.extend(message(0, b"plain"));
            for chunk in [1, 3, 7, stream.len()] {
                assert_eq!(
                    through(&stream, chunk, 1000, Some(encoding)),
                    Ok(expected.clone())
                );
            }
            let bomb = encoding.compress(&[0; 100_000]).unwrap();
            assert!(bomb.len() < 1000);
            assert_eq!(
                through(&message(1, &bomb), 64, 1000, Some(encoding)),
                Err(Reason::MaxMessageBytes { limit: 1000 })
            );
        }
    }

    #[test]
    fn bad_flags_and_bad_compressed_data_are_malformed_messages() {
        let json = b"{\"deals\":[]}";
        let refused = through(json, json.len(), 1 << 20, None);
        assert!(
            matches!(&refused, Err(Reason::MalformedMessage { detail }) if detail.contains("123")),
            "{refused:?}"
        );
        let unannounced = through(&message(1, b"x"), 6, 100, None);
        assert!(matches!(unannounced, Err(Reason::MalformedMessage { .. })));
        let garbage = through(&message(1, b"not gzip"), 13, 100, Some(Encoding::Gzip));
        assert!(matches!(garbage, Err(Reason::MalformedMessage { .. })));
    }

    #[test]
    fn encodings_are_read_and_chosen_by_their_names() {
        let value = |s: &'static str| HeaderValue::from_static(s);
        assert_eq!(Encoding::of_request(None), Ok(None));
        assert_eq!(Encoding::of_request(Some(&value("identity"))), Ok(None));
        assert_eq!(
            Encoding::of_request(Some(&value("gzip"))),
            Ok(Some(Encoding::Gzip))
        );
        assert!(Encoding::of_request(Some(&value("snappy"))).is_err());
        assert_eq!(
            Encoding::for_response(Some(&value("identity, deflate, gzip"))),
            Some(Encoding::Gzip)
        );
        assert_eq!(
            Encoding::for_response(Some(&value("gzip,zstd"))),
            Some(Encoding::Zstd)
        );
        assert_eq!(Encoding::for_response(Some(&value("identity"))), None);
        assert_eq!(Encoding::for_response(None), None);
    }

    /// ResponseFrames: messages of at least the minimum are compressed (flag 1, and they decompress
    /// to what they were), smaller ones pass as they are, however tonic's chunks split them.
    #[test]
    fn responses_compress_the_messages_of_at_least_the_minimum() {
        let big = vec![b'7'; 300];
        let mut stream = message(0, b"small");
        stream.extend(message(0, &big));
        for encoding in [Encoding::Gzip, Encoding::Zstd] {
            for chunk in [1, 4, 9, stream.len()] {
                let mut responses = Outgoing::new(Some((encoding, 100)));
                let mut out = Vec::new();
                let mut completed = 0;
                for piece in stream.chunks(chunk) {
                    let (ready, done) = responses.take(Bytes::copy_from_slice(piece)).unwrap();
                    completed += done;
                    if let Some(ready) = ready {
                        out.extend_from_slice(&ready);
                    }
                }
                assert_eq!(completed, 2);
                assert!(responses.is_empty());
                assert_eq!(&out[..10], &message(0, b"small")[..]);
                assert_eq!(out[10], 1, "the large message is flagged compressed");
                let plain = encoding.decompress(&out[15..], 1000).unwrap();
                assert_eq!(plain, big);
                assert!(out.len() < stream.len());
            }
        }
    }

    /// Three messages (one empty, one compressed), split at every possible size: always three,
    /// and the bytes pass unchanged when nothing is compressed.
    #[test]
    fn messages_sent_are_counted_however_the_bytes_are_split() {
        let mut body = message(0, b"hello");
        body.extend(message(0, b""));
        body.extend(message(1, &[7; 300]));
        for chunk in 1..=body.len() {
            let mut outgoing = Outgoing::new(None);
            let mut out = Vec::new();
            let mut done = 0;
            for piece in body.chunks(chunk) {
                let (ready, completed) = outgoing.take(Bytes::copy_from_slice(piece)).unwrap();
                out.extend_from_slice(&ready.unwrap());
                done += completed;
            }
            assert_eq!(done, 3, "chunks of {chunk}");
            assert_eq!(out, body);
            assert_eq!(
                (outgoing.follow.header.have, outgoing.follow.remaining),
                (0, None)
            );
        }
    }

    #[test]
    fn a_message_sent_split_over_frames_counts_once_it_is_whole() {
        let body = message(0, &[1; 10]);
        let mut follow = Follow::default();
        assert_eq!(follow.feed(&body[..8]), 0);
        assert_eq!(follow.feed(&body[8..]), 1);
        assert_eq!(follow.feed(&[]), 0);
    }
}
