//! Bearer-token authentication for the solving services (`Solver`, `RpsService`).
//!
//! With `--auth-token-file`, every Solver and RpsService call must carry
//! `authorization: Bearer <token>`. The server's call layer (`server/call.rs`) checks it first,
//! before admission and before any message is read, so a refused call takes no cap and costs no
//! parsing and no solver time. Health and reflection need none: probes stay open.

pub mod x509;

use std::fmt;
use std::path::Path;

use crate::proto::reason::Reason;
use subtle::ConstantTimeEq as _;
use tonic::metadata::MetadataValue;
use tonic::{Request, Status};

/// A secret that never shows in `Debug` output, and so never in a log line.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret itself, for the one place that must send or compare it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Why a token file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("cannot read the token file {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the token file {path} is empty; put the token on its first line")]
    Empty { path: String },
    #[error("the token in {path} has characters that cannot go in an HTTP header")]
    NotAHeader { path: String },
}

/// Reads a token: the file's content without surrounding whitespace (a trailing newline is
/// common). It must be usable in an HTTP header.
pub fn read_token_file(path: &Path) -> Result<Secret, TokenFileError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Read {
        path: shown.clone(),
        source,
    })?;
    let token = text.trim();
    if token.is_empty() {
        return Err(TokenFileError::Empty { path: shown });
    }
    if MetadataValue::try_from(format!("Bearer {token}")).is_err() {
        return Err(TokenFileError::NotAHeader { path: shown });
    }
    Ok(Secret::new(token))
}

/// The server's check: with a token, require `authorization: Bearer <token>`; without, let every
/// call through. Refusals are counted and logged (rate-limited) through `metrics`.
#[derive(Clone, Debug)]
pub struct RequireBearer {
    /// The token itself, without its scheme.
    expected: Option<Vec<u8>>,
    metrics: crate::metrics::Metrics,
}

impl RequireBearer {
    pub fn new(token: Option<&Secret>, metrics: crate::metrics::Metrics) -> RequireBearer {
        RequireBearer {
            expected: token.map(|t| t.expose().as_bytes().to_vec()),
            metrics,
        }
    }

    /// Whether an `authorization` value (its bytes) carries the server's token: the scheme
    /// `Bearer` in any case (RFC 9110 makes schemes case-insensitive; RFC 6750 names it), one or
    /// more spaces, the token. The token is compared in time independent of where the first
    /// difference is (its length may show).
    pub fn admits(&self, authorization: &[u8]) -> Result<(), Reason> {
        let Some(expected) = &self.expected else {
            return Ok(());
        };
        let token_given = !authorization.is_empty();
        let token = authorization
            .split_at_checked(6)
            .filter(|(scheme, rest)| {
                scheme.eq_ignore_ascii_case(b"bearer") && rest.first() == Some(&b' ')
            })
            .map(|(_, rest)| rest.trim_ascii_start());
        match token {
            Some(token) if bool::from(token.ct_eq(expected)) => Ok(()),
            _ => Err(Reason::Unauthenticated { token_given }),
        }
    }
}

impl RequireBearer {
    /// The check of one call: its `authorization` header against the token; a refusal is counted
    /// and logged, with the peer, and is the status the call ends with.
    pub fn check(
        &self,
        authorization: Option<&http::HeaderValue>,
        peer: Option<std::net::SocketAddr>,
    ) -> Result<(), Status> {
        let given = authorization.map(|v| v.as_bytes()).unwrap_or_default();
        self.admits(given).map_err(|reason| {
            let what = if given.is_empty() {
                "no token"
            } else {
                "a wrong token"
            };
            self.metrics.call_refused("unauthenticated", peer, what);
            reason.status()
        })
    }
}

/// The client's side: adds the bearer token to every call.
#[derive(Clone, Debug)]
pub struct AddBearer {
    value: Option<MetadataValue<tonic::metadata::Ascii>>,
}

impl AddBearer {
    /// Fails only for a token that cannot be a header, which `read_token_file` already refuses.
    pub fn new(token: Option<&Secret>) -> Result<AddBearer, Status> {
        let value = token
            .map(|t| MetadataValue::try_from(format!("Bearer {}", t.expose())))
            .transpose()
            .map_err(|_| Status::invalid_argument("the token cannot be sent as a header"))?;
        Ok(AddBearer { value })
    }
}

impl tonic::service::Interceptor for AddBearer {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(value) = &self.value {
            let mut value = value.clone();
            value.set_sensitive(true);
            request.metadata_mut().insert("authorization", value);
        }
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    /// The scheme is case-insensitive (RFC 9110, RFC 6750): `bearer T` is as good as `Bearer T`;
    /// the token is not, and nothing but the `Bearer` scheme is.
    #[test]
    fn the_bearer_scheme_is_taken_in_any_case_and_the_token_exactly() {
        let secret = Secret::new("s3cret");
        let check = RequireBearer::new(Some(&secret), crate::metrics::Metrics::new());
        for good in [
            "Bearer s3cret",
            "bearer s3cret",
            "BEARER s3cret",
            "bEaReR   s3cret",
        ] {
            assert_eq!(check.admits(good.as_bytes()), Ok(()), "{good}");
        }
        for bad in [
            "Bearer S3CRET",
            "Bearers3cret",
            "Basic s3cret",
            "Bearer s3cre",
            "s3cret",
        ] {
            assert_eq!(
                check.admits(bad.as_bytes()),
                Err(Reason::Unauthenticated { token_given: true }),
                "{bad}"
            );
        }
        assert_eq!(
            check.admits(b""),
            Err(Reason::Unauthenticated { token_given: false })
        );
        let open = RequireBearer::new(None, crate::metrics::Metrics::new());
        assert_eq!(open.admits(b""), Ok(()));
    }

    /// Rough edge 2: the operating system's words are the source; the message must not repeat
    /// them.
    #[test]
    fn an_unreadable_token_file_says_its_cause_once() {
        let Err(e) = read_token_file(Path::new("/nonexistent/dir/token")) else {
            panic!("read a token from a file that does not exist");
        };
        let cause = e.source().map(ToString::to_string).unwrap_or_default();
        assert!(!cause.is_empty(), "{e:?}");
        assert!(!e.to_string().contains(&cause), "{e}");
        assert!(e.to_string().contains("/nonexistent/dir/token"), "{e}");
    }
}
