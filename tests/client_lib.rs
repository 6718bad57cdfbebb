//! The multi-daemon client, through the library and the command line: a daemon that takes every
//! request and never answers is hedged around, and daemons found by name (one name, several
//! addresses, one that appears later) all take part.

use crate::common;

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Daemon, Scratch, Sniffer, TestServer, corpus, data, run, text, wire};
use patience::auth::AddBearer;
use patience::client::discovery::Resolving;
use patience::client::{
    self, Answer, Chunk, ClientConfig, Connector, Event, Resolve, SystemResolver, Target, TlsFiles,
};
use patience::deal::Deal;
use patience::proto::solver_server::{Solver, SolverServer};
use patience::proto::{self, SolveRequest, SolveResponse, result::Outcome};
use patience::solver::Solver as Engine;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

/// A stand-in daemon that accepts every call, reads every request, keeps its connection alive,
/// and never answers.
struct Hung;

type Responses = Pin<Box<dyn futures::Stream<Item = Result<SolveResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Solver for Hung {
    type SolveStreamStream = Responses;

    async fn solve_stream(
        &self,
        request: Request<Streaming<SolveRequest>>,
    ) -> Result<Response<Responses>, Status> {
        let mut inbound = request.into_inner();
        tokio::spawn(async move { while let Ok(Some(_)) = inbound.message().await {} });
        Ok(Response::new(Box::pin(futures::stream::pending())))
    }

    async fn solve(&self, _: Request<SolveRequest>) -> Result<Response<SolveResponse>, Status> {
        std::future::pending().await
    }
}

fn start_hung() -> SocketAddr {
    common::serve(
        std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
        tonic::transport::Server::builder().add_service(SolverServer::new(Hung)),
    )
}

/// A stand-in for a daemon of the API's first version: it reads only `SolveRequest.deals`
/// (ignoring `packed_deals`, as a server built before that field does), answers each deal with
/// the engine, and announces no feature in its response headers.
struct Older;

#[tonic::async_trait]
impl Solver for Older {
    type SolveStreamStream = Responses;

    async fn solve_stream(
        &self,
        request: Request<Streaming<SolveRequest>>,
    ) -> Result<Response<Responses>, Status> {
        let mut inbound = request.into_inner();
        let (tx, rx) = mpsc::channel(4);
        tokio::spawn(async move {
            let mut engine = Engine::new();
            let mut index = 0;
            while let Ok(Some(request)) = inbound.message().await {
                let results = request
                    .deals
                    .iter()
                    .map(|deal| {
                        let parsed = Deal::parse(&deal.cards).expect("a valid deal");
                        index += 1;
                        proto::Result {
                            index: index - 1,
                            id: deal.id.clone(),
                            outcome: Some(Outcome::Probability(engine.solve(&parsed).probability)),
                            analysis: None,
                        }
                    })
                    .collect();
                if tx
                    .send(Ok(SolveResponse {
                        results,
                        ..Default::default()
                    }))
                    .await
                    .is_err()
                {
                    break;
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn solve(&self, _: Request<SolveRequest>) -> Result<Response<SolveResponse>, Status> {
        Err(Status::unimplemented("not in this stand-in"))
    }
}

/// `patience client` sends full deals packed (36 bytes each) to a daemon that announces it reads
/// them, and as text to one that does not (a daemon of the API's first version, which would
/// answer none of them): on the wire a third of the bytes, and the judge's answers either way.
#[test]
fn deals_go_packed_only_to_daemons_that_read_them() {
    let expected = text("random1000.out6");
    let random = data("random1000.in");
    // The bytes of the requests `patience client` sent to the daemon at `upstream`, once its
    // output is checked.
    let request_bytes = |upstream: SocketAddr| {
        let sniffer = Sniffer::start(upstream);
        let addr = format!("http://{}", sniffer.addr);
        let out = run(&["client", "--addr", &addr, &random]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert!(
            out.stdout == expected.as_bytes(),
            "output differs from random1000.out6"
        );
        sniffer.counts().requests.bytes
    };
    let daemon = Daemon::start(&["--workers", "2"]);
    let packed = request_bytes(daemon.socket);
    // 36 bytes a deal, beside each request's few bytes of framing.
    assert!(
        (36_000..37_000).contains(&packed),
        "{packed} request bytes for 1,000 deals"
    );
    let older = common::serve(
        std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
        tonic::transport::Server::builder().add_service(SolverServer::new(Older)),
    );
    // The text form: 107 bytes of cards a deal, and each deal's own message header.
    let plain = request_bytes(older);
    assert!(
        plain > 100_000,
        "{plain} request bytes for 1,000 deals as text"
    );
}

/// A stand-in daemon that never answers, beside a real one: the client hedges the stand-in's
/// chunks onto the real daemon, prints exactly what `solve` prints, and exits 0 within seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_that_never_answers_is_hedged_around() {
    let hung = start_hung();
    let real = Daemon::start(&["--workers", "1"]);
    let scratch = Scratch::new("hedged");
    let input = scratch.write(
        "deals.in",
        run(&["gen", "--count", "20000", "--seed", "12"]).stdout,
    );
    let solve = run(&["solve", &input]);
    let hung = format!("http://{hung}");
    // Short waits: the hedge comes after 200 ms rather than 2 s, and the run does not wait 2 s
    // more at its end for the hung call to close.
    let client = tokio::task::spawn_blocking({
        let (input, real) = (input.clone(), real.addr.clone());
        move || {
            run(&[
                "client",
                "--addr",
                &hung,
                "--addr",
                &real,
                "--hedge-floor",
                "200ms",
                "--late-failures",
                "50ms",
                &input,
            ])
        }
    });
    let client = tokio::time::timeout(Duration::from_secs(120), client)
        .await
        .expect("the client finishes")
        .unwrap();
    let stderr = client.stderr_str();
    assert_eq!(client.code(), Some(0), "{stderr}");
    assert!(
        client.stdout == solve.stdout,
        "the output differs from solve's; stderr: {stderr}"
    );
    assert!(stderr.contains("has answered nothing"), "{stderr}");
}

/// A resolver the test points at its daemons, changing its answer while the run goes on. It
/// answers with the daemons' own addresses, ports included (each bound port 0), whatever the
/// port of the name.
#[derive(Default)]
struct Names(Mutex<Vec<SocketAddr>>);

impl Resolve for Names {
    fn resolve<'a>(&'a self, _name: &'a str, _port: u16) -> Resolving<'a> {
        let addrs = self.0.lock().unwrap().clone();
        Box::pin(async move { Ok(addrs) })
    }
}

/// A listener on 127.0.0.`last`, port 0: one address of a name's.
async fn listener_on(last: u8) -> TcpListener {
    TcpListener::bind(SocketAddr::from(([127, 0, 0, last], 0)))
        .await
        .unwrap()
}

/// A daemon in this process with one worker on 127.0.0.`last`, port 0; its pool shows whether
/// it took work.
async fn daemon_on(last: u8) -> TestServer {
    TestServer::on(listener_on(last).await, 1, common::config())
}

/// One name resolving to daemons on 127.0.0.1 and 127.0.0.2: both take work and every answer is
/// the engine's; a third daemon, on 127.0.0.3, that appears under the name while the run goes on
/// takes work after the next resolution.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemons_found_by_name_all_take_part_and_a_new_one_joins() {
    let daemons = [daemon_on(1).await, daemon_on(2).await];
    let names = Arc::new(Names::default());
    *names.0.lock().unwrap() = daemons.iter().map(|d| d.socket).collect();
    let config = by_name(names.clone());
    let (submit, submissions) = mpsc::channel::<Chunk>(1);
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let run = tokio::spawn(client::run(config, submissions, events_tx));

    let mut rng = fastrand::Rng::with_seed(99);
    let mut engine = Engine::new();
    let mut answers = Vec::new();
    let mut expected = Vec::new();
    for _ in 0..50 {
        answers.push(submit_random(&submit, &mut rng, &mut engine, &mut expected).await);
    }
    let third = daemon_on(3).await;
    names.0.lock().unwrap().push(third.socket);
    // The run goes on until a resolution finds it (the client says so), and the chunks after.
    let mut found = false;
    let _ = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(event) = events.recv().await {
            if matches!(event, Event::Found { .. }) {
                found = true;
                break;
            }
        }
    })
    .await;
    assert!(found, "the new address was not reported");
    let deadline = Instant::now() + Duration::from_secs(60);
    // Sends chunks until the third daemon has answered some, and a few hundred more after.
    let mut after_third = 0;
    while after_third < 200 {
        assert!(
            Instant::now() < deadline,
            "the third daemon never took work"
        );
        answers.push(submit_random(&submit, &mut rng, &mut engine, &mut expected).await);
        if third.pool.stats().done() > 0 {
            after_third += 1;
        }
    }
    drop(submit);
    let got = probabilities(answers, run).await;
    assert_eq!(got.len(), expected.len());
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(g.to_bits(), e.to_bits(), "deal {i}");
    }
    for (i, daemon) in daemons.iter().enumerate() {
        assert!(
            daemon.pool.stats().done() > 0,
            "daemon {} took no work",
            i + 1
        );
    }
}

/// Submits a chunk of 32 random deals, their probabilities by the engine added to `expected`;
/// where its answers will come.
async fn submit_random(
    submit: &mpsc::Sender<Chunk>,
    rng: &mut fastrand::Rng,
    engine: &mut Engine,
    expected: &mut Vec<f64>,
) -> oneshot::Receiver<Vec<Answer>> {
    let deals: Vec<Deal> = (0..32).map(|_| Deal::shuffled(rng)).collect();
    expected.extend(deals.iter().map(|d| engine.solve(d).probability));
    let request = SolveRequest {
        deals: deals.iter().map(|d| wire(d, "")).collect(),
        analysis: None,
        ..Default::default()
    };
    let (reply, answer) = oneshot::channel();
    submit.send(Chunk { request, reply }).await.unwrap();
    answer
}

/// Every chunk's probabilities, in order, once the run that answers them has ended well.
async fn probabilities(
    answers: Vec<oneshot::Receiver<Vec<Answer>>>,
    run: tokio::task::JoinHandle<Result<(), client::ClientError>>,
) -> Vec<f64> {
    let mut got = Vec::new();
    for answer in answers {
        for a in answer.await.expect("every chunk is answered") {
            match a {
                Answer::Solved { probability, .. } => got.push(probability),
                Answer::Failed(e) => panic!("a deal failed: {e}"),
            }
        }
    }
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the run ends")
        .unwrap()
        .expect("the run succeeds");
    got
}

/// Rough edge 10: the hedge floor and the wait for late failures are settings of the client's
/// config (2 s each in production), so a test need not wait them out. Beside a daemon that never
/// answers, with both at 50 ms, a run of two chunks hedges the hung daemon's chunk and ends.
/// (That the dispatcher waits exactly the floor before hedging is `dispatch.rs`'s fake-clock
/// tests'; no test here times it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hedge_floor_and_the_wait_for_late_failures_are_settings() {
    let hung = start_hung();
    let real = Daemon::start(&["--workers", "1"]);
    let targets = vec![
        Target::parse(&format!("http://{hung}")).unwrap(),
        Target::parse(&real.addr).unwrap(),
    ];
    let short = Duration::from_millis(50);
    let config = ClientConfig {
        connector: Connector::new(&targets, &TlsFiles::default()).unwrap(),
        targets,
        bearer: AddBearer::new(None).unwrap(),
        window: client::window(32),
        streams: client::STREAMS,
        stream_max_bytes: client::STREAM_MAX_BYTES,
        asked: None,
        give_up_after: Duration::from_secs(10),
        dns_refresh: Duration::from_secs(30),
        hedge_floor: short,
        late_failures: short,
        close_grace: client::CLOSE_GRACE,
        resolver: Arc::new(SystemResolver),
    };
    let (deals, expected) = corpus("random1000");
    let (submit, submissions) = mpsc::channel::<Chunk>(1);
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let run = tokio::spawn(client::run(config, submissions, events_tx));
    // Both lanes have room and ties go to the first: the hung daemon gets the first chunk.
    let mut answers = Vec::new();
    for chunk in deals[..64].chunks(32) {
        let request = SolveRequest {
            deals: chunk.iter().map(|d| wire(d, "")).collect(),
            analysis: None,
            ..Default::default()
        };
        let (reply, answer) = oneshot::channel();
        submit.send(Chunk { request, reply }).await.unwrap();
        answers.push(answer);
    }
    drop(submit);
    let got = probabilities(answers, run).await;
    assert_eq!(got.len(), 64);
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert!(
            (g - e).abs() <= common::TOLERANCE,
            "deal {i}: {g} against {e}"
        );
    }
    let mut slowed = false;
    while let Ok(event) = events.try_recv() {
        slowed |= matches!(event, Event::Slowed { .. });
    }
    assert!(slowed, "the hung daemon was not hedged");
}

/// A config over `dns:///patience.test:50051`, resolved by `names` (to the daemons' own ports),
/// refreshed every 100 ms.
fn by_name(names: Arc<Names>) -> ClientConfig {
    let targets = vec![Target::parse("dns:///patience.test:50051").unwrap()];
    ClientConfig {
        connector: Connector::new(&targets, &TlsFiles::default()).unwrap(),
        targets,
        bearer: AddBearer::new(None).unwrap(),
        window: client::window(32),
        streams: client::STREAMS,
        stream_max_bytes: client::STREAM_MAX_BYTES,
        asked: None,
        give_up_after: Duration::from_secs(10),
        dns_refresh: Duration::from_millis(100),
        hedge_floor: client::HEDGE_FLOOR,
        late_failures: Duration::from_millis(50),
        close_grace: client::CLOSE_GRACE,
        resolver: names,
    }
}

/// What a run does midway: before chunk `at`, it calls `change` (to the name's addresses), then
/// submits nothing more until the run reports an event that `awaited` accepts.
struct Midway<C, A> {
    at: usize,
    change: C,
    awaited: A,
}

/// A run with no change midway.
type Unchanged = Midway<fn(), fn(&Event) -> bool>;

/// Submits `chunks` chunks of 32 random deals, as fast as the run takes them, doing `midway`'s
/// change and wait before its chunk, and calling `seen` with each of the run's events as it
/// comes; checks every answer against the engine and returns the run's events.
async fn chunked_run(
    config: ClientConfig,
    chunks: usize,
    midway: Option<Midway<impl FnOnce(), impl Fn(&Event) -> bool + Send + 'static>>,
    mut seen: impl FnMut(&Event) + Send + 'static,
) -> Vec<Event> {
    let (submit, submissions) = mpsc::channel::<Chunk>(1);
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let run = tokio::spawn(client::run(config, submissions, events_tx));
    let (at, mut midway, awaited) = match midway {
        Some(Midway {
            at,
            change,
            awaited,
        }) => (at, Some(change), Some(awaited)),
        None => (chunks, None, None),
    };
    let (reported, mut awaited_event) = oneshot::channel();
    // Until the run ends and drops its sender.
    let told = tokio::spawn(async move {
        let mut reported = Some(reported);
        let mut told = Vec::new();
        while let Some(event) = events.recv().await {
            seen(&event);
            if awaited.as_ref().is_some_and(|a| a(&event))
                && let Some(reported) = reported.take()
            {
                let _ = reported.send(());
            }
            told.push(event);
        }
        told
    });
    let mut rng = fastrand::Rng::with_seed(7);
    let mut engine = Engine::new();
    let (mut answers, mut expected) = (Vec::new(), Vec::new());
    for n in 0..chunks {
        if n == at
            && let Some(change) = midway.take()
        {
            change();
            tokio::time::timeout(Duration::from_secs(60), &mut awaited_event)
                .await
                .expect("the run reports the change")
                .expect("the run reports the change before it ends");
        }
        answers.push(submit_random(&submit, &mut rng, &mut engine, &mut expected).await);
    }
    drop(submit);
    let got = probabilities(answers, run).await;
    assert_eq!(got.len(), expected.len());
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(g.to_bits(), e.to_bits(), "deal {i}");
    }
    told.await.unwrap()
}

/// An address removed from the name mid-run is let go: after the next resolution it takes no
/// new chunk (its daemon answers the chunks it held when it was let go, and no more), it is said
/// once, and the run ends well over the address left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_that_leaves_the_name_takes_no_new_chunk() {
    let (stay, leave) = (daemon_on(1).await, daemon_on(2).await);
    let names = Arc::new(Names::default());
    *names.0.lock().unwrap() = vec![stay.socket, leave.socket];
    let config = by_name(names.clone());
    let leaving = leave.socket;
    // When the client says the address left: the jobs its daemon had run by then, and the
    // chunks the client says it still held, which are all it may still answer.
    let at_leaving = Arc::new(Mutex::new(None));
    let noted = at_leaving.clone();
    let pool = leave.pool.clone();
    let events = chunked_run(
        config,
        600,
        Some(Midway {
            at: 150,
            change: move || names.0.lock().unwrap().retain(|a| *a != leaving),
            awaited: |event: &Event| matches!(event, Event::Left { .. }),
        }),
        move |event| {
            if let Event::Left { holding, .. } = event {
                *noted.lock().unwrap() = Some((pool.stats().done(), *holding as u64));
            }
        },
    )
    .await;
    let (done, holding) = at_leaving
        .lock()
        .unwrap()
        .expect("the client said the address left");
    assert!(done > 0, "the leaving daemon never took work");
    // A chunk of 32 deals is this many of the pool's jobs.
    let jobs_per_chunk = 32_u64.div_ceil(patience::service::Limits::default().batch as u64);
    assert!(
        leave.pool.stats().done() <= done + holding * jobs_per_chunk,
        "the daemon that left the name still took work: {} jobs, {done} when it left holding \
         {holding} chunks",
        leave.pool.stats().done()
    );
    assert!(stay.pool.stats().done() > 0);
    let left: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::Left { .. }))
        .collect();
    assert_eq!(left.len(), 1, "{events:?}");
    assert!(
        !events.iter().any(|e| matches!(e, Event::Failed { .. })),
        "{events:?}"
    );
}

/// Another gRPC service (only a health service) on an address the name resolves to, as when a
/// pod's address is reused: it is retired with one event naming it, and the run ends well over
/// the daemon.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_grpc_service_under_the_name_is_retired_and_the_run_goes_on() {
    let daemon = daemon_on(1).await;
    let (_reporter, health) = tonic_health::server::health_reporter();
    let foreign = common::serve(
        std::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 2], 0))).unwrap(),
        tonic::transport::Server::builder().add_service(health),
    );
    let names = Arc::new(Names::default());
    *names.0.lock().unwrap() = vec![foreign, daemon.socket];
    let events = chunked_run(by_name(names), 40, None::<Unchanged>, |_| ()).await;
    assert!(daemon.pool.stats().done() > 0);
    let retired: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Retired { daemon, reason } => Some(format!("{daemon}: {reason}")),
            _ => None,
        })
        .collect();
    assert_eq!(retired.len(), 1, "{events:?}");
    assert!(
        retired[0].contains(&foreign.to_string()) && retired[0].contains("not a patience daemon"),
        "{retired:?}"
    );
}
