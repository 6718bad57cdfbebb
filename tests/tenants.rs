//! Jobs as a service shared by tenants (`serve --tenants FILE`): each tenant sees its own jobs
//! only, on every rpc and route; its cap refuses with its quota; the running place goes by
//! weight, so a late tenant's job starts before the busy tenant's next; the work gauges count a
//! known backlog; and a SIGKILL and restart rebuild every tenant's queue from the records.
//! Jobs kept running by FIFOs the test holds open keep the others queued.

use std::time::Duration;

use patience::auth::{AddBearer, Secret};
use patience::proto::job_service_client::JobServiceClient;
use patience::proto::solver_client::SolverClient;
use patience::proto::{self, JobState};
use tonic::Code;
use tonic::transport::Channel;
use tonic_types::StatusExt as _;

use crate::common::{
    Daemon, Jobs, Scratch, create_job, data, fed_fifo, get_job, job_spec, jobs_client, metric,
    reaches, scrape,
};

/// A jobs folder for tenants `alice` (token inline, weight 1) and `bob` (token in a file,
/// `max_queued_jobs = 2`), each with `in/a.in` (the UVa sample) in its own folder; the file's
/// path.
fn tenants_folder(name: &str) -> (Scratch, String) {
    let dir = Scratch::new(name);
    for tenant in ["alice", "bob"] {
        std::fs::create_dir_all(dir.join(tenant).join("in")).unwrap();
        std::fs::copy(data("sample.in"), dir.join(tenant).join("in/a.in")).unwrap();
    }
    let config = dir.join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("bob.token"), "bob-secret\n").unwrap();
    let file = config.join("tenants.toml");
    std::fs::write(
        &file,
        "[tenants.alice]\ntoken = \"alice-secret\"\n\n\
         [tenants.bob]\ntoken_file = \"bob.token\"\nmax_queued_jobs = 2\n",
    )
    .unwrap();
    (dir, file.display().to_string())
}

fn serve(dir: &Scratch, tenants: &str) -> Daemon {
    Daemon::start(&[
        "--workers",
        "1",
        "--jobs-dir",
        &dir.path().display().to_string(),
        "--tenants",
        tenants,
        "--metrics-addr",
        "127.0.0.1:0",
    ])
}

async fn as_tenant(daemon: &Daemon, token: &str) -> Jobs {
    jobs_client(&daemon.addr, Some(token)).await
}

async fn ids(jobs: &mut Jobs) -> Vec<String> {
    let page = jobs
        .list_jobs(proto::ListJobsRequest::default())
        .await
        .unwrap()
        .into_inner();
    page.jobs.into_iter().map(|j| j.job_id).collect()
}

/// `curl`'s status code and body for a request with `token`.
fn curl(token: &str, args: &[&str]) -> (String, String) {
    let header = format!("authorization: Bearer {token}");
    let (code, _, body) = crate::common::curl(&[&["-H", &header], args].concat());
    (code, body)
}

/// Another tenant's job is NOT_FOUND on every rpc and HTTP route, in the same words as a job
/// that does not exist; the same id in two tenants is two jobs, each in its tenant's folder; a
/// path out of a tenant's folder is refused; calls are counted by tenant, Solver calls too; a
/// call without a tenant's token is UNAUTHENTICATED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tenant_sees_only_its_own_jobs_on_every_rpc_and_route() {
    let (dir, tenants) = tenants_folder("tenants-apart");
    let daemon = serve(&dir, &tenants);
    let mut alice = as_tenant(&daemon, "alice-secret").await;
    let mut bob = as_tenant(&daemon, "bob-secret").await;

    create_job(&mut alice, "same", "in/a.in").await.unwrap();
    reaches(&mut alice, "same", JobState::Succeeded).await;
    // Bob's "same" has another spec: in one tenant that would be refused as a different job.
    let request = proto::CreateJobRequest {
        job_id: "same".into(),
        spec: Some(job_spec("in/a.in", "out/other-name.txt")),
    };
    bob.create_job(request).await.unwrap();
    reaches(&mut bob, "same", JobState::Succeeded).await;
    let answer = std::fs::read_to_string(data("sample.out6")).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("alice/out/same.txt")).unwrap(),
        answer
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("bob/out/other-name.txt")).unwrap(),
        answer
    );
    assert!(dir.join("alice/.patience-jobs/same.json").is_file());
    assert!(dir.join("bob/.patience-jobs/same.json").is_file());
    assert!(!dir.join(".patience-jobs/same.json").exists());

    create_job(&mut alice, "mine", "in/a.in").await.unwrap();
    reaches(&mut alice, "mine", JobState::Succeeded).await;
    assert_eq!(ids(&mut alice).await, ["same", "mine"]);
    assert_eq!(ids(&mut bob).await, ["same"]);

    // Every rpc of bob's on alice's job, in the words of a job that does not exist.
    let words = |status: &tonic::Status, id: &str| status.message().replace(id, "ID");
    let never = get_job(&mut bob, "never").await.unwrap_err();
    let hidden = get_job(&mut bob, "mine").await.unwrap_err();
    assert_eq!(hidden.code(), Code::NotFound, "{hidden:?}");
    assert_eq!(words(&hidden, "mine"), words(&never, "never"));
    let job_id = || "mine".to_string();
    let cancel = bob
        .cancel_job(proto::CancelJobRequest { job_id: job_id() })
        .await
        .unwrap_err();
    let delete = bob
        .delete_job(proto::DeleteJobRequest { job_id: job_id() })
        .await
        .unwrap_err();
    let watch = bob
        .watch_job(proto::WatchJobRequest { job_id: job_id() })
        .await
        .unwrap_err();
    for status in [cancel, delete, watch] {
        assert_eq!(status.code(), Code::NotFound, "{status:?}");
        assert_eq!(words(&status, "mine"), words(&never, "never"));
    }
    assert_eq!(
        get_job(&mut alice, "mine").await.unwrap().state,
        JobState::Succeeded as i32,
        "bob's calls changed alice's job"
    );

    // The same over HTTP, with bob's token.
    let url = format!("{}/v1/jobs", daemon.addr);
    let mine = format!("{url}/mine");
    for args in [
        vec![mine.as_str()],
        vec!["-X", "DELETE", &mine],
        vec!["-X", "POST", &format!("{mine}:cancel")],
    ] {
        let (code, body) = curl("bob-secret", &args);
        assert_eq!(code, "404", "{args:?}: {body}");
    }
    let (code, body) = curl("bob-secret", &[&url]);
    assert_eq!(code, "200", "{body}");
    assert!(body.contains(r#""job_id":"same""#), "{body}");
    assert!(!body.contains("mine"), "{body}");
    let (code, body) = curl("alice-secret", &[&mine]);
    assert_eq!(code, "200", "{body}");

    // A tenant's paths stay in its folder.
    let escape = create_job(&mut bob, "escape", "../alice/in/a.in")
        .await
        .unwrap_err();
    assert_eq!(escape.code(), Code::InvalidArgument, "{escape:?}");

    // No token, and a token no tenant has, are refused.
    let mut anonymous = JobServiceClient::connect(daemon.addr.clone())
        .await
        .unwrap();
    let refused = anonymous
        .list_jobs(proto::ListJobsRequest::default())
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated);
    let mut stranger = as_tenant(&daemon, "carol-secret").await;
    assert_eq!(
        get_job(&mut stranger, "mine").await.unwrap_err().code(),
        Code::Unauthenticated
    );

    // Solver calls count by tenant too.
    let channel = Channel::from_shared(daemon.addr.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let bearer = AddBearer::new(Some(&Secret::new("bob-secret"))).unwrap();
    let mut solver = SolverClient::with_interceptor(channel, bearer);
    let deal = std::fs::read_to_string(data("sample.in")).unwrap();
    solver
        .solve(proto::SolveRequest {
            deals: vec![proto::Deal {
                cards: deal.split_whitespace().collect::<Vec<_>>().join(" "),
                ..Default::default()
            }],
            ..Default::default()
        })
        .await
        .unwrap();
    let scraped = scrape(&daemon.metrics_addr());
    let calls = |tenant: &str, method: &str| {
        metric(
            &scraped,
            &format!(
                "patience_tenant_calls_total{{tenant=\"{tenant}\",method=\"patience.v1.{method}\"}}"
            ),
        )
    };
    assert_eq!(calls("alice", "JobService/CreateJob"), Some(2.0));
    assert_eq!(calls("bob", "JobService/CreateJob"), Some(2.0));
    assert_eq!(calls("bob", "Solver/Solve"), Some(1.0));
    assert_eq!(calls("alice", "Solver/Solve"), None);
    assert_eq!(
        metric(
            &scraped,
            "patience_jobs{tenant=\"alice\",state=\"succeeded\"}"
        ),
        Some(2.0)
    );
    assert_eq!(
        metric(
            &scraped,
            "patience_jobs{tenant=\"bob\",state=\"succeeded\"}"
        ),
        Some(1.0)
    );
    assert_eq!(
        metric(
            &scraped,
            "patience_tenant_limit{tenant=\"bob\",cap=\"max_queued_jobs\"}"
        ),
        Some(2.0)
    );
}

/// One place: alice's job on a held FIFO runs; she queues two more; bob's cap of 2 refuses his
/// third with a quota naming him; the work gauges count the backlog, worked by hand; when
/// alice's job ends, bob's first starts before her second (fair share), and when the daemon is
/// killed and started again every tenant's queue is back, in order, and runs to its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_place_is_shared_the_caps_hold_and_a_restart_rebuilds_every_queue() {
    let (dir, tenants) = tenants_folder("tenants-share");
    let deal = std::fs::read(data("sample.in")).unwrap();
    let (hold_a, held_a) = std::sync::mpsc::channel();
    let writer_a = fed_fifo(&dir.join("alice/in/f.in"), deal.clone(), held_a);
    let (hold_b, held_b) = std::sync::mpsc::channel();
    let writer_b = fed_fifo(&dir.join("bob/in/f.in"), deal.clone(), held_b);
    let mut daemon = serve(&dir, &tenants);
    let mut alice = as_tenant(&daemon, "alice-secret").await;
    let mut bob = as_tenant(&daemon, "bob-secret").await;

    create_job(&mut alice, "a1", "in/f.in").await.unwrap();
    reaches(&mut alice, "a1", JobState::Running).await;
    create_job(&mut alice, "a2", "in/a.in").await.unwrap();
    create_job(&mut alice, "a3", "in/a.in").await.unwrap();
    create_job(&mut bob, "b1", "in/f.in").await.unwrap();
    create_job(&mut bob, "b2", "in/a.in").await.unwrap();
    let refused = create_job(&mut bob, "b3", "in/a.in").await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(refused.message().contains("tenant bob"), "{refused:?}");
    let details = refused.get_error_details();
    let quota = details.quota_failure().expect("a QuotaFailure");
    assert_eq!(quota.violations[0].subject, "tenant bob: max_queued_jobs");
    assert_eq!(
        details.retry_info().and_then(|r| r.retry_delay),
        Some(Duration::from_secs(1))
    );
    // Alice has no cap of her own: the daemon's (1,000) is far.
    create_job(&mut alice, "a4", "in/a.in").await.unwrap();

    // The backlog by hand: alice's a2, a3, a4 wait with the sample's bytes each, her a1 runs
    // with a FIFO (size unknown: 0 bytes, its floor of 1 s); bob's b1 (a FIFO) and b2 wait. No
    // run has been measured, so the rate is the assumed 4,000,000 bytes a second, and each job
    // counts at least a second: alice 1 + max(3 x 108 / 4e6, 3) = 4, bob max(108 / 4e6, 2) = 2.
    let size = deal.len() as f64;
    let scraped = scrape(&daemon.metrics_addr());
    let work = |what: &str| metric(&scraped, what).unwrap_or(f64::NAN);
    assert_eq!(
        work("patience_jobs_work_bytes{tenant=\"alice\",state=\"queued\"}"),
        3.0 * size
    );
    assert_eq!(
        work("patience_jobs_work_bytes{tenant=\"bob\",state=\"queued\"}"),
        size
    );
    assert_eq!(
        work("patience_jobs_work_bytes{tenant=\"alice\",state=\"running\"}"),
        0.0
    );
    assert_eq!(work("patience_jobs_work_seconds{tenant=\"alice\"}"), 4.0);
    assert_eq!(work("patience_jobs_work_seconds{tenant=\"bob\"}"), 2.0);

    // Alice's a1 ends: bob's b1, created after her a2, takes the place first.
    drop(hold_a);
    writer_a.join().unwrap();
    reaches(&mut alice, "a1", JobState::Succeeded).await;
    assert_eq!(
        get_job(&mut bob, "b1").await.unwrap().state,
        JobState::Running as i32
    );
    assert_eq!(
        get_job(&mut alice, "a2").await.unwrap().state,
        JobState::Queued as i32
    );

    // SIGKILL, with b1 running and a2, a3, a4, b2 queued; the next start takes them all up.
    daemon.kill();
    drop(hold_b);
    // b1 may have been killed before it opened its FIFO, which leaves the writer waiting for a
    // reader: one that does not wait lets it through (what it wrote is dropped with the pipe).
    let unstick = {
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(dir.join("bob/in/f.in"))
            .unwrap()
    };
    writer_b.join().unwrap();
    drop(unstick);
    let daemon = serve(&dir, &tenants);
    let mut alice = as_tenant(&daemon, "alice-secret").await;
    let mut bob = as_tenant(&daemon, "bob-secret").await;
    assert_eq!(ids(&mut alice).await, ["a1", "a2", "a3", "a4"]);
    assert_eq!(ids(&mut bob).await, ["b1", "b2"]);
    // Bob's queue is rebuilt with his cap: once b1 runs again (after alice's a2, the oldest
    // waiting), b2 waits, so b3 may wait and b4 may not.
    reaches(&mut bob, "b1", JobState::Running).await;
    create_job(&mut bob, "b3", "in/a.in").await.unwrap();
    let full = create_job(&mut bob, "b4", "in/a.in").await.unwrap_err();
    assert_eq!(full.code(), Code::ResourceExhausted, "{full:?}");
    // b1's FIFO gets a writer again; then every job runs to its end.
    let fifo = dir.join("bob/in/f.in");
    let again = std::thread::spawn(move || {
        use std::io::Write as _;
        let mut writer = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
        writer.write_all(&deal).unwrap();
    });
    for id in ["a2", "a3", "a4"] {
        reaches(&mut alice, id, JobState::Succeeded).await;
    }
    for id in ["b1", "b2", "b3"] {
        reaches(&mut bob, id, JobState::Succeeded).await;
    }
    again.join().unwrap();
    let answer = std::fs::read_to_string(data("sample.out6")).unwrap();
    for out in [
        "alice/out/a2.txt",
        "alice/out/a4.txt",
        "bob/out/b1.txt",
        "bob/out/b3.txt",
    ] {
        assert_eq!(
            std::fs::read_to_string(dir.join(out)).unwrap(),
            answer,
            "{out}"
        );
    }
    let scraped = scrape(&daemon.metrics_addr());
    for tenant in ["alice", "bob"] {
        let series = format!("patience_jobs_work_seconds{{tenant=\"{tenant}\"}}");
        assert_eq!(metric(&scraped, &series), Some(0.0), "{series}");
    }
}

/// docs/jobs.md's tenants, by example: its TOML file and its `serve` line, as shown, and every `$`
/// example of the section printing what it shows (two tenants apart, bob's cap, pages, a delete,
/// the work gauges at rest).
#[test]
fn the_tenants_examples_in_docs_jobs_print_what_they_show() {
    let section = crate::common::doc_section("docs/jobs.md", "## Tenants");
    let dir = Scratch::new("tenants-docs");
    let toml = section
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a toml block");
    dir.write("tenants.toml", toml);
    dir.write("alice.token", "alice-secret\n");
    dir.write("bob.token", "bob-secret\n");
    for tenant in ["alice", "bob"] {
        let home = dir.join("jobs").join(tenant);
        std::fs::create_dir_all(&home).unwrap();
        std::fs::copy(data("random1000.in"), home.join("deals.in")).unwrap();
    }
    std::fs::copy(data("random1000.out6"), dir.join("random1000.out6")).unwrap();
    let serve = section
        .lines()
        .find_map(|line| line.strip_prefix("patience serve "))
        .expect("a `patience serve` line");
    // The line's flags as given, its paths in the test's folder and its ports the test's own.
    let args: Vec<String> = serve
        .split_whitespace()
        .map(|arg| match arg {
            "jobs" | "tenants.toml" => dir.join(arg).display().to_string(),
            "127.0.0.1:9090" => "127.0.0.1:0".to_string(),
            other => other.to_string(),
        })
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let daemon = Daemon::start(&args);
    let metrics = daemon.metrics_addr();
    crate::common::doc_examples("docs/jobs.md", "## Tenants")
        .at_least(14)
        .rewrite("http://127.0.0.1:50051", &daemon.addr)
        .rewrite("127.0.0.1:9090", &metrics)
        .in_dir(dir.path())
        .run();
}
