//! The process harness: a real `patience serve` on port 0 (or an address of the test's choice),
//! its log read on a thread for its whole life, signals, its exit, its memory and CPU from /proc.
//!
//! This file stands alone (it uses nothing else of `tests/common`), so that the benches include
//! it too (`benches/support/mod.rs`, through `#[path]`): tests and benches start the daemon one
//! way.
#![allow(
    dead_code,
    reason = "each test binary and each bench uses a different part"
)]

use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use patience::proto::solver_client::SolverClient;
use tonic::transport::Channel;

/// How long the daemon may take to log its address. It only catches a hang.
pub const START_LIMIT: Duration = Duration::from_secs(20);
/// How long a test waits for a log line where it only guards against a hang.
pub const LOG_LIMIT: Duration = Duration::from_secs(20);
/// How long [`Daemon::stop`] waits for the drain after SIGTERM before it kills the daemon.
pub const STOP_LIMIT: Duration = Duration::from_secs(10);
/// Log lines shown when the daemon does not do what was awaited.
pub const LOG_TAIL: usize = 20;

/// Addresses nobody listens on. Ports 1 and 2 are privileged and unassigned on any machine these
/// tests run on, and no daemon of a parallel test can bind them (they bind port 0, which the system
/// serves from the ephemeral range). A port the system handed out and took back would not do: it
/// can be handed out again, at once, to another test's daemon, which would then answer.
pub const DEAD: &str = "http://127.0.0.1:1";
pub const ALSO_DEAD: &str = "http://127.0.0.1:2";

/// The `patience` binary under test.
pub fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_patience")
}

/// `PATH` with the directory of the binary under test first: for scripts (the README's
/// examples, the Kubernetes pods' commands) that call `patience` by name.
pub fn path_with_exe() -> std::ffi::OsString {
    let bin = std::path::Path::new(exe())
        .parent()
        .expect("the binary's directory")
        .to_path_buf();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&rest))).expect("a PATH")
}

/// Removes every `PATIENCE_*` variable of the caller's environment from `cmd`: only what the test
/// sets reaches the process.
pub fn without_patience_env(cmd: &mut Command) -> &mut Command {
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PATIENCE_") {
            cmd.env_remove(key);
        }
    }
    cmd
}

/// The daemon's log as read so far, and whether it has ended (the process closed its stderr).
#[derive(Default)]
struct Log {
    /// Every line, with the time it was read.
    lines: Vec<(Instant, String)>,
    ended: bool,
}

#[derive(Default)]
struct Shared {
    log: Mutex<Log>,
    grew: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A `patience serve` process, killed when dropped, so a failed test never leaves it behind. Its
/// log (stderr) is read on a thread for its whole life, so it never blocks on a full pipe; every
/// line is kept.
pub struct Daemon {
    pub child: Child,
    /// `http://ADDR`, from the "listening on" line.
    pub addr: String,
    pub socket: SocketAddr,
    /// The "listening on" line, which carries the configuration.
    pub start_line: String,
    shared: Arc<Shared>,
    /// Lines before this one were read by [`Daemon::line_with`] or [`Daemon::log_so_far`].
    read: AtomicUsize,
    reader: Option<JoinHandle<()>>,
}

impl Daemon {
    /// `patience serve --addr 127.0.0.1:0 ARGS` with `RUST_LOG=info` and no `PATIENCE_*`
    /// variables from the test's environment.
    pub fn start(args: &[&str]) -> Daemon {
        Daemon::start_with(args, &[("RUST_LOG", "info")], None)
    }

    /// Like [`Daemon::start`], with these environment variables (after `RUST_LOG=info`, so they
    /// may replace it), and with the open-file limit (soft and hard) lowered to `open_files` first
    /// when given (through `sh -c 'ulimit -n'`).
    pub fn start_with(args: &[&str], env: &[(&str, &str)], open_files: Option<u64>) -> Daemon {
        Daemon::spawn("127.0.0.1:0", args, env, open_files)
    }

    /// Like [`Daemon::start`] with `env`, listening on `addr` (`host:port`), such as `localhost:0`.
    /// Never a port taken before by another socket: the system may have handed it to another
    /// test meanwhile. To restart a daemon "on the same address", put a relay in front
    /// ([`DelayProxy::retarget`](super::delay::DelayProxy::retarget)).
    pub fn start_at(addr: &str, args: &[&str], env: &[(&str, &str)]) -> Daemon {
        Daemon::spawn(addr, args, env, None)
    }

    fn spawn(addr: &str, args: &[&str], env: &[(&str, &str)], open_files: Option<u64>) -> Daemon {
        use std::io::BufRead as _;
        let mut cmd = match open_files {
            None => {
                let mut cmd = Command::new(exe());
                cmd.args(["serve", "--addr", addr]).args(args);
                cmd
            }
            Some(limit) => {
                let mut cmd = Command::new("sh");
                cmd.arg("-c")
                    .arg(format!(
                        "ulimit -n {limit} && exec \"$0\" serve --addr \"$@\""
                    ))
                    .arg(exe())
                    .arg(addr)
                    .args(args);
                cmd
            }
        };
        without_patience_env(&mut cmd)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let stderr = child.stderr.take().expect("a piped stderr");
        let shared = Arc::new(Shared::default());
        let reader = {
            let shared = shared.clone();
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    shared.lock().lines.push((Instant::now(), line));
                    shared.grew.notify_all();
                }
                shared.lock().ended = true;
                shared.grew.notify_all();
            })
        };
        let mut daemon = Daemon {
            child,
            addr: String::new(),
            socket: SocketAddr::from(([127, 0, 0, 1], 0)),
            start_line: String::new(),
            shared,
            read: AtomicUsize::new(0),
            reader: Some(reader),
        };
        let start_line = daemon.line_with("listening on ", START_LIMIT);
        let bound = start_line
            .split("listening on ")
            .nth(1)
            // A text line goes on after a space, a JSON one (`--log-format json`) after a quote.
            .and_then(|rest| rest.split(|c: char| c.is_whitespace() || c == '"').next())
            .expect("an address after \"listening on\"");
        daemon.socket = bound.parse().expect("a socket address");
        daemon.addr = format!("http://{bound}");
        daemon.start_line = start_line;
        daemon
    }

    /// The first line at or after line `from` that contains `needle`, and its number; `None` if
    /// none came within `limit` or the log ended without one.
    fn find(&self, from: usize, needle: &str, limit: Duration) -> Option<(usize, String)> {
        let deadline = Instant::now() + limit;
        let mut log = self.shared.lock();
        let mut at = from;
        loop {
            while let Some((_, line)) = log.lines.get(at) {
                if line.contains(needle) {
                    return Some((at, line.clone()));
                }
                at += 1;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if log.ended || left.is_zero() {
                return None;
            }
            log = self
                .shared
                .grew
                .wait_timeout(log, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Panics because `needle` was not logged within `limit`, with what the daemon did log.
    fn missing(&self, needle: &str, limit: Duration) -> ! {
        let ended = if self.shared.lock().ended {
            "the daemon closed its log"
        } else {
            "the daemon is still running"
        };
        panic!(
            "no log line with {needle:?} within {limit:?} ({ended}); its log ends with:\n{}",
            self.log_tail()
        );
    }

    /// The next line of the log (after the last one [`Daemon::line_with`] returned) that contains
    /// `needle`; panics after `limit`, or at once if the daemon closed its log.
    pub fn line_with(&self, needle: &str, limit: Duration) -> String {
        match self.find(self.read.load(Ordering::Relaxed), needle, limit) {
            Some((at, line)) => {
                self.read.store(at + 1, Ordering::Relaxed);
                line
            }
            None => self.missing(needle, limit),
        }
    }

    /// The first line of the whole log that contains `needle`, whether read already or not,
    /// waiting up to `limit` for it; it does not move the place [`Daemon::line_with`] reads from.
    pub fn logged(&self, needle: &str, limit: Duration) -> String {
        match self.find(0, needle, limit) {
            Some((_, line)) => line,
            None => self.missing(needle, limit),
        }
    }

    /// `host:port` of the metrics endpoint, from the "metrics on http://" line (the daemon was
    /// started with `--metrics-addr`).
    pub fn metrics_addr(&self) -> String {
        let line = self.logged("metrics on http://", START_LIMIT);
        line.split("metrics on http://")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| c == '/' || c.is_whitespace()).next())
            .expect("an address after \"metrics on http://\"")
            .to_string()
    }

    /// The log lines that arrived so far and were not read yet; they count as read now.
    pub fn log_so_far(&self) -> Vec<String> {
        let log = self.shared.lock();
        let from = self.read.swap(log.lines.len(), Ordering::Relaxed);
        log.lines[from.min(log.lines.len())..]
            .iter()
            .map(|(_, line)| line.clone())
            .collect()
    }

    /// Every line the daemon has logged so far, from its first, read or not.
    pub fn log(&self) -> Vec<String> {
        let log = self.shared.lock();
        log.lines.iter().map(|(_, line)| line.clone()).collect()
    }

    /// The lines that arrived at `since` or later, with the time each arrived.
    pub fn lines_since(&self, since: Instant) -> Vec<(Instant, String)> {
        let log = self.shared.lock();
        log.lines
            .iter()
            .filter(|(at, _)| *at >= since)
            .cloned()
            .collect()
    }

    /// The last [`LOG_TAIL`] lines, for error messages.
    pub fn log_tail(&self) -> String {
        let log = self.shared.lock();
        let from = log.lines.len().saturating_sub(LOG_TAIL);
        log.lines[from..]
            .iter()
            .map(|(_, line)| line.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub async fn client(&self) -> SolverClient<Channel> {
        SolverClient::connect(self.addr.clone())
            .await
            .expect("connect to the daemon")
    }

    /// A client of the daemon's health service, on a connection of its own.
    pub async fn health(&self) -> tonic_health::pb::health_client::HealthClient<Channel> {
        let channel = Channel::from_shared(self.addr.clone())
            .expect("an http:// address")
            .connect()
            .await
            .expect("connect to the daemon");
        tonic_health::pb::health_client::HealthClient::new(channel)
    }

    /// Sends the signal `name` (such as `TERM` or `STOP`) to the daemon.
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} failed");
    }

    /// Kills the daemon (SIGKILL) and waits until it is gone and its whole log is read.
    pub fn kill(&mut self) {
        self.child.kill().expect("kill the daemon");
        self.child.wait().expect("wait for the killed daemon");
        self.finish_log();
    }

    /// Once the process has exited: waits for the log thread to read the last lines.
    fn finish_log(&mut self) {
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }

    /// The exit status once the process has exited, polling until `limit`; `None` if it has not.
    fn exited_within(&mut self, limit: Duration) -> Option<ExitStatus> {
        let status = super::wait::poll_blocking(limit, || {
            self.child.try_wait().expect("wait for the daemon")
        })?;
        self.finish_log();
        Some(status)
    }

    /// Waits for the process to exit; its exit code and the lines of its log not read yet. Panics
    /// after `limit` (and the daemon is killed as it is dropped).
    pub fn wait(mut self, limit: Duration) -> (Option<i32>, Vec<String>) {
        match self.exited_within(limit) {
            Some(status) => (status.code(), self.log_so_far()),
            None => panic!(
                "the daemon did not exit within {limit:?}; its log ends with:\n{}",
                self.log_tail()
            ),
        }
    }

    /// Sends SIGTERM and waits for the daemon to drain and exit: how long that took, and how it
    /// exited. Kills it and panics after [`STOP_LIMIT`]. Its whole log stays readable.
    pub fn stop(&mut self) -> (Duration, ExitStatus) {
        let start = Instant::now();
        self.signal("TERM");
        match self.exited_within(STOP_LIMIT) {
            Some(status) => (start.elapsed(), status),
            None => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "the daemon did not stop within {STOP_LIMIT:?} of SIGTERM; killed it. Its \
                     log ends with:\n{}",
                    self.log_tail()
                );
            }
        }
    }

    /// A `kB` field of `/proc/PID/status` (`VmRSS`, `VmHWM`), in KiB; 0 if unreadable.
    pub fn status_kib(&self, field: &str) -> u64 {
        status_kib(self.pid(), field)
    }

    pub fn rss_kib(&self) -> u64 {
        self.status_kib("VmRSS")
    }

    pub fn peak_rss_kib(&self) -> u64 {
        self.status_kib("VmHWM")
    }

    /// User plus system CPU seconds the daemon has used, from `/proc/PID/stat`.
    pub fn cpu_seconds(&self) -> f64 {
        cpu_seconds(self.pid())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `kB` field (`VmRSS`, `VmHWM`) of `/proc/{pid}/status`, 0 if unreadable.
pub fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix(field)
                    .and_then(|v| v.strip_prefix(':'))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            })
        })
        .unwrap_or(0)
}

/// Clock ticks per second of `/proc/PID/stat` (`getconf CLK_TCK`, 100 if that fails), asked once.
pub fn clock_ticks() -> f64 {
    static TICKS: OnceLock<f64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// User plus system CPU seconds of a process, from `/proc/{pid}/stat`; 0 if unreadable.
pub fn cpu_seconds(pid: u32) -> f64 {
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
        / clock_ticks()
}

/// Resets the peak RSS (VmHWM) of a process to its current RSS; false where the kernel refuses.
pub fn reset_peak(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

/// The value of `key=` in a text log line.
pub fn log_field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}

/// The value of one series (its name with its labels, as the text format prints them) in a
/// metrics scrape; `None` when the scrape has no such line.
pub fn metric(scrape: &str, series: &str) -> Option<f64> {
    scrape.lines().find_map(|line| {
        line.strip_prefix(series)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

/// Deals a daemon has answered so far, from its metrics endpoint (`host:port`): the sum of
/// `patience_deals_total` over its outcomes (docs/operations.md).
pub fn deals_answered(metrics: &str) -> u64 {
    scrape(metrics)
        .lines()
        .filter(|l| l.starts_with("patience_deals_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// The whole answer (status line, headers, body) to `GET /metrics` from a metrics endpoint
/// (`host:port`), over plain HTTP/1.1; asserts it is a 200.
pub fn scrape(addr: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut socket = std::net::TcpStream::connect(addr).expect("connect to the metrics endpoint");
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a read timeout");
    write!(
        socket,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("send the request");
    let mut text = String::new();
    socket.read_to_string(&mut text).expect("read the answer");
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    text
}
