//! One port, every protocol a client may speak: compressed gRPC both ways, gRPC-Web (binary and
//! text) with CORS, HTTP/1.1 answered in HTTP/1.1, HTTP 415 for a gRPC path without a gRPC
//! content type, the bearer scheme in any case. On the wire, against a real daemon.

use crate::common;

use std::io::{Read as _, Write as _};
use std::net::SocketAddr;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use common::{Daemon, Scratch, TOLERANCE, TestServer, config, corpus, probability, request, wire};
use patience::proto::solver_client::SolverClient;
use patience::proto::{SolveRequest, SolveResponse};
use patience::server::ServerConfig;
use prost::Message as _;
use tonic::codec::CompressionEncoding;

/// One gRPC message on the wire, uncompressed.
fn frame(message: &impl prost::Message) -> Vec<u8> {
    let body = message.encode_to_vec();
    let mut out = vec![0];
    out.extend_from_slice(&u32::try_from(body.len()).unwrap().to_be_bytes());
    out.extend(body);
    out
}

/// The messages of a gRPC body: each one's compression flag and payload.
fn messages(mut body: Bytes) -> Vec<(u8, Bytes)> {
    let mut out = Vec::new();
    while body.has_remaining() {
        let flag = body.get_u8();
        let len = body.get_u32() as usize;
        out.push((flag, body.split_to(len)));
    }
    out
}

/// A response: its status line's code, its headers (lower-case names), its body.
struct Answer {
    code: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request on a new connection, `Connection: close`, read to its end (chunked
/// bodies are put back together).
fn http1(socket: SocketAddr, head: &str, body: &[u8]) -> Answer {
    let mut tcp = std::net::TcpStream::connect(socket).unwrap();
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let request = format!(
        "{head}\r\nHost: {socket}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    tcp.write_all(request.as_bytes()).unwrap();
    tcp.write_all(body).unwrap();
    let mut raw = Vec::new();
    tcp.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP/1.1 head in {:?}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines.next().unwrap_or_default();
    assert!(status.starts_with("HTTP/1.1 "), "{status}");
    let code = status[9..12].parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v == "chunked")
    {
        body = dechunk(&body);
    }
    Answer {
        code,
        headers,
        body,
    }
}

fn dechunk(mut chunked: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let end = chunked.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = usize::from_str_radix(std::str::from_utf8(&chunked[..end]).unwrap().trim(), 16)
            .unwrap();
        chunked = &chunked[end + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&chunked[..size]);
        chunked = &chunked[size + 2..];
    }
}

/// gzip and zstd both ways through a tonic client: requests compressed by the client are read,
/// and the answers come back compressed (the response says which encoding), with every result in
/// order and right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_calls_both_ways_through_a_tonic_client() {
    let (deals, expected) = corpus("random1000");
    let server = TestServer::start(1, config()).await;
    for encoding in [CompressionEncoding::Gzip, CompressionEncoding::Zstd] {
        let mut client = SolverClient::new(server.channel().await)
            .send_compressed(encoding)
            .accept_compressed(encoding);
        let requests = common::requests(&deals, 100, 1);
        let response = client
            .solve_stream(tokio_stream::iter(requests))
            .await
            .unwrap();
        let name = format!("{encoding}");
        assert_eq!(
            response
                .metadata()
                .get("grpc-encoding")
                .and_then(|v| v.to_str().ok()),
            Some(name.as_str())
        );
        let mut inbound = response.into_inner();
        let mut next = 0;
        while let Some(message) = inbound.message().await.unwrap() {
            for result in message.results {
                assert_eq!(result.index, next as u64);
                assert!((probability(&result) - expected[next]).abs() <= TOLERANCE);
                next += 1;
            }
        }
        assert_eq!(next, deals.len(), "{encoding}");
        let one = client.solve(request(&deals[..1], 0)).await.unwrap();
        assert!((probability(&one.into_inner().results[0]) - expected[0]).abs() <= TOLERANCE);
    }
    server.stop().await;
}

/// The raw messages of a unary `Solve` sent with `grpc-accept-encoding: gzip`: the response's
/// headers and its messages.
async fn raw_solve(
    socket: SocketAddr,
    request: &SolveRequest,
) -> (http::HeaderMap, Vec<(u8, Bytes)>) {
    let tcp = tokio::net::TcpStream::connect(socket).await.unwrap();
    let (mut sender, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let call = http::Request::post(format!("http://{socket}/patience.v1.Solver/Solve"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("grpc-accept-encoding", "gzip")
        .body(())
        .unwrap();
    let (response, mut send) = sender.send_request(call, false).unwrap();
    send.send_data(Bytes::from(frame(request)), true).unwrap();
    let (head, mut body) = response.await.unwrap().into_parts();
    let mut bytes = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        bytes.put(chunk);
    }
    (head.headers, messages(bytes.freeze()))
}

/// `--compress-min-bytes`: an answer of one deal (about 20 bytes) goes uncompressed, one of 100
/// deals compressed (flag 1, and it decompresses to the right answer); with compression off,
/// nothing is, and the response names no encoding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_are_compressed_from_the_minimum_size_and_not_when_off() {
    let (deals, expected) = corpus("random1000");
    let server = TestServer::start(1, config()).await;
    let (headers, small) = raw_solve(server.socket, &request(&deals[..1], 0)).await;
    assert_eq!(headers.get("grpc-encoding").unwrap(), "gzip");
    assert_eq!(small.len(), 1);
    assert_eq!(small[0].0, 0, "a one-deal answer was compressed");
    let (_, large) = raw_solve(server.socket, &request(&deals[..100], 0)).await;
    assert_eq!(large[0].0, 1, "a 100-deal answer was not compressed");
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(&large[0].1[..])
        .read_to_end(&mut plain)
        .unwrap();
    let answer = SolveResponse::decode(&plain[..]).unwrap();
    assert_eq!(answer.results.len(), 100);
    assert!((probability(&answer.results[99]) - expected[99]).abs() <= TOLERANCE);
    server.stop().await;

    let off = TestServer::start(
        1,
        ServerConfig {
            compress_min_bytes: None,
            ..config()
        },
    )
    .await;
    let (headers, large) = raw_solve(off.socket, &request(&deals[..100], 0)).await;
    assert!(headers.get("grpc-encoding").is_none(), "{headers:?}");
    assert_eq!(large[0].0, 0);
    off.stop().await;
}

/// A request compressed with an encoding the daemon does not take is UNIMPLEMENTED with details,
/// and the answer says which encodings it takes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_request_encoding_is_refused_naming_those_taken() {
    let server = TestServer::start(1, config()).await;
    let tcp = tokio::net::TcpStream::connect(server.socket).await.unwrap();
    let (mut sender, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let call = http::Request::post(format!("http://{}/patience.v1.Solver/Solve", server.socket))
        .header("content-type", "application/grpc")
        .header("grpc-encoding", "snappy")
        .body(())
        .unwrap();
    let (response, mut send) = sender.send_request(call, false).unwrap();
    send.send_data(Bytes::from(vec![1, 0, 0, 0, 1, 9]), true)
        .unwrap();
    let response = response.await.unwrap();
    let headers = response.headers();
    assert_eq!(headers.get("grpc-status").unwrap(), "12", "{headers:?}");
    assert_eq!(headers.get("grpc-accept-encoding").unwrap(), "zstd,gzip");
    let status = tonic::Status::from_header_map(headers).unwrap();
    let said = common::assert_reason(&status, "UNSUPPORTED_ENCODING");
    assert_eq!(said["encoding"], "snappy");
    server.stop().await;
}

/// HTTP/1.1 to the gRPC port gets an HTTP/1.1 answer in words (it used to get a raw HTTP/2
/// frame and a reset); a JSON body to a gRPC method gets 415, over HTTP/1.1 and over HTTP/2
/// (gRPC would have read it as a message with compression flag 123).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_gets_http_answers_and_json_to_a_grpc_method_415() {
    let daemon = Daemon::start(&["--workers", "1"]);
    let socket = daemon.socket;
    // `/` is the analysis board (tests/ui.rs): a path nobody serves.
    let answer = tokio::task::spawn_blocking(move || http1(socket, "GET /nothing HTTP/1.1", b""))
        .await
        .unwrap();
    assert_eq!(answer.code, 404);
    assert!(String::from_utf8_lossy(&answer.body).contains("/v1/solve"));
    let json = br#"{"deals":[{"cards":"AS 9S"}]}"#;
    let answer = tokio::task::spawn_blocking(move || {
        http1(
            socket,
            "POST /patience.v1.Solver/Solve HTTP/1.1\r\nContent-Type: application/json",
            json,
        )
    })
    .await
    .unwrap();
    assert_eq!(
        answer.code,
        415,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    assert!(
        answer
            .header("accept-post")
            .unwrap()
            .contains("application/grpc")
    );

    let tcp = tokio::net::TcpStream::connect(socket).await.unwrap();
    let (mut sender, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let call = http::Request::post(format!("http://{socket}/patience.v1.Solver/Solve"))
        .header("content-type", "application/json")
        .body(())
        .unwrap();
    let (response, mut send) = sender.send_request(call, false).unwrap();
    send.send_data(Bytes::from_static(json), true).unwrap();
    assert_eq!(response.await.unwrap().status(), 415);
}

/// The gRPC-Web trailer frame (flag 0x80) of a body: its `name: value` lines.
fn web_trailers(body: Bytes) -> (Vec<Bytes>, String) {
    let mut data = Vec::new();
    let mut trailers = String::new();
    for (flag, payload) in messages(body) {
        if flag & 0x80 != 0 {
            trailers = String::from_utf8_lossy(&payload).into_owned();
        } else {
            data.push(payload);
        }
    }
    (data, trailers)
}

/// gRPC-Web, as a browser speaks it over HTTP/1.1: a unary `Solve` and a server-streaming use of
/// `SolveStream` (one request, many answers), binary and base64 text; the status comes in the
/// body's trailer frame.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_web_unary_and_server_streaming_binary_and_text() {
    let (deals, expected) = corpus("random1000");
    let daemon = Daemon::start(&["--workers", "1"]);
    let socket = daemon.socket;
    let solve = frame(&request(&deals[..3], 0));
    let unary = {
        let body = solve.clone();
        tokio::task::spawn_blocking(move || {
            http1(
                socket,
                "POST /patience.v1.Solver/Solve HTTP/1.1\r\nContent-Type: application/grpc-web+proto\r\nX-Grpc-Web: 1",
                &body,
            )
        })
        .await
        .unwrap()
    };
    assert_eq!(unary.code, 200);
    assert_eq!(
        unary.header("content-type"),
        Some("application/grpc-web+proto")
    );
    let (data, trailers) = web_trailers(Bytes::from(unary.body));
    assert!(trailers.contains("grpc-status:0"), "{trailers}");
    let answer = SolveResponse::decode(data[0].clone()).unwrap();
    for (i, result) in answer.results.iter().enumerate() {
        assert!((probability(result) - expected[i]).abs() <= TOLERANCE);
    }

    // Server streaming, in text: the body is base64, and so is the answer.
    let many = SolveRequest {
        analysis: None,
        deals: deals[..300].iter().map(|d| wire(d, "")).collect(),
        ..Default::default()
    };
    use base64::Engine as _;
    let text = base64::engine::general_purpose::STANDARD.encode(frame(&many));
    let streamed = tokio::task::spawn_blocking(move || {
        http1(
            socket,
            "POST /patience.v1.Solver/SolveStream HTTP/1.1\r\nContent-Type: application/grpc-web-text\r\nAccept: application/grpc-web-text\r\nX-Grpc-Web: 1",
            text.as_bytes(),
        )
    })
    .await
    .unwrap();
    assert_eq!(streamed.code, 200);
    // tonic-web answers in text when the client accepts it, as grpc-web's JavaScript client asks.
    assert_eq!(
        streamed.header("content-type"),
        Some("application/grpc-web-text+proto")
    );
    // Each piece the server sent is base64 of its own, padded: decode them one by one.
    let mut decoded = Vec::new();
    let text = String::from_utf8(streamed.body).unwrap();
    let mut rest = text.as_str();
    while !rest.is_empty() {
        let end = rest.find('=').map_or(rest.len(), |i| {
            i + rest[i..].chars().take_while(|&c| c == '=').count()
        });
        decoded.extend(
            base64::engine::general_purpose::STANDARD
                .decode(&rest[..end])
                .unwrap(),
        );
        rest = &rest[end..];
    }
    let (data, trailers) = web_trailers(Bytes::from(decoded));
    assert!(trailers.contains("grpc-status:0"), "{trailers}");
    let results: Vec<_> = data
        .into_iter()
        .flat_map(|m| SolveResponse::decode(m).unwrap().results)
        .collect();
    assert_eq!(results.len(), 300);
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result.index, i as u64);
        assert!((probability(result) - expected[i]).abs() <= TOLERANCE);
    }
}

/// CORS: a preflight from an allowed origin is answered with that origin and the gRPC-Web
/// headers; from another origin it gets no allowance; with no `--cors-allow-origin`, cross-origin
/// calls are refused in words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_preflights_are_answered_for_the_allowed_origins_only() {
    let preflight = |socket: SocketAddr, origin: &'static str| {
        tokio::task::spawn_blocking(move || {
            http1(
                socket,
                &format!(
                    "OPTIONS /patience.v1.Solver/Solve HTTP/1.1\r\nOrigin: {origin}\r\n\
                     Access-Control-Request-Method: POST\r\n\
                     Access-Control-Request-Headers: content-type,x-grpc-web,authorization"
                ),
                b"",
            )
        })
    };
    let daemon = Daemon::start(&[
        "--workers",
        "1",
        "--cors-allow-origin",
        "https://app.example",
    ]);
    let allowed = preflight(daemon.socket, "https://app.example")
        .await
        .unwrap();
    assert!(allowed.code < 300, "{}", allowed.code);
    assert_eq!(
        allowed.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    let headers = allowed
        .header("access-control-allow-headers")
        .unwrap_or_default()
        .to_ascii_lowercase();
    assert!(
        headers.contains("x-grpc-web") && headers.contains("authorization"),
        "{headers}"
    );
    let other = preflight(daemon.socket, "https://evil.example")
        .await
        .unwrap();
    assert_eq!(other.header("access-control-allow-origin"), None);

    let closed = Daemon::start(&["--workers", "1"]);
    let refused = preflight(closed.socket, "https://app.example")
        .await
        .unwrap();
    assert_eq!(refused.code, 403);
    assert!(String::from_utf8_lossy(&refused.body).contains("--cors-allow-origin"));
}

/// `authorization: bearer T`, the scheme in lower case, is as good as `Bearer T` on the wire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bearer_scheme_in_lower_case_is_taken() {
    let dir = Scratch::new("lower_bearer");
    let token = dir.write("token", "s3cret\n");
    let daemon = Daemon::start(&["--workers", "1", "--auth-token-file", &token]);
    let (deals, expected) = corpus("sample");
    let mut client = daemon.client().await;
    for scheme in ["bearer", "BEARER", "Bearer"] {
        let mut call = tonic::Request::new(request(&deals, 0));
        call.metadata_mut()
            .insert("authorization", format!("{scheme} s3cret").parse().unwrap());
        let answer = client.solve(call).await.unwrap().into_inner();
        assert!((probability(&answer.results[0]) - expected[0]).abs() <= TOLERANCE);
    }
    let mut wrong = tonic::Request::new(request(&deals, 0));
    wrong
        .metadata_mut()
        .insert("authorization", "bearer nope".parse().unwrap());
    let status = client.solve(wrong).await.unwrap_err();
    common::assert_reason(&status, "UNAUTHENTICATED");
}
