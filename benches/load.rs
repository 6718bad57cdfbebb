//! Load benchmark: prints figures, asserts nothing about time.
//!
//! `cargo bench --bench load` (options after `--`: `--streams N --deals-per-stream N --workers W
//! --slow-deals N --stall-seconds S`; defaults 64, 1000, 2, 100000 and 3).
//!
//! Starts one `patience serve --workers W` daemon on loopback (the real binary) and drives it with
//! tonic clients in this process. Every result is checked: in order by index, and equal to what an
//! in-process [`Solver`] answers for that deal (computed before the daemon starts).
//! 1. Idle: the daemon's resident memory right after start, the baseline.
//! 2. Load: N concurrent `SolveStream` calls, each on its own connection, with different deals, 100
//!    per message. Prints deals/s, each stream's completion time (min/median/max), the daemon's
//!    RSS sampled every 20 ms (max, and at the end) and its peak (VmHWM, reset through
//!    /proc/PID/clear_refs before each round where the kernel allows it), beside the bound of the
//!    solver tables (W x 3.8 MiB). Then the same load with 4x the deals per stream on the same
//!    daemon: whether the daemon's memory grows with the number of deals.
//! 3. Slow consumer: one call that sends its deals (100 per message) as fast as flow control lets
//!    it but reads nothing for the stall time. Prints the daemon's RSS sampled every 50 ms during
//!    the stall, how many deals the client got to send (counted as its outbound stream yields
//!    them), and how far the daemon got (all, if its log shows the call ended; else at least the
//!    results the client had received, at most the deals it had sent); then reads everything and
//!    checks all the results.
//! 4. Silent flood (alone with `--flood-only`): a second daemon, `--workers 2` with 1,024
//!    descriptors (so 896 connections at once) and the default 10 s `--handshake-timeout`, 1,500
//!    TCP connections that send nothing, then one real client. Prints how long the client waited
//!    to be served, the CPU the daemon used over 5 s of the flood (it once spun a whole core on
//!    EMFILE) and how often it ran out of descriptors. `tests/hardening.rs` checks that the client
//!    is served and that the daemon never runs out.
//!
//! Reading the figures: the daemon reads up to `--max-in-flight` (4096) deals per stream ahead, so
//! its memory grows with the deals per stream until that budget binds (64 x 4096 deals for the
//! defaults), then levels off. A result is ~15 bytes on the wire, so a tonic client's 2 MiB
//! receive window holds ~140,000 of them: with the default 100,000 slow deals the stall holds
//! nothing back (the daemon solves on into the client's buffer); `--slow-deals 400000
//! --stall-seconds 15` shows the client being held back and the daemon idle and flat.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use patience::deal::Deal;
use patience::proto::solver_client::SolverClient;
use patience::proto::{self, SolveRequest, SolveResponse, result::Outcome};
use patience::solver::Solver;
use prost::Message;
use support::{
    Daemon, Flags, Sampler, log_field, metric, reset_peak, scrape, start_daemon,
    streams_finished_since, text_request, warnings,
};
use tonic::transport::{Channel, Endpoint};

/// The UVa sample deal, for the silent flood's one call.
const SAMPLE: &str = "AS 9S 6C KS JC QH AC KH 7S QD JD KD QS TS JS 9H 6D TD AD 8S QC TH KC 8D 8C 9D \
                      TC 7C 9C 7H JH 7D 8H 6S AH 6H";
/// Seed of the deals; each stream of each phase gets its own seed derived from it.
const SEED: u64 = 20_260_601;
/// Deals per request message. At least 100, so that a response is large: a tonic client that
/// stops reading while many small (< 256-byte) DATA frames arrive closes its own connection (h2's
/// "too_many_data_frames" guard).
const PER_MESSAGE: usize = 100;
/// Deals per stream of the second load round, as a multiple of the first's.
const SECOND_ROUND: usize = 4;
/// RSS sampling period under load and during the stall.
const LOAD_SAMPLE: Duration = Duration::from_millis(20);
const STALL_SAMPLE: Duration = Duration::from_millis(50);
/// How long the daemon may take to log its address, and to stop on SIGTERM.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The daemon's default `--max-in-flight` (deals read but not yet handed to the transport, per
/// stream), for the printout; the bench does not change it.
const MAX_IN_FLIGHT: usize = 4_096;
/// A tonic client's HTTP/2 receive window per stream (hyper's default; the bench keeps it).
const CLIENT_STREAM_WINDOW: usize = 2 << 20;
/// Memory of one worker's solver: its index table of 5^9 u16 (3.73 MiB) plus the touched pages of
/// its dense array.
const TABLE_MIB: f64 = 3.8;

struct Options {
    streams: usize,
    deals_per_stream: usize,
    workers: usize,
    slow_deals: usize,
    stall: Duration,
}

fn options() -> Options {
    let flags = Flags::from_env();
    let stall: f64 = flags.get("--stall-seconds", 3.0);
    assert!(
        stall.is_finite() && (0.0..=3600.0).contains(&stall),
        "--stall-seconds wants seconds from 0 to 3600, got {stall}"
    );
    Options {
        streams: flags.get("--streams", 64usize).max(1),
        deals_per_stream: flags.get("--deals-per-stream", 1_000usize).max(1),
        workers: flags.get("--workers", 2usize).max(1),
        slow_deals: flags.get("--slow-deals", 100_000usize).max(1),
        stall: Duration::from_secs_f64(stall),
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// One stream's deals and the in-process answers for them.
struct Job {
    name: String,
    deals: Vec<Deal>,
    want: Vec<f64>,
}

/// Deals for each `(name, seed, count)`, with the answers of in-process solvers, on every core.
fn prepare(specs: Vec<(String, u64, usize)>) -> Vec<Job> {
    let mut jobs: Vec<Job> = specs
        .into_iter()
        .map(|(name, seed, n)| {
            let mut rng = fastrand::Rng::with_seed(seed);
            Job {
                name,
                deals: (0..n).map(|_| Deal::shuffled(&mut rng)).collect(),
                want: Vec::with_capacity(n),
            }
        })
        .collect();
    let all: Vec<Deal> = jobs.iter().flat_map(|j| j.deals.iter().copied()).collect();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let chunk = all.len().div_ceil(threads).max(1);
    let answers: Vec<f64> = std::thread::scope(|s| {
        let handles: Vec<_> = all
            .chunks(chunk)
            .map(|c| {
                s.spawn(move || {
                    let mut solver = Solver::new();
                    c.iter()
                        .map(|d| solver.solve(d).probability)
                        .collect::<Vec<f64>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("solver thread"))
            .collect()
    });
    let mut answers = answers.into_iter();
    for job in &mut jobs {
        job.want.extend(answers.by_ref().take(job.deals.len()));
    }
    jobs
}

/// The deals as request messages of [`PER_MESSAGE`] deals.
fn messages(deals: &[Deal]) -> Vec<SolveRequest> {
    deals.chunks(PER_MESSAGE).map(text_request).collect()
}

/// Checks a response's results against the job: in order from `*next`, each equal to the
/// in-process answer. Returns how many were equal within 1e-12 but not bit for bit.
fn check(job: &Job, next: &mut usize, response: &SolveResponse) -> usize {
    let mut inexact = 0;
    for r in &response.results {
        assert_eq!(
            r.index, *next as u64,
            "{}: result out of order (want index {next})",
            job.name
        );
        let want = *job
            .want
            .get(*next)
            .unwrap_or_else(|| panic!("{}: more results than deals", job.name));
        match r.outcome {
            Some(Outcome::Probability(p)) if p.to_bits() == want.to_bits() => {}
            Some(Outcome::Probability(p)) if (p - want).abs() <= 1e-12 => inexact += 1,
            ref other => panic!(
                "{}: deal {next} ({}): got {other:?}, the in-process solver says {want}",
                job.name, job.deals[*next]
            ),
        }
        *next += 1;
    }
    inexact
}

async fn connect(url: &str) -> SolverClient<Channel> {
    let channel = Endpoint::from_shared(url.to_string())
        .expect("endpoint")
        .connect_timeout(CONNECT_TIMEOUT)
        .connect()
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {url}: {e}"));
    SolverClient::new(channel).max_decoding_message_size(usize::MAX)
}

/// What one load round measured.
struct Round {
    wall: Duration,
    /// Each stream's time from the common start to its last result, sorted.
    per_stream: Vec<Duration>,
    inexact: usize,
}

/// One `SolveStream` call per job, each on its own connection, all at once.
async fn load_round(url: &str, jobs: &[Job]) -> Round {
    let mut clients = Vec::with_capacity(jobs.len());
    for _ in jobs {
        clients.push(connect(url).await);
    }
    let requests: Vec<Vec<SolveRequest>> = jobs.iter().map(|j| messages(&j.deals)).collect();
    let start = Instant::now();
    let calls =
        clients.into_iter().zip(requests).zip(jobs).map(
            |((mut client, requests), job)| async move {
                let mut responses = client
                    .solve_stream(tokio_stream::iter(requests))
                    .await
                    .unwrap_or_else(|e| panic!("{}: SolveStream refused: {e}", job.name))
                    .into_inner();
                let (mut next, mut inexact) = (0, 0);
                while let Some(response) = responses.message().await.unwrap_or_else(|e| {
                    panic!("{}: stream failed after {next} results: {e}", job.name)
                }) {
                    inexact += check(job, &mut next, &response);
                }
                assert_eq!(next, job.deals.len(), "{}: results missing", job.name);
                // The connection closes here, with the client.
                (start.elapsed(), inexact)
            },
        );
    let done = futures::future::join_all(calls).await;
    let wall = start.elapsed();
    let inexact = done.iter().map(|(_, i)| i).sum();
    let mut per_stream: Vec<Duration> = done.into_iter().map(|(t, _)| t).collect();
    per_stream.sort();
    Round {
        wall,
        per_stream,
        inexact,
    }
}

/// Hang protection only: generous next to the time a run takes.
fn call_timeout(deals: usize) -> Duration {
    Duration::from_secs(60) + Duration::from_millis(deals as u64)
}

/// What the slow consumer saw.
struct Slow {
    /// Daemon RSS sampled during the stall, KiB.
    stall_rss: Vec<u64>,
    /// Deals the outbound stream had yielded at the end of the stall.
    sent_at_stall_end: usize,
    /// When (since the call started) the outbound stream yielded its last deal so far, at the end
    /// of the stall.
    last_sent_at: Duration,
    /// Time from the call's start to the end of the stall, and when that was.
    stall_ended_at: Duration,
    stall_end: Instant,
    /// Results the client had received (buffered, unread) at the end of the stall.
    received_at_stall_end: usize,
    /// Daemon CPU seconds during the whole stall and during its last 0.5 s (or less).
    stall_cpu: f64,
    tail_cpu: f64,
    tail: Duration,
    /// Bytes of those results' messages (gRPC framing included).
    received_bytes_at_stall_end: usize,
    /// Time to read everything after the stall.
    read_time: Duration,
    /// Bytes of the response messages (gRPC framing included).
    response_bytes: usize,
    inexact: usize,
}

async fn slow_consumer(url: &str, job: &Job, stall: Duration, daemon: &Daemon) -> Slow {
    let mut client = connect(url).await;
    let requests = messages(&job.deals);
    let sent = Arc::new(AtomicUsize::new(0));
    let last_sent_us = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let outbound = {
        let (sent, last_sent_us) = (sent.clone(), last_sent_us.clone());
        futures::stream::iter(requests).map(move |request| {
            sent.fetch_add(request.deals.len(), Ordering::Relaxed);
            last_sent_us.store(start.elapsed().as_micros() as u64, Ordering::Relaxed);
            request
        })
    };
    let mut responses = tokio::time::timeout(CONNECT_TIMEOUT, client.solve_stream(outbound))
        .await
        .unwrap_or_else(|_| panic!("{}: no response headers in {CONNECT_TIMEOUT:?}", job.name))
        .unwrap_or_else(|e| panic!("{}: SolveStream refused: {e}", job.name))
        .into_inner();

    // The stall: read nothing, but keep this runtime (and so the connection) running.
    let cpu_start = daemon.cpu_seconds();
    let tail = stall.min(Duration::from_millis(500));
    let sampler = Sampler::start(daemon.pid(), STALL_SAMPLE);
    tokio::time::sleep(stall - tail).await;
    let cpu_tail = daemon.cpu_seconds();
    tokio::time::sleep(tail).await;
    let cpu_end = daemon.cpu_seconds();
    let stall_rss = sampler.finish();
    let stall_end = Instant::now();
    let stall_ended_at = stall_end - start;
    let sent_at_stall_end = sent.load(Ordering::Relaxed);
    let last_sent_at = Duration::from_micros(last_sent_us.load(Ordering::Relaxed));

    let (mut next, mut inexact, mut response_bytes) = (0, 0, 0);
    // The results the client already holds: read without waiting. On this one-thread runtime the
    // connection's task does not run meanwhile, so nothing arrives during the count.
    while let Some(item) = responses.message().now_or_never() {
        let Some(response) = item
            .unwrap_or_else(|e| panic!("{}: stream failed after {next} results: {e}", job.name))
        else {
            break;
        };
        response_bytes += response.encoded_len() + 5;
        inexact += check(job, &mut next, &response);
    }
    let received_at_stall_end = next;
    let received_bytes_at_stall_end = response_bytes;

    let read_start = Instant::now();
    let read = async {
        while let Some(response) = responses
            .message()
            .await
            .unwrap_or_else(|e| panic!("{}: stream failed after {next} results: {e}", job.name))
        {
            response_bytes += response.encoded_len() + 5;
            inexact += check(job, &mut next, &response);
        }
    };
    tokio::time::timeout(call_timeout(job.deals.len()), read)
        .await
        .unwrap_or_else(|_| panic!("{}: results not all read in time", job.name));
    let read_time = read_start.elapsed();
    assert_eq!(next, job.deals.len(), "{}: results missing", job.name);
    Slow {
        stall_rss,
        sent_at_stall_end,
        last_sent_at,
        stall_ended_at,
        stall_end,
        received_at_stall_end,
        stall_cpu: cpu_end - cpu_start,
        tail_cpu: cpu_end - cpu_tail,
        tail,
        received_bytes_at_stall_end,
        read_time,
        response_bytes,
        inexact,
    }
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn main() {
    if Flags::from_env().has("--flood-only") {
        silent_flood();
        return;
    }
    let o = options();
    let w = o.workers;
    println!(
        "load bench: {} streams x {} deals (then x {SECOND_ROUND}), {w} workers, {PER_MESSAGE} \
         deals per message; slow consumer: {} deals, stall {:.1} s",
        o.streams,
        o.deals_per_stream,
        o.slow_deals,
        o.stall.as_secs_f64()
    );

    // Every deal and its in-process answer, before the daemon exists (so no CPU is shared).
    let started = Instant::now();
    let rounds = [o.deals_per_stream, SECOND_ROUND * o.deals_per_stream];
    let mut specs = Vec::new();
    for (r, &n) in rounds.iter().enumerate() {
        for s in 0..o.streams {
            specs.push((
                format!("round {} stream {s}", r + 1),
                SEED + (r as u64) * 1_000_000 + s as u64,
                n,
            ));
        }
    }
    specs.push(("slow consumer".to_string(), SEED + 9_000_000, o.slow_deals));
    let mut jobs = prepare(specs);
    let slow_job = jobs.pop().expect("slow job");
    let second: Vec<Job> = jobs.split_off(o.streams);
    let first = jobs;
    let total: usize = rounds.iter().map(|n| n * o.streams).sum::<usize>() + o.slow_deals;
    println!(
        "expected answers: {total} deals solved in this process in {} (seed {SEED})",
        secs(started.elapsed())
    );

    let mut daemon = start_daemon(w);
    let url = daemon.addr.clone();
    // Let the daemon settle (its threads start, its log line is already out).
    std::thread::sleep(Duration::from_millis(200));
    println!(
        "daemon: pid {}, {url}; idle after start: RSS {} (VmHWM {}); tables: {w} x {TABLE_MIB} MiB \
         = {:.1} MiB once touched; in-flight budget {MAX_IN_FLIGHT} deals per stream (default)",
        daemon.pid(),
        mib(daemon.rss_kib()),
        mib(daemon.peak_rss_kib()),
        w as f64 * TABLE_MIB
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");

    // 1. Load, twice, on the same daemon.
    for (r, jobs) in [first, second].iter().enumerate() {
        let deals: usize = jobs.iter().map(|j| j.deals.len()).sum();
        let reset = reset_peak(daemon.pid());
        let cpu = daemon.cpu_seconds();
        let sampler = Sampler::start(daemon.pid(), LOAD_SAMPLE);
        let round = runtime.block_on(async {
            tokio::time::timeout(call_timeout(deals), load_round(&url, jobs))
                .await
                .unwrap_or_else(|_| panic!("load round {} did not finish in time", r + 1))
        });
        let end_rss = daemon.rss_kib();
        let samples = sampler.finish();
        let cpu = daemon.cpu_seconds() - cpu;
        let p = &round.per_stream;
        println!(
            "load round {}: {} streams x {} deals = {deals} deals in {} = {:.0} deals/s; \
             per-stream completion min {} / median {} / max {}; daemon CPU {:.1} us/deal",
            r + 1,
            jobs.len(),
            jobs[0].deals.len(),
            secs(round.wall),
            deals as f64 / round.wall.as_secs_f64(),
            secs(p[0]),
            secs(p[p.len() / 2]),
            secs(p[p.len() - 1]),
            1e6 * cpu / deals as f64
        );
        println!(
            "  daemon RSS every {} ms ({} samples): max {}, at the end {}; peak (VmHWM) {} {}; \
             tables: {w} x {TABLE_MIB} MiB",
            LOAD_SAMPLE.as_millis(),
            samples.len(),
            mib(samples.iter().copied().max().unwrap_or(0).max(end_rss)),
            mib(end_rss),
            mib(daemon.peak_rss_kib()),
            if reset {
                "during this round"
            } else {
                "since start (cannot reset VmHWM here)"
            }
        );
        println!(
            "  results: all {deals} in order and equal to the in-process solver's ({} bit for bit, \
             {} within 1e-12)",
            deals - round.inexact,
            round.inexact
        );
    }

    // 2. The slow consumer.
    let reset = reset_peak(daemon.pid());
    let rss_before = daemon.rss_kib();
    let phase_start = Instant::now();
    let slow = runtime.block_on(async {
        tokio::time::timeout(
            call_timeout(o.slow_deals) + o.stall,
            slow_consumer(&url, &slow_job, o.stall, &daemon),
        )
        .await
        .unwrap_or_else(|_| panic!("the slow consumer did not finish in time"))
    });
    let n = o.slow_deals;
    let (lo, hi) = (
        slow.stall_rss.iter().copied().min().unwrap_or(0),
        slow.stall_rss.iter().copied().max().unwrap_or(0),
    );
    println!(
        "slow consumer: 1 stream of {n} deals, reading nothing for {:.1} s",
        o.stall.as_secs_f64()
    );
    println!(
        "  daemon RSS every {} ms during the stall ({} samples): min {}, max {} (before the call {})",
        STALL_SAMPLE.as_millis(),
        slow.stall_rss.len(),
        mib(lo),
        mib(hi),
        mib(rss_before)
    );
    let held = if slow.sent_at_stall_end == n {
        format!(
            "all {n} sent, the last at {} into the call: not held back",
            secs(slow.last_sent_at)
        )
    } else if slow.stall_ended_at.saturating_sub(slow.last_sent_at) >= Duration::from_millis(250) {
        format!(
            "{} of {n} sent, none after {} into the call: held back for the last {}",
            slow.sent_at_stall_end,
            secs(slow.last_sent_at),
            secs(slow.stall_ended_at - slow.last_sent_at)
        )
    } else {
        format!(
            "{} of {n} sent, still sending at the end of the stall (paced by the solvers)",
            slow.sent_at_stall_end
        )
    };
    println!("  client sends during the stall: {held}");
    // How far the daemon got: its "call finished" line comes once every deal is solved and queued
    // for the transport; otherwise at least what the client had received by the stall's end (and
    // at most what the client had sent).
    let finished = streams_finished_since(&daemon, phase_start);
    let solved = match finished.first() {
        Some((at, line)) if *at <= slow.stall_end => format!(
            "all {n} (its log says the call ended, items={}, {} before the stall ended)",
            log_field(line, "items").unwrap_or("?"),
            secs(slow.stall_end - *at)
        ),
        _ => format!(
            "at least {} (results the client had received, unread, by the stall's end), at most \
             {} (deals sent)",
            slow.received_at_stall_end, slow.sent_at_stall_end
        ),
    };
    println!(
        "  daemon during the stall: solved {solved}; CPU {:.2} s in the stall, {:.0}% of one core \
         in its last {} ms",
        slow.stall_cpu,
        100.0 * slow.tail_cpu / slow.tail.as_secs_f64().max(1e-9),
        slow.tail.as_millis()
    );
    println!(
        "  responses: {} bytes ({:.1} per deal); a tonic client's HTTP/2 receive window is {} MiB \
         per stream, room for ~{:.0} deals' results, plus {MAX_IN_FLIGHT} in the daemon's budget",
        slow.response_bytes,
        slow.response_bytes as f64 / n as f64,
        CLIENT_STREAM_WINDOW >> 20,
        CLIENT_STREAM_WINDOW as f64 * n as f64 / slow.response_bytes.max(1) as f64
    );
    println!(
        "  the client held {} results ({:.0} KiB of messages) unread at the stall's end: the \
         daemon's work-ahead sits in the client's receive buffer, not in the daemon",
        slow.received_at_stall_end,
        slow.received_bytes_at_stall_end as f64 / 1024.0
    );
    println!(
        "  after the stall: all {n} results read in {}, in order and equal to the in-process \
         solver's ({} bit for bit, {} within 1e-12); daemon peak (VmHWM) {} {}",
        secs(slow.read_time),
        n - slow.inexact,
        slow.inexact,
        mib(daemon.peak_rss_kib()),
        if reset {
            "during this phase"
        } else {
            "since start"
        }
    );

    drop(runtime);
    let end_rss = daemon.rss_kib();
    let (took, status) = daemon.stop();
    let log = daemon.log();
    let warnings = warnings(&log);
    println!(
        "daemon: RSS {} at the end; stopped {:.0} ms after SIGTERM with {status}; {} log lines, \
         {} at WARN or ERROR",
        mib(end_rss),
        took.as_secs_f64() * 1e3,
        log.len(),
        warnings.len()
    );
    for line in warnings.iter().take(5) {
        println!("  {line}");
    }

    silent_flood();
}

/// Section 4: how long a client waits, and what the daemon's CPU does, behind 1,500 connections
/// that send nothing, past the daemon's descriptor limit: `patience serve --workers 2` with 1,024
/// descriptors (so the default `--max-connections` of 896) and the default 10 s handshake
/// timeout. The client connects right after the flood, so it waits in the listen backlog behind
/// the 604 the daemon could not take: it is served once the first 896 are closed at their
/// handshake timeout, if the daemon never runs out of descriptors. Also: the daemon's CPU over
/// the first 5 s of the flood (nothing to do but wait), and how often it could not accept for
/// want of a descriptor (`patience_accept_pauses_total{reason="file_limit"}`; it should be 0).
fn silent_flood() {
    const SILENT: usize = 1_500;
    const OPEN_FILES: u64 = 1_024;
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let daemon = Daemon::start_with(
        &["--workers", "2", "--metrics-addr", "127.0.0.1:0"],
        &[("RUST_LOG", "info")],
        Some(OPEN_FILES),
    );
    let max_connections = log_field(&daemon.start_line, "max_connections")
        .unwrap_or("?")
        .to_string();
    let url = daemon.addr.clone();
    let socket = daemon.socket;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let (waited, idle_cpu) = runtime.block_on(async {
        let flooded = Instant::now();
        let mut silent = Vec::with_capacity(SILENT);
        for _ in 0..SILENT {
            silent.push(
                tokio::net::TcpStream::connect(socket)
                    .await
                    .expect("connect"),
            );
        }
        eprintln!("flood open after {:?}", flooded.elapsed());
        let deal = Deal::parse(SAMPLE).expect("the sample deal");
        let request = SolveRequest {
            analysis: None,
            deals: vec![proto::Deal {
                id: String::new(),
                cards: deal.to_string(),
            }],
            ..Default::default()
        };
        let newcomer = tokio::spawn(async move {
            let answered = tokio::time::timeout(Duration::from_secs(60), async {
                let mut c = connect(&url).await;
                eprintln!("newcomer connected after {:?}", flooded.elapsed());
                c.solve(request).await
            })
            .await;
            (answered, flooded.elapsed())
        });
        let cpu = daemon.cpu_seconds();
        tokio::time::sleep(Duration::from_secs(5)).await;
        let idle_cpu = daemon.cpu_seconds() - cpu;
        let (answered, waited) = newcomer.await.expect("the newcomer's task");
        drop(silent);
        match answered {
            Ok(Ok(_)) => (waited, idle_cpu),
            other => panic!("the client behind the flood was not served: {other:?}"),
        }
    });
    let metrics = scrape(&daemon.metrics_addr());
    let file_limit = metric(
        &metrics,
        "patience_accept_pauses_total{reason=\"file_limit\"}",
    )
    .unwrap_or(0.0);
    let emfile = daemon
        .log_so_far()
        .iter()
        .filter(|l| l.contains("Too many open files"))
        .count();
    println!(
        "silent flood: {SILENT} silent connections, {OPEN_FILES} descriptors (max_connections \
         {max_connections}), 10 s handshake timeout: a client that connected right after them was \
         served {} after the flood began; the daemon used {idle_cpu:.3} CPU seconds over the \
         flood's first 5 s; accept paused for the file limit {file_limit} times ({emfile} log \
         lines name EMFILE)",
        secs(waited)
    );
}
