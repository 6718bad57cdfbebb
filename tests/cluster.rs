//! `patience client` spread over several `patience serve` processes: real binaries, a real SIGKILL,
//! output compared byte for byte with `patience solve`. Also the daemon's start-up log of its
//! configuration.

use crate::common;

use std::time::{Duration, Instant};

use common::{
    ALSO_DEAD, DEAD, Daemon, DelayProxy, HANG_LIMIT, LOG_LIMIT, Scratch, corpus, data,
    deals_answered, log_field, patience, run, stand_in, stand_in_failing_on, wait_or_hang,
};

/// The client's note that a failed daemon is back. Tests that stop a daemon for good allow it:
/// the client keeps trying the stopped daemon's port, which the system may meanwhile have handed
/// to a daemon of a test running in parallel (a daemon that answers as well as any).
fn is_back_note(line: &str) -> bool {
    line.starts_with("patience: note: ") && line.ends_with(" is back")
}

/// Whatever the timing, the client cannot have finished when the kill comes: the test stops
/// reading its output first, and the client cannot write its last lines into a full pipe. So the
/// output must be much larger than what the pipe and the buffers on both sides hold (64 KiB and a
/// few 8 KiB on Linux).
const UNREAD_BOUND: usize = 128 << 10;

/// The victim is stopped (SIGSTOP) before the client starts and is its first address, so the
/// client's first chunk goes to it (every daemon has room, and ties go to the first) and stays
/// unanswered. Once another daemon has answered anything, a later chunk went out, so the first was
/// placed: the kill then certainly takes unanswered work with it, which must be resent.
/// Where a relay points while its daemon is down: a privileged port no test's daemon can bind
/// (the dead daemon's port, free again, could be taken by a parallel test's daemon).
const NOWHERE: &str = "127.0.0.1:1";

#[test]
fn a_daemon_killed_midway_costs_nothing_but_a_warning() {
    let scratch = Scratch::new("kill");
    // 30,000 deals.
    let (input, solve) = scratch.corpus_solved(30);
    let input = input.as_str();
    assert_eq!(solve.status.code(), Some(0));

    let mut victim = Daemon::start(&["--workers", "1"]);
    let others: Vec<Daemon> = (0..2)
        .map(|_| Daemon::start(&["--workers", "1", "--metrics-addr", "127.0.0.1:0"]))
        .collect();
    let metrics: Vec<String> = others.iter().map(Daemon::metrics_addr).collect();
    victim.signal("STOP");
    let client = patience()
        .args(&[
            "client",
            // A loaded machine can hold a ping's answer past the client's quick 4 s: that
            // would be one more line than the test counts.
            "--keepalive-timeout",
            "20s",
            "--addr",
            &victim.addr,
            "--addr",
            &others[0].addr,
            "--addr",
            &others[1].addr,
            "--batch",
            "32",
            // The stopped victim's chunk must be resent for its kill, not hedged first (a note)
            // when the kill comes late on a loaded machine.
            "--hedge-floor",
            "60m",
            input,
        ])
        .running();
    // Waits (it asserts nothing about time) until another daemon has answered a deal.
    common::wait_until_blocking(Duration::from_secs(60), "a daemon answers a deal", || {
        metrics.iter().map(|m| deals_answered(m)).sum::<u64>() > 0
    });
    victim.kill();

    let (out, code, stderr) = client.finish(String::new());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        out.as_bytes() == solve.stdout.as_slice(),
        "the output differs from solve's ({} lines against {}); stderr: {stderr}",
        out.lines().count(),
        String::from_utf8_lossy(&solve.stdout).lines().count()
    );
    let warnings: Vec<&str> = stderr.lines().filter(|l| !is_back_note(l)).collect();
    assert_eq!(
        warnings.len(),
        1,
        "one warning, about the killed daemon: {stderr}"
    );
    let warning = warnings[0];
    assert!(warning.contains(&victim.addr), "{stderr}");
    assert!(warning.contains("warning"), "{stderr}");
    let resent = if warning.contains("its unanswered request goes") {
        1
    } else {
        warning
            .split("its ")
            .nth(1)
            .and_then(|rest| rest.split(" unanswered requests go").next())
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(0)
    };
    assert!(resent >= 1, "the victim's requests were resent: {stderr}");
}

#[test]
fn every_daemon_killed_midway_exits_2_after_an_in_order_prefix() {
    let scratch = Scratch::new("all-killed");
    let (input, solve) = scratch.corpus_solved(30);
    let input = input.as_str();
    let mut daemon = Daemon::start(&["--workers", "1"]);
    // Without a daemon to come back, the client waits this long before it gives up.
    let mut client = patience()
        .args(&[
            "client",
            "--addr",
            &daemon.addr,
            "--give-up-after",
            "1s",
            // A daemon slowed by a loaded machine is not hedged (its note would speak of other
            // daemons): only the kill is under test.
            "--hedge-floor",
            "60s",
            // Unread output holds the client back only this far (2,048 deals), so the daemon
            // cannot answer the whole input before the kill however slowly the test runs.
            "--reorder-buffer-bytes",
            "1048576",
            input,
        ])
        .running();
    let head = client.lines(2_000);
    assert!(client.child.try_wait().unwrap().is_none());
    daemon.kill();
    let (out, code, stderr) = client.finish(head);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(out.lines().count() >= 2_000);
    assert!(out.len() < solve.stdout.len());
    assert!(solve.stdout.starts_with(out.as_bytes()));
    assert!(stderr.contains(&daemon.addr), "{stderr}");
    assert!(stderr.contains("every daemon failed"), "{stderr}");
    // One daemon: there are no others for its requests to go to.
    assert!(!stderr.contains("other daemons"), "{stderr}");
}

/// Good deals, bad deals and a missing file: the client must report the bad ones in place however
/// the good ones are spread.
fn mixed_inputs(scratch: &Scratch) -> Vec<String> {
    let good = std::fs::read_to_string(data("random1000.in")).unwrap();
    let bad = good.replacen("AS", "QX", 3);
    vec![
        data("random1000.in"),
        scratch.write("bad.in", bad),
        scratch.join("missing.in").display().to_string(),
        data("extra12.in"),
    ]
}

#[test]
fn an_unreachable_daemon_among_good_ones_changes_nothing_but_a_warning() {
    let scratch = Scratch::new("unreachable");
    let files = mixed_inputs(&scratch);
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    let solve = run(&[&["solve"], &files[..]].concat());
    assert_eq!(solve.status.code(), Some(2), "a missing file is trouble");

    let a = Daemon::start(&["--workers", "1"]);
    let b = Daemon::start(&["--workers", "1"]);
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
        "--give-up-after",
        "1s",
        &input,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(stderr.contains("every daemon failed"), "{stderr}");
    assert!(stderr.contains(one) && stderr.contains(two), "{stderr}");
    assert!(stderr.contains("cannot connect"), "{stderr}");
    assert!(stderr.contains("is `patience serve` running"), "{stderr}");
}

#[test]
fn quiet_is_accepted_and_the_client_prints_nothing_on_stderr() {
    let daemon = Daemon::start(&["--workers", "1"]);
    let input = data("sample.in");
    for flag in ["--quiet", "-q"] {
        let out = run(&["client", flag, "--addr", &daemon.addr, &input]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "0.589314\n");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    }
}

#[test]
fn the_daemon_logs_its_whole_configuration_from_flags_environment_and_defaults() {
    let scratch = Scratch::new("config");
    let token = scratch.write("token", "a-secret-that-must-not-be-logged\n");
    let daemon = Daemon::start_with(
        &["--keepalive-timeout", "7s"],
        &[
            ("PATIENCE_WORKERS", "1"),
            ("PATIENCE_MAX_IN_FLIGHT", "123"),
            ("PATIENCE_KEEPALIVE_INTERVAL", "5s"),
            ("PATIENCE_AUTH_TOKEN_FILE", &token),
        ],
        None,
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
    let a = Daemon::start(&["--workers", "1"]);
    let b = Daemon::start(&["--workers", "1"]);
    let mut client = patience()
        .args(&["client", "--addr", &a.addr, "--addr", &b.addr, &input])
        .running();
    let expected = std::fs::read_to_string(data("random1000.out6")).unwrap();
    let first = expected.lines().next().unwrap();
    assert_eq!(client.lines(1), format!("{first}\n"));
    let (status, stderr) = client.close_output(Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(stderr, "");
}

#[test]
fn typed_deals_are_answered_before_the_input_ends() {
    let daemon = Daemon::start(&["--workers", "1"]);
    let mut client = patience().args(&["client", "--addr", &daemon.addr]).typed();
    let sample = std::fs::read(data("sample.in")).unwrap();
    // Standard input stays open: the answer must come anyway. The limit only guards against a
    // hang; it says nothing about speed.
    let limit = Duration::from_secs(60);
    for _ in 0..2 {
        client.type_in(&sample);
        let line = client.next_line(limit);
        assert_eq!(line, "0.589314\n");
    }
    client.close_input();
    let (_, code, _) = client.finish("typed deals, then the end of the input");
    assert_eq!(code, Some(0));
}

/// The analysis flags go through the API: the client's JSON lines, over two daemons, are the bytes
/// `solve` prints for the same files, bad deals, positions and all.
#[test]
fn json_with_every_analysis_option_matches_solve_over_two_daemons() {
    let scratch = Scratch::new("json");
    let mut files = mixed_inputs(&scratch);
    files.push(scratch.write(
        "positions.in",
        "7S 6S / 6C 6H / 7C 6D / / / / / /\n6S 6C 6D 6H 7S / / / / / / / /\n/ / / / / / / /\n",
    ));
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    let flags = ["--format", "json", "--exact", "--moves", "--line"];
    let solve = run(&[&["solve"], &flags[..], &files[..]].concat());
    assert_eq!(solve.status.code(), Some(2), "a missing file is trouble");
    let printed = String::from_utf8_lossy(&solve.stdout);
    assert!(printed.contains(r#""exact":"2/3""#), "{printed}");

    let a = Daemon::start(&["--workers", "1"]);
    let b = Daemon::start(&["--workers", "1"]);
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
    let mut client = patience()
        .args(&["client", "--addr", DEAD, "--give-up-after", "1s"])
        .typed();
    // A valid deal, so there is something the daemons were needed for.
    client.type_in(&std::fs::read(data("sample.in")).unwrap());
    let (out, code, stderr) = client.finish("every daemon down, input open");
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(out, "");
    assert!(stderr.contains("every daemon failed"), "{stderr}");
    assert!(stderr.contains(DEAD), "{stderr}");
}

/// `solve` over the same bytes on standard input: the reference for a typed input.
fn solve_stdin(bytes: &[u8]) -> common::Output {
    patience().arg("solve").stdin(bytes).output()
}

/// With no daemon up, a run that needs none (only bad deals, or no deal at all) ends as `solve`
/// does, and says nothing about the daemon: it was never needed, so it was never dialled.
#[test]
fn a_run_that_needs_no_daemon_ends_as_solve_does_with_every_daemon_down() {
    let good = std::fs::read_to_string(data("random1000.in")).unwrap();
    // Every deal holds the ace of spades once: each one becomes bad.
    let bad = good.replace("AS", "QX");
    for (what, input) in [("only bad deals", bad.as_str()), ("no deal", "")] {
        let solve = solve_stdin(input.as_bytes());
        let mut client = patience().args(&["client", "--addr", DEAD]).typed();
        client.type_in(input.as_bytes());
        client.close_input();
        let (out, code, stderr) = client.finish(what);
        assert_eq!(code, solve.status.code(), "{what}: {stderr}");
        assert_eq!(out.as_bytes(), solve.stdout.as_slice(), "{what}: {stderr}");
        // No deal went to a daemon, so none was needed, and nothing is said about one.
        assert_eq!(stderr, "", "{what}");
    }
    assert_eq!(solve_stdin(bad.as_bytes()).status.code(), Some(1));

    // The same from a file, where the input may end before the daemon is found dead.
    let scratch = Scratch::new("no-daemon-needed");
    let path = scratch.write("bad.in", &bad);
    let solve = run(&["solve", &path]);
    let client = run(&["client", "--addr", DEAD, &path]);
    let stderr = String::from_utf8_lossy(&client.stderr);
    assert_eq!(client.status.code(), Some(1), "{stderr}");
    assert_eq!(client.stdout, solve.stdout, "{stderr}");
    assert!(!stderr.contains("every daemon failed"), "{stderr}");
    assert!(!stderr.contains(DEAD), "no daemon was needed: {stderr}");
}

/// A refusal of the requests themselves (here: more deals per request than the daemons accept)
/// would be repeated by every daemon: the client stops at once with one error that says what to
/// do, instead of failing each daemon in turn.
#[test]
fn a_refused_batch_size_stops_the_run_with_one_clear_error() {
    let flags = ["--workers", "1", "--max-deals-per-request", "10"];
    let a = Daemon::start(&flags);
    let b = Daemon::start(&flags);
    let input = data("random1000.in");
    let out = run(&[
        "client", "--addr", &a.addr, "--addr", &b.addr, "--batch", "50", &input,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    // Every request is refused, so nothing is answered.
    assert!(out.stdout.is_empty(), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one error: {stderr}");
    assert!(
        stderr.contains(&a.addr) || stderr.contains(&b.addr),
        "{stderr}"
    );
    assert!(stderr.contains("INVALID_ARGUMENT"), "{stderr}");
    assert!(stderr.contains("lower --batch"), "{stderr}");
    assert!(!stderr.contains("every daemon failed"), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
}

/// A daemon told to stop (SIGTERM) drains: it ends the stream it is still serving, after its
/// drain timeout or earlier with the index to resume from. Either way its unanswered chunks go to
/// the other daemon: the output is `solve`'s, with at most one warning.
#[test]
fn a_daemon_drained_midway_changes_nothing_but_a_warning() {
    let scratch = Scratch::new("drain");
    // 100,000 deals: enough that the drain usually ends the stream with work left, which is
    // resent; if the daemon finishes its share within the drain instead, nothing is.
    let (input, solve) = scratch.corpus_solved(100);
    let input = input.as_str();
    assert_eq!(solve.status.code(), Some(0));
    assert!(solve.stdout.len() > 2 * UNREAD_BOUND);

    let flags = ["--workers", "1", "--drain-timeout", "1s"];
    let a = Daemon::start(&flags);
    let b = Daemon::start(&flags);
    let mut client = patience()
        .args(&[
            "client", "--addr", &a.addr, "--addr", &b.addr, "--batch", "32", input,
        ])
        .running();
    let head = client.lines(2_000);
    assert!(
        client.child.try_wait().unwrap().is_none(),
        "the client finished before the drain; make the input larger"
    );
    b.signal("TERM");
    let (out, code, stderr) = client.finish(head);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        out.as_bytes() == solve.stdout.as_slice(),
        "the output differs from solve's ({} lines against {}); stderr: {stderr}",
        out.lines().count(),
        String::from_utf8_lossy(&solve.stdout).lines().count()
    );
    let lines: Vec<&str> = stderr.lines().filter(|l| !is_back_note(l)).collect();
    assert!(lines.len() <= 1, "at most one warning: {stderr}");
    for line in lines {
        assert!(
            line.contains("warning") && line.contains(&b.addr),
            "{stderr}"
        );
        // The client resends by itself: the server's advice to resend from an index is not ours.
        assert!(
            !line.contains("resend") && !line.contains("index"),
            "{stderr}"
        );
    }
}

/// The deals a daemon's `call finished` log line says it answered.
fn deals_in(call_finished: &str) -> u64 {
    assert_eq!(
        log_field(call_finished, "game"),
        Some("\"double_patience\""),
        "{call_finished}"
    );
    log_field(call_finished, "items")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no items= in {call_finished:?}"))
}

/// A daemon killed under the client and restarted on its address is found again: the client notes
/// that it is back and gives it work, which the restarted daemon answers on a stream of its own.
/// The test stops reading the client's output while it kills and restarts the daemon, so however
/// slow the machine, most of the input is still to be sent when the daemon is back. The address
/// is a relay's, held for the whole test, pointed at the restarted daemon's port: a port released
/// and bound again could be taken meanwhile by a parallel test's daemon.
#[test]
fn a_daemon_killed_and_restarted_on_its_address_takes_work_again() {
    let scratch = Scratch::new("restart");
    // 100,000 deals: far more output than the client can write ahead of the test's reading.
    let (input, solve) = scratch.corpus_solved(100);
    let input = input.as_str();
    assert_eq!(solve.status.code(), Some(0));
    assert!(solve.stdout.len() > 4 * UNREAD_BOUND);

    let mut victim = Daemon::start(&["--workers", "1"]);
    let at = DelayProxy::plain(&victim.socket.to_string());
    let other = Daemon::start(&["--workers", "1"]);
    let mut client = patience()
        .args(&[
            "client",
            // A loaded machine can hold a ping's answer past the client's quick 4 s: that
            // would be one more line than the test counts.
            "--keepalive-timeout",
            "20s",
            "--addr",
            &at.url(),
            "--addr",
            &other.addr,
            "--batch",
            "32",
            // Unread output holds the client back only this far (2,048 deals): with the
            // default (64 MiB) the other daemon could answer the whole input while the victim
            // restarts, and the victim would never be seen back.
            "--reorder-buffer-bytes",
            "1048576",
            input,
        ])
        .running();
    let head = client.lines(2_000);
    assert!(
        client.child.try_wait().unwrap().is_none(),
        "the client finished before the kill; make the input larger"
    );
    victim.kill();
    // Its port is free now: until the restart, the relay points where no daemon of a parallel
    // test can be.
    at.retarget(NOWHERE);
    let warning = client.error_line("warning");
    assert!(warning.contains(&at.url()), "{warning}");

    let restarted = Daemon::start(&["--workers", "1"]);
    at.retarget(&restarted.socket.to_string());
    let note = client.error_line("is back");
    assert_eq!(note, format!("patience: note: {} is back", at.url()));

    let (out, code, stderr) = client.finish(head);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        out.as_bytes() == solve.stdout.as_slice(),
        "the output differs from solve's ({} lines against {}); stderr: {stderr}",
        out.lines().count(),
        String::from_utf8_lossy(&solve.stdout).lines().count()
    );
    assert_eq!(
        stderr.lines().count(),
        2,
        "the warning and the note: {stderr}"
    );
    let served = restarted.line_with("call finished", LOG_LIMIT);
    assert!(
        deals_in(&served) > 0,
        "the restarted daemon got no work: {served}"
    );
}

/// Every daemon restarted in turn, as a rolling update does: each is told to stop (SIGTERM), cuts
/// the client's stream one second into its drain, exits, and is started again on its address
/// (a relay's, held for the whole test, pointed at the new daemon) before the next one is stopped. The client goes on over whichever is up and ends as `solve` does, with
/// one warning and one note per daemon, and each restarted daemon answers deals.
#[test]
fn a_rolling_restart_of_every_daemon_changes_nothing_but_warnings_and_notes() {
    let scratch = Scratch::new("rolling");
    let (input, solve) = scratch.corpus_solved(100);
    let input = input.as_str();
    assert_eq!(solve.status.code(), Some(0));
    assert!(solve.stdout.len() > 4 * UNREAD_BOUND);

    let flags = ["--workers", "1", "--drain-timeout", "1s"];
    let mut daemons: Vec<Daemon> = (0..2).map(|_| Daemon::start(&flags)).collect();
    let relays: Vec<DelayProxy> = daemons
        .iter()
        .map(|d| DelayProxy::plain(&d.socket.to_string()))
        .collect();
    let addrs: Vec<String> = relays.iter().map(DelayProxy::url).collect();
    // The smallest read-ahead, so that the client, whose output the test reads only now and
    // then, has most of the input still to send when each daemon is back.
    let mut client = patience()
        .args(&[
            "client",
            // A loaded machine can hold a ping's answer past the client's quick 4 s: that
            // would be one more line than the test counts.
            "--keepalive-timeout",
            "20s",
            "--addr",
            &addrs[0],
            "--addr",
            &addrs[1],
            "--batch",
            "32",
            "--reorder-buffer-bytes",
            "1048576",
            input,
        ])
        .running();
    let mut head = String::new();
    for (i, at) in relays.iter().enumerate() {
        head.push_str(&client.lines(2_000));
        assert!(
            client.child.try_wait().unwrap().is_none(),
            "the client finished before the restart; make the input larger"
        );
        daemons[i].signal("TERM");
        let status = wait_or_hang(&mut daemons[i].child, HANG_LIMIT, "a draining daemon");
        at.retarget(NOWHERE);
        assert!(status.success(), "the daemon drained and exited: {status}");
        let warning = client.error_line("warning");
        assert!(warning.contains(&addrs[i]), "{warning}");
        daemons[i] = Daemon::start(&flags);
        at.retarget(&daemons[i].socket.to_string());
        let note = client.error_line("is back");
        assert_eq!(note, format!("patience: note: {} is back", addrs[i]));
    }

    let (out, code, stderr) = client.finish(head);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        out.as_bytes() == solve.stdout.as_slice(),
        "the output differs from solve's ({} lines against {}); stderr: {stderr}",
        out.lines().count(),
        String::from_utf8_lossy(&solve.stdout).lines().count()
    );
    assert_eq!(
        stderr.lines().count(),
        4,
        "a warning and a note per daemon: {stderr}"
    );
    for daemon in &daemons {
        let served = daemon.line_with("call finished", LOG_LIMIT);
        assert!(
            deals_in(&served) > 0,
            "a restarted daemon got no work: {served}"
        );
    }
}

/// A daemon that ignores the analysis options (older than the API) would give JSON lines without
/// the fields `solve` prints: the client refuses it in JSON, and uses it in text.
#[test]
fn json_needs_a_daemon_that_sends_the_analysis() {
    let old = stand_in(None);
    let input = data("sample.in");
    let input = input.as_str();
    let json = run(&["client", "--addr", &old, "--format", "json", input]);
    let stderr = String::from_utf8_lossy(&json.stderr);
    assert_eq!(json.status.code(), Some(2), "{stderr}");
    assert!(json.stdout.is_empty(), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one error: {stderr}");
    assert!(
        stderr.contains(&format!(
            "daemon {old} does not support analysis (--format json needs a newer daemon)"
        )),
        "{stderr}"
    );

    let text = run(&["client", "--addr", &old, input]);
    assert_eq!(text.status.code(), Some(0), "{text:?}");
    assert_eq!(String::from_utf8_lossy(&text.stdout), "0.500000\n");
}

/// A move's odds without the move cannot be printed as `solve` prints it: that daemon has failed,
/// and a good one answers in its place.
#[test]
fn a_malformed_analysis_fails_that_daemon_over_to_a_good_one() {
    use patience::proto::{Analysis, MoveOdds};
    let broken = stand_in(Some(Analysis {
        winnable: true,
        exact: String::new(),
        moves: vec![MoveOdds {
            r#move: None,
            probability: 0.5,
        }],
        line: Vec::new(),
        states: 1,
    }));
    let good = Daemon::start(&["--workers", "1"]);
    let input = data("random1000.in");
    let input = input.as_str();
    let flags = ["--format", "json", "--moves"];
    let solve = run(&[&["solve", input], &flags[..]].concat());
    assert_eq!(solve.status.code(), Some(0));
    // The broken daemon first: it certainly gets the first chunk.
    let client = run(&[
        &[
            "client", "--addr", &broken, "--addr", &good.addr, "--batch", "16",
        ],
        &flags[..],
        &[input],
    ]
    .concat());
    let stderr = String::from_utf8_lossy(&client.stderr);
    assert_eq!(client.status.code(), Some(0), "{stderr}");
    assert!(client.stdout == solve.stdout, "stderr: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains(&broken), "{stderr}");
    assert!(lines[0].contains("malformed"), "{stderr}");
    // Its chunk goes to the good daemon; or it went there already, when the stand-in (on a
    // thread of this busy test process) was slow enough to be hedged, and then nothing is left
    // to resend: the line ends with the reason.
    assert!(
        lines[0].contains("unanswered request") || lines[0].ends_with("came without the move"),
        "{stderr}"
    );
}

/// A deal that every daemon fails on (here two stand-ins that end any call carrying it) is not
/// resent for ever: after a few failures with it the oldest unanswered, the client prints the
/// answers before it and stops, naming the chunk and the last reason, exit status 2.
#[test]
fn a_deal_that_fails_every_daemon_ends_the_run_instead_of_resending_it_for_ever() {
    let (deals, _) = corpus("random1000");
    let poison = deals[10];
    let (a, b) = (stand_in_failing_on(poison), stand_in_failing_on(poison));
    let text: String = deals[..15].iter().map(|d| format!("{d}\n")).collect();
    let dir = Scratch::new("cluster-poison");
    let input = dir.write("deals.in", text);
    let started = Instant::now();
    let client = run(&["client", "--addr", &a, "--addr", &b, "--batch", "1", &input]);
    let stderr = String::from_utf8_lossy(&client.stderr);
    assert_eq!(client.status.code(), Some(2), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&client.stdout),
        "0.500000\n".repeat(10),
        "{stderr}"
    );
    let last = stderr.lines().last().unwrap_or("");
    assert!(
        last.contains("failed 5 times while chunk 10 (counting from 0; 1 items)"),
        "{stderr}"
    );
    assert!(last.contains("cannot answer that deal"), "{stderr}");
    assert!(last.contains("giving up on it"), "{stderr}");
    assert!(started.elapsed() < HANG_LIMIT, "{:?}", started.elapsed());
}

/// A daemon that never answered is not waited for, however long `--give-up-after` is: a wrong
/// address or a daemon not started fails the run at once rather than after the wait meant for
/// restarts. (With an hour to wait, only the no-wait rule lets this end before the hang limit.)
#[test]
fn with_no_daemon_ever_reachable_the_client_does_not_wait_to_give_up() {
    let mut client = patience()
        .args(&["client", "--addr", DEAD, "--addr", ALSO_DEAD])
        .args(&["--give-up-after", "3600s"])
        .arg(data("random1000.in"))
        .running();
    let status = wait_or_hang(
        &mut client.child,
        HANG_LIMIT,
        "a client with no daemon to wait for",
    );
    assert_eq!(status.code(), Some(2));
    let (_, _, stderr) = client.finish(String::new());
    assert!(stderr.contains("every daemon failed"), "{stderr}");
    assert!(!stderr.contains("came back within"), "{stderr}");
}

/// Rough edge 5: with nothing listening, the client used to warn first that its request "is
/// retried", then that every daemon failed. It says it once: what it tried, why each failed,
/// that nothing answered, and what to check.
#[test]
fn with_nothing_listening_the_client_says_so_once() {
    for addrs in [&[DEAD][..], &[DEAD, ALSO_DEAD]] {
        let mut args = vec!["client"];
        for addr in addrs {
            args.extend(["--addr", addr]);
        }
        let sample = data("sample.in");
        args.push(&sample);
        let out = run(&args);
        let stderr = out.stderr_str();
        assert_eq!(out.code(), Some(2), "{stderr}");
        assert_eq!(out.stdout_str(), "", "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "said once: {stderr}");
        assert!(!stderr.contains("warning"), "{stderr}");
        assert!(!stderr.contains("retried"), "{stderr}");
        for addr in addrs {
            assert!(
                stderr.contains(&format!("{addr}: cannot connect")),
                "{stderr}"
            );
        }
        assert!(stderr.contains("none ever answered"), "{stderr}");
        assert!(stderr.contains("is `patience serve` running"), "{stderr}");
    }
}
