//! The multi-daemon client, as a library, for either game: it takes request messages in order and answers each,
//! in the same order, from whichever daemons are up, surviving daemons that fail, restart, stall
//! or appear (by DNS) while it runs. `patience client` is this plus reading files and printing.
//!
//! # Layout
//! - [`connect`]: `--addr` values (`http://`, `https://`, `dns:///`), endpoints, TLS.
//! - [`status`]: what a status that ended a call means: the daemon failed, or the run is refused.
//! - [`game`]: what a lane adds to a game's [`crate::exchange::Exchange`] (its requests and the
//!   checks of responses, shared with the daemon's HTTP API): the rpc it opens on a channel.
//! - [`dispatch`]: the policy, a synchronous state machine: assignment by load, resends,
//!   hedging a daemon that went quiet and a slow one's last chunks, retiring, giving up.
//! - [`lane`]: one connection to a daemon, calls bounded in bytes one after the other,
//!   reconnecting with jittered backoff (a daemon has `--streams` lanes).
//! - [`discovery`]: names resolved to daemons, again and again.
//! - [`health`]: a gRPC health probe of one daemon (`patience health`).
//! - [`session`]: the async loop that feeds the dispatcher and carries out what it decides;
//!   `session/membership.rs`, which daemons take part (added, found by name, let go).
//! - [`tally`]: what each daemon answered and what was sent twice, for a run's summary.
//! - [`files`]: `patience client`'s run: a job's inputs through the daemons into its output, on
//!   the pipeline every command prints through.
//!
//! One cancellation mechanism: a [`tokio_util::sync::CancellationToken`] for the run, cancelled
//! when it ends however it ends; every lane and watcher stops on it.

pub mod connect;
pub mod discovery;
pub mod dispatch;
pub mod files;
pub mod game;
pub mod health;
pub mod lane;
pub mod session;
pub mod status;
pub mod tally;
pub mod words;

use std::sync::Arc;
use std::time::Duration;

pub use crate::exchange::{Answer, Answers, Chunk, Exchange, Unfit};
pub use connect::{ConnectError, Connector, Daemon, Target, TlsFiles};
pub use discovery::{Resolve, SystemResolver};
pub use game::{DealProtocol, Protocol, RpsProtocol};
pub use session::run;
pub use tally::{Sent, Share, Tally};

use crate::auth::AddBearer;
use crate::solver::Options;

/// The default of [`ClientConfig::late_failures`].
pub const LATE_FAILURES: Duration = Duration::from_secs(2);
/// The default of [`ClientConfig::close_grace`]: a round trip (the last requests' end goes out,
/// the status comes back), which a near daemon takes in well under a millisecond.
pub const CLOSE_GRACE: Duration = Duration::from_millis(500);
/// The default of [`ClientConfig::hedge_floor`].
pub const HEDGE_FLOOR: Duration = Duration::from_secs(2);
/// ...or this many times its usual time between answers, when that is longer.
pub const HEDGE_FACTOR: u32 = 8;
/// The default of [`ClientConfig::streams`].
pub const STREAMS: usize = 4;
/// The default of [`ClientConfig::stream_max_bytes`]: about 4,500 packed deals a call (as many as
/// 512 KiB of text deals), so that a proxy which spreads calls over its daemons has many calls of
/// a file to spread; well under nginx's default body limit (`client_max_body_size 1m`), which
/// counts a whole call's requests as one body.
pub const STREAM_MAX_BYTES: usize = 160 << 10;
/// The defaults of [`Connector::keepalive`]'s interval and timeout (`--keepalive-interval`,
/// `--keepalive-timeout`):
/// a daemon cut off without its connection closing (a partition, a dead host) is abandoned
/// within their sum, under 10 s; its chunks were hedged onto the others before that.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(3);
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(4);

/// Everything a run needs, validated: what the command line's flags become.
#[derive(Clone)]
pub struct ClientConfig {
    pub targets: Vec<Target>,
    pub connector: Connector,
    pub bearer: AddBearer,
    /// Chunks (request messages) one daemon may hold unanswered, over all its calls.
    pub window: usize,
    /// Calls open at once to each daemon (each address: a proxy's address is one), [`STREAMS`]
    /// in production.
    pub streams: usize,
    /// Request bytes one call takes before the next call takes over, [`STREAM_MAX_BYTES`] in
    /// production.
    pub stream_max_bytes: usize,
    /// The analysis every request asks for (`None`: the plain probability).
    pub asked: Option<Options>,
    /// With chunks waiting and no daemon up for this long, give up.
    pub give_up_after: Duration,
    /// How often `dns:///` names are resolved again.
    pub dns_refresh: Duration,
    /// A daemon is hedged after answering nothing for at least this long while it holds chunks
    /// ([`HEDGE_FLOOR`] in production)...
    pub hedge_floor: Duration,
    /// Once everything is answered, how long the run waits for the lanes to close their calls, so
    /// that a daemon failing late (say, one that could not connect before the others did all the
    /// work) is still reported ([`LATE_FAILURES`] in production). A lane on a daemon that never
    /// answers keeps its call open, so a run beside one always waits this long.
    pub late_failures: Duration,
    /// Once everything is answered, how long the run waits at most for the daemons that answered
    /// to send their calls' statuses, so that they count the calls as completed rather than as
    /// cancelled by a client that went away ([`CLOSE_GRACE`] in production, never more than
    /// `late_failures`). The wait ends as soon as the statuses are in.
    pub close_grace: Duration,
    pub resolver: Arc<dyn Resolve>,
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("targets", &self.targets)
            .field("window", &self.window)
            .field("streams", &self.streams)
            .field("stream_max_bytes", &self.stream_max_bytes)
            .field("asked", &self.asked)
            .field("give_up_after", &self.give_up_after)
            .field("dns_refresh", &self.dns_refresh)
            .field("hedge_floor", &self.hedge_floor)
            .field("late_failures", &self.late_failures)
            .field("close_grace", &self.close_grace)
            .finish_non_exhaustive()
    }
}

impl ClientConfig {
    /// Chunks one call (one lane) may hold: the daemon's window shared among its calls, at least
    /// 2 so that each call pipelines.
    pub fn lane_window(&self) -> usize {
        self.window.div_ceil(self.streams.max(1)).max(2)
    }
}

/// Chunks one daemon may have unanswered for a batch size: about 4,096 deals, enough to keep its
/// workers busy across the round trip, and few enough that a failure resends little. At least 4
/// so that small batches still pipeline; at most 64 so that `--batch 1` does not flood the
/// daemon with messages.
pub fn window(batch: usize) -> usize {
    (4096 / batch.max(1)).clamp(4, 64)
}

/// What happened to the daemons, for the user to read; nothing in it changes the answers.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A daemon failed; `resent` of its chunks went to the others (`others` daemons up now;
    /// with none they wait for one to come back).
    Failed {
        daemon: Daemon,
        reason: String,
        resent: usize,
        others: usize,
    },
    /// A failed daemon answers again.
    Back { daemon: Daemon },
    /// A daemon answered nothing for a while: its `holding` chunks also go to the `others`
    /// daemons up (with none, they wait for it).
    Slowed {
        daemon: Daemon,
        holding: usize,
        others: usize,
    },
    /// A new address under a name.
    Found { daemon: Daemon },
    /// An address left its name: it takes nothing new, and answers the `holding` chunks it has
    /// (or gives them back if it fails).
    Left { daemon: Daemon, holding: usize },
    /// The address is not a patience daemon: it takes nothing more, and the run goes on over
    /// the others.
    Retired { daemon: Daemon, reason: String },
    /// A name could not be resolved again (its daemons found before stay).
    ResolveFailed { name: String, error: String },
    /// The run is over, however it ended (the last event): what each daemon answered.
    Done(Tally),
}

/// Why a run stopped before answering everything.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// A daemon refused what the run asks of every daemon: stop at once.
    #[error("daemon {daemon} {reason}")]
    Rejected { daemon: Daemon, reason: String },
    /// No daemon was up for `give_up_after` with deals waiting (each failure was said as it
    /// happened).
    #[error(
        "every daemon failed ({}) and none came back within {waited:?}; giving up with work \
         unanswered",
        list(.daemons)
    )]
    GaveUp {
        daemons: Vec<Daemon>,
        waited: Duration,
    },
    /// Every daemon failed before any answered, so the run did not wait (a wrong address or a
    /// daemon not started is not worth waiting for): each, with why it failed, said here once.
    #[error("every daemon failed, and none ever answered: {}; {}", tried(.failed), never_up_hint(.failed))]
    NeverUp { failed: Vec<(Daemon, String)> },
    /// One chunk was the oldest unanswered of a daemon's call each of the last `failures` times a
    /// call failed: it is what makes them fail (a proxy refusing its size, a daemon unable to
    /// answer it), and resending it would go on for ever.
    #[error(
        "daemons' calls failed {failures} times while chunk {chunk} (counting from 0; {items} \
         items) was the oldest they had not answered, the last time: {reason}; giving up on it"
    )]
    ChunkFails {
        chunk: u64,
        items: usize,
        failures: u32,
        reason: String,
    },
    /// No `--addr` led to any daemon.
    #[error("{0}")]
    NoDaemon(String),
    /// A bug in this client (a task that panicked).
    #[error("the client failed: {0}")]
    Internal(String),
}

impl ClientError {
    /// Whether the run stops at once, without printing the answers it has (a refusal); otherwise
    /// what was answered in order is printed first.
    pub fn stops_at_once(&self) -> bool {
        !matches!(
            self,
            ClientError::GaveUp { .. }
                | ClientError::NeverUp { .. }
                | ClientError::ChunkFails { .. }
        )
    }
}

fn list(daemons: &[Daemon]) -> String {
    daemons
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn tried(failed: &[(Daemon, String)]) -> String {
    failed
        .iter()
        .map(|(daemon, reason)| format!("{daemon}: {reason}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// What to check when nothing ever answered. A connection refused or timed out most likely means
/// nothing is listening there; other failures (TLS, a refused stream) carry their own hints.
fn never_up_hint(failed: &[(Daemon, String)]) -> &'static str {
    let unreached = failed
        .iter()
        .all(|(_, reason)| reason.starts_with("cannot connect"));
    match (unreached, failed.len()) {
        (true, 1) => {
            "nothing is listening there: is `patience serve` running at that address, \
                      and reachable from here?"
        }
        (true, _) => {
            "nothing is listening there: is `patience serve` running at those \
                      addresses, and reachable from here?"
        }
        (false, 1) => "is `patience serve` running at that address, with these flags?",
        (false, _) => "is `patience serve` running at those addresses, with these flags?",
    }
}

/// Waits until `at`, or forever without one: the one helper for optional deadlines.
pub async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
