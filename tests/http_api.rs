//! The plain HTTP API (`POST /v1/solve`, `POST /v1/rps`) as people call it: with curl, over
//! HTTP/1.1 and h2c, against a real daemon. Its lines are compared with the seed solvers' answers
//! (tests/data) byte for byte, and with what `patience solve` prints for the same bytes on
//! standard input, `error:` lines included.

use crate::common;

use std::process::Command;

use common::{Daemon, Scratch, corpus, data, patience, request, text};
use tokio_stream::wrappers::ReceiverStream;

/// What curl got: the status code, the headers (lower-case names) and the body.
struct Got {
    code: u16,
    head: String,
    body: String,
    stderr: String,
    exit: Option<i32>,
}

impl Got {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// `curl -sS ARGS URL`, the body kept apart from the headers of the final answer.
fn curl(scratch: &Scratch, args: &[&str], url: &str) -> Got {
    let head = scratch.join("head");
    let body = scratch.join("body");
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "120", "-D"])
        .arg(&head)
        .arg("-o")
        .arg(&body)
        .args(["-w", "%{http_code}"])
        .args(args)
        .arg(url)
        .output()
        .expect("curl runs (it is installed by .ci/run)");
    Got {
        code: String::from_utf8_lossy(&out.stdout).parse().unwrap_or(0),
        // With `Expect: 100-continue`, curl writes the interim answer's head first: keep the last.
        head: std::fs::read_to_string(&head)
            .unwrap_or_default()
            .rsplit("\r\n\r\n")
            .find(|h| !h.trim().is_empty())
            .unwrap_or_default()
            .to_string(),
        body: std::fs::read_to_string(&body).unwrap_or_default(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        exit: out.status.code(),
    }
}

/// A file in the layouts `solve` reads, with bad deals between good ones: the sample with a card
/// twice, the sample on one line, blank lines, twelve hand-made deals, a one-line deal with a
/// token that is not a card, the sample again.
fn mixed(scratch: &Scratch) -> String {
    let sample = text("sample.in");
    let one_line = sample.split_whitespace().collect::<Vec<_>>().join(" ") + "\n";
    let mut bytes = sample.replace("7C", "6S");
    bytes.push_str(&one_line);
    bytes.push_str("\n\n");
    bytes.push_str(&text("extra12.in"));
    bytes.push_str(&one_line.replace("KS", "ZZ"));
    bytes.push_str(&sample);
    scratch.write("mixed.in", bytes)
}

#[test]
fn deals_over_http_are_the_reference_s_lines_and_solve_s_byte_for_byte() {
    let scratch = Scratch::new("http-solve");
    let daemon = Daemon::start(&["--workers", "2"]);
    let url = format!("{}/v1/solve", daemon.addr);
    let random = data("random1000.in");
    let reference = text("random1000.out6");

    let posted = curl(&scratch, &["--data-binary", &format!("@{random}")], &url);
    assert_eq!(posted.code, 200, "{}", posted.stderr);
    assert_eq!(
        posted.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert!(posted.body == reference, "--data-binary: not the reference");

    // `-T` streams the file (PUT unless told otherwise); h2c as well as HTTP/1.1.
    for extra in [&[][..], &["--http2-prior-knowledge"][..]] {
        let mut args = vec!["-X", "POST", "-T", &random];
        args.extend_from_slice(extra);
        let streamed = curl(&scratch, &args, &url);
        assert_eq!(streamed.code, 200, "{extra:?}: {}", streamed.stderr);
        assert!(
            streamed.body == reference,
            "-T {extra:?}: not the reference"
        );
    }

    // Bad deals answered in place, as `solve` prints them for the same bytes on standard input.
    let mixed = mixed(&scratch);
    let solve = patience()
        .arg("solve")
        .stdin(std::fs::read(&mixed).unwrap())
        .output();
    assert_eq!(solve.code(), Some(1));
    assert!(
        solve
            .stdout_str()
            .starts_with("error: deal 1 (line 9): 6S appears twice")
    );
    let got = curl(&scratch, &["--data-binary", &format!("@{mixed}")], &url);
    assert_eq!(got.code, 200, "{}", got.stderr);
    assert_eq!(got.body, solve.stdout_str());
    // Probabilities where the reference has them: the sample's, and the twelve hand-made deals'.
    let lines: Vec<&str> = got.body.lines().collect();
    let sample = text("sample.out6");
    assert_eq!(lines.len(), 16);
    assert_eq!([lines[1], lines[15]], [sample.trim_end(); 2]);
    assert_eq!(lines[2..14].join("\n") + "\n", text("extra12.out6"));
    assert!(
        lines[14].starts_with("error: deal 15 (line 121)"),
        "{}",
        lines[14]
    );

    // A gzip body is read through.
    let gzipped = scratch.join("random1000.in.gz");
    let status = Command::new("sh")
        .args([
            "-c",
            &format!("gzip -c '{random}' > '{}'", gzipped.display()),
        ])
        .status()
        .unwrap();
    assert!(status.success());
    let gz = curl(
        &scratch,
        &[
            "-H",
            "Content-Encoding: gzip",
            "--data-binary",
            &format!("@{}", gzipped.display()),
        ],
        &url,
    );
    assert_eq!(gz.code, 200, "{}", gz.stderr);
    assert!(gz.body == reference, "gzip: not the reference");
    // A zstd body (libzstd's), with its header or without: read by its bytes, as files are.
    let zstd = scratch.write(
        "random1000.in.zst",
        zstd::encode_all(std::fs::read(&random).unwrap().as_slice(), 3).unwrap(),
    );
    let body = format!("@{zstd}");
    for header in [&["-H", "Content-Encoding: zstd"][..], &[]] {
        let args = [header, &["--data-binary", &body]].concat();
        let zst = curl(&scratch, &args, &url);
        assert_eq!(zst.code, 200, "{header:?}: {}", zst.stderr);
        assert!(zst.body == reference, "zstd {header:?}: not the reference");
    }
    // A header naming a compression the bytes are not: said, and nothing answered.
    let liar = curl(
        &scratch,
        &[
            "-H",
            "Content-Encoding: gzip",
            "--data-binary",
            &format!("@{zstd}"),
        ],
        &url,
    );
    assert_eq!(liar.code, 400, "{}", liar.body);
    assert!(
        liar.body
            .contains("Content-Encoding: gzip, but it is not gzip data"),
        "{}",
        liar.body
    );
}

#[test]
fn the_query_asks_what_solve_s_flags_ask() {
    let scratch = Scratch::new("http-query");
    let daemon = Daemon::start(&["--workers", "1"]);
    let url = |q: &str| format!("{}/v1/solve?{q}", daemon.addr);
    let extra = format!("@{}", data("extra12.in"));

    let nine = curl(&scratch, &["--data-binary", &extra], &url("precision=9"));
    assert_eq!(nine.code, 200, "{}", nine.stderr);
    assert_eq!(nine.body, text("extra12.out9"));

    let mixed = mixed(&scratch);
    let flags = ["--format", "json", "--exact", "--moves", "--line"];
    let solve = patience()
        .arg("solve")
        .args(&flags)
        .stdin(std::fs::read(&mixed).unwrap())
        .output();
    let json = curl(
        &scratch,
        &["--data-binary", &format!("@{mixed}")],
        &url("format=json&exact&moves=true&line=1"),
    );
    assert_eq!(json.code, 200, "{}", json.stderr);
    assert_eq!(json.header("content-type"), Some("application/x-ndjson"));
    assert_eq!(json.body, solve.stdout_str());
    assert!(json.body.contains("\"exact\":\""), "{}", json.body);

    // What `solve` refuses, the API refuses in the same words, as 400.
    let text_only = curl(&scratch, &["--data-binary", &extra], &url("moves"));
    assert_eq!(text_only.code, 400);
    assert!(text_only.body.contains("JSON only"), "{}", text_only.body);
    let unknown = curl(&scratch, &["--data-binary", &extra], &url("colour=red"));
    assert_eq!(unknown.code, 400);
    assert!(unknown.body.contains("\"colour\""), "{}", unknown.body);
    let precision = curl(&scratch, &["--data-binary", &extra], &url("precision=99"));
    assert_eq!(precision.code, 400);
    assert!(precision.body.contains("0 to 17"), "{}", precision.body);
}

#[test]
fn rps_over_http_is_the_reference_s_lines() {
    let scratch = Scratch::new("http-rps");
    let daemon = Daemon::start(&["--workers", "1"]);
    let cases = format!("@{}", data("rps-random120.in"));
    let got = curl(
        &scratch,
        &["--data-binary", &cases],
        &format!("{}/v1/rps?precision=10", daemon.addr),
    );
    assert_eq!(got.code, 200, "{}", got.stderr);
    assert_eq!(got.body, text("rps-random120.out10"));
    let analysis = curl(
        &scratch,
        &["--data-binary", &cases],
        &format!("{}/v1/rps?exact", daemon.addr),
    );
    assert_eq!(analysis.code, 400, "deal analysis is not for cases");
}

#[test]
fn what_is_not_a_call_gets_an_http_answer_in_words() {
    let scratch = Scratch::new("http-words");
    let daemon = Daemon::start(&["--workers", "1"]);
    let url = format!("{}/v1/solve", daemon.addr);
    let get = curl(&scratch, &[], &url);
    assert_eq!(get.code, 405);
    assert_eq!(get.header("allow"), Some("POST"));
    assert!(get.body.contains("takes POST"), "{}", get.body);
    let brotli = curl(
        &scratch,
        &["-H", "Content-Encoding: br", "--data-binary", "x"],
        &url,
    );
    assert_eq!(brotli.code, 415);
    assert_eq!(
        brotli.header("accept-encoding"),
        Some("gzip, zstd, identity")
    );
    // A body that is not text ends the answer as `solve` ends its run: said, before any line.
    let nul = scratch.write("binary.in", b"6S\x007S\n");
    let binary = curl(&scratch, &["--data-binary", &format!("@{nul}")], &url);
    assert_eq!(binary.code, 400, "{}", binary.body);
    assert!(binary.body.contains("line 1"), "{}", binary.body);
}

#[test]
fn the_token_guards_the_api_as_it_guards_grpc() {
    let scratch = Scratch::new("http-token");
    let token = scratch.write("token", "s3cret\n");
    let daemon = Daemon::start(&["--workers", "1", "--auth-token-file", &token]);
    let url = format!("{}/v1/solve", daemon.addr);
    let sample = format!("@{}", data("sample.in"));
    for header in [None, Some("Authorization: Bearer wrong")] {
        let mut args = vec!["--data-binary", &sample];
        if let Some(h) = header {
            args.extend(["-H", h]);
        }
        let refused = curl(&scratch, &args, &url);
        assert_eq!(refused.code, 401, "{header:?}");
        assert_eq!(
            refused.header("www-authenticate"),
            Some("Bearer realm=\"patience\"")
        );
        assert_eq!(refused.header("x-patience-reason"), Some("UNAUTHENTICATED"));
        assert!(refused.body.is_empty() || !refused.body.contains("s3cret"));
    }
    let taken = curl(
        &scratch,
        &[
            "--data-binary",
            &sample,
            "-H",
            "Authorization: bearer s3cret",
        ],
        &url,
    );
    assert_eq!(taken.code, 200, "{}", taken.body);
    assert_eq!(taken.body, text("sample.out6"));
}

/// The stream cap counts API calls as the streams they are: with the one place taken by a gRPC
/// stream, an upload is refused with 429, `Retry-After` and the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_stream_cap_is_429_with_retry_after() {
    let scratch = Scratch::new("http-cap");
    let daemon = Daemon::start(&["--workers", "1", "--max-open-streams", "1"]);
    let (deals, _) = corpus("random1000");
    let (held, requests) = tokio::sync::mpsc::channel(1);
    held.send(request(&deals[..1], 0)).await.unwrap();
    let mut client = daemon.client().await;
    let mut open = client
        .solve_stream(ReceiverStream::new(requests))
        .await
        .unwrap()
        .into_inner();
    open.message()
        .await
        .unwrap()
        .expect("the held stream answers");

    let url = format!("{}/v1/solve", daemon.addr);
    let sample = format!("@{}", data("sample.in"));
    let got =
        tokio::task::spawn_blocking(move || curl(&scratch, &["--data-binary", &sample], &url))
            .await
            .unwrap();
    assert_eq!(got.code, 429, "{}", got.body);
    assert_eq!(got.header("retry-after"), Some("1"));
    assert_eq!(got.header("x-patience-reason"), Some("MAX_OPEN_STREAMS"));
    assert!(got.body.contains("--max-open-streams"), "{}", got.body);
    drop(held);
}

/// A 500,000-deal body (54 MB) streamed through: every line the reference's, while the daemon's
/// peak memory stays a small fraction of the body (the bound in docs/operations.md).
#[test]
fn a_500000_deal_upload_is_answered_in_flat_memory() {
    let scratch = Scratch::new("http-big");
    let input = scratch.repeated_corpus(500);
    let daemon = Daemon::start(&["--workers", "2"]);
    let before = daemon.peak_rss_kib();
    let got = curl(
        &scratch,
        &["-X", "POST", "-T", &input],
        &format!("{}/v1/solve", daemon.addr),
    );
    assert_eq!((got.code, got.exit), (200, Some(0)), "{}", got.stderr);
    let reference = text("random1000.out6");
    assert_eq!(got.body.len(), 500 * reference.len());
    assert!(
        got.body == reference.repeat(500),
        "not the reference, 500 times"
    );
    let peak = daemon.peak_rss_kib();
    eprintln!("daemon peak RSS {before} KiB before the upload, {peak} KiB after");
    assert!(peak < 48 * 1024, "peak RSS {peak} KiB for a 54 MB body");
}

/// The reasons a client may get, listed where users look for them: docs/api.md's table and the
/// proto's comment, each naming every reason the daemon sends and no other. (The README links to
/// the table.)
#[test]
fn every_reason_is_listed_in_the_api_page_and_the_proto() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap();
    let names = |text: &str| -> std::collections::BTreeSet<String> {
        text.split(|c: char| !(c.is_ascii_uppercase() || c == '_'))
            .filter(|w| patience::proto::reason::NAMES.contains(w) || w.starts_with("MAX_"))
            .map(str::to_string)
            .collect()
    };
    let all: std::collections::BTreeSet<String> = patience::proto::reason::NAMES
        .iter()
        .map(|n| n.to_string())
        .collect();
    let api = common::doc_section("docs/api.md", "### The reasons");
    let proto = read("proto/patience/v1/patience.proto");
    let proto = &proto[proto.find("// Errors.").unwrap()..proto.find("syntax").unwrap()];
    for (place, text) in [("docs/api.md", api.as_str()), ("proto", proto)] {
        assert_eq!(names(text), all, "{place}");
    }
}

/// The curl examples of the README and of docs/api.md, run against a daemon.
#[test]
fn the_documented_curl_examples_print_what_they_show() {
    let daemon = Daemon::start(&["--workers", "1"]);
    let socket = daemon.socket.to_string();
    common::doc_examples("README.md", "### Without a gRPC stack")
        .rewrite("127.0.0.1:50051", &socket)
        .run();
    common::doc_examples("docs/api.md", "## Plain HTTP")
        .rewrite("127.0.0.1:50051", &socket)
        .at_least(4)
        .run();
}

/// The gRPC-Web example (`buf curl --protocol grpcweb`) of docs/api.md, when buf is there:
/// `.ci/run` installs it and sets `PATIENCE_BUF`, which makes it required.
#[test]
fn the_documented_grpc_web_call_answers_the_sample() {
    let buf = std::env::var("PATIENCE_BUF").ok().or_else(|| {
        let local = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target/tools/buf/node_modules/.bin/buf");
        local.is_file().then(|| local.display().to_string())
    });
    let Some(buf) = buf else {
        eprintln!("note: skipping the gRPC-Web example: no buf (.ci/run installs it)");
        return;
    };
    let daemon = Daemon::start(&["--workers", "1"]);
    let doc = "docs/api.md";
    let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(doc))
        .unwrap();
    let start = text.find("buf curl --protocol grpcweb -d").expect(doc);
    let end = start + text[start..].find("/Solve").unwrap() + "/Solve".len();
    let command = text[start..end]
        .replace("\\\n", " ")
        .replacen("buf", &buf, 1)
        .replace("http://127.0.0.1:50051", &daemon.addr);
    let out = Command::new("sh").args(["-c", &command]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("\"probability\": 0.5893141864127796"),
        "{doc}: $ {command}\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
