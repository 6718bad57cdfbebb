//! `patience health`: a gRPC health probe, for the container image's HEALTHCHECK and anyone
//! else's: prints the status, and exits 0 for SERVING, 1 for any other answer, 2 when it cannot
//! ask (no daemon there, no answer in time, TLS or token trouble).

use std::io::Write as _;

use anyhow::{Context as _, bail};
use tonic_health::pb::health_check_response::ServingStatus;

use super::HealthArgs;
use super::output::ExitStatus;
use crate::auth::{AddBearer, read_token_file};
use crate::client::health::probe;
use crate::client::{Connector, Target, TlsFiles};

pub fn run(args: &HealthArgs) -> anyhow::Result<ExitStatus> {
    let target = Target::parse(&args.addr)?;
    let Target::Url(url) = &target else {
        bail!(
            "a health probe asks one daemon: give an http:// or https:// address, not {}",
            args.addr
        );
    };
    let files = TlsFiles {
        ca: args.tls_ca.clone(),
        cert: args.tls_cert.clone(),
        key: args.tls_key.clone(),
    };
    let connector = Connector::new(std::slice::from_ref(&target), &files)?;
    let token = args
        .auth_token_file
        .as_deref()
        .map(read_token_file)
        .transpose()?;
    let bearer =
        AddBearer::new(token.as_ref()).map_err(|s| anyhow::anyhow!(s.message().to_string()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let status = runtime.block_on(probe(url, &connector, bearer, &args.service, args.timeout))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", status.as_str_name()).context("cannot write to standard output")?;
    Ok(match status {
        ServingStatus::Serving => ExitStatus::Ok,
        _ => ExitStatus::BadInput,
    })
}
