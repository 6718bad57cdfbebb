//! `--max-message-bytes`, enforced on the request body as it arrives: each gRPC message is
//! framed by a 5-byte header (a compression flag and a big-endian length), so a message over
//! the limit is refused from its header, before any of it is buffered.
//!
//! tonic has its own limit, but reports it as `OUT_OF_RANGE` with a message of its own that names
//! no flag, and a status cannot be told apart from any other but by its text. The error this
//! body yields is the status itself ([`message_too_large`]), which tonic hands on unchanged to the
//! call (a stream's `message()`, a unary call's answer), so the client learns which limit to
//! raise or how to split its request.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf, Bytes};
use http_body::{Body, Frame, SizeHint};

use crate::service::message_too_large;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The length of a gRPC message's header.
const HEADER_LEN: usize = 5;

/// A request body whose messages may be at most `limit` bytes each.
pub struct Limited<B> {
    inner: B,
    limit: usize,
    /// The bytes of the current message's header read so far.
    header: [u8; HEADER_LEN],
    in_header: usize,
    /// Bytes of the current message's body still to come.
    remaining: usize,
    failed: bool,
}

impl<B> Limited<B> {
    pub fn new(inner: B, limit: usize) -> Limited<B> {
        Limited {
            inner,
            limit,
            header: [0; HEADER_LEN],
            in_header: 0,
            remaining: 0,
            failed: false,
        }
    }

    /// Follows the framing through `data`; false when a message's header says it is too large.
    fn check(&mut self, mut data: &[u8]) -> bool {
        while !data.is_empty() {
            if self.remaining > 0 {
                let skip = self.remaining.min(data.len());
                self.remaining -= skip;
                data.advance(skip);
                continue;
            }
            let take = (HEADER_LEN - self.in_header).min(data.len());
            self.header[self.in_header..self.in_header + take].copy_from_slice(&data[..take]);
            self.in_header += take;
            data.advance(take);
            if self.in_header == HEADER_LEN {
                self.in_header = 0;
                let [_, a, b, c, d] = self.header;
                let len = u32::from_be_bytes([a, b, c, d]) as usize;
                if len > self.limit {
                    return false;
                }
                self.remaining = len;
            }
        }
        true
    }
}

impl<B> Body for Limited<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.failed {
            return Poll::Ready(None);
        }
        let frame = match ready!(Pin::new(&mut self.inner).poll_frame(cx)) {
            Some(Ok(frame)) => frame,
            Some(Err(e)) => return Poll::Ready(Some(Err(e.into()))),
            None => return Poll::Ready(None),
        };
        if let Some(data) = frame.data_ref()
            && !self.check(data)
        {
            self.failed = true;
            return Poll::Ready(Some(Err(Box::new(message_too_large(self.limit)))));
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.failed || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(len: usize) -> Vec<u8> {
        let mut bytes = vec![0];
        bytes.extend_from_slice(&u32::try_from(len).unwrap().to_be_bytes());
        bytes.resize(HEADER_LEN + len, 7);
        bytes
    }

    #[test]
    fn messages_up_to_the_limit_pass_however_the_bytes_are_split() {
        let mut stream = message(10);
        stream.extend(message(0));
        stream.extend(message(9));
        for chunk in 1..=stream.len() {
            let mut limited = Limited::new((), 10);
            assert!(
                stream.chunks(chunk).all(|c| limited.check(c)),
                "chunks of {chunk}"
            );
            assert_eq!((limited.in_header, limited.remaining), (0, 0));
        }
    }

    #[test]
    fn a_message_over_the_limit_is_refused_from_its_header() {
        let mut stream = message(3);
        stream.extend(&message(11)[..HEADER_LEN]);
        for chunk in 1..=stream.len() {
            let mut limited = Limited::new((), 10);
            assert!(
                !stream.chunks(chunk).all(|c| limited.check(c)),
                "chunks of {chunk}"
            );
        }
        // Lengths up to 2^32 - 1 are read without overflow.
        let mut limited = Limited::new((), 10);
        assert!(!limited.check(&[0, 0xff, 0xff, 0xff, 0xff]));
    }
}
