//! One gRPC call's life on the server, from its request's headers to its response's last byte,
//! in one layer, as tower-http's trace layer owns a request: [`Calls`] around the gRPC route of the
//! front (`front.rs`), so every gRPC call passes here, and every gRPC-Web call too, as tonic-web
//! hands it on translated to gRPC. What the front answers in plain HTTP is not a gRPC call:
//! `http_metrics.rs` counts it.
//!
//! Per call, once each:
//! - **at the request**: the call counts as started (`grpc_server_started_total`) and its span
//!   opens (`span.rs`), a child of the caller's when the request carries W3C trace context; a
//!   `grpc-encoding` the server does not take is refused; for a solving service, a call without
//!   the token (`--auth-token-file`) is refused, before it takes any cap; then admission
//!   (`service/admission.rs`) gives the call its place under its cap, or its refusal, and the
//!   place is held by the call's life; the request body's messages pass through [`Incoming`]
//!   (held to `--max-message-bytes`, decompressed, counted as received);
//! - **at the response**: the server's accepted encodings are advertised; a trailers-only
//!   response (tonic's `Unimplemented`, a handler's early error) ends the call with its status;
//!   otherwise the response body's messages pass through [`Outgoing`] (compressed where the client
//!   accepts it, counted as sent);
//! - **at the end**: the status in the trailers ends the call (`grpc_server_handled_total` and the
//!   handling time); a body that fails ends it with its error's code; a response dropped before its
//!   status was sent (the client cancelled, its deadline passed or its connection went) ends it as
//!   `Canceled`; the status ends the call's span too. All of it happens in the call's
//!   `service::Ending`, where a solving service also gives its account, which writes the call's
//!   log line. The call's place under its cap (and in the drain's count) is given back with the
//!   life, when the transport is done with the response.
//!
//! The service's work for the call runs under its span: the handler's future here, and a
//! streaming call's task, which finds the span in the call's `Ending`, in the request's
//! extensions.
//!
//! The framing is read once each way, here. Methods are labelled by name only when the
//! descriptors of the services served name them: any other path counts as service and method
//! `unknown`, so a scanner cannot grow the label set.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::HeaderValue;
use tonic::Code;
use tonic::body::Body;
use tonic::transport::server::TcpConnectInfo;
use tower::{Service, ServiceExt as _};
use tracing::Instrument as _;

use super::frames::{Encoding, Incoming, Outgoing, advertise};
use super::route::Route;
use crate::auth::{Caller, RequireBearer};
use crate::metrics::{GrpcType, MethodCounters, Metrics};
use crate::proto::{DescriptorError, service_methods};
use crate::service::{Admission, Admitted, CallKind, ServiceKinds, service_kinds};
use life::{Life, ReceivedBody, SentBody};
use span::Origin;

mod in_process;
mod life;
mod span;

pub use in_process::InProcess;

/// How the server frames gRPC messages: `--max-message-bytes`, and response compression.
#[derive(Clone, Copy, Debug)]
pub struct FrameSettings {
    pub max_message_bytes: usize,
    /// Compress responses for clients that accept it, each message of at least this many bytes;
    /// `None`: never.
    pub compress_min_bytes: Option<usize>,
}

/// One service served, as the call layer needs it.
pub struct Served {
    pub name: &'static str,
    /// The service itself (a tonic server), which the layer routes its calls to.
    pub route: Route,
    /// The encoded descriptor set that describes it, which names its methods and their types.
    pub descriptors: &'static [u8],
    /// Its methods' kinds for admission.
    pub kinds: ServiceKinds,
    /// Whether its calls need the token: the solving services'.
    pub token: bool,
}

/// The service itself may not print.
impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Served")
            .field("name", &self.name)
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl Served {
    /// A solving service (behind the token, under the solving calls' caps), or another (health,
    /// reflection: no token, streams under the watches' cap).
    pub fn new(
        name: &'static str,
        route: Route,
        descriptors: &'static [u8],
        solving: bool,
    ) -> Result<Served, DescriptorError> {
        Ok(Served {
            name,
            route,
            descriptors,
            kinds: service_kinds(name, descriptors, solving)?,
            token: solving,
        })
    }
}

/// What a call passes before it is routed: the token check, then admission.
#[derive(Clone, Debug)]
pub struct Gate {
    pub bearer: RequireBearer,
    pub admission: Admission,
}

/// What the layer knows of a method: its series, its rules, and the service that answers it.
#[derive(Clone)]
struct Method {
    counters: MethodCounters,
    /// `package.Service/Method` when the descriptors know it, else `unknown`: the span's name.
    name: Arc<str>,
    kind: CallKind,
    token: bool,
    /// `None`: no service of that name is served, and the call is answered UNIMPLEMENTED here.
    route: Option<Route>,
}

/// A service's rules for a path its descriptors do not know (its service answers UNIMPLEMENTED).
struct ServiceRules {
    route: Route,
    kind: CallKind,
    token: bool,
}

/// Each method by path (`/package.Service/Method`); for a path its service's descriptors do not
/// know, the service's rules with the `unknown` series; for any other path, the `unknown` series,
/// free, without a token, and no service.
struct MethodTable {
    by_path: HashMap<String, Method>,
    by_service: HashMap<&'static str, ServiceRules>,
    unknown: MethodCounters,
    unknown_name: Arc<str>,
}

impl std::fmt::Debug for MethodTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MethodTable")
            .field("paths", &self.by_path.keys())
            .finish_non_exhaustive()
    }
}

impl MethodTable {
    fn get(&self, path: &str) -> Method {
        if let Some(method) = self.by_path.get(path) {
            return method.clone();
        }
        let service = path
            .trim_start_matches('/')
            .split('/')
            .next()
            .unwrap_or_default();
        match self.by_service.get(service) {
            Some(rules) => Method {
                counters: self.unknown.clone(),
                name: self.unknown_name.clone(),
                kind: rules.kind,
                token: rules.token,
                route: Some(rules.route.clone()),
            },
            None => Method {
                counters: self.unknown.clone(),
                name: self.unknown_name.clone(),
                kind: CallKind::Free,
                token: false,
                route: None,
            },
        }
    }
}

/// The gRPC route with every call's life owned (see the module's doc). Cheap to clone (once per
/// connection).
#[derive(Clone, Debug)]
pub struct Calls {
    methods: Arc<MethodTable>,
    settings: FrameSettings,
    gate: Gate,
}

impl Calls {
    /// Owns the calls to `services`, routed by their paths. Their methods' series exist from now
    /// on.
    pub fn new(
        metrics: &Metrics,
        services: &[Served],
        settings: FrameSettings,
        gate: Gate,
    ) -> Result<Calls, DescriptorError> {
        let mut by_path = HashMap::new();
        let mut by_service = HashMap::new();
        for served in services {
            let name = served.name;
            by_service.insert(
                name,
                ServiceRules {
                    route: served.route.clone(),
                    kind: served.kinds.unknown,
                    token: served.token,
                },
            );
            for (method, grpc_type) in methods_of(name, served.descriptors)? {
                let path = format!("/{name}/{method}");
                let method = Method {
                    counters: metrics.grpc_method(grpc_type, name, &method),
                    name: format!("{name}/{method}").into(),
                    kind: served
                        .kinds
                        .methods
                        .get(&path)
                        .copied()
                        .unwrap_or(served.kinds.unknown),
                    token: served.token,
                    route: Some(served.route.clone()),
                };
                by_path.insert(path, method);
            }
        }
        let unknown = metrics.grpc_method(GrpcType::Unary, "unknown", "unknown");
        Ok(Calls {
            methods: Arc::new(MethodTable {
                by_path,
                by_service,
                unknown,
                unknown_name: "unknown".into(),
            }),
            settings,
            gate,
        })
    }

    /// What a call must pass before it is routed, in order: an encoding the server takes, the
    /// token where its service needs one, a place under its cap. Its request encoding, and its
    /// place, or the status it is refused with.
    fn admit(
        &self,
        request: &http::Request<Body>,
        method: &Method,
    ) -> Result<(Option<Encoding>, Caller, Admitted), tonic::Status> {
        let encoding = Encoding::of_request(request.headers().get("grpc-encoding"))
            .map_err(|reason| reason.status())?;
        let peer = request
            .extensions()
            .get::<TcpConnectInfo>()
            .and_then(|info| info.remote_addr);
        let authorization = request.headers().get(http::header::AUTHORIZATION);
        let (caller, admitted) = self.pass(authorization, peer, method)?;
        Ok((encoding, caller, admitted))
    }

    /// The token, where the service needs one (which says whose the call is), then a place under
    /// the call's cap.
    fn pass(
        &self,
        authorization: Option<&HeaderValue>,
        peer: Option<SocketAddr>,
        method: &Method,
    ) -> Result<(Caller, Admitted), tonic::Status> {
        let caller = match method.token {
            true => self.gate.bearer.check(authorization, peer, &method.name)?,
            false => Caller::default(),
        };
        Ok((caller, self.gate.admission.admit(method.kind, peer)?))
    }

    /// Opens a call of the method at `path` made in process (the plain HTTP API's, for a request
    /// to `url_path` with `headers`), with the same token check, admission, series and span as a
    /// call on the wire; its messages never meet the framing. Refused, the call is counted and
    /// ended with the status it gets.
    pub fn enter(
        &self,
        path: &str,
        url_path: &str,
        headers: &http::HeaderMap,
        peer: Option<SocketAddr>,
    ) -> Result<InProcess, tonic::Status> {
        let method = self.methods.get(path);
        let origin = Origin {
            peer,
            local: None,
            http: Some(("POST", url_path)),
        };
        let span = span::open(&method.name, crate::trace::extract(headers), &origin);
        let mut life = Life::start(method.counters.clone(), span);
        let authorization = headers.get(http::header::AUTHORIZATION);
        match self.pass(authorization, peer, &method) {
            Ok((caller, admitted)) => {
                life.admitted = Some(admitted);
                Ok(InProcess { life, caller })
            }
            Err(status) => {
                life.end_with(status.code(), Some(status.message()));
                Err(status)
            }
        }
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

impl Service<http::Request<Body>> for Calls {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    /// Always ready: each call goes to its service with `oneshot`, which waits for that service.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        let method = self.methods.get(request.uri().path());
        let connection = request.extensions().get::<TcpConnectInfo>();
        let origin = Origin {
            peer: connection.and_then(|info| info.remote_addr),
            local: connection.and_then(|info| info.local_addr),
            http: None,
        };
        let span = span::open(
            &method.name,
            crate::trace::extract(request.headers()),
            &origin,
        );
        let mut life = Life::start(method.counters.clone(), span.clone());
        // The service gives the call's ending its account (`service::SolverService`), and a
        // streaming call's task runs under the span it holds.
        request.extensions_mut().insert(life.ending.clone());
        // A service not served is answered as tonic's router answers it.
        let Some(route) = method.route.clone() else {
            return refused(life, tonic::Status::unimplemented(""));
        };
        let incoming = match self.admit(&request, &method) {
            Ok((encoding, caller, admitted)) => {
                life.admitted = Some(admitted);
                // Whose the call is, for a service that keeps tenants apart (the jobs).
                request.extensions_mut().insert(caller);
                encoding
            }
            Err(status) => return refused(life, status),
        };
        let headers = request.headers_mut();
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
        let response = route.oneshot(request);
        Box::pin(
            async move {
                let mut response = response.await?;
                advertise(&mut response);
                response.extensions_mut().insert(CountedAsGrpc);
                if let Some(code) = header_status(&response) {
                    // Trailers-only: refused, or failed before any message.
                    let message = response
                        .headers()
                        .get("grpc-message")
                        .and_then(|v| v.to_str().ok());
                    life.end_with(code, message);
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
            }
            .instrument(span),
        )
    }
}

/// A call refused before its service saw it: a trailers-only response, its status ending the life.
fn refused(
    mut life: Life,
    status: tonic::Status,
) -> Pin<Box<dyn Future<Output = Result<http::Response<Body>, Infallible>> + Send>> {
    let message = status.message().to_string();
    let mut response = status.into_http::<Body>();
    advertise(&mut response);
    response.extensions_mut().insert(CountedAsGrpc);
    life.end_with(
        header_status(&response).unwrap_or(Code::Unknown),
        Some(&message),
    );
    Box::pin(std::future::ready(Ok(response)))
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
