//! What a status that ended a daemon's call means for the run: a failure of that daemon (another
//! may answer its deals) or a refusal of the run's requests (every daemon would refuse them).

use std::error::Error as _;

use tonic::Code;

use crate::exchange::Unfit;
use crate::proto::reason::Said;

/// Why a lane's call ended early, which decides what the run does about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing could be reached at the address: no connection.
    Unreached(String),
    /// The daemon, or the way to it, is unwell (gone, draining, cut off, or it sent nonsense):
    /// another daemon may well answer its chunks.
    Failed(String),
    /// Something answered in plain HTTP, not gRPC, about itself rather than the requests: a proxy
    /// in front of the daemons with none to pass the call to. Said with the fix; the lane fails
    /// and tries again like any failed daemon, no chunk is blamed, and since something does
    /// answer at the address the run waits `--give-up-after` for it rather than giving up at
    /// once.
    Proxy(String),
    /// The address answers as something other than a patience daemon (another gRPC service on a
    /// reused pod address, a web page): the lane is retired and the run goes on over the others.
    Foreign(String),
    /// The daemon's considered refusal of these requests (too many deals per request, a wrong
    /// token, no analysis support...). Every daemon gets the same requests with the same
    /// credentials, so resending would only spread the refusal: the run stops at once instead.
    Rejected(String),
}

impl Verdict {
    /// What happened, in words, whatever it means for the run.
    pub fn words(&self) -> &str {
        match self {
            Verdict::Unreached(words)
            | Verdict::Failed(words)
            | Verdict::Proxy(words)
            | Verdict::Foreign(words)
            | Verdict::Rejected(words) => words,
        }
    }
}

/// A response that cannot be printed: a malformed one fails its daemon (another may answer the
/// chunk); one showing the daemon lacks what the run asks for stops the run, as every daemon of
/// its version would answer the same.
impl From<Unfit> for Verdict {
    fn from(unfit: Unfit) -> Verdict {
        match unfit {
            Unfit::Malformed(words) => Verdict::Failed(words),
            Unfit::Unsupported(words) => Verdict::Rejected(words),
        }
    }
}

/// The canonical name of a gRPC status code, as other tools and the server's logs print it.
pub fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// Sorts a status that ended a daemon's call, by the reason in its details
/// ([`crate::proto::reason`]) when it has one, else (a daemon older than the details, a proxy) by its
/// code and words.
pub fn verdict(status: &tonic::Status) -> Verdict {
    if let Some(verdict) = http_answer(status) {
        return verdict;
    }
    let text = format!(
        "{}: {}",
        code_name(status.code()),
        own_words(status.message())
    );
    match Said::of(status) {
        Some(said) => by_reason(&said.reason, text),
        None => by_code(status, text),
    }
}

/// The daemon said why. Load, drain, stall and deadline are about that daemon at that moment:
/// another daemon (or it, later) takes the chunk. The rest is about the requests themselves.
fn by_reason(reason: &str, text: String) -> Verdict {
    let hint = match reason {
        "MAX_OPEN_STREAMS"
        | "MAX_OPEN_UNARY"
        | "MAX_OPEN_WATCHES"
        | "MAX_DEALS_IN_FLIGHT"
        | "DRAINING"
        | "DRAIN_TIMEOUT"
        | "DRAIN_CUT"
        | "STALL_TIMEOUT"
        | "DEADLINE_EXCEEDED"
        | "INTERNAL" => return Verdict::Failed(text),
        "MAX_DEALS_PER_REQUEST" => "lower --batch to at most the daemon's --max-deals-per-request",
        "MAX_MESSAGE_BYTES" => "the request messages are too large for the daemon: lower --batch",
        "UNAUTHENTICATED" => "give the daemon's token with --auth-token-file",
        _ => "check the client's flags against the daemon's",
    };
    Verdict::Rejected(format!("rejected the requests with {text}; {hint}"))
}

/// For a status without our details. Codes about the daemon's or the connection's health fail
/// over, and so does any status tonic made up from a transport error (it carries the error as its
/// source), whatever its code: an HTTP/2 reset is not the daemon's opinion of our requests.
/// `INTERNAL` and `UNKNOWN` fail over too: tonic also reports a stream cut short by a proxy as
/// `UNKNOWN`, without a source. A daemon older than the details names the flag of a busy cap in
/// its words, which is all there is to go by then.
fn by_code(status: &tonic::Status, text: String) -> Verdict {
    let code = status.code();
    let unwell = matches!(
        code,
        Code::Unavailable
            | Code::Cancelled
            | Code::Aborted
            | Code::DeadlineExceeded
            | Code::Internal
            | Code::Unknown
    );
    let busy = code == Code::ResourceExhausted
        && [
            "--max-open-streams",
            "--max-open-unary",
            "--max-deals-in-flight",
        ]
        .iter()
        .any(|flag| status.message().contains(flag));
    if unwell || busy || status.source().is_some() {
        return Verdict::Failed(text);
    }
    // A patience daemon puts its reason in every refusal: an unknown method without one is
    // another gRPC service (or a daemon older than this client).
    if code == Code::Unimplemented {
        return Verdict::Foreign(format!(
            "it answered {text}: it is not a patience daemon (another gRPC service at the \
             address?), or one older than this client"
        ));
    }
    let hint = match code {
        Code::InvalidArgument if status.message().contains("per request") => {
            "lower --batch to at most the daemon's --max-deals-per-request"
        }
        Code::ResourceExhausted | Code::OutOfRange => {
            "the request messages are too large for the daemon: lower --batch"
        }
        // The daemon's message says what it wants on the wire; this says which flag sends it.
        Code::Unauthenticated => "give the daemon's token with --auth-token-file",
        Code::PermissionDenied => {
            "check the token (--auth-token-file) and the client certificate (--tls-cert)"
        }
        _ => "check the client's flags against the daemon's",
    };
    Verdict::Rejected(format!("rejected the requests with {text}; {hint}"))
}

/// A call answered in HTTP rather than gRPC: tonic says so as a status "mapped from HTTP status
/// code N" (no body), or, when the body is a page, as "invalid compression flag" (its first
/// byte, `<` being 60) "while receiving response with status: N ...". Said as what it is, with
/// the fix.
fn http_answer(status: &tonic::Status) -> Option<Verdict> {
    let message = status.message();
    let code: u16 = ["mapped from HTTP status code ", "response with status: "]
        .iter()
        .find_map(|sign| {
            let at = message.find(sign)? + sign.len();
            message.get(at..at + 3)?.parse().ok()
        })?;
    let name = http::StatusCode::from_u16(code)
        .ok()
        .and_then(|c| c.canonical_reason())
        .map_or(String::new(), |r| format!(" {r}"));
    let said = format!("HTTP {code}{name}, not gRPC");
    Some(match code {
        200 | 404 => Verdict::Foreign(format!(
            "it answered {said}: not a patience daemon (a web server, or a proxy with no route \
             to patience.v1)"
        )),
        // The chunk is what the proxy refuses: a failure like any other, so that a chunk that
        // every call fails on ends the run rather than being resent for ever.
        413 => Verdict::Failed(format!(
            "a proxy answered {said}: a stream's body passed its size limit; raise it (nginx: \
             `client_max_body_size 0;`) or lower --stream-max-bytes"
        )),
        502..=504 => Verdict::Proxy(format!(
            "a proxy answered {said}: it has no daemon to pass the call to (are its upstreams \
             up, and do they speak HTTP/2: nginx `grpc_pass`, haproxy `proto h2`?)"
        )),
        _ => Verdict::Proxy(format!(
            "it answered {said} (a proxy, or another server, in front of the daemon)"
        )),
    })
}

/// What a failure most likely means when it is a TLS mismatch, said in words, for a lane whose
/// address has `scheme`. tonic reports plain HTTP/2 to a TLS daemon as an h2 protocol error, and a
/// mutual-TLS daemon's refusal of a client without a certificate as a cancelled call.
pub fn with_hint(reason: String, scheme: Option<&str>) -> String {
    // Only a call that could not be opened: a mismatch never gets as far as an answer.
    let mismatch = reason.starts_with("the stream was refused")
        && ["h2 protocol error", "transport error", "CANCELLED"]
            .iter()
            .any(|sign| reason.contains(sign));
    let hint = match scheme {
        Some("http") if mismatch => {
            "; if the daemon serves TLS, use an https:// address with --tls-ca"
        }
        Some("https") if mismatch => {
            "; if the daemon requires mutual TLS (it ends calls from clients without a \
             certificate), give --tls-cert and --tls-key"
        }
        _ => "",
    };
    reason + hint
}

/// A daemon's message without its advice to resend from a stream index: the client resends by
/// itself, and the index counts the call's deals, not the lines of any file.
fn own_words(message: &str) -> &str {
    message
        .find("; results before index")
        .map_or(message, |cut| &message[..cut])
}

/// An error and its sources, each once: transport errors repeat their source's message.
pub fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(e) = next {
        let text = in_words(e.to_string());
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = e.source();
    }
    parts.join(": ")
}

/// rustls's certificate errors print as Rust debug output; the one a hand-made certificate most
/// often hits is said in words.
fn in_words(text: String) -> String {
    if text.contains("UnsupportedCertVersion") {
        return "a certificate is not X.509 version 3 (it has no v3 extensions, which TLS here \
                requires): issue it again with extensions such as subjectAltName"
            .to_string();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::reason::Reason;
    use std::sync::Arc;

    #[test]
    fn tls_mismatches_get_hints_in_words() {
        let refused = |s: &str| format!("the stream was refused: {s}");
        let plain = with_hint(refused("INTERNAL: h2 protocol error"), Some("http"));
        assert!(
            plain.contains("https://") && plain.contains("--tls-ca"),
            "{plain}"
        );
        let mutual = with_hint(refused("CANCELLED: operation was canceled"), Some("https"));
        assert!(mutual.contains("--tls-cert"), "{mutual}");
        // A call that was open and then cancelled is not a mismatch.
        let midway = with_hint("CANCELLED: operation was canceled".into(), Some("https"));
        assert!(!midway.contains("--tls-cert"), "{midway}");
        let other = with_hint(refused("UNAVAILABLE: draining"), Some("https"));
        assert!(!other.contains("TLS"), "{other}");
        let v1 = std::io::Error::other(
            "invalid peer certificate: Other(OtherError(UnsupportedCertVersion))",
        );
        let said = causes(&v1);
        assert!(
            said.contains("X.509 version 3") && !said.contains("Other("),
            "{said}"
        );
    }

    fn rejected(status: &tonic::Status) -> Option<String> {
        match verdict(status) {
            Verdict::Rejected(reason) => Some(reason),
            _ => None,
        }
    }

    /// Proxies' answers as tonic reports them (its own words, from tonic 0.14's decoder and
    /// status inference): said as HTTP with the fix, failed over or retired, never a refusal.
    #[test]
    fn an_http_answer_is_said_as_one_with_its_fix() {
        let page = |code: &str| {
            tonic::Status::internal(format!(
                "protocol error: received message with invalid compression flag: 60 (valid \
                 flags are 0 and 1) while receiving response with status: {code}"
            ))
        };
        let Verdict::Failed(said) = verdict(&page("413 Payload Too Large")) else {
            panic!("413 is a proxy's limit, which the chunk hits");
        };
        assert!(
            said.contains("HTTP 413") && said.contains("client_max_body_size 0"),
            "{said}"
        );
        let Verdict::Proxy(said) = verdict(&page("502 Bad Gateway")) else {
            panic!("502 is a proxy without upstreams");
        };
        assert!(
            said.contains("HTTP 502 Bad Gateway") && said.contains("upstreams"),
            "{said}"
        );
        let empty = tonic::Status::unavailable(
            "grpc-status header missing, mapped from HTTP status code 503",
        );
        assert!(matches!(verdict(&empty), Verdict::Proxy(s) if s.contains("HTTP 503")));
        assert!(matches!(verdict(&page("200 OK")), Verdict::Foreign(s) if s.contains("HTTP 200")));
        let no_route = tonic::Status::unimplemented(
            "grpc-status header missing, mapped from HTTP status code 404",
        );
        assert!(matches!(verdict(&no_route), Verdict::Foreign(s) if s.contains("HTTP 404")));
    }

    #[test]
    fn an_unknown_method_without_our_reason_is_a_foreign_service() {
        let other = tonic::Status::unimplemented("unknown service patience.v1.Solver");
        assert!(
            matches!(verdict(&other), Verdict::Foreign(s) if s.contains("not a patience daemon")),
        );
    }

    /// With details, the reason decides, whatever the words: a busy daemon whose message names no
    /// flag still fails over, and a refusal with a health-like code still stops the run.
    #[test]
    fn the_reason_in_the_details_decides_not_the_words() {
        let busy = Reason::MaxOpenCalls {
            flag: "--max-open-streams",
            limit: 1,
        };
        let mut worded_otherwise = busy.status();
        assert!(rejected(&worded_otherwise).is_none());
        worded_otherwise = tonic::Status::with_details(
            worded_otherwise.code(),
            "busy",
            worded_otherwise.details().to_vec().into(),
        );
        assert!(
            rejected(&worded_otherwise).is_none(),
            "{worded_otherwise:?}"
        );
        for failed in [
            Reason::MaxDealsInFlight { limit: 1 },
            Reason::Draining,
            Reason::DrainTimeout {
                resume_index: 3,
                what: "deals",
            },
            Reason::StallTimeout {
                resume_index: 3,
                after: std::time::Duration::from_secs(1),
                what: "deals",
            },
        ] {
            assert!(rejected(&failed.status()).is_none(), "{failed:?}");
        }
        let batch = Reason::MaxDealsPerRequest {
            items: 11,
            limit: 10,
            what: "deals",
        };
        let reason = rejected(&batch.status()).unwrap_or_default();
        assert!(reason.contains("lower --batch"), "{reason}");
        let token = Reason::Unauthenticated { token_given: false };
        let reason = rejected(&token.status()).unwrap_or_default();
        assert!(reason.contains("--auth-token-file"), "{reason}");
        let too_large = Reason::MaxMessageBytes { limit: 10 };
        assert!(rejected(&too_large.status()).is_some());
    }

    #[test]
    fn statuses_about_the_daemons_health_fail_over_and_refusals_stop() {
        for status in [
            tonic::Status::unavailable("draining"),
            tonic::Status::cancelled("gone"),
            tonic::Status::aborted("aborted"),
            tonic::Status::deadline_exceeded("late"),
            tonic::Status::internal("h2 protocol error"),
            tonic::Status::unknown("missing grpc-status trailer"),
        ] {
            assert!(rejected(&status).is_none(), "{status:?}");
        }
        // Made by tonic from a transport error: not the daemon's opinion of the requests.
        let mut calm = tonic::Status::resource_exhausted("h2 protocol error: enhance your calm");
        calm.set_source(Arc::new(std::io::Error::other("stream reset")));
        assert!(rejected(&calm).is_none());
        // A daemon at its caps is busy: fail over, do not stop the run.
        let busy = tonic::Status::resource_exhausted(
            "the server has its limit of 1024 such calls open (server flag --max-open-streams)",
        );
        assert!(rejected(&busy).is_none());

        let batch = tonic::Status::invalid_argument(
            "the request has 50 deals; the limit is 10 deals per request",
        );
        let reason = rejected(&batch).unwrap_or_default();
        assert!(reason.contains("INVALID_ARGUMENT") && reason.contains("lower --batch"));
        let token = tonic::Status::unauthenticated("this server requires a token");
        let reason = rejected(&token).unwrap_or_default();
        assert!(reason.contains("UNAUTHENTICATED") && reason.contains("--auth-token-file"));
        let drained = tonic::Status::unavailable(
            "the server is shutting down; results before index 40 were sent, resend the deals \
             from index 40 on",
        );
        assert_eq!(
            verdict(&drained),
            Verdict::Failed("UNAVAILABLE: the server is shutting down".into())
        );
        for status in [
            tonic::Status::resource_exhausted("too large"),
            tonic::Status::permission_denied("no"),
        ] {
            assert!(rejected(&status).is_some(), "{status:?}");
        }
    }
}
