//! Every request the server answers that is no gRPC call, counted by method, route and status
//! (`http_server_request_duration_seconds`, see `metrics/http.rs`): the plain HTTP API, and what
//! the front (`front.rs`) answers itself: 415 for a gRPC path without a gRPC content type, 505
//! for gRPC over HTTP/1.1, 404, CORS preflights, and tonic-web's 405. It wraps the whole front;
//! a response the gRPC call layer (`call.rs`) marks as a gRPC call's is left to that layer's
//! series, so a gRPC or gRPC-Web call counts there only. (A plain API request counts here, and
//! its in-process SolveStream call there: the API answers with a response of its own.)
//!
//! The route is the path when it is one the daemon serves (an API route, a gRPC method's path),
//! else `other`, so a scanner cannot grow the label set; the method is one of HTTP's, else
//! `_OTHER`, as OpenTelemetry's conventions have it.

use std::collections::HashSet;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use http::Method;
use tonic::body::Body;
use tower::Service;

use super::call::CountedAsGrpc;
use super::connection::{Guarded, OnDrop};
use super::front::API_ROUTES;
use crate::metrics::Metrics;

/// The front with every other request counted. Cheap to clone (once per connection).
#[derive(Clone, Debug)]
pub struct HttpMetrics<S> {
    inner: S,
    metrics: Metrics,
    /// The paths that are routes: the API's and every gRPC method's.
    routes: Arc<HashSet<String>>,
}

impl<S> HttpMetrics<S> {
    /// Counts the requests `inner` answers that are no gRPC call; `grpc_paths` are the served
    /// methods' paths (`/package.Service/Method`).
    pub fn new(inner: S, metrics: &Metrics, grpc_paths: impl IntoIterator<Item = String>) -> Self {
        let routes = API_ROUTES
            .iter()
            .chain(&super::api::jobs::ROUTES[..1])
            .map(|r| r.to_string())
            .chain(grpc_paths)
            .collect();
        HttpMetrics {
            inner,
            metrics: metrics.clone(),
            routes: Arc::new(routes),
        }
    }
}

/// A method as `http_request_method` names it.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::CONNECT => "CONNECT",
        Method::OPTIONS => "OPTIONS",
        Method::TRACE => "TRACE",
        Method::PATCH => "PATCH",
        _ => "_OTHER",
    }
}

impl<S> Service<http::Request<Body>> for HttpMetrics<S>
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

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let path = request.uri().path();
        // The analysis board's page and its files (`ui.rs`), as two routes.
        let route = if self.routes.contains(path) || path == "/" {
            path.to_string()
        } else if path.starts_with("/v1/jobs/") {
            // The jobs' routes without the id, which would make a series per job.
            "/v1/jobs/{id}".to_string()
        } else if path.starts_with("/ui/") {
            "/ui/*".to_string()
        } else {
            "other".to_string()
        };
        let method = method_label(request.method());
        let metrics = self.metrics.clone();
        let started = Instant::now();
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            if response.extensions().get::<CountedAsGrpc>().is_some() {
                return Ok(response);
            }
            let status = response.status().as_u16();
            // Counted once the response is done with: sent whole, or dropped.
            let done = OnDrop(move || {
                metrics.http_request(method, &route, status, started.elapsed());
            });
            Ok(response.map(|body| Body::new(Guarded::new(body, done))))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_outside_http_are_other() {
        assert_eq!(method_label(&Method::POST), "POST");
        assert_eq!(method_label(&Method::OPTIONS), "OPTIONS");
        let brew = Method::from_bytes(b"BREW").unwrap();
        assert_eq!(method_label(&brew), "_OTHER");
    }
}
