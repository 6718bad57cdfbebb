//! Every error status the daemon sends, made in one place, each with machine-readable details: a
//! `google.rpc.Status` in `grpc-status-details-bin` holding an `ErrorInfo` whose `reason` names
//! the cause (a stable UPPER_SNAKE name, domain `patience.v1`) and whose metadata says what a
//! client needs to act (`flag`, `limit`, `resume_index`); a `RetryInfo` where waiting and retrying
//! is right; `BadRequest` field violations for a malformed request.
//!
//! So a client decides what to do from the reason, never from the message text, which is for
//! people and may change. `patience client` does (`client/status.rs`); docs/api.md lists every
//! reason and the proto documents them.

use std::collections::HashMap;
use std::time::Duration;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt as _};

/// The `ErrorInfo.domain` of every reason.
pub const DOMAIN: &str = "patience.v1";

/// How long a client refused for load should wait before it retries (`RetryInfo`).
pub const RETRY_AFTER_LOAD: Duration = Duration::from_secs(1);

/// Every reason's name, in the order the documents list them (README.md, docs/api.md and the
/// proto, which the tests hold to this list).
pub const NAMES: [&str; 20] = [
    "MAX_MESSAGE_BYTES",
    "MAX_DEALS_PER_REQUEST",
    "MAX_OPEN_STREAMS",
    "MAX_OPEN_UNARY",
    "MAX_OPEN_WATCHES",
    "MAX_DEALS_IN_FLIGHT",
    "STALL_TIMEOUT",
    "DRAINING",
    "DRAIN_TIMEOUT",
    "DRAIN_CUT",
    "DEADLINE_EXCEEDED",
    "BAD_GRPC_TIMEOUT",
    "UNAUTHENTICATED",
    "MALFORMED_MESSAGE",
    "UNSUPPORTED_ENCODING",
    "INTERNAL",
    "JOB_INVALID",
    "JOB_PRECONDITION",
    "JOB_NOT_FOUND",
    "MAX_QUEUED_JOBS",
];

/// Why a call failed or was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// A request message over `--max-message-bytes` (its length, compressed or not).
    MaxMessageBytes { limit: usize },
    /// More deals (or rps cases) in one request than `--max-deals-per-request`.
    MaxDealsPerRequest {
        items: usize,
        limit: usize,
        what: &'static str,
    },
    /// `--max-open-streams`, `--max-open-unary` or `--max-open-watches` calls already open.
    MaxOpenCalls { flag: &'static str, limit: usize },
    /// The server holds `--max-deals-in-flight` unanswered deals.
    MaxDealsInFlight { limit: usize },
    /// Shutdown has begun: new calls go to another replica.
    Draining,
    /// The drain timeout ended the call; results before `resume_index` were sent.
    DrainTimeout {
        resume_index: u64,
        what: &'static str,
    },
    /// Shutdown stopped reading the stream (`--drain-cut-after`).
    DrainCut {
        resume_index: u64,
        what: &'static str,
    },
    /// The client took none of its results for `--stall-timeout`.
    StallTimeout {
        resume_index: u64,
        after: Duration,
        what: &'static str,
    },
    /// The call's deadline passed; for a stream, results before `resume_index` were sent.
    DeadlineExceeded { resume_index: Option<u64> },
    /// The `grpc-timeout` header cannot be read.
    BadTimeout,
    /// The call needs `authorization: Bearer <token>` with the server's token.
    Unauthenticated { token_given: bool },
    /// A request message that is not a valid message of the call (bad protobuf, a bad
    /// compression flag, a compressed message without a `grpc-encoding`).
    MalformedMessage { detail: String },
    /// A request compressed with an encoding the server does not take.
    UnsupportedEncoding { encoding: String },
    /// The server's own machinery failed.
    Internal { detail: String },
    /// A job spec that no daemon would run (`field` says which part).
    JobInvalid { field: String, detail: String },
    /// A job this daemon cannot start now: an input it cannot read, an id taken by another spec.
    JobPrecondition { field: String, detail: String },
    /// No job of that id.
    JobNotFound { id: String },
    /// `--max-queued-jobs` jobs already wait for a place, or the caller's tenant's own
    /// `max_queued_jobs` of its jobs (`serve --tenants`).
    MaxQueuedJobs {
        limit: usize,
        tenant: Option<String>,
    },
}

impl Reason {
    /// The stable name a client decides by.
    pub fn name(&self) -> &'static str {
        match self {
            Reason::MaxMessageBytes { .. } => "MAX_MESSAGE_BYTES",
            Reason::MaxDealsPerRequest { .. } => "MAX_DEALS_PER_REQUEST",
            Reason::MaxOpenCalls { flag, .. } => match *flag {
                "--max-open-streams" => "MAX_OPEN_STREAMS",
                "--max-open-unary" => "MAX_OPEN_UNARY",
                _ => "MAX_OPEN_WATCHES",
            },
            Reason::MaxDealsInFlight { .. } => "MAX_DEALS_IN_FLIGHT",
            Reason::Draining => "DRAINING",
            Reason::DrainTimeout { .. } => "DRAIN_TIMEOUT",
            Reason::DrainCut { .. } => "DRAIN_CUT",
            Reason::StallTimeout { .. } => "STALL_TIMEOUT",
            Reason::DeadlineExceeded { .. } => "DEADLINE_EXCEEDED",
            Reason::BadTimeout => "BAD_GRPC_TIMEOUT",
            Reason::Unauthenticated { .. } => "UNAUTHENTICATED",
            Reason::MalformedMessage { .. } => "MALFORMED_MESSAGE",
            Reason::UnsupportedEncoding { .. } => "UNSUPPORTED_ENCODING",
            Reason::Internal { .. } => "INTERNAL",
            Reason::JobInvalid { .. } => "JOB_INVALID",
            Reason::JobPrecondition { .. } => "JOB_PRECONDITION",
            Reason::JobNotFound { .. } => "JOB_NOT_FOUND",
            Reason::MaxQueuedJobs { .. } => "MAX_QUEUED_JOBS",
        }
    }

    /// The gRPC code, as gRPC users expect it for the cause.
    pub fn code(&self) -> Code {
        match self {
            Reason::MaxMessageBytes { .. }
            | Reason::MaxOpenCalls { .. }
            | Reason::MaxDealsInFlight { .. }
            | Reason::StallTimeout { .. }
            | Reason::MaxQueuedJobs { .. } => Code::ResourceExhausted,
            Reason::MaxDealsPerRequest { .. }
            | Reason::BadTimeout
            | Reason::MalformedMessage { .. }
            | Reason::JobInvalid { .. } => Code::InvalidArgument,
            Reason::JobPrecondition { .. } => Code::FailedPrecondition,
            Reason::JobNotFound { .. } => Code::NotFound,
            Reason::Draining | Reason::DrainTimeout { .. } | Reason::DrainCut { .. } => {
                Code::Unavailable
            }
            Reason::DeadlineExceeded { .. } => Code::DeadlineExceeded,
            Reason::Unauthenticated { .. } => Code::Unauthenticated,
            Reason::UnsupportedEncoding { .. } => Code::Unimplemented,
            Reason::Internal { .. } => Code::Internal,
        }
    }

    /// The message, for people.
    pub fn message(&self) -> String {
        let resend = |resume: u64, what: &str| {
            format!(
                "results before index {resume} were sent, resend the {what} from index {resume} on"
            )
        };
        match self {
            Reason::MaxMessageBytes { limit } => format!(
                "the request message is larger than the limit of {limit} bytes (server flag \
                 --max-message-bytes); send fewer deals per request"
            ),
            Reason::MaxDealsPerRequest { items, limit, what } => format!(
                "the request has {items} {what}; the limit is {limit} {what} per request (server \
                 flag --max-deals-per-request); split it into several requests"
            ),
            Reason::MaxOpenCalls { flag, limit } => format!(
                "the server has its limit of {limit} such calls open (server flag {flag}); retry \
                 later, or on another replica"
            ),
            Reason::MaxDealsInFlight { limit } => format!(
                "the server holds its limit of {limit} unanswered deals (server flag \
                 --max-deals-in-flight); retry later, or on another replica"
            ),
            Reason::Draining => "the server is shutting down; retry on another replica".into(),
            Reason::DrainTimeout { resume_index, what } => format!(
                "the server is shutting down; {}",
                resend(*resume_index, what)
            ),
            Reason::DrainCut { resume_index, what } => format!(
                "the server is shutting down and stopped reading this stream; {} (to another \
                 replica)",
                resend(*resume_index, what)
            ),
            Reason::StallTimeout {
                resume_index,
                after,
                what,
            } => format!(
                "the client took none of its results for {}s (server flag --stall-timeout), so \
                 the server dropped the rest; {}",
                after.as_secs_f64(),
                resend(*resume_index, what)
            ),
            Reason::DeadlineExceeded { resume_index: None } => {
                "the call's deadline passed".to_string()
            }
            Reason::DeadlineExceeded {
                resume_index: Some(resume),
            } => format!("the call's deadline passed; results before index {resume} were sent"),
            Reason::BadTimeout => "grpc-timeout is not <digits><H|M|S|m|u|n>".to_string(),
            Reason::Unauthenticated { token_given: false } => {
                "this server requires `authorization: Bearer <token>` metadata, and the call has \
                 none"
                    .to_string()
            }
            Reason::Unauthenticated { token_given: true } => {
                "the call's `authorization` metadata is not `Bearer` with this server's token"
                    .to_string()
            }
            Reason::MalformedMessage { detail } => {
                format!("the request message cannot be read: {detail}")
            }
            Reason::UnsupportedEncoding { encoding } => format!(
                "the request is compressed with {encoding:?}; this server takes identity, gzip \
                 and zstd"
            ),
            Reason::Internal { detail } => format!("internal error: {detail}"),
            Reason::JobInvalid { field, detail } | Reason::JobPrecondition { field, detail } => {
                format!("{field}: {detail}")
            }
            Reason::JobNotFound { id } => format!("no job {id:?} on this daemon"),
            Reason::MaxQueuedJobs {
                limit,
                tenant: None,
            } => format!(
                "{limit} jobs already wait for a place (server flag --max-queued-jobs); retry \
                 later, once some have started"
            ),
            Reason::MaxQueuedJobs {
                limit,
                tenant: Some(tenant),
            } => format!(
                "{limit} of tenant {tenant}'s jobs already wait for a place (its max_queued_jobs \
                 in the server's --tenants file); retry later, once some have started"
            ),
        }
    }

    /// What a client needs to act, beside the reason: the flag of a limit and its value, the
    /// index to resume from.
    fn metadata(&self) -> HashMap<String, String> {
        let mut m = HashMap::new();
        let mut put = |k: &str, v: String| {
            m.insert(k.to_string(), v);
        };
        match self {
            Reason::MaxMessageBytes { limit } => {
                put("flag", "--max-message-bytes".into());
                put("limit", limit.to_string());
            }
            Reason::MaxDealsPerRequest { items, limit, .. } => {
                put("flag", "--max-deals-per-request".into());
                put("limit", limit.to_string());
                put("items", items.to_string());
            }
            Reason::MaxOpenCalls { flag, limit } => {
                put("flag", (*flag).to_string());
                put("limit", limit.to_string());
            }
            Reason::MaxQueuedJobs { limit, tenant } => {
                put("flag", "--max-queued-jobs".into());
                put("limit", limit.to_string());
                if let Some(tenant) = tenant {
                    put("tenant", tenant.clone());
                }
            }
            Reason::MaxDealsInFlight { limit } => {
                put("flag", "--max-deals-in-flight".into());
                put("limit", limit.to_string());
            }
            Reason::DrainTimeout { resume_index, .. } => {
                put("flag", "--drain-timeout".into());
                put("resume_index", resume_index.to_string());
            }
            Reason::DrainCut { resume_index, .. } => {
                put("flag", "--drain-cut-after".into());
                put("resume_index", resume_index.to_string());
            }
            Reason::StallTimeout {
                resume_index,
                after,
                ..
            } => {
                put("flag", "--stall-timeout".into());
                put("limit", format!("{}s", after.as_secs_f64()));
                put("resume_index", resume_index.to_string());
            }
            Reason::DeadlineExceeded {
                resume_index: Some(resume),
            } => put("resume_index", resume.to_string()),
            Reason::UnsupportedEncoding { encoding } => put("encoding", encoding.clone()),
            _ => {}
        }
        m
    }

    /// The details: `ErrorInfo` always; `RetryInfo` where retrying (here after a while, or at
    /// once on another replica) is right; `BadRequest` for a request that is malformed.
    pub fn details(&self) -> ErrorDetails {
        let mut details = ErrorDetails::new();
        details.set_error_info(self.name(), DOMAIN, self.metadata());
        match self {
            Reason::MaxOpenCalls { .. } | Reason::MaxDealsInFlight { .. } => {
                details.set_retry_info(Some(RETRY_AFTER_LOAD));
            }
            Reason::MaxQueuedJobs { limit, tenant } => {
                details.set_retry_info(Some(RETRY_AFTER_LOAD));
                match tenant {
                    None => details.add_quota_failure_violation(
                        "--max-queued-jobs",
                        format!("at most {limit} jobs wait for a place"),
                    ),
                    Some(tenant) => details.add_quota_failure_violation(
                        format!("tenant {tenant}: max_queued_jobs"),
                        format!("at most {limit} of its jobs wait for a place"),
                    ),
                };
            }
            Reason::Draining | Reason::DrainTimeout { .. } | Reason::DrainCut { .. } => {
                details.set_retry_info(Some(Duration::ZERO));
            }
            Reason::MaxDealsPerRequest {
                items, limit, what, ..
            } => {
                details.add_bad_request_violation(
                    *what,
                    format!("{items} {what}; at most {limit} per request"),
                );
            }
            Reason::BadTimeout => {
                details.add_bad_request_violation(
                    "grpc-timeout",
                    "not <digits><H|M|S|m|u|n>, at most 8 digits",
                );
            }
            Reason::MalformedMessage { detail } => {
                details.add_bad_request_violation("message", detail.clone());
            }
            Reason::JobInvalid { field, detail } | Reason::JobPrecondition { field, detail } => {
                details.add_bad_request_violation(field.clone(), detail.clone());
            }
            _ => {}
        }
        details
    }

    /// The status to send.
    pub fn status(&self) -> Status {
        Status::with_error_details(self.code(), self.message(), self.details())
    }
}

impl From<Reason> for Status {
    fn from(reason: Reason) -> Status {
        reason.status()
    }
}

/// What a status's details say: its reason, and its metadata. `None` for a status without our
/// `ErrorInfo` (from a daemon older than the details, or from something else on the way).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Said {
    pub reason: String,
    pub metadata: HashMap<String, String>,
    pub retry_after: Option<Duration>,
}

impl Said {
    pub fn of(status: &Status) -> Option<Said> {
        let details = status.get_error_details();
        let info = details.error_info()?;
        (info.domain == DOMAIN).then(|| Said {
            reason: info.reason.clone(),
            metadata: info.metadata.clone(),
            retry_after: details.retry_info().and_then(|r| r.retry_delay),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every reason: its code, its name in UPPER_SNAKE within 63 characters, and details a client
    /// reads back the same.
    #[test]
    fn every_reason_round_trips_through_its_status() {
        let all = [
            Reason::MaxMessageBytes { limit: 4096 },
            Reason::MaxDealsPerRequest {
                items: 11,
                limit: 10,
                what: "deals",
            },
            Reason::MaxOpenCalls {
                flag: "--max-open-streams",
                limit: 2,
            },
            Reason::MaxOpenCalls {
                flag: "--max-open-unary",
                limit: 2,
            },
            Reason::MaxOpenCalls {
                flag: "--max-open-watches",
                limit: 2,
            },
            Reason::MaxDealsInFlight { limit: 64 },
            Reason::Draining,
            Reason::DrainTimeout {
                resume_index: 40,
                what: "deals",
            },
            Reason::DrainCut {
                resume_index: 7,
                what: "cases",
            },
            Reason::StallTimeout {
                resume_index: 3,
                after: Duration::from_secs(60),
                what: "deals",
            },
            Reason::DeadlineExceeded { resume_index: None },
            Reason::DeadlineExceeded {
                resume_index: Some(9),
            },
            Reason::BadTimeout,
            Reason::Unauthenticated { token_given: false },
            Reason::MalformedMessage {
                detail: "bad".into(),
            },
            Reason::UnsupportedEncoding {
                encoding: "snappy".into(),
            },
            Reason::Internal {
                detail: "oops".into(),
            },
            Reason::JobInvalid {
                field: "spec.output".into(),
                detail: "../x is not inside".into(),
            },
            Reason::JobPrecondition {
                field: "spec.inputs[0]".into(),
                detail: "cannot read a.in".into(),
            },
            Reason::JobNotFound { id: "j1".into() },
            Reason::MaxQueuedJobs {
                limit: 1000,
                tenant: None,
            },
        ];
        let mut names = std::collections::HashSet::new();
        for reason in all {
            let name = reason.name();
            assert!(
                name.len() <= 63 && name.chars().all(|c| c.is_ascii_uppercase() || c == '_'),
                "{name}"
            );
            names.insert(name);
            let status = reason.status();
            assert_eq!(status.code(), reason.code());
            let said = Said::of(&status).unwrap_or_else(|| panic!("{name}: no details"));
            assert_eq!(said.reason, name);
            assert_eq!(said.metadata, reason.metadata());
            // The resume index is in the message for people and in the metadata for programs.
            if let Some(index) = said.metadata.get("resume_index") {
                assert!(
                    status.message().contains(&format!("index {index}")),
                    "{name}"
                );
            }
        }
        assert_eq!(names.len(), 20, "one name per cause");
        assert_eq!(names, NAMES.into_iter().collect(), "NAMES lists them all");
    }

    #[test]
    fn retry_info_where_waiting_and_retrying_is_right() {
        let busy = Said::of(&Reason::MaxDealsInFlight { limit: 1 }.status()).unwrap();
        assert_eq!(busy.retry_after, Some(RETRY_AFTER_LOAD));
        let draining = Said::of(&Reason::Draining.status()).unwrap();
        assert_eq!(draining.retry_after, Some(Duration::ZERO));
        let bad = Reason::BadTimeout.status();
        assert_eq!(Said::of(&bad).unwrap().retry_after, None);
        assert_eq!(
            bad.get_error_details()
                .bad_request()
                .map(|b| b.field_violations[0].field.clone()),
            Some("grpc-timeout".to_string())
        );
    }

    /// A status from elsewhere (a proxy, an older daemon) says nothing.
    #[test]
    fn a_status_without_our_details_says_nothing() {
        assert_eq!(Said::of(&Status::unavailable("draining")), None);
        let foreign = Status::with_error_details(
            Code::Unavailable,
            "x",
            ErrorDetails::with_error_info("DRAINING", "other.domain", HashMap::new()),
        );
        assert_eq!(Said::of(&foreign), None);
    }
}
