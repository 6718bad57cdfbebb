//! The standard gRPC server metrics (`grpc_server_*`, see `metrics/grpc.rs`) for every gRPC call
//! the server receives, whoever answers it: the framing (`frames.rs`, which refuses an encoding it
//! does not take and a message over `--max-message-bytes`), the admission layer that refuses calls
//! beyond a cap or during shutdown, the token check, and tonic itself (an unknown service or
//! method is `Unimplemented`). It wraps the gRPC route of the front (`front.rs`), so every gRPC
//! call passes here, and every gRPC-Web call too, as tonic-web hands it on translated to gRPC.
//! What the front answers in plain HTTP is not a gRPC call: `http_metrics.rs` counts it.
//!
//! It reads the status from the response headers (a refusal is a "trailers-only" response) or
//! from the trailers, and the messages by gRPC's framing (a flag byte and a 4-byte length before
//! each message) in the request and response bodies as they pass. A call whose response is
//! dropped before its status was sent (the client cancelled, its deadline passed or its
//! connection went) counts as `Canceled`.
//!
//! Methods are labelled by name only when the descriptors of the services served name them: any
//! other path counts as service and method `unknown`, so a scanner cannot grow the label set.

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use bytes::Bytes;
use http_body::Frame;
use tonic::Code;
use tonic::body::Body;
use tower::Service;

use crate::metrics::{GrpcType, MethodCounters, Metrics};
use crate::proto::{DescriptorError, service_methods};

/// Each method's series by path (`/package.Service/Method`), and the one for every other path.
#[derive(Debug)]
struct MethodTable {
    by_path: HashMap<String, MethodCounters>,
    unknown: MethodCounters,
}

/// The router with every call counted. Cheap to clone (once per connection).
#[derive(Clone, Debug)]
pub struct CallMetrics<S> {
    inner: S,
    methods: Arc<MethodTable>,
}

impl<S> CallMetrics<S> {
    /// Counts the calls to `inner`, whose services are named with the encoded descriptor set
    /// that describes each: `(name, descriptors)`. Their methods' series exist from now on.
    pub fn new(
        inner: S,
        metrics: &Metrics,
        services: &[(&'static str, &[u8])],
    ) -> Result<CallMetrics<S>, DescriptorError> {
        let mut by_path = HashMap::new();
        for &(name, descriptors) in services {
            for (method, kind) in methods_of(name, descriptors)? {
                let counters = metrics.grpc_method(kind, name, &method);
                by_path.insert(format!("/{name}/{method}"), counters);
            }
        }
        let unknown = metrics.grpc_method(GrpcType::Unary, "unknown", "unknown");
        Ok(CallMetrics {
            inner,
            methods: Arc::new(MethodTable { by_path, unknown }),
        })
    }

    /// The paths of the methods counted by name (`/package.Service/Method`).
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.methods.by_path.keys().map(String::as_str)
    }
}

/// The methods of the service `name` and their types, from an encoded descriptor set.
fn methods_of(
    name: &'static str,
    descriptors: &[u8],
) -> Result<Vec<(String, GrpcType)>, DescriptorError> {
    Ok(service_methods(name, descriptors)?
        .iter()
        .map(|m| {
            let kind = GrpcType::of(m.client_streaming(), m.server_streaming());
            (m.name().to_string(), kind)
        })
        .collect())
}

impl<S> Service<http::Request<Body>> for CallMetrics<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let t = &self.methods;
        let counters = t.by_path.get(request.uri().path()).unwrap_or(&t.unknown);
        counters.started();
        let call = CountedCall {
            counters: counters.clone(),
            started: Instant::now(),
            ended: false,
        };
        let request = request.map(|body| {
            Body::new(ReceivedBody {
                body,
                frames: Frames::default(),
                counters: counters.clone(),
            })
        });
        let response = self.inner.call(request);
        Box::pin(async move {
            let mut call = call;
            let mut response = response.await?;
            response.extensions_mut().insert(CountedAsGrpc);
            if let Some(code) = header_status(&response) {
                // Trailers-only: refused, or failed before any message.
                call.end(code);
                return Ok(response);
            }
            Ok(response.map(|body| {
                Body::new(SentBody {
                    body,
                    frames: Frames::default(),
                    call,
                })
            }))
        })
    }
}

/// Marks a response as a gRPC call's, counted here, so that `http_metrics.rs` leaves it alone.
#[derive(Clone, Copy, Debug)]
pub struct CountedAsGrpc;

/// The status a response carries in its headers: a trailers-only response's `grpc-status`, or
/// for a response that is not gRPC at all, its HTTP status as gRPC maps it (the spec's table).
fn header_status(response: &http::Response<Body>) -> Option<Code> {
    if let Some(code) = response.headers().get("grpc-status") {
        return Some(Code::from_bytes(code.as_bytes()));
    }
    match response.status().as_u16() {
        200 => None,
        400 => Some(Code::Internal),
        401 => Some(Code::Unauthenticated),
        403 => Some(Code::PermissionDenied),
        404 => Some(Code::Unimplemented),
        429 | 502..=504 => Some(Code::Unavailable),
        _ => Some(Code::Unknown),
    }
}

/// One call, counted as handled exactly once: when its status is seen, or as `Canceled` when its
/// response is dropped before that.
#[derive(Debug)]
struct CountedCall {
    counters: MethodCounters,
    started: Instant,
    ended: bool,
}

impl CountedCall {
    fn end(&mut self, code: Code) {
        if !std::mem::replace(&mut self.ended, true) {
            self.counters.handled(code, self.started.elapsed());
        }
    }
}

impl Drop for CountedCall {
    fn drop(&mut self) {
        self.end(Code::Cancelled);
    }
}

/// A request body whose messages are counted as they are read.
struct ReceivedBody {
    body: Body,
    frames: Frames,
    counters: MethodCounters,
}

impl http_body::Body for ReceivedBody {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        let this = &mut *self;
        let frame = ready!(Pin::new(&mut this.body).poll_frame(cx));
        if let Some(Ok(frame)) = &frame
            && let Some(data) = frame.data_ref()
        {
            this.counters.received(this.frames.feed(data));
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// A response body whose messages are counted as they are sent, and whose status ends the call.
struct SentBody {
    body: Body,
    frames: Frames,
    call: CountedCall,
}

impl http_body::Body for SentBody {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        let this = &mut *self;
        let frame = ready!(Pin::new(&mut this.body).poll_frame(cx));
        match &frame {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    this.call.counters.sent(this.frames.feed(data));
                } else if let Some(trailers) = frame.trailers_ref() {
                    let code = trailers
                        .get("grpc-status")
                        .map_or(Code::Unknown, |v| Code::from_bytes(v.as_bytes()));
                    this.call.end(code);
                }
            }
            Some(Err(status)) => this.call.end(status.code()),
            // A gRPC body always ends with a status; one that ends without is no success.
            None => this.call.end(Code::Unknown),
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// The length of a gRPC message's header: a flag byte and a big-endian length.
const HEADER_LEN: usize = 5;

/// Follows gRPC's framing through a body's bytes, however they are split, counting the messages
/// completed.
#[derive(Debug, Default)]
struct Frames {
    header: [u8; HEADER_LEN],
    in_header: usize,
    /// Bytes of the current message still to come, once its header is read.
    remaining: Option<usize>,
}

impl Frames {
    /// Reads `data`; the messages it completed.
    fn feed(&mut self, mut data: &[u8]) -> u64 {
        let mut done = 0;
        loop {
            match self.remaining {
                None => {
                    let take = (HEADER_LEN - self.in_header).min(data.len());
                    self.header[self.in_header..self.in_header + take]
                        .copy_from_slice(&data[..take]);
                    self.in_header += take;
                    data = &data[take..];
                    if self.in_header < HEADER_LEN {
                        return done;
                    }
                    let [_, a, b, c, d] = self.header;
                    self.remaining = Some(u32::from_be_bytes([a, b, c, d]) as usize);
                }
                Some(remaining) => {
                    let take = remaining.min(data.len());
                    data = &data[take..];
                    if take < remaining {
                        self.remaining = Some(remaining - take);
                        return done;
                    }
                    self.remaining = None;
                    self.in_header = 0;
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

    fn frame(flag: u8, payload: &[u8]) -> Vec<u8> {
        let mut bytes = vec![flag];
        bytes.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_be_bytes());
        bytes.extend_from_slice(payload);
        bytes
    }

    /// Three messages (one empty, one compressed), split at every possible size: always three.
    #[test]
    fn messages_are_counted_however_the_bytes_are_split() {
        let mut body = frame(0, b"hello");
        body.extend(frame(0, b""));
        body.extend(frame(1, &[7; 300]));
        for chunk in 1..=body.len() {
            let mut frames = Frames::default();
            let done: u64 = body.chunks(chunk).map(|c| frames.feed(c)).sum();
            assert_eq!(done, 3, "chunks of {chunk}");
            assert_eq!((frames.in_header, frames.remaining), (0, None));
        }
    }

    #[test]
    fn a_message_split_over_frames_counts_once_it_is_whole() {
        let body = frame(0, &[1; 10]);
        let mut frames = Frames::default();
        assert_eq!(frames.feed(&body[..8]), 0);
        assert_eq!(frames.feed(&body[8..]), 1);
        assert_eq!(frames.feed(&[]), 0);
    }

    /// The descriptors of the services the daemon serves give each method its type.
    #[test]
    fn methods_take_their_types_from_the_descriptors() {
        let solver = methods_of("patience.v1.Solver", crate::proto::FILE_DESCRIPTOR_SET).unwrap();
        assert!(solver.contains(&("Solve".to_string(), GrpcType::Unary)));
        assert!(solver.contains(&("SolveStream".to_string(), GrpcType::BidiStream)));
        let health = methods_of(
            "grpc.health.v1.Health",
            tonic_health::pb::FILE_DESCRIPTOR_SET,
        )
        .unwrap();
        assert!(health.contains(&("Watch".to_string(), GrpcType::ServerStream)));
        assert!(matches!(
            methods_of("patience.v1.Nothing", crate::proto::FILE_DESCRIPTOR_SET),
            Err(DescriptorError::Missing("patience.v1.Nothing"))
        ));
    }
}
