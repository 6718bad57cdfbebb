//! Service benchmark: prints figures, asserts nothing about time.
//!
//! `cargo bench --bench service` (options after `--`: `--deals N --runs R --workers W
//! --latency-calls C`).
//!
//! Measures, side by side in one run on the same file of uniformly random deals (seeded), with
//! the same number of solver workers everywhere:
//! - `patience solve --workers W FILE`, the in-process baseline, median of R runs;
//! - one `patience serve --workers W` daemon on loopback, driven by
//!   - `patience client FILE` (the real client binary, its default `--batch`), median of R runs,
//!     and whether its output is byte-identical to `patience solve`'s;
//!   - an in-bench tonic client (one current-thread runtime) on one `SolveStream` call with 256
//!     deals per message and with 1 deal per message (messages built before timing), median of R
//!     runs each, its results checked for order and against `patience solve`'s;
//!   - the plain HTTP API, `curl -X POST -T FILE .../v1/solve`, and whether its output is
//!     byte-identical to `patience solve`'s;
//!   - the tonic client's 256-deal stream again with gzip and with zstd both ways;
//!   - each as deals/s and as a share of the baseline, with the CPU time per deal of the daemon
//!     and of the client (from /proc), which tells per-message overhead from machine noise, and
//!     the bytes on the wire per deal both ways (the in-bench client's connection counts them,
//!     HTTP/2 framing included; curl reports its own), which shows what compression saves;
//! - what OpenTelemetry tracing costs the 256-deal `SolveStream`: off, on with every call
//!   sampled, and on with the collector down, side by side (`tracing_cost.rs`);
//! - latency of one-deal unary `Solve` calls on the idle daemon (sequential, one connection),
//!   beside the engine alone and a solver pool in this process on the same deals, and the same
//!   calls with a deal the server refuses before its solver pool (the bare gRPC round trip).
//!
//! Rounds alternate between the throughput modes so that drift affects them alike.

mod support;
#[path = "service/tracing_cost.rs"]
mod tracing_cost;

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use patience::deal::Deal;
use patience::pool::{Engines, Pool};
use patience::proto::solver_client::SolverClient;
use patience::proto::{self, SolveRequest, result::Outcome};
use patience::solver::Solver;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use support::{
    Flags, TempDir, clock_ticks, median, percentile, start_daemon, text_request, warnings,
};

use tonic::codec::CompressionEncoding;
use tonic::transport::{Channel, Endpoint};

/// Seed of the throughput deals (the engine bench uses the same one).
const SEED: u64 = 2026;
/// Seed of the latency deals, so that they differ from the throughput deals.
const LATENCY_SEED: u64 = 2027;
/// Deals per request message of the batched modes (the client's default).
const BATCH: usize = 256;
/// Unary calls before the latency is measured.
const LATENCY_WARMUP: usize = 100;

struct Options {
    deals: usize,
    runs: usize,
    workers: usize,
    latency_calls: usize,
}

fn options() -> Options {
    let flags = Flags::from_env();
    Options {
        deals: flags.get("--deals", 20_000usize).max(1),
        runs: flags.get("--runs", 5usize).max(1),
        workers: flags.get("--workers", 2usize).max(1),
        latency_calls: flags.get("--latency-calls", 2_000usize).max(1),
    }
}

fn list(rates: &[f64]) -> String {
    rates
        .iter()
        .map(|r| format!("{r:.0}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn write_deals(path: &Path, deals: &[Deal]) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("temp file"));
    for d in deals {
        write!(f, "{d}").expect("write deals");
    }
    f.flush().expect("write deals");
}

/// Waits for a child with a time limit; kills it and panics when the limit passes.
fn wait_with_timeout(child: Child, what: &str, timeout: Duration) -> ExitStatus {
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut child = child;
        let _ = tx.send(child.wait());
    });
    match rx.recv_timeout(timeout) {
        Ok(status) => status.unwrap_or_else(|e| panic!("{what}: cannot wait: {e}")),
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("{what} did not finish within {timeout:?}; killed it");
        }
    }
}

/// Runs a command to completion with its standard output in `out`; returns its wall time.
fn run_to_file(cmd: &mut Command, out: &Path, timeout: Duration) -> Duration {
    let what = format!("{cmd:?}");
    let file = std::fs::File::create(out).expect("temp file");
    let start = Instant::now();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let status = wait_with_timeout(child, &what, timeout);
    let elapsed = start.elapsed();
    assert!(status.success(), "{what} failed: {status}");
    elapsed
}

/// CPU seconds from `/proc/{pid}/stat`: (user + system of the process, user + system of its
/// children that have been waited for).
fn proc_cpu(pid: &str, ticks: f64) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap_or_else(|e| panic!("cannot read /proc/{pid}/stat: {e}"));
    // Fields after the command name, which is in parentheses: state is the first, then utime,
    // stime, cutime and cstime are the 12th to the 15th.
    let rest = &stat[stat.rfind(')').expect("stat format") + 1..];
    let fields: Vec<f64> = rest
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|f| f.parse().expect("stat field"))
        .collect();
    (
        (fields[0] + fields[1]) / ticks,
        (fields[2] + fields[3]) / ticks,
    )
}

/// CPU seconds of this process (all threads) and of its reaped children.
fn own_cpu(ticks: f64) -> (f64, f64) {
    proc_cpu("self", ticks)
}

/// One `SolveStream` call sending `messages`; returns its wall time and the probabilities in order.
async fn stream_call(
    client: &mut SolverClient<Channel>,
    messages: Vec<SolveRequest>,
    deals: usize,
) -> (Duration, Vec<f64>) {
    let mut probabilities = Vec::with_capacity(deals);
    let start = Instant::now();
    let mut responses = client
        .solve_stream(tokio_stream::iter(messages))
        .await
        .unwrap_or_else(|s| panic!("SolveStream refused: {s}"))
        .into_inner();
    let mut next = 0u64;
    loop {
        let response = match responses.message().await {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(s) => panic!("SolveStream failed after {next} results: {s}"),
        };
        if !response.probabilities.is_empty() {
            assert_eq!(
                response.first_index, next,
                "SolveStream answers out of order"
            );
            next += response.probabilities.len() as u64;
            probabilities.extend(response.probabilities);
        }
        for r in response.results {
            assert_eq!(r.index, next, "SolveStream results out of order");
            match r.outcome {
                Some(Outcome::Probability(p)) => probabilities.push(p),
                other => panic!("deal {next}: no probability: {other:?}"),
            }
            next += 1;
        }
    }
    let elapsed = start.elapsed();
    assert_eq!(
        probabilities.len(),
        deals,
        "SolveStream answered {} of {deals} deals",
        probabilities.len()
    );
    (elapsed, probabilities)
}

/// Sequential one-deal unary calls; returns their latencies after the warm-up, in us, sorted.
async fn unary_latencies(
    client: &mut SolverClient<Channel>,
    requests: Vec<SolveRequest>,
    check: impl Fn(usize, Option<&Outcome>),
) -> Vec<f64> {
    let mut latencies = Vec::with_capacity(requests.len());
    for (i, request) in requests.into_iter().enumerate() {
        let start = Instant::now();
        let response = tokio::time::timeout(Duration::from_secs(10), client.solve(request))
            .await
            .unwrap_or_else(|_| panic!("unary Solve {i} did not answer within 10 s"))
            .unwrap_or_else(|s| panic!("unary Solve {i} failed: {s}"))
            .into_inner();
        let elapsed = start.elapsed();
        let [result] = response.results.as_slice() else {
            panic!(
                "unary Solve {i}: {} results for one deal",
                response.results.len()
            );
        };
        assert_eq!(result.index, 0, "unary Solve {i}: index");
        check(i, result.outcome.as_ref());
        if i >= LATENCY_WARMUP {
            latencies.push(elapsed.as_secs_f64() * 1e6);
        }
    }
    sorted(latencies)
}

fn sorted(mut xs: Vec<f64>) -> Vec<f64> {
    xs.sort_by(f64::total_cmp);
    xs
}

/// Median, p90, p99 and max of sorted microseconds.
fn summary(us: &[f64]) -> String {
    format!(
        "median {:.0} us, p90 {:.0} us, p99 {:.0} us, max {:.0} us",
        percentile(us, 0.5),
        percentile(us, 0.9),
        percentile(us, 0.99),
        us[us.len() - 1]
    )
}

/// Splits the deals into request messages of `per_message` deals each; `packed`: packed deals,
/// asking for packed answers (as `patience client` sends them).
fn messages(deals: &[Deal], per_message: usize, packed: bool) -> Vec<SolveRequest> {
    deals
        .chunks(per_message)
        .map(|chunk| match packed {
            true => SolveRequest {
                packed_deals: chunk.iter().fold(Vec::new(), |mut bytes, d| {
                    d.pack_into(&mut bytes);
                    bytes
                }),
                packed_answers: true,
                ..Default::default()
            },
            false => text_request(chunk),
        })
        .collect()
}

/// Where two outputs first differ, by line.
fn first_difference(a: &[u8], b: &[u8]) -> String {
    let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
    let (la, lb) = (a.lines().count(), b.lines().count());
    match a.lines().zip(b.lines()).position(|(x, y)| x != y) {
        Some(n) => format!(
            "line {}: solve {:?}, client {:?}",
            n + 1,
            a.lines().nth(n).unwrap_or(""),
            b.lines().nth(n).unwrap_or("")
        ),
        None => format!("solve has {la} lines, client {lb}"),
    }
}

/// A measured mode: its rates, and the CPU seconds its client and the daemon spent over its runs.
struct Mode {
    name: String,
    rates: Vec<f64>,
    client_cpu: f64,
    daemon_cpu: f64,
    /// Bytes sent to the daemon and received from it over the runs; `None` where the client
    /// cannot say (the `patience client` binary).
    sent: Option<u64>,
    received: Option<u64>,
}

/// Bytes through the in-bench client's connection, both ways: what the wire carries on loopback
/// without TLS (HTTP/2 framing included).
#[derive(Clone, Debug, Default)]
struct WireCount(Arc<(AtomicU64, AtomicU64)>);

impl WireCount {
    /// (sent, received) so far.
    fn get(&self) -> (u64, u64) {
        (
            self.0.0.load(Ordering::Relaxed),
            self.0.1.load(Ordering::Relaxed),
        )
    }
}

/// A TCP stream that counts what goes through it into a [`WireCount`].
struct Counted {
    tcp: tokio::net::TcpStream,
    count: WireCount,
}

impl tokio::io::AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.tcp).poll_read(cx, buf);
        let n = (buf.filled().len() - before) as u64;
        self.count.0.1.fetch_add(n, Ordering::Relaxed);
        polled
    }
}

impl tokio::io::AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.tcp).poll_write(cx, data);
        if let Poll::Ready(Ok(n)) = &polled {
            self.count.0.0.fetch_add(*n as u64, Ordering::Relaxed);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

impl Mode {
    fn new(name: String) -> Mode {
        Mode {
            name,
            rates: Vec::new(),
            client_cpu: 0.0,
            daemon_cpu: 0.0,
            sent: None,
            received: None,
        }
    }

    fn count_wire(&mut self, sent: u64, received: u64) {
        *self.sent.get_or_insert(0) += sent;
        *self.received.get_or_insert(0) += received;
    }

    fn wire(&self, deals: usize) -> String {
        let per = |bytes: Option<u64>| match bytes {
            Some(b) => format!("{:.1}", b as f64 / (deals * self.rates.len()) as f64),
            None => "-".to_string(),
        };
        format!(
            "{} B/deal sent, {} B/deal received",
            per(self.sent),
            per(self.received)
        )
    }

    fn cpu_us_per_deal(&self, seconds: f64, deals: usize) -> f64 {
        1e6 * seconds / (deals * self.rates.len()) as f64
    }
}

/// `patience solve`'s answers to `input`, as numbers.
fn reference_probabilities(
    input: &Path,
    workers: usize,
    timeout: Duration,
    dir: &TempDir,
) -> Vec<f64> {
    let out = dir.join("reference.out");
    run_to_file(
        Command::new(env!("CARGO_BIN_EXE_patience"))
            .args([
                "solve",
                "--precision",
                "15",
                "--workers",
                &workers.to_string(),
            ])
            .arg(input),
        &out,
        timeout,
    );
    std::fs::read_to_string(&out)
        .expect("read the reference")
        .lines()
        .map(|l| l.parse().expect("a probability"))
        .collect()
}

fn main() {
    let o = options();
    let exe = env!("CARGO_BIN_EXE_patience");
    let mut rng = fastrand::Rng::with_seed(SEED);
    let deals: Vec<Deal> = (0..o.deals).map(|_| Deal::shuffled(&mut rng)).collect();
    let n = deals.len();
    println!(
        "service bench: {n} uniformly random deals (seed {SEED}), {} runs, {} workers, \
         {BATCH} deals per batched message",
        o.runs, o.workers
    );

    let dir = TempDir::new("service");
    let input = dir.join("deals.in");
    write_deals(&input, &deals);
    let solve_out = dir.join("solve.out");
    let client_out = dir.join("client.out");
    // Hang protection only: generous next to the ~0.5 s a run takes.
    let run_timeout = Duration::from_secs(60) + Duration::from_millis(5 * n as u64);
    let ticks = clock_ticks();

    tracing_cost::compare(
        o.workers,
        &messages(&deals, BATCH, false),
        &reference_probabilities(&input, o.workers, run_timeout, &dir),
        o.runs,
    );

    let mut daemon = start_daemon(o.workers);
    println!(
        "daemon: pid {}, listening on {}",
        daemon.pid(),
        daemon.socket
    );
    let url = daemon.addr.clone();

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let count = WireCount::default();
    let mut client = runtime.block_on(async {
        let socket = daemon.socket;
        let counter = count.clone();
        let connector = tower::service_fn(move |_: http::Uri| {
            let count = counter.clone();
            async move {
                let tcp = tokio::net::TcpStream::connect(socket).await?;
                tcp.set_nodelay(true)?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(Counted { tcp, count }))
            }
        });
        let channel = Endpoint::from_shared(url.clone())
            .expect("endpoint")
            .connect_timeout(Duration::from_secs(5))
            .connect_with_connector(connector)
            .await
            .unwrap_or_else(|e| panic!("cannot connect to {url}: {e}"));
        SolverClient::new(channel).max_decoding_message_size(usize::MAX)
    });

    // Throughput: rounds alternate between the modes.
    let workers = o.workers.to_string();
    let mut solve = Mode::new(format!(
        "patience solve --workers {workers} (in-process baseline)"
    ));
    let mut expected: Vec<u8> = Vec::new();
    let mut client_mode = Mode::new("patience client, default --batch (binary)".to_string());
    let mut client_identical = 0;
    let mut client_difference = None;
    let mut streams = [
        (
            BATCH,
            None,
            false,
            Mode::new(format!("tonic SolveStream, {BATCH} deals/message")),
        ),
        (
            BATCH,
            None,
            true,
            Mode::new(format!(
                "tonic SolveStream, {BATCH} packed deals/message, packed answers"
            )),
        ),
        (
            1,
            None,
            false,
            Mode::new("tonic SolveStream, 1 deal/message".to_string()),
        ),
        (
            BATCH,
            Some(CompressionEncoding::Gzip),
            false,
            Mode::new(format!(
                "tonic SolveStream, {BATCH} deals/message, gzip both ways"
            )),
        ),
        (
            BATCH,
            Some(CompressionEncoding::Zstd),
            false,
            Mode::new(format!(
                "tonic SolveStream, {BATCH} deals/message, zstd both ways"
            )),
        ),
    ];
    let mut http = Mode::new("HTTP POST /v1/solve (curl -X POST -T FILE)".to_string());
    let mut http_identical = 0;
    let mut http_difference = None;
    let http_out = dir.join("http.out");
    let solve_url = format!("{url}/v1/solve");
    for run in 0..o.runs {
        let (_, children) = own_cpu(ticks);
        let t = run_to_file(
            Command::new(exe)
                .args(["solve", "--workers", &workers])
                .arg(&input),
            &solve_out,
            run_timeout,
        );
        solve.client_cpu += own_cpu(ticks).1 - children;
        solve.rates.push(n as f64 / t.as_secs_f64());
        if run == 0 {
            expected = std::fs::read(&solve_out).expect("read solve output");
            assert_eq!(
                expected.iter().filter(|&&b| b == b'\n').count(),
                n,
                "patience solve printed the wrong number of lines"
            );
        }

        let cpu = daemon.cpu_seconds();
        let (_, children) = own_cpu(ticks);
        let t = run_to_file(
            Command::new(exe)
                .args(["client", "--addr", &url])
                .arg(&input),
            &client_out,
            run_timeout,
        );
        client_mode.daemon_cpu += daemon.cpu_seconds() - cpu;
        client_mode.client_cpu += own_cpu(ticks).1 - children;
        client_mode.rates.push(n as f64 / t.as_secs_f64());
        let got = std::fs::read(&client_out).expect("read client output");
        if got == expected {
            client_identical += 1;
        } else if client_difference.is_none() {
            client_difference = Some(first_difference(&expected, &got));
        }

        let cpu = daemon.cpu_seconds();
        let (_, children) = own_cpu(ticks);
        let sizes = dir.join("http.sizes");
        let t = run_to_file(
            Command::new("sh").arg("-c").arg(format!(
                "curl -sS --fail -X POST -T '{}' -w '%{{size_upload}} %{{size_header}} \
                 %{{size_download}}' -o '{}' '{solve_url}' > '{}'",
                input.display(),
                http_out.display(),
                sizes.display()
            )),
            &dir.join("http.stdout"),
            run_timeout,
        );
        http.daemon_cpu += daemon.cpu_seconds() - cpu;
        let sizes: Vec<u64> = std::fs::read_to_string(&sizes)
            .expect("curl's sizes")
            .split_whitespace()
            .map(|n| n.parse().expect("a size"))
            .collect();
        // The body both ways and the answer's head (curl does not count the request's head or
        // the chunk framing: a few bytes per chunk).
        http.count_wire(sizes[0], sizes[1] + sizes[2]);
        http.client_cpu += own_cpu(ticks).1 - children;
        http.rates.push(n as f64 / t.as_secs_f64());
        let got = std::fs::read(&http_out).expect("read the HTTP output");
        if got == expected {
            http_identical += 1;
        } else if http_difference.is_none() {
            http_difference = Some(first_difference(&expected, &got));
        }

        for (per_message, compression, packed, mode) in streams.iter_mut() {
            let requests = messages(&deals, *per_message, *packed);
            let mut client = match compression {
                Some(encoding) => client
                    .clone()
                    .send_compressed(*encoding)
                    .accept_compressed(*encoding),
                None => client.clone(),
            };
            let cpu = daemon.cpu_seconds();
            let wire = count.get();
            let (own, _) = own_cpu(ticks);
            let (t, probabilities) = runtime.block_on(async {
                tokio::time::timeout(run_timeout, stream_call(&mut client, requests, n))
                    .await
                    .unwrap_or_else(|_| panic!("{} did not finish in {run_timeout:?}", mode.name))
            });
            mode.daemon_cpu += daemon.cpu_seconds() - cpu;
            let (sent, received) = count.get();
            mode.count_wire(sent - wire.0, received - wire.1);
            mode.client_cpu += own_cpu(ticks).0 - own;
            mode.rates.push(n as f64 / t.as_secs_f64());
            let text = String::from_utf8_lossy(&expected);
            for (i, (line, p)) in text.lines().zip(&probabilities).enumerate() {
                assert_eq!(
                    format!("{p:.6}"),
                    line,
                    "{}: deal {i} differs from patience solve",
                    mode.name
                );
            }
        }
    }

    // CPU figures: the solve process's own; for the daemon modes, the daemon's and the client's
    // (the client binary, or this process for the in-bench client) over the same runs.
    let baseline = median(solve.rates.clone());
    println!(
        "{}: median {baseline:.0} deals/s  (runs: {}; CPU {:.1} us/deal)",
        solve.name,
        list(&solve.rates),
        solve.cpu_us_per_deal(solve.client_cpu, n)
    );
    let stream_median = median(streams[0].3.rates.clone());
    let mut modes = vec![client_mode, http];
    modes.extend(streams.into_iter().map(|(_, _, _, m)| m));
    for mode in &modes {
        let m = median(mode.rates.clone());
        println!(
            "{}: median {m:.0} deals/s = {:.1}% of baseline, {:.2}x SolveStream {BATCH}/message  \
             (runs: {}; CPU us/deal: daemon {:.1}, client {:.1}; wire: {})",
            mode.name,
            100.0 * m / baseline,
            m / stream_median,
            list(&mode.rates),
            mode.cpu_us_per_deal(mode.daemon_cpu, n),
            mode.cpu_us_per_deal(mode.client_cpu, n),
            mode.wire(n)
        );
    }
    judged(&deals, o.runs, o.workers, &solve, &modes, n);
    match http_difference {
        None => println!(
            "HTTP /v1/solve output byte-identical to patience solve: yes ({http_identical} of {} runs)",
            o.runs
        ),
        Some(d) => println!(
            "HTTP /v1/solve output byte-identical to patience solve: NO ({http_identical} of {} \
             runs identical; first difference at {d})",
            o.runs
        ),
    }
    match client_difference {
        None => println!(
            "patience client output byte-identical to patience solve: yes ({client_identical} of {} runs)",
            o.runs
        ),
        Some(d) => println!(
            "patience client output byte-identical to patience solve: NO ({client_identical} of {} \
             runs identical; first difference at {d})",
            o.runs
        ),
    }
    println!(
        "tonic SolveStream results: in order by index and equal to patience solve's, every run"
    );

    // Latency of one-deal unary calls on the idle daemon, one connection, one call at a time. The
    // same calls with the deal's last card left out are refused by the parser and never reach the
    // solver pool: they measure the gRPC round trip (and the call's log line) alone.
    let mut rng = fastrand::Rng::with_seed(LATENCY_SEED);
    let latency_deals: Vec<Deal> = (0..LATENCY_WARMUP + o.latency_calls)
        .map(|_| Deal::shuffled(&mut rng))
        .collect();
    let mut solver = Solver::new();
    let mut engine_us = Vec::with_capacity(latency_deals.len());
    let mut want = Vec::with_capacity(latency_deals.len());
    for d in &latency_deals {
        let start = Instant::now();
        want.push(solver.solve(d).probability);
        engine_us.push(start.elapsed().as_secs_f64() * 1e6);
    }
    let one = |cards: String| SolveRequest {
        analysis: None,
        deals: vec![proto::Deal {
            id: String::new(),
            cards,
        }],
        ..Default::default()
    };
    let valid: Vec<SolveRequest> = latency_deals.iter().map(|d| one(d.to_string())).collect();
    let short: Vec<SolveRequest> = latency_deals
        .iter()
        .map(|d| {
            let text = d.to_string();
            let cut = text
                .trim_end()
                .rfind(char::is_whitespace)
                .expect("36 cards");
            one(text[..cut].to_string())
        })
        .collect();
    let (solved_us, refused_us, pooled_us) = runtime.block_on(async {
        let solved = unary_latencies(&mut client, valid, |i, outcome| match outcome {
            Some(Outcome::Probability(p)) if (p - want[i]).abs() <= 1e-12 => {}
            other => panic!(
                "unary Solve {i}: got {other:?}, want probability {}",
                want[i]
            ),
        })
        .await;
        let refused = unary_latencies(&mut client, short, |i, outcome| match outcome {
            Some(Outcome::Error(e)) if e.code == proto::ErrorCode::CardCount as i32 => {}
            other => panic!("unary Solve {i} of 35 cards: got {other:?}, want CARD_COUNT"),
        })
        .await;
        // The daemon's hop to its solver threads, without gRPC: the same deals through a pool
        // like the daemon's, from this runtime.
        let pool = Pool::new(o.workers, 2 * o.workers).expect("solver pool");
        let mut pooled = Vec::with_capacity(latency_deals.len());
        for (i, deal) in latency_deals.iter().enumerate() {
            let deal = *deal;
            let start = Instant::now();
            let ticket = pool
                .submit(move |e: &mut Engines| e.deals.solve(&deal).probability)
                .await
                .expect("pool submit");
            let p = ticket.await.expect("pool job");
            let elapsed = start.elapsed();
            assert!(
                (p - want[i]).abs() <= 1e-12,
                "pool solve {i}: {p} != {}",
                want[i]
            );
            if i >= LATENCY_WARMUP {
                pooled.push(elapsed.as_secs_f64() * 1e6);
            }
        }
        (solved, refused, sorted(pooled))
    });
    let engine_measured = sorted(engine_us.split_off(LATENCY_WARMUP));
    println!(
        "unary Solve, 1 deal, {} sequential calls on one connection after {LATENCY_WARMUP} warm-up: \
         {}",
        solved_us.len(),
        summary(&solved_us)
    );
    println!(
        "  engine alone on the same deals (in this process):      {}",
        summary(&engine_measured)
    );
    println!(
        "  same deals through a {}-worker solver pool in this process: {}",
        o.workers,
        summary(&pooled_us)
    );
    println!(
        "  same calls with a 35-card deal (refused, no solver hop): {}",
        summary(&refused_us)
    );

    drop(client);
    drop(runtime);
    let peak = daemon.peak_rss_kib();
    let (took, status) = daemon.stop();
    let log = daemon.log();
    let warnings = warnings(&log);
    println!(
        "daemon: peak RSS {:.1} MiB; stopped {:.0} ms after SIGTERM with {status}; {} log lines, \
         {} at WARN or ERROR",
        peak as f64 / 1024.0,
        took.as_secs_f64() * 1e3,
        log.len(),
        warnings.len()
    );
    for line in warnings.iter().take(5) {
        println!("  {line}");
    }
}

/// The calling thread's CPU time so far, in seconds, to the nanosecond: the first field of
/// Linux's `/proc/thread-self/schedstat`.
fn thread_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    let ns: f64 = stat
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("the time on CPU in schedstat");
    ns / 1e9
}

/// The figures issue 34 judges the layers around the engine by, from this run: the daemon's CPU
/// per deal against the engine's alone (`SolveStream` with 256 deals per message, and plain HTTP;
/// target 1.05x or less), the binary client's CPU per deal as a share of what the daemon spends
/// solving the same deals (target 0.05 or less), and the client's rate as a share of in-process
/// `solve` (target 0.92 or more). The engine's figures are solvers in this process on the same
/// deals, medians of the runs of their threads' CPU time: on one thread, and on as many threads as
/// the daemon has workers (each thread its own solver and its share of the deals), which is the
/// like-for-like one, as `solve` is judged in the engine bench: two busy cores of this VM each
/// solve slower than one alone (the engine bench's 2-thread rate is ~1.8x, not 2x), and a daemon
/// with two workers pays that whatever is around its engine.
fn judged(deals: &[Deal], runs: usize, workers: usize, solve: &Mode, modes: &[Mode], n: usize) {
    let engine_on = |threads: usize| {
        median(
            (0..runs)
                .map(|_| {
                    // Each thread's CPU time, added up: what the engine spent on the deals,
                    // whatever else the machine runs meanwhile.
                    let busy: f64 = std::thread::scope(|scope| {
                        let shares: Vec<_> = deals
                            .chunks(deals.len().div_ceil(threads))
                            .map(|share| {
                                scope.spawn(move || {
                                    let mut solver = Solver::new();
                                    let start = thread_cpu_seconds();
                                    for d in share {
                                        std::hint::black_box(solver.solve(d));
                                    }
                                    thread_cpu_seconds() - start
                                })
                            })
                            .collect();
                        shares
                            .into_iter()
                            .map(|t| t.join().expect("an engine thread"))
                            .sum()
                    });
                    1e6 * busy / deals.len() as f64
                })
                .collect(),
        )
    };
    let engine = engine_on(1);
    let engine_w = engine_on(workers);
    println!(
        "engine alone, same deals: {engine:.2} us/deal on one thread, {engine_w:.2} on {workers} \
         threads (medians of {runs})"
    );
    let find = |prefix: &str| modes.iter().find(|m| m.name.starts_with(prefix));
    let stream = format!("tonic SolveStream, {BATCH} deals/message");
    let packed = format!("tonic SolveStream, {BATCH} packed deals/message, packed answers");
    let by = [
        modes.iter().find(|m| m.name == stream),
        modes.iter().find(|m| m.name == packed),
        find("HTTP POST"),
    ];
    for m in by.into_iter().flatten() {
        let daemon = m.cpu_us_per_deal(m.daemon_cpu, n);
        println!(
            "  daemon CPU per deal, {}: {daemon:.2} us = {:.3}x the engine's on {workers} threads \
             ({:.3}x on one) (target: 1.05x or less)",
            m.name,
            daemon / engine_w,
            daemon / engine
        );
    }
    if let Some(client) = find("patience client") {
        let (own, daemon) = (
            client.cpu_us_per_deal(client.client_cpu, n),
            client.cpu_us_per_deal(client.daemon_cpu, n),
        );
        let rate = median(client.rates.clone()) / median(solve.rates.clone());
        println!(
            "  patience client: CPU {own:.2} us/deal = {:.3} of the daemon's {daemon:.2} (target: 0.05 or less); \
             rate {rate:.3} of in-process solve (target: 0.92 or more)",
            own / daemon
        );
    }
}
