//! `patience health`: a gRPC health probe, for the container image's HEALTHCHECK and anyone
//! else's: prints the status, and exits 0 for SERVING, 1 for any other answer, 2 when it cannot
//! ask (no daemon there, no answer in time, TLS or token trouble).

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use tonic_health::pb::health_check_response::ServingStatus;

use super::values::parse_duration;
use crate::client::health::probe;
use crate::jobs::outcome::ExitStatus;

/// Flags of `patience health`.
#[derive(Debug, Args)]
pub struct HealthArgs {
    /// The daemon's address: http://HOST:PORT, or https://HOST:PORT with --tls-ca.
    #[arg(long, default_value = "http://127.0.0.1:50051")]
    pub addr: String,
    /// The service to ask about: "" is the daemon as a whole (what a liveness probe asks),
    /// patience.v1.Solver what a readiness probe asks.
    #[arg(long, default_value = "")]
    pub service: String,
    /// Give up (exit status 2) when no answer came within this long, connecting included.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub timeout: std::time::Duration,
    #[command(flatten)]
    pub tls: super::ClientTlsArgs,
    /// Send `authorization: Bearer <token>` with the token in this file (health needs none; for
    /// proxies in front that do).
    #[arg(long)]
    pub auth_token_file: Option<PathBuf>,
}

pub fn run(args: &HealthArgs) -> anyhow::Result<ExitStatus> {
    let (url, connector, bearer) = super::remote::one_daemon(
        &args.addr,
        &args.tls,
        args.auth_token_file.as_deref(),
        "a health probe asks one daemon",
    )?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let status = runtime.block_on(probe(&url, &connector, bearer, &args.service, args.timeout))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", status.as_str_name()).context("cannot write to standard output")?;
    Ok(match status {
        ServingStatus::Serving => ExitStatus::Ok,
        _ => ExitStatus::BadInput,
    })
}
