//! Exact win probabilities for Double Patience (UVa 1637), for whole streams of deals.
//!
//! # Layout
//! Each layer uses only the ones above it in this list, so the engine never learns about gRPC and
//! the service never touches a table.
//! - [`deal`]: cards, deals, parsing and validation, and the UVa file reader.
//! - [`solver`]: the engine. One [`solver::Solver`] owns one 5^9-entry table for life and solves a
//!   deal without allocating.
//! - [`rps`]: the second game, FZU 2145 rock-paper-scissors: cases, their file reader, and a solver
//!   that owns its subset tables for life.
//! - [`pool`]: worker threads that each own a solver, behind a bounded queue with cancellable jobs.
//! - [`wire`]: conversions between the engine's types and the generated ones, both ways.
//! - [`service`]: the `patience.v1.Solver` gRPC service: streams, ordering, backpressure.
//! - [`metrics`]: Prometheus counters, gauges and histograms, and the `/metrics` endpoint.
//! - [`auth`]: bearer-token checks for the Solver service, and secrets that never get logged.
//! - [`client`]: the multi-daemon client as a library: daemons by URL or DNS, failover,
//!   hedging, reconnection; answers in order.
//! - [`server`]: the daemon's wiring: TLS, health, reflection, limits, graceful shutdown.
//! - [`cli`]: the `patience` command line (`solve`, `serve`, `client`, `gen`, `rps`).
//! - [`proto`]: the code generated from `proto/patience/v1/patience.proto`.
#![forbid(unsafe_code)]
// Nothing a client sends may panic the daemon, and output goes through the writers the CLI is
// given. Tests are exempt (clippy.toml); the few direct prints say why they are.
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

pub mod auth;
pub mod cli;
pub mod client;
pub mod deal;
mod lines;
pub mod metrics;
pub mod pool;
pub mod proto;
pub mod rps;
pub mod server;
pub mod service;
pub mod solver;
mod token;
pub mod wire;
