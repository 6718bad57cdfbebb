//! `patience jobs`: the daemon's jobs from the command line (patience.v1.JobService): `submit`
//! one and watch it to its end with a progress bar, `watch`, `get`, `list` (page by page),
//! `cancel`, `delete`.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use tonic::codegen::InterceptedService;
use tonic::transport::Channel;

use crate::auth::AddBearer;
use crate::client::connect::Daemon;
use crate::jobs::outcome::ExitStatus;
use crate::proto::{self, job_service_client::JobServiceClient};
use crate::service::jobs::state_name;

/// Flags of `patience jobs`.
#[derive(Debug, Args)]
pub struct JobsArgs {
    /// The daemon's address: http://HOST:PORT, or https://HOST:PORT with --tls-ca.
    #[arg(long, global = true, default_value = "http://127.0.0.1:50051")]
    pub addr: String,
    #[command(flatten)]
    pub tls: super::ClientTlsArgs,
    /// Send `authorization: Bearer <token>` with the token in this file.
    #[arg(long, global = true)]
    pub auth_token_file: Option<PathBuf>,
    #[command(subcommand)]
    pub command: JobsCommand,
}

#[derive(Debug, Subcommand)]
pub enum JobsCommand {
    /// Start a job and watch it to its end (exit status: 0 done, 1 done with bad items, 2 failed
    /// or cancelled); --detach prints it and returns at once.
    Submit(SubmitArgs),
    /// Watch a job to its end, with a progress bar (exit status as `submit`).
    Watch { job_id: String },
    /// Print a job as it is now.
    Get { job_id: String },
    /// Print every job the daemon knows (those in one state with --state), oldest first, asking
    /// for them a page at a time.
    List {
        /// Only jobs in this state.
        #[arg(long, value_enum)]
        state: Option<ListState>,
        /// Jobs asked for per call (the daemon gives at most 1,000).
        #[arg(long, default_value = "100", value_parser = clap::value_parser!(i32).range(1..=1000))]
        page_size: i32,
    },
    /// Stop a job (its output stays resumable: `submit` with the same id and spec goes on).
    Cancel { job_id: String },
    /// Forget an ended job: its record goes, its output stays.
    Delete { job_id: String },
}

/// A state `jobs list --state` takes.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ListState {
    Queued,
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

impl ListState {
    fn proto(self) -> proto::JobState {
        match self {
            ListState::Queued => proto::JobState::Queued,
            ListState::Running => proto::JobState::Running,
            ListState::Succeeded => proto::JobState::Succeeded,
            ListState::Failed => proto::JobState::Failed,
            ListState::Cancelled => proto::JobState::Cancelled,
        }
    }
}

#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The inputs: paths relative to the daemon's --jobs-dir, or s3://BUCKET/KEY.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<String>,
    /// The output: a path relative to the daemon's --jobs-dir, or s3://BUCKET/KEY (.gz, .zst
    /// compressed).
    #[arg(long, short)]
    pub output: String,
    /// The job's id (A-Z a-z 0-9 . _ -): the same id and spec again is the same job [default:
    /// the daemon's choice].
    #[arg(long)]
    pub id: Option<String>,
    /// The inputs are FZU 2145 case files (as `rps` reads them), not deals.
    #[arg(long)]
    pub rps: bool,
    /// The answers' format.
    #[arg(long, value_enum, default_value_t = crate::render::OutputFormat::Text)]
    pub format: crate::render::OutputFormat,
    /// Decimals of a text answer [default: 6].
    #[arg(long)]
    pub precision: Option<u32>,
    /// Only shard K of N, as `solve --shard` (the output is a part, for `merge`).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Print the job and return, without watching it.
    #[arg(long)]
    pub detach: bool,
}

type Jobs = JobServiceClient<InterceptedService<Channel, AddBearer>>;

pub fn run(args: &JobsArgs) -> anyhow::Result<ExitStatus> {
    let (url, connector, bearer) = super::remote::one_daemon(
        &args.addr,
        &args.tls,
        args.auth_token_file.as_deref(),
        "jobs are a daemon's",
    )?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let channel = connector
            .endpoint(&Daemon::Url(url.clone()))?
            .connect()
            .await
            .with_context(|| format!("cannot connect to {url}"))?;
        let mut jobs = JobServiceClient::with_interceptor(channel, bearer);
        let said = |status: tonic::Status| anyhow::anyhow!("{url}: {}", status.message());
        match &args.command {
            JobsCommand::Submit(submit) => {
                let request = proto::CreateJobRequest {
                    job_id: submit.id.clone().unwrap_or_default(),
                    spec: Some(proto::JobSpec {
                        inputs: submit.inputs.clone(),
                        output: submit.output.clone(),
                        game: match submit.rps {
                            true => proto::JobGame::Rps,
                            false => proto::JobGame::Deals,
                        } as i32,
                        format: match submit.format {
                            crate::render::OutputFormat::Text => proto::JobFormat::Text,
                            crate::render::OutputFormat::Json => proto::JobFormat::Json,
                            crate::render::OutputFormat::Parquet => proto::JobFormat::Parquet,
                        } as i32,
                        precision: submit.precision,
                        shard: submit.shard.clone().unwrap_or_default(),
                    }),
                };
                let job = jobs
                    .create_job(request)
                    .await
                    .map_err(said)?
                    .into_inner()
                    .job
                    .unwrap_or_default();
                if submit.detach {
                    print_line(&line(&job))?;
                    return Ok(ExitStatus::Ok);
                }
                watch(&mut jobs, &job.job_id).await
            }
            JobsCommand::Watch { job_id } => watch(&mut jobs, job_id).await,
            JobsCommand::Get { job_id } => {
                let request = proto::GetJobRequest {
                    job_id: job_id.clone(),
                };
                let job = jobs.get_job(request).await.map_err(said)?.into_inner().job;
                print_line(&line(&job.unwrap_or_default()))?;
                Ok(ExitStatus::Ok)
            }
            JobsCommand::List { state, page_size } => {
                let mut request = proto::ListJobsRequest {
                    page_size: *page_size,
                    state: state.map_or(proto::JobState::Unspecified, ListState::proto) as i32,
                    ..Default::default()
                };
                loop {
                    let page = jobs
                        .list_jobs(request.clone())
                        .await
                        .map_err(said)?
                        .into_inner();
                    for job in &page.jobs {
                        print_line(&line(job))?;
                    }
                    if page.next_page_token.is_empty() {
                        break;
                    }
                    request.page_token = page.next_page_token;
                }
                Ok(ExitStatus::Ok)
            }
            JobsCommand::Delete { job_id } => {
                let request = proto::DeleteJobRequest {
                    job_id: job_id.clone(),
                };
                let job = jobs
                    .delete_job(request)
                    .await
                    .map_err(said)?
                    .into_inner()
                    .job;
                print_line(&line(&job.unwrap_or_default()))?;
                Ok(ExitStatus::Ok)
            }
            JobsCommand::Cancel { job_id } => {
                let request = proto::CancelJobRequest {
                    job_id: job_id.clone(),
                };
                let job = jobs
                    .cancel_job(request)
                    .await
                    .map_err(said)?
                    .into_inner()
                    .job;
                print_line(&line(&job.unwrap_or_default()))?;
                Ok(ExitStatus::Ok)
            }
        }
    })
}

/// Watches `id` to its end: a bar on a terminal, else nothing until the last line.
async fn watch(jobs: &mut Jobs, id: &str) -> anyhow::Result<ExitStatus> {
    let mut stream = jobs
        .watch_job(proto::WatchJobRequest {
            job_id: id.to_string(),
        })
        .await
        .map_err(|status| anyhow::anyhow!("{}", status.message()))?
        .into_inner();
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} {msg} [{wide_bar}] {bytes}/{total_bytes} ({eta} left)",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    });
    let mut last = None;
    while let Some(update) = stream
        .message()
        .await
        .map_err(|status| anyhow::anyhow!("{}", status.message()))?
    {
        let job = update.job.unwrap_or_default();
        if let Some(bar) = &bar {
            bar.set_length(job.bytes_total.unwrap_or(job.bytes_done));
            bar.set_position(job.bytes_done);
            bar.set_message(format!(
                "{} {}: {} items, {} bad, {:.0}/s",
                job.job_id,
                state_name(job.state),
                job.items_done,
                job.items_bad,
                job.items_per_second
            ));
        }
        last = Some(job);
    }
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let Some(job) = last else {
        bail!("the daemon ended the watch of {id} before saying anything");
    };
    print_line(&line(&job))?;
    Ok(match proto::JobState::try_from(job.state) {
        Ok(proto::JobState::Succeeded) if job.items_bad == 0 => ExitStatus::Ok,
        Ok(proto::JobState::Succeeded) => ExitStatus::BadInput,
        Ok(proto::JobState::Failed | proto::JobState::Cancelled) => ExitStatus::Trouble,
        // The daemon ended before the job did (its drain): it goes on when the daemon is back.
        _ => bail!(
            "the watch of {id} ended with the job {}: the daemon is ending; watch it again once \
             it is back",
            state_name(job.state)
        ),
    })
}

/// A job in one line: `ID STATE: N items, B bad -> OUTPUT[: error]`.
fn line(job: &proto::Job) -> String {
    let output = job.spec.as_ref().map_or("", |s| s.output.as_str());
    let mut line = format!(
        "{} {}: {} items, {} bad -> {output}",
        job.job_id,
        state_name(job.state),
        job.items_done,
        job.items_bad
    );
    if !job.error.is_empty() {
        line.push_str(": ");
        line.push_str(&job.error);
    }
    line
}

fn print_line(line: &str) -> anyhow::Result<()> {
    writeln!(std::io::stdout().lock(), "{line}").context("cannot write to standard output")
}
