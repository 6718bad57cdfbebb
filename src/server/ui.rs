//! The analysis board: a page for people, at `GET /` on the daemon's port (`--no-ui` turns it
//! off). Its files (`ui/` in the repository) are compiled into the binary, so the daemon needs
//! nothing beside it and the page is always the one its API was built with; the page calls only
//! the daemon's own plain HTTP API (`/v1/solve`, `/v1/rps`), with the token the user gives it.
//!
//! The files are served with a Content-Security-Policy that allows nothing but this origin's own
//! scripts, styles and API (no inline script, no other host), and revalidated on every load
//! (`no-cache` with an `ETag`, so a browser never runs an old script against a new daemon, and a
//! reload costs a 304).

use std::convert::Infallible;

use http::{HeaderValue, Method, StatusCode, header};
use tonic::body::Body;

use super::route::{Route, plain};

/// One file of the page.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
    etag: &'static str,
}

/// FNV-1a, at compile time: an `ETag` that changes whenever a file's bytes do.
const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

/// The 16 hex digits of `hash` between quotes, as an `ETag` is written.
const fn etag_bytes(hash: u64) -> [u8; 18] {
    let digits = b"0123456789abcdef";
    let mut out = [b'"'; 18];
    let mut i = 0;
    while i < 16 {
        out[1 + i] = digits[((hash >> (60 - 4 * i)) & 0xf) as usize];
        i += 1;
    }
    out
}

macro_rules! asset {
    ($path:literal, $file:literal, $content_type:literal) => {{
        const BODY: &[u8] = include_bytes!(concat!("../../ui/", $file));
        const ETAG: [u8; 18] = etag_bytes(fnv1a(BODY));
        Asset {
            path: $path,
            content_type: $content_type,
            body: BODY,
            etag: match std::str::from_utf8(&ETAG) {
                Ok(etag) => etag,
                Err(_) => panic!("an ETag is ASCII"),
            },
        }
    }};
}

/// Every file of the page, by the path it is served at.
const ASSETS: [Asset; 8] = [
    asset!("/", "index.html", "text/html; charset=utf-8"),
    asset!("/ui/board.css", "board.css", "text/css; charset=utf-8"),
    asset!("/ui/cards.js", "cards.js", "text/javascript; charset=utf-8"),
    asset!("/ui/api.js", "api.js", "text/javascript; charset=utf-8"),
    asset!("/ui/board.js", "board.js", "text/javascript; charset=utf-8"),
    asset!("/ui/file.js", "file.js", "text/javascript; charset=utf-8"),
    asset!("/ui/app.js", "app.js", "text/javascript; charset=utf-8"),
    asset!("/ui/icon.svg", "icon.svg", "image/svg+xml"),
];

/// Nothing from anywhere but this origin, no inline script or style, no frames, no plugins: the
/// page needs none of it, and so an injected tag could do nothing either.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// Whether a request is one for the page: a `GET` or `HEAD` of `/` or of a path under `/ui/`.
pub fn is_page_request(method: &Method, path: &str) -> bool {
    (method == Method::GET || method == Method::HEAD) && (path == "/" || path.starts_with("/ui/"))
}

/// The page as a route of the front.
pub fn route() -> Route {
    Route::new(tower::service_fn(|request: http::Request<Body>| {
        std::future::ready(Ok::<_, Infallible>(answer(&request)))
    }))
}

fn answer(request: &http::Request<Body>) -> http::Response<Body> {
    let Some(asset) = ASSETS.iter().find(|a| a.path == request.uri().path()) else {
        return plain(
            StatusCode::NOT_FOUND,
            "nothing here: the analysis board is at /",
        );
    };
    let fresh = request
        .headers()
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| {
            let tag = tag.trim();
            tag == "*" || tag.trim_start_matches("W/") == asset.etag
        });
    let (status, body) = if fresh {
        (StatusCode::NOT_MODIFIED, Body::empty())
    } else if request.method() == Method::HEAD {
        (StatusCode::OK, Body::empty())
    } else {
        (
            StatusCode::OK,
            Body::new(http_body_util::Full::new(bytes::Bytes::from_static(
                asset.body,
            ))),
        )
    };
    let mut response = http::Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, asset.content_type),
        (header::ETAG, asset.etag),
        (header::CACHE_CONTROL, "no-cache"),
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    if status == StatusCode::OK {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(asset.body.len()));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(method: Method, path: &str, if_none_match: Option<&str>) -> http::Response<Body> {
        let mut builder = http::Request::builder().method(method).uri(path);
        if let Some(tag) = if_none_match {
            builder = builder.header(header::IF_NONE_MATCH, tag);
        }
        answer(&builder.body(Body::empty()).unwrap())
    }

    #[test]
    fn each_file_is_served_with_its_type_and_the_policy() {
        for asset in &ASSETS {
            let response = get(Method::GET, asset.path, None);
            assert_eq!(response.status(), StatusCode::OK, "{}", asset.path);
            let headers = response.headers();
            assert_eq!(headers[header::CONTENT_TYPE], asset.content_type);
            assert_eq!(
                headers[header::CONTENT_SECURITY_POLICY],
                CONTENT_SECURITY_POLICY
            );
            assert_eq!(headers[header::CACHE_CONTROL], "no-cache");
            assert_eq!(
                headers[header::CONTENT_LENGTH],
                asset.body.len().to_string()
            );
            assert!(!asset.body.is_empty(), "{}", asset.path);
        }
        assert_eq!(
            get(Method::GET, "/ui/nothing.js", None).status(),
            StatusCode::NOT_FOUND
        );
    }

    #[test]
    fn a_known_etag_gets_304_and_a_changed_file_a_new_etag() {
        let tag = ASSETS[0].etag;
        assert_eq!(tag.len(), 18);
        assert_eq!(
            get(Method::GET, "/", Some(tag)).status(),
            StatusCode::NOT_MODIFIED
        );
        let weak = format!("\"x\", W/{tag}");
        assert_eq!(
            get(Method::GET, "/", Some(&weak)).status(),
            StatusCode::NOT_MODIFIED
        );
        assert_eq!(
            get(Method::GET, "/", Some("\"0\"")).status(),
            StatusCode::OK
        );
        // Every file has its own tag: they hash different bytes.
        let mut tags: Vec<&str> = ASSETS.iter().map(|a| a.etag).collect();
        tags.sort_unstable();
        tags.dedup();
        assert_eq!(tags.len(), ASSETS.len());
        assert_ne!(etag_bytes(fnv1a(b"a")), etag_bytes(fnv1a(b"b")));
    }

    /// The page's own files name no other host: the policy would block them, and the board must
    /// work where the daemon has no way out.
    #[test]
    fn the_page_names_no_other_host() {
        for asset in &ASSETS {
            let text = String::from_utf8_lossy(asset.body);
            for scheme in ["http://", "https://", "@import"] {
                // The SVG namespace is a name, not a request.
                let text = text.replace("http://www.w3.org/2000/svg", "");
                assert!(!text.contains(scheme), "{} names {scheme}", asset.path);
            }
        }
    }

    #[test]
    fn only_get_and_head_of_the_page_s_paths_are_page_requests() {
        assert!(is_page_request(&Method::GET, "/"));
        assert!(is_page_request(&Method::HEAD, "/ui/board.js"));
        assert!(!is_page_request(&Method::POST, "/"));
        assert!(!is_page_request(&Method::GET, "/v1/solve"));
        assert!(!is_page_request(&Method::GET, "/metrics"));
    }
}
