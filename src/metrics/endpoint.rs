//! The `/metrics` endpoint on `--metrics-addr`: a scrape renders the registry, the pool's gauges
//! read at that moment.

use std::net::SocketAddr;
use std::sync::Arc;

use super::Metrics;
use crate::pool::Pool;

/// Serves `/metrics` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: Metrics,
    pool: Arc<Pool>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let text = metrics.render(&pool);
            async move {
                (
                    // What the encoder writes: OpenMetrics (its `info` type and `# EOF` are not
                    // the 0.0.4 text format, which a Prometheus told so refuses to parse).
                    [(
                        http::header::CONTENT_TYPE,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    text,
                )
            }
        }),
    );
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

/// The addresses a metrics endpoint was bound to, for logs.
pub fn describe(addr: Option<SocketAddr>) -> String {
    addr.map_or_else(|| "off".to_string(), |a| format!("http://{a}/metrics"))
}
