//! Bearer-token authentication for the solving services (`Solver`, `RpsService`).
//!
//! With `--auth-token-file`, every Solver and RpsService call must carry
//! `authorization: Bearer <token>`. The server's call layer (`server/call.rs`) checks it first,
//! before admission and before any message is read, so a refused call takes no cap and costs no
//! parsing and no solver time. Health and reflection need none: probes stay open.

pub mod tenants;
pub mod x509;

use std::fmt;
use std::path::Path;
use std::sync::Arc;

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

/// Who a call is from: the tenant whose token it carries (`serve --tenants`), or
/// [`Caller::DEFAULT`] on a daemon with one token or none. The call layer puts it in the
/// request's extensions, where the jobs service finds whose jobs a call may see.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Caller(Arc<str>);

impl Caller {
    /// The one tenant of a daemon without `--tenants`.
    pub const DEFAULT: &str = "default";

    pub fn new(tenant: &str) -> Caller {
        Caller(tenant.into())
    }

    /// The tenant's name, as the file gives it.
    pub fn tenant(&self) -> &str {
        &self.0
    }
}

impl Default for Caller {
    fn default() -> Caller {
        Caller::new(Caller::DEFAULT)
    }
}

/// The server's check: with tokens, require `authorization: Bearer <token>` with one of them,
/// which says who the caller is; without, let every call through as [`Caller::DEFAULT`].
/// Refusals are counted and logged (rate-limited), and calls let through counted by tenant,
/// through `metrics`.
#[derive(Clone, Debug)]
pub struct RequireBearer {
    /// Each token itself, without its scheme, and whose it is; empty: no token needed.
    expected: Vec<(Vec<u8>, Caller)>,
    metrics: crate::metrics::Metrics,
}

impl RequireBearer {
    /// One token (`--auth-token-file`), or none: every caller is [`Caller::DEFAULT`].
    pub fn new(token: Option<&Secret>, metrics: crate::metrics::Metrics) -> RequireBearer {
        let tokens = token.map(|t| (t.clone(), Caller::default()));
        RequireBearer::of(tokens.into_iter().collect(), metrics)
    }

    /// Each tenant's token (`--tenants`).
    pub fn of(tokens: Vec<(Secret, Caller)>, metrics: crate::metrics::Metrics) -> RequireBearer {
        RequireBearer {
            expected: tokens
                .into_iter()
                .map(|(token, caller)| (token.expose().as_bytes().to_vec(), caller))
                .collect(),
            metrics,
        }
    }

    /// Who an `authorization` value (its bytes) is from, if it carries one of the server's
    /// tokens: the scheme `Bearer` in any case (RFC 9110 makes schemes case-insensitive; RFC 6750
    /// names it), one or more spaces, the token. The token is compared with every tenant's, each
    /// in time independent of where the first difference is (its length may show).
    pub fn admits(&self, authorization: &[u8]) -> Result<Caller, Reason> {
        if self.expected.is_empty() {
            return Ok(Caller::default());
        }
        let token_given = !authorization.is_empty();
        let token = authorization
            .split_at_checked(6)
            .filter(|(scheme, rest)| {
                scheme.eq_ignore_ascii_case(b"bearer") && rest.first() == Some(&b' ')
            })
            .map(|(_, rest)| rest.trim_ascii_start());
        let mut found = None;
        if let Some(token) = token {
            for (expected, caller) in &self.expected {
                if bool::from(token.ct_eq(expected)) {
                    found = Some(caller.clone());
                }
            }
        }
        found.ok_or(Reason::Unauthenticated { token_given })
    }

    /// The check of one call of `method` (`package.Service/Method`): its `authorization` header
    /// against the tokens. A call let through is counted for its tenant; a refusal is counted and
    /// logged, with the peer, and is the status the call ends with.
    pub fn check(
        &self,
        authorization: Option<&http::HeaderValue>,
        peer: Option<std::net::SocketAddr>,
        method: &str,
    ) -> Result<Caller, Status> {
        let given = authorization.map(|v| v.as_bytes()).unwrap_or_default();
        match self.admits(given) {
            Ok(caller) => {
                self.metrics.tenant_call(caller.tenant(), method);
                Ok(caller)
            }
            Err(reason) => {
                let what = if given.is_empty() {
                    "no token"
                } else {
                    "a wrong token"
                };
                self.metrics.call_refused("unauthenticated", peer, what);
                Err(reason.status())
            }
        }
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
            assert_eq!(
                check.admits(good.as_bytes()),
                Ok(Caller::default()),
                "{good}"
            );
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
        assert_eq!(open.admits(b""), Ok(Caller::default()));
    }

    /// With tenants, a token says whose the call is; another tenant's token never passes for
    /// the first's, and a token no tenant has passes for none.
    #[test]
    fn each_tenant_s_token_names_that_tenant() {
        let check = RequireBearer::of(
            vec![
                (Secret::new("alice-token"), Caller::new("alice")),
                (Secret::new("bob-token"), Caller::new("bob")),
            ],
            crate::metrics::Metrics::new(),
        );
        assert_eq!(
            check.admits(b"Bearer alice-token"),
            Ok(Caller::new("alice"))
        );
        assert_eq!(check.admits(b"bearer bob-token"), Ok(Caller::new("bob")));
        for bad in ["Bearer alice-toke", "Bearer carol-token", ""] {
            assert!(check.admits(bad.as_bytes()).is_err(), "{bad}");
        }
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
