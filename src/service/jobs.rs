//! `patience.v1.JobService`: the daemon's jobs (`crate::jobs::daemon::board`) on the wire. Each call is a
//! conversion, the board's answer and its conversion back; a refusal is its reason's status
//! (`JOB_INVALID`, `JOB_PRECONDITION`, `JOB_NOT_FOUND`, with the field in a `BadRequest`).

use std::pin::Pin;
use std::time::Duration;

use futures::Stream;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::auth::Caller;

use crate::jobs::daemon::board::{Board, Cursor, JobState, JobView};
use crate::jobs::daemon::spec::{JobGame, JobSpec, Refusal};
use crate::proto::reason::Reason;
use crate::proto::{self, job_service_server::JobService};

/// How often a watch sends a running job's counts, changed or not.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// The service, over the daemon's board; served (and listed by reflection) whether or not the
/// daemon runs jobs, so that a daemon without `--jobs-dir` says so in words.
#[derive(Clone, Debug)]
pub struct JobsService {
    board: Option<Board>,
}

impl JobsService {
    pub fn new(board: Option<Board>) -> JobsService {
        JobsService { board }
    }

    fn board(&self) -> Result<&Board, Status> {
        self.board.as_ref().ok_or_else(|| {
            Reason::JobPrecondition {
                field: "--jobs-dir".into(),
                detail: "this daemon runs no jobs: start it with --jobs-dir".into(),
            }
            .status()
        })
    }
}

/// A spec from the wire; the unset fields are their defaults (deals, text, 6 decimals).
pub fn spec_from(spec: Option<proto::JobSpec>) -> Result<JobSpec, Reason> {
    let spec = spec.ok_or_else(|| Reason::JobInvalid {
        field: "spec".into(),
        detail: "a job needs its spec: inputs and output".into(),
    })?;
    let game = match proto::JobGame::try_from(spec.game) {
        Ok(proto::JobGame::Unspecified | proto::JobGame::Deals) => JobGame::Deals,
        Ok(proto::JobGame::Rps) => JobGame::Rps,
        Err(_) => {
            return Err(Reason::JobInvalid {
                field: "spec.game".into(),
                detail: format!("{} is not a game", spec.game),
            });
        }
    };
    let format = match proto::JobFormat::try_from(spec.format) {
        Ok(proto::JobFormat::Unspecified | proto::JobFormat::Text) => "text",
        Ok(proto::JobFormat::Json) => "json",
        Ok(proto::JobFormat::Parquet) => "parquet",
        Err(_) => {
            return Err(Reason::JobInvalid {
                field: "spec.format".into(),
                detail: format!("{} is not a format", spec.format),
            });
        }
    };
    let precision = match spec.precision {
        None => 6,
        Some(p) => u8::try_from(p).map_err(|_| Reason::JobInvalid {
            field: "spec.precision".into(),
            detail: format!("{p} decimals: at most 17"),
        })?,
    };
    Ok(JobSpec {
        inputs: spec.inputs,
        output: spec.output,
        game,
        format: format.to_string(),
        precision,
        shard: (!spec.shard.is_empty()).then_some(spec.shard),
    })
}

/// A refusal's reason.
pub fn refused(refusal: Refusal) -> Reason {
    match refusal {
        Refusal::Invalid { field, message } => Reason::JobInvalid {
            field,
            detail: message,
        },
        Refusal::Unmet { field, message } => Reason::JobPrecondition {
            field,
            detail: message,
        },
        Refusal::QueueFull { limit, tenant } => Reason::MaxQueuedJobs { limit, tenant },
    }
}

/// Runs a board's file work on the blocking pool; a refusal as its status.
async fn off_the_runtime<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, Refusal> + Send + 'static,
) -> Result<T, Status> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| {
            Reason::Internal {
                detail: e.to_string(),
            }
            .status()
        })?
        .map_err(|r| refused(r).status())
}

/// A page of ListJobs when the request asks for none in particular, and the most one may hold
/// (AIP-158: a larger page_size is taken as this).
pub const DEFAULT_PAGE: usize = 100;
pub const MAX_PAGE: usize = 1000;

fn state_from(state: proto::JobState) -> JobState {
    match state {
        proto::JobState::Running => JobState::Running,
        proto::JobState::Succeeded => JobState::Succeeded,
        proto::JobState::Failed => JobState::Failed,
        proto::JobState::Cancelled => JobState::Cancelled,
        proto::JobState::Queued | proto::JobState::Unspecified => JobState::Queued,
    }
}

/// A state's short name (`queued`, `running`, ...), from the wire's number.
pub fn state_name(state: i32) -> &'static str {
    match proto::JobState::try_from(state) {
        Ok(proto::JobState::Unspecified) | Err(_) => "unspecified",
        Ok(state) => state_from(state).name(),
    }
}

/// A job for the wire.
pub fn job_to(view: JobView) -> proto::Job {
    let state = match view.state {
        JobState::Queued => proto::JobState::Queued,
        JobState::Running => proto::JobState::Running,
        JobState::Succeeded => proto::JobState::Succeeded,
        JobState::Failed => proto::JobState::Failed,
        JobState::Cancelled => proto::JobState::Cancelled,
    };
    let spec = view.spec;
    proto::Job {
        job_id: view.id,
        spec: Some(proto::JobSpec {
            inputs: spec.inputs,
            output: spec.output,
            game: match spec.game {
                JobGame::Deals => proto::JobGame::Deals,
                JobGame::Rps => proto::JobGame::Rps,
            } as i32,
            format: match spec.format.as_str() {
                "json" => proto::JobFormat::Json,
                "parquet" => proto::JobFormat::Parquet,
                _ => proto::JobFormat::Text,
            } as i32,
            precision: Some(u32::from(spec.precision)),
            shard: spec.shard.unwrap_or_default(),
        }),
        state: state as i32,
        items_done: view.items_done,
        items_bad: view.items_bad,
        bytes_done: view.bytes_done,
        bytes_total: view.bytes_total,
        items_per_second: view.items_per_second,
        eta_seconds: view.eta_seconds,
        error: view.error,
        created_unix_ms: view.created_ms,
        ended_unix_ms: view.ended_ms,
    }
}

impl JobsService {
    /// `tenant`'s job `id`; another tenant's is not found, as one that does not exist.
    fn found(&self, tenant: &str, id: &str) -> Result<JobView, Status> {
        self.board()?
            .get(tenant, id)
            .ok_or_else(|| Reason::JobNotFound { id: id.to_string() }.status())
    }
}

/// Whose a call is: the tenant the call layer found by its token (`auth::Caller`); a call made
/// without the layer is the one tenant's of a daemon without `--tenants`.
fn tenant_of<T>(request: &Request<T>) -> Caller {
    request
        .extensions()
        .get::<Caller>()
        .cloned()
        .unwrap_or_default()
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<proto::WatchJobResponse, Status>> + Send>>;

#[tonic::async_trait]
impl JobService for JobsService {
    async fn create_job(
        &self,
        request: Request<proto::CreateJobRequest>,
    ) -> Result<Response<proto::CreateJobResponse>, Status> {
        let caller = tenant_of(&request);
        let request = request.into_inner();
        let spec = spec_from(request.spec).map_err(|r| r.status())?;
        let id = (!request.job_id.is_empty()).then_some(request.job_id);
        let board = self.board()?.clone();
        // The spec's check opens its inputs (an object's HEAD): off the runtime's threads.
        let made =
            off_the_runtime(move || board.create(caller.tenant(), id.as_deref(), spec)).await?;
        Ok(Response::new(proto::CreateJobResponse {
            job: Some(job_to(made)),
        }))
    }

    async fn get_job(
        &self,
        request: Request<proto::GetJobRequest>,
    ) -> Result<Response<proto::GetJobResponse>, Status> {
        let caller = tenant_of(&request);
        let job = self.found(caller.tenant(), &request.into_inner().job_id)?;
        Ok(Response::new(proto::GetJobResponse {
            job: Some(job_to(job)),
        }))
    }

    async fn list_jobs(
        &self,
        request: Request<proto::ListJobsRequest>,
    ) -> Result<Response<proto::ListJobsResponse>, Status> {
        let caller = tenant_of(&request);
        let request = request.into_inner();
        let invalid = |field: &str, detail: String| {
            Reason::JobInvalid {
                field: field.into(),
                detail,
            }
            .status()
        };
        let size = match request.page_size {
            0 => DEFAULT_PAGE,
            n if n < 0 => return Err(invalid("page_size", format!("{n}: not negative"))),
            n => usize::try_from(n).unwrap_or(MAX_PAGE).min(MAX_PAGE),
        };
        let state = match proto::JobState::try_from(request.state) {
            Ok(proto::JobState::Unspecified) => None,
            Ok(state) => Some(state_from(state)),
            Err(_) => {
                return Err(invalid(
                    "state",
                    format!("{} is not a state", request.state),
                ));
            }
        };
        let after = match request.page_token.as_str() {
            "" => None,
            token => Some(
                Cursor::from_token(token, state)
                    .map_err(|e| invalid("page_token", e.to_string()))?,
            ),
        };
        let page = self
            .board()?
            .page(caller.tenant(), state, after.as_ref(), size);
        Ok(Response::new(proto::ListJobsResponse {
            jobs: page.jobs.into_iter().map(job_to).collect(),
            next_page_token: page.next.map(|c| c.token(state)).unwrap_or_default(),
        }))
    }

    async fn delete_job(
        &self,
        request: Request<proto::DeleteJobRequest>,
    ) -> Result<Response<proto::DeleteJobResponse>, Status> {
        let caller = tenant_of(&request);
        let id = request.into_inner().job_id;
        let board = self.board()?.clone();
        let asked = id.clone();
        // A record removed is file work: off the runtime's threads too.
        let gone = off_the_runtime(move || board.delete(caller.tenant(), &asked))
            .await?
            .ok_or_else(|| Reason::JobNotFound { id }.status())?;
        Ok(Response::new(proto::DeleteJobResponse {
            job: Some(job_to(gone)),
        }))
    }

    async fn cancel_job(
        &self,
        request: Request<proto::CancelJobRequest>,
    ) -> Result<Response<proto::CancelJobResponse>, Status> {
        let caller = tenant_of(&request);
        let id = request.into_inner().job_id;
        let job = self
            .board()?
            .cancel(caller.tenant(), &id)
            .ok_or_else(|| Reason::JobNotFound { id }.status())?;
        Ok(Response::new(proto::CancelJobResponse {
            job: Some(job_to(job)),
        }))
    }

    type WatchJobStream = WatchStream;

    async fn watch_job(
        &self,
        request: Request<proto::WatchJobRequest>,
    ) -> Result<Response<WatchStream>, Status> {
        let caller = tenant_of(&request);
        let id = request.into_inner().job_id;
        self.found(caller.tenant(), &id)?;
        let board = self.board()?.clone();
        let mut changes = board.changes();
        let (send, receive) = mpsc::channel(1);
        tokio::spawn(async move {
            loop {
                let Some(job) = board.get(caller.tenant(), &id) else {
                    return;
                };
                if board.closing() {
                    // The daemon is ending: the watch ends (watch again once it is back).
                    return;
                }
                let ended = job.state.ended();
                let sent = proto::WatchJobResponse {
                    job: Some(job_to(job)),
                };
                if send.send(Ok(sent)).await.is_err() || ended {
                    return;
                }
                tokio::select! {
                    changed = changes.changed() => if changed.is_err() { return },
                    () = tokio::time::sleep(WATCH_EVERY) => {}
                    () = send.closed() => return,
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(receive))))
    }
}
