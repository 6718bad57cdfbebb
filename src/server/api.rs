//! The plain HTTP API, for everyone without a gRPC stack (curl first): `POST /v1/solve` takes a
//! deal file as its body, of any size, and answers `text/plain` lines while the body is still
//! coming, byte for byte what `patience solve` prints for the same bytes on standard input,
//! `error:` lines included; `POST /v1/rps` likewise for FZU 2145 case files and `patience rps`.
//!
//! It is a translation, as grpc-gateway makes one, but in process (`translate.rs`): the body is
//! read with the CLI's readers ([`crate::items`]), the call is entered in the call layer as a
//! `SolveStream` (`SolveRpsStream`) call (the token, its cap, its series), its items go in that
//! rpc's requests to the service directly, never encoded, and the answers come back as
//! [`crate::render`] lines. So the token, the call caps, the deal budget (memory stays flat
//! whatever the body's size), the stall timeout, the drain, the logs and the metrics hold for it
//! as they hold for gRPC, by construction.
//!
//! A call refused before its first line gets the HTTP status of its gRPC code, as Google's APIs
//! map them (401 with `WWW-Authenticate`, 429 and 503 with `Retry-After`, 413, 400...), the
//! message in words and the reason in `X-Patience-Reason`. Once lines have been sent the status
//! is said: a call that fails later ends its body cut short (HTTP/1.1: without its last chunk;
//! HTTP/2: a reset), which every client reports as an incomplete transfer.
//!
//! Query parameters, as the commands' flags: `precision` (0 to 17; by default 6, and 10 for
//! rps), `format` (`text` or `json`), and for deals `exact`, `moves`, `line` (JSON only; present,
//! `true` or `1`). A body may be sent compressed, gzip or zstd (with or without its `Content-Encoding`).

pub mod jobs;
mod translate;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use http::{HeaderValue, Method, StatusCode, header};
use http_body_util::StreamBody;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;
use tonic::body::Body;

use tonic::transport::server::TcpConnectInfo;

use super::call::Calls;
use super::route::{Route, plain};
use crate::compressed::Codec;
use crate::proto::reason::Said;
use crate::render::{DEAL_PRECISION, MAX_PRECISION, OutputFormat, RPS_PRECISION, Render};
use crate::service::SolverService;
use crate::service::jobs::JobsService;
use crate::solver::Options;
use translate::{ApiCall, Endpoint, Failure};

/// The API's settings, from the server's.
#[derive(Clone, Debug)]
pub struct ApiSettings {
    /// `--max-deals-per-request`: no request the API makes is larger.
    pub max_items_per_request: usize,
    /// `--max-in-flight`: a call's budget of items sent and not yet answered, which bounds the
    /// items (and bad items' messages) an API call holds on to.
    pub max_in_flight: usize,
}

/// The API as a route of the front: its calls are entered in `calls` as calls of their rpc, and
/// made on `service` directly.
pub fn route(
    calls: Calls,
    service: SolverService,
    jobs: JobsService,
    settings: ApiSettings,
) -> Route {
    let api = Arc::new(Api {
        calls,
        service,
        jobs,
        settings,
    });
    Route::new(tower::service_fn(move |request: http::Request<Body>| {
        let api = api.clone();
        async move { Ok::<_, Infallible>(answer(&api, request).await) }
    }))
}

/// What every call of the API shares.
struct Api {
    calls: Calls,
    service: SolverService,
    /// The daemon's jobs (`/v1/jobs`).
    jobs: JobsService,
    settings: ApiSettings,
}

async fn answer(api: &Api, request: http::Request<Body>) -> http::Response<Body> {
    if jobs::is_jobs_path(request.uri().path()) {
        return jobs::answer(&api.calls, &api.jobs, request).await;
    }
    let settings = &api.settings;
    let game = match request.uri().path() {
        "/v1/rps" => Endpoint::Rps,
        _ => Endpoint::Deals,
    };
    if request.method() != Method::POST {
        let mut response = plain(
            StatusCode::METHOD_NOT_ALLOWED,
            &format!(
                "{} takes POST, with a {} file as the body",
                request.uri().path(),
                game.file()
            ),
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return response;
    }
    let render = match query(request.uri().query().unwrap_or_default(), game) {
        Ok(render) => render,
        Err(message) => return plain(StatusCode::BAD_REQUEST, &message),
    };
    let arrow = accepts_arrow(request.headers());
    if arrow && render.format == OutputFormat::Json {
        let message = "the answers come as Arrow columns (index, id, probability, error) or as \
                       JSON lines: leave out format=json, or ask for another Accept";
        return plain(StatusCode::BAD_REQUEST, message);
    }
    // The body is read through the decoder files are (by its first bytes); a header that names
    // a compression says what those bytes must be.
    let encoding = request.headers().get(header::CONTENT_ENCODING);
    let encoded = match encoding.map(|v| v.as_bytes().to_ascii_lowercase()) {
        None => None,
        Some(v) if v == b"identity" => None,
        Some(v) if v == b"gzip" => Some(Codec::Gzip),
        Some(v) if v == b"zstd" => Some(Codec::Zstd),
        Some(_) => {
            let mut response = plain(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "the body's Content-Encoding is not taken: send it as is, gzip or zstd",
            );
            response.headers_mut().insert(
                header::ACCEPT_ENCODING,
                HeaderValue::from_static("gzip, zstd, identity"),
            );
            return response;
        }
    };
    let (parts, body) = request.into_parts();
    let call = ApiCall {
        calls: api.calls.clone(),
        service: api.service.clone(),
        headers: parts.headers,
        peer: parts
            .extensions
            .get::<TcpConnectInfo>()
            .and_then(|info| info.remote_addr),
        render,
        arrow,
        batch: game.batch().min(settings.max_items_per_request).max(1),
        max_queued: settings.max_in_flight.saturating_mul(2).max(1024),
        encoded,
    };
    let content = match (arrow, render.format) {
        (true, _) => crate::render::columns::ARROW_STREAM,
        (false, OutputFormat::Json) => "application/x-ndjson",
        (false, _) => "text/plain; charset=utf-8",
    };
    respond(translate::run(game, call, body), content).await
}

/// Whether the caller's `Accept` names an Arrow IPC stream (parameters and case aside).
fn accepts_arrow(headers: &http::HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|range| range.split(';').next())
        .any(|media| {
            media
                .trim()
                .eq_ignore_ascii_case(crate::render::columns::ARROW_STREAM)
        })
}

/// The answer's head, once its first lines (or its failure, or its end) are known.
async fn respond(
    mut lines: mpsc::Receiver<Result<Bytes, Failure>>,
    content: &'static str,
) -> http::Response<Body> {
    let first = match lines.recv().await {
        Some(Ok(first)) => Some(first),
        Some(Err(failure)) => return refused(&failure),
        None => None,
    };
    let rest = ReceiverStream::new(lines);
    let body = futures::stream::iter(first.map(Ok))
        .chain(rest)
        .map(|piece| piece.map(http_body::Frame::data));
    let mut response = http::Response::new(Body::new(StreamBody::new(body)));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content));
    response
}

/// An answer in words for a call that failed before its first line.
fn refused(failure: &Failure) -> http::Response<Body> {
    match failure {
        Failure::ApiCall(status) => refused_status(status),
        Failure::Unreadable(_) => plain(StatusCode::BAD_REQUEST, &failure.to_string()),
        Failure::Internal(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, &failure.to_string()),
    }
}

/// A call's failing status in HTTP's words: the status its code maps to, the message, the
/// reason in `X-Patience-Reason`, `Retry-After` and `WWW-Authenticate` where they apply.
fn refused_status(status: &tonic::Status) -> http::Response<Body> {
    let said = Said::of(status);
    // Too large for the daemon is 413 in HTTP's words, not 429 (which says "later").
    let code = match said.as_ref().map(|s| s.reason.as_str()) {
        Some("MAX_MESSAGE_BYTES" | "MAX_DEALS_PER_REQUEST") => StatusCode::PAYLOAD_TOO_LARGE,
        _ => http_status(status.code()),
    };
    let mut response = plain(code, status.message());
    let headers = response.headers_mut();
    if let Some(said) = said {
        if let Ok(reason) = HeaderValue::from_str(&said.reason) {
            headers.insert("x-patience-reason", reason);
        }
        if let Some(after) = said.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_seconds(after)));
        }
    }
    if status.code() == Code::Unauthenticated {
        headers.insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"patience\""),
        );
    }
    response
}

/// `Retry-After` is whole seconds: a shorter wait is rounded up.
fn retry_seconds(after: Duration) -> u64 {
    after.as_secs() + u64::from(after.subsec_nanos() > 0)
}

/// The HTTP status of a gRPC code, as `google.rpc.Code` documents the mapping (and
/// grpc-gateway applies it); 413 for a message over the size limit.
fn http_status(code: Code) -> StatusCode {
    match code {
        Code::Ok => StatusCode::OK,
        Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => {
            StatusCode::BAD_REQUEST
        }
        Code::Unauthenticated => StatusCode::UNAUTHORIZED,
        Code::PermissionDenied => StatusCode::FORBIDDEN,
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::AlreadyExists | Code::Aborted => StatusCode::CONFLICT,
        Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        Code::Cancelled => StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST),
        Code::Unimplemented => StatusCode::NOT_IMPLEMENTED,
        Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        Code::Unknown | Code::Internal | Code::DataLoss => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// How the lines are to look, from the query string; the error in words otherwise.
fn query(query: &str, game: Endpoint) -> Result<Render, String> {
    let mut render = Render {
        format: OutputFormat::Text,
        precision: match game {
            Endpoint::Deals => DEAL_PRECISION,
            Endpoint::Rps => RPS_PRECISION,
        },
        asked: Options::default(),
    };
    let shown = |text: &str| crate::deal::Token::cut(text, 40);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let switch = || match value {
            "" | "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => Err(format!(
                "{name} is true or false (or given without a value), not {}",
                shown(value)
            )),
        };
        match (name, game) {
            ("precision", _) => {
                let precision = value.parse().ok().filter(|p| *p <= MAX_PRECISION);
                render.precision = precision.ok_or_else(|| {
                    format!(
                        "precision is a whole number from 0 to {MAX_PRECISION}, not {}",
                        shown(value)
                    )
                })?;
            }
            ("format", _) => {
                render.format = match value {
                    "text" => OutputFormat::Text,
                    "json" => OutputFormat::Json,
                    _ => return Err(format!("format is text or json, not {}", shown(value))),
                };
            }
            ("exact", Endpoint::Deals) => render.asked.exact = switch()?,
            ("moves", Endpoint::Deals) => render.asked.moves = switch()?,
            ("line", Endpoint::Deals) => render.asked.line = switch()?,
            _ => {
                return Err(format!(
                    "unknown query parameter {}: {} takes {}",
                    shown(name),
                    game.path(),
                    game.parameters()
                ));
            }
        }
    }
    let asked = render.asked;
    if render.format == OutputFormat::Text && (asked.exact || asked.moves || asked.line) {
        return Err(
            "exact, moves and line are shown in JSON only: add format=json (the text \
                    format stays one probability per line)"
                .into(),
        );
    }
    Ok(render)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_says_what_solve_s_flags_say() {
        let render = query(
            "precision=3&format=json&exact&moves=1&line=false",
            Endpoint::Deals,
        )
        .unwrap();
        assert_eq!(render.precision, 3);
        assert_eq!(render.format, OutputFormat::Json);
        assert!(render.asked.exact && render.asked.moves && !render.asked.line);
        // Each path's default is its command's.
        assert_eq!(query("", Endpoint::Deals).unwrap().precision, 6);
        assert_eq!(query("", Endpoint::Rps).unwrap().precision, 10);
    }

    #[test]
    fn a_bad_query_is_refused_naming_what_is_wrong() {
        let refused = |q: &str, game| query(q, game).unwrap_err();
        assert!(refused("precision=18", Endpoint::Deals).contains("0 to 17"));
        assert!(refused("format=xml", Endpoint::Deals).contains("\"xml\""));
        assert!(refused("exact", Endpoint::Deals).contains("format=json"));
        assert!(refused("moves=maybe&format=json", Endpoint::Deals).contains("true or false"));
        assert!(refused("exact&format=json", Endpoint::Rps).contains("unknown query parameter"));
        assert!(refused("colour=red", Endpoint::Deals).contains("\"colour\""));
    }

    #[test]
    fn retry_after_is_rounded_up_to_whole_seconds() {
        assert_eq!(retry_seconds(Duration::ZERO), 0);
        assert_eq!(retry_seconds(Duration::from_millis(1)), 1);
        assert_eq!(retry_seconds(Duration::from_secs(2)), 2);
    }

    /// The refusals a test cannot provoke on the wire at will (a drain refuses only calls that
    /// race its start; the listener is closed then): their HTTP answer from their status.
    #[test]
    fn a_draining_daemon_says_503_and_to_retry_elsewhere_now() {
        let draining = refused(&Failure::ApiCall(
            crate::proto::reason::Reason::Draining.status(),
        ));
        assert_eq!(draining.status(), StatusCode::SERVICE_UNAVAILABLE);
        let headers = draining.headers();
        assert_eq!(headers[header::RETRY_AFTER], "0");
        assert_eq!(headers["x-patience-reason"], "DRAINING");
        let large = crate::proto::reason::Reason::MaxMessageBytes { limit: 10 };
        let large = refused(&Failure::ApiCall(large.status()));
        assert_eq!(large.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[test]
    fn refusals_get_the_http_status_users_expect() {
        assert_eq!(http_status(Code::ResourceExhausted), 429);
        assert_eq!(http_status(Code::Unavailable), 503);
        assert_eq!(http_status(Code::Unauthenticated), 401);
        assert_eq!(http_status(Code::InvalidArgument), 400);
        assert_eq!(http_status(Code::DeadlineExceeded), 504);
    }
}
