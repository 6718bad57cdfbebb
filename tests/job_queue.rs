//! The jobs' queue as a shared service: `--max-queued-jobs` refusing with its quota and when to
//! retry, lists that page (and filter by state) without repeating or skipping a job while jobs are
//! created and forgotten, `DeleteJob` and `POST /v1/jobs/ID:cancel`, over gRPC, HTTP and
//! `patience jobs`. A job kept running by a FIFO the test holds open keeps the others queued.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use patience::proto::{self, JobState};
use tonic::Code;
use tonic_types::StatusExt as _;

use crate::common::{
    Daemon, Jobs, Scratch, create_job, curl, data, fed_fifo, get_job, jobs_client, metric,
    patience, reaches, scrape,
};

/// A jobs folder with `in/a.in` (the UVa sample) and the FIFO `in/f.in`, fed one deal and held
/// open until the returned sender is dropped.
fn folder(
    name: &str,
) -> (
    Scratch,
    std::sync::mpsc::Sender<()>,
    std::thread::JoinHandle<()>,
) {
    let dir = Scratch::new(name);
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::copy(data("sample.in"), dir.join("in/a.in")).unwrap();
    let (hold, held) = std::sync::mpsc::channel();
    let deal = std::fs::read(data("sample.in")).unwrap();
    let writer = fed_fifo(&dir.join("in/f.in"), deal, held);
    (dir, hold, writer)
}

/// Creates job `run` on the FIFO and waits for the event of its running: it then holds the one
/// place until the test lets the FIFO end.
async fn one_running(jobs: &mut Jobs) {
    create_job(jobs, "run", "in/f.in").await.unwrap();
    reaches(jobs, "run", JobState::Running).await;
}

async fn client(daemon: &Daemon) -> Jobs {
    jobs_client(&daemon.addr, None).await
}

/// The ids of a `GET /v1/jobs` page, and its next page's token.
fn http_page(url: &str) -> (Vec<String>, Option<String>) {
    let (code, _, body) = curl(&[url]);
    assert_eq!(code, "200", "{body}");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let ids = json["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["job_id"].as_str().unwrap().to_string())
        .collect();
    (ids, json["next_page_token"].as_str().map(str::to_string))
}

/// Past `--max-queued-jobs`, a create is RESOURCE_EXHAUSTED (HTTP 429 with Retry-After) with a
/// `QuotaFailure` naming the flag and a `RetryInfo`; a queued job is cancelled with
/// `POST /v1/jobs/ID:cancel`, which makes room; `DeleteJob` refuses a queued job and forgets an
/// ended one (its record goes); the limits are in the metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_refuses_with_its_quota_and_ended_jobs_are_deleted() {
    let (dir, hold, writer) = folder("queue-full");
    let folder = dir.path().display().to_string();
    let daemon = Daemon::start(&[
        "--workers",
        "1",
        "--jobs-dir",
        &folder,
        "--max-queued-jobs",
        "3",
        "--metrics-addr",
        "127.0.0.1:0",
    ]);
    let mut jobs = client(&daemon).await;
    one_running(&mut jobs).await;
    for id in ["q1", "q2", "q3"] {
        let job = create_job(&mut jobs, id, "in/a.in").await.unwrap();
        assert_eq!(job.state, JobState::Queued as i32, "{id}");
    }
    let refused = create_job(&mut jobs, "q4", "in/a.in").await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(
        refused.message().contains("--max-queued-jobs"),
        "{refused:?}"
    );
    let details = refused.get_error_details();
    assert_eq!(
        details.error_info().map(|i| i.reason.as_str()),
        Some("MAX_QUEUED_JOBS")
    );
    let quota = details.quota_failure().expect("a QuotaFailure");
    assert_eq!(quota.violations[0].subject, "--max-queued-jobs");
    assert!(quota.violations[0].description.contains('3'), "{quota:?}");
    assert_eq!(
        details.retry_info().and_then(|r| r.retry_delay),
        Some(Duration::from_secs(1))
    );
    let url = format!("{}/v1/jobs", daemon.addr);
    let (code, headers, body) = curl(&[
        "-X",
        "POST",
        "--data-binary",
        r#"{"job_id":"q4","inputs":["in/a.in"],"output":"out/q4.txt"}"#,
        &url,
    ]);
    assert_eq!(code, "429", "{body}");
    assert!(headers.contains("retry-after: 1"), "{headers}");
    assert!(body.contains("--max-queued-jobs"), "{body}");
    let scraped = scrape(&daemon.metrics_addr());
    assert_eq!(
        metric(&scraped, "patience_limit{flag=\"max_queued_jobs\"}"),
        Some(3.0)
    );
    assert_eq!(
        metric(&scraped, "patience_limit_seconds{flag=\"job_retention\"}"),
        Some(7.0 * 86400.0)
    );

    // A queued job cannot be deleted; cancelled (the HTTP custom method) it can, and the queue
    // has room again.
    let (code, _, body) = curl(&["-X", "DELETE", &format!("{url}/q1")]);
    assert_eq!(code, "400", "{body}");
    assert!(body.contains("cancel it first"), "{body}");
    let request = proto::DeleteJobRequest {
        job_id: "q1".into(),
    };
    let live = jobs.delete_job(request).await.unwrap_err();
    assert_eq!(live.code(), Code::FailedPrecondition, "{live:?}");
    let (code, headers, _) = curl(&[&format!("{url}/q1:cancel")]);
    assert_eq!(code, "405");
    assert!(headers.contains("allow: post"), "{headers}");
    let (code, _, body) = curl(&["-X", "POST", &format!("{url}/q1:cancel")]);
    assert_eq!(code, "200", "{body}");
    assert!(body.contains(r#""state":"cancelled""#), "{body}");
    create_job(&mut jobs, "q4", "in/a.in").await.unwrap();
    let record = dir.join(".patience-jobs/q1.json");
    assert!(record.is_file());
    let (code, _, body) = curl(&["-X", "DELETE", &format!("{url}/q1")]);
    assert_eq!(code, "200", "{body}");
    assert!(!record.exists(), "the deleted job's record stays");
    let gone = get_job(&mut jobs, "q1").await.unwrap_err();
    assert_eq!(gone.code(), Code::NotFound);
    let cli = patience()
        .args(&["jobs", "--addr", &daemon.addr, "delete", "q2"])
        .output();
    assert_eq!(cli.code(), Some(2), "a queued job: {}", cli.stderr_str());
    assert!(
        cli.stderr_str().contains("cancel it first"),
        "{}",
        cli.stderr_str()
    );
    drop(hold);
    writer.join().unwrap();
}

/// The ids of every page of ListJobs (`state` when given), `size` a page; `between(page)` runs
/// before each page after the first.
async fn all_pages(
    jobs: &mut Jobs,
    state: Option<JobState>,
    size: i32,
    mut between: impl AsyncFnMut(usize),
) -> Vec<String> {
    let mut request = proto::ListJobsRequest {
        page_size: size,
        state: state.map_or(0, |s| s as i32),
        ..Default::default()
    };
    let mut ids = Vec::new();
    for page in 0.. {
        if page > 0 {
            between(page).await;
        }
        let got = jobs.list_jobs(request.clone()).await.unwrap().into_inner();
        assert!(
            got.jobs.len() <= size as usize,
            "a page of {}",
            got.jobs.len()
        );
        ids.extend(got.jobs.into_iter().map(|j| j.job_id));
        if got.next_page_token.is_empty() {
            break;
        }
        request.page_token = got.next_page_token;
    }
    ids
}

/// ListJobs pages through every job exactly once while jobs are created, ended and deleted
/// between its pages; the state filter lists one state's jobs; a token is for its own filter;
/// bad page sizes are refused; HTTP and `patience jobs list` page the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_list_every_job_once_while_jobs_come_and_go() {
    let (dir, hold, writer) = folder("queue-pages");
    let folder = dir.path().display().to_string();
    let daemon = Daemon::start(&["--workers", "1", "--jobs-dir", &folder]);
    let mut jobs = client(&daemon).await;
    one_running(&mut jobs).await;
    let first: Vec<String> = (0..240).map(|i| format!("j{i:03}")).collect();
    for id in &first {
        create_job(&mut jobs, id, "in/a.in").await.unwrap();
    }
    let cancelled: BTreeSet<String> = first.iter().step_by(3).cloned().collect();
    for id in &cancelled {
        let request = proto::CancelJobRequest { job_id: id.clone() };
        jobs.cancel_job(request).await.unwrap();
    }

    // Between pages: 5 new jobs, and one of the first 40 cancelled ones deleted, each time.
    let mut other = client(&daemon).await;
    let (mut made, mut deleted) = (Vec::new(), BTreeSet::new());
    let mut doomed = cancelled
        .iter()
        .take(40)
        .cloned()
        .collect::<Vec<_>>()
        .into_iter();
    let listed = all_pages(&mut jobs, None, 7, async |page| {
        for k in 0..5 {
            let id = format!("new{page:02}-{k}");
            create_job(&mut other, &id, "in/a.in").await.unwrap();
            made.push(id);
        }
        for id in doomed.by_ref().take(1) {
            let request = proto::DeleteJobRequest { job_id: id.clone() };
            other.delete_job(request).await.unwrap();
            deleted.insert(id);
        }
    })
    .await;
    let mut seen = BTreeMap::new();
    for id in &listed {
        *seen.entry(id.clone()).or_insert(0) += 1;
    }
    assert!(seen.values().all(|&n| n == 1), "listed twice: {seen:?}");
    assert!(
        deleted.len() >= 40,
        "only {} deleted between pages",
        deleted.len()
    );
    for id in first.iter().chain(["run".to_string()].iter()) {
        if !deleted.contains(id) {
            assert!(seen.contains_key(id), "{id} was skipped");
        }
    }
    assert!(made.len() >= 100, "only {} made between pages", made.len());

    // One state: the cancelled ones left, in creation order, pages of 11.
    let left: Vec<String> = cancelled
        .iter()
        .filter(|id| !deleted.contains(*id))
        .cloned()
        .collect();
    let listed = all_pages(&mut jobs, Some(JobState::Cancelled), 11, async |_| {}).await;
    assert_eq!(listed, left);

    // A token is for its own filter; sizes below 0 are refused.
    let page = jobs
        .list_jobs(proto::ListJobsRequest {
            page_size: 2,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let other_filter = proto::ListJobsRequest {
        page_size: 2,
        page_token: page.next_page_token.clone(),
        state: JobState::Queued as i32,
    };
    let refused = jobs.list_jobs(other_filter).await.unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert!(refused.message().contains("page_token"), "{refused:?}");
    let negative = proto::ListJobsRequest {
        page_size: -1,
        ..Default::default()
    };
    assert_eq!(
        jobs.list_jobs(negative).await.unwrap_err().code(),
        Code::InvalidArgument
    );
    let garbage = proto::ListJobsRequest {
        page_token: "zz".into(),
        ..Default::default()
    };
    assert_eq!(
        jobs.list_jobs(garbage).await.unwrap_err().code(),
        Code::InvalidArgument
    );

    // HTTP: the same pages; and the command line goes through them all.
    let url = format!("{}/v1/jobs?page_size=2&state=cancelled", daemon.addr);
    let (ids, token) = http_page(&url);
    assert_eq!(ids, left[..2]);
    let token = token.expect("a next page");
    let (ids, _) = http_page(&format!("{url}&page_token={token}"));
    assert_eq!(ids, left[2..4]);
    let (code, _, body) = curl(&[&format!("{}/v1/jobs?state=paused", daemon.addr)]);
    assert_eq!(code, "400", "{body}");
    let cli = patience()
        .args(&[
            "jobs",
            "--addr",
            &daemon.addr,
            "list",
            "--state",
            "cancelled",
            "--page-size",
            "5",
        ])
        .output();
    assert_eq!(cli.code(), Some(0), "{}", cli.stderr_str());
    assert_eq!(
        cli.stdout_str().lines().count(),
        left.len(),
        "{}",
        cli.stdout_str()
    );
    drop(hold);
    writer.join().unwrap();
}
