//! The in-process server: `run_with_pool` on a listener the test bound (port 0 unless the test
//! says otherwise), for the tests that look at the service and the pool from the inside; and the
//! one way to start a stand-in (any other tonic services) on a thread of its own ([`serve`]).

use std::sync::Arc;
use std::time::Duration;

use patience::pool::Pool;
use patience::proto::solver_client::SolverClient;
use patience::server::{ServerConfig, run_with_pool};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tonic::transport::Channel;

/// A server running in this process, stopped when dropped.
pub struct TestServer {
    pub addr: String,
    pub socket: std::net::SocketAddr,
    pub pool: Arc<Pool>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl TestServer {
    /// `workers` solver threads, on 127.0.0.1 port 0.
    pub async fn start(workers: usize, config: ServerConfig) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        TestServer::on(listener, workers, config)
    }

    /// `workers` solver threads, on the test's `listener` (such as one on 127.0.0.2 port 0).
    pub fn on(listener: TcpListener, workers: usize, config: ServerConfig) -> TestServer {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let socket = listener.local_addr().unwrap();
        let addr = format!("http://{socket}");
        let pool = Arc::new(Pool::new(workers, 2 * workers).unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(run_with_pool(listener, pool.clone(), config, async {
            let _ = stopped.await;
        }));
        let task = tokio::spawn(async move {
            task.await.unwrap().unwrap();
        });
        TestServer {
            addr,
            socket,
            pool,
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub async fn client(&self) -> SolverClient<Channel> {
        SolverClient::new(self.channel().await)
    }

    /// A channel to the server, for clients of any service, set up as a test wants them.
    pub async fn channel(&self) -> Channel {
        Channel::from_shared(self.addr.clone())
            .unwrap()
            .connect()
            .await
            .unwrap()
    }

    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(10), task)
                .await
                .expect("server stops")
                .unwrap();
        }
    }
}

/// The default configuration with a 5 s drain, so a test's server stops soon.
pub fn config() -> ServerConfig {
    ServerConfig {
        drain_timeout: Duration::from_secs(5),
        ..ServerConfig::default()
    }
}

/// A stand-in daemon on port 0, for as long as the test runs: it answers every deal 0.5 with
/// `analysis` attached (`None`, as a daemon older than the analysis API would). Its address,
/// `http://ADDR`.
pub fn stand_in(analysis: Option<patience::proto::Analysis>) -> String {
    serve_stand_in(StandIn {
        analysis,
        fails_on: None,
    })
}

/// A stand-in daemon as [`stand_in`] (no analysis), except that a call that sends it `deal` ends
/// with `INTERNAL`: a daemon that cannot answer that deal, however often it is sent.
pub fn stand_in_failing_on(deal: patience::deal::Deal) -> String {
    serve_stand_in(StandIn {
        analysis: None,
        fails_on: Some(deal),
    })
}

fn serve_stand_in(stand_in: StandIn) -> String {
    use patience::proto::solver_server::SolverServer;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let router = tonic::transport::Server::builder().add_service(SolverServer::new(stand_in));
    format!("http://{}", serve(listener, router))
}

/// Serves `router` (stand-ins: tonic services other than the daemon's) on `listener`, on a
/// thread with a runtime of its own (so it runs on the wall clock whatever the test's runtime
/// does), for as long as the test process runs; its address.
pub fn serve(
    listener: std::net::TcpListener,
    router: tonic::transport::server::Router,
) -> std::net::SocketAddr {
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = TcpListener::from_std(listener).unwrap();
            router
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
                .await
        })
    });
    addr
}

#[derive(Clone)]
struct StandIn {
    analysis: Option<patience::proto::Analysis>,
    fails_on: Option<patience::deal::Deal>,
}

impl StandIn {
    fn answer(
        &self,
        request: patience::proto::SolveRequest,
    ) -> Result<patience::proto::SolveResponse, tonic::Status> {
        use patience::proto::{Result, result::Outcome};
        if let Some(bad) = &self.fails_on
            && request
                .deals
                .iter()
                .any(|d| patience::deal::Deal::parse(&d.cards).as_ref() == Ok(bad))
        {
            return Err(tonic::Status::internal(
                "this stand-in cannot answer that deal",
            ));
        }
        let results = request
            .deals
            .into_iter()
            .enumerate()
            .map(|(i, deal)| Result {
                index: i as u64,
                id: deal.id,
                outcome: Some(Outcome::Probability(0.5)),
                analysis: self.analysis.clone(),
            })
            .collect();
        Ok(patience::proto::SolveResponse {
            results,
            ..Default::default()
        })
    }
}

type StandInStream = std::pin::Pin<
    Box<
        dyn tokio_stream::Stream<Item = Result<patience::proto::SolveResponse, tonic::Status>>
            + Send,
    >,
>;

#[tonic::async_trait]
impl patience::proto::solver_server::Solver for StandIn {
    type SolveStreamStream = StandInStream;

    async fn solve_stream(
        &self,
        request: tonic::Request<tonic::Streaming<patience::proto::SolveRequest>>,
    ) -> Result<tonic::Response<StandInStream>, tonic::Status> {
        use tokio_stream::StreamExt as _;
        let stand_in = self.clone();
        let responses = request
            .into_inner()
            .map(move |request| request.and_then(|r| stand_in.answer(r)));
        Ok(tonic::Response::new(Box::pin(responses)))
    }

    async fn solve(
        &self,
        request: tonic::Request<patience::proto::SolveRequest>,
    ) -> Result<tonic::Response<patience::proto::SolveResponse>, tonic::Status> {
        self.answer(request.into_inner()).map(tonic::Response::new)
    }
}
