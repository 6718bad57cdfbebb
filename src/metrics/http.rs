//! The HTTP requests the daemon answers that are not gRPC calls (the plain HTTP API, and what the
//! front answers in words: 415, 505, 404, CORS preflights), as OpenTelemetry's semantic
//! conventions name them once exported to Prometheus: `http_server_request_duration_seconds`
//! with `http_request_method`, `http_route` and `http_response_status_code`. Its `_count` is the
//! requests by route and status. gRPC and gRPC-Web calls are in `grpc.rs`'s families instead
//! (where a plain API request shows too, as the gRPC call it is translated into).
//!
//! Unlike the gRPC series these are not made at zero beforehand: the statuses an HTTP route may
//! answer are not a fixed list.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::HANDLING_BUCKETS;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    http_request_method: &'static str,
    http_route: String,
    http_response_status_code: u16,
}

/// The family, registered without the `patience_` prefix.
#[derive(Clone, Debug)]
pub(super) struct HttpFamily {
    duration: Family<RequestLabels, Histogram, fn() -> Histogram>,
}

impl HttpFamily {
    pub(super) fn register(registry: &mut Registry) -> HttpFamily {
        // The gRPC buckets: the plain HTTP API streams deal files as gRPC streams do.
        let family = HttpFamily {
            duration: Family::new_with_constructor(
                (|| Histogram::new(HANDLING_BUCKETS.iter().copied())) as fn() -> Histogram,
            ),
        };
        registry.register(
            "http_server_request_duration_seconds",
            "Duration of HTTP server requests that are not gRPC calls, from their headers to the \
             end of the response.",
            family.duration.clone(),
        );
        family
    }

    pub(super) fn request(&self, method: &'static str, route: &str, status: u16, took: Duration) {
        self.duration
            .get_or_create(&RequestLabels {
                http_request_method: method,
                http_route: route.to_string(),
                http_response_status_code: status,
            })
            .observe(took.as_secs_f64());
    }
}
