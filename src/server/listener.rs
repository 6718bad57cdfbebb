//! Accepting connections: at most `--max-connections` at once, and a calm loop when the process
//! runs out of file descriptors.
//!
//! At the cap the loop stops calling `accept`, so new connections wait in the kernel's listen
//! backlog until one closes; out of descriptors (EMFILE, ENFILE) it backs off, from 10 ms up to
//! a second, instead of retrying at once (tonic's loop retried in a spin that took a whole core
//! and starved the connections it already had). Each episode is logged once when it starts and
//! once when it ends, and counted in `patience_accept_pauses_total`.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::metrics::Metrics;

const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const LAST_BACKOFF: Duration = Duration::from_secs(1);

/// Why accepting stopped for a while.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pause {
    AtCap,
    FileLimit,
    Error,
}

impl Pause {
    fn label(self) -> &'static str {
        match self {
            Pause::AtCap => "max_connections",
            Pause::FileLimit => "file_limit",
            Pause::Error => "accept_error",
        }
    }
}

/// Accepts connections until `stop` completes, handing each to `serve` with its place under the
/// cap, which the connection holds until it closes.
pub async fn accept(
    listener: TcpListener,
    cap: Arc<Semaphore>,
    max_connections: usize,
    metrics: Metrics,
    stop: impl Future<Output = ()>,
    mut serve: impl FnMut(TcpStream, SocketAddr, OwnedSemaphorePermit),
) {
    tokio::pin!(stop);
    let mut paused: Option<Pause> = None;
    let mut backoff = FIRST_BACKOFF;
    let begin = |pause: Pause, paused: &mut Option<Pause>, detail: &dyn std::fmt::Display| {
        if *paused != Some(pause) {
            *paused = Some(pause);
            metrics.accept_paused(pause.label());
            tracing::warn!(
                reason = pause.label(),
                "not accepting connections for now: {detail}"
            );
        }
    };
    loop {
        let permit = match cap.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                begin(
                    Pause::AtCap,
                    &mut paused,
                    &format_args!(
                        "{max_connections} connections are open (--max-connections); new ones \
                         wait in the listen backlog until one closes"
                    ),
                );
                tokio::select! {
                    permit = cap.clone().acquire_owned() => match permit {
                        Ok(permit) => permit,
                        Err(_) => return,
                    },
                    () = &mut stop => return,
                }
            }
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => return,
        };
        match accepted {
            Ok((stream, peer)) => {
                if let Some(pause) = paused.take() {
                    tracing::info!(reason = pause.label(), "accepting connections again");
                }
                backoff = FIRST_BACKOFF;
                serve(stream, peer, permit);
            }
            // The peer gave up between its SYN and our accept: nothing to wait for.
            Err(e) if is_transient(&e) => {}
            Err(e) => {
                drop(permit);
                let pause = if is_file_limit(&e) {
                    Pause::FileLimit
                } else {
                    Pause::Error
                };
                begin(pause, &mut paused, &format_args!("accept failed: {e}"));
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    () = &mut stop => return,
                }
                backoff = (backoff * 2).min(LAST_BACKOFF);
            }
        }
    }
}

fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
    )
}

/// EMFILE (this process's descriptors) or ENFILE (the system's): 24 and 23 on Linux and the BSDs.
fn is_file_limit(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(23 | 24))
}
