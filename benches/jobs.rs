//! Jobs benchmark: prints figures, asserts nothing about time.
//!
//! `cargo bench --bench jobs` (options after `--`: `--deals N` (1,000,000), `--calls C` (400),
//! `--queued Q` (10,000), `--queue-only` for the last part alone).
//!
//! N random deals (`patience gen --seed 2026`), zstd-compressed, as an object of a `moto_server`
//! the bench starts (PyPI's S3-compatible store, from `PATIENCE_VENV`; without it the bench says
//! so and stops):
//! - `patience solve --workers 2` of the object, to standard output: the wall time a job is held
//!   against;
//! - the same as a job of `patience serve --workers 2 --jobs-dir D` (from the object to an object):
//!   its wall time from CreateJob to the watch's last state, the daemon's peak RSS, and C one-deal
//!   unary `Solve` calls made one after another while it runs against C made on the idle daemon
//!   (median and p99);
//! - the same job again, the daemon killed with SIGKILL two thirds of the way and started again: the
//!   wall time from CreateJob to the end, restart included, and whether the object written is
//!   byte for byte the first job's and `solve`'s;
//! - Q jobs queued behind one held running (its input a FIFO the bench keeps open), on a local
//!   `--jobs-dir`: the creates' rate (16 callers at once), ListJobs of one page (100 jobs; and of
//!   1,000) median and p99 over 50 calls with the Q jobs there, and the daemon's start-up with
//!   their Q records on disk (SIGKILL, then from spawn to the first ListJobs answered).

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use patience::proto::job_service_client::JobServiceClient;
use patience::proto::solver_client::SolverClient;
use patience::proto::{self, JobState};
use support::{Daemon, Flags, S3Server, Sampler, TempDir, percentile, text_request};
use tonic::transport::Channel;

fn machine() -> String {
    let lscpu = Command::new("lscpu")
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    String::from_utf8_lossy(&lscpu)
        .lines()
        .find_map(|l| l.strip_prefix("Model name:").map(|m| m.trim().to_string()))
        .unwrap_or_else(|| "unknown".into())
}

fn start(dir: &TempDir, s3: &S3Server) -> Daemon {
    let folder = dir.join("jobs").display().to_string();
    // Parts of 5 MiB (S3's least): a restart takes up the parts uploaded before the kill.
    let mut env = vec![
        ("RUST_LOG", "info"),
        ("PATIENCE_UPLOAD_PART_SIZE", "5242880"),
    ];
    env.extend(s3.vars());
    Daemon::start_with(&["--workers", "2", "--jobs-dir", &folder], &env, None)
}

async fn jobs(daemon: &Daemon) -> JobServiceClient<Channel> {
    JobServiceClient::connect(daemon.addr.clone())
        .await
        .expect("connect")
}

fn spec(output: &str) -> proto::JobSpec {
    proto::JobSpec {
        inputs: vec!["s3://jobs/deals.in.zst".into()],
        output: output.into(),
        ..Default::default()
    }
}

async fn watch_to_end(client: &mut JobServiceClient<Channel>, id: &str) -> proto::Job {
    let mut stream = client
        .watch_job(proto::WatchJobRequest { job_id: id.into() })
        .await
        .expect("watch")
        .into_inner();
    let mut last = proto::Job::default();
    while let Ok(Some(update)) = stream.message().await {
        last = update.job.unwrap_or_default();
    }
    last
}

/// `calls` one-deal unary calls, one after another; their latencies in microseconds, sorted.
async fn unary(daemon: &Daemon, deals: &[patience::deal::Deal]) -> Vec<f64> {
    let mut client = SolverClient::connect(daemon.addr.clone())
        .await
        .expect("connect");
    let mut took = Vec::with_capacity(deals.len());
    for deal in deals {
        let started = Instant::now();
        client
            .solve(text_request(std::slice::from_ref(deal)))
            .await
            .expect("solve");
        took.push(started.elapsed().as_secs_f64() * 1e6);
    }
    took.sort_by(f64::total_cmp);
    took
}

fn said(us: &[f64]) -> String {
    format!(
        "median {:.0} us, p99 {:.0} us",
        percentile(us, 0.5),
        percentile(us, 0.99)
    )
}

/// Q queued jobs: the creates' rate, a page's latency, and a start-up with their records.
fn queue(queued: usize) {
    let dir = TempDir::new("jobs-queue");
    let folder = dir.join("jobs");
    std::fs::create_dir_all(folder.join("in")).unwrap();
    std::fs::write(folder.join("in/a.in"), b"AS 9S 6C KS\nJC QH AC KH\n7S QD JD KD\nQS TS JS 9H\n6D TD AD 8S\nQC TH KC 8D\n8C 9D TC 7C\n9C 7H JH 7D\n8H 6S AH 6H\n").unwrap();
    let fifo = folder.join("in/f.in");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let (hold, held) = std::sync::mpsc::channel::<()>();
    let writer = std::thread::spawn(move || {
        use std::io::Write as _;
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&fifo) {
            let _ = f.write_all(b"AS 9S 6C KS\n");
            let _ = held.recv();
        }
    });
    let path = folder.display().to_string();
    let limit = (queued + 10).to_string();
    let args = [
        "--workers",
        "1",
        "--jobs-dir",
        &path,
        "--max-queued-jobs",
        &limit,
    ];
    let mut daemon = Daemon::start_with(&args, &[("RUST_LOG", "warn")], None);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let local = |id: &str, input: &str| proto::CreateJobRequest {
        job_id: id.into(),
        spec: Some(proto::JobSpec {
            inputs: vec![input.into()],
            output: format!("out/{id}.txt"),
            ..Default::default()
        }),
    };
    let (made, pages, thousands) = runtime.block_on(async {
        let mut client = jobs(&daemon).await;
        client
            .create_job(local("held", "in/f.in"))
            .await
            .expect("create");
        let started = Instant::now();
        let callers: Vec<_> = (0..16)
            .map(|c| {
                let addr = daemon.addr.clone();
                tokio::spawn(async move {
                    let mut client = JobServiceClient::connect(addr).await.expect("connect");
                    for i in (c..queued).step_by(16) {
                        let request = proto::CreateJobRequest {
                            job_id: format!("q{i:06}"),
                            spec: Some(proto::JobSpec {
                                inputs: vec!["in/a.in".into()],
                                output: format!("out/q{i:06}.txt"),
                                ..Default::default()
                            }),
                        };
                        client.create_job(request).await.expect("create");
                    }
                })
            })
            .collect();
        for caller in callers {
            caller.await.expect("a caller");
        }
        let made = started.elapsed();
        let timed = |size: i32| {
            let mut client = client.clone();
            async move {
                let mut took = Vec::new();
                for _ in 0..50 {
                    let at = Instant::now();
                    let page = client
                        .list_jobs(proto::ListJobsRequest {
                            page_size: size,
                            ..Default::default()
                        })
                        .await
                        .expect("list");
                    took.push(at.elapsed());
                    assert_eq!(page.into_inner().jobs.len(), size as usize);
                }
                took.sort();
                took
            }
        };
        let pages = timed(100).await;
        let thousands = timed(1000).await;
        (made, pages, thousands)
    });
    let records = std::fs::read_dir(folder.join(".patience-jobs")).map_or(0, |d| d.count());
    daemon.kill();
    let started = Instant::now();
    let again = Daemon::start_with(&args, &[("RUST_LOG", "warn")], None);
    // The port listens before the board has read its records: the start-up ends at the first
    // ListJobs answered.
    let listening = started.elapsed();
    let listed = runtime.block_on(async {
        let mut client = jobs(&again).await;
        loop {
            let asked = proto::ListJobsRequest {
                page_size: 1,
                ..Default::default()
            };
            if client.list_jobs(asked).await.is_ok() {
                return started.elapsed();
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    });
    drop(again);
    drop(hold);
    let _ = writer.join();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{queued} jobs created behind a running one:   {:>7.2} s, {:.0} creates/s (16 callers)",
        made.as_secs_f64(),
        queued as f64 / made.as_secs_f64()
    );
    println!(
        "ListJobs, one page of 100 of them:          median {:.2} ms, p99 {:.2} ms",
        ms(percentile(&pages, 0.5)),
        ms(percentile(&pages, 0.99))
    );
    println!(
        "ListJobs, one page of 1,000:                median {:.2} ms, p99 {:.2} ms",
        ms(percentile(&thousands, 0.5)),
        ms(percentile(&thousands, 0.99))
    );
    println!(
        "start-up with {records} records on disk:        {:>7.3} s from spawn to the first ListJobs answered ({:.3} s to listening)",
        listed.as_secs_f64(),
        listening.as_secs_f64()
    );
}

fn main() {
    let flags = Flags::from_env();
    let deals: usize = flags.get("--deals", 1_000_000usize);
    let calls: usize = flags.get("--calls", 400usize).max(10);
    let queued: usize = flags.get("--queued", 10_000usize).max(1);
    if flags.has("--queue-only") {
        queue(queued);
        return;
    }
    let Some(s3) = S3Server::start() else {
        println!("no moto_server in PATIENCE_VENV: the jobs bench needs it");
        return;
    };
    let dir = TempDir::new("jobs");
    std::fs::create_dir_all(dir.join("jobs")).unwrap();
    let generated = Command::new(env!("CARGO_BIN_EXE_patience"))
        .args(["gen", "--count", &deals.to_string(), "--seed", "2026"])
        .output()
        .expect("patience gen");
    let packed = zstd::encode_all(generated.stdout.as_slice(), 3).unwrap();
    std::fs::write(dir.join("deals.in.zst"), &packed).unwrap();
    s3.make_bucket("jobs");
    s3.put_file("jobs", "deals.in.zst", &dir.join("deals.in.zst"));
    let probes: Vec<patience::deal::Deal> = {
        let text = Command::new(env!("CARGO_BIN_EXE_patience"))
            .args(["gen", "--count", &calls.to_string(), "--seed", "7"])
            .output()
            .expect("patience gen")
            .stdout;
        patience::deal::DealReader::new(text.as_slice())
            .map(|d| d.expect("a generated deal"))
            .collect()
    };
    println!(
        "machine: {} ({} cores)",
        machine(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "{deals} deals, zstd object of {} bytes in moto; --workers 2 throughout",
        packed.len()
    );

    let mut solve = Command::new(env!("CARGO_BIN_EXE_patience"));
    solve
        .args(["solve", "--workers", "2", "s3://jobs/deals.in.zst"])
        .envs(s3.vars());
    let (solve_wall, solve_peak, solved) = support::run_measured(&mut solve);
    println!(
        "solve s3://jobs/deals.in.zst > stdout:        {:>7.2} s wall, peak RSS {} MiB",
        solve_wall.as_secs_f64(),
        solve_peak / 1024
    );

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut daemon = start(&dir, &s3);
    let idle = runtime.block_on(unary(&daemon, &probes));
    let sampler = Sampler::start(daemon.pid(), Duration::from_millis(5));
    let started = Instant::now();
    let (job, during) = runtime.block_on(async {
        let job = tokio::spawn({
            let addr = daemon.addr.clone();
            async move {
                let mut client = JobServiceClient::connect(addr).await.expect("connect");
                client
                    .create_job(proto::CreateJobRequest {
                        job_id: "one".into(),
                        spec: Some(spec("s3://jobs/one.out")),
                    })
                    .await
                    .expect("create");
                watch_to_end(&mut client, "one").await
            }
        });
        // The calls start once the job runs.
        let mut client = jobs(&daemon).await;
        loop {
            let now = client
                .get_job(proto::GetJobRequest {
                    job_id: "one".into(),
                })
                .await
                .map(|r| r.into_inner().job.unwrap_or_default());
            if now.is_ok_and(|j| j.items_done > 0) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let during = unary(&daemon, &probes).await;
        (job.await.expect("the job"), during)
    });
    let job_wall = started.elapsed();
    let peak = sampler.finish().into_iter().max().unwrap_or(0);
    assert_eq!(job.state, JobState::Succeeded as i32, "{job:?}");
    let written = s3.get("jobs", "one.out").expect("the job's object");
    println!(
        "the job, s3 zstd object -> s3 object:       {:>7.2} s wall ({:.3}x solve's), daemon peak RSS {} MiB, output {}",
        job_wall.as_secs_f64(),
        job_wall.as_secs_f64() / solve_wall.as_secs_f64(),
        peak / 1024,
        if written == solved {
            "identical to solve's"
        } else {
            "DIFFERENT from solve's"
        }
    );
    println!(
        "unary Solve, one deal, idle daemon:          {}",
        said(&idle)
    );
    println!(
        "unary Solve, one deal, while the job runs:   {}",
        said(&during)
    );

    // The same job again, killed two thirds of the way.
    let started = Instant::now();
    runtime.block_on(async {
        let mut client = jobs(&daemon).await;
        client
            .create_job(proto::CreateJobRequest {
                job_id: "two".into(),
                spec: Some(spec("s3://jobs/two.out")),
            })
            .await
            .expect("create");
        loop {
            let now = client
                .get_job(proto::GetJobRequest {
                    job_id: "two".into(),
                })
                .await
                .map(|r| r.into_inner().job.unwrap_or_default())
                .unwrap_or_default();
            if now.items_done as usize >= deals * 2 / 3 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    daemon.kill();
    let killed_at = started.elapsed();
    let daemon = start(&dir, &s3);
    let again = runtime.block_on(async {
        let mut client = jobs(&daemon).await;
        watch_to_end(&mut client, "two").await
    });
    let wall = started.elapsed();
    assert_eq!(again.state, JobState::Succeeded as i32, "{again:?}");
    let resumed = daemon
        .log_so_far()
        .into_iter()
        .find(|l| l.contains("job ended"))
        .and_then(|l| support::log_field(&l, "resumed").map(str::to_string))
        .unwrap_or_default();
    let second = s3.get("jobs", "two.out").expect("the second job's object");
    println!(
        "the same job, SIGKILL at {:.2} s, restarted:  {:>7.2} s wall in all; the restart took up {resumed} answers; output {}",
        killed_at.as_secs_f64(),
        wall.as_secs_f64(),
        if second == solved {
            "identical to solve's"
        } else {
            "DIFFERENT from solve's"
        }
    );
    drop(daemon);
    queue(queued);
}
