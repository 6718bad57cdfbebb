//! Spans that never reach the collector, counted: those the batch processor's queue has no room
//! for (the collector is slow or never answers, so exports take their full timeout), and those
//! an export failed to deliver (the collector is down or refuses them). The solving path never
//! waits for either: a span finished while the queue is full is dropped on the spot.
//!
//! The SDK's batch processor keeps its own drop count private, so the queue is bounded here, in
//! front of it: [`Gated`] lets a span in only while fewer than the queue's size are pending
//! (taken and not yet through an export), and [`Counted`], around the exporter, says when they
//! are through. The processor's own queue, as large, then never fills first.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};
use prometheus_client::metrics::counter::Counter;

/// The counters of dropped spans, by reason (`patience_trace_spans_dropped_total`), and whether
/// the log has said so yet.
#[derive(Clone, Debug)]
pub struct DroppedSpans {
    queue_full: Counter,
    export_failed: Counter,
    said: Arc<AtomicBool>,
}

impl DroppedSpans {
    pub fn new(queue_full: Counter, export_failed: Counter) -> DroppedSpans {
        DroppedSpans {
            queue_full,
            export_failed,
            said: Arc::default(),
        }
    }

    /// The exporter, counted, and the gate to put in front of the batch processor that drives it.
    pub(super) fn wrap<E: SpanExporter>(self, exporter: E) -> (Counted<E>, QueueGate) {
        let shared = Arc::new(ExportQueue {
            pending: AtomicUsize::new(0),
            max: queue_size(),
            dropped: self,
        });
        let counted = Counted {
            inner: exporter,
            shared: shared.clone(),
        };
        (counted, QueueGate { shared })
    }

    /// Says once in the log that spans are being dropped; the metric counts the rest.
    fn say_once(&self, why: &dyn std::fmt::Display) {
        if !self.said.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "dropping trace spans: {why}; solving goes on, and \
                 patience_trace_spans_dropped_total counts every span lost from now on"
            );
        }
    }
}

/// The batch processor's queue size, as the SDK reads it (`OTEL_BSP_MAX_QUEUE_SIZE`).
fn queue_size() -> usize {
    std::env::var("OTEL_BSP_MAX_QUEUE_SIZE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(opentelemetry_sdk::trace::OTEL_BSP_MAX_QUEUE_SIZE_DEFAULT)
}

#[derive(Debug)]
struct ExportQueue {
    /// Spans let in and not yet through an export, delivered or not.
    pending: AtomicUsize,
    max: usize,
    dropped: DroppedSpans,
}

/// Builds the processor wrapper once the processor exists.
#[derive(Debug)]
pub(super) struct QueueGate {
    shared: Arc<ExportQueue>,
}

impl QueueGate {
    pub(super) fn around<P: SpanProcessor>(self, inner: P) -> Gated<P> {
        Gated {
            inner,
            shared: self.shared,
        }
    }
}

/// A span processor that drops (and counts) a finished span when the queue behind it is full.
#[derive(Debug)]
pub(super) struct Gated<P> {
    inner: P,
    shared: Arc<ExportQueue>,
}

impl<P: SpanProcessor> SpanProcessor for Gated<P> {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        let shared = &self.shared;
        if shared.pending.fetch_add(1, Ordering::AcqRel) >= shared.max {
            shared.pending.fetch_sub(1, Ordering::AcqRel);
            // Said in the log by the exporter's side (its thread), never from here: this runs
            // where the span closed, inside the logging machinery itself.
            shared.dropped.queue_full.inc();
            return;
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The exporter, counting what each export delivers or loses.
#[derive(Debug)]
pub(super) struct Counted<E> {
    inner: E,
    shared: Arc<ExportQueue>,
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len();
        let result = self.inner.export(batch).await;
        let shared = &self.shared;
        shared.pending.fetch_sub(spans, Ordering::AcqRel);
        let dropped = &shared.dropped;
        match &result {
            Err(e) => {
                dropped.export_failed.inc_by(spans as u64);
                dropped.say_once(&format_args!("an export to the collector failed ({e})"));
            }
            Ok(()) if dropped.queue_full.get() > 0 => {
                dropped.say_once(&"the collector is too slow to take them all");
            }
            Ok(()) => {}
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
