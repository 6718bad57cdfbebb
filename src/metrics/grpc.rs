//! The standard gRPC server metrics, named and labelled exactly as go-grpc-prometheus names them
//! (and the Java and Python interceptors after it), so that stock dashboards, alerts and SLO
//! tooling read this daemon as they read any other gRPC server:
//!
//! - `grpc_server_started_total{grpc_type,grpc_service,grpc_method}`
//! - `grpc_server_handled_total{grpc_type,grpc_service,grpc_method,grpc_code}`
//! - `grpc_server_msg_received_total`, `grpc_server_msg_sent_total` (the same three labels)
//! - `grpc_server_handling_seconds{grpc_type,grpc_service,grpc_method}`, a histogram
//!
//! As go-grpc-prometheus's `InitializeMetrics` does, every method's series exist from the start
//! at zero (every code of `handled` included), so a rate over them is 0, not absent, before the
//! first call. The server's call layer (`server/call.rs`) records into them.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// What a method streams, as the `grpc_type` label says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrpcType {
    Unary,
    ClientStream,
    ServerStream,
    BidiStream,
}

impl GrpcType {
    /// The type of a method that streams requests (`client`), responses (`server`), both or
    /// neither.
    pub fn of(client: bool, server: bool) -> GrpcType {
        match (client, server) {
            (false, false) => GrpcType::Unary,
            (true, false) => GrpcType::ClientStream,
            (false, true) => GrpcType::ServerStream,
            (true, true) => GrpcType::BidiStream,
        }
    }

    /// The label value: `unary`, `client_stream`, `server_stream`, `bidi_stream`.
    pub fn label(self) -> &'static str {
        match self {
            GrpcType::Unary => "unary",
            GrpcType::ClientStream => "client_stream",
            GrpcType::ServerStream => "server_stream",
            GrpcType::BidiStream => "bidi_stream",
        }
    }
}

/// Every status code by its number, named as Go's `codes.Code` prints it, which is what the
/// `grpc_code` label of go-grpc-prometheus holds (`Canceled` with one l, `OK` in capitals).
pub const CODE_NAMES: [&str; 17] = [
    "OK",
    "Canceled",
    "Unknown",
    "InvalidArgument",
    "DeadlineExceeded",
    "NotFound",
    "AlreadyExists",
    "PermissionDenied",
    "ResourceExhausted",
    "FailedPrecondition",
    "Aborted",
    "OutOfRange",
    "Unimplemented",
    "Internal",
    "Unavailable",
    "DataLoss",
    "Unauthenticated",
];

/// Upper bounds of `grpc_server_handling_seconds`: from 100 us (a health check, a unary call of a
/// few deals) to two hours (a stream that carries a large file), so that both the unary latency
/// quantiles and a long stream's duration land in a bucket, not in `+Inf`.
pub const HANDLING_BUCKETS: [f64; 23] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabels {
    grpc_type: &'static str,
    grpc_service: String,
    grpc_method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HandledLabels {
    grpc_type: &'static str,
    grpc_service: String,
    grpc_method: String,
    grpc_code: &'static str,
}

/// The five families, registered without the `patience_` prefix.
#[derive(Clone, Debug)]
pub(super) struct GrpcFamilies {
    started: Family<MethodLabels, Counter>,
    handled: Family<HandledLabels, Counter>,
    received: Family<MethodLabels, Counter>,
    sent: Family<MethodLabels, Counter>,
    handling: Family<MethodLabels, Histogram, fn() -> Histogram>,
}

impl GrpcFamilies {
    pub(super) fn register(registry: &mut Registry) -> GrpcFamilies {
        let families = GrpcFamilies {
            started: Family::default(),
            handled: Family::default(),
            received: Family::default(),
            sent: Family::default(),
            handling: Family::new_with_constructor(
                (|| Histogram::new(HANDLING_BUCKETS.iter().copied())) as fn() -> Histogram,
            ),
        };
        registry.register(
            "grpc_server_started",
            "Total number of RPCs started on the server.",
            families.started.clone(),
        );
        registry.register(
            "grpc_server_handled",
            "Total number of RPCs completed on the server, regardless of success or failure.",
            families.handled.clone(),
        );
        registry.register(
            "grpc_server_msg_received",
            "Total number of RPC stream messages received on the server.",
            families.received.clone(),
        );
        registry.register(
            "grpc_server_msg_sent",
            "Total number of gRPC stream messages sent by the server.",
            families.sent.clone(),
        );
        registry.register(
            "grpc_server_handling_seconds",
            "Histogram of response latency (seconds) of gRPC that had been application-level \
             handled by the server.",
            families.handling.clone(),
        );
        families
    }

    /// One method's series, created now at zero (every code of `handled` too).
    pub(super) fn method(&self, kind: GrpcType, service: &str, method: &str) -> MethodCounters {
        let labels = MethodLabels {
            grpc_type: kind.label(),
            grpc_service: service.to_string(),
            grpc_method: method.to_string(),
        };
        let handled = CODE_NAMES.map(|grpc_code| {
            self.handled
                .get_or_create(&HandledLabels {
                    grpc_type: labels.grpc_type,
                    grpc_service: labels.grpc_service.clone(),
                    grpc_method: labels.grpc_method.clone(),
                    grpc_code,
                })
                .clone()
        });
        MethodCounters {
            started: self.started.get_or_create(&labels).clone(),
            received: self.received.get_or_create(&labels).clone(),
            sent: self.sent.get_or_create(&labels).clone(),
            handling: self.handling.get_or_create(&labels).clone(),
            handled,
        }
    }
}

/// One method's series, fetched once, so that counting a call or a message is an atomic add
/// rather than a lookup under a family's lock.
#[derive(Clone, Debug)]
pub struct MethodCounters {
    started: Counter,
    received: Counter,
    sent: Counter,
    handling: Histogram,
    /// By code number.
    handled: [Counter; 17],
}

impl MethodCounters {
    pub fn started(&self) {
        self.started.inc();
    }

    pub fn received(&self, messages: u64) {
        self.received.inc_by(messages);
    }

    pub fn sent(&self, messages: u64) {
        self.sent.inc_by(messages);
    }

    /// The call ended with `code` after `took`.
    pub fn handled(&self, code: tonic::Code, took: Duration) {
        let i = usize::try_from(i32::from(code)).unwrap_or(2);
        // A number past the known codes is Unknown, as gRPC reads it.
        self.handled.get(i).unwrap_or(&self.handled[2]).inc();
        self.handling.observe(took.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names are Go's, in code order: a code recorded under its number shows under the name
    /// every gRPC dashboard filters on.
    #[test]
    fn code_names_follow_the_code_numbers() {
        for (code, name) in [
            (tonic::Code::Ok, "OK"),
            (tonic::Code::Cancelled, "Canceled"),
            (tonic::Code::ResourceExhausted, "ResourceExhausted"),
            (tonic::Code::Unauthenticated, "Unauthenticated"),
            (tonic::Code::DataLoss, "DataLoss"),
        ] {
            assert_eq!(CODE_NAMES[i32::from(code) as usize], name);
        }
    }

    #[test]
    fn grpc_types_are_named_as_go_grpc_prometheus_names_them() {
        assert_eq!(GrpcType::of(false, false).label(), "unary");
        assert_eq!(GrpcType::of(true, false).label(), "client_stream");
        assert_eq!(GrpcType::of(false, true).label(), "server_stream");
        assert_eq!(GrpcType::of(true, true).label(), "bidi_stream");
    }
}
