//! `patience client` spread over several `patience serve` processes: real binaries, a real SIGKILL,
//! output compared byte for byte with `patience solve`. Also the daemon's start-up log of its
//! configuration.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_patience")
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// A directory of this test's own, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("patience-cluster-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// `copies` copies of random1000.in, one after the other, as one file.
    fn repeated_corpus(&self, copies: usize) -> PathBuf {
        let one = std::fs::read_to_string(data("random1000.in")).unwrap();
        let path = self.0.join(format!("random{copies}000.in"));
        std::fs::write(&path, one.repeat(copies)).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A `patience serve` process on a free port, killed if the test ends early.
struct Daemon {
    child: Child,
    addr: String,
    /// The "listening on" line, which carries the configuration.
    start_line: String,
}

impl Daemon {
    fn start(args: &[&str], env: &[(&str, &str)]) -> Daemon {
        let mut cmd = Command::new(exe());
        cmd.args(["serve", "--addr", "127.0.0.1:0"])
            .args(args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // Only what the test sets reaches the daemon.
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("PATIENCE_") {
                cmd.env_remove(key);
            }
        }
        cmd.envs(env.iter().copied());
        let mut child = cmd.spawn().expect("start patience serve");
        let stderr = child.stderr.take().unwrap();
        let (tx, log) = mpsc::channel();
        // Drain the log for the daemon's whole life, so it never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        let (addr, start_line) = loop {
            let line = log
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("the daemon logs its address");
            if let Some(rest) = line.split("listening on ").nth(1) {
                let bound = rest.split_whitespace().next().unwrap();
                break (format!("http://{bound}"), line.clone());
            }
        };
        Daemon {
            child,
            addr,
            start_line,
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(exe()).args(args).output().unwrap()
}

/// Addresses nobody listens on. Ports 1 and 2 are privileged and unassigned on any machine these
/// tests run on, and no daemon of a parallel test can bind them (they bind port 0, which the system
/// serves from the ephemeral range). A port the system handed out and took back would not do: it
/// can be handed out again, at once, to another test's daemon, which would then answer.
const DEAD: &str = "http://127.0.0.1:1";
const ALSO_DEAD: &str = "http://127.0.0.1:2";

/// Waits for `child` to exit, or kills it and fails after a limit that only catches a hang (it
/// says nothing about speed).
fn wait_or_hang(child: &mut Child, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: the client hung");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A client reading its deals from a pipe the test holds open, with standard error handed over a
/// line at a time.
struct Typed {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    stderr: mpsc::Receiver<String>,
    stdout: std::thread::JoinHandle<String>,
}

impl Typed {
    fn start(args: &[&str]) -> Typed {
        let mut child = Command::new(exe())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let mut stdout = child.stdout.take().unwrap();
        let stdout = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stdout.read_to_string(&mut text);
            text
        });
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Typed {
            child,
            stdin,
            stderr: rx,
            stdout,
        }
    }

    fn type_in(&mut self, bytes: &[u8]) {
        use std::io::Write as _;
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// The next line on standard error; the limit only catches a hang.
    fn next_error_line(&self) -> String {
        self.stderr
            .recv_timeout(Duration::from_secs(30))
            .expect("a line on standard error while the input is open")
    }

    /// Waits for the exit with the input still open, then returns (output, status, the rest of
    /// standard error).
    fn finish(mut self, what: &str) -> (String, Option<i32>, String) {
        let status = wait_or_hang(&mut self.child, what);
        let stdout = self.stdout.join().unwrap();
        let stderr: Vec<String> = self.stderr.iter().collect();
        drop(self.stdin.take());
        (stdout, status.code(), stderr.join("\n"))
    }
}

/// A client whose standard output the test reads itself, a line at a time, and whose standard
/// error is collected on the side.
struct Running {
    child: Child,
    stdout: BufReader<std::process::ChildStdout>,
    stderr: std::thread::JoinHandle<String>,
}

impl Running {
    fn start(args: &[&str]) -> Running {
        let mut child = Command::new(exe())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        Running {
            child,
            stdout,
            stderr,
        }
    }

    /// Reads `n` lines (fewer if the output ends first) and returns them.
    fn lines(&mut self, n: usize) -> String {
        let mut text = String::new();
        for _ in 0..n {
            if self.stdout.read_line(&mut text).unwrap() == 0 {
                break;
            }
        }
        text
    }

    /// Reads the rest of the output, waits for the exit, and returns (output, status, stderr).
    fn finish(mut self, mut text: String) -> (String, Option<i32>, String) {
        self.stdout.read_to_string(&mut text).unwrap();
        let status = self.child.wait().unwrap();
        (text, status.code(), self.stderr.join().unwrap())
    }
}

/// Whatever the timing, the client cannot have finished when the kill comes: the test stops
/// reading its output first, and the client cannot write its last lines into a full pipe. So the
/// output must be much larger than what the pipe and the buffers on both sides hold (64 KiB and a
/// few 8 KiB on Linux).
const UNREAD_BOUND: usize = 128 << 10;

#[test]
fn a_daemon_killed_midway_costs_nothing_but_a_warning() {
    let scratch = Scratch::new("kill");
    // 30,000 deals: about 270 KB of output.
    let input = scratch.repeated_corpus(30);
    let input = input.to_str().unwrap();
    let solve = run(&["solve", input]);
    assert_eq!(solve.status.code(), Some(0));
    assert!(solve.stdout.len() > 2 * UNREAD_BOUND);

    let mut daemons: Vec<Daemon> = (0..3)
        .map(|_| Daemon::start(&["--workers", "1"], &[]))
        .collect();
    let mut client = Running::start(&[
        "client",
        "--addr",
        &daemons[0].addr,
        "--addr",
        &daemons[1].addr,
        "--addr",
        &daemons[2].addr,
        "--batch",
        "32",
        input,
    ]);
    // Some results are in: every daemon has a stream open and work in flight.
    let head = client.lines(2_000);
    // The other two stay in `daemons`, alive until the end of the test.
    let mut victim = daemons.remove(1);
    assert!(
        client.child.try_wait().unwrap().is_none(),
        "the client finished before the kill; make the input larger"
    );
    victim.child.kill().unwrap();
    victim.child.wait().unwrap();
    let victim_addr = victim.addr.clone();

    let (out, code, stderr) = client.finish(head);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        out.as_bytes() == solve.stdout.as_slice(),
        "the output differs from solve's ({} lines against {}); stderr: {stderr}",
        out.lines().count(),
        String::from_utf8_lossy(&solve.stdout).lines().count()
    );
    let warnings: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        warnings.len(),
        1,
        "one warning, about the killed daemon: {stderr}"
    );
    assert!(warnings[0].contains(&victim_addr), "{stderr}");
    assert!(warnings[0].contains("warning"), "{stderr}");
}

#[test]
fn every_daemon_killed_midway_exits_2_after_an_in_order_prefix() {
    let scratch = Scratch::new("all-killed");
    let input = scratch.repeated_corpus(30);
    let input = input.to_str().unwrap();
    let solve = run(&["solve", input]);
    let mut daemon = Daemon::start(&["--workers", "1"], &[]);
    let mut client = Running::start(&["client", "--addr", &daemon.addr, input]);
    let head = client.lines(2_000);
    assert!(client.child.try_wait().unwrap().is_none());
    daemon.child.kill().unwrap();
    daemon.child.wait().unwrap();
    let (out, code, stderr) = client.finish(head);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(out.lines().count() >= 2_000);
    assert!(out.len() < solve.stdout.len());
    assert!(solve.stdout.starts_with(out.as_bytes()));
    assert!(stderr.contains(&daemon.addr), "{stderr}");
    assert!(stderr.contains("every daemon failed"), "{stderr}");
}

/// Good deals, bad deals and a missing file: the client must report the bad ones in place however
/// the good ones are spread.
fn mixed_inputs(scratch: &Scratch) -> Vec<String> {
    let good = std::fs::read_to_string(data("random1000.in")).unwrap();
    let bad = good.replacen("AS", "QX", 3);
    let bad_path = scratch.0.join("bad.in");
    std::fs::write(&bad_path, bad).unwrap();
    vec![
        data("random1000.in").display().to_string(),
        bad_path.display().to_string(),
        scratch.0.join("missing.in").display().to_string(),
        data("extra12.in").display().to_string(),
    ]
}

#[test]
fn an_unreachable_daemon_among_good_ones_changes_nothing_but_a_warning() {
    let scratch = Scratch::new("unreachable");
    let files = mixed_inputs(&scratch);
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    let solve = run(&[&["solve"], &files[..]].concat());
    assert_eq!(solve.status.code(), Some(2), "a missing file is trouble");

    let a = Daemon::start(&["--workers", "1"], &[]);
    let b = Daemon::start(&["--workers", "1"], &[]);
    let dead = DEAD;
    // Several --addr flags, and a comma-separated list in one of them.
    let both = format!("{},{dead}", a.addr);
    for batch in ["1", "32", "256"] {
        let client = run(&[
            &[
                "client", "--addr", &both, "--addr", &b.addr, "--batch", batch,
            ],
            &files[..],
        ]
        .concat());
        let stderr = String::from_utf8_lossy(&client.stderr);
        assert_eq!(
            String::from_utf8_lossy(&client.stdout),
            String::from_utf8_lossy(&solve.stdout),
            "batch {batch}; stderr: {stderr}"
        );
        assert_eq!(client.status.code(), solve.status.code(), "{stderr}");
        let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("warning")).collect();
        assert_eq!(warnings.len(), 1, "{stderr}");
        assert!(warnings[0].contains(dead), "{stderr}");
        assert!(stderr.contains("missing.in"), "{stderr}");
    }
}

#[test]
fn with_every_daemon_down_the_client_exits_2_and_says_so() {
    let (one, two) = (DEAD, ALSO_DEAD);
    let input = data("random1000.in");
    let out = run(&[
        "client",
        "--addr",
        one,
        "--addr",
        two,
        input.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(stderr.contains("every daemon failed"), "{stderr}");
    assert!(stderr.contains(one) && stderr.contains(two), "{stderr}");
    assert!(stderr.contains("cannot connect"), "{stderr}");
}

#[test]
fn quiet_is_accepted_and_the_client_prints_nothing_on_stderr() {
    let daemon = Daemon::start(&["--workers", "1"], &[]);
    let input = data("sample.in");
    for flag in ["--quiet", "-q"] {
        let out = run(&[
            "client",
            flag,
            "--addr",
            &daemon.addr,
            input.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "0.589314\n");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    }
}

#[test]
fn the_daemon_logs_its_whole_configuration_from_flags_environment_and_defaults() {
    let scratch = Scratch::new("config");
    let token = scratch.0.join("token");
    std::fs::write(&token, "a-secret-that-must-not-be-logged\n").unwrap();
    let daemon = Daemon::start(
        &["--keepalive-timeout", "7s"],
        &[
            ("PATIENCE_WORKERS", "1"),
            ("PATIENCE_MAX_IN_FLIGHT", "123"),
            ("PATIENCE_KEEPALIVE_INTERVAL", "5s"),
            ("PATIENCE_AUTH_TOKEN_FILE", token.to_str().unwrap()),
        ],
    );
    let line = &daemon.start_line;
    for field in [
        "workers=1",
        "max_in_flight=123",
        "keepalive_interval_s=5.0",
        "keepalive_timeout_s=7.0",
        // Defaults are shown too.
        "max_concurrent_streams=32",
        "max_deals_per_request=10000",
        "drain_timeout_s=30.0",
        "metrics_addr=off",
        "log_format=\"text\"",
        "tls=\"off\"",
        "auth=\"bearer token\"",
    ] {
        assert!(line.contains(field), "{field} missing from {line}");
    }
    assert!(!line.contains("a-secret"), "{line}");
}

#[test]
fn a_closed_stdout_is_not_an_error_for_the_client() {
    let scratch = Scratch::new("closed");
    // Far more output than a pipe holds, so the client is still writing when the reader leaves.
    let input = scratch.repeated_corpus(30);
    let a = Daemon::start(&["--workers", "1"], &[]);
    let b = Daemon::start(&["--workers", "1"], &[]);
    let mut client = Running::start(&[
        "client",
        "--addr",
        &a.addr,
        "--addr",
        &b.addr,
        input.to_str().unwrap(),
    ]);
    let expected = std::fs::read_to_string(data("random1000.out6")).unwrap();
    let first = expected.lines().next().unwrap();
    assert_eq!(client.lines(1), format!("{first}\n"));
    let Running {
        mut child,
        stdout,
        stderr,
    } = client;
    drop(stdout);
    let status = child.wait().unwrap();
    let stderr = stderr.join().unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(stderr, "");
}

#[test]
fn typed_deals_are_answered_before_the_input_ends() {
    use std::io::Write as _;
    let daemon = Daemon::start(&["--workers", "1"], &[]);
    let mut child = Command::new(exe())
        .args(["client", "--addr", &daemon.addr])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let sample = std::fs::read(data("sample.in")).unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for _ in 0..2 {
            let mut line = String::new();
            let _ = stdout.read_line(&mut line);
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // Standard input stays open: the answer must come anyway. The limit only guards against a
    // hang; it says nothing about speed.
    let limit = Duration::from_secs(60);
    for _ in 0..2 {
        stdin.write_all(&sample).unwrap();
        stdin.flush().unwrap();
        let line = rx
            .recv_timeout(limit)
            .expect("an answer while the input is open");
        assert_eq!(line, "0.589314\n");
    }
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

/// The analysis flags go through the API: the client's JSON lines, over two daemons, are the bytes
/// `solve` prints for the same files, bad deals, positions and all.
#[test]
fn json_with_every_analysis_option_matches_solve_over_two_daemons() {
    let scratch = Scratch::new("json");
    let mut files = mixed_inputs(&scratch);
    let positions = scratch.0.join("positions.in");
    std::fs::write(
        &positions,
        "7S 6S / 6C 6H / 7C 6D / / / / / /\n6S 6C 6D 6H 7S / / / / / / / /\n/ / / / / / / /\n",
    )
    .unwrap();
    files.push(positions.display().to_string());
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    let flags = ["--format", "json", "--exact", "--moves", "--line"];
    let solve = run(&[&["solve"], &flags[..], &files[..]].concat());
    assert_eq!(solve.status.code(), Some(2), "a missing file is trouble");
    let printed = String::from_utf8_lossy(&solve.stdout);
    assert!(printed.contains(r#""exact":"2/3""#), "{printed}");

    let a = Daemon::start(&["--workers", "1"], &[]);
    let b = Daemon::start(&["--workers", "1"], &[]);
    let client = run(&[
        &[
            "client", "--addr", &a.addr, "--addr", &b.addr, "--batch", "7",
        ],
        &flags[..],
        &files[..],
    ]
    .concat());
    let stderr = String::from_utf8_lossy(&client.stderr);
    assert_eq!(
        String::from_utf8_lossy(&client.stdout),
        printed,
        "stderr: {stderr}"
    );
    assert_eq!(client.status.code(), solve.status.code(), "{stderr}");
}

/// The reader may be blocked on an input that stays open (a terminal, a pipe) when every daemon has
/// failed: the client must say so and exit at once, not after the next line or EOF.
#[test]
fn with_every_daemon_down_the_client_exits_while_its_input_is_still_open() {
    let mut client = Typed::start(&["client", "--addr", DEAD]);
    // A valid deal, so there is something the daemons were needed for.
    client.type_in(&std::fs::read(data("sample.in")).unwrap());
    let (out, code, stderr) = client.finish("every daemon down, input open");
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(out, "");
    assert!(stderr.contains("every daemon failed"), "{stderr}");
    assert!(stderr.contains(DEAD), "{stderr}");
}
