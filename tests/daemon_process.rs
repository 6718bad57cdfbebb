//! The `patience serve` and `patience client` binaries as users run them: real processes, real
//! signals, output compared byte for byte with `patience solve`.

use crate::common;

use std::time::Duration;

use common::{DEAD, Daemon, Scratch, TOLERANCE, corpus, data, patience, requests, run, text};
use patience::proto::solver_client::SolverClient;
use patience::proto::{self, SolveRequest, result::Outcome};
use tonic::Code;

/// A call in flight: its client (which keeps the connection), its responses, and the results
/// received so far.
type InFlight = (
    SolverClient<tonic::transport::Channel>,
    tonic::Streaming<proto::SolveResponse>,
    Vec<proto::Result>,
);

/// Eight `SolveStream` calls sending `requests`, each on its own connection, each answered once.
async fn eight_streams(
    daemon: &Daemon,
    requests: Vec<SolveRequest>,
    rounds: usize,
) -> Vec<InFlight> {
    let mut streams = Vec::new();
    for _ in 0..8 {
        let mut client = SolverClient::connect(daemon.addr.clone()).await.unwrap();
        // `requests` `rounds` times, made as they are sent.
        let sent = requests
            .clone()
            .into_iter()
            .cycle()
            .take(rounds * requests.len());
        let mut inbound = client
            .solve_stream(tokio_stream::iter(sent))
            .await
            .unwrap()
            .into_inner();
        let first = inbound.message().await.unwrap().unwrap().results;
        streams.push((client, inbound, first));
    }
    streams
}

/// A SIGTERM sent the moment the daemon says it is listening (as an orchestrator that read that
/// line may) drains and exits 0: the signals are watched before the line is written, not when the
/// server first polls its shutdown. Ten daemons, each with a jobs directory to open after the line.
#[test]
fn sigterm_right_after_the_start_line_exits_0() {
    let scratch = Scratch::new("term-at-start");
    for n in 0..10 {
        let dir = scratch.join(&format!("jobs{n}")).display().to_string();
        let daemon = Daemon::start(&["--jobs-dir", &dir]);
        daemon.signal("TERM");
        let (code, log) = daemon.wait(Duration::from_secs(30));
        assert_eq!(
            code,
            Some(0),
            "daemon {n} (None: killed by the signal): {log:#?}"
        );
        assert!(log.iter().any(|line| line.contains("stopped")), "{log:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_eight_streams_in_flight_finish_then_exits_0() {
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_check_response::ServingStatus;

    let (deals, expected) = corpus("random1000");
    let daemon = Daemon::start(&["--workers", "1", "--drain-timeout", "60s"]);
    let mut health = daemon.health().await;
    let mut watches = Vec::new();
    for service in ["patience.v1.Solver", "patience.v1.RpsService", ""] {
        let mut watch = health
            .watch(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner();
        let first = watch.message().await.unwrap().unwrap();
        assert_eq!(first.status, ServingStatus::Serving as i32, "{service}");
        watches.push(watch);
    }

    // Eight streams in flight, each on its own connection, each already answered once.
    let streams = eight_streams(&daemon, requests(&deals, 50, 1), 1).await;
    daemon.signal("TERM");

    // Balancers watching health see NOT_SERVING; new connections are refused.
    for watch in &mut watches {
        let next = tokio::time::timeout(Duration::from_secs(10), watch.message())
            .await
            .expect("health changes on shutdown")
            .unwrap()
            .unwrap();
        assert_eq!(next.status, ServingStatus::NotServing as i32);
    }
    common::wait_for_async(
        Duration::from_secs(10),
        "new connections refused",
        async || {
            SolverClient::connect(daemon.addr.clone())
                .await
                .is_err()
                .then_some(())
        },
    )
    .await;

    // Every stream in flight is answered to the end, in order.
    for (_client, mut inbound, mut results) in streams {
        while let Some(r) = inbound.message().await.unwrap() {
            results.extend(r.results);
        }
        assert_eq!(results.len(), deals.len());
        for (i, r) in results.iter().enumerate() {
            assert_eq!(r.index, i as u64);
            let Some(Outcome::Probability(p)) = r.outcome else {
                panic!("result {i}: {:?}", r.outcome)
            };
            assert!((p - expected[i]).abs() <= TOLERANCE);
        }
    }

    // Once no solving call is left the watches end instead of holding the drain open: the
    // daemon exits long before its 60 s drain timeout although their client is still there.
    for watch in &mut watches {
        let end = tokio::time::timeout(Duration::from_secs(10), watch.message())
            .await
            .expect("a health watch ends once the calls are done");
        assert!(matches!(end, Ok(None) | Err(_)), "{end:?}");
    }
    let (code, log) = daemon.wait(Duration::from_secs(10));
    assert_eq!(code, Some(0), "{log:#?}");
    assert!(log.iter().any(|l| l.contains("shutting down")), "{log:#?}");
    assert!(
        log.iter().any(|l| l.contains("drained; stopping")),
        "{log:#?}"
    );
    drop((health, watches));
}

/// Reads a stream that the server is expected to cut, collecting its results; returns the status.
async fn read_until_cut(
    inbound: &mut tonic::Streaming<proto::SolveResponse>,
    results: &mut Vec<proto::Result>,
) -> tonic::Status {
    loop {
        match inbound.message().await {
            Ok(Some(r)) => results.extend(r.results),
            Ok(None) => panic!("the stream ended cleanly without saying where to resume"),
            Err(status) => return status,
        }
    }
}

/// A cut stream: UNAVAILABLE naming the index to resume from, and every result before that index
/// arrived, in order and right (the requests cycle through the corpus).
fn assert_cut_after_an_in_order_prefix(
    status: &tonic::Status,
    results: &[proto::Result],
    expected: &[f64],
) {
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    let said = proto::reason::Said::of(status).expect("details");
    assert!(
        ["DRAIN_TIMEOUT", "DRAIN_CUT"].contains(&said.reason.as_str()),
        "{said:?}"
    );
    assert_eq!(said.metadata["resume_index"], results.len().to_string());
    let resume = format!("from index {} on", results.len());
    assert!(status.message().contains(&resume), "{}", status.message());
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.index, i as u64);
        let Some(Outcome::Probability(p)) = r.outcome else {
            panic!("result {i}: {:?}", r.outcome)
        };
        assert!((p - expected[i % expected.len()]).abs() <= TOLERANCE);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_drain_timeout_streams_end_unavailable_after_an_in_order_prefix() {
    let (deals, expected) = corpus("random1000");
    let daemon = Daemon::start(&["--workers", "1", "--drain-timeout", "300ms"]);
    // Eight streams with far more than one worker solves in the drain time: 400,000 deals each,
    // some 4 s of solving for the first alone (with 25,000, the first stream, which starts
    // ahead of the others, was sometimes answered whole before the drain timeout).
    let rounds = 400;
    let streams = eight_streams(&daemon, requests(&deals, 100, 1), rounds).await;
    daemon.signal("TERM");
    for (client, mut inbound, mut results) in streams {
        let status = read_until_cut(&mut inbound, &mut results).await;
        assert!(results.len() < rounds * deals.len());
        assert_cut_after_an_in_order_prefix(&status, &results, &expected);
        drop(client);
    }
    let (code, log) = daemon.wait(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{log:#?}");
}

/// A file of good and bad deals, in the layouts users write.
fn mixed_file(scratch: &Scratch) -> String {
    let good = std::fs::read_to_string(data("random1000.in")).unwrap();
    let deals: Vec<&str> = good.lines().collect();
    let deal = |i: usize| deals[9 * i..9 * i + 9].join("\n") + "\n";
    let mut text = String::new();
    for i in 0..300 {
        match i % 50 {
            7 => text.push_str(&deal(i).replacen(' ', " QX ", 1)),
            13 => text.push_str(&deal(i).replacen('\n', " 6S\n", 1)),
            21 => text.push_str(&deal(i).to_lowercase().replace('\n', "\r\n\n")),
            33 => text.push_str(&(deal(i).replace('\n', " ") + "\n")),
            _ => text.push_str(&deal(i)),
        }
    }
    text.push_str(&deal(300)[..40]);
    scratch.write("mixed.in", text)
}

#[test]
fn client_prints_exactly_what_solve_prints() {
    let scratch = Scratch::new("client-test");
    let mixed = mixed_file(&scratch);
    let mixed = mixed.as_str();
    let random = data("random1000.in");
    let random = random.as_str();
    let missing = scratch.join("missing.in").display().to_string();
    let missing = missing.as_str();

    let daemon = Daemon::start(&["--workers", "2"]);
    let cases: Vec<Vec<&str>> = vec![
        vec![random],
        vec![mixed],
        vec![random, mixed],
        vec![mixed, missing, random],
    ];
    for files in &cases {
        let solve = run(&[&["solve"], &files[..]].concat());
        for batch in ["1", "7", "500"] {
            let client = run(&[
                &["client", "--addr", &daemon.addr, "--batch", batch],
                &files[..],
            ]
            .concat());
            assert_eq!(
                String::from_utf8_lossy(&client.stdout),
                String::from_utf8_lossy(&solve.stdout),
                "files {files:?}, batch {batch}"
            );
            assert_eq!(client.status.code(), solve.status.code(), "{files:?}");
        }
    }
    // And the exit statuses are the documented ones.
    assert_eq!(run(&["solve", random]).status.code(), Some(0));
    assert_eq!(run(&["solve", mixed]).status.code(), Some(1));
    assert_eq!(run(&["solve", mixed, missing]).status.code(), Some(2));
    let out = run(&["solve", mixed]).stdout;
    let text = String::from_utf8_lossy(&out);
    assert_eq!(text.lines().count(), 301);
    assert_eq!(
        text.lines().filter(|l| l.starts_with("error: ")).count(),
        13
    );

    // Standard input works for the client too.
    let sample = std::fs::read(data("sample.in")).unwrap();
    let out = patience()
        .args(&["client", "--addr", &daemon.addr])
        .stdin(sample)
        .output();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "0.589314\n");

    // With no daemon to talk to, the client says so and exits 2.
    drop(daemon);
    let refused = run(&["client", "--addr", DEAD, random]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("cannot connect"));
}

/// With `--drain-cut-after`, a client that never stops sending does not hold the drain open:
/// shortly after SIGTERM its stream is cut at a request boundary, everything read is answered in
/// order, and UNAVAILABLE says where to resume; the daemon then exits long before its 60 s drain
/// timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_drain_cut_after_sigterm_cuts_a_stream_still_sending_at_a_boundary() {
    let (deals, expected) = corpus("random1000");
    let daemon = Daemon::start(&[
        "--workers",
        "1",
        "--drain-timeout",
        "60s",
        "--drain-cut-after",
        "1s",
    ]);
    let mut client = SolverClient::connect(daemon.addr.clone()).await.unwrap();
    let (requests_tx, requests_rx) = tokio::sync::mpsc::channel(4);
    let one_round = requests(&deals, 50, 1);
    let feeder = tokio::spawn(async move {
        // Sends the corpus over and over until the server stops reading and the call ends.
        for request in one_round.iter().cycle() {
            if requests_tx.send(request.clone()).await.is_err() {
                break;
            }
        }
    });
    let mut inbound = client
        .solve_stream(tokio_stream::wrappers::ReceiverStream::new(requests_rx))
        .await
        .unwrap()
        .into_inner();
    let mut results = inbound.message().await.unwrap().unwrap().results;
    daemon.signal("TERM");
    let status = read_until_cut(&mut inbound, &mut results).await;
    assert_cut_after_an_in_order_prefix(&status, &results, &expected);
    drop((inbound, client));
    feeder.abort();
    // Well inside the 60 s drain timeout: the cut stream did not hold the drain open.
    let (code, log) = daemon.wait(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{log:#?}");
    assert!(
        log.iter().any(|l| l.contains("cut short by shutdown")),
        "{log:#?}"
    );
}

#[test]
fn serve_listens_on_a_host_name_resolved_at_start() {
    let daemon = Daemon::start_at("localhost:0", &["--workers", "1"], &[]);
    assert!(daemon.socket.ip().is_loopback(), "{}", daemon.socket);
    let out = patience()
        .args(&["client", "--addr", &daemon.addr])
        .arg(data("sample.in"))
        .output();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

#[test]
fn serve_without_a_port_says_what_an_address_looks_like() {
    let out = run(&["serve", "--addr", "localhost"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        out.stderr_str().contains("has no port") && out.stderr_str().contains("localhost:50051"),
        "{}",
        out.stderr_str()
    );
}

/// Every listener is bound before the daemon says it is listening, and the cause is said once.
#[test]
fn a_metrics_port_in_use_stops_the_daemon_before_it_claims_to_listen() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().to_string();
    let out = run(&[
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--workers",
        "1",
        "--metrics-addr",
        &port,
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = out.stderr_str();
    assert!(!stderr.contains("listening on"), "{stderr}");
    assert_eq!(stderr.matches("in use").count(), 1, "{stderr}");
    assert!(stderr.contains(&port), "{stderr}");
}

/// A unary call that fails past admission still gets its one log line, with how it ended and the
/// status code, so a client's failed calls can be found in the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_unary_call_is_logged_with_its_code() {
    let daemon = Daemon::start(&["--max-deals-per-request", "2"]);
    let (deals, _) = corpus("sample");
    let mut client = daemon.client().await;
    let three = common::request(&[deals[0], deals[0], deals[0]], 0);
    let status = client.solve(three).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    let line = daemon.line_with("call finished", Duration::from_secs(10));
    assert!(
        line.contains("rpc=\"Solve\"") || line.contains("rpc=Solve"),
        "{line}"
    );
    assert!(line.contains("ended with an error"), "{line}");
    assert!(line.contains("InvalidArgument"), "{line}");

    client.solve(common::request(&deals, 0)).await.unwrap();
    let line = daemon.line_with("call finished", Duration::from_secs(10));
    assert!(
        line.contains("end=\"completed\"") || line.contains("end=completed"),
        "{line}"
    );
}

/// `--log-format json` (the container image's default) writes one JSON object per line, the start
/// line's address and the calls' fields among its keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_are_one_object_per_line() {
    let daemon = Daemon::start(&["--log-format", "json"]);
    let start: serde_json::Value = serde_json::from_str(&daemon.start_line)
        .unwrap_or_else(|e| panic!("{e}: {}", daemon.start_line));
    assert_eq!(
        start["addr"].as_str(),
        Some(daemon.socket.to_string().as_str())
    );
    assert_eq!(start["level"].as_str(), Some("INFO"));
    let (deals, _) = corpus("sample");
    let mut client = daemon.client().await;
    client.solve(common::request(&deals, 0)).await.unwrap();
    let line = daemon.line_with("call finished", Duration::from_secs(10));
    let call: serde_json::Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert_eq!(call["rpc"].as_str(), Some("Solve"), "{line}");
    assert_eq!(call["game"].as_str(), Some("double_patience"), "{line}");
    assert_eq!(call["items"].as_u64(), Some(deals.len() as u64), "{line}");
    assert_eq!(call["end"].as_str(), Some("completed"), "{line}");
    daemon.signal("TERM");
    let (code, log) = daemon.wait(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{log:#?}");
    for line in log {
        serde_json::from_str::<serde_json::Value>(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }
}

/// The client examples of the README and `docs/client.md`, run against a daemon of their own: the
/// address they show (the default, `127.0.0.1:50051`) becomes that daemon's. What they print is
/// `tests/data/sample.out6`'s answer.
#[test]
fn the_documented_client_examples_print_what_the_docs_say() {
    let daemon = Daemon::start(&["--workers", "1"]);
    let socket = daemon.socket.to_string();
    for (doc, heading) in [
        ("README.md", "## The client"),
        ("docs/client.md", "## Running it"),
    ] {
        let section = common::doc_section(doc, heading);
        assert!(
            section.contains(&format!("\n{}", text("sample.out6"))),
            "{doc}: the example does not print sample.out6's answer"
        );
        common::doc_examples(doc, heading)
            .rewrite("127.0.0.1:50051", &socket)
            .run();
    }
}

/// Rough edge 3: a value from an environment variable that a flag cannot take names the variable
/// (the user never typed the flag), for every flag that reads one; a value typed as a flag is
/// still said to come from the flag.
#[test]
fn a_bad_value_from_the_environment_names_the_variable() {
    use clap::CommandFactory as _;
    let cli = patience::cli::Cli::command();
    let serve = cli.find_subcommand("serve").expect("a serve subcommand");
    let bad = "not-a-value!";
    let mut checked = 0;
    for arg in serve.get_arguments() {
        let Some(var) = arg.get_env() else {
            continue;
        };
        let var = var.to_string_lossy().into_owned();
        let flag = format!("--{}", arg.get_long().expect("a long flag"));
        // Paths take any text: nothing for the parser to refuse.
        // With every argument of serve, so that one which requires another finds it (clap
        // checks that in debug builds).
        let probe = clap::Command::new("probe")
            .args(serve.get_arguments().cloned())
            .try_get_matches_from(["probe", &format!("{flag}={bad}")]);
        if !probe.is_err_and(|e| {
            matches!(
                e.kind(),
                clap::error::ErrorKind::InvalidValue | clap::error::ErrorKind::ValueValidation
            )
        }) {
            continue;
        }
        let out = patience().arg("serve").env(&var, bad).output();
        let stderr = out.stderr_str();
        assert_eq!(out.code(), Some(2), "{var}: {stderr}");
        assert!(stderr.contains(&format!("{var}={bad}")), "{var}: {stderr}");
        assert!(stderr.contains(&flag), "{var}: {stderr}");
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} variables checked");

    // Typed as a flag, the value is the flag's, whatever the environment holds.
    let out = patience()
        .args(&["serve", "--workers", "abc"])
        .env("PATIENCE_WORKERS", "2")
        .output();
    let stderr = out.stderr_str();
    assert_eq!(out.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--workers"), "{stderr}");
    assert!(!stderr.contains("PATIENCE_WORKERS"), "{stderr}");
    // A variable's value that the flag can take, under the flag itself: the same words as typed.
    let out = patience()
        .arg("serve")
        .env("PATIENCE_WORKERS", "0")
        .output();
    let stderr = out.stderr_str();
    assert_eq!(out.code(), Some(2), "{stderr}");
    assert!(stderr.contains("PATIENCE_WORKERS=0"), "{stderr}");
    assert!(stderr.contains("at least 1"), "{stderr}");
}
