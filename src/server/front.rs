//! One port for every protocol a client may speak: each request goes, by its method, content type
//! and path, to
//! - gRPC (HTTP/2, `application/grpc`): the services, each call's life under `call.rs`;
//! - gRPC-Web (`application/grpc-web`, `-text`; HTTP/1.1 or 2, from browsers): translated by
//!   `tonic-web` to the same services, with CORS for the origins `--cors-allow-origin` names;
//! - the plain HTTP API (`POST /v1/solve`, `POST /v1/rps`);
//! - the analysis board (`GET /` and `/ui/...`, `ui.rs`), unless `--no-ui`;
//! - and anything else to an answer in words: HTTP 415 for a gRPC path without a gRPC content type
//!   (a JSON body, say, which gRPC would read as a bad message), 404 for a path nobody serves.

use std::convert::Infallible;
use std::task::{Context, Poll};

use http::{HeaderValue, Method, StatusCode, header};
use tonic::body::Body;
use tower::Service;
use tower_http::cors::{AllowOrigin, CorsLayer};

use super::route::{Route, plain};

/// The plain HTTP API's routes.
pub const API_ROUTES: [&str; 2] = ["/v1/solve", "/v1/rps"];

/// The headers a browser's gRPC-Web client sends, and those its code may read.
const WEB_REQUEST_HEADERS: [&str; 6] = [
    "content-type",
    "x-grpc-web",
    "x-user-agent",
    "grpc-timeout",
    "authorization",
    "grpc-accept-encoding",
];
const WEB_RESPONSE_HEADERS: [&str; 4] = [
    "grpc-status",
    "grpc-message",
    "grpc-status-details-bin",
    "grpc-encoding",
];

/// `--cors-allow-origin`: the browser origins allowed to call; `*` allows any.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CorsOrigins(pub Vec<String>);

impl CorsOrigins {
    /// The CORS layer for these origins; `None` when there are none (browsers from other origins
    /// are then refused, as the same-origin policy has it).
    fn layer(&self) -> Option<CorsLayer> {
        if self.0.is_empty() {
            return None;
        }
        let origin = if self.0.iter().any(|o| o == "*") {
            AllowOrigin::any()
        } else {
            let origins: Vec<HeaderValue> = self
                .0
                .iter()
                .filter_map(|o| HeaderValue::from_str(o).ok())
                .collect();
            AllowOrigin::list(origins)
        };
        let names = |names: &[&'static str]| {
            names
                .iter()
                .map(|n| header::HeaderName::from_static(n))
                .collect::<Vec<_>>()
        };
        Some(
            CorsLayer::new()
                .allow_origin(origin)
                .allow_methods([Method::POST, Method::OPTIONS])
                .allow_headers(names(&WEB_REQUEST_HEADERS))
                .expose_headers(names(&WEB_RESPONSE_HEADERS))
                .max_age(std::time::Duration::from_secs(24 * 3600)),
        )
    }
}

/// The front: see the module's doc.
#[derive(Clone)]
pub struct Front {
    grpc: Route,
    web: Route,
    api: Route,
    /// The analysis board; `None` under `--no-ui`.
    page: Option<Route>,
    cors: bool,
}

impl std::fmt::Debug for Front {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Front")
            .field("cors", &self.cors)
            .field("page", &self.page.is_some())
            .finish_non_exhaustive()
    }
}

impl Front {
    /// `grpc`: the services (framed); `api`: the plain HTTP API; `page`: the analysis board.
    pub fn new(grpc: Route, api: Route, page: Option<Route>, origins: &CorsOrigins) -> Front {
        let web = tower::Layer::layer(&tonic_web::GrpcWebLayer::new(), grpc.clone());
        // The API's answers carry the same allowance, for pages of other origins that call it.
        let (web, api, cors) = match origins.layer() {
            Some(cors) => (
                Route::new(tower::Layer::layer(&cors, web)),
                Route::new(tower::Layer::layer(&cors, api)),
                true,
            ),
            None => (Route::new(web), api, false),
        };
        Front {
            grpc,
            web,
            api,
            page,
            cors,
        }
    }
}

/// Where a request goes.
#[derive(Debug, PartialEq, Eq)]
enum Destination {
    Grpc,
    GrpcOverHttp1,
    GrpcWeb,
    Preflight,
    Api,
    Page,
    NotGrpcContent,
    Nowhere,
}

fn kind(request: &http::Request<Body>) -> Destination {
    let content = request
        .headers()
        .get(header::CONTENT_TYPE)
        .map_or(&b""[..], HeaderValue::as_bytes);
    let path = request.uri().path();
    if request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
    {
        Destination::Preflight
    } else if content.starts_with(b"application/grpc-web") {
        Destination::GrpcWeb
    } else if content.starts_with(b"application/grpc") {
        if request.version() == http::Version::HTTP_2 {
            Destination::Grpc
        } else {
            Destination::GrpcOverHttp1
        }
    } else if API_ROUTES.contains(&path) || super::api::jobs::is_jobs_path(path) {
        Destination::Api
    } else if super::ui::is_page_request(request.method(), path) {
        Destination::Page
    } else if is_grpc_path(path) {
        Destination::NotGrpcContent
    } else {
        Destination::Nowhere
    }
}

/// `/package.Service/Method`: the shape of a gRPC path.
fn is_grpc_path(path: &str) -> bool {
    let mut parts = path.trim_start_matches('/').split('/');
    matches!(
        (parts.next(), parts.next(), parts.next()),
        (Some(service), Some(method), None) if service.contains('.') && !method.is_empty()
    )
}

impl Service<http::Request<Body>> for Front {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future =
        std::pin::Pin<Box<dyn Future<Output = Result<http::Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Each route is a clone made ready when it is called.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let answer = |status, text: &str| -> Self::Future {
            let response = plain(status, text);
            Box::pin(std::future::ready(Ok(response)))
        };
        let nowhere = || {
            answer(
                StatusCode::NOT_FOUND,
                "nothing here: gRPC services are under /patience.v1.Solver/ and \
                 /patience.v1.RpsService/, the plain HTTP API at POST /v1/solve and /v1/rps",
            )
        };
        match kind(&request) {
            Destination::Grpc => Box::pin(tower::ServiceExt::oneshot(self.grpc.clone(), request)),
            Destination::GrpcWeb => Box::pin(tower::ServiceExt::oneshot(self.web.clone(), request)),
            Destination::Preflight if self.cors => {
                Box::pin(tower::ServiceExt::oneshot(self.web.clone(), request))
            }
            Destination::Preflight => answer(
                StatusCode::FORBIDDEN,
                "cross-origin calls are off: the daemon takes them from the origins given with \
                 --cors-allow-origin",
            ),
            Destination::Api => Box::pin(tower::ServiceExt::oneshot(self.api.clone(), request)),
            Destination::Page => match self.page.clone() {
                Some(page) => Box::pin(tower::ServiceExt::oneshot(page, request)),
                None => nowhere(),
            },
            Destination::GrpcOverHttp1 => answer(
                StatusCode::HTTP_VERSION_NOT_SUPPORTED,
                "gRPC needs HTTP/2; over HTTP/1.1 use gRPC-Web (application/grpc-web) or the \
                 plain HTTP API (POST /v1/solve)",
            ),
            Destination::NotGrpcContent => {
                let mut response = plain(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "this is a gRPC method: send content-type application/grpc (or \
                     application/grpc-web from a browser); for plain HTTP, POST a deal file to \
                     /v1/solve",
                );
                response.headers_mut().insert(
                    "accept-post",
                    HeaderValue::from_static(
                        "application/grpc, application/grpc-web, application/grpc-web-text",
                    ),
                );
                Box::pin(std::future::ready(Ok(response)))
            }
            Destination::Nowhere => nowhere(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: Method, path: &str, content: Option<&'static str>) -> http::Request<Body> {
        let mut builder = http::Request::builder()
            .method(method)
            .uri(path)
            .version(http::Version::HTTP_2);
        if let Some(content) = content {
            builder = builder.header(header::CONTENT_TYPE, content);
        }
        builder.body(Body::empty()).unwrap()
    }

    #[test]
    fn requests_go_by_content_type_then_path() {
        let solve = "/patience.v1.Solver/Solve";
        let cases = [
            (
                Method::POST,
                solve,
                Some("application/grpc"),
                Destination::Grpc,
            ),
            (
                Method::POST,
                solve,
                Some("application/grpc+proto"),
                Destination::Grpc,
            ),
            (
                Method::POST,
                solve,
                Some("application/grpc-web"),
                Destination::GrpcWeb,
            ),
            (
                Method::POST,
                solve,
                Some("application/grpc-web-text+proto"),
                Destination::GrpcWeb,
            ),
            (
                Method::POST,
                solve,
                Some("application/json"),
                Destination::NotGrpcContent,
            ),
            (Method::POST, solve, None, Destination::NotGrpcContent),
            (
                Method::POST,
                "/v1/solve",
                Some("text/plain"),
                Destination::Api,
            ),
            (Method::POST, "/v1/rps", None, Destination::Api),
            (Method::GET, "/nothing", None, Destination::Nowhere),
            (Method::GET, "/", None, Destination::Page),
            (Method::HEAD, "/ui/board.js", None, Destination::Page),
            (Method::POST, "/", Some("text/plain"), Destination::Nowhere),
            (
                Method::POST,
                "/a/b/c",
                Some("application/json"),
                Destination::Nowhere,
            ),
        ];
        for (method, path, content, expected) in cases {
            assert_eq!(
                kind(&request(method, path, content)),
                expected,
                "{path} {content:?}"
            );
        }
        let mut preflight = request(Method::OPTIONS, solve, None);
        preflight.headers_mut().insert(
            header::ACCESS_CONTROL_REQUEST_METHOD,
            HeaderValue::from_static("POST"),
        );
        assert_eq!(kind(&preflight), Destination::Preflight);
        let mut h1 = request(Method::POST, solve, Some("application/grpc"));
        *h1.version_mut() = http::Version::HTTP_11;
        assert_eq!(kind(&h1), Destination::GrpcOverHttp1);
    }
}
