//! A call's span: the OpenTelemetry server span of one call, a child of the caller's span when
//! its request carries W3C trace context, with the semantic conventions' RPC attributes (and
//! HTTP's, for the plain HTTP API's calls), ended with its status by the call's life.
//!
//! The `tracing` fields are the few the log lines show (the span's name and ids); the other
//! attributes go to the OpenTelemetry span alone, so text logs stay readable, and with export off
//! they cost nothing.

use std::net::SocketAddr;

use opentelemetry::trace::Status;
use tonic::Code;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::trace;

/// Where a call came from, as its span says.
#[derive(Debug, Default)]
pub(super) struct Origin<'a> {
    pub peer: Option<SocketAddr>,
    pub local: Option<SocketAddr>,
    /// For a call of the plain HTTP API: its method and path.
    pub http: Option<(&'static str, &'a str)>,
}

/// Opens the span of a call of `name` (`package.Service/Method`, or `unknown`) under `parent`.
pub(super) fn open(
    name: &str,
    parent: opentelemetry::Context,
    origin: &Origin<'_>,
) -> tracing::Span {
    let span = tracing::info_span!(
        target: "patience::server",
        "call",
        otel.name = name,
        otel.kind = "server",
        trace_id = Empty,
        span_id = Empty,
    );
    trace::record_ids(&span, parent);
    if span.is_disabled() {
        return span;
    }
    let (service, method) = name.split_once('/').unwrap_or(("unknown", "unknown"));
    span.set_attribute("rpc.system", "grpc");
    span.set_attribute("rpc.service", service.to_string());
    span.set_attribute("rpc.method", method.to_string());
    if let Some(local) = origin.local {
        span.set_attribute("server.address", local.ip().to_string());
        span.set_attribute("server.port", i64::from(local.port()));
    }
    if let Some(peer) = origin.peer {
        span.set_attribute("client.address", peer.ip().to_string());
        span.set_attribute("client.port", i64::from(peer.port()));
    }
    if let Some((method, path)) = origin.http {
        span.set_attribute("http.request.method", method);
        span.set_attribute("url.path", path.to_string());
    }
    span
}

/// Ends the span with the call's status: its code always, and for a code the conventions count
/// as a server's error, the error status with the message.
pub(super) fn end(span: &tracing::Span, code: Code, message: Option<&str>) {
    span.set_attribute("rpc.grpc.status_code", code as i64);
    if is_server_error(code) {
        let description = message.unwrap_or_else(|| code.description()).to_string();
        span.set_status(Status::error(description));
        span.set_attribute("error.type", format!("{code:?}"));
    }
}

/// The codes OpenTelemetry's RPC conventions count as errors on a server span.
fn is_server_error(code: Code) -> bool {
    matches!(
        code,
        Code::Unknown
            | Code::DeadlineExceeded
            | Code::Unimplemented
            | Code::Internal
            | Code::Unavailable
            | Code::DataLoss
    )
}
