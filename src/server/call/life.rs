//! A call's life and the two bodies it rides on: the request's messages read through [`Incoming`],
//! the response's through [`Outgoing`], and the call ended once, in its [`Ending`]
//! (`service/end.rs`, where its service's account writes its log line), by whichever comes first
//! of its status, its failure and its response being dropped.

use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tonic::Code;
use tonic::body::Body;

use super::super::frames::{Incoming, Outgoing};
use super::span;
use crate::metrics::MethodCounters;
use crate::service::{Admitted, Ending};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One call, counted as started when it is made and as handled exactly once (in its [`Ending`]):
/// when its status is seen, or as `Canceled` when its response is dropped before that; its span
/// gets the status then; its place under its cap is given back, and its span closed, when the
/// life ends, dropped with the response.
#[derive(Debug)]
pub(super) struct Life {
    pub(super) counters: MethodCounters,
    pub(super) admitted: Option<Admitted>,
    /// Where the call ends, and its service gives its account; it holds the call's span
    /// (`span.rs`), which its service's work runs under.
    pub(super) ending: Ending,
}

impl Life {
    pub(super) fn start(counters: MethodCounters, span: tracing::Span) -> Life {
        counters.started();
        let started = Instant::now();
        let (handled, ended) = (counters.clone(), span.clone());
        let on_end = move |code: Code, message: Option<&str>| {
            handled.handled(code, started.elapsed());
            span::end(&ended, code, message);
        };
        Life {
            counters,
            admitted: None,
            ending: Ending::open(span, Box::new(on_end)),
        }
    }

    pub(super) fn end(&mut self, code: Code) {
        self.end_with(code, None);
    }

    /// Ends the call with its status's code and message (the `grpc-message`, as sent), unless
    /// it has ended.
    pub(super) fn end_with(&mut self, code: Code, message: Option<&str>) {
        self.ending.end(code, message);
    }
}

impl Drop for Life {
    fn drop(&mut self) {
        self.end(Code::Cancelled);
    }
}

/// A request body whose messages are checked, decompressed and counted as they are read.
pub(super) struct ReceivedBody {
    pub(super) body: Body,
    pub(super) frames: Incoming,
    pub(super) counters: MethodCounters,
    pub(super) failed: bool,
}

impl http_body::Body for ReceivedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            if let Some(ready) = this.frames.next() {
                return Poll::Ready(Some(Ok(Frame::data(ready))));
            }
            if this.failed {
                return Poll::Ready(None);
            }
            let frame = match ready!(Pin::new(&mut this.body).poll_frame(cx)) {
                Some(Ok(frame)) => frame,
                Some(Err(e)) => return Poll::Ready(Some(Err(Box::new(e)))),
                None => return Poll::Ready(None),
            };
            match frame.into_data() {
                Ok(data) => match this.frames.take(data) {
                    Ok(completed) => this.counters.received(completed),
                    Err(reason) => {
                        this.failed = true;
                        this.frames.clear();
                        return Poll::Ready(Some(Err(Box::new(reason.status()))));
                    }
                },
                Err(frame) => return Poll::Ready(Some(Ok(frame))),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.frames.is_empty() && (self.failed || self.body.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

/// A response body whose messages are counted (and compressed, where the call compresses) as
/// they are sent, and whose status ends the call.
pub(super) struct SentBody {
    pub(super) body: Body,
    pub(super) frames: Outgoing,
    pub(super) life: Life,
}

impl http_body::Body for SentBody {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        let this = &mut *self;
        loop {
            let frame = match ready!(Pin::new(&mut this.body).poll_frame(cx)) {
                Some(Ok(frame)) => frame,
                Some(Err(status)) => {
                    this.life.end_with(status.code(), Some(status.message()));
                    return Poll::Ready(Some(Err(status)));
                }
                None => {
                    // A gRPC body always ends with a status; one that ends without is no success.
                    this.life.end(Code::Unknown);
                    return Poll::Ready(None);
                }
            };
            match frame.into_data() {
                Ok(data) => match this.frames.take(data) {
                    Ok((ready, completed)) => {
                        this.life.counters.sent(completed);
                        if let Some(ready) = ready {
                            return Poll::Ready(Some(Ok(Frame::data(ready))));
                        }
                    }
                    Err(reason) => {
                        let status = reason.status();
                        this.life.end_with(status.code(), Some(status.message()));
                        return Poll::Ready(Some(Err(status)));
                    }
                },
                // Trailers come after every message.
                Err(trailers) => {
                    if let Some(trailers) = trailers.trailers_ref() {
                        let code = trailers
                            .get("grpc-status")
                            .map_or(Code::Unknown, |v| Code::from_bytes(v.as_bytes()));
                        let message = trailers.get("grpc-message").and_then(|v| v.to_str().ok());
                        this.life.end_with(code, message);
                    }
                    return Poll::Ready(Some(Ok(trailers)));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.frames.is_empty() && self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}
