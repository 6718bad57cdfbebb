//! W3C trace context (`traceparent`, `tracestate`) in and out of headers and gRPC metadata, and
//! a span's ids for its log lines.

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator as _};
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The caller's context, from a request's headers (gRPC metadata and gRPC-Web ride in them too);
/// an empty context without a valid `traceparent`.
pub fn extract(headers: &http::HeaderMap) -> Context {
    TraceContextPropagator::new().extract(&Headers(headers))
}

/// Makes `span` a child of `parent` (the caller's span) and records the ids its log lines carry
/// in its `trace_id` and `span_id` fields. With export off there is no span of ours to name: the
/// caller's trace id is recorded alone, so the log still joins the caller's trace.
pub fn record_ids(span: &tracing::Span, parent: Context) {
    let caller = parent.span().span_context().clone();
    if span.set_parent(parent).is_ok() {
        if let Some((trace_id, span_id)) = ids(span) {
            span.record("trace_id", tracing::field::display(trace_id));
            span.record("span_id", tracing::field::display(span_id));
        }
    } else if caller.is_valid() {
        span.record("trace_id", tracing::field::display(caller.trace_id()));
    }
}

/// The trace and span ids of `span` as W3C prints them, when export is on.
pub fn ids(span: &tracing::Span) -> Option<(String, String)> {
    let cx = span.context();
    let span_context = cx.span().span_context().clone();
    span_context.is_valid().then(|| {
        (
            span_context.trace_id().to_string(),
            span_context.span_id().to_string(),
        )
    })
}

/// Puts `span`'s context in HTTP headers (a no-op with export off).
pub fn inject_http(span: &tracing::Span, headers: &mut http::HeaderMap) {
    TraceContextPropagator::new().inject_context(&span.context(), &mut HeadersMut(headers));
}

/// Puts `span`'s context in a gRPC call's metadata (a no-op with export off).
pub fn inject_metadata(span: &tracing::Span, metadata: &mut tonic::metadata::MetadataMap) {
    TraceContextPropagator::new().inject_context(&span.context(), &mut MetadataInjector(metadata));
}

struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

struct HeadersMut<'a>(&'a mut http::HeaderMap);

impl Injector for HeadersMut<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

/// Writes trace context into a gRPC call's metadata.
#[derive(Debug)]
pub struct MetadataInjector<'a>(pub &'a mut tonic::metadata::MetadataMap);

impl Injector for MetadataInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(key), Ok(value)) = (
            tonic::metadata::MetadataKey::from_bytes(key.as_bytes()),
            tonic::metadata::MetadataValue::try_from(value.as_str()),
        ) {
            self.0.insert(key, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The W3C example: the parent's ids and flags come out as sent; junk gives no parent.
    #[test]
    fn a_traceparent_is_read_and_junk_is_not() {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            "traceparent",
            http::HeaderValue::from_static(
                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            ),
        );
        headers.insert(
            "tracestate",
            http::HeaderValue::from_static("congo=t61rcWkgMzE"),
        );
        let cx = extract(&headers);
        let parent = cx.span().span_context().clone();
        assert_eq!(
            parent.trace_id().to_string(),
            "0af7651916cd43dd8448eb211c80319c"
        );
        assert_eq!(parent.span_id().to_string(), "b7ad6b7169203331");
        assert!(parent.is_sampled() && parent.is_remote());
        assert_eq!(parent.trace_state().header(), "congo=t61rcWkgMzE");
        headers.insert("traceparent", http::HeaderValue::from_static("00-zz-b7-01"));
        assert!(!extract(&headers).span().span_context().is_valid());
    }
}
