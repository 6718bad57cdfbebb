//! OpenTelemetry tracing (docs/operations.md, "Tracing"), with parts no one here wrote: a caller
//! traced with the OpenTelemetry Python SDK and an OTLP receiver built from the published protos
//! (`tests/otel.py`). The daemon's span for a call is a child of the caller's; its log lines
//! carry the ids; a collector that is down or never answers changes nothing in the answers; the
//! last spans go out within the drain.

use std::time::Duration;

use patience::proto::SolveResponse;
use prost::Message as _;
use serde_json::Value;

use crate::common::{
    self, Collector, DEAD, Daemon, LOG_LIMIT, Scratch, assert_answers, attribute, corpus, data,
    metric, otel_python, patience, probability, request, run, scrape, traced_call,
    wait_until_blocking,
};

/// The W3C specification's example `traceparent`.
const TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";

/// Export to `collector`, each batch of spans sent within 50 ms of the first.
fn export_to(endpoint: &str) -> Vec<(&'static str, String)> {
    vec![
        ("RUST_LOG", "info".to_string()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.to_string()),
        ("OTEL_BSP_SCHEDULE_DELAY", "50".to_string()),
    ]
}

fn env<'a>(vars: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    vars.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// A Python caller's span is the parent of the daemon's span for its `SolveStream`, which has the
/// RPC conventions' attributes and the call's outcome; each request solved is one child span
/// (never one per deal); the call's JSON log line carries the trace and span ids.
#[test]
fn the_daemons_span_is_a_child_of_the_python_callers() {
    let Some(python) = otel_python() else { return };
    let collector = Collector::start(&python);
    let vars = export_to(&collector.endpoint);
    let daemon = Daemon::start_with(&["--log-format", "json"], &env(&vars), None);
    let (deals, expected) = corpus("extra12");
    let messages = vec![
        request(&deals[..5], 0).encode_to_vec(),
        request(&deals[5..], 5).encode_to_vec(),
    ];
    let addr = daemon.socket.to_string();
    let call = traced_call(&python, &addr, "/patience.v1.Solver/SolveStream", &messages);

    let answers: Vec<f64> = call
        .responses
        .iter()
        .flat_map(|r| SolveResponse::decode(r.as_slice()).unwrap().results)
        .map(|r| probability(&r))
        .collect();
    assert_eq!(answers.len(), expected.len());
    for (got, want) in answers.iter().zip(&expected) {
        assert!(
            (got - want).abs() <= common::TOLERANCE,
            "{got} against {want}"
        );
    }

    let server = collector.wait_for("the daemon's span of the call", |span| {
        span["name"] == "patience.v1.Solver/SolveStream" && span["trace_id"] == call.trace_id
    });
    assert_eq!(server["parent_span_id"], call.span_id.as_str(), "{server}");
    assert_eq!(server["kind"], 2, "a server span: {server}");
    assert_eq!(server["service"], "patience");
    assert_eq!(attribute(&server, "rpc.system"), "grpc");
    assert_eq!(attribute(&server, "rpc.service"), "patience.v1.Solver");
    assert_eq!(attribute(&server, "rpc.method"), "SolveStream");
    assert_eq!(attribute(&server, "rpc.grpc.status_code"), 0);
    assert_eq!(
        attribute(&server, "server.port"),
        i64::from(daemon.socket.port())
    );
    assert_eq!(attribute(&server, "patience.items.answered"), 12);
    assert_eq!(attribute(&server, "patience.call.end"), "completed");

    // The batches: children of the call's span, covering every deal once between them.
    let call_span = server["span_id"].as_str().unwrap().to_string();
    let solved = || -> Vec<Value> {
        collector
            .spans()
            .into_iter()
            .filter(|s| s["name"] == "solve" && s["parent_span_id"] == call_span.as_str())
            .collect()
    };
    wait_until_blocking(LOG_LIMIT, "the solve spans", || {
        solved()
            .iter()
            .map(|s| attribute(s, "items").as_i64().unwrap())
            .sum::<i64>()
            == 12
    });
    assert_eq!(solved().len(), 2, "one per request: {:?}", solved());

    let line = daemon.line_with("call finished", LOG_LIMIT);
    let line: Value = serde_json::from_str(&line).expect("a JSON log line");
    assert_eq!(line["span"]["trace_id"], call.trace_id.as_str(), "{line}");
    assert_eq!(line["span"]["span_id"], call_span.as_str(), "{line}");
}

/// With export off, a call's text log line still carries the caller's trace id, so the log joins
/// the caller's trace.
#[tokio::test]
async fn with_export_off_the_log_carries_the_callers_trace_id() {
    let daemon = Daemon::start(&[]);
    let mut client = daemon.client().await;
    let (deals, _) = corpus("extra12");
    let mut call = tonic::Request::new(request(&deals[..1], 0));
    call.metadata_mut()
        .insert("traceparent", TRACEPARENT.parse().unwrap());
    client.solve(call).await.unwrap();
    let line = daemon.line_with("call finished", LOG_LIMIT);
    assert!(line.contains(&format!("trace_id={TRACE_ID}")), "{line}");
    assert!(
        !line.contains("span_id="),
        "no span of ours to name: {line}"
    );
    assert!(
        daemon.start_line.contains("traces=\"off\""),
        "{}",
        daemon.start_line
    );
}

/// A collector that is down, and one that takes every export and never answers, change nothing
/// in what `patience client` prints; the spans lost are counted, and said once in the log.
#[test]
fn a_collector_down_or_never_answering_changes_nothing() {
    let Some(python) = otel_python() else { return };
    let hanging = Collector::hanging(&python);
    let random = data("random1000.in");
    let reference = std::fs::read_to_string(data("random1000.out6")).unwrap();
    let expected: Vec<f64> = reference.lines().map(|l| l.parse().unwrap()).collect();
    for endpoint in [DEAD, hanging.endpoint.as_str()] {
        let mut vars = export_to(endpoint);
        vars.push(("OTEL_EXPORTER_OTLP_TIMEOUT", "300".to_string()));
        let daemon = Daemon::start_with(&["--metrics-addr", "127.0.0.1:0"], &env(&vars), None);
        for batch in ["1", "100"] {
            let out = run(&["client", "--addr", &daemon.addr, "--batch", batch, &random]);
            assert_eq!(out.status.code(), Some(0), "{endpoint}");
            assert_answers(&String::from_utf8_lossy(&out.stdout), &expected, 6, 5e-7);
        }
        let metrics = daemon.metrics_addr();
        wait_until_blocking(LOG_LIMIT, "spans counted as dropped", || {
            let scrape = scrape(&metrics);
            let dropped = |reason: &str| {
                metric(
                    &scrape,
                    &format!("patience_trace_spans_dropped_total{{reason=\"{reason}\"}}"),
                )
                .unwrap_or(0.0)
            };
            dropped("export_failed") + dropped("queue_full") > 0.0
        });
        let said = daemon.logged("dropping trace spans", LOG_LIMIT);
        assert!(said.contains("WARN"), "{said}");
        let times = daemon
            .log_so_far()
            .iter()
            .filter(|l| l.contains("dropping trace spans"))
            .count();
        assert!(times <= 1, "said {times} times");
    }
}

/// On SIGTERM the spans not yet sent go out before the daemon exits: with a batch delay of an
/// hour, the call's span reaches the collector only through the drain's flush. (Threads of its
/// own for the client, which must see the drain's GOAWAY while the test waits for the exit.)
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn the_last_spans_go_out_within_the_drain() {
    let Some(python) = otel_python() else { return };
    let collector = Collector::start(&python);
    let mut vars = export_to(&collector.endpoint);
    vars.push(("OTEL_BSP_SCHEDULE_DELAY", "3600000".to_string()));
    let mut daemon = Daemon::start_with(&[], &env(&vars), None);
    let mut client = daemon.client().await;
    let (deals, _) = corpus("extra12");
    let mut call = tonic::Request::new(request(&deals[..2], 0));
    call.metadata_mut()
        .insert("traceparent", TRACEPARENT.parse().unwrap());
    client.solve(call).await.unwrap();
    daemon.line_with("call finished", LOG_LIMIT);
    assert!(
        collector.spans().is_empty(),
        "nothing is sent before the hour"
    );
    let (_, status) = daemon.stop();
    assert!(status.success(), "{status:?}");
    let span = collector.wait_for("the call's span", |s| {
        s["name"] == "patience.v1.Solver/Solve" && s["trace_id"] == TRACE_ID
    });
    assert_eq!(span["parent_span_id"], "b7ad6b7169203331");
}

/// A request to the daemon's plain HTTP API, and a gRPC-Web call (as a browser makes it over
/// HTTP/1.1), join their callers' traces as a gRPC call does.
#[test]
fn plain_http_and_grpc_web_calls_join_the_callers_trace() {
    let Some(python) = otel_python() else { return };
    let collector = Collector::start(&python);
    let vars = export_to(&collector.endpoint);
    let daemon = Daemon::start_with(&[], &env(&vars), None);
    let addr = daemon.socket.to_string();
    let server_span = |trace: &str| {
        collector.wait_for("the call's span", |s| {
            s["trace_id"] == trace && s["kind"] == 2
        })
    };

    let sample = std::fs::read(data("sample.in")).unwrap();
    let answer = http_post(&addr, "/v1/solve", "", TRACEPARENT, &sample);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("0.589314\n"), "{answer}");
    let span = server_span(TRACE_ID);
    assert_eq!(span["parent_span_id"], "b7ad6b7169203331");
    assert_eq!(span["name"], "patience.v1.Solver/SolveStream");
    assert_eq!(attribute(&span, "http.request.method"), "POST");
    assert_eq!(attribute(&span, "url.path"), "/v1/solve");

    let (deals, _) = corpus("extra12");
    let message = request(&deals[..1], 0).encode_to_vec();
    let mut framed = vec![0];
    framed.extend_from_slice(&u32::try_from(message.len()).unwrap().to_be_bytes());
    framed.extend(message);
    let web_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let answer = http_post(
        &addr,
        "/patience.v1.Solver/Solve",
        "content-type: application/grpc-web+proto\r\nx-grpc-web: 1\r\n",
        &format!("00-{web_trace}-00f067aa0ba902b7-01"),
        &framed,
    );
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let span = server_span(web_trace);
    assert_eq!(span["parent_span_id"], "00f067aa0ba902b7");
    assert_eq!(span["name"], "patience.v1.Solver/Solve");
    assert_eq!(attribute(&span, "rpc.grpc.status_code"), 0);
}

/// One `patience client` run over two daemons is one trace: the run's span is its root, each call
/// to a daemon a client span under it naming the daemon, and each daemon's span of a call a child
/// of the client's span of that call.
#[test]
fn one_client_run_over_two_daemons_is_one_trace() {
    let Some(python) = otel_python() else { return };
    let collector = Collector::start(&python);
    let vars = export_to(&collector.endpoint);
    let a = Daemon::start_with(&[], &env(&vars), None);
    let b = Daemon::start_with(&[], &env(&vars), None);
    let random = data("random1000.in");
    let mut client = patience();
    client.args(&[
        "client", "--addr", &a.addr, "--addr", &b.addr, "--batch", "10", &random,
    ]);
    for (key, value) in &vars {
        client.env(key, value);
    }
    let out = client.output();
    assert_eq!(out.status.code(), Some(0));
    let reference = std::fs::read_to_string(data("random1000.out6")).unwrap();
    let expected: Vec<f64> = reference.lines().map(|l| l.parse().unwrap()).collect();
    assert_answers(&String::from_utf8_lossy(&out.stdout), &expected, 6, 5e-7);

    let run = collector.wait_for("the client's run span", |s| s["name"] == "patience client");
    assert_eq!(run["parent_span_id"], "", "the root: {run}");
    let trace = run["trace_id"].as_str().unwrap().to_string();
    let ports = [i64::from(a.socket.port()), i64::from(b.socket.port())];
    let of_trace = |kind: i64| -> Vec<Value> {
        collector
            .spans()
            .into_iter()
            .filter(|s| s["trace_id"] == trace.as_str() && s["kind"] == kind)
            .collect()
    };
    let both = |spans: &[Value]| {
        ports
            .iter()
            .all(|&p| spans.iter().any(|s| attribute(s, "server.port") == p))
    };
    // Client spans (kind 3) to both daemons, and server spans (kind 2) from both.
    wait_until_blocking(LOG_LIMIT, "calls to and spans from both daemons", || {
        both(&of_trace(3)) && both(&of_trace(2))
    });
    let calls = of_trace(3);
    for call in &calls {
        assert_eq!(call["parent_span_id"], run["span_id"], "{call}");
        assert_eq!(call["name"], "patience.v1.Solver/SolveStream");
    }
    for served in of_trace(2) {
        assert!(
            calls
                .iter()
                .any(|c| c["span_id"] == served["parent_span_id"]),
            "a daemon's span whose parent is no call of the run: {served}"
        );
    }
}

/// A call a daemon refuses ends the client's span of it with the error: the status code and
/// the error status, with the daemon's message.
#[test]
fn a_refused_call_ends_the_clients_span_with_its_error() {
    let Some(python) = otel_python() else { return };
    let collector = Collector::start(&python);
    let scratch = Scratch::new("traces-refused");
    let token = scratch.write("token", "s3cret-token-for-traces\n");
    let vars = export_to(&collector.endpoint);
    let daemon = Daemon::start_with(&["--auth-token-file", &token], &env(&vars), None);
    let mut client = patience();
    client.args(&["client", "--addr", &daemon.addr, &data("sample.in")]);
    for (key, value) in &vars {
        client.env(key, value);
    }
    let out = client.output();
    assert_eq!(out.status.code(), Some(2), "refused without the token");
    let call = collector.wait_for("the client's span of the refused call", |s| s["kind"] == 3);
    assert_eq!(attribute(&call, "rpc.grpc.status_code"), 16, "{call}");
    assert_eq!(call["status"], 2, "the error status: {call}");
}

/// `POST PATH` over HTTP/1.1 with `headers` (each line ending in CRLF) and `traceparent`: the
/// whole answer, as text as far as it is.
fn http_post(addr: &str, path: &str, headers: &str, traceparent: &str, body: &[u8]) -> String {
    use std::io::{Read as _, Write as _};
    let mut socket = std::net::TcpStream::connect(addr).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        socket,
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\n{headers}traceparent: {traceparent}\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    socket.write_all(body).unwrap();
    let mut answer = Vec::new();
    socket.read_to_end(&mut answer).unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}
