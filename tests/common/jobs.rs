//! The daemon's JobService as the jobs tests call it: a client (with a tenant's token or none),
//! a job created on one input, a job read back, and waiting for the event of a job's state.

use patience::auth::{AddBearer, Secret};
use patience::proto::job_service_client::JobServiceClient;
use patience::proto::{self, JobState};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use super::HANG_LIMIT;

/// A JobService client, sending a token when it was given one.
pub type Jobs = JobServiceClient<InterceptedService<Channel, AddBearer>>;

/// A client of the daemon at `addr`, with `token` on every call when given.
pub async fn jobs_client(addr: &str, token: Option<&str>) -> Jobs {
    let channel = Channel::from_shared(addr.to_string())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let token = token.map(Secret::new);
    JobServiceClient::with_interceptor(channel, AddBearer::new(token.as_ref()).unwrap())
}

/// A spec reading `input` into `output`, the rest as the daemon's defaults.
pub fn job_spec(input: &str, output: &str) -> proto::JobSpec {
    proto::JobSpec {
        inputs: vec![input.to_string()],
        output: output.to_string(),
        ..Default::default()
    }
}

/// Creates job `id` reading `input` into `out/ID.txt`.
pub async fn create_job(
    jobs: &mut Jobs,
    id: &str,
    input: &str,
) -> Result<proto::Job, tonic::Status> {
    let request = proto::CreateJobRequest {
        job_id: id.to_string(),
        spec: Some(job_spec(input, &format!("out/{id}.txt"))),
    };
    Ok(jobs
        .create_job(request)
        .await?
        .into_inner()
        .job
        .unwrap_or_default())
}

/// Job `id` as it is now.
pub async fn get_job(jobs: &mut Jobs, id: &str) -> Result<proto::Job, tonic::Status> {
    let request = proto::GetJobRequest { job_id: id.into() };
    Ok(jobs
        .get_job(request)
        .await?
        .into_inner()
        .job
        .unwrap_or_default())
}

/// Waits for the event of job `id` reaching `state` (its watch), bounded by the hang limit;
/// panics if it ends in another state first.
pub async fn reaches(jobs: &mut Jobs, id: &str, state: JobState) {
    let request = proto::WatchJobRequest { job_id: id.into() };
    let mut watch = jobs.watch_job(request).await.unwrap().into_inner();
    let reached = async {
        while let Some(update) = watch.message().await.unwrap() {
            let now = update.job.map_or(0, |j| j.state);
            if now == state as i32 {
                return;
            }
            assert!(
                !matches!(
                    JobState::try_from(now),
                    Ok(JobState::Succeeded | JobState::Failed | JobState::Cancelled)
                ),
                "job {id} ended as {now} before reaching {state:?}"
            );
        }
        panic!("job {id}'s watch ended before it reached {state:?}");
    };
    tokio::time::timeout(HANG_LIMIT, reached)
        .await
        .unwrap_or_else(|_| panic!("job {id} never reached {state:?}"));
}
