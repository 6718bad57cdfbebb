//! How `client`, `rps --addr` and `health` reach daemons, beside the addresses: TLS, the token,
//! the network's settings, and how long to wait for daemons.

use std::path::PathBuf;

use clap::Args;

use super::values::{NO_MAX, parse_duration, whole};

/// The TLS flags of every command that calls daemons (`client`, `rps --addr`, `health`).
#[derive(Debug, Args)]
pub struct ClientTlsArgs {
    /// Trust this PEM CA for the daemon's certificate (needed for an https:// address).
    #[arg(long)]
    pub tls_ca: Option<PathBuf>,
    /// Present this PEM client certificate (for daemons that require mutual TLS); needs --tls-key.
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

impl ClientTlsArgs {
    pub fn files(&self) -> crate::client::TlsFiles {
        crate::client::TlsFiles {
            ca: self.tls_ca.clone(),
            cert: self.tls_cert.clone(),
            key: self.tls_key.clone(),
        }
    }
}

/// The `authorization: Bearer` interceptor of the token in `file`, if one is given.
pub fn bearer(file: Option<&std::path::Path>) -> anyhow::Result<crate::auth::AddBearer> {
    let token = file.map(crate::auth::read_token_file).transpose()?;
    crate::auth::AddBearer::new(token.as_ref())
        .map_err(|s| anyhow::anyhow!(s.message().to_string()))
}

/// One daemon that a command asks (`health`, `jobs`): its `http://` or `https://` address (a
/// `dns:///` name, which means every daemon of a name, is refused in words naming `what`), how to
/// connect to it, and its token.
pub fn one_daemon(
    addr: &str,
    tls: &ClientTlsArgs,
    token_file: Option<&std::path::Path>,
    what: &str,
) -> anyhow::Result<(String, crate::client::Connector, crate::auth::AddBearer)> {
    let target = crate::client::Target::parse(addr)?;
    let crate::client::Target::Url(url) = &target else {
        anyhow::bail!("{what}: give an http:// or https:// address, not {addr}");
    };
    let connector = crate::client::Connector::new(std::slice::from_ref(&target), &tls.files())?;
    Ok((url.clone(), connector, bearer(token_file)?))
}

/// How `client` and `rps --addr` reach daemons, beside the addresses.
#[derive(Debug, Args)]
pub struct RemoteArgs {
    /// How often dns:/// names are resolved again (also whenever one of their daemons fails),
    /// so that daemons that come and go are followed.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub dns_refresh: std::time::Duration,
    #[command(flatten)]
    pub tls: ClientTlsArgs,
    /// Send `authorization: Bearer <token>` with the token in this file.
    #[arg(long)]
    pub auth_token_file: Option<PathBuf>,
    /// Give up (exit status 2) when deals or cases wait for a daemon and none has been up for
    /// this long. Failed daemons are retried meanwhile, so a rolling restart does not end the run; 0 gives up
    /// as soon as every daemon has failed. A run in which no daemon ever answered gives up at once
    /// (a wrong address or a daemon not started is not worth waiting for).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub give_up_after: std::time::Duration,
    /// Calls open at once to each address, each with its own HTTP/2 window: a distant daemon is
    /// not held to one window per round trip, and a proxy in front of several daemons can send
    /// each call to another.
    #[arg(long, default_value_t = crate::client::STREAMS, value_parser = whole::<usize>(1, 64))]
    pub streams: usize,
    /// Request bytes one call carries before the next call takes over (a proxy counts a call's
    /// requests as one body: nginx refuses over 1 MiB by default, and a balancer spreads calls,
    /// not messages).
    #[arg(long, default_value_t = crate::client::STREAM_MAX_BYTES, value_parser = whole::<usize>(1_024, NO_MAX))]
    pub stream_max_bytes: usize,
    /// Memory for requests and answers read ahead of the first one not yet printed, in bytes:
    /// what lets fast daemons go on while a slow one holds the oldest (see docs/client.md for
    /// the formula).
    #[arg(long, default_value_t = 64 << 20, value_parser = whole::<usize>(1 << 20, NO_MAX))]
    pub reorder_buffer_bytes: usize,
    /// HTTP/2 ping to a daemon that has sent nothing for this long...
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    pub keepalive_interval: std::time::Duration,
    /// ...and give it up when the ping is not answered within this: a partitioned daemon is
    /// abandoned within their sum.
    #[arg(long, default_value = "4s", value_parser = parse_duration)]
    pub keepalive_timeout: std::time::Duration,
    /// Hedge a daemon that holds requests and has answered nothing for this long (or for 8 times
    /// its usual time between answers, when longer) [default: `client::HEDGE_FLOOR`]. Hidden:
    /// for tests, which would otherwise wait that long.
    #[arg(long, hide = true, value_parser = parse_duration)]
    pub hedge_floor: Option<std::time::Duration>,
    /// Once everything is answered, wait this long for daemons still closing their calls, to
    /// report one that fails [default: `client::LATE_FAILURES`]. Hidden: for tests.
    #[arg(long, hide = true, value_parser = parse_duration)]
    pub late_failures: Option<std::time::Duration>,
    /// Once everything is answered, wait at most this long for the daemons that answered to
    /// send their calls' statuses [default: `client::CLOSE_GRACE`]. Hidden: for tests on a
    /// loaded machine, where a distant daemon's status can take longer than the default.
    #[arg(long, hide = true, value_parser = parse_duration)]
    pub close_grace: Option<std::time::Duration>,
}
