//! Exact win probabilities for Double Patience (UVa 1637), for whole streams of deals.
//!
//! # Layout
//! Each module uses only modules listed before it, so the engines never learn about gRPC, the
//! service never touches a table, and the command line only wires the library together:
//! - the engine, a crate of its own (`patience-engine`, crates/engine), re-exported here:
//!   [`deal`] (cards, deals, positions, the UVa file reader), [`rps`] (the second game, FZU 2145
//!   rock-paper-scissors: cases, their file reader, and its engine), [`solver`] (the Double
//!   Patience engine: one [`solver::Solver`] owns one 5^9-entry table for life and solves a deal
//!   without allocating), and [`items`] and [`mark`] (numbered items of an input, and where a
//!   reader stands in it); no async, no I/O beyond reading text;
//! - [`pool`]: worker threads that each own both games' engines, behind a bounded queue with
//!   cancellable jobs;
//! - [`proto`] (the code generated from `proto/patience/v1/patience.proto`, and every error
//!   status the daemon sends with its details, `proto::reason`) and [`wire`] (conversions between
//!   the engines' types and the generated ones, both ways);
//! - [`metrics`]: Prometheus counters, gauges and histograms, and the `/metrics` endpoint;
//! - [`auth`]: bearer-token checks and secrets that never get logged; `auth::x509`: the
//!   certificate version check both ends of TLS make;
//! - [`exchange`]: a game's streaming call as messages, what the client and the daemon's HTTP
//!   API both send and check;
//! - [`service`]: the `patience.v1.Solver` and `patience.v1.RpsService` gRPC services: admission,
//!   streams in order, backpressure, deadlines, the drain;
//! - [`server`]: the daemon's wiring: connections and their limits, TLS, health, reflection,
//!   graceful shutdown; and [`client`]: the multi-daemon client as a library (daemons by URL or
//!   DNS, failover, hedging, reconnection; answers in order), for either game;
//! - [`jobs`]: what the commands and the daemon's jobs do with inputs and answers, in stages:
//!   files, standard input, S3 objects and gzip/zstd in and out, batches, shards and their index,
//!   `--output`, `--resume`, parts and `merge`, progress;
//! - [`cli`]: the `patience` command line (`solve`, `rps`, `gen`, `serve`, `client`, `health`,
//!   `merge`, `index`): flags into validated configurations, then a call into the library.
//!
//! `values` (what a flag's value may be) serves the command line and the jobs' flag groups.
#![forbid(unsafe_code)]
// Nothing a client sends may panic the daemon, and output goes through the writers the CLI is
// given. Tests are exempt (clippy.toml); the few direct prints say why they are.
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

// The engine, its own crate (crates/engine), under the names it has always had here.
pub use patience_engine::{deal, items, mark, rps, solver};

pub mod auth;
pub mod cli;
pub mod client;
mod compressed;
pub mod exchange;
pub mod jobs;
pub mod metrics;
pub mod ordered;
pub mod pool;
pub mod proto;
pub mod render;
pub mod server;
pub mod service;
pub mod trace;
pub mod wire;
