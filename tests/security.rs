//! TLS, mutual TLS and bearer tokens, with throwaway certificates made at test time.

use crate::common;

use common::{
    Authority, DEAD, Daemon, Scratch, TOLERANCE, TestServer, config, corpus, data, patience,
    probability, run, wire,
};
use patience::auth::{AddBearer, Secret};
use patience::proto::SolveRequest;
use patience::proto::solver_client::SolverClient;
use patience::server::{ServerConfig, TlsIdentity};
use tonic::Code;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

fn tls_server(ca: &Authority, client_ca: Option<&Authority>) -> ServerConfig {
    let (cert, key) = ca.issue(&["localhost", "127.0.0.1"]);
    ServerConfig {
        tls: Some(TlsIdentity {
            cert_pem: cert.into_bytes(),
            key_pem: key.into_bytes(),
            client_ca_pem: client_ca.map(|c| c.pem().into_bytes()),
        }),
        ..config()
    }
}

async fn tls_channel(
    server: &TestServer,
    trust: &Authority,
    identity: Option<(String, String)>,
) -> Result<Channel, tonic::transport::Error> {
    let mut tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(trust.pem()));
    if let Some((cert, key)) = identity {
        tls = tls.identity(Identity::from_pem(cert, key));
    }
    Endpoint::from_shared(format!("https://{}", server.socket))
        .unwrap()
        .tls_config(tls)?
        .connect()
        .await
}

async fn one_solve(channel: Channel) -> Result<f64, tonic::Status> {
    let (deals, _) = corpus("random1000");
    let response = SolverClient::new(channel)
        .solve(SolveRequest {
            analysis: None,
            deals: vec![wire(&deals[0], "")],
            ..Default::default()
        })
        .await?;
    Ok(probability(&response.into_inner().results[0]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_serves_trusting_clients_and_nobody_else() {
    let (_, expected) = corpus("random1000");
    let ca = Authority::new();
    let server = TestServer::start(1, tls_server(&ca, None)).await;

    let channel = tls_channel(&server, &ca, None).await.unwrap();
    let p = one_solve(channel).await.unwrap();
    assert!((p - expected[0]).abs() <= TOLERANCE);

    // A client that trusts another authority refuses the server.
    let stranger = Authority::new();
    let refused = match tls_channel(&server, &stranger, None).await {
        Ok(channel) => one_solve(channel).await.is_err(),
        Err(_) => true,
    };
    assert!(refused, "a client trusted a certificate it has no CA for");

    // Plain text gets nowhere.
    let plain = Endpoint::from_shared(server.addr.clone())
        .unwrap()
        .connect()
        .await;
    let refused = match plain {
        Ok(channel) => one_solve(channel).await.is_err(),
        Err(_) => true,
    };
    assert!(refused, "a plain-text client was served by a TLS server");
    assert_eq!(server.pool.stats().done(), 1);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_needs_a_client_certificate_from_the_client_ca() {
    let (_, expected) = corpus("random1000");
    let server_ca = Authority::new();
    let client_ca = Authority::new();
    let server = TestServer::start(1, tls_server(&server_ca, Some(&client_ca))).await;

    let good = client_ca.issue(&["client"]);
    let channel = tls_channel(&server, &server_ca, Some(good)).await.unwrap();
    let p = one_solve(channel).await.unwrap();
    assert!((p - expected[0]).abs() <= TOLERANCE);

    let forged = Authority::new().issue(&["client"]);
    for identity in [None, Some(forged)] {
        let shown = identity.is_some();
        let refused = match tls_channel(&server, &server_ca, identity).await {
            Ok(channel) => one_solve(channel).await.is_err(),
            Err(_) => true,
        };
        assert!(
            refused,
            "served a client without a good certificate (had one: {shown})"
        );
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_token_is_required_for_solving_but_not_for_health() {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

    let (deals, expected) = corpus("random1000");
    let token = Secret::new("correct horse battery staple");
    let config = ServerConfig {
        auth_token: Some(token.clone()),
        ..config()
    };
    let server = TestServer::start(1, config).await;
    let channel = Endpoint::from_shared(server.addr.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let request = || SolveRequest {
        analysis: None,
        deals: vec![wire(&deals[0], "")],
        ..Default::default()
    };

    for wrong in [
        None,
        Some(Secret::new("correct horse battery stapler")),
        Some(Secret::new("x")),
    ] {
        let mut client = SolverClient::with_interceptor(
            channel.clone(),
            AddBearer::new(wrong.as_ref()).unwrap(),
        );
        let status = client.solve(request()).await.unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated, "{wrong:?}");
        common::assert_reason(&status, "UNAUTHENTICATED");
        let status = client
            .solve_stream(tokio_stream::iter(vec![request()]))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated);
    }
    // Refused calls cost no solver time.
    assert_eq!(server.pool.stats().done(), 0);

    let mut client =
        SolverClient::with_interceptor(channel.clone(), AddBearer::new(Some(&token)).unwrap());
    let response = client.solve(request()).await.unwrap().into_inner();
    assert!((probability(&response.results[0]) - expected[0]).abs() <= TOLERANCE);

    let health = HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: "patience.v1.Solver".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(health.status, ServingStatus::Serving as i32);
    // The token's Debug form is redacted, so it cannot reach a log through `{:?}`.
    assert!(!format!("{token:?}").contains("horse"));
    server.stop().await;
}

#[test]
fn the_cli_pair_works_over_mutual_tls_with_a_token_that_never_reaches_the_log() {
    let dir = Scratch::new("tls");
    let file = |name: &str, text: &str| dir.write(name, text);
    let server_ca = Authority::new();
    let client_ca = Authority::new();
    let (cert, key) = server_ca.issue(&["localhost", "127.0.0.1"]);
    let (client_cert, client_key) = client_ca.issue(&["client"]);
    let secret = "s3cr3t-t0ken-that-must-not-leak";
    let paths = [
        file("server.pem", &cert),
        file("server.key", &key),
        file("client-ca.pem", &client_ca.pem()),
        file("server-ca.pem", &server_ca.pem()),
        file("client.pem", &client_cert),
        file("client.key", &client_key),
        file("token", &format!("{secret}\n")),
        file("wrong-token", "nope\n"),
    ];
    let mut daemon = Daemon::start_with(
        &[
            "--workers",
            "2",
            "--tls-cert",
            &paths[0],
            "--tls-key",
            &paths[1],
            "--tls-client-ca",
            &paths[2],
            "--auth-token-file",
            &paths[6],
        ],
        &[("RUST_LOG", "trace")],
        None,
    );
    let addr = format!("https://{}", daemon.socket);
    let input = data("random1000.in");
    let input = input.as_str();
    let client = |token: &str| {
        patience()
            .args(&["client", "--addr", &addr, "--tls-ca", &paths[3]])
            .args(&["--tls-cert", &paths[4], "--tls-key", &paths[5]])
            .args(&["--auth-token-file", token, input])
            .output()
    };
    let solve = run(&["solve", input]);
    let good = client(&paths[6]);
    assert_eq!(
        good.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&good.stderr)
    );
    assert_eq!(good.stdout, solve.stdout);
    let bad = client(&paths[7]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("authorization"));

    daemon.kill();
    let log = daemon.log();
    assert!(log.len() > 10, "the trace log is suspiciously short");
    let leaked: Vec<&String> = log.iter().filter(|l| l.contains(secret)).collect();
    assert!(leaked.is_empty(), "the token is in the log: {leaked:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rps_service_requires_the_bearer_token_too() {
    use patience::proto::rps_service_client::RpsServiceClient;
    use patience::proto::{Gestures, RpsCase, SolveRpsRequest, SolveRpsStreamRequest};

    let token = Secret::new("correct horse battery staple");
    let config = ServerConfig {
        auth_token: Some(token.clone()),
        ..config()
    };
    let server = TestServer::start(1, config).await;
    let channel = Endpoint::from_shared(server.addr.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let case = || RpsCase {
        id: String::new(),
        maze: Some(Gestures {
            rock: 1.0,
            paper: 0.0,
            scissors: 0.0,
        }),
        others: vec![],
    };
    let mut anonymous = RpsServiceClient::new(channel.clone());
    let status = anonymous
        .solve_rps(SolveRpsRequest {
            cases: vec![case()],
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    let status = anonymous
        .solve_rps_stream(tokio_stream::iter(vec![SolveRpsStreamRequest {
            cases: vec![case()],
        }]))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    assert_eq!(server.pool.stats().done(), 0);

    let mut client =
        RpsServiceClient::with_interceptor(channel, AddBearer::new(Some(&token)).unwrap());
    let response = client
        .solve_rps(SolveRpsRequest {
            cases: vec![case()],
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        response.results[0].outcome,
        Some(patience::proto::rps_result::Outcome::Probability(1.0))
    );
    server.stop().await;
}

/// The refusal says once what the daemon wants and once which flag sends it.
#[test]
fn a_client_without_the_token_is_told_once_what_to_give() {
    let dir = Scratch::new("missing_token");
    let token = dir.write("token", "correct horse battery staple\n");
    let daemon = Daemon::start(&["--workers", "1", "--auth-token-file", &token]);
    let out = patience()
        .args(&["client", "--addr", &daemon.addr])
        .arg(data("sample.in"))
        .output();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(stderr.matches("authorization").count(), 1, "{stderr}");
    assert_eq!(stderr.matches("--auth-token-file").count(), 1, "{stderr}");
    assert!(stderr.contains("the call has none"), "{stderr}");
}

/// Rough edge 6: a TLS mismatch is said in words, with the flags that fix it.
#[test]
fn tls_mismatches_tell_the_client_what_to_use() {
    let dir = Scratch::new("tls_hints");
    let server_ca = Authority::new();
    let client_ca = Authority::new();
    let (cert, key) = server_ca.issue(&["localhost", "127.0.0.1"]);
    let cert = dir.write("server.pem", &cert);
    let key = dir.write("server.key", &key);
    let trust = dir.write("server-ca.pem", server_ca.pem());
    let clients = dir.write("client-ca.pem", client_ca.pem());
    let input = data("sample.in");
    let client = |args: &[&str]| {
        let out = patience()
            .args(&["client", "--give-up-after", "0"])
            .args(args)
            .arg(&input)
            .output();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };

    let tls = Daemon::start(&["--workers", "1", "--tls-cert", &cert, "--tls-key", &key]);
    let plain = client(&["--addr", &format!("http://{}", tls.socket)]);
    assert!(
        plain.contains("use an https:// address with --tls-ca"),
        "{plain}"
    );

    let mutual = Daemon::start(&[
        "--workers",
        "1",
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "--tls-client-ca",
        &clients,
    ]);
    let anonymous = client(&[
        "--addr",
        &format!("https://{}", mutual.socket),
        "--tls-ca",
        &trust,
    ]);
    assert!(
        anonymous.contains("give --tls-cert and --tls-key"),
        "{anonymous}"
    );
}

/// The bodies of the fenced blocks of `text` marked `lang`, in order.
fn fenced(text: &str, lang: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.strip_prefix("```") == Some(lang) {
            let body: String = lines
                .by_ref()
                .take_while(|l| !l.starts_with("```"))
                .map(|l| format!("{l}\n"))
                .collect();
            blocks.push(body);
        }
    }
    blocks
}

/// The certificate recipe of `docs/serving.md` works as written. Its first shell block (the
/// `openssl` commands), run with `sh` in an empty directory, makes a CA, a server certificate and
/// a client certificate; the daemon started as its next block says (on a free port instead of the
/// default) then requires mutual TLS, and the client `$` example, run in that directory against
/// it, prints the sample deal's answer (`tests/data/sample.out6`). The v1 certificate the doc warns
/// about (the recipe's own `openssl x509 -req` without `-extfile`) is refused by the daemon.
/// Without `openssl` the test says so and checks nothing, unless `PATIENCE_REQUIRE_OPENSSL` is set
/// (`.ci/run` sets it, after installing openssl): then it fails.
#[test]
fn the_documented_certificate_recipe_makes_certificates_for_mutual_tls() {
    use std::process::Command;
    if let Err(e) = Command::new("openssl").arg("version").output() {
        skip_without_openssl(&e);
        return;
    }
    let heading = "## A certificate recipe";
    let section = common::doc_section("docs/serving.md", heading);
    let blocks = fenced(&section, "sh");
    assert_eq!(
        blocks.len(),
        3,
        "the recipe, the daemon, the client: {blocks:#?}"
    );
    assert!(
        blocks[2].contains(&format!("\n{}", common::text("sample.out6"))),
        "the client example does not print sample.out6's answer: {}",
        blocks[2]
    );
    let dir = Scratch::new("recipe");
    let recipe = Command::new("sh")
        .args(["-e", "-c", &blocks[0]])
        .current_dir(dir.path())
        .output()
        .expect("run sh");
    assert!(recipe.status.success(), "the recipe failed: {recipe:?}");

    // The daemon, as the doc starts it, each file it names taken from the recipe's directory.
    let in_dir = |arg: &str| {
        let path = dir.join(arg);
        if path.is_file() {
            path.display().to_string()
        } else {
            arg.to_string()
        }
    };
    let serve = blocks[1].trim();
    assert!(!serve.contains('\n'), "one command: {serve}");
    let mut args = vec!["--workers".to_string(), "1".to_string()];
    args.extend(
        serve
            .strip_prefix("patience serve ")
            .unwrap_or_else(|| panic!("not `patience serve`: {serve}"))
            .split_whitespace()
            .map(in_dir),
    );
    assert!(
        !args.iter().any(|a| a == "--addr"),
        "the test gives the address"
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let daemon = Daemon::start(&args);
    assert!(
        daemon.start_line.contains("tls=\"mutual\""),
        "{}",
        daemon.start_line
    );
    std::fs::copy(data("sample.in"), dir.join("sample.in")).expect("copy the sample");
    common::doc_examples("docs/serving.md", heading)
        .rewrite("127.0.0.1:50051", &daemon.socket.to_string())
        .in_dir(dir.path())
        .run();

    // The server certificate made without its extensions file is X.509 v1, and refused.
    let joined = blocks[0].replace("\\\n", " ");
    let signing = joined
        .lines()
        .find(|l| l.starts_with("openssl x509 -req") && l.contains("-out server.pem"))
        .expect("the recipe signs server.pem with `openssl x509 -req`");
    let v1 = signing
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace(" -extfile server.ext", "")
        .replace("-out server.pem", "-out server-v1.pem");
    let made = Command::new("sh")
        .args(["-e", "-c", &v1])
        .current_dir(dir.path())
        .output()
        .expect("run sh");
    assert!(made.status.success(), "{v1}: {made:?}");
    let mut refused = patience()
        .args(&["serve", "--addr", "127.0.0.1:0", "--workers", "1"])
        .arg("--tls-cert")
        .arg(dir.join("server-v1.pem"))
        .arg("--tls-key")
        .arg(dir.join("server.key"))
        .running();
    common::wait_or_hang(
        &mut refused.child,
        common::HANG_LIMIT,
        "serve with a v1 certificate",
    );
    let (_, code, stderr) = refused.finish(String::new());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("X.509 version 1"), "{stderr}");
    assert!(stderr.contains("-extfile"), "{stderr}");
    assert!(
        !stderr.contains("listening on"),
        "refused after a start was announced: {stderr}"
    );
}

/// Rough edge 2: a token file that cannot be read is one line naming it, with its cause once
/// (the error's message and its source both printed the operating system's words).
#[test]
fn an_unreadable_token_file_is_one_line_with_its_cause_once() {
    let dir = Scratch::new("no_token");
    let missing = dir.join("nosuch").display().to_string();
    let sample = data("sample.in");
    for args in [
        &["client", "--auth-token-file", &missing, &sample][..],
        &[
            "rps",
            "--addr",
            DEAD,
            "--auth-token-file",
            &missing,
            &sample,
        ],
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--auth-token-file",
            &missing,
        ],
    ] {
        let out = patience().args(args).output();
        let stderr = out.stderr_str();
        assert_eq!(out.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("cannot read the token file {missing}")),
            "{args:?}: {stderr}"
        );
        let cause = std::fs::read(&missing).unwrap_err().to_string();
        assert_eq!(stderr.matches(&cause).count(), 1, "{args:?}: {stderr}");
    }
}

/// Says that a test of openssl's certificates is skipped because openssl cannot run (`e`), or
/// fails when `PATIENCE_REQUIRE_OPENSSL` asks for those tests (as `.ci/run` does): a required
/// check that quietly does nothing would pass where it should fail.
fn skip_without_openssl(e: &std::io::Error) {
    assert!(
        std::env::var_os("PATIENCE_REQUIRE_OPENSSL").is_none(),
        "PATIENCE_REQUIRE_OPENSSL is set, but openssl cannot run here ({e})"
    );
    eprintln!("skipped: openssl cannot run here ({e}); install it to test its certificates");
}

/// `openssl ARGS` in `dir`; `None` (and a note saying what is skipped) when openssl is not
/// installed and not required.
fn openssl(dir: &Scratch, args: &[&str]) -> Option<()> {
    let out = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir.path())
        .output();
    match out {
        Err(e) => {
            skip_without_openssl(&e);
            None
        }
        Ok(out) => {
            assert!(out.status.success(), "openssl {args:?}: {out:?}");
            Some(())
        }
    }
}

/// Rough edge 1: a client certificate made the common way (`openssl x509 -req` without
/// extensions) is X.509 version 1, which rustls refuses; the client used to fail every daemon with
/// only "cannot set up TLS for https://...". It now says so in words before dialling anything,
/// naming the file and how to make a certificate it takes; and one made as it says works against
/// a daemon that requires client certificates. A client that presents the version 1 certificate
/// anyway is refused by the daemon, whose log says why (it said nothing at INFO).
#[test]
fn a_version_1_client_certificate_is_named_with_how_to_make_one_that_works() {
    let dir = Scratch::new("v1_client_cert");
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let ca = [
        &["req", "-x509"][..],
        &ec,
        &["-keyout", "ca.key", "-out", "ca.pem"],
    ];
    if openssl(
        &dir,
        &[
            &ca.concat()[..],
            &["-days", "2", "-subj", "/CN=test client CA"],
        ]
        .concat(),
    )
    .is_none()
    {
        return;
    }
    let request = [
        &["req"][..],
        &ec,
        &["-keyout", "client.key", "-out", "client.csr"],
    ];
    openssl(
        &dir,
        &[&request.concat()[..], &["-subj", "/CN=client"]].concat(),
    );
    let sign = [
        "x509",
        "-req",
        "-in",
        "client.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-set_serial",
        "1",
        "-days",
        "2",
    ];
    openssl(&dir, &[&sign[..], &["-out", "v1.pem"]].concat());
    dir.write("client.ext", "subjectAltName=DNS:client\n");
    openssl(
        &dir,
        &[&sign[..], &["-extfile", "client.ext", "-out", "v3.pem"]].concat(),
    );

    let server_ca = Authority::new();
    let (cert, key) = server_ca.issue(&["localhost", "127.0.0.1"]);
    let cert = dir.write("server.pem", cert);
    let key = dir.write("server.key", key);
    let trust = dir.write("server-ca.pem", server_ca.pem());
    let client_ca = dir.join("ca.pem").display().to_string();
    let daemon = Daemon::start(&[
        "--workers",
        "1",
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "--tls-client-ca",
        &client_ca,
    ]);
    let addr = format!("https://{}", daemon.socket);
    let client_key = dir.join("client.key").display().to_string();
    let client = |cert: &str| {
        patience()
            .args(&["client", "--addr", &addr, "--tls-ca", &trust])
            .args(&["--tls-cert", cert, "--tls-key", &client_key])
            .arg(data("sample.in"))
            .output()
    };

    let v1 = dir.join("v1.pem").display().to_string();
    let out = client(&v1);
    let stderr = out.stderr_str();
    assert_eq!(out.code(), Some(2), "{stderr}");
    assert_eq!(out.stdout_str(), "", "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(&v1), "{stderr}");
    assert!(stderr.contains("X.509 version 1"), "{stderr}");
    assert!(stderr.contains("-extfile"), "{stderr}");
    assert!(stderr.contains("openssl req -x509"), "{stderr}");
    assert!(!stderr.contains("every daemon failed"), "{stderr}");

    let out = client(&dir.join("v3.pem").display().to_string());
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    assert_eq!(out.stdout_str(), "0.589314\n");

    // The other end: a client that does present the version 1 certificate (openssl does; tonic
    // and our client refuse to) is refused, and the daemon's log says why at the default level.
    // The log is what shows it: openssl's own view of a TLS 1.3 handshake ends before the alert.
    std::process::Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &daemon.socket.to_string(),
            "-alpn",
            "h2",
        ])
        .args(["-CAfile", &trust, "-cert", &v1, "-key", &client_key])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let line = daemon.line_with("TLS handshake failed", std::time::Duration::from_secs(10));
    assert!(line.contains("refused a connection"), "{line}");
    assert!(line.contains("X.509 version 1"), "{line}");
    assert!(line.contains("INFO"), "{line}");
}
