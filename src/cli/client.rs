//! `patience client` and `patience rps --addr`: the flags turned into a [`ClientConfig`] and a
//! [`FilesPlan`], run by the library ([`crate::client::files`]) on a runtime of their own.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use tracing::Instrument as _;

use super::traced;
use super::{ClientArgs, OutputFormat, RemoteArgs, RpsArgs};
use crate::client::files::{FilesPlan, stream_files};
use crate::client::{
    self, ClientConfig, Connector, DealProtocol, RpsProtocol, SystemResolver, Target,
};
use crate::jobs::outcome::ExitStatus;
use crate::jobs::report::progress::Unit;
use crate::jobs::sink::output::Render;
use crate::jobs::source::batches::BatchSize;
use crate::solver::Options;

/// `patience client`'s messages without `--batch`: the first of 256 deals, so that a short input
/// (or deals typed as they come) is answered in several messages over several daemons, each next
/// one twice as large up to 1,024, so that a long one costs few wake-ups a deal on either side
/// (docs/client.md has the figures).
const CLIENT_BATCH: BatchSize = BatchSize::growing(256, 1_024);
/// The flags, checked and turned into what the library runs with. Every address and flag is
/// checked before anything is sent: a typo is a usage error.
fn config(
    addr: &[String],
    remote: &RemoteArgs,
    batch: BatchSize,
    asked: Option<Options>,
) -> anyhow::Result<ClientConfig> {
    let targets = addr
        .iter()
        .map(|addr| Target::parse(addr))
        .collect::<Result<Vec<_>, _>>()?;
    let files = remote.tls.files();
    for (flag, value) in [
        ("--keepalive-interval", remote.keepalive_interval),
        ("--keepalive-timeout", remote.keepalive_timeout),
    ] {
        if value < Duration::from_millis(100) {
            bail!("{flag} must be at least 100ms (got {value:?})");
        }
    }
    let connector = Connector::new(&targets, &files)?
        .keepalive(remote.keepalive_interval, remote.keepalive_timeout);
    let bearer = super::remote::bearer(remote.auth_token_file.as_deref())?;
    Ok(ClientConfig {
        targets,
        connector,
        bearer,
        window: client::window(batch.max()),
        streams: remote.streams,
        stream_max_bytes: remote.stream_max_bytes,
        asked,
        give_up_after: remote.give_up_after,
        dns_refresh: remote.dns_refresh,
        hedge_floor: remote.hedge_floor.unwrap_or(client::HEDGE_FLOOR),
        late_failures: remote.late_failures.unwrap_or(client::LATE_FAILURES),
        close_grace: remote.close_grace.unwrap_or(client::CLOSE_GRACE),
        resolver: Arc::new(SystemResolver),
    })
}

pub fn run(args: &ClientArgs) -> anyhow::Result<ExitStatus> {
    let asked = args.analysis.options()?;
    // JSON always carries winnable and states, so it always asks the daemon for an analysis.
    let wanted = (args.analysis.format == OutputFormat::Json).then_some(asked);
    let batch = args
        .batch
        .map_or(CLIENT_BATCH, |n| BatchSize::fixed(n as usize));
    let config = config(&args.addr, &args.remote, batch, wanted)?;
    let render = Render {
        format: args.analysis.format,
        precision: args.precision,
        asked,
    };
    let plan = FilesPlan {
        unit: Unit::DEALS,
        batch,
        reorder_bytes: args.remote.reorder_buffer_bytes,
        render,
        job: args.job.plan(&args.files, render)?,
    };
    on_runtime(stream_files::<DealProtocol>(plan, config))
}

/// `patience rps --addr`: the cases go to the daemons, and print as in-process.
pub fn run_rps(args: &RpsArgs) -> anyhow::Result<ExitStatus> {
    let batch = BatchSize::fixed(args.batch as usize);
    let config = config(&args.addr, &args.remote, batch, None)?;
    let plan = FilesPlan {
        unit: Unit::CASES,
        batch,
        reorder_bytes: args.remote.reorder_buffer_bytes,
        render: args.render(),
        job: args.job.plan(&args.files, args.render())?,
    };
    on_runtime(stream_files::<RpsProtocol>(plan, config))
}

/// The runtime's threads: the session, its calls and their connections. One is enough: the reader
/// and the printer have threads of their own (the printer runs on the main thread, in
/// `block_on`, so a full standard output never holds up the session), and a client core feeds
/// some 20 engine threads. A second worker cost CPU without adding speed: the runtime woke it for
/// every task another thread woke, and it mostly found nothing to do (500,000 deals through a
/// local daemon, 8 alternating runs: the client's CPU 0.905x with one worker, wall 0.99x).
const RUNTIME_WORKERS: usize = 1;

fn on_runtime(
    run: impl Future<Output = Result<ExitStatus, client::files::FilesError>>,
) -> anyhow::Result<ExitStatus> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(RUNTIME_WORKERS)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let tracing = traced::start(&runtime)?;
    // The reader may be blocked reading standard input (a terminal, a pipe kept open) when the
    // run ends early; it is a plain thread, so nothing waits for it: the process is about to
    // exit.
    let ended = runtime.block_on(run.instrument(traced::run_span()));
    if let Some(tracing) = tracing {
        runtime.block_on(traced::flush(tracing));
    }
    Ok(ended?)
}
