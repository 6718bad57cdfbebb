//! `patience gen`: uniformly shuffled deals, for benchmarks and load tests.

use std::io::{self, BufWriter, Write};

use anyhow::Context as _;

use super::GenArgs;
use crate::deal::Deal;
use crate::jobs::outcome::ExitStatus;

pub fn run(args: &GenArgs) -> anyhow::Result<ExitStatus> {
    let mut rng = args
        .seed
        .map_or_else(fastrand::Rng::new, fastrand::Rng::with_seed);
    let mut out = BufWriter::new(io::stdout().lock());
    for _ in 0..args.count {
        match write!(out, "{}", Deal::shuffled(&mut rng)) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(ExitStatus::Ok),
            other => other.context("cannot write the deals")?,
        }
    }
    match out.flush() {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitStatus::Ok),
        other => other
            .context("cannot write the deals")
            .map(|()| ExitStatus::Ok),
    }
}
