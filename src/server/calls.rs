//! How many calls may be open at once across all connections: at most `--max-open-streams`
//! streaming calls (`SolveStream`, `SolveRpsStream`) and `--max-open-unary` unary ones (`Solve`,
//! `SolveRps`). A call is counted from the moment its
//! headers arrive (before its messages are read, so a call that never sends one counts too) until
//! its response is done; one beyond a cap is answered at once with `RESOURCE_EXHAUSTED` naming
//! the flag, and the calls in progress are untouched. Health and reflection are not counted.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
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

/// The caps, shared by every connection.
pub struct CallCaps {
    streams: Arc<Semaphore>,
    unary: Arc<Semaphore>,
    max_streams: usize,
    max_unary: usize,
    metrics: Metrics,
}

/// A call's place under its cap, given back when the call ends.
pub struct OpenCall {
    _permit: OwnedSemaphorePermit,
    metrics: Metrics,
}

impl Drop for OpenCall {
    fn drop(&mut self) {
        self.metrics.calls(-1);
    }
}

impl CallCaps {
    pub fn new(max_streams: usize, max_unary: usize, metrics: Metrics) -> CallCaps {
        let (max_streams, max_unary) = (max_streams.max(1), max_unary.max(1));
        CallCaps {
            streams: Arc::new(Semaphore::new(max_streams)),
            unary: Arc::new(Semaphore::new(max_unary)),
            max_streams,
            max_unary,
            metrics,
        }
    }

    /// A place for a call to `path`: `None` for paths that are not capped, or the status to
    /// answer with when the cap is reached.
    pub fn admit(&self, path: &str, peer: Option<SocketAddr>) -> Result<Option<OpenCall>, Status> {
        let (semaphore, max, flag, reason) = match path {
            p if STREAM_PATHS.contains(&p) => (
                &self.streams,
                self.max_streams,
                "--max-open-streams",
                "max_open_streams",
            ),
            p if UNARY_PATHS.contains(&p) => (
                &self.unary,
                self.max_unary,
                "--max-open-unary",
                "max_open_unary",
            ),
            _ => return Ok(None),
        };
        match semaphore.clone().try_acquire_owned() {
            Ok(permit) => {
                self.metrics.calls(1);
                Ok(Some(OpenCall {
                    _permit: permit,
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
}
