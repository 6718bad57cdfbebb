//! `patience client` across a network's conditions, on loopback: a daemon far away or cut off
//! behind a delay proxy ([`DelayProxy`]), calls bounded in bytes, an address that answers as a
//! web page, and a proxy's HTTP 502 at the start. Real binaries; every output is compared byte
//! for byte with `patience solve`'s.

use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{
    Daemon, DelayProxy, HANG_LIMIT, Scratch, data, deals_answered, patience, scrape,
    wait_until_blocking,
};
use tokio::sync::oneshot;

/// The client's lines on standard error that are warnings.
fn warnings(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("patience: warning:"))
        .collect()
}

/// A daemon 100 ms away each way (a 200 ms round trip) beside a near one: the output is
/// `solve`'s, nothing is said, both daemons answer some of the deals, and both count every call
/// the client made as completed: the run waits for the distant daemon's statuses too (a round
/// trip after its last answer) instead of leaving its calls to end as cancelled.
#[test]
fn a_distant_daemon_changes_nothing_but_where_the_work_goes() {
    let scratch = Scratch::new("distant");
    let (input, solve) = scratch.corpus_solved(20);
    let near = Daemon::start(&["--workers", "1", "--metrics-addr", "127.0.0.1:0"]);
    let distant = Daemon::start(&["--workers", "1", "--metrics-addr", "127.0.0.1:0"]);
    let far = DelayProxy::start(&distant.socket.to_string(), Duration::from_millis(100));
    let out = patience()
        // The statuses come a relay round trip after the last answers; on a loaded machine the
        // relay's threads can take longer than the default grace (500 ms) to pass them on.
        .args(&["client", "--addr", &near.addr, "--addr", &far.url()])
        .args(&["--close-grace", "20s", "--keepalive-timeout", "20s", &input])
        .output();
    let stderr = out.stderr_str();
    assert_eq!(out.code(), Some(0), "{stderr}");
    assert!(out.stdout == solve.stdout, "the output differs: {stderr}");
    assert!(warnings(stderr).is_empty(), "{stderr}");
    for daemon in [&near, &distant] {
        let answered = deals_answered(&daemon.metrics_addr());
        assert!(answered > 0, "{} answered nothing", daemon.addr);
        let handled = scrape(&daemon.metrics_addr());
        let calls = |code: &str| {
            common::metric(
                &handled,
                &format!(
                    "grpc_server_handled_total{{grpc_type=\"bidi_stream\",grpc_service=\"patience.v1.Solver\",grpc_method=\"SolveStream\",grpc_code=\"{code}\"}}"
                ),
            )
            .unwrap_or(0.0)
        };
        assert!(calls("OK") > 0.0, "{}: no call completed", daemon.addr);
        assert_eq!(calls("Canceled"), 0.0, "{}: calls cancelled", daemon.addr);
    }
}

/// A daemon cut off without its connections closing (a partition) is given up, its deals
/// answered by the other meanwhile; once the link heals it is back. Nothing but the client's
/// keepalive notices a partition; its defaults are what makes it "within ten seconds" (the
/// machine's speed does not come into it, so the test asserts them, and waits for the event with
/// a hang guard).
#[test]
fn a_partitioned_daemon_is_given_up_within_ten_seconds_and_rejoins_when_healed() {
    assert!(
        patience::client::KEEPALIVE_INTERVAL + patience::client::KEEPALIVE_TIMEOUT
            <= Duration::from_secs(10),
        "the client's keepalive no longer gives a silent daemon up within ten seconds"
    );
    let near = Daemon::start(&["--workers", "1"]);
    let cut = Daemon::start(&["--workers", "1"]);
    let link = DelayProxy::start(&cut.socket.to_string(), Duration::ZERO);
    let mut client = patience()
        .args(&[
            "client",
            "--addr",
            &near.addr,
            "--addr",
            &link.url(),
            "--batch",
            "4",
        ])
        .typed();
    let sample = std::fs::read(data("sample.in")).unwrap();
    let expected = std::fs::read_to_string(data("sample.out6")).unwrap();
    // Enough rounds of deals that both daemons hold some; every answer is the sample's.
    let round = |client: &mut common::Typed| {
        for _ in 0..32 {
            client.type_in(&sample);
        }
        for _ in 0..32 {
            assert_eq!(client.next_line(Duration::from_secs(60)), expected);
        }
    };
    round(&mut client);
    link.partition(true);
    let cut_at = Instant::now();
    round(&mut client);
    let failed = client.error_line("failed");
    println!("given up after {:?}: {failed}", cut_at.elapsed());
    assert!(failed.contains(&link.addr), "{failed}");
    link.partition(false);
    // It is back once it answers again: deals keep coming until it does.
    let healed = Instant::now();
    let back = loop {
        round(&mut client);
        if let Some(back) = client.error_line_within("is back", Duration::from_secs(1)) {
            break back;
        }
        assert!(
            healed.elapsed() < Duration::from_secs(60),
            "the healed daemon never answered again"
        );
    };
    assert!(back.contains(&link.addr), "{back}");
    client.close_input();
    let (rest, code, stderr) = client.finish("a run across a partition");
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(rest, "", "{stderr}");
}

/// Calls end after `--stream-max-bytes` of requests and the next takes over: the daemon sees
/// many calls where one used to carry everything, and the output is `solve`'s.
#[test]
fn calls_end_at_the_byte_bound_and_the_next_takes_over() {
    let scratch = Scratch::new("bounded");
    let (input, solve) = scratch.corpus_solved(5);
    let daemon = Daemon::start(&["--workers", "1", "--metrics-addr", "127.0.0.1:0"]);
    let out = patience()
        .args(&[
            "client",
            "--addr",
            &daemon.addr,
            "--streams",
            "1",
            "--stream-max-bytes",
            "16384",
            "--batch",
            "32",
            &input,
        ])
        .output();
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    assert!(out.stdout == solve.stdout);
    let scraped = scrape(&daemon.metrics_addr());
    let calls = summed(
        &scraped,
        "grpc_server_started_total{",
        "grpc_method=\"SolveStream\"",
    );
    // 5,000 deals packed, 36 bytes each, in requests of 32 (1,157 bytes framed), 16 KiB per
    // call: 14 requests a call (a call ends before the request that would pass the bound), 12
    // calls for the 157 requests.
    assert!((10.0..=14.0).contains(&calls), "{calls} calls");
}

/// The sum of a scrape's series that start with `family` and contain `labels`.
fn summed(scraped: &str, family: &str, labels: &str) -> f64 {
    scraped
        .lines()
        .filter(|l| l.starts_with(family) && l.contains(labels))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// What [`HttpOnly`] answers every request with.
#[derive(Clone, Copy)]
enum Page {
    /// A proxy with no upstream: 502 and an HTML page, as nginx sends it.
    BadGateway,
    /// A web server: 200 and an HTML page.
    Web,
}

/// An HTTP/2 server that answers every request with a page and never speaks gRPC; stopped (its
/// port closed, every connection with it) when dropped.
struct HttpOnly {
    addr: SocketAddr,
    /// Requests answered so far.
    answered: Arc<AtomicUsize>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HttpOnly {
    fn start(page: Page) -> HttpOnly {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let answered = Arc::new(AtomicUsize::new(0));
        let counted = answered.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let serving = async {
                    loop {
                        let Ok((socket, _)) = listener.accept().await else {
                            continue;
                        };
                        tokio::spawn(answer_pages(socket, page, counted.clone()));
                    }
                };
                tokio::select! {
                    () = serving => {}
                    _ = stopped => {}
                }
            });
            // Dropping the runtime ends every connection's task, and closes its socket.
        });
        HttpOnly {
            addr,
            answered,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for HttpOnly {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn answer_pages(socket: tokio::net::TcpStream, page: Page, answered: Arc<AtomicUsize>) {
    let Ok(mut connection) = h2::server::handshake(socket).await else {
        return;
    };
    while let Some(Ok((_request, mut respond))) = connection.accept().await {
        let (status, body) = match page {
            Page::BadGateway => (
                502,
                "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
            ),
            Page::Web => (200, "<!doctype html><html><body>Welcome</body></html>"),
        };
        let response = http::Response::builder()
            .status(status)
            .header("content-type", "text/html")
            .body(())
            .unwrap();
        if let Ok(mut send) = respond.send_response(response, false) {
            let _ = send.send_data(bytes::Bytes::from_static(body.as_bytes()), true);
        }
        answered.fetch_add(1, Ordering::SeqCst);
    }
}

/// An address that answers with a web page among daemons is left out with one warning that
/// says what it answered; the run ends well over the daemon.
#[test]
fn a_web_server_among_the_daemons_is_left_out_with_one_warning() {
    let scratch = Scratch::new("web-page");
    let (input, solve) = scratch.corpus_solved(2);
    let daemon = Daemon::start(&["--workers", "1"]);
    let web = HttpOnly::start(Page::Web);
    let web_url = format!("http://{}", web.addr);
    let out = patience()
        .args(&["client", "--addr", &web_url, "--addr", &daemon.addr, &input])
        .output();
    let stderr = out.stderr_str();
    assert_eq!(out.code(), Some(0), "{stderr}");
    assert!(out.stdout == solve.stdout, "{stderr}");
    let warned = warnings(stderr);
    assert_eq!(warned.len(), 1, "{stderr}");
    assert!(
        warned[0].contains(&web.addr.to_string())
            && warned[0].contains("left out")
            && warned[0].contains("HTTP 200"),
        "{stderr}"
    );
}

/// A proxy that answers 502 for ever (no daemon behind it ever comes up) is given up on after
/// `--give-up-after`, not before and not never, with the proxy's answer said in the error: the
/// calls it opens prove nothing.
#[test]
fn a_proxy_answering_502_for_ever_is_given_up_on_after_the_wait() {
    let proxy = HttpOnly::start(Page::BadGateway);
    let started = Instant::now();
    let out = patience()
        .args(&[
            "client",
            "--addr",
            &format!("http://{}", proxy.addr),
            "--give-up-after",
            "2s",
            &data("sample.in"),
        ])
        .output();
    let waited = started.elapsed();
    let stderr = out.stderr_str();
    assert_eq!(out.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty(), "{stderr}");
    // Its calls opened, but nothing ever answered: said so, with why.
    assert!(
        stderr.contains("none ever answered") && stderr.contains("HTTP 502 Bad Gateway"),
        "{stderr}"
    );
    assert!(
        waited >= Duration::from_secs(2),
        "gave up after {waited:?}: {stderr}"
    );
    // The limit only catches a run that never ends.
    assert!(
        waited < Duration::from_secs(30),
        "gave up after {waited:?}: {stderr}"
    );
}

/// A proxy that answers 502 at the start (its daemons are not up yet) is waited for within
/// `--give-up-after`, said in words, and the run ends well once a daemon answers there. "There"
/// is a relay's address, held for the whole test: it leads to the 502s, then to the daemon.
#[test]
fn a_proxys_502_at_the_start_is_waited_for_and_said_in_words() {
    let scratch = Scratch::new("bad-gateway");
    let (input, solve) = scratch.corpus_solved(2);
    let proxy = HttpOnly::start(Page::BadGateway);
    let there = DelayProxy::plain(&proxy.addr.to_string());
    let client = patience()
        .args(&[
            "client",
            "--addr",
            &there.url(),
            "--give-up-after",
            "60s",
            &input,
        ])
        .running();
    // Several tries at the 502 (0.5 s, then 1 s, 2 s... apart), counted where they arrive.
    let answered = proxy.answered.clone();
    wait_until_blocking(HANG_LIMIT, "the client tries the 502 twice", || {
        answered.load(Ordering::SeqCst) >= 2
    });
    let daemon = Daemon::start(&["--workers", "1"]);
    there.retarget(&daemon.socket.to_string());
    // Closes the proxy's connections, which the relay passes on: the client's next try is the
    // daemon's.
    drop(proxy);
    let (out, code, stderr) = client.finish(String::new());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(out.as_bytes() == solve.stdout.as_slice(), "{stderr}");
    assert!(
        stderr.contains("a proxy answered HTTP 502 Bad Gateway"),
        "{stderr}"
    );
}
