//! Shared by the benches: starting `patience serve` on a free port, draining its log, reading its
//! memory and CPU from /proc; timing a whole process with its peak memory; seeded rps cases.
#![allow(
    dead_code,
    unused_imports,
    reason = "each bench uses a different part, of this module and of what it re-exports"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

// The daemon harness of the tests, one file for both: starting `patience serve` on a free port,
// reading its log, stopping it, its memory and CPU from /proc.
#[path = "../../tests/common/daemon.rs"]
mod daemon;

pub use daemon::{
    Daemon, clock_ticks, deals_answered, log_field, metric, reset_peak, scrape, status_kib,
};

// The reference data and the seeded rock-paper-scissors case generator of the tests, one file
// for both.
#[path = "../../tests/common/data.rs"]
mod data;

pub use data::{reference_path, rps_random_cases};

// The tests' delay proxy, and their nginx and HAProxy (with what those need: a scratch directory,
// which needs the command-line helpers), for the cluster bench.
#[path = "../../tests/common/cli.rs"]
mod cli;
#[path = "../../tests/common/delay.rs"]
mod delay;
#[path = "../../tests/common/proxy.rs"]
mod proxy;
#[path = "../../tests/common/scratch.rs"]
mod scratch;
// The one polling loop of the tests, which the daemon, command and proxy harnesses wait with.
#[path = "../../tests/common/wait.rs"]
mod wait;
// OpenTelemetry's OTLP receiver of the tests (from PyPI), for the service bench's tracing rows.
#[path = "../../tests/common/otlp.rs"]
mod otlp;

// The tests' moto_server (PyPI's S3-compatible store, from PATIENCE_VENV), for the storage bench.
#[path = "../../tests/common/s3.rs"]
mod s3;

pub use daemon::DEAD;
pub use otlp::{Collector, otel_python};
pub use s3::S3Server;

pub use delay::DelayProxy;
pub use proxy::{Proxy, ProxyKind};

/// The flags after `--` in `cargo bench --bench NAME -- --flag value`. Anything else cargo passes
/// (such as `--bench`) is ignored.
pub struct Flags(Vec<String>);

impl Flags {
    pub fn from_env() -> Flags {
        Flags(std::env::args().skip(1).collect())
    }

    /// The value after `name`, or `default` when the flag is absent. A value that does not parse
    /// stops the bench with a message naming the flag.
    pub fn get<T: std::str::FromStr>(&self, name: &str, default: T) -> T {
        match self.0.iter().position(|a| a == name) {
            None => default,
            Some(i) => {
                let value = self.0.get(i + 1).map_or("", String::as_str);
                value.parse().unwrap_or_else(|_| {
                    panic!("{name} wants a value like its default, got {value:?}")
                })
            }
        }
    }

    /// Whether a flag without a value is present.
    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|a| a == name)
    }
}

/// Runs a command to completion, returning its wall time and peak RSS in KiB (sampled from /proc).
pub fn run_measured(cmd: &mut Command) -> (Duration, u64, Vec<u8>) {
    let out_path = std::env::temp_dir().join(format!("patience-bench-out-{}", std::process::id()));
    let out = std::fs::File::create(&out_path).expect("temp file");
    let start = Instant::now();
    let mut child = cmd
        .stdout(out)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn");
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Ok(s) = std::fs::read_to_string(&status_path) {
            for line in s.lines() {
                if let Some(v) = line.strip_prefix("VmHWM:") {
                    let kb = v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
                    peak = peak.max(kb);
                }
            }
        }
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(
                status.success() || status.code() == Some(1),
                "{cmd:?} failed"
            );
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let elapsed = start.elapsed();
    let output = std::fs::read(&out_path).expect("read output");
    let _ = std::fs::remove_file(&out_path);
    (elapsed, peak, output)
}

/// Runs `patience ARGS > out` under `sh`, with `env` set; its wall time and CPU seconds (user +
/// system), read from the `sh` that waited for it (`/proc/$$/stat`'s cutime and cstime).
pub fn cpu_measured(args: &[&str], env: &[(&str, &str)], out: &Path) -> (Duration, f64) {
    let script = r#"out=$1; shift; "$@" > "$out"; s=$?; cat /proc/$$/stat >&2; exit $s"#;
    let start = Instant::now();
    let run = Command::new("sh")
        .args(["-c", script, "sh"])
        .arg(out)
        .arg(env!("CARGO_BIN_EXE_patience"))
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run sh");
    let wall = start.elapsed();
    assert!(
        matches!(run.status.code(), Some(0 | 1)),
        "patience {args:?}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    let stat = stderr.lines().last().expect("sh's stat");
    // After the command name in parentheses: fields 3 on; cutime and cstime are fields 16 and 17.
    let fields: Vec<&str> = stat[stat.rfind(')').expect("a stat line") + 2..]
        .split_whitespace()
        .collect();
    let ticks: f64 = fields[13].parse::<f64>().unwrap() + fields[14].parse::<f64>().unwrap();
    (wall, ticks / clock_ticks())
}

/// The median (upper middle) of some figures.
pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// The value at fraction `p` of sorted figures (nearest rank).
pub fn percentile<T: Copy>(sorted: &[T], p: f64) -> T {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// `patience serve --workers W` on a free port, logging in text (the benches read its lines).
pub fn start_daemon(workers: usize) -> Daemon {
    Daemon::start(&["--workers", &workers.to_string(), "--log-format", "text"])
}

/// The "call finished" lines of `SolveStream` calls that arrived after `since`, with the time each
/// arrived.
pub fn streams_finished_since(daemon: &Daemon, since: Instant) -> Vec<(Instant, String)> {
    daemon
        .lines_since(since)
        .into_iter()
        .filter(|(_, line)| line.contains("SolveStream") && line.contains("call finished"))
        .collect()
}

/// The lines of a log at WARN or ERROR.
pub fn warnings(log: &[String]) -> Vec<&String> {
    log.iter()
        .filter(|line| line.contains("WARN") || line.contains("ERROR"))
        .collect()
}

/// Samples a process's RSS on its own thread until finished.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<u64>>,
}

impl Sampler {
    pub fn start(pid: u32, every: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let handle = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut samples = Vec::new();
                let start = Instant::now();
                let mut k = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    samples.push(status_kib(pid, "VmRSS"));
                    k += 1;
                    let next = start + every * k;
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                }
                samples
            })
        };
        Sampler { stop, handle }
    }

    pub fn finish(self) -> Vec<u64> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().expect("RSS sampler")
    }
}

/// A directory for one bench run's files, removed however the bench ends.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(bench: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("patience-{bench}-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        TempDir(dir)
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

/// `deals` random deals (`patience gen --seed SEED`) written to `deals.in` in `dir`: its path.
pub fn generated_deals(dir: &TempDir, deals: usize, seed: u64) -> String {
    let generated = Command::new(env!("CARGO_BIN_EXE_patience"))
        .args([
            "gen",
            "--count",
            &deals.to_string(),
            "--seed",
            &seed.to_string(),
        ])
        .output()
        .expect("patience gen");
    let input = dir.join("deals.in");
    std::fs::write(&input, generated.stdout).expect("write the deals");
    input.display().to_string()
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `deals` as one request of their text, without ids: the API's first form, which every client
/// can send.
pub fn text_request(deals: &[patience::deal::Deal]) -> patience::proto::SolveRequest {
    patience::proto::SolveRequest {
        deals: deals
            .iter()
            .map(|d| patience::proto::Deal {
                id: String::new(),
                cards: d.to_string(),
            })
            .collect(),
        ..Default::default()
    }
}
