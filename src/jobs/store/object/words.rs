//! What went wrong with an object, in words: the store's errors (and the codes in their bodies)
//! said as people act on them, each as an `io::Error` of the right kind.

use std::io;

use super::ObjectUrl;

/// What went wrong with `url`, in words, as an `io::Error` of the right kind.
pub fn in_words(e: &object_store::Error, url: &ObjectUrl) -> io::Error {
    let detail = full(e);
    let (kind, said) = match e {
        object_store::Error::NotFound { .. } if detail.contains("NoSuchBucket") => (
            io::ErrorKind::NotFound,
            format!("no such bucket: {}", url.bucket),
        ),
        object_store::Error::NotFound { .. } => (
            io::ErrorKind::NotFound,
            format!("no such key: {} in bucket {}", url.key, url.bucket),
        ),
        // Codes in a body are looked for whatever the error's kind: a bulk delete's refusal comes
        // in a 200 answer, as a Generic error.
        _ if [
            "InvalidAccessKeyId",
            "SignatureDoesNotMatch",
            "InvalidToken",
            "ExpiredToken",
        ]
        .iter()
        .any(|code| detail.contains(code)) =>
        {
            (
                io::ErrorKind::PermissionDenied,
                "the store refused the credentials (check AWS_ACCESS_KEY_ID, \
                 AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN)"
                    .to_string(),
            )
        }
        _ if matches!(
            e,
            object_store::Error::PermissionDenied { .. }
                | object_store::Error::Unauthenticated { .. }
        ) || detail.contains("AccessDenied") =>
        {
            (
                io::ErrorKind::PermissionDenied,
                "access denied (the credentials are good, but not allowed this)".to_string(),
            )
        }
        // Retried for --storage-retry-timeout already (a HEAD's 503 has no body to say SlowDown).
        _ if detail.contains("SlowDown") || detail.contains("503 Service Unavailable") => (
            io::ErrorKind::TimedOut,
            "the store kept throttling (SlowDown, 503), and retrying with backoff for \
             --storage-retry-timeout did not help"
                .to_string(),
        ),
        _ if detail.contains("non-2xx status code: 5") => (
            io::ErrorKind::Other,
            "the store kept failing on its side (5xx), and retrying with backoff for \
             --storage-retry-timeout did not help"
                .to_string(),
        ),
        _ if detail.contains("retries") || detail.contains("error sending request") => (
            io::ErrorKind::TimedOut,
            format!(
                "the store did not answer (AWS_ENDPOINT_URL={}), and retrying with backoff did not \
                 help",
                std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| "unset: AWS".to_string())
            ),
        ),
        _ => (io::ErrorKind::Other, "the store failed".to_string()),
    };
    io::Error::new(kind, format!("{said} ({detail})"))
}

/// An error with its sources, on one line.
fn full(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}
