//! What every part of the front is made of: a route (a service with its type erased), and the
//! plain answer in words that any of them may give. Below the front and the parts it routes to
//! (the services' calls, the plain HTTP API, the analysis board), which all use them.

use std::convert::Infallible;

use http::{HeaderValue, StatusCode, header};
use tonic::body::Body;
use tower::util::BoxCloneSyncService;

/// A service of the front, its type erased.
pub type Route = BoxCloneSyncService<http::Request<Body>, http::Response<Body>, Infallible>;

/// A plain answer in words.
pub fn plain(status: StatusCode, text: &str) -> http::Response<Body> {
    let mut response = http::Response::new(Body::new(format!("{text}\n")));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
