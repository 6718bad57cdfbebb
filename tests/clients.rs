//! The clients people install, the Python package's `patience-py` and `patience.remote` (the
//! wheel of crates/python with its `remote` extra, its messages made from the descriptors the
//! wheel carries) and `clients/node` (grpc-js, the proto loaded at run time), run as their users
//! run them against real daemons: what they print (what `patience solve` prints), gzip both ways
//! on the wire, exit statuses, TLS and tokens, resuming elsewhere after a drain cut, and the
//! library examples of docs/clients.md.
//!
//! They need tools this crate does not build. Python: the wheel, built and installed into a fresh
//! venv once per run (tests/common/wheel.rs), with grpcio lent by the tools venv (`PATIENCE_VENV`
//! or `target/tools/venv`, which `.ci/run` installs). Node: `node` from `PATIENCE_NODE` or the `PATH`, and `clients/node/node_modules` (`npm ci
//! --prefix clients/node`). Without them the tests say so and skip that client; when
//! `PATIENCE_VENV` or `PATIENCE_NODE` is given (as `.ci/run` gives both), a missing tool fails.

use crate::common;
use crate::common::process::succeeds;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use common::wheel::installed;
use common::{
    Authority, DEAD, Daemon, Output, Scratch, Sniffer, Typed, data, doc_section, text,
    without_patience_env,
};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One of the clients, ready to run.
struct Client {
    name: &'static str,
    /// The program and the arguments before the client's own.
    argv: Vec<OsString>,
    env: Vec<(&'static str, OsString)>,
}

impl Client {
    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.argv[0]);
        without_patience_env(&mut cmd)
            // As CI runs them (`env -i`): a developer's PYTHONUNBUFFERED would hide how Python
            // buffers a pipe.
            .env_remove("PYTHONUNBUFFERED")
            .args(&self.argv[1..])
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(root());
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command()
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run the client")
            .into()
    }
}

/// The Python client: the wheel's `patience-py`, with the `remote` extra's grpcio lent by the
/// tools venv (see common::wheel).
fn python() -> Option<&'static Client> {
    static CLIENT: OnceLock<Option<Client>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            let installed = installed()?;
            let mut env = installed.tools();
            env.push(("PYTHONDONTWRITEBYTECODE", "1".into()));
            Some(Client {
                name: "python",
                argv: vec![installed.python.with_file_name("patience-py").into()],
                env,
            })
        })
        .as_ref()
}

/// The python of the venv the wheel is installed in.
fn python_program() -> Option<PathBuf> {
    installed().map(|installed| installed.python.clone())
}

/// `node`, from `PATIENCE_NODE` (which must then work, with `clients/node/node_modules`) or the
/// `PATH`; `None` (and a note) without it or without the modules.
fn node_program() -> Option<PathBuf> {
    let given = std::env::var_os("PATIENCE_NODE");
    let node = given
        .clone()
        .map_or_else(|| PathBuf::from("node"), PathBuf::from);
    let modules = root().join("clients/node/node_modules/@grpc/grpc-js/package.json");
    let ready = succeeds(&node, &["--version"]) && modules.is_file();
    assert!(
        ready || given.is_none(),
        "PATIENCE_NODE={} does not run, or clients/node/node_modules is missing (npm ci --prefix \
         clients/node)",
        node.display()
    );
    if !ready {
        eprintln!(
            "skipped the Node client: it needs node on the PATH (or PATIENCE_NODE) and `npm ci \
             --prefix clients/node`, which .ci/run does"
        );
    }
    ready.then_some(node)
}

fn node() -> Option<&'static Client> {
    static CLIENT: OnceLock<Option<Client>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            Some(Client {
                name: "node",
                argv: vec![
                    node_program()?.into(),
                    root().join("clients/node/patience.js").into(),
                ],
                env: Vec::new(),
            })
        })
        .as_ref()
}

/// The clients that can run here.
fn clients() -> Vec<&'static Client> {
    [python(), node()].into_iter().flatten().collect()
}

/// `patience solve FILE`, as the reference the clients are held to.
fn solved(file: &str) -> Output {
    common::run(&["solve", file])
}

/// Both clients, gzip on (their default), on the 1,000 random deals: byte for byte the judge's
/// answers; and on the wire every request they sent was compressed, and so was every answer the
/// daemon sent back (each over --compress-min-bytes). With `--no-gzip` their requests go plain,
/// which shows the relay tells the two apart, while the answers stay compressed: the clients
/// still accept gzip.
#[test]
fn each_client_prints_the_corpus_answers_byte_for_byte_with_gzip_both_ways() {
    let daemon = Daemon::start(&["--workers", "2"]);
    let expected = text("random1000.out6");
    let random = data("random1000.in");
    for client in clients() {
        let sniffer = Sniffer::start(daemon.socket);
        let out = client.run(&["--addr", &sniffer.addr, &random]);
        assert_eq!(out.code(), Some(0), "{}: {out:?}", client.name);
        assert!(
            out.stdout_str() == expected,
            "{}: output differs from random1000.out6",
            client.name
        );
        assert_eq!(out.stderr_str(), "", "{}", client.name);
        let wire = sniffer.counts();
        // 1,000 deals in requests of 256: four of each.
        assert!(
            wire.requests.compressed >= 4 && wire.requests.plain == 0,
            "{}: {wire:?}",
            client.name
        );
        assert!(
            wire.responses.compressed >= 4 && wire.responses.plain == 0,
            "{}: {wire:?}",
            client.name
        );

        let plain = Sniffer::start(daemon.socket);
        let out = client.run(&["--no-gzip", "--addr", &plain.addr, &random]);
        assert!(out.stdout_str() == expected, "{}: {out:?}", client.name);
        let wire = plain.counts();
        assert!(
            wire.requests.plain >= 4 && wire.requests.compressed == 0,
            "{}: {wire:?}",
            client.name
        );
        assert!(wire.responses.compressed >= 4, "{}: {wire:?}", client.name);
    }
}

/// On files of bad deals of every kind (tests/data/README.md), read from a file and from standard
/// input, each client prints what `patience solve` prints, `error:` lines included, and exits 1
/// as it does. In bad-kinds.in, piles of five and three cards make 36 cards, which the daemon
/// would solve: the old Python example printed a probability for that deal.
#[test]
fn each_client_prints_what_solve_prints_for_bad_deals() {
    let daemon = Daemon::start(&["--workers", "2"]);
    // And random1000.in damaged where the reader looks past damage for whole deals: a line
    // missing (deal 101), one written twice (deal 201), a stray line (before deal 301), a line
    // longer than 1 KiB right after a damaged deal (deal 401), and two damaged deals in a row.
    let scratch = Scratch::new("clients-damaged");
    let corpus = text("random1000.in");
    let mut lines: Vec<String> = corpus
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    let long = format!("{}\n", " ".repeat(1100)).replace('\n', "x");
    lines.remove(600 * 9 + 3);
    lines.remove(500 * 9 + 2);
    lines.insert(400 * 9 + 9, long);
    lines.remove(400 * 9 + 4);
    lines.insert(300 * 9, "AS 9S".to_string());
    lines.insert(200 * 9 + 5, lines[200 * 9 + 4].clone());
    lines.remove(100 * 9 + 1);
    let damaged = scratch.write("damaged.in", lines.join("\n") + "\n");
    for name in ["bad-deals.in", "bad-kinds.in", "damaged.in"] {
        let bad = match name {
            "damaged.in" => damaged.clone(),
            _ => data(name),
        };
        let solve = solved(&bad);
        assert_eq!(solve.code(), Some(1), "{solve:?}");
        let solve_stdin = common::patience()
            .args(&["solve", "-"])
            .stdin(std::fs::read(&bad).expect("read the bad deals"))
            .output();
        for client in clients() {
            let out = client.run(&["--addr", &daemon.addr, &bad]);
            assert_eq!(out.code(), Some(1), "{} {name}: {out:?}", client.name);
            assert_eq!(
                out.stdout_str(),
                solve.stdout_str(),
                "{} {name}",
                client.name
            );
            assert_eq!(out.stderr_str(), "", "{} {name}", client.name);

            let from_stdin = client
                .command()
                .args(["--addr", &daemon.addr])
                .stdin(std::fs::File::open(&bad).expect("open the bad deals"))
                .output()
                .expect("run the client");
            assert_eq!(
                from_stdin.status.code(),
                Some(1),
                "{} {name}: {from_stdin:?}",
                client.name
            );
            assert_eq!(
                String::from_utf8_lossy(&from_stdin.stdout),
                solve_stdin.stdout_str(),
                "{} {name}",
                client.name
            );
        }
    }
    // Worked by hand: the 5+3 deal is deal 2 of bad-kinds.in, its pile 1 on line 10.
    let kinds = data("bad-kinds.in");
    assert!(
        solved(&kinds).stdout_str().contains(&format!(
            "error: {kinds}: deal 2 (line 10): pile 1 has 5 cards; a pile has 4\n"
        )),
        "{kinds}"
    );
}

/// tests/data/ties.in holds deals whose probability is a 6-decimal tie, nine of them exactly (odd
/// multiples of 1/128): each client prints them as `solve` does, rounded half to even, where
/// JavaScript's `toFixed` rounds up. Worked by hand: 1/128 = 0.0078125 prints 0.007812, and
/// 3/128 = 0.0234375 prints 0.023438.
#[test]
fn each_client_prints_ties_as_solve_does() {
    let daemon = Daemon::start(&["--workers", "2"]);
    let ties = data("ties.in");
    let solve = solved(&ties);
    assert!(solve.stdout_str().contains("0.007812\n") && solve.stdout_str().contains("0.023438\n"));
    for client in clients() {
        let out = client.run(&["--addr", &daemon.addr, &ties]);
        assert_eq!(out.code(), Some(0), "{}: {out:?}", client.name);
        assert_eq!(out.stdout_str(), solve.stdout_str(), "{}", client.name);
    }
}

/// The Node client's rounding, unit-tested on ties, near-ties, edges and against an oracle that
/// rounds in decimal digits (`clients/node/test/fixed.test.js`, Node's own test runner).
#[test]
fn the_node_rounding_is_half_to_even_on_the_exact_value() {
    let Some(node) = node_program() else { return };
    let out: Output = Command::new(node)
        .args(["--test", "clients/node/test/"])
        .current_dir(root())
        .output()
        .expect("run node --test")
        .into();
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert!(
        out.stdout_str().contains("# fail 0") && out.stdout_str().contains("# pass 6"),
        "{}",
        out.stdout_str()
    );
}

/// What a failed run says: exit status 2 and one line on standard error naming the status code,
/// the reason of its details and the message; never a traceback or a stack. Exit 1 stays for bad
/// deals. Here: no daemon at the address, a wrong token (over TLS, where the right token and the
/// CA get the answer), a deadline, and a file that does not exist.
#[test]
fn each_client_exits_2_with_one_line_when_the_run_fails() {
    let scratch = Scratch::new("clients-fail");
    let ca = Authority::new();
    let (cert, key) = ca.issue(&["localhost", "127.0.0.1"]);
    let ca_pem = scratch.write("ca.pem", ca.pem());
    let cert = scratch.write("server.pem", cert);
    let key = scratch.write("server.key", key);
    let token = scratch.write("token", "s3cret\n");
    let wrong = scratch.write("wrong", "guess\n");
    let daemon = Daemon::start(&[
        "--workers",
        "1",
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "--auth-token-file",
        &token,
    ]);
    let https = daemon.addr.replace("http://", "https://");
    let sample = data("sample.in");
    let one_line = |client: &Client, out: &Output, needle: &str| {
        let stderr = out.stderr_str();
        assert_eq!(out.code(), Some(2), "{}: {out:?}", client.name);
        assert_eq!(stderr.lines().count(), 1, "{}: {stderr}", client.name);
        assert!(stderr.contains(needle), "{}: {stderr}", client.name);
        assert!(
            !stderr.contains("Traceback") && !stderr.contains("    at "),
            "{}: {stderr}",
            client.name
        );
    };
    for client in clients() {
        let ok = client.run(&[
            "--addr",
            &https,
            "--tls-ca",
            &ca_pem,
            "--auth-token-file",
            &token,
            &sample,
        ]);
        assert_eq!(ok.code(), Some(0), "{}: {ok:?}", client.name);
        assert_eq!(ok.stdout_str(), "0.589314\n", "{}", client.name);

        let refused = client.run(&[
            "--addr",
            &https,
            "--tls-ca",
            &ca_pem,
            "--auth-token-file",
            &wrong,
            &sample,
        ]);
        one_line(client, &refused, "UNAUTHENTICATED (UNAUTHENTICATED): ");
        assert_eq!(refused.stdout_str(), "", "{}", client.name);

        let dead = client.run(&["--addr", DEAD, &sample]);
        one_line(client, &dead, "UNAVAILABLE");

        // A deadline for the whole run, here one that has passed as the run starts; with the
        // right token, so the deadline is the only thing wrong.
        let late = client.run(&[
            "--addr",
            &https,
            "--tls-ca",
            &ca_pem,
            "--auth-token-file",
            &token,
            "--deadline",
            "0",
            &sample,
        ]);
        one_line(client, &late, "DEADLINE_EXCEEDED");

        let missing = scratch.join("missing.in").display().to_string();
        let gone = client.run(&[
            "--addr",
            &https,
            "--tls-ca",
            &ca_pem,
            "--auth-token-file",
            &token,
            &sample,
            &missing,
        ]);
        one_line(client, &gone, "cannot open");
        // What came before the file that cannot be read is printed, as `solve` prints it.
        assert_eq!(gone.stdout_str(), "0.589314\n", "{}", client.name);
    }
}

/// A daemon cut short by its drain (`--drain-cut-after`, SIGTERM while the client is still
/// sending) ends the call with UNAVAILABLE, DRAIN_CUT and the index to resume from; each client
/// goes on at the next address, resending the deals that got no answer, and prints every deal
/// once, in order. The client reads standard input, which the test holds open until the cut, so
/// that the client is still sending when it comes, whatever the timing: the corpus, the cut, the
/// corpus again; the output is the corpus' answers twice, byte for byte.
#[test]
fn each_client_resumes_at_the_next_daemon_after_a_drain_cut() {
    let corpus = std::fs::read(data("random1000.in")).expect("read random1000.in");
    let expected = text("random1000.out6").repeat(2);
    for client in clients() {
        let cut = Daemon::start(&[
            "--workers",
            "1",
            "--drain-cut-after",
            "100ms",
            "--drain-timeout",
            "30s",
        ]);
        let next = Daemon::start(&["--workers", "2"]);
        let addrs = format!("{},{}", cut.addr, next.addr);
        let mut typed = Typed::start(client.command().args(["--addr", &addrs]));
        typed.type_in(&corpus);
        // Answers are coming from the first daemon (each client prints the answers to standard
        // input line by line; Python would otherwise hold 8 KiB, more than 768 answers).
        let mut output = typed.next_line(common::HANG_LIMIT);
        cut.signal("TERM");
        let failover = typed.error_line("going on at");
        assert!(
            failover.contains("UNAVAILABLE (DRAIN_CUT)")
                && failover.ends_with(&format!("going on at {}", next.addr)),
            "{}: {failover}",
            client.name
        );
        typed.type_in(&corpus);
        typed.close_input();
        let (rest, code, stderr) = typed.finish(client.name);
        output.push_str(&rest);
        assert_eq!(code, Some(0), "{}: {stderr}", client.name);
        assert!(
            output == expected,
            "{}: the output is not the corpus' answers twice\n{stderr}",
            client.name
        );
        assert!(
            cut.logged("cut short by shutdown", common::LOG_LIMIT)
                .contains("cut short"),
            "{}",
            client.name
        );
    }
}

/// The fenced block of `lang` in `doc`'s section `heading`, and the ```text block after it: a
/// library example and what it prints.
fn example(doc: &str, heading: &str, lang: &str) -> (String, String) {
    let section = doc_section(doc, heading);
    let mut blocks = section.split("```").skip(1).step_by(2).map(|b| {
        let (tag, body) = b.split_once('\n').unwrap_or((b, ""));
        (tag.to_string(), body.to_string())
    });
    let code = blocks
        .by_ref()
        .find(|(tag, _)| tag == lang)
        .unwrap_or_else(|| panic!("{doc}, {heading}: no ```{lang} block"))
        .1;
    let shown = blocks
        .next()
        .filter(|(tag, _)| tag == "text")
        .unwrap_or_else(|| panic!("{doc}, {heading}: no ```text block after the ```{lang} one"))
        .1;
    (code, shown)
}

/// Runs `program -` from the repository's root with `code` on standard input (so that the
/// example's relative paths and `require`s resolve from the root, as the page says to run them).
fn run_stdin(program: &Path, env: &[(&str, OsString)], code: &str) -> Output {
    let mut child = Command::new(program)
        .arg("-")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the example");
    let mut stdin = child.stdin.take().expect("a piped stdin");
    std::io::Write::write_all(&mut stdin, code.as_bytes()).expect("write the example");
    drop(stdin);
    child.wait_with_output().expect("run the example").into()
}

/// docs/clients.md's library examples (`solve_file`, `solveFile`), run from the repository's
/// root against a daemon, print what the page shows.
#[test]
fn the_library_examples_of_the_clients_page_print_what_it_shows() {
    let daemon = Daemon::start(&["--workers", "1"]);
    let addr = daemon.addr.trim_start_matches("http://");
    if let Some(client) = python() {
        let (code, shown) = example("docs/clients.md", "### Python", "python");
        let python = python_program().expect("the venv the wheel is installed in");
        let out = run_stdin(&python, &client.env, &code.replace("127.0.0.1:50051", addr));
        assert_eq!(out.stdout_str(), shown, "docs/clients.md, Python: {out:?}");
    }
    if let Some(node) = node_program() {
        let (code, shown) = example("docs/clients.md", "### Node", "js");
        let out = run_stdin(&node, &[], &code.replace("127.0.0.1:50051", addr));
        assert_eq!(out.stdout_str(), shown, "docs/clients.md, Node: {out:?}");
    }
}

/// The Python client's `jobs` module (grpcio) submits a job to a daemon, watches it to its end
/// and reads a refusal's reason: the output is what `patience solve` prints; a job asked for as
/// Parquet writes rows that pyarrow reads as the reference answers them.
#[test]
fn the_python_client_submits_and_watches_a_daemon_job() {
    let Some(client) = python() else { return };
    let Some(python) = python_program() else {
        return;
    };
    let dir = Scratch::new("clients-jobs");
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::copy(data("random1000.in"), dir.join("in/a.in")).unwrap();
    let folder = dir.path().display().to_string();
    let daemon = Daemon::start(&["--workers", "2", "--jobs-dir", &folder]);
    let script = r#"
import sys
from patience.remote import jobs
from patience.remote.client import RpcFailure
addr = sys.argv[1]
job = jobs.submit(addr, ["in/a.in"], "out/a.txt", job_id="py1")
print("created", job.job_id, jobs.STATES[job.state])
states = [jobs.STATES[j.state] for j in jobs.watch(addr, "py1")]
last = jobs.get(addr, "py1")
print("watched", states[-1], last.items_done, last.items_bad)
try:
    jobs.submit(addr, ["../a.in"], "x")
except RpcFailure as refused:
    print("refused", refused.code.name, refused.reason)
jobs.submit(addr, ["in/a.in"], "out/a.parquet", job_id="py2", format="parquet")
last = [j for j in jobs.watch(addr, "py2")][-1]
print("parquet", jobs.STATES[last.state], last.items_done)
try:
    import pyarrow.parquet
except ImportError:
    print("rows unread: no pyarrow")
else:
    table = pyarrow.parquet.read_table(sys.argv[2])
    print("rows", table.num_rows, ",".join(f"{p:.6f}" for p in table.column("probability").to_pylist()[:3]))
"#;
    let mut cmd = Command::new(python);
    without_patience_env(&mut cmd);
    for (key, value) in &client.env {
        cmd.env(key, value);
    }
    let parquet = dir.join("out/a.parquet").display().to_string();
    let out = cmd
        .args(["-c", script, &daemon.addr, &parquet])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The Parquet output's first rows, as the reference answers them.
    let reference = text("random1000.out6");
    let first: Vec<&str> = reference.lines().take(3).collect();
    let rows = format!("rows 1000 {}", first.join(","));
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(
        lines[..4],
        [
            "created py1 queued",
            "watched succeeded 1000 0",
            "refused INVALID_ARGUMENT JOB_INVALID",
            "parquet succeeded 1000",
        ],
        "{said}"
    );
    // pyarrow is in CI's venv (tests/columnar.rs needs it); elsewhere the rows may go unread.
    assert!(
        lines[4] == rows
            || (lines[4] == "rows unread: no pyarrow" && std::env::var_os("CI").is_none()),
        "{said}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("out/a.txt")).unwrap(),
        text("random1000.out6")
    );
}
