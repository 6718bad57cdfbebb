//! The daemon's jobs on the plain HTTP API, JSON in and out: `POST /v1/jobs` creates one (the
//! body: `job_id`, `inputs`, `output`, `game`, `format`, `precision`, `shard`; only `inputs` and
//! `output` needed), `GET /v1/jobs` lists them a page at a time (`?page_size=`, `&page_token=`,
//! `&state=`), `GET /v1/jobs/ID` shows one, `POST /v1/jobs/ID:cancel` cancels it (AIP-136's
//! custom method) and `DELETE /v1/jobs/ID` forgets an ended one. Each is entered in the call layer as its JobService rpc (the token,
//! the unary calls' cap, the series, the span), then made on the service directly, as the
//! solving routes are; a refusal is its reason's HTTP status with the words and
//! `X-Patience-Reason`.

use bytes::Bytes;
use http::{HeaderValue, Method, StatusCode, header};
use http_body_util::BodyExt as _;
use serde::Deserialize;
use tonic::body::Body;
use tonic::{Code, Request};

use super::{plain, refused_status};
use crate::proto::{self, job_service_server::JobService as _};
use crate::server::call::{Calls, InProcess};
use crate::service::jobs::{JobsService, state_name};

/// The most bytes a job's JSON may have.
const MAX_BODY: usize = 64 << 10;
/// The routes' label in the metrics: the id is left out.
pub const ROUTES: [&str; 2] = ["/v1/jobs", "/v1/jobs/{id}"];

/// A job to create, as the body says it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Create {
    #[serde(default)]
    job_id: String,
    inputs: Vec<String>,
    output: String,
    #[serde(default)]
    game: Option<String>,
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    precision: Option<u32>,
    #[serde(default)]
    shard: Option<String>,
}

/// Whether `path` is one of the jobs' routes.
pub fn is_jobs_path(path: &str) -> bool {
    path == "/v1/jobs"
        || path
            .strip_prefix("/v1/jobs/")
            .is_some_and(|id| !id.contains('/'))
}

/// Answers a request of the jobs' routes.
pub async fn answer(
    calls: &Calls,
    jobs: &JobsService,
    request: http::Request<Body>,
) -> http::Response<Body> {
    let path = request.uri().path().to_string();
    let query = request.uri().query().unwrap_or_default().to_string();
    let mut id = path.strip_prefix("/v1/jobs/").map(str::to_string);
    let cancel = id
        .as_ref()
        .and_then(|i| i.strip_suffix(":cancel"))
        .map(str::to_string);
    let method = request.method().clone();
    let rpc = match (&method, &id, &cancel) {
        (&Method::POST, None, _) => "CreateJob",
        (&Method::GET, None, _) => "ListJobs",
        (&Method::POST, Some(_), Some(_)) => "CancelJob",
        (&Method::GET, Some(_), None) => "GetJob",
        (&Method::DELETE, Some(_), None) => "DeleteJob",
        _ => {
            let mut response = plain(
                StatusCode::METHOD_NOT_ALLOWED,
                "/v1/jobs takes POST (a job) and GET; /v1/jobs/ID takes GET and DELETE (an ended \
                 job); /v1/jobs/ID:cancel takes POST",
            );
            let allow = match (id, cancel) {
                (None, _) => "GET, POST",
                (Some(_), Some(_)) => "POST",
                (Some(_), None) => "GET, DELETE",
            };
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static(allow));
            return response;
        }
    };
    if cancel.is_some() {
        id = cancel;
    }
    let (parts, body) = request.into_parts();
    let peer = parts
        .extensions
        .get::<tonic::transport::server::TcpConnectInfo>()
        .and_then(|info| info.remote_addr);
    let mut entered = match calls.enter(
        &format!("/patience.v1.JobService/{rpc}"),
        &path,
        &parts.headers,
        peer,
    ) {
        Ok(entered) => entered,
        Err(status) => return refused_status(&status),
    };
    let answered = match (rpc, id) {
        ("CreateJob", _) => match create(body).await {
            Ok(request) => jobs
                .create_job(asked(&entered, request))
                .await
                .map(|r| one(r.into_inner().job)),
            Err(words) => {
                entered.end(Code::InvalidArgument);
                return plain(StatusCode::BAD_REQUEST, &words);
            }
        },
        ("ListJobs", _) => match list_query(&query) {
            Ok(request) => jobs.list_jobs(asked(&entered, request)).await.map(|r| {
                let page = r.into_inner();
                let all: Vec<serde_json::Value> = page.jobs.iter().map(job_json).collect();
                let next = (!page.next_page_token.is_empty()).then_some(page.next_page_token);
                serde_json::json!({ "jobs": all, "next_page_token": next })
            }),
            Err(words) => {
                entered.end(Code::InvalidArgument);
                return plain(StatusCode::BAD_REQUEST, &words);
            }
        },
        ("GetJob", Some(job_id)) => jobs
            .get_job(asked(&entered, proto::GetJobRequest { job_id }))
            .await
            .map(|r| one(r.into_inner().job)),
        ("DeleteJob", job_id) => jobs
            .delete_job(asked(
                &entered,
                proto::DeleteJobRequest {
                    job_id: job_id.unwrap_or_default(),
                },
            ))
            .await
            .map(|r| one(r.into_inner().job)),
        (_, job_id) => jobs
            .cancel_job(asked(
                &entered,
                proto::CancelJobRequest {
                    job_id: job_id.unwrap_or_default(),
                },
            ))
            .await
            .map(|r| one(r.into_inner().job)),
    };
    match answered {
        Ok(json) => {
            entered.sent();
            entered.end(Code::Ok);
            let mut text = json.to_string();
            text.push('\n');
            let mut response =
                http::Response::new(Body::new(http_body_util::Full::new(Bytes::from(text))));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(status) => {
            entered.end(status.code());
            refused_status(&status)
        }
    }
}

/// The rpc's request for `message`, whose its call is (the token's tenant) in its extensions, as
/// the call layer puts it for a call on the wire.
fn asked<T>(entered: &InProcess, message: T) -> Request<T> {
    let mut request = Request::new(message);
    request.extensions_mut().insert(entered.caller());
    request
}

/// A `GET /v1/jobs`'s query (`page_size`, `page_token`, `state` by its short name) as its rpc's
/// request; the words for what is wrong otherwise.
fn list_query(query: &str) -> Result<proto::ListJobsRequest, String> {
    let mut request = proto::ListJobsRequest::default();
    let shown = |text: &str| crate::deal::Token::cut(text, 40);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        match name {
            "page_size" => {
                request.page_size = value
                    .parse()
                    .ok()
                    .filter(|n: &i32| *n >= 0)
                    .ok_or_else(|| format!("page_size is a whole number, not {}", shown(value)))?;
            }
            "page_token" => request.page_token = value.to_string(),
            "state" => {
                let state = [
                    proto::JobState::Queued,
                    proto::JobState::Running,
                    proto::JobState::Succeeded,
                    proto::JobState::Failed,
                    proto::JobState::Cancelled,
                ]
                .into_iter()
                .find(|s| state_name(*s as i32) == value)
                .ok_or_else(|| {
                    format!(
                        "state is queued, running, succeeded, failed or cancelled, not {}",
                        shown(value)
                    )
                })?;
                request.state = state as i32;
            }
            _ => {
                return Err(format!(
                    "{} is not a parameter of /v1/jobs: page_size, page_token, state",
                    shown(name)
                ));
            }
        }
    }
    Ok(request)
}

/// The body of a `POST /v1/jobs`, read (up to [`MAX_BODY`]) into its rpc's request.
async fn create(body: Body) -> Result<proto::CreateJobRequest, String> {
    let limited = http_body_util::Limited::new(body, MAX_BODY);
    let bytes = limited
        .collect()
        .await
        .map_err(|e| format!("cannot read the job's JSON (at most {MAX_BODY} bytes): {e}"))?
        .to_bytes();
    let job: Create = serde_json::from_slice(&bytes).map_err(|e| {
        format!(
            "the body is not a job's JSON ({e}): {{\"inputs\": [...], \"output\": \"...\"}}, \
             optionally job_id, game (deals, rps), format (text, json, parquet), precision, shard (K/N)"
        )
    })?;
    let game = match job.game.as_deref() {
        None | Some("deals") => proto::JobGame::Deals,
        Some("rps") => proto::JobGame::Rps,
        Some(other) => return Err(format!("game {other:?} is not deals or rps")),
    };
    let format = match job.format.as_deref() {
        None | Some("text") => proto::JobFormat::Text,
        Some("json") => proto::JobFormat::Json,
        Some("parquet") => proto::JobFormat::Parquet,
        Some(other) => return Err(format!("format {other:?} is not text, json or parquet")),
    };
    Ok(proto::CreateJobRequest {
        job_id: job.job_id,
        spec: Some(proto::JobSpec {
            inputs: job.inputs,
            output: job.output,
            game: game as i32,
            format: format as i32,
            precision: job.precision,
            shard: job.shard.unwrap_or_default(),
        }),
    })
}

/// One job's JSON, or `null`.
fn one(job: Option<proto::Job>) -> serde_json::Value {
    job.as_ref().map_or(serde_json::Value::Null, job_json)
}

/// A job as JSON: the rpc's fields, snake_case, the state and enums by their short names.
pub fn job_json(job: &proto::Job) -> serde_json::Value {
    let state = state_name(job.state);
    let spec = job.spec.clone().unwrap_or_default();
    serde_json::json!({
        "job_id": job.job_id,
        "state": state,
        "inputs": spec.inputs,
        "output": spec.output,
        "game": if spec.game == proto::JobGame::Rps as i32 { "rps" } else { "deals" },
        "format": match proto::JobFormat::try_from(spec.format) {
            Ok(proto::JobFormat::Json) => "json",
            Ok(proto::JobFormat::Parquet) => "parquet",
            _ => "text",
        },
        "precision": spec.precision,
        "shard": (!spec.shard.is_empty()).then_some(spec.shard),
        "items_done": job.items_done,
        "items_bad": job.items_bad,
        "bytes_done": job.bytes_done,
        "bytes_total": job.bytes_total,
        "items_per_second": job.items_per_second,
        "eta_seconds": job.eta_seconds,
        "error": (!job.error.is_empty()).then_some(&job.error),
        "created_unix_ms": job.created_unix_ms,
        "ended_unix_ms": (job.ended_unix_ms > 0).then_some(job.ended_unix_ms),
    })
}
