//! How many calls may be open at once across all connections: at most `--max-open-streams`
//! streaming calls (`SolveStream`, `SolveRpsStream`) and `--max-open-unary` unary ones (`Solve`,
//! `SolveRps`). A call is counted from the moment its
//! headers arrive (before its messages are read, so a call that never sends one counts too) until
//! its response is done; one beyond a cap is answered at once with `RESOURCE_EXHAUSTED` naming
//! the flag, and the calls in progress are untouched. Health `Watch` and reflection streams have
//! a cap of their own (`--max-open-watches`), so that they cannot take the solving calls' places;
//! health `Check` calls, which end at once, are not counted.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tonic::Status;

use crate::metrics::Metrics;

const STREAM_PATHS: [&str; 2] = [
    "/patience.v1.Solver/SolveStream",
    "/patience.v1.RpsService/SolveRpsStream",
];
const UNARY_PATHS: [&str; 2] = [
    "/patience.v1.Solver/Solve",
    "/patience.v1.RpsService/SolveRps",
];
/// Streams beside the solving ones: a health watch lasts until the client leaves, and a
/// reflection session until it is done.
const WATCH_PATHS: [&str; 3] = [
    "/grpc.health.v1.Health/Watch",
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// How many calls of each kind may be open at once.
#[derive(Clone, Copy, Debug)]
pub struct Caps {
    pub streams: usize,
    pub unary: usize,
    pub watches: usize,
}

/// The caps, shared by every connection.
pub struct CallCaps {
    streams: Arc<Semaphore>,
    unary: Arc<Semaphore>,
    watches: Arc<Semaphore>,
    caps: Caps,
    /// Solving calls open (streams and unary), and a wake-up for [`CallCaps::solving_done`]
    /// each time one ends.
    solving: Arc<(AtomicUsize, Notify)>,
    metrics: Metrics,
}

/// A call's place under its cap, given back when the call ends.
pub struct OpenCall {
    _permit: OwnedSemaphorePermit,
    /// Set for a solving call, which counts in `open_calls` and in what a drain waits for.
    solving: Option<Arc<(AtomicUsize, Notify)>>,
    metrics: Metrics,
}

impl Drop for OpenCall {
    fn drop(&mut self) {
        match &self.solving {
            Some(solving) => {
                self.metrics.calls(-1);
                solving.0.fetch_sub(1, Ordering::AcqRel);
                solving.1.notify_waiters();
            }
            None => self.metrics.watches(-1),
        }
    }
}

impl CallCaps {
    pub fn new(caps: Caps, metrics: Metrics) -> CallCaps {
        let caps = Caps {
            streams: caps.streams.max(1),
            unary: caps.unary.max(1),
            watches: caps.watches.max(1),
        };
        CallCaps {
            streams: Arc::new(Semaphore::new(caps.streams)),
            unary: Arc::new(Semaphore::new(caps.unary)),
            watches: Arc::new(Semaphore::new(caps.watches)),
            caps,
            solving: Arc::default(),
            metrics,
        }
    }

    /// A place for a call to `path`: `None` for paths that are not capped (health `Check`), or the status to answer with when the cap is reached.
    pub fn admit(&self, path: &str, peer: Option<SocketAddr>) -> Result<Option<OpenCall>, Status> {
        let (semaphore, max, flag, reason, solving) = match path {
            p if STREAM_PATHS.contains(&p) => (
                &self.streams,
                self.caps.streams,
                "--max-open-streams",
                "max_open_streams",
                true,
            ),
            p if UNARY_PATHS.contains(&p) => (
                &self.unary,
                self.caps.unary,
                "--max-open-unary",
                "max_open_unary",
                true,
            ),
            p if WATCH_PATHS.contains(&p) => (
                &self.watches,
                self.caps.watches,
                "--max-open-watches",
                "max_open_watches",
                false,
            ),
            _ => return Ok(None),
        };
        match semaphore.clone().try_acquire_owned() {
            Ok(permit) => {
                let solving = solving.then(|| {
                    self.metrics.calls(1);
                    self.solving.0.fetch_add(1, Ordering::AcqRel);
                    self.solving.clone()
                });
                if solving.is_none() {
                    self.metrics.watches(1);
                }
                Ok(Some(OpenCall {
                    _permit: permit,
                    solving,
                    metrics: self.metrics.clone(),
                }))
            }
            Err(_) => {
                let status = Status::resource_exhausted(format!(
                    "the server has its limit of {max} such calls open (server flag {flag}); \
                     retry later, or on another replica"
                ));
                self.metrics.call_refused(reason, peer, status.message());
                Err(status)
            }
        }
    }

    /// Completes once no solving call is open (at once if none is). During a drain no new one is
    /// served, so after this only watches and the responses' last bytes keep connections open.
    pub async fn solving_done(&self) {
        loop {
            let ended = self.solving.1.notified();
            tokio::pin!(ended);
            // Registered before the count is read, so an end between the two still wakes us.
            ended.as_mut().enable();
            if self.solving.0.load(Ordering::Acquire) == 0 {
                return;
            }
            ended.await;
        }
    }
}
