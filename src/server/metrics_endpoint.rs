//! The `/metrics` endpoint on `--metrics-addr`: plain HTTP/1.1 for Prometheus, where a scrape
//! renders the registry with the pool's gauges read at that moment.
//!
//! It accepts through the daemon's own loop (`listener.rs`: at most `--metrics-max-connections`,
//! counted apart from the main port's, and the same calm back-off when descriptors run out), and
//! serves each connection with hyper directly: one route does not need a web framework.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::listener;
use crate::metrics::Metrics;
use crate::pool::Pool;

/// What the encoder writes: OpenMetrics (its `info` type and `# EOF` are not the 0.0.4 text
/// format, which a Prometheus told so refuses to parse).
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Serves `/metrics` on `listener` until `stop` completes, then lets the scrapes in progress end.
pub async fn serve(
    listener: TcpListener,
    metrics: Metrics,
    pool: Arc<Pool>,
    max_connections: usize,
    stop: impl Future<Output = ()>,
) {
    let graceful = GracefulShutdown::new();
    let cap = Arc::new(Semaphore::new(max_connections.max(1)));
    let accepting = metrics.clone();
    listener::accept(
        listener,
        cap,
        max_connections,
        accepting,
        stop,
        |stream, _peer, permit| {
            let (metrics, pool) = (metrics.clone(), pool.clone());
            let service = hyper::service::service_fn(move |request: http::Request<Incoming>| {
                let response = respond(request.method(), request.uri().path(), &metrics, &pool);
                async move { Ok::<_, Infallible>(response) }
            });
            let connection = graceful.watch(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::debug!("a metrics connection ended: {e}");
                }
                drop(permit);
            });
        },
    )
    .await;
    graceful.shutdown().await;
}

/// `GET` (or `HEAD`) `/metrics`: the registry; another method there: 405; any other path: 404.
fn respond(method: &Method, path: &str, metrics: &Metrics, pool: &Pool) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::default());
    if path != "/metrics" {
        *response.status_mut() = StatusCode::NOT_FOUND;
    } else if method != Method::GET && method != Method::HEAD {
        *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
        response
            .headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
    } else {
        *response.body_mut() = Full::new(Bytes::from(metrics.render(pool)));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static(OPENMETRICS),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_get_and_head_of_the_metrics_path_are_answered() {
        let pool = Pool::new(1, 2).unwrap();
        let metrics = Metrics::new();
        let page = respond(&Method::GET, "/metrics", &metrics, &pool);
        assert_eq!(page.status(), StatusCode::OK);
        assert_eq!(page.headers()[header::CONTENT_TYPE], OPENMETRICS);
        assert_eq!(
            respond(&Method::HEAD, "/metrics", &metrics, &pool).status(),
            StatusCode::OK
        );
        let post = respond(&Method::POST, "/metrics", &metrics, &pool);
        assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(post.headers()[header::ALLOW], "GET, HEAD");
        assert_eq!(
            respond(&Method::GET, "/", &metrics, &pool).status(),
            StatusCode::NOT_FOUND
        );
    }
}
