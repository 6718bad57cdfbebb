//! OpenTelemetry tracing: W3C trace context in and out, and OTLP export of the spans.
//!
//! The library records its spans with `tracing` (a call's span, its admission waits and batches in
//! the server; a run's and each daemon call's in the client); [`Tracing`] turns those into
//! OpenTelemetry spans and exports them over OTLP/gRPC, configured by the standard variables:
//! - on when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` is set, off
//!   otherwise, and off whatever else is set with `OTEL_SDK_DISABLED=true` or
//!   `OTEL_TRACES_EXPORTER=none`;
//! - `OTEL_EXPORTER_OTLP_PROTOCOL` (or `..._TRACES_PROTOCOL`) may only say `grpc`: the HTTP
//!   exporters are not built in, and a protocol this build cannot speak is an error at start
//!   rather than spans lost in silence;
//! - `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER` / `..._ARG`,
//!   `OTEL_EXPORTER_OTLP_TIMEOUT` / `..._HEADERS` / `..._COMPRESSION` and `OTEL_BSP_*` are read by
//!   the OpenTelemetry SDK and exporter themselves; the service name defaults to `patience`.
//!
//! Export never waits on the solving path: finished spans go to the SDK's batch processor (its
//! own thread); what it cannot take or deliver is dropped and counted (`dropped.rs`), and the log
//! says so once. Context propagation (`context.rs`) works whether export is on or not, so log
//! lines of a traced call carry the caller's trace id even with export off.

use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracerProvider};
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

mod context;
mod dropped;

pub use context::{MetadataInjector, extract, ids, inject_http, inject_metadata, record_ids};
pub use dropped::DroppedSpans;

/// Why tracing cannot start as the environment asks.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error(
        "{variable}={value}: this build exports traces over OTLP/gRPC only; set it to grpc \
         (and point the endpoint at the collector's gRPC port, usually 4317)"
    )]
    Protocol {
        variable: &'static str,
        value: String,
    },
    #[error("cannot build the OTLP span exporter")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
}

/// What the environment says about export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExportSettings {
    Off,
    /// Export to this endpoint (the variable it came from is the exporter's to read again).
    Otlp {
        endpoint: String,
    },
}

impl ExportSettings {
    /// Reads the standard variables through `var` (the process's environment, or a test's map).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<ExportSettings, TraceError> {
        let set = |name: &str| {
            var(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        if set("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            || set("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"))
        {
            return Ok(ExportSettings::Off);
        }
        let Some(endpoint) = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .or_else(|| set("OTEL_EXPORTER_OTLP_ENDPOINT"))
        else {
            return Ok(ExportSettings::Off);
        };
        for variable in [
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ] {
            if let Some(value) = set(variable) {
                if value != "grpc" {
                    return Err(TraceError::Protocol { variable, value });
                }
                break;
            }
        }
        Ok(ExportSettings::Otlp { endpoint })
    }

    pub fn from_env() -> Result<ExportSettings, TraceError> {
        ExportSettings::from_vars(|name| std::env::var(name).ok())
    }
}

/// Export on: the SDK's provider, whose layer turns the library's spans into exported ones.
/// Build it inside the Tokio runtime that will carry the exporter's connection.
#[derive(Debug)]
pub struct Tracing {
    provider: SdkTracerProvider,
    endpoint: String,
}

impl Tracing {
    /// Starts export as [`ExportSettings::from_env`] says, or `None` when it is off. Spans the
    /// exporter cannot take or deliver are counted in `dropped`.
    pub fn from_env(dropped: DroppedSpans) -> Result<Option<Tracing>, TraceError> {
        let ExportSettings::Otlp { endpoint } = ExportSettings::from_env()? else {
            return Ok(None);
        };
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .build()?;
        let (exporter, gate) = dropped.wrap(exporter);
        let batch = BatchSpanProcessor::builder(exporter).build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(gate.around(batch))
            .with_resource(resource())
            .build();
        Ok(Some(Tracing { provider, endpoint }))
    }

    /// Where spans go, for the start line.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The layer that exports the library's spans (target `patience`, info and up: never a
    /// dependency's, so the exporter's own connection is never traced into itself).
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: Subscriber + for<'span> LookupSpan<'span>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("patience"))
            .with_tracked_inactivity(false)
            .with_threads(false)
            .with_location(false)
            .with_target(false)
            .with_filter(Targets::new().with_target("patience", tracing::Level::INFO))
    }

    /// Exports what is left, within `timeout` (spans still unsent then are dropped): the last
    /// step of a drain. Blocks; call it outside the async runtime's workers or in
    /// `spawn_blocking`.
    pub fn shutdown(self, timeout: Duration) {
        if let Err(e) = self.provider.shutdown_with_timeout(timeout) {
            tracing::warn!("could not export every span before stopping: {e}");
        }
    }
}

/// The SDK's resource (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`), named `patience` when
/// neither names the service.
fn resource() -> Resource {
    let detected = Resource::builder().build();
    let named = detected
        .get(&opentelemetry::Key::from_static_str("service.name"))
        .is_some_and(|name| !name.as_str().starts_with("unknown_service"));
    let version = KeyValue::new("service.version", env!("CARGO_PKG_VERSION"));
    if named {
        Resource::builder().with_attribute(version).build()
    } else {
        Resource::builder()
            .with_service_name("patience")
            .with_attribute(version)
            .build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> Result<ExportSettings, TraceError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ExportSettings::from_vars(|name| vars.get(name).cloned())
    }

    /// On only with an endpoint; the specific variable wins; the switches turn it off.
    #[test]
    fn export_is_on_only_with_an_endpoint() {
        assert_eq!(settings(&[]).unwrap(), ExportSettings::Off);
        assert_eq!(
            settings(&[("OTEL_SERVICE_NAME", "x")]).unwrap(),
            ExportSettings::Off
        );
        let on = |e: &str| ExportSettings::Otlp {
            endpoint: e.to_string(),
        };
        assert_eq!(
            settings(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4317")]).unwrap(),
            on("http://a:4317")
        );
        assert_eq!(
            settings(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4317"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:4317"),
            ])
            .unwrap(),
            on("http://b:4317")
        );
        for off in [
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ] {
            assert_eq!(
                settings(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4317"), off]).unwrap(),
                ExportSettings::Off
            );
        }
        assert_eq!(
            settings(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4317"),
                ("OTEL_SDK_DISABLED", "false")
            ])
            .unwrap(),
            on("http://a:4317")
        );
    }

    /// A protocol this build cannot speak is an error naming the variable, not silence.
    #[test]
    fn only_grpc_is_spoken() {
        let err = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ])
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf")
        );
        // The traces' own variable wins over the general one.
        assert!(
            settings(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4317"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ])
            .is_ok()
        );
    }
}
