//! Running `patience` subcommands (`solve`, `gen`, `client`) as a user would: [`TestCommand`] to
//! build a command line, [`Output`] for a run to its end, [`Running`] for a client whose output
//! the test reads as it comes, [`Typed`] for one whose input the test types; and the examples
//! of the README and `docs/` run as their text shows them ([`doc_examples`]).
//!
//! Like the daemon, every command starts without the caller's `PATIENCE_*` variables: only what
//! the test sets reaches it.

use std::ffi::OsStr;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::daemon::{exe, path_with_exe, without_patience_env};

/// How long a process may take to exit where the test only guards against a hang (it says nothing
/// about speed).
pub const HANG_LIMIT: Duration = Duration::from_secs(30);

/// A `patience` command line being built: arguments, environment, standard input.
pub struct TestCommand {
    cmd: Command,
    stdin: Option<Vec<u8>>,
}

/// `patience` with no arguments yet.
pub fn patience() -> TestCommand {
    let mut cmd = Command::new(exe());
    without_patience_env(&mut cmd);
    TestCommand { cmd, stdin: None }
}

/// `patience ARGS`, run to its end with nothing on standard input.
pub fn run(args: &[&str]) -> Output {
    patience().args(args).output()
}

impl TestCommand {
    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut TestCommand {
        self.cmd.arg(arg);
        self
    }

    pub fn args(&mut self, args: &[&str]) -> &mut TestCommand {
        self.cmd.args(args);
        self
    }

    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut TestCommand {
        self.cmd.env(key, value);
        self
    }

    /// What [`TestCommand::output`] writes on standard input (without it, standard input is
    /// empty).
    pub fn stdin(&mut self, bytes: impl AsRef<[u8]>) -> &mut TestCommand {
        self.stdin = Some(bytes.as_ref().to_vec());
        self
    }

    /// Runs the command to its end and collects its output. Standard input is written from
    /// another thread, so that a large input cannot deadlock against the output; a write error is
    /// ignored (a usage error exits before reading, and the output says so).
    pub fn output(&mut self) -> Output {
        let Some(input) = self.stdin.clone() else {
            let out = self
                .cmd
                .stdin(Stdio::null())
                .output()
                .expect("run patience");
            return out.into();
        };
        let mut child = self
            .cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start patience");
        let mut stdin = child.stdin.take().expect("a piped stdin");
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let out = child.wait_with_output().expect("wait for patience");
        writer.join().expect("the stdin writer");
        out.into()
    }

    /// Starts the command with nothing on standard input, its output for the test to read.
    pub fn running(&mut self) -> Running {
        Running::start(&mut self.cmd)
    }

    /// Starts the command with its standard input open for the test to type into.
    pub fn typed(&mut self) -> Typed {
        Typed::start(&mut self.cmd)
    }
}

/// A finished run: what `std::process::Output` holds, with helpers.
pub struct Output {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl From<std::process::Output> for Output {
    fn from(out: std::process::Output) -> Output {
        Output {
            status: out.status,
            stdout: out.stdout,
            stderr: out.stderr,
        }
    }
}

/// As `std::process::Output` shows itself: the output as text where it is UTF-8.
impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::process::Output {
            status: self.status,
            stdout: self.stdout.clone(),
            stderr: self.stderr.clone(),
        }
        .fmt(f)
    }
}

impl Output {
    /// Standard output, which must be UTF-8.
    pub fn stdout_str(&self) -> &str {
        std::str::from_utf8(&self.stdout).expect("UTF-8 output")
    }

    /// Standard error, which must be UTF-8.
    pub fn stderr_str(&self) -> &str {
        std::str::from_utf8(&self.stderr).expect("UTF-8 errors")
    }

    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

/// Waits for `child` to exit, or kills it and fails after `limit`, which only catches a hang (it
/// says nothing about speed); `what` names the process in the failure.
pub fn wait_or_hang(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    match super::wait::poll_blocking(limit, || child.try_wait().expect("poll the process")) {
        Some(status) => status,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: the process did not exit within {limit:?}");
        }
    }
}

/// The next line from `lines` that contains `needle`, without its line end. The limit only
/// catches a hang; `what` says what was awaited.
fn first_line_with(
    lines: &mpsc::Receiver<String>,
    needle: &str,
    limit: Duration,
    what: &str,
) -> String {
    let deadline = Instant::now() + limit;
    loop {
        let line = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("{what}"));
        if line.contains(needle) {
            return chomp(line);
        }
    }
}

/// A line without its line end.
fn chomp(mut line: String) -> String {
    if line.ends_with('\n') {
        line.pop();
        if line.ends_with('\r') {
            line.pop();
        }
    }
    line
}

/// Reads `stream` a line at a time on a thread of its own, sending each line (with its line end,
/// if any) on the channel as it comes; the thread returns the whole text. It stops at the end or
/// at the first read error (such as bytes that are not UTF-8).
fn lines_on_a_thread(
    stream: impl std::io::Read + Send + 'static,
) -> (JoinHandle<String>, mpsc::Receiver<String>) {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let mut reader = BufReader::new(stream);
        let mut text = String::new();
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    text.push_str(&line);
                    let _ = tx.send(line);
                }
            }
        }
        text
    });
    (handle, rx)
}

/// A command whose standard output the test reads itself, a line at a time (what it does not
/// read stays in the pipe, so the process can be held up on a full one), and whose standard error
/// is collected on the side.
pub struct Running {
    pub child: Child,
    stdout: BufReader<ChildStdout>,
    stderr: JoinHandle<String>,
    /// Standard error a line at a time, with line ends, as it comes (the whole of it is also in
    /// `stderr`).
    error_lines: mpsc::Receiver<String>,
}

impl Running {
    fn start(cmd: &mut Command) -> Running {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start patience");
        let stdout = BufReader::new(child.stdout.take().expect("a piped stdout"));
        let (stderr, error_lines) = lines_on_a_thread(child.stderr.take().expect("a piped stderr"));
        Running {
            child,
            stdout,
            stderr,
            error_lines,
        }
    }

    /// Waits for a line on standard error that contains `needle`; the limit only catches a hang.
    pub fn error_line(&self, needle: &str) -> String {
        let what = format!("the process prints {needle:?} on standard error");
        first_line_with(&self.error_lines, needle, Duration::from_secs(60), &what)
    }

    /// Reads `n` lines (fewer if the output ends first) and returns them.
    pub fn lines(&mut self, n: usize) -> String {
        let mut text = String::new();
        for _ in 0..n {
            if self.stdout.read_line(&mut text).expect("read the output") == 0 {
                break;
            }
        }
        text
    }

    /// Reads the rest of the output after `head` (what the test read), waits for the exit, and
    /// returns (output, exit code, standard error).
    pub fn finish(mut self, mut head: String) -> (String, Option<i32>, String) {
        self.stdout
            .read_to_string(&mut head)
            .expect("read the output");
        let status = self.child.wait().expect("wait for the process");
        (head, status.code(), self.stderr.join().expect("stderr"))
    }

    /// Closes the test's end of standard output (the reader goes away) and waits, at most
    /// `limit`, for the exit: how it exited, and its standard error.
    pub fn close_output(mut self, limit: Duration) -> (ExitStatus, String) {
        drop(self.stdout);
        let status = wait_or_hang(
            &mut self.child,
            limit,
            "after its reader went away, the process",
        );
        (status, self.stderr.join().expect("stderr"))
    }
}

/// A command reading its input from a pipe the test holds open, with standard output and standard
/// error handed over a line at a time (both are read on threads, so the process never waits on
/// the test to write).
pub struct Typed {
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: mpsc::Receiver<String>,
    stderr: mpsc::Receiver<String>,
}

impl Typed {
    /// Starts `cmd` (any program) with its standard input open for the test to type into.
    pub fn start(cmd: &mut Command) -> Typed {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start patience");
        let stdin = child.stdin.take();
        let (_, stdout) = lines_on_a_thread(child.stdout.take().expect("a piped stdout"));
        let (_, stderr) = lines_on_a_thread(child.stderr.take().expect("a piped stderr"));
        Typed {
            child,
            stdin,
            stdout,
            stderr,
        }
    }

    pub fn type_in(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("the input is open");
        stdin.write_all(bytes).expect("type into the input");
        stdin.flush().expect("flush the input");
    }

    /// Waits for a line on standard error that contains `needle` (the lines before it are
    /// dropped); the limit only catches a hang.
    pub fn error_line(&self, needle: &str) -> String {
        let what = format!("the process prints {needle:?} on standard error");
        first_line_with(&self.stderr, needle, Duration::from_secs(60), &what)
    }

    /// The first line on standard error that contains `needle` within `limit`, if one comes
    /// (the lines before it are dropped).
    pub fn error_line_within(&self, needle: &str, limit: Duration) -> Option<String> {
        let deadline = Instant::now() + limit;
        loop {
            let line = self
                .stderr
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .ok()?;
            if line.contains(needle) {
                return Some(chomp(line));
            }
        }
    }

    /// Ends the input: the process sees EOF.
    pub fn close_input(&mut self) {
        drop(self.stdin.take());
    }

    /// The next line on standard output (with its line end), within `limit`.
    pub fn next_line(&self, limit: Duration) -> String {
        self.stdout.recv_timeout(limit).unwrap_or_else(|e| {
            let said: Vec<String> = self.stderr.try_iter().map(chomp).collect();
            panic!(
                "no line of output within {limit:?} while the input is open ({e:?}); standard \
                 error so far:\n{}",
                said.join("\n")
            )
        })
    }

    /// Waits for the exit with the input still open (unless closed), then returns (the rest of
    /// the output, exit code, the rest of standard error, its lines joined by newlines). The
    /// limit only catches a hang; `what` names the run in the failure.
    pub fn finish(mut self, what: &str) -> (String, Option<i32>, String) {
        let status = wait_or_hang(&mut self.child, HANG_LIMIT, what);
        let stdout: String = self.stdout.iter().collect();
        let stderr: Vec<String> = self.stderr.iter().map(chomp).collect();
        drop(self.stdin.take());
        (stdout, status.code(), stderr.join("\n"))
    }
}

/// The complete lines (ending in a newline) of the file at `path`; 0 when there is none yet.
pub fn complete_lines(path: &std::path::Path) -> usize {
    std::fs::read(path).map_or(0, |bytes| bytes.iter().filter(|&&b| b == b'\n').count())
}

/// Waits until the file at `path` holds at least `n` complete lines, written by `child`; panics
/// if `child` exits first (saying how), and after [`HANG_LIMIT`], which only catches a hang.
pub fn wait_for_lines(path: &std::path::Path, n: usize, child: &mut Child) {
    let written = super::wait::poll_blocking(HANG_LIMIT, || {
        if complete_lines(path) >= n {
            return Some(());
        }
        if let Some(status) = child.try_wait().expect("poll the process") {
            panic!(
                "{} has {} lines, and the process writing it exited ({status}) before writing {n}",
                path.display(),
                complete_lines(path)
            );
        }
        None
    });
    assert!(
        written.is_some(),
        "{} has {} lines after {HANG_LIMIT:?}, not {n}",
        path.display(),
        complete_lines(path)
    );
}

/// A printed probability as a number; the line itself when it is not one.
pub fn parse_number(line: &str) -> f64 {
    line.parse()
        .unwrap_or_else(|e| panic!("{line:?} is not a number: {e}"))
}

/// Checks printed probabilities, one per line, against reference values within `tolerance`, and
/// that each is printed with exactly `decimals` decimals.
pub fn assert_answers(out: &str, expected: &[f64], decimals: usize, tolerance: f64) {
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), expected.len(), "one line per answer:\n{out}");
    for (i, (line, want)) in lines.iter().zip(expected).enumerate() {
        let shown = line.split_once('.').map_or(0, |(_, frac)| frac.len());
        assert_eq!(shown, decimals, "answer {}: {line:?}", i + 1);
        let got = parse_number(line);
        assert!(
            (got - want).abs() <= tolerance,
            "answer {}: printed {line}, reference {want}",
            i + 1
        );
    }
}

/// Reads one line of output, closes the pipe, and expects a quiet, successful exit.
pub fn survives_a_closed_pipe(cmd: &mut TestCommand) {
    let mut child = cmd.running();
    let first = child.lines(1);
    assert!(!first.trim().is_empty(), "no output before the pipe closed");
    // The reader (and with it our end of the pipe) is gone now.
    let (status, errors) = child.close_output(Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{status:?}, stderr: {errors:?}");
    assert!(!errors.contains("patience:"), "{errors:?}");
    assert_eq!(errors, "");
}

/// A document of the crate (`README.md`, `docs/solving.md`: a path from the crate's root), read
/// whole.
pub fn doc_text(doc: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(doc);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The section of `doc` whose heading line starts with `heading` (say ``"## `patience rps`"``):
/// that line and everything after it up to the next heading of the same level or above, headings
/// inside fenced blocks (a `# comment` in a shell block) not counting.
pub fn doc_section(doc: &str, heading: &str) -> String {
    let text = doc_text(doc);
    let level = heading.chars().take_while(|&c| c == '#').count();
    assert!(level > 0, "{heading:?} is not a heading");
    let mut section = String::new();
    let mut inside = false;
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        let is_heading = !fenced && hashes > 0 && line[hashes..].starts_with(' ');
        if inside && is_heading && hashes <= level {
            break;
        }
        if !inside && is_heading && line.starts_with(heading) {
            inside = true;
        }
        if inside {
            section.push_str(line);
            section.push('\n');
        }
    }
    assert!(!section.is_empty(), "{doc} has no section {heading:?}");
    section
}

/// The examples of a section's text: each `$ COMMAND` line with the lines after it, up to the
/// next `$` line or the end of its block, as its expected standard output.
fn dollar_examples(section: &str) -> Vec<(String, String)> {
    let mut examples = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in section.lines() {
        if let Some(command) = line.strip_prefix("$ ") {
            examples.extend(current.take());
            current = Some((command.to_string(), String::new()));
        } else if line.starts_with("```") {
            examples.extend(current.take());
        } else if let Some((_, output)) = &mut current {
            output.push_str(line);
            output.push('\n');
        }
    }
    examples.extend(current);
    examples
}

/// The `$` examples of one section of a document, to run: [`DocExamples::run`] runs each with
/// `sh`, this build's `patience` first on the `PATH`, and checks that it prints exactly what the
/// document shows.
pub struct DocExamples {
    doc: String,
    heading: String,
    at_least: usize,
    rewrites: Vec<(String, String)>,
    dir: std::path::PathBuf,
    envs: Vec<(String, String)>,
}

/// The examples of `doc`'s section that starts with `heading` ([`doc_section`]), run from the
/// crate's root unless [`DocExamples::in_dir`] says otherwise.
pub fn doc_examples(doc: &str, heading: &str) -> DocExamples {
    DocExamples {
        doc: doc.to_string(),
        heading: heading.to_string(),
        at_least: 1,
        rewrites: Vec::new(),
        dir: env!("CARGO_MANIFEST_DIR").into(),
        envs: Vec::new(),
    }
}

impl DocExamples {
    /// The section must hold at least `n` examples (1 unless said).
    pub fn at_least(mut self, n: usize) -> DocExamples {
        self.at_least = n;
        self
    }

    /// Replaces `from` by `to` in each command before it runs: the address a document shows by the
    /// one a test daemon listens on.
    pub fn rewrite(mut self, from: &str, to: &str) -> DocExamples {
        self.rewrites.push((from.to_string(), to.to_string()));
        self
    }

    /// Sets `key` to `value` in each command's environment, as a user's shell would have it (the
    /// store an `s3://` example reads, configured as AWS tools are).
    pub fn env(mut self, key: &str, value: &str) -> DocExamples {
        self.envs.push((key.to_string(), value.to_string()));
        self
    }

    /// Runs the commands in `dir` instead of the crate's root.
    pub fn in_dir(mut self, dir: &std::path::Path) -> DocExamples {
        self.dir = dir.to_path_buf();
        self
    }

    /// Runs every example and checks its standard output against the document's.
    pub fn run(self) {
        let DocExamples {
            doc,
            heading,
            at_least,
            rewrites,
            dir,
            envs,
        } = self;
        let examples = dollar_examples(&doc_section(&doc, &heading));
        assert!(
            examples.len() >= at_least,
            "{doc}, {heading:?}: {at_least} examples wanted, found {examples:?}"
        );
        let path = path_with_exe();
        for (shown, expected) in examples {
            let command = rewrites.iter().fold(shown.clone(), |command, (from, to)| {
                command.replace(from, to)
            });
            let mut sh = Command::new("sh");
            without_patience_env(&mut sh);
            let out = sh
                .args(["-c", &command])
                .current_dir(&dir)
                .env("PATH", &path)
                .envs(envs.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::null())
                .output()
                .expect("run sh");
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                expected,
                "{doc}: $ {shown}\n(stderr: {})",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
