//! Shared by the benches that drive the real daemon: starting `patience serve` on a free port,
//! draining its log, and reading its memory and CPU from /proc.
#![allow(dead_code, reason = "each bench uses a different part")]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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

/// The median (upper middle) of some figures.
pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// The value at fraction `p` of sorted figures (nearest rank).
pub fn percentile<T: Copy>(sorted: &[T], p: f64) -> T {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// How long the daemon may take to start, or to stop after SIGTERM.
pub const DAEMON_TIMEOUT: Duration = Duration::from_secs(10);
/// Log lines kept for error messages.
pub const LOG_TAIL: usize = 20;

/// A `kB` field (`VmRSS`, `VmHWM`) of `/proc/{pid}/status`, 0 if unreadable.
pub fn status_kib(pid: &str, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix(field)
                    .and_then(|v| v.strip_prefix(':'))
                    .map(|v| v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0))
            })
        })
        .unwrap_or(0)
}

/// Resets the peak RSS (VmHWM) of a process to its current RSS; false where the kernel refuses.
pub fn reset_peak(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

/// Clock ticks per second of /proc/PID/stat.
pub fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// User plus system CPU seconds of a process, from `/proc/{pid}/stat`.
pub fn cpu_seconds(pid: &str, ticks: f64) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // After the command name, in parentheses: the state, then utime and stime are the 12th and
    // 13th fields.
    let rest = &stat[stat.rfind(')').map_or(0, |p| p + 1)..];
    rest.split_whitespace()
        .skip(11)
        .take(2)
        .map(|f| f.parse::<f64>().unwrap_or(0.0))
        .sum::<f64>()
        / ticks
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
                let pid = pid.to_string();
                let mut samples = Vec::new();
                let start = Instant::now();
                let mut k = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    samples.push(status_kib(&pid, "VmRSS"));
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

/// What the daemon's log drain keeps.
#[derive(Default)]
pub struct Log {
    pub lines: u64,
    pub tail: VecDeque<String>,
    pub warnings: Vec<String>,
    /// When each `SolveStream` call's "call finished" line arrived, and the line.
    pub streams_finished: Vec<(Instant, String)>,
}

/// The `patience serve` process. Dropping it kills the process, so a panic never leaves it behind.
pub struct Daemon {
    child: Option<Child>,
    pub pid: u32,
    pub addr: SocketAddr,
    pub log: Arc<Mutex<Log>>,
    drain: Option<JoinHandle<()>>,
}

impl Daemon {
    pub fn start(exe: &str, workers: usize) -> Daemon {
        let mut cmd = Command::new(exe);
        cmd.args(["serve", "--addr", "127.0.0.1:0", "--log-format", "text"])
            .args(["--workers", &workers.to_string()])
            // The "listening on" and "call finished" lines are at info level.
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // Flags only: no setting of the caller's environment changes the daemon.
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("PATIENCE_") {
                cmd.env_remove(key);
            }
        }
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let pid = child.id();
        let stderr = child.stderr.take().expect("piped stderr");
        let log = Arc::new(Mutex::new(Log::default()));
        let (addr_tx, addr_rx) = mpsc::channel();
        // Drain the log for the daemon's whole life, so that it never blocks on a full pipe.
        let drain = {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    let arrived = Instant::now();
                    if let Some(addr) = listening_addr(&line) {
                        let _ = addr_tx.send(addr);
                    }
                    let mut log = log.lock().expect("log lock");
                    log.lines += 1;
                    if line.contains("WARN") || line.contains("ERROR") {
                        log.warnings.push(line.clone());
                    }
                    if line.contains("SolveStream") && line.contains("call finished") {
                        log.streams_finished.push((arrived, line.clone()));
                    }
                    if log.tail.len() == LOG_TAIL {
                        log.tail.pop_front();
                    }
                    log.tail.push_back(line);
                }
            })
        };
        let mut daemon = Daemon {
            child: Some(child),
            pid,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            log,
            drain: Some(drain),
        };
        match addr_rx.recv_timeout(DAEMON_TIMEOUT) {
            Ok(addr) => daemon.addr = addr,
            Err(e) => {
                let status = daemon
                    .child
                    .as_mut()
                    .and_then(|c| c.try_wait().ok().flatten());
                panic!(
                    "the daemon did not log \"listening on 127.0.0.1:PORT\" within {DAEMON_TIMEOUT:?} \
                     ({e}; exit status so far: {status:?}); its log ends with:\n{}",
                    daemon.log_tail()
                );
            }
        }
        daemon
    }

    pub fn log_tail(&self) -> String {
        let log = self.log.lock().expect("log lock");
        log.tail.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    pub fn rss_kib(&self) -> u64 {
        status_kib(&self.pid.to_string(), "VmRSS")
    }

    pub fn peak_rss_kib(&self) -> u64 {
        status_kib(&self.pid.to_string(), "VmHWM")
    }

    pub fn cpu_seconds(&self, ticks: f64) -> f64 {
        cpu_seconds(&self.pid.to_string(), ticks)
    }

    /// The "call finished" lines of `SolveStream` calls that arrived after `since`.
    pub fn streams_finished_since(&self, since: Instant) -> Vec<(Instant, String)> {
        let log = self.log.lock().expect("log lock");
        log.streams_finished
            .iter()
            .filter(|(at, _)| *at >= since)
            .cloned()
            .collect()
    }

    /// Sends SIGTERM and waits for the daemon to drain and exit; kills it after the time limit.
    pub fn stop(mut self) -> (Duration, ExitStatus) {
        let mut child = self.child.take().expect("daemon running");
        let start = Instant::now();
        let sent = Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status();
        if !matches!(sent, Ok(s) if s.success()) {
            let _ = child.kill();
        }
        loop {
            if let Some(status) = child.try_wait().expect("wait for the daemon") {
                if let Some(drain) = self.drain.take() {
                    let _ = drain.join();
                }
                return (start.elapsed(), status);
            }
            if start.elapsed() > DAEMON_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the daemon did not stop within {DAEMON_TIMEOUT:?} of SIGTERM; killed it. \
                     Its log ends with:\n{}",
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The address in the daemon's "listening on 127.0.0.1:PORT" line.
pub fn listening_addr(line: &str) -> Option<SocketAddr> {
    let rest = &line[line.find("listening on ")? + "listening on ".len()..];
    rest.split_whitespace().next()?.parse().ok()
}

/// The value of `key=` in a text log line.
pub fn log_field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
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

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
