//! The engine of patience: the games, their readers and their solvers, with nothing of the
//! daemon. No async, no I/O beyond reading text, no command line: the daemon and the command line
//! (the `patience` package at the workspace's root) and the Python package build on it.
//!
//! # Layout
//! Each module uses only modules listed before it:
//! - `token` (input quoted in error messages) and [`mark`] (where a reader stands in its input,
//!   to resume or shard from);
//! - [`items`] (one numbered item of an input, good or bad) and `lines` (numbered lines of a
//!   file);
//! - [`deal`]: cards, deals, positions, the UVa file reader and its framing;
//! - [`rps`]: the second game, FZU 2145 rock-paper-scissors: cases, their file reader, and its
//!   engine;
//! - [`solver`]: the Double Patience engine. One [`solver::Solver`] owns one 5^9-entry table for
//!   life and solves a deal without allocating; exact values and analysis beside it.
#![forbid(unsafe_code)]
// Nothing a client sends may panic the daemon that runs this engine. Tests are exempt
// (clippy.toml).
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

pub mod deal;
pub mod items;
mod lines;
pub mod mark;
pub mod rps;
pub mod solver;
mod token;
