//! One gRPC call's life on the server, from its request's headers to its response's last byte,
//! in one layer, as tower-http's trace layer owns a request: [`Calls`] around the gRPC route of the
//! front (`front.rs`), so every gRPC call passes here, and every gRPC-Web call too, as tonic-web
//! hands it on translated to gRPC. What the front answers in plain HTTP is not a gRPC call:
//! `http_metrics.rs` counts it.
//!
//! Per call, once each:
//! - **at the request**: the call counts as started (`grpc_server_started_total`); a
//!   `grpc-encoding` the server does not take is refused here; the request body's messages pass
//!   through [`Incoming`] (held to `--max-message-bytes`, decompressed, counted as received);
//! - **at the response**: the server's accepted encodings are advertised; a trailers-only
//!   response (a refusal by admission, the token check, or tonic's `Unimplemented`) ends the call
//!   with its status; otherwise the response body's messages pass through [`Outgoing`]
//!   (compressed where the client accepts it, counted as sent);
//! - **at the end**: the status in the trailers ends the call (`grpc_server_handled_total` and the
//!   handling time); a body that fails ends it with its error's code; a response dropped before its
//!   status was sent (the client cancelled, its deadline passed or its connection went) ends it as
//!   `Canceled`.
//!
//! The framing is read once each way, here. Methods are labelled by name only when the
//! descriptors of the services served name them: any other path counts as service and method
//! `unknown`, so a scanner cannot grow the label set.

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use bytes::Bytes;
use http::HeaderValue;
use http_body::{Frame, SizeHint};
use tonic::Code;
use tonic::body::Body;
use tower::Service;

use super::frames::{Encoding, Incoming, Outgoing, advertise};
use crate::metrics::{GrpcType, MethodCounters, Metrics};
use crate::proto::{DescriptorError, service_methods};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How the server frames gRPC messages: `--max-message-bytes`, and response compression.
#[derive(Clone, Copy, Debug)]
pub struct FrameSettings {
    pub max_message_bytes: usize,
    /// Compress responses for clients that accept it, each message of at least this many bytes;
    /// `None`: never.
    pub compress_min_bytes: Option<usize>,
}

/// Each method's series by path (`/package.Service/Method`), and the one for every other path.
#[derive(Debug)]
struct MethodTable {
    by_path: HashMap<String, MethodCounters>,
    unknown: MethodCounters,
}

/// The gRPC route with every call's life owned (see the module's doc). Cheap to clone (once per
/// connection).
#[derive(Clone, Debug)]
pub struct Calls<S> {
    inner: S,
    methods: Arc<MethodTable>,
    settings: FrameSettings,
}

impl<S> Calls<S> {
    /// Owns the calls to `inner`, whose services are named with the encoded descriptor set that
    /// describes each: `(name, descriptors)`. Their methods' series exist from now on.
    pub fn new(
        inner: S,
        metrics: &Metrics,
        services: &[(&'static str, &[u8])],
        settings: FrameSettings,
    ) -> Result<Calls<S>, DescriptorError> {
        let mut by_path = HashMap::new();
        for &(name, descriptors) in services {
            for (method, kind) in methods_of(name, descriptors)? {
                let counters = metrics.grpc_method(kind, name, &method);
                by_path.insert(format!("/{name}/{method}"), counters);
            }
        }
        let unknown = metrics.grpc_method(GrpcType::Unary, "unknown", "unknown");
        Ok(Calls {
            inner,
            methods: Arc::new(MethodTable { by_path, unknown }),
            settings,
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

impl<S> Service<http::Request<Body>> for Calls<S>
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

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        let t = &self.methods;
        let counters = t.by_path.get(request.uri().path()).unwrap_or(&t.unknown);
        let mut life = Life::start(counters.clone());
        let headers = request.headers_mut();
        let incoming = match Encoding::of_request(headers.get("grpc-encoding")) {
            Ok(encoding) => encoding,
            Err(reason) => {
                let mut response = reason.status().into_http::<Body>();
                advertise(&mut response);
                response.extensions_mut().insert(CountedAsGrpc);
                life.end(header_status(&response).unwrap_or(Code::Unknown));
                return Box::pin(std::future::ready(Ok(response)));
            }
        };
        // Decompressed here: tonic sees identity messages only.
        headers.remove("grpc-encoding");
        let compress = self.settings.compress_min_bytes.and_then(|min| {
            Some((
                Encoding::for_response(headers.get("grpc-accept-encoding"))?,
                min,
            ))
        });
        let limit = self.settings.max_message_bytes;
        let received = life.counters.clone();
        let request = request.map(|body| {
            Body::new(ReceivedBody {
                body,
                frames: Incoming::new(limit, incoming),
                counters: received,
                failed: false,
            })
        });
        let response = self.inner.call(request);
        Box::pin(async move {
            let mut response = response.await?;
            advertise(&mut response);
            response.extensions_mut().insert(CountedAsGrpc);
            if let Some(code) = header_status(&response) {
                // Trailers-only: refused, or failed before any message.
                life.end(code);
                return Ok(response);
            }
            let grpc = response
                .headers()
                .get(http::header::CONTENT_TYPE)
                .is_some_and(|t| t.as_bytes().starts_with(b"application/grpc"));
            let compress = compress.filter(|_| grpc);
            if let Some((encoding, _)) = compress {
                response
                    .headers_mut()
                    .insert("grpc-encoding", HeaderValue::from_static(encoding.name()));
            }
            Ok(response.map(|body| {
                Body::new(SentBody {
                    body,
                    frames: Outgoing::new(compress),
                    life,
                })
            }))
        })
    }
}

/// Marks a response as a gRPC call's, owned here, so that `http_metrics.rs` leaves it alone.
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

/// One call, counted as started when it is made and as handled exactly once: when its status is
/// seen, or as `Canceled` when its response is dropped before that.
#[derive(Debug)]
struct Life {
    counters: MethodCounters,
    started: Instant,
    ended: bool,
}

impl Life {
    fn start(counters: MethodCounters) -> Life {
        counters.started();
        Life {
            counters,
            started: Instant::now(),
            ended: false,
        }
    }

    fn end(&mut self, code: Code) {
        if !std::mem::replace(&mut self.ended, true) {
            self.counters.handled(code, self.started.elapsed());
        }
    }
}

impl Drop for Life {
    fn drop(&mut self) {
        self.end(Code::Cancelled);
    }
}

/// A request body whose messages are checked, decompressed and counted as they are read.
struct ReceivedBody {
    body: Body,
    frames: Incoming,
    counters: MethodCounters,
    failed: bool,
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
struct SentBody {
    body: Body,
    frames: Outgoing,
    life: Life,
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
                    this.life.end(status.code());
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
                        this.life.end(status.code());
                        return Poll::Ready(Some(Err(status)));
                    }
                },
                // Trailers come after every message.
                Err(trailers) => {
                    if let Some(trailers) = trailers.trailers_ref() {
                        let code = trailers
                            .get("grpc-status")
                            .map_or(Code::Unknown, |v| Code::from_bytes(v.as_bytes()));
                        this.life.end(code);
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

#[cfg(test)]
mod tests {
    use super::*;

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
