//! `patience client` through a real nginx and a real HAProxy in front of three `patience serve`
//! processes: the configurations shipped in `deploy/proxies/` (their placeholders filled, see
//! `common/proxy.rs`), and each proxy at its defaults. The output is compared byte for byte with
//! `patience solve` of the same file; the share of the deals each daemon answered comes from its
//! metrics.
//!
//! Without nginx or HAProxy a test says so and is skipped, unless `PATIENCE_REQUIRE_PROXIES` is
//! set (`.ci/run` sets it, after installing Debian's `nginx-light` and `haproxy`), when their
//! absence fails it.

use crate::common;

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{
    Daemon, HANG_LIMIT, Proxy, ProxyKind, Scratch, deals_answered, exe, wait_or_hang,
    without_patience_env,
};

/// Copies of random1000.in in a test's input: 60,000 deals, 6.5 MB, a few seconds through a proxy
/// (most of it solving, on this 2-core machine's one worker per daemon).
const COPIES: usize = 60;
/// Copies for the proxies at their defaults: 20,000 deals, still twice nginx's default body limit
/// on one stream, in a third of the time.
const FEWER: usize = COPIES / 3;
/// The least share of the deals each of the three daemons must answer when the proxy balances.
const MIN_SHARE: f64 = 0.15;
/// A daemon is killed once it has answered this many deals, well before the end of the file.
const KILL_AFTER: u64 = 5_000;

/// What `patience solve` prints for `copies` copies of random1000.in (the input of
/// [`Scratch::repeated_corpus`]), [`COPIES`] or [`FEWER`]: solved once per test binary, for
/// every test of this file that needs it.
fn solved(copies: usize) -> &'static [u8] {
    static ALL: OnceLock<Vec<u8>> = OnceLock::new();
    static FEW: OnceLock<Vec<u8>> = OnceLock::new();
    let cell = match copies {
        COPIES => &ALL,
        FEWER => &FEW,
        _ => panic!("solved only for {COPIES} or {FEWER} copies"),
    };
    cell.get_or_init(|| {
        let scratch = Scratch::new("proxies-solve");
        let (_, solve) = scratch.corpus_solved(copies);
        assert_eq!(solve.code(), Some(0), "{solve:?}");
        solve.stdout
    })
}

/// Three daemons of one worker each, with metrics on a free port.
fn three_daemons() -> Vec<Daemon> {
    (0..3)
        .map(|_| Daemon::start(&["--workers", "1", "--metrics-addr", "127.0.0.1:0"]))
        .collect()
}

/// Three daemons and a proxy of `kind` from `template` in front of them, or `None` (the test is
/// skipped) without its binary.
fn proxied(kind: ProxyKind, template: &str) -> Option<(Vec<Daemon>, Proxy)> {
    let program = Proxy::binary_or_skip(kind)?;
    let daemons = three_daemons();
    let upstreams: Vec<SocketAddr> = daemons.iter().map(|d| d.socket).collect();
    let proxy = Proxy::start(kind, &program, template, &upstreams);
    Some((daemons, proxy))
}

/// `patience client --addr PROXY INPUT`, its output and errors into files of `scratch`. Its
/// keepalive timeout is gRPC's default (20 s) rather than the client's quick 4 s: what these
/// tests judge is the proxy's configuration, and on a loaded machine (a fresh-clone CI run,
/// every test at once) a connection through the proxy has gone 7 s without an answered ping,
/// which the client rightly gives up with a warning, though nothing was cut.
fn client(scratch: &Scratch, proxy: &Proxy, input: &str) -> Child {
    let out = std::fs::File::create(scratch.join("out")).expect("the output file");
    let err = std::fs::File::create(scratch.join("err")).expect("the errors file");
    let mut cmd = Command::new(exe());
    without_patience_env(&mut cmd)
        .args([
            "client",
            "--addr",
            &proxy.addr,
            "--keepalive-timeout",
            "20s",
            input,
        ])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    cmd.spawn().expect("start patience client")
}

/// Waits for the client (the limit only catches a hang) and asserts it exited 0 with exactly
/// `expected` on its standard output; returns its standard error.
fn assert_identical(scratch: &Scratch, mut child: Child, proxy: &Proxy, expected: &[u8]) -> String {
    let status = wait_or_hang(
        &mut child,
        4 * HANG_LIMIT,
        "patience client through the proxy",
    );
    let out = std::fs::read(scratch.join("out")).expect("the output");
    let err = std::fs::read_to_string(scratch.join("err")).expect("the errors");
    assert_eq!(
        status.code(),
        Some(0),
        "{err}\n{} log:\n{}",
        proxy.kind.program(),
        proxy.log()
    );
    assert!(
        out == expected,
        "the output differs from solve's ({} lines against {}); stderr: {err}\n{} log:\n{}",
        out.iter().filter(|&&b| b == b'\n').count(),
        expected.iter().filter(|&&b| b == b'\n').count(),
        proxy.kind.program(),
        proxy.log()
    );
    err
}

/// What a run through a proxy left: the deals each daemon answered, and the client's standard
/// error.
struct Through {
    answered: Vec<u64>,
    stderr: String,
}

/// The whole file through `template`: the client's output is `solve`'s, byte for byte, and it
/// exits 0. `None` when the test is skipped.
fn identical_through(kind: ProxyKind, template: &str, copies: usize) -> Option<Through> {
    let (daemons, proxy) = proxied(kind, template)?;
    let expected = solved(copies);
    let scratch = Scratch::new("proxies");
    let input = scratch.repeated_corpus(copies);
    let started = Instant::now();
    let child = client(&scratch, &proxy, &input);
    let stderr = assert_identical(&scratch, child, &proxy, expected);
    eprintln!(
        "{} deals through {}: {:.1} s",
        copies * 1000,
        kind.program(),
        started.elapsed().as_secs_f64()
    );
    let answered = daemons
        .iter()
        .map(|d| deals_answered(&d.metrics_addr()))
        .collect();
    Some(Through { answered, stderr })
}

/// The configuration in `template` passes a whole file of `copies` thousand deals and its answers
/// unchanged, cuts no stream (the client has nothing to warn about: a body limit, for one, would
/// cut a stream, each cut a warning and a resend), and spreads the deals over the daemons.
fn answers_as_solve_does(kind: ProxyKind, template: &str, copies: usize) {
    if let Some(run) = identical_through(kind, template, copies) {
        assert!(
            !run.stderr.contains("warning"),
            "through {}, a stream was cut: {}",
            kind.program(),
            run.stderr
        );
        assert_spread(kind, &run.answered, copies);
    }
}

/// Each daemon answered at least [`MIN_SHARE`] of the file's deals.
fn assert_spread(kind: ProxyKind, answered: &[u64], copies: usize) {
    let total = (copies * 1000) as f64;
    for (n, &deals) in answered.iter().enumerate() {
        assert!(
            deals as f64 >= MIN_SHARE * total,
            "through {}, daemon {} answered {deals} of {total} deals (each daemon's: {answered:?})",
            kind.program(),
            n + 1
        );
    }
}

/// One daemon killed (SIGKILL) mid-run, the one that has answered most so far (so its streams are
/// busy): the client resends what it lost through the proxy, which sends it to the others; the
/// output is still `solve`'s, byte for byte, and the exit status 0.
fn a_daemon_killed_through(kind: ProxyKind) {
    let Some((mut daemons, proxy)) = proxied(kind, &kind.shipped()) else {
        return;
    };
    let expected = solved(COPIES);
    let metrics: Vec<String> = daemons.iter().map(Daemon::metrics_addr).collect();
    let scratch = Scratch::new("proxies-kill");
    let input = scratch.repeated_corpus(COPIES);
    let mut child = client(&scratch, &proxy, &input);
    // Waits (it asserts nothing about time) until a daemon has answered KILL_AFTER deals.
    let answered = || -> Vec<u64> { metrics.iter().map(|m| deals_answered(m)).collect() };
    let victim = common::poll_blocking(Duration::from_secs(60), || {
        let (most, &deals) = answered()
            .iter()
            .enumerate()
            .max_by_key(|&(_, deals)| *deals)
            .expect("three daemons");
        (deals >= KILL_AFTER).then_some(most)
    })
    .unwrap_or_else(|| panic!("no daemon answered {KILL_AFTER} deals: {:?}", answered()));
    daemons[victim].kill();
    assert!(
        child.try_wait().expect("poll the client").is_none(),
        "the client finished before the kill: the input is too small to test anything"
    );
    let err = assert_identical(&scratch, child, &proxy, expected);
    eprintln!(
        "through {}, daemon {} killed; the client's stderr:\n{err}",
        kind.program(),
        victim + 1
    );
}

#[test]
fn nginx_as_shipped_answers_as_solve_does() {
    answers_as_solve_does(ProxyKind::Nginx, &ProxyKind::Nginx.shipped(), COPIES);
}

#[test]
fn haproxy_as_shipped_answers_as_solve_does() {
    answers_as_solve_does(ProxyKind::Haproxy, &ProxyKind::Haproxy.shipped(), COPIES);
}

#[test]
fn nginx_as_shipped_survives_a_daemon_killed_midway() {
    a_daemon_killed_through(ProxyKind::Nginx);
}

#[test]
fn haproxy_as_shipped_survives_a_daemon_killed_midway() {
    a_daemon_killed_through(ProxyKind::Haproxy);
}

/// nginx at its defaults, whose 1 MiB body limit counts a whole stream: the client's calls stay
/// under it (`--stream-max-bytes`), so nothing is cut, and they are spread.
#[test]
fn nginx_at_its_defaults_answers_as_solve_does() {
    answers_as_solve_does(ProxyKind::Nginx, &ProxyKind::Nginx.defaults(), FEWER);
}

/// HAProxy with only `proto h2` and the basic timeouts: the same.
#[test]
fn haproxy_with_basic_timeouts_answers_as_solve_does() {
    answers_as_solve_does(ProxyKind::Haproxy, &ProxyKind::Haproxy.defaults(), FEWER);
}
